/* The hardware catalog: the book's constants, lookups, intensities and JSON hardware files. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hardware.h"
#include "test_util.h"

/* Asserts |got - want| <= rel * |want|, printing both on failure. */
#define ASSERT_NEAR(got, want, rel)                                                     \
	do {                                                                            \
		double g_ = (got), w_ = (want);                                         \
		bool ok_ = fabs(g_ - w_) <= (rel) * fabs(w_);                           \
		if (!ok_)                                                               \
			fprintf(stderr, "\n  %s:%d: %s: got %.6g, want %.6g\n", __FILE__,  \
				__LINE__, #got, g_, w_);                                \
		CU_ASSERT_TRUE_FATAL(ok_);                                              \
	} while (0)

/* Asserts the string s contains part. */
#define ASSERT_HAS(s, part)                                                             \
	do {                                                                            \
		const char *s_ = (s), *p_ = (part);                                     \
		if (!strstr(s_, p_))                                                    \
			fprintf(stderr, "\n  %s:%d: \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
				s_, p_);                                                \
		CU_ASSERT_PTR_NOT_NULL_FATAL(strstr(s_, p_));                           \
	} while (0)

enum { PATH_CAP = 4096 };

static const double book_tol = 0.005; /* 0.5 %, the tolerance */

static const shs_hardware *need(const shs_hw_catalog *c, const char *name)
{
	const shs_hardware *h = shs_hw_find(c, name);

	if (!h)
		fprintf(stderr, "\n  no hardware '%s'\n", name);
	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	return h;
}

/* The built-in entry name (a static copy of the catalog). */
static const shs_hardware *builtin(const char *name)
{
	static shs_hw_catalog c;

	shs_hw_catalog_builtin(&c);
	return need(&c, name);
}

/* Writes text to a temp file named name; returns its path in path. */
static void write_file(const char *name, const char *text, char path[PATH_CAP])
{
	FILE *f;

	snprintf(path, PATH_CAP, "%s", shs_test_tmp_path(name));
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* Loads text as a hardware file into the built-in catalog c. */
static int load_text(shs_hw_catalog *c, const char *file, const char *text, shs_err *e)
{
	char path[PATH_CAP];

	shs_hw_catalog_builtin(c);
	write_file(file, text, path);
	return shs_hw_catalog_load_json(c, path, e);
}

/* Loads a bad file: wants code, a message containing part, and the catalog unchanged. */
static void rejects(const char *file, const char *text, int code, const char *part)
{
	static shs_hw_catalog c, before;
	char path[PATH_CAP];
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&c);
	before = c;
	write_file(file, text, path);
	SHS_ASSERT_INT_EQ(shs_hw_catalog_load_json(&c, path, &e), code);
	SHS_ASSERT_INT_EQ(e.code, code);
	ASSERT_HAS(e.msg, path);
	ASSERT_HAS(e.msg, part);
	CU_ASSERT_EQUAL_FATAL(memcmp(&c, &before, sizeof(c)), 0);
}

static const double GIB = 1024.0 * 1024.0 * 1024.0;

/* peaks: bf16, fp8, int8 */
static void check_tpu(const shs_hardware *h, const double peaks[3], double hbm, double hbm_bw,
		      double ici, uint32_t rank, const int64_t pod[3], int64_t wrap, bool equal,
		      int64_t per_host, double dcn)
{
	CU_ASSERT_FALSE_FATAL(h->gpu);
	ASSERT_NEAR(h->flops[SHS_HW_BF16], peaks[0], 0);
	ASSERT_NEAR(h->flops[SHS_HW_FP8], peaks[1], 0);
	ASSERT_NEAR(h->flops[SHS_HW_INT8], peaks[2], 0);
	ASSERT_NEAR(h->flops[SHS_HW_FP32], 0, 0);
	ASSERT_NEAR(h->hbm_bytes, hbm, 0);
	ASSERT_NEAR(h->hbm_bw, hbm_bw, 0);
	ASSERT_NEAR(h->ici_bw, ici, 0);
	ASSERT_NEAR(h->ici_latency, 1e-6, 0);
	SHS_ASSERT_INT_EQ(h->torus_rank, rank);
	for (int d = 0; d < 3; d++)
		SHS_ASSERT_INT_EQ(h->pod[d], pod[d]);
	SHS_ASSERT_INT_EQ(h->wrap_unit, wrap);
	SHS_ASSERT_INT_EQ(h->wrap_needs_equal, equal);
	SHS_ASSERT_INT_EQ(h->chips_per_host, per_host);
	ASSERT_NEAR(h->dcn_bw, dcn, 0);
	SHS_ASSERT_INT_EQ(h->node_size, 0);
	ASSERT_NEAR(h->gpu_egress, 0, 0);
	ASSERT_NEAR(h->node_egress, 0, 0);
}

static void check_gpu(const shs_hardware *h, const double peaks[3], double hbm, double hbm_bw,
		      int64_t node, double gpu_egress, double node_egress)
{
	CU_ASSERT_TRUE_FATAL(h->gpu);
	ASSERT_NEAR(h->flops[SHS_HW_BF16], peaks[0], 0);
	ASSERT_NEAR(h->flops[SHS_HW_FP8], peaks[1], 0);
	ASSERT_NEAR(h->flops[SHS_HW_INT8], peaks[2], 0);
	ASSERT_NEAR(h->flops[SHS_HW_FP32], 0, 0);
	ASSERT_NEAR(h->hbm_bytes, hbm, 0);
	ASSERT_NEAR(h->hbm_bw, hbm_bw, 0);
	SHS_ASSERT_INT_EQ(h->node_size, node);
	ASSERT_NEAR(h->gpu_egress, gpu_egress, 0);
	ASSERT_NEAR(h->node_egress, node_egress, 0);
	ASSERT_NEAR(h->dcn_bw, node_egress / (double)node, 1e-12);
	SHS_ASSERT_INT_EQ(h->torus_rank, 0);
	ASSERT_NEAR(h->ici_bw, 0, 0);
	SHS_ASSERT_INT_EQ(h->pod[0], 0);
	SHS_ASSERT_INT_EQ(h->chips_per_host, 0);
}

static void builtin_lists_ten_entries(void)
{
	static const char *const names[] = { "v4p", "v5e", "v5p", "v6e", "7x", "a100", "h100",
					     "h200", "b200", "gb200-nvl72" };
	shs_hw_catalog c;

	memset(&c, 0xa5, sizeof(c));
	shs_hw_catalog_builtin(&c);
	SHS_ASSERT_INT_EQ(c.n, 10);
	for (uint32_t k = 0; k < c.n; k++)
		SHS_ASSERT_STR_EQ(c.hw[k].name, names[k]);
	for (uint32_t k = c.n; k < SHS_HW_MAX; k++)
		SHS_ASSERT_INT_EQ(c.hw[k].name[0], 0);
}

/* The catalog against its sources (hardware.c): capacities in the vendor's unit (Google's GiB
 * for v4, v5p, v6e and 7x), fp8 from the vendors' fp8 rows (the bf16 rate on chips without fp8
 * units), int8 beside it. */
static void tpu_v4p_v5p(void)
{
	static const int64_t v4p_pod[3] = { 16, 16, 16 }, v5p_pod[3] = { 16, 20, 28 };
	static const double v4p[3] = { 2.75e14, 2.75e14, 2.75e14 };
	static const double v5p[3] = { 4.59e14, 4.59e14, 9.18e14 };

	check_tpu(builtin("v4p"), v4p, 32 * GIB, 1.2e12, 9e10, 3, v4p_pod, 4, false, 4, 6.25e9);
	check_tpu(builtin("v5p"), v5p, 95 * GIB, 2.8e12, 1.8e11, 3, v5p_pod, 4, false, 4, 6.25e9);
	SHS_ASSERT_INT_EQ(v5p_pod[0] * v5p_pod[1] * v5p_pod[2], 8960);
	/* 95 GiB is 102.0e9 bytes: more than the book's 96e9 */
	ASSERT_NEAR(builtin("v5p")->hbm_bytes, 102.005e9, 1e-5);
}

static void tpu_v5e_v6e(void)
{
	static const int64_t pod[3] = { 16, 16, 1 };
	static const double v5e[3] = { 1.97e14, 1.97e14, 3.94e14 };
	static const double v6e[3] = { 9.2e14, 9.2e14, 1.84e15 };

	check_tpu(builtin("v5e"), v5e, 16e9, 8.2e11, 9e10, 2, pod, 16, true, 8, 3.125e9);
	check_tpu(builtin("v6e"), v6e, 32 * GIB, 1.6e12, 1.8e11, 2, pod, 16, true, 8, 12.5e9);
}

static void tpu_7x(void)
{
	static const int64_t pod[3] = { 4, 4, 576 };
	static const double peaks[3] = { 2.3e15, 4.614e15, 4.61e15 };

	check_tpu(builtin("7x"), peaks, 192 * GIB, 7.4e12, 1.8e11, 3, pod, 4, false, 4, 12.5e9);
}

static void gpu_a100_h100_h200(void)
{
	static const double a100[3] = { 3.1e14, 3.1e14, 6.2e14 };
	static const double hopper[3] = { 9.9e14, 1.979e15, 1.979e15 };

	check_gpu(builtin("a100"), a100, 80e9, 2.0e12, 8, 300e9, 200e9);
	check_gpu(builtin("h100"), hopper, 80e9, 3.4e12, 8, 450e9, 400e9);
	check_gpu(builtin("h200"), hopper, 141e9, 4.8e12, 8, 450e9, 400e9);
}

static void gpu_b200_gb200(void)
{
	static const double b200[3] = { 2.25e15, 4.5e15, 4.5e15 };
	static const double gb200[3] = { 2.5e15, 5.0e15, 5.0e15 };

	check_gpu(builtin("b200"), b200, 180e9, 8.0e12, 8, 900e9, 400e9);
	check_gpu(builtin("gb200-nvl72"), gb200, 186e9, 8.0e12, 72, 900e9, 3.6e12);
	/* DGX B200: 1440 GB over 8 GPUs; GB200 NVL72: 13.4 TB over 72 (to N's three digits) */
	ASSERT_NEAR(8 * builtin("b200")->hbm_bytes, 1440e9, 0);
	ASSERT_NEAR(72 * builtin("gb200")->hbm_bytes, 13.4e12, 0.001);
	/* the node caps: 8 x 450e9 = 3.6 TB/s on H100; NVL72 scale-out 50 GB/s per GPU */
	ASSERT_NEAR(builtin("h100")->gpu_egress * (double)builtin("h100")->node_size, 3.6e12, 0);
	ASSERT_NEAR(builtin("gb200")->dcn_bw, 50e9, 1e-12);
}

/* No chip runs fp8 slower than bf16, and fp8 is never the int8 figure on a chip that has no fp8
 * units (where fp8 is the bf16 rate). */
static void fp8_never_below_bf16(void)
{
	shs_hw_catalog c;

	shs_hw_catalog_builtin(&c);
	for (uint32_t k = 0; k < c.n; k++) {
		const double *f = c.hw[k].flops;
		CU_ASSERT_TRUE(f[SHS_HW_FP8] >= f[SHS_HW_BF16]);
		CU_ASSERT_TRUE(f[SHS_HW_INT8] >= f[SHS_HW_BF16]);
	}
	CU_ASSERT_TRUE(builtin("a100")->flops[SHS_HW_FP8] < builtin("a100")->flops[SHS_HW_INT8]);
	SHS_ASSERT_STR_EQ(shs_hw_dtype_name(SHS_HW_INT8), "int8");
	SHS_ASSERT_STR_EQ(shs_hw_dtype_name(SHS_HW_N_DTYPES), "?");
}

static void find_ignores_case_and_tpu_prefix(void)
{
	shs_hw_catalog c;

	shs_hw_catalog_builtin(&c);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "V5P"), &c.hw[2]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "tpu-v5p"), &c.hw[2]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "TPU-V5P"), &c.hw[2]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "tpuv5e"), &c.hw[1]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "tpu7x"), &c.hw[4]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "TPU7x"), &c.hw[4]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "7X"), &c.hw[4]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "H100"), &c.hw[6]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "gb200"), &c.hw[9]);
	CU_ASSERT_PTR_EQUAL(shs_hw_find(&c, "GB200-NVL72"), &c.hw[9]);
}

static void find_rejects_unknown_names(void)
{
	shs_hw_catalog c;

	shs_hw_catalog_builtin(&c);
	CU_ASSERT_PTR_NULL(shs_hw_find(&c, "v5"));
	CU_ASSERT_PTR_NULL(shs_hw_find(&c, "v5p "));
	CU_ASSERT_PTR_NULL(shs_hw_find(&c, "tpu"));
	CU_ASSERT_PTR_NULL(shs_hw_find(&c, "tpu-"));
	CU_ASSERT_PTR_NULL(shs_hw_find(&c, "tpu-h100x"));
	CU_ASSERT_PTR_NULL(shs_hw_find(&c, ""));
	CU_ASSERT_PTR_NULL(shs_hw_find(&c, NULL));
	CU_ASSERT_PTR_NULL(shs_hw_find(&c, "v100"));
}

static void tpu_ici_intensities(void)
{
	/* v5p: the book's alpha = 2550; the others are the tables' C / W_ici */
	ASSERT_NEAR(shs_hw_ici_intensity(builtin("v5p")), 2550, book_tol);
	ASSERT_NEAR(shs_hw_ici_intensity(builtin("v5e")), 2189, book_tol);
	ASSERT_NEAR(shs_hw_ici_intensity(builtin("v6e")), 5111, book_tol);
	ASSERT_NEAR(shs_hw_ici_intensity(builtin("v4p")), 3056, book_tol);
	ASSERT_NEAR(shs_hw_ici_intensity(builtin("7x")), 12778, book_tol);
	ASSERT_NEAR(shs_hw_ici_intensity(builtin("h100")), 0, 0);
}

static void tpu_dcn_intensities(void)
{
	ASSERT_NEAR(shs_hw_dcn_intensity(builtin("v5p")), 73440, book_tol);
	ASSERT_NEAR(shs_hw_dcn_intensity(builtin("v5e")), 63040, book_tol);
	ASSERT_NEAR(shs_hw_dcn_intensity(builtin("v6e")), 73600, book_tol);
	ASSERT_NEAR(shs_hw_dcn_intensity(builtin("v4p")), 44000, book_tol);
	ASSERT_NEAR(shs_hw_dcn_intensity(builtin("7x")), 184000, book_tol);
	ASSERT_NEAR(shs_hw_nvlink_intensity(builtin("v5p")), 0, 0);
	ASSERT_NEAR(shs_hw_scaleout_intensity(builtin("v5p")), 0, 0);
}

static void gpu_intensities(void)
{
	ASSERT_NEAR(shs_hw_nvlink_intensity(builtin("h100")), 2200, book_tol);
	ASSERT_NEAR(shs_hw_scaleout_intensity(builtin("h100")), 2475, book_tol);
	ASSERT_NEAR(shs_hw_nvlink_intensity(builtin("h200")), 2200, book_tol);
	ASSERT_NEAR(shs_hw_scaleout_intensity(builtin("h200")), 2475, book_tol);
	ASSERT_NEAR(shs_hw_nvlink_intensity(builtin("b200")), 2500, book_tol);
	ASSERT_NEAR(shs_hw_scaleout_intensity(builtin("b200")), 5625, book_tol);
	/* GB200 at NVIDIA's 2.5e15 (the book's B200 peak gives 2500 and 625) */
	ASSERT_NEAR(shs_hw_nvlink_intensity(builtin("gb200")), 2778, book_tol);
	ASSERT_NEAR(shs_hw_scaleout_intensity(builtin("gb200")), 694.4, book_tol);
	ASSERT_NEAR(shs_hw_nvlink_intensity(builtin("a100")), 1033, book_tol);
	ASSERT_NEAR(shs_hw_scaleout_intensity(builtin("a100")), 1550, book_tol);
	ASSERT_NEAR(shs_hw_dcn_intensity(builtin("h100")), 19800, book_tol);
}

static void intensity_zero_without_link(void)
{
	shs_hardware h;

	memset(&h, 0, sizeof(h));
	h.flops[SHS_HW_BF16] = 1e15;
	ASSERT_NEAR(shs_hw_ici_intensity(&h), 0, 0);
	ASSERT_NEAR(shs_hw_dcn_intensity(&h), 0, 0);
	ASSERT_NEAR(shs_hw_nvlink_intensity(&h), 0, 0);
	ASSERT_NEAR(shs_hw_scaleout_intensity(&h), 0, 0);
	ASSERT_NEAR(shs_hw_ici_intensity(NULL), 0, 0);
}

static void names_list_and_truncation(void)
{
	shs_hw_catalog c;
	char buf[256], small[16];

	shs_hw_catalog_builtin(&c);
	shs_hw_names(&c, buf, sizeof(buf));
	SHS_ASSERT_STR_EQ(buf, "v4p, v5e, v5p, v6e, 7x, a100, h100, h200, b200, gb200-nvl72");
	memset(small, 'x', sizeof(small));
	shs_hw_names(&c, small, sizeof(small));
	SHS_ASSERT_STR_EQ(small, "v4p, v5e, ...");
	shs_hw_names(&c, small, 1);
	SHS_ASSERT_STR_EQ(small, "");
}

static void json_overrides_one_member(void)
{
	shs_hw_catalog c;
	shs_hardware want;
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&c);
	want = *need(&c, "v5p");
	want.hbm_bw = 3e12;
	SHS_ASSERT_OK(load_text(&c, "hw_override.json",
				"{\"hardware\": [{\"name\": \"TPU-V5P\", \"hbm_bw\": 3e12}]}", &e),
		      &e);
	SHS_ASSERT_INT_EQ(c.n, 10);
	CU_ASSERT_EQUAL_FATAL(memcmp(need(&c, "v5p"), &want, sizeof(want)), 0);
	SHS_ASSERT_STR_EQ(need(&c, "v5p")->name, "v5p");
}

static void json_adds_from_base(void)
{
	static const char text[] =
		"{\"hardware\": [\n"
		"  {\"name\": \"V5P-Big\", \"base\": \"v5p\", \"hbm_bytes\": 192e9,\n"
		"   \"pod\": [16, 20, 56], \"wrap_needs_equal\": true},\n"
		"  {\"name\": \"h100-ib\", \"base\": \"tpu-h100\"},\n"
		"  {\"name\": \"h100-fast\", \"base\": \"h100\", \"node_egress\": 800e9,\n"
		"   \"flops_fp32\": 6.7e13}\n"
		"]}\n";
	shs_hw_catalog c;
	const shs_hardware *h;
	shs_err e = { 0 };

	SHS_ASSERT_OK(load_text(&c, "hw_base.json", text, &e), &e);
	SHS_ASSERT_INT_EQ(c.n, 13);
	h = need(&c, "v5p-big");
	SHS_ASSERT_STR_EQ(h->name, "v5p-big");
	ASSERT_NEAR(h->hbm_bytes, 192e9, 0);
	ASSERT_NEAR(h->ici_bw, 1.8e11, 0);
	SHS_ASSERT_INT_EQ(h->pod[2], 56);
	CU_ASSERT_TRUE(h->wrap_needs_equal);
	ASSERT_NEAR(need(&c, "v5p")->hbm_bytes, 95 * GIB, 0);
	CU_ASSERT_TRUE(need(&c, "h100-ib")->gpu);
	ASSERT_NEAR(need(&c, "h100-ib")->gpu_egress, 450e9, 0);
	h = need(&c, "h100-fast");
	ASSERT_NEAR(h->node_egress, 800e9, 0);
	ASSERT_NEAR(h->flops[SHS_HW_FP32], 6.7e13, 0);
	ASSERT_NEAR(shs_hw_scaleout_intensity(h), 1237.5, 1e-12);
}

static void json_adds_full_entries(void)
{
	static const char text[] =
		"{\"hardware\": [\n"
		"  {\"name\": \"tpu-v9\", \"flops_bf16\": 1e15, \"hbm_bytes\": 64e9,\n"
		"   \"hbm_bw\": 4e12, \"torus_rank\": 2, \"ici_bw\": 2e11, \"ici_latency\": 5e-7,\n"
		"   \"pod\": [8, 32], \"wrap_unit\": 8, \"chips_per_host\": 4, \"dcn_bw\": 1e10},\n"
		"  {\"name\": \"g1\", \"gpu\": true, \"flops_bf16\": 1e15, \"hbm_bytes\": 1e11,\n"
		"   \"hbm_bw\": 5e12, \"node_size\": 4, \"gpu_egress\": 5e11,\n"
		"   \"node_egress\": 2e11}\n"
		"]}\n";
	shs_hw_catalog c;
	const shs_hardware *h;
	shs_err e = { 0 };

	SHS_ASSERT_OK(load_text(&c, "hw_full.json", text, &e), &e);
	h = need(&c, "tpu-v9");
	SHS_ASSERT_INT_EQ(h->torus_rank, 2);
	SHS_ASSERT_INT_EQ(h->pod[0] * h->pod[1] * h->pod[2], 256);
	ASSERT_NEAR(shs_hw_ici_intensity(h), 5000, 1e-12);
	ASSERT_NEAR(h->flops[SHS_HW_FP8], 0, 0);
	h = need(&c, "g1");
	CU_ASSERT_TRUE(h->gpu);
	ASSERT_NEAR(h->dcn_bw, 5e10, 1e-12); /* node_egress / node_size */
}

static void json_gpu_from_tpu_base_drops_tpu_links(void)
{
	static const char text[] =
		"{\"hardware\": [{\"name\": \"odd\", \"base\": \"v5p\", \"gpu\": true,\n"
		"  \"node_size\": 8, \"gpu_egress\": 1e11, \"node_egress\": 1e11}]}";
	shs_hw_catalog c;
	const shs_hardware *h;
	shs_err e = { 0 };

	SHS_ASSERT_OK(load_text(&c, "hw_flip.json", text, &e), &e);
	h = need(&c, "odd");
	ASSERT_NEAR(h->ici_bw, 0, 0);
	SHS_ASSERT_INT_EQ(h->torus_rank, 0);
	SHS_ASSERT_INT_EQ(h->pod[0], 0);
	ASSERT_NEAR(h->flops[SHS_HW_BF16], 4.59e14, 0);
	ASSERT_NEAR(h->dcn_bw, 6.25e9, 0); /* kept from the base */
}

static void json_missing_file(void)
{
	shs_hw_catalog c, before;
	shs_err e = { 0 };
	const char *path = shs_test_tmp_path("hw_does_not_exist.json");

	shs_hw_catalog_builtin(&c);
	before = c;
	SHS_ASSERT_INT_EQ(shs_hw_catalog_load_json(&c, path, &e), SHS_EIO);
	ASSERT_HAS(e.msg, "hw_does_not_exist.json");
	ASSERT_HAS(e.msg, "No such file");
	CU_ASSERT_EQUAL_FATAL(memcmp(&c, &before, sizeof(c)), 0);
}

static void json_syntax_error_has_line_and_column(void)
{
	rejects("hw_syntax.json", "{\"hardware\": [\n  {\"name\": \"v5p\",, }\n]}", SHS_EPARSE,
		".json:2:");
	rejects("hw_dup.json", "{\"hardware\": [{\"name\": \"v5p\", \"name\": \"v5e\"}]}",
		SHS_EPARSE, ".json:1:");
	rejects("hw_empty.json", "", SHS_EPARSE, ".json:");
}

static void json_rejects_bad_shapes(void)
{
	rejects("hw_list.json", "[1, 2]", SHS_EINVAL, "top level must be an object");
	rejects("hw_nolist.json", "{\"hardware\": {}}", SHS_EINVAL, "'hardware'");
	rejects("hw_top.json", "{\"hardware\": [], \"chips\": 1}", SHS_EINVAL, "'chips'");
	rejects("hw_entry.json", "{\"hardware\": [3]}", SHS_EINVAL, "hardware[0]");
	rejects("hw_noname.json", "{\"hardware\": [{\"hbm_bw\": 1}]}", SHS_EINVAL, "'name'");
	rejects("hw_badname.json", "{\"hardware\": [{\"name\": \"a,b\", \"base\": \"v5p\"}]}",
		SHS_EINVAL, "'a,b'");
}

static void json_rejects_unknown_member(void)
{
	rejects("hw_unknown.json",
		"{\"hardware\": [{\"name\": \"v5e\"}, {\"name\": \"v5p\", \"hbm_gb\": 96}]}",
		SHS_EINVAL, "hardware[1] 'v5p': unknown member 'hbm_gb'");
}

static void json_rejects_bad_values(void)
{
	/* values outside physical ranges (they made inf and nan step times) */
	rejects("hw_tiny.json", "{\"hardware\": [{\"name\": \"v5p\", \"flops_bf16\": 1e-308}]}",
		SHS_EINVAL, "'flops_bf16' must be FLOP/s from 1e+09 to 1e+18, got 1e-308");
	rejects("hw_huge.json", "{\"hardware\": [{\"name\": \"v5p\", \"hbm_bw\": 1.7e308}]}",
		SHS_EINVAL, "'hbm_bw' must be bytes/s from 100000 to 1e+15, got 1.7e+308");
	rejects("hw_slow.json", "{\"hardware\": [{\"name\": \"v5p\", \"ici_latency\": 10}]}",
		SHS_EINVAL, "'ici_latency' must be seconds from 1e-09 to 1, got 10");
	rejects("hw_neg.json", "{\"hardware\": [{\"name\": \"v5p\", \"ici_bw\": -1.8e11}]}",
		SHS_EINVAL, "member 'ici_bw' must be a positive number, got -1.8e+11");
	rejects("hw_zero.json", "{\"hardware\": [{\"name\": \"v5p\", \"hbm_bw\": 0}]}",
		SHS_EINVAL, "'hbm_bw' must be a positive number, got 0");
	rejects("hw_str.json", "{\"hardware\": [{\"name\": \"h100\", \"hbm_bw\": \"3.4e12\"}]}",
		SHS_EINVAL, "'hbm_bw' must be a positive number, got a string");
	rejects("hw_bool.json", "{\"hardware\": [{\"name\": \"h100\", \"gpu\": 1}]}", SHS_EINVAL,
		"'gpu' must be true or false, got 1");
	rejects("hw_int.json", "{\"hardware\": [{\"name\": \"h100\", \"node_size\": 8.5}]}",
		SHS_EINVAL, "'node_size' must be an integer");
	rejects("hw_rank.json", "{\"hardware\": [{\"name\": \"v5p\", \"torus_rank\": 4}]}",
		SHS_EINVAL, "'torus_rank' must be 1, 2 or 3, got 4");
	rejects("hw_pod.json", "{\"hardware\": [{\"name\": \"v5p\", \"pod\": [16, 0, 28]}]}",
		SHS_EINVAL, "dim 1");
	rejects("hw_pod4.json", "{\"hardware\": [{\"name\": \"v5p\", \"pod\": [1, 2, 3, 4]}]}",
		SHS_EINVAL, "'pod' must be a list of 1 to 3 integers from 1 to 1048576, got a "
		"list of 4");
	rejects("hw_podrank.json", "{\"hardware\": [{\"name\": \"v5p\", \"pod\": [16, 16]}]}",
		SHS_EINVAL, "'pod' has 2 dims but torus_rank is 3");
	rejects("hw_rankpod.json", "{\"hardware\": [{\"name\": \"v5p\", \"torus_rank\": 2}]}",
		SHS_EINVAL, "torus_rank 2 needs a pod of 2 dims, not 16x20x28");
	rejects("hw_scope.json", "{\"hardware\": [{\"name\": \"h100\", \"ici_bw\": 1e11}]}",
		SHS_EINVAL, "'ici_bw' is only for TPU entries");
	/* a dcn_bw derived as node_egress / node_size is held to the same range (fuzz_hardware:
	 * the catalog written back did not load) */
	rejects("hw_derived.json", "{\"hardware\": [{\"name\": \"g\", \"gpu\": true, "
		"\"flops_bf16\": 1e15, \"hbm_bytes\": 8e10, \"hbm_bw\": 3.4e12, \"node_size\": 8, "
		"\"gpu_egress\": 4.5e11, \"node_egress\": 400006}]}", SHS_EINVAL,
		"hardware[0] 'g': member 'dcn_bw' (node_egress / node_size when not given) must be "
		"bytes/s from 100000 to 1e+15, got 50000.8");
}

static void json_rejects_unknown_base(void)
{
	rejects("hw_base_bad.json", "{\"hardware\": [{\"name\": \"new\", \"base\": \"v9\"}]}",
		SHS_EINVAL, "unknown base 'v9' (known: v4p, v5e");
	rejects("hw_base_exists.json", "{\"hardware\": [{\"name\": \"v5p\", \"base\": \"v4p\"}]}",
		SHS_EINVAL, "'base' is only for new entries");
}

static void json_new_entry_needs_members(void)
{
	rejects("hw_need.json",
		"{\"hardware\": [{\"name\": \"v9\", \"flops_bf16\": 1e15, \"hbm_bytes\": 1e10, "
		"\"hbm_bw\": 1e12}]}",
		SHS_EINVAL, "hardware[0] 'v9': a TPU entry needs member 'torus_rank'");
	rejects("hw_need_gpu.json",
		"{\"hardware\": [{\"name\": \"g\", \"gpu\": true, \"flops_bf16\": 1e15, "
		"\"hbm_bytes\": 1e10, \"hbm_bw\": 1e12, \"node_size\": 8}]}",
		SHS_EINVAL, "a GPU entry needs member 'gpu_egress'");
	/* an error in a later entry undoes the earlier ones too */
	rejects("hw_later.json",
		"{\"hardware\": [{\"name\": \"v5p\", \"hbm_bw\": 1e12}, {\"name\": \"x\"}]}",
		SHS_EINVAL, "hardware[1] 'x': a TPU entry needs member 'flops_bf16'");
}

static void json_catalog_full(void)
{
	char text[8192] = "{\"hardware\": [";
	size_t used = strlen(text);

	for (int k = 0; k < SHS_HW_MAX; k++)
		used += (size_t)snprintf(text + used, sizeof(text) - used,
					 "%s{\"name\": \"c%d\", \"base\": \"h100\"}", k ? ", " : "",
					 k);
	snprintf(text + used, sizeof(text) - used, "]}");
	rejects("hw_full_catalog.json", text, SHS_EINVAL,
		"hardware[54] 'c54': the catalog is full");
}

/* Every built-in entry as JSON, renamed, loads back as a new entry equal to it (every member is
 * written, in the file's names). */
static void json_round_trips_every_entry(void)
{
	shs_hw_catalog c;
	json_t *list = json_array(), *root = json_object();
	const char *path = shs_test_tmp_path("hw_round_trip.json");
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&c);
	for (uint32_t k = 0; k < c.n; k++) {
		json_t *o = shs_hw_to_json(&c.hw[k]);
		char name[SHS_HW_NAME_MAX + 4];
		CU_ASSERT_PTR_NOT_NULL_FATAL(o);
		snprintf(name, sizeof(name), "rt-%s", c.hw[k].name);
		json_object_set_new(o, "name", json_string(name));
		json_array_append_new(list, o);
	}
	json_object_set_new(root, "hardware", list);
	CU_ASSERT_EQUAL_FATAL(json_dump_file(root, path, JSON_REAL_PRECISION(17)), 0);
	json_decref(root);
	SHS_ASSERT_OK(shs_hw_catalog_load_json(&c, path, &e), &e);
	SHS_ASSERT_INT_EQ(c.n, 20);
	for (uint32_t k = 0; k < 10; k++) {
		shs_hardware copy = c.hw[10 + k];
		memcpy(copy.name, c.hw[k].name, sizeof(copy.name));
		CU_ASSERT_EQUAL(memcmp(&copy, &c.hw[k], sizeof(copy)), 0);
	}
}

CU_TestInfo hardware_tests[] = {
	{ "built-in catalog: ten entries in order", builtin_lists_ten_entries },
	{ "TPU v4p and v5p: the book's and Google's numbers", tpu_v4p_v5p },
	{ "TPU v5e and v6e: the book's and Google's numbers", tpu_v5e_v6e },
	{ "TPU7x: the book's and Google's numbers", tpu_7x },
	{ "A100, H100, H200: the book's and NVIDIA's numbers", gpu_a100_h100_h200 },
	{ "B200 and GB200 NVL72: NVIDIA's numbers", gpu_b200_gb200 },
	{ "fp8 never below bf16, never int8's without fp8 units", fp8_never_below_bf16 },
	{ "JSON round-trips every built-in entry", json_round_trips_every_entry },
	{ "find ignores case and a tpu prefix; gb200 alias", find_ignores_case_and_tpu_prefix },
	{ "find rejects unknown names", find_rejects_unknown_names },
	{ "ICI intensities of every TPU", tpu_ici_intensities },
	{ "DCN intensities of every TPU", tpu_dcn_intensities },
	{ "NVLink and scale-out intensities of every GPU", gpu_intensities },
	{ "intensities are 0 without the link", intensity_zero_without_link },
	{ "names list, truncated with ...", names_list_and_truncation },
	{ "JSON overrides one member, keeps the rest", json_overrides_one_member },
	{ "JSON adds entries from a base", json_adds_from_base },
	{ "JSON adds full TPU and GPU entries", json_adds_full_entries },
	{ "JSON GPU from a TPU base drops the TPU links", json_gpu_from_tpu_base_drops_tpu_links },
	{ "JSON missing file: EIO, catalog unchanged", json_missing_file },
	{ "JSON syntax errors give line and column", json_syntax_error_has_line_and_column },
	{ "JSON rejects bad shapes", json_rejects_bad_shapes },
	{ "JSON rejects an unknown member, naming it", json_rejects_unknown_member },
	{ "JSON rejects bad values, naming member and value", json_rejects_bad_values },
	{ "JSON rejects an unknown base", json_rejects_unknown_base },
	{ "JSON new entry needs every required member", json_new_entry_needs_members },
	{ "JSON rejects entries past the catalog's size", json_catalog_full },
	CU_TEST_INFO_NULL,
};
