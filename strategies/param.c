/* Strategy plugin for parameters: any sharding (ENUMERATE), or the one wanted of it (PROPAGATE). */
#include "common.h"
#include "rule_util.h"

static const char *const pa_opcodes[] = { "parameter", NULL };

/* Emits an array parameter's candidate with spec s. */
static void pa_emit(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		    const shs_pspec *s)
{
	char label[SC_LABEL_MAX];
	ru_emit e;

	ru_label(label, "", s, q->mesh);
	ru_begin(&e, q, out, api, label);
	ru_result(&e, s);
	ru_end(&e, 0);
}

typedef struct pa_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
} pa_ctx;

static int pa_enum_one(const shs_pspec *s, void *user)
{
	const pa_ctx *x = user;

	pa_emit(x->q, x->out, x->api, s);
	return 0;
}

/* Whether leaf k of the result hint, fitted to leaf shape, shards anything (*s: the fit). */
static bool pa_leaf_hint(const shs_pquery *q, uint32_t k, const shs_pshape *leaf, shs_pspec *s)
{
	return ru_fit(&q->result_hint[k], leaf, q->mesh, s) && ru_sharded(s);
}

/* A tuple parameter (a loop body's state): the result hint leaf by leaf, and replicated. */
static int pa_tuple(const shs_pquery *q, shs_pemit *out, const shs_host_api *api)
{
	uint32_t n = ru_leaf_count(&q->instr->shape);
	const shs_pshape **leaves;
	bool any = false;
	shs_pspec s;
	ru_emit e;

	if (q->result_hint) {
		leaves = malloc(sizeof(*leaves) * (n + 1));
		if (!leaves) {
			api->fail(out, "%s: out of memory listing %u leaves", q->instr->name, n);
			return -1;
		}
		ru_leaf_shapes(&q->instr->shape, leaves, 0);
		for (uint32_t k = 0; k < n && !any; k++)
			any = pa_leaf_hint(q, k, leaves[k], &s);
		if (any) {
			ru_begin(&e, q, out, api, "result-hint");
			for (uint32_t k = 0; k < n; k++)
				ru_result_leaf(&e, k, leaves[k],
					       pa_leaf_hint(q, k, leaves[k], &s) ? &s : NULL);
			ru_end(&e, 0);
		}
		free(leaves);
	}
	ru_replicated(q, out, api);
	return 0;
}

static int pa_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const shs_pshape *shape = &q->instr->shape;
	shs_pspec s;

	(void)user;
	if (shape->type == SHS_PTYPE_TUPLE)
		return pa_tuple(q, out, api);
	if (!ru_is_array(shape)) {
		ru_replicated(q, out, api);
		return 0;
	}
	if (q->mode == SHS_PMODE_ENUMERATE) {
		pa_ctx x = { q, out, api };

		if (sc_enum_specs(shape, q->mesh, NULL, pa_enum_one, &x) < 0) {
			api->fail(out, "%s: cannot enumerate the specs of rank %u", q->instr->name,
				  shape->rank);
			return -1;
		}
		return 0;
	}
	if (ru_fit(sc_result_hint(q), shape, q->mesh, &s) && ru_sharded(&s))
		pa_emit(q, out, api, &s);
	sc_replicated(shape->rank, &s);
	pa_emit(q, out, api, &s);
	return 0;
}

static const shs_strategy pa_strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "parameter.any",
	.opcodes = pa_opcodes,
	.generate = pa_generate,
	.flags = SHS_STRATEGY_PURE,
};

static int pa_init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &pa_strategy);
}

SHS_PLUGIN_DEFINE(pa_init)
