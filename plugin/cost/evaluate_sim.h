/* Private state of the event schedule, shared by evaluate_events.c (instructions, calls) and
 * evaluate_loop.c (while loops). */
#ifndef SHS_EVALUATE_SIM_H
#define SHS_EVALUATE_SIM_H

#include "evaluate_internal.h"

enum { SHS__MAX_LAYERS_BACK = 17, SHS__COMBINE_OPEN = 8 };

/* When a value is usable, and the collective that made it that late: its axes (0: none), the
 * one axis a wait for it is booked to (shs__wait_axis) and its site (the instruction it is
 * listed at). */
typedef struct shs__avail {
	double t;
	uint32_t mask;
	uint32_t axis;
	uint32_t comp, instr;
} shs__avail;

/* A wait of the stream charged to a collective site, while a loop trip is recorded. */
typedef struct shs__charge {
	uint32_t comp, instr;
	double w;
} shs__charge;

/* A group of all-reduces XLA's AllReduceCombiner runs as one (evaluate_combine.c): in one run
 * of one computation, over the same axes. */
typedef struct shs__combined {
	uint32_t comp, run, mask;            /* mask 0: unused */
	uint32_t first;                      /* its first member */
	double bytes;                        /* its members' bytes so far */
} shs__combined;

typedef struct shs__sim {
	const shs_module *m;
	const shs_plan *p;
	const shs_cluster *c;
	const shs__edges *edges;
	uint32_t depth;
	uint32_t blocking;                   /* mesh axes whose collectives block the stream */
	bool every_trip;                     /* no steady-state shortcut for loops */
	double now;                          /* the compute stream's clock */
	shs__link link[SHS_MESH_MAX_AXES];   /* each axis's links */
	shs__avail **ready;                  /* per computation and instruction: its value */
	shs__avail **edge;                   /* per computation and operand edge: its reshard */
	shs__avail **floor;                  /* ... and the earliest end of the matmul it feeds */
	uint32_t **issued;                   /* ... and the run of its computation that placed it */
	uint32_t *stamp;                     /* per computation: its current run */
	/* per loop body while its loop runs (else NULL), per element of its state: when the
	 * element a trip reads is usable, for the stacks whose writes lag the trip (the
	 * collective pipeliner's: shs__sim_lags), and what the trip running writes there */
	shs__avail **lag, **lag_next;
	bool **lag_chain;                    /* ... per instruction: it forwards a late write */
	/* per instruction: 1 + the last instruction of its computation's run with an all-reduce
	 * of its own that it depends on (0: none) */
	uint32_t **after_reduce;
	shs__combined combined[SHS__COMBINE_OPEN]; /* the all-reduce groups still open */
	uint32_t next_combined;              /* the slot a new group takes when all are open */
	shs__avail tail;                     /* the collective that ends last */
	double layer_start[SHS__MAX_LAYERS_BACK]; /* stream clock at the start of the last layers */
	double exposed[SHS_MESH_MAX_AXES];
	double **waits;                      /* per instruction: the stream's waits it caused */
	double *const *hbm_s;                /* per instruction: its HBM bytes' seconds */
	double *const *flop_s;               /* per instruction: its FLOPs' seconds (achievable) */
	bool *const *sunk;                   /* per instruction: its all-reduces run after its loop
					      * (NULL: none) */
	/* while a loop trip is recorded: the earliest time a collective was asked to start at,
	 * and the waits charged */
	bool recording;
	double min_start;
	shs__charge *log;
	uint32_t n_log, cap_log;
	int64_t skipped;                     /* loop trips added at once */
	shs__spans *spans;                   /* the entry's layer segments (NULL: not kept) */
	shs_trace *trace;                    /* the timeline (NULL: not kept) */
	int rc;
	shs_err *e;
} shs__sim;

/* Runs computation c once on the schedule with its parameters usable at args. */
void shs__sim_run(shs__sim *s, uint32_t c, const shs__avail *args, uint32_t n_args,
		  uint32_t depth);

/* When the last operand of instruction in (of computation c) is usable. */
shs__avail shs__sim_max_ready(const shs__sim *s, uint32_t c, const shs_instr *in);

/* A new layer starts: remembers the stream's clock for prefetching. */
void shs__sim_layer_starts(shs__sim *s);

/* Runs a collective over axes mask of v bytes (the book's V), `sends` times back to back, not
 * before t, listed at instruction i of computation c; returns when its result is usable. */
shs__avail shs__sim_collective(shs__sim *s, int kind, uint32_t mask, double v, double sends,
			       double t, uint32_t c, uint32_t i);

/* As shs__sim_collective, for a collective that takes dur seconds of link time. */
shs__avail shs__sim_place(shs__sim *s, int kind, uint32_t mask, double v, double dur, double t,
			  uint32_t c, uint32_t i);

/* Marks instruction i of computation c, before it runs: the all-reduces of its computation's
 * run it depends on, from its operands'. */
void shs__combine_mark(shs__sim *s, uint32_t c, uint32_t i);

/* The link time all-reduce cl of instruction i of computation c, of v bytes, adds to the step:
 * all of its time when it runs alone, else what it adds to its group's combined all-reduce. */
double shs__combine_time(shs__sim *s, uint32_t c, uint32_t i, const shs_coll *cl, double v);

/* Whether instruction i of loop body c writes a slot of stack element *k of its state (the
 * root's element k is a dynamic-update-slice of element k) whose update may come late: XLA's
 * collective pipeliner moves the collective that makes it, and the write, into the next trip
 * (tuned GPU runs set xla_gpu_enable_pipelined_reduce_scatter, _all_reduce and _all_gather:
 * MaxText's configs/a3 scripts, JAX-Toolbox's "Tips for High-Performance LLMs with JAX and
 * XLA"; TPU runs set xla_tpu_enable_async_collective_fusion_multiple_steps, MaxText's
 * configs/v5p scripts), so the trip does not wait for it; the next trip's write of the same
 * stack does. */
bool shs__sim_lags(const shs__sim *s, uint32_t c, uint32_t i, uint32_t *k);

/* Runs while loop i of computation c: its body once per trip (evaluate_loop.c). */
void shs__sim_loop(shs__sim *s, uint32_t c, uint32_t i, uint32_t depth);

#endif
