/* What each entry parameter is to the training step, by how the step uses it: weights,
 * optimizer state, or inputs (weights.h). */
#include <stdlib.h>

#include "analysis.h"
#include "elem.h"
#include "users.h"
#include "weights.h"

/* Whether value v of c flows into what only a model's weight does in a step: a matmul or
 * convolution, a gather's table, or a layer (a call, loop or conditional, or a tuple that one
 * takes), through whatever computes on the way but the root (a norm's scale multiplies the
 * activation a matmul reads; Adam's moments flow only into their update and the weight's,
 * which the root returns). seen, stack: per instruction, as mark_updated's. */
static bool feeds_the_model(const shs_computation *c, const shs_users *u, uint32_t v,
			    uint32_t stamp, uint32_t *seen, uint32_t *stack)
{
	uint32_t n = 0;

	stack[n++] = v;
	seen[v] = stamp;
	while (n) {
		uint32_t x = stack[--n];
		for (uint32_t k = u->first[x]; k < u->first[x + 1]; k++) {
			uint32_t y = u->list[k];
			const shs_instr *in = c->instrs[y];
			if (y == c->root || seen[y] == stamp)
				continue;
			switch (in->op) {
			case SHS_OP_DOT: case SHS_OP_CONVOLUTION: case SHS_OP_CALL:
			case SHS_OP_WHILE: case SHS_OP_CONDITIONAL: case SHS_OP_TUPLE:
				return true;
			case SHS_OP_GATHER:
				if (in->n_operands && in->operands[0] == x)
					return true;
				break;
			default:
				break;
			}
			seen[y] = stamp;
			stack[n++] = y;
		}
	}
	return false;
}

/* Marks in *updated the float parameters of c of the shape and type of root element r that r
 * is computed from (an optimizer's update writes them back); seen: per instruction, the last
 * element that visited it (stamp), stack: room for every instruction. */
static void mark_updated(const shs_computation *c, uint32_t r, uint32_t stamp, uint32_t *seen,
			 uint32_t *stack, bool *updated)
{
	const shs_shape *want = &c->instrs[r]->shape;
	uint32_t n = 0;

	stack[n++] = r;
	seen[r] = stamp;
	while (n) {
		const shs_instr *in = c->instrs[stack[--n]];
		if (in->op == SHS_OP_PARAMETER) {
			updated[stack[n]] |= shs_shape_equal(&in->shape, want);
			continue;
		}
		for (uint32_t k = 0; k < in->n_operands; k++)
			if (seen[in->operands[k]] != stamp) {
				seen[in->operands[k]] = stamp;
				stack[n++] = in->operands[k];
			}
	}
}

/* Per entry instruction: whether the step returns it updated: aliased to an output, or, in a
 * module that aliases nothing (a step jitted without donation), a root element of its shape
 * computed from it; NULL when out of memory. A module's aliases are its word: the walk back
 * from every root element is skipped where there are any. */
static bool *updated_params(const shs_module *m, const shs_computation *c)
{
	bool *out = shs_entry_returned_params(m);
	uint32_t *seen = calloc(c->n_instrs + 1, sizeof(*seen));
	uint32_t *stack = malloc((c->n_instrs + 1) * sizeof(*stack));
	const shs_instr *root = c->instrs[c->root];

	if (out && seen && stack && root->op == SHS_OP_TUPLE && !m->n_aliases)
		for (uint32_t k = 0; k < root->n_operands; k++) {
			const shs_shape *s = &c->instrs[root->operands[k]]->shape;
			if (s->type != SHS_TUPLE && s->rank && shs_elem_is_float(s->type))
				mark_updated(c, root->operands[k], k + 1, seen, stack, out);
		}
	free(seen);
	free(stack);
	if (!seen || !stack) {
		free(out);
		return NULL;
	}
	return out;
}

shs_param_role *shs_entry_param_roles(const shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);
	shs_param_role *roles;
	uint32_t *seen = NULL, *stack = NULL;
	shs_users u = { 0 };
	bool *updated = NULL;
	bool ok;

	if (!c || !(roles = calloc(c->n_instrs + 1, sizeof(*roles))))
		return NULL;
	ok = (updated = updated_params(m, c)) && (seen = calloc(c->n_instrs + 1, sizeof(*seen))) &&
	     (stack = malloc((c->n_instrs + 1) * sizeof(*stack))) && shs_users_make(c, &u) == SHS_OK;
	for (uint32_t i = 0; ok && i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		if (in->op != SHS_OP_PARAMETER || !updated[i] || in->shape.type == SHS_TUPLE ||
		    !in->shape.rank || !shs_elem_is_float(in->shape.type))
			continue;
		roles[i] = feeds_the_model(c, &u, i, i + 1, seen, stack) ? SHS_PARAM_WEIGHT :
									     SHS_PARAM_OPT_STATE;
	}
	if (ok)
		shs_users_free(&u);
	free(updated);
	free(seen);
	free(stack);
	if (!ok) {
		free(roles);
		return NULL;
	}
	return roles;
}
