/* Custom calls for the graph builder: tuple-shaped results with their own layouts. */
#include <string.h>

#include "builder_internal.h"

shs_gb_leaf shs_gb_leaf_of(int32_t type, shs_gdims dims, shs_gdims minor_to_major)
{
	shs_gb_leaf l = { type, dims, minor_to_major };

	return l;
}

/* *s = the array of leaf l; a minor_to_major of the leaf's rank replaces the default. */
static int leaf_shape(shs_gb *g, shs_shape *s, const shs_gb_leaf *l)
{
	if (shs__gb_array_shape(g, s, l->type, l->dims) != SHS_OK)
		return SHS_ENOMEM;
	if (l->minor_to_major.n != l->dims.n || !s->layout)
		return SHS_OK;
	for (uint32_t k = 0; k < l->dims.n; k++)
		s->layout->minor_to_major.v[k] = l->minor_to_major.d[k];
	return SHS_OK;
}

shs_v shs_gb_custom_call(shs_gb *g, const char *target, const shs_v *operands, uint32_t n,
			 const shs_gb_leaf *results, uint32_t n_results, const char *backend_config)
{
	shs_instr *i = shs__gb_new(g, SHS_OP_CUSTOM_CALL, operands, n);
	shs_arena *a;

	if (!i)
		return 0;
	a = g->m->arena;
	i->shape.type = SHS_TUPLE;
	i->shape.n_tuple = n_results;
	i->shape.tuple = shs_arena_calloc(a, n_results ? n_results : 1, sizeof(shs_shape));
	i->custom_call_target = shs_arena_strdup(a, target);
	if (backend_config && backend_config[0]) {
		i->backend_config.len = strlen(backend_config);
		i->backend_config.data = shs_arena_memdup(a, backend_config, i->backend_config.len);
	}
	if (!i->shape.tuple || !i->custom_call_target ||
	    (i->backend_config.len && !i->backend_config.data)) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	for (uint32_t k = 0; k < n_results; k++)
		if (leaf_shape(g, &i->shape.tuple[k], &results[k]) != SHS_OK)
			return 0;
	return shs__gb_add(g, i, "custom-call");
}
