/* Clusters: the chips of a hardware entry on physical axes, and a mesh laid on them. */
#include <inttypes.h>
#include <string.h>

#include "cluster_internal.h"

int64_t shs__mul_capped(int64_t a, int64_t b, int64_t limit)
{
	if (a > limit / b)
		return -1;
	return a * b;
}

int64_t shs__parse_size(const char **p)
{
	int64_t v = 0;
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		v = v * SHS__DECIMAL + (*s++ - '0');
		if (v > SHS__TOPO_DIM_MAX)
			return -1;
	}
	*p = s;
	return v;
}

int shs_cluster_make(const shs_hw_catalog *cat, const shs_cluster_spec *spec, shs_cluster *out,
		     shs_err *e)
{
	const shs_hardware *hw;
	int rc;

	if (!cat || !spec || !out)
		return shs_seterr(e, SHS_EINVAL, "shs_cluster_make: NULL argument");
	memset(out, 0, sizeof(*out));
	hw = spec->hardware ? shs_hw_find(cat, spec->hardware) : NULL;
	if (!hw) {
		char names[SHS__NAMES_CAP];
		shs_hw_names(cat, names, sizeof(names));
		if (!spec->hardware)
			return shs_seterr(e, SHS_EINVAL, "no hardware given (known: %s)", names);
		return shs_seterr(e, SHS_EINVAL, "unknown hardware '%s' (known: %s)",
				  spec->hardware, names);
	}
	out->hw = *hw;
	rc = shs__cluster_phys(spec, out, e);
	if (rc == SHS_OK)
		rc = shs__mesh_lay(spec->mesh, out, e);
	if (rc != SHS_OK)
		memset(out, 0, sizeof(*out));
	return rc;
}

int64_t shs_mesh_group(const shs_mesh *m, uint32_t axes_mask)
{
	int64_t n = 1;

	for (uint32_t k = 0; k < m->n_axes && k < SHS_MESH_MAX_AXES; k++)
		if (axes_mask & (1u << k))
			n *= m->sizes[k];
	return n;
}
