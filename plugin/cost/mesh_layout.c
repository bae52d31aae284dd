/* A parsed mesh laid on the physical axes: explicit places, then the default layout. */
#include <inttypes.h>
#include <string.h>

#include "cluster_internal.h"

/*
 * An axis with @ either spans whole physical axes (their sizes multiply to its size, and no
 * other axis uses them) or takes a factor of ONE physical axis that other single-axis claims
 * share (their sizes multiply to the physical size; the one listed first in the mesh is major).
 * Axes without @ follow the default layout: in mesh order (major first) they take the physical
 * axes no @ claims, major first (dcn, x, y, z / net, node) and skipping size-1 axes, each
 * taking a whole axis when its remaining size divides the logical size, else the major factor
 * of it when the logical size divides that. When that rule cannot lay a mesh out, each axis in
 * mesh order takes instead, from each physical axis in order, the greatest common factor of
 * what it still needs and what that axis has left (data=35 on 16x20x28 takes 5 of y and 7 of
 * z); a mesh whose sizes multiply to the free chips is always laid out so.
 * A NULL or empty mesh has one axis per physical axis of size > 1, named after it.
 */

static int popcount(uint32_t v)
{
	int n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

/* Lays the axes with @ on their physical axes; *claimed gets the physical axes they use. */
static int lay_explicit(shs_cluster *c, const shs__mesh_text *m, uint32_t *claimed, shs_err *e)
{
	*claimed = 0;
	for (uint32_t p = 0; p < c->n_phys; p++) {
		const shs_phys_axis *ph = &c->phys[p];
		int64_t product = 1;
		int first = -1;
		for (uint32_t k = 0; k < m->n; k++) {
			const shs__mesh_item *it = &m->items[k];
			if (!(it->claim & (1u << p)))
				continue;
			if (first >= 0 && (popcount(it->claim) > 1 ||
					   popcount(m->items[first].claim) > 1))
				return shs__mesh_err(e, m, "physical axis '%s' used twice "
						     "(by '%s' and '%s')", ph->name,
						     m->items[first].name, it->name);
			if (first < 0)
				first = (int)k;
			product = shs__mul_capped(product, it->size, INT64_MAX / SHS__TOPO_DIM_MAX);
			c->span[k] |= 1u << p;
			c->part[k][p] = popcount(it->claim) > 1 ? ph->size : it->size;
			if (k != (uint32_t)first && (product < 0 || product > ph->size))
				return shs__mesh_err(e, m, "physical axis '%s' used twice: "
						     "'%s' and '%s' take more than its %" PRId64
						     " chips", ph->name,
						     m->items[first].name, it->name, ph->size);
		}
		if (first < 0)
			continue;
		*claimed |= 1u << p;
		if (popcount(m->items[first].claim) == 1 && product != ph->size)
			return shs__mesh_err(e, m, "'%s' on physical axis '%s': sizes multiply to %"
					     PRId64 ", it has %" PRId64 " chips",
					     m->items[first].name, ph->name, product, ph->size);
	}
	for (uint32_t k = 0; k < m->n; k++) {
		const shs__mesh_item *it = &m->items[k];
		int64_t chips = 1;
		char places[SHS__NAMES_CAP] = "";
		if (popcount(it->claim) < 2)
			continue;
		for (uint32_t p = 0; p < c->n_phys; p++)
			if (it->claim & (1u << p)) {
				chips *= c->phys[p].size;
				shs__appendf(places, sizeof(places), "%s%s", places[0] ? "*" : "",
					     c->phys[p].name);
			}
		if (chips != it->size)
			return shs__mesh_err(e, m, "'%s' has size %" PRId64 " but %s has %" PRId64
					     " chips", it->name, it->size, places, chips);
	}
	return SHS_OK;
}

static int64_t gcd(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Lays the axes without @ on the unclaimed physical axes (rules in the top comment): whole axes
 * and major factors, or (by_gcd) the greatest common factor of each in turn. */
static int lay_free(shs_cluster *c, const shs__mesh_text *m, uint32_t claimed, bool by_gcd,
		    shs_err *e)
{
	int64_t left[SHS_PHYS_MAX];
	uint32_t p = 0;

	for (uint32_t q = 0; q < c->n_phys; q++)
		left[q] = claimed & (1u << q) ? 1 : c->phys[q].size;
	for (uint32_t k = 0; k < m->n; k++) {
		int64_t need = m->items[k].size;
		if (m->items[k].claim)
			continue;
		if (by_gcd)
			p = 0;
		while (need > 1) {
			int64_t take;
			while (p < c->n_phys && (left[p] < 2 || (by_gcd && gcd(need, left[p]) < 2)))
				p++;
			if (p == c->n_phys ||
			    (!by_gcd && need % left[p] && left[p] % need)) {
				char free_axes[SHS__NAMES_CAP] = "";
				for (uint32_t q = 0; q < c->n_phys; q++)
					if (left[q] > 1)
						shs__appendf(free_axes, sizeof(free_axes),
							     "%s%s %" PRId64, free_axes[0] ? ", " : "",
							     c->phys[q].name, left[q]);
				return shs__mesh_err(e, m, "axis '%s' (size %" PRId64 ") cannot be "
						     "laid on the free physical axes (%s)",
						     m->items[k].name, need,
						     free_axes[0] ? free_axes : "none");
			}
			take = by_gcd ? gcd(need, left[p]) : need % left[p] ? need : left[p];
			c->span[k] |= 1u << p;
			c->part[k][p] = take;
			need /= take;
			left[p] /= take;
		}
	}
	return SHS_OK;
}

/* The default layout: the strict rule, else by common factors. */
static int lay_default(shs_cluster *c, const shs__mesh_text *m, uint32_t claimed, shs_err *e)
{
	shs_cluster before = *c;

	if (lay_free(c, m, claimed, false, e) == SHS_OK)
		return SHS_OK;
	memcpy(c->span, before.span, sizeof(c->span));
	memcpy(c->part, before.part, sizeof(c->part));
	return lay_free(c, m, claimed, true, e);
}

int shs__mesh_lay(const char *text, shs_cluster *c, shs_err *e)
{
	shs__mesh_text m;
	uint32_t claimed;
	int rc = shs__mesh_parse(c, text, &m, e);

	if (rc != SHS_OK)
		return rc;
	c->mesh.n_axes = m.n;
	for (uint32_t k = 0; k < m.n; k++) {
		memcpy(c->axis_names[k], m.items[k].name, SHS__AXIS_NAME_CAP);
		c->mesh.names[k] = c->axis_names[k];
		c->mesh.sizes[k] = m.items[k].size;
	}
	rc = lay_explicit(c, &m, &claimed, e);
	if (rc != SHS_OK)
		return rc;
	return lay_default(c, &m, claimed, e);
}
