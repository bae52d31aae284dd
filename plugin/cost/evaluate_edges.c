/* Operand edges that reshard, and which of them repeat an earlier edge's reshard.
 *
 * XLA's SPMD partitioner reshards a value into a given sharding once per computation and reuses
 * the result for every later user that wants the same sharding (its reshard cache). So an edge
 * whose operand an earlier edge of the same computation already brought into the same sharding
 * costs no transfer: it reads the earlier copy. */
#include <stdlib.h>

#include "evaluate_internal.h"

enum { MAX_CHAIN = 16, NO_EDGE = UINT32_MAX };

bool shs__reshards_at(const shs__edges *x, const shs_computation *comp, uint32_t c, uint32_t i)
{
	const shs_instr *in = comp->instrs[i];

	/* a called computation's parameters take the caller's operands as they are sharded, and
	 * a tuple or its element is a view: the reshards are at the real uses; but a loop body's
	 * root makes the carry's sharding, and the entry's the step's outputs (the weights and
	 * Adam state as they came in) */
	return in->op != SHS_OP_CALL && in->op != SHS_OP_CONDITIONAL && in->op != SHS_OP_WHILE &&
	       in->op != SHS_OP_GET_TUPLE_ELEMENT && in->op != SHS_OP_PARAMETER &&
	       (in->op != SHS_OP_TUPLE ||
		(i == comp->root && (x->loop_body[c] || c == x->entry)));
}

/* Whether edge (i, k) of computation c needs its operand in another sharding: its required
 * leaves, or NULL. */
static const shs_pspec *edge_req(const shs_plan *p, const shs_computation *comp, uint32_t c,
				 uint32_t i, uint32_t k, uint32_t *n_leaves)
{
	const shs_decision *d = &p->d[c][i], *od = &p->d[c][comp->instrs[i]->operands[k]];
	const shs_pspec *req;
	bool differs = false;

	if (!d->set || !d->n_req || !od->set || d->req_first[k] + od->n_leaves > d->n_req)
		return NULL;
	req = &d->req[d->req_first[k]];
	for (uint32_t j = 0; j < od->n_leaves && !differs; j++)
		differs = !shs_spec_equal(&od->leaves[j], &req[j]);
	*n_leaves = od->n_leaves;
	return differs ? req : NULL;
}

static bool same_req(const shs_pspec *a, const shs_pspec *b, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++)
		if (!shs_spec_equal(&a[j], &b[j]))
			return false;
	return true;
}

/* Fills x->first[c]: for each resharding edge, the earliest edge of the same value with the
 * same required sharding (chains of the edges of each value, searched MAX_CHAIN deep). */
static int link_comp(shs__edges *x, const shs_module *m, const shs_plan *p, uint32_t c,
		     shs_err *e)
{
	const shs_computation *comp = m->comps[c];
	uint32_t total = x->base[c][comp->n_instrs];
	uint32_t *prev = malloc((total + 1) * sizeof(*prev));
	uint32_t *last = malloc((comp->n_instrs + 1) * sizeof(*last));
	const shs_pspec **req = malloc((total + 1) * sizeof(*req));
	int rc = SHS_OK;

	if (!prev || !last || !req) {
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
		goto done;
	}
	for (uint32_t v = 0; v < comp->n_instrs; v++)
		last[v] = NO_EDGE;
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		if (!shs__reshards_at(x, comp, c, i))
			continue;
		for (uint32_t k = 0; k < in->n_operands; k++) {
			uint32_t f = x->base[c][i] + k, v = in->operands[k], n = 0, hops = 0;
			if (!(req[f] = edge_req(p, comp, c, i, k, &n)))
				continue;
			x->first[c][f] = SHS__EDGE_NEW;
			for (uint32_t g = last[v]; g != NO_EDGE && hops < MAX_CHAIN &&
			     x->first[c][f] == SHS__EDGE_NEW; g = prev[g], hops++)
				if (same_req(req[g], req[f], n))
					x->first[c][f] = x->first[c][g] == SHS__EDGE_NEW ?
								 g : x->first[c][g];
			prev[f] = last[v];
			last[v] = f;
		}
	}
done:
	free(prev);
	free(last);
	free((void *)req);
	return rc;
}

/* Fills the uses of every value of computation c that reshard it first (a counting sort of
 * those edges by operand) and the consumer of every edge. */
static int index_uses(shs__edges *x, const shs_computation *comp, uint32_t c, shs_err *e)
{
	uint32_t total = x->base[c][comp->n_instrs];
	uint32_t *fill = calloc(comp->n_instrs + 1, sizeof(*fill));
	int rc = SHS_OK;

	x->use_first[c] = calloc(comp->n_instrs + 2, sizeof(*x->use_first[c]));
	x->use_edge[c] = malloc((total + 1) * sizeof(*x->use_edge[c]));
	x->consumer[c] = malloc((total + 1) * sizeof(*x->consumer[c]));
	if (!fill || !x->use_first[c] || !x->use_edge[c] || !x->consumer[c]) {
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		for (uint32_t k = 0; k < comp->instrs[i]->n_operands; k++) {
			x->consumer[c][x->base[c][i] + k] = i;
			if (x->first[c][x->base[c][i] + k] == SHS__EDGE_NEW)
				x->use_first[c][comp->instrs[i]->operands[k] + 1]++;
		}
	for (uint32_t v = 0; v < comp->n_instrs; v++)
		x->use_first[c][v + 1] += x->use_first[c][v];
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		for (uint32_t k = 0; k < comp->instrs[i]->n_operands; k++) {
			uint32_t v = comp->instrs[i]->operands[k], f = x->base[c][i] + k;
			if (x->first[c][f] == SHS__EDGE_NEW)
				x->use_edge[c][x->use_first[c][v] + fill[v]++] = f;
		}
done:
	free(fill);
	return rc;
}

int shs__edges_make(const shs_module *m, const shs_plan *p, shs__edges *out, shs_err *e)
{
	int rc = SHS_OK;

	out->n_comps = m->n_comps;
	out->entry = m->entry;
	out->base = calloc(m->n_comps + 1, sizeof(*out->base));
	out->first = calloc(m->n_comps + 1, sizeof(*out->first));
	out->use_first = calloc(m->n_comps + 1, sizeof(*out->use_first));
	out->use_edge = calloc(m->n_comps + 1, sizeof(*out->use_edge));
	out->consumer = calloc(m->n_comps + 1, sizeof(*out->consumer));
	out->loop_body = calloc(m->n_comps + 1, sizeof(*out->loop_body));
	if (!out->base || !out->first || !out->use_first || !out->use_edge || !out->consumer ||
	    !out->loop_body)
		rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	for (uint32_t c = 0; rc == SHS_OK && c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const shs_instr *in = m->comps[c]->instrs[i];
			if (in->op == SHS_OP_WHILE && in->n_called)
				out->loop_body[in->called[0]] = true;
		}
	if (rc == SHS_OK)
		rc = shs_weights_make(m, &out->weights, e);
	for (uint32_t c = 0; rc == SHS_OK && c < m->n_comps; c++) {
		const shs_computation *comp = m->comps[c];
		uint32_t total = 0;
		out->base[c] = malloc((comp->n_instrs + 1) * sizeof(*out->base[c]));
		if (!out->base[c]) {
			rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
			break;
		}
		for (uint32_t i = 0; i < comp->n_instrs; i++) {
			out->base[c][i] = total;
			total += comp->instrs[i]->n_operands;
		}
		out->base[c][comp->n_instrs] = total;
		out->first[c] = malloc((total + 1) * sizeof(*out->first[c]));
		if (!out->first[c]) {
			rc = shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
			break;
		}
		for (uint32_t f = 0; f < total; f++)
			out->first[c][f] = SHS__EDGE_NONE;
		rc = link_comp(out, m, p, c, e);
		if (rc == SHS_OK)
			rc = index_uses(out, comp, c, e);
	}
	if (rc != SHS_OK)
		shs__edges_free(out);
	return rc;
}

void shs__edges_free(shs__edges *x)
{
	uint32_t **const tables[] = { x->base, x->first, x->use_first, x->use_edge, x->consumer };

	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++) {
		for (uint32_t c = 0; tables[t] && c < x->n_comps; c++)
			free(tables[t][c]);
		free(tables[t]);
	}
	free(x->loop_body);
	shs_weights_free(x->weights);
	x->weights = NULL;
	x->base = x->first = x->use_first = x->use_edge = x->consumer = NULL;
	x->loop_body = NULL;
	x->n_comps = 0;
}

void shs__per_instr_free(const shs_module *m, void **a)
{
	for (uint32_t k = 0; a && k < m->n_comps; k++)
		free(a[k]);
	free(a);
}

void **shs__per_instr(const shs_module *m, size_t size, bool edges, const shs__edges *x)
{
	void **out = calloc(m->n_comps + 1, sizeof(*out));
	bool ok = out != NULL;

	for (uint32_t k = 0; ok && k < m->n_comps; k++) {
		size_t n = edges ? x->base[k][m->comps[k]->n_instrs] : m->comps[k]->n_instrs;
		ok = (out[k] = calloc(n + 1, size)) != NULL;
	}
	if (!ok) {
		shs__per_instr_free(m, out);
		out = NULL;
	}
	return out;
}
