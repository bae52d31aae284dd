/* The remat policy offload: saved activations in host memory instead of recomputed; the bytes,
 * the transfer time and its exposure as computed by hand, the choice against full
 * recomputation, the host's memory, and hardware without a host link. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

enum { BATCH = 65536, D_FF = 8192, LAYERS = 2 };

static const char *const mlp[] = { "layers", "2", "batch", "65536", "d_model", "2048",
				   "d_ff", "8192", NULL };
/* the book's sizes (d_model 8192, d_ff 32768): four times the compute per saved byte */
static const char *const wide[] = { "layers", "2", "batch", "65536", NULL };

/* mlp-only on one chip of hw (changed by edit when not NULL), data parallel, evaluated with
 * policy and stronger ones up to most; *used the policy it ended with. */
static shs_eval step(shs_host *h, const shs_module *m, const char *hw,
		     void (*edit)(shs_hardware *), shs_remat policy, shs_remat most,
		     shs_remat *used)
{
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = hw, .devices = 1, .mesh = "data=1" };
	shs_eval_options o = { .remat = policy };
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev, got;
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
	if (edit)
		edit((shs_hardware *)shs_hw_find(&cat, hw));
	shs_test_plan_evaluate(h, &cat, &spec, m, "dp", &o, &c, &p, &ev);
	shs_eval_free(&ev);
	SHS_ASSERT_OK(shs_evaluate_until_fits(m, p, &c, &o, most, &got, used, &e), &e);
	shs_plan_free(p);
	return got;
}

/* What offload moves is what full recomputation drops: each layer's MLP hidden activation
 * (bf16 [B, F]; the layer's input stays); it recomputes nothing, holds in HBM what full holds,
 * and waits for the link only where a third of the compute (out) or two thirds (back) do not
 * cover the transfer. */
static void test_hand(void)
{
	shs_host *h = shs_test_host();
	shs_module *m = shs_test_generate("mlp-only", mlp);
	shs_remat used;
	shs_eval none = step(h, m, "h100", NULL, SHS_REMAT_NONE, SHS_REMAT_NONE, &used);
	shs_eval off = step(h, m, "h100", NULL, SHS_REMAT_OFFLOAD, SHS_REMAT_OFFLOAD, &used);
	shs_eval full = step(h, m, "h100", NULL, SHS_REMAT_FULL, SHS_REMAT_FULL, &used);
	double bytes = (double)LAYERS * BATCH * D_FF * 2, t = bytes / 64e9;
	double fwd = none.compute_s / 3, bwd = 2 * none.compute_s / 3;
	double exposed = (t > fwd ? t - fwd : 0) + (t > bwd ? t - bwd : 0);

	fprintf(stderr, "\n  mlp-only on an H100: offload %.4g GiB, %.5f s each way, %.5f s exposed "
		"(hand %.5f); step %.5f s against %.5f (none) and %.5f (full)",
		off.offload_bytes / (1 << 30), off.offload_s, off.offload_exposed_s, exposed,
		off.step_time_s, none.step_time_s, full.step_time_s);
	CU_ASSERT_EQUAL(used, SHS_REMAT_FULL);
	CU_ASSERT_DOUBLE_EQUAL(off.offload_bytes, bytes, 1);
	CU_ASSERT_TRUE(fabs(off.offload_s / t - 1) < 1e-12);
	CU_ASSERT_TRUE(fabs(off.offload_exposed_s - exposed) < 1e-12);
	CU_ASSERT_TRUE(fabs(off.step_time_s - (none.step_time_s + exposed)) < 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(off.flops, none.flops, 1);
	CU_ASSERT_DOUBLE_EQUAL(off.memory_bytes, full.memory_bytes, 1);
	CU_ASSERT_TRUE(off.memory_bytes < none.memory_bytes);
	CU_ASSERT_DOUBLE_EQUAL(full.offload_bytes, 0, 0);
	shs_eval_free(&none);
	shs_eval_free(&off);
	shs_eval_free(&full);
	shs_module_free(m);
	shs_host_free(h);
}

static void slow_link(shs_hardware *hw)
{
	hw->host_bw = 1e8;
}

static void small_host(shs_hardware *hw)
{
	hw->host_mem_bytes = 1e8;
}

static void tiny_hbm(shs_hardware *hw)
{
	hw->hbm_bytes = 23e9; /* 27 GiB with every activation, 19 GiB without the hidden ones */
}

static void tiny_hbm_slow_link(shs_hardware *hw)
{
	tiny_hbm(hw);
	slow_link(hw);
}

static void tiny_hbm_small_host(shs_hardware *hw)
{
	tiny_hbm(hw);
	small_host(hw);
}

/* When saved activations must leave HBM (the book's mlp-only, 27 GiB against 23 GB), until-fits
 * takes offload where its transfers hide (8 GiB over PCIe at 64 GB/s, 0.13 s each way, under
 * 0.54 s of compute), full recomputation where they would not (a 100 MB/s link) or where the
 * host cannot hold them; hardware with no host link goes straight to recomputation, and asking
 * for offload there is an error. */
static void test_choice(void)
{
	shs_host *h = shs_test_host();
	shs_module *m = shs_test_generate("mlp-only", wide);
	shs_remat used = SHS_REMAT_NONE;
	shs_eval ev = step(h, m, "h100", tiny_hbm, SHS_REMAT_NONE, SHS_REMAT_FULL, &used);
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "7x", .devices = 1, .mesh = "data=1" };
	shs_eval_options o = { .remat = SHS_REMAT_OFFLOAD };
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval none;
	shs_err e = { 0 };

	CU_ASSERT_TRUE(ev.fits);
	CU_ASSERT_EQUAL(used, SHS_REMAT_OFFLOAD);
	shs_eval_free(&ev);
	ev = step(h, m, "h100", tiny_hbm_slow_link, SHS_REMAT_NONE, SHS_REMAT_FULL, &used);
	CU_ASSERT_TRUE(ev.fits);
	CU_ASSERT_EQUAL(used, SHS_REMAT_FULL);
	shs_eval_free(&ev);
	ev = step(h, m, "h100", tiny_hbm_small_host, SHS_REMAT_NONE, SHS_REMAT_FULL, &used);
	CU_ASSERT_TRUE(ev.fits);
	CU_ASSERT_EQUAL(used, SHS_REMAT_FULL);
	shs_eval_free(&ev);
	ev = step(h, m, "h100", small_host, SHS_REMAT_OFFLOAD, SHS_REMAT_OFFLOAD, &used);
	CU_ASSERT_FALSE(ev.fits); /* the host cannot hold them */
	shs_eval_free(&ev);
	/* TPU7x: no host link in the catalog */
	shs_hw_catalog_builtin(&cat);
	o.remat = SHS_REMAT_NONE;
	shs_test_plan_evaluate(h, &cat, &spec, m, "dp", &o, &c, &p, &none);
	o.remat = SHS_REMAT_OFFLOAD;
	CU_ASSERT_EQUAL(shs_evaluate(m, p, &c, &o, &ev, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no offload"));
	o.remat = SHS_REMAT_DOTS;
	SHS_ASSERT_OK(shs_evaluate_until_fits(m, p, &c, &o, SHS_REMAT_FULL, &ev, &used, &e), &e);
	CU_ASSERT_NOT_EQUAL(used, SHS_REMAT_OFFLOAD);
	shs_eval_free(&ev);
	shs_eval_free(&none);
	shs_plan_free(p);
	shs_module_free(m);
	shs_host_free(h);
}

CU_TestInfo offload_tests[] = {
	{ "offload: the bytes full drops, its transfers and exposure by hand", test_hand },
	{ "offload or full recomputation: the faster that fits; no host link, no offload",
	  test_choice },
	CU_TEST_INFO_NULL,
};
