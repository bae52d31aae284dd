/* Tests: binary protobuf loading and saving (kinds, unknown fields, literals, bad input). */
#include <stdlib.h>
#include <string.h>

#include "proto/xla_hlo.pb-c.h"
#include "sharding.h"
#include "test_util.h"

/* ---- A small wire writer and reader, independent of the library's ---------------------- */

enum { W_VARINT = 0, W_LEN = 2 };

static void w_varint(shs_buf *b, uint64_t v)
{
	while (v >= 0x80) {
		shs_buf_putc(b, (char)((v & 0x7f) | 0x80));
		v >>= 7;
	}
	shs_buf_putc(b, (char)v);
}

static void w_tag(shs_buf *b, uint32_t field, int wire)
{
	w_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

static void w_uint(shs_buf *b, uint32_t field, uint64_t v)
{
	w_tag(b, field, W_VARINT);
	w_varint(b, v);
}

static void w_bytes(shs_buf *b, uint32_t field, const void *p, size_t n)
{
	w_tag(b, field, W_LEN);
	w_varint(b, n);
	shs_buf_put(b, p, n);
}

static void w_str(shs_buf *b, uint32_t field, const char *s)
{
	w_bytes(b, field, s, strlen(s));
}

static void w_msg(shs_buf *b, uint32_t field, const shs_buf *inner)
{
	w_bytes(b, field, inner->data, inner->len);
}

static void w_packed(shs_buf *b, uint32_t field, const int64_t *v, size_t n)
{
	shs_buf tmp = { 0 };

	for (size_t i = 0; i < n; i++)
		w_varint(&tmp, (uint64_t)v[i]);
	w_msg(b, field, &tmp);
	shs_buf_free(&tmp);
}

static bool r_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *pos < len && shift < 64; shift += 7) {
		uint8_t c = p[(*pos)++];

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* The nth (0-based) occurrence of field in msg: its varint value or its payload. */
static bool r_field(const uint8_t *p, size_t len, uint32_t field, int nth, uint64_t *val,
		    const uint8_t **payload, size_t *plen)
{
	size_t pos = 0;

	while (pos < len) {
		uint64_t tag, v = 0, n = 0;
		const uint8_t *at = NULL;

		if (!r_varint(p, len, &pos, &tag))
			return false;
		switch (tag & 7) {
		case 0:
			if (!r_varint(p, len, &pos, &v))
				return false;
			break;
		case 1:
			pos += 8;
			break;
		case 2:
			if (!r_varint(p, len, &pos, &n) || n > len - pos)
				return false;
			at = p + pos;
			pos += n;
			break;
		case 5:
			pos += 4;
			break;
		default:
			return false;
		}
		if (tag >> 3 == field && nth-- == 0) {
			if (val)
				*val = v;
			if (payload) {
				*payload = at;
				*plen = (size_t)n;
			}
			return true;
		}
	}
	return false;
}

/* ---- Hand-encoded modules ------------------------------------------------------------------ */

/* XLA field numbers the tests write and read; the undeclared ones are marked. */
enum {
	HLO_MODULE = 1, HLO_BUFFER_ASSIGNMENT = 3 /* undeclared */,
	MOD_NAME = 1, MOD_ENTRY_NAME = 2, MOD_COMPS = 3, MOD_HOST_SHAPE = 4, MOD_ENTRY_ID = 6,
	MOD_PROFILE_INFO = 13 /* undeclared */, MOD_AUTO_SPMD = 16 /* undeclared */,
	COMP_NAME = 1, COMP_INSTRS = 2, COMP_PROGRAM_SHAPE = 4, COMP_ID = 5, COMP_ROOT = 6,
	COMP_IS_FUSION = 7 /* undeclared */,
	INSTR_NAME = 1, INSTR_OPCODE = 2, INSTR_SHAPE = 3, INSTR_LITERAL = 8, INSTR_PARAM_NUM = 9,
	INSTR_ID = 35, INSTR_OPERANDS = 36, INSTR_CALLED = 38,
	INSTR_ALL_REDUCE_ID = 45 /* undeclared */, INSTR_HOST_TRANSFER = 47 /* undeclared */,
	INSTR_DEVICE_LIST = 87 /* undeclared */,
	SHAPE_TYPE = 2, SHAPE_DIMS = 3, SHAPE_TUPLE = 4, SHAPE_LAYOUT = 5, LAYOUT_M2M = 1,
	LIT_SHAPE = 1, LIT_S32S = 4, LIT_F32S = 8, LIT_TUPLE = 10,
	LIT_F8E5M2S = 19 /* undeclared */,
	INSTR_SHARDING = 40, SHARD_TYPE = 1, SHARD_TILE_DIMS = 3, SHARD_DEVICES = 4, SHARD_TUPLE = 5
};

/* Element types (PrimitiveType numbers). */
enum { T_S32 = 4, T_F32 = 11, T_TUPLE = 13, T_F8E5M2 = 19 };

/* A first byte of a tag: field << 3 | wire type. */
#define TAG_BYTE(field, wire) ((uint8_t)((field) << 3 | (wire)))

/* ShapeProto of type t with dims, with a {rank-1,...,0} layout when rank > 0. */
static void shape_msg(shs_buf *b, int t, const int64_t *dims, size_t rank)
{
	shs_buf layout = { 0 };
	int64_t m2m[8];

	w_uint(b, SHAPE_TYPE, (uint64_t)t);
	if (!rank)
		return;
	w_packed(b, SHAPE_DIMS, dims, rank);
	for (size_t i = 0; i < rank; i++)
		m2m[i] = (int64_t)(rank - 1 - i);
	w_packed(&layout, LAYOUT_M2M, m2m, rank);
	w_msg(b, SHAPE_LAYOUT, &layout);
	shs_buf_free(&layout);
}

static void instr_msg(shs_buf *b, const char *name, const char *opcode, int64_t id,
		      const int64_t *operands, size_t n_operands)
{
	shs_buf shape = { 0 };
	const int64_t dims[] = { 4 };

	w_str(b, INSTR_NAME, name);
	w_str(b, INSTR_OPCODE, opcode);
	shape_msg(&shape, T_F32, dims, 1);
	w_msg(b, INSTR_SHAPE, &shape);
	w_uint(b, INSTR_ID, (uint64_t)id);
	if (n_operands)
		w_packed(b, INSTR_OPERANDS, operands, n_operands);
	shs_buf_free(&shape);
}

/* What the test module carries beyond the schema, to find again after a save. */
static const uint8_t cdl_payload[] = { 0x0a, 0x04, 0x0a, 0x02, 0x00, 0x01 };
static const uint8_t profile_payload[] = { 0x0a, 0x04, 'p', 'r', 'o', 'f' };
static const uint8_t buffer_payload[] = { 0x08, 0x09, 0x12, 0x01, 'x' };

/* Options for the generic two-instruction module: p0 = parameter, neg = negate(p0). */
typedef struct mod_opts {
	bool unknown;              /* add the undeclared fields at every level */
	const char *neg_opcode;    /* "negate" unless set */
	int64_t neg_operand;       /* 1 unless set */
	int64_t neg_id;            /* 2 unless set */
	int64_t called;            /* a called computation id on neg, 0 for none */
	const char *name;          /* "m" unless set */
} mod_opts;

static void module_msg(shs_buf *mod, const mod_opts *o)
{
	shs_buf p0 = { 0 }, neg = { 0 }, comp = { 0 }, cdl = { 0 };
	int64_t operand = o->neg_operand ? o->neg_operand : 1;

	instr_msg(&p0, "p0", "parameter", 1, NULL, 0);
	if (o->unknown) {
		w_uint(&p0, INSTR_ALL_REDUCE_ID, 77);
		w_uint(&p0, INSTR_HOST_TRANSFER, 1);
		shs_buf_put(&cdl, cdl_payload, sizeof(cdl_payload));
		w_msg(&p0, INSTR_DEVICE_LIST, &cdl);
	}
	instr_msg(&neg, "neg", o->neg_opcode ? o->neg_opcode : "negate",
		  o->neg_id ? o->neg_id : 2, &operand, 1);
	if (o->called)
		w_packed(&neg, INSTR_CALLED, &o->called, 1);
	w_str(&comp, COMP_NAME, "main");
	w_msg(&comp, COMP_INSTRS, &p0);
	w_msg(&comp, COMP_INSTRS, &neg);
	w_uint(&comp, COMP_ID, 10);
	w_uint(&comp, COMP_ROOT, o->neg_id ? (uint64_t)o->neg_id : 2);
	if (o->unknown)
		w_uint(&comp, COMP_IS_FUSION, 1);
	w_str(mod, MOD_NAME, o->name ? o->name : "m");
	w_str(mod, MOD_ENTRY_NAME, "main");
	w_msg(mod, MOD_COMPS, &comp);
	w_uint(mod, MOD_ENTRY_ID, 10);
	if (o->unknown) {
		w_uint(mod, MOD_AUTO_SPMD, 1);
		w_bytes(mod, MOD_PROFILE_INFO, profile_payload, sizeof(profile_payload));
	}
	shs_buf_free(&p0);
	shs_buf_free(&neg);
	shs_buf_free(&comp);
	shs_buf_free(&cdl);
}

static void wrap_msg(shs_buf *out, const shs_buf *mod, bool unknown)
{
	w_msg(out, HLO_MODULE, mod);
	if (unknown)
		w_bytes(out, HLO_BUFFER_ASSIGNMENT, buffer_payload, sizeof(buffer_payload));
}

/* A module whose one instruction has the given shape and literal messages. */
static void module_with(shs_buf *mod, const char *name, const char *opcode, const shs_buf *shape,
			const shs_buf *lit)
{
	shs_buf in = { 0 }, comp = { 0 };

	w_str(&in, INSTR_NAME, name);
	w_str(&in, INSTR_OPCODE, opcode);
	w_msg(&in, INSTR_SHAPE, shape);
	if (lit)
		w_msg(&in, INSTR_LITERAL, lit);
	w_uint(&in, INSTR_ID, 1);
	w_str(&comp, COMP_NAME, "main");
	w_msg(&comp, COMP_INSTRS, &in);
	w_uint(&comp, COMP_ROOT, 1);
	w_str(mod, MOD_NAME, "m");
	w_msg(mod, MOD_COMPS, &comp);
	shs_buf_free(&in);
	shs_buf_free(&comp);
}

static shs_module *load_ok(const shs_buf *b)
{
	shs_module *m = NULL;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_proto_load((const uint8_t *)b->data, b->len, "test.pb", &m, &e), &e);
	return m;
}

/* Loads b, expecting failure with every needle in the message. */
static void load_fails(const shs_buf *b, int code, const char *const *needles)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_proto_load((const uint8_t *)b->data, b->len, "bad.pb", &m, &e);

	SHS_ASSERT_INT_EQ(rc, code);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_EQUAL(strncmp(e.msg, "bad.pb: ", 8), 0);
	for (; *needles; needles++) {
		if (!strstr(e.msg, *needles))
			fprintf(stderr, "\n  message \"%s\" lacks \"%s\"\n", e.msg, *needles);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, *needles));
	}
}

static void save_ok(const shs_module *m, bool wrapped, uint8_t **out, size_t *len)
{
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_proto_save(m, wrapped, out, len, &e), &e);
}

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

/* A bare module whose name happens to be wire data with a field 3 is still a bare module. */
static void name_that_looks_like_a_module(void)
{
	shs_buf mod = { 0 };
	mod_opts o = { .name = "\x1a\x01\x08" };
	shs_module *m;

	module_msg(&mod, &o);
	m = load_ok(&mod);
	CU_ASSERT_FALSE(m->from_hlo_proto);
	SHS_ASSERT_STR_EQ(m->name, "\x1a\x01\x08");
	shs_module_free(m);
	shs_buf_free(&mod);
}

/* ---- Building modules with the IR API ------------------------------------------------------ */

typedef struct builder {
	shs_module *m;
	int64_t next_id;
} builder;

static void *b_alloc(builder *b, size_t n)
{
	void *p = shs_arena_calloc(b->m->arena, 1, n);

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	return p;
}

static int64_t *b_i64(builder *b, const int64_t *v, uint32_t n)
{
	return n ? shs_arena_memdup(b->m->arena, v, n * sizeof(*v)) : NULL;
}

static shs_i64s b_list(builder *b, const int64_t *v, uint32_t n)
{
	shs_i64s l = { n, b_i64(b, v, n) };

	return l;
}

static void b_shape(builder *b, shs_shape *s, int type, const int64_t *dims, uint32_t rank,
		    const int64_t *m2m)
{
	memset(s, 0, sizeof(*s));
	s->type = type;
	s->rank = rank;
	s->dims = b_i64(b, dims, rank);
	if (m2m) {
		s->layout = b_alloc(b, sizeof(*s->layout));
		s->layout->minor_to_major = b_list(b, m2m, rank);
	}
}

static shs_computation *b_comp(builder *b, const char *name)
{
	shs_computation *c = b_alloc(b, sizeof(*c));

	c->name = shs_arena_strdup(b->m->arena, name);
	c->id = b->next_id++;
	SHS_ASSERT_INT_EQ(shs_module_add_comp(b->m, c), SHS_OK);
	return c;
}

static shs_instr *b_instr(builder *b, shs_computation *c, const char *name, shs_opcode op,
			  int type, const int64_t *dims, uint32_t rank)
{
	shs_instr *in = b_alloc(b, sizeof(*in));

	in->name = shs_arena_strdup(b->m->arena, name);
	in->op = op;
	in->id = b->next_id++;
	b_shape(b, &in->shape, type, dims, rank, NULL);
	SHS_ASSERT_INT_EQ(shs_comp_add_instr(b->m, c, in), SHS_OK);
	return in;
}

static void b_operands(builder *b, shs_instr *in, const uint32_t *idx, uint32_t n)
{
	in->operands = shs_arena_memdup(b->m->arena, idx, n * sizeof(*idx));
	in->n_operands = n;
}

static shs_sharding *b_sharding(builder *b, const char *text)
{
	shs_sharding *s = NULL;
	size_t used = 0, off = 0;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_sharding_parse(b->m->arena, text, strlen(text), &used, &s, &off, &e),
		      &e);
	return s;
}

static shs_literal *b_literal(builder *b, const void *data, size_t size)
{
	shs_literal *l = b_alloc(b, sizeof(*l));

	l->size = size;
	l->data = shs_arena_memdup(b->m->arena, data, size);
	return l;
}

/* add(x, y) over f32 scalars. */
static shs_computation *b_adder(builder *b)
{
	shs_computation *c = b_comp(b, "add");
	shs_instr *y, *s;
	const uint32_t xy[] = { 0, 1 };

	b_instr(b, c, "x", SHS_OP_PARAMETER, SHS_F32, NULL, 0);
	y = b_instr(b, c, "y", SHS_OP_PARAMETER, SHS_F32, NULL, 0);
	y->parameter_number = 1;
	s = b_instr(b, c, "s", SHS_OP_ADD, SHS_F32, NULL, 0);
	b_operands(b, s, xy, 2);
	c->root = 2;
	c->execution_thread = "host";
	return c;
}

/* Literal-holding constants of several element types and layouts. */
static void b_constants(builder *b, shs_computation *c)
{
	static const int64_t d23[] = { 2, 3 }, d3[] = { 3 }, d2[] = { 2 }, m2m01[] = { 0, 1 };
	static const int32_t s32v[] = { 1, 2, 3, 4, 5, 6 };
	static const uint16_t bf16v[] = { 0x3f80, 0x4000, 0xc040 };
	static const uint8_t predv[] = { 1, 0 };
	static const float c64v[] = { 1.5f, -2.0f, 0.25f, 8.0f };
	shs_instr *in;

	in = b_instr(b, c, "c_s32", SHS_OP_CONSTANT, SHS_S32, d23, 2);
	b_shape(b, &in->shape, SHS_S32, d23, 2, m2m01);
	in->literal = b_literal(b, s32v, sizeof(s32v));
	in = b_instr(b, c, "c_bf16", SHS_OP_CONSTANT, SHS_BF16, d3, 1);
	in->literal = b_literal(b, bf16v, sizeof(bf16v));
	in = b_instr(b, c, "c_pred", SHS_OP_CONSTANT, SHS_PRED, d2, 1);
	in->literal = b_literal(b, predv, sizeof(predv));
	in = b_instr(b, c, "c_c64", SHS_OP_CONSTANT, SHS_C64, d2, 1);
	in->literal = b_literal(b, c64v, sizeof(c64v));
	in = b_instr(b, c, "c_elided", SHS_OP_CONSTANT, SHS_F32, d3, 1);
	in->literal = b_alloc(b, sizeof(*in->literal));
	in->literal->elided = true;
	in = b_instr(b, c, "c_tuple", SHS_OP_CONSTANT, SHS_TUPLE, NULL, 0);
	in->shape.n_tuple = 2;
	in->shape.tuple = b_alloc(b, 2 * sizeof(*in->shape.tuple));
	b_shape(b, &in->shape.tuple[0], SHS_S32, NULL, 0, NULL);
	b_shape(b, &in->shape.tuple[1], SHS_S32, d2, 1, NULL);
	in->literal = b_alloc(b, sizeof(*in->literal));
	in->literal->n_tuple = 2;
	in->literal->tuple = b_alloc(b, 2 * sizeof(*in->literal->tuple));
	in->literal->tuple[0] = *b_literal(b, s32v, sizeof(int32_t));
	in->literal->tuple[1] = *b_literal(b, s32v + 2, 2 * sizeof(int32_t));
}

/* Instructions with dimension numbers, windows, slices, padding. */
static void b_structured(builder *b, shs_computation *c, uint32_t adder)
{
	static const int64_t d48[] = { 4, 8 }, d816[] = { 8, 16 }, d416[] = { 4, 16 },
		d28[] = { 2, 8 }, one[] = { 1 }, zero[] = { 0 }, d4[] = { 4 };
	static const int32_t prec[] = { SHS_PRECISION_DEFAULT, SHS_PRECISION_HIGHEST };
	const uint32_t p0p1[] = { 0, 1 }, p0[] = { 0 };
	shs_instr *in;

	in = b_instr(b, c, "dot", SHS_OP_DOT, SHS_F32, d416, 2);
	b_operands(b, in, p0p1, 2);
	in->dot = b_alloc(b, sizeof(*in->dot));
	in->dot->lhs_contracting = b_list(b, one, 1);
	in->dot->rhs_contracting = b_list(b, zero, 1);
	in->precision = shs_arena_memdup(b->m->arena, prec, sizeof(prec));
	in->n_precision = 2;
	in = b_instr(b, c, "sl", SHS_OP_SLICE, SHS_F32, d28, 2);
	b_operands(b, in, p0, 1);
	in->slice = b_alloc(b, 2 * sizeof(*in->slice));
	in->slice[0] = (shs_slice_dim){ 0, 2, 1 };
	in->slice[1] = (shs_slice_dim){ 0, 8, 1 };
	in->n_slice = 2;
	in = b_instr(b, c, "rw", SHS_OP_REDUCE_WINDOW, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->window = b_alloc(b, 2 * sizeof(*in->window));
	in->window[0] = (shs_window_dim){ 2, 1, 0, 1, 1, 1, false };
	in->window[1] = (shs_window_dim){ 1, 1, 0, 0, 1, 2, true };
	in->n_window = 2;
	in->called = shs_arena_memdup(b->m->arena, &adder, sizeof(adder));
	in->n_called = 1;
	in = b_instr(b, c, "pad", SHS_OP_PAD, SHS_F32, d816, 2);
	b_operands(b, in, p0, 1);
	in->padding = b_alloc(b, 2 * sizeof(*in->padding));
	in->padding[0] = (shs_pad_dim){ 1, 3, 0 };
	in->padding[1] = (shs_pad_dim){ 0, 0, 1 };
	in->n_padding = 2;
	in = b_instr(b, c, "g", SHS_OP_GATHER, SHS_F32, d48, 2);
	b_operands(b, in, p0p1, 2);
	in->gather = b_alloc(b, sizeof(*in->gather));
	in->gather->offset_dims = b_list(b, one, 1);
	in->gather->start_index_map = b_list(b, zero, 1);
	in->gather->index_vector_dim = 1;
	in->gather_slice_sizes = b_list(b, d48, 2);
	in->indices_are_sorted = true;
	in = b_instr(b, c, "sc", SHS_OP_SCATTER, SHS_F32, d48, 2);
	b_operands(b, in, p0p1, 2);
	in->scatter = b_alloc(b, sizeof(*in->scatter));
	in->scatter->update_window_dims = b_list(b, one, 1);
	in->scatter->inserted_window_dims = b_list(b, zero, 1);
	in->scatter->index_vector_dim = 1;
	in->unique_indices = true;
	in = b_instr(b, c, "conv", SHS_OP_CONVOLUTION, SHS_F32, d48, 2);
	b_operands(b, in, p0p1, 2);
	in->conv = b_alloc(b, sizeof(*in->conv));
	in->conv->input_feature = 1;
	in->conv->kernel_output_feature = 1;
	in->conv->output_feature = 1;
	in->conv->input_spatial = b_list(b, d4, 1);
	in->feature_group_count = 1;
	in->batch_group_count = 1;
	in->window = b_alloc(b, sizeof(*in->window));
}

/* Strings, flags, metadata, sharding, attributes, control edges and unknown bytes. */
static void b_misc(builder *b, shs_computation *c)
{
	static const int64_t d48[] = { 4, 8 }, sizes[] = { 2, 2 };
	static const uint8_t unknown45[] = { 0xe8, 0x02, 0x4d }; /* field 45 = 77 */
	const uint32_t p0[] = { 0 }, ctl[] = { 1 };
	shs_instr *in;

	in = b_instr(b, c, "cmp", SHS_OP_COMPARE, SHS_PRED, d48, 2);
	b_operands(b, in, p0, 1);
	in->comparison_direction = "LT";
	in->comparison_type = "TOTALORDER";
	in = b_instr(b, c, "cc", SHS_OP_CUSTOM_CALL, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->custom_call_target = "Sharding";
	in->custom_call_has_side_effect = true;
	in->backend_config = (shs_bytes){ 5, (const uint8_t *)"cfg\0x" };
	in->frontend_attrs = b_alloc(b, sizeof(*in->frontend_attrs));
	in->frontend_attrs[0] = (shs_attr_kv){ "xla.sdy.sharding", "#sdy.sharding<@mesh, []>" };
	in->n_frontend_attrs = 1;
	in->sharding = b_sharding(b, "{devices=[2,1]<=[2]}");
	in->metadata = b_alloc(b, sizeof(*in->metadata));
	in->metadata->op_name = "jit(f)/dot";
	in->metadata->source_file = "model.py";
	in->metadata->source_line = 42;
	in->control = shs_arena_memdup(b->m->arena, ctl, sizeof(ctl));
	in->n_control = 1;
	in->unknown = (shs_bytes){ sizeof(unknown45), unknown45 };
	in = b_instr(b, c, "ds", SHS_OP_DYNAMIC_SLICE, SHS_F32, sizes, 2);
	b_operands(b, in, p0, 1);
	in->dynamic_slice_sizes = b_list(b, sizes, 2);
	in = b_instr(b, c, "rp", SHS_OP_REDUCE_PRECISION, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->exponent_bits = 5;
	in->mantissa_bits = 10;
	in = b_instr(b, c, "ar", SHS_OP_ALL_REDUCE, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->channel_id = 5;
	in = b_instr(b, c, "fu", SHS_OP_FUSION, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->fusion_kind = "kLoop";
	in = b_instr(b, c, "srt", SHS_OP_SORT, SHS_F32, d48, 2);
	b_operands(b, in, p0, 1);
	in->is_stable = true;
	in->dimensions = b_list(b, sizes, 1);
	in = b_instr(b, c, "gte", SHS_OP_GET_TUPLE_ELEMENT, SHS_S32, sizes, 1);
	in->tuple_index = 1;
	in->largest = true;
}

/* A module that sets every attribute the proto schema carries. */
static shs_module *rich_module(void)
{
	static const int64_t d48[] = { 4, 8 }, d816[] = { 8, 16 }, m2m10[] = { 1, 0 };
	builder b = { shs_module_new(0), 100 };
	shs_computation *main_c;
	shs_instr *p0, *p1, *root;
	shs_program_shape *ps;
	static const uint8_t unknown16[] = { 0x80, 0x01, 0x01 }; /* field 16 = true */

	CU_ASSERT_PTR_NOT_NULL_FATAL(b.m);
	b.m->name = "rich";
	b.m->id = 7;
	b_adder(&b);
	main_c = b_comp(&b, "main");
	p0 = b_instr(&b, main_c, "p0", SHS_OP_PARAMETER, SHS_F32, d48, 2);
	b_shape(&b, &p0->shape, SHS_F32, d48, 2, m2m10);
	p1 = b_instr(&b, main_c, "p1", SHS_OP_PARAMETER, SHS_F32, d816, 2);
	p1->parameter_number = 1;
	b_constants(&b, main_c);
	b_structured(&b, main_c, 0);
	b_misc(&b, main_c);
	root = b_instr(&b, main_c, "root", SHS_OP_TUPLE, SHS_TUPLE, NULL, 0);
	root->shape.n_tuple = 1;
	root->shape.tuple = b_alloc(&b, sizeof(*root->shape.tuple));
	root->shape.tuple[0] = p0->shape;
	b_operands(&b, root, (const uint32_t[]){ 0 }, 1);
	main_c->root = main_c->n_instrs - 1;
	b.m->entry = 1;

	ps = b_alloc(&b, sizeof(*ps));
	ps->n_params = 2;
	ps->params = b_alloc(&b, 2 * sizeof(*ps->params));
	ps->params[0] = p0->shape;
	ps->params[1] = p1->shape;
	ps->param_names = b_alloc(&b, 2 * sizeof(*ps->param_names));
	ps->param_names[0] = "p0";
	ps->param_names[1] = "p1";
	ps->result = root->shape;
	b.m->entry_layout = ps;
	b.m->aliases = b_alloc(&b, sizeof(*b.m->aliases));
	b.m->aliases[0].output_index = b_list(&b, (const int64_t[]){ 0 }, 1);
	b.m->aliases[0].kind = 1;
	b.m->n_aliases = 1;
	b.m->frontend_attrs = b_alloc(&b, sizeof(*b.m->frontend_attrs));
	b.m->frontend_attrs[0] = (shs_attr_kv){ "xla.sdy.meshes", "{mesh = #sdy.mesh<[\"x\"=2]>}" };
	b.m->n_frontend_attrs = 1;
	b.m->unknown = (shs_bytes){ sizeof(unknown16), unknown16 };
	return b.m;
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

/* ---- (e) bad input ------------------------------------------------------------------------- */

/* Every prefix of a valid module loads or fails cleanly with a message. */
static void check_prefixes(const uint8_t *data, size_t len)
{
	for (size_t cut = 0; cut < len; cut++) {
		shs_module *m = NULL;
		shs_err e = { 0 };
		int rc = shs_proto_load(data, cut, "cut.pb", &m, &e);

		if (rc == SHS_OK) {
			CU_ASSERT_PTR_NOT_NULL(m);
		} else {
			CU_ASSERT_PTR_NULL(m);
			CU_ASSERT_TRUE(rc == SHS_EPARSE || rc == SHS_EUNSUPPORTED);
			CU_ASSERT_EQUAL(strncmp(e.msg, "cut.pb: ", 8), 0);
		}
		shs_module_free(m);
	}
}

static void truncated_input(void)
{
	shs_buf mod = { 0 }, top = { 0 };
	mod_opts o = { .unknown = true };
	shs_module *rich = rich_module();
	uint8_t *bytes;
	size_t n;
	shs_module *m = NULL;
	shs_err e = { 0 };

	module_msg(&mod, &o);
	wrap_msg(&top, &mod, true);
	check_prefixes((const uint8_t *)top.data, top.len);
	save_ok(rich, true, &bytes, &n);
	check_prefixes(bytes, n);
	/* cutting inside the module's length-delimited payload names the offset */
	SHS_ASSERT_INT_EQ(shs_proto_load(bytes, n - 1, "cut.pb", &m, &e), SHS_EPARSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "offset"));
	free(bytes);
	shs_module_free(rich);
	shs_buf_free(&mod);
	shs_buf_free(&top);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void random_bytes(void)
{
	uint64_t seed = 0x5eed5eed12345678u;
	uint8_t buf[256];

	for (int round = 0; round < 1000; round++) {
		size_t len = xorshift(&seed) % sizeof(buf);
		shs_module *m = NULL;
		shs_err e = { 0 };
		int rc;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)xorshift(&seed);
		rc = shs_proto_load(buf, len, "random.pb", &m, &e);
		CU_ASSERT_NOT_EQUAL(rc, SHS_OK);
		CU_ASSERT_PTR_NULL(m);
		CU_ASSERT_TRUE(strlen(e.msg) > strlen("random.pb: "));
		shs_module_free(m);
	}
}

/* Single-byte corruptions of a valid module load or fail cleanly. */
static void corrupted_bytes(void)
{
	shs_module *rich = rich_module();
	uint64_t seed = 0xc0ffee;
	uint8_t *bytes;
	size_t n;

	save_ok(rich, false, &bytes, &n);
	for (int round = 0; round < 1000; round++) {
		size_t at = xorshift(&seed) % n;
		uint8_t old = bytes[at];
		shs_module *m = NULL;
		shs_err e = { 0 };
		int rc;

		bytes[at] = (uint8_t)xorshift(&seed);
		rc = shs_proto_load(bytes, n, "flip.pb", &m, &e);
		CU_ASSERT_TRUE(rc == SHS_OK ? m != NULL : m == NULL && e.msg[0]);
		shs_module_free(m);
		bytes[at] = old;
	}
	free(bytes);
	shs_module_free(rich);
}

enum { DEEP = 100000 };

/* Wraps the innermost bytes (tag tag_inner) DEEP times in messages "prefix + field_tag len". */
static void deep_nest(shs_buf *out, const uint8_t *prefix, size_t prefix_len, uint8_t field_tag,
		      const uint8_t *inner, size_t inner_len)
{
	size_t *size = malloc((DEEP + 1) * sizeof(*size));
	uint8_t tmp[10];

	CU_ASSERT_PTR_NOT_NULL_FATAL(size);
	size[0] = inner_len;
	for (int k = 1; k <= DEEP; k++) {
		shs_buf v = { 0 };

		w_varint(&v, size[k - 1]);
		size[k] = prefix_len + 1 + v.len + size[k - 1];
		shs_buf_free(&v);
	}
	for (int k = DEEP; k >= 1; k--) {
		shs_buf v = { 0 };

		shs_buf_put(out, prefix, prefix_len);
		tmp[0] = field_tag;
		shs_buf_put(out, tmp, 1);
		w_varint(&v, size[k - 1]);
		shs_buf_put(out, v.data, v.len);
		shs_buf_free(&v);
	}
	shs_buf_put(out, inner, inner_len);
	free(size);
}

static void deep_nesting(void)
{
	static const uint8_t tuple_prefix[] = { TAG_BYTE(SHAPE_TYPE, W_VARINT), T_TUPLE },
		f32_shape[] = { TAG_BYTE(SHAPE_TYPE, W_VARINT), T_F32 };
	const char *const needles[] = { "nesting too deep", "offset", NULL };
	shs_buf shape = { 0 }, mod = { 0 }, lit = { 0 }, scalar = { 0 };

	deep_nest(&shape, tuple_prefix, sizeof(tuple_prefix), TAG_BYTE(SHAPE_TUPLE, W_LEN),
		  f32_shape, sizeof(f32_shape));
	module_with(&mod, "deep", "parameter", &shape, NULL);
	load_fails(&mod, SHS_EPARSE, needles);

	shs_buf_reset(&mod);
	shs_buf_put(&scalar, f32_shape, sizeof(f32_shape));
	deep_nest(&lit, NULL, 0, TAG_BYTE(LIT_TUPLE, W_LEN), NULL, 0);
	module_with(&mod, "deep", "constant", &scalar, &lit);
	load_fails(&mod, SHS_EPARSE, needles);

	shs_buf_free(&shape);
	shs_buf_free(&mod);
	shs_buf_free(&lit);
	shs_buf_free(&scalar);
}

static void malformed_varint(void)
{
	shs_buf b = { 0 };
	const char *const needles[] = { "offset 1", "varint longer than 10 bytes", NULL };

	/* field 5 (id), then a varint of 11 bytes */
	shs_buf_put(&b, "\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12);
	load_fails(&b, SHS_EPARSE, needles);
	shs_buf_free(&b);
}

static void bad_references(void)
{
	static const struct {
		mod_opts o;
		const char *needles[4];
	} cases[] = {
		{ { .neg_operand = 99 }, { "operand id 99", "'neg'", "'main'", NULL } },
		{ { .neg_id = 1 }, { "share id 1", "'main'", "'p0'", NULL } },
		{ { .neg_opcode = "frobnicate" },
		  { "unknown opcode 'frobnicate'", "'neg'", "'main'", NULL } },
		{ { .called = 77 }, { "called computation id 77", "'neg'", "'main'", NULL } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		shs_buf mod = { 0 };

		module_msg(&mod, &cases[i].o);
		load_fails(&mod, SHS_EPARSE, cases[i].needles);
		shs_buf_free(&mod);
	}
}

/* 2-byte empty instructions each cost protobuf-c a few hundred bytes: the budget stops it. */
static void memory_budget(void)
{
	enum { EMPTY_INSTRS = 400000 };
	shs_buf comp = { 0 }, mod = { 0 }, empty = { 0 };
	const char *const needles[] = { "budget", NULL };

	w_str(&comp, COMP_NAME, "main");
	for (int i = 0; i < EMPTY_INSTRS; i++)
		w_msg(&comp, COMP_INSTRS, &empty);
	w_str(&mod, MOD_NAME, "m");
	w_msg(&mod, MOD_COMPS, &comp);
	CU_ASSERT_TRUE_FATAL(!mod.oom);
	load_fails(&mod, SHS_ENOMEM, needles);
	shs_buf_free(&comp);
	shs_buf_free(&mod);
}

static void raw_attrs_are_unsupported(void)
{
	shs_module *m = rich_module();
	shs_instr *in = m->comps[1]->instrs[2];
	shs_raw_attr raw = { "replica_groups", "{{0,1}}" };
	uint8_t *out = NULL;
	size_t len = 0;
	shs_err e = { 0 };

	in->raw_attrs = &raw;
	in->n_raw_attrs = 1;
	SHS_ASSERT_INT_EQ(shs_proto_save(m, false, &out, &len, &e), SHS_EUNSUPPORTED);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "replica_groups"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, in->name));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'main'"));
	shs_module_free(m);
}

/* ---- (f) tuples kept as bytes, opcodes, ids ------------------------------------------------ */

/* A module of one computation "main" holding the given instruction messages; root id 1. */
static void module_of(shs_buf *mod, const shs_buf *instrs, size_t n)
{
	shs_buf comp = { 0 };

	w_str(&comp, COMP_NAME, "main");
	for (size_t i = 0; i < n; i++)
		w_msg(&comp, COMP_INSTRS, &instrs[i]);
	w_uint(&comp, COMP_ROOT, 1);
	w_str(mod, MOD_NAME, "m");
	w_msg(mod, MOD_COMPS, &comp);
	shs_buf_free(&comp);
}

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

/* An OpSharding whose tuple_shardings nest 100,000 deep is refused with the offset. */
static void deep_sharding_nesting(void)
{
	static const uint8_t tuple_type[] = { TAG_BYTE(SHARD_TYPE, W_VARINT), 2 };
	const char *const needles[] = { "nesting too deep", "offset", "tuple_shardings", NULL };
	shs_buf shard = { 0 }, shape = { 0 }, in = { 0 }, mod = { 0 };

	deep_nest(&shard, tuple_type, sizeof(tuple_type), TAG_BYTE(SHARD_TUPLE, W_LEN), NULL, 0);
	shape_msg(&shape, T_F32, NULL, 0);
	w_str(&in, INSTR_NAME, "p");
	w_str(&in, INSTR_OPCODE, "parameter");
	w_msg(&in, INSTR_SHAPE, &shape);
	w_uint(&in, INSTR_ID, 1);
	w_msg(&in, INSTR_SHARDING, &shard);
	module_of(&mod, &in, 1);
	load_fails(&mod, SHS_EPARSE, needles);
	shs_buf_free(&shard);
	shs_buf_free(&shape);
	shs_buf_free(&in);
	shs_buf_free(&mod);
}

/* A tuple element whose own bytes are malformed (the outer message is fine) is reported at
 * its offset in the input. */
static void malformed_tuple_element(void)
{
	static const uint8_t bad_el[] = { TAG_BYTE(SHAPE_TYPE, W_VARINT), 0xff, 0xff, 0xff, 0xff,
					  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	shs_buf el = { 0 }, shape = { 0 }, mod = { 0 };
	const char *needles[] = { NULL, "varint longer than 10 bytes", NULL };
	char where[64];
	size_t at = 0;

	shs_buf_put(&el, bad_el, sizeof(bad_el));
	w_uint(&shape, SHAPE_TYPE, T_TUPLE);
	w_msg(&shape, SHAPE_TUPLE, &el);
	module_with(&mod, "t", "parameter", &shape, NULL);
	while (at + sizeof(bad_el) <= mod.len && memcmp(mod.data + at, bad_el, sizeof(bad_el)))
		at++;
	CU_ASSERT_TRUE_FATAL(at + sizeof(bad_el) <= mod.len);
	snprintf(where, sizeof(where), "malformed protobuf at offset %zu:", at + 1);
	needles[0] = where;
	load_fails(&mod, SHS_EPARSE, needles);
	shs_buf_free(&el);
	shs_buf_free(&shape);
	shs_buf_free(&mod);
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

		if (i == 0)
			instr_msg(&in, "p", "parameter", 0, NULL, 0);
		else
			instr_msg(&in, "n", "negate", (int64_t)i * stride, &prev, 1);
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
	{ "every prefix of a module loads or fails cleanly", truncated_input },
	{ "1000 random byte strings fail cleanly", random_bytes },
	{ "single-byte corruptions load or fail cleanly", corrupted_bytes },
	{ "100000-deep tuple shape and literal are rejected", deep_nesting },
	{ "an over-long varint names its offset", malformed_varint },
	{ "dangling and duplicate ids, unknown opcodes are named", bad_references },
	{ "protobuf-c's allocations stay within the load budget", memory_budget },
	{ "text-only attributes cannot be saved", raw_attrs_are_unsupported },
	{ "tuple shapes, literals and shardings keep XLA's encoding", tuples_keep_xla_encoding },
	{ "100000-deep tuple sharding is rejected", deep_sharding_nesting },
	{ "a malformed tuple element names its offset", malformed_tuple_element },
	{ "every opcode name resolves, near misses do not", every_opcode_resolves },
	{ "64-bit ids with equal low bits resolve", wide_ids_resolve },
	CU_TEST_INFO_NULL,
};
