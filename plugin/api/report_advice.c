/* When nothing fits, what would: one line for errors, a block of the report and its JSON; and
 * the memory verdict of an evaluation (fits, tight, does not fit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static const double GIB = 1024.0 * 1024.0 * 1024.0;

bool shs_eval_tight(const shs_eval *ev)
{
	return ev->fits && ev->memory_bytes > (1 - SHS_REPORT_TIGHT) * ev->hbm_bytes;
}

const char *shs_eval_fit_text(const shs_eval *ev)
{
	return !ev->fits ? "does not fit" :
	       shs_eval_tight(ev) ? "fits, tight: within 3 % of HBM" : "fits";
}

/* "MESH (PLAN, remat R), S s per step, M GiB" of a candidate, into buf. */
static void try_text(const shs_search_try *t, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s (%s, remat %s), %.4g s per step, %.2f GiB", t->mesh, t->plan,
		 shs_remat_name(t->remat), t->step_time_s, t->memory_bytes / GIB);
}

void shs_advice_summary(const shs_search_result *r, char *buf, size_t cap)
{
	const shs_search_advice *a = &r->advice;
	char t[SHS_REPORT_ADVICE_TEXT];
	size_t n;

	n = (size_t)snprintf(buf, cap, "nothing fits in HBM: the plan needing least memory (%s, "
			     "%s, remat %s) takes %.2f GiB of %.2f GiB per device; would fit:",
			     r->best.mesh, r->best.plan, shs_remat_name(r->best.remat),
			     r->eval.memory_bytes / GIB, r->eval.hbm_bytes / GIB);
	if (a->devices) {
		try_text(&a->more_chips, t, sizeof(t));
		n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0,
				      " %lld chips, %s;", (long long)a->devices, t);
	}
	if (a->remat_fits) {
		try_text(&a->with_remat, t, sizeof(t));
		n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0,
				      " more recomputation, %s;", t);
	}
	if (a->fit_sequences)
		n += (size_t)snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0,
				      " at most about %lld of %lld sequences per step;",
				      (long long)a->fit_sequences, (long long)a->sequences);
	if (!a->devices && !a->remat_fits && !a->fit_sequences)
		snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0,
			 " nothing found: not up to %lld chips, and the model state alone is over "
			 "the HBM", (long long)a->devices_tried);
	else if (n < cap && n > 0)
		buf[n - 1] = '\0'; /* the last ';' */
}

void shs_advice_report_print(FILE *out, const shs_search_result *r)
{
	const shs_search_advice *a = &r->advice;
	char t[SHS_REPORT_ADVICE_TEXT];

	if (!a->given)
		return;
	fprintf(out, "what would fit  (each change on its own)\n");
	if (a->devices) {
		try_text(&a->more_chips, t, sizeof(t));
		fprintf(out, "  more chips    %s: %s\n", a->cluster, t);
	} else {
		fprintf(out, "  more chips    none up to %lld chips\n", (long long)a->devices_tried);
	}
	if (a->remat_fits) {
		try_text(&a->with_remat, t, sizeof(t));
		fprintf(out, "  recomputation %s\n", t);
	}
	if (!a->sequences)
		fprintf(out, "  fewer tokens  no token batch [sequences, length] among the inputs\n");
	else if (!a->fit_sequences)
		fprintf(out, "  fewer tokens  no: the model state alone takes %.2f GiB of %.2f GiB per "
			"device\n", a->state_bytes / GIB, r->eval.hbm_bytes / GIB);
	else
		fprintf(out, "  fewer tokens  at most about %lld of %lld sequences per step (%.1f %% of "
			"the tokens; what is not model state, %.2f GiB per device, scales with "
			"them); step time not predicted: the module fixes its batch\n",
			(long long)a->fit_sequences, (long long)a->sequences,
			100 * a->fit_fraction, (r->eval.memory_bytes - a->state_bytes) / GIB);
}

json_t *shs_mesh_json_of(const char *layout)
{
	json_t *o = json_object();
	const char *p = layout;

	while (o && p && *p) {
		char name[64];
		size_t n = strcspn(p, "=,");
		long long size = 0;
		if (p[n] == '=' && n < sizeof(name)) {
			memcpy(name, p, n);
			name[n] = '\0';
			size = strtoll(p + n + 1, NULL, 10);
			json_object_set_new(o, name, json_integer(size));
		}
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return o;
}

json_t *shs_try_report_json(const shs_search_try *t)
{
	json_t *o = json_object();

	json_object_set_new(o, "mesh", shs_mesh_json_of(t->mesh));
	json_object_set_new(o, "layout", json_string(t->mesh));
	json_object_set_new(o, "plan", json_string(t->plan));
	json_object_set_new(o, "remat", json_string(shs_remat_name(t->remat)));
	json_object_set_new(o, "step_time_s", json_real(t->step_time_s));
	json_object_set_new(o, "memory_bytes_per_device", json_real(t->memory_bytes));
	json_object_set_new(o, "fits", json_boolean(t->fits));
	return o;
}

json_t *shs_advice_report_json(const shs_search_result *r)
{
	const shs_search_advice *a = &r->advice;
	json_t *o = json_object(), *chips = json_object(), *tokens = json_object();

	json_object_set_new(chips, "devices_tried", json_integer(a->devices_tried));
	if (a->devices) {
		json_object_set_new(chips, "devices", json_integer(a->devices));
		json_object_set_new(chips, "cluster", json_string(a->cluster));
		json_object_set_new(chips, "best", shs_try_report_json(&a->more_chips));
	}
	json_object_set_new(o, "more_chips", chips);
	json_object_set_new(o, "more_recomputation",
			    a->remat_fits ? shs_try_report_json(&a->with_remat) : json_null());
	json_object_set_new(tokens, "sequences", json_integer(a->sequences));
	json_object_set_new(tokens, "fit_sequences", json_integer(a->fit_sequences));
	json_object_set_new(tokens, "fit_fraction", json_real(a->fit_fraction));
	json_object_set_new(tokens, "state_bytes_per_device", json_real(a->state_bytes));
	json_object_set_new(o, "fewer_tokens", tokens);
	return o;
}
