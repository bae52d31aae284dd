/* Shardings stated in frontend attributes: Shardy's xla.sdy.sharding (with the module's
 * xla.sdy.meshes) and mhlo.sharding. */
#ifndef SHS_SDY_H
#define SHS_SDY_H

#include "arena.h"
#include "ir.h"
#include "sharding.h"
#include "status.h"

/* The sharding instruction in of m states in its frontend attributes, in a: xla.sdy.sharding
 * (Shardy's #sdy.sharding<@mesh, [{"x"}, {}]> or #sdy.sharding_per_value<[<...>, ...]>, the mesh
 * from the module's xla.sdy.meshes or inline) as an XLA NamedSharding (a tuple for several
 * values), else mhlo.sharding (XLA's text). *out NULL when it states none. Returns SHS_OK,
 * SHS_EPARSE (a value it cannot read; e names the instruction) or SHS_ENOMEM. m and in:
 * borrowed, valid until this returns; *out: caller frees with a. */
int shs_stated_sharding(const shs_module *m, const shs_instr *in, shs_arena *a,
			shs_sharding **out, shs_err *e);

#endif
