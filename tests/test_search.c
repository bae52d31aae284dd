/* The search: never worse than a canonical plan, the book's choices on the mlp-only model, and
 * the same result on any thread count. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "io.h"
#include "roofline.h"
#include "search_internal.h"
#include "test_util.h"

/* The sanitizer build checks the same properties on smaller clusters (SHS_TEST_SANITIZED). */
static const bool sanitized = SHS_TEST_SANITIZED;

/* Under sanitizers the never-worse test divides each model's batch by this. */
enum { SANITIZED_BATCH_DIVISOR = 8 };

/* Searches m on spec's cluster on that many threads. */
static void search_on(shs_host *h, const shs_module *m, const shs_cluster_spec *spec,
		      uint32_t threads, shs_search_result *r)
{
	shs_hw_catalog cat;
	shs_search_options o = { .threads = threads };
	shs_err e = { 0 };

	shs_test_book_catalog(&cat);
	SHS_ASSERT_OK(shs_search(h, m, &cat, spec, &o, r, &e), &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r->plan);
}

static void search(shs_host *h, const shs_module *m, const shs_cluster_spec *spec,
		   shs_search_result *r)
{
	search_on(h, m, spec, 2, r);
}

/* The size of the chosen mesh's axis name (1 when it has none). */
static int64_t axis(const shs_search_result *r, const char *name)
{
	for (uint32_t a = 0; a < r->cluster.mesh.n_axes; a++)
		if (!strcmp(r->cluster.mesh.names[a], name))
			return r->cluster.mesh.sizes[a];
	return 1;
}

/* Evaluates the named plan kind on mesh (default layout) over spec's chips, with remat none,
 * dots or full, the first that fits: *fits and the step time, or a negative time when the mesh
 * or plan cannot be made. */
static double canonical(shs_host *h, const shs_module *m, const shs_cluster_spec *spec,
			const char *mesh, const char *kind, bool *fits)
{
	shs_cluster_spec s = *spec;
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_hw_catalog cat;
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev = { 0 };
	shs_err e = { 0 };
	double t = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_catalog_builtin(&cat);
	s.mesh = mesh;
	if (shs_cluster_make(&cat, &s, &c, &e) == SHS_OK)
		shs_hw_chip(&c.hw, &r->chip); /* propagation compares on the cluster's chip */
	if (r->chip.flops > 0 && shs_plan_parse_mesh(r, mesh, &e) == SHS_OK &&
	    shs_plan_parse_kind(r, kind, &e) == SHS_OK &&
	    shs_plan_make(h, m, r, &p, &e) == SHS_OK) {
		for (int remat = SHS_REMAT_NONE; remat <= SHS_REMAT_FULL && !*fits; remat++) {
			shs_eval_options o = { .remat = (shs_remat)remat };
			shs_eval_free(&ev);
			if (shs_evaluate(m, p, &c, &o, &ev, &e) != SHS_OK)
				break;
			t = ev.step_time_s;
			*fits = ev.fits;
		}
	}
	shs_eval_free(&ev);
	shs_plan_free(p);
	free(r);
	return t;
}

/* The chosen plan's step time is at most every canonical plan's that fits: dp; fsdp, tp and
 * fsdp+tp at every degree k dividing the device count. Returns how many fit (compared). */
static int assert_never_worse(shs_host *h, const shs_module *m, const shs_cluster_spec *spec,
			      int64_t n, const shs_search_result *r, const char *what)
{
	char mesh[128];
	int checked = 0;

	for (int64_t k = 1; k <= n; k++) {
		struct {
			const char *kind;
			long long d, f, t;
		} plans[] = { { "dp", n, 1, 1 }, { "fsdp", n / k, k, 1 }, { "tp", n / k, 1, k },
			      { "fsdp+tp", 1, n / k, k } };
		if (n % k)
			continue;
		for (size_t j = 0; j < sizeof(plans) / sizeof(plans[0]); j++) {
			bool fits = false;
			double t;
			if (!strcmp(plans[j].kind, "dp") && k > 1)
				continue;
			snprintf(mesh, sizeof(mesh), "data=%lld,fsdp=%lld,tensor=%lld", plans[j].d,
				 plans[j].f, plans[j].t);
			t = canonical(h, m, spec, mesh, plans[j].kind, &fits);
			if (t < 0 || !fits)
				continue;
			checked++;
			if (r->eval.step_time_s > t * (1 + 1e-9))
				fprintf(stderr, "\n  %s: search %.6g s > %s on %s %.6g s\n", what,
					r->eval.step_time_s, plans[j].kind, mesh, t);
			CU_ASSERT_TRUE(r->eval.step_time_s <= t * (1 + 1e-9));
		}
	}
	return checked;
}

/* Every preset (2 layers, scanned) on 256 and 8960 v5p chips and on 64 and 1024 H100s (8960
 * chips, and 1024 H100s for the models with sequence or expert axes, have too many meshes to try
 * all: the local search). Under sanitizers every preset on 64 v5p chips (4x4x4) and on 32 H100s,
 * every mesh tried, its batch divided by SANITIZED_BATCH_DIVISOR so that canonical plans fit on
 * so few chips; the normal build runs the full-size clusters, and test_local_search_finds_the_best
 * takes the local search under sanitizers too. */
static void test_never_worse_than_canonical(void)
{
	static const shs_cluster_spec full[] = {
		{ .hardware = "v5p", .devices = 256, .slices = 1 },
		{ .hardware = "v5p", .devices = 8960, .slices = 1 },
		{ .hardware = "h100", .devices = 64, .slices = 1 },
		{ .hardware = "h100", .devices = 1024, .slices = 1 },
	};
	static const shs_cluster_spec small[] = {
		{ .hardware = "v5p", .devices = 64, .slices = 1 },
		{ .hardware = "h100", .devices = 32, .slices = 1 },
	};
	const shs_cluster_spec *clusters = sanitized ? small : full;
	const size_t n_clusters = sanitized ? sizeof(small) / sizeof(small[0])
					    : sizeof(full) / sizeof(full[0]);
	const int64_t divisor = sanitized ? SANITIZED_BATCH_DIVISOR : 1;
	const char *const *names = shs_gen_preset_names();
	shs_host *h = shs_test_host();
	int checked[sizeof(full) / sizeof(full[0])] = { 0 };

	for (int k = 0; names[k]; k++) {
		char batch[32];
		const char *const set[] = { "layers", "2", "scan", "true", "batch", batch, NULL };
		shs_module *m;
		snprintf(batch, sizeof(batch), "%lld",
			 (long long)(shs_test_preset(names[k]).batch / divisor));
		m = shs_test_generate(names[k], set);
		for (size_t j = 0; j < n_clusters; j++) {
			shs_search_result r;
			char what[96];
			search(h, m, &clusters[j], &r);
			snprintf(what, sizeof(what), "%s on %lld %s", names[k],
				 (long long)clusters[j].devices, clusters[j].hardware);
			checked[j] += assert_never_worse(h, m, &clusters[j], clusters[j].devices, &r,
							 what);
			shs_search_result_free(&r);
		}
		shs_module_free(m);
	}
	/* not vacuous: on every cluster canonical plans fit and were compared (on 8960 chips not
	 * every model has one: 5 and 7 divide few of its dims, so they replicate) */
	for (size_t j = 0; j < n_clusters; j++)
		CU_ASSERT_TRUE(checked[j] > 20);
	shs_host_free(h);
}

/* mlp-only on v5p 4x4x4 (64 chips), D = 8192, F = 32768, at tokens per chip, with layers
 * (scanned when there are more than 2): the search's choice. */
static void search_mlp(shs_host *h, int64_t per_chip, const char *layers, shs_search_result *r)
{
	static const shs_cluster_spec v5p = { .hardware = "v5p", .topology = "4x4x4", .slices = 1 };
	char batch[32];
	const char *scan = strcmp(layers, "2") ? "true" : "false";
	const char *set[] = { "layers", layers, "scan", scan, "batch", batch, NULL };
	shs_module *m;

	snprintf(batch, sizeof(batch), "%lld", (long long)(per_chip * 64));
	m = shs_test_generate("mlp-only", set);
	search(h, m, &v5p, r);
	shs_module_free(m);
}

/* A tensor axis no wider than the book's F M / (C / W) for compute-bound TP, M the physical
 * axes it spans. */
static void assert_tp_bound(const shs_search_result *r)
{
	for (uint32_t a = 0; a < r->cluster.mesh.n_axes; a++) {
		double m_axes = 0;
		if (strcmp(r->cluster.mesh.names[a], "tensor"))
			continue;
		for (uint32_t p = 0; p < r->cluster.n_phys; p++)
			m_axes += (r->cluster.span[a] >> p) & 1u;
		CU_ASSERT_TRUE(r->cluster.mesh.sizes[a] <=
			       shs_rf_tp_max(shs_rf_ici_oneway_intensity(&r->cluster.hw) / 2, m_axes,
					     32768));
	}
}

/* The book's choices, where they hold beside the optimizer's update (which the book leaves
 * out): data parallelism fits when the model and its Adam state do, but each replica then
 * runs the whole update, reading and writing the weights and both moments once per step, so
 * with few tokens per chip a plan that splits the Adam state over the batch axes (ZeRO-1 and
 * up, the same reduce-scatter and gather of the gradient) wins; the model state split (FSDP,
 * ZeRO-3, or tensor parallelism) when it does not fit; two axes, one of them tensor
 * parallelism, when tokens per chip fall between about 100 and 850; TP never wider than the
 * book allows. */
static void test_book_choices(void)
{
	shs_host *h = shs_test_host();
	shs_search_result r;
	bool dp_fits = false;
	double dp_step = 0;

	/* 2 layers, 1.1e9 parameters: data parallelism fits; 1200 tokens per chip, 18 ms of
	 * matmuls against 5 ms for a whole replica's update (14 bytes of HBM a parameter) */
	search_mlp(h, 1200, "2", &r);
	for (uint32_t k = 0; k < r.n_tries; k++)
		if (!strcmp(r.tries[k].plan, "dp") && r.tries[k].fits &&
		    (dp_step == 0 || r.tries[k].step_time_s < dp_step))
			dp_step = r.tries[k].step_time_s;
	CU_ASSERT_TRUE(dp_step > 0);
	CU_ASSERT_TRUE(r.zero_stage >= 1);
	CU_ASSERT_TRUE(r.eval.fits && r.eval.step_time_s < dp_step);
	shs_search_result_free(&r);
	/* 32 layers, 17e9 parameters (137 GB of state whole): FSDP at 4096 tokens per chip */
	search_mlp(h, 4096, "32", &r);
	/* data parallelism does not fit: ruled out by its model state alone, or evaluated */
	for (uint32_t k = 0; k < r.n_tries; k++)
		dp_fits |= !strcmp(r.tries[k].plan, "dp") && r.tries[k].fits;
	CU_ASSERT_FALSE(dp_fits);
	CU_ASSERT_TRUE(r.n_pruned > 0);
	/* the model state is split: over the batch axes (FSDP), or by tensor parallelism, which
	 * at 4096 tokens per chip is as compute-bound (the book prefers neither there) */
	CU_ASSERT_TRUE((r.zero_stage == 3 && axis(&r, "fsdp") > 1) || axis(&r, "tensor") > 1);
	CU_ASSERT_TRUE(r.eval.fits && r.eval.mfu > 0.9);
	assert_tp_bound(&r);
	shs_search_result_free(&r);
	/* FSDP + TP in between: two axes split the step (the propagation may make the fsdp seed
	 * split the weights' F dim over 'fsdp', tensor parallelism by another name) */
	for (int64_t per_chip = 150; per_chip <= 800; per_chip += 325) {
		uint32_t split_axes = 0;
		search_mlp(h, per_chip, "32", &r);
		for (uint32_t a = 0; a < r.cluster.mesh.n_axes; a++)
			split_axes += r.cluster.mesh.sizes[a] > 1;
		CU_ASSERT_TRUE(split_axes >= 2);
		CU_ASSERT_TRUE(r.zero_stage == 3 || axis(&r, "tensor") > 1);
		CU_ASSERT_TRUE(r.eval.fits);
		assert_tp_bound(&r);
		shs_search_result_free(&r);
	}
	shs_host_free(h);
}

/* The text of a fresh copy of m annotated with plan p (caller frees). */
static char *annotated(const shs_module *m, const shs_plan *p)
{
	shs_buf b = { 0 };
	shs_module *copy = shs_test_copy(m);
	shs_err e = { 0 };
	char *text;

	SHS_ASSERT_OK(shs_plan_annotate(p, copy, &e), &e);
	shs_text_print(&b, copy, NULL);
	text = strdup(b.data);
	shs_buf_free(&b);
	shs_module_free(copy);
	return text;
}

/* The same search on 1, 2 and 3 threads gives the same plan (the same annotated module), the
 * same candidates in the same order and the same warnings; a time budget too short for more
 * than one candidate marks the result partial. */
static void test_deterministic_and_budget(void)
{
	static const shs_cluster_spec spec = { .hardware = "v5p", .topology = "4x4x4",
					       .slices = 1 };
	static const char *const set[] = { "layers", "2", "batch", "4096", NULL };
	shs_module *m = shs_test_generate("mlp-only", set);
	shs_host *h = shs_test_host();
	shs_search_result a, b, c;
	shs_search_options o = { .time_budget_s = 1e-12 };
	shs_hw_catalog cat;
	shs_err e = { 0 };
	char *text_a;

	search_on(h, m, &spec, 1, &a);
	text_a = annotated(m, a.plan);
	CU_ASSERT_TRUE(a.n_tries > 20);
	for (uint32_t threads = 1; threads <= 3; threads++) {
		char *text_b;
		search_on(h, m, &spec, threads, &b);
		text_b = annotated(m, b.plan);
		CU_ASSERT_STRING_EQUAL(text_a, text_b);
		SHS_ASSERT_STR_EQ(a.best.mesh, b.best.mesh);
		SHS_ASSERT_INT_EQ(a.n_tries, b.n_tries);
		SHS_ASSERT_INT_EQ(a.refine_evals, b.refine_evals);
		for (uint32_t k = 0; k < a.n_tries && k < b.n_tries; k++) {
			SHS_ASSERT_STR_EQ(a.tries[k].mesh, b.tries[k].mesh);
			SHS_ASSERT_STR_EQ(a.tries[k].plan, b.tries[k].plan);
			CU_ASSERT_EQUAL(a.tries[k].step_time_s, b.tries[k].step_time_s);
			CU_ASSERT_EQUAL(a.tries[k].memory_bytes, b.tries[k].memory_bytes);
			CU_ASSERT_EQUAL(a.tries[k].order, b.tries[k].order);
		}
		free(text_b);
		shs_search_result_free(&b);
	}
	CU_ASSERT_FALSE(a.partial);
	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &o, &c, &e), &e);
	CU_ASSERT_TRUE(c.partial);
	CU_ASSERT_TRUE(c.n_tries < a.n_tries);
	free(text_a);
	shs_search_result_free(&a);
	shs_search_result_free(&c);
	shs_host_free(h);
	shs_module_free(m);
}

/* The book's example (LLaMA-3 70B, 1024 sequences of 4096 tokens, the 8960-chip v5p pod), on
 * the catalog as it is: the batch does not divide the pod, and the search still finds a plan
 * that fits at an MFU above 40 %. */
static void test_book_example(void)
{
	static const shs_cluster_spec pod = { .hardware = "v5p", .devices = 8960, .slices = 1 };
	const char *set[] = { "batch", "1024", "seq", "4096", "scan", "true", NULL };
	shs_host *h = shs_test_host();
	shs_module *m = shs_test_generate("llama3-70b", set);
	shs_search_options o = { .threads = 2 };
	shs_search_result r;
	shs_hw_catalog cat;
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_search(h, m, &cat, &pod, &o, &r, &e), &e);
	CU_ASSERT_TRUE(r.eval.fits);
	CU_ASSERT_TRUE(r.eval.mfu > 0.4);
	if (!r.eval.fits || !(r.eval.mfu > 0.4))
		fprintf(stderr, "\n  book example: fits %d, MFU %.3f\n", r.eval.fits, r.eval.mfu);
	shs_search_result_free(&r);
	shs_module_free(m);
	shs_host_free(h);
}

/* The second opinion: where the chip decomposes no matmul, the best meshes are propagated again
 * with every gather into a matmul scored hidden, at most SHS_SEARCH_SECOND_TOP of them, each
 * also tried the usual way, without counting as more meshes tried; the plan kept is the best
 * of all; where the runtime decomposes every matmul the two scorings are one and nothing is
 * tried twice. */
static void test_second_opinion(void)
{
	static const shs_cluster_spec spec = { .hardware = "v5p", .devices = 64, .slices = 1 };
	const char *set[] = { "layers", "2", "seq", "256", "batch", "64", "scan", "true", NULL };
	shs_host *h = shs_test_host();
	shs_module *m = shs_test_generate("llama3-8b", set);
	shs_search_options o = { .threads = 2 };
	shs_hw_catalog cat;

	shs_hw_catalog_builtin(&cat);
	for (int decomposing = 0; decomposing < 2; decomposing++) {
		shs_search_result r;
		shs_err e = { 0 };
		uint32_t second = 0;
		double strict = INFINITY;
		for (uint32_t k = 0; decomposing && k < cat.n; k++)
			cat.hw[k].windowed_einsum_bytes = 0;
		SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &o, &r, &e), &e);
		for (uint32_t k = 0; k < r.n_tries; k++) {
			const shs_search_try *t = &r.tries[k];
			bool twin = false;
			if (!t->gathers_hidden) {
				if (t->fits && t->step_time_s < strict)
					strict = t->step_time_s;
				continue;
			}
			second++;
			for (uint32_t j = 0; j < r.n_tries; j++)
				twin |= !r.tries[j].gathers_hidden &&
					!strcmp(r.tries[j].mesh, t->mesh) &&
					!strcmp(r.tries[j].plan, t->plan);
			CU_ASSERT_TRUE(twin);
		}
		if (decomposing) {
			SHS_ASSERT_INT_EQ(second, 0);
		} else {
			CU_ASSERT_TRUE(second > 0 && second <= 2 * SHS_SEARCH_SECOND_TOP);
		}
		CU_ASSERT_TRUE(r.n_meshes_tried <= r.n_meshes);
		CU_ASSERT_TRUE(r.eval.fits && r.eval.step_time_s <= strict);
		shs_search_result_free(&r);
	}
	shs_module_free(m);
	shs_host_free(h);
}

CU_TestInfo search_tests[] = {
	{ "the book's LLaMA-3 70B on 8960 v5p chips: a plan that fits, MFU above 40 %",
	  test_book_example },
	{ "never worse than dp, fsdp, tp, fsdp+tp at every degree", test_never_worse_than_canonical },
	{ "the book's choices: DP, FSDP, FSDP + TP, the TP bound", test_book_choices },
	{ "deterministic on any thread count; the time budget marks a partial result",
	  test_deterministic_and_budget },
	{ "a second opinion on the best meshes: gathers scored hidden, where no matmul is "
	  "decomposed", test_second_opinion },
	CU_TEST_INFO_NULL,
};
