/* Module construction and shape arithmetic. */
#include "ir.h"

#include <string.h>

shs_module *shs_module_new(size_t budget)
{
	shs_arena *a = shs_arena_new(budget);
	shs_module *m;

	if (!a)
		return NULL;
	m = shs_arena_calloc(a, 1, sizeof(*m));
	if (!m) {
		shs_arena_free(a);
		return NULL;
	}
	m->arena = a;
	return m;
}

void shs_module_free(shs_module *m)
{
	if (m)
		shs_arena_free(m->arena); /* m itself lives in the arena */
}

shs_computation *shs_module_entry(const shs_module *m)
{
	return m->entry < m->n_comps ? m->comps[m->entry] : NULL;
}

shs_computation *shs_module_find_comp(const shs_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->n_comps; i++)
		if (!strcmp(m->comps[i]->name, name))
			return m->comps[i];
	return NULL;
}

/* Appends item to an arena array of pointers that doubles at powers of two. */
static int push_ptr(shs_arena *a, void ***arr, uint32_t *n, void *item)
{
	uint32_t cur = *n;

	if (cur == UINT32_MAX)
		return SHS_ENOMEM;
	if ((cur & (cur - 1)) == 0) { /* 0, 1, 2, 4, ...: full, grow to the next power */
		uint32_t cap = cur ? cur * 2 : 1;
		void **p = shs_arena_alloc(a, (size_t)cap * sizeof(*p));

		if (!p)
			return SHS_ENOMEM;
		if (cur)
			memcpy(p, *arr, (size_t)cur * sizeof(*p));
		*arr = p;
	}
	(*arr)[cur] = item;
	*n = cur + 1;
	return SHS_OK;
}

int shs_module_add_comp(shs_module *m, shs_computation *c)
{
	return push_ptr(m->arena, (void ***)&m->comps, &m->n_comps, c);
}

int shs_comp_add_instr(shs_module *m, shs_computation *c, shs_instr *i)
{
	return push_ptr(m->arena, (void ***)&c->instrs, &c->n_instrs, i);
}

int64_t shs_shape_elements(const shs_shape *s)
{
	int64_t n = 1;

	if (s->type == SHS_TUPLE)
		return -1;
	for (uint32_t d = 0; d < s->rank; d++) {
		if (s->dims[d] < 0)
			return -1;
		if (s->dims[d] && n > INT64_MAX / s->dims[d])
			return -1;
		n *= s->dims[d];
	}
	return n;
}

int64_t shs_shape_bytes(const shs_shape *s)
{
	int64_t total = 0, n;
	int64_t bits;

	if (s->type == SHS_TUPLE) {
		for (uint32_t i = 0; i < s->n_tuple; i++) {
			int64_t b = shs_shape_bytes(&s->tuple[i]);

			if (b < 0 || total > INT64_MAX - b)
				return -1;
			total += b;
		}
		return total;
	}
	if (!shs_elem_is_array(s->type))
		return 0;
	n = shs_shape_elements(s);
	if (n < 0)
		return -1;
	bits = s->layout ? s->layout->element_size_in_bits : 0;
	if (bits > 0) {
		if (n > INT64_MAX / bits)
			return -1;
		return (n * bits + 7) / 8;
	}
	if (n > INT64_MAX / shs_elem_bytes(s->type))
		return -1;
	return n * shs_elem_bytes(s->type);
}

const shs_shape *shs_shape_at(const shs_shape *s, const int64_t *idx, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		if (s->type != SHS_TUPLE || idx[k] < 0 || (uint64_t)idx[k] >= s->n_tuple)
			return NULL;
		s = &s->tuple[idx[k]];
	}
	return s;
}

static int copy_i64s(shs_arena *a, shs_i64s *dst, const shs_i64s *src)
{
	dst->n = src->n;
	dst->v = src->n ? shs_arena_memdup(a, src->v, src->n * sizeof(*src->v)) : NULL;
	return (src->n && !dst->v) ? SHS_ENOMEM : SHS_OK;
}

int shs_shape_copy(shs_arena *a, shs_shape *dst, const shs_shape *src)
{
	*dst = *src;
	if (src->rank) {
		dst->dims = shs_arena_memdup(a, src->dims, src->rank * sizeof(*src->dims));
		if (!dst->dims)
			return SHS_ENOMEM;
	}
	if (src->dynamic) {
		dst->dynamic = shs_arena_memdup(a, src->dynamic, src->rank * sizeof(*src->dynamic));
		if (!dst->dynamic)
			return SHS_ENOMEM;
	}
	if (src->layout) {
		const shs_layout *l = src->layout;
		shs_layout *nl = shs_arena_memdup(a, l, sizeof(*l));

		if (!nl || copy_i64s(a, &nl->minor_to_major, &l->minor_to_major))
			return SHS_ENOMEM;
		if (l->n_tiles) {
			nl->tiles = shs_arena_calloc(a, l->n_tiles, sizeof(*nl->tiles));
			if (!nl->tiles)
				return SHS_ENOMEM;
			for (uint32_t t = 0; t < l->n_tiles; t++)
				if (copy_i64s(a, &nl->tiles[t], &l->tiles[t]))
					return SHS_ENOMEM;
		}
		dst->layout = nl;
	}
	if (src->n_tuple) {
		dst->tuple = shs_arena_calloc(a, src->n_tuple, sizeof(*dst->tuple));
		if (!dst->tuple)
			return SHS_ENOMEM;
		for (uint32_t i = 0; i < src->n_tuple; i++)
			if (shs_shape_copy(a, &dst->tuple[i], &src->tuple[i]))
				return SHS_ENOMEM;
	}
	return SHS_OK;
}

bool shs_shape_compatible(const shs_shape *x, const shs_shape *y)
{
	if (x->type != y->type || x->rank != y->rank || x->n_tuple != y->n_tuple)
		return false;
	if (x->rank && memcmp(x->dims, y->dims, x->rank * sizeof(*x->dims)))
		return false;
	for (uint32_t i = 0; i < x->n_tuple; i++)
		if (!shs_shape_compatible(&x->tuple[i], &y->tuple[i]))
			return false;
	return true;
}

static bool i64s_equal(const shs_i64s *x, const shs_i64s *y)
{
	return x->n == y->n && (!x->n || !memcmp(x->v, y->v, x->n * sizeof(*x->v)));
}

static bool layout_equal(const shs_layout *x, const shs_layout *y)
{
	if (!x || !y)
		return x == y;
	if (!i64s_equal(&x->minor_to_major, &y->minor_to_major) || x->n_tiles != y->n_tiles ||
	    x->element_size_in_bits != y->element_size_in_bits ||
	    x->memory_space != y->memory_space)
		return false;
	for (uint32_t t = 0; t < x->n_tiles; t++)
		if (!i64s_equal(&x->tiles[t], &y->tiles[t]))
			return false;
	return true;
}

bool shs_shape_equal(const shs_shape *x, const shs_shape *y)
{
	if (x->type != y->type || x->rank != y->rank || x->n_tuple != y->n_tuple)
		return false;
	if (x->rank && memcmp(x->dims, y->dims, x->rank * sizeof(*x->dims)))
		return false;
	if (!x->dynamic != !y->dynamic ||
	    (x->dynamic && memcmp(x->dynamic, y->dynamic, x->rank * sizeof(*x->dynamic))))
		return false;
	if (!layout_equal(x->layout, y->layout))
		return false;
	for (uint32_t i = 0; i < x->n_tuple; i++)
		if (!shs_shape_equal(&x->tuple[i], &y->tuple[i]))
			return false;
	return true;
}
