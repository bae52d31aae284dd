/* The search: never worse than a canonical plan, and the book's choices on the mlp-only model. */
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

enum { ORACLE_MAX_SLOTS = 16, ORACLE_MAX_LEAVES = 64, GRAPHS = 24, MODULE_CAP = 4096 };

/* Generates preset with the settings (NULL-terminated key, value pairs). */
static shs_module *generate(const char *preset, const char *const *set)
{
	shs_gen_config g = shs_test_preset(preset);
	shs_module *m = NULL;
	shs_err e = { 0 };

	for (; set && set[0]; set += 2)
		SHS_ASSERT_OK(shs_gen_config_set(&g, set[0], set[1], &e), &e);
	SHS_ASSERT_OK(shs_gen_module(&g, &m, NULL, &e), &e);
	return m;
}

static shs_host *host(void)
{
	shs_host *h = shs_host_new(NULL, NULL);
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(h, SHS_STRATEGY_DIR, &e) > 0);
	return h;
}

/* Searches m on spec's cluster on that many threads. */
static void search_on(shs_host *h, const shs_module *m, const shs_cluster_spec *spec,
		      uint32_t threads, shs_search_result *r)
{
	shs_hw_catalog cat;
	shs_search_options o = { .threads = threads };
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
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

/* Every preset (2 layers, scanned) on 256 and 8960 v5p chips and on 64 and 1024 H100s. */
static void test_never_worse_than_canonical(void)
{
	static const shs_cluster_spec clusters[] = {
		{ .hardware = "v5p", .devices = 256, .slices = 1 },
		{ .hardware = "v5p", .devices = 8960, .slices = 1 },
		{ .hardware = "h100", .devices = 64, .slices = 1 },
		{ .hardware = "h100", .devices = 1024, .slices = 1 },
	};
	static const int64_t sizes[] = { 256, 8960, 64, 1024 };
	static const char *const set[] = { "layers", "2", "scan", "true", NULL };
	const char *const *names = shs_gen_preset_names();
	shs_host *h = host();

	int checked[sizeof(clusters) / sizeof(clusters[0])] = { 0 };

	for (int k = 0; names[k]; k++) {
		shs_module *m = generate(names[k], set);
		for (size_t j = 0; j < sizeof(clusters) / sizeof(clusters[0]); j++) {
			shs_search_result r;
			char what[96];
			search(h, m, &clusters[j], &r);
			snprintf(what, sizeof(what), "%s on %lld %s", names[k],
				 (long long)sizes[j], clusters[j].hardware);
			checked[j] += assert_never_worse(h, m, &clusters[j], sizes[j], &r, what);
			shs_search_result_free(&r);
		}
		shs_module_free(m);
	}
	/* not vacuous: on every cluster canonical plans fit and were compared (on 8960 chips not
	 * every model has one: 5 and 7 divide few of its dims, so they replicate) */
	for (size_t j = 0; j < sizeof(clusters) / sizeof(clusters[0]); j++)
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
	m = generate("mlp-only", set);
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

/* The book's choices: pure data parallelism when the model and its Adam state fit and the batch
 * per chip is large; FSDP (ZeRO-3) when they do not fit; FSDP with tensor parallelism when
 * tokens per chip fall between about 100 and 850; TP never wider than the book allows. */
static void test_book_choices(void)
{
	shs_host *h = host();
	shs_search_result r;
	bool dp_fits = false;

	/* 2 layers, 1.1e9 parameters: data parallelism fits; 1200 tokens per chip */
	search_mlp(h, 1200, "2", &r);
	SHS_ASSERT_INT_EQ(r.zero_stage, 0);
	SHS_ASSERT_INT_EQ(axis(&r, "fsdp") * axis(&r, "tensor"), 1);
	CU_ASSERT_TRUE(r.eval.fits);
	shs_search_result_free(&r);
	/* 32 layers, 17e9 parameters (137 GB of state whole): FSDP at 4096 tokens per chip */
	search_mlp(h, 4096, "32", &r);
	/* data parallelism does not fit: ruled out by its model state alone, or evaluated */
	for (uint32_t k = 0; k < r.n_tries; k++)
		dp_fits |= !strcmp(r.tries[k].plan, "dp") && r.tries[k].fits;
	CU_ASSERT_FALSE(dp_fits);
	CU_ASSERT_TRUE(r.n_pruned > 0);
	SHS_ASSERT_INT_EQ(r.zero_stage, 3);
	CU_ASSERT_TRUE(axis(&r, "fsdp") > 1 && r.eval.fits);
	assert_tp_bound(&r);
	shs_search_result_free(&r);
	/* FSDP + TP in between */
	for (int64_t per_chip = 150; per_chip <= 800; per_chip += 325) {
		search_mlp(h, per_chip, "32", &r);
		CU_ASSERT_TRUE(axis(&r, "fsdp") > 1 && axis(&r, "tensor") > 1);
		SHS_ASSERT_INT_EQ(r.zero_stage, 3);
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
	shs_module *m = generate("mlp-only", set);
	shs_host *h = host();
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

/* The meshes: every split of n over data, fsdp and tensor, once each, and with a sequence axis
 * where the token batch divides. */
static void test_meshes(void)
{
	char out[64][SHS_SEARCH_TEXT];
	uint32_t n = shs__search_meshes(8, 0, 0, 0, out, NULL, 64);
	int with_sequence = 0;
	bool found = false;

	/* t in {1, 2, 4, 8}, f dividing 8 / t: 4 + 3 + 2 + 1 */
	SHS_ASSERT_INT_EQ(n, 10);
	SHS_ASSERT_STR_EQ(out[0], "data=8");
	SHS_ASSERT_STR_EQ(out[1], "data=4,fsdp=2");
	SHS_ASSERT_STR_EQ(out[9], "tensor=8");
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = i + 1; j < n; j++)
			CU_ASSERT_STRING_NOT_EQUAL(out[i], out[j]);
	SHS_ASSERT_INT_EQ(shs__search_meshes(1, 0, 0, 0, out, NULL, 64), 1);
	SHS_ASSERT_STR_EQ(out[0], "data=1");
	/* a token batch of 2 sequences of 8: a sequence axis s where s divides 8 and data x fsdp
	 * divides 2 (t s in {4, 8}): 7 more */
	SHS_ASSERT_INT_EQ(shs__search_meshes(8, 2, 8, 0, out, NULL, 64), 17);
	for (uint32_t i = 0; i < 17; i++) {
		with_sequence += strstr(out[i], "sequence=") != NULL;
		found |= !strcmp(out[i], "data=2,sequence=4");
		CU_ASSERT_PTR_NULL(strstr(out[i], "fsdp=4,sequence"));
	}
	SHS_ASSERT_INT_EQ(with_sequence, 7);
	CU_ASSERT_TRUE(found);
	/* more than fit: counted, not written */
	SHS_ASSERT_INT_EQ(shs__search_meshes(8960, 0, 0, 0, out, NULL, 2), 405);
	/* with 8 experts an expert axis of 2, 4 or 8: every split of 8 over four axes (20); with
	 * 4 experts all but expert=8 */
	SHS_ASSERT_INT_EQ(shs__search_meshes(8, 0, 0, 8, out, NULL, 64), 20);
	SHS_ASSERT_INT_EQ(shs__search_meshes(8, 0, 0, 4, out, NULL, 64), 19);
	found = false;
	for (uint32_t i = 0; i < 19; i++) {
		found |= !strcmp(out[i], "data=2,expert=2,tensor=2");
		CU_ASSERT_PTR_NULL(strstr(out[i], "expert=8"));
	}
	CU_ASSERT_TRUE(found);
}

/* A mixture-of-experts model: the search tries meshes with an expert axis (seedings "+ep"),
 * whose plans split the experts' weights on it and the batch elsewhere. */
static void test_expert_axis(void)
{
	static const shs_cluster_spec spec = { .hardware = "v5p", .devices = 256, .slices = 1 };
	static const char *const set[] = { "layers", "2", "scan", "true", NULL };
	shs_module *m = generate("mixtral-8x7b", set);
	shs_host *h = host();
	shs_search_result r, pinned;
	shs_search_options o = { .threads = 2, .mesh = "data=32,expert=8" };
	shs_hw_catalog cat;
	shs_err e = { 0 };
	int with_expert = 0, split = 0;

	search(h, m, &spec, &r);
	for (uint32_t k = 0; k < r.n_tries; k++)
		if (strstr(r.tries[k].mesh, "expert=")) {
			with_expert++;
			CU_ASSERT_PTR_NOT_NULL(strstr(r.tries[k].plan, "+ep"));
		}
	CU_ASSERT_TRUE(with_expert > 10);
	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &o, &pinned, &e), &e);
	for (uint32_t i = 0; i < shs_module_entry(m)->n_instrs; i++) {
		const shs_instr *in = shs_module_entry(m)->instrs[i];
		const shs_decision *d = &pinned.plan->d[m->entry][i];
		char path[256];
		if (in->op != SHS_OP_PARAMETER || !d->set || d->n_leaves != 1)
			continue;
		shs_param_path(in, path, sizeof(path));
		if (!strstr(path, "moe/wi_0/parameter") || strstr(path, "opt_state"))
			continue;
		/* [layers, experts, d_model, d_ff]: the experts dim on the expert axis (1) */
		SHS_ASSERT_INT_EQ(d->leaves[0].dims[1].n, 1);
		SHS_ASSERT_INT_EQ(d->leaves[0].dims[1].axes[0], 1);
		split++;
	}
	SHS_ASSERT_INT_EQ(split, 1);
	shs_search_result_free(&r);
	shs_search_result_free(&pinned);
	shs_host_free(h);
	shs_module_free(m);
}

/* Local search over meshes: the canonical ones are those with at most two axes; a frontier is
 * every untried mesh one prime factor away from a top one. */
static void test_local_meshes(void)
{
	char out[64][SHS_SEARCH_TEXT];
	int64_t sizes[64][SHS_SEARCH_AXES];
	uint32_t list[64], n = shs__search_meshes(12, 0, 0, 0, out, sizes, 64), top = 0, count;
	bool tried[64] = { false };

	/* 12 = 2^2 3 over data, fsdp, tensor: C(4,2) * 3 = 18 splits, all but the 6 with three
	 * axes (two of them 2 and one 3 ... or 2, 2, 3 in some order: 3 ways, and 1 x ... ) */
	SHS_ASSERT_INT_EQ(n, 18);
	count = shs__search_canonical((const int64_t(*)[SHS_SEARCH_AXES])sizes, n, list);
	for (uint32_t k = 0; k < count; k++) {
		int axes = 0;
		for (int x = 0; x < SHS_SEARCH_AXES; x++)
			axes += sizes[list[k]][x] > 1;
		CU_ASSERT_TRUE(axes <= 2);
		tried[list[k]] = true;
	}
	SHS_ASSERT_INT_EQ(count, 15); /* 18 less the 3 orders of {2, 2, 3} */
	/* from data=4,tensor=3: data=2,fsdp=2,tensor=3 and data=2,tensor=6's ... the untried ones
	 * with one 2 moved: data=2,fsdp=2,tensor=3 only (data=2,tensor=6 is canonical, tried) */
	while (top < n && strcmp(out[top], "data=4,tensor=3"))
		top++;
	CU_ASSERT_FATAL(top < n);
	count = shs__search_frontier((const int64_t(*)[SHS_SEARCH_AXES])sizes, n, tried, &top, 1,
				     list);
	SHS_ASSERT_INT_EQ(count, 1);
	SHS_ASSERT_STR_EQ(out[list[0]], "data=2,fsdp=2,tensor=3");
	/* from data=2,fsdp=2,tensor=3 with nothing tried: six moves of a 2 or the 3 */
	top = list[0];
	memset(tried, 0, sizeof(tried));
	count = shs__search_frontier((const int64_t(*)[SHS_SEARCH_AXES])sizes, n, tried, &top, 1,
				     list);
	SHS_ASSERT_INT_EQ(count, 6);
	for (uint32_t k = 0; k + 1 < count; k++)
		CU_ASSERT_TRUE(list[k] < list[k + 1]);
}

/* Where there are too many meshes to try all, the local search finds a plan as fast as trying
 * every one (the cases measured; not a guarantee), on far fewer candidates. */
static void test_local_search_finds_the_best(void)
{
	static const char *const set[] = { "layers", "2", "scan", "true", NULL };
	static const struct {
		const char *preset;
		shs_cluster_spec spec;
	} cases[] = {
		{ "mlp-only", { .hardware = "v5p", .devices = 8960, .slices = 1 } },
		{ "llama2-13b", { .hardware = "h100", .devices = 1024, .slices = 1 } },
	};
	shs_host *h = host();
	shs_hw_catalog cat;

	shs_hw_catalog_builtin(&cat);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		shs_module *m = generate(cases[k].preset, set);
		shs_search_options o = { .threads = 2 }, all = { .threads = 2, .exhaustive = true };
		shs_search_result local, full;
		shs_err e = { 0 };
		SHS_ASSERT_OK(shs_search(h, m, &cat, &cases[k].spec, &o, &local, &e), &e);
		SHS_ASSERT_OK(shs_search(h, m, &cat, &cases[k].spec, &all, &full, &e), &e);
		CU_ASSERT_TRUE(local.local);
		CU_ASSERT_FALSE(full.local);
		CU_ASSERT_TRUE(local.n_meshes_tried < full.n_meshes_tried);
		SHS_ASSERT_INT_EQ(full.n_meshes_tried, full.n_meshes);
		CU_ASSERT_EQUAL(local.best.fits, full.best.fits);
		CU_ASSERT_TRUE(fabs(local.best.step_time_s - full.best.step_time_s) <=
			       SHS_SEARCH_TIE * full.best.step_time_s);
		shs_search_result_free(&local);
		shs_search_result_free(&full);
		shs_module_free(m);
	}
	shs_host_free(h);
}

/* A random DAG over bf16 arrays large enough for compute and communication to trade off: the
 * batch "inputs" [16384,8192], weights w0 [8192,8192] and w1 [8192,4096], then n ops, each a
 * dot of a value with a weight whose rows match its columns, or an add or multiply of two
 * values of one shape; the root is the last. seed picks the ops. */
static char *random_module(unsigned seed, int n)
{
	static const char *const dims[] = { "16384,8192", "16384,4096" };
	char *text = malloc(MODULE_CAP);
	int shape[16], used = 0;   /* shape[v]: an index into dims */
	size_t len = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	len += (size_t)snprintf(text + len, MODULE_CAP - len,
				"HloModule dag%u\n\nENTRY main {\n"
				"  v0 = bf16[16384,8192]{1,0} parameter(0), "
				"metadata={op_name=\"inputs\"}\n"
				"  w0 = bf16[8192,8192]{1,0} parameter(1)\n"
				"  w1 = bf16[8192,4096]{1,0} parameter(2)\n", seed);
	shape[used++] = 0;
	for (int k = 0; k < n; k++) {
		unsigned r = seed = seed * 1103515245u + 12345u;
		int a = (int)((r >> 8) % (unsigned)used), b = (int)((r >> 16) % (unsigned)used);
		const char *root = k == n - 1 ? "ROOT " : "";
		if (shape[a] == 0 && ((r >> 4) & 1)) {
			int w = (int)((r >> 5) & 1);
			len += (size_t)snprintf(text + len, MODULE_CAP - len,
						"  %sv%d = bf16[%s]{1,0} dot(v%d, w%d), "
						"lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
						root, used, dims[w], a, w);
			shape[used++] = w;
			continue;
		}
		if (shape[b] != shape[a])
			b = a;
		len += (size_t)snprintf(text + len, MODULE_CAP - len,
					"  %sv%d = bf16[%s]{1,0} %s(v%d, v%d)\n", root, used,
					dims[shape[a]], (r >> 6) & 1 ? "add" : "multiply", a, b);
		shape[used] = shape[a];
		used++;
	}
	snprintf(text + len, MODULE_CAP - len, "}\n");
	return text;
}

/* The brute-force oracle: what the search's space holds for one plan made by propagation, every
 * combination of per-instruction candidates evaluated one by one. */
typedef struct oracle {
	shs_host *h;
	const shs_module *m;
	const shs_cluster *c;
	shs_plan *p;
	uint32_t n;
	uint32_t instr[ORACLE_MAX_SLOTS];
	shs_decision orig[ORACLE_MAX_SLOTS];
	shs_cands cands[ORACLE_MAX_SLOTS];
	double best;
	uint32_t evaluated;
} oracle;

/* Writes option k (0: propagation's decision) of slot j into the plan's decision, borrowing the
 * candidate's arrays (restored from orig before the plan is freed). */
static void oracle_set(oracle *o, uint32_t j, uint32_t k)
{
	shs_decision *d = &o->p->d[o->m->entry][o->instr[j]];
	const shs_cand *c;

	if (!k) {
		*d = o->orig[j];
		return;
	}
	c = &o->cands[j].v[k - 1];
	d->leaves = c->result;
	d->n_leaves = c->n_result;
	d->req = c->operands;
	d->n_req = c->operand_first[c->n_operands];
	d->req_first = c->operand_first;
	d->flops = c->flops;
	d->bytes = c->bytes;
	d->colls = c->colls;
	d->n_colls = c->n_colls;
}

static void oracle_walk(oracle *o, uint32_t j)
{
	shs_eval ev = { 0 };
	shs_err e = { 0 };

	if (j == o->n) {
		if (shs_evaluate(o->m, o->p, o->c, NULL, &ev, &e) != SHS_OK) {
			CU_FAIL(e.msg);
			return;
		}
		o->evaluated++;
		if (ev.fits && ev.step_time_s < o->best)
			o->best = ev.step_time_s;
		shs_eval_free(&ev);
		return;
	}
	for (uint32_t k = 0; k <= o->cands[j].n; k++) {
		oracle_set(o, j, k);
		oracle_walk(o, j + 1);
	}
	oracle_set(o, j, 0);
}

/* The fastest step over every combination for plan kind (state_only: ZeRO-1/2) on c. */
static double oracle_min(shs_host *h, const shs_module *m, const shs_cluster *c,
			 shs_plan_kind kind, bool state_only, uint32_t *evaluated)
{
	const shs_computation *comp = shs_module_entry(m);
	shs_plan_request *r = calloc(1, sizeof(*r));
	oracle o = { .h = h, .m = m, .c = c, .best = INFINITY };
	char mesh[128];
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_chip(&c->hw, &r->chip);
	shs_mesh_text(&c->mesh, mesh, sizeof(mesh));
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	r->kind = kind;
	r->fsdp_state_only = state_only;
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &o.p, &e), &e);
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		const shs_pspec *hints[ORACLE_MAX_LEAVES];
		const shs_decision *d = &o.p->d[m->entry][i];
		if (in->op == SHS_OP_PARAMETER || !d->set || d->fixed)
			continue;
		CU_ASSERT_FATAL(o.n < ORACLE_MAX_SLOTS && in->n_operands <= ORACLE_MAX_LEAVES);
		for (uint32_t k = 0; k < in->n_operands; k++)
			hints[k] = o.p->d[m->entry][in->operands[k]].leaves;
		SHS_ASSERT_OK(shs_host_candidates(h, m, comp, in, &o.p->mesh, hints, NULL,
						  SHS_PMODE_ENUMERATE, &o.cands[o.n], &e), &e);
		o.instr[o.n] = i;
		o.orig[o.n++] = *d;
	}
	oracle_walk(&o, 0);
	for (uint32_t j = 0; j < o.n; j++)
		shs_cands_free(&o.cands[j]);
	shs_plan_free(o.p);
	free(r);
	*evaluated += o.evaluated;
	return o.best;
}

/* Exactness: on random dot / elementwise DAGs, on 2x2 and 2x4 meshes, the search's step time is
 * the minimum over every combination of the strategies in its space, evaluated one by one. */
static void test_exact_on_small_graphs(void)
{
	static const struct {
		const char *topology, *mesh;
	} meshes[] = { { "2x2x1", "fsdp=2,tensor=2" }, { "2x4x1", "fsdp=2,tensor=4" } };
	shs_host *h = host();
	shs_hw_catalog cat;
	int exact = 0;

	shs_hw_catalog_builtin(&cat);
	for (unsigned g = 0; g < GRAPHS; g++) {
		char *text = random_module(g + 1, 2 + (int)(g % 2));
		shs_module *m = NULL;
		shs_err e = { 0 };
		SHS_ASSERT_OK(shs_text_load(text, strlen(text), "dag", &m, &e), &e);
		for (size_t k = 0; k < sizeof(meshes) / sizeof(meshes[0]); k++) {
			shs_cluster_spec spec = { .hardware = "v5p", .topology = meshes[k].topology,
						  .slices = 1, .mesh = meshes[k].mesh };
			shs_search_options o = { .mesh = meshes[k].mesh };
			shs_search_result r;
			shs_cluster c;
			shs_eval again = { 0 };
			uint32_t evaluated = 0;
			double want;
			SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &c, &e), &e);
			SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &o, &r, &e), &e);
			want = fmin(oracle_min(h, m, &c, SHS_PLAN_FSDP_TP, false, &evaluated),
				    oracle_min(h, m, &c, SHS_PLAN_FSDP_TP, true, &evaluated));
			if (r.exact) {
				exact++;
				if (fabs(r.eval.step_time_s - want) > 1e-12 * want)
					fprintf(stderr, "\n  graph %u on %s: search %.9g s, oracle %.9g s "
						"(%u plans)\n", g, meshes[k].mesh, r.eval.step_time_s,
						want, evaluated);
				CU_ASSERT_TRUE(fabs(r.eval.step_time_s - want) <= 1e-12 * want);
			}
			/* the plan it returns is the one it evaluated */
			SHS_ASSERT_OK(shs_evaluate(m, r.plan, &r.cluster, NULL, &again, &e), &e);
			CU_ASSERT_DOUBLE_EQUAL(again.step_time_s, r.eval.step_time_s,
					       1e-12 * r.eval.step_time_s);
			shs_eval_free(&again);
			shs_search_result_free(&r);
		}
		shs_module_free(m);
		free(text);
	}
	if (exact < 20)
		fprintf(stderr, "\n  only %d of %d searches enumerated their space\n", exact,
			2 * GRAPHS);
	CU_ASSERT_TRUE(exact >= 20);
	shs_host_free(h);
}

CU_TestInfo search_tests[] = {
	{ "exact on small graphs: a brute-force oracle agrees", test_exact_on_small_graphs },
	{ "meshes: every split over data, fsdp, tensor, and sequence where tokens divide",
	  test_meshes },
	{ "local search: canonical meshes, then a prime factor moved", test_local_meshes },
	{ "an expert axis for mixture-of-experts models splits the experts", test_expert_axis },
	{ "local search finds the plan trying every mesh finds", test_local_search_finds_the_best },
	{ "never worse than dp, fsdp, tp, fsdp+tp at every degree", test_never_worse_than_canonical },
	{ "the book's choices: DP, FSDP, FSDP + TP, the TP bound", test_book_choices },
	{ "deterministic on any thread count; the time budget marks a partial result",
	  test_deterministic_and_budget },
	CU_TEST_INFO_NULL,
};
