/* A growable byte buffer for building text and encodings. */
#ifndef SHS_BUF_H
#define SHS_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Zero-initialise to start. data is NUL-terminated whenever len > 0. A failed append sets
 * oom and makes every later append a no-op, so callers check once at the end. */
typedef struct shs_buf {
	char *data;
	size_t len, cap;
	bool oom;
} shs_buf;

/* Frees the storage and resets b to empty. */
void shs_buf_free(shs_buf *b);

/* Empties b, keeping its storage. */
void shs_buf_reset(shs_buf *b);

void shs_buf_put(shs_buf *b, const void *p, size_t n);
void shs_buf_puts(shs_buf *b, const char *s);
void shs_buf_putc(shs_buf *b, char c);
void shs_buf_printf(shs_buf *b, const char *fmt, ...) SHS_PRINTF(2, 3);

/* Appends v in decimal. */
void shs_buf_put_i64(shs_buf *b, int64_t v);

/* Copies the NUL-terminated src into dst[0..cap), truncated and NUL-terminated (cap > 0):
 * what snprintf(dst, cap, "%s", src) does, without formatting (labels copied per candidate). */
void shs_str_copy(char *dst, size_t cap, const char *src);

/* Hands the bytes to the caller (caller frees with free()) and resets b; NULL if empty or oom. */
char *shs_buf_take(shs_buf *b);

#endif
