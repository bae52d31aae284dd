/* Clusters: TPU slices, GPU nodes and DCN slices as physical axes, and a mesh laid on them. */
#include "cluster.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * Physical axes, major first: TPU "dcn" (only with slices > 1), then "x", "y" and, on 3D tori,
 * "z"; GPU "net" (nodes over scale-out) then "node" (GPUs of one NVLink domain). GPUs always
 * have both ("net" of size 1 for one node). Devices are numbered row-major over them.
 *
 * Topology (TPU): "AxB" on 2D tori, "AxBxC" on 3D ones, fitting the pod in some orientation.
 * Without a topology, devices (the total; each slice gets devices / slices) picks the standard
 * slice:
 *   3D: a multiple of wrap_unit^3 (64) chips is the most cubic shape of multiples of wrap_unit
 *       (4): the least max/min ratio, then the smallest longest side, sides ascending (64 4x4x4,
 *       128 4x4x8, 256 4x8x8, 8960 16x20x28); a smaller power of two is the most cubic shape of
 *       powers of two, sides above 1 ascending then the 1s (4 2x2x1, 8 2x2x2, 16 2x2x4, 32
 *       2x4x4).
 *   2D: a power of two, the most square shape, short side first (16 4x4, 32 4x8, 128 8x16).
 *   Any other count has no standard slice: give a topology.
 * Wraparound: on 3D tori (wrap_needs_equal false) every axis wraps when every axis is a multiple
 * of wrap_unit (the slice is made of whole 4x4x4 cubes), none otherwise; on 2D tori an axis
 * wraps only when its size is exactly wrap_unit (16).
 *
 * Mesh grammar:
 *   mesh  := axis (',' axis)*
 *   axis  := NAME '=' SIZE ['@' place]       NAME [A-Za-z_][A-Za-z0-9_]* (< 32), SIZE >= 1
 *   place := item ('+' item)*
 *   item  := [xyz]+ | 'dcn' | 'node' | 'net'  (each letter of a run is one torus axis)
 * e.g. "fsdp=16@xy,tensor=4@z", "data=2@dcn,fsdp=64@x+y+z", "data=2@dcn+xyz", "tp=8@node".
 * The order of the items does not matter: physical order (above) decides which is major.
 * An axis with @ either spans whole physical axes (their sizes multiply to its size, and no
 * other axis uses them) or takes a factor of ONE physical axis that other single-axis claims
 * share (their sizes multiply to the physical size; the one listed first in the mesh is major).
 * Axes without @ follow the default layout: in mesh order (major first) they take the physical
 * axes no @ claims, major first (dcn, x, y, z / net, node) and skipping size-1 axes, each
 * taking a whole axis when its remaining size divides the logical size, else the major factor
 * of it when the logical size divides that. When that rule cannot lay a mesh out, each axis in
 * mesh order takes instead, from each physical axis in order, the greatest common factor of
 * what it still needs and what that axis has left (data=35 on 16x20x28 takes 5 of y and 7 of
 * z); a mesh whose sizes multiply to the free chips is always laid out so.
 * A NULL or empty mesh has one axis per physical axis of size > 1, named after it.
 */

enum {
	NAME_CAP = 32,            /* axis names, as shs_cluster stores them */
	TOPO_DIM_MAX = 1 << 20,   /* a topology side or mesh size above this is a typo */
	TOPO_TEXT_MAX = 64,
	CHIPS_MAX = 1 << 24,      /* the largest standard slice searched for */
	WRAP_UNIT_MAX = 1 << 10,
	NAMES_CAP = 512,          /* the catalog's names, for messages */
	RANK_MAX = 3,
	DECIMAL = 10
};

/* ---- small helpers ---------------------------------------------------------------------- */

/* a * b, or -1 when it would exceed limit (both positive). */
static int64_t mul_capped(int64_t a, int64_t b, int64_t limit)
{
	if (a > limit / b)
		return -1;
	return a * b;
}

static bool is_pow2(int64_t n)
{
	return n > 0 && !(n & (n - 1));
}

/* Parses a positive decimal of at most TOPO_DIM_MAX at *p, advancing *p; -1 when there is none. */
static int64_t parse_size(const char **p)
{
	int64_t v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		v = v * DECIMAL + (*s++ - '0');
		if (v > TOPO_DIM_MAX)
			return -1;
	}
	*p = s;
	return v;
}

/* Appends the formatted text to buf (cap bytes), truncating. */
static void appendf(char *buf, size_t cap, const char *fmt, ...) SHS_PRINTF(3, 4);
static void appendf(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strnlen(buf, cap);
	va_list ap;

	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

static void shape_text(const int64_t *dims, uint32_t rank, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (uint32_t i = 0; i < rank; i++)
		appendf(buf, cap, "%s%" PRId64, i ? "x" : "", dims[i]);
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

/* Whether dims fit the pod in some orientation (a pod side of 0 means no limit). */
static bool fits_pod(const shs_hardware *hw, const int64_t *dims, uint32_t rank)
{
	int64_t d[RANK_MAX], pod[RANK_MAX];

	memcpy(d, dims, rank * sizeof(*d));
	memcpy(pod, hw->pod, rank * sizeof(*pod));
	sort_dims(d, rank);
	sort_dims(pod, rank);
	for (uint32_t i = 0; i < rank; i++)
		if (pod[i] > 0 && d[i] > pod[i])
			return false;
	return true;
}

/* ---- TPU topology ----------------------------------------------------------------------- */

/* Whether shape (a <= b <= c) is more cubic than the best so far: ratio c/a, then c. */
static bool more_cubic(const int64_t *shape, const int64_t *best)
{
	int64_t lhs = shape[2] * best[0], rhs = best[2] * shape[0];

	if (!best[0])
		return true;
	return lhs < rhs || (lhs == rhs && shape[2] < best[2]);
}

/* The most cubic a <= b <= c with a*b*c == n, each scaled by unit, fitting the pod. */
static bool most_cubic(const shs_hardware *hw, int64_t n, int64_t unit, int64_t best[3])
{
	best[0] = best[1] = best[2] = 0;
	for (int64_t a = 1; a * a * a <= n; a++) {
		if (n % a)
			continue;
		for (int64_t b = a; a * b * b <= n; b++) {
			int64_t c = n / (a * b), shape[3] = { a * unit, b * unit, c * unit };
			if ((n / a) % b || !fits_pod(hw, shape, RANK_MAX) ||
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
	int64_t u = hw->wrap_unit <= WRAP_UNIT_MAX ? hw->wrap_unit : 0, cube = u * u * u;

	if (n > CHIPS_MAX)
		return false;
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

	if (!is_pow2(n) || n > CHIPS_MAX)
		return false;
	while (2 * a * (2 * a) <= n)   /* the next square of powers of two fits */
		a *= 2;
	dims[0] = a;
	dims[1] = n / a;
	return fits_pod(hw, dims, 2);
}

/* Parses "AxB[xC]" into dims; the rank found goes to *rank. */
static int parse_topology(const char *text, int64_t dims[RANK_MAX], uint32_t *rank, shs_err *e)
{
	const char *p = text;

	*rank = 0;
	for (;;) {
		int64_t v = parse_size(&p);
		if (v < 1 || *rank == RANK_MAX)
			return shs_seterr(e, SHS_EINVAL, "topology '%s': want sides like 4x4x4 "
					  "(1 to %d each, 2 or 3 of them)", text, TOPO_DIM_MAX);
		dims[(*rank)++] = v;
		if (!*p)
			break;
		if (*p++ != 'x')
			return shs_seterr(e, SHS_EINVAL, "topology '%s': want sides like 4x4x4 "
					  "(1 to %d each, 2 or 3 of them)", text, TOPO_DIM_MAX);
	}
	return SHS_OK;
}

/* The slice shape: from the topology, or the standard slice of devices / slices chips. */
static int tpu_shape(const shs_hardware *hw, const shs_cluster_spec *spec, int64_t slices,
		     int64_t dims[RANK_MAX], shs_err *e)
{
	uint32_t rank = 0;
	char shape[TOPO_TEXT_MAX], pod[TOPO_TEXT_MAX];
	int rc;

	shape_text(hw->pod, hw->torus_rank, pod, sizeof(pod));
	if (hw->torus_rank < 2 || hw->torus_rank > RANK_MAX)
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
		ok = hw->torus_rank == RANK_MAX ? standard_3d(hw, n, dims) :
		     standard_2d(hw, n, dims);
		if (!ok)
			return shs_seterr(e, SHS_EINVAL, "%s has no standard slice of %" PRId64
					  " chips (pod %s; %s); give a topology", hw->name, n, pod,
					  hw->torus_rank == RANK_MAX ?
					  "a multiple of 64 or a power of two up to 32" :
					  "a power of two");
		return SHS_OK;
	}
	rc = parse_topology(spec->topology, dims, &rank, e);
	if (rc != SHS_OK)
		return rc;
	shape_text(dims, rank, shape, sizeof(shape));
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
	static const char *const letters[RANK_MAX] = { "x", "y", "z" };
	const shs_hardware *hw = &c->hw;
	int64_t slices = spec->slices > 0 ? spec->slices : 1, dims[RANK_MAX] = { 0 };
	int64_t chips;
	int rc;

	if (spec->devices < 0)
		return shs_seterr(e, SHS_EINVAL, "devices %" PRId64 ": want 1 or more",
				  spec->devices);
	if (spec->slices < 0 || spec->slices > TOPO_DIM_MAX)
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
	if (n < 1 || n > (int64_t)TOPO_DIM_MAX * node)
		return shs_seterr(e, SHS_EINVAL, "%s needs a device count from 1 to %" PRId64,
				  hw->name, (int64_t)TOPO_DIM_MAX * node);
	if (n > node && n % node)
		return shs_seterr(e, SHS_EINVAL, "%" PRId64 " GPUs are not whole %s nodes of %"
				  PRId64, n, hw->name, node);
	add_phys(c, "net", SHS_PHYS_NET, n > node ? n / node : 1, false);
	add_phys(c, "node", SHS_PHYS_NODE, n > node ? node : n, false);
	c->devices = n;
	return SHS_OK;
}

/* ---- mesh ------------------------------------------------------------------------------- */

/* One axis of the mesh text. */
typedef struct mesh_item {
	char name[NAME_CAP];
	int64_t size;
	uint32_t claim;   /* physical axes after @ (bit p), 0 for the default layout */
} mesh_item;

typedef struct mesh_text {
	const char *text;
	uint32_t n;
	mesh_item items[SHS_MESH_MAX_AXES];
} mesh_text;

static int mesh_err(shs_err *e, const mesh_text *m, const char *fmt, ...) SHS_PRINTF(3, 4);
static int mesh_err(shs_err *e, const mesh_text *m, const char *fmt, ...)
{
	char msg[SHS_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return shs_seterr(e, SHS_EINVAL, "mesh '%s': %s", m->text, msg);
}

static bool name_start(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
}

static bool name_char(char ch)
{
	return name_start(ch) || (ch >= '0' && ch <= '9');
}

static int phys_index(const shs_cluster *c, const char *name, size_t len)
{
	for (uint32_t p = 0; p < c->n_phys; p++)
		if (strlen(c->phys[p].name) == len && !strncmp(c->phys[p].name, name, len))
			return (int)p;
	return -1;
}

static void phys_list(const shs_cluster *c, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (uint32_t p = 0; p < c->n_phys; p++)
		appendf(buf, cap, "%s%s", p ? ", " : "", c->phys[p].name);
}

/* Adds physical axis name[0..len) to it->claim. */
static int claim_one(const shs_cluster *c, mesh_text *m, mesh_item *it, const char *name,
		     size_t len, shs_err *e)
{
	int p = phys_index(c, name, len);
	char have[NAMES_CAP];

	if (p < 0) {
		phys_list(c, have, sizeof(have));
		return mesh_err(e, m, "unknown physical axis '%.*s' for '%s' (this cluster has %s)",
				(int)len, name, it->name, have);
	}
	if (it->claim & (1u << p))
		return mesh_err(e, m, "physical axis '%s' used twice by '%s'", c->phys[p].name,
				it->name);
	it->claim |= 1u << p;
	return SHS_OK;
}

/* Whether name[0..len) is a run of torus letters (each one physical axis). */
static bool torus_letters(const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (name[i] != 'x' && name[i] != 'y' && name[i] != 'z')
			return false;
	return true;
}

/* Parses the place after '@' at *pp, up to ',' or the end. */
static int parse_place(const shs_cluster *c, mesh_text *m, mesh_item *it, const char **pp,
		       shs_err *e)
{
	const char *p = *pp;

	for (;;) {
		size_t len = 0;
		int rc = SHS_OK;
		while (name_char(p[len]))
			len++;
		if (!len)
			return mesh_err(e, m, "'%s' needs physical axes after '@' "
					"(like @xy, @z, @dcn, @node)", it->name);
		if (torus_letters(p, len))
			for (size_t i = 0; i < len && rc == SHS_OK; i++)
				rc = claim_one(c, m, it, p + i, 1, e);
		else
			rc = claim_one(c, m, it, p, len, e);
		if (rc != SHS_OK)
			return rc;
		p += len;
		if (*p != '+')
			break;
		p++;
	}
	*pp = p;
	return SHS_OK;
}

static int parse_item(const shs_cluster *c, mesh_text *m, const char **pp, shs_err *e)
{
	mesh_item *it = &m->items[m->n];
	const char *p = *pp;
	size_t len = 0;

	if (m->n == SHS_MESH_MAX_AXES)
		return mesh_err(e, m, "more than %d axes", SHS_MESH_MAX_AXES);
	memset(it, 0, sizeof(*it));
	if (!name_start(*p))
		return mesh_err(e, m, "axis %u: want NAME=SIZE[@PLACE] at '%s'", m->n + 1, p);
	while (name_char(p[len]))
		len++;
	if (len >= NAME_CAP)
		return mesh_err(e, m, "axis name '%.*s' is longer than %d", (int)len, p,
				NAME_CAP - 1);
	memcpy(it->name, p, len);
	p += len;
	if (*p++ != '=')
		return mesh_err(e, m, "axis '%s': want NAME=SIZE[@PLACE]", it->name);
	it->size = parse_size(&p);
	if (it->size < 1)
		return mesh_err(e, m, "axis '%s' needs a size from 1 to %d", it->name,
				TOPO_DIM_MAX);
	if (*p == '@') {
		int rc;
		p++;
		rc = parse_place(c, m, it, &p, e);
		if (rc != SHS_OK)
			return rc;
	}
	if (*p && *p != ',')
		return mesh_err(e, m, "axis '%s': unexpected '%s'", it->name, p);
	for (uint32_t k = 0; k < m->n; k++)
		if (!strcmp(m->items[k].name, it->name))
			return mesh_err(e, m, "axis name '%s' given twice", it->name);
	m->n++;
	*pp = *p ? p + 1 : p;
	return SHS_OK;
}

/* The mesh text, or one axis per physical axis of size > 1 when there is none. */
static int parse_mesh(const shs_cluster *c, const char *text, mesh_text *m, shs_err *e)
{
	const char *p = text;
	int64_t product = 1;

	memset(m, 0, sizeof(*m));
	m->text = text ? text : "";
	if (!text || !*text) {
		for (uint32_t p2 = 0; p2 < c->n_phys; p2++) {
			if (c->phys[p2].size < 2)
				continue;
			snprintf(m->items[m->n].name, NAME_CAP, "%s", c->phys[p2].name);
			m->items[m->n].size = c->phys[p2].size;
			m->items[m->n++].claim = 1u << p2;
		}
		return SHS_OK;
	}
	while (*p) {
		int rc = parse_item(c, m, &p, e);
		if (rc != SHS_OK)
			return rc;
		if (!*p && p[-1] == ',')
			return mesh_err(e, m, "ends with ','");
	}
	for (uint32_t k = 0; k < m->n; k++) {
		product = mul_capped(product, m->items[k].size, INT64_MAX / TOPO_DIM_MAX);
		if (product < 0)
			return mesh_err(e, m, "sizes multiply to more than %" PRId64
					", the cluster has %" PRId64 " devices",
					INT64_MAX / TOPO_DIM_MAX, c->devices);
	}
	if (product != c->devices)
		return mesh_err(e, m, "sizes multiply to %" PRId64 ", the cluster has %" PRId64
				" devices", product, c->devices);
	return SHS_OK;
}

static int popcount(uint32_t v)
{
	int n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

/* Lays the axes with @ on their physical axes; *claimed gets the physical axes they use. */
static int lay_explicit(shs_cluster *c, const mesh_text *m, uint32_t *claimed, shs_err *e)
{
	*claimed = 0;
	for (uint32_t p = 0; p < c->n_phys; p++) {
		const shs_phys_axis *ph = &c->phys[p];
		int64_t product = 1;
		int first = -1;
		for (uint32_t k = 0; k < m->n; k++) {
			const mesh_item *it = &m->items[k];
			if (!(it->claim & (1u << p)))
				continue;
			if (first >= 0 && (popcount(it->claim) > 1 ||
					   popcount(m->items[first].claim) > 1))
				return mesh_err(e, m, "physical axis '%s' used twice "
						"(by '%s' and '%s')", ph->name,
						m->items[first].name, it->name);
			if (first < 0)
				first = (int)k;
			product = mul_capped(product, it->size, INT64_MAX / TOPO_DIM_MAX);
			c->span[k] |= 1u << p;
			c->part[k][p] = popcount(it->claim) > 1 ? ph->size : it->size;
			if (k != (uint32_t)first && (product < 0 || product > ph->size))
				return mesh_err(e, m, "physical axis '%s' used twice: "
						"'%s' and '%s' take more than its %" PRId64
						" chips", ph->name,
						m->items[first].name, it->name, ph->size);
		}
		if (first < 0)
			continue;
		*claimed |= 1u << p;
		if (popcount(m->items[first].claim) == 1 && product != ph->size)
			return mesh_err(e, m, "'%s' on physical axis '%s': sizes multiply to %"
					PRId64 ", it has %" PRId64 " chips",
					m->items[first].name, ph->name, product, ph->size);
	}
	for (uint32_t k = 0; k < m->n; k++) {
		const mesh_item *it = &m->items[k];
		int64_t chips = 1;
		char places[NAMES_CAP] = "";
		if (popcount(it->claim) < 2)
			continue;
		for (uint32_t p = 0; p < c->n_phys; p++)
			if (it->claim & (1u << p)) {
				chips *= c->phys[p].size;
				appendf(places, sizeof(places), "%s%s", places[0] ? "*" : "",
					c->phys[p].name);
			}
		if (chips != it->size)
			return mesh_err(e, m, "'%s' has size %" PRId64 " but %s has %" PRId64
					" chips", it->name, it->size, places, chips);
	}
	return SHS_OK;
}

static int64_t gcd(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Lays the axes without @ on the unclaimed physical axes (rules in the top comment): whole axes
 * and major factors, or (by_gcd) the greatest common factor of each in turn. */
static int lay_free(shs_cluster *c, const mesh_text *m, uint32_t claimed, bool by_gcd,
		    shs_err *e)
{
	int64_t left[SHS_PHYS_MAX];
	uint32_t p = 0;

	for (uint32_t q = 0; q < c->n_phys; q++)
		left[q] = claimed & (1u << q) ? 1 : c->phys[q].size;
	for (uint32_t k = 0; k < m->n; k++) {
		int64_t need = m->items[k].size;
		if (m->items[k].claim)
			continue;
		if (by_gcd)
			p = 0;
		while (need > 1) {
			int64_t take;
			while (p < c->n_phys && (left[p] < 2 || (by_gcd && gcd(need, left[p]) < 2)))
				p++;
			if (p == c->n_phys ||
			    (!by_gcd && need % left[p] && left[p] % need)) {
				char free_axes[NAMES_CAP] = "";
				for (uint32_t q = 0; q < c->n_phys; q++)
					if (left[q] > 1)
						appendf(free_axes, sizeof(free_axes),
							"%s%s %" PRId64, free_axes[0] ? ", " : "",
							c->phys[q].name, left[q]);
				return mesh_err(e, m, "axis '%s' (size %" PRId64 ") cannot be "
						"laid on the free physical axes (%s)",
						m->items[k].name, need,
						free_axes[0] ? free_axes : "none");
			}
			take = by_gcd ? gcd(need, left[p]) : need % left[p] ? need : left[p];
			c->span[k] |= 1u << p;
			c->part[k][p] = take;
			need /= take;
			left[p] /= take;
		}
	}
	return SHS_OK;
}

/* The default layout: the strict rule, else by common factors. */
static int lay_default(shs_cluster *c, const mesh_text *m, uint32_t claimed, shs_err *e)
{
	shs_cluster before = *c;

	if (lay_free(c, m, claimed, false, e) == SHS_OK)
		return SHS_OK;
	memcpy(c->span, before.span, sizeof(c->span));
	memcpy(c->part, before.part, sizeof(c->part));
	return lay_free(c, m, claimed, true, e);
}

static int lay_mesh(const char *text, shs_cluster *c, shs_err *e)
{
	mesh_text m;
	uint32_t claimed;
	int rc = parse_mesh(c, text, &m, e);

	if (rc != SHS_OK)
		return rc;
	c->mesh.n_axes = m.n;
	for (uint32_t k = 0; k < m.n; k++) {
		memcpy(c->axis_names[k], m.items[k].name, NAME_CAP);
		c->mesh.names[k] = c->axis_names[k];
		c->mesh.sizes[k] = m.items[k].size;
	}
	rc = lay_explicit(c, &m, &claimed, e);
	if (rc != SHS_OK)
		return rc;
	return lay_default(c, &m, claimed, e);
}

int shs_cluster_make(const shs_hw_catalog *cat, const shs_cluster_spec *spec, shs_cluster *out,
		     shs_err *e)
{
	const shs_hardware *hw;
	int rc;

	if (!cat || !spec || !out)
		return shs_seterr(e, SHS_EINVAL, "shs_cluster_make: NULL argument");
	memset(out, 0, sizeof(*out));
	hw = spec->hardware ? shs_hw_find(cat, spec->hardware) : NULL;
	if (!hw) {
		char names[NAMES_CAP];
		shs_hw_names(cat, names, sizeof(names));
		if (!spec->hardware)
			return shs_seterr(e, SHS_EINVAL, "no hardware given (known: %s)", names);
		return shs_seterr(e, SHS_EINVAL, "unknown hardware '%s' (known: %s)",
				  spec->hardware, names);
	}
	out->hw = *hw;
	rc = hw->gpu ? gpu_axes(spec, out, e) : tpu_axes(spec, out, e);
	if (rc == SHS_OK)
		rc = lay_mesh(spec->mesh, out, e);
	if (rc != SHS_OK)
		memset(out, 0, sizeof(*out));
	return rc;
}

int64_t shs_mesh_group(const shs_mesh *m, uint32_t axes_mask)
{
	int64_t n = 1;

	for (uint32_t k = 0; k < m->n_axes && k < SHS_MESH_MAX_AXES; k++)
		if (axes_mask & (1u << k))
			n *= m->sizes[k];
	return n;
}

/* ---- description ------------------------------------------------------------------------ */

/* "@dcn+xy" for the physical axes of span. */
static void place_text(const shs_cluster *c, uint32_t span, char *buf, size_t cap)
{
	bool letters = false;

	for (uint32_t p = 0; p < c->n_phys; p++) {
		bool ici = c->phys[p].kind == SHS_PHYS_ICI;
		if (!(span & (1u << p)))
			continue;
		appendf(buf, cap, "%s%s", !buf[0] ? "@" : ici && letters ? "" : "+",
			c->phys[p].name);
		letters = ici;
	}
}

void shs_cluster_describe(const shs_cluster *c, char *buf, size_t cap)
{
	int64_t dims[RANK_MAX];
	uint32_t rank = 0, wraps = 0;
	int64_t slices = 1;
	char shape[TOPO_TEXT_MAX];

	if (!buf || !cap)
		return;
	for (uint32_t k = 0; k < c->mesh.n_axes; k++) {
		char place[NAMES_CAP] = "";
		place_text(c, c->span[k], place, sizeof(place));
		appendf(buf, cap, "%s%s=%" PRId64 "%s", k ? "," : "", c->axis_names[k],
			c->mesh.sizes[k], place);
	}
	if (c->hw.gpu) {
		appendf(buf, cap, " (%s, %" PRId64 " GPUs: %" PRId64 " node%s of %" PRId64 ")",
			c->hw.name, c->devices, c->phys[0].size, c->phys[0].size > 1 ? "s" : "",
			c->phys[1].size);
		return;
	}
	for (uint32_t p = 0; p < c->n_phys; p++) {
		if (c->phys[p].kind == SHS_PHYS_DCN) {
			slices = c->phys[p].size;
			continue;
		}
		wraps += c->phys[p].wraps;
		dims[rank++] = c->phys[p].size;
	}
	shape_text(dims, rank, shape, sizeof(shape));
	appendf(buf, cap, " (%s %s", c->hw.name, shape);
	if (slices > 1)
		appendf(buf, cap, ", %" PRId64 " slices over DCN", slices);
	appendf(buf, cap, "%s", wraps ? ", wraparound on" : ", no wraparound");
	for (uint32_t p = 0; p < c->n_phys; p++)
		if (c->phys[p].wraps)
			appendf(buf, cap, " %s", c->phys[p].name);
	appendf(buf, cap, ")");
}

void shs_mesh_text(const shs_mesh *m, char *buf, size_t cap)
{
	size_t used = 0;

	if (!cap)
		return;
	buf[0] = '\0';
	for (uint32_t k = 0; k < m->n_axes && used < cap; k++) {
		int n = snprintf(buf + used, cap - used, "%s%s=%lld", k ? "," : "", m->names[k],
				 (long long)m->sizes[k]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

void shs_axes_text(const shs_mesh *mesh, uint32_t mask, char *buf, size_t cap)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t a = 0; a < mesh->n_axes && used < cap; a++)
		if (mask & (1u << a))
			used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "," : "",
						 mesh->names[a]);
}
