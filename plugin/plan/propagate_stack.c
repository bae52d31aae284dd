/* What the loop that reads a scanned layer's saved values (the backward pass) wants of them,
 * asked of the layer that makes them: one computation, one answer for saved activations. */
#include <stdlib.h>
#include <string.h>

#include "propagate_internal.h"

/* How many reshapes that keep the elements (a slice's unit layer dim added or dropped) a saved
 * value may pass through between its layer and its stack. */
enum { STACK_HOPS = 4 };

/* Whether instruction v of comp only regroups its operand's elements. */
static bool same_elements(const shs_computation *comp, const shs_instr *v)
{
	return (v->op == SHS_OP_RESHAPE || v->op == SHS_OP_BITCAST) && v->n_operands == 1 &&
	       v->shape.type != SHS_TUPLE &&
	       shs_shape_elements(&comp->instrs[v->operands[0]]->shape) ==
		       shs_shape_elements(&v->shape);
}

/* The get-tuple-element of tuple-shaped t (in comp, users u) that reads element k, or
 * UINT32_MAX. */
static uint32_t element_of(const shs_computation *comp, const shs_users *u, uint32_t t,
			   uint32_t k)
{
	for (uint32_t a = u->first[t]; a < u->first[t + 1]; a++) {
		const shs_instr *g = comp->instrs[u->list[a]];
		if (g->op == SHS_OP_GET_TUPLE_ELEMENT && g->tuple_index == (int64_t)k)
			return u->list[a];
	}
	return UINT32_MAX;
}

/* The root element of loop body `body` that value v is written into: v, through reshapes that
 * keep its elements, is the update of a dynamic-update-slice of the body's own carried
 * element j (its stack) that is the root's element j. j, or UINT32_MAX. */
static uint32_t stack_slot(const shs__prop *x, uint32_t body, uint32_t v, uint32_t depth)
{
	const shs_computation *comp = x->m->comps[body];
	const shs_instr *root = comp->instrs[comp->root];
	const shs_users *u = &x->users[body];

	for (uint32_t a = u->first[v]; a < u->first[v + 1]; a++) {
		uint32_t w = u->list[a];
		const shs_instr *d = comp->instrs[w], *stack;
		if (same_elements(comp, d) && depth) {
			uint32_t j = stack_slot(x, body, w, depth - 1);
			if (j != UINT32_MAX)
				return j;
			continue;
		}
		if (d->op != SHS_OP_DYNAMIC_UPDATE_SLICE || d->n_operands < 2 || d->operands[1] != v)
			continue;
		stack = comp->instrs[d->operands[0]];
		if (stack->op != SHS_OP_GET_TUPLE_ELEMENT || stack->tuple_index < 0 ||
		    comp->instrs[stack->operands[0]]->op != SHS_OP_PARAMETER ||
		    root->op != SHS_OP_TUPLE || (uint64_t)stack->tuple_index >= root->n_operands ||
		    root->operands[stack->tuple_index] != w)
			continue;
		return (uint32_t)stack->tuple_index;
	}
	return UINT32_MAX;
}

/* What the readers of a slice of loop body b's carried element k want of it: a
 * dynamic-slice of the element, through reshapes that keep its elements, to a value of the
 * dims of shape (as its users want it); or NULL. */
static const shs_pspec *slice_want(shs__prop *x, uint32_t b, uint32_t k, const shs_shape *shape)
{
	const shs_computation *comp = x->m->comps[b];
	const shs_users *u = &x->users[b];

	for (uint32_t p = 0; p < comp->n_instrs; p++) {
		uint32_t g;
		if (comp->instrs[p]->op != SHS_OP_PARAMETER ||
		    (g = element_of(comp, u, p, k)) == UINT32_MAX)
			continue;
		for (uint32_t a = u->first[g]; a < u->first[g + 1]; a++) {
			uint32_t v = u->list[a];
			const shs_pspec *want;
			if (comp->instrs[v]->op != SHS_OP_DYNAMIC_SLICE)
				continue;
			for (uint32_t hop = 0; hop < STACK_HOPS && u->first[v + 1] - u->first[v] == 1 &&
					       same_elements(comp, comp->instrs[u->list[u->first[v]]]);
			     hop++)
				v = u->list[u->first[v]];
			if (shs__same_dims(&comp->instrs[v]->shape, shape) &&
			    (want = shs__user_req(x, b, v)))
				return want;
		}
	}
	return NULL;
}

/* What a later loop wants of the slices of element j of loop i (of computation c), a stack the
 * loop fills from zeros and a later loop reads: the loop's result element j is (element k2 of)
 * the init tuple of that loop. NULL when there is none. */
static const shs_pspec *reader_want(shs__prop *x, uint32_t c, uint32_t i, uint32_t j,
				    const shs_shape *shape)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *w = comp->instrs[i], *init = comp->instrs[w->operands[0]];
	const shs_users *u = &x->users[c];
	uint32_t g;

	if (init->op != SHS_OP_TUPLE || j >= init->n_operands ||
	    !x->free_instr[c][init->operands[j]] || (g = element_of(comp, u, i, j)) == UINT32_MAX)
		return NULL;
	for (uint32_t a = u->first[g]; a < u->first[g + 1]; a++) {
		uint32_t t = u->list[a];
		if (comp->instrs[t]->op != SHS_OP_TUPLE)
			continue;
		for (uint32_t b = u->first[t]; b < u->first[t + 1]; b++) {
			const shs_instr *w2 = comp->instrs[u->list[b]];
			if (w2->op != SHS_OP_WHILE || w2->n_called < 2 || w2->operands[0] != t)
				continue;
			for (uint32_t k2 = 0; k2 < comp->instrs[t]->n_operands; k2++) {
				const shs_pspec *want;
				if (comp->instrs[t]->operands[k2] == g &&
				    (want = slice_want(x, w2->called[0], k2, shape)))
					return want;
			}
		}
	}
	return NULL;
}

void shs__stack_wants(shs__prop *x, uint32_t c, uint32_t i, shs_pspec *want, uint32_t n)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	uint64_t loop = x->loop_of[c];

	if (!want || !loop || in->shape.type != SHS_TUPLE || (uint32_t)in->shape.n_tuple != n)
		return;
	for (uint32_t k = 0; k < n; k++) {
		const shs_shape *shape = &in->shape.tuple[k];
		const shs_pspec *reader;
		uint32_t g = element_of(comp, &x->users[c], i, k), j;
		if (shape->type == SHS_TUPLE || g == UINT32_MAX ||
		    (j = stack_slot(x, c, g, STACK_HOPS)) == UINT32_MAX)
			continue;
		reader = reader_want(x, (uint32_t)(loop >> 32), (uint32_t)loop - 1u, j, shape);
		if (reader && reader->rank == shape->rank)
			want[k] = *reader;
	}
}
