/* The meshes the search tries: every split of the devices over data, fsdp and tensor, and with
 * a sequence axis when the token batch has fewer sequences than devices. */
#include <stdio.h>
#include <string.h>

#include "search.h"


/* Writes "data=d,fsdp=f,sequence=s,tensor=t" without the size-1 axes (all size 1: "data=1"). */
static void mesh_text(const int64_t sizes[SHS_SEARCH_AXES], char *buf, size_t cap)
{
	static const char *const names[SHS_SEARCH_AXES] = { "data", "fsdp", "sequence", "tensor" };
	size_t used = 0;

	buf[0] = '\0';
	for (int k = 0; k < SHS_SEARCH_AXES && used < cap; k++)
		if (sizes[k] > 1)
			used += (size_t)snprintf(buf + used, cap - used, "%s%s=%lld",
						 used ? "," : "", names[k], (long long)sizes[k]);
	if (!used)
		snprintf(buf, cap, "data=1");
}

/* Whether a sequence axis of size s is worth a mesh on n devices: the batch has fewer sequences
 * than there are devices (else data and fsdp split it whole), s splits the sequence and data
 * times fsdp splits the batch. */
static bool sequence_fits(int64_t n, int64_t s, int64_t d, int64_t f, int64_t batch, int64_t seq)
{
	return s == 1 || (batch > 0 && batch < n && seq > 0 && seq % s == 0 &&
			  batch % (d * f) == 0);
}

uint32_t shs__search_meshes(int64_t n, int64_t batch, int64_t seq,
			    char (*out)[SHS_SEARCH_TEXT], int64_t (*sizes)[SHS_SEARCH_AXES],
			    uint32_t cap)
{
	uint32_t count = 0;

	/* tensor first (the fastest links), then sequence, then fsdp; data takes the rest */
	for (int64_t t = 1; t <= n; t++) {
		for (int64_t s = 1; n % t == 0 && s <= n / t; s++) {
			for (int64_t f = 1; (n / t) % s == 0 && f <= n / t / s; f++) {
				int64_t mesh[SHS_SEARCH_AXES] = { n / t / s / f, f, s, t };
				if ((n / t / s) % f || !sequence_fits(n, s, mesh[0], f, batch, seq))
					continue;
				if (count < cap)
					mesh_text(mesh, out[count], SHS_SEARCH_TEXT);
				if (count < cap && sizes)
					memcpy(sizes[count], mesh, sizeof(mesh));
				count++;
			}
		}
	}
	return count;
}
