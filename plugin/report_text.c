/* Text of shardings, mesh axes and collectives, as the reports and the commands print them. */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "report_text.h"
#include "cluster.h"

char *shs_specs_text(const shs_mesh *mesh, const shs_pspec *s, uint32_t n)
{
	shs_buf b = { 0 };

	for (uint32_t j = 0; j < n; j++) {
		shs_named_sharding named = { .rank = s[j].rank };
		for (uint32_t d = 0; d < s[j].rank && d < SHS_NAMED_MAX_RANK; d++) {
			named.n_dim_axes[d] = s[j].dims[d].n;
			memcpy(named.dim_axes[d], s[j].dims[d].axes, s[j].dims[d].n);
		}
		if (j)
			shs_buf_puts(&b, ", ");
		shs_named_sharding_print(&b, mesh, &named);
	}
	return shs_buf_take(&b);
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

const char *shs_coll_name(int kind)
{
	static const char *const names[] = { "all-reduce", "reduce-scatter", "all-gather",
					     "all-to-all", "permute" };

	return kind >= 0 && kind <= SHS_COLL_PERMUTE ? names[kind] : "collective";
}
