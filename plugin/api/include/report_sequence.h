/* How a plan splits the sequence: the residual stream's layout, as the reports name it. */
#ifndef SHS_REPORT_SEQUENCE_H
#define SHS_REPORT_SEQUENCE_H

#include <stdio.h>

#include <jansson.h>

#include "plan.h"

/* "sequence  ..." for the residual stream of plan p of m: the token embedding's output (the
 * first gather whose rank-3 result [B, T, D] has the token inputs' sequence length T), its
 * sharding, and what splitting its sequence dim amounts to: over tensor, Megatron's sequence
 * parallelism; over another axis (context), context parallelism; not at all; and, when some
 * flash-attention kernel splits the sequence, how many run as a ring, with K/V gathered and on
 * their shard alone. Nothing when m has no such value. */
void shs_sequence_report_print(FILE *out, const shs_module *m, const shs_plan *p);

/* The mesh axes plan p splits the residual stream's sequence over (sequence parallelism, as
 * Megatron-LM's --sequence-parallel splits it over tensor, or context parallelism), as a mask;
 * 0 when it splits none or there is no residual stream. */
uint32_t shs_sequence_axes(const shs_module *m, const shs_plan *p);

/* The same as {"split_over": [axes], "sharding": "[{...}, ...]", "kind": "none" | "tensor
 * (sequence parallelism)" | "context", "attention": {"ring": n, "gather": n, "local": n}} set
 * as "sequence" on o (which it returns); o unchanged when m has no such value or out of memory.
 * o may be NULL (returned as is). */
json_t *shs_sequence_report_with(json_t *o, const shs_module *m, const shs_plan *p);

#endif
