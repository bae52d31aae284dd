/* Plans by propagation: seeds, then every instruction takes its cheapest candidate, in passes.
 *
 * Pass 0 runs producers before users: each instruction scores the candidates its plugins propose
 * given its operands' shardings: its compute, overlapped with its overlappable collectives and,
 * for a matmul, with the reshards of its operands (collective matmul, weight prefetch), plus
 * the other reshards
 * and keeps the cheapest; ties go to the result its users want (the plan's hint, or what the
 * decided users require), then to the smaller result piece, then to the result that spreads
 * its axes over more dims rather than stacking them on one (a reduce-scatter onto the model
 * dim, In[B_X, D_Y] in the book, rather than [B_XY, D]), then to the earlier candidate (plugin
 * load order, then the plugin's order). Later passes alternate users-first and
 * producers-first and also count what the users already require (so gradients settle where the
 * optimizer needs them), until a pass changes nothing. Constants, iotas, broadcasts of them and
 * unseeded parameters take what their users require. Control flow is threaded by
 * propagate_flow.c. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "buf.h"
#include "propagate_internal.h"

enum { MEMO_MAX_USERS = 64, SMALL = 16 };

/* Of a score some candidate has: what no candidate whose floor is over it can beat or tie,
 * far over the ties' tolerance (1e-9 of the best; 1e-21 s when the best is 0, hence the
 * femtosecond). */
static const double BOUND_MARGIN = 1 + 1e-6, BOUND_SLACK_S = 1e-15;

shs_decision *shs__dec(shs__prop *x, uint32_t c, uint32_t i)
{
	return &x->p->d[c][i];
}

bool shs__specs_equal(const shs_pspec *a, const shs_pspec *b, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		if (!shs_spec_equal(&a[k], &b[k]))
			return false;
	return true;
}

int shs__dec_set(shs__prop *x, shs_decision *d, const shs_pspec *leaves, uint32_t n_leaves,
		 const shs_pspec *req, const uint32_t *first, uint32_t n_operands,
		 const char *strategy, const char *label, double cost)
{
	uint32_t n_req = req ? first[n_operands] : 0;
	bool same = d->set && d->n_leaves == n_leaves && shs__specs_equal(d->leaves, leaves, n_leaves) &&
		    d->n_req == n_req && (!n_req || shs__specs_equal(d->req, req, n_req));

	d->strategy = strategy;
	shs_str_copy(d->label, sizeof(d->label), label);
	d->cost = cost;
	if (same)
		return SHS_OK;
	x->changed = true;
	d->tick = ++x->clock;
	if (shs_decision_set_specs(d, x->p->arena, leaves, n_leaves, req, n_req, first,
				   n_operands) != SHS_OK) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		return x->rc;
	}
	d->set = true;
	return SHS_OK;
}

/* For a tuple read only through get-tuple-elements: each element as the get-tuple-element
 * that reads it wants it (the rest as decided), in x->scratch; NULL when some other user reads
 * the whole tuple or no user has decided. */
static const shs_pspec *elements_req(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_users *u = &x->users[c];
	const shs_computation *comp = x->m->comps[c];
	const shs_decision *d = shs__dec(x, c, i);
	bool found = false;

	if (!d->set || d->n_leaves > x->scratch_cap)
		return NULL;
	memcpy(x->scratch, d->leaves, d->n_leaves * sizeof(*x->scratch));
	for (uint32_t k = u->first[i]; k < u->first[i + 1]; k++) {
		const shs_instr *g = comp->instrs[u->list[k]];
		const shs_decision *dg = shs__dec(x, c, u->list[k]);
		if (g->op != SHS_OP_GET_TUPLE_ELEMENT)
			return NULL;
		if (dg->set && dg->n_req == d->n_leaves) {
			uint32_t off = shs_shape_element_leaf(&comp->instrs[i]->shape,
							      g->tuple_index);
			uint32_t n = shs_shape_leaves(&g->shape);
			memcpy(&x->scratch[off], &dg->req[off], n * sizeof(*x->scratch));
			found = true;
		}
	}
	return found ? x->scratch : NULL;
}

/* The most sharded of what the decided users require (the smallest piece per device): a value
 * that can be made in any sharding serves its most demanding user, and the others gather.
 * A tuple read through get-tuple-elements gets each element as its reader wants it. */
const shs_pspec *shs__user_req(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_users *u = &x->users[c];
	const shs_computation *comp = x->m->comps[c];

	const shs_shape *shapes[SHS_MAX_VALUE_LEAVES];
	uint32_t n = shs_shape_leaf_list(&comp->instrs[i]->shape, shapes, SHS_MAX_VALUE_LEAVES);
	const shs_pspec *best = NULL;
	double best_bytes = 0;

	if (i == comp->root && x->ext_req[c])
		return x->ext_req[c];
	if (comp->instrs[i]->shape.type == SHS_TUPLE && (best = elements_req(x, c, i)))
		return best;
	for (uint32_t k = u->first[i]; k < u->first[i + 1]; k++) {
		uint32_t user = u->list[k];
		const shs_decision *du = shs__dec(x, c, user);
		if (!du->set || !du->n_req)
			continue;
		for (uint32_t op = 0; op < comp->instrs[user]->n_operands; op++) {
			const shs_pspec *req = &du->req[du->req_first[op]];
			double bytes = 0;
			if (comp->instrs[user]->operands[op] != i)
				continue;
			for (uint32_t j = 0; j < n; j++)
				bytes += shs_spec_local_bytes(&req[j], shapes[j], &x->r->mesh);
			if (!best || bytes < best_bytes) {
				best = req;
				best_bytes = bytes;
			}
		}
	}
	return best;
}

/* A free value (constant, iota, broadcast of one, unseeded parameter) takes what its users
 * require; with no user decided it stays undecided (annotated replicated). */
static void decide_free(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	shs_decision *d = shs__dec(x, c, i);
	const shs_pspec *want = x->pull ? shs__user_req(x, c, i) : NULL;
	uint32_t first[2] = { 0, 0 };

	if (!want || in->shape.type == SHS_TUPLE)
		return;
	shs__dec_set(x, d, want, d->n_leaves, NULL, first, 0, "free", "follows its users", 0);
}

/* The shapes of the leaves of s into a malloc'ed array (caller frees); NULL when out of
 * memory. */
static const shs_shape **leaf_shapes(const shs_shape *s, uint32_t *n)
{
	uint32_t count = shs_shape_leaves(s);
	const shs_shape **out = malloc((count ? count : 1) * sizeof(*out));

	if (out)
		*n = shs_shape_leaf_list(s, out, count);
	return out;
}

/* Axes stacked on a dim beyond its first, over the result leaves. */
static uint32_t stacked_axes(const shs_cand *cand)
{
	uint32_t n = 0;

	for (uint32_t j = 0; j < cand->n_result; j++)
		for (uint32_t d = 0; d < cand->result[j].rank; d++)
			n += cand->result[j].dims[d].n > 1 ? cand->result[j].dims[d].n - 1u : 0u;
	return n;
}

static double result_bytes(const shs_cand *cand, const shs_shape *const *shapes, uint32_t n,
			   const shs_mesh *mesh)
{
	double b = 0;

	for (uint32_t j = 0; j < n && j < cand->n_result; j++)
		b += shs_spec_local_bytes(&cand->result[j], shapes[j], mesh);
	return b;
}

void shs__dec_set_work(shs__prop *x, shs_decision *d, double flops, double bytes,
		       const shs_coll *colls, uint32_t n_colls)
{
	shs_coll *copy = NULL;

	if (n_colls) {
		copy = malloc(n_colls * sizeof(*copy));
		if (!copy) {
			x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
			return;
		}
		memcpy(copy, colls, n_colls * sizeof(*copy));
	}
	free(d->colls);
	d->colls = copy;
	d->n_colls = n_colls;
	d->flops = flops;
	d->bytes = bytes;
}

/* Keeps the chosen candidate's FLOPs, bytes and collectives on its decision. */
static void set_work(shs__prop *x, shs_decision *d, const shs_cand *cand)
{
	shs__dec_set_work(x, d, cand->flops, cand->bytes, cand->colls, cand->n_colls);
}

/* Replicated result and operands: for an instruction no plugin serves. */
static void decide_replicated(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	shs_decision *d = shs__dec(x, c, i);
	const shs_shape **res = NULL;
	shs_pspec *leaves = NULL, *req = NULL;
	uint32_t *first = calloc(in->n_operands + 1, sizeof(*first)), n_res = 0, n_req = 0;

	res = leaf_shapes(&in->shape, &n_res);
	for (uint32_t k = 0; k < in->n_operands; k++) {
		first[k] = n_req;
		n_req += shs_shape_leaves(&x->m->comps[c]->instrs[in->operands[k]]->shape);
	}
	if (first)
		first[in->n_operands] = n_req;
	leaves = calloc(n_res ? n_res : 1, sizeof(*leaves));
	req = calloc(n_req ? n_req : 1, sizeof(*req));
	if (!first || !res || !leaves || !req) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		goto done;
	}
	for (uint32_t j = 0; j < n_res; j++)
		shs_spec_replicated(&leaves[j], res[j]->rank);
	for (uint32_t k = 0; k < in->n_operands; k++) {
		const shs_shape *sh[SHS_MAX_VALUE_LEAVES];
		uint32_t n = shs_shape_leaf_list(&x->m->comps[c]->instrs[in->operands[k]]->shape, sh,
						 SHS_MAX_VALUE_LEAVES);
		for (uint32_t j = 0; j < n; j++)
			shs_spec_replicated(&req[first[k] + j], sh[j]->rank);
	}
	shs__dec_set(x, d, leaves, n_res, req, first, in->n_operands, "none", "replicated", 0);
done:
	free(first);
	free((void *)res);
	free(leaves);
	free(req);
}

uint64_t shs__hash_specs(const shs_pspec *s, uint32_t n, uint64_t key)
{
	for (uint32_t k = 0; k < n; k++) {
		key = XXH3_64bits_withSeed(&s[k], offsetof(shs_pspec, dims) +
							  s[k].rank * sizeof(shs_pdim), key);
	}
	return key;
}

/* key and a count mixed (an odd multiplier and a rotation; the specs go through XXH3). */
static uint64_t mix(uint64_t key, uint32_t n)
{
	key = (key ^ n) * 0x9e3779b97f4a7c15ull;
	return key ^ (key >> 29);
}

/* The hash of a query: each operand's shardings (or that it has none) and the wanted result,
 * chained chunk by chunk. */
static uint64_t query_key(shs__prop *x, uint32_t c, const shs_instr *in,
			  const shs_pspec *const *hints, const shs_pspec *want, uint32_t n_res)
{
	uint64_t key = 0;

	for (uint32_t k = 0; k < in->n_operands; k++) {
		uint32_t n = hints[k] ? shs__dec(x, c, in->operands[k])->n_leaves : 0;
		key = shs__hash_specs(hints[k], n, mix(key, n));
	}
	key = mix(key, n_res + (want ? 1u << 31 : 0));
	return want ? shs__hash_specs(want, n_res, key) : key;
}

/* Whether a user of value v before instruction before (all when UINT32_MAX) changed after
 * tick. */
static bool users_changed(shs__prop *x, uint32_t c, uint32_t v, uint32_t before, uint64_t tick)
{
	const shs_users *u = &x->users[c];

	for (uint32_t k = u->first[v]; k < u->first[v + 1]; k++)
		if (u->list[k] < before && shs__dec(x, c, u->list[k])->tick > tick)
			return true;
	return false;
}

bool shs__users_changed_since(shs__prop *x, uint32_t c, uint32_t v, uint64_t tick)
{
	return users_changed(x, c, v, UINT32_MAX, tick);
}

/* Whether instruction i or an operand of it has more than MEMO_MAX_USERS users: checking them
 * all on every decision would cost more than deciding (a constant read by thousands). */
static bool too_many_users(const shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_users *u = &x->users[c];
	const shs_instr *in = x->m->comps[c]->instrs[i];

	if (u->first[i + 1] - u->first[i] > MEMO_MAX_USERS)
		return true;
	for (uint32_t k = 0; k < in->n_operands; k++)
		if (u->first[in->operands[k] + 1] - u->first[in->operands[k]] > MEMO_MAX_USERS)
			return true;
	return false;
}

/* The hash of what the caller of i's computation wants of it (0 when nothing or not a
 * root). */
static uint64_t ext_key(shs__prop *x, uint32_t c, uint32_t i)
{
	if (i != x->m->comps[c]->root || !x->ext_req[c])
		return 0;
	return shs__hash_specs(x->ext_req[c], shs__dec(x, c, i)->n_leaves, 1);
}

/* Whether nothing i's last decision read changed since it was made (cc->tick) besides its
 * query: what the earlier users of each operand require (a copy they made is free), (pull)
 * what the users of i require and, with operands, the operands' own decisions. */
static bool reads_unchanged(shs__prop *x, uint32_t c, uint32_t i, bool operands)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	uint64_t tick = x->cache[c][i].tick;

	for (uint32_t k = 0; k < in->n_operands; k++)
		if ((operands && shs__dec(x, c, in->operands[k])->tick > tick) ||
		    users_changed(x, c, in->operands[k], i, tick))
			return false;
	return !x->pull || !users_changed(x, c, i, UINT32_MAX, tick);
}

/* Whether i's last decision still holds: made in a pass of the same kind (pull), from the same
 * query (key) and caller's want (ext), and nothing else it read changed since. */
static bool still_decided(shs__prop *x, uint32_t c, uint32_t i, uint64_t key, uint64_t ext)
{
	const shs__cand_cache *cc = &x->cache[c][i];

	return cc->decided && cc->valid && cc->key == key && cc->pull == x->pull &&
	       cc->ext == ext && reads_unchanged(x, c, i, false);
}

/* still_decided without the query key: made in a pass of the same kind with nothing from its
 * caller, and no operand's decision changed since either, so the key would come out the same.
 * A tuple and a root its caller constrains are left to still_decided (what is wanted of them
 * is not their users' own). */
static bool unchanged_since_decided(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_computation *comp = x->m->comps[c];
	const shs__cand_cache *cc = &x->cache[c][i];

	return cc->decided && cc->valid && cc->pull == x->pull && !cc->ext &&
	       comp->instrs[i]->shape.type != SHS_TUPLE && !(i == comp->root && x->ext_req[c]) &&
	       reads_unchanged(x, c, i, true);
}

/* The candidates for instruction i given the query key (hints and want): the cached ones when
 * an earlier pass asked the same, or a query its strategies digest alike, else the plugins'
 * (then cached). NULL after an error (x->rc set). */
static const shs_cands *candidates(shs__prop *x, uint32_t c, uint32_t i,
				   const shs_pspec *const *hints, const shs_pspec *want,
				   uint64_t key)
{
	const shs_computation *comp = x->m->comps[c];
	shs__cand_cache *cc = &x->cache[c][i];
	shs_host_query q = { .views = x->views, .comp = c, .instr = i, .mesh = &x->r->mesh,
			     .mode = SHS_PMODE_PROPAGATE, .hints = hints, .result_hint = want };
	uint64_t lkey = key;
	shs__list *l;
	int rc = SHS_OK;

	if (cc->valid && cc->key == key)
		return &cc->list->cands;
	if (!cc->cls_known) {
		cc->cls = x->r->no_reuse ? 0 : shs_host_query_class(x->h, x->views, c, i,
								     comp->instrs[i]);
		cc->digestible = cc->cls && shs_host_query_digestible(x->h, x->views, c, i,
								      comp->instrs[i]);
		cc->cls_known = true;
	}
	/* queries that differ only where the strategies do not look share a list */
	if (cc->digestible && (lkey = shs_host_query_digest(x->h, &q, comp->instrs[i])) == 0)
		lkey = key;
	if (cc->valid && cc->lkey == lkey) {
		cc->key = key;
		return &cc->list->cands;
	}
	/* the instruction's queries give about as many candidates each time */
	q.cap_hint = cc->list ? cc->list->cands.n : 0;
	/* let go of the old list first: when no one else holds it, its arena takes the new one */
	shs__list_drop(x->share, cc->list);
	cc->list = NULL;
	cc->valid = false;
	if (cc->cls && (l = shs__share_get(x->share, cc->cls, lkey))) {
		l->refs++;
	} else if ((l = shs__list_new(x->share))) {
		q.arena = l->cands.a;
		rc = shs_host_candidates_q(x->h, x->m, comp, comp->instrs[i], &q, &l->cands,
					   x->e);
		if (rc == SHS_OK && cc->cls && l->cands.served && l->cands.n)
			shs__share_put(x->share, cc->cls, lkey, l);
	} else {
		rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
	}
	if (rc != SHS_OK) {
		shs__list_drop(x->share, l);
		x->rc = rc;
		return NULL;
	}
	cc->list = l;
	cc->key = key;
	cc->lkey = lkey;
	cc->valid = true;
	return &l->cands;
}

/* shs__user_req of array instruction i, kept between visits while none of its users changed
 * (a root its caller constrains and a tuple are asked every time: their answers are not the
 * users' own arrays). */
static const shs_pspec *users_want(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_computation *comp = x->m->comps[c];
	shs__cand_cache *cc = &x->cache[c][i];

	if ((i == comp->root && x->ext_req[c]) || comp->instrs[i]->shape.type == SHS_TUPLE)
		return shs__user_req(x, c, i);
	if (!cc->users_valid || users_changed(x, c, i, UINT32_MAX, cc->users_tick)) {
		cc->users_want = shs__user_req(x, c, i);
		cc->users_tick = x->clock;
		cc->users_valid = true;
	}
	return cc->users_want;
}

/* Whether candidate cand makes exactly want (n leaves; NULL: nothing is wanted). */
static bool makes(const shs_cand *cand, const shs_pspec *want, uint32_t n)
{
	return want && cand->n_result == n && shs__specs_equal(cand->result, want, n);
}

/* Whether instruction in of computation c is a matmul whose operands are all Sharding
 * constraints. XLA's partitioner runs such a dot on its operands as constrained: its dot handler
 * partitions the dot by the dims the operands are split on and reshards the result to the
 * dot's own sharding (a partial sum's all-reduce), rather than gathering what the program
 * pinned (the pipelined program pins each layer matmul so; JAX's with_sharding_constraint). */
static bool reads_constrained(const shs_computation *comp, const shs_instr *in)
{
	if ((in->op != SHS_OP_DOT && in->op != SHS_OP_CONVOLUTION) || !in->n_operands)
		return false;
	for (uint32_t k = 0; k < in->n_operands; k++)
		if (!shs_is_sharding_constraint(comp->instrs[in->operands[k]]))
			return false;
	return true;
}

/* Whether candidate cand reads each of in's operands as hints gives it (no reshard). */
static bool reads_as_given(const shs_cand *cand, const shs_instr *in,
			   const shs_pspec *const *hints)
{
	for (uint32_t k = 0; k < in->n_operands && k < cand->n_operands; k++) {
		uint32_t n = cand->operand_first[k + 1] - cand->operand_first[k];
		if (!hints[k] || !shs__specs_equal(hints[k], &cand->operands[cand->operand_first[k]],
						   n))
			return false;
	}
	return true;
}

/* Which of an instruction's candidates may be chosen: those that make want (when set), split
 * no axis of forbid, and read the operands as hints gives them (when keep). */
typedef struct choice {
	const shs_pspec *want;
	uint32_t n_res, forbid;
	const shs_instr *in;
	const shs_pspec *const *hints;
	bool keep;
} choice;

static bool allowed(const choice *ch, const shs_cand *cand)
{
	return (!ch->want || makes(cand, ch->want, ch->n_res)) &&
	       !shs_cand_uses_axes(cand, ch->forbid) &&
	       (!ch->keep || reads_as_given(cand, ch->in, ch->hints));
}

/* Whether ch allows some candidate. */
static bool any_allowed(const shs_cands *cands, const choice *ch)
{
	for (uint32_t k = 0; k < cands->n; k++)
		if (allowed(ch, &cands->v[k]))
			return true;
	return false;
}

/* The least a candidate's score comes to: its own cost with nothing from its operands and
 * users (its compute and its own collectives, an all-reduce counted as off the path). */
static double floor_of(const shs__prop *x, const shs_cand *cand)
{
	return shs__cand_cost(cand, &x->r->mesh, &x->r->chip, 0, 0, true);
}

/* The floors of list l's candidates (l->floors, made on first use for the plan's chip and kept
 * with the list), and the candidate with the lowest (the first of equals) among those ch
 * allows into *lowest: scored first, its score bounds the rest. SHS_OK or SHS_ENOMEM. */
static int floors(shs__prop *x, shs__list *l, const choice *ch, uint32_t *lowest)
{
	const shs_cands *cands = &l->cands;
	double low = 0;

	if (!l->floors || memcmp(&l->floors_chip, &x->r->chip, sizeof(l->floors_chip))) {
		if (!l->floors)
			l->floors = shs_arena_alloc(cands->a, cands->n * sizeof(*l->floors));
		if (!l->floors)
			return shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		for (uint32_t k = 0; k < cands->n; k++)
			l->floors[k] = floor_of(x, &cands->v[k]);
		l->floors_chip = x->r->chip;
	}
	*lowest = UINT32_MAX;
	for (uint32_t k = 0; k < cands->n; k++) {
		if (!allowed(ch, &cands->v[k]))
			continue;
		if (*lowest == UINT32_MAX || l->floors[k] < low) {
			*lowest = k;
			low = l->floors[k];
		}
	}
	if (*lowest == UINT32_MAX)
		*lowest = 0;
	return SHS_OK;
}

static void decide_default(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	/* most instructions have a few operands and leaves: on the stack, else on the heap */
	const shs_pspec *hint_room[SMALL], **hints = hint_room;
	const shs_shape *res_room[SMALL], **res = res_room;
	const shs_cands *cands;
	const shs_pspec *want;
	shs__cand_cache *cc = &x->cache[c][i];
	uint64_t key, ext = 0;
	uint32_t n_res = 0, best = 0, best_stacked = 0, lowest = 0;
	double best_cost = 0, best_bytes = 0, bound, lowest_score;
	const double *floor;
	bool best_wanted = false, memo, pin, pinned;
	choice ch;
	uint32_t forbid = shs__dec(x, c, i)->manual_axes;

	memo = !x->r->no_reuse && !too_many_users(x, c, i);
	if (memo && unchanged_since_decided(x, c, i))
		return; /* nothing it read changed: the same decision */
	if (in->n_operands >= SMALL && !(hints = calloc(in->n_operands + 1, sizeof(*hints)))) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		goto done;
	}
	n_res = shs_shape_leaves(&in->shape);
	for (uint32_t k = 0; k < in->n_operands; k++) {
		const shs_decision *od = shs__dec(x, c, in->operands[k]);
		hints[k] = od->set ? od->leaves : NULL;
	}
	want = x->hint_set[c] && x->hint_set[c][i] ? &x->hints[c][i]
		: x->pull ? users_want(x, c, i) : NULL;
	key = query_key(x, c, in, hints, want, n_res);
	ext = memo && x->pull ? ext_key(x, c, i) : 0;
	if (memo && still_decided(x, c, i, key, ext))
		goto done; /* the same context makes the same decision */
	cc->decided = false;
	if (n_res < SMALL)
		n_res = shs_shape_leaf_list(&in->shape, res, SMALL);
	else if (!(res = leaf_shapes(&in->shape, &n_res)))
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
	if (x->rc != SHS_OK)
		goto done;
	cands = candidates(x, c, i, hints, want, key);
	if (!cands)
		goto done;
	if (!cands->n) {
		decide_replicated(x, c, i);
		goto decided;
	}
	if ((x->rc = shs__score_begin(x, c, i, cands->n)) != SHS_OK)
		goto done;
	pin = x->pinned[c] && x->pinned[c][i];
	pinned = pin && want && any_allowed(cands, &(choice){ .want = want, .n_res = n_res });
	if (pin && !pinned && !x->pull)
		x->pins_missed++;
	ch = (choice){ .want = pinned ? want : NULL, .n_res = n_res, .forbid = forbid, .in = in,
		       .hints = hints, .keep = reads_constrained(comp, in) };
	if (ch.keep && !any_allowed(cands, &ch))
		ch.keep = false; /* no candidate runs on the operands as constrained */
	if ((x->rc = floors(x, cc->list, &ch, &lowest)) != SHS_OK)
		goto done;
	if (shs_cand_uses_axes(&cands->v[lowest], forbid)) {
		decide_replicated(x, c, i); /* every candidate splits a manual axis */
		goto decided;
	}
	floor = cc->list->floors;
	lowest_score = shs__score(x, c, i, &cands->v[lowest], hints, res, n_res,
				  makes(&cands->v[lowest], want, n_res));
	bound = BOUND_MARGIN * lowest_score + BOUND_SLACK_S;
	for (uint32_t k = 0, first = 1; k < cands->n; k++) {
		double tol = 1e-9 * (best_cost > 0 ? best_cost : 1e-12), s, b;
		bool wanted;
		uint32_t st;
		/* a score is at least the candidate's floor: one whose floor is over the best
		 * score so far, or well over a score some candidate has, can neither beat nor
		 * tie it */
		if (k != lowest && (floor[k] > bound || (!first && floor[k] > best_cost + tol)))
			continue;
		if (!allowed(&ch, &cands->v[k]))
			continue; /* pinned elsewhere, a manual axis split, or a constraint undone */
		wanted = makes(&cands->v[k], want, n_res);
		s = k == lowest ? lowest_score : shs__score(x, c, i, &cands->v[k], hints, res,
							    n_res, wanted);
		if (!first && s > best_cost + tol)
			continue; /* neither beats nor ties the best */
		b = result_bytes(&cands->v[k], res, n_res, &x->r->mesh);
		st = stacked_axes(&cands->v[k]);
		bool tie = s <= best_cost + tol, same_bytes = b <= best_bytes * (1 + 1e-12);
		if (first || s < best_cost - tol || (tie && wanted && !best_wanted) ||
		    (tie && wanted == best_wanted && b < best_bytes * (1 - 1e-12)) ||
		    (tie && wanted == best_wanted && same_bytes && st < best_stacked)) {
			best = k;
			best_cost = s;
			best_bytes = b;
			best_stacked = st;
			best_wanted = wanted;
			first = 0;
		}
	}
	shs__dec_set(x, shs__dec(x, c, i), cands->v[best].result, n_res, cands->v[best].operands,
		     cands->v[best].operand_first, in->n_operands, cands->v[best].strategy,
		     cands->v[best].label, best_cost);
	set_work(x, shs__dec(x, c, i), &cands->v[best]);
decided:
	cc->decided = memo && x->rc == SHS_OK;
	cc->pull = x->pull;
	cc->ext = ext;
	cc->tick = x->clock;
done:
	if (hints != hint_room)
		free(hints);
	if (res != res_room)
		free((void *)res);
}

/* Whether candidate cand keeps its result and operands whole on every device. */
static bool cand_replicated(const shs_cand *cand)
{
	uint32_t n_ops = cand->operand_first[cand->n_operands];

	for (uint32_t k = 0; k < cand->n_result; k++)
		if (!shs_spec_is_replicated(&cand->result[k]))
			return false;
	for (uint32_t k = 0; k < n_ops; k++)
		if (!shs_spec_is_replicated(&cand->operands[k]))
			return false;
	return true;
}

/* Instruction i of a shard_map region, run as the program wrote it: replicated in its local
 * shapes, costing what its strategies' replicated candidate costs (the cheapest of them), or
 * the collective its device groups make. Never inlined: decide() recurses once per level of
 * nested calls, and its frame must stay small (5000 levels on a thread's stack). */
__attribute__((noinline)) static void decide_manual(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	shs_decision *d = shs__dec(x, c, i);
	const shs_pspec *hint_room[SMALL], **hints = hint_room;
	const shs_cands *cands;
	shs_coll coll;
	uint32_t best = UINT32_MAX;
	int is_coll;

	decide_replicated(x, c, i);
	if (x->rc != SHS_OK)
		return;
	d->fixed = true; /* the program's: no pass or refinement revisits it */
	d->strategy = "manual";
	snprintf(d->label, sizeof(d->label), "as written in shard_map's region");
	if ((is_coll = shs__manual_coll(x, c, i, &coll, x->e)) != 0) {
		if (is_coll < 0)
			x->rc = x->e->code;
		else
			shs__dec_set_work(x, d, 0, 0, &coll, 1);
		return;
	}
	if (in->n_operands >= SMALL && !(hints = calloc(in->n_operands, sizeof(*hints)))) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		return;
	}
	for (uint32_t k = 0; k < in->n_operands; k++) {
		const shs_decision *od = shs__dec(x, c, in->operands[k]);
		hints[k] = od->set ? od->leaves : NULL;
	}
	cands = candidates(x, c, i, hints, NULL,
			   query_key(x, c, in, hints, NULL, shs_shape_leaves(&in->shape)));
	for (uint32_t k = 0; cands && k < cands->n; k++)
		if (cand_replicated(&cands->v[k]) &&
		    (best == UINT32_MAX || shs__cand_compute(&cands->v[k], &x->r->chip) <
						   shs__cand_compute(&cands->v[best], &x->r->chip)))
			best = k;
	if (best != UINT32_MAX)
		set_work(x, d, &cands->v[best]);
	if (hints != hint_room)
		free(hints);
}

/* A collective written in a partly manual region: its operand's sharding over the other axes
 * passes through, and it moves its operand's piece over the axes its groups span. */
static void decide_partial_coll(shs__prop *x, uint32_t c, uint32_t i, shs_coll *coll)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	const shs_decision *od = in->n_operands ? shs__dec(x, c, in->operands[0]) : NULL;
	shs_decision *d = shs__dec(x, c, i);
	uint32_t first[2] = { 0, 1 };
	shs_pspec s;
	double split = 1;

	if (in->n_operands != 1 || in->shape.type == SHS_TUPLE || !od->set || od->n_leaves != 1 ||
	    od->leaves[0].rank != in->shape.rank) {
		decide_replicated(x, c, i);
		shs__dec_set_work(x, d, 0, 0, coll, 1);
		return;
	}
	s = od->leaves[0];
	for (uint32_t k = 0; k < s.rank; k++)
		split *= (double)shs_spec_dim_split(&s, k, &x->r->mesh);
	coll->bytes /= split > 1 ? split : 1;
	if (shs__dec_set(x, d, &s, 1, &s, first, 1, "manual", "as written in shard_map's region",
			 0) != SHS_OK) {
		x->rc = shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		return;
	}
	shs__dec_set_work(x, d, 0, 0, coll, 1);
}

/* Instruction i of a partly manual region, or the exit of one: its collectives and its exit as
 * the program wrote them (true: decided); other work is planned over the axes it leaves to the
 * compiler (false: decide it so). Never inlined, as decide_manual. */
__attribute__((noinline)) static bool decide_partial(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	shs_coll coll;
	int r;

	if (shs_is_shard_to_full(in))
		return shs__manual_exit(x, c, i) != 0;
	r = shs__manual_coll(x, c, i, &coll, x->e);
	if (r < 0)
		x->rc = x->e->code;
	else if (r > 0)
		decide_partial_coll(x, c, i, &coll);
	return r != 0;
}

static void decide(shs__prop *x, uint32_t c, uint32_t i)
{
	const shs_instr *in = x->m->comps[c]->instrs[i];
	shs_decision *d = shs__dec(x, c, i);

	if (d->fixed || x->rc != SHS_OK)
		return;
	if (in->op == SHS_OP_PARAMETER) {
		if (c == x->m->entry)
			decide_free(x, c, i);
		return;
	}
	if (shs_manual_is(&x->manual, c, i)) { /* control flow passes its operands on */
		if (!shs__decide_flow(x, c, i))
			decide_manual(x, c, i);
		return;
	}
	if ((d->manual_axes || shs_is_shard_to_full(in)) && decide_partial(x, c, i))
		return;
	if (x->free_instr[c][i]) {
		decide_free(x, c, i);
		return;
	}
	if (shs__decide_flow(x, c, i))
		return;
	decide_default(x, c, i);
}

void shs__pass_comp(shs__prop *x, uint32_t c)
{
	uint32_t n = x->m->comps[c]->n_instrs;

	for (uint32_t k = 0; k < n && x->rc == SHS_OK; k++)
		decide(x, c, x->reverse ? n - 1 - k : k);
}
