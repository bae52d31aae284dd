/* The evaluation of a plan as the commands print it: text lines and a JSON object. */
#ifndef SHS_CLI_EVAL_H
#define SHS_CLI_EVAL_H

#include <jansson.h>
#include <stdint.h>

#include "cluster.h"
#include "evaluate.h"

/* Prints the cluster, step time, compute, communication, memory and the first max_colls
 * collectives of ev (stdout). */
void shs_cli_eval_print(const shs_cluster *c, const shs_eval *ev, uint32_t max_colls);

/* ev as a new JSON object (caller releases; NULL when out of memory): step_time_s, compute_s,
 * exposed_comm_s by axis, bound, mfu, memory_bytes_per_device, hbm_bytes, fits, collectives. */
json_t *shs_cli_eval_json(const shs_cluster *c, const shs_eval *ev);

#endif
