/* Link timelines: the busy intervals of each mesh axis's links, filled earliest gap first, and
 * the one axis a wait is booked to.
 *
 * A collective runs on the links of all its axes at once. It is placed in the earliest time,
 * from when its input is ready, that all those links are idle, in pieces when the idle time
 * comes in gaps between collectives placed before it (a latency-hiding scheduler starts a
 * transfer whose input is ready early into idle link time; a ring collective pauses between
 * its steps when another transfer has the link). Collectives placed earlier keep their times. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evaluate_internal.h"

/* Gaps and touching ends closer than this (seconds) count as none. */
static const double EPS = 1e-12;

enum { MAX_INTERVALS = 1024 };

/* The first interval of l that ends after t (l->n when none). */
static uint32_t first_after(const shs__link *l, double t)
{
	uint32_t lo = 0, hi = l->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (l->hi[mid] > t + EPS)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Marks [a, b) busy on l, where l is idle: merges with touching neighbours. When l is full,
 * its older half is dropped and nothing may start before the end of what was dropped. */
static int mark(shs__link *l, double a, double b)
{
	uint32_t pos = first_after(l, a);
	bool left = pos > 0 && l->hi[pos - 1] >= a - EPS;
	bool right = pos < l->n && l->lo[pos] <= b + EPS;

	if (left && right) {
		l->hi[pos - 1] = l->hi[pos];
		memmove(&l->lo[pos], &l->lo[pos + 1], (l->n - pos - 1) * sizeof(*l->lo));
		memmove(&l->hi[pos], &l->hi[pos + 1], (l->n - pos - 1) * sizeof(*l->hi));
		l->n--;
		return SHS_OK;
	}
	if (left || right) {
		if (left)
			l->hi[pos - 1] = b;
		else
			l->lo[pos] = a;
		return SHS_OK;
	}
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? 2 * l->cap : 16;
		if (cap > MAX_INTERVALS) {
			uint32_t drop = l->n / 2;
			l->floor = l->hi[drop - 1];
			memmove(l->lo, &l->lo[drop], (l->n - drop) * sizeof(*l->lo));
			memmove(l->hi, &l->hi[drop], (l->n - drop) * sizeof(*l->hi));
			l->n -= drop;
			pos = pos > drop ? pos - drop : 0;
		} else {
			double *lo = realloc(l->lo, cap * sizeof(*lo)), *hi;
			if (!lo)
				return SHS_ENOMEM;
			l->lo = lo;
			if (!(hi = realloc(l->hi, cap * sizeof(*hi))))
				return SHS_ENOMEM;
			l->hi = hi;
			l->cap = cap;
		}
	}
	memmove(&l->lo[pos + 1], &l->lo[pos], (l->n - pos) * sizeof(*l->lo));
	memmove(&l->hi[pos + 1], &l->hi[pos], (l->n - pos) * sizeof(*l->hi));
	l->lo[pos] = a;
	l->hi[pos] = b;
	l->n++;
	return SHS_OK;
}

int shs__links_place(shs__link *links, uint32_t n_axes, uint32_t mask, double t, double dur,
		     double *end, uint32_t *blocker, shs__piece_fn piece, void *user)
{
	double cursor = t, left = dur;
	uint32_t last = SHS_MESH_MAX_AXES;
	int rc = SHS_OK;

	for (uint32_t a = 0; a < n_axes; a++)
		if ((mask & (1u << a)) && links[a].floor > cursor) {
			cursor = links[a].floor;
			last = a;
		}
	while (left > EPS && rc == SHS_OK) {
		double gap = -1;
		bool busy = true;
		/* past whatever is running at the cursor on any of the links */
		while (busy) {
			busy = false;
			for (uint32_t a = 0; a < n_axes; a++) {
				uint32_t k = first_after(&links[a], cursor);
				if ((mask & (1u << a)) && k < links[a].n &&
				    links[a].lo[k] <= cursor + EPS) {
					cursor = links[a].hi[k];
					busy = true;
					last = a;
				}
			}
		}
		for (uint32_t a = 0; a < n_axes; a++) {
			uint32_t k = first_after(&links[a], cursor);
			if ((mask & (1u << a)) && k < links[a].n &&
			    (gap < 0 || links[a].lo[k] - cursor < gap))
				gap = links[a].lo[k] - cursor;
		}
		if (gap < 0 || gap > left)
			gap = left;
		for (uint32_t a = 0; a < n_axes && rc == SHS_OK; a++)
			if (mask & (1u << a))
				rc = mark(&links[a], cursor, cursor + gap);
		if (piece && gap > 0)
			piece(user, cursor, cursor + gap);
		cursor += gap;
		left -= gap;
	}
	*end = cursor;
	if (blocker)
		*blocker = last;
	return rc;
}

uint32_t shs__wait_axis(const shs_cluster *c, int kind, uint32_t mask, double bytes,
			uint32_t blocker)
{
	uint32_t best = SHS_MESH_MAX_AXES;
	double slowest = -1;

	if (blocker < c->mesh.n_axes && (mask & (1u << blocker)))
		return blocker;
	for (uint32_t a = 0; a < c->mesh.n_axes; a++) {
		double t;
		if (!(mask & (1u << a)))
			continue;
		t = shs_coll_time(c, kind, 1u << a, bytes);
		if (t > slowest) {
			slowest = t;
			best = a;
		}
	}
	return best;
}

void shs__link_free(shs__link *l)
{
	free(l->lo);
	free(l->hi);
	memset(l, 0, sizeof(*l));
}

int shs__link_window(const shs__link *l, double a, double b, shs__link *out)
{
	int rc = SHS_OK;

	out->n = 0;
	out->floor = 0;
	for (uint32_t k = first_after(l, a); k < l->n && l->lo[k] < b && rc == SHS_OK; k++) {
		double lo = l->lo[k] > a ? l->lo[k] : a, hi = l->hi[k] < b ? l->hi[k] : b;
		if (hi - lo > EPS)
			rc = mark(out, lo - a, hi - a);
	}
	return rc;
}

bool shs__link_same(const shs__link *x, const shs__link *y, double tol)
{
	if (x->n != y->n || x->floor != 0 || y->floor != 0)
		return false; /* a window too long to keep whole is never the same */
	for (uint32_t k = 0; k < x->n; k++)
		if (fabs(x->lo[k] - y->lo[k]) > tol || fabs(x->hi[k] - y->hi[k]) > tol)
			return false;
	return true;
}

void shs__link_cut(shs__link *l, double t)
{
	uint32_t k = first_after(l, t);

	if (k < l->n && l->lo[k] < t)
		l->hi[k++] = t;
	l->n = k;
}

int shs__link_append(shs__link *l, const shs__link *w, double t)
{
	int rc = SHS_OK;

	for (uint32_t k = 0; k < w->n && rc == SHS_OK; k++)
		rc = mark(l, w->lo[k] + t, w->hi[k] + t);
	return rc;
}
