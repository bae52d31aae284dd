/* Mesh text: logical axes, their sizes and where they lie ("fsdp=16@xy,tensor=4@z"). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cluster_internal.h"

/*
 * Mesh grammar:
 *   mesh  := axis (',' axis)*
 *   axis  := NAME '=' SIZE ['@' place]       NAME [A-Za-z_][A-Za-z0-9_]* (< 32), SIZE >= 1
 *   place := item ('+' item)*
 *   item  := [xyz]+ | 'dcn' | 'node' | 'net'  (each letter of a run is one torus axis)
 * e.g. "fsdp=16@xy,tensor=4@z", "data=2@dcn,fsdp=64@x+y+z", "data=2@dcn+xyz", "tp=8@node".
 * The order of the items does not matter: physical order (above) decides which is major.
 */

int shs__mesh_err(shs_err *e, const shs__mesh_text *m, const char *fmt, ...)
{
	char msg[SHS_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return shs_seterr(e, SHS_EINVAL, "mesh '%s': %s", m->text, msg);
}

static bool name_start(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
}

static bool name_char(char ch)
{
	return name_start(ch) || (ch >= '0' && ch <= '9');
}

static int phys_index(const shs_cluster *c, const char *name, size_t len)
{
	for (uint32_t p = 0; p < c->n_phys; p++)
		if (strlen(c->phys[p].name) == len && !strncmp(c->phys[p].name, name, len))
			return (int)p;
	return -1;
}

static void phys_list(const shs_cluster *c, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (uint32_t p = 0; p < c->n_phys; p++)
		shs__appendf(buf, cap, "%s%s", p ? ", " : "", c->phys[p].name);
}

/* Adds physical axis name[0..len) to it->claim. */
static int claim_one(const shs_cluster *c, shs__mesh_text *m, shs__mesh_item *it, const char *name,
		     size_t len, shs_err *e)
{
	int p = phys_index(c, name, len);
	char have[SHS__NAMES_CAP];

	if (p < 0) {
		phys_list(c, have, sizeof(have));
		return shs__mesh_err(e, m, "unknown physical axis '%.*s' for '%s' (this cluster "
				     "has %s)", (int)len, name, it->name, have);
	}
	if (it->claim & (1u << p))
		return shs__mesh_err(e, m, "physical axis '%s' used twice by '%s'", c->phys[p].name,
				     it->name);
	it->claim |= 1u << p;
	return SHS_OK;
}

/* Whether name[0..len) is a run of torus letters (each one physical axis). */
static bool torus_letters(const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (name[i] != 'x' && name[i] != 'y' && name[i] != 'z')
			return false;
	return true;
}

/* Parses the place after '@' at *pp, up to ',' or the end. */
static int parse_place(const shs_cluster *c, shs__mesh_text *m, shs__mesh_item *it, const char **pp,
		       shs_err *e)
{
	const char *p = *pp;

	for (;;) {
		size_t len = 0;
		int rc = SHS_OK;
		while (name_char(p[len]))
			len++;
		if (!len)
			return shs__mesh_err(e, m, "'%s' needs physical axes after '@' "
					     "(like @xy, @z, @dcn, @node)", it->name);
		if (torus_letters(p, len))
			for (size_t i = 0; i < len && rc == SHS_OK; i++)
				rc = claim_one(c, m, it, p + i, 1, e);
		else
			rc = claim_one(c, m, it, p, len, e);
		if (rc != SHS_OK)
			return rc;
		p += len;
		if (*p != '+')
			break;
		p++;
	}
	*pp = p;
	return SHS_OK;
}

static int parse_item(const shs_cluster *c, shs__mesh_text *m, const char **pp, shs_err *e)
{
	shs__mesh_item *it = &m->items[m->n];
	const char *p = *pp;
	size_t len = 0;

	if (m->n == SHS_MESH_MAX_AXES)
		return shs__mesh_err(e, m, "more than %d axes", SHS_MESH_MAX_AXES);
	memset(it, 0, sizeof(*it));
	if (!name_start(*p))
		return shs__mesh_err(e, m, "axis %u: want NAME=SIZE[@PLACE] at '%s'", m->n + 1, p);
	while (name_char(p[len]))
		len++;
	if (len >= SHS__AXIS_NAME_CAP)
		return shs__mesh_err(e, m, "axis name '%.*s' is longer than %d", (int)len, p,
				     SHS__AXIS_NAME_CAP - 1);
	memcpy(it->name, p, len);
	p += len;
	if (*p++ != '=')
		return shs__mesh_err(e, m, "axis '%s': want NAME=SIZE[@PLACE]", it->name);
	it->size = shs__parse_size(&p);
	if (it->size < 1)
		return shs__mesh_err(e, m, "axis '%s' needs a size from 1 to %d", it->name,
				     SHS__TOPO_DIM_MAX);
	if (*p == '@') {
		int rc;
		p++;
		rc = parse_place(c, m, it, &p, e);
		if (rc != SHS_OK)
			return rc;
	}
	if (*p && *p != ',')
		return shs__mesh_err(e, m, "axis '%s': unexpected '%s'", it->name, p);
	for (uint32_t k = 0; k < m->n; k++)
		if (!strcmp(m->items[k].name, it->name))
			return shs__mesh_err(e, m, "axis name '%s' given twice", it->name);
	m->n++;
	*pp = *p ? p + 1 : p;
	return SHS_OK;
}

/* The mesh text, or one axis per physical axis of size > 1 when there is none. */
int shs__mesh_parse(const shs_cluster *c, const char *text, shs__mesh_text *m, shs_err *e)
{
	const char *p = text;
	int64_t product = 1;

	memset(m, 0, sizeof(*m));
	m->text = text ? text : "";
	if (!text || !*text) {
		for (uint32_t p2 = 0; p2 < c->n_phys; p2++) {
			if (c->phys[p2].size < 2)
				continue;
			snprintf(m->items[m->n].name, SHS__AXIS_NAME_CAP, "%s", c->phys[p2].name);
			m->items[m->n].size = c->phys[p2].size;
			m->items[m->n++].claim = 1u << p2;
		}
		return SHS_OK;
	}
	while (*p) {
		int rc = parse_item(c, m, &p, e);
		if (rc != SHS_OK)
			return rc;
		if (!*p && p[-1] == ',')
			return shs__mesh_err(e, m, "ends with ','");
	}
	for (uint32_t k = 0; k < m->n; k++) {
		product = shs__mul_capped(product, m->items[k].size, INT64_MAX / SHS__TOPO_DIM_MAX);
		if (product < 0)
			return shs__mesh_err(e, m, "sizes multiply to more than %" PRId64
					     ", the cluster has %" PRId64 " devices",
					     INT64_MAX / SHS__TOPO_DIM_MAX, c->devices);
	}
	if (product != c->devices)
		return shs__mesh_err(e, m, "sizes multiply to %" PRId64 ", the cluster has %" PRId64
				     " devices", product, c->devices);
	return SHS_OK;
}
