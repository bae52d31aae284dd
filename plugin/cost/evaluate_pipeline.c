/* Pipeline parallelism: the step of every layer on one device, split into stages and scheduled.
 *
 * With a mesh axis named "stage" of size p, nothing is split over that axis: the plan runs every
 * layer on each device for its replica's whole batch, and the schedule that set the step time
 * recorded, on its stream's clock, each layer segment of the entry (shs__spans). The first half of
 * the layers is the forward pass, the second the backward; what runs before them is the
 * embedding's forward, between them the loss head's forward and backward (a third and two thirds:
 * the book's 2 N P forward and 4 N P backward FLOPs), after them the rest of the step (embedding
 * gradient, optimizer). The layers go to p stages of v chunks each, L / (p v) layers a chunk,
 * Megatron-LM's assignment (virtual stage c p + s is chunk c of device s); each pass is a micro-
 * batch's share (1 / m) of its layers' time, the recomputation with the backward passes, which
 * also add their micro-batch's weight gradients into the step's (HBM traffic the whole-batch step
 * does not have); the embedding rides on the first virtual stage, the head on the last, and the
 * imbalance they cause is the schedule's. Activations and gradients between virtual stages cross
 * the stage axis's links (a permute of one micro-batch's layer input at its sharding), synchronous
 * where the stage axis blocks (--blocking, --no-overlap). Weights a plan gathers are gathered
 * again for every micro-batch's pass (per_pass_links), and under XLA the gradients reduced
 * again (reduced_again): the pass waits for what its compute does not hide, in place of the
 * replicated step's share of those waits.
 * Under XLA (any fusion but an eager framework's kernels) GPipe is one SPMD program, as the
 * pipelined rewrite writes it and MaxText lowers it: its trips run in lockstep (pipeline.c),
 * the embedding and the head run before and between its loops on every device, and the
 * layers' output and its gradient go from the stage that makes them to every device (an
 * all-reduce over the stages each). The schedule's makespan (pipeline.c), then each stage's
 * share (1 / p) of the rest, is the step. Memory: each stage holds 1 / p of the weights,
 * gradients and optimizer state (the embedding's imbalance is not counted), and one
 * micro-batch's activations of its chunk for each chunk in flight (1F1B: p on the first stage;
 * GPipe: m). Per-device figures (FLOPs, compute,
 * collectives) are a p-th of the replicated step's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate_internal.h"
#include "shs_limits.h"

/* The index of the mesh axis named "stage" with more than one device, or -1. */
static int stage_axis(const shs_mesh *mesh)
{
	int a = shs_mesh_axis(mesh, "stage");

	return a >= 0 && mesh->sizes[a] > 1 ? a : -1;
}

static bool holds_matmul(const shs_module *m, uint32_t c, uint32_t depth)
{
	const shs_computation *comp = m->comps[c];

	if (depth > SHS_MAX_CALL_DEPTH)
		return false;
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		if (in->op == SHS_OP_DOT || in->op == SHS_OP_CONVOLUTION)
			return true;
		for (uint32_t k = 0; k < in->n_called; k++)
			if ((in->op == SHS_OP_CALL || in->op == SHS_OP_WHILE) &&
			    holds_matmul(m, in->called[k], depth + 1))
				return true;
	}
	return false;
}

bool shs__layer_segment(const shs_module *m, uint32_t i, int64_t *layers)
{
	const shs_computation *entry = m->comps[m->entry];
	const shs_instr *in = entry->instrs[i];

	*layers = 1;
	if (in->op == SHS_OP_WHILE && in->n_called >= 2) {
		if (!shs_while_trip_count(m, entry, in, layers) || *layers < 1)
			return false;
		return holds_matmul(m, in->called[0], 1);
	}
	return in->op == SHS_OP_CALL && in->n_called && holds_matmul(m, in->called[0], 1);
}

int64_t shs_eval_pipeline_layers(const shs_module *m)
{
	const shs_computation *entry = m->comps[m->entry];
	int64_t total = 0, half = 0, layers;
	uint32_t n = 0, k = 0;

	for (uint32_t i = 0; i < entry->n_instrs; i++)
		if (shs__layer_segment(m, i, &layers)) {
			total += layers;
			n++;
		}
	/* the forward segments, then the backward ones: a split into two halves (split_parts) */
	for (uint32_t i = 0; i < entry->n_instrs && 2 * half < total; i++)
		if (shs__layer_segment(m, i, &layers)) {
			half += layers;
			k++;
		}
	return total >= 2 && 2 * half == total && k < n ? half : 0;
}

bool shs_eval_layer_name(const shs_module *m, int64_t k, char *buf, size_t cap)
{
	const shs_computation *entry = m->comps[m->entry];
	int64_t first = 0, layers, half = shs_eval_pipeline_layers(m);

	if (k < 0 || k >= half)
		return false;
	for (uint32_t i = 0; i < entry->n_instrs; i++) {
		if (!shs__layer_segment(m, i, &layers))
			continue;
		if (k < first + layers) {
			const shs_instr *in = entry->instrs[i];
			if (in->op == SHS_OP_CALL)
				snprintf(buf, cap, "%s", m->comps[in->called[0]]->name);
			else
				snprintf(buf, cap, "%s trip %lld", in->name, (long long)(k - first));
			return true;
		}
		first += layers;
	}
	return false;
}

void shs__spans_add(shs__spans *s, uint32_t instr, int64_t layers, double start, double end)
{
	if (s->rc)
		return;
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? 2 * s->cap : 16;
		shs__span *grown = realloc(s->v, cap * sizeof(*grown));
		if (!grown) {
			s->rc = SHS_ENOMEM;
			return;
		}
		s->v = grown;
		s->cap = cap;
	}
	s->v[s->n++] = (shs__span){ start, end, instr, layers };
}

void shs__spans_free(shs__spans *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* The local bytes of value v of the entry under plan p (its first leaf), and into *batch the
 * mesh axes that split its first dim. */
static double local_bytes(const shs_module *m, const shs_plan *p, const shs_mesh *mesh,
			  uint32_t v, uint32_t *batch)
{
	const shs_instr *in = m->comps[m->entry]->instrs[v];
	const shs_decision *d = &p->d[m->entry][v];
	const shs_shape *leaves[SHS_MAX_VALUE_LEAVES];
	uint32_t n = shs_shape_leaf_list(&in->shape, leaves, SHS_MAX_VALUE_LEAVES);

	*batch = 0;
	if (!n || !d->set || !d->n_leaves)
		return 0;
	for (uint32_t a = 0; a < mesh->n_axes; a++)
		if (shs_spec_dim_of(&d->leaves[0], a) == 0)
			*batch |= 1u << a;
	return shs_spec_local_bytes(&d->leaves[0], leaves[0], mesh);
}

/* The activation a stage hands the next, per device, for the whole batch, into *out: the
 * first layer segment's input (a call's first operand; the largest element a loop carries
 * from trip to trip, changed by each: not one the body keeps as it is (a weight) nor a stack
 * its trips fill or read a slot of; the data itself when the first layer reads a parameter);
 * into *batch the mesh axes that split its first dim (the batch: data parallelism's). */
static int boundary(const shs_module *m, const shs_plan *p, const shs_mesh *mesh,
		    uint32_t instr, double *out, uint32_t *batch, shs_err *e)
{
	const shs_computation *entry = m->comps[m->entry];
	const shs_instr *in = entry->instrs[instr];
	shs__stack *stacks = NULL;
	int64_t trips;

	*out = 0;
	*batch = 0;
	if (in->op == SHS_OP_CALL || !in->n_operands) {
		*out = in->n_operands ? local_bytes(m, p, mesh, in->operands[0], batch) : 0;
		return SHS_OK;
	}
	const shs_instr *init = entry->instrs[in->operands[0]];
	if (init->op != SHS_OP_TUPLE)
		return SHS_OK;
	if (shs__loop_stacks(m, m->entry, instr, &trips, &stacks) != SHS_OK)
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	for (uint32_t k = 0; stacks && k < init->n_operands; k++) {
		uint32_t v = init->operands[k], axes;
		double b;
		if (stacks[k].kind != SHS__STACK_NONE || !in->n_called ||
		    in->called[0] >= m->n_comps || shs_while_keeps(m->comps[in->called[0]], k))
			continue;
		if ((b = local_bytes(m, p, mesh, v, &axes)) > *out) {
			*out = b;
			*batch = axes;
		}
	}
	free(stacks);
	return SHS_OK;
}

/* The stream's time in the entry's parts: before the layers, the forward layers, between,
 * the backward layers and after; *layers per pass and *first, the first layer segment. */
typedef struct parts {
	double pre, fwd, mid, bwd, post;
	int64_t layers;
	uint32_t first;
} parts;

static int split_parts(const shs__spans *s, parts *out, shs_err *e)
{
	int64_t total = 0, half = 0;
	uint32_t k = 0;

	for (uint32_t i = 0; i < s->n; i++)
		total += s->v[i].layers;
	while (k < s->n && 2 * half < total)
		half += s->v[k++].layers;
	if (total < 2 || 2 * half != total || k == 0 || k == s->n)
		return shs_seterr(e, SHS_EINVAL, "pipeline stages need the model's layers as "
				  "calls or loops of the entry computation, as many backward as "
				  "forward: found %u such segments of %lld layers in all", s->n,
				  (long long)total);
	out->layers = half;
	out->first = s->v[0].instr;
	out->pre = s->v[0].start;
	out->fwd = s->v[k - 1].end - s->v[0].start;
	out->mid = s->v[k].start - s->v[k - 1].end;
	out->bwd = s->v[s->n - 1].end - s->v[k].start;
	out->post = fmax(0, s->end - s->v[s->n - 1].end);
	return SHS_OK;
}

/* One backward pass's accumulation of its micro-batch's weight gradients into the step's, for
 * all the layers of a device (grads: their bytes), averaged over the m passes: the first
 * writes the sum, each later one reads it and writes it back, and where the runtime does not
 * fuse the add into the work that makes the gradient (an eager framework: Megatron-LM's
 * main_grad.add_(grad), PyTorch's autograd accumulation), reads the fresh gradient as well. */
static double accumulation_s(const shs_cluster *c, const shs_eval_options *o, double grads,
			     int64_t m)
{
	double passes = o->fusion == SHS_FUSION_KERNELS ? 3 : 2;

	return passes * grads * (double)(m - 1) / (double)m / shs_hw_hbm_rate(&c->hw);
}

/* Divides the per-device figures of the replicated step by the p stages. */
static void per_stage(shs_eval *ev, double p)
{
	ev->compute_s /= p;
	ev->flops_s /= p;
	ev->hbm_s /= p;
	ev->flop_bound_s /= p;
	ev->hbm_bound_s /= p;
	ev->remat_s /= p;
	ev->remat_comm_s /= p;
	ev->flops /= p;
	ev->comm_s /= p;
	ev->exposed_comm_s /= p;
	for (uint32_t a = 0; a < SHS_MESH_MAX_AXES; a++)
		ev->exposed_by_axis[a] /= p;
	for (uint32_t k = 0; k < ev->n_colls; k++) { /* counted as replicated, timed per device */
		ev->colls[k].time_s /= p;
		ev->colls[k].exposed_s /= p;
	}
}

/* What the pipeline works from: the replicated step's parts and figures, the stage axis. */
typedef struct pipe_ctx {
	const shs_cluster *c;
	const shs_eval_options *o;
	const shs_eval *ev;   /* the replicated step */
	parts pt;
	int axis;
	uint32_t p;
	double extra;         /* recomputation and what it exposes: with the backward passes */
	double rest;          /* the replicated step's time after its stream's end */
	double bytes;         /* the stage-to-stage activation of the whole batch, per device */
	bool blocking;        /* synchronous sends */
	double gather_s;      /* the replicated step's weight gathers (FSDP's), link seconds */
	double reduce_s;      /* ... and its gradient reductions a pass makes again, seconds */
	double gather_exposed_s, reduce_exposed_s; /* ... of which its stream waited for */
	bool again_blocks;    /* ... where either blocks the stream */
	double out_s;         /* lockstep: the layers' output, or its gradient, from the stage
			       * that makes it to every device, link seconds */
} pipe_ctx;

/* One configuration: m micro-batches, v chunks a stage, schedule s; what it gives. */
typedef struct pipe_try {
	int64_t m;
	uint32_t v;
	shs_pipe_schedule s;
	double step, hop, bytes, wait, bubble, bubble_s;
	double memory, first_memory, last_memory; /* bytes: the largest stage's, the ends' */
	uint32_t first_in_flight;
	bool fits;
} pipe_try;

/* Memory of stage s holding `chunks` micro-batch chunks of activations: a p-th of the state
 * (weights, gradients, optimizer) and each chunk's share of the replicated step's
 * activations. */
static double stage_bytes(const pipe_ctx *x, const pipe_try *t, uint32_t chunks)
{
	double state = x->ev->state_bytes + x->ev->grads_bytes;
	double act = fmax(0, x->ev->memory_bytes - state) / ((double)t->m * x->p * t->v);

	return state / x->p + act * chunks;
}

/* The sequences each device's replica works on: the token batch over its split under plan p
 * (0 when there is none). */
static int64_t replica_batch(const shs_module *m, const shs_plan *p, const shs_mesh *mesh)
{
	uint32_t t = shs_token_param(m);

	if (t == UINT32_MAX)
		return 0;
	const shs_instr *in = m->comps[m->entry]->instrs[t];
	const shs_decision *d = &p->d[m->entry][t];
	int64_t split = d->set && d->n_leaves ? shs_spec_dim_split(&d->leaves[0], 0, mesh) : 1;
	return (in->shape.dims[0] + split - 1) / (split > 0 ? split : 1);
}

/* Whether the runtime runs the pipeline as one SPMD program (XLA: any fusion but an eager
 * framework's kernels, which run each stage as its own program). */
static bool one_program(const shs_eval_options *o)
{
	return o->fusion != SHS_FUSION_KERNELS;
}

/* Whether a pass makes again, for its micro-batch, a reduction (kind) the replicated step
 * makes once: a gradient summed over the batch. In one SPMD program (XLA) the backward loop
 * reduces each micro-batch's gradients in its trip (MaxText's pipeline: "one all-gather and
 * reduce ... per repeat, as opposed to every microbatch" only with pipeline_fsdp_ag_once),
 * except the all-reduces XLA's GPU compiler sinks out of the loop (evaluate_sink.c); an eager
 * framework (Megatron-LM) accumulates the gradients and reduces them once after the last
 * backward pass. */
static bool reduced_again(const pipe_ctx *x, int kind)
{
	if (!one_program(x->o))
		return false;
	return kind == SHS_PCOLL_REDUCE_SCATTER || (kind == SHS_PCOLL_ALL_REDUCE && !x->c->hw.gpu);
}

/* Whether instruction i of computation c makes a weight's gradient: a matmul none of whose
 * operands is a weight (the gradient's dot contracts the activations with the gradients of
 * the layer's output; a layer's own matmuls read a weight). */
static bool makes_gradient(const shs_module *m, const shs_weights *w, uint32_t c, uint32_t i)
{
	const shs_instr *in = m->comps[c]->instrs[i];

	if (in->op != SHS_OP_DOT && in->op != SHS_OP_CONVOLUTION)
		return false;
	for (uint32_t k = 0; k < in->n_operands; k++)
		if (shs_is_weight(w, c, in->operands[k]))
			return false;
	return true;
}

/* The replicated step gathers each weight where it is used and reduces the gradients once a
 * step; a pipeline runs the layers once per micro-batch and gathers the weights again each
 * time, and reduces the gradients again where reduced_again says so. One SPMD program (XLA)
 * runs every gather of the layer again in each trip (MaxText's pipeline unless
 * pipeline_fsdp_ag_once); an eager framework gathers again the weights split over the axes
 * that split the batch (FSDP's, batch: those axes), not those its tensor-parallel layers keep
 * split. w: the model's weights. */
static void per_pass_links(pipe_ctx *x, const shs_module *m, const shs_weights *w,
			   uint32_t batch)
{
	uint32_t blocking = shs__axes_mask(&x->c->mesh, x->o->blocking);

	for (uint32_t k = 0; k < x->ev->n_colls; k++) {
		const shs_eval_coll *s = &x->ev->colls[k];
		if (s->weight && s->kind == SHS_PCOLL_ALL_GATHER &&
		    (one_program(x->o) || (s->axes_mask & batch))) {
			x->gather_s += s->time_s;
			x->gather_exposed_s += s->exposed_s;
		} else if (!s->reshard && reduced_again(x, s->kind) &&
			   makes_gradient(m, w, s->comp, s->instr)) {
			x->reduce_s += s->time_s;
			x->reduce_exposed_s += s->exposed_s;
		} else {
			continue;
		}
		/* a gather not overlapped makes its matmul wait; a reduction runs beside the
		 * work after its instruction either way, unless its axis blocks */
		x->again_blocks |= (s->reshard && !s->overlapped) || (s->axes_mask & blocking);
	}
}

/* What a pass of t seconds adds for gathering its chunk's weights, or reducing their
 * gradients, itself (g seconds of links): it waits for them in place of the replicated step's
 * share of those waits (e, which t holds); where they overlap, for what its own compute does
 * not hide; where they block, for all of it. A pass its links bound takes their time. */
static double again_s(const pipe_ctx *x, double g, double e, double t)
{
	return (x->again_blocks ? g : fmax(0, g - t)) - fmin(e, t);
}

/* Simulates configuration *t (m, v, s set) and fills in the rest; trace (may be NULL)
 * receives its passes and transfers. SHS_OK, SHS_EINVAL (a configuration the schedule cannot
 * run) or SHS_ENOMEM. */
static int try_config(const pipe_ctx *x, pipe_try *t, shs_trace *trace, shs_err *e)
{
	uint32_t n_virtual = x->p * t->v;
	double mb = (double)t->m, *fwd = malloc(3 * n_virtual * sizeof(double));
	shs_pipe_out out;
	int rc;

	if (!fwd)
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	double *bwd = fwd + n_virtual, *send = bwd + n_virtual;
	double share = 1.0 / ((double)n_virtual * mb);
	t->bytes = x->bytes / mb;
	t->hop = shs_coll_time(x->c, SHS_PCOLL_PERMUTE, 1u << x->axis, t->bytes);
	double acc = accumulation_s(x->c, x->o, x->ev->grads_bytes, t->m) / n_virtual;
	/* the gathers: half of them before forward passes, half before backward ones */
	double g = x->gather_s / 2 / (double)n_virtual, r = x->reduce_s / (double)n_virtual;
	double ge = x->gather_exposed_s * share / 2, re = x->reduce_exposed_s * share;
	bool lockstep = one_program(x->o) && t->s == SHS_PIPE_GPIPE;
	for (uint32_t k = 0; k < n_virtual; k++) {
		fwd[k] = x->pt.fwd * share;
		bwd[k] = (x->pt.bwd + x->extra) * share + acc;
		fwd[k] += again_s(x, g, ge, fwd[k]);
		bwd[k] += again_s(x, g + r, ge + re, bwd[k]);
		send[k] = t->hop;
	}
	/* the embedding and the head: on the end stages' passes, or (lockstep) before, between
	 * and after the loops, on every device */
	double around = lockstep ? x->pt.pre + x->pt.mid + 2 * x->out_s : 0;
	if (!lockstep) {
		fwd[0] += x->pt.pre / mb;
		fwd[n_virtual - 1] += x->pt.mid / 3 / mb;
		bwd[n_virtual - 1] += 2 * x->pt.mid / 3 / mb;
	}
	shs_pipe_in in = { t->s, x->p, t->v, (uint32_t)t->m, fwd, bwd, send, send, x->blocking,
			   trace, t->bytes, lockstep };
	rc = shs_pipe_simulate(&in, &out, e);
	free(fwd);
	if (rc)
		return rc;
	t->step = out.makespan + around + x->pt.post / x->p + x->rest;
	t->wait = out.wait_s;
	t->bubble = out.bubble;
	t->bubble_s = out.makespan - out.ideal;
	t->memory = 0;
	for (uint32_t s = 0; s < x->p; s++)
		t->memory = fmax(t->memory, stage_bytes(x, t, out.peak_chunks[s]));
	t->first_memory = stage_bytes(x, t, out.peak_chunks[0]);
	t->last_memory = stage_bytes(x, t, out.peak_chunks[x->p - 1]);
	t->first_in_flight = out.peak_chunks[0];
	t->fits = t->memory <= x->ev->hbm_bytes;
	shs_pipe_out_free(&out);
	return SHS_OK;
}

/* Whether try a beats b: fitting first, then the faster, then the one that holds less. */
static bool better(const pipe_try *a, const pipe_try *b)
{
	if (a->fits != b->fits)
		return a->fits;
	if (!a->fits)
		return a->memory < b->memory;
	return a->step < b->step;
}

/* The best configuration o leaves open into *best: micro-batches (o->microbatches, or each
 * divisor of the replica's batch from p on), chunks (o->virtual_stages, or each divisor of a
 * stage's layers up to SHS_MAX_VIRTUAL_STAGES, interleaved, whose micro-batches come in
 * groups of p) and, with one chunk, o's schedule. */
static int choose(const pipe_ctx *x, int64_t batch, pipe_try *best, shs_err *e)
{
	int64_t per_stage = x->pt.layers / x->p, m_lo = x->o->microbatches, m_hi = m_lo;
	uint32_t v_lo = x->o->virtual_stages, v_hi = v_lo;
	bool found = false;

	if (!m_lo) {
		m_lo = batch >= x->p ? x->p : 1;
		m_hi = batch > 0 ? batch : x->p;
	}
	if (!v_lo) { /* interleaving asked for: two chunks or more */
		v_lo = x->o->pipeline == SHS_PIPE_INTERLEAVED && per_stage >= 2 ? 2 : 1;
		v_hi = per_stage < SHS_MAX_VIRTUAL_STAGES ? (uint32_t)per_stage :
							    SHS_MAX_VIRTUAL_STAGES;
	}
	for (int64_t mb = m_lo; mb <= m_hi; mb++) {
		if (mb > UINT32_MAX || (batch > 0 && !x->o->microbatches && batch % mb))
			continue;
		for (uint32_t v = v_lo; v <= v_hi; v++) {
			pipe_try t = { .m = mb, .v = v,
				       .s = v > 1 ? SHS_PIPE_INTERLEAVED : x->o->pipeline };
			/* interleaving runs micro-batches in groups of p: skipped where the
			 * choice was the search's, refused where both were given */
			if (per_stage % v ||
			    (v > 1 && mb % x->p &&
			     !(x->o->microbatches && x->o->virtual_stages)))
				continue;
			int rc = try_config(x, &t, NULL, e);
			if (rc)
				return rc;
			if (!found || better(&t, best))
				*best = t;
			found = true;
		}
	}
	if (!found)
		return shs_seterr(e, SHS_EINVAL, "pipeline: no micro-batch count and chunks suit "
				  "%u stages of %lld layers", x->p, (long long)per_stage);
	return SHS_OK;
}

/* Puts configuration t into ev: the pipelined step, a stage's share of the figures. */
static void adopt(const pipe_ctx *x, const pipe_try *t, shs_eval *ev)
{
	double peak = x->c->hw.flops[SHS_HW_BF16];

	per_stage(ev, x->p);
	ev->pipe = (shs_eval_pipeline){ .stages = x->p, .chunks = t->v, .microbatches = t->m,
					.layers_per_stage = (uint32_t)(x->pt.layers / x->p),
					.schedule = t->s, .bubble = t->bubble,
					.bubble_s = t->bubble_s, .p2p_bytes = t->bytes,
					.p2p_s = t->hop, .p2p_exposed_s = t->wait,
					.stage_post_s = x->pt.post / x->p,
					.first_memory_bytes = t->first_memory,
					.last_memory_bytes = t->last_memory,
					.first_in_flight = t->first_in_flight };
	ev->step_time_s = t->step;
	ev->exposed_comm_s += t->wait;
	ev->exposed_by_axis[x->axis] += t->wait;
	ev->comm_s += t->hop * 2.0 * (double)t->m * t->v;
	ev->memory_bytes = t->memory;
	ev->state_bytes /= x->p;
	ev->params_bytes /= x->p;
	ev->grads_bytes /= x->p;
	ev->optimizer_bytes /= x->p;
	ev->fits = t->fits;
	ev->mfu = ev->step_time_s > 0 ? ev->model_flops / (ev->step_time_s * peak) : 0;
	ev->hfu = ev->step_time_s > 0 ? ev->flops / (ev->step_time_s * peak) : 0;
	/* the devices idle in the bubble longer than they wait for collectives: what bounds the
	 * step (at least 2 % of the compute, as a communication bound) */
	double idle = t->bubble_s - t->wait;
	if (idle > ev->exposed_comm_s && idle >= 0.02 * ev->compute_s)
		ev->bound = "pipeline bubble";
}

/* The pipelined step on timeline t, instead of one device's whole step: configuration b's
 * passes and transfers per stage, then the step's work after them. */
static int trace_pipeline(const pipe_ctx *x, pipe_try *b, shs_trace *t, shs_err *e)
{
	double end = 0;
	int rc;

	shs_trace_reset(t);
	if ((rc = try_config(x, b, t, e)))
		return rc;
	for (size_t k = 0; k < t->n; k++)
		end = fmax(end, t->v[k].start + t->v[k].dur);
	end = fmax(end, t->dropped ? b->step - x->pt.post / x->p - x->rest : 0);
	shs_trace_end_stream(t, end);
	shs_trace_event post = { .start = end, .dur = b->step - end, .kind = SHS_TRACE_ADDED,
				 .label = "after the passes: the step's work outside the layers "
					  "(embedding gradient, optimizer), a stage's share" };
	if (post.dur > 0)
		shs_trace_add(t, &post);
	return t->rc ? shs_seterr(e, t->rc, "evaluate: out of memory") : SHS_OK;
}

int shs__pipeline_apply(const shs_module *m, const shs_plan *p, const shs_cluster *c,
			const shs_eval_options *o, const shs__spans *spans,
			const shs_weights *weights, shs_eval *ev, shs_err *e)
{
	static const shs_eval_options none = { 0 };
	pipe_ctx x = { .c = c, .o = o ? o : &none, .ev = ev, .axis = stage_axis(&c->mesh) };
	pipe_try best;
	int rc;

	if (x.axis < 0 || p->self_staged) /* none, or the program's own pipeline */
		return SHS_OK;
	x.p = (uint32_t)c->mesh.sizes[x.axis];
	if ((rc = split_parts(spans, &x.pt, e)))
		return rc;
	uint32_t batch_axes;
	if ((rc = boundary(m, p, &c->mesh, x.pt.first, &x.bytes, &batch_axes, e)))
		return rc;
	per_pass_links(&x, m, weights, batch_axes);
	x.out_s = shs_coll_time(c, SHS_PCOLL_ALL_REDUCE, 1u << x.axis, x.bytes);
	uint32_t v = x.o->virtual_stages ? x.o->virtual_stages : 1;
	if (x.pt.layers % ((int64_t)x.p * v))
		return shs_seterr(e, SHS_EINVAL, "pipeline: %lld layers do not split evenly into "
				  "%u stages of %u chunks", (long long)x.pt.layers, x.p, v);
	if (x.o->microbatches > UINT32_MAX)
		return shs_seterr(e, SHS_EINVAL, "pipeline: %lld micro-batches are too many",
				  (long long)x.o->microbatches);
	x.extra = ev->remat_s + ev->remat_comm_s + ev->offload_exposed_s;
	x.rest = fmax(0, ev->step_time_s - spans->end - x.extra);
	/* the stage axis's collectives block the stream: the sends are synchronous */
	x.blocking = x.o->no_overlap ||
		     (shs__axes_mask(&c->mesh, x.o->blocking) & (1u << x.axis));
	if ((rc = choose(&x, replica_batch(m, p, &c->mesh), &best, e)))
		return rc;
	/* the timeline before adopt turns the replicated step's figures into a stage's */
	if (x.o->trace && (rc = trace_pipeline(&x, &best, x.o->trace, e)))
		return rc;
	adopt(&x, &best, ev);
	return SHS_OK;
}
