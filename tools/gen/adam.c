/* Adam with bias correction: first and second moments and the parameter update, per parameter. */
#include "model_internal.h"

void shs_gen_adam_prepare(shs_gen_ctx *x, shs_v step, shs_gen_adam *out)
{
	shs_gb *g = &x->g;
	shs_v t;

	shs_gb_push(g, "optimizer");
	t = shs_gb_convert(g, shs_gb_add(g, step, shs_gb_const(g, SHS_S32, 1)), SHS_F32);
	out->bc1 = shs_gb_sub(g, shs_gb_const(g, SHS_F32, 1.0),
			      shs_gb_binary(g, SHS_OP_POWER, shs_gb_const(g, SHS_F32, x->cfg->adam_b1), t));
	out->bc2 = shs_gb_sub(g, shs_gb_const(g, SHS_F32, 1.0),
			      shs_gb_binary(g, SHS_OP_POWER, shs_gb_const(g, SHS_F32, x->cfg->adam_b2), t));
	out->bc1 = shs_gb_convert(g, out->bc1, x->wtype);
	out->bc2 = shs_gb_convert(g, out->bc2, x->wtype);
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
	shs_v gr = shs_gb_convert(g, grad, x->wtype), mhat, vhat, den;

	out[1] = ema(g, mu, gr, c->adam_b1);
	out[2] = ema(g, nu, shs_gb_mul(g, gr, gr), c->adam_b2);
	mhat = shs_gb_div(g, out[1], shs_gb_broadcast(g, a->bc1, d, GD()));
	vhat = shs_gb_div(g, out[2], shs_gb_broadcast(g, a->bc2, d, GD()));
	den = shs_gb_add(g, shs_gb_unary(g, SHS_OP_SQRT, vhat),
			 shs_gb_splat(g, x->wtype, c->adam_eps, d));
	out[0] = shs_gb_sub(g, p, shs_gb_scale(g, shs_gb_div(g, mhat, den), c->learning_rate));
}
