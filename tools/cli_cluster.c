/* Options shared by the commands that evaluate plans on a cluster: evaluate and annotate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_cluster.h"

const char shs_cli_cluster_usage[] =
	"  --hardware NAME       v4p, v5e, v5p, v6e, 7x, a100, h100, h200, b200, gb200-nvl72\n"
	"  --hardware-file F     add or override catalog entries (JSON)\n"
	"  --topology AxBxC      a TPU slice; --devices N picks the standard one (GPUs: N GPUs)\n"
	"  --slices S            TPU slices over DCN (physical axis dcn)\n";

const char shs_cli_eval_usage[] =
	"  --remat none|dots|full  keep every saved activation (default), only matmul outputs\n"
	"                        and layer inputs, or only layer inputs (recomputing the rest)\n"
	"  --schedule S          events: the makespan of an event schedule (default);\n"
	"                        segments: per layer max(compute, overlapped comms) + blocking\n"
	"  --prefetch N          weight gathers may start N layers ahead (default 1)\n"
	"  --no-overlap          every collective blocks the compute stream\n"
	"  --no-fusion           every elementwise instruction reads and writes HBM (by default\n"
	"                        chains of elementwise work fuse as XLA fuses them)\n";

/* The options of this group (the cluster and the evaluation), by their library names. */
static const char *const group[] = { "hardware", "hardware-file", "topology", "devices",
				     "slices", "schedule", "remat", "prefetch", "no-overlap",
				     "no-fusion", NULL };

static bool in_group(const char *a)
{
	if (strncmp(a, "--", 2))
		return false;
	for (int k = 0; group[k]; k++)
		if (!strcmp(a + 2, group[k]))
			return true;
	return false;
}

int shs_cli_cluster_option(const char *cmd, int argc, char **argv, int *k,
			   shs_cli_cluster_opts *o)
{
	const char *a = argv[*k], *v = NULL;
	shs_err e = { 0 };
	bool known;

	if (!in_group(a))
		return 0;
	if (!shs_run_option_is_flag(a + 2, &known)) {
		if (*k + 1 >= argc) {
			shs_cli_usage_error(cmd, "%s needs a value", a);
			return -1;
		}
		v = argv[++*k];
	}
	if (shs_run_option_set(o, a + 2, v, &e) != SHS_OK) {
		shs_cli_usage_error(cmd, "%s %s", a, e.msg);
		return -1;
	}
	return 1;
}

bool shs_cli_catalog(const char *cmd, const shs_cli_cluster_opts *o, shs_hw_catalog *cat)
{
	shs_err e = { 0 };

	shs_hw_catalog_builtin(cat);
	if (o->hw_file && shs_hw_catalog_load_json(cat, o->hw_file, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: %s: %s\n", cmd, e.msg);
		return false;
	}
	return true;
}
