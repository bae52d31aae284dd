/* Strategy plugin for data movement: broadcast, reshape, transpose, slices, pad, concat, iota... */
#include "common.h"
#include "rule_util.h"

/* How an op relates its result's dims to its operands' dims. */
typedef enum mv_kind {
	MV_ALIGNED,   /* operands of the result's rank, dim d to dim d; some dims cannot be split */
	MV_BROADCAST, /* operand dim j is result dim dimensions[j] */
	MV_TRANSPOSE, /* result dim j is operand dim dimensions[j] */
	MV_RESHAPE,   /* dims regrouped; a group keeps the axes of its major-most dim */
	MV_SOURCE     /* no array operand: iota, constant, partition-id, replica-id */
} mv_kind;

typedef struct mv_op mv_op;

/* One op's rules. For MV_ALIGNED: which operands follow the result, and which dims must stay
 * whole (the others have equal sizes on the result and those operands). */
struct mv_op {
	const char *opcodes[2];
	const char *name;
	mv_kind kind;
	bool (*aligned)(const shs_pinstr *i, uint32_t k);
	bool (*cleared)(const shs_pinstr *i, uint32_t d);
};

/* The array shape the result spec describes: the result, or for a tuple result (sort) its first
 * element, all elements having its dims. NULL when there is none. */
static const shs_pshape *mv_key_shape(const shs_pinstr *i)
{
	const shs_pshape *s = &i->shape;

	if (s->type != SHS_PTYPE_TUPLE)
		return ru_is_array(s) ? s : NULL;
	if (!s->n_tuple || !ru_is_array(&s->tuple[0]))
		return NULL;
	for (uint32_t k = 1; k < s->n_tuple; k++)
		if (s->tuple[k].type == SHS_PTYPE_TUPLE ||
		    !ru_same_dims(&s->tuple[k], &s->tuple[0]))
			return NULL;
	return &s->tuple[0];
}

/* ---- MV_ALIGNED ops ---- */

static bool mv_first_only(const shs_pinstr *i, uint32_t k)
{
	(void)i;
	return k == 0;
}

static bool mv_first_two(const shs_pinstr *i, uint32_t k)
{
	(void)i;
	return k < 2;
}

static bool mv_all(const shs_pinstr *i, uint32_t k)
{
	(void)i;
	(void)k;
	return true;
}

/* slice, pad, dynamic-slice: dims whose size changes. */
static bool mv_resized(const shs_pinstr *i, uint32_t d)
{
	const shs_pshape *res = mv_key_shape(i);

	return !i->n_operands || d >= i->operands[0].rank || i->operands[0].dims[d] != res->dims[d];
}

/* dynamic-update-slice: dims the update does not cover whole. */
static bool mv_updated(const shs_pinstr *i, uint32_t d)
{
	const shs_pshape *res = mv_key_shape(i);

	return i->n_operands < 2 || d >= i->operands[1].rank ||
	       i->operands[1].dims[d] != res->dims[d];
}

/* reverse, concatenate, sort: the dims listed in dimensions. */
static bool mv_listed(const shs_pinstr *i, uint32_t d)
{
	for (uint32_t k = 0; k < i->dimensions.n; k++)
		if (i->dimensions.v[k] == (int64_t)d)
			return true;
	return false;
}

static bool mv_nothing(const shs_pinstr *i, uint32_t d)
{
	(void)i;
	(void)d;
	return false;
}

/* Clears the dims of r the op cannot split. */
static void mv_clear(const mv_op *op, const shs_pinstr *i, shs_pspec *r)
{
	for (uint32_t d = 0; d < r->rank; d++)
		if (op->cleared(i, d))
			ru_clear_dim(r, d);
}

/* ---- MV_RESHAPE ---- */

/* Indices of the dims of s that are not 1 into idx; false when a dim is 0 or negative. */
static bool mv_big_dims(const shs_pshape *s, uint32_t *idx, uint32_t *n)
{
	*n = 0;
	for (uint32_t d = 0; d < s->rank; d++) {
		if (s->dims[d] < 1)
			return false;
		if (s->dims[d] > 1)
			idx[(*n)++] = d;
	}
	return true;
}

/* Multiplies *p by the next dim of s listed in idx; false when there is none or on overflow. */
static bool mv_grow(const shs_pshape *s, const uint32_t *idx, uint32_t n, uint32_t *at, int64_t *p)
{
	int64_t size;

	if (*at >= n)
		return false;
	size = s->dims[idx[*at]];
	if (*p > INT64_MAX / size)
		return false;
	*p *= size;
	(*at)++;
	return true;
}

/* One group of a reshape: source dims src[0..n) of `from` hold the elements of the target dims
 * starting at major (n_to of them). The group keeps the axes of its major-most source dim on the
 * target's major-most dim when the rest of the source group is unsharded and both that source
 * dim and the target dim divide (then every device holds the same elements before and after);
 * a dim that is only renamed (one source dim, one target dim of the same size) keeps its axes
 * even when it is padded. Otherwise the group is replicated. */
static void mv_group(const shs_pspec *s, const shs_pshape *from, const uint32_t *src, uint32_t n,
		     const shs_pshape *to, uint32_t major, uint32_t n_to, const shs_pmesh *mesh,
		     shs_pspec *r)
{
	const shs_pdim *first = &s->dims[src[0]];

	if (!first->n)
		return;
	for (uint32_t k = 1; k < n; k++)
		if (s->dims[src[k]].n)
			return;
	int64_t shards = sc_dim_shards(first, mesh);

	if (shards > 0 && ((n == 1 && n_to == 1) ||
			   (to->dims[major] % shards == 0 && from->dims[src[0]] % shards == 0)))
		r->dims[major] = *first;
}

/* Maps spec s of array `from` onto the reshaped array `to` (see mv_group); dims of size 1 are
 * left out of the groups and unsharded. False when the dims do not regroup (element counts
 * differ) or a dim is empty. */
static bool mv_reshape_map(const shs_pshape *from, const shs_pshape *to, const shs_pspec *s,
			   const shs_pmesh *mesh, shs_pspec *r)
{
	uint32_t fi[SHS_PLUGIN_MAX_RANK], ti[SHS_PLUGIN_MAX_RANK], nf, nt, a = 0, b = 0;

	sc_replicated(to->rank, r);
	if (!mv_big_dims(from, fi, &nf) || !mv_big_dims(to, ti, &nt))
		return false;
	while (a < nf && b < nt) {
		uint32_t ga = a, gb = b;
		int64_t pa = 1, pb = 1;

		if (!mv_grow(from, fi, nf, &a, &pa) || !mv_grow(to, ti, nt, &b, &pb))
			return false;
		while (pa != pb) {
			bool ok = pa < pb ? mv_grow(from, fi, nf, &a, &pa) :
					    mv_grow(to, ti, nt, &b, &pb);

			if (!ok)
				return false;
		}
		mv_group(s, from, fi + ga, a - ga, to, ti[gb], b - gb, mesh, r);
	}
	return a == nf && b == nt;
}

/* ---- Each kind's rules ---- */

/* MV_ALIGNED: the aligned operands have the result's rank and, off the cleared dims, its sizes. */
static bool mv_check_aligned(const mv_op *op, const shs_pinstr *i, const shs_pshape *res)
{
	for (uint32_t k = 0; k < i->n_operands; k++) {
		const shs_pshape *o = &i->operands[k];

		if (!op->aligned(i, k))
			continue;
		if (!ru_is_array(o) || o->rank != res->rank)
			return false;
		for (uint32_t d = 0; d < res->rank; d++)
			if (!op->cleared(i, d) && o->dims[d] != res->dims[d])
				return false;
	}
	return true;
}

/* MV_BROADCAST and MV_TRANSPOSE: dimensions lists distinct dims of the result (broadcast: one
 * per operand dim) of the same sizes as the operand dims they map to. */
static bool mv_check_dims(const shs_pinstr *i, const shs_pshape *res, bool transpose)
{
	const shs_pshape *in = i->n_operands ? &i->operands[0] : NULL;
	uint64_t seen = 0;

	if (!in || !ru_is_array(in) || i->dimensions.n != in->rank ||
	    (transpose && in->rank != res->rank))
		return false;
	for (uint32_t j = 0; j < in->rank; j++) {
		int64_t d = i->dimensions.v[j];

		if (d < 0 || d >= (int64_t)res->rank || (seen & (1ull << d)))
			return false;
		if (transpose ? res->dims[j] != in->dims[d] : res->dims[d] != in->dims[j])
			return false;
		seen |= 1ull << d;
	}
	return true;
}

/* Whether the instruction fits op's rules (attributes consistent with the shapes). */
static bool mv_check(const mv_op *op, const shs_pinstr *i, const shs_pmesh *mesh)
{
	const shs_pshape *res = mv_key_shape(i);
	shs_pspec tmp, rep;

	if (!res)
		return false;
	switch (op->kind) {
	case MV_ALIGNED:
		return mv_check_aligned(op, i, res);
	case MV_BROADCAST:
		return mv_check_dims(i, res, false);
	case MV_TRANSPOSE:
		return mv_check_dims(i, res, true);
	case MV_RESHAPE:
		if (!i->n_operands || !ru_is_array(&i->operands[0]))
			return false;
		sc_replicated(i->operands[0].rank, &rep);
		return mv_reshape_map(&i->operands[0], res, &rep, mesh, &tmp);
	case MV_SOURCE:
		return true;
	}
	return false;
}

/* The result spec that spec s of operand k implies; false when operand k does not decide it. */
static bool mv_from_operand(const mv_op *op, const shs_pinstr *i, uint32_t k, const shs_pspec *s,
			    const shs_pmesh *mesh, shs_pspec *r)
{
	const shs_pshape *res = mv_key_shape(i);

	switch (op->kind) {
	case MV_ALIGNED:
		if (!op->aligned(i, k))
			return false;
		*r = *s;
		r->padded = false;
		mv_clear(op, i, r);
		return true;
	case MV_BROADCAST:
		if (k)
			return false;
		sc_replicated(res->rank, r);
		for (uint32_t j = 0; j < s->rank; j++)
			r->dims[i->dimensions.v[j]] = s->dims[j];
		return true;
	case MV_TRANSPOSE:
		if (k)
			return false;
		sc_replicated(res->rank, r);
		for (uint32_t j = 0; j < res->rank; j++)
			r->dims[j] = s->dims[i->dimensions.v[j]];
		return true;
	case MV_RESHAPE:
		return !k && mv_reshape_map(&i->operands[0], res, s, mesh, r);
	case MV_SOURCE:
		return false;
	}
	return false;
}

/* The spec operand k needs for result spec r; false: the operand is replicated. */
static bool mv_operand(const mv_op *op, const shs_pinstr *i, uint32_t k, const shs_pspec *r,
		       const shs_pmesh *mesh, shs_pspec *s)
{
	const shs_pshape *in = &i->operands[k];

	switch (op->kind) {
	case MV_ALIGNED:
		if (!op->aligned(i, k))
			return false;
		*s = *r;
		return true;
	case MV_BROADCAST:
		if (k)
			return false;
		sc_replicated(in->rank, s);
		for (uint32_t j = 0; j < in->rank; j++)
			s->dims[j] = r->dims[i->dimensions.v[j]];
		return true;
	case MV_TRANSPOSE:
		if (k)
			return false;
		sc_replicated(in->rank, s);
		for (uint32_t j = 0; j < r->rank; j++)
			s->dims[i->dimensions.v[j]] = r->dims[j];
		return true;
	case MV_RESHAPE:
		return !k && mv_reshape_map(mv_key_shape(i), in, r, mesh, s);
	case MV_SOURCE:
		return false;
	}
	return false;
}

/* r made producible by the op: the axes it cannot keep dropped. */
static void mv_fix(const mv_op *op, const shs_pinstr *i, const shs_pspec *r, const shs_pmesh *mesh,
		   shs_pspec *out)
{
	shs_pspec s;

	*out = *r;
	out->padded = false;
	if (op->kind == MV_ALIGNED) {
		mv_clear(op, i, out);
	} else if (op->kind == MV_RESHAPE) {
		if (!mv_operand(op, i, 0, r, mesh, &s) || !mv_from_operand(op, i, 0, &s, mesh, out))
			sc_replicated(r->rank, out);
	}
}

/* ---- Emitting ---- */

/* Whether reshape shapes a and b differ only by dims of size 1 (XLA's algebraic simplifier
 * makes such a reshape a bitcast: it moves no byte). */
static bool mv_unit_dims_only(const shs_pshape *a, const shs_pshape *b)
{
	uint32_t i = 0, j = 0;

	for (;;) {
		while (i < a->rank && a->dims[i] == 1)
			i++;
		while (j < b->rank && b->dims[j] == 1)
			j++;
		if (i == a->rank || j == b->rank)
			return i == a->rank && j == b->rank;
		if (a->dims[i++] != b->dims[j++])
			return false;
	}
}

/* Emits the candidate with result spec r, unless an operand spec it implies is not valid. */
static void mv_emit(const mv_op *op, const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		    const shs_pspec *r)
{
	const shs_pinstr *i = q->instr;
	const shs_pshape *res = &i->shape;
	char label[SC_LABEL_MAX];
	double update = 0;
	ru_emit e;

	for (uint32_t k = 0; k < i->n_operands; k++) {
		shs_pspec s;

		shs_pspec fit;

		/* valid, or padded where XLA would pad (ru_fit keeps it as it is) */
		if (mv_operand(op, i, k, r, q->mesh, &s) &&
		    (!ru_fit(&s, &i->operands[k], q->mesh, &fit) || !sc_equal(&fit, &s)))
			return;
	}
	ru_label(label, "out", r, q->mesh);
	ru_begin(&e, q, out, api, label);
	if (res->type == SHS_PTYPE_TUPLE) {
		for (uint32_t k = 0; k < res->n_tuple; k++)
			ru_result_leaf(&e, k, &res->tuple[k], r);
	} else {
		ru_result(&e, r);
	}
	for (uint32_t k = 0; k < i->n_operands; k++) {
		shs_pspec s;
		double before = e.bytes;

		ru_operand(&e, k, mv_operand(op, i, k, r, q->mesh, &s) ? &s : NULL);
		if (k == 1)
			update = e.bytes - before;
	}
	/* a dynamic-update-slice works in place: it reads and writes the update only */
	if (!strcmp(i->opcode, "dynamic-update-slice"))
		e.bytes = 2 * update;
	/* a slice moves no byte of its own: XLA fuses slice and dynamic-slice into the fusions
	 * that read them, which read the slice in place (their bytes count it): a scanned layer's
	 * weights and saved activations cost what the unrolled layer reads, not the stack */
	if (!strcmp(i->opcode, "dynamic-slice") || !strcmp(i->opcode, "slice"))
		e.bytes = 0;
	/* a reshape that only adds or drops unit dims (a scanned layer's slice of a stack) is a
	 * bitcast when its operand keeps its sharding */
	if (op->kind == MV_RESHAPE && i->n_operands == 1 && res->type != SHS_PTYPE_TUPLE &&
	    mv_unit_dims_only(res, &i->operands[0]))
		e.bytes = 0;
	ru_end(&e, 0);
}

typedef struct mv_enum_ctx {
	const mv_op *op;
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
} mv_enum_ctx;

static int mv_enum_one(const shs_pspec *r, void *user)
{
	const mv_enum_ctx *ctx = user;
	shs_pspec fixed;

	mv_fix(ctx->op, ctx->q->instr, r, ctx->q->mesh, &fixed);
	if (sc_equal(&fixed, r))
		mv_emit(ctx->op, ctx->q, ctx->out, ctx->api, r);
	return 0;
}

/* The result specs worth trying: from each operand's hint, the result hint, replicated. */
static void mv_propagate(const mv_op *op, const shs_pquery *q, const shs_pshape *res,
			 ru_specs *cands)
{
	const shs_pinstr *i = q->instr;
	shs_pspec r, fitted, fixed;

	for (uint32_t k = 0; k < i->n_operands; k++) {
		const shs_pspec *h = sc_operand_hint(q, k);

		if (h && mv_from_operand(op, i, k, h, q->mesh, &r) &&
		    ru_fit(&r, res, q->mesh, &fitted)) {
			mv_fix(op, i, &fitted, q->mesh, &fixed);
			ru_specs_add(cands, &fixed);
		}
	}
	if (q->result_hint && ru_fit(&q->result_hint[0], res, q->mesh, &fitted)) {
		mv_fix(op, i, &fitted, q->mesh, &fixed);
		ru_specs_add(cands, &fixed);
	}
	sc_replicated(res->rank, &r);
	ru_specs_add(cands, &r);
}

static int mv_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	const mv_op *op = user;
	const shs_pshape *res = mv_key_shape(q->instr);
	ru_specs cands = { 0 };

	if (!mv_check(op, q->instr, q->mesh)) {
		ru_replicated(q, out, api);
		return 0;
	}
	if (q->mode == SHS_PMODE_ENUMERATE) {
		mv_enum_ctx ctx = { op, q, out, api };

		if (sc_enum_specs(res, q->mesh, NULL, mv_enum_one, &ctx) < 0) {
			api->fail(out, "%s: cannot enumerate the specs of rank %u", q->instr->name,
				  res->rank);
			return -1;
		}
		return 0;
	}
	mv_propagate(op, q, res, &cands);
	for (uint32_t k = 0; k < cands.n; k++)
		mv_emit(op, q, out, api, &cands.v[k]);
	return 0;
}

/* ---- Registration ---- */

static const mv_op mv_ops[] = {
	{ { "broadcast", NULL }, "movement.broadcast", MV_BROADCAST, NULL, NULL },
	{ { "reshape", NULL }, "movement.reshape", MV_RESHAPE, NULL, NULL },
	{ { "transpose", NULL }, "movement.transpose", MV_TRANSPOSE, NULL, NULL },
	{ { "slice", NULL }, "movement.slice", MV_ALIGNED, mv_first_only, mv_resized },
	{ { "pad", NULL }, "movement.pad", MV_ALIGNED, mv_first_only, mv_resized },
	{ { "dynamic-slice", NULL }, "movement.dynamic-slice", MV_ALIGNED, mv_first_only,
	  mv_resized },
	{ { "dynamic-update-slice", NULL }, "movement.dynamic-update-slice", MV_ALIGNED,
	  mv_first_two, mv_updated },
	{ { "concatenate", NULL }, "movement.concatenate", MV_ALIGNED, mv_all, mv_listed },
	{ { "reverse", NULL }, "movement.reverse", MV_ALIGNED, mv_first_only, mv_listed },
	{ { "sort", NULL }, "movement.sort", MV_ALIGNED, mv_all, mv_listed },
	{ { "bitcast", NULL }, "movement.bitcast", MV_ALIGNED, mv_first_only, mv_nothing },
	{ { "iota", NULL }, "movement.iota", MV_SOURCE, NULL, NULL },
	{ { "constant", NULL }, "movement.constant", MV_SOURCE, NULL, NULL },
	{ { "partition-id", NULL }, "movement.partition-id", MV_SOURCE, NULL, NULL },
	{ { "replica-id", NULL }, "movement.replica-id", MV_SOURCE, NULL, NULL },
};

static int mv_init(shs_registry *reg, const shs_host_api *api)
{
	for (size_t k = 0; k < sizeof(mv_ops) / sizeof(mv_ops[0]); k++) {
		const shs_strategy s = {
			.struct_size = sizeof(shs_strategy),
			.name = mv_ops[k].name,
			.opcodes = mv_ops[k].opcodes,
			.generate = mv_generate,
			.flags = SHS_STRATEGY_PURE,
			.user = (void *)&mv_ops[k],
		};
		int rc = api->register_strategy(reg, &s);

		if (rc)
			return rc;
	}
	return 0;
}

SHS_PLUGIN_DEFINE(mv_init)
