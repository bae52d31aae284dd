/* The losses: softmax cross-entropy over the vocabulary, and the book model's squared error. */
#include "model_internal.h"

shs_v shs_gen_loss(shs_gen_ctx *x, shs_v y, shs_v w, shs_v targets, shs_v *dy, shs_v *dw)
{
	shs_gb *g = &x->g;
	const shs_gen_config *c = x->cfg;
	shs_gen_dot spec = { .lhs_contract = GD(2), .rhs_contract = GD(c->tied_embedding ? 1 : 0) };
	shs_gdims ld = GD(c->batch, c->seq, c->vocab), last = GD(2);
	double per_token = 1.0 / ((double)c->batch * (double)c->seq);
	shs_v logits, lf, sh, e, z, logp, hot, loss, dl;

	shs_gb_push(g, "logits");
	logits = shs_gen_dot_fwd(g, y, w, &spec);
	shs_gb_pop(g);
	shs_gb_push(g, "loss");
	lf = shs_gb_convert(g, logits, SHS_F32);
	sh = shs_gb_sub(g, lf, shs_gb_expand(g, shs_gb_max(g, lf, last), ld, last));
	e = shs_gb_unary(g, SHS_OP_EXP, sh);
	z = shs_gb_sum(g, e, last);
	logp = shs_gb_sub(g, sh, shs_gb_expand(g, shs_gb_unary(g, SHS_OP_LOG, z), ld, last));
	hot = shs_gb_compare(g, shs_gb_iota(g, SHS_S32, ld, 2),
			     shs_gb_broadcast(g, targets, ld, GD(0, 1)), "EQ");
	hot = shs_gb_convert(g, hot, SHS_F32);
	loss = shs_gb_scale(g, shs_gb_sum(g, shs_gb_mul(g, hot, logp), GD(0, 1, 2)), -per_token);
	shs_gb_push(g, "grad");
	dl = shs_gb_sub(g, shs_gb_div(g, e, shs_gb_expand(g, z, ld, last)), hot);
	dl = shs_gb_convert(g, shs_gb_scale(g, dl, per_token), x->ctype);
	shs_gb_pop(g);
	shs_gb_pop(g);
	shs_gb_push(g, "logits");
	shs_gen_dot_bwd(g, y, w, &spec, dl, dy, "grad_input", dw, "grad");
	shs_gb_pop(g);
	return loss;
}

shs_v shs_gen_mse(shs_gen_ctx *x, shs_v out, shs_v target, shs_v *dout)
{
	shs_gb *g = &x->g;
	shs_gdims d = shs_gb_dims(g, out);
	double per_elem = 1.0 / ((double)d.d[0] * (double)d.d[1]);
	shs_v diff, loss;

	shs_gb_push(g, "loss");
	diff = shs_gb_convert(g, shs_gb_sub(g, out, target), SHS_F32);
	loss = shs_gb_scale(g, shs_gb_sum(g, shs_gb_mul(g, diff, diff), GD(0, 1)), 0.5 * per_elem);
	shs_gb_push(g, "grad");
	*dout = shs_gb_convert(g, shs_gb_scale(g, diff, per_elem), x->ctype);
	shs_gb_pop(g);
	shs_gb_pop(g);
	return loss;
}
