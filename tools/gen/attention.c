/* Grouped-query causal self-attention: projections, scores, softmax (or the flash kernel),
 * dropout of the probabilities (with a dropout rate), context, output, and the backward pass. */
#include <float.h>
#include <math.h>

#include "model_internal.h"

enum { W_Q, W_K, W_V, W_O };
enum { S_Q, S_K, S_V, S_P, S_CTX };
enum { D_MASK, D_PROBS }; /* the probabilities' dropout mask and what it kept */
enum { SEED_PROBS = 1 };

/* MaxText's mask value: a large negative that keeps softmax finite. */
static const double mask_value = -0.7 * FLT_MAX;

/* q/k/v = dot(y[B,T,D], w[D,heads,H]) -> [B,T,heads,H]. */
static const shs_gen_dot proj = { .lhs_contract = { 1, { 2 } }, .rhs_contract = { 1, { 0 } } };
/* scores = dot(q[B,T,K,G,H], k[B,S,K,H]) -> [B,K,T,G,S]. */
static const shs_gen_dot qk = { { 2, { 0, 2 } }, { 2, { 0, 2 } }, { 1, { 4 } }, { 1, { 3 } } };
/* ctx = dot(p[B,K,T,G,S], v[B,S,K,H]) -> [B,K,T,G,H]. */
static const shs_gen_dot pv = { { 2, { 0, 1 } }, { 2, { 0, 2 } }, { 1, { 4 } }, { 1, { 1 } } };
/* out = dot(ctx[B,T,N,H], wo[N,H,D]) -> [B,T,D]. */
static const shs_gen_dot outp = { .lhs_contract = { 2, { 2, 3 } },
				  .rhs_contract = { 2, { 0, 1 } } };

static shs_gdims scores_dims(const shs_gen_config *c)
{
	int64_t groups = c->heads / c->kv_heads;

	return GD(c->batch, c->kv_heads, c->seq, groups, c->seq);
}

/* pred[B,K,T,G,S]: key position s <= query position t. */
static shs_v causal_mask(shs_gb *g, const shs_gen_config *c)
{
	shs_gdims ts = GD(c->seq, c->seq);
	shs_v t = shs_gb_iota(g, SHS_S32, ts, 0), s = shs_gb_iota(g, SHS_S32, ts, 1);

	return shs_gb_broadcast(g, shs_gb_compare(g, t, s, "GE"), scores_dims(c), GD(2, 4));
}

static shs_v project(shs_gb *g, shs_v y, shs_v w, const char *name)
{
	shs_v r;

	shs_gb_push(g, "%s", name);
	r = shs_gen_dot_fwd(g, y, w, &proj);
	shs_gb_pop(g);
	return r;
}

uint32_t shs_gen_attn_drop_saved(const shs_gen_config *c)
{
	return c->dropout > 0 && c->attention == SHS_GEN_ATTN_DOT ? 2 : 0;
}

shs_v shs_gen_attn_fwd(shs_gen_ctx *x, shs_v y, const shs_v *w, shs_v *saved, shs_v *drop)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_gdims sd = scores_dims(c);
	shs_v q, s, p, ctx, out;

	saved[S_Q] = q = project(g, y, w[W_Q], "query");
	saved[S_K] = project(g, y, w[W_K], "key");
	saved[S_V] = project(g, y, w[W_V], "value");
	shs_gb_push(g, "attention");
	if (c->attention == SHS_GEN_ATTN_FLASH) {
		/* saved: Q, K, V, the softmax statistics (in S_P's place) and O */
		saved[S_CTX] = ctx = shs_gen_flash_fwd(x, saved + S_Q, &saved[S_P]);
		shs_gb_pop(g);
		shs_gb_push(g, "out");
		out = shs_gen_dot_fwd(g, ctx, w[W_O], &outp);
		shs_gb_pop(g);
		return out;
	}
	q = shs_gb_reshape(g, q, GD(c->batch, c->seq, c->kv_heads, sd.d[3], c->head_dim));
	s = shs_gb_convert(g, shs_gen_dot_fwd(g, q, saved[S_K], &qk), SHS_F32);
	s = shs_gb_scale(g, s, 1.0 / sqrt((double)c->head_dim));
	s = shs_gb_select(g, causal_mask(g, c), s, shs_gb_splat(g, SHS_F32, mask_value, sd));
	saved[S_P] = p = shs_gb_convert(g, shs_gen_softmax(g, s, 4), x->ctype);
	if (shs_gen_attn_drop_saved(c)) {
		drop[D_MASK] = shs_gen_dropout_mask(x, sd, SEED_PROBS);
		drop[D_PROBS] = p = shs_gen_dropout_apply(x, p, drop[D_MASK]);
	}
	ctx = shs_gb_transpose(g, shs_gen_dot_fwd(g, p, saved[S_V], &pv), GD(0, 2, 1, 3, 4));
	saved[S_CTX] = ctx = shs_gb_reshape(g, ctx, GD(c->batch, c->seq, c->heads, c->head_dim));
	shs_gb_pop(g);
	shs_gb_push(g, "out");
	out = shs_gen_dot_fwd(g, ctx, w[W_O], &outp);
	shs_gb_pop(g);
	return out;
}

/* Softmax backward through the mask and the 1/sqrt(H) scale: returns d(raw scores). */
static shs_v softmax_bwd(shs_gen_ctx *x, shs_v p, shs_v dp)
{
	shs_gb *g = &x->g;
	shs_gdims sd = scores_dims(x->cfg);
	shs_v ds = shs_gen_softmax_bwd(g, shs_gb_convert(g, p, SHS_F32),
				       shs_gb_convert(g, dp, SHS_F32), 4);

	ds = shs_gb_select(g, causal_mask(g, x->cfg), ds, shs_gb_splat(g, SHS_F32, 0.0, sd));
	ds = shs_gb_scale(g, ds, 1.0 / sqrt((double)x->cfg->head_dim));
	return shs_gb_convert(g, ds, x->ctype);
}

/* dy contribution and weight gradient of one projection. */
static shs_v project_bwd(shs_gb *g, shs_v y, shs_v w, shs_v dout, const char *name, shs_v *dw)
{
	shs_v dy;

	shs_gb_push(g, "%s", name);
	shs_gen_dot_bwd(g, y, w, &proj, dout, &dy, "grad_input", dw, "grad");
	shs_gb_pop(g);
	return dy;
}

shs_v shs_gen_attn_bwd(shs_gen_ctx *x, shs_v y, const shs_v *w, const shs_v *saved,
		       const shs_v *drop, shs_v dout, shs_v *dw)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_gdims qd = GD(c->batch, c->seq, c->kv_heads, c->heads / c->kv_heads, c->head_dim);
	shs_v dctx, dp, dv, ds, dq, dk, q5, dy;

	shs_gb_push(g, "out");
	shs_gen_dot_bwd(g, saved[S_CTX], w[W_O], &outp, dout, &dctx, "grad_input", &dw[W_O],
			"grad");
	shs_gb_pop(g);
	shs_gb_push(g, "attention/grad");
	if (c->attention == SHS_GEN_ATTN_FLASH) {
		shs_v d[3];

		shs_gen_flash_bwd(x, saved + S_Q, saved[S_P], saved[S_CTX], dctx, d);
		shs_gb_pop(g);
		dy = project_bwd(g, y, w[W_Q], d[0], "query", &dw[W_Q]);
		dy = shs_gb_add(g, dy, project_bwd(g, y, w[W_K], d[1], "key", &dw[W_K]));
		return shs_gb_add(g, dy, project_bwd(g, y, w[W_V], d[2], "value", &dw[W_V]));
	}
	dctx = shs_gb_transpose(g, shs_gb_reshape(g, dctx, qd), GD(0, 2, 1, 3, 4));
	/* the product with V read the dropped-out probabilities, when there were any */
	shs_gen_dot_bwd(g, shs_gen_attn_drop_saved(c) ? drop[D_PROBS] : saved[S_P], saved[S_V],
			&pv, dctx, &dp, "probs", &dv, "value");
	if (shs_gen_attn_drop_saved(c))
		dp = shs_gen_dropout_apply(x, dp, drop[D_MASK]);
	ds = softmax_bwd(x, saved[S_P], dp);
	q5 = shs_gb_reshape(g, saved[S_Q], qd);
	shs_gen_dot_bwd(g, q5, saved[S_K], &qk, ds, &dq, "query", &dk, "key");
	dq = shs_gb_reshape(g, dq, GD(c->batch, c->seq, c->heads, c->head_dim));
	shs_gb_pop(g);
	dy = project_bwd(g, y, w[W_Q], dq, "query", &dw[W_Q]);
	dy = shs_gb_add(g, dy, project_bwd(g, y, w[W_K], dk, "key", &dw[W_K]));
	return shs_gb_add(g, dy, project_bwd(g, y, w[W_V], dv, "value", &dw[W_V]));
}
