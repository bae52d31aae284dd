/* What the optimizer's update wants of the layers that make the gradients: the results and
 * loop carries it pins, and which values only leave their layer (off its path). */
#include <stdlib.h>
#include <string.h>

#include "propagate_internal.h"

/* How many conversions or reshapes a value leaving its layer may pass through. */
enum { LEAVE_HOPS = 4 };

/* Whether what i makes only leaves computation c, a layer (not the entry), for work that does
 * not wait for it: its users are root elements its caller sends on only to such work (ext_off:
 * the gradients a layer returns to the optimizer's update), dynamic-update-slices into stacks
 * only the root reads (what a scanned layer keeps for later), or conversions, reshapes and
 * Sharding constraints of it that only leave (depth levels more). So its collectives run
 * beside the rest of the step: a weight gradient's reduction overlaps the backward pass (DDP's
 * buckets; XLA's asynchronous collectives, placed by its latency-hiding scheduler), as the
 * evaluator overlaps it. */
static bool leaves(const shs__prop *x, uint32_t c, uint32_t i, uint32_t depth)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *root = comp->instrs[comp->root];
	const shs_users *u = &x->users[c];

	if (c == x->m->entry || u->first[i] == u->first[i + 1])
		return false;
	for (uint32_t k = u->first[i]; k < u->first[i + 1]; k++) {
		uint32_t v = u->list[k];
		shs_opcode op = comp->instrs[v]->op;
		if (v == comp->root) {
			if (!x->ext_off[c] || root->op != SHS_OP_TUPLE)
				return false;
			for (uint32_t j = 0, off = 0; j < root->n_operands; j++) {
				if (root->operands[j] == i && !x->ext_off[c][off])
					return false;
				off += shs_shape_leaves(&comp->instrs[root->operands[j]]->shape);
			}
		} else if (op == SHS_OP_CONVERT || op == SHS_OP_RESHAPE || op == SHS_OP_BITCAST ||
			   op == SHS_OP_COPY || shs_is_sharding_constraint(comp->instrs[v])) {
			if (!depth || !leaves(x, c, v, depth - 1))
				return false;
		} else if (op != SHS_OP_DYNAMIC_UPDATE_SLICE || comp->instrs[v]->operands[0] == i ||
			   u->first[v + 1] - u->first[v] != 1 ||
			   u->list[u->first[v]] != comp->root) {
			return false;
		}
	}
	return true;
}

/* What user v of computation c is pinned to by the update: its own pin (the entry's update),
 * or, when its only user is c's root at a leaf its caller marks off the path as pinned (a
 * micro-batch loop's gradient sum, carried to the update), that leaf's requirement; or NULL. */
static const shs_pspec *user_pin(const shs__prop *x, uint32_t c, uint32_t v)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *root = comp->instrs[comp->root];
	const shs_users *u = &x->users[c];

	if (x->pinned[c] && x->pinned[c][v])
		return &x->hints[c][v];
	if (!x->ext_off[c] || !x->ext_req[c] || root->op != SHS_OP_TUPLE ||
	    u->first[v + 1] - u->first[v] != 1 || u->list[u->first[v]] != comp->root)
		return NULL;
	for (uint32_t k = 0, off = 0; k < root->n_operands; k++) {
		if (root->operands[k] == v)
			return x->ext_off[c][off] ? &x->ext_req[c][off] : NULL;
		off += shs_shape_leaves(&comp->instrs[root->operands[k]]->shape);
	}
	return NULL;
}

const shs_pspec *shs__pinned_element(const shs__prop *x, uint32_t c, uint32_t i, uint32_t k)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_users *u = &x->users[c];
	const shs_pspec *want = NULL;

	if (!x->pull)
		return NULL;
	for (uint32_t j = u->first[i]; j < u->first[i + 1]; j++) {
		uint32_t g = u->list[j];
		if (comp->instrs[g]->op != SHS_OP_GET_TUPLE_ELEMENT ||
		    comp->instrs[g]->tuple_index != k || comp->instrs[g]->shape.type == SHS_TUPLE)
			continue;
		for (uint32_t v = u->first[g]; v < u->first[g + 1]; v++) {
			const shs_instr *in = comp->instrs[u->list[v]];
			const shs_pspec *h = user_pin(x, c, u->list[v]);
			if (!h) {
				if (in->op != SHS_OP_REDUCE && !shs_opcode_is_elementwise(in->op))
					return NULL;
			} else if (!shs_opcode_is_elementwise(in->op) ||
				   h->rank != comp->instrs[g]->shape.rank ||
				   (want && !shs_spec_equal(want, h))) {
				return NULL;
			} else {
				want = h;
			}
		}
	}
	return want;
}

/* Whether every get-tuple-element of element k of call i's result only leaves computation c
 * (shs__leaves_layer): nothing after the call in c waits for it. */
static bool element_leaves(const shs__prop *x, uint32_t c, uint32_t i, uint32_t k)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_users *u = &x->users[c];
	bool any = false;

	for (uint32_t j = u->first[i]; j < u->first[i + 1]; j++) {
		uint32_t g = u->list[j];
		if (comp->instrs[g]->op != SHS_OP_GET_TUPLE_ELEMENT)
			return false;
		if (comp->instrs[g]->tuple_index != k)
			continue;
		if (!shs__leaves_layer(x, c, g))
			return false;
		any = true;
	}
	return any;
}

shs_pspec *shs__with_pinned(shs__prop *x, uint32_t c, uint32_t i, const shs_pspec *want,
			      uint32_t n, bool **off)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	shs_pspec *out = NULL;

	*off = NULL;
	if (want && (out = malloc(n * sizeof(*out))))
		memcpy(out, want, n * sizeof(*out));
	if (in->shape.type != SHS_TUPLE || (uint32_t)in->shape.n_tuple != n)
		return out; /* only a tuple of arrays: element k is leaf k */
	for (uint32_t k = 0; k < n; k++) {
		const shs_pspec *p = shs__pinned_element(x, c, i, k);
		if (p && p->rank != in->shape.tuple[k].rank)
			p = NULL;
		if (!p && !element_leaves(x, c, i, k))
			continue;
		if (!*off && !(*off = calloc(n, sizeof(**off))))
			break;
		(*off)[k] = true;
		if (!p)
			continue;
		if (!out && (out = calloc(n, sizeof(*out))))
			for (uint32_t j = 0; j < n; j++)
				shs_spec_replicated(&out[j], in->shape.tuple[j].rank);
		if (!out)
			break;
		out[k] = *p;
	}
	return out;
}

bool *shs__pinned_carry(const shs__prop *x, uint32_t c, uint32_t i, uint32_t n)
{
	const shs_shape *t = &x->m->comps[c]->instrs[i]->shape;
	bool *off = NULL;

	if (t->type != SHS_TUPLE || (uint32_t)t->n_tuple != n)
		return NULL;
	for (uint32_t k = 0; k < n; k++) {
		if (t->tuple[k].type == SHS_TUPLE || !shs__pinned_element(x, c, i, k))
			continue;
		if (!off && !(off = calloc(n, sizeof(*off))))
			return NULL;
		off[k] = true;
	}
	return off;
}

bool shs__leaves_layer(const shs__prop *x, uint32_t c, uint32_t i)
{
	return leaves(x, c, i, LEAVE_HOPS);
}
