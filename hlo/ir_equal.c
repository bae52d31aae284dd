/* Deep comparison of two modules, saying where the first difference is. */
#include <inttypes.h>
#include <string.h>

#include "io.h"
#include "ir.h"

/* Where the comparison is, for the message. */
typedef struct eq_ctx {
	shs_buf *why;
	const shs_computation *c; /* NULL at module level */
	const shs_instr *i;       /* NULL at computation level */
} eq_ctx;

/* Starts the message: "computation 'c', instruction 'i': ". Returns whether to go on writing. */
static bool begin(const eq_ctx *e)
{
	if (!e->why)
		return false;
	if (e->c)
		shs_buf_printf(e->why, "computation '%s'", e->c->name ? e->c->name : "");
	else
		shs_buf_puts(e->why, "module");
	if (e->i)
		shs_buf_printf(e->why, ", instruction '%s'", e->i->name ? e->i->name : "");
	shs_buf_puts(e->why, ": ");
	return true;
}

static bool fail(const eq_ctx *e, const char *what)
{
	if (begin(e))
		shs_buf_puts(e->why, what);
	return false;
}

static bool fail_i64(const eq_ctx *e, const char *what, int64_t x, int64_t y)
{
	if (begin(e))
		shs_buf_printf(e->why, "%s differ (%" PRId64 " vs %" PRId64 ")", what, x, y);
	return false;
}

static const char *show(const char *s)
{
	return s ? s : "(none)";
}

/* NULL and "" are both "not set" (proto3 strings). */
static bool str_eq(const char *x, const char *y)
{
	return !strcmp(x ? x : "", y ? y : "");
}

static bool cmp_str(const eq_ctx *e, const char *what, const char *x, const char *y)
{
	if (str_eq(x, y))
		return true;
	if (begin(e))
		shs_buf_printf(e->why, "%s differ ('%s' vs '%s')", what, show(x), show(y));
	return false;
}

static bool cmp_i64(const eq_ctx *e, const char *what, int64_t x, int64_t y)
{
	return x == y || fail_i64(e, what, x, y);
}

static void put_list(shs_buf *b, const int64_t *v, uint32_t n)
{
	shs_buf_putc(b, '{');
	for (uint32_t k = 0; k < n; k++) {
		if (k)
			shs_buf_putc(b, ',');
		shs_buf_put_i64(b, v[k]);
	}
	shs_buf_putc(b, '}');
}

static bool lists_eq(const int64_t *x, uint32_t nx, const int64_t *y, uint32_t ny)
{
	return nx == ny && (!nx || !memcmp(x, y, nx * sizeof(*x)));
}

static bool cmp_list(const eq_ctx *e, const char *what, const shs_i64s *x, const shs_i64s *y)
{
	if (lists_eq(x->v, x->n, y->v, y->n))
		return true;
	if (begin(e)) {
		shs_buf_printf(e->why, "%s differ (", what);
		put_list(e->why, x->v, x->n);
		shs_buf_puts(e->why, " vs ");
		put_list(e->why, y->v, y->n);
		shs_buf_putc(e->why, ')');
	}
	return false;
}

static bool cmp_u32s(const eq_ctx *e, const char *what, const uint32_t *x, uint32_t nx,
		     const uint32_t *y, uint32_t ny)
{
	if (nx != ny)
		return fail_i64(e, what, nx, ny);
	for (uint32_t k = 0; k < nx; k++) {
		if (x[k] == y[k])
			continue;
		if (begin(e))
			shs_buf_printf(e->why, "%s differ at %u (%u vs %u)", what, k, x[k], y[k]);
		return false;
	}
	return true;
}

static bool cmp_bytes(const eq_ctx *e, const char *what, const shs_bytes *x, const shs_bytes *y)
{
	if (x->len != y->len)
		return fail_i64(e, what, (int64_t)x->len, (int64_t)y->len);
	for (size_t k = 0; k < x->len; k++) {
		if (x->data[k] == y->data[k])
			continue;
		if (begin(e))
			shs_buf_printf(e->why, "%s differ at byte %zu (0x%02x vs 0x%02x)", what, k,
				       x->data[k], y->data[k]);
		return false;
	}
	return true;
}

static bool cmp_present(const eq_ctx *e, const char *what, const void *x, const void *y)
{
	if (!x == !y)
		return true;
	if (begin(e))
		shs_buf_printf(e->why, "%s is set only in the %s module", what,
			       x ? "first" : "second");
	return false;
}

/* ---- shapes ---------------------------------------------------------------------------- */

static bool cmp_shape(const eq_ctx *e, const char *what, const shs_shape *x, const shs_shape *y)
{
	if (shs_shape_equal(x, y))
		return true;
	if (begin(e)) {
		shs_buf_printf(e->why, "%s differ (", what);
		shs_shape_print(e->why, x, true);
		shs_buf_puts(e->why, " vs ");
		shs_shape_print(e->why, y, true);
		if (shs_shape_compatible(x, y))
			shs_buf_puts(e->why, "; layouts or dynamic dimensions");
		shs_buf_putc(e->why, ')');
	}
	return false;
}

static bool cmp_program_shape(const eq_ctx *e, const shs_program_shape *x,
			      const shs_program_shape *y)
{
	if (!cmp_present(e, "entry_computation_layout", x, y))
		return false;
	if (!x)
		return true;
	if (x->n_params != y->n_params)
		return fail_i64(e, "entry layout parameter counts", x->n_params, y->n_params);
	for (uint32_t k = 0; k < x->n_params; k++) {
		if (!cmp_shape(e, "entry layout parameter shapes", &x->params[k], &y->params[k]))
			return false;
		if (!x->param_names != !y->param_names)
			return fail(e, "entry layout parameter names are set in one module only");
		if (x->param_names && !cmp_str(e, "entry layout parameter names",
					       x->param_names[k], y->param_names[k]))
			return false;
	}
	return cmp_shape(e, "entry layout result shapes", &x->result, &y->result);
}

/* ---- literals -------------------------------------------------------------------------- */

static bool cmp_literal(const eq_ctx *e, const shs_literal *x, const shs_literal *y, int depth)
{
	shs_bytes bx, by;

	if (x->elided != y->elided)
		return fail(e, x->elided ? "literal elided only in the first module"
					 : "literal elided only in the second module");
	if (x->n_tuple != y->n_tuple)
		return fail_i64(e, "literal tuple sizes", x->n_tuple, y->n_tuple);
	if (depth > SHS_MAX_NESTING)
		return fail(e, "literal nested too deeply to compare");
	for (uint32_t k = 0; k < x->n_tuple; k++)
		if (!cmp_literal(e, &x->tuple[k], &y->tuple[k], depth + 1))
			return false;
	bx = (shs_bytes){ x->size, x->data };
	by = (shs_bytes){ y->size, y->data };
	return cmp_bytes(e, "literal bytes", &bx, &by);
}

/* ---- attribute structs ----------------------------------------------------------------- */

static bool cmp_dot(const eq_ctx *e, const shs_dot_dims *x, const shs_dot_dims *y)
{
	return cmp_list(e, "lhs_contracting_dims", &x->lhs_contracting, &y->lhs_contracting) &&
	       cmp_list(e, "rhs_contracting_dims", &x->rhs_contracting, &y->rhs_contracting) &&
	       cmp_list(e, "lhs_batch_dims", &x->lhs_batch, &y->lhs_batch) &&
	       cmp_list(e, "rhs_batch_dims", &x->rhs_batch, &y->rhs_batch);
}

static bool cmp_gather(const eq_ctx *e, const shs_gather_dims *x, const shs_gather_dims *y)
{
	return cmp_list(e, "offset_dims", &x->offset_dims, &y->offset_dims) &&
	       cmp_list(e, "collapsed_slice_dims", &x->collapsed_slice_dims,
			&y->collapsed_slice_dims) &&
	       cmp_list(e, "start_index_map", &x->start_index_map, &y->start_index_map) &&
	       cmp_i64(e, "index_vector_dim", x->index_vector_dim, y->index_vector_dim) &&
	       cmp_list(e, "operand_batching_dims", &x->operand_batching_dims,
			&y->operand_batching_dims) &&
	       cmp_list(e, "start_indices_batching_dims", &x->start_indices_batching_dims,
			&y->start_indices_batching_dims);
}

static bool cmp_scatter(const eq_ctx *e, const shs_scatter_dims *x, const shs_scatter_dims *y)
{
	return cmp_list(e, "update_window_dims", &x->update_window_dims,
			&y->update_window_dims) &&
	       cmp_list(e, "inserted_window_dims", &x->inserted_window_dims,
			&y->inserted_window_dims) &&
	       cmp_list(e, "scatter_dims_to_operand_dims", &x->scatter_dims_to_operand_dims,
			&y->scatter_dims_to_operand_dims) &&
	       cmp_i64(e, "index_vector_dim", x->index_vector_dim, y->index_vector_dim) &&
	       cmp_list(e, "input_batching_dims", &x->input_batching_dims,
			&y->input_batching_dims) &&
	       cmp_list(e, "scatter_indices_batching_dims", &x->scatter_indices_batching_dims,
			&y->scatter_indices_batching_dims);
}

static bool cmp_conv(const eq_ctx *e, const shs_conv_dims *x, const shs_conv_dims *y)
{
	return cmp_i64(e, "conv input_batch_dimension", x->input_batch, y->input_batch) &&
	       cmp_i64(e, "conv input_feature_dimension", x->input_feature, y->input_feature) &&
	       cmp_list(e, "conv input_spatial_dimensions", &x->input_spatial,
			&y->input_spatial) &&
	       cmp_i64(e, "conv kernel_input_feature_dimension", x->kernel_input_feature,
		       y->kernel_input_feature) &&
	       cmp_i64(e, "conv kernel_output_feature_dimension", x->kernel_output_feature,
		       y->kernel_output_feature) &&
	       cmp_list(e, "conv kernel_spatial_dimensions", &x->kernel_spatial,
			&y->kernel_spatial) &&
	       cmp_i64(e, "conv output_batch_dimension", x->output_batch, y->output_batch) &&
	       cmp_i64(e, "conv output_feature_dimension", x->output_feature,
		       y->output_feature) &&
	       cmp_list(e, "conv output_spatial_dimensions", &x->output_spatial,
			&y->output_spatial);
}

static bool cmp_slices(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	if (x->n_slice != y->n_slice)
		return fail_i64(e, "slice ranks", x->n_slice, y->n_slice);
	for (uint32_t k = 0; k < x->n_slice; k++) {
		const shs_slice_dim *a = &x->slice[k], *b = &y->slice[k];

		if (a->start == b->start && a->limit == b->limit && a->stride == b->stride)
			continue;
		if (begin(e))
			shs_buf_printf(e->why,
				       "slice differ in dimension %u ([%" PRId64 ":%" PRId64
				       ":%" PRId64 "] vs [%" PRId64 ":%" PRId64 ":%" PRId64 "])",
				       k, a->start, a->limit, a->stride, b->start, b->limit,
				       b->stride);
		return false;
	}
	return true;
}

static bool window_dim_eq(const shs_window_dim *a, const shs_window_dim *b)
{
	return a->size == b->size && a->stride == b->stride && a->pad_low == b->pad_low &&
	       a->pad_high == b->pad_high && a->window_dilation == b->window_dilation &&
	       a->base_dilation == b->base_dilation && a->reversal == b->reversal;
}

static bool cmp_window(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	if (!cmp_present(e, "window", x->window, y->window))
		return false;
	if (!x->window)
		return true;
	if (x->n_window != y->n_window)
		return fail_i64(e, "window ranks", x->n_window, y->n_window);
	for (uint32_t k = 0; k < x->n_window; k++) {
		if (window_dim_eq(&x->window[k], &y->window[k]))
			continue;
		if (begin(e))
			shs_buf_printf(e->why, "window differ in dimension %u", k);
		return false;
	}
	return true;
}

static bool cmp_padding(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	if (!cmp_present(e, "padding", x->padding, y->padding))
		return false;
	if (x->n_padding != y->n_padding)
		return fail_i64(e, "padding ranks", x->n_padding, y->n_padding);
	for (uint32_t k = 0; k < x->n_padding; k++) {
		const shs_pad_dim *a = &x->padding[k], *b = &y->padding[k];

		if (a->low == b->low && a->high == b->high && a->interior == b->interior)
			continue;
		if (begin(e))
			shs_buf_printf(e->why,
				       "padding differ in dimension %u (%" PRId64 "_%" PRId64
				       "_%" PRId64 " vs %" PRId64 "_%" PRId64 "_%" PRId64 ")",
				       k, a->low, a->high, a->interior, b->low, b->high,
				       b->interior);
		return false;
	}
	return true;
}

/* Operand precisions: an empty list and one of all DEFAULT mean the same. */
static bool precision_default(const shs_instr *in)
{
	for (uint32_t k = 0; k < in->n_precision; k++)
		if (in->precision[k] != SHS_PRECISION_DEFAULT)
			return false;
	return true;
}

static bool cmp_precision(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	if (precision_default(x) && precision_default(y))
		return true;
	if (x->n_precision != y->n_precision)
		return fail_i64(e, "operand_precision counts", x->n_precision, y->n_precision);
	for (uint32_t k = 0; k < x->n_precision; k++)
		if (x->precision[k] != y->precision[k])
			return fail_i64(e, "operand_precision", x->precision[k], y->precision[k]);
	return true;
}

/* Frontend attributes are a map: same pairs in any order. */
static bool kv_find(const shs_attr_kv *kv, uint32_t n, const shs_attr_kv *want)
{
	for (uint32_t k = 0; k < n; k++)
		if (str_eq(kv[k].key, want->key) && str_eq(kv[k].value, want->value))
			return true;
	return false;
}

static bool cmp_frontend(const eq_ctx *e, const shs_attr_kv *x, uint32_t nx,
			 const shs_attr_kv *y, uint32_t ny)
{
	if (nx != ny)
		return fail_i64(e, "frontend_attributes counts", nx, ny);
	for (uint32_t k = 0; k < nx; k++) {
		if (kv_find(y, ny, &x[k]))
			continue;
		if (begin(e))
			shs_buf_printf(e->why,
				       "frontend_attributes differ ('%s'=\"%s\" is missing in the "
				       "second module)",
				       show(x[k].key), show(x[k].value));
		return false;
	}
	return true;
}

/* Raw attributes that do not tell two modules apart: on an instruction, an empty replica_groups or
 * source_target_pairs, which XLA prints for every collective that has none; in the header,
 * module configuration, which protobuf does not hold (as num_partitions). */
static bool ignored(const shs_raw_attr *r, bool header)
{
	if (header)
		return shs_header_attr_is_config(r->name);
	return r->value && !strcmp(r->value, "{}") && r->name &&
	       (!strcmp(r->name, "replica_groups") || !strcmp(r->name, "source_target_pairs"));
}

static bool cmp_raw(const eq_ctx *e, const shs_raw_attr *x, uint32_t nx, const shs_raw_attr *y,
		    uint32_t ny, bool header)
{
	uint32_t i = 0, j = 0;

	for (;;) {
		while (i < nx && ignored(&x[i], header))
			i++;
		while (j < ny && ignored(&y[j], header))
			j++;
		if (i == nx || j == ny)
			break;
		if (!cmp_str(e, "raw attribute names", x[i].name, y[j].name) ||
		    !cmp_str(e, "raw attribute values", x[i].value, y[j].value))
			return false;
		i++;
		j++;
	}
	if (i != nx || j != ny)
		return fail_i64(e, "raw attribute counts", nx, ny);
	return true;
}

static bool cmp_metadata(const eq_ctx *e, const shs_metadata *x, const shs_metadata *y)
{
	static const shs_metadata none;

	if (shs_metadata_equal(x ? x : &none, y ? y : &none))
		return true;
	if (begin(e)) {
		shs_buf_puts(e->why, "metadata differ (");
		shs_metadata_print(e->why, x ? x : &none);
		shs_buf_puts(e->why, " vs ");
		shs_metadata_print(e->why, y ? y : &none);
		shs_buf_putc(e->why, ')');
	}
	return false;
}

static bool cmp_sharding(const eq_ctx *e, const shs_sharding *x, const shs_sharding *y)
{
	if (!cmp_present(e, "sharding", x, y))
		return false;
	if (!x || shs_sharding_equal(x, y))
		return true;
	if (begin(e)) {
		shs_buf_puts(e->why, "sharding differ (");
		shs_sharding_print(e->why, x);
		shs_buf_puts(e->why, " vs ");
		shs_sharding_print(e->why, y);
		shs_buf_putc(e->why, ')');
	}
	return false;
}

/* ---- instructions ---------------------------------------------------------------------- */

/* feature/batch group counts: 0 (absent) means 1. */
static int64_t group_count(int64_t v)
{
	return v ? v : 1;
}

static bool cmp_bool(const eq_ctx *e, const char *what, bool x, bool y)
{
	if (x == y)
		return true;
	if (begin(e))
		shs_buf_printf(e->why, "%s differ (%s vs %s)", what, x ? "true" : "false",
			       y ? "true" : "false");
	return false;
}

static bool cmp_links(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	return cmp_u32s(e, "operands", x->operands, x->n_operands, y->operands, y->n_operands) &&
	       cmp_u32s(e, "control predecessors", x->control, x->n_control, y->control,
			y->n_control) &&
	       cmp_u32s(e, "called computations", x->called, x->n_called, y->called,
			y->n_called);
}

static bool cmp_scalars(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	return cmp_i64(e, "parameter_number", x->parameter_number, y->parameter_number) &&
	       cmp_i64(e, "tuple_index", x->tuple_index, y->tuple_index) &&
	       cmp_i64(e, "exponent_bits", x->exponent_bits, y->exponent_bits) &&
	       cmp_i64(e, "mantissa_bits", x->mantissa_bits, y->mantissa_bits) &&
	       cmp_i64(e, "channel_id", x->channel_id, y->channel_id) &&
	       cmp_i64(e, "feature_group_count", group_count(x->feature_group_count),
		       group_count(y->feature_group_count)) &&
	       cmp_i64(e, "batch_group_count", group_count(x->batch_group_count),
		       group_count(y->batch_group_count)) &&
	       cmp_bool(e, "custom_call_has_side_effect", x->custom_call_has_side_effect,
			y->custom_call_has_side_effect) &&
	       cmp_bool(e, "is_stable", x->is_stable, y->is_stable) &&
	       cmp_bool(e, "indices_are_sorted", x->indices_are_sorted, y->indices_are_sorted) &&
	       cmp_bool(e, "unique_indices", x->unique_indices, y->unique_indices) &&
	       cmp_bool(e, "largest", x->largest, y->largest);
}

static bool cmp_strings(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	return cmp_str(e, "comparison directions", x->comparison_direction,
		       y->comparison_direction) &&
	       cmp_str(e, "comparison types", x->comparison_type, y->comparison_type) &&
	       cmp_str(e, "custom_call_targets", x->custom_call_target, y->custom_call_target) &&
	       cmp_str(e, "fusion kinds", x->fusion_kind, y->fusion_kind) &&
	       cmp_bytes(e, "backend_config", &x->backend_config, &y->backend_config);
}

/* The optional structs: present in both or neither, then equal. */
static bool cmp_structs(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	if (!cmp_present(e, "literal", x->literal, y->literal) ||
	    !cmp_present(e, "dot dimension numbers", x->dot, y->dot) ||
	    !cmp_present(e, "gather dimension numbers", x->gather, y->gather) ||
	    !cmp_present(e, "scatter dimension numbers", x->scatter, y->scatter) ||
	    !cmp_present(e, "convolution dimension numbers", x->conv, y->conv))
		return false;
	return (!x->literal || cmp_literal(e, x->literal, y->literal, 0)) &&
	       (!x->dot || cmp_dot(e, x->dot, y->dot)) &&
	       (!x->gather || cmp_gather(e, x->gather, y->gather)) &&
	       cmp_list(e, "gather slice_sizes", &x->gather_slice_sizes,
			&y->gather_slice_sizes) &&
	       (!x->scatter || cmp_scatter(e, x->scatter, y->scatter)) &&
	       (!x->conv || cmp_conv(e, x->conv, y->conv));
}

/* A custom call's operand_layout_constraints. */
static bool cmp_operand_layouts(const eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	if (x->layout_constrained != y->layout_constrained)
		return fail_i64(e, "layout constraints", x->layout_constrained,
				y->layout_constrained);
	if (x->n_operand_layouts != y->n_operand_layouts)
		return fail_i64(e, "operand layout counts", x->n_operand_layouts,
				y->n_operand_layouts);
	for (uint32_t k = 0; k < x->n_operand_layouts; k++)
		if (!cmp_shape(e, "operand layouts", &x->operand_layouts[k],
			       &y->operand_layouts[k]))
			return false;
	return true;
}

static bool cmp_instr(eq_ctx *e, const shs_instr *x, const shs_instr *y)
{
	e->i = x;
	if (!cmp_str(e, "names", x->name, y->name))
		return false;
	if (x->op != y->op) {
		if (begin(e))
			shs_buf_printf(e->why, "opcodes differ (%s vs %s)", shs_opcode_name(x->op),
				       shs_opcode_name(y->op));
		return false;
	}
	return cmp_i64(e, "ids", x->id, y->id) && cmp_shape(e, "shapes", &x->shape, &y->shape) &&
	       cmp_links(e, x, y) && cmp_scalars(e, x, y) &&
	       cmp_list(e, "dimensions", &x->dimensions, &y->dimensions) &&
	       cmp_list(e, "dynamic_slice_sizes", &x->dynamic_slice_sizes,
			&y->dynamic_slice_sizes) &&
	       cmp_slices(e, x, y) && cmp_window(e, x, y) && cmp_padding(e, x, y) &&
	       cmp_precision(e, x, y) && cmp_strings(e, x, y) && cmp_structs(e, x, y) &&
	       cmp_operand_layouts(e, x, y) &&
	       cmp_sharding(e, x->sharding, y->sharding) &&
	       cmp_metadata(e, x->metadata, y->metadata) &&
	       cmp_frontend(e, x->frontend_attrs, x->n_frontend_attrs, y->frontend_attrs,
			    y->n_frontend_attrs) &&
	       cmp_raw(e, x->raw_attrs, x->n_raw_attrs, y->raw_attrs, y->n_raw_attrs, false) &&
	       cmp_bytes(e, "unknown protobuf fields", &x->unknown, &y->unknown);
}

/* ---- computations and the module ------------------------------------------------------- */

/* The main thread may be spelled NULL, "" or "main". */
static const char *thread_name(const char *t)
{
	return (!t || !*t) ? "main" : t;
}

static bool cmp_comp(eq_ctx *e, const shs_computation *x, const shs_computation *y)
{
	e->c = x;
	e->i = NULL;
	if (!cmp_str(e, "names", x->name, y->name) || !cmp_i64(e, "ids", x->id, y->id) ||
	    !cmp_i64(e, "instruction counts", x->n_instrs, y->n_instrs) ||
	    !cmp_i64(e, "root indices", x->root, y->root) ||
	    !cmp_str(e, "execution threads", thread_name(x->execution_thread),
		     thread_name(y->execution_thread)) ||
	    !cmp_bytes(e, "unknown protobuf fields", &x->unknown, &y->unknown))
		return false;
	for (uint32_t k = 0; k < x->n_instrs; k++)
		if (!cmp_instr(e, x->instrs[k], y->instrs[k]))
			return false;
	e->i = NULL;
	return true;
}

/* XLA reads an undefined alias kind as may-alias. */
static int32_t alias_kind(int32_t kind)
{
	enum { MAY_ALIAS = 1, MUST_ALIAS = 2 };

	return kind == MUST_ALIAS ? MUST_ALIAS : MAY_ALIAS;
}

static bool cmp_aliases(const eq_ctx *e, const shs_module *x, const shs_module *y)
{
	if (x->n_aliases != y->n_aliases)
		return fail_i64(e, "input_output_alias counts", x->n_aliases, y->n_aliases);
	for (uint32_t k = 0; k < x->n_aliases; k++) {
		const shs_alias *a = &x->aliases[k], *b = &y->aliases[k];

		if (!cmp_list(e, "alias output indices", &a->output_index, &b->output_index) ||
		    !cmp_i64(e, "alias parameter numbers", a->param_number, b->param_number) ||
		    !cmp_list(e, "alias parameter indices", &a->param_index, &b->param_index) ||
		    !cmp_i64(e, "alias kinds", alias_kind(a->kind), alias_kind(b->kind)))
			return false;
	}
	return true;
}

static bool cmp_module_fields(const eq_ctx *e, const shs_module *x, const shs_module *y)
{
	return cmp_str(e, "names", x->name, y->name) && cmp_i64(e, "ids", x->id, y->id) &&
	       cmp_i64(e, "computation counts", x->n_comps, y->n_comps) &&
	       cmp_i64(e, "entry computation indices", x->entry, y->entry) &&
	       cmp_program_shape(e, x->entry_layout, y->entry_layout) &&
	       cmp_aliases(e, x, y) &&
	       cmp_frontend(e, x->frontend_attrs, x->n_frontend_attrs, y->frontend_attrs,
			    y->n_frontend_attrs) &&
	       cmp_raw(e, x->raw_attrs, x->n_raw_attrs, y->raw_attrs, y->n_raw_attrs, true) &&
	       cmp_bytes(e, "unknown protobuf fields", &x->unknown, &y->unknown) &&
	       cmp_bytes(e, "unknown HloProto fields", &x->wrapper_unknown, &y->wrapper_unknown);
}

/* Values that mean the same compare equal: NULL and "" strings (proto3), no metadata and empty
 * metadata, feature/batch group count 0 and 1, no operand precisions and all DEFAULT, the main
 * execution thread as NULL, "" or "main", frontend attributes in any order (a map), alias kinds
 * undefined and may-alias, a collective's empty replica groups and none. The text style, the
 * header's module configuration (num_partitions, replica_count, allow_spmd_*) and from_hlo_proto
 * are not compared. */
bool shs_module_equal(const shs_module *x, const shs_module *y, shs_buf *why)
{
	eq_ctx e = { .why = why };

	if (x == y)
		return true;
	if (!x || !y)
		return fail(&e, "one of the modules is missing");
	if (!cmp_module_fields(&e, x, y))
		return false;
	for (uint32_t k = 0; k < x->n_comps; k++)
		if (!cmp_comp(&e, x->comps[k], y->comps[k]))
			return false;
	return true;
}
