/* An example strategy plugin, built outside shardsearch against its installed header: `add`
 * fused into the instruction that produces its first operand. It offers one candidate, the
 * result and both operands in the first operand's sharding, and says it costs its FLOPs and no
 * HBM traffic (the sum is computed while the producer's result is still on chip); the built-in
 * elementwise strategy counts the bytes read and written, so the search prefers this one
 * wherever the shardings agree. */
#include <shardsearch_plugin.h>

static const char *const opcodes[] = { "add", NULL };

/* Elements of one device's piece of an array of shape s sharded by spec. */
static double local_elements(const shs_pshape *s, const shs_pspec *spec, const shs_pmesh *mesh)
{
	double n = 1;

	for (uint32_t d = 0; d < s->rank; d++) {
		int64_t split = 1;
		for (uint32_t k = 0; d < spec->rank && k < spec->dims[d].n; k++)
			split *= mesh->sizes[spec->dims[d].axes[k]];
		n *= (double)s->dims[d] / (double)split;
	}
	return n;
}

static int generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const shs_pspec *lhs = q->hints ? q->hints[0] : NULL;
	uint32_t c;

	(void)user;
	/* only an array add whose first operand is decided and shaped like the result */
	if (!lhs || q->instr->n_operands != 2 || q->instr->shape.type == SHS_PTYPE_TUPLE ||
	    lhs->rank != q->instr->shape.rank || q->instr->operands[1].rank != lhs->rank)
		return 0;
	c = api->candidate(out, "fused into its producer");
	if (c == SHS_PLUGIN_NO_CANDIDATE) /* the query is full */
		return 0;
	api->set_result(out, c, 0, lhs);
	api->set_operand(out, c, 0, 0, lhs);
	api->set_operand(out, c, 1, 0, lhs);
	api->set_cost(out, c, local_elements(&q->instr->shape, lhs, q->mesh), 0);
	return 0;
}

static const shs_strategy strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "example.fused-add",
	.opcodes = opcodes,
	.generate = generate,
};

static int init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &strategy);
}

SHS_PLUGIN_DEFINE(init)
