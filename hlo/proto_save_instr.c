/* shs_instr -> HloInstructionProto. */
#include "proto_internal.h"
#include "sharding_proto.h"

/* ---- Dimension numbers, windows, slices, padding, precision ---------------------------------- */

static int dot_to(const shs__ps *c, const shs_dot_dims *d, Xla__DotDimensionNumbers **out)
{
	Xla__DotDimensionNumbers *p = shs__ps_new_msg(c, &xla__dot_dimension_numbers__descriptor);

	if (!p)
		return shs__ps_nomem(c);
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

static int gather_to(const shs__ps *c, const shs_gather_dims *g,
		     Xla__GatherDimensionNumbers **out)
{
	Xla__GatherDimensionNumbers *p =
		shs__ps_new_msg(c, &xla__gather_dimension_numbers__descriptor);

	if (!p)
		return shs__ps_nomem(c);
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

static int scatter_to(const shs__ps *c, const shs_scatter_dims *s,
		      Xla__ScatterDimensionNumbers **out)
{
	Xla__ScatterDimensionNumbers *p =
		shs__ps_new_msg(c, &xla__scatter_dimension_numbers__descriptor);

	if (!p)
		return shs__ps_nomem(c);
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

static int conv_to(const shs__ps *c, const shs_conv_dims *d,
		   Xla__ConvolutionDimensionNumbers **out)
{
	Xla__ConvolutionDimensionNumbers *p =
		shs__ps_new_msg(c, &xla__convolution_dimension_numbers__descriptor);

	if (!p)
		return shs__ps_nomem(c);
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

static int window_to(const shs__ps *c, const shs_instr *in, Xla__Window **out)
{
	Xla__Window *p = shs__ps_new_msg(c, &xla__window__descriptor);

	if (!p)
		return shs__ps_nomem(c);
	if (in->n_window) {
		p->dimensions = shs_arena_calloc(c->a, in->n_window, sizeof(*p->dimensions));
		if (!p->dimensions)
			return shs__ps_nomem(c);
		p->n_dimensions = in->n_window;
	}
	for (uint32_t d = 0; d < in->n_window; d++) {
		Xla__WindowDimension *w = shs__ps_new_msg(c, &xla__window_dimension__descriptor);
		const shs_window_dim *o = &in->window[d];

		if (!w)
			return shs__ps_nomem(c);
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

static int slices_to(const shs__ps *c, const shs_instr *in, Xla__HloInstructionProto *p)
{
	if (!in->n_slice)
		return SHS_OK;
	p->slice_dimensions = shs_arena_calloc(c->a, in->n_slice, sizeof(*p->slice_dimensions));
	if (!p->slice_dimensions)
		return shs__ps_nomem(c);
	for (uint32_t d = 0; d < in->n_slice; d++) {
		Xla__SliceDimensions *s = shs__ps_new_msg(c, &xla__slice_dimensions__descriptor);

		if (!s)
			return shs__ps_nomem(c);
		s->start = in->slice[d].start;
		s->limit = in->slice[d].limit;
		s->stride = in->slice[d].stride;
		p->slice_dimensions[d] = s;
	}
	p->n_slice_dimensions = in->n_slice;
	return SHS_OK;
}

static int padding_to(const shs__ps *c, const shs_instr *in, Xla__PaddingConfig **out)
{
	Xla__PaddingConfig *p = shs__ps_new_msg(c, &xla__padding_config__descriptor);

	if (!p)
		return shs__ps_nomem(c);
	if (in->n_padding) {
		p->dimensions = shs_arena_calloc(c->a, in->n_padding, sizeof(*p->dimensions));
		if (!p->dimensions)
			return shs__ps_nomem(c);
		p->n_dimensions = in->n_padding;
	}
	for (uint32_t d = 0; d < in->n_padding; d++) {
		Xla__PaddingConfigDimension *pd =
			shs__ps_new_msg(c, &xla__padding_config_dimension__descriptor);

		if (!pd)
			return shs__ps_nomem(c);
		pd->edge_padding_low = in->padding[d].low;
		pd->edge_padding_high = in->padding[d].high;
		pd->interior_padding = in->padding[d].interior;
		p->dimensions[d] = pd;
	}
	*out = p;
	return SHS_OK;
}

static int precision_to(const shs__ps *c, const shs_instr *in, Xla__PrecisionConfig **out)
{
	Xla__PrecisionConfig *p;

	*out = NULL;
	if (!in->n_precision)
		return SHS_OK;
	p = shs__ps_new_msg(c, &xla__precision_config__descriptor);
	if (!p)
		return shs__ps_nomem(c);
	p->n_operand_precision = in->n_precision;
	p->operand_precision = in->precision;
	*out = p;
	return SHS_OK;
}

/* Ids of the instructions (of the current computation) at idx[0..n). */
static int instr_ids_to(const shs__ps *c, const uint32_t *idx, uint32_t n, const char *what,
			size_t *count, int64_t **out)
{
	*count = 0;
	*out = NULL;
	if (!n)
		return SHS_OK;
	*out = shs_arena_calloc(c->a, n, sizeof(**out));
	if (!*out)
		return shs__ps_nomem(c);
	for (uint32_t i = 0; i < n; i++) {
		if (idx[i] >= c->comp->n_instrs)
			return shs__ps_fail(c, SHS_EINVAL, "%s index %u is out of range", what,
					    idx[i]);
		(*out)[i] = c->comp->instrs[idx[i]]->id;
	}
	*count = n;
	return SHS_OK;
}

static int refs_to(const shs__ps *c, const shs_instr *in, Xla__HloInstructionProto *p)
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
		return shs__ps_nomem(c);
	for (uint32_t i = 0; i < in->n_called; i++) {
		if (in->called[i] >= c->m->n_comps)
			return shs__ps_fail(c, SHS_EINVAL,
					    "called computation index %u is out of range",
					    in->called[i]);
		p->called_computation_ids[i] = c->m->comps[in->called[i]]->id;
	}
	p->n_called_computation_ids = in->n_called;
	return SHS_OK;
}

static void plain_to(const shs_instr *in, Xla__HloInstructionProto *p)
{
	p->name = shs__ps_str(in->name);
	p->opcode = shs__ps_str(shs_opcode_name(in->op));
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
	p->fusion_kind = shs__ps_str(in->fusion_kind);
	p->custom_call_target = shs__ps_str(in->custom_call_target);
	p->comparison_direction = shs__ps_str(in->comparison_direction);
	p->comparison_type = shs__ps_str(in->comparison_type);
	p->backend_config.len = in->backend_config.len;
	p->backend_config.data = (uint8_t *)in->backend_config.data;
	p->n_dimensions = in->dimensions.n;
	p->dimensions = in->dimensions.v;
	p->n_dynamic_slice_sizes = in->dynamic_slice_sizes.n;
	p->dynamic_slice_sizes = in->dynamic_slice_sizes.v;
	p->n_gather_slice_sizes = in->gather_slice_sizes.n;
	p->gather_slice_sizes = in->gather_slice_sizes.v;
}

static int structs_to(const shs__ps *c, const shs_instr *in, Xla__HloInstructionProto *p)
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

/* A layout-constrained custom call: constrain_layout and its operand shapes
 * (HloCustomCallInstruction::ToProto). */
static int operand_layouts_to(const shs__ps *c, const shs_instr *in, Xla__HloInstructionProto *p)
{
	int rc = SHS_OK;

	p->constrain_layout = true;
	if (!in->n_operand_layouts)
		return SHS_OK;
	p->operand_shapes_with_layout = shs_arena_calloc(c->a, in->n_operand_layouts,
							 sizeof(*p->operand_shapes_with_layout));
	if (!p->operand_shapes_with_layout)
		return shs__ps_nomem(c);
	for (uint32_t i = 0; rc == SHS_OK && i < in->n_operand_layouts; i++)
		rc = shs__shape_to(c, &in->operand_layouts[i], &p->operand_shapes_with_layout[i],
				   0);
	p->n_operand_shapes_with_layout = in->n_operand_layouts;
	return rc;
}

static int extras_to(const shs__ps *c, const shs_instr *in, Xla__HloInstructionProto *p)
{
	int rc = SHS_OK;

	if (in->layout_constrained && (rc = operand_layouts_to(c, in, p)) != SHS_OK)
		return rc;

	if (in->metadata) {
		p->metadata = shs__ps_new_msg(c, &xla__op_metadata__descriptor);
		if (!p->metadata)
			return shs__ps_nomem(c);
		rc = shs_metadata_to_proto(c->a, in->metadata, p->metadata, c->e);
		if (rc != SHS_OK)
			return shs__ps_prefix(c, "metadata");
	}
	if (in->sharding) {
		p->sharding = shs__ps_new_msg(c, &xla__op_sharding__descriptor);
		if (!p->sharding)
			return shs__ps_nomem(c);
		rc = shs_sharding_to_proto(c->a, in->sharding, p->sharding, c->e);
		if (rc != SHS_OK)
			return shs__ps_prefix(c, "sharding");
	}
	if (in->literal) {
		rc = shs__literal_to(c, in->literal, &in->shape, &p->literal, 0);
		if (rc != SHS_OK)
			return rc;
	}
	rc = shs__ps_attrs(c, in->n_frontend_attrs, in->frontend_attrs, &p->frontend_attributes);
	if (rc == SHS_OK)
		rc = shs__ps_unknown(c, &in->unknown, &p->base);
	return rc;
}

int shs__instr_to(shs__ps *c, const shs_instr *in, Xla__HloInstructionProto **out)
{
	Xla__HloInstructionProto *p;
	int rc;

	c->instr = in;
	if ((unsigned)in->op >= SHS_OP_COUNT)
		return shs__ps_fail(c, SHS_EINVAL, "invalid opcode %d", (int)in->op);
	p = shs__ps_new_msg(c, &xla__hlo_instruction_proto__descriptor);
	if (!p)
		return shs__ps_nomem(c);
	*out = p;
	plain_to(in, p);
	rc = shs__shape_to(c, &in->shape, &p->shape, 0);
	if (rc == SHS_OK)
		rc = refs_to(c, in, p);
	if (rc == SHS_OK)
		rc = structs_to(c, in, p);
	if (rc == SHS_OK)
		rc = extras_to(c, in, p);
	if (rc == SHS_OK)
		rc = shs__raw_to_proto(c, in, p);
	return rc;
}

