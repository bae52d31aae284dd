/* The predicted step as a timeline: what the evaluator's event schedule ran when, recorded
 * when shs_eval_options.trace is set (trace.c), for a Chrome / Perfetto trace (trace_json.h). */
#ifndef SHS_TRACE_H
#define SHS_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* What an event is. */
typedef enum shs_trace_kind {
	SHS_TRACE_RUN = 0,   /* an instruction on the compute stream */
	SHS_TRACE_WAIT = 1,  /* the compute stream waiting for a collective (exposed) */
	SHS_TRACE_COLL = 2,  /* a collective (or a piece of one) busy on one mesh axis's links */
	SHS_TRACE_ADDED = 3, /* time the evaluator adds to the schedule's makespan after it
			      * (recomputation, offload exposure): drawn after the stream's end */
	SHS_TRACE_TRIPS = 4, /* loop trips repeating the trip before, beyond the event limit */
	SHS_TRACE_PASS = 5,  /* a pipeline stage's forward or backward pass of a micro-batch */
	SHS_TRACE_SEND = 6,  /* a micro-batch's activation or gradient between two stages */
	SHS_TRACE_CUT = 7    /* the stream's time past the event limit, its events not kept */
} shs_trace_kind;

/* One slice of the timeline, in seconds from the step's start. */
typedef struct shs_trace_event {
	double start, dur;
	double bytes;      /* COLL: the book's V of the whole collective; SEND: bytes moved */
	uint32_t comp, instr; /* RUN, COLL: the instruction; WAIT: the collective's site;
			       * TRIPS: the while loop; PASS, SEND: the micro-batch, the chunk */
	uint32_t track;    /* COLL, WAIT: the mesh axis; PASS, SEND: the stage */
	uint32_t axes;     /* COLL: all the collective's axes (bit k: axis k) */
	int coll;          /* COLL: enum shs_pcollective; PASS, SEND: 1 backward, 0 forward */
	shs_trace_kind kind;
	const char *label; /* ADDED, TRIPS: what the time is (static text), else NULL */
	int64_t count;     /* TRIPS: how many trips */
} shs_trace_event;

/* Zero-initialise; free with shs_trace_free. The evaluator appends to it (after emptying it)
 * and fills the memory samples; a trace that ran out of memory keeps rc = SHS_ENOMEM and
 * stops growing. */
typedef struct shs_trace {
	shs_trace_event *v;
	size_t n, cap;
	size_t limit;          /* events kept at most (0: SHS_TRACE_LIMIT); loop trips past it
				* are one TRIPS event, other events past it are dropped */
	int64_t dropped;       /* events not kept */
	double cut_at;         /* the earliest start of an event not kept (when dropped) */
	/* memory, per instruction of the entry computation (n_entry of them, malloc'ed): when
	 * the stream reaches it and the bytes live while it runs (its callee's peak included) */
	double *entry_at, *entry_live;
	uint32_t n_entry;
	double stream_end;     /* when the compute stream's schedule ends (before ADDED time) */
	int rc;
} shs_trace;

enum { SHS_TRACE_LIMIT = 1000000 };

/* Empties t for a new recording (keeps its buffers and limit). */
void shs_trace_reset(shs_trace *t);

/* Appends event ev: past the limit, an event of the timeline's detail (RUN, WAIT, COLL, PASS,
 * SEND) is dropped and counted; the few that sum up time (ADDED, TRIPS, CUT) are kept. */
void shs_trace_add(shs_trace *t, const shs_trace_event *ev);

/* Ends the compute stream's timeline at stream_end: when events were dropped, one CUT slice
 * from the last kept one on the stream (or the first dropped, if later) to stream_end. */
void shs_trace_end_stream(shs_trace *t, double stream_end);

/* Repeats events [from, t->n) `times` more times, the k-th copy shifted by k * period seconds
 * (the trips of a loop in steady state, the one recorded starting at trip_start); copies past
 * the limit become one TRIPS event for loop instruction (comp, instr) covering their time. */
void shs_trace_repeat(shs_trace *t, size_t from, double trip_start, int64_t times,
		      double period, uint32_t comp, uint32_t instr);

/* Frees what t holds and zeroes it (its limit kept); NULL does nothing. */
void shs_trace_free(shs_trace *t);

#endif
