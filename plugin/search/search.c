/* The search: the meshes of the cluster (search_mesh.c; all of them, or when they are many the
 * canonical ones and then a local search from the best: search_local.c), each a job
 * (search_job.c) run on as many threads as asked (search_pool.c) and merged in mesh order: the
 * fastest plan that fits wins; the winner, when its per-instruction choices were too many to
 * enumerate, gets one sweep of coordinate descent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io.h"
#include "search_internal.h"

enum { MAX_MESHES = 4096 };

/* The merge's state: the result being built, and per mesh of the enumeration whether it was
 * tried and its best candidate. Touched by one merge at a time. */
typedef struct merger {
	const shs__searcher *s;
	shs_search_result *out;
	uint32_t cap_tries;
	bool all_exact;         /* every candidate so far was refined exhaustively */
	double start;
	const uint32_t *list;   /* the pool's k-th mesh is the enumeration's list[k] */
	bool *tried;            /* per mesh of the enumeration */
	bool *has_best;
	shs_search_try *best;   /* per mesh: its best candidate */
	shs_err *e;
} merger;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

bool shs_search_beats(const shs_search_try *a, const shs_search_try *b)
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

static int add_try(merger *g, const shs_search_try *t)
{
	shs_search_result *r = g->out;

	if (r->n_tries == g->cap_tries) {
		uint32_t cap = g->cap_tries ? 2 * g->cap_tries : 16;
		shs_search_try *grown = realloc(r->tries, cap * sizeof(*grown));
		if (!grown)
			return shs_seterr(g->e, SHS_ENOMEM, "search: out of memory");
		r->tries = grown;
		g->cap_tries = cap;
	}
	r->tries[r->n_tries] = *t;
	r->tries[r->n_tries].order = r->n_tries;
	r->n_tries++;
	return SHS_OK;
}

/* Takes job j into the result: its warnings passed on, its counts added, each of its
 * candidates listed in turn and kept when it beats the best so far (the same as trying the
 * meshes one after another). */
static int merge(void *user, uint32_t k_list, shs__search_job *j)
{
	merger *g = user;
	shs_search_result *out = g->out;
	const shs_search_options *o = g->s->o;
	uint32_t mesh = g->list ? g->list[k_list] : 0;
	int rc = j->rc;

	for (uint32_t k = 0; o->warn && k < j->n_warnings && k < SHS__SEARCH_JOB_WARNINGS; k++)
		if (j->warnings[k])
			o->warn(o->warn_user, j->warnings[k]);
	if (rc != SHS_OK) {
		*g->e = j->e;
		return rc;
	}
	out->n_skipped += j->skipped;
	out->n_pruned += j->pruned;
	out->refine_evals += j->refine_evals;
	g->all_exact &= j->exact;
	out->n_meshes_tried++;
	if (g->tried)
		g->tried[mesh] = true;
	for (uint32_t k = 0; k < j->n && rc == SHS_OK; k++) {
		rc = add_try(g, &j->tries[k]);
		if (g->has_best && (!g->has_best[mesh] ||
				    shs_search_beats(&j->tries[k], &g->best[mesh]))) {
			g->best[mesh] = j->tries[k];
			g->has_best[mesh] = true;
		}
		if (rc != SHS_OK || (out->plan && !shs_search_beats(&j->tries[k], &out->best)))
			continue;
		shs_plan_free(out->plan);
		shs_eval_free(&out->eval);
		out->plan = j->plans[k];
		out->eval = j->evals[k];
		j->plans[k] = NULL;
		j->evals[k] = (shs_eval){ 0 };
		out->cluster = j->cluster;
		for (uint32_t a = 0; a < out->cluster.mesh.n_axes; a++)
			out->cluster.mesh.names[a] = out->cluster.axis_names[a];
		out->best = out->tries[out->n_tries - 1];
	}
	if (o->progress)
		o->progress(o->progress_user, out->n_meshes_tried, out->n_meshes,
			    out->plan ? out->best.step_time_s : 0, now_s() - g->start);
	return rc;
}

/* The time budget is spent and there is a plan to return. */
static bool out_of_time(void *user)
{
	merger *g = user;

	if (g->s->o->time_budget_s > 0 && g->out->plan &&
	    now_s() - g->start > g->s->o->time_budget_s)
		g->out->partial = true;
	return g->out->partial;
}

void shs__search_model_state(const shs_module *m, double *weights, double *optimizer)
{
	const shs_computation *c = shs_module_entry(m);
	char path[SHS_PATH_CAP];

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

/* One coordinate-descent sweep over the best plan's per-instruction choices. */
static int sweep_best(merger *g)
{
	shs_search_result *out = g->out;
	shs_eval_options o = g->s->o->eval;
	uint32_t evaluated = 0;
	bool exact = false;
	int rc;

	o.remat = out->best.remat;
	rc = shs__search_refine(g->s->h, g->s->m, &out->cluster, &o, true, out->plan, &out->eval,
				&evaluated, &exact, g->e);
	out->refine_evals += evaluated;
	if (rc == SHS_OK)
		shs__search_summary(&out->eval, &out->best);
	return rc;
}

static int compare_tries(const void *a, const void *b)
{
	const shs_search_try *x = a, *y = b;

	if (shs_search_beats(x, y) || shs_search_beats(y, x))
		return shs_search_beats(x, y) ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Tries the meshes list[0..n) of the enumeration (texts) on the options' threads. */
static int try_list(shs__searcher *s, merger *g, const char (*texts)[SHS_SEARCH_TEXT],
		    const uint32_t *list, uint32_t n)
{
	char (*picked)[SHS_SEARCH_TEXT] = malloc((n + 1) * sizeof(*picked));
	int rc;

	if (!picked)
		return shs_seterr(g->e, SHS_ENOMEM, "search: out of memory");
	for (uint32_t k = 0; k < n; k++)
		memcpy(picked[k], texts[list[k]], sizeof(picked[k]));
	g->list = list;
	rc = shs__search_pool(s, (const char(*)[SHS_SEARCH_TEXT])picked, n, false,
			      s->o->threads, merge, out_of_time, g, g->e);
	free(picked);
	return rc;
}

/* Whether mesh x ranks before mesh y: its best candidate beats y's, or neither beats the
 * other and x comes earlier in the enumeration. */
static bool ranks_before(const merger *g, uint32_t x, uint32_t y)
{
	if (shs_search_beats(&g->best[x], &g->best[y]))
		return true;
	return !shs_search_beats(&g->best[y], &g->best[x]) && x < y;
}

/* The (at most SHS_SEARCH_LOCAL_TOP) best meshes tried so far, best first, into top; returns
 * how many. */
static uint32_t best_meshes(const merger *g, uint32_t n, uint32_t *top)
{
	uint32_t count = 0;

	for (uint32_t k = 0; k < n; k++) {
		uint32_t at = count;
		if (!g->has_best[k])
			continue;
		while (at > 0 && ranks_before(g, k, top[at - 1]))
			at--;
		if (at >= SHS_SEARCH_LOCAL_TOP)
			continue;
		if (count < SHS_SEARCH_LOCAL_TOP)
			count++;
		memmove(&top[at + 1], &top[at], (count - 1 - at) * sizeof(*top));
		top[at] = k;
	}
	return count;
}

/* The second opinion (SHS_SEARCH_SECOND_TOP): the best meshes so far propagated again with
 * every gather into a matmul scored as hidden, where chip c decomposes no matmul, seedings
 * whose state cannot fit skipped again (the counts of meshes tried, skipped and pruned stay
 * those of the search). */
static int second_opinion(shs__searcher *s, merger *g, const char (*texts)[SHS_SEARCH_TEXT],
			  uint32_t n, const shs_hardware *c)
{
	uint32_t top[SHS_SEARCH_LOCAL_TOP], n_top = best_meshes(g, n, top);
	shs_search_result *out = g->out;
	uint32_t tried = out->n_meshes_tried, skipped = out->n_skipped, pruned = out->n_pruned;
	bool prune = s->prune;
	int rc;

	if (!(c->windowed_einsum_bytes > 0) || !n_top || out->partial)
		return SHS_OK;
	s->gathers_hidden = true;
	s->prune = true;
	rc = try_list(s, g, texts, top, n_top < SHS_SEARCH_SECOND_TOP ? n_top :
				   SHS_SEARCH_SECOND_TOP);
	s->gathers_hidden = false;
	s->prune = prune;
	out->n_meshes_tried = tried;
	out->n_skipped = skipped;
	out->n_pruned = pruned;
	return rc;
}

/* Every mesh when they are few (or the options ask), else the canonical ones and then, round
 * after round, the untried neighbours of the best ones so far, until there are none. */
static int try_meshes(shs__searcher *s, merger *g, const char (*texts)[SHS_SEARCH_TEXT],
		      const int64_t (*sizes)[SHS_SEARCH_AXES], uint32_t n)
{
	uint32_t *list = calloc(n + 1, sizeof(*list));
	uint32_t top[SHS_SEARCH_LOCAL_TOP], n_list = 0, n_top;
	int rc = list ? SHS_OK : shs_seterr(g->e, SHS_ENOMEM, "search: out of memory");

	memset(g->tried, 0, n * sizeof(*g->tried));
	memset(g->has_best, 0, n * sizeof(*g->has_best));
	if (rc == SHS_OK && (s->o->exhaustive || n <= SHS_SEARCH_ALL_MESHES)) {
		for (uint32_t k = 0; k < n; k++)
			list[n_list++] = k;
	} else if (rc == SHS_OK) {
		n_list = shs__search_canonical(sizes, n, list);
		g->out->local = true;
	}
	while (rc == SHS_OK && n_list && !g->out->partial) {
		rc = try_list(s, g, texts, list, n_list);
		if (rc != SHS_OK || !g->out->local)
			break;
		n_top = best_meshes(g, n, top);
		n_list = shs__search_frontier(sizes, n, g->tried, top, n_top, list);
	}
	free(list);
	return rc;
}

int shs_search(shs_host *h, const shs_module *m, const shs_hw_catalog *cat,
	       const shs_cluster_spec *spec, const shs_search_options *o,
	       shs_search_result *out, shs_err *e)
{
	shs__searcher s = { .h = h, .m = m, .cat = cat, .spec = spec, .o = o };
	merger g = { .s = &s, .out = out, .all_exact = true, .e = e };
	char (*meshes)[SHS_SEARCH_TEXT] = NULL;
	int64_t (*sizes)[SHS_SEARCH_AXES] = NULL;
	uint64_t *hash = NULL;
	shs_host_views *views = NULL;
	shs_cluster_spec whole = *spec;
	shs_cluster *base = calloc(1, sizeof(*base));
	shs__search_model model;
	uint32_t n = 0;
	int rc = base ? SHS_OK : shs_seterr(e, SHS_ENOMEM, "search: out of memory");

	memset(out, 0, sizeof(*out));
	model = shs__search_model_of(m);
	if (!o->stages)
		model.layers = 0; /* no stage axis */
	out->experts = model.experts;
	g.start = now_s();
	whole.mesh = NULL;
	if (rc == SHS_OK && (!(meshes = malloc(MAX_MESHES * sizeof(*meshes))) ||
			     !(sizes = malloc(MAX_MESHES * sizeof(*sizes))) ||
			     !(g.tried = calloc(MAX_MESHES, sizeof(*g.tried))) ||
			     !(g.has_best = calloc(MAX_MESHES, sizeof(*g.has_best))) ||
			     !(g.best = calloc(MAX_MESHES, sizeof(*g.best))) ||
			     !(hash = calloc(m->n_comps + 1, sizeof(*hash)))))
		rc = shs_seterr(e, SHS_ENOMEM, "search: out of memory");
	if (rc == SHS_OK)
		rc = shs_module_hash(m, hash, e);
	if (rc == SHS_OK)
		rc = shs_host_views_make(m, &views, e);
	s.comp_hash = hash;
	s.views = views;
	if (rc == SHS_OK && o->mesh) {
		static const uint32_t first = 0;
		if ((size_t)snprintf(meshes[0], SHS_SEARCH_TEXT, "%s", o->mesh) >= SHS_SEARCH_TEXT)
			rc = shs_seterr(e, SHS_EINVAL, "search: mesh '%.32s...' is too long",
					o->mesh);
		g.list = &first;
		if (rc == SHS_OK)
			rc = shs__search_pool(&s, (const char(*)[SHS_SEARCH_TEXT])meshes, 1, true, 1,
					      merge, out_of_time, &g, e);
		out->n_meshes = 1;
		goto done;
	}
	if (rc == SHS_OK)
		rc = shs_cluster_make(cat, &whole, base, e);
	if (rc == SHS_OK)
		n = shs__search_meshes(base->devices, &model, meshes, sizes, MAX_MESHES);
	if (n > MAX_MESHES)
		n = MAX_MESHES;
	out->n_meshes = n;
	/* seedings whose state cannot fit are skipped, unless then none would be tried */
	shs__search_model_state(m, &s.weights, &s.optimizer);
	s.prune = true;
	for (int round = 0; round < 2 && rc == SHS_OK && !out->plan; round++) {
		out->n_meshes_tried = 0;
		rc = try_meshes(&s, &g, (const char(*)[SHS_SEARCH_TEXT])meshes,
				(const int64_t(*)[SHS_SEARCH_AXES])sizes, n);
		s.prune = false;
	}
	if (rc == SHS_OK && out->plan)
		rc = second_opinion(&s, &g, (const char(*)[SHS_SEARCH_TEXT])meshes, n, &base->hw);
done:
	if (rc == SHS_OK && !out->plan)
		rc = shs_seterr(e, SHS_EINVAL, "search: no mesh fits the cluster's physical axes");
	/* the winner, when the space was too large to enumerate, gets one sweep */
	if (rc == SHS_OK && !g.all_exact && !out->partial)
		rc = sweep_best(&g);
	if (rc == SHS_OK) {
		out->exact = g.all_exact && !out->partial;
		qsort(out->tries, out->n_tries, sizeof(*out->tries), compare_tries);
		out->zero_stage = shs__zero_stage(m, out->plan, &out->eval);
		out->search_time_s = now_s() - g.start;
	} else {
		shs_search_result_free(out);
	}
	free(meshes);
	free(sizes);
	free(g.tried);
	free(g.has_best);
	free(g.best);
	free(hash);
	shs_host_views_free(views);
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
