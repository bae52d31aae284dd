/* Strategy plugin for embedding-style gather and scatter (table[V, D] at indices[B, T]). */
#include "common.h"
#include "rule_util.h"

static const char *const ga_gather_ops[] = { "gather", NULL };
static const char *const ga_scatter_ops[] = { "scatter", NULL };

enum {
	GA_NO_SLOT = -1,
	GA_MAX_SETS = 8,            /* slot assignments one PROPAGATE call tries */
	GA_GATHER_OPERANDS = 2,     /* table, indices */
	GA_SCATTER_OPERANDS = 3,    /* operand, indices, updates */
	GA_TABLE = 0,
	GA_INDICES = 1,
	GA_UPDATES = 2
};

/* An op's dims as slots: each mesh axis goes to at most one slot, and every slot names the dims
 * of each array that take its axes. */
typedef struct ga_map {
	uint32_t n_slots;
	int64_t sizes[SC_MAX_SLOTS];              /* a slot's axes must divide its size */
	uint64_t ok;                              /* slots that may hold axes */
	uint32_t first_partial;                   /* slots from here on make a partial sum */
	uint32_t n_arrays;                        /* result, then each operand */
	const shs_pshape *arrays[GA_SCATTER_OPERANDS + 1];
	int32_t slot[GA_SCATTER_OPERANDS + 1][SHS_PLUGIN_MAX_RANK]; /* per array dim, or NO_SLOT */
} ga_map;

/* A set of slot assignments. */
typedef struct ga_slots {
	shs_pdim s[SC_MAX_SLOTS];
} ga_slots;

/* ---- Pattern recognition ---- */

/* Whether l holds v. */
static bool ga_has(const shs_plist *l, int64_t v)
{
	for (uint32_t k = 0; k < l->n; k++)
		if (l->v[k] == v)
			return true;
	return false;
}

/* Whether l is strictly increasing with entries in [0, bound). */
static bool ga_sorted(const shs_plist *l, uint32_t bound)
{
	for (uint32_t k = 0; k < l->n; k++)
		if (l->v[k] < 0 || l->v[k] >= (int64_t)bound || (k && l->v[k] <= l->v[k - 1]))
			return false;
	return true;
}

/* Starts m with the arrays: result, then operands; all must be arrays a spec can describe. */
static bool ga_arrays(const shs_pinstr *i, uint32_t n_operands, ga_map *m)
{
	memset(m, 0, sizeof(*m));
	if (i->n_operands != n_operands || !ru_is_array(&i->shape))
		return false;
	m->n_arrays = n_operands + 1;
	m->arrays[0] = &i->shape;
	for (uint32_t k = 0; k < n_operands; k++) {
		if (!ru_is_array(&i->operands[k]))
			return false;
		m->arrays[k + 1] = &i->operands[k];
	}
	for (uint32_t a = 0; a < m->n_arrays; a++)
		for (uint32_t d = 0; d < SHS_PLUGIN_MAX_RANK; d++)
			m->slot[a][d] = GA_NO_SLOT;
	return true;
}

/* Maps the batch dims of the indices (all but index_vector_dim, in order) onto the dims of
 * `arr` not listed in window (in order), which must have the same sizes. Slot of each batch
 * dim: its dim in arr when arr is the result (slot_base < 0), else slot_base + j. */
static bool ga_batch(const shs_pinstr *i, ga_map *m, uint32_t arr, const shs_plist *window,
		     int32_t slot_base)
{
	const shs_pshape *idx = &i->operands[GA_INDICES], *a = m->arrays[arr];
	uint32_t j = 0, t = 0;

	if (i->index_vector_dim < 0 || i->index_vector_dim > (int64_t)idx->rank)
		return false;
	for (uint32_t d = 0; d < a->rank; d++) {
		int32_t slot;

		if (ga_has(window, d))
			continue;
		if (t == (uint32_t)i->index_vector_dim)
			t++;
		if (t >= idx->rank || idx->dims[t] != a->dims[d])
			return false;
		slot = slot_base < 0 ? (int32_t)d : slot_base + (int32_t)j;
		m->slot[arr][d] = slot;
		m->slot[1 + GA_INDICES][t] = slot;
		m->sizes[slot] = a->dims[d];
		m->ok |= 1ull << slot;
		j++;
		t++;
	}
	if (t == (uint32_t)i->index_vector_dim && t < idx->rank)
		t++;
	return t == idx->rank;
}

/* The gather pattern: the table's non-collapsed dims are the result's offset_dims (sliced
 * whole, or left unsharded), collapsed dims that are indexed with slice size 1 are vocab slots
 * after the result's dims (a partial sum), the other result dims are the indices' batch dims. */
static bool ga_gather_map(const shs_pinstr *i, ga_map *m)
{
	const shs_pshape *tbl, *res = &i->shape;
	uint32_t k = 0;

	if (!ga_arrays(i, GA_GATHER_OPERANDS, m))
		return false;
	tbl = m->arrays[1 + GA_TABLE];
	if (!ga_sorted(&i->offset_dims, res->rank) ||
	    !ga_sorted(&i->collapsed_slice_dims, tbl->rank) ||
	    i->offset_dims.n + i->collapsed_slice_dims.n != tbl->rank ||
	    i->slice_sizes.n != tbl->rank)
		return false;
	m->n_slots = res->rank;
	m->first_partial = res->rank;
	for (uint32_t t = 0; t < tbl->rank; t++) {
		if (ga_has(&i->collapsed_slice_dims, t)) {
			if (!ga_has(&i->start_index_map, t) || i->slice_sizes.v[t] != 1)
				continue;
			m->slot[1 + GA_TABLE][t] = (int32_t)m->n_slots;
			m->sizes[m->n_slots] = tbl->dims[t];
			m->ok |= 1ull << m->n_slots++;
			continue;
		}
		int64_t od = i->offset_dims.v[k++];

		if (res->dims[od] != i->slice_sizes.v[t])
			return false;
		m->sizes[od] = res->dims[od];
		m->slot[0][od] = (int32_t)od;
		if (i->slice_sizes.v[t] != tbl->dims[t])
			continue;
		m->slot[1 + GA_TABLE][t] = (int32_t)od;
		m->ok |= 1ull << od;
	}
	return ga_batch(i, m, 0, &i->offset_dims, -1);
}

/* The scatter pattern: slots are the operand's (= result's) dims, then one per batch dim of
 * the updates (a partial sum). The operand's non-inserted dims are the updates' window dims
 * (split only when whole); its inserted, indexed dims (vocab) split the operand alone. */
static bool ga_scatter_map(const shs_pinstr *i, ga_map *m)
{
	const shs_pshape *op, *upd;
	uint32_t k = 0;

	if (!ga_arrays(i, GA_SCATTER_OPERANDS, m))
		return false;
	op = m->arrays[1 + GA_TABLE];
	upd = m->arrays[1 + GA_UPDATES];
	if (!ru_same_dims(op, &i->shape) || !ga_sorted(&i->update_window_dims, upd->rank) ||
	    !ga_sorted(&i->inserted_window_dims, op->rank) ||
	    i->update_window_dims.n + i->inserted_window_dims.n != op->rank)
		return false;
	m->n_slots = op->rank;
	m->first_partial = op->rank;
	for (uint32_t t = 0; t < op->rank; t++) {
		m->sizes[t] = op->dims[t];
		if (ga_has(&i->inserted_window_dims, t)) {
			if (!ga_has(&i->scatter_dims_to_operand_dims, t))
				continue;
		} else {
			int64_t w = i->update_window_dims.v[k++];

			if (upd->dims[w] != op->dims[t])
				continue;
			m->slot[1 + GA_UPDATES][w] = (int32_t)t;
		}
		m->slot[0][t] = (int32_t)t;
		m->slot[1 + GA_TABLE][t] = (int32_t)t;
		m->ok |= 1ull << t;
	}
	if (!ga_batch(i, m, 1 + GA_UPDATES, &i->update_window_dims, (int32_t)op->rank))
		return false;
	for (uint32_t d = 0; d < upd->rank; d++)
		if (!ga_has(&i->update_window_dims, d))
			m->n_slots++;
	return m->n_slots <= SC_MAX_SLOTS;
}

/* ---- Specs from slots ---- */

/* The spec of array a under the slot assignment sl[0..m->n_slots). */
static void ga_spec(const ga_map *m, uint32_t a, const shs_pdim *sl, shs_pspec *s)
{
	sc_replicated(m->arrays[a]->rank, s);
	for (uint32_t d = 0; d < m->arrays[a]->rank; d++)
		if (m->slot[a][d] != GA_NO_SLOT)
			s->dims[d] = sl[m->slot[a][d]];
}

/* Reads spec s of array a into the slots (axes already used elsewhere are skipped). */
static void ga_read(const ga_map *m, uint32_t a, const shs_pspec *s, ga_slots *sl)
{
	uint32_t used = 0;

	for (uint32_t k = 0; k < m->n_slots; k++)
		used |= sc_dim_mask(&sl->s[k]);
	for (uint32_t d = 0; d < m->arrays[a]->rank; d++) {
		int32_t slot = m->slot[a][d];

		if (slot == GA_NO_SLOT || !(m->ok & (1ull << slot)) || sl->s[slot].n)
			continue;
		for (uint32_t k = 0; k < s->dims[d].n; k++) {
			uint32_t ax = s->dims[d].axes[k];

			if (used & (1u << ax))
				continue;
			used |= 1u << ax;
			sl->s[slot].axes[sl->s[slot].n++] = (uint8_t)ax;
		}
	}
}

/* Whether two assignments are the same. */
static bool ga_same(const ga_map *m, const ga_slots *a, const ga_slots *b)
{
	for (uint32_t k = 0; k < m->n_slots; k++) {
		if (a->s[k].n != b->s[k].n)
			return false;
		if (memcmp(a->s[k].axes, b->s[k].axes, a->s[k].n))
			return false;
	}
	return true;
}

/* ---- Emitting ---- */

typedef struct ga_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
	const ga_map *m;
	bool all_reduce_only;   /* a gather's partial sum is only all-reduced */
} ga_ctx;

/* Emits one candidate: arrays per sl, the result on res, finishing the partial sum with v. */
static void ga_emit_one(const ga_ctx *x, const shs_pdim *sl, const shs_pspec *res,
			const shs_pdim *partial, const sc_psum *v, double partial_bytes)
{
	char label[SC_LABEL_MAX];
	ru_emit e;

	ru_label(label, "out", res, x->q->mesh);
	if (v) {
		char axes[SC_LABEL_MAX];

		sc_format_dim(axes, sizeof(axes), partial, x->q->mesh);
		ru_append(label, " psum=");
		ru_append(label, axes);
		ru_append(label, " ");
		ru_append(label, v->suffix);
	}
	ru_begin(&e, x->q, x->out, x->api, label);
	ru_result(&e, res);
	for (uint32_t a = 1; a < x->m->n_arrays; a++) {
		shs_pspec s;

		ga_spec(x->m, a, sl, &s);
		ru_operand(&e, a - 1, &s);
	}
	if (v)
		x->api->add_collective(x->out, e.c, v->kind, sc_dim_mask(partial), partial_bytes,
				       v->overlappable);
	ru_end(&e, 0);
}

/* Emits the candidates of assignment sl: one, or one per way to finish its partial sum (a
 * gather's partial sum is all-reduced; a scatter's may also be reduce-scattered). */
static int ga_emit(const shs_pdim *sl, void *user)
{
	const ga_ctx *x = user;
	const ga_map *m = x->m;
	sc_psum v[SC_MAX_PSUM];
	shs_pdim partial = { 0 };
	shs_pspec res;
	uint32_t n;

	for (uint32_t a = 0; a < m->n_arrays; a++) {
		shs_pspec s;

		ga_spec(m, a, sl, &s);
		if (!ru_valid_padded(&s, m->arrays[a], x->q->mesh))
			return 0;
	}
	for (uint32_t k = m->first_partial; k < m->n_slots; k++)
		for (uint32_t j = 0; j < sl[k].n; j++)
			partial.axes[partial.n++] = sl[k].axes[j];
	ga_spec(m, 0, sl, &res);
	if (!partial.n) {
		ga_emit_one(x, sl, &res, &partial, NULL, 0);
		return 0;
	}
	n = sc_psum_variants_padded(&res, &partial, m->arrays[0], x->q->mesh, false,
				    x->q->mode == SHS_PMODE_PROPAGATE ? SC_PAD_ANY_DIM : 0, v);
	if (x->all_reduce_only && n > 1)
		n = 1;
	for (uint32_t k = 0; k < n; k++)
		ga_emit_one(x, sl, &v[k].result, &partial, &v[k],
			    sc_local_bytes(x->api, m->arrays[0], &res, x->q->mesh));
	return 0;
}

/* Adds sl to sets unless there or full. */
static void ga_add(const ga_map *m, ga_slots *sets, uint32_t *n, const ga_slots *sl)
{
	for (uint32_t k = 0; k < *n; k++)
		if (ga_same(m, &sets[k], sl))
			return;
	if (*n < GA_MAX_SETS)
		sets[(*n)++] = *sl;
}

/* The assignments worth trying: the operands' hints together, then each alone, the result
 * hint, nothing. follow: the operand whose hint goes first in the combination. */
static void ga_propagate(const ga_ctx *x, uint32_t follow, ga_slots *sets, uint32_t *n)
{
	const ga_map *m = x->m;
	shs_pspec fitted[GA_SCATTER_OPERANDS + 1];
	bool have[GA_SCATTER_OPERANDS + 1] = { false };
	ga_slots sl;

	for (uint32_t a = 1; a < m->n_arrays; a++)
		have[a] = ru_fit(sc_operand_hint(x->q, a - 1), m->arrays[a], x->q->mesh,
				 &fitted[a]);
	have[0] = x->q->result_hint &&
		  ru_fit(&x->q->result_hint[0], m->arrays[0], x->q->mesh, &fitted[0]);
	memset(&sl, 0, sizeof(sl));
	if (have[1 + follow])
		ga_read(m, 1 + follow, &fitted[1 + follow], &sl);
	for (uint32_t a = 1; a < m->n_arrays; a++)
		if (have[a] && a != 1 + follow)
			ga_read(m, a, &fitted[a], &sl);
	ga_add(m, sets, n, &sl);
	for (uint32_t a = 0; a < m->n_arrays; a++) {
		if (!have[a])
			continue;
		memset(&sl, 0, sizeof(sl));
		ga_read(m, a, &fitted[a], &sl);
		ga_add(m, sets, n, &sl);
	}
	memset(&sl, 0, sizeof(sl));
	ga_add(m, sets, n, &sl);
}

static int ga_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api, void *user)
{
	bool scatter = user != NULL;
	ga_slots sets[GA_MAX_SETS];
	uint32_t n = 0;
	ga_map m;
	ga_ctx x = { q, out, api, &m, !scatter };

	if (!(scatter ? ga_scatter_map(q->instr, &m) : ga_gather_map(q->instr, &m))) {
		ru_replicated(q, out, api);
		return 0;
	}
	if (q->mode == SHS_PMODE_ENUMERATE) {
		uint64_t allowed[SHS_PLUGIN_MAX_AXES];

		for (uint32_t a = 0; a < SHS_PLUGIN_MAX_AXES; a++)
			allowed[a] = m.ok;
		sc_enum_assign(m.n_slots, m.sizes, allowed, q->mesh, ga_emit, &x);
		return 0;
	}
	ga_propagate(&x, scatter ? GA_UPDATES : GA_TABLE, sets, &n);
	for (uint32_t k = 0; k < n; k++)
		ga_emit(sets[k].s, &x);
	return 0;
}

/* user marks the scatter strategy (non-NULL). */
static const char ga_scatter_tag = 's';

static int ga_init(shs_registry *reg, const shs_host_api *api)
{
	const shs_strategy gather = {
		.struct_size = sizeof(shs_strategy),
		.name = "gather.lookup",
		.opcodes = ga_gather_ops,
		.generate = ga_generate,
		.flags = SHS_STRATEGY_PURE,
		.user = NULL,
	};
	const shs_strategy scatter = {
		.struct_size = sizeof(shs_strategy),
		.name = "scatter.lookup",
		.opcodes = ga_scatter_ops,
		.generate = ga_generate,
		.flags = SHS_STRATEGY_PURE,
		.user = (void *)&ga_scatter_tag,
	};
	int rc = api->register_strategy(reg, &gather);

	return rc ? rc : api->register_strategy(reg, &scatter);
}

SHS_PLUGIN_DEFINE(ga_init)
