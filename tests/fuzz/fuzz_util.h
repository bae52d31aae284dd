/* Shared helpers of the libFuzzer targets: failures that say nothing, broken round trips, bytes
 * handed to a parser that reads a file. */
#ifndef SHS_FUZZ_UTIL_H
#define SHS_FUZZ_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* What libFuzzer calls with each input: data[0..size) is borrowed, valid until this returns. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts (a finding) when a call that returned rc != SHS_OK left e without a message: every
 * failure must say why. */
void fuzz_check_failure(const char *parser, int rc, const shs_err *e);

/* Aborts (a finding) naming what and detail (may be NULL) when cond is false: a round trip
 * that does not hold, an invariant broken. */
void fuzz_require(bool cond, const char *what, const char *detail);

/* A NUL-terminated copy of data[0..size); caller frees with free(). Aborts when out of memory. */
char *fuzz_strndup(const uint8_t *data, size_t size);

/* The path ("/proc/self/fd/N") of a memory file holding exactly data[0..size), for parsers
 * that take a path. One file per process, rewritten on each call: the path is borrowed, valid
 * until the next call. Aborts when the file cannot be made or written. */
const char *fuzz_as_file(const uint8_t *data, size_t size);

#endif
