/* Trip counts, dot FLOPs and counts over a module. */
#include "analysis.h"

#include <stdlib.h>
#include <string.h>

/* The integer value of a scalar integer constant, when i is one. */
static bool int_constant(const shs_instr *i, int64_t *v)
{
	const shs_literal *l = i->literal;
	int bytes;

	if (i->op != SHS_OP_CONSTANT || !l || l->elided || i->shape.rank != 0)
		return false;
	if (!shs_elem_is_signed_int(i->shape.type) && !shs_elem_is_unsigned_int(i->shape.type))
		return false;
	bytes = shs_elem_bytes(i->shape.type);
	if (l->size != (size_t)bytes || bytes > 8)
		return false;
	uint64_t u = 0;
	for (int k = 0; k < bytes; k++)
		u |= (uint64_t)l->data[k] << (8 * k);
	if (shs_elem_is_signed_int(i->shape.type) && bytes < 8 && (u >> (8 * bytes - 1)) & 1)
		u |= ~(uint64_t)0 << (8 * bytes); /* sign-extend */
	*v = (int64_t)u;
	return true;
}

/* True when i is get-tuple-element(k) of the computation's parameter 0. */
static bool is_param_element(const shs_computation *c, const shs_instr *i, int64_t *k)
{
	const shs_instr *p;

	if (i->op != SHS_OP_GET_TUPLE_ELEMENT || i->n_operands != 1)
		return false;
	p = c->instrs[i->operands[0]];
	if (p->op != SHS_OP_PARAMETER || p->parameter_number != 0)
		return false;
	*k = i->tuple_index;
	return true;
}

/* The step the body adds to tuple element k each iteration (negative for subtract). */
static bool body_step(const shs_computation *body, int64_t k, int64_t *step)
{
	const shs_instr *root = body->instrs[body->root];
	const shs_instr *upd, *x, *y;
	int64_t kk, v;

	if (root->op != SHS_OP_TUPLE || k < 0 || (uint64_t)k >= root->n_operands)
		return false;
	upd = body->instrs[root->operands[k]];
	if ((upd->op != SHS_OP_ADD && upd->op != SHS_OP_SUBTRACT) || upd->n_operands != 2)
		return false;
	x = body->instrs[upd->operands[0]];
	y = body->instrs[upd->operands[1]];
	if (upd->op == SHS_OP_ADD && int_constant(x, &v) && is_param_element(body, y, &kk) && kk == k) {
		*step = v;
		return true;
	}
	if (!is_param_element(body, x, &kk) || kk != k || !int_constant(y, &v))
		return false;
	if (upd->op == SHS_OP_SUBTRACT && v == INT64_MIN)
		return false; /* its negation does not fit */
	*step = upd->op == SHS_OP_ADD ? v : -v;
	return true;
}

/* ceil(span / step) for span >= 1 and step >= 1, as an int64_t; -1 when it does not fit. */
static int64_t ceil_div(uint64_t span, uint64_t step)
{
	uint64_t n = (span - 1) / step + 1;

	return n > (uint64_t)INT64_MAX ? -1 : (int64_t)n;
}

/* Iterations of `for (i = init; i OP limit; i += step)`, or -1 when it never ends or counts
 * past what an int64_t holds. Exact for every int64_t init, limit and step: the differences
 * are taken unsigned, where they cannot overflow. */
static int64_t count_iterations(int64_t init, int64_t limit, int64_t step, const char *dir)
{
	if (!strcmp(dir, "LE")) { /* i <= INT64_MAX holds for every i */
		if (__builtin_add_overflow(limit, 1, &limit))
			return -1;
		dir = "LT";
	} else if (!strcmp(dir, "GE")) {
		if (__builtin_sub_overflow(limit, 1, &limit))
			return -1;
		dir = "GT";
	}
	if (!strcmp(dir, "LT")) {
		if (init >= limit)
			return 0;
		return step > 0 ? ceil_div((uint64_t)limit - (uint64_t)init, (uint64_t)step) : -1;
	}
	if (!strcmp(dir, "GT")) {
		if (init <= limit)
			return 0;
		/* -step without overflow: -(step + 1) + 1 */
		return step < 0 ? ceil_div((uint64_t)init - (uint64_t)limit,
					   (uint64_t)(-(step + 1)) + 1) : -1;
	}
	if (!strcmp(dir, "NE")) {
		uint64_t span = limit >= init ? (uint64_t)limit - (uint64_t)init :
						(uint64_t)init - (uint64_t)limit;
		uint64_t mag = step >= 0 ? (uint64_t)step : (uint64_t)(-(step + 1)) + 1;
		/* the step must head for the limit and land on it */
		if (step == 0 || (limit >= init) != (step > 0) || span % mag)
			return limit == init ? 0 : -1;
		return span / mag > (uint64_t)INT64_MAX ? -1 : (int64_t)(span / mag);
	}
	return -1;
}

bool shs_while_trip_count(const shs_module *m, const shs_computation *c, const shs_instr *w,
			  int64_t *trips)
{
	const shs_computation *body, *cond;
	const shs_instr *cmp, *lhs, *rhs, *init_tuple, *init;
	const char *dir;
	int64_t k, limit, start, step, n;
	bool swapped = false;

	if (w->op != SHS_OP_WHILE || w->n_called < 2 || w->n_operands != 1)
		return false;
	body = m->comps[w->called[0]];
	cond = m->comps[w->called[1]];
	cmp = cond->instrs[cond->root];
	if (cmp->op != SHS_OP_COMPARE || cmp->n_operands != 2 || !cmp->comparison_direction)
		return false;
	lhs = cond->instrs[cmp->operands[0]];
	rhs = cond->instrs[cmp->operands[1]];
	if (!is_param_element(cond, lhs, &k) || !int_constant(rhs, &limit)) {
		if (!is_param_element(cond, rhs, &k) || !int_constant(lhs, &limit))
			return false;
		swapped = true;
	}
	dir = cmp->comparison_direction;
	if (swapped) { /* limit OP i  ==  i OP' limit */
		if (!strcmp(dir, "LT"))
			dir = "GT";
		else if (!strcmp(dir, "GT"))
			dir = "LT";
		else if (!strcmp(dir, "LE"))
			dir = "GE";
		else if (!strcmp(dir, "GE"))
			dir = "LE";
	}
	init_tuple = c->instrs[w->operands[0]];
	if (init_tuple->op != SHS_OP_TUPLE || k < 0 || (uint64_t)k >= init_tuple->n_operands)
		return false;
	init = c->instrs[init_tuple->operands[k]];
	if (!int_constant(init, &start) || !body_step(body, k, &step))
		return false;
	n = count_iterations(start, limit, step, dir);
	if (n < 0)
		return false;
	*trips = n;
	return true;
}

double shs_dot_flops(const shs_computation *c, const shs_instr *i)
{
	const shs_instr *lhs;
	double flops;
	int64_t n;

	if (i->op != SHS_OP_DOT || !i->dot || i->n_operands < 2)
		return 0;
	lhs = c->instrs[i->operands[0]];
	n = shs_shape_elements(&i->shape);
	if (n < 0)
		return 0;
	flops = 2.0 * (double)n;
	for (uint32_t k = 0; k < i->dot->lhs_contracting.n; k++) {
		int64_t d = i->dot->lhs_contracting.v[k];

		if (d < 0 || (uint64_t)d >= lhs->shape.rank)
			return 0;
		flops *= (double)lhs->shape.dims[d];
	}
	return flops;
}

/* Dot FLOPs and unknown loops of one computation, given those of every computation before it.
 * A callee not before its caller (a module that was not verified) counts as an unknown loop
 * and adds nothing, so the walk can neither recurse nor loop. */
typedef struct comp_cost {
	double flops;
	uint32_t unknown;
} comp_cost;

static comp_cost own_cost(const shs_module *m, uint32_t k, const comp_cost *done)
{
	const shs_computation *c = m->comps[k];
	comp_cost total = { 0, 0 };

	for (uint32_t j = 0; j < c->n_instrs; j++) {
		const shs_instr *i = c->instrs[j];
		double scale = 1, best = 0;
		int64_t trips;

		if (i->op == SHS_OP_DOT) {
			total.flops += shs_dot_flops(c, i);
			continue;
		}
		if (i->op != SHS_OP_WHILE && i->op != SHS_OP_CONDITIONAL && i->op != SHS_OP_CALL &&
		    i->op != SHS_OP_FUSION && i->op != SHS_OP_ASYNC_START)
			continue;
		if (i->op == SHS_OP_WHILE) {
			if (shs_while_trip_count(m, c, i, &trips))
				scale = (double)trips;
			else
				total.unknown++;
		}
		/* a while runs its body (called[0]); a conditional its most expensive branch; the rest
		 * all their callees */
		for (uint32_t b = 0; b < i->n_called && !(i->op == SHS_OP_WHILE && b > 0); b++) {
			uint32_t callee = i->called[b];

			if (callee >= k) {
				total.unknown++;
				continue;
			}
			total.unknown += done[callee].unknown;
			if (i->op == SHS_OP_CONDITIONAL)
				best = done[callee].flops > best ? done[callee].flops : best;
			else
				total.flops += scale * done[callee].flops;
		}
		total.flops += best;
	}
	return total;
}

double shs_comp_dot_flops(const shs_module *m, const shs_computation *c, uint32_t *unknown_loops)
{
	comp_cost *done = calloc(m->n_comps ? m->n_comps : 1, sizeof(*done));
	double flops = -1;

	if (unknown_loops)
		*unknown_loops = 0;
	if (!done)
		return -1;
	/* each computation once, callees first: linear in the module's size */
	for (uint32_t k = 0; k < m->n_comps; k++) {
		done[k] = own_cost(m, k, done);
		if (m->comps[k] == c) {
			flops = done[k].flops;
			if (unknown_loops)
				*unknown_loops = done[k].unknown;
			break;
		}
	}
	free(done);
	return flops;
}

uint32_t shs_token_param(const shs_module *m)
{
	const shs_computation *entry = shs_module_entry(m);

	for (uint32_t i = 0; entry && i < entry->n_instrs; i++) {
		const shs_instr *in = entry->instrs[i];
		if (in->op == SHS_OP_PARAMETER && in->shape.type != SHS_TUPLE &&
		    in->shape.rank >= 2 && !shs_elem_is_float(in->shape.type))
			return i;
	}
	return UINT32_MAX;
}

int64_t shs_entry_param_bytes(const shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);
	int64_t total = 0;

	if (!c)
		return 0;
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		int64_t b;

		if (c->instrs[j]->op != SHS_OP_PARAMETER)
			continue;
		b = shs_shape_bytes(&c->instrs[j]->shape);
		if (b < 0 || total > INT64_MAX - b)
			return -1;
		total += b;
	}
	return total;
}

bool *shs_entry_returned_params(const shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);
	bool *by_number, *out;

	if (!c)
		return NULL;
	by_number = calloc(c->n_instrs + 1, sizeof(*by_number));
	out = calloc(c->n_instrs + 1, sizeof(*out));
	for (uint32_t a = 0; by_number && out && a < m->n_aliases; a++)
		if (m->aliases[a].param_number >= 0 &&
		    m->aliases[a].param_number < (int64_t)c->n_instrs &&
		    !m->aliases[a].param_index.n)
			by_number[m->aliases[a].param_number] = true;
	for (uint32_t i = 0; by_number && out && i < c->n_instrs; i++)
		out[i] = c->instrs[i]->op == SHS_OP_PARAMETER &&
			 c->instrs[i]->parameter_number >= 0 &&
			 c->instrs[i]->parameter_number < (int64_t)c->n_instrs &&
			 by_number[c->instrs[i]->parameter_number];
	free(by_number);
	if (!by_number) {
		free(out);
		return NULL;
	}
	return out;
}

uint64_t shs_opcode_histogram(const shs_module *m, uint64_t counts[SHS_OP_COUNT])
{
	uint64_t total = 0;

	memset(counts, 0, SHS_OP_COUNT * sizeof(*counts));
	for (uint32_t k = 0; k < m->n_comps; k++)
		for (uint32_t j = 0; j < m->comps[k]->n_instrs; j++) {
			counts[m->comps[k]->instrs[j]->op]++;
			total++;
		}
	return total;
}

bool shs_while_keeps(const shs_computation *body, int64_t k)
{
	const shs_instr *root = body->instrs[body->root], *g;

	if (root->op != SHS_OP_TUPLE || k < 0 || (uint64_t)k >= root->n_operands)
		return false;
	g = body->instrs[root->operands[k]];
	return g->op == SHS_OP_GET_TUPLE_ELEMENT && g->tuple_index == k && g->n_operands == 1 &&
	       body->instrs[g->operands[0]]->op == SHS_OP_PARAMETER;
}
