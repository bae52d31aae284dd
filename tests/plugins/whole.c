/* Test plugin that makes each candidate twice, whole (add_candidate) in one strategy and piece by
 * piece (candidate, set_result, set_operand, set_cost) in another, and one whole candidate
 * without a result; a third strategy offers one choice many times, at costs that prune. */
#include <stddef.h>
#include <string.h>

#include "shardsearch_plugin.h"

static const char *const ops[] = { "multiply", NULL };

/* Result and both operands split like spec, at that cost, with an all-reduce over axis 0,
 * made whole or piece by piece. */
static void make(shs_pemit *out, const shs_host_api *api, const shs_pspec *spec, double flops,
		 bool whole)
{
	const shs_pspec operands[2] = { *spec, *spec };
	uint32_t c;

	if (whole) {
		c = api->add_candidate(out, "whole", spec, operands, flops, 2 * flops);
	} else {
		c = api->candidate(out, "pieces");
		api->set_result(out, c, 0, spec);
		api->set_operand(out, c, 0, 0, &operands[0]);
		api->set_operand(out, c, 1, 0, &operands[1]);
		api->set_cost(out, c, flops, 2 * flops);
	}
	api->add_collective(out, c, SHS_PCOLL_ALL_REDUCE, 1, flops, false);
}

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	shs_pspec spec = { .rank = q->instr->shape.rank };
	const shs_pspec operands[2] = { spec, spec };
	bool whole = !strcmp(user, "whole");

	if (api->struct_size < offsetof(shs_host_api, add_candidate) + sizeof(api->add_candidate))
		return -1;
	make(out, api, &spec, 8, whole);
	spec.dims[0] = (shs_pdim){ .n = 1, .axes = { 0 } };
	make(out, api, &spec, 2, whole);
	if (whole)
		api->add_candidate(out, "no result", NULL, operands, 1, 1);
	return 0;
}

/* Replicated many times: "dear", then "cheap" (fewer FLOPs and bytes: it takes dear's place),
 * then "lean" (fewer bytes, more FLOPs than cheap: both stay), then "dearer" copies (dropped),
 * enough of them for the host to prune the list. */
static int gen_thrice(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const shs_pspec spec = { .rank = q->instr->shape.rank }, operands[2] = { spec, spec };

	(void)user;
	api->add_candidate(out, "dear", &spec, operands, 10, 10);
	api->add_candidate(out, "cheap", &spec, operands, 4, 4);
	api->add_candidate(out, "lean", &spec, operands, 6, 1);
	for (int k = 0; k < 100; k++)
		api->add_candidate(out, "dearer", &spec, operands, 6 + k, 6);
	return 0;
}

static const shs_strategy strategies[] = {
	{ .struct_size = sizeof(shs_strategy), .name = "whole.multiply", .opcodes = ops,
	  .generate = gen, .user = "whole" },
	{ .struct_size = sizeof(shs_strategy), .name = "pieces.multiply", .opcodes = ops,
	  .generate = gen, .user = "pieces" },
	{ .struct_size = sizeof(shs_strategy), .name = "thrice.multiply", .opcodes = ops,
	  .generate = gen_thrice },
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	for (size_t k = 0; k < sizeof(strategies) / sizeof(strategies[0]); k++)
		if (api->register_strategy(reg, &strategies[k]))
			return -1;
	return 0;
}

SHS_PLUGIN_DEFINE(init)
