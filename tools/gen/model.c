/* The training step: entry parameters, forward, loss, backward, Adam, outputs and aliases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "io.h"
#include "model_internal.h"

/* Every model weight of the step, in entry-parameter order. */
typedef struct weights {
	uint32_t n, n_layer;  /* all; per layer (unrolled: n_layer * L of them after first) */
	uint32_t first_layer; /* index of the first layer weight */
	shs_gen_weight *w;
} weights;

static void put(weights *ws, const char *path, shs_gdims dims, bool matmul)
{
	shs_gen_weight *w = &ws->w[ws->n++];

	shs_gen_path_join(w->path, sizeof(w->path), "", path);
	w->dims = dims;
	w->matmul = matmul;
}

/* The layer weights: per layer when unrolled, stacked on a leading layer dim when scanned. */
static void put_layers(weights *ws, const shs_gen_config *c)
{
	shs_gen_weight lw[SHS_GEN_MAX_WEIGHTS];
	char path[SHS_GEN_PATH_MAX], group[SHS_GEN_PATH_MAX];

	ws->n_layer = shs_gen_layer_weights(c, lw);
	ws->first_layer = ws->n;
	for (int64_t l = 0; l < (c->scan ? 1 : c->layers); l++)
		for (uint32_t k = 0; k < ws->n_layer; k++) {
			shs_gdims d = lw[k].dims;
			if (c->scan) {
				memmove(d.d + 1, d.d, d.n * sizeof(int64_t));
				d.d[0] = c->layers;
				d.n++;
				snprintf(group, sizeof(group), "layers");
			} else {
				snprintf(group, sizeof(group), "layers_%lld", (long long)l);
			}
			shs_gen_path_join(path, sizeof(path), group, lw[k].path);
			put(ws, path, d, lw[k].matmul);
		}
}

static int list_weights(const shs_gen_config *c, weights *ws)
{
	uint64_t cap = 3 + (uint64_t)SHS_GEN_MAX_WEIGHTS * (uint64_t)(c->scan ? 1 : c->layers);
	int64_t V = c->vocab, D = c->d_model;

	ws->w = calloc(cap, sizeof(*ws->w));
	if (!ws->w)
		return SHS_ENOMEM;
	if (c->kind == SHS_GEN_TRANSFORMER)
		put(ws, "token_embedder/embedding", GD(V, D), c->tied_embedding);
	put_layers(ws, c);
	if (c->kind == SHS_GEN_TRANSFORMER) {
		put(ws, "decoder_norm/scale", GD(D), false);
		if (!c->tied_embedding)
			put(ws, "logits_dense/kernel", GD(D, V), true);
	}
	return SHS_OK;
}

/* One entry parameter per weight under group ("params", "opt_state/mu", ...). */
static void weight_params(shs_gen_ctx *x, const weights *ws, const char *group, int64_t first,
			  shs_v *out)
{
	char name[2 * SHS_GEN_PATH_MAX];

	for (uint32_t k = 0; k < ws->n; k++) {
		shs_gen_path_join(name, sizeof(name), group, ws->w[k].path);
		shs_gb_push(&x->g, "%s", name);
		for (char *p = name; *p; p++)
			*p = *p == '/' ? '.' : *p;
		out[k] = shs_gb_param(&x->g, first + k, x->wtype, ws->w[k].dims, name);
		shs_gb_pop(&x->g);
	}
}

/* Entry values: step, params, mu, nu, the two data inputs; and the new values. */
typedef struct entry {
	shs_v step, in, targets, loss;
	shs_v *p, *mu, *nu, *grads; /* n each */
	shs_v *out;                 /* the step, n params, n mu, n nu, the loss */
} entry;

static shs_v converted(shs_gen_ctx *x, shs_v v, const char *path)
{
	shs_v r;

	shs_gb_push(&x->g, "%s", path);
	r = shs_gb_convert(&x->g, v, x->ctype);
	shs_gb_pop(&x->g);
	return r;
}

/* Forward and backward of the transformer: grads[] gets one gradient per weight. */
static void transformer_step(shs_gen_ctx *x, const weights *ws, entry *en)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	uint32_t last = ws->n - 1, norm = c->tied_embedding ? last : last - 1;
	shs_v emb = converted(x, en->p[0], "token_embedder"), y, yf, dyf, dy, dx0, dw_out, dE;
	shs_v unembed;
	shs_gen_layers *state = NULL;

	shs_gb_push(g, "token_embedder");
	y = shs_gb_gather_rows(g, emb, en->in);
	shs_gb_pop(g);
	y = shs_gen_layers_fwd(x, y, en->p + ws->first_layer, ws->n_layer, &state);
	shs_gb_push(g, "decoder_norm");
	yf = shs_gen_rms_fwd(x, y, en->p[norm]);
	shs_gb_pop(g);
	unembed = c->tied_embedding ? emb : converted(x, en->p[last], "logits_dense");
	en->loss = shs_gen_loss(x, yf, unembed, en->targets, &dyf, &dw_out);
	shs_gb_push(g, "decoder_norm/grad");
	dy = shs_gen_rms_bwd(x, y, en->p[norm], dyf, &en->grads[norm]);
	shs_gb_pop(g);
	dx0 = shs_gen_layers_bwd(x, dy, en->p + ws->first_layer, ws->n_layer, state,
				 en->grads + ws->first_layer);
	shs_gen_layers_free(state);
	shs_gb_push(g, "token_embedder/grad");
	dE = shs_gb_scatter_add_rows(g, shs_gb_splat(g, x->ctype, 0.0, GD(c->vocab, c->d_model)),
				     en->in, dx0);
	en->grads[0] = c->tied_embedding ? shs_gb_add(g, dE, dw_out) : dE;
	shs_gb_pop(g);
	if (!c->tied_embedding)
		en->grads[last] = dw_out;
}

/* The book's model: layers of In . W_in . W_out against a regression target. */
static void mlp_only_step(shs_gen_ctx *x, const weights *ws, entry *en)
{
	shs_gen_layers *state = NULL;
	shs_v y = shs_gen_layers_fwd(x, en->in, en->p, ws->n_layer, &state), dy;

	en->loss = shs_gen_mse(x, y, en->targets, &dy);
	shs_gen_layers_bwd(x, dy, en->p, ws->n_layer, state, en->grads);
	shs_gen_layers_free(state);
}

static void one_step(shs_gen_ctx *x, const weights *ws, entry *en)
{
	if (x->cfg->kind == SHS_GEN_MLP_ONLY)
		mlp_only_step(x, ws, en);
	else
		transformer_step(x, ws, en);
}

/* One micro-batch of the accumulation loop: the step on the loop's values (a shs_gen_step_fn;
 * user is the weights list). */
static void micro_step(shs_gen_ctx *x, void *user, const shs_v *w, shs_v in, shs_v targets,
		       shs_v *grads, shs_v *loss)
{
	entry en = { .in = in, .targets = targets, .p = (shs_v *)w, .grads = grads };

	one_step(x, user, &en);
	*loss = en.loss;
}

static void optimizer(shs_gen_ctx *x, const weights *ws, entry *en)
{
	shs_gen_adam adam;
	uint32_t n = ws->n;
	shs_v r[3];

	shs_gen_adam_prepare(x, en->step, en->grads, n, &adam);
	for (uint32_t k = 0; k < n; k++) {
		shs_gb_push(&x->g, "optimizer/%s", ws->w[k].path);
		shs_gen_adam_update(x, &adam, en->p[k], en->grads[k], en->mu[k], en->nu[k], r);
		shs_gb_pop(&x->g);
		en->out[1 + k] = r[0];
		en->out[1 + n + k] = r[1];
		en->out[1 + 2 * n + k] = r[2];
	}
	shs_gb_push(&x->g, "optimizer");
	en->out[0] = shs_gb_add(&x->g, en->step, shs_gb_const(&x->g, SHS_S32, 1));
	shs_gb_pop(&x->g);
	en->out[1 + 3 * n] = en->loss;
}

static void data_params(shs_gen_ctx *x, int64_t first, entry *en)
{
	const shs_gen_config *c = x->cfg;
	shs_gb *g = &x->g;

	shs_gb_push(g, "batch");
	if (c->kind == SHS_GEN_MLP_ONLY) {
		shs_gdims bd = GD(c->batch, c->d_model);
		en->in = shs_gb_param(g, first, x->ctype, bd, "inputs");
		en->targets = shs_gb_param(g, first + 1, x->ctype, bd, "targets");
	} else {
		en->in = shs_gb_param(g, first, SHS_S32, GD(c->batch, c->seq), "inputs");
		en->targets = shs_gb_param(g, first + 1, SHS_S32, GD(c->batch, c->seq), "targets");
	}
	shs_gb_pop(g);
}

/* input_output_alias: output {k} may alias parameter k for the step, params, mu and nu. */
static int set_aliases(shs_module *m, uint32_t n)
{
	m->aliases = shs_arena_calloc(m->arena, n, sizeof(*m->aliases));
	if (!m->aliases)
		return SHS_ENOMEM;
	m->n_aliases = n;
	for (uint32_t k = 0; k < n; k++) {
		shs_alias *a = &m->aliases[k];
		a->output_index.v = shs_arena_alloc(m->arena, sizeof(int64_t));
		if (!a->output_index.v)
			return SHS_ENOMEM;
		a->output_index.n = 1;
		a->output_index.v[0] = k;
		a->param_number = k;
		a->kind = 1;
	}
	return SHS_OK;
}

/* entry_computation_layout from the entry's parameters and root. */
static int set_entry_layout(shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);
	shs_program_shape *ps = shs_arena_calloc(m->arena, 1, sizeof(*ps));
	uint32_t n = 0;

	if (!ps)
		return SHS_ENOMEM;
	for (uint32_t k = 0; k < c->n_instrs; k++)
		n += c->instrs[k]->op == SHS_OP_PARAMETER;
	ps->params = shs_arena_calloc(m->arena, n ? n : 1, sizeof(*ps->params));
	if (!ps->params)
		return SHS_ENOMEM;
	for (uint32_t k = 0; k < c->n_instrs; k++) {
		const shs_instr *i = c->instrs[k];
		if (i->op == SHS_OP_PARAMETER &&
		    shs_shape_copy(m->arena, &ps->params[i->parameter_number], &i->shape) != SHS_OK)
			return SHS_ENOMEM;
	}
	ps->n_params = n;
	if (shs_shape_copy(m->arena, &ps->result, &c->instrs[c->root]->shape) != SHS_OK)
		return SHS_ENOMEM;
	m->entry_layout = ps;
	return SHS_OK;
}

static int alloc_entry(entry *en, uint32_t n)
{
	en->p = calloc(7 * (size_t)n + 2, sizeof(shs_v));
	if (!en->p)
		return SHS_ENOMEM;
	en->mu = en->p + n;
	en->nu = en->mu + n;
	en->grads = en->nu + n;
	en->out = en->grads + n;
	return SHS_OK;
}

/* The entry computation "main" of the step. */
static void build_entry(shs_gen_ctx *x, const weights *ws, entry *en)
{
	shs_gb *g = &x->g;
	uint32_t n = ws->n;
	shs_gb_frame frame;

	shs_gb_begin(g, &frame, "main");
	shs_gb_push(g, "train_step");
	shs_gb_push(g, "optimizer");
	en->step = shs_gb_param(g, 0, SHS_S32, GD(), "step");
	shs_gb_pop(g);
	weight_params(x, ws, "params", 1, en->p);
	weight_params(x, ws, "opt_state/mu", 1 + n, en->mu);
	weight_params(x, ws, "opt_state/nu", 1 + 2 * (int64_t)n, en->nu);
	data_params(x, 1 + 3 * (int64_t)n, en);
	if (x->cfg->microbatches > 1)
		en->loss = shs_gen_accumulate(x, en->p, n, en->in, en->targets, micro_step,
					      (void *)ws, en->grads);
	else
		one_step(x, ws, en);
	optimizer(x, ws, en);
	g->m->entry = shs_gb_end(g, &frame, shs_gb_tuple(g, en->out, 2 + 3 * n));
}

static void count(const shs_gen_config *c, const weights *ws, const shs_module *m,
		  shs_gen_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (uint32_t k = 0; k < ws->n; k++) {
		double e = 1;
		for (uint32_t d = 0; d < ws->w[k].dims.n; d++)
			e *= (double)ws->w[k].dims.d[d];
		st->params += e;
		st->matmul_params += ws->w[k].matmul ? e : 0;
	}
	st->tokens = (double)c->batch * (double)(c->kind == SHS_GEN_MLP_ONLY ? 1 : c->seq);
	st->flops = shs_comp_dot_flops(m, shs_module_entry(m), NULL);
	st->attention_flops = c->kind == SHS_GEN_TRANSFORMER && c->attention == SHS_GEN_ATTN_FLASH ?
				      (double)c->layers * (shs_gen_flash_flops(c, false) +
							   shs_gen_flash_flops(c, true)) :
				      0;
	st->computations = m->n_comps;
	for (uint32_t k = 0; k < m->n_comps; k++)
		st->instructions += m->comps[k]->n_instrs;
}

static void init_ctx(shs_gen_ctx *x, const shs_gen_config *c, shs_module *m, shs_err *e)
{
	memset(x, 0, sizeof(*x));
	shs_gb_init(&x->g, m, e);
	x->cfg = c;
	x->ctype = SHS_BF16;
	x->wtype = c->dtype == SHS_GEN_F32_MASTER ? SHS_F32 : SHS_BF16;
	if (c->experts)
		x->capacity = (int64_t)ceil((double)c->top_k * (double)c->seq * c->capacity_factor /
					    (double)c->experts);
}

int shs_gen_module(const shs_gen_config *c, shs_module **out, shs_gen_stats *stats, shs_err *e)
{
	weights ws = { 0 };
	entry en = { 0 };
	shs_gen_ctx x;
	shs_module *m = NULL;
	int rc = shs_gen_config_check(c, e);

	*out = NULL;
	if (rc != SHS_OK)
		goto done;
	m = shs_module_new(0);
	if (!m || list_weights(c, &ws) != SHS_OK || alloc_entry(&en, ws.n) != SHS_OK) {
		rc = shs_seterr(e, SHS_ENOMEM, "gen: out of memory");
		goto done;
	}
	init_ctx(&x, c, m, e);
	m->name = shs_arena_strdup(m->arena, c->name[0] ? c->name : "train_step");
	m->style = (shs_text_style){ .percent = true, .operand_shapes = true, .signatures = true };
	build_entry(&x, &ws, &en);
	shs_gb_renumber(&x.g);
	rc = x.g.rc;
	if (rc == SHS_OK && (!m->name || set_aliases(m, 1 + 3 * ws.n) != SHS_OK ||
			     set_entry_layout(m) != SHS_OK))
		rc = shs_seterr(e, SHS_ENOMEM, "gen: out of memory");
	if (rc == SHS_OK)
		rc = shs_module_verify(m, e);
	if (rc != SHS_OK)
		goto done;
	if (stats)
		count(c, &ws, m, stats);
	*out = m;
	m = NULL;
done:
	shs_module_free(m);
	free(ws.w);
	free(en.p);
	return rc;
}
