/* The model generator: the HLO module of a transformer training step, as JAX jit writes it. */
#ifndef SHS_GEN_H
#define SHS_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"
#include "status.h"

/* What the layers hold. */
typedef enum shs_gen_kind {
	SHS_GEN_TRANSFORMER = 0, /* embedding, attention + MLP (or MoE) blocks, norms, vocab, loss */
	SHS_GEN_MLP_ONLY = 1     /* the book's model: L layers of In[B,D] . W_in[D,F] . W_out[F,D] */
} shs_gen_kind;

/* Where the weights live and what the matmuls run in. */
typedef enum shs_gen_dtype {
	SHS_GEN_BF16 = 0,       /* bf16 params, compute and optimizer state */
	SHS_GEN_F32_MASTER = 1  /* f32 params and Adam state, converted to bf16 for compute */
} shs_gen_dtype;

/* How attention runs: as the fused flash-attention kernel (one custom call forward, one
 * backward; no [B, N, T, T] tensor) or as plain dots and a materialised softmax. */
typedef enum shs_gen_attention {
	SHS_GEN_ATTN_FLASH = 0,
	SHS_GEN_ATTN_DOT = 1
} shs_gen_attention;

/* Which platform's flash kernel the custom calls name (same operands, results and cost):
 * Pallas splash attention as a TPU `tpu_custom_call`, or cuDNN's fused attention
 * (`__cudnn$fmhaSoftmax`, `__cudnn$fmhaSoftmaxBackward`) as JAX emits it for GPUs. */
typedef enum shs_gen_attn_kernel {
	SHS_GEN_KERNEL_PALLAS = 0,
	SHS_GEN_KERNEL_CUDNN = 1
} shs_gen_attn_kernel;

enum { SHS_GEN_NAME_MAX = 64 };

/* A model and its training step. Keys of --set and of a JSON config are the field names, except
 * kind, which comes from the preset. batch counts sequences of seq tokens; for mlp-only it counts
 * tokens and seq is 1. experts == 0 means dense MLP layers. */
typedef struct shs_gen_config {
	char name[SHS_GEN_NAME_MAX]; /* preset name or the config file's "name"; the module's name */
	shs_gen_kind kind;
	int64_t vocab, d_model, d_ff, layers;
	int64_t heads, kv_heads, head_dim;
	int64_t seq, batch;
	int64_t microbatches;     /* gradient accumulation: the batch as this many micro-batches,
				   * one while loop over them (1: none) */
	int64_t experts, top_k;
	int64_t shared_experts;   /* experts every token goes through besides its top_k (DeepSeekMoE):
				   * one dense MLP of shared_experts x d_ff in each MoE layer */
	double capacity_factor;   /* capacity = ceil(top_k * seq * capacity_factor / experts) */
	bool scan;                /* one while loop over layer-stacked weights, else L copies */
	bool gated_mlp;           /* SwiGLU (wi_0, wi_1, wo) rather than plain (wi, wo) with gelu */
	bool tied_embedding;      /* logits use the embedding table */
	shs_gen_dtype dtype;
	shs_gen_attention attention;          /* flash (the default) or dot */
	shs_gen_attn_kernel attention_kernel; /* pallas (the default) or cudnn; flash only */
	double norm_eps, learning_rate, adam_b1, adam_b2, adam_eps;
	double weight_decay;      /* AdamW's decoupled decay (0: plain Adam) */
	double dropout;           /* rate of dropout on the attention probabilities and on the
				   * attention and MLP outputs (Megatron-LM's 0.1; 0: none) */
	double grad_clip;         /* clip gradients to this global norm (0: no clipping) */
} shs_gen_config;

/* What the built module holds, measured on the module itself. */
typedef struct shs_gen_stats {
	double params;        /* elements of the model-parameter entry parameters */
	double matmul_params; /* of those, the ones some dot reads (not the input embedding) */
	double tokens;        /* per step: batch * seq */
	double flops;         /* dot FLOPs of one step, loops counted by trip count */
	double attention_flops; /* FLOPs of the flash-attention kernels (0 with attention=dot):
				 * 4 B N T^2 H forward halved by the causal mask, the backward
				 * 2.5 times the forward (shs_gen_flash_flops) */
	uint64_t instructions; /* over all computations */
	uint32_t computations;
} shs_gen_stats;

/* The names of the presets, NULL-terminated; static storage. */
const char *const *shs_gen_preset_names(void);

/* Fills *out with the preset named name and its default batch, seq and knobs.
 * Returns SHS_OK or SHS_EINVAL (e lists the preset names). */
int shs_gen_preset(const char *name, shs_gen_config *out, shs_err *e);

/* Sets one field from text, e.g. ("d_model", "8192"), ("scan", "true"), ("dtype", "bf16").
 * Returns SHS_OK or SHS_EINVAL naming the key and the bad value (unknown key, not a number,
 * out of range); *c is unchanged on error. */
int shs_gen_config_set(shs_gen_config *c, const char *key, const char *value, shs_err *e);

/* Reads a JSON config file: an object whose optional "preset" names the base (default: the
 * fields of *out as passed in) and whose other members are keys of shs_gen_config_set with JSON
 * numbers, booleans or strings. Errors name path and the member. Returns SHS_OK, SHS_EIO,
 * SHS_EPARSE or SHS_EINVAL; *out is unchanged on error. */
int shs_gen_config_load_json(const char *path, shs_gen_config *out, shs_err *e);

/* c as a JSON object (jansson's json_t; caller releases it with json_decref): "kind" and every
 * key of shs_gen_config_set with its value, numbers as numbers. NULL when out of memory. */
struct json_t;
struct json_t *shs_gen_config_json(const shs_gen_config *c);

/* Checks that c describes a buildable model: positive sizes, heads divisible by kv_heads,
 * top_k <= experts, every tensor of the step small enough to count in int64. Returns SHS_OK or
 * SHS_EINVAL naming the field. */
int shs_gen_config_check(const shs_gen_config *c, shs_err *e);

/* Builds the training step of c. On success *out is a new verified module (caller frees with
 * shs_module_free) and *stats (may be NULL) describes it. Returns SHS_OK, SHS_EINVAL (c fails
 * shs_gen_config_check) or SHS_ENOMEM. */
int shs_gen_module(const shs_gen_config *c, shs_module **out, shs_gen_stats *stats, shs_err *e)
	SHS_MUST_USE;

#endif
