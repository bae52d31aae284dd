/* What each value of the step holds of the batch: each computation analysed once per state of
 * its parameters, loops to a fixed point, and where each entry instruction runs (in the loop
 * over micro-batches, before it, or after it on the accumulated sums). */
#include <stdlib.h>
#include <string.h>

#include "microbatch_internal.h"

enum { MB_MAX_DEPTH = 64, MB_MAX_TRIPS = 16 };

int mb_fail(mb_ctx *x, const shs_computation *c, const shs_instr *i, const char *why)
{
	return shs_seterr(x->e, SHS_EINVAL, "micro-batches: %s %s of %s: %s", shs_opcode_name(i->op),
			  i->name ? i->name : "?", c->name ? c->name : "?", why);
}

bool mb_is_add_reducer(const shs_module *m, uint32_t c)
{
	const shs_computation *r;
	const shs_instr *root;

	if (c >= m->n_comps)
		return false;
	r = m->comps[c];
	root = r->instrs[r->root];
	return root->op == SHS_OP_ADD && root->n_operands == 2 &&
	       r->instrs[root->operands[0]]->op == SHS_OP_PARAMETER &&
	       r->instrs[root->operands[1]]->op == SHS_OP_PARAMETER;
}

static bool same_leaf(const mb_leaf *a, const mb_leaf *b)
{
	return a->kind == b->kind && a->dim == b->dim && a->zero == b->zero && a->free == b->free &&
	       a->scaled == b->scaled;
}

static void inst_free(mb_inst *I)
{
	if (!I)
		return;
	free(I->sig);
	free(I->first);
	free(I->leaf);
	free(I->op_first);
	free(I->need);
	free(I->call_first);
	free(I->callee);
	free(I->where);
	free(I->promo);
	free(I);
}

void mb_ctx_free(mb_ctx *x)
{
	for (uint32_t k = 0; k < x->n_inst; k++)
		inst_free(x->inst[k]);
	free(x->inst);
	x->inst = NULL;
	x->n_inst = x->cap = 0;
}

/* The instance already made of c under sig, or UINT32_MAX. */
static uint32_t find_inst(const mb_ctx *x, uint32_t c, const mb_leaf *sig, uint32_t n)
{
	for (uint32_t k = 0; k < x->n_inst; k++) {
		const mb_inst *I = x->inst[k];
		bool same = I->comp == c && I->n_sig == n;
		for (uint32_t j = 0; same && j < n; j++)
			same = same_leaf(&I->sig[j], &sig[j]);
		if (same)
			return k;
	}
	return UINT32_MAX;
}

/* Allocates instance k's tables (leaves, operand needs, callees) for computation c. */
static int inst_tables(mb_ctx *x, mb_inst *I, const shs_computation *c)
{
	uint64_t leaves = 0, needs = 0, calls = 0;

	I->first = malloc((c->n_instrs + 1) * sizeof(*I->first));
	I->op_first = malloc((c->n_instrs + 1) * sizeof(*I->op_first));
	I->call_first = malloc((c->n_instrs + 1) * sizeof(*I->call_first));
	if (!I->first || !I->op_first || !I->call_first)
		return shs_seterr(x->e, SHS_ENOMEM, "micro-batches: out of memory");
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *ins = c->instrs[i];
		uint32_t n = shs_shape_leaves(&ins->shape);
		if (n > SHS_MAX_VALUE_LEAVES)
			return mb_fail(x, c, ins, "too many tuple leaves");
		I->first[i] = (uint32_t)leaves;
		I->op_first[i] = (uint32_t)needs;
		I->call_first[i] = (uint32_t)calls;
		leaves += n;
		for (uint32_t k = 0; k < ins->n_operands; k++)
			needs += shs_shape_leaves(&c->instrs[ins->operands[k]]->shape);
		calls += ins->n_called;
		if (leaves >= UINT32_MAX / 2 || needs >= UINT32_MAX / 2)
			return mb_fail(x, c, ins, "too many values");
	}
	I->first[c->n_instrs] = (uint32_t)leaves;
	I->op_first[c->n_instrs] = (uint32_t)needs;
	I->call_first[c->n_instrs] = (uint32_t)calls;
	I->leaf = calloc(leaves + 1, sizeof(*I->leaf));
	I->need = malloc(needs + 1);
	I->callee = calloc(calls + 1, sizeof(*I->callee));
	I->where = calloc(c->n_instrs + 1, 1);
	I->promo = malloc(c->n_instrs + 1);
	if (!I->leaf || !I->need || !I->callee || !I->where || !I->promo)
		return shs_seterr(x->e, SHS_ENOMEM, "micro-batches: out of memory");
	memset(I->need, -1, needs + 1);
	memset(I->promo, -1, c->n_instrs + 1);
	return SHS_OK;
}

static void set_none(mb_inst *I, uint32_t i)
{
	for (uint32_t l = I->first[i]; l < I->first[i + 1]; l++)
		memset(&I->leaf[l], 0, sizeof(I->leaf[l]));
}

/* Whether any leaf of instruction i holds some of the batch (of kind, or any with 0). */
static bool holds(const mb_inst *I, uint32_t i, int kind)
{
	for (uint32_t l = I->first[i]; l < I->first[i + 1]; l++)
		if (kind ? I->leaf[l].kind == kind : I->leaf[l].kind != MB_NONE)
			return true;
	return false;
}

/* Whether entry instruction i, linear work on sums only, runs once after the loop on the
 * accumulated sums: the loop then accumulates the sums as they come out of the matmuls, reduces
 * and loops that make them, except before a convert to a wider type (JAX accumulates a bf16
 * gradient of an f32 weight in f32: the cast's gradient is in the scanned function) that is
 * what every use of the sum is (x->widen). */
static bool sums_after(const mb_ctx *x, const mb_inst *I, const shs_computation *c,
		       uint32_t i, bool batch_in)
{
	const shs_instr *ins = c->instrs[i];

	if (batch_in || !holds(I, i, MB_PARTIAL) || ins->n_called || ins->op == SHS_OP_PARAMETER)
		return false;
	if (ins->op == SHS_OP_CONVERT && ins->n_operands == 1 &&
	    x->widen[ins->operands[0]] != UINT32_MAX)
		return false;
	return true;
}

/* The scalar that operand o (run after the loop) is, alone or broadcast; UINT32_MAX when it is
 * neither. */
static uint32_t scalar_of(const mb_inst *I, const shs_computation *c, uint32_t o)
{
	const shs_instr *v = c->instrs[o];

	if (v->op == SHS_OP_BROADCAST && v->n_operands == 1 && !v->dimensions.n)
		o = v->operands[0];
	v = c->instrs[o];
	return I->where[o] == MB_AFTER && v->shape.type != SHS_TUPLE && !v->shape.rank ? o :
										  UINT32_MAX;
}

/* Whether entry instruction i multiplies work of the loop (a batch or a sum) by a scalar known
 * only after it (MaxText's loss divided by the whole batch's target-token count, whose
 * gradient scales the whole backward pass): the loop can run with 1 in its place and the sums
 * it makes of that work be scaled after it, the backward pass being linear in it. */
static bool deferrable(const mb_ctx *x, const mb_inst *I, const shs_computation *c, uint32_t i)
{
	const shs_instr *ins = c->instrs[i];
	uint32_t a, b, s;

	if (ins->op != SHS_OP_MULTIPLY || ins->n_operands != 2)
		return false;
	a = I->where[ins->operands[0]] == MB_AFTER ? 0 : 1;
	b = 1 - a;
	s = scalar_of(I, c, ins->operands[a]);
	return s != UINT32_MAX && I->where[ins->operands[b]] == MB_LOOP &&
	       I->leaf[I->first[ins->operands[b]]].kind != MB_NONE &&
	       !I->leaf[I->first[ins->operands[b]]].scaled &&
	       (x->scale == UINT32_MAX || x->scale == s);
}

/* Makes instruction i (deferrable) the loop's: its other operand's leaf, scaled. */
static int defer(mb_ctx *x, mb_inst *I, const shs_computation *c, uint32_t i)
{
	const shs_instr *ins = c->instrs[i];
	uint32_t a = I->where[ins->operands[0]] == MB_AFTER ? 0 : 1;

	x->scale = scalar_of(I, c, ins->operands[a]);
	x->deferred[i] = ins->operands[a];
	I->leaf[I->first[i]] = I->leaf[I->first[ins->operands[1 - a]]];
	I->leaf[I->first[i]].scaled = true;
	I->where[i] = MB_LOOP;
	return SHS_OK;
}

/* Entry instruction i: where it runs, and its leaves. */
static int place_entry(mb_ctx *x, uint32_t k, uint32_t i)
{
	mb_inst *I = x->inst[k];
	const shs_computation *c = x->m->comps[I->comp];
	const shs_instr *ins = c->instrs[i];
	bool after = false, loop = false, batch_in = false, nonlinear = false;
	int rc;

	for (uint32_t j = 0; j < ins->n_operands; j++) {
		uint32_t o = ins->operands[j];
		after |= I->where[o] == MB_AFTER;
		loop |= I->where[o] == MB_LOOP;
		batch_in |= I->where[o] == MB_LOOP && holds(I, o, MB_BATCH);
	}
	if (!after) {
		rc = mb_step(x, k, i, &nonlinear);
		if (rc != SHS_OK && !(nonlinear && !batch_in))
			return rc;
		after = rc != SHS_OK || (i == c->root && (loop || holds(I, i, 0))) ||
			sums_after(x, I, c, i, batch_in);
		loop = !after && (loop || holds(I, i, 0));
	}
	if (!after) {
		I->where[i] = loop ? MB_LOOP : MB_OUT;
		return SHS_OK;
	}
	if (batch_in && deferrable(x, I, c, i))
		return defer(x, I, c, i);
	/* after the loop, on what it accumulated: nothing per sequence may reach it */
	if (batch_in)
		return mb_fail(x, c, ins, "uses values of every sequence after what they sum to "
				  "(a value that needs the whole batch at once)");
	I->where[i] = MB_AFTER;
	set_none(I, i);
	memset(I->need + I->op_first[i], -1, I->op_first[i + 1] - I->op_first[i]);
	return SHS_OK;
}

/* Where each parameter's leaves start in the signature, by parameter number (caller frees);
 * NULL when out of memory. */
static uint32_t *param_offsets(const mb_inst *I, const shs_computation *c, uint32_t *n)
{
	uint32_t count = 0, *at;

	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER &&
		    c->instrs[i]->parameter_number >= (int64_t)count &&
		    c->instrs[i]->parameter_number < (int64_t)c->n_instrs)
			count = (uint32_t)c->instrs[i]->parameter_number + 1;
	at = calloc(count + 1, sizeof(*at));
	for (uint32_t i = 0; at && i < c->n_instrs; i++) {
		const shs_instr *p = c->instrs[i];
		if (p->op == SHS_OP_PARAMETER && p->parameter_number >= 0 &&
		    p->parameter_number + 1 < (int64_t)count + 1)
			at[p->parameter_number + 1] = I->first[i + 1] - I->first[i];
	}
	for (uint32_t k = 1; at && k <= count; k++)
		at[k] += at[k - 1];
	*n = count;
	return at;
}

static int analyse_pass(mb_ctx *x, uint32_t k, const uint32_t *at, uint32_t n_params)
{
	mb_inst *I = x->inst[k];
	const shs_computation *c = x->m->comps[I->comp];
	bool entry = I->comp == x->m->entry;
	int rc;

	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *ins = c->instrs[i];
		bool nonlinear = false;
		if (ins->op == SHS_OP_PARAMETER) {
			uint32_t from = ins->parameter_number >= 0 &&
					ins->parameter_number < (int64_t)n_params ?
					at[ins->parameter_number] : UINT32_MAX;
			if (from == UINT32_MAX || from + I->first[i + 1] - I->first[i] > I->n_sig)
				return mb_fail(x, c, ins, "parameters do not match the call");
			memcpy(I->leaf + I->first[i], I->sig + from,
			       (I->first[i + 1] - I->first[i]) * sizeof(*I->leaf));
			if (entry)
				I->where[i] = holds(I, i, 0) ? MB_LOOP : MB_OUT;
			continue;
		}
		rc = entry ? place_entry(x, k, i) : mb_step(x, k, i, &nonlinear);
		if (rc != SHS_OK)
			return rc;
		/* a value found to meet the batch takes it where it is made */
		if (I->promo[i] >= 0 && I->first[i + 1] - I->first[i] == 1 &&
		    I->leaf[I->first[i]].kind == MB_NONE) {
			I->leaf[I->first[i]] = (mb_leaf){ .kind = MB_BATCH, .dim = I->promo[i],
							  .zero = I->leaf[I->first[i]].zero };
			if (entry && I->where[i] == MB_OUT)
				I->where[i] = MB_LOOP;
		}
	}
	return SHS_OK;
}

/* Analyses instance k, again while it finds values to promote (each pass promotes more). */
static int analyse_body(mb_ctx *x, uint32_t k)
{
	mb_inst *I = x->inst[k];
	const shs_computation *c = x->m->comps[I->comp];
	uint32_t n_params = 0, *at = param_offsets(I, c, &n_params);
	int rc = at ? SHS_OK : shs_seterr(x->e, SHS_ENOMEM, "micro-batches: out of memory");

	for (uint32_t pass = 0; rc == SHS_OK && pass < MB_MAX_TRIPS; pass++) {
		I->again = false;
		if (I->comp == x->m->entry) {
			x->scale = UINT32_MAX;
			memset(x->deferred, 0xff, (c->n_instrs + 1) * sizeof(*x->deferred));
		}
		memset(I->leaf, 0, I->first[c->n_instrs] * sizeof(*I->leaf));
		memset(I->need, -1, I->op_first[c->n_instrs]);
		memset(I->where, 0, c->n_instrs);
		rc = analyse_pass(x, k, at, n_params);
		if (rc != SHS_OK || !I->again)
			break;
	}
	free(at);
	return rc;
}

int mb_analyse(mb_ctx *x, uint32_t c, const mb_leaf *sig, uint32_t n, uint32_t *out)
{
	uint32_t k = find_inst(x, c, sig, n);
	mb_inst *I;
	int rc;

	if (k != UINT32_MAX) {
		if (!x->inst[k]->done)
			return shs_seterr(x->e, SHS_EINVAL, "micro-batches: computation %s calls "
					  "itself", x->m->comps[c]->name);
		*out = k;
		return SHS_OK;
	}
	if (x->depth >= MB_MAX_DEPTH)
		return shs_seterr(x->e, SHS_EINVAL, "micro-batches: calls nested deeper than %d",
				  MB_MAX_DEPTH);
	if (x->n_inst == x->cap) {
		uint32_t cap = x->cap ? 2 * x->cap : 16;
		mb_inst **grown = realloc(x->inst, cap * sizeof(*grown));
		if (!grown)
			return shs_seterr(x->e, SHS_ENOMEM, "micro-batches: out of memory");
		x->inst = grown;
		x->cap = cap;
	}
	I = calloc(1, sizeof(*I));
	if (!I || !(I->sig = malloc((n + 1) * sizeof(*sig)))) {
		free(I);
		return shs_seterr(x->e, SHS_ENOMEM, "micro-batches: out of memory");
	}
	memcpy(I->sig, sig, n * sizeof(*sig));
	I->n_sig = n;
	I->comp = c;
	I->out = UINT32_MAX;
	k = x->n_inst++;
	x->inst[k] = I;
	rc = inst_tables(x, I, x->m->comps[c]);
	x->depth++;
	if (rc == SHS_OK)
		rc = analyse_body(x, k);
	x->depth--;
	if (rc != SHS_OK)
		return rc;
	for (uint32_t l = 0; l < I->first[x->m->comps[c]->n_instrs] && !I->changes; l++)
		I->changes = I->leaf[l].kind == MB_BATCH;
	for (uint32_t l = 0; l < I->op_first[x->m->comps[c]->n_instrs] && !I->changes; l++)
		I->changes = I->need[l] >= 0;
	for (uint32_t l = 0; l < I->call_first[x->m->comps[c]->n_instrs] && !I->changes; l++)
		I->changes = x->inst[I->callee[l]]->changes;
	I->done = true;
	*out = k;
	return SHS_OK;
}

/* The parameter leaf (an index into the signature) that value v of instance I's computation
 * is: an array parameter, or an array element of a tuple parameter; UINT32_MAX otherwise. */
static uint32_t sig_leaf(const mb_ctx *x, const mb_inst *I, uint32_t v)
{
	const shs_computation *c = x->m->comps[I->comp];
	const shs_instr *in = c->instrs[v], *p = in;
	uint32_t at = 0;

	if (in->op == SHS_OP_GET_TUPLE_ELEMENT && in->n_operands == 1)
		p = c->instrs[in->operands[0]];
	if (p->op != SHS_OP_PARAMETER || (p != in && p->shape.type != SHS_TUPLE) ||
	    in->shape.type == SHS_TUPLE)
		return UINT32_MAX;
	for (uint32_t q = 0; q < c->n_instrs; q++)
		if (c->instrs[q]->op == SHS_OP_PARAMETER &&
		    c->instrs[q]->parameter_number < p->parameter_number)
			at += I->first[q + 1] - I->first[q];
	if (p != in) {
		if (in->tuple_index < 0 || (uint64_t)in->tuple_index >= p->shape.n_tuple)
			return UINT32_MAX;
		for (int64_t k = 0; k < in->tuple_index; k++)
			at += shs_shape_leaves(&p->shape.tuple[k]);
	}
	return at < I->n_sig ? at : UINT32_MAX;
}

/* A callee that takes a parameter at the batch's size where it meets the batch (resized from
 * a broadcast in the caller) takes it with the batch instead: sig[l] becomes the batch on that
 * dim (the caller resizes the operand). Whether any did. */
static bool promote(const mb_ctx *x, const mb_inst *I, mb_leaf *sig)
{
	const shs_computation *c = x->m->comps[I->comp];
	bool any = false;

	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		uint32_t at = I->op_first[i];
		for (uint32_t k = 0; k < in->n_operands; k++) {
			uint32_t o = in->operands[k], n = I->first[o + 1] - I->first[o];
			uint32_t l = n == 1 && I->need[at] >= 0 ? sig_leaf(x, I, o) : UINT32_MAX;
			if (l != UINT32_MAX && sig[l].kind == MB_NONE) {
				sig[l].kind = MB_BATCH;
				sig[l].dim = I->need[at];
				sig[l].zero = false;
				any = true;
			}
			at += n;
		}
	}
	return any;
}

/* Joins b into a (a loop's carry with its body's result): the same state, a value the rewrite
 * can resize (or, for the entry's loops, slice: slice_a) taking the batch, a zero taking a sum.
 * False when they cannot agree. */
static bool join(mb_leaf *a, const mb_leaf *b, bool slice_a)
{
	const mb_leaf *none = a->kind == MB_NONE ? a : b, *other = none == a ? b : a;

	if (a->scaled != b->scaled && !(a->kind == MB_NONE && a->zero) &&
	    !(b->kind == MB_NONE && b->zero))
		return false;
	if (a->kind == b->kind) {
		a->scaled = a->scaled || b->scaled;
		if (a->kind == MB_BATCH)
			return a->dim == b->dim;
		a->zero = a->zero && b->zero;
		a->free &= b->free;
		return true;
	}
	if (none->kind != MB_NONE)
		return false; /* a batch and a sum */
	if (other->kind == MB_BATCH && !(none->free >> other->dim & 1) && !(slice_a && none == a))
		return false;
	if (other->kind == MB_PARTIAL && !none->zero)
		return false;
	*a = *other;
	return true;
}

/* The entry's values of the whole batch's size can all be taken per micro-batch (sliced to its
 * rows in the loop when they cannot be remade): every dim free. */
static void sliceable(mb_leaf *l, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++)
		if (l[j].kind == MB_NONE)
			l[j].free = ~(uint64_t)0;
}

/* A body's parameters never resize: the loop's carry brings them. */
static void clear_free(mb_leaf *l, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++)
		l[j].free = 0;
}

/* The root of instance b's computation takes resized operands where the carry holds the batch
 * and the body writes a value that does not. */
static int patch_root(mb_ctx *x, uint32_t b, const mb_leaf *carry)
{
	mb_inst *B = x->inst[b];
	const shs_computation *c = x->m->comps[B->comp];
	const shs_instr *root = c->instrs[c->root];
	uint32_t base = B->first[c->root];

	for (uint32_t l = 0; l < B->first[c->root + 1] - base; l++) {
		if (carry[l].kind != MB_BATCH || B->leaf[base + l].kind == MB_BATCH)
			continue;
		if (root->op != SHS_OP_TUPLE)
			return mb_fail(x, c, root, "a loop's carry takes the batch from a value "
				       "the rewrite cannot resize");
		B->need[B->op_first[c->root] + l] = carry[l].dim;
		B->leaf[base + l] = carry[l];
		B->changes = true;
	}
	return SHS_OK;
}

static int while_states(mb_ctx *x, uint32_t k, uint32_t i, const mb_leaf *init, uint32_t n,
			mb_leaf *res)
{
	mb_inst *I = x->inst[k];
	const shs_computation *c = x->m->comps[I->comp];
	const shs_instr *w = c->instrs[i];
	mb_leaf *carry = malloc((n + 1) * sizeof(*carry)), *sig = malloc((n + 1) * sizeof(*sig));
	uint32_t body = 0, cond = 0, trip;
	bool entry = I->comp == x->m->entry; /* the loop's init can be sliced per micro-batch */
	int rc = SHS_OK;

	if (!carry || !sig) {
		rc = shs_seterr(x->e, SHS_ENOMEM, "micro-batches: out of memory");
		goto done;
	}
	memcpy(carry, init, n * sizeof(*carry));
	if (entry)
		sliceable(carry, n);
	for (trip = 0; trip < MB_MAX_TRIPS; trip++) {
		const mb_inst *B;
		const shs_computation *bc;
		bool same = true;
		/* a carried value the loop's caller can resize may take the batch in the body:
		 * the join then gives the carry the batch, and the next pass reads it so */
		memcpy(sig, carry, n * sizeof(*sig));
		rc = mb_analyse(x, w->called[0], sig, n, &body);
		if (rc != SHS_OK)
			goto done;
		B = x->inst[body];
		bc = x->m->comps[B->comp];
		/* a carried value read at the batch's size where it meets the batch: carried with
		 * the batch (the init resized) */
		if (promote(x, B, sig)) {
			for (uint32_t l = 0; l < n; l++)
				if (sig[l].kind == MB_BATCH && carry[l].kind == MB_NONE &&
				    !join(&carry[l], &sig[l], entry)) {
					rc = mb_fail(x, c, w, "a loop carries a value of the whole batch's "
						     "size the rewrite cannot make per micro-batch");
					goto done;
				}
			continue;
		}
		for (uint32_t l = 0; l < n; l++) {
			mb_leaf before = carry[l], root = B->leaf[B->first[bc->root] + l];
			root.free = carry[l].free; /* the body's copy is not what is resized */
			if (!join(&carry[l], &root, entry)) {
				rc = mb_fail(x, c, w, "a loop's carry mixes a sum over the batch, the "
					     "batch itself or a value that is not zero");
				goto done;
			}
			before.free = carry[l].free;
			same = same && same_leaf(&before, &carry[l]);
		}
		if (same)
			break;
	}
	if (trip == MB_MAX_TRIPS) {
		rc = mb_fail(x, c, w, "the loop's carry does not settle");
		goto done;
	}
	rc = patch_root(x, body, carry);
	if (rc == SHS_OK)
		rc = mb_analyse(x, w->called[1], sig, n, &cond);
	if (rc == SHS_OK) {
		const mb_inst *C = x->inst[cond];
		const shs_computation *cc = x->m->comps[C->comp];
		if (holds(C, cc->root, 0))
			rc = mb_fail(x, c, w, "the trip count depends on the data");
	}
	if (rc != SHS_OK)
		goto done;
	I->callee[I->call_first[i]] = body;
	I->callee[I->call_first[i] + 1] = cond;
	for (uint32_t l = 0; l < n; l++) {
		if (carry[l].kind == MB_BATCH && init[l].kind != MB_BATCH)
			I->need[I->op_first[i] + l] = carry[l].dim;
		res[l] = carry[l];
		res[l].free = 0;
	}
done:
	free(carry);
	free(sig);
	return rc;
}

int mb_calls(mb_ctx *x, uint32_t k, uint32_t i)
{
	mb_inst *I = x->inst[k];
	const shs_computation *c = x->m->comps[I->comp];
	const shs_instr *ins = c->instrs[i];
	mb_leaf *res = I->leaf + I->first[i];
	uint32_t n_res = I->first[i + 1] - I->first[i], at = I->first[ins->operands[0]];
	uint32_t n0 = I->first[ins->operands[0] + 1] - at, callee;
	int rc;

	if (ins->op == SHS_OP_WHILE) {
		if (ins->n_operands != 1 || ins->n_called != 2 || n0 != n_res)
			return mb_fail(x, c, ins, "malformed loop");
		return while_states(x, k, i, I->leaf + at, n0, res);
	}
	if (ins->op == SHS_OP_CALL || ins->op == SHS_OP_FUSION) {
		mb_leaf *sig;
		uint32_t n = 0;
		const mb_inst *C;
		if (ins->n_called != 1)
			return mb_fail(x, c, ins, "malformed call");
		for (uint32_t j = 0; j < ins->n_operands; j++)
			n += I->first[ins->operands[j] + 1] - I->first[ins->operands[j]];
		if (!(sig = malloc((n + 1) * sizeof(*sig))))
			return shs_seterr(x->e, SHS_ENOMEM, "micro-batches: out of memory");
		n = 0;
		for (uint32_t j = 0; j < ins->n_operands; j++) {
			uint32_t o = ins->operands[j], m = I->first[o + 1] - I->first[o];
			memcpy(sig + n, I->leaf + I->first[o], m * sizeof(*sig));
			n += m;
		}
		if (I->comp == x->m->entry)
			sliceable(sig, n);
		for (uint32_t pass = 0; pass < MB_MAX_TRIPS; pass++) {
			rc = mb_analyse(x, ins->called[0], sig, n, &callee);
			if (rc != SHS_OK || !promote(x, x->inst[callee], sig))
				break;
		}
		/* what the callee takes with the batch the caller resizes */
		for (uint32_t j = 0, l = 0; rc == SHS_OK && j < ins->n_operands; j++) {
			uint32_t o = ins->operands[j], m = I->first[o + 1] - I->first[o];
			for (uint32_t q = 0; q < m; q++, l++) {
				const mb_leaf *have = I->leaf + I->first[o] + q;
				if (sig[l].kind != MB_BATCH || have->kind == MB_BATCH)
					continue;
				if (have->kind != MB_NONE || (!(have->free >> sig[l].dim & 1) &&
							       I->comp != x->m->entry))
					rc = mb_fail(x, c, ins, "its callee meets the batch with a value "
						     "the rewrite cannot make per micro-batch");
				I->need[I->op_first[i] + l] = sig[l].dim;
			}
		}
		free(sig);
		if (rc != SHS_OK)
			return rc;
		C = x->inst[callee];
		I->callee[I->call_first[i]] = callee;
		memcpy(res, C->leaf + C->first[x->m->comps[C->comp]->root], n_res * sizeof(*res));
		clear_free(res, n_res);
		return SHS_OK;
	}
	/* conditional: the branch index stays the same in every micro-batch */
	if (n0 != 1 || I->leaf[at].kind != MB_NONE || ins->n_operands != ins->n_called + 1)
		return mb_fail(x, c, ins, "the branch taken depends on the data");
	for (uint32_t b = 0; b < ins->n_called; b++) {
		uint32_t o = ins->operands[b + 1], n = I->first[o + 1] - I->first[o];
		mb_leaf *sig = malloc((n + 1) * sizeof(*sig));
		const mb_inst *C;
		const mb_leaf *root;
		if (!sig)
			return shs_seterr(x->e, SHS_ENOMEM, "micro-batches: out of memory");
		memcpy(sig, I->leaf + I->first[o], n * sizeof(*sig));
		clear_free(sig, n);
		rc = mb_analyse(x, ins->called[b], sig, n, &callee);
		free(sig);
		if (rc != SHS_OK)
			return rc;
		C = x->inst[callee];
		I->callee[I->call_first[i] + b] = callee;
		root = C->leaf + C->first[x->m->comps[C->comp]->root];
		for (uint32_t l = 0; l < n_res; l++) {
			mb_leaf r = root[l];
			r.free = 0;
			if (b && (r.kind != res[l].kind || r.dim != res[l].dim))
				return mb_fail(x, c, ins, "its branches disagree on the batch");
			r.zero = b ? r.zero && res[l].zero : r.zero;
			res[l] = r;
		}
	}
	return SHS_OK;
}
