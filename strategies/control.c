/* Strategy plugin for tuples and control flow: shardings pass through leaf by leaf. */
#include "common.h"
#include "rule_util.h"

typedef enum ct_kind { CT_TUPLE, CT_GTE, CT_WHILE, CT_BARRIER, CT_CALL, CT_CONDITIONAL } ct_kind;

enum {
	CT_MAX_CANDS = 5,         /* operands, called root, result hint, replicated (+1 spare) */
	CT_MAX_LEAVES = 1 << 16   /* beyond this many leaves (result + operands): replicated only */
};

/* The array leaves of the result and of every operand, and candidate storage. */
typedef struct ct_leaves {
	uint32_t n_res, n_ops;
	const shs_pshape **res;     /* n_res leaf shapes */
	const shs_pshape **ops;     /* n_ops leaf shapes, operand by operand */
	/* n_operands + 1: operand k's leaves are [first[k], first[k+1]) */
	uint32_t *first;
	uint32_t n_cands;
	shs_pspec *cands;           /* CT_MAX_CANDS * (n_res + n_ops) */
} ct_leaves;

typedef struct ct_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
	ct_leaves l;
} ct_ctx;

/* ---- Leaves ---- */

static void ct_free(ct_leaves *l)
{
	free(l->res);
	free(l->ops);
	free(l->first);
	free(l->cands);
}

/* What ct_layout found. */
enum { CT_LAYOUT_OK = 0, CT_LAYOUT_TOO_LARGE = 1, CT_LAYOUT_FAILED = -1 };

/* Lists the leaves: CT_LAYOUT_OK, CT_LAYOUT_TOO_LARGE (over CT_MAX_LEAVES), or
 * CT_LAYOUT_FAILED (out of memory, or the host counts leaves differently). */
static int ct_layout(const shs_pquery *q, const shs_host_api *api, ct_leaves *l)
{
	const shs_pinstr *i = q->instr;
	uint32_t n = 0;

	memset(l, 0, sizeof(*l));
	l->n_res = api->leaves(&i->shape);
	if (l->n_res > CT_MAX_LEAVES || i->n_operands > CT_MAX_LEAVES)
		return CT_LAYOUT_TOO_LARGE;
	if (ru_leaf_count(&i->shape) != l->n_res)
		return CT_LAYOUT_FAILED;
	l->first = malloc(sizeof(*l->first) * (i->n_operands + 1));
	if (!l->first)
		return CT_LAYOUT_FAILED;
	for (uint32_t k = 0; k < i->n_operands; k++) {
		uint32_t leaves = api->leaves(&i->operands[k]);

		l->first[k] = n;
		if (leaves > CT_MAX_LEAVES || n + leaves > CT_MAX_LEAVES)
			return CT_LAYOUT_TOO_LARGE;
		if (leaves != ru_leaf_count(&i->operands[k]))
			return CT_LAYOUT_FAILED;
		n += leaves;
	}
	l->first[i->n_operands] = n;
	l->n_ops = n;
	l->res = malloc(sizeof(*l->res) * (l->n_res + 1));
	l->ops = malloc(sizeof(*l->ops) * (l->n_ops + 1));
	l->cands = malloc(sizeof(*l->cands) * CT_MAX_CANDS * (l->n_res + l->n_ops + 1));
	if (!l->res || !l->ops || !l->cands)
		return CT_LAYOUT_FAILED;
	ru_leaf_shapes(&i->shape, l->res, 0);
	for (uint32_t k = 0; k < i->n_operands; k++)
		ru_leaf_shapes(&i->operands[k], l->ops, l->first[k]);
	return CT_LAYOUT_OK;
}

/* *out = spec made valid for leaf shape, or replicated when spec is NULL or does not fit. */
static void ct_fit(const shs_pspec *spec, const shs_pshape *shape, const shs_pmesh *mesh,
		   shs_pspec *out)
{
	if (!ru_fit(spec, shape, mesh, out))
		sc_replicated(ru_is_array(shape) ? shape->rank : 0, out);
}

/* ---- Candidates ---- */

/* A new candidate's specs: n_res result leaves, then n_ops operand leaves, all replicated. */
static shs_pspec *ct_new(ct_ctx *x)
{
	ct_leaves *l = &x->l;
	shs_pspec *c = &l->cands[(size_t)l->n_cands * (l->n_res + l->n_ops)];

	for (uint32_t j = 0; j < l->n_res; j++)
		ct_fit(NULL, l->res[j], x->q->mesh, &c[j]);
	for (uint32_t j = 0; j < l->n_ops; j++)
		ct_fit(NULL, l->ops[j], x->q->mesh, &c[l->n_res + j]);
	return c;
}

/* Fills operand k's leaves of c from its hint (replicated when not decided). */
static void ct_from_hint(ct_ctx *x, uint32_t k, shs_pspec *c)
{
	ct_leaves *l = &x->l;
	const shs_pspec *h = x->q->hints ? x->q->hints[k] : NULL;

	for (uint32_t j = l->first[k]; j < l->first[k + 1]; j++)
		ct_fit(h ? &h[j - l->first[k]] : NULL, l->ops[j], x->q->mesh, &c[l->n_res + j]);
}

/* Fills the result leaves of c from leaves (NULL: replicated). */
static void ct_result_from(ct_ctx *x, const shs_pspec *leaves, shs_pspec *c)
{
	for (uint32_t j = 0; j < x->l.n_res; j++)
		ct_fit(leaves ? &leaves[j] : NULL, x->l.res[j], x->q->mesh, &c[j]);
}

/* Emits candidate c (n_res result leaves, then n_ops operand leaves). */
static void ct_emit_specs(ct_ctx *x, const shs_pspec *c, const char *label)
{
	const ct_leaves *l = &x->l;
	ru_emit e;

	ru_begin(&e, x->q, x->out, x->api, label);
	for (uint32_t j = 0; j < l->n_res; j++)
		ru_result_leaf(&e, j, l->res[j], ru_sharded(&c[j]) ? &c[j] : NULL);
	for (uint32_t k = 0; k < x->q->instr->n_operands; k++)
		for (uint32_t j = l->first[k]; j < l->first[k + 1]; j++)
			ru_operand_leaf(&e, k, j - l->first[k], l->ops[j],
					ru_sharded(&c[l->n_res + j]) ? &c[l->n_res + j] : NULL);
	ru_end(&e, 0);
}

/* Emits the candidate just filled (the last of l->cands) unless an earlier one is the same. */
static void ct_emit(ct_ctx *x, const char *label)
{
	ct_leaves *l = &x->l;
	uint32_t per = l->n_res + l->n_ops;
	const shs_pspec *c = &l->cands[(size_t)l->n_cands * per];

	for (uint32_t k = 0; k < l->n_cands; k++) {
		const shs_pspec *o = &l->cands[(size_t)k * per];
		uint32_t j = 0;

		while (j < per && sc_equal(&o[j], &c[j]))
			j++;
		if (j == per)
			return;
	}
	l->n_cands++;
	ct_emit_specs(x, c, label);
}

/* Copies the result leaves of c onto operand leaves [at, at + n_res). */
static void ct_result_to_ops(ct_ctx *x, uint32_t at, shs_pspec *c)
{
	for (uint32_t j = 0; j < x->l.n_res; j++)
		c[x->l.n_res + at + j] = c[j];
}

/* Copies operand leaves [at, at + n_res) of c onto the result leaves. */
static void ct_ops_to_result(ct_ctx *x, uint32_t at, shs_pspec *c)
{
	for (uint32_t j = 0; j < x->l.n_res; j++)
		c[j] = c[x->l.n_res + at + j];
}

/* ---- Per op ---- */

/* Whether the result leaves have the dims of operand leaves [at, at + n_res). */
static bool ct_same_leaves(const ct_ctx *x, uint32_t at)
{
	if (at > x->l.n_ops || x->l.n_ops - at < x->l.n_res)
		return false;
	for (uint32_t j = 0; j < x->l.n_res; j++)
		if (!ru_same_dims(x->l.res[j], x->l.ops[at + j]))
			return false;
	return true;
}

/* The first leaf of element tuple_index of operand 0 (a tuple), or false when it is not there or
 * has other leaves than the result. */
static bool ct_gte_leaf(ct_ctx *x, uint32_t *at)
{
	const shs_pshape *t = x->q->instr->operands;
	int64_t idx = x->q->instr->tuple_index;
	uint32_t n = 0;

	if (x->q->instr->n_operands != 1 || t->type != SHS_PTYPE_TUPLE || idx < 0 ||
	    idx >= (int64_t)t->n_tuple)
		return false;
	for (int64_t k = 0; k < idx; k++)
		n += x->api->leaves(&t->tuple[k]);
	*at = n;
	return x->api->leaves(&t->tuple[idx]) == x->l.n_res && ct_same_leaves(x, n);
}

/* tuple, while, opt-barrier: the result's leaves are operand leaves from the first on. */
static void ct_passthrough(ct_ctx *x, ct_kind kind)
{
	const shs_pquery *q = x->q;
	shs_pspec *c;

	if (x->l.n_ops != x->l.n_res || !ct_same_leaves(x, 0))
		return;
	c = ct_new(x);
	for (uint32_t k = 0; k < q->instr->n_operands; k++)
		ct_from_hint(x, k, c);
	ct_ops_to_result(x, 0, c);
	ct_emit(x, "operands");
	if (kind == CT_WHILE && q->n_called && q->called_roots && q->called_roots[0]) {
		c = ct_new(x);
		ct_result_from(x, q->called_roots[0], c);
		ct_result_to_ops(x, 0, c);
		ct_emit(x, "body");
	}
	if (q->result_hint) {
		c = ct_new(x);
		ct_result_from(x, q->result_hint, c);
		ct_result_to_ops(x, 0, c);
		ct_emit(x, "result-hint");
	}
}

/* The state of enumerating an array element's specs. */
typedef struct ct_enum {
	ct_ctx *x;
	shs_pspec *c;   /* the candidate: operand leaves from the hint */
	uint32_t at;    /* the element's leaf in the operand */
} ct_enum;

static int ct_gte_one(const shs_pspec *s, void *user)
{
	const ct_enum *en = user;
	char label[SC_LABEL_MAX];

	en->c[0] = *s;
	en->c[en->x->l.n_res + en->at] = *s;
	ru_label(label, "", s, en->x->q->mesh);
	ct_emit_specs(en->x, en->c, label);
	return 0;
}

/* get-tuple-element: the result is a run of the operand's leaves. ENUMERATE, for an array
 * element: each valid spec of it (replicated first), the operand's other leaves as decided.
 * Returns true when it emitted every candidate itself (no replicated fallback needed). */
static bool ct_gte(ct_ctx *x)
{
	shs_pspec *c;
	uint32_t at;

	if (!ct_gte_leaf(x, &at))
		return false;
	if (x->q->mode == SHS_PMODE_ENUMERATE && x->q->instr->shape.type != SHS_PTYPE_TUPLE &&
	    ru_is_array(&x->q->instr->shape)) {
		ct_enum en = { x, ct_new(x), at };

		ct_from_hint(x, 0, en.c);
		return sc_enum_specs(&x->q->instr->shape, x->q->mesh, NULL, ct_gte_one, &en) == 0;
	}
	c = ct_new(x);
	ct_from_hint(x, 0, c);
	ct_ops_to_result(x, at, c);
	ct_emit(x, "operand");
	if (x->q->result_hint) {
		c = ct_new(x);
		ct_from_hint(x, 0, c);
		ct_result_from(x, x->q->result_hint, c);
		ct_result_to_ops(x, at, c);
		ct_emit(x, "result-hint");
	}
	return false;
}

/* call, conditional: operands as decided, the result as the called root (conditional: branch
 * 0's root; its branch index replicated), or as the result hint. */
static void ct_call(ct_ctx *x, ct_kind kind)
{
	const shs_pquery *q = x->q;
	const shs_pspec *root = q->n_called && q->called_roots ? q->called_roots[0] : NULL;
	uint32_t from = kind == CT_CONDITIONAL ? 1 : 0;
	shs_pspec *c = ct_new(x);

	for (uint32_t k = from; k < q->instr->n_operands; k++)
		ct_from_hint(x, k, c);
	ct_result_from(x, root, c);
	ct_emit(x, "called");
	if (q->result_hint) {
		c = ct_new(x);
		for (uint32_t k = from; k < q->instr->n_operands; k++)
			ct_from_hint(x, k, c);
		ct_result_from(x, q->result_hint, c);
		ct_emit(x, "result-hint");
	}
}

/* Both modes give the same candidates (but get-tuple-element of an array): a tuple's
 * assignments cannot be enumerated, so ENUMERATE proposes what the operands, called roots and
 * result hint say, and replicated. */
static int ct_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	ct_kind kind = (ct_kind)(*(const int *)user);
	ct_ctx x = { q, out, api, { 0 } };
	int rc;

	rc = ct_layout(q, api, &x.l);
	if (rc == CT_LAYOUT_TOO_LARGE) {
		ru_replicated(q, out, api);
		rc = 0;
		goto out_free;
	}
	if (rc != CT_LAYOUT_OK) {
		api->fail(out, "%s: out of memory, or leaf counts differ from the host's",
			  q->instr->name);
		goto out_free;
	}
	switch (kind) {
	case CT_TUPLE:
	case CT_WHILE:
	case CT_BARRIER:
		ct_passthrough(&x, kind);
		break;
	case CT_GTE:
		if (ct_gte(&x))
			goto out_free;
		break;
	case CT_CALL:
	case CT_CONDITIONAL:
		ct_call(&x, kind);
		break;
	}
	ct_new(&x);
	ct_emit(&x, "replicated");
out_free:
	ct_free(&x.l);
	return rc;
}

/* ---- Registration ---- */

typedef struct ct_op {
	const char *opcodes[2];
	const char *name;
	int kind;   /* ct_kind */
} ct_op;

static const ct_op ct_ops[] = {
	{ { "tuple", NULL }, "control.tuple", CT_TUPLE },
	{ { "get-tuple-element", NULL }, "control.get-tuple-element", CT_GTE },
	{ { "while", NULL }, "control.while", CT_WHILE },
	{ { "opt-barrier", NULL }, "control.opt-barrier", CT_BARRIER },
	{ { "call", NULL }, "control.call", CT_CALL },
	{ { "conditional", NULL }, "control.conditional", CT_CONDITIONAL },
};

static int ct_init(shs_registry *reg, const shs_host_api *api)
{
	for (size_t k = 0; k < sizeof(ct_ops) / sizeof(ct_ops[0]); k++) {
		const shs_strategy s = {
			.struct_size = sizeof(shs_strategy),
			.name = ct_ops[k].name,
			.opcodes = ct_ops[k].opcodes,
			.generate = ct_generate,
			.flags = SHS_STRATEGY_PURE,
			.user = (void *)&ct_ops[k].kind,
		};
		int rc = api->register_strategy(reg, &s);

		if (rc)
			return rc;
	}
	return 0;
}

SHS_PLUGIN_DEFINE(ct_init)
