/* The search's space: the meshes it enumerates, the local search over them, the expert axis, and
 * exactness against a brute-force oracle on small graphs. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "search_internal.h"
#include "test_util.h"

/* The sanitizer build checks the same properties on smaller inputs (SHS_TEST_SANITIZED). */
static const bool sanitized = SHS_TEST_SANITIZED;

enum { ORACLE_MAX_SLOTS = 16, ORACLE_MAX_LEAVES = 64, GRAPHS = 24, MODULE_CAP = 4096 };

/* The meshes: every split of n over data, fsdp and tensor, once each, and with a context axis
 * where the token batch divides. */
static void test_meshes(void)
{
	static const shs__search_model none = { 0 }, tokens = { .batch = 2, .seq = 8 };
	static const shs__search_model experts8 = { .experts = 8 }, experts4 = { .experts = 4 };
	static const shs__search_model heads4 = { .heads = 4 };
	char out[64][SHS_SEARCH_TEXT];
	uint32_t n = shs__search_meshes(8, &none, out, NULL, 64);
	int with_context = 0;
	bool found = false;

	/* t in {1, 2, 4, 8}, f dividing 8 / t: 4 + 3 + 2 + 1 */
	SHS_ASSERT_INT_EQ(n, 10);
	SHS_ASSERT_STR_EQ(out[0], "data=8");
	SHS_ASSERT_STR_EQ(out[1], "data=4,fsdp=2");
	SHS_ASSERT_STR_EQ(out[9], "tensor=8");
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = i + 1; j < n; j++)
			CU_ASSERT_STRING_NOT_EQUAL(out[i], out[j]);
	SHS_ASSERT_INT_EQ(shs__search_meshes(1, &none, out, NULL, 64), 1);
	SHS_ASSERT_STR_EQ(out[0], "data=1");
	/* a token batch of 2 sequences of 8: a context axis s where s divides 8 and data x fsdp
	 * divides 2 (t s in {4, 8}): 7; without one, data x fsdp under 4, twice the batch (the
	 * 7 with 4 or 8 batch shards for 2 sequences are left out): 3 (t in {4, 8}) */
	SHS_ASSERT_INT_EQ(shs__search_meshes(8, &tokens, out, NULL, 64), 10);
	for (uint32_t i = 0; i < 10; i++) {
		CU_ASSERT_PTR_NULL(strstr(out[i], "data=8"));
		CU_ASSERT_PTR_NULL(strstr(out[i], "data=4"));
		with_context += strstr(out[i], "context=") != NULL;
		found |= !strcmp(out[i], "data=2,context=4");
		CU_ASSERT_PTR_NULL(strstr(out[i], "fsdp=4,context"));
	}
	SHS_ASSERT_INT_EQ(with_context, 7);
	CU_ASSERT_TRUE(found);
	/* more than fit: counted, not written */
	SHS_ASSERT_INT_EQ(shs__search_meshes(8960, &none, out, NULL, 2), 405);
	/* 4 attention heads: tensor 1, 2 or 4 (4 + 3 + 2), never 8 */
	SHS_ASSERT_INT_EQ(shs__search_meshes(8, &heads4, out, NULL, 64), 9);
	for (uint32_t i = 0; i < 9; i++)
		CU_ASSERT_PTR_NULL(strstr(out[i], "tensor=8"));
	/* with 8 experts an expert axis of 2, 4 or 8: every split of 8 over four axes (20), the
	 * 4 with both fsdp and expert in both orders (24); with 4 experts all but expert=8 */
	SHS_ASSERT_INT_EQ(shs__search_meshes(8, &experts8, out, NULL, 64), 24);
	SHS_ASSERT_INT_EQ(shs__search_meshes(8, &experts4, out, NULL, 64), 23);
	found = false;
	for (uint32_t i = 0; i < 23; i++) {
		found |= !strcmp(out[i], "data=2,expert=2,tensor=2");
		CU_ASSERT_PTR_NULL(strstr(out[i], "expert=8"));
	}
	CU_ASSERT_TRUE(found);
	found = false;
	for (uint32_t i = 0; i < 23; i++)
		found |= !strcmp(out[i], "expert=2,fsdp=4");
	CU_ASSERT_TRUE(found);
}

/* A mixture-of-experts model: the search tries meshes with an expert axis (seedings "+ep"),
 * whose plans split the experts' weights on it and the batch elsewhere; on 256 v5p chips (130
 * meshes), under sanitizers on 64 (74 meshes; the normal build runs the 256). */
static void test_expert_axis(void)
{
	static const struct {
		shs_cluster_spec spec;
		const char *pinned; /* data x 8 experts */
	} full = { { .hardware = "v5p", .devices = 256, .slices = 1 }, "data=32,expert=8" },
	  small = { { .hardware = "v5p", .devices = 64, .slices = 1 }, "data=8,expert=8" };
	static const char *const set[] = { "layers", "2", "scan", "true", NULL };
	const shs_cluster_spec spec = sanitized ? small.spec : full.spec;
	shs_module *m = shs_test_generate("mixtral-8x7b", set);
	shs_host *h = shs_test_host();
	shs_search_result r, pinned;
	shs_search_options any = { .threads = 2 },
			   o = { .threads = 2, .mesh = sanitized ? small.pinned : full.pinned };
	shs_hw_catalog cat;
	shs_err e = { 0 };
	int with_expert = 0, split = 0;

	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &any, &r, &e), &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.plan);
	for (uint32_t k = 0; k < r.n_tries; k++)
		if (strstr(r.tries[k].mesh, "expert=")) {
			with_expert++;
			CU_ASSERT_PTR_NOT_NULL(strstr(r.tries[k].plan, "+ep"));
		}
	CU_ASSERT_TRUE(with_expert > 10);
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
	static const shs__search_model none = { 0 };
	uint32_t list[64], n = shs__search_meshes(12, &none, out, sizes, 64), top = 0, count;
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
	shs_host *h = shs_test_host();
	shs_hw_catalog cat;

	shs_hw_catalog_builtin(&cat);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		shs_module *m = shs_test_generate(cases[k].preset, set);
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
		if (fabs(local.best.step_time_s - full.best.step_time_s) >
		    SHS_SEARCH_TIE * full.best.step_time_s)
			fprintf(stderr, "\n  %s: the local search's best %s %.6g s, every mesh's %s "
				"%.6g s", cases[k].preset, local.best.mesh, local.best.step_time_s,
				full.best.mesh, full.best.step_time_s);
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
	shs_host *h = shs_test_host();
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
			double want = INFINITY;
			SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &c, &e), &e);
			SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &o, &r, &e), &e);
			/* every combination the oracle walks evaluates; under sanitizers it walks only
			 * the spaces the search enumerated too (at most SHS_SEARCH_EXHAUSTIVE), the
			 * normal build every graph's (up to 281216 combinations) */
			if (r.exact || !sanitized)
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

CU_TestInfo search_space_tests[] = {
	{ "exact on small graphs: a brute-force oracle agrees", test_exact_on_small_graphs },
	{ "meshes: every split over data, fsdp, tensor, and context where tokens divide",
	  test_meshes },
	{ "local search: canonical meshes, then a prime factor moved", test_local_meshes },
	{ "an expert axis for mixture-of-experts models splits the experts", test_expert_axis },
	{ "local search finds the plan trying every mesh finds", test_local_search_finds_the_best },
	CU_TEST_INFO_NULL,
};
