/* Physical axes: TPU slices (standard shapes, tori and their wraparound) and GPU nodes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cluster_internal.h"

/*
 * Physical axes, major first: TPU "dcn" (only with slices > 1), then "x", "y" and, on 3D tori,
 * "z"; GPU "net" (nodes over scale-out) then "node" (GPUs of one NVLink domain). GPUs always
 * have both ("net" of size 1 for one node). Devices are numbered row-major over them.
 *
 * Topology (TPU): "AxB" on 2D tori, "AxBxC" on 3D ones, fitting the pod in some orientation.
 * Without a topology, devices (the total; each slice gets devices / slices) picks the standard
 * slice, within the largest slice the vendor sells (max_slice; the pod when the catalog gives
 * none):
 *   3D: a multiple of wrap_unit^3 (64) chips is the most cubic box of whole wrap_unit cubes
 *       (4x4x4) that fits that slice: the least max/min ratio, then the smallest longest side,
 *       sides ascending (64 4x4x4, 128 4x4x8, 256 4x8x8, 768 8x8x12, 4096 16x16x16, 6144
 *       16x16x24: Google's v5p table); a smaller power of two is the most cubic shape of powers
 *       of two, sides above 1 ascending then the 1s (4 2x2x1, 8 2x2x2, 16 2x2x4, 32 2x4x4); the
 *       pod's own chip count is the whole pod (v5p 8960: the book's 16x20x28).
 *   2D: a power of two, the most square shape, short side first (16 4x4, 32 4x8, 128 8x16).
 *   Any other count has no standard slice (v5p 8192: 128 cubes make no box within 16x16x24, nor
 *   within the pod): the message says exactly which counts are taken; give a topology.
 * Wraparound: on 3D tori (wrap_needs_equal false) every axis wraps when every axis is a multiple
 * of wrap_unit (the slice is made of whole 4x4x4 cubes), none otherwise; on 2D tori an axis
 * wraps only when its size is exactly wrap_unit (16).
 */

static bool is_pow2(int64_t n)
{
	return n > 0 && !(n & (n - 1));
}

/* Sorts three values ascending (rank <= 3). */
static void sort_dims(int64_t *d, uint32_t rank)
{
	for (uint32_t i = 1; i < rank; i++)
		for (uint32_t j = i; j > 0 && d[j - 1] > d[j]; j--) {
			int64_t t = d[j];
			d[j] = d[j - 1];
			d[j - 1] = t;
		}
}

/* Whether dims fit box in some orientation (a box side of 0 means no limit). */
static bool fits_box(const int64_t *box, const int64_t *dims, uint32_t rank)
{
	int64_t d[SHS__RANK_MAX], b[SHS__RANK_MAX];

	memcpy(d, dims, rank * sizeof(*d));
	memcpy(b, box, rank * sizeof(*b));
	sort_dims(d, rank);
	sort_dims(b, rank);
	for (uint32_t i = 0; i < rank; i++)
		if (b[i] > 0 && d[i] > b[i])
			return false;
	return true;
}

static bool fits_pod(const shs_hardware *hw, const int64_t *dims, uint32_t rank)
{
	return fits_box(hw->pod, dims, rank);
}

/* The box standard slices fit: the largest slice sold, else the pod. */
static const int64_t *slice_limit(const shs_hardware *hw)
{
	return hw->max_slice[0] > 0 ? hw->max_slice : hw->pod;
}

/* Chips in a box of rank sides. */
static int64_t box_chips(const int64_t *box, uint32_t rank)
{
	int64_t n = 1;

	for (uint32_t i = 0; i < rank; i++)
		n *= box[i];   /* sides of at most 2^20, rank 3: no overflow */
	return n;
}

/* Whether shape (a <= b <= c) is more cubic than the best so far: ratio c/a, then c. */
static bool more_cubic(const int64_t *shape, const int64_t *best)
{
	int64_t lhs = shape[2] * best[0], rhs = best[2] * shape[0];

	if (!best[0])
		return true;
	return lhs < rhs || (lhs == rhs && shape[2] < best[2]);
}

/* The most cubic a <= b <= c with a*b*c == n, each scaled by unit, fitting the largest slice. */
static bool most_cubic(const shs_hardware *hw, int64_t n, int64_t unit, int64_t best[3])
{
	best[0] = best[1] = best[2] = 0;
	for (int64_t a = 1; a * a * a <= n; a++) {
		if (n % a)
			continue;
		for (int64_t b = a; a * b * b <= n; b++) {
			int64_t c = n / (a * b), shape[3] = { a * unit, b * unit, c * unit };
			if ((n / a) % b || !fits_box(slice_limit(hw), shape, SHS__RANK_MAX) ||
			    !more_cubic(shape, best))
				continue;
			memcpy(best, shape, sizeof(shape));
		}
	}
	return best[0] != 0;
}

/* The standard slice of n chips on a 3D torus (rule in the top comment). */
static bool standard_3d(const shs_hardware *hw, int64_t n, int64_t dims[3])
{
	int64_t u = hw->wrap_unit <= SHS__WRAP_UNIT_MAX ? hw->wrap_unit : 0, cube = u * u * u;

	if (n > SHS__CHIPS_MAX)
		return false;
	if (hw->max_slice[0] > 0 && n == box_chips(hw->pod, SHS__RANK_MAX)) {
		memcpy(dims, hw->pod, 3 * sizeof(*dims));   /* the whole pod */
		return true;
	}
	if (u >= 2 && n % cube == 0)
		return most_cubic(hw, n / cube, u, dims);
	if (!is_pow2(n) || (u >= 2 && n > cube) || !most_cubic(hw, n, 1, dims))
		return false;
	/* sides above 1 ascending, then the 1s: 4 chips are 2x2x1 (one host) */
	while (dims[0] == 1 && dims[2] > 1) {
		dims[0] = dims[1];
		dims[1] = dims[2];
		dims[2] = 1;
	}
	return true;
}

/* The standard slice of n chips on a 2D torus. */
static bool standard_2d(const shs_hardware *hw, int64_t n, int64_t dims[2])
{
	int64_t a = 1;

	if (!is_pow2(n) || n > SHS__CHIPS_MAX)
		return false;
	while (2 * a * (2 * a) <= n)   /* the next square of powers of two fits */
		a *= 2;
	dims[0] = a;
	dims[1] = n / a;
	return fits_box(slice_limit(hw), dims, 2);
}

/* What --devices takes on hw, exactly (the rule in the top comment), into buf. */
static void standard_counts(const shs_hardware *hw, char *buf, size_t cap)
{
	const int64_t *lim = slice_limit(hw);
	int64_t u = hw->wrap_unit, cube = u * u * u, l[SHS__RANK_MAX], dims[SHS__RANK_MAX];
	int64_t biggest = 0;
	char box[SHS__TOPO_TEXT_MAX], pod[SHS__TOPO_TEXT_MAX], small[SHS__TOPO_TEXT_MAX] = "";
	size_t used;

	shs__shape_text(lim, hw->torus_rank, box, sizeof(box));
	shs__shape_text(hw->pod, hw->torus_rank, pod, sizeof(pod));
	if (hw->torus_rank != SHS__RANK_MAX) {
		for (int64_t n = 1; n <= SHS__CHIPS_MAX && standard_2d(hw, n, dims); n *= 2)
			biggest = n;
		snprintf(buf, cap, "a power of two from 1 to %" PRId64 " (1x1 to %s)", biggest,
			 box);
		return;
	}
	if (u < 2 || u > SHS__WRAP_UNIT_MAX) {
		snprintf(buf, cap, "a power of two whose most cubic shape fits %s", box);
		return;
	}
	for (int64_t n = 1; n < cube && standard_3d(hw, n, dims); n *= 2)
		biggest = n;
	if (biggest) {
		standard_3d(hw, biggest, dims);
		shs__shape_text(dims, SHS__RANK_MAX, small, sizeof(small));
	}
	memcpy(l, lim, sizeof(l));
	sort_dims(l, SHS__RANK_MAX);
	used = (size_t)snprintf(buf, cap, "a power of two up to %" PRId64 " (%s), or a multiple "
				"of %" PRId64 " that whole %" PRId64 "x%" PRId64 "x%" PRId64 " cubes "
				"fill as a box within %s (%" PRId64 " x a x b x c, a <= %" PRId64
				", b <= %" PRId64 ", c <= %" PRId64 ": up to %" PRId64 " chips)",
				biggest, small, cube, u, u, u, box, cube, l[0] / u, l[1] / u,
				l[2] / u, box_chips(l, SHS__RANK_MAX) / cube * cube);
	if (hw->max_slice[0] > 0 && used < cap)
		snprintf(buf + used, cap - used, ", or %" PRId64 " (the whole pod, %s)",
			 box_chips(hw->pod, SHS__RANK_MAX), pod);
}

/* Parses "AxB[xC]" into dims; the rank found goes to *rank. */
static int parse_topology(const char *text, int64_t dims[SHS__RANK_MAX], uint32_t *rank, shs_err *e)
{
	const char *p = text;

	*rank = 0;
	for (;;) {
		int64_t v = shs__parse_size(&p);
		if (v < 1 || *rank == SHS__RANK_MAX)
			return shs_seterr(e, SHS_EINVAL, "topology '%s': want sides like 4x4x4 "
					  "(1 to %d each, 2 or 3 of them)", text, SHS__TOPO_DIM_MAX);
		dims[(*rank)++] = v;
		if (!*p)
			break;
		if (*p++ != 'x')
			return shs_seterr(e, SHS_EINVAL, "topology '%s': want sides like 4x4x4 "
					  "(1 to %d each, 2 or 3 of them)", text, SHS__TOPO_DIM_MAX);
	}
	return SHS_OK;
}

/* The slice shape: from the topology, or the standard slice of devices / slices chips. */
static int tpu_shape(const shs_hardware *hw, const shs_cluster_spec *spec, int64_t slices,
		     int64_t dims[SHS__RANK_MAX], shs_err *e)
{
	uint32_t rank = 0;
	char shape[SHS__TOPO_TEXT_MAX], pod[SHS__TOPO_TEXT_MAX];
	int rc;

	shs__shape_text(hw->pod, hw->torus_rank, pod, sizeof(pod));
	if (hw->torus_rank < 2 || hw->torus_rank > SHS__RANK_MAX)
		return shs_seterr(e, SHS_EINVAL, "%s: torus rank %u is not 2 or 3", hw->name,
				  hw->torus_rank);
	if (!spec->topology || !*spec->topology) {
		int64_t n = spec->devices / slices;
		bool ok;
		if (spec->devices < 1)
			return shs_seterr(e, SHS_EINVAL, "%s needs a topology or a device count",
					  hw->name);
		if (spec->devices % slices)
			return shs_seterr(e, SHS_EINVAL, "%" PRId64 " devices do not split into %"
					  PRId64 " equal slices", spec->devices, slices);
		ok = hw->torus_rank == SHS__RANK_MAX ? standard_3d(hw, n, dims) :
		     standard_2d(hw, n, dims);
		if (!ok) {
			char counts[SHS_ERRMSG_MAX / 2];
			standard_counts(hw, counts, sizeof(counts));
			return shs_seterr(e, SHS_EINVAL, "%s has no standard slice of %" PRId64
					  " chips: standard slices are %s; give a topology",
					  hw->name, n, counts);
		}
		return SHS_OK;
	}
	rc = parse_topology(spec->topology, dims, &rank, e);
	if (rc != SHS_OK)
		return rc;
	shs__shape_text(dims, rank, shape, sizeof(shape));
	if (rank != hw->torus_rank)
		return shs_seterr(e, SHS_EINVAL, "topology %s is %uD but %s is a %uD torus", shape,
				  rank, hw->name, hw->torus_rank);
	if (!fits_pod(hw, dims, rank))
		return shs_seterr(e, SHS_EINVAL, "topology %s exceeds the %s pod %s", shape,
				  hw->name, pod);
	return SHS_OK;
}

/* Whether torus axis i of the slice dims wraps around (rule in the top comment). */
static bool axis_wraps(const shs_hardware *hw, const int64_t *dims, uint32_t rank, uint32_t i)
{
	if (hw->wrap_unit < 2)
		return false;
	if (hw->wrap_needs_equal)
		return dims[i] == hw->wrap_unit;
	for (uint32_t j = 0; j < rank; j++)
		if (dims[j] % hw->wrap_unit)
			return false;
	return true;
}

static void add_phys(shs_cluster *c, const char *name, shs_phys_kind kind, int64_t size,
		     bool wraps)
{
	shs_phys_axis *a = &c->phys[c->n_phys++];

	snprintf(a->name, sizeof(a->name), "%s", name);
	a->kind = kind;
	a->size = size;
	a->wraps = wraps;
}

static int tpu_axes(const shs_cluster_spec *spec, shs_cluster *c, shs_err *e)
{
	static const char *const letters[SHS__RANK_MAX] = { "x", "y", "z" };
	const shs_hardware *hw = &c->hw;
	int64_t slices = spec->slices > 0 ? spec->slices : 1, dims[SHS__RANK_MAX] = { 0 };
	int64_t chips;
	int rc;

	if (spec->devices < 0)
		return shs_seterr(e, SHS_EINVAL, "devices %" PRId64 ": want 1 or more",
				  spec->devices);
	if (spec->slices < 0 || spec->slices > SHS__TOPO_DIM_MAX)
		return shs_seterr(e, SHS_EINVAL, "slices %" PRId64 ": want 1 or more",
				  spec->slices);
	rc = tpu_shape(hw, spec, slices, dims, e);
	if (rc != SHS_OK)
		return rc;
	if (slices > 1)
		add_phys(c, "dcn", SHS_PHYS_DCN, slices, false);
	chips = slices;
	for (uint32_t i = 0; i < hw->torus_rank; i++) {
		add_phys(c, letters[i], SHS_PHYS_ICI, dims[i],
			 axis_wraps(hw, dims, hw->torus_rank, i));
		chips *= dims[i];   /* at most 2^20 * pod, no overflow */
	}
	c->devices = chips;
	if (spec->devices > 0 && spec->devices != chips)
		return shs_seterr(e, SHS_EINVAL, "topology %s with %" PRId64
				  " slice(s) has %" PRId64 " chips, not the %" PRId64
				  " devices asked for",
				  spec->topology ? spec->topology : "",
				  slices, chips, spec->devices);
	return SHS_OK;
}

static int gpu_axes(const shs_cluster_spec *spec, shs_cluster *c, shs_err *e)
{
	const shs_hardware *hw = &c->hw;
	int64_t n = spec->devices, node = hw->node_size;

	if (spec->topology && *spec->topology)
		return shs_seterr(e, SHS_EINVAL, "topology '%s': %s is a GPU, give a device count "
				  "instead", spec->topology, hw->name);
	if (spec->slices > 1)
		return shs_seterr(e, SHS_EINVAL, "slices %" PRId64 ": slices are for TPUs; %s "
				  "nodes come from the device count", spec->slices, hw->name);
	if (node < 1)
		return shs_seterr(e, SHS_EINVAL, "%s: node size %" PRId64 " is not positive",
				  hw->name, node);
	if (n < 1 || n > (int64_t)SHS__TOPO_DIM_MAX * node)
		return shs_seterr(e, SHS_EINVAL, "%s needs a device count from 1 to %" PRId64,
				  hw->name, (int64_t)SHS__TOPO_DIM_MAX * node);
	if (n > node && n % node)
		return shs_seterr(e, SHS_EINVAL, "%" PRId64 " GPUs are not whole %s nodes of %"
				  PRId64, n, hw->name, node);
	add_phys(c, "net", SHS_PHYS_NET, n > node ? n / node : 1, false);
	add_phys(c, "node", SHS_PHYS_NODE, n > node ? node : n, false);
	c->devices = n;
	return SHS_OK;
}

int shs__cluster_phys(const shs_cluster_spec *spec, shs_cluster *c, shs_err *e)
{
	return c->hw.gpu ? gpu_axes(spec, c, e) : tpu_axes(spec, c, e);
}
