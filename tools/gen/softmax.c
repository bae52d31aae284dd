/* Softmax over one dim and its backward pass, in the input's (float) type. */
#include "model_internal.h"

shs_v shs_gen_softmax(shs_gb *g, shs_v s, int64_t dim)
{
	shs_gdims d = shs_gb_dims(g, s), at = GD(dim);
	shs_v e = shs_gb_unary(g, SHS_OP_EXP,
			       shs_gb_sub(g, s, shs_gb_expand(g, shs_gb_max(g, s, at), d, at)));

	return shs_gb_div(g, e, shs_gb_expand(g, shs_gb_sum(g, e, at), d, at));
}

shs_v shs_gen_softmax_bwd(shs_gb *g, shs_v p, shs_v dp, int64_t dim)
{
	shs_gdims d = shs_gb_dims(g, p), at = GD(dim);
	shs_v t = shs_gb_sum(g, shs_gb_mul(g, dp, p), at);

	return shs_gb_mul(g, p, shs_gb_sub(g, dp, shs_gb_expand(g, t, d, at)));
}
