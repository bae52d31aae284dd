/* Pipeline schedules: each device's order of passes, simulated over stages and transfer links.
 *
 * The orders are Megatron-LM's (megatron/schedules.py at the sc21 commit de7dc40f88 and since:
 * forward_backward_pipelining_without_interleaving and ..._with_interleaving, whose
 * get_model_chunk_id maps the k-th pass of a device to its chunk), GPipe's every forward then
 * every backward. A pass starts when its device is free and its input has arrived: a forward's
 * activation from the virtual stage before, a backward's gradient from the one after (the last
 * virtual stage's backward follows its own forward). A transfer starts when its pass ends and
 * its link (one per boundary and direction) is free; a synchronous send (blocking) keeps its
 * device until it has gone. The bubble is then what the makespan adds to the busiest device's
 * compute: (p - 1) / (m v) for uniform stages and free transfers, as the schedule gives it, not
 * as a formula. In lockstep (XLA's SPMD pipeline, as MaxText's pipeline.py lowers it: one
 * program, a loop of m + p - 1 trips forward and as many back) every device runs each trip, the
 * trip ends with a collective-permute of every device's activation that the next trip reads,
 * and the trip lasts its slowest pass plus that transfer: nothing hides the transfers (unless
 * the program delays them by a trip: MaxText's pipeline_delay_activation_forwarding, off by
 * default). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline.h"

static const char *const names[SHS_PIPE_COUNT] = { "1f1b", "gpipe", "interleaved" };

const char *shs_pipe_schedule_name(shs_pipe_schedule s)
{
	return (unsigned)s < SHS_PIPE_COUNT ? names[s] : "?";
}

bool shs_pipe_schedule_from_name(const char *name, shs_pipe_schedule *out)
{
	for (int s = 0; s < SHS_PIPE_COUNT; s++)
		if (!strcmp(name, names[s])) {
			*out = (shs_pipe_schedule)s;
			return true;
		}
	return false;
}

/* One pass of a device: a forward or backward of one micro-batch through one of its chunks. */
typedef struct pass {
	bool bwd;
	uint32_t chunk, mb;
} pass;

/* The simulation's state: per virtual stage k and micro-batch j (index k m + j). */
typedef struct pipe {
	const shs_pipe_in *in;
	uint32_t p, v, m, n_virtual;
	pass **order;        /* per device: its 2 m v passes in the order it runs them */
	double *f_end, *b_end; /* when each pass ended (-1: not yet) */
	double *f_in, *b_in; /* when each pass's input arrives (-1: not yet) */
	double *link_f, *link_b; /* per boundary: when its link is free */
} pipe;

/* The k-th forward (bwd: backward) pass of device s under the interleaved schedule. */
static pass interleaved_pass(const pipe *q, uint32_t k, bool bwd)
{
	uint32_t group = q->p * q->v, chunk = (k % group) / q->p;
	pass r = { bwd, bwd ? q->v - 1 - chunk : chunk, (k / group) * q->p + k % q->p };
	return r;
}

/* Fills device s's order. */
static void make_order(const pipe *q, uint32_t s, pass *o)
{
	uint32_t total = q->m * q->v, n = 0, warm;
	shs_pipe_schedule kind = q->in->schedule;

	if (kind == SHS_PIPE_INTERLEAVED && q->v == 1)
		kind = SHS_PIPE_1F1B;
	if (kind == SHS_PIPE_GPIPE) {
		for (uint32_t j = 0; j < q->m; j++)
			o[n++] = (pass){ false, 0, j };
		for (uint32_t j = 0; j < q->m; j++)
			o[n++] = (pass){ true, 0, j };
		return;
	}
	if (kind == SHS_PIPE_1F1B)
		warm = q->p - s - 1 < q->m ? q->p - s - 1 : q->m;
	else if (q->m == q->p) /* Megatron-LM: every forward first when m = p */
		warm = total;
	else
		warm = (q->p - s - 1) * 2 + (q->v - 1) * q->p < total ?
			       (q->p - s - 1) * 2 + (q->v - 1) * q->p : total;
	for (uint32_t k = 0; k < total; k++) { /* past the warm-up, a backward after each forward */
		o[n++] = kind == SHS_PIPE_1F1B ? (pass){ false, 0, k } :
						 interleaved_pass(q, k, false);
		if (k >= warm)
			o[n++] = kind == SHS_PIPE_1F1B ? (pass){ true, 0, k - warm } :
							 interleaved_pass(q, k - warm, true);
	}
	for (uint32_t k = total - warm; k < total; k++)
		o[n++] = kind == SHS_PIPE_1F1B ? (pass){ true, 0, k } :
						 interleaved_pass(q, k, true);
}

/* Time of the transfer over boundary k (arr: send_fwd or send_bwd; NULL: free). */
static double send_time(const double *arr, uint32_t k)
{
	return arr ? arr[k] : 0;
}

/* Records on in's trace (when kept) a pass or transfer of micro-batch x on stage s. */
static void trace_slice(const shs_pipe_in *in, shs_trace_kind kind, pass x, uint32_t s,
			double start, double dur)
{
	shs_trace_event ev = { .start = start, .dur = dur, .comp = x.mb, .instr = x.chunk,
			       .track = s, .coll = x.bwd, .kind = kind,
			       .bytes = kind == SHS_TRACE_SEND ? in->send_bytes : 0 };

	if (in->trace)
		shs_trace_add(in->trace, &ev);
}

/* Runs device s's next pass x if its input is there, starting at *now; true when it ran. */
static bool try_run(pipe *q, uint32_t s, pass x, double *now, double *took)
{
	const shs_pipe_in *in = q->in;
	uint32_t k = x.chunk * q->p + s, at = k * q->m + x.mb;
	double ready = x.bwd ? q->b_in[at] : q->f_in[at];

	if (ready < 0 || (x.bwd && q->f_end[at] < 0))
		return false;
	double start = fmax(*now, ready), dur = x.bwd ? in->bwd[k] : in->fwd[k];
	double end = start + dur;
	*now = end;
	*took = dur;
	trace_slice(in, SHS_TRACE_PASS, x, s, start, dur);
	if (!x.bwd) {
		q->f_end[at] = end;
		if (k + 1 < q->n_virtual) { /* the activation goes on to the next virtual stage */
			double go = fmax(end, q->link_f[k]);
			q->link_f[k] = go + send_time(in->send_fwd, k);
			trace_slice(in, SHS_TRACE_SEND, x, s, go, send_time(in->send_fwd, k));
			q->f_in[at + q->m] = q->link_f[k];
			if (in->blocking)
				*now = q->link_f[k];
		} else {
			q->b_in[at] = end;
		}
	} else {
		q->b_end[at] = end;
		if (k > 0) { /* the gradient goes back to the virtual stage before */
			double go = fmax(end, q->link_b[k - 1]);
			q->link_b[k - 1] = go + send_time(in->send_bwd, k - 1);
			trace_slice(in, SHS_TRACE_SEND, x, s, go, send_time(in->send_bwd, k - 1));
			q->b_in[at - q->m] = q->link_b[k - 1];
			if (in->blocking)
				*now = q->link_b[k - 1];
		}
	}
	return true;
}

static void pipe_free(pipe *q)
{
	if (q->order)
		for (uint32_t s = 0; s < q->p; s++)
			free(q->order[s]);
	free(q->order);
	free(q->f_end);
	free(q->b_end);
	free(q->f_in);
	free(q->b_in);
	free(q->link_f);
	free(q->link_b);
}

/* One run of the schedule into out (its arrays allocated by the caller). */
static int run(pipe *q, shs_pipe_out *out, shs_err *e)
{
	uint32_t n = q->n_virtual * q->m, per = 2 * q->m * q->v;
	uint32_t *cursor = calloc(q->p, sizeof(*cursor));
	double *now = calloc(q->p, sizeof(*now));

	if (!cursor || !now) {
		free(cursor);
		free(now);
		return shs_seterr(e, SHS_ENOMEM, "pipeline: out of memory");
	}
	for (uint32_t i = 0; i < n; i++)
		q->f_end[i] = q->b_end[i] = q->f_in[i] = q->b_in[i] = -1;
	for (uint32_t j = 0; j < q->m; j++)
		q->f_in[j] = 0;
	for (uint32_t k = 0; k + 1 < q->n_virtual; k++)
		q->link_f[k] = q->link_b[k] = 0;
	uint32_t left = q->p * per;
	while (left) {
		uint32_t ran = 0;
		for (uint32_t s = 0; s < q->p; s++) {
			double took;
			while (cursor[s] < per &&
			       try_run(q, s, q->order[s][cursor[s]], &now[s], &took)) {
				if (q->order[s][cursor[s]].bwd)
					out->last_bwd[s] = took;
				cursor[s]++;
				ran++;
			}
		}
		if (!ran)
			break;
		left -= ran;
	}
	free(cursor);
	if (left) {
		free(now);
		return shs_seterr(e, SHS_EINVAL, "pipeline: the %s schedule deadlocks with %u "
				  "stages, %u chunks and %u micro-batches",
				  shs_pipe_schedule_name(q->in->schedule), q->p, q->v, q->m);
	}
	out->makespan = 0;
	for (uint32_t s = 0; s < q->p; s++) {
		out->end[s] = now[s];
		out->makespan = fmax(out->makespan, now[s]);
	}
	free(now);
	return SHS_OK;
}

/* One lockstep run (in->lockstep, GPipe) into out: trip r of the forward loop runs micro-batch
 * r - s on device s, trip r of the backward loop micro-batch r - (p - 1 - s), where that is one
 * of the m (the other devices compute on zeros, as long as a pass). SHS_OK. */
static int run_lockstep(const pipe *q, shs_pipe_out *out)
{
	const shs_pipe_in *in = q->in;
	uint32_t trips = q->m + q->p - 1;
	double slowest[2] = { 0, 0 }, hop[2] = { 0, 0 }, now = 0;

	for (uint32_t s = 0; s < q->p; s++) {
		slowest[0] = fmax(slowest[0], in->fwd[s]);
		slowest[1] = fmax(slowest[1], in->bwd[s]);
	}
	for (uint32_t k = 0; k + 1 < q->p; k++) {
		hop[0] = fmax(hop[0], send_time(in->send_fwd, k));
		hop[1] = fmax(hop[1], send_time(in->send_bwd, k));
	}
	for (uint32_t t = 0; t < 2 * trips; t++) {
		bool bwd = t >= trips;
		uint32_t r = bwd ? t - trips : t;
		for (uint32_t s = 0; s < q->p; s++) {
			uint32_t behind = bwd ? q->p - 1 - s : s;
			if (r < behind || r - behind >= q->m)
				continue;
			pass x = { bwd, 0, r - behind };
			double dur = bwd ? in->bwd[s] : in->fwd[s];
			trace_slice(in, SHS_TRACE_PASS, x, s, now, dur);
			if (q->p > 1 && (bwd ? s > 0 : s + 1 < q->p))
				trace_slice(in, SHS_TRACE_SEND, x, s, now + slowest[bwd], hop[bwd]);
			if (bwd) {
				out->end[s] = now + dur;
				out->last_bwd[s] = dur;
			}
		}
		now += slowest[bwd] + (q->p > 1 ? hop[bwd] : 0);
	}
	out->makespan = now;
	return SHS_OK;
}

/* The inputs' problem, or SHS_OK. */
static int check(const shs_pipe_in *in, shs_err *e)
{
	if ((unsigned)in->schedule >= SHS_PIPE_COUNT)
		return shs_seterr(e, SHS_EINVAL, "pipeline: unknown schedule %d", in->schedule);
	if (!in->stages || !in->chunks || !in->microbatches)
		return shs_seterr(e, SHS_EINVAL, "pipeline: %u stages, %u chunks and %u "
				  "micro-batches: each must be at least 1", in->stages, in->chunks,
				  in->microbatches);
	if (in->chunks > 1 && in->schedule != SHS_PIPE_INTERLEAVED)
		return shs_seterr(e, SHS_EINVAL, "pipeline: %u chunks per device need the "
				  "interleaved schedule, not %s", in->chunks,
				  shs_pipe_schedule_name(in->schedule));
	if (in->lockstep && in->schedule != SHS_PIPE_GPIPE)
		return shs_seterr(e, SHS_EINVAL, "pipeline: only GPipe runs in lockstep, not %s",
				  shs_pipe_schedule_name(in->schedule));
	if (in->schedule == SHS_PIPE_INTERLEAVED && in->chunks > 1 &&
	    in->microbatches % in->stages)
		return shs_seterr(e, SHS_EINVAL, "pipeline: the interleaved schedule runs "
				  "micro-batches in groups of the %u stages: %u micro-batches are "
				  "no multiple of it", in->stages, in->microbatches);
	if ((uint64_t)in->stages * in->chunks * in->microbatches > (1u << 26))
		return shs_seterr(e, SHS_EINVAL, "pipeline: %u stages x %u chunks x %u "
				  "micro-batches is too many passes to simulate", in->stages,
				  in->chunks, in->microbatches);
	uint32_t n = in->stages * in->chunks;
	for (uint32_t k = 0; k < n; k++) {
		bool edge = k + 1 < n;
		if (!(in->fwd[k] >= 0) || !(in->bwd[k] >= 0) ||
		    (edge && in->send_fwd && !(in->send_fwd[k] >= 0)) ||
		    (edge && in->send_bwd && !(in->send_bwd[k] >= 0)))
			return shs_seterr(e, SHS_EINVAL, "pipeline: virtual stage %u has a "
					  "negative or undefined time", k);
	}
	return SHS_OK;
}

int shs_pipe_simulate(const shs_pipe_in *in, shs_pipe_out *out, shs_err *e)
{
	memset(out, 0, sizeof(*out));
	int rc = check(in, e);
	if (rc)
		return rc;
	pipe q = { .in = in, .p = in->stages, .v = in->chunks, .m = in->microbatches };
	q.n_virtual = q.p * q.v;
	size_t n = (size_t)q.n_virtual * q.m;
	q.order = calloc(q.p, sizeof(*q.order));
	q.f_end = malloc(n * sizeof(double));
	q.b_end = malloc(n * sizeof(double));
	q.f_in = malloc(n * sizeof(double));
	q.b_in = malloc(n * sizeof(double));
	q.link_f = calloc(q.n_virtual, sizeof(double));
	q.link_b = calloc(q.n_virtual, sizeof(double));
	out->end = calloc(q.p, sizeof(double));
	out->last_bwd = calloc(q.p, sizeof(double));
	out->peak_chunks = calloc(q.p, sizeof(uint32_t));
	rc = q.order && q.f_end && q.b_end && q.f_in && q.b_in && q.link_f && q.link_b &&
			     out->end && out->last_bwd && out->peak_chunks ?
		     SHS_OK :
		     SHS_ENOMEM;
	for (uint32_t s = 0; !rc && s < q.p; s++) {
		q.order[s] = malloc(2 * (size_t)q.m * q.v * sizeof(pass));
		if (!q.order[s]) {
			rc = SHS_ENOMEM;
			break;
		}
		make_order(&q, s, q.order[s]);
		uint32_t held = 0, peak = 0; /* a forward holds from its start, a backward frees */
		for (uint32_t i = 0; i < 2 * q.m * q.v; i++) {
			held = q.order[s][i].bwd ? held - 1 : held + 1;
			peak = held > peak ? held : peak;
		}
		out->peak_chunks[s] = peak;
	}
	if (rc == SHS_ENOMEM)
		shs_seterr(e, rc, "pipeline: out of memory");
	if (!rc && (in->send_fwd || in->send_bwd)) { /* free transfers first: what they hide */
		shs_pipe_in free_in = *in;
		free_in.send_fwd = free_in.send_bwd = NULL;
		free_in.trace = NULL;
		q.in = &free_in;
		rc = in->lockstep ? run_lockstep(&q, out) : run(&q, out, e);
		q.in = in;
		out->wait_s = -out->makespan;
	}
	if (!rc)
		rc = in->lockstep ? run_lockstep(&q, out) : run(&q, out, e);
	if (!rc) {
		out->wait_s = in->send_fwd || in->send_bwd ? fmax(0, out->wait_s + out->makespan)
							   : 0;
		for (uint32_t s = 0; s < q.p; s++) {
			double busy = 0;
			for (uint32_t c = 0; c < q.v; c++)
				busy += q.m * (in->fwd[c * q.p + s] + in->bwd[c * q.p + s]);
			out->ideal = fmax(out->ideal, busy);
		}
		out->bubble = out->ideal > 0 ? out->makespan / out->ideal - 1 : 0;
	}
	pipe_free(&q);
	if (rc)
		shs_pipe_out_free(out);
	return rc;
}

void shs_pipe_out_free(shs_pipe_out *out)
{
	free(out->end);
	free(out->last_bwd);
	free(out->peak_chunks);
	out->end = out->last_bwd = NULL;
	out->peak_chunks = NULL;
}
