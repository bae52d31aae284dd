/* What a run of the search takes, by the long option names of `shardsearch annotate`: the
 * cluster, how candidates are evaluated, the search's own options and plugin folders. Shared by
 * the command line and the library's context and pass entry point. */
#ifndef SHS_RUN_H
#define SHS_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "evaluate.h"
#include "status.h"

enum { SHS_OPTIONS_MAX_DIRS = 16 };

/* Zero-initialise, then set slices = 1. Strings are borrowed: they must outlive the options. */
typedef struct shs_run_options {
	shs_cluster_spec spec;     /* hardware, topology, devices, slices */
	const char *hw_file;       /* hardware-file: catalog entries to add (JSON), or NULL */
	shs_eval_options eval;     /* remat, schedule, prefetch, no-overlap, no-fusion */
	bool remat_given;          /* remat was set: the search evaluates with it only */
	const char *mesh;          /* mesh: pinned, or NULL */
	uint32_t threads;          /* threads (0: one) */
	double time_budget_s;      /* time-budget (0: none) */
	bool exhaustive;           /* exhaustive */
	bool ignore_hints;         /* ignore-hints */
	const char *dirs[SHS_OPTIONS_MAX_DIRS + 1]; /* plugins: folders, NULL-terminated */
	uint32_t n_dirs;
} shs_run_options;

/* Whether key is one of the options and takes no value (no-overlap, no-fusion, exhaustive,
 * ignore-hints); *known says whether it is an option at all. */
bool shs_run_option_is_flag(const char *key, bool *known);

/* Sets option key (without the leading "--") to value (borrowed; NULL or "" for a flag, which
 * also takes "true"). Returns SHS_OK, or SHS_EINVAL with e saying "unknown option" or what the
 * value should be ("takes none, dots or full"). */
int shs_run_option_set(shs_run_options *o, const char *key, const char *value, shs_err *e);

/* Sets every "key=value" of text, separated by ';' (empty parts skipped; a flag may stand
 * alone), splitting text in place (its pieces are borrowed). Returns SHS_OK, or SHS_EINVAL with
 * e naming the option ("option remat=all: takes none, dots or full"). */
int shs_run_options_parse(shs_run_options *o, char *text, shs_err *e);

#endif
