/* Private to the search room: mesh enumeration, ranking, refinement and ZeRO stages, and the
 * jobs of search.c (the driver and the merge), search_job.c and search_pool.c (threads). */
#ifndef SHS_SEARCH_INTERNAL_H
#define SHS_SEARCH_INTERNAL_H

#include "search.h"

/* What the meshes depend on in the model (0: unknown or none): its token batch [batch, seq],
 * its experts, its attention's query heads, the layers pipeline stages can split. */
typedef struct shs__search_model {
	int64_t batch, seq, experts, heads, layers;
} shs__search_model;

/* The model's figures of shs__search_model (search_mesh.c): the token batch from the first
 * integer entry parameter of rank 2 or more, the experts from the router (the last dim of a
 * "moe" "gate" weight), the query heads from a flash-attention kernel's Q [B, N, T, H], the
 * layers from shs_eval_pipeline_layers. */
shs__search_model shs__search_model_of(const shs_module *m);

/* Meshes the search tries on a cluster of n devices (search_mesh.c):
 * "stage=p,data=d,fsdp=f,context=s,expert=e,tensor=t" for every p dividing n and the model's
 * layers (pipeline stages, the outermost axis: the slowest links) and, on the n / p devices
 * of a stage, every t dividing them and the query heads
 * (when known: Megatron asserts num_attention_heads % tensor_model_parallel_size == 0, and a
 * tensor axis the heads do not divide replicates attention over part of it), s dividing n / t,
 * e dividing n / (t s) and the model's experts (none: no expert axis), f dividing the rest,
 * where a context axis (s > 1) needs a token batch of fewer than n sequences, s dividing seq
 * and d f e dividing batch, and d f e under twice the token batch when it is known (more batch
 * shards than that leave half of them empty; unless no mesh is then left); the size-1 axes left
 * out (all of them: "data=1"). At most cap texts
 * of SHS_SEARCH_TEXT bytes into out, and when sizes is not NULL their sizes {d, f, s, e, t, p}
 * into sizes; returns how many there are (which may exceed cap). */
uint32_t shs__search_meshes(int64_t n, const shs__search_model *model,
			    char (*out)[SHS_SEARCH_TEXT], int64_t (*sizes)[SHS_SEARCH_AXES],
			    uint32_t cap);


/* The figures of ev into t (step, compute, communication, memory, MFU, bound, fits); the mesh,
 * plan and remat are left as they are. */
void shs__search_summary(const shs_eval *ev, shs_search_try *t);

/* Per-instruction refinement (search_refine.c) of plan p on cluster c, evaluated with o: every
 * instruction the plugins serve (parameters, control flow and fixed decisions excepted) may take
 * any candidate its plugins enumerate instead of propagation's. All combinations when they
 * number at most SHS_SEARCH_EXHAUSTIVE (*exact true), else, when allow_sweep, one sweep of
 * coordinate descent (each instruction in turn takes its best option) within SHS_SEARCH_SWEEP
 * evaluations; else nothing. p and *ev (its evaluation) end as the best combination found.
 * *evaluated counts the evaluations. Returns SHS_OK or SHS_ENOMEM. */
int shs__search_refine(shs_host *h, const shs_module *m, const shs_cluster *c,
		       const shs_eval_options *o, bool allow_sweep, shs_plan *p, shs_eval *ev,
		       uint32_t *evaluated, bool *exact, shs_err *e);

/* The ZeRO stage plan p on mesh amounts to (search_zero.c), from the shardings of the entry
 * parameters (weights against optimizer state, by path) over the batch axes (data, fsdp) and
 * whether ev reduce-scatters the gradients over them. */
int shs__zero_stage(const shs_module *m, const shs_plan *p, const shs_eval *ev);

/* The bytes of the model state as the evaluator counts them (search.c): the float entry
 * parameters that an output aliases, Adam's ("opt_state" in their path) apart from the
 * weights. */
void shs__search_model_state(const shs_module *m, double *weights, double *optimizer);

enum { SHS__SEARCH_SEEDINGS = 2, SHS__SEARCH_JOB_WARNINGS = 32 };

/* What every job reads. Borrowed pointers; not written while jobs run. */
typedef struct shs__searcher {
	shs_host *h;
	const shs_module *m;
	const shs_hw_catalog *cat;
	const shs_cluster_spec *spec;
	const shs_search_options *o;
	const uint64_t *comp_hash; /* each computation's structural hash (twins), computed once */
	const shs_host_views *views; /* every instruction's view for the plugins, made once */
	double weights, optimizer; /* bytes of the model state, whole (memory bounds) */
	bool prune;                /* skip seedings whose state alone cannot fit */
	bool gathers_hidden;       /* propagate scoring every gather into a matmul as hidden */
} shs__searcher;

/* One mesh's candidates: its cluster and, per seeding tried, the plan (owned), its evaluation
 * (owned) and summary; what it counted; the propagation warnings it got (owned copies, the
 * first SHS__SEARCH_JOB_WARNINGS of n_warnings); its status and error. */
typedef struct shs__search_job {
	shs_cluster cluster;
	uint32_t n;
	shs_search_try tries[SHS__SEARCH_SEEDINGS];
	shs_plan *plans[SHS__SEARCH_SEEDINGS];
	shs_eval evals[SHS__SEARCH_SEEDINGS];
	uint32_t skipped, pruned, refine_evals;
	bool exact;                /* every plan tried was refined exhaustively */
	uint32_t n_warnings;
	char *warnings[SHS__SEARCH_JOB_WARNINGS];
	int rc;
	shs_err e;
} shs__search_job;

/* Fills the zeroed job j for mesh (search_job.c): lays it on the cluster (a mesh the physical
 * axes cannot hold is counted skipped, unless pinned: then an error) and tries every seeding its
 * axes call for, but those whose model state alone cannot fit (when s->prune and not pinned).
 * Sets j->rc (and j->e) instead of returning it. */
void shs__search_job_run(const shs__searcher *s, const char *mesh, bool pinned,
			 shs__search_job *j);

/* Frees what job j still owns (not j itself); NULL does nothing. */
void shs__search_job_free(shs__search_job *j);

/* Takes job j, of the k-th mesh of the pool's list (may move its plans and evaluations out),
 * into the caller's result; returns SHS_OK or an error status to stop the search. */
typedef int (*shs__search_merge_fn)(void *user, uint32_t k, shs__search_job *j);

/* Whether to stop starting jobs (the time budget). */
typedef bool (*shs__search_stop_fn)(void *user);

/* Runs the jobs of meshes[0..n) (search_pool.c) on `threads` threads (0 or 1: on the calling
 * thread), at most a few per thread ahead of the merge; calls merge on each job in mesh order,
 * one at a time, so that the result is the same for any thread count. Starts no more jobs once
 * stop() is true (every job started is still merged) or a merge or job failed. Returns SHS_OK,
 * the first failing merge's status, or SHS_ENOMEM (with e set). */
int shs__search_pool(const shs__searcher *s, const char (*meshes)[SHS_SEARCH_TEXT], uint32_t n,
		     bool pinned, uint32_t threads, shs__search_merge_fn merge,
		     shs__search_stop_fn stop, void *user, shs_err *e);

/* Indices of the axes in a mesh's sizes (shs__search_meshes). */
enum { SHS_SEARCH_DATA, SHS_SEARCH_FSDP, SHS_SEARCH_CONTEXT, SHS_SEARCH_EXPERT, SHS_SEARCH_TENSOR,
       SHS_SEARCH_STAGE };

/* The meshes to try first when there are too many to try all (search_local.c): the canonical
 * ones, with at most two axes above 1 (every degree of dp, fsdp, tp and fsdp+tp, and the
 * expert split with one other axis) or a context axis and two others where the batch axes
 * (data, fsdp, expert) split the batch as far as any context mesh does, as indices into
 * sizes[0..n) (data, fsdp, context, expert, tensor) into out; returns how many. */
uint32_t shs__search_canonical(const int64_t (*sizes)[SHS_SEARCH_AXES], uint32_t n,
			       uint32_t *out);

/* The untried neighbours of the meshes top[0..n_top) (a prime factor of one axis moved to
 * another), as indices into sizes[0..n) in ascending order, into out; returns how many. */
uint32_t shs__search_frontier(const int64_t (*sizes)[SHS_SEARCH_AXES], uint32_t n,
			      const bool *tried, const uint32_t *top, uint32_t n_top,
			      uint32_t *out);

#endif
