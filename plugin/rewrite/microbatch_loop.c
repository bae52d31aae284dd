/* The new entry: its parameters, the loop over micro-batches (the carry: the trip, the
 * parameters the loop reads with the data as [B/M, M, ...], an accumulator per sum it returns),
 * then what runs on the sums, as JAX lowers a lax.scan over micro-batches. */
#include <stdlib.h>
#include <string.h>

#include "microbatch_internal.h"

typedef struct loop {
	em *E;
	const mb_inst *I;
	const shs_computation *c;
	uint8_t *in, *out;      /* per entry instruction: needed in the loop, after it */
	uint8_t *edge;          /* per entry instruction: 1 when the loop hands it out */
	uint8_t *done;          /* per entry instruction: its deferred scale applied */
	uint32_t n_params, n_slots;
	uint32_t *params;       /* the parameters the loop reads (instruction indices) */
	uint32_t *slots;        /* the values it hands out (instruction indices) */
	shs_shape carry;
} loop;

static bool is_data(const loop *L, uint32_t p)
{
	return L->I->leaf[L->I->first[p]].kind == MB_BATCH;
}

/* The loop's copy of what instruction i computes: the first of equal widening converts of a sum
 * (the loop accumulates it once, at the wider type), else i itself. */
static uint32_t same_as(const loop *L, uint32_t i)
{
	const shs_instr *ins = L->c->instrs[i];
	uint32_t w;

	if (ins->op != SHS_OP_CONVERT || ins->n_operands != 1 || L->I->where[i] != MB_LOOP)
		return i;
	w = L->E->x->widen[ins->operands[0]];
	return w != UINT32_MAX ? w : i;
}

/* What the loop and what follows it need, walking back from the root. */
static int mark(loop *L)
{
	const shs_computation *c = L->c;
	const mb_inst *I = L->I;

	for (uint32_t i = c->n_instrs; i-- > 0;) {
		const shs_instr *ins = c->instrs[i];
		if (I->where[i] == MB_AFTER || i == c->root)
			L->out[i] = 1;
		/* in the loop: what it hands out and what that reads (else dead, as the resized
		 * copies leave the full-size values they replace) */
		if (I->where[i] == MB_LOOP && ins->op != SHS_OP_PARAMETER &&
		    (L->edge[i] || mb_effects(ins)))
			L->in[i] = 1;
		for (uint32_t k = 0; L->out[i] && k < ins->n_operands; k++) {
			uint32_t o = ins->operands[k];
			if (I->where[o] == MB_LOOP)
				L->edge[same_as(L, o)] = 1; /* the loop hands it out */
			else
				L->out[o] = 1;
		}
		if (L->in[i] && L->E->x->deferred[i] != UINT32_MAX) {
			/* the scale's operand is 1 in the loop; the scale itself is made after it */
			uint32_t other = ins->operands[ins->operands[0] == L->E->x->deferred[i]];
			L->in[other] = 1;
			L->out[L->E->x->scale] = 1;
		} else if (L->in[i]) {
			mb_mark_operands(I, c, i, L->in);
		}
	}
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		if (L->edge[i]) {
			const shs_shape *s = &c->instrs[i]->shape;
			if (s->type == SHS_TUPLE)
				return mb_fail(L->E->x, c, c->instrs[i], "a tuple leaves the loop over "
					       "micro-batches");
			L->slots[L->n_slots++] = i;
		}
		if (L->in[i] && c->instrs[i]->op == SHS_OP_PARAMETER)
			L->params[L->n_params++] = i;
	}
	return SHS_OK;
}

static uint32_t scalar(em *E, shs_computation *nc, int type, int64_t value, const char *name)
{
	shs_instr *k = mb_fresh(E, SHS_OP_CONSTANT, name);
	shs_literal *lit = shs_arena_calloc(E->nm->arena, 1, sizeof(*lit));
	int bytes = shs_elem_bytes(type);
	uint8_t *data = shs_arena_calloc(E->nm->arena, bytes > 0 ? (size_t)bytes : 1, 1);

	if (!k || !lit || !data || !mb_array_shape(E, &k->shape, type, NULL, 0))
		return mb_oom(E), UINT32_MAX;
	for (int b = 0; b < bytes && b < 8; b++)
		data[b] = (uint8_t)((uint64_t)value >> (8 * b));
	lit->size = bytes > 0 ? (size_t)bytes : 0;
	lit->data = data;
	k->literal = lit;
	return mb_add(E, nc, k);
}

/* The constant 1 of a float or integer type (IEEE bits for floats: f64, f32, bf16, f16). */
static uint32_t one(em *E, shs_computation *nc, int type)
{
	uint32_t k = scalar(E, nc, type, 1, "microbatch.one");
	uint8_t *data;
	float f = 1.0f;
	double d = 1.0;
	uint32_t bits;

	if (k == UINT32_MAX || !shs_elem_is_float(type))
		return k;
	data = (uint8_t *)nc->instrs[k]->literal->data;
	memcpy(&bits, &f, sizeof(bits));
	if (type == SHS_F64)
		memcpy(data, &d, sizeof(d));
	else if (type == SHS_F32)
		memcpy(data, &bits, sizeof(bits));
	else if (type == SHS_BF16)
		bits >>= 16, data[0] = (uint8_t)bits, data[1] = (uint8_t)(bits >> 8);
	else if (type == SHS_F16)
		data[0] = 0x00, data[1] = 0x3c;
	else
		return E->rc = shs_seterr(E->x->e, SHS_EINVAL, "micro-batches: a deferred scale "
					  "of type %s", shs_elem_name(type)), UINT32_MAX;
	return k;
}

/* An instruction of op on operands ops[n] with shape s (copied). */
static uint32_t make(em *E, shs_computation *nc, shs_opcode op, const shs_shape *s,
		     const uint32_t *ops, uint32_t n, const char *name)
{
	shs_instr *i = mb_fresh(E, op, name);

	if (!i || !mb_set_operands(E, i, ops, n) ||
	    shs_shape_copy(E->nm->arena, &i->shape, s) != SHS_OK)
		return mb_oom(E), UINT32_MAX;
	return mb_add(E, nc, i);
}

static uint32_t gte(em *E, shs_computation *nc, uint32_t t, int64_t k, const char *name)
{
	shs_instr *i = mb_fresh(E, SHS_OP_GET_TUPLE_ELEMENT, name);

	if (!i || !mb_set_operands(E, i, &t, 1) ||
	    shs_shape_copy(E->nm->arena, &i->shape, &nc->instrs[t]->shape.tuple[k]) != SHS_OK)
		return mb_oom(E), UINT32_MAX;
	i->tuple_index = k;
	return mb_add(E, nc, i);
}

/* Zeros of array shape s. */
static uint32_t zeros(em *E, shs_computation *nc, const shs_shape *s)
{
	uint32_t z = scalar(E, nc, s->type, 0, "microbatch.zero");
	shs_shape a;

	if (z == UINT32_MAX || !mb_array_shape(E, &a, s->type, s->dims, s->rank))
		return mb_oom(E), UINT32_MAX;
	return make(E, nc, SHS_OP_BROADCAST, &a, &z, 1, "microbatch.zeros");
}

/* Array s with dim d of B as [B/M, M] (the data's split: rows r M + i are micro-batch i's). */
static bool split_shape(em *E, const shs_shape *s, int d, shs_shape *out)
{
	int64_t dims[SHS_MAX_RANK + 1];

	if (s->rank >= SHS_MAX_RANK || d < 0 || (uint32_t)d >= s->rank)
		return false;
	for (uint32_t k = 0, j = 0; k < s->rank; k++) {
		dims[j++] = (int)k == d ? s->dims[k] / E->x->mb : s->dims[k];
		if ((int)k == d)
			dims[j++] = E->x->mb;
	}
	return mb_array_shape(E, out, s->type, dims, s->rank + 1);
}

/* The carry: (s32 trip, the parameters the loop reads, the values it hands out). */
static int carry_shape(loop *L)
{
	em *E = L->E;
	uint32_t n = 1 + L->n_params + L->n_slots;
	shs_shape *t = shs_arena_calloc(E->nm->arena, n + 1, sizeof(*t));

	if (!t || !mb_array_shape(E, &t[0], SHS_S32, NULL, 0))
		return mb_oom(E);
	for (uint32_t k = 0; k < L->n_params; k++) {
		const shs_shape *s = &L->c->instrs[L->params[k]]->shape;
		if (is_data(L, L->params[k]) ? !split_shape(E, s, 0, &t[1 + k])
		    : shs_shape_copy(E->nm->arena, &t[1 + k], s) != SHS_OK)
			return mb_oom(E);
	}
	for (uint32_t k = 0; k < L->n_slots; k++)
		if (shs_shape_copy(E->nm->arena, &t[1 + L->n_params + k],
				   &L->c->instrs[L->slots[k]]->shape) != SHS_OK)
			return mb_oom(E);
	memset(&L->carry, 0, sizeof(L->carry));
	L->carry.type = SHS_TUPLE;
	L->carry.n_tuple = n;
	L->carry.tuple = t;
	return SHS_OK;
}

static shs_computation *new_comp(em *E, const char *name)
{
	shs_computation *nc = shs_arena_calloc(E->nm->arena, 1, sizeof(*nc));

	if (nc) {
		nc->id = E->next_id++;
		nc->name = mb_name_with(E, E->x->m->comps[E->x->m->entry]->name, name);
	}
	if (!nc || !nc->name)
		mb_oom(E);
	return nc;
}

static uint32_t finish(em *E, shs_computation *nc, uint32_t root)
{
	if (E->rc != SHS_OK)
		return UINT32_MAX;
	nc->root = root;
	if (shs_module_add_comp(E->nm, nc) != SHS_OK)
		return mb_oom(E), UINT32_MAX;
	return E->nm->n_comps - 1;
}

/* carry[0] < M. */
static uint32_t cond(loop *L)
{
	em *E = L->E;
	shs_computation *nc = new_comp(E, ".microbatch.cond");
	shs_instr *p = mb_fresh(E, SHS_OP_PARAMETER, "carry");
	shs_shape pred;
	uint32_t ops[2];

	if (!nc || !p || shs_shape_copy(E->nm->arena, &p->shape, &L->carry) != SHS_OK ||
	    !mb_array_shape(E, &pred, SHS_PRED, NULL, 0))
		return mb_oom(E), UINT32_MAX;
	ops[0] = gte(E, nc, mb_add(E, nc, p), 0, "trip");
	ops[1] = scalar(E, nc, SHS_S32, E->x->mb, "microbatches");
	if (E->rc != SHS_OK)
		return UINT32_MAX;
	shs_instr *lt = mb_fresh(E, SHS_OP_COMPARE, "more");
	if (!lt || !mb_set_operands(E, lt, ops, 2))
		return mb_oom(E), UINT32_MAX;
	lt->shape = pred;
	lt->comparison_direction = "LT";
	return finish(E, nc, mb_add(E, nc, lt));
}

/* Micro-batch i of value split (dim d of whole split as [B/M, M]): column i, reshaped to whole
 * with B/M on dim d. */
static uint32_t column(em *E, shs_computation *nc, uint32_t split, uint32_t trip,
		       const shs_shape *whole, int d)
{
	const shs_shape *s = &nc->instrs[split]->shape;
	uint32_t ops[SHS_MAX_RANK + 2], zero = scalar(E, nc, SHS_S32, 0, "microbatch.start");
	int64_t sizes[SHS_MAX_RANK + 1];
	shs_shape one, col;
	shs_instr *ds;

	for (uint32_t k = 0; k < s->rank; k++) {
		ops[k + 1] = (int)k == d + 1 ? trip : zero;
		sizes[k] = (int)k == d + 1 ? 1 : s->dims[k];
	}
	ops[0] = split;
	if (!mb_array_shape(E, &one, s->type, sizes, s->rank) ||
	    !mb_array_shape(E, &col, whole->type, whole->dims, whole->rank) ||
	    !(ds = mb_fresh(E, SHS_OP_DYNAMIC_SLICE, "microbatch.slice")) ||
	    !mb_set_operands(E, ds, ops, s->rank + 1) ||
	    !(ds->dynamic_slice_sizes.v = shs_arena_memdup(E->nm->arena, sizes,
							    s->rank * sizeof(*sizes))))
		return mb_oom(E), UINT32_MAX;
	ds->dynamic_slice_sizes.n = s->rank;
	ds->shape = one;
	col.dims[d] /= E->x->mb;
	uint32_t sliced = mb_add(E, nc, ds);
	return make(E, nc, SHS_OP_RESHAPE, &col, &sliced, 1, "microbatch.column");
}

uint32_t mb_rows(em *E, const site *s, uint32_t v, int d)
{
	const shs_shape *whole = &s->nc->instrs[v]->shape;
	shs_shape split;
	uint32_t r;

	if (E->rc != SHS_OK || !split_shape(E, whole, d, &split))
		return mb_oom(E), UINT32_MAX;
	r = make(E, s->nc, SHS_OP_RESHAPE, &split, &v, 1, "microbatch.rows");
	return r == UINT32_MAX ? r : column(E, s->nc, r, s->trip, whole, d);
}

/* Ones of the micro-batch's shape of entry instruction i (the deferred scale's place). */
static uint32_t ones_like(loop *L, shs_computation *nc, uint32_t i)
{
	em *E = L->E;
	const shs_shape *full = &L->c->instrs[i]->shape;
	const mb_leaf *l = L->I->leaf + L->I->first[i];
	uint32_t k = one(E, nc, full->type);
	shs_shape a;

	if (k == UINT32_MAX || !mb_array_shape(E, &a, full->type, full->dims, full->rank))
		return mb_oom(E), UINT32_MAX;
	if (l->kind == MB_BATCH && (uint32_t)l->dim < a.rank)
		a.dims[l->dim] /= E->x->mb;
	return make(E, nc, SHS_OP_BROADCAST, &a, &k, 1, "microbatch.ones");
}

/* One trip: the micro-batch's forward and backward, the accumulators added to. */
static uint32_t body(loop *L)
{
	em *E = L->E;
	const shs_computation *c = L->c;
	shs_computation *nc = new_comp(E, ".microbatch.body");
	shs_instr *p = mb_fresh(E, SHS_OP_PARAMETER, "carry");
	uint32_t n = 1 + L->n_params + L->n_slots, *next = calloc(n + 1, sizeof(*next));
	uint32_t pv, trip, one;
	site s = { .I = L->I, .c = c, .nc = nc, .suffix = "", .trip = UINT32_MAX,
		   .map = calloc(c->n_instrs + 1, sizeof(uint32_t)) };

	if (!nc || !p || !next || !s.map ||
	    shs_shape_copy(E->nm->arena, &p->shape, &L->carry) != SHS_OK) {
		free(next);
		free(s.map);
		return mb_oom(E), UINT32_MAX;
	}
	pv = mb_add(E, nc, p);
	trip = gte(E, nc, pv, 0, "trip");
	s.trip = trip;
	one = scalar(E, nc, SHS_S32, 1, "microbatch.one");
	next[0] = make(E, nc, SHS_OP_ADD, &L->carry.tuple[0], (uint32_t[]){ trip, one }, 2,
		       "microbatch.next");
	for (uint32_t k = 0; k < L->n_params && E->rc == SHS_OK; k++) {
		uint32_t q = L->params[k];
		next[1 + k] = gte(E, nc, pv, 1 + k, c->instrs[q]->name);
		s.map[q] = is_data(L, q) ? column(E, nc, next[1 + k], trip, &c->instrs[q]->shape,
						  0) : next[1 + k];
	}
	for (uint32_t i = 0; i < c->n_instrs && E->rc == SHS_OK; i++) {
		if (!L->in[i] || c->instrs[i]->op == SHS_OP_PARAMETER)
			continue;
		s.suffix = L->out[i] ? ".mb" : "";
		if (E->x->deferred[i] != UINT32_MAX)
			s.map[E->x->deferred[i]] = ones_like(L, nc, i);
		s.map[i] = mb_copy(E, &s, i);
	}
	for (uint32_t k = 0; k < L->n_slots && E->rc == SHS_OK; k++) {
		uint32_t v = L->slots[k], slot = 1 + L->n_params + k;
		const mb_leaf *l = L->I->leaf + L->I->first[v];
		next[slot] = l->kind == MB_PARTIAL
			? make(E, nc, SHS_OP_ADD, &L->carry.tuple[slot],
			       (uint32_t[]){ gte(E, nc, pv, slot, "accumulated"), s.map[v] }, 2,
			       "microbatch.accumulate")
			: s.map[v];
	}
	uint32_t root = E->rc == SHS_OK ? make(E, nc, SHS_OP_TUPLE, &L->carry, next, n,
					       "microbatch.carry") : UINT32_MAX;
	free(next);
	free(s.map);
	return finish(E, nc, root);
}

/* A sum the loop made with 1 for the deferred scale, read after the loop: multiplied by the
 * scale now (made before: it precedes the work it scaled), once. */
static void rescale(loop *L, shs_computation *nc, site *s, uint32_t v)
{
	em *E = L->E;
	uint32_t w = same_as(L, v), sc, ops[2];
	const shs_shape *a = &L->c->instrs[w]->shape;
	shs_shape b;

	if (E->x->scale == UINT32_MAX)
		return;
	sc = s->map[E->x->scale];
	if (L->done[w]) {
		s->map[v] = s->map[w];
		return;
	}
	if (!L->edge[w] || !L->I->leaf[L->I->first[w]].scaled)
		return;
	L->done[w] = 1;
	v = w;
	if (nc->instrs[sc]->shape.type != a->type) {
		shs_shape t;
		if (!mb_array_shape(E, &t, a->type, NULL, 0))
			return (void)mb_oom(E);
		sc = make(E, nc, SHS_OP_CONVERT, &t, &sc, 1, "microbatch.scale");
	}
	if (E->rc != SHS_OK || !mb_array_shape(E, &b, a->type, a->dims, a->rank))
		return (void)mb_oom(E);
	ops[0] = s->map[v];
	ops[1] = make(E, nc, SHS_OP_BROADCAST, &b, &sc, 1, "microbatch.scale");
	s->map[v] = make(E, nc, SHS_OP_MULTIPLY, &b, ops, 2, "microbatch.scaled");
}

/* The entry: its parameters, the loop, then what runs after it. */
static uint32_t entry(loop *L, uint32_t body_comp, uint32_t cond_comp)
{
	em *E = L->E;
	const shs_computation *c = L->c;
	shs_computation *nc = new_comp(E, "");
	uint32_t n = 1 + L->n_params + L->n_slots, *init = calloc(n + 1, sizeof(*init));
	uint32_t w = UINT32_MAX;
	site s = { .I = L->I, .c = c, .nc = nc, .suffix = "", .trip = UINT32_MAX,
		   .map = calloc(c->n_instrs + 1, sizeof(uint32_t)) };

	if (!nc || !init || !s.map) {
		free(init);
		free(s.map);
		return mb_oom(E), UINT32_MAX;
	}
	nc->name = c->name;
	for (uint32_t i = 0; i < c->n_instrs && E->rc == SHS_OK; i++) {
		shs_instr *p;
		if (c->instrs[i]->op != SHS_OP_PARAMETER)
			continue;
		if (!(p = shs_arena_memdup(E->nm->arena, c->instrs[i], sizeof(*p))))
			return free(init), free(s.map), mb_oom(E), UINT32_MAX;
		p->id = E->next_id++;
		s.map[i] = mb_add(E, nc, p);
	}
	init[0] = scalar(E, nc, SHS_S32, 0, "microbatch.first");
	for (uint32_t k = 0; k < L->n_params && E->rc == SHS_OK; k++) {
		uint32_t q = L->params[k];
		init[1 + k] = is_data(L, q)
			? make(E, nc, SHS_OP_RESHAPE, &L->carry.tuple[1 + k], &s.map[q], 1,
			       "microbatch.split")
			: s.map[q];
	}
	for (uint32_t k = 0; k < L->n_slots && E->rc == SHS_OK; k++)
		init[1 + L->n_params + k] = zeros(E, nc, &L->carry.tuple[1 + L->n_params + k]);
	if (E->rc == SHS_OK) {
		uint32_t t = make(E, nc, SHS_OP_TUPLE, &L->carry, init, n, "microbatch.init");
		shs_instr *wi = mb_fresh(E, SHS_OP_WHILE, "microbatches");
		uint32_t *called = shs_arena_calloc(E->nm->arena, 2, sizeof(*called));
		if (!wi || !called || !mb_set_operands(E, wi, &t, 1) ||
		    shs_shape_copy(E->nm->arena, &wi->shape, &L->carry) != SHS_OK)
			return free(init), free(s.map), mb_oom(E), UINT32_MAX;
		called[0] = body_comp;
		called[1] = cond_comp;
		wi->n_called = 2;
		wi->called = called;
		w = mb_add(E, nc, wi);
	}
	for (uint32_t k = 0; k < L->n_slots && E->rc == SHS_OK; k++)
		s.map[L->slots[k]] = gte(E, nc, w, 1 + L->n_params + k,
					 c->instrs[L->slots[k]]->name);
	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (same_as(L, i) != i)
			s.map[i] = s.map[same_as(L, i)];
	for (uint32_t i = 0; i < c->n_instrs && E->rc == SHS_OK; i++) {
		if (!L->out[i] || c->instrs[i]->op == SHS_OP_PARAMETER)
			continue;
		for (uint32_t k = 0; k < c->instrs[i]->n_operands; k++)
			rescale(L, nc, &s, c->instrs[i]->operands[k]);
		s.map[i] = mb_copy(E, &s, i);
	}
	uint32_t root = E->rc == SHS_OK ? s.map[c->root] : UINT32_MAX;
	free(init);
	free(s.map);
	return finish(E, nc, root);
}

int mb_emit(mb_ctx *x, uint32_t k, shs_module **out)
{
	const shs_module *m = x->m;
	const shs_computation *c = m->comps[m->entry];
	em E = { .x = x, .rc = SHS_OK };
	loop L = { .E = &E, .I = x->inst[k], .c = c };
	uint32_t bc, cc, ec;

	E.nm = shs_module_new(0);
	E.orig = malloc((m->n_comps + 1) * sizeof(*E.orig));
	L.in = calloc(c->n_instrs + 1, 1);
	L.out = calloc(c->n_instrs + 1, 1);
	L.edge = calloc(c->n_instrs + 1, 1);
	L.done = calloc(c->n_instrs + 1, 1);
	L.params = calloc(c->n_instrs + 1, sizeof(*L.params));
	L.slots = calloc(c->n_instrs + 1, sizeof(*L.slots));
	if (!E.nm || !E.orig || !L.in || !L.out || !L.edge || !L.done || !L.params || !L.slots) {
		mb_oom(&E);
		goto done;
	}
	memset(E.orig, 0xff, (m->n_comps + 1) * sizeof(*E.orig));
	for (uint32_t j = 0; j < m->n_comps; j++) {
		const shs_computation *q = m->comps[j];
		E.next_id = q->id >= E.next_id ? q->id + 1 : E.next_id;
		for (uint32_t i = 0; i < q->n_instrs; i++)
			E.next_id = q->instrs[i]->id >= E.next_id ? q->instrs[i]->id + 1 : E.next_id;
	}
	{
		shs_arena *keep = E.nm->arena;
		*E.nm = *m;
		E.nm->arena = keep;
		E.nm->n_comps = 0;
		E.nm->comps = NULL;
	}
	if ((E.rc = mark(&L)) == SHS_OK)
		E.rc = carry_shape(&L);
	if (E.rc == SHS_OK) {
		bc = body(&L);
		cc = cond(&L);
		ec = entry(&L, bc, cc);
		E.nm->entry = ec;
	}
done:
	free(E.orig);
	free(L.in);
	free(L.out);
	free(L.edge);
	free(L.done);
	free(L.params);
	free(L.slots);
	if (E.rc != SHS_OK) {
		shs_module_free(E.nm);
		return E.rc;
	}
	*out = E.nm;
	return SHS_OK;
}
