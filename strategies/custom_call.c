/* Strategy plugin for custom calls: "Sharding" follows the module's hint; flash-attention
 * kernels shard over batch, heads and (ring or all-gather context parallelism) the sequence;
 * kernels with a factor rule (a Shardy sharding rule, cuBLAS GEMMs, Transformer Engine's
 * norms) over their factors; other targets are replicated, with their bytes, under a label
 * the plan warns about.
 *
 * Flash attention's kernels are attention.c's, the factor rules kernel_rule.c's.
 */
#include "attention.h"
#include "kernel_rule.h"
#include "common.h"
#include "rule_util.h"

static const char cc_sharding_target[] = "Sharding";

/* *out = in for the array shape, axes that do not exist or repeat dropped, and marked padded
 * when a dim does not divide (the module's hint is kept as XLA would pad it). False when in is
 * NULL or the ranks differ. */
static bool cc_keep(const shs_pspec *in, const shs_pshape *shape, const shs_pmesh *mesh,
		    shs_pspec *out)
{
	uint32_t used = 0;

	if (!in || !ru_is_array(shape) || in->rank != shape->rank)
		return false;
	sc_replicated(shape->rank, out);
	for (uint32_t d = 0; d < shape->rank; d++) {
		for (uint32_t k = 0; k < in->dims[d].n && k < SHS_PLUGIN_MAX_AXES; k++) {
			uint32_t a = in->dims[d].axes[k];

			if (a >= mesh->n_axes || mesh->sizes[a] < 1 || (used & (1u << a)))
				continue;
			used |= 1u << a;
			ru_push_axis(out, d, a);
		}
		if (shape->dims[d] % sc_dim_shards(&out->dims[d], mesh))
			out->padded = true;
	}
	return true;
}

/* Emits the candidate where operand 0 and the result have spec s. */
static void cc_emit(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		    const char *prefix, const shs_pspec *s)
{
	char label[SC_LABEL_MAX];
	ru_emit e;

	ru_label(label, prefix, s, q->mesh);
	ru_begin(&e, q, out, api, label);
	ru_result(&e, s);
	ru_operand(&e, 0, s);
	ru_end(&e, 0);
}

typedef struct cc_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
} cc_ctx;

static int cc_enum_one(const shs_pspec *s, void *user)
{
	const cc_ctx *x = user;

	cc_emit(x->q, x->out, x->api, "same", s);
	return 0;
}

/* A Sharding call: the hint alone when there is one; else like an identity op. */
static int cc_sharding(const shs_pquery *q, shs_pemit *out, const shs_host_api *api)
{
	const shs_pshape *res = &q->instr->shape;
	shs_pspec s;

	if (cc_keep(q->result_hint ? &q->result_hint[0] : NULL, res, q->mesh, &s)) {
		cc_emit(q, out, api, "hint", &s);
		return 0;
	}
	if (q->mode == SHS_PMODE_ENUMERATE) {
		cc_ctx x = { q, out, api };

		if (sc_enum_specs(res, q->mesh, NULL, cc_enum_one, &x) < 0) {
			api->fail(out, "%s: cannot enumerate the specs of rank %u", q->instr->name,
				  res->rank);
			return -1;
		}
		return 0;
	}
	if (ru_fit(sc_operand_hint(q, 0), res, q->mesh, &s) && ru_sharded(&s))
		cc_emit(q, out, api, "same", &s);
	sc_replicated(res->rank, &s);
	cc_emit(q, out, api, "same", &s);
	return 0;
}

static bool cc_is_sharding(const shs_pinstr *i)
{
	return i->custom_call_target && !strcmp(i->custom_call_target, cc_sharding_target) &&
	       i->n_operands == 1 && ru_is_array(&i->shape) &&
	       ru_same_dims(&i->operands[0], &i->shape) && i->operands[0].type != SHS_PTYPE_TUPLE;
}

static int cc_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const shs_pinstr *i = q->instr;

	int rc;

	(void)user;
	/* a stated rule first: it is the kernel's own word */
	if (shs_kernel_rule_serve(q, out, api, &rc) || shs_attention_serve(q, out, api, &rc))
		return rc;
	if (cc_is_sharding(i))
		return cc_sharding(q, out, api);
	/* the plan names the call and its target in a warning (SHS_PLUGIN_UNKNOWN_CALL) */
	ru_replicated_as(q, out, api, SHS_PLUGIN_UNKNOWN_CALL);
	return 0;
}

static const char *const cc_opcodes[] = { "custom-call", NULL };

static const shs_strategy cc_strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "custom-call.sharding",
	.opcodes = cc_opcodes,
	.generate = cc_generate,
};

static int cc_init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &cc_strategy);
}

SHS_PLUGIN_DEFINE(cc_init)
