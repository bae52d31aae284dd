/* libFuzzer target: plan files (shs_plan_load_json), read into a request without a mesh and
 * into one with a mesh, load or fail with a message, leaving the request unchanged; a plan that
 * loaded, written back as a plan file, loads as the same plan. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "plan.h"

/* The base plan of r as a plan file names it, or NULL (rules only). */
static const char *base_name(const shs_plan_request *r)
{
	switch (r->kind) {
	case SHS_PLAN_DP: return "dp";
	case SHS_PLAN_FSDP: return r->fsdp_state_only ? "zero1" : "fsdp";
	case SHS_PLAN_TP: return "tp";
	case SHS_PLAN_FSDP_TP: return r->fsdp_state_only ? "zero1+tp" : "fsdp+tp";
	case SHS_PLAN_RULES: return NULL;
	}
	return NULL;
}

/* {"match": ..., "spec": [[axis, ...] or null, ...]} of rule k. */
static json_t *rule_json(const shs_plan_request *r, const shs_plan_rule *rule)
{
	json_t *o = json_object(), *spec = json_array();
	bool ok = o && spec && !json_object_set_new(o, "match", json_string(rule->pattern));

	for (uint32_t d = 0; ok && d < rule->spec.rank; d++) {
		json_t *dim = rule->spec.dims[d].n ? json_array() : json_null();
		for (uint32_t j = 0; dim && j < rule->spec.dims[d].n; j++)
			ok = ok && !json_array_append_new(dim, json_string(
				r->mesh.names[rule->spec.dims[d].axes[j]]));
		ok = ok && !json_array_append_new(spec, dim);
	}
	ok = ok && !json_object_set_new(o, "spec", spec);
	fuzz_require(ok, "memory for a rule written back", rule->pattern);
	return o;
}

/* r as a plan file: its mesh, base, rules and activation rules. */
static char *plan_text(const shs_plan_request *r)
{
	json_t *root = json_object(), *mesh = json_object(), *rules = json_array(),
	       *acts = json_array();
	bool ok = root && mesh && rules && acts;
	char *text;

	for (uint32_t k = 0; ok && k < r->mesh.n_axes; k++)
		ok = !json_object_set_new(mesh, r->mesh.names[k], json_integer(r->mesh.sizes[k]));
	for (uint32_t k = 0; ok && k < r->n_rules; k++)
		ok = !json_array_append_new(r->rules[k].activation ? acts : rules,
					    rule_json(r, &r->rules[k]));
	ok = ok && !json_object_set_new(root, "mesh", mesh) &&
	     !json_object_set_new(root, "rules", rules) &&
	     !json_object_set_new(root, "activations", acts) &&
	     (!base_name(r) || !json_object_set_new(root, "base", json_string(base_name(r))));
	text = ok ? json_dumps(root, JSON_COMPACT) : NULL;
	fuzz_require(text != NULL, "memory for a plan written back", NULL);
	json_decref(root);
	return text;
}

static bool same_plan(const shs_plan_request *x, const shs_plan_request *y)
{
	if (x->kind != y->kind || x->fsdp_state_only != y->fsdp_state_only ||
	    x->n_rules != y->n_rules || x->mesh.n_axes != y->mesh.n_axes)
		return false;
	for (uint32_t k = 0; k < x->mesh.n_axes; k++)
		if (strcmp(x->mesh.names[k], y->mesh.names[k]) ||
		    x->mesh.sizes[k] != y->mesh.sizes[k])
			return false;
	for (uint32_t k = 0; k < x->n_rules; k++) {
		const shs_plan_rule *a = &x->rules[k], *b = &y->rules[k];
		if (strcmp(a->pattern, b->pattern) || a->activation != b->activation ||
		    !shs_spec_equal(&a->spec, &b->spec))
			return false;
	}
	return true;
}

/* r (loaded) written as a plan file loads into an empty request as the same plan. */
static void check_written(const shs_plan_request *r)
{
	char *text = plan_text(r);
	shs_plan_request *back = calloc(1, sizeof(*back));
	shs_err e = { 0 };
	int rc;

	fuzz_require(back != NULL, "memory for a request", NULL);
	rc = shs_plan_load_json(back, fuzz_as_file((const uint8_t *)text, strlen(text)), &e);
	fuzz_require(rc == SHS_OK, "a written plan loads back", e.msg);
	fuzz_require(same_plan(r, back), "the plan loads back the same", text);
	free(back);
	free(text);
}

/* Loads data into r (a mesh or none); a failure leaves r as it was. */
static void check_load(shs_plan_request *r, const uint8_t *data, size_t size)
{
	shs_plan_request *before = malloc(sizeof(*before));
	shs_err e = { 0 };
	int rc;

	fuzz_require(before != NULL, "memory for a request", NULL);
	memcpy(before, r, sizeof(*r));
	rc = shs_plan_load_json(r, fuzz_as_file(data, size), &e);
	fuzz_check_failure("shs_plan_load_json", rc, &e);
	if (rc != SHS_OK)
		fuzz_require(!memcmp(before, r, sizeof(*r)), "a failed load leaves the request",
			     e.msg);
	else
		check_written(r);
	free(before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shs_plan_request *bare = calloc(1, sizeof(*bare)), *meshed = calloc(1, sizeof(*meshed));
	shs_err e = { 0 };

	fuzz_require(bare && meshed, "memory for two requests", NULL);
	fuzz_require(shs_plan_parse_mesh(meshed, "data=2,fsdp=4,tensor=2,expert=2", &e) == SHS_OK,
		     "the preset mesh parses", e.msg);
	check_load(bare, data, size);
	check_load(meshed, data, size);
	free(meshed);
	free(bare);
	return 0;
}
