/* protobuf-c on an arena: the allocator, nested messages kept as bytes, batched string copies. */
#include <stddef.h>
#include <string.h>

#include "proto_internal.h"

enum { BLOCK_ALIGN = _Alignof(max_align_t) };

/* True when taking size more bytes keeps the arena (and the one it shares the limit with)
 * within the limit. */
static bool within_limit(const shs__pb_arena *pa, size_t size)
{
	size_t used;

	if (!pa->limit)
		return true;
	used = shs_arena_used(pa->arena) + (pa->also ? shs_arena_used(pa->also) : 0);
	return used <= pa->limit && size <= pa->limit - used;
}

/* Moves to a new block of at least need bytes (a block's worth when the budget allows); the old
 * block's tail is left unused. */
static bool next_block(shs__pb_arena *pa, size_t need)
{
	size_t size = need > pa->block ? need : pa->block;
	uint8_t *p = within_limit(pa, size) ? shs_arena_alloc(pa->arena, size) : NULL;

	if (!p && size > need) {
		size = need;
		p = within_limit(pa, size) ? shs_arena_alloc(pa->arena, size) : NULL;
	}
	if (!p)
		return false;
	pa->next = p;
	pa->end = p + size;
	if (pa->block < SHS__PB_MAX_BLOCK)
		pa->block *= 2; /* the estimate was short: grow geometrically */
	return true;
}

static void *arena_alloc(void *data, size_t size)
{
	shs__pb_arena *pa = data;
	size_t need = (size + BLOCK_ALIGN - 1) & ~(size_t)(BLOCK_ALIGN - 1);
	void *p;

	if (need < size) {
		pa->refused = true;
		return NULL;
	}
	if (!need) /* protobuf-c takes NULL as a failure */
		need = BLOCK_ALIGN;
	if (!pa->block) { /* no blocks: straight from the arena */
		p = within_limit(pa, size) ? shs_arena_alloc(pa->arena, size) : NULL;
		pa->refused |= !p;
		return p;
	}
	if ((size_t)(pa->end - pa->next) < need && !next_block(pa, need)) {
		pa->refused = true;
		return NULL;
	}
	p = pa->next;
	pa->next += need;
	return p;
}

/* Blocks go when the arena does. */
static void arena_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

void shs__pb_arena_init(shs__pb_arena *pa, shs_arena *a, size_t block)
{
	memset(pa, 0, sizeof(*pa));
	pa->alloc.alloc = arena_alloc;
	pa->alloc.free = arena_free;
	pa->alloc.allocator_data = pa;
	pa->arena = a;
	pa->block = block;
}

void *shs__pb_unpack_nested(shs__pb_arena *pa, const ProtobufCMessageDescriptor *d,
			    const ProtobufCBinaryData *b)
{
	static const uint8_t none[1]; /* an empty payload is a message of defaults */

	return protobuf_c_message_unpack(d, &pa->alloc, b->len, b->len ? b->data : none);
}

bool shs__pb_pack_nested(shs_arena *a, const ProtobufCMessage *msg, ProtobufCBinaryData *out)
{
	size_t n = protobuf_c_message_get_packed_size(msg);

	out->len = 0;
	out->data = shs_arena_alloc(a, n);
	if (!out->data)
		return false;
	out->len = protobuf_c_message_pack(msg, out->data);
	return out->len == n;
}

void shs__strs_add(shs__strs *s, const char *src, const char **dst, bool keep_empty)
{
	size_t n = src ? strlen(src) : 0;

	*dst = keep_empty ? "" : NULL;
	if (!n)
		return;
	s->src[s->n] = src;
	s->len[s->n] = n;
	s->dst[s->n] = dst;
	s->total += n + 1;
	s->n++;
}

bool shs__strs_copy(shs__strs *s, shs_arena *a)
{
	char *p;

	if (!s->n)
		return true;
	p = shs_arena_alloc(a, s->total);
	if (!p)
		return false;
	for (unsigned i = 0; i < s->n; i++) {
		memcpy(p, s->src[i], s->len[i]);
		p[s->len[i]] = '\0';
		*s->dst[i] = p;
		p += s->len[i] + 1;
	}
	s->n = 0;
	s->total = 0;
	return true;
}
