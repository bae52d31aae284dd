/* IR -> HloProto / HloModuleProto: the entry point, the module and its computations. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "proto_internal.h"

/* ---- Context and errors ---------------------------------------------------------------------- */

/* s, or "" for a name the caller left NULL. */
static const char *nz(const char *s)
{
	return s ? s : "";
}

static void where(const shs__ps *c, char *buf, size_t size)
{
	if (c->instr)
		snprintf(buf, size, "computation '%s', instruction '%s'", nz(c->comp->name),
			 nz(c->instr->name));
	else if (c->comp)
		snprintf(buf, size, "computation '%s'", nz(c->comp->name));
	else
		snprintf(buf, size, "module '%s'", nz(c->m->name));
}

int shs__ps_fail(const shs__ps *c, int code, const char *fmt, ...)
{
	char at[SHS_ERRMSG_MAX];
	va_list ap;

	where(c, at, sizeof(at));
	va_start(ap, fmt);
	code = shs_vseterr_at(c->e, code, at, fmt, ap);
	va_end(ap);
	return code;
}

int shs__ps_prefix(const shs__ps *c, const char *what)
{
	char at[SHS_ERRMSG_MAX];

	where(c, at, sizeof(at));
	return shs_err_prefix(c->e, "%s: %s", at, what);
}

int shs__ps_nomem(const shs__ps *c)
{
	return shs__ps_fail(c, SHS_ENOMEM, "out of memory");
}

void *shs__ps_new_msg(const shs__ps *c, const ProtobufCMessageDescriptor *d)
{
	void *p = shs_arena_alloc(c->a, d->sizeof_message);

	if (p)
		protobuf_c_message_init(d, p);
	return p;
}

char *shs__ps_str(const char *s)
{
	return (char *)nz(s);
}

/* ---- Unknown fields and frontend attributes -------------------------------------------------- */

/* Splits stored raw fields (tag varint + value each) back into protobuf-c's unknown fields,
 * pointing into b. */
int shs__ps_unknown(const shs__ps *c, const shs_bytes *b, ProtobufCMessage *msg)
{
	size_t pos = 0, n = 0;
	ProtobufCMessageUnknownField *u;

	while (pos < b->len) {
		shs__pb_span f;
		size_t at = pos;

		if (!shs__pb_field(b->data, b->len, &pos, &f))
			return shs__ps_fail(c, SHS_EINVAL, "stored unknown protobuf fields "
							       "are malformed at byte %zu", at);
		n++;
	}
	if (!n)
		return SHS_OK;
	u = shs_arena_calloc(c->a, n, sizeof(*u));
	if (!u)
		return shs__ps_nomem(c);
	pos = 0;
	for (size_t i = 0; i < n; i++) {
		shs__pb_span f;

		(void)shs__pb_field(b->data, b->len, &pos, &f); /* checked above */
		u[i].tag = f.field;
		u[i].wire_type = (ProtobufCWireType)f.wire;
		u[i].len = pos - f.value;
		u[i].data = (uint8_t *)(b->data + f.value);
	}
	msg->unknown_fields = u;
	msg->n_unknown_fields = (unsigned)n;
	return SHS_OK;
}

int shs__ps_attrs(const shs__ps *c, uint32_t n, const shs_attr_kv *kv,
		  Xla__FrontendAttributes **out)
{
	Xla__FrontendAttributes *p;

	*out = NULL;
	if (!n)
		return SHS_OK;
	p = shs__ps_new_msg(c, &xla__frontend_attributes__descriptor);
	if (!p)
		return shs__ps_nomem(c);
	p->map = shs_arena_calloc(c->a, n, sizeof(*p->map));
	if (!p->map)
		return shs__ps_nomem(c);
	for (uint32_t i = 0; i < n; i++) {
		Xla__FrontendAttributes__MapEntry *me =
			shs__ps_new_msg(c, &xla__frontend_attributes__map_entry__descriptor);

		if (!me)
			return shs__ps_nomem(c);
		me->key = shs__ps_str(kv[i].key);
		me->value = shs__ps_str(kv[i].value);
		p->map[i] = me;
	}
	p->n_map = n;
	*out = p;
	return SHS_OK;
}

typedef struct param_ref {
	int64_t number;
	uint32_t idx;
} param_ref;

static int cmp_param(const void *x, const void *y)
{
	const param_ref *a = x, *b = y;

	if (a->number != b->number)
		return a->number < b->number ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The signature of comp: its parameters ordered by parameter_number, and the root's shape. */
static int derive_program_shape(const shs__ps *c, const shs_computation *comp,
				shs_program_shape *out)
{
	param_ref *refs;
	uint32_t n = 0;

	memset(out, 0, sizeof(*out));
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		n += comp->instrs[i]->op == SHS_OP_PARAMETER;
	out->result = comp->instrs[comp->root]->shape;
	if (!n)
		return SHS_OK;
	refs = shs_arena_calloc(c->a, n, sizeof(*refs));
	out->params = shs_arena_calloc(c->a, n, sizeof(*out->params));
	out->param_names = shs_arena_calloc(c->a, n, sizeof(*out->param_names));
	if (!refs || !out->params || !out->param_names)
		return shs__ps_nomem(c);
	for (uint32_t i = 0, k = 0; i < comp->n_instrs; i++) {
		if (comp->instrs[i]->op != SHS_OP_PARAMETER)
			continue;
		refs[k].number = comp->instrs[i]->parameter_number;
		refs[k++].idx = i;
	}
	qsort(refs, n, sizeof(*refs), cmp_param);
	for (uint32_t k = 0; k < n; k++) {
		out->params[k] = comp->instrs[refs[k].idx]->shape;
		out->param_names[k] = comp->instrs[refs[k].idx]->name;
	}
	out->n_params = n;
	return SHS_OK;
}

/* ---- Computations and the module ------------------------------------------------------------- */

static int comp_to(shs__ps *c, const shs_computation *comp, Xla__HloComputationProto **out)
{
	Xla__HloComputationProto *p = shs__ps_new_msg(c, &xla__hlo_computation_proto__descriptor);
	shs_program_shape ps;
	int rc;

	c->comp = comp;
	c->instr = NULL;
	if (!p)
		return shs__ps_nomem(c);
	*out = p;
	if (!comp->n_instrs || comp->root >= comp->n_instrs)
		return shs__ps_fail(c, SHS_EINVAL,
				    "root index %u is out of range (%u instructions)", comp->root,
				    comp->n_instrs);
	p->name = shs__ps_str(comp->name);
	p->id = comp->id;
	p->root_id = comp->instrs[comp->root]->id;
	p->execution_thread = shs__ps_str(comp->execution_thread);
	p->instructions = shs_arena_calloc(c->a, comp->n_instrs, sizeof(*p->instructions));
	if (!p->instructions)
		return shs__ps_nomem(c);
	p->n_instructions = comp->n_instrs;
	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		rc = shs__instr_to(c, comp->instrs[i], &p->instructions[i]);
		if (rc != SHS_OK)
			return rc;
	}
	c->instr = NULL;
	rc = derive_program_shape(c, comp, &ps);
	if (rc == SHS_OK)
		rc = shs__program_shape_to(c, &ps, &p->program_shape);
	if (rc == SHS_OK)
		rc = shs__ps_unknown(c, &comp->unknown, &p->base);
	return rc;
}

static int aliases_to(const shs__ps *c, Xla__HloInputOutputAliasProto **out)
{
	const shs_module *m = c->m;
	Xla__HloInputOutputAliasProto *p;

	*out = NULL;
	if (!m->n_aliases)
		return SHS_OK;
	p = shs__ps_new_msg(c, &xla__hlo_input_output_alias_proto__descriptor);
	if (!p)
		return shs__ps_nomem(c);
	p->entries = shs_arena_calloc(c->a, m->n_aliases, sizeof(*p->entries));
	if (!p->entries)
		return shs__ps_nomem(c);
	for (uint32_t i = 0; i < m->n_aliases; i++) {
		const shs_alias *al = &m->aliases[i];
		const ProtobufCMessageDescriptor *d =
			&xla__hlo_input_output_alias_proto__alias_entry_proto__descriptor;
		Xla__HloInputOutputAliasProto__AliasEntryProto *ep = shs__ps_new_msg(c, d);

		if (!ep)
			return shs__ps_nomem(c);
		ep->n_output_shape_index = al->output_index.n;
		ep->output_shape_index = al->output_index.v;
		ep->parameter_number = al->param_number;
		ep->n_parameter_shape_index = al->param_index.n;
		ep->parameter_shape_index = al->param_index.v;
		ep->kind = al->kind;
		p->entries[i] = ep;
	}
	p->n_entries = m->n_aliases;
	*out = p;
	return SHS_OK;
}

/* host_program_shape: the stored entry layout, else the entry's derived signature. */
static int host_shape_to(shs__ps *c, Xla__ProgramShapeProto **out)
{
	shs_program_shape derived;
	int rc;

	if (c->m->entry_layout)
		return shs__program_shape_to(c, c->m->entry_layout, out);
	c->comp = c->m->comps[c->m->entry];
	rc = derive_program_shape(c, c->comp, &derived);
	c->comp = NULL;
	return rc == SHS_OK ? shs__program_shape_to(c, &derived, out) : rc;
}

/* Header attributes XLA keeps in the module's configuration (HloModuleConfig), which
 * HloModuleProto has no field for: HloModule::ToProto leaves them out (xla/hlo/ir/hlo_module.cc),
 * as it does num_partitions and replica_count. */
bool shs_header_attr_is_config(const char *name)
{
	static const char *const config[] = { "allow_spmd_sharding_propagation_to_parameters",
					      "allow_spmd_sharding_propagation_to_output",
					      "alias_passthrough_params" };

	for (size_t k = 0; name && k < sizeof(config) / sizeof(config[0]); k++)
		if (!strcmp(name, config[k]))
			return true;
	return false;
}

void shs_proto_config_attrs(const shs_module *m, void (*note)(const char *name, void *ctx),
			    void *ctx)
{
	if (m->replica_count > 0)
		note("replica_count", ctx);
	if (m->num_partitions > 0)
		note("num_partitions", ctx);
	for (uint32_t i = 0; i < m->n_raw_attrs; i++)
		if (shs_header_attr_is_config(m->raw_attrs[i].name))
			note(m->raw_attrs[i].name, ctx);
}

static int module_to(shs__ps *c, Xla__HloModuleProto *p)
{
	const shs_module *m = c->m;
	int rc;

	if ((rc = shs__header_to_proto(c, p)) != SHS_OK)
		return rc;
	if (!m->n_comps || m->entry >= m->n_comps)
		return shs__ps_fail(c, SHS_EINVAL,
				    "entry index %u is out of range (%u computations)", m->entry,
				    m->n_comps);
	p->name = shs__ps_str(m->name);
	p->id = m->id;
	p->entry_computation_name = shs__ps_str(m->comps[m->entry]->name);
	p->entry_computation_id = m->comps[m->entry]->id;
	p->computations = shs_arena_calloc(c->a, m->n_comps, sizeof(*p->computations));
	if (!p->computations)
		return shs__ps_nomem(c);
	p->n_computations = m->n_comps;
	for (uint32_t i = 0; i < m->n_comps; i++) {
		rc = comp_to(c, m->comps[i], &p->computations[i]);
		if (rc != SHS_OK)
			return rc;
	}
	c->comp = NULL;
	c->instr = NULL;
	rc = host_shape_to(c, &p->host_program_shape);
	if (rc == SHS_OK)
		rc = aliases_to(c, &p->input_output_alias);
	if (rc == SHS_OK)
		rc = shs__ps_attrs(c, m->n_frontend_attrs, m->frontend_attrs,
				   &p->frontend_attributes);
	if (rc == SHS_OK)
		rc = shs__ps_unknown(c, &m->unknown, &p->base);
	return rc;
}

/* Packs msg into a new malloc'ed buffer. */
static int pack(const shs__ps *c, const ProtobufCMessage *msg, uint8_t **out, size_t *out_len)
{
	size_t size = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		return shs__ps_nomem(c);
	if (protobuf_c_message_pack(msg, buf) != size) {
		free(buf);
		return shs__ps_fail(c, SHS_EINVAL,
				    "protobuf-c packed a different size than it computed");
	}
	*out = buf;
	*out_len = size;
	return SHS_OK;
}

int shs_proto_save(const shs_module *m, bool as_hlo_proto, uint8_t **out, size_t *out_len,
		   shs_err *e)
{
	shs_err scratch;
	shs__ps c = { .m = m, .e = e ? e : &scratch };
	Xla__HloModuleProto *mp;
	Xla__HloProto *hp = NULL;
	int rc;

	if (!m || !out || !out_len)
		return shs_seterr(c.e, SHS_EINVAL, "shs_proto_save: no module or output");
	*out = NULL;
	*out_len = 0;
	c.a = shs_arena_new(0);
	if (!c.a)
		return shs_seterr(c.e, SHS_ENOMEM, "out of memory");
	mp = shs__ps_new_msg(&c, &xla__hlo_module_proto__descriptor);
	if (as_hlo_proto)
		hp = shs__ps_new_msg(&c, &xla__hlo_proto__descriptor);
	if (!mp || (as_hlo_proto && !hp)) {
		rc = shs__ps_nomem(&c);
		goto out_free;
	}
	rc = module_to(&c, mp);
	if (rc == SHS_OK && hp) {
		hp->hlo_module = mp;
		rc = shs__ps_unknown(&c, &m->wrapper_unknown, &hp->base);
	}
	if (rc == SHS_OK)
		rc = pack(&c, hp ? &hp->base : &mp->base, out, out_len);
out_free:
	shs_arena_free(c.a);
	return rc;
}
