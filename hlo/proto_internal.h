/* Internal helpers shared by the protobuf loader, writer and wire pre-scan. */
#ifndef SHS_PROTO_INTERNAL_H
#define SHS_PROTO_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"
#include "proto/xla_hlo.pb-c.h"
#include "status.h"

/* Wire-format constants. */
enum {
	SHS__PB_TAG_SHIFT = 3,
	SHS__PB_WIRE_MASK = 7,
	SHS__PB_MAX_FIELD = (1 << 29) - 1, /* largest field number protobuf allows */
	SHS__PB_MAX_VARINT = 10,           /* bytes of the longest varint (64 bits) */
	SHS__PB_MAX_TAG_VARINT = 5,        /* bytes of the longest tag varint (32 bits) */
	/* Message levels the wrapper, module, computation, instruction, literal, shape and layout
	 * take before tuple or literal nesting starts; the pre-scan allows this much on top of
	 * SHS_MAX_NESTING. */
	SHS__PB_FIXED_DEPTH = 16
};

/* Checks that buf[0..len) is well-formed wire data for a message of type d before protobuf-c
 * unpacks it: every tag, varint and length is valid, declared fields have a wire type their
 * type allows (packed repeated scalars included), and declared message fields nest at most
 * SHS_MAX_NESTING + SHS__PB_FIXED_DEPTH levels. Unknown fields are skipped by wire type.
 * Errors read "origin: truncated protobuf at offset N: ..." when the input ends too soon,
 * "origin: malformed protobuf at offset N: ..." or "origin: nesting too deep at offset N: ..."
 * (offsets count from buf[0]). Returns SHS_OK or SHS_EPARSE. */
int shs__proto_check(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
		     const char *origin, shs_err *e);

/* Wire types of the protobuf encoding. */
enum {
	SHS__PB_VARINT = 0,
	SHS__PB_64BIT = 1,
	SHS__PB_LEN = 2,
	SHS__PB_32BIT = 5
};

/* One field as it sits on the wire. */
typedef struct shs__pb_span {
	uint32_t field;
	int wire;
	size_t value;                /* offset just past the tag (what protobuf-c keeps of an
				      * unknown field: for wire type 2 the length prefix too) */
	size_t payload, payload_len; /* the value without a length prefix */
} shs__pb_span;

/* Reads the field at buf[*pos..len) and advances *pos past it. Returns false on a malformed
 * tag, varint or length, or a group / invalid wire type. */
bool shs__pb_field(const uint8_t *buf, size_t len, size_t *pos, shs__pb_span *out);

/* Bytes of v as a varint. */
size_t shs__pb_varint_len(uint64_t v);

/* Writes v as a varint at dst (room for SHS__PB_MAX_VARINT bytes); returns the bytes written. */
size_t shs__pb_put_varint(uint8_t *dst, uint64_t v);

/* Bytes of 16-, 32- and 64-bit values, and the parts of a complex number. */
enum { SHS__BYTES16 = 2, SHS__BYTES32 = 4, SHS__BYTES64 = 8, SHS__COMPLEX_PARTS = 2 };

/* Little-endian loads and stores of 1 to 8 bytes. */
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
 * shape's dims or the rank is over SHS_MAX_RANK. */
bool shs__layout_iter_init(shs__layout_iter *it, const shs_shape *s);

/* Moves to the next element in layout order. */
void shs__layout_iter_next(shs__layout_iter *it);

#endif
