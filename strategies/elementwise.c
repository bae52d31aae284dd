/* Strategy plugin for element-wise ops: the result and every same-shaped operand share one spec. */
#include "common.h"
#include "rule_util.h"

/* XLA's element-wise opcodes (hlo/opcode.c shs_opcode_is_elementwise), plus map. */
static const char *const ew_opcodes[] = {
	"abs", "add", "and", "atan2", "bitcast-convert", "cbrt", "ceil", "clamp",
	"count-leading-zeros", "compare", "complex", "convert", "copy", "cosine", "divide", "erf",
	"exponential", "exponential-minus-one", "floor", "imag", "is-finite", "log",
	"log-plus-one", "logistic", "map", "maximum", "minimum", "multiply", "negate", "not", "or",
	"popcnt", "power", "real", "reduce-precision", "remainder", "round-nearest-afz",
	"round-nearest-even", "rsqrt", "select", "shift-left", "shift-right-arithmetic",
	"shift-right-logical", "sign", "sine", "sqrt", "stochastic-convert", "subtract", "tan",
	"tanh", "xor", NULL
};

/* The operand k spec for result spec r: r itself when the operand has the result's dims,
 * replicated (NULL) for a scalar; otherwise (bitcast-convert between widths) r on the leading
 * dims both share, which ew_allowed keeps to the dims that match. */
static bool ew_operand_spec(const shs_pquery *q, uint32_t k, const shs_pspec *r, shs_pspec *out)
{
	const shs_pshape *op = &q->instr->operands[k];

	if (!ru_is_array(op) || op->rank == 0)
		return false;
	sc_replicated(op->rank, out);
	for (uint32_t d = 0; d < op->rank && d < r->rank; d++)
		out->dims[d] = r->dims[d];
	return true;
}

/* Bit d set for each result dim that every non-scalar operand has with the same size. */
static uint64_t ew_allowed(const shs_pquery *q)
{
	const shs_pshape *res = &q->instr->shape;
	uint64_t mask = 0;

	for (uint32_t d = 0; d < res->rank; d++) {
		bool ok = true;

		for (uint32_t k = 0; k < q->instr->n_operands; k++) {
			const shs_pshape *op = &q->instr->operands[k];

			if (op->type == SHS_PTYPE_TUPLE ||
			    (op->rank && (d >= op->rank || op->dims[d] != res->dims[d])))
				ok = false;
		}
		if (ok)
			mask |= 1ull << d;
	}
	return mask;
}

/* Emits the candidate where the result has spec r. */
static void ew_emit(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		    const shs_pspec *r)
{
	char label[SC_LABEL_MAX];
	ru_emit e;

	ru_label(label, "same", r, q->mesh);
	ru_begin(&e, q, out, api, label);
	ru_result(&e, r);
	for (uint32_t k = 0; k < q->instr->n_operands; k++) {
		shs_pspec s;

		ru_operand(&e, k, ew_operand_spec(q, k, r, &s) ? &s : NULL);
	}
	ru_end(&e, sc_local_elems(&q->instr->shape, r, q->mesh));
}

typedef struct ew_enum_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
} ew_enum_ctx;

static int ew_enum_one(const shs_pspec *s, void *user)
{
	const ew_enum_ctx *ctx = user;

	ew_emit(ctx->q, ctx->out, ctx->api, s);
	return 0;
}

/* Drops the axes of the dims outside allowed. */
static void ew_mask(shs_pspec *s, uint64_t allowed)
{
	for (uint32_t d = 0; d < s->rank; d++)
		if (!(allowed & (1ull << d)))
			ru_clear_dim(s, d);
}

/* Whether spec s uses mesh axis ax anywhere. */
static bool ew_uses(const shs_pspec *s, uint8_t ax)
{
	for (uint32_t d = 0; d < s->rank; d++)
		for (uint32_t k = 0; k < s->dims[d].n; k++)
			if (s->dims[d].axes[k] == ax)
				return true;
	return false;
}

/* For each ordered pair of the hinted specs (a, b): a plus the axes of b that a leaves unused,
 * each on b's dim when a shards nothing there, else on the first dim a leaves whole (an
 * optimizer update sharded like its weight and, where the weight is replicated, like its
 * gradient). Added when valid and new. */
static void ew_merges(ru_specs *cands, const shs_pshape *res, const shs_pmesh *mesh,
		      uint64_t allowed)
{
	uint32_t n = cands->n;

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < n; j++) {
			shs_pspec m = cands->v[i], fitted;
			const shs_pspec *b = &cands->v[j];
			bool grew = false;
			if (i == j)
				continue;
			for (uint32_t d = 0; d < b->rank && d < m.rank; d++)
				for (uint32_t k = 0; k < b->dims[d].n; k++) {
					uint8_t ax = b->dims[d].axes[k];
					uint32_t at = d;
					if (ew_uses(&m, ax))
						continue;
					while (at < m.rank && m.dims[at].n)
						at = at + 1 < m.rank ? at + 1 : m.rank;
					if (m.dims[d].n == 0)
						at = d;
					if (at >= m.rank || m.dims[at].n >= SHS_PLUGIN_MAX_AXES)
						continue;
					m.dims[at].axes[m.dims[at].n++] = ax;
					grew = true;
				}
			if (grew && ru_fit(&m, res, mesh, &fitted)) {
				ew_mask(&fitted, allowed);
				ru_specs_add(cands, &fitted);
			}
		}
}

static int ew_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
		       void *user)
{
	const shs_pshape *res = &q->instr->shape;
	uint64_t allowed;
	ru_specs cands = { 0 };
	shs_pspec s;

	(void)user;
	if (!ru_is_array(res)) {
		ru_replicated(q, out, api);
		return 0;
	}
	allowed = ew_allowed(q);
	if (q->mode == SHS_PMODE_ENUMERATE) {
		uint64_t per_axis[SHS_PLUGIN_MAX_AXES];
		ew_enum_ctx ctx = { q, out, api };

		for (uint32_t a = 0; a < SHS_PLUGIN_MAX_AXES; a++)
			per_axis[a] = allowed;
		if (sc_enum_specs(res, q->mesh, per_axis, ew_enum_one, &ctx) < 0) {
			api->fail(out, "%s: cannot enumerate the specs of rank %u", q->instr->name,
				  res->rank);
			return -1;
		}
		return 0;
	}
	for (uint32_t k = 0; k < q->instr->n_operands; k++) {
		const shs_pspec *h = sc_operand_hint(q, k);

		if (h && q->instr->operands[k].rank == res->rank && ru_fit(h, res, q->mesh, &s)) {
			ew_mask(&s, allowed);
			ru_specs_add(&cands, &s);
		}
	}
	if (ru_fit(sc_result_hint(q), res, q->mesh, &s)) {
		ew_mask(&s, allowed);
		ru_specs_add(&cands, &s);
	}
	ew_merges(&cands, res, q->mesh, allowed);
	sc_replicated(res->rank, &s);
	ru_specs_add(&cands, &s);
	for (uint32_t k = 0; k < cands.n; k++)
		ew_emit(q, out, api, &cands.v[k]);
	return 0;
}

static const shs_strategy ew_strategy = {
	.struct_size = sizeof(shs_strategy),
	.name = "elementwise.same",
	.opcodes = ew_opcodes,
	.generate = ew_generate,
	.flags = SHS_STRATEGY_PURE,
};

static int ew_init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &ew_strategy);
}

SHS_PLUGIN_DEFINE(ew_init)
