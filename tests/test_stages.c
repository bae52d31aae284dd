/* Pipeline stages in the evaluator: a stage mesh axis splits the layers, schedules micro-batches. */
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

enum { STAGES = 4 };

/* A small GPT (8 layers unless layers is given), scanned or unrolled. */
static shs_module *model(bool scan, const char *layers)
{
	const char *const set[] = { "layers", layers ? layers : "8", "d_model", "2048", "d_ff",
				    "8192", "heads", "16", "kv_heads", "16", "head_dim", "128",
				    "vocab", "1024", "seq", "1024", "batch", "64", "scan",
				    scan ? "true" : "false", NULL };

	return shs_test_generate("gpt3-175b", set);
}

/* Evaluates plan dp of m on devices H100s over mesh with options o into *ev; the status. */
static int evaluate(const shs_module *m, int64_t devices, const char *mesh,
		    const shs_eval_options *o, shs_eval *ev, shs_err *e)
{
	shs_host *h = shs_test_host();
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_cluster_spec spec = { .hardware = "h100", .devices = devices, .mesh = mesh };
	shs_hw_catalog cat;
	shs_cluster c;
	shs_plan *p = NULL;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &c, e), e);
	shs_hw_chip(&c.hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, e), e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, "dp", e), e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, e), e);
	rc = shs_evaluate(m, p, &c, o, ev, e);
	shs_plan_free(p);
	shs_host_free(h);
	free(r);
	return rc;
}

/* The pipelined step of model(scan) over stage=4,data=4 with schedule s, m micro-batches and
 * v chunks a stage. */
static shs_eval pipelined(bool scan, shs_pipe_schedule s, int64_t m, uint32_t v)
{
	shs_module *mod = model(scan, NULL);
	shs_eval_options o = { .pipeline = s, .microbatches = m, .virtual_stages = v };
	shs_eval ev;
	shs_err e = { 0 };

	SHS_ASSERT_OK(evaluate(mod, 16, "stage=4,data=4", &o, &ev, &e), &e);
	shs_module_free(mod);
	CU_ASSERT_EQUAL(ev.pipe.stages, STAGES);
	return ev;
}

/* One computation, one answer: the scanned and unrolled forms pipeline alike. The pipeline
 * adds no difference of its own: the ratio of their pipelined steps is the ratio of their
 * whole steps (the forms' own gap, a scanned loop's copies into its stacks, is issue 15's)
 * within 1 %, and their memory agrees within 1 %. */
static void test_forms_agree(void)
{
	shs_eval a = pipelined(true, SHS_PIPE_1F1B, 8, 1), b = pipelined(false, SHS_PIPE_1F1B, 8, 1);
	shs_module *sm = model(true, NULL), *um = model(false, NULL);
	shs_eval sw, uw;
	shs_err e = { 0 };

	SHS_ASSERT_OK(evaluate(sm, 4, "data=4", NULL, &sw, &e), &e);
	SHS_ASSERT_OK(evaluate(um, 4, "data=4", NULL, &uw, &e), &e);
	CU_ASSERT_DOUBLE_EQUAL(a.step_time_s / b.step_time_s, sw.step_time_s / uw.step_time_s,
			       0.01);
	CU_ASSERT_DOUBLE_EQUAL(a.memory_bytes, b.memory_bytes, 0.01 * b.memory_bytes);
	CU_ASSERT_EQUAL(a.pipe.layers_per_stage, 2);
	CU_ASSERT_DOUBLE_EQUAL(a.pipe.p2p_bytes, b.pipe.p2p_bytes, 1e-9 * b.pipe.p2p_bytes);
	shs_eval_free(&a);
	shs_eval_free(&b);
	shs_eval_free(&sw);
	shs_eval_free(&uw);
	shs_module_free(sm);
	shs_module_free(um);
}

/* Each device runs a quarter of the layers: its compute is a quarter of the step that runs
 * them all on the same batch split (data=4), and the schedule's bubble at least the closed
 * form (p - 1) / (m v) (the embedding and the head make the end stages longer). */
static void test_quarter_of_the_work(void)
{
	shs_module *mod = model(false, NULL);
	shs_eval whole, ev = pipelined(false, SHS_PIPE_1F1B, 8, 1);
	shs_err e = { 0 };

	SHS_ASSERT_OK(evaluate(mod, 4, "data=4", NULL, &whole, &e), &e);
	CU_ASSERT_DOUBLE_EQUAL(ev.compute_s, whole.compute_s / STAGES, 0.01 * ev.compute_s);
	CU_ASSERT_DOUBLE_EQUAL(ev.params_bytes, whole.params_bytes / STAGES,
			       0.01 * ev.params_bytes);
	CU_ASSERT(ev.pipe.bubble >= 0.98 * 3.0 / 8);
	CU_ASSERT(ev.pipe.bubble < 1.5 * 3.0 / 8);
	CU_ASSERT(ev.step_time_s > ev.compute_s);
	fprintf(stderr, "\n  pipelined %.4g s (bubble %.3f), all layers on data=4 %.4g s",
		ev.step_time_s, ev.pipe.bubble, whole.step_time_s);
	shs_eval_free(&whole);
	shs_eval_free(&ev);
	shs_module_free(mod);
}

/* More micro-batches, a smaller bubble; interleaving two chunks a stage halves it about. */
static void test_bubble_shrinks(void)
{
	shs_eval few = pipelined(true, SHS_PIPE_1F1B, 4, 1), many = pipelined(true, SHS_PIPE_1F1B,
									      16, 1);
	shs_eval inter = pipelined(true, SHS_PIPE_INTERLEAVED, 16, 2);

	CU_ASSERT(many.pipe.bubble < 0.5 * few.pipe.bubble);
	CU_ASSERT(inter.pipe.bubble < 0.75 * many.pipe.bubble);
	CU_ASSERT_EQUAL(inter.pipe.chunks, 2);
	CU_ASSERT_EQUAL(inter.pipe.schedule, SHS_PIPE_INTERLEAVED);
	shs_eval_free(&few);
	shs_eval_free(&many);
	shs_eval_free(&inter);
}

/* GPipe holds all m micro-batches' activations on the first stage, 1F1B p of them: beyond
 * the state both hold, GPipe's first stage holds m / p times as much. */
static void test_gpipe_holds_more(void)
{
	shs_eval f1b = pipelined(true, SHS_PIPE_1F1B, 16, 1);
	shs_eval gpipe = pipelined(true, SHS_PIPE_GPIPE, 16, 1);
	double state = f1b.state_bytes + f1b.grads_bytes;

	CU_ASSERT_EQUAL(f1b.pipe.first_in_flight, STAGES);
	CU_ASSERT_EQUAL(gpipe.pipe.first_in_flight, 16);
	CU_ASSERT_DOUBLE_EQUAL(gpipe.state_bytes + gpipe.grads_bytes, state, 1e-6 * state);
	CU_ASSERT(f1b.memory_bytes > state);
	CU_ASSERT_DOUBLE_EQUAL((gpipe.memory_bytes - state) / (f1b.memory_bytes - state),
			       16.0 / STAGES, 0.01 * 16 / STAGES);
	shs_eval_free(&f1b);
	shs_eval_free(&gpipe);
}

/* Layers the stages cannot split evenly are refused with the reason. */
static void test_uneven_refused(void)
{
	shs_module *mod = model(false, "6");
	shs_eval_options o = { .microbatches = 4 };
	shs_eval ev;
	shs_err e = { 0 };

	CU_ASSERT_EQUAL(evaluate(mod, 16, "stage=4,data=4", &o, &ev, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "6 layers do not split evenly into 4 stages"));
	shs_module_free(mod);
}

CU_TestInfo stages_tests[] = {
	{ "scanned and unrolled pipeline alike", test_forms_agree },
	{ "a stage does a quarter of the work", test_quarter_of_the_work },
	{ "more micro-batches and chunks, a smaller bubble", test_bubble_shrinks },
	{ "GPipe holds m micro-batches, 1F1B p", test_gpipe_holds_more },
	{ "layers that do not split are refused", test_uneven_refused },
	CU_TEST_INFO_NULL,
};
