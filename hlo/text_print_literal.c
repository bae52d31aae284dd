/* HLO text printer: constant literals, and float elements in XLA's round-trip formats. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elem.h"
#include "text_print.h"

enum {
	NUM_BUF = 64,              /* room for one formatted number */
	MAX_EMPTY_BRACES = 1 << 24 /* most `{}` printed for an array without elements */
};

/* Decimal digits for XLA's RoundTripFpToString: f32/f64 try the short form (digits10), else
 * the exact one (max_digits10); the narrower types always use max_digits10. */
enum {
	F32_SHORT_DIGITS = 6,
	F32_ROUND_DIGITS = 9,
	F64_SHORT_DIGITS = 15,
	F64_ROUND_DIGITS = 17,
	BF16_DIGITS = 4,
	F16_DIGITS = 5,
	LOG10_2_NUM = 30103, /* log10(2) as a fraction, for max_digits10 of the f8/f4 types */
	LOG10_2_DEN = 100000
};

/* Mantissa widths of the IEEE-like types: they place the sign bit and the NaN payload. */
enum { F16_MANT = 10, BF16_MANT = 7, F32_MANT = 23, F64_MANT = 52 };

/* ---- float elements -------------------------------------------------------------------- */

/* The n-byte little-endian value at p. */
static uint64_t read_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* `nan`, `-nan`, and XLA's `nan(0x...)` when the payload is not the plain quiet NaN. */
static void put_nan(shs_buf *b, bool negative, uint64_t payload, uint64_t quiet)
{
	shs_buf_puts(b, negative ? "-nan" : "nan");
	if (payload != quiet)
		shs_buf_printf(b, "(0x%" PRIx64 ")", payload);
}

/* The NaN of an IEEE-like type with mant mantissa bits, from its bits. */
static void put_ieee_nan(shs_buf *b, uint64_t bits, int mant, int width)
{
	uint64_t payload = bits & ((UINT64_C(1) << mant) - 1);

	put_nan(b, (bits >> (width - 1)) & 1, payload, UINT64_C(1) << (mant - 1));
}

static void put_g(shs_buf *b, double v, int digits)
{
	shs_buf_printf(b, "%.*g", digits, v);
}

/* XLA's RoundTripFpToString for f32 (single) and f64: the short form when it reads back as v,
 * else the exact one. */
static void put_round_trip(shs_buf *b, double v, bool single)
{
	char tmp[NUM_BUF];

	snprintf(tmp, sizeof(tmp), "%.*g", single ? F32_SHORT_DIGITS : F64_SHORT_DIGITS, v);
	if (single ? strtof(tmp, NULL) != (float)v : strtod(tmp, NULL) != v)
		snprintf(tmp, sizeof(tmp), "%.*g", single ? F32_ROUND_DIGITS : F64_ROUND_DIGITS, v);
	shs_buf_puts(b, tmp);
}

static void put_f32(shs_buf *b, uint32_t bits)
{
	float f;

	memcpy(&f, &bits, sizeof(f));
	if (isnan(f))
		put_ieee_nan(b, bits, F32_MANT, shs_elem_bits(SHS_F32));
	else
		put_round_trip(b, (double)f, true);
}

static void put_f64(shs_buf *b, uint64_t bits)
{
	double d;

	memcpy(&d, &bits, sizeof(d));
	if (isnan(d))
		put_ieee_nan(b, bits, F64_MANT, shs_elem_bits(SHS_F64));
	else
		put_round_trip(b, d, false);
}

/* f16 and bf16 (type): nan with its payload, else the value with the type's digits. */
static void put_half(shs_buf *b, int type, uint16_t h)
{
	bool bf = type == SHS_BF16;
	double v = bf ? (double)shs_bf16_to_f32(h) : shs_f16_to_f64(h);

	if (isnan(v))
		put_ieee_nan(b, h, bf ? BF16_MANT : F16_MANT, shs_elem_bits(type));
	else
		put_g(b, v, bf ? BF16_DIGITS : F16_DIGITS);
}

/* The 8- and 4-bit float formats: exponent and mantissa widths, bias, and which encodings are
 * special. */
typedef enum mf_kind {
	MF_IEEE,  /* all-ones exponent: inf (mantissa 0) or nan */
	MF_FN,    /* finite; all-ones exponent and mantissa: nan */
	MF_FNUZ,  /* finite, no negative zero; the sign bit alone: nan */
	MF_FINITE /* no special values */
} mf_kind;

typedef struct minifloat {
	int type, ebits, mbits, bias;
	mf_kind kind;
	bool payload; /* XLA prints NaN payloads (e5m2 only) */
} minifloat;

static const minifloat minifloats[] = {
	{ SHS_F8E5M2, 5, 2, 15, MF_IEEE, true },
	{ SHS_F8E4M3FN, 4, 3, 7, MF_FN, false },
	{ SHS_F8E4M3B11FNUZ, 4, 3, 11, MF_FNUZ, false },
	{ SHS_F8E5M2FNUZ, 5, 2, 16, MF_FNUZ, false },
	{ SHS_F8E4M3FNUZ, 4, 3, 8, MF_FNUZ, false },
	{ SHS_F8E4M3, 4, 3, 7, MF_IEEE, false },
	{ SHS_F8E3M4, 3, 4, 3, MF_IEEE, false },
	{ SHS_F4E2M1FN, 2, 1, 1, MF_FINITE, false },
};

static const minifloat *find_minifloat(int type)
{
	for (size_t i = 0; i < sizeof(minifloats) / sizeof(minifloats[0]); i++)
		if (minifloats[i].type == type)
			return &minifloats[i];
	return NULL;
}

static bool minifloat_is_nan(const minifloat *f, uint32_t bits, uint32_t e, uint32_t m)
{
	uint32_t emax = (1u << f->ebits) - 1, mmax = (1u << f->mbits) - 1;

	switch (f->kind) {
	case MF_IEEE:
		return e == emax && m;
	case MF_FN:
		return e == emax && m == mmax;
	case MF_FNUZ:
		return bits == 1u << (f->ebits + f->mbits);
	default:
		return false;
	}
}

/* XLA prints these as the float's value with max_digits10 significant digits. */
static void put_minifloat(shs_buf *b, const minifloat *f, uint32_t bits)
{
	uint32_t width = (uint32_t)(f->ebits + f->mbits);
	bool neg = (bits >> width) & 1;
	uint32_t e = (bits >> f->mbits) & ((1u << f->ebits) - 1);
	uint32_t m = bits & ((1u << f->mbits) - 1);
	int digits = 2 + (f->mbits + 1) * LOG10_2_NUM / LOG10_2_DEN; /* max_digits10 */
	double v;

	if (minifloat_is_nan(f, bits, e, m)) {
		put_nan(b, neg, m, f->payload ? 1u << (f->mbits - 1) : m);
		return;
	}
	if (f->kind == MF_IEEE && e == (1u << f->ebits) - 1) {
		shs_buf_puts(b, neg ? "-inf" : "inf");
		return;
	}
	if (e)
		v = ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
	else
		v = ldexp((double)m, 1 - f->bias - f->mbits);
	put_g(b, neg ? -v : v, digits);
}

/* f8e8m0fnu: an unsigned power of two, 0xff is nan. */
static void put_e8m0(shs_buf *b, uint32_t bits)
{
	enum { E8M0_BIAS = 127, E8M0_NAN = 0xff, E8M0_DIGITS = 2 };

	if (bits == E8M0_NAN)
		shs_buf_puts(b, "nan");
	else
		put_g(b, ldexp(1.0, (int)bits - E8M0_BIAS), E8M0_DIGITS);
}

static void put_signed(shs_buf *b, uint64_t raw, int bits)
{
	int shift = 64 - bits;
	int64_t v = (int64_t)(raw << shift) >> shift; /* sign-extend from the type's width */

	shs_buf_put_i64(b, v);
}

static void put_float_elem(shs_buf *b, int type, const uint8_t *p)
{
	const minifloat *f;

	switch (type) {
	case SHS_F16:
	case SHS_BF16:
		put_half(b, type, (uint16_t)read_le(p, 2));
		return;
	case SHS_F32:
		put_f32(b, (uint32_t)read_le(p, 4));
		return;
	case SHS_F64:
		put_f64(b, read_le(p, 8));
		return;
	case SHS_F8E8M0FNU:
		put_e8m0(b, p[0]);
		return;
	default:
		f = find_minifloat(type);
		if (f)
			put_minifloat(b, f, p[0]);
		else
			shs_buf_putc(b, '?');
	}
}

/* One element at p, as XLA's Literal::GetAsString (pred as 0/1 inside arrays). */
static void put_elem(shs_buf *b, int type, const uint8_t *p, bool in_array)
{
	int bits = shs_elem_bits(type), bytes = shs_elem_bytes(type);

	if (type == SHS_PRED) {
		if (in_array)
			shs_buf_putc(b, p[0] ? '1' : '0');
		else
			shs_buf_puts(b, p[0] ? "true" : "false");
	} else if (shs_elem_is_signed_int(type)) {
		put_signed(b, read_le(p, bytes), bits);
	} else if (shs_elem_is_unsigned_int(type)) {
		shs_buf_printf(b, "%" PRIu64, read_le(p, bytes));
	} else if (type == SHS_C64 || type == SHS_C128) {
		int half = bytes / 2;

		shs_buf_putc(b, '(');
		put_float_elem(b, type == SHS_C64 ? SHS_F32 : SHS_F64, p);
		shs_buf_puts(b, ", ");
		put_float_elem(b, type == SHS_C64 ? SHS_F32 : SHS_F64, p + half);
		shs_buf_putc(b, ')');
	} else {
		put_float_elem(b, type, p);
	}
}

/* ---- literals -------------------------------------------------------------------------- */

typedef struct lit_walk {
	shs_buf *b;
	const shs_shape *s;
	const uint8_t *next; /* the next element to print */
	int elem_bytes;
	int64_t index[SHS_MAX_RANK];
} lit_walk;

/* XLA's one-line DenseArrayPrintHelper for dimension d of the array. */
static void put_array_dim(lit_walk *w, uint32_t d)
{
	const shs_shape *s = w->s;
	uint32_t left = s->rank - d;
	int64_t n = s->dims[d];

	if (s->rank == 1)
		shs_buf_putc(w->b, '{');
	else if (left == 1)
		shs_buf_puts(w->b, n <= 1 ? "{" : "{ ");
	else if (s->rank > 3 && d > 0)
		shs_buf_printf(w->b, "{ /*i%u=%" PRId64 "*/%s", d - 1, w->index[d - 1],
			       n > 0 ? " " : "");
	else
		shs_buf_puts(w->b, "{ ");
	for (int64_t i = 0; i < n; i++) {
		w->index[d] = i;
		if (left == 1) {
			put_elem(w->b, s->type, w->next, true);
			w->next += w->elem_bytes;
		} else {
			put_array_dim(w, d + 1);
		}
		if (i < n - 1)
			shs_buf_puts(w->b, ", ");
	}
	if (s->rank == 1)
		shs_buf_putc(w->b, '}');
	else if (left == 1)
		shs_buf_puts(w->b, n <= 1 ? "}" : " }");
	else
		shs_buf_puts(w->b, " }");
}

/* The data holds every element, and the braces of an empty array are not absurdly many (a
 * zero dimension after huge ones would otherwise print billions of `{}`). */
static bool literal_fits(const shs_literal *l, const shs_shape *s)
{
	int64_t n = shs_shape_elements(s), braces = 1;
	int bytes = shs_elem_bytes(s->type);

	if (n < 0 || !bytes || s->rank > SHS_MAX_RANK || (uint64_t)n > SIZE_MAX / (size_t)bytes)
		return false;
	for (uint32_t d = 0; d < s->rank && s->dims[d]; d++) {
		if (braces > MAX_EMPTY_BRACES / s->dims[d])
			return n > 0 && l->data && l->size >= (size_t)n * (size_t)bytes;
		braces *= s->dims[d];
	}
	return l->data && l->size >= (size_t)n * (size_t)bytes;
}

static void put_literal(shs_buf *b, const shs_literal *l, const shs_shape *s, int depth)
{
	lit_walk w = { .b = b, .s = s };

	if (l->elided || depth > SHS_MAX_NESTING) {
		shs_buf_puts(b, "{...}");
		return;
	}
	if (s->type == SHS_TUPLE) {
		shs_buf_puts(b, "( ");
		for (uint32_t i = 0; i < l->n_tuple && i < s->n_tuple; i++) {
			shs__put_list_sep(b, i, false);
			put_literal(b, &l->tuple[i], &s->tuple[i], depth + 1);
		}
		shs_buf_puts(b, " )");
		return;
	}
	if (s->type == SHS_TOKEN) {
		shs_buf_puts(b, "token");
		return;
	}
	if (!literal_fits(l, s)) {
		shs_buf_puts(b, "{...}");
		return;
	}
	if (!s->rank) {
		put_elem(b, s->type, l->data, false);
		return;
	}
	w.next = l->data;
	w.elem_bytes = shs_elem_bytes(s->type);
	put_array_dim(&w, 0);
}

void shs__put_literal(shs_buf *b, const shs_literal *l, const shs_shape *s)
{
	put_literal(b, l, s, 0);
}
