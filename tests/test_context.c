/* Context parallelism: ring attention at 32k tokens, its K/V transfers and their overlap as
 * computed by hand; activations split over the context axis. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "search.h"
#include "test_util.h"

enum { CP = 8 };

/* got within rel of want (relative). */
#define NEAR_REL(got, want, rel) CU_ASSERT_TRUE(fabs((got) - (want)) <= (rel) * fabs(want))

/* LLaMA-3 8B's attention (32 query heads, 8 KV heads of 128) at 32768 tokens, one layer,
 * cuDNN's flash kernel. */
static const double HEADS = 32, KV_HEADS = 8, HEAD_DIM = 128, SEQ = 32768, BF16 = 2;

static shs_module *long_context(const char *batch)
{
	const char *const set[] = { "layers", "1", "seq", "32768", "batch", batch,
				    "attention_kernel", "cudnn", NULL };

	return shs_test_generate("llama3-8b", set);
}

/* The flash-attention call the site is at: forward or backward (false: not one). */
static bool flash_site(const shs_module *m, const shs_eval_coll *s, bool *backward)
{
	const shs_instr *in = m->comps[s->comp]->instrs[s->instr];
	const char *t = in->custom_call_target;

	if (in->op != SHS_OP_CUSTOM_CALL || !t || strncmp(t, "__cudnn$fmhaSoftmax", 19))
		return false;
	*backward = strstr(t, "Backward") != NULL;
	return true;
}

/* What the evaluation says of the ring: the forward's and the backward's overlapped permutes
 * and the backward's last (dK, dV home) one. */
typedef struct ring_sites {
	const shs_eval_coll *fwd, *bwd, *home;
	uint32_t n_fwd, n_bwd;
} ring_sites_t;

static ring_sites_t find_ring(const shs_module *m, const shs_eval *ev)
{
	ring_sites_t r = { 0 };
	bool backward;

	for (uint32_t k = 0; k < ev->n_colls; k++) {
		const shs_eval_coll *s = &ev->colls[k];
		if (s->kind != SHS_PCOLL_PERMUTE || !flash_site(m, s, &backward))
			continue;
		if (!backward) {
			r.fwd = s;
			r.n_fwd++;
		} else if (s->overlapped) {
			r.bwd = s;
			r.n_bwd++;
		} else {
			r.home = s;
		}
	}
	return r;
}

/* Evaluates plan dp of m on spec; checks the ring's sends against the hand's count: each of the
 * CP - 1 steps sends the device's K and V block of batch_local sequences; the backward also
 * the dK and dV sums, and those once more home. Returns the forward's exposure by hand:
 * (CP - 1) max(0, t_kv - t_block), t_block one of the CP blocks of the kernel's FLOPs. */
static void check_ring(const shs_cluster_spec *spec, const char *batch, double batch_local,
		       double *exposed, double *by_hand, double *t_kv, double *t_block)
{
	shs_host *h = shs_test_host();
	shs_module *m = long_context(batch);
	shs_hw_catalog cat;
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev;
	double kv = 2 * batch_local * KV_HEADS * (SEQ / CP) * HEAD_DIM * BF16; /* K + V block */
	/* FlashAttention-2's forward, causal: 4 B N T^2 H / 2, a 1/CP share per device */
	double flops = 4 * batch_local * HEADS * SEQ * SEQ * HEAD_DIM * 0.5 / CP;
	ring_sites_t r;

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, spec, m, "dp", NULL, &c, &p, &ev);
	r = find_ring(m, &ev);
	CU_ASSERT_EQUAL(r.n_fwd, 1);
	CU_ASSERT_EQUAL(r.n_bwd, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.fwd);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.bwd);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.home);
	*t_kv = shs_coll_time(&c, SHS_PCOLL_PERMUTE, r.fwd->axes_mask, kv);
	*t_block = flops / c.hw.flops[SHS_HW_BF16] / CP;
	NEAR_REL(r.fwd->bytes, (CP - 1) * kv, 1e-9);
	NEAR_REL(r.fwd->time_s, (CP - 1) * *t_kv, 1e-9);
	/* the backward: K, V, dK, dV (bf16, as K and V) each step; dK, dV once more */
	NEAR_REL(r.bwd->bytes, (CP - 1) * 2 * kv, 1e-9);
	NEAR_REL(r.home->bytes, kv, 1e-9);
	*exposed = r.fwd->exposed_s;
	*by_hand = (CP - 1) * fmax(0, *t_kv - *t_block);
	shs_eval_free(&ev);
	shs_plan_free(p);
	shs_module_free(m);
	shs_host_free(h);
}

/* Inside a node (NVLink) a K/V block moves faster than the kernel works through one: the ring
 * hides every send. */
static void test_ring_hidden_on_nvlink(void)
{
	shs_cluster_spec spec = { .hardware = "h100", .devices = CP, .mesh = "context=8" };
	double exposed, by_hand, t_kv, t_block;

	check_ring(&spec, "1", 1, &exposed, &by_hand, &t_kv, &t_block);
	fprintf(stderr, "\n  NVLink: t_kv %.3g s, t_block %.3g s, exposed %.3g s (by hand %.3g s)",
		t_kv, t_block, exposed, by_hand);
	CU_ASSERT_TRUE(t_kv < t_block);
	CU_ASSERT_DOUBLE_EQUAL(exposed, 0, 1e-12);
}

/* Across nodes (InfiniBand) with 8 sequences per device the sends take longer than the blocks:
 * each of the 7 steps waits t_kv - t_block. */
static void test_ring_exposed_across_nodes(void)
{
	shs_cluster_spec spec = { .hardware = "h100", .devices = 64,
				  .mesh = "context=8@net,data=8@node" };
	double exposed, by_hand, t_kv, t_block;

	check_ring(&spec, "64", 8, &exposed, &by_hand, &t_kv, &t_block);
	fprintf(stderr, "\n  InfiniBand: t_kv %.3g s, t_block %.3g s, exposed %.3g s (by hand %.3g s)",
		t_kv, t_block, exposed, by_hand);
	CU_ASSERT_TRUE(t_kv > t_block);
	NEAR_REL(exposed, by_hand, 0.01);
}

/* 8 sequences on 8 devices, split over the sequence (context=8) or over the batch (data=8):
 * each device holds 32768 tokens either way and every saved tensor is per token (flash
 * attention keeps no [T, T] scores), so the peak memory is the same; one device with the 8
 * sequences holds 8 times the activations. */
static void test_context_splits_activations(void)
{
	static const char *const meshes[] = { "context=8", "data=8", "data=1" };
	shs_host *h = shs_test_host();
	shs_module *m = long_context("8");
	shs_hw_catalog cat;
	double act[3], state = 0;

	shs_hw_catalog_builtin(&cat);
	for (int k = 0; k < 3; k++) {
		shs_cluster_spec spec = { .hardware = "h100", .devices = k < 2 ? CP : 1,
					  .mesh = meshes[k] };
		shs_cluster c;
		shs_plan *p = NULL;
		shs_eval ev;

		shs_test_plan_evaluate(h, &cat, &spec, m, "dp", NULL, &c, &p, &ev);
		act[k] = ev.memory_bytes - ev.state_bytes;
		if (k == 0)
			state = ev.state_bytes;
		else
			NEAR_REL(ev.state_bytes, state, 1e-3); /* the token batch aside */
		shs_eval_free(&ev);
		shs_plan_free(p);
	}
	fprintf(stderr, "\n  peak less state: context=8 %.3f GiB, data=8 %.3f GiB, one device "
		"%.3f GiB", act[0] / (1 << 30), act[1] / (1 << 30), act[2] / (1 << 30));
	NEAR_REL(act[0], act[1], 0.05);
	CU_ASSERT_TRUE(act[2] > 6 * act[0]);
	shs_module_free(m);
	shs_host_free(h);
}

/* A long-context job: LLaMA-3 8B (4 layers) with 8 sequences of 32k tokens on 128 H100s (16
 * nodes). The batch splits only 8 ways and tensor parallelism stays inside a node: the search
 * takes a context axis for the rest (its best plan without one, the batch padded or tensor
 * across nodes, is not among the runners-up) and runs the attention kernels as rings. */
static void test_search_takes_context(void)
{
	const char *const set[] = { "layers", "4", "scan", "true", "seq", "32768", "batch", "8",
				    "attention_kernel", "cudnn", NULL };
	shs_module *m = shs_test_generate("llama3-8b", set);
	shs_host *h = shs_test_host();
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "h100", .devices = 128 };
	shs_search_options o = { .threads = 2 };
	shs_search_result r;
	shs_err e = { 0 };
	uint32_t rings = 0, kernels = 0;

	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &o, &r, &e), &e);
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const char *l = r.plan->d[c][i].label;
			if (m->comps[c]->instrs[i]->op != SHS_OP_CUSTOM_CALL)
				continue;
			kernels++;
			rings += !strncmp(l, "flash-ring ", 11);
		}
	fprintf(stderr, "\n  searched: %s, %.4f s, %u of %u attention kernels as rings",
		r.best.mesh, r.best.step_time_s, rings, kernels);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.best.mesh, "context="));
	CU_ASSERT_TRUE(r.best.fits);
	SHS_ASSERT_INT_EQ(kernels, 2);
	SHS_ASSERT_INT_EQ(rings, kernels);
	shs_search_result_free(&r);
	shs_module_free(m);
	shs_host_free(h);
}

CU_TestInfo context_tests[] = {
	{ "ring attention inside a node: every K/V send hidden", test_ring_hidden_on_nvlink },
	{ "ring attention across nodes: (cp - 1)(t_kv - t_block) exposed",
	  test_ring_exposed_across_nodes },
	{ "context parallelism: activations split as the batch splits them",
	  test_context_splits_activations },
	{ "the search takes a context axis and ring attention for 8 sequences of 32k on 128 GPUs",
	  test_search_takes_context },
	CU_TEST_INFO_NULL,
};
