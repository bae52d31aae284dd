/* Private pieces of the model generator shared by its files: context, weights, layer parts. */
#ifndef SHS_GEN_MODEL_INTERNAL_H
#define SHS_GEN_MODEL_INTERNAL_H

#include "builder.h"
#include "gen.h"

enum {
	SHS_GEN_MAX_WEIGHTS = 16, /* weights of one layer */
	SHS_GEN_MAX_SAVED = 24,   /* activations one layer saves for its backward pass */
	SHS_GEN_PATH_MAX = 64
};

/* The generator's state: the builder, the config and the types it settled on. */
typedef struct shs_gen_ctx {
	shs_gb g;
	const shs_gen_config *cfg;
	int32_t wtype;   /* parameters and optimizer state */
	int32_t ctype;   /* activations and matmuls: bf16 */
	int64_t capacity; /* MoE tokens per expert per sequence */
} shs_gen_ctx;

/* One weight of a layer (or of the model): its path under params/ and its logical dims. */
typedef struct shs_gen_weight {
	char path[SHS_GEN_PATH_MAX];
	shs_gdims dims;
	bool matmul; /* read by a dot (not a norm scale, not the input embedding) */
} shs_gen_weight;

/* dst = a "/" b (or b alone when a is empty), cut to cap bytes with a NUL. */
void shs_gen_path_join(char *dst, size_t cap, const char *a, const char *b);

/* The weights of one layer of c into out; returns how many. */
/* The forward and backward of one micro-batch (model.c): from the weights w and the data in and
 * targets, one gradient per weight into grads and the loss into *loss. */
typedef void (*shs_gen_step_fn)(shs_gen_ctx *x, void *user, const shs_v *w, shs_v in,
				shs_v targets, shs_v *grads, shs_v *loss);

/* Gradient accumulation (accumulate.c): step over x->cfg->microbatches micro-batches of in and
 * targets in one while loop, with the n weights w; the mean gradients into grads[0..n), and
 * returns the mean loss. */
shs_v shs_gen_accumulate(shs_gen_ctx *x, const shs_v *w, uint32_t n, shs_v in, shs_v targets,
			 shs_gen_step_fn step, void *user, shs_v *grads);

uint32_t shs_gen_layer_weights(const shs_gen_config *c, shs_gen_weight out[SHS_GEN_MAX_WEIGHTS]);

/* The forward computation of one layer, `(x, w_0, ..., w_n) -> (y, saved_0, ...)` with
 * weights in the parameter type; tagged with scope label ("layers_3" or "layers").
 * Returns its index in m->comps. */
uint32_t shs_gen_layer_fwd(shs_gen_ctx *x, const char *label);

/* The backward computation of the layer whose forward is comp fwd,
 * `(dy, w_0, ..., w_n, saved_0, ...) -> (dx, dw_0, ..., dw_n)`, gradients in the parameter
 * type. Returns its index in m->comps. */
uint32_t shs_gen_layer_bwd(shs_gen_ctx *x, const char *label, uint32_t fwd);

/* The layers' forward and backward passes, unrolled into calls or scanned in while loops.
 * w: the entry's layer weights (L * n_w values layer-major when unrolled, n_w layer-stacked
 * values when scanned). Forward returns the last layer's output; backward fills grads like w and
 * returns the gradient of the first layer's input. state carries saved activations between
 * the two; it is opaque and freed by shs_gen_layers_free. */
typedef struct shs_gen_layers shs_gen_layers;
shs_v shs_gen_layers_fwd(shs_gen_ctx *x, shs_v x0, const shs_v *w, uint32_t n_w,
			 shs_gen_layers **state);
shs_v shs_gen_layers_bwd(shs_gen_ctx *x, shs_v dy, const shs_v *w, uint32_t n_w,
			 shs_gen_layers *state, shs_v *grads);
void shs_gen_layers_free(shs_gen_layers *state);

/* Dot and its gradients: out = dot(lhs, rhs) with the dimension numbers of spec. */
typedef struct shs_gen_dot {
	shs_gdims lhs_batch, rhs_batch, lhs_contract, rhs_contract;
} shs_gen_dot;
shs_v shs_gen_dot_fwd(shs_gb *g, shs_v lhs, shs_v rhs, const shs_gen_dot *spec);
/* Emits d_lhs (when dlhs is not NULL) under scope part lhs_role and d_rhs under rhs_role, each
 * transposed back to its operand's dimension order. */
void shs_gen_dot_bwd(shs_gb *g, shs_v lhs, shs_v rhs, const shs_gen_dot *spec, shs_v dout,
		     shs_v *dlhs, const char *lhs_role, shs_v *drhs, const char *rhs_role);

/* Dropout (dropout.c), at rate x->cfg->dropout: the keep mask (pred) of an array of dims at
 * dropout site `site` (its seed), and v with the mask applied and the kept values scaled by
 * 1 / (1 - rate); the backward pass applies the same mask to the gradient. */
shs_v shs_gen_dropout_mask(shs_gen_ctx *x, shs_gdims dims, uint32_t site);
shs_v shs_gen_dropout_apply(shs_gen_ctx *x, shs_v v, shs_v mask);

/* p = softmax(s) over dim (max-subtracted); its backward d(s) from p and d(p). */
shs_v shs_gen_softmax(shs_gb *g, shs_v s, int64_t dim);
shs_v shs_gen_softmax_bwd(shs_gb *g, shs_v p, shs_v dp, int64_t dim);

/* Flash attention (flash.c): from qkv = {q [B,T,N,H], k [B,T,K,H], v [B,T,K,H]} returns
 * O [B,T,N,H] and sets *stats (f32 [B,N,T]); its backward from the saved qkv, stats and O and
 * dO [B,T,N,H] sets dqkv[0..3) like qkv. The kernel is x->cfg->attention_kernel's. */
shs_v shs_gen_flash_fwd(shs_gen_ctx *x, const shs_v *qkv, shs_v *stats);
void shs_gen_flash_bwd(shs_gen_ctx *x, const shs_v *qkv, shs_v stats, shs_v o, shs_v dout,
		       shs_v *dqkv);
/* FLOPs of one layer's flash forward (backward: its backward) kernel, unsharded. */
double shs_gen_flash_flops(const shs_gen_config *c, bool backward);

/* act = gate * logistic(gate) * up (SwiGLU); its backward sets *dgate and *dup. */
shs_v shs_gen_swiglu(shs_gb *g, shs_v gate, shs_v up);
void shs_gen_swiglu_bwd(shs_gb *g, shs_v gate, shs_v up, shs_v dact, shs_v *dgate, shs_v *dup);

/* RMSNorm over the last dim of x[..., D] with scale[D] (compute type in and out, math in f32). */
shs_v shs_gen_rms_fwd(shs_gen_ctx *x, shs_v in, shs_v scale);
/* Its backward: returns d_in, sets *dscale. */
shs_v shs_gen_rms_bwd(shs_gen_ctx *x, shs_v in, shs_v scale, shs_v dy, shs_v *dscale);

/* Attention and MLP parts of a layer. w points at the part's weights in compute type, in the
 * order of shs_gen_layer_weights; saved receives (fwd) or provides (bwd) the part's saved
 * activations; n_saved returns how many it uses. Attention's dropout of its probabilities
 * (dot attention with a dropout rate; the flash kernel drops inside) saves
 * shs_gen_attn_drop_saved more, in drop. */
enum { SHS_GEN_ATTN_SAVED = 5 };
uint32_t shs_gen_mlp_saved(const shs_gen_config *c);
uint32_t shs_gen_attn_drop_saved(const shs_gen_config *c);
shs_v shs_gen_attn_fwd(shs_gen_ctx *x, shs_v y, const shs_v *w, shs_v *saved, shs_v *drop);
shs_v shs_gen_attn_bwd(shs_gen_ctx *x, shs_v y, const shs_v *w, const shs_v *saved,
		       const shs_v *drop, shs_v dout, shs_v *dw);
shs_v shs_gen_mlp_fwd(shs_gen_ctx *x, shs_v y, const shs_v *w, shs_v *saved);
shs_v shs_gen_mlp_bwd(shs_gen_ctx *x, shs_v y, const shs_v *w, const shs_v *saved, shs_v dout,
		      shs_v *dw);
uint32_t shs_gen_moe_saved(const shs_gen_config *c);
shs_v shs_gen_moe_fwd(shs_gen_ctx *x, shs_v y, const shs_v *w, shs_v *saved);
shs_v shs_gen_moe_bwd(shs_gen_ctx *x, shs_v y, const shs_v *w, const shs_v *saved, shs_v dout,
		      shs_v *dw);

/* Softmax cross-entropy of logits = dot(y, unembedding) against targets: returns the mean loss
 * (f32 scalar) and sets *dy and *dw (compute type). tied: the table is [V, D], else [D, V]. */
shs_v shs_gen_loss(shs_gen_ctx *x, shs_v y, shs_v w, shs_v targets, shs_v *dy, shs_v *dw);

/* The squared error 0.5 * mean((out - target)^2) of the book's model; sets *dout. */
shs_v shs_gen_mse(shs_gen_ctx *x, shs_v out, shs_v target, shs_v *dout);

/* AdamW: the bias corrections 1 - b1^t and 1 - b2^t of step t = step + 1 and the gradient
 * clipping factor min(1, grad_clip / global norm of grads[n]) (parameter type), computed once;
 * then per parameter the new (param, mu, nu) into out[0..3). */
typedef struct shs_gen_adam {
	shs_v bc1, bc2, clip;
	bool clipped;
} shs_gen_adam;
void shs_gen_adam_prepare(shs_gen_ctx *x, shs_v step, const shs_v *grads, uint32_t n,
			  shs_gen_adam *out);
void shs_gen_adam_update(shs_gen_ctx *x, const shs_gen_adam *a, shs_v p, shs_v grad, shs_v mu,
			 shs_v nu, shs_v out[3]);

#endif
