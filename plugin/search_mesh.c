/* The meshes the search tries: every split of the devices over data, fsdp and tensor. */
#include <stdio.h>

#include "search.h"

/* Writes "data=d,fsdp=f,tensor=t" without the size-1 axes (all size 1: "data=1"). */
static void mesh_text(int64_t d, int64_t f, int64_t t, char *buf, size_t cap)
{
	const int64_t sizes[] = { d, f, t };
	static const char *const names[] = { "data", "fsdp", "tensor" };
	size_t used = 0;

	buf[0] = '\0';
	for (int k = 0; k < 3 && used < cap; k++)
		if (sizes[k] > 1)
			used += (size_t)snprintf(buf + used, cap - used, "%s%s=%lld",
						 used ? "," : "", names[k], (long long)sizes[k]);
	if (!used)
		snprintf(buf, cap, "data=1");
}

uint32_t shs__search_meshes(int64_t n, char (*out)[SHS_SEARCH_TEXT], uint32_t cap)
{
	uint32_t count = 0;

	/* tensor first (the fastest links), then fsdp; data takes the rest */
	for (int64_t t = 1; t <= n; t++) {
		if (n % t)
			continue;
		for (int64_t f = 1; f <= n / t; f++) {
			if ((n / t) % f)
				continue;
			if (count < cap)
				mesh_text(n / t / f, f, t, out[count], SHS_SEARCH_TEXT);
			count++;
		}
	}
	return count;
}
