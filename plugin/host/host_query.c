/* Asking the strategies that serve an instruction for its candidates: the query, the plugins
 * in order, the cap on candidates, and the warnings for instructions no strategy serves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "host_internal.h"

enum {
	CANDS_CHUNK = 4096,   /* block size of a candidate list's arena */
	COMPACT_MIN = 64      /* candidates dropped before a list is moved to a smaller arena */
};

/* Kinds of instructions warned about once. */
enum { SEEN_UNSERVED = 1, SEEN_TOO_LARGE = 2 };

bool shs__host_serves(const shs_host *h, const shs_host_strat *st, shs_opcode op,
		      const shs_pinstr *i)
{
	const shs_strategy *s = &st->s;
	shs_host_call *call;
	bool yes;

	if (op < SHS_OP_COUNT && st->by_op[op])
		return true;
	if (op == SHS_OP_CUSTOM_CALL &&
	    shs__host_in_list(s->custom_call_targets, i->custom_call_target))
		return true;
	if (!s->match)
		return false;
	call = shs__host_enter(h, h->plugins[st->plugin].path, s->name, "match", i->name);
	yes = s->match(i, s->user);
	shs__host_leave(call);
	return yes;
}

/* Runs strategy st's generator and keeps its checked candidates. */
static void run_strategy(shs_pemit *out, const shs_host_strat *st, const shs_pquery *q)
{
	shs_host_call *call;
	int rc;

	out->st = st;
	out->first = out->list->n;
	out->failed = out->misused = false;
	call = shs__host_enter(out->h, out->h->plugins[st->plugin].path, st->s.name, "generate",
			       q->instr->name);
	rc = st->s.generate(q, out, shs__host_api(), st->s.user);
	shs__host_leave(call);
	out->created += out->list->n - out->first;
	if (out->oom)
		return;
	if (rc != 0 || out->failed)
		shs__host_drop_strategy(out);
	else
		shs__host_check_strategy(out);
	shs__host_prune_strategy(out);
}

/* The candidates cap for an instruction with n_leaves leaves per candidate. */
static uint32_t cand_limit(uint32_t n_leaves)
{
	uint32_t by_specs = n_leaves ? SHS_PLUGIN_MAX_SPECS / n_leaves : SHS_PLUGIN_MAX_CANDIDATES;

	if (by_specs < 1)
		by_specs = 1;
	return by_specs < SHS_PLUGIN_MAX_CANDIDATES ? by_specs : SHS_PLUGIN_MAX_CANDIDATES;
}

/* Room for hint candidates (at most em's limit) in out->v and em's faults, made at once: the
 * arrays then grow by copying only past it. False when out of memory. */
static bool make_room(shs_pemit *em, uint32_t hint)
{
	shs_arena *a = em->list->a;

	if (hint > em->limit)
		hint = em->limit;
	if (!hint)
		return true;
	em->list->v = shs_arena_alloc(a, (size_t)hint * sizeof(*em->list->v));
	em->faults = shs_arena_alloc(a, (size_t)hint * sizeof(*em->faults));
	em->cap = em->cap_faults = hint;
	return em->list->v && em->faults;
}

/* The candidates of every strategy serving the query into out; *created counts those offered,
 * dropped or not. */
static int ask(shs_host *h, shs_opcode op, const shs_host_iview *v, const shs_pquery *q,
	       uint32_t hint, shs_cands *out, uint32_t *created, shs_err *e)
{
	shs_pemit em = { .h = h, .v = v, .mesh = q->mesh, .list = out,
			 .limit = cand_limit(v->n_leaves) };
	int rc = SHS_OK;

	em.oom = !make_room(&em, hint);

	for (uint32_t k = 0; k < h->n_strats && !em.oom; k++) {
		if (!shs__host_serves(h, &h->strats[k], op, &v->instr))
			continue;
		out->served = true;
		run_strategy(&em, &h->strats[k], q);
	}
	if (em.oom) {
		for (uint32_t k = em.first; k < out->n && em.faults; k++)
			free(em.faults[k - em.first]);
		rc = shs_seterr(e, SHS_ENOMEM, "%s: candidates: out of memory", v->instr.name);
	}
	*created = em.created;
	return rc;
}

/* Not served: too large for the ABI, or no strategy. Warns once per instruction. */
static void unserved(shs_host *h, const shs_module *m, const shs_computation *c,
		     const shs_instr *i, const shs_host_iview *v, int why, const char *reason)
{
	if (!shs__host_first_time(h, m, c, i, why))
		return;
	if (i->op == SHS_OP_CUSTOM_CALL)
		shs__host_warn(h, "%s (custom call '%s'): %s for this target; replicated",
			       v->instr.name, i->custom_call_target ? i->custom_call_target : "",
			       reason);
	else
		shs__host_warn(h, "%s (%s): %s; replicated", v->instr.name, v->instr.opcode,
			       reason);
}

static int build_query(shs_arena *a, const shs_instr *i, const shs_host_iview *v,
		       const shs_host_query *hq, shs_mesh_view *mv, shs_pquery *q)
{
	const shs_pspec **none;
	uint32_t n = v->instr.n_operands > i->n_called ? v->instr.n_operands : i->n_called;

	none = shs_arena_calloc(a, n + 1u, sizeof(*none));
	if (!none)
		return SHS_ENOMEM;
	shs_host_mesh_view(hq->mesh, mv);
	*q = (shs_pquery){
		.struct_size = sizeof(*q),
		.instr = &v->instr,
		.mesh = &mv->view,
		.mode = hq->mode,
		.hints = hq->hints ? hq->hints : none,
		.result_hint = hq->result_hint,
		.n_called = hq->called_roots ? hq->n_called : i->n_called,
		.called_roots = hq->called_roots ? hq->called_roots : none,
	};
	if (!q->result_hint && hq->use_annotation)
		q->result_hint = shs__host_annotation_hint(a, i, v, hq->mesh);
	return SHS_OK;
}

int shs_host_candidates_q(shs_host *h, const shs_module *m, const shs_computation *c,
			  const shs_instr *i, const shs_host_query *hq, shs_cands *out,
			  shs_err *e)
{
	const shs_host_iview *kept = shs__host_views_get(hq ? hq->views : NULL, hq ? hq->comp : 0,
							 hq ? hq->instr : 0);
	shs_err why; /* asked hundreds of thousands of times: only its head is cleared */
	shs_mesh_view mv;
	shs_host_iview v;
	uint32_t created = 0;
	shs_pquery q;
	shs_arena *a;
	int rc;

	why.code = SHS_OK;
	why.msg[0] = '\0';
	if (out)
		*out = (shs_cands){ .a = hq ? hq->arena : NULL }; /* the caller's, taken */
	else if (hq)
		shs_arena_free(hq->arena);
	if (!h || !c || !i || !hq || !hq->mesh || !out)
		return shs_seterr(e, SHS_EINVAL, "shs_host_candidates: NULL argument");
	if (hq->mode != SHS_PMODE_PROPAGATE && hq->mode != SHS_PMODE_ENUMERATE)
		return shs_seterr(e, SHS_EINVAL, "%s: unknown mode %d", i->name, hq->mode);
	a = out->a = out->a ? out->a : shs_arena_new(0);
	if (!a)
		return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", i->name);
	shs_arena_set_chunk(a, CANDS_CHUNK);
	if (kept)
		v = *kept;
	rc = kept ? SHS_OK : shs__host_view(a, c, i, &v, &why);
	if (rc == SHS_EINVAL) {
		if (shs__host_first_time(h, m, c, i, SEEN_TOO_LARGE))
			shs__host_warn(h, "%s (%s): %s; replicated", i->name ? i->name : "?",
				       shs_opcode_name(i->op), why.msg);
		rc = SHS_OK;
		goto out_free;
	}
	if (rc != SHS_OK) {
		rc = shs_seterr(e, rc, "%s", why.msg);
		goto out_free;
	}
	if (v.max_rank > SHS_PLUGIN_MAX_RANK) {
		snprintf(why.msg, sizeof(why.msg), "rank %u, over the %d dims strategies handle",
			 v.max_rank, SHS_PLUGIN_MAX_RANK);
		unserved(h, m, c, i, &v, SEEN_TOO_LARGE, why.msg);
		goto out_free;
	}
	rc = build_query(a, i, &v, hq, &mv, &q);
	if (rc != SHS_OK) {
		rc = shs_seterr(e, rc, "%s: out of memory", i->name);
		goto out_free;
	}
	rc = ask(h, i->op, &v, &q, hq->cap_hint, out, &created, e);
	if (rc == SHS_OK && !out->served)
		unserved(h, m, c, i, &v, SEEN_UNSERVED, "no strategy");
	/* a strategy that offered many it did not keep: the list is not kept in their memory */
	if (rc == SHS_OK && out->n && created - out->n > out->n + COMPACT_MIN)
		shs__host_compact(out, v.n_leaves, CANDS_CHUNK);
out_free:
	if (rc != SHS_OK || !out->n) {
		bool served = out->served;
		shs_cands_free(out);
		out->served = served && rc == SHS_OK;
	}
	return rc;
}

int shs_host_candidates(shs_host *h, const shs_module *m, const shs_computation *c,
			const shs_instr *i, const shs_mesh *mesh, const shs_pspec *const *hints,
			const shs_pspec *result_hint, int mode, shs_cands *out, shs_err *e)
{
	shs_host_query q = { .mesh = mesh, .mode = mode, .hints = hints,
			     .result_hint = result_hint };

	return shs_host_candidates_q(h, m, c, i, &q, out, e);
}

void shs_cands_free(shs_cands *c)
{
	if (!c)
		return;
	shs_arena_free(c->a);
	*c = (shs_cands){ 0 };
}
