/* The padded dimensions of a plan: every array value whose sharding splits a dim its axes do not
 * divide, which XLA's partitioner pads (each device holds ceil(size / split), the last ones
 * padding or nothing), as a short text summary and a JSON array. */
#ifndef SHS_REPORT_PADDED_H
#define SHS_REPORT_PADDED_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "ir.h"
#include "plan.h"

/* One padded dim of one value. */
typedef struct shs_padded_dim {
	const char *comp;       /* the computation's name (borrowed from the module) */
	const char *instr;      /* the instruction's name (borrowed from the module) */
	uint32_t dim;
	int64_t size;           /* the dim's size */
	int64_t split;          /* devices it is split over (the product of its axes' sizes) */
	int64_t padded;         /* ceil(size / split) * split: the size XLA pads it to */
} shs_padded_dim;

/* The padded dims of p's array values on m (the decided, non-reducer instructions; a tuple's
 * elements are reported where they are made), in module order, into a new array *out of *n
 * (caller frees; NULL when none). Returns 0, or -1 when out of memory. */
int shs_padded_dims(const shs_module *m, const shs_plan *p, shs_padded_dim **out, uint32_t *n);

/* Prints one line to out when p pads something: how many dims of how many values, and the
 * three that waste the most (name, dim, size -> padded size over split, waste in %). */
void shs_padded_report_print(FILE *out, const shs_module *m, const shs_plan *p);

/* Sets member "padded" of the JSON object o to the array of every padded dim ({"computation",
 * "instruction", "dim", "size", "split", "padded_size", "waste": padded size - size,
 * "waste_fraction": (padded size - size) / size}) and returns o (o NULL: returns NULL). */
json_t *shs_padded_report_with(json_t *o, const shs_module *m, const shs_plan *p);

#endif
