/* Private helpers shared by the metadata, sharding, named-sharding and proto code. */
#ifndef SHS_SHARDING_INTERNAL_H
#define SHS_SHARDING_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sharding.h"

enum {
	SHS_SHARDING_MAX_DIMS = 64 /* tile-assignment and iota ranks we accept */
};

/* The offset of the first byte at or after pos in s[0..len) that is neither white space nor
 * inside a C comment. An unterminated comment stops at its opening '/'. s: borrowed, valid until
 * this returns. */
size_t shs__skip_space(const char *s, size_t len, size_t pos);

/* Puts the iota reshape dims and perm of length *n into XLA's canonical form in place: drops
 * size-1 dims, merges dims whose perm entries are consecutive and in order. All-ones becomes
 * [1] with perm [0]. perm must be a permutation of 0..*n-1. dims, perm and n: borrowed, valid
 * until this returns. */
void shs__iota_canonicalize(int64_t *dims, int32_t *perm, uint32_t *n);

/* *out = product of dims[0..n); false when a factor is < 1 or the product overflows int64.
 * dims: borrowed, valid until this returns. */
bool shs__dims_product(const int64_t *dims, uint32_t n, int64_t *out);

/* True when perm[0..n) holds each of 0..n-1 exactly once. perm: borrowed, valid until this
 * returns. */
bool shs__is_permutation(const int32_t *perm, uint32_t n);

/* A copy in a of the n elements of size sz at src, or NULL when n is 0; clears *ok (and gives
 * NULL) when out of memory, so a run of copies is checked once. The result: copied; caller frees
 * with shs_arena_free(a) (or a's owner). src and ok: borrowed, valid until this returns. */
void *shs__dup_array(shs_arena *a, const void *src, size_t n, size_t sz, bool *ok);

/* Appends `{record, record, ...}`: metadata records as XLA lists them in a sharding. md:
 * borrowed, valid until this returns. */
void shs__put_metadata_list(shs_buf *b, const shs_metadata *md, uint32_t n);

/* qsort order of int64_t values, ascending. x and y: borrowed, valid until this returns. */
int shs__cmp_i64(const void *x, const void *y);

#endif
