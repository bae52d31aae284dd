/* XLA sharding text: parsing and printing HloSharding's text form. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"
#include "sharding.h"
#include "sharding_internal.h"
#include "sharding_mesh.h"
#include "text_print.h"

enum {
	LIST_FIRST_CAP = 8,     /* first room of a growing list */
	METADATA_FIRST_CAP = 2, /* first room of a metadata list (most hold one record) */
	MSG_MAX = 512,          /* longest message detail */
	SHOWN_NAME_MAX = 40     /* bytes of an unknown word quoted in a message */
};

/* ---- Parsing ----------------------------------------------------------------------------- */

/* Parser state: the text, the cursor and where errors go. */
typedef struct sh_parser {
	shs_arena *a;
	const char *s;
	size_t len, pos;
	size_t *err_off;
	shs_err *e;
} sh_parser;

/* A growable int64 list in the arena (the old storage is left behind). */
typedef struct i64_list {
	int64_t *v;
	uint32_t n, cap;
} i64_list;

static int sh_fail(sh_parser *p, size_t off, const char *fmt, ...) SHS_PRINTF(3, 4);

static int sh_fail(sh_parser *p, size_t off, const char *fmt, ...)
{
	char msg[MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*p->err_off = off;
	return shs_seterr(p->e, SHS_EPARSE, "sharding: %s at offset %zu", msg, off);
}

static int sh_nomem(sh_parser *p)
{
	*p->err_off = p->pos;
	return shs_seterr(p->e, SHS_ENOMEM, "sharding: out of memory at offset %zu", p->pos);
}

static void sh_space(sh_parser *p)
{
	p->pos = shs__skip_space(p->s, p->len, p->pos);
}

static char sh_peek(sh_parser *p)
{
	return p->pos < p->len ? p->s[p->pos] : '\0';
}

/* Skips space, then consumes c or fails with "expected 'c' what". */
static int sh_expect(sh_parser *p, char c, const char *what)
{
	sh_space(p);
	if (sh_peek(p) != c) {
		if (p->pos >= p->len)
			return sh_fail(p, p->pos, "expected '%c' %s, found the end of input", c,
				       what);
		return sh_fail(p, p->pos, "expected '%c' %s, found '%c'", c, what, sh_peek(p));
	}
	p->pos++;
	return SHS_OK;
}

/* The storage v of n items of size sz with room for one more: v itself while n < *cap, else a
 * copy in the arena twice as large (first first items), the old storage left behind. NULL when
 * out of memory. */
static void *sh_room(sh_parser *p, void *v, uint32_t n, uint32_t *cap, size_t sz, uint32_t first)
{
	uint32_t nc = *cap ? *cap * 2 : first;
	void *nv;

	if (n < *cap)
		return v;
	if (nc < *cap)
		return NULL;
	nv = shs_arena_alloc(p->a, (size_t)nc * sz);
	if (!nv)
		return NULL;
	if (n)
		memcpy(nv, v, (size_t)n * sz);
	*cap = nc;
	return nv;
}

static int list_push(sh_parser *p, i64_list *l, int64_t v)
{
	l->v = sh_room(p, l->v, l->n, &l->cap, sizeof(*l->v), LIST_FIRST_CAP);
	if (!l->v)
		return sh_nomem(p);
	l->v[l->n++] = v;
	return SHS_OK;
}

/* Skips space, then a ',' when there is one; true when there was. */
static bool sh_comma(sh_parser *p)
{
	sh_space(p);
	if (sh_peek(p) != ',')
		return false;
	p->pos++;
	return true;
}

/* A signed decimal int64 at the cursor (after space). */
static int sh_int(sh_parser *p, int64_t *out)
{
	size_t start, i;
	bool neg = false;
	uint64_t v = 0, limit;

	sh_space(p);
	start = i = p->pos;
	if (i < p->len && p->s[i] == '-') {
		neg = true;
		i++;
	}
	if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
		return sh_fail(p, start, "expected an integer");
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < p->len && p->s[i] >= '0' && p->s[i] <= '9'; i++) {
		unsigned d = (unsigned)(p->s[i] - '0');

		if (v > (limit - d) / 10)
			return sh_fail(p, start, "integer '%.*s' overflows int64",
				       (int)(i - start + 1), p->s + start);
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	p->pos = i;
	return SHS_OK;
}

/* A size (>= 1). */
static int sh_size(sh_parser *p, const char *what, int64_t *out)
{
	size_t start = shs__skip_space(p->s, p->len, p->pos);
	int rc = sh_int(p, out);

	if (rc == SHS_OK && *out < 1)
		return sh_fail(p, start, "%s size %lld must be >= 1", what, (long long)*out);
	return rc;
}

/* `[a,b,...]` of sizes, at most SHS_SHARDING_MAX_DIMS; the '[' is next after space. */
static int sh_size_list(sh_parser *p, const char *what, i64_list *l)
{
	int rc = sh_expect(p, '[', what);

	while (rc == SHS_OK) {
		int64_t v;

		if (l->n == SHS_SHARDING_MAX_DIMS)
			return sh_fail(p, p->pos, "more than %d %s", SHS_SHARDING_MAX_DIMS, what);
		rc = sh_size(p, what, &v);
		if (rc == SHS_OK)
			rc = list_push(p, l, v);
		if (rc != SHS_OK)
			return rc;
		if (!sh_comma(p))
			break;
	}
	return rc == SHS_OK ? sh_expect(p, ']', what) : rc;
}

/* A size list (as sh_size_list) and its product. */
static int sh_dims(sh_parser *p, const char *what, i64_list *l, int64_t *prod)
{
	size_t start = shs__skip_space(p->s, p->len, p->pos);
	int rc = sh_size_list(p, what, l);

	if (rc == SHS_OK && !shs__dims_product(l->v, l->n, prod))
		return sh_fail(p, start, "%s product overflows int64", what);
	return rc;
}

/* `T(p0,...)` after a multi-dim iota; fills sh->iota_perm. */
static int sh_iota_perm(sh_parser *p, shs_sharding *sh)
{
	size_t start, at;
	int rc;

	sh_space(p);
	start = p->pos;
	if (sh_peek(p) != 'T')
		return sh_fail(p, start, "expected 'T(' after the multi-dim iota reshape dims (XLA "
			       "requires a transpose)");
	p->pos++;
	rc = sh_expect(p, '(', "after 'T'");
	for (uint32_t i = 0; rc == SHS_OK && i < sh->n_iota; i++) {
		int64_t v;

		if (i && (rc = sh_expect(p, ',', "between iota transpose entries")) != SHS_OK)
			return rc;
		at = shs__skip_space(p->s, p->len, p->pos);
		rc = sh_int(p, &v);
		if (rc == SHS_OK && (v < 0 || v >= sh->n_iota))
			return sh_fail(p, at, "iota transpose entry %lld out of range [0, %u)",
				       (long long)v, sh->n_iota);
		if (rc == SHS_OK)
			sh->iota_perm[i] = (int32_t)v;
	}
	if (rc == SHS_OK)
		rc = sh_expect(p, ')', "to close the iota transpose (one entry per reshape dim)");
	if (rc == SHS_OK && !shs__is_permutation(sh->iota_perm, sh->n_iota))
		return sh_fail(p, start, "iota transpose is not a permutation");
	return rc;
}

/* `<=[r...]T(...)` after the tile dims. */
static int sh_iota(sh_parser *p, shs_sharding *sh, int64_t tile_product)
{
	i64_list r = { 0 };
	size_t start = shs__skip_space(p->s, p->len, p->pos);
	int64_t prod;
	int rc = sh_dims(p, "iota reshape dims", &r, &prod);

	if (rc != SHS_OK)
		return rc;
	if (prod != tile_product)
		return sh_fail(p, start,
			       "iota reshape dims product %lld differs from tile dims product %lld",
			       (long long)prod, (long long)tile_product);
	sh->n_iota = r.n;
	sh->iota_dims = r.v;
	sh->iota_perm = shs_arena_calloc(p->a, r.n, sizeof(*sh->iota_perm));
	if (!sh->iota_perm)
		return sh_nomem(p);
	if (r.n > 1)
		rc = sh_iota_perm(p, sh);
	if (rc == SHS_OK)
		shs__iota_canonicalize(sh->iota_dims, sh->iota_perm, &sh->n_iota);
	return rc;
}

/* The explicit device list `0,1,2,3` after the tile dims. */
static int sh_device_list(sh_parser *p, shs_sharding *sh, int64_t tile_product)
{
	i64_list l = { 0 };
	size_t start;
	int rc;

	sh_space(p);
	start = p->pos;
	for (;;) {
		int64_t v;

		if ((int64_t)l.n == tile_product)
			return sh_fail(p, p->pos, "more device ids than the tile dims product %lld",
				       (long long)tile_product);
		rc = sh_int(p, &v);
		if (rc == SHS_OK)
			rc = list_push(p, &l, v);
		if (rc != SHS_OK)
			return rc;
		if (!sh_comma(p))
			break;
	}
	if ((int64_t)l.n != tile_product)
		return sh_fail(p, start, "%u device ids for tile dims with product %lld", l.n,
			       (long long)tile_product);
	if (l.n < 2)
		return sh_fail(p, start, "a tiled sharding needs more than one device (use "
			       "{maximal device=N})");
	sh->n_devices = l.n;
	sh->devices = l.v;
	return SHS_OK;
}

/* `[d...]` then the iota or explicit devices, after `devices=`. */
static int sh_tile_assignment(sh_parser *p, shs_sharding *sh)
{
	i64_list d = { 0 };
	int64_t prod;
	int rc = sh_dims(p, "tile dims", &d, &prod);

	if (rc != SHS_OK)
		return rc;
	sh->n_tile_dims = d.n;
	sh->tile_dims = d.v;
	sh_space(p);
	if (p->pos + 1 < p->len && p->s[p->pos] == '<' && p->s[p->pos + 1] == '=') {
		p->pos += 2;
		return sh_iota(p, sh, prod);
	}
	return sh_device_list(p, sh, prod);
}

static bool word_is(const char *w, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(w, lit, n);
}

/* How much of an n-byte word to quote in a message. */
static int shown_len(size_t n)
{
	return (int)(n > SHOWN_NAME_MAX ? SHOWN_NAME_MAX : n);
}

/* `{manual, replicated, ...}` after `last_tile_dims=`. */
static int sh_last_tile_dims(sh_parser *p, shs_sharding *sh)
{
	int32_t types[SHS_SHARDING_MAX_DIMS];
	uint32_t n = 0;
	int rc = sh_expect(p, '{', "to start last_tile_dims");

	while (rc == SHS_OK) {
		size_t start;
		const char *w;

		sh_space(p);
		start = p->pos;
		while (p->pos < p->len && p->s[p->pos] >= 'a' && p->s[p->pos] <= 'z')
			p->pos++;
		w = p->s + start;
		if (n == SHS_SHARDING_MAX_DIMS)
			return sh_fail(p, start, "more than %d last_tile_dims",
				       SHS_SHARDING_MAX_DIMS);
		if (word_is(w, p->pos - start, "manual"))
			types[n++] = SHS_SHARDING_MANUAL;
		else if (word_is(w, p->pos - start, "replicated"))
			types[n++] = SHS_SHARDING_REPLICATED;
		else if (word_is(w, p->pos - start, "unreduced"))
			types[n++] = SHS_SHARDING_UNREDUCED;
		else
			return sh_fail(p, start, "last_tile_dims entry '%.*s' is not manual, "
				       "replicated or unreduced", shown_len(p->pos - start), w);
		if (!sh_comma(p))
			break;
	}
	if (rc == SHS_OK)
		rc = sh_expect(p, '}', "to end last_tile_dims");
	if (rc != SHS_OK)
		return rc;
	sh->last_tile_dims = shs_arena_memdup(p->a, types, n * sizeof(*types));
	if (!sh->last_tile_dims)
		return sh_nomem(p);
	sh->n_last_tile_dims = n;
	return SHS_OK;
}

/* One metadata record at the cursor, appended to l (storage in the arena). */
static int sh_one_metadata(sh_parser *p, shs_metadata **v, uint32_t *n, uint32_t *cap)
{
	size_t used = 0, off = 0;
	int rc;

	sh_space(p);
	*v = sh_room(p, *v, *n, cap, sizeof(**v), METADATA_FIRST_CAP);
	if (!*v)
		return sh_nomem(p);
	rc = shs_metadata_parse(p->a, p->s + p->pos, p->len - p->pos, &used, &(*v)[*n], &off,
				p->e);
	if (rc != SHS_OK) {
		*p->err_off = p->pos + off;
		if (p->e)
			shs_err_prefix(p->e, "sharding");
		return rc;
	}
	(*n)++;
	p->pos += used;
	return SHS_OK;
}

/* `{op_name=...}` or `{{...}, {...}}` after `metadata=`. */
static int sh_metadata(sh_parser *p, shs_sharding *sh)
{
	uint32_t n = 0, cap = 0;
	shs_metadata *v = NULL;
	size_t after;
	int rc;

	sh_space(p);
	if (sh_peek(p) != '{')
		return sh_fail(p, p->pos, "expected '{' after metadata=");
	after = shs__skip_space(p->s, p->len, p->pos + 1);
	if (after < p->len && p->s[after] == '{') {
		p->pos = after;
		for (;;) {
			rc = sh_one_metadata(p, &v, &n, &cap);
			if (rc != SHS_OK)
				return rc;
			if (!sh_comma(p))
				break;
		}
		rc = sh_expect(p, '}', "to end the metadata list");
	} else {
		rc = sh_one_metadata(p, &v, &n, &cap);
	}
	sh->metadata = v;
	sh->n_metadata = n;
	return rc;
}

/* What one single-sharding body said, before the checks that need all of it. */
typedef struct sh_items {
	int kind;        /* -1: none yet */
	size_t kind_off;
	bool has_device; /* device=N */
	int64_t device;
	bool has_tiles, has_group, has_metadata;
	size_t tiles_off, extra_off;
} sh_items;

static int sh_kind_word(sh_parser *p, sh_items *it, const char *w, size_t n, size_t off)
{
	static const struct {
		const char *word;
		shs_sharding_kind kind;
	} kinds[] = {
		{ "replicated", SHS_SHARDING_REPLICATED }, { "manual", SHS_SHARDING_MANUAL },
		{ "unknown", SHS_SHARDING_UNKNOWN },       { "unreduced", SHS_SHARDING_UNREDUCED },
		{ "maximal", SHS_SHARDING_MAXIMAL },
	};

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		if (!word_is(w, n, kinds[k].word))
			continue;
		if (it->kind >= 0)
			return sh_fail(p, off, "'%s' conflicts with an earlier kind keyword",
				       kinds[k].word);
		it->kind = (int)kinds[k].kind;
		it->kind_off = off;
		return SHS_OK;
	}
	return 1; /* not a kind word */
}

/* Marks the item what at off as seen; fails when *seen says it was already. */
static int sh_once(sh_parser *p, bool *seen, size_t off, const char *what)
{
	if (*seen)
		return sh_fail(p, off, "%s given twice", what);
	*seen = true;
	return SHS_OK;
}

/* An attribute `name=value` of a single sharding. */
static int sh_attr(sh_parser *p, shs_sharding *sh, sh_items *it, const char *w, size_t n,
		   size_t off)
{
	bool has_last_tile_dims = sh->n_last_tile_dims;
	int rc;

	p->pos++; /* the '=' */
	if (word_is(w, n, "devices")) {
		it->tiles_off = off;
		rc = sh_once(p, &it->has_tiles, off, "devices=");
		return rc == SHS_OK ? sh_tile_assignment(p, sh) : rc;
	}
	if (word_is(w, n, "device")) {
		rc = sh_once(p, &it->has_device, off, "device=");
		return rc == SHS_OK ? sh_int(p, &it->device) : rc;
	}
	if (word_is(w, n, "metadata")) {
		rc = sh_once(p, &it->has_metadata, off, "metadata=");
		return rc == SHS_OK ? sh_metadata(p, sh) : rc;
	}
	if (word_is(w, n, "last_tile_dims")) {
		it->extra_off = off;
		rc = sh_once(p, &has_last_tile_dims, off, "last_tile_dims=");
		return rc == SHS_OK ? sh_last_tile_dims(p, sh) : rc;
	}
	return sh_fail(p, off, "unknown sharding attribute '%.*s='", shown_len(n), w);
}

/* `shard_as N` / `shard_like N`. */
static int sh_group(sh_parser *p, shs_sharding *sh, sh_items *it, bool like, size_t off)
{
	int rc;

	if (it->has_group)
		return sh_fail(p, off, "a second shard_as/shard_like");
	it->has_group = true;
	sh->is_shard_group = true;
	sh->shard_like = like;
	rc = sh_int(p, &sh->shard_group_id);
	if (rc == SHS_OK && sh->shard_group_id < 0)
		return sh_fail(p, off, "shard group id %lld is negative",
			       (long long)sh->shard_group_id);
	return rc;
}

static bool is_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* One word of a single sharding body at the cursor. */
static int sh_item(sh_parser *p, shs_sharding *sh, sh_items *it)
{
	size_t off = p->pos, n;
	const char *w = p->s + off;
	int rc;

	while (p->pos < p->len && is_word_char(p->s[p->pos]))
		p->pos++;
	n = p->pos - off;
	if (!n)
		return sh_fail(p, off, "unexpected '%c' in sharding", sh_peek(p));
	if (sh_peek(p) == '=')
		return sh_attr(p, sh, it, w, n, off);
	rc = sh_kind_word(p, it, w, n, off);
	if (rc <= 0)
		return rc;
	if (word_is(w, n, "last_tile_dim_replicate")) {
		it->extra_off = off;
		return sh_once(p, &sh->replicate_on_last_tile_dim, off, "last_tile_dim_replicate");
	}
	if (word_is(w, n, "shard_as") || word_is(w, n, "shard_like"))
		return sh_group(p, sh, it, n == strlen("shard_like"), off);
	return sh_fail(p, off, "unknown sharding keyword '%.*s'", shown_len(n), w);
}

/* The checks that need the whole body: kinds exclude tiles, maximal needs device=, ... */
static int sh_finish_single(sh_parser *p, shs_sharding *sh, const sh_items *it, size_t open)
{
	bool extras = sh->replicate_on_last_tile_dim || sh->n_last_tile_dims;

	if (it->kind < 0 && !it->has_tiles)
		return sh_fail(p, open, "expected replicated, manual, unknown, unreduced, maximal "
			       "or devices= in the sharding");
	if (it->kind >= 0 && it->has_tiles)
		return sh_fail(p, it->tiles_off, "devices= cannot go with a kind keyword");
	if (it->has_device && it->kind != SHS_SHARDING_MAXIMAL)
		return sh_fail(p, open, "device= is only for maximal shardings");
	if (it->kind >= 0 && extras)
		return sh_fail(p, it->extra_off, "last_tile_dim(s) need devices=");
	if (sh->replicate_on_last_tile_dim && sh->n_last_tile_dims)
		return sh_fail(p, it->extra_off,
			       "last_tile_dim_replicate and last_tile_dims are exclusive");
	if (sh->n_last_tile_dims + (sh->replicate_on_last_tile_dim ? 1u : 0u) > sh->n_tile_dims &&
	    it->has_tiles)
		return sh_fail(p, it->extra_off, "more subgroup dims than the %u tile dims",
			       sh->n_tile_dims);
	if (it->kind < 0) {
		sh->kind = SHS_SHARDING_TILED;
		return SHS_OK;
	}
	sh->kind = (shs_sharding_kind)it->kind;
	if (sh->kind != SHS_SHARDING_MAXIMAL)
		return SHS_OK;
	if (!it->has_device)
		return sh_fail(p, it->kind_off, "maximal needs device=N");
	sh->n_tile_dims = 1;
	sh->tile_dims = shs_arena_alloc(p->a, sizeof(*sh->tile_dims));
	sh->devices = shs_arena_alloc(p->a, sizeof(*sh->devices));
	if (!sh->tile_dims || !sh->devices)
		return sh_nomem(p);
	sh->tile_dims[0] = 1;
	sh->devices[0] = it->device;
	sh->n_devices = 1;
	return SHS_OK;
}

/* A single sharding's body; the cursor is just past its '{'. */
static int sh_single(sh_parser *p, shs_sharding *sh, size_t open)
{
	sh_items it = { .kind = -1 };
	int rc;

	for (;;) {
		sh_space(p);
		if (p->pos >= p->len)
			return sh_fail(p, p->pos,
				       "expected '}' to end the sharding, found the end of input");
		if (sh_peek(p) == '}')
			break;
		rc = sh_item(p, sh, &it);
		if (rc != SHS_OK)
			return rc;
	}
	p->pos++;
	return sh_finish_single(p, sh, &it, open);
}

static int sh_any(sh_parser *p, int depth, shs_sharding *sh);

/* A tuple's elements; the cursor is just past its '{'. */
static int sh_tuple(sh_parser *p, int depth, shs_sharding *sh)
{
	shs_sharding *v = NULL;
	uint32_t n = 0, cap = 0;
	int rc;

	sh->kind = SHS_SHARDING_TUPLE;
	sh_space(p);
	if (sh_peek(p) == '}') {
		p->pos++;
		return SHS_OK;
	}
	do {
		v = sh_room(p, v, n, &cap, sizeof(*v), LIST_FIRST_CAP);
		if (!v)
			return sh_nomem(p);
		rc = sh_any(p, depth + 1, &v[n]);
		if (rc != SHS_OK)
			return rc;
		n++;
		sh->tuple = v;
		sh->n_tuple = n;
	} while (sh_comma(p));
	return sh_expect(p, '}', "to end the tuple sharding");
}

/* A sharding (single or tuple) at the cursor. */
static int sh_any(sh_parser *p, int depth, shs_sharding *sh)
{
	size_t open, next;

	memset(sh, 0, sizeof(*sh));
	sh_space(p);
	open = p->pos;
	if (depth > SHS_MAX_NESTING)
		return sh_fail(p, open, "sharding nested deeper than %d", SHS_MAX_NESTING);
	if (sh_peek(p) != '{')
		return sh_fail(p, open, "expected '{' to start a sharding");
	p->pos++;
	next = shs__skip_space(p->s, p->len, p->pos);
	if (next < p->len && (p->s[next] == '{' || p->s[next] == '}'))
		return sh_tuple(p, depth, sh);
	if (shs__at_mesh_sharding(p->s, p->len, p->pos))
		return shs__mesh_sharding_parse(p->a, p->s, p->len, &p->pos, sh, p->err_off, p->e);
	return sh_single(p, sh, open);
}

int shs_sharding_parse(shs_arena *a, const char *s, size_t len, size_t *consumed,
		       shs_sharding **out, size_t *err_off, shs_err *e)
{
	sh_parser p = { .a = a, .s = s, .len = len, .err_off = err_off, .e = e };
	shs_sharding *sh = shs_arena_alloc(a, sizeof(*sh));
	int rc;

	if (!sh) {
		*err_off = 0;
		return shs_seterr(e, SHS_ENOMEM, "sharding: out of memory");
	}
	if (!len || s[0] != '{')
		return sh_fail(&p, 0, "expected '{' to start a sharding");
	rc = sh_any(&p, 0, sh);
	if (rc != SHS_OK)
		return rc;
	*consumed = p.pos;
	*out = sh;
	return SHS_OK;
}

/* ---- Printing ------------------------------------------------------------------------------ */

static void print_tiles(shs_buf *b, const shs_sharding *s)
{
	shs_buf_puts(b, "devices=[");
	shs__put_i64_csv(b, s->tile_dims, s->n_tile_dims);
	shs_buf_putc(b, ']');
	if (!s->n_iota) {
		shs__put_i64_csv(b, s->devices, s->n_devices);
		return;
	}
	shs_buf_puts(b, "<=[");
	shs__put_i64_csv(b, s->iota_dims, s->n_iota);
	shs_buf_putc(b, ']');
	if (s->n_iota > 1) {
		shs_buf_puts(b, "T(");
		for (uint32_t i = 0; i < s->n_iota; i++)
			shs_buf_printf(b, i ? ",%d" : "%d", (int)s->iota_perm[i]);
		shs_buf_putc(b, ')');
	}
}

static void print_last_tile_dims(shs_buf *b, const shs_sharding *s)
{
	if (!s->n_last_tile_dims)
		return;
	shs_buf_puts(b, " last_tile_dims={");
	for (uint32_t i = 0; i < s->n_last_tile_dims; i++) {
		const char *name;

		switch (s->last_tile_dims[i]) {
		case SHS_SHARDING_MANUAL: name = "manual"; break;
		case SHS_SHARDING_REPLICATED: name = "replicated"; break;
		case SHS_SHARDING_UNREDUCED: name = "unreduced"; break;
		case SHS_SHARDING_MAXIMAL: name = "maximal"; break;
		default: name = "error_type."; break;
		}
		if (i)
			shs_buf_puts(b, ", ");
		shs_buf_puts(b, name);
	}
	shs_buf_putc(b, '}');
}

void shs__put_metadata_list(shs_buf *b, const shs_metadata *md, uint32_t n)
{
	shs_buf_putc(b, '{');
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			shs_buf_puts(b, ", ");
		shs_metadata_print(b, &md[i]);
	}
	shs_buf_putc(b, '}');
}

/* The shard group and metadata that end every non-tuple sharding, and its '}'. */
static void print_tail(shs_buf *b, const shs_sharding *s)
{
	if (s->is_shard_group) {
		shs_buf_puts(b, s->shard_like ? " shard_like " : " shard_as ");
		shs_buf_put_i64(b, s->shard_group_id);
	}
	if (s->n_metadata == 1) {
		shs_buf_puts(b, " metadata=");
		shs_metadata_print(b, &s->metadata[0]);
	} else if (s->n_metadata > 1) {
		shs_buf_puts(b, " metadata=");
		shs__put_metadata_list(b, s->metadata, s->n_metadata);
	}
	shs_buf_putc(b, '}');
}

void shs_sharding_print(shs_buf *b, const shs_sharding *s)
{
	switch (s->kind) {
	case SHS_SHARDING_TUPLE:
		shs_buf_putc(b, '{');
		for (uint32_t i = 0; i < s->n_tuple; i++) {
			shs__put_list_sep(b, i, true);
			shs_sharding_print(b, &s->tuple[i]);
		}
		shs_buf_putc(b, '}');
		return;
	case SHS_SHARDING_REPLICATED: shs_buf_puts(b, "{replicated"); break;
	case SHS_SHARDING_MANUAL: shs_buf_puts(b, "{manual"); break;
	case SHS_SHARDING_UNKNOWN: shs_buf_puts(b, "{unknown"); break;
	case SHS_SHARDING_UNREDUCED: shs_buf_puts(b, "{unreduced"); break;
	case SHS_SHARDING_MAXIMAL:
		shs_buf_puts(b, "{maximal device=");
		shs_buf_put_i64(b, s->n_devices ? s->devices[0] : 0);
		break;
	case SHS_SHARDING_NAMED:
		shs__mesh_sharding_print(b, s);
		return;
	case SHS_SHARDING_TILED:
		shs_buf_putc(b, '{');
		print_tiles(b, s);
		if (s->replicate_on_last_tile_dim)
			shs_buf_puts(b, " last_tile_dim_replicate");
		print_last_tile_dims(b, s);
		break;
	}
	print_tail(b, s);
}
