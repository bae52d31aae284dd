/* Private to the cost room: the evaluator's parts (operand edges, link timelines, the event
 * schedule, fusion, remat, memory) shared by evaluate*.c. */
#ifndef SHS_EVALUATE_INTERNAL_H
#define SHS_EVALUATE_INTERNAL_H

#include "evaluate.h"
#include "weights.h"

/* The book's V of an instruction's own collective cl (its per-device bytes, times the group
 * for a gather or an all-to-all), and into *sends how many times it runs back to back: a ring
 * (an overlappable permute over n devices, shardsearch_plugin.h) n - 1, else 1. */
double shs__own_coll_bytes(const shs_mesh *mesh, const shs_coll *cl, double *sends);

/* The mesh axes a reshard of array a from `from` to `to` gathers and moves (all-to-all), and
 * the local bytes it starts from (0 when from equals to). */
double shs__reshard_masks(const shs_mesh *mesh, const shs_shape *a, const shs_pspec *from,
			  const shs_pspec *to, uint32_t *gathered, uint32_t *moved);

/* Operand edges (evaluate_edges.c). Edge k of instruction i of computation c is number
 * base[c][i] + k; first[c][edge] is the earlier edge of the same computation that already
 * reshards the same value into the same sharding (its copy is reused), SHS__EDGE_NEW when the
 * edge reshards first, or SHS__EDGE_NONE when it takes its operand as it is. */
#define SHS__EDGE_NEW UINT32_MAX
#define SHS__EDGE_NONE (UINT32_MAX - 1)
typedef struct shs__edges {
	uint32_t n_comps;
	uint32_t **base;
	uint32_t **first;
	uint32_t **use_first; /* per computation and value: the edges that reshard it first are
			       * use_edge[use_first[v]..use_first[v + 1]), in program order */
	uint32_t **use_edge;
	uint32_t **consumer;  /* per computation and edge: the instruction it feeds */
	bool *loop_body;  /* per computation: the body of some while */
	uint32_t entry;   /* the entry computation */
	shs_weights *weights; /* the model's weights */
} shs__edges;
/* Builds the edge table of plan p (caller frees with shs__edges_free). SHS_OK or SHS_ENOMEM. */
int shs__edges_make(const shs_module *m, const shs_plan *p, shs__edges *out, shs_err *e);
void shs__edges_free(shs__edges *x);
/* Whether instruction i of computation c reshards its operands (call, conditional, while,
 * parameter, tuple element and tuple do not, except a loop body's root tuple, the carry, and
 * the entry's, the step's outputs). */
bool shs__reshards_at(const shs__edges *x, const shs_computation *comp, uint32_t c, uint32_t i);

/* A link timeline (evaluate_links.c): the busy intervals of one mesh axis's links. Zero it to
 * start; free with shs__link_free. */
typedef struct shs__link {
	double *lo, *hi;  /* busy [lo, hi), sorted and disjoint */
	uint32_t n, cap;
	double floor;     /* nothing starts before this (older intervals were forgotten) */
} shs__link;
/* Places dur seconds of transfer on the links of the axes in mask, in their earliest common
 * idle time from t on (in pieces around what is already placed); *end gets when it finishes,
 * *blocker (may be NULL) the axis whose earlier traffic delayed it last (SHS_MESH_MAX_AXES
 * when none did); piece (may be NULL) is called with each piece's [lo, hi). SHS_OK or
 * SHS_ENOMEM. */
typedef void (*shs__piece_fn)(void *user, double lo, double hi);
int shs__links_place(shs__link *links, uint32_t n_axes, uint32_t mask, double t, double dur,
		     double *end, uint32_t *blocker, shs__piece_fn piece, void *user);
/* The one axis a wait for a collective of kind over mask (V = bytes) is booked to: blocker
 * when it is in mask, else the axis of mask whose links alone would take longest (the slowest
 * link bounds the transfer), the first of equals. SHS_MESH_MAX_AXES for an empty mask. */
uint32_t shs__wait_axis(const shs_cluster *c, int kind, uint32_t mask, double bytes,
			uint32_t blocker);
void shs__link_free(shs__link *l);

/* Loops in steady state (evaluate_loop.c): a window of a timeline, copied and compared. */
/* Appends to out (emptied first) l's busy time within [a, b), clipped, shifted by -a.
 * SHS_OK or SHS_ENOMEM. */
int shs__link_window(const shs__link *l, double a, double b, shs__link *out);
/* Whether windows x and y hold the same intervals, to within tol seconds (false when either
 * was too long to keep whole). */
bool shs__link_same(const shs__link *x, const shs__link *y, double tol);
/* Forgets l's busy time from t on. */
void shs__link_cut(shs__link *l, double t);
/* Marks busy on l each interval of window w shifted by t; they must lie after l's last one.
 * SHS_OK or SHS_ENOMEM. */
int shs__link_append(shs__link *l, const shs__link *w, double t);

/* Per computation of m, an array of its n_instrs (or, with edges, of its operand edges) (+1)
 * zeroed elements of size bytes each; NULL when out of memory. Freed by shs__per_instr_free. */
void **shs__per_instr(const shs_module *m, size_t size, bool edges, const shs__edges *x);
void shs__per_instr_free(const shs_module *m, void **a);

/* Where the entry's stream time goes (evaluate_pipeline.c), recorded by the schedule that sets
 * the step time: each layer segment of the entry (a call, or a loop of one layer a trip, whose
 * computation holds a matmul) from its start to its end on the stream's clock, in order; the
 * first half of the layers is the forward pass, the second the backward. Zero it to start;
 * free with shs__spans_free. */
typedef struct shs__span {
	double start, end;
	uint32_t instr;  /* the entry's call or while */
	int64_t layers;  /* 1 for a call, the trip count for a loop */
} shs__span;
typedef struct shs__spans {
	shs__span *v;
	uint32_t n, cap;
	double end;      /* the stream's clock at the entry's end */
	int rc;          /* SHS_ENOMEM once an add failed */
} shs__spans;
/* Whether instruction i of the entry is a layer segment, and how many layers it runs. */
bool shs__layer_segment(const shs_module *m, uint32_t i, int64_t *layers);
void shs__spans_add(shs__spans *s, uint32_t instr, int64_t layers, double start, double end);
void shs__spans_free(shs__spans *s);

/* The step time as the makespan of an event schedule (evaluate_events.c): the compute stream
 * runs the instructions in order; each collective runs on the links of its mesh axes in their
 * earliest idle time once its input is ready (a weight gather from the prefetch window, up to
 * the prefetch depth layers ahead); a repeated reshard reuses the first copy; a gather into a
 * matmul runs under it (collective matmul), other reshards make the stream wait; an
 * instruction's own collectives delay its result, not the stream. Sets ev->step_time_s,
 * exposed_comm_s and exposed_by_axis and each site's exposed_s (ev->compute_s and ev->colls
 * must already be filled). hbm_s[c][i]: the seconds instruction i's HBM bytes take, fusion
 * counted (shs__hbm_seconds); flop_s[c][i] its FLOPs' seconds at the achievable rate (both
 * borrowed). Records the entry's layer
 * segments in spans (emptied first). */
int shs__eval_events(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		     const shs_eval_options *o, double *const *hbm_s, double *const *flop_s,
		     const shs__edges *edges, bool *const *sunk, shs__spans *spans, shs_eval *ev,
		     shs_err *e);

/* Pipeline stages (evaluate_pipeline.c): with a mesh axis named "stage" of size > 1, turns ev,
 * the step of every layer on each device for its replica's whole batch (spans its stream's
 * layer segments), into the pipelined step: the layers split over the stages and their chunks,
 * each pass a micro-batch's share, run in o's schedule with the activations and gradients
 * moved over the stage axis's links; memory as the stage that holds the most (weights: the
 * model's, which gradients a pass reduces again). Nothing when the mesh has no such axis.
 * SHS_OK, SHS_EINVAL (layers the stages cannot split) or SHS_ENOMEM. */
int shs__pipeline_apply(const shs_module *m, const shs_plan *p, const shs_cluster *c,
			const shs_eval_options *o, const shs__spans *spans,
			const shs_weights *weights, shs_eval *ev, shs_err *e);

/* All-reduces sunk out of loops (evaluate_sink.c, XLA's WhileLoopAllReduceCodeMotion on GPUs):
 * *out[c][i] is true for the loop-body instructions whose own all-reduces run once after their
 * loop, not once per trip; *out stays NULL when there are none to mark (not a GPU, no loop).
 * Freed by shs__per_instr_free. SHS_OK or SHS_ENOMEM. */
int shs__sunk_make(const shs_module *m, const shs_plan *p, const shs_cluster *c, bool ***out,
		   shs_err *e);
/* Whether collective coll of instruction i of computation c is sunk (sunk may be NULL). */
bool shs__sunk(bool *const *sunk, uint32_t c, uint32_t i, const shs_coll *coll);

/* The ops XLA's loop code motion (the all-reduce's, evaluate_sink.c) and collective pipeliner
 * (evaluate_loop.c) carry along with a collective: one operand, converted, bitcast, reshaped,
 * transposed or copied. */
bool shs__forwards(const shs_instr *in);

/* Fusion (evaluate_fusion.c, whose comment lists the rules and the XLA passes they model): which
 * values never reach HBM under plan p. *out is the caller's (shs__fusion_free). */
typedef struct shs__fusion shs__fusion;
int shs__fusion_make(const shs_module *m, const shs_plan *p, const shs_mesh *mesh,
		     bool kernels, shs__fusion **out, shs_err *e);
void shs__fusion_free(shs__fusion *x);
/* The HBM bytes of instruction i once fusion is taken into account: its decision's bytes less
 * its fused result and fused operands, plus the reads a duplicated producer repeats; 0 for a
 * bitcast. x may be NULL (no fusion). */
double shs__fused_bytes(const shs_module *m, const shs_plan *p, const shs__fusion *x,
			uint32_t c, uint32_t i);
/* Whether instruction i of computation c is computed inside its consumers (F1: it owns no
 * buffer, and its operands are read where its consumers run; x may be NULL: no). */
bool shs__fused_away(const shs__fusion *x, uint32_t c, uint32_t i);
/* Whether dynamic-update-slice i of computation c gets its update written into its slot by the
 * work that makes it (F6; x may be NULL: no). */
bool shs__update_in_place(const shs__fusion *x, uint32_t c, uint32_t i);

/* Seconds instruction i of computation c spends on its FLOPs at the rate hw sustains
 * (evaluate_rate.c: matmuls at the catalog's achievable fraction of peak times the tile
 * quantization of their local shape; other work at peak). */
double shs__flop_seconds(const shs_hardware *hw, const shs_plan *p, const shs_mesh *mesh,
			 const shs_module *m, uint32_t c, uint32_t i);
/* The seconds instruction i of computation c takes to move its HBM bytes (fused, local) on
 * hw: a stream's at hbm_bw x hbm_eff, a thin batched matmul's at hbm_bw x bmm_hbm_eff
 * (evaluate_rate.c). */
double shs__hbm_seconds(const shs_hardware *hw, const shs_plan *p, const shs_mesh *mesh,
			const shs_module *m, uint32_t c, uint32_t i, double bytes);
/* Whether the runtime decomposes a collective of `bytes` (a gather into a matmul, a matmul's
 * reduce-scatter) under the matmul (XLA's windowed einsum, from hw->windowed_einsum_bytes on;
 * 0: always). A weight's gather overlaps regardless: it is prefetched asynchronously. */
bool shs__collective_matmul(const shs_hardware *hw, double bytes);
/* Whether an instruction's own collective cl (of v bytes) runs beside it: a matmul's when it is
 * decomposed under the matmul (shs__collective_matmul: the candidate's "cm" mark does not make
 * a runtime do it), another's when its candidate marks it overlappable (a ring's sends). */
bool shs__own_overlapped(const shs_hardware *hw, bool matmul, const shs_coll *cl, double v);

/* The MFU numerator (evaluate_mfu.c): the model's FLOPs of the step, whole (not per device):
 * every dot once per execution (loop bodies times their trip count, a conditional's dearest
 * branch), attention's dots halved for the causal mask, flash attention kernels as three times
 * their forward (the field's 6 x matmul parameters x tokens + the attention term; MaxText's
 * calculate_tflops_training_per_device). -1 when out of memory. */
double shs__model_flops(const shs_module *m, const shs_plan *p, const shs_mesh *mesh);

/* The array leaves of a computation's values (evaluate_memory.c): leaf j of instruction i is
 * number first[i] + j, and first[n_instrs] counts them all. Caller frees; NULL when out of
 * memory. */
uint32_t *shs__leaf_layout(const shs_computation *c);

/* What a remat policy drops and redoes: per array leaf of the entry's values (first: their
 * shs__leaf_layout), whether the step does not keep it (dropped; both freed with
 * shs__remat_free), the recomputation's compute seconds and FLOPs, and the communication it
 * repeats: the collective sites of base (the step without recomputation) at the recomputed
 * instructions, but for weight gathers, with what each exposed (in all, per axis) and took. */
typedef struct shs__remat {
	uint32_t comp;   /* the computation whose layers it works on: the entry, or the body of
			  * a loop over micro-batches that holds them */
	uint32_t *first; /* its leaf layout, and which of its leaves are dropped */
	bool *dropped;
	double extra_s, extra_flops;
	double comm_s, comm_exposed_s, comm_exposed_by_axis[SHS_MESH_MAX_AXES];
	double host_bytes;  /* offload: the dropped values' bytes per device per step, which go
			     * to host memory and back instead of being recomputed */
	double host_held;   /* of which the host holds at once: one run's (a micro-batch's) */
} shs__remat;
/* whole: the runtime reruns a checkpointed layer whole (an eager framework), where a compiled
 * step recomputes only what the dropped saved values are made from. */
int shs__remat_plan(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		    shs_remat policy, bool whole, const shs__fusion *fused, const shs_eval *base,
		    shs__remat *out, shs_err *e);
void shs__remat_free(shs__remat *r);

/* The mesh axes named in names (comma-separated, as shs_eval_options.blocking; NULL: none)
 * as a mask; names the mesh lacks are left out. */
uint32_t shs__axes_mask(const shs_mesh *mesh, const char *names);

/* How a scanned loop moves an element of its state (evaluate_stacks.c): a stack its body fills
 * one slot per trip (dynamic-update-slice of the element itself, the root's element: JAX's
 * scan ys), one it only reads a slot of per trip (dynamic-slice; passed through: xs), or
 * neither; slot is the fraction of the stack's leading dimension one trip moves, update the
 * body's dynamic-update-slice that writes it. */
typedef enum { SHS__STACK_NONE, SHS__STACK_WRITTEN, SHS__STACK_READ } shs__stack_kind;
typedef struct shs__stack {
	shs__stack_kind kind;
	double slot;
	uint32_t update;
} shs__stack;

/* Per element of while instruction i of computation c's state, how its body moves it, into *out
 * (malloc'ed, the caller frees; NULL when the loop's trip count is unknown or below 2, or its
 * body's root is no tuple of the state), and its trip count into *trips. SHS_OK or
 * SHS_ENOMEM. */
int shs__loop_stacks(const shs_module *m, uint32_t c, uint32_t i, int64_t *trips,
		     shs__stack **out);

/* Memory per device (evaluate_memory.c): peak live bytes by liveness over the entry computation
 * and the computations it calls, each buffer live until the last use of any value that is a
 * view of it (tuples and their elements, loops and in-place updates), less what remat drops (r)
 * and the updates fusion writes straight into their slots (fused, may be NULL), the resharded
 * copies by the edges that make and reuse them, and the state breakdown; with trace (may be
 * NULL, its entry samples sized), the bytes live at each entry instruction. SHS_OK or
 * SHS_ENOMEM. */
int shs__eval_memory(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		     const shs__remat *r, const shs__edges *edges, const shs__fusion *fused,
		     shs_trace *trace, shs_eval *ev, shs_err *e);

#endif
