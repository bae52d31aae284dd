/* Strategy plugin for custom calls: "Sharding" follows the module's hint; flash-attention
 * kernels shard over batch and heads; others are replicated.
 *
 * Flash attention, as the generator (tools/gen/flash.c) and JAX emit it: cuDNN's
 * `__cudnn$fmhaSoftmax` / `__cudnn$fmhaSoftmaxBackward` (jax/_src/cudnn/
 * fused_attention_stablehlo.py, layout BNTH) and Pallas splash attention as a
 * `tpu_custom_call` whose op_name holds the kernel name (`splash_mha_fwd...`,
 * `splash_mha_dkv...`). Forward: (Q [B,N,T,H], K [B,K,S,H], V [B,K,S,H]) ->
 * (O [B,N,T,H], statistics f32 [B,N,T] [, workspace]); backward: (Q, K, V, statistics, dO, O)
 * -> (dQ, dK, dV [, workspace]). Every array has batch at dim 0 and heads at dim 1.
 * Candidates put mesh axes on batch (dividing B) and on heads (dividing the KV heads K, so
 * that each device's query heads find their KV heads: query head n reads KV head n / (N/K));
 * every operand and result gets the same axes, so the kernel runs on its shard alone with no
 * collective. The query sequence is not offered: JAX's partitioning rule for the cuDNN call
 * refuses it ("Sharding on sequence dim is not allowed", _check_qkv_sharding) and Mosaic
 * kernels are only partitioned by shard_map; it would need K and V all-gathered over the
 * sequence axis (or a ring of collective-permutes) and, causal, leave the last query shard with
 * about twice the mean work. A Q sharded over the sequence is resharded by the host.
 * Cost: FLOPs from FlashAttention-2 (Dao 2023, section 4.1): forward 4 B N T S H (QK^T and
 * PV), backward 2.5 times the forward, both halved by a causal mask (cuDNN: mask_type CAUSAL
 * in backend_config; Pallas: the kernel's own cost_estimate "flops", as Pallas passes it to
 * XLA, when there is one); divided by the batch and head shards. HBM bytes: the operands and
 * results only (Q, K, V, O and the statistics; the backward also dO, dQ, dK, dV), per
 * device: the kernel keeps its [T, S] tiles on chip. */
#include "common.h"
#include "rule_util.h"

static const char *const cc_opcodes[] = { "custom-call", NULL };
static const char cc_sharding_target[] = "Sharding";

/* *out = in for the array shape, axes that do not exist or repeat dropped, and marked padded
 * when a dim does not divide (the module's hint is kept as XLA would pad it). False when in is
 * NULL or the ranks differ. */
static bool cc_keep(const shs_pspec *in, const shs_pshape *shape, const shs_pmesh *mesh,
		    shs_pspec *out)
{
	uint32_t used = 0;

	if (!in || !ru_is_array(shape) || in->rank != shape->rank)
		return false;
	sc_replicated(shape->rank, out);
	for (uint32_t d = 0; d < shape->rank; d++) {
		for (uint32_t k = 0; k < in->dims[d].n && k < SHS_PLUGIN_MAX_AXES; k++) {
			uint32_t a = in->dims[d].axes[k];

			if (a >= mesh->n_axes || mesh->sizes[a] < 1 || (used & (1u << a)))
				continue;
			used |= 1u << a;
			ru_push_axis(out, d, a);
		}
		if (shape->dims[d] % sc_dim_shards(&out->dims[d], mesh))
			out->padded = true;
	}
	return true;
}

/* Emits the candidate where operand 0 and the result have spec s. */
static void cc_emit(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		    const char *prefix, const shs_pspec *s)
{
	char label[SC_LABEL_MAX];
	ru_emit e;

	ru_label(label, prefix, s, q->mesh);
	ru_begin(&e, q, out, api, label);
	ru_result(&e, s);
	ru_operand(&e, 0, s);
	ru_end(&e, 0);
}

typedef struct cc_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
} cc_ctx;

static int cc_enum_one(const shs_pspec *s, void *user)
{
	const cc_ctx *x = user;

	cc_emit(x->q, x->out, x->api, "same", s);
	return 0;
}

/* A Sharding call: the hint alone when there is one; else like an identity op. */
static int cc_sharding(const shs_pquery *q, shs_pemit *out, const shs_host_api *api)
{
	const shs_pshape *res = &q->instr->shape;
	shs_pspec s;

	if (cc_keep(q->result_hint ? &q->result_hint[0] : NULL, res, q->mesh, &s)) {
		cc_emit(q, out, api, "hint", &s);
		return 0;
	}
	if (q->mode == SHS_PMODE_ENUMERATE) {
		cc_ctx x = { q, out, api };

		if (sc_enum_specs(res, q->mesh, NULL, cc_enum_one, &x) < 0) {
			api->fail(out, "%s: cannot enumerate the specs of rank %u", q->instr->name,
				  res->rank);
			return -1;
		}
		return 0;
	}
	if (ru_fit(sc_operand_hint(q, 0), res, q->mesh, &s) && ru_sharded(&s))
		cc_emit(q, out, api, "same", &s);
	sc_replicated(res->rank, &s);
	cc_emit(q, out, api, "same", &s);
	return 0;
}

/* ---- Flash attention ---- */

enum {
	FA_FWD_OPERANDS = 3,
	FA_BWD_OPERANDS = 6,
	FA_STATS = 3,         /* the backward's statistics operand */
	FA_RANK = 4,
	FA_STATS_RANK = 3,
	FA_BATCH = 0,         /* dims of every operand and result */
	FA_HEADS = 1,
	FA_SEQ = 2,
	FA_HEAD_DIM = 3,
	FA_SLOTS = 2,         /* axis slots: batch, heads */
	FA_MAX_LEAVES = 8
};

static const double fa_fwd_flops_per_mac_pair = 4.0; /* 2 matmuls x 2 FLOPs per MAC */
static const double fa_bwd_over_fwd = 2.5;           /* FlashAttention-2, section 4.1 */
static const double fa_causal_fraction = 0.5;

static const char fa_cudnn_fwd[] = "__cudnn$fmhaSoftmax";
static const char fa_cudnn_bwd[] = "__cudnn$fmhaSoftmaxBackward";
static const char fa_tpu[] = "tpu_custom_call";

/* A recognised flash-attention call. */
typedef struct fa_call {
	bool backward;
	int64_t batch, kv_heads;
	double flops;         /* unsharded */
	uint32_t n_leaves;
	const shs_pshape *leaves[FA_MAX_LEAVES]; /* the result's array leaves */
} fa_call;

/* The number after "key": in JSON text s, or -1 when absent. */
static double fa_json_number(const char *s, const char *key)
{
	const char *p = s ? strstr(s, key) : NULL;

	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	return (*p >= '0' && *p <= '9') ? strtod(p, NULL) : -1;
}

/* Whether cuDNN's backend_config names a causal mask ("CAUSAL" or "PADDING_CAUSAL"). */
static bool fa_cudnn_causal(const char *cfg)
{
	const char *p = cfg ? strstr(cfg, "\"mask_type\"") : NULL;
	const char *end;

	if (!p)
		return false;
	p = strchr(p + strlen("\"mask_type\""), '"');
	end = p ? strchr(p + 1, '"') : NULL;
	if (!end)
		return false;
	for (const char *c = p + 1; c + 6 <= end; c++)
		if (!strncmp(c, "CAUSAL", 6))
			return true;
	return false;
}

static bool fa_dims_are(const shs_pshape *s, uint32_t rank)
{
	return s->type != SHS_PTYPE_TUPLE && s->rank == rank;
}

/* Whether q is the call's Q, K and V, and the results match them. */
static bool fa_shapes(const shs_pinstr *i, fa_call *f)
{
	const shs_pshape *q = &i->operands[0], *k = &i->operands[1], *v = &i->operands[2];
	uint32_t n_arrays = f->backward ? 3 : 2;

	for (uint32_t j = 0; j < 3; j++)
		if (!fa_dims_are(&i->operands[j], FA_RANK))
			return false;
	if (q->dims[FA_BATCH] != k->dims[FA_BATCH] || !ru_same_dims(k, v) || k->dims[FA_HEADS] < 1 ||
	    q->dims[FA_HEADS] % k->dims[FA_HEADS] || q->dims[FA_HEAD_DIM] != k->dims[FA_HEAD_DIM])
		return false;
	if (i->shape.type != SHS_PTYPE_TUPLE || ru_leaf_count(&i->shape) > FA_MAX_LEAVES)
		return false;
	f->n_leaves = ru_leaf_shapes(&i->shape, f->leaves, 0);
	if (f->n_leaves < n_arrays || f->n_leaves > n_arrays + 1)
		return false;
	if (f->backward) {
		const shs_pshape *st = &i->operands[FA_STATS];

		if (!fa_dims_are(st, FA_STATS_RANK) || !ru_same_dims(&i->operands[4], q) ||
		    !ru_same_dims(&i->operands[5], q) || !ru_same_dims(f->leaves[0], q) ||
		    !ru_same_dims(f->leaves[1], k) || !ru_same_dims(f->leaves[2], v))
			return false;
	} else if (!ru_same_dims(f->leaves[0], q) || !fa_dims_are(f->leaves[1], FA_STATS_RANK) ||
		   f->leaves[1]->dims[0] != q->dims[0] || f->leaves[1]->dims[1] != q->dims[1] ||
		   f->leaves[1]->dims[2] != q->dims[2]) {
		return false;
	}
	f->batch = q->dims[FA_BATCH];
	f->kv_heads = k->dims[FA_HEADS];
	f->flops = fa_fwd_flops_per_mac_pair * ru_elems(q) * (double)k->dims[FA_SEQ] *
		   (f->backward ? fa_bwd_over_fwd : 1);
	return true;
}

/* Recognises a flash-attention call; false for any other custom call. */
static bool fa_match(const shs_pinstr *i, fa_call *f)
{
	const char *t = i->custom_call_target;
	bool cudnn, causal;
	double declared;

	if (!t)
		return false;
	memset(f, 0, sizeof(*f));
	cudnn = !strcmp(t, fa_cudnn_fwd) || !strcmp(t, fa_cudnn_bwd);
	if (!cudnn && !(strcmp(t, fa_tpu) == 0 && i->op_name && strstr(i->op_name, "splash_mha")))
		return false;
	f->backward = cudnn ? !strcmp(t, fa_cudnn_bwd) : i->n_operands == FA_BWD_OPERANDS;
	if (i->n_operands != (f->backward ? FA_BWD_OPERANDS : FA_FWD_OPERANDS) || !fa_shapes(i, f))
		return false;
	if (cudnn) {
		causal = fa_cudnn_causal(i->backend_config);
		f->flops *= causal ? fa_causal_fraction : 1;
	} else if ((declared = fa_json_number(i->backend_config, "\"flops\"")) >= 0) {
		f->flops = declared;
	}
	return true;
}

/* One candidate: batch axes b and head axes h on every array; workspace replicated. */
static void fa_emit(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		    const fa_call *f, const shs_pdim *b, const shs_pdim *h)
{
	const shs_pinstr *i = q->instr;
	char label[SC_LABEL_MAX];
	int64_t bs = sc_dim_shards(b, q->mesh);
	/* each device runs the padded batch's share: ceil(B / bs) of B */
	double share = (double)((f->batch + bs - 1) / bs) / (double)f->batch /
		       (double)sc_dim_shards(h, q->mesh);
	shs_pspec s;
	ru_emit e;

	sc_replicated(FA_RANK, &s);
	s.dims[FA_BATCH] = *b;
	s.dims[FA_HEADS] = *h;
	ru_label(label, "flash", &s, q->mesh);
	ru_begin(&e, q, out, api, label);
	for (uint32_t k = 0; k < f->n_leaves; k++) {
		shs_pspec r = s;

		r.rank = f->leaves[k]->rank;
		sc_mark_padded(&r, f->leaves[k], q->mesh);
		if (r.rank < FA_STATS_RANK)
			ru_result_leaf(&e, k, f->leaves[k], NULL); /* the u8[0] workspace */
		else
			ru_result_leaf(&e, k, f->leaves[k], &r);
	}
	for (uint32_t k = 0; k < i->n_operands; k++) {
		shs_pspec r = s;

		r.rank = i->operands[k].rank;
		sc_mark_padded(&r, &i->operands[k], q->mesh);
		ru_operand(&e, k, &r);
	}
	ru_end(&e, f->flops * share);
}

enum { FA_MAX_SEEN = FA_MAX_LEAVES + FA_BWD_OPERANDS + 1 };

typedef struct fa_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
	const fa_call *f;
	shs_pdim seen[FA_MAX_SEEN][FA_SLOTS]; /* assignments already emitted */
	uint32_t n_seen;
} fa_ctx;

/* Emits batch axes b and head axes h unless they were emitted already. */
static void fa_emit_once(fa_ctx *x, const shs_pdim *b, const shs_pdim *h)
{
	for (uint32_t j = 0; j < x->n_seen; j++)
		if (!memcmp(&x->seen[j][0], b, sizeof(*b)) && !memcmp(&x->seen[j][1], h, sizeof(*h)))
			return;
	if (x->n_seen < FA_MAX_SEEN) {
		x->seen[x->n_seen][0] = *b;
		x->seen[x->n_seen][1] = *h;
		x->n_seen++;
	}
	fa_emit(x->q, x->out, x->api, x->f, b, h);
}

static int fa_enum_one(const shs_pdim *slots, void *user)
{
	fa_emit_once(user, &slots[0], &slots[1]);
	return 0;
}

/* The batch and head axes of spec s (batch and heads at dims 0 and 1) that fit f, into *b and
 * *h; false when s is NULL. */
static bool fa_axes_of(const shs_pspec *s, const fa_call *f, const shs_pmesh *mesh, shs_pdim *b,
		       shs_pdim *h)
{
	int64_t sizes[FA_SLOTS] = { f->batch, f->kv_heads };
	shs_pdim *out[FA_SLOTS] = { b, h };
	uint32_t used = 0;

	if (!s || s->rank <= FA_HEADS)
		return false;
	for (uint32_t d = 0; d < FA_SLOTS; d++) {
		int64_t shards = 1;

		out[d]->n = 0;
		for (uint32_t k = 0; k < s->dims[d].n && k < SHS_PLUGIN_MAX_AXES; k++) {
			uint32_t a = s->dims[d].axes[k];

			if (a >= mesh->n_axes || (used & (1u << a)) || mesh->sizes[a] < 1)
				continue;
			/* heads must divide (the kernel's GQA groups); a batch that does not is
			 * padded, as XLA pads it, when the split still shrinks each piece */
			if (d == FA_HEADS ? sizes[d] % (shards * mesh->sizes[a]) != 0 :
					    !sc_split_shrinks(sizes[d], shards, mesh->sizes[a]))
				continue;
			shards *= mesh->sizes[a];
			used |= 1u << a;
			out[d]->axes[out[d]->n++] = (uint8_t)a;
		}
	}
	return true;
}

/* Propagation: the shardings the operands (and the wanted result) already have first. */
static void fa_propagate(fa_ctx *x)
{
	const shs_pquery *q = x->q;

	for (uint32_t k = 0; k <= q->instr->n_operands; k++) {
		const shs_pspec *s = k < q->instr->n_operands ? sc_operand_hint(q, k) :
				     q->result_hint ? &q->result_hint[0] : NULL;
		shs_pdim b = { 0 }, h = { 0 };

		if (fa_axes_of(s, x->f, q->mesh, &b, &h) && (b.n || h.n))
			fa_emit_once(x, &b, &h);
	}
}

static int fa_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		       const fa_call *f)
{
	int64_t sizes[FA_SLOTS] = { f->batch, f->kv_heads };
	fa_ctx x = { .q = q, .out = out, .api = api, .f = f };

	/* propagating: the operands' shardings first, then every assignment, so that a head
	 * split the operands do not have yet (their sequence split, say) can be chosen */
	if (q->mode != SHS_PMODE_ENUMERATE)
		fa_propagate(&x);
	if (sc_enum_assign(FA_SLOTS, sizes, NULL, q->mesh, fa_enum_one, &x) < 0) {
		api->fail(out, "%s: cannot enumerate the flash-attention candidates",
			  q->instr->name);
		return -1;
	}
	return 0;
}

static int cc_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const shs_pinstr *i = q->instr;

	fa_call f;

	(void)user;
	if (fa_match(i, &f))
		return fa_generate(q, out, api, &f);
	if (i->custom_call_target && !strcmp(i->custom_call_target, cc_sharding_target) &&
	    i->n_operands == 1 && ru_is_array(&i->shape) &&
	    ru_same_dims(&i->operands[0], &i->shape) && i->operands[0].type != SHS_PTYPE_TUPLE)
		return cc_sharding(q, out, api);
	ru_replicated(q, out, api);
	return 0;
}

static const shs_strategy cc_strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "custom-call.sharding",
	.opcodes = cc_opcodes,
	.generate = cc_generate,
};

static int cc_init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &cc_strategy);
}

SHS_PLUGIN_DEFINE(cc_init)
