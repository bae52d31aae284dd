/* Candidate lists shared between instructions of one query class within a plan (an unrolled
 * model's repeated layers and optimizer updates ask their strategies the same thousands of
 * times, and hold one counted list rather than copies), and between the plans of one mesh. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "propagate_internal.h"

struct shs__share_entry {
	uint64_t cls, key;
	shs__list *l; /* NULL: empty */
};

enum { SHARE_MIN = 64, SHARE_MAX = 1u << 22 };

int shs__share_init(shs__share *s, const shs_module *m)
{
	uint64_t n_instrs = 0;
	uint32_t cap = SHARE_MIN;

	for (uint32_t c = 0; c < m->n_comps; c++)
		n_instrs += m->comps[c]->n_instrs;
	while (cap < SHARE_MAX && cap < 2 * n_instrs)
		cap *= 2;
	*s = (shs__share){ .v = calloc(cap, sizeof(*s->v)), .cap = cap };
	return s->v ? SHS_OK : SHS_ENOMEM;
}

void shs__share_free(shs__share *s)
{
	for (uint32_t k = 0; s->v && k < s->cap; k++)
		shs__list_drop(s, s->v[k].l);
	while (s->pool) {
		shs__list *l = s->pool;
		s->pool = l->next;
		shs_cands_free(&l->cands);
		free(l);
	}
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
		if (!e->l || (e->cls == cls && e->key == key))
			return e;
	}
	return NULL;
}

shs__list *shs__share_get(const shs__share *s, uint64_t cls, uint64_t key)
{
	const shs__share_entry *e = find(s, cls, key);

	return e ? e->l : NULL;
}

void shs__share_put(shs__share *s, uint64_t cls, uint64_t key, shs__list *l)
{
	shs__share_entry *e = find(s, cls, key);

	if (!e || e->l || 4 * (uint64_t)(s->used + 1) > 3 * (uint64_t)s->cap)
		return; /* known already, or full enough: the rest are asked */
	s->used++;
	l->refs++;
	*e = (shs__share_entry){ .cls = cls, .key = key, .l = l };
}

shs__list *shs__list_new(shs__share *s)
{
	shs__list *l = s->pool;

	if (l) {
		s->pool = l->next;
		if (l->cands.a)
			shs_arena_reset(l->cands.a);
		l->cands = (shs_cands){ .a = l->cands.a };
		l->floors = NULL;
	} else if (!(l = calloc(1, sizeof(*l)))) {
		return NULL;
	}
	l->refs = 1;
	l->next = NULL;
	return l;
}

void shs__list_drop(shs__share *s, shs__list *l)
{
	if (!l || --l->refs)
		return;
	l->next = s->pool;
	s->pool = l;
}

struct shs_plan_lists {
	shs__share share;
	const shs_module *m;
	shs_mesh mesh;
	char names[SHS_MESH_MAX_AXES][32];
};

int shs_plan_lists_new(const shs_module *m, const shs_mesh *mesh, shs_plan_lists **out,
		       shs_err *e)
{
	shs_plan_lists *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l || shs__share_init(&l->share, m) != SHS_OK) {
		free(l);
		return shs_seterr(e, SHS_ENOMEM, "plan: out of memory");
	}
	l->m = m;
	l->mesh = *mesh;
	for (uint32_t a = 0; a < mesh->n_axes && a < SHS_MESH_MAX_AXES; a++) {
		shs_str_copy(l->names[a], sizeof(l->names[a]), mesh->names[a]);
		l->mesh.names[a] = l->names[a];
		if (!strcmp(mesh->names[a], "stage")) /* plans see one device there (plan_make.c) */
			l->mesh.sizes[a] = 1;
	}
	*out = l;
	return SHS_OK;
}

void shs_plan_lists_free(shs_plan_lists *l)
{
	if (!l)
		return;
	shs__share_free(&l->share);
	free(l);
}

shs__share *shs__plan_lists_share(shs_plan_lists *l)
{
	return &l->share;
}

bool shs__plan_lists_fit(const shs_plan_lists *l, const shs_module *m, const shs_mesh *mesh)
{
	if (l->m != m || l->mesh.n_axes != mesh->n_axes)
		return false;
	for (uint32_t a = 0; a < mesh->n_axes; a++)
		if (l->mesh.sizes[a] != mesh->sizes[a] || strcmp(l->mesh.names[a], mesh->names[a]))
			return false;
	return true;
}
