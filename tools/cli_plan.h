/* Options and set-up shared by the commands that make plans: annotate and explain. */
#ifndef SHS_CLI_PLAN_H
#define SHS_CLI_PLAN_H

#include <stdbool.h>

#include "host.h"
#include "plan.h"

enum { SHS_CLI_MAX_PLUGIN_DIRS = 16 };

typedef struct shs_cli_plan_opts {
	const char *mesh, *plan;                  /* --mesh, --plan (borrowed from argv) */
	const char *dirs[SHS_CLI_MAX_PLUGIN_DIRS + 1]; /* --plugins, NULL-terminated */
	int n_dirs;
	bool ignore_hints;
	bool quiet;                               /* no warnings on stderr */
} shs_cli_plan_opts;

/* Help text of the shared options. */
extern const char shs_cli_plan_usage[];

enum { SHS_CLI_HELP = 2 };

/* Consumes the shared option at argv[*k] (and its value): returns 1 when it was one, 0 when it
 * is not, SHS_CLI_HELP after printing head, the shared options and tail for --help, -1 after
 * printing a usage error for cmd. */
int shs_cli_plan_option(const char *cmd, int argc, char **argv, int *k, shs_cli_plan_opts *o,
			const char *head, const char *tail);

/* A host with the built-in plugins, SHARDSEARCH_PLUGIN_PATH and --plugins folders; warnings go to
 * stderr as "shardsearch: warning: ..." (the first 20, then a count) unless quiet. Returns the
 * host (caller frees with shs_host_free) or NULL after printing why. */
shs_host *shs_cli_host(const shs_cli_plan_opts *o);

/* Warnings printed so far, and the summary line of those not printed (stderr). */
void shs_cli_warnings_done(void);

/* The plan request --mesh and --plan describe (plan: a name or a .json file). Prints the error
 * and returns false on failure. */
bool shs_cli_request(const char *cmd, const shs_cli_plan_opts *o, shs_plan_request *r);

#endif
