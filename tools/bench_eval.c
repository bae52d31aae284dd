/* Evaluation-speed benchmark: full evaluations per second of one plan on a cluster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "evaluate.h"
#include "gen.h"
#include "host.h"

enum { MIN_RUNS = 20 };

/* Seconds to spend measuring one case. */
static const double MEASURE_S = 2.0;

typedef struct bench_case {
	const char *preset, *scan, *hardware, *topology, *mesh, *plan_mesh, *plan;
} bench_case;

static int run(const bench_case *b, const char *strategy_dir)
{
	shs_gen_config g;
	shs_hw_catalog cat;
	shs_cluster cl;
	shs_cluster_spec spec = { .hardware = b->hardware, .topology = b->topology, .slices = 1,
				  .mesh = b->mesh };
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_module *m = NULL;
	shs_host *h = shs_host_new(NULL, NULL);
	shs_plan *p = NULL;
	shs_eval ev;
	shs_err e = { 0 };
	double t0, t1 = 0;
	long n = 0;
	int rc = 1;

	shs_hw_catalog_builtin(&cat);
	if (!r || !h || shs_gen_preset(b->preset, &g, &e) ||
	    shs_gen_config_set(&g, "scan", b->scan, &e) || shs_gen_module(&g, &m, NULL, &e) ||
	    shs_cluster_make(&cat, &spec, &cl, &e)) {
		fprintf(stderr, "bench_eval: %s: %s\n", b->preset, e.msg);
		goto done;
	}
	shs_hw_chip(&cl.hw, &r->chip); /* propagation compares on the cluster's chip */
	if (shs_plan_parse_mesh(r, b->plan_mesh, &e) || shs_plan_parse_kind(r, b->plan, &e) ||
	    shs_host_load_dir(h, strategy_dir, &e) <= 0 || shs_plan_make(h, m, r, &p, &e)) {
		fprintf(stderr, "bench_eval: %s: %s\n", b->preset, e.msg);
		goto done;
	}
	t0 = shs_bench_now();
	while (n < MIN_RUNS || (t1 = shs_bench_now()) - t0 < MEASURE_S) {
		if (shs_evaluate(m, p, &cl, NULL, &ev, &e) != SHS_OK) {
			fprintf(stderr, "bench_eval: %s\n", e.msg);
			goto done;
		}
		shs_eval_free(&ev);
		n++;
	}
	t1 = shs_bench_now();
	printf("%s %s on %s %s, %s %s: %.0f evaluations/s (%ld in %.2f s)\n", b->preset,
	       strcmp(b->scan, "true") ? "unrolled" : "scanned", b->hardware, b->topology, b->plan,
	       b->mesh, (double)n / (t1 - t0), n, t1 - t0);
	rc = 0;
done:
	shs_plan_free(p);
	shs_host_free(h);
	shs_module_free(m);
	free(r);
	return rc;
}

int main(int argc, char **argv)
{
	static const bench_case cases[] = {
		{ "llama3-70b", "true", "v5p", "16x20x28", "fsdp=2240,tensor=4",
		  "fsdp=2240,tensor=4", "fsdp+tp" },
		{ "mlp-only", "false", "v5p", "4x4x4", "fsdp=16@xy,tensor=4@z", "fsdp=16,tensor=4",
		  "fsdp+tp" },
	};
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_eval STRATEGY_DIR\n");
		return 2;
	}
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		rc |= run(&cases[k], argv[1]);
	return rc;
}
