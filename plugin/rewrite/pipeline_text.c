/* The pipelined program's text: shapes, shardings, region boundaries and loop pieces. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "elem.h"
#include "io.h"
#include "pipeline_internal.h"

pp_shape pp_of(const shs_shape *s)
{
	pp_shape r = { .type = s->type, .rank = s->rank <= SHS_MAX_RANK ? s->rank : 0 };

	for (uint32_t k = 0; k < r.rank; k++)
		r.dims[k] = s->dims[k];
	return r;
}

/* The shape of element k of loop l's state in module m. */
pp_shape pp_elem_shape(const shs_module *m, const pp_loop *l, uint32_t k)
{
	const shs_instr *w = m->comps[l->comp]->instrs[l->instr];

	return pp_of(&w->shape.tuple[k]);
}

/* type[pre..., s's dims from `from` on]. */
void pp_put_shape(shs_buf *b, int type, const int64_t *pre, uint32_t n_pre,
		  const pp_shape *s, uint32_t from)
{
	bool first = true;

	shs_buf_printf(b, "%s[", shs_elem_name(type));
	for (uint32_t k = 0; k < n_pre; k++, first = false)
		shs_buf_printf(b, "%s%" PRId64, first ? "" : ",", pre[k]);
	for (uint32_t k = from; s && k < s->rank; k++, first = false)
		shs_buf_printf(b, "%s%" PRId64, first ? "" : ",", s->dims[k]);
	shs_buf_putc(b, ']');
}

/* s as it is. */
void pp_put_same(shs_buf *b, const pp_shape *s)
{
	pp_put_shape(b, s->type, NULL, 0, s, 0);
}

/* [a, b, s's dims from `from` on]. */
void pp_put_two(shs_buf *b, const pp_shape *s, int64_t a, int64_t c, uint32_t from)
{
	int64_t pre[2] = { a, c };

	pp_put_shape(b, s->type, pre, 2, s, from);
}

/* The layout of a value whose dims are `lead` new ones (not split) followed by the dims of the
 * plan's value from `from` on: dims from, from+1, ... of spec land after them. The first of the
 * plan's dims may also be placed at `first_at` (>= 0), e.g. a micro-batch's rows before the
 * micro-batch dim. */
pp_layout pp_layout_of(const shs_pspec *spec, uint32_t rank, uint32_t lead, int first_at,
		       uint32_t from)
{
	pp_layout l = { .spec = spec };

	for (uint32_t d = 0; d < rank && d < SHS_MAX_RANK + 2; d++)
		l.map[d] = -1;
	for (uint32_t d = lead, k = from; d < rank && spec && k < spec->rank; d++, k++)
		l.map[d] = (int8_t)k;
	if (first_at >= 0 && spec && spec->rank)
		l.map[first_at] = 0;
	return l;
}

/* The plan's sharding of leaf `leaf` of entry instruction i of the module (NULL: none). */
const shs_pspec *pp_spec_of(const pp_ctx *x, uint32_t i, uint32_t leaf)
{
	const shs_decision *d;

	if (!x->r->plan)
		return NULL;
	d = &x->r->plan->d[x->m->entry][i];
	return d->set && leaf < d->n_leaves ? &d->leaves[leaf] : NULL;
}

/* The sharding of a value of rank `rank`: stage_dim split over the stage axis (-1: none, and
 * then, inside a region, the stage axis manual), its other dims as lay says (NULL: whole). */
int pp_put_sharding(shs_buf *b, const pp_ctx *x, uint32_t rank, int stage_dim,
		    const pp_layout *lay, bool manual, shs_err *e)
{
	const shs_mesh *mesh = x->r->mesh;
	shs_named_sharding n = { .rank = rank };
	shs_sharding *s = NULL;
	shs_arena *a = shs_arena_new(0);
	int rc;

	if (!a)
		return shs_seterr(e, SHS_ENOMEM, "pipeline: out of memory");
	if (stage_dim >= 0)
		n.dim_axes[stage_dim][n.n_dim_axes[stage_dim]++] = (uint8_t)x->r->stage_axis;
	for (uint32_t d = 0; lay && lay->spec && d < rank; d++) {
		const shs_pdim *pd;
		if (lay->map[d] < 0 || (uint32_t)lay->map[d] >= lay->spec->rank)
			continue;
		pd = &lay->spec->dims[lay->map[d]];
		for (uint32_t k = 0; k < pd->n; k++)
			if (pd->axes[k] != x->r->stage_axis && n.n_dim_axes[d] < SHS_MESH_MAX_AXES)
				n.dim_axes[d][n.n_dim_axes[d]++] = pd->axes[k];
	}
	rc = manual ? shs_sharding_from_named_manual(a, mesh, &n, 1u << x->r->stage_axis, &s, e)
		    : shs_sharding_from_named(a, mesh, &n, &s, e);
	if (rc == SHS_OK)
		shs_sharding_print(b, s);
	shs_arena_free(a);
	return rc;
}

/* `%name = shape custom-call(%src), custom_call_target="target", sharding=...`. */
int pp_put_boundary(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		    const char *target, const pp_shape *s, int stage_dim,
		    const pp_layout *lay, bool manual, shs_err *e)
{
	shs_buf_printf(b, "  %%%s = ", name);
	pp_put_same(b, s);
	shs_buf_printf(b, " custom-call(%%%s), custom_call_target=\"%s\", sharding=", src, target);
	if (pp_put_sharding(b, x, s->rank, stage_dim, lay, manual, e) != SHS_OK)
		return e->code;
	shs_buf_putc(b, '\n');
	return SHS_OK;
}

void pp_put_pin(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		const pp_shape *s, const shs_pspec *spec, shs_err *e)
{
	pp_layout lay = pp_layout_of(spec, s->rank, 0, -1, 0);
	shs_err why = { 0 };

	if (pp_put_boundary(b, x, name, src, "Sharding", s, -1, &lay, true, &why) != SHS_OK &&
	    e->code == SHS_OK)
		*e = why;
}

/* Sharding then SPMDFullToShardShape: a value of full shape `full` into the stages, its
 * local shape `local`; its dim stage_dim split over the stages (-1: the same on each). lay
 * maps the full shape's dims; the local shape's are the same dims. */
int pp_put_enter(shs_buf *b, const pp_ctx *x, const char *name, const char *src,
		 const pp_shape *full, const pp_shape *local, int stage_dim,
		 const pp_layout *lay, shs_err *e)
{
	char held[SHS_ERRMSG_MAX];

	snprintf(held, sizeof(held), "%s.h", name);
	if (pp_put_boundary(b, x, held, src, "Sharding", full, stage_dim, lay, false, e) != SHS_OK)
		return e->code;
	return pp_put_boundary(b, x, name, held, "SPMDFullToShardShape", local, -1, lay, true, e);
}

/* The source-target pairs of a send to the next stage (+1) or the one before (-1). */
void pp_put_pairs(shs_buf *b, const pp_ctx *x, int dir)
{
	bool first = true;

	shs_buf_puts(b, "source_target_pairs={");
	for (int64_t d = 0; d < x->devices; d++) {
		int64_t s = d / x->per_stage, to = d + dir * x->per_stage;
		if (s + dir < 0 || s + dir >= x->stages)
			continue;
		shs_buf_printf(b, "%s{%" PRId64 ",%" PRId64 "}", first ? "" : ",", d, to);
		first = false;
	}
	shs_buf_putc(b, '}');
}

void pp_state_add(pp_state *st, const pp_shape *s)
{
	if (st->n < PP_MAX_STATE)
		st->s[st->n++] = *s;
}

void pp_put_state(shs_buf *b, const pp_state *st)
{
	shs_buf_putc(b, '(');
	for (uint32_t k = 0; k < st->n; k++) {
		if (k)
			shs_buf_puts(b, ", ");
		pp_put_same(b, &st->s[k]);
	}
	shs_buf_putc(b, ')');
}

pp_shape pp_scalar(int type)
{
	return (pp_shape){ .type = type, .rank = 0 };
}

pp_shape pp_dims0(const pp_shape *s, int64_t d0)
{
	pp_shape r = *s;

	r.dims[0] = d0;
	return r;
}

/* s with two leading dims a, c before its dims from `from` on. */
pp_shape pp_lead2(const pp_shape *s, int64_t a, int64_t c, uint32_t from)
{
	pp_shape r = { .type = s->type, .rank = 2 };

	r.dims[0] = a;
	r.dims[1] = c;
	for (uint32_t k = from; k < s->rank && r.rank < SHS_MAX_RANK; k++)
		r.dims[r.rank++] = s->dims[k];
	return r;
}

/* A get-tuple-element of the state parameter: `%pre.eK = shape get-tuple-element(%pre.p)`. */
void pp_put_gte(shs_buf *b, const char *pre, const pp_shape *s, uint32_t k)
{
	shs_buf_printf(b, "  %%%s.e%u = ", pre, k);
	pp_put_same(b, s);
	shs_buf_printf(b, " get-tuple-element(%%%s.p), index=%u\n", pre, k);
}

/* The condition `trip < n` of a loop with state st. */
void pp_put_cond(shs_buf *b, const char *pre, const pp_state *st, int64_t n)
{
	shs_buf_printf(b, "%%%s.cond {\n  %%%s.c = ", pre, pre);
	pp_put_state(b, st);
	shs_buf_printf(b, " parameter(0)\n  %%%s.ci = s32[] get-tuple-element(%%%s.c), index=0\n"
		       "  %%%s.cn = s32[] constant(%" PRId64 ")\n  ROOT %%%s.lt = pred[] "
		       "compare(%%%s.ci, %%%s.cn), direction=LT\n}\n\n",
		       pre, pre, pre, n, pre, pre, pre);
}

/* The stage this device runs: its partition id over the devices a stage holds. */
void pp_put_stage(shs_buf *b, const pp_ctx *x, const char *pre)
{
	shs_buf_printf(b, "  %%%s.pid = u32[] partition-id()\n"
		       "  %%%s.pids = s32[] convert(%%%s.pid)\n"
		       "  %%%s.per = s32[] constant(%" PRId64 ")\n"
		       "  %%%s.stage = s32[] divide(%%%s.pids, %%%s.per)\n",
		       pre, pre, pre, pre, x->per_stage, pre, pre, pre);
}

/* `%name = shape broadcast(%name.zero)`: zeros of shape s. */
void pp_put_zeros(shs_buf *b, const char *name, const pp_shape *s)
{
	shs_buf_printf(b, "  %%%s.zero = %s[] constant(0)\n  %%%s = ", name,
		       shs_elem_name(s->type), name);
	pp_put_same(b, s);
	shs_buf_printf(b, " broadcast(%%%s.zero), dimensions={}\n", name);
}

/* The groups of devices one stage apart (each its position in every stage). */
void pp_put_stage_groups(shs_buf *b, const pp_ctx *x)
{
	shs_buf_puts(b, "replica_groups={");
	for (int64_t r = 0; r < x->per_stage; r++) {
		shs_buf_printf(b, "%s{", r ? "," : "");
		for (int64_t s = 0; s < x->stages; s++)
			shs_buf_printf(b, "%s%" PRId64, s ? "," : "", s * x->per_stage + r);
		shs_buf_putc(b, '}');
	}
	shs_buf_putc(b, '}');
}

/* The plan's sharding of leaf `leaf` of instruction i of computation c of the module (NULL:
 * none). */
const shs_pspec *pp_spec_in(const pp_ctx *x, uint32_t c, uint32_t i, uint32_t leaf)
{
	const shs_decision *d;

	if (!x->r->plan)
		return NULL;
	d = &x->r->plan->d[c][i];
	return d->set && leaf < d->n_leaves ? &d->leaves[leaf] : NULL;
}
