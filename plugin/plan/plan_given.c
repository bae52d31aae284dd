/* The shardings a module states on its entry parameters and root (jit's in and out shardings,
 * XLA's or in Shardy's and MHLO's frontend attributes): constraints the plan keeps, unless the
 * request ignores hints.
 * A parameter's becomes its fixed decision over the seed; the root's (or each element's of a
 * tuple root) pins what the instruction must make. annotate writes the given ones back as they
 * were (plan.h). */
#include <stdio.h>

#include "propagate_internal.h"
#include "sdy.h"

static void warn(const shs__prop *x, const shs_instr *in, const char *why)
{
	char msg[SHS_ERRMSG_MAX + 128];

	if (!x->r->warn)
		return;
	snprintf(msg, sizeof(msg), "%s: its sharding does not fit the mesh (%s); kept in the "
		 "output as given, the plan assumes its own", in->name, why[0] ? why : "sizes");
	x->r->warn(x->r->warn_user, msg);
}

/* The spec s gives instruction in on the request's mesh; false (warned) when it does not fit. */
static bool fits(const shs__prop *x, const shs_instr *in, const shs_sharding *s, shs_pspec *spec)
{
	shs_err why = { 0 };

	if (s->kind == SHS_SHARDING_TUPLE || in->shape.type == SHS_TUPLE)
		return false;
	if (shs__spec_from_sharding(&x->r->mesh, s, in->shape.rank, spec, &why) == SHS_OK &&
	    shs__spec_fits(spec, &in->shape, &x->r->mesh))
		return true;
	warn(x, in, why.msg);
	return false;
}

/* Pins instruction i of the entry to spec (a result its candidates must make). */
static int pin(shs__prop *x, uint32_t i, const shs_pspec *spec, shs_err *e)
{
	uint32_t c = x->m->entry;

	if (!shs__hint_room(x, c))
		return shs_seterr(e, SHS_ENOMEM, "plan: out of memory");
	x->hints[c][i] = *spec;
	x->hint_set[c][i] = x->pinned[c][i] = true;
	x->p->n_given++;
	return SHS_OK;
}

/* The sharding in states: its own, else the one in its frontend attributes (Shardy's
 * xla.sdy.sharding, mhlo.sharding); NULL (warned when unreadable) for none. */
static const shs_sharding *given(const shs__prop *x, const shs_instr *in)
{
	shs_sharding *s = NULL;
	shs_err why = { 0 };

	if (in->sharding)
		return in->sharding;
	if (shs_stated_sharding(x->m, in, x->p->arena, &s, &why) != SHS_OK && x->r->warn) {
		char msg[SHS_ERRMSG_MAX + 64];

		snprintf(msg, sizeof(msg), "%s; ignored", why.msg);
		x->r->warn(x->r->warn_user, msg);
	}
	return s;
}

int shs__given_shardings(shs__prop *x, shs_err *e)
{
	const shs_computation *c = shs_module_entry(x->m);
	const shs_instr *root = c->instrs[c->root];
	const shs_sharding *rs;
	shs_pspec spec;
	int rc = SHS_OK;

	if (x->r->ignore_hints)
		return SHS_OK;
	for (uint32_t i = 0; rc == SHS_OK && i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		shs_decision *d = &x->p->d[x->m->entry][i];

		const shs_sharding *gs = in->op == SHS_OP_PARAMETER ? given(x, in) : NULL;

		if (!gs || !fits(x, in, gs, &spec))
			continue;
		rc = shs_decision_set_specs(d, x->p->arena, &spec, 1, NULL, 0, NULL, 0);
		d->set = d->fixed = true;
		d->strategy = "given";
		snprintf(d->label, sizeof(d->label), "the module's sharding");
		x->p->n_given++;
	}
	if (rc != SHS_OK || root->op == SHS_OP_PARAMETER || !(rs = given(x, root)))
		return rc;
	if (rs->kind != SHS_SHARDING_TUPLE)
		return fits(x, root, rs, &spec) ? pin(x, c->root, &spec, e) : SHS_OK;
	if (root->op != SHS_OP_TUPLE || rs->n_tuple != root->n_operands)
		return SHS_OK;
	for (uint32_t k = 0; rc == SHS_OK && k < root->n_operands; k++) {
		const shs_instr *op = c->instrs[root->operands[k]];

		if (op->op != SHS_OP_PARAMETER && fits(x, op, &rs->tuple[k], &spec))
			rc = pin(x, root->operands[k], &spec, e);
	}
	return rc;
}
