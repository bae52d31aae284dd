/* A graph builder: appends typed HLO instructions to a computation, inferring their shapes. */
#ifndef SHS_GEN_BUILDER_H
#define SHS_GEN_BUILDER_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"
#include "status.h"

enum { SHS_GB_MAX_RANK = 8, SHS_GB_SCOPE_MAX = 256, SHS_GB_SCOPE_DEPTH = 32 };

/* Up to SHS_GB_MAX_RANK dimension sizes or numbers, passed by value. */
typedef struct shs_gdims {
	uint32_t n;
	int64_t d[SHS_GB_MAX_RANK];
} shs_gdims;

/* shs_gdims from a list of int64 expressions: GD(B, T, D); GD() is rank 0. */
#define GD(...) ((shs_gdims){ sizeof((int64_t[]){ 0, ##__VA_ARGS__ }) / sizeof(int64_t) - 1, \
			      { __VA_ARGS__ } })

/* A value: the index of an instruction in the computation being built. */
typedef uint32_t shs_v;

/* Reducers the builder makes computations for (one per kind and element type, shared). */
typedef enum shs_gb_reducer { SHS_GB_ADD = 0, SHS_GB_MAX = 1, SHS_GB_N_REDUCERS } shs_gb_reducer;

/* The builder. Errors are sticky: the first failure is kept in rc and e, and every later call
 * does nothing and returns value 0, so model code checks rc once at the end. The module m is
 * borrowed; computations go into m->comps when they are finished, so callees always come
 * before their callers. */
typedef struct shs_gb {
	shs_module *m;
	shs_computation *c;         /* the computation being built (not yet in m->comps) */
	int64_t next_id;            /* module-wide instruction and computation ids */
	char scope[SHS_GB_SCOPE_MAX]; /* metadata op_name prefix, "train_step/layers_3/mlp" */
	uint32_t depth;             /* pushes not yet popped */
	uint16_t marks[SHS_GB_SCOPE_DEPTH]; /* scope length before each of them */
	int rc;
	shs_err *e;
	int32_t reducers[SHS_GB_N_REDUCERS][SHS_ELEM_COUNT]; /* comp index + 1, 0: not made yet */
} shs_gb;

/* A computation saved while a nested one is built. */
typedef struct shs_gb_frame {
	shs_computation *c;
	char scope[SHS_GB_SCOPE_MAX];
	uint32_t depth;
	uint16_t marks[SHS_GB_SCOPE_DEPTH];
} shs_gb_frame;

/* Starts a builder on m (borrowed) with no current computation; errors go to e. */
void shs_gb_init(shs_gb *g, shs_module *m, shs_err *e);

/* Sets g->rc and e to code and the message, unless an error is already recorded. */
void shs_gb_fail(shs_gb *g, int code, const char *fmt, ...) SHS_PRINTF(3, 4);

/* Starts computation name (a ".ID" suffix is added), saving the current one in *saved. */
void shs_gb_begin(shs_gb *g, shs_gb_frame *saved, const char *name);

/* Finishes the current computation with root, appends it to m->comps and restores *saved.
 * Returns its index in m->comps (0 on error). */
uint32_t shs_gb_end(shs_gb *g, const shs_gb_frame *saved, shs_v root);

/* Gives computations ids 1.. in module order and instructions 1.. in module then computation
 * order, as the HLO text parser numbers them, and makes every ".N" name suffix the new id. */
void shs_gb_renumber(shs_gb *g);

/* Metadata scope: push appends "/part" (printf-style, may hold slashes) to the op_name prefix;
 * pop undoes the last push. */
void shs_gb_push(shs_gb *g, const char *fmt, ...) SHS_PRINTF(2, 3);
void shs_gb_pop(shs_gb *g);

/* The shape of value v (borrowed). */
const shs_shape *shs_gb_shape(const shs_gb *g, shs_v v);
/* Its dims as shs_gdims, and its element type. */
shs_gdims shs_gb_dims(const shs_gb *g, shs_v v);
int32_t shs_gb_type(const shs_gb *g, shs_v v);

/* Instructions. Operands are values of the current computation; shapes are inferred and
 * checked (a mismatch is a builder error naming the scope). */
shs_v shs_gb_param(shs_gb *g, int64_t number, int32_t type, shs_gdims dims, const char *name);
shs_v shs_gb_param_shape(shs_gb *g, int64_t number, const shs_shape *s, const char *name);
shs_v shs_gb_const(shs_gb *g, int32_t type, double value);   /* a scalar */
shs_v shs_gb_iota(shs_gb *g, int32_t type, shs_gdims dims, int64_t iota_dim);
shs_v shs_gb_broadcast(shs_gb *g, shs_v v, shs_gdims dims, shs_gdims map);
shs_v shs_gb_splat(shs_gb *g, int32_t type, double value, shs_gdims dims); /* const + bcast */
shs_v shs_gb_unary(shs_gb *g, shs_opcode op, shs_v v);
shs_v shs_gb_binary(shs_gb *g, shs_opcode op, shs_v a, shs_v b);
shs_v shs_gb_compare(shs_gb *g, shs_v a, shs_v b, const char *direction);
shs_v shs_gb_select(shs_gb *g, shs_v pred, shs_v on_true, shs_v on_false);
shs_v shs_gb_convert(shs_gb *g, shs_v v, int32_t type); /* v itself when already type */
shs_v shs_gb_reduce(shs_gb *g, shs_v v, shs_gdims dims, shs_gb_reducer kind);
shs_v shs_gb_dot(shs_gb *g, shs_v lhs, shs_v rhs, shs_gdims lhs_batch, shs_gdims rhs_batch,
		 shs_gdims lhs_contract, shs_gdims rhs_contract);
shs_v shs_gb_transpose(shs_gb *g, shs_v v, shs_gdims perm); /* v itself for the identity */
shs_v shs_gb_reshape(shs_gb *g, shs_v v, shs_gdims dims);   /* v itself when dims agree */
shs_v shs_gb_tuple(shs_gb *g, const shs_v *vals, uint32_t n);
shs_v shs_gb_gte(shs_gb *g, shs_v tuple, int64_t index);
shs_v shs_gb_while(shs_gb *g, shs_v init, uint32_t cond_comp, uint32_t body_comp);
/* call of computation comp (an index into m->comps) with args; the callee's root shape. */
shs_v shs_gb_call(shs_gb *g, uint32_t comp, const shs_v *args, uint32_t n);
/* dynamic-slice of v at starts (scalar s32 values, one per dim) with sizes. */
shs_v shs_gb_dynamic_slice(shs_gb *g, shs_v v, const shs_v *starts, shs_gdims sizes);
shs_v shs_gb_dynamic_update_slice(shs_gb *g, shs_v v, shs_v update, const shs_v *starts);
/* Embedding lookup: rows of table[V, D] at indices s32[B, T] -> [B, T, D]. */
shs_v shs_gb_gather_rows(shs_gb *g, shs_v table, shs_v indices);
/* Its transpose: adds updates[B, T, D] into rows of zeros[V, D] at indices. */
shs_v shs_gb_scatter_add_rows(shs_gb *g, shs_v zeros, shs_v indices, shs_v updates);

/* One array of a custom call's tuple result: element type, dims and minor_to_major (GD():
 * the default, major to minor). */
typedef struct shs_gb_leaf {
	int32_t type;
	shs_gdims dims;
	shs_gdims minor_to_major;
} shs_gb_leaf;
shs_gb_leaf shs_gb_leaf_of(int32_t type, shs_gdims dims, shs_gdims minor_to_major);
/* custom-call of target on operands whose result is the tuple of results[0..n_results);
 * backend_config (NULL or "": none) is copied. Take its arrays with shs_gb_gte. */
shs_v shs_gb_custom_call(shs_gb *g, const char *target, const shs_v *operands, uint32_t n,
			 const shs_gb_leaf *results, uint32_t n_results, const char *backend_config);

/* Conveniences built on the above. */
shs_v shs_gb_add(shs_gb *g, shs_v a, shs_v b);
shs_v shs_gb_sub(shs_gb *g, shs_v a, shs_v b);
shs_v shs_gb_mul(shs_gb *g, shs_v a, shs_v b);
shs_v shs_gb_div(shs_gb *g, shs_v a, shs_v b);
shs_v shs_gb_and(shs_gb *g, shs_v a, shs_v b);
shs_v shs_gb_scale(shs_gb *g, shs_v v, double k);      /* v * broadcast(k) */
shs_v shs_gb_sum(shs_gb *g, shs_v v, shs_gdims dims);  /* reduce-add in v's type, init 0 */
shs_v shs_gb_max(shs_gb *g, shs_v v, shs_gdims dims);  /* reduce-max, init -inf */
/* Broadcast of v (whose dims are the dims of out_dims not in dropped, in order) back up. */
shs_v shs_gb_expand(shs_gb *g, shs_v v, shs_gdims out_dims, shs_gdims dropped);

#endif
