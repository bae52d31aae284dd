/* Tests of the fusion rules (plugin/cost/evaluate_fusion.c): the HBM bytes of small modules
 * on one chip, against the bytes each rule says XLA moves. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>

#include "evaluate.h"
#include "host.h"
#include "test_util.h"

enum { N = 1 << 20 }; /* elements of the vectors below */

/* The evaluation of module text on one H100, everything replicated: its HBM bytes, and its
 * peak memory into *peak (may be NULL). */
static double evaluated(const char *text, shs_fusion fusion, double *peak);

/* The HBM bytes the evaluator charges module text on one H100, everything replicated, fused
 * as XLA fuses (fusion) or not at all. */
static double hbm_bytes(const char *text, bool fusion)
{
	return evaluated(text, fusion ? SHS_FUSION_XLA : SHS_FUSION_NONE, NULL);
}

static double evaluated(const char *text, shs_fusion fusion, double *peak)
{
	static const shs_cluster_spec one = { .hardware = "h100", .devices = 1, .slices = 1,
					      .mesh = "data=1" };
	shs_module *m = shs_test_parse(text);
	shs_host *h = shs_test_host();
	shs_eval_options o = { .fusion = fusion };
	shs_hw_catalog cat;
	shs_cluster cluster;
	shs_plan *p = NULL;
	shs_eval ev = { 0 };
	double bytes;

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &one, m, "dp", &o, &cluster, &p, &ev);
	bytes = ev.hbm_s * shs_hw_hbm_rate(&cluster.hw);
	if (peak)
		*peak = ev.memory_bytes;
	shs_eval_free(&ev);
	shs_plan_free(p);
	shs_host_free(h);
	shs_module_free(m);
	return bytes;
}

static void assert_bytes(double got, double want)
{
	CU_ASSERT_TRUE(fabs(got - want) <= 0.01 * want);
	if (fabs(got - want) > 0.01 * want)
		fprintf(stderr, "\nHBM bytes %.6g, the rules say %.6g\n", got, want);
}

/* exp(x) read by a reduction (its sum) and by a divide (x / sum). */
static const char softmax_text[] =
	"HloModule m\n"
	"add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
	" ROOT s = f32[] add(a, b) }\n"
	"ENTRY e {\n"
	"  x = f32[1048576] parameter(0)\n"
	"  ex = f32[1048576] exponential(x)\n"
	"  z = f32[] constant(0)\n"
	"  sum = f32[] reduce(ex, z), dimensions={0}, to_apply=add\n"
	"  b = f32[1048576] broadcast(sum), dimensions={}\n"
	"  ROOT y = f32[1048576] divide(ex, b)\n"
	"}\n";

/* F1: exp(x) read by a reduction and by a divide is computed in both: x is read twice, the
 * exponential never written; only the result (and the scalar sum) reach HBM. */
static void test_duplicated_producer(void)
{
	double fused = hbm_bytes(softmax_text, true), plain = hbm_bytes(softmax_text, false);

	/* the reduction reads x, the divide reads x and writes y */
	assert_bytes(fused, 3.0 * 4 * N);
	CU_ASSERT_TRUE(fused < plain);
}

/* F1 in memory: a value computed inside its consumers owns no buffer (XLA allocates none for
 * a fusion's intermediates): the step above holds x and y, not the exponential between them;
 * without fusion it holds all three at the divide. */
static void test_fused_value_has_no_buffer(void)
{
	double fused = 0, plain = 0;

	evaluated(softmax_text, SHS_FUSION_XLA, &fused);
	evaluated(softmax_text, SHS_FUSION_NONE, &plain);
	CU_ASSERT_TRUE(fabs(fused - 2.0 * 4 * N) < 64);
	CU_ASSERT_TRUE(plain >= 4.0 * 4 * N - 64); /* x, ex, b and y at the divide */
}

/* F2: a matmul whose only user is a convert writes the converted result, not its own. */
static void test_matmul_epilogue(void)
{
	static const char text[] =
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = bf16[1024,1024] parameter(0)\n"
		"  w = bf16[1024,1024] parameter(1)\n"
		"  d = f32[1024,1024] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"  c = bf16[1024,1024] convert(d)\n"
		"  ROOT t = (bf16[1024,1024]) tuple(c)\n"
		"}\n";

	/* reads a and w, writes c: three bf16 matrices */
	assert_bytes(hbm_bytes(text, true), 3.0 * 2 * N);
}

/* F4: a reshape of a materialised value that is itself materialised is a bitcast; F3: a
 * transpose and a convert feeding a matmul are read by the matmul directly. */
static void test_views_and_prologues(void)
{
	static const char text[] =
		"HloModule m\n"
		"ENTRY e {\n"
		"  a = f32[1024,1024] parameter(0)\n"
		"  r = f32[1048576] reshape(a)\n"
		"  w = bf16[1024,1024] parameter(1)\n"
		"  ab = bf16[1024,1024] convert(a)\n"
		"  wt = bf16[1024,1024] transpose(w), dimensions={1,0}\n"
		"  d = bf16[1024,1024] dot(ab, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"  ROOT t = (f32[1048576], bf16[1024,1024]) tuple(r, d)\n"
		"}\n";

	/* the fusion of the dot reads a (f32) and w (bf16) and writes d (bf16); r moves nothing */
	assert_bytes(hbm_bytes(text, true), 4.0 * N + 2.0 * N + 2.0 * N);
}

/* F5: Adam's update of one tensor: the new moments are step outputs and also feed the new
 * weight; they are extra outputs of that fusion, written once and not read back. */
static void test_multi_output(void)
{
	static const char text[] =
		"HloModule m\n"
		"ENTRY e {\n"
		"  g = f32[1048576] parameter(0)\n"
		"  w = f32[1048576] parameter(1)\n"
		"  m = f32[1048576] parameter(2)\n"
		"  v = f32[1048576] parameter(3)\n"
		"  c = f32[] constant(0.9)\n"
		"  b = f32[1048576] broadcast(c), dimensions={}\n"
		"  mb = f32[1048576] multiply(m, b)\n"
		"  gb = f32[1048576] multiply(g, b)\n"
		"  m2 = f32[1048576] add(mb, gb)\n"
		"  gg = f32[1048576] multiply(g, g)\n"
		"  vb = f32[1048576] multiply(v, b)\n"
		"  v2 = f32[1048576] add(vb, gg)\n"
		"  r = f32[1048576] rsqrt(v2)\n"
		"  u = f32[1048576] multiply(m2, r)\n"
		"  w2 = f32[1048576] subtract(w, u)\n"
		"  ROOT t = (f32[1048576], f32[1048576], f32[1048576]) tuple(w2, m2, v2)\n"
		"}\n";
	double fused = hbm_bytes(text, true), plain = hbm_bytes(text, false);

	/* the new moments written once and never read back (without F5: read again by the
	 * weight's fusion, 2 more); reads: m and g into m2's fusion, v and g twice into v2's
	 * (multiply(g, g) reads its operand per use), w into w2's; writes: m2, v2, w2. One XLA
	 * fusion reads g once (7): F1 still counts a producer's reads per consumer and operand */
	assert_bytes(fused, 9.0 * 4 * N);
	CU_ASSERT_TRUE(fused < plain);
}

/* F6: a loop body writes a called layer's converted result into its stack: the convert's
 * fusion writes the slot, and the update costs nothing of its own. */
static void test_update_written_in_place(void)
{
	static const char text[] =
		"HloModule m\n"
		"layer { x = bf16[1048576] parameter(0)\n"
		" c = f32[1048576] convert(x)\n"
		" ROOT t = (f32[1048576]) tuple(c) }\n"
		"ENTRY e {\n"
		"  x = bf16[1048576] parameter(0)\n"
		"  s = f32[4,1048576] parameter(1)\n"
		"  i = s32[] parameter(2)\n"
		"  k = (f32[1048576]) call(x), to_apply=layer\n"
		"  g = f32[1048576] get-tuple-element(k), index=0\n"
		"  r = f32[1,1048576] reshape(g)\n"
		"  z = s32[] constant(0)\n"
		"  ROOT d = f32[4,1048576] dynamic-update-slice(s, r, i, z)\n"
		"}\n";

	/* the convert reads x (2 bytes) and writes the slot (4 bytes) */
	assert_bytes(hbm_bytes(text, true), 6.0 * N);
}

/* F1 in memory, the other half: what a fused value reads lives until the fusion it is computed
 * in runs. Here a sorted copy of x is read only by a negation that fuses into the final add,
 * which runs after a second sort: both sorts' buffers, x and the result are live there (4
 * buffers; 3 if the first sort died where the negation stands in program order). */
static void test_fused_operand_lives_until_its_consumer(void)
{
	static const char text[] =
		"HloModule m\n"
		"lt { p = f32[] parameter(0)\n q = f32[] parameter(1)\n"
		" ROOT r = pred[] compare(p, q), direction=LT }\n"
		"ENTRY e {\n"
		"  x = f32[1048576] parameter(0)\n"
		"  a = f32[1048576] sort(x), dimensions={0}, to_apply=lt\n"
		"  f = f32[1048576] negate(a)\n"
		"  big = f32[1048576] sort(x), dimensions={0}, to_apply=lt\n"
		"  ROOT c = f32[1048576] add(f, big)\n"
		"}\n";
	double peak = 0;

	evaluated(text, SHS_FUSION_XLA, &peak);
	CU_ASSERT_TRUE(fabs(peak - 4.0 * 4 * N) < 64);
}

/* Kernels (an eager framework): a norm's two steps are one kernel, the activation of another
 * operation is the next, the matmul reads its operands and writes its result, and the
 * operation after it reads that result again: every value between two operations is written
 * once and read once. */
static void test_eager_kernels(void)
{
	static const char text[] =
		"HloModule m\n"
		"ENTRY e {\n"
		"  x = f32[1024,1024] parameter(0)\n"
		"  w = f32[1024,1024] parameter(1)\n"
		"  n1 = f32[1024,1024] negate(x), metadata={op_name=\"m/norm/negate\"}\n"
		"  n2 = f32[1024,1024] exponential(n1), metadata={op_name=\"m/norm/exp\"}\n"
		"  a = f32[1024,1024] tanh(n2), metadata={op_name=\"m/act/tanh\"}\n"
		"  d = f32[1024,1024] dot(a, w), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}, metadata={op_name=\"m/proj/dot\"}\n"
		"  ROOT r = f32[1024,1024] negate(d), metadata={op_name=\"m/out/negate\"}\n"
		"}\n";
	double kernels = evaluated(text, SHS_FUSION_KERNELS, NULL);
	double xla = evaluated(text, SHS_FUSION_XLA, NULL);
	double none = evaluated(text, SHS_FUSION_NONE, NULL);

	/* norm: x in, n2 out; act: n2 in, a out; dot: a and w in, d out; negate: d in, r out */
	assert_bytes(kernels, 9.0 * 4 * N);
	CU_ASSERT_TRUE(xla < kernels);
	CU_ASSERT_TRUE(kernels < none);
}

CU_TestInfo fusion_tests[] = {
	{ "F1: a producer with several fusible users is computed in each", test_duplicated_producer },
	{ "F1: a value computed in its consumers owns no buffer", test_fused_value_has_no_buffer },
	{ "F1: what a fused value reads lives until its consumer runs",
	  test_fused_operand_lives_until_its_consumer },
	{ "F2: a matmul writes its elementwise epilogue's result", test_matmul_epilogue },
	{ "F3, F4: prologues fuse into matmuls; a reshape is a bitcast", test_views_and_prologues },
	{ "F5: a step output taken by fusions too is their extra output", test_multi_output },
	{ "kernels: fused within an operation, matmuls apart", test_eager_kernels },
	{ "F6: a called layer's result is written into its stack's slot",
	  test_update_written_in_place },
	CU_TEST_INFO_NULL,
};
