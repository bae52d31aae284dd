/* HloProto / HloModuleProto -> IR: the entry point, the module and its computations. */
#include <string.h>

#include "io.h"
#include "proto_internal.h"

enum {
	MIB_SHIFT = 20,
	FIELD_HLO_MODULE = 1,        /* HloProto.hlo_module */
	FIELD_COMPUTATIONS = 3,      /* HloModuleProto.computations */
	HLO_PROTO_MAX_FIELD = 3,     /* HloProto has fields 1 to 3 only */
	UNPACK_PER_BYTE = 8,         /* bytes of unpacked tree per input byte (MaxText needs ~6) */
	UNPACK_MIN_BLOCK = 64 << 10
};

/* ---- Id -> index maps ------------------------------------------------------------------------ */

enum {
	ID_HASH_MUL_HI = 0x9E3779B9u, /* 2^64 / golden ratio, in two halves */
	ID_HASH_MUL_LO = 0x7F4A7C15u,
	ID_HASH_BITS = 64,
	ID_MAX_BITS = 40              /* beyond any table the load budget allows */
};

/* An open-addressing table of ids; idx1 is the index plus one, 0 marking an empty slot. */
typedef struct id_slot {
	int64_t id;
	uint32_t idx1;
} id_slot;

typedef struct id_map {
	id_slot *slots;   /* in the scratch arena, room for the largest table needed */
	unsigned bits;    /* the table in use has 2^bits slots */
} id_map;

/* log2 of the slots for n ids: a power of two at least twice n, so probes stay short. */
static unsigned id_bits_for(size_t n)
{
	unsigned bits = 1;

	while (bits < ID_MAX_BITS && ((uint64_t)1 << bits) < 2 * (uint64_t)n)
		bits++;
	return bits;
}

static uint64_t id_slots(const id_map *t)
{
	return (uint64_t)1 << t->bits;
}

static uint64_t id_hash(const id_map *t, int64_t id)
{
	const uint64_t mul = (uint64_t)ID_HASH_MUL_HI << 32 | ID_HASH_MUL_LO;

	return ((uint64_t)id * mul) >> (ID_HASH_BITS - t->bits);
}

/* Room in the scratch arena for tables of up to n ids. */
static int id_map_alloc(const shs__pl *c, id_map *t, size_t n)
{
	uint64_t slots = (uint64_t)1 << id_bits_for(n);

	t->slots = NULL;
	if (slots <= SIZE_MAX / sizeof(*t->slots))
		t->slots = c->scratch->alloc.alloc(c->scratch, (size_t)slots * sizeof(*t->slots));
	return t->slots ? SHS_OK : shs__pl_nomem(c);
}

/* Empties the table and sizes it for n ids (no more than id_map_alloc made room for). */
static void id_map_reset(id_map *t, size_t n)
{
	t->bits = id_bits_for(n);
	memset(t->slots, 0, (size_t)id_slots(t) * sizeof(*t->slots));
}

/* The index stored for id, or -1. */
static int64_t id_map_get(const id_map *t, int64_t id)
{
	uint64_t mask = id_slots(t) - 1;

	for (uint64_t h = id_hash(t, id);; h = (h + 1) & mask) {
		if (!t->slots[h].idx1)
			return -1;
		if (t->slots[h].id == id)
			return (int64_t)t->slots[h].idx1 - 1;
	}
}

/* Stores id -> idx; returns the index already stored for id (a duplicate), or -1. */
static int64_t id_map_put(id_map *t, int64_t id, uint32_t idx)
{
	uint64_t mask = id_slots(t) - 1;

	for (uint64_t h = id_hash(t, id);; h = (h + 1) & mask) {
		if (!t->slots[h].idx1) {
			t->slots[h].id = id;
			t->slots[h].idx1 = idx + 1;
			return -1;
		}
		if (t->slots[h].id == id)
			return (int64_t)t->slots[h].idx1 - 1;
	}
}

/* ---- Computations ---------------------------------------------------------------------------- */

/* What the conversion of one module keeps besides the shared context. */
typedef struct loader {
	shs__pl c;
	shs__op_table ops;
	id_map comp_ids;
	id_map instr_ids; /* of the computation being converted */
} loader;

/* Resolves ids[0..n) to instruction indices of the current computation. */
static int resolve_instrs(const loader *l, const int64_t *ids, size_t n, const char *what,
			  uint32_t *count, uint32_t **out)
{
	if (!n)
		return SHS_OK;
	if (n > SHS_MAX_OPERANDS)
		return shs__pl_fail(&l->c, SHS_EUNSUPPORTED, "%zu %s ids (limit %d)", n, what,
				    SHS_MAX_OPERANDS);
	*out = shs_arena_alloc(l->c.a, n * sizeof(**out));
	if (!*out)
		return shs__pl_nomem(&l->c);
	for (size_t i = 0; i < n; i++) {
		int64_t idx = id_map_get(&l->instr_ids, ids[i]);

		if (idx < 0)
			return shs__pl_fail(&l->c, SHS_EPARSE,
					    "%s id %lld does not exist in this computation", what,
					    (long long)ids[i]);
		(*out)[i] = (uint32_t)idx;
	}
	*count = (uint32_t)n;
	return SHS_OK;
}

static int resolve_called(const loader *l, const Xla__HloInstructionProto *p, shs_instr *in)
{
	size_t n = p->n_called_computation_ids;

	if (!n)
		return SHS_OK;
	if (n > SHS_MAX_OPERANDS)
		return shs__pl_fail(&l->c, SHS_EUNSUPPORTED, "%zu called computations", n);
	in->called = shs_arena_alloc(l->c.a, n * sizeof(*in->called));
	if (!in->called)
		return shs__pl_nomem(&l->c);
	for (size_t i = 0; i < n; i++) {
		int64_t idx = id_map_get(&l->comp_ids, p->called_computation_ids[i]);

		if (idx < 0)
			return shs__pl_fail(&l->c, SHS_EPARSE,
					    "called computation id %lld does not exist",
					    (long long)p->called_computation_ids[i]);
		in->called[i] = (uint32_t)idx;
	}
	in->n_called = (uint32_t)n;
	return SHS_OK;
}

/* Operands, control predecessors, called computations and the root, once all ids are known. */
static int comp_refs(loader *l, const Xla__HloComputationProto *p, shs_computation *comp)
{
	int64_t root;
	int rc = SHS_OK;

	for (uint32_t i = 0; rc == SHS_OK && i < comp->n_instrs; i++) {
		const Xla__HloInstructionProto *ip = p->instructions[i];
		shs_instr *in = comp->instrs[i];

		l->c.instr = in->name;
		rc = resolve_instrs(l, ip->operand_ids, ip->n_operand_ids, "operand",
				    &in->n_operands, &in->operands);
		if (rc == SHS_OK)
			rc = resolve_instrs(l, ip->control_predecessor_ids,
					    ip->n_control_predecessor_ids, "control predecessor",
					    &in->n_control, &in->control);
		if (rc == SHS_OK)
			rc = resolve_called(l, ip, in);
	}
	if (rc != SHS_OK)
		return rc;
	l->c.instr = NULL;
	root = id_map_get(&l->instr_ids, p->root_id);
	if (root < 0)
		return shs__pl_fail(&l->c, SHS_EPARSE, "root id %lld does not exist",
				    (long long)p->root_id);
	comp->root = (uint32_t)root;
	return SHS_OK;
}

/* The instructions, in one block, with their ids in l->instr_ids. */
static int comp_instrs(loader *l, const Xla__HloComputationProto *p, shs_computation *comp)
{
	uint32_t n = (uint32_t)p->n_instructions;
	shs_instr *block = shs_arena_calloc(l->c.a, n, sizeof(*block));

	comp->instrs = shs_arena_alloc(l->c.a, n * sizeof(*comp->instrs));
	if (!block || !comp->instrs)
		return shs__pl_nomem(&l->c);
	comp->n_instrs = n;
	id_map_reset(&l->instr_ids, n);
	for (uint32_t i = 0; i < n; i++) {
		const Xla__HloInstructionProto *ip = p->instructions[i];
		int64_t dup;
		int rc;

		comp->instrs[i] = &block[i];
		l->c.instr = ip->name ? ip->name : "";
		rc = shs__instr_from(&l->c, &l->ops, ip, &block[i]);
		if (rc != SHS_OK)
			return rc;
		l->c.instr = NULL;
		dup = id_map_put(&l->instr_ids, block[i].id, i);
		if (dup >= 0)
			return shs__pl_fail(&l->c, SHS_EPARSE,
					    "instructions '%s' and '%s' share id %lld",
					    block[dup].name, block[i].name, (long long)block[i].id);
	}
	return SHS_OK;
}

static int comp_from(loader *l, const Xla__HloComputationProto *p, shs_computation *comp)
{
	shs__strs s = { 0 };
	int rc;

	l->c.comp = comp->name;
	l->c.instr = NULL;
	if (!p->n_instructions)
		return shs__pl_fail(&l->c, SHS_EPARSE, "computation has no instructions");
	if (p->n_instructions > UINT32_MAX)
		return shs__pl_fail(&l->c, SHS_EUNSUPPORTED, "too many instructions");
	rc = comp_instrs(l, p, comp);
	if (rc != SHS_OK)
		return rc;
	shs__strs_add(&s, p->execution_thread, &comp->execution_thread, false);
	if (!shs__strs_copy(&s, l->c.a))
		return shs__pl_nomem(&l->c);
	rc = shs__pl_unknown(&l->c, &p->base, &comp->unknown);
	if (rc == SHS_OK)
		rc = comp_refs(l, p, comp);
	return rc;
}

/* Creates the computations with their names and ids, the id table, and room for the largest
 * computation's instruction ids. */
static int comps_skeleton(loader *l, const Xla__HloModuleProto *p)
{
	shs_module *m = l->c.m;
	shs_computation *block;
	size_t most = 0;
	int rc;

	if (p->n_computations > UINT32_MAX)
		return shs__pl_fail(&l->c, SHS_EUNSUPPORTED, "too many computations");
	m->comps = shs_arena_alloc(l->c.a, p->n_computations * sizeof(*m->comps));
	block = shs_arena_calloc(l->c.a, p->n_computations, sizeof(*block));
	if (!m->comps || !block)
		return shs__pl_nomem(&l->c);
	for (size_t i = 0; i < p->n_computations; i++)
		if (p->computations[i]->n_instructions > most)
			most = p->computations[i]->n_instructions;
	rc = id_map_alloc(&l->c, &l->comp_ids, p->n_computations);
	if (rc == SHS_OK)
		rc = id_map_alloc(&l->c, &l->instr_ids, most);
	if (rc != SHS_OK)
		return rc;
	id_map_reset(&l->comp_ids, p->n_computations);
	for (uint32_t i = 0; i < p->n_computations; i++) {
		shs__strs s = { 0 };
		int64_t dup;

		shs__strs_add(&s, p->computations[i]->name, &block[i].name, true);
		if (!shs__strs_copy(&s, l->c.a))
			return shs__pl_nomem(&l->c);
		block[i].id = p->computations[i]->id;
		m->comps[i] = &block[i];
		dup = id_map_put(&l->comp_ids, block[i].id, i);
		if (dup >= 0)
			return shs__pl_fail(&l->c, SHS_EPARSE,
					    "computations '%s' and '%s' share id %lld",
					    block[dup].name, block[i].name, (long long)block[i].id);
	}
	m->n_comps = (uint32_t)p->n_computations;
	return SHS_OK;
}

/* ---- The module ------------------------------------------------------------------------------ */

/* The entry: by entry_computation_id when it names one, else by entry_computation_name, else
 * (neither given) the last computation, which is where XLA puts the entry. */
static int find_entry(loader *l, const Xla__HloModuleProto *p)
{
	shs_module *m = l->c.m;
	const char *name = p->entry_computation_name ? p->entry_computation_name : "";
	int64_t idx = id_map_get(&l->comp_ids, p->entry_computation_id);

	if (idx >= 0 &&
	    (p->entry_computation_id || !*name || !strcmp(m->comps[idx]->name, name))) {
		m->entry = (uint32_t)idx;
		return SHS_OK;
	}
	for (uint32_t i = 0; *name && i < m->n_comps; i++) {
		if (!strcmp(m->comps[i]->name, name)) {
			m->entry = i;
			return SHS_OK;
		}
	}
	if (!p->entry_computation_id && !*name) {
		m->entry = m->n_comps - 1;
		return SHS_OK;
	}
	return shs__pl_fail(&l->c, SHS_EPARSE,
			    "entry computation (id %lld, name '%s') does not exist",
			    (long long)p->entry_computation_id, name);
}

static int aliases_from(loader *l, const Xla__HloInputOutputAliasProto *p)
{
	shs_module *m = l->c.m;

	if (!p || !p->n_entries)
		return SHS_OK;
	if (p->n_entries > UINT32_MAX)
		return shs__pl_fail(&l->c, SHS_EUNSUPPORTED, "too many aliases");
	m->aliases = shs_arena_calloc(l->c.a, p->n_entries, sizeof(*m->aliases));
	if (!m->aliases)
		return shs__pl_nomem(&l->c);
	m->n_aliases = (uint32_t)p->n_entries;
	for (size_t i = 0; i < p->n_entries; i++) {
		const Xla__HloInputOutputAliasProto__AliasEntryProto *ep = p->entries[i];
		shs_alias *al = &m->aliases[i];

		al->param_number = ep->parameter_number;
		al->kind = ep->kind;
		if (shs__pl_i64s(&l->c, &al->output_index, ep->output_shape_index,
				 ep->n_output_shape_index) ||
		    shs__pl_i64s(&l->c, &al->param_index, ep->parameter_shape_index,
				 ep->n_parameter_shape_index))
			return l->c.e->code;
	}
	return SHS_OK;
}

/* Everything beside the computations: entry, entry layout, aliases, attributes, unknowns. */
static int module_rest(loader *l, const Xla__HloModuleProto *p)
{
	shs_module *m = l->c.m;
	int rc = find_entry(l, p);

	if (rc == SHS_OK && p->host_program_shape) {
		l->c.part = "host_program_shape";
		rc = shs__program_shape_from(&l->c, p->host_program_shape, &m->entry_layout);
		l->c.part = NULL;
	}
	if (rc == SHS_OK)
		rc = aliases_from(l, p->input_output_alias);
	if (rc == SHS_OK)
		rc = shs__header_from_proto(&l->c, p);
	if (rc == SHS_OK)
		rc = shs__pl_attrs(&l->c, p->frontend_attributes, &m->n_frontend_attrs,
				   &m->frontend_attrs);
	if (rc == SHS_OK)
		rc = shs__pl_unknown(&l->c, &p->base, &m->unknown);
	return rc;
}

static int module_from(loader *l, const Xla__HloModuleProto *p)
{
	shs_module *m = l->c.m;
	shs__strs s = { 0 };
	int rc;

	if (!p->n_computations)
		return shs__pl_fail(&l->c, SHS_EPARSE,
				    "not an HloModuleProto or HloProto: no computations");
	m->id = p->id;
	shs__strs_add(&s, p->name, &m->name, true);
	if (!shs__strs_copy(&s, l->c.a))
		return shs__pl_nomem(&l->c);
	shs__op_table_init(&l->ops);
	rc = comps_skeleton(l, p);
	for (uint32_t i = 0; rc == SHS_OK && i < m->n_comps; i++) {
		Xla__HloComputationProto in_order;

		rc = shs__scheduled(&l->c, p->schedule, p->computations[i], &in_order);
		if (rc == SHS_OK)
			rc = comp_from(l, &in_order, m->comps[i]);
	}
	if (rc != SHS_OK)
		return rc;
	l->c.comp = l->c.instr = NULL;
	return module_rest(l, p);
}

static int convert(loader *l, const ProtobufCMessage *msg, bool wrapped)
{
	const Xla__HloModuleProto *mp = (const Xla__HloModuleProto *)msg;

	if (wrapped) {
		const Xla__HloProto *hp = (const Xla__HloProto *)msg;
		int rc = shs__pl_unknown(&l->c, &hp->base, &l->c.m->wrapper_unknown);

		if (rc != SHS_OK)
			return rc;
		if (!hp->hlo_module)
			return shs__pl_fail(&l->c, SHS_EPARSE, "HloProto has no hlo_module");
		mp = hp->hlo_module;
	}
	l->c.m->from_hlo_proto = wrapped;
	return module_from(l, mp);
}

/* ---- Telling HloProto from HloModuleProto ---------------------------------------------------- */

/* True when buf[0..len) is well-formed wire data with a length-delimited field 3. */
static bool has_computations(const uint8_t *buf, size_t len)
{
	size_t pos = 0;
	bool found = false;

	while (pos < len) {
		shs__pb_span f;

		if (!shs__pb_field(buf, len, &pos, &f))
			return false;
		found |= f.field == FIELD_COMPUTATIONS && f.wire == SHS__PB_LEN;
	}
	return found;
}

/* An HloProto has only fields 1 to 3 (hlo_module, the reserved hlo_ordering and
 * buffer_assignment), and its field 1 is a module with computations. A bare HloModuleProto's
 * field 1 is its name, which is not such a message. */
static bool is_hlo_proto(const uint8_t *buf, size_t len)
{
	size_t pos = 0;
	shs__pb_span module = { 0 };
	bool have_module = false;

	while (pos < len) {
		shs__pb_span f;

		if (!shs__pb_field(buf, len, &pos, &f) || f.field > HLO_PROTO_MAX_FIELD)
			return false;
		if (f.field == FIELD_HLO_MODULE && f.wire == SHS__PB_LEN) {
			module = f;
			have_module = true;
		}
	}
	return have_module && has_computations(buf + module.payload, module.payload_len);
}

/* ---- Entry point ----------------------------------------------------------------------------- */

/* SHS_LOAD_BUDGET_FLOOR_MB MiB plus SHS_LOAD_BUDGET_PER_BYTE per input byte, saturating. */
static size_t budget_for(size_t len)
{
	size_t floor = (size_t)SHS_LOAD_BUDGET_FLOOR_MB << MIB_SHIFT;

	if (len > (SIZE_MAX - floor) / SHS_LOAD_BUDGET_PER_BYTE)
		return SIZE_MAX;
	return floor + len * SHS_LOAD_BUDGET_PER_BYTE;
}

/* The first block for the unpacked tree: about what protobuf-c needs for len bytes of HLO, so
 * that the unpack takes one large block rather than dozens of small chunks. (With glibc, freeing
 * a large block also lets later loads reuse its memory instead of faulting in fresh pages.) */
static size_t unpack_block(size_t len)
{
	if (len > SHS__PB_MAX_BLOCK / UNPACK_PER_BYTE)
		return SHS__PB_MAX_BLOCK;
	return len * UNPACK_PER_BYTE > UNPACK_MIN_BLOCK ? len * UNPACK_PER_BYTE : UNPACK_MIN_BLOCK;
}

/* Converts the unpacked msg into a new module whose arena gets what the unpacking left of the
 * budget; nested messages unpacked meanwhile count the module's memory against it too. */
static int convert_new(loader *l, shs__pb_arena *pa, const ProtobufCMessage *msg, bool wrapped,
		       size_t budget)
{
	size_t used = shs_arena_used(pa->arena);

	l->c.m = shs_module_new(budget > used ? budget - used : 1); /* 0 would mean no limit */
	if (!l->c.m)
		return shs__pl_nomem(&l->c);
	l->c.a = l->c.m->arena;
	pa->also = l->c.m->arena;
	pa->limit = budget;
	return convert(l, msg, wrapped);
}

/* Unpacks buf with protobuf-c into an arena and converts it. The schema is not recursive (tuples
 * are nested bytes the conversion unpacks itself, SHS_MAX_NESTING deep at most), so protobuf-c
 * cannot recurse without bound and the input needs no pre-scan: only when the unpack or the
 * conversion fails is the wire data walked, to say where and why. */
static int load(loader *l, const uint8_t *buf, size_t len, bool wrapped)
{
	const ProtobufCMessageDescriptor *d =
		wrapped ? &xla__hlo_proto__descriptor : &xla__hlo_module_proto__descriptor;
	size_t budget = budget_for(len);
	shs_arena *tree = shs_arena_new(budget);
	shs__pb_arena pa;
	ProtobufCMessage *msg;
	int rc;

	if (!tree)
		return shs__pl_nomem(&l->c);
	shs__pb_arena_init(&pa, tree, unpack_block(len));
	l->c.scratch = &pa;
	msg = protobuf_c_message_unpack(d, &pa.alloc, len, buf);
	if (msg)
		rc = convert_new(l, &pa, msg, wrapped, budget);
	else if (pa.refused)
		rc = shs__pl_fail(&l->c, SHS_ENOMEM,
				  "unpacking %zu bytes needs more than the %zu MiB budget", len,
				  budget >> MIB_SHIFT);
	else
		rc = shs__pl_fail(&l->c, SHS_EPARSE, "malformed protobuf (%zu bytes)", len);
	if (rc == SHS_EPARSE) { /* a fault in the wire data explains the failure best */
		shs_err why;

		if (shs__proto_check(d, buf, len, l->c.origin, &why) != SHS_OK)
			*l->c.e = why;
	}
	/* Every block of the unpacked tree, of the nested messages unpacked while converting and of
	 * the id tables came from tree, through pa, whose free does nothing; the module points
	 * into none of them. Dropping the arena frees them all: no free_unpacked walk. */
	shs_arena_free(tree);
	return rc;
}

int shs_proto_load(const uint8_t *buf, size_t len, const char *origin, shs_module **out,
		   shs_err *e)
{
	shs_err scratch;
	loader l = { .c = { .origin = origin ? origin : "<protobuf>", .e = e ? e : &scratch } };
	int rc;

	e = l.c.e;
	if (!out || (!buf && len))
		return shs_seterr(e, SHS_EINVAL, "%s: no buffer or no output", l.c.origin);
	*out = NULL;
	if (len > (size_t)SHS_MAX_INPUT_MB << MIB_SHIFT)
		return shs_seterr(e, SHS_ENOMEM, "%s: %zu bytes is larger than the %d MiB limit",
				  l.c.origin, len, SHS_MAX_INPUT_MB);
	rc = load(&l, buf, len, is_hlo_proto(buf, len));
	if (rc != SHS_OK) {
		shs_module_free(l.c.m);
		return rc;
	}
	*out = l.c.m;
	return SHS_OK;
}
