/* Fusion: which values never reach HBM because the compiler fuses them into their consumer.
 *
 * XLA fuses chains of elementwise work: a value made by an elementwise instruction, a
 * broadcast, an iota or a constant, read by exactly one instruction that is itself elementwise,
 * a broadcast or a reduce, stays in registers. Such a value is not written, and its reader does
 * not read it; the HBM bytes of both shrink accordingly. Matmuls, collectives, data movement and
 * control flow are not fused. */
#include <stdlib.h>
#include <string.h>

#include "evaluate_internal.h"

static bool producer(shs_opcode op)
{
	return shs_opcode_is_elementwise(op) || op == SHS_OP_BROADCAST || op == SHS_OP_IOTA ||
	       op == SHS_OP_CONSTANT;
}

static bool consumer(shs_opcode op)
{
	return shs_opcode_is_elementwise(op) || op == SHS_OP_BROADCAST || op == SHS_OP_REDUCE;
}

int shs__fusion_make(const shs_module *m, bool ***out, shs_err *e)
{
	bool **fused = calloc(m->n_comps + 1, sizeof(*fused));
	int rc = SHS_OK;

	for (uint32_t c = 0; fused && c < m->n_comps && rc == SHS_OK; c++) {
		const shs_computation *comp = m->comps[c];
		uint32_t *users = calloc(comp->n_instrs + 1, sizeof(*users));
		uint32_t *only = calloc(comp->n_instrs + 1, sizeof(*only));
		fused[c] = calloc(comp->n_instrs + 1, sizeof(bool));
		if (!users || !only || !fused[c]) {
			rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
		} else {
			for (uint32_t i = 0; i < comp->n_instrs; i++)
				for (uint32_t k = 0; k < comp->instrs[i]->n_operands; k++) {
					users[comp->instrs[i]->operands[k]]++;
					only[comp->instrs[i]->operands[k]] = i;
				}
			for (uint32_t i = 0; i < comp->n_instrs; i++)
				fused[c][i] = i != comp->root && users[i] == 1 &&
					      producer(comp->instrs[i]->op) &&
					      comp->instrs[i]->shape.type != SHS_TUPLE &&
					      consumer(comp->instrs[only[i]]->op);
		}
		free(users);
		free(only);
	}
	if (!fused)
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	if (rc != SHS_OK) {
		shs__fusion_free(m, fused);
		fused = NULL;
	}
	*out = fused;
	return rc;
}

void shs__fusion_free(const shs_module *m, bool **fused)
{
	for (uint32_t c = 0; fused && c < m->n_comps; c++)
		free(fused[c]);
	free(fused);
}

static double value_bytes(const shs_computation *comp, const shs_decision *dec, uint32_t v,
			  const shs_mesh *mesh)
{
	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	uint32_t n = shs_shape_leaf_list(&comp->instrs[v]->shape, shapes, SHS_MAX_VALUE_LEAVES);
	double b = 0;

	for (uint32_t j = 0; j < n; j++) {
		shs_pspec rep;
		shs_spec_replicated(&rep, shapes[j]->rank);
		b += shs_spec_local_bytes(dec->set && j < dec->n_leaves ? &dec->leaves[j] : &rep,
					  shapes[j], mesh);
	}
	return b;
}

double shs__fused_bytes(const shs_module *m, const shs_plan *p, bool *const *fused,
			const shs_mesh *mesh, uint32_t c, uint32_t i)
{
	const shs_computation *comp = m->comps[c];
	const shs_instr *in = comp->instrs[i];
	double b = p->d[c][i].bytes;

	if (!fused)
		return b;
	if (fused[c][i])
		b -= value_bytes(comp, &p->d[c][i], i, mesh);
	for (uint32_t k = 0; k < in->n_operands; k++)
		if (fused[c][in->operands[k]])
			b -= value_bytes(comp, &p->d[c][in->operands[k]], in->operands[k], mesh);
	return b > 0 ? b : 0;
}
