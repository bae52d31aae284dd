/* A bump allocator: everything of one module lives in one arena and goes with it. */
#ifndef SHS_ARENA_H
#define SHS_ARENA_H

#include <stddef.h>
#include <stdint.h>

typedef struct shs_arena shs_arena;

/* A new empty arena that refuses to grow past budget bytes (0: no limit).
 * Caller frees with shs_arena_free(). NULL when out of memory. */
shs_arena *shs_arena_new(size_t budget);

/* Makes the next block the arena takes from the system at least size bytes: a loader that
 * knows roughly how much it will need asks once, instead of in many small blocks (which also
 * keeps the C library from handing the pages back and faulting them in again on every load). */
void shs_arena_reserve(shs_arena *a, size_t size);

/* Makes the next block the arena takes from the system at least size bytes instead of 64 KiB,
 * and each after it twice the last, up to 64 KiB: an arena that lives for one small job (the
 * candidates of one instruction) takes one small block, one that fills takes few. */
void shs_arena_set_chunk(shs_arena *a, size_t size);

/* Forgets everything handed out (every pointer from a becomes invalid). Its one block is kept
 * for what comes next; several are freed and the next block is made as large as they were
 * together: an arena reused for jobs of the same size soon takes nothing from the system. */
void shs_arena_reset(shs_arena *a);

/* Frees the arena and every block it handed out. NULL does nothing. */
void shs_arena_free(shs_arena *a);

/* n bytes aligned for any type, uninitialised; NULL when out of memory or over budget.
 * Borrowed, valid until the arena is freed. */
void *shs_arena_alloc(shs_arena *a, size_t n);

/* Like shs_arena_alloc, for count elements of size bytes, zeroed; NULL also on overflow. */
void *shs_arena_calloc(shs_arena *a, size_t count, size_t size);

/* A NUL-terminated copy of s[0..len); NULL when out of memory. */
char *shs_arena_strndup(shs_arena *a, const char *s, size_t len);

/* A copy of the NUL-terminated s; NULL when out of memory (or s is NULL). */
char *shs_arena_strdup(shs_arena *a, const char *s);

/* A copy of n bytes at p; NULL when out of memory. n == 0 gives a valid non-NULL pointer. */
void *shs_arena_memdup(shs_arena *a, const void *p, size_t n);

/* Bytes handed out so far (for benchmarks and the budget). */
size_t shs_arena_used(const shs_arena *a);

#endif
