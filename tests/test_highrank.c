/* Arrays of a rank over what a spec can split (SHS_PLUGIN_MAX_RANK): replicated by every plan,
 * and carried through propagation, the search, the evaluator and the reports in bounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "run.h"
#include "test_util.h"

/* A rank-17 weight beside a matmul. */
static const char module_text[] =
	"HloModule highrank\n"
	"ENTRY e {\n"
	"  w17 = f32[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2] parameter(0), "
	"metadata={op_name=\"train_step/params/w17/parameter\"}\n"
	"  x = f32[64,256] parameter(1), metadata={op_name=\"train_step/batch/parameter\"}\n"
	"  w = f32[256,512] parameter(2), metadata={op_name=\"train_step/params/w/parameter\"}\n"
	"  y = f32[64,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  n17 = f32[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2] negate(w17)\n"
	"  ROOT t = (f32[64,512], f32[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2]) tuple(y, n17)\n"
	"}\n";

/* Runs options (";"-separated) on a fresh copy of the module: annotate, or evaluate when
 * evaluate; checks the rank-17 weight is replicated in the result. */
static void run(const char *options, bool evaluate)
{
	shs_module *m = shs_test_parse(module_text);
	char *text = strdup(options);
	shs_run_options o = { .spec = { .slices = 1 }, .threads = 1 };
	shs_eval ev = { 0 };
	shs_run r = { 0 };
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	SHS_ASSERT_OK(shs_run_options_parse(&o, text, &e), &e);
	SHS_ASSERT_OK(shs_run_start(&r, &o, NULL, NULL, &e), &e);
	if (evaluate) {
		SHS_ASSERT_OK(shs_run_evaluate(&r, m, &ev, &e), &e);
		CU_ASSERT_TRUE(ev.step_time_s > 0 && ev.memory_bytes > 0);
	} else {
		const shs_instr *w17;
		SHS_ASSERT_OK(shs_run_annotate(&r, &m, &e), &e);
		w17 = shs_module_entry(m)->instrs[0];
		CU_ASSERT_PTR_NOT_NULL_FATAL(w17->sharding);
		SHS_ASSERT_INT_EQ(w17->sharding->kind, SHS_SHARDING_REPLICATED);
	}
	if (r.searched) { /* the report names the weight, replicated */
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);
		json_t *j = shs_report_json(m, &r.search, 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		shs_report_print(f, m, &r.search, 0);
		fclose(f);
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "train_step/params/w17/parameter  f32[2,2,"));
		CU_ASSERT_PTR_NOT_NULL(strstr(out, "]  replicated\n"));
		CU_ASSERT_PTR_NOT_NULL(json_object_get(json_object_get(j, "weights"),
						       "train_step/params/w17/parameter"));
		json_decref(j);
		free(out);
	}
	shs_eval_free(&ev);
	shs_run_free(&r);
	shs_module_free(m);
	free(text);
}

static void named_plan(void)
{
	run("plan=fsdp;mesh=fsdp=4", false);
	run("plan=fsdp+tp;mesh=fsdp=2,tensor=2", false);
}

static void searched(void)
{
	run("hardware=v5p;devices=8", false);
}

static void evaluated(void)
{
	run("hardware=v5p;devices=8;mesh=fsdp=8;plan=fsdp", true);
}

CU_TestInfo highrank_tests[] = {
	{ "a named plan replicates a rank-17 weight", named_plan },
	{ "the search replicates it and reports it", searched },
	{ "the evaluator takes it", evaluated },
	CU_TEST_INFO_NULL,
};
