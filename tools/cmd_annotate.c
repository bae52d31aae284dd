/* shardsearch annotate: search a plan (or make a named one by propagation) and write it into the
 * module as shardings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"
#include "export.h"
#include "report.h"
#include "run.h"

static const char usage_head[] =
	"usage: shardsearch annotate IN --hardware NAME (--devices N | --topology AxBxC)\n"
	"                            [--slices S] [--mesh ...] [--json] -o OUT [options]\n"
	"       shardsearch annotate IN --mesh AXIS=N,... --plan NAME|FILE -o OUT [options]\n"
	"\n"
	"Without --plan, searches the meshes of the cluster (data, fsdp, tensor, sequence when the\n"
	"batch has fewer sequences than devices, expert for a mixture of experts; or the one\n"
	"--mesh pins) and on each the plans their axes seed (FSDP as ZeRO-3 and as ZeRO-1/2, with\n"
	"tensor parallelism when there is a tensor axis), with per-instruction choices where they\n"
	"are few enough to try, evaluates every one (with more remat or offload while it does not\n"
	"fit, unless --remat fixes it), then the step as micro-batches (unless --microbatches\n"
	"fixes the count) while that can help, writes OUT with the fastest that fits in HBM (the\n"
	"step rewritten as its micro-batch loop when one wins) and reports it: mesh, step time,\n"
	"MFU, bound, memory, micro-batches, offload, experts, sequence, exposed communication, the\n"
	"ZeRO stage, the strategies used, how each weight is sharded and the five best runner-up\n"
	"meshes. With --plan, seeds the entry parameters with the plan's shardings and propagates\n"
	"them (no cluster needed). Either way every instruction gets a sharding (reducer regions\n"
	"excepted) and OUT is written atomically. Plans:\n"
	"  dp        batch on data\n"
	"  fsdp      batch on data and fsdp; every weight and its optimizer state split on fsdp\n"
	"            along its largest non-layer dim\n"
	"  tp        attention heads, MLP hidden and vocab dims on tensor\n"
	"  fsdp+tp   both\n"
	"  FILE.json a mesh, a base plan and rules mapping parameter paths to shardings\n"
	"\n"
	"options:\n";

static const char usage_tail[] =
	"  --time-budget S       stop searching after S seconds with the best plan so far (a\n"
	"                        plugin call running 2 s past it ends the process, status 70)\n"
	"  --threads N           meshes searched at once (default: the processors online); the\n"
	"                        result is the same for any N\n"
	"  --exhaustive          try every mesh (default: every one when there are at most 64,\n"
	"                        else the canonical ones and a local search from the best)\n"
	"  --stages              also try pipeline stages (a stage axis splitting the layers,\n"
	"                        its micro-batches and chunks chosen too); the module written is\n"
	"                        then not a pipelined program: the report gives the stages\n"
	"  --json                the search's report as one JSON object\n"
	"  --export megatron F   also write the plan as Megatron-LM's arguments to F (tensor,\n"
	"                        pipeline and virtual stages, micro- and global batch, sequence\n"
	"                        parallelism, recomputation, the distributed optimizer)\n"
	"  --export maxtext F    ... or as a MaxText config fragment (ici_* and dcn_*\n"
	"                        parallelism, per_device_batch_size, remat_policy, gradient\n"
	"                        accumulation, the pipeline's micro-batches, layers and repeats)\n"
	"  --export jax F        ... or as JAX code: the device mesh (mesh_utils) with the plan's\n"
	"                        axis names and a PartitionSpec per weight path\n"
	"  --export torchtitan F ... or as a torchtitan config fragment ([parallelism] degrees,\n"
	"                        activation checkpointing, batch sizes)\n"
	"  -o OUT                the annotated module (.pb or .hlo)\n"
	"  --format proto|text   the format of OUT (default: its extension)\n"
	"  --force               allow OUT to be the same file as IN, and shard a module that is\n"
	"                        already partitioned (collectives outside shard_map regions;\n"
	"                        refused otherwise)\n"
	"  --help                this text\n"
	"\n"
	"exit status: 0 success, 1 bad input or a failed operation, 2 bad usage, 3 no plan fits in\n"
	"HBM (OUT is not written; the report says what would fit: more chips, more recomputation,\n"
	"fewer tokens per step)\n";

typedef struct args {
	const char *in, *out;
	const char *export_file; /* --export megatron|maxtext|jax|torchtitan FILE, or NULL */
	const char *export_kind; /* ... which */
	const char *trace_file;  /* --trace FILE, or NULL */
	shs_format format;
	bool force, json, quiet;
	shs_run_options o;
} args;

static void usage(void)
{
	fputs(usage_head, stdout);
	fputs(shs_cli_cluster_usage, stdout);
	fputs(shs_cli_plan_usage, stdout);
	fputs(shs_cli_eval_usage, stdout);
	fputs(shs_cli_trace_usage, stdout);
	fputs(usage_tail, stdout);
}

/* An option of annotate's own at argv[*k]: 1 taken, 0 not one, -1 usage error printed. */
static int own_option(int argc, char **argv, int *k, args *a)
{
	const char *o = argv[*k];

	if (!strcmp(o, "--force") || !strcmp(o, "--json") || !strcmp(o, "--quiet")) {
		*(!strcmp(o, "--force") ? &a->force : !strcmp(o, "--json") ? &a->json :
					  &a->quiet) = true;
		a->o.force |= a->force;
		return 1;
	}
	if (!strcmp(o, "--export")) {
		if (*k + 2 >= argc || (strcmp(argv[*k + 1], "megatron") &&
					strcmp(argv[*k + 1], "maxtext") &&
					strcmp(argv[*k + 1], "jax") &&
					strcmp(argv[*k + 1], "torchtitan"))) {
			shs_cli_usage_error("annotate", "--export takes megatron, maxtext, jax or "
					    "torchtitan, and a file");
			return -1;
		}
		a->export_kind = argv[*k + 1];
		a->export_file = argv[*k + 2];
		*k += 2;
		return 1;
	}
	if (strcmp(o, "-o") && strcmp(o, "--format") && strcmp(o, "--trace"))
		return 0;
	if (*k + 1 >= argc) {
		shs_cli_usage_error("annotate", "%s needs a value", o);
		return -1;
	}
	(*k)++;
	if (!strcmp(o, "-o") || !strcmp(o, "--trace")) {
		*(!strcmp(o, "-o") ? &a->out : &a->trace_file) = argv[*k];
	} else if (!shs_cli_format(argv[*k], &a->format)) {
		shs_cli_usage_error("annotate", "%s takes proto or text", o);
		return -1;
	}
	return 1;
}

static int parse(int argc, char **argv, args *a)
{
	const unsigned groups = SHS_CLI_CLUSTER | SHS_CLI_EVAL | SHS_CLI_PLAN | SHS_CLI_SEARCH;

	for (int k = 1; k < argc; k++) {
		int r;
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			usage();
			return -1;
		}
		r = shs_cli_run_option("annotate", argc, argv, &k, groups, &a->o);
		if (!r)
			r = own_option(argc, argv, &k, a);
		if (r < 0)
			return SHS_EXIT_USAGE;
		if (r)
			continue;
		if (argv[k][0] == '-' && argv[k][1])
			return shs_cli_usage_error("annotate", "unknown option '%s'", argv[k]);
		if (a->in)
			return shs_cli_usage_error("annotate", "one input only ('%s', '%s')", a->in,
						   argv[k]);
		a->in = argv[k];
	}
	if (!a->in || !a->out)
		return shs_cli_usage_error("annotate", "needs IN and -o OUT");
	if (!a->o.plan && !a->o.spec.hardware)
		return shs_cli_usage_error("annotate", "needs --hardware (to search) or --plan");
	if (a->export_file && a->o.plan)
		return shs_cli_usage_error("annotate", "--export needs a search (--hardware, no "
					   "--plan)");
	if (!a->force && shs_cli_same_file(a->in, a->out))
		return shs_cli_usage_error("annotate", "%s: refusing to overwrite the input "
					   "(use --force)", a->out);
	return SHS_EXIT_OK;
}

/* What annotate did with a named plan, as text or (--json) one JSON object. */
static void summary(const args *a, const shs_run *r, const shs_module *m)
{
	const shs_plan *p = r->plan;
	uint64_t n = 0;
	bool *reducer = shs_comp_reducers(m);

	for (uint32_t c = 0; reducer && c < m->n_comps; c++)
		if (!reducer[c])
			n += m->comps[c]->n_instrs;
	free(reducer);
	if (a->json) {
		char mesh[256];
		shs_mesh_text(&p->mesh, mesh, sizeof(mesh));
		shs_cli_put_json(json_pack("{s:s, s:s, s:o, s:s, s:I, s:I, s:i, s:i, s:i, s:b, "
					   "s:I, s:s?}",
					   "input", a->in, "output", a->out, "mesh",
					   shs_mesh_json_of(mesh), "plan", a->o.plan,
					   "devices", (json_int_t)m->num_partitions,
					   "instructions", (json_int_t)n, "propagation_passes",
					   (int)p->passes, "resharded_edges", (int)p->n_reshards,
					   "constraints_kept",
					   a->o.ignore_hints ? 0 : (int)p->n_given,
					   "constraints_ignored", (int)a->o.ignore_hints,
					   "pipeline_microbatches", (json_int_t)r->pipeline_written,
					   "pipeline_refused", r->pipeline_refused[0] ?
					   r->pipeline_refused : NULL),
				 SHS_REPORT_JSON_DIGITS);
		return;
	}
	printf("annotated %llu instructions of %s with plan %s on mesh %s (%lld devices): "
	       "%u propagation passes, %u resharded edges -> %s\n", (unsigned long long)n, a->in,
	       a->o.plan, a->o.mesh ? a->o.mesh : "(from the plan file)",
	       (long long)m->num_partitions, p->passes, p->n_reshards, a->out);
	if (r->pipeline_written)
		printf("pipeline        written as the program runs it: GPipe over the stage axis, "
		       "%lld micro-batches, in shard_map regions manual over stage (a loop of "
		       "micro-batches plus stages - 1 trips each way, collective-permutes between "
		       "stages)\n", (long long)r->pipeline_written);
	else if (r->pipeline_refused[0])
		printf("pipeline        not written (%s): the module runs every layer on every "
		       "device\n", r->pipeline_refused);
	shs_report_constraints(stdout, p, a->o.ignore_hints);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The search's report, as text or JSON. */
static void report(const args *a, const shs_run *r, const shs_module *m, double load_s)
{
	if (a->json)
		shs_cli_put_json(shs_report_json(m, &r->search, load_s), SHS_REPORT_JSON_DIGITS);
	else
		shs_report_print(stdout, m, &r->search, load_s);
}

/* The plan in the words of framework kind (megatron, maxtext, jax, torchtitan). */
static int export(const char *kind, const shs_module *m, const shs_search_result *r,
		  char **text, shs_err *e)
{
	if (!strcmp(kind, "maxtext"))
		return shs_export_maxtext(m, r, text, e);
	if (!strcmp(kind, "jax"))
		return shs_export_jax(m, r, text, e);
	if (!strcmp(kind, "torchtitan"))
		return shs_export_torchtitan(m, r, text, e);
	return shs_export_megatron(m, r, text, e);
}

/* The run's plan in m written to OUT (and its export, made first: a plan the framework cannot
 * run writes neither), and what it was: the search's report or a summary. */
static int finish(const args *a, const shs_run *r, shs_module *m, double load_s, shs_err *e)
{
	char *text = NULL, *trace = NULL;
	int rc = SHS_EXIT_OK;

	if (a->export_file && export(a->export_kind, m, &r->search, &text, e) != SHS_OK) {
		fprintf(stderr, "shardsearch: annotate: %s: %s\n", a->in, e->msg);
		return shs_cli_exit(e->code);
	}
	if (a->trace_file)
		rc = shs_cli_trace_text("annotate", a->trace_file, r, m, &trace);
	/* the side files first, taken back when the module cannot be written: all or nothing */
	if (rc == SHS_EXIT_OK && text)
		rc = shs_cli_write_text("annotate", a->export_file, text);
	if (rc == SHS_EXIT_OK && trace && (rc = shs_cli_write_text("annotate", a->trace_file,
								   trace)) && text)
		unlink(a->export_file);
	if (rc == SHS_EXIT_OK && shs_module_save_file(m, a->out, a->format, e) != SHS_OK) {
		fprintf(stderr, "shardsearch: annotate: %s: %s\n", a->in, e->msg);
		if (text)
			unlink(a->export_file);
		if (trace)
			unlink(a->trace_file);
		rc = SHS_EXIT_FAIL;
	}
	free(text);
	free(trace);
	if (rc != SHS_EXIT_OK)
		return rc;
	if (!r->searched)
		summary(a, r, m);
	else
		report(a, r, m, load_s);
	return SHS_EXIT_OK;
}

/* Whether OUT can take the module, told before any search: its format known (by --format or
 * the extension), protobuf able to hold every attribute of m (the plan adds only shardings),
 * its folder there. Prints why not, naming OUT. */
static int output_ok(const args *a, const shs_module *m)
{
	shs_format fmt = a->format != SHS_FORMAT_AUTO ? a->format : shs_format_from_path(a->out);
	char *dir = strdup(a->out), *slash;
	struct stat st;
	shs_err e = { 0 };
	int rc = SHS_EXIT_OK;

	if (fmt == SHS_FORMAT_AUTO) {
		free(dir);
		return shs_cli_usage_error("annotate", "%s: cannot tell the format from the "
					   "extension (use .pb or .hlo, or --format)", a->out);
	}
	if (fmt == SHS_FORMAT_PROTO) {
		uint8_t *bytes = NULL;
		size_t len = 0;
		if (shs_proto_save(m, m->from_hlo_proto, &bytes, &len, &e) != SHS_OK) {
			fprintf(stderr, "shardsearch: annotate: %s: %s (write HLO text instead: "
				".hlo)\n", a->out, e.msg);
			rc = SHS_EXIT_FAIL;
		}
		free(bytes);
	}
	if (rc == SHS_EXIT_OK && dir) {
		slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		if (slash && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
			fprintf(stderr, "shardsearch: annotate: %s: the folder %s does not exist\n",
				a->out, dir);
			rc = SHS_EXIT_FAIL;
		}
	}
	free(dir);
	return rc;
}

int shs_cmd_annotate(int argc, char **argv)
{
	args a = { .format = SHS_FORMAT_AUTO };
	shs_run r = { 0 };
	shs_module *m = NULL;
	shs_err e = { 0 };
	double load_s;
	int rc;

	shs_cli_run_defaults(&a.o, true);
	rc = parse(argc, argv, &a);
	if (rc != SHS_EXIT_OK)
		return rc < 0 ? SHS_EXIT_OK : rc;
	rc = SHS_EXIT_USAGE;
	if (!shs_cli_run_start("annotate", &r, &a.o, &a.quiet))
		goto done;
	load_s = now_s();
	m = shs_cli_load(a.in, SHS_FORMAT_AUTO, true);
	load_s = now_s() - load_s;
	rc = SHS_EXIT_FAIL;
	if (!m || (rc = output_ok(&a, m)) != SHS_EXIT_OK) {
		rc = m ? rc : SHS_EXIT_FAIL;
		goto done;
	}
	rc = SHS_EXIT_FAIL;
	if (shs_run_microbatch(&r, &m, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: annotate: %s: %s\n", a.in, e.msg);
		rc = shs_cli_exit(e.code);
		goto done;
	}
	if (!a.quiet && !a.o.plan && shs_cli_progress_wanted())
		a.o.progress = shs_cli_progress;
	rc = shs_run_annotate(&r, &m, &e);
	shs_cli_progress_done();
	if (rc != SHS_OK) {
		if (e.code == SHS_ENOFIT) /* the report of the plan that came closest */
			report(&a, &r, m, load_s);
		fprintf(stderr, "shardsearch: annotate: %s: %s\n", a.in, e.msg);
		rc = shs_cli_exit(e.code);
		goto done;
	}
	rc = finish(&a, &r, m, load_s, &e);
done:
	shs_cli_warnings_done();
	shs_run_free(&r);
	shs_module_free(m);
	return rc;
}
