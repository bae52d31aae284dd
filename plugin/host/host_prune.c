/* Candidates a strategy offers twice: one with the same shardings and collectives as another and
 * no lower FLOPs nor bytes can never be the cheaper, and is dropped. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "host_internal.h"

/* The choice a candidate is: its specs (each dim's axes, up to its rank) and collectives. */
static uint64_t spec_hash(uint64_t h, const shs_pspec *s)
{
	uint8_t buf[2 + SHS_PLUGIN_MAX_RANK * (1 + SHS_PLUGIN_MAX_AXES)];
	size_t n = 0;

	buf[n++] = (uint8_t)s->rank;
	buf[n++] = s->padded;
	for (uint32_t d = 0; d < s->rank && d < SHS_PLUGIN_MAX_RANK; d++) {
		uint8_t k = s->dims[d].n < SHS_PLUGIN_MAX_AXES ? s->dims[d].n : SHS_PLUGIN_MAX_AXES;

		buf[n++] = k;
		for (uint8_t a = 0; a < k; a++)
			buf[n++] = s->dims[d].axes[a];
	}
	return XXH3_64bits_withSeed(buf, n, h);
}

bool shs__host_same_spec(const shs_pspec *x, const shs_pspec *y)
{
	if (x->rank != y->rank || x->padded != y->padded)
		return false;
	for (uint32_t d = 0; d < x->rank && d < SHS_PLUGIN_MAX_RANK; d++) {
		if (x->dims[d].n != y->dims[d].n)
			return false;
		for (uint8_t a = 0; a < x->dims[d].n && a < SHS_PLUGIN_MAX_AXES; a++)
			if (x->dims[d].axes[a] != y->dims[d].axes[a])
				return false;
	}
	return true;
}

static uint64_t choice_hash(const shs_cand *c, uint32_t n_leaves)
{
	uint64_t h = c->n_colls;

	for (uint32_t k = 0; k < c->n_result; k++)
		h = spec_hash(h, &c->result[k]);
	for (uint32_t k = 0; k < n_leaves - c->n_result; k++)
		h = spec_hash(h, &c->operands[k]);
	for (uint32_t k = 0; k < c->n_colls; k++) {
		const shs_coll *x = &c->colls[k];
		uint64_t w[3] = { (uint64_t)(uint32_t)x->kind << 32 | x->axes_mask,
				  (uint64_t)x->overlappable, 0 };

		memcpy(&w[2], &x->bytes, sizeof(x->bytes));
		h = XXH3_64bits_withSeed(w, sizeof(w), h);
	}
	return h;
}

static bool same_choice(const shs_cand *x, const shs_cand *y, uint32_t n_leaves)
{
	if (x->n_result != y->n_result || x->n_colls != y->n_colls)
		return false;
	for (uint32_t k = 0; k < x->n_result; k++)
		if (!shs__host_same_spec(&x->result[k], &y->result[k]))
			return false;
	for (uint32_t k = 0; k < n_leaves - x->n_result; k++)
		if (!shs__host_same_spec(&x->operands[k], &y->operands[k]))
			return false;
	for (uint32_t k = 0; k < x->n_colls; k++) {
		const shs_coll *a = &x->colls[k], *b = &y->colls[k];
		if (a->kind != b->kind || a->axes_mask != b->axes_mask ||
		    a->overlappable != b->overlappable || a->bytes != b->bytes)
			return false;
	}
	return true;
}

static bool dominates(const shs_cand *x, const shs_cand *y)
{
	return x->flops <= y->flops && x->bytes <= y->bytes;
}

void shs__host_prune_strategy(shs_pemit *out)
{
	shs_cand *v = out->list->v + out->first;
	uint32_t n = out->list->n - out->first, cap = 4, keep = 0, *slot;
	uint64_t *hash;
	bool *dead;
	void *mem;

	if (n < SHS_HOST_PRUNE_MIN)
		return;
	while (cap < 2 * n)
		cap *= 2;
	/* one block: hashes, then slots, then the dead flags */
	mem = malloc(n * sizeof(*hash) + cap * sizeof(*slot) + n * sizeof(*dead));
	if (!mem) /* nothing is pruned: the candidates stay as offered */
		return;
	hash = mem;
	slot = (uint32_t *)(hash + n);
	dead = (bool *)(slot + cap);
	memset(slot, 0xff, cap * sizeof(*slot));
	memset(dead, 0, n * sizeof(*dead));
	for (uint32_t k = 0; k < n; k++) {
		uint32_t j = (uint32_t)(hash[k] = choice_hash(&v[k], out->v->n_leaves)) & (cap - 1);

		for (; slot[j] != UINT32_MAX && !dead[k]; j = (j + 1) & (cap - 1)) {
			uint32_t o = slot[j];
			if (hash[o] != hash[k] || !same_choice(&v[o], &v[k], out->v->n_leaves))
				continue;
			if (dominates(&v[k], &v[o]))
				v[o] = v[k]; /* the cheaper takes the place offered first */
			dead[k] = dominates(&v[k], &v[o]) || dominates(&v[o], &v[k]);
		}
		if (!dead[k])
			slot[j] = k;
	}
	for (uint32_t k = 0; k < n; k++)
		if (!dead[k])
			v[keep++] = v[k];
	out->list->n = out->first + keep;
	free(mem);
}

/* Copies candidate c (its block of specs, operand starts and label, and its collectives) into a;
 * false when out of memory. */
static bool copy_cand(shs_arena *a, shs_cand *c, uint32_t n_leaves)
{
	size_t specs = (size_t)n_leaves * sizeof(shs_pspec);
	size_t firsts = ((size_t)c->n_operands + 1) * sizeof(uint32_t);
	size_t len = strlen(c->label) + 1;
	uint8_t *block = shs_arena_alloc(a, specs + firsts + len);
	shs_coll *colls = c->n_colls ? shs_arena_alloc(a, c->n_colls * sizeof(*colls)) : NULL;

	if (!block || (c->n_colls && !colls))
		return false;
	memcpy(block, c->result, specs);
	memcpy(block + specs, c->operand_first, firsts);
	memcpy(block + specs + firsts, c->label, len);
	if (colls)
		memcpy(colls, c->colls, c->n_colls * sizeof(*colls));
	c->result = (shs_pspec *)block;
	c->operands = c->result + c->n_result;
	c->operand_first = (uint32_t *)(block + specs);
	c->label = (const char *)block + specs + firsts;
	c->colls = colls;
	return true;
}

void shs__host_compact(shs_cands *list, uint32_t n_leaves, size_t chunk)
{
	shs_arena *a = shs_arena_new(0);
	shs_cand *v = a ? shs_arena_alloc(a, list->n * sizeof(*v)) : NULL;

	if (!v) {
		shs_arena_free(a);
		return;
	}
	shs_arena_set_chunk(a, chunk);
	memcpy(v, list->v, list->n * sizeof(*v));
	for (uint32_t k = 0; k < list->n; k++)
		if (!copy_cand(a, &v[k], n_leaves)) {
			shs_arena_free(a); /* the list stays where it was */
			return;
		}
	shs_arena_free(list->a);
	list->a = a;
	list->v = v;
}
