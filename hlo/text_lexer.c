/* HLO text tokens: a hand-written lexer over the input buffer, raw values, positioned errors. */
#include "text_lexer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"

enum {
	FOUND_MAX = 40,      /* bytes of the offending token quoted in a message */
	CH_IDENT_START = 1,  /* character classes, as bits */
	CH_IDENT = 2,
	CH_DIGIT = 4,
	CH_BLANK = 8,
	CH_HEX = 16
};

/* Character classes of the ASCII bytes; others are 0. */
static const unsigned char ch_class[256] = {
	[' '] = CH_BLANK, ['\t'] = CH_BLANK, ['\n'] = CH_BLANK, ['\r'] = CH_BLANK,
	['_'] = CH_IDENT_START | CH_IDENT, ['-'] = CH_IDENT, ['.'] = CH_IDENT,
#define D(c) [c] = CH_IDENT | CH_DIGIT | CH_HEX
	D('0'), D('1'), D('2'), D('3'), D('4'), D('5'), D('6'), D('7'), D('8'), D('9'),
#undef D
#define H(c) [c] = CH_IDENT_START | CH_IDENT | CH_HEX
	H('a'), H('b'), H('c'), H('d'), H('e'), H('f'),
	H('A'), H('B'), H('C'), H('D'), H('E'), H('F'),
#undef H
#define L(c) [c] = CH_IDENT_START | CH_IDENT
	L('g'), L('h'), L('i'), L('j'), L('k'), L('l'), L('m'), L('n'), L('o'), L('p'), L('q'),
	L('r'), L('s'), L('t'), L('u'), L('v'), L('w'), L('x'), L('y'), L('z'),
	L('G'), L('H'), L('I'), L('J'), L('K'), L('L'), L('M'), L('N'), L('O'), L('P'), L('Q'),
	L('R'), L('S'), L('T'), L('U'), L('V'), L('W'), L('X'), L('Y'), L('Z'),
#undef L
};

static bool is_class(char c, int cls)
{
	return (ch_class[(unsigned char)c] & cls) != 0;
}

/* Offset of the first byte at or after off that is not of class cls. */
static size_t skip_class(const shs_lexer *lx, size_t off, int cls)
{
	while (off < lx->len && is_class(lx->src[off], cls))
		off++;
	return off;
}

/* Offset of the first byte at or after off outside blanks and comments; *bad is the offset of
 * an unterminated comment, or SIZE_MAX. */
static size_t skip_blanks(const char *s, size_t len, size_t off, size_t *bad)
{
	*bad = SIZE_MAX;
	while (off < len) {
		char c = s[off];

		if (is_class(c, CH_BLANK)) {
			off++;
		} else if (c == '/' && off + 1 < len && s[off + 1] == '*') {
			size_t end = off + 2;

			while (end + 1 < len && !(s[end] == '*' && s[end + 1] == '/'))
				end++;
			if (end + 1 >= len) {
				*bad = off;
				return off;
			}
			off = end + 2;
		} else if (c == '/' && off + 1 < len && s[off + 1] == '/') {
			while (off < len && s[off] != '\n')
				off++;
		} else {
			break;
		}
	}
	return off;
}

size_t shs__lex_skip_blanks(const shs_lexer *lx, size_t off)
{
	size_t bad;

	return skip_blanks(lx->src, lx->len, off, &bad);
}

static shs_tok make(shs_tok_kind kind, size_t off, size_t len)
{
	shs_tok t = { kind, off, len, NULL };

	return t;
}

static shs_tok error_tok(size_t off, size_t len, const char *why)
{
	shs_tok t = { SHS_TOK_ERROR, off, len, why };

	return t;
}

static bool starts_with(const shs_lexer *lx, size_t off, const char *word)
{
	size_t n = strlen(word);

	return lx->len - off >= n && !memcmp(lx->src + off, word, n);
}

/* Length of a NaN payload "(0x1f)" at off, or 0. */
static size_t nan_payload_len(const shs_lexer *lx, size_t off)
{
	size_t end;

	if (!starts_with(lx, off, "(0x"))
		return 0;
	end = skip_class(lx, off + 3, CH_HEX);
	if (end == off + 3 || end >= lx->len || lx->src[end] != ')')
		return 0;
	return end + 1 - off;
}

/* A number, -inf, -nan or -> starting at off (s[off] is '-', '.' or a digit). */
static shs_tok lex_number(const shs_lexer *lx, size_t off)
{
	const char *s = lx->src;
	size_t p = off, mant;
	bool is_float = false;

	if (s[p] == '-') {
		p++;
		if (p < lx->len && s[p] == '>')
			return make(SHS_TOK_ARROW, off, 2);
		if (starts_with(lx, p, "inf"))
			return make(SHS_TOK_FLOAT, off, 4);
		if (starts_with(lx, p, "nan"))
			return make(SHS_TOK_FLOAT, off, 4 + nan_payload_len(lx, p + 3));
	}
	mant = p;
	p = skip_class(lx, p, CH_DIGIT);
	if (p < lx->len && s[p] == '.') {
		is_float = true;
		p = skip_class(lx, p + 1, CH_DIGIT);
	}
	if (p == mant || (p == mant + 1 && is_float))
		return error_tok(off, p - off + (p < lx->len), "malformed number");
	if (p < lx->len && (s[p] == 'e' || s[p] == 'E')) {
		size_t q = p + 1;

		if (q < lx->len && (s[q] == '+' || s[q] == '-'))
			q++;
		if (q < lx->len && is_class(s[q], CH_DIGIT)) {
			p = skip_class(lx, q, CH_DIGIT);
			is_float = true;
		}
	}
	return make(is_float ? SHS_TOK_FLOAT : SHS_TOK_INT, off, p - off);
}

/* A double- or single-quoted string starting at off. */
static shs_tok lex_string(const shs_lexer *lx, size_t off)
{
	char quote = lx->src[off];
	size_t p = off + 1;

	while (p < lx->len && lx->src[p] != quote) {
		if (lx->src[p] == '\\')
			p++;
		p++;
	}
	if (p >= lx->len)
		return error_tok(off, 1, "unterminated string");
	return make(SHS_TOK_STRING, off, p + 1 - off);
}

static shs_tok lex_punct(const shs_lexer *lx, size_t off)
{
	char c = lx->src[off];

	switch (c) {
	case '=': return make(SHS_TOK_EQ, off, 1);
	case ',': return make(SHS_TOK_COMMA, off, 1);
	case ':': return make(SHS_TOK_COLON, off, 1);
	case '(': return make(SHS_TOK_LPAREN, off, 1);
	case ')': return make(SHS_TOK_RPAREN, off, 1);
	case '[': return make(SHS_TOK_LBRACKET, off, 1);
	case ']': return make(SHS_TOK_RBRACKET, off, 1);
	case '{': return make(SHS_TOK_LBRACE, off, 1);
	case '}': return make(SHS_TOK_RBRACE, off, 1);
	case '?': return make(SHS_TOK_QUESTION, off, 1);
	case '*': return make(SHS_TOK_STAR, off, 1);
	case '<':
		if (off + 1 < lx->len && lx->src[off + 1] == '=')
			return make(SHS_TOK_LEQ, off, 2);
		break;
	case '\0':
		return error_tok(off, 1, "unexpected NUL byte");
	default:
		break;
	}
	return error_tok(off, 1, "unexpected character");
}

shs_tok shs__lex_at(const shs_lexer *lx, size_t off)
{
	size_t bad;
	char c;

	off = skip_blanks(lx->src, lx->len, off, &bad);
	if (bad != SIZE_MAX)
		return error_tok(bad, 2, "unterminated comment");
	if (off >= lx->len)
		return make(SHS_TOK_EOF, lx->len, 0);
	c = lx->src[off];
	if (is_class(c, CH_IDENT_START)) {
		size_t end = skip_class(lx, off + 1, CH_IDENT);

		if (end - off == 3 && !memcmp(lx->src + off, "nan", 3))
			end += nan_payload_len(lx, end);
		return make(SHS_TOK_IDENT, off, end - off);
	}
	if (is_class(c, CH_DIGIT) || c == '-')
		return lex_number(lx, off);
	if (c == '.') {
		if (starts_with(lx, off, "..."))
			return make(SHS_TOK_DOTS, off, 3);
		return lex_number(lx, off);
	}
	if (c == '%') {
		if (off + 1 < lx->len && is_class(lx->src[off + 1], CH_IDENT_START))
			return make(SHS_TOK_PNAME, off, skip_class(lx, off + 2, CH_IDENT) - off);
		return error_tok(off, 1, "expected a name after '%'");
	}
	if (c == '"' || c == '\'')
		return lex_string(lx, off);
	return lex_punct(lx, off);
}

void shs__lex_init(shs_lexer *lx, const char *src, size_t len, const char *origin, shs_err *e)
{
	lx->src = src;
	lx->len = len;
	lx->origin = origin;
	lx->e = e;
	shs__lex_seek(lx, 0);
}

void shs__lex_seek(shs_lexer *lx, size_t off)
{
	lx->prev_end = off;
	lx->tok = shs__lex_at(lx, off);
	lx->pos = lx->tok.off + lx->tok.len;
}

void shs__lex_next(shs_lexer *lx)
{
	if (lx->tok.kind == SHS_TOK_EOF || lx->tok.kind == SHS_TOK_ERROR)
		return; /* stay on the end or the fault */
	shs__lex_seek(lx, lx->pos);
}

shs_tok shs__lex_peek(const shs_lexer *lx)
{
	if (lx->tok.kind == SHS_TOK_EOF || lx->tok.kind == SHS_TOK_ERROR)
		return lx->tok;
	return shs__lex_at(lx, lx->pos);
}

bool shs__lex_is_ident_char(char c)
{
	return is_class(c, CH_IDENT);
}

const char *const shs__comparison_directions[] = { "EQ", "NE", "GE", "GT", "LE", "LT", NULL };
const char *const shs__comparison_types[] = { "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED",
					      NULL };
const char *const shs__fusion_kinds[] = { "kLoop", "kInput", "kOutput", "kCustom", NULL };

const char *const shs__comp_words[] = { "ENTRY", "FileNames", "FunctionNames", "FileLocations",
					"StackFrames", NULL };
const char *const shs__instr_words[] = { "ROOT", NULL };

bool shs__word_in(const char *word, const char *const *words)
{
	for (; *words; words++)
		if (!strcmp(word, *words))
			return true;
	return false;
}

bool shs__lex_is_name(const char *s)
{
	if (!is_class(*s, CH_IDENT_START))
		return false;
	while (*++s)
		if (!is_class(*s, CH_IDENT))
			return false;
	return true;
}

bool shs__tok_is_word(const shs_lexer *lx, const shs_tok *t, const char *word)
{
	size_t n = strlen(word);

	return t->kind == SHS_TOK_IDENT && t->len == n && !memcmp(lx->src + t->off, word, n);
}

bool shs__tok_int(const shs_lexer *lx, const shs_tok *t, bool *neg, uint64_t *mag)
{
	const char *s = lx->src + t->off;
	size_t i = 0;
	uint64_t v = 0;

	*neg = t->len > 0 && s[0] == '-';
	if (*neg)
		i++;
	for (; i < t->len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*mag = v;
	return true;
}

/* The int64 of sign and magnitude, when it fits. */
static bool to_i64(bool neg, uint64_t mag, int64_t *out)
{
	if (!neg && mag <= (uint64_t)INT64_MAX) {
		*out = (int64_t)mag;
		return true;
	}
	if (neg && mag <= (uint64_t)INT64_MAX + 1) {
		*out = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
		return true;
	}
	return false;
}

int shs__lex_int_in(shs_lexer *lx, const shs_tok *t, int64_t lo, int64_t hi, const char *what,
		    int64_t *out)
{
	bool neg;
	uint64_t mag;
	int64_t v;

	if (t->kind != SHS_TOK_INT)
		return shs__lex_fail(lx, t, SHS_EPARSE, "expected an integer for %s", what);
	if (!shs__tok_int(lx, t, &neg, &mag) || !to_i64(neg, mag, &v) || v < lo || v > hi)
		return shs__lex_fail(lx, t, SHS_EPARSE,
				     "%s out of range [%lld, %lld]", what, (long long)lo,
				     (long long)hi);
	*out = v;
	return SHS_OK;
}

bool shs__lex_raw_int(const shs_lexer *lx, size_t *off, int64_t *out)
{
	size_t p = *off, end;
	shs_tok t;
	bool neg;
	uint64_t mag;

	if (p < lx->len && lx->src[p] == '-')
		p++;
	end = skip_class(lx, p, CH_DIGIT);
	if (end == p)
		return false;
	t = make(SHS_TOK_INT, *off, end - *off);
	if (!shs__tok_int(lx, &t, &neg, &mag) || !to_i64(neg, mag, out))
		return false;
	*off = end;
	return true;
}

void shs__lex_line_col(const shs_lexer *lx, size_t off, size_t *line, size_t *col)
{
	const char *s = lx->src, *p = s, *nl;
	size_t n = 1;

	if (off > lx->len)
		off = lx->len;
	while ((nl = memchr(p, '\n', (size_t)(s + off - p))) != NULL) {
		n++;
		p = nl + 1;
	}
	*line = n;
	*col = (size_t)(s + off - p) + 1;
}

/* Appends " (found 'text')" for token t to buf. */
static void describe(const shs_lexer *lx, const shs_tok *t, char *buf, size_t cap)
{
	size_t n = t->len, i;
	bool cut = false;

	if (t->kind == SHS_TOK_EOF) {
		snprintf(buf, cap, " (found end of input)");
		return;
	}
	for (i = 0; i < n; i++)
		if (lx->src[t->off + i] == '\n')
			break;
	if (i < n) {
		n = i;
		cut = true;
	}
	if (n > FOUND_MAX) {
		n = FOUND_MAX;
		cut = true;
	}
	snprintf(buf, cap, " (found '%.*s%s')", (int)n, lx->src + t->off, cut ? "..." : "");
}

static int vfail(shs_lexer *lx, const shs_tok *t, bool found, int code, const char *fmt,
		 va_list ap)
{
	char what[SHS_ERRMSG_MAX];
	char tail[FOUND_MAX + 32] = "";
	size_t line, col;

	if (t->kind == SHS_TOK_ERROR) {
		snprintf(what, sizeof(what), "%s", t->why);
		code = SHS_EPARSE;
		describe(lx, t, tail, sizeof(tail));
	} else {
		vsnprintf(what, sizeof(what), fmt, ap);
		if (found)
			describe(lx, t, tail, sizeof(tail));
	}
	shs__lex_line_col(lx, t->off, &line, &col);
	return shs_seterr(lx->e, code, "%s:%zu:%zu: %s%s", lx->origin, line, col, what, tail);
}

int shs__lex_vfail(shs_lexer *lx, const shs_tok *t, int code, const char *fmt, va_list ap)
{
	return vfail(lx, t, true, code, fmt, ap);
}

int shs__lex_fail(shs_lexer *lx, const shs_tok *t, int code, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(lx, t, true, code, fmt, ap);
	va_end(ap);
	return rc;
}

/* A parse error at the token starting at off. */
static int fail_at(shs_lexer *lx, size_t off, const char *fmt, ...) SHS_PRINTF(3, 4);

static int fail_at(shs_lexer *lx, size_t off, const char *fmt, ...)
{
	shs_tok t = shs__lex_at(lx, off);
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(lx, &t, true, SHS_EPARSE, fmt, ap);
	va_end(ap);
	return rc;
}

int shs__lex_fail_plain(shs_lexer *lx, size_t off, int code, const char *fmt, ...)
{
	shs_tok t = make(SHS_TOK_IDENT, off, 0); /* not an error token: the message is ours */
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail(lx, &t, false, code, fmt, ap);
	va_end(ap);
	return rc;
}

/* True for the bytes that end a raw value outside brackets. */
static bool ends_raw(char c)
{
	return c == ',' || is_class(c, CH_BLANK);
}

int shs__lex_raw_end(shs_lexer *lx, size_t start, size_t *end)
{
	const char *s = lx->src;
	size_t len = lx->len, i = start;
	char closers[SHS_MAX_NESTING];
	uint32_t depth = 0;

	while (i < len) {
		char c = s[i];

		if (c == '"' || c == '\'' || (c == '/' && i + 1 < len && s[i + 1] == '*')) {
			shs_tok t = shs__lex_at(lx, i);

			if (t.kind == SHS_TOK_ERROR)
				return shs__lex_fail(lx, &t, SHS_EPARSE, "bad value");
			i = c == '/' ? shs__lex_skip_blanks(lx, i) : i + t.len;
			continue;
		}
		if (c == '{' || c == '[' || c == '(') {
			if (depth == SHS_MAX_NESTING)
				return fail_at(lx, i, "value nested deeper than %d",
					       SHS_MAX_NESTING);
			closers[depth++] = c == '{' ? '}' : c == '[' ? ']' : ')';
		} else if (c == '}' || c == ']' || c == ')') {
			if (depth == 0)
				break;
			if (closers[--depth] != c)
				return fail_at(lx, i, "mismatched '%c' in a value", c);
		} else if (depth == 0 && ends_raw(c)) {
			break;
		}
		i++;
	}
	if (depth)
		return fail_at(lx, start, "unterminated value");
	if (i == start)
		return fail_at(lx, start, "expected a value");
	*end = i;
	return SHS_OK;
}
