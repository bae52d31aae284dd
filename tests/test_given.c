/* Existing intent is kept: the shardings a module gives its entry parameters and root (jit's in
 * and out shardings, XLA's named form, Shardy's frontend attributes) and Shardy's sharding
 * constraints survive annotate; --ignore-hints drops them. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "plan.h"
#include "sdy.h"
#include "test_util.h"

/* jit's shardings: p0 split in two and replicated in two (it fits no axis of data=4), p1
 * split four ways on its columns, the output four ways on its rows. */
static const char jit_module[] =
	"HloModule jit_f\n\nENTRY main {\n"
	"  p0 = f32[8,16] parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}\n"
	"  p1 = f32[16,32] parameter(1), sharding={devices=[1,4]<=[4]}\n"
	"  d = f32[8,32] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  ROOT n = f32[8,32] negate(d), sharding={devices=[4,1]<=[4]}\n}\n";

/* Shardy's: a mesh in the module's attributes, the parameters' and a constraint's shardings in
 * xla.sdy.sharding. */
static const char sdy_module[] =
	"HloModule jit_f, frontend_attributes={xla.sdy.meshes=\"{mesh = #sdy.mesh<[\\\"data\\\"=2, "
	"\\\"tensor\\\"=2]>}\"}\n\nENTRY main {\n"
	"  p0 = f32[8,16] parameter(0), frontend_attributes={xla.sdy.sharding="
	"\"#sdy.sharding<@mesh, [{\\\"data\\\"}, {}]>\"}\n"
	"  p1 = f32[16,32] parameter(1), frontend_attributes={xla.sdy.sharding="
	"\"#sdy.sharding<@mesh, [{}, {\\\"tensor\\\"}]>\"}\n"
	"  d = f32[8,32] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  c = f32[8,32] custom-call(d), custom_call_target=\"xla.sdy.ShardingConstraint\", "
	"frontend_attributes={xla.sdy.sharding=\"#sdy.sharding_per_value<[<@mesh, [{\\\"data\\\", "
	"\\\"tensor\\\"}, {}]>]>\"}\n"
	"  ROOT n = f32[8,32] negate(c)\n}\n";

/* Plans m with plan on mesh, hints kept or not, and annotates it. */
static void annotate(shs_module *m, const char *mesh, const char *plan, bool ignore_hints)
{
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_host *h = shs_test_host();
	shs_plan *p = NULL;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	r->chip = (shs_plan_chip){ .flops = 1e14, .hbm_bw = 1e12, .link_bw = 1e11 };
	r->ignore_hints = ignore_hints;
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, plan, &e), &e);
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &p, &e), &e);
	SHS_ASSERT_OK(shs_plan_annotate(p, m, &e), &e);
	shs_plan_free(p);
	shs_host_free(h);
	free(r);
}

static const shs_instr *named(const shs_module *m, const char *name)
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (!strcmp(c->instrs[i]->name, name))
			return c->instrs[i];
	CU_FAIL_FATAL("no such instruction");
	return NULL;
}

/* The sharding text of instruction name. */
static void assert_sharding(const shs_module *m, const char *name, const char *want)
{
	const shs_instr *in = named(m, name);
	shs_buf b = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(in->sharding);
	shs_sharding_print(&b, in->sharding);
	if (strcmp(b.data, want))
		fprintf(stderr, "\n  %s: sharding %s, want %s\n", name, b.data, want);
	CU_ASSERT_STRING_EQUAL(b.data, want);
	shs_buf_free(&b);
}

static void jit_shardings_kept(void)
{
	shs_module *m = shs_test_parse(jit_module);

	annotate(m, "data=4", "dp", false);
	assert_sharding(m, "p0", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
	assert_sharding(m, "p1", "{devices=[1,4]<=[4]}");
	assert_sharding(m, "n", "{devices=[4,1]<=[4]}");
	/* the dot follows p1's column split, which the plan kept */
	assert_sharding(m, "d", "{devices=[1,4]<=[4]}");
	shs_module_free(m);
	m = shs_test_parse(jit_module);
	annotate(m, "data=4", "dp", true);
	assert_sharding(m, "p0", "{replicated}");
	assert_sharding(m, "p1", "{replicated}");
	shs_module_free(m);
}

static void shardy_constraints_kept(void)
{
	shs_module *m = shs_test_parse(sdy_module);

	annotate(m, "data=2,tensor=2", "fsdp", false);
	assert_sharding(m, "p0", "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
	assert_sharding(m, "p1", "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}");
	assert_sharding(m, "c", "{devices=[4,1]<=[4]}");
	/* the attributes stay, and agree with what was written */
	CU_ASSERT_EQUAL(named(m, "p0")->n_frontend_attrs, 1);
	shs_module_free(m);
}

/* Shardy's text reads as XLA's named sharding on the module's mesh; a mesh the module lacks is
 * an error naming the instruction. */
static void shardy_text_reads(void)
{
	shs_module *m = shs_test_parse(sdy_module);
	shs_arena *a = shs_arena_new(0);
	shs_sharding *s = NULL;
	shs_buf b = { 0 };
	shs_err e = { 0 };
	shs_attr_kv bad = { "xla.sdy.sharding", "#sdy.sharding<@nomesh, [{\"x\"}]>" };
	shs_instr *p0 = (shs_instr *)named(m, "p0");

	SHS_ASSERT_OK(shs_stated_sharding(m, named(m, "c"), a, &s, &e), &e);
	shs_sharding_print(&b, s);
	CU_ASSERT_STRING_EQUAL(b.data, "{mesh['data'=2,'tensor'=2], [{'data', 'tensor'}, {}]}");
	p0->frontend_attrs = &bad;
	SHS_ASSERT_INT_EQ(shs_stated_sharding(m, p0, a, &s, &e), SHS_EPARSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "p0"));
	p0->n_frontend_attrs = 0;
	SHS_ASSERT_OK(shs_stated_sharding(m, p0, a, &s, &e), &e);
	CU_ASSERT_PTR_NULL(s);
	shs_buf_free(&b);
	shs_arena_free(a);
	shs_module_free(m);
}

CU_TestInfo given_tests[] = {
	{ "jit's in and out shardings are kept, --ignore-hints drops them", jit_shardings_kept },
	{ "Shardy's shardings and constraints are kept", shardy_constraints_kept },
	{ "Shardy's text reads as a named sharding", shardy_text_reads },
	CU_TEST_INFO_NULL,
};
