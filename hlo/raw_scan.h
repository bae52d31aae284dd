/* A scanner over one attribute value kept as text: blanks, characters, integers, numbers, names
 * and quoted strings, with the reason and place of the first error. Private to hlo/. */
#ifndef SHS_RAW_SCAN_H
#define SHS_RAW_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "ir.h"
#include "status.h"

/* s: the NUL-terminated value (borrowed, valid while the scanner is used); why[0..cap): where
 * the first error is explained. */
typedef struct shs__scan {
	const char *s;
	size_t pos;
	char *why;
	size_t cap;
} shs__scan;

/* Writes the reason (with the character position) to c->why; returns SHS_EPARSE. */
int shs__scan_fail(shs__scan *c, const char *fmt, ...) SHS_PRINTF(2, 3);

/* Skips spaces, tabs and newlines. */
void shs__scan_blanks(shs__scan *c);

/* After blanks: consumes ch and returns true when it is next, else false. */
bool shs__scan_eat(shs__scan *c, char ch);

/* As shs__scan_eat, failing ("expected 'ch'") when ch is not next. */
int shs__scan_need(shs__scan *c, char ch);

/* A decimal integer of at least lo. */
int shs__scan_int(shs__scan *c, int64_t lo, int64_t *out);

/* A decimal number (integer or floating point, finite). */
int shs__scan_number(shs__scan *c, double *out);

/* A word of letters, digits and '_', '-', '.': its start in *s and length in *n (into c->s). */
int shs__scan_word(shs__scan *c, const char **s, size_t *n);

/* A "quoted" string, backslash escapes kept as they are: the text between the quotes in *s
 * and *n (into c->s). */
int shs__scan_quoted(shs__scan *c, const char **s, size_t *n);

/* `open a,b,... close` (possibly empty) of integers of at least lo into *out, allocated in a.
 * *out: caller frees with a. */
int shs__scan_ints(shs__scan *c, shs_arena *a, char open, char close, int64_t lo, shs_i64s *out);

/* Fails ("unexpected text after what") unless only blanks are left. */
int shs__scan_end(shs__scan *c, const char *what);

#endif
