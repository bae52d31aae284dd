/* Writing a plan into a module: XLA sharding annotations on every instruction that runs. */
#include <stdlib.h>
#include <string.h>

#include "manual.h"
#include "plan_internal.h"

bool *shs_comp_reducers(const shs_module *m)
{
	bool *reducer = malloc((m->n_comps + 1) * sizeof(*reducer));

	for (uint32_t c = 0; reducer && c < m->n_comps; c++)
		reducer[c] = c != m->entry;
	/* one pass over the instructions: a computation something calls runs */
	for (uint32_t k = 0; reducer && k < m->n_comps; k++)
		for (uint32_t i = 0; i < m->comps[k]->n_instrs; i++) {
			const shs_instr *in = m->comps[k]->instrs[i];
			if (in->op != SHS_OP_CALL && in->op != SHS_OP_WHILE &&
			    in->op != SHS_OP_CONDITIONAL)
				continue;
			for (uint32_t j = 0; j < in->n_called; j++)
				if (in->called[j] < m->n_comps)
					reducer[in->called[j]] = false;
		}
	return reducer;
}

/* XLA's form of one array leaf (in a partly manual region over the axes of manual: its
 * manual subgroup). */
static int leaf_sharding(const shs_plan *p, shs_arena *a, const shs_pspec *spec,
			 uint32_t manual, shs_sharding **out, shs_err *e)
{
	shs_named_sharding named;

	shs__spec_to_named(spec, &named);
	return shs_sharding_from_named_manual(a, &p->mesh, &named, manual, out, e);
}

static int instr_sharding(const shs_plan *p, shs_module *m, const shs_instr *in,
			  const shs_decision *d, shs_sharding **out, shs_err *e)
{
	const shs_shape **shapes;
	shs_pspec rep;
	shs_sharding *t, *leaf = NULL;
	uint32_t n = shs_shape_leaves(&in->shape);
	int rc = SHS_OK;

	if (in->shape.type != SHS_TUPLE) {
		shs_spec_replicated(&rep, in->shape.rank);
		return leaf_sharding(p, m->arena, d->set ? &d->leaves[0] : &rep, d->manual_axes,
				     out, e);
	}
	shapes = malloc((n ? n : 1) * sizeof(*shapes));
	t = shs_arena_calloc(m->arena, 1, sizeof(*t));
	if (t)
		t->tuple = shs_arena_calloc(m->arena, n ? n : 1, sizeof(*t->tuple));
	if (!shapes || !t || !t->tuple) {
		rc = shs_seterr(e, SHS_ENOMEM, "annotate: out of memory");
		goto done;
	}
	shs_shape_leaf_list(&in->shape, shapes, n);
	t->kind = SHS_SHARDING_TUPLE;
	t->n_tuple = n;
	for (uint32_t j = 0; j < n && rc == SHS_OK; j++) {
		shs_spec_replicated(&rep, shapes[j]->rank);
		rc = leaf_sharding(p, m->arena, d->set && j < d->n_leaves ? &d->leaves[j] : &rep,
				   d->manual_axes, &leaf, e);
		if (rc == SHS_OK)
			t->tuple[j] = *leaf;
	}
	*out = t;
done:
	free(shapes);
	return rc;
}

/* {manual}, or a tuple of them for shape s, in a; NULL when out of memory. */
static shs_sharding *new_manual(shs_arena *a, const shs_shape *s)
{
	uint32_t n = s->type == SHS_TUPLE ? shs_shape_leaves(s) : 0;
	shs_sharding *t = shs_arena_calloc(a, 1, sizeof(*t));

	if (!t)
		return NULL;
	t->kind = n ? SHS_SHARDING_TUPLE : SHS_SHARDING_MANUAL;
	t->n_tuple = n;
	if (n && !(t->tuple = shs_arena_calloc(a, n, sizeof(*t->tuple))))
		return NULL;
	for (uint32_t k = 0; k < n; k++)
		t->tuple[k].kind = SHS_SHARDING_MANUAL;
	return t;
}

/* A shard_map region's instruction and its boundaries keep the program's sharding; one that
 * has none inside a region is written {manual}, as XLA's propagation would read it. */
static int keep_manual(const shs_manual *mm, shs_module *m, uint32_t c, uint32_t i,
		       const shs_decision *d, bool *kept, shs_err *e)
{
	shs_instr *in = m->comps[c]->instrs[i];

	*kept = in->sharding && d->strategy && !strcmp(d->strategy, "manual");
	if (*kept || !shs_manual_is(mm, c, i))
		return SHS_OK;
	*kept = true;
	in->sharding = new_manual(m->arena, &in->shape);
	return in->sharding ? SHS_OK : shs_seterr(e, SHS_ENOMEM, "annotate: out of memory");
}

int shs_plan_annotate(const shs_plan *p, shs_module *m, shs_err *e)
{
	shs_manual mm;
	bool kept;
	int64_t devices = 1;
	int rc = SHS_OK;
	bool *reducer;

	if (p->n_comps != m->n_comps)
		return shs_seterr(e, SHS_EINVAL, "annotate: the plan is for another module");
	if (shs_manual_make(m, &mm, e) != SHS_OK)
		return e->code;
	if (!(reducer = shs_comp_reducers(m))) {
		shs_manual_free(&mm);
		return shs_seterr(e, SHS_ENOMEM, "annotate: out of memory");
	}
	for (uint32_t k = 0; k < p->mesh.n_axes; k++)
		devices *= p->mesh.sizes[k];
	for (uint32_t c = 0; c < m->n_comps && rc == SHS_OK; c++) {
		shs_computation *comp = m->comps[c];
		if (reducer[c])
			continue;
		for (uint32_t i = 0; i < comp->n_instrs && rc == SHS_OK; i++) {
			shs_instr *in = comp->instrs[i];
			const shs_decision *d = &p->d[c][i];
			if (d->strategy && !strcmp(d->strategy, "hint") && in->sharding)
				continue; /* a Sharding custom call's own */
			if (p->keep_given && c == m->entry && in->sharding &&
			    (in->op == SHS_OP_PARAMETER || i == comp->root))
				continue;
			rc = keep_manual(&mm, m, c, i, d, &kept, e);
			if (rc == SHS_OK && !kept)
				rc = instr_sharding(p, m, in, d, &in->sharding, e);
			if (rc != SHS_OK)
				shs_err_prefix(e, "annotate: %s", in->name);
		}
	}
	if (rc == SHS_OK)
		m->num_partitions = devices;
	shs_manual_free(&mm);
	free(reducer);
	return rc;
}
