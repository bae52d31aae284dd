/* Helpers shared by the built-in strategy plugins (compiled into each .so; never exported). */
#ifndef SHS_STRATEGIES_COMMON_H
#define SHS_STRATEGIES_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "shardsearch_plugin.h"

/* Limits of the helpers below. */
enum {
	SC_MAX_SLOTS = 64,   /* slots of one axis assignment (sc_enum_assign) */
	SC_LABEL_MAX = SHS_PLUGIN_LABEL_MAX, /* label buffers, as the host keeps them */
	/* partial-sum variants of one candidate: all-reduce + (reduce-scatter + cm) per dim */
	SC_MAX_PSUM = 1 + 2 * SHS_PLUGIN_MAX_RANK
};

/* ---- Specs ---- */

/* *out = the replicated spec of an array of the given rank (no axes anywhere). */
void sc_replicated(uint32_t rank, shs_pspec *out);

/* Whether a and b are the same sharding: same rank and the same axes in the same order on every
 * dim (padded is ignored). */
bool sc_equal(const shs_pspec *a, const shs_pspec *b);

/* Whether s is valid for the array shape on mesh: ranks match, rank <= SHS_PLUGIN_MAX_RANK,
 * every axis < mesh->n_axes and used at most once, and every dim divides by the product of its
 * axes' sizes (not checked when s->padded). A tuple shape is never valid. */
bool sc_valid(const shs_pspec *s, const shs_pshape *shape, const shs_pmesh *mesh);

/* The product of the sizes of the axes of one dim (1 for none). Axes must exist on mesh. */
int64_t sc_dim_shards(const shs_pdim *d, const shs_pmesh *mesh);

/* Bit k set for each mesh axis k used anywhere in s. */
uint32_t sc_axes_mask(const shs_pspec *s);

/* The dim of s that holds mesh axis `axis`, or -1 when none does. */
int sc_axis_dim(const shs_pspec *s, uint32_t axis);

/* Whether a dim of `size` elements split `shards` ways (> 0) then `n` more ways (> 0) holds
 * fewer elements per device than before: ceil(size / (shards * n)) < ceil(size / shards). A
 * split that does not divide is padded by XLA's partitioner (each device holds the ceil, the
 * last ones padding or nothing); it is worth offering only when it shrinks the piece. */
bool sc_split_shrinks(int64_t size, int64_t shards, int64_t n);

/* Sets s->padded to whether some dim of the array shape does not divide by its axes' sizes. */
void sc_mark_padded(shs_pspec *s, const shs_pshape *shape, const shs_pmesh *mesh);

/* Elements per device of an array shape under s (each dim divided by its axes' sizes, rounded
 * up when it does not divide). s must have the shape's rank and existing axes. */
double sc_local_elems(const shs_pshape *shape, const shs_pspec *s, const shs_pmesh *mesh);

/* Bytes per device: sc_local_elems times api->elem_bytes(shape->type). */
double sc_local_bytes(const shs_host_api *api, const shs_pshape *shape, const shs_pspec *s,
		      const shs_pmesh *mesh);

/* The hint spec for leaf 0 of operand k when it is usable for an array of operand k's shape
 * (decided, same rank, axes exist), else NULL. Borrowed from q. */
const shs_pspec *sc_operand_hint(const shs_pquery *q, uint32_t k);

/* Likewise for leaf 0 of q->result_hint against the instruction's (array) shape. */
const shs_pspec *sc_result_hint(const shs_pquery *q);

/* ---- Enumeration ---- */

/* Called once per assignment with slots[0..n_slots): the axes each slot got, major first.
 * Return 0 to go on, non-zero to stop (sc_enum_assign then returns that value). */
typedef int (*sc_assign_fn)(const shs_pdim *slots, void *user);

/* Enumerates every assignment of the mesh axes to n_slots slots (<= SC_MAX_SLOTS): each axis goes
 * to no slot or to one slot, several axes on one slot in every order. Only assignments where
 * slot s's axes multiply to a divisor of sizes[s] are produced (sizes NULL: no such check).
 * allowed (NULL: everything) restricts axis k to the slots whose bit is set in allowed[k]; an
 * axis may always go nowhere; an axis of size <= 0 always goes nowhere. The order is
 * deterministic: the all-nowhere assignment first. Returns 0 after all, the callback's non-zero
 * value (use a positive one), or -1 when n_slots > SC_MAX_SLOTS or the mesh has more than
 * SHS_PLUGIN_MAX_AXES axes. */
int sc_enum_assign(uint32_t n_slots, const int64_t *sizes, const uint64_t *allowed,
		   const shs_pmesh *mesh, sc_assign_fn fn, void *user);

/* As sc_enum_assign, and axis k may also join slot s where it does not divide when bit s of
 * pad[k] is set and the split shrinks the slot's piece (sc_split_shrinks): XLA pads such a dim.
 * pad NULL: none. Padded placements come from hints (an operand already split that way), so
 * they add few assignments. */
int sc_enum_assign_padded(uint32_t n_slots, const int64_t *sizes, const uint64_t *allowed,
			  const uint64_t *pad, const shs_pmesh *mesh, sc_assign_fn fn,
			  void *user);

/* Called once per spec; return non-zero to stop. */
typedef int (*sc_spec_fn)(const shs_pspec *s, void *user);

/* Enumerates every valid, unpadded spec of an array shape (rank <= SHS_PLUGIN_MAX_RANK) on mesh,
 * replicated first: sc_enum_assign with one slot per dim. allowed as there (bit d: dim d).
 * Returns 0, the callback's non-zero value, or -1 when the shape is a tuple or too large. */
int sc_enum_specs(const shs_pshape *shape, const shs_pmesh *mesh, const uint64_t *allowed,
		  sc_spec_fn fn, void *user);

/* ---- Partial sums ---- */

/* One way to finish a partial sum. */
typedef struct sc_psum {
	int kind;             /* SHS_PCOLL_ALL_REDUCE or SHS_PCOLL_REDUCE_SCATTER */
	bool overlappable;    /* the collective-matmul twin of a reduce-scatter */
	int32_t dim;          /* reduce-scatter: the result dim given the axes; -1 for all-reduce */
	shs_pspec result;     /* the result spec after the collective */
	char suffix[16];      /* for the label: "ar", "rs2", "rs2 cm" */
} sc_psum;

/* The variants of a result that is a partial sum over the axes in `partial` (in that order):
 * all-reduce (result unchanged), then for each result dim d in order where the dim still
 * divides, reduce-scatter with all of partial appended minor-most to dim d, each followed by its
 * overlappable "cm" twin when with_cm. result is the spec before reduction (without the partial
 * axes). Fills out[0..n) (room for SC_MAX_PSUM) and returns n; 0 when partial is empty. */
uint32_t sc_psum_variants(const shs_pspec *result, const shs_pdim *partial,
			  const shs_pshape *shape, const shs_pmesh *mesh, bool with_cm,
			  sc_psum *out);

/* pad_dims of sc_psum_variants_padded: a partial sum may be scattered, padded, onto any dim
 * whose piece it shrinks (at most one more variant per dim: bounded by the rank). The plugins
 * offer it when propagating; ENUMERATE keeps the dividing variants (the search's choices). */
#define SC_PAD_ANY_DIM (~(uint64_t)0)

/* As sc_psum_variants, and a reduce-scatter also onto a result dim d that does not divide (its
 * result spec padded) when bit d of pad_dims is set and the split shrinks the piece, as XLA pads it
 * (reduce-scatter of a padded shape: the partitioner pads the input to the padded result
 * size first). */
uint32_t sc_psum_variants_padded(const shs_pspec *result, const shs_pdim *partial,
				 const shs_pshape *shape, const shs_pmesh *mesh, bool with_cm,
				 uint64_t pad_dims, sc_psum *out);

/* Bit k set for each axis in d. */
uint32_t sc_dim_mask(const shs_pdim *d);

/* Whether the host lends add_candidate (hosts before it have a smaller struct_size). */
static inline bool sc_has_add_candidate(const shs_host_api *api)
{
	return api->struct_size >= offsetof(shs_host_api, add_candidate) +
					   sizeof(api->add_candidate) &&
	       api->add_candidate;
}

/* ---- Digests ---- */

/* h with v mixed in (a multiply and xorshift step), for shs_strategy.digest. */
static inline uint64_t sc_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* ---- Labels ---- */

/* Appends str to buf[*len..cap), keeping buf NUL-terminated; *len counts as if not truncated
 * (labels are built per candidate: no formatting). */
void sc_append(char *buf, size_t cap, size_t *len, const char *str);

/* Appends the n bytes at str as sc_append does. */
static inline void sc_append_n(char *buf, size_t cap, size_t *len, const char *str, size_t n)
{
	if (*len < cap) {
		size_t room = cap - *len - 1;
		size_t take = n < room ? n : room;

		memcpy(buf + *len, str, take);
		buf[*len + take] = '\0';
	}
	*len += n;
}

/* Appends one character as sc_append does. */
static inline void sc_append_char(char *buf, size_t cap, size_t *len, char c)
{
	sc_append_n(buf, cap, len, &c, 1);
}

/* Appends the axes of d joined by '+' ("data+tensor"), or "-" when none, as sc_append does. */
void sc_append_dim(char *buf, size_t cap, size_t *len, const shs_pdim *d,
		   const shs_pmesh *mesh);

/* Writes into buf (cap bytes, always NUL-terminated, truncated) the axes of d as sc_append_dim
 * does. Returns the length written (as if not truncated). */
size_t sc_format_dim(char *buf, size_t cap, const shs_pdim *d, const shs_pmesh *mesh);

/* Writes s like "[data,-,fsdp+tensor]" into buf (cap bytes, always NUL-terminated, truncated);
 * rank 0 is "[]". Returns the length written (as if not truncated). */
size_t sc_format_spec(char *buf, size_t cap, const shs_pspec *s, const shs_pmesh *mesh);

/* The number after key and any blanks and sep characters in a backend_config (JSON's
 * `"flops": 4096`, sep ':'; Transformer Engine's MLIR dictionary `mask_type = 2 : i64`, sep
 * '='), or -1 when absent. */
double sc_config_number(const char *cfg, const char *key, char sep);

#endif
