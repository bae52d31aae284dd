/* Named-axis shardings and their XLA form on a mesh. */
#include "sharding.h"

#include <stdlib.h>
#include <string.h>

#include "sharding_internal.h"

enum {
	NO_DIM = -1,
	MAX_TO_NAMED_DEVICES = 1 << 24 /* to_named materialises the device array */
};

static int check_mesh(const shs_mesh *mesh, shs_err *e)
{
	int64_t total;

	if (mesh->n_axes < 1 || mesh->n_axes > SHS_MESH_MAX_AXES)
		return shs_seterr(e, SHS_EINVAL, "mesh: %u axes (want 1..%d)", mesh->n_axes,
				  SHS_MESH_MAX_AXES);
	for (uint32_t k = 0; k < mesh->n_axes; k++)
		if (mesh->sizes[k] < 1)
			return shs_seterr(e, SHS_EINVAL, "mesh: axis %u (%s) has size %lld", k,
					  mesh->names[k] ? mesh->names[k] : "?",
					  (long long)mesh->sizes[k]);
	if (!shs__dims_product(mesh->sizes, mesh->n_axes, &total))
		return shs_seterr(e, SHS_EINVAL, "mesh: device count overflows int64");
	return SHS_OK;
}

/* Fills dim_of[k] with the tensor dim using mesh axis k (NO_DIM when unused). */
static int axis_dims(const shs_mesh *mesh, const shs_named_sharding *n, int dim_of[], shs_err *e)
{
	if (n->rank > SHS_NAMED_MAX_RANK)
		return shs_seterr(e, SHS_EINVAL, "named sharding: rank %u over %d", n->rank,
				  SHS_NAMED_MAX_RANK);
	for (uint32_t k = 0; k < SHS_MESH_MAX_AXES; k++)
		dim_of[k] = NO_DIM;
	for (uint32_t d = 0; d < n->rank; d++) {
		if (n->n_dim_axes[d] > SHS_MESH_MAX_AXES)
			return shs_seterr(e, SHS_EINVAL, "named sharding: dim %u has %u axes", d,
					  n->n_dim_axes[d]);
		for (uint32_t j = 0; j < n->n_dim_axes[d]; j++) {
			uint8_t k = n->dim_axes[d][j];

			if (k >= mesh->n_axes)
				return shs_seterr(e, SHS_EINVAL, "named sharding: dim %u uses axis %u, "
								 "mesh has %u", d, k, mesh->n_axes);
			if (dim_of[k] != NO_DIM)
				return shs_seterr(e, SHS_EINVAL, "named sharding: axis %s used by dims "
								 "%d and %u", mesh->names[k] ? mesh->names[k] : "?",
						  dim_of[k], d);
			dim_of[k] = (int)d;
		}
	}
	return SHS_OK;
}

static shs_sharding *new_replicated(shs_arena *a)
{
	shs_sharding *s = shs_arena_calloc(a, 1, sizeof(*s));

	if (s)
		s->kind = SHS_SHARDING_REPLICATED;
	return s;
}

/* The tiled sharding: tile dims per tensor dim, then the axes of manual (a subgroup typed
 * manual, when there are any) and the other unused axes (replication), iota over the mesh. */
static int build_tiled(shs_arena *a, const shs_mesh *mesh, const shs_named_sharding *n,
		       const int dim_of[], uint32_t manual, shs_sharding *s, shs_err *e)
{
	int64_t rep = 1, man = 1;
	uint32_t np = 0;

	s->kind = SHS_SHARDING_TILED;
	s->n_tile_dims = n->rank;
	for (uint32_t k = 0; k < mesh->n_axes; k++)
		if (dim_of[k] == NO_DIM)
			*(((manual >> k) & 1u) ? &man : &rep) *= mesh->sizes[k];
	s->replicate_on_last_tile_dim = rep > 1 && !manual;
	s->tile_dims = shs_arena_calloc(a, n->rank + 2u, sizeof(*s->tile_dims));
	s->last_tile_dims = shs_arena_calloc(a, 2, sizeof(*s->last_tile_dims));
	s->iota_dims = shs_arena_memdup(a, mesh->sizes, mesh->n_axes * sizeof(*mesh->sizes));
	s->iota_perm = shs_arena_calloc(a, mesh->n_axes, sizeof(*s->iota_perm));
	if (!s->tile_dims || !s->last_tile_dims || !s->iota_dims || !s->iota_perm)
		return shs_seterr(e, SHS_ENOMEM, "named sharding: out of memory");
	for (uint32_t d = 0; d < n->rank; d++) {
		s->tile_dims[d] = 1;
		for (uint32_t j = 0; j < n->n_dim_axes[d]; j++) {
			s->tile_dims[d] *= mesh->sizes[n->dim_axes[d][j]];
			s->iota_perm[np++] = n->dim_axes[d][j];
		}
	}
	for (uint32_t pass = 0; pass < 2; pass++) /* the manual axes, then the replicated */
		for (uint32_t k = 0; k < mesh->n_axes; k++)
			if (dim_of[k] == NO_DIM && ((manual >> k) & 1u) == (pass == 0))
				s->iota_perm[np++] = (int32_t)k;
	if (manual) {
		s->tile_dims[s->n_tile_dims++] = man;
		s->last_tile_dims[s->n_last_tile_dims++] = SHS_SHARDING_MANUAL;
		if (rep > 1) {
			s->tile_dims[s->n_tile_dims++] = rep;
			s->last_tile_dims[s->n_last_tile_dims++] = SHS_SHARDING_REPLICATED;
		}
	} else if (s->replicate_on_last_tile_dim) {
		s->tile_dims[s->n_tile_dims++] = rep;
	}
	s->n_iota = mesh->n_axes;
	shs__iota_canonicalize(s->iota_dims, s->iota_perm, &s->n_iota);
	return SHS_OK;
}

int shs_sharding_from_named(shs_arena *a, const shs_mesh *mesh, const shs_named_sharding *named,
			    shs_sharding **out, shs_err *e)
{
	return shs_sharding_from_named_manual(a, mesh, named, 0, out, e);
}

int shs_sharding_from_named_manual(shs_arena *a, const shs_mesh *mesh,
				   const shs_named_sharding *named, uint32_t manual,
				   shs_sharding **out, shs_err *e)
{
	int dim_of[SHS_MESH_MAX_AXES];
	int64_t used = 1;
	shs_sharding *s;
	int rc;

	rc = check_mesh(mesh, e);
	if (rc == SHS_OK)
		rc = axis_dims(mesh, named, dim_of, e);
	if (rc != SHS_OK)
		return rc;
	manual &= (1u << mesh->n_axes) - 1;
	for (uint32_t k = 0; k < mesh->n_axes; k++) {
		if (dim_of[k] != NO_DIM && ((manual >> k) & 1u))
			return shs_seterr(e, SHS_EINVAL, "named sharding: axis %s is manual and "
					  "splits dim %d", mesh->names[k] ? mesh->names[k] : "?",
					  dim_of[k]);
		if (dim_of[k] != NO_DIM)
			used *= mesh->sizes[k];
	}
	if (used == 1 && !manual) {
		s = new_replicated(a);
		if (!s)
			return shs_seterr(e, SHS_ENOMEM, "named sharding: out of memory");
		*out = s;
		return SHS_OK;
	}
	s = shs_arena_calloc(a, 1, sizeof(*s));
	if (!s)
		return shs_seterr(e, SHS_ENOMEM, "named sharding: out of memory");
	rc = build_tiled(a, mesh, named, dim_of, manual, s, e);
	if (rc == SHS_OK)
		*out = s;
	return rc;
}

/* ---- XLA -> named ------------------------------------------------------------------------ */

int64_t shs_mesh_coord(const shs_mesh *mesh, int64_t dev, uint32_t k)
{
	for (uint32_t j = mesh->n_axes; --j > k;)
		dev /= mesh->sizes[j];
	return dev % mesh->sizes[k];
}

/* Row-major strides of the tile array. */
static void tile_strides(const shs_sharding *s, int64_t *stride)
{
	int64_t acc = 1;

	for (uint32_t d = s->n_tile_dims; d-- > 0;) {
		stride[d] = acc;
		acc *= s->tile_dims[d];
	}
}

/* Walks tile dim d of the device array dev (other indices 0) and lists the mesh axes that
 * change, major first. */
static int dim_axes_from_walk(const shs_mesh *mesh, const shs_sharding *s, const int64_t *dev,
			      uint32_t d, const int64_t *stride, uint8_t *axes, uint8_t *n_axes,
			      shs_err *e)
{
	int64_t first[SHS_MESH_MAX_AXES], base = dev[0], prod = 1;
	uint8_t n = 0;

	for (uint32_t k = 0; k < mesh->n_axes; k++) {
		first[k] = 0;
		for (int64_t t = 1; t < s->tile_dims[d] && !first[k]; t++)
			if (shs_mesh_coord(mesh, dev[t * stride[d]], k) !=
			    shs_mesh_coord(mesh, base, k))
				first[k] = t;
		if (first[k])
			axes[n++] = (uint8_t)k;
	}
	/* the axis that changes last is the most major */
	for (uint8_t i = 1; i < n; i++)
		for (uint8_t j = i; j > 0 && first[axes[j]] > first[axes[j - 1]]; j--) {
			uint8_t t = axes[j];

			axes[j] = axes[j - 1];
			axes[j - 1] = t;
		}
	for (uint8_t i = 0; i < n; i++)
		prod *= mesh->sizes[axes[i]];
	if (prod != s->tile_dims[d])
		return shs_seterr(e, SHS_EINVAL, "sharding: tile dim %u (size %lld) is not split "
						 "over whole mesh axes", d, (long long)s->tile_dims[d]);
	*n_axes = n;
	return SHS_OK;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

/* The device at every position, with each replication group sorted. */
static int64_t *materialize(const shs_sharding *s, int64_t n, int64_t group)
{
	int64_t *v = malloc((size_t)n * sizeof(*v));

	if (!v)
		return NULL;
	for (int64_t i = 0; i < n; i++)
		v[i] = shs_sharding_device(s, i);
	for (int64_t i = 0; group > 1 && i < n; i += group)
		qsort(v + i, (size_t)group, sizeof(*v), cmp_i64);
	return v;
}

static int64_t rep_group(const shs_sharding *s)
{
	return s->replicate_on_last_tile_dim ? s->tile_dims[s->n_tile_dims - 1] : 1;
}

/* SHS_OK when candidate c places the devices as y (s's devices, groups sorted) does. */
static int same_placement(const shs_sharding *c, const int64_t *y, int64_t n, int64_t group,
			  shs_err *e)
{
	int64_t *x = materialize(c, n, group);
	int rc = SHS_OK;

	if (!x)
		rc = shs_seterr(e, SHS_ENOMEM, "sharding: out of memory");
	else if (memcmp(x, y, (size_t)n * sizeof(*x)))
		rc = shs_seterr(e, SHS_EINVAL, "sharding: its device order is not an iota over "
					       "the mesh axes");
	free(x);
	return rc;
}

/* Preconditions of to_named: a tiled sharding over exactly the mesh's devices. */
static int to_named_shape(const shs_mesh *mesh, const shs_sharding *s, uint32_t rank,
			  int64_t *n, shs_err *e)
{
	int64_t total;
	int rc = check_mesh(mesh, e);

	if (rc != SHS_OK)
		return rc;
	if (rank > SHS_NAMED_MAX_RANK)
		return shs_seterr(e, SHS_EINVAL, "sharding: rank %u over %d", rank,
				  SHS_NAMED_MAX_RANK);
	if (s->kind != SHS_SHARDING_TILED)
		return shs_seterr(e, SHS_EINVAL, "sharding: kind %d has no named form",
				  (int)s->kind);
	if (s->n_last_tile_dims)
		return shs_seterr(e, SHS_EINVAL, "sharding: last_tile_dims have no named form");
	if (s->n_tile_dims != rank + (s->replicate_on_last_tile_dim ? 1u : 0u))
		return shs_seterr(e, SHS_EINVAL, "sharding: %u tile dims for rank %u",
				  s->n_tile_dims, rank);
	shs__dims_product(mesh->sizes, mesh->n_axes, &total);
	if (!shs__dims_product(s->tile_dims, s->n_tile_dims, n) || *n != total)
		return shs_seterr(e, SHS_EINVAL, "sharding: tile dims product differs from the "
						 "mesh's %lld devices", (long long)total);
	if (*n > MAX_TO_NAMED_DEVICES)
		return shs_seterr(e, SHS_EINVAL, "sharding: %lld devices, over the %d to_named "
						 "handles", (long long)*n, MAX_TO_NAMED_DEVICES);
	if (!s->n_iota && (int64_t)s->n_devices != *n)
		return shs_seterr(e, SHS_EINVAL, "sharding: %u devices for %lld tiles",
				  s->n_devices, (long long)*n);
	return SHS_OK;
}

/* The named form read off y (s's devices, groups sorted), checked by rebuilding it. */
static int named_from_devices(const shs_mesh *mesh, const shs_sharding *s, const int64_t *y,
			      int64_t n, shs_named_sharding *nm, shs_err *e)
{
	int64_t stride[SHS_SHARDING_MAX_DIMS];
	uint8_t rep_axes[SHS_MESH_MAX_AXES], n_rep = 0;
	shs_sharding *cand = NULL;
	shs_arena *a;
	int rc = SHS_OK;

	tile_strides(s, stride);
	for (uint32_t d = 0; rc == SHS_OK && d < nm->rank; d++)
		rc = dim_axes_from_walk(mesh, s, y, d, stride, nm->dim_axes[d], &nm->n_dim_axes[d],
					e);
	if (rc == SHS_OK && s->replicate_on_last_tile_dim)
		rc = dim_axes_from_walk(mesh, s, y, nm->rank, stride, rep_axes, &n_rep, e);
	if (rc != SHS_OK)
		return rc;
	a = shs_arena_new(0);
	if (!a)
		return shs_seterr(e, SHS_ENOMEM, "sharding: out of memory");
	rc = shs_sharding_from_named(a, mesh, nm, &cand, e);
	if (rc == SHS_OK && cand->kind == SHS_SHARDING_TILED) {
		if (cand->n_tile_dims != s->n_tile_dims ||
		    memcmp(cand->tile_dims, s->tile_dims, s->n_tile_dims * sizeof(*s->tile_dims)))
			rc = shs_seterr(e, SHS_EINVAL, "sharding: tile dims do not follow whole "
						       "mesh axes");
		else
			rc = same_placement(cand, y, n, rep_group(s), e);
	} /* else no data dim is split: every device holds it all */
	shs_arena_free(a);
	return rc;
}

/* XLA's NamedSharding m on mesh: its axes matched by name and size; what mesh cannot say (a
 * sub-axis, another device order, unreduced or manual axes, a maximal mesh) is SHS_EINVAL. */
static int mesh_to_named(const shs_mesh *mesh, const shs_mesh_sharding *m, uint32_t rank,
			 shs_named_sharding *out, shs_err *e)
{
	shs_named_sharding nm = { .rank = rank };

	if (m->maximal || m->whole == SHS_SHARDING_UNREDUCED || m->whole == SHS_SHARDING_MANUAL ||
	    m->n_unreduced || m->n_manual)
		return shs_seterr(e, SHS_EINVAL, "named sharding: maximal, unreduced or manual");
	if (m->n_device_ids || m->n_iota)
		return shs_seterr(e, SHS_EINVAL, "named sharding: its own device order");
	if (m->whole == SHS_SHARDING_TILED && m->rank > rank)
		return shs_seterr(e, SHS_EINVAL, "named sharding: %u dimensions for rank %u",
				  m->rank, rank);
	for (uint32_t d = 0; m->whole == SHS_SHARDING_TILED && d < m->rank; d++)
		for (uint32_t k = 0; k < m->dims[d].n; k++) {
			const shs_axis_ref *r = &m->dims[d].axes[k];
			uint32_t a = mesh->n_axes;

			for (uint32_t j = 0; j < mesh->n_axes; j++)
				if (mesh->names[j] && !strcmp(mesh->names[j], m->names[r->axis]))
					a = j;
			if (r->size || a == mesh->n_axes || mesh->sizes[a] != m->sizes[r->axis] ||
			    nm.n_dim_axes[d] >= SHS_MESH_MAX_AXES)
				return shs_seterr(e, SHS_EINVAL, "named sharding: axis '%s' is not "
						  "one of the mesh's", m->names[r->axis]);
			nm.dim_axes[d][nm.n_dim_axes[d]++] = (uint8_t)a;
		}
	*out = nm;
	return check_mesh(mesh, e);
}

int shs_sharding_to_named(const shs_mesh *mesh, const shs_sharding *s, uint32_t rank,
			  shs_named_sharding *out, shs_err *e)
{
	shs_named_sharding nm = { .rank = rank };
	int64_t n, *y;
	int rc;

	if (s->kind == SHS_SHARDING_NAMED && s->mesh && rank <= SHS_NAMED_MAX_RANK)
		return mesh_to_named(mesh, s->mesh, rank, out, e);

	if (s->kind == SHS_SHARDING_REPLICATED && rank <= SHS_NAMED_MAX_RANK) {
		rc = check_mesh(mesh, e);
		if (rc == SHS_OK)
			*out = nm;
		return rc;
	}
	rc = to_named_shape(mesh, s, rank, &n, e);
	if (rc != SHS_OK)
		return rc;
	y = materialize(s, n, rep_group(s));
	if (!y)
		return shs_seterr(e, SHS_ENOMEM, "sharding: out of memory");
	rc = named_from_devices(mesh, s, y, n, &nm, e);
	free(y);
	if (rc == SHS_OK)
		*out = nm;
	return rc;
}

/* The mask of the mesh axes along which the devices of subgroup dim t of s differ, or false
 * when they do not make whole axes (the dim's size is not the product of those axes'). */
static bool subgroup_axes(const shs_mesh *mesh, const shs_sharding *s, uint32_t t,
			  uint32_t *mask)
{
	int64_t stride = 1, first = shs_sharding_device(s, 0), size = 1;

	for (uint32_t k = s->n_tile_dims; k-- > t + 1;)
		stride *= s->tile_dims[k];
	*mask = 0;
	for (int64_t j = 1; j < s->tile_dims[t]; j++) {
		int64_t dev = shs_sharding_device(s, j * stride);
		for (uint32_t a = 0; a < mesh->n_axes; a++)
			if (shs_mesh_coord(mesh, dev, a) != shs_mesh_coord(mesh, first, a))
				*mask |= 1u << a;
	}
	for (uint32_t a = 0; a < mesh->n_axes; a++)
		if (*mask & (1u << a))
			size *= mesh->sizes[a];
	return size == s->tile_dims[t];
}

/* A NamedSharding with manual axes (manual={a, b}): the mask of those axes of mesh, matched by
 * name and size, and the named form of the rest. */
static int mesh_to_named_manual(const shs_mesh *mesh, const shs_mesh_sharding *m, uint32_t rank,
				shs_named_sharding *out, uint32_t *manual, shs_err *e)
{
	shs_mesh_sharding rest = *m;

	for (uint32_t k = 0; k < m->n_manual; k++) {
		const shs_axis_ref *r = &m->manual[k];
		uint32_t a = mesh->n_axes;
		for (uint32_t j = 0; j < mesh->n_axes; j++)
			if (mesh->names[j] && r->axis < m->n_axes &&
			    !strcmp(mesh->names[j], m->names[r->axis]))
				a = j;
		if (r->size || a == mesh->n_axes || mesh->sizes[a] != m->sizes[r->axis])
			return shs_seterr(e, SHS_EINVAL, "named sharding: manual axis '%s' is not "
					  "one of the mesh's", r->axis < m->n_axes ?
					  m->names[r->axis] : "?");
		*manual |= 1u << a;
	}
	rest.n_manual = 0;
	return mesh_to_named(mesh, &rest, rank, out, e);
}

int shs_sharding_to_named_manual(const shs_mesh *mesh, const shs_sharding *s, uint32_t rank,
				 shs_named_sharding *out, uint32_t *manual, shs_err *e)
{
	int64_t dims[SHS_SHARDING_MAX_DIMS], group = 1;
	shs_sharding merged;
	uint32_t first;
	int rc;

	*manual = 0;
	if (s->kind == SHS_SHARDING_NAMED && s->mesh && s->mesh->n_manual &&
	    s->mesh->whole == SHS_SHARDING_TILED && rank <= SHS_NAMED_MAX_RANK)
		return mesh_to_named_manual(mesh, s->mesh, rank, out, manual, e);
	if (s->kind != SHS_SHARDING_TILED || !s->n_last_tile_dims)
		return shs_sharding_to_named(mesh, s, rank, out, e);
	rc = check_mesh(mesh, e);
	if (rc != SHS_OK)
		return rc;
	if (s->replicate_on_last_tile_dim || s->n_tile_dims != rank + s->n_last_tile_dims ||
	    rank + 1 > SHS_SHARDING_MAX_DIMS)
		return shs_seterr(e, SHS_EINVAL, "sharding: %u tile dims for rank %u and %u "
				  "subgroups", s->n_tile_dims, rank, s->n_last_tile_dims);
	first = rank;
	for (uint32_t j = 0; j < s->n_last_tile_dims; j++) {
		uint32_t mask;
		if (s->last_tile_dims[j] == SHS_SHARDING_MANUAL) {
			if (!subgroup_axes(mesh, s, first + j, &mask))
				return shs_seterr(e, SHS_EINVAL, "sharding: its manual subgroup of "
						  "%lld devices is not whole axes of the mesh",
						  (long long)s->tile_dims[first + j]);
			*manual |= mask;
		} else if (s->last_tile_dims[j] != SHS_SHARDING_REPLICATED) {
			return shs_seterr(e, SHS_EINVAL, "sharding: a subgroup of kind %d has no "
					  "named form", (int)s->last_tile_dims[j]);
		}
		group *= s->tile_dims[first + j];
	}
	/* the subgroups are the trailing tile dims: merged, they are one group of replicas */
	memcpy(dims, s->tile_dims, rank * sizeof(*dims));
	dims[rank] = group;
	merged = *s;
	merged.tile_dims = dims;
	merged.n_tile_dims = rank + (group > 1 ? 1u : 0u);
	merged.replicate_on_last_tile_dim = group > 1;
	merged.n_last_tile_dims = 0;
	merged.last_tile_dims = NULL;
	return shs_sharding_to_named(mesh, &merged, rank, out, e);
}

void shs_named_sharding_print(shs_buf *b, const shs_mesh *mesh, const shs_named_sharding *n)
{
	shs_buf_putc(b, '[');
	for (uint32_t d = 0; d < n->rank && d < SHS_NAMED_MAX_RANK; d++) {
		if (d)
			shs_buf_puts(b, ", ");
		shs_buf_putc(b, '{');
		for (uint32_t j = 0; j < n->n_dim_axes[d] && j < SHS_MESH_MAX_AXES; j++) {
			uint8_t k = n->dim_axes[d][j];

			if (j)
				shs_buf_putc(b, ',');
			if (k < mesh->n_axes && mesh->names[k])
				shs_buf_puts(b, mesh->names[k]);
			else
				shs_buf_printf(b, "#%u", k);
		}
		shs_buf_putc(b, '}');
	}
	shs_buf_putc(b, ']');
}
