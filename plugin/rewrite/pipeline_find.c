/* The layer loops of a scanned step: whiles whose body slices its stacks at the trip's layer,
 * calls the layer once, and writes or carries what it returns. */
#include <string.h>

#include "analysis.h"
#include "pipeline_internal.h"

/* in, through reshapes and bitcasts of one operand. */
static const shs_instr *through_views(const shs_computation *c, const shs_instr *in)
{
	while ((in->op == SHS_OP_RESHAPE || in->op == SHS_OP_BITCAST) && in->n_operands == 1)
		in = c->instrs[in->operands[0]];
	return in;
}

/* The state element in reads (a get-tuple-element of the body's parameter), or -1. */
static int elem_of(const shs_computation *c, const shs_instr *in)
{
	if (in->op != SHS_OP_GET_TUPLE_ELEMENT || in->n_operands != 1 || in->tuple_index < 0 ||
	    c->instrs[in->operands[0]]->op != SHS_OP_PARAMETER)
		return -1;
	return (int)in->tuple_index;
}

/* Whether in is the trip's layer: the counter (forward) or a constant minus it (reverse). */
static bool layer_index(const shs_computation *c, const shs_instr *in, int counter, bool *reverse)
{
	if (elem_of(c, in) == counter) {
		*reverse = false;
		return true;
	}
	if (in->op == SHS_OP_SUBTRACT && in->n_operands == 2 &&
	    c->instrs[in->operands[0]]->op == SHS_OP_CONSTANT &&
	    elem_of(c, c->instrs[in->operands[1]]) == counter) {
		*reverse = true;
		return true;
	}
	return false;
}

/* Whether the start indices of in (from operand `first` on) are the trip's layer, then
 * constants; the direction agrees with *reverse once it is known (*seen). */
static bool at_layer(const shs_computation *c, const shs_instr *in, uint32_t first, int counter,
		     bool *reverse, bool *seen)
{
	bool rev;

	if (in->n_operands <= first ||
	    !layer_index(c, c->instrs[in->operands[first]], counter, &rev) ||
	    (*seen && rev != *reverse))
		return false;
	*reverse = rev;
	*seen = true;
	for (uint32_t k = first + 1; k < in->n_operands; k++)
		if (c->instrs[in->operands[k]]->op != SHS_OP_CONSTANT)
			return false;
	return true;
}

/* The element incremented by one each trip, or -1. */
static int counter_of(const shs_computation *body, const shs_instr *root)
{
	for (uint32_t k = 0; k < root->n_operands; k++) {
		const shs_instr *r = body->instrs[root->operands[k]];
		if (r->op == SHS_OP_ADD && r->n_operands == 2 &&
		    elem_of(body, body->instrs[r->operands[0]]) == (int)k &&
		    body->instrs[r->operands[1]]->op == SHS_OP_CONSTANT)
			return (int)k;
	}
	return -1;
}

/* The one call of body, or NULL. */
static const shs_instr *the_call(const shs_computation *body, uint32_t *at)
{
	const shs_instr *call = NULL;

	for (uint32_t i = 0; i < body->n_instrs; i++)
		if (body->instrs[i]->op == SHS_OP_CALL) {
			if (call)
				return NULL;
			call = body->instrs[i];
			*at = i;
		}
	return call && call->n_called == 1 ? call : NULL;
}

/* Element k of the state from the root's operand r: kept, counted, carried or written. */
static bool classify(const shs_computation *body, const shs_instr *r, uint32_t k, uint32_t call,
		     int counter, pp_loop *l, bool *seen)
{
	const shs_instr *u;

	l->out[k] = -1;
	if ((int)k == counter) {
		l->kind[k] = PP_COUNTER;
		return true;
	}
	if (elem_of(body, r) == (int)k) {
		l->kind[k] = PP_KEPT;
		return true;
	}
	if (r->op == SHS_OP_GET_TUPLE_ELEMENT && r->n_operands == 1 && r->operands[0] == call) {
		l->kind[k] = PP_CARRY;
		l->out[k] = (int32_t)r->tuple_index;
		l->carry = k;
		return true;
	}
	if (r->op != SHS_OP_DYNAMIC_UPDATE_SLICE || r->n_operands < 3 ||
	    elem_of(body, body->instrs[r->operands[0]]) != (int)k ||
	    !at_layer(body, r, 2, counter, &l->reverse, seen))
		return false;
	u = through_views(body, body->instrs[r->operands[1]]);
	if (u->op != SHS_OP_GET_TUPLE_ELEMENT || u->n_operands != 1 || u->operands[0] != call)
		return false;
	l->kind[k] = PP_WRITTEN;
	l->out[k] = (int32_t)u->tuple_index;
	return true;
}

/* The layer's operand a: the carry, or the layer's slice of a kept stack. */
static bool argument(const shs_computation *body, const shs_instr *a, uint32_t q, int counter,
		     pp_loop *l, bool *seen)
{
	int k;

	a = through_views(body, a);
	if ((k = elem_of(body, a)) >= 0 && l->kind[k] == PP_CARRY) {
		l->arg[q] = (uint32_t)k;
		return true;
	}
	if (a->op != SHS_OP_DYNAMIC_SLICE || a->n_operands < 2 ||
	    (k = elem_of(body, body->instrs[a->operands[0]])) < 0 || l->kind[k] != PP_KEPT ||
	    !at_layer(body, a, 1, counter, &l->reverse, seen))
		return false;
	l->arg[q] = (uint32_t)k;
	l->sliced[k] = true;
	return true;
}

/* Whether while w of computation c is a layer loop; fills *l. */
static bool layer_loop(const shs_module *m, uint32_t c, uint32_t w, pp_loop *l)
{
	const shs_instr *in = m->comps[c]->instrs[w], *root, *call;
	const shs_computation *body;
	uint32_t at = 0, carries = 0;
	bool seen = false;
	int counter;

	memset(l, 0, sizeof(*l));
	if (in->op != SHS_OP_WHILE || in->n_called != 2 || in->called[0] >= m->n_comps ||
	    !shs_while_trip_count(m, m->comps[c], in, &l->trips) || l->trips < 1)
		return false;
	body = m->comps[in->called[0]];
	root = body->instrs[body->root];
	if (root->op != SHS_OP_TUPLE || root->n_operands > PP_MAX_STATE ||
	    !(call = the_call(body, &at)) || call->n_operands > PP_MAX_STATE ||
	    (counter = counter_of(body, root)) < 0)
		return false;
	l->comp = c;
	l->instr = w;
	l->body = in->called[0];
	l->cond = in->called[1];
	l->layer = call->called[0];
	l->call = at;
	l->n = root->n_operands;
	l->n_args = call->n_operands;
	for (uint32_t k = 0; k < l->n; k++) {
		if (!classify(body, body->instrs[root->operands[k]], k, at, counter, l, &seen))
			return false;
		carries += l->kind[k] == PP_CARRY;
	}
	if (carries != 1)
		return false;
	for (uint32_t q = 0; q < call->n_operands; q++)
		if (!argument(body, body->instrs[call->operands[q]], q, counter, l, &seen))
			return false;
	/* every kept element is a stack the layer reads: nothing else rides along */
	for (uint32_t k = 0; k < l->n; k++)
		if (l->kind[k] == PP_KEPT && !l->sliced[k])
			return false;
	return seen;
}

int pp_find(const shs_module *m, uint32_t c, pp_loop *fwd, pp_loop *bwd, shs_err *e)
{
	const shs_computation *comp = m->comps[c];
	uint32_t found = 0;
	pp_loop l;

	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		if (comp->instrs[i]->op != SHS_OP_WHILE)
			continue;
		if (!layer_loop(m, c, i, &l))
			return shs_seterr(e, SHS_EINVAL, "pipeline: loop %s of %s is not a "
					  "layer loop (a body that slices its stacks at the trip's "
					  "layer, calls the layer once and writes or carries its "
					  "results)", comp->instrs[i]->name, comp->name);
		if (found == 0)
			*fwd = l;
		else if (found == 1)
			*bwd = l;
		found++;
	}
	if (found != 2)
		return shs_seterr(e, SHS_EINVAL, "pipeline: %s holds %u layer loops (while loops "
				  "over stacked weights, as a scanned module has), not one forward "
				  "and one backward", comp->name, found);
	if (fwd->reverse || !bwd->reverse || fwd->trips != bwd->trips)
		return shs_seterr(e, SHS_EINVAL, "pipeline: %s's layer loops are not a forward "
				  "loop over the layers and the backward loop over them in reverse",
				  comp->name);
	return SHS_OK;
}
