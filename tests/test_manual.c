/* shard_map's manual regions: read, planned, priced and written back as the program wrote them
 * (each device's own code in local shapes, its collectives over the mesh axes their device
 * groups span), where a module holding them had been refused as already partitioned. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "host.h"
#include "io.h"
#include "manual.h"
#include "plan.h"
#include "test_util.h"

/* As jax.shard_map lowers on a data=4,tensor=2 mesh of 8 devices: x split over both axes, w
 * over tensor on its rows, the body a local matmul whose partial sums are reduced over tensor
 * ({0,1},{2,3},..: neighbours in the last axis) and then sent one step round the data axis
 * (0->2->4->6->0 and the odd ring). */
static const char shmap_module[] =
	"HloModule jit_ring\n\n"
	"sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n}\n\n"
	"shmap_body {\n  x = f32[64,128] parameter(0)\n  w = f32[128,256] parameter(1)\n"
	"  d = f32[64,256] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  r = f32[64,256] all-reduce(d), channel_id=1, replica_groups=[4,2]<=[8], "
	"use_global_device_ids=true, to_apply=sum\n"
	"  ROOT p = f32[64,256] collective-permute(r), channel_id=2, "
	"source_target_pairs={{0,2},{2,4},{4,6},{6,0},{1,3},{3,5},{5,7},{7,1}}\n}\n\n"
	"ENTRY main {\n"
	"  p0 = f32[256,256] parameter(0), sharding={devices=[4,2]<=[8]}\n"
	"  c0 = f32[256,256] custom-call(p0), custom_call_target=\"Sharding\", "
	"sharding={devices=[4,2]<=[8]}\n"
	"  m0 = f32[64,128] custom-call(c0), custom_call_target=\"SPMDFullToShardShape\", "
	"sharding={manual}\n"
	"  p1 = f32[256,256] parameter(1), "
	"sharding={devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}\n"
	"  m1 = f32[128,256] custom-call(p1), custom_call_target=\"SPMDFullToShardShape\", "
	"sharding={manual}\n"
	"  k = f32[64,256] call(m0, m1), to_apply=shmap_body\n"
	"  t = f32[64,256] custom-call(k), custom_call_target=\"Sharding\", sharding={manual}\n"
	"  ROOT o = f32[256,256] custom-call(t), custom_call_target=\"SPMDShardToFullShape\", "
	"sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}\n}\n";

static const shs_instr *find(const shs_module *m, const char *name, uint32_t *c, uint32_t *i)
{
	for (uint32_t k = 0; k < m->n_comps; k++)
		for (uint32_t j = 0; j < m->comps[k]->n_instrs; j++)
			if (!strcmp(m->comps[k]->instrs[j]->name, name)) {
				*c = k;
				*i = j;
				return m->comps[k]->instrs[j];
			}
	CU_FAIL_FATAL("no such instruction");
	return NULL;
}

/* The region's instructions are marked, the entry's others and its exit are not; its
 * collectives do not make the module "already partitioned", one outside a region does. */
static void regions_marked(void)
{
	static const char *const manual[] = { "m0", "m1", "k", "t", "x", "w", "d", "r", "p" };
	static const char *const whole[] = { "p0", "c0", "p1", "o", "a", "s" };
	shs_module *m = shs_test_parse(shmap_module), *bare;
	shs_manual mm;
	shs_err e = { 0 };
	uint32_t c, i;

	SHS_ASSERT_OK(shs_manual_make(m, &mm, &e), &e);
	CU_ASSERT_TRUE(mm.any);
	for (size_t k = 0; k < sizeof(manual) / sizeof(*manual); k++) {
		find(m, manual[k], &c, &i);
		CU_ASSERT_TRUE(shs_manual_is(&mm, c, i));
	}
	for (size_t k = 0; k < sizeof(whole) / sizeof(*whole); k++) {
		find(m, whole[k], &c, &i);
		CU_ASSERT_FALSE(shs_manual_is(&mm, c, i));
	}
	shs_manual_free(&mm);
	CU_ASSERT_PTR_NULL(shs_partitioned_witness(m, NULL));
	bare = shs_test_parse("HloModule p\n\nsum {\n  a = f32[] parameter(0)\n"
			      "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
			      "ENTRY main {\n  x = f32[8] parameter(0)\n"
			      "  ROOT r = f32[8] all-reduce(x), replica_groups={}, to_apply=sum\n}\n");
	CU_ASSERT_PTR_NOT_NULL(shs_partitioned_witness(bare, NULL));
	shs_module_free(bare);
	shs_module_free(m);
}

/* The device groups of instruction name of text, as a string "0,1|2,3". */
static int groups_of(const char *text, const char *name, int64_t devices, char *out, size_t cap,
		     shs_err *e)
{
	shs_module *m = shs_test_parse(text);
	uint32_t c, i, n = 0, size = 0;
	int64_t *ids = NULL;
	int rc = shs_collective_groups(find(m, name, &c, &i), devices, &ids, &n, &size, e);
	size_t len = 0;

	out[0] = 0;
	for (uint32_t g = 0; rc == SHS_OK && g < n; g++)
		for (uint32_t k = 0; k < size && len < cap; k++)
			len += (size_t)snprintf(out + len, cap - len, "%s%lld",
						k ? "," : g ? "|" : "", (long long)ids[g * size + k]);
	free(ids);
	shs_module_free(m);
	return rc;
}

static void device_groups(void)
{
	static const char head[] = "HloModule g\n\nsum {\n  a = f32[] parameter(0)\n"
				   "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
				   "ENTRY main {\n  x = f32[8] parameter(0)\n  ROOT r = f32[8] ";
	static const struct {
		const char *op, *want;
		int rc;
	} cases[] = {
		{ "all-reduce(x), replica_groups=[2,4]<=[4,2]T(1,0), to_apply=sum",
		  "0,2,4,6|1,3,5,7", SHS_OK },
		{ "all-reduce(x), replica_groups={}, to_apply=sum", "0,1,2,3,4,5,6,7", SHS_OK },
		{ "all-reduce(x), replica_groups={{0,1},{2,3,4}}, to_apply=sum", "", SHS_EINVAL },
		{ "all-reduce(x), replica_groups={{0,9}}, to_apply=sum", "", SHS_EINVAL },
		{ "collective-permute(x), source_target_pairs={{0,1},{1,0}}", "0,1|1,0", SHS_OK },
		{ "negate(x)", "", SHS_EINVAL },
	};
	char text[512], got[256];

	for (size_t k = 0; k < sizeof(cases) / sizeof(*cases); k++) {
		shs_err e = { 0 };
		snprintf(text, sizeof(text), "%s%s\n}\n", head, cases[k].op);
		int rc = groups_of(text, "r", 8, got, sizeof(got), &e);
		if (rc != cases[k].rc || strcmp(got, cases[k].want))
			fprintf(stderr, "\n  %s: %d '%s' (%s), want %d '%s'\n", cases[k].op, rc,
				got, e.msg, cases[k].rc, cases[k].want);
		CU_ASSERT_EQUAL(rc, cases[k].rc);
		CU_ASSERT_STRING_EQUAL(got, cases[k].want);
		if (rc != SHS_OK)
			CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "r:"));
	}
}

/* Plans and evaluates module m (taken) on 8 v5p chips as data=4,tensor=2. */
static shs_test_eval *evaluate_module(shs_module *m)
{
	shs_test_eval *s = calloc(1, sizeof(*s));
	shs_cluster_spec spec = { .hardware = "v5p", .devices = 8, .slices = 1,
				  .mesh = "data=4,tensor=2" };

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	shs_hw_catalog_builtin(&s->cat);
	s->h = shs_test_host();
	s->m = m;
	shs_test_plan_evaluate(s->h, &s->cat, &spec, s->m, "fsdp+tp", NULL, &s->cluster, &s->p,
			       &s->ev);
	return s;
}

static shs_test_eval *evaluate(const char *text)
{
	return evaluate_module(shs_test_parse(text));
}

static const shs_eval_coll *coll_at(const shs_eval *ev, const char *where)
{
	for (uint32_t k = 0; k < ev->n_colls; k++)
		if (!strcmp(ev->colls[k].where, where))
			return &ev->colls[k];
	return NULL;
}

/* Each device runs the body on its shard: the matmul's whole local FLOPs, replicated; the
 * all-reduce over tensor and the permute over data, of the local array; the boundaries take
 * and give the program's shardings, with nothing moved between them. */
static void regions_priced(void)
{
	shs_test_eval *s = evaluate(shmap_module);
	const shs_eval_coll *r = coll_at(&s->ev, "r"), *p = coll_at(&s->ev, "p");
	const int data = shs_mesh_axis(&s->p->mesh, "data");
	const int tensor = shs_mesh_axis(&s->p->mesh, "tensor");
	uint32_t c, i;

	find(s->m, "d", &c, &i);
	CU_ASSERT_TRUE(shs_spec_is_replicated(&s->p->d[c][i].leaves[0]));
	CU_ASSERT_DOUBLE_EQUAL(s->p->d[c][i].flops, 2.0 * 64 * 128 * 256, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	CU_ASSERT_EQUAL(r->kind, SHS_PCOLL_ALL_REDUCE);
	CU_ASSERT_EQUAL(r->axes_mask, 1u << tensor);
	CU_ASSERT_DOUBLE_EQUAL(r->bytes, 64 * 256 * 4, 1e-9);
	CU_ASSERT_EQUAL(p->kind, SHS_PCOLL_PERMUTE);
	CU_ASSERT_EQUAL(p->axes_mask, 1u << data);
	CU_ASSERT_DOUBLE_EQUAL(p->bytes, 64 * 256 * 4, 1e-9);
	for (uint32_t k = 0; k < s->ev.n_colls; k++)
		if (s->ev.colls[k].reshard)
			fprintf(stderr, "\n  unexpected reshard at %s\n", s->ev.colls[k].where);
	CU_ASSERT_EQUAL(s->ev.n_colls, 2);
	find(s->m, "m1", &c, &i);
	CU_ASSERT_TRUE(shs_spec_is_replicated(&s->p->d[c][i].leaves[0]));
	CU_ASSERT_EQUAL(s->p->d[c][i].req[0].dims[0].n, 1);
	CU_ASSERT_EQUAL(s->p->d[c][i].req[0].dims[0].axes[0], tensor);
	CU_ASSERT_EQUAL(s->p->d[c][i].req[0].dims[1].n, 0);
	find(s->m, "o", &c, &i);
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[0].axes[0], data);
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[1].n, 0);
	CU_ASSERT_TRUE(s->ev.step_time_s > 0);
	/* the model's FLOPs are every device's matmul: MFU is the hardware's utilisation here */
	CU_ASSERT_TRUE(s->ev.mfu > 0);
	CU_ASSERT_DOUBLE_EQUAL(s->ev.mfu, s->ev.hfu, 1e-9 * s->ev.hfu);
	shs_test_eval_free(s);
}

/* annotate keeps the program's shardings, writes {manual} where the body had none, verifies,
 * and the text and protobuf it writes read back to the same step time. */
static void regions_written_back(void)
{
	shs_test_eval *s = evaluate(shmap_module), *again;
	shs_module *from_pb = NULL;
	shs_err e = { 0 };
	shs_buf b = { 0 }, t = { 0 };
	uint8_t *pb = NULL;
	size_t len = 0;
	uint32_t c, i;

	SHS_ASSERT_OK(shs_plan_annotate(s->p, s->m, &e), &e);
	SHS_ASSERT_OK(shs_module_verify(s->m, &e), &e);
	for (const char *const *n = (const char *const[]){ "x", "d", "r", "p", "k", "m0", NULL };
	     *n; n++) {
		const shs_instr *in = find(s->m, *n, &c, &i);
		CU_ASSERT_PTR_NOT_NULL_FATAL(in->sharding);
		shs_sharding_print(&b, in->sharding);
		CU_ASSERT_STRING_EQUAL(b.data, "{manual}");
		shs_buf_free(&b);
	}
	shs_sharding_print(&b, find(s->m, "o", &c, &i)->sharding);
	CU_ASSERT_STRING_EQUAL(b.data, "{devices=[4,1,2]<=[8] last_tile_dim_replicate}");
	shs_buf_free(&b);
	shs_text_print(&t, s->m, &s->m->style);
	again = evaluate(t.data);
	CU_ASSERT_DOUBLE_EQUAL(again->ev.step_time_s, s->ev.step_time_s,
			       1e-12 * s->ev.step_time_s);
	CU_ASSERT_DOUBLE_EQUAL(again->ev.memory_bytes, s->ev.memory_bytes, 1);
	shs_test_eval_free(again);
	/* and through protobuf: the groups and shardings come back as they went */
	SHS_ASSERT_OK(shs_proto_save(s->m, false, &pb, &len, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, len, "manual.pb", &from_pb, &e), &e);
	again = evaluate_module(from_pb);
	CU_ASSERT_DOUBLE_EQUAL(again->ev.step_time_s, s->ev.step_time_s,
			       1e-12 * s->ev.step_time_s);
	CU_ASSERT_EQUAL(again->ev.n_colls, s->ev.n_colls);
	shs_test_eval_free(again);
	free(pb);
	shs_buf_free(&t);
	shs_test_eval_free(s);
}

/* Two computations alike but for where they run, one in a region and one outside, are planned
 * each for its own place (no pass over one is copied to the other). */
static void twins_apart(void)
{
	static const char text[] =
		"HloModule twins\n\n"
		"outside {\n  a = f32[64,128] parameter(0)\n  b = f32[128,128] parameter(1)\n"
		"  ROOT d = f32[64,128] dot(a, b), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n}\n\n"
		"inside {\n  x = f32[64,128] parameter(0)\n  y = f32[128,128] parameter(1)\n"
		"  ROOT e = f32[64,128] dot(x, y), lhs_contracting_dims={1}, "
		"rhs_contracting_dims={0}\n}\n\n"
		"ENTRY main {\n"
		"  p0 = f32[512,128] parameter(0), sharding={devices=[8,1]<=[8]}\n"
		"  m0 = f32[64,128] custom-call(p0), custom_call_target=\"SPMDFullToShardShape\", "
		"sharding={manual}\n"
		"  w = f32[128,128] parameter(1), sharding={replicated}\n"
		"  mw = f32[128,128] custom-call(w), custom_call_target=\"SPMDFullToShardShape\", "
		"sharding={manual}\n"
		"  k = f32[64,128] call(m0, mw), to_apply=inside\n"
		"  o = f32[512,128] custom-call(k), custom_call_target=\"SPMDShardToFullShape\", "
		"sharding={devices=[8,1]<=[8]}\n"
		"  q = f32[64,128] parameter(2), sharding={devices=[8,1]<=[8]}\n"
		"  u = f32[64,128] call(q, w), to_apply=outside\n"
		"  ROOT t = (f32[512,128], f32[64,128]) tuple(o, u)\n}\n";
	shs_test_eval *s = evaluate(text);
	uint32_t c, i;

	find(s->m, "e", &c, &i);
	CU_ASSERT_TRUE(shs_spec_is_replicated(&s->p->d[c][i].leaves[0]));
	CU_ASSERT_DOUBLE_EQUAL(s->p->d[c][i].flops, 2.0 * 64 * 128 * 128, 1);
	find(s->m, "d", &c, &i);
	CU_ASSERT_FALSE(shs_spec_is_replicated(&s->p->d[c][i].leaves[0]));
	CU_ASSERT_TRUE(s->p->d[c][i].flops < 2.0 * 64 * 128 * 128);
	shs_test_eval_free(s);
}

/* A region whose split no mesh axes make is refused, naming its boundary: rows of 256 in
 * pieces of 86, whatever the program states (a replicated operand). */
static void region_off_the_mesh(void)
{
	static const char text[] =
		"HloModule off\n\nENTRY main {\n"
		"  p1 = f32[256,256] parameter(0), sharding={replicated}\n"
		"  m1 = f32[86,256] custom-call(p1), custom_call_target=\"SPMDFullToShardShape\", "
		"sharding={manual}\n"
		"  n = f32[86,256] negate(m1)\n"
		"  ROOT o = f32[256,256] custom-call(n), custom_call_target=\"SPMDShardToFullShape\", "
		"sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}\n}\n";
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_host *h = shs_test_host();
	shs_module *m = shs_test_parse(text);
	shs_plan *p = NULL;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	r->chip = (shs_plan_chip){ .flops = 1e14, .hbm_bw = 1e12, .link_bw = 1e11 };
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, "data=4,tensor=2", &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, "fsdp+tp", &e), &e);
	CU_ASSERT_EQUAL(shs_plan_make(h, m, r, &p, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "m1"));
	CU_ASSERT_PTR_NULL(p);
	shs_module_free(m);
	shs_host_free(h);
	free(r);
}

/* A region manual over pipe only (shard_map with auto axes, tests/data/shard_map_auto.hlo: a
 * loop of eight trips on each of two groups of four, a matmul on a [64, 512] batch and a permute
 * between the groups): its instructions name their region, none of its shardings uses pipe, the
 * batch is split over data inside (the entry's operand comes so), the matmul's FLOPs are a
 * quarter of its local ones, the permute moves that piece over pipe; written back with XLA's
 * manual subgroup, it verifies and reads back to the same step time through text and proto. */
static void partly_manual(void)
{
	size_t len = 0;
	char *text = (char *)shs_test_read_file(SHS_TEST_DATA_DIR "/shard_map_auto.hlo", &len);
	shs_test_eval *s = calloc(1, sizeof(*s));
	shs_cluster_spec spec = { .hardware = "v5p", .devices = 8, .slices = 1,
				  .mesh = "pipe=2,data=4" };
	const shs_eval_coll *sh;
	shs_module *from_pb = NULL;
	shs_manual mm;
	shs_err e = { 0 };
	shs_buf b = { 0 }, t = { 0 };
	uint8_t *pb = NULL;
	uint32_t c, i, pipe, data;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	s->m = shs_test_parse(text);
	CU_ASSERT_PTR_NULL(shs_partitioned_witness(s->m, NULL));
	SHS_ASSERT_OK(shs_manual_make(s->m, &mm, &e), &e);
	for (const char *const *n = (const char *const[]){ "m0", "lp", "x", "d", "sh", "j", "ci",
							   "y1", NULL }; *n; n++) {
		const shs_instr *at;
		find(s->m, *n, &c, &i);
		at = shs_manual_entry(&mm, c, i);
		CU_ASSERT_TRUE(at && shs_is_full_to_shard(at));
		CU_ASSERT_FALSE(shs_manual_is(&mm, c, i));
	}
	for (const char *const *n = (const char *const[]){ "p0", "s0", "o", NULL }; *n; n++) {
		find(s->m, *n, &c, &i);
		CU_ASSERT_PTR_NULL(shs_manual_entry(&mm, c, i));
	}
	shs_manual_free(&mm);
	shs_hw_catalog_builtin(&s->cat);
	s->h = shs_test_host();
	shs_test_plan_evaluate(s->h, &s->cat, &spec, s->m, "dp", NULL, &s->cluster, &s->p, &s->ev);
	pipe = (uint32_t)shs_mesh_axis(&s->p->mesh, "pipe");
	data = (uint32_t)shs_mesh_axis(&s->p->mesh, "data");
	find(s->m, "d", &c, &i);
	CU_ASSERT_EQUAL(s->p->d[c][i].manual_axes, 1u << pipe);
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[0].n, 1);
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[0].axes[0], data);
	CU_ASSERT_DOUBLE_EQUAL(s->p->d[c][i].flops, 2.0 * 64 * 512 * 512 / 4, 1);
	sh = coll_at(&s->ev, "sh");
	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	CU_ASSERT_EQUAL(sh->kind, SHS_PCOLL_PERMUTE);
	CU_ASSERT_EQUAL(sh->axes_mask, 1u << pipe);
	CU_ASSERT_DOUBLE_EQUAL(sh->bytes, 64 * 512 * 4 / 4, 1e-9);
	CU_ASSERT_EQUAL(s->ev.n_colls, 1);
	/* the model's FLOPs: each group's matmuls, eight trips of them */
	CU_ASSERT_DOUBLE_EQUAL(s->ev.mfu, 2 * 8 * 2.0 * 64 * 512 * 512 /
			       (s->cluster.hw.flops[SHS_HW_BF16] * s->ev.step_time_s * 8),
			       1e-9 * s->ev.mfu);
	find(s->m, "o", &c, &i); /* the exit puts pipe back on the dim it makes whole */
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[0].axes[0], pipe);
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[1].axes[0], data);

	SHS_ASSERT_OK(shs_plan_annotate(s->p, s->m, &e), &e);
	SHS_ASSERT_OK(shs_module_verify(s->m, &e), &e);
	shs_sharding_print(&b, find(s->m, "d", &c, &i)->sharding);
	CU_ASSERT_STRING_EQUAL(b.data, "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dims={manual}}");
	shs_buf_free(&b);
	shs_text_print(&t, s->m, &s->m->style);
	SHS_ASSERT_OK(shs_proto_save(s->m, false, &pb, &len, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, len, "auto.pb", &from_pb, &e), &e);
	for (int k = 0; k < 2; k++) {
		shs_test_eval *r = calloc(1, sizeof(*r));
		CU_ASSERT_PTR_NOT_NULL_FATAL(r);
		shs_hw_catalog_builtin(&r->cat);
		r->h = shs_test_host();
		r->m = k ? from_pb : shs_test_parse(t.data);
		shs_test_plan_evaluate(r->h, &r->cat, &spec, r->m, "dp", NULL, &r->cluster, &r->p,
				       &r->ev);
		CU_ASSERT_DOUBLE_EQUAL(r->ev.step_time_s, s->ev.step_time_s,
				       1e-12 * s->ev.step_time_s);
		CU_ASSERT_DOUBLE_EQUAL(r->ev.memory_bytes, s->ev.memory_bytes, 1);
		shs_test_eval_free(r);
	}
	free(pb);
	free(text);
	shs_buf_free(&t);
	shs_test_eval_free(s);
}

/* The whole array a partly manual region gives back is its groups' pieces one after another:
 * the manual axis is the major one of the dim, the region's own split of each piece minor. */
static void partly_manual_exit(void)
{
	static const char text[] =
		"HloModule exit_order\n\nENTRY main {\n"
		"  p0 = f32[128,512] parameter(0), sharding={devices=[8,1]<=[8]}\n"
		"  m0 = f32[64,512] custom-call(p0), custom_call_target=\"SPMDFullToShardShape\", "
		"sharding={devices=[1,1,2,4]<=[8] last_tile_dims={manual, replicated}}\n"
		"  n = f32[64,512] negate(m0)\n"
		"  ROOT o = f32[128,512] custom-call(n), "
		"custom_call_target=\"SPMDShardToFullShape\"\n}\n";
	shs_test_eval *s = calloc(1, sizeof(*s));
	shs_cluster_spec spec = { .hardware = "v5p", .devices = 8, .slices = 1,
				  .mesh = "pipe=2,data=4" };
	uint32_t c, i;
	int pipe, data;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	s->m = shs_test_parse(text);
	shs_hw_catalog_builtin(&s->cat);
	s->h = shs_test_host();
	shs_test_plan_evaluate(s->h, &s->cat, &spec, s->m, "dp", NULL, &s->cluster, &s->p, &s->ev);
	pipe = shs_mesh_axis(&s->p->mesh, "pipe");
	data = shs_mesh_axis(&s->p->mesh, "data");
	find(s->m, "n", &c, &i); /* the region keeps data's split of its piece */
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[0].n, 1);
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[0].axes[0], data);
	find(s->m, "o", &c, &i);
	CU_ASSERT_EQUAL_FATAL(s->p->d[c][i].leaves[0].dims[0].n, 2);
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[0].axes[0], pipe);
	CU_ASSERT_EQUAL(s->p->d[c][i].leaves[0].dims[0].axes[1], data);
	CU_ASSERT_EQUAL(s->ev.n_colls, 0);
	shs_test_eval_free(s);
}

CU_TestInfo manual_tests[] = {
	{ "shard_map's regions are marked; their collectives are the program's", regions_marked },
	{ "the device groups of collectives, in every form", device_groups },
	{ "a region runs on each device's shard; its collectives on the axes they span",
	  regions_priced },
	{ "a region is written back as the program wrote it, and reads back the same",
	  regions_written_back },
	{ "a computation like a region's, outside it, is planned for its own place", twins_apart },
	{ "a region whose split no mesh axes make is refused", region_off_the_mesh },
	{ "a region manual over some axes is planned over the others", partly_manual },
	{ "a partly manual region gives back its groups' pieces in order", partly_manual_exit },
	CU_TEST_INFO_NULL,
};
