/* Test plugin: candidates that use a mesh axis twice, or an axis the mesh does not have. */
#include <stddef.h>

#include "shardsearch_plugin.h"

enum { NO_SUCH_AXIS = 9 };

static const char *const ops[] = { "add", NULL };

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	shs_pspec twice = { .rank = q->instr->n_operands > 1 ? q->instr->operands[1].rank : 0 };
	shs_pspec far = { .rank = q->instr->shape.rank };
	uint32_t c;

	(void)user;
	if (twice.rank >= 2) {
		twice.dims[0] = (shs_pdim){ .n = 1, .axes = { 0 } };
		twice.dims[1] = (shs_pdim){ .n = 1, .axes = { 0 } };
	}
	c = api->candidate(out, "twice");
	api->set_operand(out, c, 1, 0, &twice);
	if (far.rank >= 1)
		far.dims[0] = (shs_pdim){ .n = 1, .axes = { NO_SUCH_AXIS } };
	c = api->candidate(out, "axis9");
	api->set_result(out, c, 0, &far);
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "bad.axis_twice",
	.opcodes = ops,
	.generate = gen,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &strategy);
}

SHS_PLUGIN_DEFINE(init)
