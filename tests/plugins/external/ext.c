/* A plugin built outside the project from the plugin header alone: "multiply", replicated. */
#include "shardsearch_plugin.h"

static const char *const ops[] = { "multiply", 0 };

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const shs_pshape *s = &q->instr->shape;
	double n = 1;
	uint32_t c;

	(void)user;
	for (uint32_t d = 0; d < s->rank; d++)
		n *= (double)s->dims[d];
	c = api->candidate(out, "ext-replicated");
	api->set_cost(out, c, n, 3 * n * api->elem_bytes(s->type));
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "ext.mul",
	.opcodes = ops,
	.generate = gen,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &strategy);
}

SHS_PLUGIN_DEFINE(init)
