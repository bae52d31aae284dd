/* HLO text printer: modules, computations, instructions, shapes and literals as XLA prints them. */
#include "io.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	INDEX_COMMENT_EVERY = 5, /* an index comment before every fifth tuple element / operand */
	NUM_BUF = 64,            /* room for one formatted number */
	DIM_LABEL_SLOT = 12,     /* one dim_labels position: a letter or a spatial number */
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

enum { ALIAS_MUST = 2 }; /* shs_alias.kind of must-alias */

/* What one printing pass needs: the output, the module, the computation being printed and the
 * style. */
typedef struct pctx {
	shs_buf *b;
	const shs_module *m;
	const shs_computation *c;
	shs_text_style st;
} pctx;

/* ---- small pieces ---------------------------------------------------------------------- */

static void put_i64_list(shs_buf *b, const int64_t *v, uint32_t n)
{
	shs_buf_putc(b, '{');
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			shs_buf_putc(b, ',');
		shs_buf_put_i64(b, v[i]);
	}
	shs_buf_putc(b, '}');
}

static void put_i64s(shs_buf *b, const shs_i64s *l)
{
	put_i64_list(b, l->v, l->n);
}

/* ", name=" before every attribute. */
static void attr(pctx *p, const char *name)
{
	shs_buf_puts(p->b, ", ");
	shs_buf_puts(p->b, name);
	shs_buf_putc(p->b, '=');
}

static void attr_list(pctx *p, const char *name, const shs_i64s *l)
{
	attr(p, name);
	put_i64s(p->b, l);
}

static void attr_i64(pctx *p, const char *name, int64_t v)
{
	attr(p, name);
	shs_buf_put_i64(p->b, v);
}

static void attr_true(pctx *p, const char *name)
{
	attr(p, name);
	shs_buf_puts(p->b, "true");
}

static void put_name(pctx *p, const char *name)
{
	if (p->st.percent)
		shs_buf_putc(p->b, '%');
	shs_buf_puts(p->b, name ? name : "");
}

static const char *comp_name(const pctx *p, uint32_t idx)
{
	return idx < p->m->n_comps && p->m->comps[idx]->name ? p->m->comps[idx]->name : "?";
}

static const shs_instr *instr_at(const pctx *p, uint32_t idx)
{
	return idx < p->c->n_instrs ? p->c->instrs[idx] : NULL;
}

static bool str_set(const char *s)
{
	return s && *s;
}

/* ---- shapes ---------------------------------------------------------------------------- */

static void put_tile(shs_buf *b, const shs_i64s *t)
{
	shs_buf_putc(b, '(');
	for (uint32_t i = 0; i < t->n; i++) {
		if (i)
			shs_buf_putc(b, ',');
		if (t->v[i] == INT64_MIN) /* Tile::kCombineDimension */
			shs_buf_putc(b, '*');
		else
			shs_buf_put_i64(b, t->v[i]);
	}
	shs_buf_putc(b, ')');
}

static bool layout_has_extras(const shs_layout *l)
{
	return l->n_tiles || l->element_size_in_bits || l->memory_space;
}

/* `{1,0}`, `{1,0:T(8,128)E(4)S(1)}`; scalars print only a layout with extras. */
static void put_layout(shs_buf *b, const shs_layout *l, uint32_t rank)
{
	if (!rank && !l->minor_to_major.n && !layout_has_extras(l))
		return;
	shs_buf_putc(b, '{');
	for (uint32_t i = 0; i < l->minor_to_major.n; i++) {
		if (i)
			shs_buf_putc(b, ',');
		shs_buf_put_i64(b, l->minor_to_major.v[i]);
	}
	if (layout_has_extras(l))
		shs_buf_putc(b, ':');
	if (l->n_tiles) {
		shs_buf_putc(b, 'T');
		for (uint32_t t = 0; t < l->n_tiles; t++)
			put_tile(b, &l->tiles[t]);
	}
	if (l->element_size_in_bits)
		shs_buf_printf(b, "E(%" PRId64 ")", l->element_size_in_bits);
	if (l->memory_space)
		shs_buf_printf(b, "S(%" PRId64 ")", l->memory_space);
	shs_buf_putc(b, '}');
}

static void put_dims(shs_buf *b, const shs_shape *s)
{
	shs_buf_putc(b, '[');
	for (uint32_t d = 0; d < s->rank; d++) {
		if (d)
			shs_buf_putc(b, ',');
		if (s->dims[d] == INT64_MIN) { /* Shape::kUnboundedSize */
			shs_buf_putc(b, '?');
			continue;
		}
		if (s->dynamic && s->dynamic[d])
			shs_buf_puts(b, "<=");
		shs_buf_put_i64(b, s->dims[d]);
	}
	shs_buf_putc(b, ']');
}

static void put_shape(shs_buf *b, const shs_shape *s, bool with_layout, int depth)
{
	const char *name;

	if (s->type == SHS_TUPLE) {
		if (depth > SHS_MAX_NESTING) {
			shs_buf_puts(b, "(...)");
			return;
		}
		shs_buf_putc(b, '(');
		for (uint32_t i = 0; i < s->n_tuple; i++) {
			if (i)
				shs_buf_puts(b, ", ");
			if (i && i % INDEX_COMMENT_EVERY == 0)
				shs_buf_printf(b, "/*index=%u*/", i);
			put_shape(b, &s->tuple[i], with_layout, depth + 1);
		}
		shs_buf_putc(b, ')');
		return;
	}
	name = shs_elem_name(s->type);
	shs_buf_puts(b, name ? name : "invalid");
	put_dims(b, s);
	if (with_layout && s->layout && shs_elem_is_array(s->type))
		put_layout(b, s->layout, s->rank);
}

void shs_shape_print(shs_buf *b, const shs_shape *s, bool with_layout)
{
	put_shape(b, s, with_layout, 0);
}

/* ---- literal elements ------------------------------------------------------------------ */

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

static void put_f32(shs_buf *b, uint32_t bits)
{
	char tmp[NUM_BUF];
	float f;

	memcpy(&f, &bits, sizeof(f));
	if (isnan(f)) {
		put_ieee_nan(b, bits, F32_MANT, shs_elem_bits(SHS_F32));
		return;
	}
	snprintf(tmp, sizeof(tmp), "%.*g", F32_SHORT_DIGITS, (double)f);
	if (strtof(tmp, NULL) != f)
		snprintf(tmp, sizeof(tmp), "%.*g", F32_ROUND_DIGITS, (double)f);
	shs_buf_puts(b, tmp);
}

static void put_f64(shs_buf *b, uint64_t bits)
{
	char tmp[NUM_BUF];
	double d;

	memcpy(&d, &bits, sizeof(d));
	if (isnan(d)) {
		put_ieee_nan(b, bits, F64_MANT, shs_elem_bits(SHS_F64));
		return;
	}
	snprintf(tmp, sizeof(tmp), "%.*g", F64_SHORT_DIGITS, d);
	if (strtod(tmp, NULL) != d)
		snprintf(tmp, sizeof(tmp), "%.*g", F64_ROUND_DIGITS, d);
	shs_buf_puts(b, tmp);
}

static void put_f16(shs_buf *b, uint16_t h)
{
	double v = shs_f16_to_f64(h);

	if (isnan(v))
		put_ieee_nan(b, h, F16_MANT, shs_elem_bits(SHS_F16));
	else
		put_g(b, v, F16_DIGITS);
}

static void put_bf16(shs_buf *b, uint16_t h)
{
	float f = shs_bf16_to_f32(h);

	if (isnan(f))
		put_ieee_nan(b, h, BF16_MANT, shs_elem_bits(SHS_BF16));
	else
		put_g(b, (double)f, BF16_DIGITS);
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
		put_f16(b, (uint16_t)read_le(p, 2));
		return;
	case SHS_BF16:
		put_bf16(b, (uint16_t)read_le(p, 2));
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
			if (i)
				shs_buf_puts(b, ", ");
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

/* ---- operands -------------------------------------------------------------------------- */

static void put_operand(pctx *p, uint32_t idx)
{
	const shs_instr *op = instr_at(p, idx);

	if (!op) {
		shs_buf_puts(p->b, "null");
		return;
	}
	if (p->st.operand_shapes) {
		put_shape(p->b, &op->shape, true, 0);
		shs_buf_putc(p->b, ' ');
	}
	put_name(p, op->name);
}

/* The text between the opcode's parentheses. */
static void put_operands(pctx *p, const shs_instr *in)
{
	if (in->op == SHS_OP_CONSTANT) {
		if (in->literal)
			put_literal(p->b, in->literal, &in->shape, 0);
		else
			shs_buf_puts(p->b, "{...}");
		return;
	}
	if (in->op == SHS_OP_PARAMETER) {
		shs_buf_put_i64(p->b, in->parameter_number);
		return;
	}
	for (uint32_t i = 0; i < in->n_operands; i++) {
		if (i)
			shs_buf_puts(p->b, ", ");
		/* the long form annotates every fifth operand, the short form does not */
		if (i && i % INDEX_COMMENT_EVERY == 0 && p->st.operand_shapes)
			shs_buf_printf(p->b, "/*index=%u*/", i);
		put_operand(p, in->operands[i]);
	}
}

/* ---- per-opcode attributes ------------------------------------------------------------- */

static void put_raw_attrs(shs_buf *b, const shs_raw_attr *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		shs_buf_puts(b, ", ");
		shs_buf_puts(b, r[i].name ? r[i].name : "");
		shs_buf_putc(b, '=');
		shs_buf_puts(b, r[i].value ? r[i].value : "");
	}
}

/* Where XLA prints an attribute the IR keeps verbatim. Most are opcode-specific and follow the
 * modeled ones of the opcode; a few have their own place. */
typedef enum raw_slot {
	RAW_BEFORE_DIMENSIONS, /* collectives: replica_groups, constrain_layout */
	RAW_OPCODE,            /* everything else: after the opcode's modeled attributes */
	RAW_AFTER_CALLED,      /* is_composite, after to_apply */
	RAW_AFTER_CONTROL      /* statistics, after control-predecessors */
} raw_slot;

static raw_slot raw_slot_of(const char *name)
{
	static const struct { const char *name; raw_slot slot; } known[] = {
		{ "replica_groups", RAW_BEFORE_DIMENSIONS },
		{ "constrain_layout", RAW_BEFORE_DIMENSIONS },
		{ "is_composite", RAW_AFTER_CALLED },
		{ "statistics", RAW_AFTER_CONTROL },
	};

	for (size_t k = 0; name && k < sizeof(known) / sizeof(known[0]); k++)
		if (!strcmp(name, known[k].name))
			return known[k].slot;
	return RAW_OPCODE;
}

static void put_raw_slot(pctx *p, const shs_instr *in, raw_slot slot)
{
	for (uint32_t i = 0; i < in->n_raw_attrs; i++)
		if (raw_slot_of(in->raw_attrs[i].name) == slot)
			put_raw_attrs(p->b, &in->raw_attrs[i], 1);
}

/* Opcodes that print `dimensions={...}` even when the list is empty. */
static bool always_dimensions(shs_opcode op)
{
	switch (op) {
	case SHS_OP_BROADCAST: case SHS_OP_TRANSPOSE: case SHS_OP_REDUCE: case SHS_OP_REVERSE:
	case SHS_OP_CONCATENATE: case SHS_OP_MAP: case SHS_OP_SORT:
		return true;
	default:
		return false;
	}
}

static void put_dimensions(pctx *p, const shs_instr *in)
{
	if (in->op == SHS_OP_IOTA) {
		if (in->dimensions.n)
			attr_i64(p, "iota_dimension", in->dimensions.v[0]);
		return;
	}
	if (in->dimensions.n || always_dimensions(in->op))
		attr_list(p, "dimensions", &in->dimensions);
}

static void put_slice(pctx *p, const shs_instr *in)
{
	bool strided = false;

	for (uint32_t i = 0; i < in->n_slice; i++)
		strided |= in->slice[i].stride != 1;
	attr(p, "slice");
	shs_buf_putc(p->b, '{');
	for (uint32_t i = 0; i < in->n_slice; i++) {
		const shs_slice_dim *d = &in->slice[i];

		if (i)
			shs_buf_puts(p->b, ", ");
		shs_buf_printf(p->b, "[%" PRId64 ":%" PRId64, d->start, d->limit);
		if (strided)
			shs_buf_printf(p->b, ":%" PRId64, d->stride);
		shs_buf_putc(p->b, ']');
	}
	shs_buf_putc(p->b, '}');
}

static void put_dot(pctx *p, const shs_dot_dims *d)
{
	if (d->lhs_batch.n)
		attr_list(p, "lhs_batch_dims", &d->lhs_batch);
	attr_list(p, "lhs_contracting_dims", &d->lhs_contracting);
	if (d->rhs_batch.n)
		attr_list(p, "rhs_batch_dims", &d->rhs_batch);
	attr_list(p, "rhs_contracting_dims", &d->rhs_contracting);
}

typedef enum win_field { W_SIZE, W_STRIDE, W_PAD, W_LHS, W_RHS, W_REV } win_field;

static bool window_has(const shs_window_dim *w, uint32_t n, win_field f)
{
	for (uint32_t i = 0; i < n; i++) {
		switch (f) {
		case W_SIZE:
			return true;
		case W_STRIDE:
			if (w[i].stride != 1)
				return true;
			break;
		case W_PAD:
			if (w[i].pad_low || w[i].pad_high)
				return true;
			break;
		case W_LHS:
			if (w[i].base_dilation != 1)
				return true;
			break;
		case W_RHS:
			if (w[i].window_dilation != 1)
				return true;
			break;
		case W_REV:
			if (w[i].reversal)
				return true;
			break;
		}
	}
	return false;
}

static void put_window_value(shs_buf *b, const shs_window_dim *w, win_field f)
{
	switch (f) {
	case W_SIZE:
		shs_buf_put_i64(b, w->size);
		break;
	case W_STRIDE:
		shs_buf_put_i64(b, w->stride);
		break;
	case W_PAD:
		shs_buf_printf(b, "%" PRId64 "_%" PRId64, w->pad_low, w->pad_high);
		break;
	case W_LHS:
		shs_buf_put_i64(b, w->base_dilation);
		break;
	case W_RHS:
		shs_buf_put_i64(b, w->window_dilation);
		break;
	case W_REV:
		shs_buf_putc(b, w->reversal ? '1' : '0');
		break;
	}
}

/* window_util::ToString: `size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=... rhs_dilate=...`. */
static void put_window(pctx *p, const shs_window_dim *w, uint32_t n)
{
	static const struct { win_field f; const char *name; } fields[] = {
		{ W_SIZE, "size" }, { W_STRIDE, " stride" }, { W_PAD, " pad" },
		{ W_LHS, " lhs_dilate" }, { W_RHS, " rhs_dilate" }, { W_REV, " rhs_reversal" },
	};

	attr(p, "window");
	shs_buf_putc(p->b, '{');
	for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
		if (!window_has(w, n, fields[k].f))
			continue;
		shs_buf_puts(p->b, fields[k].name);
		shs_buf_putc(p->b, '=');
		for (uint32_t i = 0; i < n; i++) {
			if (i)
				shs_buf_putc(p->b, 'x');
			put_window_value(p->b, &w[i], fields[k].f);
		}
	}
	shs_buf_putc(p->b, '}');
}

/* The highest dimension number of a dim_labels part, capped at SHS_MAX_RANK (and -1 when none
 * is valid) so hostile numbers cannot overflow or exhaust anything. */
static int64_t labels_top(int64_t x, int64_t y, const shs_i64s *sp)
{
	int64_t hi = x > y ? x : y;

	for (uint32_t i = 0; i < sp->n; i++)
		if (sp->v[i] > hi)
			hi = sp->v[i];
	return hi > SHS_MAX_RANK ? SHS_MAX_RANK : hi;
}

/* One part of dim_labels (`b01f`): '?' where no dimension is named. */
static void put_labels(shs_buf *b, int64_t x, char xc, int64_t y, char yc, const shs_i64s *sp)
{
	char slot[SHS_MAX_RANK + 1][DIM_LABEL_SLOT];
	int64_t len = labels_top(x, y, sp) + 1;

	for (int64_t i = 0; i < len; i++)
		strcpy(slot[i], "?");
	if (x >= 0 && x < len)
		snprintf(slot[x], DIM_LABEL_SLOT, "%c", xc);
	if (y >= 0 && y < len)
		snprintf(slot[y], DIM_LABEL_SLOT, "%c", yc);
	for (uint32_t i = 0; i < sp->n; i++)
		if (sp->v[i] >= 0 && sp->v[i] < len)
			snprintf(slot[sp->v[i]], DIM_LABEL_SLOT, "%u", i);
	for (int64_t i = 0; i < len; i++)
		shs_buf_puts(b, slot[i]);
}

static void put_dim_labels(pctx *p, const shs_conv_dims *c)
{
	attr(p, "dim_labels");
	put_labels(p->b, c->input_batch, 'b', c->input_feature, 'f', &c->input_spatial);
	shs_buf_putc(p->b, '_');
	put_labels(p->b, c->kernel_input_feature, 'i', c->kernel_output_feature, 'o',
		   &c->kernel_spatial);
	shs_buf_puts(p->b, "->");
	put_labels(p->b, c->output_batch, 'b', c->output_feature, 'f', &c->output_spatial);
}

static void put_precision(pctx *p, const shs_instr *in)
{
	static const char *const names[] = { "default", "high", "highest", "packed_nibble" };
	bool any = false;

	for (uint32_t i = 0; i < in->n_precision; i++)
		any |= in->precision[i] != SHS_PRECISION_DEFAULT;
	if (!any)
		return;
	attr(p, "operand_precision");
	shs_buf_putc(p->b, '{');
	for (uint32_t i = 0; i < in->n_precision; i++) {
		int32_t v = in->precision[i];

		if (i)
			shs_buf_putc(p->b, ',');
		if (v >= 0 && (size_t)v < sizeof(names) / sizeof(names[0]))
			shs_buf_puts(p->b, names[v]);
		else
			shs_buf_put_i64(p->b, v);
	}
	shs_buf_putc(p->b, '}');
}

static void put_gather(pctx *p, const shs_instr *in)
{
	const shs_gather_dims *g = in->gather;

	attr_list(p, "offset_dims", &g->offset_dims);
	attr_list(p, "collapsed_slice_dims", &g->collapsed_slice_dims);
	attr_list(p, "start_index_map", &g->start_index_map);
	if (g->operand_batching_dims.n) {
		attr_list(p, "operand_batching_dims", &g->operand_batching_dims);
		attr_list(p, "start_indices_batching_dims", &g->start_indices_batching_dims);
	}
	attr_i64(p, "index_vector_dim", g->index_vector_dim);
	attr_list(p, "slice_sizes", &in->gather_slice_sizes);
}

static void put_scatter(pctx *p, const shs_scatter_dims *s)
{
	attr_list(p, "update_window_dims", &s->update_window_dims);
	attr_list(p, "inserted_window_dims", &s->inserted_window_dims);
	attr_list(p, "scatter_dims_to_operand_dims", &s->scatter_dims_to_operand_dims);
	if (s->input_batching_dims.n) {
		attr_list(p, "input_batching_dims", &s->input_batching_dims);
		attr_list(p, "scatter_indices_batching_dims", &s->scatter_indices_batching_dims);
	}
	attr_i64(p, "index_vector_dim", s->index_vector_dim);
}

/* PaddingConfigToString: `0_0x1_2` or, with interior padding anywhere, `0_0_0x1_2_1`. */
static void put_padding(pctx *p, const shs_instr *in)
{
	bool interior = false;

	for (uint32_t i = 0; i < in->n_padding; i++)
		interior |= in->padding[i].interior != 0;
	attr(p, "padding");
	for (uint32_t i = 0; i < in->n_padding; i++) {
		const shs_pad_dim *d = &in->padding[i];

		if (i)
			shs_buf_putc(p->b, 'x');
		shs_buf_printf(p->b, "%" PRId64 "_%" PRId64, d->low, d->high);
		if (interior)
			shs_buf_printf(p->b, "_%" PRId64, d->interior);
	}
}

static void attr_string(pctx *p, const char *name, const char *value)
{
	attr(p, name);
	shs_text_put_quoted(p->b, value, strlen(value));
}

static void put_convolution_like(pctx *p, const shs_instr *in)
{
	if (in->window)
		put_window(p, in->window, in->n_window);
	if (in->conv)
		put_dim_labels(p, in->conv);
	if (in->feature_group_count != 0 && in->feature_group_count != 1)
		attr_i64(p, "feature_group_count", in->feature_group_count);
	if (in->batch_group_count != 0 && in->batch_group_count != 1)
		attr_i64(p, "batch_group_count", in->batch_group_count);
	put_precision(p, in);
}

/* The attributes XLA's per-opcode ExtraAttributesToString prints, in its order. */
static void put_opcode_attrs(pctx *p, const shs_instr *in)
{
	if (in->channel_id)
		attr_i64(p, "channel_id", in->channel_id);
	put_raw_slot(p, in, RAW_BEFORE_DIMENSIONS);
	put_dimensions(p, in);
	if (in->op == SHS_OP_GET_TUPLE_ELEMENT || in->tuple_index)
		attr_i64(p, "index", in->tuple_index);
	if (in->slice || in->op == SHS_OP_SLICE)
		put_slice(p, in);
	if (in->dynamic_slice_sizes.n || in->op == SHS_OP_DYNAMIC_SLICE)
		attr_list(p, "dynamic_slice_sizes", &in->dynamic_slice_sizes);
	if (str_set(in->comparison_direction)) {
		attr(p, "direction");
		shs_buf_puts(p->b, in->comparison_direction);
	}
	if (str_set(in->comparison_type)) {
		attr(p, "type");
		shs_buf_puts(p->b, in->comparison_type);
	}
	if (in->dot)
		put_dot(p, in->dot);
	put_convolution_like(p, in);
	if (in->gather)
		put_gather(p, in);
	if (in->scatter)
		put_scatter(p, in->scatter);
	if (in->indices_are_sorted)
		attr_true(p, "indices_are_sorted");
	if (in->unique_indices)
		attr_true(p, "unique_indices");
	if (in->exponent_bits || in->mantissa_bits || in->op == SHS_OP_REDUCE_PRECISION) {
		attr_i64(p, "exponent_bits", in->exponent_bits);
		attr_i64(p, "mantissa_bits", in->mantissa_bits);
	}
	if (in->padding)
		put_padding(p, in);
	if (str_set(in->fusion_kind)) {
		attr(p, "kind");
		shs_buf_puts(p->b, in->fusion_kind);
	}
	if (in->custom_call_target || in->op == SHS_OP_CUSTOM_CALL)
		attr_string(p, "custom_call_target",
			    in->custom_call_target ? in->custom_call_target : "");
	if (in->custom_call_has_side_effect)
		attr_true(p, "custom_call_has_side_effect");
	if (in->is_stable)
		attr_true(p, "is_stable");
	put_raw_slot(p, in, RAW_OPCODE); /* topk's k comes before largest */
	if (in->op == SHS_OP_TOPK) {
		attr(p, "largest");
		shs_buf_puts(p->b, in->largest ? "true" : "false");
	} else if (in->largest) {
		attr_true(p, "largest");
	}
}

/* ---- called computations --------------------------------------------------------------- */

static void attr_comp(pctx *p, const char *name, uint32_t idx)
{
	attr(p, name);
	put_name(p, comp_name(p, idx));
}

static void attr_comp_list(pctx *p, const char *name, const shs_instr *in, bool braces)
{
	attr(p, name);
	if (braces)
		shs_buf_putc(p->b, '{');
	for (uint32_t i = 0; i < in->n_called; i++) {
		if (i)
			shs_buf_puts(p->b, ", ");
		put_name(p, comp_name(p, in->called[i]));
	}
	if (braces)
		shs_buf_putc(p->b, '}');
}

static bool uses_to_apply(shs_opcode op)
{
	switch (op) {
	case SHS_OP_CALL: case SHS_OP_MAP: case SHS_OP_REDUCE_WINDOW: case SHS_OP_REDUCE:
	case SHS_OP_ALL_REDUCE: case SHS_OP_REDUCE_SCATTER: case SHS_OP_ALL_REDUCE_START:
	case SHS_OP_SCATTER: case SHS_OP_TOPK: case SHS_OP_SORT:
		return true;
	default:
		return false;
	}
}

static bool conditional_on_pred(const pctx *p, const shs_instr *in)
{
	const shs_instr *pred = in->n_operands ? instr_at(p, in->operands[0]) : NULL;

	return pred && pred->shape.type == SHS_PRED && in->n_called == 2;
}

static void put_called(pctx *p, const shs_instr *in)
{
	if (!in->n_called)
		return;
	if (in->op == SHS_OP_WHILE && in->n_called == 2) {
		attr_comp(p, "condition", in->called[1]);
		attr_comp(p, "body", in->called[0]);
	} else if (in->op == SHS_OP_SELECT_AND_SCATTER && in->n_called == 2) {
		attr_comp(p, "select", in->called[0]);
		attr_comp(p, "scatter", in->called[1]);
	} else if (in->op == SHS_OP_CONDITIONAL && conditional_on_pred(p, in)) {
		attr_comp(p, "true_computation", in->called[0]);
		attr_comp(p, "false_computation", in->called[1]);
	} else if (in->op == SHS_OP_CONDITIONAL) {
		attr_comp_list(p, "branch_computations", in, true);
	} else if (uses_to_apply(in->op) && in->n_called == 1) {
		attr_comp(p, "to_apply", in->called[0]);
	} else if (in->op == SHS_OP_CUSTOM_CALL) {
		attr_comp_list(p, "called_computations", in, true);
	} else {
		attr_comp_list(p, "calls", in, false);
	}
}

/* ---- frontend attributes, backend config ----------------------------------------------- */

/* XLA prints a backend config or frontend attribute value that lexes as a JSON dict as is,
 * anything else quoted. */
static bool looks_like_json_dict(const shs_bytes *s)
{
	int depth = 0;
	bool in_str = false;

	if (!s->len || s->data[0] != '{')
		return false;
	for (size_t i = 0; i < s->len; i++) {
		uint8_t c = s->data[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '{') {
			depth++;
		} else if (c == '}' && --depth == 0) {
			return i == s->len - 1;
		} else if (c == '\0') {
			return false;
		}
	}
	return false;
}

static int cmp_kv(const void *a, const void *b)
{
	const shs_attr_kv *x = *(const shs_attr_kv *const *)a, *y = *(const shs_attr_kv *const *)b;
	int c = strcmp(x->key ? x->key : "", y->key ? y->key : "");

	return c ? c : strcmp(x->value ? x->value : "", y->value ? y->value : "");
}

/* FrontendAttributesToString: `{key="value",key={json},...}` sorted by key. */
static void put_frontend_attrs(shs_buf *b, const shs_attr_kv *kv, uint32_t n)
{
	const shs_attr_kv **sorted = malloc((size_t)n * sizeof(*sorted));

	if (!sorted) {
		b->oom = true;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		sorted[i] = &kv[i];
	qsort(sorted, n, sizeof(*sorted), cmp_kv);
	shs_buf_putc(b, '{');
	for (uint32_t i = 0; i < n; i++) {
		const char *v = sorted[i]->value ? sorted[i]->value : "";

		if (i)
			shs_buf_putc(b, ',');
		shs_buf_puts(b, sorted[i]->key ? sorted[i]->key : "");
		shs_buf_putc(b, '=');
		if (looks_like_json_dict(&(shs_bytes){ strlen(v), (const uint8_t *)v }))
			shs_buf_puts(b, v);
		else
			shs_text_put_quoted(b, v, strlen(v));
	}
	shs_buf_putc(b, '}');
	free(sorted);
}

static void put_backend_config(pctx *p, const shs_bytes *cfg)
{
	attr(p, "backend_config");
	if (looks_like_json_dict(cfg))
		shs_buf_put(p->b, cfg->data, cfg->len);
	else
		shs_text_put_quoted(p->b, (const char *)cfg->data, cfg->len);
}

static void put_control(pctx *p, const shs_instr *in)
{
	attr(p, "control-predecessors");
	shs_buf_putc(p->b, '{');
	for (uint32_t i = 0; i < in->n_control; i++) {
		const shs_instr *pre = instr_at(p, in->control[i]);

		if (i)
			shs_buf_puts(p->b, ", ");
		put_name(p, pre ? pre->name : "?");
	}
	shs_buf_putc(p->b, '}');
}


/* ---- instructions and computations ----------------------------------------------------- */

static void put_instr(pctx *p, const shs_instr *in, bool root)
{
	shs_buf_puts(p->b, root ? "  ROOT " : "  ");
	put_name(p, in->name);
	shs_buf_puts(p->b, " = ");
	put_shape(p->b, &in->shape, true, 0);
	shs_buf_putc(p->b, ' ');
	shs_buf_puts(p->b, shs_opcode_name(in->op));
	shs_buf_putc(p->b, '(');
	put_operands(p, in);
	shs_buf_putc(p->b, ')');
	put_opcode_attrs(p, in);
	put_called(p, in);
	put_raw_slot(p, in, RAW_AFTER_CALLED);
	if (in->sharding) {
		attr(p, "sharding");
		shs_sharding_print(p->b, in->sharding);
	}
	if (in->n_frontend_attrs) {
		attr(p, "frontend_attributes");
		put_frontend_attrs(p->b, in->frontend_attrs, in->n_frontend_attrs);
	}
	if (in->n_control)
		put_control(p, in);
	put_raw_slot(p, in, RAW_AFTER_CONTROL);
	if (in->metadata && !shs_metadata_empty(in->metadata)) {
		attr(p, "metadata");
		shs_metadata_print(p->b, in->metadata);
	}
	if (in->backend_config.len)
		put_backend_config(p, &in->backend_config);
	shs_buf_putc(p->b, '\n');
}

static int cmp_param(const void *a, const void *b)
{
	const shs_instr *x = *(const shs_instr *const *)a, *y = *(const shs_instr *const *)b;

	return (x->parameter_number > y->parameter_number) -
	       (x->parameter_number < y->parameter_number);
}

/* `(a: f32[2], b: s32[]) -> f32[2] ` from the parameters (by number) and the root. */
static void put_signature(pctx *p)
{
	const shs_computation *c = p->c;
	const shs_instr **params = malloc(((size_t)c->n_instrs + 1) * sizeof(*params));
	uint32_t n = 0;

	if (!params) {
		p->b->oom = true;
		return;
	}
	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER)
			params[n++] = c->instrs[i];
	qsort(params, n, sizeof(*params), cmp_param);
	shs_buf_putc(p->b, '(');
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			shs_buf_puts(p->b, ", ");
		shs_buf_puts(p->b, params[i]->name ? params[i]->name : "");
		shs_buf_puts(p->b, ": ");
		put_shape(p->b, &params[i]->shape, false, 0);
	}
	shs_buf_puts(p->b, ") -> ");
	if (c->root < c->n_instrs)
		put_shape(p->b, &c->instrs[c->root]->shape, false, 0);
	shs_buf_putc(p->b, ' ');
	free(params);
}

static bool is_main_thread(const char *t)
{
	return !t || !*t || !strcmp(t, "main");
}

static void put_computation(pctx *p, const shs_computation *c, bool entry)
{
	p->c = c;
	if (entry)
		shs_buf_puts(p->b, "ENTRY ");
	put_name(p, c->name);
	shs_buf_putc(p->b, ' ');
	if (p->st.signatures)
		put_signature(p);
	shs_buf_puts(p->b, "{\n");
	for (uint32_t i = 0; i < c->n_instrs; i++)
		put_instr(p, c->instrs[i], i == c->root);
	shs_buf_putc(p->b, '}');
	if (!is_main_thread(c->execution_thread)) {
		shs_buf_puts(p->b, ", execution_thread=");
		shs_text_put_quoted(p->b, c->execution_thread, strlen(c->execution_thread));
	}
	shs_buf_puts(p->b, "\n\n");
}

/* ---- the module header ----------------------------------------------------------------- */

static void put_alias(shs_buf *b, const shs_alias *a)
{
	put_i64s(b, &a->output_index);
	shs_buf_printf(b, ": (%" PRId64 ", ", a->param_number);
	put_i64s(b, &a->param_index);
	shs_buf_puts(b, a->kind == ALIAS_MUST ? ", must-alias)" : ", may-alias)");
}

static void put_entry_layout(pctx *p, const shs_program_shape *ps)
{
	shs_buf_puts(p->b, ", entry_computation_layout={(");
	for (uint32_t i = 0; i < ps->n_params; i++) {
		if (i && p->st.compact_entry_layout)
			shs_buf_putc(p->b, ',');
		else if (i)
			shs_buf_puts(p->b, ", ");
		if (i && i % INDEX_COMMENT_EVERY == 0 && !p->st.compact_entry_layout)
			shs_buf_printf(p->b, "/*index=%u*/", i);
		put_shape(p->b, &ps->params[i], true, 0);
	}
	shs_buf_puts(p->b, ")->");
	put_shape(p->b, &ps->result, true, 0);
	shs_buf_putc(p->b, '}');
}

/* Header attributes the IR keeps verbatim that XLA prints before entry_computation_layout:
 * `is_scheduled` first (placement 0), `buffer_donor` / `alias_passthrough_params` after
 * input_output_alias (1); the rest after the layout (2). */
static int raw_header_place(const char *name)
{
	if (name && !strcmp(name, "is_scheduled"))
		return 0;
	if (name && (!strcmp(name, "buffer_donor") || !strcmp(name, "alias_passthrough_params")))
		return 1;
	return 2;
}

static void put_raw_header(shs_buf *b, const shs_module *m, int place)
{
	for (uint32_t i = 0; i < m->n_raw_attrs; i++)
		if (raw_header_place(m->raw_attrs[i].name) == place)
			put_raw_attrs(b, &m->raw_attrs[i], 1);
}

static void put_header(pctx *p)
{
	const shs_module *m = p->m;

	shs_buf_puts(p->b, "HloModule ");
	shs_buf_puts(p->b, m->name ? m->name : "");
	put_raw_header(p->b, m, 0);
	if (m->n_aliases) {
		shs_buf_puts(p->b, ", input_output_alias={ ");
		for (uint32_t i = 0; i < m->n_aliases; i++) {
			if (i)
				shs_buf_puts(p->b, ", ");
			put_alias(p->b, &m->aliases[i]);
		}
		shs_buf_puts(p->b, " }");
	}
	put_raw_header(p->b, m, 1);
	if (m->entry_layout)
		put_entry_layout(p, m->entry_layout);
	put_raw_header(p->b, m, 2);
	if (m->replica_count > 0)
		shs_buf_printf(p->b, ", replica_count=%" PRId64, m->replica_count);
	if (m->num_partitions > 0)
		shs_buf_printf(p->b, ", num_partitions=%" PRId64, m->num_partitions);
	if (m->n_frontend_attrs) {
		shs_buf_puts(p->b, ", frontend_attributes=");
		put_frontend_attrs(p->b, m->frontend_attrs, m->n_frontend_attrs);
	}
	shs_buf_puts(p->b, "\n\n");
}

void shs_text_print(shs_buf *b, const shs_module *m, const shs_text_style *style)
{
	pctx p = { .b = b, .m = m, .st = style ? *style : m->style };

	put_header(&p);
	for (uint32_t i = 0; i < m->n_comps; i++)
		put_computation(&p, m->comps[i], i == m->entry);
}
