/* Test plugin that behaves: its strategies propose valid candidates and register cleanly. */
/*
 * "add" replicated or split on dim 0 by each axis that divides it, custom-call target "MyOp"
 * replicated or following hints, and instructions whose op_name holds "good-match".
 */
#include <stdio.h>
#include <string.h>

#include "shardsearch_plugin.h"

enum { LABEL_MAX = SHS_PLUGIN_LABEL_MAX };

static const char *const add_ops[] = { "add", NULL };
static const char *const myop_targets[] = { "MyOp", NULL };

static double elements(const shs_pshape *s)
{
	double n = 1;

	for (uint32_t d = 0; d < s->rank; d++)
		n *= (double)s->dims[d];
	return n;
}

/* Result and every operand share spec. */
static void emit_same(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		      const char *label, const shs_pspec *spec, double parts)
{
	const shs_pinstr *in = q->instr;
	double n = elements(&in->shape) / parts;
	uint32_t c = api->candidate(out, label);

	api->set_result(out, c, 0, spec);
	for (uint32_t k = 0; k < in->n_operands; k++)
		api->set_operand(out, c, k, 0, spec);
	api->set_cost(out, c, n, n * api->elem_bytes(in->shape.type) * (in->n_operands + 1));
}

static int gen_add(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const shs_pinstr *in = q->instr;
	shs_pspec spec = { .rank = in->shape.rank };
	char label[LABEL_MAX];

	(void)user;
	emit_same(q, out, api, "replicated", &spec, 1);
	if (in->shape.rank == 0)
		return 0;
	for (uint32_t a = 0; a < q->mesh->n_axes; a++) {
		if (q->mesh->sizes[a] < 1 || in->shape.dims[0] % q->mesh->sizes[a])
			continue;
		spec.dims[0] = (shs_pdim){ .n = 1, .axes = { (uint8_t)a } };
		snprintf(label, sizeof(label), "dim0=%s", q->mesh->names[a]);
		emit_same(q, out, api, label, &spec, (double)q->mesh->sizes[a]);
	}
	return 0;
}

/* Replicated; and, when asked to propagate, one candidate following the result hint and one
 * following operand 0's hint, when given. */
static int gen_myop(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	uint32_t c = api->candidate(out, "myop-replicated");

	(void)user;
	api->set_cost(out, c, elements(&q->instr->shape), 0);
	if (q->mode != SHS_PMODE_PROPAGATE)
		return 0;
	if (q->result_hint)
		emit_same(q, out, api, "myop-result-hint", &q->result_hint[0], 1);
	if (q->instr->n_operands && q->hints[0])
		emit_same(q, out, api, "myop-operand-hint", &q->hints[0][0], 1);
	return 0;
}

static bool match_named(const shs_pinstr *i, void *user)
{
	(void)user;
	return strstr(i->op_name, "good-match") != NULL;
}

static int gen_matched(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	(void)q;
	(void)user;
	api->candidate(out, "matched");
	return 0;
}

static const shs_strategy strategies[] = {
	{ .struct_size = sizeof(shs_strategy), .name = "good.add", .opcodes = add_ops,
	  .generate = gen_add },
	{ .struct_size = sizeof(shs_strategy), .name = "good.myop",
	  .custom_call_targets = myop_targets, .generate = gen_myop },
	{ .struct_size = sizeof(shs_strategy), .name = "good.match", .match = match_named,
	  .generate = gen_matched },
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	for (size_t k = 0; k < sizeof(strategies) / sizeof(strategies[0]); k++)
		if (api->register_strategy(reg, &strategies[k]) != 0)
			return -1;
	return 0;
}

SHS_PLUGIN_DEFINE(init)
