/* Kernels sharded by a factor rule (kernel_rule.c), for the custom-call strategy: Shardy's
 * xla.sdy.sharding_rule on any custom call (the contract a Pallas / Mosaic / Triton kernel
 * states through JAX's custom_partitioning), cuBLAS GEMMs and Transformer Engine's norms. */
#ifndef SHS_STRATEGY_KERNEL_RULE_H
#define SHS_STRATEGY_KERNEL_RULE_H

#include <stdbool.h>

#include "common.h"

/* When q's instruction is a custom call with a factor rule (a Shardy sharding rule, or a known
 * GEMM or norm target), emits a candidate per way of putting the mesh axes on its factors into
 * out (each factor's dims split alike on every operand and result; a result without a split
 * factor is a partial sum, all-reduced), sets *rc to 0 (or -1 when they cannot be enumerated)
 * and returns true; false for any other call. q, out and api: borrowed, valid until this
 * returns. */
bool shs_kernel_rule_serve(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
			   int *rc);

#endif
