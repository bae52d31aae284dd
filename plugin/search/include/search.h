/* The search: over the meshes of a cluster and the plans their axes seed, the plan with the
 * lowest evaluated step time that fits in HBM. */
#ifndef SHS_SEARCH_H
#define SHS_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "evaluate.h"
#include "host.h"
#include "plan.h"

enum { SHS_SEARCH_TEXT = 256, SHS_SEARCH_PLAN_NAME = 24, SHS_SEARCH_AXES = 6 };

/* Step times within this relative difference are equally fast. */
#define SHS_SEARCH_TIE 1e-6
/* Per-instruction refinement: all combinations are evaluated when they number at most
 * SHS_SEARCH_EXHAUSTIVE (exact); else one coordinate-descent sweep when it takes at most
 * SHS_SEARCH_SWEEP evaluations; graphs with more than SHS_SEARCH_REFINE_MAX instructions to
 * choose for are left as propagation made them. */
#define SHS_SEARCH_EXHAUSTIVE 5000.0
#define SHS_SEARCH_SWEEP 2000.0
#define SHS_SEARCH_REFINE_MAX 256
/* Meshes: all of them when they number at most SHS_SEARCH_ALL_MESHES, else the canonical ones
 * (at most two axes: every dp, fsdp, tp and fsdp+tp degree, and the expert split with one other
 * axis; a context split with the batch split widest and one more axis), then round after round
 * the untried neighbours (a prime factor moved between two axes) of the SHS_SEARCH_LOCAL_TOP
 * best so far, until there are none. With 10 best, on every preset (2 layers, scanned) on
 * 8960 v5p chips and 1024 H100s, it finds the plan trying every mesh finds, on 54-80 % of the
 * meshes where it applies (8 best missed mlp-only's on v5p by 10 %, a plan 3 moves away). */
#define SHS_SEARCH_ALL_MESHES 64
#define SHS_SEARCH_LOCAL_TOP 10
/* The second opinion: the SHS_SEARCH_SECOND_TOP best meshes are propagated again scoring every
 * gather into a matmul as hidden, where the chip's runtime decomposes no matmul (propagation
 * ranks layouts by a heuristic that sees no link load: scored exposed, an activation's gather
 * is moved where the schedule would not have hidden it; scored hidden, one is put where the
 * links cannot carry it); the evaluator judges both. */
#define SHS_SEARCH_SECOND_TOP 4

/* How far a search is: the meshes tried so far of those it enumerated, the best step time so
 * far (0: no plan yet) and the seconds since it began. */
typedef void (*shs_search_progress_fn)(void *user, uint32_t tried, uint32_t total,
				       double best_s, double elapsed_s);

typedef struct shs_search_options {
	shs_eval_options eval;  /* how each candidate is evaluated (remat, prefetch, ...) */
	bool fixed_remat;       /* evaluate with eval.remat only; else a candidate that does not
				 * fit is evaluated again with remat dots, then full */
	const char *mesh;       /* a pinned mesh ("fsdp=16,tensor=4", @ layouts allowed), or NULL:
				 * every mesh the search enumerates */
	double time_budget_s;   /* stop after this long with the best plan so far (0: no limit) */
	uint32_t threads;       /* meshes evaluated at once (0 or 1: one at a time); the result
				 * is the same for any count */
	bool exhaustive;        /* try every mesh, even more than SHS_SEARCH_ALL_MESHES */
	bool stages;            /* also meshes with pipeline stages (a stage axis splitting the
				 * layers); the annotated module is then not a pipelined program:
				 * the report gives the stages */
	bool ignore_hints;      /* drop the module's Sharding custom-call constraints */
	shs_warn_fn warn;       /* propagation warnings, or NULL */
	void *warn_user;
	shs_search_progress_fn progress; /* called after each mesh, in mesh order, from the
					  * thread that merges it (or NULL) */
	void *progress_user;
} shs_search_options;

/* One candidate the search evaluated: a mesh and the plan its axes seed. */
typedef struct shs_search_try {
	char mesh[SHS_SEARCH_TEXT];       /* with its layout: "data=2@x,fsdp=16@yz,tensor=4@z" */
	char plan[SHS_SEARCH_PLAN_NAME];  /* dp, fsdp, zero1, tp, fsdp+tp, zero1+tp */
	shs_remat remat;                  /* the remat policy it was evaluated with */
	double step_time_s, compute_s, exposed_comm_s, comm_s, memory_bytes, mfu;
	const char *bound;                /* static: "compute", "communication",
					   * "memory bandwidth" */
	bool fits;
	bool gathers_hidden;              /* propagated scoring every gather into a matmul as
					   * hidden (the second opinion on the best meshes) */
	uint32_t order;                   /* when it was evaluated (ties keep the earlier) */
} shs_search_try;

/* What would fit when the best plan does not (shs_search_advise), each change on its own. */
typedef struct shs_search_advice {
	bool given;                /* sought: the best plan does not fit */
	/* more chips: the fewest of the cluster's doublings (each searched) whose best plan fits,
	 * at most SHS_SEARCH_ADVICE_DOUBLINGS of them */
	int64_t devices;           /* 0: none of those tried fits */
	int64_t devices_tried;     /* the most chips tried */
	char cluster[SHS_SEARCH_TEXT]; /* how the bigger cluster was asked for: "devices=128" */
	shs_search_try more_chips;
	/* more recomputation, when the search was held to one remat policy */
	bool remat_fits;
	shs_search_try with_remat;
	/* fewer tokens per step, from the least-memory plan's peak: what is not model state
	 * (weights, gradients, Adam state, per device) scales with the tokens */
	double state_bytes;        /* the model state per device at that plan */
	int64_t sequences;         /* the step's sequences (0: no token batch found) */
	int64_t fit_sequences;     /* at most this many would fit (0: none, the state alone is
				    * over the HBM) */
	double fit_fraction;       /* the fraction of the tokens that would fit */
} shs_search_advice;

/* Chips are doubled at most this many times looking for a cluster that fits. */
#define SHS_SEARCH_ADVICE_DOUBLINGS 10

/* Micro-batch counts a run searches at most (1 and the divisors of the batch that at least
 * double the last one tried). */
#define SHS_SEARCH_MICROBATCH_TRIES 8

typedef struct shs_search_result {
	shs_plan *plan;            /* the chosen plan (owned; free with shs_search_result_free) */
	bool hints_ignored;        /* the module's constraints were dropped (ignore_hints) */
	shs_cluster cluster;       /* its cluster, laid out with its mesh */
	shs_eval eval;             /* its evaluation (owned) */
	shs_search_try best;       /* its summary */
	int zero_stage;            /* what the plan amounts to: 0 (data parallel), 1 (optimizer
				    * state split over the batch axes), 2 (and the gradients), 3
				    * (and the weights: FSDP) */
	uint32_t n_tries;
	shs_search_try *tries;     /* every candidate evaluated, best first (owned) */
	uint32_t n_skipped;        /* meshes the physical axes cannot hold (default layout) */
	uint32_t n_pruned;         /* seedings whose model state alone is over the HBM */
	uint32_t refine_evals;     /* evaluations of per-instruction choices */
	uint32_t n_meshes;         /* the meshes the cluster has (as enumerated) */
	uint32_t n_meshes_tried;   /* those tried */
	bool local;                /* too many to try all: canonical ones, then local search */
	bool exact;                /* every combination of per-instruction choices was evaluated
				    * on every mesh and seeding tried */
	bool partial;              /* the time budget ended the search: the best found so far */
	double search_time_s;
	int64_t experts;           /* routed experts per layer of a mixture-of-experts model (the
				    * router's width), 0 for a dense one */
	shs_search_advice advice;  /* filled by shs_search_advise */
	/* micro-batches (the run's: it searches the step written as M micro-batches for M from 1
	 * up while that can help; shs_run_annotate) */
	int64_t microbatches;      /* the plan's: 1, the whole batch at once */
	int64_t sequences;         /* the step's batch, 0 when the module has no data batch */
	uint32_t n_microbatch_tries;
	shs_search_try microbatch_tries[SHS_SEARCH_MICROBATCH_TRIES]; /* the best of each count
				    * tried (its mesh, plan, step time, memory, fits) */
	int64_t microbatch_counts[SHS_SEARCH_MICROBATCH_TRIES];
	char microbatch_refused[SHS_SEARCH_TEXT]; /* why the step cannot be split ("" if it can) */
} shs_search_result;

/* Whether candidate a beats b, the search's one order (search.c): fitting first, then the
 * faster (within SHS_SEARCH_TIE), then the one whose collectives take less link time; when
 * neither fits, the smaller. */
bool shs_search_beats(const shs_search_try *a, const shs_search_try *b);

/* Searches plans for m on the cluster spec describes (its mesh field is ignored; o->mesh pins
 * one). A plan that fits beats every one that does not; of those that fit the fastest wins,
 * and of equally fast ones (within SHS_SEARCH_TIE) the one that moves the fewest bytes over
 * the links (all its collectives' time), then the earlier; when none fits, the one with the
 * least memory. Candidates are taken in a fixed order (meshes in the order the search lists
 * them, on as many threads as o->threads asks), so the result is deterministic; the host's own
 * warnings (an instruction no strategy serves) may come in another order on several threads.
 * The host's plugins must then allow being asked from several threads at once (the built-in
 * ones do). On success *out is filled (free with shs_search_result_free).
 * Returns SHS_OK, SHS_EINVAL (bad cluster or pinned mesh, no mesh to try) or SHS_ENOMEM. */
int shs_search(shs_host *h, const shs_module *m, const shs_hw_catalog *cat,
	       const shs_cluster_spec *spec, const shs_search_options *o,
	       shs_search_result *out, shs_err *e);

/* When r's best plan does not fit, says in r->advice what would (each searched as
 * shs_search would, with o, on the cluster spec describes made bigger, or with the remat
 * policy free): more chips, more recomputation, fewer tokens per step. Does nothing when it
 * fits. Returns SHS_OK or SHS_ENOMEM (a bigger cluster the catalog cannot make is skipped). */
int shs_search_advise(shs_host *h, const shs_module *m, const shs_hw_catalog *cat,
		      const shs_cluster_spec *spec, const shs_search_options *o,
		      shs_search_result *r, shs_err *e);

/* Frees what r owns and zeroes it; NULL does nothing. */
void shs_search_result_free(shs_search_result *r);

#endif
