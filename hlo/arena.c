/* Bump allocator in chunks; big requests get a chunk of their own. */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

enum { CHUNK_SIZE = 64 * 1024, ALIGN = 16 };

typedef struct chunk {
	struct chunk *next;
	size_t size, used;
	_Alignas(ALIGN) unsigned char data[];
} chunk;

struct shs_arena {
	chunk *head;
	size_t budget, total;
	size_t reserve; /* size of the next block, when larger than chunk */
	size_t chunk;   /* the usual block size */
};

shs_arena *shs_arena_new(size_t budget)
{
	shs_arena *a = calloc(1, sizeof(*a));

	if (a) {
		a->budget = budget;
		a->chunk = CHUNK_SIZE;
	}
	return a;
}

void shs_arena_free(shs_arena *a)
{
	chunk *c, *next;

	if (!a)
		return;
	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

static chunk *add_chunk(shs_arena *a, size_t need)
{
	size_t size = need > a->chunk ? need : a->chunk;
	chunk *c;

	if (a->reserve > size) {
		size = a->reserve;
		if (a->budget && size > a->budget - a->total)
			size = need > a->chunk ? need : a->chunk; /* the hint must not break the budget */
	}
	a->reserve = 0;
	if (a->budget && (a->total + size > a->budget || size > a->budget))
		return NULL;
	c = malloc(sizeof(*c) + size);
	if (!c)
		return NULL;
	c->size = size;
	c->used = 0;
	a->total += size;
	if (a->chunk < CHUNK_SIZE)
		a->chunk = 2 * a->chunk < CHUNK_SIZE ? 2 * a->chunk : CHUNK_SIZE;
	if (a->head && size > a->chunk) {
		/* keep the current chunk first so its free space is still used */
		c->next = a->head->next;
		a->head->next = c;
	} else {
		c->next = a->head;
		a->head = c;
	}
	return c;
}

void shs_arena_reset(shs_arena *a)
{
	chunk *c, *next;
	size_t total = a->total;

	if (a->head && !a->head->next) {
		a->head->used = 0;
		return;
	}
	/* several blocks: one block of their size next time, so the next reset keeps it */
	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->total = 0;
	a->reserve = total;
}

void shs_arena_set_chunk(shs_arena *a, size_t size)
{
	a->chunk = size > ALIGN ? size : ALIGN;
}

void shs_arena_reserve(shs_arena *a, size_t size)
{
	a->reserve = size;
}

void *shs_arena_alloc(shs_arena *a, size_t n)
{
	chunk *c = a->head;
	size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	void *p;

	if (need < n)
		return NULL;
	if (need == 0)
		need = ALIGN;
	if (!c || c->size - c->used < need) {
		c = add_chunk(a, need);
		if (!c)
			return NULL;
	}
	p = c->data + c->used;
	c->used += need;
	return p;
}

void *shs_arena_calloc(shs_arena *a, size_t count, size_t size)
{
	void *p;

	if (size && count > SIZE_MAX / size)
		return NULL;
	p = shs_arena_alloc(a, count * size);
	if (p)
		memset(p, 0, count * size);
	return p;
}

char *shs_arena_strndup(shs_arena *a, const char *s, size_t len)
{
	char *p = shs_arena_alloc(a, len + 1);

	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

char *shs_arena_strdup(shs_arena *a, const char *s)
{
	return s ? shs_arena_strndup(a, s, strlen(s)) : NULL;
}

void *shs_arena_memdup(shs_arena *a, const void *p, size_t n)
{
	void *q = shs_arena_alloc(a, n);

	if (q && n)
		memcpy(q, p, n);
	return q;
}

size_t shs_arena_used(const shs_arena *a)
{
	return a->total;
}
