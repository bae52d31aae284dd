/* Pipeline stages written into a scanned module: its layer loops found, the layer taken at the
 * micro-batch's shapes from the micro-batch rewrite, the pipelined program written as text and
 * read back, verified. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "microbatch.h"
#include "pipeline_internal.h"

/* The computation of mb that holds its layer loops: the loop over micro-batches' body, or the
 * entry when there is one micro-batch. */
static uint32_t loops_comp(const shs_module *mb, int64_t microbatches)
{
	char name[SHS_ERRMSG_MAX];

	if (microbatches <= 1)
		return mb->entry;
	snprintf(name, sizeof(name), "%s.microbatch.body", shs_module_entry(mb)->name);
	for (uint32_t c = 0; c < mb->n_comps; c++)
		if (mb->comps[c]->name && !strcmp(mb->comps[c]->name, name))
			return c;
	return mb->entry;
}

/* Which stacks the backward loop reads were written by the forward loop (x->saved_of), and
 * that nothing else reads them. */
static int link_saved(pp_ctx *x, shs_err *e)
{
	const shs_computation *c = x->m->comps[x->m->entry];
	const shs_instr *binit = c->instrs[c->instrs[x->bwd.instr]->operands[0]];

	for (uint32_t k = 0; k < PP_MAX_STATE; k++)
		x->saved_of[k] = UINT32_MAX;
	for (uint32_t k = 0; k < x->bwd.n; k++) {
		const shs_instr *v = c->instrs[binit->operands[k]];
		if (x->bwd.kind[k] == PP_KEPT && v->op == SHS_OP_GET_TUPLE_ELEMENT &&
		    v->n_operands == 1 && v->operands[0] == x->fwd.instr)
			x->saved_of[k] = (uint32_t)v->tuple_index;
	}
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *g = c->instrs[i];
		if (g->op != SHS_OP_GET_TUPLE_ELEMENT || g->n_operands != 1 ||
		    g->operands[0] != x->fwd.instr || x->fwd.kind[g->tuple_index] != PP_WRITTEN)
			continue;
		uint32_t binit_at = c->instrs[x->bwd.instr]->operands[0];
		for (uint32_t j = 0; j < c->n_instrs; j++)
			for (uint32_t k = 0; k < c->instrs[j]->n_operands; k++) {
				if (c->instrs[j]->operands[k] != i || j == binit_at)
					continue;
				return shs_seterr(e, SHS_EINVAL, "pipeline: %s, a stack the "
						  "forward layers save, is read outside the "
						  "backward loop", g->name);
			}
	}
	return SHS_OK;
}

/* The checks on the request and the shapes; fills x's counts. */
static int shapes(pp_ctx *x, shs_err *e)
{
	const shs_mesh *mesh = x->r->mesh;
	const shs_computation *c = x->m->comps[x->m->entry];
	const shs_instr *finit = c->instrs[c->instrs[x->fwd.instr]->operands[0]];
	const shs_shape *in = &c->instrs[finit->operands[x->fwd.carry]]->shape;
	const shs_shape *min = &x->mb->comps[x->mfwd.comp]->instrs[x->mfwd.instr]->shape;
	int64_t m = x->r->microbatches;

	x->devices = 1;
	for (uint32_t a = 0; a < mesh->n_axes; a++)
		x->devices *= mesh->sizes[a];
	x->stages = mesh->sizes[x->r->stage_axis];
	x->per_stage = x->devices / x->stages;
	x->trips = m + x->stages - 1;

	if (x->fwd.trips % x->stages)
		return shs_seterr(e, SHS_EINVAL, "pipeline: %lld layers do not split into %lld "
				  "stages", (long long)x->fwd.trips, (long long)x->stages);
	if (!in->rank || in->dims[0] % m ||
	    min->tuple[x->mfwd.carry].dims[0] * m != in->dims[0])
		return shs_seterr(e, SHS_EINVAL, "pipeline: the layers' input %s does not split "
				  "into %lld micro-batches along its first dim",
				  c->instrs[finit->operands[x->fwd.carry]]->name, (long long)m);
	if (x->mfwd.n != x->fwd.n || x->mbwd.n != x->bwd.n)
		return shs_seterr(e, SHS_EINVAL, "pipeline: the micro-batched layer loops differ");
	return SHS_OK;
}

int shs_pipeline_rewrite(const shs_module *m, const shs_pipeline_request *r, shs_module **out,
			 shs_err *e)
{
	pp_ctx x = { .m = m, .r = r };
	shs_module *mb = NULL;
	shs_buf b = { 0 };
	int rc;

	*out = NULL;
	if (!shs_module_entry(m) || !r->mesh || r->stage_axis != 0 || !r->mesh->n_axes ||
	    r->mesh->sizes[0] < 2 || r->microbatches < 1)
		return shs_seterr(e, SHS_EINVAL, "pipeline: needs stages on the mesh's first axis "
				  "and a micro-batch count");
	if ((rc = pp_find(m, m->entry, &x.fwd, &x.bwd, e)) != SHS_OK ||
	    (rc = link_saved(&x, e)) != SHS_OK)
		return rc;
	if ((rc = shs_microbatch_rewrite(m, r->microbatches, &mb, e)) != SHS_OK)
		return rc;
	x.mb = mb;
	rc = pp_find(mb, loops_comp(mb, r->microbatches), &x.mfwd, &x.mbwd, e);
	if (rc == SHS_OK)
		rc = shapes(&x, e);
	if (rc == SHS_OK)
		rc = pp_emit(&x, &b, e);
	if (rc == SHS_OK)
		rc = shs_text_load(b.data, b.len, "pipelined module", out, e);
	if (rc == SHS_OK) {
		(*out)->style = m->style;
		rc = shs_module_verify(*out, e);
		if (rc != SHS_OK) {
			shs_module_free(*out);
			*out = NULL;
		}
	}
	shs_buf_free(&b);
	shs_module_free(mb);
	return rc;
}

bool shs_pipeline_written(const shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t i = 0; c && i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_WHILE && c->instrs[i]->name &&
		    !strcmp(c->instrs[i]->name, "pp.e.fwd"))
			return true;
	return false;
}
