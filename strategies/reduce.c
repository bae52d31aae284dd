/* Strategy plugin for reduce: split inputs; reduced dims' axes leave a partial sum to finish. */
#include "common.h"
#include "rule_util.h"

static const char *const rd_opcodes[] = { "reduce", NULL };

enum { RD_MAX_INPUTS = SHS_PLUGIN_MAX_RANK };

/* A reduce's inputs, init values and result leaves, checked for consistency. */
typedef struct rd_info {
	uint32_t n_in;                       /* inputs; as many init values follow them */
	const shs_pshape *in;                /* the first input's shape */
	bool reduced[SHS_PLUGIN_MAX_RANK];   /* input dims that are reduced */
	const shs_pshape *leaf[RD_MAX_INPUTS]; /* the result's leaves, one per input */
} rd_info;

/* Whether leaf has in's dims without the reduced ones. */
static bool rd_leaf_ok(const rd_info *r, const shs_pshape *leaf)
{
	uint32_t j = 0;

	if (leaf->type == SHS_PTYPE_TUPLE)
		return false;
	for (uint32_t d = 0; d < r->in->rank; d++) {
		if (r->reduced[d])
			continue;
		if (j >= leaf->rank || leaf->dims[j] != r->in->dims[d])
			return false;
		j++;
	}
	return j == leaf->rank;
}

/* Fills r from the instruction; false when it is not a reduce these rules understand. */
static bool rd_parse(const shs_pinstr *i, rd_info *r)
{
	const shs_plist *dims = &i->dimensions;

	memset(r, 0, sizeof(*r));
	if (i->n_operands < 2 || i->n_operands % 2 || i->n_operands / 2 > RD_MAX_INPUTS)
		return false;
	r->n_in = i->n_operands / 2;
	r->in = &i->operands[0];
	if (!ru_is_array(r->in))
		return false;
	for (uint32_t k = 0; k < r->n_in; k++)
		if (i->operands[k].type == SHS_PTYPE_TUPLE || !ru_same_dims(&i->operands[k], r->in))
			return false;
	for (uint32_t k = 0; k < dims->n; k++) {
		int64_t d = dims->v[k];

		if (d < 0 || d >= (int64_t)r->in->rank || r->reduced[d])
			return false;
		r->reduced[d] = true;
	}
	if (r->n_in == 1) {
		r->leaf[0] = &i->shape;
	} else {
		if (i->shape.type != SHS_PTYPE_TUPLE || i->shape.n_tuple != r->n_in)
			return false;
		for (uint32_t k = 0; k < r->n_in; k++)
			r->leaf[k] = &i->shape.tuple[k];
	}
	for (uint32_t k = 0; k < r->n_in; k++)
		if (!rd_leaf_ok(r, r->leaf[k]))
			return false;
	return true;
}

/* Emits one candidate: inputs on s, result leaves on res, and the collective v (NULL: none). */
static void rd_emit_one(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
			const rd_info *r, const shs_pspec *s, const shs_pspec *res,
			const shs_pdim *partial, const sc_psum *v)
{
	char label[SC_LABEL_MAX];
	double flops = 0, partial_bytes = 0;
	ru_emit e;

	ru_label(label, "in", s, q->mesh);
	if (v) {
		ru_append(label, " ");
		ru_append(label, v->suffix);
	}
	ru_begin(&e, q, out, api, label);
	for (uint32_t k = 0; k < r->n_in; k++) {
		ru_operand(&e, k, s);
		ru_operand(&e, r->n_in + k, NULL);
		ru_result_leaf(&e, k, r->leaf[k], v ? &v->result : res);
		flops += sc_local_elems(r->in, s, q->mesh);
		partial_bytes += sc_local_bytes(api, r->leaf[k], res, q->mesh);
	}
	if (v)
		api->add_collective(out, e.c, v->kind, sc_dim_mask(partial), partial_bytes,
				    v->overlappable);
	ru_end(&e, flops);
}

/* Emits the candidates with inputs on spec s: one, or one per way to finish the partial sum. */
static void rd_emit(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		    const rd_info *r, const shs_pspec *s)
{
	sc_psum v[SC_MAX_PSUM];
	shs_pdim partial = { 0 };
	shs_pspec res;
	uint32_t n, j = 0;

	sc_replicated(r->leaf[0]->rank, &res);
	for (uint32_t d = 0; d < s->rank; d++) {
		const shs_pdim *dim = &s->dims[d];

		if (!r->reduced[d]) {
			res.dims[j++] = *dim;
			continue;
		}
		for (uint32_t k = 0; k < dim->n; k++)
			partial.axes[partial.n++] = dim->axes[k];
	}
	n = sc_psum_variants_padded(&res, &partial, r->leaf[0], q->mesh, false,
				    q->mode == SHS_PMODE_PROPAGATE ? SC_PAD_ANY_DIM : 0, v);
	if (!n) {
		rd_emit_one(q, out, api, r, s, &res, &partial, NULL);
		return;
	}
	for (uint32_t k = 0; k < n; k++)
		rd_emit_one(q, out, api, r, s, &res, &partial, &v[k]);
}

typedef struct rd_enum_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
	const rd_info *r;
} rd_enum_ctx;

static int rd_enum_one(const shs_pspec *s, void *user)
{
	const rd_enum_ctx *ctx = user;

	rd_emit(ctx->q, ctx->out, ctx->api, ctx->r, s);
	return 0;
}

/* The input spec for a result spec: kept dims take the result's axes, reduced dims none. */
static void rd_from_result(const rd_info *r, const shs_pspec *res, shs_pspec *s)
{
	uint32_t j = 0;

	sc_replicated(r->in->rank, s);
	for (uint32_t d = 0; d < r->in->rank; d++)
		if (!r->reduced[d])
			s->dims[d] = res->dims[j++];
}

/* The input specs worth trying: the inputs' hints, the result hint, replicated. */
static void rd_propagate(const shs_pquery *q, const rd_info *r, ru_specs *cands)
{
	shs_pspec s;

	for (uint32_t k = 0; k < r->n_in; k++)
		if (ru_fit(sc_operand_hint(q, k), r->in, q->mesh, &s))
			ru_specs_add(cands, &s);
	if (q->result_hint) {
		shs_pspec res;

		if (ru_fit(&q->result_hint[0], r->leaf[0], q->mesh, &res)) {
			rd_from_result(r, &res, &s);
			ru_specs_add(cands, &s);
		}
	}
	sc_replicated(r->in->rank, &s);
	ru_specs_add(cands, &s);
}

static int rd_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		       void *user)
{
	ru_specs cands = { 0 };
	rd_info r;

	(void)user;
	if (!rd_parse(q->instr, &r)) {
		ru_replicated(q, out, api);
		return 0;
	}
	if (q->mode == SHS_PMODE_ENUMERATE) {
		rd_enum_ctx ctx = { q, out, api, &r };

		if (sc_enum_specs(r.in, q->mesh, NULL, rd_enum_one, &ctx) < 0) {
			api->fail(out, "%s: cannot enumerate the specs of rank %u", q->instr->name,
				  r.in->rank);
			return -1;
		}
		return 0;
	}
	rd_propagate(q, &r, &cands);
	for (uint32_t k = 0; k < cands.n; k++)
		rd_emit(q, out, api, &r, &cands.v[k]);
	return 0;
}

static const shs_strategy rd_strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "reduce.split",
	.opcodes = rd_opcodes,
	.generate = rd_generate,
	.flags = SHS_STRATEGY_PURE,
};

static int rd_init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &rd_strategy);
}

SHS_PLUGIN_DEFINE(rd_init)
