/* What one instruction's result holds of the batch, from its operands': the batch dim followed
 * through each operation, sums over the batch kept only where they add up over micro-batches
 * (linear operations), values made at full size resized where they meet the batch. */
#include <stdio.h>
#include <string.h>

#include "microbatch_internal.h"

typedef struct step {
	mb_ctx *x;
	uint32_t inst;       /* x->inst[inst] is I */
	mb_inst *I;
	const shs_computation *c;
	const shs_instr *ins;
	uint32_t i;
	mb_leaf *res;
	bool *nonlinear;
} step;

static const mb_leaf *opnd(const step *s, uint32_t k)
{
	return s->I->leaf + s->I->first[s->ins->operands[k]];
}

static uint32_t rank_of(const step *s, uint32_t k)
{
	return s->c->instrs[s->ins->operands[k]]->shape.rank;
}

static int fail(const step *s, const char *why)
{
	return mb_fail(s->x, s->c, s->ins, why);
}

/* A sum over the batch used in a way that does not add up over micro-batches. */
static int nonlinear(const step *s)
{
	*s->nonlinear = true;
	return fail(s, "uses a sum over the batch in a way that does not add up over "
		       "micro-batches");
}

static uint64_t bit(int64_t d)
{
	return d >= 0 && d < 64 ? (uint64_t)1 << d : 0;
}

int8_t mb_operand_dim(const shs_computation *c, const shs_instr *oi, uint32_t k, int d)
{
	if (oi->op == SHS_OP_BROADCAST) {
		for (uint32_t j = 0; j < oi->dimensions.n; j++)
			if (oi->dimensions.v[j] == d)
				return (int8_t)j;
		return -1;
	}
	if (oi->op == SHS_OP_TRANSPOSE)
		return d < (int)oi->dimensions.n ? (int8_t)oi->dimensions.v[d] : -1;
	return c->instrs[oi->operands[k]]->shape.rank > 0 ? (int8_t)d : -1;
}

/* Whether a value made by ins can be made per micro-batch wherever it is made. */
static bool promotable(const shs_instr *ins)
{
	return ins->shape.type != SHS_TUPLE &&
	       (ins->op == SHS_OP_BROADCAST || ins->op == SHS_OP_IOTA ||
		ins->op == SHS_OP_TRANSPOSE || shs_opcode_is_elementwise(ins->op));
}

/* Value v (of the batch's size, the same in every micro-batch) takes the batch on dim d, and
 * so do the values of that size it is made from. */
static void promote(const step *s, uint32_t v, int d, uint32_t depth)
{
	const shs_instr *oi = s->c->instrs[v];

	if (depth > 64 || s->I->promo[v] >= 0 || !promotable(oi) ||
	    s->I->leaf[s->I->first[v]].kind != MB_NONE)
		return;
	s->I->promo[v] = (int8_t)d;
	s->I->again = true;
	for (uint32_t k = 0; k < oi->n_operands; k++) {
		int8_t sub = oi->op == SHS_OP_IOTA ? -1 : mb_operand_dim(s->c, oi, k, d);
		if (sub >= 0)
			promote(s, oi->operands[k], sub, depth + 1);
	}
}

/* Operand k (an array) taken with the batch on dim d: it holds it there, or is resized. */
static int take_batch(const step *s, uint32_t k, int d)
{
	const mb_leaf *o = opnd(s, k);

	if (o->kind == MB_BATCH)
		return o->dim == d ? SHS_OK : fail(s, "its operands carry the batch on different "
						      "dims");
	if (o->kind == MB_PARTIAL)
		return nonlinear(s);
	/* remade per micro-batch where it is a broadcast or an iota; in the entry, whatever it
	 * is, sliced to the micro-batch's rows in the loop */
	if ((o->free & bit(d)) && promotable(s->c->instrs[s->ins->operands[k]]))
		promote(s, s->ins->operands[k], d, 0);
	if (!(o->free & bit(d)) && s->I->comp != s->x->m->entry) {
		char why[SHS_ERRMSG_MAX / 2];
		const shs_instr *v = s->c->instrs[s->ins->operands[k]];
		snprintf(why, sizeof(why), "meets the batch with %s (%s), a value of the whole "
			 "batch's size that the rewrite cannot make per micro-batch",
			 v->name ? v->name : "?", shs_opcode_name(v->op));
		return fail(s, why);
	}
	return SHS_OK;
}

/* The operand-leaf slot of operand k (an array). */
static int8_t *need_of(const step *s, uint32_t k)
{
	uint32_t at = s->I->op_first[s->i];

	for (uint32_t j = 0; j < k; j++)
		at += s->I->first[s->ins->operands[j] + 1] - s->I->first[s->ins->operands[j]];
	return &s->I->need[at];
}

static int batch_operand(const step *s, uint32_t k, int d)
{
	int rc = take_batch(s, k, d);

	if (rc == SHS_OK && opnd(s, k)->kind == MB_NONE)
		*need_of(s, k) = (int8_t)d;
	return rc;
}

static bool is_zero_constant(const shs_instr *ins)
{
	const shs_literal *l = ins->literal;

	if (!l || l->elided || l->n_tuple || !l->data)
		return false;
	for (size_t b = 0; b < l->size; b++)
		if (l->data[b])
			return false;
	return true;
}

/* Elementwise: the batch where any operand has it; a sum only through + - x / neg, convert,
 * copy and select, with the other operands the same in every micro-batch. */
static int elementwise(const step *s)
{
	const shs_instr *ins = s->ins;
	int d = -1, rc;
	uint32_t partial = 0;
	bool zero = false;
	uint64_t free = ~(uint64_t)0;

	for (uint32_t k = 0; k < ins->n_operands; k++) {
		const mb_leaf *o = opnd(s, k);
		if (o->kind == MB_BATCH)
			d = o->dim;
		partial += o->kind == MB_PARTIAL;
	}
	if (d >= 0 && partial)
		return nonlinear(s);
	if (d >= 0) {
		for (uint32_t k = 0; k < ins->n_operands; k++)
			if (rank_of(s, k) > 0 && (rc = batch_operand(s, k, d)) != SHS_OK)
				return rc;
		s->res->kind = MB_BATCH;
		s->res->dim = (int8_t)d;
		return SHS_OK;
	}
	if (partial) {
		bool ok;
		switch (ins->op) {
		case SHS_OP_ADD:
		case SHS_OP_SUBTRACT:
			ok = true;
			for (uint32_t k = 0; k < ins->n_operands; k++)
				ok = ok && (opnd(s, k)->kind == MB_PARTIAL || opnd(s, k)->zero);
			break;
		case SHS_OP_NEGATE: case SHS_OP_CONVERT: case SHS_OP_COPY:
			ok = true;
			break;
		case SHS_OP_MULTIPLY:
			ok = partial == 1;
			break;
		case SHS_OP_DIVIDE:
			ok = opnd(s, 0)->kind == MB_PARTIAL && opnd(s, 1)->kind == MB_NONE;
			break;
		case SHS_OP_SELECT:
			ok = opnd(s, 0)->kind == MB_NONE;
			for (uint32_t k = 1; k < ins->n_operands; k++)
				ok = ok && (opnd(s, k)->kind == MB_PARTIAL || opnd(s, k)->zero);
			break;
		default:
			ok = false;
		}
		if (!ok)
			return nonlinear(s);
		s->res->kind = MB_PARTIAL;
		return SHS_OK;
	}
	for (uint32_t k = 0; k < ins->n_operands; k++) {
		const mb_leaf *o = opnd(s, k);
		if (rank_of(s, k) > 0)
			free &= o->free;
		zero |= ins->op == SHS_OP_MULTIPLY && o->zero;
	}
	if (ins->op == SHS_OP_CONVERT || ins->op == SHS_OP_COPY || ins->op == SHS_OP_NEGATE)
		zero = opnd(s, 0)->zero;
	s->res->zero = zero;
	s->res->free = ins->shape.rank ? free : 0;
	return SHS_OK;
}

static int broadcast(const step *s)
{
	const shs_instr *ins = s->ins;
	const mb_leaf *o = opnd(s, 0);

	if (ins->dimensions.n != rank_of(s, 0))
		return fail(s, "malformed broadcast");
	if (o->kind == MB_BATCH) {
		s->res->kind = MB_BATCH;
		s->res->dim = (int8_t)ins->dimensions.v[o->dim];
		return SHS_OK;
	}
	*s->res = *o;
	s->res->free = 0;
	for (uint32_t d = 0; d < ins->shape.rank; d++)
		s->res->free |= bit(d);
	for (uint32_t j = 0; j < ins->dimensions.n; j++)
		if (!(o->free & bit(j)))
			s->res->free &= ~bit(ins->dimensions.v[j]);
	return SHS_OK;
}

/* reshape and bitcast: the batch stays the major part of one dim. */
static int reshape(const step *s)
{
	const shs_shape *in = &s->c->instrs[s->ins->operands[0]]->shape, *out = &s->ins->shape;
	const mb_leaf *o = opnd(s, 0);
	int64_t before = 1, after = 1;

	if (o->kind != MB_BATCH) {
		*s->res = *o;
		s->res->free = 0;
		return SHS_OK;
	}
	for (int d = 0; d < o->dim; d++)
		before *= in->dims[d];
	for (uint32_t r = 0; r < out->rank; r++) {
		int64_t a = in->dims[o->dim], b = out->dims[r];
		if (after == before && b % s->x->mb == 0 && b > 0 && (b % a == 0 || a % b == 0)) {
			s->res->kind = MB_BATCH;
			s->res->dim = (int8_t)r;
			return SHS_OK;
		}
		after *= out->dims[r];
		if (after > before)
			break;
	}
	return fail(s, "reshapes the batch into something a micro-batch cannot hold");
}

static int transpose(const step *s)
{
	const mb_leaf *o = opnd(s, 0);

	*s->res = *o;
	s->res->free = 0;
	for (uint32_t r = 0; r < s->ins->dimensions.n; r++) {
		if (o->kind == MB_BATCH && s->ins->dimensions.v[r] == o->dim)
			s->res->dim = (int8_t)r;
		if (o->kind == MB_NONE && (o->free & bit(s->ins->dimensions.v[r])))
			s->res->free |= bit(r);
	}
	return SHS_OK;
}

static int64_t index_of(const shs_i64s *l, int64_t d)
{
	for (uint32_t j = 0; j < l->n; j++)
		if (l->v[j] == d)
			return j;
	return -1;
}

/* The position of dim d of an operand of rank n among its free dims (neither batch nor
 * contracting). */
static int64_t free_pos(int64_t d, uint32_t n, const shs_i64s *batch, const shs_i64s *contract)
{
	int64_t pos = 0;

	for (int64_t j = 0; j < d && j < (int64_t)n; j++)
		pos += index_of(batch, j) < 0 && index_of(contract, j) < 0;
	return pos;
}

static int dot(const step *s)
{
	const shs_dot_dims *dd = s->ins->dot;
	const mb_leaf *l = opnd(s, 0), *r = opnd(s, 1);
	uint32_t lr = rank_of(s, 0);
	int64_t j;
	int rc;

	if (!dd || s->ins->n_operands != 2)
		return fail(s, "malformed dot");
	if ((l->kind == MB_PARTIAL && r->kind != MB_NONE) ||
	    (r->kind == MB_PARTIAL && l->kind != MB_NONE))
		return nonlinear(s);
	if (l->kind == MB_PARTIAL || r->kind == MB_PARTIAL) {
		s->res->kind = MB_PARTIAL;
		return SHS_OK;
	}
	if (l->kind != MB_BATCH && r->kind != MB_BATCH)
		return SHS_OK;
	/* the batch on one side's batch dims (a batch of the result) or contracting dims (a
	 * sum) pairs with the other side's same dim */
	for (int contracting = 0; contracting < 2; contracting++)
		for (uint32_t side = 0; side < 2; side++) {
			const mb_leaf *me = side ? r : l;
			const shs_i64s *mine = contracting ? (side ? &dd->rhs_contracting :
								&dd->lhs_contracting) :
					       (side ? &dd->rhs_batch : &dd->lhs_batch);
			const shs_i64s *theirs = contracting ? (side ? &dd->lhs_contracting :
								  &dd->rhs_contracting) :
						 (side ? &dd->lhs_batch : &dd->rhs_batch);
			if (me->kind != MB_BATCH || (j = index_of(mine, me->dim)) < 0)
				continue;
			if ((rc = batch_operand(s, 1 - side, (int)theirs->v[j])) != SHS_OK)
				return rc;
			s->res->kind = contracting ? MB_PARTIAL : MB_BATCH;
			s->res->dim = contracting ? 0 : (int8_t)j;
			return SHS_OK;
		}
	if (l->kind == MB_BATCH && r->kind == MB_BATCH)
		return fail(s, "pairs every sequence with every other");
	s->res->kind = MB_BATCH;
	if (l->kind == MB_BATCH)
		s->res->dim = (int8_t)(dd->lhs_batch.n +
				       free_pos(l->dim, lr, &dd->lhs_batch, &dd->lhs_contracting));
	else
		s->res->dim = (int8_t)(dd->lhs_batch.n + lr - dd->lhs_batch.n -
				       dd->lhs_contracting.n +
				       free_pos(r->dim, rank_of(s, 1), &dd->rhs_batch,
						&dd->rhs_contracting));
	return SHS_OK;
}

static int reduce(const step *s)
{
	const shs_instr *ins = s->ins;
	uint32_t n = ins->n_operands / 2;
	bool sum = ins->n_called == 1 && mb_is_add_reducer(s->x->m, ins->called[0]);

	if (n == 0 || ins->n_operands != 2 * n)
		return fail(s, "malformed reduce");
	for (uint32_t k = 0; k < n; k++) {
		const mb_leaf *o = opnd(s, k);
		mb_leaf *r = &s->res[n > 1 ? k : 0];
		if (opnd(s, n + k)->kind != MB_NONE)
			return fail(s, "its initial value depends on the data");
		if (o->kind == MB_PARTIAL) {
			if (!sum || n > 1 || !opnd(s, n + k)->zero)
				return nonlinear(s);
			r->kind = MB_PARTIAL;
		} else if (o->kind == MB_BATCH && index_of(&ins->dimensions, o->dim) >= 0) {
			if (!sum || n > 1 || !opnd(s, n + k)->zero)
				return fail(s, "reduces over the batch other than by a sum (a value "
					       "that needs the whole batch at once)");
			r->kind = MB_PARTIAL;
		} else if (o->kind == MB_BATCH) {
			int64_t d = o->dim;
			for (uint32_t j = 0; j < ins->dimensions.n; j++)
				d -= ins->dimensions.v[j] < o->dim;
			r->kind = MB_BATCH;
			r->dim = (int8_t)d;
		}
	}
	return SHS_OK;
}

/* slice, dynamic-slice, pad: the batch dim taken whole. */
static int whole_dim(const step *s)
{
	const shs_instr *ins = s->ins;
	const mb_leaf *o = opnd(s, 0);
	const shs_shape *in = &s->c->instrs[ins->operands[0]]->shape;

	for (uint32_t k = 1; k < ins->n_operands; k++)
		if (opnd(s, k)->kind != MB_NONE && ins->op != SHS_OP_PAD)
			return fail(s, "its offsets depend on the data");
	if (ins->op == SHS_OP_PAD && opnd(s, 1)->kind != MB_NONE)
		return fail(s, "its padding value depends on the data");
	if (o->kind == MB_BATCH) {
		int d = o->dim;
		bool whole = ins->shape.rank == in->rank && ins->shape.dims[d] == in->dims[d];
		if (ins->op == SHS_OP_SLICE)
			whole = whole && ins->n_slice > (uint32_t)d && ins->slice[d].start == 0 &&
				ins->slice[d].stride == 1;
		if (ins->op == SHS_OP_PAD)
			whole = whole && ins->n_padding > (uint32_t)d && !ins->padding[d].low &&
				!ins->padding[d].high && !ins->padding[d].interior;
		if (!whole)
			return fail(s, "takes part of the batch");
	}
	if (o->kind == MB_PARTIAL && ins->op == SHS_OP_PAD && !opnd(s, 1)->zero)
		return nonlinear(s);
	*s->res = *o;
	s->res->free = 0;
	return SHS_OK;
}

static int update_slice(const step *s)
{
	const mb_leaf *o = opnd(s, 0), *u = opnd(s, 1);
	const shs_shape *os = &s->c->instrs[s->ins->operands[0]]->shape;
	const shs_shape *us = &s->c->instrs[s->ins->operands[1]]->shape;
	int rc;

	for (uint32_t k = 2; k < s->ins->n_operands; k++)
		if (opnd(s, k)->kind != MB_NONE)
			return fail(s, "its offsets depend on the data");
	if (o->kind == MB_BATCH || u->kind == MB_BATCH) {
		int d = o->kind == MB_BATCH ? o->dim : u->dim;
		if (us->rank != os->rank || us->dims[d] != os->dims[d])
			return fail(s, "writes part of the batch");
		if ((rc = batch_operand(s, 0, d)) != SHS_OK || (rc = batch_operand(s, 1, d)))
			return rc;
		s->res->kind = MB_BATCH;
		s->res->dim = (int8_t)d;
		return SHS_OK;
	}
	if (o->kind == MB_PARTIAL || u->kind == MB_PARTIAL) {
		if (!(o->kind == MB_PARTIAL || o->zero) || !(u->kind == MB_PARTIAL || u->zero))
			return nonlinear(s);
		s->res->kind = MB_PARTIAL;
		return SHS_OK;
	}
	s->res->zero = o->zero && u->zero;
	return SHS_OK;
}

static int concatenate(const step *s)
{
	int d = -1, rc;
	bool partial = false, zero = true;

	for (uint32_t k = 0; k < s->ins->n_operands; k++) {
		const mb_leaf *o = opnd(s, k);
		d = o->kind == MB_BATCH ? o->dim : d;
		partial |= o->kind == MB_PARTIAL;
		zero = zero && o->zero;
	}
	if (d >= 0) {
		if (s->ins->dimensions.n != 1 || s->ins->dimensions.v[0] == d)
			return fail(s, "joins batches");
		for (uint32_t k = 0; k < s->ins->n_operands; k++)
			if ((rc = batch_operand(s, k, d)) != SHS_OK)
				return rc;
		s->res->kind = MB_BATCH;
		s->res->dim = (int8_t)d;
		return SHS_OK;
	}
	if (partial) {
		for (uint32_t k = 0; k < s->ins->n_operands; k++)
			if (opnd(s, k)->kind != MB_PARTIAL && !opnd(s, k)->zero)
				return nonlinear(s);
		s->res->kind = MB_PARTIAL;
		return SHS_OK;
	}
	s->res->zero = zero;
	return SHS_OK;
}

/* gather: the batch of the indices becomes the result's; an operand of the batch is refused. */
static int gather(const step *s)
{
	const shs_gather_dims *g = s->ins->gather;
	const mb_leaf *o = opnd(s, 0), *ix = opnd(s, 1);
	int64_t pos = 0, r = 0;

	if (!g || s->ins->n_operands != 2)
		return fail(s, "malformed gather");
	if (o->kind == MB_BATCH)
		return fail(s, "gathers from the batch");
	if (ix->kind == MB_PARTIAL)
		return nonlinear(s);
	if (ix->kind != MB_BATCH) {
		s->res->kind = o->kind;
		return SHS_OK;
	}
	if (o->kind == MB_PARTIAL || ix->dim == g->index_vector_dim)
		return fail(s, "gathers by the batch in a way the rewrite does not know");
	for (int64_t d = 0; d < ix->dim; d++)
		pos += d != g->index_vector_dim;
	/* the result's dims that are not offset dims follow the indices' dims in order */
	for (r = 0; r < (int64_t)s->ins->shape.rank; r++) {
		if (index_of(&g->offset_dims, r) >= 0)
			continue;
		if (pos-- == 0)
			break;
	}
	s->res->kind = MB_BATCH;
	s->res->dim = (int8_t)r;
	return SHS_OK;
}

/* scatter-add of the batch's updates into zeros: a sum over the batch. */
static int scatter(const step *s)
{
	const shs_instr *ins = s->ins;
	const mb_leaf *o = opnd(s, 0), *ix = opnd(s, 1), *u = opnd(s, 2);
	bool sum = ins->n_called == 1 && mb_is_add_reducer(s->x->m, ins->called[0]);

	if (ins->n_operands != 3 || !ins->scatter)
		return fail(s, "malformed scatter (or more than one operand)");
	if (o->kind == MB_BATCH)
		return fail(s, "scatters into the batch");
	if (ix->kind == MB_NONE && u->kind == MB_NONE) {
		if (o->kind == MB_PARTIAL && !(sum && u->zero))
			return nonlinear(s);
		s->res->kind = o->kind;
		return SHS_OK;
	}
	if (ix->kind == MB_PARTIAL || !sum || !(o->kind == MB_PARTIAL || o->zero))
		return nonlinear(s);
	if (u->kind == MB_BATCH && index_of(&ins->scatter->update_window_dims, u->dim) >= 0)
		return fail(s, "scatters whole sequences");
	s->res->kind = MB_PARTIAL;
	return SHS_OK;
}

static bool passes_through(const shs_instr *ins)
{
	static const char *const targets[] = { "Sharding", "SPMDFullToShardShape",
					       "SPMDShardToFullShape", NULL };

	if (ins->op == SHS_OP_OPT_BARRIER)
		return true;
	if (ins->op != SHS_OP_CUSTOM_CALL || !ins->custom_call_target || ins->n_operands != 1)
		return false;
	for (const char *const *t = targets; *t; t++)
		if (!strcmp(ins->custom_call_target, *t))
			return true;
	return false;
}

/* Another custom call (a flash-attention kernel): the batch on dim 0 of its operands and of
 * the results that have that many rows. */
static int custom_call(const step *s)
{
	const shs_instr *ins = s->ins;
	const shs_shape *leaves[SHS_MAX_VALUE_LEAVES];
	uint32_t n = shs_shape_leaf_list(&ins->shape, leaves, SHS_MAX_VALUE_LEAVES);
	int64_t rows = -1;
	int rc;

	for (uint32_t k = 0; k < ins->n_operands; k++) {
		const mb_leaf *o = opnd(s, k);
		if (o->kind == MB_PARTIAL)
			return nonlinear(s);
		if (o->kind == MB_BATCH && o->dim != 0)
			return fail(s, "a custom call that takes the batch on a dim other than 0");
		if (o->kind == MB_BATCH)
			rows = s->c->instrs[ins->operands[k]]->shape.dims[0];
	}
	if (rows < 0)
		return SHS_OK;
	for (uint32_t k = 0; k < ins->n_operands; k++) {
		const shs_shape *a = &s->c->instrs[ins->operands[k]]->shape;
		if (a->type != SHS_TUPLE && a->rank > 0 && a->dims[0] == rows &&
		    (rc = batch_operand(s, k, 0)) != SHS_OK)
			return rc;
	}
	for (uint32_t l = 0; l < n; l++) {
		if (leaves[l]->rank > 0 && leaves[l]->dims[0] == rows) {
			s->res[l].kind = MB_BATCH;
			s->res[l].dim = 0;
		} else if (shs_shape_elements(leaves[l]) > 0) {
			return fail(s, "a custom call with a result the rewrite cannot split");
		}
	}
	return SHS_OK;
}

/* Whether operand k is scaled (its first leaf), or a zero (which any scale leaves zero). */
static bool scaled(const step *s, uint32_t k)
{
	return opnd(s, k)->scaled;
}

static bool zero(const step *s, uint32_t k)
{
	return opnd(s, k)->kind != MB_PARTIAL && opnd(s, k)->zero;
}

/* Work on values scaled by the deferred scale must be linear in them (the scale then factors
 * out of the sums the loop makes): a sum of scaled values or zeros, a product with one scaled
 * factor, a quotient with a scaled numerator, views and moves of them. */
static int linear_in_scale(const step *s)
{
	const shs_instr *ins = s->ins;
	uint32_t n = 0;
	bool ok = true;

	for (uint32_t k = 0; k < ins->n_operands; k++)
		n += scaled(s, k);
	if (!n)
		return SHS_OK;
	switch (ins->op) {
	case SHS_OP_ADD: case SHS_OP_SUBTRACT: case SHS_OP_CONCATENATE:
	case SHS_OP_SELECT: case SHS_OP_DYNAMIC_UPDATE_SLICE:
		/* every value operand scaled or zero; a select's predicate and an update's
		 * offsets not scaled */
		for (uint32_t k = 0; k < ins->n_operands; k++) {
			bool control = (ins->op == SHS_OP_SELECT && k == 0) ||
				       (ins->op == SHS_OP_DYNAMIC_UPDATE_SLICE && k >= 2);
			ok = ok && (control ? !scaled(s, k) : scaled(s, k) || zero(s, k));
		}
		break;
	case SHS_OP_MULTIPLY: case SHS_OP_DOT:
		ok = n == 1;
		break;
	case SHS_OP_DIVIDE:
		ok = scaled(s, 0) && !scaled(s, 1);
		break;
	case SHS_OP_NEGATE: case SHS_OP_CONVERT: case SHS_OP_COPY: case SHS_OP_BROADCAST:
	case SHS_OP_RESHAPE: case SHS_OP_BITCAST: case SHS_OP_TRANSPOSE: case SHS_OP_SLICE:
		break;
	case SHS_OP_DYNAMIC_SLICE: case SHS_OP_GATHER:
		ok = n == 1 && scaled(s, 0);
		break;
	case SHS_OP_PAD:
		ok = scaled(s, 0) && zero(s, 1);
		break;
	case SHS_OP_REDUCE:
		ok = ins->n_operands == 2 && ins->n_called == 1 && scaled(s, 0) && zero(s, 1) &&
		     mb_is_add_reducer(s->x->m, ins->called[0]);
		break;
	case SHS_OP_SCATTER:
		ok = ins->n_operands == 3 && !scaled(s, 1) && scaled(s, 2) &&
		     (scaled(s, 0) || zero(s, 0)) && ins->n_called == 1 &&
		     mb_is_add_reducer(s->x->m, ins->called[0]);
		break;
	default:
		ok = false;
	}
	return ok ? SHS_OK : nonlinear(s);
}

/* Instructions whose leaves are their operands' (or callees'): they carry the scale as is. */
static bool carries_leaves(const shs_instr *ins)
{
	return ins->op == SHS_OP_TUPLE || ins->op == SHS_OP_GET_TUPLE_ELEMENT ||
	       ins->op == SHS_OP_WHILE || ins->op == SHS_OP_CALL || ins->op == SHS_OP_FUSION ||
	       ins->op == SHS_OP_CONDITIONAL || passes_through(ins);
}

static int step_op(step *s);

int mb_step(mb_ctx *x, uint32_t inst, uint32_t i, bool *nl)
{
	mb_inst *I = x->inst[inst];
	const shs_computation *c = x->m->comps[I->comp];
	const shs_instr *ins = c->instrs[i];
	step s = { .x = x, .inst = inst, .I = I, .c = c, .ins = ins, .i = i,
		   .res = I->leaf + I->first[i], .nonlinear = nl };
	bool any = false;
	int rc = SHS_OK;

	for (uint32_t k = 0; k < ins->n_operands; k++)
		any |= I->leaf[I->first[ins->operands[k]]].scaled;
	if (any && !carries_leaves(ins))
		rc = linear_in_scale(&s);
	if (rc == SHS_OK)
		rc = step_op(&s);
	for (uint32_t l = I->first[i]; rc == SHS_OK && any && !carries_leaves(ins) &&
				       l < I->first[i + 1]; l++)
		I->leaf[l].scaled = true;
	return rc;
}

static int step_op(step *s)
{
	mb_ctx *x = s->x;
	mb_inst *I = s->I;
	const shs_computation *c = s->c;
	const shs_instr *ins = s->ins;
	uint32_t i = s->i;
	bool any = false;

	for (uint32_t k = 0; k < ins->n_operands; k++)
		for (uint32_t l = I->first[ins->operands[k]]; l < I->first[ins->operands[k] + 1]; l++)
			any |= I->leaf[l].kind != MB_NONE;
	switch (ins->op) {
	case SHS_OP_CONSTANT:
		s->res->zero = ins->shape.type != SHS_TUPLE && is_zero_constant(ins);
		return SHS_OK;
	case SHS_OP_IOTA:
		/* any dim: along its own, a micro-batch's iota counts its own rows (a dropout
		 * hash of positions then draws the same masks in every micro-batch, where JAX
		 * would fold the micro-batch's index into the key: the same cost) */
		for (uint32_t d = 0; d < ins->shape.rank; d++)
			s->res->free |= bit(d);
		return SHS_OK;
	case SHS_OP_BROADCAST: return broadcast(s);
	case SHS_OP_RESHAPE: case SHS_OP_BITCAST: return reshape(s);
	case SHS_OP_TRANSPOSE: return transpose(s);
	case SHS_OP_DOT: return dot(s);
	case SHS_OP_REDUCE: return reduce(s);
	case SHS_OP_SLICE: case SHS_OP_DYNAMIC_SLICE: case SHS_OP_PAD: return whole_dim(s);
	case SHS_OP_DYNAMIC_UPDATE_SLICE: return update_slice(s);
	case SHS_OP_CONCATENATE: return concatenate(s);
	case SHS_OP_GATHER: return gather(s);
	case SHS_OP_SCATTER: return scatter(s);
	case SHS_OP_TUPLE:
		for (uint32_t k = 0, at = 0; k < ins->n_operands; k++) {
			uint32_t o = ins->operands[k], n = I->first[o + 1] - I->first[o];
			memcpy(s->res + at, I->leaf + I->first[o], n * sizeof(*s->res));
			at += n;
		}
		return SHS_OK;
	case SHS_OP_GET_TUPLE_ELEMENT: {
		const shs_shape *t = &c->instrs[ins->operands[0]]->shape;
		uint32_t at = 0;
		if (ins->tuple_index < 0 || (uint64_t)ins->tuple_index >= t->n_tuple)
			return fail(s, "malformed get-tuple-element");
		for (int64_t k = 0; k < ins->tuple_index; k++)
			at += shs_shape_leaves(&t->tuple[k]);
		memcpy(s->res, I->leaf + I->first[ins->operands[0]] + at,
		       (I->first[i + 1] - I->first[i]) * sizeof(*s->res));
		return SHS_OK;
	}
	case SHS_OP_WHILE: case SHS_OP_CALL: case SHS_OP_FUSION: case SHS_OP_CONDITIONAL:
		return mb_calls(x, s->inst, i);
	default:
		break;
	}
	if (passes_through(ins)) {
		memcpy(s->res, I->leaf + I->first[ins->operands[0]],
		       (I->first[i + 1] - I->first[i]) * sizeof(*s->res));
		return SHS_OK;
	}
	if (shs_opcode_is_elementwise(ins->op) && ins->shape.type != SHS_TUPLE)
		return elementwise(s);
	if (ins->op == SHS_OP_CUSTOM_CALL)
		return custom_call(s);
	if (!any)
		return SHS_OK; /* the same in every micro-batch, whatever it is */
	return fail(s, "an operation the micro-batch rewrite does not know takes the data");
}
