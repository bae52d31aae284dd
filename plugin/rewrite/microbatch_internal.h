/* Private to the micro-batch rewrite: what each value holds of the batch (microbatch_flow.c,
 * microbatch_ops.c) and the module written from it (microbatch_emit.c). */
#ifndef SHS_MICROBATCH_INTERNAL_H
#define SHS_MICROBATCH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "microbatch.h"

/* What an array value holds of the batch. */
enum {
	MB_NONE = 0,    /* nothing: the same in every micro-batch */
	MB_BATCH = 1,   /* one row per sequence along dim `dim` (a micro-batch holds 1/M) */
	MB_PARTIAL = 2  /* a sum over the sequences (a micro-batch's is its share of it) */
};

typedef struct mb_leaf {
	uint8_t kind;
	int8_t dim;     /* MB_BATCH: the batch dim */
	bool zero;      /* MB_NONE: all zeros (a sum of zeros stays zero) */
	uint64_t free;  /* MB_NONE: dims the rewrite can make any size (bit d: dim d; broadcast
			 * dims, an iota's other dims) */
	bool scaled;    /* linear in the deferred scale (mb_ctx.scale): computed in the loop
			 * with 1 in its place, multiplied by it after the loop */
} mb_leaf;

/* Where an entry instruction runs. */
enum { MB_OUT = 0, MB_LOOP = 1, MB_AFTER = 2 };

/* One computation analysed under one state of its parameters. */
typedef struct mb_inst {
	uint32_t comp;
	uint32_t n_sig;
	mb_leaf *sig;        /* the parameters' leaves, parameter by parameter */
	uint32_t *first;     /* instruction i's leaves are leaf[first[i] .. first[i + 1]) */
	mb_leaf *leaf;
	uint32_t *op_first;  /* instruction i's operand leaves are need[op_first[i] ..) */
	int8_t *need;        /* per operand leaf: the dim it is taken resized on, or -1 */
	uint32_t *call_first; /* instruction i's callees' instances: callee[call_first[i] ..) */
	uint32_t *callee;
	uint8_t *where;      /* the entry only: MB_OUT, MB_LOOP or MB_AFTER per instruction */
	int8_t *promo;       /* per instruction: a value of the batch's size made here (a
			      * broadcast, an iota, work on them) that meets the batch on this dim
			      * takes it (made per micro-batch for every user), or -1 */
	bool again;          /* a promotion was found: the computation is analysed again */
	bool changes;        /* some shape changes: the computation is cloned */
	bool done;
	uint32_t out;        /* emission: its computation in the new module */
} mb_inst;

typedef struct mb_ctx {
	const shs_module *m;
	int64_t mb;          /* micro-batches */
	int64_t batch;
	uint32_t n_inst, cap;
	mb_inst **inst;
	uint32_t depth;
	uint32_t scale;      /* the entry's deferred scale: a scalar computed from sums over the
			      * batch (a loss divided by the batch's token count) that scales work
			      * in the loop; UINT32_MAX: none */
	uint32_t *deferred;  /* per entry instruction: the operand (a broadcast of the scale)
			      * the loop takes as 1, or UINT32_MAX */
	uint32_t *widen;     /* per entry instruction: when every use of it is a convert to one
			      * wider type, the first of them (the others are the same value),
			      * else UINT32_MAX */
	shs_err *e;
} mb_ctx;

/* The instance of computation c with parameter leaves sig[n] (analysed when new); *out gets its
 * index. SHS_OK, SHS_EINVAL (e says why the step cannot be split) or SHS_ENOMEM. */
int mb_analyse(mb_ctx *x, uint32_t c, const mb_leaf *sig, uint32_t n, uint32_t *out);
void mb_ctx_free(mb_ctx *x);

/* The result leaves of instruction i of x's instance from its operands' (microbatch_ops.c);
 * sets the resize needs of its operand leaves (need[k]) and its callees. SHS_OK, SHS_EINVAL
 * (with MB_NONLINEAR in *nonlinear when the only fault is a partial sum used in a way that
 * does not add up over the micro-batches) or SHS_ENOMEM. */
int mb_step(mb_ctx *x, uint32_t inst, uint32_t i, bool *nonlinear);

/* The leaves of instruction i (a while, call, fusion or conditional) of x's instance: its
 * callees analysed under its operands' leaves (microbatch_flow.c). */
int mb_calls(mb_ctx *x, uint32_t inst, uint32_t i);

/* The dim of operand k of instruction oi (a broadcast, a transpose, elementwise work; of
 * computation c) that its dim d comes from, or -1 (a broadcast dim, a scalar) (microbatch_ops.c). */
int8_t mb_operand_dim(const shs_computation *c, const shs_instr *oi, uint32_t k, int d);

/* Fails: "instruction NAME of COMP: why". */
int mb_fail(mb_ctx *x, const shs_computation *c, const shs_instr *i, const char *why);

/* Whether computation c of m is `add(p0, p1)` (a sum reducer). */
bool mb_is_add_reducer(const shs_module *m, uint32_t c);

/* Writing the new module (microbatch_emit.c). */
typedef struct em {
	mb_ctx *x;
	shs_module *nm;       /* its pointers borrow from x->m until it is saved and loaded */
	int64_t next_id;
	uint32_t *orig;       /* per computation of x->m: its index in nm, or UINT32_MAX */
	int rc;               /* the first failure (SHS_OK: none) */
} em;

/* Where one computation being written is: its instance, the new computation and the map from
 * old instruction indices to new ones. */
typedef struct site {
	const mb_inst *I;
	const shs_computation *c;
	shs_computation *nc;
	uint32_t *map;
	const char *suffix;   /* appended to the names of the copies ("" for none) */
	uint32_t trip;        /* the entry's loop body: its trip counter (a value the rewrite
			       * cannot remake is sliced to the micro-batch's rows); else
			       * UINT32_MAX */
} site;

/* Micro-batch s->trip's rows of value v of s's new computation along dim d ([.., B, ..] as
 * [.., B/M, M, ..], column trip), as the data is split (microbatch_loop.c). */
uint32_t mb_rows(em *E, const site *s, uint32_t v, int d);

/* Each returns the new instruction's or computation's index (UINT32_MAX after a failure, which
 * E->rc keeps), or false when out of memory. */
int mb_oom(em *E);
const char *mb_name_with(em *E, const char *name, const char *suffix);
uint32_t mb_add(em *E, shs_computation *nc, shs_instr *ins);
shs_instr *mb_fresh(em *E, shs_opcode op, const char *name);
bool mb_set_operands(em *E, shs_instr *i, const uint32_t *ops, uint32_t n);
bool mb_array_shape(em *E, shs_shape *s, int type, const int64_t *dims, uint32_t rank);
/* A copy of instruction i of s->c at its instance's shapes, its operands from s->map (resized
 * where the analysis says), its callees the instances' computations. */
uint32_t mb_copy(em *E, site *s, uint32_t i);
/* Marks in used[] what the instructions of instance I (computation c) read: operand edges
 * taken as they are, and for a resized one (need per leaf) what its resized copy reads. */
void mb_mark_resized(const mb_inst *I, const shs_computation *c, uint32_t v, const int8_t *need,
		     uint8_t *used, uint32_t depth);
void mb_mark_operands(const mb_inst *I, const shs_computation *c, uint32_t i, uint8_t *used);
/* Whether ins must stay though nothing reads it (parameters, side effects). */
bool mb_effects(const shs_instr *ins);
/* Computation c of the old module in nm as it is; the computation of instance k (the original
 * when nothing in it changes, else a clone at its shapes). */
uint32_t mb_orig_comp(em *E, uint32_t c);
uint32_t mb_inst_comp(em *E, uint32_t k);

/* Writes the new module from the analysed entry instance x->inst[entry] (microbatch_loop.c).
 * *out borrows from x->m: the caller saves and loads it, then frees it. */
int mb_emit(mb_ctx *x, uint32_t entry, shs_module **out);

#endif
