/* Static facts about a module: while-loop trip counts, dot FLOPs, parameter bytes, histograms. */
#ifndef SHS_ANALYSIS_H
#define SHS_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

/* The trip count of while instruction w of computation c, when the loop has the counted form
 * XLA and JAX emit: the condition compares a tuple element k of its parameter with an integer
 * constant (LT, LE, GT, GE, NE), the loop's init tuple sets element k to an integer constant, and
 * the body adds or subtracts a constant step to it. Returns true and sets *trips (>= 0) when the
 * count is known; false otherwise. */
bool shs_while_trip_count(const shs_module *m, const shs_computation *c, const shs_instr *w,
			  int64_t *trips);

/* Whether while body `body` returns element k of its state as it is: the root tuple's element
 * k is the parameter's element k (a weight is loop-invariant; a stack of saved activations is
 * updated every trip). */
bool shs_while_keeps(const shs_computation *body, int64_t k);

/* FLOPs of one dot: 2 * (result elements) * (product of the lhs contracting dim sizes).
 * 0 for any other instruction or a malformed dot. */
double shs_dot_flops(const shs_computation *c, const shs_instr *i);

/* Dot FLOPs of one execution of computation c, following call, fusion, conditional (the most
 * expensive branch), async and while (body times the trip count). *unknown_loops (may be NULL)
 * counts while loops whose trip count was not found (they are counted once) and callees that
 * do not come before their caller (not counted). Each computation is costed once, so the cost
 * is linear in the module's size. -1 when out of memory or c is not in m. */
double shs_comp_dot_flops(const shs_module *m, const shs_computation *c, uint32_t *unknown_loops);

/* The token batch: the index of the entry's first parameter that is an integer array of rank 2
 * or more (dim 0 the sequences, dim 1 their tokens), or UINT32_MAX when there is none. */
uint32_t shs_token_param(const shs_module *m);

/* Bytes of the entry computation's parameters (their full logical shapes). -1 on overflow. */
int64_t shs_entry_param_bytes(const shs_module *m);

/* Which entry instructions are parameters that come back whole as step outputs
 * (input_output_alias with an empty parameter index: a weight or its Adam state, not a batch
 * input): a calloc'ed array by instruction (caller frees), or NULL when out of memory or m has
 * no entry. */
bool *shs_entry_returned_params(const shs_module *m);

/* Instructions per opcode over the whole module into counts[SHS_OP_COUNT]; returns the total. */
uint64_t shs_opcode_histogram(const shs_module *m, uint64_t counts[SHS_OP_COUNT]);

#endif
