/* The report of a search, as annotate prints it and the context hands out: text lines and a
 * JSON object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "report.h"
#include "report_sequence.h"

enum { RUNNERS_UP = 5, TEXT_CAP = 256, MAX_STRATEGIES = 64, SHOWN_STAGES = 4 };

static const double GIB = 1024.0 * 1024.0 * 1024.0;

/* Indices into r->tries of the best candidate of each other mesh, at most RUNNERS_UP. */
static uint32_t runners_up(const shs_search_result *r, uint32_t *out)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < r->n_tries && n < RUNNERS_UP; k++) {
		bool seen = !strcmp(r->tries[k].mesh, r->best.mesh);
		for (uint32_t j = 0; j < n && !seen; j++)
			seen = !strcmp(r->tries[out[j]].mesh, r->tries[k].mesh);
		if (!seen)
			out[n++] = k;
	}
	return n;
}

/* Why candidate t loses to the chosen one, into buf. */
static void why_loses(const shs_search_result *r, const shs_search_try *t, char *buf,
		      size_t cap)
{
	const shs_search_try *b = &r->best;

	if (t->fits && t->step_time_s <= b->step_time_s * (1 + SHS_SEARCH_TIE) &&
	    t->comm_s > b->comm_s * (1 + SHS_SEARCH_TIE))
		snprintf(buf, cap, "as fast, but its collectives take %.4g s of link time against "
			 "%.4g s", t->comm_s, b->comm_s);
	else if (t->fits && t->step_time_s <= b->step_time_s * (1 + SHS_SEARCH_TIE))
		snprintf(buf, cap, "as fast, with as much link time (%.4g s): the earlier tried wins",
			 t->comm_s);
	else if (!t->fits)
		snprintf(buf, cap, "does not fit (%.2f GiB of %.2f GiB HBM)", t->memory_bytes / GIB,
			 r->eval.hbm_bytes / GIB);
	else if (!strcmp(t->bound, "communication"))
		snprintf(buf, cap, "communication-bound: %.4g s exposed against %.4g s",
			 t->exposed_comm_s, b->exposed_comm_s);
	else if (t->compute_s > b->compute_s * (1 + 1e-9))
		snprintf(buf, cap, "%s-bound: %.4g s of compute against %.4g s", t->bound,
			 t->compute_s, b->compute_s);
	else
		snprintf(buf, cap, "%s-bound: %.4g s exposed communication against %.4g s",
			 t->bound, t->exposed_comm_s, b->exposed_comm_s);
}

void shs_report_weights(const shs_module *m, const shs_search_result *r, shs_weight_fn fn,
			void *user)
{
	const shs_computation *c = shs_module_entry(m);
	shs_param_role *roles = shs_entry_param_roles(m);
	char path[SHS_PATH_CAP];

	for (uint32_t i = 0; roles && i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		const shs_decision *d = &r->plan->d[m->entry][i];
		shs_buf b = { 0 };
		char *spec, *shape;
		if (in->op != SHS_OP_PARAMETER || !in->shape.rank || in->shape.type == SHS_TUPLE ||
		    !shs_elem_is_float(in->shape.type))
			continue;
		shs_param_path(in, path, sizeof(path));
		if (shs_param_role_named(path, roles[i]) != SHS_PARAM_WEIGHT)
			continue;
		shs_shape_print(&b, &in->shape, false);
		shape = shs_buf_take(&b);
		/* a weight of a rank over what a spec can split is replicated */
		spec = d->set && in->shape.rank <= SHS_PLUGIN_MAX_RANK ?
			       shs_specs_text(&r->plan->mesh, d->leaves, d->n_leaves) : NULL;
		fn(user, path, shape ? shape : "", spec ? spec : "replicated",
		   spec ? &d->leaves[0] : NULL);
		free(spec);
		free(shape);
	}
	free(roles);
}

/* The strategies the plan uses, by name, with how many instructions each decides. */
typedef struct tally {
	const char *name[MAX_STRATEGIES];
	uint32_t count[MAX_STRATEGIES];
	uint32_t n;
} tally;

static void count_strategies(const shs_plan *p, tally *t)
{
	t->n = 0;
	for (uint32_t c = 0; c < p->n_comps; c++)
		for (uint32_t i = 0; i < p->n_instrs[c]; i++) {
			const char *name = p->d[c][i].set ? p->d[c][i].strategy : NULL;
			uint32_t k = 0;
			if (!name)
				continue;
			while (k < t->n && strcmp(t->name[k], name))
				k++;
			if (k == t->n && t->n == MAX_STRATEGIES)
				continue;
			if (k == t->n) {
				t->name[t->n] = name;
				t->count[t->n++] = 0;
			}
			t->count[k]++;
		}
}

static void print_weight(void *user, const char *path, const char *shape, const char *spec,
			 const shs_pspec *ps)
{
	(void)ps;
	fprintf(user, "  %s  %s  %s\n", path, shape, spec);
}

static const char *const stage_text[] = {
	"ZeRO-0: data parallel, model state whole on every device of a replica",
	"ZeRO-1: Adam state split over the batch axes",
	"ZeRO-2: Adam state and gradients split over the batch axes",
	"ZeRO-3: weights, gradients and Adam state split over the batch axes (FSDP)",
};

/* The mesh's size of axis name in mesh text ("fsdp=8@x,expert=4@y"): 1 when it has none. */
static int64_t axis_size(const char *mesh, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = mesh; (p = strstr(p, name)) != NULL; p += n)
		if ((p == mesh || p[-1] == ',') && p[n] == '=')
			return strtoll(p + n + 1, NULL, 10);
	return 1;
}

/* The best candidate that differs from the plan in having an expert axis or not, or NULL. */
static const shs_search_try *expert_other(const shs_search_result *r)
{
	bool split = axis_size(r->best.mesh, "expert") > 1;

	for (uint32_t k = 0; k < r->n_tries; k++)
		if ((axis_size(r->tries[k].mesh, "expert") > 1) != split)
			return &r->tries[k];
	return NULL;
}

/* "experts  64 routed per layer, split over expert=8 ...; without an expert axis: ..." */
static void experts_print(FILE *out, const shs_search_result *r)
{
	int64_t e = axis_size(r->best.mesh, "expert");
	const shs_search_try *o = expert_other(r);

	if (r->experts < 1)
		return;
	if (e > 1)
		fprintf(out, "experts         %lld routed per layer, split over expert=%lld (expert "
			"parallelism: tokens dispatched and combined by all-to-all over it)",
			(long long)r->experts, (long long)e);
	else
		fprintf(out, "experts         %lld routed per layer, no expert axis (their weights "
			"split as the plan splits the others)", (long long)r->experts);
	if (o)
		fprintf(out, "; the best plan %s an expert axis: %s, %.4g s (%+.1f %%)%s",
			e > 1 ? "without" : "with", o->mesh, o->step_time_s,
			100 * (o->step_time_s / r->best.step_time_s - 1),
			o->fits ? "" : ", does not fit");
	fputc('\n', out);
}

/* "micro-batches   8 of 16 sequences: ..." with each count tried. */
/* The first and last forward layer of chunk c of stage s (Megatron-LM's assignment: virtual
 * stage c p + s), by name, into first and last (TEXT_CAP bytes each). */
static void chunk_layers(const shs_module *m, const shs_eval_pipeline *p, uint32_t s,
			 uint32_t c, char *first, char *last)
{
	uint32_t n = p->layers_per_stage / p->chunks;
	int64_t k = ((int64_t)c * p->stages + s) * n;

	if (!shs_eval_layer_name(m, k, first, TEXT_CAP))
		snprintf(first, TEXT_CAP, "layer %lld", (long long)k);
	if (!shs_eval_layer_name(m, k + n - 1, last, TEXT_CAP))
		snprintf(last, TEXT_CAP, "layer %lld", (long long)(k + n - 1));
}

/* A pipelined plan: the module written is not the pipelined program; the forward layers each
 * stage holds, by name (its first SHOWN_STAGES stages). */
static void stages_print(FILE *out, const shs_module *m, const shs_eval_pipeline *p)
{
	char first[TEXT_CAP], last[TEXT_CAP];

	if (!p->stages || !p->chunks || !(p->layers_per_stage / p->chunks))
		return;
	fprintf(out, "stages          not in the module written, which runs every layer on every "
		"device; for a framework that pipelines, the forward layers of");
	for (uint32_t s = 0; s < p->stages && s < SHOWN_STAGES; s++) {
		fprintf(out, "%s stage %u:", s ? ";" : "", s);
		for (uint32_t c = 0; c < p->chunks; c++) {
			chunk_layers(m, p, s, c, first, last);
			fprintf(out, "%s %s", c ? "," : "", first);
			if (strcmp(first, last))
				fprintf(out, " .. %s", last);
		}
	}
	fprintf(out, "%s\n", p->stages > SHOWN_STAGES ? "; ..." : "");
}

/* [[{"first": name, "last": name} per chunk] per stage], or null without stages. */
static json_t *stages_json(const shs_module *m, const shs_eval_pipeline *p)
{
	char first[TEXT_CAP], last[TEXT_CAP];
	json_t *a;

	if (!p->stages || !p->chunks || !(p->layers_per_stage / p->chunks))
		return json_null();
	a = json_array();
	for (uint32_t s = 0; s < p->stages; s++) {
		json_t *chunks = json_array();
		for (uint32_t c = 0; c < p->chunks; c++) {
			json_t *o = json_object();
			chunk_layers(m, p, s, c, first, last);
			json_object_set_new(o, "first", json_string(first));
			json_object_set_new(o, "last", json_string(last));
			json_array_append_new(chunks, o);
		}
		json_array_append_new(a, chunks);
	}
	return a;
}

static void microbatches_print(FILE *out, const shs_search_result *r)
{
	if (r->microbatches > 1)
		fprintf(out, "micro-batches   %lld of %lld sequences each: gradient accumulation, the "
			"module written loops over them (MaxText gradient_accumulation_steps=%lld)",
			(long long)r->microbatches,
			(long long)(r->sequences / r->microbatches), (long long)r->microbatches);
	else if (r->sequences > 0)
		fprintf(out, "micro-batches   none: the whole batch of %lld sequences at once",
			(long long)r->sequences);
	else
		fprintf(out, "micro-batches   none: no data batch found (entry parameters named "
			"batch, inputs or targets, or of integers)");
	if (r->n_microbatch_tries > 1) {
		fprintf(out, "; tried");
		for (uint32_t k = 0; k < r->n_microbatch_tries; k++) {
			const shs_search_try *t = &r->microbatch_tries[k];
			fprintf(out, "%s %lld: %.4g s%s", k ? "," : "",
				(long long)r->microbatch_counts[k], t->step_time_s,
				t->fits ? "" : " (does not fit)");
		}
	}
	if (r->microbatch_refused[0])
		fprintf(out, "; not split: %s", r->microbatch_refused);
	fputc('\n', out);
}

void shs_report_constraints(FILE *out, const shs_plan *p, bool ignored)
{
	if (ignored)
		fprintf(out, "constraints     the module's ignored (--ignore-hints)\n");
	else if (p && p->n_given)
		fprintf(out, "constraints     %u of the module's kept (Sharding and Shardy "
			"constraints, the entry's parameter and result shardings)\n", p->n_given);
}

void shs_report_print(FILE *out, const shs_module *m, const shs_search_result *r, double load_s)
{
	char describe[TEXT_CAP] = "", why[TEXT_CAP];
	uint32_t idx[RUNNERS_UP], n = runners_up(r, idx);
	const shs_eval *ev = &r->eval;
	tally used;

	shs_cluster_describe(&r->cluster, describe, sizeof(describe));
	fprintf(out, "mesh            %s\n", describe);
	fprintf(out, "plan            %s seeds%s, remat %s; %s\n", r->best.plan,
		r->best.gathers_hidden ? " (propagated with gathers into matmuls scored hidden)" :
					 "",
		shs_remat_name(r->best.remat), stage_text[r->zero_stage & 3]);
	microbatches_print(out, r);
	experts_print(out, r);
	shs_report_constraints(out, r->plan, r->hints_ignored);
	fprintf(out, "step time       %.4g s (%s-bound), MFU %.1f %%, HFU %.1f %% (with "
		"recomputation)\n", ev->step_time_s, ev->bound, 100 * ev->mfu, 100 * ev->hfu);
	fprintf(out, "memory          %.2f GiB peak of %.2f GiB HBM (%s)\n", ev->memory_bytes / GIB,
	       ev->hbm_bytes / GIB, shs_eval_fit_text(ev));
	shs_offload_print(out, ev);
	shs_pipeline_print(out, ev);
	stages_print(out, m, &ev->pipe);
	fprintf(out, "exposed comm    %.4g s:", ev->exposed_comm_s);
	for (uint32_t a = 0; a < r->cluster.mesh.n_axes; a++)
		fprintf(out, " %s %.4g s", r->cluster.mesh.names[a], ev->exposed_by_axis[a]);
	fprintf(out, "\nsearch          %u candidates on %u of %u meshes%s in %.3g s (load %.3g s); %u "
	       "skipped: the model state alone over the HBM", r->n_tries, r->n_meshes_tried,
	       r->n_meshes, r->local ? " (the canonical ones, then around the best)" : "",
	       r->search_time_s, load_s, r->n_pruned);
	if (r->n_skipped)
		fprintf(out, "; %u meshes the physical axes cannot hold", r->n_skipped);
	fprintf(out, "%s\n", r->partial ? "; the time budget ended it: the best plan found so far" : "");
	fprintf(out, "choices         %u evaluations of per-instruction choices%s\n", r->refine_evals,
	       r->exact ? ": every combination on every plan tried (exact)" :
	       r->refine_evals ? ": one sweep on the best plan" : " (too many to try)");
	shs_padded_report_print(out, m, r->plan);
	shs_sequence_report_print(out, m, r->plan);
	count_strategies(r->plan, &used);
	fprintf(out, "strategies     ");
	for (uint32_t k = 0; k < used.n; k++)
		fprintf(out, " %s %u%s", used.name[k], used.count[k], k + 1 < used.n ? "," : "");
	fprintf(out, "\nweights\n");
	shs_report_weights(m, r, print_weight, out);
	shs_advice_report_print(out, r);
	fprintf(out, "runners-up\n");
	for (uint32_t k = 0; k < n; k++) {
		const shs_search_try *t = &r->tries[idx[k]];
		why_loses(r, t, why, sizeof(why));
		fprintf(out, "  %s (%s%s, remat %s): %.4g s (%+.1f %%), %s\n", t->mesh, t->plan,
		       t->gathers_hidden ? ", gathers scored hidden" : "",
		       shs_remat_name(t->remat), t->step_time_s,
		       100 * (t->step_time_s / ev->step_time_s - 1), why);
	}
}

static void json_weight(void *user, const char *path, const char *shape, const char *spec,
			const shs_pspec *ps)
{
	json_t *o = json_object();

	(void)ps;
	json_object_set_new(o, "shape", json_string(shape));
	json_object_set_new(o, "sharding", json_string(spec));
	json_object_set_new(user, path, o);
}

/* {"routed": E, "expert_axis": size, "other": a candidate (shs_try_report_json) or null}: the plan's expert axis, and the best candidate that differs in having one. */
static json_t *experts_json(const shs_search_result *r)
{
	json_t *o = json_object(), *other = json_null();
	const shs_search_try *t = expert_other(r);

	json_object_set_new(o, "routed", json_integer(r->experts));
	json_object_set_new(o, "expert_axis", json_integer(axis_size(r->best.mesh, "expert")));
	if (t)
		other = shs_try_report_json(t);
	json_object_set_new(o, "other", other);
	return o;
}

/* [{"microbatches": 1, and the best candidate of that count (shs_try_report_json)}]. */
static json_t *microbatch_tries_json(const shs_search_result *r)
{
	json_t *a = json_array();

	for (uint32_t k = 0; k < r->n_microbatch_tries; k++) {
		json_t *o = shs_try_report_json(&r->microbatch_tries[k]);
		json_object_set_new(o, "microbatches", json_integer(r->microbatch_counts[k]));
		json_array_append_new(a, o);
	}
	return a;
}

json_t *shs_report_json(const shs_module *m, const shs_search_result *r, double load_s)
{
	json_t *o = json_object(), *mesh = json_object(), *weights = json_object();
	json_t *ups = json_array(), *strategies = json_object();
	json_t *ev = shs_sequence_report_with(shs_padded_report_with(
		shs_eval_report_json(&r->cluster, &r->eval), m, r->plan), m, r->plan);
	uint32_t idx[RUNNERS_UP], n = runners_up(r, idx);
	tally used;

	for (uint32_t a = 0; a < r->cluster.mesh.n_axes; a++)
		json_object_set_new(mesh, r->cluster.mesh.names[a],
				    json_integer(r->cluster.mesh.sizes[a]));
	shs_report_weights(m, r, json_weight, weights);
	count_strategies(r->plan, &used);
	for (uint32_t k = 0; k < used.n; k++)
		json_object_set_new(strategies, used.name[k], json_integer(used.count[k]));
	for (uint32_t k = 0; k < n; k++) {
		json_t *u = shs_try_report_json(&r->tries[idx[k]]);
		json_object_set_new(u, "gathers_hidden",
				    json_boolean(r->tries[idx[k]].gathers_hidden));
		json_array_append_new(ups, u);
	}
	json_object_set_new(o, "mesh", mesh);
	json_object_set_new(o, "layout", json_string(r->best.mesh));
	json_object_set_new(o, "plan", json_string(r->best.plan));
	json_object_set_new(o, "gathers_hidden", json_boolean(r->best.gathers_hidden));
	json_object_set_new(o, "stage_layers", stages_json(m, &r->eval.pipe));
	json_object_set_new(o, "remat", json_string(shs_remat_name(r->best.remat)));
	json_object_update(o, ev); /* the evaluation: step time, memory, collectives, ... */
	json_decref(ev);
	json_object_set_new(o, "zero_stage", json_integer(r->zero_stage));
	json_object_set_new(o, "microbatches", json_integer(r->microbatches));
	json_object_set_new(o, "experts", r->experts > 0 ? experts_json(r) : json_null());
	json_object_set_new(o, "sequences", json_integer(r->sequences));
	json_object_set_new(o, "constraints_kept",
			    json_integer(r->plan && !r->hints_ignored ? r->plan->n_given : 0));
	json_object_set_new(o, "constraints_ignored", json_boolean(r->hints_ignored));
	json_object_set_new(o, "microbatch_tries", microbatch_tries_json(r));
	json_object_set_new(o, "microbatch_refused", r->microbatch_refused[0] ?
			    json_string(r->microbatch_refused) : json_null());
	json_object_set_new(o, "search_time_s", json_real(r->search_time_s));
	json_object_set_new(o, "load_time_s", json_real(load_s));
	json_object_set_new(o, "candidates", json_integer(r->n_tries));
	json_object_set_new(o, "meshes", json_integer(r->n_meshes));
	json_object_set_new(o, "meshes_tried", json_integer(r->n_meshes_tried));
	json_object_set_new(o, "local_search", json_boolean(r->local));
	json_object_set_new(o, "pruned", json_integer(r->n_pruned));
	json_object_set_new(o, "skipped_meshes", json_integer(r->n_skipped));
	json_object_set_new(o, "partial", json_boolean(r->partial));
	json_object_set_new(o, "exact", json_boolean(r->exact));
	json_object_set_new(o, "choice_evaluations", json_integer(r->refine_evals));
	json_object_set_new(o, "weights", weights);
	json_object_set_new(o, "strategies", strategies);
	json_object_set_new(o, "runners_up", ups);
	json_object_set_new(o, "would_fit", r->advice.given ? shs_advice_report_json(r) :
							       json_null());
	return o;
}
