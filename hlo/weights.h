/* Which values of a module are its weights: known before the step's compute starts. */
#ifndef SHS_WEIGHTS_H
#define SHS_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"
#include "status.h"

/* The model's weights (weights.c): the entry's parameters, and what computations get from them:
 * a called computation's parameter when every call passes a weight, a loop's tuple element when
 * its initial value is a weight and the body keeps it as it is; through converts, reshapes,
 * copies, slices, dynamic slices, bitcasts and tuple elements (a scanned layer's weights). An
 * activation passed into a layer's computation is not one. A weight's gather can be issued
 * before the step reaches its reader (FSDP prefetch). *out is the caller's (shs_weights_free);
 * it reads m only while being made. SHS_OK or SHS_ENOMEM. */
typedef struct shs_weights shs_weights;
int shs_weights_make(const shs_module *m, shs_weights **out, shs_err *e);
void shs_weights_free(shs_weights *x);
/* Whether value v of computation c is a weight (false when x is NULL). */
bool shs_is_weight(const shs_weights *x, uint32_t c, uint32_t v);

#endif
