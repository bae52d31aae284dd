/* Gradient accumulation written into a module: the entry's data found, what each value holds
 * of the batch analysed, the loop over micro-batches written, and the result made a module of
 * its own (saved and loaded as protobuf) and verified. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "io.h"
#include "microbatch_internal.h"
#include "plan.h"

int64_t shs_microbatch_batch(const shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);
	int64_t batch = 0;

	for (uint32_t i = 0; c && i < c->n_instrs; i++) {
		const shs_instr *p = c->instrs[i];
		if (p->op != SHS_OP_PARAMETER || p->shape.type == SHS_TUPLE || !p->shape.rank ||
		    !shs_param_is_data(p))
			continue;
		if (batch && p->shape.dims[0] != batch)
			return 0;
		batch = p->shape.dims[0];
	}
	return batch;
}

int64_t shs_microbatch_count(const shs_module *m)
{
	const shs_computation *c = shs_module_entry(m);
	char name[SHS_ERRMSG_MAX];
	int64_t trips = 0;

	if (!c || !c->name)
		return 1;
	snprintf(name, sizeof(name), "%s.microbatch.body", c->name);
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *w = c->instrs[i];
		if (w->op == SHS_OP_WHILE && w->n_called == 2 && w->called[0] < m->n_comps &&
		    m->comps[w->called[0]]->name && !strcmp(m->comps[w->called[0]]->name, name) &&
		    shs_while_trip_count(m, c, w, &trips) && trips > 1)
			return trips;
	}
	return 1;
}

/* The entry's parameter leaves: the data's leading dim is the batch. */
static mb_leaf *entry_sig(const shs_module *m, uint32_t *n)
{
	const shs_computation *c = shs_module_entry(m);
	uint32_t count = 0, at = 0;
	mb_leaf *sig;

	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER)
			count += shs_shape_leaves(&c->instrs[i]->shape);
	sig = calloc(count + 1, sizeof(*sig));
	for (int64_t pn = 0; sig && at < count; pn++)
		for (uint32_t i = 0; i < c->n_instrs; i++) {
			const shs_instr *p = c->instrs[i];
			if (p->op != SHS_OP_PARAMETER || p->parameter_number != pn)
				continue;
			if (p->shape.type != SHS_TUPLE && p->shape.rank && shs_param_is_data(p))
				sig[at].kind = MB_BATCH;
			at += shs_shape_leaves(&p->shape);
		}
	*n = count;
	return sig;
}

/* Per instruction of c: the first of its uses when all are converts to one wider type (a
 * gradient in bf16 cast to its f32 weight's type, written once per use), else UINT32_MAX.
 * NULL when out of memory. */
static uint32_t *widening(const shs_computation *c)
{
	uint32_t *w = malloc((c->n_instrs + 1) * sizeof(*w));
	bool *mixed = calloc(c->n_instrs + 1, sizeof(*mixed));

	if (!w || !mixed) {
		free(w);
		free(mixed);
		return NULL;
	}
	memset(w, 0xff, (c->n_instrs + 1) * sizeof(*w));
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *ins = c->instrs[i];
		for (uint32_t k = 0; k < ins->n_operands; k++) {
			uint32_t o = ins->operands[k];
			const shs_instr *first = w[o] != UINT32_MAX ? c->instrs[w[o]] : NULL;
			bool widens = ins->op == SHS_OP_CONVERT && ins->n_operands == 1 &&
				      shs_elem_bits(ins->shape.type) >
					      shs_elem_bits(c->instrs[o]->shape.type);
			if (!widens || (first && first->shape.type != ins->shape.type))
				mixed[o] = true;
			else if (!first)
				w[o] = i;
		}
	}
	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (mixed[i])
			w[i] = UINT32_MAX;
	free(mixed);
	return w;
}

/* *out as a module of its own: nm's borrowed pointers copied through protobuf. */
static int own(const shs_module *m, const shs_module *nm, shs_module **out, shs_err *e)
{
	uint8_t *bytes = NULL;
	size_t len = 0;
	int rc = shs_proto_save(nm, m->from_hlo_proto, &bytes, &len, e);

	if (rc == SHS_OK)
		rc = shs_proto_load(bytes, len, "micro-batched module", out, e);
	free(bytes);
	if (rc != SHS_OK)
		return rc;
	(*out)->style = m->style;
	(*out)->source_format = m->source_format;
	(*out)->num_partitions = m->num_partitions;
	(*out)->replica_count = m->replica_count;
	rc = shs_module_verify(*out, e);
	if (rc != SHS_OK) {
		char why[SHS_ERRMSG_MAX];
		snprintf(why, sizeof(why), "%s", e->msg);
		shs_module_free(*out);
		*out = NULL;
		return shs_seterr(e, SHS_EINVAL, "micro-batches: the rewritten module does not "
				  "verify: %s", why);
	}
	return SHS_OK;
}

int shs_microbatch_rewrite(const shs_module *m, int64_t microbatches, shs_module **out,
			   shs_err *e)
{
	mb_ctx x = { .m = m, .mb = microbatches, .e = e };
	shs_module *nm = NULL;
	mb_leaf *sig;
	uint32_t n = 0, k = 0;
	int rc;

	*out = NULL;
	if (!shs_module_entry(m))
		return shs_seterr(e, SHS_EINVAL, "micro-batches: the module has no entry");
	x.batch = shs_microbatch_batch(m);
	if (microbatches < 1)
		return shs_seterr(e, SHS_EINVAL, "micro-batches: %lld is not a count",
				  (long long)microbatches);
	if (microbatches > 1 && x.batch <= 0)
		return shs_seterr(e, SHS_EINVAL, "micro-batches: no data parameter with a batch "
				  "dim (named batch, inputs or targets, or of integers)");
	if (microbatches > 1 && x.batch % microbatches)
		return shs_seterr(e, SHS_EINVAL, "micro-batches: the batch of %lld sequences does "
				  "not divide into %lld micro-batches", (long long)x.batch,
				  (long long)microbatches);
	if (microbatches == 1)
		return own(m, m, out, e);
	sig = entry_sig(m, &n);
	x.widen = widening(shs_module_entry(m));
	x.scale = UINT32_MAX;
	x.deferred = malloc((shs_module_entry(m)->n_instrs + 1) * sizeof(*x.deferred));
	if (!sig || !x.widen || !x.deferred) {
		free(sig);
		free(x.widen);
		free(x.deferred);
		return shs_seterr(e, SHS_ENOMEM, "micro-batches: out of memory");
	}
	memset(x.deferred, 0xff, (shs_module_entry(m)->n_instrs + 1) * sizeof(*x.deferred));
	rc = mb_analyse(&x, m->entry, sig, n, &k);
	free(sig);
	if (rc == SHS_OK)
		rc = mb_emit(&x, k, &nm);
	mb_ctx_free(&x);
	free(x.widen);
	free(x.deferred);
	if (rc == SHS_OK)
		rc = own(m, nm, out, e);
	shs_module_free(nm);
	if (rc == SHS_OK) /* the analysis's tolerated failures (a sum used after the loop) */
		memset(e, 0, sizeof(*e));
	return rc;
}
