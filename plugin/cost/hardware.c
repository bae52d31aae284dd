/* The built-in hardware catalog (the book's and the vendors' numbers), name lookup and intensities. */
#include "hardware_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/*
 * Sources: the scaling book (../shared/reference/scaling-book.md, section 2.1 for TPUs, 2.2 for
 * GPUs) and the vendors: Google Cloud's TPU pages (docs.cloud.google.com/tpu/docs/v4, v5e,
 * v5p, v6e, tpu7x; "G" below) and NVIDIA's datasheets (H100, H200, DGX B200, GB200 NVL72; "N").
 * Which wins: a capacity or a peak the vendor states is taken in the vendor's unit (GiB where
 * Google writes GiB: 95 GiB = 95 * 2^30 bytes; GB = 1e9 where the vendor writes GB); where the
 * book's number is the vendor's rounded (v5p 2.8e12 for G's 2765 GB/s, v6e 9.20e14 for 918
 * TFLOP/s, H100 9.9e14 for N's 989.4) the book's stays, so the book's worked examples keep
 * their figures; where they differ (the book's "int8" column as fp8, v5p 96GB, B200 192GB,
 * GB200 as a B200) the vendor wins. Units: bytes, bytes/s, FLOP/s (OP/s for int8), seconds.
 *
 * Peaks are dense (no 2:4 sparsity). fp8: the vendor's fp8 figure. A chip without fp8 units
 * (A100; TPU v4, v5e, v5p and v6e, whose MXUs take bf16 and int8: G's TPU7x table lists the fp8
 * peak of v5p and v6e as their bf16 peak, 459 and 918) runs fp8 at its bf16 rate: XLA converts
 * the operands (FloatNormalization), so flops_fp8 = flops_bf16 there, not 0 and not int8's.
 * No fp32 peaks (the book gives none, and training computes in bf16): flops[SHS_HW_FP32] = 0.
 *
 * TPU links: ici_bw is the book's "ICI BW/link bidi" (W_ici, bidirectional per axis), hop
 * latency "about 1 us" (2.1, Torus). Pods with rank 2 keep pod[2] = 1. v4p/v5p/7x slices wrap
 * on axes that are multiples of the 4x4x4 cube; v5e/v6e only on an axis of exactly 16.
 *
 * GPU links (2.2, NVLink and scale-out tables): gpu_egress is NVLink egress per GPU, one way;
 * node_egress the scale-out egress of one node, one way. The book gives no DCN for GPUs: their
 * dcn_bw is the scale-out bandwidth per GPU, node_egress / node_size.
 */
#define GIB (1024.0 * 1024.0 * 1024.0) /* a constant expression, for the initializers */

static const shs_hardware builtin[] = {
	{
		.name = "v4p",
		/* G v4: "275 teraflops (bf16 or int8)", "32 GiB, 1200 GBps" (the book: 32GB,
		 * 1.2e12); no fp8 unit: fp8 at the bf16 rate */
		.flops = { [SHS_HW_BF16] = 2.75e14, [SHS_HW_FP8] = 2.75e14,
			   [SHS_HW_INT8] = 2.75e14 },
		.hbm_bytes = 32 * GIB,
		.hbm_bw = 1.2e12,
		.torus_rank = 3,
		.ici_bw = 9.0e10,        /* ICI BW/link bidi */
		.ici_latency = 1e-6,
		.pod = { 16, 16, 16 },   /* superpod 16x16x16 (G: 4096 chips) */
		.wrap_unit = 4,          /* full 4x4x4 cubes */
		.chips_per_host = 4,     /* host 2x2x1 */
		/* the book gives no DCN for v4p: v5p's 6.25e9 per chip (an assumption) */
		.dcn_bw = 6.25e9,
		.host_bw = 1.6e10,       /* PCIe: "TPU v4 is 16GB/s each way" (the book) */
		.host_mem_bytes = 407e9 / 4, /* G: ct4p-hightpu-4t, 407 GB for 4 chips */
	},
	{
		.name = "v5e",
		/* book: bf16 1.97e14, int8 3.94e14 (G: 197 TFLOP/s, 393 TOP/s: the book's is 2 x
		 * 1.97e14); G: "16 GB" at 819 GBps (the book's 8.2e11); G states no fp8: the bf16
		 * rate */
		.flops = { [SHS_HW_BF16] = 1.97e14, [SHS_HW_FP8] = 1.97e14,
			   [SHS_HW_INT8] = 3.94e14 },
		.hbm_bytes = 16e9,
		.hbm_bw = 8.2e11,
		.torus_rank = 2,
		.ici_bw = 9.0e10,
		.ici_latency = 1e-6,
		.pod = { 16, 16, 1 },
		.wrap_unit = 16,         /* only an axis of exactly 16 wraps */
		.wrap_needs_equal = true,
		.chips_per_host = 8,     /* host 4x2 */
		.dcn_bw = 3.125e9,       /* DCN egress per TPU */
		.host_bw = 1.6e10,       /* PCIe: "about 1.6e10 B/s per TPU" (the book) */
		.host_mem_bytes = 48e9,  /* G: ct5lp-hightpu-8t, 384 GB for 8 chips (1t: 48 GB) */
	},
	{
		.name = "v5p",
		/* G v5p: bf16 459 TFLOP/s, FP8 459 (no fp8 unit: the bf16 rate), "HBM capacity per
		 * chip (GiB) 95" (96 GiB physical, 1 GiB reserved by the runtime: 95 is what JAX can
		 * allocate), 2765 GB/s (the book's 2.8e12 rounds it). int8 9.18e14 (the book). */
		.flops = { [SHS_HW_BF16] = 4.59e14, [SHS_HW_FP8] = 4.59e14,
			   [SHS_HW_INT8] = 9.18e14 },
		.hbm_bytes = 95 * GIB,
		.hbm_bw = 2.8e12,
		.torus_rank = 3,
		.ici_bw = 1.8e11,
		.ici_latency = 1e-6,
		.pod = { 16, 20, 28 },   /* 8960 chips (the book, G "8960 chips per pod") */
		/* G v5p: "The maximum v5p shape is 16x16x24 (6144 chips, 96 cubes)" */
		.max_slice = { 16, 16, 24 },
		.wrap_unit = 4,
		.chips_per_host = 4,     /* host 2x2x1 */
		.dcn_bw = 6.25e9,        /* DCN egress per TPU (G: 50 Gbps) */
		.host_bw = 1.6e10,       /* PCIe: "about 1.6e10 B/s per TPU" (the book) */
		.host_mem_bytes = 448e9 / 4, /* G: ct5p-hightpu-4t, 448 GB for 4 chips */
	},
	{
		.name = "v6e",
		/* book: bf16 9.20e14 (G 918), int8 1.84e15 (G 1836); G's TPU7x table: FP8 918 (no
		 * fp8 unit: the bf16 rate), "HBM capacity per chip (GiB) 32"; 1.6e12 (G 1600 GBps) */
		.flops = { [SHS_HW_BF16] = 9.20e14, [SHS_HW_FP8] = 9.20e14,
			   [SHS_HW_INT8] = 1.84e15 },
		.hbm_bytes = 32 * GIB,
		.hbm_bw = 1.6e12,
		.torus_rank = 2,
		.ici_bw = 1.8e11,
		.ici_latency = 1e-6,
		.pod = { 16, 16, 1 },
		.wrap_unit = 16,
		.wrap_needs_equal = true,
		.chips_per_host = 8,     /* host 4x2 */
		.dcn_bw = 12.5e9,
		.host_bw = 3.2e10,       /* PCIe: "3.2e10 for v6e" (the book) */
		.host_mem_bytes = 1440e9 / 8, /* G: ct6e-standard-8t, 1440 GB for 8 chips */
	},
	{
		.name = "7x",
		/* book: bf16 2.30e15 (G 2307), int8 4.61e15; G's TPU7x table: FP8 4614 TFLOP/s (fp8
		 * MXUs), "HBM capacity per chip (GiB) 192", 7380 GB/s (the book's 7.4e12) */
		.flops = { [SHS_HW_BF16] = 2.30e15, [SHS_HW_FP8] = 4.614e15,
			   [SHS_HW_INT8] = 4.61e15 },
		.hbm_bytes = 192 * GIB,
		.hbm_bw = 7.4e12,
		.torus_rank = 3,
		.ici_bw = 1.8e11,
		.ici_latency = 1e-6,
		.pod = { 4, 4, 576 },    /* current table (first listed as 4x4x144); G: 9216 */
		.wrap_unit = 4,
		.chips_per_host = 4,     /* host 2x2x1 */
		.dcn_bw = 12.5e9,
		/* no host link figure in the book or G: host_bw 0, no offload */
	},
	{
		.name = "a100",
		/* book: bf16 3.1e14 (N 312), "fp8/int8 6.2e14": A100 (sm80) has int8 tensor cores
		 * (N 624 TOP/s) but no fp8 ones (fp8 arrived with sm89/sm90): fp8 at the bf16 rate.
		 * 80GB at 2.0e12 (N: 80GB, 2039 GB/s SXM) */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 3.1e14, [SHS_HW_FP8] = 3.1e14,
			   [SHS_HW_INT8] = 6.2e14 },
		.hbm_bytes = 80e9,
		.hbm_bw = 2.0e12,
		.node_size = 8,
		.gpu_egress = 300e9,     /* NVLink 3.0: 12 links x 25GB/s */
		/* the book gives no A100 scale-out: one 200Gb/s HDR NIC per GPU, 8 x 25e9
		 * (assumption) */
		.node_egress = 200e9,
		.dcn_bw = 25e9,
		.host_bw = 32e9,         /* N: "PCIe Gen4: 64GB/s" (both ways) */
		.host_mem_bytes = 2e12 / 8, /* N DGX A100 640GB: 2TB system memory, 8 GPUs */
	},
	{
		.name = "h100",
		/* book: bf16 9.9e14 (N SXM: 989 dense), fp8 2.0e15 rounds N's dense 1979: N wins
		 * (1.979e15), int8 N 1979 TOP/s dense; 80GB at 3.4e12 (table; prose and quizzes
		 * 3.35e12, N 3.35 TB/s) */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 9.9e14, [SHS_HW_FP8] = 1.979e15,
			   [SHS_HW_INT8] = 1.979e15 },
		.hbm_bytes = 80e9,
		.hbm_bw = 3.4e12,
		.node_size = 8,
		.gpu_egress = 450e9,     /* NVLink 4.0: 18 links x 25GB/s */
		.node_egress = 400e9,    /* one 400Gbps CX7 NIC per GPU */
		.dcn_bw = 50e9,
		.host_bw = 64e9,         /* N SXM: "PCIe Gen5: 128GB/s" (both ways) */
		.host_mem_bytes = 2e12 / 8, /* N DGX H100: 2TB system memory, 8 GPUs */
	},
	{
		.name = "h200",
		/* the H100's tensor cores (N: the same 989 / 1979 / 1979 dense); 141GB at 4.8e12;
		 * Hopper links as H100 */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 9.9e14, [SHS_HW_FP8] = 1.979e15,
			   [SHS_HW_INT8] = 1.979e15 },
		.hbm_bytes = 141e9,
		.hbm_bw = 4.8e12,
		.node_size = 8,
		.gpu_egress = 450e9,
		.node_egress = 400e9,
		.dcn_bw = 50e9,
		.host_bw = 64e9,         /* N: "PCIe Gen5: 128GB/s" (both ways) */
		.host_mem_bytes = 2e12 / 8, /* N DGX H200: 2TB system memory, 8 GPUs */
	},
	{
		.name = "b200",
		/* bf16: 2.25e15 dense (N HGX/DGX B200 at 1000 W; the book's quizzes' 2250e12, its
		 * table's 2.3e15 rounds it, and the book's B200 intensities 2500 and 5625 need it);
		 * fp8 and int8 4.5e15 dense. HBM: N DGX B200 "1,440GB total GPU memory" over 8 GPUs
		 * = 180GB (the book's 192GB is the die stacks' raw size), "64TB/s" / 8 = 8.0e12 */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 2.25e15, [SHS_HW_FP8] = 4.5e15,
			   [SHS_HW_INT8] = 4.5e15 },
		.hbm_bytes = 180e9,
		.hbm_bw = 8.0e12,
		.node_size = 8,
		.gpu_egress = 900e9,     /* NVLink 5.0: 18 links x 50GB/s */
		.node_egress = 400e9,
		.dcn_bw = 50e9,
		.host_bw = 64e9,         /* N DGX B200: PCIe Gen5 x16 per GPU, 128GB/s both ways */
		.host_mem_bytes = 2e12 / 8, /* N DGX B200: 2TB system memory (4TB optional) */
	},
	{
		.name = "gb200-nvl72",
		/* N GB200 NVL72 per rack of 72 GPUs (1200 W parts, faster than the HGX B200):
		 * FP16/BF16 360 PFLOP/s sparse = 2.5e15 dense per GPU, FP8 720 sparse = 5.0e15,
		 * INT8 5.0e15; "13.4TB HBM3e" / 72 = 186GB, "576TB/s" / 72 = 8.0e12. Node egress
		 * 4*18*400/8 = 3.6TB/s (the book) */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 2.5e15, [SHS_HW_FP8] = 5.0e15,
			   [SHS_HW_INT8] = 5.0e15 },
		.hbm_bytes = 186e9,
		.hbm_bw = 8.0e12,
		.node_size = 72,
		.gpu_egress = 900e9,
		.node_egress = 3600e9,
		.dcn_bw = 50e9,
		/* N: "NVLink-C2C 900GB/s" (both ways) between one Grace and its two GPUs */
		.host_bw = 225e9,
		.host_mem_bytes = 480e9 / 2, /* N: 480GB LPDDR5X per Grace, two GPUs each */
	},
};

enum { N_BUILTIN = sizeof(builtin) / sizeof(builtin[0]) };

/* Other names of catalog entries (besides case and a "tpu-"/"tpu" prefix). */
static const struct {
	const char *alias, *name;
} aliases[] = {
	{ "gb200", "gb200-nvl72" },
};

void shs_hw_catalog_builtin(shs_hw_catalog *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->hw, builtin, sizeof(builtin));
	c->n = N_BUILTIN;
	shs__hw_rates_apply(c);
}

static bool same_name(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
	return *a == *b;
}

static bool has_prefix(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++)
		if (tolower((unsigned char)*s) != *prefix)
			return false;
	return true;
}

/* name without a leading "tpu-" or "tpu" (when something follows it), else NULL. */
static const char *strip_tpu(const char *name)
{
	static const char *const prefixes[] = { "tpu-", "tpu" };

	for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
		size_t len = strlen(prefixes[k]);
		if (has_prefix(name, prefixes[k]) && name[len])
			return name + len;
	}
	return NULL;
}

static const shs_hardware *find_exact(const shs_hw_catalog *c, const char *name)
{
	for (uint32_t k = 0; k < c->n && k < SHS_HW_MAX; k++)
		if (same_name(c->hw[k].name, name))
			return &c->hw[k];
	return NULL;
}

static const shs_hardware *find_alias(const shs_hw_catalog *c, const char *name)
{
	for (size_t k = 0; k < sizeof(aliases) / sizeof(aliases[0]); k++)
		if (same_name(aliases[k].alias, name))
			return find_exact(c, aliases[k].name);
	return NULL;
}

const shs_hardware *shs_hw_find(const shs_hw_catalog *c, const char *name)
{
	const char *bare = name ? strip_tpu(name) : NULL;
	const shs_hardware *h;

	if (!c || !name)
		return NULL;
	h = find_exact(c, name);
	if (!h && bare)
		h = find_exact(c, bare);
	if (!h)
		h = find_alias(c, name);
	if (!h && bare)
		h = find_alias(c, bare);
	return h;
}

void shs_hw_names(const shs_hw_catalog *c, char *buf, size_t cap)
{
	static const char sep[] = ", ", more[] = "...";
	size_t used = 0;

	if (!cap)
		return;
	buf[0] = 0;
	for (uint32_t k = 0; k < c->n && k < SHS_HW_MAX; k++) {
		const char *s = k ? sep : "";
		size_t need = strlen(s) + strlen(c->hw[k].name);
		bool last = k + 1 == c->n;

		/* keep room for ", ..." unless this is the last name */
		if (used + need + (last ? 0 : strlen(sep) + strlen(more)) >= cap) {
			if (used + strlen(s) + strlen(more) < cap)
				snprintf(buf + used, cap - used, "%s%s", s, more);
			return;
		}
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", s, c->hw[k].name);
	}
}

/* num / den, or 0 when den is not positive. */
static double ratio(double num, double den)
{
	return den > 0 ? num / den : 0;
}

double shs_hw_ici_intensity(const shs_hardware *h)
{
	return h ? ratio(h->flops[SHS_HW_BF16], h->ici_bw) : 0;
}

double shs_hw_dcn_intensity(const shs_hardware *h)
{
	return h ? ratio(h->flops[SHS_HW_BF16], h->dcn_bw) : 0;
}

double shs_hw_nvlink_intensity(const shs_hardware *h)
{
	return h ? ratio(h->flops[SHS_HW_BF16], h->gpu_egress) : 0;
}

double shs_hw_scaleout_intensity(const shs_hardware *h)
{
	return h ? ratio(h->flops[SHS_HW_BF16], h->node_egress) : 0;
}

const char *shs_hw_dtype_name(shs_hw_dtype dt)
{
	static const char *const names[SHS_HW_N_DTYPES] = { "bf16", "fp8", "fp32", "int8" };

	return (unsigned)dt < SHS_HW_N_DTYPES ? names[dt] : "?";
}

double shs_hw_hbm_rate(const shs_hardware *h)
{
	return h->hbm_eff > 0 && h->hbm_eff <= 1 ? h->hbm_bw * h->hbm_eff : h->hbm_bw;
}

void shs_hw_chip(const shs_hardware *h, shs_plan_chip *out)
{
	out->flops = h->flops[SHS_HW_BF16];
	out->hbm_bw = shs_hw_hbm_rate(h);
	out->link_bw = h->gpu ? h->gpu_egress : h->ici_bw;
	out->windowed_einsum_bytes = h->windowed_einsum_bytes;
}
