/* The module header's schedule and buffer donors <-> HloModuleProto's schedule (7) and
 * buffer_donor (18), as XLA's parser, HloModule::ToProto and HloSchedule map them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "proto_internal.h"
#include "raw_attrs.h"

enum { WHY = 160 };

/* ---- IR -> proto ----------------------------------------------------------------------------- */

/* is_scheduled=true: XLA's parser schedules every computation but fusion bodies in the order the
 * text lists their instructions (ScheduleFromInstructionOrder); keys are computation ids. */
static int schedule_to(const shs__ps *c, Xla__HloModuleProto *p)
{
	const shs_module *m = c->m;
	bool *fused = calloc(m->n_comps ? m->n_comps : 1, sizeof(*fused));
	Xla__HloScheduleProto *s = shs__ps_new_msg(c, &xla__hlo_schedule_proto__descriptor);
	size_t n = 0;
	int rc = SHS_OK;

	if (!fused || !s || !(s->sequences = shs_arena_alloc(c->a, m->n_comps * sizeof(void *)))) {
		free(fused);
		return shs__ps_nomem(c);
	}
	for (uint32_t k = 0; k < m->n_comps; k++)
		for (uint32_t i = 0; i < m->comps[k]->n_instrs; i++)
			if (m->comps[k]->instrs[i]->op == SHS_OP_FUSION)
				for (uint32_t j = 0; j < m->comps[k]->instrs[i]->n_called; j++)
					if (m->comps[k]->instrs[i]->called[j] < m->n_comps)
						fused[m->comps[k]->instrs[i]->called[j]] = true;
	for (uint32_t k = 0; rc == SHS_OK && k < m->n_comps; k++) {
		const shs_computation *comp = m->comps[k];
		Xla__HloScheduleProto__SequencesEntry *e;
		Xla__HloScheduleProto__InstructionSequence *seq;

		if (fused[k])
			continue;
		e = shs__ps_new_msg(c, &xla__hlo_schedule_proto__sequences_entry__descriptor);
		seq = shs__ps_new_msg(c,
				      &xla__hlo_schedule_proto__instruction_sequence__descriptor);
		if (!e || !seq || !(seq->instruction_ids = shs_arena_alloc(c->a, comp->n_instrs *
									   sizeof(int64_t)))) {
			rc = shs__ps_nomem(c);
			break;
		}
		for (uint32_t i = 0; i < comp->n_instrs; i++)
			seq->instruction_ids[i] = comp->instrs[i]->id;
		seq->n_instruction_ids = comp->n_instrs;
		e->key = comp->id;
		e->value = seq;
		s->sequences[n++] = e;
	}
	free(fused);
	s->n_sequences = n;
	p->schedule = s;
	return rc;
}

static int donors_to(const shs__ps *c, const char *value, Xla__HloModuleProto *p)
{
	Xla__HloBufferDonorProto *b = shs__ps_new_msg(c, &xla__hlo_buffer_donor_proto__descriptor);
	shs__donor *d;
	uint32_t n;
	char why[WHY];
	int rc;

	if (!b)
		return shs__ps_nomem(c);
	rc = shs__donors_parse(c->a, value, &d, &n, why, sizeof(why));
	if (rc == SHS_ENOMEM)
		return shs__ps_nomem(c);
	if (rc)
		return shs__ps_fail(c, rc, "buffer_donor: %s", why);
	if (n && !(b->entries = shs_arena_alloc(c->a, n * sizeof(*b->entries))))
		return shs__ps_nomem(c);
	for (uint32_t k = 0; k < n; k++) {
		Xla__HloBufferDonorProto__BufferDonorEntryProto *e = shs__ps_new_msg(
			c, &xla__hlo_buffer_donor_proto__buffer_donor_entry_proto__descriptor);

		if (!e)
			return shs__ps_nomem(c);
		e->parameter_number = d[k].param;
		e->n_parameter_shape_index = d[k].index.n;
		e->parameter_shape_index = d[k].index.v;
		b->entries[k] = e;
	}
	b->n_entries = n;
	p->buffer_donor = b;
	return SHS_OK;
}

int shs__header_to_proto(const shs__ps *c, Xla__HloModuleProto *p)
{
	int rc = SHS_OK;

	for (uint32_t i = 0; rc == SHS_OK && i < c->m->n_raw_attrs; i++) {
		const shs_raw_attr *r = &c->m->raw_attrs[i];

		if (shs_header_attr_is_config(r->name))
			continue;
		if (!strcmp(r->name, "is_scheduled"))
			rc = strcmp(r->value, "true") ? SHS_OK : schedule_to(c, p);
		else if (!strcmp(r->name, "buffer_donor"))
			rc = donors_to(c, r->value, p);
		else
			rc = shs__ps_fail(c, SHS_EUNSUPPORTED, "header attribute '%s' is kept only "
					  "as HLO text and cannot be written as protobuf", r->name);
	}
	return rc;
}

/* ---- proto -> IR ----------------------------------------------------------------------------- */

int shs__header_from_proto(const shs__pl *c, const Xla__HloModuleProto *p)
{
	const Xla__HloBufferDonorProto *b = p->buffer_donor;
	shs_module *m = c->m;
	shs__donor *d = NULL;
	shs_buf text = { 0 };
	const char *v;

	if (!p->schedule && !(b && b->n_entries))
		return SHS_OK;
	if (!(m->raw_attrs = shs_arena_alloc(c->a, 2 * sizeof(*m->raw_attrs))))
		return shs__pl_nomem(c);
	if (p->schedule)
		m->raw_attrs[m->n_raw_attrs++] = (shs_raw_attr){ "is_scheduled", "true" };
	if (!(b && b->n_entries))
		return SHS_OK;
	if (b->n_entries > UINT32_MAX || !(d = shs_arena_alloc(c->a, b->n_entries * sizeof(*d))))
		return shs__pl_nomem(c);
	for (size_t k = 0; k < b->n_entries; k++) {
		d[k].param = b->entries[k]->parameter_number;
		d[k].index.n = (uint32_t)b->entries[k]->n_parameter_shape_index;
		d[k].index.v = b->entries[k]->parameter_shape_index;
	}
	shs__donors_print(&text, d, (uint32_t)b->n_entries);
	v = text.oom ? NULL : shs_arena_strdup(c->a, text.data);
	shs_buf_free(&text);
	if (!v)
		return shs__pl_nomem(c);
	m->raw_attrs[m->n_raw_attrs++] = (shs_raw_attr){ "buffer_donor", v };
	return SHS_OK;
}

/* The sequence of the computation with id comp_id, or NULL. */
static const Xla__HloScheduleProto__InstructionSequence *
sequence_of(const Xla__HloScheduleProto *s, int64_t comp_id)
{
	for (size_t k = 0; s && k < s->n_sequences; k++)
		if (s->sequences[k]->key == comp_id)
			return s->sequences[k]->value;
	return NULL;
}

/* An instruction id and where it is in the computation, sorted by id to be found by bsearch. */
typedef struct id_at {
	int64_t id;
	size_t at;
} id_at;

static int cmp_id(const void *a, const void *b)
{
	int64_t x = ((const id_at *)a)->id, y = ((const id_at *)b)->id;

	return (x > y) - (x < y);
}

int shs__scheduled(const shs__pl *c, const Xla__HloScheduleProto *s,
		   const Xla__HloComputationProto *p, Xla__HloComputationProto *out)
{
	const Xla__HloScheduleProto__InstructionSequence *seq = sequence_of(s, p->id);
	Xla__HloInstructionProto **order;
	size_t n = p->n_instructions;
	id_at *ids;
	int rc = SHS_OK;

	*out = *p;
	if (!seq)
		return SHS_OK;
	if (seq->n_instruction_ids != n)
		return shs__pl_fail(c, SHS_EPARSE, "the schedule lists %zu of its %zu instructions",
				    seq->n_instruction_ids, n);
	order = shs_arena_alloc(c->a, n * sizeof(*order));
	ids = malloc(n * sizeof(*ids));
	if (!order || !ids) {
		free(ids);
		return shs__pl_nomem(c);
	}
	for (size_t i = 0; i < n; i++)
		ids[i] = (id_at){ p->instructions[i]->id, i };
	qsort(ids, n, sizeof(*ids), cmp_id);
	for (size_t k = 0; rc == SHS_OK && k < n; k++) {
		id_at key = { seq->instruction_ids[k], 0 };
		id_at *hit = bsearch(&key, ids, n, sizeof(*ids), cmp_id);

		if (!hit || hit->at == SIZE_MAX)
			rc = shs__pl_fail(c, SHS_EPARSE,
					  "the schedule names instruction id %lld %s",
					  (long long)key.id, hit ? "twice" : "that is not there");
		else {
			order[k] = p->instructions[hit->at];
			hit->at = SIZE_MAX;
		}
	}
	free(ids);
	if (rc == SHS_OK)
		out->instructions = order;
	return rc;
}
