/* The const views plugins read: an instruction, its shapes and leaves, the mesh, result hints. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "elem.h"
#include "host_internal.h"

/* The ABI's numbers are the IR's: element types (XLA's PrimitiveType) and the mesh axes. */
#define SHS_SAME_TYPE(e, name, num, bits, kind)                                          \
	_Static_assert((int)SHS_PTYPE_##e == (int)SHS_##e, "SHS_PTYPE_" #e " is not XLA's number");
SHS_ELEM_LIST(SHS_SAME_TYPE)
#undef SHS_SAME_TYPE
_Static_assert(SHS_PLUGIN_MAX_AXES == SHS_MESH_MAX_AXES, "a plugin's mesh is the IR's mesh");

static const char empty[] = "";

static shs_plist plist(const shs_i64s *l)
{
	return (shs_plist){ .n = l->n, .v = l->v };
}

static const shs_i64s no_list;

/* ---- Shapes and leaves ---- */

static int view_shape(shs_arena *a, const shs_shape *s, shs_pshape *out, uint32_t depth,
		      shs_err *e)
{
	shs_pshape *t;

	*out = (shs_pshape){ .type = s->type, .rank = s->rank, .dims = s->dims };
	if (s->type != SHS_TUPLE)
		return SHS_OK;
	out->rank = 0;
	out->dims = NULL;
	if (depth >= SHS_MAX_NESTING)
		return shs_seterr(e, SHS_EINVAL, "tuple shape nested deeper than %d",
				  SHS_MAX_NESTING);
	if (!s->n_tuple)
		return SHS_OK;
	t = shs_arena_calloc(a, s->n_tuple, sizeof(*t));
	if (!t)
		return shs_seterr(e, SHS_ENOMEM, "shape view: out of memory");
	for (uint32_t k = 0; k < s->n_tuple; k++) {
		int rc = view_shape(a, &s->tuple[k], &t[k], depth + 1, e);

		if (rc != SHS_OK)
			return rc;
	}
	out->n_tuple = s->n_tuple;
	out->tuple = t;
	return SHS_OK;
}

static uint64_t pshape_leaves(const shs_pshape *s, uint32_t depth)
{
	uint64_t n = 0;

	if (s->type != SHS_TUPLE)
		return 1;
	if (depth >= SHS_MAX_NESTING || !s->tuple)
		return 0;
	for (uint32_t k = 0; k < s->n_tuple && n <= UINT32_MAX; k++)
		n += pshape_leaves(&s->tuple[k], depth + 1);
	return n;
}

uint32_t shs__pshape_leaves(const shs_pshape *s)
{
	uint64_t n = s ? pshape_leaves(s, 0) : 0;

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Appends the leaves of s (depth first) to v->leaf from *at. */
static void collect_leaves(shs_host_iview *v, const shs_pshape *s, uint32_t *at, uint32_t depth)
{
	if (s->type != SHS_TUPLE) {
		v->leaf[(*at)++] = s;
		if (s->rank > v->max_rank)
			v->max_rank = s->rank;
		return;
	}
	if (depth >= SHS_MAX_NESTING || !s->tuple)
		return;
	for (uint32_t k = 0; k < s->n_tuple; k++)
		collect_leaves(v, &s->tuple[k], at, depth + 1);
}

static int flatten(shs_arena *a, shs_host_iview *v, shs_err *e)
{
	const shs_pinstr *in = &v->instr;
	uint64_t total = shs__pshape_leaves(&in->shape);
	uint32_t at = 0;

	v->n_result = (uint32_t)total;
	v->operand_first = shs_arena_calloc(a, in->n_operands + 1u, sizeof(uint32_t));
	if (!v->operand_first)
		return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", in->name);
	for (uint32_t k = 0; k < in->n_operands && total <= SHS_HOST_MAX_LEAVES; k++) {
		v->operand_first[k] = (uint32_t)total;
		total += shs__pshape_leaves(&in->operands[k]);
	}
	if (total > SHS_HOST_MAX_LEAVES)
		return shs_seterr(e, SHS_EINVAL,
				  "%s: more than %d array leaves in its result and operands",
				  in->name, SHS_HOST_MAX_LEAVES);
	v->n_leaves = (uint32_t)total;
	v->leaf = shs_arena_calloc(a, total + 1u, sizeof(*v->leaf));
	if (!v->leaf)
		return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", in->name);
	collect_leaves(v, &in->shape, &at, 0);
	for (uint32_t k = 0; k < in->n_operands; k++)
		collect_leaves(v, &in->operands[k], &at, 0);
	return SHS_OK;
}

/* ---- The instruction ---- */

static int view_operands(shs_arena *a, const shs_computation *c, const shs_instr *i,
			 shs_pinstr *out, shs_err *e)
{
	shs_pshape *ops;

	if (!i->n_operands)
		return SHS_OK;
	ops = shs_arena_calloc(a, i->n_operands, sizeof(*ops));
	if (!ops)
		return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", out->name);
	for (uint32_t k = 0; k < i->n_operands; k++) {
		uint32_t x = i->operands[k];
		int rc;

		if (x >= c->n_instrs || !c->instrs[x])
			return shs_seterr(e, SHS_EINVAL,
					  "%s: operand %u is instruction %u, %s has %u", out->name,
					  k, x, c->name ? c->name : "the computation", c->n_instrs);
		rc = view_shape(a, &c->instrs[x]->shape, &ops[k], 0, e);
		if (rc != SHS_OK)
			return rc;
	}
	out->n_operands = i->n_operands;
	out->operands = ops;
	return SHS_OK;
}

static int view_slice(shs_arena *a, const shs_instr *i, shs_pinstr *out, shs_err *e)
{
	int64_t *v;
	uint32_t n = i->n_slice;

	if (!n || !i->slice)
		return SHS_OK;
	v = shs_arena_calloc(a, 3u * (size_t)n, sizeof(*v));
	if (!v)
		return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", out->name);
	for (uint32_t d = 0; d < n; d++) {
		v[d] = i->slice[d].start;
		v[n + d] = i->slice[d].limit;
		v[2u * n + d] = i->slice[d].stride;
	}
	out->slice_starts = (shs_plist){ n, v };
	out->slice_limits = (shs_plist){ n, v + n };
	out->slice_strides = (shs_plist){ n, v + 2u * n };
	return SHS_OK;
}

static void view_dims(const shs_instr *i, shs_pinstr *out)
{
	const shs_dot_dims *dot = i->dot;
	const shs_gather_dims *g = i->gather;
	const shs_scatter_dims *s = i->scatter;

	out->dimensions = plist(&i->dimensions);
	out->lhs_batch = plist(dot ? &dot->lhs_batch : &no_list);
	out->rhs_batch = plist(dot ? &dot->rhs_batch : &no_list);
	out->lhs_contracting = plist(dot ? &dot->lhs_contracting : &no_list);
	out->rhs_contracting = plist(dot ? &dot->rhs_contracting : &no_list);
	out->offset_dims = plist(g ? &g->offset_dims : &no_list);
	out->collapsed_slice_dims = plist(g ? &g->collapsed_slice_dims : &no_list);
	out->start_index_map = plist(g ? &g->start_index_map : &no_list);
	out->slice_sizes = plist(&i->gather_slice_sizes);
	out->update_window_dims = plist(s ? &s->update_window_dims : &no_list);
	out->inserted_window_dims = plist(s ? &s->inserted_window_dims : &no_list);
	out->scatter_dims_to_operand_dims = plist(s ? &s->scatter_dims_to_operand_dims : &no_list);
	out->index_vector_dim = g ? g->index_vector_dim : s ? s->index_vector_dim : 0;
	out->dynamic_slice_sizes = plist(&i->dynamic_slice_sizes);
}

_Static_assert(sizeof(shs_pattr) == sizeof(shs_attr_kv) &&
		       offsetof(shs_pattr, value) == offsetof(shs_attr_kv, value),
	       "shs_pattr views shs_attr_kv");

int shs__host_view(shs_arena *a, const shs_computation *c, const shs_instr *i,
		   shs_host_iview *out, shs_err *e)
{
	shs_pinstr *v = &out->instr;
	int rc;

	*out = (shs_host_iview){ 0 };
	v->struct_size = sizeof(*v);
	v->name = i->name ? i->name : empty;
	v->opcode = shs_opcode_name(i->op);
	v->op_name = i->metadata && i->metadata->op_name ? i->metadata->op_name : empty;
	v->tuple_index = i->tuple_index;
	v->parameter_number = i->parameter_number;
	v->custom_call_target = i->custom_call_target ? i->custom_call_target : empty;
	v->backend_config = empty;
	if (i->backend_config.len) {
		v->backend_config = shs_arena_strndup(a, (const char *)i->backend_config.data,
						      i->backend_config.len);
		if (!v->backend_config)
			return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", v->name);
	}
	/* shs_attr_kv and shs_pattr are the same two strings: the module's, borrowed */
	v->n_frontend_attrs = i->n_frontend_attrs;
	v->frontend_attrs = (const shs_pattr *)i->frontend_attrs;
	view_dims(i, v);
	rc = view_shape(a, &i->shape, &v->shape, 0, e);
	if (rc == SHS_OK)
		rc = view_operands(a, c, i, v, e);
	if (rc == SHS_OK)
		rc = view_slice(a, i, v, e);
	if (rc == SHS_OK)
		rc = flatten(a, out, e);
	return rc;
}

/* ---- Every instruction's, once ---- */

struct shs_host_views {
	shs_arena *a;
	uint32_t n_comps;
	shs_host_iview **v; /* per computation and instruction */
	bool **ok;          /* ... and whether it has one */
	uint64_t **cls;     /* ... and its class (shs__host_view_class; 0: no view) */
};

int shs_host_views_make(const shs_module *m, shs_host_views **out, shs_err *e)
{
	shs_host_views *v = calloc(1, sizeof(*v));
	int rc = SHS_OK;

	*out = NULL;
	if (!v || !(v->a = shs_arena_new(0)))
		rc = SHS_ENOMEM;
	if (rc == SHS_OK) {
		v->n_comps = m->n_comps;
		v->v = shs_arena_calloc(v->a, m->n_comps + 1u, sizeof(*v->v));
		v->ok = shs_arena_calloc(v->a, m->n_comps + 1u, sizeof(*v->ok));
		v->cls = shs_arena_calloc(v->a, m->n_comps + 1u, sizeof(*v->cls));
		if (!v->v || !v->ok || !v->cls)
			rc = SHS_ENOMEM;
	}
	for (uint32_t c = 0; c < m->n_comps && rc == SHS_OK; c++) {
		const shs_computation *comp = m->comps[c];
		v->v[c] = shs_arena_calloc(v->a, comp->n_instrs + 1u, sizeof(*v->v[c]));
		v->ok[c] = shs_arena_calloc(v->a, comp->n_instrs + 1u, sizeof(*v->ok[c]));
		v->cls[c] = shs_arena_calloc(v->a, comp->n_instrs + 1u, sizeof(*v->cls[c]));
		if (!v->v[c] || !v->ok[c] || !v->cls[c])
			rc = SHS_ENOMEM;
		for (uint32_t i = 0; i < comp->n_instrs && rc == SHS_OK; i++) {
			shs_err why = { 0 };
			int r = shs__host_view(v->a, comp, comp->instrs[i], &v->v[c][i], &why);
			v->ok[c][i] = r == SHS_OK;
			if (r == SHS_OK)
				v->cls[c][i] = shs__host_view_class(&v->v[c][i],
								    comp->instrs[i]->n_called);
			if (r == SHS_ENOMEM)
				rc = r;
		}
	}
	if (rc != SHS_OK) {
		shs_host_views_free(v);
		return shs_seterr(e, SHS_ENOMEM, "views: out of memory");
	}
	*out = v;
	return SHS_OK;
}

const shs_host_iview *shs__host_views_get(const shs_host_views *v, uint32_t c, uint32_t i)
{
	return v && c < v->n_comps && v->ok[c][i] ? &v->v[c][i] : NULL;
}

uint64_t shs__host_views_class(const shs_host_views *v, uint32_t c, uint32_t i)
{
	return v && c < v->n_comps && v->ok[c][i] ? v->cls[c][i] : 0;
}

void shs_host_views_free(shs_host_views *v)
{
	if (!v)
		return;
	shs_arena_free(v->a);
	free(v);
}

/* ---- The mesh ---- */

void shs_host_mesh_view(const shs_mesh *mesh, shs_mesh_view *out)
{
	uint32_t n = mesh->n_axes;

	if (n > SHS_MESH_MAX_AXES)
		n = SHS_MESH_MAX_AXES;
	if (n > SHS_PLUGIN_MAX_AXES)
		n = SHS_PLUGIN_MAX_AXES;
	memset(out, 0, sizeof(*out));
	for (uint32_t k = 0; k < n; k++)
		out->names[k] = mesh->names[k] ? mesh->names[k] : empty;
	out->view = (shs_pmesh){ .struct_size = sizeof(shs_pmesh), .n_axes = n,
				 .names = out->names, .sizes = mesh->sizes };
}

/* ---- Result hints from annotations ---- */

/* The spec of named on a leaf of dims[0..rank), padded when some dim does not divide. */
static bool spec_from_named(const shs_named_sharding *nm, const shs_pshape *leaf,
			    const shs_mesh *mesh, shs_pspec *out)
{
	*out = (shs_pspec){ .rank = leaf->rank };
	if (nm->rank != leaf->rank || leaf->rank > SHS_PLUGIN_MAX_RANK)
		return false;
	for (uint32_t d = 0; d < leaf->rank; d++) {
		int64_t prod = 1;

		out->dims[d].n = nm->n_dim_axes[d];
		for (uint32_t k = 0; k < nm->n_dim_axes[d] && k < SHS_PLUGIN_MAX_AXES; k++) {
			uint8_t x = nm->dim_axes[d][k];

			out->dims[d].axes[k] = x;
			if (x < mesh->n_axes && mesh->sizes[x] > 0 &&
			    !__builtin_mul_overflow(prod, mesh->sizes[x], &prod))
				continue;
			return false;
		}
		if (leaf->dims[d] % prod)
			out->padded = true;
	}
	return true;
}

/* The sharding of leaf k of an annotation: the tuple's k-th element, or s itself. */
static const shs_sharding *leaf_sharding(const shs_sharding *s, uint32_t k, uint32_t n_leaves)
{
	if (s->kind == SHS_SHARDING_TUPLE)
		return s->n_tuple == n_leaves && s->tuple ? &s->tuple[k] : NULL;
	return s;
}

const shs_pspec *shs__host_annotation_hint(shs_arena *a, const shs_instr *i,
					   const shs_host_iview *v, const shs_mesh *mesh)
{
	shs_pspec *specs;

	if (!i->sharding || !v->n_result || v->max_rank > SHS_PLUGIN_MAX_RANK)
		return NULL;
	specs = shs_arena_calloc(a, v->n_result, sizeof(*specs));
	if (!specs)
		return NULL;
	for (uint32_t k = 0; k < v->n_result; k++) {
		const shs_sharding *s = leaf_sharding(i->sharding, k, v->n_result);
		shs_named_sharding nm;

		if (!s || s->kind == SHS_SHARDING_TUPLE ||
		    shs_sharding_to_named(mesh, s, v->leaf[k]->rank, &nm, NULL) != SHS_OK ||
		    !spec_from_named(&nm, v->leaf[k], mesh, &specs[k]))
			return NULL;
	}
	return specs;
}
