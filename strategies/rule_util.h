/* Static inline helpers private to the per-op rule plugins (all but dot). */
#ifndef SHS_STRATEGIES_RULE_UTIL_H
#define SHS_STRATEGIES_RULE_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { RU_MAX_SPECS = 16 }; /* distinct candidates one PROPAGATE call proposes at most */

/* ---- Specs ---- */

/* Whether shape is an array whose rank a spec can describe. */
static inline bool ru_is_array(const shs_pshape *shape)
{
	return shape->type != SHS_PTYPE_TUPLE && shape->rank <= SHS_PLUGIN_MAX_RANK;
}

/* Whether s shards anything. */
static inline bool ru_sharded(const shs_pspec *s)
{
	return sc_axes_mask(s) != 0;
}

/* Removes the axes of dim d of s. */
static inline void ru_clear_dim(shs_pspec *s, uint32_t d)
{
	s->dims[d].n = 0;
}

/* *out = in made valid for the array shape: axes that do not exist or repeat are dropped, and so
 * is an axis that would make its dim not divide unless it still shrinks the dim's piece
 * (sc_split_shrinks): that one is kept and out is marked padded, as XLA's partitioner pads the
 * dim rather than replicating it (HloSharding::TileShape: CeilOfRatio per dim). False (out
 * untouched) when in is NULL, the ranks differ or shape is not an array. */
static inline bool ru_fit(const shs_pspec *in, const shs_pshape *shape, const shs_pmesh *mesh,
			  shs_pspec *out)
{
	uint32_t used = 0;
	shs_pspec s;

	if (!in || !ru_is_array(shape) || in->rank != shape->rank)
		return false;
	sc_replicated(shape->rank, &s);
	for (uint32_t d = 0; d < shape->rank; d++) {
		int64_t shards = 1;

		for (uint32_t k = 0; k < in->dims[d].n && k < SHS_PLUGIN_MAX_AXES; k++) {
			uint32_t a = in->dims[d].axes[k];
			int64_t size;

			if (a >= mesh->n_axes || (used & (1u << a)))
				continue;
			size = mesh->sizes[a];
			if (size < 1 || shards > INT64_MAX / size)
				continue;
			if (shape->dims[d] % (shards * size)) {
				if (!sc_split_shrinks(shape->dims[d], shards, size))
					continue;
				s.padded = true;
			}
			shards *= size;
			used |= 1u << a;
			s.dims[d].axes[s.dims[d].n++] = (uint8_t)a;
		}
	}
	*out = s;
	return true;
}

/* Whether s is valid for the array shape where every dim divides, or where ru_fit keeps it as it
 * is (a dim that does not divide but whose split shrinks its piece: XLA pads it). */
static inline bool ru_valid_padded(const shs_pspec *s, const shs_pshape *shape,
				   const shs_pmesh *mesh)
{
	shs_pspec fit;

	return ru_fit(s, shape, mesh, &fit) && sc_equal(&fit, s);
}

/* Appends axis a to dim d of s. */
static inline void ru_push_axis(shs_pspec *s, uint32_t d, uint32_t a)
{
	if (s->dims[d].n < SHS_PLUGIN_MAX_AXES)
		s->dims[d].axes[s->dims[d].n++] = (uint8_t)a;
}

/* ---- Small sets of distinct specs, in insertion order ---- */

typedef struct ru_specs {
	uint32_t n;
	shs_pspec v[RU_MAX_SPECS];
} ru_specs;

/* Adds s unless an equal spec is there or the set is full. */
static inline void ru_specs_add(ru_specs *l, const shs_pspec *s)
{
	for (uint32_t k = 0; k < l->n; k++)
		if (sc_equal(&l->v[k], s))
			return;
	if (l->n < RU_MAX_SPECS)
		l->v[l->n++] = *s;
}

/* ---- Shapes ---- */

/* Bytes of every array of s, unsharded. */
static inline double ru_full_bytes(const shs_host_api *api, const shs_pshape *s)
{
	double n = 1;

	if (s->type == SHS_PTYPE_TUPLE) {
		double sum = 0;

		for (uint32_t k = 0; k < s->n_tuple; k++)
			sum += ru_full_bytes(api, &s->tuple[k]);
		return sum;
	}
	for (uint32_t d = 0; d < s->rank; d++)
		n *= (double)s->dims[d];
	return n * api->elem_bytes(s->type);
}

/* The number of array leaves of s (depth first; 1 for an array). */
static inline uint32_t ru_leaf_count(const shs_pshape *s)
{
	uint32_t n = 0;

	if (s->type != SHS_PTYPE_TUPLE)
		return 1;
	for (uint32_t k = 0; k < s->n_tuple; k++)
		n += ru_leaf_count(&s->tuple[k]);
	return n;
}

/* Writes the array leaves of s (depth first) into out from index at; returns the next index. */
static inline uint32_t ru_leaf_shapes(const shs_pshape *s, const shs_pshape **out, uint32_t at)
{
	if (s->type != SHS_PTYPE_TUPLE) {
		out[at] = s;
		return at + 1;
	}
	for (uint32_t k = 0; k < s->n_tuple; k++)
		at = ru_leaf_shapes(&s->tuple[k], out, at);
	return at;
}

/* Whether a and b have the same rank and dims. */
static inline bool ru_same_dims(const shs_pshape *a, const shs_pshape *b)
{
	if (a->rank != b->rank)
		return false;
	for (uint32_t d = 0; d < a->rank; d++)
		if (a->dims[d] != b->dims[d])
			return false;
	return true;
}

/* ---- Emitting array candidates ---- */

/* A candidate being emitted: adds up its local bytes as specs are set. */
typedef struct ru_emit {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
	uint32_t c;
	double bytes;
} ru_emit;

/* Starts a candidate labelled label. */
static inline void ru_begin(ru_emit *e, const shs_pquery *q, shs_pemit *out,
			    const shs_host_api *api, const char *label)
{
	e->q = q;
	e->out = out;
	e->api = api;
	e->bytes = 0;
	e->c = api->candidate(out, label);
}

/* Sets leaf `leaf` (of array shape) of operand k (the result when k < 0) to s, marked padded
 * exactly when some dim does not divide, and adds its local bytes (the padded piece). */
static inline void ru_set_leaf(ru_emit *e, int k, uint32_t leaf, const shs_pshape *shape,
			       const shs_pspec *s)
{
	shs_pspec t = *s;

	sc_mark_padded(&t, shape, e->q->mesh);
	if (k < 0)
		e->api->set_result(e->out, e->c, leaf, &t);
	else
		e->api->set_operand(e->out, e->c, (uint32_t)k, leaf, &t);
	e->bytes += sc_local_bytes(e->api, shape, &t, e->q->mesh);
}

/* Sets leaf `leaf` (of array shape) of the result to s; NULL: replicated. */
static inline void ru_result_leaf(ru_emit *e, uint32_t leaf, const shs_pshape *shape,
				  const shs_pspec *s)
{
	if (!s || !ru_is_array(shape)) {
		e->bytes += ru_full_bytes(e->api, shape);
		return;
	}
	ru_set_leaf(e, -1, leaf, shape, s);
}

/* Sets the (array) result to s; NULL: replicated. */
static inline void ru_result(ru_emit *e, const shs_pspec *s)
{
	ru_result_leaf(e, 0, &e->q->instr->shape, s);
}

/* Sets leaf `leaf` (of array shape) of operand k to s; NULL: replicated. */
static inline void ru_operand_leaf(ru_emit *e, uint32_t k, uint32_t leaf, const shs_pshape *shape,
				   const shs_pspec *s)
{
	if (!s || !ru_is_array(shape)) {
		e->bytes += ru_full_bytes(e->api, shape);
		return;
	}
	ru_set_leaf(e, (int)k, leaf, shape, s);
}

/* Sets operand k (an array, or replicated whatever it is when s is NULL) to s. */
static inline void ru_operand(ru_emit *e, uint32_t k, const shs_pspec *s)
{
	ru_operand_leaf(e, k, 0, &e->q->instr->operands[k], s);
}

/* Finishes the candidate with its local FLOPs and the bytes added up. */
static inline void ru_end(ru_emit *e, double flops)
{
	e->api->set_cost(e->out, e->c, flops, e->bytes);
}

/* Emits the fully replicated candidate, labelled label: every operand and result whole on every
 * device. */
static inline void ru_replicated_as(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
				    const char *label)
{
	ru_emit e;

	ru_begin(&e, q, out, api, label);
	e.bytes += ru_full_bytes(api, &q->instr->shape);
	for (uint32_t k = 0; k < q->instr->n_operands; k++)
		e.bytes += ru_full_bytes(api, &q->instr->operands[k]);
	ru_end(&e, 0);
}

static inline void ru_replicated(const shs_pquery *q, shs_pemit *out, const shs_host_api *api)
{
	ru_replicated_as(q, out, api, "replicated");
}

/* Writes "prefix [spec]" (just "[spec]" when prefix is "") into buf (SC_LABEL_MAX bytes,
 * truncated). */
static inline void ru_label(char *buf, const char *prefix, const shs_pspec *s,
			    const shs_pmesh *mesh)
{
	size_t len = strlen(prefix);

	if (len > SC_LABEL_MAX / 2)
		len = SC_LABEL_MAX / 2;
	memcpy(buf, prefix, len);
	if (len)
		buf[len++] = ' ';
	sc_format_spec(buf + len, SC_LABEL_MAX - len, s, mesh);
}

/* Appends str to the label in buf (SC_LABEL_MAX bytes, truncated). */
static inline void ru_append(char *buf, const char *str)
{
	size_t len = strnlen(buf, SC_LABEL_MAX - 1), n = strlen(str);

	if (n > SC_LABEL_MAX - 1 - len)
		n = SC_LABEL_MAX - 1 - len;
	memcpy(buf + len, str, n);
	buf[len + n] = '\0';
}

/* The number of elements of an array shape, as a double. */
static inline double ru_elems(const shs_pshape *s)
{
	double n = 1;

	for (uint32_t d = 0; d < s->rank; d++)
		n *= (double)s->dims[d];
	return n;
}

#endif
