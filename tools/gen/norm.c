/* RMSNorm and its backward pass, in f32 between bf16 activations as JAX computes them. */
#include "model_internal.h"

/* [.., D] -> the index of the last dim, as a one-element dims list. */
static shs_gdims last_dim(shs_gdims d)
{
	return GD(d.n - 1);
}

/* r = rsqrt(mean(xf^2, last) + eps), shape without the last dim. */
static shs_v inv_rms(shs_gen_ctx *x, shs_v xf)
{
	shs_gb *g = &x->g;
	shs_gdims d = shs_gb_dims(g, xf);
	shs_v ms;

	if (g->rc != SHS_OK || !d.n)
		return 0;
	ms = shs_gb_scale(g, shs_gb_sum(g, shs_gb_mul(g, xf, xf), last_dim(d)),
			  1.0 / (double)d.d[d.n - 1]);
	return shs_gb_unary(g, SHS_OP_RSQRT,
			    shs_gb_add(g, ms, shs_gb_splat(g, SHS_F32, x->cfg->norm_eps,
							   shs_gb_dims(g, ms))));
}

static shs_v scale_bcast(shs_gb *g, shs_v scale, shs_gdims d)
{
	return shs_gb_broadcast(g, shs_gb_convert(g, scale, SHS_F32), d, GD(d.n - 1));
}

shs_v shs_gen_rms_fwd(shs_gen_ctx *x, shs_v in, shs_v scale)
{
	shs_gb *g = &x->g;
	shs_v xf = shs_gb_convert(g, in, SHS_F32), xn;
	shs_gdims d = shs_gb_dims(g, xf);

	if (g->rc != SHS_OK || !d.n)
		return 0;
	xn = shs_gb_mul(g, xf, shs_gb_expand(g, inv_rms(x, xf), d, last_dim(d)));

	return shs_gb_convert(g, shs_gb_mul(g, xn, scale_bcast(g, scale, d)), x->ctype);
}

/* With u = dy * scale: dx = r * u - x * r^3 * sum(u * x) / D; dscale = sum(dy * x * r). */
shs_v shs_gen_rms_bwd(shs_gen_ctx *x, shs_v in, shs_v scale, shs_v dy, shs_v *dscale)
{
	shs_gb *g = &x->g;
	shs_v xf = shs_gb_convert(g, in, SHS_F32), dyf = shs_gb_convert(g, dy, SHS_F32);
	shs_gdims d = shs_gb_dims(g, xf), outer = { .n = d.n ? d.n - 1 : 0 };
	shs_v r, rb, u, t, r3, c, dx;

	if (g->rc != SHS_OK || !d.n)
		return 0;
	r = inv_rms(x, xf);
	rb = shs_gb_expand(g, r, d, last_dim(d));
	u = shs_gb_mul(g, dyf, scale_bcast(g, scale, d));
	t = shs_gb_sum(g, shs_gb_mul(g, u, xf), last_dim(d));
	r3 = shs_gb_mul(g, shs_gb_mul(g, r, r), r);
	c = shs_gb_scale(g, shs_gb_mul(g, t, r3), 1.0 / (double)d.d[d.n - 1]);
	dx = shs_gb_sub(g, shs_gb_mul(g, u, rb),
			shs_gb_mul(g, xf, shs_gb_expand(g, c, d, last_dim(d))));
	for (uint32_t k = 0; k < outer.n; k++)
		outer.d[k] = k;
	*dscale = shs_gb_sum(g, shs_gb_mul(g, dyf, shs_gb_mul(g, xf, rb)), outer);
	return shs_gb_convert(g, dx, x->ctype);
}
