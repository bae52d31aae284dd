/* Flash attention as a custom call, for the custom-call strategy (custom_call.c): the kernels
 * shard over batch, heads and (ring or all-gather context parallelism) the sequence.
 *
 * Flash attention, as the generator (tools/gen/flash.c) and JAX emit it: cuDNN's
 * `__cudnn$fmhaSoftmax` / `__cudnn$fmhaSoftmaxBackward` (jax/_src/cudnn/
 * fused_attention_stablehlo.py, layout BNTH) and Pallas splash attention as a
 * `tpu_custom_call` whose op_name holds the kernel name (`splash_mha_fwd...`,
 * `splash_mha_dkv...`). Forward: (Q [B,N,T,H], K [B,K,S,H], V [B,K,S,H]) ->
 * (O [B,N,T,H], statistics f32 [B,N,T] [, workspace]); backward: (Q, K, V, statistics, dO, O)
 * -> (dQ, dK, dV [, workspace]). Every array has batch at dim 0 and heads at dim 1.
 * Candidates put mesh axes on batch (dividing B), on heads (dividing the KV heads K, so that
 * each device's query heads find their KV heads: query head n reads KV head n / (N/K)) and, in
 * self-attention (T = S), on the sequence (dividing T) over a `context` (or `sequence`) axis:
 * context parallelism; attention is never split over its sequence on other axes (Megatron's
 * sequence parallelism over `tensor` keeps attention split by heads). Without a
 * sequence split every operand and result gets the same axes and the kernel runs on its shard
 * alone. With one, Q, O, dO, dQ and the statistics hold their sequence block and K and V go
 * one of two ways, as the frameworks run them: a ring (ring attention, Liu et al. 2023;
 * Transformer Engine's cp_comm_type "p2p", MaxText's ring context parallelism): each device
 * keeps its K/V block and passes the blocks around the ring of the sequence axes, one step per
 * block of its attention, the backward passing the dK/dV sums along with them
 * (ring-flash-attention) and sending them home at the end; or an all-gather (Llama 3's
 * context parallelism, Transformer Engine's "all_gather"): K and V gathered whole before the
 * kernel, the backward's dK and dV reduce-scattered after it. A causal mask is assumed laid out
 * load-balanced over the ring (each device two mirrored chunks, as Transformer Engine and
 * MaxText's context_parallel_load_balance do), so every device does 1/ring of the work.
 * JAX's own partitioning rule for the cuDNN call refuses a sequence split
 * ("Sharding on sequence dim is not allowed", _check_qkv_sharding): a plan that takes it runs
 * the attention under shard_map, as MaxText's context parallelism does.
 * Cost: FLOPs from FlashAttention-2 (Dao 2023, section 4.1): forward 4 B N T S H (QK^T and
 * PV), backward 2.5 times the forward, both halved by a causal mask (cuDNN: mask_type CAUSAL
 * in backend_config; Pallas: the kernel's own cost_estimate "flops", as Pallas passes it to
 * XLA, when there is one); divided by the batch, head and sequence shards. HBM bytes: the
 * operands and results only (Q, K, V, O and the statistics; the backward also dO, dQ, dK, dV),
 * per device: the kernel keeps its [T, S] tiles on chip.  *
 * Transformer Engine's fused attention (te_fused_attn_forward / _backward and their _ffi forms)
 * takes Q [B,S,H,D] (or Q, K and V packed [B,S,3,H,D]), K and V [B,S,2,Hkv,D] or apart, and
 * returns O and the softmax statistics [B,H,S,1] with its RNG state and workspace: each array
 * is mapped by its shape (fa_te_dims) and the call shards over batch and heads only (its
 * context parallelism runs outside the kernel). */
#include "attention.h"

#include <stdlib.h>
#include <string.h>

#include "rule_util.h"

enum {
	FA_FWD_OPERANDS = 3,
	FA_BWD_OPERANDS = 6,
	FA_STATS = 3,         /* the backward's statistics operand */
	FA_RANK = 4,
	FA_STATS_RANK = 3,
	FA_BATCH = 0,         /* the axis slots, and where cuDNN's and Pallas' arrays hold them */
	FA_HEADS = 1,
	FA_SEQ = 2,
	FA_HEAD_DIM = 3,
	FA_SLOTS = 3,         /* axis slots: batch, heads, sequence */
	FA_MAX_LEAVES = 8,
	FA_MAX_OPS = 16,      /* Transformer Engine's backward takes 16 */
	FA_NONE = -1          /* a slot an array does not have */
};

static const double fa_fwd_flops_per_mac_pair = 4.0; /* 2 matmuls x 2 FLOPs per MAC */
static const double fa_bwd_over_fwd = 2.5;           /* FlashAttention-2, section 4.1 */
static const double fa_causal_fraction = 0.5;

static const char fa_cudnn_fwd[] = "__cudnn$fmhaSoftmax";
static const char fa_cudnn_bwd[] = "__cudnn$fmhaSoftmaxBackward";
static const char fa_tpu[] = "tpu_custom_call";
static const char fa_te[] = "te_fused_attn_";

/* A recognised flash-attention call. */
typedef struct fa_call {
	bool backward;
	int64_t batch;
	int64_t sizes[FA_SLOTS]; /* what the slots split: B, the KV heads, T (1: T != S) */
	double flops;         /* unsharded */
	uint32_t n_leaves;
	const shs_pshape *leaves[FA_MAX_LEAVES]; /* the result's array leaves */
	int8_t op_dims[FA_MAX_OPS][FA_SLOTS];     /* each slot's dim in operand k, or FA_NONE */
	int8_t res_dims[FA_MAX_LEAVES][FA_SLOTS]; /* the same in result leaf k */
	bool op_kv[FA_MAX_OPS];      /* K and V: whole over the sequence when gathered, ringed */
	bool res_kv[FA_MAX_LEAVES];  /* dK and dV */
} fa_call;

static void fa_map(int8_t m[FA_SLOTS], int batch, int heads, int seq)
{
	m[FA_BATCH] = (int8_t)batch;
	m[FA_HEADS] = (int8_t)heads;
	m[FA_SEQ] = (int8_t)seq;
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
	if (q->dims[FA_BATCH] != k->dims[FA_BATCH] || !ru_same_dims(k, v) ||
	    k->dims[FA_HEADS] < 1 ||
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
	for (uint32_t j = 0; j < i->n_operands; j++)
		fa_map(f->op_dims[j], FA_BATCH, FA_HEADS, FA_SEQ);
	for (uint32_t j = 0; j < f->n_leaves; j++) {
		bool array = f->leaves[j]->rank >= FA_STATS_RANK; /* not the u8[0] workspace */

		fa_map(f->res_dims[j], array ? FA_BATCH : FA_NONE, array ? FA_HEADS : FA_NONE,
		       array ? FA_SEQ : FA_NONE);
		f->res_kv[j] = f->backward && (j == 1 || j == 2);
	}
	f->op_kv[1] = f->op_kv[2] = true;
	f->batch = q->dims[FA_BATCH];
	f->sizes[FA_BATCH] = f->batch;
	f->sizes[FA_HEADS] = k->dims[FA_HEADS];
	/* the sequence splits self-attention only, where Q and K blocks pair up in the ring */
	f->sizes[FA_SEQ] = q->dims[FA_SEQ] == k->dims[FA_SEQ] ? q->dims[FA_SEQ] : 1;
	f->flops = fa_fwd_flops_per_mac_pair * ru_elems(q) * (double)k->dims[FA_SEQ] *
		   (f->backward ? fa_bwd_over_fwd : 1);
	return true;
}

/* The slots of an array of Transformer Engine's call by its shape: Q's [B,S,H,D] (and O, dO,
 * dQ), K's / V's [B,S,H,D] or packed [B,S,2|3,H,D] (and their gradients), the softmax
 * statistics [B,H,S,1]; anything else (bias, sequence offsets, RNG state, workspace) none. */
static void fa_te_dims(const shs_pshape *s, const shs_pshape *q, const shs_pshape *kv,
		       int64_t heads, int8_t m[FA_SLOTS])
{
	fa_map(m, FA_NONE, FA_NONE, FA_NONE);
	if (ru_same_dims(s, q) && s->rank == FA_RANK)
		fa_map(m, 0, 2, 1);
	else if (ru_same_dims(s, kv))
		fa_map(m, 0, kv->rank - 2, 1);
	else if (s->rank == FA_RANK && s->dims[0] == q->dims[0] && s->dims[1] == heads &&
		 s->dims[2] == q->dims[1] && s->dims[3] == 1)
		fa_map(m, 0, 1, 2);
}

/* Transformer Engine's fused attention (te_fused_attn_forward / _backward, and their _ffi
 * forms, as transformer_engine/jax emits them): operand 0 is Q [B,S,H,D], or Q, K and V
 * packed [B,S,3,H,D]; K and V follow as [B,S,2,Hkv,D] or two [B,S,Hkv,D]. It shards over
 * batch and heads; its own context parallelism runs outside the kernel, so the sequence is not
 * split here. FLOPs from Q's and K's shapes, halved by a causal mask (NVTE mask types 2-5). */
static bool fa_te_match(const shs_pinstr *i, fa_call *f)
{
	const shs_pshape *q = &i->operands[0], *kv;
	int64_t heads, seq_kv;
	double mask;

	if (i->n_operands < 2 || i->n_operands > FA_MAX_OPS || i->shape.type != SHS_PTYPE_TUPLE ||
	    ru_leaf_count(&i->shape) > FA_MAX_LEAVES)
		return false;
	f->backward = strstr(i->custom_call_target, "backward") != NULL;
	if (q->type == SHS_PTYPE_TUPLE || (q->rank != FA_RANK && q->rank != FA_RANK + 1))
		return false;
	kv = q->rank == FA_RANK + 1 ? q : &i->operands[1];
	if (kv->type == SHS_PTYPE_TUPLE || kv->rank < FA_RANK || kv->dims[0] != q->dims[0])
		return false;
	heads = kv->dims[kv->rank - 2];
	seq_kv = kv->dims[1];
	f->n_leaves = ru_leaf_shapes(&i->shape, f->leaves, 0);
	for (uint32_t k = 0; k < i->n_operands; k++) {
		fa_te_dims(&i->operands[k], q, kv, q->dims[q->rank - 2], f->op_dims[k]);
		f->op_kv[k] = k > 0 && ru_same_dims(&i->operands[k], kv);
	}
	for (uint32_t k = 0; k < f->n_leaves; k++)
		fa_te_dims(f->leaves[k], q, kv, q->dims[q->rank - 2], f->res_dims[k]);
	f->batch = q->dims[0];
	f->sizes[FA_BATCH] = f->batch;
	f->sizes[FA_HEADS] = heads;
	f->sizes[FA_SEQ] = 1;
	f->flops = fa_fwd_flops_per_mac_pair * (double)q->dims[0] * (double)q->dims[1] *
		   (double)q->dims[q->rank - 2] * (double)q->dims[q->rank - 1] * (double)seq_kv *
		   (f->backward ? fa_bwd_over_fwd : 1);
	mask = sc_config_number(i->backend_config, "mask_type", '=');
	if (mask >= 2 && mask <= 5)
		f->flops *= fa_causal_fraction;
	return heads > 0 && q->dims[q->rank - 2] % heads == 0;
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
	if (!strncmp(t, fa_te, strlen(fa_te)))
		return fa_te_match(i, f);
	cudnn = !strcmp(t, fa_cudnn_fwd) || !strcmp(t, fa_cudnn_bwd);
	if (!cudnn && !(strcmp(t, fa_tpu) == 0 && i->op_name && strstr(i->op_name, "splash_mha")))
		return false;
	f->backward = cudnn ? !strcmp(t, fa_cudnn_bwd) : i->n_operands == FA_BWD_OPERANDS;
	if (i->n_operands != (f->backward ? FA_BWD_OPERANDS : FA_FWD_OPERANDS) || !fa_shapes(i, f))
		return false;
	if (cudnn) {
		causal = fa_cudnn_causal(i->backend_config);
		f->flops *= causal ? fa_causal_fraction : 1;
	} else if ((declared = sc_config_number(i->backend_config, "\"flops\"", ':')) >= 0) {
		f->flops = declared;
	}
	return true;
}

/* How a candidate with the sequence split treats K and V. */
typedef enum fa_variant {
	FA_LOCAL,  /* no sequence split: the kernel runs on its shard alone */
	FA_RING,   /* K and V passed around the ring of the sequence axes */
	FA_GATHER  /* K and V all-gathered over the sequence axes first */
} fa_variant;

static const char *const fa_prefix[] = { "flash", "flash-ring", "flash-gather" };

/* The spec of an array of the given rank whose slots sit at dims (FA_NONE: absent): slots'
 * axes there, the sequence's left out when whole_seq; false (a replicated spec) when the array
 * has no slot. */
static bool fa_spec(const int8_t dims[FA_SLOTS], uint32_t rank, const shs_pdim *slots,
		    bool whole_seq, shs_pspec *out)
{
	bool any = false;

	sc_replicated(rank, out);
	for (uint32_t d = 0; d < FA_SLOTS; d++) {
		if (dims[d] == FA_NONE || (uint32_t)dims[d] >= rank)
			continue;
		any = true;
		if (!(whole_seq && d == FA_SEQ))
			out->dims[dims[d]] = slots[d];
	}
	return any;
}

/* Emits the candidate: slots[FA_BATCH], [FA_HEADS], [FA_SEQ] on every array where it holds
 * them (K and V whole over the sequence under FA_GATHER); the workspace replicated; the ring's
 * or the gather's collectives. */
static void fa_emit(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		    const fa_call *f, const shs_pdim *slots, fa_variant v)
{
	const shs_pinstr *i = q->instr;
	char label[SC_LABEL_MAX];
	int64_t bs = sc_dim_shards(&slots[FA_BATCH], q->mesh);
	int64_t ring = sc_dim_shards(&slots[FA_SEQ], q->mesh);
	uint32_t seq_mask = sc_dim_mask(&slots[FA_SEQ]);
	/* each device runs the padded batch's share: ceil(B / bs) of B; a sequence split gives
	 * each device 1/ring of the (causal: unmasked) blocks, the tokens laid out load-balanced */
	double share = (double)((f->batch + bs - 1) / bs) / (double)f->batch /
		       (double)sc_dim_shards(&slots[FA_HEADS], q->mesh) / (double)ring;
	double kv = 0, dkv = 0; /* per device: the local K + V, dK + dV */
	shs_pspec s, r;
	ru_emit e;

	sc_replicated(FA_RANK, &s); /* the label: the slots in cuDNN's order [B,N,T,H] */
	for (uint32_t d = 0; d < FA_SLOTS; d++)
		s.dims[d] = slots[d];
	ru_label(label, fa_prefix[v], &s, q->mesh);
	ru_begin(&e, q, out, api, label);
	for (uint32_t k = 0; k < f->n_leaves; k++) {
		if (!fa_spec(f->res_dims[k], f->leaves[k]->rank, slots, false, &r)) {
			ru_result_leaf(&e, k, f->leaves[k], NULL); /* workspace, RNG state, ... */
			continue;
		}
		ru_result_leaf(&e, k, f->leaves[k], &r);
		if (f->res_kv[k])
			dkv += sc_local_bytes(api, f->leaves[k], &r, q->mesh);
	}
	for (uint32_t k = 0; k < i->n_operands; k++) {
		fa_spec(f->op_dims[k], i->operands[k].rank, slots, false, &r);
		if (f->op_kv[k])
			kv += sc_local_bytes(api, &i->operands[k], &r, q->mesh);
		if (f->op_kv[k] && v == FA_GATHER)
			fa_spec(f->op_dims[k], i->operands[k].rank, slots, true, &r);
		ru_operand(&e, k, &r);
	}
	ru_end(&e, f->flops * share);
	if (v == FA_RING) {
		/* Ring attention (Liu et al. 2023): each of the ring - 1 steps sends this
		 * device's current K and V block (and in the backward the dK and dV summed so
		 * far, ring-flash-attention's backward) to the next device while the kernel
		 * works on the block it holds; the backward's dK and dV take one more step home */
		api->add_collective(out, e.c, SHS_PCOLL_PERMUTE, seq_mask, kv + dkv, true);
		if (f->backward)
			api->add_collective(out, e.c, SHS_PCOLL_PERMUTE, seq_mask, dkv, false);
	} else if (v == FA_GATHER && f->backward) {
		/* each device's dK and dV over the whole sequence, summed and scattered back */
		api->add_collective(out, e.c, SHS_PCOLL_REDUCE_SCATTER, seq_mask,
				    dkv * (double)ring, false);
	}
}

enum { FA_MAX_SEEN = FA_MAX_LEAVES + FA_MAX_OPS + 1 };

typedef struct fa_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
	const fa_call *f;
	shs_pdim seen[FA_MAX_SEEN][FA_SLOTS]; /* assignments already emitted */
	uint32_t n_seen;
} fa_ctx;

static bool fa_same_axes(const shs_pdim *a, const shs_pdim *b)
{
	return a->n == b->n && !memcmp(a->axes, b->axes, a->n * sizeof(a->axes[0]));
}

/* Emits the assignment slots (both variants with a sequence split) unless it was emitted
 * already. */
static void fa_emit_once(fa_ctx *x, const shs_pdim *slots)
{
	for (uint32_t j = 0; j < x->n_seen; j++) {
		uint32_t d = 0;
		while (d < FA_SLOTS && fa_same_axes(&x->seen[j][d], &slots[d]))
			d++;
		if (d == FA_SLOTS)
			return;
	}
	if (x->n_seen < FA_MAX_SEEN)
		memcpy(x->seen[x->n_seen++], slots, sizeof(x->seen[0]));
	if (!slots[FA_SEQ].n) {
		fa_emit(x->q, x->out, x->api, x->f, slots, FA_LOCAL);
		return;
	}
	fa_emit(x->q, x->out, x->api, x->f, slots, FA_RING);
	fa_emit(x->q, x->out, x->api, x->f, slots, FA_GATHER);
}

static int fa_enum_one(const shs_pdim *slots, void *user)
{
	fa_emit_once(user, slots);
	return 0;
}

/* Whether mesh axis a may split the sequence: a context axis ("context", or "sequence"). */
static bool fa_context_axis(const shs_pmesh *mesh, uint32_t a)
{
	const char *n = a < mesh->n_axes && mesh->names ? mesh->names[a] : NULL;

	return n && (!strcmp(n, "context") || !strcmp(n, "sequence"));
}

/* The batch, head and sequence axes of spec s (its dims at dims) that fit f, into slots; false
 * when s is NULL or holds no slot. */
static bool fa_axes_of(const shs_pspec *s, const int8_t dims[FA_SLOTS], const fa_call *f,
		       const shs_pmesh *mesh, shs_pdim *slots)
{
	uint32_t used = 0;
	bool any = false;

	for (uint32_t d = 0; s && d < FA_SLOTS; d++)
		any |= dims[d] != FA_NONE && (uint32_t)dims[d] < s->rank;
	if (!any)
		return false;
	for (uint32_t d = 0; d < FA_SLOTS; d++) {
		const shs_pdim *in = dims[d] == FA_NONE || (uint32_t)dims[d] >= s->rank ? NULL
				     : &s->dims[dims[d]];
		int64_t shards = 1;

		slots[d].n = 0;
		for (uint32_t k = 0; in && k < in->n && k < SHS_PLUGIN_MAX_AXES; k++) {
			uint32_t a = in->axes[k];

			if (a >= mesh->n_axes || (used & (1u << a)) || mesh->sizes[a] < 1)
				continue;
			/* heads must divide (the kernel's GQA groups), and so must the sequence
			 * (equal ring blocks); a batch that does not is padded, as XLA pads it,
			 * when the split still shrinks each piece */
			if (d == FA_BATCH ? !sc_split_shrinks(f->sizes[d], shards, mesh->sizes[a]) :
					    f->sizes[d] % (shards * mesh->sizes[a]) != 0)
				continue;
			if (d == FA_SEQ && !fa_context_axis(mesh, a))
				continue;
			shards *= mesh->sizes[a];
			used |= 1u << a;
			slots[d].axes[slots[d].n++] = (uint8_t)a;
		}
	}
	return true;
}

/* Propagation: the shardings the operands (and the wanted result) already have first. */
static void fa_propagate(fa_ctx *x)
{
	const shs_pquery *q = x->q;

	for (uint32_t k = 0; k <= q->instr->n_operands; k++) {
		bool op = k < q->instr->n_operands;
		const shs_pspec *s = op ? sc_operand_hint(q, k) :
				     q->result_hint ? &q->result_hint[0] : NULL;
		const int8_t *dims = op ? x->f->op_dims[k] : x->f->res_dims[0];
		shs_pdim slots[FA_SLOTS] = { 0 };

		if (fa_axes_of(s, dims, x->f, q->mesh, slots) &&
		    (slots[FA_BATCH].n || slots[FA_HEADS].n || slots[FA_SEQ].n))
			fa_emit_once(x, slots);
	}
}

static int fa_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		       const fa_call *f)
{
	fa_ctx x = { .q = q, .out = out, .api = api, .f = f };
	uint64_t allowed[SHS_PLUGIN_MAX_AXES];

	/* batch and heads take any axis, the sequence a context axis */
	for (uint32_t a = 0; a < SHS_PLUGIN_MAX_AXES; a++)
		allowed[a] = (1u << FA_BATCH) | (1u << FA_HEADS) |
			     (fa_context_axis(q->mesh, a) ? 1u << FA_SEQ : 0);
	/* propagating: the operands' shardings first, then every assignment, so that a head
	 * split the operands do not have yet can be chosen */
	if (q->mode != SHS_PMODE_ENUMERATE)
		fa_propagate(&x);
	if (sc_enum_assign(FA_SLOTS, f->sizes, allowed, q->mesh, fa_enum_one, &x) < 0) {
		api->fail(out, "%s: cannot enumerate the flash-attention candidates",
			  q->instr->name);
		return -1;
	}
	return 0;
}

bool shs_attention_serve(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, int *rc)
{
	fa_call f;

	if (!fa_match(q->instr, &f))
		return false;
	*rc = fa_generate(q, out, api, &f);
	return true;
}
