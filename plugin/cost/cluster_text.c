/* Text of clusters and meshes: the description reports print, mesh and axis lists. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cluster_internal.h"

void shs__appendf(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strnlen(buf, cap);
	va_list ap;

	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

void shs__shape_text(const int64_t *dims, uint32_t rank, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (uint32_t i = 0; i < rank; i++)
		shs__appendf(buf, cap, "%s%" PRId64, i ? "x" : "", dims[i]);
}

/* "@dcn+xy" for the physical axes of span. */
static void place_text(const shs_cluster *c, uint32_t span, char *buf, size_t cap)
{
	bool letters = false;

	for (uint32_t p = 0; p < c->n_phys; p++) {
		bool ici = c->phys[p].kind == SHS_PHYS_ICI;
		if (!(span & (1u << p)))
			continue;
		shs__appendf(buf, cap, "%s%s", !buf[0] ? "@" : ici && letters ? "" : "+",
			     c->phys[p].name);
		letters = ici;
	}
}

void shs_cluster_describe(const shs_cluster *c, char *buf, size_t cap)
{
	int64_t dims[SHS__RANK_MAX];
	uint32_t rank = 0, wraps = 0;
	int64_t slices = 1;
	char shape[SHS__TOPO_TEXT_MAX];

	if (!buf || !cap)
		return;
	for (uint32_t k = 0; k < c->mesh.n_axes; k++) {
		char place[SHS__NAMES_CAP] = "";
		place_text(c, c->span[k], place, sizeof(place));
		shs__appendf(buf, cap, "%s%s=%" PRId64 "%s", k ? "," : "", c->axis_names[k],
			     c->mesh.sizes[k], place);
	}
	if (c->hw.gpu) {
		shs__appendf(buf, cap, " (%s, %" PRId64 " GPUs: %" PRId64 " node%s of %" PRId64 ")",
			     c->hw.name, c->devices, c->phys[0].size,
			     c->phys[0].size > 1 ? "s" : "", c->phys[1].size);
		return;
	}
	for (uint32_t p = 0; p < c->n_phys; p++) {
		if (c->phys[p].kind == SHS_PHYS_DCN) {
			slices = c->phys[p].size;
			continue;
		}
		wraps += c->phys[p].wraps;
		dims[rank++] = c->phys[p].size;
	}
	shs__shape_text(dims, rank, shape, sizeof(shape));
	shs__appendf(buf, cap, " (%s %s", c->hw.name, shape);
	if (slices > 1)
		shs__appendf(buf, cap, ", %" PRId64 " slices over DCN", slices);
	shs__appendf(buf, cap, "%s", wraps ? ", wraparound on" : ", no wraparound");
	for (uint32_t p = 0; p < c->n_phys; p++)
		if (c->phys[p].wraps)
			shs__appendf(buf, cap, " %s", c->phys[p].name);
	shs__appendf(buf, cap, ")");
}

void shs_mesh_text(const shs_mesh *m, char *buf, size_t cap)
{
	size_t used = 0;

	if (!cap)
		return;
	buf[0] = '\0';
	for (uint32_t k = 0; k < m->n_axes && used < cap; k++) {
		int n = snprintf(buf + used, cap - used, "%s%s=%lld", k ? "," : "", m->names[k],
				 (long long)m->sizes[k]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

void shs_axes_text(const shs_mesh *mesh, uint32_t mask, char *buf, size_t cap)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t a = 0; a < mesh->n_axes && used < cap; a++)
		if (mask & (1u << a))
			used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "," : "",
						 mesh->names[a]);
}
