/* Raw text attributes <-> their HloInstructionProto fields: replica groups, source-target pairs,
 * the collective flags, the custom-call API version, is_composite; as XLA's ToProto and
 * CreateFromProto map them (hlo_instructions.cc, collective_device_list.cc). */
#include <stdio.h>
#include <string.h>

#include "proto_internal.h"
#include "raw_attrs.h"

enum { API_VERSION_ORIGINAL = 1, WHY = 160 };

/* ---- IR -> proto ----------------------------------------------------------------------------- */

static int groups_to(const shs__ps *c, const shs__groups *g, Xla__CollectiveDeviceListProto **out)
{
	Xla__CollectiveDeviceListProto *d =
		shs__ps_new_msg(c, &xla__collective_device_list_proto__descriptor);
	Xla__IotaReplicaGroupListProto *iota;

	if (!d)
		return shs__ps_nomem(c);
	*out = d;
	if (g->iota) {
		iota = shs__ps_new_msg(c, &xla__iota_replica_group_list_proto__descriptor);
		if (!iota || (g->perm.n && !(iota->iota_transpose_perm =
					     shs_arena_alloc(c->a, g->perm.n * sizeof(int32_t)))))
			return shs__ps_nomem(c);
		iota->num_replica_groups = g->n_groups;
		iota->num_devices_per_group = g->group_size;
		iota->n_iota_reshape_dims = g->reshape.n;
		iota->iota_reshape_dims = g->reshape.v;
		iota->n_iota_transpose_perm = g->perm.n;
		for (uint32_t k = 0; k < g->perm.n; k++)
			iota->iota_transpose_perm[k] = (int32_t)g->perm.v[k];
		d->iota_replica_group_list = iota;
		return SHS_OK;
	}
	if (g->n && !(d->replica_groups = shs_arena_alloc(c->a, g->n * sizeof(*d->replica_groups))))
		return shs__ps_nomem(c);
	for (uint32_t k = 0; k < g->n; k++) {
		Xla__ReplicaGroup *r = shs__ps_new_msg(c, &xla__replica_group__descriptor);

		if (!r)
			return shs__ps_nomem(c);
		r->n_replica_ids = g->groups[k].n;
		r->replica_ids = g->groups[k].v;
		d->replica_groups[k] = r;
	}
	d->n_replica_groups = g->n;
	return SHS_OK;
}

static int pairs_to(const shs__ps *c, const shs__groups *g, Xla__HloInstructionProto *p)
{
	if (g->n && !(p->source_target_pairs = shs_arena_alloc(c->a, g->n * sizeof(void *))))
		return shs__ps_nomem(c);
	for (uint32_t k = 0; k < g->n; k++) {
		Xla__SourceTarget *st = shs__ps_new_msg(c, &xla__source_target__descriptor);

		if (!st)
			return shs__ps_nomem(c);
		st->source = g->groups[k].v[0];
		st->target = g->groups[k].v[1];
		p->source_target_pairs[k] = st;
	}
	p->n_source_target_pairs = g->n;
	return SHS_OK;
}

static int one_to(const shs__ps *c, const shs_raw_attr *r, Xla__HloInstructionProto *p)
{
	shs__raw_kind k = shs__raw_kind_of(r->name);
	char why[WHY];
	shs__groups g;
	int rc;

	switch (k) {
	case SHS__RAW_REPLICA_GROUPS: case SHS__RAW_SOURCE_TARGET:
		rc = shs__groups_parse(c->a, r->value, k == SHS__RAW_SOURCE_TARGET, &g, why,
				       sizeof(why));
		if (rc == SHS_ENOMEM)
			return shs__ps_nomem(c);
		if (rc)
			return shs__ps_fail(c, rc, "%s: %s", r->name, why);
		return k == SHS__RAW_SOURCE_TARGET ? pairs_to(c, &g, p)
			: groups_to(c, &g, &p->collective_device_list);
	case SHS__RAW_CONSTRAIN_LAYOUT: p->constrain_layout = !strcmp(r->value, "true"); break;
	case SHS__RAW_USE_GLOBAL_IDS: p->use_global_device_ids = !strcmp(r->value, "true"); break;
	case SHS__RAW_IS_COMPOSITE: p->is_composite = !strcmp(r->value, "true"); break;
	case SHS__RAW_STATISTICS: case SHS__RAW_RESULT_ACCURACY: case SHS__RAW_ORIGIN:
		rc = shs__extra_to(c, k, r->value, p);
		return rc == SHS_OK ? rc : shs__ps_prefix(c, r->name);
	case SHS__RAW_API_VERSION:
		p->custom_call_api_version = shs__api_version_of(r->value);
		if (p->custom_call_api_version < 0)
			return shs__ps_fail(c, SHS_EINVAL, "api_version '%s' is unknown",
					    r->value);
		break;
	default:
		return shs__ps_fail(c, SHS_EUNSUPPORTED, "attribute '%s' is kept only as HLO text "
				    "and cannot be written as protobuf", r->name);
	}
	return SHS_OK;
}

int shs__raw_to_proto(const shs__ps *c, const shs_instr *in, Xla__HloInstructionProto *p)
{
	int rc = SHS_OK;

	/* XLA's custom calls carry their API version, ORIGINAL unless the text says otherwise, and
	 * its collectives their device list, empty when they have no groups */
	if (in->op == SHS_OP_CUSTOM_CALL)
		p->custom_call_api_version = API_VERSION_ORIGINAL;
	if (shs__op_has_replica_groups(in->op) &&
	    !(p->collective_device_list =
		      shs__ps_new_msg(c, &xla__collective_device_list_proto__descriptor)))
		return shs__ps_nomem(c);
	for (uint32_t i = 0; rc == SHS_OK && i < in->n_raw_attrs; i++)
		rc = one_to(c, &in->raw_attrs[i], p);
	return rc;
}

/* ---- proto -> IR ----------------------------------------------------------------------------- */

/* Appends (name, text) to in's raw attributes; names are static, text is copied. */
static int add(const shs__pl *c, shs_instr *in, uint32_t cap, const char *name, const char *text)
{
	const char *v = shs_arena_strdup(c->a, text);

	if (!v)
		return shs__pl_nomem(c);
	if (in->n_raw_attrs >= cap)
		return shs__pl_fail(c, SHS_EINVAL, "too many attributes");
	in->raw_attrs[in->n_raw_attrs++] = (shs_raw_attr){ name, v };
	return SHS_OK;
}

static int list_from(const shs__pl *c, Xla__ReplicaGroup *const *rg, size_t n, shs__groups *g)
{
	if (n > UINT32_MAX)
		return shs__pl_fail(c, SHS_EPARSE, "too many replica groups");
	g->n = (uint32_t)n;
	if (n && !(g->groups = shs_arena_calloc(c->a, n, sizeof(*g->groups))))
		return shs__pl_nomem(c);
	for (size_t k = 0; k < n; k++) {
		g->groups[k].n = (uint32_t)rg[k]->n_replica_ids;
		g->groups[k].v = rg[k]->replica_ids;
	}
	return SHS_OK;
}

/* The groups of field 49 (legacy) or 87, as XLA's CollectiveDeviceList::FromProto reads them. */
static int groups_from(const shs__pl *c, const Xla__HloInstructionProto *p, shs__groups *g)
{
	const Xla__CollectiveDeviceListProto *d = p->collective_device_list;
	const Xla__IotaReplicaGroupListProto *iota = d ? d->iota_replica_group_list : NULL;

	memset(g, 0, sizeof(*g));
	if (p->n_replica_groups)
		return list_from(c, p->replica_groups, p->n_replica_groups, g);
	if (!iota)
		return d ? list_from(c, d->replica_groups, d->n_replica_groups, g) : SHS_OK;
	g->iota = true;
	g->n_groups = iota->num_replica_groups;
	g->group_size = iota->num_devices_per_group;
	g->reshape.n = (uint32_t)iota->n_iota_reshape_dims;
	g->reshape.v = iota->iota_reshape_dims;
	g->perm.n = (uint32_t)iota->n_iota_transpose_perm;
	if (g->perm.n && !(g->perm.v = shs_arena_alloc(c->a, g->perm.n * sizeof(int64_t))))
		return shs__pl_nomem(c);
	for (uint32_t k = 0; k < g->perm.n; k++)
		g->perm.v[k] = iota->iota_transpose_perm[k];
	return SHS_OK;
}

static int groups_text(const shs__pl *c, shs_instr *in, uint32_t cap, const char *name,
		       const shs__groups *g)
{
	shs_buf b = { 0 };
	int rc;

	shs__groups_print(&b, g);
	rc = b.oom ? shs__pl_nomem(c) : add(c, in, cap, name, b.data);
	shs_buf_free(&b);
	return rc;
}

int shs__raw_from_proto(const shs__pl *c, const Xla__HloInstructionProto *p, shs_instr *in)
{
	enum { MOST = SHS__RAW_KINDS }; /* one of each kind */
	bool groups = shs__op_has_replica_groups(in->op) || p->n_replica_groups ||
		      p->collective_device_list;
	bool pairs = p->n_source_target_pairs || shs__op_has_pairs(in->op);
	bool constrain = p->constrain_layout && in->op != SHS_OP_CUSTOM_CALL;
	const char *api = NULL;
	shs__groups g;
	int rc = SHS_OK;

	if (!groups && !constrain && !p->use_global_device_ids && !pairs && !p->is_composite &&
	    p->custom_call_api_version <= API_VERSION_ORIGINAL &&
	    !(p->statistics_viz && p->statistics_viz->n_statistics) && !p->result_accuracy &&
	    !p->original_value)
		return SHS_OK;
	if (p->custom_call_api_version > API_VERSION_ORIGINAL &&
	    !(api = shs__api_version_name(p->custom_call_api_version)))
		return shs__pl_fail(c, SHS_EPARSE, "unknown custom_call_api_version %d",
				    p->custom_call_api_version);
	in->raw_attrs = shs_arena_alloc(c->a, MOST * sizeof(*in->raw_attrs));
	if (!in->raw_attrs)
		return shs__pl_nomem(c);
	if (groups && (rc = groups_from(c, p, &g)) == SHS_OK)
		rc = groups_text(c, in, MOST, "replica_groups", &g);
	if (rc == SHS_OK && constrain)
		rc = add(c, in, MOST, "constrain_layout", "true");
	if (rc == SHS_OK && p->use_global_device_ids)
		rc = add(c, in, MOST, "use_global_device_ids", "true");
	if (rc == SHS_OK && pairs) {
		memset(&g, 0, sizeof(g));
		g.n = (uint32_t)p->n_source_target_pairs;
		g.groups = shs_arena_calloc(c->a, g.n ? g.n : 1, sizeof(*g.groups));
		if (!g.groups)
			return shs__pl_nomem(c);
		for (uint32_t k = 0; k < g.n; k++) {
			g.groups[k].n = 2;
			g.groups[k].v = shs_arena_alloc(c->a, 2 * sizeof(int64_t));
			if (!g.groups[k].v)
				return shs__pl_nomem(c);
			g.groups[k].v[0] = p->source_target_pairs[k]->source;
			g.groups[k].v[1] = p->source_target_pairs[k]->target;
		}
		rc = groups_text(c, in, MOST, "source_target_pairs", &g);
	}
	if (rc == SHS_OK && api)
		rc = add(c, in, MOST, "api_version", api);
	if (rc == SHS_OK && p->is_composite)
		rc = add(c, in, MOST, "is_composite", "true");
	if (rc == SHS_OK)
		rc = shs__extra_from(c, p, in->raw_attrs, &in->n_raw_attrs);
	return rc;
}
