/* Collectives over mesh axes: their names, and their times on a cluster's links (the book). */
#include "cluster.h"

#include <math.h>

/*
 * V is the book's array (cluster.h). A group of mesh axes has, along each physical axis p, an
 * extent e (the product of its axes' parts there) and a dilation d: the product of the parts
 * of the mesh axes left out of the group that are minor to its major-most part of p. Groups
 * with d > 1 are strided: each logical hop crosses d links and d groups share every link.
 * Along a torus axis the group is a ring when it goes all the way round (e * d == size) on an
 * axis that wraps, else a line.
 *
 * TPU ICI (sharding.md; scaling-book.md 3.1), W the bidirectional axis bandwidth:
 *   one ring of e: AllGather/ReduceScatter T = max(T_min * floor(e/2), V/W): the book's
 *     T_hop = max[T_min, 2V/(eW)] times e/2 hops; exactly, per unit of V, 2*floor(e/2)/(e W).
 *   one line of e: e-1 hops of the same T_hop: 2V(e-1)/(eW) ("about 2x": 1.5x at e = 4, the
 *     book's v5e 559.2 us against 372.8 us on a ring).
 *   a strided axis: times d (both the hops and the bytes per link).
 *   several axes: the array is split over them in proportion to their speeds, so
 *     T = max[T_min * sum(hops_i), V / sum(1/t_i)] with t_i the per-byte time of axis i alone:
 *     V/(M W) on M equal rings, the book's multi-axis form.
 *   AllReduce = 2 * AllGather. AllToAll: V * max_i(e_i d_i l_i) / (4 N W), N the group's chips,
 *     l_i = 2 on a line (half the bisection), 1 on a ring; at least T_min * sum(hops_i).
 *   Permute (each device sends V to one peer, the farthest in the worst case): the hops of the
 *     diameter times T_min plus V over the one-way links of the M axes (tpus.md Q5: v5e 4x4,
 *     6 hops + V / (2 * 4.5e10) = 194 us).
 * DCN (training.md, "Scaling Across Pods"): a group of S slices with n of its chips in each
 *   slice moves through the n chips' DCN egress W_dcn (per chip, one way): AllGather /
 *   ReduceScatter V (S-1)/(S n W_dcn), the book's 2*2*2*DF/(M W_dcn) per layer being the
 *   AllReduce of the gradient shard for large S; AllToAll V (S-1)/(S^2 n W_dcn); permute
 *   V/W_dcn. ICI and DCN run at once (hierarchical, pipelined): T = max(T_ici, T_dcn).
 * GPU (gpus.md; scaling-book.md 3.3): a group with a GPUs in each of m nodes:
 *   AllGather / ReduceScatter: max over levels of V (D_i - 1)/(D_i W_i), NVLink W = gpu_egress
 *     with D = a; scale-out D = m and W = the node's egress share, node_egress * a / node_size
 *     (2 nodes of 8 H100: V/514e9 at the node level, V/800e9 across). AllReduce = 2x (no SHARP).
 *   AllToAll: node V (a-1)/((a m)^2 W_gpu); scale-out V (m-1)/m^2 over the same egress share
 *     (one node: V (N-1)/(N^2 W); full nodes: V (M-1)/(M^2 W_node)).
 *   Permute: V / gpu_egress inside a node, V / (node_egress / node_size) across nodes.
 *   Each at least NCCL's latency for the group (gpu_latency; the book gives none for GPUs).
 * Every bandwidth is the line rate times the fraction collectives achieve on that link kind
 * (the catalog's ici_eff, dcn_eff, nvlink_eff, scaleout_eff; hardware_rates.c cites them).
 */

enum {
	DIRECTIONS = 2,          /* ICI links are bidirectional: W is twice the one-way rate */
	LINE_A2A_FACTOR = 2,     /* a line has half a ring's bisection */
	A2A_RING_DIVISOR = 4,
	ALL_REDUCE_PASSES = 2    /* reduce-scatter then all-gather */
};

/* The group along one physical axis. */
typedef struct extent {
	int64_t ext;   /* chips of the group along the axis */
	int64_t dil;   /* stride: links per logical hop and groups per link */
	bool ring;
} extent;

static extent group_extent(const shs_cluster *c, uint32_t mask, uint32_t p)
{
	extent x = { 1, 1, false };
	bool seen = false;

	for (uint32_t k = 0; k < c->mesh.n_axes; k++) {
		int64_t part = c->part[k][p];
		if (part < 1)
			continue;
		if (mask & (1u << k)) {
			x.ext *= part;
			seen = true;
		} else if (seen) {
			x.dil *= part;
		}
	}
	x.ring = c->phys[p].wraps && x.ext * x.dil == c->phys[p].size;
	return x;
}

static double ring_hops(const extent *x)
{
	return (double)((x->ring ? x->ext / DIRECTIONS : x->ext - 1) * x->dil);
}

/* Seconds per byte of V for an AllGather along one torus axis alone. */
static double ici_ag_per_byte(const extent *x, double w)
{
	double steps = x->ring ? (double)(x->ext / DIRECTIONS) : (double)(x->ext - 1);

	return (double)x->dil * DIRECTIONS * steps / ((double)x->ext * w);
}

/* The fraction of a link's line rate collectives reach (the catalog's *_eff; 0: all of it). */
static double achieved(double eff)
{
	return eff > 0 && eff <= 1 ? eff : 1;
}

/* Time on the ICI axes of the group (0 when it has no chips along any). */
static double ici_time(const shs_cluster *c, int kind, const extent *xs, double v)
{
	double w = c->hw.ici_bw * achieved(c->hw.ici_eff);
	double lat = 0, speed = 0, worst = 0, chips = 1, ports = 0;

	if (w <= 0)
		return HUGE_VAL;
	for (uint32_t p = 0; p < c->n_phys; p++) {
		const extent *x = &xs[p];
		if (c->phys[p].kind != SHS_PHYS_ICI || x->ext < 2)
			continue;
		lat += c->hw.ici_latency * ring_hops(x);
		speed += 1.0 / ici_ag_per_byte(x, w);
		worst = fmax(worst, (double)(x->ext * x->dil * (x->ring ? 1 : LINE_A2A_FACTOR)));
		chips *= (double)x->ext;
		ports += 1.0 / (double)x->dil;
	}
	if (speed <= 0)
		return 0;
	switch (kind) {
	case SHS_PCOLL_ALL_REDUCE:
		return ALL_REDUCE_PASSES * fmax(lat, v / speed);
	case SHS_PCOLL_REDUCE_SCATTER:
	case SHS_PCOLL_ALL_GATHER:
		return fmax(lat, v / speed);
	case SHS_PCOLL_ALL_TO_ALL:
		return fmax(lat, v * worst / (A2A_RING_DIVISOR * chips * w));
	case SHS_PCOLL_PERMUTE:
		return lat + v / (ports * w / DIRECTIONS);
	}
	return 0;
}

/* Chips of the group inside one slice (its ICI extents). */
static double slice_chips(const shs_cluster *c, const extent *xs)
{
	double n = 1;

	for (uint32_t p = 0; p < c->n_phys; p++)
		if (c->phys[p].kind == SHS_PHYS_ICI)
			n *= (double)xs[p].ext;
	return n;
}

static double dcn_time(const shs_cluster *c, int kind, const extent *xs, double v)
{
	double dcn = c->hw.dcn_bw * achieved(c->hw.dcn_eff), s = 1, w = dcn * slice_chips(c, xs);

	for (uint32_t p = 0; p < c->n_phys; p++)
		if (c->phys[p].kind == SHS_PHYS_DCN)
			s *= (double)xs[p].ext;
	if (s < 2)
		return 0;
	if (w <= 0)
		return HUGE_VAL;
	switch (kind) {
	case SHS_PCOLL_ALL_REDUCE:
		return ALL_REDUCE_PASSES * v * (s - 1) / (s * w);
	case SHS_PCOLL_REDUCE_SCATTER:
	case SHS_PCOLL_ALL_GATHER:
		return v * (s - 1) / (s * w);
	case SHS_PCOLL_ALL_TO_ALL:
		return v * (s - 1) / (s * s * w);
	case SHS_PCOLL_PERMUTE:
		return v / dcn;
	}
	return 0;
}

/* NCCL's latency of a collective over a GPUs in each of m nodes (hardware_rates.c): its base,
 * and each ring step's (2(n - 1) for an all-reduce over n, n - 1 for a gather or scatter), the
 * steps that cross nodes (2(m - 1), m - 1) at the network's; an all-to-all or a permute is one
 * round of sends. An all-reduce takes NCCL's tree instead when that is quicker, as NCCL picks
 * it: up and down the a - 1 steps in a node and log2(m) across nodes. */
static double gpu_latency(const shs_hardware *hw, int kind, double a, double m)
{
	double n = a * m, steps = 1, inter = m > 1 ? 1 : 0, tree = HUGE_VAL;

	if (kind == SHS_PCOLL_ALL_REDUCE) {
		steps = ALL_REDUCE_PASSES * (n - 1);
		inter = ALL_REDUCE_PASSES * (m - 1);
		tree = hw->coll_latency + ALL_REDUCE_PASSES * ((a - 1) * hw->nvlink_step_latency +
							      log2(m) * hw->scaleout_tree_latency);
	} else if (kind == SHS_PCOLL_REDUCE_SCATTER || kind == SHS_PCOLL_ALL_GATHER) {
		steps = n - 1;
		inter = m - 1;
	}
	return fmin(tree, hw->coll_latency + (steps - inter) * hw->nvlink_step_latency +
				  inter * hw->scaleout_step_latency);
}

static double gpu_time(const shs_cluster *c, int kind, const extent *xs, double v)
{
	const shs_hardware *hw = &c->hw;
	double a = 1, m = 1, node = (double)hw->node_size, t_node = 0, t_net = 0, w_net;
	double w_gpu = hw->gpu_egress * achieved(hw->nvlink_eff);
	double w_node = hw->node_egress * achieved(hw->scaleout_eff);

	for (uint32_t p = 0; p < c->n_phys; p++) {
		if (c->phys[p].kind == SHS_PHYS_NODE)
			a *= (double)xs[p].ext;
		else if (c->phys[p].kind == SHS_PHYS_NET)
			m *= (double)xs[p].ext;
	}
	w_net = w_node * a / node;   /* the group's share of each node's egress */
	if ((a > 1 && w_gpu <= 0) || (m > 1 && w_net <= 0))
		return HUGE_VAL;
	switch (kind) {
	case SHS_PCOLL_ALL_REDUCE:
	case SHS_PCOLL_REDUCE_SCATTER:
	case SHS_PCOLL_ALL_GATHER:
		t_node = a > 1 ? v * (a - 1) / (a * w_gpu) : 0;
		t_net = m > 1 ? v * (m - 1) / (m * w_net) : 0;
		break;
	case SHS_PCOLL_ALL_TO_ALL:
		t_node = a > 1 ? v * (a - 1) / (a * a * m * m * w_gpu) : 0;
		t_net = m > 1 ? v * (m - 1) / (m * m * w_net) : 0;
		break;
	case SHS_PCOLL_PERMUTE:
		t_node = a > 1 ? v / w_gpu : 0;
		t_net = m > 1 ? v * node / w_node : 0;
		break;
	}
	/* the bandwidth's time, at least NCCL's latency (as ICI's is at least T_min) */
	return fmax(gpu_latency(hw, kind, a, m),
		    (kind == SHS_PCOLL_ALL_REDUCE ? ALL_REDUCE_PASSES : 1) * fmax(t_node, t_net));
}

double shs_coll_time(const shs_cluster *c, int kind, uint32_t axes_mask, double bytes)
{
	extent xs[SHS_PHYS_MAX];

	if (!c || !(bytes > 0) || shs_mesh_group(&c->mesh, axes_mask) < 2)
		return 0;
	for (uint32_t p = 0; p < c->n_phys && p < SHS_PHYS_MAX; p++)
		xs[p] = group_extent(c, axes_mask, p);
	if (c->hw.gpu)
		return gpu_time(c, kind, xs, bytes);
	return fmax(ici_time(c, kind, xs, bytes), dcn_time(c, kind, xs, bytes));
}

const char *shs_coll_name(int kind)
{
	static const char *const names[SHS_PCOLL_COUNT] = { "all-reduce", "reduce-scatter",
							    "all-gather", "all-to-all", "permute" };

	return kind >= 0 && kind < SHS_PCOLL_COUNT ? names[kind] : "collective";
}
