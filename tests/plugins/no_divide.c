/* Test plugin: dim 0 split on mesh axis 0 whatever its size; once padded (valid), once not. */
#include <stddef.h>

#include "shardsearch_plugin.h"

static const char *const ops[] = { "add", NULL };

static void split_all(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		      const char *label, bool padded)
{
	shs_pspec spec = { .rank = q->instr->shape.rank, .padded = padded };
	uint32_t c = api->candidate(out, label);

	if (spec.rank >= 1)
		spec.dims[0] = (shs_pdim){ .n = 1, .axes = { 0 } };
	api->set_result(out, c, 0, &spec);
	for (uint32_t k = 0; k < q->instr->n_operands; k++)
		api->set_operand(out, c, k, 0, &spec);
}

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)user;
	if (q->mesh->n_axes == 0)
		return 0;
	split_all(q, out, api, "split0", false);
	split_all(q, out, api, "split0-padded", true);
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "bad.no_divide",
	.opcodes = ops,
	.generate = gen,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &strategy);
}

SHS_PLUGIN_DEFINE(init)
