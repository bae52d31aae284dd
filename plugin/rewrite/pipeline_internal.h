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

/* The text's pieces (pipeline_text.c, pipeline_loops.c). All pointers borrowed for the call;
 * the put_ functions append to b. */

/* An array shape the text states: no layout, its dims its own. */
typedef struct pp_shape {
	int32_t type;
	uint32_t rank;
	int64_t dims[SHS_MAX_RANK + 2];
} pp_shape;

/* Where a new value's dims take the plan's sharding from: dim d of the value is split as dim
 * map[d] of spec (-1: not split); spec NULL: nothing split but the stage dim. */
typedef struct pp_layout {
	const shs_pspec *spec;
	int8_t map[SHS_MAX_RANK + 2];
} pp_layout;

/* The tuple shape of a loop's state: s32 counters, then the listed shapes (one per line of
 * text appended by pp_put_state). */
typedef struct pp_state {
	uint32_t n;
	pp_shape s[PP_MAX_STATE];
} pp_state;

/* The shape of element k of loop l's state in module m. */
pp_shape pp_elem_shape(const shs_module *m, const pp_loop *l, uint32_t k);

/* type[pre..., s's dims from `from` on]. */
void pp_put_shape(shs_buf *b, int type, const int64_t *pre, uint32_t n_pre,
		  const pp_shape *s, uint32_t from);

/* s as it is. */
void pp_put_same(shs_buf *b, const pp_shape *s);

/* [a, b, s's dims from `from` on]. */
void pp_put_two(shs_buf *b, const pp_shape *s, int64_t a, int64_t c, uint32_t from);

/* The layout of a value whose dims are `lead` new ones (not split) followed by the dims of the
 * plan's value from `from` on: dims from, from+1, ... of spec land after them. The first of the
 * plan's dims may also be placed at `first_at` (>= 0), e.g. a micro-batch's rows before the
 * micro-batch dim. */
pp_layout pp_layout_of(const shs_pspec *spec, uint32_t rank, uint32_t lead, int first_at,
		       uint32_t from);

/* The plan's sharding of leaf `leaf` of entry instruction i of the module (NULL: none). */
const shs_pspec *pp_spec_of(const pp_ctx *x, uint32_t i, uint32_t leaf);

/* The sharding of a value of rank `rank`: stage_dim split over the stage axis (-1: none, and
 * then, inside a region, the stage axis manual), its other dims as lay says (NULL: whole). */
int pp_put_sharding(shs_buf *b, const pp_ctx *x, uint32_t rank, int stage_dim,
		    const pp_layout *lay, bool manual, shs_err *e);

/* `%name = s Sharding(%src)`: a value in a stage region pinned where spec puts it (its dims
 * the plan's value's); a failure kept in *e when it holds none yet, the writing going on. */
void pp_put_pin(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		const pp_shape *s, const shs_pspec *spec, shs_err *e);

/* `%name = shape custom-call(%src), custom_call_target="target", sharding=...`. */
int pp_put_boundary(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		    const char *target, const pp_shape *s, int stage_dim,
		    const pp_layout *lay, bool manual, shs_err *e);

/* Sharding then SPMDFullToShardShape: a value of full shape `full` into the stages, its
 * local shape `local`; its dim stage_dim split over the stages (-1: the same on each). lay
 * maps the full shape's dims; the local shape's are the same dims. */
int pp_put_enter(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		 const pp_shape *full, const pp_shape *local, int stage_dim,
		 const pp_layout *lay, shs_err *e);

/* The source-target pairs of a send to the next stage (+1) or the one before (-1). */
void pp_put_pairs(shs_buf *b, const pp_ctx *x, int dir);

/* s with two leading dims a, c before its dims from `from` on. */
pp_shape pp_lead2(const pp_shape *s, int64_t a, int64_t c, uint32_t from);

/* A get-tuple-element of the state parameter: `%pre.eK = shape get-tuple-element(%pre.p)`. */
void pp_put_gte(shs_buf *b, const char *pre, const pp_shape *s, uint32_t k);

/* The condition `trip < n` of a loop with state st. */
void pp_put_cond(shs_buf *b, const char *pre, const pp_state *st, int64_t n);

/* The stage this device runs: its partition id over the devices a stage holds. */
void pp_put_stage(shs_buf *b, const pp_ctx *x, const char *pre);

/* `%name = shape broadcast(%name.zero)`: zeros of shape s. */
void pp_put_zeros(shs_buf *b, const char *name, const pp_shape *s);

/* The groups of devices one stage apart (each its position in every stage). */
void pp_put_stage_groups(shs_buf *b, const pp_ctx *x);

/* The plan's sharding of leaf `leaf` of instruction i of computation c of the module (NULL:
 * none). */
const shs_pspec *pp_spec_in(const pp_ctx *x, uint32_t c, uint32_t i, uint32_t leaf);

/* s as the text states it (its dims, no layout). */
pp_shape pp_of(const shs_shape *s);

/* A loop state's element s appended; the state's tuple shape `(s32[], ...)`. */
void pp_state_add(pp_state *st, const pp_shape *s);
void pp_put_state(shs_buf *b, const pp_state *st);

/* type[] (a scalar); s with dim 0 of size d0. */
pp_shape pp_scalar(int type);
pp_shape pp_dims0(const pp_shape *s, int64_t d0);

/* The four loops of one pass (forward or backward): inner and outer, condition and body. */
void pp_put_pass(shs_buf *b, const pp_ctx *x, const pp_loop *l, const pp_loop *ml,
		 const char *outer, const char *inner, pp_state *ost, pp_state *ist,
		 shs_err *e);

/* Index in the outer state of loop element k (neither the counter nor the carry). */
uint32_t pp_outer_at(const pp_loop *l, uint32_t k);

/* Appends the pipelined module's text to b: m's header, the computations the layers and the
 * entry's other work call, the pipeline's loops, and m's entry with its layer loops replaced.
 * SHS_OK, SHS_EINVAL (e says why) or SHS_ENOMEM. */
int pp_emit(const pp_ctx *x, shs_buf *b, shs_err *e);

#endif
