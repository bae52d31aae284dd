/* Private pieces of the graph builder shared by builder.c and builder_ops.c. */
#ifndef SHS_GEN_BUILDER_INTERNAL_H
#define SHS_GEN_BUILDER_INTERNAL_H

#include "builder.h"

/* True when v names an instruction of the current computation. */
bool shs__gb_valid(const shs_gb *g, shs_v v);

/* Fills *s with an array shape of type and dims (default layout), arrays in the module's arena.
 * Returns SHS_OK, or SHS_ENOMEM after recording it on g. */
int shs__gb_array_shape(shs_gb *g, shs_shape *s, int32_t type, shs_gdims d);

/* Copies d into *out (arena-owned); returns out->v (NULL for rank 0 or after an error). */
int64_t *shs__gb_i64s(shs_gb *g, shs_i64s *out, shs_gdims d);

/* A new instruction of op with the given operands, not yet added; NULL after an error. The
 * instruction lives in the module's arena. */
shs_instr *shs__gb_new(shs_gb *g, shs_opcode op, const shs_v *operands, uint32_t n);

/* Names (name or the opcode, then ".ID"), tags with the scope and appends i to the current
 * computation; returns its value (0 after an error). */
shs_v shs__gb_add(shs_gb *g, shs_instr *i, const char *name);

#endif
