/* Private to the plugin host: its state, the plugin views of the IR and the candidate builder. */
#ifndef SHS_HOST_INTERNAL_H
#define SHS_HOST_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "host.h"
#include "opcode.h"
#include "shs_limits.h"

enum {
	SHS_HOST_MAX_LEAVES = 1 << 20,    /* leaves of one instruction (result + operands) */
	SHS_HOST_CALL_SLOTS = SHS_MAX_THREADS + 16 /* calls into plugins watched at once: a
						    * search's threads and its callers' */
};

/* A call into a plugin's code (host_guard.c): which plugin, strategy and entry point, about
 * which instruction (names borrowed for the call), since when (monotonic ns; 0: not watched,
 * and a slot whose path is NULL is free). */
typedef struct shs_host_call {
	const char *path;
	const char *strategy;      /* NULL for the plugin's init */
	const char *what;          /* "init", "generate", "match", "digest", "destroy" */
	const char *instr;         /* NULL when the call is about no instruction */
	int64_t start_ns;
} shs_host_call;

/* A loaded plugin: its path (owned) and dlopen handle. */
typedef struct shs_host_plugin {
	char *path;
	void *dl;
} shs_host_plugin;

/* A registered strategy (copied from the plugin) and the index of its plugin. */
typedef struct shs_host_strat {
	shs_strategy s;
	uint32_t plugin;
	bool by_op[SHS_OP_COUNT]; /* its opcodes list names the opcode (looked up once) */
} shs_host_strat;

/* The registry a plugin's init registers into. Open only while an init runs. */
struct shs_registry {
	struct shs_host *h;
	const char *path;          /* the plugin being loaded */
	uint32_t plugin;           /* its index once loaded */
	uint32_t first;            /* the index its first strategy gets */
	bool open;
	bool has_err;
	char err[SHS_PLUGIN_MSG_MAX];
};

/* An instruction already warned about (no strategy, too large), so it is reported once. */
typedef struct shs_host_seen {
	const void *m, *c, *i;
	int why;
} shs_host_seen;

struct shs_host {
	shs_warn_fn warn;
	void *user;
	uint32_t n_plugins, cap_plugins;
	shs_host_plugin *plugins;
	uint32_t n_strats, cap_strats;
	shs_host_strat *strats;
	struct shs_registry reg;
	uint32_t n_seen, cap_seen;  /* open-addressing set, cap a power of two */
	shs_host_seen *seen;
	pthread_mutex_t lock;       /* guards seen and the warning callback: candidates may be
				     * asked from several threads at once (the search's) */
	shs_host_call calls[SHS_HOST_CALL_SLOTS]; /* calls in progress, when watched */
	bool watching, watch_stop;  /* a watchdog runs; it is asked to stop */
	double budget_s;
	int64_t deadline_ns;        /* monotonic */
	pthread_t watchdog;
	pthread_mutex_t watch_lock; /* guards watch_stop for watch_wake */
	pthread_cond_t watch_wake;
};

/* ---- Calls into plugins (host_guard.c) ---- */

/* Installs, once per process, the handlers that name the plugin a crash (SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL, SIGABRT) or an exit() happens in: each handler replaced gets its signal
 * after the message. */
void shs__host_guard_install(void);

/* Marks this thread as inside plugin path's entry point what (strategy and instr may be NULL)
 * until shs__host_leave(the result); when h is watched, the call also takes a slot the
 * watchdog reads (NULL when it is not watched or every slot is busy). */
shs_host_call *shs__host_enter(const shs_host *h, const char *path, const char *strategy,
			       const char *what, const char *instr);
void shs__host_leave(shs_host_call *slot);

/* Stops h's watchdog, if one runs (shs_host_free). */
void shs__host_unwatch(shs_host *h);

/* Formats a warning and hands it to the host's callback (if any). */
void shs__host_warn(const shs_host *h, const char *fmt, ...) SHS_PRINTF(2, 3);

/* True the first time (m, c, i, why) is seen by h; false after (and when out of memory). */
bool shs__host_first_time(shs_host *h, const void *m, const void *c, const void *i, int why);

/* The function table plugins get (host_api.c). Borrowed, static. */
const shs_host_api *shs__host_api(void);

/* The built-in strategies folder (host_dirs.c) for a library or executable at object_path:
 * dirname + "/strategies" (build tree), dirname + "/shardsearch/plugins" (install, lib/), or
 * dirname + "/../lib/shardsearch/plugins" (install, bin/), the first that is a folder.
 * Writes it to out[0..n) and returns true, or false when none exists. */
bool shs__host_builtin_dir(const char *object_path, char *out, size_t n);

/* ---- A plugin's file (host_elf.c) ---- */

/* What a plugin's ELF file says of its ABI: whether it defines shs_plugin_init, and the values
 * of its shs_plugin_abi_version and shs_plugin_abi_sizes constants when it defines them. */
typedef struct shs__host_abi {
	bool has_init, has_version, has_sizes;
	uint32_t version;
	uint64_t sizes;
} shs__host_abi;

/* Reads the ABI words of the shared object at path from its dynamic symbol table, without
 * loading it (none of its code runs). Returns SHS_OK, SHS_EIO (cannot be read) or SHS_EINVAL
 * (not an ELF shared object of this machine, or a broken symbol table; e says "PATH: why"). */
int shs__host_elf_abi(const char *path, shs__host_abi *abi, shs_err *e);

/* ---- Views (host_view.c) ---- */

/* One instruction as plugins see it, with its leaves flattened: the result's n_result leaves,
 * then operand k's leaves starting at operand_first[k]. All storage lives in the arena the view
 * was built in; shapes' dims are borrowed from the IR. */
typedef struct shs_host_iview {
	shs_pinstr instr;
	uint32_t n_result;
	uint32_t n_leaves;
	uint32_t *operand_first;   /* instr.n_operands entries */
	const shs_pshape **leaf;   /* n_leaves entries */
	uint32_t max_rank;         /* the largest rank among the leaves */
} shs_host_iview;

/* Builds the view of instruction i of computation c in a. Returns SHS_OK, SHS_EINVAL (an
 * operand index outside c, tuples nested too deep, too many leaves; e says which) or
 * SHS_ENOMEM. */
int shs__host_view(shs_arena *a, const shs_computation *c, const shs_instr *i,
		   shs_host_iview *out, shs_err *e);

/* The view of instruction i of computation c in v, or NULL when it has none. */
const shs_host_iview *shs__host_views_get(const shs_host_views *v, uint32_t c, uint32_t i);

/* The hash of what a query shows pure strategies of a view (host_share.c): its opcode, shapes,
 * operands' shapes, attribute lists and scalars, custom-call target and config, and its
 * n_called; never its name or op_name. Never 0. */
uint64_t shs__host_view_class(const shs_host_iview *v, uint32_t n_called);

/* shs__host_view_class of instruction i of computation c in v, or 0 when it has no view. */
uint64_t shs__host_views_class(const shs_host_views *v, uint32_t c, uint32_t i);

/* Array leaves of a plugin shape view (saturating; 0 for NULL). */
uint32_t shs__pshape_leaves(const shs_pshape *s);

/* The result hint the instruction's own sharding annotation gives on mesh, leaf by leaf
 * (v->n_result specs in a), or NULL when it has none or it cannot be said with mesh axes.
 * A dim that does not divide evenly marks the spec padded. */
const shs_pspec *shs__host_annotation_hint(shs_arena *a, const shs_instr *i,
					   const shs_host_iview *v, const shs_mesh *mesh);

/* ---- Candidates (host_api.c, host_check.c, host_query.c) ---- */

/* A candidate list being filled by one strategy's generator. Candidates [first, list->n) are
 * this strategy's; faults[k - first] is the first misuse found in candidate k, or NULL. */
struct shs_pemit {
	shs_host *h;
	const shs_host_strat *st;
	const shs_host_iview *v;
	const shs_pmesh *mesh;
	shs_cands *list;
	uint32_t cap;       /* room in list->v */
	uint32_t limit;     /* candidates kept for this instruction */
	uint32_t first;
	uint32_t created;   /* candidates offered by the strategies so far, kept or not */
	char **faults;
	uint32_t cap_faults;
	bool capped, oom, failed, misused;
	char fail_msg[SHS_PLUGIN_MSG_MAX];
};

/* "PLUGIN(strategy NAME): INSTR (opcode)" into buf (host_api.c). */
void shs__host_prefix(const shs_pemit *out, char *buf, size_t n);

/* Whether the NULL-terminated list (which may be NULL) holds s (host_api.c). */
bool shs__host_in_list(const char *const *list, const char *s);

/* Whether strategy st serves an instruction of opcode op seen as i (its opcodes, its custom-call
 * targets or its match). */
bool shs__host_serves(const shs_host *h, const shs_host_strat *st, shs_opcode op,
		      const shs_pinstr *i);

/* Keeps the valid candidates of the strategy that just generated into out (in order) and
 * reports the others; or drops them all after its generator failed (host_check.c). */
void shs__host_check_strategy(shs_pemit *out);
void shs__host_drop_strategy(shs_pemit *out);

/* Drops each checked candidate of this strategy whose specs and collectives another of its
 * candidates has at no more FLOPs and bytes (the cheaper keeps the place offered first); the
 * others stay in order (host_prune.c). Only from SHS_HOST_PRUNE_MIN candidates: a shorter list
 * costs the search less than its pruning (8 % of a 70B search when every list was pruned).
 * Out of memory, nothing is dropped. */
enum { SHS_HOST_PRUNE_MIN = 64 };

/* Whether x and y split the same dims over the same axes, padded alike (each dim's axes up to
 * its count, dims up to the rank; a rank past SHS_PLUGIN_MAX_RANK compares that many). */
bool shs__host_same_spec(const shs_pspec *x, const shs_pspec *y);
void shs__host_prune_strategy(shs_pemit *out);

/* Moves list's candidates (each with n_leaves specs) into a new arena of chunk-byte chunks and
 * frees the old one, with all that was offered and dropped; out of memory, the list stays. */
void shs__host_compact(shs_cands *list, uint32_t n_leaves, size_t chunk);

#endif
