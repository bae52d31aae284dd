/* shardsearch's public host API: the sharding search as a library and as a compiler pass.
 *
 * Three ways in:
 *   - a pass: shs_pass_run() takes a serialized module and returns it annotated;
 *   - a context: load a module, set options, add plugins, search, read the result, write it;
 *   - strategy plugins: shared objects built against shardsearch_plugin.h alone.
 *
 * Status: every int-returning function returns SHS_OK (0) on success, else a negative
 * enum shs_status code; shs_strerror() names a code; the context's message
 * (shs_context_error()) says what failed, naming the input, the option or the instruction.
 *
 * Ownership: a context owns everything it returns (strings, the result) until the next call that
 * changes it or until it is freed; buffers the library allocates for the caller (shs_pass_run,
 * shs_context_write) are freed with shs_pass_free(). Threads: one context at a time per thread;
 * different contexts (and shs_pass_run on different inputs) may run at once. */
#ifndef SHARDSEARCH_H
#define SHARDSEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef SHS_API
#if defined(__GNUC__)
#define SHS_API __attribute__((visibility("default")))
#else
#define SHS_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version and status ---- */

/* What a call returns. */
enum shs_status {
	SHS_OK = 0,
	SHS_EINVAL = -1,      /* a bad argument or option */
	SHS_ENOMEM = -2,      /* out of memory, or over the input's memory budget */
	SHS_EIO = -3,         /* a file could not be read or written */
	SHS_EPARSE = -4,      /* malformed input: protobuf or HLO text */
	SHS_EVERIFY = -5,     /* well-formed input that breaks an HLO rule */
	SHS_EUNSUPPORTED = -6, /* valid input that this version cannot represent */
	SHS_ENOFIT = -7       /* the search's best plan does not fit in HBM: nothing written;
			       * the message and the report say what would fit */
};

/* The library version, "MAJOR.MINOR.PATCH". Static storage; never NULL. */
SHS_API const char *shs_version(void);

/* A short fixed name for a status code ("parse error", ...). Static storage; never NULL. */
SHS_API const char *shs_strerror(int code);

/* ---- The pass entry point ---- */

/* Runs the sharding search as a pass over one serialized module: an HloModuleProto, or an
 * HloProto wrapping one (HLO text is taken too, and answered as an HloModuleProto). options:
 * NUL-terminated "key=value;key=value" using the long option names of `shardsearch annotate`
 * (hardware=v5p;devices=256;mesh=...; see shs_context_set), or NULL for defaults. Plugins load
 * from the built-in folder and the folders and files the options name only (not from
 * SHARDSEARCH_PLUGIN_PATH unless the option plugin-path-env is given). Returns SHS_OK and sets
 * *out / *out_len to the annotated module, serialized in the same message type as the input;
 * or returns a negative enum shs_status and sets *err to a message (SHS_ENOFIT: no plan fits
 * in HBM, and the message says what would; no module then). The caller frees *out and
 * *err with shs_pass_free(). Thread-safe: calls on different inputs may run at once. */
SHS_API int shs_pass_run(const uint8_t *in, size_t in_len, const char *options, uint8_t **out,
			 size_t *out_len, char **err);

/* Frees what shs_pass_run or shs_context_write handed out. NULL does nothing. */
SHS_API void shs_pass_free(void *p);

/* ---- Contexts ---- */

typedef struct shs_context shs_context;

/* A new context with no module and default options (slices=1, one thread). Caller frees with
 * shs_context_free(). NULL when out of memory. */
SHS_API shs_context *shs_context_new(void);

/* Frees ctx, its module, plugins and result. NULL does nothing. */
SHS_API void shs_context_free(shs_context *ctx);

/* The message of the last failed call on ctx ("" when none). Owned by ctx; valid until the next
 * call on it. */
SHS_API const char *shs_context_error(const shs_context *ctx);

/* Receives the warnings of plugins and propagation (a refused plugin, an unserved instruction,
 * a hint that does not fit the mesh) as they come; by default they are dropped. msg is valid
 * during the call only. */
typedef void (*shs_warning_fn)(void *user, const char *msg);
SHS_API void shs_context_set_warnings(shs_context *ctx, shs_warning_fn fn, void *user);

/* ---- Loading a module ---- */

/* Loads (and verifies) a module from buf[0..len): a binary HloProto or HloModuleProto, or HLO
 * text. origin names it in messages (NULL: "input"). Replaces the module ctx held and forgets
 * its result. buf is only read. Returns SHS_OK, SHS_EINVAL (NULL buf), SHS_ENOMEM, SHS_EPARSE,
 * SHS_EVERIFY or SHS_EUNSUPPORTED. */
SHS_API int shs_context_load(shs_context *ctx, const uint8_t *buf, size_t len,
			     const char *origin);

/* Loads (and verifies) the module in the file at path (.pb protobuf, .hlo / .txt text, else by
 * content). Returns SHS_OK, SHS_ENOMEM, SHS_EIO, SHS_EPARSE, SHS_EVERIFY or SHS_EUNSUPPORTED. */
SHS_API int shs_context_load_file(shs_context *ctx, const char *path);

/* ---- Options: hardware, mesh and search ---- */

/* Sets one option by the long name `shardsearch annotate` gives it, without the dashes:
 * hardware (v5p, h100, ...), hardware-file (JSON catalog entries), topology (AxBxC), devices,
 * slices, mesh (pins one: "fsdp=16,tensor=4"), plan (dp, fsdp, tp, fsdp+tp or a plan file:
 * made by propagation on mesh instead of searched), remat (none|attention|dots|offload|full),
 * microbatches (the step rewritten as that many micro-batches with gradient accumulation;
 * without it the search tries counts and writes the loop when one wins), schedule
 * (events|segments), fusion (xla|kernels|none), prefetch, threads, time-budget (seconds),
 * plugins (a folder of plugins; repeatable), plugin (a plugin file; repeatable), and the flags
 * no-overlap, no-fusion (fusion none),
 * exhaustive, ignore-hints, plugin-path-env (also the folders of SHARDSEARCH_PLUGIN_PATH)
 * (value NULL, "" or "true"). value is copied. Returns SHS_OK or SHS_EINVAL (unknown option or
 * bad value). */
SHS_API int shs_context_set(shs_context *ctx, const char *key, const char *value);

/* Sets every "key=value" of options, separated by ';' (as shs_pass_run takes them). Returns
 * SHS_OK or SHS_EINVAL at the first bad one (the message names it). */
SHS_API int shs_context_configure(shs_context *ctx, const char *options);

/* ---- Plugins ---- */

/* Adds the strategy plugin at path (a shared object made with SHS_PLUGIN_DEFINE, see
 * shardsearch_plugin.h), as the option plugin=path does. Plugins load at each search: the
 * built-in ones (lib/shardsearch/plugins beside the library), each folder of
 * SHARDSEARCH_PLUGIN_PATH when the option plugin-path-env is set (never otherwise), the plugins
 * folders, then these files in the order added; among equally good candidates the earlier
 * plugin's wins. Returns SHS_OK, SHS_EINVAL or SHS_ENOMEM. */
SHS_API int shs_context_add_plugin(shs_context *ctx, const char *path);

/* ---- The search ---- */

/* Searches the plan of the loaded module for the cluster the options describe (hardware and
 * topology or devices are needed), and writes it into the module as sharding annotations. With
 * the option plan, makes that plan on the option mesh by propagation instead (no result or
 * report then). When no plan fits in HBM, returns SHS_ENOFIT and leaves the module as it was;
 * the message says what would fit (more chips, more recomputation, fewer tokens per step, each
 * with its plan), and the result (fits false) and the report stay readable. Returns SHS_OK,
 * SHS_ENOFIT, SHS_EINVAL (no module, no hardware, a bad cluster, mesh or
 * plan, a plugin refused), SHS_EIO (a hardware file or a plugin that cannot be read or loaded),
 * SHS_EPARSE (a hardware or plan file that does not parse), SHS_EVERIFY (the annotated module
 * breaks an HLO rule) or SHS_ENOMEM. */
SHS_API int shs_context_search(shs_context *ctx);

/* What the search chose. Strings are owned by ctx (valid until the next load or search). Fields
 * are only ever added at the end: set struct_size to sizeof(shs_result) before the call. */
typedef struct shs_result {
	uint32_t struct_size;
	const char *mesh;          /* with its layout: "data=2@x,fsdp=16@yz,tensor=4@z" */
	const char *plan;          /* the seeding: dp, fsdp, zero1, tp, fsdp+tp, zero1+tp */
	const char *bound;         /* "compute", "communication" or "memory bandwidth" */
	double step_time_s;
	double mfu;
	double memory_bytes;       /* peak per device */
	double hbm_bytes;          /* the device's HBM */
	bool fits;
	int zero_stage;            /* 0 data parallel, 1/2 optimizer state (and gradients) split,
				    * 3 weights too (FSDP) */
	double search_time_s;
	uint32_t candidates;       /* plans evaluated */
	bool partial;              /* the time budget ended the search: the best found so far */
} shs_result;

/* Fills *out from the last search. Returns SHS_OK, or SHS_EINVAL when ctx has not searched. */
SHS_API int shs_context_result(const shs_context *ctx, shs_result *out);

/* The search's report as `shardsearch annotate` prints it: text lines (json false: the mesh
 * and its layout, step time, MFU, the bound, memory against HBM, exposed communication per
 * axis, the ZeRO stage, the strategies used, each weight's sharding by name, the five best
 * runner-up meshes and why they lose), or one JSON object (json true: mesh, step_time_s, mfu,
 * bound, memory_bytes_per_device, hbm_bytes, fits, zero_stage, search_time_s, load_time_s,
 * runners_up, weights, strategies, ...). Owned by ctx; valid until the next call on it. NULL
 * when ctx has not searched (or out of memory). */
SHS_API const char *shs_context_report(shs_context *ctx, bool json);

/* The sharding annotation of the instruction named name in the annotated module, in XLA's text
 * form ("{devices=[4,2]<=[8]}"), or NULL when there is no such instruction or it has none.
 * Owned by ctx; valid until the next call on it. */
SHS_API const char *shs_context_sharding(shs_context *ctx, const char *name);

/* ---- Writing ---- */

/* Serializes the (annotated) module in the message type it was read as (HloProto or
 * HloModuleProto; protobuf also for a module read as text). *out (free with shs_pass_free)
 * holds *out_len bytes. Returns SHS_OK, SHS_EINVAL (no module), SHS_ENOMEM or
 * SHS_EUNSUPPORTED. */
SHS_API int shs_context_write(shs_context *ctx, uint8_t **out, size_t *out_len);

/* Writes the module to path (.pb protobuf, .hlo / .txt HLO text): a regular file or a new path
 * atomically (a temporary in its folder renamed into place: a failure leaves no partial file,
 * a replaced file keeps its mode), a device or FIFO in place, a symlink's target for the link.
 * Returns SHS_OK, SHS_EINVAL, SHS_ENOMEM, SHS_EIO or SHS_EUNSUPPORTED. */
SHS_API int shs_context_write_file(shs_context *ctx, const char *path);

#ifdef __cplusplus
}
#endif

#endif
