/* Pipeline parallelism: the step of every layer on one device, split into stages and scheduled.
 *
 * With a mesh axis named "stage" of size p, nothing is split over that axis: the plan runs every
 * layer on each device for its replica's whole batch, and the schedule that set the step time
 * recorded, on its stream's clock, each layer segment of the entry (shs__spans). The first half
 * of the layers is the forward pass, the second the backward; what runs before them is the
 * embedding's forward, between them the loss head's forward and backward (a third and two
 * thirds: the book's 2 N P forward and 4 N P backward FLOPs), after them the rest of the step
 * (embedding gradient, optimizer). The layers go to p stages of v chunks each, L / (p v) layers
 * a chunk, Megatron-LM's assignment (virtual stage c p + s is chunk c of device s); each pass
 * is a micro-batch's share (1 / m) of its layers' time, the recomputation with the backward
 * passes, which also add their micro-batch's weight gradients into the step's (HBM traffic the
 * whole-batch step does not have); the embedding rides on the first virtual stage, the head on the last, and the
 * imbalance they cause is the schedule's. Activations and gradients between virtual stages
 * cross the stage axis's links (a permute of one micro-batch's layer input at its sharding),
 * synchronous where the stage axis blocks (--blocking, --no-overlap).
 * The schedule's makespan (pipeline.c), then each stage's share (1 / p) of the rest, is the
 * step. Memory: each stage holds 1 / p of the weights, gradients and optimizer state (the
 * embedding's imbalance is not counted), and one micro-batch's activations of its chunk for
 * each chunk in flight (1F1B: p on the first stage; GPipe: m). Per-device figures (FLOPs,
 * compute, collectives) are a p-th of the replicated step's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate_internal.h"

/* The index of the mesh axis named "stage" with more than one device, or -1. */
static int stage_axis(const shs_mesh *mesh)
{
	for (uint32_t a = 0; a < mesh->n_axes; a++)
		if (!strcmp(mesh->names[a], "stage") && mesh->sizes[a] > 1)
			return (int)a;
	return -1;
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

/* The local bytes of value v of the entry under plan p (its first leaf). */
static double local_bytes(const shs_module *m, const shs_plan *p, const shs_mesh *mesh,
			  uint32_t v)
{
	const shs_instr *in = m->comps[m->entry]->instrs[v];
	const shs_decision *d = &p->d[m->entry][v];
	const shs_shape *leaves[SHS_MAX_VALUE_LEAVES];
	uint32_t n = shs_shape_leaf_list(&in->shape, leaves, SHS_MAX_VALUE_LEAVES);

	return n && d->set && d->n_leaves ? shs_spec_local_bytes(&d->leaves[0], leaves[0], mesh) :
					    0;
}

/* The activation a stage hands the next, per device, for the whole batch: the first layer
 * segment's input (a call's first operand; the largest element a loop carries from trip to
 * trip that is neither a weight nor a stack its trips fill or read a slot of). */
static double boundary_bytes(const shs_module *m, const shs_plan *p, const shs_mesh *mesh,
			     const shs_weights *w, uint32_t instr, double *out, shs_err *e)
{
	const shs_computation *entry = m->comps[m->entry];
	const shs_instr *in = entry->instrs[instr];
	shs__stack *stacks = NULL;
	int64_t trips;

	*out = 0;
	if (in->op == SHS_OP_CALL || !in->n_operands) {
		*out = in->n_operands ? local_bytes(m, p, mesh, in->operands[0]) : 0;
		return SHS_OK;
	}
	const shs_instr *init = entry->instrs[in->operands[0]];
	if (init->op != SHS_OP_TUPLE)
		return SHS_OK;
	if (shs__loop_stacks(m, m->entry, instr, &trips, &stacks) != SHS_OK)
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	for (uint32_t k = 0; stacks && k < init->n_operands; k++) {
		uint32_t v = init->operands[k];
		if (stacks[k].kind == SHS__STACK_NONE && !shs_is_weight(w, m->entry, v))
			*out = fmax(*out, local_bytes(m, p, mesh, v));
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
		return shs_seterr(e, SHS_EINVAL, "pipeline stages need the model's layers as calls or "
				  "loops of the entry computation, as many backward as forward: "
				  "found %u such segments of %lld layers in all", s->n,
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

/* Memory of each stage from the replicated step's: a p-th of the state, and the chunks of
 * activations each holds at once (out.peak_chunks). */
static void stage_memory(shs_eval *ev, const shs_pipe_out *out, uint32_t p, uint32_t v,
			 int64_t m)
{
	double state = ev->state_bytes + ev->grads_bytes;
	double act = fmax(0, ev->memory_bytes - state) / ((double)m * p * v);

	ev->pipe.first_memory_bytes = state / p + act * out->peak_chunks[0];
	ev->pipe.last_memory_bytes = state / p + act * out->peak_chunks[p - 1];
	ev->pipe.first_in_flight = out->peak_chunks[0];
	ev->memory_bytes = 0;
	for (uint32_t s = 0; s < p; s++)
		ev->memory_bytes = fmax(ev->memory_bytes, state / p + act * out->peak_chunks[s]);
	ev->state_bytes /= p;
	ev->params_bytes /= p;
	ev->grads_bytes /= p;
	ev->optimizer_bytes /= p;
	ev->fits = ev->memory_bytes <= ev->hbm_bytes;
}

int shs__pipeline_apply(const shs_module *m, const shs_plan *p, const shs_cluster *c,
			const shs_eval_options *o, const shs__spans *spans,
			const shs_weights *w, shs_eval *ev, shs_err *e)
{
	int axis = stage_axis(&c->mesh);
	shs_eval_options none = { 0 };
	parts pt;
	int rc;

	if (axis < 0)
		return SHS_OK;
	o = o ? o : &none;
	uint32_t ps = (uint32_t)c->mesh.sizes[axis], v = o->virtual_stages ? o->virtual_stages : 1;
	int64_t mb = o->microbatches ? o->microbatches : ps;
	if ((rc = split_parts(spans, &pt, e)))
		return rc;
	if (pt.layers % ((int64_t)ps * v))
		return shs_seterr(e, SHS_EINVAL, "pipeline: %lld layers do not split evenly into %u "
				  "stages of %u chunks", (long long)pt.layers, ps, v);
	uint32_t n_virtual = ps * v;
	double *fwd = malloc(3 * n_virtual * sizeof(double));
	if (!fwd)
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	double *bwd = fwd + n_virtual, *send = bwd + n_virtual;
	/* the recomputation and what it exposes run with the backward passes */
	double extra = ev->remat_s + ev->remat_comm_s + ev->offload_exposed_s;
	double rest = fmax(0, ev->step_time_s - spans->end - extra);
	double share = 1.0 / ((double)n_virtual * (double)mb);
	double bytes;
	if ((rc = boundary_bytes(m, p, &c->mesh, w, pt.first, &bytes, e))) {
		free(fwd);
		return rc;
	}
	bytes /= (double)mb;
	double hop = shs_coll_time(c, SHS_PCOLL_PERMUTE, 1u << axis, bytes);
	double acc = accumulation_s(c, o, ev->grads_bytes, mb) / n_virtual;
	for (uint32_t k = 0; k < n_virtual; k++) {
		fwd[k] = pt.fwd * share;
		bwd[k] = (pt.bwd + extra) * share + acc;
		send[k] = hop;
	}
	fwd[0] += pt.pre / (double)mb;
	fwd[n_virtual - 1] += pt.mid / 3 / (double)mb;
	bwd[n_virtual - 1] += 2 * pt.mid / 3 / (double)mb;
	/* the stage axis's collectives block the stream: the sends are synchronous */
	bool blocking = o->no_overlap || (shs__axes_mask(&c->mesh, o->blocking) & (1u << axis));
	shs_pipe_in in = { v > 1 ? SHS_PIPE_INTERLEAVED : o->pipeline, ps, v, (uint32_t)mb, fwd,
			   bwd, send, send, blocking };
	shs_pipe_out out;
	if (mb > UINT32_MAX)
		rc = shs_seterr(e, SHS_EINVAL, "pipeline: %lld micro-batches are too many",
				(long long)mb);
	else
		rc = shs_pipe_simulate(&in, &out, e);
	free(fwd);
	if (rc)
		return rc;
	per_stage(ev, ps);
	ev->pipe = (shs_eval_pipeline){ .stages = ps, .chunks = v, .microbatches = mb,
					.layers_per_stage = (uint32_t)(pt.layers / ps),
					.schedule = in.schedule, .bubble = out.bubble,
					.bubble_s = out.makespan - out.ideal, .p2p_bytes = bytes,
					.p2p_s = hop, .p2p_exposed_s = out.wait_s,
					.stage_post_s = pt.post / ps };
	ev->step_time_s = out.makespan + pt.post / ps + rest;
	ev->exposed_comm_s += out.wait_s;
	ev->exposed_by_axis[axis] += out.wait_s;
	ev->comm_s += hop * 2.0 * (double)mb * v;
	stage_memory(ev, &out, ps, v, mb);
	double peak = c->hw.flops[SHS_HW_BF16];
	ev->mfu = ev->step_time_s > 0 ? ev->model_flops / (ev->step_time_s * peak) : 0;
	ev->hfu = ev->step_time_s > 0 ? ev->flops / (ev->step_time_s * peak) : 0;
	shs_pipe_out_free(&out);
	return SHS_OK;
}
