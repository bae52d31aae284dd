/* Test plugin: two strategies own user data (allocated at init) and release it in destroy,
 * which also logs "destroy NAME" to the file SHS_TEST_DESTROY_LOG names. With
 * SHS_TEST_DESTROY_FAIL set, init fails after registering both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardsearch_plugin.h"

static const char *const ops[] = { "negate", NULL };

/* What a strategy owns: its name, for the log. */
typedef struct owned {
	char name[16];
} owned;

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)q;
	(void)out;
	(void)api;
	(void)user;
	return 0;
}

static void destroy(void *user)
{
	const char *path = getenv("SHS_TEST_DESTROY_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;

	if (f) {
		fprintf(f, "destroy %s\n", ((owned *)user)->name);
		fclose(f);
	}
	free(user);
}

static int add(shs_registry *reg, const shs_host_api *api, const char *name)
{
	owned *o = calloc(1, sizeof(*o));
	shs_strategy s = { .struct_size = sizeof(s), .name = name, .opcodes = ops,
			   .generate = gen, .user = o, .destroy = destroy };

	if (!o)
		return -1;
	snprintf(o->name, sizeof(o->name), "%s", name);
	if (api->register_strategy(reg, &s) != 0) {
		free(o);
		return -1;
	}
	return 0;
}

static int init(shs_registry *reg, const shs_host_api *api)
{
	if (add(reg, api, "destroys.a") || add(reg, api, "destroys.b"))
		return -1;
	if (getenv("SHS_TEST_DESTROY_FAIL")) {
		api->set_error(reg, "asked to fail");
		return -1;
	}
	return 0;
}

SHS_PLUGIN_DEFINE(init)
