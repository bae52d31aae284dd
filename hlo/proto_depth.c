/* Wire-level reading, and the descriptor-guided walk that explains why a protobuf did not load. */
#include "proto_internal.h"

#include <stdio.h>

enum wire_type {
	WIRE_VARINT = SHS__PB_VARINT,
	WIRE_64BIT = SHS__PB_64BIT,
	WIRE_LEN = SHS__PB_LEN,
	WIRE_GROUP_START = 3,
	WIRE_GROUP_END = 4,
	WIRE_32BIT = SHS__PB_32BIT
};

enum {
	MAX_DEPTH = SHS_MAX_NESTING + SHS__PB_FIXED_DEPTH,
	VARINT_MORE = 0x80,
	VARINT_BITS = 7,
	VARINT_PAYLOAD = 0x7f,
	FIXED32_BYTES = 4,
	FIXED64_BYTES = 8
};

/* Why a wire item could not be read. */
typedef enum read_fault {
	READ_OK,
	READ_TRUNCATED,
	READ_TOO_LONG
} read_fault;

typedef struct walk {
	const char *origin;
	size_t total; /* length of the whole input */
	shs_err *e;
} walk;

/* The varint at buf[*pos..len) of at most max bytes. */
static read_fault read_varint(const uint8_t *buf, size_t len, size_t *pos, unsigned max,
			      uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < max; i++) {
		uint8_t b;

		if (*pos + i >= len)
			return READ_TRUNCATED;
		b = buf[*pos + i];
		v |= (uint64_t)(b & VARINT_PAYLOAD) << (VARINT_BITS * i);
		if (!(b & VARINT_MORE)) {
			*pos += i + 1;
			*out = v;
			return READ_OK;
		}
	}
	return READ_TOO_LONG;
}

/* Everything about one field's framing, or why it is malformed. */
typedef struct frame {
	uint32_t field;
	int wire;
	size_t start; /* offset of the tag */
	size_t value; /* offset just past the tag */
	size_t payload, payload_len;
	size_t fault_at;
	const char *fault;
	char detail[160]; /* fault text with numbers, when fault points here */
	bool short_read;   /* the fault is running out of bytes */
	uint64_t want_end; /* where a field that ran out of bytes would end, if known */
} frame;

static const char *varint_fault(read_fault f, const char *truncated, const char *too_long)
{
	return f == READ_TRUNCATED ? truncated : too_long;
}

/* Reads the tag and payload span of the field at buf[*pos..len); on failure sets fr->fault. */
static bool read_frame(const uint8_t *buf, size_t len, size_t *pos, frame *fr)
{
	uint64_t tag, n;
	read_fault f;

	fr->start = fr->fault_at = *pos;
	fr->fault = NULL;
	fr->short_read = false;
	fr->want_end = 0;
	f = read_varint(buf, len, pos, SHS__PB_MAX_TAG_VARINT, &tag);
	if (f != READ_OK) {
		fr->short_read = f == READ_TRUNCATED;
		fr->fault = varint_fault(f, "tag runs past the end", "tag longer than 5 bytes");
		return false;
	}
	fr->field = (uint32_t)(tag >> SHS__PB_TAG_SHIFT);
	fr->wire = (int)(tag & SHS__PB_WIRE_MASK);
	if (fr->field == 0 || tag >> SHS__PB_TAG_SHIFT > SHS__PB_MAX_FIELD) {
		fr->fault = "invalid field number";
		return false;
	}
	fr->value = fr->fault_at = *pos;
	switch (fr->wire) {
	case WIRE_VARINT:
		fr->payload = *pos;
		f = read_varint(buf, len, pos, SHS__PB_MAX_VARINT, &n);
		if (f != READ_OK) {
			fr->short_read = f == READ_TRUNCATED;
			fr->fault = varint_fault(f, "varint runs past the end",
						 "varint longer than 10 bytes");
			return false;
		}
		fr->payload_len = *pos - fr->payload;
		return true;
	case WIRE_64BIT:
	case WIRE_32BIT:
		fr->payload = *pos;
		fr->payload_len = fr->wire == WIRE_64BIT ? FIXED64_BYTES : FIXED32_BYTES;
		if (len - *pos < fr->payload_len) {
			fr->short_read = true;
			fr->want_end = *pos + fr->payload_len;
			fr->fault = "fixed-size value runs past the end";
			return false;
		}
		*pos += fr->payload_len;
		return true;
	case WIRE_LEN:
		f = read_varint(buf, len, pos, SHS__PB_MAX_VARINT, &n);
		if (f != READ_OK) {
			fr->short_read = f == READ_TRUNCATED;
			fr->fault = varint_fault(f, "length runs past the end",
						 "length longer than 10 bytes");
			return false;
		}
		if (n > len - *pos) {
			fr->short_read = true;
			fr->want_end = n > UINT64_MAX - *pos ? UINT64_MAX : *pos + n;
			snprintf(fr->detail, sizeof(fr->detail),
				 "length %llu of field %u runs past the end (%zu bytes left)",
				 (unsigned long long)n, fr->field, len - *pos);
			fr->fault = fr->detail;
			return false;
		}
		fr->payload = *pos;
		fr->payload_len = (size_t)n;
		*pos += (size_t)n;
		return true;
	case WIRE_GROUP_START:
	case WIRE_GROUP_END:
		fr->fault = "groups (wire types 3 and 4) are not supported";
		return false;
	default:
		fr->fault = "invalid wire type";
		return false;
	}
}

bool shs__pb_field(const uint8_t *buf, size_t len, size_t *pos, shs__pb_span *out)
{
	frame fr;

	if (!read_frame(buf, len, pos, &fr))
		return false;
	out->field = fr.field;
	out->wire = fr.wire;
	out->value = fr.value;
	out->payload = fr.payload;
	out->payload_len = fr.payload_len;
	return true;
}

size_t shs__pb_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >>= VARINT_BITS)
		n++;
	return n;
}

size_t shs__pb_put_varint(uint8_t *dst, uint64_t v)
{
	size_t n = 0;

	while (v > VARINT_PAYLOAD) {
		dst[n++] = (uint8_t)((v & VARINT_PAYLOAD) | VARINT_MORE);
		v >>= VARINT_BITS;
	}
	dst[n++] = (uint8_t)v;
	return n;
}

static int malformed(const walk *w, size_t off, const ProtobufCMessageDescriptor *d,
		     const char *why)
{
	return shs_seterr(w->e, SHS_EPARSE, "%s: malformed protobuf at offset %zu: %s (in %s)",
			  w->origin, off, why, d->name);
}

/* The wire type a non-packed scalar of this type uses. */
static int scalar_wire(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		return WIRE_32BIT;
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return WIRE_64BIT;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		return WIRE_LEN;
	default:
		return WIRE_VARINT;
	}
}

/* Checks the payload of a packed repeated scalar as protobuf-c will read it. */
static int check_packed(const walk *w, const uint8_t *buf, const frame *fr,
			const ProtobufCFieldDescriptor *fd, const ProtobufCMessageDescriptor *d)
{
	size_t end = fr->payload + fr->payload_len, pos = fr->payload;
	int sw = scalar_wire(fd->type);

	if (sw == WIRE_32BIT || sw == WIRE_64BIT) {
		size_t size = sw == WIRE_32BIT ? FIXED32_BYTES : FIXED64_BYTES;

		if (fr->payload_len % size)
			return malformed(w, fr->payload, d,
					 "packed fixed-size field has a partial element");
		return SHS_OK;
	}
	while (pos < end) {
		size_t at = pos;
		uint64_t v;
		read_fault f = read_varint(buf, end, &pos, SHS__PB_MAX_VARINT, &v);

		if (f != READ_OK)
			return malformed(w, at, d,
					 varint_fault(f, "varint in packed field runs past the end",
						      "packed varint longer than 10 bytes"));
		if (fd->type == PROTOBUF_C_TYPE_BOOL && (pos - at != 1 || v > 1))
			return malformed(w, at, d, "packed bool is not 0 or 1");
	}
	return SHS_OK;
}

/* The message type a nested-bytes field of d holds, or NULL for an ordinary field. */
static const ProtobufCMessageDescriptor *nested_bytes(const ProtobufCMessageDescriptor *d,
						      uint32_t field)
{
	static const struct {
		const ProtobufCMessageDescriptor *outer;
		uint32_t field;
	} table[] = {
		{ &xla__shape_proto__descriptor, SHS__PB_SHAPE_TUPLE },
		{ &xla__literal_proto__descriptor, SHS__PB_LITERAL_TUPLE },
		{ &xla__op_sharding__descriptor, SHS__PB_SHARDING_TUPLE },
	};

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].outer == d && table[i].field == field)
			return d;
	return NULL;
}

/* Where the walk is: message levels and, of those, tuple levels (nested-bytes fields). */
typedef struct level {
	unsigned depth, nest;
} level;

static int walk_message(const walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *buf,
			size_t start, size_t end, level at);

static int too_deep(const walk *w, const frame *fr, const ProtobufCFieldDescriptor *fd,
		    const ProtobufCMessageDescriptor *d, const char *what, int limit)
{
	return shs_seterr(w->e, SHS_EPARSE,
			  "%s: nesting too deep at offset %zu: more than %d levels of %s (field %s "
			  "of %s)",
			  w->origin, fr->payload, limit, what, fd->name, d->name);
}

/* Walks into a message field, or a nested-bytes field (tuple: one tuple level deeper). */
static int check_nested(const walk *w, const uint8_t *buf, const frame *fr,
			const ProtobufCFieldDescriptor *fd, const ProtobufCMessageDescriptor *d,
			const ProtobufCMessageDescriptor *inner, bool tuple, level at)
{
	level next = { at.depth + 1, at.nest + (tuple ? 1 : 0) };

	if (next.nest > SHS_MAX_NESTING)
		return too_deep(w, fr, fd, d, "tuples", SHS_MAX_NESTING);
	if (next.depth > MAX_DEPTH)
		return too_deep(w, fr, fd, d, "messages", MAX_DEPTH);
	return walk_message(w, inner, buf, fr->payload, fr->payload + fr->payload_len, next);
}

/* Checks one declared field: its wire type, a packed payload, or a nested message. */
static int check_declared(const walk *w, const uint8_t *buf, const frame *fr,
			  const ProtobufCFieldDescriptor *fd, const ProtobufCMessageDescriptor *d,
			  level at)
{
	int want = scalar_wire(fd->type);

	if (fr->wire == want && fd->type == PROTOBUF_C_TYPE_MESSAGE)
		return check_nested(w, buf, fr, fd, d, fd->descriptor, false, at);
	if (fr->wire == want && nested_bytes(d, fr->field))
		return check_nested(w, buf, fr, fd, d, nested_bytes(d, fr->field), true, at);
	if (fr->wire == want)
		return SHS_OK;
	if (fr->wire == WIRE_LEN && fd->label == PROTOBUF_C_LABEL_REPEATED)
		return check_packed(w, buf, fr, fd, d);
	return shs_seterr(w->e, SHS_EPARSE,
			  "%s: malformed protobuf at offset %zu: field %u (%s) of %s has wire type "
			  "%d, expected %d",
			  w->origin, fr->start, fr->field, fd->name, d->name, fr->wire, want);
}

static int walk_message(const walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *buf,
			size_t start, size_t end, level at)
{
	size_t pos = start;

	while (pos < end) {
		const ProtobufCFieldDescriptor *fd;
		frame fr;
		int rc;

		if (!read_frame(buf, end, &pos, &fr) && fr.short_read &&
		    (end == w->total || fr.want_end > w->total))
			return shs_seterr(w->e, SHS_EPARSE,
					  "%s: truncated protobuf at offset %zu: %s", w->origin,
					  fr.fault_at, fr.fault);
		if (fr.fault)
			return malformed(w, fr.fault_at, d, fr.fault);
		fd = protobuf_c_message_descriptor_get_field(d, fr.field);
		if (!fd)
			continue;
		rc = check_declared(w, buf, &fr, fd, d, at);
		if (rc != SHS_OK)
			return rc;
	}
	return SHS_OK;
}

int shs__proto_check(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
		     const char *origin, shs_err *e)
{
	walk w = { .origin = origin, .total = len, .e = e };
	level top = { 1, 0 };

	return walk_message(&w, d, buf, 0, len, top);
}
