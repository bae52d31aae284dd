/* A candidate's score in propagation: its own work, resharding its operands into it and (in
 * the passes after the first) resharding its result for its users; with a memo of the parts
 * that depend on one spec only, since an instruction's candidates share a few operand and
 * result shardings among many (thousands for a dot on a four-axis mesh). */
#include <stdlib.h>
#include <string.h>

#include "propagate_internal.h"

/* Moving the state (a seeded parameter: a weight or its Adam state, which must come back in
 * the same sharding; or what the update makes of it at its shape) costs this many times its
 * transfer: an update run in another layout reshards every state input and the result. */
static const double STATE_RESHARD = 3;


/* Whether operand op of instruction user (of computation c) is read only by matmuls: the user
 * is one, or a call whose callee's parameter op feeds only matmuls (a layer's weight). */
static bool read_by_matmul(const shs__prop *x, uint32_t c, uint32_t user, uint32_t op)
{
	const shs_instr *u = x->m->comps[c]->instrs[user];
	const shs_computation *cc;
	const shs_users *cu;
	bool any = false;

	if (u->op == SHS_OP_DOT || u->op == SHS_OP_CONVOLUTION)
		return true;
	if (u->op != SHS_OP_CALL || !u->n_called || u->called[0] >= x->m->n_comps)
		return false;
	cc = x->m->comps[u->called[0]];
	cu = &x->users[u->called[0]];
	for (uint32_t j = 0; j < cc->n_instrs; j++) {
		if (cc->instrs[j]->op != SHS_OP_PARAMETER || cc->instrs[j]->parameter_number != op)
			continue;
		for (uint32_t k = cu->first[j]; k < cu->first[j + 1]; k++) {
			shs_opcode o = cc->instrs[cu->list[k]]->op;
			if (o != SHS_OP_DOT && o != SHS_OP_CONVOLUTION)
				return false;
			any = true;
		}
	}
	return any;
}

/* Whether a matmul hides gathering value v of computation c (leaf of shape a) from sharding
 * from into to under its compute: a weight's gather always, prefetched as FSDP prefetches it
 * (and every gather when the request scores them all hidden, the search's second opinion); an
 * activation's only where the runtime decomposes the matmul (shs__decomposed). */
static bool gather_hidden(const shs__prop *x, uint32_t c, uint32_t v, const shs_pspec *from,
			  const shs_pspec *to, const shs_shape *a)
{
	return x->r->gathers_hidden || shs_is_weight(x->weights, c, v) ||
	       shs__decomposed(&x->r->chip, shs__gathered_bytes(from, to, a, &x->r->mesh));
}

/* Seconds of resharding what i produces into what each decided user requires (a matmul, or a
 * call that passes it to matmuls, hides the gather behind its compute where the matmul's own
 * score does, gather_hidden: a weight is gathered where the matmul reads it, not earlier on
 * its way). */
static double pull_cost(shs__prop *x, uint32_t c, uint32_t i, const shs_pspec *leaves,
			const shs_shape *const *shapes, uint32_t n_leaves)
{
	const shs_users *u = &x->users[c];
	const shs_computation *comp = x->m->comps[c];
	double cost = 0;

	if (i == comp->root && x->ext_req[c])
		for (uint32_t j = 0; j < n_leaves; j++)
			cost += shs__reshard_cost(&leaves[j], &x->ext_req[c][j], shapes[j],
						  &x->r->mesh, &x->r->chip, NULL);
	for (uint32_t k = u->first[i]; k < u->first[i + 1]; k++) {
		uint32_t user = u->list[k];
		const shs_decision *du = shs__dec(x, c, user);
		if (!du->set || !du->n_req)
			continue;
		for (uint32_t op = 0; op < comp->instrs[user]->n_operands; op++) {
			bool matmul;
			if (comp->instrs[user]->operands[op] != i)
				continue;
			matmul = read_by_matmul(x, c, user, op);
			for (uint32_t j = 0; j < n_leaves; j++) {
				const shs_pspec *to = &du->req[du->req_first[op] + j];
				bool hidden = matmul &&
					      gather_hidden(x, c, i, &leaves[j], to, shapes[j]);
				cost += shs__user_reshard_cost(&leaves[j], to, shapes[j],
							       &x->r->mesh, &x->r->chip,
							       hidden);
			}
		}
	}
	return cost;
}

/* Whether a user of value v before instruction i (in program order) already requires v in
 * the n leaves want: the partitioner reshards a value once per sharding and reuses the copy, so
 * only the first user pays for it. */
static bool reshard_made_before(shs__prop *x, uint32_t c, uint32_t i, uint32_t v,
				const shs_pspec *want, uint32_t n)
{
	const shs_users *u = &x->users[c];
	const shs_computation *comp = x->m->comps[c];

	for (uint32_t k = u->first[v]; k < u->first[v + 1]; k++) {
		uint32_t user = u->list[k];
		const shs_decision *du = shs__dec(x, c, user);
		const shs_instr *ui = comp->instrs[user];
		if (user >= i || !du->set || !du->n_req || ui->op == SHS_OP_TUPLE ||
		    ui->op == SHS_OP_GET_TUPLE_ELEMENT || ui->op == SHS_OP_CALL ||
		    ui->op == SHS_OP_WHILE || ui->op == SHS_OP_CONDITIONAL)
			continue;
		for (uint32_t op = 0; op < ui->n_operands; op++)
			if (ui->operands[op] == v && du->req_first[op] + n <= du->n_req &&
			    shs__specs_equal(&du->req[du->req_first[op]], want, n))
				return true;
	}
	return false;
}

/* Whether an earlier operand of in is the same value as operand k, wanted in the same n
 * leaves (one copy serves both). */
static bool operand_repeats(const shs_instr *in, const shs_cand *cand, uint32_t k, uint32_t n)
{
	for (uint32_t j = 0; j < k; j++)
		if (in->operands[j] == in->operands[k] &&
		    shs__specs_equal(&cand->operands[cand->operand_first[j]],
				&cand->operands[cand->operand_first[k]], n))
			return true;
	return false;
}

/* The parts of a score kept for the instruction being decided: per slot (operand k, or
 * RESULT_SLOT for the users' reshards) and spec, what that spec adds. */
static const uint32_t RESULT_SLOT = UINT32_MAX;
static const uint32_t MEMO_FROM = 8;          /* candidates: fewer are scored directly */
static const uint32_t MEMO_MAX_OPERANDS = 64; /* more: operand parts are not kept */

struct shs__score_entry {
	const shs_pspec *spec; /* the candidate's (the list outlives the decision) */
	uint64_t hash;
	uint32_t gen;     /* the decision it belongs to: another's is empty */
	uint32_t slot;
	bool skip;        /* an operand whose copy an earlier user made */
	double hidden, exposed; /* an operand's; or the users' reshards (exposed) */
};

void shs__score_memo_free(shs__score_memo *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

int shs__score_begin(shs__prop *x, uint32_t c, uint32_t i, uint32_t n_cands)
{
	shs__score_memo *m = &x->score;
	const shs_instr *in = x->m->comps[c]->instrs[i];
	uint64_t need = 2 * (uint64_t)n_cands * (in->n_operands + 1u), cap = 64;

	m->on = n_cands >= MEMO_FROM && !x->r->no_reuse;
	if (!m->on)
		return SHS_OK;
	/* an operand's part depends on the others' only when a value repeats among them */
	m->operands = in->n_operands <= MEMO_MAX_OPERANDS;
	for (uint32_t k = 0; k < in->n_operands && m->operands; k++)
		for (uint32_t j = 0; j < k; j++)
			m->operands &= in->operands[j] != in->operands[k];
	while (cap < need && cap < (1u << 24))
		cap *= 2;
	if (cap > m->cap) {
		shs__score_entry *v = calloc(cap, sizeof(*v));
		if (!v)
			return shs_seterr(x->e, SHS_ENOMEM, "plan: out of memory");
		free(m->v);
		m->v = v;
		m->cap = (uint32_t)cap;
		m->gen = 0;
	}
	m->used = (uint32_t)cap;
	m->count = 0;
	if (++m->gen == 0) { /* wrapped: no entry may look current */
		memset(m->v, 0, m->cap * sizeof(*m->v));
		m->gen = 1;
	}
	return SHS_OK;
}

/* The entry of (slot, the n specs at spec): the one kept, or a new one (*found false) that
 * the caller fills; NULL when the memo is off or full. */
static shs__score_entry *memo_at(shs__score_memo *m, uint32_t slot, const shs_pspec *spec,
				 uint32_t n, bool *found)
{
	uint64_t h = shs__hash_specs(spec, n, slot);
	uint32_t mask = m->used - 1;

	*found = false;
	if (!m->on || 2 * (m->count + 1) > m->used)
		return NULL;
	for (uint32_t at = (uint32_t)h & mask;; at = (at + 1) & mask) {
		shs__score_entry *e = &m->v[at];
		if (e->gen != m->gen) {
			*e = (shs__score_entry){ .spec = spec, .hash = h, .gen = m->gen,
						 .slot = slot };
			m->count++;
			return e;
		}
		if (e->hash == h && e->slot == slot && shs__specs_equal(e->spec, spec, n)) {
			*found = true;
			return e;
		}
	}
}

/* Seconds of bringing broadcast b (of computation c, now sharded as from) into sharding to,
 * as XLA's SPMD partitioner makes a broadcast in the sharding its user wants: its operand
 * resharded to what to asks of the operand's dims, then broadcast on each device
 * (SpmdPartitioningVisitor::HandleBroadcast); never more than resharding the broadcast's
 * result. *moved receives the all-to-all's share. */
static double broadcast_reshard(shs__prop *x, uint32_t c, const shs_instr *b, const shs_pspec *from,
				const shs_pspec *to, double *moved)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *src = comp->instrs[b->operands[0]];
	const shs_decision *sd = shs__dec(x, c, b->operands[0]);
	double whole = shs__reshard_cost(from, to, &b->shape, &x->r->mesh, &x->r->chip, moved);
	double part_moved, part;
	shs_pspec want;

	if (!sd->set || !sd->n_leaves || src->shape.type == SHS_TUPLE ||
	    b->dimensions.n != src->shape.rank || to->rank != b->shape.rank)
		return whole;
	memset(&want, 0, sizeof(want));
	want.rank = src->shape.rank;
	want.padded = to->padded;
	for (uint32_t j = 0; j < want.rank; j++) {
		int64_t d = b->dimensions.v[j];
		if (d < 0 || d >= (int64_t)to->rank)
			return whole;
		want.dims[j] = to->dims[d];
	}
	part = shs__reshard_cost(&sd->leaves[0], &want, &src->shape, &x->r->mesh, &x->r->chip,
				 &part_moved);
	if (part >= whole)
		return whole;
	*moved = part_moved;
	return part;
}

/* What operand k (its n leaves of shapes sh) adds when candidate cand wants it as want:
 * *skip when an earlier user made that copy (or an earlier operand is the same value wanted
 * alike), else the hidden and exposed seconds of resharding it. */
static void operand_part(shs__prop *x, uint32_t c, uint32_t i, const shs_cand *cand,
			 const shs_pspec *hint, uint32_t k, const shs_shape *const *sh, uint32_t n,
			 bool *skip, double *hidden, double *exposed)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i], *op = comp->instrs[in->operands[k]];
	const shs_pspec *want = &cand->operands[cand->operand_first[k]];
	/* a matmul may overlap the gather (gather_hidden), not the all-to-all before it */
	bool matmul = in->op == SHS_OP_DOT || in->op == SHS_OP_CONVOLUTION;
	double f = c == x->m->entry && x->state[in->operands[k]] ? STATE_RESHARD : 1;
	/* a broadcast is remade on each device from its operand */
	bool broadcast = op->op == SHS_OP_BROADCAST && n == 1 && op->n_operands == 1;

	*skip = !shs__specs_equal(hint, want, n) &&
		(reshard_made_before(x, c, i, in->operands[k], want, n) ||
		 operand_repeats(in, cand, k, n));
	if (*skip)
		return;
	for (uint32_t j = 0; j < n; j++) {
		double moved, t;
		if (broadcast)
			t = broadcast_reshard(x, c, op, &hint[j], &want[j], &moved);
		else
			t = shs__reshard_cost(&hint[j], &want[j], sh[j], &x->r->mesh, &x->r->chip,
					      &moved);
		if (matmul && gather_hidden(x, c, in->operands[k], &hint[j], &want[j], sh[j])) {
			*hidden += f * (t - moved);
			*exposed += f * moved;
		} else {
			*exposed += f * t;
		}
	}
}

/* Score of one candidate: its own work and resharding its operands (a seeded parameter's
 * STATE_RESHARD times over; nothing when an earlier user made the same copy), a reshard into
 * a matmul overlapping the compute as runtimes overlap it (collective matmul, weight
 * prefetch), and (pull) the reshards its users would need. */
double shs__score(shs__prop *x, uint32_t c, uint32_t i, const shs_cand *cand,
		  const shs_pspec *const *hints, const shs_shape *const *res_shapes,
		  uint32_t n_res, bool wanted)
{
	const shs_computation *comp = x->m->comps[c];
	const shs_instr *in = comp->instrs[i];
	shs__score_memo *m = &x->score;
	double hidden = 0, exposed = 0, pull = 0;
	shs__score_entry *e;
	bool found, skip;

	for (uint32_t k = 0; k < in->n_operands && k < cand->n_operands; k++) {
		const shs_shape *sh[SHS_MAX_VALUE_LEAVES];
		uint32_t n;
		if (!hints[k])
			continue;
		n = shs_shape_leaf_list(&comp->instrs[in->operands[k]]->shape, sh,
					SHS_MAX_VALUE_LEAVES);
		/* one leaf only: several would be summed in another order than the plain way */
		e = m->operands && n == 1 ? memo_at(m, k, &cand->operands[cand->operand_first[k]],
						    n, &found)
					  : NULL;
		if (!e) {
			operand_part(x, c, i, cand, hints[k], k, sh, n, &skip, &hidden, &exposed);
			continue;
		}
		if (!found)
			operand_part(x, c, i, cand, hints[k], k, sh, n, &e->skip, &e->hidden,
				     &e->exposed);
		if (!e->skip) {
			hidden += e->hidden;
			exposed += e->exposed;
		}
	}
	if (x->pull) {
		e = memo_at(m, RESULT_SLOT, cand->result, n_res, &found);
		if (e && found)
			pull = e->exposed;
		else
			pull = pull_cost(x, c, i, cand->result, res_shapes, n_res);
		if (e && !found)
			e->exposed = pull;
	}
	/* a value that only leaves the layer, made as its users want it: its reduction runs
	 * beside the rest of the step (and made here, not where the users would make it) */
	return shs__cand_cost(cand, &x->r->mesh, &x->r->chip, hidden, exposed,
			      wanted && x->pull && shs__leaves_layer(x, c, i)) + pull;
}
