/* Test plugin, built once per misdeed (HOSTILE_CRASHES, _EXITS, _HANGS, _EXITS_ON_LOAD,
 * _FLOODS): a strategy for "dot" that crashes, calls exit(0) or never returns when asked,
 * exits as it is loaded, or offers far more candidates than a search can use (and registers
 * more strategies than a plugin may). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shardsearch_plugin.h"

enum { FLOOD = 5000 }; /* candidates per query of the flooding build */

static const char *const ops[] = { "dot", NULL };

#ifdef HOSTILE_EXITS_ON_LOAD
__attribute__((constructor)) static void loaded(void)
{
	exit(0);
}
#endif

/* Every candidate replicated, each with its own cost so none is a duplicate of another. */
static void flood(const shs_pquery *q, shs_pemit *out, const shs_host_api *api)
{
	shs_pspec none = { .rank = q->instr->shape.rank };

	for (int k = 0; k < FLOOD; k++) {
		char label[32];
		uint32_t c;

		snprintf(label, sizeof(label), "flood-%d", k);
		c = api->candidate(out, label);
		if (c == SHS_PLUGIN_NO_CANDIDATE)
			return;
		api->set_result(out, c, 0, &none);
		api->set_cost(out, c, 1e12 + k, 1e9);
	}
}

static int gen(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)user;
#if defined(HOSTILE_CRASHES)
	volatile int *volatile nowhere = NULL;

	*nowhere = 1; /* a real fault, not a signal sent */
#elif defined(HOSTILE_EXITS)
	exit(0);
#elif defined(HOSTILE_HANGS)
	for (;;)
		sleep(1);
#endif
	flood(q, out, api);
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "hostile.dot",
	.opcodes = ops,
	.generate = gen,
};

static const char *const no_ops[] = { NULL };

/* Serves nothing: registered past the host's limit by the flooding build. */
static const shs_strategy idle = {
	.struct_size = sizeof(shs_strategy),
	.name = "hostile.idle",
	.opcodes = no_ops,
	.generate = gen,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	int refused = 0;

	if (api->register_strategy(reg, &strategy))
		return -1;
#ifdef HOSTILE_FLOODS
	for (int k = 0; k < SHS_PLUGIN_MAX_STRATEGIES + 10; k++)
		refused += api->register_strategy(reg, &idle) != 0;
	return refused == 11 ? 0 : -1; /* the host took the first 255 and refused the rest */
#else
	(void)idle;
	(void)refused;
	return 0;
#endif
}

SHS_PLUGIN_DEFINE(init)
