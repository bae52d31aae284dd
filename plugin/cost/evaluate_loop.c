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

/* What the end of one trip left. */
typedef struct trip_end {
	double at, from;                     /* B(t), B(t-L) */
	double layer_start[SHS__MAX_LAYERS_BACK];
	shs__avail carry, tail;
	double exposed[SHS_MESH_MAX_AXES];   /* this trip's */
	shs__link win[SHS_MESH_MAX_AXES];    /* the links from B(t-L) on, from B(t-L) */
	bool reach;                          /* nothing asked to start before B(t-1-L) */
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

/* Records the end of the trip just run (its exposure since exposed_before) into e; b[k] is
 * B(t-1-k). */
static void record(shs__sim *s, const shs__avail *carry, const double *exposed_before,
		   const double *b, uint32_t l, trip_end *e)
{
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
	if (!same_avail(&cur->carry, cur->at, &prev->carry, prev->at, tol) ||
	    !same_tail(&cur->tail, cur->at, cur->from, &prev->tail, prev->at, prev->from, tol))
		return false;
	for (uint32_t a = 0; a < s->c->mesh.n_axes; a++)
		if (fabs(cur->exposed[a] - prev->exposed[a]) > tol ||
		    !shs__link_same(&cur->win[a], &prev->win[a], tol))
			return false;
	return true;
}

/* Adds the remaining r trips of period d at once (see the top); b[k] is B(t-1-k). */
static void skip_trips(shs__sim *s, const trip_end *cur, int64_t r, double d, const double *b,
		       uint32_t l)
{
	double from = b[l], to = b[l - 1], shift = (double)r * d;
	shs__link final = { 0 };

	for (uint32_t a = 0; a < s->c->mesh.n_axes && s->rc == SHS_OK; a++) {
		int rc = shs__link_window(&s->link[a], from, to, &final);
		shs__link_cut(&s->link[a], to);
		for (int64_t k = 1; k <= r && rc == SHS_OK; k++)
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

/* Places the sunk all-reduces of computation c (evaluate_sink.c), each once, from when *result
 * is; *result becomes the latest of them. */
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
			done = shs__sim_collective(s, d->colls[k].kind, d->colls[k].axes_mask, v,
						   sends, from, c, i);
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
	int64_t trips = 1;

	if (!shs_while_trip_count(s->m, comp, in, &trips))
		trips = 1;
	for (int64_t t = 0; t < trips && s->rc == SHS_OK; t++) {
		trip_end *cur = &ends[t % 2], *prev = &ends[(t + 1) % 2];
		double before[SHS_MESH_MAX_AXES];
		memmove(&b[1], &b[0], (SHS__MAX_LAYERS_BACK - 1) * sizeof(b[0]));
		b[0] = s->now;
		shs__sim_layer_starts(s);
		if (shortcut) {
			memcpy(before, s->exposed, sizeof(before));
			s->recording = true;
			s->min_start = INFINITY;
			s->n_log = 0;
		}
		shs__sim_run(s, body, &carry, 1, depth + 1);
		carry = s->ready[body][root];
		if (!shortcut)
			continue;
		s->recording = false;
		record(s, &carry, before, b, l, cur);
		if (t > (int64_t)l && t + 1 < trips && repeats(s, prev, cur, b, l)) {
			double d = cur->at - prev->at;
			skip_trips(s, cur, trips - 1 - t, d, b, l);
			s->skipped += trips - 1 - t;
			carry.t += (double)(trips - 1 - t) * d;
			break;
		}
	}
	s->recording = false;
	sunk_after(s, body, &carry);
	s->ready[c][i] = carry;
	free_end(&ends[0]);
	free_end(&ends[1]);
}
