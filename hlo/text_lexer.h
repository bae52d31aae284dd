/* Private to the HLO text parser: tokens over a borrowed buffer, raw values, positions, errors. */
#ifndef SHS_TEXT_LEXER_H
#define SHS_TEXT_LEXER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

typedef enum shs_tok_kind {
	SHS_TOK_EOF,
	SHS_TOK_ERROR,    /* why says what is wrong at off */
	SHS_TOK_IDENT,    /* [A-Za-z_][A-Za-z0-9_.-]* */
	SHS_TOK_PNAME,    /* %name; off/len cover the '%' */
	SHS_TOK_INT,      /* -?[0-9]+ */
	SHS_TOK_FLOAT,    /* a number with '.' or an exponent, or -inf / -nan */
	SHS_TOK_STRING,   /* "..." with C escapes; off/len cover the quotes */
	SHS_TOK_EQ,
	SHS_TOK_COMMA,
	SHS_TOK_COLON,
	SHS_TOK_LPAREN,
	SHS_TOK_RPAREN,
	SHS_TOK_LBRACKET,
	SHS_TOK_RBRACKET,
	SHS_TOK_LBRACE,
	SHS_TOK_RBRACE,
	SHS_TOK_ARROW,    /* -> */
	SHS_TOK_LEQ,      /* <= */
	SHS_TOK_QUESTION,
	SHS_TOK_STAR,
	SHS_TOK_DOTS      /* ... */
} shs_tok_kind;

/* One token: src[off, off + len). */
typedef struct shs_tok {
	shs_tok_kind kind;
	size_t off, len;
	const char *why; /* SHS_TOK_ERROR only: a fixed description */
} shs_tok;

/* The lexer over a borrowed buffer; tok is the current (not yet consumed) token and pos the
 * offset just past it. Errors go to e as "origin:LINE:COL: what (found 'x')". */
typedef struct shs_lexer {
	const char *src;
	size_t len;
	size_t pos;
	size_t prev_end; /* end of the last consumed token (or of a skipped raw value) */
	const char *origin;
	shs_err *e;
	shs_tok tok;
} shs_lexer;

/* Starts lexing src[0..len) and loads the first token. lx: borrowed, valid until this returns;
 * src, origin and
 * e: borrowed, valid until lx's last use (tokens and names point into src). */
void shs__lex_init(shs_lexer *lx, const char *src, size_t len, const char *origin, shs_err *e);

/* Consumes the current token and loads the next one. lx: borrowed, valid until this returns. */
void shs__lex_next(shs_lexer *lx);

/* The token after the current one, without consuming anything. lx: borrowed, valid until this
 * returns. */
shs_tok shs__lex_peek(const shs_lexer *lx);

/* The token starting at or after offset off (blanks and comments skipped). lx: borrowed, valid
 * until this returns. */
shs_tok shs__lex_at(const shs_lexer *lx, size_t off);

/* Moves to offset off (which must be a token boundary or blank) and loads the token there.
 * lx: borrowed, valid until this returns. */
void shs__lex_seek(shs_lexer *lx, size_t off);

/* Offset of the first byte at or after off that is not blank or inside a comment. lx: borrowed,
 * valid until this returns. */
size_t shs__lex_skip_blanks(const shs_lexer *lx, size_t off);

/* True when the current token is kind. lx: borrowed, valid until this returns. */
static inline bool shs__lex_is(const shs_lexer *lx, shs_tok_kind kind)
{
	return lx->tok.kind == kind;
}

/* True for [A-Za-z0-9_.-], the bytes that continue an identifier. */
bool shs__lex_is_ident_char(char c);

/* The words the text form takes for a compare's direction and type and a fusion's kind (XLA's
 * ComparisonDirection, Comparison::Type and FusionKind), NULL-terminated; static storage. */
extern const char *const shs__comparison_directions[];
extern const char *const shs__comparison_types[];
extern const char *const shs__fusion_kinds[];

/* The words that open something where HLO text names a computation (ENTRY, the stack frame
 * tables of text_parse.c) or an instruction (ROOT), NULL-terminated: a computation or
 * instruction of that name would not read back. Static storage. */
extern const char *const shs__comp_words[];
extern const char *const shs__instr_words[];

/* Whether word is one of words (NULL-terminated). Both: borrowed, valid until this returns. */
bool shs__word_in(const char *word, const char *const *words);

/* True when s is one whole identifier ([A-Za-z_][A-Za-z0-9_.-]*): a name that prints as text
 * which reads back. s: borrowed, valid until this returns. */
bool shs__lex_is_name(const char *s);

/* True when t is the identifier word. lx, t and word: borrowed, valid until this returns. */
bool shs__tok_is_word(const shs_lexer *lx, const shs_tok *t, const char *word);

/* Parses an SHS_TOK_INT as a sign and magnitude; false on overflow of uint64. lx and t: borrowed,
 * valid until this returns. */
bool shs__tok_int(const shs_lexer *lx, const shs_tok *t, bool *neg, uint64_t *mag);

/* Parses an SHS_TOK_INT into an int64 in [lo, hi]; reports an error at t otherwise. lx, t and
 * what: borrowed, valid until this returns. */
int shs__lex_int_in(shs_lexer *lx, const shs_tok *t, int64_t lo, int64_t hi, const char *what,
		    int64_t *out);

/* Reads -?[0-9]+ at src[*off..) without skipping blanks; false when there is none or it does
 * not fit in int64. On success *off is past the digits. lx: borrowed, valid until this returns. */
bool shs__lex_raw_int(const shs_lexer *lx, size_t *off, int64_t *out);

/* 1-based line and column of offset off. lx: borrowed, valid until this returns. */
void shs__lex_line_col(const shs_lexer *lx, size_t off, size_t *line, size_t *col);

/* Sets the error to code with "origin:LINE:COL: <fmt> (found '<token at t>')", or, when t is
 * an error token, with its own description. Returns code. lx, t and fmt: borrowed, valid until
 * this returns. */
int shs__lex_fail(shs_lexer *lx, const shs_tok *t, int code, const char *fmt, ...)
	SHS_PRINTF(4, 5);

/* shs__lex_fail with a va_list. lx, t and fmt: borrowed, valid until this returns. */
int shs__lex_vfail(shs_lexer *lx, const shs_tok *t, int code, const char *fmt, va_list ap)
	SHS_PRINTF(4, 0);

/* Like shs__lex_fail at offset off, without the "(found ...)" part. lx and fmt: borrowed, valid
 * until this returns. */
int shs__lex_fail_plain(shs_lexer *lx, size_t off, int code, const char *fmt, ...)
	SHS_PRINTF(4, 5);

/* Consumes the current token when it is kind; else SHS_EPARSE "expected <what>". lx and what:
 * borrowed, valid until this returns. */
static inline int shs__lex_expect(shs_lexer *lx, shs_tok_kind kind, const char *what)
{
	if (lx->tok.kind != kind)
		return shs__lex_fail(lx, &lx->tok, SHS_EPARSE, "expected %s", what);
	shs__lex_next(lx);
	return SHS_OK;
}

/* *end is the end of a raw value starting at start: the next ',' or blank outside brackets, or
 * an unmatched closing bracket; strings, comments and brackets are skipped whole. Returns
 * SHS_OK or SHS_EPARSE (empty, unterminated, mismatched or nested deeper than
 * SHS_MAX_NESTING). lx: borrowed, valid until this returns. */
int shs__lex_raw_end(shs_lexer *lx, size_t start, size_t *end);

#endif
