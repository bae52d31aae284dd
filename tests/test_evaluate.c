/* The evaluator against the book's regimes on the mlp-only model, and its memory totals. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate.h"
#include "gen.h"
#include "host.h"
#include "test_util.h"

/* Relative tolerance of the step time against the book's max(T_math, T_comms). */
static const double BOOK_TOL = 0.10;

typedef shs_test_eval setup;

/* The book's layouts of the MLP model as plan files (rules over the generator's parameter
 * paths; activations follow by propagation). FSDP: In[B_X, D] W_in[D_X, F] W_out[F, D_X];
 * FSDP + TP: In[B_X, D_Y] W_in[D_X, F_Y] W_out[F_Y, D_X]; TP (one replica per data index):
 * In[B, D_Y] W_in[D, F_Y] W_out[F_Y, D]. */
static const char book_fsdp_plan[] =
	"{\"base\": \"dp\", \"rules\": [{\"match\": \"*mlp/wi*\", \"spec\": [\"fsdp\", null]},\n"
	" {\"match\": \"*mlp/wo*\", \"spec\": [null, \"fsdp\"]},\n"
	" {\"match\": \"*batch*\", \"spec\": [\"fsdp\", null]}]}\n";
static const char book_mixed_plan[] =
	"{\"base\": \"dp\", \"rules\": [{\"match\": \"*mlp/wi*\", "
	"\"spec\": [\"fsdp\", \"tensor\"]},\n"
	" {\"match\": \"*mlp/wo*\", \"spec\": [\"tensor\", \"fsdp\"]},\n"
	" {\"match\": \"*batch*\", \"spec\": [\"fsdp\", \"tensor\"]}]}\n";
static const char book_tp_plan[] =
	"{\"base\": \"dp\", \"rules\": [{\"match\": \"*mlp/wi*\", \"spec\": [null, \"tensor\"]},\n"
	" {\"match\": \"*mlp/wo*\", \"spec\": [\"tensor\", null]},\n"
	" {\"match\": \"*batch*\", \"spec\": [\"data\", \"tensor\"]}]}\n";

/* Generates mlp-only (2 layers unrolled, d_model D, d_ff F, tokens), lays mesh on a v5p
 * topology, makes plan (a named plan, or the text of a plan file) and evaluates it. */
static setup *evaluate_mlp(int64_t d, int64_t f, int64_t tokens, const char *topology,
			   const char *mesh, const char *plan)
{
	setup *s = calloc(1, sizeof(*s));
	shs_gen_config g = shs_test_preset("mlp-only");
	shs_cluster_spec spec = { .hardware = "v5p", .topology = topology, .slices = 1,
				  .mesh = mesh };
	shs_plan_request *r = calloc(1, sizeof(*r));
	char buf[64], meshtext[256];
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	snprintf(buf, sizeof(buf), "%lld", (long long)d);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "d_model", buf, &e), &e);
	snprintf(buf, sizeof(buf), "%lld", (long long)f);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "d_ff", buf, &e), &e);
	snprintf(buf, sizeof(buf), "%lld", (long long)tokens);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "batch", buf, &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "layers", "2", &e), &e);
	SHS_ASSERT_OK(shs_gen_module(&g, &s->m, NULL, &e), &e);
	shs_test_book_catalog(&s->cat);
	SHS_ASSERT_OK(shs_cluster_make(&s->cat, &spec, &s->cluster, &e), &e);
	shs_hw_chip(&s->cluster.hw, &r->chip);
	shs_mesh_text(&s->cluster.mesh, meshtext, sizeof(meshtext));
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, meshtext, &e), &e);
	if (plan[0] != '{') {
		SHS_ASSERT_OK(shs_plan_parse_kind(r, plan, &e), &e);
	} else {
		const char *path = shs_test_tmp_path("evaluate-plan.json");
		FILE *out = fopen(path, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(out);
		fputs(plan, out);
		fclose(out);
		SHS_ASSERT_OK(shs_plan_load_json(r, path, &e), &e);
	}
	s->h = shs_host_new(NULL, NULL);
	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(s->h, SHS_STRATEGY_DIR, &e) > 0);
	SHS_ASSERT_OK(shs_plan_make(s->h, s->m, r, &s->p, &e), &e);
	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->cluster, NULL, &s->ev, &e), &e);
	free(r);
	return s;
}

static void free_setup(setup *s)
{
	shs_test_eval_free(s);
}

/* The book's per-layer FSDP step on N chips with the weights gathered over M physical axes:
 * T_math = 12 B D F / (N C) (forward 4BDF, backward 8BDF); T_comms = 12 D F / (M W) (all-gather
 * both weights forward and backward, reduce-scatter both gradients; bf16: 2 bytes). Times two
 * layers. */
static double book_fsdp(const shs_hardware *hw, double d, double f, double tokens, double n,
			double m)
{
	double math = 12 * tokens * d * f / (n * hw->flops[SHS_HW_BF16]);
	double comms = 12 * d * f / (m * hw->ici_bw);

	return 2 * (math > comms ? math : comms);
}

/* The step time of the book's layout (a plan file) is the book's within BOOK_TOL; a named
 * plan's propagation may find a faster layout than the book's, never a slower one. */
static void assert_near_book(double got, double book, const char *plan)
{
	double ratio = got / book;
	bool book_layout = plan[0] == '{';
	bool ok = ratio <= 1 + BOOK_TOL && (!book_layout || ratio >= 1 - BOOK_TOL);

	if (!ok)
		fprintf(stderr, "\n  step %.4g s, book %.4g s (ratio %.3f)\n", got, book, ratio);
	CU_ASSERT_TRUE(ok);
}

static void test_fsdp_regimes(void)
{
	static const struct {
		int64_t per_chip;
		const char *bound;
	} cases[] = { { 1200, "compute" }, { 500, "communication" } };

	static const char *const plans[] = { "fsdp", book_fsdp_plan };

	for (size_t n = 0; n < 2 * sizeof(cases) / sizeof(cases[0]); n++) {
		size_t k = n / 2;
		setup *s = evaluate_mlp(8192, 32768, cases[k].per_chip * 64, "4x4x4", "fsdp=64@xyz",
					plans[n % 2]);
		double sites = 0;
		SHS_ASSERT_STR_EQ(s->ev.bound, cases[k].bound);
		/* at 500 tokens per chip the named plan keeps F sharded and gathers the
		 * activations instead of the weights (B < F: five transfers of B D beat the
		 * book's six of D F) */
		assert_near_book(s->ev.step_time_s,
				 book_fsdp(&s->cluster.hw, 8192, 32768,
					   cases[k].per_chip * 64.0, 64, 3), plans[n % 2]);
		/* the sites' exposure is the stream's waits: at most the exposed time, and most
		 * of it when communication dominates */
		for (uint32_t j = 0; j < s->ev.n_colls; j++)
			sites += s->ev.colls[j].exposed_s;
		CU_ASSERT_TRUE(sites <= s->ev.exposed_comm_s * (1 + 1e-9) + 1e-12);
		if (!strcmp(cases[k].bound, "communication"))
			CU_ASSERT_TRUE(sites >= 0.5 * s->ev.exposed_comm_s);
		free_setup(s);
	}
}

static void test_mixed_beats_fsdp_at_400(void)
{
	static const char *const mixed_plans[] = { "fsdp+tp", book_mixed_plan };
	static const char *const fsdp_plans[] = { "fsdp", book_fsdp_plan };

	for (int k = 0; k < 2; k++) {
		setup *mixed = evaluate_mlp(8192, 32768, 400 * 64, "4x4x4", "fsdp=16@xy,tensor=4@z",
					    mixed_plans[k]);
		setup *fsdp = evaluate_mlp(8192, 32768, 400 * 64, "4x4x4", "fsdp=64@xyz",
					   fsdp_plans[k]);
		SHS_ASSERT_STR_EQ(mixed->ev.bound, "compute");
		SHS_ASSERT_STR_EQ(fsdp->ev.bound, "communication");
		CU_ASSERT_TRUE(mixed->ev.step_time_s < fsdp->ev.step_time_s);
		free_setup(mixed);
		free_setup(fsdp);
	}
}

/* TP over the 4 chips of the z axis (one data-parallel group per xy position): the book's
 * forward T_math = 4 B D F / (Y C), T_comms = 2 * 2 B D / W (all-gather In, reduce-scatter Out,
 * bf16), compute-bound iff F > Y C / W; the backward pass does twice the math and the same
 * communication. Each pass takes the max of its two. The book leaves out the loss and the
 * optimizer, whose cost does not grow with the batch (Adam on every weight, the gradients'
 * all-gathers over data): the batch, 8192 tokens per chip, is one where the layers dominate
 * the step as the book assumes (the regime itself does not depend on it). */
static void test_tp_regimes(void)
{
	static const struct {
		int64_t f;
		const char *bound;
	} cases[] = { { 8000, "communication" }, { 16384, "compute" } };

	static const char *const plans[] = { "tp", book_tp_plan };

	for (size_t n = 0; n < 2 * sizeof(cases) / sizeof(cases[0]); n++) {
		size_t k = n / 2;
		double tokens = 16 * 32768, b = tokens / 16, d = 8192, f = (double)cases[k].f;
		setup *s = evaluate_mlp(8192, cases[k].f, (int64_t)tokens, "4x4x4",
					"data=16@xy,tensor=4@z", plans[n % 2]);
		double math = 4 * b * d * f / (4 * s->cluster.hw.flops[SHS_HW_BF16]);
		double comms = 4 * b * d / s->cluster.hw.ici_bw;
		double fwd = math > comms ? math : comms, bwd = 2 * math > comms ? 2 * math : comms;
		SHS_ASSERT_STR_EQ(s->ev.bound, cases[k].bound);
		assert_near_book(s->ev.step_time_s, 2 * (fwd + bwd), plans[n % 2]);
		free_setup(s);
	}
}

/* Weights, gradients, mu and nu of every float state parameter at its planned sharding: the
 * closed form of the model state per device (f32-master: 4 bytes each). */
static double closed_form_state(const shs_module *m, const shs_plan *p)
{
	const shs_computation *c = shs_module_entry(m);
	double total = 0;

	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		const shs_decision *d = &p->d[m->entry][i];
		double elems = 1, shards = 1;
		bool weight;
		if (in->op != SHS_OP_PARAMETER || !in->shape.rank || in->shape.type != SHS_F32)
			continue;
		weight = in->metadata && strstr(in->metadata->op_name, "/params/");
		for (uint32_t k = 0; k < in->shape.rank; k++)
			elems *= (double)in->shape.dims[k];
		for (uint32_t k = 0; d->set && k < d->leaves[0].rank; k++)
			for (uint32_t a = 0; a < d->leaves[0].dims[k].n; a++)
				shards *= (double)p->mesh.sizes[d->leaves[0].dims[k].axes[a]];
		/* a weight counts itself and its gradient; mu and nu count themselves */
		total += elems * 4 * (weight ? 2 : 1) / shards;
	}
	return total;
}

/* A v5p slice and H100 nodes, each with a mesh of three axes: the scanned presets' clusters. */
static const shs_cluster_spec clusters[] = {
	{ .hardware = "v5p", .topology = "8x8x8", .slices = 1, .mesh = "data=2,fsdp=64,tensor=4" },
	{ .hardware = "h100", .devices = 64, .slices = 1, .mesh = "fsdp=8@net,tensor=8@node" },
};

/* Every preset, scanned, under fsdp+tp on a v5p slice and on H100 nodes: the state memory the
 * evaluator reports matches the closed form within 1 %. */
static void test_state_memory_every_preset(void)
{
	const char *const *names = shs_gen_preset_names();
	shs_host *h = shs_host_new(NULL, NULL);
	shs_hw_catalog cat;
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(h, SHS_STRATEGY_DIR, &e) > 0);
	for (int k = 0; names[k]; k++)
		for (size_t j = 0; j < sizeof(clusters) / sizeof(clusters[0]); j++) {
			shs_gen_config g = shs_test_preset(names[k]);
			shs_cluster cl;
			shs_plan_request *r = calloc(1, sizeof(*r));
			shs_module *m = NULL;
			shs_plan *p = NULL;
			shs_eval ev;
			char mesh[256];
			double want, got;
			CU_ASSERT_PTR_NOT_NULL_FATAL(r);
			SHS_ASSERT_OK(shs_gen_config_set(&g, "scan", "true", &e), &e);
			SHS_ASSERT_OK(shs_gen_config_set(&g, "dtype", "f32-master", &e), &e);
			SHS_ASSERT_OK(shs_gen_module(&g, &m, NULL, &e), &e);
			SHS_ASSERT_OK(shs_cluster_make(&cat, &clusters[j], &cl, &e), &e);
			shs_hw_chip(&cl.hw, &r->chip);
			shs_mesh_text(&cl.mesh, mesh, sizeof(mesh));
			SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
			SHS_ASSERT_OK(shs_plan_parse_kind(r, "fsdp+tp", &e), &e);
			SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
			SHS_ASSERT_OK(shs_evaluate(m, p, &cl, NULL, &ev, &e), &e);
			want = closed_form_state(m, p);
			got = ev.params_bytes + ev.grads_bytes + ev.optimizer_bytes;
			if (fabs(got / want - 1) > 0.01)
				fprintf(stderr, "\n  %s on %s: %.6g bytes, closed form %.6g\n",
					names[k], clusters[j].hardware, got, want);
			CU_ASSERT_TRUE(want > 0 && fabs(got / want - 1) <= 0.01);
			CU_ASSERT_TRUE(ev.step_time_s > 0 && ev.memory_bytes >= got / 2);
			shs_eval_free(&ev);
			shs_plan_free(p);
			shs_module_free(m);
			free(r);
		}
	shs_host_free(h);
}

/* Whether two figures agree to within 1e-9 of the larger (and 1e-12 s). */
static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-12 + 1e-9 * fmax(fabs(a), fabs(b));
}

/* a and b, the same plan evaluated with and without the loop shortcut, agree on the step
 * time, the exposure per axis and at every site. */
static void assert_same_schedule(const shs_eval *a, const shs_eval *b, uint32_t n_axes)
{
	CU_ASSERT_TRUE(near(a->step_time_s, b->step_time_s));
	CU_ASSERT_TRUE(near(a->exposed_comm_s, b->exposed_comm_s));
	for (uint32_t x = 0; x < n_axes; x++)
		CU_ASSERT_TRUE(near(a->exposed_by_axis[x], b->exposed_by_axis[x]));
	SHS_ASSERT_INT_EQ(a->n_colls, b->n_colls);
	for (uint32_t k = 0; k < a->n_colls && k < b->n_colls; k++)
		/* a site's exposure is a difference of times on the step's timeline: rounding
		 * is relative to the step */
		CU_ASSERT_TRUE(fabs(a->colls[k].exposed_s - b->colls[k].exposed_s) <=
			       1e-12 + 1e-9 * fmax(a->step_time_s, b->step_time_s));
	if (!near(a->step_time_s, b->step_time_s))
		fprintf(stderr, "\n  step %.15g s with the shortcut, %.15g s trip by trip\n",
			a->step_time_s, b->step_time_s);
}

/* Every preset, scanned, under fsdp and fsdp+tp on a v5p slice and on H100 nodes, prefetching
 * one and three layers ahead: the loops' shortcut (the remaining trips at once, once the
 * schedule repeats itself) takes and gives the same schedule as simulating every trip. */
static void test_loop_shortcut(void)
{
	static const char *const plans[] = { "fsdp", "fsdp+tp" };
	const char *const *names = shs_gen_preset_names();
	shs_host *h = shs_host_new(NULL, NULL);
	shs_hw_catalog cat;
	int64_t skipped = 0;
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(h, SHS_STRATEGY_DIR, &e) > 0);
	for (int k = 0; names[k]; k++) {
		shs_gen_config g = shs_test_preset(names[k]);
		shs_module *m = NULL;
		SHS_ASSERT_OK(shs_gen_config_set(&g, "scan", "true", &e), &e);
		SHS_ASSERT_OK(shs_gen_module(&g, &m, NULL, &e), &e);
		for (size_t j = 0; j < 2 * sizeof(clusters) / sizeof(clusters[0]); j++) {
			shs_plan_request *r = calloc(1, sizeof(*r));
			shs_eval_options o = { .prefetch_depth = 1 + 2 * (uint32_t)(j % 2) };
			shs_eval_options every = o;
			shs_eval fast, slow;
			shs_plan *p = NULL;
			shs_cluster cl;
			char mesh[256];
			CU_ASSERT_PTR_NOT_NULL_FATAL(r);
			every.every_trip = true;
			SHS_ASSERT_OK(shs_cluster_make(&cat, &clusters[j / 2], &cl, &e), &e);
			shs_hw_chip(&cl.hw, &r->chip);
			shs_mesh_text(&cl.mesh, mesh, sizeof(mesh));
			SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
			SHS_ASSERT_OK(shs_plan_parse_kind(r, plans[(k + j) % 2], &e), &e);
			SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
			SHS_ASSERT_OK(shs_evaluate(m, p, &cl, &o, &fast, &e), &e);
			SHS_ASSERT_OK(shs_evaluate(m, p, &cl, &every, &slow, &e), &e);
			assert_same_schedule(&fast, &slow, cl.mesh.n_axes);
			SHS_ASSERT_INT_EQ(slow.trips_skipped, 0);
			skipped += fast.trips_skipped;
			shs_eval_free(&fast);
			shs_eval_free(&slow);
			shs_plan_free(p);
			free(r);
		}
		shs_module_free(m);
	}
	/* the shortcut is taken: most of the layers' trips are not simulated one by one */
	CU_ASSERT_TRUE(skipped > 0);
	shs_host_free(h);
}

/* Remat on the scanned LLaMA-3 8B step under fsdp+tp on v5p 4x8x8: attention (the softmax
 * dropped) keeps less than none, dots (also the residual and norms dropped) less than
 * attention, full less than dots; full recomputes each forward layer but for what only leaves
 * it (a fifth to a third more FLOPs: the book's 6 -> 8 P T less the MLP's last matmul), dots
 * only the work between the matmuls, attention its scores
 * and softmax. Attention as matmuls (attention=dot): a flash kernel is not a dot, so dots
 * would recompute it, and it keeps no softmax for attention to drop. */
static void test_remat(void)
{
	static const shs_remat policies[] = { SHS_REMAT_NONE, SHS_REMAT_ATTENTION, SHS_REMAT_DOTS,
					      SHS_REMAT_FULL };
	shs_gen_config g = shs_test_preset("llama3-8b");
	shs_cluster_spec spec = { .hardware = "v5p", .topology = "4x8x8", .slices = 1,
				  .mesh = "fsdp=64,tensor=4" };
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_host *h = shs_host_new(NULL, NULL);
	shs_hw_catalog cat;
	shs_cluster cl;
	shs_module *m = NULL;
	shs_plan *p = NULL;
	shs_eval ev[4];
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "scan", "true", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "attention", "dot", &e), &e);
	SHS_ASSERT_OK(shs_gen_module(&g, &m, NULL, &e), &e);
	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &cl, &e), &e);
	shs_hw_chip(&cl.hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, "fsdp=64,tensor=4", &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, "fsdp+tp", &e), &e);
	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(h, SHS_STRATEGY_DIR, &e) > 0);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	for (int k = 0; k < 4; k++) {
		shs_eval_options o = { .remat = policies[k] };
		SHS_ASSERT_OK(shs_evaluate(m, p, &cl, &o, &ev[k], &e), &e);
	}
	CU_ASSERT_EQUAL(ev[0].remat_s, 0);
	CU_ASSERT_TRUE(ev[1].remat_s > 0 && ev[3].remat_s > ev[1].remat_s);
	CU_ASSERT_TRUE(ev[2].remat_s > 0 && ev[3].remat_s > ev[2].remat_s);
	CU_ASSERT_TRUE(ev[0].memory_bytes > ev[1].memory_bytes);
	CU_ASSERT_TRUE(ev[1].memory_bytes > ev[2].memory_bytes);
	CU_ASSERT_TRUE(ev[2].memory_bytes > ev[3].memory_bytes);
	CU_ASSERT_TRUE(ev[3].flops / ev[0].flops > 1.2 && ev[3].flops / ev[0].flops < 1.45);
	CU_ASSERT_TRUE(ev[2].flops / ev[0].flops < 1.05);
	CU_ASSERT_TRUE(ev[1].flops > ev[0].flops && ev[1].flops < ev[3].flops);
	/* evaluating until it fits makes the schedule once and gives each policy's figures, in
	 * the order none, attention, dots, full: an HBM between a policy's peak and the one
	 * before's stops at it, one below full's goes to full */
	for (int k = 1; k < 4; k++) {
		shs_cluster small = cl;
		shs_eval_options o = { .remat = SHS_REMAT_NONE };
		shs_remat used = SHS_REMAT_NONE;
		shs_eval got;
		small.hw.hbm_bytes = k < 3 ? (ev[k - 1].memory_bytes + ev[k].memory_bytes) / 2
					   : ev[3].memory_bytes / 2;
		SHS_ASSERT_OK(shs_evaluate_until_fits(m, p, &small, &o, SHS_REMAT_FULL, &got, &used,
						      &e), &e);
		CU_ASSERT_EQUAL(used, policies[k]);
		CU_ASSERT_EQUAL(got.fits, k < 3);
		CU_ASSERT_EQUAL(got.step_time_s, ev[k].step_time_s);
		CU_ASSERT_EQUAL(got.memory_bytes, ev[k].memory_bytes);
		CU_ASSERT_EQUAL(got.state_bytes, ev[k].state_bytes);
		CU_ASSERT_EQUAL(got.flops, ev[k].flops);
		CU_ASSERT_EQUAL(got.mfu, ev[k].mfu);
		CU_ASSERT_EQUAL(got.n_colls, ev[k].n_colls);
		shs_eval_free(&got);
	}
	for (int k = 0; k < 4; k++)
		shs_eval_free(&ev[k]);
	shs_plan_free(p);
	shs_host_free(h);
	shs_module_free(m);
	free(r);
}

/* Full remat recomputes what the backward pass reads of a layer: mlp-only's layer saves its
 * input and its first matmul's product, so a compiled step (JAX's checkpoint, DCE'd) redoes
 * that matmul alone, half the forward's FLOPs, while an eager framework (--fusion kernels:
 * torch.utils.checkpoint) reruns the layer whole, both matmuls and the second's collectives. */
static void test_remat_recomputes_what_is_read(void)
{
	setup *s = evaluate_mlp(2048, 8192, 16384, "4x4x4", "fsdp=16,tensor=4", "fsdp+tp");
	shs_eval_options none = { .remat = SHS_REMAT_NONE }, full = { .remat = SHS_REMAT_FULL };
	shs_eval_options eager_none = none, eager_full = full;
	shs_eval ev[4];
	shs_err e = { 0 };
	double compiled, eager;

	eager_none.fusion = eager_full.fusion = SHS_FUSION_KERNELS;
	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->cluster, &none, &ev[0], &e), &e);
	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->cluster, &full, &ev[1], &e), &e);
	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->cluster, &eager_none, &ev[2], &e), &e);
	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->cluster, &eager_full, &ev[3], &e), &e);
	compiled = ev[1].flops - ev[0].flops;
	eager = ev[3].flops - ev[2].flops;
	CU_ASSERT_TRUE(compiled > 0 && eager > 0);
	CU_ASSERT_DOUBLE_EQUAL(compiled / eager, 0.5, 0.005);
	CU_ASSERT_TRUE(ev[1].remat_s < ev[3].remat_s);
	/* the forward layers' FLOPs: a third of the step's without remat */
	CU_ASSERT_DOUBLE_EQUAL(eager / ev[2].flops, 1.0 / 3, 0.02);
	for (int k = 0; k < 4; k++)
		shs_eval_free(&ev[k]);
	free_setup(s);
}

/* Deeper prefetch never makes a step slower, and no-overlap is an upper bound. */
static void test_prefetch_and_no_overlap(void)
{
	setup *s = evaluate_mlp(8192, 32768, 800 * 64, "4x4x4", "fsdp=64@xyz", book_fsdp_plan);
	shs_eval_options deep = { .prefetch_depth = 8 }, blocking = { .no_overlap = true };
	shs_eval a, b;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->cluster, &deep, &a, &e), &e);
	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->cluster, &blocking, &b, &e), &e);
	CU_ASSERT_TRUE(a.step_time_s <= s->ev.step_time_s * (1 + 1e-12));
	CU_ASSERT_TRUE(b.step_time_s >= s->ev.step_time_s);
	/* with nothing overlapped the step is the compute plus every collective */
	CU_ASSERT_TRUE(fabs(b.step_time_s - (b.compute_s + b.comm_s)) <= 1e-9 * b.step_time_s);
	shs_eval_free(&a);
	shs_eval_free(&b);
	free_setup(s);
}

/* Blocking axes: Megatron-LM's layout on 2 x 4 H100s with its tensor axis blocking the stream
 * (synchronous all-reduces) and data overlapping (PyTorch DDP): the data axis exposes what it
 * exposes with everything overlapped, the tensor axis what it exposes with nothing
 * overlapped; blocking every axis is --no-overlap. */
static void test_blocking_axes(void)
{
	static const char *const set[] = { "layers", "2", "seq", "256", "batch", "16", "scan",
					   "false", NULL };
	static const char plan[] = SHS_TEST_DATA_DIR "/plans/megatron-tp.json";
	shs_module *m = shs_test_generate("gpt3-175b", set);
	shs_host *h = shs_test_host();
	shs_cluster_spec spec = { .hardware = "h100", .devices = 8, .slices = 1,
				  .mesh = "data=2,tensor=4" };
	shs_eval_options o[4] = { { .no_overlap = false }, { .blocking = "tensor" },
				  { .blocking = "data,tensor,bogus" }, { .no_overlap = true } };
	shs_eval ev[4];
	shs_hw_catalog cat;
	shs_cluster cl;
	shs_plan *p[4];
	uint32_t data = 0, tensor = 1;

	shs_hw_catalog_builtin(&cat);
	for (int k = 0; k < 4; k++)
		shs_test_plan_evaluate(h, &cat, &spec, m, plan, &o[k], &cl, &p[k], &ev[k]);
	CU_ASSERT_TRUE(ev[0].step_time_s < ev[1].step_time_s);
	CU_ASSERT_TRUE(ev[1].step_time_s < ev[2].step_time_s);
	CU_ASSERT_TRUE(ev[0].exposed_by_axis[data] < ev[3].exposed_by_axis[data]);
	CU_ASSERT_TRUE(fabs(ev[1].exposed_by_axis[data] - ev[0].exposed_by_axis[data]) <=
		       1e-9 * ev[1].step_time_s);
	CU_ASSERT_TRUE(fabs(ev[1].exposed_by_axis[tensor] - ev[3].exposed_by_axis[tensor]) <=
		       0.05 * ev[3].exposed_by_axis[tensor]);
	CU_ASSERT_TRUE(fabs(ev[2].step_time_s - ev[3].step_time_s) <= 0.01 * ev[3].step_time_s);
	for (uint32_t k = 0; k < ev[1].n_colls; k++)
		CU_ASSERT_EQUAL(ev[1].colls[k].overlapped && (ev[1].colls[k].axes_mask & 2u), false);
	for (int k = 0; k < 4; k++) {
		shs_eval_free(&ev[k]);
		shs_plan_free(p[k]);
	}
	shs_host_free(h);
	shs_module_free(m);
}

/* Fusion keeps elementwise chains out of HBM: less HBM time, the same FLOPs. */
static void test_fusion(void)
{
	setup *s = evaluate_mlp(8192, 32768, 800 * 64, "4x4x4", "fsdp=64@xyz", book_fsdp_plan);
	shs_eval_options plain = { .fusion = SHS_FUSION_NONE };
	shs_eval u;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->cluster, &plain, &u, &e), &e);
	CU_ASSERT_TRUE(s->ev.hbm_s < u.hbm_s);
	CU_ASSERT_TRUE(fabs(s->ev.flops - u.flops) <= 1e-9 * u.flops);
	CU_ASSERT_TRUE(s->ev.step_time_s <= u.step_time_s);
	shs_eval_free(&u);
	free_setup(s);
}

/* Whether the instruction of collective site k is a matmul whose op_name ends with suffix. */
static bool site_is(const setup *s, uint32_t k, const char *suffix)
{
	const shs_instr *in = s->m->comps[s->ev.colls[k].comp]->instrs[s->ev.colls[k].instr];
	size_t n = in->metadata ? strlen(in->metadata->op_name) : 0, m = strlen(suffix);

	return n >= m && !strcmp(in->metadata->op_name + n - m, suffix);
}

/* XLA's reshard cache: in the TP backward pass the input gradient dy is gathered once, for
 * dy . W_out^T, and the weight gradient H^T . dy reads the same copy: every layer lists one
 * gather at the first and none at the second. */
static void test_reshard_reused(void)
{
	setup *s = evaluate_mlp(8192, 8000, 16 * 4096, "4x4x4", "data=16@xy,tensor=4@z",
				book_tp_plan);
	int first = 0, again = 0;

	for (uint32_t k = 0; k < s->ev.n_colls; k++) {
		if (s->ev.colls[k].kind != SHS_PCOLL_ALL_GATHER || !s->ev.colls[k].reshard)
			continue;
		first += site_is(s, k, "mlp/wo/grad_input/dot");
		again += site_is(s, k, "mlp/wo/grad/dot");
	}
	SHS_ASSERT_INT_EQ(first, 2);
	SHS_ASSERT_INT_EQ(again, 0);
	free_setup(s);
}

/* Peak memory per device of LLaMA-3 8B with `layers` layers (scanned or unrolled) under fsdp on
 * 128 v5p chips with remat policy. */
static double fsdp_memory(const char *layers, bool scan, shs_remat policy)
{
	shs_gen_config g = shs_test_preset("llama3-8b");
	shs_cluster_spec spec = { .hardware = "v5p", .topology = "4x4x8", .slices = 1,
				  .mesh = "fsdp=128" };
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_host *h = shs_test_host();
	shs_eval_options o = { .remat = policy };
	shs_hw_catalog cat;
	shs_cluster cl;
	shs_module *m = NULL;
	shs_plan *p = NULL;
	shs_eval ev;
	shs_err e = { 0 };
	double bytes;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "layers", layers, &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&g, "scan", scan ? "true" : "false", &e), &e);
	SHS_ASSERT_OK(shs_gen_module(&g, &m, NULL, &e), &e);
	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &cl, &e), &e);
	shs_hw_chip(&cl.hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, "fsdp=128", &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, "fsdp", &e), &e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	SHS_ASSERT_OK(shs_evaluate(m, p, &cl, &o, &ev, &e), &e);
	bytes = ev.memory_bytes;
	shs_eval_free(&ev);
	shs_plan_free(p);
	shs_module_free(m);
	shs_host_free(h);
	free(r);
	return bytes;
}

/* A layer's saved activations live until the backward layer reads them, through every view of
 * them (a call's tuple, a loop's stacks): memory grows by the same step with each layer, remat
 * frees what it drops, and the scanned and unrolled forms of one model need the same. */
static void test_saved_activations_live(void)
{
	static const shs_remat policies[] = { SHS_REMAT_NONE, SHS_REMAT_DOTS, SHS_REMAT_FULL };
	double unrolled[3], scanned[3], two = fsdp_memory("2", false, SHS_REMAT_NONE);
	double four = fsdp_memory("4", false, SHS_REMAT_NONE);

	for (int k = 0; k < 3; k++) {
		unrolled[k] = fsdp_memory("4", false, policies[k]);
		scanned[k] = fsdp_memory("4", true, policies[k]);
		if (fabs(scanned[k] / unrolled[k] - 1) > 1e-3)
			fprintf(stderr, "\n  remat %s: scanned %.4g GiB, unrolled %.4g GiB\n",
				shs_remat_name(policies[k]), scanned[k] / 1073741824,
				unrolled[k] / 1073741824);
		CU_ASSERT_TRUE(fabs(scanned[k] / unrolled[k] - 1) <= 1e-3);
	}
	CU_ASSERT_TRUE(unrolled[0] > unrolled[1] && unrolled[1] > unrolled[2]);
	/* two more layers keep two more layers' activations: at least, per device (32768 tokens
	 * of 1024 x 4096 on 128 chips), x, Q, O and x1 [T, D] and the MLP's gate and up [T, F]
	 * in bf16 (2.75 GiB; flash attention saves no [T, T] scores) */
	CU_ASSERT_TRUE(four - two > 2 * (4.0 * 4096 + 2.0 * 14336) * 2 * 32768);
	CU_ASSERT_DOUBLE_EQUAL(unrolled[0] - four, 0, 1);
}

CU_TestInfo evaluate_tests[] = {
	{ "fsdp=64@xyz on v5p 4x4x4: compute-bound at 1200 tokens/chip, not at 500",
	  test_fsdp_regimes },
	{ "at 400 tokens/chip fsdp=16@xy,tensor=4@z is compute-bound, fsdp=64@xyz is not",
	  test_mixed_beats_fsdp_at_400 },
	{ "tp on 4 chips of one axis: comm-bound at F=8000, compute-bound at F=16384",
	  test_tp_regimes },
	{ "every preset under fsdp+tp on v5p and H100: state memory is the closed form",
	  test_state_memory_every_preset },
	{ "loops in steady state: the shortcut gives the schedule of every trip",
	  test_loop_shortcut },
	{ "remat none/attention/dots/full: less memory kept, more recomputed; until it fits",
	  test_remat },
	{ "full remat: a compiled step recomputes what the backward reads, an eager one all",
	  test_remat_recomputes_what_is_read },
	{ "prefetch never slows a step; no-overlap is compute plus every collective",
	  test_prefetch_and_no_overlap },
	{ "blocking axes: the tensor axis as synchronous calls, data overlapped",
	  test_blocking_axes },
	{ "fusion keeps elementwise chains out of HBM", test_fusion },
	{ "a value resharded once serves its later users", test_reshard_reused },
	{ "saved activations live until read: per layer, remat, scanned = unrolled",
	  test_saved_activations_live },
	CU_TEST_INFO_NULL,
};
