/* The hardware catalog: chips, their HBM and FLOP/s, and the links between them. */
#ifndef SHS_HARDWARE_H
#define SHS_HARDWARE_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"
#include "status.h"

enum { SHS_HW_NAME_MAX = 32, SHS_HW_MAX = 64 };

/* Element widths a chip computes in (peak FLOP/s, dense, each). A chip without a unit for a
 * float width runs it at the rate of the next wider one it has (fp8 at the bf16 rate): XLA
 * converts operands of a type the chip lacks (FloatNormalization). */
typedef enum shs_hw_dtype {
	SHS_HW_BF16 = 0, /* bf16 / fp16 */
	SHS_HW_FP8 = 1,  /* fp8 (e4m3, e5m2) */
	SHS_HW_FP32 = 2,
	SHS_HW_INT8 = 3, /* int8 (OP/s) */
	SHS_HW_N_DTYPES
} shs_hw_dtype;

/* The name of a width: "bf16", "fp8", "fp32", "int8" ("?" for none). */
const char *shs_hw_dtype_name(shs_hw_dtype dt);

/* One accelerator and its links. Bandwidths in bytes/s, latencies in seconds, sizes in bytes.
 * TPU links are ICI torus axes; GPU links are an NVLink domain (node) and scale-out NICs. */
typedef struct shs_hardware {
	char name[SHS_HW_NAME_MAX];   /* "v5p", "h100", ... (lower case) */
	bool gpu;
	double flops[SHS_HW_N_DTYPES]; /* dense peak per chip; 0 when the chip has no such unit */
	double hbm_bytes, hbm_bw;
	/* TPU */
	uint32_t torus_rank;          /* 2 (v5e, v6e) or 3 (v4p, v5p, 7x) */
	double ici_bw;                /* per axis per chip, bidirectional (the book's W_ici) */
	double ici_latency;           /* per hop */
	int64_t pod[3];               /* the whole pod, e.g. 16x20x28 (a topology must fit it) */
	int64_t max_slice[3];         /* the largest slice the vendor sells, e.g. v5p 16x16x24;
				       * {0}: the pod (standard slices of --devices fit it) */
	int64_t wrap_unit;            /* an axis wraps when its size is a multiple of this (4 on
				       * v4p/v5p/7x cubes), or equals it (16 on v5e/v6e) */
	bool wrap_needs_equal;        /* v5e/v6e: only an axis of exactly wrap_unit wraps */
	int64_t chips_per_host;
	/* GPU */
	int64_t node_size;            /* GPUs per NVLink domain (8, 72) */
	double gpu_egress;            /* NVLink egress per GPU, one way (the book's W_GPU) */
	double node_egress;           /* scale-out egress per node, one way */
	/* both */
	double dcn_bw;                /* per chip, across slices / pods */
	double host_bw;               /* the host link per chip, one way (PCIe, NVLink-C2C): what
				       * offloading to host memory moves over; 0: not known (no
				       * offload) */
	double host_mem_bytes;        /* host memory per chip (the host's, or its VM's, over its
				       * chips): what offloaded activations may take; 0: none */
	/* achievable, not peak (hardware.c cites each; 0 reads as 1, i.e. the peak) */
	double matmul_eff;            /* fraction of peak large, aligned matmuls sustain */
	double hbm_eff;               /* fraction of hbm_bw streaming kernels sustain */
	double bmm_hbm_eff;           /* fraction of hbm_bw thin batched matmuls (attention's
				       * score matmuls) sustain; 0: hbm_eff (evaluate_rate.c) */
	int64_t matmul_tile;          /* the matmul unit's tile edge (evaluate_rate.c) */
	double ici_eff, nvlink_eff, scaleout_eff, dcn_eff; /* fraction of line rate collectives
							      * reach on each link kind */
	/* GPU collectives' latency (NCCL's, hardware_rates.c): a fixed cost per collective, per
	 * step inside an NVLink domain, per ring step across nodes and per tree level across
	 * nodes (an all-reduce's tree); 0: none */
	double coll_latency, nvlink_step_latency, scaleout_step_latency, scaleout_tree_latency;
	double windowed_einsum_bytes; /* an activation gathered into a matmul runs under it
				       * (collective matmul) from this operand size on */
	double all_reduce_combine_bytes; /* independent all-reduces over the same devices run as
					  * one, up to this many bytes together (XLA's
					  * AllReduceCombiner); 0: each runs alone */
} shs_hardware;

/* The built-in catalog: TPU v4p, v5e, v5p, v6e, 7x; A100, H100, H200, B200, GB200 NVL72, with
 * the numbers of ../shared/reference/scaling-book.md where the vendors agree, the vendors'
 * (Google Cloud TPU docs, NVIDIA datasheets) where they state more or otherwise (each entry
 * says which). Plus entries added by JSON files. */
typedef struct shs_hw_catalog {
	uint32_t n;
	shs_hardware hw[SHS_HW_MAX];
} shs_hw_catalog;

/* Fills c with the built-in entries. */
void shs_hw_catalog_builtin(shs_hw_catalog *c);

/* The entry named name (case-insensitive; "tpu-v5p" and "v5p" alike), or NULL. Borrowed. */
const shs_hardware *shs_hw_find(const shs_hw_catalog *c, const char *name);

/* Reads a JSON file: {"hardware": [{"name": "v5p", "hbm_bw": 3e12, ...}, ...]}: an entry whose
 * name exists overrides the members it gives (the rest stay), a new name adds an entry (from
 * "base": NAME when given, else all zero and every required member must be there). Members are
 * the field names of shs_hardware, flops as "flops_bf16", "flops_fp8", "flops_fp32",
 * "flops_int8", pod and max_slice as lists. Errors give path:LINE:COL for syntax and the member for values. Returns SHS_OK, SHS_EIO,
 * SHS_EPARSE or SHS_EINVAL; c is unchanged on error. */
int shs_hw_catalog_load_json(shs_hw_catalog *c, const char *path, shs_err *e);

/* Entry h as a new JSON object with the members a hardware file takes (name, gpu, flops_bf16,
 * flops_fp8, flops_fp32, flops_int8, hbm_bytes, hbm_bw, then the TPU or the GPU members (max_slice only when set), then
 * dcn_bw, host_bw, host_mem_bytes), in that order: {"hardware": [it]} loads back as the same entry. Caller releases;
 * NULL when out of memory. */
struct json_t;
struct json_t *shs_hw_to_json(const shs_hardware *h);

/* The names of the catalog, comma-separated, into buf (for messages). */
void shs_hw_names(const shs_hw_catalog *c, char *buf, size_t cap);

/* The chip propagation compares candidates on (plan.h): h's peak bf16 FLOP/s, HBM bandwidth and
 * the bandwidth of one mesh axis's links (TPU: an ICI axis, bidirectional; GPU: NVLink egress). */
void shs_hw_chip(const shs_hardware *h, shs_plan_chip *out);

/* The HBM bandwidth h's streaming kernels sustain: hbm_bw x hbm_eff (hbm_bw when hbm_eff is 0).
 * Thin batched matmuls move their bytes at hbm_bw x bmm_hbm_eff instead (shs__hbm_seconds). */
double shs_hw_hbm_rate(const shs_hardware *h);

/* Arithmetic intensities: peak bf16 FLOP/s over the ICI axis bandwidth (TPU), over the GPU's
 * NVLink egress, over the node's scale-out egress per GPU... as the book defines them. */
double shs_hw_ici_intensity(const shs_hardware *h);      /* C / W_ici (v5p: 2550) */
double shs_hw_dcn_intensity(const shs_hardware *h);      /* C / W_dcn per chip (v5p: 73,440) */
double shs_hw_nvlink_intensity(const shs_hardware *h);   /* C / W_GPU (H100: 2200) */
double shs_hw_scaleout_intensity(const shs_hardware *h); /* C / W_node egress (H100: 2475) */

#endif
