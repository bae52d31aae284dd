/* Achievable, not peak: the seconds an instruction's FLOPs take at the rate its chip sustains.
 *
 * A matmul runs at peak x matmul_eff (the catalog's measured fraction for large, aligned
 * shapes, e.g. the Maximum Achievable Matmul FLOPS sweeps) x the tile quantization of its
 * local shape: the matmul unit works on whole tiles, so a dimension of size n costs
 * ceil(n / tile) tiles. Which dimensions quantize depends on the unit: a TPU's MXU is a
 * weight-stationary systolic array of tile x tile holding a K x N block of the right operand
 * while rows of the left stream through (scaling-book.md 2.1: matmul dims as multiples of
 * 128, 256 on v6e), so K and N quantize; a GPU's tensor-core kernels compute tile x tile blocks
 * of the output (NVIDIA's Matrix Multiplication Background guide, "tile quantization"), so M
 * and N do. Other work runs at the peak (it is HBM-bound in all but name).
 *
 * And the seconds its HBM bytes take: streams (elementwise work, reductions, copies, a matmul's
 * operands and result) at hbm_bw x hbm_eff; a thin batched matmul (batch dims, and a local M,
 * N or K of one tile or less: attention's score matmuls, Q K^T over head_dim, P V and the
 * gradients into head_dim-wide outputs) at hbm_bw x bmm_hbm_eff where the chip's is measured:
 * such a kernel does a few tile steps per output tile and reaches about half the bandwidth of
 * a stream on GPUs (hardware_rates.c). */
#include <math.h>

#include "evaluate_internal.h"

/* Local size of dim j of operand k of instruction i under its requirement (or the operand's
 * own sharding when it states none). */
static double local_dim(const shs_plan *p, const shs_mesh *mesh, uint32_t c,
			const shs_computation *comp, uint32_t i, uint32_t k, int64_t j)
{
	const shs_decision *d = &p->d[c][i];
	const shs_instr *op = comp->instrs[comp->instrs[i]->operands[k]];
	const shs_decision *od = &p->d[c][comp->instrs[i]->operands[k]];
	const shs_pspec *s = NULL;
	double split = 1;

	if (j < 0 || (uint32_t)j >= op->shape.rank)
		return 1;
	if (d->set && d->n_req && d->req_first)
		s = &d->req[d->req_first[k]];
	else if (od->set && od->n_leaves)
		s = &od->leaves[0];
	if (s && (uint32_t)j < s->rank)
		for (uint32_t a = 0; a < s->dims[j].n; a++)
			if (s->dims[j].axes[a] < mesh->n_axes)
				split *= (double)mesh->sizes[s->dims[j].axes[a]];
	return ceil((double)op->shape.dims[j] / split);
}

static bool listed(const shs_i64s *l, int64_t j)
{
	for (uint32_t k = 0; k < l->n; k++)
		if (l->v[k] == j)
			return true;
	return false;
}

/* The product of the local dims of operand k that are (or are not) in `in`, batch dims left
 * out. */
static double dims_product(const shs_plan *p, const shs_mesh *mesh, uint32_t c,
			   const shs_computation *comp, uint32_t i, uint32_t k, const shs_i64s *in,
			   const shs_i64s *batch, bool inside)
{
	const shs_instr *op = comp->instrs[comp->instrs[i]->operands[k]];
	double n = 1;

	for (uint32_t j = 0; j < op->shape.rank; j++)
		if (!listed(batch, j) && listed(in, j) == inside)
			n *= local_dim(p, mesh, c, comp, i, k, j);
	return n;
}

/* n / (n rounded up to a whole number of tiles). */
static double quantized(double n, double tile)
{
	return tile > 1 && n > 0 ? n / (ceil(n / tile) * tile) : 1;
}

/* Whether instruction i is a dot, and if so its local M, N and K (batch dims left out). */
static bool local_mnk(const shs_plan *p, const shs_mesh *mesh, uint32_t c,
		      const shs_computation *comp, uint32_t i, double *m, double *n, double *k)
{
	const shs_instr *in = comp->instrs[i];
	const shs_dot_dims *dd = in->dot;

	if (in->op != SHS_OP_DOT || !dd || in->n_operands < 2)
		return false;
	*m = dims_product(p, mesh, c, comp, i, 0, &dd->lhs_contracting, &dd->lhs_batch, false);
	*k = dims_product(p, mesh, c, comp, i, 0, &dd->lhs_contracting, &dd->lhs_batch, true);
	*n = dims_product(p, mesh, c, comp, i, 1, &dd->rhs_contracting, &dd->rhs_batch, false);
	return true;
}

static double matmul_rate(const shs_hardware *hw, const shs_plan *p, const shs_mesh *mesh,
			  uint32_t c, const shs_computation *comp, uint32_t i)
{
	double eff = hw->matmul_eff > 0 && hw->matmul_eff <= 1 ? hw->matmul_eff : 1;
	double tile = (double)hw->matmul_tile, m, n, k;

	if (!local_mnk(p, mesh, c, comp, i, &m, &n, &k))
		return eff;
	if (hw->gpu)
		return eff * quantized(m, tile) * quantized(n, tile);
	return eff * quantized(k, tile) * quantized(n, tile);
}

/* Whether instruction i is a thin batched matmul on a chip of matmul tile `tile`: a dot with
 * batch dims whose local M, N or K is at most one tile. */
static bool thin_batched(const shs_plan *p, const shs_mesh *mesh, uint32_t c,
			 const shs_computation *comp, uint32_t i, double tile)
{
	const shs_dot_dims *dd = comp->instrs[i]->dot;
	double m, n, k;

	if (!dd || !dd->lhs_batch.n || tile <= 1 || !local_mnk(p, mesh, c, comp, i, &m, &n, &k))
		return false;
	return m <= tile || n <= tile || k <= tile;
}

double shs__hbm_seconds(const shs_hardware *hw, const shs_plan *p, const shs_mesh *mesh,
			const shs_module *m, uint32_t c, uint32_t i, double bytes)
{
	double eff = hw->bmm_hbm_eff, tile = (double)hw->matmul_tile;

	if (eff > 0 && eff <= 1 && thin_batched(p, mesh, c, m->comps[c], i, tile))
		return bytes / (hw->hbm_bw * eff);
	return bytes / shs_hw_hbm_rate(hw);
}

double shs__flop_seconds(const shs_hardware *hw, const shs_plan *p, const shs_mesh *mesh,
			 const shs_module *m, uint32_t c, uint32_t i)
{
	const shs_computation *comp = m->comps[c];
	double peak = hw->flops[SHS_HW_BF16], flops = p->d[c][i].flops, rate = 1;

	if (!(flops > 0) || !(peak > 0))
		return 0;
	if (comp->instrs[i]->op == SHS_OP_DOT || comp->instrs[i]->op == SHS_OP_CONVOLUTION)
		rate = matmul_rate(hw, p, mesh, c, comp, i);
	return flops / (peak * rate);
}

bool shs__own_overlapped(const shs_hardware *hw, bool matmul, const shs_coll *cl, double v)
{
	return matmul ? shs__collective_matmul(hw, v) : cl->overlappable;
}

bool shs__collective_matmul(const shs_hardware *hw, double bytes)
{
	return !(hw->windowed_einsum_bytes > 0) || bytes >= hw->windowed_einsum_bytes;
}
