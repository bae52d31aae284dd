/* Users of each instruction of one computation, as a CSR list. */
#include <stdlib.h>
#include <string.h>

#include "users.h"

int shs_users_make(const shs_computation *c, shs_users *u)
{
	uint32_t n = c->n_instrs, total = 0;
	uint32_t *fill;

	u->list = NULL;
	u->first = calloc(n + 2, sizeof(*u->first));
	if (!u->first)
		return SHS_ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < c->instrs[i]->n_operands; k++)
			u->first[c->instrs[i]->operands[k] + 1]++;
	for (uint32_t i = 0; i < n; i++)
		u->first[i + 1] += u->first[i];
	total = u->first[n];
	u->list = malloc((total ? total : 1) * sizeof(*u->list));
	fill = calloc(n + 1, sizeof(*fill));
	if (!u->list || !fill) {
		free(fill);
		shs_users_free(u);
		return SHS_ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < c->instrs[i]->n_operands; k++) {
			uint32_t o = c->instrs[i]->operands[k];
			/* users arrive in order: i is o's user already only if it is the last */
			if (!fill[o] || u->list[u->first[o] + fill[o] - 1] != i)
				u->list[u->first[o] + fill[o]++] = i;
		}
	/* compact duplicates away: users listed once each */
	for (uint32_t o = 0, w = 0; o < n; o++) {
		uint32_t start = u->first[o];
		u->first[o] = w;
		memmove(&u->list[w], &u->list[start], fill[o] * sizeof(*u->list));
		w += fill[o];
		if (o + 1 == n)
			u->first[n] = w;
	}
	free(fill);
	return SHS_OK;
}

void shs_users_free(shs_users *u)
{
	free(u->first);
	free(u->list);
	u->first = u->list = NULL;
}
