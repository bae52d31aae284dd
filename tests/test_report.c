/* What an evaluation reports: MFU as the field defines it, HFU beside it, exposure never negative
 * and booked once, the bound from the critical path, and the report's JSON and text. */
#include <CUnit/CUnit.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "gen.h"
#include "host.h"
#include "evaluate_internal.h"
#include "report.h"
#include "test_util.h"

typedef struct setup {
	shs_test_eval x; /* first: freed as one */
	shs_gen_config g;
} setup;

/* A small LLaMA-like model: 2 layers, d_model 512, d_ff 1024, 8 heads of 64 (4 kv heads), vocab
 * 1024, batch sequences of seq tokens; scanned or unrolled. */
static shs_gen_config small_llama(int64_t seq, int64_t batch, bool scan)
{
	static const char *const sets[][2] = {
		{ "layers", "2" }, { "vocab", "1024" }, { "d_model", "512" }, { "d_ff", "1024" },
		{ "heads", "8" }, { "kv_heads", "4" }, { "head_dim", "64" },
	};
	shs_gen_config g = shs_test_preset("llama3-8b");
	char buf[32];
	shs_err e = { 0 };

	for (size_t k = 0; k < sizeof(sets) / sizeof(sets[0]); k++)
		SHS_ASSERT_OK(shs_gen_config_set(&g, sets[k][0], sets[k][1], &e), &e);
	snprintf(buf, sizeof(buf), "%lld", (long long)seq);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "seq", buf, &e), &e);
	snprintf(buf, sizeof(buf), "%lld", (long long)batch);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "batch", buf, &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "scan", scan ? "true" : "false", &e), &e);
	return g;
}

/* Generates g, lays mesh on topology of hardware hw, makes the named plan and evaluates it. */
static setup *evaluate(shs_gen_config g, const char *hw, const char *topology, const char *mesh,
		       const char *plan, const shs_eval_options *o)
{
	setup *s = calloc(1, sizeof(*s));
	shs_cluster_spec spec = { .hardware = hw, .topology = topology, .slices = 1, .mesh = mesh };
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	s->g = g;
	SHS_ASSERT_OK(shs_gen_module(&g, &s->x.m, NULL, &e), &e);
	shs_hw_catalog_builtin(&s->x.cat);
	s->x.h = shs_test_host();
	shs_test_plan_evaluate(s->x.h, &s->x.cat, &spec, s->x.m, plan, o, &s->x.cluster, &s->x.p, &s->x.ev);
	return s;
}

static void free_setup(setup *s)
{
	shs_test_eval_free(&s->x);
}

static bool near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fmax(fabs(a), fabs(b)) + 1e-300;
}

/* The field's model FLOPs of the small LLaMA: 6 x matmul parameters x tokens (QKVO, gated MLP,
 * unembedding) + the causal attention term 6 x layers x heads x head_dim x seq x tokens
 * (MaxText's calculate_tflops_training_per_device: 12 x ... halved for the causal mask). */
static double field_flops(const shs_gen_config *g)
{
	double d = (double)g->d_model, f = (double)g->d_ff, n = (double)g->heads;
	double k = (double)g->kv_heads, h = (double)g->head_dim, l = (double)g->layers;
	double tokens = (double)g->seq * (double)g->batch;
	double matmul = l * (d * (n + 2 * k) * h + n * h * d + 3 * d * f) + d * (double)g->vocab;

	return 6 * matmul * tokens + 6 * l * n * h * (double)g->seq * tokens;
}

/* MFU's numerator is the field's model FLOPs, found from the module's dots (attention's halved),
 * the same scanned and unrolled, at two sequence lengths (the attention term grows with seq). */
static void mfu_counts_the_fields_flops(void)
{
	static const int64_t seqs[] = { 256, 1024 };

	for (size_t k = 0; k < sizeof(seqs) / sizeof(seqs[0]); k++)
		for (int scan = 0; scan < 2; scan++) {
			shs_gen_config g = small_llama(seqs[k], 8, scan);
			setup *s = evaluate(g, "v5p", "2x2x1", "data=4", "dp", NULL);
			double want = field_flops(&s->g);
			double got = s->x.ev.model_flops * (double)s->x.cluster.devices;
			if (!near(got, want, 1e-9))
				fprintf(stderr, "\n  seq %lld scan %d: model FLOPs %.6g, field %.6g\n",
					(long long)seqs[k], scan, got, want);
			CU_ASSERT_TRUE(near(got, want, 1e-9));
			CU_ASSERT_TRUE(near(s->x.ev.mfu, s->x.ev.model_flops /
					    (s->x.ev.step_time_s * s->x.cluster.hw.flops[SHS_HW_BF16]),
					    1e-12));
			free_setup(s);
		}
}

/* HFU counts what the chips execute, recomputation included: flops / (step x peak), at least
 * the MFU (the local FLOPs hold the model's and any replicated work), and more with full remat
 * than without. */
static void hfu_counts_recomputation(void)
{
	shs_eval_options none = { .remat = SHS_REMAT_NONE }, full = { .remat = SHS_REMAT_FULL };
	setup *a = evaluate(small_llama(256, 8, false), "v5p", "2x2x1", "data=4", "dp", &none);
	setup *b = evaluate(small_llama(256, 8, false), "v5p", "2x2x1", "data=4", "dp", &full);
	double peak = a->x.cluster.hw.flops[SHS_HW_BF16];

	CU_ASSERT_TRUE(near(a->x.ev.hfu, a->x.ev.flops / (a->x.ev.step_time_s * peak), 1e-12));
	CU_ASSERT_TRUE(a->x.ev.hfu >= a->x.ev.mfu);
	CU_ASSERT_TRUE(b->x.ev.remat_s > 0);
	CU_ASSERT_TRUE(b->x.ev.flops > a->x.ev.flops);
	CU_ASSERT_TRUE(near(b->x.ev.model_flops, a->x.ev.model_flops, 1e-12));
	CU_ASSERT_TRUE(b->x.ev.hfu * b->x.ev.step_time_s > a->x.ev.hfu * a->x.ev.step_time_s);
	CU_ASSERT_TRUE(b->x.ev.hfu > b->x.ev.mfu);
	free_setup(a);
	free_setup(b);
}

/* Exposure: never negative, and each wait on one axis (the axes sum to the total), in both
 * schedules, on plans with collectives over one and over several mesh axes. */
static void exposure_booked_once_never_negative(void)
{
	static const struct {
		const char *topology, *mesh, *plan;
	} cases[] = {
		{ "2x2x1", "data=4", "dp" },
		{ "4x4x4", "fsdp=64@xyz", "fsdp" },
		{ "4x4x4", "fsdp=16@xy,tensor=4@z", "fsdp+tp" },
		{ "4x4x4", "data=4@x,fsdp=4@y,tensor=4@z", "fsdp+tp" },
	};
	bool multi = false;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (int sched = 0; sched < 2; sched++) {
			shs_eval_options o = { .schedule = sched ? SHS_SCHEDULE_SEGMENTS :
							     SHS_SCHEDULE_EVENTS };
			setup *s = evaluate(small_llama(256, 64, k % 2), "v5p", cases[k].topology,
					    cases[k].mesh, cases[k].plan, &o);
			double sum = 0, sites = 0;
			CU_ASSERT_TRUE(s->x.ev.exposed_comm_s >= 0);
			for (uint32_t a = 0; a < s->x.cluster.mesh.n_axes; a++) {
				CU_ASSERT_TRUE(s->x.ev.exposed_by_axis[a] >= 0);
				sum += s->x.ev.exposed_by_axis[a];
			}
			if (!near(sum, s->x.ev.exposed_comm_s, 1e-9) && sum + s->x.ev.exposed_comm_s > 0)
				fprintf(stderr, "\n  %s %s: axes %.6g, total %.6g\n", cases[k].mesh,
					sched ? "segments" : "events", sum, s->x.ev.exposed_comm_s);
			CU_ASSERT_TRUE(near(sum, s->x.ev.exposed_comm_s, 1e-9) ||
				       sum + s->x.ev.exposed_comm_s == 0);
			for (uint32_t j = 0; j < s->x.ev.n_colls; j++) {
				CU_ASSERT_TRUE(s->x.ev.colls[j].exposed_s >= 0);
				sites += s->x.ev.colls[j].exposed_s;
				multi = multi || __builtin_popcount(s->x.ev.colls[j].axes_mask) > 1;
			}
			CU_ASSERT_TRUE(sites <= s->x.ev.exposed_comm_s * (1 + 1e-9) + 1e-15);
			/* the step is the compute plus the waits */
			CU_ASSERT_TRUE(near(s->x.ev.step_time_s, s->x.ev.compute_s + s->x.ev.exposed_comm_s,
					    1e-6));
			free_setup(s);
		}
	/* the cases hold a collective over two axes: the one that used to be booked twice */
	CU_ASSERT_TRUE(multi);
}

/* The one axis of a wait: the axis whose traffic delayed it, else the slowest of its links. */
static void wait_axis_is_one_axis(void)
{
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "v5p", .topology = "4x4x4", .slices = 1,
				  .mesh = "fsdp=16@xy,tensor=4@z" };
	shs_cluster c;
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &c, &e), &e);
	/* fsdp spans two ICI axes (twice tensor's links): a gather over both waits on tensor's */
	SHS_ASSERT_INT_EQ(shs__wait_axis(&c, SHS_PCOLL_ALL_GATHER, 3, 1e9, SHS_MESH_MAX_AXES), 1);
	SHS_ASSERT_INT_EQ(shs__wait_axis(&c, SHS_PCOLL_ALL_GATHER, 3, 1e9, 0), 0);
	SHS_ASSERT_INT_EQ(shs__wait_axis(&c, SHS_PCOLL_ALL_GATHER, 2, 1e9, 0), 1);
	SHS_ASSERT_INT_EQ(shs__wait_axis(&c, SHS_PCOLL_ALL_GATHER, 0, 1e9, 0), SHS_MESH_MAX_AXES);
}

/* The bound names what the critical path spent its time on: a one-chip step of wide matmuls on
 * short sequences is compute-bound, the small model at 8 tokens per step memory-bound, and a
 * thin FSDP step over 64 chips communication-bound; the parts it is named from add up to the
 * compute. */
static void bound_from_the_critical_path(void)
{
	static const struct {
		int64_t seq, batch;
		const char *topology, *mesh, *plan, *bound;
	} cases[] = {
		{ 128, 64, "1x1x1", "data=1", "dp", "compute" },
		{ 8, 1, "1x1x1", "data=1", "dp", "memory bandwidth" },
		{ 256, 64, "4x4x4", "fsdp=64@xyz", "fsdp", "communication" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		shs_gen_config g = small_llama(cases[k].seq, cases[k].batch, false);
		setup *s;
		const shs_eval *ev;
		shs_err e = { 0 };
		if (k == 0) { /* wide matmuls, short sequences: the matmuls dominate */
			SHS_ASSERT_OK(shs_gen_config_set(&g, "d_model", "4096", &e), &e);
			SHS_ASSERT_OK(shs_gen_config_set(&g, "d_ff", "16384", &e), &e);
		}
		s = evaluate(g, "v5p", cases[k].topology, cases[k].mesh, cases[k].plan, NULL);
		ev = &s->x.ev;
		SHS_ASSERT_STR_EQ(ev->bound, cases[k].bound);
		CU_ASSERT_TRUE(near(ev->flop_bound_s + ev->hbm_bound_s + ev->remat_s, ev->compute_s,
				    1e-9));
		if (!strcmp(cases[k].bound, "communication")) {
			CU_ASSERT_TRUE(ev->exposed_comm_s >= 0.02 * ev->compute_s);
		} else {
			CU_ASSERT_TRUE((ev->hbm_bound_s > ev->flop_bound_s) ==
				       !strcmp(cases[k].bound, "memory bandwidth"));
		}
		free_setup(s);
	}
}

/* The report carries HFU beside MFU, in text and JSON. */
static void report_has_mfu_and_hfu(void)
{
	setup *s = evaluate(small_llama(256, 8, false), "v5p", "2x2x1", "data=4", "dp", NULL);
	json_t *o = shs_eval_report_json(&s->x.cluster, &s->x.ev);
	const char *path = shs_test_tmp_path("report.txt");
	FILE *out = fopen(path, "w+");
	char text[4096] = "", want[64];
	size_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_TRUE(near(json_real_value(json_object_get(o, "mfu")), s->x.ev.mfu, 1e-15));
	CU_ASSERT_TRUE(near(json_real_value(json_object_get(o, "hfu")), s->x.ev.hfu, 1e-15));
	CU_ASSERT_TRUE(near(json_real_value(json_object_get(o, "model_flops_per_device")),
			    s->x.ev.model_flops, 1e-15));
	CU_ASSERT_TRUE(json_real_value(json_object_get(o, "exposed_comm_total_s")) >= 0);
	json_decref(o);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	shs_eval_report_print(out, &s->x.cluster, &s->x.ev, 3);
	rewind(out);
	n = fread(text, 1, sizeof(text) - 1, out);
	text[n] = 0;
	fclose(out);
	snprintf(want, sizeof(want), "MFU %.1f %%, HFU %.1f %%", 100 * s->x.ev.mfu, 100 * s->x.ev.hfu);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
	free_setup(s);
}

CU_TestInfo report_tests[] = {
	{ "MFU counts the field's FLOPs (causal attention), scanned and unrolled",
	  mfu_counts_the_fields_flops },
	{ "HFU counts recomputation", hfu_counts_recomputation },
	{ "exposure booked once per wait, never negative", exposure_booked_once_never_negative },
	{ "a wait's axis: the blocker, else the slowest link", wait_axis_is_one_axis },
	{ "the bound from the critical path", bound_from_the_critical_path },
	{ "the report has MFU and HFU, text and JSON", report_has_mfu_and_hfu },
	CU_TEST_INFO_NULL,
};
