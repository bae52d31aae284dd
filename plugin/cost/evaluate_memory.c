/* Memory per device: peak live bytes by liveness, and the weights, gradients and Adam state.
 *
 * Every array leaf takes its sharded size from its decision. Tuples and their elements,
 * bitcasts, in-place updates (dynamic-update-slice), while loops (their state is updated in
 * place: XLA aliases a loop's result to its init) and the parameters of called computations are
 * views: they own no buffer, and each of their leaves stands for the buffer it views. A buffer
 * lives from the instruction that makes it to the last use of any view of it (a layer's saved
 * activations until the backward layer that reads them); the entry parameters (weights,
 * optimizer state, batch) and what the root returns live for the whole step. A call or loop adds
 * its callee's own peak at that point, and an instruction whose operand arrives in another
 * sharding adds the resharded copy (a gathered weight, an all-to-all's output) while it runs, or,
 * when later users reuse that copy (XLA's reshard cache), until the last of them has run.
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
	double *peak;   /* per computation, < 0: not computed */
	uint32_t *stack; /* recursion guard */
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

enum { NO_OWNER = UINT32_MAX };

/* For each leaf of computation comp (layout first), the leaf whose buffer it is: its own for an
 * instruction that makes one, the viewed one's for a view, NO_OWNER for what the caller owns. */
static void resolve_owners(const shs_computation *comp, bool entry, const uint32_t *first,
			   uint32_t *owner)
{
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		uint32_t n = first[i + 1] - first[i], from = NO_OWNER, at = 0;
		if (in->op == SHS_OP_TUPLE) {
			for (uint32_t k = 0; k < in->n_operands && at < n; k++) {
				uint32_t o = in->operands[k], m = first[o + 1] - first[o];
				for (uint32_t j = 0; j < m && at < n; j++)
					owner[first[i] + at++] = owner[first[o] + j];
			}
			continue;
		}
		if (!is_view(in, entry)) {
			for (uint32_t j = 0; j < n; j++)
				owner[first[i] + j] = first[i] + j;
			continue;
		}
		if (in->op == SHS_OP_GET_TUPLE_ELEMENT && in->n_operands)
			from = first[in->operands[0]] +
			       shs_shape_element_leaf(&comp->instrs[in->operands[0]]->shape,
						      in->tuple_index);
		else if (in->op != SHS_OP_PARAMETER && in->n_operands)
			from = first[in->operands[0]];
		for (uint32_t j = 0; j < n; j++)
			owner[first[i] + j] = from == NO_OWNER || from + j >= first[comp->n_instrs] ?
						      NO_OWNER : owner[from + j];
	}
}

/* The last instruction that uses each buffer of comp through any view of it (the root's and,
 * in the entry, the parameters' live to the end: n_instrs), into last (by owner leaf). A value
 * fusion computes inside its consumers (at[i] > i) reads its operands where the last of them
 * runs. */
static void buffer_ends(const shs_computation *comp, bool entry, const uint32_t *first,
			const uint32_t *owner, const uint32_t *at, uint32_t *last)
{
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
			uint32_t o = in->operands[k];
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

	if (!d->set || !d->n_req || !shs__reshards_at(x->edges, comp, c, i))
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

/* The largest peak among the computations instruction in runs. */
static double callee_peak(memo *x, const shs_instr *in, uint32_t depth)
{
	double best = 0;

	if (in->op != SHS_OP_CALL && in->op != SHS_OP_WHILE && in->op != SHS_OP_CONDITIONAL)
		return 0;
	for (uint32_t k = 0; k < in->n_called; k++) {
		double p = comp_peak(x, in->called[k], depth + 1);
		best = p > best ? p : best;
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
 * the last use of any view of it. */
static double made_bytes(const memo *x, uint32_t c, uint32_t i, const uint32_t *first,
			 const uint32_t *owner, const uint32_t *last, const bool *in_place,
			 double *release)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	bool entry = c == x->m->entry;
	uint32_t n;
	double total = 0;

	if (is_view(in, entry) || shs__fused_away(x->fused, c, i))
		return 0;
	n = shs_shape_leaf_list(&in->shape, shapes, SHS_MAX_VALUE_LEAVES);
	for (uint32_t j = 0; j < n && first[i] + j < first[i + 1]; j++) {
		uint32_t leaf = first[i] + j;
		double b;
		if (owner[leaf] != leaf || (in_place && in_place[leaf]) ||
		    (x->remat && x->remat->dropped && c == x->remat->comp &&
		     x->remat->dropped[leaf]))
			continue;
		b = leaf_bytes(x, c, i, j, shapes[j]);
		total += b;
		release[last[leaf]] += b;
	}
	return total;
}

static double comp_peak(memo *x, uint32_t c, uint32_t depth)
{
	const shs_computation *comp = x->m->comps[c];
	bool entry = c == x->m->entry;
	uint32_t n = comp->n_instrs, *first = NULL, *owner = NULL, *last = NULL;
	uint32_t *last_reuse = NULL, *at = NULL;
	bool *in_place = NULL;
	double *release = NULL, live = 0, peak = 0;

	if (c >= x->m->n_comps || depth > SHS_MAX_CALL_DEPTH || x->stack[c])
		return 0;
	if (x->peak[c] >= 0)
		return x->peak[c];
	first = shs__leaf_layout(comp);
	owner = first ? malloc((first[n] + 1) * sizeof(*owner)) : NULL;
	last = first ? malloc((first[n] + 1) * sizeof(*last)) : NULL;
	release = calloc(n + 1, sizeof(*release));
	last_reuse = reuse_ends(x, c);
	in_place = first ? calloc(first[n] + 1, sizeof(*in_place)) : NULL;
	at = run_at(x, c);
	if (!first || !owner || !last || !release || !last_reuse || !in_place || !at) {
		x->rc = SHS_ENOMEM;
		goto done;
	}
	resolve_owners(comp, entry, first, owner);
	if (entry)
		mark_in_place(x->m, comp, first, owner, in_place);
	mark_written_in_place(x, c, first, owner, in_place);
	buffer_ends(comp, entry, first, owner, at, last);
	x->stack[c] = 1;
	for (uint32_t i = 0; i < n; i++) {
		const shs_instr *in = comp->instrs[i];
		double kept = 0, inner = callee_peak(x, in, depth) +
					 reshard_buffers(x, c, i, last_reuse, &kept, release);
		live += kept + made_bytes(x, c, i, first, owner, last, in_place, release);
		if (live + inner > peak)
			peak = live + inner;
		live -= release[i];
	}
	x->stack[c] = 0;
	x->peak[c] = peak;
done:
	free(at);
	free(first);
	free(owner);
	free(last);
	free(release);
	free(last_reuse);
	free(in_place);
	return peak;
}

static int state_breakdown(const memo *x, shs_eval *ev, shs_err *e)
{
	const shs_computation *comp = shs_module_entry(x->m);
	char path[SHS_PATH_CAP];
	bool *state = shs_entry_returned_params(x->m);

	if (!state)
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		double b;
		if (in->op != SHS_OP_PARAMETER)
			continue;
		b = value_bytes(x, x->m->entry, i);
		ev->state_bytes += b;
		if (!state[i] || in->shape.type == SHS_TUPLE || !in->shape.rank ||
		    !shs_elem_is_float(in->shape.type))
			continue;
		shs_param_path(in, path, sizeof(path));
		if (strstr(path, "opt_state")) {
			ev->optimizer_bytes += b;
		} else {
			ev->params_bytes += b;
			ev->grads_bytes += b;
		}
	}
	free(state);
	return SHS_OK;
}

int shs__eval_memory(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		     const shs__remat *r, const shs__edges *edges, const shs__fusion *fused,
		     shs_eval *ev, shs_err *e)
{
	memo x = { .remat = r, .m = m, .p = p, .c = c, .edges = edges, .fused = fused,
		   .rc = SHS_OK };
	int rc = SHS_OK;

	x.peak = malloc((m->n_comps + 1) * sizeof(*x.peak));
	x.stack = calloc(m->n_comps + 1, sizeof(*x.stack));
	if (!x.peak || !x.stack) {
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
		goto done;
	}
	for (uint32_t k = 0; k < m->n_comps; k++)
		x.peak[k] = -1;
	ev->memory_bytes = comp_peak(&x, m->entry, 0);
	if (x.rc != SHS_OK) {
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
		goto done;
	}
	if ((rc = state_breakdown(&x, ev, e)) != SHS_OK)
		goto done;
	ev->hbm_bytes = c->hw.hbm_bytes;
	ev->fits = ev->memory_bytes <= ev->hbm_bytes;
done:
	free(x.peak);
	free(x.stack);
	return rc;
}
