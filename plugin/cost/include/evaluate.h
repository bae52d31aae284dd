/* The evaluator: a plan on a cluster becomes step time, exposed communication and memory. */
#ifndef SHS_EVALUATE_H
#define SHS_EVALUATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "pipeline.h"
#include "plan.h"
#include "trace.h"

/* What the backward pass recomputes instead of keeping (evaluate_remat.c), from the least
 * recomputation to the most: shs_evaluate_until_fits tries them in this order. */
typedef enum shs_remat {
	SHS_REMAT_NONE = 0,      /* keep every saved activation */
	SHS_REMAT_ATTENTION = 1, /* Korthikanti et al. 2022's selective recomputation: keep all
				  * but the attention core (what lies between the scores matmul
				  * QK^T and the matmul with V: scores, softmax), which the
				  * backward pass recomputes; a flash kernel keeps no such value,
				  * so with flash attention this is none */
	SHS_REMAT_DOTS = 2,      /* keep matmul outputs and layer inputs; recompute the rest */
	SHS_REMAT_OFFLOAD = 3,   /* keep layer inputs in HBM and every other saved activation in
				  * host memory: copied out over the host link as the forward pass
				  * makes it, back as the backward pass needs it, under the
				  * compute (MaxText's offloaded remat policies); nothing
				  * recomputed. Needs the hardware's host_bw */
	SHS_REMAT_FULL = 4,      /* keep layer inputs; recompute each forward layer */
	SHS_REMAT_COUNT
} shs_remat;

/* The policy's name ("none", "attention", "dots", "offload", "full"; "?" for no policy), and
 * the policy of a name (false when it names none) (evaluate_remat.c). */
const char *shs_remat_name(shs_remat r);
bool shs_remat_from_name(const char *name, shs_remat *out);

/* How the step time is found. */
typedef enum shs_schedule {
	SHS_SCHEDULE_EVENTS = 0,  /* the makespan of an event schedule (evaluate_events.c) */
	SHS_SCHEDULE_SEGMENTS = 1 /* per layer: max(compute, overlapped comms) + blocking */
} shs_schedule;

/* How elementwise work fuses (evaluate_fusion.c). */
typedef enum shs_fusion {
	SHS_FUSION_XLA = 0,     /* as XLA fuses: chains of elementwise work, matmul prologues and
				 * epilogues, multi-output fusions */
	SHS_FUSION_KERNELS = 1, /* as an eager framework's kernels do (PyTorch, Megatron-LM): one
				 * hand-fused kernel per operation (a norm, a softmax, an
				 * activation, a dropout), matmuls on their own */
	SHS_FUSION_NONE = 2     /* every elementwise instruction reads and writes HBM */
} shs_fusion;

typedef struct shs_eval_options {
	bool no_overlap;      /* every collective blocks the compute stream (an upper bound) */
	const char *blocking; /* comma-separated mesh axes whose collectives block the compute
			       * stream (synchronous calls: Megatron-LM's tensor-parallel
			       * all-reduces), the others overlapping; names the mesh lacks are
			       * ignored. NULL: none. Borrowed. */
	shs_schedule schedule;
	shs_fusion fusion;
	shs_remat remat;
	uint32_t prefetch_depth; /* weight gathers may start this many segments (layers) ahead;
				  * 0 means 1 */
	bool every_trip;      /* simulate every trip of a loop, also once it repeats itself */
	/* with a mesh axis named "stage" (pipeline parallelism: evaluate_pipeline.c) */
	shs_pipe_schedule pipeline; /* the schedule with one chunk a stage (0: SHS_PIPE_1F1B) */
	uint32_t virtual_stages;    /* model chunks per device (more than one: interleaved; 0:
				     * the fastest that fits) */
	int64_t microbatches;       /* the pipeline's micro-batches (0: the fastest count that
				     * fits, of the divisors of a replica's batch from the stage
				     * count on) */
	shs_trace *trace;           /* receives the step's timeline (emptied first), or NULL;
				     * borrowed */
} shs_eval_options;

/* One collective site of the step: an instruction's own collective or a reshard on one of its
 * operand edges, with its total over the executions of that instruction (loops counted). */
typedef struct shs_eval_coll {
	char where[64];       /* the instruction's name */
	uint32_t comp, instr; /* the same as indices into the module */
	int kind;             /* enum shs_pcollective */
	uint32_t axes_mask;   /* mesh axes */
	bool reshard;         /* on an operand edge (else the instruction's own) */
	bool overlapped;      /* may run under compute (weight gathers, matmul-adjacent,
			       * gradients) */
	bool weight;          /* a gather of a weight (FSDP's): the backward pass gathers it
			       * again anyway, so recomputation reuses that copy */
	double bytes;         /* the book's V of one execution */
	double count;         /* executions per step */
	double time_s;        /* total over the executions */
	double exposed_s;     /* of which not hidden under compute */
} shs_eval_coll;

/* A pipelined step (a mesh axis named "stage" of size > 1; evaluate_pipeline.c). */
typedef struct shs_eval_pipeline {
	uint32_t stages;            /* p (0: no pipeline) */
	uint32_t chunks;            /* v: model chunks per device */
	uint32_t layers_per_stage;  /* per device (over its chunks) */
	int64_t microbatches;       /* m */
	shs_pipe_schedule schedule;
	double bubble;              /* the schedule's idle share of the busiest stage's passes */
	double bubble_s;            /* ... in seconds */
	double p2p_bytes;           /* one micro-batch's activation between two stages, per
				     * device */
	double p2p_s;               /* one such transfer over the stage axis's links */
	double p2p_exposed_s;       /* what the transfers add to the step (the schedule's waits) */
	double stage_post_s;        /* per stage after its passes: the step's work outside the layer
				     * passes after them (embedding gradient, optimizer), a p-th */
	double first_memory_bytes;  /* the first stage's peak bytes (the most micro-batches in
				     * flight: memory_bytes is the largest stage's) */
	double last_memory_bytes;   /* the last stage's */
	uint32_t first_in_flight;   /* micro-batch chunks the first stage holds at once */
} shs_eval_pipeline;

/* What one step costs on one device. */
typedef struct shs_eval {
	double step_time_s;
	double compute_s;                 /* the compute stream: max(FLOPs/peak, bytes/HBM)
					   * per op */
	double flops_s, hbm_s;            /* its two parts summed separately */
	double comm_s;                    /* all collectives, if they ran alone */
	double exposed_comm_s;            /* the compute stream's waits for collectives: step time
					   * - compute time, summed from the waits (never < 0) */
	double exposed_by_axis[SHS_MESH_MAX_AXES]; /* each wait on one axis: the one whose link
						    * it waited on; they sum to exposed_comm_s */
	double flops;                     /* per device per step (local, loops counted, with
					   * recomputation: the hardware's FLOPs) */
	double model_flops;               /* the model's FLOPs per device: the graph's dot FLOPs
					   * (no recomputation) with attention's halved (causal),
					   * / devices (evaluate.c) */
	double remat_s;                   /* compute added by recomputation (in compute_s) */
	double offload_bytes;             /* saved activations offloaded to host memory per device
					   * per step (each goes out and comes back) */
	double offload_s;                 /* their transfer each way over the host link */
	double offload_held_bytes;        /* of which the host holds at once (one micro-batch's) */
	double host_mem_bytes;            /* the host memory per chip they may take (a plan that
					   * holds more there does not fit) */
	double offload_exposed_s;         /* of which the compute does not hide (in the step
					   * time): out during the forward pass (a third of the
					   * compute), back during the backward (two thirds) */
	double remat_comm_s;              /* exposed communication added by recomputation: the
					   * collectives of the recomputed forward instructions,
					   * exposed as they were in the forward pass (in
					   * exposed_comm_s and the step time) */
	double mfu;                       /* model_flops / (step time * peak bf16) */
	double hfu;                       /* flops / (step time * peak bf16) */
	double flop_bound_s, hbm_bound_s; /* compute_s split by what bound each instruction:
					   * FLOPs or HBM bytes (the critical path's compute) */
	const char *bound;                /* what the critical path waited on most: "communication"
					   * when the stream's waits are 2 % of the compute time or
					   * more, else "memory bandwidth" when HBM-bound instructions
					   * take longer than FLOP-bound ones, else "compute"; with
					   * pipeline stages "pipeline bubble" when the stages idle
					   * longer than that */
	/* memory per device */
	double memory_bytes;              /* peak live bytes */
	double state_bytes;               /* the entry parameters (weights, mu, nu, step, batch) */
	double params_bytes, grads_bytes, optimizer_bytes; /* weights, their gradients, mu + nu */
	double gathered_bytes;            /* of the peak, the resharded copies then live (gathered
					   * weights, all-to-all outputs) */
	double hbm_bytes;                 /* the chip's HBM */
	bool fits;
	uint32_t n_colls;
	shs_eval_coll *colls;             /* by step time, largest first */
	int64_t trips_skipped;            /* loop trips added at once once the schedule repeated
					   * itself (not simulated one by one) */
	shs_eval_pipeline pipe;           /* the pipeline, with a stage axis (stages 0: none) */
} shs_eval;

/* Evaluates plan p of module m on cluster c (p's mesh must be c's mesh). On success *out holds
 * the figures (its colls array: caller frees with shs_eval_free). Returns SHS_OK, SHS_EINVAL (the
 * plan is for another module or mesh) or SHS_ENOMEM. */
int shs_evaluate(const shs_module *m, const shs_plan *p, const shs_cluster *c,
		 const shs_eval_options *o, shs_eval *out, shs_err *e);

/* As shs_evaluate with o->remat, and while the plan does not fit, again with each stronger
 * policy up to `most` (the schedule is made once: it does not depend on the policy). *used (may
 * be NULL) receives the policy *out was evaluated with. Same returns as shs_evaluate. */
int shs_evaluate_until_fits(const shs_module *m, const shs_plan *p, const shs_cluster *c,
			    const shs_eval_options *o, shs_remat most, shs_eval *out,
			    shs_remat *used, shs_err *e);

/* The layers pipeline stages can split in m (evaluate_pipeline.c): half the layers of the
 * entry's layer segments (calls, and loops of one layer a trip, whose computation holds a
 * matmul: forward and backward), or 0 when there are none or an odd number. */
int64_t shs_eval_pipeline_layers(const shs_module *m);

/* The name of forward layer k (0-based) of m into buf (cap bytes): the called computation's
 * name for an unrolled layer ("layers_3.fwd.5"), "WHILE trip j" for a loop's j-th trip; false
 * when m has no such layer. */
bool shs_eval_layer_name(const shs_module *m, int64_t k, char *buf, size_t cap);

/* Frees what shs_evaluate allocated in ev (not ev itself). */
void shs_eval_free(shs_eval *ev);

#endif
