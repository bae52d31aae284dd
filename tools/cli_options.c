/* The run options of annotate, evaluate and explain from the command line, and their warnings. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"
#include "shs_limits.h"

enum { MAX_SHOWN_WARNINGS = 20 };

const char shs_cli_cluster_usage[] =
	"  --hardware NAME       v4p, v5e, v5p, v6e, 7x, a100, h100, h200, b200, gb200-nvl72\n"
	"  --hardware-file F     add or override catalog entries (JSON)\n"
	"  --topology AxBxC      a TPU slice; --devices N picks the standard one (GPUs: N GPUs)\n"
	"  --slices S            TPU slices over DCN (physical axis dcn)\n";

const char shs_cli_eval_usage[] =
	"  --remat none|attention|dots|offload|full\n"
	"                        keep every saved activation (default); all but the attention\n"
	"                        scores and softmax (Korthikanti's selective recomputation; as\n"
	"                        none with flash attention); only matmul outputs and layer\n"
	"                        inputs; layer inputs in HBM and the rest in host memory (over\n"
	"                        the host link, under the compute); or only layer inputs\n"
	"                        (recomputing the rest)\n"
	"  --microbatches M      run the step as M micro-batches with gradient accumulation: the\n"
	"                        module rewritten as JAX lowers a scan over them (one loop of M\n"
	"                        trips, the optimizer once); M divides the batch. With a mesh\n"
	"                        axis named stage (pipeline stages: stage=4@net), the pipeline's\n"
	"                        micro-batches instead (default: the fastest count that fits)\n"
	"  --pipeline S          with a stage axis, the schedule: 1f1b (default), gpipe, or\n"
	"                        interleaved (1F1B over --virtual-stages chunks per stage)\n"
	"  --virtual-stages V    model chunks per stage (more than 1: interleaved 1F1B; default:\n"
	"                        the fastest that fits, 1 with --pipeline 1f1b or gpipe)\n"
	"  --schedule S          events: the makespan of an event schedule (default);\n"
	"                        segments: per layer max(compute, overlapped comms) + blocking\n"
	"  --prefetch N          weight gathers may start N layers ahead (default 1)\n"
	"  --no-overlap          every collective blocks the compute stream\n"
	"  --blocking AXES       the collectives over these mesh axes (comma-separated) block the\n"
	"                        stream, as synchronous calls do (Megatron-LM's tensor-parallel\n"
	"                        all-reduces); the others overlap\n"
	"  --fusion F            how elementwise work fuses: xla (default: as XLA fuses it), kernels\n"
	"                        (an eager framework's: one hand-fused kernel per operation of the\n"
	"                        op_name scope, as PyTorch and Megatron-LM run; matmuls apart;\n"
	"                        a recomputed layer reruns whole) or\n"
	"                        none (every elementwise instruction reads and writes HBM)\n"
	"  --no-fusion           the same as --fusion none\n";

const char shs_cli_plan_usage[] =
	"  --mesh AXIS=N,...     the device mesh: named logical axes and sizes, major first\n"
	"                        (data, fsdp, tensor, context, expert; stage: pipeline stages),\n"
	"                        e.g. fsdp=16,tensor=4\n"
	"  --plan NAME|FILE      dp, fsdp, tp, fsdp+tp, zero1, zero1+tp (also as the search names\n"
	"                        them: fsdp+tp+cp, ...), or a plan file (.json: mesh, base,\n"
	"                        rules, activations)\n"
	"  --plugins DIR         also load the strategy plugins in DIR (repeatable); the built-in\n"
	"                        ones and SHARDSEARCH_PLUGIN_PATH's folders always load\n"
	"  --plugin FILE         also load the strategy plugin FILE (repeatable)\n"
	"  --ignore-hints        drop the module's constraints: Sharding and Shardy constraint\n"
	"                        calls, the entry parameters' and root's shardings\n"
	"                        (kept as given otherwise)\n"
	"  --gathers-hidden      propagate with every gather into a matmul scored as hidden\n"
	"                        under it, as the search does where the chip decomposes no\n"
	"                        matmul (the report's \"propagated with gathers into matmuls\n"
	"                        scored hidden\"): evaluate then reproduces such a plan\n"
	"  --quiet               no warnings\n";

/* The options of each group, by their library names. */
static const char *const cluster_group[] = { "hardware", "hardware-file", "topology", "devices",
					     "slices", NULL };
static const char *const eval_group[] = { "schedule", "remat", "prefetch", "no-overlap",
					  "blocking", "no-fusion", "fusion", "microbatches", "pipeline",
					  "virtual-stages", NULL };
static const char *const plan_group[] = { "mesh", "plan", "plugins", "plugin", "ignore-hints",
					  "gathers-hidden", NULL };
static const char *const search_group[] = { "threads", "time-budget", "exhaustive", "stages",
					    NULL };

static unsigned n_warnings;

static bool in_list(const char *name, const char *const *list)
{
	for (int k = 0; list[k]; k++)
		if (!strcmp(name, list[k]))
			return true;
	return false;
}

static bool in_groups(const char *name, unsigned groups)
{
	return ((groups & SHS_CLI_CLUSTER) && in_list(name, cluster_group)) ||
	       ((groups & SHS_CLI_EVAL) && in_list(name, eval_group)) ||
	       ((groups & SHS_CLI_PLAN) && in_list(name, plan_group)) ||
	       ((groups & SHS_CLI_SEARCH) && in_list(name, search_group));
}

void shs_cli_run_defaults(shs_run_options *o, bool threads)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	memset(o, 0, sizeof(*o));
	o->spec.slices = 1;
	o->env_plugins = true;
	if (threads)
		o->threads = online < 1 ? 1 : online > SHS_MAX_THREADS ? SHS_MAX_THREADS :
									  (uint32_t)online;
}

int shs_cli_run_option(const char *cmd, int argc, char **argv, int *k, unsigned groups,
		       shs_run_options *o)
{
	const char *a = argv[*k], *v = NULL;
	shs_err e = { 0 };
	bool known;

	if (strncmp(a, "--", 2) || !in_groups(a + 2, groups))
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

enum { PROGRESS_AFTER_S = 1, PROGRESS_EVERY_HZ = 10 };

/* When the progress line was last drawn (< 0: it is not on the screen). */
static double progress_at = -1;

void shs_cli_warn(void *quiet, const char *msg)
{
	if (!*(const bool *)quiet && n_warnings < MAX_SHOWN_WARNINGS) {
		if (progress_at >= 0) /* the warning takes the progress line's place */
			fputs("\r\033[K", stderr);
		progress_at = -1;
		fprintf(stderr, "shardsearch: warning: %s\n", msg);
	}
	n_warnings++;
}

void shs_cli_warnings_done(void)
{
	if (n_warnings > MAX_SHOWN_WARNINGS)
		fprintf(stderr, "shardsearch: %u more warnings not shown\n",
			n_warnings - MAX_SHOWN_WARNINGS);
}

bool shs_cli_run_start(const char *cmd, shs_run *r, const shs_run_options *o, bool *quiet)
{
	shs_err e = { 0 };

	if (shs_run_start(r, o, shs_cli_warn, quiet, &e) == SHS_OK)
		return true;
	fprintf(stderr, "shardsearch: %s: %s\n", cmd, e.msg);
	return false;
}

bool shs_cli_progress_wanted(void)
{
	return isatty(STDERR_FILENO);
}

void shs_cli_progress(void *user, uint32_t tried, uint32_t total, double best_s,
		      double elapsed_s)
{
	(void)user;
	if (elapsed_s < PROGRESS_AFTER_S ||
	    (progress_at >= 0 && elapsed_s - progress_at < 1.0 / PROGRESS_EVERY_HZ &&
	     elapsed_s >= progress_at))
		return;
	progress_at = elapsed_s;
	fprintf(stderr, "\rshardsearch: searching: %u of %u meshes, ", tried, total);
	if (best_s > 0)
		fprintf(stderr, "best %.4g s a step, ", best_s);
	fprintf(stderr, "%.0f s\033[K", elapsed_s);
	fflush(stderr);
}

void shs_cli_progress_done(void)
{
	if (progress_at >= 0)
		fputs("\r\033[K", stderr);
	progress_at = -1;
}

int shs_cli_exit(int code)
{
	return code == SHS_EINVAL ? SHS_EXIT_USAGE : code == SHS_ENOFIT ? SHS_EXIT_NOFIT :
	       SHS_EXIT_FAIL;
}
