/* A parsed mesh laid on the physical axes: explicit places, then the default layout. */
#include <inttypes.h>
#include <string.h>

#include "cluster_internal.h"

/*
 * An axis with @ takes, in mesh order, from the physical axes it names (major first) what it
 * still needs: a whole axis, or what is left of one, when that divides its need, else the
 * major factor it needs. Axes sharing a physical axis so take factors of it that multiply to
 * its size, the first in the mesh the major; the layouts the reports print read back
 * (fsdp=64@xy,tensor=4@y on 16x16, fsdp=8@xy,tensor=8@yz on 4x4x4).
 * Axes without @ follow the default layout: in mesh order (major first) they take the physical
 * axes no @ claims, major first (dcn, x, y, z / net, node) and skipping size-1 axes, each
 * taking a whole axis when its remaining size divides the logical size, else the major factor
 * of it when the logical size divides that. When that rule cannot lay a mesh out, each axis in
 * mesh order takes instead, from each physical axis in order, the greatest common factor of
 * what it still needs and what that axis has left (data=35 on 16x20x28 takes 5 of y and 7 of
 * z); a mesh whose sizes multiply to the free chips is always laid out so.
 * A NULL or empty mesh has one axis per physical axis of size > 1, named after it.
 */

/* Lays the axes with @ on their physical axes; *claimed gets the physical axes they use. In
 * mesh order, each axis takes from the physical axes it names, major first, what it still
 * needs: the whole of what is left of one when that divides its need, else the major factor it
 * needs; so axes sharing a physical axis take factors of it, the first in the mesh the major
 * (the layouts the reports print read back: fsdp=8@xy,tensor=8@yz on 4x4x4). */
static int lay_explicit(shs_cluster *c, const shs__mesh_text *m, uint32_t *claimed, shs_err *e)
{
	int64_t left[SHS_PHYS_MAX];
	uint32_t owner[SHS_PHYS_MAX]; /* the first axis that took from it */

	*claimed = 0;
	for (uint32_t p = 0; p < c->n_phys; p++)
		left[p] = c->phys[p].size;
	for (uint32_t k = 0; k < m->n; k++) {
		const shs__mesh_item *it = &m->items[k];
		int64_t need = it->size;

		for (uint32_t p = 0; p < c->n_phys; p++) {
			int64_t take;
			if (!(it->claim & (1u << p)))
				continue;
			if (need > 1 && left[p] > 1 && need % left[p] == 0)
				take = left[p];
			else if (need > 1 && left[p] > 1 && left[p] % need == 0)
				take = need;
			else if (left[p] == 1 && (*claimed & (1u << p)))
				return shs__mesh_err(e, m, "physical axis '%s' used twice (by '%s' "
						     "and '%s')", c->phys[p].name,
						     m->items[owner[p]].name, it->name);
			else
				return shs__mesh_err(e, m, "'%s' cannot take a whole factor of "
						     "physical axis '%s' (%" PRId64 " of its %"
						     PRId64 " chips left, %" PRId64
						     " still needed)", it->name, c->phys[p].name,
						     left[p], c->phys[p].size, need);
			if (!(*claimed & (1u << p)))
				owner[p] = k;
			c->span[k] |= 1u << p;
			c->part[k][p] = take;
			left[p] /= take;
			need /= take;
			*claimed |= 1u << p;
		}
		if (it->claim && need != 1)
			return shs__mesh_err(e, m, "'%s' has size %" PRId64 " but its physical "
					     "axes hold %" PRId64 " of it", it->name, it->size,
					     it->size / need);
	}
	for (uint32_t p = 0; p < c->n_phys; p++)
		if ((*claimed & (1u << p)) && left[p] != 1)
			return shs__mesh_err(e, m, "physical axis '%s': the axes on it take %"
					     PRId64 " of its %" PRId64 " chips", c->phys[p].name,
					     c->phys[p].size / left[p], c->phys[p].size);
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
