/* Private helpers of the plan code (plan.c, propagate.c, annotate.c): specs on shapes. */
#ifndef SHS_PLAN_INTERNAL_H
#define SHS_PLAN_INTERNAL_H

#include "plan.h"

/* Replicated spec of the given rank. */
void shs__spec_replicated(shs_pspec *s, uint32_t rank);

bool shs__spec_equal(const shs_pspec *x, const shs_pspec *y);

/* Whether s is valid for array shape a on mesh: rank matches, axes exist and appear once, and
 * every sharded dim divides by its axes' sizes (unless padded). */
bool shs__spec_fits(const shs_pspec *s, const shs_shape *a, const shs_mesh *mesh);

/* Devices one shard is spread over: product of the sizes of the axes s uses. */
int64_t shs__spec_shards(const shs_pspec *s, const shs_mesh *mesh);

/* Bytes of one device's piece of array a under s. */
double shs__spec_local_bytes(const shs_pspec *s, const shs_shape *a, const shs_mesh *mesh);

/* The dim of s that holds mesh axis a, or -1. */
int shs__spec_dim_of(const shs_pspec *s, uint32_t a);

/* Mesh axis index of name, or -1. */
int shs__mesh_axis(const shs_mesh *mesh, const char *name);

/* Appends axis to dim d of s (no check). */
void shs__spec_add(shs_pspec *s, uint32_t d, int axis);

/* The array leaves of s in depth-first order into out[] (borrowed pointers into s);
 * returns how many were written (at most cap). */
uint32_t shs__shape_leaves(const shs_shape *s, const shs_shape **out, uint32_t cap);

/* Named form of spec, and back from an XLA sharding (SHS_EINVAL when not expressible). */
void shs__spec_to_named(const shs_pspec *s, shs_named_sharding *out);
int shs__spec_from_sharding(const shs_mesh *mesh, const shs_sharding *sh, uint32_t rank,
			    shs_pspec *out, shs_err *e);

/* Seeds of the entry parameters (params.c): out[k] (leaves of parameter k, allocated by the
 * caller with shs_shape_leaves entries) and set[k] whether it is seeded. Warnings through warn. */
int shs__plan_seed(const shs_module *m, const shs_plan_request *r, shs_pspec **out, bool *set,
		   shs_warn_fn warn, void *user, shs_err *e);

/* Whether a parameter path (shs_param_path) has segment word, between '/' or '.' (seed.c). */
bool shs__path_has_segment(const char *path, const char *word);

/* Whether a parameter path names optimizer state (Adam's mu and nu) rather than a weight. */
bool shs__path_is_optimizer_state(const char *path);

/* Frees the arrays decision d owns (result, requirements, collectives) and clears them (plan.c). */
void shs__decision_free(shs_decision *d);

#endif
