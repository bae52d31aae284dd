/* The IR: a module of computations of instructions, with shapes, attributes and shardings. */
#ifndef SHS_IR_H
#define SHS_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "elem.h"
#include "metadata.h"
#include "opcode.h"
#include "sharding.h"
#include "shs_limits.h"
#include "status.h"

/* Bytes with a length (may hold NULs). */
typedef struct shs_bytes {
	size_t len;
	const uint8_t *data;
} shs_bytes;

/* A list of int64 (dimension numbers, sizes, ...). */
typedef struct shs_i64s {
	uint32_t n;
	int64_t *v;
} shs_i64s;

/* LayoutProto: minor_to_major always; tiles, element size and memory space when set. */
typedef struct shs_layout {
	shs_i64s minor_to_major;
	uint32_t n_tiles;
	shs_i64s *tiles;
	int64_t element_size_in_bits;
	int64_t memory_space;
} shs_layout;

/* ShapeProto. An array has type, rank and dims; a tuple has type SHS_TUPLE and elements. */
typedef struct shs_shape {
	int32_t type;            /* shs_elem */
	uint32_t rank;
	int64_t *dims;
	bool *dynamic;           /* rank flags, or NULL when no dim is dynamic */
	shs_layout *layout;      /* NULL: no layout given */
	uint32_t n_tuple;
	struct shs_shape *tuple;
} shs_shape;

/* ProgramShapeProto: the signature of a computation. */
typedef struct shs_program_shape {
	uint32_t n_params;
	shs_shape *params;
	const char **param_names; /* n_params names, or NULL */
	shs_shape result;
} shs_program_shape;

/* A constant's value. data holds the elements row-major in logical order (not the layout's
 * order), each in shs_elem_bytes() little-endian bytes; complex as (real, imag) pairs; pred as
 * 0/1 bytes. elided: the text gave `{...}` and the values are unknown. Tuples have n_tuple
 * elements and no data. */
typedef struct shs_literal {
	bool elided;
	size_t size;
	const uint8_t *data;
	uint32_t n_tuple;
	struct shs_literal *tuple;
} shs_literal;

typedef struct shs_dot_dims {
	shs_i64s lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
} shs_dot_dims;

typedef struct shs_gather_dims {
	shs_i64s offset_dims, collapsed_slice_dims, start_index_map;
	int64_t index_vector_dim;
	shs_i64s operand_batching_dims, start_indices_batching_dims;
} shs_gather_dims;

typedef struct shs_scatter_dims {
	shs_i64s update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
	int64_t index_vector_dim;
	shs_i64s input_batching_dims, scatter_indices_batching_dims;
} shs_scatter_dims;

typedef struct shs_slice_dim {
	int64_t start, limit, stride;
} shs_slice_dim;

typedef struct shs_window_dim {
	int64_t size, stride, pad_low, pad_high, window_dilation, base_dilation;
	bool reversal;
} shs_window_dim;

typedef struct shs_conv_dims {
	int64_t input_batch, input_feature;
	shs_i64s input_spatial;
	int64_t kernel_input_feature, kernel_output_feature;
	shs_i64s kernel_spatial;
	int64_t output_batch, output_feature;
	shs_i64s output_spatial;
} shs_conv_dims;

typedef struct shs_pad_dim {
	int64_t low, high, interior;
} shs_pad_dim;

typedef struct shs_attr_kv {
	const char *key, *value;
} shs_attr_kv;

/* A text attribute the IR does not model, kept verbatim: `name=value` prints back as read.
 * Modules holding one cannot be written as protobuf (the save says which). */
typedef struct shs_raw_attr {
	const char *name;
	const char *value;
} shs_raw_attr;

enum shs_precision { SHS_PRECISION_DEFAULT = 0, SHS_PRECISION_HIGH = 1, SHS_PRECISION_HIGHEST = 2 };

/* One HLO instruction. Operands and control predecessors are indices into the computation's
 * instrs (always smaller than this instruction's own index once verified); called computations
 * are indices into the module's comps. Pointers are NULL and lists empty when the attribute is
 * absent; integer attributes hold XLA's proto default when absent. */
typedef struct shs_instr {
	const char *name;
	int64_t id;
	shs_opcode op;
	shs_shape shape;
	uint32_t n_operands;
	uint32_t *operands;
	uint32_t n_control;
	uint32_t *control;
	uint32_t n_called;
	uint32_t *called;        /* while: [body, condition]; conditional: branches */

	int64_t parameter_number;
	int64_t tuple_index;
	shs_i64s dimensions;     /* broadcast, transpose, reduce, concatenate, iota (1 entry), ... */
	shs_metadata *metadata;
	shs_sharding *sharding;  /* NULL: no sharding annotation */
	shs_literal *literal;    /* constants */
	shs_dot_dims *dot;
	shs_gather_dims *gather;
	shs_i64s gather_slice_sizes;
	shs_scatter_dims *scatter;
	uint32_t n_slice;
	shs_slice_dim *slice;
	shs_i64s dynamic_slice_sizes;
	uint32_t n_window;       /* window present when window != NULL (may have 0 dims) */
	shs_window_dim *window;
	shs_conv_dims *conv;
	uint32_t n_padding;
	shs_pad_dim *padding;    /* pad: padding_config, present when != NULL */
	int32_t exponent_bits, mantissa_bits;
	const char *comparison_direction; /* "LT", ... */
	const char *comparison_type;      /* "TOTALORDER", ... or NULL */
	const char *custom_call_target;
	bool custom_call_has_side_effect;
	bool layout_constrained;          /* custom call: operand_layout_constraints given */
	uint32_t n_operand_layouts;
	shs_shape *operand_layouts;       /* its shapes, with layouts (may be none) */
	const char *fusion_kind;          /* "kLoop", ... */
	shs_bytes backend_config;
	int64_t channel_id;
	int64_t feature_group_count;      /* 0 when absent (XLA then means 1) */
	int64_t batch_group_count;
	uint32_t n_precision;
	int32_t *precision;               /* enum shs_precision per operand */
	bool is_stable, indices_are_sorted, unique_indices, largest;
	uint32_t n_frontend_attrs;
	shs_attr_kv *frontend_attrs;
	uint32_t n_raw_attrs;
	shs_raw_attr *raw_attrs;

	shs_bytes unknown;       /* protobuf fields of HloInstructionProto we do not declare */
} shs_instr;

typedef struct shs_computation {
	const char *name;
	int64_t id;
	uint32_t n_instrs;
	shs_instr **instrs;      /* dependency order */
	uint32_t root;           /* index into instrs */
	const char *execution_thread; /* NULL: the main thread */
	shs_bytes unknown;
} shs_computation;

/* One entry of input_output_alias: output {output_index} may alias parameter
 * param_number {param_index}. kind: 0 undefined, 1 may-alias, 2 must-alias. */
typedef struct shs_alias {
	shs_i64s output_index;
	int64_t param_number;
	shs_i64s param_index;
	int32_t kind;
} shs_alias;

/* How HLO text names instructions and operands; the printer follows what the input used. */
typedef struct shs_text_style {
	bool percent;        /* %name (older printer) rather than name */
	bool operand_shapes; /* operands printed with their shapes: `f32[2] %x` */
	bool signatures;     /* computation headers with `(p: f32[2]) -> f32[2]` */
	bool compact_entry_layout; /* entry_computation_layout parameters joined by "," with no
				    * space or index comments (an older printer; XLA's fuzz corpus) */
} shs_text_style;

typedef struct shs_module {
	shs_arena *arena;        /* owns everything below */
	const char *name;
	int64_t id;
	uint32_t n_comps;
	shs_computation **comps; /* callees before callers */
	uint32_t entry;          /* index into comps */
	shs_program_shape *entry_layout; /* entry_computation_layout / host_program_shape */
	uint32_t n_aliases;
	shs_alias *aliases;
	uint32_t n_frontend_attrs;
	shs_attr_kv *frontend_attrs;
	/* Module-config values of the text header; not part of HloModuleProto. */
	int64_t num_partitions, replica_count; /* 0: not given */
	uint32_t n_raw_attrs;
	shs_raw_attr *raw_attrs; /* other header attributes, verbatim */
	shs_bytes unknown;       /* HloModuleProto fields we do not declare */
	shs_bytes wrapper_unknown; /* HloProto fields beside hlo_module (buffer assignment, ...) */
	bool from_hlo_proto;     /* loaded from an HloProto wrapper rather than a bare module */
	int source_format;       /* the shs_format (io.h) it was read in; 0 when built in memory */
	shs_text_style style;
} shs_module;

/* A new empty module whose arena refuses to grow past budget bytes (0: no limit).
 * Caller frees with shs_module_free(). NULL when out of memory. */
shs_module *shs_module_new(size_t budget);

/* Frees the module and everything in its arena. NULL does nothing. */
void shs_module_free(shs_module *m);

/* The entry computation. Borrowed, valid until the module is freed. */
shs_computation *shs_module_entry(const shs_module *m);

/* The computation named name, or NULL. */
shs_computation *shs_module_find_comp(const shs_module *m, const char *name);

/* Appends c to m->comps / i to c->instrs, growing the arrays in m's arena.
 * Returns SHS_OK or SHS_ENOMEM. */
int shs_module_add_comp(shs_module *m, shs_computation *c);
int shs_comp_add_instr(shs_module *m, shs_computation *c, shs_instr *i);

/* Array leaves of a shape: 1 for an array, the sum over its elements for a tuple (saturating;
 * 0 for NULL). */
uint32_t shs_shape_leaves(const shs_shape *s);

/* The leaf of tuple shape t that element idx starts at: the leaves of the elements before it
 * (saturating; idx past the end counts every element). */
uint32_t shs_shape_element_leaf(const shs_shape *t, int64_t idx);

/* The array leaves of s, depth first, into out[] (borrowed pointers into s); returns how many
 * were written (at most cap). */
uint32_t shs_shape_leaf_list(const shs_shape *s, const shs_shape **out, uint32_t cap);

/* Number of elements of an array shape (1 for scalars), or -1 on overflow or for tuples. */
int64_t shs_shape_elements(const shs_shape *s);

/* Bytes of all the arrays in s (tuples summed, tokens 0); packed when the layout sets
 * element_size_in_bits, else shs_elem_bytes() each. -1 on overflow. */
int64_t shs_shape_bytes(const shs_shape *s);

/* The element of tuple shape s at index path idx[0..n); NULL when the path does not exist. */
const shs_shape *shs_shape_at(const shs_shape *s, const int64_t *idx, uint32_t n);

/* Deep copy of src into *dst, arrays in a. Returns SHS_OK or SHS_ENOMEM. */
int shs_shape_copy(shs_arena *a, shs_shape *dst, const shs_shape *src);

/* Same type, dims and tuple structure; layout and dynamic flags ignored. */
bool shs_shape_compatible(const shs_shape *x, const shs_shape *y);

/* Compatible and same layouts and dynamic flags. */
bool shs_shape_equal(const shs_shape *x, const shs_shape *y);

/* The text form, `f32[2,3]{1,0}` or `(s32[], f32[4])`, as XLA prints it (with an index comment
 * before every fifth tuple element). */
void shs_shape_print(shs_buf *b, const shs_shape *s, bool with_layout);

/* Compares two modules: everything the IR models, including names and ids, and the unknown
 * protobuf bytes; not the text style or the header's module-config values. On a difference
 * returns false and, when why is not NULL, writes where into why. */
bool shs_module_equal(const shs_module *x, const shs_module *y, shs_buf *why);

#endif
