/* The costs propagation compares: a roofline on one chip and ring collectives on its links. */
#include <string.h>

#include "propagate_internal.h"

/* The chip is the request's (the cost model's hardware). Propagation only compares candidates:
 * one link speed serves every mesh axis; the evaluator knows each axis's links. */
static const double HIDDEN_LINK_SHARE = 0.1; /* of hidden transfer seconds, counted anyway */

static int64_t axes_size(uint32_t mask, const shs_mesh *mesh)
{
	int64_t n = 1;

	for (uint32_t a = 0; a < mesh->n_axes; a++)
		if (mask & (1u << a))
			n *= mesh->sizes[a];
	return n;
}

/* Whether each dim of from keeps its axes as a prefix of the same dim of to. */
static bool kept_in_order(const shs_pspec *from, const shs_pspec *to)
{
	for (uint32_t d = 0; d < from->rank; d++) {
		const shs_pdim *f = &from->dims[d], *t = &to->dims[d];
		if (f->n > t->n || memcmp(f->axes, t->axes, f->n))
			return false;
	}
	return true;
}

double shs__reshard_cost(const shs_pspec *from, const shs_pspec *to, const shs_shape *a,
			 const shs_mesh *mesh, const shs_plan_chip *chip, double *moved_s)
{
	double local, moved = 0;
	int64_t gathered = 1;

	if (moved_s)
		*moved_s = 0;
	if (shs_spec_equal(from, to))
		return 0;
	local = shs_spec_local_bytes(from, a, mesh);
	for (uint32_t ax = 0; ax < mesh->n_axes; ax++) {
		int df = shs_spec_dim_of(from, ax), dt = shs_spec_dim_of(to, ax);
		if (df < 0 || df == dt)
			continue;
		if (dt < 0)
			gathered *= mesh->sizes[ax];
		else
			moved += local * (double)(mesh->sizes[ax] - 1) / (double)mesh->sizes[ax];
	}
	/* axes kept on their dim but in another order (not a prefix: not a mere slice) mean a
	 * permutation of the whole piece */
	if (gathered == 1 && moved == 0 && !kept_in_order(from, to))
		moved = local;
	if (moved_s)
		*moved_s = moved / chip->link_bw;
	return (moved + local * (double)(gathered - 1)) / chip->link_bw;
}

bool shs__decomposed(const shs_plan_chip *chip, double bytes)
{
	return !(chip->windowed_einsum_bytes > 0) || bytes >= chip->windowed_einsum_bytes;
}

double shs__gathered_bytes(const shs_pspec *from, const shs_pspec *to, const shs_shape *a,
			   const shs_mesh *mesh)
{
	double whole = shs_spec_local_bytes(from, a, mesh);

	for (uint32_t ax = 0; ax < mesh->n_axes; ax++)
		if (shs_spec_dim_of(from, ax) >= 0 && shs_spec_dim_of(to, ax) < 0)
			whole *= (double)mesh->sizes[ax];
	return whole;
}

double shs__user_reshard_cost(const shs_pspec *from, const shs_pspec *to, const shs_shape *a,
			      const shs_mesh *mesh, const shs_plan_chip *chip, bool hidden)
{
	double moved, t = shs__reshard_cost(from, to, a, mesh, chip, &moved);

	return hidden ? HIDDEN_LINK_SHARE * (t - moved) + moved : t;
}

/* Whether an overlappable collective runs beside its instruction: a ring's sends always; a
 * matmul's reduction (a "cm" candidate) only where the runtime decomposes it under the matmul
 * (shs__decomposed). */
static bool under_matmul(const shs_coll *coll, const shs_plan_chip *chip)
{
	return coll->kind == SHS_PCOLL_PERMUTE || shs__decomposed(chip, coll->bytes);
}

double shs__cand_compute(const shs_cand *c, const shs_plan_chip *chip)
{
	return c->flops / chip->flops + c->bytes / chip->hbm_bw;
}

double shs__coll_link_s(const shs_coll *coll, const shs_mesh *mesh, const shs_plan_chip *chip)
{
	double n = (double)axes_size(coll->axes_mask, mesh), t;

	switch (coll->kind) {
	case SHS_PCOLL_ALL_REDUCE: t = 2 * coll->bytes * (n - 1) / n; break;
	case SHS_PCOLL_ALL_GATHER: t = coll->bytes * (n - 1); break;
	case SHS_PCOLL_PERMUTE: /* an overlappable one is a ring: n - 1 sends */
		t = coll->bytes * (coll->overlappable && n > 1 ? n - 1 : 1);
		break;
	default: t = coll->bytes * (n - 1) / n; break;
	}
	return t / chip->link_bw;
}

double shs__cand_cost(const shs_cand *c, const shs_mesh *mesh, const shs_plan_chip *chip,
		      double hidden, double exposed, bool off_path)
{
	double compute = shs__cand_compute(c, chip), ring_tail = 0, off = 0;

	for (uint32_t k = 0; k < c->n_colls; k++) {
		const shs_coll *coll = &c->colls[k];
		double n = (double)axes_size(coll->axes_mask, mesh), t;
		/* a ring's last block of work runs after its last send */
		if (coll->kind == SHS_PCOLL_PERMUTE && coll->overlappable && n > 1)
			ring_tail = compute / n;
		t = shs__coll_link_s(coll, mesh, chip);
		/* a data-parallel gradient's all-reduce, made in the layer instead of gathered
		 * at the update: the same traffic, moved where the backward pass hides it. Not
		 * reduce-scatters: counted off the path too, they let FSDP's gradient dots pull
		 * their saved inputs into layouts that cost more elsewhere (Mixtral, 2 layers
		 * on fsdp=64: 18.3 ms a step evaluated, against 11.6 ms) */
		if (off_path && coll->kind == SHS_PCOLL_ALL_REDUCE)
			off += t;
		else if (coll->overlappable && under_matmul(coll, chip))
			hidden += t;
		else
			exposed += t;
	}
	hidden += hidden > 0 ? ring_tail : 0;
	/* a hidden transfer costs no time here but holds links that other transfers need: of
	 * candidates that take equally long, the one that moves less wins; one off the path
	 * runs beside the work after it, not only this one's */
	return (compute > hidden ? compute : hidden) + HIDDEN_LINK_SHARE * (hidden + off) +
	       exposed;
}
