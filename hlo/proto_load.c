/* HloProto / HloModuleProto -> IR. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "proto_internal.h"
#include "sharding_proto.h"

enum {
	MIB_SHIFT = 20,
	FIELD_HLO_MODULE = 1,   /* HloProto.hlo_module */
	FIELD_COMPUTATIONS = 3, /* HloModuleProto.computations */
	HLO_PROTO_MAX_FIELD = 3 /* HloProto has fields 1 to 3 only */
};

/* ---- A protobuf-c allocator that refuses to go over a budget ----------------------------- */

typedef struct budget {
	size_t total, left;
	bool refused;
} budget;

/* Each block starts with its size so that frees give the budget back. */
typedef union block_head {
	size_t size;
	max_align_t align;
} block_head;

static void *budget_alloc(void *data, size_t size)
{
	budget *b = data;
	block_head *h;

	if (size > b->left || b->left - size < sizeof(*h)) {
		b->refused = true;
		return NULL;
	}
	h = malloc(sizeof(*h) + size);
	if (!h) {
		b->refused = true;
		return NULL;
	}
	h->size = sizeof(*h) + size;
	b->left -= h->size;
	return h + 1;
}

static void budget_free(void *data, void *p)
{
	budget *b = data;
	block_head *h;

	if (!p)
		return;
	h = (block_head *)p - 1;
	b->left += h->size;
	free(h);
}

/* SHS_LOAD_BUDGET_FLOOR_MB MiB plus SHS_LOAD_BUDGET_PER_BYTE per input byte, saturating. */
static size_t budget_for(size_t len)
{
	size_t floor = (size_t)SHS_LOAD_BUDGET_FLOOR_MB << MIB_SHIFT;

	if (len > (SIZE_MAX - floor) / SHS_LOAD_BUDGET_PER_BYTE)
		return SIZE_MAX;
	return floor + len * SHS_LOAD_BUDGET_PER_BYTE;
}

/* ---- Conversion context and errors -------------------------------------------------------- */

typedef struct id_slot {
	int64_t id;
	uint32_t idx;
} id_slot;

typedef struct load_ctx {
	shs_module *m;
	shs_arena *a;           /* m->arena */
	const char *origin;
	shs_err *e;
	const char *comp;       /* names for messages, NULL outside */
	const char *instr;
	const char *part;       /* module-level part being read ("host_program_shape"), or NULL */
	id_slot *comp_ids;      /* sorted computation ids (malloc'ed) */
	uint32_t n_comp_ids;
	id_slot *instr_ids;     /* sorted ids of the current computation (malloc'ed, reused) */
	uint32_t n_instr_ids, cap_instr_ids;
} load_ctx;

/* "origin: computation 'c', instruction 'i'" for the current position. */
static void where(const load_ctx *c, char *buf, size_t size)
{
	if (c->instr)
		snprintf(buf, size, "%s: computation '%s', instruction '%s'", c->origin, c->comp,
			 c->instr);
	else if (c->comp)
		snprintf(buf, size, "%s: computation '%s'", c->origin, c->comp);
	else if (c->part)
		snprintf(buf, size, "%s: %s", c->origin, c->part);
	else
		snprintf(buf, size, "%s", c->origin);
}

static int fail(const load_ctx *c, int code, const char *fmt, ...) SHS_PRINTF(3, 4);

static int fail(const load_ctx *c, int code, const char *fmt, ...)
{
	char at[SHS_ERRMSG_MAX], what[SHS_ERRMSG_MAX];
	va_list ap;

	where(c, at, sizeof(at));
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return shs_seterr(c->e, code, "%s: %s", at, what);
}

/* Puts the current position in front of an error another module reported. */
static int prefix(const load_ctx *c, const char *what)
{
	char at[SHS_ERRMSG_MAX];

	where(c, at, sizeof(at));
	return shs_err_prefix(c->e, "%s: %s", at, what);
}

static int nomem(const load_ctx *c)
{
	return fail(c, SHS_ENOMEM, "out of memory (over the load budget)");
}

/* ---- Small converters ---------------------------------------------------------------------- */

static int i64s_from(const load_ctx *c, shs_i64s *out, const int64_t *v, size_t n)
{
	out->n = 0;
	out->v = NULL;
	if (!n)
		return SHS_OK;
	if (n > UINT32_MAX)
		return fail(c, SHS_EUNSUPPORTED, "list of %zu integers is too long", n);
	out->v = shs_arena_memdup(c->a, v, n * sizeof(*v));
	if (!out->v)
		return nomem(c);
	out->n = (uint32_t)n;
	return SHS_OK;
}

/* A copy of s, "" when absent: for names, which the IR never leaves NULL. */
static int name_from(const load_ctx *c, const char *s, const char **out)
{
	*out = shs_arena_strdup(c->a, s ? s : "");
	return *out ? SHS_OK : nomem(c);
}

/* A copy of s, NULL when absent or empty (proto3 cannot tell the two apart). */
static int opt_str_from(const load_ctx *c, const char *s, const char **out)
{
	*out = NULL;
	if (!s || !*s)
		return SHS_OK;
	*out = shs_arena_strdup(c->a, s);
	return *out ? SHS_OK : nomem(c);
}

static int bytes_from(const load_ctx *c, const ProtobufCBinaryData *p, shs_bytes *out)
{
	out->len = 0;
	out->data = NULL;
	if (!p->len)
		return SHS_OK;
	out->data = shs_arena_memdup(c->a, p->data, p->len);
	if (!out->data)
		return nomem(c);
	out->len = p->len;
	return SHS_OK;
}

/* The fields protobuf-c did not recognise, as raw wire bytes: tag varint, then the value. */
static int unknown_from(const load_ctx *c, const ProtobufCMessage *msg, shs_bytes *out)
{
	size_t total = 0, at = 0;
	uint8_t *p;

	out->len = 0;
	out->data = NULL;
	if (!msg->n_unknown_fields)
		return SHS_OK;
	for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];

		total += shs__pb_varint_len((uint64_t)u->tag << SHS__PB_TAG_SHIFT) + u->len;
	}
	p = shs_arena_alloc(c->a, total);
	if (!p)
		return nomem(c);
	for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];
		uint64_t tag = (uint64_t)u->tag << SHS__PB_TAG_SHIFT | (uint64_t)u->wire_type;

		at += shs__pb_put_varint(p + at, tag);
		memcpy(p + at, u->data, u->len);
		at += u->len;
	}
	out->data = p;
	out->len = at;
	return SHS_OK;
}

static int attrs_from(const load_ctx *c, const Xla__FrontendAttributes *p, uint32_t *n,
		      shs_attr_kv **out)
{
	*n = 0;
	*out = NULL;
	if (!p || !p->n_map)
		return SHS_OK;
	if (p->n_map > UINT32_MAX)
		return fail(c, SHS_EUNSUPPORTED, "too many frontend attributes");
	*out = shs_arena_calloc(c->a, p->n_map, sizeof(**out));
	if (!*out)
		return nomem(c);
	for (size_t i = 0; i < p->n_map; i++) {
		if (name_from(c, p->map[i]->key, &(*out)[i].key) ||
		    name_from(c, p->map[i]->value, &(*out)[i].value))
			return SHS_ENOMEM;
	}
	*n = (uint32_t)p->n_map;
	return SHS_OK;
}

/* ---- Shapes -------------------------------------------------------------------------------- */

static int layout_from(const load_ctx *c, const Xla__LayoutProto *p, shs_layout **out)
{
	shs_layout *l = shs_arena_calloc(c->a, 1, sizeof(*l));
	int rc;

	if (!l)
		return nomem(c);
	rc = i64s_from(c, &l->minor_to_major, p->minor_to_major, p->n_minor_to_major);
	if (rc != SHS_OK)
		return rc;
	if (p->n_tiles) {
		if (p->n_tiles > SHS_MAX_RANK)
			return fail(c, SHS_EPARSE, "layout has %zu tiles (limit %d)", p->n_tiles,
				    SHS_MAX_RANK);
		l->tiles = shs_arena_calloc(c->a, p->n_tiles, sizeof(*l->tiles));
		if (!l->tiles)
			return nomem(c);
		for (size_t t = 0; t < p->n_tiles; t++) {
			rc = i64s_from(c, &l->tiles[t], p->tiles[t]->dimensions,
				       p->tiles[t]->n_dimensions);
			if (rc != SHS_OK)
				return rc;
		}
		l->n_tiles = (uint32_t)p->n_tiles;
	}
	l->element_size_in_bits = p->element_size_in_bits;
	l->memory_space = p->memory_space;
	*out = l;
	return SHS_OK;
}

/* minor_to_major is empty (the default order) or a permutation of the shape's dims. */
static bool layout_fits(const shs_shape *s)
{
	const shs_i64s *m2m = &s->layout->minor_to_major;
	bool seen[SHS_MAX_RANK] = { false };

	if (!m2m->n)
		return true;
	if (m2m->n != s->rank)
		return false;
	for (uint32_t k = 0; k < m2m->n; k++) {
		int64_t d = m2m->v[k];

		if (d < 0 || d >= (int64_t)s->rank || seen[d])
			return false;
		seen[d] = true;
	}
	return true;
}

static int dynamic_from(const load_ctx *c, const Xla__ShapeProto *p, shs_shape *out)
{
	bool any = false;

	if (!p->n_is_dynamic_dimension)
		return SHS_OK;
	if (p->n_is_dynamic_dimension != p->n_dimensions)
		return fail(c, SHS_EPARSE, "shape has %zu is_dynamic_dimension flags for %zu dims",
			    p->n_is_dynamic_dimension, p->n_dimensions);
	for (size_t d = 0; d < p->n_dimensions; d++)
		any |= p->is_dynamic_dimension[d] != 0;
	if (!any)
		return SHS_OK;
	out->dynamic = shs_arena_calloc(c->a, p->n_dimensions, sizeof(*out->dynamic));
	if (!out->dynamic)
		return nomem(c);
	for (size_t d = 0; d < p->n_dimensions; d++)
		out->dynamic[d] = p->is_dynamic_dimension[d] != 0;
	return SHS_OK;
}

static int shape_from(const load_ctx *c, const Xla__ShapeProto *p, shs_shape *out,
		      unsigned depth)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (depth > SHS_MAX_NESTING)
		return fail(c, SHS_EPARSE, "tuple shape nested deeper than %d levels",
			    SHS_MAX_NESTING);
	if (!shs_elem_valid(p->element_type))
		return fail(c, SHS_EPARSE, "shape has invalid element type %d", p->element_type);
	if (p->n_dimensions > SHS_MAX_RANK)
		return fail(c, SHS_EPARSE, "shape has rank %zu (limit %d)", p->n_dimensions,
			    SHS_MAX_RANK);
	out->type = p->element_type;
	out->rank = (uint32_t)p->n_dimensions;
	if (out->rank) {
		out->dims = shs_arena_memdup(c->a, p->dimensions, out->rank * sizeof(*out->dims));
		if (!out->dims)
			return nomem(c);
	}
	rc = dynamic_from(c, p, out);
	if (rc == SHS_OK && p->layout)
		rc = layout_from(c, p->layout, &out->layout);
	if (rc == SHS_OK && out->layout && !layout_fits(out))
		return fail(c, SHS_EPARSE, "layout minor_to_major is not a permutation of the %u dims",
			    out->rank);
	if (rc != SHS_OK || !p->n_tuple_shapes)
		return rc;
	if (p->n_tuple_shapes > UINT32_MAX)
		return fail(c, SHS_EUNSUPPORTED, "tuple of %zu elements", p->n_tuple_shapes);
	out->tuple = shs_arena_calloc(c->a, p->n_tuple_shapes, sizeof(*out->tuple));
	if (!out->tuple)
		return nomem(c);
	out->n_tuple = (uint32_t)p->n_tuple_shapes;
	for (size_t i = 0; i < p->n_tuple_shapes; i++) {
		rc = shape_from(c, p->tuple_shapes[i], &out->tuple[i], depth + 1);
		if (rc != SHS_OK)
			return rc;
	}
	return SHS_OK;
}

/* A shape field that must be present. */
static int req_shape_from(const load_ctx *c, const Xla__ShapeProto *p, const char *what,
			  shs_shape *out)
{
	if (!p)
		return fail(c, SHS_EPARSE, "%s has no shape", what);
	return shape_from(c, p, out, 0);
}

static int program_shape_from(const load_ctx *c, const Xla__ProgramShapeProto *p,
			      shs_program_shape **out)
{
	shs_program_shape *ps = shs_arena_calloc(c->a, 1, sizeof(*ps));
	int rc;

	if (!ps)
		return nomem(c);
	if (p->n_parameters > UINT32_MAX)
		return fail(c, SHS_EUNSUPPORTED, "program shape has too many parameters");
	ps->n_params = (uint32_t)p->n_parameters;
	if (ps->n_params) {
		ps->params = shs_arena_calloc(c->a, ps->n_params, sizeof(*ps->params));
		if (!ps->params)
			return nomem(c);
	}
	for (uint32_t i = 0; i < ps->n_params; i++) {
		rc = shape_from(c, p->parameters[i], &ps->params[i], 0);
		if (rc != SHS_OK)
			return rc;
	}
	if (p->n_parameter_names && ps->n_params) {
		/* XLA pads missing names with ""; extra names have no parameter to name */
		ps->param_names = shs_arena_calloc(c->a, ps->n_params, sizeof(*ps->param_names));
		if (!ps->param_names)
			return nomem(c);
		for (uint32_t i = 0; i < ps->n_params; i++) {
			const char *n = i < p->n_parameter_names ? p->parameter_names[i] : "";

			if (name_from(c, n, &ps->param_names[i]))
				return SHS_ENOMEM;
		}
	}
	rc = req_shape_from(c, p->result, "program shape result", &ps->result);
	if (rc != SHS_OK)
		return rc;
	*out = ps;
	return SHS_OK;
}

/* ---- Literals ------------------------------------------------------------------------------ */

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

static int array_literal_from(const load_ctx *c, const Xla__LiteralProto *p,
			      const shs_shape *s, shs_literal *out)
{
	int64_t n = shs_shape_elements(s);
	size_t bytes = (size_t)shs_elem_bytes(s->type), per, have;
	shs__layout_iter it;
	uint8_t *data;

	if (n < 0)
		return fail(c, SHS_EPARSE, "literal shape has an invalid element count");
	if (n > 0 && literal_has_no_data(p)) {
		out->elided = true;
		return SHS_OK;
	}
	if (!shs__literal_type_supported(s->type))
		return fail(c, SHS_EUNSUPPORTED, "literals of element type %s are not supported",
			    shs_elem_name(s->type));
	have = literal_values(p, s->type, &per);
	if ((uint64_t)n > SIZE_MAX / bytes || have / per != (size_t)n || have % per)
		return fail(c, SHS_EPARSE, "literal of %lld %s elements has %zu values",
			    (long long)n, shs_elem_name(s->type), have);
	if (!shs__layout_iter_init(&it, s))
		return fail(c, SHS_EPARSE, "literal layout is not a permutation of its %u dims",
			    s->rank);
	data = shs_arena_alloc(c->a, (size_t)n * bytes);
	if (!data)
		return nomem(c);
	for (size_t k = 0; k < (size_t)n; k++, shs__layout_iter_next(&it))
		elem_from_proto(p, s->type, k, data + (size_t)it.row_major * bytes);
	out->size = (size_t)n * bytes;
	out->data = data;
	return SHS_OK;
}

static int literal_from(const load_ctx *c, const Xla__LiteralProto *p, const shs_shape *fallback,
			shs_literal *out, unsigned depth);

static int tuple_literal_from(const load_ctx *c, const Xla__LiteralProto *p, const shs_shape *s,
			      shs_literal *out, unsigned depth)
{
	if (!p->n_tuple_literals && s->n_tuple) {
		out->elided = true;
		return SHS_OK;
	}
	if (p->n_tuple_literals != s->n_tuple)
		return fail(c, SHS_EPARSE, "tuple literal has %zu elements, its shape %u",
			    p->n_tuple_literals, s->n_tuple);
	if (!s->n_tuple)
		return SHS_OK;
	out->tuple = shs_arena_calloc(c->a, s->n_tuple, sizeof(*out->tuple));
	if (!out->tuple)
		return nomem(c);
	out->n_tuple = s->n_tuple;
	for (uint32_t i = 0; i < s->n_tuple; i++) {
		int rc = literal_from(c, p->tuple_literals[i], &s->tuple[i], &out->tuple[i],
				      depth + 1);

		if (rc != SHS_OK)
			return rc;
	}
	return SHS_OK;
}

static int shape_mismatch(const load_ctx *c, const shs_shape *own, const shs_shape *want)
{
	shs_buf x = { 0 }, y = { 0 };
	int rc;

	shs_shape_print(&x, own, false);
	shs_shape_print(&y, want, false);
	rc = x.oom || y.oom ? nomem(c)
			    : fail(c, SHS_EPARSE, "literal shape %s does not match the shape %s",
				   x.data, y.data);
	shs_buf_free(&x);
	shs_buf_free(&y);
	return rc;
}

/* The literal's own shape (its layout orders the values; it must agree with fallback, the
 * instruction's shape or the enclosing tuple's element) or, when it has none, fallback. */
static int literal_from(const load_ctx *c, const Xla__LiteralProto *p, const shs_shape *fallback,
			shs_literal *out, unsigned depth)
{
	shs_shape own;
	const shs_shape *s = fallback;

	memset(out, 0, sizeof(*out));
	if (depth > SHS_MAX_NESTING)
		return fail(c, SHS_EPARSE, "tuple literal nested deeper than %d levels",
			    SHS_MAX_NESTING);
	if (p->shape) {
		int rc = shape_from(c, p->shape, &own, depth);

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

/* ---- Instruction attributes ---------------------------------------------------------------- */

static int dot_from(const load_ctx *c, const Xla__DotDimensionNumbers *p, shs_dot_dims **out)
{
	shs_dot_dims *d = shs_arena_calloc(c->a, 1, sizeof(*d));

	if (!d)
		return nomem(c);
	*out = d;
	if (i64s_from(c, &d->lhs_contracting, p->lhs_contracting_dimensions,
		      p->n_lhs_contracting_dimensions) ||
	    i64s_from(c, &d->rhs_contracting, p->rhs_contracting_dimensions,
		      p->n_rhs_contracting_dimensions) ||
	    i64s_from(c, &d->lhs_batch, p->lhs_batch_dimensions, p->n_lhs_batch_dimensions) ||
	    i64s_from(c, &d->rhs_batch, p->rhs_batch_dimensions, p->n_rhs_batch_dimensions))
		return c->e->code;
	return SHS_OK;
}

static int gather_from(const load_ctx *c, const Xla__GatherDimensionNumbers *p,
		       shs_gather_dims **out)
{
	shs_gather_dims *g = shs_arena_calloc(c->a, 1, sizeof(*g));

	if (!g)
		return nomem(c);
	*out = g;
	g->index_vector_dim = p->index_vector_dim;
	if (i64s_from(c, &g->offset_dims, p->offset_dims, p->n_offset_dims) ||
	    i64s_from(c, &g->collapsed_slice_dims, p->collapsed_slice_dims,
		      p->n_collapsed_slice_dims) ||
	    i64s_from(c, &g->start_index_map, p->start_index_map, p->n_start_index_map) ||
	    i64s_from(c, &g->operand_batching_dims, p->operand_batching_dims,
		      p->n_operand_batching_dims) ||
	    i64s_from(c, &g->start_indices_batching_dims, p->start_indices_batching_dims,
		      p->n_start_indices_batching_dims))
		return c->e->code;
	return SHS_OK;
}

static int scatter_from(const load_ctx *c, const Xla__ScatterDimensionNumbers *p,
			shs_scatter_dims **out)
{
	shs_scatter_dims *s = shs_arena_calloc(c->a, 1, sizeof(*s));

	if (!s)
		return nomem(c);
	*out = s;
	s->index_vector_dim = p->index_vector_dim;
	if (i64s_from(c, &s->update_window_dims, p->update_window_dims,
		      p->n_update_window_dims) ||
	    i64s_from(c, &s->inserted_window_dims, p->inserted_window_dims,
		      p->n_inserted_window_dims) ||
	    i64s_from(c, &s->scatter_dims_to_operand_dims, p->scatter_dims_to_operand_dims,
		      p->n_scatter_dims_to_operand_dims) ||
	    i64s_from(c, &s->input_batching_dims, p->input_batching_dims,
		      p->n_input_batching_dims) ||
	    i64s_from(c, &s->scatter_indices_batching_dims, p->scatter_indices_batching_dims,
		      p->n_scatter_indices_batching_dims))
		return c->e->code;
	return SHS_OK;
}

static int conv_from(const load_ctx *c, const Xla__ConvolutionDimensionNumbers *p,
		     shs_conv_dims **out)
{
	shs_conv_dims *d = shs_arena_calloc(c->a, 1, sizeof(*d));

	if (!d)
		return nomem(c);
	*out = d;
	d->input_batch = p->input_batch_dimension;
	d->input_feature = p->input_feature_dimension;
	d->kernel_input_feature = p->kernel_input_feature_dimension;
	d->kernel_output_feature = p->kernel_output_feature_dimension;
	d->output_batch = p->output_batch_dimension;
	d->output_feature = p->output_feature_dimension;
	if (i64s_from(c, &d->input_spatial, p->input_spatial_dimensions,
		      p->n_input_spatial_dimensions) ||
	    i64s_from(c, &d->kernel_spatial, p->kernel_spatial_dimensions,
		      p->n_kernel_spatial_dimensions) ||
	    i64s_from(c, &d->output_spatial, p->output_spatial_dimensions,
		      p->n_output_spatial_dimensions))
		return c->e->code;
	return SHS_OK;
}

static int window_from(const load_ctx *c, const Xla__Window *p, shs_instr *in)
{
	if (p->n_dimensions > SHS_MAX_RANK)
		return fail(c, SHS_EPARSE, "window has %zu dims (limit %d)", p->n_dimensions,
			    SHS_MAX_RANK);
	in->window = shs_arena_calloc(c->a, p->n_dimensions, sizeof(*in->window));
	if (!in->window)
		return nomem(c);
	in->n_window = (uint32_t)p->n_dimensions;
	for (size_t d = 0; d < p->n_dimensions; d++) {
		const Xla__WindowDimension *w = p->dimensions[d];
		shs_window_dim *o = &in->window[d];

		o->size = w->size;
		o->stride = w->stride;
		o->pad_low = w->padding_low;
		o->pad_high = w->padding_high;
		o->window_dilation = w->window_dilation;
		o->base_dilation = w->base_dilation;
		o->reversal = w->window_reversal != 0;
	}
	return SHS_OK;
}

static int slices_from(const load_ctx *c, const Xla__HloInstructionProto *p, shs_instr *in)
{
	if (!p->n_slice_dimensions)
		return SHS_OK;
	if (p->n_slice_dimensions > SHS_MAX_RANK)
		return fail(c, SHS_EPARSE, "slice has %zu dims (limit %d)", p->n_slice_dimensions,
			    SHS_MAX_RANK);
	in->slice = shs_arena_calloc(c->a, p->n_slice_dimensions, sizeof(*in->slice));
	if (!in->slice)
		return nomem(c);
	in->n_slice = (uint32_t)p->n_slice_dimensions;
	for (size_t d = 0; d < p->n_slice_dimensions; d++) {
		in->slice[d].start = p->slice_dimensions[d]->start;
		in->slice[d].limit = p->slice_dimensions[d]->limit;
		in->slice[d].stride = p->slice_dimensions[d]->stride;
	}
	return SHS_OK;
}

static int padding_from(const load_ctx *c, const Xla__PaddingConfig *p, shs_instr *in)
{
	if (p->n_dimensions > SHS_MAX_RANK)
		return fail(c, SHS_EPARSE, "padding has %zu dims (limit %d)", p->n_dimensions,
			    SHS_MAX_RANK);
	in->padding = shs_arena_calloc(c->a, p->n_dimensions, sizeof(*in->padding));
	if (!in->padding)
		return nomem(c);
	in->n_padding = (uint32_t)p->n_dimensions;
	for (size_t d = 0; d < p->n_dimensions; d++) {
		in->padding[d].low = p->dimensions[d]->edge_padding_low;
		in->padding[d].high = p->dimensions[d]->edge_padding_high;
		in->padding[d].interior = p->dimensions[d]->interior_padding;
	}
	return SHS_OK;
}

static int precision_from(const load_ctx *c, const Xla__PrecisionConfig *p, shs_instr *in)
{
	if (!p->n_operand_precision)
		return SHS_OK;
	if (p->n_operand_precision > SHS_MAX_OPERANDS)
		return fail(c, SHS_EPARSE, "precision config has %zu entries",
			    p->n_operand_precision);
	in->precision = shs_arena_memdup(c->a, p->operand_precision,
					 p->n_operand_precision * sizeof(*in->precision));
	if (!in->precision)
		return nomem(c);
	in->n_precision = (uint32_t)p->n_operand_precision;
	return SHS_OK;
}

/* Scalars, strings and integer lists. */
static int instr_plain_from(const load_ctx *c, const Xla__HloInstructionProto *p, shs_instr *in)
{
	in->id = p->id;
	in->parameter_number = p->parameter_number;
	in->tuple_index = p->tuple_index;
	in->exponent_bits = p->exponent_bits;
	in->mantissa_bits = p->mantissa_bits;
	in->channel_id = p->channel_id;
	in->feature_group_count = p->feature_group_count;
	in->batch_group_count = p->batch_group_count;
	in->custom_call_has_side_effect = p->custom_call_has_side_effect != 0;
	in->is_stable = p->is_stable != 0;
	in->indices_are_sorted = p->indices_are_sorted != 0;
	in->unique_indices = p->unique_indices != 0;
	in->largest = p->largest != 0;
	if (opt_str_from(c, p->fusion_kind, &in->fusion_kind) ||
	    opt_str_from(c, p->custom_call_target, &in->custom_call_target) ||
	    opt_str_from(c, p->comparison_direction, &in->comparison_direction) ||
	    opt_str_from(c, p->comparison_type, &in->comparison_type) ||
	    bytes_from(c, &p->backend_config, &in->backend_config) ||
	    i64s_from(c, &in->dimensions, p->dimensions, p->n_dimensions) ||
	    i64s_from(c, &in->dynamic_slice_sizes, p->dynamic_slice_sizes,
		      p->n_dynamic_slice_sizes) ||
	    i64s_from(c, &in->gather_slice_sizes, p->gather_slice_sizes, p->n_gather_slice_sizes))
		return c->e->code;
	return SHS_OK;
}

/* Dimension numbers, windows, slices, padding and precision. */
static int instr_structs_from(const load_ctx *c, const Xla__HloInstructionProto *p,
			      shs_instr *in)
{
	int rc = SHS_OK;

	if (p->dot_dimension_numbers)
		rc = dot_from(c, p->dot_dimension_numbers, &in->dot);
	if (rc == SHS_OK && p->gather_dimension_numbers)
		rc = gather_from(c, p->gather_dimension_numbers, &in->gather);
	if (rc == SHS_OK && p->scatter_dimension_numbers)
		rc = scatter_from(c, p->scatter_dimension_numbers, &in->scatter);
	if (rc == SHS_OK && p->convolution_dimension_numbers)
		rc = conv_from(c, p->convolution_dimension_numbers, &in->conv);
	if (rc == SHS_OK && p->window)
		rc = window_from(c, p->window, in);
	if (rc == SHS_OK)
		rc = slices_from(c, p, in);
	if (rc == SHS_OK && p->padding_config)
		rc = padding_from(c, p->padding_config, in);
	if (rc == SHS_OK && p->precision_config)
		rc = precision_from(c, p->precision_config, in);
	return rc;
}

/* Metadata, sharding, the literal, frontend attributes and unknown fields. */
static int instr_extras_from(const load_ctx *c, const Xla__HloInstructionProto *p,
			     shs_instr *in)
{
	int rc = SHS_OK;

	if (p->metadata) {
		in->metadata = shs_arena_calloc(c->a, 1, sizeof(*in->metadata));
		if (!in->metadata)
			return nomem(c);
		rc = shs_metadata_from_proto(c->a, p->metadata, in->metadata, c->e);
		if (rc != SHS_OK)
			return prefix(c, "metadata");
	}
	if (p->sharding) {
		rc = shs_sharding_from_proto(c->a, p->sharding, &in->sharding, c->e);
		if (rc != SHS_OK)
			return prefix(c, "sharding");
	}
	if (p->literal) {
		in->literal = shs_arena_calloc(c->a, 1, sizeof(*in->literal));
		if (!in->literal)
			return nomem(c);
		rc = literal_from(c, p->literal, &in->shape, in->literal, 0);
		if (rc != SHS_OK)
			return rc;
	}
	rc = attrs_from(c, p->frontend_attributes, &in->n_frontend_attrs, &in->frontend_attrs);
	if (rc == SHS_OK)
		rc = unknown_from(c, &p->base, &in->unknown);
	return rc;
}

/* Everything of one instruction except its references to other instructions and
 * computations, which wait until all ids are known. */
static int instr_from(load_ctx *c, const Xla__HloInstructionProto *p, shs_instr **out)
{
	shs_instr *in = shs_arena_calloc(c->a, 1, sizeof(*in));
	int op, rc;

	if (!in)
		return nomem(c);
	if (name_from(c, p->name, &in->name))
		return SHS_ENOMEM;
	c->instr = in->name;
	op = p->opcode ? shs_opcode_from_name(p->opcode, strlen(p->opcode)) : -1;
	if (op < 0)
		return fail(c, SHS_EPARSE, "unknown opcode '%s'", p->opcode ? p->opcode : "");
	in->op = (shs_opcode)op;
	rc = req_shape_from(c, p->shape, "instruction", &in->shape);
	if (rc == SHS_OK)
		rc = instr_plain_from(c, p, in);
	if (rc == SHS_OK)
		rc = instr_structs_from(c, p, in);
	if (rc == SHS_OK)
		rc = instr_extras_from(c, p, in);
	*out = in;
	return rc;
}

/* ---- Ids ----------------------------------------------------------------------------------- */

static int cmp_slot(const void *x, const void *y)
{
	const id_slot *a = x, *b = y;

	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The index holding id in the sorted table, or -1. */
static int64_t find_slot(const id_slot *t, uint32_t n, int64_t id)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && t[lo].id == id ? (int64_t)t[lo].idx : -1;
}

/* Resolves ids[0..n) to instruction indices of the current computation. */
static int resolve_instrs(const load_ctx *c, const int64_t *ids, size_t n, const char *what,
			  uint32_t *count, uint32_t **out)
{
	*count = 0;
	*out = NULL;
	if (!n)
		return SHS_OK;
	if (n > SHS_MAX_OPERANDS)
		return fail(c, SHS_EUNSUPPORTED, "%zu %s ids (limit %d)", n, what,
			    SHS_MAX_OPERANDS);
	*out = shs_arena_calloc(c->a, n, sizeof(**out));
	if (!*out)
		return nomem(c);
	for (size_t i = 0; i < n; i++) {
		int64_t idx = find_slot(c->instr_ids, c->n_instr_ids, ids[i]);

		if (idx < 0)
			return fail(c, SHS_EPARSE, "%s id %lld does not exist in this computation",
				    what, (long long)ids[i]);
		(*out)[i] = (uint32_t)idx;
	}
	*count = (uint32_t)n;
	return SHS_OK;
}

static int resolve_called(const load_ctx *c, const Xla__HloInstructionProto *p, shs_instr *in)
{
	if (!p->n_called_computation_ids)
		return SHS_OK;
	if (p->n_called_computation_ids > SHS_MAX_OPERANDS)
		return fail(c, SHS_EUNSUPPORTED, "%zu called computations",
			    p->n_called_computation_ids);
	in->called = shs_arena_calloc(c->a, p->n_called_computation_ids, sizeof(*in->called));
	if (!in->called)
		return nomem(c);
	for (size_t i = 0; i < p->n_called_computation_ids; i++) {
		int64_t idx = find_slot(c->comp_ids, c->n_comp_ids, p->called_computation_ids[i]);

		if (idx < 0)
			return fail(c, SHS_EPARSE, "called computation id %lld does not exist",
				    (long long)p->called_computation_ids[i]);
		in->called[i] = (uint32_t)idx;
	}
	in->n_called = (uint32_t)p->n_called_computation_ids;
	return SHS_OK;
}

/* Sorts ids[0..n) and reports the first id two entries share. */
static int sort_unique(load_ctx *c, id_slot *t, uint32_t n, const char *const *names,
		       const char *kind)
{
	qsort(t, n, sizeof(*t), cmp_slot);
	for (uint32_t i = 1; i < n; i++)
		if (t[i].id == t[i - 1].id)
			return fail(c, SHS_EPARSE, "%ss '%s' and '%s' share id %lld", kind,
				    names[t[i - 1].idx], names[t[i].idx], (long long)t[i].id);
	return SHS_OK;
}

/* ---- Computations and the module ----------------------------------------------------------- */

static int grow_instr_ids(load_ctx *c, uint32_t n)
{
	id_slot *t;

	if (n <= c->cap_instr_ids)
		return SHS_OK;
	t = realloc(c->instr_ids, n * sizeof(*t));
	if (!t)
		return nomem(c);
	c->instr_ids = t;
	c->cap_instr_ids = n;
	return SHS_OK;
}

static int instr_id_table(load_ctx *c, const shs_computation *comp)
{
	const char **names = NULL;
	int rc = grow_instr_ids(c, comp->n_instrs);

	if (rc != SHS_OK)
		return rc;
	names = malloc((comp->n_instrs ? comp->n_instrs : 1) * sizeof(*names));
	if (!names)
		return nomem(c);
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		c->instr_ids[i].id = comp->instrs[i]->id;
		c->instr_ids[i].idx = i;
		names[i] = comp->instrs[i]->name;
	}
	c->n_instr_ids = comp->n_instrs;
	rc = sort_unique(c, c->instr_ids, comp->n_instrs, names, "instruction");
	free(names);
	return rc;
}

static int comp_refs(load_ctx *c, const Xla__HloComputationProto *p, shs_computation *comp)
{
	int64_t root;
	int rc = instr_id_table(c, comp);

	for (uint32_t i = 0; rc == SHS_OK && i < comp->n_instrs; i++) {
		const Xla__HloInstructionProto *ip = p->instructions[i];
		shs_instr *in = comp->instrs[i];

		c->instr = in->name;
		rc = resolve_instrs(c, ip->operand_ids, ip->n_operand_ids, "operand",
				    &in->n_operands, &in->operands);
		if (rc == SHS_OK)
			rc = resolve_instrs(c, ip->control_predecessor_ids,
					    ip->n_control_predecessor_ids, "control predecessor",
					    &in->n_control, &in->control);
		if (rc == SHS_OK)
			rc = resolve_called(c, ip, in);
	}
	if (rc != SHS_OK)
		return rc;
	c->instr = NULL;
	root = find_slot(c->instr_ids, c->n_instr_ids, p->root_id);
	if (root < 0)
		return fail(c, SHS_EPARSE, "root id %lld does not exist", (long long)p->root_id);
	comp->root = (uint32_t)root;
	return SHS_OK;
}

static int comp_from(load_ctx *c, const Xla__HloComputationProto *p, shs_computation *comp)
{
	int rc;

	c->comp = comp->name;
	c->instr = NULL;
	if (!p->n_instructions)
		return fail(c, SHS_EPARSE, "computation has no instructions");
	if (p->n_instructions > UINT32_MAX)
		return fail(c, SHS_EUNSUPPORTED, "too many instructions");
	comp->instrs = shs_arena_calloc(c->a, p->n_instructions, sizeof(*comp->instrs));
	if (!comp->instrs)
		return nomem(c);
	comp->n_instrs = (uint32_t)p->n_instructions;
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		rc = instr_from(c, p->instructions[i], &comp->instrs[i]);
		if (rc != SHS_OK)
			return rc;
	}
	c->instr = NULL;
	rc = opt_str_from(c, p->execution_thread, &comp->execution_thread);
	if (rc == SHS_OK)
		rc = unknown_from(c, &p->base, &comp->unknown);
	if (rc == SHS_OK)
		rc = comp_refs(c, p, comp);
	return rc;
}

/* Creates the computations with their names and ids, and the sorted id table. */
static int comps_skeleton(load_ctx *c, const Xla__HloModuleProto *p)
{
	shs_module *m = c->m;
	const char **names;
	int rc = SHS_OK;

	if (p->n_computations > UINT32_MAX)
		return fail(c, SHS_EUNSUPPORTED, "too many computations");
	m->comps = shs_arena_calloc(c->a, p->n_computations, sizeof(*m->comps));
	c->comp_ids = malloc(p->n_computations * sizeof(*c->comp_ids));
	names = malloc(p->n_computations * sizeof(*names));
	if (!m->comps || !c->comp_ids || !names) {
		rc = nomem(c);
		goto out_free;
	}
	for (uint32_t i = 0; i < p->n_computations; i++) {
		shs_computation *comp = shs_arena_calloc(c->a, 1, sizeof(*comp));

		if (!comp || name_from(c, p->computations[i]->name, &comp->name)) {
			rc = nomem(c);
			goto out_free;
		}
		comp->id = p->computations[i]->id;
		m->comps[i] = comp;
		c->comp_ids[i].id = comp->id;
		c->comp_ids[i].idx = i;
		names[i] = comp->name;
	}
	m->n_comps = c->n_comp_ids = (uint32_t)p->n_computations;
	rc = sort_unique(c, c->comp_ids, m->n_comps, names, "computation");
out_free:
	free(names);
	return rc;
}

/* The entry: by entry_computation_id when it names one, else by entry_computation_name, else
 * (neither given) the last computation, which is where XLA puts the entry. */
static int find_entry(load_ctx *c, const Xla__HloModuleProto *p)
{
	const char *name = p->entry_computation_name ? p->entry_computation_name : "";
	int64_t idx = find_slot(c->comp_ids, c->n_comp_ids, p->entry_computation_id);

	if (idx >= 0 && (p->entry_computation_id || !*name ||
			 !strcmp(c->m->comps[idx]->name, name))) {
		c->m->entry = (uint32_t)idx;
		return SHS_OK;
	}
	for (uint32_t i = 0; *name && i < c->m->n_comps; i++) {
		if (!strcmp(c->m->comps[i]->name, name)) {
			c->m->entry = i;
			return SHS_OK;
		}
	}
	if (!p->entry_computation_id && !*name) {
		c->m->entry = c->m->n_comps - 1;
		return SHS_OK;
	}
	return fail(c, SHS_EPARSE, "entry computation (id %lld, name '%s') does not exist",
		    (long long)p->entry_computation_id, name);
}

static int aliases_from(load_ctx *c, const Xla__HloInputOutputAliasProto *p)
{
	shs_module *m = c->m;

	if (!p || !p->n_entries)
		return SHS_OK;
	if (p->n_entries > UINT32_MAX)
		return fail(c, SHS_EUNSUPPORTED, "too many aliases");
	m->aliases = shs_arena_calloc(c->a, p->n_entries, sizeof(*m->aliases));
	if (!m->aliases)
		return nomem(c);
	m->n_aliases = (uint32_t)p->n_entries;
	for (size_t i = 0; i < p->n_entries; i++) {
		const Xla__HloInputOutputAliasProto__AliasEntryProto *ep = p->entries[i];
		shs_alias *al = &m->aliases[i];

		al->param_number = ep->parameter_number;
		al->kind = ep->kind;
		if (i64s_from(c, &al->output_index, ep->output_shape_index,
			      ep->n_output_shape_index) ||
		    i64s_from(c, &al->param_index, ep->parameter_shape_index,
			      ep->n_parameter_shape_index))
			return c->e->code;
	}
	return SHS_OK;
}

static int module_from(load_ctx *c, const Xla__HloModuleProto *p)
{
	shs_module *m = c->m;
	int rc;

	if (!p->n_computations)
		return fail(c, SHS_EPARSE, "not an HloModuleProto or HloProto: no computations");
	m->id = p->id;
	rc = name_from(c, p->name, &m->name);
	if (rc == SHS_OK)
		rc = comps_skeleton(c, p);
	for (uint32_t i = 0; rc == SHS_OK && i < m->n_comps; i++)
		rc = comp_from(c, p->computations[i], m->comps[i]);
	if (rc != SHS_OK)
		return rc;
	c->comp = c->instr = NULL;
	rc = find_entry(c, p);
	if (rc == SHS_OK && p->host_program_shape) {
		c->part = "host_program_shape";
		rc = program_shape_from(c, p->host_program_shape, &m->entry_layout);
		c->part = NULL;
	}
	if (rc == SHS_OK)
		rc = aliases_from(c, p->input_output_alias);
	if (rc == SHS_OK)
		rc = attrs_from(c, p->frontend_attributes, &m->n_frontend_attrs,
				&m->frontend_attrs);
	if (rc == SHS_OK)
		rc = unknown_from(c, &p->base, &m->unknown);
	return rc;
}

/* ---- Telling HloProto from HloModuleProto -------------------------------------------------- */

/* True when buf[0..len) is well-formed wire data with a length-delimited field 3. */
static bool has_computations(const uint8_t *buf, size_t len)
{
	size_t pos = 0;
	bool found = false;

	while (pos < len) {
		shs__pb_span f;

		if (!shs__pb_field(buf, len, &pos, &f))
			return false;
		found |= f.field == FIELD_COMPUTATIONS && f.wire == SHS__PB_LEN;
	}
	return found;
}

/* An HloProto has only fields 1 to 3 (hlo_module, the reserved hlo_ordering and
 * buffer_assignment), and its field 1 is a module with computations. A bare HloModuleProto's
 * field 1 is its name, which is not such a message. */
static bool is_hlo_proto(const uint8_t *buf, size_t len)
{
	size_t pos = 0;
	shs__pb_span module = { 0 };
	bool have_module = false;

	while (pos < len) {
		shs__pb_span f;

		if (!shs__pb_field(buf, len, &pos, &f) || f.field > HLO_PROTO_MAX_FIELD)
			return false;
		if (f.field == FIELD_HLO_MODULE && f.wire == SHS__PB_LEN) {
			module = f;
			have_module = true;
		}
	}
	return have_module && has_computations(buf + module.payload, module.payload_len);
}

/* ---- Entry point --------------------------------------------------------------------------- */

static int convert(load_ctx *c, const ProtobufCMessage *msg, bool wrapped)
{
	const Xla__HloModuleProto *mp = (const Xla__HloModuleProto *)msg;

	if (wrapped) {
		const Xla__HloProto *hp = (const Xla__HloProto *)msg;
		int rc = unknown_from(c, &hp->base, &c->m->wrapper_unknown);

		if (rc != SHS_OK)
			return rc;
		if (!hp->hlo_module)
			return fail(c, SHS_EPARSE, "HloProto has no hlo_module");
		mp = hp->hlo_module;
	}
	c->m->from_hlo_proto = wrapped;
	return module_from(c, mp);
}

/* Unpacks with the budget and converts; the module gets what the unpacked tree leaves of it. */
static int unpack_and_convert(const uint8_t *buf, size_t len, bool wrapped, load_ctx *c)
{
	const ProtobufCMessageDescriptor *d =
		wrapped ? &xla__hlo_proto__descriptor : &xla__hlo_module_proto__descriptor;
	budget b = { .total = budget_for(len) };
	ProtobufCAllocator alloc = { budget_alloc, budget_free, &b };
	ProtobufCMessage *msg;
	int rc;

	b.left = b.total;
	msg = protobuf_c_message_unpack(d, &alloc, len, buf);
	if (!msg && b.refused)
		return fail(c, SHS_ENOMEM, "unpacking %zu bytes needs more than the %zu MiB budget",
			    len, b.total >> MIB_SHIFT);
	if (!msg)
		return fail(c, SHS_EPARSE, "malformed protobuf (%zu bytes)", len);
	c->m = shs_module_new(b.left ? b.left : 1); /* 0 would mean no limit */
	if (!c->m) {
		rc = nomem(c);
		goto out_free;
	}
	c->a = c->m->arena;
	rc = convert(c, msg, wrapped);
out_free:
	protobuf_c_message_free_unpacked(msg, &alloc);
	return rc;
}

int shs_proto_load(const uint8_t *buf, size_t len, const char *origin, shs_module **out,
		   shs_err *e)
{
	shs_err scratch;
	load_ctx c = { .origin = origin ? origin : "<protobuf>", .e = e ? e : &scratch };
	bool wrapped;
	int rc;

	e = c.e;
	if (!out || (!buf && len))
		return shs_seterr(e, SHS_EINVAL, "%s: no buffer or no output", c.origin);
	*out = NULL;
	if (len > (size_t)SHS_MAX_INPUT_MB << MIB_SHIFT)
		return shs_seterr(e, SHS_ENOMEM, "%s: %zu bytes is larger than the %d MiB limit",
				  c.origin, len, SHS_MAX_INPUT_MB);
	wrapped = is_hlo_proto(buf, len);
	rc = shs__proto_check(wrapped ? &xla__hlo_proto__descriptor
				      : &xla__hlo_module_proto__descriptor,
			      buf, len, c.origin, e);
	if (rc == SHS_OK)
		rc = unpack_and_convert(buf, len, wrapped, &c);
	free(c.comp_ids);
	free(c.instr_ids);
	if (rc != SHS_OK) {
		shs_module_free(c.m);
		return rc;
	}
	*out = c.m;
	return SHS_OK;
}
