/* Mixture-of-experts feed-forward, GShard style: router, top-k dispatch/combine einsums, experts,
 * and (DeepSeekMoE) shared experts every token goes through, as one dense MLP beside them. */
#include "model_internal.h"

enum { W_GATE, W_WI0, W_WI1, W_WO, W_SHARED };
enum { S_LOGITS, S_DISPATCH, S_COMBINE, S_XE, S_H0, S_H1, S_OUT, N_SAVED };

/* Router logits = dot(y[B,T,D], gate[D,E]) -> [B,T,E]. */
static const shs_gen_dot router = { .lhs_contract = { 1, { 2 } }, .rhs_contract = { 1, { 0 } } };
/* Expert inputs = dot(dispatch[B,T,E,C], y[B,T,D]) -> [B,E,C,D]. */
static const shs_gen_dot gather_in = { { 1, { 0 } }, { 1, { 0 } }, { 1, { 1 } }, { 1, { 1 } } };
/* Expert matmuls = dot(a[E,B,C,X], w[E,X,Y]) -> [E,B,C,Y]. */
static const shs_gen_dot expert = { { 1, { 0 } }, { 1, { 0 } }, { 1, { 3 } }, { 1, { 1 } } };
/* Output = dot(combine[B,T,E,C], out[E,B,C,D]) -> [B,T,D]. */
static const shs_gen_dot scatter_out = { { 1, { 0 } }, { 1, { 1 } }, { 2, { 2, 3 } },
					 { 2, { 0, 2 } } };
/* Running count over tokens = dot(tri[T,S], mask[B,S,E]) -> [T,B,E], as cumsum on TPUs. */
static const shs_gen_dot cumsum = { .lhs_contract = { 1, { 1 } }, .rhs_contract = { 1, { 1 } } };

uint32_t shs_gen_moe_saved(const shs_gen_config *c)
{
	return N_SAVED + (c->shared_experts ? shs_gen_mlp_saved(c) : 0);
}

static shs_v dot_named(shs_gb *g, const char *name, shs_v a, shs_v b, const shs_gen_dot *spec)
{
	shs_v r;

	shs_gb_push(g, "%s", name);
	r = shs_gen_dot_fwd(g, a, b, spec);
	shs_gb_pop(g);
	return r;
}

/* f32[B,T,E]: 1 where expert e is among the top_k router probabilities of token (b, t). */
static shs_v top_k_mask(shs_gen_ctx *x, shs_v probs)
{
	shs_gb *g = &x->g;
	shs_gdims d = shs_gb_dims(g, probs), at = GD(2);
	shs_v cur = probs, mask = shs_gb_splat(g, SHS_F32, 0.0, d), pick;

	for (int64_t k = 0; k < x->cfg->top_k; k++) {
		pick = shs_gb_compare(g, cur, shs_gb_expand(g, shs_gb_max(g, cur, at), d, at), "EQ");
		mask = shs_gb_add(g, mask, shs_gb_convert(g, pick, SHS_F32));
		cur = shs_gb_select(g, pick, shs_gb_splat(g, SHS_F32, -1.0, d), cur);
	}
	return mask;
}

/* pred[B,T,E,C]: token (b, t) goes to slot c of expert e (its running count, under capacity). */
static shs_v slots(shs_gen_ctx *x, shs_v mask)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_gdims ts = GD(c->seq, c->seq), d4 = GD(c->batch, c->seq, c->experts, x->capacity);
	shs_v tri = shs_gb_convert(g, shs_gb_compare(g, shs_gb_iota(g, SHS_S32, ts, 0),
						     shs_gb_iota(g, SHS_S32, ts, 1), "GE"), SHS_F32);
	shs_v pos = shs_gb_transpose(g, dot_named(g, "position", tri, mask, &cumsum), GD(1, 0, 2));
	shs_v at, picked;

	pos = shs_gb_sub(g, pos, shs_gb_splat(g, SHS_F32, 1.0, shs_gb_dims(g, pos)));
	at = shs_gb_compare(g, shs_gb_broadcast(g, pos, d4, GD(0, 1, 2)),
			    shs_gb_iota(g, SHS_F32, d4, 3), "EQ");
	picked = shs_gb_compare(g, shs_gb_broadcast(g, mask, d4, GD(0, 1, 2)),
				shs_gb_splat(g, SHS_F32, 0.0, d4), "GT");
	return shs_gb_and(g, at, picked);
}

shs_v shs_gen_moe_fwd(shs_gen_ctx *x, shs_v y, const shs_v *w, shs_v *saved)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_gdims d4 = GD(c->batch, c->seq, c->experts, x->capacity);
	shs_v probs, slot, gates, act;

	saved[S_LOGITS] = dot_named(g, "gate", y, w[W_GATE], &router);
	shs_gb_push(g, "router");
	probs = shs_gen_softmax(g, shs_gb_convert(g, saved[S_LOGITS], SHS_F32), 2);
	slot = slots(x, top_k_mask(x, probs));
	saved[S_DISPATCH] = shs_gb_convert(g, slot, x->ctype);
	gates = shs_gb_broadcast(g, shs_gb_convert(g, probs, x->ctype), d4, GD(0, 1, 2));
	saved[S_COMBINE] = shs_gb_mul(g, saved[S_DISPATCH], gates);
	shs_gb_pop(g);
	saved[S_XE] = shs_gb_transpose(g, dot_named(g, "dispatch", saved[S_DISPATCH], y, &gather_in),
				       GD(1, 0, 2, 3));
	saved[S_H0] = dot_named(g, "wi_0", saved[S_XE], w[W_WI0], &expert);
	saved[S_H1] = dot_named(g, "wi_1", saved[S_XE], w[W_WI1], &expert);
	shs_gb_push(g, "silu");
	act = shs_gen_swiglu(g, saved[S_H0], saved[S_H1]);
	shs_gb_pop(g);
	saved[S_OUT] = dot_named(g, "wo", act, w[W_WO], &expert);
	act = dot_named(g, "combine", saved[S_COMBINE], saved[S_OUT], &scatter_out);
	if (!c->shared_experts)
		return act;
	shs_gb_push(g, "shared");
	act = shs_gb_add(g, act, shs_gen_mlp_fwd(x, y, w + W_SHARED, saved + N_SAVED));
	shs_gb_pop(g);
	return act;
}

/* d(router logits) from d(combine): gates are the router probabilities where dispatched. */
static shs_v router_bwd(shs_gen_ctx *x, const shs_v *saved, shs_v dcombine)
{
	shs_gb *g = &x->g;
	shs_v disp = shs_gb_convert(g, saved[S_DISPATCH], SHS_F32);
	shs_v probs = shs_gen_softmax(g, shs_gb_convert(g, saved[S_LOGITS], SHS_F32), 2);
	shs_v dgates = shs_gb_sum(g, shs_gb_mul(g, shs_gb_convert(g, dcombine, SHS_F32), disp), GD(3));

	return shs_gb_convert(g, shs_gen_softmax_bwd(g, probs, dgates, 2), x->ctype);
}

static shs_v dot_grads(shs_gb *g, const char *name, shs_v a, shs_v b, const shs_gen_dot *spec,
		       shs_v dout, shs_v *db)
{
	shs_v da;

	shs_gb_push(g, "%s", name);
	shs_gen_dot_bwd(g, a, b, spec, dout, &da, "grad_input", db, "grad");
	shs_gb_pop(g);
	return da;
}

shs_v shs_gen_moe_bwd(shs_gen_ctx *x, shs_v y, const shs_v *w, const shs_v *saved, shs_v dout,
		      shs_v *dw)
{
	shs_gb *g = &x->g;
	shs_v dcombine, dout_e, act, dact, dh0, dh1, dxe, dy, dlogits;

	shs_gb_push(g, "combine");
	shs_gen_dot_bwd(g, saved[S_COMBINE], saved[S_OUT], &scatter_out, dout, &dcombine,
			"grad_gates", &dout_e, "grad_input");
	shs_gb_pop(g);
	shs_gb_push(g, "silu/grad");
	act = shs_gen_swiglu(g, saved[S_H0], saved[S_H1]);
	shs_gb_pop(g);
	dact = dot_grads(g, "wo", act, w[W_WO], &expert, dout_e, &dw[W_WO]);
	shs_gb_push(g, "silu/grad");
	shs_gen_swiglu_bwd(g, saved[S_H0], saved[S_H1], dact, &dh0, &dh1);
	shs_gb_pop(g);
	dxe = shs_gb_add(g, dot_grads(g, "wi_0", saved[S_XE], w[W_WI0], &expert, dh0, &dw[W_WI0]),
			 dot_grads(g, "wi_1", saved[S_XE], w[W_WI1], &expert, dh1, &dw[W_WI1]));
	shs_gb_push(g, "dispatch");
	shs_gen_dot_bwd(g, saved[S_DISPATCH], y, &gather_in, shs_gb_transpose(g, dxe, GD(1, 0, 2, 3)),
			NULL, NULL, &dy, "grad_input");
	shs_gb_pop(g);
	shs_gb_push(g, "router/grad");
	dlogits = router_bwd(x, saved, dcombine);
	shs_gb_pop(g);
	dy = shs_gb_add(g, dy, dot_grads(g, "gate", y, w[W_GATE], &router, dlogits, &dw[W_GATE]));
	if (!x->cfg->shared_experts)
		return dy;
	shs_gb_push(g, "shared");
	dy = shs_gb_add(g, dy, shs_gen_mlp_bwd(x, y, w + W_SHARED, saved + N_SAVED, dout,
					       dw + W_SHARED));
	shs_gb_pop(g);
	return dy;
}
