/* Dots and their two transposed gradient dots, the heart of every backward pass. */
#include "model_internal.h"

shs_v shs_gen_dot_fwd(shs_gb *g, shs_v lhs, shs_v rhs, const shs_gen_dot *spec)
{
	return shs_gb_dot(g, lhs, rhs, spec->lhs_batch, spec->rhs_batch, spec->lhs_contract,
			  spec->rhs_contract);
}

static bool has(shs_gdims d, int64_t x)
{
	for (uint32_t k = 0; k < d.n; k++)
		if (d.d[k] == x)
			return true;
	return false;
}

/* The dims of an operand of rank n that are neither batch nor contracting, in order. */
static shs_gdims free_of(uint32_t n, shs_gdims batch, shs_gdims contract)
{
	shs_gdims out = { 0 };

	for (uint32_t k = 0; k < n; k++)
		if (!has(batch, k) && !has(contract, k))
			out.d[out.n++] = k;
	return out;
}

/* The contracting dims of one side in increasing order, and for each the paired dim of the
 * other side. */
static void sorted_pairs(shs_gdims mine, shs_gdims theirs, shs_gdims *mine_sorted,
			 shs_gdims *theirs_paired)
{
	*mine_sorted = (shs_gdims){ 0 };
	*theirs_paired = (shs_gdims){ 0 };
	for (int64_t k = 0; k < SHS_GB_MAX_RANK; k++)
		for (uint32_t j = 0; j < mine.n; j++)
			if (mine.d[j] == k) {
				mine_sorted->d[mine_sorted->n++] = k;
				theirs_paired->d[theirs_paired->n++] = theirs.d[j];
			}
}

/* Transposes r, whose dim j holds the operand's dim target[j], into the operand's order. */
static shs_v to_operand_order(shs_gb *g, shs_v r, shs_gdims target)
{
	shs_gdims perm = { .n = target.n };

	for (uint32_t j = 0; j < target.n; j++)
		perm.d[target.d[j]] = j;
	return shs_gb_transpose(g, r, perm);
}

static shs_gdims iota_from(int64_t start, uint32_t n)
{
	shs_gdims d = { .n = n };

	for (uint32_t k = 0; k < n; k++)
		d.d[k] = start + k;
	return d;
}

static shs_gdims concat3(shs_gdims a, shs_gdims b, shs_gdims c)
{
	shs_gdims out = a;

	for (uint32_t k = 0; k < b.n; k++)
		out.d[out.n++] = b.d[k];
	for (uint32_t k = 0; k < c.n; k++)
		out.d[out.n++] = c.d[k];
	return out;
}

void shs_gen_dot_bwd(shs_gb *g, shs_v lhs, shs_v rhs, const shs_gen_dot *s, shs_v dout,
		     shs_v *dlhs, const char *lhs_role, shs_v *drhs, const char *rhs_role)
{
	uint32_t nb = s->lhs_batch.n;
	shs_gdims lf = free_of(shs_gb_dims(g, lhs).n, s->lhs_batch, s->lhs_contract);
	shs_gdims rf = free_of(shs_gb_dims(g, rhs).n, s->rhs_batch, s->rhs_contract);
	shs_gdims lc_sorted, rc_paired, rc_sorted, lc_paired;
	shs_v r;

	sorted_pairs(s->rhs_contract, s->lhs_contract, &rc_sorted, &lc_paired);
	sorted_pairs(s->lhs_contract, s->rhs_contract, &lc_sorted, &rc_paired);
	if (dlhs) {
		/* dot(dout, rhs) over rhs's free dims: [batch, lhs free, rhs contracting]. */
		shs_gb_push(g, "%s", lhs_role);
		r = shs_gb_dot(g, dout, rhs, iota_from(0, nb), s->rhs_batch,
			       iota_from(nb + lf.n, rf.n), rf);
		*dlhs = to_operand_order(g, r, concat3(s->lhs_batch, lf, lc_paired));
		shs_gb_pop(g);
	}
	if (drhs) {
		/* dot(lhs, dout) over lhs's free dims: [batch, lhs contracting, rhs free]. */
		shs_gb_push(g, "%s", rhs_role);
		r = shs_gb_dot(g, lhs, dout, s->lhs_batch, iota_from(0, nb), lf,
			       iota_from(nb, lf.n));
		*drhs = to_operand_order(g, r, concat3(s->rhs_batch, rc_paired, rf));
		shs_gb_pop(g);
	}
}
