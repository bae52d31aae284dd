/* Tests: structural hashes follow what instructions compute, not what they are called. */
#include <stdlib.h>
#include <string.h>

#include "test_build.h"

enum { NAME_MAX_LEN = 64 };

/* Makes i an f32 scalar constant of value v (little-endian bytes, as the IR stores them). */
static void set_f32(shs_module *m, shs_instr *i, float v)
{
	uint32_t u;
	uint8_t le[sizeof(u)];

	memcpy(&u, &v, sizeof(u));
	for (size_t k = 0; k < sizeof(le); k++)
		le[k] = (uint8_t)(u >> (8 * k));
	i->literal = shs_arena_calloc(m->arena, 1, sizeof(*i->literal));
	CU_ASSERT_PTR_NOT_NULL_FATAL(i->literal);
	i->literal->size = sizeof(le);
	i->literal->data = shs_arena_memdup(m->arena, le, sizeof(le));
}

/* One "layer" computation: reduce(x @ w - broadcast(0.5), dim 1) with reducer as to_apply.
 * Instruction names start with prefix. */
static shs_computation *build_layer(shs_module *m, const char *comp_name, const char *prefix,
				    const char *reducer)
{
	shs_computation *c = tb_comp(m, comp_name);
	char x[NAME_MAX_LEN], w[NAME_MAX_LEN], d[NAME_MAX_LEN], k[NAME_MAX_LEN], b[NAME_MAX_LEN],
		s[NAME_MAX_LEN], z[NAME_MAX_LEN], r[NAME_MAX_LEN];
	shs_instr *i;

	snprintf(x, sizeof(x), "%s.x", prefix);
	snprintf(w, sizeof(w), "%s.w", prefix);
	snprintf(d, sizeof(d), "%s.dot", prefix);
	snprintf(k, sizeof(k), "%s.half", prefix);
	snprintf(b, sizeof(b), "%s.bcast", prefix);
	snprintf(s, sizeof(s), "%s.sub", prefix);
	snprintf(z, sizeof(z), "%s.zero", prefix);
	snprintf(r, sizeof(r), "%s.red", prefix);
	tb_param(m, c, x, "f32[8,16]", 0);
	tb_param(m, c, w, "f32[16,4]", 1);
	i = tb_add(m, c, d, SHS_OP_DOT, "f32[8,4]", x, w, NULL);
	i->dot = shs_arena_calloc(m->arena, 1, sizeof(*i->dot));
	i->dot->lhs_contracting = tb_list(m, "1");
	i->dot->rhs_contracting = tb_list(m, "0");
	set_f32(m, tb_add(m, c, k, SHS_OP_CONSTANT, "f32[]", NULL), 0.5f);
	tb_add(m, c, b, SHS_OP_BROADCAST, "f32[8,4]", k, NULL);
	tb_add(m, c, s, SHS_OP_SUBTRACT, "f32[8,4]", d, b, NULL);
	set_f32(m, tb_add(m, c, z, SHS_OP_CONSTANT, "f32[]", NULL), 0.0f);
	i = tb_add(m, c, r, SHS_OP_REDUCE, "f32[8]", s, z, NULL);
	i->dimensions = tb_list(m, "1");
	tb_calls(m, i, reducer, NULL);
	return c;
}

/* A reducer, two identical layers under different names, and an entry calling both. */
static shs_module *layers_module(void)
{
	shs_module *m = tb_module("layers");
	shs_computation *c;

	tb_adder(m, "sum", "f32");
	build_layer(m, "layer_a", "a", "sum");
	build_layer(m, "layer_b", "b", "sum");
	c = tb_comp(m, "main");
	tb_param(m, c, "x", "f32[8,16]", 0);
	tb_param(m, c, "w", "f32[16,4]", 1);
	tb_calls(m, tb_add(m, c, "ya", SHS_OP_CALL, "f32[8]", "x", "w", NULL), "layer_a", NULL);
	tb_calls(m, tb_add(m, c, "yb", SHS_OP_CALL, "f32[8]", "x", "w", NULL), "layer_b", NULL);
	tb_add(m, c, "out", SHS_OP_TUPLE, "(f32[8], f32[8])", "ya", "yb", NULL);
	return m;
}

static uint32_t index_of(const shs_module *m, const char *name)
{
	return tb_comp_index(m, name);
}

/* Hashes every computation of m into a new array (caller frees with free()). */
static uint64_t *hash_all(const shs_module *m)
{
	uint64_t *h = calloc(m->n_comps, sizeof(*h));
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	SHS_ASSERT_OK(shs_module_hash(m, h, &e), &e);
	return h;
}

/* The hash of computation name after mutate(m) ran on a fresh layers module. */
static uint64_t hash_after(void (*mutate)(shs_module *), const char *name)
{
	shs_module *m = layers_module();
	uint64_t *h, v;

	if (mutate)
		mutate(m);
	h = hash_all(m);
	v = h[index_of(m, name)];
	free(h);
	shs_module_free(m);
	return v;
}

static shs_instr *in_layer_a(shs_module *m, const char *name)
{
	return tb_find(m->comps[index_of(m, "layer_a")], name);
}

static void identical_layers_hash_alike(void)
{
	shs_module *m = layers_module();
	const shs_computation *a = m->comps[index_of(m, "layer_a")];
	const shs_computation *b = m->comps[index_of(m, "layer_b")];
	uint64_t *h = hash_all(m);
	uint64_t ia[16], ib[16], ca = 0, cb = 0;
	shs_err e = { 0 };

	CU_ASSERT_EQUAL(h[index_of(m, "layer_a")], h[index_of(m, "layer_b")]);
	CU_ASSERT_NOT_EQUAL(h[index_of(m, "layer_a")], h[index_of(m, "sum")]);
	CU_ASSERT_FATAL(a->n_instrs <= 16 && a->n_instrs == b->n_instrs);
	SHS_ASSERT_OK(shs_comp_hash(m, a, ia, &ca, &e), &e);
	SHS_ASSERT_OK(shs_comp_hash(m, b, ib, &cb, &e), &e);
	CU_ASSERT_EQUAL(ca, h[index_of(m, "layer_a")]);
	CU_ASSERT_EQUAL(cb, h[index_of(m, "layer_b")]);
	CU_ASSERT_EQUAL(memcmp(ia, ib, a->n_instrs * sizeof(*ia)), 0);
	CU_ASSERT_NOT_EQUAL(ia[0], ia[1]); /* x and w differ in shape and number */
	free(h);
	shs_module_free(m);
}

static void rename_everything(shs_module *m)
{
	for (uint32_t c = 0; c < m->n_comps; c++) {
		shs_computation *comp = m->comps[c];
		char name[NAME_MAX_LEN];

		snprintf(name, sizeof(name), "renamed.%u", c);
		comp->name = shs_arena_strdup(m->arena, name);
		comp->id += 1000;
		for (uint32_t j = 0; j < comp->n_instrs; j++) {
			snprintf(name, sizeof(name), "r%u.%u", c, j);
			comp->instrs[j]->name = shs_arena_strdup(m->arena, name);
			comp->instrs[j]->id += 7000;
		}
	}
}

static void renaming_keeps_hashes(void)
{
	shs_module *m = layers_module(), *r = layers_module();
	uint64_t *hm, *hr;

	rename_everything(r);
	hm = hash_all(m);
	hr = hash_all(r);
	CU_ASSERT_EQUAL(memcmp(hm, hr, m->n_comps * sizeof(*hm)), 0);
	free(hm);
	free(hr);
	shs_module_free(m);
	shs_module_free(r);
}

static void annotate(shs_module *m)
{
	shs_instr *i = in_layer_a(m, "a.dot");

	i->metadata = shs_arena_calloc(m->arena, 1, sizeof(*i->metadata));
	i->metadata->op_name = "jit(f)/dot";
	i->unknown.len = 3;
	i->unknown.data = (const uint8_t *)"\x08\x01\x10";
}

static void metadata_and_unknown_bytes_do_not_count(void)
{
	CU_ASSERT_EQUAL(hash_after(annotate, "layer_a"), hash_after(NULL, "layer_a"));
}

static void change_dim(shs_module *m)
{
	in_layer_a(m, "a.x")->shape.dims[0] = 9;
}

static void change_layout(shs_module *m)
{
	shs_shape *s = &in_layer_a(m, "a.w")->shape;

	s->layout = shs_arena_calloc(m->arena, 1, sizeof(*s->layout));
	s->layout->minor_to_major = tb_list(m, "0,1");
}

static void change_attribute(shs_module *m)
{
	in_layer_a(m, "a.red")->dimensions.v[0] = 0;
}

static void change_dot_dims(shs_module *m)
{
	shs_dot_dims *d = in_layer_a(m, "a.dot")->dot;

	d->lhs_batch = d->lhs_contracting;
	d->lhs_contracting.n = 0;
}

static void swap_operands(shs_module *m)
{
	shs_instr *i = in_layer_a(m, "a.sub");
	uint32_t t = i->operands[0];

	i->operands[0] = i->operands[1];
	i->operands[1] = t;
}

static void change_constant(shs_module *m)
{
	set_f32(m, in_layer_a(m, "a.half"), 0.25f);
}

static void change_opcode(shs_module *m)
{
	in_layer_a(m, "a.sub")->op = SHS_OP_ADD;
}

static void change_parameter_number(shs_module *m)
{
	in_layer_a(m, "a.x")->parameter_number = 1;
	in_layer_a(m, "a.w")->parameter_number = 0;
}

static void change_reducer(shs_module *m)
{
	tb_find(m->comps[index_of(m, "sum")], "sum.sum")->op = SHS_OP_MAXIMUM;
}

static void change_root(shs_module *m)
{
	m->comps[index_of(m, "layer_a")]->root = 0;
}

static void changes_change_hashes(void)
{
	static const struct {
		const char *what;
		void (*mutate)(shs_module *);
	} cases[] = {
		{ "a dim", change_dim },
		{ "a layout", change_layout },
		{ "reduce dimensions", change_attribute },
		{ "dot dimension numbers", change_dot_dims },
		{ "the operand order", swap_operands },
		{ "a constant", change_constant },
		{ "an opcode", change_opcode },
		{ "parameter numbers", change_parameter_number },
		{ "the called reducer", change_reducer },
		{ "the root", change_root },
	};
	uint64_t base = hash_after(NULL, "layer_a");

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t h = hash_after(cases[k].mutate, "layer_a");

		if (h == base)
			fprintf(stderr, "\n  changing %s kept the hash\n", cases[k].what);
		CU_ASSERT_NOT_EQUAL(h, base);
	}
}

static void callee_change_reaches_the_caller(void)
{
	CU_ASSERT_NOT_EQUAL(hash_after(change_reducer, "main"), hash_after(NULL, "main"));
	CU_ASSERT_NOT_EQUAL(hash_after(change_dim, "main"), hash_after(NULL, "main"));
	CU_ASSERT_EQUAL(hash_after(change_dim, "layer_b"), hash_after(NULL, "layer_b"));
}

static void golden_value_is_pinned(void)
{
	/* Pinned on purpose: changing the encoding must bump the seed (SHS_HASH_V1 in hash.c)
	 * and then update this value. */
	const uint64_t golden = UINT64_C(0xd2344e0a04e9c63b);
	uint64_t h = hash_after(NULL, "main");

	if (h != golden)
		fprintf(stderr, "\n  main hashes to 0x%016llx\n", (unsigned long long)h);
	CU_ASSERT_EQUAL(h, golden);
}

static void unverified_module_is_refused(void)
{
	shs_module *m = layers_module();
	shs_instr *i = in_layer_a(m, "a.dot");
	uint64_t *h = calloc(m->n_comps, sizeof(*h));
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	i->operands[0] = tb_index(m->comps[index_of(m, "layer_a")], "a.red");
	SHS_ASSERT_INT_EQ(shs_module_hash(m, h, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "instruction 'a.dot'"));
	free(h);
	shs_module_free(m);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void maxtext_distinct_computations_are_pinned(void)
{
	const char *path = shs_test_hlo_path("nv_maxtext_1n1g_jit_train_step_before_optimization.hlo");
	size_t len = 0, distinct = 0;
	uint8_t *text = shs_test_read_file(path, &len);
	shs_module *m = NULL;
	uint64_t *h;
	shs_err e = { 0 };
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	rc = shs_text_load((const char *)text, len, path, &m, &e);
	free(text);
	SHS_ASSERT_OK(rc, &e);
	SHS_ASSERT_INT_EQ(m->n_comps, 87);
	h = hash_all(m);
	/* the same helpers traced twice, and the f32 add reducers, hash alike; max does not */
	CU_ASSERT_EQUAL(h[index_of(m, "_where.246")], h[index_of(m, "_where_3.749")]);
	CU_ASSERT_EQUAL(h[index_of(m, "_where_8.1611")], h[index_of(m, "_where_8.1767")]);
	CU_ASSERT_EQUAL(h[index_of(m, "region_1.268")], h[index_of(m, "region_69.1987")]);
	CU_ASSERT_NOT_EQUAL(h[index_of(m, "region_1.268")], h[index_of(m, "region_6.623")]);
	CU_ASSERT_NOT_EQUAL(h[index_of(m, "_where.246")], h[index_of(m, "_where_1.281")]);
	qsort(h, m->n_comps, sizeof(*h), cmp_u64);
	for (uint32_t k = 0; k < m->n_comps; k++)
		distinct += !k || h[k] != h[k - 1];
	SHS_ASSERT_INT_EQ(distinct, 24); /* of 87 computations */
	free(h);
	shs_module_free(m);
}

CU_TestInfo hash_tests[] = {
	{ "identical layers under other names hash alike", identical_layers_hash_alike },
	{ "renaming instructions and computations keeps hashes", renaming_keeps_hashes },
	{ "metadata and unknown bytes do not count", metadata_and_unknown_bytes_do_not_count },
	{ "dims, attributes, operand order and constants change hashes", changes_change_hashes },
	{ "a callee's change reaches its caller only", callee_change_reaches_the_caller },
	{ "one golden value is pinned", golden_value_is_pinned },
	{ "an unverified module is refused", unverified_module_is_refused },
	{ "MaxText's distinct computation count is pinned", maxtext_distinct_computations_are_pinned },
	CU_TEST_INFO_NULL,
};
