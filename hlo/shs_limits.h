/* The library's limits, each named once: what hostile input may hold, what a mesh and a run
 * may ask for. (The plugin ABI's own limits are in shardsearch_plugin.h.) */
#ifndef SHS_LIMITS_H
#define SHS_LIMITS_H

/* Input: what keeps hostile modules from exhausting the stack or memory. */
enum {
	SHS_MAX_RANK = 64,          /* dims of one array shape */
	SHS_MAX_MICROBATCHES = 1 << 20, /* micro-batches of one step */
	SHS_MAX_NESTING = 64,       /* tuple / literal / sharding nesting depth */
	SHS_MAX_OPERANDS = 1 << 20, /* operands of one instruction */
	SHS_MAX_INPUT_MB = 2048,    /* one input file or buffer */
	SHS_MAX_INSTRS = 1 << 22    /* instructions of one module, all computations: memory
				     * grows about 2 KB a instruction (annotate --plan of 10^6
				     * in 2.0 GB), the largest real modules hold a few 10^5 */
};

/* Meshes and shardings. */
enum {
	SHS_MESH_MAX_AXES = 8,      /* logical axes of a mesh (the plugin ABI's too) */
	SHS_NAMED_MAX_RANK = 32     /* dims of a named sharding (a spec has at most the plugin
				     * ABI's SHS_PLUGIN_MAX_RANK) */
};

/* A run. */
enum {
	SHS_MAX_THREADS = 256,      /* threads of one search */
	SHS_MAX_PREFETCH = 16,      /* layers ahead a weight gather may start */
	SHS_MAX_VIRTUAL_STAGES = 64, /* model chunks per pipeline stage */
	SHS_MAX_CALL_DEPTH = 64,    /* calls within calls the evaluator follows; converts, copies
				     * and slices of a weight it looks through */
	SHS_MAX_VALUE_LEAVES = 4096, /* tuple leaves of one value that propagation and the
				      * evaluator follow (the rest are ignored) */
	SHS_PATH_CAP = 512          /* a parameter path (shs_param_path), with its NUL */
};

#endif
