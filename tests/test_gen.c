/* Tests: the generated training step: parameter counts, FLOPs, structure, hashes, round trips. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "gen.h"
#include "test_util.h"

/* Tolerances of the acceptance list: published totals, graph FLOPs, scanned vs unrolled. */
static const double PUBLISHED_TOL = 1e-3;
static const double FLOPS_TOL = 1e-2;
static const double SAME_FLOPS_TOL = 1e-9;
/* Closed forms and stats are integers far below 2^53: they must agree to rounding. */
static const double EXACT_TOL = 1e-12;

/* The small model the structural tests build (it needs at least 4 layers for layers_3). */
static const char *const SMALL_LAYERS = "2", *const SMALL_BATCH = "2", *const SMALL_SEQ = "64",
		  *const SMALL_VOCAB = "512", *const STRUCT_LAYERS = "4";
enum { STRUCT_L = 4, STRUCT_B = 2, STRUCT_T = 64 };

/* Weights per transformer layer besides the feed-forward ones: 2 norms, q, k, v, out. */
enum { ATTN_LAYER_WEIGHTS = 6, GATED_WEIGHTS = 3, PLAIN_WEIGHTS = 2 };
/* Entry: step, then params, mu, nu (P each), then inputs and targets; root adds the loss. */
enum { ENTRY_DATA_PARAMS = 2, ADAM_POWERS = 2 };

enum { NAME_LEN = 128 };

/* Asserts |got - want| <= tol * |want|, printing both and the relative error on failure. */
#define ASSERT_REL(got, want, tol)                                                          \
	do {                                                                                \
		double g_ = (got), w_ = (want), r_ = fabs(g_ - w_) / fabs(w_);                    \
		if (!(r_ <= (tol)))                                                             \
			fprintf(stderr, "\n  %s:%d: %s: got %.6e, want %.6e (relative %.3e > %g)\n", \
				__FILE__, __LINE__, #got, g_, w_, r_, (double)(tol));           \
		CU_ASSERT_TRUE_FATAL(r_ <= (tol));                                              \
	} while (0)

/* Asserts |got - want| <= abs_tol ("within rounding" of a published figure). */
#define ASSERT_NEAR(got, want, abs_tol)                                                     \
	do {                                                                                \
		double g_ = (got), w_ = (want);                                                   \
		if (!(fabs(g_ - w_) <= (abs_tol)))                                              \
			fprintf(stderr, "\n  %s:%d: %s: got %.6e, want %.6e +- %g\n", __FILE__,      \
				__LINE__, #got, g_, w_, (double)(abs_tol));                     \
		CU_ASSERT_TRUE_FATAL(fabs(g_ - w_) <= (abs_tol));                               \
	} while (0)

/* Published dimensions, written here independently of the presets. E = 0: dense. */
typedef struct dims {
	const char *preset;
	double L, D, F, N, K, H, V, E;
	bool gated, tied;
} dims;

static const dims LLAMA2_13B = { "llama2-13b", 40, 5120, 13824, 40, 40, 128, 32000, 0, true,
				 false };
static const dims LLAMA3_8B = { "llama3-8b", 32, 4096, 14336, 32, 8, 128, 128256, 0, true,
				false };
static const dims LLAMA3_70B = { "llama3-70b", 80, 8192, 28672, 64, 8, 128, 128256, 0, true,
				 false };
static const dims LLAMA3_405B = { "llama3-405b", 126, 16384, 53248, 128, 8, 128, 128256, 0,
				  true, false };
static const dims GPT3_175B = { "gpt3-175b", 96, 12288, 49152, 96, 96, 128, 50257, 0, false,
				true };
static const dims MIXTRAL = { "mixtral-8x7b", 32, 4096, 14336, 32, 8, 128, 32000, 8, true,
			      false };
static const dims MLP_ONLY = { "mlp-only", 64, 8192, 32768, 0, 0, 0, 0, 0, false, false };

/* Q and O are D x N x H, K and V are D x K x H, per layer. */
static double attn_params(const dims *d)
{
	return d->L * (2 * d->D * d->N * d->H + 2 * d->D * d->K * d->H);
}

/* Gated: wi_0, wi_1, wo; plain: wi, wo; MoE: E gated experts and a D x E router. */
static double ff_params(const dims *d)
{
	if (d->E > 0)
		return d->L * (d->E * 3 * d->D * d->F + d->D * d->E);
	return d->L * (d->gated ? 3 : 2) * d->D * d->F;
}

/* Input embedding V x D, and a separate D x V unembedding unless tied. */
static double vocab_params(const dims *d)
{
	return (d->tied ? 1 : 2) * d->V * d->D;
}

/* Two RMSNorm scales per layer and the final one. */
static double norm_params(const dims *d)
{
	return 2 * d->L * d->D + d->D;
}

static double total_params(const dims *d)
{
	return ff_params(d) + attn_params(d) + vocab_params(d) + norm_params(d);
}

/* All but the norm scales and, when untied, the input embedding (a gather, not a dot). */
static double matmul_params(const dims *d)
{
	return ff_params(d) + attn_params(d) + d->V * d->D;
}


static void set(shs_gen_config *c, const char *key, const char *value)
{
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_gen_config_set(c, key, value, &e), &e);
}

/* The structural tests' size: few layers, small batch, short sequences, small vocabulary. */
static void shrink(shs_gen_config *c, const char *layers)
{
	set(c, "layers", layers);
	set(c, "batch", SMALL_BATCH);
	if (c->kind == SHS_GEN_TRANSFORMER) {
		set(c, "seq", SMALL_SEQ);
		set(c, "vocab", SMALL_VOCAB);
	}
}

/* Builds c, failing the test with the generator's message on error. */
static shs_module *build(const shs_gen_config *c, shs_gen_stats *st)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_gen_module(c, &m, st, &e);

	if (rc != SHS_OK)
		fprintf(stderr, "\n  gen %s (scan=%d): %s: %s\n", c->name, c->scan, shs_strerror(rc),
			e.msg);
	SHS_ASSERT_OK(rc, &e);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	return m;
}

/* ---- 1. parameter counts against closed forms ---- */

/* Builds preset d at batch 1 and a short sequence and checks both parameter counts. */
static void params_match(const dims *d)
{
	shs_gen_config c = shs_test_preset(d->preset);
	shs_gen_stats st;
	shs_module *m;

	set(&c, "batch", "1");
	if (c.kind == SHS_GEN_TRANSFORMER)
		set(&c, "seq", SMALL_SEQ);
	m = build(&c, &st);
	ASSERT_REL(st.params, total_params(d), EXACT_TOL);
	ASSERT_REL(st.matmul_params, matmul_params(d), EXACT_TOL);
	shs_module_free(m);
}

static void llama3_70b_params(void)
{
	const dims *d = &LLAMA3_70B;
	double closed = 3 * d->L * d->D * d->F +
			d->L * (2 * d->D * d->N * d->H + 2 * d->D * d->K * d->H) + 2 * d->V * d->D;

	ASSERT_REL(closed, 70.55e9, PUBLISHED_TOL);
	ASSERT_REL(total_params(d), closed + 2 * d->L * d->D + d->D, EXACT_TOL);
	params_match(d);
}

static void llama2_13b_params(void)
{
	const dims *d = &LLAMA2_13B;

	/* the book's parts, each to the rounding it is quoted with */
	ASSERT_NEAR(3 * d->L * d->D * d->F, 8.5e9, 0.05e9);
	ASSERT_NEAR(4 * d->D * d->N * d->H * d->L, 4.2e9, 0.05e9);
	ASSERT_NEAR(2 * d->V * d->D, 0.33e9, 0.005e9);
	ASSERT_NEAR(total_params(d), 13.0e9, 0.05e9);
	params_match(d);
}

static void llama3_8b_params(void)
{
	ASSERT_REL(total_params(&LLAMA3_8B), 8.03e9, PUBLISHED_TOL);
	params_match(&LLAMA3_8B);
}

static void llama3_405b_params(void)
{
	params_match(&LLAMA3_405B);
}

static void gpt3_175b_params(void)
{
	const dims *d = &GPT3_175B;

	/* plain MLP 2DF, N = K so attention is 4DNH, tied embedding VD */
	ASSERT_REL(total_params(d), 2 * d->L * d->D * d->F + 4 * d->L * d->D * d->N * d->H +
					    d->V * d->D + norm_params(d), EXACT_TOL);
	params_match(d);
}

static void mixtral_params(void)
{
	ASSERT_REL(total_params(&MIXTRAL), 46.7e9, PUBLISHED_TOL);
	params_match(&MIXTRAL);
}

static void mlp_only_params(void)
{
	const dims *d = &MLP_ONLY;
	shs_gen_config c = shs_test_preset(d->preset);
	shs_gen_stats st;
	shs_module *m;

	set(&c, "batch", "1");
	m = build(&c, &st);
	ASSERT_REL(st.params, 2 * d->L * d->D * d->F, EXACT_TOL);
	ASSERT_REL(st.matmul_params, 2 * d->L * d->D * d->F, EXACT_TOL);
	shs_module_free(m);
}

/* ---- 2. training FLOPs from the graph's dots ---- */

/* The dot FLOPs: 6 P T for the matmuls; with attention=dot also 12 B T^2 N H L for scores and
 * context (no causal discount: the dots compute the masked half too). */
static double expected_flops(const shs_gen_config *c, double matmul)
{
	double B = (double)c->batch, T = (double)c->seq;

	if (c->kind == SHS_GEN_MLP_ONLY)
		return 6 * matmul * B;
	if (c->attention == SHS_GEN_ATTN_FLASH)
		return 6 * matmul * B * T;
	return 6 * matmul * B * T +
	       12 * B * T * T * (double)c->heads * (double)c->head_dim * (double)c->layers;
}

/* The flash kernels' FLOPs (FlashAttention-2, Dao 2023, 4.1): forward 4 B N T^2 H, backward
 * 2.5 times that, both halved by the causal mask: 7 B T^2 N H L. */
static double expected_attention_flops(const shs_gen_config *c)
{
	double B = (double)c->batch, T = (double)c->seq;

	if (c->kind == SHS_GEN_MLP_ONLY || c->attention == SHS_GEN_ATTN_DOT)
		return 0;
	return 7 * B * T * T * (double)c->heads * (double)c->head_dim * (double)c->layers;
}

/* Builds c, checks its FLOPs and that every loop's trip count was found; returns the FLOPs. */
static double flops_of(const shs_gen_config *c)
{
	shs_gen_stats st;
	shs_module *m = build(c, &st);
	uint32_t unknown = 1;
	double graph = shs_comp_dot_flops(m, shs_module_entry(m), &unknown);
	double tokens = (double)c->batch * (c->kind == SHS_GEN_MLP_ONLY ? 1 : (double)c->seq);
	double attn = expected_attention_flops(c);

	SHS_ASSERT_INT_EQ(unknown, 0);
	ASSERT_REL(st.flops, graph, EXACT_TOL);
	ASSERT_REL(st.tokens, tokens, EXACT_TOL);
	ASSERT_REL(st.flops, expected_flops(c, st.matmul_params), FLOPS_TOL);
	if (attn > 0)
		ASSERT_REL(st.attention_flops, attn, EXACT_TOL);
	else
		CU_ASSERT_EQUAL(st.attention_flops, 0);
	shs_module_free(m);
	return graph;
}

/* At the preset's own batch and seq: the formula, unrolled and scanned, and the two agree; for
 * transformers with flash attention (the default) and with attention=dot. */
static void flops_match(const char *name)
{
	shs_gen_config c = shs_test_preset(name);
	double unrolled, scanned;

	unrolled = flops_of(&c);
	set(&c, "scan", "true");
	scanned = flops_of(&c);
	ASSERT_REL(scanned, unrolled, SAME_FLOPS_TOL);
	if (c.kind != SHS_GEN_TRANSFORMER)
		return;
	set(&c, "attention", "dot");
	scanned = flops_of(&c);
	set(&c, "scan", "false");
	unrolled = flops_of(&c);
	ASSERT_REL(scanned, unrolled, SAME_FLOPS_TOL);
}

static void llama2_13b_flops(void)
{
	flops_match("llama2-13b");
}

static void llama3_8b_flops(void)
{
	flops_match("llama3-8b");
}

static void llama3_70b_flops(void)
{
	flops_match("llama3-70b");
}

static void llama3_405b_flops(void)
{
	flops_match("llama3-405b");
}

static void gpt3_175b_flops(void)
{
	flops_match("gpt3-175b");
}

static void mlp_only_flops(void)
{
	flops_match("mlp-only");
}

/* ---- 3. structural hash: one distinct layer body ---- */

/* True when name is base "." followed by digits only (the builder's ".ID" suffix). */
static bool named(const char *name, const char *base)
{
	size_t n = strlen(base);
	const char *p = name + n + 1;

	if (strncmp(name, base, n) || name[n] != '.' || !*p)
		return false;
	for (; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

static uint32_t count_prefix(const shs_module *m, const char *prefix)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < m->n_comps; k++)
		n += !strncmp(m->comps[k]->name, prefix, strlen(prefix));
	return n;
}

static uint32_t count_op(const shs_computation *c, shs_opcode op)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < c->n_instrs; k++)
		n += c->instrs[k]->op == op;
	return n;
}

/* Index of the computation named base.ID; fails the test when there is none. */
static uint32_t find_named(const shs_module *m, const char *base)
{
	for (uint32_t k = 0; k < m->n_comps; k++)
		if (named(m->comps[k]->name, base))
			return k;
	fprintf(stderr, "\n  no computation named %s.ID\n", base);
	CU_FAIL_FATAL("computation missing");
	return 0;
}

static uint64_t *hashes(const shs_module *m)
{
	uint64_t *h = calloc(m->n_comps, sizeof(*h));
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	SHS_ASSERT_OK(shs_module_hash(m, h, &e), &e);
	return h;
}

static shs_module *small_llama(bool scan, const char *layers)
{
	shs_gen_config c = shs_test_preset("llama3-8b");

	shrink(&c, layers);
	set(&c, "scan", scan ? "true" : "false");
	return build(&c, NULL);
}

static void scanned_has_one_layer_body(void)
{
	shs_module *m = small_llama(true, STRUCT_LAYERS);

	SHS_ASSERT_INT_EQ(count_prefix(m, "layers.fwd.body"), 1);
	SHS_ASSERT_INT_EQ(count_prefix(m, "layers.bwd.body"), 1);
	SHS_ASSERT_INT_EQ(count_prefix(m, "layers_"), 0);
	SHS_ASSERT_INT_EQ(count_op(shs_module_entry(m), SHS_OP_WHILE), 2);
	/* each body calls the one layer computation of its direction */
	SHS_ASSERT_INT_EQ(count_op(m->comps[find_named(m, "layers.fwd.body")], SHS_OP_CALL), 1);
	SHS_ASSERT_INT_EQ(count_op(m->comps[find_named(m, "layers.bwd.body")], SHS_OP_CALL), 1);
	find_named(m, "layers.fwd");
	find_named(m, "layers.bwd");
	shs_module_free(m);
}

static void unrolled_layers_hash_alike(void)
{
	shs_module *m = small_llama(false, STRUCT_LAYERS), *s = small_llama(true, STRUCT_LAYERS);
	uint64_t *h = hashes(m), *hs = hashes(s);
	uint64_t fwd[STRUCT_L], bwd[STRUCT_L];
	char base[NAME_LEN];

	for (int l = 0; l < STRUCT_L; l++) {
		snprintf(base, sizeof(base), "layers_%d.fwd", l);
		fwd[l] = h[find_named(m, base)];
		snprintf(base, sizeof(base), "layers_%d.bwd", l);
		bwd[l] = h[find_named(m, base)];
	}
	SHS_ASSERT_INT_EQ(count_prefix(m, "layers_"), 2 * STRUCT_L);
	for (int l = 1; l < STRUCT_L; l++) {
		CU_ASSERT_EQUAL_FATAL(fwd[l], fwd[0]);
		CU_ASSERT_EQUAL_FATAL(bwd[l], bwd[0]);
	}
	CU_ASSERT_NOT_EQUAL_FATAL(fwd[0], bwd[0]);
	/* the scanned form's layer is the same body as every unrolled one */
	CU_ASSERT_EQUAL_FATAL(hs[find_named(s, "layers.fwd")], fwd[0]);
	CU_ASSERT_EQUAL_FATAL(hs[find_named(s, "layers.bwd")], bwd[0]);
	free(h);
	free(hs);
	shs_module_free(m);
	shs_module_free(s);
}

/* ---- 4. every preset generates, verifies and round-trips ---- */

static void assert_same_ir(const shs_module *x, const shs_module *y, const char *what,
			   const shs_gen_config *c)
{
	shs_buf why = { 0 };
	bool same = shs_module_equal(x, y, &why);

	if (!same)
		fprintf(stderr, "\n  %s (scan=%d): %s: %s\n", c->name, c->scan, what,
			why.data ? why.data : "?");
	shs_buf_free(&why);
	CU_ASSERT_TRUE_FATAL(same);
}

/* IR -> proto -> IR; IR -> text -> IR (printing the same text again); and the proto of the
 * text-read IR is the same bytes. */
static void round_trip_module(const shs_module *m, const shs_gen_config *c)
{
	shs_module *from_pb = NULL, *from_text = NULL;
	uint8_t *pb = NULL, *pb2 = NULL;
	size_t len = 0, len2 = 0;
	shs_buf text = { 0 }, again = { 0 };
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_module_verify(m, &e), &e);
	SHS_ASSERT_OK(shs_proto_save(m, false, &pb, &len, &e), &e);
	SHS_ASSERT_OK(shs_proto_load(pb, len, "gen.pb", &from_pb, &e), &e);
	assert_same_ir(m, from_pb, "IR -> proto -> IR", c);
	SHS_ASSERT_OK(shs_module_verify(from_pb, &e), &e);

	shs_text_print(&text, m, NULL);
	CU_ASSERT_FALSE_FATAL(text.oom);
	CU_ASSERT_TRUE_FATAL(text.len > 0);
	SHS_ASSERT_OK(shs_text_load(text.data, text.len, "gen.hlo", &from_text, &e), &e);
	SHS_ASSERT_OK(shs_module_verify(from_text, &e), &e);
	shs_text_print(&again, from_text, NULL);
	SHS_ASSERT_INT_EQ(again.len, text.len);
	CU_ASSERT_EQUAL_FATAL(memcmp(again.data, text.data, text.len), 0);
	assert_same_ir(m, from_text, "IR -> text -> IR", c);

	SHS_ASSERT_OK(shs_proto_save(from_text, false, &pb2, &len2, &e), &e);
	SHS_ASSERT_INT_EQ(len2, len);
	CU_ASSERT_EQUAL_FATAL(memcmp(pb, pb2, len), 0);

	shs_module_free(from_pb);
	shs_module_free(from_text);
	shs_buf_free(&text);
	shs_buf_free(&again);
	free(pb);
	free(pb2);
}

/* One preset in one form, shrunk: builds, verifies and round-trips. */
static void round_trips(const char *name, bool scan)
{
	shs_gen_config c = shs_test_preset(name);
	shs_module *m;

	shrink(&c, SMALL_LAYERS);
	set(&c, "scan", scan ? "true" : "false");
	m = build(&c, NULL);
	round_trip_module(m, &c);
	shs_module_free(m);
}

/* A test function per preset and form, so that each failure is reported on its own. */
#define ROUND_TRIP_TEST(fn, name, scan) \
	static void fn(void)            \
	{                               \
		round_trips(name, scan);    \
	}

ROUND_TRIP_TEST(llama2_13b_round_trips, "llama2-13b", false)
ROUND_TRIP_TEST(llama2_13b_scan_round_trips, "llama2-13b", true)
ROUND_TRIP_TEST(llama3_8b_round_trips, "llama3-8b", false)
ROUND_TRIP_TEST(llama3_8b_scan_round_trips, "llama3-8b", true)
ROUND_TRIP_TEST(llama3_70b_round_trips, "llama3-70b", false)
ROUND_TRIP_TEST(llama3_70b_scan_round_trips, "llama3-70b", true)
ROUND_TRIP_TEST(llama3_405b_round_trips, "llama3-405b", false)
ROUND_TRIP_TEST(llama3_405b_scan_round_trips, "llama3-405b", true)
ROUND_TRIP_TEST(gpt3_175b_round_trips, "gpt3-175b", false)
ROUND_TRIP_TEST(gpt3_175b_scan_round_trips, "gpt3-175b", true)
ROUND_TRIP_TEST(mixtral_round_trips, "mixtral-8x7b", false)
ROUND_TRIP_TEST(mixtral_scan_round_trips, "mixtral-8x7b", true)
ROUND_TRIP_TEST(mlp_only_round_trips, "mlp-only", false)
ROUND_TRIP_TEST(mlp_only_scan_round_trips, "mlp-only", true)

/* ---- 5. structure: entry signature, aliases, metadata, dtypes ---- */

/* Model weights of a llama-style (gated, untied, dense) config with layer tensors. */
static uint32_t llama_weights(uint32_t layer_tensors)
{
	/* embedding, final norm and unembedding around the layers */
	return 3 + layer_tensors * (ATTN_LAYER_WEIGHTS + GATED_WEIGHTS);
}

/* The entry parameter numbered k; fails the test when absent. */
static const shs_instr *entry_param(const shs_module *m, int64_t k)
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER && c->instrs[i]->parameter_number == k)
			return c->instrs[i];
	fprintf(stderr, "\n  entry has no parameter %lld\n", (long long)k);
	CU_FAIL_FATAL("parameter missing");
	return NULL;
}

/* Step, params, mu, nu, inputs, targets in; step, params, mu, nu, loss out; aliases k -> k. */
static void check_signature(const shs_module *m, uint32_t P)
{
	const shs_computation *c = shs_module_entry(m);
	const shs_instr *root = c->instrs[c->root];
	uint32_t n_state = 1 + 3 * P;

	SHS_ASSERT_INT_EQ(count_op(c, SHS_OP_PARAMETER), n_state + ENTRY_DATA_PARAMS);
	SHS_ASSERT_INT_EQ(root->op, SHS_OP_TUPLE);
	SHS_ASSERT_INT_EQ(root->n_operands, n_state + 1);
	SHS_ASSERT_INT_EQ(root->shape.n_tuple, n_state + 1);
	SHS_ASSERT_INT_EQ(m->n_aliases, n_state);
	for (uint32_t k = 0; k < n_state; k++) {
		const shs_alias *a = &m->aliases[k];
		SHS_ASSERT_INT_EQ(a->output_index.n, 1);
		SHS_ASSERT_INT_EQ(a->output_index.v[0], k);
		SHS_ASSERT_INT_EQ(a->param_number, k);
		SHS_ASSERT_INT_EQ(a->param_index.n, 0);
		/* what is written back has the shape of what was read */
		CU_ASSERT_TRUE_FATAL(shs_shape_compatible(&root->shape.tuple[k],
							  &entry_param(m, k)->shape));
	}
	SHS_ASSERT_INT_EQ(entry_param(m, 0)->shape.type, SHS_S32);
	SHS_ASSERT_INT_EQ(entry_param(m, 0)->shape.rank, 0);
	SHS_ASSERT_INT_EQ(root->shape.tuple[n_state].rank, 0); /* the loss */
}

static void every_op_name_under_train_step(const shs_module *m)
{
	static const char prefix[] = "train_step/";

	for (uint32_t k = 0; k < m->n_comps; k++) {
		const shs_computation *c = m->comps[k];
		for (uint32_t i = 0; i < c->n_instrs; i++) {
			const shs_metadata *md = c->instrs[i]->metadata;
			bool ok = md && md->op_name && !strncmp(md->op_name, prefix, strlen(prefix));
			if (!ok)
				fprintf(stderr, "\n  %s: %s: op_name \"%s\"\n", c->name,
					c->instrs[i]->name,
					md && md->op_name ? md->op_name : "(none)");
			CU_ASSERT_TRUE_FATAL(ok);
		}
	}
}

/* The instruction with opcode op and exactly this op_name, anywhere; NULL when none. */
static const shs_instr *find_op_name(const shs_module *m, shs_opcode op, const char *op_name)
{
	for (uint32_t k = 0; k < m->n_comps; k++)
		for (uint32_t i = 0; i < m->comps[k]->n_instrs; i++) {
			const shs_instr *in = m->comps[k]->instrs[i];
			if (in->op == op && in->metadata && in->metadata->op_name &&
			    !strcmp(in->metadata->op_name, op_name))
				return in;
		}
	return NULL;
}

/* The entry parameter whose op_name mentions path and whose name starts with it dotted;
 * fails the test when there is none. */
static const shs_instr *named_param(const shs_module *m, const char *path)
{
	const shs_computation *c = shs_module_entry(m);
	char dotted[NAME_LEN];

	snprintf(dotted, sizeof(dotted), "%s", path);
	for (char *p = dotted; *p; p++)
		*p = *p == '/' ? '.' : *p;
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		if (in->op == SHS_OP_PARAMETER && in->metadata && in->metadata->op_name &&
		    strstr(in->metadata->op_name, path) && !strncmp(in->name, dotted, strlen(dotted)))
			return in;
	}
	fprintf(stderr, "\n  no entry parameter named %s / with op_name mentioning %s\n", dotted,
		path);
	CU_FAIL_FATAL("parameter name missing");
	return NULL;
}

static void unrolled_structure(void)
{
	shs_module *m = small_llama(false, STRUCT_LAYERS);
	const shs_instr *in;

	check_signature(m, llama_weights(STRUCT_L));
	every_op_name_under_train_step(m);
	CU_ASSERT_PTR_NOT_NULL(find_op_name(m, SHS_OP_DOT, "train_step/layers_3/mlp/wi_0/grad/dot"));
	CU_ASSERT_PTR_NOT_NULL(find_op_name(m, SHS_OP_DOT, "train_step/layers_0/mlp/wo/dot"));
	named_param(m, "params/layers_0/self_attention/query");
	named_param(m, "opt_state/mu/layers_3/mlp/wi_0");
	/* the data: s32[B, T] token ids */
	in = entry_param(m, 1 + 3 * (int64_t)llama_weights(STRUCT_L));
	SHS_ASSERT_INT_EQ(in->shape.type, SHS_S32);
	SHS_ASSERT_INT_EQ(in->shape.rank, 2);
	SHS_ASSERT_INT_EQ(in->shape.dims[0], STRUCT_B);
	SHS_ASSERT_INT_EQ(in->shape.dims[1], STRUCT_T);
	shs_module_free(m);
}

static void scanned_structure(void)
{
	shs_module *m = small_llama(true, STRUCT_LAYERS);
	const shs_instr *q;

	check_signature(m, llama_weights(1));
	every_op_name_under_train_step(m);
	CU_ASSERT_PTR_NOT_NULL(find_op_name(m, SHS_OP_DOT, "train_step/layers/mlp/wi_0/grad/dot"));
	/* stacked on a leading layer dim: [L, D, N, H] */
	q = named_param(m, "params/layers/self_attention/query");
	SHS_ASSERT_INT_EQ(q->shape.rank, 4);
	SHS_ASSERT_INT_EQ(q->shape.dims[0], STRUCT_L);
	shs_module_free(m);
}

static void mlp_only_structure(void)
{
	shs_gen_config c = shs_test_preset("mlp-only");
	shs_module *m;

	shrink(&c, STRUCT_LAYERS);
	m = build(&c, NULL);
	check_signature(m, PLAIN_WEIGHTS * STRUCT_L);
	every_op_name_under_train_step(m);
	CU_ASSERT_PTR_NOT_NULL(find_op_name(m, SHS_OP_DOT, "train_step/layers_3/mlp/wi/grad/dot"));
	shs_module_free(m);
}

/* Model weights and their mu and nu (entry parameters 1 .. 3P) all have type want. */
static void weights_typed(const shs_module *m, uint32_t P, int32_t want)
{
	for (uint32_t k = 1; k <= 3 * P; k++) {
		const shs_instr *p = entry_param(m, k);
		if (p->shape.type != want)
			fprintf(stderr, "\n  %s: %s, want %s\n", p->name,
				shs_elem_name(p->shape.type), shs_elem_name(want));
		CU_ASSERT_EQUAL_FATAL(p->shape.type, want);
	}
}

/* Every dot of the module reads and writes bf16. */
static void dots_bf16(const shs_module *m)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < m->n_comps; k++) {
		const shs_computation *c = m->comps[k];
		for (uint32_t i = 0; i < c->n_instrs; i++) {
			const shs_instr *d = c->instrs[i];
			if (d->op != SHS_OP_DOT)
				continue;
			n++;
			SHS_ASSERT_INT_EQ(d->n_operands, 2);
			bool ok = d->shape.type == SHS_BF16 &&
				  c->instrs[d->operands[0]]->shape.type == SHS_BF16 &&
				  c->instrs[d->operands[1]]->shape.type == SHS_BF16;
			if (!ok)
				fprintf(stderr, "\n  %s: %s is not bf16 x bf16 -> bf16\n", c->name,
					d->name);
			CU_ASSERT_TRUE_FATAL(ok);
		}
	}
	CU_ASSERT_TRUE_FATAL(n > 0);
}

static void dtypes(void)
{
	shs_gen_config c = shs_test_preset("llama3-8b");
	uint32_t P = llama_weights(STRUCT_L);
	shs_module *m;

	shrink(&c, STRUCT_LAYERS);
	SHS_ASSERT_INT_EQ(c.dtype, SHS_GEN_F32_MASTER);
	m = build(&c, NULL);
	weights_typed(m, P, SHS_F32);
	dots_bf16(m);
	shs_module_free(m);

	set(&c, "dtype", "bf16");
	m = build(&c, NULL);
	weights_typed(m, P, SHS_BF16);
	dots_bf16(m);
	shs_module_free(m);
}

/* ---- flash attention ---- */

/* Array leaves of s with two or more dims equal to t (a [.., T, .., T] tensor). */
static uint32_t square_leaves(const shs_shape *s, int64_t t)
{
	uint32_t n = 0, eq = 0;

	if (s->type == SHS_TUPLE) {
		for (uint32_t k = 0; k < s->n_tuple; k++)
			n += square_leaves(&s->tuple[k], t);
		return n;
	}
	for (uint32_t d = 0; d < s->rank; d++)
		eq += s->dims[d] == t;
	return eq >= 2;
}

/* With attention=flash (the default) no array of the step is [.., T, .., T], the layer's
 * forward saves the f32 statistics [B, N, T] and O [B, T, N, H] (no probabilities), and each
 * layer body holds one forward and one backward kernel; attention=dot has the [B, K, T, G, T]
 * scores. Both kernels, scanned and unrolled. */
static void flash_has_no_scores(void)
{
	static const char *const kernels[] = { "pallas", "cudnn" };

	for (int k = 0; k < 2; k++) {
		for (int scan = 0; scan < 2; scan++) {
			shs_gen_config c = shs_test_preset("llama3-8b");
			shs_module *m;
			uint32_t squares = 0, calls = 0, stats = 0;

			shrink(&c, SMALL_LAYERS);
			set(&c, "attention_kernel", kernels[k]);
			set(&c, "scan", scan ? "true" : "false");
			SHS_ASSERT_INT_EQ(c.attention, SHS_GEN_ATTN_FLASH);
			m = build(&c, NULL);
			for (uint32_t j = 0; j < m->n_comps; j++) {
				const shs_computation *comp = m->comps[j];
				const shs_instr *root = comp->instrs[comp->root];

				for (uint32_t i = 0; i < comp->n_instrs; i++) {
					squares += square_leaves(&comp->instrs[i]->shape, c.seq);
					calls += comp->instrs[i]->op == SHS_OP_CUSTOM_CALL;
				}
				/* the forward layer's saved values: one f32 [B, N, T] */
				if (strstr(comp->name, ".fwd") && !strstr(comp->name, "body") &&
				    root->shape.type == SHS_TUPLE)
					for (uint32_t t = 0; t < root->shape.n_tuple; t++) {
						const shs_shape *l = &root->shape.tuple[t];

						stats += l->type == SHS_F32 && l->rank == 3 &&
							 l->dims[0] == c.batch &&
							 l->dims[1] == c.heads && l->dims[2] == c.seq;
					}
			}
			SHS_ASSERT_INT_EQ(squares, 0);
			SHS_ASSERT_INT_EQ(calls, scan ? 2 : 2 * 2);
			SHS_ASSERT_INT_EQ(stats, scan ? 1 : 2);
			shs_module_free(m);

			set(&c, "attention", "dot");
			m = build(&c, NULL);
			for (uint32_t j = 0; j < m->n_comps; j++)
				for (uint32_t i = 0; i < m->comps[j]->n_instrs; i++)
					squares += square_leaves(&m->comps[j]->instrs[i]->shape, c.seq);
			CU_ASSERT_TRUE(squares > 0);
			shs_module_free(m);
		}
	}
}

/* ---- 6. a config that cannot be built ---- */

static void bad_heads_rejected(void)
{
	shs_gen_config c = shs_test_preset("llama3-8b");
	shs_module sentinel, *m = &sentinel;
	shs_err e = { 0 };

	shrink(&c, SMALL_LAYERS);
	c.heads = 40;
	c.kv_heads = 6;
	SHS_ASSERT_INT_EQ(shs_gen_module(&c, &m, NULL, &e), SHS_EINVAL);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "kv_heads"));
}

/* ---- 7. Adam ---- */

static uint32_t count_op_under(const shs_computation *c, shs_opcode op, const char *prefix)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < c->n_instrs; k++) {
		const shs_metadata *md = c->instrs[k]->metadata;
		n += c->instrs[k]->op == op && md && md->op_name &&
		     !strncmp(md->op_name, prefix, strlen(prefix));
	}
	return n;
}

/* Two bias corrections for the whole step, one sqrt per model weight, and one more for the
 * global gradient norm when clipping. */
static void adam_ops(const shs_module *m, uint32_t P, bool clipped)
{
	const shs_computation *c = shs_module_entry(m);
	uint32_t clip = clipped ? 1 : 0;

	SHS_ASSERT_INT_EQ(count_op(c, SHS_OP_POWER), ADAM_POWERS);
	SHS_ASSERT_INT_EQ(count_op_under(c, SHS_OP_SQRT, "train_step/optimizer/clip/"), clip);
	SHS_ASSERT_INT_EQ(count_op(c, SHS_OP_SQRT), P + clip);
}

/* The llama config of the structural tests, with gradient clipping on or off. */
static shs_module *small_llama_clip(bool scan, bool clip)
{
	shs_gen_config c = shs_test_preset("llama3-8b");

	shrink(&c, STRUCT_LAYERS);
	set(&c, "scan", scan ? "true" : "false");
	if (!clip)
		set(&c, "grad_clip", "0");
	CU_ASSERT_EQUAL_FATAL(c.grad_clip > 0, clip);
	return build(&c, NULL);
}

static void adam_sanity(void)
{
	shs_gen_config c = shs_test_preset("mlp-only");
	shs_module *m;

	for (int clip = 0; clip < 2; clip++) {
		m = small_llama_clip(false, clip);
		adam_ops(m, llama_weights(STRUCT_L), clip);
		shs_module_free(m);
		m = small_llama_clip(true, clip);
		adam_ops(m, llama_weights(1), clip);
		shs_module_free(m);
	}
	shrink(&c, STRUCT_LAYERS);
	m = build(&c, NULL);
	adam_ops(m, PLAIN_WEIGHTS * STRUCT_L, c.grad_clip > 0);
	shs_module_free(m);
}

CU_TestInfo gen_tests[] = {
	{ "llama3-70b params: 3LDF + L(2DNH + 2DKH) + 2VD = 70.55e9, + norms", llama3_70b_params },
	{ "llama2-13b params: 13.0e9 (8.5e9 mlp, 4.2e9 attention, 0.33e9 vocab)",
	  llama2_13b_params },
	{ "llama3-8b params match the closed form", llama3_8b_params },
	{ "llama3-405b params match the closed form", llama3_405b_params },
	{ "gpt3-175b params: plain mlp, tied embedding", gpt3_175b_params },
	{ "mixtral-8x7b params: experts and router", mixtral_params },
	{ "mlp-only params: 2LDF", mlp_only_params },
	{ "llama2-13b flops = 6PT + attention, scanned = unrolled", llama2_13b_flops },
	{ "llama3-8b flops = 6PT + attention, scanned = unrolled", llama3_8b_flops },
	{ "llama3-70b flops = 6PT + attention, scanned = unrolled", llama3_70b_flops },
	{ "llama3-405b flops = 6PT + attention, scanned = unrolled", llama3_405b_flops },
	{ "gpt3-175b flops = 6PT + attention, scanned = unrolled", gpt3_175b_flops },
	{ "mlp-only flops = 6PT, scanned = unrolled", mlp_only_flops },
	{ "scanned form has one forward and one backward loop body", scanned_has_one_layer_body },
	{ "unrolled layers hash alike (one distinct layer body)", unrolled_layers_hash_alike },
	{ "llama2-13b unrolled round-trips through proto and text", llama2_13b_round_trips },
	{ "llama2-13b scanned round-trips through proto and text", llama2_13b_scan_round_trips },
	{ "llama3-8b unrolled round-trips through proto and text", llama3_8b_round_trips },
	{ "llama3-8b scanned round-trips through proto and text", llama3_8b_scan_round_trips },
	{ "llama3-70b unrolled round-trips through proto and text", llama3_70b_round_trips },
	{ "llama3-70b scanned round-trips through proto and text", llama3_70b_scan_round_trips },
	{ "llama3-405b unrolled round-trips through proto and text", llama3_405b_round_trips },
	{ "llama3-405b scanned round-trips through proto and text", llama3_405b_scan_round_trips },
	{ "gpt3-175b unrolled round-trips through proto and text", gpt3_175b_round_trips },
	{ "gpt3-175b scanned round-trips through proto and text", gpt3_175b_scan_round_trips },
	{ "mixtral-8x7b unrolled round-trips through proto and text", mixtral_round_trips },
	{ "mixtral-8x7b scanned round-trips through proto and text", mixtral_scan_round_trips },
	{ "mlp-only unrolled round-trips through proto and text", mlp_only_round_trips },
	{ "mlp-only scanned round-trips through proto and text", mlp_only_scan_round_trips },
	{ "unrolled step: signature, aliases, op_names", unrolled_structure },
	{ "scanned step: signature, aliases, op_names, stacked weights", scanned_structure },
	{ "mlp-only step: signature, aliases, op_names", mlp_only_structure },
	{ "f32-master: f32 weights, bf16 dots; bf16: bf16 weights", dtypes },
	{ "heads not a multiple of kv_heads is rejected", bad_heads_rejected },
	{ "flash attention: no [T, T] array, saves O and statistics, one kernel each way",
	  flash_has_no_scores },
	{ "Adam: two bias-correction powers, one sqrt per weight (+1 to clip)", adam_sanity },
	CU_TEST_INFO_NULL,
};
