/* ShapeProto, LayoutProto and ProgramShapeProto <-> IR, tuple elements kept as nested bytes. */
#include <string.h>

#include "proto_internal.h"

/* ---- Proto -> IR ----------------------------------------------------------------------------- */

/* minor_to_major is a permutation of the rank dims: a layout, even an empty one, names every
 * dim, as XLA's and the text form's do (an empty one on an array printed `{}`, which does not
 * read back). */
static bool is_layout_order(const int64_t *m2m, size_t n, size_t rank)
{
	bool seen[SHS_MAX_RANK] = { false };

	if (n != rank)
		return false;
	for (size_t k = 0; k < n; k++) {
		if (m2m[k] < 0 || m2m[k] >= (int64_t)rank || seen[m2m[k]])
			return false;
		seen[m2m[k]] = true;
	}
	return true;
}

static int tiles_from(const shs__pl *c, const Xla__LayoutProto *p, shs_layout *l)
{
	if (!p->n_tiles)
		return SHS_OK;
	if (p->n_tiles > SHS_MAX_RANK)
		return shs__pl_fail(c, SHS_EPARSE, "layout has %zu tiles (limit %d)", p->n_tiles,
				    SHS_MAX_RANK);
	l->tiles = shs_arena_calloc(c->a, p->n_tiles, sizeof(*l->tiles));
	if (!l->tiles)
		return shs__pl_nomem(c);
	for (size_t t = 0; t < p->n_tiles; t++) {
		int rc = shs__pl_i64s(c, &l->tiles[t], p->tiles[t]->dimensions,
				      p->tiles[t]->n_dimensions);

		if (rc != SHS_OK)
			return rc;
	}
	l->n_tiles = (uint32_t)p->n_tiles;
	return SHS_OK;
}

/* True when some is_dynamic_dimension flag is set; checks there is one flag per dim. */
static int any_dynamic(const shs__pl *c, const Xla__ShapeProto *p, bool *any)
{
	*any = false;
	if (!p->n_is_dynamic_dimension)
		return SHS_OK;
	if (p->n_is_dynamic_dimension != p->n_dimensions)
		return shs__pl_fail(c, SHS_EPARSE,
				    "shape has %zu is_dynamic_dimension flags for %zu dims",
				    p->n_is_dynamic_dimension, p->n_dimensions);
	for (size_t d = 0; d < p->n_dimensions; d++)
		*any |= p->is_dynamic_dimension[d] != 0;
	return SHS_OK;
}

/* Dims, layout (with minor_to_major) and dynamic flags of out, in one allocation. */
static int array_parts_from(const shs__pl *c, const Xla__ShapeProto *p, bool dynamic,
			    shs_shape *out)
{
	const Xla__LayoutProto *lp = p->layout;
	size_t rank = p->n_dimensions, n_m2m = lp ? lp->n_minor_to_major : 0;
	size_t size = (lp ? sizeof(shs_layout) : 0) + (rank + n_m2m) * sizeof(int64_t) +
		      (dynamic ? rank * sizeof(bool) : 0);
	unsigned char *at;

	if (!size)
		return SHS_OK;
	at = shs_arena_alloc(c->a, size);
	if (!at)
		return shs__pl_nomem(c);
	if (lp) { /* first: the struct wants the block's alignment */
		out->layout = (shs_layout *)(void *)at;
		memset(out->layout, 0, sizeof(*out->layout));
		out->layout->element_size_in_bits = lp->element_size_in_bits;
		out->layout->memory_space = lp->memory_space;
		at += sizeof(shs_layout);
	}
	if (rank) {
		out->dims = memcpy(at, p->dimensions, rank * sizeof(int64_t));
		at += rank * sizeof(int64_t);
	}
	if (n_m2m) {
		out->layout->minor_to_major.v = memcpy(at, lp->minor_to_major,
						       n_m2m * sizeof(int64_t));
		out->layout->minor_to_major.n = (uint32_t)n_m2m;
		at += n_m2m * sizeof(int64_t);
	}
	if (dynamic) {
		out->dynamic = (bool *)(void *)at;
		for (size_t d = 0; d < rank; d++)
			out->dynamic[d] = p->is_dynamic_dimension[d] != 0;
	}
	return lp ? tiles_from(c, lp, out->layout) : SHS_OK;
}

static int tuple_from(const shs__pl *c, const Xla__ShapeProto *p, shs_shape *out,
		      unsigned depth)
{
	if (!p->n_tuple_shapes)
		return SHS_OK;
	if (p->n_tuple_shapes > UINT32_MAX)
		return shs__pl_fail(c, SHS_EUNSUPPORTED, "tuple of %zu elements",
				    p->n_tuple_shapes);
	if (depth >= SHS_MAX_NESTING)
		return shs__pl_too_deep(c, "tuple shape");
	out->tuple = shs_arena_calloc(c->a, p->n_tuple_shapes, sizeof(*out->tuple));
	if (!out->tuple)
		return shs__pl_nomem(c);
	out->n_tuple = (uint32_t)p->n_tuple_shapes;
	for (size_t i = 0; i < p->n_tuple_shapes; i++) {
		int rc;
		const Xla__ShapeProto *el = shs__pl_nested(c, &xla__shape_proto__descriptor,
							   &p->tuple_shapes[i], "tuple_shapes", i,
							   &rc);

		if (!el)
			return rc;
		rc = shs__shape_from(c, el, &out->tuple[i], depth + 1);
		if (rc != SHS_OK)
			return rc;
	}
	return SHS_OK;
}

int shs__shape_from(const shs__pl *c, const Xla__ShapeProto *p, shs_shape *out, unsigned depth)
{
	const Xla__LayoutProto *lp = p->layout;
	bool dynamic;
	int rc;

	memset(out, 0, sizeof(*out));
	if (depth > SHS_MAX_NESTING)
		return shs__pl_too_deep(c, "tuple shape");
	if (!shs_elem_valid(p->element_type))
		return shs__pl_fail(c, SHS_EPARSE, "shape has invalid element type %d",
				    p->element_type);
	if (p->n_dimensions > SHS_MAX_RANK)
		return shs__pl_fail(c, SHS_EPARSE, "shape has rank %zu (limit %d)", p->n_dimensions,
				    SHS_MAX_RANK);
	if (lp && !is_layout_order(lp->minor_to_major, lp->n_minor_to_major, p->n_dimensions))
		return shs__pl_fail(c, SHS_EPARSE,
				    "layout minor_to_major is not a permutation of the %zu dims",
				    p->n_dimensions);
	out->type = p->element_type;
	out->rank = (uint32_t)p->n_dimensions;
	rc = any_dynamic(c, p, &dynamic);
	if (rc == SHS_OK)
		rc = array_parts_from(c, p, dynamic, out);
	if (rc == SHS_OK)
		rc = tuple_from(c, p, out, depth);
	return rc;
}

/* A shape field that must be present. */
static int req_shape_from(const shs__pl *c, const Xla__ShapeProto *p, const char *what,
			  shs_shape *out)
{
	if (!p)
		return shs__pl_fail(c, SHS_EPARSE, "%s has no shape", what);
	return shs__shape_from(c, p, out, 0);
}

/* XLA pads missing parameter names with ""; extra names have no parameter to name. */
static int param_names_from(const shs__pl *c, const Xla__ProgramShapeProto *p,
			    shs_program_shape *ps)
{
	if (!p->n_parameter_names || !ps->n_params)
		return SHS_OK;
	ps->param_names = shs_arena_calloc(c->a, ps->n_params, sizeof(*ps->param_names));
	if (!ps->param_names)
		return shs__pl_nomem(c);
	for (uint32_t i = 0; i < ps->n_params; i++) {
		const char *n = i < p->n_parameter_names ? p->parameter_names[i] : "";

		ps->param_names[i] = shs_arena_strdup(c->a, n ? n : "");
		if (!ps->param_names[i])
			return shs__pl_nomem(c);
	}
	return SHS_OK;
}

int shs__program_shape_from(const shs__pl *c, const Xla__ProgramShapeProto *p,
			    shs_program_shape **out)
{
	shs_program_shape *ps = shs_arena_calloc(c->a, 1, sizeof(*ps));
	int rc;

	if (!ps)
		return shs__pl_nomem(c);
	if (p->n_parameters > UINT32_MAX)
		return shs__pl_fail(c, SHS_EUNSUPPORTED, "program shape has too many parameters");
	ps->n_params = (uint32_t)p->n_parameters;
	if (ps->n_params) {
		ps->params = shs_arena_calloc(c->a, ps->n_params, sizeof(*ps->params));
		if (!ps->params)
			return shs__pl_nomem(c);
	}
	for (uint32_t i = 0; i < ps->n_params; i++) {
		rc = shs__shape_from(c, p->parameters[i], &ps->params[i], 0);
		if (rc != SHS_OK)
			return rc;
	}
	rc = param_names_from(c, p, ps);
	if (rc == SHS_OK)
		rc = req_shape_from(c, p->result, "program shape result", &ps->result);
	if (rc == SHS_OK)
		*out = ps;
	return rc;
}

/* ---- IR -> proto ----------------------------------------------------------------------------- */

static int layout_to(const shs__ps *c, const shs_layout *l, Xla__LayoutProto **out)
{
	Xla__LayoutProto *p = shs__ps_new_msg(c, &xla__layout_proto__descriptor);

	if (!p)
		return shs__ps_nomem(c);
	p->n_minor_to_major = l->minor_to_major.n;
	p->minor_to_major = l->minor_to_major.v;
	p->element_size_in_bits = l->element_size_in_bits;
	p->memory_space = l->memory_space;
	if (l->n_tiles) {
		p->tiles = shs_arena_calloc(c->a, l->n_tiles, sizeof(*p->tiles));
		if (!p->tiles)
			return shs__ps_nomem(c);
		for (uint32_t t = 0; t < l->n_tiles; t++) {
			Xla__TileProto *tp = shs__ps_new_msg(c, &xla__tile_proto__descriptor);

			if (!tp)
				return shs__ps_nomem(c);
			tp->n_dimensions = l->tiles[t].n;
			tp->dimensions = l->tiles[t].v;
			p->tiles[t] = tp;
		}
		p->n_tiles = l->n_tiles;
	}
	*out = p;
	return SHS_OK;
}

/* Each element packed to the bytes of its ShapeProto. */
static int tuple_to(const shs__ps *c, const shs_shape *s, Xla__ShapeProto *p, unsigned depth)
{
	p->tuple_shapes = shs_arena_calloc(c->a, s->n_tuple, sizeof(*p->tuple_shapes));
	if (!p->tuple_shapes)
		return shs__ps_nomem(c);
	p->n_tuple_shapes = s->n_tuple;
	for (uint32_t i = 0; i < s->n_tuple; i++) {
		Xla__ShapeProto *el = NULL;
		int rc = shs__shape_to(c, &s->tuple[i], &el, depth + 1);

		if (rc != SHS_OK)
			return rc;
		if (!shs__pb_pack_nested(c->a, &el->base, &p->tuple_shapes[i]))
			return shs__ps_nomem(c);
	}
	return SHS_OK;
}

int shs__shape_to(const shs__ps *c, const shs_shape *s, Xla__ShapeProto **out, unsigned depth)
{
	Xla__ShapeProto *p;
	int rc = SHS_OK;

	if (depth > SHS_MAX_NESTING)
		return shs__ps_fail(c, SHS_EINVAL, "tuple shape nested deeper than %d levels",
				    SHS_MAX_NESTING);
	p = shs__ps_new_msg(c, &xla__shape_proto__descriptor);
	if (!p)
		return shs__ps_nomem(c);
	p->element_type = s->type;
	p->n_dimensions = s->rank;
	p->dimensions = s->dims;
	if (s->dynamic) {
		p->is_dynamic_dimension = shs_arena_calloc(c->a, s->rank,
							   sizeof(*p->is_dynamic_dimension));
		if (!p->is_dynamic_dimension)
			return shs__ps_nomem(c);
		for (uint32_t d = 0; d < s->rank; d++)
			p->is_dynamic_dimension[d] = s->dynamic[d];
		p->n_is_dynamic_dimension = s->rank;
	}
	if (s->layout)
		rc = layout_to(c, s->layout, &p->layout);
	if (rc == SHS_OK && s->n_tuple)
		rc = tuple_to(c, s, p, depth);
	*out = p;
	return rc;
}

int shs__program_shape_to(const shs__ps *c, const shs_program_shape *ps,
			  Xla__ProgramShapeProto **out)
{
	Xla__ProgramShapeProto *p = shs__ps_new_msg(c, &xla__program_shape_proto__descriptor);
	int rc;

	if (!p)
		return shs__ps_nomem(c);
	if (ps->n_params) {
		p->parameters = shs_arena_calloc(c->a, ps->n_params, sizeof(*p->parameters));
		if (!p->parameters)
			return shs__ps_nomem(c);
		p->n_parameters = ps->n_params;
	}
	for (uint32_t i = 0; i < ps->n_params; i++) {
		rc = shs__shape_to(c, &ps->params[i], &p->parameters[i], 0);
		if (rc != SHS_OK)
			return rc;
	}
	if (ps->param_names && ps->n_params) {
		p->parameter_names = shs_arena_calloc(c->a, ps->n_params,
						      sizeof(*p->parameter_names));
		if (!p->parameter_names)
			return shs__ps_nomem(c);
		for (uint32_t i = 0; i < ps->n_params; i++)
			p->parameter_names[i] = shs__ps_str(ps->param_names[i]);
		p->n_parameter_names = ps->n_params;
	}
	*out = p;
	return shs__shape_to(c, &ps->result, &p->result, 0);
}
