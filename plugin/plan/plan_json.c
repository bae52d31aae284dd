/* Plan files: a mesh, a base plan and rules mapping parameter paths to shardings (JSON). */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "plan_internal.h"

static int bad(shs_err *e, const char *path, const char *fmt, const char *what)
{
	char msg[SHS_ERRMSG_MAX];

	snprintf(msg, sizeof(msg), fmt, what);
	return shs_seterr(e, SHS_EINVAL, "%s: %s", path, msg);
}

/* The mesh axes the named plans give a role (seed.c, plan.c): an axis of another name does
 * something only where a rule names it. */
static const char *const role_axes[] = { "data", "fsdp", "tensor", "context", "sequence",
					 "expert", "stage", NULL };

/* The members each object may have: the top level's, and a rule's. */
static const char *const top_members[] = { "mesh", "base", "rules", "activations", NULL };
static const char *const rule_members[] = { "match", "spec", NULL };

static bool listed(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

/* The first member of object o not in allowed, or NULL (a typo such as "rule" would otherwise
 * leave the plan without its rules, silently). */
static const char *unknown_member(const json_t *o, const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)o, key, v)
		if (!listed(allowed, key))
			return key;
	return NULL;
}

/* An axis name: a letter or '_', then letters, digits and '_' (no '=', ',' or '@' to splice
 * into the mesh's text). */
static bool plain_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

/* "mesh": {"fsdp": 16, "tensor": 4} into r (unless the caller gave one). */
static int load_mesh(shs_plan_request *r, const json_t *mesh, const char *path, shs_err *e)
{
	char text[512] = "";
	size_t used = 0;
	const char *key;
	json_t *v;

	if (!json_is_object(mesh))
		return bad(e, path, "member '%s' must be an object of axis sizes", "mesh");
	json_object_foreach((json_t *)mesh, key, v) {
		int n;
		if (!plain_name(key))
			return bad(e, path, "mesh axis '%s' is no axis name (letters, digits, '_')",
				   key);
		if (!json_is_integer(v))
			return bad(e, path, "mesh axis '%s' must have an integer size", key);
		n = snprintf(text + used, sizeof(text) - used, "%s%s=%lld", used ? "," : "", key,
			     (long long)json_integer_value(v));
		if (n < 0 || (size_t)n >= sizeof(text) - used)
			return bad(e, path, "member '%s' is too long", "mesh");
		used += (size_t)n;
	}
	if (shs_plan_parse_mesh(r, text, e) != SHS_OK)
		return shs_err_prefix(e, "%s", path);
	return SHS_OK;
}

/* One dim of a rule's spec: null, "axis" or ["a", "b"]. */
static int load_dim(shs_plan_request *r, shs_pspec *spec, uint32_t d, const json_t *v,
		    const char *path, const char *pattern, shs_err *e)
{
	size_t n = json_is_array(v) ? json_array_size(v) : 1;

	if (json_is_null(v))
		return SHS_OK;
	if (!json_is_string(v) && !json_is_array(v))
		return bad(e, path, "rule '%s': each dim must be null, an axis name or a list of "
			   "axis names", pattern);
	for (size_t k = 0; k < n; k++) {
		const json_t *a = json_is_array(v) ? json_array_get(v, k) : v;
		int ax = json_is_string(a) ? shs_mesh_axis(&r->mesh, json_string_value(a)) : -1;
		if (ax < 0)
			return bad(e, path, "rule '%s' names an axis the mesh does not have",
				   pattern);
		shs__spec_add(spec, d, ax);
	}
	return SHS_OK;
}

static int load_rule(shs_plan_request *r, const json_t *rule, const char *path,
		     const char *member, shs_err *e)
{
	const json_t *match = json_object_get(rule, "match"), *spec = json_object_get(rule, "spec");
	shs_plan_rule *out;
	int rc = SHS_OK;

	if (!json_is_object(rule) || !json_is_string(match) || !json_is_array(spec))
		return bad(e, path, "each of '%s' needs \"match\" (a glob) and \"spec\" (a list)",
			   member);
	if (unknown_member(rule, rule_members))
		return bad(e, path, "a rule has the unknown member '%s' (known: match, spec)",
			   unknown_member(rule, rule_members));
	if (r->n_rules == SHS_PLAN_MAX_RULES)
		return bad(e, path, "more than %s rules", "256");
	if (strlen(json_string_value(match)) >= sizeof(out->pattern))
		return bad(e, path, "rule pattern '%s' is too long", json_string_value(match));
	if (json_array_size(spec) > SHS_PLUGIN_MAX_RANK)
		return bad(e, path, "rule '%s' has too many dims", json_string_value(match));
	out = &r->rules[r->n_rules];
	memset(out, 0, sizeof(*out));
	snprintf(out->pattern, sizeof(out->pattern), "%s", json_string_value(match));
	out->activation = !strcmp(member, "activations");
	out->spec.rank = (uint32_t)json_array_size(spec);
	for (uint32_t d = 0; d < out->spec.rank && rc == SHS_OK; d++)
		rc = load_dim(r, &out->spec, d, json_array_get(spec, d), path, out->pattern, e);
	if (rc == SHS_OK)
		r->n_rules++;
	return rc;
}

/* Every axis of the file's mesh has a role in the named plans or is named by a rule: one that
 * is neither (a typo, "bogus": 8) would split nothing and only look like a plan. */
static int axes_used(const shs_plan_request *r, const char *path, shs_err *e)
{
	for (uint32_t a = 0; a < r->mesh.n_axes; a++) {
		bool used = listed(role_axes, r->axis_names[a]);
		for (uint32_t k = 0; k < r->n_rules && !used; k++)
			for (uint32_t d = 0; d < r->rules[k].spec.rank && !used; d++)
				for (uint32_t j = 0; j < r->rules[k].spec.dims[d].n && !used; j++)
					used = r->rules[k].spec.dims[d].axes[j] == a;
		if (!used)
			return bad(e, path, "mesh axis '%s' has no role (data, fsdp, tensor, "
				   "context, sequence, expert, stage) and no rule names it",
				   r->axis_names[a]);
	}
	return SHS_OK;
}

int shs_plan_load_json(shs_plan_request *r, const char *path, shs_err *e)
{
	shs_plan_request copy = *r;
	json_error_t err;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err), *rules, *base, *mesh;
	int rc = SHS_OK;

	if (!root) { /* without jansson's "near 'TOKEN'", the file's own bytes */
		char *near = strstr(err.text, " near '");
		if (near && err.line >= 0)
			*near = '\0';
		return shs_seterr(e, err.line < 0 ? SHS_EIO : SHS_EPARSE, "%s:%d:%d: %s", path,
				  err.line, err.column, err.text);
	}
	if (!json_is_object(root)) {
		rc = bad(e, path, "the top level must be an %s", "object");
		goto done;
	}
	if (unknown_member(root, top_members)) {
		rc = bad(e, path, "unknown member '%s' (known: mesh, base, rules, activations)",
			 unknown_member(root, top_members));
		goto done;
	}
	copy.kind = SHS_PLAN_RULES;
	copy.n_rules = 0;
	mesh = json_object_get(root, "mesh");
	if (mesh && !copy.mesh.n_axes)
		rc = load_mesh(&copy, mesh, path, e);
	if (rc == SHS_OK && !copy.mesh.n_axes)
		rc = bad(e, path, "no mesh: give --mesh or a \"%s\" member", "mesh");
	base = json_object_get(root, "base");
	if (rc == SHS_OK && base) {
		rc = json_is_string(base) ? shs_plan_parse_kind(&copy, json_string_value(base), e)
					  : bad(e, path, "member '%s' must be a plan name", "base");
		if (rc != SHS_OK && json_is_string(base))
			shs_err_prefix(e, "%s", path);
	}
	for (uint32_t m = 0; m < 2 && rc == SHS_OK; m++) {
		const char *member = m ? "activations" : "rules";
		rules = json_object_get(root, member);
		if (rules && !json_is_array(rules))
			rc = bad(e, path, "member '%s' must be a list", member);
		for (size_t k = 0; rc == SHS_OK && rules && k < json_array_size(rules); k++)
			rc = load_rule(&copy, json_array_get(rules, k), path, member, e);
	}
	if (rc == SHS_OK && mesh)
		rc = axes_used(&copy, path, e);
	if (rc == SHS_OK) {
		*r = copy;
		for (uint32_t k = 0; k < r->mesh.n_axes; k++)
			r->mesh.names[k] = r->axis_names[k];
	}
done:
	json_decref(root);
	return rc;
}
