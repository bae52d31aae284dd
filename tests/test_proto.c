/* Tests: binary protobuf loading and saving (kinds, round trips, unknown fields, literals). */
#include <stdlib.h>
#include <string.h>

#include "proto/xla_hlo.pb-c.h"
#include "test_wire.h"

/* ---- (a) unknown fields survive ------------------------------------------------------------ */

static bool payload_is(const uint8_t *p, size_t n, const uint8_t *want, size_t want_n)
{
	return p && n == want_n && !memcmp(p, want, n);
}

static void unknown_fields_survive(void)
{
	shs_buf mod = { 0 }, top = { 0 };
	mod_opts o = { .unknown = true };
	shs_module *m, *m2;
	uint8_t *out, *out2;
	size_t len, len2, n, mlen, clen, ilen;
	const uint8_t *pl, *mp, *cp, *ip;
	uint64_t v;

	module_msg(&mod, &o);
	wrap_msg(&top, &mod, true);
	m = load_ok(&top);
	CU_ASSERT_TRUE(m->from_hlo_proto);
	CU_ASSERT_TRUE(m->unknown.len > 0 && m->wrapper_unknown.len > 0);
	CU_ASSERT_TRUE(m->comps[0]->unknown.len > 0 && m->comps[0]->instrs[0]->unknown.len > 0);
	SHS_ASSERT_INT_EQ(m->comps[0]->instrs[1]->unknown.len, 0);
	save_ok(m, true, &out, &len);

	/* the wrapper keeps its field 3 */
	CU_ASSERT_TRUE(r_field(out, len, HLO_BUFFER_ASSIGNMENT, 0, NULL, &pl, &n));
	CU_ASSERT_TRUE(payload_is(pl, n, buffer_payload, sizeof(buffer_payload)));
	/* the module keeps 16 (bool) and 13 (message) */
	CU_ASSERT_TRUE_FATAL(r_field(out, len, HLO_MODULE, 0, NULL, &mp, &mlen));
	CU_ASSERT_TRUE(r_field(mp, mlen, MOD_AUTO_SPMD, 0, &v, NULL, NULL) && v == 1);
	CU_ASSERT_TRUE(r_field(mp, mlen, MOD_PROFILE_INFO, 0, NULL, &pl, &n));
	CU_ASSERT_TRUE(payload_is(pl, n, profile_payload, sizeof(profile_payload)));
	/* the computation keeps 7 (bool) */
	CU_ASSERT_TRUE_FATAL(r_field(mp, mlen, MOD_COMPS, 0, NULL, &cp, &clen));
	CU_ASSERT_TRUE(r_field(cp, clen, COMP_IS_FUSION, 0, &v, NULL, NULL) && v == 1);
	/* the instruction keeps 45 (varint), 47 (bool) and 87 (message) */
	CU_ASSERT_TRUE_FATAL(r_field(cp, clen, COMP_INSTRS, 0, NULL, &ip, &ilen));
	CU_ASSERT_TRUE(r_field(ip, ilen, INSTR_ALL_REDUCE_ID, 0, &v, NULL, NULL) && v == 77);
	CU_ASSERT_TRUE(r_field(ip, ilen, INSTR_HOST_TRANSFER, 0, &v, NULL, NULL) && v == 1);
	CU_ASSERT_TRUE(r_field(ip, ilen, INSTR_DEVICE_LIST, 0, NULL, &pl, &n));
	CU_ASSERT_TRUE(payload_is(pl, n, cdl_payload, sizeof(cdl_payload)));
	/* parameter_number 0 is the proto3 default: not written */
	CU_ASSERT_FALSE(r_field(ip, ilen, INSTR_PARAM_NUM, 0, NULL, NULL, NULL));
	/* operand ids are written packed (length-delimited) */
	CU_ASSERT_TRUE_FATAL(r_field(cp, clen, COMP_INSTRS, 1, NULL, &ip, &ilen));
	CU_ASSERT_TRUE(r_field(ip, ilen, INSTR_OPERANDS, 0, NULL, &pl, &n));
	CU_ASSERT_TRUE(pl && n == 1 && pl[0] == 1);
	/* the computation's program shape is derived, the entry's signature too */
	CU_ASSERT_TRUE(r_field(cp, clen, COMP_PROGRAM_SHAPE, 0, NULL, &pl, &n));
	CU_ASSERT_TRUE(r_field(mp, mlen, MOD_HOST_SHAPE, 0, NULL, &pl, &n));

	/* a second round keeps the bytes as they are */
	m2 = NULL;
	{
		shs_err e = { 0 };

		SHS_ASSERT_OK(shs_proto_load(out, len, "saved.pb", &m2, &e), &e);
	}
	save_ok(m2, true, &out2, &len2);
	SHS_ASSERT_INT_EQ(len2, len);
	CU_ASSERT_EQUAL(memcmp(out, out2, len), 0);
	free(out);
	free(out2);
	shs_module_free(m);
	shs_module_free(m2);
	shs_buf_free(&mod);
	shs_buf_free(&top);
}

/* ---- (b) HloProto and bare HloModuleProto -------------------------------------------------- */

static void kinds_round_trip(void)
{
	shs_buf mod = { 0 }, top = { 0 };
	mod_opts o = { 0 };
	shs_module *bare, *wrapped, *again;
	uint8_t *out;
	size_t len;
	shs_buf why = { 0 };
	shs_err e = { 0 };

	module_msg(&mod, &o);
	wrap_msg(&top, &mod, false);
	bare = load_ok(&mod);
	wrapped = load_ok(&top);
	CU_ASSERT_FALSE(bare->from_hlo_proto);
	CU_ASSERT_TRUE(wrapped->from_hlo_proto);
	CU_ASSERT_TRUE(shs_module_equal(bare, wrapped, &why));

	save_ok(bare, bare->from_hlo_proto, &out, &len);
	CU_ASSERT_TRUE(len > 3 && out[0] == 0x0a && out[1] == 1 && out[2] == 'm');
	SHS_ASSERT_OK(shs_proto_load(out, len, "bare.pb", &again, &e), &e);
	CU_ASSERT_FALSE(again->from_hlo_proto);
	shs_module_free(again);
	free(out);

	save_ok(wrapped, wrapped->from_hlo_proto, &out, &len);
	SHS_ASSERT_OK(shs_proto_load(out, len, "wrapped.pb", &again, &e), &e);
	CU_ASSERT_TRUE(again->from_hlo_proto);
	CU_ASSERT_TRUE(len > mod.len && out[0] == 0x0a);
	shs_module_free(again);
	free(out);

	shs_buf_free(&why);
	shs_module_free(bare);
	shs_module_free(wrapped);
	shs_buf_free(&mod);
	shs_buf_free(&top);
}

/* A bare module whose name happens to be wire data with a field 3 is still a bare module (whose
 * name, no HLO identifier, is then refused). */
static void name_that_looks_like_a_module(void)
{
	shs_buf mod = { 0 };
	mod_opts o = { .name = "\x1a\x01\x08" };
	/* read as a bare module, whose name (no HLO identifier) is then refused */
	const char *const needles[] = { "module name", "not an HLO identifier", NULL };

	module_msg(&mod, &o);
	load_fails(&mod, SHS_EPARSE, needles);
	shs_buf_free(&mod);
}

/* Saves m, loads it back, saves again: the modules are equal and the bytes identical. */
static void check_round_trip(const shs_module *m, bool wrapped, const char *what)
{
	uint8_t *p1, *p2;
	size_t n1, n2;
	shs_module *m2 = NULL, *m3 = NULL;
	shs_buf why = { 0 };
	shs_err e = { 0 };

	save_ok(m, wrapped, &p1, &n1);
	SHS_ASSERT_OK(shs_proto_load(p1, n1, what, &m2, &e), &e);
	SHS_ASSERT_INT_EQ(m2->from_hlo_proto, wrapped);
	save_ok(m2, wrapped, &p2, &n2);
	SHS_ASSERT_OK(shs_proto_load(p2, n2, what, &m3, &e), &e);
	if (!shs_module_equal(m2, m3, &why))
		fprintf(stderr, "\n  %s: reloaded modules differ: %s\n", what, why.data);
	CU_ASSERT_TRUE(shs_module_equal(m2, m3, NULL));
	if (n1 != n2 || memcmp(p1, p2, n1))
		fprintf(stderr, "\n  %s: second save differs (%zu vs %zu bytes)\n", what, n1, n2);
	CU_ASSERT_TRUE(n1 == n2 && !memcmp(p1, p2, n1));
	shs_buf_free(&why);
	shs_module_free(m2);
	shs_module_free(m3);
	free(p1);
	free(p2);
}

/* ---- (c) round trips ----------------------------------------------------------------------- */

static void rich_module_round_trips(void)
{
	shs_module *m = rich_module(), *m2 = NULL;
	uint8_t *p;
	size_t n;
	shs_buf why = { 0 };
	shs_err e = { 0 };

	save_ok(m, false, &p, &n);
	SHS_ASSERT_OK(shs_proto_load(p, n, "rich.pb", &m2, &e), &e);
	if (!shs_module_equal(m, m2, &why))
		fprintf(stderr, "\n  rich module changed: %s\n", why.data);
	CU_ASSERT_TRUE(shs_module_equal(m, m2, NULL));
	check_round_trip(m, false, "rich.pb");
	check_round_trip(m, true, "rich-wrapped.pb");
	shs_buf_free(&why);
	shs_module_free(m);
	shs_module_free(m2);
	free(p);
}

/* A text module with an entry layout loads back from its protobuf unchanged. */
static void check_same_after_save(const shs_module *m, const char *what)
{
	uint8_t *p;
	size_t n;
	shs_module *m2 = NULL;
	shs_buf why = { 0 };
	shs_err e = { 0 };

	if (!m->entry_layout)
		return;
	save_ok(m, false, &p, &n);
	SHS_ASSERT_OK(shs_proto_load(p, n, what, &m2, &e), &e);
	if (!shs_module_equal(m, m2, &why))
		fprintf(stderr, "\n  %s: text and protobuf modules differ: %s\n", what, why.data);
	CU_ASSERT_TRUE(shs_module_equal(m, m2, NULL));
	shs_buf_free(&why);
	shs_module_free(m2);
	free(p);
}

static void corpus_round_trips(void)
{
	size_t n = 0, done = 0;
	char **files = shs_test_corpus(&n);
	bool maxtext = false;

	CU_ASSERT_TRUE_FATAL(n > 50);
	for (size_t i = 0; i < n; i++) {
		size_t len = 0;
		uint8_t *text = shs_test_read_file(files[i], &len);
		shs_module *m = NULL;
		shs_err e = { 0 };
		int rc;

		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		rc = shs_text_load((const char *)text, len, files[i], &m, &e);
		if (rc != SHS_OK)
			fprintf(stderr, "\n  %s\n", e.msg);
		CU_ASSERT_EQUAL(rc, SHS_OK);
		if (rc == SHS_OK) {
			check_same_after_save(m, files[i]);
			check_round_trip(m, false, files[i]);
			check_round_trip(m, true, files[i]);
			done++;
			maxtext |= strstr(files[i], "maxtext") != NULL;
		}
		shs_module_free(m);
		free(text);
		free(files[i]);
	}
	free(files);
	SHS_ASSERT_INT_EQ(done, n);
	CU_ASSERT_TRUE(maxtext);
}

/* ---- (d) literal element order ------------------------------------------------------------- */

static const shs_instr *find_instr(const shs_module *m, const char *name)
{
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++)
			if (!strcmp(m->comps[c]->instrs[i]->name, name))
				return m->comps[c]->instrs[i];
	return NULL;
}

static const Xla__HloInstructionProto *find_proto_instr(const Xla__HloModuleProto *p,
							const char *name)
{
	for (size_t c = 0; c < p->n_computations; c++)
		for (size_t i = 0; i < p->computations[c]->n_instructions; i++)
			if (!strcmp(p->computations[c]->instructions[i]->name, name))
				return p->computations[c]->instructions[i];
	return NULL;
}

static void literal_layout_order(void)
{
	shs_module *m = rich_module(), *m2 = NULL;
	const Xla__HloInstructionProto *ip;
	Xla__HloModuleProto *p;
	const shs_instr *in;
	uint8_t *bytes;
	size_t n;
	shs_err e = { 0 };
	static const int32_t want_proto[] = { 1, 4, 2, 5, 3, 6 }; /* s32[2,3]{0,1}: column-major */
	static const int32_t want_ir[] = { 1, 2, 3, 4, 5, 6 };

	save_ok(m, false, &bytes, &n);
	p = xla__hlo_module_proto__unpack(NULL, n, bytes);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	ip = find_proto_instr(p, "c_s32");
	CU_ASSERT_PTR_NOT_NULL_FATAL(ip);
	SHS_ASSERT_INT_EQ(ip->literal->n_s32s, 6);
	for (int k = 0; k < 6; k++)
		SHS_ASSERT_INT_EQ(ip->literal->s32s[k], want_proto[k]);
	SHS_ASSERT_INT_EQ(ip->literal->shape->layout->minor_to_major[0], 0);
	ip = find_proto_instr(p, "c_bf16");
	SHS_ASSERT_INT_EQ(ip->literal->bf16s.len, 6);
	SHS_ASSERT_INT_EQ(ip->literal->bf16s.data[0], 0x80); /* 0x3f80, little-endian */
	SHS_ASSERT_INT_EQ(ip->literal->bf16s.data[1], 0x3f);
	ip = find_proto_instr(p, "c_pred");
	CU_ASSERT_TRUE(ip->literal->n_preds == 2 && ip->literal->preds[0] &&
		       !ip->literal->preds[1]);
	ip = find_proto_instr(p, "c_c64");
	CU_ASSERT_TRUE(ip->literal->n_c64s == 4 && ip->literal->c64s[1] == -2.0f);
	ip = find_proto_instr(p, "c_elided");
	CU_ASSERT_TRUE(ip->literal->shape && !ip->literal->n_f32s);
	xla__hlo_module_proto__free_unpacked(p, NULL);

	SHS_ASSERT_OK(shs_proto_load(bytes, n, "order.pb", &m2, &e), &e);
	in = find_instr(m2, "c_s32");
	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	SHS_ASSERT_INT_EQ(in->literal->size, sizeof(want_ir));
	for (int k = 0; k < 6; k++) {
		int32_t v;

		memcpy(&v, in->literal->data + 4 * k, sizeof(v));
		SHS_ASSERT_INT_EQ(v, want_ir[k]);
	}
	CU_ASSERT_TRUE(find_instr(m2, "c_elided")->literal->elided);
	free(bytes);
	shs_module_free(m);
	shs_module_free(m2);
}

/* A literal of a type the trimmed schema has no field for is an error; without data it loads
 * as elided. */
static void unsupported_literal_type(void)
{
	shs_buf lit = { 0 }, mod = { 0 }, shape = { 0 };
	const int64_t dims[] = { 2 };
	const char *const needles[] = { "'c'", "f8e5m2", "not supported", NULL };
	shs_module *m;

	shape_msg(&shape, T_F8E5M2, dims, 1);
	w_msg(&lit, LIT_SHAPE, &shape);
	w_bytes(&lit, LIT_F8E5M2S, "\x01\x02", 2);
	module_with(&mod, "c", "constant", &shape, &lit);
	load_fails(&mod, SHS_EUNSUPPORTED, needles);

	shs_buf_reset(&lit);
	shs_buf_reset(&mod);
	w_msg(&lit, LIT_SHAPE, &shape);
	module_with(&mod, "c", "constant", &shape, &lit);
	m = load_ok(&mod);
	CU_ASSERT_TRUE(m->comps[0]->instrs[0]->literal->elided);
	shs_module_free(m);
	shs_buf_free(&lit);
	shs_buf_free(&mod);
	shs_buf_free(&shape);
}

/* ---- (e) tuples kept as bytes, opcodes, ids ------------------------------------------------ */

/* The payload of instruction k's field of the first computation of a bare module. */
static bool saved_instr_field(const uint8_t *mod, size_t len, int k, uint32_t field,
			      const uint8_t **p, size_t *n)
{
	const uint8_t *cp, *ip;
	size_t clen, ilen;

	return r_field(mod, len, MOD_COMPS, 0, NULL, &cp, &clen) &&
	       r_field(cp, clen, COMP_INSTRS, k, NULL, &ip, &ilen) &&
	       r_field(ip, ilen, field, 0, NULL, p, n);
}

/* Tuple shapes, tuple literals and tuple shardings as XLA writes them (nested messages) load,
 * and are written back byte for byte. */
static void tuples_keep_xla_encoding(void)
{
	const int64_t d4[] = { 4 }, one[] = { 1 }, three[] = { 3 }, seven[] = { 7 };
	const uint8_t f32_1_5[] = { 0x00, 0x00, 0xc0, 0x3f }; /* 1.5f, little-endian */
	shs_buf f32v = { 0 }, s32 = { 0 }, f32 = { 0 }, inner = { 0 }, shape = { 0 };
	shs_buf el0 = { 0 }, el1 = { 0 }, shard = { 0 }, cshape = { 0 }, l0 = { 0 }, l1 = { 0 };
	shs_buf lit = { 0 }, in[2] = { { 0 } }, mod = { 0 };
	const uint8_t *pl;
	uint8_t *out;
	size_t n, len;
	shs_module *m;
	const shs_instr *t, *c;
	int32_t s;
	float f;

	shape_msg(&f32v, T_F32, d4, 1);
	shape_msg(&s32, T_S32, NULL, 0);
	shape_msg(&f32, T_F32, NULL, 0);
	w_uint(&inner, SHAPE_TYPE, T_TUPLE);
	w_msg(&inner, SHAPE_TUPLE, &s32);
	w_uint(&shape, SHAPE_TYPE, T_TUPLE); /* (f32[4]{0}, (s32[])) */
	w_msg(&shape, SHAPE_TUPLE, &f32v);
	w_msg(&shape, SHAPE_TUPLE, &inner);
	w_uint(&el0, SHARD_TYPE, 1); /* {maximal device=3} */
	w_packed(&el0, SHARD_TILE_DIMS, one, 1);
	w_packed(&el0, SHARD_DEVICES, three, 1);
	w_uint(&shard, SHARD_TYPE, 2); /* {{maximal device=3}, {replicated}} */
	w_msg(&shard, SHARD_TUPLE, &el0);
	w_msg(&shard, SHARD_TUPLE, &el1);
	w_str(&in[0], INSTR_NAME, "t");
	w_str(&in[0], INSTR_OPCODE, "parameter");
	w_msg(&in[0], INSTR_SHAPE, &shape);
	w_uint(&in[0], INSTR_ID, 1);
	w_msg(&in[0], INSTR_SHARDING, &shard);
	w_uint(&cshape, SHAPE_TYPE, T_TUPLE); /* (s32[], f32[]) = (7, 1.5) */
	w_msg(&cshape, SHAPE_TUPLE, &s32);
	w_msg(&cshape, SHAPE_TUPLE, &f32);
	w_packed(&l0, LIT_S32S, seven, 1);
	w_bytes(&l1, LIT_F32S, f32_1_5, sizeof(f32_1_5));
	w_msg(&lit, LIT_TUPLE, &l0);
	w_msg(&lit, LIT_TUPLE, &l1);
	w_str(&in[1], INSTR_NAME, "c");
	w_str(&in[1], INSTR_OPCODE, "constant");
	w_msg(&in[1], INSTR_SHAPE, &cshape);
	w_msg(&in[1], INSTR_LITERAL, &lit);
	w_uint(&in[1], INSTR_ID, 2);
	module_of(&mod, in, 2);

	m = load_ok(&mod);
	t = m->comps[0]->instrs[0];
	c = m->comps[0]->instrs[1];
	SHS_ASSERT_INT_EQ(t->shape.n_tuple, 2);
	SHS_ASSERT_INT_EQ(t->shape.tuple[0].type, SHS_F32);
	SHS_ASSERT_INT_EQ(t->shape.tuple[0].dims[0], 4);
	SHS_ASSERT_INT_EQ(t->shape.tuple[0].layout->minor_to_major.v[0], 0);
	SHS_ASSERT_INT_EQ(t->shape.tuple[1].n_tuple, 1);
	SHS_ASSERT_INT_EQ(t->shape.tuple[1].tuple[0].type, SHS_S32);
	CU_ASSERT_PTR_NOT_NULL_FATAL(t->sharding);
	SHS_ASSERT_INT_EQ(t->sharding->kind, SHS_SHARDING_TUPLE);
	SHS_ASSERT_INT_EQ(t->sharding->n_tuple, 2);
	SHS_ASSERT_INT_EQ(t->sharding->tuple[0].kind, SHS_SHARDING_MAXIMAL);
	SHS_ASSERT_INT_EQ(t->sharding->tuple[0].devices[0], 3);
	SHS_ASSERT_INT_EQ(t->sharding->tuple[1].kind, SHS_SHARDING_REPLICATED);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c->literal);
	SHS_ASSERT_INT_EQ(c->literal->n_tuple, 2);
	memcpy(&s, c->literal->tuple[0].data, sizeof(s));
	memcpy(&f, c->literal->tuple[1].data, sizeof(f));
	SHS_ASSERT_INT_EQ(s, 7);
	CU_ASSERT_EQUAL(f, 1.5f);

	save_ok(m, false, &out, &len);
	CU_ASSERT_TRUE_FATAL(saved_instr_field(out, len, 0, INSTR_SHAPE, &pl, &n));
	CU_ASSERT_TRUE(payload_is(pl, n, (const uint8_t *)shape.data, shape.len));
	CU_ASSERT_TRUE_FATAL(saved_instr_field(out, len, 0, INSTR_SHARDING, &pl, &n));
	CU_ASSERT_TRUE(payload_is(pl, n, (const uint8_t *)shard.data, shard.len));
	check_round_trip(m, false, "tuples.pb");
	free(out);
	shs_module_free(m);
	shs_buf *bufs[] = { &f32v, &s32, &f32, &inner, &shape, &el0, &el1, &shard, &cshape,
			    &l0, &l1, &lit, &in[0], &in[1], &mod };
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		shs_buf_free(bufs[i]);
}

/* Every opcode name loads as its opcode; near misses are unknown. */
static void every_opcode_resolves(void)
{
	static const char *const near[] = { "ad", "add ", "Add", "get-tuple-elements", "", NULL };
	const int64_t d4[] = { 4 };
	shs_buf shape = { 0 };

	shape_msg(&shape, T_F32, d4, 1);
	for (int op = 0; op < SHS_OP_COUNT; op++) {
		shs_buf mod = { 0 };
		shs_module *m;

		module_with(&mod, "x", shs_opcode_name((shs_opcode)op), &shape, NULL);
		if (op == SHS_OP_CONVOLUTION) { /* resolved, then refused without its numbers */
			const char *const needles[] = { "convolution has no dimension numbers",
							NULL };
			load_fails(&mod, SHS_EPARSE, needles);
			shs_buf_free(&mod);
			continue;
		}
		m = load_ok(&mod);
		SHS_ASSERT_INT_EQ(m->comps[0]->instrs[0]->op, op);
		shs_module_free(m);
		shs_buf_free(&mod);
	}
	for (const char *const *s = near; *s; s++) {
		const char *const needles[] = { "unknown opcode", "'x'", NULL };
		shs_buf mod = { 0 };

		module_with(&mod, "x", *s, &shape, NULL);
		load_fails(&mod, SHS_EPARSE, needles);
		shs_buf_free(&mod);
	}
	shs_buf_free(&shape);
}

/* 64-bit ids that share their low bits still resolve to the right instructions. */
static void wide_ids_resolve(void)
{
	enum { N = 2000 };
	const int64_t stride = (int64_t)1 << 32;
	shs_buf comp = { 0 }, mod = { 0 };
	shs_module *m;

	w_str(&comp, COMP_NAME, "main");
	for (int i = 0; i < N; i++) {
		shs_buf in = { 0 };
		int64_t prev = (int64_t)(i - 1) * stride;
		char name[16];

		snprintf(name, sizeof(name), "n%d", i);
		if (i == 0)
			instr_msg(&in, "p", "parameter", 0, NULL, 0);
		else
			instr_msg(&in, name, "negate", (int64_t)i * stride, &prev, 1);
		w_msg(&comp, COMP_INSTRS, &in);
		shs_buf_free(&in);
	}
	w_uint(&comp, COMP_ROOT, (uint64_t)(N - 1) * (uint64_t)stride);
	w_str(&mod, MOD_NAME, "m");
	w_msg(&mod, MOD_COMPS, &comp);
	m = load_ok(&mod);
	SHS_ASSERT_INT_EQ(m->comps[0]->root, N - 1);
	for (uint32_t i = 1; i < N; i++) {
		SHS_ASSERT_INT_EQ(m->comps[0]->instrs[i]->n_operands, 1);
		SHS_ASSERT_INT_EQ(m->comps[0]->instrs[i]->operands[0], i - 1);
	}
	shs_module_free(m);
	shs_buf_free(&comp);
	shs_buf_free(&mod);
}

CU_TestInfo proto_tests[] = {
	{ "unknown fields survive a load and save at every level", unknown_fields_survive },
	{ "HloProto and bare HloModuleProto keep their kind", kinds_round_trip },
	{ "a module name that parses as a message stays a name", name_that_looks_like_a_module },
	{ "every attribute round-trips, bytes stable", rich_module_round_trips },
	{ "corpus text -> proto -> IR -> proto round-trips", corpus_round_trips },
	{ "literals follow the layout's element order", literal_layout_order },
	{ "unsupported literal types fail, elided ones load", unsupported_literal_type },
	{ "tuple shapes, literals and shardings keep XLA's encoding", tuples_keep_xla_encoding },
	{ "every opcode name resolves, near misses do not", every_opcode_resolves },
	{ "64-bit ids with equal low bits resolve", wide_ids_resolve },
	CU_TEST_INFO_NULL,
};
