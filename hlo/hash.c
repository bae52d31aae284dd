/* Structural hashes with XXH3: what an instruction computes, never what it is called. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "io.h"

/* The seed is the version of the encoding below: bump it whenever the encoding changes, so
 * hashes from different encodings never compare equal by accident. */
enum { SHS_HASH_V1 = 1 };

/* ---- Encoding: fixed-width little-endian integers, length-prefixed strings ---- */

static void put_u64(shs_buf *b, uint64_t v)
{
	uint8_t le[sizeof(v)];

	for (size_t k = 0; k < sizeof(v); k++)
		le[k] = (uint8_t)(v >> (8 * k));
	shs_buf_put(b, le, sizeof(le));
}

static void put_u32(shs_buf *b, uint32_t v)
{
	uint8_t le[sizeof(v)];

	for (size_t k = 0; k < sizeof(v); k++)
		le[k] = (uint8_t)(v >> (8 * k));
	shs_buf_put(b, le, sizeof(le));
}

static void put_i64(shs_buf *b, int64_t v)
{
	put_u64(b, (uint64_t)v);
}

static void put_bool(shs_buf *b, bool v)
{
	uint8_t byte = v;

	shs_buf_put(b, &byte, 1);
}

/* Bytes as a u64 length and the bytes. */
static void put_bytes(shs_buf *b, const void *p, size_t n)
{
	put_u64(b, n);
	shs_buf_put(b, p, n);
}

/* A string that may be absent: a presence flag, then length and bytes. */
static void put_str(shs_buf *b, const char *s)
{
	put_bool(b, s != NULL);
	if (s)
		put_bytes(b, s, strlen(s));
}

static void put_i64s(shs_buf *b, const shs_i64s *l)
{
	put_u32(b, l->n);
	for (uint32_t k = 0; k < l->n; k++)
		put_i64(b, l->v[k]);
}

static void put_layout(shs_buf *b, const shs_layout *l)
{
	put_bool(b, l != NULL);
	if (!l)
		return;
	put_i64s(b, &l->minor_to_major);
	put_u32(b, l->n_tiles);
	for (uint32_t t = 0; t < l->n_tiles; t++)
		put_i64s(b, &l->tiles[t]);
	put_i64(b, l->element_size_in_bits);
	put_i64(b, l->memory_space);
}

/* Type, dims, dynamic flags, layout and tuple elements; false when nested too deep. */
static bool put_shape(shs_buf *b, const shs_shape *s, unsigned depth)
{
	if (depth > SHS_MAX_NESTING)
		return false;
	put_u32(b, (uint32_t)s->type);
	put_u32(b, s->rank);
	for (uint32_t d = 0; d < s->rank; d++)
		put_i64(b, s->dims[d]);
	put_bool(b, s->dynamic != NULL);
	for (uint32_t d = 0; s->dynamic && d < s->rank; d++)
		put_bool(b, s->dynamic[d]);
	put_layout(b, s->layout);
	put_u32(b, s->n_tuple);
	for (uint32_t k = 0; k < s->n_tuple; k++)
		if (!put_shape(b, &s->tuple[k], depth + 1))
			return false;
	return true;
}

/* A constant's value (absent, elided, bytes, tuple elements); false when nested too deep. */
static bool put_literal(shs_buf *b, const shs_literal *l, unsigned depth)
{
	if (depth > SHS_MAX_NESTING)
		return false;
	put_bool(b, l != NULL);
	if (!l)
		return true;
	put_bool(b, l->elided);
	put_bytes(b, l->data, l->data ? l->size : 0);
	put_u32(b, l->n_tuple);
	for (uint32_t k = 0; k < l->n_tuple; k++)
		if (!put_literal(b, &l->tuple[k], depth + 1))
			return false;
	return true;
}

static void put_dot(shs_buf *b, const shs_dot_dims *d)
{
	put_bool(b, d != NULL);
	if (!d)
		return;
	put_i64s(b, &d->lhs_contracting);
	put_i64s(b, &d->rhs_contracting);
	put_i64s(b, &d->lhs_batch);
	put_i64s(b, &d->rhs_batch);
}

static void put_gather(shs_buf *b, const shs_gather_dims *g, const shs_i64s *slice_sizes)
{
	put_bool(b, g != NULL);
	if (g) {
		put_i64s(b, &g->offset_dims);
		put_i64s(b, &g->collapsed_slice_dims);
		put_i64s(b, &g->start_index_map);
		put_i64(b, g->index_vector_dim);
		put_i64s(b, &g->operand_batching_dims);
		put_i64s(b, &g->start_indices_batching_dims);
	}
	put_i64s(b, slice_sizes);
}

static void put_scatter(shs_buf *b, const shs_scatter_dims *s)
{
	put_bool(b, s != NULL);
	if (!s)
		return;
	put_i64s(b, &s->update_window_dims);
	put_i64s(b, &s->inserted_window_dims);
	put_i64s(b, &s->scatter_dims_to_operand_dims);
	put_i64(b, s->index_vector_dim);
	put_i64s(b, &s->input_batching_dims);
	put_i64s(b, &s->scatter_indices_batching_dims);
}

static void put_conv(shs_buf *b, const shs_conv_dims *c)
{
	put_bool(b, c != NULL);
	if (!c)
		return;
	put_i64(b, c->input_batch);
	put_i64(b, c->input_feature);
	put_i64s(b, &c->input_spatial);
	put_i64(b, c->kernel_input_feature);
	put_i64(b, c->kernel_output_feature);
	put_i64s(b, &c->kernel_spatial);
	put_i64(b, c->output_batch);
	put_i64(b, c->output_feature);
	put_i64s(b, &c->output_spatial);
}

/* Slices, window and padding: the per-dimension attributes. */
static void put_per_dim(shs_buf *b, const shs_instr *i)
{
	put_u32(b, i->n_slice);
	for (uint32_t k = 0; k < i->n_slice; k++) {
		put_i64(b, i->slice[k].start);
		put_i64(b, i->slice[k].limit);
		put_i64(b, i->slice[k].stride);
	}
	put_i64s(b, &i->dynamic_slice_sizes);
	put_bool(b, i->window != NULL);
	for (uint32_t k = 0; i->window && k < i->n_window; k++) {
		const shs_window_dim *w = &i->window[k];

		put_i64(b, w->size);
		put_i64(b, w->stride);
		put_i64(b, w->pad_low);
		put_i64(b, w->pad_high);
		put_i64(b, w->window_dilation);
		put_i64(b, w->base_dilation);
		put_bool(b, w->reversal);
	}
	put_bool(b, i->padding != NULL);
	for (uint32_t k = 0; i->padding && k < i->n_padding; k++) {
		put_i64(b, i->padding[k].low);
		put_i64(b, i->padding[k].high);
		put_i64(b, i->padding[k].interior);
	}
}

/* The scalar and string attributes. channel_id only counts as present or absent: its value
 * is an identity, like an id, and differs between otherwise identical layers. */
static void put_scalars(shs_buf *b, const shs_instr *i)
{
	put_i64(b, i->parameter_number);
	put_i64(b, i->tuple_index);
	put_i64s(b, &i->dimensions);
	put_u32(b, (uint32_t)i->exponent_bits);
	put_u32(b, (uint32_t)i->mantissa_bits);
	put_str(b, i->comparison_direction);
	put_str(b, i->comparison_type);
	put_str(b, i->custom_call_target);
	put_bool(b, i->custom_call_has_side_effect);
	put_str(b, i->fusion_kind);
	put_bytes(b, i->backend_config.data, i->backend_config.data ? i->backend_config.len : 0);
	put_bool(b, i->channel_id != 0);
	put_i64(b, i->feature_group_count ? i->feature_group_count : 1); /* absent means 1 */
	put_i64(b, i->batch_group_count ? i->batch_group_count : 1);
	put_u32(b, i->n_precision);
	for (uint32_t k = 0; k < i->n_precision; k++)
		put_u32(b, (uint32_t)i->precision[k]);
	put_bool(b, i->is_stable);
	put_bool(b, i->indices_are_sorted);
	put_bool(b, i->unique_indices);
	put_bool(b, i->largest);
	put_u32(b, i->n_raw_attrs);
	for (uint32_t k = 0; k < i->n_raw_attrs; k++) {
		put_str(b, i->raw_attrs[k].name);
		put_str(b, i->raw_attrs[k].value);
	}
}

/* ---- Hashing ---- */

typedef struct hasher {
	const shs_module *m;
	shs_err *e;
	shs_buf enc;
	uint64_t *comp_hash;   /* m->n_comps entries: the hashes computed so far */
	bool *done;            /* which entries of comp_hash are set */
	uint64_t *scratch;     /* instruction hashes of the computation at hand */
} hasher;

static int not_verified(const hasher *h, const shs_computation *c, const shs_instr *i,
			const char *what)
{
	return shs_seterr(h->e, SHS_EINVAL, "hash: computation '%s', instruction '%s': %s "
			  "(verify the module first)", c->name ? c->name : "(unnamed)",
			  i && i->name ? i->name : "(unnamed)", what);
}

/* The hash of instruction j of c, whose operands' hashes are instr_hash[0..j). */
static int hash_instr(hasher *h, const shs_computation *c, uint32_t j, const uint64_t *instr_hash,
		      uint64_t *out)
{
	const shs_instr *i = c->instrs[j];
	shs_buf *b = &h->enc;

	shs_buf_reset(b);
	put_str(b, shs_opcode_name(i->op));
	if (!put_shape(b, &i->shape, 0) || !put_literal(b, i->literal, 0))
		return not_verified(h, c, i, "shape or literal nests too deep");
	put_scalars(b, i);
	put_dot(b, i->dot);
	put_gather(b, i->gather, &i->gather_slice_sizes);
	put_scatter(b, i->scatter);
	put_conv(b, i->conv);
	put_per_dim(b, i);
	put_u32(b, i->n_operands);
	for (uint32_t k = 0; k < i->n_operands; k++) {
		if (i->operands[k] >= j)
			return not_verified(h, c, i, "an operand comes after its user");
		put_u64(b, instr_hash[i->operands[k]]);
	}
	put_u32(b, i->n_called);
	for (uint32_t k = 0; k < i->n_called; k++) {
		uint32_t callee = i->called[k];

		if (callee >= h->m->n_comps || !h->done[callee])
			return not_verified(h, c, i, "a called computation is not before its caller");
		put_u64(b, h->comp_hash[callee]);
	}
	if (b->oom)
		return shs_seterr(h->e, SHS_ENOMEM, "hash: out of memory");
	*out = XXH3_64bits_withSeed(b->data, b->len, SHS_HASH_V1);
	return SHS_OK;
}

/* Hashes every instruction of c into instr_hash[c->n_instrs], then c itself into *out. */
static int hash_comp(hasher *h, const shs_computation *c, uint64_t *instr_hash, uint64_t *out)
{
	shs_buf *b = &h->enc;
	int rc;

	if (!c->n_instrs || c->root >= c->n_instrs)
		return shs_seterr(h->e, SHS_EINVAL, "hash: computation '%s' has no root (verify "
				  "the module first)", c->name ? c->name : "(unnamed)");
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		rc = hash_instr(h, c, j, instr_hash, &instr_hash[j]);
		if (rc != SHS_OK)
			return rc;
	}
	shs_buf_reset(b);
	put_u32(b, c->n_instrs);
	for (uint32_t j = 0; j < c->n_instrs; j++)
		put_u64(b, instr_hash[j]);
	put_u32(b, c->root);
	put_str(b, c->execution_thread);
	if (b->oom)
		return shs_seterr(h->e, SHS_ENOMEM, "hash: out of memory");
	*out = XXH3_64bits_withSeed(b->data, b->len, SHS_HASH_V1);
	return SHS_OK;
}

static uint32_t max_instrs(const shs_module *m, const shs_computation *extra)
{
	uint32_t n = extra ? extra->n_instrs : 0;

	for (uint32_t c = 0; c < m->n_comps; c++)
		if (m->comps[c]->n_instrs > n)
			n = m->comps[c]->n_instrs;
	return n;
}

static int hasher_init(hasher *h, const shs_module *m, const shs_computation *extra, shs_err *e)
{
	size_t n = max_instrs(m, extra);

	*h = (hasher){ .m = m, .e = e };
	h->comp_hash = calloc(m->n_comps ? m->n_comps : 1, sizeof(*h->comp_hash));
	h->done = calloc(m->n_comps ? m->n_comps : 1, sizeof(*h->done));
	h->scratch = malloc((n ? n : 1) * sizeof(*h->scratch));
	if (!h->comp_hash || !h->done || !h->scratch)
		return shs_seterr(e, SHS_ENOMEM, "hash: out of memory");
	return SHS_OK;
}

static void hasher_free(hasher *h)
{
	shs_buf_free(&h->enc);
	free(h->comp_hash);
	free(h->done);
	free(h->scratch);
}

/* Marks in want[] every computation that c calls, directly or not. */
static int mark_callees(const hasher *h, const shs_computation *c, bool *want)
{
	const shs_module *m = h->m;
	uint32_t *stack = malloc(((size_t)m->n_comps + 1) * sizeof(*stack)), depth = 0;
	const shs_computation *at = c;

	if (!stack)
		return shs_seterr(h->e, SHS_ENOMEM, "hash: out of memory");
	for (;;) {
		for (uint32_t j = 0; j < at->n_instrs; j++) {
			const shs_instr *i = at->instrs[j];

			for (uint32_t k = 0; k < i->n_called; k++) {
				uint32_t callee = i->called[k];

				if (callee >= m->n_comps) {
					free(stack);
					return not_verified(h, at, i, "a called computation is out "
							    "of range");
				}
				if (!want[callee]) {
					want[callee] = true;
					stack[depth++] = callee;
				}
			}
		}
		if (!depth)
			break;
		at = m->comps[stack[--depth]];
	}
	free(stack);
	return SHS_OK;
}

int shs_comp_hash(const shs_module *m, const shs_computation *c, uint64_t *out_instr,
		  uint64_t *out_comp, shs_err *e)
{
	hasher h;
	bool *want = NULL;
	int rc;

	if (!m || !c || !out_instr || !out_comp)
		return shs_seterr(e, SHS_EINVAL, "hash: no module, computation or output");
	rc = hasher_init(&h, m, c, e);

	if (rc != SHS_OK)
		goto out_free;
	want = calloc(m->n_comps ? m->n_comps : 1, sizeof(*want));
	if (!want) {
		rc = shs_seterr(e, SHS_ENOMEM, "hash: out of memory");
		goto out_free;
	}
	rc = mark_callees(&h, c, want);
	/* Callees come before their callers, so index order hashes every callee first. */
	for (uint32_t k = 0; rc == SHS_OK && k < m->n_comps; k++) {
		if (!want[k])
			continue;
		rc = hash_comp(&h, m->comps[k], h.scratch, &h.comp_hash[k]);
		h.done[k] = rc == SHS_OK;
	}
	if (rc == SHS_OK)
		rc = hash_comp(&h, c, out_instr, out_comp);
out_free:
	free(want);
	hasher_free(&h);
	return rc;
}

int shs_module_hash(const shs_module *m, uint64_t *out, shs_err *e)
{
	hasher h;
	int rc;

	if (!m || !out)
		return shs_seterr(e, SHS_EINVAL, "hash: no module or output");
	rc = hasher_init(&h, m, NULL, e);

	for (uint32_t k = 0; rc == SHS_OK && k < m->n_comps; k++) {
		rc = hash_comp(&h, m->comps[k], h.scratch, &h.comp_hash[k]);
		h.done[k] = rc == SHS_OK;
		out[k] = h.comp_hash[k];
	}
	hasher_free(&h);
	return rc;
}
