/* shardsearch annotate: make a plan by propagation and write it into the module as shardings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_plan.h"

static const char usage_head[] =
	"usage: shardsearch annotate IN --mesh AXIS=N,... --plan NAME|FILE -o OUT [options]\n"
	"\n"
	"Reads IN, seeds the entry parameters with the plan's shardings, propagates them through\n"
	"the module with the strategy plugins' candidates, and writes OUT with a sharding on\n"
	"every instruction (reducer regions excepted). OUT is written atomically. Plans:\n"
	"  dp        batch on data\n"
	"  fsdp      batch on data and fsdp; every weight and its optimizer state split on fsdp\n"
	"            along its largest non-layer dim\n"
	"  tp        attention heads, MLP hidden and vocab dims on tensor\n"
	"  fsdp+tp   both\n"
	"  FILE.json a mesh, a base plan and rules mapping parameter paths to shardings\n"
	"\n"
	"options:\n";

static const char usage_tail[] =
	"  -o OUT                the annotated module (.pb or .hlo)\n"
	"  --format proto|text   the format of OUT (default: its extension)\n"
	"  --force               allow OUT to be the same file as IN\n"
	"  --help                this text\n"
	"\n"
	"exit status: 0 success, 1 bad input or a failed operation, 2 bad usage\n";

typedef struct args {
	const char *in, *out;
	shs_format format;
	bool force;
	shs_cli_plan_opts plan;
} args;

static int parse(int argc, char **argv, args *a)
{
	for (int k = 1; k < argc; k++) {
		int r = shs_cli_plan_option("annotate", argc, argv, &k, &a->plan, usage_head,
					    usage_tail);
		if (r == SHS_CLI_HELP || r < 0)
			return r < 0 ? SHS_EXIT_USAGE : -1;
		if (r)
			continue;
		if (!strcmp(argv[k], "--force")) {
			a->force = true;
		} else if (!strcmp(argv[k], "-o") || !strcmp(argv[k], "--format")) {
			if (k + 1 >= argc)
				return shs_cli_usage_error("annotate", "%s needs a value", argv[k]);
			if (!strcmp(argv[k], "-o"))
				a->out = argv[++k];
			else if (!shs_cli_format(argv[++k], &a->format))
				return shs_cli_usage_error("annotate",
							   "--format takes proto or text");
		} else if (argv[k][0] == '-' && argv[k][1]) {
			return shs_cli_usage_error("annotate", "unknown option '%s'", argv[k]);
		} else if (!a->in) {
			a->in = argv[k];
		} else {
			return shs_cli_usage_error("annotate", "one input only ('%s', '%s')", a->in,
						   argv[k]);
		}
	}
	if (!a->in || !a->out || !a->plan.plan)
		return shs_cli_usage_error("annotate", "needs IN, --plan and -o OUT");
	if (!a->force && shs_cli_same_file(a->in, a->out))
		return shs_cli_usage_error("annotate", "%s: refusing to overwrite the input "
					   "(use --force)", a->out);
	return SHS_EXIT_OK;
}

static void summary(const args *a, const shs_plan *p, const shs_module *m)
{
	uint64_t n = 0;

	for (uint32_t c = 0; c < m->n_comps; c++)
		if (!shs_comp_is_reducer(m, c))
			n += m->comps[c]->n_instrs;
	printf("annotated %llu instructions of %s with plan %s on mesh %s (%lld devices): "
	       "%u propagation passes, %u resharded edges -> %s\n", (unsigned long long)n, a->in,
	       a->plan.plan, a->plan.mesh ? a->plan.mesh : "(from the plan file)",
	       (long long)m->num_partitions, p->passes, p->n_reshards, a->out);
}

int shs_cmd_annotate(int argc, char **argv)
{
	args a = { .format = SHS_FORMAT_AUTO };
	shs_plan_request *r = NULL;
	shs_module *m = NULL;
	shs_host *h = NULL;
	shs_plan *p = NULL;
	shs_err e = { 0 };
	int rc = parse(argc, argv, &a);

	if (rc != SHS_EXIT_OK)
		return rc < 0 ? SHS_EXIT_OK : rc;
	rc = SHS_EXIT_FAIL;
	r = calloc(1, sizeof(*r));
	if (!r || !shs_cli_request("annotate", &a.plan, r))
		goto done;
	m = shs_cli_load(a.in, SHS_FORMAT_AUTO, true);
	if (!m || !(h = shs_cli_host(&a.plan)))
		goto done;
	if (shs_plan_make(h, m, r, &p, &e) != SHS_OK || shs_plan_annotate(p, m, &e) != SHS_OK ||
	    shs_module_verify(m, &e) != SHS_OK ||
	    shs_module_save_file(m, a.out, a.format, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: annotate: %s: %s\n", a.in, e.msg);
		goto done;
	}
	summary(&a, p, m);
	rc = SHS_EXIT_OK;
done:
	shs_cli_warnings_done();
	shs_plan_free(p);
	shs_host_free(h);
	shs_module_free(m);
	free(r);
	return rc;
}
