/* Which ZeRO stage a plan amounts to, from how it splits weights, gradients and Adam state. */
#include <string.h>

#include "search_internal.h"

/* The mesh axes that carry the batch: data and fsdp. */
static uint32_t batch_axes(const shs_mesh *mesh)
{
	uint32_t mask = 0;

	for (uint32_t a = 0; a < mesh->n_axes; a++)
		if (!strcmp(mesh->names[a], "data") || !strcmp(mesh->names[a], "fsdp"))
			mask |= 1u << a;
	return mask;
}

static bool split_over(const shs_decision *d, uint32_t mask)
{
	for (uint32_t j = 0; d->set && j < d->n_leaves; j++)
		for (uint32_t k = 0; k < d->leaves[j].rank; k++)
			for (uint32_t x = 0; x < d->leaves[j].dims[k].n; x++)
				if (mask & (1u << d->leaves[j].dims[k].axes[x]))
					return true;
	return false;
}

int shs__zero_stage(const shs_module *m, const shs_plan *p, const shs_eval *ev)
{
	const shs_computation *c = shs_module_entry(m);
	uint32_t mask = batch_axes(&p->mesh);
	bool weights = false, state = false, grads = false;
	char path[SHS_PATH_CAP];

	for (uint32_t i = 0; mask && i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		if (in->op != SHS_OP_PARAMETER || !in->shape.rank ||
		    !shs_elem_is_float(in->shape.type) || !split_over(&p->d[m->entry][i], mask))
			continue;
		shs_param_path(in, path, sizeof(path));
		if (shs_param_path_is_optimizer_state(path))
			state = true;
		else if (shs_param_path_has_segment(path, "params"))
			weights = true;
	}
	/* the gradients leave the backward pass split when it reduce-scatters them */
	for (uint32_t k = 0; ev && k < ev->n_colls; k++)
		grads |= ev->colls[k].kind == SHS_PCOLL_REDUCE_SCATTER && !ev->colls[k].reshard &&
			 (ev->colls[k].axes_mask & mask);
	return weights ? 3 : state ? (grads ? 2 : 1) : 0;
}
