/* Per-instruction choices on top of a propagated plan: every candidate the plugins enumerate for
 * each instruction they serve, all combinations evaluated when they are few (exact), else one
 * sweep of coordinate descent; every combination is evaluated in full. */
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

enum { EXHAUSTIVE_MAX_SLOTS = 12 };

/* One instruction the refinement chooses for: option 0 is propagation's decision (kept in
 * orig), option k > 0 the plugins' candidate k - 1. */
typedef struct slot {
	uint32_t c, i;
	shs_decision orig;
	shs_cands cands;
	uint32_t at, best;
} slot;

typedef struct refiner {
	shs_host *h;
	const shs_module *m;
	const shs_cluster *cl;
	const shs_eval_options *o;
	shs_plan *p;
	shs_eval *ev;
	shs_search_try best;
	slot *slots;
	shs_arena *arena;       /* owns the slots' orig specs */
	uint32_t n;
	uint32_t evaluated;
	bool too_many;          /* too many instructions to choose for: nothing tried */
	bool *reducer;          /* per computation: a reducer, which never runs on its own */
	shs_err *e;
} refiner;

static int oom(shs_err *e)
{
	return shs_seterr(e, SHS_ENOMEM, "search: out of memory");
}

/* Sets *d to the given result, operand requirements and work (copies: the specs in d's arrays
 * or a, the collectives malloc'ed, d's old ones freed). */
static int set_decision(shs_decision *d, shs_arena *a, const shs_pspec *leaves,
			uint32_t n_leaves, const shs_pspec *req, uint32_t n_req,
			const uint32_t *req_first, uint32_t n_operands, double flops, double bytes,
			const shs_coll *colls, uint32_t n_colls, const char *strategy,
			const char *label, shs_err *e)
{
	shs_coll *copy = n_colls ? malloc(n_colls * sizeof(*copy)) : NULL;

	/* without requirements (a free instruction) there may be fewer firsts than operands */
	if ((n_colls && !copy) || shs_decision_set_specs(d, a, leaves, n_leaves,
							 n_req ? req : NULL, n_req, req_first,
							 n_operands) != SHS_OK) {
		free(copy);
		return oom(e);
	}
	if (n_colls)
		memcpy(copy, colls, n_colls * sizeof(*copy));
	shs_decision_free(d);
	d->set = true;
	d->flops = flops;
	d->bytes = bytes;
	d->colls = copy;
	d->n_colls = n_colls;
	d->strategy = strategy;
	shs_str_copy(d->label, sizeof(d->label), label);
	return SHS_OK;
}

static int copy_decision(shs_decision *dst, shs_arena *a, const shs_decision *src,
			 uint32_t n_operands, shs_err *e)
{
	return set_decision(dst, a, src->leaves, src->n_leaves, src->req, src->n_req,
			    src->req_first, n_operands, src->flops, src->bytes, src->colls,
			    src->n_colls, src->strategy, src->label, e);
}

/* Puts option k of slot s into the plan. */
static int apply(refiner *r, slot *s, uint32_t k)
{
	shs_decision *d = &r->p->d[s->c][s->i];
	uint32_t n_ops = r->m->comps[s->c]->instrs[s->i]->n_operands;
	const shs_cand *c;

	s->at = k;
	if (!k)
		return copy_decision(d, r->p->arena, &s->orig, n_ops, r->e);
	c = &s->cands.v[k - 1];
	return set_decision(d, r->p->arena, c->result, c->n_result, c->operands, c->operand_first[n_ops],
			    c->operand_first, n_ops, c->flops, c->bytes, c->colls, c->n_colls,
			    c->strategy, c->label, r->e);
}

/* Evaluates the plan as it stands; keeps it as the best when it beats the best so far. */
static int evaluate(refiner *r)
{
	shs_eval ev = { 0 };
	shs_search_try t;
	int rc = shs_evaluate(r->m, r->p, r->cl, r->o, &ev, r->e);

	if (rc != SHS_OK)
		return rc;
	r->evaluated++;
	shs__search_summary(&ev, &t);
	if (shs_search_beats(&t, &r->best)) {
		r->best = t;
		shs_eval_free(r->ev);
		*r->ev = ev;
		for (uint32_t k = 0; k < r->n; k++)
			r->slots[k].best = r->slots[k].at;
	} else {
		shs_eval_free(&ev);
	}
	return SHS_OK;
}

static bool refinable(const shs_instr *in, const shs_decision *d)
{
	switch (in->op) {
	case SHS_OP_PARAMETER: case SHS_OP_TUPLE: case SHS_OP_GET_TUPLE_ELEMENT:
	case SHS_OP_CALL: case SHS_OP_WHILE: case SHS_OP_CONDITIONAL:
		return false;
	default:
		return d->set && !d->fixed;
	}
}

/* The instructions to choose for, over the computations that run (counted up to just over
 * limit). */
static uint32_t count_refinable(const refiner *r, uint32_t limit)
{
	uint32_t n = 0;

	for (uint32_t c = 0; c < r->m->n_comps && n <= limit; c++) {
		if (r->reducer[c])
			continue;
		for (uint32_t i = 0; i < r->m->comps[c]->n_instrs; i++)
			n += refinable(r->m->comps[c]->instrs[i], &r->p->d[c][i]);
	}
	return n;
}

/* The slots: every refinable instruction of the computations that run with at least one
 * candidate, its options enumerated with its operands' current shardings as hints (none when
 * there are too many instructions to choose for). */
static int collect(refiner *r, bool allow_sweep)
{
	const shs_pspec *hints[SHS_MAX_VALUE_LEAVES];
	uint32_t cap = 0, n;
	int rc = SHS_OK;

	if (!(r->reducer = shs_comp_reducers(r->m)))
		return oom(r->e);
	n = count_refinable(r, allow_sweep ? SHS_SEARCH_REFINE_MAX : EXHAUSTIVE_MAX_SLOTS);

	/* with at least two options each, more slots than log2(SHS_SEARCH_EXHAUSTIVE) cannot be
	 * enumerated */
	r->too_many = n > SHS_SEARCH_REFINE_MAX || (!allow_sweep && n > EXHAUSTIVE_MAX_SLOTS);
	if (r->too_many)
		return SHS_OK;

	for (uint32_t c = 0; c < r->m->n_comps && rc == SHS_OK; c++) {
		const shs_computation *comp = r->m->comps[c];
		if (r->reducer[c])
			continue;
		for (uint32_t i = 0; i < comp->n_instrs && rc == SHS_OK; i++) {
			const shs_instr *in = comp->instrs[i];
			slot s = { .c = c, .i = i };
			if (!refinable(in, &r->p->d[c][i]) || in->n_operands > SHS_MAX_VALUE_LEAVES)
				continue;
			for (uint32_t k = 0; k < in->n_operands; k++) {
				const shs_decision *od = &r->p->d[c][in->operands[k]];
				hints[k] = od->set ? od->leaves : NULL;
			}
			rc = shs_host_candidates(r->h, r->m, comp, in, &r->p->mesh, hints, NULL,
						 SHS_PMODE_ENUMERATE, &s.cands, r->e);
			if (rc != SHS_OK || !s.cands.n) {
				shs_cands_free(&s.cands);
				continue;
			}
			if (r->n == cap) {
				slot *grown = realloc(r->slots, (cap ? 2 * cap : 16) * sizeof(*grown));
				if (!grown) {
					shs_cands_free(&s.cands);
					rc = oom(r->e);
					break;
				}
				r->slots = grown;
				cap = cap ? 2 * cap : 16;
			}
			rc = copy_decision(&s.orig, r->arena, &r->p->d[c][i], in->n_operands,
					   r->e);
			r->slots[r->n++] = s;
		}
	}
	return rc;
}

/* Every combination, in odometer order (slot 0 turns fastest). */
static int enumerate_all(refiner *r)
{
	int rc = SHS_OK;

	for (;;) {
		uint32_t k = 0;
		while (k < r->n && r->slots[k].at == r->slots[k].cands.n) {
			rc = apply(r, &r->slots[k], 0);
			if (rc != SHS_OK)
				return rc;
			k++;
		}
		if (k == r->n)
			return SHS_OK;
		rc = apply(r, &r->slots[k], r->slots[k].at + 1);
		if (rc == SHS_OK)
			rc = evaluate(r);
		if (rc != SHS_OK)
			return rc;
	}
}

/* Each slot in turn takes its best option with the others as they are. */
static int sweep(refiner *r)
{
	int rc = SHS_OK;

	for (uint32_t k = 0; k < r->n && rc == SHS_OK; k++) {
		slot *s = &r->slots[k];
		for (uint32_t o = 1; o <= s->cands.n && rc == SHS_OK; o++) {
			rc = apply(r, s, o);
			if (rc == SHS_OK)
				rc = evaluate(r);
		}
		if (rc == SHS_OK)
			rc = apply(r, s, s->best);
	}
	return rc;
}

int shs__search_refine(shs_host *h, const shs_module *m, const shs_cluster *c,
		       const shs_eval_options *o, bool allow_sweep, shs_plan *p, shs_eval *ev,
		       uint32_t *evaluated, bool *exact, shs_err *e)
{
	refiner r = { .h = h, .m = m, .cl = c, .o = o, .p = p, .ev = ev, .e = e,
		      .arena = shs_arena_new(0) };
	double combos = 1, sweep_evals = 0;
	int rc = r.arena ? collect(&r, allow_sweep) : oom(e);

	*exact = false;
	shs__search_summary(ev, &r.best);
	for (uint32_t k = 0; k < r.n; k++) {
		combos *= (double)(r.slots[k].cands.n + 1);
		sweep_evals += r.slots[k].cands.n;
	}
	if (rc == SHS_OK && !r.too_many && combos <= SHS_SEARCH_EXHAUSTIVE) {
		*exact = true;
		rc = enumerate_all(&r);
	} else if (rc == SHS_OK && allow_sweep && sweep_evals <= SHS_SEARCH_SWEEP) {
		rc = sweep(&r);
	}
	/* the best combination back into the plan */
	for (uint32_t k = 0; k < r.n && rc == SHS_OK; k++)
		rc = apply(&r, &r.slots[k], r.slots[k].best);
	for (uint32_t k = 0; k < r.n; k++) {
		shs_cands_free(&r.slots[k].cands);
		shs_decision_free(&r.slots[k].orig);
	}
	free(r.slots);
	free(r.reducer);
	shs_arena_free(r.arena);
	*evaluated = r.evaluated;
	return rc;
}
