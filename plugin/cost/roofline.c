/* The book's closed forms: rooflines, training thresholds, model sizes and memory. */
#include <math.h>

#include "roofline.h"

/* Constants of the book's formulas (scaling-book.md §4, §5). */
enum {
	FLOPS_PER_MAC = 2,      /* a multiply-add is 2 FLOPs */
	FWD_MATMULS = 2,        /* W_in and W_out */
	BWD_MATMULS = 4,        /* dW_out, dTmp, dW_in, dIn */
	TRAIN_FLOPS_PER_PARAM = 6,
	MOMENT_BYTES = SHS_RF_ADAM_MOMENT_BYTES,
	KV_TENSORS = 2,         /* keys and values */
	TWO_CHIPS = 2,
	MIXED_SUM_FACTOR = 4,   /* the old summed-comms bound is 4 alpha^2 / (m_x m_y F) */
	N_PASSES = 2            /* forward, backward */
};

/* The §5 Takeaways table's comms bytes: per pass (fwd, bwd) for a data-axis term in D F and a
 * tensor-axis term in B D. */
static const double dp_bytes[N_PASSES] = { 0, 8 };   /* x DF */
static const double fsdp_bytes[N_PASSES] = { 4, 8 }; /* x DF (FSDP+TP: x DF / Y) */
static const double tp_bytes[N_PASSES] = { 4, 4 };   /* x BD */
static const double mixed_tp_bytes[N_PASSES] = { 4, 8 }; /* x BD / X */

static double quot(double num, double den)
{
	return den > 0 ? num / den : INFINITY;
}

/* Peak FLOP/s of h in dt; 0 for a dtype the catalog does not know. */
static double peak(const shs_hardware *h, shs_hw_dtype dt)
{
	return (unsigned)dt < SHS_HW_N_DTYPES ? h->flops[dt] : 0;
}

double shs_rf_hbm_intensity(const shs_hardware *h, shs_hw_dtype dt)
{
	return quot(peak(h, dt), h->hbm_bw);
}

double shs_rf_matmul_min_batch_limit(const shs_hardware *h, shs_hw_dtype dt, double weight_bytes)
{
	return quot(peak(h, dt) * weight_bytes, FLOPS_PER_MAC * h->hbm_bw);
}

double shs_rf_matmul_min_batch(const shs_hardware *h, shs_hw_dtype dt, double d, double f,
			       double elem_bytes)
{
	/* B (2DF/C - (D+F) e/bw) > DF e/bw */
	double per_token_math = quot(FLOPS_PER_MAC * d * f, peak(h, dt));
	double per_token_bytes = quot((d + f) * elem_bytes, h->hbm_bw);
	double fixed = quot(d * f * elem_bytes, h->hbm_bw);

	return quot(fixed, per_token_math - per_token_bytes);
}

double shs_rf_ici_oneway_intensity(const shs_hardware *h)
{
	return quot(h->flops[SHS_HW_BF16], h->ici_bw / 2);
}

double shs_rf_two_chip_min_d(const shs_hardware *h)
{
	return TWO_CHIPS * shs_rf_ici_oneway_intensity(h);
}

double shs_rf_ici_latency_bytes(const shs_hardware *h)
{
	return h->ici_bw / 2 * h->ici_latency;
}

double shs_rf_weight_load_time(double bytes, double chips, double hbm_bw)
{
	return quot(bytes, chips * hbm_bw);
}

double shs_rf_level_allgather_bw(double d, double w)
{
	return quot(d * w, d - 1);
}

double shs_rf_dp_min_tokens(double alpha, double m_axes)
{
	return quot(alpha, m_axes);
}

double shs_rf_dp_min_tokens_ring(double alpha, double x)
{
	return quot(alpha * (x - 1), x);
}

double shs_rf_moe_dp_min_tokens(double alpha, double experts, double active)
{
	return quot(experts, active) * alpha;
}

double shs_rf_tp_max(double alpha, double m_y, double f)
{
	return quot(m_y * f, alpha);
}

double shs_rf_tp_max_two_nodes(double alpha, double node_size, double f)
{
	return node_size + quot(f, alpha);
}

double shs_rf_mixed_min_tokens(double alpha, double m_x, double m_y, double f, shs_rf_overlap o)
{
	double bound = quot(alpha * alpha, m_x * m_y * f);

	return o == SHS_RF_SUM ? MIXED_SUM_FACTOR * bound : bound;
}

double shs_rf_mixed_x_opt(double b, double f, double m_x, double m_y, double n)
{
	return sqrt(quot(b, f) * quot(m_x, m_y) * n);
}

/* Chips one layer's compute is split over. */
static double layer_chips(const shs_rf_mlp *m, shs_rf_strategy s)
{
	switch (s) {
	case SHS_RF_TP: return m->y;
	case SHS_RF_FSDP_TP: return m->x * m->y;
	default: return m->x;
	}
}

/* One pass (0 forward, 1 backward) of one layer. */
static shs_rf_times pass_times(const shs_rf_mlp *m, shs_rf_strategy s, int pass, shs_rf_overlap o)
{
	static const double matmuls[N_PASSES] = { FWD_MATMULS, BWD_MATMULS };
	double df = m->d * m->f, bd = m->b * m->d, wx = m->w * m->m_x, wy = m->w * m->m_y;
	shs_rf_times t = { 0 };

	t.math = quot(matmuls[pass] * FLOPS_PER_MAC * m->b * df, layer_chips(m, s) * m->c);
	switch (s) {
	case SHS_RF_DP: t.comms_x = quot(dp_bytes[pass] * df, wx); break;
	case SHS_RF_FSDP: t.comms_x = quot(fsdp_bytes[pass] * df, wx); break;
	case SHS_RF_TP: t.comms_y = quot(tp_bytes[pass] * bd, wy); break;
	case SHS_RF_FSDP_TP:
		t.comms_x = quot(fsdp_bytes[pass] * df, m->y * wx);
		t.comms_y = quot(mixed_tp_bytes[pass] * bd, m->x * wy);
		break;
	}
	t.comms = o == SHS_RF_SUM ? t.comms_x + t.comms_y : fmax(t.comms_x, t.comms_y);
	return t;
}

shs_rf_times shs_rf_mlp_layer(const shs_rf_mlp *m, shs_rf_strategy s, shs_rf_pass p,
			      shs_rf_overlap o)
{
	shs_rf_times sum = { 0 };

	for (int pass = 0; pass < N_PASSES; pass++) {
		shs_rf_times t;
		if (!(p & (1 << pass)))
			continue;
		t = pass_times(m, s, pass, o);
		sum.math += t.math;
		sum.comms_x += t.comms_x;
		sum.comms_y += t.comms_y;
		sum.comms += t.comms;
	}
	return sum;
}

double shs_rf_mlp_params(const shs_rf_transformer *t)
{
	enum { GATED_MATRICES = 3 };

	return GATED_MATRICES * t->d * t->f * t->layers;
}

double shs_rf_attn_params(const shs_rf_transformer *t)
{
	enum { QO_KV = 2 }; /* Q and O are D x NH, K and V are D x KH */

	return QO_KV * t->d * (t->heads + t->kv_heads) * t->head_dim * t->layers;
}

double shs_rf_vocab_params(const shs_rf_transformer *t)
{
	enum { EMBED_UNEMBED = 2 };

	return EMBED_UNEMBED * t->vocab * t->d;
}

double shs_rf_params(const shs_rf_transformer *t)
{
	return shs_rf_mlp_params(t) + shs_rf_attn_params(t) + shs_rf_vocab_params(t);
}

double shs_rf_train_flops(double params, double tokens)
{
	return TRAIN_FLOPS_PER_PARAM * params * tokens;
}

double shs_rf_train_time(double flops, double chips, double c, double mfu)
{
	return quot(flops, chips * c * mfu);
}

double shs_rf_max_dp_params(double hbm_bytes)
{
	return hbm_bytes / SHS_RF_ADAM_BYTES;
}

double shs_rf_act_bytes(double tokens, double width, double layers)
{
	return SHS_RF_BF16_BYTES * tokens * width * layers;
}

shs_rf_train_mem shs_rf_train_memory(double n_params, double tokens, double width, double layers)
{
	shs_rf_train_mem m;

	m.params = SHS_RF_BF16_BYTES * n_params;
	m.optimizer = MOMENT_BYTES * n_params;
	m.activations = shs_rf_act_bytes(tokens, width, layers);
	m.total = m.params + m.optimizer + m.activations;
	return m;
}

double shs_rf_kv_cache_bytes(double seq, double layers, double kv_heads, double head_dim,
			     double elem_bytes)
{
	return KV_TENSORS * seq * layers * kv_heads * head_dim * elem_bytes;
}

int64_t shs_rf_pod_chips(const shs_hardware *h)
{
	int64_t n = 1;

	if (h->gpu || h->torus_rank == 0)
		return 0;
	for (uint32_t k = 0; k < h->torus_rank && k < sizeof(h->pod) / sizeof(h->pod[0]); k++)
		n *= h->pod[k];
	return n;
}
