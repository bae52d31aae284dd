/* shardsearch evaluate: the step time, communication and memory of a plan on a cluster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_cluster.h"
#include "cli_eval.h"
#include "cli_plan.h"

enum { DECIMAL = 10, SHOWN_COLLECTIVES = 10, MESH_CAP = 256 };

static const char usage_head[] =
	"usage: shardsearch evaluate IN --hardware NAME (--topology AxBxC | --devices N)\n"
	"                           --mesh AXIS=N@PHYS,... --plan NAME|FILE [options]\n"
	"\n"
	"Makes the plan's shardings by propagation and predicts one training step per device:\n"
	"compute time (max of FLOPs / peak and bytes / HBM bandwidth per instruction), every\n"
	"collective at the book's cost on the links of its mesh axes, overlapped with compute\n"
	"where runtimes overlap it (weight gathers, collective matmuls, gradient reductions), the\n"
	"exposed communication per axis, the bound, MFU, and the peak memory against HBM.\n"
	"\n"
	"options:\n";

static const char usage_mesh[] =
	"                        (with --mesh, physical axes after @: x, y, z; node, net; dcn,\n"
	"                        e.g. fsdp=16@xy,tensor=4@z; without @ a default layout)\n";

static const char usage_tail[] =
	"  --json                one JSON object\n"
	"  --help                this text\n"
	"\n"
	"exit status: 0 success, 1 bad input or a failed operation, 2 bad usage or options\n";

typedef struct args {
	const char *in;
	bool json;
	shs_cli_cluster_opts cluster;
	shs_cli_plan_opts plan;
} args;

static void usage(void)
{
	fputs(usage_head, stdout);
	fputs(shs_cli_cluster_usage, stdout);
	fputs(shs_cli_plan_usage, stdout);
	fputs(usage_mesh, stdout);
	fputs(shs_cli_eval_usage, stdout);
	fputs(usage_tail, stdout);
}

static int parse(int argc, char **argv, args *a)
{
	for (int k = 1; k < argc; k++) {
		const char *o = argv[k];
		int r = !strcmp(o, "--help") || !strcmp(o, "-h") ? SHS_CLI_HELP :
			shs_cli_plan_option("evaluate", argc, argv, &k, &a->plan, "", "");
		if (!r)
			r = shs_cli_cluster_option("evaluate", argc, argv, &k, &a->cluster);
		if (r == SHS_CLI_HELP)
			usage();
		if (r == SHS_CLI_HELP || r < 0)
			return r < 0 ? SHS_EXIT_USAGE : -1;
		if (r)
			continue;
		if (!strcmp(o, "--json"))
			a->json = true;
		else if (o[0] == '-' && o[1])
			return shs_cli_usage_error("evaluate", "unknown option '%s'", o);
		else if (!a->in)
			a->in = o;
		else
			return shs_cli_usage_error("evaluate", "one input only");
	}
	if (!a->in || !a->cluster.spec.hardware || !a->plan.mesh || !a->plan.plan)
		return shs_cli_usage_error("evaluate", "needs IN, --hardware, --mesh and --plan");
	a->cluster.spec.mesh = a->plan.mesh;
	return SHS_EXIT_OK;
}

/* The plan request on the cluster's mesh (its axes without the physical layout). */
static bool make_request(const args *a, const shs_cluster *c, shs_plan_request *r)
{
	shs_cli_plan_opts o = a->plan;
	char mesh[MESH_CAP];

	shs_mesh_text(&c->mesh, mesh, sizeof(mesh));
	o.mesh = mesh;
	return shs_cli_request("evaluate", &o, r);
}

int shs_cmd_evaluate(int argc, char **argv)
{
	args a = { .cluster = { .spec = { .slices = 1 } } };
	shs_hw_catalog *cat = calloc(1, sizeof(*cat));
	shs_cluster *c = calloc(1, sizeof(*c));
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_eval ev = { 0 };
	shs_module *m = NULL;
	shs_host *h = NULL;
	shs_plan *p = NULL;
	shs_err e = { 0 };
	int rc = parse(argc, argv, &a);

	if (rc != SHS_EXIT_OK) {
		rc = rc < 0 ? SHS_EXIT_OK : rc;
		goto done;
	}
	rc = SHS_EXIT_USAGE;
	if (!cat || !c || !r || !shs_cli_catalog("evaluate", &a.cluster, cat))
		goto done;
	if (shs_cluster_make(cat, &a.cluster.spec, c, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: evaluate: %s\n", e.msg);
		goto done;
	}
	if (!make_request(&a, c, r))
		goto done;
	rc = SHS_EXIT_FAIL;
	m = shs_cli_load(a.in, SHS_FORMAT_AUTO, true);
	if (!m || !(h = shs_cli_host(&a.plan)))
		goto done;
	if (shs_plan_make(h, m, r, &p, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: evaluate: %s: %s\n", a.in, e.msg);
		rc = e.code == SHS_EINVAL ? SHS_EXIT_USAGE : SHS_EXIT_FAIL;
		goto done;
	}
	if (shs_evaluate(m, p, c, &a.cluster.eval, &ev, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: evaluate: %s: %s\n", a.in, e.msg);
		goto done;
	}
	if (a.json)
		shs_cli_put_json(shs_cli_eval_json(c, &ev), DECIMAL + 5);
	else
		shs_cli_eval_print(c, &ev, SHOWN_COLLECTIVES);
	rc = SHS_EXIT_OK;
done:
	shs_cli_warnings_done();
	shs_eval_free(&ev);
	shs_plan_free(p);
	shs_host_free(h);
	shs_module_free(m);
	free(cat);
	free(c);
	free(r);
	return rc;
}
