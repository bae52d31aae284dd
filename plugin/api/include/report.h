/* Reports: a search's (annotate, the context) and a plan's evaluation (evaluate), as text
 * lines and JSON objects. */
#ifndef SHS_REPORT_H
#define SHS_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "cluster.h"
#include "evaluate.h"
#include "report_padded.h"
#include "search.h"

/* Significant digits of reals in the JSON reports: the search's (annotate, the context) and an
 * evaluation's (evaluate). */
enum { SHS_REPORT_JSON_DIGITS = 10, SHS_EVAL_JSON_DIGITS = 15 };

/* Prints the chosen mesh and plan, step time, memory, exposed communication, the search's
 * figures, the strategies the plan uses (with how many instructions each decides), how each
 * weight of m is sharded and the five best runner-up meshes with why they lose, to out.
 * load_s: how long loading m took. */
void shs_report_print(FILE *out, const shs_module *m, const shs_search_result *r, double load_s);

/* The same as a new JSON object (caller releases; NULL when out of memory). */
json_t *shs_report_json(const shs_module *m, const shs_search_result *r, double load_s);

/* Prints the cluster, step time, compute, communication, memory and the first max_colls
 * collectives of ev, to out. */
void shs_eval_report_print(FILE *out, const shs_cluster *c, const shs_eval *ev,
			   uint32_t max_colls);

/* ev as a new JSON object (caller releases; NULL when out of memory): step_time_s, compute_s,
 * remat_s, comm_s, exposed_comm_s by axis and in all, bound, mfu, hfu, model_flops_per_device,
 * flops_per_device,
 * memory_bytes_per_device with its parts, hbm_bytes, fits, collectives. The one writer of an
 * evaluation: the search's JSON report starts from it. */
json_t *shs_eval_report_json(const shs_cluster *c, const shs_eval *ev);

#endif
