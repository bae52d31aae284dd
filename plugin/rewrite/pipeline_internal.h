/* Private to the pipeline rewrite: the layer loops found (pipeline_find.c) and the text of the
 * pipelined program written from them (pipeline_emit.c). */
#ifndef SHS_PIPELINE_INTERNAL_H
#define SHS_PIPELINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "pipeline_rewrite.h"

/* What a layer loop does with element k of its state. */
enum {
	PP_KEPT = 0,    /* returned as it is: a weight stack (sliced) or a stack the loop reads */
	PP_COUNTER = 1, /* the trip: incremented by one */
	PP_CARRY = 2,   /* the activation (or its gradient): the layer's result out[k] */
	PP_WRITTEN = 3  /* a stack: the layer's result out[k] written at the trip's layer */
};

enum { PP_MAX_STATE = 64 };

/* One layer loop: a while of computation comp whose body slices its stacks at the trip's
 * layer, calls `layer` once and writes or carries its results. */
typedef struct pp_loop {
	uint32_t comp, instr;           /* the while */
	uint32_t body, cond, layer;     /* its computations and the layer called */
	uint32_t call;                  /* the call of the layer in the body */
	int64_t trips;                  /* L */
	bool reverse;                   /* the layer index is L - 1 - the trip */
	uint32_t n;                     /* state elements */
	uint8_t kind[PP_MAX_STATE];
	bool sliced[PP_MAX_STATE];      /* PP_KEPT: the body reads the layer's slice of it */
	int32_t out[PP_MAX_STATE];      /* PP_CARRY, PP_WRITTEN: the layer's result index */
	uint32_t n_args;                /* the layer's operands: */
	uint32_t arg[PP_MAX_STATE];     /* ... the state element each comes from */
	uint32_t carry;                 /* the PP_CARRY element */
} pp_loop;

/* Finds in computation c of m the first two layer loops, in order (fwd, bwd); SHS_EINVAL with
 * e saying why when there are not exactly two or one is of another form. */
int pp_find(const shs_module *m, uint32_t c, pp_loop *fwd, pp_loop *bwd, shs_err *e);

/* Everything the text needs. All borrowed. */
typedef struct pp_ctx {
	const shs_module *m;            /* the step as written */
	const shs_module *mb;           /* the step as micro-batches: the layers at their shapes */
	const shs_pipeline_request *r;
	pp_loop fwd, bwd;               /* m's entry's loops */
	pp_loop mfwd, mbwd;             /* mb's, at the micro-batch's shapes */
	int64_t stages, devices, per_stage, trips; /* S, N, N / S, M + S - 1 */
	uint32_t saved_of[PP_MAX_STATE]; /* bwd element k (a read stack): the fwd element that wrote
					  * it, or UINT32_MAX (a weight) */
} pp_ctx;

/* Appends the pipelined module's text to b: m's header, the computations the layers and the
 * entry's other work call, the pipeline's loops, and m's entry with its layer loops replaced.
 * SHS_OK, SHS_EINVAL (e says why) or SHS_ENOMEM. */
int pp_emit(const pp_ctx *x, shs_buf *b, shs_err *e);

#endif
