/* shardsearch evaluate: the step time, communication and memory of a plan on a cluster. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_plan.h"
#include "evaluate.h"

enum { DECIMAL = 10, SHOWN_COLLECTIVES = 10, DESCRIBE_CAP = 256 };

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
	"options:\n"
	"  --hardware NAME       v4p, v5e, v5p, v6e, 7x, a100, h100, h200, b200, gb200-nvl72\n"
	"  --hardware-file F     add or override catalog entries (JSON)\n"
	"  --topology AxBxC      a TPU slice; --devices N picks the standard one (GPUs: N GPUs)\n"
	"  --slices S            TPU slices over DCN (physical axis dcn)\n";

static const char usage_tail[] =
	"                        (with --mesh, physical axes after @: x, y, z; node, net; dcn,\n"
	"                        e.g. fsdp=16@xy,tensor=4@z; without @ a default layout)\n"
	"  --remat none|dots|full  keep every saved activation (default), only matmul outputs\n"
	"                        and layer inputs, or only layer inputs (recomputing the rest)\n"
	"  --schedule S          events: the makespan of an event schedule (default);\n"
	"                        segments: per layer max(compute, overlapped comms) + blocking\n"
	"  --prefetch N          weight gathers may start N layers ahead (default 1)\n"
	"  --no-overlap          every collective blocks the compute stream\n"
	"  --no-fusion           every elementwise instruction reads and writes HBM (by default\n"
	"                        chains of elementwise work fuse as XLA fuses them)\n"
	"  --json                one JSON object\n"
	"  --help                this text\n"
	"\n"
	"exit status: 0 success, 1 bad input or a failed operation, 2 bad usage or options\n";

typedef struct args {
	const char *in, *hw_file;
	shs_cluster_spec cluster;
	bool json;
	shs_eval_options eval;
	shs_cli_plan_opts plan;
} args;

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

static int parse(int argc, char **argv, args *a)
{
	for (int k = 1; k < argc; k++) {
		const char *o = argv[k];
		int r = shs_cli_plan_option("evaluate", argc, argv, &k, &a->plan, usage_head,
					    usage_tail);
		if (r == SHS_CLI_HELP || r < 0)
			return r < 0 ? SHS_EXIT_USAGE : -1;
		if (r)
			continue;
		if (!strcmp(o, "--json")) {
			a->json = true;
		} else if (!strcmp(o, "--no-overlap")) {
			a->eval.no_overlap = true;
		} else if (!strcmp(o, "--no-fusion")) {
			a->eval.no_fusion = true;
		} else if (!strcmp(o, "--schedule")) {
			static const char *const names[] = { "events", "segments", NULL };
			int v = choice(k + 1 < argc ? argv[++k] : "", names);
			if (v < 0)
				return shs_cli_usage_error("evaluate", "--schedule takes events or "
							   "segments");
			a->eval.schedule = (shs_schedule)v;
		} else if (!strcmp(o, "--prefetch")) {
			int64_t depth = 0;
			if (k + 1 >= argc || !count_arg(argv[++k], &depth) || depth > 16)
				return shs_cli_usage_error("evaluate", "--prefetch takes 1 to 16");
			a->eval.prefetch_depth = (uint32_t)depth;
		} else if (!strcmp(o, "--remat")) {
			static const char *const names[] = { "none", "dots", "full", NULL };
			int v = choice(k + 1 < argc ? argv[++k] : "", names);
			if (v < 0)
				return shs_cli_usage_error("evaluate",
							   "--remat takes none, dots or full");
			a->eval.remat = (shs_remat)v;
		} else if (!strcmp(o, "--hardware") || !strcmp(o, "--hardware-file") ||
			   !strcmp(o, "--topology") || !strcmp(o, "--devices") ||
			   !strcmp(o, "--slices")) {
			const char *v = k + 1 < argc ? argv[++k] : NULL;
			if (!v)
				return shs_cli_usage_error("evaluate", "%s needs a value", o);
			if (!strcmp(o, "--hardware"))
				a->cluster.hardware = v;
			else if (!strcmp(o, "--hardware-file"))
				a->hw_file = v;
			else if (!strcmp(o, "--topology"))
				a->cluster.topology = v;
			else if (!count_arg(v, !strcmp(o, "--devices") ? &a->cluster.devices
								      : &a->cluster.slices))
				return shs_cli_usage_error("evaluate", "%s takes a count >= 1", o);
		} else if (o[0] == '-' && o[1]) {
			return shs_cli_usage_error("evaluate", "unknown option '%s'", o);
		} else if (!a->in) {
			a->in = o;
		} else {
			return shs_cli_usage_error("evaluate", "one input only");
		}
	}
	if (!a->in || !a->cluster.hardware || !a->plan.mesh || !a->plan.plan)
		return shs_cli_usage_error("evaluate", "needs IN, --hardware, --mesh and --plan");
	a->cluster.mesh = a->plan.mesh;
	return SHS_EXIT_OK;
}

/* The plan request on the cluster's mesh (its axes without the physical layout). */
static bool make_request(const args *a, const shs_cluster *c, shs_plan_request *r)
{
	shs_cli_plan_opts o = a->plan;
	char mesh[DESCRIBE_CAP];

	shs_mesh_text(&c->mesh, mesh, sizeof(mesh));
	o.mesh = mesh;
	return shs_cli_request("evaluate", &o, r);
}

static const char *coll_name(int kind)
{
	static const char *const names[] = { "all-reduce", "reduce-scatter", "all-gather",
					     "all-to-all", "permute" };

	return kind >= 0 && kind <= SHS_COLL_PERMUTE ? names[kind] : "collective";
}

static void axes_text(const shs_mesh *m, uint32_t mask, char *buf, size_t cap)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t a = 0; a < m->n_axes && used < cap; a++)
		if (mask & (1u << a))
			used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "," : "",
						 m->names[a]);
}

static int print_json(const shs_cluster *c, const shs_eval *ev)
{
	json_t *o = json_object(), *by_axis = json_object(), *colls = json_array();
	char axes[DESCRIBE_CAP];

	for (uint32_t a = 0; a < c->mesh.n_axes; a++)
		json_object_set_new(by_axis, c->mesh.names[a], json_real(ev->exposed_by_axis[a]));
	for (uint32_t k = 0; k < ev->n_colls; k++) {
		const shs_eval_coll *s = &ev->colls[k];
		json_t *j = json_object();
		axes_text(&c->mesh, s->axes_mask, axes, sizeof(axes));
		json_object_set_new(j, "kind", json_string(coll_name(s->kind)));
		json_object_set_new(j, "axes", json_string(axes));
		json_object_set_new(j, "where", json_string(s->where));
		json_object_set_new(j, "reshard", json_boolean(s->reshard));
		json_object_set_new(j, "overlapped", json_boolean(s->overlapped));
		json_object_set_new(j, "bytes", json_real(s->bytes));
		json_object_set_new(j, "count", json_real(s->count));
		json_object_set_new(j, "time_s", json_real(s->time_s));
		json_object_set_new(j, "exposed_s", json_real(s->exposed_s));
		json_array_append_new(colls, j);
	}
	json_object_set_new(o, "step_time_s", json_real(ev->step_time_s));
	json_object_set_new(o, "compute_s", json_real(ev->compute_s));
	json_object_set_new(o, "remat_s", json_real(ev->remat_s));
	json_object_set_new(o, "comm_s", json_real(ev->comm_s));
	json_object_set_new(o, "exposed_comm_s", by_axis);
	json_object_set_new(o, "exposed_comm_total_s", json_real(ev->exposed_comm_s));
	json_object_set_new(o, "bound", json_string(ev->bound));
	json_object_set_new(o, "mfu", json_real(ev->mfu));
	json_object_set_new(o, "flops_per_device", json_real(ev->flops));
	json_object_set_new(o, "memory_bytes_per_device", json_real(ev->memory_bytes));
	json_object_set_new(o, "params_bytes", json_real(ev->params_bytes));
	json_object_set_new(o, "grads_bytes", json_real(ev->grads_bytes));
	json_object_set_new(o, "optimizer_bytes", json_real(ev->optimizer_bytes));
	json_object_set_new(o, "hbm_bytes", json_real(ev->hbm_bytes));
	json_object_set_new(o, "fits", json_boolean(ev->fits));
	json_object_set_new(o, "collectives", colls);
	return shs_cli_put_json(o, DECIMAL + 5);
}

static void print_text(const shs_cluster *c, const shs_eval *ev)
{
	char describe[DESCRIBE_CAP] = "", axes[DESCRIBE_CAP];
	double gib = 1024.0 * 1024.0 * 1024.0;

	shs_cluster_describe(c, describe, sizeof(describe));
	printf("cluster         %s\n", describe);
	printf("step time       %.4g s (%s-bound), MFU %.1f %%\n", ev->step_time_s, ev->bound,
	       100 * ev->mfu);
	printf("compute         %.4g s (FLOPs %.4g s, HBM %.4g s, recomputation %.4g s)\n",
	       ev->compute_s, ev->flops_s, ev->hbm_s, ev->remat_s);
	printf("communication   %.4g s in all, %.4g s exposed:", ev->comm_s, ev->exposed_comm_s);
	for (uint32_t a = 0; a < c->mesh.n_axes; a++)
		printf(" %s %.4g s", c->mesh.names[a], ev->exposed_by_axis[a]);
	printf("\nmemory          %.2f GiB peak of %.2f GiB HBM (%s); weights %.2f GiB, gradients "
	       "%.2f GiB, Adam state %.2f GiB\n", ev->memory_bytes / gib, ev->hbm_bytes / gib,
	       ev->fits ? "fits" : "does not fit", ev->params_bytes / gib, ev->grads_bytes / gib,
	       ev->optimizer_bytes / gib);
	for (uint32_t k = 0; k < ev->n_colls && k < SHOWN_COLLECTIVES; k++) {
		const shs_eval_coll *s = &ev->colls[k];
		axes_text(&c->mesh, s->axes_mask, axes, sizeof(axes));
		printf("  %-14s over {%s} at %s%s: %.4g s (%.4g exposed), %.4g bytes x %.0f\n",
		       coll_name(s->kind), axes, s->where, s->reshard ? " (reshard)" : "",
		       s->time_s, s->exposed_s, s->bytes, s->count);
	}
}

int shs_cmd_evaluate(int argc, char **argv)
{
	args a = { .cluster = { .slices = 1 } };
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
	if (!cat || !c || !r)
		goto done;
	shs_hw_catalog_builtin(cat);
	if ((a.hw_file && shs_hw_catalog_load_json(cat, a.hw_file, &e) != SHS_OK) ||
	    shs_cluster_make(cat, &a.cluster, c, &e) != SHS_OK) {
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
	if (shs_evaluate(m, p, c, &a.eval, &ev, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: evaluate: %s: %s\n", a.in, e.msg);
		goto done;
	}
	if (a.json)
		print_json(c, &ev);
	else
		print_text(c, &ev);
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
