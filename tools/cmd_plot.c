/* shardsearch plot: step time and memory of a model against the tensor x fsdp (and stage)
 * degrees on a cluster, as a table and an SVG picture with the fits / does-not-fit boundary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "plot_svg.h"
#include "report.h"
#include "run.h"

enum { MAX_POINTS = 256, DEFAULT_MAX_TENSOR = 64, DECIMAL = 10 };

static const char usage_head[] =
	"usage: shardsearch plot IN --hardware NAME (--topology AxBxC | --devices N) -o OUT.svg\n"
	"                        [--stages] [--max-tensor T] [options]\n"
	"\n"
	"Evaluates the model on every mesh fsdp=D/T,tensor=T of the cluster's D devices (T a\n"
	"power of two up to --max-tensor), with --stages also stage=S,fsdp=D/(S T),tensor=T (S a\n"
	"power of two that divides the layers), each with the plan fsdp+tp (fsdp, tp where an\n"
	"axis is 1) and the least recomputation that fits (or --remat), and draws the book's\n"
	"figure: step time and memory per device against the tensor degree, one line per stage\n"
	"degree, the HBM as the boundary between the plans that fit and those that do not. The\n"
	"table goes to stdout.\n"
	"\n"
	"options:\n";

static const char usage_tail[] =
	"  -o OUT.svg            the picture\n"
	"  --stages              also pipeline stages (a mesh axis stage)\n"
	"  --max-tensor T        the largest tensor degree (default 64)\n"
	"  --json                the table as one JSON object\n"
	"  --help                this text\n"
	"\n"
	"exit status: 0 success, 1 bad input or no mesh could be evaluated, 2 bad usage\n";

typedef struct args {
	const char *in, *out;
	bool stages, json, quiet;
	int64_t max_tensor;
	shs_run_options o;
} args;

static void usage(void)
{
	fputs(usage_head, stdout);
	fputs(shs_cli_cluster_usage, stdout);
	fputs(shs_cli_eval_usage, stdout);
	fputs(usage_tail, stdout);
}

static int parse(int argc, char **argv, args *a)
{
	for (int k = 1; k < argc; k++) {
		const char *o = argv[k];
		char *end;
		int r;
		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			usage();
			return -1;
		}
		r = shs_cli_run_option("plot", argc, argv, &k, SHS_CLI_CLUSTER | SHS_CLI_EVAL,
				       &a->o);
		if (r < 0)
			return SHS_EXIT_USAGE;
		if (r)
			continue;
		if (!strcmp(o, "--stages") || !strcmp(o, "--json") || !strcmp(o, "--quiet")) {
			*(!strcmp(o, "--stages") ? &a->stages : !strcmp(o, "--json") ? &a->json :
						  &a->quiet) = true;
		} else if (!strcmp(o, "-o") || !strcmp(o, "--max-tensor")) {
			if (k + 1 >= argc)
				return shs_cli_usage_error("plot", "%s needs a value", o);
			if (!strcmp(o, "-o"))
				a->out = argv[++k];
			else if ((a->max_tensor = strtoll(argv[++k], &end, DECIMAL)) < 1 || *end)
				return shs_cli_usage_error("plot", "--max-tensor takes a count");
		} else if (o[0] == '-' && o[1]) {
			return shs_cli_usage_error("plot", "unknown option '%s'", o);
		} else if (!a->in) {
			a->in = o;
		} else {
			return shs_cli_usage_error("plot", "one input only");
		}
	}
	if (!a->in || !a->out || !a->o.spec.hardware ||
	    (!a->o.spec.topology && !a->o.spec.devices))
		return shs_cli_usage_error("plot", "needs IN, --hardware, --topology or "
					   "--devices, and -o OUT.svg");
	if (a->o.mesh || a->o.plan)
		return shs_cli_usage_error("plot", "the meshes and plans are the plot's own: no "
					   "--mesh or --plan");
	return SHS_EXIT_OK;
}

/* The mesh of degrees s, f, t (axes of size 1 left out, one kept at least) and its plan. */
static void mesh_of(int64_t s, int64_t f, int64_t t, char *mesh, size_t cap, const char **plan)
{
	size_t n = 0;

	mesh[0] = '\0';
	if (s > 1)
		n += (size_t)snprintf(mesh + n, cap - n, "stage=%lld", (long long)s);
	if (f > 1 || t == 1)
		n += (size_t)snprintf(mesh + n, cap - n, "%sfsdp=%lld", n ? "," : "", (long long)f);
	if (t > 1)
		snprintf(mesh + n, cap - n, "%stensor=%lld", n ? "," : "", (long long)t);
	*plan = t > 1 && f > 1 ? "fsdp+tp" : t > 1 ? "tp" : "fsdp";
}

/* Evaluates degrees s, f, t of the cluster into *q, the plugins in *host (loaded by the first
 * run, then lent to the others); false, with the reason on stderr, when the mesh cannot be. */
static bool point(const args *a, const shs_module *m, shs_host **host, int64_t s, int64_t f,
		  int64_t t, shs_plot_point *q, double *hbm)
{
	shs_run_options o = a->o;
	shs_run r = { 0 };
	shs_eval ev = { 0 };
	shs_err e = { 0 };
	shs_remat used = o.eval.remat;
	char mesh[96];
	bool quiet = true;
	int rc;

	mesh_of(s, f, t, mesh, sizeof(mesh), &o.plan);
	o.mesh = mesh;
	rc = shs_run_start(&r, &o, shs_cli_warn, &quiet, &e);
	r.host = *host;
	if (rc == SHS_OK)
		rc = shs_run_plan(&r, m, &e);
	*host = r.host;
	if (rc == SHS_OK) {
		shs_eval_options eo = o.eval;
		eo.microbatches = s > 1 ? o.microbatches : 0;
		rc = shs_evaluate_until_fits(m, r.plan, &r.cluster, &eo,
					     o.remat_given ? o.eval.remat : SHS_REMAT_FULL, &ev,
					     &used, &e);
	}
	if (rc == SHS_OK) {
		*q = (shs_plot_point){ .stage = s, .fsdp = f, .tensor = t,
				       .step_s = ev.step_time_s, .memory_bytes = ev.memory_bytes,
				       .fits = ev.fits, .remat = shs_remat_name(used) };
		*hbm = ev.hbm_bytes;
	} else if (!a->quiet) {
		fprintf(stderr, "shardsearch: plot: %s: %s: left out\n", mesh, e.msg);
	}
	shs_eval_free(&ev);
	r.host = NULL; /* lent: freed once, by the caller */
	shs_run_free(&r);
	return rc == SHS_OK;
}

/* The cluster's device count (its default mesh). */
static int64_t device_count(const args *a)
{
	shs_hw_catalog cat;
	shs_cluster c;
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
	if (a->o.hw_file && shs_hw_catalog_load_json(&cat, a->o.hw_file, &e) != SHS_OK)
		return 0;
	return shs_cluster_make(&cat, &a->o.spec, &c, &e) == SHS_OK ? c.devices : 0;
}

/* The plans as a table on stdout, or as one JSON object. */
static void print_table(const args *a, const shs_plot_point *v, uint32_t n)
{
	json_t *o, *rows;

	if (!a->json) {
		printf("stage  fsdp  tensor  step time (s)  memory (GiB)  remat      fits\n");
		for (uint32_t k = 0; k < n; k++)
			printf("%5lld %5lld  %6lld  %13.4g  %12.2f  %-9s  %s\n",
			       (long long)v[k].stage, (long long)v[k].fsdp, (long long)v[k].tensor,
			       v[k].step_s, v[k].memory_bytes / (1024.0 * 1024 * 1024), v[k].remat,
			       v[k].fits ? "yes" : "no");
		return;
	}
	o = json_object();
	rows = json_array();
	for (uint32_t k = 0; rows && k < n; k++)
		json_array_append_new(rows, json_pack(
			"{s:I, s:I, s:I, s:f, s:f, s:s, s:b}", "stage", (json_int_t)v[k].stage,
			"fsdp", (json_int_t)v[k].fsdp, "tensor", (json_int_t)v[k].tensor,
			"step_time_s", v[k].step_s, "memory_bytes", v[k].memory_bytes, "remat",
			v[k].remat, "fits", (int)v[k].fits));
	if (o) {
		json_object_set_new(o, "plans", rows);
		json_object_set_new(o, "svg", json_string(a->out));
	}
	shs_cli_put_json(o, SHS_REPORT_JSON_DIGITS);
}

/* Every stage and tensor degree of D devices into v (at most MAX_POINTS); how many. */
static uint32_t plot_all(const args *a, const shs_module *m, int64_t d, shs_plot_point *v,
			 double *hbm)
{
	int64_t layers = shs_eval_pipeline_layers(m), max_s = a->stages ? d : 1;
	int64_t max_t = a->max_tensor ? a->max_tensor : DEFAULT_MAX_TENSOR;
	shs_host *host = NULL;
	uint32_t n = 0;

	for (int64_t s = 1; s <= max_s && n < MAX_POINTS; s *= 2) {
		if (d % s || (s > 1 && (layers < s || layers % s)))
			continue;
		for (int64_t t = 1; t <= max_t && t <= d / s && n < MAX_POINTS; t *= 2)
			if ((d / s) % t == 0 && point(a, m, &host, s, d / s / t, t, &v[n], hbm))
				n++;
	}
	shs_host_free(host);
	return n;
}

int shs_cmd_plot(int argc, char **argv)
{
	args a = { 0 };
	shs_plot_point *v = NULL;
	shs_module *m = NULL;
	char title[256], subtitle[512], *svg = NULL;
	double hbm = 0;
	int64_t d;
	uint32_t n;
	int rc;

	shs_cli_run_defaults(&a.o, false);
	rc = parse(argc, argv, &a);
	if (rc != SHS_EXIT_OK)
		return rc < 0 ? SHS_EXIT_OK : rc;
	if ((d = device_count(&a)) < 1) {
		shs_run r = { 0 };
		if (shs_cli_run_start("plot", &r, &a.o, &a.quiet)) /* says why: the catalog */
			fprintf(stderr, "shardsearch: plot: no such cluster: %s with %s\n",
				a.o.spec.hardware, a.o.spec.topology ? a.o.spec.topology :
								       "those devices");
		shs_run_free(&r);
		return SHS_EXIT_USAGE;
	}
	rc = SHS_EXIT_FAIL;
	if (!(m = shs_cli_load(a.in, SHS_FORMAT_AUTO, true)))
		goto done;
	if (!(v = calloc(MAX_POINTS, sizeof(*v)))) {
		fprintf(stderr, "shardsearch: plot: out of memory\n");
		goto done;
	}
	if (!(n = plot_all(&a, m, d, v, &hbm))) {
		fprintf(stderr, "shardsearch: plot: %s: no mesh of %lld devices could be "
			"evaluated\n", a.in, (long long)d);
		goto done;
	}
	snprintf(title, sizeof(title), "%s: step time and memory against tensor x fsdp%s",
		 m->name ? m->name : a.in, a.stages ? " x stage" : "");
	snprintf(subtitle, sizeof(subtitle), "%lld %s devices%s%s; plan fsdp+tp; remat %s",
		 (long long)d, a.o.spec.hardware, a.o.spec.topology ? ", " : "",
		 a.o.spec.topology ? a.o.spec.topology : "",
		 a.o.remat_given ? shs_remat_name(a.o.eval.remat) : "the least that fits");
	svg = shs_plot_svg(&(shs_plot){ .v = v, .n = n, .hbm_bytes = hbm, .title = title,
					.subtitle = subtitle });
	if (!svg) {
		fprintf(stderr, "shardsearch: plot: out of memory\n");
		goto done;
	}
	if ((rc = shs_cli_write_text("plot", a.out, svg)) == SHS_EXIT_OK)
		print_table(&a, v, n);
done:
	shs_cli_warnings_done();
	free(svg);
	free(v);
	shs_module_free(m);
	return rc;
}
