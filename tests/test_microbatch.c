/* Gradient accumulation in the generator (microbatches=M): the loop JAX writes, the same
 * FLOPs, activation memory as 1/M, and the step time of the book's hand computation. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "gen.h"
#include "io.h"
#include "plan.h"
#include "test_util.h"

static const char *const mlp_sets[] = { "layers", "2", "batch", "65536", "d_model", "2048",
					"d_ff", "8192", NULL };
static const char *const llama_sets[] = { "layers", "2", "scan", "true", "seq", "1024",
					  "batch", "192", "vocab", "32768", NULL };

/* The preset with base settings and microbatches=m. */
static shs_module *with_microbatches(const char *preset, const char *const *base, int64_t m,
				     shs_gen_stats *st)
{
	shs_gen_config c = shs_test_preset(preset);
	shs_module *mod = NULL;
	char v[32];
	shs_err e = { 0 };

	for (; base[0]; base += 2)
		SHS_ASSERT_OK(shs_gen_config_set(&c, base[0], base[1], &e), &e);
	snprintf(v, sizeof(v), "%lld", (long long)m);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "microbatches", v, &e), &e);
	SHS_ASSERT_OK(shs_gen_module(&c, &mod, st, &e), &e);
	return mod;
}

/* The step on one H100, data parallel (one replica), under remat. */
static shs_eval step_remat(shs_host *h, const shs_module *m, shs_remat remat)
{
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "h100", .devices = 1, .mesh = "data=1" };
	shs_eval_options o = { .remat = remat };
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev;

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &spec, m, "dp", &o, &c, &p, &ev);
	shs_plan_free(p);
	return ev;
}

static shs_eval step_on_h100(shs_host *h, const shs_module *m)
{
	return step_remat(h, m, SHS_REMAT_NONE);
}

/* The entry's micro-batch loop: a while of m trips; the FLOPs of one whole-batch step; and the
 * module round-trips through protobuf. */
static void test_loop(void)
{
	shs_gen_stats one, four;
	shs_module *a = with_microbatches("llama3-8b", llama_sets, 1, &one);
	shs_module *b = with_microbatches("llama3-8b", llama_sets, 4, &four);
	const shs_computation *entry = shs_module_entry(b);
	shs_module *back = NULL;
	uint8_t *pb = NULL, *pb2 = NULL;
	size_t n = 0, n2 = 0;
	int64_t trips = 0;
	uint32_t loops = 0;
	shs_err e = { 0 };

	for (uint32_t i = 0; i < entry->n_instrs; i++)
		if (entry->instrs[i]->op == SHS_OP_WHILE) {
			loops++;
			CU_ASSERT_TRUE(shs_while_trip_count(b, entry, entry->instrs[i], &trips));
			CU_ASSERT_EQUAL(trips, 4);
		}
	CU_ASSERT_EQUAL(loops, 1); /* the layers' loops are inside it */
	CU_ASSERT_TRUE(fabs(four.flops / one.flops - 1) < 1e-12);
	CU_ASSERT_EQUAL(four.tokens, one.tokens);
	SHS_ASSERT_OK(shs_proto_save(b, false, &pb, &n, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, n, "ga", &back, &e), &e);
	SHS_ASSERT_OK(shs_proto_save(back, false, &pb2, &n2, &e), &e);
	CU_ASSERT_TRUE(n == n2 && !memcmp(pb, pb2, n));
	free(pb);
	free(pb2);
	shs_module_free(back);
	shs_module_free(a);
	shs_module_free(b);
}

/* Activation memory falls as 1/M: between M = 2, 4 and 8 the peak drops by A/4 then A/8 (the
 * weights, Adam state, accumulators and the whole batch's inputs stay). */
static void check_one_over_m(shs_host *h, const char *preset, const char *const *sets)
{
	double mem[4] = { 0 };

	for (int k = 1; k < 4; k++) {
		shs_module *m = with_microbatches(preset, sets, (int64_t)1 << k, NULL);
		shs_eval ev = step_on_h100(h, m);
		mem[k] = ev.memory_bytes;
		shs_eval_free(&ev);
		shs_module_free(m);
	}
	fprintf(stderr, "\n  %s: peak %.3f / %.3f / %.3f GiB at 2 / 4 / 8 micro-batches", preset,
		mem[1] / (1 << 30), mem[2] / (1 << 30), mem[3] / (1 << 30));
	CU_ASSERT_TRUE(mem[1] > mem[2] && mem[2] > mem[3]);
	CU_ASSERT_TRUE(fabs((mem[1] - mem[2]) / (mem[2] - mem[3]) - 2) < 0.05);
}

static void test_memory(void)
{
	shs_host *h = shs_test_host();

	check_one_over_m(h, "mlp-only", mlp_sets);
	check_one_over_m(h, "llama3-8b", llama_sets);
	shs_host_free(h);
}

/* The book's model on one H100: 6 B P FLOPs at the achievable matmul rate, plus each
 * micro-batch's accumulation (read the f32 sum and the bf16 gradient, write the sum: 10 bytes a
 * parameter at the HBM's bandwidth); the evaluator within 5 %. */
static void test_book_step(void)
{
	shs_host *h = shs_test_host();
	shs_hw_catalog cat;
	const shs_hardware *hw;

	shs_hw_catalog_builtin(&cat);
	hw = shs_hw_find(&cat, "h100");
	CU_ASSERT_PTR_NOT_NULL_FATAL(hw);
	for (int64_t m = 1; m <= 8; m *= 2) {
		shs_gen_stats st;
		shs_module *mod = with_microbatches("mlp-only", mlp_sets, m, &st);
		shs_eval ev = step_on_h100(h, mod);
		double hand = 6 * st.tokens * st.params / (hw->flops[SHS_HW_BF16] * hw->matmul_eff) +
			      (m > 1 ? (double)m * 10 * st.params / hw->hbm_bw : 0);
		fprintf(stderr, "\n  mlp-only, %lld micro-batches: %.5f s (hand %.5f s)",
			(long long)m, ev.step_time_s, hand);
		CU_ASSERT_TRUE(fabs(ev.step_time_s / hand - 1) < 0.05);
		shs_eval_free(&ev);
		shs_module_free(mod);
	}
	shs_host_free(h);
}

/* Remat inside the micro-batch loop: full recomputation redoes the FLOPs it redoes without
 * micro-batches, and frees memory there too. */
static void test_remat_inside(void)
{
	shs_host *h = shs_test_host();
	shs_module *one = with_microbatches("llama3-8b", llama_sets, 1, NULL);
	shs_module *four = with_microbatches("llama3-8b", llama_sets, 4, NULL);
	shs_eval a = step_remat(h, one, SHS_REMAT_FULL), b = step_remat(h, four, SHS_REMAT_FULL);
	shs_eval a_none = step_on_h100(h, one), b_none = step_on_h100(h, four);

	fprintf(stderr, "\n  remat full: recomputation %.4g s, %.4g FLOPs (1 micro-batch); %.4g s, "
		"%.4g FLOPs (4); peak %.3f GiB against %.3f without", a.remat_s, a.flops, b.remat_s,
		b.flops, b.memory_bytes / (1 << 30), b_none.memory_bytes / (1 << 30));
	CU_ASSERT_TRUE(b.remat_s > 0);
	/* the same layers recomputed (measured 1.5e-5 apart; not traced further) */
	CU_ASSERT_TRUE(fabs((b.flops - b_none.flops) / (a.flops - a_none.flops) - 1) < 1e-4);
	CU_ASSERT_TRUE(b.flops > b_none.flops);
	CU_ASSERT_TRUE(b.memory_bytes < b_none.memory_bytes);
	shs_eval_free(&a);
	shs_eval_free(&b);
	shs_eval_free(&a_none);
	shs_eval_free(&b_none);
	shs_module_free(one);
	shs_module_free(four);
	shs_host_free(h);
}

/* The step of module m (its plan in *p) under tensor parallelism on 4 H100s. */
static shs_eval step_tp(shs_host *h, const shs_module *m, shs_plan **p)
{
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "h100", .devices = 4, .mesh = "data=2,tensor=2" };
	shs_eval_options o = { 0 };
	shs_cluster c;
	shs_eval ev;

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &spec, m, "tp", &o, &c, p, &ev);
	return ev;
}

/* A scanned model's stacked weights reach their layer loop through the micro-batch loop: they
 * split as they do without it (the heads over tensor, not the stack of layers, which every
 * layer would then gather), and the step is the unrolled form's. */
static void test_scanned_inside(void)
{
	static const char *const unrolled[] = { "layers", "2", "scan", "false", "seq", "1024",
						"batch", "192", "vocab", "32768", NULL };
	shs_host *h = shs_test_host();
	shs_module *one = with_microbatches("llama3-8b", llama_sets, 1, NULL);
	shs_module *two = with_microbatches("llama3-8b", llama_sets, 2, NULL);
	shs_module *flat = with_microbatches("llama3-8b", unrolled, 2, NULL);
	const shs_computation *e1 = shs_module_entry(one), *e2 = shs_module_entry(two);
	shs_plan *p1 = NULL, *p2 = NULL, *pf = NULL;
	shs_eval a = step_tp(h, one, &p1), b = step_tp(h, two, &p2), f = step_tp(h, flat, &pf);
	uint32_t weights = 0, same = 0;

	for (uint32_t i = 0; i < e1->n_instrs; i++) {
		const shs_instr *w = e1->instrs[i];
		const shs_decision *d1 = &p1->d[one->entry][i], *d2;
		uint32_t j = 0;
		if (w->op != SHS_OP_PARAMETER || w->shape.rank != 4 ||
		    !shs_elem_is_float(w->shape.type))
			continue;
		while (j < e2->n_instrs &&
		       !(e2->instrs[j]->op == SHS_OP_PARAMETER &&
			 e2->instrs[j]->parameter_number == w->parameter_number))
			j++;
		CU_ASSERT_FATAL(j < e2->n_instrs);
		d2 = &p2->d[two->entry][j];
		weights++;
		same += d1->n_leaves == 1 && d2->n_leaves == 1 &&
			shs_spec_equal(&d1->leaves[0], &d2->leaves[0]);
	}
	fprintf(stderr, "\n  tp on data=2,tensor=2: %u of %u stacked attention weights seeded "
		"alike; step %.4g s scanned, %.4g s unrolled (2 micro-batches), %.4g s whole",
		same, weights, b.step_time_s, f.step_time_s, a.step_time_s);
	CU_ASSERT_TRUE(weights >= 4);
	CU_ASSERT_EQUAL(same, weights);
	CU_ASSERT_TRUE(fabs(b.step_time_s / f.step_time_s - 1) < 0.02);
	shs_eval_free(&a);
	shs_eval_free(&b);
	shs_eval_free(&f);
	shs_plan_free(p1);
	shs_plan_free(p2);
	shs_plan_free(pf);
	shs_module_free(one);
	shs_module_free(two);
	shs_module_free(flat);
	shs_host_free(h);
}

/* Whether some instruction of m has op_name. */
static bool has_op_name(const shs_module *m, const char *op_name)
{
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const shs_instr *in = m->comps[c]->instrs[i];
			if (in->metadata && in->metadata->op_name &&
			    !strcmp(in->metadata->op_name, op_name))
				return true;
		}
	return false;
}

/* The step inside the loop keeps its op_names (a plan file's activation rules match it as
 * they match the step without micro-batches); only the loop's own work is scoped
 * "microbatches". */
static void test_op_names(void)
{
	shs_module *one = with_microbatches("llama3-8b", llama_sets, 1, NULL);
	shs_module *four = with_microbatches("llama3-8b", llama_sets, 4, NULL);
	uint32_t dots = 0, loop_own = 0;

	for (uint32_t c = 0; c < one->n_comps; c++)
		for (uint32_t i = 0; i < one->comps[c]->n_instrs; i++) {
			const shs_instr *in = one->comps[c]->instrs[i];
			if (in->op != SHS_OP_DOT || !in->metadata || !in->metadata->op_name)
				continue;
			dots++;
			CU_ASSERT_TRUE(has_op_name(four, in->metadata->op_name));
		}
	for (uint32_t c = 0; c < four->n_comps; c++)
		for (uint32_t i = 0; i < four->comps[c]->n_instrs; i++) {
			const shs_instr *in = four->comps[c]->instrs[i];
			const char *n = in->metadata ? in->metadata->op_name : NULL;
			if (n && !strncmp(n, "train_step/microbatches/", 24)) {
				loop_own++;
				CU_ASSERT_TRUE(in->op != SHS_OP_DOT);
			}
		}
	CU_ASSERT_TRUE(dots >= 8);
	CU_ASSERT_TRUE(loop_own > 0);
	CU_ASSERT_TRUE(has_op_name(four, "train_step/microbatches/add")); /* the accumulation */
	shs_module_free(one);
	shs_module_free(four);
}

CU_TestInfo microbatch_tests[] = {
	{ "microbatches=M: one loop of M trips, the same FLOPs, round-trips", test_loop },
	{ "activation memory falls as 1/M (mlp-only, 2-layer LLaMA)", test_memory },
	{ "mlp-only's step as the book computes it, per micro-batch count", test_book_step },
	{ "remat inside the micro-batch loop recomputes what it does without", test_remat_inside },
	{ "the step keeps its op_names inside the micro-batch loop", test_op_names },
	{ "a scanned model's weights split alike inside the micro-batch loop",
	  test_scanned_inside },
	CU_TEST_INFO_NULL,
};
