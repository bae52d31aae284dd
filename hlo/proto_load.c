/* HloProto / HloModuleProto -> IR: the entry point, the module and its computations. */
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "io.h"
#include "proto_internal.h"
#include "text_lexer.h"

enum {
	MIB_SHIFT = 20,
	FIELD_HLO_MODULE = 1,        /* HloProto.hlo_module */
	FIELD_COMPUTATIONS = 3,      /* HloModuleProto.computations */
	HLO_PROTO_MAX_FIELD = 3,     /* HloProto has fields 1 to 3 only */
	UNPACK_PER_BYTE = 8,         /* bytes of unpacked tree per input byte (MaxText needs ~6) */
	UNPACK_MIN_BLOCK = 64 << 10,
	FIELD_NAME = 1,              /* the name of a computation or an instruction */
	NUL_WALK_DEPTH = SHS_MAX_NESTING + SHS__PB_FIXED_DEPTH,
	VARINT_MORE = 0x80,          /* a varint byte: more bytes follow */
	VARINT_PAYLOAD = 0x7f,       /* a varint byte's seven bits of value */
	VARINT_BITS = 7,
	VARINT_MAX_SHIFT = 64
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

/* The entry layout XLA takes when the proto has none (its module config's, from the entry's
 * parameters in order and its root), as the text parser makes it: a module reads the same from
 * either form (fuzz_proto: its text gained an entry_computation_layout once read back). Left
 * out when the parameter numbers are not 0..n-1 once each, which the verifier names. */
static int entry_layout_default(const loader *l)
{
	shs_module *m = l->c.m;
	const shs_computation *c = m->comps[m->entry];
	shs_program_shape *ps = shs_arena_calloc(l->c.a, 1, sizeof(*ps));
	uint32_t n = 0;
	bool *seen;

	for (uint32_t i = 0; i < c->n_instrs; i++)
		n += c->instrs[i]->op == SHS_OP_PARAMETER;
	seen = shs_arena_calloc(l->c.a, n + 1, sizeof(*seen));
	if (!ps || !seen || (n && !(ps->params = shs_arena_calloc(l->c.a, n, sizeof(*ps->params)))))
		return shs__pl_nomem(&l->c);
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		int64_t k = in->parameter_number;

		if (in->op != SHS_OP_PARAMETER)
			continue;
		if (k < 0 || k >= (int64_t)n || seen[k])
			return SHS_OK;
		seen[k] = true;
		if (shs_shape_copy(l->c.a, &ps->params[k], &in->shape) != SHS_OK)
			return shs__pl_nomem(&l->c);
	}
	ps->n_params = n;
	if (shs_shape_copy(l->c.a, &ps->result, &c->instrs[c->root]->shape) != SHS_OK)
		return shs__pl_nomem(&l->c);
	m->entry_layout = ps;
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
	} else if (rc == SHS_OK) {
		rc = entry_layout_default(l);
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

/* ---- Strings with a NUL ---------------------------------------------------------------------- */

/* protobuf-c hands string fields over NUL-terminated and the IR keeps them as C strings: one
 * holding a NUL byte would be cut short there, and written back so. Such input is refused, found
 * by a walk of the wire data guided by the descriptors once protobuf-c has unpacked it (the wire
 * data is then well-formed). */

/* Where the walk is: the input, and the computation and instruction messages it is inside. */
typedef struct nul_walk {
	const uint8_t *buf;
	shs__pb_span comp, instr; /* payload_len 0: not inside one */
	const ProtobufCFieldDescriptor *field; /* the string holding a NUL, once found */
	const ProtobufCMessageDescriptor *in;
	size_t at;
} nul_walk;

/* The message type a tuple field (bytes holding a message of the outer type) holds, or NULL. */
static const ProtobufCMessageDescriptor *tuple_of(const ProtobufCMessageDescriptor *d,
						  uint32_t field)
{
	if ((d == &xla__shape_proto__descriptor && field == SHS__PB_SHAPE_TUPLE) ||
	    (d == &xla__literal_proto__descriptor && field == SHS__PB_LITERAL_TUPLE) ||
	    (d == &xla__op_sharding__descriptor && field == SHS__PB_SHARDING_TUPLE))
		return d;
	return NULL;
}

/* Whether messages of type d hold no string at any depth: the walk skips them (the shapes,
 * layouts and literals that make most of a module's bytes). */
static bool stringless(const ProtobufCMessageDescriptor *d)
{
	return d == &xla__shape_proto__descriptor || d == &xla__layout_proto__descriptor ||
	       d == &xla__literal_proto__descriptor || d == &xla__tile_proto__descriptor;
}

/* The varint at buf[*pos..end), advancing *pos; false when it runs past end or over 10 bytes. */
static inline bool wire_varint(const uint8_t *buf, size_t end, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *pos < end && shift < VARINT_MAX_SHIFT; shift += VARINT_BITS) {
		uint8_t b = buf[(*pos)++];

		v |= (uint64_t)(b & VARINT_PAYLOAD) << shift;
		if (!(b & VARINT_MORE)) {
			*out = v;
			return true;
		}
	}
	return false;
}

/* The next field at buf[*pos..end) past it: its tag, and for a length-delimited one its
 * payload in *f; false at the end or at a malformed field (the walk then stops). */
static inline bool wire_field(const uint8_t *buf, size_t end, size_t *pos, shs__pb_span *f)
{
	uint64_t tag, n;

	if (!wire_varint(buf, end, pos, &tag))
		return false;
	f->field = (uint32_t)(tag >> SHS__PB_TAG_SHIFT);
	f->wire = (int)(tag & SHS__PB_WIRE_MASK);
	switch (f->wire) {
	case SHS__PB_VARINT:
		return wire_varint(buf, end, pos, &n);
	case SHS__PB_64BIT:
	case SHS__PB_32BIT:
		n = f->wire == SHS__PB_64BIT ? sizeof(uint64_t) : sizeof(uint32_t);
		break;
	case SHS__PB_LEN:
		if (!wire_varint(buf, end, pos, &n))
			return false;
		f->payload = *pos;
		f->payload_len = (size_t)n;
		break;
	default:
		return false;
	}
	if (n > end - *pos)
		return false;
	*pos += (size_t)n;
	return true;
}

/* Walks the message of type d at w->buf[start..end); true when a string field in it holds a
 * NUL (w says which and where). */
static bool find_nul(nul_walk *w, const ProtobufCMessageDescriptor *d, size_t start, size_t end,
		     unsigned depth)
{
	size_t pos = start;
	shs__pb_span f;

	while (pos < end && wire_field(w->buf, end, &pos, &f)) {
		const ProtobufCFieldDescriptor *fd;
		const ProtobufCMessageDescriptor *inner;
		shs__pb_span *place = NULL, was;

		if (f.wire != SHS__PB_LEN)
			continue;
		fd = protobuf_c_message_descriptor_get_field(d, f.field);
		if (!fd)
			continue;
		if (fd->type == PROTOBUF_C_TYPE_STRING) {
			const uint8_t *nul = memchr(w->buf + f.payload, 0, f.payload_len);
			if (nul) {
				w->field = fd;
				w->in = d;
				w->at = (size_t)(nul - w->buf);
				return true;
			}
			continue;
		}
		inner = fd->type == PROTOBUF_C_TYPE_MESSAGE ? fd->descriptor : tuple_of(d, f.field);
		if (!inner || stringless(inner) || depth >= NUL_WALK_DEPTH)
			continue;
		if (inner == &xla__hlo_computation_proto__descriptor)
			place = &w->comp;
		else if (inner == &xla__hlo_instruction_proto__descriptor)
			place = &w->instr;
		if (place) {
			was = *place;
			*place = f;
		}
		if (find_nul(w, inner, f.payload, f.payload + f.payload_len, depth + 1))
			return true;
		if (place)
			*place = was;
	}
	return false;
}

/* The name (field 1) of the message in span m, up to its first NUL, into buf (cap bytes). */
static void span_name(const uint8_t *buf, const shs__pb_span *m, char *out, size_t cap)
{
	size_t pos = m->payload, end = m->payload + m->payload_len;
	shs__pb_span f;

	snprintf(out, cap, "?");
	while (pos < end && shs__pb_field(buf, end, &pos, &f))
		if (f.field == FIELD_NAME && f.wire == SHS__PB_LEN)
			snprintf(out, cap, "%.*s", (int)f.payload_len,
				 (const char *)buf + f.payload);
}

/* Refuses buf when a string field holds a NUL, naming the field, the instruction and the
 * computation it is in. */
static int refuse_nul(loader *l, const ProtobufCMessageDescriptor *d, const uint8_t *buf,
		      size_t len)
{
	nul_walk w = { .buf = buf };
	char comp[SHS_ERRMSG_MAX / 4], instr[SHS_ERRMSG_MAX / 4];

	if (!find_nul(&w, d, 0, len, 0))
		return SHS_OK;
	l->c.comp = l->c.instr = NULL;
	if (w.comp.payload_len) {
		span_name(buf, &w.comp, comp, sizeof(comp));
		l->c.comp = comp;
	}
	if (w.instr.payload_len) {
		span_name(buf, &w.instr, instr, sizeof(instr));
		l->c.instr = instr;
	}
	return shs__pl_fail(&l->c, SHS_EPARSE, "string field '%s' of %s holds a NUL byte (offset "
			    "%zu), which the module cannot keep", w.field->name, w.in->short_name,
			    w.at);
}

/* ---- Names ----------------------------------------------------------------------------------- */

/* HLO text names what protobuf numbers: a module that could not be written as text that reads
 * back is refused. Each name must be one identifier, an instruction's not ROOT and a
 * computation's not ENTRY or a stack frame table's word (text_lexer.h), and computation and
 * instruction names unique in the module (as XLA's HloModule::CreateFromProto requires them). */

/* One name seen: the computation, and the instruction plus one (0 for a computation). */
typedef struct name_slot {
	const char *name;
	uint32_t comp, instr1;
} name_slot;

typedef struct name_set {
	name_slot *slots;
	uint64_t mask;
} name_set;

/* The slot of name: the one holding it, or the empty one where it goes. */
static name_slot *name_find(const name_set *t, const char *name)
{
	uint64_t h = XXH3_64bits(name, strlen(name)) & t->mask;

	while (t->slots[h].name && strcmp(t->slots[h].name, name))
		h = (h + 1) & t->mask;
	return &t->slots[h];
}

/* Whether name can stand where the text form puts it: an identifier, none of keywords (may be
 * NULL). */
static int check_name(const loader *l, const char *name, const char *const *keywords,
		      const char *what)
{
	if (!shs__lex_is_name(name))
		return shs__pl_fail(&l->c, SHS_EPARSE, "%s name '%s' is not an HLO identifier (a "
				    "letter or '_', then letters, digits, '_', '.', '-')", what,
				    name);
	if (keywords && shs__word_in(name, keywords))
		return shs__pl_fail(&l->c, SHS_EPARSE, "%s name '%s' would read as the keyword",
				    what, name);
	return SHS_OK;
}

/* Each instruction name of computation k: printable, and in no other place of t. */
static int check_instr_names(loader *l, name_set *t, uint32_t k)
{
	const shs_computation *c = l->c.m->comps[k];

	for (uint32_t i = 0; i < c->n_instrs; i++) {
		name_slot *s = name_find(t, c->instrs[i]->name);
		int rc;

		l->c.instr = c->instrs[i]->name;
		if ((rc = check_name(l, c->instrs[i]->name, shs__instr_words, "the")) != SHS_OK)
			return rc;
		if (s->name)
			return shs__pl_fail(&l->c, SHS_EPARSE, "name is also used in computation "
					    "'%s'", l->c.m->comps[s->comp]->name);
		*s = (name_slot){ c->instrs[i]->name, k, i + 1 };
	}
	l->c.instr = NULL;
	return SHS_OK;
}

static int check_names(loader *l)
{
	const shs_module *m = l->c.m;
	size_t most = m->n_comps;
	name_set t;
	int rc = check_name(l, m->name, NULL, "the module");

	for (uint32_t k = 0; k < m->n_comps; k++)
		most += m->comps[k]->n_instrs;
	t.mask = ((uint64_t)1 << id_bits_for(most)) - 1;
	t.slots = l->c.scratch->alloc.alloc(l->c.scratch, (size_t)(t.mask + 1) * sizeof(*t.slots));
	if (!t.slots)
		return shs__pl_nomem(&l->c);
	memset(t.slots, 0, (size_t)(t.mask + 1) * sizeof(*t.slots));
	for (uint32_t k = 0; rc == SHS_OK && k < m->n_comps; k++) {
		name_slot *s = name_find(&t, m->comps[k]->name);

		l->c.comp = m->comps[k]->name;
		rc = check_name(l, m->comps[k]->name, shs__comp_words, "the");
		if (rc == SHS_OK && s->name)
			rc = shs__pl_fail(&l->c, SHS_EPARSE, "two computations have this name");
		*s = (name_slot){ m->comps[k]->name, k, 0 };
	}
	memset(t.slots, 0, (size_t)(t.mask + 1) * sizeof(*t.slots));
	for (uint32_t k = 0; rc == SHS_OK && k < m->n_comps; k++) {
		l->c.comp = m->comps[k]->name;
		rc = check_instr_names(l, &t, k);
	}
	if (rc == SHS_OK)
		l->c.comp = NULL;
	return rc;
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

/* After an unpack or a conversion that failed to parse: a fault in the wire data explains the
 * failure best, when there is one. */
static void explain(const loader *l, const ProtobufCMessageDescriptor *d, const uint8_t *buf,
		    size_t len)
{
	shs_err why;

	if (shs__proto_check(d, buf, len, l->c.origin, &why) != SHS_OK)
		*l->c.e = why;
}

/* Unpacks buf with protobuf-c into an arena and converts it. The schema is not recursive (tuples
 * are nested bytes the conversion unpacks itself, SHS_MAX_NESTING deep at most), so protobuf-c
 * cannot recurse without bound and the input needs no pre-scan. Once it has unpacked, its
 * strings are looked at on the wire for a NUL; when the unpack or the conversion fails, the wire
 * data is walked again, to say where and why. */
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
	if (!msg && pa.refused) {
		rc = shs__pl_fail(&l->c, SHS_ENOMEM,
				  "unpacking %zu bytes needs more than the %zu MiB budget", len,
				  budget >> MIB_SHIFT);
	} else if (!msg) {
		rc = shs__pl_fail(&l->c, SHS_EPARSE, "malformed protobuf (%zu bytes)", len);
		explain(l, d, buf, len);
	} else if ((rc = refuse_nul(l, d, buf, len)) == SHS_OK &&
		   (rc = convert_new(l, &pa, msg, wrapped, budget)) == SHS_OK) {
		rc = check_names(l);
	} else if (rc == SHS_EPARSE && l->c.m) { /* the conversion failed */
		explain(l, d, buf, len);
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
