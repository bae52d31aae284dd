/* The layer stack: L calls of per-layer computations, or one while loop over stacked weights. */
#include <stdio.h>
#include <stdlib.h>

#include "model_internal.h"

struct shs_gen_layers {
	uint32_t n_saved;
	uint32_t fwd;      /* scanned: the layer's forward computation */
	uint32_t *fwds;    /* unrolled: each layer's forward computation */
	shs_v *saved;      /* unrolled: L * n_saved values; scanned: n_saved stacked values */
};

void shs_gen_layers_free(shs_gen_layers *s)
{
	if (!s)
		return;
	free(s->fwds);
	free(s->saved);
	free(s);
}

static const shs_shape *root_shape(const shs_gb *g, uint32_t comp)
{
	const shs_computation *c = g->m->comps[comp];

	return &c->instrs[c->root]->shape;
}

static shs_gen_layers *new_state(shs_gen_ctx *x, uint32_t n_saved, uint32_t layers)
{
	shs_gen_layers *s = calloc(1, sizeof(*s));

	if (s) {
		s->n_saved = n_saved;
		s->fwds = calloc(layers, sizeof(*s->fwds));
		s->saved = calloc((size_t)layers * (n_saved ? n_saved : 1), sizeof(*s->saved));
	}
	if (!s || !s->fwds || !s->saved) {
		shs_gen_layers_free(s);
		shs_gb_fail(&x->g, SHS_ENOMEM, "out of memory");
		return NULL;
	}
	return s;
}

static shs_v unrolled_fwd(shs_gen_ctx *x, shs_v in, const shs_v *w, uint32_t n_w,
			  shs_gen_layers **state)
{
	shs_gb *g = &x->g;
	int64_t layers = x->cfg->layers;
	shs_v args[1 + SHS_GEN_MAX_WEIGHTS], r;
	char label[SHS_GEN_PATH_MAX];
	shs_gen_layers *s = NULL;

	for (int64_t l = 0; l < layers && g->rc == SHS_OK; l++) {
		snprintf(label, sizeof(label), "layers_%lld", (long long)l);
		uint32_t comp = shs_gen_layer_fwd(x, label);
		if (!s && g->rc == SHS_OK)
			s = new_state(x, root_shape(g, comp)->n_tuple - 1, (uint32_t)layers);
		if (!s)
			break;
		s->fwds[l] = comp;
		args[0] = in;
		for (uint32_t j = 0; j < n_w; j++)
			args[1 + j] = w[l * n_w + j];
		shs_gb_push(g, "%s", label);
		r = shs_gb_call(g, comp, args, 1 + n_w);
		in = shs_gb_gte(g, r, 0);
		for (uint32_t k = 0; k < s->n_saved; k++)
			s->saved[l * s->n_saved + k] = shs_gb_gte(g, r, 1 + k);
		shs_gb_pop(g);
	}
	*state = s;
	return in;
}

static shs_v unrolled_bwd(shs_gen_ctx *x, shs_v dy, const shs_v *w, uint32_t n_w,
			  const shs_gen_layers *s, shs_v *grads)
{
	shs_gb *g = &x->g;
	shs_v args[1 + SHS_GEN_MAX_WEIGHTS + SHS_GEN_MAX_SAVED], r;
	char label[SHS_GEN_PATH_MAX];

	for (int64_t l = x->cfg->layers - 1; l >= 0 && g->rc == SHS_OK; l--) {
		snprintf(label, sizeof(label), "layers_%lld", (long long)l);
		uint32_t comp = shs_gen_layer_bwd(x, label, s->fwds[l]);
		args[0] = dy;
		for (uint32_t j = 0; j < n_w; j++)
			args[1 + j] = w[l * n_w + j];
		for (uint32_t k = 0; k < s->n_saved; k++)
			args[1 + n_w + k] = s->saved[l * s->n_saved + k];
		shs_gb_push(g, "%s", label);
		r = shs_gb_call(g, comp, args, 1 + n_w + s->n_saved);
		dy = shs_gb_gte(g, r, 0);
		for (uint32_t j = 0; j < n_w; j++)
			grads[l * n_w + j] = shs_gb_gte(g, r, 1 + j);
		shs_gb_pop(g);
	}
	return dy;
}

/* Start indices (index, 0, 0, ...) of one layer's slice of a rank-n stack. */
static void layer_starts(shs_v *starts, uint32_t n, shs_v index, shs_v zero)
{
	for (uint32_t k = 0; k < n; k++)
		starts[k] = k ? zero : index;
}

/* Slice `index` of stacked value v[L, ...] as [...]. */
static shs_v unstack(shs_gb *g, shs_v v, shs_v index, shs_v zero)
{
	shs_gdims d = shs_gb_dims(g, v), one = d, inner = { .n = d.n ? d.n - 1 : 0 };
	shs_v starts[SHS_GB_MAX_RANK];

	if (g->rc != SHS_OK || !d.n)
		return 0;
	one.d[0] = 1;
	layer_starts(starts, d.n, index, zero);
	for (uint32_t k = 1; k < d.n; k++)
		inner.d[k - 1] = d.d[k];
	return shs_gb_reshape(g, shs_gb_dynamic_slice(g, v, starts, one), inner);
}

/* stack with slice `index` replaced by v. */
static shs_v restack(shs_gb *g, shs_v stack, shs_v v, shs_v index, shs_v zero)
{
	shs_gdims d = shs_gb_dims(g, stack), one = d;
	shs_v starts[SHS_GB_MAX_RANK];

	if (g->rc != SHS_OK || !d.n)
		return 0;
	one.d[0] = 1;
	layer_starts(starts, d.n, index, zero);
	return shs_gb_dynamic_update_slice(g, stack, shs_gb_reshape(g, v, one), starts);
}

/* The loop condition `carry[0] < layers`. */
static uint32_t loop_cond(shs_gen_ctx *x, shs_v init, const char *name)
{
	shs_gb *g = &x->g;
	const shs_shape *carry = shs_gb_shape(g, init);
	shs_gb_frame frame;
	shs_v p, lt;

	shs_gb_begin(g, &frame, name);
	p = shs_gb_param_shape(g, 0, carry, "carry");
	lt = shs_gb_compare(g, shs_gb_gte(g, p, 0), shs_gb_const(g, SHS_S32, (double)x->cfg->layers),
			    "LT");
	return shs_gb_end(g, &frame, lt);
}

/* A zero-filled [L, ...] stack shaped like element s. */
static shs_v zero_stack(shs_gb *g, const shs_shape *s, int64_t layers)
{
	shs_gdims d = { .n = s->rank + 1 };

	d.d[0] = layers;
	for (uint32_t k = 0; k < s->rank; k++)
		d.d[k + 1] = s->dims[k];
	return shs_gb_splat(g, s->type, 0.0, d);
}

/* Forward loop carry: (i, x, W_0.., S_0..); body runs the layer on slice i. */
static shs_v scanned_fwd(shs_gen_ctx *x, shs_v in, const shs_v *w, uint32_t n_w,
			 shs_gen_layers **state)
{
	shs_gb *g = &x->g;
	uint32_t fwd = shs_gen_layer_fwd(x, "layers"), ns, n;
	shs_v carry[2 + SHS_GEN_MAX_WEIGHTS + SHS_GEN_MAX_SAVED], args[1 + SHS_GEN_MAX_WEIGHTS];
	shs_v init, p, i, zero, r, loop;
	shs_gen_layers *s;
	const shs_shape *shape;
	shs_gb_frame frame;
	uint32_t cond, body;

	if (g->rc != SHS_OK || !(s = new_state(x, root_shape(g, fwd)->n_tuple - 1, 1)))
		return 0;
	s->fwd = fwd;
	ns = s->n_saved;
	n = 2 + n_w + ns;
	shs_gb_push(g, "layers");
	carry[0] = shs_gb_const(g, SHS_S32, 0);
	carry[1] = in;
	for (uint32_t j = 0; j < n_w; j++)
		carry[2 + j] = w[j];
	for (uint32_t k = 0; k < ns; k++)
		carry[2 + n_w + k] = zero_stack(g, &root_shape(g, fwd)->tuple[1 + k], x->cfg->layers);
	init = shs_gb_tuple(g, carry, n);
	cond = loop_cond(x, init, "layers.fwd.cond");
	shape = shs_gb_shape(g, init);
	shs_gb_begin(g, &frame, "layers.fwd.body");
	p = shs_gb_param_shape(g, 0, shape, "carry");
	for (uint32_t k = 0; k < n; k++)
		carry[k] = shs_gb_gte(g, p, k);
	i = carry[0];
	zero = shs_gb_const(g, SHS_S32, 0);
	args[0] = carry[1];
	for (uint32_t j = 0; j < n_w; j++)
		args[1 + j] = unstack(g, carry[2 + j], i, zero);
	r = shs_gb_call(g, fwd, args, 1 + n_w);
	carry[0] = shs_gb_add(g, i, shs_gb_const(g, SHS_S32, 1));
	carry[1] = shs_gb_gte(g, r, 0);
	for (uint32_t k = 0; k < ns; k++)
		carry[2 + n_w + k] = restack(g, carry[2 + n_w + k], shs_gb_gte(g, r, 1 + k), i, zero);
	body = shs_gb_end(g, &frame, shs_gb_tuple(g, carry, n));
	loop = shs_gb_while(g, init, cond, body);
	for (uint32_t k = 0; k < ns; k++)
		s->saved[k] = shs_gb_gte(g, loop, 2 + n_w + k);
	in = shs_gb_gte(g, loop, 1);
	shs_gb_pop(g);
	*state = s;
	return in;
}

/* Backward loop carry: (i, dy, W_0.., S_0.., G_0..); body runs layer L-1-i's backward. */
static shs_v scanned_bwd(shs_gen_ctx *x, shs_v dy, const shs_v *w, uint32_t n_w,
			 const shs_gen_layers *s, shs_v *grads)
{
	shs_gb *g = &x->g;
	uint32_t bwd = shs_gen_layer_bwd(x, "layers", s->fwd), ns = s->n_saved;
	uint32_t n = 2 + 2 * n_w + ns, gi = 2 + n_w + ns, cond, body;
	shs_v carry[2 + 2 * SHS_GEN_MAX_WEIGHTS + SHS_GEN_MAX_SAVED];
	shs_v args[1 + SHS_GEN_MAX_WEIGHTS + SHS_GEN_MAX_SAVED];
	shs_v init, p, idx, zero, r, loop;
	const shs_shape *shape;
	shs_gb_frame frame;

	if (g->rc != SHS_OK)
		return 0;
	shs_gb_push(g, "layers/grad");
	carry[0] = shs_gb_const(g, SHS_S32, 0);
	carry[1] = dy;
	for (uint32_t j = 0; j < n_w; j++) {
		carry[2 + j] = w[j];
		carry[gi + j] = shs_gb_splat(g, x->wtype, 0.0, shs_gb_dims(g, w[j]));
	}
	for (uint32_t k = 0; k < ns; k++)
		carry[2 + n_w + k] = s->saved[k];
	init = shs_gb_tuple(g, carry, n);
	cond = loop_cond(x, init, "layers.bwd.cond");
	shape = shs_gb_shape(g, init);
	shs_gb_begin(g, &frame, "layers.bwd.body");
	p = shs_gb_param_shape(g, 0, shape, "carry");
	for (uint32_t k = 0; k < n; k++)
		carry[k] = shs_gb_gte(g, p, k);
	zero = shs_gb_const(g, SHS_S32, 0);
	idx = shs_gb_sub(g, shs_gb_const(g, SHS_S32, (double)(x->cfg->layers - 1)), carry[0]);
	args[0] = carry[1];
	for (uint32_t k = 0; k < n_w + ns; k++)
		args[1 + k] = unstack(g, carry[2 + k], idx, zero);
	r = shs_gb_call(g, bwd, args, 1 + n_w + ns);
	carry[0] = shs_gb_add(g, carry[0], shs_gb_const(g, SHS_S32, 1));
	carry[1] = shs_gb_gte(g, r, 0);
	for (uint32_t j = 0; j < n_w; j++)
		carry[gi + j] = restack(g, carry[gi + j], shs_gb_gte(g, r, 1 + j), idx, zero);
	body = shs_gb_end(g, &frame, shs_gb_tuple(g, carry, n));
	loop = shs_gb_while(g, init, cond, body);
	for (uint32_t j = 0; j < n_w; j++)
		grads[j] = shs_gb_gte(g, loop, gi + j);
	dy = shs_gb_gte(g, loop, 1);
	shs_gb_pop(g);
	return dy;
}

shs_v shs_gen_layers_fwd(shs_gen_ctx *x, shs_v x0, const shs_v *w, uint32_t n_w,
			 shs_gen_layers **state)
{
	*state = NULL;
	return x->cfg->scan ? scanned_fwd(x, x0, w, n_w, state) : unrolled_fwd(x, x0, w, n_w, state);
}

shs_v shs_gen_layers_bwd(shs_gen_ctx *x, shs_v dy, const shs_v *w, uint32_t n_w,
			 shs_gen_layers *state, shs_v *grads)
{
	if (!state)
		return 0;
	return x->cfg->scan ? scanned_bwd(x, dy, w, n_w, state, grads) :
			      unrolled_bwd(x, dy, w, n_w, state, grads);
}
