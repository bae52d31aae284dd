/* Tests of clusters (slices, wraparound, mesh layouts, errors) and collective times vs the book. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "test_util.h"

enum { DESC_CAP = 256 };

/* Book tolerance: 0.5 % unless a case says otherwise. */
static const double BOOK_TOL = 0.005;
static const double US = 1e-6;

/* Asserts |got - want| <= tol * |want|, printing both. */
#define ASSERT_NEAR_REL(got, want, tol)                                                 \
	do {                                                                               \
		double g_ = (got), w_ = (want);                                                \
		bool ok_ = fabs(g_ - w_) <= (tol) * fabs(w_);                                  \
		if (!ok_)                                                                      \
			fprintf(stderr, "\n  %s:%d: %s: got %.6g, want %.6g\n", __FILE__,         \
				__LINE__, #got, g_, w_);                                           \
		CU_ASSERT_TRUE_FATAL(ok_);                                                     \
	} while (0)

static shs_hw_catalog catalog(void)
{
	shs_hw_catalog cat;

	shs_test_book_catalog(&cat);
	return cat;
}

/* Makes a cluster that must be valid. */
static shs_cluster make(const char *hw, const char *topo, int64_t devices, int64_t slices,
			const char *mesh)
{
	shs_hw_catalog cat = catalog();
	shs_cluster_spec spec = { hw, topo, devices, slices, mesh };
	shs_cluster c;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &c, &e), &e);
	return c;
}

/* Makes a cluster that must fail; checks the message. */
static void make_fails(const char *hw, const char *topo, int64_t devices, int64_t slices,
		       const char *mesh, const char *want)
{
	shs_hw_catalog cat = catalog();
	shs_cluster_spec spec = { hw, topo, devices, slices, mesh };
	shs_cluster c;
	shs_err e = { 0 };

	SHS_ASSERT_INT_EQ(shs_cluster_make(&cat, &spec, &c, &e), SHS_EINVAL);
	SHS_ASSERT_STR_EQ(e.msg, want);
	CU_ASSERT_PTR_NULL(strchr(e.msg, '\n'));
}

static const char *describe(const shs_cluster *c)
{
	static char buf[DESC_CAP];

	buf[0] = '\0';
	shs_cluster_describe(c, buf, sizeof(buf));
	return buf;
}

/* "4x4x4" from the cluster's torus axes. */
static const char *shape_of(const shs_cluster *c)
{
	static char buf[DESC_CAP];

	buf[0] = '\0';
	for (uint32_t p = 0; p < c->n_phys; p++)
		if (c->phys[p].kind == SHS_PHYS_ICI)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%lld",
				 buf[0] ? "x" : "", (long long)c->phys[p].size);
	return buf;
}

static uint32_t axis_bit(const shs_cluster *c, const char *name)
{
	for (uint32_t k = 0; k < c->mesh.n_axes; k++)
		if (!strcmp(c->mesh.names[k], name))
			return 1u << k;
	CU_FAIL_FATAL("no such mesh axis");
	return 0;
}

/* ---- slices and topologies -------------------------------------------------------------- */

static void standard_3d_slices(void)
{
	static const struct {
		int64_t n;
		const char *shape;
	} cases[] = {
		{ 4, "2x2x1" },     { 8, "2x2x2" },     { 16, "2x2x4" },   { 32, "2x4x4" },
		{ 64, "4x4x4" },    { 128, "4x4x8" },   { 256, "4x8x8" },  { 512, "8x8x8" },
		{ 768, "8x8x12" },  { 1024, "8x8x16" }, { 2048, "8x16x16" },
		{ 4096, "16x16x16" }, { 6144, "16x16x24" }, { 8960, "16x20x28" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		shs_cluster c = make("v5p", NULL, cases[i].n, 1, NULL);
		SHS_ASSERT_STR_EQ(shape_of(&c), cases[i].shape);
		SHS_ASSERT_INT_EQ(c.devices, cases[i].n);
	}
}

static void standard_2d_slices(void)
{
	static const struct {
		int64_t n;
		const char *shape;
	} cases[] = {
		{ 1, "1x1" }, { 8, "2x4" }, { 16, "4x4" }, { 32, "4x8" }, { 128, "8x16" },
		{ 256, "16x16" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		shs_cluster c = make("v5e", NULL, cases[i].n, 1, NULL);
		SHS_ASSERT_STR_EQ(shape_of(&c), cases[i].shape);
	}
}

/* v5p's message, the rule of topology.c: Google's slices (a box of whole cubes up to 16x16x24)
 * and the book's pod. */
#define V5P_COUNTS "standard slices are a power of two up to 32 (2x4x4), or a multiple of 64 " \
	"that whole 4x4x4 cubes fill as a box within 16x16x24 (64 x a x b x c, a <= 4, b <= 4, " \
	"c <= 6: up to 6144 chips), or 8960 (the whole pod, 16x20x28); give a topology"

static void no_standard_slice(void)
{
	make_fails("v5p", NULL, 96, 1, NULL, "v5p has no standard slice of 96 chips: " V5P_COUNTS);
	make_fails("v5e", NULL, 48, 1, NULL, "v5e has no standard slice of 48 chips: standard "
		   "slices are a power of two from 1 to 256 (1x1 to 16x16); give a topology");
	make_fails("v5e", NULL, 512, 1, NULL, "v5e has no standard slice of 512 chips: standard "
		   "slices are a power of two from 1 to 256 (1x1 to 16x16); give a topology");
	make_fails("v5p", NULL, 8960 * 2, 1, NULL, "v5p has no standard slice of 17920 chips: "
		   V5P_COUNTS);
	/* 128 cubes make no box within 16x16x24 (96 cubes) nor within the pod (4 x 5 x 7) */
	make_fails("v5p", NULL, 8192, 1, NULL, "v5p has no standard slice of 8192 chips: "
		   V5P_COUNTS);
	make_fails("v5p", NULL, 0, 1, NULL, "v5p needs a topology or a device count");
	make_fails("v5p", NULL, INT64_MAX, 1, NULL, "v5p has no standard slice of "
		   "9223372036854775807 chips: " V5P_COUNTS);
	make_fails("v4p", NULL, 8192, 1, NULL, "v4p has no standard slice of 8192 chips: "
		   "standard slices are a power of two up to 32 (2x4x4), or a multiple of 64 that "
		   "whole 4x4x4 cubes fill as a box within 16x16x16 (64 x a x b x c, a <= 4, b <= 4, "
		   "c <= 4: up to 4096 chips); give a topology");
}

/* The message's rule is the behaviour: every count up to the pod is taken exactly when it is a
 * power of two up to 32, 64 a b c with a, b <= 4, c <= 6, or 8960; and a taken count makes a
 * slice of that many chips within Google's 16x16x24 (or the whole pod). 8192 chips are two
 * slices of 16x16x16. */
static void v5p_counts_match_the_message(void)
{
	shs_hw_catalog cat = catalog();
	const int64_t cube = 64;
	uint32_t taken = 0;

	for (int64_t n = 1; n <= 8960; n++) {
		shs_cluster_spec spec = { "v5p", NULL, n, 1, NULL };
		shs_cluster c;
		shs_err e = { 0 };
		bool box = false, want;
		for (int64_t a = 1; a <= 4 && !box; a++)
			for (int64_t b = 1; b <= 4 && !box; b++)
				for (int64_t k = 1; k <= 6 && !box; k++)
					box = n == cube * a * b * k;
		want = (n < cube && !(n & (n - 1))) || box || n == 8960;
		if ((shs_cluster_make(&cat, &spec, &c, &e) == SHS_OK) != want) {
			fprintf(stderr, "\n  %lld chips: %s\n", (long long)n, want ? e.msg : "taken");
			CU_FAIL_FATAL("the rule and the message disagree");
		}
		if (!want)
			continue;
		taken++;
		SHS_ASSERT_INT_EQ(c.devices, n);
		if (n != 8960)
			for (uint32_t p = 0; p < c.n_phys; p++)
				CU_ASSERT_TRUE(c.phys[p].size <= 24);
	}
	/* 6 powers of two, the distinct products 64 a b c, the pod */
	CU_ASSERT_TRUE(taken > 6 + 20);
	shs_cluster c = make("v5p", NULL, 8192, 2, NULL);
	SHS_ASSERT_STR_EQ(shape_of(&c), "16x16x16");
	SHS_ASSERT_INT_EQ(c.devices, 8192);
	c = make("v5p", NULL, 6144, 1, NULL);
	SHS_ASSERT_STR_EQ(shape_of(&c), "16x16x24");
	/* a topology still takes any box within the pod */
	c = make("v5p", "16x20x24", 0, 1, NULL);
	SHS_ASSERT_INT_EQ(c.devices, 7680);
}

static void wraparound_3d_needs_whole_cubes(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 1, NULL);
	for (uint32_t p = 0; p < c.n_phys; p++)
		CU_ASSERT_TRUE(c.phys[p].wraps);
	c = make("v4p", "4x4x8", 0, 1, NULL);
	for (uint32_t p = 0; p < c.n_phys; p++)
		CU_ASSERT_TRUE(c.phys[p].wraps);
	c = make("v5p", "2x2x4", 0, 1, NULL);   /* the book: a 2x2x4 has none */
	for (uint32_t p = 0; p < c.n_phys; p++)
		CU_ASSERT_FALSE(c.phys[p].wraps);
	c = make("v5p", "4x4x2", 0, 1, NULL);
	CU_ASSERT_FALSE(c.phys[0].wraps);
}

static void wraparound_2d_needs_16(void)
{
	shs_cluster c = make("v5e", "8x16", 0, 1, NULL);
	CU_ASSERT_FALSE(c.phys[0].wraps);
	CU_ASSERT_TRUE(c.phys[1].wraps);
	c = make("v5e", "16x16", 0, 1, NULL);
	CU_ASSERT_TRUE(c.phys[0].wraps && c.phys[1].wraps);
	c = make("v6e", "4x4", 0, 1, NULL);
	CU_ASSERT_FALSE(c.phys[0].wraps || c.phys[1].wraps);
}

static void topology_errors(void)
{
	make_fails("v5p", "4x4", 0, 1, NULL, "topology 4x4 is 2D but v5p is a 3D torus");
	make_fails("v5e", "4x4x4", 0, 1, NULL, "topology 4x4x4 is 3D but v5e is a 2D torus");
	make_fails("v5p", "32x32x32", 0, 1, NULL,
		   "topology 32x32x32 exceeds the v5p pod 16x20x28");
	make_fails("v5p", "4x4x", 0, 1, NULL,
		   "topology '4x4x': want sides like 4x4x4 (1 to 1048576 each, 2 or 3 of them)");
	make_fails("v5p", "4*4*4", 0, 1, NULL,
		   "topology '4*4*4': want sides like 4x4x4 (1 to 1048576 each, 2 or 3 of them)");
	make_fails("v5p", "0x4x4", 0, 1, NULL,
		   "topology '0x4x4': want sides like 4x4x4 (1 to 1048576 each, 2 or 3 of them)");
	make_fails("v5p", "4x4x4x4", 0, 1, NULL,
		   "topology '4x4x4x4': want sides like 4x4x4 (1 to 1048576 each, 2 or 3 of them)");
	make_fails("v5p", "4x4x4", 128, 1, NULL,
		   "topology 4x4x4 with 1 slice(s) has 64 chips, not the 128 devices asked for");
	/* any orientation of the pod fits */
	shs_cluster c = make("v5p", "28x20x16", 0, 1, NULL);
	SHS_ASSERT_INT_EQ(c.devices, 8960);
}

static void unknown_hardware_lists_names(void)
{
	shs_hw_catalog cat = { .n = 2 };
	shs_cluster_spec spec = { .hardware = "v9", .devices = 8 };
	shs_cluster c;
	shs_err e = { 0 };

	snprintf(cat.hw[0].name, sizeof(cat.hw[0].name), "v5p");
	snprintf(cat.hw[1].name, sizeof(cat.hw[1].name), "h100");
	SHS_ASSERT_INT_EQ(shs_cluster_make(&cat, &spec, &c, &e), SHS_EINVAL);
	SHS_ASSERT_STR_EQ(e.msg, "unknown hardware 'v9' (known: v5p, h100)");
	spec.hardware = NULL;
	SHS_ASSERT_INT_EQ(shs_cluster_make(&cat, &spec, &c, &e), SHS_EINVAL);
	SHS_ASSERT_STR_EQ(e.msg, "no hardware given (known: v5p, h100)");
}

static void slices_add_a_dcn_axis(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 2, NULL);
	SHS_ASSERT_INT_EQ(c.n_phys, 4);
	SHS_ASSERT_STR_EQ(c.phys[0].name, "dcn");
	SHS_ASSERT_INT_EQ(c.phys[0].kind, SHS_PHYS_DCN);
	SHS_ASSERT_INT_EQ(c.phys[0].size, 2);
	SHS_ASSERT_INT_EQ(c.devices, 128);
	/* devices counts every slice: 256 chips in 2 slices are two 4x4x8 */
	c = make("tpu-v5p", NULL, 256, 2, NULL);
	SHS_ASSERT_STR_EQ(shape_of(&c), "4x4x8");
	make_fails("v5p", NULL, 192, 5, NULL, "192 devices do not split into 5 equal slices");
	make_fails("v5p", "4x4x4", 0, -1, NULL, "slices -1: want 1 or more");
}

static void gpu_nodes(void)
{
	shs_cluster c = make("h100", NULL, 16, 1, NULL);
	SHS_ASSERT_INT_EQ(c.n_phys, 2);
	SHS_ASSERT_STR_EQ(c.phys[0].name, "net");
	SHS_ASSERT_INT_EQ(c.phys[0].size, 2);
	SHS_ASSERT_STR_EQ(c.phys[1].name, "node");
	SHS_ASSERT_INT_EQ(c.phys[1].size, 8);
	c = make("h100", NULL, 4, 1, NULL);
	SHS_ASSERT_INT_EQ(c.phys[0].size, 1);
	SHS_ASSERT_INT_EQ(c.phys[1].size, 4);
	c = make("gb200", NULL, 144, 1, NULL);
	SHS_ASSERT_INT_EQ(c.phys[1].size, 72);
	make_fails("h100", NULL, 12, 1, NULL, "12 GPUs are not whole h100 nodes of 8");
	make_fails("h100", "4x4", 16, 1, NULL,
		   "topology '4x4': h100 is a GPU, give a device count instead");
	make_fails("h100", NULL, 16, 2, NULL,
		   "slices 2: slices are for TPUs; h100 nodes come from the device count");
	make_fails("h100", NULL, 0, 1, NULL, "h100 needs a device count from 1 to 8388608");
}

/* ---- meshes ----------------------------------------------------------------------------- */

static void explicit_layout_spans_whole_axes(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 1, "fsdp=16@xy,tensor=4@z");
	SHS_ASSERT_INT_EQ(c.mesh.n_axes, 2);
	SHS_ASSERT_STR_EQ(c.mesh.names[0], "fsdp");
	SHS_ASSERT_INT_EQ(c.mesh.sizes[0], 16);
	SHS_ASSERT_INT_EQ(c.span[0], 0x3);
	SHS_ASSERT_INT_EQ(c.span[1], 0x4);
	SHS_ASSERT_INT_EQ(c.part[0][0], 4);
	SHS_ASSERT_INT_EQ(c.part[0][1], 4);
	SHS_ASSERT_INT_EQ(c.part[0][2], 0);
	SHS_ASSERT_INT_EQ(c.part[1][2], 4);
	/* '+' form, any order, and dcn */
	c = make("v5p", "4x4x4", 0, 2, "data=2@dcn,fsdp=64@z+y+x");
	SHS_ASSERT_INT_EQ(c.span[0], 0x1);
	SHS_ASSERT_INT_EQ(c.span[1], 0xe);
	c = make("v5p", "4x4x4", 0, 2, "all=128@dcn+xyz");
	SHS_ASSERT_INT_EQ(c.span[0], 0xf);
}

static void shared_axis_first_is_major(void)
{
	shs_cluster c = make("v5e", "16x16", 0, 1, "a=4@x,b=4@x,c=16@y");
	SHS_ASSERT_INT_EQ(c.span[0], 0x1);
	SHS_ASSERT_INT_EQ(c.span[1], 0x1);
	SHS_ASSERT_INT_EQ(c.part[0][0], 4);
	SHS_ASSERT_INT_EQ(c.part[1][0], 4);
	SHS_ASSERT_INT_EQ(c.part[2][1], 16);
	SHS_ASSERT_STR_EQ(describe(&c), "a=4@x,b=4@x,c=16@y (v5e 16x16, wraparound on x y)");
	/* the layouts the reports print read back: an axis over several physical axes takes
	 * what it still needs of the next, the later axes the rest */
	c = make("v5p", "4x4x4", 0, 1, "fsdp=8@xy,tensor=8@yz");
	SHS_ASSERT_INT_EQ(c.part[0][0], 4);
	SHS_ASSERT_INT_EQ(c.part[0][1], 2);
	SHS_ASSERT_INT_EQ(c.part[1][1], 2);
	SHS_ASSERT_INT_EQ(c.part[1][2], 4);
	SHS_ASSERT_STR_EQ(describe(&c), "fsdp=8@xy,tensor=8@yz (v5p 4x4x4, wraparound on x y z)");
	c = make("v6e", "16x16", 0, 1, "fsdp=64@xy,tensor=4@y");
	SHS_ASSERT_INT_EQ(c.part[0][0], 16);
	SHS_ASSERT_INT_EQ(c.part[0][1], 4);
	SHS_ASSERT_INT_EQ(c.part[1][1], 4);
}

static void default_layout(void)
{
	/* major mesh axis on major physical axes, splitting y */
	shs_cluster c = make("v5p", "4x4x4", 0, 1, "data=8,model=8");
	SHS_ASSERT_INT_EQ(c.span[0], 0x3);
	SHS_ASSERT_INT_EQ(c.part[0][0], 4);
	SHS_ASSERT_INT_EQ(c.part[0][1], 2);
	SHS_ASSERT_INT_EQ(c.span[1], 0x6);
	SHS_ASSERT_INT_EQ(c.part[1][1], 2);
	SHS_ASSERT_INT_EQ(c.part[1][2], 4);
	/* dcn first */
	c = make("v5p", "4x4x4", 0, 2, "data=2,fsdp=64");
	SHS_ASSERT_INT_EQ(c.span[0], 0x1);
	SHS_ASSERT_INT_EQ(c.span[1], 0xe);
	/* free axes only, size-1 axes take nothing */
	c = make("v5p", "4x4x4", 0, 1, "one=1,tensor=4@x,fsdp=16");
	SHS_ASSERT_INT_EQ(c.span[0], 0);
	SHS_ASSERT_INT_EQ(c.span[1], 0x1);
	SHS_ASSERT_INT_EQ(c.span[2], 0x6);
	/* GPUs: net then node */
	c = make("h100", NULL, 64, 1, "dp=8,tp=8");
	SHS_ASSERT_INT_EQ(c.span[0], 0x1);
	SHS_ASSERT_INT_EQ(c.span[1], 0x2);
	/* whole axes and major factors cannot lay a=3 first: by common factors, a takes 3 of z
	 * and b the rest of every axis */
	c = make("v5p", "4x4x12", 0, 1, "a=3,b=64");
	SHS_ASSERT_INT_EQ(c.span[0], 0x4);
	SHS_ASSERT_INT_EQ(c.part[0][2], 3);
	SHS_ASSERT_INT_EQ(c.span[1], 0x7);
	SHS_ASSERT_INT_EQ(c.part[1][0] * c.part[1][1] * c.part[1][2], 64);
	/* 8960 chips: 35 of y and z for data, the rest for fsdp */
	c = make("v5p", "16x20x28", 0, 1, "data=35,fsdp=256");
	SHS_ASSERT_INT_EQ(c.span[0], 0x6);
	SHS_ASSERT_INT_EQ(c.part[0][1] * c.part[0][2], 35);
	/* no mesh: one axis per physical axis of size > 1 */
	c = make("v5p", "2x2x1", 0, 1, NULL);
	SHS_ASSERT_STR_EQ(describe(&c), "x=2@x,y=2@y (v5p 2x2x1, no wraparound)");
}

static void mesh_errors(void)
{
	make_fails("v5p", "4x4x4", 0, 1, "fsdp=16@xy,tensor=8@z",
		   "mesh 'fsdp=16@xy,tensor=8@z': sizes multiply to 128, the cluster has 64 "
		   "devices");
	make_fails("v5p", "4x4x4", 0, 1, "fsdp=16@xz,tensor=4@z",
		   "mesh 'fsdp=16@xz,tensor=4@z': physical axis 'z' used twice (by 'fsdp' and "
		   "'tensor')");
	make_fails("v5p", "4x4x4", 0, 1, "a=4@z,b=4@z,c=4",
		   "mesh 'a=4@z,b=4@z,c=4': physical axis 'z' used twice (by 'a' and 'b')");
	make_fails("v5p", "4x4x4", 0, 1, "a=64@xxz",
		   "mesh 'a=64@xxz': physical axis 'x' used twice by 'a'");
	make_fails("v5p", "4x4x4", 0, 1, "a=16@xw,b=4",
		   "mesh 'a=16@xw,b=4': unknown physical axis 'xw' for 'a' (this cluster has x, "
		   "y, z)");
	make_fails("v5p", "4x4x4", 0, 1, "a=16@node,b=4",
		   "mesh 'a=16@node,b=4': unknown physical axis 'node' for 'a' (this cluster "
		   "has x, y, z)");
	make_fails("v5e", "4x4", 0, 1, "a=4@z,b=4", "mesh 'a=4@z,b=4': unknown physical axis 'z' "
		   "for 'a' (this cluster has x, y)");
	make_fails("v5p", "4x4x4", 0, 1, "a=8@x,b=8",
		   "mesh 'a=8@x,b=8': 'a' has size 8 but its physical axes hold 4 of it");
	make_fails("v5p", "4x4x4", 0, 1, "a=2@x,b=32",
		   "mesh 'a=2@x,b=32': physical axis 'x': the axes on it take 2 of its 4 chips");
	make_fails("v5p", "4x4x4", 0, 1, "a=4,a=16", "mesh 'a=4,a=16': axis name 'a' given twice");
	make_fails("v5p", "4x4x4", 0, 1, "a=64@", "mesh 'a=64@': 'a' needs physical axes after '@' "
		   "(like @xy, @z, @dcn, @node)");
	make_fails("v5p", "4x4x4", 0, 1, "a=64,", "mesh 'a=64,': ends with ','");
	make_fails("v5p", "4x4x4", 0, 1, "9a=64", "mesh '9a=64': axis 1: want NAME=SIZE[@PLACE] at "
		   "'9a=64'");
	make_fails("v5p", "4x4x4", 0, 1, "a=0,b=64",
		   "mesh 'a=0,b=64': axis 'a' needs a size from 1 to 1048576");
	make_fails("v5p", "4x4x4", 0, 1, "a:64", "mesh 'a:64': axis 'a': want NAME=SIZE[@PLACE]");
	make_fails("v5p", "4x4x4", 0, 1, "a=64x", "mesh 'a=64x': axis 'a': unexpected 'x'");
	make_fails("v5p", "4x4x4", 0, 1, "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=64",
		   "mesh 'a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=64': more than 8 axes");
	make_fails("v5p", "4x4x4", 0, 1, "a=1048576,b=1048576,c=1048576,d=1048576",
		   "mesh 'a=1048576,b=1048576,c=1048576,d=1048576': sizes multiply to more than "
		   "8796093022207, the cluster has 64 devices");
}

static void describe_clusters(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 1, "fsdp=16@xy,tensor=4@z");
	char buf[DESC_CAP] = "mesh: ";

	SHS_ASSERT_STR_EQ(describe(&c), "fsdp=16@xy,tensor=4@z (v5p 4x4x4, wraparound on x y z)");
	shs_cluster_describe(&c, buf, sizeof(buf));   /* appends */
	SHS_ASSERT_STR_EQ(buf, "mesh: fsdp=16@xy,tensor=4@z (v5p 4x4x4, wraparound on x y z)");
	c = make("v5e", "8x16", 0, 1, "data=128");
	SHS_ASSERT_STR_EQ(describe(&c), "data=128@xy (v5e 8x16, wraparound on y)");
	c = make("v5p", "4x4x4", 0, 2, "data=2,fsdp=64");
	SHS_ASSERT_STR_EQ(describe(&c), "data=2@dcn,fsdp=64@xyz (v5p 4x4x4, 2 slices over DCN, "
			  "wraparound on x y z)");
	c = make("h100", NULL, 16, 1, "dp=2,tp=8");
	SHS_ASSERT_STR_EQ(describe(&c), "dp=2@net,tp=8@node (h100, 16 GPUs: 2 nodes of 8)");
	c = make("h100", NULL, 16, 1, "all=16@net+node");
	SHS_ASSERT_STR_EQ(describe(&c), "all=16@net+node (h100, 16 GPUs: 2 nodes of 8)");
	/* a short buffer is truncated, never overrun */
	char tiny[8] = "";
	shs_cluster_describe(&c, tiny, sizeof(tiny));
	SHS_ASSERT_STR_EQ(tiny, "all=16@");
}

static void mesh_group_sizes(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 1, "a=2,b=8,c=4");
	SHS_ASSERT_INT_EQ(shs_mesh_group(&c.mesh, 0), 1);
	SHS_ASSERT_INT_EQ(shs_mesh_group(&c.mesh, 0x1), 2);
	SHS_ASSERT_INT_EQ(shs_mesh_group(&c.mesh, 0x6), 32);
	SHS_ASSERT_INT_EQ(shs_mesh_group(&c.mesh, 0xff), 64);   /* bits past the axes ignored */
}

/* ---- collectives: TPU ------------------------------------------------------------------- */

/* sharding.md Q2: v4p 4x4x4, Mesh({X: 4, Y: 4, Z: 4}), B = 1024, D = 4096, bf16. */
static void v4p_sharding_quiz2(void)
{
	shs_cluster c = make("v4p", "4x4x4", 0, 1, "X=4@x,Y=4@y,Z=4@z");
	double bd2 = 2.0 * 1024 * 4096;
	uint32_t x = axis_bit(&c, "X"), y = axis_bit(&c, "Y"), z = axis_bit(&c, "Z");

	/* AllGather_X([B_X, D_Y]): 2BD/Y bytes over one axis: 23.30 us */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, x, bd2 / 4), 23.30 * US, BOOK_TOL);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, y, bd2 / 4), 23.30 * US, BOOK_TOL);
	/* AllGather_XY: the full 2BD over two axes: 46.60 us, latency 4 us not binding */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, x | y, bd2), 46.60 * US, BOOK_TOL);
	/* AllReduce_Z([B_X, D_Y]{U_Z}): 2 * 2BD/(XY) / W: 11.65 us */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, z, bd2 / 16), 11.65 * US, BOOK_TOL);
	/* a ReduceScatter costs what an AllGather does */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_REDUCE_SCATTER, x, bd2 / 4), 23.30 * US,
			BOOK_TOL);
}

/* sharding.md Q3: AllGather_X([B_X]) with B = 128 bf16 on v4p 4x4x4: 2 hops, about 2 us. */
static void v4p_latency_bound_gather(void)
{
	shs_cluster c = make("v4p", "4x4x4", 0, 1, "X=4@x,Y=4@y,Z=4@z");
	double t = shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, axis_bit(&c, "X"), 2.0 * 128);

	ASSERT_NEAR_REL(t, 2 * US, 1e-9);
	/* two axes: T_min * (4 + 4) / 2 = 4 us */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x3, 2.0 * 128), 4 * US, 1e-9);
}

/* sharding.md Pop Quiz 2: 2048 x 8192 bf16 (33.55e6 bytes) gathered over an axis of 4: 372.8 us
 * with wraparound (v4p cube, same 9e10), 559.2 us without (v5e 8x4: 3 hops of 8.4e6 bytes at
 * 4.5e10 one way). */
static void wraparound_372_vs_559(void)
{
	double v = 2.0 * 2048 * 8192;
	shs_cluster ring = make("v4p", "4x4x4", 0, 1, "X=4@x,Y=4@y,Z=4@z");
	shs_cluster line = make("v5e", "8x4", 0, 1, "X=8@x,Y=4@y");

	ASSERT_NEAR_REL(shs_coll_time(&ring, SHS_PCOLL_ALL_GATHER, 0x2, v), 372.8 * US, BOOK_TOL);
	ASSERT_NEAR_REL(shs_coll_time(&line, SHS_PCOLL_ALL_GATHER, 0x2, v), 559.2 * US, BOOK_TOL);
}

/* "Without wraparound most collectives take about 2x as long": 2(e-1)/e on a line of e. */
static void line_approaches_double(void)
{
	double v = 64e6;
	shs_cluster ring = make("v5e", "16x16", 0, 1, "a=16@x,b=16@y");
	shs_cluster line = make("v5e", "8x8", 0, 1, "a=8@x,b=8@y");
	double t_ring = shs_coll_time(&ring, SHS_PCOLL_ALL_GATHER, 0x1, v);
	double t_line = shs_coll_time(&line, SHS_PCOLL_ALL_GATHER, 0x1, v);

	ASSERT_NEAR_REL(t_ring, v / 9e10, 1e-12);
	ASSERT_NEAR_REL(t_line / t_ring, 2.0 * 7 / 8, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&line, SHS_PCOLL_ALL_TO_ALL, 0x1, v),
			2 * shs_coll_time(&ring, SHS_PCOLL_ALL_TO_ALL, 0x1, v) * 1, 1e-12);
}

/* v5e: a per-hop buffer under 4.5e10 * 1e-6 = 45 kB is latency-bound. */
static void v5e_latency_bound_45kb(void)
{
	shs_cluster c = make("v5e", "16x16", 0, 1, "a=16@x,b=16@y");
	double hop = 45e3;   /* bytes per hop each way: V / 16 */

	/* at 45 kB the hop takes T_min: 8 hops of 1 us both ways of counting */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, 16 * hop), 8 * US, 1e-9);
	/* below it the time stays at the latency floor */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, 16 * hop / 2), 8 * US, 1e-9);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, 16 * hop / 100), 8 * US, 1e-9);
	/* above it the bandwidth term takes over */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, 16 * hop * 2), 16 * US, 1e-9);
}

/* tpus.md Q5: v5e 4x4, no wraparound, bf16[8,128,8192] (1.7e7 bytes) from (0,0) to (3,3): both
 * ports at 4.5e10 (188 us) plus 6 hops of 1 us: 194 us. */
static void v5e_q5_point_to_point(void)
{
	shs_cluster c = make("v5e", "4x4", 0, 1, "a=4@x,b=4@y");

	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_PERMUTE, 0x3, 1.7e7), 194 * US, BOOK_TOL);
	/* exact bytes: 6 us + 2^24 / 9e10 */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_PERMUTE, 0x3, 16777216.0),
			6 * US + 16777216.0 / 9e10, 1e-12);
}

/* Spanning M physical axes divides the time by M (sharding.md summary table). */
static void more_axes_more_bandwidth(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 1, "X=4@x,Y=4@y,Z=4@z");
	double v = 1e9, one = shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, v);

	ASSERT_NEAR_REL(one, v / 1.8e11, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x3, v), one / 2, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x7, v), one / 3, 1e-12);
	/* one logical axis over all three: the same */
	shs_cluster f = make("v5p", "4x4x4", 0, 1, "fsdp=64@xyz");
	ASSERT_NEAR_REL(shs_coll_time(&f, SHS_PCOLL_ALL_GATHER, 0x1, v), one / 3, 1e-12);
	/* AllReduce is twice an AllGather */
	ASSERT_NEAR_REL(shs_coll_time(&f, SHS_PCOLL_ALL_REDUCE, 0x1, v), 2 * one / 3, 1e-12);
}

/* AllToAll: V/(4W) on a ring; ND: V * max(A,B,..)/(4 N W). */
static void tpu_all_to_all(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 1, "X=4@x,Y=4@y,Z=4@z");
	double v = 1e9, w = 1.8e11;

	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_TO_ALL, 0x1, v), v / (4 * w), 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_TO_ALL, 0x7, v), v * 4 / (4 * 64 * w),
			1e-12);
	shs_cluster d = make("v5p", "4x4x8", 0, 1, "X=4@x,Y=4@y,Z=8@z");
	ASSERT_NEAR_REL(shs_coll_time(&d, SHS_PCOLL_ALL_TO_ALL, 0x7, v), v * 8 / (4 * 128 * w),
			1e-12);
}

/* A factor of a physical axis: the minor one is a contiguous line, the major one a strided ring
 * sharing every link; both together are the whole ring. */
static void factors_of_one_axis(void)
{
	shs_cluster c = make("v5e", "16x16", 0, 1, "a=4@x,b=4@x,c=16@y");
	double v = 1e9, w = 9e10;

	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x2, v), 1.5 * v / w, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, v), 4 * v / w, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x3, v), v / w, 1e-12);
	/* the x group and the whole y ring at once: speeds add */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x7, v), v / (2 * w), 1e-12);
}

/* training.md, across pods: AllReduce of the per-chip gradient shard over S slices takes
 * 2 V (S-1)/(S W_dcn) (the book's 2*2*2*DF/(M W_dcn) when S is large); a group with n chips
 * per slice has n times the DCN bandwidth. */
static void dcn_collectives(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 2, "data=2@dcn,fsdp=64@xyz");
	double v = 1e9, w = 6.25e9;

	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0x1, v), 2 * v / 2 / w, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, v), v / 2 / w, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_TO_ALL, 0x1, v), v / 4 / w, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_PERMUTE, 0x1, v), v / w, 1e-12);
	/* data + fsdp: DCN with 64 chips of bandwidth, still slower than ICI */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x3, v),
			fmax(v / 2 / (64 * w), v / (3 * 1.8e11)), 1e-12);
	/* many slices: the book's large-S form */
	shs_cluster big = make("v5p", "4x4x4", 0, 1000, "data=1000,fsdp=64");
	double d = 8192, f = 32768, grad = 2 * 2 * d * f / 64;   /* per-chip shard of 2 matrices */
	ASSERT_NEAR_REL(shs_coll_time(&big, SHS_PCOLL_ALL_REDUCE, 0x1, grad),
			2 * 2 * 2 * d * f / (64 * w), 0.0011);
}

/* ---- collectives: GPU ------------------------------------------------------------------- */

/* gpus.md: intra-node AllGather bytes (N-1)/(N W_GPU) -> bytes/450e9 on H100; 514 GB/s per
 * level precisely. */
static void h100_node_all_gather(void)
{
	shs_cluster c = make("h100", NULL, 8, 1, "tp=8");
	double v = 1e9, t = shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, v);

	ASSERT_NEAR_REL(t, v * 7 / (8 * 450e9), 1e-12);
	ASSERT_NEAR_REL(v / t, 514e9, BOOK_TOL);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0x1, v), 2 * t, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_REDUCE_SCATTER, 0x1, v), t, 1e-12);
}

/* Quiz 4 Q5: two H100 nodes: B/514e9 at the node level, B/800e9 across; the node level binds. */
static void h100_two_nodes_precise(void)
{
	shs_cluster c = make("h100", NULL, 16, 1, "dp=2,tp=8");
	double v = 1e9, t = shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x3, v);

	ASSERT_NEAR_REL(v / t, 514e9, BOOK_TOL);
	/* the cross-node term alone, with NVLink made free */
	c.hw.gpu_egress = 1e30;
	ASSERT_NEAR_REL(v / shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x3, v), 800e9, 1e-12);
	/* one GPU per node: each node's egress is shared by the 8 parallel groups */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x1, v), v / 2 / (400e9 / 8),
			1e-12);
}

/* The leaf level: 32 nodes of 8 H100: 400e9 * 32/31 = 413 GB/s effective, the minimum. */
static void h100_leaf_413(void)
{
	shs_cluster c = make("h100", NULL, 256, 1, "dp=32,tp=8");
	double v = 1e9;

	ASSERT_NEAR_REL(v / shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x3, v), 413e9, BOOK_TOL);
}

/* AllToAll: B(N-1)/(W N^2) in a node, B(M-1)/(M^2 W_node) across M full nodes. */
static void gpu_all_to_all(void)
{
	shs_cluster c = make("h100", NULL, 8, 1, "ep=8");
	double v = 1e9;

	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_TO_ALL, 0x1, v), v * 7 / (450e9 * 64),
			1e-12);
	c = make("h100", NULL, 32, 1, "ep=32");
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_TO_ALL, 0x1, v), v * 3 / (16 * 400e9),
			1e-12);
	c = make("b200", NULL, 8, 1, "ep=8");
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_TO_ALL, 0x1, v), v * 7 / (900e9 * 64),
			1e-12);
}

static void gpu_permute(void)
{
	shs_cluster c = make("h100", NULL, 16, 1, "pp=2,tp=8");
	double v = 1e9;

	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_PERMUTE, 0x2, v), v / 450e9, 1e-12);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_PERMUTE, 0x1, v), v / 50e9, 1e-12);
}

/* NCCL's latency is the floor of a GPU collective (hardware_rates.c): 6.6 us, plus 0.6 us a step
 * in a node and 2.7 us a step across nodes; a ring gather over n has n - 1 steps, m - 1 of them
 * across m nodes, a ring all-reduce twice that, a tree all-reduce 2(a - 1) in a node and
 * 2 log2(m) levels of 5.0 us across, the quicker of the two; large arrays stay bandwidth-bound.
 */
static void gpu_latency_floor(void)
{
	shs_cluster c = make("h100", NULL, 16, 1, "dp=2,tp=8");
	const double us = 1e-6, v = 1e9;

	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0x2, 4), (6.6 + 14 * 0.6) * us,
			1e-9);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x2, 4), (6.6 + 7 * 0.6) * us,
			1e-9);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x3, 4),
			(6.6 + 14 * 0.6 + 2.7) * us, 1e-9);
	/* the tree (6.6 + 2 (7 * 0.6 + 5.0) = 25.0 us) beats the ring (6.6 + 28 * 0.6 + 2 * 2.7 =
	 * 28.8 us) */
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0x3, 4),
			(6.6 + 2 * (7 * 0.6 + 5.0)) * us, 1e-9);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_PERMUTE, 0x1, 4), (6.6 + 2.7) * us, 1e-9);
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_GATHER, 0x2, v), v * 7 / (8 * 450e9),
			1e-12);
	/* a hardware file's 0 takes the floor away */
	c.hw.coll_latency = c.hw.nvlink_step_latency = c.hw.scaleout_step_latency = 0;
	c.hw.scaleout_tree_latency = 0;
	ASSERT_NEAR_REL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0x2, 4), 2 * 4 * 7 / (8 * 450e9),
			1e-12);
}

static void trivial_groups_cost_nothing(void)
{
	shs_cluster c = make("v5p", "4x4x4", 0, 1, "one=1,fsdp=64");

	CU_ASSERT_EQUAL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0, 1e9), 0);
	CU_ASSERT_EQUAL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0x1, 1e9), 0);
	CU_ASSERT_EQUAL(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0x2, 0), 0);
	CU_ASSERT_EQUAL(shs_coll_time(NULL, SHS_PCOLL_ALL_REDUCE, 0x2, 1e9), 0);
	CU_ASSERT_TRUE(shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, 0x2, 1e9) > 0);
	CU_ASSERT_EQUAL(shs_coll_time(&c, 99, 0x2, 1e9), 0);
}

/* Malformed specs fail with one line and leave nothing behind. */
static void bad_specs_never_crash(void)
{
	static const char *const meshes[] = {
		"", ",", "=", "a=", "a=@", "a=4@+", "a=64@x+", "a=64@x++y", "@", "a==4",
		"a=4,,b=16", "a=99999999999999999999", "a=-4", "a=4@dcn", "a=64@xyzxyz", " a=64",
		"a=64 ", "a=64@X", "a=4@x,b=4@y,c=4@z,d=2@x",
	};
	shs_hw_catalog cat = catalog();
	for (size_t i = 0; i < sizeof(meshes) / sizeof(*meshes); i++) {
		shs_cluster_spec spec = { "v5p", "4x4x4", 0, 1, meshes[i] };
		shs_cluster c;
		shs_err e = { 0 };
		int rc = shs_cluster_make(&cat, &spec, &c, &e);
		if (!meshes[i][0]) {   /* empty: the default mesh */
			SHS_ASSERT_OK(rc, &e);
			continue;
		}
		SHS_ASSERT_INT_EQ(rc, SHS_EINVAL);
		CU_ASSERT_TRUE(!strncmp(e.msg, "mesh '", strlen("mesh '")));
		CU_ASSERT_PTR_NULL(strchr(e.msg, '\n'));
		SHS_ASSERT_INT_EQ(c.mesh.n_axes, 0);
	}
	shs_err e = { 0 };
	shs_cluster c;
	shs_cluster_spec spec = { "v5p", NULL, 64, 1, NULL };
	SHS_ASSERT_INT_EQ(shs_cluster_make(NULL, &spec, &c, &e), SHS_EINVAL);
	SHS_ASSERT_INT_EQ(shs_cluster_make(&cat, NULL, &c, &e), SHS_EINVAL);
}

CU_TestInfo cluster_tests[] = {
	{ "3D standard slices are the most cubic", standard_3d_slices },
	{ "2D standard slices are the most square", standard_2d_slices },
	{ "counts without a standard slice are refused", no_standard_slice },
	{ "v5p: --devices takes what its message says", v5p_counts_match_the_message },
	{ "3D slices wrap when made of whole cubes", wraparound_3d_needs_whole_cubes },
	{ "2D slices wrap on an axis of 16", wraparound_2d_needs_16 },
	{ "bad topologies name the problem", topology_errors },
	{ "unknown hardware lists the known names", unknown_hardware_lists_names },
	{ "slices add a dcn axis", slices_add_a_dcn_axis },
	{ "GPUs come in nodes", gpu_nodes },
	{ "explicit layouts span whole axes", explicit_layout_spans_whole_axes },
	{ "a shared axis gives the first axis the major factor", shared_axis_first_is_major },
	{ "the default layout fills major axes first", default_layout },
	{ "mesh errors name the part", mesh_errors },
	{ "describe", describe_clusters },
	{ "mesh groups multiply sizes", mesh_group_sizes },
	{ "v4p sharding quiz 2: 23.30, 46.60, 11.65 us", v4p_sharding_quiz2 },
	{ "v4p latency-bound gather: 2 us", v4p_latency_bound_gather },
	{ "wraparound: 372.8 us, without: 559.2 us", wraparound_372_vs_559 },
	{ "a line takes 2(e-1)/e of a ring", line_approaches_double },
	{ "v5e 45 kB per hop is latency-bound", v5e_latency_bound_45kb },
	{ "v5e Q5 point to point: 194 us", v5e_q5_point_to_point },
	{ "M physical axes give M times the bandwidth", more_axes_more_bandwidth },
	{ "TPU all-to-all", tpu_all_to_all },
	{ "factors of one physical axis", factors_of_one_axis },
	{ "DCN collectives", dcn_collectives },
	{ "H100 node all-gather", h100_node_all_gather },
	{ "H100 two nodes, precise", h100_two_nodes_precise },
	{ "H100 leaf level: 413 GB/s", h100_leaf_413 },
	{ "GPU all-to-all", gpu_all_to_all },
	{ "GPU permute", gpu_permute },
	{ "GPU collectives take at least NCCL's latency", gpu_latency_floor },
	{ "trivial groups cost nothing", trivial_groups_cost_nothing },
	{ "bad specs never crash", bad_specs_never_crash },
	CU_TEST_INFO_NULL,
};
