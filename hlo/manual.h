/* shard_map's manual regions: the instructions XLA's SPMD partitioner leaves as the program wrote
 * them (their shapes are one device's), and the device groups of the collectives written there. */
#ifndef SHS_MANUAL_H
#define SHS_MANUAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"
#include "status.h"

/* Which instructions of a module are manual. A value is manual from an SPMDFullToShardShape
 * custom call manual over every axis (the region's entry, itself manual) or where its sharding
 * says {manual}, through its users up to an SPMDShardToFullShape (not manual: its result is the
 * whole array again); everything in a computation a manual call, while or conditional runs is
 * manual too, and so is an instruction of no operands (a constant, an iota, partition-id: JAX's
 * axis_index) that only the region uses. As XLA's ShardingPropagation reads jax.shard_map's
 * lowering. An SPMDFullToShardShape manual over only some axes (shard_map's auto axes) opens a
 * partly manual region the same way: its instructions are not manual (marks) but name it
 * (entry). */
typedef struct shs_manual {
	uint32_t n_comps;
	bool **marks;  /* marks[c][i]; marks[c] NULL for a computation with none */
	/* partly manual regions (shard_map with auto axes): entry[c][i] the SPMDFullToShardShape
	 * whose sharding (manual over some axes) opens the region instruction i of computation c
	 * is in, else NULL; entry[c] NULL for a computation with none */
	const shs_instr ***entry;
	bool any;      /* a region of either kind */
} shs_manual;

/* Marks m's manual instructions into *out (owned: free with shs_manual_free). SHS_OK or
 * SHS_ENOMEM. m: borrowed, valid until this returns. */
int shs_manual_make(const shs_module *m, shs_manual *out, shs_err *e);

/* Frees what shs_manual_make made; a zeroed one does nothing. */
void shs_manual_free(shs_manual *mm);

/* Whether m holds a manual region (false when out of memory). */
bool shs_manual_any(const shs_module *m);

/* Whether instruction i of computation c is manual (over every axis). */
bool shs_manual_is(const shs_manual *mm, uint32_t c, uint32_t i);

/* The SPMDFullToShardShape opening the partly manual region instruction i of computation c is
 * in (its sharding says which axes are manual: shs_sharding_to_named_manual), or NULL.
 * Borrowed from the module. */
const shs_instr *shs_manual_entry(const shs_manual *mm, uint32_t c, uint32_t i);

/* Whether in is the custom call that enters a manual region (SPMDFullToShardShape) or the one
 * that leaves it (SPMDShardToFullShape). */
bool shs_is_full_to_shard(const shs_instr *in);
bool shs_is_shard_to_full(const shs_instr *in);

/* Whether in is a sharding constraint (custom call Sharding: its operand's data, pinned). */
bool shs_is_sharding_constraint(const shs_instr *in);

/* The first instruction outside manual regions (of either kind) that only XLA's partitioner
 * writes, showing that m was already partitioned: a collective (all-gather, all-reduce,
 * reduce-scatter, all-to-all, ragged-all-to-all, collective-broadcast, collective-permute, their
 * asynchronous forms) or partition-id; its computation in *comp (may be NULL). NULL when there
 * is none, or when out of memory (nothing is then refused). Both borrowed, valid until m is
 * freed. */
const shs_instr *shs_partitioned_witness(const shs_module *m, const shs_computation **comp);

/* The device groups collective in works over: its replica_groups (lists, or XLA's iota form;
 * none: one group of all n_devices), or a collective-permute's source-target pairs (groups of
 * two: source, target). *ids gets n_groups x group_size ids, row by row (malloc'ed: caller
 * frees). SHS_EINVAL (named in e) when groups differ in size, name a device outside
 * [0, n_devices), or in is no collective; SHS_EPARSE for unreadable groups; SHS_ENOMEM. */
int shs_collective_groups(const shs_instr *in, int64_t n_devices, int64_t **ids,
			  uint32_t *n_groups, uint32_t *group_size, shs_err *e);

#endif
