/* Test plugin that makes each candidate twice, whole (add_candidate) and piece by piece
 * (candidate, set_result, set_operand, set_cost), and one whole candidate without a result. */
#include <stddef.h>

#include "shardsearch_plugin.h"

static const char *const ops[] = { "multiply", NULL };

/* Result and both operands split like spec, at that cost, with an all-reduce over axis 0. */
static void twice(shs_pemit *out, const shs_host_api *api, const shs_pspec *spec, double flops)
{
	const shs_pspec operands[2] = { *spec, *spec };
	uint32_t c = api->add_candidate(out, "whole", spec, operands, flops, 2 * flops);

	api->add_collective(out, c, SHS_PCOLL_ALL_REDUCE, 1, flops, false);
	c = api->candidate(out, "pieces");
	api->set_result(out, c, 0, spec);
	api->set_operand(out, c, 0, 0, &operands[0]);
	api->set_operand(out, c, 1, 0, &operands[1]);
	api->set_cost(out, c, flops, 2 * flops);
	api->add_collective(out, c, SHS_PCOLL_ALL_REDUCE, 1, flops, false);
}

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	shs_pspec spec = { .rank = q->instr->shape.rank };
	const shs_pspec operands[2] = { spec, spec };

	(void)user;
	if (api->struct_size < offsetof(shs_host_api, add_candidate) + sizeof(api->add_candidate))
		return -1;
	twice(out, api, &spec, 8);
	spec.dims[0] = (shs_pdim){ .n = 1, .axes = { 0 } };
	twice(out, api, &spec, 2);
	api->add_candidate(out, "no result", NULL, operands, 1, 1);
	return 0;
}

static const shs_strategy whole = {
	.struct_size = sizeof(shs_strategy),
	.name = "whole.multiply",
	.opcodes = ops,
	.generate = gen,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &whole);
}

SHS_PLUGIN_DEFINE(init)
