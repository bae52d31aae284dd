/* Candidate lists handed between instructions of one query class within a plan: an unrolled
 * model's repeated layers and optimizer updates ask their strategies the same thousands of
 * times. */
#include <stdlib.h>

#include "propagate_internal.h"

struct shs__share_entry {
	uint64_t cls, key; /* 0, 0: empty */
	uint32_t c, i;     /* the instruction whose cached list answered it last */
};

enum { SHARE_MIN = 64, SHARE_MAX = 1u << 22 };

int shs__share_init(shs__share *s, uint64_t n_instrs)
{
	uint32_t cap = SHARE_MIN;

	while (cap < SHARE_MAX && cap < 2 * n_instrs)
		cap *= 2;
	*s = (shs__share){ .v = calloc(cap, sizeof(*s->v)), .cap = cap };
	return s->v ? SHS_OK : SHS_ENOMEM;
}

void shs__share_free(shs__share *s)
{
	free(s->v);
	*s = (shs__share){ 0 };
}

static uint32_t slot_of(const shs__share *s, uint64_t cls, uint64_t key)
{
	uint64_t h = (cls ^ (key * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return (uint32_t)(h >> 32) & (s->cap - 1);
}

/* The entry of (cls, key), or the empty slot where it would go; NULL when the table is full. */
static shs__share_entry *find(const shs__share *s, uint64_t cls, uint64_t key)
{
	for (uint32_t k = 0, j = slot_of(s, cls, key); k < s->cap; k++, j = (j + 1) & (s->cap - 1)) {
		shs__share_entry *e = &s->v[j];
		if ((e->cls == cls && e->key == key) || (!e->cls && !e->key))
			return e;
	}
	return NULL;
}

const shs_cands *shs__share_get(const shs__prop *x, uint64_t cls, uint64_t key)
{
	const shs__share_entry *e = find(&x->share, cls, key);
	const shs__cand_cache *cc;

	if (!e || e->cls != cls || e->key != key)
		return NULL;
	cc = &x->cache[e->c][e->i];
	/* the owner asked again since (another key): its list no longer answers */
	return cc->valid && cc->key == key && cc->cls == cls ? &cc->cands : NULL;
}

void shs__share_put(shs__prop *x, uint64_t cls, uint64_t key, uint32_t c, uint32_t i)
{
	shs__share *s = &x->share;
	shs__share_entry *e = find(s, cls, key);

	if (!e)
		return;
	if (!e->cls && !e->key) {
		if (4 * (uint64_t)(s->used + 1) > 3 * (uint64_t)s->cap)
			return; /* full enough: the rest are asked */
		s->used++;
	}
	*e = (shs__share_entry){ .cls = cls, .key = key, .c = c, .i = i };
}
