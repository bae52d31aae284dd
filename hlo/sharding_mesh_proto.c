/* XLA's NamedSharding <-> NamedShardingProto (OpSharding field 14), as Mesh::ToProto,
 * NamedSharding::ToProto and their FromProto write and read it (mesh_and_axis.cc,
 * named_sharding.cc). A value replicated, unreduced or manual as a whole holds no dimension
 * shardings; unreduced and manual list every axis (our reading of IsUnreduced / IsManual). */
#include <stdlib.h>
#include <string.h>

#include "sharding_internal.h"
#include "sharding_mesh.h"
#include "sharding_proto.h"

enum { MAX_AXES = 64 };

static int nomem(shs_err *e)
{
	return shs_seterr(e, SHS_ENOMEM, "named sharding: out of memory");
}

/* ---- IR -> proto ----------------------------------------------------------------------------- */

static Xla__AxisRefProto **refs_to(shs_arena *a, const shs_axis_ref *r, uint32_t n)
{
	Xla__AxisRefProto **out = shs_arena_alloc(a, (n ? n : 1) * sizeof(*out));

	for (uint32_t k = 0; out && k < n; k++) {
		Xla__AxisRefProto *x = shs_arena_alloc(a, sizeof(*x));
		Xla__AxisRefProto__SubAxis *sub = NULL;

		if (!x)
			return NULL;
		xla__axis_ref_proto__init(x);
		x->mesh_axis_index = r[k].axis;
		if (r[k].size) {
			if (!(sub = shs_arena_alloc(a, sizeof(*sub))))
				return NULL;
			xla__axis_ref_proto__sub_axis__init(sub);
			sub->pre_size = r[k].pre_size;
			sub->size = r[k].size;
			x->sub_axis_info = sub;
		}
		out[k] = x;
	}
	return out;
}

/* Every axis of m, whole. */
static shs_axis_ref *all_axes(shs_arena *a, const shs_mesh_sharding *m)
{
	shs_axis_ref *r = shs_arena_calloc(a, m->n_axes ? m->n_axes : 1, sizeof(*r));

	for (uint32_t k = 0; r && k < m->n_axes; k++)
		r[k].axis = k;
	return r;
}

/* The device order as XLA's Mesh::ToProto keeps it: none for the mesh's own order. */
static int devices_to(shs_arena *a, const shs_mesh_sharding *m, Xla__MeshProto *mp)
{
	int64_t n = 1;

	if (m->maximal) {
		if (!(mp->device_ids = shs_arena_alloc(a, sizeof(int64_t))))
			return SHS_ENOMEM;
		mp->device_ids[0] = m->device;
		mp->n_device_ids = 1;
		return SHS_OK;
	}
	if (m->n_device_ids) {
		mp->device_ids = m->device_ids;
		mp->n_device_ids = m->n_device_ids;
		return SHS_OK;
	}
	if (!m->n_iota || !shs__dims_product(m->iota_dims, m->n_iota, &n))
		return SHS_OK;
	if (!(mp->device_ids = shs_arena_alloc(a, (size_t)n * sizeof(int64_t))))
		return SHS_ENOMEM;
	{
		shs_sharding t = { .kind = SHS_SHARDING_TILED, .n_tile_dims = 1,
				   .tile_dims = &n, .n_iota = m->n_iota,
				   .iota_dims = m->iota_dims, .iota_perm = m->iota_perm };

		for (int64_t k = 0; k < n; k++)
			mp->device_ids[k] = shs_sharding_device(&t, k);
	}
	mp->n_device_ids = (size_t)n;
	return SHS_OK;
}

int shs__mesh_sharding_to_proto(shs_arena *a, const shs_sharding *sh, Xla__OpSharding *p,
				shs_err *e)
{
	const shs_mesh_sharding *m = sh->mesh;
	Xla__NamedShardingProto *n = shs_arena_alloc(a, sizeof(*n));
	Xla__MeshProto *mp = shs_arena_alloc(a, sizeof(*mp));
	const shs_axis_ref *unred = m->unreduced, *manual = m->manual;
	uint32_t n_unred = m->n_unreduced, n_manual = m->n_manual;

	if (!n || !mp)
		return nomem(e);
	xla__named_sharding_proto__init(n);
	xla__mesh_proto__init(mp);
	mp->axes = shs_arena_alloc(a, (m->n_axes + 1) * sizeof(*mp->axes));
	for (uint32_t k = 0; mp->axes && k < m->n_axes; k++) {
		Xla__MeshProto__MeshAxis *ax = shs_arena_alloc(a, sizeof(*ax));

		if (!ax)
			return nomem(e);
		xla__mesh_proto__mesh_axis__init(ax);
		ax->name = (char *)m->names[k];
		ax->size = m->sizes[k];
		mp->axes[k] = ax;
	}
	mp->n_axes = m->n_axes;
	if (!mp->axes || devices_to(a, m, mp) != SHS_OK)
		return nomem(e);
	n->mesh = mp;
	if (m->whole == SHS_SHARDING_UNREDUCED || m->whole == SHS_SHARDING_MANUAL) {
		const shs_axis_ref *all = all_axes(a, m);

		if (!all)
			return nomem(e);
		*(m->whole == SHS_SHARDING_UNREDUCED ? &unred : &manual) = all;
		*(m->whole == SHS_SHARDING_UNREDUCED ? &n_unred : &n_manual) = m->n_axes;
	}
	if (m->rank && !(n->dim_shardings = shs_arena_alloc(a, m->rank * sizeof(void *))))
		return nomem(e);
	for (uint32_t d = 0; m->whole == SHS_SHARDING_TILED && d < m->rank; d++) {
		Xla__NamedShardingProto__DimensionSharding *ds = shs_arena_alloc(a, sizeof(*ds));

		if (!ds)
			return nomem(e);
		xla__named_sharding_proto__dimension_sharding__init(ds);
		if (!(ds->axes = refs_to(a, m->dims[d].axes, m->dims[d].n)))
			return nomem(e);
		ds->n_axes = m->dims[d].n;
		ds->is_closed = !m->dims[d].open;
		n->dim_shardings[n->n_dim_shardings++] = ds;
	}
	n->replicated_axes = refs_to(a, m->replicated, m->n_replicated);
	n->unreduced_axes = refs_to(a, unred, n_unred);
	n->manual_axes = refs_to(a, manual, n_manual);
	if (!n->replicated_axes || !n->unreduced_axes || !n->manual_axes)
		return nomem(e);
	n->n_replicated_axes = m->n_replicated;
	n->n_unreduced_axes = n_unred;
	n->n_manual_axes = n_manual;
	if (sh->n_metadata && !(n->metadata = shs_arena_alloc(a, sh->n_metadata * sizeof(void *))))
		return nomem(e);
	for (uint32_t k = 0; k < sh->n_metadata; k++) {
		Xla__OpMetadata *md = shs_arena_alloc(a, sizeof(*md));
		int rc;

		if (!md)
			return nomem(e);
		xla__op_metadata__init(md);
		if ((rc = shs_metadata_to_proto(a, &sh->metadata[k], md, e)) != SHS_OK)
			return rc;
		n->metadata[n->n_metadata++] = md;
	}
	p->type = SHS_SHARDING_REPLICATED; /* XLA sets field 14 alone */
	p->named_sharding = n;
	return SHS_OK;
}

/* ---- proto -> IR ----------------------------------------------------------------------------- */

static int refs_from(shs_arena *a, const shs_mesh_sharding *m, Xla__AxisRefProto *const *r,
		     size_t n, shs_axis_ref **out, uint32_t *n_out, shs_err *e)
{
	if (n > MAX_AXES)
		return shs_seterr(e, SHS_EPARSE, "named sharding: %zu axes in one list", n);
	*n_out = (uint32_t)n;
	if (n && !(*out = shs_arena_calloc(a, n, sizeof(**out))))
		return nomem(e);
	for (size_t k = 0; k < n; k++) {
		if (r[k]->mesh_axis_index < 0 || r[k]->mesh_axis_index >= m->n_axes)
			return shs_seterr(e, SHS_EPARSE, "named sharding: axis index %lld of a "
					  "%u-axis mesh", (long long)r[k]->mesh_axis_index,
					  m->n_axes);
		(*out)[k].axis = (uint32_t)r[k]->mesh_axis_index;
		if (r[k]->sub_axis_info) {
			(*out)[k].pre_size = r[k]->sub_axis_info->pre_size;
			(*out)[k].size = r[k]->sub_axis_info->size;
		}
	}
	return SHS_OK;
}

static bool bare(const char *s)
{
	for (; *s; s++)
		if (!(*s == '_' || *s == '.' || (*s >= 'a' && *s <= 'z') ||
		      (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static int mesh_from(shs_arena *a, const Xla__MeshProto *mp, shs_mesh_sharding *m, shs_err *e)
{
	bool identity = true;
	int64_t devices = 1;

	if (!mp)
		return SHS_OK;
	if (mp->n_axes > MAX_AXES)
		return shs_seterr(e, SHS_EPARSE, "named sharding: %zu mesh axes", mp->n_axes);
	if (!mp->n_axes && mp->n_device_ids == 1) {
		m->maximal = true;
		m->device = mp->device_ids[0];
		return SHS_OK;
	}
	m->n_axes = (uint32_t)mp->n_axes;
	m->names = shs_arena_calloc(a, m->n_axes + 1, sizeof(*m->names));
	m->sizes = shs_arena_calloc(a, m->n_axes + 1, sizeof(*m->sizes));
	if (!m->names || !m->sizes)
		return nomem(e);
	for (uint32_t k = 0; k < m->n_axes; k++) {
		if (mp->axes[k]->size < 1)
			return shs_seterr(e, SHS_EPARSE, "named sharding: mesh axis of size %lld",
					  (long long)mp->axes[k]->size);
		if (!(m->names[k] = shs_arena_strdup(a, mp->axes[k]->name)))
			return nomem(e);
		m->sizes[k] = mp->axes[k]->size;
		m->quoted |= !bare(m->names[k]);
	}
	for (size_t k = 0; k < mp->n_device_ids; k++)
		identity &= mp->device_ids[k] == (int64_t)k;
	if (mp->n_device_ids > UINT32_MAX)
		return shs_seterr(e, SHS_EPARSE, "named sharding: too many device ids");
	if (!identity) {
		m->n_device_ids = (uint32_t)mp->n_device_ids;
		if (!(m->device_ids = shs_arena_memdup(a, mp->device_ids,
						       mp->n_device_ids * sizeof(int64_t))))
			return nomem(e);
	}
	if (mp->n_device_ids && (!shs__dims_product(m->sizes, m->n_axes, &devices) ||
				 (uint64_t)devices != mp->n_device_ids))
		return shs_seterr(e, SHS_EPARSE, "named sharding: %zu device ids for a mesh of "
				  "another size", mp->n_device_ids);
	return SHS_OK;
}

int shs__mesh_sharding_from_proto(shs_arena *a, const Xla__OpSharding *p, shs_sharding *sh,
				  shs_err *e)
{
	const Xla__NamedShardingProto *n = p->named_sharding;
	shs_mesh_sharding *m = shs_arena_calloc(a, 1, sizeof(*m));
	int rc;

	if (!m)
		return nomem(e);
	sh->kind = SHS_SHARDING_NAMED;
	sh->mesh = m;
	if ((rc = mesh_from(a, n->mesh, m, e)) != SHS_OK)
		return rc;
	if (n->n_dim_shardings > SHS_MAX_RANK)
		return shs_seterr(e, SHS_EPARSE, "named sharding: %zu dimensions",
				  n->n_dim_shardings);
	m->rank = (uint32_t)n->n_dim_shardings;
	if (m->rank && !(m->dims = shs_arena_calloc(a, m->rank, sizeof(*m->dims))))
		return nomem(e);
	for (uint32_t d = 0; rc == SHS_OK && d < m->rank; d++) {
		rc = refs_from(a, m, n->dim_shardings[d]->axes, n->dim_shardings[d]->n_axes,
			       &m->dims[d].axes, &m->dims[d].n, e);
		m->dims[d].open = !n->dim_shardings[d]->is_closed;
	}
	if (rc == SHS_OK)
		rc = refs_from(a, m, n->replicated_axes, n->n_replicated_axes, &m->replicated,
			       &m->n_replicated, e);
	if (rc == SHS_OK)
		rc = refs_from(a, m, n->unreduced_axes, n->n_unreduced_axes, &m->unreduced,
			       &m->n_unreduced, e);
	if (rc == SHS_OK)
		rc = refs_from(a, m, n->manual_axes, n->n_manual_axes, &m->manual, &m->n_manual, e);
	if (rc != SHS_OK)
		return rc;
	m->whole = SHS_SHARDING_TILED;
	shs__mesh_sharding_settle(m);
	if (n->n_metadata && !(sh->metadata = shs_arena_calloc(a, n->n_metadata,
								sizeof(*sh->metadata))))
		return nomem(e);
	for (size_t k = 0; rc == SHS_OK && k < n->n_metadata; k++)
		rc = shs_metadata_from_proto(a, n->metadata[k], &sh->metadata[k], e);
	sh->n_metadata = (uint32_t)n->n_metadata;
	return rc;
}
