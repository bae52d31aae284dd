/* Control flow in propagation: tuples and their elements, and shardings threaded through the
 * computations that call, while and conditional run. A loop carries one sharding per element:
 * the loop's operand's, except that elements the loop starts from a constant (zeros a scanned
 * layer fills in) take the sharding the body gives them. */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "analysis.h"
#include "propagate_internal.h"

enum { MAX_FLOW_LEAVES = 1 << 16 };

static uint32_t leaves_of(const shs__prop *x, uint32_t c, uint32_t i)
{
	return shs_shape_leaves(&x->m->comps[c]->instrs[i]->shape);
}

/* first[k] = first leaf of operand k of instruction in; first[n] = all leaves. */
static uint32_t *operand_firsts(const shs__prop *x, uint32_t c, const shs_instr *in)
{
	uint32_t *first = malloc((in->n_operands + 1) * sizeof(*first)), n = 0;

	for (uint32_t k = 0; first && k < in->n_operands; k++) {
		first[k] = n;
		n += leaves_of(x, c, in->operands[k]);
	}
	if (first)
		first[in->n_operands] = n;
	return first;
}

/* Replicated specs for the leaves of shape s into out. */
static void replicated_leaves(const shs_shape *s, shs_pspec *out)
{
	const shs_shape *sh[MAX_FLOW_LEAVES / 16];
	uint32_t n = shs_shape_leaf_list(s, sh, MAX_FLOW_LEAVES / 16);

	for (uint32_t j = 0; j < n; j++)
		shs_spec_replicated(&out[j], sh[j]->rank);
}

/* A tuple: its leaves are its operands' (or what its users want of an undecided one), and it
 * passes on to its operands what its users want of it. */
static void decide_tuple(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	uint32_t *first = operand_firsts(x, c, in);
	const shs_pspec *want = x->pull ? shs__user_req(x, c, i) : NULL;
	shs_pspec *leaves = first ? malloc((first[in->n_operands] + 1) * sizeof(*leaves)) : NULL;
	bool aliased = c == x->m->entry && i == x->m->comps[c]->root && x->root_aliased;

	if (!first || !leaves) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		goto done;
	}
	for (uint32_t k = 0; k < in->n_operands; k++) {
		const shs_decision *od = shs__dec(x, c, in->operands[k]);
		uint32_t n = first[k + 1] - first[k];
		if (od->set)
			memcpy(&leaves[first[k]], od->leaves, n * sizeof(*leaves));
		else if (want)
			memcpy(&leaves[first[k]], &want[first[k]], n * sizeof(*leaves));
		else
			replicated_leaves(&x->m->comps[c]->instrs[in->operands[k]]->shape,
					  &leaves[first[k]]);
	}
	/* the step's outputs aliased to a parameter come out as it came in */
	for (uint32_t j = 0; aliased && j < first[in->n_operands]; j++)
		if (x->root_aliased[j])
			leaves[j] = x->root_want[j];
	if (aliased)
		want = leaves;
	shs__dec_set(x, shs__dec(x, c, i), leaves, first[in->n_operands], want ? want : leaves,
		     first, in->n_operands, "control", "tuple of its operands", 0);
done:
	free(first);
	free(leaves);
}

/* Whether get-tuple-element i's last decision still holds: made in a pass of the same kind,
 * and neither its tuple's decision nor its users' changed since (a root's want comes from its
 * caller: asked anew). Its requirement is the whole tuple: deciding a loop's thousands of
 * elements anew on every visit would cost the square of the carry. */
static bool gte_unchanged(shs__prop *x, uint32_t c, uint32_t i, const shs_decision *td)
{
	const shs__cand_cache *cc = &x->cache[c][i];

	return !x->r->no_reuse && cc->decided && cc->pull == x->pull &&
	       i != x->m->comps[c]->root && td->tick <= cc->tick &&
	       !shs__users_changed_since(x, c, i, cc->tick);
}

static void decide_gte(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	const shs_instr *t = x->m->comps[c]->instrs[in->operands[0]];
	const shs_decision *td = shs__dec(x, c, in->operands[0]);
	uint32_t n = leaves_of(x, c, i), off = shs_shape_element_leaf(&t->shape, in->tuple_index);
	uint32_t first[2] = { 0, td->n_leaves };
	shs__cand_cache *cc = &x->cache[c][i];
	const shs_pspec *want;
	shs_pspec *req;

	if (gte_unchanged(x, c, i, td))
		return;
	want = x->pull ? shs__user_req(x, c, i) : NULL;
	if (!td->set) {
		if (want)
			shs__dec_set(x, shs__dec(x, c, i), want, n, NULL, first, 0, "control",
				     "follows its users", 0);
	} else if (!(req = malloc(td->n_leaves * sizeof(*req)))) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
	} else {
		memcpy(req, td->leaves, td->n_leaves * sizeof(*req));
		if (want && off + n <= td->n_leaves)
			memcpy(&req[off], want, n * sizeof(*req));
		shs__dec_set(x, shs__dec(x, c, i), &td->leaves[off], n, req, first, 1, "control",
			     "element of its operand", 0);
		free(req);
	}
	cc->decided = x->rc == SHS_OK;
	cc->pull = x->pull;
	cc->tick = x->clock;
}

/* Whether value v of computation c is an element of the result of a call to a twin of
 * computation callee (one unrolled layer's output read by the next). */
static bool from_twin(const shs__prop *x, uint32_t c, uint32_t v, uint32_t callee)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *g = comp->instrs[v], *src;

	if (g->op != SHS_OP_GET_TUPLE_ELEMENT || !g->n_operands)
		return false;
	src = comp->instrs[g->operands[0]];
	return src->op == SHS_OP_CALL && src->n_called && src->called[0] < x->m->n_comps &&
	       x->twin[src->called[0]] == x->twin[callee];
}

/* Whether the n leaves a (of the leaf shapes of value v) are no larger per device than b. */
static bool leaves_no_larger(const shs__prop *x, const shs_instr *v, const shs_pspec *a,
			     const shs_pspec *b, uint32_t n)
{
	const shs_shape *sh[SHS_MAX_VALUE_LEAVES];
	double ba = 0, bb = 0;

	if (shs_shape_leaf_list(&v->shape, sh, SHS_MAX_VALUE_LEAVES) != n)
		return false;
	for (uint32_t j = 0; j < n; j++) {
		ba += shs_spec_local_bytes(&a[j], sh[j], &x->r->mesh);
		bb += shs_spec_local_bytes(&b[j], sh[j], &x->r->mesh);
	}
	return ba <= bb * (1 + 1e-12);
}

/* The sharding a chain of unrolled layers carries at operand k of call i (to callee), when
 * operand k itself does not come from a twin layer: what call i's own result passes on to the
 * next layer there (a call to a twin of callee reading element e of call i's result as its
 * operand k: the callee's root element e), if decided and no larger per device than operand k;
 * else NULL. The first of a chain of unrolled layers then takes its input as the chain carries
 * it, as a while loop takes its init in the sharding its body passes on (carry_of): one
 * computation, one answer. */
static const shs_pspec *chain_sharding(shs__prop *x, uint32_t c, uint32_t i, uint32_t k,
				       uint32_t callee)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	const shs_users *u = &x->users[c];
	const shs_decision *od;

	if (in->op != SHS_OP_CALL || k >= in->n_operands || callee >= x->m->n_comps ||
	    from_twin(x, c, in->operands[k], callee))
		return NULL;
	od = shs__dec(x, c, in->operands[k]);
	if (!od->set)
		return NULL;
	for (uint32_t a = u->first[i]; a < u->first[i + 1]; a++) {
		const shs_instr *g = comp->instrs[u->list[a]];
		const shs_computation *cc = x->m->comps[callee];
		const shs_instr *root = cc->instrs[cc->root];
		const shs_decision *rd;
		if (g->op != SHS_OP_GET_TUPLE_ELEMENT || root->op != SHS_OP_TUPLE ||
		    g->tuple_index < 0 || (uint64_t)g->tuple_index >= root->n_operands)
			continue;
		for (uint32_t b = u->first[u->list[a]]; b < u->first[u->list[a] + 1]; b++) {
			const shs_instr *next = comp->instrs[u->list[b]];
			if (next->op != SHS_OP_CALL || !next->n_called ||
			    next->called[0] >= x->m->n_comps ||
			    x->twin[next->called[0]] != x->twin[callee] || k >= next->n_operands ||
			    next->operands[k] != u->list[a])
				continue;
			rd = shs__dec(x, callee, root->operands[g->tuple_index]);
			if (rd->set && rd->n_leaves == od->n_leaves &&
			    leaves_no_larger(x, comp->instrs[in->operands[k]], rd->leaves,
					     od->leaves, od->n_leaves))
				return rd->leaves;
		}
	}
	return NULL;
}

/* Gives the parameters of computation callee the shardings of operands[from..] of in (i), or
 * the sharding a chain of unrolled layers carries there (chain_sharding). */
static void set_params(shs__prop *x, uint32_t c, uint32_t i, uint32_t from, uint32_t callee)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	const shs_computation *cc = x->m->comps[callee];
	uint32_t first[1] = { 0 };

	for (uint32_t j = 0; j < cc->n_instrs; j++) {
		const shs_instr *p = cc->instrs[j];
		int64_t k = p->parameter_number + from;
		const shs_decision *od;
		const shs_pspec *chain;
		if (p->op != SHS_OP_PARAMETER || k >= in->n_operands)
			continue;
		od = shs__dec(x, c, in->operands[k]);
		chain = chain_sharding(x, c, i, (uint32_t)k, callee);
		if (od->set)
			shs__dec_set(x, shs__dec(x, callee, j), chain ? chain : od->leaves,
				     od->n_leaves, NULL, first, 0, "control",
				     chain ? "the unrolled layers' carry" : "the caller's operand",
				     0);
	}
}

/* The hash of everything a pass over computation c starts from: its class, the pass's
 * direction and pull, what the caller wants of its root, and every decision and hint in it. */
static uint64_t state_key(const shs__prop *x, uint32_t c, const shs_pspec *ext)
{
	const shs_computation *comp = x->m->comps[c];
	uint64_t key = XXH3_64bits_withSeed(&x->twin[c], sizeof(x->twin[c]), 0);
	uint8_t flags[2] = { x->reverse, x->pull };

	key = XXH3_64bits_withSeed(flags, sizeof(flags), key);
	if (ext)
		key = shs__hash_specs(ext, x->p->d[c][comp->root].n_leaves, key);
	if (x->ext_off[c])
		key = XXH3_64bits_withSeed(x->ext_off[c],
					   x->p->d[c][comp->root].n_leaves * sizeof(bool), key);
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_decision *d = &x->p->d[c][i];
		uint8_t f[3] = { d->set, d->fixed, x->hint_set[c] && x->hint_set[c][i] };
		key = XXH3_64bits_withSeed(f, sizeof(f), key);
		if (d->set)
			key = shs__hash_specs(d->leaves, d->n_leaves, key);
		if (d->n_req)
			key = shs__hash_specs(d->req, d->n_req, key);
		if (f[2])
			key = shs__hash_specs(&x->hints[c][i], 1, key);
	}
	return key;
}

/* Gives computation c the decisions of its twin src (the result of a pass from the same state). */
static void copy_twin(shs__prop *x, uint32_t src, uint32_t c)
{
	const shs_computation *comp = x->m->comps[c];

	for (uint32_t i = 0; i < comp->n_instrs && x->rc == SHS_OK; i++) {
		const shs_decision *s = &x->p->d[src][i];
		shs_decision *d = &x->p->d[c][i];
		x->cache[c][i].decided = false; /* its decision no longer follows its context */
		if (!s->set || d->fixed)
			continue;
		shs__dec_set(x, d, s->leaves, s->n_leaves, s->n_req ? s->req : NULL, s->req_first,
			     comp->instrs[i]->n_operands, s->strategy, s->label, s->cost);
		shs__dec_set_work(x, d, s->flops, s->bytes, s->colls, s->n_colls);
	}
}

/* Runs a pass over callee unless it is already being run (recursion); a computation that calls
 * nothing and starts from the same state as the last pass over one of its twins takes that
 * pass's result instead. */
static void visit(shs__prop *x, uint32_t callee, const shs_pspec *ext)
{
	shs__twin_memo *memo;
	uint64_t key = 0;

	if (callee >= x->m->n_comps || x->visits[callee])
		return;
	x->visits[callee]++;
	x->ext_req[callee] = ext;
	memo = &x->memo[x->twin[callee]];
	if (x->leaf[callee] && !x->r->no_reuse)
		key = state_key(x, callee, ext);
	if (x->leaf[callee] && !x->r->no_reuse && memo->valid && memo->key == key &&
	    memo->src != callee) {
		copy_twin(x, memo->src, callee);
	} else {
		shs__pass_comp(x, callee);
		if (x->leaf[callee])
			*memo = (shs__twin_memo){ .key = key, .src = callee, .valid = true };
	}
	x->ext_req[callee] = NULL;
	x->visits[callee]--;
}

static const shs_decision *root_of(shs__prop *x, uint32_t comp)
{
	return shs__dec(x, comp, x->m->comps[comp]->root);
}

/* What the users inside callee want of its parameter number k, or NULL. */
static const shs_pspec *param_want(shs__prop *x, uint32_t callee, int64_t k)
{
	const shs_computation *cc = x->m->comps[callee];

	for (uint32_t j = 0; x->pull && j < cc->n_instrs; j++)
		if (cc->instrs[j]->op == SHS_OP_PARAMETER && cc->instrs[j]->parameter_number == k)
			return shs__user_req(x, callee, j);
	return NULL;
}

/* The operands as they are, or as the callee's parameters' users want them (pull). */
static void set_passthrough(shs__prop *x, uint32_t c, uint32_t i, const shs_pspec *leaves,
			    uint32_t n_leaves, const char *label)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	uint32_t *first = operand_firsts(x, c, in);
	shs_pspec *req = first ? malloc((first[in->n_operands] + 1) * sizeof(*req)) : NULL;

	if (!first || !req) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		goto done;
	}
	for (uint32_t k = 0; k < in->n_operands; k++) {
		const shs_decision *od = shs__dec(x, c, in->operands[k]);
		const shs_pspec *want = in->op == SHS_OP_CALL && in->n_called ?
						param_want(x, in->called[0], k) : NULL;
		const shs_pspec *chain = in->op == SHS_OP_CALL && in->n_called && !want ?
						 chain_sharding(x, c, i, k, in->called[0]) : NULL;
		if (chain)
			memcpy(&req[first[k]], chain, (first[k + 1] - first[k]) * sizeof(*req));
		else if (want)
			memcpy(&req[first[k]], want, (first[k + 1] - first[k]) * sizeof(*req));
		else if (od->set)
			memcpy(&req[first[k]], od->leaves, od->n_leaves * sizeof(*req));
		else
			replicated_leaves(&x->m->comps[c]->instrs[in->operands[k]]->shape,
					  &req[first[k]]);
	}
	shs__dec_set(x, shs__dec(x, c, i), leaves, n_leaves, req, first, in->n_operands,
		     "control", label, 0);
done:
	free(first);
	free(req);
}

enum { CHAIN_ROUNDS = 2 };

/* Whether a parameter of callee (called by call i) differs from the sharding the chain of
 * unrolled layers carries at its operand (chain_sharding). */
static bool chain_differs(shs__prop *x, uint32_t c, uint32_t i, uint32_t callee)
{
	const shs_computation *cc = x->m->comps[callee];

	for (uint32_t j = 0; j < cc->n_instrs; j++) {
		const shs_instr *p = cc->instrs[j];
		const shs_decision *pd = shs__dec(x, callee, j);
		const shs_pspec *chain;
		if (p->op != SHS_OP_PARAMETER || p->parameter_number < 0)
			continue;
		chain = chain_sharding(x, c, i, (uint32_t)p->parameter_number, callee);
		if (chain && (!pd->set || !shs__specs_equal(chain, pd->leaves, pd->n_leaves)))
			return true;
	}
	return false;
}

/* In want (the n leaves wanted of call i's result, a tuple of arrays), each element the next
 * of a chain of unrolled layers reads as its input (a call to a twin of i's callee) as the
 * layer makes it when that is more sharded than wanted: a loop carries the more sharded of its
 * body's root and its init (carry_of), so the unrolled chain passes its layers' output on
 * alike rather than gathering it for the next layer's users. */
static void chain_wants(shs__prop *x, uint32_t c, uint32_t i, shs_pspec *want, uint32_t n)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	const shs_users *u = &x->users[c];
	const shs_computation *cc;
	const shs_instr *root;

	if (!want || in->op != SHS_OP_CALL || in->n_called != 1 || in->called[0] >= x->m->n_comps ||
	    in->shape.type != SHS_TUPLE || (uint32_t)in->shape.n_tuple != n)
		return;
	cc = x->m->comps[in->called[0]];
	root = cc->instrs[cc->root];
	if (root->op != SHS_OP_TUPLE || root->n_operands != n)
		return;
	for (uint32_t a = u->first[i]; a < u->first[i + 1]; a++) {
		uint32_t g = u->list[a], e;
		const shs_decision *rd;
		if (comp->instrs[g]->op != SHS_OP_GET_TUPLE_ELEMENT)
			continue;
		e = (uint32_t)comp->instrs[g]->tuple_index;
		rd = shs__dec(x, in->called[0], root->operands[e]);
		if (!rd->set || rd->n_leaves != 1 || shs_spec_equal(&rd->leaves[0], &want[e]) ||
		    !leaves_no_larger(x, comp->instrs[g], rd->leaves, &want[e], 1))
			continue;
		for (uint32_t b = u->first[g]; b < u->first[g + 1]; b++) {
			const shs_instr *next = comp->instrs[u->list[b]];
			if (next->op == SHS_OP_CALL && next->n_called == 1 &&
			    next->called[0] < x->m->n_comps &&
			    x->twin[next->called[0]] == x->twin[in->called[0]]) {
				want[e] = rd->leaves[0];
				break;
			}
		}
	}
}

static void decide_call(shs__prop *x, uint32_t c, uint32_t i, uint32_t from)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	const shs_pspec *wanted = x->pull ? shs__user_req(x, c, i) : NULL;
	uint32_t n = leaves_of(x, c, i);
	bool *off;
	shs_pspec *want = shs__with_pinned(x, c, i, wanted, n, &off);
	const shs_decision *root;

	shs__stack_wants(x, c, i, want, n);
	chain_wants(x, c, i, want, n);

	for (uint32_t k = 0; k < in->n_called; k++) {
		set_params(x, c, i, from, in->called[k]);
		x->ext_off[in->called[k]] = off;
		visit(x, in->called[k], want);
		x->ext_off[in->called[k]] = NULL;
	}
	/* the first of a chain of unrolled layers runs again with its input as the chain carries
	 * it (as a loop runs its body again with the carry its root makes: decide_while) */
	for (uint32_t round = 0; in->op == SHS_OP_CALL && in->n_called == 1 &&
				 round < CHAIN_ROUNDS && x->rc == SHS_OK; round++) {
		if (!chain_differs(x, c, i, in->called[0]))
			break;
		set_params(x, c, i, from, in->called[0]);
		x->ext_off[in->called[0]] = off;
		visit(x, in->called[0], want);
		x->ext_off[in->called[0]] = NULL;
	}
	free(want);
	free(off);
	if (!in->n_called)
		return;
	root = root_of(x, in->called[0]);
	if (root->set && root->n_leaves == leaves_of(x, c, i))
		set_passthrough(x, c, i, root->leaves, root->n_leaves, "result of its callee");
}

/* Whether element k of a loop's init comes from a constant or broadcast (free) value. */
static bool init_free(shs__prop *x, uint32_t c, const shs_instr *init, uint32_t k)
{
	return init->op == SHS_OP_TUPLE && k < init->n_operands &&
	       x->free_instr[c][init->operands[k]];
}

/* What the users of element k of loop i's result want of it (through its get-tuple-elements),
 * or NULL. */
static const shs_pspec *element_want(shs__prop *x, uint32_t c, uint32_t i, uint32_t k)
{
	const shs_users *u = &x->users[c];

	if (!x->pull)
		return NULL;
	for (uint32_t j = u->first[i]; j < u->first[i + 1]; j++) {
		const shs_instr *g = x->m->comps[c]->instrs[u->list[j]];
		if (g->op == SHS_OP_GET_TUPLE_ELEMENT && g->tuple_index == k)
			return shs__user_req(x, c, u->list[j]);
	}
	return NULL;
}

/* Whether the n leaves a (of the leaf shapes sh) are no larger per device than b. */
static bool no_larger(const shs__prop *x, const shs_pspec *a, const shs_pspec *b,
		    const shs_shape *const *sh, uint32_t n)
{
	double ba = 0, bb = 0;

	for (uint32_t j = 0; j < n; j++) {
		ba += shs_spec_local_bytes(&a[j], sh[j], &x->r->mesh);
		bb += shs_spec_local_bytes(&b[j], sh[j], &x->r->mesh);
	}
	return ba <= bb * (1 + 1e-12);
}

/* The sharding a stack of saved values (element of rank `rank` a loop starts from zeros) takes
 * from the value its body writes into it, into *out: when the body's root element is a
 * dynamic-update-slice whose update is, through reshapes that only add unit dims, a decided
 * value of the body, the stack is that value's sharding with the added (layer) dims unsplit:
 * the unrolled layers keep their saved values as the layer makes them, and so does the stack
 * (else the write reshards every trip and the backward reads another layout). */
static bool stack_from_update(shs__prop *x, uint32_t body, uint32_t v, uint32_t rank,
			      shs_pspec *out)
{
	const shs_computation *comp = x->m->comps[body];
	const shs_instr *dus = comp->instrs[v], *u;
	const shs_decision *ud;
	uint32_t src, at = 0;

	if (dus->op != SHS_OP_DYNAMIC_UPDATE_SLICE || dus->n_operands < 2 ||
	    dus->shape.rank != rank || rank > SHS_PLUGIN_MAX_RANK)
		return false;
	src = dus->operands[1];
	u = comp->instrs[src];
	while (u->op == SHS_OP_RESHAPE && u->n_operands == 1 &&
	       shs_shape_elements(&comp->instrs[u->operands[0]]->shape) ==
		       shs_shape_elements(&u->shape)) {
		src = u->operands[0];
		u = comp->instrs[src];
	}
	ud = shs__dec(x, body, src);
	if (!ud->set || ud->n_leaves != 1 || u->shape.type == SHS_TUPLE ||
	    ud->leaves[0].rank != u->shape.rank)
		return false;
	shs_spec_replicated(out, rank);
	out->padded = ud->leaves[0].padded;
	/* the update's dims in order; a unit dim of the update that the value lacks stays unsplit */
	for (uint32_t d = 0; d < rank; d++) {
		const shs_shape *us = &comp->instrs[dus->operands[1]]->shape;
		if (at < u->shape.rank && u->shape.dims[at] == us->dims[d]) {
			out->dims[d] = ud->leaves[0].dims[at++];
		} else if (us->dims[d] != 1) {
			return false;
		}
	}
	return at == u->shape.rank;
}

/* The loop's carried shardings: the init's, but for elements that start as constants, what
 * the loop's users want of them, else what the body gives them; and for the other elements
 * what the body gives them when that is more sharded than the init (XLA's sharding
 * propagation gives a loop, its init, its body's parameter and root one sharding, taking the
 * more specific one: a scanned layer's input then stays as sharded as the layer makes its
 * output, as the unrolled layers pass it on, instead of being gathered on every trip).
 * Returns a malloc'ed array of n leaves, or NULL when nothing is known. */
static shs_pspec *carry_of(shs__prop *x, uint32_t c, uint32_t i, const shs_instr *w, uint32_t n)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *init = comp->instrs[w->operands[0]];
	const shs_decision *id = shs__dec(x, c, w->operands[0]);
	const shs_computation *body = x->m->comps[w->called[0]];
	const shs_instr *root = body->instrs[body->root];
	shs_pspec *carry;
	uint32_t off = 0;

	if (!id->set || id->n_leaves != n)
		return NULL;
	carry = malloc(n * sizeof(*carry));
	if (!carry)
		return NULL;
	memcpy(carry, id->leaves, n * sizeof(*carry));
	for (uint32_t k = 0; init->op == SHS_OP_TUPLE && k < init->n_operands; k++) {
		uint32_t nk = shs_shape_leaves(&comp->instrs[init->operands[k]]->shape);
		const shs_pspec *want = init_free(x, c, init, k) ? element_want(x, c, i, k) : NULL;
		const shs_pspec *pinned;
		shs_pspec stack;
		if (nk == 1 && (pinned = shs__pinned_element(x, c, i, k))) {
			carry[off] = *pinned;
		} else if (init_free(x, c, init, k) && nk == 1 && root->op == SHS_OP_TUPLE &&
		    k < root->n_operands &&
		    stack_from_update(x, w->called[0], root->operands[k],
				      comp->instrs[init->operands[k]]->shape.rank, &stack)) {
			carry[off] = stack;
		} else if (want) {
			memcpy(&carry[off], want, nk * sizeof(*carry));
		} else if (root->op == SHS_OP_TUPLE && k < root->n_operands &&
			   !shs_while_keeps(body, k)) {
			/* an element the body gives back as it got it is only the carry there: the
			 * loop takes it from its init (else an init that is less sharded in a later
			 * pass, as the stacks of saved values a backward loop reads, would keep an
			 * earlier pass's carry) */
			const shs_decision *rd = shs__dec(x, w->called[0], root->operands[k]);
			const shs_shape *sh[SHS_MAX_VALUE_LEAVES];
			uint32_t ns = shs_shape_leaf_list(&comp->instrs[init->operands[k]]->shape, sh,
							  SHS_MAX_VALUE_LEAVES);
			if (rd->set && rd->n_leaves == nk &&
			    (init_free(x, c, init, k) ||
			     (ns == nk && no_larger(x, rd->leaves, &carry[off], sh, nk))))
				memcpy(&carry[off], rd->leaves, nk * sizeof(*carry));
		}
		off += nk;
	}
	return carry;
}

/* The body's root produces the carry: its leaves are the carry, and it wants them of its
 * operands (the partitioner reshards what differs). */
static void force_root(shs__prop *x, uint32_t body, const shs_pspec *carry, uint32_t n)
{
	const shs_computation *comp = x->m->comps[body];
	const shs_instr *root = comp->instrs[comp->root];
	uint32_t *first = operand_firsts(x, body, root);

	if (!first) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		return;
	}
	if (root->op == SHS_OP_TUPLE && first[root->n_operands] == n)
		shs__dec_set(x, shs__dec(x, body, comp->root), carry, n, carry, first,
			     root->n_operands, "control", "the loop's carry", 0);
	free(first);
}

/* Runs the body and condition of loop i (w, of computation c) with the given carry; the body's
 * root makes it. */
static void run_loop(shs__prop *x, uint32_t c, uint32_t i, const shs_instr *w,
		     const shs_pspec *carry, uint32_t n)
{
	uint32_t first[2] = { 0, n };

	x->loop_of[w->called[0]] = ((uint64_t)c << 32) | (i + 1u);

	for (uint32_t k = 0; k < 2; k++) {
		const shs_computation *cc = x->m->comps[w->called[k]];
		for (uint32_t j = 0; j < cc->n_instrs; j++)
			if (cc->instrs[j]->op == SHS_OP_PARAMETER)
				shs__dec_set(x, shs__dec(x, w->called[k], j), carry, n, NULL,
					     first, 0, "control", "the loop's carry", 0);
	}
	/* the body's elements of its parameter are the carry before its users are asked, also in a
	 * users-first pass (else they would be decided from the carry of the pass before) */
	for (uint32_t k = 0; k < 2 && x->rc == SHS_OK; k++) {
		const shs_computation *cc = x->m->comps[w->called[k]];
		for (uint32_t j = 0; j < cc->n_instrs; j++)
			if (cc->instrs[j]->op == SHS_OP_GET_TUPLE_ELEMENT &&
			    cc->instrs[cc->instrs[j]->operands[0]]->op == SHS_OP_PARAMETER)
				decide_gte(x, w->called[k], j);
	}
	visit(x, w->called[0], carry);
	force_root(x, w->called[0], carry, n);
	visit(x, w->called[1], NULL);
}

/* A loop: its carry (see carry_of), run through the body until the elements it starts from
 * constants settle (a few rounds), then its result. */
static void decide_while(shs__prop *x, uint32_t c, uint32_t i)
{
	enum { MAX_ROUNDS = 3 };
	const shs_instr *w = x->m->comps[c]->instrs[i];
	uint32_t n = leaves_of(x, c, i), first[2] = { 0, n };
	shs_pspec *carry, *after = NULL;
	bool *off;

	if (w->n_called < 2 || w->n_operands != 1)
		return;
	carry = carry_of(x, c, i, w, n);
	off = shs__pinned_carry(x, c, i, n);
	for (uint32_t round = 0; carry && round < MAX_ROUNDS && x->rc == SHS_OK; round++) {
		x->ext_off[w->called[0]] = off;
		run_loop(x, c, i, w, carry, n);
		x->ext_off[w->called[0]] = NULL;
		after = carry_of(x, c, i, w, n);
		if (!after || shs__specs_equal(after, carry, n))
			break;
		x->changed = true;
		free(carry);
		carry = after;
		after = NULL;
	}
	if (carry)
		shs__dec_set(x, shs__dec(x, c, i), carry, n, carry, first, 1, "control",
			     "the loop's carry", 0);
	free(carry);
	free(after);
	free(off);
}

bool shs__decide_flow(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];

	switch (in->op) {
	case SHS_OP_TUPLE: decide_tuple(x, c, i); return true;
	case SHS_OP_GET_TUPLE_ELEMENT: decide_gte(x, c, i); return true;
	case SHS_OP_CALL: decide_call(x, c, i, 0); return true;
	case SHS_OP_CONDITIONAL: decide_call(x, c, i, 1); return true;
	case SHS_OP_WHILE: decide_while(x, c, i); return true;
	default: return false;
	}
}
