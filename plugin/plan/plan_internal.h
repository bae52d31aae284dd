/* Private to the plan room: specs checked against shapes and meshes, XLA forms, seeds. */
#ifndef SHS_PLAN_INTERNAL_H
#define SHS_PLAN_INTERNAL_H

#include "plan.h"

/* Whether s is valid for array shape a on mesh: rank matches, axes exist and appear once, and
 * every sharded dim divides by its axes' sizes (unless padded). */
bool shs__spec_fits(const shs_pspec *s, const shs_shape *a, const shs_mesh *mesh);

/* Appends axis to dim d of s (no check). */
void shs__spec_add(shs_pspec *s, uint32_t d, int axis);

/* Named form of spec, and back from an XLA sharding (SHS_EINVAL when not expressible; one
 * manual over some axes, as in a partly manual region, gives the spec of its other axes). */
void shs__spec_to_named(const shs_pspec *s, shs_named_sharding *out);
int shs__spec_from_sharding(const shs_mesh *mesh, const shs_sharding *sh, uint32_t rank,
			    shs_pspec *out, shs_err *e);

/* Seeds of the entry parameters (seed.c): out[k] (leaves of parameter k, allocated by the
 * caller with shs_shape_leaves entries) and set[k] whether it is seeded. Warnings through warn. */
int shs__plan_seed(const shs_module *m, const shs_plan_request *r, shs_pspec **out, bool *set,
		   shs_warn_fn warn, void *user, shs_err *e);

/* Whether an op_name path names the vocabulary's weights or their use (a segment such as
 * embedding, token_embedder, logits, lm_head). */
bool shs__path_is_vocab(const char *path);

/* The sharding the request's plan gives a batch input of shape a (the tokens): the batch over
 * data, fsdp (when the plan shards with it) and expert, an integer array's sequence over
 * context, padded where they do not divide, as the seeds give the module's batch inputs. */
void shs__seed_tokens(const shs_plan_request *r, const shs_shape *a, shs_pspec *spec);

#endif
