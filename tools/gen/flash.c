/* Flash attention as the custom calls JAX emits for it: cuDNN fused attention or Pallas splash.
 *
 * Both kernels take Q [B,N,T,H], K and V [B,K,S,H] (heads before sequence: JAX's cuDNN
 * layout "BNTH", AttentionLayout.BNTH in jax/_src/cudnn/fused_attention_stablehlo.py, and the
 * layout splash attention's kernel reads, jax/experimental/pallas/ops/tpu/splash_attention/
 * splash_attention_kernel.py), so the projections are transposed in and the output back out
 * as MaxText does around its attention kernels. The forward returns O [B,N,T,H] and the f32
 * softmax statistics [B,N,T] (cuDNN's "activation", splash's logsumexp); the backward reads
 * Q, K, V, the statistics, dO and O and returns dQ, dK, dV. No [B,N,T,S] tensor exists.
 *
 * cuDNN (GPU): targets `__cudnn$fmhaSoftmax` and `__cudnn$fmhaSoftmaxBackward`, a u8[0]
 * workspace as the last result and the backend_config JSON of
 * create_dot_product_attention_backend_config (mask_type CAUSAL, is_flash_attention).
 * Pallas (TPU): target `tpu_custom_call` under the named scope of splash's kernel name
 * (`splash_mha_fwd_residuals`; the backward as its fused dkv kernel,
 * `splash_mha_dkv_no_residuals`, BlockSizes.use_fused_bwd_kernel), backend_config
 * {"custom_call_config": {"body": ..., "cost_estimate": ...}} as tpu_custom_call.py writes it.
 * What is simplified for the TPU form, so that both forms cost the same: the body is a
 * stand-in Mosaic module (base64 text naming the kernel), not a compiled kernel; the mask-info
 * operands, the three scratch results and the 128-lane padding of logsumexp are left out
 * (splash slices logsumexp[..., 0] right after the call); the backward reads O itself rather
 * than di = rowsum(O * dO), which splash computes in XLA before its kernel. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model_internal.h"

enum { CONFIG_MAX = 4096, BODY_MAX = 512 };

/* BTNH <-> BNTH */
static const shs_gdims swap12 = { 4, { 0, 2, 1, 3 } };

/* FlashAttention-2 (Dao 2023, section 4.1): the forward does 4 B N T S H FLOPs for QK^T and
 * PV, the backward 2.5 times as many (five matmuls to the forward's two); a causal mask skips
 * half the blocks, halving both. */
static const double FWD_MATMUL_FLOPS = 4.0;
static const double BWD_OVER_FWD = 2.5;
static const double CAUSAL_FRACTION = 0.5;

double shs_gen_flash_flops(const shs_gen_config *c, bool backward)
{
	double f = FWD_MATMUL_FLOPS * (double)c->batch * (double)c->heads * (double)c->seq *
		   (double)c->seq * (double)c->head_dim * CAUSAL_FRACTION;

	return backward ? BWD_OVER_FWD * f : f;
}

/* exp() evaluations of one kernel: one per unmasked score (the backward recomputes P). */
static double transcendentals(const shs_gen_config *c)
{
	return (double)c->batch * (double)c->heads * (double)c->seq * (double)c->seq *
	       CAUSAL_FRACTION;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* base64 of src into dst (cap bytes, NUL-terminated, truncated at a whole group). */
static void base64(const char *src, char *dst, size_t cap)
{
	size_t n = strlen(src), o = 0;

	for (size_t i = 0; i < n && o + 5 <= cap; i += 3) {
		unsigned v = (unsigned char)src[i] << 16;

		v |= i + 1 < n ? (unsigned)(unsigned char)src[i + 1] << 8 : 0;
		v |= i + 2 < n ? (unsigned char)src[i + 2] : 0;
		dst[o++] = b64[(v >> 18) & 63];
		dst[o++] = b64[(v >> 12) & 63];
		dst[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		dst[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	dst[o] = '\0';
}

/* The bytes of the arrays a kernel reads and writes, for Pallas's cost_estimate. */
static double kernel_bytes(shs_gb *g, const shs_v *ops, uint32_t n, const shs_gb_leaf *res,
			   uint32_t n_res)
{
	double b = 0;

	for (uint32_t k = 0; k < n; k++) {
		const shs_shape *s = shs_gb_shape(g, ops[k]);
		double e = shs_elem_bytes(s->type);

		for (uint32_t d = 0; d < s->rank; d++)
			e *= (double)s->dims[d];
		b += e;
	}
	for (uint32_t k = 0; k < n_res; k++) {
		double e = shs_elem_bytes(res[k].type);

		for (uint32_t d = 0; d < res[k].dims.n; d++)
			e *= (double)res[k].dims.d[d];
		b += e;
	}
	return b;
}

static void pallas_config(shs_gb *g, const shs_gen_config *c, const char *kernel, bool backward,
			  const shs_v *ops, uint32_t n, const shs_gb_leaf *res, uint32_t n_res,
			  char *out, size_t cap)
{
	char text[BODY_MAX], body[BODY_MAX * 2];

	snprintf(text, sizeof(text),
		 "module attributes {stable_mosaic.version = 11 : i64} {\n"
		 "  func.func @%s() attributes {mask = \"causal\"} {\n    return\n  }\n}\n", kernel);
	base64(text, body, sizeof(body));
	snprintf(out, cap,
		 "{\"custom_call_config\": {\"body\": \"%s\", \"cost_estimate\": "
		 "{\"bytes_accessed\":%.0f,\"flops\":%.0f,\"transcendentals\":%.0f}}}",
		 body, kernel_bytes(g, ops, n, res, n_res), shs_gen_flash_flops(c, backward),
		 transcendentals(c));
}

/* The dimension numbers of cuDNN's BNTH layout (create_dot_product_attention_backend_config_
 * base): ((lhs contracting, rhs contracting), (lhs batch, rhs batch)). */
static void dot_numbers(char *out, size_t cap, size_t *len, const char *key, int lc, int rc)
{
	char buf[256];

	snprintf(buf, sizeof(buf),
		 ", \"%s\": {\"lhs_contracting_dimensions\": [\"%d\"], "
		 "\"rhs_contracting_dimensions\": [\"%d\"], \"lhs_batch_dimensions\": [\"0\", \"1\"], "
		 "\"rhs_batch_dimensions\": [\"0\", \"1\"]}",
		 key, lc, rc);
	if (*len < cap)
		*len += (size_t)snprintf(out + *len, cap - *len, "%s", buf);
}

static void cudnn_config(const shs_gen_config *c, bool backward, char *out, size_t cap)
{
	size_t len = 0;

	len += (size_t)snprintf(
		out, cap,
		"{\"operation_queue_id\": \"0\", \"cudnn_fmha_backend_config\": {\"algorithm\": "
		"{\"algo_id\": \"0\", \"math_type\": \"TENSOR_OP_MATH\", \"tuning_knobs\": "
		"{\"17\": \"1\", \"24\": \"0\"}, \"is_cudnn_frontend\": true, \"workspace_size\": "
		"\"0\"}, \"fmha_scale\": %.17g, \"intermediate_tensor_shape\": {\"element_type\": "
		"\"BF16\", \"dimensions\": [\"%lld\", \"%lld\", \"%lld\", \"%lld\"], \"tuple_shapes\": "
		"[], \"layout\": {\"dim_level_types\": [], \"dim_unique\": [], \"dim_ordered\": [], "
		"\"minor_to_major\": [\"3\", \"2\", \"1\", \"0\"], \"tiles\": [], "
		"\"element_size_in_bits\": \"0\", \"memory_space\": \"0\", \"index_primitive_type\": "
		"\"PRIMITIVE_TYPE_INVALID\", \"pointer_primitive_type\": \"PRIMITIVE_TYPE_INVALID\", "
		"\"dynamic_shape_metadata_prefix_bytes\": \"0\"}, \"is_dynamic_dimension\": [false, "
		"false, false, false]}, \"is_flash_attention\": true, \"mask_type\": \"CAUSAL\"",
		1.0 / sqrt((double)c->head_dim), (long long)c->batch, (long long)c->heads,
		(long long)c->seq, (long long)c->seq);
	if (!backward) {
		dot_numbers(out, cap, &len, "bmm1_dot_dimension_numbers", 3, 3);
		dot_numbers(out, cap, &len, "bmm2_dot_dimension_numbers", 3, 2);
	} else {
		dot_numbers(out, cap, &len, "bmm1_grad_gemm1_dot_dimension_numbers", 2, 2);
		dot_numbers(out, cap, &len, "bmm1_grad_gemm2_dot_dimension_numbers", 3, 2);
		dot_numbers(out, cap, &len, "bmm2_grad_gemm1_dot_dimension_numbers", 2, 2);
		dot_numbers(out, cap, &len, "bmm2_grad_gemm2_dot_dimension_numbers", 3, 3);
	}
	if (len < cap)
		snprintf(out + len, cap - len,
			 ", \"dropout_rate\": 0.0, \"seed\": 42, \"sliding_window_length\": 0, "
			 "\"max_seg_per_batch\": 1, \"is_paged_attention\": false}}");
}

/* The kernel call on ops with results res (plus cuDNN's workspace). */
static shs_v kernel(shs_gen_ctx *x, bool backward, const shs_v *ops, uint32_t n,
		    shs_gb_leaf *res, uint32_t n_res)
{
	shs_gb *g = &x->g;
	char cfg[CONFIG_MAX];
	shs_v call;

	if (x->cfg->attention_kernel == SHS_GEN_KERNEL_CUDNN) {
		cudnn_config(x->cfg, backward, cfg, sizeof(cfg));
		res[n_res++] = shs_gb_leaf_of(SHS_U8, GD(0), GD());
		return shs_gb_custom_call(g, backward ? "__cudnn$fmhaSoftmaxBackward" :
							"__cudnn$fmhaSoftmax",
					  ops, n, res, n_res, cfg);
	}
	shs_gb_push(g, "%s", backward ? "splash_mha_dkv_no_residuals" : "splash_mha_fwd_residuals");
	pallas_config(g, x->cfg, backward ? "splash_mha_dkv_no_residuals" :
					    "splash_mha_fwd_residuals",
		      backward, ops, n, res, n_res, cfg, sizeof(cfg));
	call = shs_gb_custom_call(g, "tpu_custom_call", ops, n, res, n_res, cfg);
	shs_gb_pop(g);
	return call;
}

shs_v shs_gen_flash_fwd(shs_gen_ctx *x, const shs_v *qkv, shs_v *stats)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_v ops[3], call;
	shs_gb_leaf res[3];

	for (int k = 0; k < 3; k++)
		ops[k] = shs_gb_transpose(g, qkv[k], swap12);
	res[0] = shs_gb_leaf_of(x->ctype, GD(c->batch, c->heads, c->seq, c->head_dim), GD());
	res[1] = shs_gb_leaf_of(SHS_F32, GD(c->batch, c->heads, c->seq), GD());
	call = kernel(x, false, ops, 3, res, 2);
	*stats = shs_gb_gte(g, call, 1);
	return shs_gb_transpose(g, shs_gb_gte(g, call, 0), swap12);
}

void shs_gen_flash_bwd(shs_gen_ctx *x, const shs_v *qkv, shs_v stats, shs_v o, shs_v dout,
		       shs_v *dqkv)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_v ops[6], call;
	shs_gb_leaf res[4];
	shs_gdims qd = GD(c->batch, c->heads, c->seq, c->head_dim);
	shs_gdims kd = GD(c->batch, c->kv_heads, c->seq, c->head_dim);

	for (int k = 0; k < 3; k++)
		ops[k] = shs_gb_transpose(g, qkv[k], swap12);
	ops[3] = stats;
	ops[4] = shs_gb_transpose(g, dout, swap12);
	ops[5] = shs_gb_transpose(g, o, swap12);
	res[0] = shs_gb_leaf_of(x->ctype, qd, GD());
	res[1] = shs_gb_leaf_of(x->ctype, kd, GD());
	res[2] = shs_gb_leaf_of(x->ctype, kd, GD());
	call = kernel(x, true, ops, 6, res, 3);
	for (int k = 0; k < 3; k++)
		dqkv[k] = shs_gb_transpose(g, shs_gb_gte(g, call, k), swap12);
}
