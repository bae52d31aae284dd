/* Test plugin: candidates with a wrong rank, plus generators that fail, flood the host with
 * candidates and misuse the builder (NULL specs, missing candidates, bad indices). */
#include <stddef.h>

#include "shardsearch_plugin.h"

enum { FLOOD = 150000, FLOOD_AXIS_BAD = 9 };

static const char *const add_ops[] = { "add", NULL };
static const char *const sub_ops[] = { "subtract", NULL };
static const char *const neg_ops[] = { "negate", NULL };
static const char *const max_ops[] = { "maximum", NULL };

/* "ok": replicated; "rank3": a result spec of rank 3 whatever the shape. */
static int gen_rank(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	shs_pspec rank3 = { .rank = 3 };
	uint32_t c;

	(void)q;
	(void)user;
	api->candidate(out, "ok");
	c = api->candidate(out, "rank3");
	api->set_result(out, c, 0, &rank3);
	return 0;
}

/* Emits a candidate, then gives up. */
static int gen_fail(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)user;
	api->candidate(out, "doomed");
	api->fail(out, "cannot shard %s", q->instr->name);
	return -1;
}

/* Far more candidates than the host keeps. */
static int gen_flood(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)q;
	(void)user;
	for (uint32_t k = 0; k < FLOOD; k++)
		api->set_cost(out, api->candidate(out, "flood"), 1.0, 1.0);
	return 0;
}

/* Every misuse of the builder; only the unlabelled candidate is valid. */
static int gen_nulls(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	shs_pspec spec = { .rank = q->instr->shape.rank };
	uint32_t c;

	(void)user;
	api->candidate(NULL, "nowhere");
	api->set_result(NULL, 0, 0, &spec);
	api->fail(NULL, "nowhere");
	api->candidate(out, NULL);
	c = api->candidate(out, "null-spec");
	api->set_result(out, c, 0, NULL);
	api->set_result(out, 77, 0, &spec);
	c = api->candidate(out, "bad-operand");
	api->set_operand(out, c, 5, 0, &spec);
	c = api->candidate(out, "bad-collective");
	api->add_collective(out, c, SHS_PCOLL_ALL_REDUCE, 1u << FLOOD_AXIS_BAD, 8.0, false);
	c = api->candidate(out, "bad-cost");
	api->set_cost(out, c, -1.0, 0.0);
	return api->leaves(NULL) == 0 ? 0 : -1;
}

static const shs_strategy strategies[] = {
	{ .struct_size = sizeof(shs_strategy), .name = "bad.rank", .opcodes = add_ops,
	  .generate = gen_rank },
	{ .struct_size = sizeof(shs_strategy), .name = "bad.fail", .opcodes = sub_ops,
	  .generate = gen_fail },
	{ .struct_size = sizeof(shs_strategy), .name = "bad.flood", .opcodes = neg_ops,
	  .generate = gen_flood },
	{ .struct_size = sizeof(shs_strategy), .name = "bad.nulls", .opcodes = max_ops,
	  .generate = gen_nulls },
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	for (size_t k = 0; k < sizeof(strategies) / sizeof(strategies[0]); k++)
		if (api->register_strategy(reg, &strategies[k]) != 0)
			return -1;
	return 0;
}

SHS_PLUGIN_DEFINE(init)
