/* Options shared by the commands that evaluate plans on a cluster: evaluate and annotate. */
#ifndef SHS_CLI_CLUSTER_H
#define SHS_CLI_CLUSTER_H

#include <stdbool.h>

#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "run.h"

/* The cluster and evaluation options (--hardware, --hardware-file, --topology, --devices,
 * --slices, --remat, --schedule, --prefetch, --no-overlap, --no-fusion) as the library takes
 * them; the search's own fields are annotate's to fill. */
typedef shs_run_options shs_cli_cluster_opts;

/* Help text of the cluster options, and of the evaluation options. */
extern const char shs_cli_cluster_usage[];
extern const char shs_cli_eval_usage[];

/* Consumes the cluster or evaluation option at argv[*k] (and its value): returns 1 when it was
 * one, 0 when it is not, -1 after printing a usage error for cmd. */
int shs_cli_cluster_option(const char *cmd, int argc, char **argv, int *k,
			   shs_cli_cluster_opts *o);

/* The built-in catalog with --hardware-file applied. Prints "shardsearch: CMD: ..." and returns
 * false when the file is bad. */
bool shs_cli_catalog(const char *cmd, const shs_cli_cluster_opts *o, shs_hw_catalog *cat);

#endif
