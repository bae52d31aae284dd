/* Tests: the HLO text parser on the corpus, each attribute, constants, shapes and bad input. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* ---- Helpers ------------------------------------------------------------------------------ */

/* The instruction named name in computation comp (NULL: any computation), or NULL. */
static shs_instr *find_instr(const shs_module *m, const char *comp, const char *name)
{
	for (uint32_t c = 0; c < m->n_comps; c++) {
		if (comp && strcmp(m->comps[c]->name, comp))
			continue;
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++)
			if (!strcmp(m->comps[c]->instrs[i]->name, name))
				return m->comps[c]->instrs[i];
	}
	return NULL;
}

/* find_instr that fails the test when the instruction is missing. */
static shs_instr *get_instr(const shs_module *m, const char *comp, const char *name)
{
	shs_instr *ins = find_instr(m, comp, name);

	if (!ins)
		fprintf(stderr, "\n  no instruction '%s'\n", name);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ins);
	return ins;
}

/* Name of the computation an instruction calls at position k. */
static const char *called_name(const shs_module *m, const shs_instr *ins, uint32_t k)
{
	CU_ASSERT_TRUE_FATAL(k < ins->n_called);
	CU_ASSERT_TRUE_FATAL(ins->called[k] < m->n_comps);
	return m->comps[ins->called[k]]->name;
}

/* Name of operand k of ins, an instruction of computation comp. */
static const char *operand_name(const shs_module *m, const char *comp, const shs_instr *ins,
				uint32_t k)
{
	const shs_computation *c = shs_module_find_comp(m, comp);

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CU_ASSERT_TRUE_FATAL(k < ins->n_operands);
	CU_ASSERT_TRUE_FATAL(ins->operands[k] < c->n_instrs);
	return c->instrs[ins->operands[k]]->name;
}

/* Asserts list == want[0..n). */
static void assert_i64s(const shs_i64s *list, const int64_t *want, uint32_t n)
{
	SHS_ASSERT_INT_EQ(list->n, n);
	for (uint32_t i = 0; i < n; i++)
		SHS_ASSERT_INT_EQ(list->v[i], want[i]);
}

#define ASSERT_I64S(list, ...)                                                      \
	do {                                                                            \
		const int64_t want_[] = { __VA_ARGS__ };                                    \
		assert_i64s((list), want_, (uint32_t)(sizeof(want_) / sizeof(want_[0]))); \
	} while (0)

static shs_module *load_corpus(const char *name)
{
	size_t len = 0;
	uint8_t *data = shs_test_read_file(shs_test_hlo_path(name), &len);
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(data);
	rc = shs_text_load((const char *)data, len, name, &m, &e);
	free(data);
	SHS_ASSERT_OK(rc, &e);
	return m;
}

/* Parses text expecting failure with code and a message starting "inline.hlo:where: " (where
 * "LINE:COL"; "LINE:" checks the line only) and holding needle (may be NULL). */
static bool check_error(const char *text, int code, const char *where, const char *needle)
{
	shs_module *m = (shs_module *)&m; /* must come back NULL */
	shs_err e = { 0 };
	char prefix[64];
	int rc = shs_text_load(text, strlen(text), "inline.hlo", &m, &e);
	bool ok;

	snprintf(prefix, sizeof(prefix), "inline.hlo:%s%s", where,
		 where[strlen(where) - 1] == ':' ? "" : ": ");
	ok = rc == code && m == NULL && !strncmp(e.msg, prefix, strlen(prefix)) &&
	     (!needle || strstr(e.msg, needle));
	if (!ok)
		fprintf(stderr, "\n  got %d \"%s\"\n  want %d \"%s...%s\"\n", rc, e.msg, code, prefix,
			needle ? needle : "");
	if (rc == SHS_OK)
		shs_module_free(m);
	return ok;
}

static uint16_t u16_at(const shs_literal *l, size_t i)
{
	return (uint16_t)(l->data[2 * i] | l->data[2 * i + 1] << 8);
}

static uint32_t u32_at(const shs_literal *l, size_t i)
{
	uint32_t v = 0;

	for (int b = 3; b >= 0; b--)
		v = v << 8 | l->data[4 * i + (size_t)b];
	return v;
}

static uint64_t u64_at(const shs_literal *l, size_t i)
{
	uint64_t v = 0;

	for (int b = 7; b >= 0; b--)
		v = v << 8 | l->data[8 * i + (size_t)b];
	return v;
}

static float f32_at(const shs_literal *l, size_t i)
{
	uint32_t u = u32_at(l, i);
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* The literal of the root of a one-constant module `ROOT c = shape constant(value)`. */
static shs_module *parse_constant(const char *shape, const char *value, shs_literal **lit)
{
	char text[1024];
	shs_module *m;
	shs_instr *c;

	snprintf(text, sizeof(text), "HloModule k\nENTRY e {\n  ROOT c = %s constant(%s)\n}\n",
		 shape, value);
	m = shs_test_parse(text);
	c = get_instr(m, "e", "c");
	CU_ASSERT_PTR_NOT_NULL_FATAL(c->literal);
	*lit = c->literal;
	return m;
}

/* Expects `ROOT c = shape constant(value)` to fail with code at byte at of value. */
static void constant_fails(const char *shape, const char *value, int code, int at,
			   const char *needle)
{
	static const char head[] = "  ROOT c = ", mid[] = " constant(";
	char text[1024], where[32];

	snprintf(text, sizeof(text), "HloModule k\nENTRY e {\n%s%s%s%s)\n}\n", head, shape, mid,
		 value);
	snprintf(where, sizeof(where), "3:%zu", strlen(head) + strlen(shape) + strlen(mid) + 1 + (size_t)at);
	CU_ASSERT_TRUE(check_error(text, code, where, needle));
}

/* ---- Corpus ------------------------------------------------------------------------------- */

/* Indices and ids are consistent: operands and control in range, callees earlier, ids unique. */
static void check_module_links(const shs_module *m, const char *path)
{
	int64_t want_instr_id = 1;

	CU_ASSERT_TRUE_FATAL(m->n_comps > 0);
	CU_ASSERT_TRUE(m->entry < m->n_comps);
	CU_ASSERT_PTR_NOT_NULL(m->entry_layout);
	for (uint32_t c = 0; c < m->n_comps; c++) {
		const shs_computation *comp = m->comps[c];

		SHS_ASSERT_INT_EQ(comp->id, c + 1);
		CU_ASSERT_TRUE(comp->n_instrs > 0 && comp->root < comp->n_instrs);
		for (uint32_t i = 0; i < comp->n_instrs; i++) {
			const shs_instr *ins = comp->instrs[i];

			if (ins->id != want_instr_id)
				fprintf(stderr, "\n  %s: %s has id %lld\n", path, ins->name,
					(long long)ins->id);
			SHS_ASSERT_INT_EQ(ins->id, want_instr_id);
			want_instr_id++;
			for (uint32_t k = 0; k < ins->n_operands; k++)
				CU_ASSERT_TRUE(ins->operands[k] < comp->n_instrs);
			for (uint32_t k = 0; k < ins->n_control; k++)
				CU_ASSERT_TRUE(ins->control[k] < comp->n_instrs);
			for (uint32_t k = 0; k < ins->n_called; k++)
				CU_ASSERT_TRUE(ins->called[k] < c);
		}
	}
}

static void corpus_parses(void)
{
	size_t n = 0;
	char **files = shs_test_corpus(&n);

	CU_ASSERT_TRUE_FATAL(n >= 59);
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		uint8_t *data = shs_test_read_file(files[i], &len);
		shs_module *m = NULL;
		shs_err e = { 0 };
		int rc;

		CU_ASSERT_PTR_NOT_NULL_FATAL(data);
		rc = shs_text_load((const char *)data, len, files[i], &m, &e);
		if (rc != SHS_OK)
			fprintf(stderr, "\n  %s\n", e.msg);
		CU_ASSERT_EQUAL(rc, SHS_OK);
		if (m)
			check_module_links(m, files[i]);
		shs_module_free(m);
		free(data);
		free(files[i]);
	}
	free(files);
}

static const char maxtext[] = "nv_maxtext_1n1g_jit_train_step_before_optimization.hlo";

static void maxtext_module(void)
{
	shs_module *m = load_corpus(maxtext);
	const shs_computation *entry = shs_module_entry(m);
	uint32_t total = 0;

	SHS_ASSERT_STR_EQ(m->name, "jit_train_step");
	SHS_ASSERT_INT_EQ(m->n_comps, 87);
	for (uint32_t c = 0; c < m->n_comps; c++)
		total += m->comps[c]->n_instrs;
	SHS_ASSERT_INT_EQ(total, 1947);
	SHS_ASSERT_STR_EQ(entry->name, "main.2034");
	SHS_ASSERT_INT_EQ(entry->n_instrs, 822);
	SHS_ASSERT_STR_EQ(entry->instrs[entry->root]->name, "tuple.2033");
	SHS_ASSERT_INT_EQ(entry->instrs[entry->root]->n_operands, 39);
	/* the header's layout: 38 parameters, the 7th f32[8,8,128,2560]{3,2,1,0} */
	SHS_ASSERT_INT_EQ(m->entry_layout->n_params, 38);
	SHS_ASSERT_INT_EQ(m->entry_layout->params[7].type, SHS_F32);
	ASSERT_I64S(&m->entry_layout->params[7].layout->minor_to_major, 3, 2, 1, 0);
	SHS_ASSERT_INT_EQ(m->entry_layout->result.n_tuple, 39);
	CU_ASSERT_PTR_NULL(m->entry_layout->param_names);
	/* aliases {i}: (i, {}, may-alias) for i < 33 */
	SHS_ASSERT_INT_EQ(m->n_aliases, 33);
	for (uint32_t i = 0; i < m->n_aliases; i++) {
		ASSERT_I64S(&m->aliases[i].output_index, i);
		SHS_ASSERT_INT_EQ(m->aliases[i].param_number, i);
		SHS_ASSERT_INT_EQ(m->aliases[i].param_index.n, 0);
		SHS_ASSERT_INT_EQ(m->aliases[i].kind, 1);
	}
	SHS_ASSERT_INT_EQ(m->n_raw_attrs, 0);
	CU_ASSERT_TRUE(m->style.percent);
	CU_ASSERT_TRUE(m->style.operand_shapes);
	CU_ASSERT_TRUE(m->style.signatures);
	CU_ASSERT_FALSE(m->style.compact_entry_layout);
	shs_module_free(m);
}

static void maxtext_instructions(void)
{
	shs_module *m = load_corpus(maxtext);
	shs_instr *dot = get_instr(m, "None.294", "dot.337");
	shs_instr *w = get_instr(m, "main.2034", "while.569");
	shs_instr *sl = get_instr(m, NULL, "slice.357");
	shs_instr *sc = get_instr(m, NULL, "scatter.1425");
	shs_instr *cc = get_instr(m, NULL, "custom-call.316");
	shs_instr *root = shs_module_entry(m)->instrs[shs_module_entry(m)->root];

	ASSERT_I64S(&dot->dot->lhs_contracting, 2);
	ASSERT_I64S(&dot->dot->rhs_contracting, 0);
	SHS_ASSERT_INT_EQ(dot->dot->lhs_batch.n, 0);
	SHS_ASSERT_STR_EQ(operand_name(m, "None.294", dot, 0), "custom-call.335");
	SHS_ASSERT_STR_EQ(operand_name(m, "None.294", dot, 1), "convert.336");
	SHS_ASSERT_INT_EQ(dot->metadata->source_line, 127);
	CU_ASSERT_TRUE(!strncmp(dot->metadata->op_name, "jit(train_step)/jit(main)/jvp(", 30));
	/* while: [body, condition] */
	SHS_ASSERT_INT_EQ(w->op, SHS_OP_WHILE);
	SHS_ASSERT_INT_EQ(w->n_called, 2);
	SHS_ASSERT_STR_EQ(called_name(m, w, 0), "region_0.436");
	SHS_ASSERT_STR_EQ(called_name(m, w, 1), "region_4.543");
	/* slice={[0:16], [0:2048], [0:8], [64:128]} */
	SHS_ASSERT_INT_EQ(sl->n_slice, 4);
	SHS_ASSERT_INT_EQ(sl->slice[1].limit, 2048);
	SHS_ASSERT_INT_EQ(sl->slice[3].start, 64);
	SHS_ASSERT_INT_EQ(sl->slice[3].limit, 128);
	SHS_ASSERT_INT_EQ(sl->slice[3].stride, 1);
	ASSERT_I64S(&sc->scatter->update_window_dims, 2);
	ASSERT_I64S(&sc->scatter->inserted_window_dims, 0);
	ASSERT_I64S(&sc->scatter->scatter_dims_to_operand_dims, 0);
	SHS_ASSERT_INT_EQ(sc->scatter->index_vector_dim, 2);
	SHS_ASSERT_STR_EQ(called_name(m, sc, 0), "region_29.1421");
	SHS_ASSERT_STR_EQ(cc->custom_call_target, "Sharding");
	CU_ASSERT_PTR_NOT_NULL_FATAL(cc->sharding);
	SHS_ASSERT_INT_EQ(cc->sharding->kind, SHS_SHARDING_TILED);
	CU_ASSERT_PTR_NOT_NULL_FATAL(root->sharding);
	SHS_ASSERT_INT_EQ(root->sharding->kind, SHS_SHARDING_TUPLE);
	SHS_ASSERT_INT_EQ(root->sharding->n_tuple, 39);
	shs_module_free(m);
}

static void maxtext_constants(void)
{
	shs_module *m = load_corpus(maxtext);
	shs_literal *eps = get_instr(m, NULL, "constant.310")->literal;
	shs_literal *big = get_instr(m, NULL, "constant.876")->literal;
	shs_literal *ninf = get_instr(m, NULL, "constant.314")->literal;
	shs_literal *one = get_instr(m, NULL, "constant.274")->literal;

	SHS_ASSERT_INT_EQ(eps->size, 4);
	CU_ASSERT_EQUAL(f32_at(eps, 0), 1e-05f);
	CU_ASSERT_EQUAL(f32_at(big, 0), -2.38197633e+38f);
	SHS_ASSERT_INT_EQ(ninf->size, 2);
	SHS_ASSERT_INT_EQ(u16_at(ninf, 0), 0xff80); /* bf16 -inf */
	SHS_ASSERT_INT_EQ(u16_at(one, 0), 0x3f80);  /* bf16 1 */
	shs_module_free(m);
}

static void mha_block(void)
{
	shs_module *m = load_corpus("mha_block_1x12x128x64_bf16.hlo");
	shs_instr *dot = get_instr(m, "main.3", "dot_general.2");
	shs_instr *tr = get_instr(m, "main.3", "transpose.1");
	shs_instr *red = get_instr(m, "main.3", "reduce_max.7");
	shs_instr *k = get_instr(m, "main.3", "k.1");

	CU_ASSERT_FALSE(m->style.percent);
	CU_ASSERT_FALSE(m->style.operand_shapes);
	CU_ASSERT_FALSE(m->style.signatures);
	SHS_ASSERT_INT_EQ(m->entry, 2);
	SHS_ASSERT_INT_EQ(m->entry_layout->n_params, 3);
	ASSERT_I64S(&dot->dot->lhs_batch, 0);
	ASSERT_I64S(&dot->dot->rhs_batch, 0);
	ASSERT_I64S(&dot->dot->lhs_contracting, 2);
	ASSERT_I64S(&dot->dot->rhs_contracting, 1);
	ASSERT_I64S(&tr->dimensions, 0, 1, 3, 2);
	ASSERT_I64S(&tr->shape.layout->minor_to_major, 2, 3, 1, 0);
	SHS_ASSERT_STR_EQ(called_name(m, red, 0), "region_0.1");
	SHS_ASSERT_INT_EQ(u16_at(get_instr(m, "main.3", "constant.5")->literal, 0), 0x3e00);
	SHS_ASSERT_INT_EQ(k->parameter_number, 1);
	shs_module_free(m);
}

static void fuzz_convolution(void)
{
	shs_module *m = load_corpus("xla-fuzz/rand_000067.hlo");
	shs_instr *cv = get_instr(m, NULL, "convolution.4");

	/* window={size=30x11x18 stride=7x3x1 pad=5_7x6_4x1_2 lhs_dilate=3x1x3 rhs_dilate=1x2x2} */
	SHS_ASSERT_INT_EQ(cv->n_window, 3);
	SHS_ASSERT_INT_EQ(cv->window[0].size, 30);
	SHS_ASSERT_INT_EQ(cv->window[1].stride, 3);
	SHS_ASSERT_INT_EQ(cv->window[2].pad_low, 1);
	SHS_ASSERT_INT_EQ(cv->window[2].pad_high, 2);
	SHS_ASSERT_INT_EQ(cv->window[0].base_dilation, 3);
	SHS_ASSERT_INT_EQ(cv->window[1].window_dilation, 2);
	/* dim_labels=bf012_oi012->bf012 */
	SHS_ASSERT_INT_EQ(cv->conv->input_batch, 0);
	SHS_ASSERT_INT_EQ(cv->conv->input_feature, 1);
	ASSERT_I64S(&cv->conv->input_spatial, 2, 3, 4);
	SHS_ASSERT_INT_EQ(cv->conv->kernel_output_feature, 0);
	SHS_ASSERT_INT_EQ(cv->conv->kernel_input_feature, 1);
	ASSERT_I64S(&cv->conv->output_spatial, 2, 3, 4);
	CU_ASSERT_FALSE(m->style.compact_entry_layout); /* one parameter: nothing to join */
	shs_module_free(m);
	/* entry_computation_layout={(s8[10,1]{1,0},s8[10,1]{1,0})->(s8[10,1]{1,0})} */
	m = load_corpus("xla-fuzz/rand_000000.hlo");
	CU_ASSERT_TRUE(m->style.compact_entry_layout);
	SHS_ASSERT_INT_EQ(m->entry_layout->n_params, 2);
	shs_module_free(m);
}

/* ---- Attributes --------------------------------------------------------------------------- */

static const char attrs_text[] =
	"HloModule attrs, is_scheduled=true, num_partitions=4, replica_count=2,\n"
	"  frontend_attributes={xla.sdy.meshes=\"{mesh = <[\\\"x\\\"=4]>}\"},\n"
	"  allow_spmd_sharding_propagation_to_output={true,false}\n"
	"\n"
	"add_f32 {\n"
	"  x = f32[] parameter(0)\n"
	"  y = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(x, y)\n"
	"}\n"
	"\n"
	"cond {\n"
	"  t = (s32[], f32[4]) parameter(0)\n"
	"  i = s32[] get-tuple-element(t), index=0\n"
	"  n = s32[] constant(10)\n"
	"  ROOT lt = pred[] compare(i, n), direction=LT, type=SIGNED\n"
	"}\n"
	"\n"
	"body {\n"
	"  ROOT t = (s32[], f32[4]) parameter(0)\n"
	"}\n"
	"\n"
	"fused {\n"
	"  p = f32[4] parameter(0)\n"
	"  ROOT q = f32[4] negate(p)\n"
	"}\n"
	"\n"
	"other {\n"
	"  p = f32[4] parameter(0)\n"
	"  ROOT q = f32[4] abs(p)\n"
	"}\n"
	"\n"
	"ge {\n"
	"  x = f32[] parameter(0)\n"
	"  y = f32[] parameter(1)\n"
	"  ROOT c = pred[] compare(x, y), direction=GE, type=TOTALORDER\n"
	"}\n"
	"\n"
	"ENTRY main {\n"
	"  a = f32[2,3]{1,0} parameter(0), sharding={replicated}, metadata={op_name=\"a/b\" source_line=3}\n"
	"  b = f32[3,4] parameter(1)\n"
	"  d = f32[2,4] dot(a, b), lhs_batch_dims={}, rhs_batch_dims={}, lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={high,highest}\n"
	"  tr = f32[3,2] transpose(a), dimensions={1,0}\n"
	"  io = s32[5] iota(), iota_dimension=0\n"
	"  cc = f32[2,3] custom-call(a), custom_call_target=\"foo$bar\", custom_call_has_side_effect=true, backend_config=\"x\\\"y\", frontend_attributes={k1=\"v1\",k2=\"v,2\"}\n"
	"  cj = f32[2,3] custom-call(a), custom_call_target=\"j\", backend_config={\"k\": {\"n\": [1, \"}\"]}}\n"
	"  idx = s32[2,1] parameter(2)\n"
	"  g = f32[2,3] gather(a, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, operand_batching_dims={1}, start_indices_batching_dims={0}, index_vector_dim=1, slice_sizes={1,3}, indices_are_sorted=true, unique_indices=true\n"
	"  sc = f32[2,3] scatter(a, idx, a), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, input_batching_dims={1}, scatter_indices_batching_dims={0}, index_vector_dim=1, to_apply=add_f32\n"
	"  ds = f32[1,3] dynamic-slice(a, i0, i0), dynamic_slice_sizes={1,3}\n"
	"  i0 = s32[] constant(0)\n"
	"  sl = f32[1,2] slice(a), slice={[0:1], [0:3:2]}\n"
	"  img = f32[1,5,5,2] parameter(3)\n"
	"  ker = f32[3,3,2,4] parameter(4)\n"
	"  cv = f32[1,3,3,4] convolution(img, ker), window={size=3x3 stride=2x1 pad=0_1x1_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1\n"
	"  rw = f32[1,2] reduce-window(a, z), window={size=2x2}, to_apply=add_f32\n"
	"  z = f32[] constant(0)\n"
	"  rp = f32[2,3] reduce-precision(a), exponent_bits=5, mantissa_bits=10\n"
	"  pd = f32[3,8] pad(a, z), padding=0_1x1_2_1\n"
	"  f = f32[4] fusion(v), kind=kLoop, calls=fused\n"
	"  v = f32[4] parameter(5)\n"
	"  st = f32[4] sort(v), dimensions={0}, is_stable=true, to_apply=cond\n"
	"  tk = (f32[1], s32[1]) topk(v), k=1, largest=true\n"
	"  ar = f32[4] all-reduce(v), channel_id=7, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add_f32\n"
	"  w = (s32[], f32[4]) while(wt), condition=cond, body=body\n"
	"  wt = (s32[], f32[4]) tuple(i0, v), control-predecessors={ar, st}\n"
	"  pr = pred[] parameter(6)\n"
	"  c1 = f32[4] conditional(pr, v, v), false_computation=other, true_computation=fused\n"
	"  sas = f32[4] select-and-scatter(v, v, z), window={size=2 stride=2}, scatter=add_f32, select=ge\n"
	"  c2 = f32[4] conditional(i0, v, v, v), branch_computations={fused, fused, fused}\n"
	"  ROOT r = (f32[2,4], f32[3,2]) tuple(d, tr), custom={a=\"x,}y\", b=[1,(2)]}\n"
	"}\n";

static void module_header_attributes(void)
{
	shs_module *m = shs_test_parse(attrs_text);

	SHS_ASSERT_INT_EQ(m->num_partitions, 4);
	SHS_ASSERT_INT_EQ(m->replica_count, 2);
	SHS_ASSERT_INT_EQ(m->n_frontend_attrs, 1);
	SHS_ASSERT_STR_EQ(m->frontend_attrs[0].key, "xla.sdy.meshes");
	SHS_ASSERT_STR_EQ(m->frontend_attrs[0].value, "{mesh = <[\"x\"=4]>}");
	SHS_ASSERT_INT_EQ(m->n_raw_attrs, 2);
	SHS_ASSERT_STR_EQ(m->raw_attrs[0].name, "is_scheduled");
	SHS_ASSERT_STR_EQ(m->raw_attrs[0].value, "true");
	SHS_ASSERT_STR_EQ(m->raw_attrs[1].name, "allow_spmd_sharding_propagation_to_output");
	SHS_ASSERT_STR_EQ(m->raw_attrs[1].value, "{true,false}");
	/* no entry_computation_layout: derived from the parameters, in parameter-number order */
	CU_ASSERT_PTR_NOT_NULL_FATAL(m->entry_layout);
	SHS_ASSERT_INT_EQ(m->entry_layout->n_params, 7);
	SHS_ASSERT_INT_EQ(m->entry_layout->params[2].type, SHS_S32);
	SHS_ASSERT_INT_EQ(m->entry_layout->params[6].type, SHS_PRED);
	ASSERT_I64S(&m->entry_layout->params[0].layout->minor_to_major, 1, 0);
	SHS_ASSERT_INT_EQ(m->entry_layout->result.n_tuple, 2);
	SHS_ASSERT_STR_EQ(shs_module_entry(m)->name, "main");
	shs_module_free(m);
}

static void dot_gather_scatter_attributes(void)
{
	shs_module *m = shs_test_parse(attrs_text);
	shs_instr *d = get_instr(m, "main", "d");
	shs_instr *g = get_instr(m, "main", "g");
	shs_instr *sc = get_instr(m, "main", "sc");

	ASSERT_I64S(&d->dot->lhs_contracting, 1);
	ASSERT_I64S(&d->dot->rhs_contracting, 0);
	SHS_ASSERT_INT_EQ(d->dot->lhs_batch.n + d->dot->rhs_batch.n, 0);
	SHS_ASSERT_INT_EQ(d->n_precision, 2);
	SHS_ASSERT_INT_EQ(d->precision[0], SHS_PRECISION_HIGH);
	SHS_ASSERT_INT_EQ(d->precision[1], SHS_PRECISION_HIGHEST);
	ASSERT_I64S(&g->gather->offset_dims, 1);
	ASSERT_I64S(&g->gather->collapsed_slice_dims, 0);
	ASSERT_I64S(&g->gather->start_index_map, 0);
	ASSERT_I64S(&g->gather->operand_batching_dims, 1);
	ASSERT_I64S(&g->gather->start_indices_batching_dims, 0);
	SHS_ASSERT_INT_EQ(g->gather->index_vector_dim, 1);
	ASSERT_I64S(&g->gather_slice_sizes, 1, 3);
	CU_ASSERT_TRUE(g->indices_are_sorted);
	CU_ASSERT_TRUE(g->unique_indices);
	ASSERT_I64S(&sc->scatter->update_window_dims, 1);
	ASSERT_I64S(&sc->scatter->inserted_window_dims, 0);
	ASSERT_I64S(&sc->scatter->scatter_dims_to_operand_dims, 0);
	SHS_ASSERT_INT_EQ(sc->scatter->index_vector_dim, 1);
	ASSERT_I64S(&sc->scatter->input_batching_dims, 1);
	ASSERT_I64S(&sc->scatter->scatter_indices_batching_dims, 0);
	CU_ASSERT_PTR_NULL(sc->gather);
	SHS_ASSERT_STR_EQ(called_name(m, sc, 0), "add_f32");
	shs_module_free(m);
}

static void shape_op_attributes(void)
{
	shs_module *m = shs_test_parse(attrs_text);
	shs_instr *io = get_instr(m, "main", "io");
	shs_instr *ds = get_instr(m, "main", "ds");
	shs_instr *sl = get_instr(m, "main", "sl");
	shs_instr *rp = get_instr(m, "main", "rp");
	shs_instr *pd = get_instr(m, "main", "pd");
	shs_instr *gte = get_instr(m, "cond", "i");
	shs_instr *lt = get_instr(m, "cond", "lt");

	ASSERT_I64S(&io->dimensions, 0);
	ASSERT_I64S(&ds->dynamic_slice_sizes, 1, 3);
	SHS_ASSERT_INT_EQ(sl->n_slice, 2);
	SHS_ASSERT_INT_EQ(sl->slice[1].limit, 3);
	SHS_ASSERT_INT_EQ(sl->slice[1].stride, 2);
	SHS_ASSERT_INT_EQ(sl->slice[0].stride, 1);
	SHS_ASSERT_INT_EQ(rp->exponent_bits, 5);
	SHS_ASSERT_INT_EQ(rp->mantissa_bits, 10);
	SHS_ASSERT_INT_EQ(pd->n_padding, 2);
	SHS_ASSERT_INT_EQ(pd->padding[0].high, 1);
	SHS_ASSERT_INT_EQ(pd->padding[1].low, 1);
	SHS_ASSERT_INT_EQ(pd->padding[1].high, 2);
	SHS_ASSERT_INT_EQ(pd->padding[1].interior, 1);
	SHS_ASSERT_INT_EQ(gte->tuple_index, 0);
	SHS_ASSERT_STR_EQ(lt->comparison_direction, "LT");
	SHS_ASSERT_STR_EQ(lt->comparison_type, "SIGNED");
	shs_module_free(m);
}

static void convolution_attributes(void)
{
	shs_module *m = shs_test_parse(attrs_text);
	shs_instr *cv = get_instr(m, "main", "cv");
	shs_instr *rw = get_instr(m, "main", "rw");

	SHS_ASSERT_INT_EQ(cv->n_window, 2);
	SHS_ASSERT_INT_EQ(cv->window[0].size, 3);
	SHS_ASSERT_INT_EQ(cv->window[0].stride, 2);
	SHS_ASSERT_INT_EQ(cv->window[1].stride, 1);
	SHS_ASSERT_INT_EQ(cv->window[0].pad_low, 0);
	SHS_ASSERT_INT_EQ(cv->window[0].pad_high, 1);
	SHS_ASSERT_INT_EQ(cv->window[1].base_dilation, 2);
	SHS_ASSERT_INT_EQ(cv->window[0].window_dilation, 2);
	CU_ASSERT_FALSE(cv->window[0].reversal);
	CU_ASSERT_TRUE(cv->window[1].reversal);
	/* b01f_01io->b01f */
	SHS_ASSERT_INT_EQ(cv->conv->input_batch, 0);
	SHS_ASSERT_INT_EQ(cv->conv->input_feature, 3);
	ASSERT_I64S(&cv->conv->input_spatial, 1, 2);
	ASSERT_I64S(&cv->conv->kernel_spatial, 0, 1);
	SHS_ASSERT_INT_EQ(cv->conv->kernel_input_feature, 2);
	SHS_ASSERT_INT_EQ(cv->conv->kernel_output_feature, 3);
	SHS_ASSERT_INT_EQ(cv->conv->output_feature, 3);
	SHS_ASSERT_INT_EQ(cv->feature_group_count, 1);
	SHS_ASSERT_INT_EQ(cv->batch_group_count, 1);
	/* defaults: stride and dilations 1, no padding */
	SHS_ASSERT_INT_EQ(rw->n_window, 2);
	SHS_ASSERT_INT_EQ(rw->window[1].size, 2);
	SHS_ASSERT_INT_EQ(rw->window[1].stride, 1);
	SHS_ASSERT_INT_EQ(rw->window[1].base_dilation, 1);
	SHS_ASSERT_INT_EQ(rw->window[1].window_dilation, 1);
	SHS_ASSERT_INT_EQ(rw->window[1].pad_high, 0);
	shs_module_free(m);
}

static void custom_call_and_config_attributes(void)
{
	shs_module *m = shs_test_parse(attrs_text);
	shs_instr *a = get_instr(m, "main", "a");
	shs_instr *cc = get_instr(m, "main", "cc");
	shs_instr *cj = get_instr(m, "main", "cj");
	shs_instr *ar = get_instr(m, "main", "ar");
	shs_instr *tk = get_instr(m, "main", "tk");
	shs_instr *st = get_instr(m, "main", "st");
	shs_instr *r = get_instr(m, "main", "r");
	static const char json[] = "{\"k\": {\"n\": [1, \"}\"]}}";

	SHS_ASSERT_INT_EQ(a->sharding->kind, SHS_SHARDING_REPLICATED);
	SHS_ASSERT_STR_EQ(a->metadata->op_name, "a/b");
	SHS_ASSERT_INT_EQ(a->metadata->source_line, 3);
	SHS_ASSERT_STR_EQ(cc->custom_call_target, "foo$bar");
	CU_ASSERT_TRUE(cc->custom_call_has_side_effect);
	SHS_ASSERT_INT_EQ(cc->backend_config.len, 3);
	CU_ASSERT_TRUE(!memcmp(cc->backend_config.data, "x\"y", 3));
	SHS_ASSERT_INT_EQ(cc->n_frontend_attrs, 2);
	SHS_ASSERT_STR_EQ(cc->frontend_attrs[1].key, "k2");
	SHS_ASSERT_STR_EQ(cc->frontend_attrs[1].value, "v,2");
	SHS_ASSERT_INT_EQ(cj->backend_config.len, strlen(json));
	CU_ASSERT_TRUE(!memcmp(cj->backend_config.data, json, strlen(json)));
	SHS_ASSERT_INT_EQ(ar->channel_id, 7);
	SHS_ASSERT_INT_EQ(ar->n_raw_attrs, 2);
	SHS_ASSERT_STR_EQ(ar->raw_attrs[0].name, "replica_groups");
	SHS_ASSERT_STR_EQ(ar->raw_attrs[0].value, "{{0,1},{2,3}}");
	SHS_ASSERT_STR_EQ(ar->raw_attrs[1].value, "true");
	CU_ASSERT_TRUE(tk->largest);
	SHS_ASSERT_STR_EQ(tk->raw_attrs[0].name, "k");
	CU_ASSERT_TRUE(st->is_stable);
	ASSERT_I64S(&st->dimensions, 0);
	SHS_ASSERT_STR_EQ(r->raw_attrs[0].value, "{a=\"x,}y\", b=[1,(2)]}");
	shs_module_free(m);
}

static void called_computations_and_control(void)
{
	shs_module *m = shs_test_parse(attrs_text);
	shs_instr *f = get_instr(m, "main", "f");
	shs_instr *w = get_instr(m, "main", "w");
	shs_instr *wt = get_instr(m, "main", "wt");
	shs_instr *c1 = get_instr(m, "main", "c1");
	shs_instr *c2 = get_instr(m, "main", "c2");
	shs_instr *sas = get_instr(m, "main", "sas");

	SHS_ASSERT_STR_EQ(f->fusion_kind, "kLoop");
	SHS_ASSERT_STR_EQ(called_name(m, f, 0), "fused");
	/* forward reference: v is defined after f */
	SHS_ASSERT_STR_EQ(operand_name(m, "main", f, 0), "v");
	SHS_ASSERT_INT_EQ(w->n_called, 2);
	SHS_ASSERT_STR_EQ(called_name(m, w, 0), "body");
	SHS_ASSERT_STR_EQ(called_name(m, w, 1), "cond");
	SHS_ASSERT_INT_EQ(wt->n_control, 2);
	SHS_ASSERT_STR_EQ(shs_module_entry(m)->instrs[wt->control[0]]->name, "ar");
	SHS_ASSERT_STR_EQ(shs_module_entry(m)->instrs[wt->control[1]]->name, "st");
	SHS_ASSERT_INT_EQ(c1->n_called, 2); /* [true, false] whatever the text order */
	SHS_ASSERT_STR_EQ(called_name(m, c1, 0), "fused");
	SHS_ASSERT_STR_EQ(called_name(m, c1, 1), "other");
	SHS_ASSERT_INT_EQ(sas->n_called, 2); /* [select, scatter] */
	SHS_ASSERT_STR_EQ(called_name(m, sas, 0), "ge");
	SHS_ASSERT_STR_EQ(called_name(m, sas, 1), "add_f32");
	SHS_ASSERT_INT_EQ(sas->n_window, 1);
	SHS_ASSERT_INT_EQ(sas->window[0].stride, 2);
	SHS_ASSERT_INT_EQ(c2->n_called, 3);
	SHS_ASSERT_STR_EQ(called_name(m, c2, 2), "fused");
	shs_module_free(m);
}

static void forward_references(void)
{
	shs_module *m = shs_test_parse("HloModule fwd\n"
				       "ENTRY e {\n"
				       "  ROOT r = f32[] add(x, y), control-predecessors={y}\n"
				       "  y = f32[] negate(x)\n"
				       "  x = f32[] parameter(0)\n"
				       "}\n");
	shs_computation *c = shs_module_entry(m);

	SHS_ASSERT_INT_EQ(c->root, 0);
	SHS_ASSERT_INT_EQ(c->instrs[0]->operands[0], 2);
	SHS_ASSERT_INT_EQ(c->instrs[0]->operands[1], 1);
	SHS_ASSERT_INT_EQ(c->instrs[0]->control[0], 1);
	SHS_ASSERT_INT_EQ(c->instrs[1]->operands[0], 2);
	shs_module_free(m);
}

static void names_ids_root_and_entry_defaults(void)
{
	/* no ROOT: the last instruction; no ENTRY: the last computation */
	shs_module *m = shs_test_parse("HloModule d\n"
				       "%first (p: f32[]) -> f32[] {\n"
				       "  %p = f32[] parameter(0)\n"
				       "  %n = f32[] negate(f32[] %p)\n"
				       "}\n"
				       "%second {\n"
				       "  %q = f32[] parameter(0)\n"
				       "  %c = f32[] call(%q), to_apply=%first\n"
				       "}, execution_thread=\"host\"\n");

	SHS_ASSERT_INT_EQ(m->n_comps, 2);
	SHS_ASSERT_INT_EQ(m->entry, 1);
	SHS_ASSERT_STR_EQ(m->comps[0]->name, "first");
	SHS_ASSERT_INT_EQ(m->comps[0]->root, 1);
	SHS_ASSERT_INT_EQ(m->comps[1]->id, 2);
	SHS_ASSERT_INT_EQ(m->comps[1]->instrs[1]->id, 4);
	SHS_ASSERT_STR_EQ(m->comps[1]->instrs[1]->name, "c");
	SHS_ASSERT_STR_EQ(m->comps[1]->execution_thread, "host");
	CU_ASSERT_PTR_NULL(m->comps[0]->execution_thread);
	CU_ASSERT_TRUE(m->style.percent);
	CU_ASSERT_TRUE(m->style.operand_shapes);
	CU_ASSERT_TRUE(m->style.signatures);
	shs_module_free(m);
}

static void aliases_and_entry_layout(void)
{
	shs_module *m = shs_test_parse(
		"HloModule al, input_output_alias={ {0}: (1, {}, must-alias), {1, 0}: (0, {2}) },\n"
		"  entry_computation_layout={(f32[2]{0}, (f32[], f32[], f32[]))->(f32[2]{0}, (f32[]))}\n"
		"ENTRY e {\n"
		"  a = f32[2] parameter(0)\n"
		"  b = (f32[], f32[], f32[]) parameter(1)\n"
		"  g = f32[] get-tuple-element(b), index=2\n"
		"  t = (f32[]) tuple(g)\n"
		"  ROOT r = (f32[2], (f32[])) tuple(a, t)\n"
		"}\n");

	SHS_ASSERT_INT_EQ(m->n_aliases, 2);
	ASSERT_I64S(&m->aliases[0].output_index, 0);
	SHS_ASSERT_INT_EQ(m->aliases[0].param_number, 1);
	SHS_ASSERT_INT_EQ(m->aliases[0].kind, 2);
	ASSERT_I64S(&m->aliases[1].output_index, 1, 0);
	ASSERT_I64S(&m->aliases[1].param_index, 2);
	SHS_ASSERT_INT_EQ(m->aliases[1].kind, 1); /* may-alias when left out */
	SHS_ASSERT_INT_EQ(m->entry_layout->n_params, 2);
	SHS_ASSERT_INT_EQ(m->entry_layout->params[1].n_tuple, 3);
	ASSERT_I64S(&m->entry_layout->params[0].layout->minor_to_major, 0);
	shs_module_free(m);
}

/* ---- Shapes ------------------------------------------------------------------------------- */

static void shapes_dynamic_tuple_layout(void)
{
	shs_module *m = shs_test_parse(
		"HloModule s\n"
		"ENTRY e {\n"
		"  a = f32[<=10,?,3]{2,1,0} parameter(0)\n"
		"  b = bf16[8,128]{1,0:T(8,128)(2,1)E(16)S(1)} parameter(1)\n"
		"  c = ((f32[], /*index=1*/s32[2]), (), token[]) parameter(2)\n"
		"  ROOT t = () tuple()\n"
		"}\n");
	shs_shape *a = &get_instr(m, "e", "a")->shape;
	shs_shape *b = &get_instr(m, "e", "b")->shape;
	shs_shape *c = &get_instr(m, "e", "c")->shape;

	SHS_ASSERT_INT_EQ(a->rank, 3);
	SHS_ASSERT_INT_EQ(a->dims[0], 10);
	SHS_ASSERT_INT_EQ(a->dims[1], INT64_MIN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a->dynamic);
	CU_ASSERT_TRUE(a->dynamic[0] && a->dynamic[1] && !a->dynamic[2]);
	SHS_ASSERT_INT_EQ(b->layout->n_tiles, 2);
	ASSERT_I64S(&b->layout->tiles[0], 8, 128);
	ASSERT_I64S(&b->layout->tiles[1], 2, 1);
	SHS_ASSERT_INT_EQ(b->layout->element_size_in_bits, 16);
	SHS_ASSERT_INT_EQ(b->layout->memory_space, 1);
	CU_ASSERT_PTR_NULL(get_instr(m, "e", "t")->shape.tuple);
	SHS_ASSERT_INT_EQ(c->type, SHS_TUPLE);
	SHS_ASSERT_INT_EQ(c->n_tuple, 3);
	SHS_ASSERT_INT_EQ(c->tuple[0].tuple[1].dims[0], 2);
	SHS_ASSERT_INT_EQ(c->tuple[1].n_tuple, 0);
	SHS_ASSERT_INT_EQ(c->tuple[2].type, SHS_TOKEN);
	CU_ASSERT_PTR_NULL(get_instr(m, "e", "a")->shape.tuple);
	shs_module_free(m);
}

static void shapes_at_the_limits(void)
{
	char text[2048];
	shs_buf dims = { 0 };
	shs_module *m;

	/* 64 dimensions and 64 nested tuples are fine */
	for (int i = 0; i < SHS_MAX_RANK; i++)
		shs_buf_puts(&dims, i ? ",1" : "1");
	snprintf(text, sizeof(text), "HloModule s\nENTRY e {\n  ROOT a = f32[%s] parameter(0)\n}\n",
		 dims.data);
	m = shs_test_parse(text);
	SHS_ASSERT_INT_EQ(shs_module_entry(m)->instrs[0]->shape.rank, SHS_MAX_RANK);
	shs_module_free(m);
	snprintf(text, sizeof(text), "HloModule s\nENTRY e {\n  ROOT a = f32[%s,1] parameter(0)\n}\n",
		 dims.data);
	CU_ASSERT_TRUE(check_error(text, SHS_EPARSE, "3:144", "more than 64 dimensions"));
	shs_buf_free(&dims);
	/* unsupported layout attributes say so */
	CU_ASSERT_TRUE(check_error("HloModule s\nENTRY e {\n  ROOT a = f32[2]{0:L(2)} parameter(0)\n}\n",
				   SHS_EUNSUPPORTED, "3:21", "not supported"));
}

/* ---- Constants ---------------------------------------------------------------------------- */

static void constants_nested_and_tuples(void)
{
	shs_literal *l;
	shs_module *m = parse_constant("s32[2,3]", "{ {1, 2, 3}, /*x*/ {4, 5, -6} }", &l);

	SHS_ASSERT_INT_EQ(l->size, 24);
	CU_ASSERT_FALSE(l->elided);
	SHS_ASSERT_INT_EQ(u32_at(l, 2), 3);
	SHS_ASSERT_INT_EQ(u32_at(l, 3), 4);
	SHS_ASSERT_INT_EQ((int32_t)u32_at(l, 5), -6);
	shs_module_free(m);
	m = parse_constant("f32[2,0]", "{ {}, {} }", &l);
	SHS_ASSERT_INT_EQ(l->size, 0);
	shs_module_free(m);
	m = parse_constant("f32[100,100]", "{...}", &l);
	CU_ASSERT_TRUE(l->elided);
	CU_ASSERT_PTR_NULL(l->data);
	shs_module_free(m);
	m = parse_constant("(s32[2], (f32[], pred[]))", "( {1, 2}, (0.5, true) )", &l);
	SHS_ASSERT_INT_EQ(l->n_tuple, 2);
	SHS_ASSERT_INT_EQ(u32_at(&l->tuple[0], 1), 2);
	CU_ASSERT_EQUAL(f32_at(&l->tuple[1].tuple[0], 0), 0.5f);
	SHS_ASSERT_INT_EQ(l->tuple[1].tuple[1].data[0], 1);
	shs_module_free(m);
	m = parse_constant("c64[2]", "{(1, 0), (-2.5, 3)}", &l);
	SHS_ASSERT_INT_EQ(l->size, 16);
	CU_ASSERT_EQUAL(f32_at(l, 0), 1.0f);
	CU_ASSERT_EQUAL(f32_at(l, 2), -2.5f);
	CU_ASSERT_EQUAL(f32_at(l, 3), 3.0f);
	shs_module_free(m);
	m = parse_constant("pred[3]", "{true, false, 1}", &l);
	CU_ASSERT_TRUE(l->data[0] == 1 && l->data[1] == 0 && l->data[2] == 1);
	shs_module_free(m);
}

static void constants_round_like_xla(void)
{
	shs_literal *l;
	shs_module *m;

	/* bf16: nearest, ties to even; through float first as XLA (1.003906250001 is a tie once
	 * rounded to float, so it goes to even 0x3f80 although it lies above the midpoint) */
	m = parse_constant("bf16[5]", "{3.141, 1.00390625, 1.01171875, 1.003906250001, -0}", &l);
	SHS_ASSERT_INT_EQ(u16_at(l, 0), 0x4049);
	SHS_ASSERT_INT_EQ(u16_at(l, 1), 0x3f80);
	SHS_ASSERT_INT_EQ(u16_at(l, 2), 0x3f82);
	SHS_ASSERT_INT_EQ(u16_at(l, 3), 0x3f80);
	SHS_ASSERT_INT_EQ(u16_at(l, 4), 0x8000);
	shs_module_free(m);
	m = parse_constant("f16[3]", "{65504, 65519, 0.1}", &l);
	SHS_ASSERT_INT_EQ(u16_at(l, 0), 0x7bff);
	SHS_ASSERT_INT_EQ(u16_at(l, 1), 0x7bff);
	SHS_ASSERT_INT_EQ(u16_at(l, 2), 0x2e66);
	shs_module_free(m);
	m = parse_constant("f32[3]", "{0.1, 3.4028235e38, 1e-46}", &l);
	SHS_ASSERT_INT_EQ(u32_at(l, 0), 0x3dcccccd);
	SHS_ASSERT_INT_EQ(u32_at(l, 1), 0x7f7fffff); /* rounds down to FLT_MAX */
	SHS_ASSERT_INT_EQ(u32_at(l, 2), 0);
	shs_module_free(m);
	m = parse_constant("f64[]", "0.1", &l);
	CU_ASSERT_EQUAL(u64_at(l, 0), 0x3fb999999999999aull);
	shs_module_free(m);
}

static void constants_special_values(void)
{
	shs_literal *l;
	shs_module *m = parse_constant("f32[5]", "{inf, -inf, nan, -nan, nan(0x1)}", &l);

	SHS_ASSERT_INT_EQ(u32_at(l, 0), 0x7f800000);
	SHS_ASSERT_INT_EQ(u32_at(l, 1), 0xff800000);
	SHS_ASSERT_INT_EQ(u32_at(l, 2), 0x7fc00000);
	SHS_ASSERT_INT_EQ(u32_at(l, 3), 0xffc00000);
	SHS_ASSERT_INT_EQ(u32_at(l, 4), 0x7f800001);
	shs_module_free(m);
	m = parse_constant("bf16[2]", "{nan, -inf}", &l);
	SHS_ASSERT_INT_EQ(u16_at(l, 0), 0x7fc0);
	SHS_ASSERT_INT_EQ(u16_at(l, 1), 0xff80);
	shs_module_free(m);
}

static void constants_integer_ranges(void)
{
	shs_literal *l;
	shs_module *m = parse_constant("s8[2]", "{-128, 127}", &l);

	SHS_ASSERT_INT_EQ(l->data[0], 0x80);
	SHS_ASSERT_INT_EQ(l->data[1], 0x7f);
	shs_module_free(m);
	m = parse_constant("u64[]", "18446744073709551615", &l);
	CU_ASSERT_EQUAL(u64_at(l, 0), UINT64_MAX);
	shs_module_free(m);
	m = parse_constant("s64[]", "-9223372036854775808", &l);
	CU_ASSERT_EQUAL(u64_at(l, 0), 0x8000000000000000ull);
	shs_module_free(m);
	m = parse_constant("s4[2]", "{-8, 7}", &l);
	SHS_ASSERT_INT_EQ(l->size, 2);
	SHS_ASSERT_INT_EQ((int8_t)l->data[0], -8);
	shs_module_free(m);
	constant_fails("u8[]", "256", SHS_EPARSE, 0, "out of range for u8");
	constant_fails("u8[]", "-1", SHS_EPARSE, 0, "out of range for u8");
	constant_fails("s4[]", "8", SHS_EPARSE, 0, "out of range for s4");
	constant_fails("u64[]", "18446744073709551616", SHS_EPARSE, 0, "out of range");
	constant_fails("s32[]", "1.5", SHS_EPARSE, 0, "expected an integer");
	constant_fails("f16[]", "65520", SHS_EPARSE, 0, "out of range for f16");
	constant_fails("f32[]", "3.5e38", SHS_EPARSE, 0, "out of range for f32");
	constant_fails("bf16[]", "1e39", SHS_EPARSE, 0, "out of range for bf16");
	constant_fails("f8e4m3fn[]", "1", SHS_EUNSUPPORTED, 0, "not supported");
	constant_fails("f32[2]", "{1, 2, 3}", SHS_EPARSE, 7, "more than 2 elements");
	constant_fails("f32[2,2]", "{1, 2}", SHS_EPARSE, 1, "expected '{'");
	constant_fails("(f32[], f32[])", "(1)", SHS_EPARSE, 2, "expected ','");
	constant_fails("f32[]", "{...}", SHS_EPARSE, 0, "expected a number");
	constant_fails("s32[3]", "{1, 2 3}", SHS_EPARSE, 6, "expected ',' or '}'");
	constant_fails("s32[?]", "{1}", SHS_EPARSE, 0, "unbounded");
	constant_fails("f32[]", "nan(0x800000)", SHS_EPARSE, 0, "payload");
}

/* ---- Malformed input ---------------------------------------------------------------------- */

typedef struct bad_case {
	const char *text;
	int code;
	const char *where; /* LINE:COL */
	const char *needle;
} bad_case;

/* check_error on each case; names the failing ones. */
static bool check_cases(const bad_case *cases, size_t n)
{
	bool ok = true;

	for (size_t i = 0; i < n; i++) {
		if (!check_error(cases[i].text, cases[i].code, cases[i].where, cases[i].needle)) {
			fprintf(stderr, "  (case %zu)\n", i);
			ok = false;
		}
	}
	return ok;
}

static void malformed_inputs(void)
{
	static const char deep_head[] = "HloModule m\nENTRY e {\n  ROOT a = ";
	static const bad_case cases[] = {
		{ "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] foo(a)\n}\n",
		  SHS_EPARSE, "4:18", "unknown opcode (found 'foo')" },
		{ "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(c)\n}\n",
		  SHS_EPARSE, "4:25", "unknown operand in computation 'e' (found 'c')" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[2,x] parameter(0)\n}\n",
		  SHS_EPARSE, "3:18", "(found 'x')" },
		{ "HloModule m\nENTRY e {\n  ROOT a = g32[2] parameter(0)\n}\n",
		  SHS_EPARSE, "3:12", "unknown element type" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[2,-3] parameter(0)\n}\n",
		  SHS_EPARSE, "3:18", "negative dimension" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[4294967296,4294967296] parameter(0)\n}\n",
		  SHS_EPARSE, "3:27", "too many elements" },
		{ "HloModule m\nENTRY e {\n  /* never closed\n  ROOT a = f32[] parameter(0)\n}\n",
		  SHS_EPARSE, "3:3", "unterminated comment" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] custom-call(), custom_call_target=\"abc\n}\n",
		  SHS_EPARSE, "3:52", "unterminated string" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[2,2] constant({ {1, 2}, {3} })\n}\n",
		  SHS_EPARSE, "3:42", "1 elements in dimension 1, want 2" },
		{ "HloModule m\nENTRY e {\n  a f32[] parameter(0)\n}\n",
		  SHS_EPARSE, "3:5", "expected '='" },
		{ "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  a = f32[] parameter(1)\n}\n",
		  SHS_EPARSE, "4:3", "duplicate instruction name" },
		{ "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT r = f32[] call(a), to_apply=g\n}\n",
		  SHS_EPARSE, "4:36", "unknown computation" },
		{ "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT r = f32[] negate(",
		  SHS_EPARSE, "4:25", "end of input" },
		{ "HloModule m\nENTRY e {\n  ROOT r = f32[] call(), to_apply=later\n}\nlater {\n  ROOT a = f32[] constant(1)\n}\n",
		  SHS_EPARSE, "3:35", "defined before it is called" },
		{ "HloModule m\nc {\n  ROOT a = f32[] constant(1)\n}\n%c {\n  ROOT a = f32[] constant(1)\n}\n",
		  SHS_EPARSE, "5:1", "duplicate computation name" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n}\n",
		  SHS_EPARSE, "4:3", "second ROOT" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\nENTRY f {\n  ROOT a = f32[] parameter(0)\n}\n",
		  SHS_EPARSE, "5:1", "second ENTRY" },
		{ "HloModule m\nENTRY e (x: f32[], y: f32[]) -> f32[] {\n  ROOT a = f32[] parameter(0)\n}\n",
		  SHS_EPARSE, "2:9", "signature has 2 parameters" },
		{ "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] negate(f32[3] a)\n}\n",
		  SHS_EPARSE, "4:26", "operand shape differs" },
		{ "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT b = f32[] parameter(0)\n}\n",
		  SHS_EPARSE, "4:8", "parameter number 0 used twice" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[2,3]{0,0} parameter(0)\n}\n",
		  SHS_EPARSE, "3:20", "not a permutation" },
		{ "HloModule m, entry_computation_layout={(f32[3])->f32[2]}\nENTRY e {\n  ROOT a = f32[2] parameter(0)\n}\n",
		  SHS_EPARSE, "1:41", "entry_computation_layout parameter 0 differs" },
		{ "HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = f32[2] negate(a), control-predecessors={zz}\n}\n",
		  SHS_EPARSE, "4:52", "unknown control predecessor" },
		{ "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] reduce-window(a, a), window={size=2x2 stride=1}\n}\n",
		  SHS_EPARSE, "4:47", "window fields disagree" },
		{ "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] convolution(a, a), dim_labels=bf0_io->bf0\n}\n",
		  SHS_EPARSE, "4:49", "malformed dim_labels" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), metadata={op_name=3}\n}\n",
		  SHS_EPARSE, "3:50", NULL },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), sharding={devices=[2]<=[3]}\n}\n",
		  SHS_EPARSE, "3:", "sharding" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), dimensions={1}, dimensions={2}\n}\n",
		  SHS_EPARSE, "3:48", "given twice" },
		{ "HloModule m\nENTRY e {\n}\n", SHS_EPARSE, "3:1", "no instructions" },
		{ "", SHS_EPARSE, "1:1", "expected 'HloModule'" },
		{ "HloModule m, a=b\n", SHS_EPARSE, "2:1", "expected a computation" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\nFileNames\n1 \"a.py\"\n",
		  SHS_EUNSUPPORTED, "5:1", "not supported" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0) # x\n}\n",
		  SHS_EPARSE, "3:31", "unexpected character" },
	};
	shs_buf deep = { 0 };

	CU_ASSERT_TRUE(check_cases(cases, sizeof(cases) / sizeof(cases[0])));
	/* 100000 nested tuple shapes: an error at the 65th '(', never a stack overflow */
	shs_buf_puts(&deep, deep_head);
	for (int i = 0; i < 100000; i++)
		shs_buf_putc(&deep, '(');
	shs_buf_puts(&deep, "f32[]");
	for (int i = 0; i < 100000; i++)
		shs_buf_putc(&deep, ')');
	shs_buf_puts(&deep, " parameter(0)\n}\n");
	CU_ASSERT_FALSE_FATAL(deep.oom);
	CU_ASSERT_TRUE(check_error(deep.data, SHS_EPARSE, "3:76", "nested deeper than 64"));
	shs_buf_free(&deep);
}

/* Attribute values read without the lexer (raw, x-separated, nested parsers) fail at the place
 * of the bad byte; attributes kept as written are still checked for repeats. */
static void attribute_value_errors(void)
{
	static const bad_case cases[] = {
		{ "HloModule m, a=b, a=c\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\n",
		  SHS_EPARSE, "1:19", "module attribute given twice (found 'a')" },
		{ "HloModule m, foo\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\n",
		  SHS_EPARSE, "2:1", "expected '=' after the module attribute name" },
		{ "HloModule m, num_partitions=2, num_partitions=2\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\n",
		  SHS_EPARSE, "1:32", "module attribute given twice" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), foo=1, foo=2\n}\n",
		  SHS_EPARSE, "3:39", "attribute given twice (found 'foo')" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), foo={[}\n}\n",
		  SHS_EPARSE, "3:38", "mismatched '}' in a value" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), foo=\n}\n",
		  SHS_EPARSE, "4:1", "expected a value" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[2]{0:#} parameter(0)\n}\n",
		  SHS_EUNSUPPORTED, "3:21", "(only T, E and S are) (found '#')" },
		{ "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] reduce-window(a, a), window={size=2 pad=1}\n}\n",
		  SHS_EPARSE, "5:1", "expected low_high in window padding" },
		{ "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] reduce-window(a, a), window={size=2y}\n}\n",
		  SHS_EPARSE, "4:54", "malformed window (found 'y')" },
		{ "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] pad(a, a), padding=1_1_-1\n}\n",
		  SHS_EPARSE, "5:1", "expected a non-negative interior padding" },
		{ "HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT b = f32[4] dot(a, a), operand_precision={low}\n}\n",
		  SHS_EPARSE, "4:49", "expected default, high or highest (found 'low')" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0), metadata=x\n}\n",
		  SHS_EPARSE, "3:41", "expected '{' to open the metadata" },
		{ "HloModule m\nENTRY e {\n  ROOT a = f32[] custom-call(), custom_call_target=\"a\\q\"\n}\n",
		  SHS_EPARSE, "3:54", "bad escape" },
		{ "HloModule m\nc {\n  ROOT a = f32[] constant(1)\n}\nENTRY e {\n  ROOT r = f32[] call(), calls={c c}\n}\n",
		  SHS_EPARSE, "6:35", "expected ',' or '}' between computations" },
	};

	CU_ASSERT_TRUE(check_cases(cases, sizeof(cases) / sizeof(cases[0])));
}

/* Every prefix of a valid module fails cleanly (no crash, no leak, *out stays NULL). */
static void truncated_prefixes(void)
{
	const char *text = attrs_text;
	size_t len = strlen(text);

	for (size_t n = 0; n < len; n++) {
		shs_module *m = NULL;
		shs_err e = { 0 };
		int rc = shs_text_load(text, n, "cut.hlo", &m, &e);

		if (rc == SHS_OK) { /* a cut at the end of a line can still be a whole module */
			shs_module_free(m);
			continue;
		}
		CU_ASSERT_PTR_NULL(m);
		CU_ASSERT_TRUE(!strncmp(e.msg, "cut.hlo:", 8));
	}
}

static void null_error_record(void)
{
	shs_module *m = NULL;
	static const char text[] = "HloModule m\nENTRY e {\n  ROOT a = f32[] foo()\n}\n";

	SHS_ASSERT_INT_EQ(shs_text_load(text, strlen(text), "x.hlo", &m, NULL), SHS_EPARSE);
	CU_ASSERT_PTR_NULL(m);
}

/* A NUL byte inside a value kept raw (a header attribute, an instruction attribute) is refused
 * where it is: a header value was kept as a C string, cut there, and printed unbalanced
 * (fuzz_text: the printed module did not load). */
static void nul_in_raw_value(void)
{
	static const char header[] = "HloModule m, entry_x={a\0b}\n\nENTRY e {\n"
				     "  ROOT p = f32[] parameter(0)\n}\n";
	static const char attr[] = "HloModule m\n\nENTRY e {\n"
				   "  ROOT p = f32[] parameter(0), statistics={visualizing\0}\n}\n";
	const struct {
		const char *text;
		size_t len;
		const char *where;
	} cases[] = {
		{ header, sizeof(header) - 1, "nul.hlo:1:24: " },
		{ attr, sizeof(attr) - 1, "nul.hlo:4:55: " },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		shs_module *m = NULL;
		shs_err e = { 0 };

		SHS_ASSERT_INT_EQ(shs_text_load(cases[i].text, cases[i].len, "nul.hlo", &m, &e),
				  SHS_EPARSE);
		CU_ASSERT_PTR_NULL(m);
		if (strncmp(e.msg, cases[i].where, strlen(cases[i].where)))
			fprintf(stderr, "\n  got \"%s\", want \"%s...\"\n", e.msg, cases[i].where);
		CU_ASSERT_EQUAL(strncmp(e.msg, cases[i].where, strlen(cases[i].where)), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "NUL byte"));
	}
}

/* As XLA's parser: without them the IR held zeroed dimension numbers, printed dim_labels=f_o->f,
 * which does not read back (fuzz_text). */
static void convolution_needs_dim_labels(void)
{
	static const char head[] = "HloModule m\n\nENTRY e {\n  a = f32[1,4,4,1] parameter(0)\n"
				   "  k = f32[3,3,1,1] parameter(1)\n"
				   "  ROOT c = f32[1,2,2,1] convolution(a, k), window={size=3x3}";
	char text[sizeof(head) + 64];
	shs_module *m = NULL;
	shs_err e = { 0 };

	snprintf(text, sizeof(text), "%s\n}\n", head);
	CU_ASSERT_TRUE(check_error(text, SHS_EPARSE, "7:1", "a convolution needs dim_labels"));
	snprintf(text, sizeof(text), "%s, dim_labels=b01f_01io->b01f\n}\n", head);
	SHS_ASSERT_OK(shs_text_load(text, strlen(text), "conv.hlo", &m, &e), &e);
	shs_module_free(m);
}

CU_TestInfo text_tests[] = {
	{ "every corpus file parses with consistent links and ids", corpus_parses },
	{ "MaxText: computations, entry layout, aliases, style", maxtext_module },
	{ "MaxText: dot, while, slice, scatter, shardings, metadata", maxtext_instructions },
	{ "MaxText: f32 and bf16 constant values", maxtext_constants },
	{ "MHA block: dot dims, layouts, bf16 constant, plain names", mha_block },
	{ "fuzz corpus: convolution window, dim_labels, compact layout", fuzz_convolution },
	{ "module header: config values, frontend and raw attributes", module_header_attributes },
	{ "dot, gather and scatter dimension numbers", dot_gather_scatter_attributes },
	{ "dimensions, slices, padding, comparisons", shape_op_attributes },
	{ "convolution window and dim_labels, window defaults", convolution_attributes },
	{ "custom-call, backend config, frontend and raw attributes", custom_call_and_config_attributes },
	{ "called computations in XLA's order, control predecessors", called_computations_and_control },
	{ "operands may name later instructions", forward_references },
	{ "%names, ids, default root and entry, execution thread", names_ids_root_and_entry_defaults },
	{ "input_output_alias and entry_computation_layout", aliases_and_entry_layout },
	{ "shapes: dynamic dims, tiles, nested tuples, tokens", shapes_dynamic_tuple_layout },
	{ "shapes: rank and nesting limits, unsupported layouts", shapes_at_the_limits },
	{ "constants: nested arrays, empty, elided, tuples, complex", constants_nested_and_tuples },
	{ "constants: bf16/f16/f32 round as XLA does", constants_round_like_xla },
	{ "constants: inf, nan, payloads", constants_special_values },
	{ "constants: integer ranges and bad values", constants_integer_ranges },
	{ "malformed inputs: code and exact position", malformed_inputs },
	{ "attribute values: bad bytes, repeats, unsupported layouts", attribute_value_errors },
	{ "every prefix of a module fails cleanly", truncated_prefixes },
	{ "a NULL error record is allowed", null_error_record },
	{ "a NUL byte in a raw value is refused where it is", nul_in_raw_value },
	{ "a convolution needs dim_labels", convolution_needs_dim_labels },
	CU_TEST_INFO_NULL,
};
