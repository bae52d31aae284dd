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

/* Why, by group (measured at 2 layers; the gaps in the comments, scanned against unrolled, in %).
 * The two forms are planned alike: every layer instruction gets the same sharding in both
 * (checked for every case here). What is left is where XLA runs the two programs differently:
 * - a loop's trip is one scheduled computation: work after the loop cannot run under its last
 *   trip (the embedding gradient's gather waits for the whole last backward trip, where the
 *   unrolled step runs it under layer 0's weight-gradient matmuls: llama2-13b dp), and a trip's
 *   last collective (the carried activation's reduce-scatter, the next trip's gather of it)
 *   runs under nothing of the next trip, where an unrolled layer's runs under the next
 *   layer's independent work; only what XLA's collective pipeliner moves crosses a trip (a
 *   stack's slot write and the reduction that makes it, forward; the all-gather of a slice of a
 *   stacked weight or of a saved activation's stack, backward): mlp-only fsdp+tp, whose
 *   layers are nothing but such collectives and two matmuls, llama2-13b, llama3-8b and
 *   mixtral fsdp+tp on H100.
 * - the scanned body copies each value it saves into its stack (a dynamic-update-slice: read
 *   the update, write the slot: the issue's own cost of one), and each layer's gradient where no
 *   fusion writes it in place (a matmul's or a collective's result), which the unrolled layers
 *   keep where they made them: remat none on dp and fsdp (mixtral's expert activations,
 *   mlp-only's gradients), larger on H100, whose HBM is slower against its FLOP/s.
 * - memory, mlp-only only: the scanned loop copies the step's batch, its first layer's input,
 *   into slot 0 of the stack of saved inputs while the batch parameter (not donated) still
 *   holds it; the unrolled first layer saves the parameter itself (a call giving its parameter
 *   back is no copy: XLA inlines it). mlp-only's activations are little more than that input,
 *   so the copy shows (+0.7 to +7.8 %).
 * Every gap left is the scanned step costing more; the gradient norm's all-reduces, one per
 * weight and layer unrolled, are combined as XLA's AllReduceCombiner combines them
 * (evaluate_combine.c), and cost both forms one latency. */
static const known_gap known[] = {
	{ "llama2-13b", "v5p", "dp", SHS_REMAT_NONE, 0.015, 0.010 }, /* +1.22 +0.00 */
	{ "llama2-13b", "v5p", "dp", SHS_REMAT_FULL, 0.015, 0.010 }, /* +1.08 +0.00 */
	{ "llama2-13b", "h100", "dp", SHS_REMAT_NONE, 0.020, 0.010 }, /* +1.53 +0.00 */
	{ "llama2-13b", "h100", "dp", SHS_REMAT_FULL, 0.015, 0.010 }, /* +1.18 +0.00 */
	{ "llama2-13b", "h100", "fsdp+tp", SHS_REMAT_NONE, 0.020, 0.010 }, /* +1.90 +0.00 */
	{ "llama2-13b", "h100", "fsdp+tp", SHS_REMAT_FULL, 0.015, 0.010 }, /* +1.25 +0.00 */
	{ "llama3-8b", "h100", "fsdp+tp", SHS_REMAT_NONE, 0.015, 0.010 }, /* +1.30 +0.00 */
	{ "mixtral-8x7b", "v5p", "fsdp", SHS_REMAT_NONE, 0.035, 0.010 }, /* +3.03 -0.00 */
	{ "mixtral-8x7b", "h100", "fsdp", SHS_REMAT_NONE, 0.030, 0.010 }, /* +2.75 -0.00 */
	{ "mixtral-8x7b", "h100", "fsdp+tp", SHS_REMAT_NONE, 0.020, 0.010 }, /* +1.57 +0.00 */
	{ "mlp-only", "v5p", "dp", SHS_REMAT_NONE, 0.030, 0.010 }, /* +2.51 +0.71 */
	{ "mlp-only", "v5p", "dp", SHS_REMAT_FULL, 0.020, 0.010 }, /* +1.60 +0.74 */
	{ "mlp-only", "v5p", "fsdp", SHS_REMAT_NONE, 0.020, 0.040 }, /* +1.56 +3.74 */
	{ "mlp-only", "v5p", "fsdp", SHS_REMAT_FULL, 0.010, 0.055 }, /* +0.30 +5.33 */
	{ "mlp-only", "v5p", "fsdp+tp", SHS_REMAT_NONE, 0.060, 0.045 }, /* +5.70 +4.04 */
	{ "mlp-only", "v5p", "fsdp+tp", SHS_REMAT_FULL, 0.040, 0.060 }, /* +3.56 +5.97 */
	{ "mlp-only", "h100", "dp", SHS_REMAT_NONE, 0.030, 0.025 }, /* +2.80 +2.22 */
	{ "mlp-only", "h100", "dp", SHS_REMAT_FULL, 0.015, 0.030 }, /* +1.07 +2.50 */
	{ "mlp-only", "h100", "fsdp", SHS_REMAT_NONE, 0.030, 0.050 }, /* +2.50 +4.82 */
	{ "mlp-only", "h100", "fsdp", SHS_REMAT_FULL, 0.010, 0.080 }, /* +0.48 +7.84 */
	{ "mlp-only", "h100", "fsdp+tp", SHS_REMAT_NONE, 0.070, 0.040 }, /* +6.97 +3.51 */
	{ "mlp-only", "h100", "fsdp+tp", SHS_REMAT_FULL, 0.045, 0.050 }, /* +4.08 +4.88 */
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

/* One layer instruction's sharding in a plan: the instruction by its op_name with the layer's
 * index dropped (layers_1/mlp/wi/dot is layers/mlp/wi/dot), its opcode and its dims. */
typedef struct layer_op {
	char key[256];
	shs_pspec spec;
} layer_op;

/* Whether in is layer work the two forms both have: an array op of a layer (not the optimizer's
 * update of the stacked weights), not the loop's or the calls' plumbing. */
static bool layer_work(const shs_instr *in)
{
	static const shs_opcode plumbing[] = {
		SHS_OP_PARAMETER, SHS_OP_GET_TUPLE_ELEMENT, SHS_OP_TUPLE, SHS_OP_DYNAMIC_SLICE,
		SHS_OP_DYNAMIC_UPDATE_SLICE, SHS_OP_RESHAPE, SHS_OP_CONSTANT, SHS_OP_IOTA,
		SHS_OP_WHILE, SHS_OP_CALL, SHS_OP_COMPARE, SHS_OP_BROADCAST
	};
	const char *name = in->metadata ? in->metadata->op_name : NULL;

	if (!name || !strstr(name, "/layers") || strstr(name, "optimizer") ||
	    in->shape.type == SHS_TUPLE || !in->shape.rank)
		return false;
	for (size_t k = 0; k < sizeof(plumbing) / sizeof(plumbing[0]); k++)
		if (in->op == plumbing[k])
			return false;
	return true;
}

/* The layer instructions' shardings of plan p of module m, each distinct (key, spec) once, into
 * a malloc'ed array of *n (the caller frees). */
static layer_op *layer_ops(const shs_module *m, const shs_plan *p, size_t *n)
{
	layer_op *v = NULL;
	size_t cap = 0;

	*n = 0;
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const shs_instr *in = m->comps[c]->instrs[i];
			const shs_decision *d = &p->d[c][i];
			layer_op op = { 0 };
			const char *name, *at;
			size_t len;
			bool seen = false;
			if (!layer_work(in) || !d->set || d->n_leaves != 1)
				continue;
			name = in->metadata->op_name;
			/* layers_12/... -> layers/... */
			at = strstr(name, "/layers_");
			len = at ? (size_t)(at - name) + strlen("/layers") : strlen(name);
			snprintf(op.key, sizeof(op.key), "%.*s%s %s", (int)len, name,
				 at ? at + strspn(at + strlen("/layers_"), "0123456789") +
					      strlen("/layers_") : "",
				 shs_opcode_name(in->op));
			for (uint32_t k = 0; k < in->shape.rank; k++)
				snprintf(op.key + strlen(op.key), sizeof(op.key) - strlen(op.key),
					 ",%lld", (long long)in->shape.dims[k]);
			op.spec = d->leaves[0];
			for (size_t k = 0; k < *n && !seen; k++)
				seen = !strcmp(v[k].key, op.key) && shs_spec_equal(&v[k].spec, &op.spec);
			if (seen)
				continue;
			if (*n == cap) {
				layer_op *grown = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));
				CU_ASSERT_PTR_NOT_NULL_FATAL(grown);
				v = grown;
			}
			v[(*n)++] = op;
		}
	return v;
}

/* How many of a's layer instructions that b also has b shards otherwise (a sharding of a's
 * that none of b's instructions of the same key has, or the reverse); names the first, and
 * counts in *both the shardings whose key both have. */
static size_t plans_differ(const layer_op *a, size_t na, const layer_op *b, size_t nb,
			   char *first, size_t cap, size_t *both)
{
	size_t differ = 0;

	*both = 0;
	for (int side = 0; side < 2; side++) {
		const layer_op *x = side ? b : a, *y = side ? a : b;
		size_t nx = side ? nb : na, ny = side ? na : nb;
		for (size_t k = 0; k < nx; k++) {
			bool key = false, same = false;
			for (size_t j = 0; j < ny && !same; j++)
				if (!strcmp(x[k].key, y[j].key)) {
					key = true;
					same = shs_spec_equal(&x[k].spec, &y[j].spec);
				}
			*both += key;
			if (key && !same && !differ++)
				snprintf(first, cap, "%s", x[k].key);
		}
	}
	return differ;
}

/* Step time and peak memory of module m under plan (on mesh) on cluster cl, per remat; the
 * layer instructions' shardings into *ops (malloc'ed, *n_ops of them). */
static void evaluate_both(shs_host *h, const shs_module *m, const shs_cluster *cl,
			  const char *mesh, const char *plan, uint32_t n_remat,
			  const shs_remat *remat, double *step, double *memory, layer_op **ops,
			  size_t *n_ops)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_plan *p = NULL;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_chip(&cl->hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, plan, &e), &e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	*ops = layer_ops(m, p, n_ops);
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
				layer_op *os, *ou;
				size_t ns, nu, differ, both;
				char first[256] = "";
				shs_cluster cl;
				shs_err e = { 0 };
				SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &cl, &e), &e);
				evaluate_both(h, scanned, &cl, clusters[c].mesh[pl], plans[pl],
					      n_remat, remat, ss, ms, &os, &ns);
				evaluate_both(h, unrolled, &cl, clusters[c].mesh[pl], plans[pl],
					      n_remat, remat, su, mu, &ou, &nu);
				/* one computation, one plan: every layer instruction alike */
				differ = plans_differ(os, ns, ou, nu, first, sizeof(first), &both);
				if (differ)
					fprintf(stderr, "\n  %s %s %s: %zu layer instructions sharded "
						"otherwise scanned and unrolled (first: %s)",
						presets[k], clusters[c].hardware, plans[pl], differ,
						first);
				CU_ASSERT_TRUE(both >= 8 && differ == 0);
				free(os);
				free(ou);
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
	{ "every preset: scanned and unrolled planned alike, agreeing within 1 % (or a known gap)",
	  presets_agree_scanned_and_unrolled },
	{ "a scanned loop's gradient reduce-scatters run under the next trip",
	  gradient_reductions_overlap_the_next_trip },
	CU_TEST_INFO_NULL,
};
