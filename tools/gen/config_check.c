/* Whole-model checks of a config: positive sizes, consistent heads and experts, small tensors. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config_keys.h"

/* Layers a step may have: scanned (one loop, its size does not grow with them), and unrolled,
 * where each layer is its own forward and backward computations (about 1.2 MB of module in
 * memory a layer, measured on llama3-8b: 4096 layers take some 5 GB, 100000 would take 118 GB
 * and were built until the machine ran out). */
enum { MAX_LAYERS = 100000, MAX_UNROLLED_LAYERS = 4096, MAX_FACTORS = 6, PRODUCT_TEXT_MAX = 256 };

/* Largest size of one dimension, and the bound on the elements of one tensor. */
static const int64_t MAX_DIM = INT64_C(1) << 40;
static const int64_t MAX_ELEMENTS = INT64_C(1) << 62;

/* The sizes tensors are made of: the config's, plus the expert capacity it implies. */
typedef enum dim {
	D_VOCAB, D_MODEL, D_FF, D_LAYERS, D_HEADS, D_HEAD_DIM, D_SEQ, D_BATCH, D_EXPERTS,
	D_CAPACITY, N_DIMS
} dim;

static const char *const DIM_NAMES[N_DIMS] = {
	"vocab", "d_model", "d_ff", "layers", "heads", "head_dim", "seq", "batch", "experts",
	"capacity"
};

/* A tensor of the step (or a stack of them over layers) as a product of sizes. */
typedef struct tensor_rule {
	const char *what;
	bool moe; /* only in MoE models */
	uint32_t n;
	dim dims[MAX_FACTORS];
} tensor_rule;

static const tensor_rule TRANSFORMER_TENSORS[] = {
	{ "embedding", false, 2, { D_VOCAB, D_MODEL } },
	{ "activations", false, 3, { D_BATCH, D_SEQ, D_MODEL } },
	{ "logits", false, 3, { D_BATCH, D_SEQ, D_VOCAB } },
	{ "mlp hidden", false, 3, { D_BATCH, D_SEQ, D_FF } },
	{ "queries", false, 4, { D_BATCH, D_SEQ, D_HEADS, D_HEAD_DIM } },
	{ "attention scores", false, 4, { D_BATCH, D_HEADS, D_SEQ, D_SEQ } },
	{ "stacked mlp weights", false, 3, { D_LAYERS, D_MODEL, D_FF } },
	{ "stacked attention weights", false, 4, { D_LAYERS, D_MODEL, D_HEADS, D_HEAD_DIM } },
	{ "saved mlp hidden", false, 4, { D_LAYERS, D_BATCH, D_SEQ, D_FF } },
	{ "saved queries", false, 5, { D_LAYERS, D_BATCH, D_SEQ, D_HEADS, D_HEAD_DIM } },
	{ "saved attention scores", false, 5, { D_LAYERS, D_BATCH, D_HEADS, D_SEQ, D_SEQ } },
	{ "expert weights", true, 3, { D_EXPERTS, D_MODEL, D_FF } },
	{ "stacked expert weights", true, 4, { D_LAYERS, D_EXPERTS, D_MODEL, D_FF } },
	{ "dispatch mask", true, 4, { D_BATCH, D_SEQ, D_EXPERTS, D_CAPACITY } },
	{ "expert hidden", true, 4, { D_EXPERTS, D_BATCH, D_CAPACITY, D_FF } },
	{ "saved dispatch mask", true, 5, { D_LAYERS, D_BATCH, D_SEQ, D_EXPERTS, D_CAPACITY } },
	{ "saved expert hidden", true, 5, { D_LAYERS, D_EXPERTS, D_BATCH, D_CAPACITY, D_FF } },
};

/* In the MLP-only model batch counts tokens. */
static const tensor_rule MLP_ONLY_TENSORS[] = {
	{ "activations", false, 2, { D_BATCH, D_MODEL } },
	{ "mlp hidden", false, 2, { D_BATCH, D_FF } },
	{ "stacked mlp weights", false, 3, { D_LAYERS, D_MODEL, D_FF } },
	{ "saved mlp hidden", false, 3, { D_LAYERS, D_BATCH, D_FF } },
};

enum {
	N_TRANSFORMER_TENSORS = sizeof(TRANSFORMER_TENSORS) / sizeof(TRANSFORMER_TENSORS[0]),
	N_MLP_ONLY_TENSORS = sizeof(MLP_ONLY_TENSORS) / sizeof(MLP_ONLY_TENSORS[0])
};

/* A size of at least min and at most MAX_DIM. */
static int need_size(const char *field, int64_t v, int64_t min, shs_err *e)
{
	if (v < min)
		return shs_seterr(e, SHS_EINVAL, "%s must be >= %" PRId64 " (got %" PRId64 ")",
				  field, min, v);
	if (v > MAX_DIM)
		return shs_seterr(e, SHS_EINVAL, "%s must be <= 2^40 (got %" PRId64 ")", field, v);
	return SHS_OK;
}

/* A positive finite real, below 1 when below_one. */
static int need_positive(const char *field, double v, bool below_one, shs_err *e)
{
	if (!(v > 0 && isfinite(v)))
		return shs_seterr(e, SHS_EINVAL, "%s must be > 0 (got %g)", field, v);
	if (below_one && !(v < 1))
		return shs_seterr(e, SHS_EINVAL, "%s must be < 1 (got %g)", field, v);
	return SHS_OK;
}

static int check_header(const shs_gen_config *c, shs_err *e)
{
	if (c->kind != SHS_GEN_TRANSFORMER && c->kind != SHS_GEN_MLP_ONLY)
		return shs_seterr(e, SHS_EINVAL, "kind %d is not a model kind", (int)c->kind);
	if (c->dtype != SHS_GEN_BF16 && c->dtype != SHS_GEN_F32_MASTER)
		return shs_seterr(e, SHS_EINVAL, "dtype %d is not a dtype", (int)c->dtype);
	if (c->attention != SHS_GEN_ATTN_FLASH && c->attention != SHS_GEN_ATTN_DOT)
		return shs_seterr(e, SHS_EINVAL, "attention %d is not flash or dot",
				  (int)c->attention);
	if (c->attention_kernel != SHS_GEN_KERNEL_PALLAS &&
	    c->attention_kernel != SHS_GEN_KERNEL_CUDNN)
		return shs_seterr(e, SHS_EINVAL, "attention_kernel %d is not pallas or cudnn",
				  (int)c->attention_kernel);
	if (!memchr(c->name, '\0', sizeof(c->name)))
		return shs_seterr(e, SHS_EINVAL, "name is not NUL-terminated");
	if (shs__gen_name_check(c->name, e) != SHS_OK)
		return shs_err_prefix(e, "name");
	return SHS_OK;
}

/* The optimizer and norm constants: every kind has them. */
static int check_reals(const shs_gen_config *c, shs_err *e)
{
	int rc = need_positive("learning_rate", c->learning_rate, false, e);

	if (rc == SHS_OK)
		rc = need_positive("adam_b1", c->adam_b1, true, e);
	if (rc == SHS_OK)
		rc = need_positive("adam_b2", c->adam_b2, true, e);
	if (rc == SHS_OK)
		rc = need_positive("adam_eps", c->adam_eps, false, e);
	if (rc == SHS_OK)
		rc = need_positive("norm_eps", c->norm_eps, false, e);
	if (rc == SHS_OK && !(c->dropout >= 0 && c->dropout < 1))
		rc = shs_seterr(e, SHS_EINVAL, "dropout must be >= 0 and < 1 (got %g)", c->dropout);
	if (rc == SHS_OK && (c->microbatches < 1 || c->batch % c->microbatches))
		rc = shs_seterr(e, SHS_EINVAL, "microbatches must divide batch (%lld into %lld)",
				(long long)c->microbatches, (long long)c->batch);
	return rc;
}

static int check_layers(const shs_gen_config *c, shs_err *e)
{
	int rc = need_size("layers", c->layers, 1, e);

	if (rc == SHS_OK && c->layers > MAX_LAYERS)
		rc = shs_seterr(e, SHS_EINVAL, "layers must be <= %d (got %" PRId64 ")", MAX_LAYERS,
				c->layers);
	if (rc == SHS_OK && !c->scan && c->layers > MAX_UNROLLED_LAYERS)
		rc = shs_seterr(e, SHS_EINVAL, "layers must be <= %d unrolled (got %" PRId64 "): "
				"the module would take some %.0f GB to build; scan them (--scan) for "
				"more", MAX_UNROLLED_LAYERS, c->layers, 1.2e-3 * (double)c->layers);
	return rc;
}

static int check_transformer_sizes(const shs_gen_config *c, shs_err *e)
{
	const struct {
		const char *field;
		int64_t v, min;
	} sizes[] = {
		{ "vocab", c->vocab, 1 },     { "d_model", c->d_model, 1 },
		{ "d_ff", c->d_ff, 1 },       { "heads", c->heads, 1 },
		{ "kv_heads", c->kv_heads, 1 }, { "head_dim", c->head_dim, 1 },
		{ "seq", c->seq, 1 },         { "batch", c->batch, 1 },
		{ "experts", c->experts, 0 }, { "top_k", c->top_k, 0 },
	};
	int rc = check_layers(c, e);

	for (size_t i = 0; rc == SHS_OK && i < sizeof(sizes) / sizeof(sizes[0]); i++)
		rc = need_size(sizes[i].field, sizes[i].v, sizes[i].min, e);
	if (rc != SHS_OK)
		return rc;
	if (c->heads % c->kv_heads)
		return shs_seterr(e, SHS_EINVAL, "heads (%" PRId64 ") must be a multiple of "
				  "kv_heads (%" PRId64 ")", c->heads, c->kv_heads);
	return SHS_OK;
}

/* Experts, top_k and the capacity each expert takes per sequence (0 for dense models). */
static int check_experts(const shs_gen_config *c, int64_t *capacity, shs_err *e)
{
	double cap;

	*capacity = 0;
	if (c->shared_experts && !c->experts)
		return shs_seterr(e, SHS_EINVAL, "shared_experts needs experts (got %" PRId64
				  " shared experts and no routed ones)", c->shared_experts);
	if (!c->experts)
		return SHS_OK;
	if (c->experts < 2)
		return shs_seterr(e, SHS_EINVAL, "experts must be 0 (dense) or >= 2 "
				  "(got %" PRId64 ")", c->experts);
	if (c->top_k < 1 || c->top_k > c->experts)
		return shs_seterr(e, SHS_EINVAL,
				  "top_k must be in [1, experts (%" PRId64 ")] (got %" PRId64 ")",
				  c->experts, c->top_k);
	if (need_positive("capacity_factor", c->capacity_factor, false, e) != SHS_OK)
		return SHS_EINVAL;
	cap = ceil((double)c->top_k * (double)c->seq * c->capacity_factor / (double)c->experts);
	if (!(cap <= (double)MAX_DIM))
		return shs_seterr(e, SHS_EINVAL, "expert capacity ceil(top_k * seq * "
				  "capacity_factor / experts) = %g must be <= 2^40", cap);
	*capacity = (int64_t)cap;
	return SHS_OK;
}

/* "batch*seq*vocab = 2147483648*2147483648*32000" into buf. */
static void format_product(const tensor_rule *r, const int64_t *sizes, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < r->n && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "*" : "",
				      DIM_NAMES[r->dims[i]]);
	for (uint32_t i = 0; i < r->n && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? "*" : " = ",
				      sizes[r->dims[i]]);
}

static int check_tensors(const tensor_rule *rules, size_t n_rules, const int64_t *sizes,
			 bool moe, shs_err *e)
{
	for (size_t i = 0; i < n_rules; i++) {
		const tensor_rule *r = &rules[i];
		char product[PRODUCT_TEXT_MAX];
		int64_t elems = 1;
		bool over = false;

		if (r->moe && !moe)
			continue;
		for (uint32_t k = 0; k < r->n && !over; k++)
			over = __builtin_mul_overflow(elems, sizes[r->dims[k]], &elems);
		if (!over && elems < MAX_ELEMENTS)
			continue;
		format_product(r, sizes, product, sizeof(product));
		return shs_seterr(e, SHS_EINVAL, "%s tensor %s has 2^62 or more elements", r->what,
				  product);
	}
	return SHS_OK;
}

static int check_transformer(const shs_gen_config *c, shs_err *e)
{
	int64_t capacity;
	int rc = check_transformer_sizes(c, e);

	if (rc == SHS_OK)
		rc = check_experts(c, &capacity, e);
	if (rc == SHS_OK) {
		const int64_t sizes[N_DIMS] = {
			[D_VOCAB] = c->vocab,     [D_MODEL] = c->d_model,
			[D_FF] = c->d_ff,         [D_LAYERS] = c->layers,
			[D_HEADS] = c->heads,     [D_HEAD_DIM] = c->head_dim,
			[D_SEQ] = c->seq,         [D_BATCH] = c->batch,
			[D_EXPERTS] = c->experts, [D_CAPACITY] = capacity,
		};

		rc = check_tensors(TRANSFORMER_TENSORS, N_TRANSFORMER_TENSORS, sizes,
				   c->experts > 0, e);
	}
	return rc;
}

static int check_mlp_only(const shs_gen_config *c, shs_err *e)
{
	int rc = check_layers(c, e);

	if (rc == SHS_OK)
		rc = need_size("d_model", c->d_model, 1, e);
	if (rc == SHS_OK)
		rc = need_size("d_ff", c->d_ff, 1, e);
	if (rc == SHS_OK)
		rc = need_size("batch", c->batch, 1, e);
	if (rc == SHS_OK) {
		const int64_t sizes[N_DIMS] = {
			[D_MODEL] = c->d_model, [D_FF] = c->d_ff, [D_LAYERS] = c->layers,
			[D_BATCH] = c->batch,
		};

		rc = check_tensors(MLP_ONLY_TENSORS, N_MLP_ONLY_TENSORS, sizes, false, e);
	}
	return rc;
}

int shs_gen_config_check(const shs_gen_config *c, shs_err *e)
{
	int rc = check_header(c, e);

	if (rc == SHS_OK)
		rc = check_reals(c, e);
	if (rc != SHS_OK)
		return rc;
	if (c->kind == SHS_GEN_MLP_ONLY)
		return check_mlp_only(c, e);
	return check_transformer(c, e);
}
