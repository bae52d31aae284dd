/* The verifier's attribute rules: dimension numbers in range, slice strides, the Sharding
 * custom call's operand, and every sharding's tiles, devices and tuple elements. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sharding.h"
#include "verify_internal.h"

/* Devices a sharding may name at most (XLA's device ids are int32). */
#define MAX_DEVICES ((int64_t)1 << 31)

typedef shs__site site;
#define fail shs__site_fail /* the rules' short name for it */

static const shs_shape *operand(const site *s, uint32_t k)
{
	return &s->c->instrs[s->i->operands[k]]->shape;
}

/* Every entry of list is a dim below rank; what names the list. */
static int dims_below(const site *s, const char *what, const shs_i64s *list, int64_t rank)
{
	for (uint32_t k = 0; k < list->n; k++)
		if (list->v[k] < 0 || list->v[k] >= rank)
			return fail(s, "%s: dim %lld is out of range for rank %lld", what,
				    (long long)list->v[k], (long long)rank);
	return SHS_OK;
}

static int check_concatenate(const site *s)
{
	if (s->i->dimensions.n != 1)
		return fail(s, "concatenate needs one dimension, not %u", s->i->dimensions.n);
	for (uint32_t k = 0; k < s->i->n_operands; k++)
		if (operand(s, k)->type == SHS_TUPLE ||
		    s->i->dimensions.v[0] >= (int64_t)operand(s, k)->rank)
			return fail(s, "concatenate: dimension %lld is not a dim of operand %u (rank "
				    "%u)", (long long)s->i->dimensions.v[0], k, operand(s, k)->rank);
	return dims_below(s, "concatenate", &s->i->dimensions, s->i->shape.rank);
}

static int check_iota(const site *s)
{
	if (s->i->dimensions.n != 1)
		return fail(s, "iota needs one iota_dimension, not %u", s->i->dimensions.n);
	return dims_below(s, "iota_dimension", &s->i->dimensions, s->i->shape.rank);
}

static int check_slice(const site *s)
{
	const shs_shape *o = s->i->n_operands ? operand(s, 0) : NULL;

	for (uint32_t d = 0; o && d < s->i->n_slice; d++) {
		const shs_slice_dim *x = &s->i->slice[d];
		if (x->stride < 1)
			return fail(s, "slice: dim %u has stride %lld; strides are positive", d,
				    (long long)x->stride);
		if (d < o->rank && (x->start < 0 || x->start > x->limit || x->limit > o->dims[d]))
			return fail(s, "slice: dim %u's [%lld:%lld] is not within 0..%lld", d,
				    (long long)x->start, (long long)x->limit,
				    (long long)o->dims[d]);
	}
	return SHS_OK;
}

static int check_gather(const site *s)
{
	const shs_gather_dims *g = s->i->gather;
	int rc;

	if (!g || s->i->n_operands != 2 || operand(s, 0)->type == SHS_TUPLE ||
	    operand(s, 1)->type == SHS_TUPLE)
		return SHS_OK; /* the structure's rules speak of those */
	rc = dims_below(s, "gather: offset_dims", &g->offset_dims, s->i->shape.rank);
	if (rc == SHS_OK)
		rc = dims_below(s, "gather: collapsed_slice_dims", &g->collapsed_slice_dims,
				operand(s, 0)->rank);
	if (rc == SHS_OK)
		rc = dims_below(s, "gather: start_index_map", &g->start_index_map,
				operand(s, 0)->rank);
	if (rc == SHS_OK && (g->index_vector_dim < 0 ||
			     g->index_vector_dim > (int64_t)operand(s, 1)->rank))
		rc = fail(s, "gather: index_vector_dim %lld is out of range for indices of rank %u",
			  (long long)g->index_vector_dim, operand(s, 1)->rank);
	if (rc == SHS_OK && s->i->gather_slice_sizes.n != operand(s, 0)->rank)
		rc = fail(s, "gather: %u slice_sizes for an operand of rank %u",
			  s->i->gather_slice_sizes.n, operand(s, 0)->rank);
	return rc;
}

/* A tiled sharding: positive tiles whose product is the device count, each device named once
 * and within it. */
static int check_tiles(const site *s, const shs_sharding *sh)
{
	int64_t tiles = 1, devices = 1;
	bool *seen;

	for (uint32_t k = 0; k < sh->n_tile_dims; k++)
		if (sh->tile_dims[k] < 1 ||
		    __builtin_mul_overflow(tiles, sh->tile_dims[k], &tiles) || tiles > MAX_DEVICES)
			return fail(s, "sharding: tile dims multiply past %lld devices, or one is "
				    "below 1", (long long)MAX_DEVICES);
	for (uint32_t k = 0; k < sh->n_iota; k++)
		if (sh->iota_dims[k] < 1 ||
		    __builtin_mul_overflow(devices, sh->iota_dims[k], &devices) ||
		    devices > MAX_DEVICES)
			return fail(s, "sharding: the device iota multiplies past %lld devices, or a "
				    "dim is below 1", (long long)MAX_DEVICES);
	if (!sh->n_iota)
		devices = sh->n_devices;
	if (devices != tiles)
		return fail(s, "sharding: %lld tiles for %lld devices", (long long)tiles,
			    (long long)devices);
	if (sh->n_iota || !sh->n_devices)
		return SHS_OK;
	if (!(seen = calloc((size_t)devices, sizeof(*seen))))
		return shs_seterr(s->v->e, SHS_ENOMEM, "verify: out of memory");
	for (uint32_t k = 0; k < sh->n_devices; k++) {
		int64_t d = sh->devices[k];
		if (d < 0 || d >= devices || seen[d]) {
			free(seen);
			return fail(s, "sharding: device %lld is %s", (long long)d,
				    d < 0 || d >= devices ? "out of range" : "named twice");
		}
		seen[d] = true;
	}
	free(seen);
	return SHS_OK;
}

static int check_sharding(const site *s, const shs_sharding *sh, const shs_shape *shape)
{
	int rc = SHS_OK;

	if (sh->kind == SHS_SHARDING_TUPLE) {
		uint32_t leaves = shape->type == SHS_TUPLE ? shs_shape_leaves(shape) : 1;
		if (shape->type == SHS_TUPLE && sh->n_tuple != leaves)
			return fail(s, "sharding: %u tuple elements for a shape of %u leaves",
				    sh->n_tuple, leaves);
		for (uint32_t k = 0; k < sh->n_tuple && rc == SHS_OK; k++)
			rc = sh->tuple[k].kind == SHS_SHARDING_TILED ?
				     check_tiles(s, &sh->tuple[k]) : SHS_OK;
		return rc;
	}
	return sh->kind == SHS_SHARDING_TILED ? check_tiles(s, sh) : SHS_OK;
}

int shs__verify_instr_attrs(shs__verifier *v, const shs_computation *c, const shs_instr *i)
{
	site s = { v, c, i };
	int rc = SHS_OK;

	switch (i->op) {
	case SHS_OP_CONCATENATE: rc = check_concatenate(&s); break;
	case SHS_OP_IOTA: rc = check_iota(&s); break;
	case SHS_OP_SLICE: rc = check_slice(&s); break;
	case SHS_OP_GATHER: rc = check_gather(&s); break;
	case SHS_OP_CUSTOM_CALL:
		if (i->custom_call_target && !strcmp(i->custom_call_target, "Sharding") &&
		    i->n_operands != 1)
			rc = fail(&s, "a Sharding custom call takes one operand, not %u",
				  i->n_operands);
		break;
	default:
		break;
	}
	if (rc == SHS_OK && i->sharding)
		rc = check_sharding(&s, i->sharding, &i->shape);
	return rc;
}
