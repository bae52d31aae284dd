/* The array leaves of a shape: how many, and which, depth first. */
#include "ir.h"

static uint64_t count_leaves(const shs_shape *s, uint32_t depth)
{
	uint64_t n = 0;

	if (s->type != SHS_TUPLE)
		return 1;
	if (depth >= SHS_MAX_NESTING || !s->tuple)
		return 0;
	for (uint32_t k = 0; k < s->n_tuple && n <= UINT32_MAX; k++)
		n += count_leaves(&s->tuple[k], depth + 1);
	return n;
}

uint32_t shs_shape_leaves(const shs_shape *s)
{
	uint64_t n = s ? count_leaves(s, 0) : 0;

	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

uint32_t shs_shape_element_leaf(const shs_shape *t, int64_t idx)
{
	uint64_t at = 0;

	for (int64_t k = 0; t && t->type == SHS_TUPLE && k < idx && k < (int64_t)t->n_tuple; k++)
		at += shs_shape_leaves(&t->tuple[k]);
	return at > UINT32_MAX ? UINT32_MAX : (uint32_t)at;
}

static uint32_t list_leaves(const shs_shape *s, const shs_shape **out, uint32_t cap, uint32_t n,
			    uint32_t depth)
{
	if (s->type != SHS_TUPLE) {
		if (n < cap)
			out[n] = s;
		return n + 1;
	}
	if (depth >= SHS_MAX_NESTING || !s->tuple)
		return n;
	for (uint32_t k = 0; k < s->n_tuple && n < cap; k++)
		n = list_leaves(&s->tuple[k], out, cap, n, depth + 1);
	return n;
}

uint32_t shs_shape_leaf_list(const shs_shape *s, const shs_shape **out, uint32_t cap)
{
	uint32_t n = list_leaves(s, out, cap, 0, 0);

	return n < cap ? n : cap;
}
