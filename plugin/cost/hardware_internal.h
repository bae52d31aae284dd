/* Private to the cost room: how the built-in catalog is assembled (hardware.c, hardware_rates.c). */
#ifndef SHS_HARDWARE_INTERNAL_H
#define SHS_HARDWARE_INTERNAL_H

#include "hardware.h"

/* Sets the achievable rates (matmul_eff, matmul_tile, hbm_eff, the links' *_eff,
 * windowed_einsum_bytes) of the built-in entries of c by name. */
void shs__hw_rates_apply(shs_hw_catalog *c);

#endif
