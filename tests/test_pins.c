/* Activation rules in plan files (instructions pinned by op_name) and the communication a
 * recomputed forward pass repeats. */
#include <CUnit/CUnit.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "host.h"
#include "plan.h"
#include "test_util.h"

/* A small GPT-3-style model (plain gelu MLP, dot attention), unrolled or scanned. */
static shs_module *small_gpt(bool scan)
{
	const char *const set[] = { "layers", "2", "d_model", "512", "d_ff", "2048", "heads", "8",
				    "kv_heads", "8", "head_dim", "64", "seq", "256", "batch", "64",
				    "vocab", "1024", "gated_mlp", "false", "attention", "dot",
				    "scan", scan ? "true" : "false", NULL };

	return shs_test_generate("gpt3-175b", set);
}

static const char RESIDUAL_RULE[] =
	"{\"base\": \"tp\", \"activations\": [{\"match\": \"train_step/layers*/add\", "
	"\"spec\": [\"data\", null, null]}]}\n";

/* The plan of m on mesh (v5p's chip) from plan file text, or the named plan or plan file. */
static shs_plan *plan_on(shs_host *h, const shs_module *m, const char *mesh,
			 const char *file_text, const char *name)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_hw_catalog cat;
	const shs_hardware *hw;
	shs_plan *p = NULL;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_catalog_builtin(&cat);
	hw = shs_hw_find(&cat, "v5p");
	CU_ASSERT_PTR_NOT_NULL_FATAL(hw);
	shs_hw_chip(hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	if (file_text)
		SHS_ASSERT_OK(shs_plan_load_json(r, shs_test_write_tmp("pins.json", file_text), &e), &e);
	else if (strstr(name, ".json"))
		SHS_ASSERT_OK(shs_plan_load_json(r, name, &e), &e);
	else
		SHS_ASSERT_OK(shs_plan_parse_kind(r, name, &e), &e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	free(r);
	return p;
}

static shs_plan *plan_of(shs_host *h, const shs_module *m, const char *file_text,
			 const char *name)
{
	return plan_on(h, m, "data=2,tensor=4", file_text, name);
}

/* Counts the rank-3 instructions whose op_name matches the residual rule (as a path), and of
 * them those p shards as want (the named form). */
static void count_sharded(const shs_module *m, const shs_plan *p, const char *want,
			  uint32_t *matched, uint32_t *as_pinned)
{
	*matched = *as_pinned = 0;
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const shs_instr *in = m->comps[c]->instrs[i];
			const shs_decision *d = &p->d[c][i];
			char path[256], *text;
			if (in->shape.rank != 3 || !in->metadata || !in->metadata->op_name)
				continue;
			shs_param_path(in, path, sizeof(path));
			if (fnmatch("train_step/layers*/add", path, FNM_PATHNAME))
				continue;
			(*matched)++;
			text = d->set ? shs_specs_text(&p->mesh, d->leaves, 1) : NULL;
			if (text && !strcmp(text, want))
				(*as_pinned)++;
			free(text);
		}
}

/* Every layer's residual add (forward and backward, both forms) takes the rule's sharding;
 * without the rule propagation splits them over tensor too, so the rule is what did it. */
static void test_rule_pins_its_instructions(void)
{
	shs_host *h = shs_test_host();

	for (int scan = 0; scan < 2; scan++) {
		shs_module *m = small_gpt(scan);
		shs_plan *pinned = plan_of(h, m, RESIDUAL_RULE, NULL);
		shs_plan *free_plan = plan_of(h, m, NULL, "tp");
		uint32_t matched, as_pinned, matched_free, as_pinned_free;
		count_sharded(m, pinned, "[{data}, {}, {}]", &matched, &as_pinned);
		count_sharded(m, free_plan, "[{data}, {}, {}]", &matched_free, &as_pinned_free);
		fprintf(stderr, "\n  %s: %u residual adds, %u pinned with the rule, %u without",
			scan ? "scanned" : "unrolled", matched, as_pinned, as_pinned_free);
		CU_ASSERT_TRUE(matched >= 2);
		SHS_ASSERT_INT_EQ(as_pinned, matched);
		CU_ASSERT_TRUE(as_pinned_free < matched_free);
		shs_plan_free(pinned);
		shs_plan_free(free_plan);
		shs_module_free(m);
	}
	shs_host_free(h);
}

static void collect(void *user, const char *msg)
{
	char *buf = user;
	size_t n = strlen(buf);

	snprintf(buf + n, 1024 - n, "%s\n", msg);
}

/* MaxText's logical axis rules as a plan file: every layer's residual add on [fsdp, -, tensor]
 * (activation_batch, activation_length, activation_embed), scanned and unrolled. */
static void test_maxtext_rules(void)
{
	static const char file[] = SHS_TEST_DATA_DIR "/plans/maxtext-fsdp-tp.json";
	shs_host *h = shs_test_host();

	for (int scan = 0; scan < 2; scan++) {
		shs_module *m = small_gpt(scan);
		shs_plan *p = plan_on(h, m, "fsdp=2,tensor=4", NULL, file);
		uint32_t matched, as_pinned;
		count_sharded(m, p, "[{fsdp}, {}, {tensor}]", &matched, &as_pinned);
		CU_ASSERT_TRUE(matched >= 2);
		SHS_ASSERT_INT_EQ(as_pinned, matched);
		shs_plan_free(p);
		shs_module_free(m);
	}
	shs_host_free(h);
}

/* A malformed list is refused naming it; a rule that matches nothing of its rank is said and
 * ignored (a plan file may serve models with and without what it names). */
static void test_rule_errors(void)
{
	static const char *const bad[][2] = {
		{ "{\"base\": \"tp\", \"activations\": {}}", "member 'activations' must be a list" },
		{ "{\"base\": \"tp\", \"activations\": [{\"spec\": []}]}",
		  "each of 'activations' needs" },
		{ "{\"base\": \"tp\", \"activations\": [{\"match\": \"x\", \"spec\": [\"y\"]}]}",
		  "names an axis the mesh does not have" },
	};
	static const char *const unmatched[][2] = {
		{ "{\"base\": \"tp\", \"activations\": [{\"match\": \"train_step/layers*/add\", "
		  "\"spec\": [\"data\", null]}]}", "matches no instruction of its rank (2)" },
		{ "{\"base\": \"tp\", \"activations\": [{\"match\": \"nowhere/*\", "
		  "\"spec\": [null]}]}", "'nowhere/*' matches no instruction" },
	};
	shs_host *h = shs_test_host();
	shs_module *m = small_gpt(false);

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		shs_plan_request r;
		shs_err e = { 0 };
		memset(&r, 0, sizeof(r));
		SHS_ASSERT_OK(shs_plan_parse_mesh(&r, "data=2,tensor=4", &e), &e);
		CU_ASSERT_NOT_EQUAL(shs_plan_load_json(&r, shs_test_write_tmp("pins-bad.json", bad[k][0]), &e),
				    SHS_OK);
		if (!strstr(e.msg, bad[k][1]))
			fprintf(stderr, "\n  %s: '%s' lacks '%s'", bad[k][0], e.msg, bad[k][1]);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, bad[k][1]));
	}
	for (size_t k = 0; k < sizeof(unmatched) / sizeof(unmatched[0]); k++) {
		shs_plan_request *r = calloc(1, sizeof(*r));
		char warnings[1024] = "";
		shs_hw_catalog cat;
		shs_plan *p = NULL;
		shs_err e = { 0 };
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		shs_hw_catalog_builtin(&cat);
		shs_hw_chip(shs_hw_find(&cat, "v5p"), &r->chip);
		SHS_ASSERT_OK(shs_plan_parse_mesh(r, "data=2,tensor=4", &e), &e);
		SHS_ASSERT_OK(shs_plan_load_json(r, shs_test_write_tmp("pins-none.json", unmatched[k][0]),
						 &e), &e);
		r->warn = collect;
		r->warn_user = warnings;
		SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
		if (!strstr(warnings, unmatched[k][1]))
			fprintf(stderr, "\n  warnings '%s' lack '%s'", warnings, unmatched[k][1]);
		CU_ASSERT_PTR_NOT_NULL(strstr(warnings, unmatched[k][1]));
		shs_plan_free(p);
		free(r);
	}
	shs_module_free(m);
	shs_host_free(h);
}

/* The step of m under policy on 8 H100s with nothing overlapped (every collective exposed),
 * the plan named or from a plan file (.json). */
static shs_eval step_on_h100(shs_host *h, const shs_module *m, const char *mesh,
			     const char *plan, shs_remat policy)
{
	shs_cluster_spec spec = { .hardware = "h100", .devices = 8, .slices = 1, .mesh = mesh };
	shs_eval_options o = { .remat = policy, .no_overlap = true };
	shs_hw_catalog cat;
	shs_cluster cl;
	shs_plan *p = NULL;
	shs_eval ev;

	shs_hw_catalog_builtin(&cat);
	shs_test_plan_evaluate(h, &cat, &spec, m, plan, &o, &cl, &p, &ev);
	shs_plan_free(p);
	return ev;
}

/* Recomputing the forward pass repeats its tensor-parallel collectives (Megatron-LM's and
 * JAX's checkpointed layers contain them) but not FSDP's weight gathers (the backward pass
 * gathers each weight anyway, and the recomputation reads that copy); what it repeats is in
 * the step time and the exposure, beside the recomputed compute. */
static void test_recomputation_repeats_collectives(void)
{
	shs_host *h = shs_test_host();
	shs_module *m = small_gpt(false);
	static const char megatron[] = SHS_TEST_DATA_DIR "/plans/megatron-tp.json";
	shs_eval tp_none = step_on_h100(h, m, "data=1,tensor=8", megatron, SHS_REMAT_NONE);
	shs_eval tp_full = step_on_h100(h, m, "data=1,tensor=8", megatron, SHS_REMAT_FULL);
	shs_eval fsdp_full = step_on_h100(h, m, "fsdp=8", "fsdp", SHS_REMAT_FULL);
	double extra = tp_full.step_time_s - tp_none.step_time_s;

	fprintf(stderr, "\n  Megatron's tp: recomputation %.4g s compute, %.4g s communication (of %.4g s "
		"exposed without it); fsdp: %.4g s communication", tp_full.remat_s,
		tp_full.remat_comm_s, tp_none.exposed_comm_s, fsdp_full.remat_comm_s);
	CU_ASSERT_EQUAL(tp_none.remat_comm_s, 0);
	CU_ASSERT_TRUE(tp_full.remat_comm_s > 0);
	CU_ASSERT_TRUE(tp_full.remat_comm_s < tp_none.exposed_comm_s);
	CU_ASSERT_TRUE(fabs(extra - tp_full.remat_s - tp_full.remat_comm_s) <= 1e-9 * extra);
	CU_ASSERT_TRUE(fabs(tp_full.exposed_comm_s - tp_none.exposed_comm_s -
			    tp_full.remat_comm_s) <= 1e-9 * tp_full.exposed_comm_s);
	CU_ASSERT_TRUE(fsdp_full.remat_s > 0);
	CU_ASSERT_EQUAL(fsdp_full.remat_comm_s, 0);
	shs_eval_free(&tp_none);
	shs_eval_free(&tp_full);
	shs_eval_free(&fsdp_full);
	shs_module_free(m);
	shs_host_free(h);
}

CU_TestInfo pins_tests[] = {
	{ "an activation rule pins its instructions, scanned and unrolled",
	  test_rule_pins_its_instructions },
	{ "MaxText's logical axis rules as a plan file", test_maxtext_rules },
	{ "malformed activation rules are refused, unmatched ones said and ignored",
	  test_rule_errors },
	{ "recomputation repeats the forward's collectives, not weight gathers",
	  test_recomputation_repeats_collectives },
	CU_TEST_INFO_NULL,
};
