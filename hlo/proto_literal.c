/* LiteralProto <-> IR: values reordered between the layout's order and row-major, tuple elements
 * kept as nested bytes. */
#include <string.h>

#include "proto_internal.h"

/* ---- Layout order ---------------------------------------------------------------------------- */

bool shs__layout_iter_init(shs__layout_iter *it, const shs_shape *s)
{
	const shs_layout *l = s->layout;
	bool use_layout = l && l->minor_to_major.n;
	bool seen[SHS_MAX_RANK] = { false };

	if (s->rank > SHS_MAX_RANK || (use_layout && l->minor_to_major.n != s->rank))
		return false;
	it->rank = s->rank;
	it->dims = s->dims;
	it->row_major = 0;
	for (uint32_t k = 0; k < s->rank; k++) {
		int64_t d = use_layout ? l->minor_to_major.v[k] : (int64_t)(s->rank - 1 - k);

		if (d < 0 || d >= (int64_t)s->rank || seen[d])
			return false;
		seen[d] = true;
		it->order[k] = d;
		it->idx[k] = 0;
	}
	for (uint32_t d = s->rank; d-- > 0;) {
		bool last = d + 1 == s->rank;
		int64_t next = last ? 0 : s->dims[d + 1];

		/* strides only matter when no dim is 0, and then they fit (the caller checked the
		 * element count); keep them defined otherwise */
		if (last)
			it->stride[d] = 1;
		else if (next > 0 && it->stride[d + 1] <= INT64_MAX / next)
			it->stride[d] = it->stride[d + 1] * next;
		else
			it->stride[d] = 0;
	}
	return true;
}

void shs__layout_iter_next(shs__layout_iter *it)
{
	for (uint32_t k = 0; k < it->rank; k++) {
		int64_t d = it->order[k];

		if (++it->idx[d] < it->dims[d]) {
			it->row_major += it->stride[d];
			return;
		}
		it->row_major -= it->stride[d] * (it->dims[d] - 1);
		it->idx[d] = 0;
	}
}

/* ---- Proto -> IR ----------------------------------------------------------------------------- */

bool shs__literal_type_supported(int type)
{
	switch (type) {
	case SHS_PRED: case SHS_S8: case SHS_U8: case SHS_S16: case SHS_U16: case SHS_F16:
	case SHS_BF16: case SHS_S32: case SHS_U32: case SHS_S64: case SHS_U64: case SHS_F32:
	case SHS_F64: case SHS_C64: case SHS_C128:
		return true;
	default:
		return false;
	}
}

/* Values of a supported type the proto holds (complex: components), and how many one element
 * takes. */
static size_t literal_values(const Xla__LiteralProto *p, int type, size_t *per_elem)
{
	*per_elem = 1;
	switch (type) {
	case SHS_PRED: return p->n_preds;
	case SHS_S8: return p->s8s.len;
	case SHS_U8: return p->u8s.len;
	case SHS_S16: *per_elem = 2; return p->s16s.len;
	case SHS_U16: *per_elem = 2; return p->u16s.len;
	case SHS_F16: *per_elem = 2; return p->f16s.len;
	case SHS_BF16: *per_elem = 2; return p->bf16s.len;
	case SHS_S32: return p->n_s32s;
	case SHS_U32: return p->n_u32s;
	case SHS_S64: return p->n_s64s;
	case SHS_U64: return p->n_u64s;
	case SHS_F32: return p->n_f32s;
	case SHS_F64: return p->n_f64s;
	case SHS_C64: *per_elem = 2; return p->n_c64s;
	case SHS_C128: *per_elem = 2; return p->n_c128s;
	default: return 0;
	}
}

/* True when the proto carries no values at all (then the literal is elided). */
static bool literal_has_no_data(const Xla__LiteralProto *p)
{
	return !p->n_preds && !p->u8s.len && !p->n_s32s && !p->n_s64s && !p->n_u32s &&
	       !p->n_u64s && !p->n_f32s && !p->n_f64s && !p->n_tuple_literals && !p->f16s.len &&
	       !p->n_c64s && !p->bf16s.len && !p->s8s.len && !p->u16s.len && !p->s16s.len &&
	       !p->n_c128s && !p->base.n_unknown_fields;
}

static void put_f32(uint8_t *dst, float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	shs__put_le(dst, u, SHS__BYTES32);
}

static void put_f64(uint8_t *dst, double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	shs__put_le(dst, u, SHS__BYTES64);
}

/* Element k of the proto's values (in layout order) into dst, little-endian. */
static void elem_from_proto(const Xla__LiteralProto *p, int type, size_t k, uint8_t *dst)
{
	const size_t re = SHS__COMPLEX_PARTS * k, half = SHS__BYTES16 * k;

	switch (type) {
	case SHS_PRED: dst[0] = p->preds[k] ? 1 : 0; break;
	case SHS_S8: dst[0] = p->s8s.data[k]; break;
	case SHS_U8: dst[0] = p->u8s.data[k]; break;
	case SHS_S16: memcpy(dst, p->s16s.data + half, SHS__BYTES16); break;
	case SHS_U16: memcpy(dst, p->u16s.data + half, SHS__BYTES16); break;
	case SHS_F16: memcpy(dst, p->f16s.data + half, SHS__BYTES16); break;
	case SHS_BF16: memcpy(dst, p->bf16s.data + half, SHS__BYTES16); break;
	case SHS_S32: shs__put_le(dst, (uint32_t)p->s32s[k], SHS__BYTES32); break;
	case SHS_U32: shs__put_le(dst, p->u32s[k], SHS__BYTES32); break;
	case SHS_S64: shs__put_le(dst, (uint64_t)p->s64s[k], SHS__BYTES64); break;
	case SHS_U64: shs__put_le(dst, p->u64s[k], SHS__BYTES64); break;
	case SHS_F32: put_f32(dst, p->f32s[k]); break;
	case SHS_F64: put_f64(dst, p->f64s[k]); break;
	case SHS_C64:
		put_f32(dst, p->c64s[re]);
		put_f32(dst + SHS__BYTES32, p->c64s[re + 1]);
		break;
	case SHS_C128:
		put_f64(dst, p->c128s[re]);
		put_f64(dst + SHS__BYTES64, p->c128s[re + 1]);
		break;
	default:
		break;
	}
}

static int array_literal_from(const shs__pl *c, const Xla__LiteralProto *p,
			      const shs_shape *s, shs_literal *out)
{
	int64_t n = shs_shape_elements(s);
	size_t bytes = (size_t)shs_elem_bytes(s->type), per, have;
	shs__layout_iter it;
	uint8_t *data;

	if (n < 0)
		return shs__pl_fail(c, SHS_EPARSE, "literal shape has an invalid element count");
	/* an array without values is elided, as text prints {...}; a scalar's value is always
	 * there (its elided form printed {...}, which no text parser reads) */
	if (n > 0 && s->rank > 0 && literal_has_no_data(p)) {
		out->elided = true;
		return SHS_OK;
	}
	if (!shs__literal_type_supported(s->type))
		return shs__pl_fail(c, SHS_EUNSUPPORTED,
				    "literals of element type %s are not supported",
				    shs_elem_name(s->type));
	have = literal_values(p, s->type, &per);
	if ((uint64_t)n > SIZE_MAX / bytes || have / per != (size_t)n || have % per)
		return shs__pl_fail(c, SHS_EPARSE, "literal of %lld %s elements has %zu values",
				    (long long)n, shs_elem_name(s->type), have);
	if (!shs__layout_iter_init(&it, s))
		return shs__pl_fail(c, SHS_EPARSE,
				    "literal layout is not a permutation of its %u dims", s->rank);
	data = shs_arena_alloc(c->a, (size_t)n * bytes);
	if (!data)
		return shs__pl_nomem(c);
	for (size_t k = 0; k < (size_t)n; k++, shs__layout_iter_next(&it))
		elem_from_proto(p, s->type, k, data + (size_t)it.row_major * bytes);
	out->size = (size_t)n * bytes;
	out->data = data;
	return SHS_OK;
}

static int tuple_literal_from(const shs__pl *c, const Xla__LiteralProto *p, const shs_shape *s,
			      shs_literal *out, unsigned depth)
{
	if (p->n_tuple_literals != s->n_tuple)
		return shs__pl_fail(c, SHS_EPARSE, "tuple literal has %zu elements, its shape %u",
				    p->n_tuple_literals, s->n_tuple);
	if (!s->n_tuple)
		return SHS_OK;
	if (depth >= SHS_MAX_NESTING)
		return shs__pl_too_deep(c, "tuple literal");
	out->tuple = shs_arena_calloc(c->a, s->n_tuple, sizeof(*out->tuple));
	if (!out->tuple)
		return shs__pl_nomem(c);
	out->n_tuple = s->n_tuple;
	for (uint32_t i = 0; i < s->n_tuple; i++) {
		int rc;
		const Xla__LiteralProto *el = shs__pl_nested(c, &xla__literal_proto__descriptor,
							     &p->tuple_literals[i],
							     "tuple_literals", i, &rc);

		if (!el)
			return rc;
		rc = shs__literal_from(c, el, &s->tuple[i], &out->tuple[i], depth + 1);
		if (rc != SHS_OK)
			return rc;
	}
	return SHS_OK;
}

static int shape_mismatch(const shs__pl *c, const shs_shape *own, const shs_shape *want)
{
	shs_buf x = { 0 }, y = { 0 };
	int rc;

	shs_shape_print(&x, own, false);
	shs_shape_print(&y, want, false);
	rc = x.oom || y.oom ? shs__pl_nomem(c)
			    : shs__pl_fail(c, SHS_EPARSE,
					   "literal shape %s does not match the shape %s", x.data,
					   y.data);
	shs_buf_free(&x);
	shs_buf_free(&y);
	return rc;
}

/* The literal's own shape orders the values (its layout); it must agree with fallback, the
 * instruction's shape or the enclosing tuple's element. */
int shs__literal_from(const shs__pl *c, const Xla__LiteralProto *p, const shs_shape *fallback,
		      shs_literal *out, unsigned depth)
{
	shs_shape own;
	const shs_shape *s = fallback;

	memset(out, 0, sizeof(*out));
	if (depth > SHS_MAX_NESTING)
		return shs__pl_too_deep(c, "tuple literal");
	if (p->shape) {
		int rc = shs__shape_from(c, p->shape, &own, depth);

		if (rc != SHS_OK)
			return rc;
		if (!shs_shape_compatible(&own, fallback))
			return shape_mismatch(c, &own, fallback);
		s = &own;
	}
	if (s->type == SHS_TUPLE)
		return tuple_literal_from(c, p, s, out, depth);
	return array_literal_from(c, p, s, out);
}

/* ---- IR -> proto ----------------------------------------------------------------------------- */

static float get_f32(const uint8_t *src)
{
	uint32_t u = (uint32_t)shs__get_le(src, SHS__BYTES32);
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static double get_f64(const uint8_t *src)
{
	uint64_t u = shs__get_le(src, SHS__BYTES64);
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* Room for n elements of type in the field that holds them (the caller checked that n
 * elements' bytes fit in a size_t). */
static bool literal_alloc(const shs__ps *c, Xla__LiteralProto *p, int type, size_t n)
{
#define REPEATED(field, count)                                                           \
	(p->n_##field = (count),                                                         \
	 (p->field = shs_arena_calloc(c->a, (count), sizeof(*p->field))) != NULL)
#define BYTES(field, width)                                                              \
	(p->field.len = n * (width), (p->field.data = shs_arena_alloc(c->a, n * (width))) != NULL)

	switch (type) {
	case SHS_PRED: return REPEATED(preds, n);
	case SHS_S8: return BYTES(s8s, 1);
	case SHS_U8: return BYTES(u8s, 1);
	case SHS_S16: return BYTES(s16s, SHS__BYTES16);
	case SHS_U16: return BYTES(u16s, SHS__BYTES16);
	case SHS_F16: return BYTES(f16s, SHS__BYTES16);
	case SHS_BF16: return BYTES(bf16s, SHS__BYTES16);
	case SHS_S32: return REPEATED(s32s, n);
	case SHS_U32: return REPEATED(u32s, n);
	case SHS_S64: return REPEATED(s64s, n);
	case SHS_U64: return REPEATED(u64s, n);
	case SHS_F32: return REPEATED(f32s, n);
	case SHS_F64: return REPEATED(f64s, n);
	case SHS_C64: return REPEATED(c64s, SHS__COMPLEX_PARTS * n);
	case SHS_C128: return REPEATED(c128s, SHS__COMPLEX_PARTS * n);
	default: return false;
	}
#undef REPEATED
#undef BYTES
}

/* Element k (in layout order) of the proto from src, little-endian. */
static void elem_to_proto(Xla__LiteralProto *p, int type, size_t k, const uint8_t *src)
{
	const size_t re = SHS__COMPLEX_PARTS * k, half = SHS__BYTES16 * k;

	switch (type) {
	case SHS_PRED: p->preds[k] = src[0] != 0; break;
	case SHS_S8: p->s8s.data[k] = src[0]; break;
	case SHS_U8: p->u8s.data[k] = src[0]; break;
	case SHS_S16: memcpy(p->s16s.data + half, src, SHS__BYTES16); break;
	case SHS_U16: memcpy(p->u16s.data + half, src, SHS__BYTES16); break;
	case SHS_F16: memcpy(p->f16s.data + half, src, SHS__BYTES16); break;
	case SHS_BF16: memcpy(p->bf16s.data + half, src, SHS__BYTES16); break;
	case SHS_S32: p->s32s[k] = (int32_t)(uint32_t)shs__get_le(src, SHS__BYTES32); break;
	case SHS_U32: p->u32s[k] = (uint32_t)shs__get_le(src, SHS__BYTES32); break;
	case SHS_S64: p->s64s[k] = (int64_t)shs__get_le(src, SHS__BYTES64); break;
	case SHS_U64: p->u64s[k] = shs__get_le(src, SHS__BYTES64); break;
	case SHS_F32: p->f32s[k] = get_f32(src); break;
	case SHS_F64: p->f64s[k] = get_f64(src); break;
	case SHS_C64:
		p->c64s[re] = get_f32(src);
		p->c64s[re + 1] = get_f32(src + SHS__BYTES32);
		break;
	case SHS_C128:
		p->c128s[re] = get_f64(src);
		p->c128s[re + 1] = get_f64(src + SHS__BYTES64);
		break;
	default:
		break;
	}
}

static int array_literal_to(const shs__ps *c, const shs_literal *lit, const shs_shape *s,
			    Xla__LiteralProto *p)
{
	int64_t n = shs_shape_elements(s);
	size_t bytes = (size_t)shs_elem_bytes(s->type);
	shs__layout_iter it;

	if (!shs__literal_type_supported(s->type))
		return shs__ps_fail(c, SHS_EUNSUPPORTED,
				    "literals of element type %s cannot be written",
				    shs_elem_name(s->type) ? shs_elem_name(s->type) : "invalid");
	if (n < 0 || (uint64_t)n > SIZE_MAX / bytes || lit->size != (size_t)n * bytes)
		return shs__ps_fail(c, SHS_EINVAL, "literal holds %zu bytes for %lld %s elements",
				    lit->size, (long long)n, shs_elem_name(s->type));
	if (!shs__layout_iter_init(&it, s))
		return shs__ps_fail(c, SHS_EINVAL, "layout is not a permutation of the %u dims",
				    s->rank);
	if (!n)
		return SHS_OK;
	if (!literal_alloc(c, p, s->type, (size_t)n))
		return shs__ps_nomem(c);
	for (size_t k = 0; k < (size_t)n; k++, shs__layout_iter_next(&it))
		elem_to_proto(p, s->type, k, lit->data + (size_t)it.row_major * bytes);
	return SHS_OK;
}

/* Each element packed to the bytes of its LiteralProto. */
static int tuple_literal_to(const shs__ps *c, const shs_literal *lit, const shs_shape *s,
			    Xla__LiteralProto *p, unsigned depth)
{
	if (lit->n_tuple != s->n_tuple)
		return shs__ps_fail(c, SHS_EINVAL, "tuple literal has %u elements, its shape %u",
				    lit->n_tuple, s->n_tuple);
	if (!s->n_tuple)
		return SHS_OK;
	p->tuple_literals = shs_arena_calloc(c->a, s->n_tuple, sizeof(*p->tuple_literals));
	if (!p->tuple_literals)
		return shs__ps_nomem(c);
	p->n_tuple_literals = s->n_tuple;
	for (uint32_t i = 0; i < s->n_tuple; i++) {
		Xla__LiteralProto *el = NULL;
		int rc = shs__literal_to(c, &lit->tuple[i], &s->tuple[i], &el, depth + 1);

		if (rc != SHS_OK)
			return rc;
		if (!shs__pb_pack_nested(c->a, &el->base, &p->tuple_literals[i]))
			return shs__ps_nomem(c);
	}
	return SHS_OK;
}

int shs__literal_to(const shs__ps *c, const shs_literal *lit, const shs_shape *s,
		    Xla__LiteralProto **out, unsigned depth)
{
	Xla__LiteralProto *p;
	int rc;

	if (depth > SHS_MAX_NESTING)
		return shs__ps_fail(c, SHS_EINVAL, "tuple literal nested deeper than %d levels",
				    SHS_MAX_NESTING);
	p = shs__ps_new_msg(c, &xla__literal_proto__descriptor);
	if (!p)
		return shs__ps_nomem(c);
	*out = p;
	rc = shs__shape_to(c, s, &p->shape, depth);
	if (rc != SHS_OK || lit->elided)
		return rc;
	if (s->type == SHS_TUPLE)
		return tuple_literal_to(c, lit, s, p, depth);
	return array_literal_to(c, lit, s, p);
}
