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
	JSON_DIGITS = 17 /* exact doubles */
};

static const char usage_head[] =
	"usage: shardsearch explain IN --mesh AXIS=N,... --op NAME [options]\n"
	"\n"
	"Lists every candidate the strategy plugins propose for instruction NAME on the mesh:\n"
	"the strategy and plugin, the sharding of the result and of each operand (one brace group\n"
	"of mesh axes per dim), the local FLOPs and HBM bytes per device, and the collectives the\n"
	"instruction performs itself. With --plan, also the sharding that plan's propagation\n"
	"gives it.\n"
	"\n"
	"options:\n";

static const char usage_tail[] =
	"  --op NAME             the instruction (its HLO name, e.g. dot.42)\n"
	"  --limit N             show at most N candidates (default 50; 0: all)\n"
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

static bool find_op(const shs_module *m, const char *name, uint32_t *c, uint32_t *i)
{
	for (uint32_t k = 0; k < m->n_comps; k++)
		for (uint32_t j = 0; j < m->comps[k]->n_instrs; j++)
			if (!strcmp(m->comps[k]->instrs[j]->name, name)) {
				*c = k;
				*i = j;
				return true;
			}
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

static void print_cand(const shs_mesh *mesh, const shs_instr *in, uint32_t k, const shs_cand *c)
{
	json_t *o = cand_json(mesh, in, c), *ops = json_object_get(o, "operands");
	json_t *colls = json_object_get(o, "collectives"), *v;
	size_t j;

	printf("[%u] %s  %s  (%s)\n", k, c->strategy, c->label, c->plugin);
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

static void report(const args *a, const shs_plan_request *r, const shs_module *m, uint32_t c,
		   uint32_t i, const shs_cands *cands, const shs_plan *p)
{
	const shs_instr *in = m->comps[c]->instrs[i];
	uint32_t shown = a->limit && cands->n > a->limit ? (uint32_t)a->limit : cands->n;
	char *chosen = p ? shs_specs_text(&r->mesh, p->d[c][i].leaves, p->d[c][i].n_leaves) : NULL;

	if (a->json) {
		json_t *o = json_object(), *list = json_array();
		for (uint32_t k = 0; k < shown; k++)
			json_array_append_new(list, cand_json(&r->mesh, in, &cands->v[k]));
		json_object_set_new(o, "instruction", json_string(in->name));
		json_object_set_new(o, "opcode", json_string(shs_opcode_name(in->op)));
		json_object_set_new(o, "computation", json_string(m->comps[c]->name));
		json_object_set_new(o, "served", json_boolean(cands->served));
		json_object_set_new(o, "count", json_integer(cands->n));
		json_object_set_new(o, "candidates", list);
		if (chosen)
			json_object_set_new(o, "plan", json_string(chosen));
		shs_cli_put_json(o, JSON_DIGITS);
	} else {
		printf("%s (%s) in %s: %u candidates%s\n", in->name, shs_opcode_name(in->op),
		       m->comps[c]->name, cands->n,
		       cands->served ? "" : " (no plugin serves it: replicated)");
		for (uint32_t k = 0; k < shown; k++)
			print_cand(&r->mesh, in, k, &cands->v[k]);
		if (shown < cands->n)
			printf("... and %u more (--limit 0 shows all)\n", cands->n - shown);
		if (chosen)
			printf("plan %s gives it %s (%s: %s)\n", a->o.plan, chosen,
			       p->d[c][i].strategy ? p->d[c][i].strategy : "undecided",
			       p->d[c][i].label);
	}
	free(chosen);
}

/* The candidates of instruction i of computation c, with the plan's hints when there is one. */
static int candidates(shs_run *r, const shs_module *m, uint32_t c, uint32_t i, shs_cands *out,
		      shs_err *e)
{
	const shs_pspec **hints = NULL;
	int rc = r->o->plan ? shs_run_plan(r, m, e) : shs_run_plugins(r, e);

	if (rc == SHS_OK && r->plan && !(hints = plan_hints(m, r->plan, c, i)))
		rc = shs_seterr(e, SHS_ENOMEM, "out of memory");
	if (rc == SHS_OK)
		rc = shs_host_candidates(r->host, m, m->comps[c], m->comps[c]->instrs[i],
					 &r->request->mesh, hints, NULL, SHS_PMODE_ENUMERATE, out,
					 e);
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
	uint32_t c = 0, i = 0;
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
	if (!find_op(m, a.op, &c, &i)) {
		fprintf(stderr, "shardsearch: explain: %s has no instruction named '%s'\n",
			a.in, a.op);
		goto done;
	}
	if (candidates(&r, m, c, i, &cands, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: explain: %s: %s\n", a.in, e.msg);
		rc = shs_cli_exit(e.code);
		goto done;
	}
	report(&a, r.request, m, c, i, &cands, r.plan);
	rc = SHS_EXIT_OK;
done:
	shs_cli_warnings_done();
	shs_cands_free(&cands);
	shs_run_free(&r);
	shs_module_free(m);
	return rc;
}
