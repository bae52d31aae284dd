/* Options shared by the commands that evaluate plans on a cluster: evaluate and annotate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_cluster.h"

enum { DECIMAL = 10, MAX_PREFETCH = 16 };

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

static bool count_arg(const char *s, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, DECIMAL);

	if (*end || v < 1)
		return false;
	*out = v;
	return true;
}

/* The index of s in names (NULL-terminated, in the enum's order), or -1. */
static int choice(const char *s, const char *const *names)
{
	for (int k = 0; names[k]; k++)
		if (!strcmp(s, names[k]))
			return k;
	return -1;
}

/* The options without a value. */
static bool flag(const char *a, shs_eval_options *o)
{
	if (!strcmp(a, "--no-overlap"))
		o->no_overlap = true;
	else if (!strcmp(a, "--no-fusion"))
		o->no_fusion = true;
	else
		return false;
	return true;
}

/* An option with value v: 1 taken, 0 not this group's, -1 a bad value (error printed). */
static int valued(const char *cmd, const char *a, const char *v, shs_cli_cluster_opts *o)
{
	static const char *const schedules[] = { "events", "segments", NULL };
	static const char *const remats[] = { "none", "dots", "full", NULL };
	const char *bad = NULL;
	int64_t n = 0;
	int c = 0;

	if (!strcmp(a, "--hardware")) {
		o->spec.hardware = v;
	} else if (!strcmp(a, "--hardware-file")) {
		o->hw_file = v;
	} else if (!strcmp(a, "--topology")) {
		o->spec.topology = v;
	} else if (!strcmp(a, "--devices") || !strcmp(a, "--slices")) {
		if (!count_arg(v, !strcmp(a, "--devices") ? &o->spec.devices : &o->spec.slices))
			bad = "takes a count >= 1";
	} else if (!strcmp(a, "--schedule")) {
		if ((c = choice(v, schedules)) < 0)
			bad = "takes events or segments";
		o->eval.schedule = (shs_schedule)c;
	} else if (!strcmp(a, "--remat")) {
		if ((c = choice(v, remats)) < 0)
			bad = "takes none, dots or full";
		o->eval.remat = (shs_remat)c;
		o->remat_given = true;
	} else if (!strcmp(a, "--prefetch")) {
		if (!count_arg(v, &n) || n > MAX_PREFETCH)
			bad = "takes 1 to 16";
		o->eval.prefetch_depth = (uint32_t)n;
	} else {
		return 0;
	}
	if (bad) {
		shs_cli_usage_error(cmd, "%s %s", a, bad);
		return -1;
	}
	return 1;
}

int shs_cli_cluster_option(const char *cmd, int argc, char **argv, int *k,
			   shs_cli_cluster_opts *o)
{
	static const char *const with_value[] = { "--hardware", "--hardware-file", "--topology",
						  "--devices", "--slices", "--schedule",
						  "--remat", "--prefetch", NULL };
	const char *a = argv[*k];

	if (flag(a, &o->eval))
		return 1;
	if (choice(a, with_value) < 0)
		return 0;
	if (*k + 1 >= argc) {
		shs_cli_usage_error(cmd, "%s needs a value", a);
		return -1;
	}
	(*k)++;
	return valued(cmd, a, argv[*k], o);
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
