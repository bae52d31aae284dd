/* Gradient accumulation: the step's forward and backward as one while loop over micro-batches,
 * as JAX lowers a lax.scan over them (MaxText's gradient_accumulation_steps).
 *
 * The data [B, ...] is reshaped to [B/M, M, ...] and trip i takes column i: micro-batch i holds
 * sequences i, i+M, i+2M, ... (any split of the batch trains the same), so that a batch
 * sharding of B stays on the leading B/M when the mesh divides it. The carry holds the trip
 * count, the weights, the reshaped data, one accumulator per gradient (the weight's type and
 * shape, zeros at first) and the summed loss; after the loop the gradients and the loss are the
 * means over the micro-batches, and the optimizer runs once. The loop's own work is scoped
 * `microbatches`; the step's keeps the op_names it has without micro-batches. */
#include <stdlib.h>

#include "model_internal.h"

/* The loop condition `carry[0] < microbatches`. */
static uint32_t cond_of(shs_gen_ctx *x, shs_v init)
{
	shs_gb *g = &x->g;
	const shs_shape *carry = shs_gb_shape(g, init);
	shs_gb_frame frame;
	shs_v p, lt;

	shs_gb_begin(g, &frame, "microbatches.cond");
	p = shs_gb_param_shape(g, 0, carry, "carry");
	lt = shs_gb_compare(g, shs_gb_gte(g, p, 0),
			    shs_gb_const(g, SHS_S32, (double)x->cfg->microbatches), "LT");
	return shs_gb_end(g, &frame, lt);
}

/* data [B, ...] as [B/M, M, ...]. */
static shs_v split(shs_gb *g, shs_v data, int64_t m)
{
	shs_gdims d = shs_gb_dims(g, data), r = { .n = d.n + 1 };

	r.d[0] = d.d[0] / m;
	r.d[1] = m;
	for (uint32_t k = 1; k < d.n; k++)
		r.d[k + 1] = d.d[k];
	return shs_gb_reshape(g, data, r);
}

/* Column i of split data [B/M, M, ...]: [B/M, ...]. */
static shs_v column(shs_gb *g, shs_v split_data, shs_v i)
{
	shs_gdims d = shs_gb_dims(g, split_data), one = d, out = { .n = d.n - 1 };
	shs_v starts[SHS_GB_MAX_RANK], zero = shs_gb_const(g, SHS_S32, 0);

	one.d[1] = 1;
	out.d[0] = d.d[0];
	for (uint32_t k = 0; k < d.n; k++)
		starts[k] = k == 1 ? i : zero;
	for (uint32_t k = 2; k < d.n; k++)
		out.d[k - 1] = d.d[k];
	return shs_gb_reshape(g, shs_gb_dynamic_slice(g, split_data, starts, one), out);
}

shs_v shs_gen_accumulate(shs_gen_ctx *x, const shs_v *w, uint32_t n, shs_v in, shs_v targets,
			 shs_gen_step_fn step, void *user, shs_v *grads)
{
	shs_gb *g = &x->g;
	const shs_gen_config *whole = x->cfg;
	shs_gen_config micro = *whole;
	int64_t m = whole->microbatches;
	uint32_t count = 4 + 2 * n, data = 1 + n, acc = 3 + n, sum = 3 + 2 * n, cond, body;
	shs_v *carry = calloc(count + n, sizeof(*carry)), *mb_grads = carry + count;
	shs_v init, p, loss = 0, loop;
	const shs_shape *shape;
	shs_gb_frame frame;

	if (!carry)
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
	if (g->rc != SHS_OK) {
		free(carry);
		return 0;
	}
	micro.batch = whole->batch / m;
	micro.microbatches = 1;
	shs_gb_push(g, "microbatches");
	carry[0] = shs_gb_const(g, SHS_S32, 0);
	for (uint32_t k = 0; k < n; k++) {
		carry[1 + k] = w[k];
		carry[acc + k] = shs_gb_splat(g, shs_gb_type(g, w[k]), 0.0, shs_gb_dims(g, w[k]));
	}
	carry[data] = split(g, in, m);
	carry[data + 1] = split(g, targets, m);
	carry[sum] = shs_gb_const(g, SHS_F32, 0.0);
	init = shs_gb_tuple(g, carry, count);
	cond = cond_of(x, init);
	shape = shs_gb_shape(g, init); /* read before the body begins: values are per computation */
	shs_gb_begin(g, &frame, "microbatches.body");
	p = shs_gb_param_shape(g, 0, shape, "carry");
	for (uint32_t k = 0; k < count; k++)
		carry[k] = shs_gb_gte(g, p, k);
	x->cfg = &micro; /* the micro-batch's shapes */
	{
		shs_v mb_in = column(g, carry[data], carry[0]);
		shs_v mb_targets = column(g, carry[data + 1], carry[0]);
		/* the step keeps its scopes, as without micro-batches (a plan file's rules name
		 * its instructions alike); the accumulation is the loop's */
		shs_gb_pop(g);
		step(x, user, carry + 1, mb_in, mb_targets, mb_grads, &loss);
		shs_gb_push(g, "microbatches");
	}
	x->cfg = whole;
	for (uint32_t k = 0; k < n && g->rc == SHS_OK; k++)
		carry[acc + k] = shs_gb_add(g, carry[acc + k],
					    shs_gb_convert(g, mb_grads[k],
							   shs_gb_type(g, carry[acc + k])));
	if (g->rc == SHS_OK)
		carry[sum] = shs_gb_add(g, carry[sum], shs_gb_convert(g, loss, SHS_F32));
	carry[0] = shs_gb_add(g, carry[0], shs_gb_const(g, SHS_S32, 1));
	body = shs_gb_end(g, &frame, shs_gb_tuple(g, carry, count));
	loop = shs_gb_while(g, init, cond, body);
	for (uint32_t k = 0; k < n && g->rc == SHS_OK; k++)
		grads[k] = shs_gb_scale(g, shs_gb_gte(g, loop, acc + k), 1.0 / (double)m);
	loss = g->rc == SHS_OK ? shs_gb_scale(g, shs_gb_gte(g, loop, sum), 1.0 / (double)m) : 0;
	shs_gb_pop(g);
	free(carry);
	return loss;
}
