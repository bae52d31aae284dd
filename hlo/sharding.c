/* XLA sharding: the type's checks, equality, copies, device lookup and iota canonical form. */
#include "sharding.h"

#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "sharding_internal.h"
#include "sharding_mesh.h"
#include "sharding_internal.h"

/* ---- Small shared helpers ----------------------------------------------------------------- */

bool shs__dims_product(const int64_t *dims, uint32_t n, int64_t *out)
{
	int64_t p = 1;

	for (uint32_t i = 0; i < n; i++) {
		if (dims[i] < 1 || p > INT64_MAX / dims[i])
			return false;
		p *= dims[i];
	}
	*out = p;
	return true;
}

bool shs__is_permutation(const int32_t *perm, uint32_t n)
{
	bool seen[SHS_SHARDING_MAX_DIMS] = { false };

	if (n > SHS_SHARDING_MAX_DIMS)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		int32_t v = perm[i];

		if (v < 0 || (uint32_t)v >= n || seen[v])
			return false;
		seen[v] = true;
	}
	return true;
}

void *shs__dup_array(shs_arena *a, const void *src, size_t n, size_t sz, bool *ok)
{
	void *d;

	if (!n)
		return NULL;
	d = shs_arena_memdup(a, src, n * sz);
	if (!d)
		*ok = false;
	return d;
}

int shs__cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

/* Drops reshape dims of size 1, renumbering perm. */
static void iota_drop_ones(int64_t *dims, int32_t *perm, uint32_t *n)
{
	int32_t renum[SHS_SHARDING_MAX_DIMS];
	uint32_t kept = 0, np = 0;

	for (uint32_t i = 0; i < *n; i++)
		renum[i] = dims[i] == 1 ? -1 : (int32_t)kept++;
	for (uint32_t i = 0; i < *n; i++) {
		if (renum[i] >= 0)
			dims[renum[i]] = dims[i];
		if (renum[perm[i]] >= 0)
			perm[np++] = renum[perm[i]];
	}
	*n = kept;
}

/* Merges one pair of perm-adjacent, in-order dims; false when there is none. */
static bool iota_merge_one(int64_t *dims, int32_t *perm, uint32_t n)
{
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (perm[i + 1] == perm[i] + 1) {
			dims[perm[i]] *= dims[perm[i + 1]];
			dims[perm[i + 1]] = 1;
			return true;
		}
	}
	return false;
}

void shs__iota_canonicalize(int64_t *dims, int32_t *perm, uint32_t *n)
{
	if (*n > 1) {
		do
			iota_drop_ones(dims, perm, n);
		while (iota_merge_one(dims, perm, *n));
	}
	if (*n == 0) {
		dims[0] = 1;
		perm[0] = 0;
		*n = 1;
	}
}

/* ---- Devices, equality, cloning, checks ---------------------------------------------------- */

int64_t shs_sharding_device(const shs_sharding *s, int64_t i)
{
	int64_t stride[SHS_SHARDING_MAX_DIMS], dev = 0, acc = 1;

	if (s->kind == SHS_SHARDING_MAXIMAL)
		return s->n_devices ? s->devices[0] : 0;
	if (!s->n_iota)
		return (i >= 0 && (uint64_t)i < s->n_devices) ? s->devices[i] : -1;
	for (uint32_t k = s->n_iota; k-- > 0;) {
		stride[k] = acc;
		acc *= s->iota_dims[k];
	}
	/* position i of the transposed array: digits over iota_dims[perm[k]], minor last */
	for (uint32_t k = s->n_iota; k-- > 0;) {
		int32_t src = s->iota_perm[k];
		int64_t size = s->iota_dims[src];

		dev += (i % size) * stride[src];
		i /= size;
	}
	return dev;
}

static bool i64_eq(const int64_t *x, uint32_t nx, const int64_t *y, uint32_t ny)
{
	return nx == ny && (!nx || !memcmp(x, y, nx * sizeof(*x)));
}

static bool devices_equal(const shs_sharding *x, const shs_sharding *y)
{
	const shs_sharding *ex = x->n_iota ? y : x; /* the explicit one bounds the work */
	int64_t n;

	if (x->n_iota && y->n_iota)
		return x->n_iota == y->n_iota &&
		       !memcmp(x->iota_dims, y->iota_dims, x->n_iota * sizeof(*x->iota_dims)) &&
		       !memcmp(x->iota_perm, y->iota_perm, x->n_iota * sizeof(*x->iota_perm));
	if (!x->n_iota && !y->n_iota)
		return i64_eq(x->devices, x->n_devices, y->devices, y->n_devices);
	if (!shs__dims_product(x->tile_dims, x->n_tile_dims, &n) || n != (int64_t)ex->n_devices)
		return false;
	for (int64_t i = 0; i < n; i++)
		if (shs_sharding_device(x, i) != shs_sharding_device(y, i))
			return false;
	return true;
}

static bool metadata_list_equal(const shs_sharding *x, const shs_sharding *y)
{
	if (x->n_metadata != y->n_metadata)
		return false;
	for (uint32_t i = 0; i < x->n_metadata; i++)
		if (!shs_metadata_equal(&x->metadata[i], &y->metadata[i]))
			return false;
	return true;
}

bool shs_sharding_equal(const shs_sharding *x, const shs_sharding *y)
{
	if (x->kind != y->kind || x->is_shard_group != y->is_shard_group)
		return false;
	if (x->is_shard_group &&
	    (x->shard_like != y->shard_like || x->shard_group_id != y->shard_group_id))
		return false;
	if (!metadata_list_equal(x, y))
		return false;
	switch (x->kind) {
	case SHS_SHARDING_TUPLE:
		if (x->n_tuple != y->n_tuple)
			return false;
		for (uint32_t i = 0; i < x->n_tuple; i++)
			if (!shs_sharding_equal(&x->tuple[i], &y->tuple[i]))
				return false;
		return true;
	case SHS_SHARDING_MAXIMAL:
		return shs_sharding_device(x, 0) == shs_sharding_device(y, 0) &&
		       i64_eq(x->tile_dims, x->n_tile_dims, y->tile_dims, y->n_tile_dims);
	case SHS_SHARDING_NAMED:
		return x->mesh && y->mesh && shs__mesh_sharding_equal(x->mesh, y->mesh);
	case SHS_SHARDING_TILED:
		return i64_eq(x->tile_dims, x->n_tile_dims, y->tile_dims, y->n_tile_dims) &&
		       x->replicate_on_last_tile_dim == y->replicate_on_last_tile_dim &&
		       x->n_last_tile_dims == y->n_last_tile_dims &&
		       (!x->n_last_tile_dims ||
			!memcmp(x->last_tile_dims, y->last_tile_dims,
				x->n_last_tile_dims * sizeof(*x->last_tile_dims))) &&
		       devices_equal(x, y);
	default:
		return true;
	}
}

static bool clone_metadata(shs_arena *a, shs_metadata *dst, const shs_metadata *src)
{
	const char *const in[] = { src->op_type, src->op_name, src->source_file,
				   src->deduplicated_name, src->scheduling_name };
	const char **out[] = { &dst->op_type, &dst->op_name, &dst->source_file,
			       &dst->deduplicated_name, &dst->scheduling_name };

	*dst = *src;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		*out[i] = in[i] ? shs_arena_strdup(a, in[i]) : NULL;
		if (in[i] && !*out[i])
			return false;
	}
	return true;
}

static bool clone_into(shs_arena *a, shs_sharding *d, const shs_sharding *s)
{
	bool ok = true;

	*d = *s;
	d->tile_dims = shs__dup_array(a, s->tile_dims, s->n_tile_dims, sizeof(*d->tile_dims),
				      &ok);
	d->devices = shs__dup_array(a, s->devices, s->n_devices, sizeof(*d->devices), &ok);
	d->iota_dims = shs__dup_array(a, s->iota_dims, s->n_iota, sizeof(*d->iota_dims), &ok);
	d->iota_perm = shs__dup_array(a, s->iota_perm, s->n_iota, sizeof(*d->iota_perm), &ok);
	d->last_tile_dims = shs__dup_array(a, s->last_tile_dims, s->n_last_tile_dims,
					   sizeof(*d->last_tile_dims), &ok);
	if (!ok || (s->mesh && !(d->mesh = shs__mesh_sharding_clone(a, s->mesh))))
		return false;
	d->metadata = NULL;
	d->tuple = NULL;
	if (s->n_metadata) {
		d->metadata = shs_arena_calloc(a, s->n_metadata, sizeof(*d->metadata));
		if (!d->metadata)
			return false;
		for (uint32_t i = 0; i < s->n_metadata; i++)
			if (!clone_metadata(a, &d->metadata[i], &s->metadata[i]))
				return false;
	}
	if (s->n_tuple) {
		d->tuple = shs_arena_calloc(a, s->n_tuple, sizeof(*d->tuple));
		if (!d->tuple)
			return false;
		for (uint32_t i = 0; i < s->n_tuple; i++)
			if (!clone_into(a, &d->tuple[i], &s->tuple[i]))
				return false;
	}
	return true;
}

shs_sharding *shs_sharding_clone(shs_arena *a, const shs_sharding *s)
{
	shs_sharding *d = shs_arena_alloc(a, sizeof(*d));

	if (!d || !clone_into(a, d, s))
		return NULL;
	return d;
}

/* The explicit devices are distinct, >= 0 and below num_devices (when known). */
static int check_explicit(const shs_sharding *s, int64_t num_devices, shs_err *e)
{
	int64_t *sorted;
	int rc = SHS_OK;

	for (uint32_t i = 0; i < s->n_devices; i++) {
		int64_t d = s->devices[i];

		if (d < 0 || (num_devices > 0 && d >= num_devices))
			return shs_seterr(e, SHS_EVERIFY,
					  "sharding: device %lld out of range [0, %lld)",
					  (long long)d, (long long)num_devices);
	}
	sorted = malloc((size_t)s->n_devices * sizeof(*sorted));
	if (!sorted)
		return shs_seterr(e, SHS_ENOMEM, "sharding: out of memory");
	memcpy(sorted, s->devices, (size_t)s->n_devices * sizeof(*sorted));
	qsort(sorted, s->n_devices, sizeof(*sorted), shs__cmp_i64);
	for (uint32_t i = 1; i < s->n_devices; i++) {
		if (sorted[i] == sorted[i - 1]) {
			rc = shs_seterr(e, SHS_EVERIFY, "sharding: device %lld appears twice",
					(long long)sorted[i]);
			break;
		}
	}
	free(sorted);
	return rc;
}

static int check_tiled(const shs_sharding *s, bool with_rank, uint32_t rank,
		       int64_t num_devices, shs_err *e)
{
	uint32_t sub = s->n_last_tile_dims + (s->replicate_on_last_tile_dim ? 1u : 0u);
	int64_t prod, iprod;

	if (s->replicate_on_last_tile_dim && s->n_last_tile_dims)
		return shs_seterr(e, SHS_EVERIFY,
				  "sharding: last_tile_dim_replicate and last_tile_dims together");
	for (uint32_t i = 0; i < s->n_last_tile_dims; i++)
		if (s->last_tile_dims[i] != SHS_SHARDING_MANUAL &&
		    s->last_tile_dims[i] != SHS_SHARDING_REPLICATED &&
		    s->last_tile_dims[i] != SHS_SHARDING_UNREDUCED)
			return shs_seterr(e, SHS_EVERIFY, "sharding: last_tile_dims type %d",
					  (int)s->last_tile_dims[i]);
	if (with_rank && s->n_tile_dims != rank + sub)
		return shs_seterr(e, SHS_EVERIFY,
				  "sharding: %u tile dims for rank %u plus %u subgroup dims",
				  s->n_tile_dims, rank, sub);
	if (s->n_tile_dims < sub || !shs__dims_product(s->tile_dims, s->n_tile_dims, &prod))
		return shs_seterr(e, SHS_EVERIFY, "sharding: bad tile dims");
	if (prod < 2)
		return shs_seterr(e, SHS_EVERIFY, "sharding: tiled over a single device");
	if (num_devices > 0 && prod != num_devices)
		return shs_seterr(e, SHS_EVERIFY,
				  "sharding: tiled over %lld devices, module has %lld",
				  (long long)prod, (long long)num_devices);
	if (!s->n_iota) {
		if ((int64_t)s->n_devices != prod)
			return shs_seterr(e, SHS_EVERIFY,
					  "sharding: %u devices for tile dims product %lld",
					  s->n_devices, (long long)prod);
		return check_explicit(s, num_devices, e);
	}
	if (s->n_devices)
		return shs_seterr(e, SHS_EVERIFY, "sharding: both iota and explicit devices");
	if (!shs__dims_product(s->iota_dims, s->n_iota, &iprod) || iprod != prod)
		return shs_seterr(e, SHS_EVERIFY,
				  "sharding: iota dims product differs from tile dims product %lld",
				  (long long)prod);
	if (!shs__is_permutation(s->iota_perm, s->n_iota))
		return shs_seterr(e, SHS_EVERIFY, "sharding: iota transpose is not a permutation");
	return SHS_OK;
}

static int check_any(const shs_sharding *s, bool with_rank, uint32_t rank, int64_t num_devices,
		     int depth, shs_err *e)
{
	int rc;

	if (depth > SHS_MAX_NESTING)
		return shs_seterr(e, SHS_EVERIFY, "sharding: nested deeper than %d",
				  SHS_MAX_NESTING);
	switch (s->kind) {
	case SHS_SHARDING_TUPLE:
		for (uint32_t i = 0; i < s->n_tuple; i++) {
			rc = check_any(&s->tuple[i], false, 0, num_devices, depth + 1, e);
			if (rc != SHS_OK) {
				if (e && strlen(e->msg) < SHS_ERRMSG_MAX / 2)
					shs_err_prefix(e, "tuple element %u", i);
				return rc;
			}
		}
		return SHS_OK;
	case SHS_SHARDING_MAXIMAL:
		if (s->n_devices != 1 || s->devices[0] < 0 ||
		    (num_devices > 0 && s->devices[0] >= num_devices))
			return shs_seterr(e, SHS_EVERIFY,
					  "sharding: maximal device %lld out of range",
					  (long long)(s->n_devices ? s->devices[0] : -1));
		return SHS_OK;
	case SHS_SHARDING_TILED:
		return check_tiled(s, with_rank, rank, num_devices, e);
	case SHS_SHARDING_NAMED:
		if (!s->mesh || (with_rank && s->mesh->rank > rank))
			return shs_seterr(e, SHS_EVERIFY, "named sharding: %u dimensions for a "
					  "rank-%u value", s->mesh ? s->mesh->rank : 0, rank);
		return SHS_OK;
	case SHS_SHARDING_REPLICATED:
	case SHS_SHARDING_MANUAL:
	case SHS_SHARDING_UNKNOWN:
	case SHS_SHARDING_UNREDUCED:
		return SHS_OK;
	}
	return shs_seterr(e, SHS_EVERIFY, "sharding: unknown kind %d", (int)s->kind);
}

int shs_sharding_check(const shs_sharding *s, uint32_t rank, int64_t num_devices, shs_err *e)
{
	return check_any(s, true, rank, num_devices, 0, e);
}
