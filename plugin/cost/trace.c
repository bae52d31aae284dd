/* The timeline of a predicted step: events appended by the evaluator, bounded by a limit. */
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "trace.h"

static size_t limit_of(const shs_trace *t)
{
	return t->limit ? t->limit : SHS_TRACE_LIMIT;
}

void shs_trace_reset(shs_trace *t)
{
	t->n = 0;
	t->dropped = 0;
	t->n_entry = 0;
	t->cut_at = t->stream_end = 0;
	t->rc = SHS_OK;
}

/* Room for one more event (the limit is the caller's to check): false, with rc set, when out
 * of memory. */
static bool grow(shs_trace *t)
{
	shs_trace_event *v;
	size_t cap;

	if (t->n < t->cap)
		return true;
	cap = t->cap ? 2 * t->cap : 256;
	if (!(v = realloc(t->v, cap * sizeof(*v)))) {
		t->rc = SHS_ENOMEM;
		return false;
	}
	t->v = v;
	t->cap = cap;
	return true;
}

/* Whether events of kind k sum time up (kept past the limit). */
static bool summary(shs_trace_kind k)
{
	return k == SHS_TRACE_ADDED || k == SHS_TRACE_TRIPS || k == SHS_TRACE_CUT;
}

void shs_trace_add(shs_trace *t, const shs_trace_event *ev)
{
	if (t->rc != SHS_OK)
		return;
	if (t->n >= limit_of(t) && !summary(ev->kind)) {
		if (!t->dropped || ev->start < t->cut_at)
			t->cut_at = ev->start;
		t->dropped++;
		return;
	}
	if (grow(t))
		t->v[t->n++] = *ev;
}

void shs_trace_end_stream(shs_trace *t, double stream_end)
{
	double from = t->cut_at;
	shs_trace_event cut = { .kind = SHS_TRACE_CUT,
				.label = "past the trace's event limit: not drawn" };

	t->stream_end = stream_end;
	if (!t->dropped)
		return;
	for (size_t k = 0; k < t->n; k++) /* after the last slice kept on the stream */
		if (t->v[k].kind != SHS_TRACE_COLL && t->v[k].start + t->v[k].dur > from)
			from = t->v[k].start + t->v[k].dur;
	cut.start = from;
	cut.dur = stream_end - from;
	if (cut.dur > 0)
		shs_trace_add(t, &cut);
}

void shs_trace_repeat(shs_trace *t, size_t from, double trip_start, int64_t times,
		      double period, uint32_t comp, uint32_t instr)
{
	size_t len = from <= t->n ? t->n - from : 0;
	int64_t k = 1;

	if (t->rc != SHS_OK || times <= 0)
		return;
	for (; len && k <= times && t->n + len <= limit_of(t); k++)
		for (size_t j = 0; j < len; j++) {
			shs_trace_event e = t->v[from + j];
			if (!grow(t))
				return;
			e.start += (double)k * period;
			t->v[t->n++] = e;
		}
	if (k <= times) {
		/* the rest as one slice, past the limit: it keeps the timeline whole */
		shs_trace_event rest = { .start = trip_start + (double)k * period,
					 .dur = (double)(times - k + 1) * period, .comp = comp,
					 .instr = instr, .kind = SHS_TRACE_TRIPS,
					 .count = times - k + 1,
					 .label = "loop trips, each as the trip before" };
		shs_trace_add(t, &rest);
		t->dropped += (times - k + 1) * (int64_t)len;
	}
}

void shs_trace_free(shs_trace *t)
{
	size_t limit;

	if (!t)
		return;
	limit = t->limit;
	free(t->v);
	free(t->entry_at);
	free(t->entry_live);
	memset(t, 0, sizeof(*t));
	t->limit = limit;
}
