/* Experts: expert parallelism wins where dispatching tokens by all-to-all is cheap against
 * gathering every expert's weights (few tokens) and loses where it is not (many), in the cost
 * and in the search's choice; the fine-grained DeepSeekMoE preset, shared experts included. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "search.h"
#include "test_util.h"

/* Mixtral's layers (8 experts of 3 x 4096 x 14336) with sequences of 1024 tokens. */
static shs_module *mixtral(const char *batch)
{
	const char *const set[] = { "layers", "4", "scan", "true", "seq", "1024", "batch", batch,
				    NULL };

	return shs_test_generate("mixtral-8x7b", set);
}

/* The step on 64 H100s (8 nodes) with plan fsdp on mesh. */
static double step(shs_host *h, const shs_module *m, const char *mesh)
{
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "h100", .devices = 64, .mesh = mesh };
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev;
	double t;

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &spec, m, "fsdp", NULL, &c, &p, &ev);
	t = ev.step_time_s;
	shs_eval_free(&ev);
	shs_plan_free(p);
	return t;
}

/* The search's mesh for m on 64 H100s. */
static bool searched_expert_axis(shs_host *h, const shs_module *m, char *mesh, size_t cap)
{
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "h100", .devices = 64 };
	shs_search_options o = { .threads = 2 };
	shs_search_result r;
	shs_err e = { 0 };
	bool ep;

	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &o, &r, &e), &e);
	snprintf(mesh, cap, "%s", r.best.mesh);
	ep = strstr(r.best.mesh, "expert=") != NULL;
	CU_ASSERT_EQUAL(r.experts, 8);
	shs_search_result_free(&r);
	return ep;
}

/* 16 sequences: FSDP gathers 8 experts' weights per layer for 16k tokens; expert parallelism
 * (experts over the nodes, FSDP inside them) sends the tokens instead, and wins. 512
 * sequences: the tokens' all-to-all across nodes outweighs the gathers, and it loses. */
static void test_expert_parallelism(void)
{
	shs_host *h = shs_test_host();
	shs_module *few = mixtral("16"), *many = mixtral("512");
	double ep_few = step(h, few, "expert=8@net,fsdp=8@node"), fsdp_few = step(h, few, "fsdp=64");
	double ep_many = step(h, many, "expert=8@net,fsdp=8@node");
	double fsdp_many = step(h, many, "fsdp=64");
	char mesh[SHS_SEARCH_TEXT];

	fprintf(stderr, "\n  16 sequences: expert=8,fsdp=8 %.5f s, fsdp=64 %.5f s; 512: %.5f s, "
		"%.5f s", ep_few, fsdp_few, ep_many, fsdp_many);
	CU_ASSERT_TRUE(ep_few < fsdp_few);
	CU_ASSERT_TRUE(ep_many > fsdp_many);
#if !SHS_TEST_SANITIZED /* two searches of a 64-device cluster: the normal build */
	CU_ASSERT_TRUE(searched_expert_axis(h, few, mesh, sizeof(mesh)));
	fprintf(stderr, "; searched: %s", mesh);
	CU_ASSERT_FALSE(searched_expert_axis(h, many, mesh, sizeof(mesh)));
	fprintf(stderr, ", %s", mesh);
#else
	(void)searched_expert_axis;
	(void)mesh;
#endif
	shs_module_free(few);
	shs_module_free(many);
	shs_host_free(h);
}

/* DeepSeekMoE 16B's preset: the parameters counted by hand (64 routed experts of 1408, 2 shared
 * ones as one dense MLP of 2816, the router, attention, norms, embedding and head). */
static void test_deepseek_preset(void)
{
	shs_gen_config c = shs_test_preset("deepseek-moe-16b");
	shs_module *m = NULL;
	shs_gen_stats st;
	shs_err e = { 0 };
	double D = 2048, V = 102400, L = 28, E = 64, F = 1408, S = 2 * F, A = 16 * 128;
	double layer = 4 * D * A + 2 * D + D * E + 3 * E * D * F + 3 * D * S;
	double want = V * D + L * layer + D + D * V;

	CU_ASSERT_EQUAL(c.experts, 64);
	CU_ASSERT_EQUAL(c.top_k, 6);
	CU_ASSERT_EQUAL(c.shared_experts, 2);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "layers", "2", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "seq", "256", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "batch", "4", &e), &e);
	SHS_ASSERT_OK(shs_gen_module(&c, &m, &st, &e), &e);
	want = V * D + 2 * layer + D + D * V;
	fprintf(stderr, "\n  deepseek-moe-16b, 2 layers: %.0f parameters (by hand %.0f)",
		(double)st.params, want);
	CU_ASSERT_DOUBLE_EQUAL((double)st.params, want, 0.5);
	/* shared experts need routed ones */
	c = shs_test_preset("llama3-8b");
	SHS_ASSERT_OK(shs_gen_config_set(&c, "shared_experts", "2", &e), &e);
	shs_module_free(m);
	m = NULL;
	CU_ASSERT_EQUAL(shs_gen_module(&c, &m, NULL, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "shared_experts needs experts"));
	CU_ASSERT_PTR_NULL(m);
}

CU_TestInfo experts_tests[] = {
	{ "expert parallelism wins with few tokens, loses with many (cost and search)",
	  test_expert_parallelism },
	{ "deepseek-moe-16b: fine-grained and shared experts, parameters by hand",
	  test_deepseek_preset },
	CU_TEST_INFO_NULL,
};
