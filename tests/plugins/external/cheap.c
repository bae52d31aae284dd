/* A plugin built outside the project from the plugin header alone: "multiply" in its first
 * operand's sharding for (almost) nothing, cheaper than any built-in strategy. */
#include "shardsearch_plugin.h"

static const char *const ops[] = { "multiply", 0 };

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const shs_pspec *like = q->hints && q->hints[0] ? q->hints[0] : q->result_hint;
	uint32_t c;

	(void)user;
	if (!like || q->instr->n_operands != 2)
		return 0;
	c = api->candidate(out, "cheap-like-lhs");
	api->set_result(out, c, 0, like);
	api->set_operand(out, c, 0, 0, like);
	api->set_operand(out, c, 1, 0, like);
	api->set_cost(out, c, 1, 1);
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "ext.cheapmul",
	.opcodes = ops,
	.generate = gen,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &strategy);
}

SHS_PLUGIN_DEFINE(init)
