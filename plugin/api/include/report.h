/* The report of a search, as annotate prints it: text lines and a JSON object. */
#ifndef SHS_REPORT_H
#define SHS_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "search.h"

/* Prints the chosen mesh and plan, step time, memory, exposed communication, the search's
 * figures, the strategies the plan uses (with how many instructions each decides), how each
 * weight of m is sharded and the five best runner-up meshes with why they lose, to out.
 * load_s: how long loading m took. */
void shs_report_print(FILE *out, const shs_module *m, const shs_search_result *r, double load_s);

/* The same as a new JSON object (caller releases; NULL when out of memory). */
json_t *shs_report_json(const shs_module *m, const shs_search_result *r, double load_s);

#endif
