/* The closed forms of the "How To Scale Your Model" book (../shared/reference/scaling-book.md). */
#ifndef SHS_ROOFLINE_H
#define SHS_ROOFLINE_H

#include <stdint.h>

#include "hardware.h"

/*
 * Units everywhere: FLOP/s per chip, bytes, bytes/s, seconds, tokens. TPU link bandwidths are
 * bidirectional per axis (the book's W_ici, shs_hardware.ici_bw); GPU ones are one-way egress.
 * "alpha" is an arithmetic intensity C / W in FLOPs per byte: pass shs_hw_ici_intensity(),
 * shs_hw_dcn_intensity(), shs_hw_nvlink_intensity() or shs_hw_scaleout_intensity(). Every
 * function is pure: it reads its arguments only (h is borrowed for the call) and keeps nothing.
 * A quotient whose divisor is not positive gives INFINITY (never a trap), a dtype the chip has no
 * unit for counts as 0 FLOP/s; arguments are otherwise expected positive. Sections (§) are those
 * of scaling-book.md.
 */

/* Bytes per element and per parameter the book's models use. */
enum {
	SHS_RF_BF16_BYTES = 2,        /* weights and activations in bf16 */
	SHS_RF_ADAM_MOMENT_BYTES = 8, /* Adam's two fp32 moments per parameter */
	SHS_RF_ADAM_BYTES = 10        /* bf16 parameter + the moments: the book's floor (§4) */
};

/* --- Single-chip rooflines (§4 roofline.md, §8) --- */

/* Peak FLOP/s in dt over HBM bytes/s: v5e bf16 240, H100 295. */
double shs_rf_hbm_intensity(const shs_hardware *h, shs_hw_dtype dt);

/* Smallest token batch for x[B,D] . w[D,F] to be compute-bound when D and F are large (only the
 * weights are read): C * weight_bytes / (2 * HBM bw). v5e: bf16 240, int8 240, int8 weights with
 * bf16 FLOPs 120. */
double shs_rf_matmul_min_batch_limit(const shs_hardware *h, shs_hw_dtype dt, double weight_bytes);

/* The same, exactly: x, w and the output [B,F] all read or written once, elem_bytes each; B where
 * 2BDF / C = (DF + BD + BF) * elem_bytes / HBM bw (§8 Q4: int8 [16384,4096] on v5e: 259).
 * INFINITY when no batch is compute-bound. */
double shs_rf_matmul_min_batch(const shs_hardware *h, shs_hw_dtype dt, double d, double f,
			       double elem_bytes);

/* Peak bf16 FLOP/s over one-way ICI bandwidth (v5e 4377). */
double shs_rf_ici_oneway_intensity(const shs_hardware *h);

/* Smallest D for a [B,D] . [D,F] matmul sharded on D over two chips to be compute-bound over
 * one ICI link: D/2 > C / W_one_way (v5e: 8755). */
double shs_rf_two_chip_min_d(const shs_hardware *h);

/* Largest per-hop ICI buffer that is still latency-bound: one-way link bandwidth times the hop
 * latency (v5e: 45 kB). */
double shs_rf_ici_latency_bytes(const shs_hardware *h);

/* Seconds to read bytes of weights from the HBM of chips chips: the sampling-latency floor
 * (§8 Q1: 200B bf16 parameters on 32 v4p: about 10 ms). */
double shs_rf_weight_load_time(double bytes, double chips, double hbm_bw);

/* --- Effective bandwidth of one level of a GPU network (§2.2, §3.3) --- */

/* All-gather bandwidth of a level of d units on links of w bytes/s: d w / (d - 1). H100 node
 * (8, 450e9): 514 GB/s; leaf (32, 400e9): 413 GB/s; spine (4, 12.8e12): 17.1 TB/s. */
double shs_rf_level_allgather_bw(double d, double w);

/* --- Training rooflines for the MLP-only model (§5, §6) --- */

/* Smallest per-chip token batch for DP or FSDP to be compute-bound when the data axis spans
 * m_axes links of intensity alpha: alpha / m_axes (§5.1-5.2). v5p ICI: 2550, over 3 axes 850;
 * DCN per slice (m_axes 1, alpha C/W_dcn): 73,440; H100 in a node 2200, across nodes 2475. */
double shs_rf_dp_min_tokens(double alpha, double m_axes);

/* The same on a ring of only x members (x nodes): alpha (x - 1) / x (§6: 2 H100 nodes, 1237). */
double shs_rf_dp_min_tokens_ring(double alpha, double x);

/* DP/FSDP of a mixture of experts, active of experts experts per token: (E/k) alpha (§6: k=4,
 * E=128 across H100 nodes: 79,200). */
double shs_rf_moe_dp_min_tokens(double alpha, double experts, double active);

/* Largest compute-bound tensor-parallel degree: m_y F / alpha (§5.3; GPU F W / C, §6). */
double shs_rf_tp_max(double alpha, double m_y, double f);

/* Largest compute-bound TP degree spanning exactly two GPU nodes: F > alpha (Y - node_size), so
 * node_size + F / alpha (§6: F=28000 on H100, about 19). */
double shs_rf_tp_max_two_nodes(double alpha, double node_size, double f);

/* How the FSDP and TP collectives of mixed FSDP+TP combine. */
typedef enum shs_rf_overlap {
	SHS_RF_OVERLAP = 0, /* max(T_FSDP, T_TP): the current text (since 2025-08-12) */
	SHS_RF_SUM = 1      /* T_FSDP + T_TP: the older text, kept as an option (§9 E4) */
} shs_rf_overlap;

/* Smallest per-chip token batch B/N for mixed FSDP+TP to be compute-bound:
 * alpha^2 / (m_x m_y F) overlapped, 4 alpha^2 / (m_x m_y F) summed (§5.4: v5p, F=32768,
 * m_x m_y = 2: 99, or 400 in the old form). */
double shs_rf_mixed_min_tokens(double alpha, double m_x, double m_y, double f, shs_rf_overlap o);

/* The FSDP degree that balances the FSDP and TP collectives of mixed FSDP+TP on n chips:
 * sqrt((B/F) (m_x/m_y) n) (§5.4: 13.69 for n=64, B=48000, F=32768, m_x/m_y = 2). */
double shs_rf_mixed_x_opt(double b, double f, double m_x, double m_y, double n);

/* The book's four training strategies (§5 "Takeaways" table). */
typedef enum shs_rf_strategy {
	SHS_RF_DP = 0,
	SHS_RF_FSDP = 1,
	SHS_RF_TP = 2,
	SHS_RF_FSDP_TP = 3
} shs_rf_strategy;

/* Which passes to count. */
typedef enum shs_rf_pass {
	SHS_RF_FWD = 1,
	SHS_RF_BWD = 2,
	SHS_RF_FWD_BWD = 3
} shs_rf_pass;

/* One MLP layer In[B,D] . W_in[D,F] . W_out[F,D] in bf16 on a mesh: x chips on the data (DP or
 * FSDP) axis spanning m_x links, y chips on the tensor axis spanning m_y links (1 when unused). */
typedef struct shs_rf_mlp {
	double d, f;     /* d_model, d_ff */
	double b;        /* batch in tokens, total over all chips */
	double x, y;     /* data and tensor degrees */
	double m_x, m_y; /* physical links each spans */
	double c;        /* FLOP/s per chip */
	double w;        /* bytes/s per link, bidirectional on TPU (W_ici; or M W_dcn over DCN) */
} shs_rf_mlp;

/* Seconds per layer: compute, the collectives of the data axis and of the tensor axis, and the
 * communication time they give together (their sum, or their max when overlapped). */
typedef struct shs_rf_times {
	double math;
	double comms_x, comms_y;
	double comms;
} shs_rf_times;

/* The §5 "Takeaways" table as times: compute 4BDF/n forward and 8BDF/n backward (n the chips the
 * layer is split over); comms in bytes DP 0 + 8DF, FSDP 4DF + 8DF, TP 4BD + 4BD, FSDP+TP
 * (4BD/X + 4DF/Y) + (8BD/X + 8DF/Y), each over W times the links its axis spans. The per-section
 * models are DP on the backward pass and FSDP, TP and FSDP+TP on the forward pass; at the
 * thresholds above their math and comms are equal. */
shs_rf_times shs_rf_mlp_layer(const shs_rf_mlp *m, shs_rf_strategy s, shs_rf_pass p,
			      shs_rf_overlap o);

/* --- Model sizes, FLOPs and memory (§4, §5.8, §7) --- */

/* A dense Transformer: L layers, d_model, d_ff (gated MLP, 3 matrices), query heads, kv heads,
 * head dim, vocabulary. */
typedef struct shs_rf_transformer {
	double layers, d, f, heads, kv_heads, head_dim, vocab;
} shs_rf_transformer;

double shs_rf_mlp_params(const shs_rf_transformer *t);   /* 3 D F L (LLaMA-3 70B 56.3e9) */
double shs_rf_attn_params(const shs_rf_transformer *t);  /* 2 D (N + K) H L (12e9) */
double shs_rf_vocab_params(const shs_rf_transformer *t); /* 2 V D, embed + unembed (2.1e9) */
/* Their sum; layernorms are left out as the book's examples leave them (70.55e9). */
double shs_rf_params(const shs_rf_transformer *t);

/* Training FLOPs: 6 params tokens (LLaMA-3 70B on 15T tokens: 6.3e24). */
double shs_rf_train_flops(double params, double tokens);

/* Seconds for flops on chips chips of c FLOP/s at utilisation mfu (0..1]. */
double shs_rf_train_time(double flops, double chips, double c, double mfu);

/* Largest model pure DP with Adam fits in hbm_bytes: hbm / 10 (v5p: 9.6e9 parameters). */
double shs_rf_max_dp_params(double hbm_bytes);

/* Bytes of saved activations in bf16: 2 tokens width layers, where width is what each layer saves
 * per token: 4 D for 4 checkpoints of [B,D] (§7: 20.9 TB), D + 2F after the 3 big MLP matmuls
 * (§5.8: 42 TB), 20 D saving everything (§4: 84 TB). */
double shs_rf_act_bytes(double tokens, double width, double layers);

/* The book's training memory: bf16 parameters, Adam moments and saved activations. */
typedef struct shs_rf_train_mem {
	double params, optimizer, activations, total; /* bytes, over the whole model */
} shs_rf_train_mem;

/* params 2 P, optimizer 8 P, activations shs_rf_act_bytes(tokens, width, layers), total their
 * sum (§7 LLaMA-3 70B: 140 GB, 560 GB, 20.9 TB, 21.6 TB). */
shs_rf_train_mem shs_rf_train_memory(double n_params, double tokens, double width, double layers);

/* Bytes of a KV cache [2, S, L, K, H] of elem_bytes elements (8k context, 64 layers, KH = 8192,
 * int8: 8 GiB). */
double shs_rf_kv_cache_bytes(double seq, double layers, double kv_heads, double head_dim,
			     double elem_bytes);

/* Chips of the hardware's largest slice (v5p 16x20x28: 8960); 0 for a GPU. */
int64_t shs_rf_pod_chips(const shs_hardware *h);

#endif
