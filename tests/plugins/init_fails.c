/* Test plugin: registers a strategy, then fails its init; nothing of it may stay registered. */
#include <stddef.h>

#include "shardsearch_plugin.h"

static const char *const ops[] = { "add", NULL };

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)q;
	(void)user;
	api->candidate(out, "init-fails");
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "init_fails.add",
	.opcodes = ops,
	.generate = gen,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	if (api->register_strategy(reg, &strategy) != 0)
		return -1;
	api->set_error(reg, "needs %s", "a GPU");
	return -1;
}

SHS_PLUGIN_DEFINE(init)
