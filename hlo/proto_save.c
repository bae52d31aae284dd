/* IR -> HloProto / HloModuleProto. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "proto_internal.h"
#include "sharding_proto.h"

/* The message tree lives in a scratch arena and points into the module where it can: protobuf-c
 * only reads it while packing. */
typedef struct save_ctx {
	shs_arena *a;
	const shs_module *m;
	shs_err *e;
	const shs_computation *comp; /* for messages, NULL outside */
	const shs_instr *instr;
} save_ctx;

/* s, or "" for a name the caller left NULL. */
static const char *nz(const char *s)
{
	return s ? s : "";
}

static void where(const save_ctx *c, char *buf, size_t size)
{
	if (c->instr)
		snprintf(buf, size, "computation '%s', instruction '%s'", nz(c->comp->name),
			 nz(c->instr->name));
	else if (c->comp)
		snprintf(buf, size, "computation '%s'", nz(c->comp->name));
	else
		snprintf(buf, size, "module '%s'", nz(c->m->name));
}

static int fail(const save_ctx *c, int code, const char *fmt, ...) SHS_PRINTF(3, 4);

static int fail(const save_ctx *c, int code, const char *fmt, ...)
{
	char at[SHS_ERRMSG_MAX], what[SHS_ERRMSG_MAX];
	va_list ap;

	where(c, at, sizeof(at));
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return shs_seterr(c->e, code, "%s: %s", at, what);
}

static int prefix(const save_ctx *c, const char *what)
{
	char at[SHS_ERRMSG_MAX];

	where(c, at, sizeof(at));
	return shs_err_prefix(c->e, "%s: %s", at, what);
}

static int nomem(const save_ctx *c)
{
	return fail(c, SHS_ENOMEM, "out of memory");
}

/* A new message of type d, initialised to its defaults; NULL when out of memory. */
static void *new_msg(const save_ctx *c, const ProtobufCMessageDescriptor *d)
{
	void *p = shs_arena_alloc(c->a, d->sizeof_message);

	if (p)
		protobuf_c_message_init(d, p);
	return p;
}

/* protobuf-c's string fields are not const, but packing only reads them. */
static char *pstr(const char *s)
{
	return (char *)nz(s);
}

/* ---- Unknown fields ------------------------------------------------------------------------ */

/* Splits stored raw fields (tag varint + value each) back into protobuf-c's unknown fields,
 * pointing into b. */
static int unknown_to(const save_ctx *c, const shs_bytes *b, ProtobufCMessage *msg)
{
	size_t pos = 0, n = 0;
	ProtobufCMessageUnknownField *u;

	while (pos < b->len) {
		shs__pb_span f;
		size_t at = pos;

		if (!shs__pb_field(b->data, b->len, &pos, &f))
			return fail(c, SHS_EINVAL,
				    "stored unknown protobuf fields are malformed at byte %zu", at);
		n++;
	}
	if (!n)
		return SHS_OK;
	u = shs_arena_calloc(c->a, n, sizeof(*u));
	if (!u)
		return nomem(c);
	pos = 0;
	for (size_t i = 0; i < n; i++) {
		shs__pb_span f;

		(void)shs__pb_field(b->data, b->len, &pos, &f); /* checked above */
		u[i].tag = f.field;
		u[i].wire_type = (ProtobufCWireType)f.wire;
		u[i].len = pos - f.value;
		u[i].data = (uint8_t *)(b->data + f.value);
	}
	msg->unknown_fields = u;
	msg->n_unknown_fields = (unsigned)n;
	return SHS_OK;
}

static int attrs_to(const save_ctx *c, uint32_t n, const shs_attr_kv *kv,
		    Xla__FrontendAttributes **out)
{
	Xla__FrontendAttributes *p;

	*out = NULL;
	if (!n)
		return SHS_OK;
	p = new_msg(c, &xla__frontend_attributes__descriptor);
	if (!p)
		return nomem(c);
	p->map = shs_arena_calloc(c->a, n, sizeof(*p->map));
	if (!p->map)
		return nomem(c);
	for (uint32_t i = 0; i < n; i++) {
		Xla__FrontendAttributes__MapEntry *me =
			new_msg(c, &xla__frontend_attributes__map_entry__descriptor);

		if (!me)
			return nomem(c);
		me->key = pstr(kv[i].key);
		me->value = pstr(kv[i].value);
		p->map[i] = me;
	}
	p->n_map = n;
	*out = p;
	return SHS_OK;
}

/* ---- Shapes -------------------------------------------------------------------------------- */

static int layout_to(const save_ctx *c, const shs_layout *l, Xla__LayoutProto **out)
{
	Xla__LayoutProto *p = new_msg(c, &xla__layout_proto__descriptor);

	if (!p)
		return nomem(c);
	p->n_minor_to_major = l->minor_to_major.n;
	p->minor_to_major = l->minor_to_major.v;
	p->element_size_in_bits = l->element_size_in_bits;
	p->memory_space = l->memory_space;
	if (l->n_tiles) {
		p->tiles = shs_arena_calloc(c->a, l->n_tiles, sizeof(*p->tiles));
		if (!p->tiles)
			return nomem(c);
		for (uint32_t t = 0; t < l->n_tiles; t++) {
			Xla__TileProto *tp = new_msg(c, &xla__tile_proto__descriptor);

			if (!tp)
				return nomem(c);
			tp->n_dimensions = l->tiles[t].n;
			tp->dimensions = l->tiles[t].v;
			p->tiles[t] = tp;
		}
		p->n_tiles = l->n_tiles;
	}
	*out = p;
	return SHS_OK;
}

static int shape_to(const save_ctx *c, const shs_shape *s, Xla__ShapeProto **out,
		    unsigned depth)
{
	Xla__ShapeProto *p;
	int rc = SHS_OK;

	if (depth > SHS_MAX_NESTING)
		return fail(c, SHS_EINVAL, "tuple shape nested deeper than %d levels",
			    SHS_MAX_NESTING);
	p = new_msg(c, &xla__shape_proto__descriptor);
	if (!p)
		return nomem(c);
	p->element_type = s->type;
	p->n_dimensions = s->rank;
	p->dimensions = s->dims;
	if (s->dynamic) {
		p->is_dynamic_dimension = shs_arena_calloc(c->a, s->rank,
							   sizeof(*p->is_dynamic_dimension));
		if (!p->is_dynamic_dimension)
			return nomem(c);
		for (uint32_t d = 0; d < s->rank; d++)
			p->is_dynamic_dimension[d] = s->dynamic[d];
		p->n_is_dynamic_dimension = s->rank;
	}
	if (s->layout)
		rc = layout_to(c, s->layout, &p->layout);
	if (rc == SHS_OK && s->n_tuple) {
		p->tuple_shapes = shs_arena_calloc(c->a, s->n_tuple, sizeof(*p->tuple_shapes));
		if (!p->tuple_shapes)
			return nomem(c);
		p->n_tuple_shapes = s->n_tuple;
		for (uint32_t i = 0; rc == SHS_OK && i < s->n_tuple; i++)
			rc = shape_to(c, &s->tuple[i], &p->tuple_shapes[i], depth + 1);
	}
	*out = p;
	return rc;
}

static int program_shape_to(const save_ctx *c, const shs_program_shape *ps,
			    Xla__ProgramShapeProto **out)
{
	Xla__ProgramShapeProto *p = new_msg(c, &xla__program_shape_proto__descriptor);
	int rc;

	if (!p)
		return nomem(c);
	if (ps->n_params) {
		p->parameters = shs_arena_calloc(c->a, ps->n_params, sizeof(*p->parameters));
		if (!p->parameters)
			return nomem(c);
		p->n_parameters = ps->n_params;
	}
	for (uint32_t i = 0; i < ps->n_params; i++) {
		rc = shape_to(c, &ps->params[i], &p->parameters[i], 0);
		if (rc != SHS_OK)
			return rc;
	}
	if (ps->param_names && ps->n_params) {
		p->parameter_names = shs_arena_calloc(c->a, ps->n_params,
						      sizeof(*p->parameter_names));
		if (!p->parameter_names)
			return nomem(c);
		for (uint32_t i = 0; i < ps->n_params; i++)
			p->parameter_names[i] = pstr(ps->param_names[i]);
		p->n_parameter_names = ps->n_params;
	}
	*out = p;
	return shape_to(c, &ps->result, &p->result, 0);
}

typedef struct param_ref {
	int64_t number;
	uint32_t idx;
} param_ref;

static int cmp_param(const void *x, const void *y)
{
	const param_ref *a = x, *b = y;

	if (a->number != b->number)
		return a->number < b->number ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The signature of comp: its parameters ordered by parameter_number, and the root's shape. */
static int derive_program_shape(const save_ctx *c, const shs_computation *comp,
				shs_program_shape *out)
{
	param_ref *refs;
	uint32_t n = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		n += comp->instrs[i]->op == SHS_OP_PARAMETER;
	out->result = comp->instrs[comp->root]->shape;
	if (!n)
		return SHS_OK;
	refs = shs_arena_calloc(c->a, n, sizeof(*refs));
	out->params = shs_arena_calloc(c->a, n, sizeof(*out->params));
	out->param_names = shs_arena_calloc(c->a, n, sizeof(*out->param_names));
	if (!refs || !out->params || !out->param_names)
		return nomem(c);
	for (uint32_t i = 0, k = 0; i < comp->n_instrs; i++) {
		if (comp->instrs[i]->op != SHS_OP_PARAMETER)
			continue;
		refs[k].number = comp->instrs[i]->parameter_number;
		refs[k++].idx = i;
	}
	qsort(refs, n, sizeof(*refs), cmp_param);
	for (uint32_t k = 0; k < n; k++) {
		out->params[k] = comp->instrs[refs[k].idx]->shape;
		out->param_names[k] = comp->instrs[refs[k].idx]->name;
	}
	out->n_params = n;
	return SHS_OK;
}

/* ---- Literals ------------------------------------------------------------------------------ */

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
static bool literal_alloc(const save_ctx *c, Xla__LiteralProto *p, int type, size_t n)
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

static int array_literal_to(const save_ctx *c, const shs_literal *lit, const shs_shape *s,
			    Xla__LiteralProto *p)
{
	int64_t n = shs_shape_elements(s);
	size_t bytes = (size_t)shs_elem_bytes(s->type);
	shs__layout_iter it;

	if (!shs__literal_type_supported(s->type))
		return fail(c, SHS_EUNSUPPORTED, "literals of element type %s cannot be written",
			    shs_elem_name(s->type) ? shs_elem_name(s->type) : "invalid");
	if (n < 0 || (uint64_t)n > SIZE_MAX / bytes || lit->size != (size_t)n * bytes)
		return fail(c, SHS_EINVAL, "literal holds %zu bytes for %lld %s elements",
			    lit->size, (long long)n, shs_elem_name(s->type));
	if (!shs__layout_iter_init(&it, s))
		return fail(c, SHS_EINVAL, "layout is not a permutation of the %u dims", s->rank);
	if (!n)
		return SHS_OK;
	if (!literal_alloc(c, p, s->type, (size_t)n))
		return nomem(c);
	for (size_t k = 0; k < (size_t)n; k++, shs__layout_iter_next(&it))
		elem_to_proto(p, s->type, k, lit->data + (size_t)it.row_major * bytes);
	return SHS_OK;
}

/* The literal with shape s; its values in the order of s's layout. */
static int literal_to(const save_ctx *c, const shs_literal *lit, const shs_shape *s,
		      Xla__LiteralProto **out, unsigned depth)
{
	Xla__LiteralProto *p;
	int rc;

	if (depth > SHS_MAX_NESTING)
		return fail(c, SHS_EINVAL, "tuple literal nested deeper than %d levels",
			    SHS_MAX_NESTING);
	p = new_msg(c, &xla__literal_proto__descriptor);
	if (!p)
		return nomem(c);
	*out = p;
	rc = shape_to(c, s, &p->shape, depth);
	if (rc != SHS_OK || lit->elided)
		return rc;
	if (s->type != SHS_TUPLE)
		return array_literal_to(c, lit, s, p);
	if (lit->n_tuple != s->n_tuple)
		return fail(c, SHS_EINVAL, "tuple literal has %u elements, its shape %u",
			    lit->n_tuple, s->n_tuple);
	if (!s->n_tuple)
		return SHS_OK;
	p->tuple_literals = shs_arena_calloc(c->a, s->n_tuple, sizeof(*p->tuple_literals));
	if (!p->tuple_literals)
		return nomem(c);
	p->n_tuple_literals = s->n_tuple;
	for (uint32_t i = 0; rc == SHS_OK && i < s->n_tuple; i++)
		rc = literal_to(c, &lit->tuple[i], &s->tuple[i], &p->tuple_literals[i], depth + 1);
	return rc;
}

/* ---- Instruction attributes ---------------------------------------------------------------- */

static int dot_to(const save_ctx *c, const shs_dot_dims *d, Xla__DotDimensionNumbers **out)
{
	Xla__DotDimensionNumbers *p = new_msg(c, &xla__dot_dimension_numbers__descriptor);

	if (!p)
		return nomem(c);
	p->n_lhs_contracting_dimensions = d->lhs_contracting.n;
	p->lhs_contracting_dimensions = d->lhs_contracting.v;
	p->n_rhs_contracting_dimensions = d->rhs_contracting.n;
	p->rhs_contracting_dimensions = d->rhs_contracting.v;
	p->n_lhs_batch_dimensions = d->lhs_batch.n;
	p->lhs_batch_dimensions = d->lhs_batch.v;
	p->n_rhs_batch_dimensions = d->rhs_batch.n;
	p->rhs_batch_dimensions = d->rhs_batch.v;
	*out = p;
	return SHS_OK;
}

static int gather_to(const save_ctx *c, const shs_gather_dims *g,
		     Xla__GatherDimensionNumbers **out)
{
	Xla__GatherDimensionNumbers *p = new_msg(c, &xla__gather_dimension_numbers__descriptor);

	if (!p)
		return nomem(c);
	p->n_offset_dims = g->offset_dims.n;
	p->offset_dims = g->offset_dims.v;
	p->n_collapsed_slice_dims = g->collapsed_slice_dims.n;
	p->collapsed_slice_dims = g->collapsed_slice_dims.v;
	p->n_start_index_map = g->start_index_map.n;
	p->start_index_map = g->start_index_map.v;
	p->index_vector_dim = g->index_vector_dim;
	p->n_operand_batching_dims = g->operand_batching_dims.n;
	p->operand_batching_dims = g->operand_batching_dims.v;
	p->n_start_indices_batching_dims = g->start_indices_batching_dims.n;
	p->start_indices_batching_dims = g->start_indices_batching_dims.v;
	*out = p;
	return SHS_OK;
}

static int scatter_to(const save_ctx *c, const shs_scatter_dims *s,
		      Xla__ScatterDimensionNumbers **out)
{
	Xla__ScatterDimensionNumbers *p = new_msg(c, &xla__scatter_dimension_numbers__descriptor);

	if (!p)
		return nomem(c);
	p->n_update_window_dims = s->update_window_dims.n;
	p->update_window_dims = s->update_window_dims.v;
	p->n_inserted_window_dims = s->inserted_window_dims.n;
	p->inserted_window_dims = s->inserted_window_dims.v;
	p->n_scatter_dims_to_operand_dims = s->scatter_dims_to_operand_dims.n;
	p->scatter_dims_to_operand_dims = s->scatter_dims_to_operand_dims.v;
	p->index_vector_dim = s->index_vector_dim;
	p->n_input_batching_dims = s->input_batching_dims.n;
	p->input_batching_dims = s->input_batching_dims.v;
	p->n_scatter_indices_batching_dims = s->scatter_indices_batching_dims.n;
	p->scatter_indices_batching_dims = s->scatter_indices_batching_dims.v;
	*out = p;
	return SHS_OK;
}

static int conv_to(const save_ctx *c, const shs_conv_dims *d,
		   Xla__ConvolutionDimensionNumbers **out)
{
	Xla__ConvolutionDimensionNumbers *p =
		new_msg(c, &xla__convolution_dimension_numbers__descriptor);

	if (!p)
		return nomem(c);
	p->input_batch_dimension = d->input_batch;
	p->input_feature_dimension = d->input_feature;
	p->n_input_spatial_dimensions = d->input_spatial.n;
	p->input_spatial_dimensions = d->input_spatial.v;
	p->kernel_input_feature_dimension = d->kernel_input_feature;
	p->kernel_output_feature_dimension = d->kernel_output_feature;
	p->n_kernel_spatial_dimensions = d->kernel_spatial.n;
	p->kernel_spatial_dimensions = d->kernel_spatial.v;
	p->output_batch_dimension = d->output_batch;
	p->output_feature_dimension = d->output_feature;
	p->n_output_spatial_dimensions = d->output_spatial.n;
	p->output_spatial_dimensions = d->output_spatial.v;
	*out = p;
	return SHS_OK;
}

static int window_to(const save_ctx *c, const shs_instr *in, Xla__Window **out)
{
	Xla__Window *p = new_msg(c, &xla__window__descriptor);

	if (!p)
		return nomem(c);
	if (in->n_window) {
		p->dimensions = shs_arena_calloc(c->a, in->n_window, sizeof(*p->dimensions));
		if (!p->dimensions)
			return nomem(c);
		p->n_dimensions = in->n_window;
	}
	for (uint32_t d = 0; d < in->n_window; d++) {
		Xla__WindowDimension *w = new_msg(c, &xla__window_dimension__descriptor);
		const shs_window_dim *o = &in->window[d];

		if (!w)
			return nomem(c);
		w->size = o->size;
		w->stride = o->stride;
		w->padding_low = o->pad_low;
		w->padding_high = o->pad_high;
		w->window_dilation = o->window_dilation;
		w->base_dilation = o->base_dilation;
		w->window_reversal = o->reversal;
		p->dimensions[d] = w;
	}
	*out = p;
	return SHS_OK;
}

static int slices_to(const save_ctx *c, const shs_instr *in, Xla__HloInstructionProto *p)
{
	if (!in->n_slice)
		return SHS_OK;
	p->slice_dimensions = shs_arena_calloc(c->a, in->n_slice, sizeof(*p->slice_dimensions));
	if (!p->slice_dimensions)
		return nomem(c);
	for (uint32_t d = 0; d < in->n_slice; d++) {
		Xla__SliceDimensions *s = new_msg(c, &xla__slice_dimensions__descriptor);

		if (!s)
			return nomem(c);
		s->start = in->slice[d].start;
		s->limit = in->slice[d].limit;
		s->stride = in->slice[d].stride;
		p->slice_dimensions[d] = s;
	}
	p->n_slice_dimensions = in->n_slice;
	return SHS_OK;
}

static int padding_to(const save_ctx *c, const shs_instr *in, Xla__PaddingConfig **out)
{
	Xla__PaddingConfig *p = new_msg(c, &xla__padding_config__descriptor);

	if (!p)
		return nomem(c);
	if (in->n_padding) {
		p->dimensions = shs_arena_calloc(c->a, in->n_padding, sizeof(*p->dimensions));
		if (!p->dimensions)
			return nomem(c);
		p->n_dimensions = in->n_padding;
	}
	for (uint32_t d = 0; d < in->n_padding; d++) {
		Xla__PaddingConfigDimension *pd =
			new_msg(c, &xla__padding_config_dimension__descriptor);

		if (!pd)
			return nomem(c);
		pd->edge_padding_low = in->padding[d].low;
		pd->edge_padding_high = in->padding[d].high;
		pd->interior_padding = in->padding[d].interior;
		p->dimensions[d] = pd;
	}
	*out = p;
	return SHS_OK;
}

static int precision_to(const save_ctx *c, const shs_instr *in, Xla__PrecisionConfig **out)
{
	Xla__PrecisionConfig *p;

	*out = NULL;
	if (!in->n_precision)
		return SHS_OK;
	p = new_msg(c, &xla__precision_config__descriptor);
	if (!p)
		return nomem(c);
	p->n_operand_precision = in->n_precision;
	p->operand_precision = in->precision;
	*out = p;
	return SHS_OK;
}

/* Ids of the instructions (of the current computation) at idx[0..n). */
static int instr_ids_to(const save_ctx *c, const uint32_t *idx, uint32_t n, const char *what,
			size_t *count, int64_t **out)
{
	*count = 0;
	*out = NULL;
	if (!n)
		return SHS_OK;
	*out = shs_arena_calloc(c->a, n, sizeof(**out));
	if (!*out)
		return nomem(c);
	for (uint32_t i = 0; i < n; i++) {
		if (idx[i] >= c->comp->n_instrs)
			return fail(c, SHS_EINVAL, "%s index %u is out of range", what, idx[i]);
		(*out)[i] = c->comp->instrs[idx[i]]->id;
	}
	*count = n;
	return SHS_OK;
}

static int refs_to(const save_ctx *c, const shs_instr *in, Xla__HloInstructionProto *p)
{
	int rc = instr_ids_to(c, in->operands, in->n_operands, "operand", &p->n_operand_ids,
			      &p->operand_ids);

	if (rc == SHS_OK)
		rc = instr_ids_to(c, in->control, in->n_control, "control predecessor",
				  &p->n_control_predecessor_ids, &p->control_predecessor_ids);
	if (rc != SHS_OK || !in->n_called)
		return rc;
	p->called_computation_ids = shs_arena_calloc(c->a, in->n_called,
						     sizeof(*p->called_computation_ids));
	if (!p->called_computation_ids)
		return nomem(c);
	for (uint32_t i = 0; i < in->n_called; i++) {
		if (in->called[i] >= c->m->n_comps)
			return fail(c, SHS_EINVAL, "called computation index %u is out of range",
				    in->called[i]);
		p->called_computation_ids[i] = c->m->comps[in->called[i]]->id;
	}
	p->n_called_computation_ids = in->n_called;
	return SHS_OK;
}

static void plain_to(const shs_instr *in, Xla__HloInstructionProto *p)
{
	p->name = pstr(in->name);
	p->opcode = pstr(shs_opcode_name(in->op));
	p->id = in->id;
	p->parameter_number = in->parameter_number;
	p->tuple_index = in->tuple_index;
	p->exponent_bits = in->exponent_bits;
	p->mantissa_bits = in->mantissa_bits;
	p->channel_id = in->channel_id;
	p->feature_group_count = in->feature_group_count;
	p->batch_group_count = in->batch_group_count;
	p->custom_call_has_side_effect = in->custom_call_has_side_effect;
	p->is_stable = in->is_stable;
	p->indices_are_sorted = in->indices_are_sorted;
	p->unique_indices = in->unique_indices;
	p->largest = in->largest;
	p->fusion_kind = pstr(in->fusion_kind);
	p->custom_call_target = pstr(in->custom_call_target);
	p->comparison_direction = pstr(in->comparison_direction);
	p->comparison_type = pstr(in->comparison_type);
	p->backend_config.len = in->backend_config.len;
	p->backend_config.data = (uint8_t *)in->backend_config.data;
	p->n_dimensions = in->dimensions.n;
	p->dimensions = in->dimensions.v;
	p->n_dynamic_slice_sizes = in->dynamic_slice_sizes.n;
	p->dynamic_slice_sizes = in->dynamic_slice_sizes.v;
	p->n_gather_slice_sizes = in->gather_slice_sizes.n;
	p->gather_slice_sizes = in->gather_slice_sizes.v;
}

static int structs_to(const save_ctx *c, const shs_instr *in, Xla__HloInstructionProto *p)
{
	int rc = SHS_OK;

	if (in->dot)
		rc = dot_to(c, in->dot, &p->dot_dimension_numbers);
	if (rc == SHS_OK && in->gather)
		rc = gather_to(c, in->gather, &p->gather_dimension_numbers);
	if (rc == SHS_OK && in->scatter)
		rc = scatter_to(c, in->scatter, &p->scatter_dimension_numbers);
	if (rc == SHS_OK && in->conv)
		rc = conv_to(c, in->conv, &p->convolution_dimension_numbers);
	if (rc == SHS_OK && in->window)
		rc = window_to(c, in, &p->window);
	if (rc == SHS_OK)
		rc = slices_to(c, in, p);
	if (rc == SHS_OK && in->padding)
		rc = padding_to(c, in, &p->padding_config);
	if (rc == SHS_OK)
		rc = precision_to(c, in, &p->precision_config);
	return rc;
}

static int extras_to(const save_ctx *c, const shs_instr *in, Xla__HloInstructionProto *p)
{
	int rc = SHS_OK;

	if (in->metadata) {
		p->metadata = new_msg(c, &xla__op_metadata__descriptor);
		if (!p->metadata)
			return nomem(c);
		rc = shs_metadata_to_proto(c->a, in->metadata, p->metadata, c->e);
		if (rc != SHS_OK)
			return prefix(c, "metadata");
	}
	if (in->sharding) {
		p->sharding = new_msg(c, &xla__op_sharding__descriptor);
		if (!p->sharding)
			return nomem(c);
		rc = shs_sharding_to_proto(c->a, in->sharding, p->sharding, c->e);
		if (rc != SHS_OK)
			return prefix(c, "sharding");
	}
	if (in->literal) {
		rc = literal_to(c, in->literal, &in->shape, &p->literal, 0);
		if (rc != SHS_OK)
			return rc;
	}
	rc = attrs_to(c, in->n_frontend_attrs, in->frontend_attrs, &p->frontend_attributes);
	if (rc == SHS_OK)
		rc = unknown_to(c, &in->unknown, &p->base);
	return rc;
}

static int instr_to(save_ctx *c, const shs_instr *in, Xla__HloInstructionProto **out)
{
	Xla__HloInstructionProto *p;
	int rc;

	c->instr = in;
	if (in->n_raw_attrs)
		return fail(c, SHS_EUNSUPPORTED, "attribute '%s' is kept only as HLO text and "
			    "cannot be written as protobuf", in->raw_attrs[0].name);
	if ((unsigned)in->op >= SHS_OP_COUNT)
		return fail(c, SHS_EINVAL, "invalid opcode %d", (int)in->op);
	p = new_msg(c, &xla__hlo_instruction_proto__descriptor);
	if (!p)
		return nomem(c);
	*out = p;
	plain_to(in, p);
	rc = shape_to(c, &in->shape, &p->shape, 0);
	if (rc == SHS_OK)
		rc = refs_to(c, in, p);
	if (rc == SHS_OK)
		rc = structs_to(c, in, p);
	if (rc == SHS_OK)
		rc = extras_to(c, in, p);
	return rc;
}

/* ---- Computations and the module ----------------------------------------------------------- */

static int comp_to(save_ctx *c, const shs_computation *comp, Xla__HloComputationProto **out)
{
	Xla__HloComputationProto *p = new_msg(c, &xla__hlo_computation_proto__descriptor);
	shs_program_shape ps;
	int rc;

	c->comp = comp;
	c->instr = NULL;
	if (!p)
		return nomem(c);
	*out = p;
	if (!comp->n_instrs || comp->root >= comp->n_instrs)
		return fail(c, SHS_EINVAL, "root index %u is out of range (%u instructions)",
			    comp->root, comp->n_instrs);
	p->name = pstr(comp->name);
	p->id = comp->id;
	p->root_id = comp->instrs[comp->root]->id;
	p->execution_thread = pstr(comp->execution_thread);
	p->instructions = shs_arena_calloc(c->a, comp->n_instrs, sizeof(*p->instructions));
	if (!p->instructions)
		return nomem(c);
	p->n_instructions = comp->n_instrs;
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		rc = instr_to(c, comp->instrs[i], &p->instructions[i]);
		if (rc != SHS_OK)
			return rc;
	}
	c->instr = NULL;
	rc = derive_program_shape(c, comp, &ps);
	if (rc == SHS_OK)
		rc = program_shape_to(c, &ps, &p->program_shape);
	if (rc == SHS_OK)
		rc = unknown_to(c, &comp->unknown, &p->base);
	return rc;
}

static int aliases_to(const save_ctx *c, Xla__HloInputOutputAliasProto **out)
{
	const shs_module *m = c->m;
	Xla__HloInputOutputAliasProto *p;

	*out = NULL;
	if (!m->n_aliases)
		return SHS_OK;
	p = new_msg(c, &xla__hlo_input_output_alias_proto__descriptor);
	if (!p)
		return nomem(c);
	p->entries = shs_arena_calloc(c->a, m->n_aliases, sizeof(*p->entries));
	if (!p->entries)
		return nomem(c);
	for (uint32_t i = 0; i < m->n_aliases; i++) {
		const shs_alias *al = &m->aliases[i];
		const ProtobufCMessageDescriptor *d =
			&xla__hlo_input_output_alias_proto__alias_entry_proto__descriptor;
		Xla__HloInputOutputAliasProto__AliasEntryProto *ep = new_msg(c, d);

		if (!ep)
			return nomem(c);
		ep->n_output_shape_index = al->output_index.n;
		ep->output_shape_index = al->output_index.v;
		ep->parameter_number = al->param_number;
		ep->n_parameter_shape_index = al->param_index.n;
		ep->parameter_shape_index = al->param_index.v;
		ep->kind = al->kind;
		p->entries[i] = ep;
	}
	p->n_entries = m->n_aliases;
	*out = p;
	return SHS_OK;
}

/* host_program_shape: the stored entry layout, else the entry's derived signature. */
static int host_shape_to(save_ctx *c, Xla__ProgramShapeProto **out)
{
	shs_program_shape derived;
	int rc;

	if (c->m->entry_layout)
		return program_shape_to(c, c->m->entry_layout, out);
	c->comp = c->m->comps[c->m->entry];
	rc = derive_program_shape(c, c->comp, &derived);
	c->comp = NULL;
	return rc == SHS_OK ? program_shape_to(c, &derived, out) : rc;
}

static int module_to(save_ctx *c, Xla__HloModuleProto *p)
{
	const shs_module *m = c->m;
	int rc;

	if (m->n_raw_attrs)
		return fail(c, SHS_EUNSUPPORTED,
			    "header attribute '%s' is kept only as HLO text and cannot be written "
			    "as protobuf", m->raw_attrs[0].name);
	if (!m->n_comps || m->entry >= m->n_comps)
		return fail(c, SHS_EINVAL, "entry index %u is out of range (%u computations)",
			    m->entry, m->n_comps);
	p->name = pstr(m->name);
	p->id = m->id;
	p->entry_computation_name = pstr(m->comps[m->entry]->name);
	p->entry_computation_id = m->comps[m->entry]->id;
	p->computations = shs_arena_calloc(c->a, m->n_comps, sizeof(*p->computations));
	if (!p->computations)
		return nomem(c);
	p->n_computations = m->n_comps;
	for (uint32_t i = 0; i < m->n_comps; i++) {
		rc = comp_to(c, m->comps[i], &p->computations[i]);
		if (rc != SHS_OK)
			return rc;
	}
	c->comp = NULL;
	c->instr = NULL;
	rc = host_shape_to(c, &p->host_program_shape);
	if (rc == SHS_OK)
		rc = aliases_to(c, &p->input_output_alias);
	if (rc == SHS_OK)
		rc = attrs_to(c, m->n_frontend_attrs, m->frontend_attrs, &p->frontend_attributes);
	if (rc == SHS_OK)
		rc = unknown_to(c, &m->unknown, &p->base);
	return rc;
}

/* Packs msg into a new malloc'ed buffer. */
static int pack(const save_ctx *c, const ProtobufCMessage *msg, uint8_t **out, size_t *out_len)
{
	size_t size = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		return nomem(c);
	if (protobuf_c_message_pack(msg, buf) != size) {
		free(buf);
		return fail(c, SHS_EINVAL, "protobuf-c packed a different size than it computed");
	}
	*out = buf;
	*out_len = size;
	return SHS_OK;
}

int shs_proto_save(const shs_module *m, bool as_hlo_proto, uint8_t **out, size_t *out_len,
		   shs_err *e)
{
	shs_err scratch;
	save_ctx c = { .m = m, .e = e ? e : &scratch };
	Xla__HloModuleProto *mp;
	Xla__HloProto *hp = NULL;
	int rc;

	if (!m || !out || !out_len)
		return shs_seterr(c.e, SHS_EINVAL, "shs_proto_save: no module or output");
	*out = NULL;
	*out_len = 0;
	c.a = shs_arena_new(0);
	if (!c.a)
		return shs_seterr(c.e, SHS_ENOMEM, "out of memory");
	mp = new_msg(&c, &xla__hlo_module_proto__descriptor);
	if (as_hlo_proto)
		hp = new_msg(&c, &xla__hlo_proto__descriptor);
	if (!mp || (as_hlo_proto && !hp)) {
		rc = nomem(&c);
		goto out_free;
	}
	rc = module_to(&c, mp);
	if (rc == SHS_OK && hp) {
		hp->hlo_module = mp;
		rc = unknown_to(&c, &m->wrapper_unknown, &hp->base);
	}
	if (rc == SHS_OK)
		rc = pack(&c, hp ? &hp->base : &mp->base, out, out_len);
out_free:
	shs_arena_free(c.a);
	return rc;
}
