/* The strategy plugin ABI: the only header a strategy plugin includes; it links nothing of ours. */
#ifndef SHARDSEARCH_PLUGIN_H
#define SHARDSEARCH_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bumped when anything below changes incompatibly; a plugin built for another version is
 * refused before the host calls its init (dlopen has run its ELF constructors). Structs that
 * carry a struct_size (shs_pmesh, shs_pinstr, shs_pquery, shs_strategy, shs_host_api) only
 * grow at the end and readers check struct_size before newer members. The others (shs_pdim,
 * shs_pspec, shs_pshape, shs_plist) sit in arrays or inside other structs and cannot grow:
 * their sizes, with the limits they depend on, make the sizes word (SHS_PLUGIN_SIZES), which
 * must equal the host's. */
#define SHS_PLUGIN_ABI_VERSION 2u

/* ---- Limits (compile-time; a plugin built with other values is refused by its sizes word) ---- */

#ifndef SHS_PLUGIN_MAX_AXES
#define SHS_PLUGIN_MAX_AXES 8   /* mesh axes */
#endif
#ifndef SHS_PLUGIN_MAX_RANK
#define SHS_PLUGIN_MAX_RANK 8   /* dims of one spec: a higher-rank array is never sharded (the
				 * host asks no strategy about it), and its replicated spec
				 * holds SHS_PLUGIN_MAX_RANK dims. Training steps stay well
				 * under it (XLA's own modules here: rank 5 at most); every
				 * spec is copied and compared by the million, at its size */
#endif

/* The label of a candidate that replicates a custom call because the plugin knows no sharding
 * rule for its target: a plan that chooses it names the call and its target in a warning. */
#define SHS_PLUGIN_UNKNOWN_CALL "replicated (no rule for this target)"

/* Limits of one query (checked by the host at run time, not part of the sizes word). */
enum {
	SHS_PLUGIN_LABEL_MAX = 64,          /* bytes of a candidate's label with its NUL; a longer
					     * label is cut */
	SHS_PLUGIN_MAX_CANDIDATES = 100000, /* candidates one query keeps ... */
	SHS_PLUGIN_MAX_SPECS = 1 << 21,     /* ... and fewer when candidates x leaves would pass
					     * this; candidate() then returns
					     * SHS_PLUGIN_NO_CANDIDATE */
	SHS_PLUGIN_MAX_COLLECTIVES = 64,    /* collectives one candidate performs */
	SHS_PLUGIN_MAX_STRATEGIES = 256,    /* strategies one plugin registers (each is asked
					     * about every instruction); past it, refused */
	SHS_PLUGIN_MSG_MAX = 512            /* bytes of a set_error or fail message; longer: cut */
};

/* What candidate() returns when the query is full or out of memory: stop proposing. */
#define SHS_PLUGIN_NO_CANDIDATE UINT32_MAX

/* Element types: XLA's PrimitiveType numbers (xla_data.proto), as shs_pshape.type holds them. */
enum shs_ptype {
	SHS_PTYPE_INVALID = 0,
	SHS_PTYPE_PRED = 1,
	SHS_PTYPE_S8 = 2,
	SHS_PTYPE_S16 = 3,
	SHS_PTYPE_S32 = 4,
	SHS_PTYPE_S64 = 5,
	SHS_PTYPE_U8 = 6,
	SHS_PTYPE_U16 = 7,
	SHS_PTYPE_U32 = 8,
	SHS_PTYPE_U64 = 9,
	SHS_PTYPE_F16 = 10,
	SHS_PTYPE_F32 = 11,
	SHS_PTYPE_F64 = 12,
	SHS_PTYPE_TUPLE = 13,
	SHS_PTYPE_OPAQUE = 14,
	SHS_PTYPE_C64 = 15,
	SHS_PTYPE_BF16 = 16,
	SHS_PTYPE_TOKEN = 17,
	SHS_PTYPE_C128 = 18,
	SHS_PTYPE_F8E5M2 = 19,
	SHS_PTYPE_F8E4M3FN = 20,
	SHS_PTYPE_S4 = 21,
	SHS_PTYPE_U4 = 22,
	SHS_PTYPE_F8E4M3B11FNUZ = 23,
	SHS_PTYPE_F8E5M2FNUZ = 24,
	SHS_PTYPE_F8E4M3FNUZ = 25,
	SHS_PTYPE_S2 = 26,
	SHS_PTYPE_U2 = 27,
	SHS_PTYPE_F8E4M3 = 28,
	SHS_PTYPE_F8E3M4 = 29,
	SHS_PTYPE_S1 = 30,
	SHS_PTYPE_U1 = 31,
	SHS_PTYPE_F4E2M1FN = 32,
	SHS_PTYPE_F8E8M0FNU = 33,
	SHS_PTYPE_BUFFER = 34
};

/* ---- Views: const, owned by the host, valid only during the call they are passed to ---- */

/* The device mesh: named logical axes ("data", "fsdp", "tensor", "context", "expert"). */
typedef struct shs_pmesh {
	uint32_t struct_size;
	uint32_t n_axes;
	const char *const *names;
	const int64_t *sizes;
} shs_pmesh;

/* A list of int64 (dimension numbers, sizes). */
typedef struct shs_plist {
	uint32_t n;
	const int64_t *v;
} shs_plist;

/* A shape: an array (type: enum shs_ptype) or a tuple (SHS_PTYPE_TUPLE) of n_tuple elements. */
typedef struct shs_pshape {
	int32_t type;
	uint32_t rank;
	const int64_t *dims;
	uint32_t n_tuple;
	const struct shs_pshape *tuple;
} shs_pshape;

/* One instruction. Lists are empty when the attribute is absent. */
/* One frontend attribute of an instruction. */
typedef struct shs_pattr {
	const char *key, *value;
} shs_pattr;

typedef struct shs_pinstr {
	uint32_t struct_size;
	const char *name;
	const char *opcode;             /* XLA's spelling: "dot", "add", "custom-call", ... */
	const char *op_name;            /* metadata op_name, or "" */
	shs_pshape shape;
	uint32_t n_operands;
	const shs_pshape *operands;     /* the operands' shapes */
	shs_plist dimensions;           /* broadcast, transpose, reduce, concatenate, iota, ... */
	shs_plist lhs_batch, rhs_batch, lhs_contracting, rhs_contracting; /* dot */
	shs_plist offset_dims, collapsed_slice_dims, start_index_map, slice_sizes; /* gather */
	/* scatter */
	shs_plist update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
	int64_t index_vector_dim;       /* gather, scatter */
	shs_plist dynamic_slice_sizes;
	shs_plist slice_starts, slice_limits, slice_strides; /* slice */
	int64_t tuple_index;            /* get-tuple-element */
	int64_t parameter_number;       /* parameter */
	const char *custom_call_target; /* custom-call, or "" */
	const char *backend_config;     /* custom-call, or "" */
	/* since struct_size covers them: XLA's frontend_attributes, as key and value strings
	 * (Shardy's xla.sdy.sharding_rule on a custom call among them). Only a custom call's
	 * may change a plugin's answer: other instructions that differ in nothing else share
	 * one list of candidates */
	uint32_t n_frontend_attrs;
	const shs_pattr *frontend_attrs;
} shs_pinstr;

/* ---- Shardings ---- */

/* The mesh axes one tensor dim is split over, major first. */
typedef struct shs_pdim {
	uint8_t n;
	uint8_t axes[SHS_PLUGIN_MAX_AXES];
} shs_pdim;

/* The sharding of one array: per dim, its mesh axes; axes no dim uses replicate it. padded: the
 * dims need not divide evenly (the partitioner pads). rank 0 with no axes is replicated. rank is
 * at most SHS_PLUGIN_MAX_RANK (see there). */
typedef struct shs_pspec {
	uint32_t rank;
	bool padded;
	shs_pdim dims[SHS_PLUGIN_MAX_RANK];
} shs_pspec;

/* What a generator is asked. Tuple-shaped values are sharded leaf by leaf (arrays in order,
 * depth first); leaf counts are the host's shs_host_api.leaves(). */
enum shs_pmode {
	SHS_PMODE_PROPAGATE = 0, /* the candidates worth having given the operands' shardings */
	SHS_PMODE_ENUMERATE = 1  /* every valid candidate (explain, search) */
};

typedef struct shs_pquery {
	uint32_t struct_size;
	const shs_pinstr *instr;
	const shs_pmesh *mesh;
	int mode;                       /* enum shs_pmode */
	/* The operands' current shardings, leaf by leaf: hints[k] has leaves(operands[k]) specs,
	 * or is NULL when operand k's sharding is not decided yet. */
	const shs_pspec *const *hints;
	/* The sharding already wanted of the result, leaf by leaf (a plan's parameter sharding, a
	 * sharding hint of the module), or NULL. */
	const shs_pspec *result_hint;
	/* call, while, conditional: the roots of the called computations (in the order of the
	 * instruction's called list: while body then condition; conditional branches), leaf by
	 * leaf as the host propagated them, or NULL entries when not known. */
	uint32_t n_called;
	const shs_pspec *const *called_roots;
} shs_pquery;

/* Collectives an op performs itself (the host's reshards are the same kinds). bytes, as
 * add_collective takes them: the whole array the collective works on within one group of the
 * axes (all-gather: the gathered result; reduce-scatter and all-reduce: the unreduced input;
 * all-to-all: the array; permute: what each device sends). */
enum shs_pcollective {
	SHS_PCOLL_ALL_REDUCE = 0,
	SHS_PCOLL_REDUCE_SCATTER = 1,
	SHS_PCOLL_ALL_GATHER = 2,
	SHS_PCOLL_ALL_TO_ALL = 3,
	SHS_PCOLL_PERMUTE = 4,     /* collective-permute: each device sends to a neighbour */
	SHS_PCOLL_COUNT
};

/* Opaque: the host's registry (during init) and a candidate list being filled (during a
 * generate call). */
typedef struct shs_registry shs_registry;
typedef struct shs_pemit shs_pemit;

struct shs_host_api;

/* A generator: emits candidates for q->instr through api and out. Returns 0, or non-zero after
 * api->fail() to report an error (the instruction is then served by the other strategies).
 * The search asks from several threads at once: generate and match must be reentrant (keep
 * no state between calls other than what user points to, read-only). */
typedef int (*shs_pgenerate_fn)(const shs_pquery *q, shs_pemit *out,
				const struct shs_host_api *api, void *user);

/* A strategy: which instructions it serves and its generator. Any of opcodes (NULL-terminated
 * XLA spellings), custom_call_targets (NULL-terminated), match and destroy may be NULL. */
typedef struct shs_strategy {
	uint32_t struct_size;
	const char *name;                        /* "dot.assign", shown by explain */
	const char *const *opcodes;
	const char *const *custom_call_targets;
	bool (*match)(const shs_pinstr *i, void *user);
	shs_pgenerate_fn generate;
	void *user;
	/* Releases user: called once for this registration when the host unloads the plugin,
	 * or when the plugin's init fails after registering it (before the plugin is closed). */
	void (*destroy)(void *user);
	uint32_t flags; /* SHS_STRATEGY_* (a plugin built before this member has 0) */
	/* Optional, for a SHS_STRATEGY_PURE strategy: a digest of what generate reads of the
	 * query's hints, result hint and mode. Two queries of instructions whose views are alike
	 * (same opcode, shapes, attributes) with equal digests get the same candidates, so the
	 * host may hand one's to the other; a dot that places axes only where its hints put them
	 * digests those places, not the hints. It returns 0 when it cannot tell; NULL (and for a
	 * plugin built before this member) and 0 mean every hint counts whole. */
	uint64_t (*digest)(const shs_pquery *q, void *user);
} shs_strategy;

/* generate and match read only what the query says of shapes, attributes, hints, mode and
 * mesh, never the instruction's name or op_name: an instruction whose query is the same in all
 * of these then gets the same candidates, and the host may hand it another's instead of asking
 * (an unrolled model's repeated layers and optimizer updates ask the same thousands of times).
 * Without it every instruction is asked. */
#define SHS_STRATEGY_PURE 1u

/* The functions the host lends a plugin. */
typedef struct shs_host_api {
	uint32_t struct_size;
	uint32_t abi_version;

	/* During init: registers s (copied; its strings and user must outlive the plugin). */
	int (*register_strategy)(shs_registry *reg, const shs_strategy *s);
	/* During init: the reason init fails (printf-style, cut to SHS_PLUGIN_MSG_MAX). */
	void (*set_error)(shs_registry *reg, const char *fmt, ...);

	/* During generate: starts a new candidate labelled label ("lhs-free=tensor", cut to
	 * SHS_PLUGIN_LABEL_MAX bytes); the result and operand specs default to replicated.
	 * Returns its index, or SHS_PLUGIN_NO_CANDIDATE when the query keeps no more (see
	 * SHS_PLUGIN_MAX_CANDIDATES) or is out of memory: the generator should return (calls
	 * that name SHS_PLUGIN_NO_CANDIDATE do nothing). */
	uint32_t (*candidate)(shs_pemit *out, const char *label);
	/* Sets the sharding of leaf `leaf` of the result, or of operand `operand`, of
	 * candidate c. */
	void (*set_result)(shs_pemit *out, uint32_t c, uint32_t leaf, const shs_pspec *spec);
	void (*set_operand)(shs_pemit *out, uint32_t c, uint32_t operand, uint32_t leaf,
			    const shs_pspec *spec);
	/* Local FLOPs and HBM bytes per device of candidate c. */
	void (*set_cost)(shs_pemit *out, uint32_t c, double flops, double bytes);
	/* A collective (kind: enum shs_pcollective) candidate c performs over the mesh axes in
	 * axes_mask (bit k: axis k) on bytes (as enum shs_pcollective says); overlappable: it can
	 * run under the op's own compute (collective matmul). An overlappable permute is a ring
	 * over the group of n devices (ring attention): n - 1 sends of bytes each, one after the
	 * other, while the op works through its n equal blocks, each block after the send that
	 * brings its data. At most SHS_PLUGIN_MAX_COLLECTIVES per candidate. */
	void (*add_collective)(shs_pemit *out, uint32_t c, int kind, uint32_t axes_mask,
			       double bytes, bool overlappable);
	/* During generate: reports why the generator gave up (printf-style, cut to
	 * SHS_PLUGIN_MSG_MAX). */
	void (*fail)(shs_pemit *out, const char *fmt, ...);

	/* Helpers: array leaves of a shape; bytes of one element of an XLA type (0 if none). */
	uint32_t (*leaves)(const shs_pshape *s);
	int (*elem_bytes)(int32_t type);

	/* During generate: a whole candidate at once, as candidate(label), then set_result of
	 * each result leaf from result[0..), set_operand of each leaf of each operand from
	 * operands[0..) (every operand's leaves, in order) and set_cost: one call, for a strategy
	 * that makes many. The specs are copied. Returns what candidate returns; collectives
	 * follow with add_collective. A host older than it has a smaller struct_size. */
	uint32_t (*add_candidate)(shs_pemit *out, const char *label, const shs_pspec *result,
				  const shs_pspec *operands, double flops, double bytes);
} shs_host_api;

/* ---- The plugin's exports ---- */

/* The sizes word: the limits and the sizes of the fixed-layout structs, one byte each (two for
 * shs_pspec), and the pointer size. */
#define SHS_PLUGIN_SIZES                                                                   \
	((uint64_t)SHS_PLUGIN_MAX_RANK | (uint64_t)SHS_PLUGIN_MAX_AXES << 8 |               \
	 (uint64_t)sizeof(shs_pdim) << 16 | (uint64_t)sizeof(shs_pspec) << 24 |             \
	 (uint64_t)sizeof(shs_pshape) << 40 | (uint64_t)sizeof(shs_plist) << 48 |           \
	 (uint64_t)sizeof(void *) << 56)

/* Its ABI version, its sizes word and its init. SHS_PLUGIN_DEFINE(fn) defines all three, with
 * fn of type int fn(shs_registry *, const shs_host_api *) returning 0 on success. The host
 * reads the version and the sizes word before it calls the plugin's init. */
typedef int (*shs_plugin_init_fn)(shs_registry *reg, const shs_host_api *api);

#define SHS_PLUGIN_EXPORT __attribute__((visibility("default")))

#define SHS_PLUGIN_DEFINE(fn)                                                              \
	SHS_PLUGIN_EXPORT const uint32_t shs_plugin_abi_version = SHS_PLUGIN_ABI_VERSION;  \
	SHS_PLUGIN_EXPORT const uint64_t shs_plugin_abi_sizes = SHS_PLUGIN_SIZES;          \
	SHS_PLUGIN_EXPORT int shs_plugin_init(shs_registry *reg, const shs_host_api *api); \
	int shs_plugin_init(shs_registry *reg, const shs_host_api *api)                    \
	{                                                                                  \
		if (api->abi_version != SHS_PLUGIN_ABI_VERSION) {                          \
			api->set_error(reg, "built for plugin ABI %u, host has %u",        \
				       SHS_PLUGIN_ABI_VERSION, api->abi_version);          \
			return -1;                                                         \
		}                                                                          \
		return fn(reg, api);                                                       \
	}

#endif
