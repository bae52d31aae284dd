/* The step as an event schedule: one compute stream and one link timeline per mesh axis.
 *
 * Instructions run on the compute stream in program order (loops iteration by iteration, calls
 * inline), each as soon as the stream is free and its operands are ready. A reshard on an
 * operand edge is a collective placed on the links of its axes in their earliest idle time
 * once the operand is ready (evaluate_links.c); a weight's gather may start earlier, as soon as
 * the stream reaches the start of the layer `prefetch_depth` layers before (FSDP prefetch). A
 * value resharded once is reused by the later users that want the same sharding
 * (evaluate_edges.c). A gather into a matmul runs under the matmul when the runtime decomposes
 * it there (from the chip's windowed-einsum size on: collective matmul, the matmul cannot end
 * before it does); other reshards, a weight's prefetched gather among them, make their
 * consumer wait (a Sharding constraint is no work: its users wait for the reshard it asks for). An
 * instruction's own collectives (a partial sum's reduce-scatter or all-reduce) start with it when
 * they are decomposed under a matmul or overlappable, else when it ends; they delay its result,
 * not the stream. All-reduces over the same devices that do not read one another share one
 * latency, as XLA combines them (evaluate_combine.c). In a scanned loop, XLA's collective
 * pipeliner moves a stack's slot write, and the collective that makes its update, into the next
 * trip (shs__sim_lags), and a stacked weight's slice is ready when the weights are, so its gather
 * prefetches across trips. The makespan is the step time; the stream's waits are the
 * exposed communication, charged to the axes and the site of the collective waited for, and
 * so is the links' tail after the stream's last instruction. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate_sim.h"
#include "manual.h"

enum { ISSUE_AHEAD = 64 };

typedef shs__avail avail;
typedef shs__sim sim;

/* A collective being placed, for the timeline: each piece on each of its axes' links. */
typedef struct placing {
	shs_trace *trace;
	shs_trace_event ev;
} placing;

static void trace_piece(void *user, double lo, double hi)
{
	placing *pl = user;

	for (uint32_t a = 0; a < SHS_MESH_MAX_AXES; a++)
		if (pl->ev.axes & (1u << a)) {
			pl->ev.start = lo;
			pl->ev.dur = hi - lo;
			pl->ev.track = a;
			shs_trace_add(pl->trace, &pl->ev);
		}
}

/* Records on the timeline (when kept) a slice of the stream: kind, from start for dur
 * seconds, at instruction i of computation c (a wait: the collective's site, axis). */
static void trace_stream(const sim *s, shs_trace_kind kind, double start, double dur,
			 uint32_t c, uint32_t i, uint32_t axis)
{
	shs_trace_event ev = { .start = start, .dur = dur, .comp = c, .instr = i, .track = axis,
			       .kind = kind };

	if (s->trace && dur > 0)
		shs_trace_add(s->trace, &ev);
}

avail shs__sim_collective(sim *s, int kind, uint32_t mask, double v, double sends, double t,
			  uint32_t c, uint32_t i)
{
	return shs__sim_place(s, kind, mask, v, shs_coll_time(s->c, kind, mask, v) * sends, t, c, i);
}

avail shs__sim_place(sim *s, int kind, uint32_t mask, double v, double dur, double t,
		     uint32_t c, uint32_t i)
{
	placing pl = { .trace = s->trace, .ev = { .bytes = v, .comp = c, .instr = i, .axes = mask,
						  .coll = kind, .kind = SHS_TRACE_COLL } };
	avail out = { .t = t, .mask = mask, .comp = c, .instr = i };
	uint32_t blocker = SHS_MESH_MAX_AXES;

	if (s->recording && t < s->min_start)
		s->min_start = t;

	if (s->rc == SHS_OK && shs__links_place(s->link, s->c->mesh.n_axes, mask, t, dur, &out.t,
						&blocker, s->trace ? trace_piece : NULL,
						&pl) != SHS_OK)
		s->rc = shs_seterr(s->e, SHS_ENOMEM, "evaluate: out of memory");
	out.axis = shs__wait_axis(s->c, kind, mask, v, blocker);
	if (out.t > s->tail.t)
		s->tail = out;
	return out;
}

/* Charges w seconds of waiting to the one axis whose link the stream waited on and to the site
 * of collective a (and records it while a loop trip is recorded). A wait is booked once: a
 * collective over two axes does not expose its wait twice. */
static void charge(sim *s, const avail *a, double w)
{
	if (!a->mask || !(w > 0))
		return;
	if (a->axis < s->c->mesh.n_axes)
		s->exposed[a->axis] += w;
	s->waits[a->comp][a->instr] += w;
	if (!s->recording)
		return;
	if (s->n_log == s->cap_log) {
		uint32_t cap = s->cap_log ? 2 * s->cap_log : 64;
		shs__charge *grown = realloc(s->log, cap * sizeof(*grown));
		if (!grown) {
			s->rc = shs_seterr(s->e, SHS_ENOMEM, "evaluate: out of memory");
			return;
		}
		s->log = grown;
		s->cap_log = cap;
	}
	s->log[s->n_log++] = (shs__charge){ a->comp, a->instr, w };
}

/* Waits the stream until a is usable. */
static void wait_for(sim *s, const avail *a)
{
	if (a->t <= s->now)
		return;
	if (a->mask)
		trace_stream(s, SHS_TRACE_WAIT, s->now, a->t - s->now, a->comp, a->instr, a->axis);
	charge(s, a, a->t - s->now);
	s->now = a->t;
}

static void later(avail *a, const avail *b)
{
	if (b->t > a->t)
		*a = *b;
}

/* How many views (slices, reshapes, conversions) a prefetchable value may be of its source. */
enum { VIEW_HOPS = 8 };

/* Whether value v of computation c is known before the layer that reads it runs: a weight, or
 * in a loop body a view of an element the body gives back as it got it (loop-invariant: the
 * stacks of saved activations a backward loop reads). XLA's collective pipeliner moves the
 * all-gather of a dynamic slice of such an element into the trip before, as for a stacked
 * weight, so its gathers prefetch as a weight's do. */
static bool prefetchable(const sim *s, uint32_t c, uint32_t v)
{
	const shs_computation *body = s->m->comps[c];

	if (shs_is_weight(s->edges->weights, c, v))
		return true;
	if (!s->edges->loop_body[c])
		return false;
	for (uint32_t hop = 0; hop < VIEW_HOPS; hop++) {
		const shs_instr *in = body->instrs[v];
		if (in->op == SHS_OP_GET_TUPLE_ELEMENT)
			return body->instrs[in->operands[0]]->op == SHS_OP_PARAMETER &&
			       shs_while_keeps(body, in->tuple_index);
		if (!in->n_operands || (in->op != SHS_OP_DYNAMIC_SLICE && in->op != SHS_OP_RESHAPE &&
					in->op != SHS_OP_BITCAST && in->op != SHS_OP_CONVERT &&
					in->op != SHS_OP_COPY))
			return false;
		v = in->operands[0];
	}
	return false;
}

/* Places the reshard of operand k of instruction i on the links once the operand is ready:
 * s->edge[c][f] when the copy is usable, s->floor[c][f] when the matmul it runs under (a gather
 * into a matmul) may end at the earliest. */
static void issue_edge(sim *s, uint32_t c, uint32_t i, uint32_t k)
{
	const shs_computation *comp = s->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	const shs_decision *d = &s->p->d[c][i], *od = &s->p->d[c][in->operands[k]];
	uint32_t f = s->edges->base[c][i] + k;
	avail r = s->ready[c][in->operands[k]], made = r, matmul_end = { 0 };
	bool matmul = in->op == SHS_OP_DOT || in->op == SHS_OP_CONVOLUTION;
	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	uint32_t n = 0;

	if (d->set && d->n_req && od->set)
		n = shs_shape_leaf_list(&comp->instrs[in->operands[k]]->shape, shapes,
					SHS_MAX_VALUE_LEAVES);
	for (uint32_t j = 0; j < n && j < od->n_leaves && d->req_first[k] + j < d->n_req; j++) {
		uint32_t gathered, moved;
		double local = shs__reshard_masks(&s->c->mesh, shapes[j], &od->leaves[j],
						  &d->req[d->req_first[k] + j], &gathered, &moved);
		avail end = r;
		bool weight = prefetchable(s, c, in->operands[k]), under = false;
		if (gathered) {
			double t = r.t, v = local * (double)shs_mesh_group(&s->c->mesh, gathered);
			/* the matmul runs under its gather only where the runtime decomposes it
			 * (collective matmul); else it waits for the gather's end, as XLA orders an
			 * all-gather before the dot that reads it */
			under = !(gathered & s->blocking) && shs__collective_matmul(&s->c->hw, v);
			/* a weight is ready from the start: its gather waits only for the prefetch
			 * window, the start of the layer `depth` layers back (so a layer's gathers hide
			 * under the layers before it, and the first layer's are exposed) */
			if (weight) {
				double window = s->layer_start[s->depth < SHS__MAX_LAYERS_BACK ?
							       s->depth : SHS__MAX_LAYERS_BACK - 1];
				t = window > r.t ? window : r.t;
			}
			if (gathered & s->blocking) /* a synchronous call, where the stream is */
				t = t > s->now ? t : s->now;
			end = shs__sim_collective(s, SHS_PCOLL_ALL_GATHER, gathered, v, 1, t, c, i);
		}
		if (moved)
			end = shs__sim_collective(s, SHS_PCOLL_ALL_TO_ALL, moved,
					 local * (double)shs_mesh_group(&s->c->mesh, moved), 1,
					 (moved & s->blocking) && s->now > end.t ? s->now : end.t,
					 c, i);
		if (matmul && !moved && under)
			later(&matmul_end, &end);
		else
			later(&made, &end);
	}
	s->edge[c][f] = made;
	s->floor[c][f] = matmul_end;
	s->issued[c][f] = s->stamp[c];
}

/* Whether the reshard of operand k of instruction i runs over an axis whose collectives block
 * the stream (shs_eval_options.blocking). */
static bool edge_blocks(const sim *s, uint32_t c, uint32_t i, uint32_t k)
{
	const shs_instr *in = s->m->comps[c]->instrs[i];
	const shs_decision *d = &s->p->d[c][i], *od = &s->p->d[c][in->operands[k]];
	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	uint32_t n = 0;

	if (!s->blocking || !d->set || !d->n_req || !od->set)
		return false;
	n = shs_shape_leaf_list(&s->m->comps[c]->instrs[in->operands[k]]->shape, shapes,
				SHS_MAX_VALUE_LEAVES);
	for (uint32_t j = 0; j < n && j < od->n_leaves && d->req_first[k] + j < d->n_req; j++) {
		uint32_t gathered, moved;
		shs__reshard_masks(&s->c->mesh, shapes[j], &od->leaves[j],
				   &d->req[d->req_first[k] + j], &gathered, &moved);
		if ((gathered | moved) & s->blocking)
			return true;
	}
	return false;
}

/* Issues the reshards of value v's uses up to ISSUE_AHEAD instructions ahead as soon as v is
 * ready, as a latency-hiding scheduler starts them: before collectives that later
 * instructions start. A weight's gathers wait for their prefetch window instead, and a
 * blocking axis's reshards for their consumer (a synchronous call). */
static void issue_uses(sim *s, uint32_t c, uint32_t v)
{
	const shs__edges *x = s->edges;

	if (prefetchable(s, c, v))
		return;
	for (uint32_t u = x->use_first[c][v]; u < x->use_first[c][v + 1]; u++) {
		uint32_t f = x->use_edge[c][u], i = x->consumer[c][f];
		if (i > v + ISSUE_AHEAD)
			break;
		if (x->first[c][f] == SHS__EDGE_NEW && s->issued[c][f] != s->stamp[c] &&
		    !edge_blocks(s, c, i, f - x->base[c][i]))
			issue_edge(s, c, i, f - x->base[c][i]);
	}
}

/* Operand k of instruction i as i needs it: when it is usable, after its reshards; a gather
 * into a matmul instead raises *floor, when the matmul may end at the earliest. */
static avail operand_ready(sim *s, uint32_t c, uint32_t i, uint32_t k, avail *floor)
{
	uint32_t f = s->edges->base[c][i] + k, first = s->edges->first[c][f];
	avail r = s->ready[c][s->m->comps[c]->instrs[i]->operands[k]];

	if (first == SHS__EDGE_NONE)
		return r;
	if (first != SHS__EDGE_NEW) {
		/* an earlier user made this copy */
		later(&r, &s->edge[c][first]);
		later(&r, &s->floor[c][first]);
		return r;
	}
	if (s->issued[c][f] != s->stamp[c])
		issue_edge(s, c, i, k);
	later(floor, &s->floor[c][f]);
	return s->edge[c][f];
}

/* Whether instruction i of loop body c only slices, reshapes or converts a weight (a stacked
 * weight's layer), with no collective of its own. */
static bool weight_view(const sim *s, uint32_t c, uint32_t i)
{
	const shs_instr *in = s->m->comps[c]->instrs[i];

	return s->edges->loop_body[c] && prefetchable(s, c, i) &&
	       !s->p->d[c][i].n_colls &&
	       (in->op == SHS_OP_DYNAMIC_SLICE || in->op == SHS_OP_RESHAPE ||
		in->op == SHS_OP_BITCAST || in->op == SHS_OP_CONVERT || in->op == SHS_OP_COPY ||
		shs_is_sharding_constraint(in));
}

/* One instruction on the stream, with its reshards and its own collectives. */
static void step_instr(sim *s, uint32_t c, uint32_t i)
{
	const shs_computation *comp = s->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	const shs_decision *d = &s->p->d[c][i];
	bool matmul = in->op == SHS_OP_DOT || in->op == SHS_OP_CONVOLUTION;
	double tf = s->flop_s[c][i], end, tb;
	avail need = { 0 }, floor = { 0 }, lagging = { 0 }, sync = { 0 }, first = { 0 };
	avail *ready = &s->ready[c][i];
	uint32_t elem;

	tb = s->hbm_s[c][i];
	for (uint32_t k = 0; k < in->n_operands; k++) {
		avail r = operand_ready(s, c, i, k, &floor);
		if (k == 0)
			first = r;
		if (((k == 1 && shs__sim_lags(s, c, i, &elem)) ||
		     (s->lag_chain[c] && s->lag_chain[c][i])))
			later(&lagging, &r); /* the pipeliner's: the next trip waits */
		else
			later(&need, &r);
	}
	if (weight_view(s, c, i)) {
		/* a slice of a stacked weight (or its reshape or convert) is ready when the
		 * weights are, whatever the trip's index: its gather can be prefetched into the
		 * trips before (XLA's collective pipeliner, backward, for all-gathers), as the
		 * unrolled layers' weights are ready from the start */
		trace_stream(s, SHS_TRACE_RUN, s->now, tf > tb ? tf : tb, c, i, 0);
		s->now += tf > tb ? tf : tb;
		*ready = first;
		return;
	}
	if (shs_is_sharding_constraint(in) || (tf <= 0 && tb <= 0 && !d->n_colls)) {
		/* the partitioner removes a constraint, and an instruction that does no work of
		 * its own (a bitcast, a value fused into its users) runs no kernel: its users, not
		 * the stream, wait for the reshard it asks for, as XLA's scheduler places the
		 * collective's end at the first kernel that reads it */
		*ready = need;
		later(ready, &lagging);
		later(ready, &floor);
		return;
	}
	wait_for(s, &need);
	end = s->now + (tf > tb ? tf : tb);
	trace_stream(s, SHS_TRACE_RUN, s->now, end - s->now, c, i, 0);
	if (floor.t > end) {
		/* the matmul waits for the gather it overlaps */
		trace_stream(s, SHS_TRACE_WAIT, end, floor.t - end, floor.comp, floor.instr,
			     floor.axis);
		charge(s, &floor, floor.t - end);
		end = floor.t;
	}
	*ready = (avail){ .t = end, .comp = c, .instr = i };
	later(ready, &lagging);
	for (uint32_t k = 0; k < d->n_colls; k++) {
		const shs_coll *cl = &d->colls[k];
		double sends, v = shs__own_coll_bytes(&s->c->mesh, cl, &sends);
		avail done;
		if (shs__sunk(s->sunk, c, i, cl))
			continue; /* after the loop (shs__sim_loop) */
		bool blocks = cl->axes_mask & s->blocking;
		/* a synchronous call runs alone; else XLA may combine it (evaluate_combine.c) */
		double dur = blocks ? shs_coll_time(s->c, cl->kind, cl->axes_mask, v) :
				      shs__combine_time(s, c, i, cl, v);
		done = shs__sim_place(s, cl->kind, cl->axes_mask, v, dur * sends,
				      !blocks && shs__own_overlapped(&s->c->hw, matmul, cl, v) ?
					      s->now : end, c, i);
		/* a ring's last block of work starts when its last send has arrived */
		if (sends > 1 && !blocks)
			done.t += (end - s->now) / (sends + 1);
		later(ready, &done);
		if (blocks)
			later(&sync, &done); /* a synchronous call: the stream waits for it */
	}
	s->now = end;
	wait_for(s, &sync);
}

/* A loop body's root tuple: the carry in the shardings the next iteration reads; a stack
 * whose write lags the trip (shs__sim_lags) goes to the next trip's lag instead. */
static void step_carry(sim *s, uint32_t c, uint32_t i)
{
	const shs_instr *in = s->m->comps[c]->instrs[i];
	avail floor = { 0 }, *ready = &s->ready[c][i];
	uint32_t elem;

	*ready = (avail){ 0 };
	for (uint32_t k = 0; k < in->n_operands; k++) {
		avail r = operand_ready(s, c, i, k, &floor);
		if (s->lag_next && s->lag_next[c] && shs__sim_lags(s, c, in->operands[k], &elem) &&
		    elem == k)
			s->lag_next[c][k] = r;
		else
			later(ready, &r);
	}
	later(ready, &floor);
}

bool shs__sim_lags(const shs__sim *s, uint32_t c, uint32_t i, uint32_t *k)
{
	const shs_computation *body = s->m->comps[c];
	const shs_instr *in = body->instrs[i], *root = body->instrs[body->root], *g;

	if (!s->lag || !s->lag[c] || in->op != SHS_OP_DYNAMIC_UPDATE_SLICE || in->n_operands < 2 ||
	    root->op != SHS_OP_TUPLE)
		return false;
	g = body->instrs[in->operands[0]];
	if (g->op != SHS_OP_GET_TUPLE_ELEMENT || g->n_operands != 1 || g->tuple_index < 0 ||
	    (uint64_t)g->tuple_index >= root->n_operands ||
	    root->operands[g->tuple_index] != i ||
	    body->instrs[g->operands[0]]->op != SHS_OP_PARAMETER)
		return false;
	*k = (uint32_t)g->tuple_index;
	return true;
}

void shs__sim_layer_starts(sim *s)
{
	memmove(&s->layer_start[1], &s->layer_start[0],
		(SHS__MAX_LAYERS_BACK - 1) * sizeof(s->layer_start[0]));
	s->layer_start[0] = s->now;
}

shs__avail shs__sim_max_ready(const sim *s, uint32_t c, const shs_instr *in)
{
	avail r = { 0 };

	for (uint32_t k = 0; k < in->n_operands; k++)
		later(&r, &s->ready[c][in->operands[k]]);
	return r;
}

/* A tuple element: ready when the element is, for a tuple or a call's result (the callee has
 * just run: its root's ready times are its last run's) or a loop body's lagging stack; else
 * when the whole is. */
static avail element_ready(const sim *s, uint32_t c, const shs_instr *in)
{
	const shs_instr *t = s->m->comps[c]->instrs[in->operands[0]];

	if (t->op == SHS_OP_PARAMETER && s->lag && s->lag[c] && in->tuple_index >= 0 &&
	    (uint64_t)in->tuple_index < t->shape.n_tuple &&
	    s->lag[c][in->tuple_index].t > -INFINITY)
		return s->lag[c][in->tuple_index];

	if (t->op == SHS_OP_TUPLE && in->tuple_index < t->n_operands)
		return s->ready[c][t->operands[in->tuple_index]];
	if (t->op == SHS_OP_CALL && t->n_called) {
		uint32_t callee = t->called[0];
		const shs_instr *root = s->m->comps[callee]->instrs[s->m->comps[callee]->root];
		if (root->op == SHS_OP_TUPLE && in->tuple_index < root->n_operands)
			return s->ready[callee][root->operands[in->tuple_index]];
	}
	return shs__sim_max_ready(s, c, in);
}

static void flow(sim *s, uint32_t c, uint32_t i, uint32_t depth)
{
	const shs_computation *comp = s->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	avail *argv;

	switch (in->op) {
	case SHS_OP_WHILE:
		shs__sim_loop(s, c, i, depth);
		return;
	default: /* call, conditional: the first callee inline */
		argv = malloc((in->n_operands + 1) * sizeof(*argv));
		if (!argv) {
			s->rc = shs_seterr(s->e, SHS_ENOMEM, "evaluate: out of memory");
			return;
		}
		for (uint32_t k = 0; k < in->n_operands; k++)
			argv[k] = s->ready[c][in->operands[k]];
		/* a layer starts at each call, but in a loop body at each trip (shs__sim_loop):
		 * a scanned layer called from its body is one layer, not two */
		if (!s->edges->loop_body[c])
			shs__sim_layer_starts(s);
		shs__sim_run(s, in->called[0], argv + (in->op == SHS_OP_CONDITIONAL),
		    in->n_operands - (in->op == SHS_OP_CONDITIONAL), depth + 1);
		s->ready[c][i] = s->ready[in->called[0]][s->m->comps[in->called[0]]->root];
		free(argv);
	}
}

void shs__sim_run(sim *s, uint32_t c, const avail *args, uint32_t n_args, uint32_t depth)
{
	const shs_computation *comp = s->m->comps[c];

	if (depth > SHS_MAX_CALL_DEPTH || s->rc != SHS_OK)
		return;
	s->stamp[c]++;
	for (uint32_t i = 0; i < comp->n_instrs && s->rc == SHS_OK; i++) {
		const shs_instr *in = comp->instrs[i];
		if (s->trace && depth == 0 && c == s->m->entry && s->trace->entry_at)
			s->trace->entry_at[i] = s->now;
		shs__combine_mark(s, c, i);
		switch (in->op) {
		case SHS_OP_PARAMETER:
			s->ready[c][i] = in->parameter_number < n_args ?
						 args[in->parameter_number] : (avail){ 0 };
			break;
		case SHS_OP_TUPLE:
			if (shs__reshards_at(s->edges, comp, c, i))
				step_carry(s, c, i);
			else
				s->ready[c][i] = shs__sim_max_ready(s, c, in);
			break;
		case SHS_OP_GET_TUPLE_ELEMENT:
			s->ready[c][i] = element_ready(s, c, in);
			break;
		case SHS_OP_WHILE: case SHS_OP_CALL: case SHS_OP_CONDITIONAL: {
			double start = s->now;
			int64_t layers;
			if (in->n_called)
				flow(s, c, i, depth);
			if (s->spans && depth == 0 && c == s->m->entry &&
			    shs__layer_segment(s->m, i, &layers))
				shs__spans_add(s->spans, i, layers, start, s->now);
			break;
		}
		default:
			step_instr(s, c, i);
		}
		issue_uses(s, c, i);
	}
}

/* Splits each instruction's waits over its collective sites in ev->colls, by their times. */
static int site_exposure(const sim *s, shs_eval *ev, shs_err *e)
{
	double **total = calloc(s->m->n_comps + 1, sizeof(*total));
	int rc = SHS_OK;

	for (uint32_t k = 0; total && k < s->m->n_comps && rc == SHS_OK; k++)
		if (!(total[k] = calloc(s->m->comps[k]->n_instrs + 1, sizeof(double))))
			rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	if (!total)
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	for (uint32_t k = 0; rc == SHS_OK && k < ev->n_colls; k++)
		total[ev->colls[k].comp][ev->colls[k].instr] += ev->colls[k].time_s;
	for (uint32_t k = 0; rc == SHS_OK && k < ev->n_colls; k++) {
		shs_eval_coll *site = &ev->colls[k];
		double t = total[site->comp][site->instr];
		site->exposed_s = t > 0 ? s->waits[site->comp][site->instr] * site->time_s / t : 0;
	}
	for (uint32_t k = 0; total && k < s->m->n_comps; k++)
		free(total[k]);
	free(total);
	return rc;
}

/* Starts the timeline t for the schedule: emptied, with a sample slot per entry instruction. */
static int trace_open(sim *s, shs_trace *t, shs_err *e)
{
	uint32_t n = s->m->comps[s->m->entry]->n_instrs;

	shs_trace_reset(t);
	free(t->entry_at);
	free(t->entry_live);
	t->entry_at = calloc(n + 1, sizeof(*t->entry_at));
	t->entry_live = calloc(n + 1, sizeof(*t->entry_live));
	if (!t->entry_at || !t->entry_live)
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	t->n_entry = n;
	s->trace = t;
	return SHS_OK;
}

int shs__eval_events(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		     const shs_eval_options *o, double *const *hbm_s, double *const *flop_s,
		     const shs__edges *edges, bool *const *sunk, shs__spans *spans, shs_eval *ev,
		     shs_err *e)
{
	sim s = { .m = m, .p = p, .c = c, .e = e, .hbm_s = hbm_s, .flop_s = flop_s, .edges = edges,
		  .sunk = sunk, .spans = spans };
	double end;
	int rc = SHS_OK;

	s.depth = o && o->prefetch_depth ? o->prefetch_depth : 1;
	s.every_trip = o && o->every_trip;
	s.blocking = o ? shs__axes_mask(&c->mesh, o->blocking) : 0;
	s.ready = (avail **)shs__per_instr(m, sizeof(avail), false, edges);
	s.edge = (avail **)shs__per_instr(m, sizeof(avail), true, edges);
	s.floor = (avail **)shs__per_instr(m, sizeof(avail), true, edges);
	s.issued = (uint32_t **)shs__per_instr(m, sizeof(uint32_t), true, edges);
	s.waits = (double **)shs__per_instr(m, sizeof(double), false, edges);
	s.after_reduce = (uint32_t **)shs__per_instr(m, sizeof(uint32_t), false, edges);
	s.stamp = calloc(m->n_comps + 1, sizeof(*s.stamp));
	s.lag = calloc(m->n_comps + 1, sizeof(*s.lag));
	s.lag_next = calloc(m->n_comps + 1, sizeof(*s.lag_next));
	s.lag_chain = calloc(m->n_comps + 1, sizeof(*s.lag_chain));
	if (!s.ready || !s.edge || !s.floor || !s.issued || !s.waits || !s.after_reduce ||
	    !s.stamp || !s.lag || !s.lag_next || !s.lag_chain)
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	if (spans)
		spans->n = 0;
	if (rc == SHS_OK && o && o->trace)
		rc = trace_open(&s, o->trace, e);
	if (rc == SHS_OK) {
		shs__sim_run(&s, m->entry, NULL, 0, 0);
		rc = s.rc;
	}
	if (rc == SHS_OK && s.trace && s.trace->rc)
		rc = shs_seterr(e, s.trace->rc, "evaluate: out of memory");
	if (rc == SHS_OK && spans && spans->rc)
		rc = shs_seterr(e, spans->rc, "evaluate: out of memory");
	if (rc == SHS_OK) {
		/* the links' tail after the stream's last instruction is exposed too */
		end = s.now;
		if (s.tail.t > end) {
			trace_stream(&s, SHS_TRACE_WAIT, end, s.tail.t - end, s.tail.comp,
				     s.tail.instr, s.tail.axis);
			charge(&s, &s.tail, s.tail.t - end);
			end = s.tail.t;
		}
		/* the exposure is the stream's waits, booked one axis each: summed from them it
		 * is never negative (step time - compute time, two sums of the same compute in
		 * different orders, can be -1e-10 s) */
		ev->exposed_comm_s = 0;
		for (uint32_t a = 0; a < c->mesh.n_axes; a++) {
			ev->exposed_by_axis[a] = s.exposed[a];
			ev->exposed_comm_s += s.exposed[a];
		}
		ev->step_time_s = end + ev->remat_s;
		if (spans)
			spans->end = end;
		if (s.trace)
			shs_trace_end_stream(s.trace, end);
		ev->trips_skipped = s.skipped;
		rc = site_exposure(&s, ev, e);
	}
	for (uint32_t a = 0; a < SHS_MESH_MAX_AXES; a++)
		shs__link_free(&s.link[a]);
	shs__per_instr_free(m, (void **)s.ready);
	shs__per_instr_free(m, (void **)s.edge);
	shs__per_instr_free(m, (void **)s.waits);
	shs__per_instr_free(m, (void **)s.after_reduce);
	shs__per_instr_free(m, (void **)s.floor);
	shs__per_instr_free(m, (void **)s.issued);
	free(s.stamp);
	free(s.lag);
	free(s.lag_next);
	free(s.lag_chain);
	free(s.log);
	return rc;
}
