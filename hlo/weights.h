/* Which values of a module are its weights: known before the step's compute starts. */
#ifndef SHS_WEIGHTS_H
#define SHS_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"
#include "status.h"

/* The model's weights (weights.c): the entry's parameters (in a training step, one whose
 * parameters include a weight by shs_entry_param_roles, those but its inputs: the batch is not
 * a weight), and what computations get from them:
 * a called computation's parameter when every call passes a weight, a loop's tuple element when
 * its initial value is a weight and the body keeps it as it is; through converts, reshapes,
 * copies, slices, dynamic slices, bitcasts, tuple elements (a scanned layer's weights) and
 * sharding custom-calls (Sharding, shard_map's SPMDFullToShardShape). An
 * activation passed into a layer's computation is not one. A weight's gather can be issued
 * before the step reaches its reader (FSDP prefetch). *out is the caller's (shs_weights_free);
 * it reads m only while being made. SHS_OK or SHS_ENOMEM. */
typedef struct shs_weights shs_weights;
int shs_weights_make(const shs_module *m, shs_weights **out, shs_err *e);
void shs_weights_free(shs_weights *x);
/* Whether value v of computation c is a weight (false when x is NULL). */
bool shs_is_weight(const shs_weights *x, uint32_t c, uint32_t v);

/* What an entry parameter is to the training step, by how the step uses it (weights_use.c). */
typedef enum shs_param_role {
	SHS_PARAM_INPUT = 0,     /* the batch, the step count, anything not written back */
	SHS_PARAM_WEIGHT = 1,    /* a model weight */
	SHS_PARAM_OPT_STATE = 2  /* optimizer state (Adam's moments) */
} shs_param_role;

/* Per instruction of m's entry (calloc'ed: the caller frees it; NULL when out of memory or m
 * has no entry): a float array parameter the step gives back updated (aliased to an output, or
 * an output of its shape and type computed from it) is a WEIGHT when it flows, through
 * whatever computes on the way, into a matmul, a convolution, a gather's table or a layer (a
 * call, loop or conditional), else OPT_STATE (Adam's moments flow only into their update and
 * the weight's); every other instruction is INPUT. Names are not looked at: a Keras or Flax
 * module's state[0][1] is recognised as MaxText's params/... is. */
shs_param_role *shs_entry_param_roles(const shs_module *m);
/* The roles shs_weights_make found (per instruction of the entry: borrowed from x, valid while
 * it lives), or NULL when x is NULL. */
const shs_param_role *shs_weights_roles(const shs_weights *x);

#endif
