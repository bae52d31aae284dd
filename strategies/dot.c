/* The dot plugin: every assignment of mesh axes to a dot's batch, free and contracting dims. */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "shardsearch_plugin.h"

enum {
	DOT_LHS = 0,
	DOT_RHS = 1,
	DOT_OPERANDS = 2,
	DOT_FLOPS_PER_MAC = 2,
	DOT_NO_SLOT = -1
};

/* The dot's dims as slots of an axis assignment: [batch..., lhs free..., rhs free...,
 * contracting...]; result dims are the first nb + nlf + nrf slots in order. */
typedef struct dot_layout {
	uint32_t nb, nlf, nrf, nc;
	uint32_t n_slots;
	int64_t sizes[SC_MAX_SLOTS];                   /* per slot: the dim's size */
	int32_t slot_of[DOT_OPERANDS][SHS_PLUGIN_MAX_RANK]; /* operand dim -> slot */
} dot_layout;

/* Per slot, the axes its label text was last made for, and that text (0 long: none yet). */
typedef struct dot_texts {
	shs_pdim of[SC_MAX_SLOTS];
	char text[SC_MAX_SLOTS][SC_LABEL_MAX];
	size_t len[SC_MAX_SLOTS];
} dot_texts;

/* One generate call (or one digest: q and lay only). */
typedef struct dot_gen {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
	dot_layout lay;
	uint64_t pad_dims;     /* result dims a reduce-scatter may pad (sc_psum_variants_padded) */
	int eb_result, eb[DOT_OPERANDS]; /* bytes of an element of the result, operands */
	dot_texts *texts;      /* the slots' label texts */
} dot_gen;

/* Marks the dims of list as slots first.. of operand side; fails on a bad or repeated dim. */
static int place_dims(dot_gen *g, int side, const shs_plist *list, uint32_t first)
{
	const shs_pshape *op = &g->q->instr->operands[side];

	for (uint32_t k = 0; k < list->n; k++) {
		int64_t d = list->v[k];

		if (d < 0 || d >= (int64_t)op->rank || g->lay.slot_of[side][d] != DOT_NO_SLOT) {
			if (g->api) /* not when digesting */
				g->api->fail(g->out,
					     "dot %s: %s dimension %lld is out of range or repeated",
					     g->q->instr->name, side == DOT_LHS ? "lhs" : "rhs",
					     (long long)d);
			return -1;
		}
		g->lay.slot_of[side][d] = (int32_t)(first + k);
		g->lay.sizes[first + k] = op->dims[d];
	}
	return 0;
}

/* Gives the dims of operand side not placed yet the slots from first on; returns their count. */
static uint32_t place_free(dot_gen *g, int side, uint32_t first)
{
	const shs_pshape *op = &g->q->instr->operands[side];
	uint32_t n = 0;

	for (uint32_t d = 0; d < op->rank; d++) {
		if (g->lay.slot_of[side][d] != DOT_NO_SLOT)
			continue;
		g->lay.slot_of[side][d] = (int32_t)(first + n);
		g->lay.sizes[first + n] = op->dims[d];
		n++;
	}
	return n;
}

/* Whether the paired dims (batch or contracting) of list_l and list_r have equal sizes. */
static bool pairs_match(const dot_gen *g, const shs_plist *list_l, const shs_plist *list_r)
{
	const shs_pinstr *in = g->q->instr;

	for (uint32_t k = 0; k < list_l->n; k++)
		if (in->operands[DOT_LHS].dims[list_l->v[k]] !=
		    in->operands[DOT_RHS].dims[list_r->v[k]])
			return false;
	return true;
}

/* Whether the result shape is [batch..., lhs free..., rhs free...] of the operands. */
static bool result_matches(const dot_gen *g)
{
	const shs_pshape *res = &g->q->instr->shape;

	if (res->n_tuple != 0 || res->rank != g->lay.nb + g->lay.nlf + g->lay.nrf)
		return false;
	for (uint32_t d = 0; d < res->rank; d++)
		if (res->dims[d] != g->lay.sizes[d])
			return false;
	return true;
}

/* Fills g->lay from the instruction; fails (api->fail, when g has an api) on a malformed dot. */
static int layout(dot_gen *g)
{
	const shs_pinstr *in = g->q->instr;
	dot_layout *lay = &g->lay;

	memset(lay, 0, sizeof(*lay));
	for (int side = 0; side < DOT_OPERANDS; side++)
		for (uint32_t d = 0; d < SHS_PLUGIN_MAX_RANK; d++)
			lay->slot_of[side][d] = DOT_NO_SLOT;
	if (in->n_operands != DOT_OPERANDS ||
	    in->operands[DOT_LHS].n_tuple != 0 || in->operands[DOT_RHS].n_tuple != 0 ||
	    in->operands[DOT_LHS].rank > SHS_PLUGIN_MAX_RANK ||
	    in->operands[DOT_RHS].rank > SHS_PLUGIN_MAX_RANK ||
	    in->shape.rank > SHS_PLUGIN_MAX_RANK) {
		if (g->api)
			g->api->fail(g->out, "dot %s: needs two array operands of rank <= %d",
				     in->name, SHS_PLUGIN_MAX_RANK);
		return -1;
	}
	if (in->lhs_batch.n != in->rhs_batch.n || in->lhs_contracting.n != in->rhs_contracting.n) {
		if (g->api)
			g->api->fail(g->out,
				     "dot %s: %u lhs and %u rhs batch dims, %u and %u contracting",
				     in->name, in->lhs_batch.n, in->rhs_batch.n,
				     in->lhs_contracting.n, in->rhs_contracting.n);
		return -1;
	}
	lay->nb = in->lhs_batch.n;
	lay->nc = in->lhs_contracting.n;
	if (place_dims(g, DOT_LHS, &in->lhs_batch, 0) || place_dims(g, DOT_RHS, &in->rhs_batch, 0))
		return -1;
	/* contracting slots go last; place them at a provisional base, moved once nlf/nrf known */
	if (place_dims(g, DOT_LHS, &in->lhs_contracting, SC_MAX_SLOTS - lay->nc) ||
	    place_dims(g, DOT_RHS, &in->rhs_contracting, SC_MAX_SLOTS - lay->nc))
		return -1;
	lay->nlf = place_free(g, DOT_LHS, lay->nb);
	lay->nrf = place_free(g, DOT_RHS, lay->nb + lay->nlf);
	lay->n_slots = lay->nb + lay->nlf + lay->nrf + lay->nc;
	for (int side = 0; side < DOT_OPERANDS; side++)
		for (uint32_t d = 0; d < SHS_PLUGIN_MAX_RANK; d++)
			if (lay->slot_of[side][d] >= (int32_t)(SC_MAX_SLOTS - lay->nc))
				lay->slot_of[side][d] -= (int32_t)(SC_MAX_SLOTS - lay->n_slots);
	memmove(&lay->sizes[lay->n_slots - lay->nc], &lay->sizes[SC_MAX_SLOTS - lay->nc],
		lay->nc * sizeof(lay->sizes[0]));
	if (!pairs_match(g, &in->lhs_batch, &in->rhs_batch) ||
	    !pairs_match(g, &in->lhs_contracting, &in->rhs_contracting) || !result_matches(g)) {
		if (g->api)
			g->api->fail(g->out, "dot %s: operand and result dimension sizes disagree",
				     in->name);
		return -1;
	}
	return 0;
}

/* The spec of operand side under an assignment. */
static void operand_spec(const dot_gen *g, int side, const shs_pdim *slots, shs_pspec *out)
{
	const shs_pshape *op = &g->q->instr->operands[side];

	sc_replicated(op->rank, out);
	for (uint32_t d = 0; d < op->rank; d++)
		out->dims[d] = slots[g->lay.slot_of[side][d]];
	sc_mark_padded(out, op, g->q->mesh);
}

/* Appends " name=a:b" for the slots [first, first + n) to label[*len..cap) (no space first
 * when *len is 0), nothing when n is 0. */
static void label_group(dot_gen *g, char *label, size_t cap, size_t *len, const char *name,
			const shs_pdim *slots, uint32_t first, uint32_t n)
{
	if (n == 0)
		return;
	if (*len)
		sc_append_char(label, cap, len, ' ');
	sc_append(label, cap, len, name);
	sc_append_char(label, cap, len, '=');
	for (uint32_t k = 0; k < n; k++) {
		uint32_t s = first + k;
		if (k)
			sc_append_char(label, cap, len, ':');
		/* the enumeration changes a few slots at a time: a slot's text is made anew only
		 * when its axes changed */
		dot_texts *t = g->texts;
		if (t->len[s] == 0 || t->of[s].n != slots[s].n ||
		    memcmp(t->of[s].axes, slots[s].axes, slots[s].n)) {
			t->len[s] = 0;
			sc_append_dim(t->text[s], sizeof(t->text[s]), &t->len[s], &slots[s],
				      g->q->mesh);
			if (t->len[s] >= sizeof(t->text[s]))
				t->len[s] = sizeof(t->text[s]) - 1; /* truncated */
			t->of[s] = slots[s];
		}
		sc_append_n(label, cap, len, t->text[s], t->len[s]);
	}
}

/* The label of an assignment: "batch=data lhs=fsdp rhs=tensor contract=-" (dims of a group
 * separated by ':', axes of a dim by '+'); groups without dims are left out. Returns its
 * length (as if not truncated). */
static size_t base_label(dot_gen *g, const shs_pdim *slots, char *label, size_t cap)
{
	const dot_layout *lay = &g->lay;
	size_t len = 0;

	label[0] = '\0';
	label_group(g, label, cap, &len, "batch", slots, 0, lay->nb);
	label_group(g, label, cap, &len, "lhs", slots, lay->nb, lay->nlf);
	label_group(g, label, cap, &len, "rhs", slots, lay->nb + lay->nlf, lay->nrf);
	label_group(g, label, cap, &len, "contract", slots, lay->n_slots - lay->nc, lay->nc);
	return len;
}

/* Emits one candidate with the given result spec, costs and (optional) collective; op_bytes
 * are the operands' local bytes under specs. A partial sum is written whole (partial_bytes)
 * before its collective finishes it. */
static void emit(dot_gen *g, const char *label, const shs_pspec specs[DOT_OPERANDS],
		 const double op_bytes[DOT_OPERANDS], const shs_pspec *result, double flops,
		 const sc_psum *ps, uint32_t partial_mask, double partial_bytes)
{
	const shs_pinstr *in = g->q->instr;
	double bytes = (ps ? partial_bytes : sc_local_elems(&in->shape, result, g->q->mesh) *
						     (double)g->eb_result) +
		       op_bytes[DOT_LHS] + op_bytes[DOT_RHS];
	uint32_t c;

	if (sc_has_add_candidate(g->api)) {
		c = g->api->add_candidate(g->out, label, result, specs, flops, bytes);
	} else {
		c = g->api->candidate(g->out, label);
		g->api->set_result(g->out, c, 0, result);
		for (int side = 0; side < DOT_OPERANDS; side++)
			g->api->set_operand(g->out, c, (uint32_t)side, 0, &specs[side]);
		g->api->set_cost(g->out, c, flops, bytes);
	}
	if (ps)
		g->api->add_collective(g->out, c, ps->kind, partial_mask, partial_bytes,
				       ps->overlappable);
}

/* Emits the candidates of one assignment: one, or one per way to finish its partial sum. */
static int emit_assignment(const shs_pdim *slots, void *user)
{
	dot_gen *g = user;
	const dot_layout *lay = &g->lay;
	const shs_pmesh *mesh = g->q->mesh;
	shs_pspec specs[DOT_OPERANDS], result;
	shs_pdim partial = { 0 };
	double contract = 1.0, flops, op_bytes[DOT_OPERANDS], partial_bytes, res_elems;
	char base[SC_LABEL_MAX * 2];
	size_t base_len;
	sc_psum ps[SC_MAX_PSUM];
	uint32_t n_ps;

	operand_spec(g, DOT_LHS, slots, &specs[DOT_LHS]);
	operand_spec(g, DOT_RHS, slots, &specs[DOT_RHS]);
	sc_replicated(g->q->instr->shape.rank, &result);
	memcpy(result.dims, slots, result.rank * sizeof(result.dims[0]));
	sc_mark_padded(&result, &g->q->instr->shape, mesh);
	for (uint32_t s = lay->n_slots - lay->nc; s < lay->n_slots; s++) {
		int64_t shards = sc_dim_shards(&slots[s], mesh);

		/* a padded contracting dim still works on its whole (padded) piece */
		contract *= (double)((lay->sizes[s] + shards - 1) / shards);
		memcpy(&partial.axes[partial.n], slots[s].axes, slots[s].n);
		partial.n = (uint8_t)(partial.n + slots[s].n);
	}
	res_elems = sc_local_elems(&g->q->instr->shape, &result, mesh);
	flops = DOT_FLOPS_PER_MAC * res_elems * contract;
	for (int side = 0; side < DOT_OPERANDS; side++)
		op_bytes[side] = sc_local_elems(&g->q->instr->operands[side], &specs[side], mesh) *
				 (double)g->eb[side];
	base_len = base_label(g, slots, base, sizeof(base));
	if (base_len >= sizeof(base))
		base_len = sizeof(base) - 1; /* truncated */
	if (partial.n == 0) {
		emit(g, base[0] ? base : "replicated", specs, op_bytes, &result, flops, NULL, 0,
		     0.0);
		return 0;
	}
	n_ps = sc_psum_variants_padded(&result, &partial, &g->q->instr->shape, mesh, true,
				       g->pad_dims, ps);
	partial_bytes = res_elems * (double)g->eb_result;
	for (uint32_t k = 0; k < n_ps; k++) {
		char label[SC_LABEL_MAX * 3];
		size_t len = base_len;

		memcpy(label, base, base_len + 1);
		sc_append_char(label, sizeof(label), &len, ' ');
		sc_append(label, sizeof(label), &len, ps[k].suffix);
		emit(g, label, specs, op_bytes, &ps[k].result, flops, &ps[k],
		     sc_dim_mask(&partial), partial_bytes);
	}
	return 0;
}

/* Lets each axis of hint (a spec of operand side, or of the result when side < 0) go to the
 * slot of the dim that holds it. */
static void allow_from_hint(const dot_gen *g, int side, const shs_pspec *hint, uint64_t *allowed)
{
	if (!hint)
		return;
	for (uint32_t d = 0; d < hint->rank; d++) {
		uint32_t slot = side < 0 ? d : (uint32_t)g->lay.slot_of[side][d];

		for (uint32_t k = 0; k < hint->dims[d].n; k++)
			allowed[hint->dims[d].axes[k]] |= (uint64_t)1 << slot;
	}
}

/* Per mesh axis, the slots the hints put it on (allow_from_hint of each). */
static void allowed_of(const dot_gen *g, uint64_t allowed[SHS_PLUGIN_MAX_AXES])
{
	memset(allowed, 0, SHS_PLUGIN_MAX_AXES * sizeof(allowed[0]));
	allow_from_hint(g, DOT_LHS, sc_operand_hint(g->q, DOT_LHS), allowed);
	allow_from_hint(g, DOT_RHS, sc_operand_hint(g->q, DOT_RHS), allowed);
	allow_from_hint(g, -1, sc_result_hint(g->q), allowed);
}

/* The generator: every assignment (ENUMERATE), or those the hints allow (PROPAGATE). In both,
 * an axis may also split a dim it does not divide where an operand or result hint already puts
 * it (padded, as XLA pads it): the plan's split is kept rather than replicated, and a dim that
 * does not divide does not make the propagation gather around it. */
static int dot_generate(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
			void *user)
{
	dot_texts texts = { .len = { 0 } };
	dot_gen g = { .q = q, .out = out, .api = api, .texts = &texts };
	uint64_t allowed[SHS_PLUGIN_MAX_AXES];
	int rc;

	(void)user;
	if (q->mesh->n_axes > SHS_PLUGIN_MAX_AXES) {
		api->fail(out, "dot %s: the mesh has %u axes, at most %d are supported",
			  q->instr->name, q->mesh->n_axes, SHS_PLUGIN_MAX_AXES);
		return -1;
	}
	if (layout(&g) != 0)
		return -1;
	g.eb_result = api->elem_bytes(q->instr->shape.type);
	for (int side = 0; side < DOT_OPERANDS; side++)
		g.eb[side] = api->elem_bytes(q->instr->operands[side].type);
	allowed_of(&g, allowed);
	g.pad_dims = q->mode == SHS_PMODE_PROPAGATE ? SC_PAD_ANY_DIM : 0;
	rc = sc_enum_assign_padded(g.lay.n_slots, g.lay.sizes,
				   q->mode == SHS_PMODE_PROPAGATE ? allowed : NULL, allowed,
				   q->mesh, emit_assignment, &g);
	if (rc != 0) {
		api->fail(out, "dot %s: cannot enumerate %u dims over %u mesh axes", q->instr->name,
			  g.lay.n_slots, q->mesh->n_axes);
		return -1;
	}
	return 0;
}

/* The digest: the generator reads the hints only through the slots they let each axis take
 * (allowed_of), and the mode; 0 for a dot it cannot lay out (the whole query then counts). */
static uint64_t dot_digest(const shs_pquery *q, void *user)
{
	dot_gen g = { .q = q };
	uint64_t allowed[SHS_PLUGIN_MAX_AXES], h = 0x9e3779b97f4a7c15ull;

	(void)user;
	if (q->mesh->n_axes > SHS_PLUGIN_MAX_AXES || layout(&g) != 0)
		return 0;
	allowed_of(&g, allowed);
	h = sc_mix(h, (uint64_t)(uint32_t)q->mode);
	for (uint32_t a = 0; a < q->mesh->n_axes; a++)
		h = sc_mix(h, allowed[a]);
	return h ? h : 1;
}

static const char *const dot_opcodes[] = { "dot", NULL };

static const shs_strategy dot_assign = {
	.struct_size = sizeof(shs_strategy),
	.name = "dot.assign",
	.opcodes = dot_opcodes,
	.generate = dot_generate,
	.flags = SHS_STRATEGY_PURE,
	.digest = dot_digest,
};

static int dot_init(shs_registry *reg, const shs_host_api *api)
{
	return api->register_strategy(reg, &dot_assign);
}

SHS_PLUGIN_DEFINE(dot_init)
