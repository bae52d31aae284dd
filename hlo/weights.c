/* Which values are the model's weights: traced from the entry's parameters through calls, loops
 * and views, so that an activation passed into a layer's computation is not mistaken for one. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "manual.h"
#include "weights.h"

/* A parameter's weight flag from its call sites: unknown until the first site, then the AND of
 * them all. Per computation, indexed by parameter number, or by tuple index for the tuple
 * parameter of a while body or condition. */
enum { UNSEEN = 0, YES = 1, NO = 2 };

struct shs_weights {
	shs_param_role *roles; /* the entry's (shs_entry_param_roles) */
	uint32_t n_comps;
	bool **w;          /* per computation and instruction */
	uint8_t **param;   /* per computation: flags of its parameters / loop tuple elements */
	uint32_t *n_param;
};

/* Whether in gives (part of) its first operand's data: a view, a slice, a conversion, or a
 * sharding custom-call (a Sharding constraint, shard_map's entry into its region: the same
 * data, pinned or seen locally). */
static bool is_view(const shs_instr *in)
{
	shs_opcode op = in->op;

	if (op == SHS_OP_CUSTOM_CALL && in->n_operands == 1)
		return shs_is_sharding_constraint(in) || shs_is_full_to_shard(in);
	return op == SHS_OP_CONVERT || op == SHS_OP_RESHAPE || op == SHS_OP_COPY ||
	       op == SHS_OP_DYNAMIC_SLICE || op == SHS_OP_BITCAST || op == SHS_OP_SLICE;
}

static void meet(shs_weights *x, uint32_t c, uint64_t k, bool w)
{
	if (c >= x->n_comps || k >= x->n_param[c])
		return;
	if (x->param[c][k] == UNSEEN || !w)
		x->param[c][k] = w ? YES : NO;
}

static bool param_flag(const shs_weights *x, uint32_t c, int64_t k)
{
	return k >= 0 && (uint64_t)k < x->n_param[c] && x->param[c][k] == YES;
}

/* Passes the weight flags of call site `in` (in computation c) to the computations it calls. */
static void pass_down(const shs_module *m, shs_weights *x, uint32_t c, const shs_instr *in)
{
	const shs_computation *comp = m->comps[c];

	if (in->op == SHS_OP_WHILE && in->n_called >= 1 && in->n_operands == 1) {
		const shs_instr *init = comp->instrs[in->operands[0]];
		const shs_computation *body = m->comps[in->called[0]];
		for (uint32_t k = 0; k < x->n_param[in->called[0]]; k++) {
			bool w = init->op == SHS_OP_TUPLE && k < init->n_operands ?
					 x->w[c][init->operands[k]] : false;
			w = w && shs_while_keeps(body, k);
			for (uint32_t b = 0; b < in->n_called; b++)
				meet(x, in->called[b], k, w);
		}
		return;
	}
	for (uint32_t b = 0; b < in->n_called; b++)
		for (uint32_t k = 0; k < in->n_operands; k++)
			meet(x, in->called[b], k, x->w[c][in->operands[k]]);
}

/* roles: the entry's (shs_entry_param_roles), or NULL when no parameter is a weight by how the
 * step uses it (a forward pass alone: then every parameter is taken for one). */
static void mark(const shs_module *m, shs_weights *x, uint32_t c, bool entry, bool loop,
		 const shs_param_role *roles)
{
	const shs_computation *comp = m->comps[c];

	for (uint32_t v = 0; v < comp->n_instrs; v++) {
		const shs_instr *in = comp->instrs[v];
		bool w = false;
		if (in->op == SHS_OP_PARAMETER && entry)
			w = !roles || roles[v] != SHS_PARAM_INPUT;
		else if (in->op == SHS_OP_PARAMETER)
			w = !loop && param_flag(x, c, in->parameter_number);
		else if (in->op == SHS_OP_GET_TUPLE_ELEMENT && in->n_operands == 1 && loop &&
			 comp->instrs[in->operands[0]]->op == SHS_OP_PARAMETER)
			w = param_flag(x, c, in->tuple_index);
		else if ((is_view(in) || in->op == SHS_OP_GET_TUPLE_ELEMENT) && in->n_operands)
			w = x->w[c][in->operands[0]];
		x->w[c][v] = w;
		if (in->n_called)
			pass_down(m, x, c, in);
	}
}

/* Callers before callees: the reverse of a post-order from the entry. */
static uint32_t order(const shs_module *m, uint32_t c, bool *seen, uint32_t *out, uint32_t n,
		      uint32_t depth)
{
	if (seen[c] || depth > SHS_MAX_CALL_DEPTH)
		return n;
	seen[c] = true;
	for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
		const shs_instr *in = m->comps[c]->instrs[i];
		for (uint32_t b = 0; b < in->n_called; b++)
			if (in->called[b] < m->n_comps)
				n = order(m, in->called[b], seen, out, n, depth + 1);
	}
	out[n++] = c;
	return n;
}

int shs_weights_make(const shs_module *m, shs_weights **out, shs_err *e)
{
	shs_weights *x = calloc(1, sizeof(*x));
	uint32_t *post = calloc(m->n_comps + 1, sizeof(*post)), n = 0;
	bool *seen = calloc(m->n_comps + 1, sizeof(*seen));
	bool *loop = calloc(m->n_comps + 1, sizeof(*loop)), ok, training = false;
	shs_param_role *roles = NULL;

	*out = NULL;
	ok = x && post && seen && loop && (x->w = calloc(m->n_comps + 1, sizeof(*x->w))) &&
	     (x->param = calloc(m->n_comps + 1, sizeof(*x->param))) &&
	     (x->n_param = calloc(m->n_comps + 1, sizeof(*x->n_param)));
	if (x)
		x->n_comps = ok ? m->n_comps : 0;
	for (uint32_t c = 0; ok && c < m->n_comps; c++) {
		const shs_computation *comp = m->comps[c];
		uint32_t np = comp->n_instrs; /* parameters and tuple elements are fewer */
		x->n_param[c] = np;
		ok = (x->w[c] = calloc(comp->n_instrs + 1, sizeof(bool))) &&
		     (x->param[c] = calloc(np + 1, 1));
	}
	for (uint32_t c = 0; ok && c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			const shs_instr *in = m->comps[c]->instrs[i];
			for (uint32_t b = 0; in->op == SHS_OP_WHILE && b < in->n_called; b++)
				if (in->called[b] < m->n_comps)
					loop[in->called[b]] = true; /* body and condition */
		}
	ok = ok && (roles = shs_entry_param_roles(m));
	for (uint32_t i = 0; ok && i < m->comps[m->entry]->n_instrs; i++)
		training = training || roles[i] == SHS_PARAM_WEIGHT;
	if (ok) {
		n = order(m, m->entry, seen, post, 0, 0);
		for (uint32_t k = n; k-- > 0;)
			mark(m, x, post[k], post[k] == m->entry, loop[post[k]],
			     training ? roles : NULL);
	}
	if (x)
		x->roles = roles;
	else
		free(roles);
	free(post);
	free(seen);
	free(loop);
	if (!ok) {
		shs_weights_free(x);
		return shs_seterr(e, SHS_ENOMEM, "weights: out of memory");
	}
	*out = x;
	return SHS_OK;
}

void shs_weights_free(shs_weights *x)
{
	for (uint32_t c = 0; x && c < x->n_comps; c++) {
		free(x->w[c]);
		free(x->param[c]);
	}
	if (x) {
		free(x->roles);
		free(x->w);
		free(x->param);
		free(x->n_param);
	}
	free(x);
}

bool shs_is_weight(const shs_weights *x, uint32_t c, uint32_t v)
{
	return x && c < x->n_comps && x->w[c][v];
}

const shs_param_role *shs_weights_roles(const shs_weights *x)
{
	return x ? x->roles : NULL;
}
