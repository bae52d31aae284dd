/* A candidate priced where a plan puts it: its compute, its own collectives and the resharding
 * of its operands from the shardings the plan gives their producers (explain). */
#include "propagate_internal.h"

void shs_plan_price(const shs_plan *p, const shs_mesh *mesh, const shs_module *m, uint32_t c,
		    uint32_t i, const shs_cand *cand, const shs_plan_chip *chip,
		    shs_cand_price *out)
{
	const shs_instr *in = m->comps[c]->instrs[i];

	*out = (shs_cand_price){ .compute_s = shs__cand_compute(cand, chip) };
	for (uint32_t k = 0; k < cand->n_colls; k++)
		out->comm_s += shs__coll_link_s(&cand->colls[k], mesh, chip);
	for (uint32_t k = 0; p && k < in->n_operands && k < cand->n_operands; k++) {
		const shs_instr *op = m->comps[c]->instrs[in->operands[k]];
		const shs_decision *d = &p->d[c][in->operands[k]];
		const shs_shape *leaves[SHS_MAX_VALUE_LEAVES];
		uint32_t n = shs_shape_leaf_list(&op->shape, leaves, SHS_MAX_VALUE_LEAVES);
		uint32_t first = cand->operand_first[k], have = cand->operand_first[k + 1] - first;
		for (uint32_t j = 0; j < n && j < have; j++) {
			shs_pspec rep;
			shs_spec_replicated(&rep, leaves[j]->rank);
			out->reshard_s += shs__reshard_cost(d->set && j < d->n_leaves ?
								    &d->leaves[j] : &rep,
							    &cand->operands[first + j], leaves[j],
							    mesh, chip, NULL);
		}
	}
	out->total_s = shs__cand_cost(cand, mesh, chip, 0, out->reshard_s, false);
}
