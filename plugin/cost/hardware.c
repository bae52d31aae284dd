/* The built-in hardware catalog (the scaling book's numbers), name lookup and intensities. */
#include "hardware_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/*
 * Every constant below comes from ../shared/reference/scaling-book.md (section 2.1 for TPUs,
 * 2.2 for GPUs). Units: bytes, bytes/s, FLOP/s, seconds; GB = 1e9 bytes (the book's tables
 * write "GB"). Where the book gives two values, the table value is used unless noted.
 *
 * TPU links: ici_bw is the table's "ICI BW/link bidi" (the book's W_ici, bidirectional per
 * axis), hop latency "about 1 us" (2.1, Torus). Pods with rank 2 keep pod[2] = 1. v4p/v5p/7x
 * slices wrap on axes that are multiples of the 4x4x4 cube; v5e/v6e only on an axis of
 * exactly 16 (2.1, Torus). No TPU has an fp32 peak in the book: flops[SHS_HW_FP32] is 0.
 *
 * GPU links (2.2, NVLink and scale-out tables): gpu_egress is NVLink egress per GPU, one way;
 * node_egress the scale-out egress of one node, one way. The book gives no DCN for GPUs: their
 * dcn_bw is the scale-out bandwidth per GPU, node_egress / node_size. No fp32 peak either (0).
 */
static const shs_hardware builtin[] = {
	{
		.name = "v4p",
		/* table: bf16 2.75e14, int8 2.75e14; 32GB HBM at 1.2e12 (Q1's answer: 1.23e12) */
		.flops = { [SHS_HW_BF16] = 2.75e14, [SHS_HW_FP8] = 2.75e14 },
		.hbm_bytes = 32e9,
		.hbm_bw = 1.2e12,
		.torus_rank = 3,
		.ici_bw = 9.0e10,        /* ICI BW/link bidi */
		.ici_latency = 1e-6,
		.pod = { 16, 16, 16 },   /* superpod 16x16x16 */
		.wrap_unit = 4,          /* full 4x4x4 cubes */
		.chips_per_host = 4,     /* host 2x2x1 */
		/* the book gives no DCN for v4p: v5p's 6.25e9 per chip (an assumption) */
		.dcn_bw = 6.25e9,
	},
	{
		.name = "v5e",
		/* table: bf16 1.97e14, int8 3.94e14; 16GB at 8.2e11 (8.1e11 before 2026-05-09) */
		.flops = { [SHS_HW_BF16] = 1.97e14, [SHS_HW_FP8] = 3.94e14 },
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
	},
	{
		.name = "v5p",
		/* table: bf16 4.59e14 (the DP paragraph's 4.6e14 is a rounding), int8 9.18e14;
		 * 96GB at 2.8e12 */
		.flops = { [SHS_HW_BF16] = 4.59e14, [SHS_HW_FP8] = 9.18e14 },
		.hbm_bytes = 96e9,
		.hbm_bw = 2.8e12,
		.torus_rank = 3,
		.ici_bw = 1.8e11,
		.ici_latency = 1e-6,
		.pod = { 16, 20, 28 },   /* 8960 chips */
		.wrap_unit = 4,
		.chips_per_host = 4,     /* host 2x2x1 */
		.dcn_bw = 6.25e9,        /* DCN egress per TPU */
	},
	{
		.name = "v6e",
		/* table: bf16 9.20e14, int8 1.84e15; 32GB at 1.6e12 */
		.flops = { [SHS_HW_BF16] = 9.20e14, [SHS_HW_FP8] = 1.84e15 },
		.hbm_bytes = 32e9,
		.hbm_bw = 1.6e12,
		.torus_rank = 2,
		.ici_bw = 1.8e11,
		.ici_latency = 1e-6,
		.pod = { 16, 16, 1 },
		.wrap_unit = 16,
		.wrap_needs_equal = true,
		.chips_per_host = 8,     /* host 4x2 */
		.dcn_bw = 12.5e9,
	},
	{
		.name = "7x",
		/* TPU7x table: bf16 2.30e15, int8 4.61e15; 192GB at 7.4e12 */
		.flops = { [SHS_HW_BF16] = 2.30e15, [SHS_HW_FP8] = 4.61e15 },
		.hbm_bytes = 192e9,
		.hbm_bw = 7.4e12,
		.torus_rank = 3,
		.ici_bw = 1.8e11,
		.ici_latency = 1e-6,
		.pod = { 4, 4, 576 },    /* current table (first listed as 4x4x144) */
		.wrap_unit = 4,
		.chips_per_host = 4,     /* host 2x2x1 */
		.dcn_bw = 12.5e9,
	},
	{
		.name = "a100",
		/* table: bf16 3.1e14, fp8/int8 6.2e14; 80GB at 2.0e12 */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 3.1e14, [SHS_HW_FP8] = 6.2e14 },
		.hbm_bytes = 80e9,
		.hbm_bw = 2.0e12,
		.node_size = 8,
		.gpu_egress = 300e9,     /* NVLink 3.0: 12 links x 25GB/s */
		/* the book gives no A100 scale-out: one 200Gb/s HDR NIC per GPU, 8 x 25e9
		 * (assumption) */
		.node_egress = 200e9,
		.dcn_bw = 25e9,
	},
	{
		.name = "h100",
		/* table: bf16 9.9e14 (quizzes 990e12), fp8 2.0e15; 80GB at 3.4e12 (table; prose and
		 * quizzes 3.35e12) */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 9.9e14, [SHS_HW_FP8] = 2.0e15 },
		.hbm_bytes = 80e9,
		.hbm_bw = 3.4e12,
		.node_size = 8,
		.gpu_egress = 450e9,     /* NVLink 4.0: 18 links x 25GB/s */
		.node_egress = 400e9,    /* one 400Gbps CX7 NIC per GPU */
		.dcn_bw = 50e9,
	},
	{
		.name = "h200",
		/* table: bf16 9.9e14, fp8 2.0e15; 141GB at 4.8e12; Hopper links as H100 */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 9.9e14, [SHS_HW_FP8] = 2.0e15 },
		.hbm_bytes = 141e9,
		.hbm_bw = 4.8e12,
		.node_size = 8,
		.gpu_egress = 450e9,
		.node_egress = 400e9,
		.dcn_bw = 50e9,
	},
	{
		.name = "b200",
		/* bf16: 2.25e15, the quizzes' 2250e12, not the table's 2.3e15: the table rounds it
		 * (its fp8 4.5e15 and fp4 9.0e15 are exactly 2x and 4x 2.25e15) and the book's B200
		 * intensities (2500, 5625) need it. fp8 4.5e15; 192GB at 8.0e12 (the prose's
		 * "9TB/s" once) */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 2.25e15, [SHS_HW_FP8] = 4.5e15 },
		.hbm_bytes = 192e9,
		.hbm_bw = 8.0e12,
		.node_size = 8,
		.gpu_egress = 900e9,     /* NVLink 5.0: 18 links x 50GB/s */
		.node_egress = 400e9,
		.dcn_bw = 50e9,
	},
	{
		.name = "gb200-nvl72",
		/* B200 chips in a 72-GPU NVLink domain; node egress 4*18*400/8 = 3.6TB/s */
		.gpu = true,
		.flops = { [SHS_HW_BF16] = 2.25e15, [SHS_HW_FP8] = 4.5e15 },
		.hbm_bytes = 192e9,
		.hbm_bw = 8.0e12,
		.node_size = 72,
		.gpu_egress = 900e9,
		.node_egress = 3600e9,
		.dcn_bw = 50e9,
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

void shs_hw_chip(const shs_hardware *h, shs_plan_chip *out)
{
	out->flops = h->flops[SHS_HW_BF16];
	out->hbm_bw = h->hbm_bw;
	out->link_bw = h->gpu ? h->gpu_egress : h->ici_bw;
}
