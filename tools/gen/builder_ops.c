/* The graph builder's instructions: shape inference and checks for each opcode it emits. */
#include <math.h>
#include <string.h>

#include "builder_internal.h"

/* Appends an array-shaped instruction; NULL-safe on i. */
static shs_v add_array(shs_gb *g, shs_instr *i, int32_t type, shs_gdims dims)
{
	if (!i || shs__gb_array_shape(g, &i->shape, type, dims) != SHS_OK)
		return 0;
	return shs__gb_add(g, i, NULL);
}

static bool dims_equal(shs_gdims a, shs_gdims b)
{
	return a.n == b.n && !memcmp(a.d, b.d, a.n * sizeof(int64_t));
}

static bool has_dim(shs_gdims d, int64_t x)
{
	for (uint32_t k = 0; k < d.n; k++)
		if (d.d[k] == x)
			return true;
	return false;
}

static bool in_rank(shs_gb *g, const char *what, shs_gdims d, uint32_t rank)
{
	for (uint32_t k = 0; k < d.n; k++)
		if (d.d[k] < 0 || d.d[k] >= rank) {
			shs_gb_fail(g, SHS_EINVAL, "%s: dimension %lld out of range for rank %u",
				    what, (long long)d.d[k], rank);
			return false;
		}
	return true;
}

shs_v shs_gb_iota(shs_gb *g, int32_t type, shs_gdims dims, int64_t iota_dim)
{
	shs_instr *i = shs__gb_new(g, SHS_OP_IOTA, NULL, 0);

	if (i && !shs__gb_i64s(g, &i->dimensions, GD(iota_dim)))
		return 0;
	return add_array(g, i, type, dims);
}

shs_v shs_gb_broadcast(shs_gb *g, shs_v v, shs_gdims dims, shs_gdims map)
{
	shs_instr *i = shs__gb_new(g, SHS_OP_BROADCAST, &v, 1);
	shs_gdims in = shs_gb_dims(g, v);

	if (!i)
		return 0;
	if (in.n != map.n || !in_rank(g, "broadcast", map, dims.n)) {
		shs_gb_fail(g, SHS_EINVAL, "broadcast: %u operand dims but %u mapped", in.n, map.n);
		return 0;
	}
	for (uint32_t k = 0; k < map.n; k++)
		if (dims.d[map.d[k]] != in.d[k]) {
			shs_gb_fail(g, SHS_EINVAL,
				    "broadcast: operand dim %u is %lld, result dim %lld is %lld", k, (long long)in.d[k], (long long)map.d[k],
				    (long long)dims.d[map.d[k]]);
			return 0;
		}
	if (map.n && !shs__gb_i64s(g, &i->dimensions, map))
		return 0;
	return add_array(g, i, shs_gb_type(g, v), dims);
}

shs_v shs_gb_splat(shs_gb *g, int32_t type, double value, shs_gdims dims)
{
	shs_v k = shs_gb_const(g, type, value);

	return dims.n ? shs_gb_broadcast(g, k, dims, GD()) : k;
}

shs_v shs_gb_unary(shs_gb *g, shs_opcode op, shs_v v)
{
	return add_array(g, shs__gb_new(g, op, &v, 1), shs_gb_type(g, v), shs_gb_dims(g, v));
}

shs_v shs_gb_binary(shs_gb *g, shs_opcode op, shs_v a, shs_v b)
{
	shs_v ops[2] = { a, b };
	shs_instr *i = shs__gb_new(g, op, ops, 2);

	if (i && (shs_gb_type(g, a) != shs_gb_type(g, b) ||
		  !dims_equal(shs_gb_dims(g, a), shs_gb_dims(g, b)))) {
		shs_gb_fail(g, SHS_EINVAL, "%s: operand shapes differ", shs_opcode_name(op));
		return 0;
	}
	return add_array(g, i, shs_gb_type(g, a), shs_gb_dims(g, a));
}

shs_v shs_gb_compare(shs_gb *g, shs_v a, shs_v b, const char *direction)
{
	shs_v ops[2] = { a, b };
	shs_instr *i = shs__gb_new(g, SHS_OP_COMPARE, ops, 2);

	if (i && !dims_equal(shs_gb_dims(g, a), shs_gb_dims(g, b))) {
		shs_gb_fail(g, SHS_EINVAL, "compare: operand shapes differ");
		return 0;
	}
	if (i)
		i->comparison_direction = direction;
	return add_array(g, i, SHS_PRED, shs_gb_dims(g, a));
}

shs_v shs_gb_select(shs_gb *g, shs_v pred, shs_v on_true, shs_v on_false)
{
	shs_v ops[3] = { pred, on_true, on_false };
	shs_instr *i = shs__gb_new(g, SHS_OP_SELECT, ops, 3);
	shs_gdims d = shs_gb_dims(g, on_true);

	if (i && (!dims_equal(d, shs_gb_dims(g, pred)) || !dims_equal(d, shs_gb_dims(g, on_false)) ||
		  shs_gb_type(g, on_true) != shs_gb_type(g, on_false))) {
		shs_gb_fail(g, SHS_EINVAL, "select: operand shapes differ");
		return 0;
	}
	return add_array(g, i, shs_gb_type(g, on_true), d);
}

shs_v shs_gb_convert(shs_gb *g, shs_v v, int32_t type)
{
	if (g->rc == SHS_OK && shs_gb_type(g, v) == type)
		return v;
	return add_array(g, shs__gb_new(g, SHS_OP_CONVERT, &v, 1), type, shs_gb_dims(g, v));
}

/* The computation `(x, y) -> x op y` on scalars of type, made once per kind and type. */
static uint32_t reducer(shs_gb *g, shs_gb_reducer kind, int32_t type)
{
	static const char *const names[SHS_GB_N_REDUCERS] = { "region_add", "region_max" };
	static const shs_opcode ops[SHS_GB_N_REDUCERS] = { SHS_OP_ADD, SHS_OP_MAXIMUM };
	int32_t *slot = &g->reducers[kind][type];
	shs_gb_frame saved;
	shs_v x, y;

	if (*slot)
		return (uint32_t)(*slot - 1);
	shs_gb_begin(g, &saved, names[kind]);
	g->scope[0] = '\0';
	g->depth = 0;
	shs_gb_push(g, "train_step/%s_%s", names[kind] + strlen("region_"), shs_elem_name(type));
	x = shs_gb_param(g, 0, type, GD(), "x");
	y = shs_gb_param(g, 1, type, GD(), "y");
	*slot = (int32_t)shs_gb_end(g, &saved, shs_gb_binary(g, ops[kind], x, y)) + 1;
	return (uint32_t)(*slot - 1);
}

static shs_instr *with_callee(shs_gb *g, shs_instr *i, uint32_t callee)
{
	if (!i)
		return NULL;
	i->called = shs_arena_memdup(g->m->arena, &callee, sizeof(callee));
	if (!i->called) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return NULL;
	}
	i->n_called = 1;
	return i;
}

shs_v shs_gb_reduce(shs_gb *g, shs_v v, shs_gdims dims, shs_gb_reducer kind)
{
	int32_t type = shs_gb_type(g, v);
	shs_gdims in = shs_gb_dims(g, v), out = { 0 };
	uint32_t callee = reducer(g, kind, type);
	shs_v ops[2] = { v, shs_gb_const(g, type, kind == SHS_GB_MAX ? -INFINITY : 0.0) };
	shs_instr *i = shs__gb_new(g, SHS_OP_REDUCE, ops, 2);

	if (!i || !in_rank(g, "reduce", dims, in.n))
		return 0;
	for (uint32_t k = 0; k < in.n; k++)
		if (!has_dim(dims, k))
			out.d[out.n++] = in.d[k];
	if (!shs__gb_i64s(g, &i->dimensions, dims))
		return 0;
	return add_array(g, with_callee(g, i, callee), type, out);
}

/* Appends to out the dims of d (rank n) that are in neither a nor b. */
static void free_dims(shs_gdims *out, shs_gdims d, shs_gdims a, shs_gdims b)
{
	for (uint32_t k = 0; k < d.n; k++)
		if (!has_dim(a, k) && !has_dim(b, k))
			out->d[out->n++] = d.d[k];
}

shs_v shs_gb_dot(shs_gb *g, shs_v lhs, shs_v rhs, shs_gdims lhs_batch, shs_gdims rhs_batch,
		 shs_gdims lhs_contract, shs_gdims rhs_contract)
{
	shs_v ops[2] = { lhs, rhs };
	shs_instr *i = shs__gb_new(g, SHS_OP_DOT, ops, 2);
	shs_gdims l = shs_gb_dims(g, lhs), r = shs_gb_dims(g, rhs), out = { 0 };

	if (!i || !in_rank(g, "dot lhs", lhs_batch, l.n) ||
	    !in_rank(g, "dot lhs", lhs_contract, l.n) || !in_rank(g, "dot rhs", rhs_batch, r.n) ||
	    !in_rank(g, "dot rhs", rhs_contract, r.n))
		return 0;
	if (lhs_batch.n != rhs_batch.n || lhs_contract.n != rhs_contract.n) {
		shs_gb_fail(g, SHS_EINVAL, "dot: batch or contracting dims do not pair up");
		return 0;
	}
	for (uint32_t k = 0; k < lhs_batch.n; k++)
		if (l.d[lhs_batch.d[k]] != r.d[rhs_batch.d[k]])
			shs_gb_fail(g, SHS_EINVAL, "dot: batch dim %u sizes differ", k);
	for (uint32_t k = 0; k < lhs_contract.n; k++)
		if (l.d[lhs_contract.d[k]] != r.d[rhs_contract.d[k]])
			shs_gb_fail(g, SHS_EINVAL, "dot: contracting dim %u sizes %lld and %lld differ",
				    k, (long long)l.d[lhs_contract.d[k]],
				    (long long)r.d[rhs_contract.d[k]]);
	for (uint32_t k = 0; k < lhs_batch.n; k++)
		out.d[out.n++] = l.d[lhs_batch.d[k]];
	free_dims(&out, l, lhs_batch, lhs_contract);
	free_dims(&out, r, rhs_batch, rhs_contract);
	i->dot = shs_arena_calloc(g->m->arena, 1, sizeof(*i->dot));
	if (!i->dot) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	shs__gb_i64s(g, &i->dot->lhs_batch, lhs_batch);
	shs__gb_i64s(g, &i->dot->rhs_batch, rhs_batch);
	shs__gb_i64s(g, &i->dot->lhs_contracting, lhs_contract);
	shs__gb_i64s(g, &i->dot->rhs_contracting, rhs_contract);
	return add_array(g, i, shs_gb_type(g, lhs), out);
}

shs_v shs_gb_transpose(shs_gb *g, shs_v v, shs_gdims perm)
{
	shs_gdims in = shs_gb_dims(g, v), out = { .n = perm.n };
	shs_instr *i;
	bool identity = true;

	for (uint32_t k = 0; k < perm.n; k++)
		identity = identity && perm.d[k] == k;
	if (g->rc == SHS_OK && identity && perm.n == in.n)
		return v;
	i = shs__gb_new(g, SHS_OP_TRANSPOSE, &v, 1);
	if (!i || !in_rank(g, "transpose", perm, in.n))
		return 0;
	if (perm.n != in.n) {
		shs_gb_fail(g, SHS_EINVAL, "transpose: permutation of %u dims for rank %u", perm.n,
			    in.n);
		return 0;
	}
	for (uint32_t k = 0; k < perm.n; k++)
		out.d[k] = in.d[perm.d[k]];
	if (!shs__gb_i64s(g, &i->dimensions, perm))
		return 0;
	return add_array(g, i, shs_gb_type(g, v), out);
}

static int64_t elements(shs_gdims d)
{
	int64_t n = 1;

	for (uint32_t k = 0; k < d.n; k++)
		n *= d.d[k];
	return n;
}

shs_v shs_gb_reshape(shs_gb *g, shs_v v, shs_gdims dims)
{
	shs_gdims in = shs_gb_dims(g, v);
	shs_instr *i;

	if (g->rc == SHS_OK && dims_equal(in, dims))
		return v;
	i = shs__gb_new(g, SHS_OP_RESHAPE, &v, 1);
	if (i && elements(in) != elements(dims)) {
		shs_gb_fail(g, SHS_EINVAL, "reshape: %lld elements into %lld", (long long)elements(in),
			    (long long)elements(dims));
		return 0;
	}
	return add_array(g, i, shs_gb_type(g, v), dims);
}

shs_v shs_gb_tuple(shs_gb *g, const shs_v *vals, uint32_t n)
{
	shs_instr *i = shs__gb_new(g, SHS_OP_TUPLE, vals, n);

	if (!i)
		return 0;
	i->shape.type = SHS_TUPLE;
	i->shape.n_tuple = n;
	i->shape.tuple = shs_arena_calloc(g->m->arena, n ? n : 1, sizeof(shs_shape));
	if (!i->shape.tuple) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	for (uint32_t k = 0; k < n; k++)
		if (shs_shape_copy(g->m->arena, &i->shape.tuple[k], shs_gb_shape(g, vals[k])) !=
		    SHS_OK) {
			shs_gb_fail(g, SHS_ENOMEM, "out of memory");
			return 0;
		}
	return shs__gb_add(g, i, NULL);
}

shs_v shs_gb_gte(shs_gb *g, shs_v tuple, int64_t index)
{
	shs_instr *i = shs__gb_new(g, SHS_OP_GET_TUPLE_ELEMENT, &tuple, 1);
	const shs_shape *t = shs_gb_shape(g, tuple);

	if (!i)
		return 0;
	if (t->type != SHS_TUPLE || index < 0 || index >= t->n_tuple) {
		shs_gb_fail(g, SHS_EINVAL, "get-tuple-element: no element %lld", (long long)index);
		return 0;
	}
	i->tuple_index = index;
	if (shs_shape_copy(g->m->arena, &i->shape, &t->tuple[index]) != SHS_OK) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	return shs__gb_add(g, i, NULL);
}

shs_v shs_gb_while(shs_gb *g, shs_v init, uint32_t cond_comp, uint32_t body_comp)
{
	shs_instr *i = shs__gb_new(g, SHS_OP_WHILE, &init, 1);
	uint32_t called[2] = { body_comp, cond_comp };

	if (!i)
		return 0;
	i->called = shs_arena_memdup(g->m->arena, called, sizeof(called));
	if (!i->called || shs_shape_copy(g->m->arena, &i->shape, shs_gb_shape(g, init)) != SHS_OK) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	i->n_called = 2;
	return shs__gb_add(g, i, NULL);
}

shs_v shs_gb_call(shs_gb *g, uint32_t comp, const shs_v *args, uint32_t n)
{
	shs_instr *i = with_callee(g, shs__gb_new(g, SHS_OP_CALL, args, n), comp);
	const shs_computation *callee;

	if (!i)
		return 0;
	if (comp >= g->m->n_comps) {
		shs_gb_fail(g, SHS_EINVAL, "call: no computation %u", comp);
		return 0;
	}
	callee = g->m->comps[comp];
	if (shs_shape_copy(g->m->arena, &i->shape, &callee->instrs[callee->root]->shape) != SHS_OK) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	return shs__gb_add(g, i, NULL);
}

/* v followed by rank s32 scalar start indices. */
static shs_instr *sliced(shs_gb *g, shs_opcode op, const shs_v *head, uint32_t n_head,
			 const shs_v *starts, uint32_t rank)
{
	shs_v ops[2 + SHS_GB_MAX_RANK];

	if (rank > SHS_GB_MAX_RANK) {
		shs_gb_fail(g, SHS_EINVAL, "%s: rank %u too large", shs_opcode_name(op), rank);
		return NULL;
	}
	memcpy(ops, head, n_head * sizeof(shs_v));
	memcpy(ops + n_head, starts, rank * sizeof(shs_v));
	return shs__gb_new(g, op, ops, n_head + rank);
}

shs_v shs_gb_dynamic_slice(shs_gb *g, shs_v v, const shs_v *starts, shs_gdims sizes)
{
	shs_gdims in = shs_gb_dims(g, v);
	shs_instr *i = sliced(g, SHS_OP_DYNAMIC_SLICE, &v, 1, starts, in.n);

	if (!i)
		return 0;
	if (sizes.n != in.n) {
		shs_gb_fail(g, SHS_EINVAL, "dynamic-slice: %u sizes for rank %u", sizes.n, in.n);
		return 0;
	}
	if (!shs__gb_i64s(g, &i->dynamic_slice_sizes, sizes))
		return 0;
	return add_array(g, i, shs_gb_type(g, v), sizes);
}

shs_v shs_gb_dynamic_update_slice(shs_gb *g, shs_v v, shs_v update, const shs_v *starts)
{
	shs_v head[2] = { v, update };
	shs_gdims in = shs_gb_dims(g, v);
	shs_instr *i = sliced(g, SHS_OP_DYNAMIC_UPDATE_SLICE, head, 2, starts, in.n);

	if (i && shs_gb_dims(g, update).n != in.n) {
		shs_gb_fail(g, SHS_EINVAL, "dynamic-update-slice: update rank differs");
		return 0;
	}
	return add_array(g, i, shs_gb_type(g, v), in);
}

shs_v shs_gb_gather_rows(shs_gb *g, shs_v table, shs_v indices)
{
	shs_v ops[2] = { table, indices };
	shs_instr *i = shs__gb_new(g, SHS_OP_GATHER, ops, 2);
	shs_gdims t = shs_gb_dims(g, table), x = shs_gb_dims(g, indices);

	if (!i)
		return 0;
	if (t.n != 2 || x.n != 2) {
		shs_gb_fail(g, SHS_EINVAL, "gather: want table[V, D] and indices[B, T]");
		return 0;
	}
	i->gather = shs_arena_calloc(g->m->arena, 1, sizeof(*i->gather));
	if (!i->gather) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	shs__gb_i64s(g, &i->gather->offset_dims, GD(2));
	shs__gb_i64s(g, &i->gather->collapsed_slice_dims, GD(0));
	shs__gb_i64s(g, &i->gather->start_index_map, GD(0));
	i->gather->index_vector_dim = 2;
	shs__gb_i64s(g, &i->gather_slice_sizes, GD(1, t.d[1]));
	return add_array(g, i, shs_gb_type(g, table), GD(x.d[0], x.d[1], t.d[1]));
}

shs_v shs_gb_scatter_add_rows(shs_gb *g, shs_v zeros, shs_v indices, shs_v updates)
{
	uint32_t callee = reducer(g, SHS_GB_ADD, shs_gb_type(g, zeros));
	shs_v ops[3] = { zeros, indices, updates };
	shs_instr *i = with_callee(g, shs__gb_new(g, SHS_OP_SCATTER, ops, 3), callee);

	if (!i)
		return 0;
	i->scatter = shs_arena_calloc(g->m->arena, 1, sizeof(*i->scatter));
	if (!i->scatter) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	shs__gb_i64s(g, &i->scatter->update_window_dims, GD(2));
	shs__gb_i64s(g, &i->scatter->inserted_window_dims, GD(0));
	shs__gb_i64s(g, &i->scatter->scatter_dims_to_operand_dims, GD(0));
	i->scatter->index_vector_dim = 2;
	return add_array(g, i, shs_gb_type(g, zeros), shs_gb_dims(g, zeros));
}

shs_v shs_gb_add(shs_gb *g, shs_v a, shs_v b) { return shs_gb_binary(g, SHS_OP_ADD, a, b); }
shs_v shs_gb_sub(shs_gb *g, shs_v a, shs_v b) { return shs_gb_binary(g, SHS_OP_SUBTRACT, a, b); }
shs_v shs_gb_mul(shs_gb *g, shs_v a, shs_v b) { return shs_gb_binary(g, SHS_OP_MULTIPLY, a, b); }
shs_v shs_gb_div(shs_gb *g, shs_v a, shs_v b) { return shs_gb_binary(g, SHS_OP_DIVIDE, a, b); }
shs_v shs_gb_and(shs_gb *g, shs_v a, shs_v b) { return shs_gb_binary(g, SHS_OP_AND, a, b); }

shs_v shs_gb_scale(shs_gb *g, shs_v v, double k)
{
	return shs_gb_mul(g, v, shs_gb_splat(g, shs_gb_type(g, v), k, shs_gb_dims(g, v)));
}

shs_v shs_gb_sum(shs_gb *g, shs_v v, shs_gdims dims)
{
	return shs_gb_reduce(g, v, dims, SHS_GB_ADD);
}

shs_v shs_gb_max(shs_gb *g, shs_v v, shs_gdims dims)
{
	return shs_gb_reduce(g, v, dims, SHS_GB_MAX);
}

shs_v shs_gb_expand(shs_gb *g, shs_v v, shs_gdims out_dims, shs_gdims dropped)
{
	shs_gdims map = { 0 };

	for (uint32_t k = 0; k < out_dims.n; k++)
		if (!has_dim(dropped, k))
			map.d[map.n++] = k;
	return shs_gb_broadcast(g, v, out_dims, map);
}
