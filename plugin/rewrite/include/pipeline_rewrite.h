/* Pipeline stages written into a scanned module: its layer loops as a GPipe pipeline. */
#ifndef SHS_PIPELINE_REWRITE_H
#define SHS_PIPELINE_REWRITE_H

#include <stdint.h>

#include "ir.h"
#include "plan.h"
#include "sharding.h"
#include "status.h"

/* What the pipeline is to be: stages over mesh axis stage_axis (the mesh's first, so that a
 * device's stage is its partition id over the devices a stage holds) and microbatches of the
 * batch; plan (NULL: none), the module's plan on the mesh with the stage axis left unused (as
 * shs_plan_make makes it), gives the values that enter and leave the stages their sharding
 * over the other axes, so that the stages run the layers as the plan does. All borrowed for
 * the call. */
typedef struct shs_pipeline_request {
	const shs_mesh *mesh;
	uint32_t stage_axis;
	int64_t microbatches;
	const shs_plan *plan;
} shs_pipeline_request;

/* Writes m's forward and backward layer loops as a GPipe pipeline over the stage axis, the way
 * MaxText's pipeline lowers: a shard_map region manual over stage (the other axes auto) takes
 * each stacked weight [L, ...] split over the stages ([L/S, ...] each) and the loop's input as
 * micro-batches ([B/M, M, ...]); one while loop of M + S - 1 trips runs, on every stage, its
 * L/S layers (an inner loop over its slice of the stack, calling the layer at the micro-batch's
 * shapes) on the micro-batch the stage before sent it (stage 0 takes micro-batch t) and sends
 * the result on by collective-permute; the last stage writes micro-batch t - (S - 1) of the
 * output. The saved activations are kept per trip ([M + S - 1, L/S, ...], as JAX's transpose
 * of the pipeline's scan keeps them); the backward loop runs the trips in reverse, the last
 * stage taking the loss's gradient of its micro-batch, each stage accumulating its layers'
 * weight gradients, the gradient sent back by collective-permute. The work before, between and
 * after the layer loops is m's, at the whole batch.
 *
 * m must hold, in its entry, one forward and one backward layer loop as `gen --scan` writes them
 * (and JAX's scan over a called layer): a while whose body slices its stacked operands at the
 * trip's layer (the trip, or L - 1 - the trip), calls one computation, and writes its results
 * into stacks at that layer or carries them; the backward loop reading the stacks the forward
 * one wrote. The layer at the micro-batch's shapes comes from shs_microbatch_rewrite.
 *
 * On success *out is a new module (caller frees with shs_module_free), verified. Returns SHS_OK,
 * SHS_EINVAL (e says why: no such loops, a loop of another form, layers or batch that do not
 * split, a stage axis that is not the mesh's first) or SHS_ENOMEM. m is only read. */
int shs_pipeline_rewrite(const shs_module *m, const shs_pipeline_request *r, shs_module **out,
			 shs_err *e);

/* Whether m's entry holds a pipeline shs_pipeline_rewrite wrote (its forward loop). */
bool shs_pipeline_written(const shs_module *m);

#endif
