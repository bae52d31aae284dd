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

/* The entry as it is printed: the layer loops replaced by the pipeline's regions. */
typedef struct pp_entry {
	const pp_ctx *x;
	pp_state fo, fi, bo, bi;
	shs_err *e;
	int rc;
} pp_entry;

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

/* The micro-batches out of a region: io [B/M, M, ...], written by one stage and zeros on the
 * others, summed over the stages (an all-reduce with `channel`) and given out, as `%name` of
 * the whole batch's shape whole; spec the plan's sharding of the whole batch. */
static int put_exit_io(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		       const pp_shape *io, const pp_shape *whole, int channel,
		       const shs_pspec *spec, shs_err *e)
{
	char sum[SHS_ERRMSG_MAX], full[SHS_ERRMSG_MAX];
	pp_layout lay = pp_layout_of(spec, io->rank, 2, 0, 1);

	snprintf(sum, sizeof(sum), "%s.sum", name);
	snprintf(full, sizeof(full), "%s.f", name);
	shs_buf_printf(b, "  %%%s = ", sum);
	pp_put_same(b, io);
	shs_buf_printf(b, " all-reduce(%%%s), channel_id=%d, ", src, channel);
	pp_put_stage_groups(b, x);
	shs_buf_printf(b, ", use_global_device_ids=true, to_apply=%%pp.add.%s\n",
		       shs_elem_name(io->type));
	if (pp_put_boundary(b, x, full, sum, "SPMDShardToFullShape", io, -1, &lay, false, e) !=
	    SHS_OK)
		return e->code;
	shs_buf_printf(b, "  %%%s = ", name);
	pp_put_same(b, whole);
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
	pp_layout lay = pp_layout_of(pp_spec_of(x, at, 0), io->rank, 2, 0, 1);

	snprintf(whole, sizeof(whole), "%s.0", name);
	shs_buf_printf(b, "  %%%s = ", whole);
	pp_put_same(b, io);
	shs_buf_printf(b, " reshape(%%%s)\n", entry_instr(x, at)->name);
	return pp_put_enter(b, x, name, whole, io, io, -1, &lay, e);
}

/* A stacked weight into a region: `%name` [L/S, ...] of entry instruction `at`, split over the
 * stages. */
static int put_weight_in(shs_buf *b, const pp_ctx *x, const char *name, uint32_t at,
			 const pp_shape *local, shs_err *e)
{
	const shs_instr *w = entry_instr(x, at);
	pp_shape full = pp_of(&w->shape);
	pp_layout lay = pp_layout_of(pp_spec_of(x, at, 0), full.rank, 0, -1, 0);

	return pp_put_enter(b, x, name, w->name, &full, local, 0, &lay, e);
}

/* The saved stacks between the regions: [S, M + S - 1, L/S, B/M, ...], split as the plan
 * splits the stack [L, B, ...] the forward loop's element k was. */
static pp_layout saved_layout(const pp_ctx *x, uint32_t k, uint32_t rank)
{
	return pp_layout_of(pp_spec_of(x, x->fwd.instr, k), rank, 2, -1, 0);
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
	pp_put_zeros(b, name, &st->s[2]);
	snprintf(name, sizeof(name), "pp.e.%s.o", pass);
	pp_put_zeros(b, name, &st->s[1]);
	shs_buf_printf(b, "  %%pp.e.%s.t0 = s32[] constant(0)\n  %%pp.e.%s.init = ", pass, pass);
	pp_put_state(b, st);
	shs_buf_printf(b, " tuple(%%pp.e.%s.t0, %%pp.e.%s, %%pp.e.%s.c, %%pp.e.%s.o", pass, in,
		       pass, pass);
	for (uint32_t k = 0; k < l->n; k++)
		if (l->kind[k] == PP_KEPT || l->kind[k] == PP_WRITTEN)
			shs_buf_printf(b, ", %%pp.e.%c%u",
				       l->kind[k] == PP_KEPT ? kept : written, k);
	shs_buf_printf(b, ")\n  %%pp.e.%s = ", pass);
	pp_put_state(b, st);
	shs_buf_printf(b, " while(%%pp.e.%s.init), condition=%%%s.cond, body=%%%s.body\n"
		       "  %%pp.e.%s.res = ", pass, outer, outer, pass);
	pp_put_same(b, &st->s[1]);
	shs_buf_printf(b, " get-tuple-element(%%pp.e.%s), index=3\n", pass);
	snprintf(out, sizeof(out), "pp.e.%s.out", pass);
	snprintf(res, sizeof(res), "pp.e.%s.res", pass);
	return put_exit_io(b, x, out, res, &st->s[1], whole, pass[0] == 'f' ? 3 : 4,
			   pp_spec_of(x, l->instr, l->carry), e);
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
		const pp_shape *local = &en->fo.s[pp_outer_at(l, k)];
		if (l->kind[k] == PP_KEPT &&
		    put_weight_in(b, x, name, finit->operands[k], local, e) != SHS_OK)
			return e->code;
		if (l->kind[k] == PP_KEPT)
			value[k] = init_of(x, l, k)->name;
	}
	for (uint32_t k = 0; k < l->n; k++) {
		char name[SHS_ERRMSG_MAX];
		snprintf(name, sizeof(name), "pp.e.s%u", k);
		if (l->kind[k] == PP_WRITTEN)
			pp_put_zeros(b, name, &en->fo.s[pp_outer_at(l, k)]);
	}
	if (put_run(b, x, l, &en->fo, "fwd", "pp.fo", "x", 'w', 's', &xs, e) != SHS_OK)
		return e->code;
	value[l->carry] = "pp.e.fwd.out";
	for (uint32_t k = 0; k < l->n; k++) {
		pp_shape s = en->fo.s[pp_outer_at(l, k)], one = s, full = s;
		char src[SHS_ERRMSG_MAX], name[SHS_ERRMSG_MAX];
		if (l->kind[k] != PP_WRITTEN)
			continue;
		one.rank = full.rank = s.rank + 1;
		one.dims[0] = 1;
		full.dims[0] = x->stages;
		memcpy(&one.dims[1], s.dims, s.rank * sizeof(*s.dims));
		memcpy(&full.dims[1], s.dims, s.rank * sizeof(*s.dims));
		shs_buf_printf(b, "  %%pp.e.s%u.o = ", k);
		pp_put_same(b, &s);
		shs_buf_printf(b, " get-tuple-element(%%pp.e.fwd), index=%u\n  %%pp.e.s%u.r = ",
			       pp_outer_at(l, k), k);
		pp_put_same(b, &one);
		shs_buf_printf(b, " reshape(%%pp.e.s%u.o)\n", k);
		snprintf(name, sizeof(name), "pp.e.s%u.f", k);
		snprintf(src, sizeof(src), "pp.e.s%u.r", k);
		pp_layout lay = saved_layout(x, k, full.rank);
		if (pp_put_boundary(b, x, name, src, "SPMDShardToFullShape", &full, 0, &lay, false,
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
		const pp_shape *s = &en->bo.s[pp_outer_at(l, k)];
		char name[SHS_ERRMSG_MAX], src[SHS_ERRMSG_MAX];
		if (l->kind[k] == PP_WRITTEN) {
			snprintf(name, sizeof(name), "pp.e.g%u", k);
			pp_put_zeros(b, name, s);
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
		if (pp_put_enter(b, x, names[k], src, &full, &local, 0, &lay, e) != SHS_OK)
			return e->code;
		shs_buf_printf(b, "  %%%s = ", name);
		pp_put_same(b, s);
		shs_buf_printf(b, " reshape(%%%s)\n", names[k]);
	}
	if (put_run(b, x, l, &en->bo, "bwd", "pp.bo", "dy", 'b', 'g', &xs, e) != SHS_OK)
		return e->code;
	value[l->carry] = "pp.e.bwd.out";
	for (uint32_t k = 0; k < l->n; k++) {
		const pp_shape *s = &en->bo.s[pp_outer_at(l, k)];
		pp_shape whole = pp_elem_shape(x->m, l, k);
		pp_layout lay = pp_layout_of(pp_spec_of(x, l->instr, k), whole.rank, 0, -1, 0);
		char src[SHS_ERRMSG_MAX];
		if (l->kind[k] != PP_WRITTEN)
			continue;
		shs_buf_printf(b, "  %%pp.e.g%u.o = ", k);
		pp_put_same(b, s);
		shs_buf_printf(b, " get-tuple-element(%%pp.e.bwd), index=%u\n", pp_outer_at(l, k));
		snprintf(names[k], sizeof(names[k]), "pp.e.g%u.f", k);
		snprintf(src, sizeof(src), "pp.e.g%u.o", k);
		if (pp_put_boundary(b, x, names[k], src, "SPMDShardToFullShape", &whole, 0, &lay,
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
		pp_layout lay = pp_layout_of(pp_spec_of(x, i, 0), in->shape.rank, 0, -1, 0);
		en->rc = pp_put_sharding(b, x, in->shape.rank, 0, &lay, false, en->e);
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

/* A layer at the micro-batch's shapes as printed: each matmul's operands and result pinned
 * where the plan puts them for the module's matmul it stands for (what that matmul requires of
 * its operands, what it makes), so that every pass runs the layer as the plan does (the weights
 * it gathers, the gradients it reduces): the plan the schedule priced, not one a planner
 * would choose for the micro-batch's shapes. */
typedef struct pp_layer {
	const pp_ctx *x;
	uint32_t comp, mcomp; /* the module's layer, and mb's */
	const shs_text_style *st;
	shs_err *e;           /* the first failure */
} pp_layer;

static bool pin_matmul(void *user, uint32_t i, shs_buf *b)
{
	enum { OPS = 2 };
	pp_layer *ly = user;
	const pp_ctx *x = ly->x;
	const shs_computation *c = x->m->comps[ly->comp], *mc = x->mb->comps[ly->mcomp];
	const shs_instr *in = mc->instrs[i];
	char kept[SHS_ERRMSG_MAX], pinned[OPS][SHS_ERRMSG_MAX];
	const char *ops[OPS] = { NULL, NULL };

	if ((in->op != SHS_OP_DOT && in->op != SHS_OP_CONVOLUTION) || i == mc->root ||
	    c->n_instrs != mc->n_instrs || c->instrs[i]->op != in->op || !in->name ||
	    in->shape.n_tuple || in->n_operands != OPS || !x->r->plan)
		return false;
	const shs_decision *d = &x->r->plan->d[ly->comp][i];
	if (!d->set || !d->n_leaves || !d->req_first || d->n_req < OPS)
		return false;
	for (uint32_t k = 0; k < OPS; k++) {
		const shs_instr *op = mc->instrs[in->operands[k]];
		if (d->req_first[k] >= d->n_req || op->shape.n_tuple || !op->name)
			continue;
		snprintf(pinned[k], sizeof(pinned[k]), "%s.o%u", in->name, k);
		pp_shape os = pp_of(&op->shape);
		pp_put_pin(b, x, pinned[k], op->name, &os, &d->req[d->req_first[k]], ly->e);
		ops[k] = pinned[k];
	}
	snprintf(kept, sizeof(kept), "%s.u", in->name);
	shs_text_print_instr(b, x->mb, ly->mcomp, i, kept, ops, ly->st);
	pp_shape s = pp_of(&in->shape);
	pp_put_pin(b, x, in->name, kept, &s, &d->leaves[0], ly->e);
	return true;
}

/* Prints computation k of mb: a layer's with its matmuls pinned (pin_matmul). */
static void put_mb_comp(shs_buf *b, const pp_ctx *x, uint32_t k, const shs_text_style *st,
			shs_err *e)
{
	pp_layer ly = { x, 0, k, st, e };

	if (k == x->mfwd.layer)
		ly.comp = x->fwd.layer;
	else if (k == x->mbwd.layer)
		ly.comp = x->bwd.layer;
	else {
		shs_text_print_comp(b, x->mb, k, st, NULL, NULL);
		return;
	}
	shs_text_print_comp(b, x->mb, k, st, pin_matmul, &ly);
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
	shs_err pins = { 0 }; /* the loops' pins (a failure is kept, the writing goes on) */

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
			put_mb_comp(b, x, morder[k], &st, &pins);
	put_adder(b, pp_elem_shape(x->m, &x->fwd, x->fwd.carry).type);
	if (pp_elem_shape(x->m, &x->bwd, x->bwd.carry).type !=
	    pp_elem_shape(x->m, &x->fwd, x->fwd.carry).type)
		put_adder(b, pp_elem_shape(x->m, &x->bwd, x->bwd.carry).type);
	pp_put_pass(b, x, &x->fwd, &x->mfwd, "pp.fo", "pp.fi", &en.fo, &en.fi, &pins);
	pp_put_pass(b, x, &x->bwd, &x->mbwd, "pp.bo", "pp.bi", &en.bo, &en.bi, &pins);
	shs_text_print_comp(b, x->m, x->m->entry, &st, replace, &en);
	free(want);
	free(order);
	free(morder);
	if (en.rc != SHS_OK)
		return en.rc;
	if (pins.code != SHS_OK) {
		*e = pins;
		return pins.code;
	}
	return b->oom ? shs_seterr(e, SHS_ENOMEM, "pipeline: out of memory") : SHS_OK;
}
