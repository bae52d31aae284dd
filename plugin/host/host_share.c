/* Query classes: instructions whose queries pure strategies answer alike. */
#include <string.h>
#include <xxhash.h>

#include "host_internal.h"

static uint64_t put(uint64_t h, const void *p, size_t n)
{
	return XXH3_64bits_withSeed(p, n, h);
}

static uint64_t put_u64(uint64_t h, uint64_t v)
{
	return put(h, &v, sizeof(v));
}

static uint64_t put_str(uint64_t h, const char *s)
{
	return s ? put(h, s, strlen(s) + 1) : put_u64(h, 0);
}

static uint64_t put_list(uint64_t h, const shs_plist *l)
{
	h = put_u64(h, l->n);
	return l->n ? put(h, l->v, l->n * sizeof(*l->v)) : h;
}

static uint64_t put_shape(uint64_t h, const shs_pshape *s)
{
	h = put_u64(h, (uint64_t)(uint32_t)s->type << 32 | s->rank);
	if (s->rank)
		h = put(h, s->dims, s->rank * sizeof(*s->dims));
	h = put_u64(h, s->n_tuple);
	for (uint32_t k = 0; k < s->n_tuple; k++)
		h = put_shape(h, &s->tuple[k]);
	return h;
}

uint64_t shs__host_view_class(const shs_host_iview *v, uint32_t n_called)
{
	const shs_pinstr *i = &v->instr;
	const shs_plist *lists[] = { &i->dimensions, &i->lhs_batch, &i->rhs_batch,
				     &i->lhs_contracting, &i->rhs_contracting, &i->offset_dims,
				     &i->collapsed_slice_dims, &i->start_index_map,
				     &i->slice_sizes, &i->update_window_dims,
				     &i->inserted_window_dims, &i->scatter_dims_to_operand_dims,
				     &i->dynamic_slice_sizes, &i->slice_starts, &i->slice_limits,
				     &i->slice_strides };
	uint64_t h = put_str(0x5eed, i->opcode);

	h = put_shape(h, &i->shape);
	h = put_u64(h, i->n_operands);
	for (uint32_t k = 0; k < i->n_operands; k++)
		h = put_shape(h, &i->operands[k]);
	for (size_t k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		h = put_list(h, lists[k]);
	h = put_u64(h, (uint64_t)i->index_vector_dim);
	h = put_u64(h, (uint64_t)i->tuple_index);
	h = put_u64(h, (uint64_t)i->parameter_number);
	h = put_u64(h, n_called);
	h = put_str(h, i->custom_call_target);
	h = put_str(h, i->backend_config);
	return h ? h : 1; /* 0 means none */
}

uint64_t shs_host_query_class(const shs_host *h, const shs_host_views *views, uint32_t c,
			      uint32_t i, const shs_instr *in)
{
	const shs_host_iview *v = shs__host_views_get(views, c, i);

	if (!h || !v || !in)
		return 0;
	for (uint32_t k = 0; k < h->n_strats; k++) {
		const shs_host_strat *st = &h->strats[k];
		if (st->s.flags & SHS_STRATEGY_PURE)
			continue;
		/* an impure match may take one instruction of a class and not another */
		if (st->s.match || shs__host_serves(st, in->op, &v->instr))
			return 0;
	}
	return shs__host_views_class(views, c, i);
}
