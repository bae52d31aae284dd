/* The optimizer's update pinned to the layout of the state it updates. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "propagate_internal.h"

/*
 * The step returns each weight and its Adam moments in the sharding they came in
 * (input_output_alias). Left to itself, the propagation runs the update wherever the gradient
 * arrives: a data-parallel gradient reduce-scattered, the update on shards, and then every
 * output gathered back (weight, first and second moment: three gathers where the runtimes
 * make one). Its choices are local and the alternatives tie at each step, so it cannot see
 * that one gather of the gradient before the update serves all three outputs.
 *
 * What the runtimes do instead: the update runs where the state lives. Data parallelism
 * all-reduces the gradient and updates replicated weights (DDP, XLA's propagation from
 * replicated in- and out-shardings); ZeRO-1/2 reduce-scatter the gradient, update the
 * moments and a weight shard, and gather the new weight once (DeepSpeed's stage 1/2,
 * Megatron's distributed optimizer); ZeRO-3 and FSDP keep everything sharded. So:
 *
 * - an instruction of the state takes the layout its state operands share (a parameter's is
 *   its seed); a step output aliased to a parameter takes that parameter's;
 * - where state operands differ (ZeRO-1: the update from the sharded moments added to the
 *   replicated weight), and on the gradient's elementwise way into the state, an instruction
 *   takes the layout its users share, so that the gather lands once, on the single value
 *   that crosses from one layout into the other.
 */

enum { T_NONE, T_SET, T_MIXED };

typedef struct targets {
	shs_pspec *spec;
	unsigned char *kind;
} targets;

/* Forward: returned parameters their seed, state the layout its state operands share. */
static void from_operands(const shs__prop *x, const shs_computation *c, const bool *returned,
			  targets *t)
{
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		const shs_decision *d = &x->p->d[x->m->entry][i];
		if (!x->state[i])
			continue;
		if (in->op == SHS_OP_PARAMETER) {
			if (d->n_leaves == 1 && returned[i]) {
				t->spec[i] = d->leaves[0];
				t->kind[i] = T_SET;
			}
			continue;
		}
		for (uint32_t k = 0; k < in->n_operands; k++) {
			uint32_t o = in->operands[k];
			if (!x->state[o])
				continue;
			if (t->kind[o] != T_SET)
				t->kind[i] = T_MIXED;
			else if (t->kind[i] == T_NONE)
				t->spec[i] = t->spec[o], t->kind[i] = T_SET;
			else if (t->kind[i] == T_SET && !shs_spec_equal(&t->spec[i], &t->spec[o]))
				t->kind[i] = T_MIXED;
		}
	}
}

/* The step's outputs aliased to a parameter: that parameter's layout. */
static void from_root(const shs__prop *x, const shs_computation *c, targets *t)
{
	const shs_instr *root = c->instrs[c->root];

	for (uint32_t k = 0, off = 0; k < root->n_operands; k++) {
		uint32_t o = root->operands[k], n = shs_shape_leaves(&c->instrs[o]->shape);
		if (n == 1 && x->state[o] && c->instrs[o]->op != SHS_OP_PARAMETER &&
		    x->root_aliased[off]) {
			t->spec[o] = x->root_want[off];
			t->kind[o] = T_SET;
		}
		off += n;
	}
}

/* Backward: mixed state, and elementwise work feeding pinned users, the layout those users
 * share; other users may only be elementwise or reductions of it (the clipping's norm, which
 * follows for free). Users come later in program order: one reverse sweep settles chains. */
static void from_users(const shs__prop *x, const shs_computation *c, targets *t)
{
	const shs_users *u = &x->users[x->m->entry];

	for (uint32_t i = c->n_instrs; i-- > 0;) {
		const shs_instr *in = c->instrs[i];
		bool agree = true, any = false;
		if (t->kind[i] == T_SET || i == c->root || in->shape.type == SHS_TUPLE ||
		    !in->shape.rank || !shs_opcode_is_elementwise(in->op))
			continue;
		for (uint32_t k = u->first[i]; k < u->first[i + 1] && agree; k++) {
			const shs_instr *v = c->instrs[u->list[k]];
			const shs_pspec *s = &t->spec[u->list[k]];
			if (t->kind[u->list[k]] != T_SET) {
				agree = v->op == SHS_OP_REDUCE || shs_opcode_is_elementwise(v->op);
				continue;
			}
			agree = shs__same_dims(&v->shape, &in->shape) &&
				(!any || shs_spec_equal(s, &t->spec[i]));
			t->spec[i] = *s;
			any = true;
		}
		if (agree && any)
			t->kind[i] = T_SET;
	}
}

/* The layout value o goes to: its own pin, else the one its pinned users of its dims share;
 * NULL when none or they differ. */
static const shs_pspec *goes_to(const shs__prop *x, const shs_computation *c, const targets *t,
				uint32_t o)
{
	const shs_users *u = &x->users[x->m->entry];
	const shs_pspec *to = NULL;

	if (t->kind[o] == T_SET)
		return &t->spec[o];
	for (uint32_t k = u->first[o]; k < u->first[o + 1]; k++) {
		uint32_t v = u->list[k];
		if (t->kind[v] != T_SET ||
		    !shs__same_dims(&c->instrs[v]->shape, &c->instrs[o]->shape))
			continue;
		if (to && !shs_spec_equal(to, &t->spec[v]))
			return NULL;
		to = &t->spec[v];
	}
	return to;
}

/* Forward: elementwise work beside the update on the same values (the clipping's squares for
 * the global norm) takes the layout those values go to, so that each is resharded once, for
 * both (XLA's partitioner reuses one reshard for every user that wants it). */
static void from_siblings(const shs__prop *x, const shs_computation *c, targets *t)
{
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		const shs_pspec *to = NULL;
		bool agree = true;
		if (t->kind[i] == T_SET || x->state[i] || in->shape.type == SHS_TUPLE ||
		    !in->shape.rank || !shs_opcode_is_elementwise(in->op))
			continue;
		for (uint32_t k = 0; k < in->n_operands && agree; k++) {
			const shs_instr *op = c->instrs[in->operands[k]];
			const shs_pspec *g;
			if (!shs__same_dims(&op->shape, &in->shape))
				continue; /* scalars and broadcasts: anywhere */
			g = goes_to(x, c, t, in->operands[k]);
			agree = g && (!to || shs_spec_equal(to, g));
			to = g;
		}
		if (agree && to) {
			t->spec[i] = *to;
			t->kind[i] = T_SET;
		}
	}
}

int shs__pin_update(shs__prop *x, shs_err *e)
{
	const shs_computation *c = shs_module_entry(x->m);
	uint32_t entry = x->m->entry;
	targets t;
	bool *returned;
	int rc = SHS_OK;

	if (!x->root_want || !x->state)
		return SHS_OK;
	t.spec = calloc(c->n_instrs + 1, sizeof(*t.spec));
	t.kind = calloc(c->n_instrs + 1, sizeof(*t.kind));
	returned = shs_entry_returned_params(x->m);
	if (!t.spec || !t.kind || !returned || !shs__hint_room(x, entry)) {
		rc = shs_seterr(e, SHS_ENOMEM, "plan: out of memory");
		goto done;
	}
	from_operands(x, c, returned, &t);
	from_root(x, c, &t);
	from_users(x, c, &t);
	from_siblings(x, c, &t);
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		if (t.kind[i] != T_SET || in->op == SHS_OP_PARAMETER || x->hint_set[entry][i] ||
		    t.spec[i].rank != in->shape.rank ||
		    !shs__spec_fits(&t.spec[i], &in->shape, &x->r->mesh))
			continue;
		x->hints[entry][i] = t.spec[i];
		x->hint_set[entry][i] = x->pinned[entry][i] = true;
	}
done:
	free(t.spec);
	free(t.kind);
	free(returned);
	return rc;
}
