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

/* Room for the one-line advice of shs_advice_summary. */
enum { SHS_REPORT_ADVICE_TEXT = 1024 };

/* A plan that fits with less than this fraction of the HBM to spare is tight. */
#define SHS_REPORT_TIGHT 0.03

/* Prints the chosen mesh and plan, step time, memory, exposed communication, the search's
 * figures, the strategies the plan uses (with how many instructions each decides), how each
 * weight of m is sharded and the five best runner-up meshes with why they lose, to out.
 * load_s: how long loading m took. */
void shs_report_print(FILE *out, const shs_module *m, const shs_search_result *r, double load_s);

/* What shs_report_weights hands over for one weight: its path, shape text, sharding text and
 * its spec on the plan's mesh (NULL: replicated). All borrowed, valid until fn returns. */
typedef void (*shs_weight_fn)(void *user, const char *path, const char *shape, const char *spec,
			      const shs_pspec *ps);

/* Calls fn for every float weight parameter of m's entry (its path holds "params", as in JAX's
 * and the generator's state) under r's plan. m and r: borrowed, valid until this returns. */
void shs_report_weights(const shs_module *m, const shs_search_result *r, shs_weight_fn fn,
			void *user);

/* The line saying what became of the module's sharding constraints under plan p: how many it
 * kept, or that they were ignored; nothing when it had none. p: borrowed (NULL: none). */
void shs_report_constraints(FILE *out, const shs_plan *p, bool ignored);

/* The same as a new JSON object (caller releases; NULL when out of memory). */
json_t *shs_report_json(const shs_module *m, const shs_search_result *r, double load_s);

/* Prints the cluster, step time, compute, communication, memory and the first max_colls
 * collectives of ev, to out. */
void shs_eval_report_print(FILE *out, const shs_cluster *c, const shs_eval *ev,
			   uint32_t max_colls);

/* "offload  ... GiB ... to host memory and back ..." when ev offloads activations (the remat
 * policy offload), else nothing. */
void shs_offload_print(FILE *out, const shs_eval *ev);

/* "pipeline  N stages of L layers ..." when ev pipelines (a stage mesh axis): the schedule,
 * micro-batches, bubble, stage-to-stage transfers and the end stages' memory; else nothing. */
void shs_pipeline_print(FILE *out, const shs_eval *ev);

/* ev on cluster c as a new JSON object (caller releases; NULL when out of memory): mesh (an
 * object of axis sizes) and layout (its text), step_time_s, compute_s, remat_s, offload_*,
 * comm_s, exposed_comm_s by axis and in all, bound, mfu, hfu, model_flops_per_device,
 * flops_per_device, memory_bytes_per_device with its parts and the memory object (peak_bytes,
 * weights, gradients, optimizer state, inputs, gathered copies, activations and temporaries),
 * hbm_bytes, fits, collectives. The one writer of an evaluation: the search's JSON report
 * starts from it. The man page documents the schema. */
json_t *shs_eval_report_json(const shs_cluster *c, const shs_eval *ev);

/* A candidate of the search as a new JSON object: mesh (object), layout, plan, remat,
 * step_time_s, memory_bytes_per_device, fits (report_advice.c; caller releases). */
json_t *shs_try_report_json(const shs_search_try *t);

/* A mesh text ("data=2@x,fsdp=16@yz"; layouts after @ ignored) as a JSON object of its axis
 * sizes ({"data": 2, "fsdp": 16}); every report's "mesh" is one (caller releases). */
json_t *shs_mesh_json_of(const char *layout);

/* Whether ev fits with less than SHS_REPORT_TIGHT of the HBM to spare (report_advice.c). */
bool shs_eval_tight(const shs_eval *ev);

/* "fits", "fits, tight: within 3 % of HBM" or "does not fit". Static storage. */
const char *shs_eval_fit_text(const shs_eval *ev);

/* One line (into buf, cap bytes) for a search whose best plan does not fit: the least memory
 * any plan needs, and what would fit per r->advice. */
void shs_advice_summary(const shs_search_result *r, char *buf, size_t cap);

/* The report's block of what would fit (nothing when r->advice was not sought), to out. */
void shs_advice_report_print(FILE *out, const shs_search_result *r);

/* r->advice as a new JSON object (caller releases): more_chips, more_recomputation,
 * fewer_tokens. */
json_t *shs_advice_report_json(const shs_search_result *r);

#endif
