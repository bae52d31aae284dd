/* Test plugin: built with a spec of 16 dims (-DSHS_PLUGIN_MAX_RANK=16, see CMakeLists.txt), as
 * against an older or other header: its sizes word differs and the host must refuse it before
 * its init runs. */
#include <stddef.h>

#include "shardsearch_plugin.h"

static const char *const ops[] = { "add", NULL };

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)q;
	(void)user;
	api->candidate(out, "wrong-sizes");
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "wrong_sizes.add",
	.opcodes = ops,
	.generate = gen,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &strategy);
}

SHS_PLUGIN_DEFINE(init)
