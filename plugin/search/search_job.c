/* One mesh's candidates: the plans its axes seed (ZeRO-3 and ZeRO-1/2 over fsdp, with tensor
 * parallelism when it has a tensor axis, splitting the sequence when it has a context axis)
 * unless their model state alone is over the HBM, each made by propagation, refined by
 * per-instruction choices where they are few, and evaluated with more remat while it does not
 * fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* One plan seeding: the named plan's kind and whether fsdp splits only the optimizer state. */
typedef struct seeding {
	shs_plan_kind kind;
	bool state_only;
	char name[SHS_SEARCH_PLAN_NAME];
} seeding;

static bool has_axis(const shs_mesh *mesh, const char *name)
{
	for (uint32_t a = 0; a < mesh->n_axes; a++)
		if (!strcmp(mesh->names[a], name) && mesh->sizes[a] > 1)
			return true;
	return false;
}

/* The seedings a mesh's axes call for (a context axis splits the token batch's sequence under
 * every one of them: "+cp"; an expert axis splits the experts and the batch: "+ep"). */
static uint32_t seedings_of(const shs_mesh *mesh, seeding out[SHS__SEARCH_SEEDINGS])
{
	/* a context axis shards the weights as fsdp does (seed.c) */
	bool fsdp = has_axis(mesh, "fsdp") || has_axis(mesh, "context");
	bool tensor = has_axis(mesh, "tensor");
	shs_plan_kind kind = fsdp ? (tensor ? SHS_PLAN_FSDP_TP : SHS_PLAN_FSDP)
				  : (tensor ? SHS_PLAN_TP : SHS_PLAN_DP);
	const char *suffix = has_axis(mesh, "context") ? has_axis(mesh, "expert") ? "+cp+ep" : "+cp"
				: has_axis(mesh, "expert") ? "+ep" : "";
	const char *pp = has_axis(mesh, "stage") ? "+pp" : "";
	uint32_t n = 0;

	out[n] = (seeding){ .kind = kind, .state_only = false };
	snprintf(out[n++].name, sizeof(out[0].name), "%s%s%s", fsdp ? (tensor ? "fsdp+tp" : "fsdp")
		 : (tensor ? "tp" : "dp"), suffix, pp);
	if (fsdp) {
		out[n] = (seeding){ .kind = kind, .state_only = true };
		snprintf(out[n++].name, sizeof(out[0].name), "%s%s%s",
			 tensor ? "zero1+tp" : "zero1", suffix, pp);
	}
	return n;
}

/* Keeps a propagation warning on job j (the merge passes them on in mesh order, so that they
 * come out alike for any thread count). */
static void job_warn(void *user, const char *msg)
{
	shs__search_job *j = user;

	if (j->n_warnings < SHS__SEARCH_JOB_WARNINGS)
		j->warnings[j->n_warnings] = strdup(msg);
	j->n_warnings++;
}

/* Evaluates p on c: with the options' remat policy, or, unless it is fixed, with more remat
 * while the plan does not fit (dots, then full); *remat is the policy used. */
static int evaluate(const shs__searcher *s, const shs_plan *p, const shs_cluster *c,
		    shs_eval *ev, shs_remat *remat, shs_err *e)
{
	shs_remat most = s->o->fixed_remat ? s->o->eval.remat : SHS_REMAT_FULL;

	return shs_evaluate_until_fits(s->m, p, c, &s->o->eval, most, ev, remat, e);
}

static void summarize(const shs_cluster *c, const seeding *g, shs_remat remat,
		      const shs_eval *ev, shs_search_try *t)
{
	memset(t, 0, sizeof(*t));
	shs_cluster_describe(c, t->mesh, sizeof(t->mesh));
	/* the mesh and its layout only, without the hardware in parentheses */
	t->mesh[strcspn(t->mesh, " ")] = '\0';
	snprintf(t->plan, sizeof(t->plan), "%s", g->name);
	t->remat = remat;
	shs__search_summary(ev, t);
}

/* Makes and evaluates the plan seeding g calls for on j's cluster (with the candidate lists of
 * the mesh's other plans, or NULL), refined by per-instruction choices when they are few, as
 * j's next candidate. */
static int try_plan(const shs__searcher *s, shs__search_job *j, const seeding *g,
		    shs_plan_lists *lists)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_plan **p = &j->plans[j->n];
	shs_eval *ev = &j->evals[j->n];
	shs_eval_options o = s->o->eval;
	uint32_t evaluated = 0;
	bool exact = false, refused;
	int rc = r ? SHS_OK : shs_seterr(&j->e, SHS_ENOMEM, "search: out of memory");

	j->n++; /* what the slot gets is freed with the job, even after an error */
	if (rc == SHS_OK)
		rc = shs_plan_set_mesh(r, &j->cluster.mesh, &j->e);
	if (rc == SHS_OK) {
		r->kind = g->kind;
		shs_hw_chip(&j->cluster.hw, &r->chip);
		r->fsdp_state_only = g->state_only;
		r->ignore_hints = s->o->ignore_hints;
		r->gathers_hidden = s->gathers_hidden;
		r->comp_hash = s->comp_hash;
		r->views = s->views;
		r->lists = lists;
		r->warn = s->o->warn ? job_warn : NULL;
		r->warn_user = j;
		rc = shs_plan_make(s->h, s->m, r, p, &j->e);
	}
	refused = rc == SHS_EUNSUPPORTED; /* a module of shard_map regions */
	if (rc == SHS_OK)
		refused = (rc = evaluate(s, *p, &j->cluster, ev, &o.remat, &j->e)) == SHS_EINVAL;
	/* a pipeline the plan or the evaluator refuses (a module of shard_map regions, layers
	 * the stages cannot split, no micro-batch count and chunks that suit them): the
	 * candidate is left out, not the search */
	if (refused && has_axis(&j->cluster.mesh, "stage")) {
		shs_plan_free(*p);
		*p = NULL;
		j->n--;
		j->skipped++;
		free(r);
		return SHS_OK;
	}
	if (rc == SHS_OK)
		rc = shs__search_refine(s->h, s->m, &j->cluster, &o, false, *p, ev, &evaluated,
					&exact, &j->e);
	if (rc == SHS_OK) {
		j->refine_evals += evaluated;
		j->exact &= exact;
		summarize(&j->cluster, g, o.remat, ev, &j->tries[j->n - 1]);
		j->tries[j->n - 1].gathers_hidden = s->gathers_hidden;
	}
	free(r);
	return rc;
}

/* Whether seeding g on mesh cannot fit whatever propagation makes of it: its model state at
 * the best sharding the seeds allow (weights and gradients over fsdp, context and tensor, or
 * over tensor alone for ZeRO-1/2; Adam state over all; and over expert, as if every weight
 * were an expert's) is over the HBM already. */
static bool cannot_fit(const shs__searcher *s, const shs_cluster *c, const seeding *g)
{
	double f = 1, t = 1;

	for (uint32_t a = 0; a < c->mesh.n_axes; a++) {
		if (!strcmp(c->mesh.names[a], "fsdp") || !strcmp(c->mesh.names[a], "context"))
			f *= (double)c->mesh.sizes[a];
		/* pipeline stages hold a share of the layers each, as a split of every weight */
		if (!strcmp(c->mesh.names[a], "tensor") || !strcmp(c->mesh.names[a], "expert") ||
		    !strcmp(c->mesh.names[a], "stage"))
			t *= (double)c->mesh.sizes[a];
	}
	return 2 * s->weights / (g->state_only ? t : f * t) + s->optimizer / (f * t) >
	       c->hw.hbm_bytes;
}

void shs__search_job_run(const shs__searcher *s, const char *mesh, bool pinned,
			 shs__search_job *j)
{
	shs_cluster_spec spec = *s->spec;
	seeding g[SHS__SEARCH_SEEDINGS];
	bool skip[SHS__SEARCH_SEEDINGS] = { false };
	shs_plan_lists *lists = NULL;
	uint32_t n = 0, tried = 0;
	int rc;

	j->exact = true;
	spec.mesh = mesh;
	rc = shs_cluster_make(s->cat, &spec, &j->cluster, &j->e);
	if (rc == SHS_EINVAL && !pinned) {
		j->skipped++;
		rc = SHS_OK;
	} else if (rc == SHS_OK) {
		n = seedings_of(&j->cluster.mesh, g);
	}
	for (uint32_t k = 0; k < n; k++) {
		skip[k] = !pinned && s->prune && cannot_fit(s, &j->cluster, &g[k]);
		j->pruned += skip[k];
		tried += !skip[k];
	}
	/* the plans of one mesh ask many of the same queries */
	if (rc == SHS_OK && tried > 1)
		rc = shs_plan_lists_new(s->m, &j->cluster.mesh, &lists, &j->e);
	for (uint32_t k = 0; k < n && rc == SHS_OK; k++)
		if (!skip[k])
			rc = try_plan(s, j, &g[k], lists);
	shs_plan_lists_free(lists);
	j->rc = rc;
}

void shs__search_job_free(shs__search_job *j)
{
	if (!j)
		return;
	for (uint32_t k = 0; k < j->n; k++) {
		shs_plan_free(j->plans[k]);
		shs_eval_free(&j->evals[k]);
	}
	for (uint32_t k = 0; k < j->n_warnings && k < SHS__SEARCH_JOB_WARNINGS; k++)
		free(j->warnings[k]);
	memset(j, 0, sizeof(*j));
}
