/* The step time of a plan: a compute stream and one link stream per mesh axis, per segment.
 *
 * The step is cut into segments: each execution of a called computation (one unrolled layer) or
 * of a loop body (one scanned layer, counted trip-count times), and the rest. Within a segment
 * the compute stream runs every instruction at max(FLOPs / achievable rate, bytes / HBM
 * bandwidth) (evaluate_rate.c); the collectives that runtimes overlap run on the links of their
 * mesh axes at the same time: weight all-gathers (prefetched, as FSDP does), all-gathers feeding
 * a matmul and a matmul's own reduce-scatter or all-reduce where the runtime decomposes them
 * under it (collective matmul, from the chip's windowed-einsum size on), gradient reductions
 * under the rest of the backward pass. Collectives on different axes
 * overlap each other. The other reshards block the stream. So a segment takes
 * max(compute, max over axes of its overlapped collectives) + its blocking collectives, the
 * book's max(T_math, T_comms) when everything overlaps; the step time is the sum. Weight
 * gathers may also use the idle link time of the segments before theirs, up to the prefetch
 * depth (a loop body's, that of its earlier iterations). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate_internal.h"

/* A step is communication-bound when the exposed communication is at least this share of the
 * compute time: some pass has T_comms > T_math (the book's test); a few small blocking reshards
 * do not make a step communication-bound. */
static const double COMM_BOUND_SHARE = 0.02;

/* One segment's accumulated times. */
typedef struct segment {
	double compute;
	double count;                          /* executions (a loop body's trip count) */
	double overlapped[SHS_MESH_MAX_AXES];
	double weights[SHS_MESH_MAX_AXES];     /* of overlapped: weight gathers (prefetchable) */
	double blocking;
	double blocking_axis[SHS_MESH_MAX_AXES];
	uint32_t first_coll, end_coll; /* its collectives in the site list (by index range) */
} segment;

typedef struct evaluator {
	const shs_module *m;
	const shs_plan *p;
	const shs_cluster *c;
	const shs_eval_options *o;
	shs_eval *ev;
	double peak, hbm_bw;
	shs_eval_coll *colls;
	uint32_t n_colls, cap_colls;
	shs__edges edges;   /* operand edges and the reshards they repeat */
	uint32_t cur_comp, cur_instr; /* the instruction being accounted */
	shs__fusion *fused; /* values the compiler fuses (NULL: none) */
	double **hbm_s;     /* per computation and instruction: its HBM bytes' seconds, fusion
			     * counted (shs__hbm_seconds) */
	double **flop_s;    /* per computation and instruction: its FLOPs' seconds (achievable) */
	double slack[SHS_MAX_PREFETCH]; /* idle link time of the last segments, newest first */
	bool **sunk;        /* all-reduces sunk out of their loops (NULL: none) */
	double trips;       /* of the loop whose body is being walked (1: none) */
	uint32_t blocking;  /* mesh axes whose collectives block the stream (o->blocking) */
	shs__spans spans;   /* the entry's layer segments on the schedule that set the step */
	bool staged;        /* the mesh has pipeline stages: the spans are wanted */
	bool events;        /* the event schedule sets the step (and records the spans) */
	shs_err *e;
	int rc;
} evaluator;

uint32_t shs__axes_mask(const shs_mesh *mesh, const char *names)
{
	uint32_t mask = 0;

	for (const char *at = names; at && *at;) {
		size_t len = strcspn(at, ",");
		for (uint32_t a = 0; a < mesh->n_axes; a++)
			if (strlen(mesh->names[a]) == len && !strncmp(mesh->names[a], at, len))
				mask |= 1u << a;
		at += len + (at[len] == ',');
	}
	return mask;
}

static int64_t group(const shs_cluster *c, uint32_t mask)
{
	return shs_mesh_group(&c->mesh, mask);
}

static shs_eval_coll *add_site(evaluator *x, const shs_instr *in, int kind, uint32_t mask,
			       bool reshard, bool overlapped, double v, double count)
{
	shs_eval_coll *s;

	if (x->n_colls == x->cap_colls) {
		uint32_t cap = x->cap_colls ? 2 * x->cap_colls : 64;
		shs_eval_coll *grown = realloc(x->colls, cap * sizeof(*grown));
		if (grown)
			x->colls = grown;
		if (!grown) {
			x->rc = shs_seterr(x->e, SHS_ENOMEM, "evaluate: out of memory");
			return NULL;
		}
		x->cap_colls = cap;
	}
	s = &x->colls[x->n_colls];
	memset(s, 0, sizeof(*s));
	snprintf(s->where, sizeof(s->where), "%s", in->name);
	s->comp = x->cur_comp;
	s->instr = x->cur_instr;
	s->kind = kind;
	s->axes_mask = mask;
	s->reshard = reshard;
	s->overlapped = overlapped && !x->o->no_overlap &&
			!(mask & x->blocking);
	s->bytes = v;
	s->count = count;
	s->time_s = shs_coll_time(x->c, kind, mask, v) * count;
	x->n_colls++;
	return s;
}

double shs__reshard_masks(const shs_mesh *mesh, const shs_shape *a, const shs_pspec *from,
			  const shs_pspec *to, uint32_t *gathered, uint32_t *moved)
{
	*gathered = *moved = 0;
	if (shs_spec_equal(from, to))
		return 0;
	for (uint32_t ax = 0; ax < mesh->n_axes; ax++) {
		int df = shs_spec_dim_of(from, ax), dt = shs_spec_dim_of(to, ax);
		if (df >= 0 && dt < 0)
			*gathered |= 1u << ax;
		else if (df >= 0 && dt != df)
			*moved |= 1u << ax;
	}
	return shs_spec_local_bytes(from, a, mesh);
}

/* Puts a site's time on its segment: on each of its axes' link streams, or blocking (booked to
 * the one axis that bounds it, shs__wait_axis); a weight gather also counts as prefetchable. */
static void charge(evaluator *x, segment *seg, const shs_eval_coll *s, bool weight)
{
	uint32_t one = s->overlapped ? SHS_MESH_MAX_AXES :
		       shs__wait_axis(x->c, s->kind, s->axes_mask, s->bytes, SHS_MESH_MAX_AXES);

	x->ev->comm_s += s->time_s;
	for (uint32_t a = 0; a < x->c->mesh.n_axes; a++) {
		if (!(s->axes_mask & (1u << a)))
			continue;
		if (s->overlapped)
			seg->overlapped[a] += s->time_s;
		else if (a == one)
			seg->blocking_axis[a] += s->time_s;
		if (s->overlapped && weight)
			seg->weights[a] += s->time_s;
	}
	if (!s->overlapped)
		seg->blocking += s->time_s;
}

/* The reshards on the edge from operand k's producer to what instruction in requires. */
static void edge_reshards(evaluator *x, segment *seg, const shs_computation *comp,
			  const shs_instr *in, uint32_t k, const shs_decision *d,
			  const shs_decision *od, double count)
{
	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	uint32_t n = shs_shape_leaf_list(&comp->instrs[in->operands[k]]->shape, shapes,
					 SHS_MAX_VALUE_LEAVES);
	bool prefetch = in->op == SHS_OP_DOT || in->op == SHS_OP_CONVOLUTION;

	/* an earlier edge made the copy this one reads */
	if (x->edges.first[x->cur_comp][x->edges.base[x->cur_comp][x->cur_instr] + k] !=
	    SHS__EDGE_NEW)
		return;
	for (uint32_t j = 0; j < n && j < od->n_leaves && d->req_first[k] + j < d->n_req; j++) {
		const shs_pspec *from = &od->leaves[j], *to = &d->req[d->req_first[k] + j];
		uint32_t gathered, moved;
		double local = shs__reshard_masks(&x->c->mesh, shapes[j], from, to, &gathered,
						  &moved);
		if (gathered) {
			double v = local * (double)group(x->c, gathered);
			bool weight = shs_is_weight(x->edges.weights, x->cur_comp, in->operands[k]);
			shs_eval_coll *s = add_site(x, in, SHS_PCOLL_ALL_GATHER, gathered, true,
						    prefetch && (weight ||
						    shs__collective_matmul(&x->c->hw, v)), v, count);
			if (s) {
				s->weight = weight;
				charge(x, seg, s, weight);
			}
		}
		if (moved) {
			shs_eval_coll *s = add_site(x, in, SHS_PCOLL_ALL_TO_ALL, moved, true, false,
						    local * (double)group(x->c, moved), count);
			if (s)
				charge(x, seg, s, false);
		}
	}
}

double shs__own_coll_bytes(const shs_mesh *mesh, const shs_coll *cl, double *sends)
{
	int64_t n = shs_mesh_group(mesh, cl->axes_mask);

	*sends = cl->kind == SHS_PCOLL_PERMUTE && cl->overlappable && n > 1 ? (double)(n - 1) : 1;
	if (cl->kind == SHS_PCOLL_ALL_GATHER || cl->kind == SHS_PCOLL_ALL_TO_ALL)
		return cl->bytes * (double)n;
	return cl->bytes;
}

/* The instruction's own collectives (the chosen candidate's), V from the per-device buffer; a
 * ring's sends as one site of all of them. */
static void own_collectives(evaluator *x, segment *seg, const shs_instr *in,
			    const shs_decision *d, double count)
{
	bool matmul = in->op == SHS_OP_DOT || in->op == SHS_OP_CONVOLUTION;

	for (uint32_t k = 0; k < d->n_colls; k++) {
		const shs_coll *c = &d->colls[k];
		double sends, v = shs__own_coll_bytes(&x->c->mesh, c, &sends);
		/* sunk out of its loop: once per run of the loop, after it */
		bool sunk = shs__sunk(x->sunk, x->cur_comp, x->cur_instr, c);
		shs_eval_coll *s = add_site(x, in, c->kind, c->axes_mask, false,
					    shs__own_overlapped(&x->c->hw, matmul, c, v), v,
					    sunk ? count / x->trips : count);
		if (!s)
			continue;
		s->bytes *= sends;
		s->time_s *= sends;
		charge(x, seg, s, false);
	}
}

static void account(evaluator *x, segment *seg, const shs_computation *comp, uint32_t c,
		    uint32_t i, double count)
{
	const shs_instr *in = comp->instrs[i];
	const shs_decision *d = &x->p->d[c][i];
	double t_flops = shs__flop_seconds(&x->c->hw, x->p, &x->c->mesh, x->m, c, i);
	double t_hbm = shs__hbm_seconds(&x->c->hw, x->p, &x->c->mesh, x->m, c, i,
					shs__fused_bytes(x->m, x->p, x->fused, c, i));

	x->hbm_s[c][i] = t_hbm;
	x->flop_s[c][i] = t_flops;

	x->cur_comp = c;
	x->cur_instr = i;
	seg->compute += (t_flops > t_hbm ? t_flops : t_hbm) * count;
	x->ev->flops_s += t_flops * count;
	x->ev->hbm_s += t_hbm * count;
	if (t_flops >= t_hbm)
		x->ev->flop_bound_s += t_flops * count;
	else
		x->ev->hbm_bound_s += t_hbm * count;
	x->ev->flops += d->flops * count;
	own_collectives(x, seg, in, d, count);
	if (!shs__reshards_at(&x->edges, comp, c, i))
		return;
	for (uint32_t k = 0; d->set && d->n_req && k < in->n_operands; k++) {
		const shs_decision *od = &x->p->d[c][in->operands[k]];
		if (od->set)
			edge_reshards(x, seg, comp, in, k, d, od, count);
	}
}

/* Prefetch: the weight gathers of a segment may also run in the idle link time of the segments
 * before it, up to the prefetch depth (a loop body's earlier iterations for a loop). Takes the
 * time they hide off the segment's link streams. */
static void prefetch(evaluator *x, segment *seg)
{
	uint32_t depth = x->o->prefetch_depth ? x->o->prefetch_depth : 1;
	double weights = 0, slack = 0, hidden, own;

	depth = depth < SHS_MAX_PREFETCH ? depth : SHS_MAX_PREFETCH;
	for (uint32_t a = 0; a < x->c->mesh.n_axes; a++)
		weights = seg->weights[a] > weights ? seg->weights[a] : weights;
	if (weights <= 0)
		return;
	for (uint32_t k = 0; k < depth; k++)
		slack += x->slack[k];
	/* a loop body prefetches into its own earlier iterations */
	own = 0;
	for (uint32_t a = 0; a < x->c->mesh.n_axes; a++)
		own = seg->overlapped[a] > own ? seg->overlapped[a] : own;
	if (seg->count > 1 && seg->compute > own)
		slack += (seg->compute - own) *
			 (double)(depth < seg->count ? depth : seg->count - 1) / seg->count;
	hidden = weights < slack ? weights : slack;
	for (uint32_t a = 0; a < x->c->mesh.n_axes; a++)
		seg->overlapped[a] -= hidden * seg->weights[a] / weights;
	for (uint32_t k = 0; k < SHS_MAX_PREFETCH && hidden > 0; k++) {
		double take = x->slack[k] < hidden ? x->slack[k] : hidden;
		x->slack[k] -= take;
		hidden -= take;
	}
}

/* Closes a segment: adds its time to the step and splits its exposure over its sites. */
static void close_segment(evaluator *x, segment *seg)
{
	double comm = 0, exposed, waited = 0;
	uint32_t longest = SHS_MESH_MAX_AXES;

	prefetch(x, seg);
	for (uint32_t a = 0; a < x->c->mesh.n_axes; a++)
		if (seg->overlapped[a] > comm) {
			comm = seg->overlapped[a];
			longest = a;
		}
	exposed = comm > seg->compute ? comm - seg->compute : 0;
	memmove(&x->slack[1], &x->slack[0], (SHS_MAX_PREFETCH - 1) * sizeof(x->slack[0]));
	x->slack[0] = seg->compute > comm ? seg->compute - comm : 0;
	x->ev->compute_s += seg->compute;
	x->ev->step_time_s += seg->compute + exposed + seg->blocking;
	/* the segment waits for its longest link stream: its exposure is that axis's alone (the
	 * other axes ran under it); each blocking collective is on the axis that bounds it */
	x->ev->exposed_comm_s += exposed + seg->blocking;
	if (longest < x->c->mesh.n_axes)
		x->ev->exposed_by_axis[longest] += exposed;
	for (uint32_t a = 0; a < x->c->mesh.n_axes; a++)
		x->ev->exposed_by_axis[a] += seg->blocking_axis[a];
	/* the segment's exposure goes to the overlapped sites of the axis it waited on, by their
	 * times (the other axes' sites ran under it) */
	for (uint32_t k = seg->first_coll; k < x->n_colls; k++) {
		const shs_eval_coll *s = &x->colls[k];
		if (s->overlapped && longest < x->c->mesh.n_axes && (s->axes_mask & (1u << longest)))
			waited += s->time_s;
	}
	for (uint32_t k = seg->first_coll; k < x->n_colls; k++) {
		shs_eval_coll *s = &x->colls[k];
		if (!s->overlapped)
			s->exposed_s = s->time_s;
		else if (waited > 0 && (s->axes_mask & (1u << longest)))
			s->exposed_s = exposed * s->time_s / waited;
	}
}

static void walk(evaluator *x, uint32_t c, double count, uint32_t depth)
{
	const shs_computation *comp = x->m->comps[c];
	segment seg = { .first_coll = x->n_colls, .count = count };

	if (depth > SHS_MAX_CALL_DEPTH || x->rc != SHS_OK)
		return;
	for (uint32_t i = 0; i < comp->n_instrs && x->rc == SHS_OK; i++) {
		const shs_instr *in = comp->instrs[i];
		int64_t trips = 1;
		if (shs_opcode_runs_called(in->op)) {
			/* the segment so far ends here; the callee is its own */
			close_segment(x, &seg);
			memset(&seg, 0, sizeof(seg));
			seg.count = count;
			if (in->op == SHS_OP_WHILE && !shs_while_trip_count(x->m, comp, in, &trips))
				trips = 1;
			double start = x->ev->step_time_s;
			int64_t layers;
			if (in->op == SHS_OP_WHILE && in->n_called >= 2) {
				double outer = x->trips;
				x->trips = (double)trips;
				walk(x, in->called[0], count * (double)trips, depth + 1);
				x->trips = outer;
				walk(x, in->called[1], count * (double)(trips + 1), depth + 1);
			} else if (in->n_called) {
				walk(x, in->called[0], count, depth + 1);
			}
			if (x->staged && !x->events && depth == 0 && c == x->m->entry &&
			    shs__layer_segment(x->m, i, &layers))
				shs__spans_add(&x->spans, i, layers, start, x->ev->step_time_s);
			seg.first_coll = x->n_colls;
		}
		account(x, &seg, comp, c, i, count);
	}
	close_segment(x, &seg);
}

static int cmp_sites(const void *a, const void *b)
{
	const shs_eval_coll *x = a, *y = b;

	if (x->time_s != y->time_s)
		return x->time_s < y->time_s ? 1 : -1;
	return strcmp(x->where, y->where);
}

/* MFU, HFU and the bound from the figures (ev->model_flops already set): the bound is what the
 * critical path (the compute stream) spent its time on: waiting for collectives (2 % of the
 * compute or more), else HBM-bound or FLOP-bound instructions, the longer. Recomputation
 * (remat_s, in compute_s) counts with the instructions it repeats, in their shares. */
static void finish(evaluator *x)
{
	shs_eval *ev = x->ev;
	double base = ev->flop_bound_s + ev->hbm_bound_s;
	double hbm = ev->hbm_bound_s, flop = ev->flop_bound_s;

	if (base > 0) {
		hbm += ev->remat_s * ev->hbm_bound_s / base;
		flop += ev->remat_s * ev->flop_bound_s / base;
	}
	ev->mfu = ev->step_time_s > 0 ? ev->model_flops / (ev->step_time_s * x->peak) : 0;
	ev->hfu = ev->step_time_s > 0 ? ev->flops / (ev->step_time_s * x->peak) : 0;
	if (ev->exposed_comm_s >= COMM_BOUND_SHARE * ev->compute_s)
		ev->bound = "communication";
	else if (hbm > flop)
		ev->bound = "memory bandwidth";
	else
		ev->bound = "compute";
}

/* Hands the collective sites to ev, largest first. */
static void adopt_sites(evaluator *x)
{
	if (x->n_colls)
		qsort(x->colls, x->n_colls, sizeof(*x->colls), cmp_sites);
	x->ev->colls = x->colls;
	x->ev->n_colls = x->n_colls;
	x->colls = NULL;
}

/* Offloaded activations over the host link (the DMA engines run beside the compute and the
 * collectives): out as the forward pass makes them, back as the backward pass needs them,
 * each way under the compute of its pass. A training step's matmul FLOPs are a third forward
 * and two thirds backward (the book: 2 N P forward, 4 N P backward), so the way out hides
 * under a third of the compute and the way back under two thirds; what does not hide waits. */
static void offload(const evaluator *x, const shs__remat *r, shs_eval *out)
{
	double t, fwd = out->compute_s / 3, bwd = 2 * out->compute_s / 3;

	if (!(r->host_bytes > 0) || !(x->c->hw.host_bw > 0))
		return;
	t = r->host_bytes / x->c->hw.host_bw;
	out->offload_bytes = r->host_bytes;
	out->offload_held_bytes = r->host_held;
	out->host_mem_bytes = x->c->hw.host_mem_bytes;
	out->offload_s = t;
	out->offload_exposed_s = (t > fwd ? t - fwd : 0) + (t > bwd ? t - bwd : 0);
	out->step_time_s += out->offload_exposed_s;
}

/* The step's figures with remat policy: base (the schedule's, without remat) plus the
 * recomputation it costs (its compute and the collectives it repeats), and the memory it
 * leaves. */
static int with_remat(evaluator *x, const shs_eval *base, shs_remat policy, shs_err *e)
{
	shs_eval *out = x->ev;
	shs__remat remat = { 0 };
	shs_eval_coll *colls = out->colls;
	uint32_t n_colls = out->n_colls;
	/* an eager framework (its kernels) reruns a checkpointed layer whole */
	int rc = shs__remat_plan(x->m, x->p, x->c, policy, x->o->fusion == SHS_FUSION_KERNELS,
				 x->fused, base, &remat, e);

	if (rc == SHS_OK) {
		*out = *base;
		out->colls = colls;
		out->n_colls = n_colls;
		out->remat_s = remat.extra_s;
		out->compute_s += remat.extra_s;
		out->remat_comm_s = remat.comm_exposed_s;
		out->comm_s += remat.comm_s;
		out->exposed_comm_s += remat.comm_exposed_s;
		for (uint32_t a = 0; a < SHS_MESH_MAX_AXES; a++)
			out->exposed_by_axis[a] += remat.comm_exposed_by_axis[a];
		out->step_time_s += remat.extra_s + remat.comm_exposed_s;
		out->flops += remat.extra_flops;
		offload(x, &remat, out);
		finish(x);
		rc = shs__eval_memory(x->m, x->p, x->c, &remat, &x->edges, x->fused, x->o->trace,
				      out, e);
		if (rc == SHS_OK) /* the layers over pipeline stages, if the mesh has them */
			rc = shs__pipeline_apply(x->m, x->p, x->c, x->o, &x->spans,
						 x->edges.weights, out, e);
		/* offloaded values must fit in the host's memory too */
		if (out->offload_held_bytes > x->c->hw.host_mem_bytes)
			out->fits = false;
	}
	shs__remat_free(&remat);
	return rc;
}

static bool can_offload(const shs_hardware *hw)
{
	return hw->host_bw > 0 && hw->host_mem_bytes > 0;
}

/* Offload fits: full recomputation holds the same in HBM, so it fits too; keeps whichever is
 * faster (the transfers' exposure against the recomputed forward). */
static int faster_of_full(evaluator *x, const shs_eval *base, shs_remat *used, shs_err *e)
{
	shs_eval offloaded = *x->ev;
	int rc = with_remat(x, base, SHS_REMAT_FULL, e);

	if (rc != SHS_OK)
		return rc;
	if (x->ev->fits && x->ev->step_time_s < offloaded.step_time_s) {
		if (used)
			*used = SHS_REMAT_FULL;
		return SHS_OK;
	}
	*x->ev = offloaded; /* the same collective sites: with_remat keeps them */
	return SHS_OK;
}

/* Ends the timeline t of step ev: the time the evaluator adds after the schedule's makespan
 * (recomputation, offload), each as one slice after the stream's end. */
static void trace_close(shs_trace *t, const shs_eval *ev)
{
	const struct { double s; const char *what; } added[] = {
		{ ev->remat_s, "recomputation (remat; spread over the backward pass)" },
		{ ev->remat_comm_s, "recomputation's collectives, exposed" },
		{ ev->offload_exposed_s, "offload transfers the compute does not hide" },
	};
	double at = t->stream_end;

	if (ev->pipe.stages) /* the pipeline's timeline has its own (evaluate_pipeline.c) */
		return;
	for (size_t k = 0; k < sizeof(added) / sizeof(added[0]); k++) {
		shs_trace_event e = { .start = at, .dur = added[k].s, .kind = SHS_TRACE_ADDED,
				      .label = added[k].what };
		if (added[k].s > 0)
			shs_trace_add(t, &e);
		at += added[k].s > 0 ? added[k].s : 0;
	}
}

int shs_evaluate_until_fits(const shs_module *m, const shs_plan *p, const shs_cluster *c,
			    const shs_eval_options *o, shs_remat most, shs_eval *out,
			    shs_remat *used, shs_err *e)
{
	static const shs_eval_options defaults = { 0 };
	evaluator x = { .m = m, .p = p, .c = c, .o = o ? o : &defaults, .ev = out, .e = e,
			 .trips = 1 };
	shs_remat policy = x.o->remat;
	shs_eval base;
	int rc;

	memset(out, 0, sizeof(*out));
	if (used)
		*used = policy;
	if (p->n_comps != m->n_comps || p->mesh.n_axes != c->mesh.n_axes)
		return shs_seterr(e, SHS_EINVAL,
				  "evaluate: the plan is for another module or mesh");
	for (uint32_t k = 0; k < c->mesh.n_axes; k++)
		if (p->mesh.sizes[k] != c->mesh.sizes[k] ||
		    strcmp(p->mesh.names[k], c->mesh.names[k]))
			return shs_seterr(e, SHS_EINVAL, "evaluate: the plan's mesh axis "
					  "%s=%lld is not the cluster's %s=%lld", p->mesh.names[k],
					  (long long)p->mesh.sizes[k], c->mesh.names[k],
					  (long long)c->mesh.sizes[k]);
	x.peak = c->hw.flops[SHS_HW_BF16];
	x.hbm_bw = shs_hw_hbm_rate(&c->hw);
	x.blocking = shs__axes_mask(&c->mesh, x.o->blocking);
	x.staged = shs_mesh_axis(&c->mesh, "stage") >= 0 && !p->self_staged;
	x.events = !x.o->no_overlap && x.o->schedule == SHS_SCHEDULE_EVENTS;
	if (x.o->trace && !x.events)
		return shs_seterr(e, SHS_EINVAL, "evaluate: a timeline is the event schedule's: "
				  "not with no-overlap or the segments schedule");
	if (x.peak <= 0 || x.hbm_bw <= 0)
		return shs_seterr(e, SHS_EINVAL, "evaluate: %s has no bf16 FLOP/s or HBM bandwidth",
				  c->hw.name);
	if (shs__edges_make(m, p, &x.edges, e) != SHS_OK)
		return e->code;
	if (x.o->fusion != SHS_FUSION_NONE &&
	    shs__fusion_make(m, p, &c->mesh, x.o->fusion == SHS_FUSION_KERNELS, &x.fused, e) !=
		    SHS_OK) {
		shs__edges_free(&x.edges);
		return e->code;
	}
	/* the schedule does not depend on the remat policy: made once, then each policy in
	 * turn adds its recomputation and its memory until one fits */
	x.hbm_s = (double **)shs__per_instr(m, sizeof(double), false, NULL);
	x.flop_s = (double **)shs__per_instr(m, sizeof(double), false, NULL);
	rc = x.hbm_s && x.flop_s ? SHS_OK : shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	if (rc == SHS_OK)
		rc = shs__sunk_make(m, p, c, &x.sunk, e);
	if (rc == SHS_OK) {
		walk(&x, m->entry, 1, 0);
		x.spans.end = out->step_time_s;
		rc = x.spans.rc ? shs_seterr(e, x.spans.rc, "evaluate: out of memory") : x.rc;
	}
	if (rc == SHS_OK) {
		adopt_sites(&x);
		if (x.events)
			rc = shs__eval_events(m, p, c, x.o, x.hbm_s, x.flop_s, &x.edges, x.sunk,
					      x.staged ? &x.spans : NULL, out, e);
	}
	out->model_flops = shs__model_flops(m, p, &c->mesh) / (double)c->devices;
	if (out->model_flops < 0 && rc == SHS_OK)
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	base = *out;
	if (rc == SHS_OK && policy == SHS_REMAT_OFFLOAD && !can_offload(&c->hw))
		rc = shs_seterr(e, SHS_EINVAL, "evaluate: %s has no host link or host memory in "
				"the catalog (host_bw, host_mem_bytes): no offload", c->hw.name);
	for (; rc == SHS_OK; policy = (shs_remat)(policy + 1)) {
		if (policy == SHS_REMAT_OFFLOAD && !can_offload(&c->hw) && policy < most)
			continue; /* no host link known: straight to recomputation */
		rc = with_remat(&x, &base, policy, e);
		if (used)
			*used = policy;
		if (rc == SHS_OK && out->fits && policy == SHS_REMAT_OFFLOAD && most > policy)
			rc = faster_of_full(&x, &base, used, e);
		if (rc != SHS_OK || out->fits || policy >= most)
			break;
	}
	if (rc == SHS_OK && x.o->trace)
		trace_close(x.o->trace, out);
	free(x.colls);
	shs__per_instr_free(m, (void **)x.hbm_s);
	shs__per_instr_free(m, (void **)x.flop_s);
	if (x.sunk)
		shs__per_instr_free(m, (void **)x.sunk);
	shs__edges_free(&x.edges);
	shs__fusion_free(x.fused);
	shs__spans_free(&x.spans);
	if (rc != SHS_OK)
		shs_eval_free(out);
	return rc;
}

int shs_evaluate(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		 const shs_eval_options *o, shs_eval *out, shs_err *e)
{
	return shs_evaluate_until_fits(m, p, c, o, o ? o->remat : SHS_REMAT_NONE, out, NULL, e);
}

void shs_eval_free(shs_eval *ev)
{
	if (!ev)
		return;
	free(ev->colls);
	ev->colls = NULL;
	ev->n_colls = 0;
}
