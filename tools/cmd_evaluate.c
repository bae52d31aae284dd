/* shardsearch evaluate: the step time, communication and memory of a plan on a cluster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "report.h"
#include "report_sequence.h"
#include "run.h"
#include "trace_json.h"

enum { SHOWN_COLLECTIVES = 10 };

static const char usage_head[] =
	"usage: shardsearch evaluate IN --hardware NAME (--topology AxBxC | --devices N)\n"
	"                           --mesh AXIS=N@PHYS,... --plan NAME|FILE [options]\n"
	"\n"
	"Makes the plan's shardings by propagation and predicts one training step per device:\n"
	"compute time (max of FLOPs at the rate the chip sustains and bytes / HBM bandwidth per\n"
	"instruction, after fusing as XLA fuses), every collective at the book's cost on the\n"
	"links of its mesh axes at the fraction of line rate they reach, overlapped with compute\n"
	"where runtimes overlap it (weight gathers, collective matmuls, gradient reductions), the\n"
	"exposed communication per axis, the bound, MFU and HFU, padded dimensions, and the peak\n"
	"memory against HBM. `shardsearch hardware NAME` shows the rates.\n"
	"\n"
	"options:\n";

static const char usage_mesh[] =
	"                        (with --mesh, physical axes after @: x, y, z; node, net; dcn,\n"
	"                        e.g. fsdp=16@xy,tensor=4@z; without @ a default layout)\n";

static const char usage_tail[] =
	"  --force               evaluate a module that is already partitioned (collectives\n"
	"                        outside shard_map regions; refused otherwise: its shapes are\n"
	"                        one device's). shard_map's regions are read as written\n"
	"  --json                one JSON object\n"
	"  --help                this text\n"
	"\n"
	"exit status: 0 success, 1 bad input or a failed operation, 2 bad usage or options\n";

typedef struct args {
	const char *in;
	const char *trace_file; /* --trace FILE, or NULL */
	bool json, quiet;
	shs_run_options o;
} args;

static void usage(void)
{
	fputs(usage_head, stdout);
	fputs(shs_cli_cluster_usage, stdout);
	fputs(shs_cli_plan_usage, stdout);
	fputs(usage_mesh, stdout);
	fputs(shs_cli_eval_usage, stdout);
	fputs(shs_cli_trace_usage, stdout);
	fputs(usage_tail, stdout);
}

static int parse(int argc, char **argv, args *a)
{
	const unsigned groups = SHS_CLI_CLUSTER | SHS_CLI_EVAL | SHS_CLI_PLAN;

	for (int k = 1; k < argc; k++) {
		const char *o = argv[k];
		int r;
		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			usage();
			return -1;
		}
		r = shs_cli_run_option("evaluate", argc, argv, &k, groups, &a->o);
		if (r < 0)
			return SHS_EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(o, "--json") || !strcmp(o, "--quiet"))
			*(!strcmp(o, "--json") ? &a->json : &a->quiet) = true;
		else if (!strcmp(o, "--force"))
			a->o.force = true;
		else if (!strcmp(o, "--trace") && k + 1 < argc)
			a->trace_file = argv[++k];
		else if (!strcmp(o, "--trace"))
			return shs_cli_usage_error("evaluate", "--trace needs a file");
		else if (o[0] == '-' && o[1])
			return shs_cli_usage_error("evaluate", "unknown option '%s'", o);
		else if (!a->in)
			a->in = o;
		else
			return shs_cli_usage_error("evaluate", "one input only");
	}
	if (!a->in || !a->o.spec.hardware || !a->o.mesh || !a->o.plan)
		return shs_cli_usage_error("evaluate", "needs IN, --hardware, --mesh and --plan");
	return SHS_EXIT_OK;
}

int shs_cmd_evaluate(int argc, char **argv)
{
	args a = { 0 };
	shs_eval ev = { 0 };
	shs_run r = { 0 };
	shs_module *m = NULL;
	shs_err e = { 0 };
	shs_trace trace = { 0 };
	int rc;

	shs_cli_run_defaults(&a.o, false);
	rc = parse(argc, argv, &a);
	if (rc != SHS_EXIT_OK)
		return rc < 0 ? SHS_EXIT_OK : rc;
	rc = SHS_EXIT_USAGE;
	if (!shs_cli_run_start("evaluate", &r, &a.o, &a.quiet))
		goto done;
	rc = SHS_EXIT_FAIL;
	if (!(m = shs_cli_load(a.in, SHS_FORMAT_AUTO, true)))
		goto done;
	if (a.trace_file) /* the one evaluation records its timeline */
		a.o.eval.trace = &trace;
	if (shs_run_microbatch(&r, &m, &e) != SHS_OK || shs_run_evaluate(&r, m, &ev, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: evaluate: %s: %s\n", a.in, e.msg);
		rc = shs_cli_exit(e.code);
		goto done;
	}
	if (a.trace_file) {
		char *text = NULL;
		if (shs_trace_json(&trace, m, &r.cluster, &ev, &text, &e) != SHS_OK) {
			fprintf(stderr, "shardsearch: evaluate: %s: %s\n", a.trace_file, e.msg);
			goto done;
		}
		rc = shs_cli_write_text("evaluate", a.trace_file, text);
		free(text);
		if (rc != SHS_EXIT_OK)
			goto done;
	}
	if (a.json) {
		shs_cli_put_json(shs_sequence_report_with(shs_padded_report_with(
					 shs_eval_report_json(&r.cluster, &ev), m, r.plan), m, r.plan),
				 SHS_EVAL_JSON_DIGITS);
	} else {
		shs_eval_report_print(stdout, &r.cluster, &ev, SHOWN_COLLECTIVES);
		shs_padded_report_print(stdout, m, r.plan);
		shs_sequence_report_print(stdout, m, r.plan);
	}
	rc = SHS_EXIT_OK;
done:
	shs_cli_warnings_done();
	shs_trace_free(&trace);
	shs_eval_free(&ev);
	shs_run_free(&r);
	shs_module_free(m);
	return rc;
}
