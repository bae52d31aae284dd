/* The built-in catalog's achievable rates: what matmuls and collectives sustain, with sources. */
#include "hardware_internal.h"

#include <string.h>

/*
 * Measured, not fitted: each figure is a published microbenchmark or the vendor's own word,
 * never a training run.
 *
 * matmul_eff, the Maximum Achievable Matmul FLOPS (MAMF) over the peak, bf16, from the sweep of
 * shapes in stas00/ml-engineering, compute/accelerator/README.md ("Maximum Achievable Matmul
 * FLOPS comparison table", mamf-finder.py): A100 SXM 267.9 of 312 TFLOP/s (85.9 %), H100 SXM
 * 792.1 of 989 (80.1 %). H200 is the H100's chip with faster HBM: its figure. B200 and GB200
 * have no published sweep there: the H100's figure is assumed until one is. TPUs: XLA's own
 * bf16 matmul (jnp.matmul) on TPU v5e sustains 92.3 % of peak at 8192 x 8192 x 8192 (84.3 % at
 * 4096^3, where dispatch overhead weighs more), measured in JAX's Pallas TPU matmul guide
 * (docs/pallas/tpu/matmul.ipynb, "XLA matmul"); the same MXU design is assumed on the other
 * TPUs until they are measured.
 *
 * hbm_eff: the bandwidth streaming kernels sustain over the catalog's hbm_bw, so that the
 * product is the measured rate. A100 80 GB: STREAM triad 1759 GB/s (te42kyfo/gpu-benches,
 * gpu-stream/a100_80.txt), of 2000 here: 0.88. H100 SXM: torch.clone of bf16 tensors, 3003 GB/s
 * (Dao-AILab/quack, AI/hadamard_roofline_analysis.md; its softmax kernel reaches 3.01 TB/s), of
 * 3400 here: 0.88; H200, B200 and GB200 take it until measured (the GB300's triad, 7140 of 8000
 * GB/s, meta-pytorch/KernelAgent oink/benchmarks/README.md, is as far from its peak). TPU7x: a
 * copy of 8 GiB moves 6421 GB/s per chip (AI-Hypercomputer/accelerator-microbenchmarks,
 * Ironwood/guides/hbm/hbm.md), of 7400 here: 0.87; no other TPU's is published, and they take
 * it. Elementwise and reduction kernels are such streams: their time is their bytes at this
 * rate, not at the peak.
 *
 * bmm_hbm_eff: the bandwidth thin batched matmuls sustain over hbm_bw (evaluate_rate.c: batch
 * dims, and a local M, N or K of one tile or less). They are attention's score matmuls where no
 * flash kernel runs: Q K^T contracts head_dim, P V and the gradients make head_dim-wide
 * outputs, and each writes or reads a [heads, T, S] score matrix with little work per byte.
 * Measured, with everything else of the step apart, by the FlashAttention-2 release's benchmark
 * of PyTorch's attention (Dao-AILab/flash-attention, assets/flash2_a100_fwd_bwd_benchmark.png
 * and flash2_h100_fwd_bwd_benchmark.png at 4f285b35; its script benchmarks/benchmark_flash_
 * attention.py at 60499abc: fp16, batch 8, 32 heads of 64, sequence 2048, no mask, dropout 0,
 * forward + backward: baddbmm, softmax, bmm and their gradients). A100 80 GB SXM 43 TFLOP/s,
 * H100 80 GB SXM 81, of 3.5 x 4 x 8 x 2048^2 x 32 x 64 FLOPs: 22.37 and 11.88 ms. Of that,
 * the softmax (forward: read and write the [8, 32, 2048, 2048] scores, T = 2.147 GB; backward:
 * read two, write one: 5 T in all) and the layout copies of q, k, v and their gradients (16 x
 * 67 MB) are streams at hbm_eff: 6.71 and 3.93 ms. The matmuls move the rest, 6 T of scores
 * and 12 x 67 MB of q, k, v, o and their gradients, 13.69 GB, in 15.66 and 7.95 ms: 874 and
 * 1722 GB/s, 0.437 of the A100's 2000 GB/s here and 0.506 of the H100's 3400. H200, B200 and
 * GB200 take the H100's figure until measured. The FlashAttention paper's own table on an A100
 * 40 GB (arXiv 2205.14135, appendix E.6, table 20: Megatron-LM's and PyTorch's attention without
 * mask or dropout, batch 16, 8 heads of 64, 2048 tokens, forward + backward 13.21 ms) gives the
 * same within 14 %: 6.85 GB in 13.21 ms less 5.91 GB of streams at that card's triad (1360
 * GB/s, te42kyfo/gpu-benches gpu-stream/a100_40.txt), 772 GB/s, 0.496 of its 1555. TPUs: not
 * measured (their non-flash attention is rare; MaxText runs the Pallas kernel): hbm_eff.
 *
 * matmul_tile: TPU MXUs are 128 x 128 on v4, v5e and v5p and 256 x 256 on v6e and TPU7x
 * (scaling-book.md 2.1, "MXU"); NVIDIA tensor-core GEMM kernels compute 128 x 128 (up to 256 x
 * 128) output tiles (NVIDIA, "Matrix Multiplication Background User's Guide", tile
 * quantization): 128.
 *
 * Collectives, the fraction of the line rate NCCL moves (nccl-tests bus bandwidth):
 *   NVLink: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an
 *   effective NVLink bandwidth of 370GB/s" (S. Jeaugey, NCCL maintainer, NVIDIA/nccl-tests
 *   issue 212, H100): 370 / 450 = 0.82, taken for every NVLink generation from Hopper on.
 *   A100: all_reduce_perf on 8 A100 SXM reaches a bus bandwidth of 208 GB/s of 300
 *   (NVIDIA/nccl-tests issue 178; about 200 in issue 149): 0.69.
 *   InfiniBand scale-out: 96 GB/s peak bus bandwidth of 100 (4 HDR NICs per node of A100,
 *   NVIDIA/nccl-tests issue 119): 0.96, taken for NDR as well.
 *   TPU ICI: an AllGather over a v5e 8x16 slice reaches about 95 % of the link bandwidth from
 *   arrays of about 10 MB on (scaling-book.md 3.1, "Empirical", the book's sharding.md): 0.95,
 *   taken for every TPU until another is measured. DCN: no published microbenchmark; the
 *   book's bandwidth (1).
 *
 * windowed_einsum_bytes: XLA's SPMD partitioner turns an all-gather feeding an einsum into a
 * windowed einsum (collective matmul, overlapped with the matmul) when the partitioned operand
 * is at least threshold_for_windowed_einsum_mib (xla/service/spmd/spmd_partitioner.h), whose
 * default is 100000 MiB: off in practice. On GPU the flag xla_gpu_threshold_for_windowed_
 * einsum_mib keeps that default (xla/debug_options_flags.cc), as Megatron-LM's tensor-parallel
 * collectives block the stream. TPUs take the same default: libtpu's own is not public, and
 * the public record says it decomposed nothing unasked in the fidelity set's runs. MaxText's v5p
 * recipes of December 2023 (configs/v5p/32b.sh .. 512b.sh at 76bd53b) set no windowed-einsum
 * flag; its GPT-3 175B MLPerf 4.0 recipe (2024, configs/v5p/gpt3_175b/gpt3_175b_base.sh)
 * turns the decomposition on by hand (--xla_tpu_decompose_all_gather_einsum=true); and XLA's
 * partitioner did not window a dot whose operand is split on a second dimension (FSDP or data
 * with tensor parallelism) before openxla/xla pull request 26948 (2025: "without this fix, the
 * collective matmul does not even kick in models using DP/FSDP + TP"). Later libtpu releases
 * may decompose by default (MaxText's later flag library has a DISABLE_COLLECTIVE_MATMUL): a
 * hardware file's windowed_einsum_bytes of 0 says a runtime decomposes every size.
 *
 * coll_latency, nvlink_step_latency, scaleout_step_latency, scaleout_tree_latency: NCCL's own cost
 * model, with which it picks an algorithm and protocol (src/graph/tuning.cc, NVIDIA/nccl 2.18 on):
 * a ring collective's latency is baseLat plus hwLat per step, the steps that cross nodes at the
 * network's hwLat and the others at NVLink's. For the LL protocol NCCL runs small messages with,
 * Ring baseLat is 6.6 us, hwLat 0.6 us on NVLink and 2.7 us on the network (the same for every GPU
 * generation in that table). An all-reduce may run as a tree instead, whose LL rows are 6.8 us
 * base (taken as the ring's 6.6), 0.6 us a step on NVLink and 5.0 us a level across the network.
 * collective.c takes that latency as the floor of a collective's time, as the book's T_min is on
 * ICI.
 *
 * all_reduce_combine_bytes: XLA's AllReduceCombiner merges all-reduces that do not depend on
 * one another and reduce over the same devices into one, up to a combined size of
 * kDefaultAllReduceCombineThreshold, 30 MiB + 7 bytes (xla/service/collective_utils.h; the GPU
 * flag xla_gpu_all_reduce_combine_threshold_bytes defaults to it in
 * xla/debug_options_flags.cc). TPUs take the same default: libtpu's own is not public.
 */
#define MIB 1048576.0
#define XLA_WINDOWED (100000 * MIB)
#define XLA_COMBINE (30 * MIB + 7)
#define NCCL_BASE 6.6e-6
#define NCCL_NVLINK_STEP 0.6e-6
#define NCCL_NET_STEP 2.7e-6
#define NCCL_NET_TREE 5.0e-6
#define TPU_MATMUL 0.923
#define TPU_HBM (6421.0 / 7400)
#define TPU_ICI 0.95
#define NV_HBM (3003.0 / 3400)
#define A100_HBM (1759.0 / 2000)
#define A100_BMM (874.0 / 2000)
#define NV_BMM (1722.0 / 3400)
#define TPU_BMM 0

static const struct rates {
	const char *name;
	double matmul_eff;
	int64_t matmul_tile;
	double hbm_eff, bmm_hbm_eff;
	double ici_eff, nvlink_eff, scaleout_eff, dcn_eff, windowed_einsum_bytes;
} rates[] = {
	{ "v4p", TPU_MATMUL, 128, TPU_HBM, TPU_BMM, TPU_ICI, 0, 0, 1, XLA_WINDOWED },
	{ "v5e", TPU_MATMUL, 128, TPU_HBM, TPU_BMM, TPU_ICI, 0, 0, 1, XLA_WINDOWED },
	{ "v5p", TPU_MATMUL, 128, TPU_HBM, TPU_BMM, TPU_ICI, 0, 0, 1, XLA_WINDOWED },
	{ "v6e", TPU_MATMUL, 256, TPU_HBM, TPU_BMM, TPU_ICI, 0, 0, 1, XLA_WINDOWED },
	{ "7x", TPU_MATMUL, 256, TPU_HBM, TPU_BMM, TPU_ICI, 0, 0, 1, XLA_WINDOWED },
	{ "a100", 267.9 / 312, 128, A100_HBM, A100_BMM, 0, 208.0 / 300, 0.96, 0.96, XLA_WINDOWED },
	{ "h100", 792.1 / 989, 128, NV_HBM, NV_BMM, 0, 370.0 / 450, 0.96, 0.96, XLA_WINDOWED },
	{ "h200", 792.1 / 989, 128, NV_HBM, NV_BMM, 0, 370.0 / 450, 0.96, 0.96, XLA_WINDOWED },
	{ "b200", 792.1 / 989, 128, NV_HBM, NV_BMM, 0, 370.0 / 450, 0.96, 0.96, XLA_WINDOWED },
	{ "gb200-nvl72", 792.1 / 989, 128, NV_HBM, NV_BMM, 0, 370.0 / 450, 0.96, 0.96, XLA_WINDOWED },
};

void shs__hw_rates_apply(shs_hw_catalog *c)
{
	for (uint32_t k = 0; k < c->n; k++)
		for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
			shs_hardware *h = &c->hw[k];
			if (strcmp(h->name, rates[r].name))
				continue;
			h->matmul_eff = rates[r].matmul_eff;
			h->matmul_tile = rates[r].matmul_tile;
			h->hbm_eff = rates[r].hbm_eff;
			h->bmm_hbm_eff = rates[r].bmm_hbm_eff;
			h->ici_eff = rates[r].ici_eff;
			h->nvlink_eff = rates[r].nvlink_eff;
			h->scaleout_eff = rates[r].scaleout_eff;
			h->dcn_eff = rates[r].dcn_eff;
			h->windowed_einsum_bytes = rates[r].windowed_einsum_bytes;
			h->all_reduce_combine_bytes = XLA_COMBINE; /* every backend's */
			if (h->gpu) {
				h->coll_latency = NCCL_BASE;
				h->nvlink_step_latency = NCCL_NVLINK_STEP;
				h->scaleout_step_latency = NCCL_NET_STEP;
				h->scaleout_tree_latency = NCCL_NET_TREE;
			}
		}
}
