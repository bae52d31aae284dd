/* All-reduces sunk out of the micro-batch loop on GPUs (XLA's WhileLoopAllReduceCodeMotion):
 * gradients all-reduced over a data axis once per step, not once per micro-batch; kept in the
 * loop on TPUs and for reduce-scatters. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "plan.h"
#include "test_util.h"

enum { MICRO = 4, GRAD_DOTS = 4 };

/* Gradient accumulation (the generator's MaxText-style loop of MICRO micro-batches) with the
 * weights replicated over data and the gradient dots and their accumulation pinned replicated:
 * each weight gradient is all-reduced, and only added into the carried sum. */
static const char SUMMED_PLAN[] =
	"{\"base\": \"dp\", \"activations\": ["
	"{\"match\": \"train_step/microbatches/add\", \"spec\": [null, null]},"
	"{\"match\": \"train_step/layers*/mlp/*/grad/dot\", \"spec\": [null, null]}]}\n";

/* The same with the sum split over data instead: each weight gradient reduce-scattered into it. */
static const char SHARDED_PLAN[] =
	"{\"base\": \"dp\", \"activations\": ["
	"{\"match\": \"train_step/microbatches/add\", \"spec\": [\"data\", null]},"
	"{\"match\": \"train_step/layers*/mlp/*/grad/dot\", \"spec\": [\"data\", null]}]}\n";

static shs_module *accumulated_mlp(void)
{
	const char *const set[] = { "layers", "2", "d_model", "1024", "d_ff", "4096", "batch",
				    "8192", "microbatches", "4", NULL };

	return shs_test_generate("mlp-only", set);
}

/* The weight-gradient sites (at the grad dots) of the plan from plan-file text (NULL: "dp") on
 * 8 devices of hw over data=8: at least min_found of kind want_kind, each run want_count times
 * a step. */
static void grad_sites(const char *hw, const char *plan_text, int want_kind, double want_count,
		       uint32_t min_found)
{
	shs_host *h = shs_test_host();
	shs_module *m = accumulated_mlp();
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_cluster_spec spec = { .hardware = hw, .devices = 8, .mesh = "data=8" };
	shs_hw_catalog cat;
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev;
	shs_err e = { 0 };
	uint32_t found = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &c, &e), &e);
	shs_hw_chip(&c.hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, spec.mesh, &e), &e);
	if (plan_text)
		SHS_ASSERT_OK(shs_plan_load_json(r, shs_test_write_tmp("sink.json", plan_text), &e),
			      &e);
	else
		SHS_ASSERT_OK(shs_plan_parse_kind(r, "dp", &e), &e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	SHS_ASSERT_OK(shs_evaluate(m, p, &c, NULL, &ev, &e), &e);
	for (uint32_t k = 0; k < ev.n_colls; k++) {
		const shs_eval_coll *s = &ev.colls[k];
		const shs_instr *in = m->comps[s->comp]->instrs[s->instr];
		if (in->op != SHS_OP_DOT || !in->metadata || !in->metadata->op_name ||
		    !strstr(in->metadata->op_name, "/grad/dot") || s->kind != want_kind ||
		    s->bytes < 1e6)
			continue;
		found++;
		CU_ASSERT_DOUBLE_EQUAL(s->count, want_count, 1e-12);
		/* the site's time: one collective of its bytes per execution */
		CU_ASSERT_DOUBLE_EQUAL(s->time_s,
				       shs_coll_time(&c, s->kind, s->axes_mask, s->bytes) * want_count,
				       1e-9 * s->time_s);
	}
	fprintf(stderr, "\n  %s: %u weight-gradient %s sites x %g, step %.5f s", hw, found,
		want_kind == SHS_PCOLL_ALL_REDUCE ? "all-reduce" : "reduce-scatter", want_count,
		ev.step_time_s);
	CU_ASSERT_TRUE(found >= min_found);
	shs_eval_free(&ev);
	shs_plan_free(p);
	shs_module_free(m);
	shs_host_free(h);
	free(r);
}

/* H100: the all-reduces leave the loop, once per step. */
static void test_sunk_on_gpu(void)
{
	grad_sites("h100", SUMMED_PLAN, SHS_PCOLL_ALL_REDUCE, 1, GRAD_DOTS);
}

/* TPU v5p: the same plan all-reduces once per micro-batch. */
static void test_kept_on_tpu(void)
{
	grad_sites("v5p", SUMMED_PLAN, SHS_PCOLL_ALL_REDUCE, MICRO, GRAD_DOTS);
}

/* H100, the plan propagation makes of "dp": the weights and Adam state come back replicated,
 * so the gradients are all-reduced where the dots make them (plan_update.c) and summed
 * replicated, as the pinned plan above: the pass takes those out of the loop too. */
static void test_dp_sunk(void)
{
	grad_sites("h100", NULL, SHS_PCOLL_ALL_REDUCE, 1, GRAD_DOTS);
}

/* H100, the sum split over data: gradients reduce-scattered into it (two of them; the other
 * two gathered another way), once per micro-batch (the pass moves reduce-scatters only under a
 * flag that is off). */
static void test_reduce_scatter_stays(void)
{
	grad_sites("h100", SHARDED_PLAN, SHS_PCOLL_REDUCE_SCATTER, MICRO, 2);
}

CU_TestInfo sink_tests[] = {
	{ "GPU: accumulated all-reduces run once, after the micro-batch loop", test_sunk_on_gpu },
	{ "TPU: the same all-reduces run once per micro-batch", test_kept_on_tpu },
	{ "GPU: data parallelism's own all-reduces leave the loop as well", test_dp_sunk },
	{ "GPU: reduce-scatters stay in the loop", test_reduce_scatter_stays },
	CU_TEST_INFO_NULL,
};
