/* Private state of the propagation engine shared by propagate.c, propagate_cost.c,
 * propagate_flow.c and propagate_score.c. */
#ifndef SHS_PROPAGATE_INTERNAL_H
#define SHS_PROPAGATE_INTERNAL_H

#include "manual.h"
#include "plan_internal.h"
#include "users.h"
#include "weights.h"

/* A list of candidates, shared by the instructions that asked the same query of the same class
 * (and by the table that finds it) and counted: the last one to let go gives it back to the
 * propagation's pool, which reuses its arena for the next list. */
typedef struct shs__list {
	shs_cands cands;
	double *floors;             /* each candidate's floor (in cands' arena), or NULL */
	shs_plan_chip floors_chip;  /* the chip they were made for */
	uint32_t refs;
	struct shs__list *next; /* in the pool */
} shs__list;

/* The candidates an instruction got last, and the hash of the query that got them (its
 * operands' shardings and the wanted result): a later pass asking the same reuses them. And
 * when its last decision was made (a tick of the propagation's clock), in which kind of pass
 * and from what its caller wanted of it: a later pass of the same kind asking the same query,
 * where none of its users and none of its operands' earlier users changed since that tick,
 * keeps the decision. */
typedef struct shs__cand_cache {
	uint64_t key;     /* the query the instruction last decided from */
	uint64_t lkey;    /* the key its list answers: the query's digest when its class has one */
	bool valid;
	bool decided;
	bool pull;
	uint64_t tick;
	uint64_t ext;
	shs__list *list;  /* a reference, or NULL */
	/* what its users required when last asked (an array leaf), and when: valid while none of
	 * them changed since */
	const shs_pspec *users_want;
	uint64_t users_tick;
	bool users_valid;
	/* its query class (shs_host_query_class; 0: asked itself), once known */
	uint64_t cls;
	bool cls_known;
	bool digestible; /* its strategies digest its queries (known with cls) */
} shs__cand_cache;

/* The list that answers a query of a class (propagate_share.c): an open-addressing table of
 * (class, query key) -> list (a reference each), cap a power of two; and the pool of lists no
 * one holds. */
typedef struct shs__share_entry shs__share_entry;
typedef struct shs__share {
	shs__share_entry *v;
	uint32_t cap, used;
	shs__list *pool;
} shs__share;

/* What a pass over a computation of a twin class (structurally identical computations) last
 * made: the hash of the state it started from, and the computation that holds the result. A
 * twin starting from the same state takes a copy instead of a pass. */
typedef struct shs__twin_memo {
	uint64_t key;
	uint32_t src;
	bool valid;
} shs__twin_memo;

/* The score parts of the instruction being decided (propagate_score.c): an open-addressing
 * table of used entries (a power of two) in v (cap allocated, owned, reused); an entry is
 * in use when its gen is the current decision's. */
typedef struct shs__score_entry shs__score_entry;
typedef struct shs__score_memo {
	shs__score_entry *v;
	uint32_t cap, used, count, gen;
	bool on;       /* enough candidates to keep parts */
	bool operands; /* operand parts may be kept (no operand value repeats) */
} shs__score_memo;

typedef struct shs__prop {
	shs_host *h;
	const shs_module *m;
	const shs_plan_request *r;
	shs_plan *p;
	shs_users *users;     /* per computation */
	bool **free_instr;    /* per computation: constants, iotas, broadcasts of them */
	shs_pspec **hints;    /* per computation: the module's Sharding hints (array leaves) */
	bool **hint_set;      /* per computation: which instructions have one (NULL: none) */
	bool **pinned;        /* per computation: which of the hints are the plan's activation
			       * rules (a result candidates must make; not fixed) (NULL: none) */
	uint32_t pins_missed; /* pinned instructions no candidate could make as pinned */
	uint32_t *visits;     /* per computation: calls in progress (recursion guard) */
	const shs_pspec **ext_req; /* per computation: what its caller wants of its root, or NULL */
	uint64_t *loop_of;    /* per computation: the loop that runs it as its body, as
			       * (computation << 32) | (instruction + 1), or 0 */
	const bool **ext_off; /* per computation: which leaves of its root its caller only sends
			       * on to work that does not wait for them (the optimizer's update,
			       * plan_update.c; stacks kept for later), or NULL */
	shs_weights *weights; /* the module's weights (their gathers are prefetched) */
	shs_manual manual;    /* shard_map's regions: instructions run as the program wrote */
	bool *state;          /* entry instructions: a seeded parameter (weight, Adam state) or
			       * elementwise of one at its shape (the optimizer's update) */
	shs_pspec *root_want; /* the entry root's requirement from input_output_alias, or NULL */
	bool *root_aliased;   /* per leaf of the entry root: root_want holds its requirement */
	shs__cand_cache **cache; /* per computation and instruction */
	shs__share *share;    /* the lists by query class: the request's, or own_share */
	shs__share own_share;
	const shs_host_views *views; /* the request's, or own_views */
	shs_host_views *own_views;
	uint32_t *twin;       /* per computation: the first one structurally identical to it */
	bool *leaf;           /* per computation: it calls no computation (call, while, cond.) */
	shs__twin_memo *memo; /* per twin class (indexed by its first computation) */
	shs_pspec *scratch;   /* shs__user_req's answer for tuples; valid until its next call */
	uint32_t scratch_cap;
	shs__score_memo score; /* owned */
	bool reverse;         /* this pass runs users before producers */
	bool pull;            /* users' requirements count (every pass after the first) */
	bool changed;
	uint64_t clock;       /* ticks once per decision that changes (stamped on it) */
	shs_err *e;
	int rc;
} shs__prop;

/* What the update wants of the layers (propagate_pins.c).
 * shs__leaves_layer: whether what instruction i of computation c makes only leaves c for work
 * that does not wait for it: its collectives are off the layer's path.
 * shs__pinned_element: what the optimizer's update (plan_update.c) pins element k of call or
 * loop i's result to: the layout its pinned elementwise users share, when its other users are
 * elementwise work or reductions of it (the clipping's norm); or NULL. The gradient then
 * leaves the backward pass as the update wants it (reduced in the layer, as XLA reduces a
 * data-parallel gradient where the dot makes it), not in the layout the layer would give it.
 * shs__with_pinned: want (the n leaves of call i's result, or NULL) with the elements the
 * update pins as it pins them, and *off (malloc'ed, or NULL: none) which elements are off the
 * path: the update takes them, or they only leave c. Returns a malloc'ed array, or NULL when
 * there is nothing to want (or no memory: then the call is asked as its users ask, and nothing
 * is off the path).
 * shs__pinned_carry: which of the n carried leaves of loop i the update pins (a tuple of arrays
 * only): a malloc'ed array, or NULL when none (or no memory). */
bool shs__leaves_layer(const shs__prop *x, uint32_t c, uint32_t i);
const shs_pspec *shs__pinned_element(const shs__prop *x, uint32_t c, uint32_t i, uint32_t k);
shs_pspec *shs__with_pinned(shs__prop *x, uint32_t c, uint32_t i, const shs_pspec *want,
			    uint32_t n, bool **off);
bool *shs__pinned_carry(const shs__prop *x, uint32_t c, uint32_t i, uint32_t n);
/* shs__stack_wants (propagate_stack.c): in want (the n leaves wanted of call i's result, a
 * tuple of arrays, in loop body c), each element the body writes into a stack of saved values
 * (a dynamic-update-slice of a carried element the loop fills from zeros) as the later loop
 * that reads the stack's slices wants them (the backward pass). The layer that makes a saved
 * value then weighs its backward readers, as an unrolled layer's value has them for users. */
void shs__stack_wants(shs__prop *x, uint32_t c, uint32_t i, shs_pspec *want, uint32_t n);
/* Whether a and b are arrays of the same dims. */
bool shs__same_dims(const shs_shape *a, const shs_shape *b);
/* shard_map's regions (plan_manual.c).
 * shs__manual_fix: fixes each region boundary's decision (an SPMDFullToShardShape takes its
 * operand as the program shards it and gives the local array replicated over the region's
 * manual axes; an SPMDShardToFullShape leaving a manual region the reverse), marks each
 * instruction of a partly manual region with its manual axes (decision manual_axes) and drops
 * the plan's pins inside manual regions and on boundaries (a partly manual region's own
 * constraints, over its auto axes, stay). SHS_OK, or SHS_EINVAL when a boundary's split is none the
 * mesh can make or a partly manual region's axes are none of the mesh's, SHS_ENOMEM.
 * shs__manual_coll: the collective that instruction i of computation c, written in a region,
 * performs over the mesh (its device groups as mesh axes) into *out: 1; 0 when i is no
 * collective; -1 with e set when its groups are unreadable or off the mesh. */
int shs__manual_fix(shs__prop *x, shs_err *e);
/* shs__manual_exit: decides instruction i of computation c when it leaves a partly manual
 * region (an SPMDShardToFullShape): its operand's sharding, with the region's manual axes on
 * the dims they make whole. 1 when decided, 0 when i is none (or not decidable so), -1 on
 * error (x->rc). */
int shs__manual_exit(shs__prop *x, uint32_t c, uint32_t i);
/* shs__manual_axes: the mesh axes the region `partial` opens (an SPMDFullToShardShape) runs
 * over by hand: every axis for a manual region (partial NULL), else those its sharding's manual
 * subgroup names. SHS_OK, or SHS_EINVAL (naming it) when its sharding names none of mesh's. */
int shs__manual_axes(const shs_mesh *mesh, const shs_instr *partial, uint32_t *mask,
		     shs_err *e);
int shs__manual_coll(const shs__prop *x, uint32_t c, uint32_t i, shs_coll *out, shs_err *e);

/* Room for computation c's hints (x->hints, hint_set, pinned); false when out of memory. */
bool shs__hint_room(shs__prop *x, uint32_t c);

/* The shardings the module states on its entry parameters and root, kept (plan_given.c): a
 * parameter's fixes its decision, the root's pins it (each element of a tuple root its
 * operand's). Those that do not fit the mesh are warned about. SHS_OK or SHS_ENOMEM. */
int shs__given_shardings(shs__prop *x, shs_err *e);
/* Pins the optimizer's update (plan_update.c): each instruction of the state (x->state) to the
 * layout of the state it updates, as the step's aliased outputs require it back, and the
 * gradient's elementwise way into it to the layout its users there share. SHS_OK or
 * SHS_ENOMEM. */
int shs__pin_update(shs__prop *x, shs_err *e);

/* Estimated seconds on chip of moving array a from sharding from to sharding to (0 when equal):
 * gathered axes cost an all-gather, moved axes an all-to-all, added axes nothing. When moved is
 * not NULL it receives the all-to-all's share of the seconds. */
double shs__reshard_cost(const shs_pspec *from, const shs_pspec *to, const shs_shape *a,
			 const shs_mesh *mesh, const shs_plan_chip *chip, double *moved);

/* Whether the runtime decomposes a matmul whose collective, or gathered operand, is of that
 * many bytes under it (collective matmul): from the chip's windowed-einsum size on (0: any
 * size), as the evaluator has it (evaluate_rate.c). */
bool shs__decomposed(const shs_plan_chip *chip, double bytes);

/* Bytes of array a resharded from from into to once the axes to drops are gathered. */
double shs__gathered_bytes(const shs_pspec *from, const shs_pspec *to, const shs_shape *a,
			   const shs_mesh *mesh);

/* shs__reshard_cost as the user that wants the array in sharding to sees it: a matmul that
 * hides the gather (hidden true) counts only the hidden share of the gather and the
 * all-to-all, as a candidate's score counts it. */
double shs__user_reshard_cost(const shs_pspec *from, const shs_pspec *to, const shs_shape *a,
			      const shs_mesh *mesh, const shs_plan_chip *chip, bool hidden);

/* Seconds of candidate c's own compute on chip (its FLOPs and HBM bytes): what its cost is at
 * least, whatever its collectives and reshards add. */
double shs__cand_compute(const shs_cand *c, const shs_plan_chip *chip);

/* Seconds collective coll of a candidate holds the links of its mesh axes on chip, as the
 * book costs it (an overlappable permute: a ring of n - 1 sends). */
double shs__coll_link_s(const shs_coll *coll, const shs_mesh *mesh, const shs_plan_chip *chip);

/* Estimated seconds on chip of candidate c's work: max(its compute, the collectives that
 * overlap it: its own overlappable ones and the given hidden seconds) + the rest and the given
 * exposed seconds; off_path: its own all-reduces overlap the work after it (counted as hidden,
 * beside any compute). */
double shs__cand_cost(const shs_cand *c, const shs_mesh *mesh, const shs_plan_chip *chip,
		      double hidden, double exposed, bool off_path);

/* Whether the n specs at a and b are equal, one by one. */
bool shs__specs_equal(const shs_pspec *a, const shs_pspec *b, uint32_t n);
/* Makes the score memo ready for the n_cands candidates of instruction i of computation c:
 * SHS_OK, or SHS_ENOMEM (x->e set). */
int shs__score_begin(shs__prop *x, uint32_t c, uint32_t i, uint32_t n_cands);
/* The score of candidate cand of instruction i (after shs__score_begin): its own work with
 * the collectives it overlaps, resharding its operands from hints (a seeded parameter's
 * several times over; nothing when an earlier user made the same copy; a matmul overlapping
 * the gathers), and in passes after the first the reshards its users would need of its
 * n_res result leaves of shapes res_shapes. wanted: it makes what its users want (then, when
 * its value only leaves the layer, its collectives are off the layer's path). */
double shs__score(shs__prop *x, uint32_t c, uint32_t i, const shs_cand *cand,
		  const shs_pspec *const *hints, const shs_shape *const *res_shapes,
		  uint32_t n_res, bool wanted);
/* Frees the memo's table. */
void shs__score_memo_free(shs__score_memo *m);

/* The shared candidate lists (propagate_share.c).
 * shs__share_init sizes the table for m's instructions (SHS_OK or SHS_ENOMEM);
 * shs__share_free frees it, the lists it holds and the pool (every instruction must have let
 * go of its list first).
 * shs__share_get: the list of class cls asked key, or NULL (borrowed: take a reference to
 * keep it).
 * shs__share_put: records l as the answer of (cls, key) with a reference of its own (nothing
 * when the table is full).
 * shs__list_new: an empty list with one reference, from the pool or new (its arena empty and
 * ready for a query); NULL when out of memory.
 * shs__list_drop: lets go of one reference to l (NULL does nothing); the last one puts it in
 * the pool. */
int shs__share_init(shs__share *s, const shs_module *m);
void shs__share_free(shs__share *s);
shs__list *shs__share_get(const shs__share *s, uint64_t cls, uint64_t key);
void shs__share_put(shs__share *s, uint64_t cls, uint64_t key, shs__list *l);
shs__list *shs__list_new(shs__share *s);
void shs__list_drop(shs__share *s, shs__list *l);
/* shs__plan_lists_share: the table of lists l holds. shs__plan_lists_fit: whether l was made
 * for module m and mesh. */
shs__share *shs__plan_lists_share(shs_plan_lists *l);
bool shs__plan_lists_fit(const shs_plan_lists *l, const shs_module *m, const shs_mesh *mesh);
/* key chained with the hashes of the n specs at s, each over its rank's dims only. */
uint64_t shs__hash_specs(const shs_pspec *s, uint32_t n, uint64_t key);

/* Whether a user of value v of computation c changed its decision after tick. */
bool shs__users_changed_since(shs__prop *x, uint32_t c, uint32_t v, uint64_t tick);

/* The plan's decision of instruction i of computation c. */
shs_decision *shs__dec(shs__prop *x, uint32_t c, uint32_t i);

/* Keeps flops, bytes and a copy of the n_colls collectives on d (its own collectives freed). */
void shs__dec_set_work(shs__prop *x, shs_decision *d, double flops, double bytes,
		       const shs_coll *colls, uint32_t n_colls);

/* Sets decision d's result leaves (copied) and operand requirements (copied, flat with first[]
 * of n_operands + 1 entries, may be NULL when req is NULL); marks a change when they differ. */
int shs__dec_set(shs__prop *x, shs_decision *d, const shs_pspec *leaves, uint32_t n_leaves,
		 const shs_pspec *req, const uint32_t *first, uint32_t n_operands,
		 const char *strategy, const char *label, double cost);

/* What the users of instruction i (of computation c) require of it, leaf by leaf: of the
 * decided users' requirements the one with the smallest piece per device (the first of equals);
 * for the root of a called computation, what its caller wants; for a tuple read through
 * get-tuple-elements, each element as its reader wants it (in x->scratch: valid until the next
 * call). NULL when no user has one. */
const shs_pspec *shs__user_req(shs__prop *x, uint32_t c, uint32_t i);

/* Decides control-flow instruction i (tuple, get-tuple-element, call, while, conditional) and
 * the computations it calls; false when i is not one of those. */
bool shs__decide_flow(shs__prop *x, uint32_t c, uint32_t i);

/* Runs one pass over computation c (in x->reverse order). */
void shs__pass_comp(shs__prop *x, uint32_t c);

#endif
