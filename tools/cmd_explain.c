/* shardsearch explain: the candidates every plugin proposes for one instruction. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "run.h"

enum {
	DEFAULT_LIMIT = 50,
	DECIMAL = 10,
	AXES_CAP = 256,
	JSON_DIGITS = 17, /* exact doubles */
	SHOWN_MATCHES = 8
};

static const char usage_head[] =
	"usage: shardsearch explain IN --mesh AXIS=N,... --op NAME [options]\n"
	"\n"
	"Lists every candidate the strategy plugins propose for instruction NAME on the mesh:\n"
	"the strategy and plugin, the sharding of the result and of each operand (one brace group\n"
	"of mesh axes per dim), the local FLOPs and HBM bytes per device, and the collectives the\n"
	"instruction performs itself, cheapest first by the propagation's estimate: compute, its\n"
	"own collectives and, with --plan, the resharding of its operands from where the plan puts\n"
	"them. With --plan, also the plan's choice, marked, and why the runner-up lost.\n"
	"\n"
	"options:\n";

static const char usage_tail[] =
	"  --op NAME             the instruction: its HLO name (dot.42), or its op_name or the\n"
	"                        end of one (mlp/wi_0/dot) when one instruction alone has it\n"
	"  --limit N             show the N cheapest candidates (default 50; 0: all) and the\n"
	"                        plan's choice\n"
	"  --json                one JSON object\n"
	"  --help                this text\n";

typedef struct args {
	const char *in, *op;
	long limit;
	bool json, quiet;
	shs_run_options o;
} args;

static int parse(int argc, char **argv, args *a)
{
	for (int k = 1; k < argc; k++) {
		int r;
		char *end;
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			fputs(usage_head, stdout);
			fputs(shs_cli_plan_usage, stdout);
			fputs(usage_tail, stdout);
			return -1;
		}
		r = shs_cli_run_option("explain", argc, argv, &k, SHS_CLI_PLAN, &a->o);
		if (r < 0)
			return SHS_EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(argv[k], "--json") || !strcmp(argv[k], "--quiet")) {
			*(!strcmp(argv[k], "--json") ? &a->json : &a->quiet) = true;
		} else if (!strcmp(argv[k], "--op") || !strcmp(argv[k], "--limit")) {
			if (k + 1 >= argc)
				return shs_cli_usage_error("explain", "%s needs a value", argv[k]);
			if (!strcmp(argv[k++], "--op"))
				a->op = argv[k];
			else if ((a->limit = strtol(argv[k], &end, DECIMAL)) < 0 || *end)
				return shs_cli_usage_error("explain", "--limit takes a count");
		} else if (argv[k][0] == '-' && argv[k][1]) {
			return shs_cli_usage_error("explain", "unknown option '%s'", argv[k]);
		} else if (!a->in) {
			a->in = argv[k];
		} else {
			return shs_cli_usage_error("explain", "one input only");
		}
	}
	if (!a->in || !a->op || !a->o.mesh)
		return shs_cli_usage_error("explain", "needs IN, --mesh and --op NAME");
	return SHS_EXIT_OK;
}

/* Whether instruction in answers to name: its HLO name, its op_name, or the end of its op_name
 * after a '/' ("mlp/dot_general" names ".../layers/mlp/dot_general"). */
static bool answers_to(const shs_instr *in, const char *name, bool *by_op_name)
{
	const char *op = in->metadata ? in->metadata->op_name : NULL;
	size_t n = strlen(name), k = op ? strlen(op) : 0;

	*by_op_name = false;
	if (!strcmp(in->name, name))
		return true;
	if (!op || k < n || strcmp(op + k - n, name) || (k > n && op[k - n - 1] != '/'))
		return false;
	*by_op_name = true;
	return true;
}

/* Finds the instruction --op names in m into *c, *i: by HLO name, else by op_name when one
 * instruction alone has it. Prints why not and returns false otherwise. */
static bool find_op(const char *in_path, const shs_module *m, const char *name, uint32_t *c,
		    uint32_t *i)
{
	uint32_t n = 0;
	bool by_op_name;

	for (uint32_t k = 0; k < m->n_comps; k++)
		for (uint32_t j = 0; j < m->comps[k]->n_instrs; j++) {
			if (!answers_to(m->comps[k]->instrs[j], name, &by_op_name))
				continue;
			if (!by_op_name) {
				*c = k;
				*i = j;
				return true;
			}
			if (!n++) {
				*c = k;
				*i = j;
			}
		}
	if (n == 1)
		return true;
	if (!n) {
		fprintf(stderr, "shardsearch: explain: %s has no instruction named '%s' (an HLO "
			"name or an op_name)\n", in_path, name);
		return false;
	}
	fprintf(stderr, "shardsearch: explain: %s: %u instructions have op_name '%s':", in_path,
		n, name);
	n = 0;
	for (uint32_t k = 0; k < m->n_comps && n < SHOWN_MATCHES; k++)
		for (uint32_t j = 0; j < m->comps[k]->n_instrs && n < SHOWN_MATCHES; j++)
			if (answers_to(m->comps[k]->instrs[j], name, &by_op_name))
				fprintf(stderr, "%s %s", n++ ? "," : "", m->comps[k]->instrs[j]->name);
	fprintf(stderr, "%s; give one by its HLO name\n", n == SHOWN_MATCHES ? ", ..." : "");
	return false;
}

static json_t *cand_json(const shs_mesh *mesh, const shs_instr *in, const shs_cand *c)
{
	json_t *o = json_object(), *ops = json_array(), *colls = json_array();
	char *t = shs_specs_text(mesh, c->result, c->n_result), axes[AXES_CAP];

	json_object_set_new(o, "strategy", json_string(c->strategy));
	json_object_set_new(o, "plugin", json_string(c->plugin));
	json_object_set_new(o, "label", json_string(c->label));
	json_object_set_new(o, "result", json_string(t ? t : ""));
	free(t);
	for (uint32_t k = 0; k < in->n_operands && k < c->n_operands; k++) {
		t = shs_specs_text(mesh, &c->operands[c->operand_first[k]],
				       c->operand_first[k + 1] - c->operand_first[k]);
		json_array_append_new(ops, json_string(t ? t : ""));
		free(t);
	}
	json_object_set_new(o, "operands", ops);
	json_object_set_new(o, "flops", json_real(c->flops));
	json_object_set_new(o, "bytes", json_real(c->bytes));
	for (uint32_t k = 0; k < c->n_colls; k++) {
		json_t *cj = json_object();
		shs_axes_text(mesh, c->colls[k].axes_mask, axes, sizeof(axes));
		json_object_set_new(cj, "kind", json_string(shs_coll_name(c->colls[k].kind)));
		json_object_set_new(cj, "axes", json_string(axes));
		json_object_set_new(cj, "bytes", json_real(c->colls[k].bytes));
		json_object_set_new(cj, "overlappable", json_boolean(c->colls[k].overlappable));
		json_array_append_new(colls, cj);
	}
	json_object_set_new(o, "collectives", colls);
	return o;
}

/* A candidate's place: its index in the plugins' list, its price where the plan puts it. */
typedef struct priced {
	uint32_t k;
	shs_cand_price price;
} priced;

static int cmp_priced(const void *a, const void *b)
{
	const priced *x = a, *y = b;

	if (x->price.total_s != y->price.total_s)
		return x->price.total_s < y->price.total_s ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

static json_t *price_json(const shs_cand_price *p)
{
	return json_pack("{s:f, s:f, s:f, s:f}", "compute_s", p->compute_s, "communication_s",
			 p->comm_s, "reshard_s", p->reshard_s, "total_s", p->total_s);
}

static void print_cand(const shs_mesh *mesh, const shs_instr *in, uint32_t rank,
		       const priced *q, const shs_cand *c, bool chosen)
{
	json_t *o = cand_json(mesh, in, c), *ops = json_object_get(o, "operands");
	json_t *colls = json_object_get(o, "collectives"), *v;
	size_t j;

	printf("%u. [%u] %s  %s  (%s)%s\n", rank, q->k, c->strategy, c->label, c->plugin,
	       chosen ? "  <- the plan's choice" : "");
	printf("    cost      %.4g s: compute %.4g s, its collectives %.4g s, resharding its "
	       "operands %.4g s\n", q->price.total_s, q->price.compute_s, q->price.comm_s,
	       q->price.reshard_s);
	printf("    result    %s\n", json_string_value(json_object_get(o, "result")));
	json_array_foreach(ops, j, v)
		printf("    operand %zu %s\n", j, json_string_value(v));
	printf("    per device: %.4g FLOPs, %.4g HBM bytes\n", c->flops, c->bytes);
	json_array_foreach(colls, j, v)
		printf("    %s over {%s}: %.4g bytes%s\n",
		       json_string_value(json_object_get(v, "kind")),
		       json_string_value(json_object_get(v, "axes")),
		       json_real_value(json_object_get(v, "bytes")),
		       json_is_true(json_object_get(v, "overlappable")) ?
			       ", overlapped with compute" : "");
	json_decref(o);
}

/* The index of the candidate plan p chose for instruction i of computation c (its strategy,
 * or its work in a shard_map region, and result shardings), or UINT32_MAX (no plan, or a
 * decision no candidate makes). */
static uint32_t chosen_index(const shs_cands *cands, const shs_plan *p, uint32_t c,
			     uint32_t i)
{
	const shs_decision *d = p ? &p->d[c][i] : NULL;

	for (uint32_t k = 0; d && d->set && d->strategy && k < cands->n; k++) {
		const shs_cand *x = &cands->v[k];
		/* a shard_map region's: the replicated candidate whose work it took */
		bool same = (!strcmp(x->strategy, d->strategy) ||
			     (!strcmp(d->strategy, "manual") && x->flops == d->flops &&
			      x->bytes == d->bytes)) &&
			    x->n_result == d->n_leaves;
		for (uint32_t j = 0; same && j < x->n_result; j++)
			same = shs_spec_equal(&x->result[j], &d->leaves[j]);
		if (same)
			return k;
	}
	return UINT32_MAX;
}

/* Why the winner (the plan's choice, else the cheapest here) won over the runner-up (the
 * cheapest other), into buf. */
static void why_text(const priced *win, const priced *run, bool planned, char *buf,
		     size_t cap)
{
	const shs_cand_price *w = &win->price, *r = &run->price;

	if (r->total_s >= w->total_s)
		snprintf(buf, cap, "the runner-up [%u] costs %.4g s more here: compute %+.4g s, "
			 "its collectives %+.4g s, resharding its operands %+.4g s", run->k,
			 r->total_s - w->total_s, r->compute_s - w->compute_s,
			 r->comm_s - w->comm_s, r->reshard_s - w->reshard_s);
	else
		snprintf(buf, cap, "[%u] costs %.4g s less here (compute %+.4g s, its collectives "
			 "%+.4g s, resharding its operands %+.4g s), but %s", run->k,
			 w->total_s - r->total_s, r->compute_s - w->compute_s,
			 r->comm_s - w->comm_s, r->reshard_s - w->reshard_s,
			 planned ? "the plan weighs what each choice makes its users reshard "
				   "too, and the choice saves more there" :
				   "ties go to the plugins' order");
}

/* With --plan: the operands' shardings in the plan propagation made, as hints. */
static const shs_pspec **plan_hints(const shs_module *m, const shs_plan *p, uint32_t c,
				    uint32_t i)
{
	const shs_instr *in = m->comps[c]->instrs[i];
	const shs_pspec **hints = calloc(in->n_operands + 1, sizeof(*hints));

	for (uint32_t k = 0; hints && k < in->n_operands; k++) {
		const shs_decision *d = &p->d[c][in->operands[k]];
		hints[k] = d->set ? d->leaves : NULL;
	}
	return hints;
}

/* The candidates priced where the plan puts them (or on their own), cheapest first, the plan's
 * choice marked, and why the runner-up lost; as text or JSON. */
static void report(const args *a, const shs_plan_request *r, const shs_module *m, uint32_t c,
		   uint32_t i, const shs_cands *cands, uint32_t dropped, const shs_plan *p)
{
	const shs_instr *in = m->comps[c]->instrs[i];
	uint32_t shown = a->limit && cands->n > a->limit ? (uint32_t)a->limit : cands->n;
	uint32_t chosen = chosen_index(cands, p, c, i), win = 0;
	char *spec = p ? shs_specs_text(&r->mesh, p->d[c][i].leaves, p->d[c][i].n_leaves) : NULL;
	priced *order = calloc(cands->n + 1, sizeof(*order));
	char why[512] = "";

	for (uint32_t k = 0; order && k < cands->n; k++) {
		order[k].k = k;
		shs_plan_price(p, &r->mesh, m, c, i, &cands->v[k], &r->chip, &order[k].price);
	}
	if (order)
		qsort(order, cands->n, sizeof(*order), cmp_priced);
	for (uint32_t k = 0; order && k < cands->n && chosen != UINT32_MAX; k++)
		if (order[k].k == chosen)
			win = k;
	if (p && p->d[c][i].strategy && !strcmp(p->d[c][i].strategy, "manual"))
		snprintf(why, sizeof(why), "a shard_map region runs it as the program wrote it, "
			 "replicated in its local shapes: the plan does not choose for it");
	else if (order && cands->n > 1)
		why_text(&order[win], &order[win ? 0 : 1], chosen != UINT32_MAX, why, sizeof(why));
	if (a->json) {
		json_t *o = json_object(), *list = json_array();
		for (uint32_t k = 0; order && k < cands->n; k++) {
			json_t *x;
			if (k >= shown && order[k].k != chosen)
				continue; /* past the limit, but the plan's choice */
			x = cand_json(&r->mesh, in, &cands->v[order[k].k]);
			json_object_set_new(x, "rank", json_integer(k + 1));
			json_object_set_new(x, "index", json_integer(order[k].k));
			json_object_set_new(x, "cost", price_json(&order[k].price));
			json_object_set_new(x, "chosen", json_boolean(order[k].k == chosen));
			json_array_append_new(list, x);
		}
		json_object_set_new(o, "instruction", json_string(in->name));
		json_object_set_new(o, "op_name", in->metadata && in->metadata->op_name ?
				    json_string(in->metadata->op_name) : json_null());
		json_object_set_new(o, "opcode", json_string(shs_opcode_name(in->op)));
		json_object_set_new(o, "computation", json_string(m->comps[c]->name));
		json_object_set_new(o, "served", json_boolean(cands->served));
		json_object_set_new(o, "count", json_integer(cands->n));
		json_object_set_new(o, "over_manual_axes", json_integer(dropped));
		json_object_set_new(o, "candidates", list);
		json_object_set_new(o, "plan", spec ? json_string(spec) : json_null());
		json_object_set_new(o, "chosen_index", chosen != UINT32_MAX ?
				    json_integer(chosen) : json_null());
		json_object_set_new(o, "why", json_string(why));
		shs_cli_put_json(o, JSON_DIGITS);
	} else {
		printf("%s (%s) in %s: %u candidates%s, cheapest first%s\n", in->name,
		       shs_opcode_name(in->op), m->comps[c]->name, cands->n,
		       cands->served ? "" : " (no plugin serves it: replicated)",
		       p ? " where the plan puts their operands" : "");
		for (uint32_t k = 0; order && k < cands->n; k++)
			if (k < shown || order[k].k == chosen)
				print_cand(&r->mesh, in, k + 1, &order[k], &cands->v[order[k].k],
					   order[k].k == chosen);
		if (shown < cands->n)
			printf("... of %u (--limit 0 shows all)\n", cands->n);
		if (dropped)
			printf("%u more over the axes its shard_map region runs by hand, which the "
			       "plan leaves to the program\n", dropped);
		if (spec)
			printf("plan %s gives it %s (%s: %s)\n", a->o.plan, spec,
			       p->d[c][i].strategy ? p->d[c][i].strategy : "undecided",
			       p->d[c][i].label);
		if (why[0])
			printf("why: %s\n", why);
	}
	free(order);
	free(spec);
}

/* The candidates of instruction i of computation c, with the plan's hints when there is one;
 * in a partly manual region, those over its manual axes left out (counted in *dropped). */
static int candidates(shs_run *r, const shs_module *m, uint32_t c, uint32_t i, shs_cands *out,
		      uint32_t *dropped, shs_err *e)
{
	const shs_pspec **hints = NULL;
	int rc = r->o->plan ? shs_run_plan(r, m, e) : shs_run_plugins(r, e);
	uint32_t manual = rc == SHS_OK && r->plan ? r->plan->d[c][i].manual_axes : 0, n = 0;

	if (rc == SHS_OK && r->plan && !(hints = plan_hints(m, r->plan, c, i)))
		rc = shs_seterr(e, SHS_ENOMEM, "out of memory");
	if (rc == SHS_OK)
		rc = shs_host_candidates(r->host, m, m->comps[c], m->comps[c]->instrs[i],
					 &r->request->mesh, hints, NULL, SHS_PMODE_ENUMERATE, out,
					 e);
	for (uint32_t k = 0; rc == SHS_OK && k < out->n; k++)
		if (!shs_cand_uses_axes(&out->v[k], manual))
			out->v[n++] = out->v[k];
	*dropped = rc == SHS_OK ? out->n - n : 0;
	if (rc == SHS_OK)
		out->n = n;
	free(hints);
	return rc;
}

int shs_cmd_explain(int argc, char **argv)
{
	args a = { .limit = DEFAULT_LIMIT };
	shs_cands cands = { 0 };
	shs_module *m = NULL;
	shs_run r = { 0 };
	shs_err e = { 0 };
	uint32_t c = 0, i = 0, dropped = 0;
	int rc;

	shs_cli_run_defaults(&a.o, false);
	rc = parse(argc, argv, &a);
	if (rc != SHS_EXIT_OK)
		return rc < 0 ? SHS_EXIT_OK : rc;
	rc = SHS_EXIT_USAGE;
	if (!shs_cli_run_start("explain", &r, &a.o, &a.quiet))
		goto done;
	rc = SHS_EXIT_FAIL;
	if (!(m = shs_cli_load(a.in, SHS_FORMAT_AUTO, true)))
		goto done;
	if (!find_op(a.in, m, a.op, &c, &i))
		goto done;
	if (candidates(&r, m, c, i, &cands, &dropped, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: explain: %s: %s\n", a.in, e.msg);
		rc = shs_cli_exit(e.code);
		goto done;
	}
	report(&a, r.request, m, c, i, &cands, dropped, r.plan);
	rc = SHS_EXIT_OK;
done:
	shs_cli_warnings_done();
	shs_cands_free(&cands);
	shs_run_free(&r);
	shs_module_free(m);
	return rc;
}
