/* Shared helpers of the protobuf suites: a small wire writer and reader, independent of the
 * library's, hand-encoded modules, and a module that sets every attribute. */
#ifndef SHS_TEST_WIRE_H
#define SHS_TEST_WIRE_H

#include "test_util.h"

/* Wire types the writer emits. */
enum { W_VARINT = 0, W_LEN = 2 };

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

/* ---- Writer: each appends one field to b ------------------------------------------------- */

void w_varint(shs_buf *b, uint64_t v);
void w_uint(shs_buf *b, uint32_t field, uint64_t v);
/* p[0..n) is copied. */
void w_bytes(shs_buf *b, uint32_t field, const void *p, size_t n);
void w_str(shs_buf *b, uint32_t field, const char *s);
/* inner's bytes are copied as the field's payload. */
void w_msg(shs_buf *b, uint32_t field, const shs_buf *inner);
void w_packed(shs_buf *b, uint32_t field, const int64_t *v, size_t n);

/* ---- Reader -------------------------------------------------------------------------------- */

/* The nth (0-based) occurrence of field in p[0..len): its varint value in *val, or its payload
 * in *payload and *plen (borrowed, valid until p is freed). val and payload may be NULL. */
bool r_field(const uint8_t *p, size_t len, uint32_t field, int nth, uint64_t *val,
	     const uint8_t **payload, size_t *plen);

/* ---- Hand-encoded modules (each appends to its first argument) ----------------------------- */

enum { CDL_PAYLOAD_LEN = 6, PROFILE_PAYLOAD_LEN = 6, BUFFER_PAYLOAD_LEN = 5 };

/* What the test module carries beyond the schema, to find again after a save. */
extern const uint8_t cdl_payload[CDL_PAYLOAD_LEN];
extern const uint8_t profile_payload[PROFILE_PAYLOAD_LEN];
extern const uint8_t buffer_payload[BUFFER_PAYLOAD_LEN];

/* Options for the generic two-instruction module: p0 = parameter, neg = negate(p0). */
typedef struct mod_opts {
	bool unknown;              /* add the undeclared fields at every level */
	const char *neg_opcode;    /* "negate" unless set */
	int64_t neg_operand;       /* 1 unless set */
	int64_t neg_id;            /* 2 unless set */
	int64_t called;            /* a called computation id on neg, 0 for none */
	const char *name;          /* "m" unless set */
} mod_opts;

/* ShapeProto of type t with dims (rank at most 8), with a {rank-1,...,0} layout when rank > 0. */
void shape_msg(shs_buf *b, int t, const int64_t *dims, size_t rank);
/* HloInstructionProto of shape f32[4]{0} with the given operand ids. */
void instr_msg(shs_buf *b, const char *name, const char *opcode, int64_t id,
	       const int64_t *operands, size_t n_operands);
/* The generic HloModuleProto "m" with computation "main" (id 10). */
void module_msg(shs_buf *mod, const mod_opts *o);
/* HloProto around mod, with an undeclared field 3 when unknown. */
void wrap_msg(shs_buf *out, const shs_buf *mod, bool unknown);
/* A module whose one instruction (id 1) has the given shape and literal (NULL: none). */
void module_with(shs_buf *mod, const char *name, const char *opcode, const shs_buf *shape,
		 const shs_buf *lit);
/* A module of one computation "main" holding the given instruction messages; root id 1. */
void module_of(shs_buf *mod, const shs_buf *instrs, size_t n);

/* ---- Loading and saving, failing the test on an unexpected result -------------------------- */

/* Loads b as "test.pb"; caller frees with shs_module_free. */
shs_module *load_ok(const shs_buf *b);
/* Loads b as "bad.pb", expecting code and every needle (NULL-terminated) in the message. */
void load_fails(const shs_buf *b, int code, const char *const *needles);
/* Saves m; *out: caller frees with free. */
void save_ok(const shs_module *m, bool wrapped, uint8_t **out, size_t *len);

/* A module built with the IR API that sets every attribute the proto schema carries; caller
 * frees with shs_module_free. */
shs_module *rich_module(void);

#endif
