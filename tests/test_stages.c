/* Pipeline stages in the evaluator and the search: a stage axis splits the layers. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "export.h"
#include "hardware.h"
#include "plan.h"
#include "search.h"
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
	shs_eval a = pipelined(true, SHS_PIPE_1F1B, 8, 1);
	shs_eval b = pipelined(false, SHS_PIPE_1F1B, 8, 1);
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

/* The activation between stages where the first layer reads the data itself (mlp-only: the
 * loop carries the inputs parameter, which the body changes every trip, not a weight it keeps):
 * one micro-batch's rows per data device, 1024 tokens / 4 of d_model 1024 in bf16, in both
 * forms. */
static void test_boundary_is_the_data(void)
{
	const char *set[] = { "layers", "8", "batch", "4096", "d_model", "1024", "d_ff", "4096",
			      "scan", "true", NULL };
	shs_eval_options o = { .pipeline = SHS_PIPE_GPIPE, .microbatches = 4 };

	for (int scan = 0; scan < 2; scan++) {
		shs_module *mod;
		shs_eval ev;
		shs_err e = { 0 };
		set[9] = scan ? "true" : "false";
		mod = shs_test_generate("mlp-only", set);
		SHS_ASSERT_OK(evaluate(mod, 8, "stage=2,data=4", &o, &ev, &e), &e);
		CU_ASSERT_DOUBLE_EQUAL(ev.pipe.p2p_bytes, 1024.0 / 4 * 1024 * 2, 1e-9);
		shs_eval_free(&ev);
		shs_module_free(mod);
	}
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

/* A stage's layers by name, for the report: an unrolled layer's computation, a scanned loop's
 * trip; none past the forward pass's layers. */
static void test_layer_names(void)
{
	shs_module *u = model(false, NULL), *sc = model(true, NULL);
	char name[64];

	CU_ASSERT_EQUAL(shs_eval_pipeline_layers(u), 8);
	CU_ASSERT_EQUAL(shs_eval_pipeline_layers(sc), 8);
	CU_ASSERT_TRUE(shs_eval_layer_name(u, 3, name, sizeof(name)));
	CU_ASSERT_PTR_NOT_NULL(strstr(name, "layers_3.fwd"));
	CU_ASSERT_TRUE(shs_eval_layer_name(sc, 3, name, sizeof(name)));
	CU_ASSERT_PTR_NOT_NULL(strstr(name, " trip 3"));
	CU_ASSERT_FALSE(shs_eval_layer_name(u, 8, name, sizeof(name)));
	shs_module_free(u);
	shs_module_free(sc);
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

/* The search with stages (annotate --stages) on cluster spec of catalog cat: m's best plan. */
static void search_stages(const shs_module *m, const shs_hw_catalog *cat,
			  const shs_cluster_spec *spec, bool stages, shs_search_result *r)
{
	shs_host *h = shs_test_host();
	shs_search_options o = { .threads = 2, .stages = stages };
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_search(h, m, cat, spec, &o, r, &e), &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r->plan);
	shs_host_free(h);
}

/* A 145B-wide GPT of 16 layers, scanned, on 1536 A100s: with the catalog's scale-out (8 HDR
 * NICs a node) the search's best plan does not pipeline; where each node has one 100 Gb/s NIC
 * for its 8 GPUs, data and FSDP traffic over the network costs more than a pipeline's
 * activations between stages, and the search pipelines, faster than its best plan without
 * stages. On a single TPU slice (ICI everywhere) stages lose: the same plan as without. */
static void test_search_pipelines_where_it_pays(void)
{
	const char *const wide[] = { "layers", "16", "d_model", "12288", "d_ff", "49152", "heads",
				     "96", "kv_heads", "96", "head_dim", "128", "batch", "2304",
				     "vocab", "51200", "seq", "2048", "gated_mlp", "false",
				     "scan", "true", NULL };
	const char *const small[] = { "layers", "8", "scan", "true", NULL };
	shs_cluster_spec gpus = { .hardware = "a100", .devices = 1536, .slices = 1 };
	shs_cluster_spec slice = { .hardware = "v5p", .devices = 256, .slices = 1 };
	shs_module *m = shs_test_generate("gpt3-175b", wide), *s = shs_test_generate("llama3-8b",
										     small);
	shs_hw_catalog cat;
	shs_search_result flat, staged, one_nic, on_slice, slice_flat;

	shs_hw_catalog_builtin(&cat);
	search_stages(m, &cat, &gpus, true, &staged);
	CU_ASSERT_EQUAL(staged.eval.pipe.stages, 0);
	for (uint32_t k = 0; k < cat.n; k++)
		if (!strcmp(cat.hw[k].name, "a100"))
			cat.hw[k].node_egress = 12.5e9;
	search_stages(m, &cat, &gpus, false, &flat);
	search_stages(m, &cat, &gpus, true, &one_nic);
	fprintf(stderr, "\n  one NIC a node: %s %.4g s; without stages %s %.4g s",
		one_nic.best.mesh, one_nic.eval.step_time_s, flat.best.mesh, flat.eval.step_time_s);
	CU_ASSERT(one_nic.eval.pipe.stages > 1);
	CU_ASSERT(one_nic.eval.fits);
	CU_ASSERT(one_nic.eval.step_time_s < flat.eval.step_time_s);
	/* Megatron-LM's arguments for it: the pipeline's size, its micro-batch size from the
	 * schedule's micro-batches, the global batch */
	char *args = NULL, want[64];
	shs_err e = { 0 };
	SHS_ASSERT_OK(shs_export_megatron(m, &one_nic, &args, &e), &e);
	snprintf(want, sizeof(want), "--pipeline-model-parallel-size %u\n",
		 one_nic.eval.pipe.stages);
	CU_ASSERT_PTR_NOT_NULL(strstr(args, want));
	CU_ASSERT_PTR_NOT_NULL(strstr(args, "--global-batch-size 2304\n"));
	if (one_nic.eval.pipe.chunks > 1)
		CU_ASSERT_PTR_NOT_NULL(strstr(args, "--num-layers-per-virtual-pipeline-stage"));
	free(args);
	shs_hw_catalog_builtin(&cat);
	search_stages(s, &cat, &slice, true, &on_slice);
	search_stages(s, &cat, &slice, false, &slice_flat);
	CU_ASSERT_EQUAL(on_slice.eval.pipe.stages, 0);
	CU_ASSERT_STRING_EQUAL(on_slice.best.mesh, slice_flat.best.mesh);
	shs_search_result_free(&flat);
	shs_search_result_free(&staged);
	shs_search_result_free(&one_nic);
	shs_search_result_free(&on_slice);
	shs_search_result_free(&slice_flat);
	shs_module_free(m);
	shs_module_free(s);
}

CU_TestInfo stages_tests[] = {
	{ "the stages hand on the data where the first layer reads it",
	  test_boundary_is_the_data },
	{ "scanned and unrolled pipeline alike", test_forms_agree },
	{ "a stage does a quarter of the work", test_quarter_of_the_work },
	{ "more micro-batches and chunks, a smaller bubble", test_bubble_shrinks },
	{ "GPipe holds m micro-batches, 1F1B p", test_gpipe_holds_more },
	{ "layers that do not split are refused", test_uneven_refused },
	{ "a stage's layers by name", test_layer_names },
	{ "the search pipelines where it pays, not on one slice",
	  test_search_pipelines_where_it_pays },
	CU_TEST_INFO_NULL,
};
