/* Internal helpers shared by the protobuf loader, writer and wire checker. */
#ifndef SHS_PROTO_INTERNAL_H
#define SHS_PROTO_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"
#include "proto/xla_hlo.pb-c.h"
#include "status.h"

/* ---- Wire format ----------------------------------------------------------------------------- */

enum {
	SHS__PB_TAG_SHIFT = 3,
	SHS__PB_WIRE_MASK = 7,
	SHS__PB_MAX_FIELD = (1 << 29) - 1, /* largest field number protobuf allows */
	SHS__PB_MAX_VARINT = 10,           /* bytes of the longest varint (64 bits) */
	SHS__PB_MAX_TAG_VARINT = 5,        /* bytes of the longest tag varint (32 bits) */
	/* Message levels of the schema outside tuple nesting (wrapper, module, computation,
	 * instruction, literal, shape, layout, ...): the wire check allows this many on top of
	 * SHS_MAX_NESTING, as a guard should the schema ever grow deeper. */
	SHS__PB_FIXED_DEPTH = 16
};

/* Wire types of the protobuf encoding. */
enum {
	SHS__PB_VARINT = 0,
	SHS__PB_64BIT = 1,
	SHS__PB_LEN = 2,
	SHS__PB_32BIT = 5
};

/* The fields that hold a nested message of their own type as bytes (proto/xla_hlo.proto
 * declares them `repeated bytes` so that the schema is not recursive). */
enum {
	SHS__PB_SHAPE_TUPLE = 4,     /* ShapeProto.tuple_shapes */
	SHS__PB_SHARDING_TUPLE = 5,  /* OpSharding.tuple_shardings */
	SHS__PB_LITERAL_TUPLE = 10   /* LiteralProto.tuple_literals */
};

/* Explains why buf[0..len) does not load as a message of type d: walks the wire data guided by
 * the descriptors (nested-bytes fields included) and checks every tag, varint and length, the
 * wire type of declared fields (packed repeated scalars included) and the nesting (at most
 * SHS_MAX_NESTING tuple levels). Unknown fields are skipped by wire type. Meant for the failure
 * path only. Sets e to "origin: truncated protobuf at offset N: ..." when the input ends too
 * soon, "origin: malformed protobuf at offset N: ..." or "origin: nesting too deep at offset N:
 * ..." (offsets count from buf[0]) and returns SHS_EPARSE; returns SHS_OK, e untouched, when it
 * finds nothing wrong. d, buf and origin: borrowed, valid until this returns. */
int shs__proto_check(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
		     const char *origin, shs_err *e);

/* One field as it sits on the wire. */
typedef struct shs__pb_span {
	uint32_t field;
	int wire;
	size_t value;                /* offset just past the tag (what protobuf-c keeps of an
				      * unknown field: for wire type 2 the length prefix too) */
	size_t payload, payload_len; /* the value without a length prefix */
} shs__pb_span;

/* Reads the field at buf[*pos..len) and advances *pos past it. Returns false on a malformed
 * tag, varint or length, or a group / invalid wire type. buf: borrowed, valid until this returns
 * (out holds
 * offsets, not pointers). */
bool shs__pb_field(const uint8_t *buf, size_t len, size_t *pos, shs__pb_span *out);

/* Bytes of v as a varint. */
size_t shs__pb_varint_len(uint64_t v);

/* Writes v as a varint at dst (room for SHS__PB_MAX_VARINT bytes); returns the bytes written.
 * dst: borrowed, valid until this returns. */
size_t shs__pb_put_varint(uint8_t *dst, uint64_t v);

/* ---- protobuf-c on an arena ------------------------------------------------------------------ */

/* A protobuf-c allocator whose memory all comes from one arena and whose free does nothing:
 * dropping the arena frees a whole unpacked tree at once (no free_unpacked walk). Small
 * requests are bumped out of large blocks taken from the arena. */
typedef struct shs__pb_arena {
	ProtobufCAllocator alloc;  /* hand &alloc to protobuf-c */
	shs_arena *arena;          /* borrowed: every block comes from here */
	const shs_arena *also;     /* NULL, or an arena whose use counts against limit too */
	size_t limit;              /* bytes arena (plus also) may hold; 0: the arena's own budget */
	size_t block;              /* size of the next block; 0: no blocks, each request apart */
	uint8_t *next, *end;       /* free space of the current block */
	bool refused;              /* an allocation was refused (budget or out of memory) */
} shs__pb_arena;

enum { SHS__PB_MAX_BLOCK = 64 << 20 }; /* blocks stop doubling at this size */

/* Sets pa up to allocate from a in blocks of block bytes at first (doubling when they run out),
 * or each request on its own when block is 0. pa: borrowed, valid until this returns; a: borrowed,
 * valid until
 * pa's last use. The blocks: caller frees with shs_arena_free(a). */
void shs__pb_arena_init(shs__pb_arena *pa, shs_arena *a, size_t block);

/* Unpacks the message of type d held in b (a nested-bytes field) into pa's arena. NULL when it
 * is malformed or, with pa->refused set, does not fit the budget. The message: caller frees with
 * shs_arena_free(pa->arena), never with free_unpacked. d and b: borrowed, valid until this
 * returns. */
void *shs__pb_unpack_nested(shs__pb_arena *pa, const ProtobufCMessageDescriptor *d,
			    const ProtobufCBinaryData *b);

/* Packs msg into *out, for a nested-bytes field. False when out of memory. out->data: caller
 * frees with shs_arena_free(a). msg: borrowed, valid until this returns. */
bool shs__pb_pack_nested(shs_arena *a, const ProtobufCMessage *msg, ProtobufCBinaryData *out);

/* ---- Strings copied in one allocation -------------------------------------------------------- */

enum { SHS__STRS_MAX = 16 };

/* Queue strings with shs__strs_add, then copy them all with shs__strs_copy. Zero-initialise. */
typedef struct shs__strs {
	unsigned n;
	size_t total;
	const char *src[SHS__STRS_MAX];
	size_t len[SHS__STRS_MAX];
	const char **dst[SHS__STRS_MAX];
} shs__strs;

/* Queues a copy of src for *dst. NULL or empty src sets *dst to NULL, or to "" when
 * keep_empty (names, which the IR never leaves NULL). At most SHS__STRS_MAX strings. src and dst:
 * borrowed, valid until shs__strs_copy returns (src is copied then). */
void shs__strs_add(shs__strs *s, const char *src, const char **dst, bool keep_empty);

/* Copies every queued string into a with one allocation and points the *dst at them.
 * False when out of memory. The strings: copied; caller frees with shs_arena_free(a). */
bool shs__strs_copy(shs__strs *s, shs_arena *a);

/* ---- Loader context (proto_load*.c, proto_shape.c, proto_literal.c) ------------------------- */

typedef struct shs__pl {
	shs_module *m;
	shs_arena *a;              /* m->arena */
	const char *origin;
	shs_err *e;
	const char *comp;          /* names for messages, NULL outside */
	const char *instr;
	const char *part;          /* module-level part being read ("host_program_shape") or NULL */
	shs__pb_arena *scratch;    /* where nested-bytes messages are unpacked */
} shs__pl;

/* Sets e to "origin: computation 'c', instruction 'i': what" and returns code. c and fmt:
 * borrowed, valid until this returns. */
int shs__pl_fail(const shs__pl *c, int code, const char *fmt, ...) SHS_PRINTF(3, 4);

/* Puts the current position and what in front of the message another module set. c and what:
 * borrowed, valid until this returns. */
int shs__pl_prefix(const shs__pl *c, const char *what);

/* SHS_ENOMEM, naming the load budget. c: borrowed, valid until this returns. */
int shs__pl_nomem(const shs__pl *c);

/* The nested message in b (field of a tuple), unpacked into the scratch arena; on failure sets
 * *rc to the error (what names the field, i its index) and returns NULL. The message: caller
 * frees with shs_arena_free(c->scratch->arena). d, b and what: borrowed, valid until this returns.
 * */
void *shs__pl_nested(const shs__pl *c, const ProtobufCMessageDescriptor *d,
		     const ProtobufCBinaryData *b, const char *what, size_t i, int *rc);

/* The "nesting too deep" error for a tuple (what) deeper than SHS_MAX_NESTING. c and what:
 * borrowed, valid until this returns. */
int shs__pl_too_deep(const shs__pl *c, const char *what);

/* Copies v[0..n) into out (NULL and 0 when n is 0). out->v: copied; caller frees with
 * shs_module_free(c->m). v: borrowed, valid until this returns. */
int shs__pl_i64s(const shs__pl *c, shs_i64s *out, const int64_t *v, size_t n);

/* ShapeProto -> shs_shape; depth counts the tuple levels above it. What *out points to: copied;
 * caller frees with shs_module_free(c->m). p: borrowed, valid until this returns. */
int shs__shape_from(const shs__pl *c, const Xla__ShapeProto *p, shs_shape *out, unsigned depth);

/* The fields protobuf-c did not recognise in msg, as raw wire bytes (tag varint, then the
 * value). out->data: copied; caller frees with shs_module_free(c->m). msg: borrowed, valid until
 * this returns.
 */
int shs__pl_unknown(const shs__pl *c, const ProtobufCMessage *msg, shs_bytes *out);

/* FrontendAttributes -> key/value pairs. *out and its strings: copied; caller frees with
 * shs_module_free(c->m). p: borrowed, valid until this returns. */
int shs__pl_attrs(const shs__pl *c, const Xla__FrontendAttributes *p, uint32_t *n,
		  shs_attr_kv **out);

/* Opcode name -> shs_opcode, hashed once per load instead of a scan per instruction. */
enum { SHS__OP_SLOTS = 512 }; /* a power of two over twice SHS_OP_COUNT */
typedef struct shs__op_table {
	int16_t slot[SHS__OP_SLOTS]; /* opcode, or -1 for an empty slot */
	uint8_t len[SHS_OP_COUNT];   /* strlen of each name */
} shs__op_table;

/* Fills t. t: borrowed, valid until this returns. */
void shs__op_table_init(shs__op_table *t);

/* Converts p into *in (zeroed by the caller) except its operands, control predecessors and
 * called computations, which need every id of the computation and module. What *in points to:
 * copied; caller frees with shs_module_free(c->m). ops and p: borrowed, valid until this returns.
 * */
int shs__instr_from(const shs__pl *c, const shs__op_table *ops,
		    const Xla__HloInstructionProto *p, shs_instr *in);

/* p's schedule and buffer donors back into c->m's raw header attributes (is_scheduled=true,
 * buffer_donor={ ... }). The attributes: copied; caller frees with shs_module_free(c->m). p:
 * borrowed, valid until this returns. */
int shs__header_from_proto(const shs__pl *c, const Xla__HloModuleProto *p);

/* *out: p with its instructions in the order s schedules them (p itself when s has no sequence
 * for it); SHS_EPARSE when the sequence is not a permutation of p's instructions. out's
 * instruction array: caller frees with shs_module_free(c->m); the rest: borrowed from p. */
int shs__scheduled(const shs__pl *c, const Xla__HloScheduleProto *s,
		   const Xla__HloComputationProto *p, Xla__HloComputationProto *out);

/* p's statistics, result accuracy and original value as raw attributes appended to out[*n..],
 * which has room for three more; what XLA does not print (empty, default) is left out. The
 * values: copied; caller frees with shs_module_free(c->m). */
int shs__extra_from(const shs__pl *c, const Xla__HloInstructionProto *p, shs_raw_attr *out,
		    uint32_t *n);

/* Those fields of p back into in's raw text attributes, as XLA prints them and in its order
 * (in->op set). The attributes: copied; caller frees with shs_module_free(c->m). p: borrowed,
 * valid until this returns. */
int shs__raw_from_proto(const shs__pl *c, const Xla__HloInstructionProto *p, shs_instr *in);

/* ProgramShapeProto -> a new shs_program_shape. *out: caller frees with shs_module_free(c->m).
 * p: borrowed, valid until this returns. */
int shs__program_shape_from(const shs__pl *c, const Xla__ProgramShapeProto *p,
			    shs_program_shape **out);

/* LiteralProto -> *out, with the literal's own shape (which must agree with fallback, the
 * instruction's shape) or, when it has none, fallback; depth counts the tuple levels above.
 * What *out points to: copied; caller frees with shs_module_free(c->m). p and fallback:
 * borrowed, valid until this returns. */
int shs__literal_from(const shs__pl *c, const Xla__LiteralProto *p, const shs_shape *fallback,
		      shs_literal *out, unsigned depth);

/* ---- Writer context (proto_save*.c, proto_shape.c, proto_literal.c) ------------------------- */

/* The message tree lives in a scratch arena and points into the module where it can: protobuf-c
 * only reads it while packing. */
typedef struct shs__ps {
	shs_arena *a;
	const shs_module *m;
	shs_err *e;
	const shs_computation *comp; /* for messages, NULL outside */
	const shs_instr *instr;
} shs__ps;

/* Sets e to "computation 'c', instruction 'i': what" and returns code. c and fmt: borrowed,
 * valid until this returns. */
int shs__ps_fail(const shs__ps *c, int code, const char *fmt, ...) SHS_PRINTF(3, 4);

/* Puts the current position and what in front of the message another module set. c and what:
 * borrowed, valid until this returns. */
int shs__ps_prefix(const shs__ps *c, const char *what);

/* SHS_ENOMEM with the current position. c: borrowed, valid until this returns. */
int shs__ps_nomem(const shs__ps *c);

/* A new message of type d, initialised; NULL when out of memory. The message: caller frees with
 * shs_arena_free(c->a). d: borrowed, valid until this returns. */
void *shs__ps_new_msg(const shs__ps *c, const ProtobufCMessageDescriptor *d);

/* s as protobuf-c's non-const string field ("" for NULL); packing only reads it. The result:
 * borrowed, valid until s is freed (it is s, not a copy). */
char *shs__ps_str(const char *s);

/* Stored raw unknown fields (tag varint + value each) back into msg's unknown fields. The field
 * array: caller frees with shs_arena_free(c->a); their data: borrowed, valid until b is freed (it
 * points into b). */
int shs__ps_unknown(const shs__ps *c, const shs_bytes *b, ProtobufCMessage *msg);

/* Key/value pairs -> a FrontendAttributes (*out NULL when n is 0). *out: caller frees with
 * shs_arena_free(c->a); its strings: borrowed, valid until kv is freed. */
int shs__ps_attrs(const shs__ps *c, uint32_t n, const shs_attr_kv *kv,
		  Xla__FrontendAttributes **out);

/* One instruction; sets c->instr to it for messages. *out: caller frees with shs_arena_free(c->a);
 * the strings and arrays it shares with in: borrowed, valid until in is freed. */
int shs__instr_to(shs__ps *c, const shs_instr *in, Xla__HloInstructionProto **out);

/* The raw text attributes of in that HloInstructionProto has fields for (hlo/raw_attrs.h) into
 * p; SHS_EUNSUPPORTED for one it has none for. What p gains: caller frees with
 * shs_arena_free(c->a); arrays it shares with in: borrowed, valid until in is freed. */
int shs__raw_to_proto(const shs__ps *c, const shs_instr *in, Xla__HloInstructionProto *p);

/* A statistics, result_accuracy or origin value (kind k of hlo/raw_attrs.h) into its field of p.
 * What p gains: caller frees with shs_arena_free(c->a). value: borrowed, valid until this
 * returns. */
int shs__extra_to(const shs__ps *c, int k, const char *value, Xla__HloInstructionProto *p);

/* The module's raw header attributes into p: is_scheduled=true as a schedule of every computation
 * but fusion bodies in their order, buffer_donor as its entries; module configuration left out;
 * SHS_EUNSUPPORTED for any other. What p gains: caller frees with shs_arena_free(c->a). */
int shs__header_to_proto(const shs__ps *c, Xla__HloModuleProto *p);

/* A shape, a program shape: *out: caller frees with shs_arena_free(c->a); what it shares with s or
 * ps: borrowed, valid until they are freed. */
int shs__shape_to(const shs__ps *c, const shs_shape *s, Xla__ShapeProto **out, unsigned depth);
int shs__program_shape_to(const shs__ps *c, const shs_program_shape *ps,
			  Xla__ProgramShapeProto **out);

/* The literal with shape s, its values in the order of s's layout. *out: caller frees with
 * shs_arena_free(c->a); lit and s: borrowed, valid until this returns. */
int shs__literal_to(const shs__ps *c, const shs_literal *lit, const shs_shape *s,
		    Xla__LiteralProto **out, unsigned depth);

/* ---- OpSharding with nested bytes (sharding_proto.c) ----------------------------------------- */

/* shs_sharding_from_proto, unpacking tuple elements into scratch instead of a. *out: caller frees
 * with shs_arena_free(a) (or a's owner); the unpacked elements: caller frees with
 * shs_arena_free(scratch->arena). p: borrowed, valid until this returns. */
int shs__sharding_from_proto(shs_arena *a, shs__pb_arena *scratch, const Xla__OpSharding *p,
			     shs_sharding **out, shs_err *e);

/* ---- Literal helpers ------------------------------------------------------------------------- */

/* Bytes of 16-, 32- and 64-bit values, and the parts of a complex number. */
enum { SHS__BYTES16 = 2, SHS__BYTES32 = 4, SHS__BYTES64 = 8, SHS__COMPLEX_PARTS = 2 };

/* Little-endian loads and stores of 1 to 8 bytes. dst and src: borrowed, valid until this returns.
 * */
static inline void shs__put_le(uint8_t *dst, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		dst[i] = (uint8_t)(v >> (CHAR_BIT * i));
}

static inline uint64_t shs__get_le(const uint8_t *src, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)src[i] << (CHAR_BIT * i);
	return v;
}

/* True for the element types a LiteralProto of our schema can hold values of. */
bool shs__literal_type_supported(int type);

/* Walks the elements of an array shape in the order of its layout (minor_to_major; row-major
 * when the shape has no layout), giving the row-major index of each. */
typedef struct shs__layout_iter {
	uint32_t rank;
	const int64_t *dims;
	int64_t order[SHS_MAX_RANK];  /* dims from most minor to most major */
	int64_t stride[SHS_MAX_RANK]; /* row-major stride of each dim */
	int64_t idx[SHS_MAX_RANK];
	int64_t row_major;            /* row-major index of the current element */
} shs__layout_iter;

/* Starts at the first element. Returns false when the layout is not a permutation of the
 * shape's dims or the rank is over SHS_MAX_RANK. it->dims: borrowed, valid until s is freed (it
 * points into s). */
bool shs__layout_iter_init(shs__layout_iter *it, const shs_shape *s);

/* Moves to the next element in layout order. it: borrowed, valid until this returns. */
void shs__layout_iter_next(shs__layout_iter *it);

#endif
