/* Text of shardings, mesh axes and collectives, as the reports and the commands print them. */
#ifndef SHS_REPORT_TEXT_H
#define SHS_REPORT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "shardsearch_plugin.h"
#include "sharding.h"

/* The named form of n specs, "[{fsdp}, {}]" each, comma-separated for tuples. Returns a new
 * string (caller frees) or NULL when out of memory. */
char *shs_specs_text(const shs_mesh *mesh, const shs_pspec *s, uint32_t n);

/* "fsdp,tensor": the names of the mesh axes in mask, into buf (cap bytes). */
void shs_axes_text(const shs_mesh *mesh, uint32_t mask, char *buf, size_t cap);

/* "all-gather", "reduce-scatter", ... for a collective kind (shs_coll_kind). */
const char *shs_coll_name(int kind);

#endif
