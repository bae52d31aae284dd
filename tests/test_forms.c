/* One computation, one answer: every generator preset, scanned and unrolled, agrees on step
 * time and peak memory under the same plan and remat. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "gen.h"
#include "hardware.h"
#include "host.h"
#include "plan.h"
#include "test_util.h"

/* The sanitizer build checks the same property on one cluster and remat policy (the normal
 * build runs both clusters and both policies). */
static const bool sanitized = SHS_TEST_SANITIZED;

/* The acceptance of issue 15: scanned and unrolled within 1 %. */
static const double FORMS_TOL = 0.01;

/* A cluster: its hardware, device count and the mesh of each named plan. */
typedef struct cluster_case {
	const char *hardware;
	int64_t devices;
	const char *mesh[3]; /* dp, fsdp, fsdp+tp */
} cluster_case;

static const char *const plans[3] = { "dp", "fsdp", "fsdp+tp" };

static const cluster_case clusters[] = {
	{ "v5p", 64, { "data=64", "fsdp=64", "fsdp=16,tensor=4" } },
	{ "h100", 16, { "data=16", "fsdp=16", "data=2,tensor=8" } },
};

static const char *const presets[] = { "llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b",
				       "gpt3-175b", "mixtral-8x7b", "mlp-only" };

/* The cases that do not reach FORMS_TOL yet: the largest gap each may have (a fraction, the
 * gap measured when it was written rounded up to the next half percent), and why. The test
 * fails when one of them grows past it, and says so when one closes (to move it out). */
typedef struct known_gap {
	const char *preset, *hardware, *plan;
	shs_remat remat;
	double step, memory;
} known_gap;

/* Why, by group (measured at 2 layers; the gaps in the comments, scanned against unrolled, in %):
 * - the copies into the scanned stacks: the scanned body copies each saved value into its stack
 *   (a dynamic-update-slice: read the update, write the slot), which XLA pays when the value has
 *   other readers in the layer, as saved values do, or when no fusion can write it (a matmul's
 *   or an all-reduce's result: mlp-only's replicated gradients under dp); a gradient that a
 *   layer's elementwise work makes for its root alone is written in place (evaluate_fusion.c,
 *   F6). And the loop's event schedule exposes more of the tensor collectives than the
 *   unrolled layers' (llama2-13b and mixtral on H100 under fsdp+tp and fsdp).
 * - data-parallel plans (dp; fsdp+tp on data=2,tensor=8): the weights and Adam state come back
 *   replicated over data, so each layer all-reduces its gradient and the update runs replicated
 *   (plan_update.c); the scanned body then copies each replicated gradient into its stack
 *   where no fusion writes it (above), llama2-13b +1.1-1.5 % step, mlp-only +1.1-2.8 %.
 * - mixtral-8x7b fsdp: the two forms keep the experts' dispatched tokens differently: one
 *   gathers them (replicated, 0.31 GiB a layer, which at 256 tokens a chip moves less than
 *   gathering the experts' weights), the other keeps them split by the batch and gathers the
 *   weights instead; the propagation settles on each from its own passes (step +7-12 %; memory
 *   -1.6 to -2.9 % on v5p, -8.7 % on H100 without remat, where the scanned backward loop also
 *   keeps two saved stacks resharded).
 * - under remat full, the recomputed forward repeats its collectives as they were exposed in
 *   the forward pass, so a reshard only the scanned layer makes counts twice (mlp-only fsdp+tp:
 *   the input's reshard, which the unrolled chain makes once before its first layer, +6-8 %).
 * - a matmul's reduce-scatter or all-reduce is exposed where the runtime decomposes no matmul
 *   (XLA's default on GPUs and TPUs: hardware_rates.c), so where the two forms' propagation
 *   puts a reshard or a reduction differently the link it waits on shows: llama2-13b fsdp+tp
 *   on H100 +9-12 % (its propagation, gathering activations into matmuls only where they are
 *   hidden, settles the two forms on different layouts), mlp-only fsdp+tp +3.6-4.2 %.
 * - a scanned body's weight slices are ready when the stacked weights are, whatever the trip
 *   (their gathers prefetched across trips, XLA's collective pipeliner), where the unrolled
 *   layers convert each weight on the stream before gathering it: the scanned step comes out
 *   1.1-1.6 % faster for llama2-13b fsdp+tp and mlp-only fsdp on v5p.
 * Memory agrees within 1 % elsewhere since the scanned loops' stacks count at their live size
 * (evaluate_memory.c: the slots filled so far, the slots not yet read), a stack remat drops is
 * never filled, and a loop's state that arrives in another sharding is a copy of its own; step
 * time since a stack's write waits for the collective that makes it only in the next trip
 * (XLA's collective pipeliner, evaluate_sim.h) and a trip is one layer to prefetch by. */
static const known_gap known[] = {
	{ "llama2-13b", "v5p", "dp", SHS_REMAT_NONE, 0.015, 0.010 }, /* +1.22 +0.00 */
	{ "llama2-13b", "v5p", "dp", SHS_REMAT_FULL, 0.015, 0.010 }, /* +1.08 +0.00 */
	{ "llama2-13b", "v5p", "fsdp+tp", SHS_REMAT_NONE, 0.015, 0.010 }, /* -1.11 +0.00 */
	{ "llama2-13b", "v5p", "fsdp+tp", SHS_REMAT_FULL, 0.015, 0.010 }, /* -1.25 +0.00 */
	{ "llama2-13b", "h100", "dp", SHS_REMAT_NONE, 0.020, 0.010 }, /* +1.53 +0.00 */
	{ "llama2-13b", "h100", "dp", SHS_REMAT_FULL, 0.015, 0.010 }, /* +1.18 +0.00 */
	{ "llama2-13b", "h100", "fsdp+tp", SHS_REMAT_NONE, 0.030, 0.010 }, /* +2.94 +0.00 */
	{ "llama2-13b", "h100", "fsdp+tp", SHS_REMAT_FULL, 0.020, 0.010 }, /* +1.87 +0.00 */
	{ "llama3-8b", "h100", "fsdp+tp", SHS_REMAT_NONE, 0.015, 0.010 }, /* +1.48 +0.00 */
	{ "gpt3-175b", "h100", "fsdp+tp", SHS_REMAT_NONE, 0.015, 0.010 }, /* +1.38 +0.00 */
	{ "mixtral-8x7b", "v5p", "fsdp", SHS_REMAT_NONE, 0.025, 0.010 }, /* +2.11 +0.00 */
	{ "mixtral-8x7b", "h100", "fsdp", SHS_REMAT_NONE, 0.030, 0.010 }, /* +2.75 +0.00 */
	{ "mixtral-8x7b", "h100", "fsdp+tp", SHS_REMAT_NONE, 0.020, 0.010 }, /* +1.67 +0.00 */
	{ "mlp-only", "v5p", "dp", SHS_REMAT_NONE, 0.030, 0.010 }, /* +2.51 +0.00 */
	{ "mlp-only", "v5p", "dp", SHS_REMAT_FULL, 0.020, 0.010 }, /* +1.60 +0.00 */
	{ "mlp-only", "v5p", "fsdp", SHS_REMAT_FULL, 0.020, 0.010 }, /* -1.50 +0.00 */
	{ "mlp-only", "v5p", "fsdp+tp", SHS_REMAT_NONE, 0.015, 0.010 }, /* -1.43 +0.00 */
	{ "mlp-only", "v5p", "fsdp+tp", SHS_REMAT_FULL, 0.020, 0.010 }, /* +1.69 +0.00 */
	{ "mlp-only", "h100", "dp", SHS_REMAT_NONE, 0.030, 0.010 }, /* +2.80 +0.00 */
	{ "mlp-only", "h100", "dp", SHS_REMAT_FULL, 0.015, 0.010 }, /* +1.07 +0.00 */
	{ "mlp-only", "h100", "fsdp", SHS_REMAT_NONE, 0.030, 0.010 }, /* +2.50 +0.00 */
	{ "mlp-only", "h100", "fsdp+tp", SHS_REMAT_FULL, 0.050, 0.010 }, /* +4.64 +0.00 */
};

/* The preset at small sizes (2 layers; 256-token sequences, 64 of them; mlp-only 65536 tokens
 * of d_model 2048: 1024 per v5p chip), scanned or unrolled. */
static shs_module *small_model(const char *preset, bool scan)
{
	static const char *const transformer[] = { "layers", "2", "seq", "256", "batch", "64",
						   "scan", "false", NULL };
	static const char *const mlp[] = { "layers", "2", "batch", "65536", "d_model", "2048",
					   "d_ff", "8192", "scan", "false", NULL };
	const char *set[16];
	size_t n = 0;

	for (const char *const *s = strcmp(preset, "mlp-only") ? transformer : mlp; *s; s++)
		set[n++] = *s;
	set[n - 1] = scan ? "true" : "false";
	set[n] = NULL;
	return shs_test_generate(preset, set);
}

/* Step time and peak memory of module m under plan (on mesh) on cluster cl, per remat. */
static void evaluate_both(shs_host *h, const shs_module *m, const shs_cluster *cl,
			  const char *mesh, const char *plan, uint32_t n_remat,
			  const shs_remat *remat, double *step, double *memory)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_plan *p = NULL;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_chip(&cl->hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, plan, &e), &e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	for (uint32_t k = 0; k < n_remat; k++) {
		shs_eval_options o = { .remat = remat[k] };
		shs_eval ev;
		SHS_ASSERT_OK(shs_evaluate(m, p, cl, &o, &ev, &e), &e);
		step[k] = ev.step_time_s;
		memory[k] = ev.memory_bytes;
		shs_eval_free(&ev);
	}
	shs_plan_free(p);
	free(r);
}

static const known_gap *known_of(const char *preset, const char *hardware, const char *plan,
				 shs_remat remat)
{
	for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
		if (!strcmp(known[k].preset, preset) && !strcmp(known[k].hardware, hardware) &&
		    !strcmp(known[k].plan, plan) && known[k].remat == remat)
			return &known[k];
	return NULL;
}

/* Asserts one case: within FORMS_TOL, or within its known gap; prints what fails. */
static void check_case(const char *preset, const char *hardware, const char *plan,
		       shs_remat remat, double step_s, double step_u, double mem_s, double mem_u)
{
	const known_gap *g = known_of(preset, hardware, plan, remat);
	double step_gap = step_s / step_u - 1, mem_gap = mem_s / mem_u - 1;
	double step_tol = g && g->step > FORMS_TOL ? g->step : FORMS_TOL;
	double mem_tol = g && g->memory > FORMS_TOL ? g->memory : FORMS_TOL;
	bool ok = fabs(step_gap) <= step_tol && fabs(mem_gap) <= mem_tol;

	if (!ok)
		fprintf(stderr, "\n  %s %s %s remat %s: step %.4g s scanned, %.4g s unrolled "
			"(%+.2f %%, allowed %.1f %%); memory %.4g, %.4g B (%+.2f %%, allowed "
			"%.1f %%)", preset, hardware, plan, shs_remat_name(remat), step_s, step_u,
			100 * step_gap, 100 * step_tol, mem_s, mem_u, 100 * mem_gap,
			100 * mem_tol);
	if (g && fabs(step_gap) <= FORMS_TOL && fabs(mem_gap) <= FORMS_TOL)
		fprintf(stderr, "\n  %s %s %s remat %s: now within 1 %% (step %+.2f %%, memory "
			"%+.2f %%): take it out of known[]", preset, hardware, plan,
			shs_remat_name(remat), 100 * step_gap, 100 * mem_gap);
	if (getenv("FORMS_ALL")) fprintf(stderr, "\nALL %s %s %s %s %+.2f %+.2f", preset, hardware, plan, shs_remat_name(remat), 100*step_gap, 100*mem_gap);
	CU_ASSERT_TRUE(ok);
}

static void presets_agree_scanned_and_unrolled(void)
{
	static const shs_remat remat[2] = { SHS_REMAT_NONE, SHS_REMAT_FULL };
	uint32_t n_remat = sanitized ? 1 : 2;
	size_t n_clusters = sanitized ? 1 : sizeof(clusters) / sizeof(clusters[0]);
	shs_host *h = shs_test_host();
	shs_hw_catalog cat;

	shs_hw_catalog_builtin(&cat);
	for (size_t k = 0; k < sizeof(presets) / sizeof(presets[0]); k++) {
		shs_module *unrolled = small_model(presets[k], false);
		shs_module *scanned = small_model(presets[k], true);
		for (size_t c = 0; c < n_clusters; c++) {
			for (uint32_t pl = 0; pl < 3; pl++) {
				shs_cluster_spec spec = { .hardware = clusters[c].hardware,
							  .devices = clusters[c].devices,
							  .slices = 1, .mesh = clusters[c].mesh[pl] };
				double ss[2], su[2], ms[2], mu[2];
				shs_cluster cl;
				shs_err e = { 0 };
				SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &cl, &e), &e);
				evaluate_both(h, scanned, &cl, clusters[c].mesh[pl], plans[pl],
					      n_remat, remat, ss, ms);
				evaluate_both(h, unrolled, &cl, clusters[c].mesh[pl], plans[pl],
					      n_remat, remat, su, mu);
				for (uint32_t r = 0; r < n_remat; r++)
					check_case(presets[k], clusters[c].hardware, plans[pl],
						   remat[r], ss[r], su[r], ms[r], mu[r]);
			}
		}
		shs_module_free(unrolled);
		shs_module_free(scanned);
	}
	shs_host_free(h);
}

/* XLA's collective pipeliner: a scanned backward loop's gradient reduce-scatters (FSDP) finish
 * under the next trip, so only the last trip's is exposed, as only the last unrolled layer's is
 * (mlp-only on 64 v5p chips under fsdp: each costs as long as the trip's compute). */
static void gradient_reductions_overlap_the_next_trip(void)
{
	shs_module *m = small_model("mlp-only", true);
	shs_host *h = shs_test_host();
	shs_cluster_spec spec = { .hardware = "v5p", .devices = 64, .slices = 1, .mesh = "fsdp=64" };
	shs_eval_options o = { .remat = SHS_REMAT_NONE };
	shs_hw_catalog cat;
	shs_cluster cl;
	shs_plan *p = NULL;
	shs_eval ev;
	uint32_t looped = 0;

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &spec, m, "fsdp", &o, &cl, &p, &ev);
	for (uint32_t k = 0; k < ev.n_colls; k++) {
		const shs_eval_coll *c = &ev.colls[k];
		if (c->kind != SHS_PCOLL_REDUCE_SCATTER || c->count != 2)
			continue;
		looped++;
		/* the first trip's under the second; the last trip's has nothing after it */
		CU_ASSERT_TRUE(c->exposed_s <= 0.5 * c->time_s * (1 + 1e-9));
	}
	CU_ASSERT_TRUE(looped >= 2);
	shs_eval_free(&ev);
	shs_plan_free(p);
	shs_host_free(h);
	shs_module_free(m);
}

CU_TestInfo forms_tests[] = {
	{ "every preset: scanned and unrolled agree (1 %, or a known gap)",
	  presets_agree_scanned_and_unrolled },
	{ "a scanned loop's gradient reduce-scatters run under the next trip",
	  gradient_reductions_overlap_the_next_trip },
	CU_TEST_INFO_NULL,
};
