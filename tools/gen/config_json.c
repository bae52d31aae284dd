/* JSON config files: an optional "preset" base, then keys of the shared key table. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "config_keys.h"

/* Room for any int64 or any double printed with "%.17g", and its NUL. */
enum { NUMBER_TEXT_MAX = 40 };

static const char *const PRESET_MEMBER = "preset";

/* The smallest double above every int64 (2^63); doubles below -2^63 are out of range too. */
static const double INT64_BOUND = 9223372036854775808.0;

/* What a JSON value of a key must be, for error messages. */
static const char *expected(shs__gen_key_type type)
{
	switch (type) {
	case SHS__KEY_INT: return "an integer";
	case SHS__KEY_REAL: return "a number";
	case SHS__KEY_BOOL: return "true or false";
	case SHS__KEY_DTYPE: return "a string (bf16 or f32-master)";
	case SHS__KEY_NAME: return "a string";
	case SHS__KEY_CHOICE: return "a string";
	}
	return "a value";
}

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real";
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	case JSON_NULL: return "null";
	}
	return "a value";
}

static void print_integer(const json_t *v, char text[NUMBER_TEXT_MAX])
{
	snprintf(text, NUMBER_TEXT_MAX, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
}

/* The text form of v for a key of type type into text; false when v has the wrong JSON type
 * (a real is an integer only when it is integral). */
static bool to_text(shs__gen_key_type type, const json_t *v, char text[NUMBER_TEXT_MAX])
{
	switch (type) {
	case SHS__KEY_INT:
		if (json_is_integer(v)) {
			print_integer(v, text);
			return true;
		}
		if (json_is_real(v)) {
			double d = json_real_value(v);

			if (!(d >= -INT64_BOUND && d < INT64_BOUND) || (double)(int64_t)d != d)
				return false;
			snprintf(text, NUMBER_TEXT_MAX, "%" PRId64, (int64_t)d);
			return true;
		}
		return false;
	case SHS__KEY_REAL:
		if (json_is_integer(v))
			print_integer(v, text);
		else if (json_is_real(v))
			snprintf(text, NUMBER_TEXT_MAX, "%.17g", json_real_value(v));
		else
			return false;
		return true;
	case SHS__KEY_BOOL:
		if (!json_is_boolean(v))
			return false;
		snprintf(text, NUMBER_TEXT_MAX, "%s", json_is_true(v) ? "true" : "false");
		return true;
	case SHS__KEY_DTYPE:
	case SHS__KEY_NAME:
	case SHS__KEY_CHOICE:
		return false; /* strings are passed as they are, not through text */
	}
	return false;
}

/* Applies member key = v to *c; errors name path and the member. */
static int apply_member(const char *path, const char *key, const json_t *v, shs_gen_config *c,
			shs_err *e)
{
	const shs__gen_key *k = shs__gen_key_find(key);
	char text[NUMBER_TEXT_MAX];
	const char *value = text;
	int rc;

	if (!k) {
		shs__gen_key_unknown(key, e);
		return shs_err_prefix(e, "%s: member '%s'", path, key);
	}
	if (k->type == SHS__KEY_DTYPE || k->type == SHS__KEY_NAME || k->type == SHS__KEY_CHOICE) {
		value = json_string_value(v);
		if (value && strlen(value) != json_string_length(v))
			value = NULL; /* an embedded NUL: not a name or dtype either */
	} else if (!to_text(k->type, v, text)) {
		value = NULL;
	}
	if (!value) {
		if (json_is_real(v))
			return shs_seterr(e, SHS_EINVAL, "%s: member '%s': must be %s (got %.17g)",
					  path, key, expected(k->type), json_real_value(v));
		return shs_seterr(e, SHS_EINVAL, "%s: member '%s': must be %s (got %s)", path, key,
				  expected(k->type), json_type_name(v));
	}
	rc = shs__gen_key_apply(k, value, c, e);
	if (rc != SHS_OK)
		shs_err_prefix(e, "%s: member '%s'", path, key);
	return rc;
}

/* The base of the config: the preset the object names, else *base as it is. */
static int load_base(const char *path, const json_t *root, shs_gen_config *base, shs_err *e)
{
	const json_t *p = json_object_get(root, PRESET_MEMBER);
	int rc;

	if (!p)
		return SHS_OK;
	if (!json_is_string(p))
		return shs_seterr(e, SHS_EINVAL, "%s: member '%s': must be a string (got %s)", path,
				  PRESET_MEMBER, json_type_name(p));
	rc = shs_gen_preset(json_string_value(p), base, e);
	if (rc != SHS_OK)
		shs_err_prefix(e, "%s: member '%s'", path, PRESET_MEMBER);
	return rc;
}

static int apply_object(const char *path, json_t *root, shs_gen_config *out, shs_err *e)
{
	shs_gen_config c = *out;
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(root))
		return shs_seterr(e, SHS_EINVAL, "%s: the top level must be an object (got %s)",
				  path, json_type_name(root));
	rc = load_base(path, root, &c, e);
	if (rc != SHS_OK)
		return rc;
	json_object_foreach(root, key, v) {
		if (!strcmp(key, PRESET_MEMBER))
			continue;
		rc = apply_member(path, key, v, &c, e);
		if (rc != SHS_OK)
			return rc;
	}
	*out = c;
	return SHS_OK;
}

int shs_gen_config_load_json(const char *path, shs_gen_config *out, shs_err *e)
{
	FILE *f = fopen(path, "rb");
	json_error_t jerr;
	json_t *root;
	int rc;

	if (!f)
		return shs_seterr(e, SHS_EIO, "%s: %s", path, strerror(errno));
	errno = 0;
	root = json_loadf(f, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root) {
		if (ferror(f))
			rc = shs_seterr(e, SHS_EIO, "%s: cannot read: %s", path,
					errno ? strerror(errno) : "read error");
		else
			rc = shs_seterr(e, SHS_EPARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column,
					jerr.text);
		goto out_close;
	}
	rc = apply_object(path, root, out, e);
	json_decref(root);
out_close:
	fclose(f);
	return rc;
}

/* One key's value as JSON. */
static json_t *key_json(const shs__gen_key *k, const shs_gen_config *c)
{
	const char *field = (const char *)c + k->offset;

	switch (k->type) {
	case SHS__KEY_INT: return json_integer(*(const int64_t *)(const void *)field);
	case SHS__KEY_REAL: return json_real(*(const double *)(const void *)field);
	case SHS__KEY_BOOL: return json_boolean(*(const bool *)(const void *)field);
	case SHS__KEY_DTYPE:
		return json_string(*(const shs_gen_dtype *)(const void *)field == SHS_GEN_F32_MASTER ?
					   "f32-master" : "bf16");
	case SHS__KEY_NAME: return json_string(field);
	case SHS__KEY_CHOICE: {
		int v = *(const int *)(const void *)field;
		size_t n = 0;

		while (k->choices[n])
			n++;
		return json_string(v >= 0 && (size_t)v < n ? k->choices[v] : "?");
	}
	}
	return NULL;
}

json_t *shs_gen_config_json(const shs_gen_config *c)
{
	json_t *o = json_object();
	size_t n;
	const shs__gen_key *keys = shs__gen_keys(&n);
	int bad = !o || json_object_set_new(o, "kind", json_string(c->kind == SHS_GEN_MLP_ONLY ?
									 "mlp-only" : "transformer"));

	for (size_t i = 0; !bad && i < n; i++)
		bad = json_object_set_new(o, keys[i].name, key_json(&keys[i], c));
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}
