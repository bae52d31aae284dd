/* When nothing fits: what would, each change searched on its own (more chips, more
 * recomputation) or bounded from the peak's split (fewer tokens per step). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "search_internal.h"

/* The cluster spec describes with f times its chips into *out (text in buf): more chips per
 * slice (the standard slice of that many), else more slices of the same ones. false when the
 * catalog can make neither. */
static bool bigger(const shs_hw_catalog *cat, const shs_cluster_spec *spec, const shs_cluster *c,
		   int64_t f, shs_cluster_spec *out, char *buf, size_t cap)
{
	int64_t slices = spec->slices > 0 ? spec->slices : 1;
	shs_cluster probe;
	shs_err e = { 0 };

	*out = *spec;
	out->mesh = NULL;
	out->topology = NULL;
	out->devices = c->devices * f;
	if (shs_cluster_make(cat, out, &probe, &e) == SHS_OK) {
		if (slices > 1)
			snprintf(buf, cap, "devices=%lld in %lld slices", (long long)out->devices,
				 (long long)slices);
		else
			snprintf(buf, cap, "devices=%lld", (long long)out->devices);
		return true;
	}
	if (c->hw.gpu)
		return false;
	out->topology = spec->topology;
	out->slices = slices * f;
	if (shs_cluster_make(cat, out, &probe, &e) != SHS_OK)
		return false;
	snprintf(buf, cap, "devices=%lld in %lld slices%s%s", (long long)out->devices,
		 (long long)out->slices, spec->topology ? " of " : "",
		 spec->topology ? spec->topology : "");
	return true;
}

/* The best plan of a search with options o on spec, into *best when it fits. */
static int fits_with(shs_host *h, const shs_module *m, const shs_hw_catalog *cat,
		     const shs_cluster_spec *spec, const shs_search_options *o,
		     shs_search_try *best, bool *fits, shs_err *e)
{
	shs_search_result r;
	shs_err quiet = { 0 };
	int rc = shs_search(h, m, cat, spec, o, &r, &quiet);

	*fits = false;
	if (rc == SHS_ENOMEM)
		return shs_seterr(e, SHS_ENOMEM, "%s", quiet.msg);
	if (rc == SHS_OK && r.best.fits) {
		*best = r.best;
		*fits = true;
	}
	if (rc == SHS_OK)
		shs_search_result_free(&r);
	return SHS_OK;
}

/* Doubles the chips until the best plan fits, from the fewest that could hold the whole model
 * state in their HBM together. */
static int more_chips(shs_host *h, const shs_module *m, const shs_hw_catalog *cat,
		      const shs_cluster_spec *spec, const shs_search_options *o,
		      shs_search_result *r, shs_err *e)
{
	shs_search_advice *a = &r->advice;
	shs_search_options so = *o;
	double weights, optimizer, need;
	int64_t f = 2;
	int rc = SHS_OK;

	so.mesh = NULL; /* a pinned mesh does not lay out on more chips */
	so.warn = NULL; /* the first search said them */
	shs__search_model_state(m, &weights, &optimizer);
	/* weights, gradients and Adam state: the least any plan keeps, summed over the chips */
	need = (2 * weights + optimizer) / r->eval.hbm_bytes;
	while (f < need / (double)r->cluster.devices && f < ((int64_t)1 << SHS_SEARCH_ADVICE_DOUBLINGS))
		f *= 2;
	for (; f <= ((int64_t)1 << SHS_SEARCH_ADVICE_DOUBLINGS) && rc == SHS_OK; f *= 2) {
		shs_cluster_spec big;
		bool fits = false;
		if (!bigger(cat, spec, &r->cluster, f, &big, a->cluster, sizeof(a->cluster)))
			continue;
		a->devices_tried = big.devices;
		rc = fits_with(h, m, cat, &big, &so, &a->more_chips, &fits, e);
		if (fits) {
			a->devices = big.devices;
			break;
		}
	}
	return rc;
}

/* The sequences that would fit: the peak less the model state scales with the tokens. */
static void fewer_tokens(const shs_module *m, shs_search_result *r)
{
	shs_search_advice *a = &r->advice;
	const shs_eval *ev = &r->eval;
	double rest, room;

	a->sequences = shs__search_model_of(m).batch;
	a->state_bytes = ev->params_bytes + ev->grads_bytes + ev->optimizer_bytes;
	rest = ev->memory_bytes - a->state_bytes;
	room = ev->hbm_bytes - a->state_bytes;
	a->fit_fraction = rest > 0 && room > 0 ? room / rest : 0;
	if (a->fit_fraction > 1)
		a->fit_fraction = 1;
	a->fit_sequences = (int64_t)floor(a->fit_fraction * (double)a->sequences);
}

int shs_search_advise(shs_host *h, const shs_module *m, const shs_hw_catalog *cat,
		      const shs_cluster_spec *spec, const shs_search_options *o,
		      shs_search_result *r, shs_err *e)
{
	shs_search_advice *a = &r->advice;
	int rc = SHS_OK;

	memset(a, 0, sizeof(*a));
	if (r->best.fits || !r->plan)
		return SHS_OK;
	a->given = true;
	fewer_tokens(m, r);
	if (o->fixed_remat && o->eval.remat != SHS_REMAT_FULL) {
		shs_search_options so = *o;
		so.fixed_remat = false;
		so.warn = NULL;
		rc = fits_with(h, m, cat, spec, &so, &a->with_remat, &a->remat_fits, e);
	}
	if (rc == SHS_OK)
		rc = more_chips(h, m, cat, spec, o, r, e);
	return rc;
}
