/* A run: what it takes, by the long option names of `shardsearch annotate` (the cluster, how
 * candidates are evaluated, the search's own options, a named plan, the plugins), and the one
 * pipeline that does the job (plugins, the search or the named plan's propagation, the plan
 * written into the module, the module verified). The command line and the library's context
 * and pass entry point are its clients. */
#ifndef SHS_RUN_H
#define SHS_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "host.h"
#include "plan.h"
#include "search.h"
#include "status.h"

enum { SHS_OPTIONS_MAX_DIRS = 16, SHS_OPTIONS_MAX_FILES = 64 };

/* Zero-initialise, then set slices = 1. Strings are borrowed: they must outlive the options. */
typedef struct shs_run_options {
	shs_cluster_spec spec;     /* hardware, topology, devices, slices */
	const char *hw_file;       /* hardware-file: catalog entries to add (JSON), or NULL */
	shs_eval_options eval;     /* remat, schedule, fusion, prefetch, no-overlap */
	bool remat_given;          /* remat was set: the search evaluates with it only */
	int64_t microbatches;      /* microbatches: the step as this many micro-batches with
				    * gradient accumulation (shs_run_microbatch); 0 or 1: whole */
	const char *mesh;          /* mesh: pinned (the search), the plan's (with plan), or NULL */
	const char *plan;          /* plan: a named plan (dp, fsdp, tp, fsdp+tp) or a plan
				    * file (.json), made by propagation instead of searched */
	uint32_t threads;          /* threads (0: one) */
	double time_budget_s;      /* time-budget (0: none) */
	bool exhaustive;           /* exhaustive */
	bool stages;               /* stages: the search also tries pipeline stages */
	bool ignore_hints;         /* ignore-hints */
	bool force;                /* force: work on a module already partitioned */
	bool gathers_hidden;       /* gathers-hidden: a plan propagated as the search does where
				    * the chip decomposes no matmul (shs_plan_request) */
	const char *dirs[SHS_OPTIONS_MAX_DIRS + 1]; /* plugins: folders, NULL-terminated */
	uint32_t n_dirs;
	const char *files[SHS_OPTIONS_MAX_FILES];   /* plugin: plugin files, in the order given */
	uint32_t n_files;
	bool env_plugins;          /* plugin-path-env: also the folders of SHARDSEARCH_PLUGIN_PATH
				    * (the command line sets it; a library host asks for it) */
	shs_search_progress_fn progress; /* each search's progress (shs_search_options), or
					  * NULL */
	void *progress_user;
} shs_run_options;

/* Whether key is one of the options and takes no value (no-overlap, no-fusion, exhaustive,
 * ignore-hints, plugin-path-env, stages); *known says whether it is an option at all. */
bool shs_run_option_is_flag(const char *key, bool *known);

/* Sets option key (without the leading "--") to value (borrowed; NULL or "" for a flag, which
 * also takes "true"). Returns SHS_OK, or SHS_EINVAL with e saying "unknown option" or what the
 * value should be ("takes none, dots or full"). */
int shs_run_option_set(shs_run_options *o, const char *key, const char *value, shs_err *e);

/* Sets every "key=value" of text, separated by ';' (empty parts skipped; a flag may stand
 * alone), splitting text in place (its pieces are borrowed). Returns SHS_OK, or SHS_EINVAL with
 * e naming the option ("option remat=all: takes none, attention, dots, offload or full"). */
int shs_run_options_parse(shs_run_options *o, char *text, shs_err *e);

/* A run: its options made ready (the catalog, a named plan's request and cluster), then the
 * job on a module. Zero-initialise; free with shs_run_free. */
typedef struct shs_run {
	const shs_run_options *o;  /* borrowed */
	shs_warn_fn warn;          /* warnings of plugins and propagation, or NULL */
	void *warn_user;
	shs_hw_catalog *cat;       /* the built-in catalog and the hardware file */
	shs_plan_request *request; /* the named plan (or, for explain, just the mesh), or NULL */
	bool has_cluster;          /* a plan with hardware, its topology or devices, and a mesh:
				    * the cluster below */
	shs_cluster cluster;
	shs_host *host;            /* the plugins, once loaded (the plan borrows their names) */
	shs_plan *plan;            /* the plan made (a named plan's, owned), or NULL */
	int64_t pipeline_written;  /* annotate wrote the pipelined program: its micro-batches
				    * (shs_pipeline_rewrite; 0: not written) */
	char pipeline_refused[SHS_ERRMSG_MAX]; /* ... or why it did not, when it was asked */
	bool searched;             /* the job was a search: its result below */
	shs_search_result search;  /* owns the searched plan */
} shs_run;

/* Makes options o ready in *r: the catalog (with hardware-file), then, for a named plan
 * (o->plan) or a mesh without hardware (explain), the plan request: on the cluster o's hardware,
 * topology or device count, and mesh lay out when all are given (its axes without their layout;
 * evaluate needs this), else on o->mesh as written; its candidates compared on the chip of o's
 * hardware, or of the catalog's v5p when none is given. A search (hardware and no plan) needs no
 * request: it lays out its pinned mesh itself. o must outlive r. Returns SHS_OK, SHS_EINVAL
 * (options that cannot work: a bad mesh, plan name or plan file member; unknown hardware; a
 * mesh the cluster cannot hold), SHS_EIO or SHS_EPARSE (a hardware or plan file that cannot be
 * read), or SHS_ENOMEM. */
int shs_run_start(shs_run *r, const shs_run_options *o, shs_warn_fn warn, void *user,
		  shs_err *e);

/* Loads the plugins once: the built-in ones, SHARDSEARCH_PLUGIN_PATH's folders when
 * o->env_plugins, o->dirs, then o->files. Returns SHS_OK, SHS_EIO (a plugins folder that cannot
 * be read, a plugin file that does not load), SHS_EINVAL or SHS_ENOMEM. */
int shs_run_plugins(shs_run *r, shs_err *e);

/* Makes the named plan of r's request on m by propagation into r->plan (plugins loaded first).
 * Returns SHS_OK, SHS_EINVAL (no plan or mesh) or what shs_plan_make returns. */
int shs_run_plan(shs_run *r, const shs_module *m, shs_err *e);

/* The job of annotate, the context and the pass: with o->plan the named plan, else the search
 * (o->spec.hardware needed), written into *m as shardings; *m is then verified. Without
 * o->microbatches the search also tries the step as micro-batches (divisors of the batch, each
 * at least twice the last, while the best plan recomputes or does not fit): when one of those
 * wins, *m (freed) becomes its micro-batched module (shs_microbatch_rewrite) and r->search
 * says how many (microbatches, and each count tried). When the search's best plan does not
 * fit, *m is the whole step, not annotated, r->search holds the plan (a micro-batched one is
 * kept only when it fits) and what would fit (shs_search_advise) and the message says it:
 * SHS_ENOFIT. A module this run already split (shs_microbatch_count) is searched as it is.
 * Returns SHS_OK, SHS_ENOFIT, SHS_EINVAL (no hardware and no plan, a bad cluster or pinned
 * mesh) or what the steps return. */
int shs_run_annotate(shs_run *r, shs_module **m, shs_err *e);

/* The job of evaluate: the named plan on r's cluster (a plan, hardware and mesh needed),
 * evaluated with o->eval into *ev (free with shs_eval_free). Same returns as shs_run_plan and
 * shs_evaluate. */
int shs_run_evaluate(shs_run *r, const shs_module *m, shs_eval *ev, shs_err *e);

/* The timeline of the run's plan (the searched one, or the named plan on r's cluster) on m,
 * the module the job worked on: evaluated again, as the job did, with trace t, into *ev (free
 * with shs_eval_free). Same returns as shs_evaluate; SHS_EINVAL without a plan on a cluster. */
int shs_run_trace(const shs_run *r, const shs_module *m, shs_trace *t, shs_eval *ev, shs_err *e);

/* With o->microbatches > 1, replaces *m (freed) by its step as that many micro-batches
 * (shs_microbatch_rewrite), the module the job then works on; nothing when *m is already so
 * written. Returns SHS_OK or what the rewrite returns (SHS_EINVAL also for a module already
 * written as another count; *m is then unchanged). */
int shs_run_microbatch(shs_run *r, shs_module **m, shs_err *e);

/* Frees what r owns and zeroes it; NULL does nothing. */
void shs_run_free(shs_run *r);

#endif
