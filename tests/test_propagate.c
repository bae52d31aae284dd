/* Plans by propagation: the book's FSDP+TP layout, full and valid annotations, plan files. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "hardware.h"
#include "host.h"
#include "plan.h"
#include "test_util.h"

static unsigned n_warnings;

static void count_warning(void *user, const char *msg)
{
	(void)user;
	(void)msg;
	n_warnings++;
}

static shs_host *host(void)
{
	shs_host *h = shs_host_new(count_warning, NULL);
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(h, SHS_STRATEGY_DIR, &e) > 0);
	return h;
}

/* The generator's module for preset with "key=value" settings (NULL-terminated). */
static shs_module *generate(const char *preset, const char *const *sets)
{
	shs_gen_config c = shs_test_preset(preset);
	shs_module *m = NULL;
	shs_err e = { 0 };

	for (; sets && *sets; sets++) {
		char key[64];
		const char *eq = strchr(*sets, '=');
		snprintf(key, sizeof(key), "%.*s", (int)(eq - *sets), *sets);
		SHS_ASSERT_OK(shs_gen_config_set(&c, key, eq + 1, &e), &e);
	}
	SHS_ASSERT_OK(shs_gen_module(&c, &m, NULL, &e), &e);
	return m;
}

/* Propagation compares candidates on a chip of the catalog: v5p's. */
static void v5p_chip(shs_plan_request *r)
{
	shs_hw_catalog cat;

	shs_hw_catalog_builtin(&cat);
	shs_hw_chip(shs_hw_find(&cat, "v5p"), &r->chip);
}

static shs_plan_request *request(const char *mesh, const char *plan)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	v5p_chip(r);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, plan, &e), &e);
	r->warn = count_warning;
	return r;
}

static shs_plan *make(shs_host *h, const shs_module *m, const shs_plan_request *r)
{
	shs_plan *p = NULL;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	return p;
}

/* The named sharding of the first instruction whose op_name is op_name (or whose name starts
 * with it when by_name), as "[{fsdp}, {tensor}]"; caller frees. */
static char *sharding_of(const shs_module *m, const shs_plan *p, const char *key, bool by_name)
{
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const shs_instr *in = m->comps[c]->instrs[i];
			const shs_decision *d = &p->d[c][i];
			bool hit = by_name ? !strncmp(in->name, key, strlen(key))
					   : in->metadata && in->metadata->op_name &&
						     !strcmp(in->metadata->op_name, key);
			shs_named_sharding named;
			shs_buf b = { 0 };
			if (!hit)
				continue;
			memset(&named, 0, sizeof(named));
			if (d->set) {
				named.rank = d->leaves[0].rank;
				for (uint32_t k = 0; k < named.rank; k++) {
					named.n_dim_axes[k] = d->leaves[0].dims[k].n;
					memcpy(named.dim_axes[k], d->leaves[0].dims[k].axes,
					       d->leaves[0].dims[k].n);
				}
			} else {
				named.rank = in->shape.rank;
			}
			shs_named_sharding_print(&b, &p->mesh, &named);
			return shs_buf_take(&b);
		}
	fprintf(stderr, "\n  no instruction %s\n", key);
	CU_FAIL_FATAL("instruction not found");
	return NULL;
}

#define ASSERT_SHARDING(m, p, key, by_name, want)                 \
	do {                                                        \
		char *got_ = sharding_of(m, p, key, by_name);           \
		if (strcmp(got_, want))                                 \
			fprintf(stderr, "\n  %s: got %s, want %s\n", key, got_, want); \
		CU_ASSERT_STRING_EQUAL(got_, want);                     \
		free(got_);                                             \
	} while (0)

/* The book's FSDP + TP layout (X = fsdp, Y = tensor):
 * In[B_X, D_Y] . W_in[D_X, F_Y] -> Tmp[B_X, F_Y]; Tmp . W_out[F_Y, D_X] -> Out[B_X, D_Y];
 * backward dTmp[B_X, F_Y], dW_out[F_Y, D_X], dW_in[D_X, F_Y], dIn[B_X, D_Y]. */
static void test_book_fsdp_tp(void)
{
	static const char *const sets[] = { "layers=2", "d_model=256", "d_ff=1024", "batch=512",
					    NULL };
	static const char *const scans[] = { "scan=false", "scan=true" };
	shs_host *h = host();

	for (int s = 0; s < 2; s++) {
		const char *all[8] = { sets[0], sets[1], sets[2], sets[3], scans[s], NULL };
		shs_module *m = generate("mlp-only", all);
		shs_plan_request *r = request("fsdp=4,tensor=2", "fsdp+tp");
		shs_plan *p = make(h, m, r);
		const char *l = s ? "layers" : "layers_1";
		char key[128];

		ASSERT_SHARDING(m, p, "inputs", true, "[{fsdp}, {tensor}]");
		snprintf(key, sizeof(key), "params.%s.mlp.wi", l);
		ASSERT_SHARDING(m, p, key, true,
				s ? "[{}, {fsdp}, {tensor}]" : "[{fsdp}, {tensor}]");
		snprintf(key, sizeof(key), "params.%s.mlp.wo", l);
		ASSERT_SHARDING(m, p, key, true,
				s ? "[{}, {tensor}, {fsdp}]" : "[{tensor}, {fsdp}]");
#define LAYER_OP(suffix, want)                                                        \
	snprintf(key, sizeof(key), "train_step/%s/mlp/%s", l, suffix);                   \
	ASSERT_SHARDING(m, p, key, false, want)
		LAYER_OP("wi/dot", "[{fsdp}, {tensor}]");
		LAYER_OP("wo/dot", "[{fsdp}, {tensor}]");
		LAYER_OP("wo/grad_input/dot", "[{fsdp}, {tensor}]");
		LAYER_OP("wo/grad/dot", "[{tensor}, {fsdp}]");
		LAYER_OP("wi/grad_input/dot", "[{fsdp}, {tensor}]");
		LAYER_OP("wi/grad/dot", "[{fsdp}, {tensor}]");
#undef LAYER_OP
		shs_plan_free(p);
		free(r);
		shs_module_free(m);
	}
	shs_host_free(h);
}

/* Annotates m with plan on mesh, prints, parses back, verifies; checks every instruction of
 * every non-reducer computation has a sharding; returns the text (caller frees). */
static char *annotate_text(shs_host *h, const shs_module *m0, const char *mesh, const char *plan)
{
	shs_buf b = { 0 };
	shs_module *m = NULL, *back = NULL;
	shs_plan_request *r = request(mesh, plan);
	shs_plan *p;
	shs_err e = { 0 };
	char *text;
	bool *reducer;

	/* annotate a fresh copy (the plan writes into the module) */
	m = shs_test_copy(m0);
	p = make(h, m, r);
	SHS_ASSERT_OK(shs_plan_annotate(p, m, &e), &e);
	SHS_ASSERT_OK(shs_module_verify(m, &e), &e);
	reducer = shs_comp_reducers(m);
	CU_ASSERT_PTR_NOT_NULL_FATAL(reducer);
	for (uint32_t c = 0; c < m->n_comps; c++) {
		if (reducer[c])
			continue;
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++)
			if (!m->comps[c]->instrs[i]->sharding) {
				fprintf(stderr, "\n  %s: no sharding\n",
					m->comps[c]->instrs[i]->name);
				CU_FAIL("instruction without a sharding");
			}
	}
	free(reducer);
	shs_text_print(&b, m, NULL);
	text = shs_buf_take(&b);
	back = shs_test_parse(text);
	SHS_ASSERT_OK(shs_module_verify(back, &e), &e);
	shs_module_free(back);
	shs_plan_free(p);
	shs_module_free(m);
	free(r);
	return text;
}

/* Plans and meshes with the plan's axes: 1-, 2- and 3-axis meshes of 8 devices. */
static const char *const plan_meshes[][2] = { { "data=8", "dp" },
					      { "fsdp=8", "fsdp" },
					      { "data=2,tensor=4", "tp" },
					      { "fsdp=4,tensor=2", "fsdp+tp" },
					      { "data=2,fsdp=2,tensor=2", "fsdp+tp" } };
enum { N_PLAN_MESHES = sizeof(plan_meshes) / sizeof(plan_meshes[0]) };

/* Every preset at its published dimensions (unrolled ones cut to 2 layers so that the test
 * stays fast), scanned and unrolled, under every plan. */
static void test_every_preset_every_plan(void)
{
	const char *const *names = shs_gen_preset_names();
	shs_host *h = host();

	for (int k = 0; names[k]; k++)
		for (int s = 0; s < 2; s++) {
			const char *sets[] = { s ? "scan=true" : "layers=2", NULL };
			shs_module *m = generate(names[k], sets);
			for (int j = 0; j < N_PLAN_MESHES; j++)
				free(annotate_text(h, m, plan_meshes[j][0], plan_meshes[j][1]));
			shs_module_free(m);
		}
	shs_host_free(h);
}

static void test_deterministic(void)
{
	static const char *const sets[] = { "layers=2", "seq=64", "batch=8", "vocab=512",
					    "scan=true", NULL };
	shs_host *h = host();
	shs_module *m = generate("llama3-8b", sets);
	char *a = annotate_text(h, m, "data=2,fsdp=2,tensor=2", "fsdp+tp");
	char *b = annotate_text(h, m, "data=2,fsdp=2,tensor=2", "fsdp+tp");

	CU_ASSERT_STRING_EQUAL(a, b);
	free(a);
	free(b);
	shs_module_free(m);
	shs_host_free(h);
}

/* Whether plans a and b decide every instruction alike (result, operand requirements, work). */
static bool same_plans(const shs_plan *a, const shs_plan *b)
{
	for (uint32_t c = 0; c < a->n_comps; c++)
		for (uint32_t i = 0; i < a->n_instrs[c]; i++) {
			const shs_decision *x = &a->d[c][i], *y = &b->d[c][i];
			if (x->set != y->set || x->n_leaves != y->n_leaves || x->n_req != y->n_req ||
			    x->flops != y->flops || x->bytes != y->bytes || x->cost != y->cost ||
			    x->n_colls != y->n_colls ||
			    (x->set && memcmp(x->leaves, y->leaves, x->n_leaves * sizeof(*x->leaves))) ||
			    (x->n_req && memcmp(x->req, y->req, x->n_req * sizeof(*x->req))))
				return false;
		}
	return true;
}

/* Repeated layers (unrolled: structurally identical computations) are propagated once per state
 * and copied to their twins, an instruction whose context (query, pull, what its users and
 * its operands' earlier users require) is unchanged keeps its decision, the score parts its
 * candidates share are computed once, and an instruction whose query another of its class
 * (the same shapes and attributes under pure strategies: each layer's update) asked before
 * shares that one's list of candidates, as does a plan made after another of the same mesh
 * with the lists it left: the plan, to each decision's cost, is the same as deciding every
 * instruction of every computation anew, unrolled and scanned. */
static void test_reuse_changes_nothing(void)
{
	static const char *const llama[] = { "layers=4", "seq=64", "batch=8", "vocab=512", NULL };
	static const char *const llama_scan[] = { "layers=4", "seq=64", "batch=8", "vocab=512",
						  "scan=true", NULL };
	static const char *const mlp[] = { "layers=6", NULL };
	static const char *const *const sets[] = { llama, llama_scan, mlp };
	static const char *const presets[] = { "llama3-8b", "llama3-8b", "mlp-only" };
	shs_host *h = host();

	for (int k = 0; k < 3; k++) {
		shs_module *m = generate(presets[k], sets[k]);
		for (int j = 0; j < N_PLAN_MESHES; j++) {
			shs_plan_request *r = request(plan_meshes[j][0], plan_meshes[j][1]);
			shs_plan *reused = make(h, m, r), *each, *other, *shared;
			shs_plan_lists *lists = NULL;
			shs_err e = { 0 };
			/* the lists another plan of the mesh (ZeRO-1 seeds) left */
			SHS_ASSERT_OK(shs_plan_lists_new(m, &r->mesh, &lists, &e), &e);
			r->lists = lists;
			r->fsdp_state_only = true;
			other = make(h, m, r);
			r->fsdp_state_only = false;
			shared = make(h, m, r);
			r->lists = NULL;
			r->no_reuse = true;
			each = make(h, m, r);
			CU_ASSERT_TRUE(same_plans(reused, each));
			CU_ASSERT_TRUE(same_plans(shared, each));
			CU_ASSERT_EQUAL(reused->passes, each->passes);
			shs_plan_free(reused);
			shs_plan_free(each);
			shs_plan_free(other);
			shs_plan_free(shared);
			shs_plan_lists_free(lists);
			free(r);
		}
		shs_module_free(m);
	}
	shs_host_free(h);
}

/* Lists made for one mesh are refused for another: their candidates split other axes. */
static void test_lists_of_another_mesh(void)
{
	static const char *const sets[] = { "layers=2", NULL };
	shs_host *h = host();
	shs_module *m = generate("mlp-only", sets);
	shs_plan_request *r = request("fsdp=8", "fsdp"), *other = request("fsdp=4,tensor=2", "fsdp");
	shs_plan_lists *lists = NULL;
	shs_plan *p = NULL;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_plan_lists_new(m, &r->mesh, &lists, &e), &e);
	other->lists = lists;
	SHS_ASSERT_INT_EQ(shs_plan_make(h, m, other, &p, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "another module or mesh"));
	r->lists = lists;
	p = make(h, m, r);
	shs_plan_free(p);
	shs_plan_lists_free(lists);
	free(r);
	free(other);
	shs_module_free(m);
	shs_host_free(h);
}

/* The real MaxText step under every plan; its 39 Sharding hints stay as they were. */
static void test_maxtext_every_plan(void)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	shs_host *h = host();

	SHS_ASSERT_OK(shs_module_load_file(shs_test_hlo_path(
			      "nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"),
					   SHS_FORMAT_AUTO, &m, &e), &e);
	for (int j = 0; j < N_PLAN_MESHES; j++) {
		char *text = annotate_text(h, m, plan_meshes[j][0], plan_meshes[j][1]);
		const char *hint =
			"custom_call_target=\"Sharding\", sharding={devices=[8,1,1]<=[8]}";
		int n = 0;
		for (const char *p = text; (p = strstr(p, hint)); p++)
			n++;
		SHS_ASSERT_INT_EQ(n, 25);
		free(text);
	}
	shs_module_free(m);
	shs_host_free(h);
}

/* --ignore-hints: the module's Sharding custom-calls are decided like any other instruction. */
static void test_ignore_hints(void)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	shs_host *h = host();
	shs_plan_request *r = request("fsdp=8", "fsdp");
	shs_plan *kept, *ignored;
	uint32_t n_kept = 0, n_ignored = 0;

	SHS_ASSERT_OK(shs_module_load_file(shs_test_hlo_path(
			      "nv_maxtext_1n1g_jit_train_step_before_optimization.hlo"),
					   SHS_FORMAT_AUTO, &m, &e), &e);
	kept = make(h, m, r);
	r->ignore_hints = true;
	ignored = make(h, m, r);
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const char *a = kept->d[c][i].strategy, *b = ignored->d[c][i].strategy;
			n_kept += a && !strcmp(a, "hint");
			n_ignored += b && !strcmp(b, "hint");
		}
	SHS_ASSERT_INT_EQ(n_kept, 39);
	SHS_ASSERT_INT_EQ(n_ignored, 0);
	shs_plan_free(kept);
	shs_plan_free(ignored);
	free(r);
	shs_module_free(m);
	shs_host_free(h);
}

static void test_mesh_errors(void)
{
	static const char *const bad[] = { "", "fsdp", "fsdp=", "fsdp=0", "fsdp=4,fsdp=2",
					   "1x=2", "a=2,b=2,c=2,d=2,e=2,f=2,g=2,h=2,i=2",
					   "fsdp=4;tensor=2", NULL };
	shs_plan_request r;
	shs_err e = { 0 };

	for (int k = 0; bad[k]; k++) {
		memset(&r, 0, sizeof(r));
		CU_ASSERT_EQUAL(shs_plan_parse_mesh(&r, bad[k], &e), SHS_EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "mesh"));
	}
	SHS_ASSERT_OK(shs_plan_parse_mesh(&r, "data=2,fsdp=16,tensor=4", &e), &e);
	SHS_ASSERT_INT_EQ(r.mesh.n_axes, 3);
	SHS_ASSERT_STR_EQ(r.mesh.names[1], "fsdp");
	SHS_ASSERT_INT_EQ(r.mesh.sizes[1], 16);
	CU_ASSERT_EQUAL(shs_plan_parse_kind(&r, "zero3", &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "fsdp+tp"));
}

static void test_plan_file(void)
{
	static const char *const sets[] = { "layers=2", "d_model=256", "d_ff=1024", "batch=512",
					    NULL };
	const char *path = shs_test_write_tmp("plan-rules.json",
		"{\"mesh\": {\"fsdp\": 4, \"tensor\": 2}, \"base\": \"fsdp\",\n"
		" \"rules\": [{\"match\": \"*mlp/wi/*\", "
		"\"spec\": [null, [\"fsdp\", \"tensor\"]]}]}\n");
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_module *m = generate("mlp-only", sets);
	shs_host *h = host();
	shs_err e = { 0 };
	shs_plan *p;

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	v5p_chip(r);
	SHS_ASSERT_OK(shs_plan_load_json(r, path, &e), &e);
	SHS_ASSERT_INT_EQ(r->n_rules, 1);
	SHS_ASSERT_INT_EQ(r->kind, SHS_PLAN_FSDP);
	p = make(h, m, r);
	ASSERT_SHARDING(m, p, "params.layers_0.mlp.wi", true, "[{}, {fsdp,tensor}]");
	ASSERT_SHARDING(m, p, "params.layers_0.mlp.wo", true, "[{fsdp}, {}]");
	shs_plan_free(p);
	shs_module_free(m);
	shs_host_free(h);
	free(r);
}

static void test_plan_file_errors(void)
{
	static const char *const bad[][2] = {
		{ "{\"rules\": []}", "no mesh" },
		{ "[1]", "top level" },
		{ "{\"mesh\": {\"fsdp\": \"x\"}}", "integer size" },
		{ "{\"mesh\": {\"fsdp\": 2}, \"base\": \"zero\"}", "unknown plan" },
		{ "{\"mesh\": {\"fsdp\": 2}, \"rules\": [{\"match\": \"*\"}]}", "\"spec\"" },
		{ "{\"mesh\": {\"fsdp\": 2}, "
		  "\"rules\": [{\"match\": \"*\", \"spec\": [\"tensor\"]}]}",
		  "axis the mesh does not have" },
		{ "{\"mesh\": {\"fsdp\": 2}, \"rules\": [{\"match\": \"*\", \"spec\": [3]}]}",
		  "each dim" },
		{ "{\"mesh\": ", "plan-bad.json:1:" },
	};
	shs_err e = { 0 };

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		shs_plan_request r;
		const char *path = shs_test_write_tmp("plan-bad.json", bad[k][0]);
		memset(&r, 0, sizeof(r));
		CU_ASSERT_NOT_EQUAL(shs_plan_load_json(&r, path, &e), SHS_OK);
		if (!strstr(e.msg, bad[k][1]))
			fprintf(stderr, "\n  %s: %s lacks '%s'\n", bad[k][0], e.msg, bad[k][1]);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, bad[k][1]));
		CU_ASSERT_EQUAL(r.n_rules, 0);
	}
	CU_ASSERT_EQUAL(shs_plan_load_json(&(shs_plan_request){ 0 },
					   shs_test_tmp_path("no-such-plan.json"), &e), SHS_EIO);
}

/* Whether plans a and b of m give some instruction another sharding. */
static bool plans_differ(const shs_module *m, const shs_plan *a, const shs_plan *b)
{
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < a->n_instrs[c]; i++) {
			const shs_decision *x = &a->d[c][i], *y = &b->d[c][i];
			if (x->set != y->set || x->n_leaves != y->n_leaves ||
			    (x->set && !shs_spec_equal(x->leaves, y->leaves)))
				return true;
		}
	return false;
}

/* Propagation compares candidates on the request's chip, the cost model's hardware: it refuses
 * to guess one; a chip with links far slower than its compute changes what it picks, and so
 * does a runtime that decomposes an activation's gather under the matmul that reads it
 * (collective matmul), which v5p's default runtime does not. */
static void test_chip_from_request(void)
{
	static const char *const sets[] = { "layers=2", "d_model=512", "d_ff=2048", "batch=64",
					     NULL };
	/* the tensor axis gathers activations into the matmuls */
	shs_plan_request *r = request("fsdp=4,tensor=2", "fsdp+tp");
	shs_module *m = generate("mlp-only", sets);
	shs_host *h = host();
	shs_plan *fast = NULL, *slow = NULL, *plain = NULL, *none = NULL;
	shs_err e = { 0 };

	CU_ASSERT_TRUE(r->chip.windowed_einsum_bytes > 1e9);
	plain = make(h, m, r);
	r->chip.windowed_einsum_bytes = 0; /* every gather into a matmul decomposed */
	fast = make(h, m, r);
	CU_ASSERT_TRUE(plans_differ(m, plain, fast));
	r->chip.link_bw /= 1e6; /* moving bytes now costs a million times more */
	slow = make(h, m, r);
	CU_ASSERT_TRUE(plans_differ(m, fast, slow));
	CU_ASSERT_TRUE(slow->total_cost > fast->total_cost);
	shs_plan_free(plain);
	r->chip = (shs_plan_chip){ 0 };
	SHS_ASSERT_INT_EQ(shs_plan_make(h, m, r, &none, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "no chip"));
	CU_ASSERT_PTR_NULL(none);
	shs_plan_free(fast);
	shs_plan_free(slow);
	shs_module_free(m);
	shs_host_free(h);
	free(r);
}

static void test_param_path(void)
{
	shs_module *m = shs_test_parse(
		"HloModule m\n\nENTRY e {\n"
		"  p = f32[2]{0} parameter(0), "
		"metadata={op_name=\"state.params['params']['mlp']['wi']\"}\n"
		"  ROOT q = f32[2]{0} parameter(1)\n}\n");
	char buf[128];

	shs_param_path(m->comps[0]->instrs[0], buf, sizeof(buf));
	SHS_ASSERT_STR_EQ(buf, "state.params/params/mlp/wi");
	shs_param_path(m->comps[0]->instrs[1], buf, sizeof(buf));
	SHS_ASSERT_STR_EQ(buf, "q");
	shs_module_free(m);
}

/* Bytes per device of leaf j of the first instruction of opcode op in m's entry under p. */
static double first_leaf_bytes(const shs_module *m, const shs_plan *p, shs_opcode op, uint32_t j)
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_shape *sh[SHS_MAX_VALUE_LEAVES];
		const shs_decision *d = &p->d[m->entry][i];
		uint32_t n;
		if (c->instrs[i]->op != op)
			continue;
		n = shs_shape_leaf_list(&c->instrs[i]->shape, sh, SHS_MAX_VALUE_LEAVES);
		CU_ASSERT_TRUE_FATAL(d->set && j < n && j < d->n_leaves);
		return shs_spec_local_bytes(&d->leaves[j], sh[j], &p->mesh);
	}
	CU_FAIL_FATAL("no such instruction");
	return 0;
}

/* A scanned layer's input, the forward loop's carried activation (and so its stack of saved
 * inputs), is as sharded as the unrolled first layer makes its output, for every plan: the loop
 * carries the more sharded of its init and what its body makes (it was the embedding's
 * sharding, replicated over tensor, and gathered on every trip). */
static void test_loop_carry_as_unrolled(void)
{
	static const char *const base[] = { "layers=2", "d_model=512", "d_ff=2048", "heads=8",
					    "kv_heads=8", "head_dim=64", "seq=256", "batch=64",
					    "vocab=1024", "gated_mlp=false", NULL, NULL };
	shs_host *h = host();

	for (size_t k = 0; k < sizeof(plan_meshes) / sizeof(plan_meshes[0]); k++) {
		const char *sets[sizeof(base) / sizeof(base[0])];
		shs_plan_request *r = request(plan_meshes[k][0], plan_meshes[k][1]);
		shs_module *mu, *ms;
		shs_plan *pu, *ps;
		double unrolled, scanned;
		memcpy(sets, base, sizeof(base));
		sets[10] = "scan=false";
		mu = generate("gpt3-175b", sets);
		sets[10] = "scan=true";
		ms = generate("gpt3-175b", sets);
		pu = make(h, mu, r);
		ps = make(h, ms, r);
		unrolled = first_leaf_bytes(mu, pu, SHS_OP_CALL, 0);
		scanned = first_leaf_bytes(ms, ps, SHS_OP_WHILE, 1);
		if (scanned != unrolled)
			fprintf(stderr, "\n  %s on %s: layer input %.0f bytes scanned, %.0f unrolled\n",
				plan_meshes[k][1], plan_meshes[k][0], scanned, unrolled);
		CU_ASSERT_DOUBLE_EQUAL(scanned, unrolled, 1e-9 * unrolled);
		shs_plan_free(pu);
		shs_plan_free(ps);
		shs_module_free(mu);
		shs_module_free(ms);
		free(r);
	}
	shs_host_free(h);
}

CU_TestInfo propagate_tests[] = {
	{ "a scanned layer's input is as sharded as the unrolled layers'",
	  test_loop_carry_as_unrolled },
	{ "reused layers, decisions and shared score parts: the same plan as deciding anew",
	  test_reuse_changes_nothing },
	{ "candidate lists of another mesh are refused", test_lists_of_another_mesh },
	{ "mlp-only fsdp+tp is the book's layout, unrolled and scanned", test_book_fsdp_tp },
	{ "every preset, unrolled and scanned, under every plan on 1-, 2-, 3-axis meshes",
	  test_every_preset_every_plan },
	{ "same input and options give the same output", test_deterministic },
	{ "MaxText under every plan keeps its own Sharding hints", test_maxtext_every_plan },
	{ "--ignore-hints decides the Sharding custom-calls like the rest", test_ignore_hints },
	{ "mesh and plan names are checked", test_mesh_errors },
	{ "a plan file's rules seed matching parameters", test_plan_file },
	{ "bad plan files are refused naming the problem", test_plan_file_errors },
	{ "parameter paths spell JAX's ['key'] as /key", test_param_path },
	{ "candidates compared on the request's chip, none guessed", test_chip_from_request },
	CU_TEST_INFO_NULL,
};
