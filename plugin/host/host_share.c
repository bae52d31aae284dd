/* Query classes: instructions whose queries pure strategies answer alike. */
#include <string.h>
#include <xxhash.h>

#include "host_internal.h"

enum {
	DIGEST_OPERANDS = 16,  /* operands and called computations a digest handles */
	DIGEST_STRATEGIES = 8  /* strategies serving one instruction a digest handles */
};

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
	/* a kernel's sharding rule; other instructions share their lists whatever their
	 * frontend attributes say (shardsearch_plugin.h) */
	for (uint32_t k = 0; !strcmp(i->opcode, "custom-call") && k < i->n_frontend_attrs; k++) {
		h = put_str(h, i->frontend_attrs[k].key);
		h = put_str(h, i->frontend_attrs[k].value);
	}
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
		if (st->s.match || shs__host_serves(h, st, in->op, &v->instr))
			return 0;
	}
	return shs__host_views_class(views, c, i);
}

bool shs_host_query_digestible(const shs_host *h, const shs_host_views *views, uint32_t c,
				uint32_t i, const shs_instr *in)
{
	const shs_host_iview *v = shs__host_views_get(views, c, i);
	uint32_t served = 0;

	if (!h || !v || !in)
		return false;
	for (uint32_t k = 0; k < h->n_strats; k++) {
		if (!shs__host_serves(h, &h->strats[k], in->op, &v->instr))
			continue;
		if (!h->strats[k].s.digest || ++served > DIGEST_STRATEGIES)
			return false;
	}
	return served > 0;
}

uint64_t shs_host_query_digest(const shs_host *h, const shs_host_query *hq, const shs_instr *in)
{
	const shs_host_iview *v = hq ? shs__host_views_get(hq->views, hq->comp, hq->instr) : NULL;
	const shs_pspec *none[DIGEST_OPERANDS + 1] = { NULL };
	uint64_t parts[2 * DIGEST_STRATEGIES + 1];
	uint32_t n = 0;
	shs_host_call *call;
	shs_mesh_view mv;
	shs_pquery q;

	if (!h || !v || !in || !hq->mesh || hq->use_annotation || hq->called_roots ||
	    v->instr.n_operands > DIGEST_OPERANDS || in->n_called > DIGEST_OPERANDS)
		return 0;
	shs_host_mesh_view(hq->mesh, &mv);
	q = (shs_pquery){ .struct_size = sizeof(q), .instr = &v->instr, .mesh = &mv.view,
			  .mode = hq->mode, .hints = hq->hints ? hq->hints : none,
			  .result_hint = hq->result_hint, .n_called = in->n_called,
			  .called_roots = none };
	parts[n++] = (uint64_t)(uint32_t)hq->mode;
	for (uint32_t k = 0; k < h->n_strats; k++) {
		const shs_host_strat *st = &h->strats[k];
		if (!shs__host_serves(h, st, in->op, &v->instr))
			continue;
		if (n == sizeof(parts) / sizeof(parts[0]) || !st->s.digest)
			return 0;
		parts[n++] = k;
		call = shs__host_enter(h, h->plugins[st->plugin].path, st->s.name, "digest",
				       in->name);
		parts[n] = st->s.digest(&q, st->s.user);
		shs__host_leave(call);
		if (!parts[n++])
			return 0;
	}
	return n > 1 ? put(0xd16e57, parts, n * sizeof(parts[0])) | 1 : 0;
}
