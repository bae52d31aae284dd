/* Feed-forward layers: gated SwiGLU, plain (sigmoid-approximated gelu), and the book's linear MLP. */
#include "model_internal.h"

/* Coefficient of the sigmoid approximation of gelu: gelu(h) ~ h * logistic(1.702 h). */
static const double gelu_k = 1.702;

/* dot(a[..., X], w[X, Y]) -> [..., Y]. */
static shs_gen_dot by_last(shs_gb *g, shs_v a)
{
	return (shs_gen_dot){ .lhs_contract = GD(shs_gb_dims(g, a).n - 1), .rhs_contract = GD(0) };
}

static shs_v matmul(shs_gb *g, shs_v a, shs_v w, const char *name)
{
	shs_gen_dot spec = by_last(g, a);
	shs_v r;

	shs_gb_push(g, "%s", name);
	r = shs_gen_dot_fwd(g, a, w, &spec);
	shs_gb_pop(g);
	return r;
}

static shs_v matmul_bwd(shs_gb *g, shs_v a, shs_v w, shs_v dout, const char *name, shs_v *dw)
{
	shs_gen_dot spec = by_last(g, a);
	shs_v da;

	shs_gb_push(g, "%s", name);
	shs_gen_dot_bwd(g, a, w, &spec, dout, &da, "grad_input", dw, "grad");
	shs_gb_pop(g);
	return da;
}

uint32_t shs_gen_mlp_saved(const shs_gen_config *c)
{
	return c->kind == SHS_GEN_TRANSFORMER && c->gated_mlp ? 2 : 1;
}

static shs_v one(shs_gb *g, shs_v like)
{
	return shs_gb_splat(g, shs_gb_type(g, like), 1.0, shs_gb_dims(g, like));
}

/* The activation of the plain MLP and its derivative at h. */
static shs_v gelu(shs_gb *g, shs_v h, shs_v *deriv)
{
	shs_v s = shs_gb_unary(g, SHS_OP_LOGISTIC, shs_gb_scale(g, h, gelu_k));

	if (deriv) {
		shs_v ds = shs_gb_mul(g, s, shs_gb_sub(g, one(g, s), s));
		*deriv = shs_gb_add(g, s, shs_gb_mul(g, shs_gb_scale(g, h, gelu_k), ds));
	}
	return shs_gb_mul(g, h, s);
}

shs_v shs_gen_mlp_fwd(shs_gen_ctx *x, shs_v y, const shs_v *w, shs_v *saved)
{
	shs_gb *g = &x->g;
	shs_v gate, up, act;

	if (x->cfg->kind == SHS_GEN_MLP_ONLY) {
		saved[0] = matmul(g, y, w[0], "wi");
		return matmul(g, saved[0], w[1], "wo");
	}
	if (!x->cfg->gated_mlp) {
		saved[0] = matmul(g, y, w[0], "wi");
		return matmul(g, gelu(g, saved[0], NULL), w[1], "wo");
	}
	saved[0] = gate = matmul(g, y, w[0], "wi_0");
	saved[1] = up = matmul(g, y, w[1], "wi_1");
	shs_gb_push(g, "silu");
	act = shs_gen_swiglu(g, gate, up);
	shs_gb_pop(g);
	return matmul(g, act, w[2], "wo");
}

shs_v shs_gen_swiglu(shs_gb *g, shs_v gate, shs_v up)
{
	return shs_gb_mul(g, shs_gb_mul(g, gate, shs_gb_unary(g, SHS_OP_LOGISTIC, gate)), up);
}

/* d(act)/d(gate) = up * sig * (1 + gate * (1 - sig)); d(act)/d(up) = gate * sig. */
void shs_gen_swiglu_bwd(shs_gb *g, shs_v gate, shs_v up, shs_v dact, shs_v *dgate, shs_v *dup)
{
	shs_v sig = shs_gb_unary(g, SHS_OP_LOGISTIC, gate), dsilu;

	*dup = shs_gb_mul(g, dact, shs_gb_mul(g, gate, sig));
	dsilu = shs_gb_mul(g, sig, shs_gb_add(g, one(g, gate),
					     shs_gb_mul(g, gate, shs_gb_sub(g, one(g, sig), sig))));
	*dgate = shs_gb_mul(g, shs_gb_mul(g, dact, up), dsilu);
}

/* SwiGLU backward: act = gate * logistic(gate) * up. */
static shs_v gated_bwd(shs_gb *g, shs_v y, const shs_v *w, const shs_v *saved, shs_v dout,
		       shs_v *dw)
{
	shs_v gate = saved[0], up = saved[1], act, dact, dgate, dup, dy;

	shs_gb_push(g, "silu/grad");
	act = shs_gen_swiglu(g, gate, up);
	shs_gb_pop(g);
	dact = matmul_bwd(g, act, w[2], dout, "wo", &dw[2]);
	shs_gb_push(g, "silu/grad");
	shs_gen_swiglu_bwd(g, gate, up, dact, &dgate, &dup);
	shs_gb_pop(g);
	dy = matmul_bwd(g, y, w[0], dgate, "wi_0", &dw[0]);
	return shs_gb_add(g, dy, matmul_bwd(g, y, w[1], dup, "wi_1", &dw[1]));
}

shs_v shs_gen_mlp_bwd(shs_gen_ctx *x, shs_v y, const shs_v *w, const shs_v *saved, shs_v dout,
		      shs_v *dw)
{
	shs_gb *g = &x->g;
	shs_v dh, deriv, act;

	if (x->cfg->kind == SHS_GEN_MLP_ONLY) {
		dh = matmul_bwd(g, saved[0], w[1], dout, "wo", &dw[1]);
		return matmul_bwd(g, y, w[0], dh, "wi", &dw[0]);
	}
	if (x->cfg->gated_mlp)
		return gated_bwd(g, y, w, saved, dout, dw);
	shs_gb_push(g, "gelu/grad");
	act = gelu(g, saved[0], &deriv);
	shs_gb_pop(g);
	dh = shs_gb_mul(g, matmul_bwd(g, act, w[1], dout, "wo", &dw[1]), deriv);
	return matmul_bwd(g, y, w[0], dh, "wi", &dw[0]);
}
