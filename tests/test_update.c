/* The optimizer's update (plugin/plan/plan_update.c): the step returns weights and Adam state as
 * they came in, data parallelism reduces each gradient once in its layer, ZeRO-1 gathers each
 * updated weight once, and what the root would still reshard is charged. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "plan.h"
#include "test_util.h"

enum { WEIGHTS = 4 }; /* mlp-only, 2 layers: wi and wo each (scanned: stacked, 2 tensors) */

typedef struct setup {
	uint32_t weights; /* weight tensors: WEIGHTS unrolled, WEIGHTS / 2 scanned */
	shs_module *m;
	shs_plan *p;
	shs_cluster c;
	shs_eval ev;
} setup;

/* mlp-only (2 layers, scanned or not) under plan kind on 8 H100s over mesh, evaluated. */
static setup *make(bool scan, const char *mesh, const char *kind, bool state_only)
{
	const char *const set[] = { "layers", "2", "d_model", "1024", "d_ff", "4096", "batch",
				    "8192", "scan", scan ? "true" : "false", NULL };
	shs_host *h = shs_test_host();
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_cluster_spec spec = { .hardware = "h100", .devices = 8, .mesh = mesh };
	setup *s = calloc(1, sizeof(*s));
	shs_hw_catalog cat;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	s->m = shs_test_generate("mlp-only", set);
	s->weights = scan ? WEIGHTS / 2 : WEIGHTS;
	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &s->c, &e), &e);
	shs_hw_chip(&s->c.hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, kind, &e), &e);
	r->fsdp_state_only = state_only;
	SHS_ASSERT_OK(shs_plan_make(h, s->m, r, &s->p, &e), &e);
	SHS_ASSERT_OK(shs_evaluate(s->m, s->p, &s->c, NULL, &s->ev, &e), &e);
	shs_host_free(h);
	free(r);
	return s;
}

static void drop(setup *s)
{
	shs_eval_free(&s->ev);
	shs_plan_free(s->p);
	shs_module_free(s->m);
	free(s);
}

/* Every output aliased to a parameter leaves the step in that parameter's sharding: the
 * annotated ROOT is the signature the training loop feeds back. */
static void assert_outputs_as_inputs(const setup *s)
{
	const shs_computation *c = shs_module_entry(s->m);
	const shs_instr *root = c->instrs[c->root];
	const shs_decision *rd = &s->p->d[s->m->entry][c->root];
	uint32_t checked = 0;

	for (uint32_t a = 0; a < s->m->n_aliases; a++) {
		const shs_alias *al = &s->m->aliases[a];
		int64_t k = al->output_index.n == 1 ? al->output_index.v[0] : -1;
		if (k < 0 || k >= (int64_t)root->n_operands || root->shape.tuple[k].rank == 0)
			continue;
		for (uint32_t i = 0; i < c->n_instrs; i++) {
			const shs_instr *in = c->instrs[i];
			if (in->op != SHS_OP_PARAMETER || in->parameter_number != al->param_number)
				continue;
			/* one leaf per element here: element k is leaf k */
			CU_ASSERT_TRUE(shs_spec_equal(&rd->leaves[k],
						      &s->p->d[s->m->entry][i].leaves[0]));
			checked++;
		}
	}
	CU_ASSERT_TRUE(checked >= 3 * s->weights); /* weights, mu, nu */
}

/* Collectives of kind over axis (a mesh axis name) in the entry computation, of at least 1 MB,
 * and whether any sits at the entry's root. */
static uint32_t entry_sites(const setup *s, int kind, const char *axis, bool *at_root)
{
	const shs_computation *c = shs_module_entry(s->m);
	uint32_t n = 0, mask = 0;

	for (uint32_t a = 0; a < s->c.mesh.n_axes; a++)
		if (!strcmp(s->c.mesh.names[a], axis))
			mask |= 1u << a;
	for (uint32_t k = 0; k < s->ev.n_colls; k++) {
		const shs_eval_coll *e = &s->ev.colls[k];
		if (e->comp != s->m->entry)
			continue;
		if (e->instr == c->root)
			*at_root = true;
		n += e->kind == kind && (e->axes_mask & mask) && e->bytes >= 1e6;
	}
	return n;
}

static void test_outputs_as_inputs(void)
{
	static const struct {
		const char *mesh, *kind;
		bool state_only;
	} plans[] = {
		{ "data=8", "dp", false },
		{ "fsdp=8", "fsdp", false },
		{ "fsdp=8", "fsdp", true },
		{ "data=2,tensor=4", "tp", false },
	};

	for (size_t k = 0; k < sizeof(plans) / sizeof(plans[0]); k++)
		for (int scan = 0; scan < 2; scan++) {
			setup *s = make(scan, plans[k].mesh, plans[k].kind, plans[k].state_only);
			bool at_root = false;
			assert_outputs_as_inputs(s);
			entry_sites(s, SHS_PCOLL_ALL_GATHER, "data", &at_root);
			CU_ASSERT_FALSE(at_root); /* nothing left for the root to gather */
			drop(s);
		}
}

/* Data parallelism: each weight's gradient all-reduced where its layer makes it (overlapped
 * with the rest of the backward pass), nothing gathered at the update, the update replicated:
 * its HBM time is a whole replica's, more than FSDP's share of it. */
static void test_dp_reduces_in_the_layer(void)
{
	for (int scan = 0; scan < 2; scan++) {
		setup *dp = make(scan, "data=8", "dp", false);
		setup *fsdp = make(scan, "fsdp=8", "fsdp", false);
		bool at_root = false;
		uint32_t reduced = 0;
		for (uint32_t k = 0; k < dp->ev.n_colls; k++) {
			const shs_eval_coll *e = &dp->ev.colls[k];
			reduced += e->comp != dp->m->entry && e->kind == SHS_PCOLL_ALL_REDUCE &&
				   e->bytes >= 1e6;
		}
		CU_ASSERT_TRUE(reduced >= dp->weights);
		CU_ASSERT_EQUAL(entry_sites(dp, SHS_PCOLL_ALL_GATHER, "data", &at_root), 0);
		CU_ASSERT_TRUE(dp->ev.hbm_s > fsdp->ev.hbm_s);
		drop(dp);
		drop(fsdp);
	}
}

/* ZeRO-1: the moments split over fsdp, the weights whole: each weight's update gathered once
 * (unrolled: a site per weight), into the weight that comes back whole. */
static void test_zero1_gathers_each_weight_once(void)
{
	setup *s = make(false, "fsdp=8", "fsdp", true);
	bool at_root = false;

	CU_ASSERT_EQUAL(entry_sites(s, SHS_PCOLL_ALL_GATHER, "fsdp", &at_root), s->weights);
	CU_ASSERT_FALSE(at_root);
	drop(s);
}

CU_TestInfo update_tests[] = {
	{ "the step's weights and Adam state come back as they came in", test_outputs_as_inputs },
	{ "data parallelism all-reduces each gradient in its layer", test_dp_reduces_in_the_layer },
	{ "ZeRO-1 gathers each updated weight once", test_zero1_gathers_each_weight_once },
	CU_TEST_INFO_NULL,
};
