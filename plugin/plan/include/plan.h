/* Sharding plans: a mesh, seeds for the entry parameters, and a sharding for every instruction. */
#ifndef SHS_PLAN_H
#define SHS_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "host.h"
#include "ir.h"
#include "weights.h"
#include "sharding.h"
#include "status.h"

/* The named plans, and a plan file. */
typedef enum shs_plan_kind {
	SHS_PLAN_DP = 0,      /* batch on data; weights replicated */
	SHS_PLAN_FSDP = 1,    /* batch on data and fsdp; weights split on fsdp (largest dim) */
	SHS_PLAN_TP = 2,      /* batch on data; heads, MLP hidden and vocab dims on tensor */
	SHS_PLAN_FSDP_TP = 3, /* both */
	SHS_PLAN_RULES = 4    /* only the rules of a plan file (on top of its base) */
} shs_plan_kind;

enum { SHS_PLAN_MAX_RULES = 256 };

/* A plan file rule: entry parameters whose path (see shs_param_path) matches the glob pattern
 * get spec (its rank must equal the parameter's); an activation rule instead pins the result
 * of every other instruction whose path matches (as jax.lax.with_sharding_constraint or
 * MaxText's logical axis rules pin activations): propagation picks, for it, only candidates
 * that make spec. An activation rule that matches nothing is a warning, not an error. */
typedef struct shs_plan_rule {
	char pattern[128];
	shs_pspec spec;
	bool activation;
} shs_plan_rule;

/* The chip propagation compares candidates on: a roofline and ring collectives over one link.
 * It is the cost model's hardware (shs_hw_chip of the cluster's entry), never a copy of it. */
typedef struct shs_plan_chip {
	double flops;          /* peak bf16 FLOP/s */
	double hbm_bw;         /* HBM bytes/s */
	double link_bw;        /* bytes/s of the links of one mesh axis */
	double windowed_einsum_bytes; /* a matmul's collective runs under it from this size on
				       * (collective matmul; 0: any size) */
} shs_plan_chip;

/* The candidate lists propagation got from the plugins, kept for the next plan of the same
 * module on the same mesh (the search makes two per mesh: ZeRO-3 and ZeRO-1 seeds ask many of
 * the same queries). One plan at a time may use them. */
typedef struct shs_plan_lists shs_plan_lists;
/* New empty lists for plans of m on mesh (both must outlive them; the mesh's names are copied);
 * caller frees with shs_plan_lists_free. SHS_OK or SHS_ENOMEM. */
int shs_plan_lists_new(const shs_module *m, const shs_mesh *mesh, shs_plan_lists **out,
		       shs_err *e);
/* Frees l and every list it holds; NULL does nothing. */
void shs_plan_lists_free(shs_plan_lists *l);

/* What a plan is made from. */
typedef struct shs_plan_request {
	shs_mesh mesh;
	char axis_names[SHS_MESH_MAX_AXES][32]; /* storage for mesh.names */
	shs_plan_kind kind;   /* the base: a named plan (RULES: nothing but the rules) */
	uint32_t n_rules;
	shs_plan_rule rules[SHS_PLAN_MAX_RULES];
	shs_plan_chip chip;   /* what propagation's costs are in (all three must be > 0) */
	bool ignore_hints;    /* drop the module's Sharding custom-call constraints */
	bool gathers_hidden;  /* score every gather into a matmul as hidden under it, as where
			       * the runtime decomposes every matmul (the search's second opinion:
			       * propagation ranks layouts by a heuristic, the evaluator judges) */
	bool fsdp_state_only; /* fsdp splits the optimizer state only, the weights stay whole
			       * over it (ZeRO-1/2; the search tries it next to FSDP) */
	bool no_reuse;        /* propagate every computation and instruction itself: no copy of
			       * a structurally identical computation that started from the same
			       * state, no decision kept because what it read is unchanged, no
			       * score part kept for the candidates that share a spec, no list
			       * of candidates copied from an instruction of the same query
			       * class (tests) */
	const uint64_t *comp_hash; /* each computation's structural hash (shs_module_hash of
				    * the module; borrowed), or NULL: computed */
	const shs_host_views *views; /* the module's instruction views (borrowed), or NULL: made */
	shs_plan_lists *lists; /* candidate lists shared with the other plans of this module and
				* mesh (borrowed), or NULL: the plan's own */
	shs_warn_fn warn;     /* warnings (a seed or hint that does not fit), or NULL */
	void *warn_user;
} shs_plan_request;

/* Parses "fsdp=16,tensor=4" into r->mesh (axis names [A-Za-z_][A-Za-z0-9_]*, sizes >= 1, at most
 * SHS_MESH_MAX_AXES, no repeats). Returns SHS_OK or SHS_EINVAL (e says what is wrong). */
int shs_plan_parse_mesh(shs_plan_request *r, const char *text, shs_err *e);

/* Copies mesh (a cluster's: its axes and sizes, without their layout) into r->mesh, its names
 * into r->axis_names. Returns SHS_OK or SHS_EINVAL (no axes, or a name parse_mesh refuses). */
int shs_plan_set_mesh(shs_plan_request *r, const shs_mesh *mesh, shs_err *e);

/* Sets r->kind (and fsdp_state_only) from "dp", "fsdp", "tp", "fsdp+tp", "zero1", "zero1+tp",
 * also as the search names its plans, followed by "+cp", "+ep", "+pp" (what the mesh's context,
 * expert and stage axes add, which the mesh itself gives). Returns SHS_OK or SHS_EINVAL. */
int shs_plan_parse_kind(shs_plan_request *r, const char *name, shs_err *e);

/* Reads a plan file (JSON): {"mesh": {"fsdp": 16, ...} (optional when r has one), "base":
 * "fsdp" (optional; default: rules only), "rules": [{"match": GLOB, "spec": [AXES, ...]}],
 * "activations": [{"match": GLOB, "spec": [AXES, ...]}] (activation rules)} where each AXES is
 * null, an axis name or a list of axis names. Errors name path and the member. Returns SHS_OK,
 * SHS_EIO, SHS_EPARSE or SHS_EINVAL. */
int shs_plan_load_json(shs_plan_request *r, const char *path, shs_err *e);

/* The path that names an entry parameter in rules: its op_name with JAX's ['key'] spelled /key,
 * or its name; e.g. "state.params/params/decoder/layers/mlp/wi_0/kernel" or
 * "train_step/params/layers_3/mlp/wi_0/parameter". Written into buf (cap bytes). */
void shs_param_path(const shs_instr *p, char *buf, size_t cap);

/* ---- Specs (spec.c): the sharding of one array, as plugins write it ---- */

/* A replicated spec of the given rank. */
void shs_spec_replicated(shs_pspec *s, uint32_t rank);
/* Whether s splits no dim over any axis. */
bool shs_spec_is_replicated(const shs_pspec *s);

/* Same rank, padding and axes on every dim. */
bool shs_spec_equal(const shs_pspec *x, const shs_pspec *y);

/* Whether candidate cand splits its result or an operand over a mesh axis of mask (a partly
 * manual region's manual axes, which the plan keeps out of its instructions' shardings). */
bool shs_cand_uses_axes(const shs_cand *cand, uint32_t mask);

/* Bytes of one device's piece of array a under s: ceil(dim / split) elements on each sharded
 * dim, as XLA pads a dim that does not divide (the padding is paid for). */
double shs_spec_local_bytes(const shs_pspec *s, const shs_shape *a, const shs_mesh *mesh);

/* The product of the sizes of the mesh axes dim d of s is split over (1 for none). */
int64_t shs_spec_dim_split(const shs_pspec *s, uint32_t d, const shs_mesh *mesh);

/* Sets s->padded to whether some dim of array a does not divide by its split. */
void shs_spec_mark_padded(shs_pspec *s, const shs_shape *a, const shs_mesh *mesh);

/* The dim of s that holds mesh axis a, or -1. */
int shs_spec_dim_of(const shs_pspec *s, uint32_t a);

/* The index of mesh axis name, or -1 when the mesh has none. */
int shs_mesh_axis(const shs_mesh *mesh, const char *name);

/* The named form of n specs, "[{fsdp}, {}]" each, comma-separated for tuples. Returns a new
 * string (caller frees) or NULL when out of memory. */
char *shs_specs_text(const shs_mesh *mesh, const shs_pspec *s, uint32_t n);

/* ---- Parameter paths (seed.c) ---- */

/* Whether a parameter path (shs_param_path) has segment word, between '/' or '.'. */
bool shs_param_path_has_segment(const char *path, const char *word);

/* Whether entry parameter p is the step's data (what seeds split over the batch axes): an
 * array, of integers or with a path segment such as "batch", "inputs" or "targets". */
bool shs_param_is_data(const shs_instr *p);
/* Whether a parameter path names optimizer state (Adam's mu and nu) rather than a weight. */
bool shs_param_path_is_optimizer_state(const char *path);
/* What a float array entry parameter with path is: what its name says where it says it
 * (optimizer state: opt_state, mu, nu; a weight: a "params" segment), else by_use, how the
 * step uses it (shs_entry_param_roles). */
shs_param_role shs_param_role_named(const char *path, shs_param_role by_use);

/* The decision for one instruction. Its leaves, req and req_first live in an arena (its plan's,
 * or whatever arena the code that made a loose copy gave); its collectives are its own. */
typedef struct shs_decision {
	bool set;               /* decided (false: nothing constrains it; annotated replicated) */
	bool fixed;             /* a seed or a hint: not revisited */
	uint32_t n_leaves;
	shs_pspec *leaves;      /* its result's sharding, leaf by leaf */
	uint32_t n_req;         /* what it requires of its operands (flat, leaf by leaf) */
	shs_pspec *req;
	uint32_t *req_first;    /* operand k's leaves start at req[req_first[k]] */
	uint32_t leaves_cap, req_cap; /* the room in leaves and req */
	const char *strategy;   /* borrowed from the host, or "seed", "hint", "control" */
	char label[SHS_PLUGIN_LABEL_MAX];
	double cost;            /* its score when chosen */
	double flops, bytes;    /* the chosen candidate's local FLOPs and HBM bytes per device */
	uint32_t n_colls;       /* the collectives it performs itself */
	shs_coll *colls;
	uint64_t tick;          /* the propagation's clock when it last changed */
	uint32_t manual_axes;   /* in a partly manual region (shard_map's auto axes): the mesh
				 * axes the program runs it over by hand, its shapes one group's;
				 * the plan's shardings of it never use them (the region's entry
				 * takes its operand over them, as the program states) */
} shs_decision;

/* Frees the collectives decision d owns and clears them (its other arrays go with their
 * arena). */
void shs_decision_free(shs_decision *d);

/* Sets d's result (n_leaves specs) and its requirements of its n_operands operands (n_req
 * specs, req_first: n_operands + 1 offsets; req NULL: none, n_req 0) to copies: in d's own
 * arrays where they have room, else in new ones from a. SHS_OK or SHS_ENOMEM (d unchanged). */
int shs_decision_set_specs(shs_decision *d, shs_arena *a, const shs_pspec *leaves,
			   uint32_t n_leaves, const shs_pspec *req, uint32_t n_req,
			   const uint32_t *req_first, uint32_t n_operands);

/* A plan: the mesh and a decision per instruction of every computation (d[c][i]). */
typedef struct shs_plan {
	shs_mesh mesh;
	char axis_names[SHS_MESH_MAX_AXES][32];
	uint32_t n_comps;
	uint32_t *n_instrs;
	shs_decision **d;
	shs_arena *arena;       /* owns the decisions' leaves and requirements */
	uint32_t passes;        /* propagation passes run */
	double total_cost;
	uint32_t n_reshards;    /* operand edges whose sharding differs from what the user wants */
	bool self_staged;       /* the module runs the mesh's stage axis by hand (a shard_map region
				 * manual over it: a program that pipelines itself): an ordinary
				 * axis, not the evaluator's pipeline schedule */
	bool keep_given;        /* annotate keeps the shardings the module gave its entry
				 * parameters and root (the request did not ignore hints) */
	uint32_t n_given;       /* the module's constraints the plan keeps: Sharding and Shardy
				 * constraint calls, entry parameters' and root's shardings */
} shs_plan;

/* Makes the plan r asks for on m by propagation (see propagate.c for the rules): seeds the entry
 * parameters, then decides every instruction from its plugins' candidates, compared on r's chip.
 * Warnings (a hint that does not fit the mesh, a seed that does not divide) go to h's warn
 * callback. On success *out is new (caller frees with shs_plan_free). Returns SHS_OK,
 * SHS_EINVAL (no mesh or chip, a plan rule that matches nothing) or SHS_ENOMEM. */
int shs_plan_make(shs_host *h, const shs_module *m, const shs_plan_request *r, shs_plan **out,
		  shs_err *e);

/* Frees p; NULL does nothing. */
void shs_plan_free(shs_plan *p);

/* Writes p into m: every instruction of every computation that is not a reducer (to_apply
 * region of reduce, scatter, ...) gets its sharding in XLA's form, tuples as tuple shardings;
 * the module's num_partitions becomes the device count. Sharding custom-calls keep theirs, and
 * so do the entry's parameters and root that had one (keep_given: jit's in and out shardings).
 * Returns SHS_OK, SHS_EINVAL (a spec does not convert) or SHS_ENOMEM. */
int shs_plan_annotate(const shs_plan *p, shs_module *m, shs_err *e);

/* Per computation of m, whether it is only a reducer (called as to_apply / comparator, never by
 * call, while or conditional): a malloc'ed array the caller frees, made in one pass over the
 * instructions; NULL when out of memory. */
bool *shs_comp_reducers(const shs_module *m);

/* ---- A candidate priced in a plan (plan_price.c), for explain ---- */

/* What candidate cand of instruction i of computation c costs on chip where plan p puts it,
 * in the propagation's estimates: its FLOPs and HBM bytes, its own collectives' link time, the
 * resharding of each operand from the sharding p gives its producer to the one cand wants,
 * and the three as the propagation scores them (collectives a matmul hides under itself).
 * Without a plan (p NULL), on mesh, nothing is resharded. */
typedef struct shs_cand_price {
	double compute_s, comm_s, reshard_s, total_s;
} shs_cand_price;
void shs_plan_price(const shs_plan *p, const shs_mesh *mesh, const shs_module *m, uint32_t c,
		    uint32_t i, const shs_cand *cand, const shs_plan_chip *chip,
		    shs_cand_price *out);

#endif
