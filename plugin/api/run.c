/* The one pipeline of a run: options made ready, plugins, the search or a named plan, the plan
 * written into the module and the module verified (the command line, the context, the pass). */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "io.h"
#include "manual.h"
#include "microbatch.h"
#include "pipeline_rewrite.h"
#include "report.h"
#include "run.h"

/* The catalog entry a named plan is propagated on when no hardware is given. */
static const char default_chip[] = "v5p";

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* The cluster o's hardware, topology or devices and mesh describe, for a named plan. */
static int make_cluster(shs_run *r, shs_err *e)
{
	shs_cluster_spec spec = r->o->spec;
	int rc;

	spec.mesh = r->o->mesh;
	rc = shs_cluster_make(r->cat, &spec, &r->cluster, e);
	r->has_cluster = rc == SHS_OK;
	return rc;
}

/* The chip the request's candidates are compared on: the cluster's, o's hardware, or the
 * catalog's default_chip. */
static int request_chip(const shs_run *r, shs_plan_chip *out, shs_err *e)
{
	const char *name = r->o->spec.hardware ? r->o->spec.hardware : default_chip;
	const shs_hardware *hw = r->has_cluster ? &r->cluster.hw : shs_hw_find(r->cat, name);

	if (!hw)
		return shs_seterr(e, SHS_EINVAL, "unknown hardware '%s'", name);
	shs_hw_chip(hw, out);
	return SHS_OK;
}

/* Whether mesh has pipeline stages: an axis named stage of more than one device. */
static bool staged(const shs_mesh *mesh)
{
	int a = shs_mesh_axis(mesh, "stage");

	return a >= 0 && mesh->sizes[a] > 1;
}

/* The plan request: the chip, the mesh (the cluster's axes without their layout, or o->mesh),
 * then the plan's name or file. */
static int make_request(shs_run *r, shs_err *e)
{
	const shs_run_options *o = r->o;
	shs_plan_request *q = calloc(1, sizeof(*q));
	int rc;

	if (!(r->request = q))
		return shs_seterr(e, SHS_ENOMEM, "plan: out of memory");
	rc = request_chip(r, &q->chip, e);
	q->ignore_hints = o->ignore_hints;
	q->gathers_hidden = o->gathers_hidden;
	q->warn = r->warn;
	q->warn_user = r->warn_user;
	q->kind = SHS_PLAN_RULES;
	if (rc == SHS_OK && r->has_cluster)
		rc = shs_plan_set_mesh(q, &r->cluster.mesh, e);
	else if (rc == SHS_OK && o->mesh)
		rc = shs_plan_parse_mesh(q, o->mesh, e);
	if (rc == SHS_OK && o->plan && ends_with(o->plan, ".json"))
		rc = shs_plan_load_json(q, o->plan, e);
	else if (rc == SHS_OK && o->plan)
		rc = shs_plan_parse_kind(q, o->plan, e);
	if (rc == SHS_OK && !q->mesh.n_axes)
		rc = shs_seterr(e, SHS_EINVAL, "no mesh: give --mesh AXIS=N,... (option mesh) or "
				"a plan file with a \"mesh\"");
	if (rc == SHS_OK && !r->has_cluster && staged(&q->mesh) &&
	    (o->microbatches > 1 || o->eval.pipeline || o->eval.virtual_stages > 1))
		rc = shs_seterr(e, SHS_EINVAL, "a pipeline over the mesh's stage axis runs on a "
				"cluster: give the hardware and its devices or topology (--hardware "
				"NAME --devices N) with --pipeline, --microbatches or --virtual-stages");
	return rc;
}

int shs_run_start(shs_run *r, const shs_run_options *o, shs_warn_fn warn, void *user,
		  shs_err *e)
{
	int rc = SHS_OK;

	memset(r, 0, sizeof(*r));
	r->o = o;
	r->warn = warn;
	r->warn_user = user;
	if (!(r->cat = calloc(1, sizeof(*r->cat))))
		return shs_seterr(e, SHS_ENOMEM, "out of memory");
	shs_hw_catalog_builtin(r->cat);
	if (o->hw_file)
		rc = shs_hw_catalog_load_json(r->cat, o->hw_file, e);
	if (rc != SHS_OK || (!o->plan && (!o->mesh || o->spec.hardware)))
		return rc; /* a search lays out its own pinned mesh */
	if (o->plan && o->spec.hardware && o->mesh && (o->spec.topology || o->spec.devices))
		rc = make_cluster(r, e); /* a named plan on a whole cluster (evaluate needs it) */
	if (rc == SHS_OK)
		rc = make_request(r, e);
	return rc;
}

int shs_run_plugins(shs_run *r, shs_err *e)
{
	int rc;

	if (r->host)
		return SHS_OK;
	if (!(r->host = shs_host_new(r->warn, r->warn_user)))
		return shs_seterr(e, SHS_ENOMEM, "plugins: out of memory");
	/* the time budget is a hard limit on plugin code, their inits included */
	rc = r->o->time_budget_s > 0 ? shs_host_watch(r->host, r->o->time_budget_s, e) : SHS_OK;
	if (rc == SHS_OK)
		rc = shs_host_load_default(r->host, r->o->dirs, r->o->env_plugins, e);
	rc = rc < 0 ? rc : SHS_OK; /* else the number loaded */
	for (uint32_t k = 0; k < r->o->n_files && rc == SHS_OK; k++)
		rc = shs_host_load(r->host, r->o->files[k], e);
	if (rc != SHS_OK) {
		shs_host_free(r->host);
		r->host = NULL;
	}
	return rc;
}

int shs_run_plan(shs_run *r, const shs_module *m, shs_err *e)
{
	int rc;

	if (!r->request)
		return shs_seterr(e, SHS_EINVAL, "no plan: give a plan and a mesh");
	rc = shs_run_plugins(r, e);
	if (rc != SHS_OK)
		return rc;
	shs_plan_free(r->plan);
	r->plan = NULL;
	return shs_plan_make(r->host, m, r->request, &r->plan, e);
}

static shs_search_options search_options(const shs_run *r)
{
	const shs_run_options *o = r->o;

	shs_eval_options eval = o->eval;

	eval.trace = NULL; /* the timeline is the chosen plan's alone (shs_run_trace) */
	return (shs_search_options){ .eval = eval, .fixed_remat = o->remat_given,
				     .mesh = o->mesh, .time_budget_s = o->time_budget_s,
				     .threads = o->threads, .exhaustive = o->exhaustive,
				     .stages = o->stages,
				     .ignore_hints = o->ignore_hints, .warn = r->warn,
				     .warn_user = r->warn_user, .progress = o->progress,
				     .progress_user = o->progress_user };
}

/* Records in r->search that count k searched to try t. */
static void note_try(shs_search_result *r, int64_t k, const shs_search_try *t)
{
	if (r->n_microbatch_tries >= SHS_SEARCH_MICROBATCH_TRIES)
		return;
	r->microbatch_counts[r->n_microbatch_tries] = k;
	r->microbatch_tries[r->n_microbatch_tries++] = *t;
}

/* The step as k micro-batches, searched: kept in r->search and *m (the whole step stays in
 * *whole) when it fits and beats what r->search holds. *stop is set when the step cannot be
 * split, or when a plan fits and this count, recomputing nothing, does not beat it (more
 * micro-batches only add weight gathers and accumulation and shrink the matmuls); while this
 * count still recomputes or offloads, more may drop that and win. */
static int try_microbatches(shs_run *r, shs_module *whole, shs_module **m, int64_t k,
			    bool *stop, shs_err *e)
{
	shs_search_options so = search_options(r);
	shs_search_result res = { 0 };
	shs_module *split = NULL;
	shs_err why = { 0 };
	int rc;

	/* the time budget is the whole search's: what the counts before used is spent */
	if (so.time_budget_s > 0) {
		so.time_budget_s -= r->search.search_time_s;
		if (so.time_budget_s <= 0) {
			r->search.partial = true;
			*stop = true;
			return SHS_OK;
		}
	}
	rc = shs_microbatch_rewrite(whole, k, &split, &why);

	if (rc == SHS_EINVAL || rc == SHS_EUNSUPPORTED) { /* cannot be split: said in the report */
		shs_str_copy(r->search.microbatch_refused, sizeof(r->search.microbatch_refused),
			     why.msg);
		*stop = true;
		return SHS_OK;
	}
	if (rc != SHS_OK)
		return shs_seterr(e, rc, "%s", why.msg);
	rc = shs_search(r->host, split, r->cat, &r->o->spec, &so, &res, e);
	if (rc != SHS_OK) {
		shs_module_free(split);
		return rc;
	}
	note_try(&r->search, k, &res.best);
	r->search.search_time_s += res.search_time_s; /* the search's time is all counts' */
	r->search.partial |= res.partial;
	/* a plan that does not fit is kept only whole (the advice is about the whole step) */
	if (!res.best.fits || !shs_search_beats(&res.best, &r->search.best)) {
		*stop = r->search.best.fits && res.best.fits && res.best.remat == SHS_REMAT_NONE;
		shs_search_result_free(&res);
		shs_module_free(split);
		return SHS_OK;
	}
	res.n_microbatch_tries = r->search.n_microbatch_tries;
	memcpy(res.microbatch_tries, r->search.microbatch_tries, sizeof(res.microbatch_tries));
	memcpy(res.microbatch_counts, r->search.microbatch_counts, sizeof(res.microbatch_counts));
	res.microbatches = k;
	res.sequences = r->search.sequences;
	res.search_time_s = r->search.search_time_s;
	res.partial = r->search.partial;
	shs_search_result_free(&r->search);
	r->search = res;
	for (uint32_t a = 0; a < r->search.cluster.mesh.n_axes; a++) /* its own storage */
		r->search.cluster.mesh.names[a] = r->search.cluster.axis_names[a];
	if (*m != whole)
		shs_module_free(*m);
	*m = split;
	return SHS_OK;
}

/* Micro-batch counts after the whole batch: divisors of the batch, each at least twice the
 * last, while the best plan does not fit (unless its model state alone is over the HBM), or
 * holds recomputation it could drop and the last count beat it (more micro-batches only add
 * work once nothing is recomputed), at most SHS_SEARCH_MICROBATCH_TRIES counts in all. *m
 * becomes the module of the plan kept. */
static int search_microbatches(shs_run *r, shs_module **m, shs_err *e)
{
	shs_module *whole = *m;
	int64_t batch = r->search.sequences, last = 1;
	bool stop = false;
	int rc = SHS_OK;

	/* the model state alone over the HBM: smaller micro-batches cannot make it fit */
	if (!r->search.best.fits && r->search.eval.state_bytes >= r->search.eval.hbm_bytes)
		return SHS_OK;
	for (int64_t k = 2; k <= batch && !stop && rc == SHS_OK &&
			    r->search.n_microbatch_tries < SHS_SEARCH_MICROBATCH_TRIES; k++) {
		if (batch % k || k < 2 * last)
			continue;
		/* a pipelined best already runs micro-batches: the whole step's may still win */
		if (r->search.best.fits && r->search.best.remat == SHS_REMAT_NONE &&
		    !r->search.eval.pipe.stages)
			break;
		rc = try_microbatches(r, whole, m, k, &stop, e);
		last = k;
	}
	if (*m != whole)
		shs_module_free(whole);
	return rc;
}

/* The search's plan for *m on o's cluster (r->search owns it); without o->microbatches, also
 * for *m as micro-batches (*m is then replaced by the micro-batched module of the plan kept). */
static int search(shs_run *r, shs_module **m, shs_err *e)
{
	const shs_run_options *o = r->o;
	shs_search_options so = search_options(r);
	int rc;

	if (!o->spec.hardware)
		return shs_seterr(e, SHS_EINVAL, "no hardware (to search) and no plan");
	shs_search_result_free(&r->search); /* a run searched again */
	r->searched = false;
	rc = shs_run_plugins(r, e);
	if (rc == SHS_OK)
		rc = shs_search(r->host, *m, r->cat, &o->spec, &so, &r->search, e);
	if (rc == SHS_OK) {
		r->search.microbatches = shs_microbatch_count(*m);
		r->search.sequences = shs_microbatch_batch(*m); /* the data keeps its shape */
		note_try(&r->search, r->search.microbatches, &r->search.best);
		if (o->microbatches < 1 && r->search.microbatches == 1 && r->search.sequences > 1)
			rc = search_microbatches(r, m, e);
	}
	r->searched = rc == SHS_OK;
	if (rc == SHS_OK && !r->search.best.fits)
		rc = shs_search_advise(r->host, *m, r->cat, &o->spec, &so, &r->search, e);
	if (rc == SHS_OK && !r->search.best.fits) {
		char advice[SHS_REPORT_ADVICE_TEXT];
		shs_advice_summary(&r->search, advice, sizeof(advice));
		rc = shs_seterr(e, SHS_ENOFIT, "%s", advice);
	}
	return rc;
}

/* Refuses a module XLA's partitioner has already run on (unless force): sharding it again would
 * describe devices that each hold a shard as if they held the whole. shard_map's regions, manual
 * over every axis or over some, are the program's own and stay (manual.h). */
static int unpartitioned(const shs_run *r, const shs_module *m, shs_err *e)
{
	const shs_computation *c = NULL;
	const shs_instr *w = r->o->force ? NULL : shs_partitioned_witness(m, &c);

	if (!w)
		return SHS_OK;
	return shs_seterr(e, SHS_EUNSUPPORTED, "the module is already partitioned: computation "
			  "'%s' holds %s '%s' outside any shard_map region (XLA's SPMD "
			  "partitioner writes those); give the module before partitioning (XLA's "
			  "dump of *.before_optimizations), or force (--force) to go on", c->name,
			  shs_opcode_name(w->op), w->name);
}

/* Whether r's cluster has pipeline stages (a mesh axis named stage of more than one device):
 * its micro-batches are the pipeline's, not a rewrite of the module. */
static bool pipelined(const shs_run *r)
{
	return r->has_cluster && staged(&r->cluster.mesh);
}

/* Refuses the pipeline's options (micro-batches, schedule, virtual stages) for a module whose
 * plan p says it pipelines itself (shs_plan.self_staged): they would go unused. */
static int self_staged_options(const shs_run *r, const shs_plan *p, shs_err *e)
{
	if (!p || !p->self_staged ||
	    (r->o->microbatches <= 1 && r->o->eval.virtual_stages <= 1 && !r->o->eval.pipeline))
		return SHS_OK;
	return shs_seterr(e, SHS_EINVAL, "the module pipelines itself (its shard_map regions "
			  "run the stage axis by hand): its micro-batches and schedule are the "
			  "program's; leave out --microbatches, --pipeline and --virtual-stages");
}

/* With a named plan pipelined by GPipe over the mesh's stage axis, *m written as the pipelined
 * program (shs_pipeline_rewrite), planned again (its regions run stage by hand) into r->plan.
 * A module the rewrite cannot take stays as it is, and r->pipeline_refused says why. */
static int write_pipeline(shs_run *r, shs_module **m, shs_err *e)
{
	shs_eval_options o = r->o->eval;
	shs_module *nm = NULL;
	shs_plan *np = NULL;
	shs_err why = { 0 };
	shs_eval ev;
	int rc;

	if (!pipelined(r) || r->searched || !r->plan || r->plan->self_staged)
		return SHS_OK;
	if (o.pipeline != SHS_PIPE_GPIPE || o.virtual_stages > 1) {
		shs_str_copy(r->pipeline_refused, sizeof(r->pipeline_refused),
			     "the program is written for --pipeline gpipe with one chunk a stage");
		return SHS_OK;
	}
	o.microbatches = r->o->microbatches;
	if (o.microbatches <= 1) { /* the count the evaluator picks */
		if ((rc = shs_evaluate(*m, r->plan, &r->cluster, &o, &ev, e)) != SHS_OK)
			return rc;
		o.microbatches = ev.pipe.microbatches;
		shs_eval_free(&ev);
	}
	shs_pipeline_request pr = { .mesh = &r->plan->mesh,
				    .stage_axis = (uint32_t)shs_mesh_axis(&r->plan->mesh, "stage"),
				    .microbatches = o.microbatches, .plan = r->plan };
	rc = shs_pipeline_rewrite(*m, &pr, &nm, &why); /* refuses a stage axis not first */
	if (rc == SHS_EINVAL) {
		shs_str_copy(r->pipeline_refused, sizeof(r->pipeline_refused), why.msg);
		return SHS_OK;
	}
	if (rc != SHS_OK)
		return shs_seterr(e, rc, "%s", why.msg);
	rc = shs_plan_make(r->host, nm, r->request, &np, e);
	if (rc == SHS_OK)
		rc = shs_plan_annotate(np, nm, e);
	if (rc == SHS_OK)
		rc = shs_module_verify(nm, e);
	if (rc != SHS_OK) {
		shs_plan_free(np);
		shs_module_free(nm);
		return rc;
	}
	shs_plan_free(r->plan);
	r->plan = np;
	shs_module_free(*m);
	*m = nm;
	r->pipeline_written = o.microbatches;
	return SHS_OK;
}

int shs_run_annotate(shs_run *r, shs_module **m, shs_err *e)
{
	int rc = unpartitioned(r, *m, e);

	if (rc == SHS_OK)
		rc = r->o->plan ? shs_run_plan(r, *m, e) : search(r, m, e);
	r->search.hints_ignored = r->o->ignore_hints;
	const shs_plan *p = r->searched ? r->search.plan : r->plan;

	if (rc == SHS_OK)
		rc = self_staged_options(r, p, e);
	if (rc == SHS_OK)
		rc = write_pipeline(r, m, e);
	if (rc == SHS_OK && r->pipeline_written)
		return SHS_OK; /* written, planned and annotated */
	if (rc == SHS_OK) /* not when nothing fits (SHS_ENOFIT): the module stays as it was */
		rc = shs_plan_annotate(p, *m, e);
	if (rc == SHS_OK)
		rc = shs_module_verify(*m, e);
	return rc;
}

int shs_run_evaluate(shs_run *r, const shs_module *m, shs_eval *ev, shs_err *e)
{
	shs_eval_options o = r->o->eval;
	int rc;

	if (!r->o->plan || !r->has_cluster)
		return shs_seterr(e, SHS_EINVAL, "evaluate: needs a plan, hardware, its topology "
				  "or device count, and a mesh");
	if (pipelined(r))
		o.microbatches = r->o->microbatches;
	rc = unpartitioned(r, m, e);
	if (rc == SHS_OK)
		rc = shs_run_plan(r, m, e);
	if (rc == SHS_OK)
		rc = self_staged_options(r, r->plan, e);
	return rc == SHS_OK ? shs_evaluate(m, r->plan, &r->cluster, &o, ev, e) : rc;
}

int shs_run_trace(const shs_run *r, const shs_module *m, shs_trace *t, shs_eval *ev, shs_err *e)
{
	shs_eval_options o = r->o->eval;
	const shs_plan *p = r->searched ? r->search.plan : r->plan;
	const shs_cluster *c = r->searched ? &r->search.cluster : &r->cluster;

	if (!p || (!r->searched && !r->has_cluster))
		return shs_seterr(e, SHS_EINVAL, "trace: needs a plan on a cluster (hardware, its "
				  "topology or device count, and a mesh)");
	if (r->searched)
		o.remat = r->search.best.remat;
	else if (pipelined(r))
		o.microbatches = r->o->microbatches;
	o.trace = t;
	return shs_evaluate(m, p, c, &o, ev, e);
}

int shs_run_microbatch(shs_run *r, shs_module **m, shs_err *e)
{
	shs_module *split = NULL;
	int rc;

	int64_t done = shs_microbatch_count(*m);

	if ((rc = unpartitioned(r, *m, e)) != SHS_OK)
		return rc;
	if (r->o->microbatches <= 1 || done == r->o->microbatches || pipelined(r))
		return SHS_OK;
	if (done > 1)
		return shs_seterr(e, SHS_EINVAL, "micro-batches: the module is already written as "
				  "%lld micro-batches", (long long)done);
	rc = shs_microbatch_rewrite(*m, r->o->microbatches, &split, e);
	if (rc != SHS_OK)
		return rc;
	shs_module_free(*m);
	*m = split;
	return SHS_OK;
}

void shs_run_free(shs_run *r)
{
	if (!r)
		return;
	shs_search_result_free(&r->search);
	shs_plan_free(r->plan);
	shs_host_free(r->host);
	free(r->request);
	free(r->cat);
	memset(r, 0, sizeof(*r));
}
