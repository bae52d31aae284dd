/* HLO text printer: instruction attributes, from the opcode's own to the backend config. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata.h"
#include "opcode.h"
#include "sharding.h"
#include "text_print.h"

enum {
	DIM_LABEL_SLOT = 12 /* one dim_labels position: a letter or a spatial number */
};

/* ---- small pieces ---------------------------------------------------------------------- */

/* ", name=" before every attribute. */
static void attr(const shs__printer *p, const char *name)
{
	shs_buf_puts(p->b, ", ");
	shs_buf_puts(p->b, name);
	shs_buf_putc(p->b, '=');
}

/* `, name=value`, the value unquoted, when there is a value (NULL or empty: nothing). */
static void attr_word(const shs__printer *p, const char *name, const char *value)
{
	if (!value || !*value)
		return;
	attr(p, name);
	shs_buf_puts(p->b, value);
}

static void attr_list(const shs__printer *p, const char *name, const shs_i64s *l)
{
	attr(p, name);
	shs__put_i64_braced(p->b, l);
}

static void attr_i64(const shs__printer *p, const char *name, int64_t v)
{
	attr(p, name);
	shs_buf_put_i64(p->b, v);
}

static void attr_true(const shs__printer *p, const char *name)
{
	attr_word(p, name, "true");
}

static void attr_string(const shs__printer *p, const char *name, const char *value)
{
	attr(p, name);
	shs_text_put_quoted(p->b, value, strlen(value));
}

static const char *comp_name(const shs__printer *p, uint32_t idx)
{
	return idx < p->m->n_comps && p->m->comps[idx]->name ? p->m->comps[idx]->name : "?";
}

void shs__put_raw_attrs(shs_buf *b, const shs_raw_attr *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		shs_buf_puts(b, ", ");
		shs_buf_puts(b, r[i].name ? r[i].name : "");
		shs_buf_putc(b, '=');
		shs_buf_puts(b, r[i].value ? r[i].value : "");
	}
}

/* ---- per-opcode attributes ------------------------------------------------------------- */

/* Where XLA prints an attribute the IR keeps verbatim. Most are opcode-specific and follow the
 * modeled ones of the opcode; a few have their own place. */
typedef enum raw_slot {
	RAW_BEFORE_DIMENSIONS, /* collectives: replica_groups, constrain_layout */
	RAW_OPCODE,            /* everything else: after the opcode's modeled attributes */
	RAW_AFTER_CALLED,      /* is_composite, after to_apply */
	RAW_AFTER_CONTROL      /* statistics, result_accuracy, origin: after control-predecessors */
} raw_slot;

static raw_slot raw_slot_of(const char *name, shs_opcode op)
{
	static const struct { const char *name; raw_slot slot; } known[] = {
		{ "replica_groups", RAW_BEFORE_DIMENSIONS },
		{ "constrain_layout", RAW_BEFORE_DIMENSIONS },
		{ "is_composite", RAW_AFTER_CALLED },
		{ "statistics", RAW_AFTER_CONTROL },
		{ "result_accuracy", RAW_AFTER_CONTROL },
		{ "origin", RAW_AFTER_CONTROL },
	};

	/* reduce-scatter prints use_global_device_ids before its dimensions, all-gather after */
	if (op == SHS_OP_REDUCE_SCATTER && name && !strcmp(name, "use_global_device_ids"))
		return RAW_BEFORE_DIMENSIONS;
	for (size_t k = 0; name && k < sizeof(known) / sizeof(known[0]); k++)
		if (!strcmp(name, known[k].name))
			return known[k].slot;
	return RAW_OPCODE;
}

static void put_raw_slot(const shs__printer *p, const shs_instr *in, raw_slot slot)
{
	for (uint32_t i = 0; i < in->n_raw_attrs; i++)
		if (raw_slot_of(in->raw_attrs[i].name, in->op) == slot)
			shs__put_raw_attrs(p->b, &in->raw_attrs[i], 1);
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

static void put_dimensions(const shs__printer *p, const shs_instr *in)
{
	if (in->op == SHS_OP_IOTA) {
		if (in->dimensions.n)
			attr_i64(p, "iota_dimension", in->dimensions.v[0]);
		return;
	}
	if (in->dimensions.n || always_dimensions(in->op))
		attr_list(p, "dimensions", &in->dimensions);
}

static void put_slice(const shs__printer *p, const shs_instr *in)
{
	bool strided = false;

	for (uint32_t i = 0; i < in->n_slice; i++)
		strided |= in->slice[i].stride != 1;
	attr(p, "slice");
	shs_buf_putc(p->b, '{');
	for (uint32_t i = 0; i < in->n_slice; i++) {
		const shs_slice_dim *d = &in->slice[i];

		shs__put_list_sep(p->b, i, false);
		shs_buf_printf(p->b, "[%" PRId64 ":%" PRId64, d->start, d->limit);
		if (strided)
			shs_buf_printf(p->b, ":%" PRId64, d->stride);
		shs_buf_putc(p->b, ']');
	}
	shs_buf_putc(p->b, '}');
}

static void put_dot(const shs__printer *p, const shs_dot_dims *d)
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
static void put_window(const shs__printer *p, const shs_window_dim *w, uint32_t n)
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

static void put_dim_labels(const shs__printer *p, const shs_conv_dims *c)
{
	attr(p, "dim_labels");
	put_labels(p->b, c->input_batch, 'b', c->input_feature, 'f', &c->input_spatial);
	shs_buf_putc(p->b, '_');
	put_labels(p->b, c->kernel_input_feature, 'i', c->kernel_output_feature, 'o',
		   &c->kernel_spatial);
	shs_buf_puts(p->b, "->");
	put_labels(p->b, c->output_batch, 'b', c->output_feature, 'f', &c->output_spatial);
}

static void put_precision(const shs__printer *p, const shs_instr *in)
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

static void put_gather(const shs__printer *p, const shs_instr *in)
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

static void put_scatter(const shs__printer *p, const shs_scatter_dims *s)
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
static void put_padding(const shs__printer *p, const shs_instr *in)
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

static void put_convolution_like(const shs__printer *p, const shs_instr *in)
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
static void put_opcode_attrs(const shs__printer *p, const shs_instr *in)
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
	attr_word(p, "direction", in->comparison_direction);
	attr_word(p, "type", in->comparison_type);
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
	attr_word(p, "kind", in->fusion_kind);
	if (in->custom_call_target || in->op == SHS_OP_CUSTOM_CALL)
		attr_string(p, "custom_call_target",
			    in->custom_call_target ? in->custom_call_target : "");
	if (in->layout_constrained) {
		attr(p, "operand_layout_constraints");
		shs_buf_putc(p->b, '{');
		for (uint32_t i = 0; i < in->n_operand_layouts; i++) {
			if (i)
				shs_buf_puts(p->b, ", ");
			shs_shape_print(p->b, &in->operand_layouts[i], true);
		}
		shs_buf_putc(p->b, '}');
	}
	if (in->custom_call_has_side_effect)
		attr_true(p, "custom_call_has_side_effect");
	if (in->is_stable)
		attr_true(p, "is_stable");
	put_raw_slot(p, in, RAW_OPCODE); /* topk's k comes before largest */
	if (in->op == SHS_OP_TOPK || in->largest)
		attr_word(p, "largest", in->largest ? "true" : "false");
}

/* ---- called computations --------------------------------------------------------------- */

static void attr_comp(const shs__printer *p, const char *name, uint32_t idx)
{
	attr(p, name);
	shs__put_name(p, comp_name(p, idx));
}

static void attr_comp_list(const shs__printer *p, const char *name, const shs_instr *in,
			   bool braces)
{
	attr(p, name);
	if (braces)
		shs_buf_putc(p->b, '{');
	for (uint32_t i = 0; i < in->n_called; i++) {
		shs__put_list_sep(p->b, i, false);
		shs__put_name(p, comp_name(p, in->called[i]));
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

static bool conditional_on_pred(const shs__printer *p, const shs_instr *in)
{
	const shs_instr *pred = in->n_operands ? shs__instr_at(p, in->operands[0]) : NULL;

	return pred && pred->shape.type == SHS_PRED && in->n_called == 2;
}

static void put_called(const shs__printer *p, const shs_instr *in)
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

/* ---- frontend attributes, control predecessors, backend config ------------------------- */

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

/* A backend config or frontend attribute value s[0..len), as XLA prints it. */
static void put_value(shs_buf *b, const char *s, size_t len)
{
	if (looks_like_json_dict(&(shs_bytes){ len, (const uint8_t *)s }))
		shs_buf_put(b, s, len);
	else
		shs_text_put_quoted(b, s, len);
}

static int cmp_kv(const void *a, const void *b)
{
	const shs_attr_kv *x = *(const shs_attr_kv *const *)a, *y = *(const shs_attr_kv *const *)b;
	int c = strcmp(x->key ? x->key : "", y->key ? y->key : "");

	return c ? c : strcmp(x->value ? x->value : "", y->value ? y->value : "");
}

/* FrontendAttributesToString: `{key="value",key={json},...}` sorted by key. */
void shs__put_frontend_attrs(shs_buf *b, const shs_attr_kv *kv, uint32_t n)
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
		put_value(b, v, strlen(v));
	}
	shs_buf_putc(b, '}');
	free(sorted);
}

static void put_backend_config(const shs__printer *p, const shs_bytes *cfg)
{
	attr(p, "backend_config");
	put_value(p->b, (const char *)cfg->data, cfg->len);
}

static void put_control(const shs__printer *p, const shs_instr *in)
{
	attr(p, "control-predecessors");
	shs_buf_putc(p->b, '{');
	for (uint32_t i = 0; i < in->n_control; i++) {
		const shs_instr *pre = shs__instr_at(p, in->control[i]);

		shs__put_list_sep(p->b, i, false);
		shs__put_name(p, pre ? pre->name : "?");
	}
	shs_buf_putc(p->b, '}');
}

/* ---- all of them, in XLA's order ------------------------------------------------------- */

void shs__put_instr_attrs(const shs__printer *p, const shs_instr *in)
{
	put_opcode_attrs(p, in);
	put_called(p, in);
	put_raw_slot(p, in, RAW_AFTER_CALLED);
	if (in->sharding) {
		attr(p, "sharding");
		shs_sharding_print(p->b, in->sharding);
	}
	if (in->n_frontend_attrs) {
		attr(p, "frontend_attributes");
		shs__put_frontend_attrs(p->b, in->frontend_attrs, in->n_frontend_attrs);
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
}
