/* Test plugin: built for plugin ABI 999; the host must refuse it before running any of its code:
 * its constructor aborts the process that runs it. */
#include <stddef.h>
#include <stdlib.h>

#include "shardsearch_plugin.h"

static const char *const ops[] = { "add", NULL };

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)q;
	(void)user;
	api->candidate(out, "wrong-abi");
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "wrong_abi.add",
	.opcodes = ops,
	.generate = gen,
};

__attribute__((constructor)) static void loaded(void)
{
	abort(); /* dlopen ran it: the ABI was checked too late */
}

SHS_PLUGIN_EXPORT const uint32_t shs_plugin_abi_version = 999;
SHS_PLUGIN_EXPORT int shs_plugin_init(shs_registry *reg, const shs_host_api *api);

int shs_plugin_init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &strategy);
}
