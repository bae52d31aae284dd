/* OpSharding <-> shs_sharding; tuple elements are kept as nested bytes (proto/xla_hlo.proto). */
#include "sharding_proto.h"

#include <string.h>

#include "ir.h"
#include "proto_internal.h"
#include "sharding_internal.h"
#include "sharding_mesh.h"

enum { SHARD_GROUP_AS = 0, SHARD_GROUP_LIKE = 1 };

static int nomem(shs_err *e)
{
	return shs_seterr(e, SHS_ENOMEM, "OpSharding: out of memory");
}

/* ---- Metadata -------------------------------------------------------------------------------- */

int shs_metadata_from_proto(shs_arena *a, const Xla__OpMetadata *p, shs_metadata *out,
			    shs_err *e)
{
	shs_metadata m = {
		.source_line = p->source_line,
		.source_end_line = p->source_end_line,
		.source_column = p->source_column,
		.source_end_column = p->source_end_column,
		.stack_frame_id = p->stack_frame_id,
	};
	shs__strs s = { 0 };

	shs__strs_add(&s, p->op_type, &m.op_type, false);
	shs__strs_add(&s, p->op_name, &m.op_name, false);
	shs__strs_add(&s, p->source_file, &m.source_file, false);
	shs__strs_add(&s, p->deduplicated_name, &m.deduplicated_name, false);
	shs__strs_add(&s, p->scheduling_name, &m.scheduling_name, false);
	if (!shs__strs_copy(&s, a))
		return shs_seterr(e, SHS_ENOMEM, "OpMetadata: out of memory");
	*out = m;
	return SHS_OK;
}

static int copy_out(shs_arena *a, const char *src, char **dst)
{
	if (!src || !*src)
		return SHS_OK; /* keep the empty string xla__op_metadata__init put there */
	*dst = shs_arena_strdup(a, src);
	return *dst ? SHS_OK : SHS_ENOMEM;
}

int shs_metadata_to_proto(shs_arena *a, const shs_metadata *m, Xla__OpMetadata *p, shs_err *e)
{
	xla__op_metadata__init(p);
	p->source_line = m->source_line;
	p->source_end_line = m->source_end_line;
	p->source_column = m->source_column;
	p->source_end_column = m->source_end_column;
	p->stack_frame_id = m->stack_frame_id;
	if (copy_out(a, m->op_type, &p->op_type) || copy_out(a, m->op_name, &p->op_name) ||
	    copy_out(a, m->source_file, &p->source_file) ||
	    copy_out(a, m->deduplicated_name, &p->deduplicated_name) ||
	    copy_out(a, m->scheduling_name, &p->scheduling_name))
		return shs_seterr(e, SHS_ENOMEM, "OpMetadata: out of memory");
	return SHS_OK;
}

/* ---- OpSharding -> shs_sharding -------------------------------------------------------------- */

static int bad(shs_err *e, const char *what)
{
	return shs_seterr(e, SHS_EPARSE, "OpSharding: %s", what);
}

static int metadata_from_proto(shs_arena *a, const Xla__OpSharding *p, shs_sharding *s,
			       shs_err *e)
{
	uint32_t n = 0;

	if (!p->n_metadata)
		return SHS_OK;
	if (p->n_metadata > UINT32_MAX)
		return bad(e, "too many metadata records");
	s->metadata = shs_arena_calloc(a, p->n_metadata, sizeof(*s->metadata));
	if (!s->metadata)
		return nomem(e);
	for (size_t i = 0; i < p->n_metadata; i++) {
		int rc;

		if (!p->metadata[i])
			continue;
		rc = shs_metadata_from_proto(a, p->metadata[i], &s->metadata[n++], e);
		if (rc != SHS_OK)
			return rc;
	}
	s->n_metadata = n;
	return SHS_OK;
}

static int maximal_from_proto(shs_arena *a, const Xla__OpSharding *p, int64_t device,
			      shs_sharding *s, shs_err *e)
{
	static const int64_t one = 1;
	const int64_t *dims = p->n_tile_assignment_dimensions ? p->tile_assignment_dimensions : &one;
	size_t n = p->n_tile_assignment_dimensions ? p->n_tile_assignment_dimensions : 1;

	if (n > SHS_SHARDING_MAX_DIMS)
		return shs_seterr(e, SHS_EPARSE, "OpSharding: more than %d tile dims",
				  SHS_SHARDING_MAX_DIMS);
	s->kind = SHS_SHARDING_MAXIMAL;
	s->n_tile_dims = (uint32_t)n;
	s->tile_dims = shs_arena_memdup(a, dims, n * sizeof(*dims));
	s->devices = shs_arena_memdup(a, &device, sizeof(device));
	s->n_devices = 1;
	return s->tile_dims && s->devices ? SHS_OK : nomem(e);
}

/* Fields 9 and 10: validated, copied and canonicalised. */
static int iota_from_proto(shs_arena *a, const Xla__OpSharding *p, int64_t tile_prod,
			   shs_sharding *s, shs_err *e)
{
	int64_t prod;

	if (p->n_tile_assignment_devices)
		return bad(e, "both tile_assignment_devices and iota_reshape_dims are set");
	if (p->n_iota_reshape_dims != p->n_iota_transpose_perm)
		return shs_seterr(e, SHS_EPARSE, "OpSharding: %zu iota_reshape_dims but %zu "
						 "iota_transpose_perm entries",
				  p->n_iota_reshape_dims, p->n_iota_transpose_perm);
	if (p->n_iota_reshape_dims > SHS_SHARDING_MAX_DIMS)
		return shs_seterr(e, SHS_EPARSE, "OpSharding: more than %d iota_reshape_dims",
				  SHS_SHARDING_MAX_DIMS);
	s->n_iota = (uint32_t)p->n_iota_reshape_dims;
	if (!shs__dims_product(p->iota_reshape_dims, s->n_iota, &prod))
		return bad(e, "iota_reshape_dims hold a size < 1 or overflow int64");
	if (prod != tile_prod)
		return shs_seterr(e, SHS_EPARSE, "OpSharding: iota_reshape_dims product %lld "
						 "differs from tile_assignment_dimensions product %lld",
				  (long long)prod, (long long)tile_prod);
	if (!shs__is_permutation(p->iota_transpose_perm, s->n_iota))
		return bad(e, "iota_transpose_perm is not a permutation");
	s->iota_dims = shs_arena_memdup(a, p->iota_reshape_dims, s->n_iota * sizeof(int64_t));
	s->iota_perm = shs_arena_memdup(a, p->iota_transpose_perm, s->n_iota * sizeof(int32_t));
	if (!s->iota_dims || !s->iota_perm)
		return nomem(e);
	shs__iota_canonicalize(s->iota_dims, s->iota_perm, &s->n_iota);
	return SHS_OK;
}

static int subgroups_from_proto(shs_arena *a, const Xla__OpSharding *p, shs_sharding *s,
				shs_err *e)
{
	s->replicate_on_last_tile_dim = p->replicate_on_last_tile_dim;
	if (!p->n_last_tile_dims)
		return SHS_OK;
	if (p->replicate_on_last_tile_dim)
		return bad(e, "replicate_on_last_tile_dim and last_tile_dims are both set");
	if (p->n_last_tile_dims > s->n_tile_dims)
		return bad(e, "more last_tile_dims than tile_assignment_dimensions");
	for (size_t i = 0; i < p->n_last_tile_dims; i++) {
		int32_t t = p->last_tile_dims[i];

		if (t != SHS_SHARDING_MANUAL && t != SHS_SHARDING_REPLICATED &&
		    t != SHS_SHARDING_UNREDUCED)
			return shs_seterr(e, SHS_EPARSE, "OpSharding: last_tile_dims[%zu] is type "
							 "%d (want MANUAL, REPLICATED or UNREDUCED)",
					  i, (int)t);
	}
	s->n_last_tile_dims = (uint32_t)p->n_last_tile_dims;
	s->last_tile_dims = shs_arena_memdup(a, p->last_tile_dims,
					     p->n_last_tile_dims * sizeof(int32_t));
	return s->last_tile_dims ? SHS_OK : nomem(e);
}

static int tiled_from_proto(shs_arena *a, const Xla__OpSharding *p, shs_sharding *s,
			    shs_err *e)
{
	int64_t prod;
	int rc;

	s->kind = SHS_SHARDING_TILED;
	if (!p->n_tile_assignment_dimensions)
		return bad(e, "type OTHER without tile_assignment_dimensions");
	if (p->n_tile_assignment_dimensions > SHS_SHARDING_MAX_DIMS)
		return shs_seterr(e, SHS_EPARSE, "OpSharding: more than %d tile dims",
				  SHS_SHARDING_MAX_DIMS);
	s->n_tile_dims = (uint32_t)p->n_tile_assignment_dimensions;
	if (!shs__dims_product(p->tile_assignment_dimensions, s->n_tile_dims, &prod))
		return bad(e, "tile_assignment_dimensions hold a size < 1 or overflow int64");
	s->tile_dims = shs_arena_memdup(a, p->tile_assignment_dimensions,
					s->n_tile_dims * sizeof(int64_t));
	if (!s->tile_dims)
		return nomem(e);
	if (p->n_iota_reshape_dims)
		rc = iota_from_proto(a, p, prod, s, e);
	else if (!p->n_tile_assignment_devices)
		rc = bad(e, "type OTHER with neither tile_assignment_devices nor iota_reshape_dims");
	else if ((uint64_t)prod != p->n_tile_assignment_devices)
		rc = shs_seterr(e, SHS_EPARSE, "OpSharding: %zu tile_assignment_devices for "
					       "tile_assignment_dimensions product %lld",
				p->n_tile_assignment_devices, (long long)prod);
	else {
		s->n_devices = (uint32_t)p->n_tile_assignment_devices;
		s->devices = shs_arena_memdup(a, p->tile_assignment_devices,
					      s->n_devices * sizeof(int64_t));
		rc = s->devices ? SHS_OK : nomem(e);
	}
	return rc == SHS_OK ? subgroups_from_proto(a, p, s, e) : rc;
}

static bool all_ones(const int64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] != 1)
			return false;
	return n > 0;
}

/* Where a conversion puts its result, and where it unpacks the tuple elements. */
typedef struct from_ctx {
	shs_arena *a;
	shs__pb_arena *scratch;
	shs_err *e;
} from_ctx;

static int from_proto(const from_ctx *fc, const Xla__OpSharding *p, int depth, shs_sharding *s);

/* Element i of the tuple, unpacked from its bytes and converted. */
static int tuple_element(const from_ctx *fc, const Xla__OpSharding *p, size_t i, int depth,
			 shs_sharding *s)
{
	Xla__OpSharding *el;

	if (depth + 1 > SHS_MAX_NESTING)
		return shs_seterr(fc->e, SHS_EPARSE, "OpSharding: nesting too deep: "
						     "tuples nested deeper than %d levels",
				  SHS_MAX_NESTING);
	el = shs__pb_unpack_nested(fc->scratch, &xla__op_sharding__descriptor,
				   &p->tuple_shardings[i]);
	if (!el && fc->scratch->refused)
		return nomem(fc->e);
	if (!el)
		return shs_seterr(fc->e, SHS_EPARSE, "OpSharding: malformed protobuf in "
						     "tuple_shardings[%zu] (%zu bytes)",
				  i, p->tuple_shardings[i].len);
	return from_proto(fc, el, depth + 1, s);
}

static int tuple_from_proto(const from_ctx *fc, const Xla__OpSharding *p, int depth,
			    shs_sharding *s)
{
	s->kind = SHS_SHARDING_TUPLE;
	if (p->n_metadata)
		return bad(fc->e, "a TUPLE sharding with metadata");
	if (p->n_tuple_shardings > UINT32_MAX)
		return bad(fc->e, "too many tuple_shardings");
	if (!p->n_tuple_shardings)
		return SHS_OK;
	s->tuple = shs_arena_calloc(fc->a, p->n_tuple_shardings, sizeof(*s->tuple));
	if (!s->tuple)
		return nomem(fc->e);
	for (size_t i = 0; i < p->n_tuple_shardings; i++) {
		int rc = tuple_element(fc, p, i, depth, &s->tuple[i]);

		if (rc != SHS_OK) {
			shs_err *e = fc->e;

			if (e && rc == SHS_EPARSE && strlen(e->msg) < SHS_ERRMSG_MAX / 2)
				shs_err_prefix(e, "tuple element %zu", i);
			return rc;
		}
	}
	s->n_tuple = (uint32_t)p->n_tuple_shardings;
	return SHS_OK;
}

static int shard_group_from_proto(const Xla__OpSharding *p, shs_sharding *s, shs_err *e)
{
	if (!p->is_shard_group)
		return SHS_OK;
	if (p->shard_group_type != SHARD_GROUP_AS && p->shard_group_type != SHARD_GROUP_LIKE)
		return shs_seterr(e, SHS_EPARSE, "OpSharding: shard_group_type %d",
				  (int)p->shard_group_type);
	s->is_shard_group = true;
	s->shard_like = p->shard_group_type == SHARD_GROUP_LIKE;
	s->shard_group_id = p->shard_group_id;
	return SHS_OK;
}

static int from_proto(const from_ctx *fc, const Xla__OpSharding *p, int depth, shs_sharding *s)
{
	shs_arena *a = fc->a;
	shs_err *e = fc->e;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = shard_group_from_proto(p, s, e);
	if (rc != SHS_OK)
		return rc;
	if (p->type == SHS_SHARDING_TUPLE)
		return tuple_from_proto(fc, p, depth, s);
	if (p->named_sharding)
		return shs__mesh_sharding_from_proto(a, p, s, e);
	rc = metadata_from_proto(a, p, s, e);
	if (rc != SHS_OK)
		return rc;
	switch (p->type) {
	case SHS_SHARDING_REPLICATED:
	case SHS_SHARDING_MANUAL:
	case SHS_SHARDING_UNKNOWN:
	case SHS_SHARDING_UNREDUCED:
		s->kind = (shs_sharding_kind)p->type;
		return SHS_OK;
	case SHS_SHARDING_MAXIMAL:
	case SHS_SHARDING_TILED:
		break;
	default:
		return shs_seterr(e, SHS_EPARSE, "OpSharding: unknown type %d", (int)p->type);
	}
	if (p->n_tile_assignment_devices == 1)
		return maximal_from_proto(a, p, p->tile_assignment_devices[0], s, e);
	if (all_ones(p->iota_reshape_dims, p->n_iota_reshape_dims))
		return maximal_from_proto(a, p, 0, s, e);
	if (p->type == SHS_SHARDING_MAXIMAL)
		return shs_seterr(e, SHS_EPARSE, "OpSharding: MAXIMAL with %zu devices (want 1)",
				  p->n_tile_assignment_devices);
	return tiled_from_proto(a, p, s, e);
}

int shs__sharding_from_proto(shs_arena *a, shs__pb_arena *scratch, const Xla__OpSharding *p,
			     shs_sharding **out, shs_err *e)
{
	from_ctx fc = { .a = a, .scratch = scratch, .e = e };
	shs_sharding *s = shs_arena_alloc(a, sizeof(*s));
	int rc;

	if (!s)
		return nomem(e);
	rc = from_proto(&fc, p, 0, s);
	if (rc == SHS_OK)
		*out = s;
	return rc;
}

int shs_sharding_from_proto(shs_arena *a, const Xla__OpSharding *p, shs_sharding **out,
			    shs_err *e)
{
	shs__pb_arena scratch;

	shs__pb_arena_init(&scratch, a, 0); /* tuple elements' messages stay in a */
	return shs__sharding_from_proto(a, &scratch, p, out, e);
}

/* ---- shs_sharding -> OpSharding -------------------------------------------------------------- */


static int metadata_to_proto(shs_arena *a, const shs_sharding *s, Xla__OpSharding *p,
			     shs_err *e)
{
	Xla__OpMetadata *v;

	if (!s->n_metadata)
		return SHS_OK;
	v = shs_arena_calloc(a, s->n_metadata, sizeof(*v));
	p->metadata = shs_arena_calloc(a, s->n_metadata, sizeof(*p->metadata));
	if (!v || !p->metadata)
		return nomem(e);
	for (uint32_t i = 0; i < s->n_metadata; i++) {
		int rc = shs_metadata_to_proto(a, &s->metadata[i], &v[i], e);

		if (rc != SHS_OK)
			return rc;
		p->metadata[i] = &v[i];
	}
	p->n_metadata = s->n_metadata;
	return SHS_OK;
}

static int tiles_to_proto(shs_arena *a, const shs_sharding *s, Xla__OpSharding *p, shs_err *e)
{
	static const int64_t one = 1;
	bool maximal = s->kind == SHS_SHARDING_MAXIMAL;
	const int64_t *dims = maximal && !s->n_tile_dims ? &one : s->tile_dims;
	size_t nd = maximal && !s->n_tile_dims ? 1 : s->n_tile_dims;
	bool ok = true;

	if (maximal && !s->n_devices)
		return shs_seterr(e, SHS_EINVAL, "sharding: maximal without a device");
	p->n_tile_assignment_dimensions = nd;
	p->tile_assignment_dimensions = shs__dup_array(a, dims, nd, sizeof(*dims), &ok);
	if (maximal || !s->n_iota) {
		p->n_tile_assignment_devices = maximal ? 1 : s->n_devices;
		p->tile_assignment_devices = shs__dup_array(a, s->devices, p->n_tile_assignment_devices,
						       sizeof(*s->devices), &ok);
	} else {
		p->n_iota_reshape_dims = p->n_iota_transpose_perm = s->n_iota;
		p->iota_reshape_dims = shs__dup_array(a, s->iota_dims, s->n_iota,
						 sizeof(*s->iota_dims), &ok);
		p->iota_transpose_perm = shs__dup_array(a, s->iota_perm, s->n_iota,
						   sizeof(*s->iota_perm), &ok);
	}
	if (!maximal) {
		p->replicate_on_last_tile_dim = s->replicate_on_last_tile_dim;
		p->n_last_tile_dims = s->n_last_tile_dims;
		p->last_tile_dims = shs__dup_array(a, s->last_tile_dims, s->n_last_tile_dims,
					      sizeof(*s->last_tile_dims), &ok);
	}
	return ok ? SHS_OK : nomem(e);
}

static int to_proto(shs_arena *a, const shs_sharding *s, int depth, Xla__OpSharding *p,
		    shs_err *e);

/* Each element packed to the bytes of its OpSharding. */
static int tuple_to_proto(shs_arena *a, const shs_sharding *s, int depth, Xla__OpSharding *p,
			  shs_err *e)
{
	if (!s->n_tuple)
		return SHS_OK;
	p->tuple_shardings = shs_arena_calloc(a, s->n_tuple, sizeof(*p->tuple_shardings));
	if (!p->tuple_shardings)
		return nomem(e);
	for (uint32_t i = 0; i < s->n_tuple; i++) {
		Xla__OpSharding el;
		int rc = to_proto(a, &s->tuple[i], depth + 1, &el, e);

		if (rc != SHS_OK)
			return rc;
		if (!shs__pb_pack_nested(a, &el.base, &p->tuple_shardings[i]))
			return nomem(e);
	}
	p->n_tuple_shardings = s->n_tuple;
	return SHS_OK;
}

static int to_proto(shs_arena *a, const shs_sharding *s, int depth, Xla__OpSharding *p,
		    shs_err *e)
{
	int rc;

	xla__op_sharding__init(p);
	if (depth > SHS_MAX_NESTING)
		return shs_seterr(e, SHS_EINVAL, "sharding: tuples nested deeper than %d",
				  SHS_MAX_NESTING);
	if (s->kind == SHS_SHARDING_NAMED && s->mesh)
		return shs__mesh_sharding_to_proto(a, s, p, e);
	if ((unsigned)s->kind > SHS_SHARDING_UNREDUCED)
		return shs_seterr(e, SHS_EINVAL, "sharding: unknown kind %d", (int)s->kind);
	p->type = (int32_t)s->kind;
	if (s->kind == SHS_SHARDING_TUPLE)
		return tuple_to_proto(a, s, depth, p, e);
	rc = metadata_to_proto(a, s, p, e);
	if (rc == SHS_OK && (s->kind == SHS_SHARDING_MAXIMAL || s->kind == SHS_SHARDING_TILED))
		rc = tiles_to_proto(a, s, p, e);
	if (rc == SHS_OK && s->is_shard_group) {
		p->is_shard_group = true;
		p->shard_group_id = s->shard_group_id;
		p->shard_group_type = s->shard_like ? SHARD_GROUP_LIKE : SHARD_GROUP_AS;
	}
	return rc;
}

int shs_sharding_to_proto(shs_arena *a, const shs_sharding *s, Xla__OpSharding *p, shs_err *e)
{
	return to_proto(a, s, 0, p, e);
}
