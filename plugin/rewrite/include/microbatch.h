/* Gradient accumulation written into a module: the step as micro-batches in one while loop. */
#ifndef SHS_MICROBATCH_H
#define SHS_MICROBATCH_H

#include <stdint.h>

#include "ir.h"
#include "status.h"

/* The sequences of the step's data: the leading dim shared by the entry parameters that are
 * data (shs_param_is_data); 0 when there are none or they disagree. */
int64_t shs_microbatch_batch(const shs_module *m);

/* The trips of the loop over micro-batches shs_microbatch_rewrite wrote into m's entry (its
 * body named "<entry>.microbatch.body"), or 1 when m has none. */
int64_t shs_microbatch_count(const shs_module *m);

/* Writes m's step as `microbatches` micro-batches, as JAX lowers a lax.scan over them
 * (MaxText's gradient_accumulation_steps): each data parameter [B, ...] is reshaped to
 * [B/M, M, ...] and trip i of one while loop takes column i; the loop holds every instruction
 * that depends on the data, at the micro-batch's shapes (the computations it calls cloned at
 * those shapes); what the step sums over the batch (weight gradients, the loss) is summed over
 * the trips in accumulators; what uses those sums (the optimizer) runs once after the loop. The
 * parameters, the result and input_output_alias are m's. microbatches == 1 copies m. On
 * success *out is a new module owning all its memory (caller frees with shs_module_free).
 * Returns SHS_OK, SHS_EINVAL when the step cannot be split (e names the instruction and why:
 * the batch does not divide, a value that needs the whole batch at once such as a maximum over
 * the batch, an operation the rewrite does not know), SHS_EUNSUPPORTED (an attribute kept only
 * as text) or SHS_ENOMEM. m is only read. */
int shs_microbatch_rewrite(const shs_module *m, int64_t microbatches, shs_module **out,
			   shs_err *e);

#endif
