/* Specs on shapes: replicated, equal, fits, local bytes, conversions to XLA's form, and text. */
#include <string.h>

#include "buf.h"
#include "plan_internal.h"

/* a spec's dims fit a named sharding's (shs__spec_to_named copies them without a check) */
_Static_assert(SHS_PLUGIN_MAX_RANK <= SHS_NAMED_MAX_RANK, "a spec has more dims than XLA's form");

void shs_spec_replicated(shs_pspec *s, uint32_t rank)
{
	memset(s, 0, sizeof(*s));
	s->rank = rank < SHS_PLUGIN_MAX_RANK ? rank : SHS_PLUGIN_MAX_RANK;
}

bool shs_spec_is_replicated(const shs_pspec *s)
{
	for (uint32_t d = 0; d < s->rank; d++)
		if (s->dims[d].n)
			return false;
	return true;
}

bool shs_spec_equal(const shs_pspec *x, const shs_pspec *y)
{
	if (x->rank != y->rank || x->padded != y->padded)
		return false;
	for (uint32_t d = 0; d < x->rank; d++) {
		if (x->dims[d].n != y->dims[d].n)
			return false;
		/* a few axes: compared inline (a call to memcmp per dim cost more) */
		for (uint32_t k = 0; k < x->dims[d].n && k < SHS_PLUGIN_MAX_AXES; k++)
			if (x->dims[d].axes[k] != y->dims[d].axes[k])
				return false;
	}
	return true;
}

/* Devices one shard is spread over: product of the sizes of the axes s uses. */
static int64_t spec_shards(const shs_pspec *s, const shs_mesh *mesh)
{
	int64_t n = 1;

	for (uint32_t d = 0; d < s->rank; d++)
		for (uint32_t k = 0; k < s->dims[d].n && k < SHS_PLUGIN_MAX_AXES; k++)
			if (s->dims[d].axes[k] < mesh->n_axes)
				n *= mesh->sizes[s->dims[d].axes[k]];
	return n;
}

bool shs__spec_fits(const shs_pspec *s, const shs_shape *a, const shs_mesh *mesh)
{
	uint32_t used = 0;

	if (a->type == SHS_TUPLE)
		return false;
	if (a->rank > SHS_PLUGIN_MAX_RANK) /* only ever replicated (shs_spec_replicated) */
		return s->rank == SHS_PLUGIN_MAX_RANK && spec_shards(s, mesh) == 1;
	if (s->rank != a->rank)
		return false;
	for (uint32_t d = 0; d < s->rank; d++) {
		int64_t split = 1;
		if (s->dims[d].n > SHS_PLUGIN_MAX_AXES)
			return false;
		for (uint32_t k = 0; k < s->dims[d].n; k++) {
			uint8_t ax = s->dims[d].axes[k];
			if (ax >= mesh->n_axes || (used & (1u << ax)))
				return false;
			used |= 1u << ax;
			split *= mesh->sizes[ax];
		}
		if (!s->padded && a->dims[d] % split)
			return false;
	}
	return true;
}

/* The product of the sizes of the axes of one dim (axes off the mesh count 1). */
static int64_t dim_split(const shs_pdim *d, const shs_mesh *mesh)
{
	int64_t n = 1;

	for (uint32_t k = 0; k < d->n && k < SHS_PLUGIN_MAX_AXES; k++)
		if (d->axes[k] < mesh->n_axes && mesh->sizes[d->axes[k]] > 0)
			n *= mesh->sizes[d->axes[k]];
	return n;
}

/* A dim of n elements split k ways holds ceil(n / k) per device on every device: XLA's SPMD
 * partitioner gives each shard HloSharding::TileShape (xla/hlo/ir/hlo_sharding.cc: CeilOfRatio
 * of each tiled dim), through MakePartitionedShape (xla/service/spmd/spmd_partitioner_util.cc)
 * when a shape does not EvenlyPartitions, the last shards padded or empty; so the padding's
 * bytes and work are paid for. */
double shs_spec_local_bytes(const shs_pspec *s, const shs_shape *a, const shs_mesh *mesh)
{
	double e = 1;

	if (a->type == SHS_TUPLE)
		return 0;
	for (uint32_t d = 0; d < a->rank; d++) {
		int64_t k = d < s->rank && s->dims[d].n ? dim_split(&s->dims[d], mesh) : 1;

		/* most dims are whole: no division (this runs for every candidate scored) */
		e *= (double)(k == 1 ? a->dims[d] : (a->dims[d] + k - 1) / k);
	}
	if (a->rank > s->rank) /* a spec that cannot describe the array: its axes split it */
		e /= (double)spec_shards(s, mesh);
	return e * shs_elem_bytes(a->type);
}

int64_t shs_spec_dim_split(const shs_pspec *s, uint32_t d, const shs_mesh *mesh)
{
	return d < s->rank ? dim_split(&s->dims[d], mesh) : 1;
}

void shs_spec_mark_padded(shs_pspec *s, const shs_shape *a, const shs_mesh *mesh)
{
	s->padded = false;
	if (a->type == SHS_TUPLE)
		return;
	for (uint32_t d = 0; d < s->rank && d < a->rank; d++)
		if (a->dims[d] % dim_split(&s->dims[d], mesh))
			s->padded = true;
}

int shs_mesh_axis(const shs_mesh *mesh, const char *name)
{
	for (uint32_t k = 0; k < mesh->n_axes; k++)
		if (!strcmp(mesh->names[k], name))
			return (int)k;
	return -1;
}

void shs__spec_add(shs_pspec *s, uint32_t d, int axis)
{
	if (d < SHS_PLUGIN_MAX_RANK && axis >= 0 && s->dims[d].n < SHS_PLUGIN_MAX_AXES)
		s->dims[d].axes[s->dims[d].n++] = (uint8_t)axis;
}

void shs__spec_to_named(const shs_pspec *s, shs_named_sharding *out)
{
	memset(out, 0, sizeof(*out));
	out->rank = s->rank;
	for (uint32_t d = 0; d < s->rank; d++) {
		out->n_dim_axes[d] = s->dims[d].n;
		memcpy(out->dim_axes[d], s->dims[d].axes, s->dims[d].n);
	}
}

int shs__spec_from_sharding(const shs_mesh *mesh, const shs_sharding *sh, uint32_t rank,
			    shs_pspec *out, shs_err *e)
{
	shs_named_sharding named;
	uint32_t manual; /* a partly manual region's axes: the spec is of the others */
	int rc;

	if (rank > SHS_PLUGIN_MAX_RANK)
		return shs_seterr(e, SHS_EINVAL, "rank %u is over %d", rank, SHS_PLUGIN_MAX_RANK);
	rc = shs_sharding_to_named_manual(mesh, sh, rank, &named, &manual, e);
	if (rc != SHS_OK)
		return rc;
	shs_spec_replicated(out, rank);
	for (uint32_t d = 0; d < rank; d++) {
		out->dims[d].n = named.n_dim_axes[d];
		memcpy(out->dims[d].axes, named.dim_axes[d], named.n_dim_axes[d]);
	}
	return SHS_OK;
}

bool shs_cand_uses_axes(const shs_cand *cand, uint32_t mask)
{
	uint32_t n_ops = cand->operand_first[cand->n_operands];

	for (uint32_t k = 0; mask && k < cand->n_result + n_ops; k++) {
		const shs_pspec *s = k < cand->n_result ? &cand->result[k]
							: &cand->operands[k - cand->n_result];
		for (uint32_t d = 0; d < s->rank; d++)
			for (uint32_t j = 0; j < s->dims[d].n; j++)
				if ((mask >> s->dims[d].axes[j]) & 1u)
					return true;
	}
	return false;
}

int shs_spec_dim_of(const shs_pspec *s, uint32_t a)
{
	for (uint32_t d = 0; d < s->rank; d++)
		for (uint32_t k = 0; k < s->dims[d].n; k++)
			if (s->dims[d].axes[k] == a)
				return (int)d;
	return -1;
}

char *shs_specs_text(const shs_mesh *mesh, const shs_pspec *s, uint32_t n)
{
	shs_buf b = { 0 };

	for (uint32_t j = 0; j < n; j++) {
		shs_named_sharding named;
		shs__spec_to_named(&s[j], &named);
		if (j)
			shs_buf_puts(&b, ", ");
		shs_named_sharding_print(&b, mesh, &named);
	}
	return shs_buf_take(&b);
}
