/* The model presets: published dimensions of well-known models and the book's batch sizes. */
#include <stdio.h>
#include <string.h>

#include "gen.h"

/* Defaults shared by every preset (Adam as MaxText configures it for LLaMA-style models). */
static const double DEFAULT_CAPACITY_FACTOR = 1.25;
static const double DEFAULT_NORM_EPS = 1e-6;
static const double DEFAULT_LEARNING_RATE = 1e-4;
static const double DEFAULT_ADAM_B1 = 0.9;
static const double DEFAULT_ADAM_B2 = 0.95;
static const double DEFAULT_ADAM_EPS = 1e-8;
static const double DEFAULT_WEIGHT_DECAY = 0.1;
static const double DEFAULT_GRAD_CLIP = 1.0;

enum { PRESET_LIST_MAX = 512 };

/* What differs between presets; the rest comes from the defaults above. */
typedef struct preset {
	const char *name;
	shs_gen_kind kind;
	int64_t vocab, d_model, d_ff, layers;
	int64_t heads, kv_heads, head_dim;
	int64_t seq, batch;
	int64_t experts, top_k, shared_experts;
	bool gated_mlp, tied_embedding;
	shs_gen_dtype dtype;
} preset;

static const preset PRESETS[] = {
	/* LLaMA 2 13B; the book's worked problem: 3M tokens per step at 32k context. */
	{ .name = "llama2-13b", .kind = SHS_GEN_TRANSFORMER, .vocab = 32000, .d_model = 5120,
	  .d_ff = 13824, .layers = 40, .heads = 40, .kv_heads = 40, .head_dim = 128, .seq = 32768,
	  .batch = 96, .gated_mlp = true, .dtype = SHS_GEN_F32_MASTER },
	{ .name = "llama3-8b", .kind = SHS_GEN_TRANSFORMER, .vocab = 128256, .d_model = 4096,
	  .d_ff = 14336, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 128, .seq = 4096,
	  .batch = 1024, .gated_mlp = true, .dtype = SHS_GEN_F32_MASTER },
	/* The book's 4M-token batch: 1024 sequences of 4096. */
	{ .name = "llama3-70b", .kind = SHS_GEN_TRANSFORMER, .vocab = 128256, .d_model = 8192,
	  .d_ff = 28672, .layers = 80, .heads = 64, .kv_heads = 8, .head_dim = 128, .seq = 4096,
	  .batch = 1024, .gated_mlp = true, .dtype = SHS_GEN_F32_MASTER },
	{ .name = "llama3-405b", .kind = SHS_GEN_TRANSFORMER, .vocab = 128256, .d_model = 16384,
	  .d_ff = 53248, .layers = 126, .heads = 128, .kv_heads = 8, .head_dim = 128, .seq = 4096,
	  .batch = 1024, .gated_mlp = true, .dtype = SHS_GEN_F32_MASTER },
	/* GPT-3 paper: BPE vocabulary of 50257, 3.2M tokens per step, plain gelu MLP, tied. */
	{ .name = "gpt3-175b", .kind = SHS_GEN_TRANSFORMER, .vocab = 50257, .d_model = 12288,
	  .d_ff = 49152, .layers = 96, .heads = 96, .kv_heads = 96, .head_dim = 128, .seq = 2048,
	  .batch = 1536, .gated_mlp = false, .tied_embedding = true, .dtype = SHS_GEN_F32_MASTER },
	{ .name = "mixtral-8x7b", .kind = SHS_GEN_TRANSFORMER, .vocab = 32000, .d_model = 4096,
	  .d_ff = 14336, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 128, .seq = 4096,
	  .batch = 1024, .experts = 8, .top_k = 2, .gated_mlp = true,
	  .dtype = SHS_GEN_F32_MASTER },
	/* DeepSeekMoE 16B (Dai et al. 2024, "DeepSeekMoE", table: 28 layers, hidden 2048, 16 heads
	 * of 128, vocab 102400, 64 fine-grained routed experts of 1408 (a quarter of a standard
	 * FFN's split four ways), top-6, 2 shared experts, 4096 tokens a sequence); every layer is
	 * MoE here (the paper's first layer is dense) */
	{ .name = "deepseek-moe-16b", .kind = SHS_GEN_TRANSFORMER, .vocab = 102400,
	  .d_model = 2048, .d_ff = 1408, .layers = 28, .heads = 16, .kv_heads = 16,
	  .head_dim = 128, .seq = 4096, .batch = 1024, .experts = 64, .top_k = 6,
	  .shared_experts = 2, .gated_mlp = true, .dtype = SHS_GEN_F32_MASTER },
	/* The book's model and its mixed FSDP + tensor-parallel example: batch counts tokens. */
	{ .name = "mlp-only", .kind = SHS_GEN_MLP_ONLY, .d_model = 8192, .d_ff = 32768,
	  .layers = 64, .seq = 1, .batch = 48000, .dtype = SHS_GEN_BF16 },
};

enum { N_PRESETS = sizeof(PRESETS) / sizeof(PRESETS[0]) };

static const char *const PRESET_NAMES[] = {
	"llama2-13b", "llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b", "mixtral-8x7b",
	"deepseek-moe-16b", "mlp-only", NULL
};

_Static_assert(sizeof(PRESET_NAMES) / sizeof(PRESET_NAMES[0]) == N_PRESETS + 1,
	       "every preset is listed in PRESET_NAMES");

const char *const *shs_gen_preset_names(void)
{
	return PRESET_NAMES;
}

static void fill(const preset *p, shs_gen_config *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", p->name);
	out->kind = p->kind;
	out->vocab = p->vocab;
	out->d_model = p->d_model;
	out->d_ff = p->d_ff;
	out->layers = p->layers;
	out->heads = p->heads;
	out->kv_heads = p->kv_heads;
	out->head_dim = p->head_dim;
	out->seq = p->seq;
	out->batch = p->batch;
	out->experts = p->experts;
	out->top_k = p->top_k;
	out->shared_experts = p->shared_experts;
	out->capacity_factor = DEFAULT_CAPACITY_FACTOR;
	out->scan = false;
	out->gated_mlp = p->gated_mlp;
	out->tied_embedding = p->tied_embedding;
	out->dtype = p->dtype;
	/* Attention as training runs it: the fused flash kernel (MaxText's default on TPU is
	 * Pallas splash attention; on GPU JAX's cuDNN fused attention); attention=dot gives the
	 * materialised softmax. */
	out->attention = SHS_GEN_ATTN_FLASH;
	out->attention_kernel = SHS_GEN_KERNEL_PALLAS;
	out->norm_eps = DEFAULT_NORM_EPS;
	out->learning_rate = DEFAULT_LEARNING_RATE;
	out->adam_b1 = DEFAULT_ADAM_B1;
	out->adam_b2 = DEFAULT_ADAM_B2;
	out->adam_eps = DEFAULT_ADAM_EPS;
	out->weight_decay = DEFAULT_WEIGHT_DECAY;
	out->grad_clip = DEFAULT_GRAD_CLIP;
	out->microbatches = 1;
}

/* "a, b, c" of all preset names into buf. */
static void list_names(char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; PRESET_NAMES[i] && n < size; i++) {
		int k = snprintf(buf + n, size - n, "%s%s", i ? ", " : "", PRESET_NAMES[i]);

		if (k < 0)
			break;
		n += (size_t)k;
	}
}

int shs_gen_preset(const char *name, shs_gen_config *out, shs_err *e)
{
	char names[PRESET_LIST_MAX];

	for (size_t i = 0; name && i < N_PRESETS; i++) {
		if (!strcmp(PRESETS[i].name, name)) {
			fill(&PRESETS[i], out);
			return SHS_OK;
		}
	}
	list_names(names, sizeof(names));
	return shs_seterr(e, SHS_EINVAL, "unknown preset '%s' (presets: %s)",
			  name ? name : "(null)", names);
}
