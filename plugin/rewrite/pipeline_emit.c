/* The pipelined program as HLO text: the pipeline's loops and the entry that runs them.
 *
 * Names: every new instruction and computation starts with "pp." (fo / fi: the forward outer
 * and inner loop, bo / bi the backward ones, e: the entry). Inside the stages the shapes are a
 * stage's: weights [L/S, ...], micro-batches [B/M, M, ...] (the micro-batch i of the rows is
 * column i, as shs_microbatch_rewrite splits the batch), the saved activations
 * [M + S - 1, L/S, ...]. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "elem.h"
#include "io.h"
#include "pipeline_internal.h"

/* An array shape the text states: no layout, its dims its own. */
typedef struct pp_shape {
	int32_t type;
	uint32_t rank;
	int64_t dims[SHS_MAX_RANK + 2];
} pp_shape;

static pp_shape pp_of(const shs_shape *s)
{
	pp_shape r = { .type = s->type, .rank = s->rank <= SHS_MAX_RANK ? s->rank : 0 };

	for (uint32_t k = 0; k < r.rank; k++)
		r.dims[k] = s->dims[k];
	return r;
}

/* The shape of element k of loop l's state in module m. */
static pp_shape elem_shape(const shs_module *m, const pp_loop *l, uint32_t k)
{
	const shs_instr *w = m->comps[l->comp]->instrs[l->instr];

	return pp_of(&w->shape.tuple[k]);
}

/* type[pre..., s's dims from `from` on]. */
static void put_shape(shs_buf *b, int type, const int64_t *pre, uint32_t n_pre,
		      const pp_shape *s, uint32_t from)
{
	bool first = true;

	shs_buf_printf(b, "%s[", shs_elem_name(type));
	for (uint32_t k = 0; k < n_pre; k++, first = false)
		shs_buf_printf(b, "%s%" PRId64, first ? "" : ",", pre[k]);
	for (uint32_t k = from; s && k < s->rank; k++, first = false)
		shs_buf_printf(b, "%s%" PRId64, first ? "" : ",", s->dims[k]);
	shs_buf_putc(b, ']');
}

/* s as it is. */
static void put_same(shs_buf *b, const pp_shape *s)
{
	put_shape(b, s->type, NULL, 0, s, 0);
}

/* [a, b, s's dims from `from` on]. */
static void put_two(shs_buf *b, const pp_shape *s, int64_t a, int64_t c, uint32_t from)
{
	int64_t pre[2] = { a, c };

	put_shape(b, s->type, pre, 2, s, from);
}

/* Where a new value's dims take the plan's sharding from: dim d of the value is split as dim
 * map[d] of spec (-1: not split); spec NULL: nothing split but the stage dim. */
typedef struct pp_layout {
	const shs_pspec *spec;
	int8_t map[SHS_MAX_RANK + 2];
} pp_layout;

/* The layout of a value whose dims are `lead` new ones (not split) followed by the dims of the
 * plan's value from `from` on: dims from, from+1, ... of spec land after them. The first of the
 * plan's dims may also be placed at `first_at` (>= 0), e.g. a micro-batch's rows before the
 * micro-batch dim. */
static pp_layout layout(const shs_pspec *spec, uint32_t rank, uint32_t lead, int first_at,
			uint32_t from)
{
	pp_layout l = { .spec = spec };

	for (uint32_t d = 0; d < rank && d < SHS_MAX_RANK + 2; d++)
		l.map[d] = -1;
	for (uint32_t d = lead, k = from; d < rank && spec && k < spec->rank; d++, k++)
		l.map[d] = (int8_t)k;
	if (first_at >= 0 && spec && spec->rank)
		l.map[first_at] = 0;
	return l;
}

/* The plan's sharding of leaf `leaf` of entry instruction i of the module (NULL: none). */
static const shs_pspec *spec_of(const pp_ctx *x, uint32_t i, uint32_t leaf)
{
	const shs_decision *d;

	if (!x->r->plan)
		return NULL;
	d = &x->r->plan->d[x->m->entry][i];
	return d->set && leaf < d->n_leaves ? &d->leaves[leaf] : NULL;
}

/* The sharding of a value of rank `rank`: stage_dim split over the stage axis (-1: none, and
 * then, inside a region, the stage axis manual), its other dims as lay says (NULL: whole). */
static int put_sharding(shs_buf *b, const pp_ctx *x, uint32_t rank, int stage_dim,
			const pp_layout *lay, bool manual, shs_err *e)
{
	const shs_mesh *mesh = x->r->mesh;
	shs_named_sharding n = { .rank = rank };
	shs_sharding *s = NULL;
	shs_arena *a = shs_arena_new(0);
	int rc;

	if (!a)
		return shs_seterr(e, SHS_ENOMEM, "pipeline: out of memory");
	if (stage_dim >= 0)
		n.dim_axes[stage_dim][n.n_dim_axes[stage_dim]++] = (uint8_t)x->r->stage_axis;
	for (uint32_t d = 0; lay && lay->spec && d < rank; d++) {
		const shs_pdim *pd;
		if (lay->map[d] < 0 || (uint32_t)lay->map[d] >= lay->spec->rank)
			continue;
		pd = &lay->spec->dims[lay->map[d]];
		for (uint32_t k = 0; k < pd->n; k++)
			if (pd->axes[k] != x->r->stage_axis && n.n_dim_axes[d] < SHS_MESH_MAX_AXES)
				n.dim_axes[d][n.n_dim_axes[d]++] = pd->axes[k];
	}
	rc = manual ? shs_sharding_from_named_manual(a, mesh, &n, 1u << x->r->stage_axis, &s, e)
		    : shs_sharding_from_named(a, mesh, &n, &s, e);
	if (rc == SHS_OK)
		shs_sharding_print(b, s);
	shs_arena_free(a);
	return rc;
}

/* `%name = shape custom-call(%src), custom_call_target="target", sharding=...`. */
static int put_boundary(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
			const char *target, const pp_shape *s, int stage_dim,
			const pp_layout *lay, bool manual, shs_err *e)
{
	shs_buf_printf(b, "  %%%s = ", name);
	put_same(b, s);
	shs_buf_printf(b, " custom-call(%%%s), custom_call_target=\"%s\", sharding=", src, target);
	if (put_sharding(b, x, s->rank, stage_dim, lay, manual, e) != SHS_OK)
		return e->code;
	shs_buf_putc(b, '\n');
	return SHS_OK;
}

/* Sharding then SPMDFullToShardShape: a value of full shape `full` into the stages, its
 * local shape `local`; its dim stage_dim split over the stages (-1: the same on each). lay
 * maps the full shape's dims; the local shape's are the same dims. */
static int put_enter(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		     const pp_shape *full, const pp_shape *local, int stage_dim,
		     const pp_layout *lay, shs_err *e)
{
	char held[SHS_ERRMSG_MAX];

	snprintf(held, sizeof(held), "%s.h", name);
	if (put_boundary(b, x, held, src, "Sharding", full, stage_dim, lay, false, e) != SHS_OK)
		return e->code;
	return put_boundary(b, x, name, held, "SPMDFullToShardShape", local, -1, lay, true, e);
}

/* The source-target pairs of a send to the next stage (+1) or the one before (-1). */
static void put_pairs(shs_buf *b, const pp_ctx *x, int dir)
{
	bool first = true;

	shs_buf_puts(b, "source_target_pairs={");
	for (int64_t d = 0; d < x->devices; d++) {
		int64_t s = d / x->per_stage, to = d + dir * x->per_stage;
		if (s + dir < 0 || s + dir >= x->stages)
			continue;
		shs_buf_printf(b, "%s{%" PRId64 ",%" PRId64 "}", first ? "" : ",", d, to);
		first = false;
	}
	shs_buf_putc(b, '}');
}

/* The tuple shape of a loop's state: s32 counters, then the listed shapes (one per line of
 * text appended by put_state_elems). */
typedef struct pp_state {
	uint32_t n;
	pp_shape s[PP_MAX_STATE];
} pp_state;

static void state_add(pp_state *st, const pp_shape *s)
{
	if (st->n < PP_MAX_STATE)
		st->s[st->n++] = *s;
}

static void put_state(shs_buf *b, const pp_state *st)
{
	shs_buf_putc(b, '(');
	for (uint32_t k = 0; k < st->n; k++) {
		if (k)
			shs_buf_puts(b, ", ");
		put_same(b, &st->s[k]);
	}
	shs_buf_putc(b, ')');
}

static pp_shape scalar(int type)
{
	return (pp_shape){ .type = type, .rank = 0 };
}

static pp_shape dims0(const pp_shape *s, int64_t d0)
{
	pp_shape r = *s;

	r.dims[0] = d0;
	return r;
}

/* s with two leading dims a, c before its dims from `from` on. */
static pp_shape lead2(const pp_shape *s, int64_t a, int64_t c, uint32_t from)
{
	pp_shape r = { .type = s->type, .rank = 2 };

	r.dims[0] = a;
	r.dims[1] = c;
	for (uint32_t k = from; k < s->rank && r.rank < SHS_MAX_RANK; k++)
		r.dims[r.rank++] = s->dims[k];
	return r;
}

/* A get-tuple-element of the state parameter: `%pre.eK = shape get-tuple-element(%pre.p)`. */
static void put_gte(shs_buf *b, const char *pre, const pp_shape *s, uint32_t k)
{
	shs_buf_printf(b, "  %%%s.e%u = ", pre, k);
	put_same(b, s);
	shs_buf_printf(b, " get-tuple-element(%%%s.p), index=%u\n", pre, k);
}

/* The condition `trip < n` of a loop with state st. */
static void put_cond(shs_buf *b, const char *pre, const pp_state *st, int64_t n)
{
	shs_buf_printf(b, "%%%s.cond {\n  %%%s.c = ", pre, pre);
	put_state(b, st);
	shs_buf_printf(b, " parameter(0)\n  %%%s.ci = s32[] get-tuple-element(%%%s.c), index=0\n"
		       "  %%%s.cn = s32[] constant(%" PRId64 ")\n  ROOT %%%s.lt = pred[] "
		       "compare(%%%s.ci, %%%s.cn), direction=LT\n}\n\n",
		       pre, pre, pre, n, pre, pre, pre);
}

/* The stage this device runs: its partition id over the devices a stage holds. */
static void put_stage(shs_buf *b, const pp_ctx *x, const char *pre)
{
	shs_buf_printf(b, "  %%%s.pid = u32[] partition-id()\n  %%%s.pids = s32[] convert(%%%s.pid)\n"
		       "  %%%s.per = s32[] constant(%" PRId64 ")\n"
		       "  %%%s.stage = s32[] divide(%%%s.pids, %%%s.per)\n",
		       pre, pre, pre, pre, x->per_stage, pre, pre, pre);
}

/* The inner loop of one stage's layers: state (j, t, carry, then loop l's kept and written
 * stacks in order, as the stage holds them); the layer at the micro-batch's shapes (ml's). */
static void inner_state(const pp_ctx *x, const pp_loop *l, const pp_loop *ml, bool outer,
			pp_state *st)
{
	pp_shape s32 = scalar(SHS_S32);
	int64_t ls = l->trips / x->stages;

	st->n = 0;
	state_add(st, &s32);
	if (!outer)
		state_add(st, &s32);
	for (uint32_t k = 0; k < l->n; k++) {
		pp_shape ms = elem_shape(x->mb, ml, k), v;
		if (l->kind[k] == PP_CARRY) {
			v = ms;
		} else if (l->kind[k] == PP_COUNTER) {
			continue;
		} else if ((l == &x->fwd && l->kind[k] == PP_WRITTEN) ||
			   (l == &x->bwd && x->saved_of[k] != UINT32_MAX)) {
			v = lead2(&ms, x->trips, ls, 1); /* saved per trip */
		} else {
			v = dims0(&ms, ls); /* a weight, or a gradient */
		}
		state_add(st, &v);
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

/* The plan's sharding of leaf `leaf` of instruction i of computation c of the module (NULL:
 * none). */
static const shs_pspec *spec_in(const pp_ctx *x, uint32_t c, uint32_t i, uint32_t leaf)
{
	const shs_decision *d;

	if (!x->r->plan)
		return NULL;
	d = &x->r->plan->d[c][i];
	return d->set && leaf < d->n_leaves ? &d->leaves[leaf] : NULL;
}

/* `%name.p`: value `%name` of shape s pinned where the plan puts the module's value it stands
 * for (spec; without one, the same value unpinned), so that the stages run the layer as the
 * plan does. Failures go to *e (the first kept). */
static void put_pin(shs_buf *b, const pp_ctx *x, const char *pre, char tag, uint32_t q,
		    const pp_shape *s, const shs_pspec *spec, shs_err *e)
{
	pp_layout lay = layout(spec, s->rank, 0, -1, 0);
	shs_err why = { 0 };

	shs_buf_printf(b, "  %%%s.%c%u.p = ", pre, tag, q);
	put_same(b, s);
	if (!spec) {
		shs_buf_printf(b, " reshape(%%%s.%c%u)\n", pre, tag, q);
		return;
	}
	shs_buf_printf(b, " custom-call(%%%s.%c%u), custom_call_target=\"Sharding\", sharding=", pre,
		       tag, q);
	if (put_sharding(b, x, s->rank, -1, &lay, true, &why) != SHS_OK && e->code == SHS_OK)
		*e = why;
	shs_buf_putc(b, '\n');
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
	put_state(b, st);
	shs_buf_puts(b, " parameter(0)\n");
	for (uint32_t k = 0; k < st->n; k++)
		put_gte(b, pre, &st->s[k], k);
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
		const shs_pspec *spec = spec_in(x, l->body, call->operands[q], 0);
		if (l->kind[k] == PP_CARRY) {
			shs_buf_printf(b, "  %%%s.a%u = ", pre, q);
			put_same(b, &want);
			shs_buf_printf(b, " reshape(%%%s.e%u)\n", pre, at);
			put_pin(b, x, pre, 'a', q, &want, spec, e);
			continue;
		}
		bool per_trip = !saved_side && x->saved_of[k] != UINT32_MAX;
		const pp_shape *src = &st->s[at];
		uint32_t skip = per_trip ? 2 : 1;
		int64_t ones[2] = { 1, 1 };
		shs_buf_printf(b, "  %%%s.d%u = ", pre, q);
		put_shape(b, src->type, ones, skip, src, skip);
		shs_buf_printf(b, " dynamic-slice(%%%s.e%u, ", pre, at);
		if (per_trip)
			shs_buf_printf(b, "%%%s.e1, ", pre);
		shs_buf_printf(b, "%%%s.i", pre);
		for (uint32_t d = skip; d < src->rank; d++)
			shs_buf_printf(b, ", %%%s.z", pre);
		shs_buf_puts(b, "), dynamic_slice_sizes={");
		for (uint32_t d = 0; d < src->rank; d++)
			shs_buf_printf(b, "%s%" PRId64, d ? "," : "", d < skip ? 1 : src->dims[d]);
		shs_buf_printf(b, "}\n  %%%s.a%u = ", pre, q);
		put_same(b, &want);
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
		put_same(b, &r);
		shs_buf_printf(b, " get-tuple-element(%%%s.call), index=%d\n", pre, l->out[k]);
		put_pin(b, x, pre, 'r', k, &r, spec_in(x, l->body, l->call, (uint32_t)l->out[k]), e);
		if (l->kind[k] == PP_CARRY)
			continue;
		uint32_t skip = saved_side ? 2 : 1;
		int64_t ones[2] = { 1, 1 };
		shs_buf_printf(b, "  %%%s.u%u = ", pre, k);
		put_shape(b, dst->type, ones, skip, dst, skip);
		shs_buf_printf(b, " reshape(%%%s.r%u.p)\n", pre, k);
		if (!saved_side) { /* the gradient: added to the stage's sum */
			shs_buf_printf(b, "  %%%s.o%u = ", pre, k);
			put_shape(b, dst->type, ones, 1, dst, 1);
			shs_buf_printf(b, " dynamic-slice(%%%s.e%u, %%%s.i", pre, at, pre);
			for (uint32_t d = 1; d < dst->rank; d++)
				shs_buf_printf(b, ", %%%s.z", pre);
			shs_buf_puts(b, "), dynamic_slice_sizes={1");
			for (uint32_t d = 1; d < dst->rank; d++)
				shs_buf_printf(b, ",%" PRId64, dst->dims[d]);
			shs_buf_printf(b, "}\n  %%%s.s%u = ", pre, k);
			put_shape(b, dst->type, ones, 1, dst, 1);
			shs_buf_printf(b, " add(%%%s.o%u, %%%s.u%u)\n", pre, k, pre, k);
		}
		shs_buf_printf(b, "  %%%s.w%u = ", pre, k);
		put_same(b, dst);
		shs_buf_printf(b, " dynamic-update-slice(%%%s.e%u, %%%s.%c%u, ", pre, at, pre,
			       saved_side ? 'u' : 's', k);
		if (saved_side)
			shs_buf_printf(b, "%%%s.e1, ", pre);
		shs_buf_printf(b, "%%%s.i", pre);
		for (uint32_t d = skip; d < dst->rank; d++)
			shs_buf_printf(b, ", %%%s.z", pre);
		shs_buf_puts(b, ")\n");
	}
	shs_buf_printf(b, "  %%%s.j1 = s32[] add(%%%s.e0, %%%s.one)\n  ROOT %%%s.root = ", pre,
		       pre, pre, pre);
	put_state(b, st);
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
	pp_shape c = elem_shape(x->mb, ml, l->carry);
	pp_shape s32 = scalar(SHS_S32), io = lead2(&c, c.dims[0], x->r->microbatches, 1);

	st->n = 0;
	state_add(st, &s32);
	state_add(st, &io);
	state_add(st, &c);
	state_add(st, &io);
	for (uint32_t k = 2; k < in->n; k++)
		if (k != inner_at(l, l->carry))
			state_add(st, &in->s[k]);
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
	put_state(b, st);
	shs_buf_puts(b, " parameter(0)\n");
	for (uint32_t k = 0; k < st->n; k++)
		put_gte(b, pre, &st->s[k], k);
	shs_buf_printf(b, "  %%%s.z = s32[] constant(0)\n  %%%s.one = s32[] constant(1)\n"
		       "  %%%s.mlast = s32[] constant(%" PRId64 ")\n"
		       "  %%%s.slast = s32[] constant(%" PRId64 ")\n", pre, pre, pre, m - 1, pre,
		       x->stages - 1);
	if (fwd)
		shs_buf_printf(b, "  %%%s.t = s32[] add(%%%s.e0, %%%s.z)\n", pre, pre, pre);
	else
		shs_buf_printf(b, "  %%%s.tlast = s32[] constant(%" PRId64 ")\n  %%%s.t = s32[] "
			       "subtract(%%%s.tlast, %%%s.e0)\n", pre, x->trips - 1, pre, pre, pre);
	put_stage(b, x, pre);
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
	put_two(b, c, c->dims[0], 1, 1);
	shs_buf_printf(b, " dynamic-slice(%%%s.e1, %%%s.z, %%%s.mc", pre, pre, pre);
	for (uint32_t d = 2; d < io->rank; d++)
		shs_buf_printf(b, ", %%%s.z", pre);
	shs_buf_printf(b, "), dynamic_slice_sizes={%" PRId64 ",1", c->dims[0]);
	for (uint32_t d = 1; d < c->rank; d++)
		shs_buf_printf(b, ",%" PRId64, c->dims[d]);
	shs_buf_printf(b, "}\n  %%%s.xr = ", pre);
	put_same(b, c);
	shs_buf_printf(b, " reshape(%%%s.xs)\n", pre);
	if (!fwd) {
		shs_buf_printf(b, "  %%%s.ge = pred[] compare(%%%s.m, %%%s.z), direction=GE\n"
			       "  %%%s.le = pred[] compare(%%%s.m, %%%s.mlast), direction=LE\n"
			       "  %%%s.valid = pred[] and(%%%s.ge, %%%s.le)\n"
			       "  %%%s.zero = %s[] constant(0)\n  %%%s.zx = ", pre, pre, pre, pre,
			       pre, pre, pre, pre, pre, pre, shs_elem_name(c->type), pre);
		put_same(b, c);
		shs_buf_printf(b, " broadcast(%%%s.zero), dimensions={}\n  %%%s.vb = ", pre, pre);
		put_shape(b, SHS_PRED, NULL, 0, c, 0);
		shs_buf_printf(b, " broadcast(%%%s.valid), dimensions={}\n  %%%s.xv = ", pre, pre);
		put_same(b, c);
		shs_buf_printf(b, " select(%%%s.vb, %%%s.xr, %%%s.zx)\n", pre, pre, pre);
	}
	shs_buf_printf(b, "  %%%s.tb = ", pre);
	put_shape(b, SHS_PRED, NULL, 0, c, 0);
	shs_buf_printf(b, " broadcast(%%%s.takes), dimensions={}\n  %%%s.in = ", pre, pre);
	put_same(b, c);
	shs_buf_printf(b, " select(%%%s.tb, %%%s.%s, %%%s.e2)\n  %%%s.init = ", pre, pre,
		       fwd ? "xr" : "xv", pre, pre);
	put_state(b, ist);
	shs_buf_printf(b, " tuple(%%%s.z, %%%s.t", pre, pre);
	for (uint32_t k = 2, o = 4; k < ist->n; k++) {
		if (k == cat)
			shs_buf_printf(b, ", %%%s.in", pre);
		else
			shs_buf_printf(b, ", %%%s.e%u", pre, o++);
	}
	shs_buf_printf(b, ")\n  %%%s.loop = ", pre);
	put_state(b, ist);
	shs_buf_printf(b, " while(%%%s.init), condition=%%%s.cond, body=%%%s.body\n", pre, inner,
		       inner);
	shs_buf_printf(b, "  %%%s.out = ", pre);
	put_same(b, c);
	shs_buf_printf(b, " get-tuple-element(%%%s.loop), index=%u\n", pre, cat);
	for (uint32_t k = 2; k < ist->n; k++) {
		if (k == cat)
			continue;
		shs_buf_printf(b, "  %%%s.l%u = ", pre, k);
		put_same(b, &ist->s[k]);
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
	put_two(b, c, c->dims[0], 1, 1);
	shs_buf_printf(b, " reshape(%%%s.out)\n", pre);
	/* only the stage that holds the micro-batch out writes it: the others keep zeros, so
	 * that the sum over the stages after the loop is the output */
	shs_buf_printf(b, "  %%%s.keeps = pred[] compare(%%%s.stage, %%%s.%s), direction=EQ\n"
		       "  %%%s.kb = ", pre, pre, pre, fwd ? "slast" : "z", pre);
	put_shape(b, SHS_PRED, (const int64_t[]){ c->dims[0], 1 }, 2, c, 1);
	shs_buf_printf(b, " broadcast(%%%s.keeps), dimensions={}\n  %%%s.ozero = %s[] constant(0)\n"
		       "  %%%s.oz = ", pre, pre, shs_elem_name(c->type), pre);
	put_two(b, c, c->dims[0], 1, 1);
	shs_buf_printf(b, " broadcast(%%%s.ozero), dimensions={}\n  %%%s.om0 = ", pre, pre);
	put_two(b, c, c->dims[0], 1, 1);
	shs_buf_printf(b, " select(%%%s.kb, %%%s.or, %%%s.oz)\n  %%%s.o = ", pre, pre, pre, pre);
	put_same(b, io);
	shs_buf_printf(b, " dynamic-update-slice(%%%s.e3, %%%s.om0, %%%s.z, %%%s.omc", pre, pre,
		       pre, pre);
	for (uint32_t d = 2; d < io->rank; d++)
		shs_buf_printf(b, ", %%%s.z", pre);
	shs_buf_printf(b, ")\n  %%%s.send = ", pre);
	put_same(b, c);
	shs_buf_printf(b, " collective-permute(%%%s.out), channel_id=%d, ", pre, fwd ? 1 : 2);
	put_pairs(b, x, fwd ? 1 : -1);
	shs_buf_printf(b, "\n  %%%s.t1 = s32[] add(%%%s.e0, %%%s.one)\n  ROOT %%%s.root = ", pre,
		       pre, pre, pre);
	put_state(b, st);
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
static void put_pass(shs_buf *b, const pp_ctx *x, const pp_loop *l, const pp_loop *ml,
		     const char *outer, const char *inner, pp_state *ost, pp_state *ist,
		     shs_err *e)
{
	inner_state(x, l, ml, false, ist);
	outer_state(x, l, ml, ist, ost);
	put_cond(b, inner, ist, l->trips / x->stages);
	put_inner_body(b, x, l, ml, inner, ist, e);
	put_cond(b, outer, ost, x->trips);
	put_outer_body(b, x, l, outer, inner, ost, ist);
}

/* The entry as it is printed: the layer loops replaced by the pipeline's regions. */
typedef struct pp_entry {
	const pp_ctx *x;
	pp_state fo, fi, bo, bi;
	shs_err *e;
	int rc;
} pp_entry;

/* Index in the outer state of loop element k (neither the counter nor the carry). */
static uint32_t outer_at(const pp_loop *l, uint32_t k)
{
	return inner_at(l, k) + 2 - (l->carry < k ? 1 : 0);
}

static const shs_instr *entry_instr(const pp_ctx *x, uint32_t i)
{
	return x->m->comps[x->m->entry]->instrs[i];
}

/* Operand k of loop l's initial tuple, in the entry. */
static const shs_instr *init_of(const pp_ctx *x, const pp_loop *l, uint32_t k)
{
	const shs_instr *w = entry_instr(x, l->instr);

	return entry_instr(x, entry_instr(x, w->operands[0])->operands[k]);
}

/* `%name = shape broadcast(%name.zero)`: zeros of shape s. */
static void put_zeros(shs_buf *b, const char *name, const pp_shape *s)
{
	shs_buf_printf(b, "  %%%s.zero = %s[] constant(0)\n  %%%s = ", name,
		       shs_elem_name(s->type), name);
	put_same(b, s);
	shs_buf_printf(b, " broadcast(%%%s.zero), dimensions={}\n", name);
}

/* The groups of devices one stage apart (each its position in every stage). */
static void put_stage_groups(shs_buf *b, const pp_ctx *x)
{
	shs_buf_puts(b, "replica_groups={");
	for (int64_t r = 0; r < x->per_stage; r++) {
		shs_buf_printf(b, "%s{", r ? "," : "");
		for (int64_t s = 0; s < x->stages; s++)
			shs_buf_printf(b, "%s%" PRId64, s ? "," : "", s * x->per_stage + r);
		shs_buf_putc(b, '}');
	}
	shs_buf_putc(b, '}');
}

/* The micro-batches out of a region: io [B/M, M, ...], written by one stage and zeros on the
 * others, summed over the stages (an all-reduce with `channel`) and given out, as `%name` of
 * the whole batch's shape whole; spec the plan's sharding of the whole batch. */
static int put_exit_io(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		       const pp_shape *io, const pp_shape *whole, int channel,
		       const shs_pspec *spec, shs_err *e)
{
	char sum[SHS_ERRMSG_MAX], full[SHS_ERRMSG_MAX];
	pp_layout lay = layout(spec, io->rank, 2, 0, 1);

	snprintf(sum, sizeof(sum), "%s.sum", name);
	snprintf(full, sizeof(full), "%s.f", name);
	shs_buf_printf(b, "  %%%s = ", sum);
	put_same(b, io);
	shs_buf_printf(b, " all-reduce(%%%s), channel_id=%d, ", src, channel);
	put_stage_groups(b, x);
	shs_buf_printf(b, ", use_global_device_ids=true, to_apply=%%pp.add.%s\n",
		       shs_elem_name(io->type));
	if (put_boundary(b, x, full, sum, "SPMDShardToFullShape", io, -1, &lay, false, e) !=
	    SHS_OK)
		return e->code;
	shs_buf_printf(b, "  %%%s = ", name);
	put_same(b, whole);
	shs_buf_printf(b, " reshape(%%%s)\n", full);
	return SHS_OK;
}

/* Defines every get-tuple-element of loop l's while in the entry: element k's as a view of
 * what value[k] names (NULL: none may read it; the backward loop's saved stacks). */
static void put_results(shs_buf *b, const pp_ctx *x, const pp_loop *l, const char *const *value)
{
	const shs_computation *c = x->m->comps[x->m->entry];

	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *g = c->instrs[i];
		if (g->op != SHS_OP_GET_TUPLE_ELEMENT || g->n_operands != 1 ||
		    g->operands[0] != l->instr || g->tuple_index < 0 ||
		    (uint64_t)g->tuple_index >= l->n || !value[g->tuple_index])
			continue;
		shs_buf_printf(b, "  %%%s = ", g->name);
		shs_shape_print(b, &g->shape, false);
		shs_buf_printf(b, " reshape(%%%s)\n", value[g->tuple_index]);
	}
}

/* A micro-batch storage into a region: `%name` [B/M, M, ...] from entry instruction `at`
 * [B, ...], split as the plan splits that. */
static int put_io_in(shs_buf *b, const pp_ctx *x, const char *name, uint32_t at,
		     const pp_shape *io, shs_err *e)
{
	char whole[SHS_ERRMSG_MAX];
	pp_layout lay = layout(spec_of(x, at, 0), io->rank, 2, 0, 1);

	snprintf(whole, sizeof(whole), "%s.0", name);
	shs_buf_printf(b, "  %%%s = ", whole);
	put_same(b, io);
	shs_buf_printf(b, " reshape(%%%s)\n", entry_instr(x, at)->name);
	return put_enter(b, x, name, whole, io, io, -1, &lay, e);
}

/* A stacked weight into a region: `%name` [L/S, ...] of entry instruction `at`, split over the
 * stages. */
static int put_weight_in(shs_buf *b, const pp_ctx *x, const char *name, uint32_t at,
			 const pp_shape *local, shs_err *e)
{
	const shs_instr *w = entry_instr(x, at);
	pp_shape full = pp_of(&w->shape);
	pp_layout lay = layout(spec_of(x, at, 0), full.rank, 0, -1, 0);

	return put_enter(b, x, name, w->name, &full, local, 0, &lay, e);
}

/* The saved stacks between the regions: [S, M + S - 1, L/S, B/M, ...], split as the plan
 * splits the stack [L, B, ...] the forward loop's element k was. */
static pp_layout saved_layout(const pp_ctx *x, uint32_t k, uint32_t rank)
{
	return layout(spec_of(x, x->fwd.instr, k), rank, 2, -1, 0);
}

/* One pass's loop in the entry, `%pp.e.<pass>` with state st: from the micro-batches
 * `%pp.e.<in>`, zeros for the carry and the micro-batches out, and loop element k's value
 * `%pp.e.<kept or written><k>`; then the micro-batches out summed over the stages as
 * `%pp.e.<pass>.out` of the whole batch's shape whole. */
static int put_run(shs_buf *b, const pp_ctx *x, const pp_loop *l, const pp_state *st,
		   const char *pass, const char *outer, const char *in, char kept, char written,
		   const pp_shape *whole, shs_err *e)
{
	char name[SHS_ERRMSG_MAX], out[SHS_ERRMSG_MAX], res[SHS_ERRMSG_MAX];

	snprintf(name, sizeof(name), "pp.e.%s.c", pass);
	put_zeros(b, name, &st->s[2]);
	snprintf(name, sizeof(name), "pp.e.%s.o", pass);
	put_zeros(b, name, &st->s[1]);
	shs_buf_printf(b, "  %%pp.e.%s.t0 = s32[] constant(0)\n  %%pp.e.%s.init = ", pass, pass);
	put_state(b, st);
	shs_buf_printf(b, " tuple(%%pp.e.%s.t0, %%pp.e.%s, %%pp.e.%s.c, %%pp.e.%s.o", pass, in, pass,
		       pass);
	for (uint32_t k = 0; k < l->n; k++)
		if (l->kind[k] == PP_KEPT || l->kind[k] == PP_WRITTEN)
			shs_buf_printf(b, ", %%pp.e.%c%u", l->kind[k] == PP_KEPT ? kept : written, k);
	shs_buf_printf(b, ")\n  %%pp.e.%s = ", pass);
	put_state(b, st);
	shs_buf_printf(b, " while(%%pp.e.%s.init), condition=%%%s.cond, body=%%%s.body\n"
		       "  %%pp.e.%s.res = ", pass, outer, outer, pass);
	put_same(b, &st->s[1]);
	shs_buf_printf(b, " get-tuple-element(%%pp.e.%s), index=3\n", pass);
	snprintf(out, sizeof(out), "pp.e.%s.out", pass);
	snprintf(res, sizeof(res), "pp.e.%s.res", pass);
	return put_exit_io(b, x, out, res, &st->s[1], whole, pass[0] == 'f' ? 3 : 4,
			   spec_of(x, l->instr, l->carry), e);
}

/* The forward region: micro-batches and weights in, the loop, the output and the saved
 * activations out. */
static int put_forward(shs_buf *b, pp_entry *en)
{
	const pp_ctx *x = en->x;
	const pp_loop *l = &x->fwd;
	const shs_instr *in = init_of(x, l, l->carry);
	pp_shape xs = pp_of(&in->shape);
	const pp_shape *io = &en->fo.s[1];
	const char *value[PP_MAX_STATE] = { 0 };
	const shs_instr *w = entry_instr(x, l->instr);
	const shs_instr *finit = entry_instr(x, w->operands[0]);
	shs_err *e = en->e;

	if (put_io_in(b, x, "pp.e.x", finit->operands[l->carry], io, e) != SHS_OK)
		return e->code;
	for (uint32_t k = 0; k < l->n; k++) {
		char name[SHS_ERRMSG_MAX];
		snprintf(name, sizeof(name), "pp.e.w%u", k);
		if (l->kind[k] == PP_KEPT &&
		    put_weight_in(b, x, name, finit->operands[k], &en->fo.s[outer_at(l, k)], e) !=
			    SHS_OK)
			return e->code;
		if (l->kind[k] == PP_KEPT)
			value[k] = init_of(x, l, k)->name;
	}
	for (uint32_t k = 0; k < l->n; k++) {
		char name[SHS_ERRMSG_MAX];
		snprintf(name, sizeof(name), "pp.e.s%u", k);
		if (l->kind[k] == PP_WRITTEN)
			put_zeros(b, name, &en->fo.s[outer_at(l, k)]);
	}
	if (put_run(b, x, l, &en->fo, "fwd", "pp.fo", "x", 'w', 's', &xs, e) != SHS_OK)
		return e->code;
	value[l->carry] = "pp.e.fwd.out";
	for (uint32_t k = 0; k < l->n; k++) {
		pp_shape s = en->fo.s[outer_at(l, k)], one = s, full = s;
		char src[SHS_ERRMSG_MAX], name[SHS_ERRMSG_MAX];
		if (l->kind[k] != PP_WRITTEN)
			continue;
		one.rank = full.rank = s.rank + 1;
		one.dims[0] = 1;
		full.dims[0] = x->stages;
		memcpy(&one.dims[1], s.dims, s.rank * sizeof(*s.dims));
		memcpy(&full.dims[1], s.dims, s.rank * sizeof(*s.dims));
		shs_buf_printf(b, "  %%pp.e.s%u.o = ", k);
		put_same(b, &s);
		shs_buf_printf(b, " get-tuple-element(%%pp.e.fwd), index=%u\n  %%pp.e.s%u.r = ",
			       outer_at(l, k), k);
		put_same(b, &one);
		shs_buf_printf(b, " reshape(%%pp.e.s%u.o)\n", k);
		snprintf(name, sizeof(name), "pp.e.s%u.f", k);
		snprintf(src, sizeof(src), "pp.e.s%u.r", k);
		pp_layout lay = saved_layout(x, k, full.rank);
		if (put_boundary(b, x, name, src, "SPMDShardToFullShape", &full, 0, &lay, false,
				 e) != SHS_OK)
			return e->code;
	}
	put_results(b, x, l, value);
	return SHS_OK;
}

/* The backward region: the loss's gradient as micro-batches, the weights and the saved
 * activations in, the loop, the input's gradient and the weight gradients out. */
static int put_backward(shs_buf *b, pp_entry *en)
{
	const pp_ctx *x = en->x;
	const pp_loop *l = &x->bwd;
	const shs_instr *in = init_of(x, l, l->carry);
	pp_shape xs = pp_of(&in->shape);
	const pp_shape *io = &en->bo.s[1];
	char names[PP_MAX_STATE][SHS_ERRMSG_MAX];
	const char *value[PP_MAX_STATE] = { 0 };
	const shs_instr *w = entry_instr(x, l->instr);
	const shs_instr *binit = entry_instr(x, w->operands[0]);
	shs_err *e = en->e;

	if (put_io_in(b, x, "pp.e.dy", binit->operands[l->carry], io, e) != SHS_OK)
		return e->code;
	for (uint32_t k = 0; k < l->n; k++) {
		const pp_shape *s = &en->bo.s[outer_at(l, k)];
		char name[SHS_ERRMSG_MAX], src[SHS_ERRMSG_MAX];
		if (l->kind[k] == PP_WRITTEN) {
			snprintf(name, sizeof(name), "pp.e.g%u", k);
			put_zeros(b, name, s);
			continue;
		}
		if (l->kind[k] != PP_KEPT)
			continue;
		value[k] = init_of(x, l, k)->name;
		snprintf(name, sizeof(name), "pp.e.b%u", k);
		if (x->saved_of[k] == UINT32_MAX) {
			if (put_weight_in(b, x, name, binit->operands[k], s, e) != SHS_OK)
				return e->code;
			continue;
		}
		value[k] = NULL; /* the forward loop's stack: read here only */
		/* the saved activations as the forward region gave them out */
		pp_shape full = *s, local = *s;
		full.rank = local.rank = s->rank + 1;
		full.dims[0] = x->stages;
		local.dims[0] = 1;
		memcpy(&full.dims[1], s->dims, s->rank * sizeof(*s->dims));
		memcpy(&local.dims[1], s->dims, s->rank * sizeof(*s->dims));
		snprintf(src, sizeof(src), "pp.e.s%u.f", x->saved_of[k]);
		snprintf(names[k], sizeof(names[k]), "pp.e.b%u.m", k);
		pp_layout lay = saved_layout(x, x->saved_of[k], full.rank);
		if (put_enter(b, x, names[k], src, &full, &local, 0, &lay, e) != SHS_OK)
			return e->code;
		shs_buf_printf(b, "  %%%s = ", name);
		put_same(b, s);
		shs_buf_printf(b, " reshape(%%%s)\n", names[k]);
	}
	if (put_run(b, x, l, &en->bo, "bwd", "pp.bo", "dy", 'b', 'g', &xs, e) != SHS_OK)
		return e->code;
	value[l->carry] = "pp.e.bwd.out";
	for (uint32_t k = 0; k < l->n; k++) {
		const pp_shape *s = &en->bo.s[outer_at(l, k)];
		pp_shape whole = elem_shape(x->m, l, k);
		pp_layout lay = layout(spec_of(x, l->instr, k), whole.rank, 0, -1, 0);
		char src[SHS_ERRMSG_MAX];
		if (l->kind[k] != PP_WRITTEN)
			continue;
		shs_buf_printf(b, "  %%pp.e.g%u.o = ", k);
		put_same(b, s);
		shs_buf_printf(b, " get-tuple-element(%%pp.e.bwd), index=%u\n", outer_at(l, k));
		snprintf(names[k], sizeof(names[k]), "pp.e.g%u.f", k);
		snprintf(src, sizeof(src), "pp.e.g%u.o", k);
		if (put_boundary(b, x, names[k], src, "SPMDShardToFullShape", &whole, 0, &lay,
				 false, e) != SHS_OK)
			return e->code;
		value[k] = names[k];
	}
	put_results(b, x, l, value);
	return SHS_OK;
}

/* Whether entry instruction i is a stacked weight's shape: a parameter of the shape of a
 * weight the forward loop slices (the weights and their optimizer state), given split over the
 * stages. */
static bool stage_param(const pp_ctx *x, const shs_instr *in)
{
	if (in->op != SHS_OP_PARAMETER)
		return false;
	for (uint32_t k = 0; k < x->fwd.n; k++) {
		const shs_shape *w = &init_of(x, &x->fwd, k)->shape;
		if (x->fwd.kind[k] == PP_KEPT && in->shape.type != SHS_TUPLE &&
		    in->shape.rank == w->rank &&
		    !memcmp(in->shape.dims, w->dims, w->rank * sizeof(*w->dims)))
			return true;
	}
	return false;
}

/* Whether instruction i belongs to a layer loop: its initial tuple or a result of it. */
static bool of_loop(const pp_ctx *x, const pp_loop *l, uint32_t i)
{
	const shs_instr *in = entry_instr(x, i), *w = entry_instr(x, l->instr);

	return i == w->operands[0] ||
	       (in->op == SHS_OP_GET_TUPLE_ELEMENT && in->n_operands == 1 &&
		in->operands[0] == l->instr);
}

static bool replace(void *user, uint32_t i, shs_buf *b)
{
	pp_entry *en = user;
	const pp_ctx *x = en->x;
	const shs_instr *in = entry_instr(x, i);

	if (en->rc != SHS_OK)
		return true;
	if (i == x->fwd.instr)
		en->rc = put_forward(b, en);
	else if (i == x->bwd.instr)
		en->rc = put_backward(b, en);
	else if (of_loop(x, &x->fwd, i) || of_loop(x, &x->bwd, i))
		return true;
	else if (stage_param(x, in)) {
		shs_buf_printf(b, "  %%%s = ", in->name);
		shs_shape_print(b, &in->shape, false);
		shs_buf_printf(b, " parameter(%" PRId64 "), sharding=", in->parameter_number);
		pp_layout lay = layout(spec_of(x, i, 0), in->shape.rank, 0, -1, 0);
		en->rc = put_sharding(b, x, in->shape.rank, 0, &lay, false, en->e);
		shs_buf_putc(b, '\n');
	} else {
		return false;
	}
	return true;
}

/* Marks in want[] the computations of m that c calls, and c, callees first into order[]. */
static void reach(const shs_module *m, uint32_t c, bool *want, uint32_t *order, uint32_t *n,
		  const pp_ctx *x)
{
	const shs_computation *comp = m->comps[c];

	if (want[c])
		return;
	want[c] = true;
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		if (m == x->m && c == m->entry && (i == x->fwd.instr || i == x->bwd.instr))
			continue; /* the layer loops: replaced */
		for (uint32_t k = 0; k < in->n_called; k++)
			if (in->called[k] < m->n_comps)
				reach(m, in->called[k], want, order, n, x);
	}
	order[(*n)++] = c;
}

/* Whether a computation named name is among the first n of order in m. */
static bool printed(const shs_module *m, const uint32_t *order, uint32_t n, const char *name)
{
	for (uint32_t k = 0; k < n; k++)
		if (m->comps[order[k]]->name && name && !strcmp(m->comps[order[k]]->name, name))
			return true;
	return false;
}

/* The sum the exits' all-reduces apply, for elements of type `type`. */
static void put_adder(shs_buf *b, int type)
{
	const char *t = shs_elem_name(type);

	shs_buf_printf(b, "%%pp.add.%s {\n  %%pp.add.%s.a = %s[] parameter(0)\n  %%pp.add.%s.b = "
		       "%s[] parameter(1)\n  ROOT %%pp.add.%s.s = %s[] add(%%pp.add.%s.a, "
		       "%%pp.add.%s.b)\n}\n\n", t, t, t, t, t, t, t, t, t);
}

int pp_emit(const pp_ctx *x, shs_buf *b, shs_err *e)
{
	shs_text_style st = x->m->style;
	bool *want = calloc(x->m->n_comps + x->mb->n_comps + 2, sizeof(*want));
	uint32_t *order = calloc(x->m->n_comps + 1, sizeof(*order));
	uint32_t *morder = calloc(x->mb->n_comps + 1, sizeof(*morder));
	uint32_t n = 0, mn = 0;
	pp_entry en = { .x = x, .e = e };

	if (!want || !order || !morder) {
		free(want);
		free(order);
		free(morder);
		return shs_seterr(e, SHS_ENOMEM, "pipeline: out of memory");
	}
	st.percent = true;
	st.signatures = true;
	shs_text_print_header(b, x->m, &st);
	reach(x->m, x->m->entry, want, order, &n, x);
	memset(want, 0, (x->m->n_comps + x->mb->n_comps + 2) * sizeof(*want));
	reach(x->mb, x->mfwd.layer, want, morder, &mn, x);
	reach(x->mb, x->mbwd.layer, want, morder, &mn, x);
	for (uint32_t k = 0; k + 1 < n; k++) /* the entry last */
		shs_text_print_comp(b, x->m, order[k], &st, NULL, NULL);
	for (uint32_t k = 0; k < mn; k++)
		if (!printed(x->m, order, n - 1, x->mb->comps[morder[k]]->name))
			shs_text_print_comp(b, x->mb, morder[k], &st, NULL, NULL);
	put_adder(b, elem_shape(x->m, &x->fwd, x->fwd.carry).type);
	if (elem_shape(x->m, &x->bwd, x->bwd.carry).type !=
	    elem_shape(x->m, &x->fwd, x->fwd.carry).type)
		put_adder(b, elem_shape(x->m, &x->bwd, x->bwd.carry).type);
	put_pass(b, x, &x->fwd, &x->mfwd, "pp.fo", "pp.fi", &en.fo, &en.fi, e);
	put_pass(b, x, &x->bwd, &x->mbwd, "pp.bo", "pp.bi", &en.bo, &en.bi, e);
	shs_text_print_comp(b, x->m, x->m->entry, &st, replace, &en);
	free(want);
	free(order);
	free(morder);
	if (en.rc != SHS_OK)
		return en.rc;
	if (e->code != SHS_OK)
		return e->code;
	return b->oom ? shs_seterr(e, SHS_ENOMEM, "pipeline: out of memory") : SHS_OK;
}
