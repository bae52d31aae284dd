/* A while loop on the event schedule: trip by trip until the schedule repeats, then the
 * remaining trips at once.
 *
 * Trip t runs from B(t-1) to B(t) on the stream's clock. Its collectives are asked to start
 * no earlier than B(t-1-L), L = the prefetch depth (a weight's gather waits for the start of
 * the layer L back, and a trip starts at least one layer; everything else waits for a value of
 * this trip or the carry). When, at the end of trip t:
 *   - the last L + 1 trips took the same time d,
 *   - trips t and t-1 asked for nothing earlier than that reach,
 *   - the last L + 1 layers started at the same offsets from B(t) as from B(t-1),
 *   - the carry is usable, and the last collective ends, at the same offsets from B(t) as
 *     they were from B(t-1), charged to the same sites,
 *   - every axis's links from B(t-L) on hold the same busy time, relative, as they held from
 *     B(t-1-L) on at the end of trip t-1,
 *   - and trips t and t-1 exposed the same seconds on each axis,
 * then trip t+1 sees what trip t saw, d later, and does the same: so does every later trip. The
 * remaining R trips are then added at once: the clock, the carry and the prefetch windows move
 * R * d on, each axis's exposed seconds and each site's waits grow R times trip t's, and the
 * links get R copies of their final busy time between B(t-1-L) and B(t-L) (no later trip
 * can fill it any more), d apart, then what lies from B(t-L) on, R * d later.
 * Times are compared to within 1e-12 s + 1e-9 of d. shs_eval_options.every_trip runs every
 * trip instead (tests compare the two). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "evaluate_sim.h"
#include "manual.h"
#include "users.h"

/* Trips whose link time a loop added at once keeps (skip_trips): far more than any model's
 * layers, so only loops of a huge trip count forget the gaps of their earliest trips. */
enum { SKIP_WINDOWS = 4096 };

/* What the end of one trip left. */
typedef struct trip_end {
	double at, from;                     /* B(t), B(t-L) */
	double layer_start[SHS__MAX_LAYERS_BACK];
	shs__avail carry, tail;
	double exposed[SHS_MESH_MAX_AXES];   /* this trip's */
	shs__link win[SHS_MESH_MAX_AXES];    /* the links from B(t-L) on, from B(t-L) */
	bool reach;                          /* nothing asked to start before B(t-1-L) */
	double lag_max, lag_sum;             /* the stacks written late, from B(t) on */
} trip_end;

static double tolerance(double d)
{
	return 1e-12 + 1e-9 * d;
}

static bool same_avail(const shs__avail *a, double a0, const shs__avail *b, double b0,
		       double tol)
{
	return fabs((a->t - a0) - (b->t - b0)) <= tol && a->mask == b->mask &&
	       a->comp == b->comp && a->instr == b->instr;
}

/* The same last collective: at the same offset from a0 and b0, or the same one from before
 * both windows (which start at a_from and b_from). */
static bool same_tail(const shs__avail *a, double a0, double a_from, const shs__avail *b,
		      double b0, double b_from, double tol)
{
	if (a->t < a_from && b->t < b_from)
		return !memcmp(a, b, sizeof(*a));
	return same_avail(a, a0, b, b0, tol);
}

/* The prefetch reach L, as evaluate_events.c clamps it. */
static uint32_t reach_of(const shs__sim *s)
{
	uint32_t l = s->depth ? s->depth : 1;

	return l < SHS__MAX_LAYERS_BACK - 1 ? l : SHS__MAX_LAYERS_BACK - 2;
}

/* Whether element k of loop body `body`'s state lags from trip to trip: a stack written late
 * (not the weights passed through, usable from the start). */
static bool lags_by_trip(const shs__sim *s, uint32_t body, uint32_t k)
{
	return s->lag[body][k].t > -INFINITY && !shs_while_keeps(s->m->comps[body], k);
}

/* Records the end of the trip just run (its exposure since exposed_before) into e; b[k] is
 * B(t-1-k); the body's n state elements' lags. */
static void record(shs__sim *s, const shs__avail *carry, const double *exposed_before,
		   const double *b, uint32_t l, uint32_t body, uint32_t n, trip_end *e)
{
	e->lag_max = -INFINITY;
	e->lag_sum = 0;
	for (uint32_t k = 0; s->lag[body] && k < n; k++)
		if (lags_by_trip(s, body, k)) {
			double ahead = s->lag[body][k].t - s->now;
			e->lag_max = ahead > e->lag_max ? ahead : e->lag_max;
			e->lag_sum += ahead;
		}
	e->at = s->now;
	e->from = b[l - 1];
	memcpy(e->layer_start, s->layer_start, sizeof(e->layer_start));
	e->carry = *carry;
	e->tail = s->tail;
	e->reach = s->min_start >= b[l] - tolerance(s->now - b[0]);
	for (uint32_t a = 0; a < s->c->mesh.n_axes && s->rc == SHS_OK; a++) {
		e->exposed[a] = s->exposed[a] - exposed_before[a];
		if (shs__link_window(&s->link[a], e->from, INFINITY, &e->win[a]) != SHS_OK)
			s->rc = shs_seterr(s->e, SHS_ENOMEM, "evaluate: out of memory");
	}
}

/* Whether the trip that ended at cur repeats the one that ended at prev (see the top); b[k]
 * is B(t-1-k). */
static bool repeats(const shs__sim *s, const trip_end *prev, const trip_end *cur,
		    const double *b, uint32_t l)
{
	double d = cur->at - prev->at, tol = tolerance(d);

	if (!(d > 0) || !prev->reach || !cur->reach || !(fabs(cur->at - b[0] - d) <= tol))
		return false;
	for (uint32_t k = 0; k < l; k++)
		if (!(fabs(b[k] - b[k + 1] - d) <= tol))
			return false;
	for (uint32_t k = 0; k <= l; k++)
		if (!(fabs((cur->layer_start[k] - cur->at) - (prev->layer_start[k] - prev->at)) <=
		      tol))
			return false;
	if (!(cur->lag_max == prev->lag_max || fabs(cur->lag_max - prev->lag_max) <= tol) ||
	    !(fabs(cur->lag_sum - prev->lag_sum) <= tol))
		return false;
	if (!same_avail(&cur->carry, cur->at, &prev->carry, prev->at, tol) ||
	    !same_tail(&cur->tail, cur->at, cur->from, &prev->tail, prev->at, prev->from, tol))
		return false;
	for (uint32_t a = 0; a < s->c->mesh.n_axes; a++)
		if (fabs(cur->exposed[a] - prev->exposed[a]) > tol ||
		    !shs__link_same(&cur->win[a], &prev->win[a], tol))
			return false;
	return true;
}

/* Adds the remaining r trips of period d at once (see the top); b[k] is B(t-1-k). The links
 * keep the busy time of the last SKIP_WINDOWS trips, which later collectives may still fill
 * the gaps of; the trips before them are forgotten (the links' floor), so a loop of any trip
 * count costs the same to add. */
static void skip_trips(shs__sim *s, const trip_end *cur, int64_t r, double d, const double *b,
		       uint32_t l)
{
	double from = b[l], to = b[l - 1], shift = (double)r * d;
	int64_t first = r > SKIP_WINDOWS ? r - SKIP_WINDOWS + 1 : 1;
	shs__link final = { 0 };

	for (uint32_t a = 0; a < s->c->mesh.n_axes && s->rc == SHS_OK; a++) {
		int rc = shs__link_window(&s->link[a], from, to, &final);
		shs__link_cut(&s->link[a], to);
		if (first > 1 && s->link[a].floor < from + (double)first * d)
			s->link[a].floor = from + (double)first * d;
		for (int64_t k = first; k <= r && rc == SHS_OK; k++)
			rc = shs__link_append(&s->link[a], &final, from + (double)k * d);
		if (rc == SHS_OK)
			rc = shs__link_append(&s->link[a], &cur->win[a], to + shift);
		if (rc != SHS_OK)
			s->rc = shs_seterr(s->e, SHS_ENOMEM, "evaluate: out of memory");
		s->exposed[a] += (double)r * cur->exposed[a];
	}
	shs__link_free(&final);
	for (uint32_t k = 0; k < s->n_log; k++)
		s->waits[s->log[k].comp][s->log[k].instr] += (double)r * s->log[k].w;
	for (uint32_t k = 0; k < SHS__MAX_LAYERS_BACK; k++)
		s->layer_start[k] += shift;
	s->now += shift;
	if (s->tail.t >= to)
		s->tail.t += shift;
}

static void free_end(trip_end *e)
{
	for (uint32_t a = 0; a < SHS_MESH_MAX_AXES; a++)
		shs__link_free(&e->win[a]);
}

/* Places the sunk all-reduces of computation c (evaluate_sink.c), each once (combined as XLA
 * combines them: evaluate_combine.c), from when *result is; *result becomes the latest of
 * them. */
static void place_sunk(shs__sim *s, uint32_t c, shs__avail *result)
{
	const shs_computation *comp = s->m->comps[c];
	double from = result->t;

	for (uint32_t i = 0; s->sunk[c] && i < comp->n_instrs; i++) {
		const shs_decision *d = &s->p->d[c][i];
		for (uint32_t k = 0; s->sunk[c][i] && k < d->n_colls; k++) {
			double sends, v = shs__own_coll_bytes(&s->c->mesh, &d->colls[k], &sends);
			shs__avail done;
			if (!shs__sunk(s->sunk, c, i, &d->colls[k]))
				continue;
			done = shs__sim_place(s, d->colls[k].kind, d->colls[k].axes_mask, v,
					      shs__combine_time(s, c, i, &d->colls[k], v) * sends,
					      from, c, i);
			if (done.t > result->t)
				*result = done;
		}
	}
}

/* The all-reduces sunk out of loop body `body` and the computations it calls: each once, when
 * the loop's last trip has made its buffer; the loop's result is usable after them. */
static void sunk_after(shs__sim *s, uint32_t body, shs__avail *result)
{
	const shs_computation *comp = s->m->comps[body];
	shs__avail made = *result;

	if (!s->sunk)
		return;
	place_sunk(s, body, result);
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		if (comp->instrs[i]->op == SHS_OP_CALL && comp->instrs[i]->n_called == 1) {
			shs__avail r = made;
			place_sunk(s, comp->instrs[i]->called[0], &r);
			if (r.t > result->t)
				*result = r;
		}
}

/* The operand of instruction v of body through which the update of a late write into stack
 * (the write's operand 0) comes: a forwarding op's (shs__forwards) or a Sharding constraint's
 * (the partitioner removes it) only operand, or an accumulation's (an add of the slot being
 * written: XLA's collective pipeliner moves elementwise ops with the write when
 * pipeline_use_tree is set, as gpu_compiler.cc sets it) other operand; else UINT32_MAX. */
static uint32_t chain_operand(const shs_computation *body, uint32_t v, uint32_t stack)
{
	const shs_instr *in = body->instrs[v];

	if (shs__forwards(in) || (shs_is_sharding_constraint(in) && in->n_operands == 1))
		return in->operands[0];
	if (in->op != SHS_OP_ADD || in->n_operands != 2)
		return UINT32_MAX;
	for (uint32_t k = 0; k < 2; k++) {
		const shs_instr *slot = body->instrs[in->operands[k]];
		if (slot->op == SHS_OP_DYNAMIC_SLICE && slot->n_operands &&
		    slot->operands[0] == stack)
			return in->operands[1 - k];
	}
	return UINT32_MAX;
}

/* Flags the instructions of loop body c that only carry a late stack write's update to it
 * (chain_operand, each its operand's only user): the pipeliner moves them with the write. */
static int chain_of(const shs__sim *s, uint32_t c, bool *chain)
{
	const shs_computation *body = s->m->comps[c];
	shs_users u;
	uint32_t elem;

	if (shs_users_make(body, &u) != SHS_OK)
		return SHS_ENOMEM;
	for (uint32_t i = 0; i < body->n_instrs; i++) {
		uint32_t v, stack;
		if (!shs__sim_lags(s, c, i, &elem))
			continue;
		stack = body->instrs[i]->operands[0];
		v = body->instrs[i]->operands[1];
		while (shs_users_count(&u, v) == 1 && !chain[v]) {
			uint32_t next = chain_operand(body, v, stack);
			if (next == UINT32_MAX)
				break;
			chain[v] = true;
			v = next;
		}
	}
	shs_users_free(&u);
	return SHS_OK;
}

static void lags_free(shs__sim *s, uint32_t body)
{
	free(s->lag[body]);
	free(s->lag_next[body]);
	free(s->lag_chain[body]);
	s->lag[body] = s->lag_next[body] = NULL;
	s->lag_chain[body] = NULL;
}

/* The lags of loop body `body`'s state while loop i of computation c runs (s->lag[body] and
 * s->lag_next[body], n elements each, -INFINITY where the element is the carry's, and
 * s->lag_chain[body]): the stacks whose writes lag the trip (shs__sim_lags), and the elements
 * the body passes through unchanged (the stacked weights), usable when the loop's operand
 * made them, not each trip later. SHS_OK or SHS_ENOMEM. */
static int lags_open(shs__sim *s, uint32_t c, uint32_t i, uint32_t n)
{
	const shs_instr *in = s->m->comps[c]->instrs[i], *init;
	uint32_t body = in->called[0];

	if (!n || s->lag[body])
		return SHS_OK;
	s->lag[body] = malloc(n * sizeof(shs__avail));
	s->lag_next[body] = malloc(n * sizeof(shs__avail));
	s->lag_chain[body] = calloc(s->m->comps[body]->n_instrs + 1, sizeof(bool));
	if (!s->lag[body] || !s->lag_next[body] || !s->lag_chain[body] ||
	    chain_of(s, body, s->lag_chain[body]) != SHS_OK) {
		lags_free(s, body);
		return shs_seterr(s->e, SHS_ENOMEM, "evaluate: out of memory");
	}
	init = s->m->comps[c]->instrs[in->operands[0]];
	for (uint32_t k = 0; k < n; k++) {
		s->lag[body][k] = s->lag_next[body][k] = (shs__avail){ .t = -INFINITY };
		if (init->op == SHS_OP_TUPLE && k < init->n_operands &&
		    shs_while_keeps(s->m->comps[body], k))
			s->lag[body][k] = s->ready[c][init->operands[k]];
	}
	return SHS_OK;
}

/* After a trip: what it wrote late becomes what the next trip reads. */
static void lags_step(shs__sim *s, uint32_t body, uint32_t n)
{
	for (uint32_t k = 0; s->lag[body] && k < n; k++) {
		if (s->lag_next[body][k].t > -INFINITY)
			s->lag[body][k] = s->lag_next[body][k];
		s->lag_next[body][k] = (shs__avail){ .t = -INFINITY };
	}
}

/* Trips added at once: the stacks written late move on by `shift` seconds. */
static void lags_shift(shs__sim *s, uint32_t body, uint32_t n, double shift)
{
	for (uint32_t k = 0; s->lag[body] && k < n; k++)
		if (lags_by_trip(s, body, k))
			s->lag[body][k].t += shift;
}

/* The loop's result is usable when its carry and every stack written late are. */
static void lags_close(shs__sim *s, uint32_t body, uint32_t n, shs__avail *carry)
{
	for (uint32_t k = 0; s->lag[body] && k < n; k++)
		if (s->lag[body][k].t > carry->t)
			*carry = s->lag[body][k]; /* -INFINITY never is */
	lags_free(s, body);
}

/* The elements of loop `in`'s state, when its body takes and returns them as a tuple of as
 * many (else 0: no lags). */
static uint32_t state_elements(const shs_computation *body, const shs_instr *in)
{
	const shs_instr *root = body->instrs[body->root];
	uint32_t n = in->shape.type == SHS_TUPLE ? in->shape.n_tuple : 0;

	if (root->op != SHS_OP_TUPLE || root->n_operands != n)
		return 0;
	for (uint32_t k = 0; k < body->n_instrs; k++) {
		const shs_instr *p = body->instrs[k];
		if (p->op == SHS_OP_PARAMETER && (p->shape.type != SHS_TUPLE || p->shape.n_tuple != n))
			return 0;
	}
	return n;
}

void shs__sim_loop(shs__sim *s, uint32_t c, uint32_t i, uint32_t depth)
{
	const shs_computation *comp = s->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	uint32_t body = in->called[0], root = s->m->comps[body]->root, l = reach_of(s);
	/* a loop inside a recorded trip runs every trip: the outer one records for both */
	bool shortcut = !s->every_trip && !s->recording;
	trip_end ends[2] = { 0 };
	double b[SHS__MAX_LAYERS_BACK] = { 0 }; /* b[k]: when the trip k + 1 back started */
	shs__avail carry = shs__sim_max_ready(s, c, in);
	uint32_t n = state_elements(s->m->comps[body], in);
	int64_t trips = 1;
	size_t mark = 0;       /* the trip's first event on the timeline */
	double trip_start = 0;

	if (!shs_while_trip_count(s->m, comp, in, &trips))
		trips = 1;
	if (lags_open(s, c, i, n) != SHS_OK) {
		s->rc = SHS_ENOMEM;
		return;
	}
	for (int64_t t = 0; t < trips && s->rc == SHS_OK; t++) {
		trip_end *cur = &ends[t % 2], *prev = &ends[(t + 1) % 2];
		double before[SHS_MESH_MAX_AXES];
		memmove(&b[1], &b[0], (SHS__MAX_LAYERS_BACK - 1) * sizeof(b[0]));
		b[0] = s->now;
		shs__sim_layer_starts(s);
		mark = s->trace ? s->trace->n : 0;
		trip_start = s->now;
		if (shortcut) {
			memcpy(before, s->exposed, sizeof(before));
			s->recording = true;
			s->min_start = INFINITY;
			s->n_log = 0;
		}
		shs__sim_run(s, body, &carry, 1, depth + 1);
		carry = s->ready[body][root];
		lags_step(s, body, n);
		if (!shortcut)
			continue;
		s->recording = false;
		record(s, &carry, before, b, l, body, n, cur);
		if (t > (int64_t)l && t + 1 < trips && repeats(s, prev, cur, b, l)) {
			double d = cur->at - prev->at;
			skip_trips(s, cur, trips - 1 - t, d, b, l);
			if (s->trace)
				shs_trace_repeat(s->trace, mark, trip_start, trips - 1 - t, d, c, i);
			s->skipped += trips - 1 - t;
			carry.t += (double)(trips - 1 - t) * d;
			lags_shift(s, body, n, (double)(trips - 1 - t) * d);
			break;
		}
	}
	s->recording = false;
	lags_close(s, body, n, &carry);
	sunk_after(s, body, &carry);
	s->ready[c][i] = carry;
	free_end(&ends[0]);
	free_end(&ends[1]);
}
