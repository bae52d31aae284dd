/* The MFU numerator: the model's FLOPs of a training step, from the module's matmuls and
 * attention kernels (no recomputation: remat is the evaluator's policy). */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate_internal.h"

enum {
	FLASH_FWD_OPERANDS = 3,  /* Q, K, V (the backward has six) */
	FORWARD_AND_BACKWARD = 3 /* the field's backward is twice the forward */
};

/* A flash attention kernel's forward (the custom_call strategy's "flash" candidates; the
 * forward takes Q, K and V): its FLOPs over the whole array, the kernel's own count (causal
 * masking halved) times the shards of its result; the field counts attention's backward as
 * twice its forward, so three times that. 0 for anything else. */
static double flash_flops(const shs_plan *p, const shs_mesh *mesh, uint32_t c, uint32_t i,
			  const shs_instr *in)
{
	const shs_decision *d = &p->d[c][i];
	double shards = 1;

	if (!d->set || strncmp(d->label, "flash", 5) || !d->n_leaves ||
	    in->n_operands != FLASH_FWD_OPERANDS)
		return 0;
	for (uint32_t k = 0; k < d->leaves[0].rank; k++)
		shards *= (double)shs_spec_dim_split(&d->leaves[0], k, mesh);
	return FORWARD_AND_BACKWARD * d->flops * shards;
}

/* A dot of attention (scores, context, and their gradients): batch dimensions (batch, heads)
 * and the sequence twice, a free dimension of one side as long as a free one of the other or as
 * the contraction (query against key positions). Weight matmuls and their gradients have no
 * batch dimensions; an expert's has one but no such pair unless its sizes happen to agree. */
static bool attention_dot(const shs_computation *c, const shs_instr *in)
{
	const shs_dot_dims *dd = in->dot;
	const shs_shape *side[2];
	int64_t contract = 0;

	if (!dd || !dd->lhs_batch.n || in->n_operands < 2 || !dd->lhs_contracting.n ||
	    in->operands[0] >= c->n_instrs || in->operands[1] >= c->n_instrs)
		return false;
	side[0] = &c->instrs[in->operands[0]]->shape;
	side[1] = &c->instrs[in->operands[1]]->shape;
	if (dd->lhs_contracting.v[0] >= 0 && (uint64_t)dd->lhs_contracting.v[0] < side[0]->rank)
		contract = side[0]->dims[dd->lhs_contracting.v[0]];
	for (uint32_t s = 0; s < 2; s++) {
		const shs_i64s *batch = s ? &dd->rhs_batch : &dd->lhs_batch;
		const shs_i64s *con = s ? &dd->rhs_contracting : &dd->lhs_contracting;
		for (uint32_t d = 0; d < side[s]->rank; d++) {
			int64_t n = side[s]->dims[d];
			bool free_dim = true;
			for (uint32_t k = 0; k < batch->n; k++)
				free_dim = free_dim && batch->v[k] != (int64_t)d;
			for (uint32_t k = 0; k < con->n; k++)
				free_dim = free_dim && con->v[k] != (int64_t)d;
			if (!free_dim || n <= 1)
				continue;
			if (n == contract)
				return true;
			for (uint32_t e = 0; s == 0 && e < side[1]->rank; e++) {
				bool other_free = true;
				for (uint32_t k = 0; k < dd->rhs_batch.n; k++)
					other_free = other_free && dd->rhs_batch.v[k] != (int64_t)e;
				for (uint32_t k = 0; k < dd->rhs_contracting.n; k++)
					other_free = other_free &&
						     dd->rhs_contracting.v[k] != (int64_t)e;
				if (other_free && side[1]->dims[e] == n)
					return true;
			}
		}
	}
	return false;
}

/* Devices that run instruction i of computation c on their own piece of the model: all of
 * them in a shard_map region (its shapes are one device's), a group over the manual axes in a
 * partly manual one (its shapes are one group's), else one (its shapes are the whole
 * model's). */
static double runs_per_device(const shs_plan *p, const shs_mesh *mesh, uint32_t c, uint32_t i)
{
	const shs_decision *d = &p->d[c][i];

	if (d->manual_axes)
		return (double)shs_mesh_group(mesh, d->manual_axes);
	if (!d->strategy || strcmp(d->strategy, "manual"))
		return 1;
	return (double)shs_mesh_group(mesh, (1u << mesh->n_axes) - 1);
}

double shs__model_flops(const shs_module *m, const shs_plan *p, const shs_mesh *mesh)
{
	double *done = calloc(m->n_comps + 1, sizeof(*done)), total = -1;

	if (!done)
		return -1;
	for (uint32_t k = 0; k < m->n_comps; k++) {
		const shs_computation *c = m->comps[k];
		for (uint32_t j = 0; j < c->n_instrs; j++) {
			const shs_instr *in = c->instrs[j];
			double best = 0, scale = 1;
			int64_t trips;
			if (in->op == SHS_OP_DOT) {
				done[k] += shs_dot_flops(c, in) * (attention_dot(c, in) ? 0.5 : 1) *
					   runs_per_device(p, mesh, k, j);
				continue;
			}
			if (in->op == SHS_OP_CUSTOM_CALL) {
				done[k] += flash_flops(p, mesh, k, j, in) *
					   runs_per_device(p, mesh, k, j);
				continue;
			}
			if (in->op != SHS_OP_WHILE && in->op != SHS_OP_CONDITIONAL &&
			    in->op != SHS_OP_CALL && in->op != SHS_OP_FUSION &&
			    in->op != SHS_OP_ASYNC_START)
				continue;
			if (in->op == SHS_OP_WHILE && shs_while_trip_count(m, c, in, &trips))
				scale = (double)trips;
			for (uint32_t b = 0; b < in->n_called && !(in->op == SHS_OP_WHILE && b > 0);
			     b++) {
				uint32_t callee = in->called[b];
				if (callee >= k)
					continue;   /* not verified: no recursion, no loop */
				if (in->op == SHS_OP_CONDITIONAL)
					best = done[callee] > best ? done[callee] : best;
				else
					done[k] += scale * done[callee];
			}
			done[k] += best;
		}
		if (c == shs_module_entry(m)) {
			total = done[k];
			break;
		}
	}
	free(done);
	return total;
}

