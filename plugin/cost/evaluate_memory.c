/* Memory per device: peak live bytes by liveness, and the weights, gradients and Adam state.
 *
 * Every array leaf takes its sharded size from its decision. Tuples and their elements,
 * bitcasts, in-place updates (dynamic-update-slice), while loops (their state is updated in
 * place: XLA aliases a loop's result to its init) and the parameters of called computations are
 * views: they own no buffer, and each of their leaves stands for the buffer it views. A buffer
 * lives from the instruction that makes it to the last use of any view of it (a layer's saved
 * activations until the backward layer that reads them); the entry parameters (weights, optimizer
 * state, batch) and what the root returns live for the whole step. A call or loop adds its
 * callee's own peak at that point (a call's without the result it returns: XLA inlines the call,
 * and the caller holds that result from the call on), and an instruction whose operand arrives in
 * another sharding adds the resharded copy (a gathered weight, an all-to-all's output) while it
 * runs, or, when later users reuse that copy (XLA's reshard cache), until the last of them has
 * run. A scanned loop's stacks (scan's ys it fills and xs it reads, one slot a trip) count at
 * their live size, the slots filled so far and the slots not yet read, as the unrolled layers hold
 * the same values; a stack remat drops is never filled, nor kept for it in the body. A tuple's or
 * loop's leaf sharded otherwise than the value it takes is a copy of its own (XLA reshards a
 * loop's init into the loop's sharding before it starts, and frees the source).
 * Gradients are counted as the weights again (their size at the weights' sharding and dtype). */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate_internal.h"

typedef struct memo {
	const shs__remat *remat;
	const shs_module *m;
	const shs_plan *p;
	const shs_cluster *c;
	const shs__edges *edges;
	const shs__fusion *fused; /* updates written straight into their slots (F6) */
	bool **unsaved; /* per loop body, per element of its state: a stack remat drops */
	double *peak;   /* per computation, < 0: not computed */
	double *own_peak; /* ... without the buffers its root returns: its call's result, which
			   * the caller holds from the call on (XLA inlines the call) */
	double *gathered; /* ... of its peak, the resharded copies (gathered weights, all-to-all
			   * outputs), its callees' included */
	uint32_t *stack; /* recursion guard */
	shs_trace *trace; /* the entry's samples, or NULL */
	int rc;          /* SHS_ENOMEM when a computation could not be measured */
} memo;

static bool is_view(const shs_instr *in, bool entry)
{
	switch (in->op) {
	case SHS_OP_TUPLE: case SHS_OP_GET_TUPLE_ELEMENT: case SHS_OP_BITCAST:
	case SHS_OP_RESHAPE:                 /* a bitcast once layouts are assigned */
	case SHS_OP_DYNAMIC_SLICE:           /* read in place by the fusions it feeds */
	case SHS_OP_DYNAMIC_UPDATE_SLICE: case SHS_OP_WHILE: /* in place */
		return true;
	case SHS_OP_PARAMETER:
		return !entry;
	default:
		return false;
	}
}

/* Bytes of leaf j of instruction i of computation c (shape s) under its decision. */
static double leaf_bytes(const memo *x, uint32_t c, uint32_t i, uint32_t j, const shs_shape *s)
{
	const shs_decision *d = &x->p->d[c][i];
	shs_pspec rep;

	shs_spec_replicated(&rep, s->rank);
	return shs_spec_local_bytes(d->set && j < d->n_leaves ? &d->leaves[j] : &rep, s,
				    &x->c->mesh);
}

static double value_bytes(const memo *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	uint32_t n = shs_shape_leaf_list(&in->shape, shapes, SHS_MAX_VALUE_LEAVES);
	double b = 0;

	for (uint32_t j = 0; j < n; j++)
		b += leaf_bytes(x, c, i, j, shapes[j]);
	return b;
}

uint32_t *shs__leaf_layout(const shs_computation *c)
{
	uint32_t *first = malloc((c->n_instrs + 1) * sizeof(*first));
	uint64_t at = 0;

	for (uint32_t i = 0; first && i < c->n_instrs; i++) {
		uint32_t n = shs_shape_leaves(&c->instrs[i]->shape);
		first[i] = (uint32_t)at;
		at += n < SHS_MAX_VALUE_LEAVES ? n : SHS_MAX_VALUE_LEAVES;
	}
	if (first && at >= UINT32_MAX) {
		free(first);
		return NULL;
	}
	if (first)
		first[c->n_instrs] = (uint32_t)at;
	return first;
}

enum { NO_OWNER = UINT32_MAX, SHARED = UINT32_MAX - 1 };

/* A computation's leaves and its scanned loops' stacks: the leaf layout, each leaf's buffer
 * (owner), the bytes each buffer was made with, and per buffer the loop that fills it slot by
 * slot (NO_OWNER: none); per instruction, a loop's stacks (NULL for none) and trip count; in a
 * loop body whose stacks remat drops, what is stored there only. */
typedef struct loop_stacks {
	uint32_t *first, *owner, *fill_at;
	bool *unstored; /* a loop body's: per instruction, an update into a dropped stack */
	bool *unsaved;  /* per leaf: a value made only to be stored there (not made) */
	double *made;
	shs__stack **stacks;
	int64_t *trips;
} loop_stacks;

/* The operand leaf of call i (of computation c, layout first) whose buffer leaf j of its result
 * is: the callee gives back its parameter unchanged there (a layer returning its input as a
 * saved value) in the sharding it came in (XLA inlines the call: no copy); else NO_OWNER. */
static uint32_t passed_back(const memo *x, uint32_t c, uint32_t i, const uint32_t *first,
			    uint32_t j)
{
	const shs_instr *in = x->m->comps[c]->instrs[i], *root, *p;
	const shs_computation *callee;
	const shs_decision *d = &x->p->d[c][i], *od;
	uint32_t o;

	if (in->op != SHS_OP_CALL || in->n_called != 1 || in->called[0] >= x->m->n_comps ||
	    in->shape.type != SHS_TUPLE || j >= (uint32_t)in->shape.n_tuple ||
	    in->shape.tuple[j].type == SHS_TUPLE)
		return NO_OWNER;
	callee = x->m->comps[in->called[0]];
	root = callee->instrs[callee->root];
	if (root->op != SHS_OP_TUPLE || j >= root->n_operands || shs_shape_leaves(&in->shape) !=
									 (uint32_t)in->shape.n_tuple)
		return NO_OWNER;
	p = callee->instrs[root->operands[j]];
	if (p->op != SHS_OP_PARAMETER || p->parameter_number < 0 ||
	    (uint64_t)p->parameter_number >= in->n_operands)
		return NO_OWNER;
	o = in->operands[p->parameter_number];
	od = &x->p->d[c][o];
	if (first[o + 1] - first[o] != 1 || !d->set || !od->set || j >= d->n_leaves ||
	    od->n_leaves != 1 || !shs_spec_equal(&d->leaves[j], &od->leaves[0]))
		return NO_OWNER;
	return first[o];
}

/* For each leaf of computation c (layout first), the leaf whose buffer it is: its own for an
 * instruction that makes one or a loop state leaf flagged resharded (its own copy), the viewed
 * one's for a view or a call's parameter given back (passed_back), NO_OWNER for what the caller
 * owns. */
static void resolve_owners(const memo *x, uint32_t c, bool entry, const uint32_t *first,
			   const bool *resharded, uint32_t *owner)
{
	const shs_computation *comp = x->m->comps[c];

	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		uint32_t n = first[i + 1] - first[i], from = NO_OWNER, at = 0;
		if (in->op == SHS_OP_TUPLE) {
			for (uint32_t k = 0; k < in->n_operands && at < n; k++) {
				uint32_t o = in->operands[k], m = first[o + 1] - first[o];
				for (uint32_t j = 0; j < m && at < n; j++, at++)
					owner[first[i] + at] = resharded[first[i] + at] ?
								       first[i] + at :
								       owner[first[o] + j];
			}
			continue;
		}
		if (!is_view(in, entry)) {
			for (uint32_t j = 0; j < n; j++) {
				uint32_t back = passed_back(x, c, i, first, j);
				owner[first[i] + j] = back == NO_OWNER ? first[i] + j : owner[back];
			}
			continue;
		}
		if (in->op == SHS_OP_GET_TUPLE_ELEMENT && in->n_operands)
			from = first[in->operands[0]] +
			       shs_shape_element_leaf(&comp->instrs[in->operands[0]]->shape,
						      in->tuple_index);
		else if (in->op != SHS_OP_PARAMETER && in->n_operands)
			from = first[in->operands[0]];
		for (uint32_t j = 0; j < n; j++)
			owner[first[i] + j] = resharded[first[i] + j] ? first[i] + j :
					      from == NO_OWNER || from + j >= first[comp->n_instrs] ?
						      NO_OWNER : owner[from + j];
	}
}

/* The leaves of computation c's tuples and loops whose sharding is not their operand's (the
 * embedding's output, split by the batch only, as the carry of layers that split it by the
 * model too): each is a copy of its own, at its sharding (XLA reshards a loop's init into the
 * loop's sharding before it starts), and the value it was made from dies there. */
static void resharded_views(const memo *x, uint32_t c, const uint32_t *first, bool *resharded)
{
	const shs_computation *comp = x->m->comps[c];

	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		const shs_decision *d = &x->p->d[c][i];
		uint32_t at = 0, n = first[i + 1] - first[i];
		if ((in->op != SHS_OP_WHILE && in->op != SHS_OP_TUPLE) || !d->set)
			continue;
		for (uint32_t k = 0; k < in->n_operands && at < n; k++) {
			uint32_t o = in->operands[k], m = first[o + 1] - first[o];
			const shs_decision *od = &x->p->d[c][o];
			for (uint32_t j = 0; od->set && j < m && j < od->n_leaves && at + j < n &&
					     at + j < d->n_leaves; j++)
				resharded[first[i] + at + j] =
					!shs_spec_equal(&od->leaves[j], &d->leaves[at + j]);
			at += m;
		}
	}
}

/* The last instruction that uses each buffer of computation c through any view of it (the
 * root's and, in the entry, the parameters' live to the end: n_instrs), into last (by owner
 * leaf). A value fusion computes inside its consumers (at[i] > i) reads its operands where the
 * last of them runs; an element of a tuple, only that element's; a user that reuses an earlier
 * user's resharded copy reads the copy (kept for it: reuse_ends), not the buffer. The updates
 * of the dynamic-update-slices flagged unstored (a slot of a stack that remat drops) are not
 * kept for them. */
static void buffer_ends(const memo *x, uint32_t c, const uint32_t *first, const uint32_t *owner,
			const uint32_t *at, const bool *unstored, uint32_t *last)
{
	const shs_computation *comp = x->m->comps[c];
	const uint32_t *edge_first = x->edges->first[c], *base = x->edges->base[c];
	bool entry = c == x->m->entry;
	uint32_t n = comp->n_instrs;

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = first[i]; j < first[i + 1]; j++)
			last[j] = j == owner[j] ? i : last[j];
	for (uint32_t i = 0; i < n; i++) {
		const shs_instr *in = comp->instrs[i];
		bool forever = i == comp->root || (entry && in->op == SHS_OP_PARAMETER);
		for (uint32_t j = first[i]; forever && j < first[i + 1]; j++)
			if (owner[j] != NO_OWNER)
				last[owner[j]] = n;
		for (uint32_t k = 0; k < in->n_operands; k++) {
			/* an element of a tuple reads that element's buffers: its own views */
			uint32_t o = in->op == SHS_OP_GET_TUPLE_ELEMENT ? i : in->operands[k];
			uint32_t f = edge_first[base[i] + k];
			if ((k == 1 && unstored && unstored[i]) ||
			    (f != SHS__EDGE_NONE && f != SHS__EDGE_NEW))
				continue;
			for (uint32_t j = first[o]; j < first[o + 1]; j++)
				if (owner[j] != NO_OWNER && last[owner[j]] < at[i])
					last[owner[j]] = at[i];
		}
	}
}

static double comp_peak(memo *x, uint32_t c, uint32_t depth);

/* Where each instruction of computation c runs: itself, or for a value fusion computes inside
 * its consumers, where the last of those runs (users come later: one reverse sweep). A
 * malloc'ed array, or NULL when out of memory. */
static uint32_t *run_at(const memo *x, uint32_t c)
{
	const shs_computation *comp = x->m->comps[c];
	uint32_t n = comp->n_instrs, *at = malloc((n + 1) * sizeof(*at));

	for (uint32_t i = 0; at && i < n; i++)
		at[i] = i;
	for (uint32_t u = n; at && u-- > 0;) {
		const shs_instr *in = comp->instrs[u];
		for (uint32_t k = 0; k < in->n_operands; k++) {
			uint32_t o = in->operands[k];
			if (shs__fused_away(x->fused, c, o) && at[o] < at[u])
				at[o] = at[u];
		}
	}
	return at;
}

/* Bytes of the copies of instruction i's operands that arrive in another sharding than it
 * requires, made by i itself (a repeated edge reads an earlier copy), live while i runs; a copy
 * that later users reuse is added to *kept instead, and to release[the last of them]. */
static double reshard_buffers(const memo *x, uint32_t c, uint32_t i, const uint32_t *last_reuse,
			      double *kept, double *release)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	const shs_decision *d = &x->p->d[c][i];
	double transient = 0;

	/* a tuple's or loop's resharded leaf is a buffer of its own (resharded_views) */
	if (in->op == SHS_OP_WHILE || in->op == SHS_OP_TUPLE || !d->set || !d->n_req ||
	    !shs__reshards_at(x->edges, comp, c, i))
		return 0;
	for (uint32_t k = 0; k < in->n_operands; k++) {
		const shs_decision *od = &x->p->d[c][in->operands[k]];
		const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
		uint32_t f = x->edges->base[c][i] + k, n;
		double b = 0;
		if (x->edges->first[c][f] != SHS__EDGE_NEW)
			continue;
		n = shs_shape_leaf_list(&comp->instrs[in->operands[k]]->shape, shapes,
					SHS_MAX_VALUE_LEAVES);
		for (uint32_t j = 0; od->set && j < n && j < od->n_leaves &&
				     d->req_first[k] + j < d->n_req; j++) {
			const shs_pspec *want = &d->req[d->req_first[k] + j];
			if (!shs_spec_equal(&od->leaves[j], want))
				b += shs_spec_local_bytes(want, shapes[j], &x->c->mesh);
		}
		if (last_reuse[f] > i) {
			*kept += b;
			release[last_reuse[f]] += b;
		} else {
			transient += b;
		}
	}
	return transient;
}

/* Per edge of computation c that reshards first, the last instruction that reuses its copy
 * (itself when none does). */
static uint32_t *reuse_ends(const memo *x, uint32_t c)
{
	const shs__edges *g = x->edges;
	uint32_t total = g->base[c][x->m->comps[c]->n_instrs];
	uint32_t *last = calloc(total + 1, sizeof(*last));

	for (uint32_t f = 0; last && f < total; f++) {
		uint32_t first = g->first[c][f];
		if (first == SHS__EDGE_NEW && last[f] < g->consumer[c][f])
			last[f] = g->consumer[c][f];
		else if (first != SHS__EDGE_NONE && last[first] < g->consumer[c][f])
			last[first] = g->consumer[c][f];
	}
	return last;
}

/* The largest peak among the computations instruction in runs (a call's callee's without its
 * result, which the caller counts), and into *gathered the resharded copies at that peak. */
static double callee_peak(memo *x, const shs_instr *in, uint32_t depth, double *gathered)
{
	double best = 0;

	*gathered = 0;
	if (in->op != SHS_OP_CALL && in->op != SHS_OP_WHILE && in->op != SHS_OP_CONDITIONAL)
		return 0;
	for (uint32_t k = 0; k < in->n_called; k++) {
		double p = comp_peak(x, in->called[k], depth + 1);
		if (in->op == SHS_OP_CALL && in->called[k] < x->m->n_comps)
			p = x->own_peak[in->called[k]];
		if (p > best) {
			best = p;
			*gathered = x->gathered[in->called[k]];
		}
	}
	return best;
}

/* The entry's buffers that an output aliased to a parameter takes (input_output_alias: the
 * donated parameter's buffer, updated in place, as XLA assigns it): flags by owner leaf of
 * the root's element, except when that element is a parameter itself (passed through). */
static void mark_in_place(const shs_module *m, const shs_computation *comp,
			  const uint32_t *first, const uint32_t *owner, bool *in_place)
{
	const shs_instr *root = comp->instrs[comp->root];
	uint32_t *at; /* the root's leaf each element starts at: a step returns thousands */

	if (root->op != SHS_OP_TUPLE || !m->n_aliases ||
	    !(at = malloc((root->shape.n_tuple + 1) * sizeof(*at))))
		return;
	at[0] = first[comp->root];
	for (uint32_t k = 0; k < root->shape.n_tuple; k++)
		at[k + 1] = at[k] + shs_shape_leaves(&root->shape.tuple[k]);
	for (uint32_t a = 0; a < m->n_aliases; a++) {
		const shs_alias *al = &m->aliases[a];
		int64_t k = al->output_index.n == 1 ? al->output_index.v[0] : -1;
		uint32_t o;
		if (k < 0 || k >= (int64_t)root->n_operands || k >= (int64_t)root->shape.n_tuple ||
		    comp->instrs[root->operands[k]]->op == SHS_OP_PARAMETER ||
		    at[k + 1] - at[k] != 1)
			continue;
		o = at[k] < first[comp->n_instrs] ? owner[at[k]] : NO_OWNER;
		if (o != NO_OWNER)
			in_place[o] = true;
	}
	free(at);
}

/* The buffers whose value fusion writes straight into a dynamic-update-slice's slot (F6: a
 * scanned layer's gradient made in a called layer): the slot is their buffer. */
static void mark_written_in_place(const memo *x, uint32_t c, const uint32_t *first,
				  const uint32_t *owner, bool *in_place)
{
	const shs_computation *comp = x->m->comps[c];

	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		uint32_t o;
		if (!shs__update_in_place(x->fused, c, i))
			continue;
		o = owner[first[comp->instrs[i]->operands[1]]];
		if (o != NO_OWNER)
			in_place[o] = true;
	}
}

/* Bytes of the buffers instruction i of computation c makes (its own leaves, less what remat
 * drops in the entry and what takes a donated parameter's buffer), each added to release[] at
 * the last use of any view of it and recorded in made[]; a stack that a loop fills (fill_at)
 * is made there, and is left out here. */
static double made_bytes(const memo *x, uint32_t c, uint32_t i, const loop_stacks *l,
			 const uint32_t *last, const bool *in_place, double *release)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	bool entry = c == x->m->entry;
	uint32_t n;
	double total = 0;

	if ((is_view(in, entry) && in->op != SHS_OP_WHILE && in->op != SHS_OP_TUPLE) ||
	    shs__fused_away(x->fused, c, i))
		return 0;
	n = shs_shape_leaf_list(&in->shape, shapes, SHS_MAX_VALUE_LEAVES);
	for (uint32_t j = 0; j < n && l->first[i] + j < l->first[i + 1]; j++) {
		uint32_t leaf = l->first[i] + j;
		double b;
		if (l->owner[leaf] != leaf || (in_place && in_place[leaf]) ||
		    (l->unsaved && l->unsaved[leaf]) ||
		    (x->remat && x->remat->dropped && c == x->remat->comp &&
		     x->remat->dropped[leaf]))
			continue;
		b = leaf_bytes(x, c, i, j, shapes[j]);
		l->made[leaf] = b;
		if (l->fill_at[leaf] == NO_OWNER)
			total += b;
		release[last[leaf]] += b;
	}
	return total;
}

/* The instruction whose leaves hold leaf (first: the leaf layout of n instructions). */
static uint32_t instr_of_leaf(const uint32_t *first, uint32_t n, uint32_t leaf)
{
	uint32_t lo = 0, hi = n;

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (first[mid] <= leaf)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Flags element k of loop w's body state as a stack remat drops (its slots are never kept). */
static int flag_unsaved(memo *x, const shs_instr *w, uint32_t k)
{
	uint32_t b = w->called[0];

	if (!x->unsaved[b] && !(x->unsaved[b] = calloc(w->shape.n_tuple + 1, sizeof(bool))))
		return SHS_ENOMEM;
	x->unsaved[b][k] = true;
	return SHS_OK;
}

/* Finds computation c's scanned loops and, for each stack one of them fills whose buffer is a
 * fresh broadcast made for it alone (scan's zero-initialised ys), the loop that fills it; and
 * flags for their bodies the stacks remat drops. */
static int find_stacks(memo *x, uint32_t c, loop_stacks *l)
{
	const shs_computation *comp = x->m->comps[c];
	const bool *dropped = x->remat && c == x->remat->comp ? x->remat->dropped : NULL;

	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i], *init;
		if (in->op != SHS_OP_WHILE || in->n_operands != 1)
			continue;
		if (shs__loop_stacks(x->m, c, i, &l->trips[i], &l->stacks[i]) != SHS_OK)
			return SHS_ENOMEM;
		init = comp->instrs[in->operands[0]];
		for (uint32_t k = 0; l->stacks[i] && k < in->shape.n_tuple; k++) {
			uint32_t e, o;
			if (l->stacks[i][k].kind != SHS__STACK_WRITTEN || init->op != SHS_OP_TUPLE ||
			    k >= init->n_operands)
				continue;
			e = init->operands[k];
			if (l->first[e + 1] - l->first[e] != 1 ||
			    (o = l->owner[l->first[e]]) == NO_OWNER)
				continue;
			if (dropped && dropped[o] && flag_unsaved(x, in, k) != SHS_OK)
				return SHS_ENOMEM;
			if (comp->instrs[instr_of_leaf(l->first, comp->n_instrs, o)]->op !=
			    SHS_OP_BROADCAST)
				continue;
			/* a buffer two loops fill is no scan's own: counted whole, where made */
			l->fill_at[o] = l->fill_at[o] == NO_OWNER ? i : SHARED;
		}
	}
	for (uint32_t f = 0; f < l->first[comp->n_instrs]; f++)
		if (l->fill_at[f] == SHARED)
			l->fill_at[f] = NO_OWNER;
	return SHS_OK;
}

/* In loop body c whose stacks remat drops (x->unsaved[c]): the updates into them (unstored)
 * and the values made only to be stored there (unsaved: no other instruction, and not the
 * root, reads any view of them), which the step does not keep, as the unrolled layers do not
 * make them. */
static int mark_unsaved(const memo *x, uint32_t c, loop_stacks *l)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *root = comp->instrs[comp->root];
	uint32_t n = comp->n_instrs, leaves = l->first[n];
	bool *read;

	if (!x->unsaved[c] || root->op != SHS_OP_TUPLE)
		return SHS_OK;
	l->unstored = calloc(n + 1, sizeof(*l->unstored));
	l->unsaved = calloc(leaves + 1, sizeof(*l->unsaved));
	read = calloc(leaves + 1, sizeof(*read));
	if (!l->unstored || !l->unsaved || !read) {
		free(read);
		return SHS_ENOMEM;
	}
	for (uint32_t k = 0; k < root->n_operands; k++)
		if (x->unsaved[c][k] &&
		    comp->instrs[root->operands[k]]->op == SHS_OP_DYNAMIC_UPDATE_SLICE)
			l->unstored[root->operands[k]] = true;
	for (uint32_t i = 0; i < n; i++) {
		const shs_instr *in = comp->instrs[i];
		if (is_view(in, false) && i != comp->root)
			continue;
		for (uint32_t k = 0; k < in->n_operands; k++) {
			uint32_t o = in->operands[k];
			if (k == 1 && l->unstored[i])
				continue;
			for (uint32_t j = l->first[o]; j < l->first[o + 1]; j++)
				if (l->owner[j] != NO_OWNER)
					read[l->owner[j]] = true;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t u, o;
		if (!l->unstored[i] || comp->instrs[i]->n_operands < 2)
			continue;
		u = comp->instrs[i]->operands[1];
		o = l->first[u + 1] - l->first[u] == 1 ? l->owner[l->first[u]] : NO_OWNER;
		if (o != NO_OWNER && !read[o])
			l->unsaved[o] = true;
	}
	free(read);
	return SHS_OK;
}

/* Scanned loop i's stacks at their live size: the slots filled so far of the stacks it fills
 * (by the trips before, and this trip's where fusion writes it straight into its slot: else
 * the body holds this trip's value itself), the slots not yet read of the stacks whose last
 * reader it is, as the unrolled layers hold the same values. Sets what the loop adds to the
 * live bytes at its first trip (*start) and its last (*end), and what the filled stacks hold
 * after it (*fill). */
static void stack_bounds(const memo *x, uint32_t c, uint32_t i, const loop_stacks *l,
			 const uint32_t *last, double *start, double *end, double *fill)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	double trips = (double)l->trips[i];

	*start = *end = *fill = 0;
	for (uint32_t k = 0; l->stacks[i] && k < in->shape.n_tuple; k++) {
		const shs__stack *s = &l->stacks[i][k];
		uint32_t leaf = l->first[i] + shs_shape_element_leaf(&in->shape, k), o;
		double b, filled;
		if (leaf >= l->first[i + 1] || (o = l->owner[leaf]) == NO_OWNER)
			continue;
		b = l->made[o];
		if (s->kind == SHS__STACK_WRITTEN && l->fill_at[o] == i) {
			double own = shs__update_in_place(x->fused, in->called[0], s->update);
			filled = (trips - 1 + own) * s->slot;
			*start += b * own * s->slot;
			*end += b * (filled < 1 ? filled : 1);
			*fill += b;
		} else if (s->kind == SHS__STACK_READ && last[o] == i) {
			*end -= b * (1 - s->slot);
		}
	}
}

/* The bytes of the values loop i's state is a resharded copy of (resharded_views) that die
 * there, and that no other element of its state takes as it is: freed once copied, before the
 * loop runs. */
static double copied_from(const memo *x, uint32_t c, uint32_t i, const loop_stacks *l,
			  const uint32_t *last, const bool *resharded)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	uint32_t init = in->n_operands == 1 ? in->operands[0] : NO_OWNER, n;
	double b = 0;

	if (init == NO_OWNER)
		return 0;
	n = l->first[i + 1] - l->first[i];
	n = n < l->first[init + 1] - l->first[init] ? n : l->first[init + 1] - l->first[init];
	for (uint32_t j = 0; j < n; j++) {
		uint32_t o = l->owner[l->first[init] + j];
		bool kept = false;
		if (!resharded[l->first[i] + j] || o == NO_OWNER || last[o] != i)
			continue;
		/* taken as it is by another element, or counted at an earlier copy */
		for (uint32_t k = 0; k < n && !kept; k++)
			kept = l->owner[l->first[init] + k] == o &&
			       ((k != j && !resharded[l->first[i] + k]) || k < j);
		b += kept ? 0 : l->made[o];
	}
	return b;
}

static void stacks_free(loop_stacks *l, uint32_t n)
{
	for (uint32_t i = 0; l->stacks && i < n; i++)
		free(l->stacks[i]);
	free(l->stacks);
	free(l->trips);
	free(l->fill_at);
	free(l->made);
	free(l->unstored);
	free(l->unsaved);
	free(l->owner);
	free(l->first);
}

static double comp_peak(memo *x, uint32_t c, uint32_t depth)
{
	const shs_computation *comp = x->m->comps[c];
	bool entry = c == x->m->entry;
	uint32_t n = comp->n_instrs, *last = NULL, *last_reuse = NULL, *at = NULL;
	loop_stacks l = { 0 };
	bool *in_place = NULL, *resharded = NULL, *returned = NULL;
	double *release = NULL, live = 0, peak = 0, held = 0, own = 0;
	double *release_copies = NULL, copies = 0, peak_copies = 0; /* resharded copies kept */

	if (c >= x->m->n_comps || depth > SHS_MAX_CALL_DEPTH || x->stack[c])
		return 0;
	if (x->peak[c] >= 0)
		return x->peak[c];
	l.first = shs__leaf_layout(comp);
	if (l.first) {
		l.owner = malloc((l.first[n] + 1) * sizeof(*l.owner));
		l.fill_at = malloc((l.first[n] + 1) * sizeof(*l.fill_at));
		l.made = calloc(l.first[n] + 1, sizeof(*l.made));
		last = malloc((l.first[n] + 1) * sizeof(*last));
		in_place = calloc(l.first[n] + 1, sizeof(*in_place));
		resharded = calloc(l.first[n] + 1, sizeof(*resharded));
		returned = calloc(l.first[n] + 1, sizeof(*returned));
	}
	l.stacks = calloc(n + 1, sizeof(*l.stacks));
	l.trips = calloc(n + 1, sizeof(*l.trips));
	release = calloc(n + 1, sizeof(*release));
	release_copies = calloc(n + 1, sizeof(*release_copies));
	last_reuse = reuse_ends(x, c);
	at = run_at(x, c);
	if (!l.first || !l.owner || !l.fill_at || !l.made || !last || !in_place || !resharded ||
	    !returned || !l.stacks ||
	    !l.trips || !release || !release_copies || !last_reuse || !at) {
		x->rc = SHS_ENOMEM;
		goto done;
	}
	resharded_views(x, c, l.first, resharded);
	resolve_owners(x, c, entry, l.first, resharded, l.owner);
	for (uint32_t j = comp->root < n ? l.first[comp->root] : 0;
	     comp->root < n && j < l.first[comp->root + 1]; j++)
		if (l.owner[j] != NO_OWNER)
			returned[l.owner[j]] = true;
	for (uint32_t f = 0; f <= l.first[n]; f++)
		l.fill_at[f] = NO_OWNER;
	if (find_stacks(x, c, &l) != SHS_OK || mark_unsaved(x, c, &l) != SHS_OK) {
		x->rc = SHS_ENOMEM;
		goto done;
	}
	if (entry)
		mark_in_place(x->m, comp, l.first, l.owner, in_place);
	mark_written_in_place(x, c, l.first, l.owner, in_place);
	buffer_ends(x, c, l.first, l.owner, at, l.unstored, last);
	x->stack[c] = 1;
	for (uint32_t i = 0; i < n; i++) {
		const shs_instr *in = comp->instrs[i];
		double kept = 0, start = 0, end = 0, fill = 0, copied, callee_copies;
		double transient = reshard_buffers(x, c, i, last_reuse, &kept, release_copies);
		double inner = callee_peak(x, in, depth, &callee_copies) + transient;
		live += kept + made_bytes(x, c, i, &l, last, in_place, release);
		copies += kept;
		for (uint32_t j = l.first[i]; j < l.first[i + 1]; j++)
			if (returned[j] && l.owner[j] == j && l.fill_at[j] == NO_OWNER)
				held += l.made[j]; /* what the root returns, made here */
		if (l.stacks[i])
			stack_bounds(x, c, i, &l, last, &start, &end, &fill);
		if (in->op == SHS_OP_WHILE && (copied = copied_from(x, c, i, &l, last, resharded))) {
			peak = live > peak ? live : peak; /* the copy and its source, before the loop */
			live -= copied;
			release[i] -= copied;
		}
		if (live + inner + (start > end ? start : end) > peak) {
			peak = live + inner + (start > end ? start : end);
			peak_copies = copies + transient + callee_copies;
		}
		if (live - held + inner + (start > end ? start : end) > own)
			own = live - held + inner + (start > end ? start : end);
		if (entry && x->trace && i < x->trace->n_entry)
			x->trace->entry_live[i] = live + inner + (start > end ? start : end);
		live += fill - release[i] - release_copies[i];
		copies -= release_copies[i];
	}
	x->stack[c] = 0;
	x->peak[c] = peak;
	x->own_peak[c] = own;
	x->gathered[c] = peak_copies;
done:
	stacks_free(&l, n);
	free(at);
	free(last);
	free(release);
	free(release_copies);
	free(last_reuse);
	free(in_place);
	free(resharded);
	free(returned);
	return peak;
}

static int state_breakdown(const memo *x, shs_eval *ev, shs_err *e)
{
	const shs_computation *comp = shs_module_entry(x->m);
	char path[SHS_PATH_CAP];
	/* the weights analysis found them (evaluate_edges.c) */
	const shs_param_role *roles = shs_weights_roles(x->edges->weights);

	if (!roles)
		return shs_seterr(e, SHS_EINVAL, "evaluate: no weights analysis");
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		double b;
		if (in->op != SHS_OP_PARAMETER)
			continue;
		b = value_bytes(x, x->m->entry, i);
		ev->state_bytes += b;
		/* state the step writes back: a forward-only module has no gradients */
		if (roles[i] == SHS_PARAM_INPUT)
			continue;
		shs_param_path(in, path, sizeof(path));
		switch (shs_param_role_named(path, roles[i])) {
		case SHS_PARAM_OPT_STATE:
			ev->optimizer_bytes += b;
			break;
		case SHS_PARAM_WEIGHT:
			ev->params_bytes += b;
			ev->grads_bytes += b;
			break;
		default:
			break;
		}
	}
	return SHS_OK;
}

int shs__eval_memory(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		     const shs__remat *r, const shs__edges *edges, const shs__fusion *fused,
		     shs_trace *trace, shs_eval *ev, shs_err *e)
{
	memo x = { .remat = r, .m = m, .p = p, .c = c, .edges = edges, .fused = fused,
		   .trace = trace && trace->entry_live ? trace : NULL, .rc = SHS_OK };
	int rc = SHS_OK;

	x.peak = malloc((m->n_comps + 1) * sizeof(*x.peak));
	x.own_peak = calloc(m->n_comps + 1, sizeof(*x.own_peak));
	x.gathered = calloc(m->n_comps + 1, sizeof(*x.gathered));
	x.stack = calloc(m->n_comps + 1, sizeof(*x.stack));
	x.unsaved = calloc(m->n_comps + 1, sizeof(*x.unsaved));
	if (!x.peak || !x.own_peak || !x.gathered || !x.stack || !x.unsaved) {
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
		goto done;
	}
	for (uint32_t k = 0; k < m->n_comps; k++)
		x.peak[k] = -1;
	ev->memory_bytes = comp_peak(&x, m->entry, 0);
	ev->gathered_bytes = x.gathered[m->entry];
	if (x.rc != SHS_OK) {
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
		goto done;
	}
	if ((rc = state_breakdown(&x, ev, e)) != SHS_OK)
		goto done;
	ev->hbm_bytes = c->hw.hbm_bytes;
	ev->fits = ev->memory_bytes <= ev->hbm_bytes;
done:
	for (uint32_t k = 0; x.unsaved && k < m->n_comps; k++)
		free(x.unsaved[k]);
	free(x.unsaved);
	free(x.peak);
	free(x.own_peak);
	free(x.gathered);
	free(x.stack);
	return rc;
}
