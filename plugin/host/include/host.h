/* The plugin host: loads strategy plugins, and asks them for checked candidates per instruction. */
#ifndef SHS_HOST_H
#define SHS_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "ir.h"
#include "sharding.h"
#include "shardsearch_plugin.h"
#include "status.h"

typedef struct shs_host shs_host;

/* Receives one warning (a refused plugin, a dropped candidate, an unserved instruction). */
typedef void (*shs_warn_fn)(void *user, const char *msg);

/* A new host with no plugin; warnings go to warn (NULL: dropped). Caller frees with
 * shs_host_free(). NULL when out of memory. */
shs_host *shs_host_new(shs_warn_fn warn, void *user);

/* Unloads every plugin and frees h. NULL does nothing. */
void shs_host_free(shs_host *h);

/* Loads the plugin at path. A plugin without shs_plugin_init, built for another ABI version or
 * with another sizes word (all three read from its file, before dlopen runs any of its code,
 * constructors included), already loaded, or whose init fails is refused: nothing of it stays
 * registered and e says "PATH: why". Returns SHS_OK, SHS_EIO (cannot be read or dlopen
 * failed), SHS_EINVAL (refused) or SHS_ENOMEM. */
int shs_host_load(shs_host *h, const char *path, shs_err *e);

/* Loads every *.so in dir, in name order. A refused plugin is reported through the warn callback
 * and the others load. Returns the number loaded (>= 0), or SHS_EIO when dir cannot be read,
 * SHS_EINVAL (NULL h or dir) or SHS_ENOMEM (e says which). */
int shs_host_load_dir(shs_host *h, const char *dir, shs_err *e);

/* Loads the built-in plugins (the strategies folder beside the library or executable in a build
 * tree, or lib/shardsearch/plugins under the install prefix), then, when from_env, each folder
 * of the colon-separated SHARDSEARCH_PLUGIN_PATH (a host that wants them asks: the command line
 * does, a compiler pass does not unless told; an entry that is not an absolute path, or a
 * folder others can write, is skipped with a warning), then extra_dirs (NULL-terminated, may be NULL).
 * A built-in or environment folder that cannot be read is a warning, one of extra_dirs an error.
 * Returns the number loaded (>= 0), or SHS_EIO (one of extra_dirs), SHS_EINVAL or SHS_ENOMEM. */
int shs_host_load_default(shs_host *h, const char *const *extra_dirs, bool from_env,
			  shs_err *e);

/* Calls into plugin code past a deadline (the time budget as a hard limit): from now on, a
 * call still running SHS_HOST_GRACE_S after it started, once budget_s has passed, ends the
 * process with status SHS_HOST_DEATH_STATUS after naming the plugin, its strategy and the
 * instruction on standard error (a thread inside a plugin, and what the plugin locked, cannot
 * be taken back). A budget over SHS_HOST_BUDGET_MAX_S is that. Whether watched or not, a crash
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) inside a plugin's code is named on standard error
 * before the handler it replaced gets the signal, and an exit() inside one names the plugin
 * and ends the process with SHS_HOST_DEATH_STATUS. Returns SHS_OK, SHS_EINVAL (NULL h, a budget
 * not above 0, h already watched) or SHS_ENOMEM (no thread). */
#define SHS_HOST_GRACE_S 2.0
#define SHS_HOST_BUDGET_MAX_S 1e9
enum { SHS_HOST_DEATH_STATUS = 70 }; /* EX_SOFTWARE of sysexits.h */
int shs_host_watch(shs_host *h, double budget_s, shs_err *e);

/* Number of loaded plugins, and the path of plugin k (borrowed, valid until h is freed). */
uint32_t shs_host_plugin_count(const shs_host *h);
const char *shs_host_plugin_path(const shs_host *h, uint32_t k);

/* A mesh as plugins see it; built from an shs_mesh by shs_host_mesh_view (which borrows it). */
typedef struct shs_mesh_view {
	shs_pmesh view;
	const char *names[SHS_MESH_MAX_AXES];
} shs_mesh_view;
void shs_host_mesh_view(const shs_mesh *mesh, shs_mesh_view *out);

/* A collective a candidate performs itself. */
typedef struct shs_coll {
	int kind;            /* enum shs_pcollective */
	uint32_t axes_mask;
	double bytes;
	bool overlappable;
} shs_coll;

/* One checked candidate for one instruction. Specs are leaf by leaf: the result's n_result
 * leaves, then for operand k its leaves from operands[operand_first[k]] up to
 * operands[operand_first[k + 1]] (operand_first has n_operands + 1 entries). */
typedef struct shs_cand {
	const char *strategy;   /* borrowed from the host */
	const char *plugin;     /* path, borrowed from the host */
	const char *label;      /* in the list's arena, at most SHS_PLUGIN_LABEL_MAX - 1 bytes */
	uint32_t n_result;
	shs_pspec *result;
	uint32_t n_operands;
	uint32_t *operand_first;
	shs_pspec *operands;
	double flops, bytes;
	uint32_t n_colls;
	shs_coll *colls;
} shs_cand;

/* The views plugins read of every instruction of a module, made once (a search asks for the
 * candidates of each instruction many times). Read-only once made: may be shared by threads. */
typedef struct shs_host_views shs_host_views;
/* Makes m's views into *out (caller frees with shs_host_views_free; m must outlive them).
 * SHS_OK or SHS_ENOMEM; an instruction too large to view gets none (its queries say why). */
int shs_host_views_make(const shs_module *m, shs_host_views **out, shs_err *e);
void shs_host_views_free(shs_host_views *v);

/* The candidates of one instruction. Caller frees with shs_cands_free(). */
typedef struct shs_cands {
	uint32_t n;
	shs_cand *v;
	bool served;            /* some strategy serves this instruction */
	struct shs_arena *a;    /* owns v, every candidate's arrays and the query's temporaries */
} shs_cands;
void shs_cands_free(shs_cands *c);

/* Asks every strategy that serves instruction i of computation c (in plugin load order, then
 * registration order) for candidates on mesh, with hints and result_hint as in shs_pquery (either
 * may be NULL: nothing decided; called_roots are not passed yet). Each candidate is checked:
 * leaf counts and ranks match the shapes, every axis index exists and is used at most once per
 * spec, each sharded dim divides by its axes' sizes unless the spec is padded, collective axes
 * exist. A candidate that fails is dropped and reported
 * (warn) naming the plugin, the strategy, the instruction and the fault. Returns SHS_OK or
 * SHS_ENOMEM; *out (caller frees) may be empty (served false: no strategy serves i). */
int shs_host_candidates(shs_host *h, const shs_module *m, const shs_computation *c,
			const shs_instr *i, const shs_mesh *mesh, const shs_pspec *const *hints,
			const shs_pspec *result_hint, int mode, shs_cands *out, shs_err *e);

/* Everything shs_host_candidates takes, and what it leaves implicit: result_hint (NULL: none;
 * use_annotation: derive it from the instruction's sharding annotation when NULL) and the
 * called computations' roots (n_called entries, or NULL: none known). */
typedef struct shs_host_query {
	const shs_host_views *views; /* the module's views, or NULL: the instruction's is made */
	shs_arena *arena;            /* an empty arena the candidates take (theirs after the
				      * call, also on failure), or NULL: a new one */
	uint32_t comp, instr;        /* c and i as indices into the module (with views) */
	const shs_mesh *mesh;
	int mode;
	const shs_pspec *const *hints;
	const shs_pspec *result_hint;
	bool use_annotation;
	uint32_t n_called;
	const shs_pspec *const *called_roots;
	uint32_t cap_hint;           /* room made for this many candidates at first (what an
				      * earlier query of the instruction gave), or 0 */
} shs_host_query;

/* shs_host_candidates with every query field explicit. Returns SHS_OK, SHS_EINVAL (a NULL
 * argument, a bad mode) or SHS_ENOMEM; *out (caller frees with shs_cands_free, also after a
 * failure: it may hold q->arena). */
int shs_host_candidates_q(shs_host *h, const shs_module *m, const shs_computation *c,
			  const shs_instr *i, const shs_host_query *q, shs_cands *out,
			  shs_err *e);

/* The class of instruction i (in, of computation c) under h's strategies: two instructions of a
 * class get the same candidates from the same query (mesh, mode, hints and result hint; no
 * called roots, no annotation), so a caller may copy one's list for the other. 0 when it must be
 * asked itself: it has no view in views, or a strategy without SHS_STRATEGY_PURE serves it or
 * has a match function. */
uint64_t shs_host_query_class(const shs_host *h, const shs_host_views *views, uint32_t c,
			      uint32_t i, const shs_instr *in);

/* The digest of query q (views, comp and instr set) of instruction in, of a nonzero class, from
 * its strategies' digest functions (shs_strategy.digest): two queries of one class with equal
 * nonzero digests get the same candidates. 0 when some strategy that serves it has none (the
 * whole query counts), or q has called roots or asks for the annotation. */
uint64_t shs_host_query_digest(const shs_host *h, const shs_host_query *q, const shs_instr *in);

/* Whether instruction i (in, of computation c) can have digests: every strategy that serves it
 * has a digest function (and some does). When not, shs_host_query_digest gives 0 every time. */
bool shs_host_query_digestible(const shs_host *h, const shs_host_views *views, uint32_t c,
				uint32_t i, const shs_instr *in);

#endif
