/* Constant literals in HLO text: scalars, nested arrays, complex pairs, tuples, `{...}`. */
#include "text_literal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elem.h"

enum {
	NUM_TEXT_MAX = 128,   /* longest number accepted for a float value */
	BITS_PER_BYTE = 8,
	F64_MANT_BITS = 52,
	F32_MANT_BITS = 23,
	F16_MANT_BITS = 10,
	BF16_MANT_BITS = 7,
	F64_EXP_BITS = 11,
	F32_EXP_BITS = 8,
	F16_EXP_BITS = 5,
	BF16_EXP_BITS = 8,
	HEX_BASE = 16,
	HEX_DIGIT_BITS = 4,
	U64_BITS = 64,
	DEC_BASE = 10
};

typedef struct lit_ctx {
	shs_lexer *lx;
	shs_arena *a;
} lit_ctx;

/* Writes the low nbytes of v little-endian. */
static void put_le(uint8_t *dst, uint64_t v, int nbytes)
{
	for (int i = 0; i < nbytes; i++)
		dst[i] = (uint8_t)(v >> (BITS_PER_BYTE * i));
}

static int oom(lit_ctx *c)
{
	return shs__lex_fail_plain(c->lx, c->lx->tok.off, SHS_ENOMEM,
				   "out of memory reading a constant");
}

/* ---- Element values ---------------------------------------------------------------------- */

/* Range of a signed or unsigned integer type of the given bits, as sign and magnitude. */
static bool int_fits(int type, bool neg, uint64_t mag)
{
	int bits = shs_elem_bits(type);
	uint64_t top = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;

	if (shs_elem_is_unsigned_int(type))
		return (!neg || mag == 0) && mag <= top;
	top >>= 1; /* largest positive value */
	return neg ? mag <= top + 1 : mag <= top;
}

static int put_int(lit_ctx *c, int type, uint8_t *dst)
{
	const shs_tok *t = &c->lx->tok;
	bool neg;
	uint64_t mag;

	if (t->kind != SHS_TOK_INT)
		return shs__lex_fail(c->lx, t, SHS_EPARSE, "expected an integer for a %s constant",
				     shs_elem_name(type));
	if (!shs__tok_int(c->lx, t, &neg, &mag) || !int_fits(type, neg, mag))
		return shs__lex_fail(c->lx, t, SHS_EPARSE, "value out of range for %s",
				     shs_elem_name(type));
	if (dst)
		put_le(dst, neg ? (uint64_t)0 - mag : mag, shs_elem_bytes(type));
	shs__lex_next(c->lx);
	return SHS_OK;
}

static int put_pred(lit_ctx *c, uint8_t *dst)
{
	const shs_tok *t = &c->lx->tok;
	bool neg;
	uint64_t mag;
	uint8_t v;

	if (shs__tok_is_word(c->lx, t, "true") || shs__tok_is_word(c->lx, t, "false")) {
		v = shs__tok_is_word(c->lx, t, "true");
	} else if (t->kind == SHS_TOK_INT && shs__tok_int(c->lx, t, &neg, &mag)) {
		v = mag != 0; /* as XLA: any non-zero integer is true */
	} else {
		return shs__lex_fail(c->lx, t, SHS_EPARSE,
				     "expected true or false for a pred constant");
	}
	if (dst)
		*dst = v;
	shs__lex_next(c->lx);
	return SHS_OK;
}

/* A float value as written: finite or infinite (in d), or a NaN with sign and payload
 * (0: none given). */
typedef struct fvalue {
	bool nan, neg;
	uint64_t payload;
	double d;
} fvalue;

static unsigned hex_digit(char ch)
{
	if (ch >= '0' && ch <= '9')
		return (unsigned)(ch - '0');
	if (ch >= 'a' && ch <= 'f')
		return (unsigned)(ch - 'a' + DEC_BASE);
	return (unsigned)(ch - 'A' + DEC_BASE);
}

static bool parse_payload(const char *s, size_t n, uint64_t *out)
{
	static const size_t prefix = 3; /* "(0x" */
	uint64_t v = 0;

	/* s is "(0x" hex+ ")" as the lexer matched it */
	for (size_t i = prefix; i + 1 < n; i++) {
		if (v >> (U64_BITS - HEX_DIGIT_BITS))
			return false;
		v = v * HEX_BASE + hex_digit(s[i]);
	}
	*out = v;
	return v != 0;
}

/* Reads the current token as a float value (integers, decimals, inf, -inf, nan, -nan with an
 * optional payload). */
static int read_float(lit_ctx *c, const char *type_name, fvalue *v)
{
	const shs_tok *t = &c->lx->tok;
	const char *s = c->lx->src + t->off;
	size_t n = t->len;
	char buf[NUM_TEXT_MAX];
	char *end;

	memset(v, 0, sizeof(*v));
	if (t->kind != SHS_TOK_INT && t->kind != SHS_TOK_FLOAT && t->kind != SHS_TOK_IDENT)
		return shs__lex_fail(c->lx, t, SHS_EPARSE, "expected a number for a %s constant",
				     type_name);
	if (n && s[0] == '-' && t->kind == SHS_TOK_FLOAT && n >= 4 && !memcmp(s + 1, "nan", 3)) {
		v->neg = true;
		s++;
		n--;
	}
	if (n >= 3 && !memcmp(s, "nan", 3)) {
		v->nan = true;
		if (n > 3 && !parse_payload(s + 3, n - 3, &v->payload))
			return shs__lex_fail(c->lx, t, SHS_EPARSE, "NaN payload out of range");
		shs__lex_next(c->lx);
		return SHS_OK;
	}
	if (t->kind == SHS_TOK_IDENT && !shs__tok_is_word(c->lx, t, "inf"))
		return shs__lex_fail(c->lx, t, SHS_EPARSE, "expected a number for a %s constant",
				     type_name);
	if (n >= sizeof(buf))
		return shs__lex_fail(c->lx, t, SHS_EPARSE, "number too long");
	memcpy(buf, s, n);
	buf[n] = '\0';
	v->d = strtod(buf, &end);
	if (end != buf + n)
		return shs__lex_fail(c->lx, t, SHS_EPARSE, "malformed number");
	shs__lex_next(c->lx);
	return SHS_OK;
}

/* Bits of a NaN of a type with mant mantissa bits and exp exponent bits. */
static uint64_t nan_bits(const fvalue *v, int exp, int mant)
{
	uint64_t payload = v->payload ? v->payload : (uint64_t)1 << (mant - 1);

	return ((uint64_t)v->neg << (exp + mant)) | ((((uint64_t)1 << exp) - 1) << mant) | payload;
}

/* d rounded to float, as an IEEE cast would; false when it overflows to infinity. */
static bool f64_to_f32(double d, float *out)
{
	/* FLT_MAX plus half an ulp: the smallest magnitude that rounds to infinity */
	const double limit = (double)FLT_MAX + ldexp(1.0, FLT_MAX_EXP - FLT_MANT_DIG - 1);

	if (isinf(d)) {
		*out = (float)d;
		return true;
	}
	if (fabs(d) >= limit)
		return false;
	*out = fabs(d) > FLT_MAX ? copysignf(FLT_MAX, (float)(d > 0 ? 1 : -1)) : (float)d;
	return true;
}

/* Converts v to the float type and writes it; SHS_EPARSE when a finite value overflows. */
static int store_float(lit_ctx *c, const shs_tok *at, int type, const fvalue *v, uint8_t *dst)
{
	uint64_t bits = 0;
	float f = 0;
	int mant = 0, exp = 0;

	switch (type) {
	case SHS_F64: exp = F64_EXP_BITS; mant = F64_MANT_BITS; break;
	case SHS_F32: case SHS_C64: exp = F32_EXP_BITS; mant = F32_MANT_BITS; break;
	case SHS_F16: exp = F16_EXP_BITS; mant = F16_MANT_BITS; break;
	default: exp = BF16_EXP_BITS; mant = BF16_MANT_BITS; break;
	}
	if (v->nan) {
		if (v->payload >> mant)
			return shs__lex_fail(c->lx, at, SHS_EPARSE, "NaN payload too wide for %s",
					     shs_elem_name(type));
		bits = nan_bits(v, exp, mant);
	} else if (type == SHS_F64 || type == SHS_C128) {
		memcpy(&bits, &v->d, sizeof(bits));
	} else {
		bool ok = f64_to_f32(v->d, &f);
		uint32_t u;

		if (ok && type == SHS_BF16) {
			bits = shs_f32_to_bf16(f);
		} else if (ok && type == SHS_F16) {
			bits = shs_f64_to_f16((double)f);
		} else {
			memcpy(&u, &f, sizeof(u));
			bits = u;
		}
		/* a finite value that became infinite is out of range, as XLA checks it */
		if (!ok || (isfinite(v->d) && ((bits >> mant) & (((uint64_t)1 << exp) - 1)) ==
						      (((uint64_t)1 << exp) - 1)))
			return shs__lex_fail(c->lx, at, SHS_EPARSE, "value out of range for %s",
					     shs_elem_name(type));
	}
	if (dst)
		put_le(dst, bits, (exp + mant + 1) / BITS_PER_BYTE);
	return SHS_OK;
}

static int put_float(lit_ctx *c, int type, uint8_t *dst)
{
	shs_tok at = c->lx->tok;
	fvalue v;
	int rc = read_float(c, shs_elem_name(type), &v);

	return rc ? rc : store_float(c, &at, type, &v, dst);
}

/* `(re, im)`: each part stored as the complex type's component type. */
static int put_complex(lit_ctx *c, int type, uint8_t *dst)
{
	int part = type == SHS_C64 ? SHS_F32 : SHS_F64;
	int half = shs_elem_bytes(type) / 2;
	int rc;

	if (!shs__lex_is(c->lx, SHS_TOK_LPAREN))
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE,
				     "expected '(' to open a %s value (real, imag)",
				     shs_elem_name(type));
	shs__lex_next(c->lx);
	rc = put_float(c, part, dst);
	if (rc == SHS_OK)
		rc = shs__lex_expect(c->lx, SHS_TOK_COMMA,
				     "',' between the real and imaginary parts");
	if (rc == SHS_OK)
		rc = put_float(c, part, dst ? dst + half : NULL);
	if (rc == SHS_OK)
		rc = shs__lex_expect(c->lx, SHS_TOK_RPAREN, "')' after the imaginary part");
	return rc;
}

/* One element of type at dst (NULL: check only). */
static int put_value(lit_ctx *c, int type, uint8_t *dst)
{
	if (type == SHS_PRED)
		return put_pred(c, dst);
	if (shs_elem_is_signed_int(type) || shs_elem_is_unsigned_int(type))
		return put_int(c, type, dst);
	if (shs_elem_is_complex(type))
		return put_complex(c, type, dst);
	return put_float(c, type, dst);
}

/* ---- Arrays and tuples ------------------------------------------------------------------- */

/* Nested braces for dims[level..rank), elements written at data + *index * bytes. */
static int parse_level(lit_ctx *c, const shs_shape *s, uint32_t level, uint8_t *data,
		       int64_t *index)
{
	int bytes = shs_elem_bytes(s->type);
	int64_t want = s->dims[level], k = 0;
	int rc;

	if (!shs__lex_is(c->lx, SHS_TOK_LBRACE))
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE,
				     "expected '{' to open dimension %u of a rank-%u constant",
				     level, s->rank);
	shs__lex_next(c->lx);
	while (!shs__lex_is(c->lx, SHS_TOK_RBRACE)) {
		if (k > 0 &&
		    (rc = shs__lex_expect(c->lx, SHS_TOK_COMMA, "',' or '}' in a constant")))
			return rc;
		if (k == want)
			return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE,
					     "constant has more than %lld elements in dimension %u",
					     (long long)want, level);
		if (level + 1 < s->rank)
			rc = parse_level(c, s, level + 1, data, index);
		else
			rc = put_value(c, s->type, data ? data + *index * bytes : NULL);
		if (rc)
			return rc;
		if (level + 1 == s->rank)
			(*index)++;
		k++;
	}
	if (k < want)
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE,
				     "constant has %lld elements in dimension %u, want %lld",
				     (long long)k, level, (long long)want);
	shs__lex_next(c->lx);
	return SHS_OK;
}

/* True when the tokens are `{ ... }`. */
static bool at_elided(const lit_ctx *c)
{
	shs_tok t;

	if (!shs__lex_is(c->lx, SHS_TOK_LBRACE))
		return false;
	t = shs__lex_peek(c->lx);
	return t.kind == SHS_TOK_DOTS;
}

static int parse_array(lit_ctx *c, const shs_shape *s, shs_literal *out)
{
	int bytes = shs_elem_bytes(s->type);
	int64_t n = shs_shape_elements(s), index = 0;
	uint8_t *data = NULL;
	int rc;

	if (!shs_elem_is_array(s->type))
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE, "a %s constant has no value",
				     shs_elem_name(s->type));
	if (shs_elem_is_float(s->type) && s->type != SHS_F16 && s->type != SHS_BF16 &&
	    s->type != SHS_F32 && s->type != SHS_F64)
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EUNSUPPORTED,
				     "%s constants are not supported", shs_elem_name(s->type));
	if (n < 0)
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE,
				     "a constant cannot have unbounded dimensions");
	if (s->rank > 0 && at_elided(c)) {
		shs__lex_next(c->lx);
		shs__lex_next(c->lx);
		out->elided = true;
		return shs__lex_expect(c->lx, SHS_TOK_RBRACE, "'}' after '...'");
	}
	/* every element takes at least one byte of text: a larger count cannot match, so parse it
	 * without storage and let the count check report where it goes wrong */
	if ((uint64_t)n <= c->lx->len - c->lx->tok.off) {
		data = shs_arena_alloc(c->a, (size_t)n * (size_t)bytes);
		if (!data)
			return oom(c);
	}
	if (s->rank == 0)
		rc = put_value(c, s->type, data);
	else
		rc = parse_level(c, s, 0, data, &index);
	if (rc)
		return rc;
	if (!data) /* cannot happen: the text was too short for the count */
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE, "constant too large");
	out->data = data;
	out->size = (size_t)n * (size_t)bytes;
	return SHS_OK;
}

static int parse_any(lit_ctx *c, const shs_shape *s, shs_literal *out, int depth);

static int parse_tuple(lit_ctx *c, const shs_shape *s, shs_literal *out, int depth)
{
	int rc;

	if (depth >= SHS_MAX_NESTING)
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE,
				     "constant nested deeper than %d", SHS_MAX_NESTING);
	if (!shs__lex_is(c->lx, SHS_TOK_LPAREN))
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE,
				     "expected '(' to open a tuple constant of %u elements",
				     s->n_tuple);
	shs__lex_next(c->lx);
	out->n_tuple = s->n_tuple;
	if (s->n_tuple) {
		out->tuple = shs_arena_calloc(c->a, s->n_tuple, sizeof(*out->tuple));
		if (!out->tuple)
			return oom(c);
	}
	for (uint32_t i = 0; i < s->n_tuple; i++) {
		if (i > 0 &&
		    (rc = shs__lex_expect(c->lx, SHS_TOK_COMMA, "',' between tuple elements")))
			return rc;
		rc = parse_any(c, &s->tuple[i], &out->tuple[i], depth + 1);
		if (rc)
			return rc;
	}
	if (!shs__lex_is(c->lx, SHS_TOK_RPAREN))
		return shs__lex_fail(c->lx, &c->lx->tok, SHS_EPARSE,
				     "expected ')' after the %u elements of a tuple constant",
				     s->n_tuple);
	shs__lex_next(c->lx);
	return SHS_OK;
}

static int parse_any(lit_ctx *c, const shs_shape *s, shs_literal *out, int depth)
{
	if (s->type == SHS_TUPLE)
		return parse_tuple(c, s, out, depth);
	return parse_array(c, s, out);
}

int shs__text_literal_parse(shs_lexer *lx, shs_arena *a, const shs_shape *shape,
			    shs_literal **out)
{
	lit_ctx c = { lx, a };
	shs_literal *lit = shs_arena_calloc(a, 1, sizeof(*lit));
	int rc;

	*out = NULL;
	if (!lit)
		return oom(&c);
	rc = parse_any(&c, shape, lit, 0);
	if (rc == SHS_OK)
		*out = lit;
	return rc;
}
