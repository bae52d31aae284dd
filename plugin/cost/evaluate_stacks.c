/* A scanned loop's stacks: the elements of a counted while loop's state that its body fills or
 * reads one slot per trip (JAX's scan: the ys it writes with dynamic-update-slice, the xs it
 * reads with dynamic-slice), so that memory can count each at its live size, as the unrolled
 * layers hold the same values. */
#include <stdlib.h>

#include "analysis.h"
#include "evaluate_internal.h"

/* True when instruction g of body is element k of the body's parameter. */
static bool is_element(const shs_computation *body, const shs_instr *g, int64_t k)
{
	return g->op == SHS_OP_GET_TUPLE_ELEMENT && g->tuple_index == k && g->n_operands == 1 &&
	       body->instrs[g->operands[0]]->op == SHS_OP_PARAMETER;
}

/* The fraction of a stack's leading dimension a slot of it covers, 0 when it is not a slot. */
static double slot_of(const shs_shape *slot, const shs_shape *stack)
{
	if (!slot->rank || slot->rank != stack->rank || stack->dims[0] <= 0 ||
	    slot->dims[0] <= 0 || slot->dims[0] >= stack->dims[0])
		return 0;
	return (double)slot->dims[0] / (double)stack->dims[0];
}

/* Element k written: the root's element is a dynamic-update-slice of the element itself. */
static double written_slot(const shs_computation *body, const shs_instr *root, uint32_t k)
{
	const shs_instr *u = body->instrs[root->operands[k]];

	if (u->op != SHS_OP_DYNAMIC_UPDATE_SLICE || u->n_operands < 2 ||
	    !is_element(body, body->instrs[u->operands[0]], k))
		return 0;
	return slot_of(&body->instrs[u->operands[1]]->shape, &u->shape);
}

/* Marks read-only the elements the root passes through, then unmarks each one the body uses
 * other than as the stack of a dynamic-slice, keeping the largest slice. */
static void read_slots(const shs_computation *body, const shs_instr *root, shs__stack *s)
{
	uint32_t n = root->n_operands;

	for (uint32_t k = 0; k < n; k++)
		if (s[k].kind == SHS__STACK_NONE && shs_while_keeps(body, k))
			s[k].kind = SHS__STACK_READ;
	for (uint32_t u = 0; u < body->n_instrs; u++) {
		const shs_instr *in = body->instrs[u];
		if (in == root)
			continue;
		for (uint32_t p = 0; p < in->n_operands; p++) {
			const shs_instr *g = body->instrs[in->operands[p]];
			double slot;
			if (g->op != SHS_OP_GET_TUPLE_ELEMENT || g->tuple_index < 0 ||
			    (uint64_t)g->tuple_index >= n || !is_element(body, g, g->tuple_index))
				continue;
			shs__stack *e = &s[g->tuple_index];
			if (e->kind != SHS__STACK_READ)
				continue;
			slot = in->op == SHS_OP_DYNAMIC_SLICE && p == 0 ? slot_of(&in->shape, &g->shape)
									: 0;
			if (slot <= 0)
				e->kind = SHS__STACK_NONE;
			else if (slot > e->slot)
				e->slot = slot;
		}
	}
	for (uint32_t k = 0; k < n; k++)
		if (s[k].kind == SHS__STACK_READ && s[k].slot <= 0)
			s[k].kind = SHS__STACK_NONE; /* passed through, never read */
}

int shs__loop_stacks(const shs_module *m, uint32_t c, uint32_t i, int64_t *trips,
		     shs__stack **out)
{
	const shs_computation *comp = m->comps[c], *body;
	const shs_instr *in = comp->instrs[i], *root;
	shs__stack *s;

	*trips = 0;
	*out = NULL;
	if (in->op != SHS_OP_WHILE || in->n_called < 1 || in->called[0] >= m->n_comps ||
	    in->shape.type != SHS_TUPLE || !shs_while_trip_count(m, comp, in, trips) || *trips < 2)
		return SHS_OK;
	body = m->comps[in->called[0]];
	root = body->instrs[body->root];
	if (root->op != SHS_OP_TUPLE || root->n_operands != in->shape.n_tuple)
		return SHS_OK;
	s = calloc(root->n_operands + 1, sizeof(*s));
	if (!s)
		return SHS_ENOMEM;
	for (uint32_t k = 0; k < root->n_operands; k++) {
		s[k].slot = written_slot(body, root, k);
		s[k].kind = s[k].slot > 0 ? SHS__STACK_WRITTEN : SHS__STACK_NONE;
		s[k].update = root->operands[k];
	}
	read_slots(body, root, s);
	*out = s;
	return SHS_OK;
}
