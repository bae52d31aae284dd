/* The shardings an instruction states in its frontend attributes: Shardy's xla.sdy.sharding
 * (#sdy.sharding<@mesh, [{"x"}, {}]>, #sdy.sharding_per_value<[<...>, ...]>, the mesh from the
 * module's xla.sdy.meshes or inline) and mhlo.sharding (XLA's own text), read as XLA's
 * NamedSharding by rewriting Shardy's text into XLA's form. */
#include "sdy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_VALUES = 64 };

static const char *attr(const shs_attr_kv *kv, uint32_t n, const char *key)
{
	for (uint32_t k = 0; k < n; k++)
		if (kv[k].key && !strcmp(kv[k].key, key))
			return kv[k].value;
	return NULL;
}

/* The end of the bracketed text opening at s[0] ('<', '[' or '{'), past its closing bracket;
 * NULL when it does not close. Strings in double quotes are skipped. */
static const char *closing(const char *s)
{
	int depth = 0;

	for (; *s; s++) {
		if (*s == '"') {
			for (s++; *s && *s != '"'; s++)
				s += s[0] == '\\' && s[1];
			if (!*s)
				return NULL;
		} else if (*s == '<' || *s == '[' || *s == '{' || *s == '(') {
			depth++;
		} else if (*s == '>' || *s == ']' || *s == '}' || *s == ')') {
			if (--depth == 0)
				return s + 1;
		}
	}
	return NULL;
}

/* Appends Shardy's text s[0..n) in XLA's form: "name" as 'name', priorities (p0) dropped. */
static void put_body(shs_buf *b, const char *s, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (s[k] == '"') {
			shs_buf_putc(b, '\'');
			continue;
		}
		if (s[k] == 'p' && k && s[k - 1] == '}') {
			while (k + 1 < n && s[k + 1] >= '0' && s[k + 1] <= '9')
				k++;
			continue;
		}
		shs_buf_putc(b, s[k]);
	}
}

/* The mesh `<["x"=2, "y"=4]>` or `<[], device_ids=[0]>` at s (just past "mesh"), in XLA's form;
 * *dims_too false for a maximal mesh (its dimensions are not printed). */
static int put_mesh(shs_buf *b, const char *s, bool *maximal)
{
	const char *end = closing(s), *ids;

	if (*s != '<' || !end)
		return SHS_EPARSE;
	ids = strstr(s, "device_ids=[");
	*maximal = ids && ids < end && !strncmp(s, "<[]", 3);
	if (*maximal) {
		shs_buf_printf(b, "maximal_mesh[device_id=%lld]", strtoll(ids + 12, NULL, 10));
		return SHS_OK;
	}
	shs_buf_puts(b, "mesh");
	if (ids && ids < end) {
		const char *ids_end = strchr(ids, ']');

		if (!ids_end || ids_end > end)
			return SHS_EPARSE;
		put_body(b, s + 1, (size_t)(ids - s - 1));
		shs_buf_puts(b, "device_ids=(");
		shs_buf_put(b, ids + 12, (size_t)(ids_end - ids - 12));
		shs_buf_putc(b, ')');
		return SHS_OK;
	}
	put_body(b, s + 1, (size_t)(end - s - 2));
	return SHS_OK;
}

/* The mesh named name in the module's xla.sdy.meshes (`{mesh = #sdy.mesh<[...]>, ...}`): the
 * text just past its "#sdy.mesh", or NULL. */
static const char *named_mesh(const shs_module *m, const char *name, size_t len)
{
	const char *meshes = attr(m->frontend_attrs, m->n_frontend_attrs, "xla.sdy.meshes");

	for (const char *s = meshes; s && *s; s++) {
		const char *t = s + len;

		if ((s != meshes && s[-1] != '{' && s[-1] != ',' && s[-1] != ' ') ||
		    strncmp(s, name, len))
			continue;
		while (*t == ' ')
			t++;
		if (*t++ != '=')
			continue;
		while (*t == ' ')
			t++;
		if (!strncmp(t, "#sdy.mesh", 9))
			return t + 9;
	}
	return NULL;
}

/* One sharding `@mesh, [dims], rest` or `mesh<[...]>, [dims], rest` (the text between its angle
 * brackets, s[0..n)) as XLA's text in b. */
static int one(const shs_module *m, const char *s, size_t n, shs_buf *b)
{
	const char *mesh, *comma;
	bool maximal = false;
	size_t at = 0;
	int rc;

	while (at < n && s[at] == ' ')
		at++;
	if (s[at] == '@') {
		size_t len = 0;

		while (at + 1 + len < n && s[at + 1 + len] != ',' && s[at + 1 + len] != ' ')
			len++;
		if (!(mesh = named_mesh(m, s + at + 1, len)))
			return SHS_EPARSE;
		comma = s + at + 1 + len;
	} else if (!strncmp(s + at, "mesh<", 5)) {
		mesh = s + at + 4;
		if (!(comma = closing(mesh)))
			return SHS_EPARSE;
	} else {
		return SHS_EPARSE;
	}
	shs_buf_putc(b, '{');
	if ((rc = put_mesh(b, mesh, &maximal)))
		return rc;
	if (!maximal && comma < s + n) {
		shs_buf_puts(b, ", ");
		while (comma < s + n && (*comma == ',' || *comma == ' '))
			comma++;
		put_body(b, comma, (size_t)(s + n - comma));
	}
	shs_buf_putc(b, '}');
	return SHS_OK;
}

/* Shardy's value v as XLA's sharding text in b: one sharding, or a tuple of the per-value
 * ones. */
static int to_xla_text(const shs_module *m, const char *v, shs_buf *b)
{
	static const char one_open[] = "#sdy.sharding<", many_open[] = "#sdy.sharding_per_value<[";
	const char *s, *end;
	int count = 0, rc = SHS_OK;

	if (!strncmp(v, one_open, strlen(one_open))) {
		end = closing(v + strlen(one_open) - 1);
		return end ? one(m, v + strlen(one_open), (size_t)(end - 1 - v - strlen(one_open)),
				 b) : SHS_EPARSE;
	}
	if (strncmp(v, many_open, strlen(many_open)))
		return SHS_EPARSE;
	s = v + strlen(many_open);
	end = *s == '<' ? closing(s) : NULL;
	if (end && *end == ']') /* one value: its sharding, not a tuple of one */
		return one(m, s + 1, (size_t)(end - s - 2), b);
	shs_buf_putc(b, '{');
	for (s = v + strlen(many_open); rc == SHS_OK && *s == '<'; count++) {
		if (!(end = closing(s)) || count == MAX_VALUES)
			return SHS_EPARSE;
		if (count)
			shs_buf_puts(b, ", ");
		rc = one(m, s + 1, (size_t)(end - s - 2), b);
		for (s = end; *s == ',' || *s == ' '; s++)
			;
	}
	shs_buf_putc(b, '}');
	return rc;
}

int shs_stated_sharding(const shs_module *m, const shs_instr *in, shs_arena *a,
			shs_sharding **out, shs_err *e)
{
	const char *sdy = attr(in->frontend_attrs, in->n_frontend_attrs, "xla.sdy.sharding");
	const char *mhlo = attr(in->frontend_attrs, in->n_frontend_attrs, "mhlo.sharding");
	shs_buf b = { 0 };
	size_t used = 0, off = 0;
	int rc;

	*out = NULL;
	if (!sdy && !mhlo)
		return SHS_OK;
	if (sdy && to_xla_text(m, sdy, &b) != SHS_OK) {
		shs_buf_free(&b);
		return shs_seterr(e, SHS_EPARSE, "%s: xla.sdy.sharding '%.80s' is not Shardy's "
				  "sharding on a mesh of the module's xla.sdy.meshes", in->name,
				  sdy);
	}
	if (b.oom) {
		shs_buf_free(&b);
		return shs_seterr(e, SHS_ENOMEM, "out of memory");
	}
	rc = sdy ? shs_sharding_parse(a, b.data, b.len, &used, out, &off, e)
		 : shs_sharding_parse(a, mhlo, strlen(mhlo), &used, out, &off, e);
	shs_buf_free(&b);
	if (rc != SHS_OK)
		shs_err_prefix(e, "%s: %s", in->name, sdy ? "xla.sdy.sharding" : "mhlo.sharding");
	return rc;
}
