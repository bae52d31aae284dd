/* One layer as a pair of computations: forward (saving activations) and backward. */
#include <stdio.h>
#include <string.h>

#include "model_internal.h"

/* Positions of a transformer layer's weights and saved activations (with dropout, the masks
 * after the feed-forward part's: attention's own, then the attention and feed-forward
 * outputs', seeded SEED_ATTN_OUT and SEED_FF_OUT). */
enum { W_NORM1, W_ATTN, W_NORM2 = W_ATTN + 4, W_FF };
enum { S_X, S_ATTN, S_X1 = S_ATTN + SHS_GEN_ATTN_SAVED, S_FF };
enum { SEED_ATTN_OUT = 2, SEED_FF_OUT = 3 };

void shs_gen_path_join(char *dst, size_t cap, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), used = 0;

	if (!cap)
		return;
	if (la) {
		used = la < cap - 1 ? la : cap - 1;
		memcpy(dst, a, used);
		if (used < cap - 1)
			dst[used++] = '/';
	}
	lb = lb < cap - 1 - used ? lb : cap - 1 - used;
	memcpy(dst + used, b, lb);
	dst[used + lb] = '\0';
}

static void add_weight(shs_gen_weight *w, uint32_t *n, const char *path, shs_gdims dims,
		       bool matmul)
{
	shs_gen_path_join(w[*n].path, sizeof(w[*n].path), "", path);
	w[*n].dims = dims;
	w[*n].matmul = matmul;
	(*n)++;
}

static void ff_weights(const shs_gen_config *c, shs_gen_weight *w, uint32_t *n)
{
	int64_t D = c->d_model, F = c->d_ff, E = c->experts;

	if (c->kind == SHS_GEN_TRANSFORMER && E) {
		int64_t S = c->shared_experts * F;
		add_weight(w, n, "moe/gate", GD(D, E), true);
		add_weight(w, n, "moe/wi_0", GD(E, D, F), true);
		add_weight(w, n, "moe/wi_1", GD(E, D, F), true);
		add_weight(w, n, "moe/wo", GD(E, F, D), true);
		if (S && c->gated_mlp) {
			add_weight(w, n, "moe/shared/wi_0", GD(D, S), true);
			add_weight(w, n, "moe/shared/wi_1", GD(D, S), true);
			add_weight(w, n, "moe/shared/wo", GD(S, D), true);
		} else if (S) {
			add_weight(w, n, "moe/shared/wi", GD(D, S), true);
			add_weight(w, n, "moe/shared/wo", GD(S, D), true);
		}
	} else if (c->kind == SHS_GEN_TRANSFORMER && c->gated_mlp) {
		add_weight(w, n, "mlp/wi_0", GD(D, F), true);
		add_weight(w, n, "mlp/wi_1", GD(D, F), true);
		add_weight(w, n, "mlp/wo", GD(F, D), true);
	} else {
		add_weight(w, n, "mlp/wi", GD(D, F), true);
		add_weight(w, n, "mlp/wo", GD(F, D), true);
	}
}

uint32_t shs_gen_layer_weights(const shs_gen_config *c, shs_gen_weight out[SHS_GEN_MAX_WEIGHTS])
{
	int64_t D = c->d_model, N = c->heads, K = c->kv_heads, H = c->head_dim;
	uint32_t n = 0;

	if (c->kind == SHS_GEN_TRANSFORMER) {
		add_weight(out, &n, "pre_self_attention_norm/scale", GD(D), false);
		add_weight(out, &n, "self_attention/query", GD(D, N, H), true);
		add_weight(out, &n, "self_attention/key", GD(D, K, H), true);
		add_weight(out, &n, "self_attention/value", GD(D, K, H), true);
		add_weight(out, &n, "self_attention/out", GD(N, H, D), true);
		add_weight(out, &n, "pre_ffw_norm/scale", GD(D), false);
	}
	ff_weights(c, out, &n);
	return n;
}

static uint32_t ff_saved(const shs_gen_config *c)
{
	return c->experts ? shs_gen_moe_saved(c) : shs_gen_mlp_saved(c);
}

static uint32_t n_saved(const shs_gen_config *c)
{
	if (c->kind == SHS_GEN_MLP_ONLY)
		return 1 + shs_gen_mlp_saved(c);
	return S_FF + ff_saved(c) + (c->dropout > 0 ? shs_gen_attn_drop_saved(c) + 2 : 0);
}

/* v (a part's output, or its gradient) through the dropout mask, in scope part; with seed (the
 * forward pass) the mask is made first, into *mask. */
static shs_v dropped(shs_gen_ctx *x, const char *part, shs_v v, uint32_t seed, shs_v *mask)
{
	shs_v r;

	shs_gb_push(&x->g, "%s", part);
	if (seed)
		*mask = shs_gen_dropout_mask(x, shs_gb_dims(&x->g, v), seed);
	r = shs_gen_dropout_apply(x, v, *mask);
	shs_gb_pop(&x->g);
	return r;
}

static shs_gdims act_dims(const shs_gen_config *c)
{
	if (c->kind == SHS_GEN_MLP_ONLY)
		return GD(c->batch, c->d_model);
	return GD(c->batch, c->seq, c->d_model);
}

/* The weights' parameters from number first on, and their compute-type copies in wc. */
static void weight_params(shs_gen_ctx *x, int64_t first, shs_v *w, shs_v *wc)
{
	shs_gen_weight spec[SHS_GEN_MAX_WEIGHTS];
	uint32_t n = shs_gen_layer_weights(x->cfg, spec);
	char name[SHS_GEN_PATH_MAX];

	for (uint32_t k = 0; k < n; k++) {
		memcpy(name, spec[k].path, sizeof(name));
		for (char *p = name; *p; p++)
			*p = *p == '/' ? '.' : *p;
		shs_gb_push(&x->g, "%s", spec[k].path);
		w[k] = shs_gb_param(&x->g, first + k, x->wtype, spec[k].dims, name);
		wc[k] = spec[k].matmul ? shs_gb_convert(&x->g, w[k], x->ctype) : w[k];
		shs_gb_pop(&x->g);
	}
}

/* The feed-forward part of a transformer layer, by kind. */
static shs_v ff_fwd(shs_gen_ctx *x, shs_v y, const shs_v *w, shs_v *saved)
{
	shs_v r;

	shs_gb_push(&x->g, x->cfg->experts ? "moe" : "mlp");
	r = x->cfg->experts ? shs_gen_moe_fwd(x, y, w, saved) : shs_gen_mlp_fwd(x, y, w, saved);
	shs_gb_pop(&x->g);
	return r;
}

static shs_v ff_bwd(shs_gen_ctx *x, shs_v y, const shs_v *w, const shs_v *saved, shs_v dout,
		    shs_v *dw)
{
	shs_v r;

	shs_gb_push(&x->g, x->cfg->experts ? "moe" : "mlp");
	r = x->cfg->experts ? shs_gen_moe_bwd(x, y, w, saved, dout, dw) :
			      shs_gen_mlp_bwd(x, y, w, saved, dout, dw);
	shs_gb_pop(&x->g);
	return r;
}

static shs_v norm(shs_gen_ctx *x, const char *name, shs_v in, shs_v scale)
{
	shs_v r;

	shs_gb_push(&x->g, "%s", name);
	r = shs_gen_rms_fwd(x, in, scale);
	shs_gb_pop(&x->g);
	return r;
}

static shs_v norm_bwd(shs_gen_ctx *x, const char *name, shs_v in, shs_v scale, shs_v dy,
		      shs_v *dscale)
{
	shs_v r;

	shs_gb_push(&x->g, "%s/grad", name);
	r = shs_gen_rms_bwd(x, in, scale, dy, dscale);
	shs_gb_pop(&x->g);
	return r;
}

/* A transformer layer: x + drop(attn(norm(x))), then + drop(ff(norm(.))) (drop: dropout, with
 * a rate); returns y, fills saved. */
static shs_v transformer_fwd(shs_gen_ctx *x, shs_v in, const shs_v *wc, shs_v *saved)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_v *drop = saved + S_FF + ff_saved(c), *out_masks = drop + shs_gen_attn_drop_saved(c);
	shs_v y1, x1, y2, f;

	saved[S_X] = in;
	y1 = norm(x, "pre_self_attention_norm", in, wc[W_NORM1]);
	shs_gb_push(g, "self_attention");
	x1 = shs_gen_attn_fwd(x, y1, wc + W_ATTN, saved + S_ATTN, drop);
	shs_gb_pop(g);
	if (c->dropout > 0)
		x1 = dropped(x, "self_attention", x1, SEED_ATTN_OUT, &out_masks[0]);
	saved[S_X1] = x1 = shs_gb_add(g, in, x1);
	y2 = norm(x, "pre_ffw_norm", x1, wc[W_NORM2]);
	f = ff_fwd(x, y2, wc + W_FF, saved + S_FF);
	if (c->dropout > 0)
		f = dropped(x, c->experts ? "moe" : "mlp", f, SEED_FF_OUT, &out_masks[1]);
	return shs_gb_add(g, x1, f);
}

static shs_v transformer_bwd(shs_gen_ctx *x, const shs_v *wc, const shs_v *saved, shs_v dy,
			     shs_v *dw)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	const shs_v *drop = saved + S_FF + ff_saved(c);
	shs_v out_masks[2] = { 0, 0 };
	shs_v y2 = norm(x, "pre_ffw_norm", saved[S_X1], wc[W_NORM2]);
	shs_v dff = dy, dy2, dx1, y1, dattn, dy1;

	if (c->dropout > 0) {
		memcpy(out_masks, drop + shs_gen_attn_drop_saved(c), sizeof(out_masks));
		dff = dropped(x, c->experts ? "moe" : "mlp", dy, 0, &out_masks[1]);
	}
	dy2 = ff_bwd(x, y2, wc + W_FF, saved + S_FF, dff, dw + W_FF);
	dx1 = shs_gb_add(g, dy, norm_bwd(x, "pre_ffw_norm", saved[S_X1], wc[W_NORM2], dy2,
					 &dw[W_NORM2]));
	y1 = norm(x, "pre_self_attention_norm", saved[S_X], wc[W_NORM1]);
	dattn = c->dropout > 0 ? dropped(x, "self_attention", dx1, 0, &out_masks[0]) : dx1;
	shs_gb_push(g, "self_attention");
	dy1 = shs_gen_attn_bwd(x, y1, wc + W_ATTN, saved + S_ATTN, drop, dattn, dw + W_ATTN);
	shs_gb_pop(g);
	return shs_gb_add(g, dx1, norm_bwd(x, "pre_self_attention_norm", saved[S_X],
					    wc[W_NORM1], dy1, &dw[W_NORM1]));
}

uint32_t shs_gen_layer_fwd(shs_gen_ctx *x, const char *label)
{
	shs_gb *g = &x->g;
	shs_v w[SHS_GEN_MAX_WEIGHTS], wc[SHS_GEN_MAX_WEIGHTS], out[1 + SHS_GEN_MAX_SAVED];
	uint32_t ns = n_saved(x->cfg);
	shs_gb_frame saved;
	shs_v in;
	char name[SHS_GEN_PATH_MAX];

	snprintf(name, sizeof(name), "%s.fwd", label);
	shs_gb_begin(g, &saved, name);
	shs_gb_push(g, "%s", label);
	in = shs_gb_param(g, 0, x->ctype, act_dims(x->cfg), "x");
	weight_params(x, 1, w, wc);
	if (x->cfg->kind == SHS_GEN_MLP_ONLY) {
		out[1] = in;
		shs_gb_push(g, "mlp");
		out[0] = shs_gen_mlp_fwd(x, in, wc, out + 2);
		shs_gb_pop(g);
	} else {
		out[0] = transformer_fwd(x, in, wc, out + 1);
	}
	return shs_gb_end(g, &saved, shs_gb_tuple(g, out, 1 + ns));
}

uint32_t shs_gen_layer_bwd(shs_gen_ctx *x, const char *label, uint32_t fwd)
{
	shs_gb *g = &x->g;
	shs_v w[SHS_GEN_MAX_WEIGHTS], wc[SHS_GEN_MAX_WEIGHTS], s[SHS_GEN_MAX_SAVED];
	shs_v out[1 + SHS_GEN_MAX_WEIGHTS], dy;
	shs_gen_weight spec[SHS_GEN_MAX_WEIGHTS];
	uint32_t nw = shs_gen_layer_weights(x->cfg, spec), ns = n_saved(x->cfg);
	const shs_shape *saved_shapes;
	shs_gb_frame frame;
	char name[SHS_GEN_PATH_MAX];

	if (g->rc != SHS_OK)
		return 0;
	saved_shapes = g->m->comps[fwd]->instrs[g->m->comps[fwd]->root]->shape.tuple + 1;
	snprintf(name, sizeof(name), "%s.bwd", label);
	shs_gb_begin(g, &frame, name);
	shs_gb_push(g, "%s", label);
	dy = shs_gb_param(g, 0, x->ctype, act_dims(x->cfg), "dy");
	weight_params(x, 1, w, wc);
	for (uint32_t k = 0; k < ns; k++)
		s[k] = shs_gb_param_shape(g, 1 + nw + k, &saved_shapes[k], "saved");
	if (x->cfg->kind == SHS_GEN_MLP_ONLY) {
		shs_gb_push(g, "mlp");
		out[0] = shs_gen_mlp_bwd(x, s[0], wc, s + 1, dy, out + 1);
		shs_gb_pop(g);
	} else {
		out[0] = transformer_bwd(x, wc, s, dy, out + 1);
	}
	for (uint32_t k = 0; k < nw; k++) {
		shs_gb_push(g, "%s/grad", spec[k].path);
		out[1 + k] = shs_gb_convert(g, out[1 + k], x->wtype);
		shs_gb_pop(g);
	}
	return shs_gb_end(g, &frame, shs_gb_tuple(g, out, 1 + nw));
}
