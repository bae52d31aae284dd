/* The meshes the search tries: every split of the devices over data, fsdp and tensor, with a
 * context axis (the sequence split: context parallelism) when the token batch has fewer sequences than devices, and an expert axis when
 * the model has experts (with fsdp, in both orders: which of them takes the faster links). */
#include <stdio.h>
#include <string.h>

#include "search_internal.h"

/* Writes "data=d,fsdp=f,context=s,expert=e,tensor=t" without the size-1 axes (all size 1:
 * "data=1"); expert_major: expert before fsdp ("data=d,expert=e,fsdp=f,..."), which lays the
 * experts on the slower links and the weights' gathers on the faster ones. */
static void mesh_text(const int64_t sizes[SHS_SEARCH_AXES], bool expert_major, char *buf,
		      size_t cap)
{
	static const char *const names[SHS_SEARCH_AXES] = { "data", "fsdp", "context", "expert",
							    "tensor" };
	static const int usual[SHS_SEARCH_AXES] = { 0, 1, 2, 3, 4 };
	static const int swapped[SHS_SEARCH_AXES] = { 0, 3, 1, 2, 4 };
	const int *order = expert_major ? swapped : usual;
	size_t used = 0;

	buf[0] = '\0';
	for (int j = 0; j < SHS_SEARCH_AXES && used < cap; j++) {
		int k = order[j];
		if (sizes[k] > 1)
			used += (size_t)snprintf(buf + used, cap - used, "%s%s=%lld",
						 used ? "," : "", names[k], (long long)sizes[k]);
	}
	if (!used)
		snprintf(buf, cap, "data=1");
}

/* Whether a context axis of size s is worth a mesh on n devices: the batch has fewer sequences
 * than there are devices (else the batch axes split it whole), s splits the sequence and the
 * batch axes (data, fsdp, expert: b of them) split the batch. */
static bool sequence_fits(int64_t n, int64_t s, int64_t b, int64_t batch, int64_t seq)
{
	return s == 1 || (batch > 0 && batch < n && seq > 0 && seq % s == 0 && batch % b == 0);
}

uint32_t shs__search_meshes(int64_t n, int64_t batch, int64_t seq, int64_t experts,
			    char (*out)[SHS_SEARCH_TEXT], int64_t (*sizes)[SHS_SEARCH_AXES],
			    uint32_t cap)
{
	uint32_t count = 0;

	/* tensor first (the fastest links), then context, expert (dividing the experts), fsdp;
	 * data takes the rest */
	for (int64_t t = 1; t <= n; t++) {
		for (int64_t s = 1; n % t == 0 && s <= n / t; s++) {
			for (int64_t e = 1; (n / t) % s == 0 && e <= n / t / s; e++) {
				int64_t rest = n / t / s / e;
				if ((n / t / s) % e || (e > 1 && (experts < 2 || experts % e)))
					continue;
				for (int64_t f = 1; f <= rest; f++) {
					int64_t mesh[SHS_SEARCH_AXES] = { rest / f, f, s, e, t };
					if (rest % f || !sequence_fits(n, s, rest * e, batch, seq))
						continue;
					/* with both fsdp and expert axes, each of them major */
					for (int major = 0; major < 1 + (e > 1 && f > 1); major++) {
						if (count < cap)
							mesh_text(mesh, major, out[count],
								  SHS_SEARCH_TEXT);
						if (count < cap && sizes)
							memcpy(sizes[count], mesh, sizeof(mesh));
						count++;
					}
				}
			}
		}
	}
	return count;
}
