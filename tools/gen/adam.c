/* AdamW with bias correction and global-norm gradient clipping, per parameter. */
#include "model_internal.h"

/* min(1, clip / ||grads||) over all gradients, as an f32 scalar. */
static shs_v clip_scale(shs_gen_ctx *x, const shs_v *grads, uint32_t n)
{
	shs_gb *g = &x->g;
	double clip = x->cfg->grad_clip;
	shs_v total = shs_gb_const(g, SHS_F32, 0.0), norm;

	shs_gb_push(g, "clip");
	for (uint32_t k = 0; k < n; k++) {
		shs_v gf = shs_gb_convert(g, grads[k], SHS_F32);
		shs_gdims all = { .n = shs_gb_dims(g, gf).n };
		for (uint32_t d = 0; d < all.n; d++)
			all.d[d] = d;
		total = shs_gb_add(g, total, shs_gb_sum(g, shs_gb_mul(g, gf, gf), all));
	}
	norm = shs_gb_unary(g, SHS_OP_SQRT, total);
	norm = shs_gb_binary(g, SHS_OP_MAXIMUM, norm, shs_gb_const(g, SHS_F32, clip));
	total = shs_gb_div(g, shs_gb_const(g, SHS_F32, clip), norm);
	shs_gb_pop(g);
	return total;
}

/* 1 - b^t in the parameter type. */
static shs_v bias_correction(shs_gen_ctx *x, double b, shs_v t)
{
	shs_gb *g = &x->g;
	shs_v bt = shs_gb_binary(g, SHS_OP_POWER, shs_gb_const(g, SHS_F32, b), t);

	return shs_gb_convert(g, shs_gb_sub(g, shs_gb_const(g, SHS_F32, 1.0), bt), x->wtype);
}

void shs_gen_adam_prepare(shs_gen_ctx *x, shs_v step, const shs_v *grads, uint32_t n,
			  shs_gen_adam *out)
{
	shs_gb *g = &x->g;
	shs_v t;

	shs_gb_push(g, "optimizer");
	t = shs_gb_convert(g, shs_gb_add(g, step, shs_gb_const(g, SHS_S32, 1)), SHS_F32);
	out->bc1 = bias_correction(x, x->cfg->adam_b1, t);
	out->bc2 = bias_correction(x, x->cfg->adam_b2, t);
	out->clipped = x->cfg->grad_clip > 0;
	out->clip = out->clipped ? shs_gb_convert(g, clip_scale(x, grads, n), x->wtype) : 0;
	shs_gb_pop(g);
}

/* b * m + (1 - b) * v */
static shs_v ema(shs_gb *g, shs_v m, shs_v v, double b)
{
	return shs_gb_add(g, shs_gb_scale(g, m, b), shs_gb_scale(g, v, 1.0 - b));
}

void shs_gen_adam_update(shs_gen_ctx *x, const shs_gen_adam *a, shs_v p, shs_v grad, shs_v mu,
			 shs_v nu, shs_v out[3])
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_gdims d = shs_gb_dims(g, p);
	shs_v gr = shs_gb_convert(g, grad, x->wtype), mhat, vhat, den, upd;

	if (a->clipped)
		gr = shs_gb_mul(g, gr, shs_gb_broadcast(g, a->clip, d, GD()));
	out[1] = ema(g, mu, gr, c->adam_b1);
	out[2] = ema(g, nu, shs_gb_mul(g, gr, gr), c->adam_b2);
	mhat = shs_gb_div(g, out[1], shs_gb_broadcast(g, a->bc1, d, GD()));
	vhat = shs_gb_div(g, out[2], shs_gb_broadcast(g, a->bc2, d, GD()));
	den = shs_gb_add(g, shs_gb_unary(g, SHS_OP_SQRT, vhat),
			 shs_gb_splat(g, x->wtype, c->adam_eps, d));
	upd = shs_gb_div(g, mhat, den);
	if (c->weight_decay > 0)
		upd = shs_gb_add(g, upd, shs_gb_scale(g, p, c->weight_decay));
	out[0] = shs_gb_sub(g, p, shs_gb_scale(g, upd, c->learning_rate));
}
