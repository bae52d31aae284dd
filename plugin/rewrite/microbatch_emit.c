/* The micro-batched module written out: the loop over micro-batches (its body the entry's
 * instructions that depend on the data, at a micro-batch's shapes, with the accumulators), what
 * runs after it, and the called computations cloned at the shapes they are called with. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "microbatch_internal.h"

enum { MB_RESIZE_DEPTH = 64, MB_NAME_MAX = 512 };

static shs_arena *A(em *E)
{
	return E->nm->arena;
}

int mb_oom(em *E)
{
	if (E->rc == SHS_OK)
		E->rc = shs_seterr(E->x->e, SHS_ENOMEM, "micro-batches: out of memory");
	return E->rc;
}

const char *mb_name_with(em *E, const char *name, const char *suffix)
{
	char buf[MB_NAME_MAX];

	if (!suffix || !*suffix)
		return name;
	snprintf(buf, sizeof(buf), "%s%s", name ? name : "v", suffix);
	return shs_arena_strdup(A(E), buf);
}

/* Adds ins to nc; its index, or UINT32_MAX when out of memory. */
uint32_t mb_add(em *E, shs_computation *nc, shs_instr *ins)
{
	if (!ins || shs_comp_add_instr(E->nm, nc, ins) != SHS_OK) {
		mb_oom(E);
		return UINT32_MAX;
	}
	return nc->n_instrs - 1;
}

shs_instr *mb_fresh(em *E, shs_opcode op, const char *name)
{
	shs_instr *i = shs_arena_calloc(A(E), 1, sizeof(*i));
	char buf[MB_NAME_MAX];

	if (!i)
		return NULL;
	i->op = op;
	i->id = E->next_id++;
	snprintf(buf, sizeof(buf), "%s.%lld", name, (long long)i->id);
	i->name = shs_arena_strdup(A(E), buf);
	return i->name ? i : NULL;
}

bool mb_set_operands(em *E, shs_instr *i, const uint32_t *ops, uint32_t n)
{
	i->n_operands = n;
	i->operands = shs_arena_calloc(A(E), n + 1, sizeof(*ops));
	if (i->operands && n)
		memcpy(i->operands, ops, n * sizeof(*ops));
	return i->operands != NULL;
}

bool mb_array_shape(em *E, shs_shape *s, int type, const int64_t *dims, uint32_t rank)
{
	memset(s, 0, sizeof(*s));
	s->type = type;
	s->rank = rank;
	s->dims = shs_arena_calloc(A(E), rank + 1, sizeof(*dims));
	s->layout = shs_arena_calloc(A(E), 1, sizeof(*s->layout));
	if (!s->dims || !s->layout ||
	    !(s->layout->minor_to_major.v = shs_arena_calloc(A(E), rank + 1, sizeof(int64_t))))
		return false;
	if (rank)
		memcpy(s->dims, dims, rank * sizeof(*dims));
	/* the default layout, as JAX writes it: row-major */
	s->layout->minor_to_major.n = rank;
	for (uint32_t d = 0; d < rank; d++)
		s->layout->minor_to_major.v[d] = rank - 1 - d;
	return true;
}

/* Divides the batch dims of s's leaves (leaf states l, depth first) by the micro-batches. */
static void localize(const mb_ctx *x, shs_shape *s, const mb_leaf *l, uint32_t *at)
{
	if (s->type == SHS_TUPLE) {
		for (uint32_t k = 0; k < s->n_tuple; k++)
			localize(x, &s->tuple[k], l, at);
		return;
	}
	if (l[*at].kind == MB_BATCH && (uint32_t)l[*at].dim < s->rank)
		s->dims[l[*at].dim] /= x->mb;
	(*at)++;
}


/* A Pallas kernel's cost_estimate is for the shapes it was called with: a micro-batch's
 * call does 1/M of its work. */
static void scale_cost(em *E, shs_instr *ni)
{
	json_t *root, *cost;
	const char *keys[] = { "flops", "bytes_accessed", "transcendentals" };
	char *text;

	if (!ni->backend_config.len)
		return;
	root = json_loadb((const char *)ni->backend_config.data, ni->backend_config.len, 0, NULL);
	cost = json_object_get(json_object_get(root, "custom_call_config"), "cost_estimate");
	for (size_t k = 0; cost && k < sizeof(keys) / sizeof(*keys); k++) {
		json_t *v = json_object_get(cost, keys[k]);
		if (json_is_integer(v))
			json_integer_set(v, json_integer_value(v) / E->x->mb);
		else if (json_is_real(v))
			json_real_set(v, json_real_value(v) / (double)E->x->mb);
	}
	text = cost ? json_dumps(root, JSON_COMPACT) : NULL;
	if (text) {
		ni->backend_config.data = (const uint8_t *)shs_arena_strdup(A(E), text);
		ni->backend_config.len = ni->backend_config.data ? strlen(text) : 0;
	}
	free(text);
	json_decref(root);
}

/* Whether a copy of oi at a micro-batch's size is made from its operands' (a tuple of them, a
 * broadcast, an iota, a transpose, elementwise work); else the entry's loop slices it. */
static bool remade(const shs_instr *oi)
{
	return oi->op == SHS_OP_TUPLE || oi->op == SHS_OP_BROADCAST || oi->op == SHS_OP_IOTA ||
	       oi->op == SHS_OP_TRANSPOSE ||
	       (shs_opcode_is_elementwise(oi->op) && oi->shape.type != SHS_TUPLE);
}

static uint32_t resized(em *E, site *s, uint32_t v, const int8_t *need, uint32_t depth);

/* Operand k of instruction i, resized where the analysis says so. */
static uint32_t operand(em *E, site *s, uint32_t i, uint32_t k)
{
	const shs_instr *ins = s->c->instrs[i];
	uint32_t at = s->I->op_first[i], o = ins->operands[k];
	bool any = false;

	for (uint32_t j = 0; j < k; j++)
		at += s->I->first[ins->operands[j] + 1] - s->I->first[ins->operands[j]];
	for (uint32_t l = 0; l < s->I->first[o + 1] - s->I->first[o]; l++)
		any |= s->I->need[at + l] >= 0;
	return any ? resized(E, s, o, s->I->need + at, 0) : s->map[o];
}

/* A copy of instruction i at its instance's shapes, its operands from s->map. */
uint32_t mb_copy(em *E, site *s, uint32_t i)
{
	const shs_instr *oi = s->c->instrs[i];
	const mb_leaf *l = s->I->leaf + s->I->first[i];
	shs_instr *ni = shs_arena_alloc(A(E), sizeof(*ni));
	uint32_t at = 0, *ops, *called;

	if (!ni)
		return mb_oom(E), UINT32_MAX;
	*ni = *oi;
	ni->id = E->next_id++;
	ni->name = mb_name_with(E, oi->name, s->suffix);
	ni->n_control = 0;
	ni->control = NULL;
	ops = shs_arena_calloc(A(E), oi->n_operands + 1, sizeof(*ops));
	called = shs_arena_calloc(A(E), oi->n_called + 1, sizeof(*called));
	if (!ni->name || !ops || !called || shs_shape_copy(A(E), &ni->shape, &oi->shape) != SHS_OK)
		return mb_oom(E), UINT32_MAX;
	localize(E->x, &ni->shape, l, &at);
	for (uint32_t k = 0; k < oi->n_operands; k++)
		ops[k] = operand(E, s, i, k);
	for (uint32_t k = 0; k < oi->n_called; k++) {
		bool mapped = (oi->op == SHS_OP_WHILE || oi->op == SHS_OP_CALL ||
			       oi->op == SHS_OP_FUSION || oi->op == SHS_OP_CONDITIONAL) &&
			      !(s->I->where && s->I->where[i] == MB_AFTER);
		called[k] = mapped ? mb_inst_comp(E, s->I->callee[s->I->call_first[i] + k])
				   : mb_orig_comp(E, oi->called[k]);
	}
	ni->operands = ops;
	ni->called = called;
	if (l->kind == MB_BATCH && oi->shape.type != SHS_TUPLE) {
		int d = l->dim;
		if (oi->dynamic_slice_sizes.n > (uint32_t)d) {
			ni->dynamic_slice_sizes.v = shs_arena_memdup(A(E), oi->dynamic_slice_sizes.v,
					oi->dynamic_slice_sizes.n * sizeof(int64_t));
			if (!ni->dynamic_slice_sizes.v)
				return mb_oom(E), UINT32_MAX;
			ni->dynamic_slice_sizes.v[d] = ni->shape.dims[d];
		}
		if (oi->op == SHS_OP_SLICE && oi->n_slice > (uint32_t)d) {
			ni->slice = shs_arena_memdup(A(E), oi->slice, oi->n_slice * sizeof(*oi->slice));
			if (!ni->slice)
				return mb_oom(E), UINT32_MAX;
			ni->slice[d].limit = ni->shape.dims[d];
		}
	}
	if (oi->op == SHS_OP_CUSTOM_CALL && s->I->changes)
		for (uint32_t k = 0; k < s->I->first[i + 1] - s->I->first[i]; k++)
			if (l[k].kind == MB_BATCH) {
				scale_cost(E, ni);
				break;
			}
	return E->rc == SHS_OK ? mb_add(E, s->nc, ni) : UINT32_MAX;
}

/* A value made at full size (a broadcast, an iota, elementwise work on them, a tuple of them)
 * made again with the batch dim need[leaf] of each leaf (-1: as it is) per micro-batch. */
static uint32_t resized(em *E, site *s, uint32_t v, const int8_t *need, uint32_t depth)
{
	const shs_instr *oi = s->c->instrs[v];
	shs_instr *ni;
	uint32_t *ops;
	char suffix[32];
	int d = need[0];

	if (E->rc != SHS_OK)
		return UINT32_MAX;
	if (!remade(oi) && s->trip != UINT32_MAX)
		return mb_rows(E, s, s->map[v], d); /* the entry's loop: its rows */
	if (depth > MB_RESIZE_DEPTH || !remade(oi))
		return E->rc = mb_fail(E->x, s->c, oi, "a value of the whole batch's size the "
				       "rewrite cannot make per micro-batch"), UINT32_MAX;
	ni = shs_arena_alloc(A(E), sizeof(*ni));
	ops = shs_arena_calloc(A(E), oi->n_operands + 1, sizeof(*ops));
	if (!ni || !ops)
		return mb_oom(E), UINT32_MAX;
	*ni = *oi;
	ni->id = E->next_id++;
	snprintf(suffix, sizeof(suffix), ".mb%lld", (long long)ni->id); /* one per copy */
	ni->name = mb_name_with(E, oi->name, suffix);
	ni->n_control = 0;
	ni->operands = ops;
	if (!ni->name || shs_shape_copy(A(E), &ni->shape, &oi->shape) != SHS_OK)
		return mb_oom(E), UINT32_MAX;
	if (oi->op == SHS_OP_TUPLE) {
		uint32_t at = 0;
		for (uint32_t k = 0; k < oi->n_operands; k++) {
			uint32_t o = oi->operands[k], n = shs_shape_leaves(&s->c->instrs[o]->shape);
			bool any = false;
			for (uint32_t j = 0; j < n; j++)
				any |= need[at + j] >= 0;
			ops[k] = any ? resized(E, s, o, need + at, depth + 1) : s->map[o];
			ni->shape.tuple[k] = s->nc->instrs[ops[k] < s->nc->n_instrs ? ops[k] : 0]->shape;
			at += n;
		}
		return E->rc == SHS_OK ? mb_add(E, s->nc, ni) : UINT32_MAX;
	}
	ni->shape.dims[d] /= E->x->mb;
	for (uint32_t k = 0; k < oi->n_operands; k++) {
		uint32_t o = oi->operands[k];
		int8_t sub = mb_operand_dim(s->c, oi, k, d);
		ops[k] = sub >= 0 ? resized(E, s, o, &sub, depth + 1) : s->map[o];
	}
	return E->rc == SHS_OK ? mb_add(E, s->nc, ni) : UINT32_MAX;
}

void mb_mark_resized(const mb_inst *I, const shs_computation *c, uint32_t v, const int8_t *need,
		     uint8_t *used, uint32_t depth)
{
	const shs_instr *oi = c->instrs[v];
	int d = need[0];

	if (depth > MB_RESIZE_DEPTH)
		return;
	if (!remade(oi)) { /* sliced from the value itself (the entry's loop) */
		used[v] = 1;
		return;
	}
	if (oi->op == SHS_OP_TUPLE) {
		uint32_t at = 0;
		for (uint32_t k = 0; k < oi->n_operands; k++) {
			uint32_t o = oi->operands[k], n = I->first[o + 1] - I->first[o];
			bool any = false;
			for (uint32_t j = 0; j < n; j++)
				any |= need[at + j] >= 0;
			if (any)
				mb_mark_resized(I, c, o, need + at, used, depth + 1);
			else
				used[o] = 1;
			at += n;
		}
		return;
	}
	for (uint32_t k = 0; k < oi->n_operands; k++) {
		uint32_t o = oi->operands[k];
		int8_t sub = mb_operand_dim(c, oi, k, d);
		if (sub >= 0)
			mb_mark_resized(I, c, o, &sub, used, depth + 1);
		else
			used[o] = 1;
	}
}

void mb_mark_operands(const mb_inst *I, const shs_computation *c, uint32_t i, uint8_t *used)
{
	const shs_instr *ins = c->instrs[i];
	uint32_t at = I->op_first[i];

	for (uint32_t k = 0; k < ins->n_operands; k++) {
		uint32_t o = ins->operands[k], n = I->first[o + 1] - I->first[o];
		bool resize = false;
		for (uint32_t l = 0; l < n; l++)
			resize |= I->need[at + l] >= 0;
		if (resize)
			mb_mark_resized(I, c, o, I->need + at, used, 0);
		else
			used[o] = 1;
		at += n;
	}
}

bool mb_effects(const shs_instr *ins)
{
	return ins->op == SHS_OP_PARAMETER || ins->custom_call_has_side_effect ||
	       ins->op == SHS_OP_OUTFEED || ins->op == SHS_OP_SEND || ins->op == SHS_OP_SEND_DONE ||
	       ins->op == SHS_OP_RECV || ins->op == SHS_OP_RECV_DONE || ins->op == SHS_OP_INFEED;
}

/* The computation of instance k in nm: the original when nothing in it changes, else a
 * clone at the instance's shapes. */
uint32_t mb_inst_comp(em *E, uint32_t k)
{
	mb_inst *I = E->x->inst[k];
	const shs_computation *c = E->x->m->comps[I->comp];
	shs_computation *nc;
	char suffix[32];
	uint8_t *used;
	site s;

	if (!I->changes)
		return mb_orig_comp(E, I->comp);
	if (I->out != UINT32_MAX || E->rc != SHS_OK)
		return I->out;
	nc = shs_arena_calloc(A(E), 1, sizeof(*nc));
	snprintf(suffix, sizeof(suffix), ".mb%u", k);
	s = (site){ .I = I, .c = c, .nc = nc, .suffix = suffix, .trip = UINT32_MAX,
		    .map = calloc(c->n_instrs + 1, sizeof(uint32_t)) };
	if (!nc || !s.map) {
		free(s.map);
		return mb_oom(E), UINT32_MAX;
	}
	*nc = *c;
	nc->id = E->next_id++;
	nc->name = mb_name_with(E, c->name, suffix);
	nc->n_instrs = 0;
	nc->instrs = NULL;
	/* what the clone reads: a value only read resized is not made at full size too */
	used = calloc(c->n_instrs + 1, 1);
	if (!used) {
		free(s.map);
		return mb_oom(E), UINT32_MAX;
	}
	used[c->root] = 1;
	for (uint32_t i = c->n_instrs; i-- > 0;)
		if (used[i] || mb_effects(c->instrs[i]))
			mb_mark_operands(I, c, i, used);
	for (uint32_t i = 0; i < c->n_instrs && E->rc == SHS_OK; i++)
		if (used[i] || mb_effects(c->instrs[i]))
			s.map[i] = mb_copy(E, &s, i);
	nc->root = s.map[c->root];
	free(used);
	free(s.map);
	if (E->rc != SHS_OK || shs_module_add_comp(E->nm, nc) != SHS_OK)
		return mb_oom(E), UINT32_MAX;
	return I->out = E->nm->n_comps - 1;
}

/* Computation c of the old module in nm as it is (its callees first). */
uint32_t mb_orig_comp(em *E, uint32_t c)
{
	const shs_computation *oc = E->x->m->comps[c];

	if (E->orig[c] != UINT32_MAX || E->rc != SHS_OK)
		return E->orig[c];
	for (uint32_t i = 0; i < oc->n_instrs; i++)
		for (uint32_t k = 0; k < oc->instrs[i]->n_called; k++)
			mb_orig_comp(E, oc->instrs[i]->called[k]);
	if (E->rc != SHS_OK)
		return UINT32_MAX;
	/* a callee's index may differ in nm: the instructions are copied with it remapped */
	shs_computation *nc = shs_arena_alloc(A(E), sizeof(*nc));
	if (!nc)
		return mb_oom(E), UINT32_MAX;
	*nc = *oc;
	nc->instrs = shs_arena_calloc(A(E), oc->n_instrs + 1, sizeof(*nc->instrs));
	for (uint32_t i = 0; nc->instrs && i < oc->n_instrs; i++) {
		shs_instr *ni = shs_arena_memdup(A(E), oc->instrs[i], sizeof(*ni));
		uint32_t *called = shs_arena_calloc(A(E), ni ? ni->n_called + 1 : 1,
						    sizeof(*called));
		if (!ni || !called)
			return mb_oom(E), UINT32_MAX;
		for (uint32_t k = 0; k < ni->n_called; k++)
			called[k] = E->orig[ni->called[k]];
		ni->called = called;
		nc->instrs[i] = ni;
	}
	if (!nc->instrs || shs_module_add_comp(E->nm, nc) != SHS_OK)
		return mb_oom(E), UINT32_MAX;
	return E->orig[c] = E->nm->n_comps - 1;
}
