/* Tests: bad binary protobuf input (truncation, corruption, deep nesting, bad references). */
#include <stdlib.h>
#include <string.h>

#include "test_wire.h"

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
	shs_raw_attr raw = { "frobnicate", "{{0,1}}" }; /* no field of HloInstructionProto */
	uint8_t *out = NULL;
	size_t len = 0;
	shs_err e = { 0 };

	in->raw_attrs = &raw;
	in->n_raw_attrs = 1;
	SHS_ASSERT_INT_EQ(shs_proto_save(m, false, &out, &len, &e), SHS_EUNSUPPORTED);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "frobnicate"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, in->name));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "'main'"));
	shs_module_free(m);
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

/* ---- strings the module cannot keep, names the text form cannot hold ------------------------ */

enum { INSTR_METADATA = 7, METADATA_OP_NAME = 2, COMP_EXECUTION_THREAD = 8 };

/* parameter 'p0' (id 1) and, unless neg is NULL, negate neg of it (id 2), in computation comp
 * of module name (each written with its bytes as given, NULs included). */
typedef struct named_mod {
	const char *module, *comp, *p0, *neg;
	size_t module_len, comp_len, neg_len; /* 0: strlen */
	const char *op_name, *thread;        /* neg's metadata op_name, comp's thread, or NULL */
	size_t op_name_len, thread_len;
} named_mod;

static size_t len_of(const char *s, size_t n)
{
	return n ? n : strlen(s);
}

static void named_module(shs_buf *mod, const named_mod *o)
{
	shs_buf p0 = { 0 }, neg = { 0 }, comp = { 0 }, md = { 0 };
	const int64_t operand = 1;

	instr_msg(&p0, o->p0 ? o->p0 : "p0", "parameter", 1, NULL, 0);
	w_bytes(&comp, COMP_NAME, o->comp, len_of(o->comp, o->comp_len));
	w_msg(&comp, COMP_INSTRS, &p0);
	if (o->neg) {
		instr_msg(&neg, "", "negate", 2, &operand, 1);
		/* the name after the empty one instr_msg wrote: the last one counts */
		w_bytes(&neg, INSTR_NAME, o->neg, len_of(o->neg, o->neg_len));
		if (o->op_name) {
			w_bytes(&md, METADATA_OP_NAME, o->op_name,
				len_of(o->op_name, o->op_name_len));
			w_msg(&neg, INSTR_METADATA, &md);
		}
		w_msg(&comp, COMP_INSTRS, &neg);
	}
	if (o->thread)
		w_bytes(&comp, COMP_EXECUTION_THREAD, o->thread, len_of(o->thread, o->thread_len));
	w_uint(&comp, COMP_ROOT, o->neg ? 2 : 1);
	w_bytes(mod, MOD_NAME, o->module, len_of(o->module, o->module_len));
	w_msg(mod, MOD_COMPS, &comp);
	shs_buf_free(&p0);
	shs_buf_free(&neg);
	shs_buf_free(&comp);
	shs_buf_free(&md);
}

/* A string with a NUL byte is refused naming the field, the instruction and the computation
 * (protobuf-c hands strings over NUL-terminated: it was kept and written back cut short). */
static void nul_in_strings(void)
{
	static const struct {
		named_mod o;
		const char *needles[4];
	} cases[] = {
		{ { .module = "m", .comp = "main", .neg = "neg", .op_name = "x\0yz",
		    .op_name_len = 4 },
		  { "computation 'main', instruction 'neg'",
		    "string field 'op_name' of OpMetadata holds a NUL byte", NULL } },
		{ { .module = "m", .comp = "main", .neg = "ne\0g", .neg_len = 4 },
		  { "computation 'main', instruction 'ne'",
		    "string field 'name' of HloInstructionProto holds a NUL byte", NULL } },
		{ { .module = "m", .comp = "main", .thread = "ma\0in", .thread_len = 5 },
		  { "bad.pb: computation 'main': string field 'execution_thread' of "
		    "HloComputationProto holds a NUL byte", NULL } },
		{ { .module = "m\0x", .module_len = 3, .comp = "main" },
		  { "bad.pb: string field 'name' of HloModuleProto holds a NUL byte", NULL } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		shs_buf mod = { 0 };

		named_module(&mod, &cases[i].o);
		load_fails(&mod, SHS_EPARSE, cases[i].needles);
		shs_buf_free(&mod);
	}
}

/* Names HLO text could not hold (no identifier, a keyword, used twice) are refused: the module
 * would print as text that does not read back. */
static void unprintable_names(void)
{
	static const struct {
		named_mod o;
		const char *needles[3];
	} cases[] = {
		{ { .module = "m", .comp = "main", .neg = "a b" },
		  { "instruction 'a b'", "name 'a b' is not an HLO identifier", NULL } },
		{ { .module = "m", .comp = "main", .neg = "ROOT" },
		  { "instruction 'ROOT'", "would read as the keyword", NULL } },
		{ { .module = "m", .comp = "ENTRY" },
		  { "computation 'ENTRY'", "would read as the keyword", NULL } },
		{ { .module = "m", .comp = "StackFrames" }, /* fuzz_proto */
		  { "computation 'StackFrames'", "would read as the keyword", NULL } },
		{ { .module = "m", .comp = "main", .neg = "p0" },
		  { "instruction 'p0'", "name is also used in computation 'main'", NULL } },
		{ { .module = "xla_computat)on", .comp = "main" },
		  { "module name 'xla_computat)on' is not an HLO identifier", NULL } },
		{ { .module = "", .comp = "main" }, { "module name '' is not", NULL } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		shs_buf mod = { 0 };

		named_module(&mod, &cases[i].o);
		load_fails(&mod, SHS_EPARSE, cases[i].needles);
		shs_buf_free(&mod);
	}
}

/* A layout message with no minor_to_major on an array is refused, as XLA refuses it: it was
 * read as the default order and printed `{}`, which no text parser reads back (fuzz_proto). */
static void empty_layout_on_array(void)
{
	const int64_t dims[] = { 4 };
	const char *const needles[] = { "instruction 'p'", "not a permutation of the 1 dims",
					NULL };
	shs_buf shape = { 0 }, empty = { 0 }, mod = { 0 }, scalar = { 0 };
	shs_module *m;

	w_uint(&shape, SHAPE_TYPE, T_F32);
	w_packed(&shape, SHAPE_DIMS, dims, 1);
	w_msg(&shape, SHAPE_LAYOUT, &empty);
	module_with(&mod, "p", "parameter", &shape, NULL);
	load_fails(&mod, SHS_EPARSE, needles);
	/* a scalar's empty layout names its every (no) dim */
	w_uint(&scalar, SHAPE_TYPE, T_F32);
	w_msg(&scalar, SHAPE_LAYOUT, &empty);
	shs_buf_reset(&mod);
	module_with(&mod, "p", "parameter", &scalar, NULL);
	m = load_ok(&mod);
	shs_module_free(m);
	shs_buf_free(&shape);
	shs_buf_free(&mod);
	shs_buf_free(&scalar);
}

/* Words and dimension numbers HLO text could not print so that they read back are refused, as
 * XLA refuses them (fuzz_proto: a comparison direction of two raw bytes printed as the word). */
static void unprintable_attributes(void)
{
	enum { FUSION_KIND = 11, CONV_DIMS = 16, DIRECTION = 63, TYPE = 72 };
	static const struct {
		const char *opcode;
		uint32_t field;
		const char *value; /* a string, or NULL: an empty message */
		const char *says;
	} cases[] = {
		{ "compare", DIRECTION, "\x9bT", "unknown comparison direction" },
		{ "compare", TYPE, "TOTAL", "unknown comparison type 'TOTAL'" },
		{ "fusion", FUSION_KIND, "kBogus", "unknown fusion kind 'kBogus'" },
		{ "convolution", CONV_DIMS, NULL, "convolution dimension numbers do not name each "
		  "dimension once" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const needles[] = { "instruction 'x'", cases[i].says, NULL };
		shs_buf in = { 0 }, mod = { 0 }, empty = { 0 };

		instr_msg(&in, "x", cases[i].opcode, 1, NULL, 0);
		if (cases[i].value)
			w_str(&in, cases[i].field, cases[i].value);
		else
			w_msg(&in, cases[i].field, &empty);
		module_of(&mod, &in, 1);
		load_fails(&mod, SHS_EPARSE, needles);
		shs_buf_free(&in);
		shs_buf_free(&mod);
	}
}

/* A scalar constant and a tuple constant without values, or without a literal, are refused:
 * they were read as elided and printed {...}, which text takes for arrays only (fuzz_proto). */
static void scalar_and_tuple_literals_need_values(void)
{
	const char *const scalar_says[] = { "instruction 'c'", "literal of 1 f32 elements has 0 "
					    "values", NULL };
	const char *const tuple_says[] = { "instruction 'c'", "tuple literal has 0 elements, "
					   "its shape 2", NULL };
	const char *const none_says[] = { "instruction 'c'", "constant has no literal", NULL };
	shs_buf scalar = { 0 }, tuple = { 0 }, empty = { 0 }, mod = { 0 };

	shape_msg(&scalar, T_F32, NULL, 0);
	module_with(&mod, "c", "constant", &scalar, &empty);
	load_fails(&mod, SHS_EPARSE, scalar_says);
	w_uint(&tuple, SHAPE_TYPE, T_TUPLE);
	w_msg(&tuple, SHAPE_TUPLE, &scalar);
	w_msg(&tuple, SHAPE_TUPLE, &scalar);
	shs_buf_reset(&mod);
	module_with(&mod, "c", "constant", &tuple, &empty);
	load_fails(&mod, SHS_EPARSE, tuple_says);
	shs_buf_reset(&mod);
	module_with(&mod, "c", "constant", &scalar, NULL); /* no literal at all */
	load_fails(&mod, SHS_EPARSE, none_says);
	shs_buf_free(&scalar);
	shs_buf_free(&tuple);
	shs_buf_free(&mod);
}

/* The structures XLA always has for dot, gather, scatter, reduce-window and select-and-scatter
 * are there, empty, when the proto leaves them out, as text makes them, and a constant array's
 * literal elided: a reduce-window without its window, a constant without its literal hashed
 * otherwise than their printed text read back (fuzz_proto). */
static void op_structures_default(void)
{
	static const char *const ops[] = { "dot", "gather", "scatter", "reduce-window",
					   "select-and-scatter" };
	const int64_t d4[] = { 4 };
	shs_buf shape = { 0 };

	shape_msg(&shape, T_F32, d4, 1);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		shs_buf mod = { 0 };
		shs_module *m;
		const shs_instr *in;

		module_with(&mod, "x", ops[i], &shape, NULL);
		m = load_ok(&mod);
		in = m->comps[0]->instrs[0];
		CU_ASSERT_TRUE(i == 0 ? in->dot != NULL : i == 1 ? in->gather != NULL :
			       i == 2 ? in->scatter != NULL : in->window != NULL);
		shs_module_free(m);
		shs_buf_free(&mod);
	}
	/* a constant array without a literal is elided, as its text {...} reads */
	{
		shs_buf mod = { 0 };
		shs_module *m;

		module_with(&mod, "x", "constant", &shape, NULL);
		m = load_ok(&mod);
		CU_ASSERT_TRUE(m->comps[0]->instrs[0]->literal &&
			       m->comps[0]->instrs[0]->literal->elided);
		shs_module_free(m);
		shs_buf_free(&mod);
	}
	shs_buf_free(&shape);
}

/* A module without host_program_shape takes its entry's parameters and root as its entry
 * layout, as XLA and the text parser do (fuzz_proto: its text gained one once read back). */
static void entry_layout_defaults(void)
{
	shs_buf mod = { 0 };
	mod_opts o = { 0 };
	shs_module *m;

	module_msg(&mod, &o);
	m = load_ok(&mod);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m->entry_layout);
	SHS_ASSERT_INT_EQ(m->entry_layout->n_params, 1);
	CU_ASSERT_TRUE(shs_shape_equal(&m->entry_layout->params[0],
				       &m->comps[0]->instrs[0]->shape));
	CU_ASSERT_TRUE(shs_shape_equal(&m->entry_layout->result, &m->comps[0]->instrs[1]->shape));
	shs_module_free(m);
	shs_buf_free(&mod);
}

CU_TestInfo protobad_tests[] = {
	{ "every prefix of a module loads or fails cleanly", truncated_input },
	{ "1000 random byte strings fail cleanly", random_bytes },
	{ "single-byte corruptions load or fail cleanly", corrupted_bytes },
	{ "100000-deep tuple shape and literal are rejected", deep_nesting },
	{ "an over-long varint names its offset", malformed_varint },
	{ "dangling and duplicate ids, unknown opcodes are named", bad_references },
	{ "protobuf-c's allocations stay within the load budget", memory_budget },
	{ "text-only attributes cannot be saved", raw_attrs_are_unsupported },
	{ "100000-deep tuple sharding is rejected", deep_sharding_nesting },
	{ "a malformed tuple element names its offset", malformed_tuple_element },
	{ "a string holding a NUL is refused with its field and place", nul_in_strings },
	{ "names HLO text cannot hold are refused", unprintable_names },
	{ "an empty layout on an array is refused", empty_layout_on_array },
	{ "words and dimension numbers text cannot print are refused", unprintable_attributes },
	{ "scalar and tuple constants need their values", scalar_and_tuple_literals_need_values },
	{ "structures XLA always has are made when left out", op_structures_default },
	{ "an entry layout left out is the entry's signature", entry_layout_defaults },
	CU_TEST_INFO_NULL,
};
