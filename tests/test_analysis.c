/* Tests: while trip counts, dot FLOPs, parameter bytes and opcode histograms. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "weights.h"
#include "test_util.h"

static shs_module *load_shared(const char *name)
{
	shs_module *m = NULL;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_module_load_file(shs_test_hlo_path(name), SHS_FORMAT_AUTO, &m, &e), &e);
	return m;
}

/* The MHA block: two batched dots of 12 heads, 128 x 128 x 64 each way. */
static void mha_dot_flops(void)
{
	shs_module *m = load_shared("mha_block_1x12x128x64_bf16.hlo");
	uint32_t unknown = 99;
	double want = 2.0 * 12 * 128 * 128 * 64 /* q.k^T */ + 2.0 * 12 * 128 * 64 * 128 /* p.v */;

	CU_ASSERT_EQUAL(shs_comp_dot_flops(m, shs_module_entry(m), &unknown), want);
	SHS_ASSERT_INT_EQ(unknown, 0);
	SHS_ASSERT_INT_EQ(shs_entry_param_bytes(m), 3 * 12 * 128 * 64 * 2);
	shs_module_free(m);
}

/* The MaxText step: two scanned loops over 8 layers (forward and backward). */
static void maxtext_loops(void)
{
	shs_module *m = load_shared("nv_maxtext_1n1g_jit_train_step_before_optimization.hlo");
	const shs_computation *entry = shs_module_entry(m);
	uint64_t counts[SHS_OP_COUNT];
	int loops = 0;
	uint32_t unknown = 99;

	for (uint32_t j = 0; j < entry->n_instrs; j++) {
		int64_t trips = -1;

		if (entry->instrs[j]->op != SHS_OP_WHILE)
			continue;
		CU_ASSERT_TRUE(shs_while_trip_count(m, entry, entry->instrs[j], &trips));
		SHS_ASSERT_INT_EQ(trips, 8);
		loops++;
	}
	SHS_ASSERT_INT_EQ(loops, 2);
	CU_ASSERT_TRUE(shs_comp_dot_flops(m, entry, &unknown) > 0);
	SHS_ASSERT_INT_EQ(unknown, 0);
	SHS_ASSERT_INT_EQ(shs_opcode_histogram(m, counts), 1947);
	SHS_ASSERT_INT_EQ(counts[SHS_OP_WHILE], 2);
	shs_module_free(m);
}

/* Trip counts of hand-written loops: start, limit, step and direction all matter. */
static void counted_loops(void)
{
	static const struct {
		const char *init, *limit, *dir, *step_op, *step;
		long long want; /* -1: not a counted loop */
	} cases[] = {
		{ "0", "8", "LT", "add", "1", 8 },   { "0", "8", "LE", "add", "1", 9 },
		{ "2", "11", "LT", "add", "3", 3 },  { "10", "0", "GT", "subtract", "2", 5 },
		{ "5", "5", "LT", "add", "1", 0 },   { "0", "8", "LT", "subtract", "1", -1 },
		{ "0", "9", "NE", "add", "3", 3 },   { "0", "8", "NE", "add", "3", -1 },
		/* bounds at the ends of int64: exact where the count fits, else not counted,
		 * never an overflow (the sanitizer build runs these) */
		{ "-9223372036854775808", "9223372036854775807", "LT", "add", "1", -1 },
		{ "0", "9223372036854775807", "LE", "add", "1", -1 },
		{ "0", "-9223372036854775808", "GE", "subtract", "1", -1 },
		{ "0", "9223372036854775807", "LT", "add", "9223372036854775807", 1 },
		{ "-5", "9223372036854775807", "LT", "add", "4611686018427387904", 3 },
		{ "9223372036854775807", "-9223372036854775808", "GT", "subtract",
		  "-9223372036854775808", -1 },
		{ "9223372036854775807", "-9223372036854775808", "GT", "add", "-1", -1 },
		{ "9223372036854775807", "-1", "GT", "add", "-9223372036854775808", 1 },
		{ "-9223372036854775808", "9223372036854775807", "NE", "add", "1", -1 },
		{ "-9223372036854775807", "9223372036854775807", "NE", "add",
		  "9223372036854775807", 2 },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char text[2048];
		shs_module *m;
		const shs_computation *entry;
		int64_t trips = -1;
		bool known;

		snprintf(text, sizeof(text),
			 "HloModule loop\n\n"
			 "cond {\n  p = (s64[], f32[4]) parameter(0)\n  i = s64[] get-tuple-element(p), index=0\n"
			 "  n = s64[] constant(%s)\n  ROOT c = pred[] compare(i, n), direction=%s\n}\n\n"
			 "body {\n  p = (s64[], f32[4]) parameter(0)\n  i = s64[] get-tuple-element(p), index=0\n"
			 "  x = f32[4] get-tuple-element(p), index=1\n  one = s64[] constant(%s)\n"
			 "  j = s64[] %s(i, one)\n  y = f32[4] negate(x)\n  ROOT t = (s64[], f32[4]) tuple(j, y)\n}\n\n"
			 "ENTRY e {\n  a = f32[4] parameter(0)\n  z = s64[] constant(%s)\n"
			 "  t = (s64[], f32[4]) tuple(z, a)\n  ROOT w = (s64[], f32[4]) while(t), condition=cond, body=body\n}\n",
			 cases[k].limit, cases[k].dir, cases[k].step, cases[k].step_op, cases[k].init);
		m = shs_test_parse(text);
		entry = shs_module_entry(m);
		known = shs_while_trip_count(m, entry, entry->instrs[entry->root], &trips);
		if (known != (cases[k].want >= 0) || (known && trips != cases[k].want))
			fprintf(stderr, "\n  case %zu: known %d trips %lld, want %lld\n", k, known,
				(long long)trips, cases[k].want);
		CU_ASSERT_EQUAL(known, cases[k].want >= 0);
		if (known)
			SHS_ASSERT_INT_EQ(trips, cases[k].want);
		shs_module_free(m);
	}
}

/* A Keras-style step (a DLRM-like embedding and dense layer; the state named state[i][j], no
 * aliasing): its weights by use, an embedding table read by a gather and a kernel by a dot,
 * both written back; their moments written back but read only by their update; the data not
 * written back. */
static const char keras_step[] =
	"HloModule keras_dlrm_train_step\n"
	"\n"
	"%add (a: f32[], b: f32[]) -> f32[] {\n"
	"  %a = f32[] parameter(0)\n"
	"  %b = f32[] parameter(1)\n"
	"  ROOT %s = f32[] add(%a, %b)\n"
	"}\n"
	"\n"
	"ENTRY %train_step (p0: f32[1000,16], p1: f32[16,8], p2: f32[1000,16], p3: f32[16,8], ids: s64[32,1], y: f32[32,8]) -> (f32[1000,16], f32[16,8], f32[1000,16], f32[16,8], f32[]) {\n"
	"  %p0 = f32[1000,16] parameter(0), metadata={op_name=\"state[0][0]\"}\n"
	"  %p1 = f32[16,8] parameter(1), metadata={op_name=\"state[0][1]\"}\n"
	"  %p2 = f32[1000,16] parameter(2), metadata={op_name=\"state[1][0]\"}\n"
	"  %p3 = f32[16,8] parameter(3), metadata={op_name=\"state[1][1]\"}\n"
	"  %ids = s64[32,1] parameter(4), metadata={op_name=\"data[0]\"}\n"
	"  %y = f32[32,8] parameter(5), metadata={op_name=\"data[1]\"}\n"
	"  %emb = f32[32,16] gather(%p0, %ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,16}\n"
	"  %out = f32[32,8] dot(%emb, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  %err = f32[32,8] subtract(%out, %y)\n"
	"  %zero = f32[] constant(0)\n"
	"  %loss = f32[] reduce(%err, %zero), dimensions={0,1}, to_apply=%add\n"
	"  %g1 = f32[16,8] dot(%emb, %err), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
	"  %gl = f32[1000,16] broadcast(%loss), dimensions={}\n"
	"  %m0 = f32[1000,16] add(%p2, %gl)\n"
	"  %m1 = f32[16,8] add(%p3, %g1)\n"
	"  %n0 = f32[1000,16] subtract(%p0, %m0)\n"
	"  %n1 = f32[16,8] subtract(%p1, %m1)\n"
	"  ROOT %t = (f32[1000,16], f32[16,8], f32[1000,16], f32[16,8], f32[]) tuple(%n0, %n1, %m0, %m1, %loss)\n"
	"}\n";

static void roles_by_use(void)
{
	static const shs_param_role want[] = { SHS_PARAM_WEIGHT, SHS_PARAM_WEIGHT,
					       SHS_PARAM_OPT_STATE, SHS_PARAM_OPT_STATE,
					       SHS_PARAM_INPUT, SHS_PARAM_INPUT };
	shs_module *m = shs_test_parse(keras_step);
	const shs_computation *entry = shs_module_entry(m);
	shs_param_role *roles = shs_entry_param_roles(m);
	uint32_t seen = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(roles);
	for (uint32_t i = 0; i < entry->n_instrs; i++) {
		const shs_instr *in = entry->instrs[i];
		if (in->op == SHS_OP_PARAMETER) {
			SHS_ASSERT_INT_EQ(roles[i], want[in->parameter_number]);
			seen++;
		} else {
			SHS_ASSERT_INT_EQ(roles[i], SHS_PARAM_INPUT);
		}
	}
	SHS_ASSERT_INT_EQ(seen, 6);
	free(roles);
	shs_module_free(m);
}

/* MaxText's step, named and aliased: the roles by use agree with its names (params/... are
 * weights, opt_state/mu and nu their moments). */
static void roles_agree_with_names(void)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	const shs_computation *entry;
	shs_param_role *roles;
	uint32_t weights = 0, moments = 0;

	SHS_ASSERT_OK(shs_module_load_file(shs_test_hlo_path(
		"nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"), SHS_FORMAT_AUTO, &m, &e),
		&e);
	entry = shs_module_entry(m);
	CU_ASSERT_PTR_NOT_NULL_FATAL(roles = shs_entry_param_roles(m));
	for (uint32_t i = 0; i < entry->n_instrs; i++) {
		const shs_instr *in = entry->instrs[i];
		const char *name = in->metadata && in->metadata->op_name ? in->metadata->op_name :
									   in->name;
		if (roles[i] == SHS_PARAM_WEIGHT) {
			CU_ASSERT_PTR_NOT_NULL(strstr(name, "params"));
			CU_ASSERT_PTR_NULL(strstr(name, "opt_state"));
			weights++;
		} else if (roles[i] == SHS_PARAM_OPT_STATE) {
			CU_ASSERT_PTR_NOT_NULL(strstr(name, "opt_state"));
			moments++;
		}
	}
	CU_ASSERT_TRUE(weights > 0);
	SHS_ASSERT_INT_EQ(moments, 2 * weights);
	free(roles);
	shs_module_free(m);
}

CU_TestInfo analysis_tests[] = {
	{ "parameters by use: a Keras step's weights and moments", roles_by_use },
	{ "parameters by use agree with MaxText's names", roles_agree_with_names },
	{ "MHA block dot FLOPs and parameter bytes", mha_dot_flops },
	{ "MaxText loops run 8 times", maxtext_loops },
	{ "counted loops of every direction", counted_loops },
	CU_TEST_INFO_NULL,
};
