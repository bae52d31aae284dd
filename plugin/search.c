/* The search: every mesh of the cluster (search_mesh.c), on each the plans its axes seed (ZeRO-3
 * and ZeRO-1/2 over fsdp, with tensor parallelism when it has a tensor axis, splitting the
 * sequence when it has a sequence axis) unless their model state alone is over the HBM, each made
 * by propagation, refined by per-instruction choices where they are few (search_refine.c) and
 * evaluated with more remat while it does not fit; the fastest that fits wins. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search.h"

enum { MAX_MESHES = 4096, PATH_CAP = 512 };

/* One plan seeding: the named plan's kind and whether fsdp splits only the optimizer state. */
typedef struct seeding {
	shs_plan_kind kind;
	bool state_only;
	const char *name;
} seeding;

typedef struct searcher {
	shs_host *h;
	const shs_module *m;
	const shs_hw_catalog *cat;
	const shs_cluster_spec *spec;
	const shs_search_options *o;
	shs_search_result *out;
	uint32_t cap_tries;
	bool all_exact;         /* every candidate so far was refined exhaustively */
	double weights, optimizer; /* bytes of the model state, whole (memory bounds) */
	bool prune;             /* skip seedings whose state alone cannot fit */
	double start;
	shs_err *e;
} searcher;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static bool has_axis(const shs_mesh *mesh, const char *name)
{
	for (uint32_t a = 0; a < mesh->n_axes; a++)
		if (!strcmp(mesh->names[a], name) && mesh->sizes[a] > 1)
			return true;
	return false;
}

/* The seedings a mesh's axes call for (a sequence axis splits the token batch's sequence under
 * every one of them: "+sp"). */
static uint32_t seedings_of(const shs_mesh *mesh, seeding *out)
{
	static const char *const names[2][2][2] = {
		{ { "dp", "dp+sp" }, { "tp", "tp+sp" } },
		{ { "fsdp", "fsdp+sp" }, { "fsdp+tp", "fsdp+tp+sp" } },
	};
	static const char *const zero1[2][2] = { { "zero1", "zero1+sp" },
						 { "zero1+tp", "zero1+tp+sp" } };
	int fsdp = has_axis(mesh, "fsdp"), tensor = has_axis(mesh, "tensor");
	int sp = has_axis(mesh, "sequence");
	shs_plan_kind kind = fsdp ? (tensor ? SHS_PLAN_FSDP_TP : SHS_PLAN_FSDP)
				  : (tensor ? SHS_PLAN_TP : SHS_PLAN_DP);
	uint32_t n = 0;

	out[n++] = (seeding){ kind, false, names[fsdp][tensor][sp] };
	if (fsdp)
		out[n++] = (seeding){ kind, true, zero1[tensor][sp] };
	return n;
}

bool shs__search_beats(const shs_search_try *a, const shs_search_try *b)
{
	double tie = SHS_SEARCH_TIE * (a->step_time_s > b->step_time_s ? a->step_time_s
									 : b->step_time_s);

	if (a->fits != b->fits)
		return a->fits;
	if (!a->fits)
		return a->memory_bytes < b->memory_bytes;
	if (a->step_time_s < b->step_time_s - tie || a->step_time_s > b->step_time_s + tie)
		return a->step_time_s < b->step_time_s;
	return a->comm_s < b->comm_s * (1 - SHS_SEARCH_TIE);
}

static int add_try(searcher *s, const shs_search_try *t)
{
	shs_search_result *r = s->out;

	if (r->n_tries == s->cap_tries) {
		uint32_t cap = s->cap_tries ? 2 * s->cap_tries : 16;
		shs_search_try *grown = realloc(r->tries, cap * sizeof(*grown));
		if (!grown)
			return shs_seterr(s->e, SHS_ENOMEM, "search: out of memory");
		r->tries = grown;
		s->cap_tries = cap;
	}
	r->tries[r->n_tries] = *t;
	r->tries[r->n_tries].order = r->n_tries;
	r->n_tries++;
	return SHS_OK;
}

void shs__search_summary(const shs_eval *ev, shs_search_try *t)
{
	t->step_time_s = ev->step_time_s;
	t->compute_s = ev->compute_s;
	t->exposed_comm_s = ev->exposed_comm_s;
	t->comm_s = ev->comm_s;
	t->memory_bytes = ev->memory_bytes;
	t->mfu = ev->mfu;
	t->bound = ev->bound;
	t->fits = ev->fits;
}

static void summarize(const shs_cluster *c, const seeding *g, const shs_eval *ev,
		      shs_search_try *t)
{
	memset(t, 0, sizeof(*t));
	shs_cluster_describe(c, t->mesh, sizeof(t->mesh));
	/* the mesh and its layout only, without the hardware in parentheses */
	t->mesh[strcspn(t->mesh, " ")] = '\0';
	snprintf(t->plan, sizeof(t->plan), "%s", g->name);
	shs__search_summary(ev, t);
}

/* Evaluates p on c: with the options' remat policy, or, unless it is fixed, with more remat
 * while the plan does not fit (dots, then full); *remat is the policy used. */
static int evaluate(searcher *s, const shs_plan *p, const shs_cluster *c, shs_eval *ev,
		    shs_remat *remat)
{
	shs_eval_options o = s->o->eval;
	int rc = shs_evaluate(s->m, p, c, &o, ev, s->e);

	while (rc == SHS_OK && !ev->fits && !s->o->fixed_remat && o.remat < SHS_REMAT_FULL) {
		o.remat = (shs_remat)(o.remat + 1);
		shs_eval_free(ev);
		rc = shs_evaluate(s->m, p, c, &o, ev, s->e);
	}
	*remat = o.remat;
	return rc;
}

/* Refines plan p (evaluated as *ev with remat) by per-instruction choices: exhaustively when
 * they are few, or (allow_sweep) by a sweep; counts the evaluations and whether every plan the
 * search kept was refined exhaustively. */
static int refine(searcher *s, const shs_cluster *c, shs_remat remat, bool allow_sweep,
		  shs_plan *p, shs_eval *ev)
{
	shs_eval_options o = s->o->eval;
	uint32_t n = 0;
	bool exact = false;
	int rc;

	o.remat = remat;
	rc = shs__search_refine(s->h, s->m, c, &o, allow_sweep, p, ev, &n, &exact, s->e);
	s->out->refine_evals += n;
	s->all_exact &= exact;
	return rc;
}

/* Makes and evaluates the plan seeding g calls for on cluster c; keeps it when it is the best. */
static int try_plan(searcher *s, const shs_cluster *c, const seeding *g)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_search_result *out = s->out;
	char mesh[SHS_SEARCH_TEXT];
	shs_search_try t;
	shs_remat remat = SHS_REMAT_NONE;
	shs_plan *p = NULL;
	shs_eval ev = { 0 };
	int rc = r ? SHS_OK : shs_seterr(s->e, SHS_ENOMEM, "search: out of memory");

	if (rc == SHS_OK) {
		shs_mesh_text(&c->mesh, mesh, sizeof(mesh));
		rc = shs_plan_parse_mesh(r, mesh, s->e);
	}
	if (rc == SHS_OK) {
		r->kind = g->kind;
		r->fsdp_state_only = g->state_only;
		r->ignore_hints = s->o->ignore_hints;
		r->warn = s->o->warn;
		r->warn_user = s->o->warn_user;
		rc = shs_plan_make(s->h, s->m, r, &p, s->e);
	}
	if (rc == SHS_OK)
		rc = evaluate(s, p, c, &ev, &remat);
	if (rc == SHS_OK)
		rc = refine(s, c, remat, false, p, &ev);
	if (rc == SHS_OK) {
		summarize(c, g, &ev, &t);
		t.remat = remat;
		rc = add_try(s, &t);
	}
	if (rc == SHS_OK && (!out->plan || shs__search_beats(&t, &out->best))) {
		shs_plan_free(out->plan);
		shs_eval_free(&out->eval);
		out->plan = p;
		out->eval = ev;
		out->cluster = *c;
		for (uint32_t a = 0; a < c->mesh.n_axes; a++)
			out->cluster.mesh.names[a] = out->cluster.axis_names[a];
		out->best = t;
		p = NULL;
		ev = (shs_eval){ 0 };
	}
	shs_plan_free(p);
	shs_eval_free(&ev);
	free(r);
	return rc;
}

/* The bytes of the model state as the evaluator counts them: the float entry parameters that
 * an output aliases, Adam's ("opt_state" in their path) apart from the weights. */
static void model_state(const shs_module *m, double *weights, double *optimizer)
{
	const shs_computation *c = shs_module_entry(m);
	char path[PATH_CAP];

	*weights = *optimizer = 0;
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		double b;
		bool aliased = false;
		if (in->op != SHS_OP_PARAMETER || in->shape.type == SHS_TUPLE || !in->shape.rank ||
		    !shs_elem_is_float(in->shape.type))
			continue;
		for (uint32_t a = 0; a < m->n_aliases; a++)
			aliased |= m->aliases[a].param_number == in->parameter_number;
		if (!aliased)
			continue;
		b = (double)shs_elem_bytes(in->shape.type);
		for (uint32_t d = 0; d < in->shape.rank; d++)
			b *= (double)in->shape.dims[d];
		shs_param_path(in, path, sizeof(path));
		*(strstr(path, "opt_state") ? optimizer : weights) += b;
	}
}

/* Whether seeding g on mesh cannot fit whatever propagation makes of it: its model state at
 * the best sharding the seeds allow (weights and gradients over fsdp and tensor, or over tensor
 * alone for ZeRO-1/2; Adam state over both) is over the HBM already. */
static bool cannot_fit(const searcher *s, const shs_cluster *c, const seeding *g)
{
	double f = 1, t = 1;

	for (uint32_t a = 0; a < c->mesh.n_axes; a++) {
		if (!strcmp(c->mesh.names[a], "fsdp"))
			f = (double)c->mesh.sizes[a];
		if (!strcmp(c->mesh.names[a], "tensor"))
			t = (double)c->mesh.sizes[a];
	}
	return 2 * s->weights / (g->state_only ? t : f * t) + s->optimizer / (f * t) >
	       c->hw.hbm_bytes;
}

/* Lays mesh on the cluster and tries every seeding its axes call for. A mesh the physical axes
 * cannot hold is skipped, unless it is the one the caller pinned (an error). */
static int try_mesh(searcher *s, const char *mesh, bool pinned)
{
	shs_cluster_spec spec = *s->spec;
	shs_cluster *c = malloc(sizeof(*c));
	seeding g[2];
	uint32_t n = 0;
	int rc = c ? SHS_OK : shs_seterr(s->e, SHS_ENOMEM, "search: out of memory");

	spec.mesh = mesh;
	if (rc == SHS_OK)
		rc = shs_cluster_make(s->cat, &spec, c, s->e);
	if (rc == SHS_EINVAL && !pinned) {
		s->out->n_skipped++;
		rc = SHS_OK;
	} else if (rc == SHS_OK) {
		n = seedings_of(&c->mesh, g);
	}
	for (uint32_t k = 0; k < n && rc == SHS_OK; k++) {
		if (!pinned && s->prune && cannot_fit(s, c, &g[k])) {
			s->out->n_pruned++;
			continue;
		}
		rc = try_plan(s, c, &g[k]);
	}
	free(c);
	return rc;
}

/* One coordinate-descent sweep over the best plan's per-instruction choices. */
static int sweep_best(searcher *s)
{
	shs_search_result *out = s->out;
	int rc = refine(s, &out->cluster, out->best.remat, true, out->plan, &out->eval);

	if (rc == SHS_OK)
		shs__search_summary(&out->eval, &out->best);
	return rc;
}

/* The token batch [B, S]: the first integer entry parameter of rank 2 or more; zeros when
 * there is none. */
static void token_batch(const shs_module *m, int64_t tokens[2])
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		if (in->op == SHS_OP_PARAMETER && in->shape.rank >= 2 &&
		    in->shape.type != SHS_TUPLE && !shs_elem_is_float(in->shape.type)) {
			tokens[0] = in->shape.dims[0];
			tokens[1] = in->shape.dims[1];
			return;
		}
	}
}

static int compare_tries(const void *a, const void *b)
{
	const shs_search_try *x = a, *y = b;

	if (shs__search_beats(x, y) || shs__search_beats(y, x))
		return shs__search_beats(x, y) ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int shs_search(shs_host *h, const shs_module *m, const shs_hw_catalog *cat,
	       const shs_cluster_spec *spec, const shs_search_options *o,
	       shs_search_result *out, shs_err *e)
{
	searcher s = { .h = h, .m = m, .cat = cat, .spec = spec, .o = o, .out = out, .e = e,
		       .all_exact = true };
	char (*meshes)[SHS_SEARCH_TEXT] = NULL;
	shs_cluster_spec whole = *spec;
	shs_cluster *base = calloc(1, sizeof(*base));
	int64_t tokens[2] = { 0, 0 };
	uint32_t n = 0;
	int rc = base ? SHS_OK : shs_seterr(e, SHS_ENOMEM, "search: out of memory");

	memset(out, 0, sizeof(*out));
	s.start = now_s();
	whole.mesh = NULL;
	if (rc == SHS_OK && o->mesh) {
		rc = try_mesh(&s, o->mesh, true);
		goto done;
	}
	if (rc == SHS_OK)
		rc = shs_cluster_make(cat, &whole, base, e);
	token_batch(m, tokens);
	if (rc == SHS_OK && !(meshes = malloc(MAX_MESHES * sizeof(*meshes))))
		rc = shs_seterr(e, SHS_ENOMEM, "search: out of memory");
	if (rc == SHS_OK)
		n = shs__search_meshes(base->devices, tokens[0], tokens[1], meshes, MAX_MESHES);
	if (n > MAX_MESHES)
		n = MAX_MESHES;
	/* seedings whose state cannot fit are skipped, unless then none would be tried */
	model_state(m, &s.weights, &s.optimizer);
	s.prune = true;
	for (int round = 0; round < 2 && rc == SHS_OK && !out->plan; round++) {
		for (uint32_t k = 0; k < n && rc == SHS_OK; k++) {
			if (o->time_budget_s > 0 && out->plan &&
			    now_s() - s.start > o->time_budget_s) {
				out->partial = true;
				break;
			}
			rc = try_mesh(&s, meshes[k], false);
		}
		s.prune = false;
	}
done:
	if (rc == SHS_OK && !out->plan)
		rc = shs_seterr(e, SHS_EINVAL, "search: no mesh fits the cluster's physical axes");
	/* the winner, when the space was too large to enumerate, gets one sweep */
	if (rc == SHS_OK && !s.all_exact && !out->partial)
		rc = sweep_best(&s);
	if (rc == SHS_OK) {
		out->exact = s.all_exact && !out->partial;
		qsort(out->tries, out->n_tries, sizeof(*out->tries), compare_tries);
		out->zero_stage = shs__zero_stage(m, out->plan, &out->eval);
		out->search_time_s = now_s() - s.start;
	} else {
		shs_search_result_free(out);
	}
	free(meshes);
	free(base);
	return rc;
}

void shs_search_result_free(shs_search_result *r)
{
	if (!r)
		return;
	shs_plan_free(r->plan);
	shs_eval_free(&r->eval);
	free(r->tries);
	memset(r, 0, sizeof(*r));
}
