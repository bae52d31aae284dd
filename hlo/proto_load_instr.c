/* HloInstructionProto -> shs_instr: everything but the references to other instructions. */
#include <string.h>

#include "proto_internal.h"
#include "text_lexer.h"

/* ---- Opcode names ---------------------------------------------------------------------------- */

enum {
	FNV_OFFSET = 2166136261u,
	FNV_PRIME = 16777619u,
	CONV_SPATIAL_MAX = 10 /* dim_labels name spatial dims with one digit each */
};

/* FNV-1a of the NUL-terminated s; *len receives its length. */
static uint32_t name_hash(const char *s, size_t *len)
{
	uint32_t h = FNV_OFFSET;
	size_t n = 0;

	for (; s[n]; n++)
		h = (h ^ (uint8_t)s[n]) * FNV_PRIME;
	*len = n;
	return h;
}

void shs__op_table_init(shs__op_table *t)
{
	memset(t->slot, -1, sizeof(t->slot)); /* every byte 0xff: every slot -1 */
	for (int op = 0; op < SHS_OP_COUNT; op++) {
		size_t len;
		uint32_t h = name_hash(shs_opcode_name((shs_opcode)op), &len);

		while (t->slot[h % SHS__OP_SLOTS] >= 0)
			h++;
		t->slot[h % SHS__OP_SLOTS] = (int16_t)op;
		t->len[op] = (uint8_t)len;
	}
}

/* The opcode named s, or -1. */
static int op_lookup(const shs__op_table *t, const char *s)
{
	size_t len;
	uint32_t h = name_hash(s, &len);

	for (;; h++) {
		int op = t->slot[h % SHS__OP_SLOTS];

		if (op < 0)
			return -1;
		if (t->len[op] == len && !memcmp(shs_opcode_name((shs_opcode)op), s, len))
			return op;
	}
}

/* ---- Dimension numbers, windows, slices, padding, precision ---------------------------------- */

static int dot_from(const shs__pl *c, const Xla__DotDimensionNumbers *p, shs_dot_dims **out)
{
	shs_dot_dims *d = shs_arena_calloc(c->a, 1, sizeof(*d));

	if (!d)
		return shs__pl_nomem(c);
	*out = d;
	if (shs__pl_i64s(c, &d->lhs_contracting, p->lhs_contracting_dimensions,
			 p->n_lhs_contracting_dimensions) ||
	    shs__pl_i64s(c, &d->rhs_contracting, p->rhs_contracting_dimensions,
			 p->n_rhs_contracting_dimensions) ||
	    shs__pl_i64s(c, &d->lhs_batch, p->lhs_batch_dimensions, p->n_lhs_batch_dimensions) ||
	    shs__pl_i64s(c, &d->rhs_batch, p->rhs_batch_dimensions, p->n_rhs_batch_dimensions))
		return c->e->code;
	return SHS_OK;
}

static int gather_from(const shs__pl *c, const Xla__GatherDimensionNumbers *p,
		       shs_gather_dims **out)
{
	shs_gather_dims *g = shs_arena_calloc(c->a, 1, sizeof(*g));

	if (!g)
		return shs__pl_nomem(c);
	*out = g;
	g->index_vector_dim = p->index_vector_dim;
	if (shs__pl_i64s(c, &g->offset_dims, p->offset_dims, p->n_offset_dims) ||
	    shs__pl_i64s(c, &g->collapsed_slice_dims, p->collapsed_slice_dims,
			 p->n_collapsed_slice_dims) ||
	    shs__pl_i64s(c, &g->start_index_map, p->start_index_map, p->n_start_index_map) ||
	    shs__pl_i64s(c, &g->operand_batching_dims, p->operand_batching_dims,
			 p->n_operand_batching_dims) ||
	    shs__pl_i64s(c, &g->start_indices_batching_dims, p->start_indices_batching_dims,
			 p->n_start_indices_batching_dims))
		return c->e->code;
	return SHS_OK;
}

static int scatter_from(const shs__pl *c, const Xla__ScatterDimensionNumbers *p,
			shs_scatter_dims **out)
{
	shs_scatter_dims *s = shs_arena_calloc(c->a, 1, sizeof(*s));

	if (!s)
		return shs__pl_nomem(c);
	*out = s;
	s->index_vector_dim = p->index_vector_dim;
	if (shs__pl_i64s(c, &s->update_window_dims, p->update_window_dims,
			 p->n_update_window_dims) ||
	    shs__pl_i64s(c, &s->inserted_window_dims, p->inserted_window_dims,
			 p->n_inserted_window_dims) ||
	    shs__pl_i64s(c, &s->scatter_dims_to_operand_dims, p->scatter_dims_to_operand_dims,
			 p->n_scatter_dims_to_operand_dims) ||
	    shs__pl_i64s(c, &s->input_batching_dims, p->input_batching_dims,
			 p->n_input_batching_dims) ||
	    shs__pl_i64s(c, &s->scatter_indices_batching_dims, p->scatter_indices_batching_dims,
			 p->n_scatter_indices_batching_dims))
		return c->e->code;
	return SHS_OK;
}

/* Whether a, b and the spatial dims sp[0..n) name each of the n + 2 dims once, n at most
 * CONV_SPATIAL_MAX: what dim_labels (`b01f`, one digit a spatial dim) can say. */
static bool labels_part(int64_t a, int64_t b, const int64_t *sp, size_t n)
{
	uint32_t seen = 0;

	if (n > CONV_SPATIAL_MAX || a < 0 || b < 0 || a > (int64_t)n + 1 || b > (int64_t)n + 1 ||
	    a == b)
		return false;
	seen = 1u << a | 1u << b;
	for (size_t i = 0; i < n; i++) {
		if (sp[i] < 0 || sp[i] > (int64_t)n + 1 || (seen >> sp[i] & 1))
			return false;
		seen |= 1u << sp[i];
	}
	return true;
}

static int conv_from(const shs__pl *c, const Xla__ConvolutionDimensionNumbers *p,
		     shs_conv_dims **out)
{
	shs_conv_dims *d = shs_arena_calloc(c->a, 1, sizeof(*d));
	size_t n = p->n_input_spatial_dimensions;

	if (!d)
		return shs__pl_nomem(c);
	/* XLA's dim_labels, which the text form prints, must be able to say them */
	if (p->n_kernel_spatial_dimensions != n || p->n_output_spatial_dimensions != n ||
	    !labels_part(p->input_batch_dimension, p->input_feature_dimension,
			 p->input_spatial_dimensions, n) ||
	    !labels_part(p->kernel_input_feature_dimension, p->kernel_output_feature_dimension,
			 p->kernel_spatial_dimensions, n) ||
	    !labels_part(p->output_batch_dimension, p->output_feature_dimension,
			 p->output_spatial_dimensions, n))
		return shs__pl_fail(c, SHS_EPARSE, "convolution dimension numbers do not name "
				    "each dimension once (at most %d spatial ones, as many in each "
				    "part)", CONV_SPATIAL_MAX);
	*out = d;
	d->input_batch = p->input_batch_dimension;
	d->input_feature = p->input_feature_dimension;
	d->kernel_input_feature = p->kernel_input_feature_dimension;
	d->kernel_output_feature = p->kernel_output_feature_dimension;
	d->output_batch = p->output_batch_dimension;
	d->output_feature = p->output_feature_dimension;
	if (shs__pl_i64s(c, &d->input_spatial, p->input_spatial_dimensions,
			 p->n_input_spatial_dimensions) ||
	    shs__pl_i64s(c, &d->kernel_spatial, p->kernel_spatial_dimensions,
			 p->n_kernel_spatial_dimensions) ||
	    shs__pl_i64s(c, &d->output_spatial, p->output_spatial_dimensions,
			 p->n_output_spatial_dimensions))
		return c->e->code;
	return SHS_OK;
}

static int window_from(const shs__pl *c, const Xla__Window *p, shs_instr *in)
{
	if (p->n_dimensions > SHS_MAX_RANK)
		return shs__pl_fail(c, SHS_EPARSE, "window has %zu dims (limit %d)",
				    p->n_dimensions, SHS_MAX_RANK);
	in->window = shs_arena_calloc(c->a, p->n_dimensions, sizeof(*in->window));
	if (!in->window)
		return shs__pl_nomem(c);
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

static int slices_from(const shs__pl *c, const Xla__HloInstructionProto *p, shs_instr *in)
{
	if (!p->n_slice_dimensions)
		return SHS_OK;
	if (p->n_slice_dimensions > SHS_MAX_RANK)
		return shs__pl_fail(c, SHS_EPARSE, "slice has %zu dims (limit %d)",
				    p->n_slice_dimensions, SHS_MAX_RANK);
	in->slice = shs_arena_alloc(c->a, p->n_slice_dimensions * sizeof(*in->slice));
	if (!in->slice)
		return shs__pl_nomem(c);
	in->n_slice = (uint32_t)p->n_slice_dimensions;
	for (size_t d = 0; d < p->n_slice_dimensions; d++) {
		in->slice[d].start = p->slice_dimensions[d]->start;
		in->slice[d].limit = p->slice_dimensions[d]->limit;
		in->slice[d].stride = p->slice_dimensions[d]->stride;
	}
	return SHS_OK;
}

static int padding_from(const shs__pl *c, const Xla__PaddingConfig *p, shs_instr *in)
{
	if (p->n_dimensions > SHS_MAX_RANK)
		return shs__pl_fail(c, SHS_EPARSE, "padding has %zu dims (limit %d)",
				    p->n_dimensions, SHS_MAX_RANK);
	in->padding = shs_arena_calloc(c->a, p->n_dimensions, sizeof(*in->padding));
	if (!in->padding)
		return shs__pl_nomem(c);
	in->n_padding = (uint32_t)p->n_dimensions;
	for (size_t d = 0; d < p->n_dimensions; d++) {
		in->padding[d].low = p->dimensions[d]->edge_padding_low;
		in->padding[d].high = p->dimensions[d]->edge_padding_high;
		in->padding[d].interior = p->dimensions[d]->interior_padding;
	}
	return SHS_OK;
}

static int precision_from(const shs__pl *c, const Xla__PrecisionConfig *p, shs_instr *in)
{
	if (!p->n_operand_precision)
		return SHS_OK;
	if (p->n_operand_precision > SHS_MAX_OPERANDS)
		return shs__pl_fail(c, SHS_EPARSE, "precision config has %zu entries",
				    p->n_operand_precision);
	in->precision = shs_arena_memdup(c->a, p->operand_precision,
					 p->n_operand_precision * sizeof(*in->precision));
	if (!in->precision)
		return shs__pl_nomem(c);
	in->n_precision = (uint32_t)p->n_operand_precision;
	return SHS_OK;
}

/* The structures XLA always has for these opcodes, empty when the proto has none, as the text
 * parser makes them (add_op_defaults of text_parse_attr.c): a module reads the same from
 * either form (fuzz_proto: a reduce-window without a window hashed otherwise once printed). */
static int op_defaults(const shs__pl *c, shs_instr *in)
{
	bool ok = true;

	switch (in->op) {
	case SHS_OP_DOT:
		ok = in->dot || (in->dot = shs_arena_calloc(c->a, 1, sizeof(*in->dot)));
		break;
	case SHS_OP_GATHER:
		ok = in->gather || (in->gather = shs_arena_calloc(c->a, 1, sizeof(*in->gather)));
		break;
	case SHS_OP_SCATTER:
		ok = in->scatter || (in->scatter = shs_arena_calloc(c->a, 1, sizeof(*in->scatter)));
		break;
	case SHS_OP_CONVOLUTION:
	case SHS_OP_REDUCE_WINDOW:
	case SHS_OP_SELECT_AND_SCATTER:
		ok = in->window || (in->window = shs_arena_calloc(c->a, 1, sizeof(*in->window)));
		break;
	default:
		break;
	}
	return ok ? SHS_OK : shs__pl_nomem(c);
}

/* Dimension numbers, windows, slices, padding and precision. */
static int structs_from(const shs__pl *c, const Xla__HloInstructionProto *p, shs_instr *in)
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
	else if (rc == SHS_OK && in->op == SHS_OP_CONVOLUTION) /* as XLA requires them */
		rc = shs__pl_fail(c, SHS_EPARSE, "convolution has no dimension numbers");
	if (rc == SHS_OK && p->window)
		rc = window_from(c, p->window, in);
	if (rc == SHS_OK)
		rc = slices_from(c, p, in);
	if (rc == SHS_OK && p->padding_config)
		rc = padding_from(c, p->padding_config, in);
	if (rc == SHS_OK && p->precision_config)
		rc = precision_from(c, p->precision_config, in);
	if (rc == SHS_OK)
		rc = op_defaults(c, in);
	return rc;
}

/* ---- Scalars, strings, lists and the rest ---------------------------------------------------- */

static void scalars_from(const Xla__HloInstructionProto *p, shs_instr *in)
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
}

/* The name, the string attributes and the metadata's strings, copied in one allocation. */
static int strings_from(const shs__pl *c, const Xla__HloInstructionProto *p, shs_instr *in)
{
	const Xla__OpMetadata *mp = p->metadata;
	shs__strs s = { 0 };

	shs__strs_add(&s, p->name, &in->name, true);
	shs__strs_add(&s, p->fusion_kind, &in->fusion_kind, false);
	shs__strs_add(&s, p->custom_call_target, &in->custom_call_target, false);
	shs__strs_add(&s, p->comparison_direction, &in->comparison_direction, false);
	shs__strs_add(&s, p->comparison_type, &in->comparison_type, false);
	if (mp) {
		shs_metadata *m = shs_arena_alloc(c->a, sizeof(*m));

		if (!m)
			return shs__pl_nomem(c);
		*m = (shs_metadata){
			.source_line = mp->source_line,
			.source_end_line = mp->source_end_line,
			.source_column = mp->source_column,
			.source_end_column = mp->source_end_column,
			.stack_frame_id = mp->stack_frame_id,
		};
		shs__strs_add(&s, mp->op_type, &m->op_type, false);
		shs__strs_add(&s, mp->op_name, &m->op_name, false);
		shs__strs_add(&s, mp->source_file, &m->source_file, false);
		shs__strs_add(&s, mp->deduplicated_name, &m->deduplicated_name, false);
		shs__strs_add(&s, mp->scheduling_name, &m->scheduling_name, false);
		in->metadata = m;
	}
	return shs__strs_copy(&s, c->a) ? SHS_OK : shs__pl_nomem(c);
}

/* w (may be NULL) is one of words, the ones HLO text has for it, as XLA reads it from protobuf
 * (another string, printed as the word, made text that does not read back). */
static int word_known(const shs__pl *c, const char *w, const char *const *words, const char *what)
{
	if (w && !shs__word_in(w, words))
		return shs__pl_fail(c, SHS_EPARSE, "unknown %s '%s'", what, w);
	return SHS_OK;
}

static int lists_from(const shs__pl *c, const Xla__HloInstructionProto *p, shs_instr *in)
{
	if (p->backend_config.len) {
		in->backend_config.data = shs_arena_memdup(c->a, p->backend_config.data,
							   p->backend_config.len);
		if (!in->backend_config.data)
			return shs__pl_nomem(c);
		in->backend_config.len = p->backend_config.len;
	}
	if (shs__pl_i64s(c, &in->dimensions, p->dimensions, p->n_dimensions) ||
	    shs__pl_i64s(c, &in->dynamic_slice_sizes, p->dynamic_slice_sizes,
			 p->n_dynamic_slice_sizes) ||
	    shs__pl_i64s(c, &in->gather_slice_sizes, p->gather_slice_sizes,
			 p->n_gather_slice_sizes))
		return c->e->code;
	return SHS_OK;
}

/* A custom call's constrain_layout and operand shapes (HloInstruction::CreateFromProto). */
static int operand_layouts_from(const shs__pl *c, const Xla__HloInstructionProto *p,
				shs_instr *in)
{
	uint32_t n = (uint32_t)p->n_operand_shapes_with_layout;
	int rc = SHS_OK;

	in->layout_constrained = true;
	if (!n)
		return SHS_OK;
	if (!(in->operand_layouts = shs_arena_calloc(c->a, n, sizeof(*in->operand_layouts))))
		return shs__pl_nomem(c);
	for (uint32_t i = 0; rc == SHS_OK && i < n; i++)
		rc = shs__shape_from(c, p->operand_shapes_with_layout[i], &in->operand_layouts[i],
				     0);
	in->n_operand_layouts = n;
	return rc;
}

/* Sharding, the literal, frontend attributes and unknown fields. */
static int extras_from(const shs__pl *c, const Xla__HloInstructionProto *p, shs_instr *in)
{
	int rc;

	if (in->op == SHS_OP_CUSTOM_CALL && p->constrain_layout &&
	    (rc = operand_layouts_from(c, p, in)) != SHS_OK)
		return rc;

	if (p->sharding) {
		rc = shs__sharding_from_proto(c->a, c->scratch, p->sharding, &in->sharding, c->e);
		if (rc != SHS_OK)
			return shs__pl_prefix(c, "sharding");
	}
	if (p->literal) {
		in->literal = shs_arena_alloc(c->a, sizeof(*in->literal));
		if (!in->literal)
			return shs__pl_nomem(c);
		rc = shs__literal_from(c, p->literal, &in->shape, in->literal, 0);
		if (rc != SHS_OK)
			return rc;
	} else if (in->op == SHS_OP_CONSTANT) {
		/* only an array's values may be left out: elided, as text's {...} reads */
		if (in->shape.type == SHS_TUPLE || in->shape.rank == 0)
			return shs__pl_fail(c, SHS_EPARSE, "constant has no literal");
		if (!(in->literal = shs_arena_calloc(c->a, 1, sizeof(*in->literal))))
			return shs__pl_nomem(c);
		in->literal->elided = true;
	}
	if (p->frontend_attributes) {
		rc = shs__pl_attrs(c, p->frontend_attributes, &in->n_frontend_attrs,
				   &in->frontend_attrs);
		if (rc != SHS_OK)
			return rc;
	}
	return shs__pl_unknown(c, &p->base, &in->unknown);
}

int shs__instr_from(const shs__pl *c, const shs__op_table *ops,
		    const Xla__HloInstructionProto *p, shs_instr *in)
{
	const char *opcode = p->opcode ? p->opcode : "";
	int op = op_lookup(ops, opcode);
	int rc;

	if (op < 0)
		return shs__pl_fail(c, SHS_EPARSE, "unknown opcode '%s'", opcode);
	in->op = (shs_opcode)op;
	if (!p->shape)
		return shs__pl_fail(c, SHS_EPARSE, "instruction has no shape");
	scalars_from(p, in);
	rc = strings_from(c, p, in);
	if (rc == SHS_OK)
		rc = word_known(c, in->comparison_direction, shs__comparison_directions,
				"comparison direction");
	if (rc == SHS_OK)
		rc = word_known(c, in->comparison_type, shs__comparison_types, "comparison type");
	if (rc == SHS_OK)
		rc = word_known(c, in->fusion_kind, shs__fusion_kinds, "fusion kind");
	if (rc == SHS_OK)
		rc = shs__shape_from(c, p->shape, &in->shape, 0);
	if (rc == SHS_OK)
		rc = lists_from(c, p, in);
	if (rc == SHS_OK)
		rc = structs_from(c, p, in);
	if (rc == SHS_OK)
		rc = extras_from(c, p, in);
	if (rc == SHS_OK)
		rc = shs__raw_from_proto(c, p, in);
	return rc;
}
