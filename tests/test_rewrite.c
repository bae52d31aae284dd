/* The micro-batch rewrite (--microbatches M): one loop of M trips with the module's signature,
 * the same FLOPs, activation memory as 1/M, scanned and unrolled forms alike, the generator's
 * own micro-batched step, and a clear refusal where the step cannot be split. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "io.h"
#include "microbatch.h"
#include "test_util.h"

static const char *const llama_scan[] = { "layers", "2", "scan", "true", "seq", "1024",
					  "batch", "32", "vocab", "32768", NULL };
static const char *const llama_unrolled[] = { "layers", "2", "seq", "1024", "batch", "32",
					      "vocab", "32768", NULL };
static const char *const mixtral[] = { "layers", "2", "scan", "true", "seq", "1024",
				       "batch", "32", NULL };
static const char *const dropout_scan[] = { "layers", "2", "scan", "true", "seq", "1024",
					     "batch", "32", "vocab", "32768", "dropout", "0.1",
					     NULL };
static const char *const mlp[] = { "layers", "2", "batch", "65536", "d_model", "2048",
				   "d_ff", "8192", NULL };

static shs_module *split(const shs_module *m, int64_t mb)
{
	shs_module *out = NULL;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_microbatch_rewrite(m, mb, &out, &e), &e);
	return out;
}

/* The step on n H100s with the named plan on mesh. */
static shs_eval on_h100(shs_host *h, const shs_module *m, int64_t n, const char *mesh,
			const char *plan)
{
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "h100", .devices = n, .mesh = mesh };
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev;

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &spec, m, plan, NULL, &c, &p, &ev);
	shs_plan_free(p);
	return ev;
}

/* The step on 8 H100s under FSDP. */
static shs_eval fsdp8(shs_host *h, const shs_module *m)
{
	return on_h100(h, m, 8, "fsdp=8", "fsdp");
}

/* One loop of M trips in the entry, the module's parameters and result as they were, and the
 * protobuf round trip. */
static void test_loop(void)
{
	shs_module *whole = shs_test_generate("llama3-8b", llama_scan);
	shs_module *m = split(whole, 4), *back = NULL;
	const shs_computation *a = shs_module_entry(whole), *b = shs_module_entry(m);
	uint8_t *pb = NULL;
	size_t n = 0;
	uint32_t loops = 0, params_a = 0, params_b = 0;
	int64_t trips = 0;
	shs_err e = { 0 };

	for (uint32_t i = 0; i < b->n_instrs; i++) {
		const shs_instr *in = b->instrs[i];
		params_b += in->op == SHS_OP_PARAMETER;
		if (in->op == SHS_OP_WHILE) {
			loops++;
			CU_ASSERT_TRUE(shs_while_trip_count(m, b, in, &trips));
			CU_ASSERT_EQUAL(trips, 4);
		}
	}
	for (uint32_t i = 0; i < a->n_instrs; i++)
		params_a += a->instrs[i]->op == SHS_OP_PARAMETER;
	CU_ASSERT_EQUAL(loops, 1); /* the layers' loops are inside it */
	CU_ASSERT_EQUAL(params_a, params_b);
	CU_ASSERT_TRUE(shs_shape_equal(&a->instrs[a->root]->shape, &b->instrs[b->root]->shape));
	CU_ASSERT_EQUAL(m->n_aliases, whole->n_aliases);
	SHS_ASSERT_OK(shs_proto_save(m, false, &pb, &n, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, n, "rewritten", &back, &e), &e);
	SHS_ASSERT_OK(shs_module_verify(back, &e), &e);
	free(pb);
	shs_module_free(back);
	shs_module_free(m);
	shs_module_free(whole);
}

/* The same FLOPs whole and in micro-batches, for every model kind. */
static void test_flops(void)
{
	static const struct { const char *preset; const char *const *sets; } cases[] = {
		{ "llama3-8b", llama_scan }, { "llama3-8b", llama_unrolled },
		{ "mixtral-8x7b", mixtral }, { "mlp-only", mlp },
		/* dropout's masks, hashed from iotas of the batch's size and saved for the
		 * backward pass, made per micro-batch */
		{ "gpt3-175b", dropout_scan },
	};
	shs_host *h = shs_test_host();

	for (size_t k = 0; k < sizeof(cases) / sizeof(*cases); k++) {
		shs_module *whole = shs_test_generate(cases[k].preset, cases[k].sets);
		shs_module *m = split(whole, 4);
		shs_eval a = fsdp8(h, whole), b = fsdp8(h, m);
		fprintf(stderr, "\n  %s: %.6g FLOPs whole, %.6g in 4 micro-batches; peak %.3f -> "
			"%.3f GiB", cases[k].preset, a.flops, b.flops, a.memory_bytes / (1 << 30),
			b.memory_bytes / (1 << 30));
		/* the model's; the hardware's add the accumulation, an add per parameter and
		 * micro-batch */
		CU_ASSERT_TRUE(fabs(b.model_flops / a.model_flops - 1) < 1e-9);
		CU_ASSERT_TRUE(b.flops > a.flops && b.flops / a.flops - 1 < 1e-3);
		shs_eval_free(&a);
		shs_eval_free(&b);
		shs_module_free(m);
		shs_module_free(whole);
	}
	shs_host_free(h);
}

/* The step on one H100 (data parallel, one replica). */
static shs_eval one_h100(shs_host *h, const shs_module *m)
{
	return on_h100(h, m, 1, "data=1", "dp");
}

/* Activation memory as 1/M: between M = 2, 4 and 8 the peak drops by A/4 then A/8 (on one
 * chip, where the activations are most of the peak). */
static void check_one_over_m(shs_host *h, const char *preset, const char *const *sets)
{
	shs_module *whole = shs_test_generate(preset, sets);
	double mem[4] = { 0 };

	for (int k = 1; k < 4; k++) {
		shs_module *m = split(whole, (int64_t)1 << k);
		shs_eval ev = one_h100(h, m);
		mem[k] = ev.memory_bytes;
		shs_eval_free(&ev);
		shs_module_free(m);
	}
	fprintf(stderr, "\n  %s rewritten: peak %.3f / %.3f / %.3f GiB at 2 / 4 / 8 micro-batches",
		preset, mem[1] / (1 << 30), mem[2] / (1 << 30), mem[3] / (1 << 30));
	CU_ASSERT_TRUE(mem[1] > mem[2] && mem[2] > mem[3]);
	CU_ASSERT_TRUE(fabs((mem[1] - mem[2]) / (mem[2] - mem[3]) - 2) < 0.05);
	shs_module_free(whole);
}

static void test_memory(void)
{
	static const char *const llama192[] = { "layers", "2", "scan", "true", "seq", "1024",
						"batch", "192", "vocab", "32768", NULL };
	shs_host *h = shs_test_host();

	check_one_over_m(h, "mlp-only", mlp);
	check_one_over_m(h, "llama3-8b", llama192);
	shs_host_free(h);
}

/* Scanned and unrolled, rewritten, are one computation: they agree about as well as they agree
 * whole (the whole forms' own gaps are the forms suite's known ones; per micro-batch they weigh
 * more against the smaller compute: measured 1.4 % against 0.9 % whole in step time), at most 2
 * points more. In memory, one thing more: the scanned backward loop allocates its layers'
 * gradient stacks when it starts, where the unrolled layers make theirs as each finishes; per
 * micro-batch the peak is at the backward pass's start, and the scanned one may hold up to the
 * gradients more there (measured 4.8 %, 0.09 GiB, against 0 % whole). */
static void test_forms(void)
{
	shs_host *h = shs_test_host();
	shs_module *s = shs_test_generate("llama3-8b", llama_scan);
	shs_module *u = shs_test_generate("llama3-8b", llama_unrolled);
	shs_module *ms = split(s, 4), *mu = split(u, 4);
	shs_eval a = fsdp8(h, ms), b = fsdp8(h, mu), ws = fsdp8(h, s), wu = fsdp8(h, u);
	double gap = fabs(a.step_time_s / b.step_time_s - 1);
	double whole = fabs(ws.step_time_s / wu.step_time_s - 1);
	double mem_gap = fabs(a.memory_bytes / b.memory_bytes - 1);
	double mem_whole = fabs(ws.memory_bytes / wu.memory_bytes - 1);

	fprintf(stderr, "\n  4 micro-batches: scanned %.5f s %.3f GiB, unrolled %.5f s %.3f GiB "
		"(%.2f %% apart; whole %.2f %%)", a.step_time_s, a.memory_bytes / (1 << 30),
		b.step_time_s, b.memory_bytes / (1 << 30), 100 * gap, 100 * whole);
	CU_ASSERT_TRUE(gap < whole + 0.02);
	CU_ASSERT_TRUE(mem_gap < mem_whole + 0.02 + b.grads_bytes / b.memory_bytes);
	shs_eval_free(&a);
	shs_eval_free(&b);
	shs_eval_free(&ws);
	shs_eval_free(&wu);
	shs_module_free(ms);
	shs_module_free(mu);
	shs_module_free(s);
	shs_module_free(u);
	shs_host_free(h);
}

/* The generator's micro-batched Mixtral (gen microbatches=4) and the rewrite of its whole-batch
 * step: the same carry and the same cost; the generator's form also scales each accumulated
 * gradient by 1/M after the loop (the rewrite keeps the whole batch's own normalisation), which
 * fuses into the optimizer's update: the same memory. */
static int by_text(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shapes the entry's loop carries, as a sorted list of their text. */
static char *carry_text(const shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);
	shs_buf b = { 0 };

	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_WHILE) {
			const shs_shape *t = &c->instrs[i]->shape;
			char **parts = calloc(t->n_tuple + 1, sizeof(*parts));
			for (uint32_t k = 0; k < t->n_tuple; k++) {
				shs_buf one = { 0 };
				shs_shape_print(&one, &t->tuple[k], false);
				parts[k] = shs_buf_take(&one);
			}
			qsort(parts, t->n_tuple, sizeof(*parts), by_text);
			for (uint32_t k = 0; k < t->n_tuple; k++) {
				shs_buf_puts(&b, parts[k]);
				shs_buf_puts(&b, " ");
				free(parts[k]);
			}
			free(parts);
		}
	return shs_buf_take(&b);
}

static bool carry_matches(const shs_module *g, const shs_module *m)
{
	char *a = carry_text(g), *b = carry_text(m);
	bool same = a && b && !strcmp(a, b);

	if (!same)
		fprintf(stderr, "\n  carries differ:\n  %s\n  %s", a, b);
	free(a);
	free(b);
	return same;
}

static void test_as_generated(void)
{
	static const char *const sets4[] = { "layers", "2", "scan", "true", "seq", "1024",
					     "batch", "32", "microbatches", "4", NULL };
	shs_host *h = shs_test_host();
	shs_module *whole = shs_test_generate("mixtral-8x7b", mixtral);
	shs_module *g = shs_test_generate("mixtral-8x7b", sets4), *m = split(whole, 4);
	shs_eval a = fsdp8(h, g), b = fsdp8(h, m);

	fprintf(stderr, "\n  mixtral, 4 micro-batches: generated %.5f s %.3f GiB, rewritten "
		"%.5f s %.3f GiB", a.step_time_s, a.memory_bytes / (1 << 30), b.step_time_s,
		b.memory_bytes / (1 << 30));
	CU_ASSERT_TRUE(fabs(b.model_flops / a.model_flops - 1) < 1e-9);
	CU_ASSERT_TRUE(carry_matches(g, m));
	CU_ASSERT_TRUE(fabs(b.step_time_s / a.step_time_s - 1) < 0.05);
	CU_ASSERT_TRUE(fabs(b.memory_bytes / a.memory_bytes - 1) < 1e-3);
	shs_eval_free(&a);
	shs_eval_free(&b);
	shs_module_free(m);
	shs_module_free(g);
	shs_module_free(whole);
	shs_host_free(h);
}

/* The real MaxText step XLA wrote (16 sequences of 2048 tokens, its loss divided by the
 * batch's target-token count before the backward pass): split, with the model's FLOPs, and
 * activation memory falling as 1/M on one H100. Its activations are not most of the peak: the
 * split step holds gradient accumulators beside the micro-batch's gradients (2 micro-batches:
 * 26.1 GiB against 25.5 GiB whole), and from 8 micro-batches on the peak is after the backward
 * loop, where the activations are gone. So the peak falls with M, and each doubling saves at
 * most about half what the one before saved (half where the activations set the peak, as 1/M
 * has it; less where they no longer do). */
static void test_maxtext(void)
{
	shs_host *h = shs_test_host();
	shs_module *whole = NULL;
	shs_err e = { 0 };
	double mem[4] = { 0 }, flops = 0;

	SHS_ASSERT_OK(shs_module_load_file(shs_test_hlo_path(
		"nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"), SHS_FORMAT_AUTO, &whole,
		&e), &e);
	for (int k = 0; k < 4; k++) {
		shs_module *m = k ? split(whole, (int64_t)1 << k) : whole;
		shs_eval ev = one_h100(h, m);
		if (!k)
			flops = ev.model_flops;
		else
			CU_ASSERT_TRUE(fabs(ev.model_flops / flops - 1) < 1e-9);
		mem[k] = ev.memory_bytes;
		shs_eval_free(&ev);
		if (k)
			shs_module_free(m);
	}
	fprintf(stderr, "\n  MaxText step: peak %.2f / %.2f / %.2f / %.2f GiB whole and at 2 / 4 / 8",
		mem[0] / (1 << 30), mem[1] / (1 << 30), mem[2] / (1 << 30), mem[3] / (1 << 30));
	CU_ASSERT_TRUE(mem[1] > mem[2] && mem[2] > mem[3]);
	CU_ASSERT_TRUE((mem[1] - mem[2]) / (mem[2] - mem[3]) > 2 - 0.05);
	shs_module_free(whole);
	shs_host_free(h);
}

/* data [8, 4] through a weight; out is the tail the step computes from the batch. */
static char *tiny(const char *tail)
{
	static char text[2048];

	snprintf(text, sizeof(text),
		 "HloModule tiny\n\n"
		 "add { a = f32[] parameter(0) b = f32[] parameter(1) ROOT c = f32[] add(a, b) }\n"
		 "max { p = f32[] parameter(0) q = f32[] parameter(1) ROOT r = f32[] maximum(p, q) }\n"
		 "ENTRY main {\n"
		 "  w = f32[4,4] parameter(0), metadata={op_name=\"params/w\"}\n"
		 "  x = f32[8,4] parameter(1), metadata={op_name=\"batch/inputs\"}\n"
		 "  y = f32[8,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		 "  zero = f32[] constant(0)\n"
		 "%s\n}\n", tail);
	return text;
}

/* Whether computation c (may be NULL) has an instruction whose name starts with prefix. */
static bool has_named(const shs_computation *c, const char *prefix)
{
	for (uint32_t i = 0; c && i < c->n_instrs; i++)
		if (!strncmp(c->instrs[i]->name, prefix, strlen(prefix)))
			return true;
	return false;
}

static void refused(const char *tail, const char *why)
{
	shs_module *m = shs_test_parse(tiny(tail)), *out = NULL;
	shs_err e = { 0 };

	CU_ASSERT_EQUAL(shs_microbatch_rewrite(m, 2, &out, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, why));
	if (!strstr(e.msg, why))
		fprintf(stderr, "\n  got: %s", e.msg);
	shs_module_free(m);
}

/* What needs the whole batch at once is refused, naming the instruction; a sum over the batch,
 * what is computed from sums (a mean over a data-dependent count) and a batch-sized value made
 * once before the loop (sliced per micro-batch) are not. */
static void test_refusals(void)
{
	shs_module *m, *out = NULL;
	shs_err e = { 0 };

	refused("  big = f32[4] reduce(y, zero), dimensions={0}, to_apply=max\n"
		"  ROOT r = (f32[4]) tuple(big)", "reduce big");
	/* work scaled by a function of the whole batch's sum, then not linear in it */
	refused("  s = f32[] reduce(y, zero), dimensions={0,1}, to_apply=add\n"
		"  inv = f32[] divide(zero, s)\n  bi = f32[8,4] broadcast(inv), dimensions={}\n"
		"  z = f32[8,4] multiply(y, bi)\n  ez = f32[8,4] exponential(z)\n"
		"  g = f32[4,4] dot(x, ez), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
		"  ROOT r = (f32[4,4]) tuple(g)", "exponential ez");
	refused("  ROOT r = (f32[8,4]) tuple(y)", "whole batch");
	m = shs_test_parse(tiny("  s = f32[] reduce(y, zero), dimensions={0,1}, to_apply=add\n"
				"  n = f32[] reduce(x, zero), dimensions={0,1}, to_apply=add\n"
				"  mean = f32[] divide(s, n)\n  ROOT r = (f32[]) tuple(mean)"));
	SHS_ASSERT_OK(shs_microbatch_rewrite(m, 2, &out, &e), &e);
	shs_module_free(out);
	CU_ASSERT_EQUAL(shs_microbatch_rewrite(m, 3, &out, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "does not divide"));
	shs_module_free(m);
	/* the backward pass scaled by a function of the whole batch's sum (MaxText's loss over the
	 * batch's token count): the loop runs with 1 in its place, and the accumulated gradient
	 * is multiplied by it after the loop */
	m = shs_test_parse(tiny("  s = f32[] reduce(y, zero), dimensions={0,1}, to_apply=add\n"
				"  inv = f32[] divide(zero, s)\n  bi = f32[8,4] broadcast(inv), "
				"dimensions={}\n  z = f32[8,4] multiply(y, bi)\n"
				"  g = f32[4,4] dot(x, z), lhs_contracting_dims={0}, "
				"rhs_contracting_dims={0}\n  ROOT r = (f32[4,4]) tuple(g)"));
	SHS_ASSERT_OK(shs_microbatch_rewrite(m, 2, &out, &e), &e);
	CU_ASSERT_TRUE(has_named(shs_module_entry(out), "microbatch.scaled"));
	shs_module_free(out);
	shs_module_free(m);
	/* a value of the batch's size the rewrite cannot remake (a constant, as a mask computed
	 * once in the entry) is sliced to each micro-batch's rows in the loop */
	m = shs_test_parse(tiny("  k = f32[8,4] constant({{1,2,3,4},{1,2,3,4},{1,2,3,4},{1,2,3,4},"
				"{1,2,3,4},{1,2,3,4},{1,2,3,4},{1,2,3,4}})\n"
				"  z = f32[8,4] multiply(y, k)\n"
				"  g = f32[4,4] dot(x, z), lhs_contracting_dims={0}, "
				"rhs_contracting_dims={0}\n  ROOT r = (f32[4,4]) tuple(g)"));
	SHS_ASSERT_OK(shs_microbatch_rewrite(m, 2, &out, &e), &e);
	CU_ASSERT_TRUE(has_named(shs_module_find_comp(out, "main.microbatch.body"),
				 "microbatch.rows"));
	shs_module_free(out);
	shs_module_free(m);
}

CU_TestInfo rewrite_tests[] = {
	{ "one loop of M trips with the module's signature, round-trips", test_loop },
	{ "the same FLOPs in micro-batches (LLaMA both forms, Mixtral, mlp-only, GPT-3 with "
	  "dropout)", test_flops },
	{ "activation memory falls as 1/M (mlp-only, 2-layer LLaMA)", test_memory },
	{ "scanned and unrolled micro-batched alike", test_forms },
	{ "Mixtral: as the generator writes its micro-batched step", test_as_generated },
	{ "what needs the whole batch is refused by name; sums and means are not", test_refusals },
	{ "the real MaxText step: split (its loss's scale deferred), 1/M memory", test_maxtext },
	CU_TEST_INFO_NULL,
};
