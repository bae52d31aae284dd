/* Which meshes the search tries when there are too many to try all: the canonical ones first,
 * then, round after round, the neighbours of the best so far (local search over the lattice of
 * divisors: a prime factor moved from one axis to another). */
#include "search_internal.h"

/* The product of a mesh's batch axes (data, fsdp, expert). */
static int64_t batch_axes(const int64_t *sizes)
{
	return sizes[SHS_SEARCH_DATA] * sizes[SHS_SEARCH_FSDP] * sizes[SHS_SEARCH_EXPERT];
}

uint32_t shs__search_canonical(const int64_t (*sizes)[SHS_SEARCH_AXES], uint32_t n,
			       uint32_t *out)
{
	uint32_t count = 0;
	int64_t widest = 0; /* the most the batch axes split the batch beside a context axis */

	for (uint32_t k = 0; k < n; k++)
		if (sizes[k][SHS_SEARCH_CONTEXT] > 1 && batch_axes(sizes[k]) > widest)
			widest = batch_axes(sizes[k]);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t axes = 0;
		for (int x = 0; x < SHS_SEARCH_AXES; x++)
			axes += sizes[k][x] > 1;
		/* a context axis is there because the batch is too small for the devices: with
		 * the batch split as far as it goes, a third axis (tensor, as long-context runs
		 * have) */
		if (axes <= 2 || (axes == 3 && sizes[k][SHS_SEARCH_CONTEXT] > 1 &&
				  batch_axes(sizes[k]) == widest))
			out[count++] = k;
	}
	return count;
}

static bool is_prime(int64_t p)
{
	if (p < 2)
		return false;
	for (int64_t d = 2; d * d <= p; d++)
		if (p % d == 0)
			return false;
	return true;
}

/* Whether b is a by a prime factor moved from one axis to another. */
static bool neighbours(const int64_t *a, const int64_t *b)
{
	int from = -1, to = -1;

	for (int x = 0; x < SHS_SEARCH_AXES; x++) {
		if (a[x] == b[x])
			continue;
		if (a[x] > b[x] && a[x] % b[x] == 0 && from < 0)
			from = x;
		else if (b[x] > a[x] && b[x] % a[x] == 0 && to < 0)
			to = x;
		else
			return false;
	}
	return from >= 0 && to >= 0 && a[from] / b[from] == b[to] / a[to] &&
	       is_prime(a[from] / b[from]);
}

uint32_t shs__search_frontier(const int64_t (*sizes)[SHS_SEARCH_AXES], uint32_t n,
			      const bool *tried, const uint32_t *top, uint32_t n_top,
			      uint32_t *out)
{
	uint32_t count = 0;

	for (uint32_t k = 0; k < n; k++) {
		bool near = false;
		for (uint32_t t = 0; t < n_top && !tried[k] && !near; t++)
			near = neighbours(sizes[top[t]], sizes[k]);
		if (near)
			out[count++] = k;
	}
	return count;
}
