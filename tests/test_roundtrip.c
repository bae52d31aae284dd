/* Tests: every real module loads, verifies, prints, and survives text and protobuf round trips. */
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "test_util.h"

/* Loads text[0..len) as HLO text, failing the test with the message on error. */
static shs_module *load_text(const char *text, size_t len, const char *origin)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_text_load(text, len, origin, &m, &e);

	if (rc != SHS_OK)
		fprintf(stderr, "\n  %s\n", e.msg);
	CU_ASSERT_EQUAL_FATAL(rc, SHS_OK);
	return m;
}

/* Asserts x and y are equal IR, printing where they differ. */
static void assert_same_ir(const shs_module *x, const shs_module *y, const char *what,
			   const char *path)
{
	shs_buf why = { 0 };
	bool same = shs_module_equal(x, y, &why);

	if (!same)
		fprintf(stderr, "\n  %s: %s: %s\n", path, what, why.data ? why.data : "?");
	shs_buf_free(&why);
	CU_ASSERT_TRUE_FATAL(same);
}

/* text -> IR -> text -> IR, and text -> IR -> proto -> IR -> proto, for one file. */
static void round_trip_file(const char *path)
{
	size_t len = 0;
	char *text = (char *)shs_test_read_file(path, &len);
	shs_module *m1, *m2, *m3, *m4;
	shs_buf printed = { 0 };
	uint8_t *pb = NULL, *pb2 = NULL;
	size_t pb_len = 0, pb2_len = 0;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	m1 = load_text(text, len, path);
	SHS_ASSERT_OK(shs_module_verify(m1, &e), &e);

	shs_text_print(&printed, m1, NULL);
	CU_ASSERT_FALSE_FATAL(printed.oom);
	CU_ASSERT_TRUE_FATAL(printed.len > 0);
	m2 = load_text(printed.data, printed.len, "printed");
	assert_same_ir(m1, m2, "text -> IR -> text -> IR", path);

	SHS_ASSERT_OK(shs_proto_save(m1, false, &pb, &pb_len, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, pb_len, "saved.pb", &m3, &e), &e);
	assert_same_ir(m1, m3, "text -> proto -> IR", path);
	SHS_ASSERT_OK(shs_module_verify(m3, &e), &e);

	/* and the protobuf written from the reloaded module is the same bytes */
	SHS_ASSERT_OK(shs_proto_save(m3, false, &pb2, &pb2_len, &e), &e);
	SHS_ASSERT_INT_EQ(pb2_len, pb_len);
	CU_ASSERT_EQUAL_FATAL(memcmp(pb, pb2, pb_len), 0);

	/* proto -> text -> IR keeps the IR too */
	shs_buf_reset(&printed);
	shs_text_print(&printed, m3, NULL);
	m4 = load_text(printed.data, printed.len, "printed-from-proto");
	assert_same_ir(m1, m4, "text -> proto -> text -> IR", path);

	shs_module_free(m1);
	shs_module_free(m2);
	shs_module_free(m3);
	shs_module_free(m4);
	shs_buf_free(&printed);
	free(pb);
	free(pb2);
	free(text);
}

static void corpus_round_trips(void)
{
	size_t n = 0;
	char **files = shs_test_corpus(&n);

	/* the shared folder holds the MaxText module, the MHA block and 57 fuzz modules */
	CU_ASSERT_TRUE_FATAL(n >= 59);
	for (size_t k = 0; k < n; k++) {
		round_trip_file(files[k]);
		free(files[k]);
	}
	free(files);
}

static void hlo_proto_wrapper_kept(void)
{
	shs_module *m = shs_test_parse(
		"HloModule w\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n  ROOT n = f32[4]{0} negate(p)\n}\n");
	shs_module *back = NULL;
	uint8_t *pb = NULL;
	size_t len = 0;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_proto_save(m, true, &pb, &len, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, len, "w.pb", &back, &e), &e);
	CU_ASSERT_TRUE(back->from_hlo_proto);
	assert_same_ir(m, back, "HloProto wrapper", "inline");
	free(pb);
	shs_module_free(back);
	pb = NULL;
	SHS_ASSERT_OK(shs_proto_save(m, false, &pb, &len, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, len, "m.pb", &back, &e), &e);
	CU_ASSERT_FALSE(back->from_hlo_proto);
	free(pb);
	shs_module_free(back);
	shs_module_free(m);
}

static void files_round_trip(void)
{
	const char *hlo = shs_test_hlo_path("mha_block_1x12x128x64_bf16.hlo");
	char pb[4096], txt[4096];
	shs_module *a = NULL, *b = NULL, *c = NULL;
	shs_err e = { 0 };

	snprintf(pb, sizeof(pb), "%s", shs_test_tmp_path("mha.pb"));
	snprintf(txt, sizeof(txt), "%s", shs_test_tmp_path("mha.hlo"));
	SHS_ASSERT_OK(shs_module_load_file(hlo, SHS_FORMAT_AUTO, &a, &e), &e);
	SHS_ASSERT_INT_EQ(a->source_format, SHS_FORMAT_TEXT);
	SHS_ASSERT_OK(shs_module_save_file(a, pb, SHS_FORMAT_AUTO, &e), &e);
	SHS_ASSERT_OK(shs_module_load_file(pb, SHS_FORMAT_AUTO, &b, &e), &e);
	SHS_ASSERT_INT_EQ(b->source_format, SHS_FORMAT_PROTO);
	SHS_ASSERT_OK(shs_module_save_file(b, txt, SHS_FORMAT_AUTO, &e), &e);
	SHS_ASSERT_OK(shs_module_load_file(txt, SHS_FORMAT_AUTO, &c, &e), &e);
	assert_same_ir(a, b, "file .hlo -> .pb", hlo);
	assert_same_ir(a, c, "file .hlo -> .pb -> .hlo", hlo);
	shs_module_free(a);
	shs_module_free(b);
	shs_module_free(c);
}

/* Instructions of m whose raw attribute name has value value (any value when NULL). */
static int count_raw(const shs_module *m, const char *name, const char *value)
{
	int n = 0;

	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const shs_instr *in = m->comps[c]->instrs[i];

			for (uint32_t k = 0; k < in->n_raw_attrs; k++)
				n += !strcmp(in->raw_attrs[k].name, name) &&
				     (!value || !strcmp(in->raw_attrs[k].value, value));
		}
	return n;
}

/* MaxText on 4 GPUs after SPMD partitioning: its replica groups (iota form), the context-parallel
 * rings of collective-permutes and Transformer Engine's layout-constrained FFI custom calls are
 * written as protobuf fields and read back; the module round-trips like the others. */
static void partitioned_round_trips(void)
{
	const char *path = shs_test_hlo_path("partitioned/hlo_llama3_8b_cp_bf16_1x4.hlo");
	shs_module *m = NULL, *back = NULL;
	uint8_t *pb = NULL;
	size_t len = 0;
	int constrained = 0;
	shs_err e = { 0 };

	round_trip_file(path);
	SHS_ASSERT_OK(shs_module_load_file(path, SHS_FORMAT_AUTO, &m, &e), &e);
	SHS_ASSERT_OK(shs_proto_save(m, false, &pb, &len, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, len, "partitioned.pb", &back, &e), &e);
	SHS_ASSERT_INT_EQ(count_raw(back, "replica_groups", "[1,4]<=[4]"), 68);
	SHS_ASSERT_INT_EQ(count_raw(back, "use_global_device_ids", "true"), 68);
	SHS_ASSERT_INT_EQ(count_raw(back, "source_target_pairs", "{{0,1},{1,2},{2,3},{3,0}}"), 11);
	SHS_ASSERT_INT_EQ(count_raw(back, "api_version", "API_VERSION_TYPED_FFI"), 12);
	for (uint32_t c = 0; c < back->n_comps; c++)
		for (uint32_t i = 0; i < back->comps[c]->n_instrs; i++) {
			const shs_instr *in = back->comps[c]->instrs[i];

			if (in->layout_constrained) {
				constrained++;
				SHS_ASSERT_INT_EQ(in->n_operand_layouts, in->n_operands);
				CU_ASSERT_PTR_NOT_NULL(in->operand_layouts[0].layout);
			}
		}
	SHS_ASSERT_INT_EQ(constrained, 12);
	free(pb);
	shs_module_free(back);
	shs_module_free(m);
}

/* A module with every attribute of XLA's text that HloModuleProto / HloInstructionProto hold and
 * the IR keeps as text, each as XLA prints it (issue 18). */
static const char every_attribute[] =
	"HloModule every, is_scheduled=true, buffer_donor={ (0, {}) }, "
	"allow_spmd_sharding_propagation_to_parameters={false,true}, num_partitions=4\n\n"
	"add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(x, y)\n}\n\n"
	"comp {\n  a = f32[8] parameter(0)\n  ROOT n = f32[8] negate(a)\n}\n\n"
	"ENTRY main {\n  p0 = f32[8] parameter(0)\n  p1 = f32[8] parameter(1)\n"
	"  ar = f32[8] all-reduce(p0), channel_id=1, replica_groups={{0,1},{2,3}}, "
	"constrain_layout=true, use_global_device_ids=true, to_apply=add\n"
	"  ag = f32[32] all-gather(p1), channel_id=2, replica_groups=[1,4]<=[2,2]T(1,0), "
	"dimensions={0}, use_global_device_ids=true\n"
	"  rs = f32[2] reduce-scatter(p0), channel_id=3, replica_groups=[1,4]<=[4], "
	"use_global_device_ids=true, dimensions={0}, to_apply=add\n"
	"  cp = f32[8] collective-permute(ar), channel_id=4, "
	"source_target_pairs={{0,1},{1,2},{2,3},{3,0}}\n"
	"  cc = f32[8] custom-call(cp, p1), custom_call_target=\"kernel\", "
	"operand_layout_constraints={f32[8]{0}, f32[8]{0}}, api_version=API_VERSION_TYPED_FFI\n"
	"  cl = f32[8] call(cc), to_apply=comp, is_composite=true, "
	"frontend_attributes={composite.name=\"foo.bar\",composite.version=\"1\"}\n"
	"  ex = f32[8] exponential(cl), result_accuracy={mode=highest}\n"
	"  lg = f32[8] log(ex), statistics={visualizing_index=1,stat-0=55.5,stat-1=44.4}, "
	"result_accuracy={tolerance={atol=1e-05,rtol=0,ulps=2}}\n"
	"  c = f32[] constant(2), origin={{\"rhs\"}}\n"
	"  t = (f32[8], f32[32]) tuple(lg, ag), origin={({\"lg\"}, {\"ag\" {0}}, {})}\n"
	"  ROOT r = (f32[8], f32[32], f32[2], f32[]) tuple(lg, ag, rs, c), "
	"origin={[synthetic_call]}\n}\n";

/* The value of raw attribute name of instruction instr in the entry, or NULL. */
static const char *raw_value(const shs_module *m, const char *instr, const char *name)
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t i = 0; i < c->n_instrs; i++)
		for (uint32_t k = 0; !strcmp(c->instrs[i]->name, instr) &&
				     k < c->instrs[i]->n_raw_attrs; k++)
			if (!strcmp(c->instrs[i]->raw_attrs[k].name, name))
				return c->instrs[i]->raw_attrs[k].value;
	return NULL;
}

/* Every such attribute survives text -> proto -> text, and the header's configuration is left
 * out of protobuf (as XLA leaves it out) and named as such. */
static void every_attribute_round_trips(void)
{
	static const char *const expect[][3] = {
		{ "ar", "replica_groups", "{{0,1},{2,3}}" }, { "ar", "constrain_layout", "true" },
		{ "ag", "replica_groups", "[1,4]<=[2,2]T(1,0)" },
		{ "rs", "use_global_device_ids", "true" },
		{ "cp", "source_target_pairs", "{{0,1},{1,2},{2,3},{3,0}}" },
		{ "cc", "api_version", "API_VERSION_TYPED_FFI" }, { "cl", "is_composite", "true" },
		{ "ex", "result_accuracy", "{mode=highest}" },
		{ "lg", "result_accuracy", "{tolerance={atol=1e-05,rtol=0,ulps=2}}" },
		{ "lg", "statistics", "{visualizing_index=1,stat-0=55.5,stat-1=44.4}" },
		{ "c", "origin", "{{\"rhs\"}}" },
		{ "t", "origin", "{({\"lg\"}, {\"ag\" {0}}, {})}" },
		{ "r", "origin", "{[synthetic_call]}" },
	};
	const char *path = shs_test_tmp_path("every.hlo");
	FILE *f = fopen(path, "w");
	shs_module *m, *back = NULL;
	uint8_t *pb = NULL;
	size_t len = 0;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(every_attribute, f);
	fclose(f);
	round_trip_file(path);
	m = shs_test_parse(every_attribute);
	SHS_ASSERT_OK(shs_proto_save(m, false, &pb, &len, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, len, "every.pb", &back, &e), &e);
	for (size_t k = 0; k < sizeof(expect) / sizeof(expect[0]); k++) {
		const char *v = raw_value(back, expect[k][0], expect[k][1]);

		if (!v || strcmp(v, expect[k][2]))
			fprintf(stderr, "\n  %s %s: %s, want %s\n", expect[k][0], expect[k][1],
				v ? v : "(none)", expect[k][2]);
		CU_ASSERT_TRUE(v && !strcmp(v, expect[k][2]));
	}
	CU_ASSERT_TRUE(shs_module_entry(back)->instrs[6]->layout_constrained);
	SHS_ASSERT_INT_EQ(back->n_raw_attrs, 2); /* is_scheduled, buffer_donor */
	SHS_ASSERT_STR_EQ(back->raw_attrs[1].value, "{ (0, {}) }");
	SHS_ASSERT_INT_EQ(back->num_partitions, 0);
	free(pb);
	shs_module_free(back);
	shs_module_free(m);
}

/* The generated flash-attention module (LLaMA-3 8B with 2 layers, scanned and unrolled, both
 * kernels) verifies and survives text and protobuf round trips; it holds one forward and one
 * backward kernel per layer body with their backend_config. */
static void generated_flash_round_trips(void)
{
	static const char *const kernels[] = { "pallas", "cudnn" };

	for (int k = 0; k < 2; k++) {
		for (int scan = 0; scan < 2; scan++) {
			shs_gen_config c = shs_test_preset("llama3-8b");
			shs_module *m = NULL, *m2 = NULL, *m3 = NULL;
			shs_buf printed = { 0 };
			uint8_t *pb = NULL;
			size_t pb_len = 0;
			uint32_t calls = 0;
			shs_err e = { 0 };

			SHS_ASSERT_OK(shs_gen_config_set(&c, "layers", "2", &e), &e);
			SHS_ASSERT_OK(shs_gen_config_set(&c, "seq", "256", &e), &e);
			SHS_ASSERT_OK(shs_gen_config_set(&c, "batch", "2", &e), &e);
			SHS_ASSERT_OK(shs_gen_config_set(&c, "vocab", "1024", &e), &e);
			SHS_ASSERT_OK(shs_gen_config_set(&c, "attention_kernel", kernels[k], &e), &e);
			c.scan = scan;
			SHS_ASSERT_OK(shs_gen_module(&c, &m, NULL, &e), &e);
			SHS_ASSERT_OK(shs_module_verify(m, &e), &e);
			for (uint32_t j = 0; j < m->n_comps; j++)
				for (uint32_t i = 0; i < m->comps[j]->n_instrs; i++) {
					const shs_instr *in = m->comps[j]->instrs[i];

					if (in->op != SHS_OP_CUSTOM_CALL)
						continue;
					calls++;
					CU_ASSERT_TRUE(in->backend_config.len > 0);
					CU_ASSERT_PTR_NOT_NULL(strstr(in->custom_call_target,
								      k ? "__cudnn$fmha" :
									  "tpu_custom_call"));
				}
			/* a forward and a backward per layer body: 2 layers unrolled, 1 scanned */
			SHS_ASSERT_INT_EQ(calls, scan ? 2 : 4);

			shs_text_print(&printed, m, NULL);
			CU_ASSERT_FALSE_FATAL(printed.oom);
			m2 = load_text(printed.data, printed.len, "printed");
			assert_same_ir(m, m2, "gen -> text -> IR", "flash");
			SHS_ASSERT_OK(shs_proto_save(m, false, &pb, &pb_len, &e), &e);
			SHS_ASSERT_OK(shs_proto_load(pb, pb_len, "flash.pb", &m3, &e), &e);
			assert_same_ir(m, m3, "gen -> proto -> IR", "flash");
			SHS_ASSERT_OK(shs_module_verify(m3, &e), &e);
			free(pb);
			shs_buf_free(&printed);
			shs_module_free(m3);
			shs_module_free(m2);
			shs_module_free(m);
		}
	}
}

CU_TestInfo roundtrip_tests[] = {
	{ "generated flash attention: verifies, text and protobuf round trips",
	  generated_flash_round_trips },
	{ "every shared module round-trips through text and protobuf", corpus_round_trips },
	{ "a partitioned module: replica groups, permutes, FFI calls in protobuf",
	  partitioned_round_trips },
	{ "every attribute XLA's protobuf holds round-trips", every_attribute_round_trips },
	{ "HloProto and bare HloModuleProto are kept apart", hlo_proto_wrapper_kept },
	{ "files round-trip by extension", files_round_trip },
	CU_TEST_INFO_NULL,
};
