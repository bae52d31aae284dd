/* The run options of annotate, evaluate and explain from the command line, by the library's
 * names (--hardware v5p is the option hardware=v5p), and the warnings the run sends. */
#ifndef SHS_CLI_OPTIONS_H
#define SHS_CLI_OPTIONS_H

#include <stdbool.h>

#include "run.h"

/* The groups of options a command takes. */
enum {
	SHS_CLI_CLUSTER = 1, /* hardware, hardware-file, topology, devices, slices */
	SHS_CLI_EVAL = 2,    /* remat, schedule, fusion, prefetch, no-overlap, no-fusion */
	SHS_CLI_PLAN = 4,    /* mesh, plan, plugins, plugin, ignore-hints */
	SHS_CLI_SEARCH = 8   /* threads, time-budget, exhaustive */
};

/* Help text of each group (the search's is annotate's own). */
extern const char shs_cli_cluster_usage[];
extern const char shs_cli_eval_usage[];
extern const char shs_cli_plan_usage[];

/* Options as the command line sets them before parsing: one slice, the folders of
 * SHARDSEARCH_PLUGIN_PATH, and (with threads) the processors online. */
void shs_cli_run_defaults(shs_run_options *o, bool threads);

/* Consumes the option at argv[*k] (and its value) when it is a run option of groups: returns 1
 * when it was one, 0 when it is not, -1 after printing a usage error for cmd. */
int shs_cli_run_option(const char *cmd, int argc, char **argv, int *k, unsigned groups,
		       shs_run_options *o);

/* The warnings of a run: printed to stderr as "shardsearch: warning: ..." (the first 20, then a
 * count at shs_cli_warnings_done) unless *(bool *)quiet. */
void shs_cli_warn(void *quiet, const char *msg);
void shs_cli_warnings_done(void);

/* Makes run r ready for cmd from options o, its warnings through shs_cli_warn(quiet). Prints
 * "shardsearch: CMD: why" and returns false when the options cannot work, a hardware or plan
 * file they name included: the command then exits SHS_EXIT_USAGE. */
bool shs_cli_run_start(const char *cmd, shs_run *r, const shs_run_options *o, bool *quiet);

/* A search's progress on stderr, one line rewritten in place, from one second into a search
 * and at most ten times a second (shs_search_progress_fn; user unused); what is needed to set
 * it: stderr a terminal. shs_cli_progress_done erases the line. */
void shs_cli_progress(void *user, uint32_t tried, uint32_t total, double best_s,
		      double elapsed_s);
bool shs_cli_progress_wanted(void);
void shs_cli_progress_done(void);

/* The help line of --trace. */
extern const char shs_cli_trace_usage[];

/* The timeline of run r's plan on m (the module its job worked on) as a Chrome trace for
 * path into *text (malloc'ed; the caller frees it), printing "shardsearch: CMD: PATH: ..." on
 * failure (shs_run_trace, shs_trace_json). Returns an exit code. */
int shs_cli_trace_text(const char *cmd, const char *path, const shs_run *r, const shs_module *m,
		       char **text);

/* Writes text as the whole of path (shs_file_write), printing "shardsearch: CMD: PATH: why"
 * on failure. Returns an exit code. */
int shs_cli_write_text(const char *cmd, const char *path, const char *text);

/* The exit code of a failed step: SHS_EXIT_USAGE for SHS_EINVAL (bad usage or options), else
 * SHS_EXIT_FAIL. */
int shs_cli_exit(int code);

#endif
