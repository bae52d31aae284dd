/* All-reduces sunk out of while loops, as XLA's WhileLoopAllReduceCodeMotion does on GPUs.
 *
 * The GPU compiler's collective optimizations (gpu_compiler.cc) run that pass: an all-reduce in
 * a loop body whose result the body only adds into a carried buffer (through converts,
 * bitcasts, reshapes, transposes or copies) moves out of the loop: the body accumulates the
 * unreduced values and one all-reduce of the buffer follows the loop. Reduce-scatters move only
 * under xla_gpu_enable_while_loop_reduce_scatter_code_motion (off by default), so they stay.
 * Gradient accumulation over micro-batches with the weights replicated over a data axis thus
 * all-reduces each gradient once per step, not once per micro-batch. Calls are inlined before
 * the pass runs, so an all-reduce in a computation the body calls (once in the module) whose
 * value the call returns into the accumulation moves too. The buffer must be a
 * parameter tuple element of the body, returned at the same index, read nowhere else in the
 * body nor in the condition (the pass's conditions 2 and 3). TPUs' compiler is not public:
 * there the all-reduces stay in the loop. */
#include <stdlib.h>

#include "evaluate_internal.h"
#include "users.h"

bool shs__forwards(const shs_instr *in)
{
	return in->n_operands == 1 &&
	       (in->op == SHS_OP_CONVERT || in->op == SHS_OP_BITCAST || in->op == SHS_OP_RESHAPE ||
		in->op == SHS_OP_TRANSPOSE || in->op == SHS_OP_COPY);
}

/* From v, through forwarding ops each its producer's only user, to the last of them. */
static uint32_t forward_chain(const shs_computation *c, const shs_users *u, uint32_t v)
{
	while (shs_users_count(u, v) == 1 && shs__forwards(c->instrs[u->list[u->first[v]]]))
		v = u->list[u->first[v]];
	return v;
}

/* How many get-tuple-elements of comp's parameter 0 read index k. */
static uint32_t reads_of(const shs_computation *comp, int64_t k)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		n += in->op == SHS_OP_GET_TUPLE_ELEMENT && in->tuple_index == k && in->n_operands &&
		     comp->instrs[in->operands[0]]->op == SHS_OP_PARAMETER;
	}
	return n;
}

/* Whether value v of body (an instruction's result) is only accumulated into a carried buffer:
 * v -> forwarding ops -> add(buffer, .) -> forwarding ops -> root tuple at index k, the buffer
 * get-tuple-element k of the body's parameter (through forwarding ops), read only there and
 * not by the condition. */
static bool accumulated(const shs_computation *body, const shs_computation *cond,
			const shs_users *u, uint32_t v)
{
	const shs_instr *root = body->instrs[body->root], *add, *buf;
	uint32_t a = forward_chain(body, u, v), other, out, uses = 0;
	int64_t k = -1;

	if (shs_users_count(u, a) != 1 || root->op != SHS_OP_TUPLE)
		return false;
	add = body->instrs[u->list[u->first[a]]];
	if (add->op != SHS_OP_ADD || add->n_operands != 2)
		return false;
	other = add->operands[add->operands[0] == a ? 1 : 0];
	while (shs__forwards(body->instrs[other]) && shs_users_count(u, other) == 1)
		other = body->instrs[other]->operands[0];
	buf = body->instrs[other];
	if (buf->op != SHS_OP_GET_TUPLE_ELEMENT || shs_users_count(u, other) != 1 ||
	    body->instrs[buf->operands[0]]->op != SHS_OP_PARAMETER)
		return false;
	out = forward_chain(body, u, u->list[u->first[a]]);
	for (uint32_t j = 0; j < root->n_operands; j++)
		if (root->operands[j] == out) {
			k = (int64_t)j;
			uses++;
		}
	return uses == 1 && shs_users_count(u, out) == 1 && k == buf->tuple_index &&
	       reads_of(body, k) == 1 && (!cond || reads_of(cond, k) == 0);
}

/* Whether decision d has an own all-reduce. */
static bool all_reduces(const shs_decision *d)
{
	for (uint32_t k = 0; k < d->n_colls; k++)
		if (d->colls[k].kind == SHS_PCOLL_ALL_REDUCE)
			return true;
	return false;
}

/* Element j of a call's result as its callee (called once in the module: callers[callee] ==
 * 1) makes it: the instruction behind its root tuple's operand j through forwarding ops, each
 * its producer's only user; false when there is no such instruction. */
static bool returned(const shs_module *m, const uint32_t *callers, const shs_instr *call,
		     int64_t j, uint32_t *callee, uint32_t *instr)
{
	const shs_computation *c;
	const shs_instr *root;
	uint32_t v;
	shs_users u = { 0 };
	bool ok;

	if (call->op != SHS_OP_CALL || call->n_called != 1 || call->called[0] >= m->n_comps ||
	    callers[call->called[0]] != 1)
		return false;
	c = m->comps[call->called[0]];
	root = c->instrs[c->root];
	if (root->op != SHS_OP_TUPLE || j < 0 || (uint64_t)j >= root->n_operands)
		return false;
	if (shs_users_make(c, &u) != SHS_OK)
		return false;
	v = root->operands[j];
	while (shs__forwards(c->instrs[v]) && shs_users_count(&u, v) == 1)
		v = c->instrs[v]->operands[0];
	ok = shs_users_count(&u, v) == 1;
	shs_users_free(&u);
	*callee = call->called[0];
	*instr = v;
	return ok;
}

/* Marks in sunk the instructions of loop w's body, and of the computations it calls, whose
 * all-reduces the pass moves. */
static int mark_loop(const shs_module *m, const shs_plan *p, const uint32_t *callers,
		     const shs_instr *w, bool **sunk)
{
	uint32_t b = w->called[0], callee, at;
	const shs_computation *body = m->comps[b];
	const shs_computation *cond = w->n_called > 1 ? m->comps[w->called[1]] : NULL;
	shs_users u = { 0 };

	if (shs_users_make(body, &u) != SHS_OK)
		return SHS_ENOMEM;
	for (uint32_t i = 0; i < body->n_instrs; i++) {
		const shs_instr *in = body->instrs[i];
		if (p->d[b][i].set && all_reduces(&p->d[b][i]) && accumulated(body, cond, &u, i))
			sunk[b][i] = true;
		/* the accumulation first: it rules out most elements without looking into the
		 * callee */
		if (in->op == SHS_OP_GET_TUPLE_ELEMENT && in->n_operands &&
		    accumulated(body, cond, &u, i) &&
		    returned(m, callers, body->instrs[in->operands[0]], in->tuple_index, &callee,
			     &at) &&
		    p->d[callee][at].set && all_reduces(&p->d[callee][at]))
			sunk[callee][at] = true;
	}
	shs_users_free(&u);
	return SHS_OK;
}

/* How many instructions of m call each computation (any kind of call). */
static uint32_t *count_callers(const shs_module *m)
{
	uint32_t *n = calloc(m->n_comps + 1, sizeof(*n));

	for (uint32_t k = 0; n && k < m->n_comps; k++)
		for (uint32_t i = 0; i < m->comps[k]->n_instrs; i++)
			for (uint32_t j = 0; j < m->comps[k]->instrs[i]->n_called; j++)
				if (m->comps[k]->instrs[i]->called[j] < m->n_comps)
					n[m->comps[k]->instrs[i]->called[j]]++;
	return n;
}

int shs__sunk_make(const shs_module *m, const shs_plan *p, const shs_cluster *c, bool ***out,
		   shs_err *e)
{
	bool **sunk = NULL;
	uint32_t *callers = NULL;
	int rc = SHS_OK;

	*out = NULL;
	if (!c->hw.gpu)
		return SHS_OK;
	for (uint32_t k = 0; k < m->n_comps && rc == SHS_OK; k++)
		for (uint32_t i = 0; i < m->comps[k]->n_instrs && rc == SHS_OK; i++) {
			const shs_instr *w = m->comps[k]->instrs[i];
			if (w->op != SHS_OP_WHILE || !w->n_called || w->called[0] >= m->n_comps)
				continue;
			if (!sunk && !(sunk = (bool **)shs__per_instr(m, sizeof(bool), false, NULL)))
				rc = SHS_ENOMEM;
			if (rc == SHS_OK && !callers && !(callers = count_callers(m)))
				rc = SHS_ENOMEM;
			if (rc == SHS_OK)
				rc = mark_loop(m, p, callers, w, sunk);
		}
	free(callers);
	if (rc != SHS_OK) {
		if (sunk)
			shs__per_instr_free(m, (void **)sunk);
		return shs_seterr(e, SHS_ENOMEM, "evaluate: out of memory");
	}
	*out = sunk;
	return SHS_OK;
}

bool shs__sunk(bool *const *sunk, uint32_t c, uint32_t i, const shs_coll *coll)
{
	return sunk && sunk[c][i] && coll->kind == SHS_PCOLL_ALL_REDUCE;
}
