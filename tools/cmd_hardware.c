/* shardsearch hardware: the hardware catalog, as a table, one entry in full, or JSON. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "hardware.h"

static const char usage[] =
	"usage: shardsearch hardware [NAME] [--json] [--hardware-file F]\n"
	"\n"
	"Prints the hardware catalog: every entry as a table, or entry NAME in full (peak FLOP/s\n"
	"per width, HBM bytes and bandwidth, links and their latency, pod and largest slice, chips\n"
	"per host, DCN, and what it sustains: matmuls' fraction of peak and tile, collectives'\n"
	"fraction of each link's line rate, the operand size from which a gather runs under its\n"
	"matmul, the size up to which independent all-reduces are combined). NAME ignores case\n"
	"and a tpu- prefix (tpu-v5p is v5p).\n"
	"\n"
	"  --json             {\"hardware\": [ENTRY, ...]}, each ENTRY with the members of a\n"
	"                     hardware file (name, gpu, flops_bf16, flops_fp8, flops_fp32, flops_int8,\n"
	"                     hbm_bytes, hbm_bw, TPU: torus_rank, ici_bw, ici_latency, pod,\n"
	"                     [max_slice,] wrap_unit, wrap_needs_equal, chips_per_host; GPU:\n"
	"                     node_size, gpu_egress, node_egress, coll_latency,\n"
	"                     nvlink_step_latency, scaleout_step_latency, scaleout_tree_latency;\n"
	"                     dcn_bw; host_bw; matmul_eff,\n"
	"                     matmul_tile, hbm_eff, bmm_hbm_eff, ici_eff | nvlink_eff, scaleout_eff,\n"
	"                     dcn_eff (fractions 0..1; 0: all; bmm_hbm_eff 0: hbm_eff),\n"
	"                     windowed_einsum_bytes (0: any size), all_reduce_combine_bytes\n"
	"                     (0: none combined)): SI units (bytes, bytes/s,\n"
	"                     FLOP/s, seconds); the output loads back with --hardware-file\n"
	"  --hardware-file F  add or override catalog entries first (JSON, as --json writes)\n"
	"\n"
	"An unknown NAME is an error (exit 1) that lists the names.\n";

enum { NAMES_CAP = 1024, SHAPE_CAP = 64, HW_JSON_PRECISION = 15 /* the catalog's decimals, read back exactly */ };

static const double GIB = 1024.0 * 1024.0 * 1024.0;

typedef struct args {
	const char *name, *file;
	bool json;
} args;

static int parse(int argc, char **argv, args *a)
{
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--json"))
			a->json = true;
		else if (!strcmp(argv[k], "--hardware-file") && k + 1 < argc)
			a->file = argv[++k];
		else if (!strcmp(argv[k], "--hardware-file"))
			return shs_cli_usage_error("hardware", "--hardware-file needs a file");
		else if (argv[k][0] == '-' && argv[k][1])
			return shs_cli_usage_error("hardware", "unknown option '%s'", argv[k]);
		else if (a->name)
			return shs_cli_usage_error("hardware", "one NAME at most ('%s', '%s')",
						   a->name, argv[k]);
		else
			a->name = argv[k];
	}
	return SHS_EXIT_OK;
}

/* "16x20x28" from the first rank sides of dims. */
static void shape(const int64_t *dims, uint32_t rank, char *buf, size_t cap)
{
	size_t used = 0;

	buf[0] = 0;
	for (uint32_t d = 0; d < rank && used < cap; d++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%lld", d ? "x" : "",
					 (long long)dims[d]);
}

static int64_t chips(const int64_t *dims, uint32_t rank)
{
	int64_t n = 1;

	for (uint32_t d = 0; d < rank; d++)
		n *= dims[d];
	return n;
}

/* One table row: name, kind, peaks in TFLOP/s, HBM, links. */
static void print_row(const shs_hardware *h)
{
	char links[160], pod[SHAPE_CAP];

	if (h->gpu) {
		snprintf(links, sizeof(links), "NVLink %g GB/s, %lld per node", h->gpu_egress / 1e9,
			 (long long)h->node_size);
	} else {
		shape(h->pod, h->torus_rank, pod, sizeof(pod));
		snprintf(links, sizeof(links), "ICI %g GB/s per axis, pod %s", h->ici_bw / 1e9, pod);
	}
	printf("%-12s %-3s %8.0f %8.0f %8.0f %8.2f %8.0f  %s\n", h->name, h->gpu ? "GPU" : "TPU",
	       h->flops[SHS_HW_BF16] / 1e12, h->flops[SHS_HW_FP8] / 1e12,
	       h->flops[SHS_HW_INT8] / 1e12, h->hbm_bytes / GIB, h->hbm_bw / 1e9, links);
}

static void print_table(const shs_hw_catalog *c)
{
	printf("%-12s %-3s %8s %8s %8s %8s %8s  %s\n", "name", "", "bf16", "fp8", "int8", "HBM",
	       "HBM", "links");
	printf("%-12s %-3s %8s %8s %8s %8s %8s\n", "", "", "TFLOP/s", "TFLOP/s", "TOP/s", "GiB",
	       "GB/s");
	for (uint32_t k = 0; k < c->n; k++)
		print_row(&c->hw[k]);
}

static void print_peak(const shs_hardware *h, shs_hw_dtype dt)
{
	const char *unit = dt == SHS_HW_INT8 ? "OP/s" : "FLOP/s";

	if (h->flops[dt] > 0)
		printf("peak %-10s %.6g %s (%g T%s)%s\n", shs_hw_dtype_name(dt), h->flops[dt],
		       unit, h->flops[dt] / 1e12, unit,
		       dt == SHS_HW_FP8 && h->flops[dt] == h->flops[SHS_HW_BF16] ?
			       ", the bf16 rate: no fp8 units" : "");
	else
		printf("peak %-10s none in the catalog\n", shs_hw_dtype_name(dt));
}

/* A fraction of the catalog's achievable rates as a percentage (0 there means all of it). */
static double pct(double eff)
{
	return 100 * (eff > 0 && eff <= 1 ? eff : 1);
}

/* What the chip sustains, not its peak (plugin/cost/hardware_rates.c cites each figure). */
/* The host link offloading moves over, when the catalog knows it. */
static void print_host(const shs_hardware *h)
{
	if (h->host_bw > 0 && h->host_mem_bytes > 0)
		printf("host link       %.6g bytes/s per %s, one way (%g GB/s); %.4g GB of host "
		       "memory each: offload\n", h->host_bw, h->gpu ? "GPU" : "chip",
		       h->host_bw / 1e9, h->host_mem_bytes / 1e9);
	else
		printf("host link       not known: no offload\n");
}

static void print_rates(const shs_hardware *h)
{
	printf("matmuls         %.1f %% of peak, in tiles of %lld (%s)\n", pct(h->matmul_eff),
	       (long long)(h->matmul_tile > 0 ? h->matmul_tile : 1),
	       h->gpu ? "output tiles: M and N" : "MXU: K and N");
	printf("HBM             %.1f %% of its bandwidth in streaming kernels\n", pct(h->hbm_eff));
	if (h->bmm_hbm_eff > 0)
		printf("                %.1f %% in thin batched matmuls (attention's score "
		       "matmuls)\n", pct(h->bmm_hbm_eff));
	if (h->gpu) {
		printf("collectives     %.1f %% of NVLink, %.1f %% of scale-out, %.1f %% of DCN line "
		       "rate\n", pct(h->nvlink_eff), pct(h->scaleout_eff), pct(h->dcn_eff));
		printf("coll. latency   at least %.3g us plus %.3g us a step in a node; across nodes "
		       "%.3g us a\n                ring step, %.3g us a tree level\n",
		       h->coll_latency * 1e6, h->nvlink_step_latency * 1e6,
		       h->scaleout_step_latency * 1e6, h->scaleout_tree_latency * 1e6);
	}
	else
		printf("collectives     %.1f %% of ICI, %.1f %% of DCN line rate\n", pct(h->ici_eff),
		       pct(h->dcn_eff));
	if (h->windowed_einsum_bytes > 0)
		printf("coll. matmul    from operands of %.6g bytes (%g MiB)\n",
		       h->windowed_einsum_bytes, h->windowed_einsum_bytes / 1048576);
	else
		printf("coll. matmul    at any size\n");
	if (h->all_reduce_combine_bytes > 0)
		printf("all-reduces     combined up to %.6g bytes (%g MiB)\n",
		       h->all_reduce_combine_bytes, h->all_reduce_combine_bytes / 1048576);
	else
		printf("all-reduces     each alone\n");
}

static void print_entry(const shs_hardware *h)
{
	char pod[SHAPE_CAP], slice[SHAPE_CAP];

	printf("name            %s (%s)\n", h->name, h->gpu ? "GPU" :
	       h->torus_rank == 3 ? "TPU, 3D torus" : "TPU, 2D torus");
	for (int dt = 0; dt < SHS_HW_N_DTYPES; dt++)
		print_peak(h, (shs_hw_dtype)dt);
	printf("HBM             %.0f bytes (%.2f GiB, %.4g GB)\n", h->hbm_bytes, h->hbm_bytes / GIB,
	       h->hbm_bytes / 1e9);
	printf("HBM bandwidth   %.6g bytes/s (%g GB/s)\n", h->hbm_bw, h->hbm_bw / 1e9);
	if (h->gpu) {
		printf("NVLink          %.6g bytes/s egress per GPU, one way (%g GB/s); %lld GPUs "
		       "per node\n", h->gpu_egress, h->gpu_egress / 1e9, (long long)h->node_size);
		printf("scale-out       %.6g bytes/s egress per node, one way (%g GB/s)\n",
		       h->node_egress, h->node_egress / 1e9);
		printf("DCN             %.6g bytes/s per GPU (%g GB/s)\n", h->dcn_bw,
		       h->dcn_bw / 1e9);
		print_host(h);
		print_rates(h);
		return;
	}
	shape(h->pod, h->torus_rank, pod, sizeof(pod));
	printf("ICI             %.6g bytes/s per axis per chip, bidirectional (%g GB/s); %g us "
	       "per hop\n", h->ici_bw, h->ici_bw / 1e9, h->ici_latency * 1e6);
	printf("pod             %s (%lld chips)\n", pod, (long long)chips(h->pod, h->torus_rank));
	if (h->max_slice[0] > 0) {
		shape(h->max_slice, h->torus_rank, slice, sizeof(slice));
		printf("largest slice   %s (%lld chips)\n", slice,
		       (long long)chips(h->max_slice, h->torus_rank));
	}
	if (h->wrap_needs_equal)
		printf("wraparound      on an axis of exactly %lld\n", (long long)h->wrap_unit);
	else
		printf("wraparound      on every axis when each is a multiple of %lld\n",
		       (long long)h->wrap_unit);
	printf("chips per host  %lld\n", (long long)h->chips_per_host);
	printf("DCN             %.6g bytes/s per chip (%g GB/s)\n", h->dcn_bw, h->dcn_bw / 1e9);
	print_host(h);
	print_rates(h);
}

static int put_json(const shs_hardware *const *list, uint32_t n)
{
	json_t *root = json_object(), *arr = json_array();

	for (uint32_t k = 0; arr && k < n; k++)
		json_array_append_new(arr, shs_hw_to_json(list[k]));
	json_object_set_new(root, "hardware", arr);
	if (shs_cli_put_json(root, HW_JSON_PRECISION) != SHS_OK) {
		fprintf(stderr, "shardsearch: hardware: out of memory\n");
		return SHS_EXIT_FAIL;
	}
	return SHS_EXIT_OK;
}

int shs_cmd_hardware(int argc, char **argv)
{
	static shs_hw_catalog cat; /* 64 entries: not on the stack */
	const shs_hardware *list[SHS_HW_MAX];
	args a = { 0 };
	shs_err e = { 0 };
	uint32_t n = 0;
	int rc;

	for (int k = 1; k < argc; k++)
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
			fputs(usage, stdout);
			return SHS_EXIT_OK;
		}
	rc = parse(argc, argv, &a);
	if (rc != SHS_EXIT_OK)
		return rc;
	shs_hw_catalog_builtin(&cat);
	if (a.file && shs_hw_catalog_load_json(&cat, a.file, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: hardware: %s\n", e.msg);
		return SHS_EXIT_FAIL;
	}
	if (a.name) {
		const shs_hardware *h = shs_hw_find(&cat, a.name);
		if (!h) {
			char names[NAMES_CAP];
			shs_hw_names(&cat, names, sizeof(names));
			fprintf(stderr, "shardsearch: hardware: unknown hardware '%s' (known: %s)\n",
				a.name, names);
			return SHS_EXIT_FAIL;
		}
		list[n++] = h;
	} else {
		for (uint32_t k = 0; k < cat.n && k < SHS_HW_MAX; k++)
			list[n++] = &cat.hw[k];
	}
	if (a.json)
		return put_json(list, n);
	if (a.name)
		print_entry(list[0]);
	else
		print_table(&cat);
	return SHS_EXIT_OK;
}
