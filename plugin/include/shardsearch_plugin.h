/* The strategy plugin ABI: the only header a strategy plugin includes; it links nothing of ours. */
#ifndef SHARDSEARCH_PLUGIN_H
#define SHARDSEARCH_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bumped when anything below changes incompatibly; a plugin built for another version is
 * refused. Structs only grow at the end; readers check struct_size before newer members. */
#define SHS_PLUGIN_ABI_VERSION 1u

enum {
	SHS_PLUGIN_MAX_AXES = 8,  /* mesh axes */
	SHS_PLUGIN_MAX_RANK = 16  /* dims of one array a strategy can shard */
};

/* ---- Views: const, owned by the host, valid only during the call they are passed to ---- */

/* The device mesh: named logical axes ("data", "fsdp", "tensor", "sequence", "expert"). */
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

/* A shape: an array (type is XLA's PrimitiveType number: 1 pred, 4 s32, 11 f32, 16 bf16, ...)
 * or a tuple (type 13) of n_tuple elements. */
typedef struct shs_pshape {
	int32_t type;
	uint32_t rank;
	const int64_t *dims;
	uint32_t n_tuple;
	const struct shs_pshape *tuple;
} shs_pshape;

/* One instruction. Lists are empty when the attribute is absent. */
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
} shs_pinstr;

/* ---- Shardings ---- */

/* The mesh axes one tensor dim is split over, major first. */
typedef struct shs_pdim {
	uint8_t n;
	uint8_t axes[SHS_PLUGIN_MAX_AXES];
} shs_pdim;

/* The sharding of one array: per dim, its mesh axes; axes no dim uses replicate it. padded: the
 * dims need not divide evenly (the partitioner pads). rank 0 with no axes is replicated. */
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

/* Collectives an op performs itself. */
enum shs_pcollective {
	SHS_PCOLL_ALL_REDUCE = 0,
	SHS_PCOLL_REDUCE_SCATTER = 1,
	SHS_PCOLL_ALL_GATHER = 2,
	SHS_PCOLL_ALL_TO_ALL = 3
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
 * XLA spellings), custom_call_targets (NULL-terminated) or match may be NULL. */
typedef struct shs_strategy {
	uint32_t struct_size;
	const char *name;                        /* "dot.assign", shown by explain */
	const char *const *opcodes;
	const char *const *custom_call_targets;
	bool (*match)(const shs_pinstr *i, void *user);
	shs_pgenerate_fn generate;
	void *user;
} shs_strategy;

/* The functions the host lends a plugin. */
typedef struct shs_host_api {
	uint32_t struct_size;
	uint32_t abi_version;

	/* During init: registers s (copied; its strings and user must outlive the plugin). */
	int (*register_strategy)(shs_registry *reg, const shs_strategy *s);
	/* During init: the reason init fails (printf-style). */
	void (*set_error)(shs_registry *reg, const char *fmt, ...);

	/* During generate: starts a new candidate labelled label ("lhs-free=tensor"); the
	 * result and operand specs default to replicated. Returns its index. */
	uint32_t (*candidate)(shs_pemit *out, const char *label);
	/* Sets the sharding of leaf `leaf` of the result, or of operand `operand`, of
	 * candidate c. */
	void (*set_result)(shs_pemit *out, uint32_t c, uint32_t leaf, const shs_pspec *spec);
	void (*set_operand)(shs_pemit *out, uint32_t c, uint32_t operand, uint32_t leaf,
			    const shs_pspec *spec);
	/* Local FLOPs and HBM bytes per device of candidate c. */
	void (*set_cost)(shs_pemit *out, uint32_t c, double flops, double bytes);
	/* A collective candidate c performs over the mesh axes in axes_mask (bit k: axis k) on
	 * bytes per device; overlappable: it can run under the op's own compute (collective
	 * matmul). */
	void (*add_collective)(shs_pemit *out, uint32_t c, int kind, uint32_t axes_mask,
			       double bytes, bool overlappable);
	/* During generate: reports why the generator gave up (printf-style). */
	void (*fail)(shs_pemit *out, const char *fmt, ...);

	/* Helpers: array leaves of a shape; bytes of one element of an XLA type (0 if none). */
	uint32_t (*leaves)(const shs_pshape *s);
	int (*elem_bytes)(int32_t type);
} shs_host_api;

/* The plugin's exports: its ABI version and its init. SHS_PLUGIN_DEFINE(fn) defines both, with
 * fn of type int fn(shs_registry *, const shs_host_api *) returning 0 on success. */
typedef int (*shs_plugin_init_fn)(shs_registry *reg, const shs_host_api *api);

#define SHS_PLUGIN_EXPORT __attribute__((visibility("default")))

#define SHS_PLUGIN_DEFINE(fn)                                                              \
	SHS_PLUGIN_EXPORT const uint32_t shs_plugin_abi_version = SHS_PLUGIN_ABI_VERSION;  \
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
