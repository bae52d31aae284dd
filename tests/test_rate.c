/* Tests of achievable rates (plugin/cost/evaluate_rate.c, hardware_rates.c): matmuls at the
 * catalog's measured fraction of peak and in whole tiles; collectives at the links' measured
 * fraction of line rate; gathers into matmuls overlapped only where the runtime does it. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "evaluate_internal.h"
#include "host.h"
#include "test_util.h"

/* The FLOPs' seconds (hbm false) or the HBM seconds (hbm true) of a replicated module on one
 * chip of hw from catalog cat. */
static double seconds(const shs_hw_catalog *cat, const char *hw, const char *text, bool hbm)
{
	shs_cluster_spec one = { .hardware = hw, .devices = 1, .slices = 1, .mesh = "data=1" };
	shs_module *m = shs_test_parse(text);
	shs_host *h = shs_test_host();
	shs_cluster cluster;
	shs_plan *p = NULL;
	shs_eval ev = { 0 };
	double t;

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	if (strcmp(hw, "v5p") == 0) {
		one.devices = 0;
		one.topology = "1x1x1";
	}
	shs_test_plan_evaluate(h, cat, &one, m, "dp", NULL, &cluster, &p, &ev);
	t = hbm ? ev.hbm_s : ev.flops_s;
	shs_eval_free(&ev);
	shs_plan_free(p);
	shs_host_free(h);
	shs_module_free(m);
	return t;
}

static double flop_seconds(const shs_hw_catalog *cat, const char *hw, const char *text)
{
	return seconds(cat, hw, text, false);
}

/* A module of one [M, K] x [K, N] bf16 matmul. */
static const char *matmul(char *buf, size_t cap, int m, int k, int n)
{
	snprintf(buf, cap,
		 "HloModule m\nENTRY e {\n  a = bf16[%d,%d] parameter(0)\n"
		 "  w = bf16[%d,%d] parameter(1)\n"
		 "  ROOT d = bf16[%d,%d] dot(a, w), lhs_contracting_dims={1}, "
		 "rhs_contracting_dims={0}\n}\n", m, k, k, n, m, n);
	return buf;
}

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-6 * fabs(b);
}

/* An A100 matmul of aligned shape runs at the measured 85.9 % of peak; one column past a tile
 * costs a whole tile more. */
static void test_matmul_rate(void)
{
	shs_hw_catalog cat, book;
	char text[512];
	double peak_s, a100_s, ragged_s;

	shs_hw_catalog_builtin(&cat);
	shs_test_book_catalog(&book);
	peak_s = flop_seconds(&book, "a100", matmul(text, sizeof(text), 4096, 4096, 4096));
	a100_s = flop_seconds(&cat, "a100", matmul(text, sizeof(text), 4096, 4096, 4096));
	CU_ASSERT_TRUE(near(peak_s, 2.0 * 4096 * 4096 * 4096 / 3.1e14));
	CU_ASSERT_TRUE(near(a100_s, peak_s * 312 / 267.9));
	/* N = 4097 on a GPU: 33 tiles of 128 where 32.008 are used */
	ragged_s = flop_seconds(&cat, "a100", matmul(text, sizeof(text), 4096, 4096, 4097));
	CU_ASSERT_TRUE(near(ragged_s, a100_s * 33.0 * 128 / 4096));
	/* on a TPU the contracting dim quantizes: K = 129 costs two MXU tiles of 128 */
	CU_ASSERT_TRUE(near(flop_seconds(&cat, "v5p", matmul(text, sizeof(text), 4096, 129, 4096)),
			    flop_seconds(&cat, "v5p", matmul(text, sizeof(text), 4096, 256, 4096))));
}

/* NVLink collectives at 208 of 300 GB/s on A100 (nccl-tests), InfiniBand at 96 %. */
static void test_link_rate(void)
{
	shs_hw_catalog cat, book;
	shs_cluster_spec spec = { .hardware = "a100", .devices = 16, .slices = 1,
				  .mesh = "data=2@net,tensor=8@node" };
	shs_cluster c, b;
	shs_err e = { 0 };
	double v = 1e9;

	shs_hw_catalog_builtin(&cat);
	shs_test_book_catalog(&book);
	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &c, &e), &e);
	SHS_ASSERT_OK(shs_cluster_make(&book, &spec, &b, &e), &e);
	CU_ASSERT_TRUE(near(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 1u << 1, v),
			    shs_coll_time(&b, SHS_PCOLL_ALL_GATHER, 1u << 1, v) * 300 / 208));
	CU_ASSERT_TRUE(near(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 1u << 0, v),
			    shs_coll_time(&b, SHS_PCOLL_ALL_GATHER, 1u << 0, v) / 0.96));
}

/* An elementwise kernel streams its bytes at the measured rate: STREAM triad's 1759 GB/s on
 * an A100, TPU7x's measured copy fraction on a v5p. */
static void test_hbm_rate(void)
{
	static const char text[] =
		"HloModule m\nENTRY e {\n  a = f32[1048576] parameter(0)\n"
		"  ROOT e = f32[1048576] exponential(a)\n}\n";
	shs_hw_catalog cat, book;
	double bytes = 2.0 * 4 * 1048576;

	shs_hw_catalog_builtin(&cat);
	shs_test_book_catalog(&book);
	CU_ASSERT_TRUE(near(seconds(&book, "a100", text, true), bytes / 2.0e12));
	CU_ASSERT_TRUE(near(seconds(&cat, "a100", text, true), bytes / 1759e9));
	CU_ASSERT_TRUE(near(seconds(&cat, "v5p", text, true), bytes / (2.8e12 * 6421 / 7400)));
}

/* A [B, M, K] x [B, K, N] bf16 matmul batched over B. */
static const char *batched(char *buf, size_t cap, int b, int m, int k, int n)
{
	snprintf(buf, cap,
		 "HloModule m\nENTRY e {\n  q = bf16[%d,%d,%d] parameter(0)\n"
		 "  k = bf16[%d,%d,%d] parameter(1)\n"
		 "  ROOT s = bf16[%d,%d,%d] dot(q, k), lhs_batch_dims={0}, "
		 "lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n}\n", b, m,
		 k, b, k, n, b, m, n);
	return buf;
}

/* A thin batched matmul (attention's scores: K = head_dim 64, one tile or less) moves its bytes
 * at the rate measured for such kernels on GPUs, 874 of the A100's 2000 GB/s; a batched one
 * with every dim past a tile, and an unbatched thin one, stream at hbm_eff; a TPU, with no such
 * measurement, streams them all; a catalog entry whose bmm_hbm_eff is 0 streams them too. */
static void test_bmm_rate(void)
{
	shs_hw_catalog cat, book, plain;
	char text[512];
	double book_s, thin_s;

	shs_hw_catalog_builtin(&cat);
	shs_test_book_catalog(&book);
	plain = cat;
	for (uint32_t k = 0; k < plain.n; k++)
		plain.hw[k].bmm_hbm_eff = 0;
	batched(text, sizeof(text), 64, 2048, 64, 2048);
	book_s = seconds(&book, "a100", text, true);
	thin_s = seconds(&cat, "a100", text, true);
	CU_ASSERT_TRUE(near(thin_s, book_s * 2000 / 874));
	CU_ASSERT_TRUE(near(seconds(&cat, "h100", text, true),
			    seconds(&book, "h100", text, true) * 3400 / 1722));
	CU_ASSERT_TRUE(near(seconds(&plain, "a100", text, true), book_s * 2000 / 1759));
	CU_ASSERT_TRUE(near(seconds(&cat, "v5p", text, true),
			    seconds(&book, "v5p", text, true) * 7400 / 6421));
	/* head_dim 128 is one tile: thin; 129 is not */
	batched(text, sizeof(text), 64, 2048, 128, 2048);
	CU_ASSERT_TRUE(near(seconds(&cat, "a100", text, true),
			    seconds(&book, "a100", text, true) * 2000 / 874));
	batched(text, sizeof(text), 64, 2048, 129, 2048);
	CU_ASSERT_TRUE(near(seconds(&cat, "a100", text, true),
			    seconds(&book, "a100", text, true) * 2000 / 1759));
	matmul(text, sizeof(text), 2048, 64, 2048);
	CU_ASSERT_TRUE(near(seconds(&cat, "a100", text, true),
			    seconds(&book, "a100", text, true) * 2000 / 1759));
}

static const shs_hardware *entry(const shs_hw_catalog *cat, const char *name)
{
	for (uint32_t k = 0; k < cat->n; k++)
		if (!strcmp(cat->hw[k].name, name))
			return &cat->hw[k];
	CU_FAIL_FATAL("no such catalog entry");
	return NULL;
}

/* A matmul's reduce-scatter runs under it where the runtime decomposes it (by default only
 * from XLA's 100000 MiB windowed-einsum threshold, on TPUs and GPUs alike; a hardware file's
 * windowed_einsum_bytes of 0 decomposes every size), whatever its candidate's "cm" mark
 * says; a ring's sends run beside their kernel everywhere. */
static void test_matmul_collective_overlap(void)
{
	shs_hw_catalog cat;
	shs_coll cm = { .kind = SHS_PCOLL_REDUCE_SCATTER, .axes_mask = 1, .bytes = 1e9,
			.overlappable = true };
	shs_coll plain = cm, ring = { .kind = SHS_PCOLL_PERMUTE, .axes_mask = 1, .bytes = 1e9,
				     .overlappable = true };
	const shs_hardware *h100, *v5p;
	shs_hardware decomposing;

	plain.overlappable = false;
	shs_hw_catalog_builtin(&cat);
	h100 = entry(&cat, "h100");
	v5p = entry(&cat, "v5p");
	CU_ASSERT_FALSE(shs__own_overlapped(h100, true, &cm, 1e9));
	CU_ASSERT_TRUE(shs__own_overlapped(h100, true, &cm, 2e14));
	CU_ASSERT_FALSE(shs__own_overlapped(v5p, true, &cm, 1e9));
	CU_ASSERT_TRUE(shs__own_overlapped(v5p, true, &cm, 2e14));
	decomposing = *v5p;
	decomposing.windowed_einsum_bytes = 0;
	CU_ASSERT_TRUE(shs__own_overlapped(&decomposing, true, &cm, 1e9));
	CU_ASSERT_TRUE(shs__own_overlapped(&decomposing, true, &plain, 1e9));
	CU_ASSERT_TRUE(shs__own_overlapped(h100, false, &ring, 1e9));
	CU_ASSERT_FALSE(shs__own_overlapped(v5p, false, &plain, 1e9));
}

CU_TestInfo rate_tests[] = {
	{ "matmuls at the measured fraction of peak, in whole tiles", test_matmul_rate },
	{ "collectives at the measured fraction of line rate", test_link_rate },
	{ "elementwise kernels at the measured HBM rate", test_hbm_rate },
	{ "thin batched matmuls at the rate measured for attention's", test_bmm_rate },
	{ "a matmul's own collective under it only where the runtime decomposes it",
	  test_matmul_collective_overlap },
	CU_TEST_INFO_NULL,
};
