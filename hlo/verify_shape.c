/* The verifier's shape rules: what each common opcode requires of its operands and result. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opcode.h"
#include "text_print.h"
#include "verify_internal.h"

/* Fixed positions and counts of XLA's instruction layouts. */
enum {
	WHILE_BODY = 0,        /* called[0] of a while */
	WHILE_COND = 1,        /* called[1] of a while */
	WHILE_N_CALLED = 2,
	PRED_BRANCHES = 2,     /* a conditional on a pred has exactly true and false branches */
	DOT_LHS = 0,
	DOT_RHS = 1,
	CLAMP_OPERAND = 1      /* clamp(min, operand, max): min and max may be scalars */
};

typedef shs__verifier verifier;

/* What one shape rule needs: the instruction, its computation and its operands' shapes. */
typedef shs__site site;
#define fail shs__site_fail /* the rules' short name for it */

/* The text of s in scratch slot k (layouts left out), for messages. */
static const char *shape_text(verifier *v, int k, const shs_shape *s)
{
	shs_buf_reset(&v->txt[k]);
	shs_shape_print(&v->txt[k], s, false);
	return v->txt[k].len && !v->txt[k].oom ? v->txt[k].data : "?";
}

/* "[2,3]" for d[0..n) in scratch slot k, for messages. */
static const char *dims_text(verifier *v, int k, const int64_t *d, uint32_t n)
{
	shs_buf *b = &v->txt[k];

	shs_buf_reset(b);
	shs_buf_putc(b, '[');
	shs__put_i64_csv(b, d, n);
	shs_buf_putc(b, ']');
	return b->oom ? "?" : b->data;
}

static bool is_array(const shs_shape *s)
{
	return shs_elem_is_array(s->type);
}

static bool is_scalar(const shs_shape *s)
{
	return is_array(s) && s->rank == 0;
}

static bool same_dims(const shs_shape *x, const shs_shape *y)
{
	return x->rank == y->rank &&
	       (!x->rank || !memcmp(x->dims, y->dims, x->rank * sizeof(*x->dims)));
}

static bool has_dynamic_dim(const shs_shape *s)
{
	for (uint32_t d = 0; s->dynamic && d < s->rank; d++)
		if (s->dynamic[d])
			return true;
	return false;
}

static const shs_shape *operand_shape(const site *s, uint32_t k)
{
	return &s->c->instrs[s->i->operands[k]]->shape;
}

static const char *operand_name(const site *s, uint32_t k)
{
	return s->c->instrs[s->i->operands[k]]->name;
}

static int want_operands(const site *s, uint32_t n)
{
	if (s->i->n_operands != n)
		return fail(s, "has %" PRIu32 " operands, want %" PRIu32, s->i->n_operands, n);
	return SHS_OK;
}

static int want_array_operand(const site *s, uint32_t k)
{
	if (!is_array(operand_shape(s, k)))
		return fail(s, "operand %" PRIu32 " ('%s') is %s, not an array", k,
			    operand_name(s, k), shape_text(s->v, 0, operand_shape(s, k)));
	return SHS_OK;
}

static int want_array_result(const site *s)
{
	if (!is_array(&s->i->shape))
		return fail(s, "result is %s, not an array", shape_text(s->v, 0, &s->i->shape));
	return SHS_OK;
}

/* One array operand, *o, and an array result. */
static int want_unary_array(const site *s, const shs_shape **o)
{
	int rc;

	if ((rc = want_operands(s, 1)) || (rc = want_array_operand(s, 0)) ||
	    (rc = want_array_result(s)))
		return rc;
	*o = operand_shape(s, 0);
	return SHS_OK;
}

/* Dim da of a and dim db of b (named an and bn in the message) have the same size. */
static int want_same_size(const site *s, const char *an, const shs_shape *a, int64_t da,
			  const char *bn, const shs_shape *b, int64_t db)
{
	if (a->dims[da] != b->dims[db])
		return fail(s, "%s dim %" PRId64 " has size %" PRId64 " but %s dim %" PRId64
			    " has size %" PRId64, an, da, a->dims[da], bn, db, b->dims[db]);
	return SHS_OK;
}

/* bitcast-convert between widths adds (narrowing) or drops (widening) a minor dim. */
static bool bitcast_dims_ok(const shs_shape *in, const shs_shape *out)
{
	int in_bits = shs_elem_bits(in->type), out_bits = shs_elem_bits(out->type);
	const shs_shape *wide = in_bits > out_bits ? in : out;
	const shs_shape *narrow = in_bits > out_bits ? out : in;
	int ratio = in_bits > out_bits ? in_bits / out_bits : out_bits / in_bits;

	if (in_bits == out_bits)
		return same_dims(in, out);
	if (narrow->rank != wide->rank + 1 || narrow->dims[wide->rank] != ratio)
		return false;
	return !wide->rank || !memcmp(wide->dims, narrow->dims, wide->rank * sizeof(*wide->dims));
}

/* copy: the operand's shape, which may be a tuple. */
static int check_copy(const site *s)
{
	int rc = want_operands(s, 1);

	if (rc == SHS_OK && !shs_shape_compatible(operand_shape(s, 0), &s->i->shape))
		rc = fail(s, "operand '%s' is %s but the result is %s", operand_name(s, 0),
			  shape_text(s->v, 0, operand_shape(s, 0)),
			  shape_text(s->v, 1, &s->i->shape));
	return rc;
}

/* Element-wise ops: every operand has the result's dims (no implicit scalar broadcast, except
 * clamp's bounds); compare gives pred and select takes a pred. */
static int check_elementwise(const site *s)
{
	const shs_shape *r = &s->i->shape;
	int rc;

	if (s->i->op == SHS_OP_COPY)
		return check_copy(s);
	rc = want_array_result(s);
	if (rc != SHS_OK)
		return rc;
	if (!s->i->n_operands)
		return fail(s, "has no operands");
	for (uint32_t k = 0; k < s->i->n_operands; k++) {
		const shs_shape *o = operand_shape(s, k);
		bool ok;

		rc = want_array_operand(s, k);
		if (rc != SHS_OK)
			return rc;
		if (s->i->op == SHS_OP_CLAMP && k != CLAMP_OPERAND && o->rank == 0)
			continue;
		ok = s->i->op == SHS_OP_BITCAST_CONVERT ? bitcast_dims_ok(o, r) : same_dims(o, r);
		if (!ok)
			return fail(s, "operand %" PRIu32
				    " ('%s') has dims %s but the result has dims %s", k,
				    operand_name(s, k), dims_text(s->v, 0, o->dims, o->rank),
				    dims_text(s->v, 1, r->dims, r->rank));
	}
	if (s->i->op == SHS_OP_COMPARE && r->type != SHS_PRED)
		return fail(s, "compare gives %s, not pred", shs_elem_name(r->type));
	if (s->i->op == SHS_OP_SELECT && operand_shape(s, 0)->type != SHS_PRED)
		return fail(s, "select's operand 0 ('%s') is %s, not pred", operand_name(s, 0),
			    shs_elem_name(operand_shape(s, 0)->type));
	return SHS_OK;
}

/* Dims of one dot side: in range of rank and listed once across contracting and batch. */
static int check_dot_side(const site *s, const char *side, const shs_shape *o,
			  const shs_i64s *contracting, const shs_i64s *batch, bool *used)
{
	const shs_i64s *lists[2] = { contracting, batch };
	const char *kinds[2] = { "contracting", "batch" };

	memset(used, 0, o->rank * sizeof(*used));
	for (int l = 0; l < 2; l++) {
		for (uint32_t k = 0; k < lists[l]->n; k++) {
			int64_t d = lists[l]->v[k];

			if (d < 0 || d >= (int64_t)o->rank)
				return fail(s, "%s %s dim %" PRId64 " is out of range (rank %"
					    PRIu32 ")", side, kinds[l], d, o->rank);
			if (used[d])
				return fail(s, "%s dim %" PRId64 " is listed twice", side, d);
			used[d] = true;
		}
	}
	return SHS_OK;
}

/* Sizes of paired dims agree: lhs list[k] with rhs list[k]. */
static int check_dot_pairs(const site *s, const char *kind, const shs_shape *l, const shs_shape *r,
			   const shs_i64s *ld, const shs_i64s *rd)
{
	if (ld->n != rd->n)
		return fail(s, "lhs has %" PRIu32 " %s dims but rhs has %" PRIu32, ld->n, kind,
			    rd->n);
	for (uint32_t k = 0; k < ld->n; k++)
		if (l->dims[ld->v[k]] != r->dims[rd->v[k]])
			return fail(s, "lhs %s dim %" PRId64 " has size %" PRId64
				    " but rhs %s dim %" PRId64 " has size %" PRId64, kind, ld->v[k],
				    l->dims[ld->v[k]], kind, rd->v[k], r->dims[rd->v[k]]);
	return SHS_OK;
}

/* dot: dims in range and distinct, paired sizes agree, and the result is batch dims, lhs free
 * dims, rhs free dims in that order. The element type may differ from the operands'. */
static int check_dot(const site *s)
{
	static const shs_dot_dims none;
	const shs_dot_dims *dd = s->i->dot ? s->i->dot : &none;
	const shs_shape *l, *r, *res = &s->i->shape;
	bool lused[SHS_MAX_RANK], rused[SHS_MAX_RANK];
	int64_t want[2 * SHS_MAX_RANK];
	uint32_t n = 0;
	int rc;

	if (s->i->n_operands < 2)
		return fail(s, "has %" PRIu32 " operands, want 2", s->i->n_operands);
	if ((rc = want_array_operand(s, DOT_LHS)) || (rc = want_array_operand(s, DOT_RHS)) ||
	    (rc = want_array_result(s)))
		return rc;
	l = operand_shape(s, DOT_LHS);
	r = operand_shape(s, DOT_RHS);
	if ((rc = check_dot_side(s, "lhs", l, &dd->lhs_contracting, &dd->lhs_batch, lused)) ||
	    (rc = check_dot_side(s, "rhs", r, &dd->rhs_contracting, &dd->rhs_batch, rused)) ||
	    (rc = check_dot_pairs(s, "batch", l, r, &dd->lhs_batch, &dd->rhs_batch)) ||
	    (rc = check_dot_pairs(s, "contracting", l, r, &dd->lhs_contracting,
				  &dd->rhs_contracting)))
		return rc;
	for (uint32_t k = 0; k < dd->lhs_batch.n; k++)
		want[n++] = l->dims[dd->lhs_batch.v[k]];
	for (uint32_t d = 0; d < l->rank; d++)
		if (!lused[d])
			want[n++] = l->dims[d];
	for (uint32_t d = 0; d < r->rank; d++)
		if (!rused[d])
			want[n++] = r->dims[d];
	if (res->rank != n || (n && memcmp(res->dims, want, n * sizeof(*want))))
		return fail(s, "result has dims %s but batch, lhs free and rhs free dims give %s",
			    dims_text(s->v, 0, res->dims, res->rank), dims_text(s->v, 1, want, n));
	return SHS_OK;
}

/* broadcast: dimensions[k] is the result dim of operand dim k, increasing, same size. */
static int check_broadcast(const site *s)
{
	const shs_shape *o, *r = &s->i->shape;
	const shs_i64s *dims = &s->i->dimensions;
	int rc;

	if ((rc = want_unary_array(s, &o)))
		return rc;
	if (dims->n != o->rank)
		return fail(s, "dimensions has %" PRIu32 " entries but the operand has rank %"
			    PRIu32, dims->n, o->rank);
	for (uint32_t k = 0; k < dims->n; k++) {
		int64_t d = dims->v[k];

		if (d < 0 || d >= (int64_t)r->rank)
			return fail(s, "dimensions[%" PRIu32 "] = %" PRId64
				    " is out of range (result rank %" PRIu32 ")", k, d, r->rank);
		if (k && d <= dims->v[k - 1])
			return fail(s, "dimensions are not increasing: %s",
				    dims_text(s->v, 0, dims->v, dims->n));
		if ((rc = want_same_size(s, "operand", o, k, "result", r, d)))
			return rc;
	}
	return SHS_OK;
}

/* transpose: dimensions is a permutation and result dim k is operand dim dimensions[k]. */
static int check_transpose(const site *s)
{
	const shs_shape *o, *r = &s->i->shape;
	const shs_i64s *perm = &s->i->dimensions;
	bool seen[SHS_MAX_RANK] = { false };
	int rc;

	if ((rc = want_unary_array(s, &o)))
		return rc;
	if (perm->n != o->rank || r->rank != o->rank)
		return fail(s, "operand rank %" PRIu32 ", result rank %" PRIu32 " and %" PRIu32
			    " dimensions differ", o->rank, r->rank, perm->n);
	for (uint32_t k = 0; k < perm->n; k++) {
		int64_t d = perm->v[k];

		if (d < 0 || d >= (int64_t)o->rank || seen[d])
			return fail(s, "dimensions %s are not a permutation",
				    dims_text(s->v, 0, perm->v, perm->n));
		seen[d] = true;
	}
	for (uint32_t k = 0; k < perm->n; k++)
		if ((rc = want_same_size(s, "result", r, k, "operand", o, perm->v[k])))
			return rc;
	return SHS_OK;
}

/* reshape: same element count, unless a dim is dynamic (its size is only a bound). */
static int check_reshape(const site *s)
{
	const shs_shape *o, *r = &s->i->shape;
	int rc;

	if ((rc = want_unary_array(s, &o)))
		return rc;
	if (has_dynamic_dim(o) || has_dynamic_dim(r))
		return SHS_OK;
	if (shs_shape_elements(o) != shs_shape_elements(r))
		return fail(s, "operand %s has %" PRId64 " elements but the result %s has %" PRId64,
			    dims_text(s->v, 0, o->dims, o->rank), shs_shape_elements(o),
			    dims_text(s->v, 1, r->dims, r->rank), shs_shape_elements(r));
	return SHS_OK;
}

/* The reduce's to_apply takes 2N scalars and returns N of them (a tuple when N > 1). */
static int check_reducer(const site *s, uint32_t n_in)
{
	const shs_module *m = s->v->m;
	uint32_t callee, n_params;
	const shs_computation *f;
	const shs_shape *root;

	if (s->i->n_called != 1)
		return fail(s, "has %" PRIu32 " to_apply computations, want 1", s->i->n_called);
	callee = s->i->called[0];
	f = m->comps[callee];
	n_params = s->v->n_params[callee];
	if (n_params != 2 * n_in)
		return fail(s, "to_apply '%s' takes %" PRIu32 " parameters, want %" PRIu32, f->name,
			    n_params, 2 * n_in);
	for (uint32_t k = 0; k < n_params; k++)
		if (!is_scalar(&s->v->params[callee][k]->shape))
			return fail(s, "to_apply '%s' parameter %" PRIu32 " is %s, not a scalar",
				    f->name, k,
				    shape_text(s->v, 0, &s->v->params[callee][k]->shape));
	root = &f->instrs[f->root]->shape;
	if (n_in == 1 ? !is_scalar(root) : root->type != SHS_TUPLE || root->n_tuple != n_in)
		return fail(s, "to_apply '%s' returns %s, want %" PRIu32 " scalar(s)", f->name,
			    shape_text(s->v, 0, root), n_in);
	for (uint32_t k = 0; n_in > 1 && k < n_in; k++)
		if (!is_scalar(&root->tuple[k]))
			return fail(s, "to_apply '%s' returns %s, want %" PRIu32 " scalars",
				    f->name, shape_text(s->v, 0, root), n_in);
	return SHS_OK;
}

/* One result array of a reduce: the input dims without the reduced ones. */
static int check_reduce_result(const site *s, const shs_shape *got, const int64_t *want,
			       uint32_t n)
{
	if (!is_array(got) || got->rank != n ||
	    (n && memcmp(got->dims, want, n * sizeof(*want))))
		return fail(s, "result %s should have dims %s (the input without the reduced dims)",
			    shape_text(s->v, 0, got), dims_text(s->v, 1, want, n));
	return SHS_OK;
}

/* reduce(in_1..in_N, init_1..init_N): inputs of one shape, scalar inits, reduced dims in range
 * and distinct, result the input without them (a tuple of N when N > 1). */
static int check_reduce(const site *s)
{
	const shs_i64s *dims = &s->i->dimensions;
	uint32_t n_in = s->i->n_operands / 2, n = 0;
	bool reduced[SHS_MAX_RANK] = { false };
	int64_t want[SHS_MAX_RANK];
	const shs_shape *in;
	int rc;

	if (!n_in || s->i->n_operands % 2)
		return fail(s, "has %" PRIu32 " operands, want N inputs and N init values",
			    s->i->n_operands);
	for (uint32_t k = 0; k < s->i->n_operands; k++) {
		const shs_shape *o = operand_shape(s, k);

		if ((rc = want_array_operand(s, k)))
			return rc;
		if (k < n_in && !same_dims(o, operand_shape(s, 0)))
			return fail(s, "input %" PRIu32 " ('%s') has dims %s "
				    "but input 0 has %s", k, operand_name(s, k),
				    dims_text(s->v, 0, o->dims, o->rank),
				    dims_text(s->v, 1, operand_shape(s, 0)->dims,
					      operand_shape(s, 0)->rank));
		if (k >= n_in && o->rank)
			return fail(s, "init value %" PRIu32 " ('%s') is %s, not a scalar", k -
				    n_in, operand_name(s, k), shape_text(s->v, 0, o));
	}
	in = operand_shape(s, 0);
	for (uint32_t k = 0; k < dims->n; k++) {
		int64_t d = dims->v[k];

		if (d < 0 || d >= (int64_t)in->rank || reduced[d])
			return fail(s, "dimensions %s are not distinct dims of rank %" PRIu32,
				    dims_text(s->v, 0, dims->v, dims->n), in->rank);
		reduced[d] = true;
	}
	for (uint32_t d = 0; d < in->rank; d++)
		if (!reduced[d])
			want[n++] = in->dims[d];
	if (n_in == 1)
		rc = check_reduce_result(s, &s->i->shape, want, n);
	else if (s->i->shape.type != SHS_TUPLE || s->i->shape.n_tuple != n_in)
		rc = fail(s, "result %s should be a tuple of %" PRIu32 " arrays",
			  shape_text(s->v, 0, &s->i->shape), n_in);
	for (uint32_t k = 0; rc == SHS_OK && n_in > 1 && k < n_in; k++)
		rc = check_reduce_result(s, &s->i->shape.tuple[k], want, n);
	return rc == SHS_OK ? check_reducer(s, n_in) : rc;
}

/* tuple: result element k is operand k's shape. */
static int check_tuple(const site *s)
{
	const shs_shape *r = &s->i->shape;

	if (r->type != SHS_TUPLE || r->n_tuple != s->i->n_operands)
		return fail(s, "result %s is not a tuple of %" PRIu32 " elements",
			    shape_text(s->v, 0, r), s->i->n_operands);
	for (uint32_t k = 0; k < s->i->n_operands; k++)
		if (!shs_shape_compatible(&r->tuple[k], operand_shape(s, k)))
			return fail(s, "result element %" PRIu32 " is %s but operand %" PRIu32
				    " ('%s') is %s", k, shape_text(s->v, 0, &r->tuple[k]), k,
				    operand_name(s, k), shape_text(s->v, 1, operand_shape(s, k)));
	return SHS_OK;
}

/* get-tuple-element: the operand is a tuple, the index in range, the result that element. */
static int check_gte(const site *s)
{
	const shs_shape *o;
	int64_t idx = s->i->tuple_index;
	int rc = want_operands(s, 1);

	if (rc != SHS_OK)
		return rc;
	o = operand_shape(s, 0);
	if (o->type != SHS_TUPLE)
		return fail(s, "operand '%s' is %s, not a tuple", operand_name(s, 0),
			    shape_text(s->v, 0, o));
	if (idx < 0 || idx >= (int64_t)o->n_tuple)
		return fail(s, "index %" PRId64 " is out of range (tuple of %" PRIu32 ")", idx,
			    o->n_tuple);
	if (!shs_shape_compatible(&s->i->shape, &o->tuple[idx]))
		return fail(s, "result %s differs from tuple element %" PRId64 " %s",
			    shape_text(s->v, 0, &s->i->shape), idx,
			    shape_text(s->v, 1, &o->tuple[idx]));
	return SHS_OK;
}

/* Computation callee takes exactly the shapes args[0..n) and returns ret (NULL: any). */
static int check_signature(const site *s, const char *role, uint32_t callee,
			   const shs_shape *const *args, uint32_t n, const shs_shape *ret)
{
	const shs_computation *f = s->v->m->comps[callee];
	const shs_shape *root = &f->instrs[f->root]->shape;

	if (s->v->n_params[callee] != n)
		return fail(s, "%s '%s' takes %" PRIu32 " parameters, want %" PRIu32, role, f->name,
			    s->v->n_params[callee], n);
	for (uint32_t k = 0; k < n; k++) {
		const shs_shape *p = &s->v->params[callee][k]->shape;

		if (!shs_shape_compatible(p, args[k]))
			return fail(s, "%s '%s' parameter %" PRIu32 " is %s but gets %s", role,
				    f->name, k, shape_text(s->v, 0, p),
				    shape_text(s->v, 1, args[k]));
	}
	if (ret && !shs_shape_compatible(root, ret))
		return fail(s, "%s '%s' returns %s, want %s", role, f->name,
			    shape_text(s->v, 0, root), shape_text(s->v, 1, ret));
	return SHS_OK;
}

/* while(init), body=called[0], condition=called[1]: both take the loop's shape; the body
 * returns it and the condition returns pred[]. */
static int check_while(const site *s)
{
	const shs_shape *loop = &s->i->shape, *args[1] = { &s->i->shape };
	static const shs_shape pred = { .type = SHS_PRED };
	int rc;

	if ((rc = want_operands(s, 1)))
		return rc;
	if (s->i->n_called != WHILE_N_CALLED)
		return fail(s, "has %" PRIu32 " called computations, want body and condition",
			    s->i->n_called);
	if (!shs_shape_compatible(operand_shape(s, 0), loop))
		return fail(s, "operand '%s' is %s but the loop's shape is %s", operand_name(s, 0),
			    shape_text(s->v, 0, operand_shape(s, 0)), shape_text(s->v, 1, loop));
	if ((rc = check_signature(s, "body", s->i->called[WHILE_BODY], args, 1, loop)))
		return rc;
	return check_signature(s, "condition", s->i->called[WHILE_COND], args, 1, &pred);
}

/* call and fusion: the callee takes the operands' shapes and returns the result's. */
static int check_call(const site *s)
{
	const shs_shape **args;
	int rc;

	if (s->i->n_called != 1)
		return fail(s, "has %" PRIu32 " called computations, want 1", s->i->n_called);
	args = malloc(((size_t)s->i->n_operands + 1) * sizeof(*args));
	if (!args)
		return shs_seterr(s->v->e, SHS_ENOMEM, "verify: out of memory");
	for (uint32_t k = 0; k < s->i->n_operands; k++)
		args[k] = operand_shape(s, k);
	rc = check_signature(s, "callee", s->i->called[0], args, s->i->n_operands, &s->i->shape);
	free(args);
	return rc;
}

/* conditional(index, arg_0..arg_B-1): index is pred[] (two branches) or s32[]; branch b takes
 * arg_b and returns the result's shape. */
static int check_conditional(const site *s)
{
	const shs_shape *idx;
	uint32_t nb = s->i->n_called;
	int rc;

	if (!nb || s->i->n_operands != nb + 1)
		return fail(s, "has %" PRIu32 " operands and %" PRIu32
			    " branches, want one operand per branch after the index",
			    s->i->n_operands, nb);
	idx = operand_shape(s, 0);
	if (!((idx->type == SHS_PRED && nb == PRED_BRANCHES) || idx->type == SHS_S32) ||
	    idx->rank)
		return fail(s, "branch index '%s' is %s, want pred[] with two branches or s32[]",
			    operand_name(s, 0), shape_text(s->v, 0, idx));
	for (uint32_t b = 0; b < nb; b++) {
		const shs_shape *args[1] = { operand_shape(s, b + 1) };

		if ((rc = check_signature(s, "branch", s->i->called[b], args, 1, &s->i->shape)))
			return rc;
	}
	return SHS_OK;
}

static int check_instr_shape(const site *s)
{
	switch (s->i->op) {
	case SHS_OP_DOT: return check_dot(s);
	case SHS_OP_BROADCAST: return check_broadcast(s);
	case SHS_OP_TRANSPOSE: return check_transpose(s);
	case SHS_OP_RESHAPE: return check_reshape(s);
	case SHS_OP_REDUCE: return check_reduce(s);
	case SHS_OP_TUPLE: return check_tuple(s);
	case SHS_OP_GET_TUPLE_ELEMENT: return check_gte(s);
	case SHS_OP_WHILE: return check_while(s);
	case SHS_OP_CALL: case SHS_OP_FUSION: return check_call(s);
	case SHS_OP_CONDITIONAL: return check_conditional(s);
	default:
		return shs_opcode_is_elementwise(s->i->op) ? check_elementwise(s) : SHS_OK;
	}
}

int shs__verify_instr_shape(shs__verifier *v, const shs_computation *c, const shs_instr *i)
{
	site s = { v, c, i };

	return check_instr_shape(&s);
}

int shs__verify_entry_layout(shs__verifier *v)
{
	const shs_module *m = v->m;
	const shs_program_shape *ps = m->entry_layout;
	const shs_computation *c = m->comps[m->entry];
	const shs_instr *root = c->instrs[c->root];

	if (!ps)
		return SHS_OK;
	if (ps->n_params != v->n_params[m->entry])
		return fail(&(site){ v, c, NULL }, "takes %" PRIu32
			    " parameters but entry_computation_layout lists %" PRIu32,
			    v->n_params[m->entry], ps->n_params);
	for (uint32_t k = 0; k < ps->n_params; k++) {
		const shs_instr *p = v->params[m->entry][k];

		if (!shs_shape_compatible(&p->shape, &ps->params[k]))
			return fail(&(site){ v, c, p }, "parameter %" PRIu32
				    " is %s but entry_computation_layout says %s", k,
				    shape_text(v, 0, &p->shape), shape_text(v, 1, &ps->params[k]));
	}
	if (!shs_shape_compatible(&root->shape, &ps->result))
		return fail(&(site){ v, c, root },
			    "root is %s but entry_computation_layout returns %s",
			    shape_text(v, 0, &root->shape), shape_text(v, 1, &ps->result));
	return SHS_OK;
}
