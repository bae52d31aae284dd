/* The pipelined program's loops: a stage's layers (inner) and the trips over micro-batches
 * (outer), forward and backward. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "elem.h"
#include "io.h"
#include "pipeline_internal.h"

/* The inner loop of one stage's layers: state (j, t, carry, then loop l's kept and written
 * stacks in order, as the stage holds them); the layer at the micro-batch's shapes (ml's). */
static void inner_state(const pp_ctx *x, const pp_loop *l, const pp_loop *ml, pp_state *st)
{
	pp_shape s32 = pp_scalar(SHS_S32);
	int64_t ls = l->trips / x->stages;

	st->n = 0;
	pp_state_add(st, &s32);
	pp_state_add(st, &s32);
	for (uint32_t k = 0; k < l->n; k++) {
		pp_shape ms = pp_elem_shape(x->mb, ml, k), v;
		if (l->kind[k] == PP_CARRY) {
			v = ms;
		} else if (l->kind[k] == PP_COUNTER) {
			continue;
		} else if ((l == &x->fwd && l->kind[k] == PP_WRITTEN) ||
			   (l == &x->bwd && x->saved_of[k] != UINT32_MAX)) {
			v = pp_lead2(&ms, x->trips, ls, 1); /* saved per trip */
		} else {
			v = pp_dims0(&ms, ls); /* a weight, or a gradient */
		}
		pp_state_add(st, &v);
	}
}

/* Index in the inner state of loop element k (after j, t). */
static uint32_t inner_at(const pp_loop *l, uint32_t k)
{
	uint32_t at = 2;

	for (uint32_t q = 0; q < k; q++)
		at += l->kind[q] != PP_COUNTER;
	return at;
}

/* `%name.p`: value `%name` of shape s pinned where the plan puts the module's value it stands
 * for (spec; without one, the same value unpinned), so that the stages run the layer as the
 * plan does. Failures go to *e (the first kept). */
static void put_pin(shs_buf *b, const pp_ctx *x, const char *pre, char tag, uint32_t q,
		    const pp_shape *s, const shs_pspec *spec, shs_err *e)
{
	char src[SHS_ERRMSG_MAX], name[SHS_ERRMSG_MAX + 2];

	snprintf(src, sizeof(src), "%s.%c%u", pre, tag, q);
	snprintf(name, sizeof(name), "%s.p", src);
	if (!spec) {
		shs_buf_printf(b, "  %%%s = ", name);
		pp_put_same(b, s);
		shs_buf_printf(b, " reshape(%%%s)\n", src);
		return;
	}
	pp_put_pin(b, x, name, src, s, spec, e);
}

/* The start indices of the layer's slot in a stack of rank `rank`: (trip, layer, 0, ...) in a
 * per-trip stack, (layer, 0, ...) in a weight's or a gradient's. */
static void put_layer_index(shs_buf *b, const char *pre, bool per_trip, uint32_t rank)
{
	if (per_trip)
		shs_buf_printf(b, "%%%s.e1, ", pre);
	shs_buf_printf(b, "%%%s.i", pre);
	for (uint32_t d = per_trip ? 2 : 1; d < rank; d++)
		shs_buf_printf(b, ", %%%s.z", pre);
}

/* The inner body: the layer's slices, the call, the writes. */
static void put_inner_body(shs_buf *b, const pp_ctx *x, const pp_loop *l, const pp_loop *ml,
			   const char *pre, const pp_state *st, shs_err *e)
{
	const shs_computation *layer = x->mb->comps[ml->layer];
	const shs_instr *root = layer->instrs[layer->root];
	const shs_instr *call = x->m->comps[l->body]->instrs[l->call];
	int64_t ls = l->trips / x->stages;
	bool saved_side = l == &x->fwd;

	shs_buf_printf(b, "%%%s.body {\n  %%%s.p = ", pre, pre);
	pp_put_state(b, st);
	shs_buf_puts(b, " parameter(0)\n");
	for (uint32_t k = 0; k < st->n; k++)
		pp_put_gte(b, pre, &st->s[k], k);
	shs_buf_printf(b, "  %%%s.z = s32[] constant(0)\n  %%%s.one = s32[] constant(1)\n", pre,
		       pre);
	if (l->reverse)
		shs_buf_printf(b, "  %%%s.top = s32[] constant(%" PRId64 ")\n  %%%s.i = s32[] "
			       "subtract(%%%s.top, %%%s.e0)\n", pre, ls - 1, pre, pre, pre);
	else
		shs_buf_printf(b, "  %%%s.i = s32[] add(%%%s.e0, %%%s.z)\n", pre, pre, pre);
	/* the layer's operands */
	for (uint32_t q = 0; q < l->n_args; q++) {
		uint32_t k = l->arg[q], at = inner_at(l, k);
		pp_shape want = pp_of(&layer->instrs[0]->shape);
		for (uint32_t i = 0; i < layer->n_instrs; i++)
			if (layer->instrs[i]->op == SHS_OP_PARAMETER &&
			    layer->instrs[i]->parameter_number == (int64_t)q)
				want = pp_of(&layer->instrs[i]->shape);
		const shs_pspec *spec = pp_spec_in(x, l->body, call->operands[q], 0);
		if (l->kind[k] == PP_CARRY) {
			shs_buf_printf(b, "  %%%s.a%u = ", pre, q);
			pp_put_same(b, &want);
			shs_buf_printf(b, " reshape(%%%s.e%u)\n", pre, at);
			put_pin(b, x, pre, 'a', q, &want, spec, e);
			continue;
		}
		bool per_trip = !saved_side && x->saved_of[k] != UINT32_MAX;
		const pp_shape *src = &st->s[at];
		uint32_t skip = per_trip ? 2 : 1;
		int64_t ones[2] = { 1, 1 };
		shs_buf_printf(b, "  %%%s.d%u = ", pre, q);
		pp_put_shape(b, src->type, ones, skip, src, skip);
		shs_buf_printf(b, " dynamic-slice(%%%s.e%u, ", pre, at);
		put_layer_index(b, pre, per_trip, src->rank);
		shs_buf_puts(b, "), dynamic_slice_sizes={");
		for (uint32_t d = 0; d < src->rank; d++)
			shs_buf_printf(b, "%s%" PRId64, d ? "," : "", d < skip ? 1 : src->dims[d]);
		shs_buf_printf(b, "}\n  %%%s.a%u = ", pre, q);
		pp_put_same(b, &want);
		shs_buf_printf(b, " reshape(%%%s.d%u)\n", pre, q);
		put_pin(b, x, pre, 'a', q, &want, spec, e);
	}
	shs_buf_printf(b, "  %%%s.call = ", pre);
	shs_shape_print(b, &root->shape, false);
	shs_buf_puts(b, " call(");
	for (uint32_t q = 0; q < l->n_args; q++)
		shs_buf_printf(b, "%s%%%s.a%u.p", q ? ", " : "", pre, q);
	shs_buf_printf(b, "), to_apply=%%%s\n", layer->name);
	/* its results: carried, written per trip (saved), or added into a gradient */
	for (uint32_t k = 0; k < l->n; k++) {
		uint32_t at = inner_at(l, k);
		const pp_shape *dst = &st->s[at];
		if (l->kind[k] != PP_CARRY && l->kind[k] != PP_WRITTEN)
			continue;
		pp_shape r = pp_of(&root->shape.tuple[l->out[k]]);
		shs_buf_printf(b, "  %%%s.r%u = ", pre, k);
		pp_put_same(b, &r);
		shs_buf_printf(b, " get-tuple-element(%%%s.call), index=%d\n", pre, l->out[k]);
		put_pin(b, x, pre, 'r', k, &r,
			pp_spec_in(x, l->body, l->call, (uint32_t)l->out[k]), e);
		if (l->kind[k] == PP_CARRY)
			continue;
		uint32_t skip = saved_side ? 2 : 1;
		int64_t ones[2] = { 1, 1 };
		shs_buf_printf(b, "  %%%s.u%u = ", pre, k);
		pp_put_shape(b, dst->type, ones, skip, dst, skip);
		shs_buf_printf(b, " reshape(%%%s.r%u.p)\n", pre, k);
		if (!saved_side) { /* the gradient: added to the stage's sum */
			shs_buf_printf(b, "  %%%s.o%u = ", pre, k);
			pp_put_shape(b, dst->type, ones, 1, dst, 1);
			shs_buf_printf(b, " dynamic-slice(%%%s.e%u, ", pre, at);
			put_layer_index(b, pre, false, dst->rank);
			shs_buf_puts(b, "), dynamic_slice_sizes={1");
			for (uint32_t d = 1; d < dst->rank; d++)
				shs_buf_printf(b, ",%" PRId64, dst->dims[d]);
			shs_buf_printf(b, "}\n  %%%s.s%u = ", pre, k);
			pp_put_shape(b, dst->type, ones, 1, dst, 1);
			shs_buf_printf(b, " add(%%%s.o%u, %%%s.u%u)\n", pre, k, pre, k);
		}
		shs_buf_printf(b, "  %%%s.w%u = ", pre, k);
		pp_put_same(b, dst);
		shs_buf_printf(b, " dynamic-update-slice(%%%s.e%u, %%%s.%c%u, ", pre, at, pre,
			       saved_side ? 'u' : 's', k);
		put_layer_index(b, pre, saved_side, dst->rank);
		shs_buf_puts(b, ")\n");
	}
	shs_buf_printf(b, "  %%%s.j1 = s32[] add(%%%s.e0, %%%s.one)\n  ROOT %%%s.root = ", pre,
		       pre, pre, pre);
	pp_put_state(b, st);
	shs_buf_printf(b, " tuple(%%%s.j1, %%%s.e1", pre, pre);
	for (uint32_t k = 0; k < l->n; k++) {
		uint32_t at = inner_at(l, k);
		if (l->kind[k] == PP_COUNTER)
			continue;
		if (l->kind[k] == PP_CARRY)
			shs_buf_printf(b, ", %%%s.r%u.p", pre, k);
		else if (l->kind[k] == PP_WRITTEN)
			shs_buf_printf(b, ", %%%s.w%u", pre, k);
		else
			shs_buf_printf(b, ", %%%s.e%u", pre, at);
	}
	shs_buf_puts(b, ")\n}\n\n");
}

/* The outer loop's state: (t, micro-batches in, carry, micro-batches out, then the inner
 * loop's stacks). */
static void outer_state(const pp_ctx *x, const pp_loop *l, const pp_loop *ml,
			const pp_state *in, pp_state *st)
{
	pp_shape c = pp_elem_shape(x->mb, ml, l->carry);
	pp_shape s32 = pp_scalar(SHS_S32), io = pp_lead2(&c, c.dims[0], x->r->microbatches, 1);

	st->n = 0;
	pp_state_add(st, &s32);
	pp_state_add(st, &io);
	pp_state_add(st, &c);
	pp_state_add(st, &io);
	for (uint32_t k = 2; k < in->n; k++)
		if (k != inner_at(l, l->carry))
			pp_state_add(st, &in->s[k]);
}

/* The outer body: the micro-batch in (stage 0's, or the one received), the stage's layers,
 * the micro-batch out (the last stage's), the send. */
static void put_outer_body(shs_buf *b, const pp_ctx *x, const pp_loop *l, const char *pre,
			   const char *inner, const pp_state *st, const pp_state *ist)
{
	bool fwd = l == &x->fwd;
	const pp_shape *c = &st->s[2], *io = &st->s[1];
	int64_t m = x->r->microbatches;
	uint32_t cat = inner_at(l, l->carry);

	shs_buf_printf(b, "%%%s.body {\n  %%%s.p = ", pre, pre);
	pp_put_state(b, st);
	shs_buf_puts(b, " parameter(0)\n");
	for (uint32_t k = 0; k < st->n; k++)
		pp_put_gte(b, pre, &st->s[k], k);
	shs_buf_printf(b, "  %%%s.z = s32[] constant(0)\n  %%%s.one = s32[] constant(1)\n"
		       "  %%%s.mlast = s32[] constant(%" PRId64 ")\n"
		       "  %%%s.slast = s32[] constant(%" PRId64 ")\n", pre, pre, pre, m - 1, pre,
		       x->stages - 1);
	if (fwd)
		shs_buf_printf(b, "  %%%s.t = s32[] add(%%%s.e0, %%%s.z)\n", pre, pre, pre);
	else
		shs_buf_printf(b, "  %%%s.tlast = s32[] constant(%" PRId64 ")\n  %%%s.t = s32[] "
			       "subtract(%%%s.tlast, %%%s.e0)\n", pre, x->trips - 1, pre, pre, pre);
	pp_put_stage(b, x, pre);
	/* the micro-batch this trip brings in: forward, stage 0's is micro-batch t; backward,
	 * the last stage's is the gradient of micro-batch t - (S - 1), zero outside 0..M-1 */
	if (fwd)
		shs_buf_printf(b, "  %%%s.m = s32[] add(%%%s.t, %%%s.z)\n  %%%s.takes = pred[] "
			       "compare(%%%s.stage, %%%s.z), direction=EQ\n", pre, pre, pre, pre,
			       pre, pre);
	else
		shs_buf_printf(b, "  %%%s.m = s32[] subtract(%%%s.t, %%%s.slast)\n  %%%s.takes = "
			       "pred[] compare(%%%s.stage, %%%s.slast), direction=EQ\n", pre, pre,
			       pre, pre, pre, pre);
	shs_buf_printf(b, "  %%%s.mc = s32[] clamp(%%%s.z, %%%s.m, %%%s.mlast)\n  %%%s.xs = ", pre,
		       pre, pre, pre, pre);
	pp_put_two(b, c, c->dims[0], 1, 1);
	shs_buf_printf(b, " dynamic-slice(%%%s.e1, %%%s.z, %%%s.mc", pre, pre, pre);
	for (uint32_t d = 2; d < io->rank; d++)
		shs_buf_printf(b, ", %%%s.z", pre);
	shs_buf_printf(b, "), dynamic_slice_sizes={%" PRId64 ",1", c->dims[0]);
	for (uint32_t d = 1; d < c->rank; d++)
		shs_buf_printf(b, ",%" PRId64, c->dims[d]);
	shs_buf_printf(b, "}\n  %%%s.xr = ", pre);
	pp_put_same(b, c);
	shs_buf_printf(b, " reshape(%%%s.xs)\n", pre);
	if (!fwd) {
		shs_buf_printf(b, "  %%%s.ge = pred[] compare(%%%s.m, %%%s.z), direction=GE\n"
			       "  %%%s.le = pred[] compare(%%%s.m, %%%s.mlast), direction=LE\n"
			       "  %%%s.valid = pred[] and(%%%s.ge, %%%s.le)\n"
			       "  %%%s.zero = %s[] constant(0)\n  %%%s.zx = ", pre, pre, pre, pre,
			       pre, pre, pre, pre, pre, pre, shs_elem_name(c->type), pre);
		pp_put_same(b, c);
		shs_buf_printf(b, " broadcast(%%%s.zero), dimensions={}\n  %%%s.vb = ", pre, pre);
		pp_put_shape(b, SHS_PRED, NULL, 0, c, 0);
		shs_buf_printf(b, " broadcast(%%%s.valid), dimensions={}\n  %%%s.xv = ", pre, pre);
		pp_put_same(b, c);
		shs_buf_printf(b, " select(%%%s.vb, %%%s.xr, %%%s.zx)\n", pre, pre, pre);
	}
	shs_buf_printf(b, "  %%%s.tb = ", pre);
	pp_put_shape(b, SHS_PRED, NULL, 0, c, 0);
	shs_buf_printf(b, " broadcast(%%%s.takes), dimensions={}\n  %%%s.in = ", pre, pre);
	pp_put_same(b, c);
	shs_buf_printf(b, " select(%%%s.tb, %%%s.%s, %%%s.e2)\n  %%%s.init = ", pre, pre,
		       fwd ? "xr" : "xv", pre, pre);
	pp_put_state(b, ist);
	shs_buf_printf(b, " tuple(%%%s.z, %%%s.t", pre, pre);
	for (uint32_t k = 2, o = 4; k < ist->n; k++) {
		if (k == cat)
			shs_buf_printf(b, ", %%%s.in", pre);
		else
			shs_buf_printf(b, ", %%%s.e%u", pre, o++);
	}
	shs_buf_printf(b, ")\n  %%%s.loop = ", pre);
	pp_put_state(b, ist);
	shs_buf_printf(b, " while(%%%s.init), condition=%%%s.cond, body=%%%s.body\n", pre, inner,
		       inner);
	shs_buf_printf(b, "  %%%s.out = ", pre);
	pp_put_same(b, c);
	shs_buf_printf(b, " get-tuple-element(%%%s.loop), index=%u\n", pre, cat);
	for (uint32_t k = 2; k < ist->n; k++) {
		if (k == cat)
			continue;
		shs_buf_printf(b, "  %%%s.l%u = ", pre, k);
		pp_put_same(b, &ist->s[k]);
		shs_buf_printf(b, " get-tuple-element(%%%s.loop), index=%u\n", pre, k);
	}
	/* the micro-batch out: forward, the last stage's is micro-batch t - (S - 1); backward,
	 * stage 0's is micro-batch t (later trips, run first, write zeros there) */
	if (fwd)
		shs_buf_printf(b, "  %%%s.om = s32[] subtract(%%%s.t, %%%s.slast)\n", pre, pre,
			       pre);
	else
		shs_buf_printf(b, "  %%%s.om = s32[] add(%%%s.t, %%%s.z)\n", pre, pre, pre);
	shs_buf_printf(b, "  %%%s.omc = s32[] clamp(%%%s.z, %%%s.om, %%%s.mlast)\n  %%%s.or = ",
		       pre, pre, pre, pre, pre);
	pp_put_two(b, c, c->dims[0], 1, 1);
	shs_buf_printf(b, " reshape(%%%s.out)\n", pre);
	/* only the stage that holds the micro-batch out writes it: the others keep zeros, so
	 * that the sum over the stages after the loop is the output */
	shs_buf_printf(b, "  %%%s.keeps = pred[] compare(%%%s.stage, %%%s.%s), direction=EQ\n"
		       "  %%%s.kb = ", pre, pre, pre, fwd ? "slast" : "z", pre);
	pp_put_shape(b, SHS_PRED, (const int64_t[]){ c->dims[0], 1 }, 2, c, 1);
	shs_buf_printf(b, " broadcast(%%%s.keeps), dimensions={}\n  %%%s.ozero = %s[] constant(0)\n"
		       "  %%%s.oz = ", pre, pre, shs_elem_name(c->type), pre);
	pp_put_two(b, c, c->dims[0], 1, 1);
	shs_buf_printf(b, " broadcast(%%%s.ozero), dimensions={}\n  %%%s.om0 = ", pre, pre);
	pp_put_two(b, c, c->dims[0], 1, 1);
	shs_buf_printf(b, " select(%%%s.kb, %%%s.or, %%%s.oz)\n  %%%s.o = ", pre, pre, pre, pre);
	pp_put_same(b, io);
	shs_buf_printf(b, " dynamic-update-slice(%%%s.e3, %%%s.om0, %%%s.z, %%%s.omc", pre, pre,
		       pre, pre);
	for (uint32_t d = 2; d < io->rank; d++)
		shs_buf_printf(b, ", %%%s.z", pre);
	shs_buf_printf(b, ")\n  %%%s.send = ", pre);
	pp_put_same(b, c);
	shs_buf_printf(b, " collective-permute(%%%s.out), channel_id=%d, ", pre, fwd ? 1 : 2);
	pp_put_pairs(b, x, fwd ? 1 : -1);
	shs_buf_printf(b, "\n  %%%s.t1 = s32[] add(%%%s.e0, %%%s.one)\n  ROOT %%%s.root = ", pre,
		       pre, pre, pre);
	pp_put_state(b, st);
	shs_buf_printf(b, " tuple(%%%s.t1, %%%s.e1, %%%s.send, %%%s.o", pre, pre, pre, pre);
	/* a stack the layers only read goes round as it came (loop-invariant, as XLA sees it) */
	for (uint32_t q = 0, o = 4; q < l->n; q++) {
		if (l->kind[q] == PP_COUNTER || l->kind[q] == PP_CARRY)
			continue;
		if (l->kind[q] == PP_KEPT)
			shs_buf_printf(b, ", %%%s.e%u", pre, o);
		else
			shs_buf_printf(b, ", %%%s.l%u", pre, inner_at(l, q));
		o++;
	}
	shs_buf_puts(b, ")\n}\n\n");
}

/* The four loops of one pass (forward or backward): inner and outer, condition and body. */
void pp_put_pass(shs_buf *b, const pp_ctx *x, const pp_loop *l, const pp_loop *ml,
		 const char *outer, const char *inner, pp_state *ost, pp_state *ist,
		 shs_err *e)
{
	inner_state(x, l, ml, ist);
	outer_state(x, l, ml, ist, ost);
	pp_put_cond(b, inner, ist, l->trips / x->stages);
	put_inner_body(b, x, l, ml, inner, ist, e);
	pp_put_cond(b, outer, ost, x->trips);
	put_outer_body(b, x, l, outer, inner, ost, ist);
}

/* Index in the outer state of loop element k (neither the counter nor the carry). */
uint32_t pp_outer_at(const pp_loop *l, uint32_t k)
{
	return inner_at(l, k) + 2 - (l->carry < k ? 1 : 0);
}
