/* OpMetadata (op name, source position) and the quoted strings of HLO text. */
#ifndef SHS_METADATA_H
#define SHS_METADATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "buf.h"
#include "status.h"

/* XLA's OpMetadata. Strings are NULL when unset (proto3 empty), ints 0 when unset. */
typedef struct shs_metadata {
	const char *op_type;
	const char *op_name;
	const char *source_file;
	int32_t source_line;
	int32_t source_end_line;
	int32_t source_column;
	int32_t source_end_column;
	const char *deduplicated_name;
	const char *scheduling_name;
	int32_t stack_frame_id;
} shs_metadata;

/* Parses the text form `{op_name="a/b" source_file="x.py" source_line=3 ...}` at s[0..len),
 * starting at its '{'. Strings go into a. On success sets *consumed to the bytes read.
 * On error sets *err_off to the offset of the fault and fills e. Returns SHS_OK,
 * SHS_EPARSE or SHS_ENOMEM. */
int shs_metadata_parse(shs_arena *a, const char *s, size_t len, size_t *consumed,
		       shs_metadata *out, size_t *err_off, shs_err *e);

/* Appends the text form as XLA prints it, `{op_name="..." source_file="..." source_line=N}`. */
void shs_metadata_print(shs_buf *b, const shs_metadata *m);

/* True when no field is set. */
bool shs_metadata_empty(const shs_metadata *m);

bool shs_metadata_equal(const shs_metadata *x, const shs_metadata *y);

/* Appends s[0..len) as a C-escaped, double-quoted string, as XLA's CEscape does. */
void shs_text_put_quoted(shs_buf *b, const char *s, size_t len);

/* Parses a double-quoted C-escaped string starting at s[0] == '"' in s[0..len). On success
 * *out is the unescaped bytes, NUL-terminated, in a (*out_len its length, may hold NULs) and
 * *consumed the bytes read, quotes included. Errors set *err_off and e; returns SHS_EPARSE
 * (unterminated string, bad escape) or SHS_ENOMEM. */
int shs_text_parse_quoted(shs_arena *a, const char *s, size_t len, size_t *consumed,
			  char **out, size_t *out_len, size_t *err_off, shs_err *e);

#endif
