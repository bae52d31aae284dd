/* XLA sharding: text form, checks, equality. */
#include "sharding.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "sharding_internal.h"

enum {
	INDEX_COMMENT_EVERY = 5, /* XLA prints a / *index=N* / comment before every 5th element */
	LIST_FIRST_CAP = 8,
	MSG_MAX = 512,
	SHOWN_NAME_MAX = 40      /* bytes of an unknown word quoted in a message */
};

/* ---- Small shared helpers ----------------------------------------------------------------- */

bool shs__dims_product(const int64_t *dims, uint32_t n, int64_t *out)
{
	int64_t p = 1;

	for (uint32_t i = 0; i < n; i++) {
		if (dims[i] < 1 || p > INT64_MAX / dims[i])
			return false;
		p *= dims[i];
	}
	*out = p;
	return true;
}

bool shs__is_permutation(const int32_t *perm, uint32_t n)
{
	bool seen[SHS_SHARDING_MAX_DIMS] = { false };

	if (n > SHS_SHARDING_MAX_DIMS)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		int32_t v = perm[i];

		if (v < 0 || (uint32_t)v >= n || seen[v])
			return false;
		seen[v] = true;
	}
	return true;
}

/* Drops reshape dims of size 1, renumbering perm. */
static void iota_drop_ones(int64_t *dims, int32_t *perm, uint32_t *n)
{
	int32_t renum[SHS_SHARDING_MAX_DIMS];
	uint32_t kept = 0, np = 0;

	for (uint32_t i = 0; i < *n; i++)
		renum[i] = dims[i] == 1 ? -1 : (int32_t)kept++;
	for (uint32_t i = 0; i < *n; i++) {
		if (renum[i] >= 0)
			dims[renum[i]] = dims[i];
		if (renum[perm[i]] >= 0)
			perm[np++] = renum[perm[i]];
	}
	*n = kept;
}

/* Merges one pair of perm-adjacent, in-order dims; false when there is none. */
static bool iota_merge_one(int64_t *dims, int32_t *perm, uint32_t n)
{
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (perm[i + 1] == perm[i] + 1) {
			dims[perm[i]] *= dims[perm[i + 1]];
			dims[perm[i + 1]] = 1;
			return true;
		}
	}
	return false;
}

void shs__iota_canonicalize(int64_t *dims, int32_t *perm, uint32_t *n)
{
	if (*n > 1) {
		do
			iota_drop_ones(dims, perm, n);
		while (iota_merge_one(dims, perm, *n));
	}
	if (*n == 0) {
		dims[0] = 1;
		perm[0] = 0;
		*n = 1;
	}
}

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
			return sh_fail(p, p->pos, "expected '%c' %s, found the end of input", c, what);
		return sh_fail(p, p->pos, "expected '%c' %s, found '%c'", c, what, sh_peek(p));
	}
	p->pos++;
	return SHS_OK;
}

static int list_push(sh_parser *p, i64_list *l, int64_t v)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : LIST_FIRST_CAP;
		int64_t *nv;

		if (cap < l->cap)
			return sh_nomem(p);
		nv = shs_arena_alloc(p->a, (size_t)cap * sizeof(*nv));
		if (!nv)
			return sh_nomem(p);
		if (l->n)
			memcpy(nv, l->v, (size_t)l->n * sizeof(*nv));
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = v;
	return SHS_OK;
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
		sh_space(p);
		if (sh_peek(p) != ',')
			break;
		p->pos++;
	}
	return rc == SHS_OK ? sh_expect(p, ']', what) : rc;
}

/* `T(p0,...)` after a multi-dim iota; fills sh->iota_perm. */
static int sh_iota_perm(sh_parser *p, shs_sharding *sh)
{
	size_t start, at;
	int rc;

	sh_space(p);
	start = p->pos;
	if (sh_peek(p) != 'T')
		return sh_fail(p, start, "expected 'T(' after the multi-dim iota reshape dims "
					 "(XLA requires a transpose)");
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
	size_t start;
	int64_t prod;
	int rc;

	sh_space(p);
	start = p->pos;
	rc = sh_size_list(p, "iota reshape dims", &r);
	if (rc != SHS_OK)
		return rc;
	if (!shs__dims_product(r.v, r.n, &prod))
		return sh_fail(p, start, "iota reshape dims product overflows int64");
	if (prod != tile_product)
		return sh_fail(p, start, "iota reshape dims product %lld differs from tile dims "
					 "product %lld", (long long)prod, (long long)tile_product);
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
		sh_space(p);
		if (sh_peek(p) != ',')
			break;
		p->pos++;
	}
	if ((int64_t)l.n != tile_product)
		return sh_fail(p, start, "%u device ids for tile dims with product %lld", l.n,
			       (long long)tile_product);
	if (l.n < 2)
		return sh_fail(p, start, "a tiled sharding needs more than one device "
					 "(use {maximal device=N})");
	sh->n_devices = l.n;
	sh->devices = l.v;
	return SHS_OK;
}

/* `[d...]` then the iota or explicit devices, after `devices=`. */
static int sh_tile_assignment(sh_parser *p, shs_sharding *sh)
{
	i64_list d = { 0 };
	size_t start;
	int64_t prod;
	int rc;

	sh_space(p);
	start = p->pos;
	rc = sh_size_list(p, "tile dims", &d);
	if (rc != SHS_OK)
		return rc;
	if (!shs__dims_product(d.v, d.n, &prod))
		return sh_fail(p, start, "tile dims product overflows int64");
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
			return sh_fail(p, start, "more than %d last_tile_dims", SHS_SHARDING_MAX_DIMS);
		if (word_is(w, p->pos - start, "manual"))
			types[n++] = SHS_SHARDING_MANUAL;
		else if (word_is(w, p->pos - start, "replicated"))
			types[n++] = SHS_SHARDING_REPLICATED;
		else if (word_is(w, p->pos - start, "unreduced"))
			types[n++] = SHS_SHARDING_UNREDUCED;
		else
			return sh_fail(p, start, "last_tile_dims entry '%.*s' is not manual, "
						 "replicated or unreduced",
				       shown_len(p->pos - start), w);
		sh_space(p);
		if (sh_peek(p) != ',')
			break;
		p->pos++;
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
	if (*n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 2;
		shs_metadata *nv = shs_arena_alloc(p->a, (size_t)nc * sizeof(*nv));

		if (!nv || nc < *cap)
			return sh_nomem(p);
		if (*n)
			memcpy(nv, *v, (size_t)*n * sizeof(*nv));
		*v = nv;
		*cap = nc;
	}
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
			sh_space(p);
			if (sh_peek(p) != ',')
				break;
			p->pos++;
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

/* An attribute `name=value` of a single sharding. */
static int sh_attr(sh_parser *p, shs_sharding *sh, sh_items *it, const char *w, size_t n,
		   size_t off)
{
	p->pos++; /* the '=' */
	if (word_is(w, n, "devices")) {
		if (it->has_tiles)
			return sh_fail(p, off, "devices= given twice");
		it->has_tiles = true;
		it->tiles_off = off;
		return sh_tile_assignment(p, sh);
	}
	if (word_is(w, n, "device")) {
		if (it->has_device)
			return sh_fail(p, off, "device= given twice");
		it->has_device = true;
		return sh_int(p, &it->device);
	}
	if (word_is(w, n, "metadata")) {
		if (it->has_metadata)
			return sh_fail(p, off, "metadata= given twice");
		it->has_metadata = true;
		return sh_metadata(p, sh);
	}
	if (word_is(w, n, "last_tile_dims")) {
		if (sh->n_last_tile_dims)
			return sh_fail(p, off, "last_tile_dims= given twice");
		it->extra_off = off;
		return sh_last_tile_dims(p, sh);
	}
	return sh_fail(p, off, "unknown sharding attribute '%.*s='",
		       shown_len(n), w);
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
		if (sh->replicate_on_last_tile_dim)
			return sh_fail(p, off, "last_tile_dim_replicate given twice");
		sh->replicate_on_last_tile_dim = true;
		it->extra_off = off;
		return SHS_OK;
	}
	if (word_is(w, n, "shard_as") || word_is(w, n, "shard_like"))
		return sh_group(p, sh, it, n == strlen("shard_like"), off);
	return sh_fail(p, off, "unknown sharding keyword '%.*s'",
		       shown_len(n), w);
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
			return sh_fail(p, p->pos, "expected '}' to end the sharding, found the end "
						  "of input");
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
	for (;;) {
		if (n == cap) {
			uint32_t nc = cap ? cap * 2 : LIST_FIRST_CAP;
			shs_sharding *nv = shs_arena_alloc(p->a, (size_t)nc * sizeof(*nv));

			if (!nv || nc < cap)
				return sh_nomem(p);
			if (n)
				memcpy(nv, v, (size_t)n * sizeof(*nv));
			v = nv;
			cap = nc;
		}
		rc = sh_any(p, depth + 1, &v[n]);
		if (rc != SHS_OK)
			return rc;
		n++;
		sh->tuple = v;
		sh->n_tuple = n;
		sh_space(p);
		if (sh_peek(p) != ',')
			break;
		p->pos++;
	}
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

static void put_i64_list(shs_buf *b, const int64_t *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			shs_buf_putc(b, ',');
		shs_buf_put_i64(b, v[i]);
	}
}

static void print_tiles(shs_buf *b, const shs_sharding *s)
{
	shs_buf_puts(b, "devices=[");
	put_i64_list(b, s->tile_dims, s->n_tile_dims);
	shs_buf_putc(b, ']');
	if (!s->n_iota) {
		put_i64_list(b, s->devices, s->n_devices);
		return;
	}
	shs_buf_puts(b, "<=[");
	put_i64_list(b, s->iota_dims, s->n_iota);
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
		shs_buf_puts(b, " metadata={");
		for (uint32_t i = 0; i < s->n_metadata; i++) {
			if (i)
				shs_buf_puts(b, ", ");
			shs_metadata_print(b, &s->metadata[i]);
		}
		shs_buf_putc(b, '}');
	}
	shs_buf_putc(b, '}');
}

void shs_sharding_print(shs_buf *b, const shs_sharding *s)
{
	switch (s->kind) {
	case SHS_SHARDING_TUPLE:
		shs_buf_putc(b, '{');
		for (uint32_t i = 0; i < s->n_tuple; i++) {
			if (i && i % INDEX_COMMENT_EVERY == 0)
				shs_buf_printf(b, ", /*index=%u*/", i);
			else if (i)
				shs_buf_puts(b, ", ");
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

/* ---- Devices, equality, cloning, checks ---------------------------------------------------- */

int64_t shs_sharding_device(const shs_sharding *s, int64_t i)
{
	int64_t stride[SHS_SHARDING_MAX_DIMS], dev = 0, acc = 1;

	if (s->kind == SHS_SHARDING_MAXIMAL)
		return s->n_devices ? s->devices[0] : 0;
	if (!s->n_iota)
		return (i >= 0 && (uint64_t)i < s->n_devices) ? s->devices[i] : -1;
	for (uint32_t k = s->n_iota; k-- > 0;) {
		stride[k] = acc;
		acc *= s->iota_dims[k];
	}
	/* position i of the transposed array: digits over iota_dims[perm[k]], minor last */
	for (uint32_t k = s->n_iota; k-- > 0;) {
		int32_t src = s->iota_perm[k];
		int64_t size = s->iota_dims[src];

		dev += (i % size) * stride[src];
		i /= size;
	}
	return dev;
}

static bool i64_eq(const int64_t *x, uint32_t nx, const int64_t *y, uint32_t ny)
{
	return nx == ny && (!nx || !memcmp(x, y, nx * sizeof(*x)));
}

static bool devices_equal(const shs_sharding *x, const shs_sharding *y)
{
	const shs_sharding *ex = x->n_iota ? y : x; /* the explicit one bounds the work */
	int64_t n;

	if (x->n_iota && y->n_iota)
		return x->n_iota == y->n_iota &&
		       !memcmp(x->iota_dims, y->iota_dims, x->n_iota * sizeof(*x->iota_dims)) &&
		       !memcmp(x->iota_perm, y->iota_perm, x->n_iota * sizeof(*x->iota_perm));
	if (!x->n_iota && !y->n_iota)
		return i64_eq(x->devices, x->n_devices, y->devices, y->n_devices);
	if (!shs__dims_product(x->tile_dims, x->n_tile_dims, &n) || n != (int64_t)ex->n_devices)
		return false;
	for (int64_t i = 0; i < n; i++)
		if (shs_sharding_device(x, i) != shs_sharding_device(y, i))
			return false;
	return true;
}

static bool metadata_list_equal(const shs_sharding *x, const shs_sharding *y)
{
	if (x->n_metadata != y->n_metadata)
		return false;
	for (uint32_t i = 0; i < x->n_metadata; i++)
		if (!shs_metadata_equal(&x->metadata[i], &y->metadata[i]))
			return false;
	return true;
}

bool shs_sharding_equal(const shs_sharding *x, const shs_sharding *y)
{
	if (x->kind != y->kind || x->is_shard_group != y->is_shard_group)
		return false;
	if (x->is_shard_group &&
	    (x->shard_like != y->shard_like || x->shard_group_id != y->shard_group_id))
		return false;
	if (!metadata_list_equal(x, y))
		return false;
	switch (x->kind) {
	case SHS_SHARDING_TUPLE:
		if (x->n_tuple != y->n_tuple)
			return false;
		for (uint32_t i = 0; i < x->n_tuple; i++)
			if (!shs_sharding_equal(&x->tuple[i], &y->tuple[i]))
				return false;
		return true;
	case SHS_SHARDING_MAXIMAL:
		return shs_sharding_device(x, 0) == shs_sharding_device(y, 0) &&
		       i64_eq(x->tile_dims, x->n_tile_dims, y->tile_dims, y->n_tile_dims);
	case SHS_SHARDING_TILED:
		return i64_eq(x->tile_dims, x->n_tile_dims, y->tile_dims, y->n_tile_dims) &&
		       x->replicate_on_last_tile_dim == y->replicate_on_last_tile_dim &&
		       x->n_last_tile_dims == y->n_last_tile_dims &&
		       (!x->n_last_tile_dims ||
			!memcmp(x->last_tile_dims, y->last_tile_dims,
				x->n_last_tile_dims * sizeof(*x->last_tile_dims))) &&
		       devices_equal(x, y);
	default:
		return true;
	}
}

static bool clone_metadata(shs_arena *a, shs_metadata *dst, const shs_metadata *src)
{
	const char *const in[] = { src->op_type, src->op_name, src->source_file,
				   src->deduplicated_name, src->scheduling_name };
	const char **out[] = { &dst->op_type, &dst->op_name, &dst->source_file,
			       &dst->deduplicated_name, &dst->scheduling_name };

	*dst = *src;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		*out[i] = in[i] ? shs_arena_strdup(a, in[i]) : NULL;
		if (in[i] && !*out[i])
			return false;
	}
	return true;
}

/* A copy of n elements of size sz (NULL for none); clears *ok when out of memory. */
static void *dup_array(shs_arena *a, const void *src, size_t n, size_t sz, bool *ok)
{
	void *d;

	if (!n)
		return NULL;
	d = shs_arena_memdup(a, src, n * sz);
	if (!d)
		*ok = false;
	return d;
}

static bool clone_into(shs_arena *a, shs_sharding *d, const shs_sharding *s)
{
	bool ok = true;

	*d = *s;
	d->tile_dims = dup_array(a, s->tile_dims, s->n_tile_dims, sizeof(*s->tile_dims), &ok);
	d->devices = dup_array(a, s->devices, s->n_devices, sizeof(*s->devices), &ok);
	d->iota_dims = dup_array(a, s->iota_dims, s->n_iota, sizeof(*s->iota_dims), &ok);
	d->iota_perm = dup_array(a, s->iota_perm, s->n_iota, sizeof(*s->iota_perm), &ok);
	d->last_tile_dims = dup_array(a, s->last_tile_dims, s->n_last_tile_dims,
				      sizeof(*s->last_tile_dims), &ok);
	if (!ok)
		return false;
	d->metadata = NULL;
	d->tuple = NULL;
	if (s->n_metadata) {
		d->metadata = shs_arena_calloc(a, s->n_metadata, sizeof(*d->metadata));
		if (!d->metadata)
			return false;
		for (uint32_t i = 0; i < s->n_metadata; i++)
			if (!clone_metadata(a, &d->metadata[i], &s->metadata[i]))
				return false;
	}
	if (s->n_tuple) {
		d->tuple = shs_arena_calloc(a, s->n_tuple, sizeof(*d->tuple));
		if (!d->tuple)
			return false;
		for (uint32_t i = 0; i < s->n_tuple; i++)
			if (!clone_into(a, &d->tuple[i], &s->tuple[i]))
				return false;
	}
	return true;
}

shs_sharding *shs_sharding_clone(shs_arena *a, const shs_sharding *s)
{
	shs_sharding *d = shs_arena_alloc(a, sizeof(*d));

	if (!d || !clone_into(a, d, s))
		return NULL;
	return d;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

/* The explicit devices are distinct, >= 0 and below num_devices (when known). */
static int check_explicit(const shs_sharding *s, int64_t num_devices, shs_err *e)
{
	int64_t *sorted;
	int rc = SHS_OK;

	for (uint32_t i = 0; i < s->n_devices; i++) {
		int64_t d = s->devices[i];

		if (d < 0 || (num_devices > 0 && d >= num_devices))
			return shs_seterr(e, SHS_EVERIFY, "sharding: device %lld out of range "
							  "[0, %lld)", (long long)d,
					  (long long)num_devices);
	}
	sorted = malloc((size_t)s->n_devices * sizeof(*sorted));
	if (!sorted)
		return shs_seterr(e, SHS_ENOMEM, "sharding: out of memory");
	memcpy(sorted, s->devices, (size_t)s->n_devices * sizeof(*sorted));
	qsort(sorted, s->n_devices, sizeof(*sorted), cmp_i64);
	for (uint32_t i = 1; i < s->n_devices; i++) {
		if (sorted[i] == sorted[i - 1]) {
			rc = shs_seterr(e, SHS_EVERIFY, "sharding: device %lld appears twice",
					(long long)sorted[i]);
			break;
		}
	}
	free(sorted);
	return rc;
}

static int check_tiled(const shs_sharding *s, bool with_rank, uint32_t rank,
		       int64_t num_devices, shs_err *e)
{
	uint32_t sub = s->n_last_tile_dims + (s->replicate_on_last_tile_dim ? 1u : 0u);
	int64_t prod, iprod;

	if (s->replicate_on_last_tile_dim && s->n_last_tile_dims)
		return shs_seterr(e, SHS_EVERIFY, "sharding: last_tile_dim_replicate and "
						  "last_tile_dims together");
	for (uint32_t i = 0; i < s->n_last_tile_dims; i++)
		if (s->last_tile_dims[i] != SHS_SHARDING_MANUAL &&
		    s->last_tile_dims[i] != SHS_SHARDING_REPLICATED &&
		    s->last_tile_dims[i] != SHS_SHARDING_UNREDUCED)
			return shs_seterr(e, SHS_EVERIFY, "sharding: last_tile_dims type %d",
					  (int)s->last_tile_dims[i]);
	if (with_rank && s->n_tile_dims != rank + sub)
		return shs_seterr(e, SHS_EVERIFY, "sharding: %u tile dims for rank %u plus %u "
						  "subgroup dims", s->n_tile_dims, rank, sub);
	if (s->n_tile_dims < sub || !shs__dims_product(s->tile_dims, s->n_tile_dims, &prod))
		return shs_seterr(e, SHS_EVERIFY, "sharding: bad tile dims");
	if (prod < 2)
		return shs_seterr(e, SHS_EVERIFY, "sharding: tiled over a single device");
	if (num_devices > 0 && prod != num_devices)
		return shs_seterr(e, SHS_EVERIFY, "sharding: tiled over %lld devices, module has "
						  "%lld", (long long)prod, (long long)num_devices);
	if (!s->n_iota) {
		if ((int64_t)s->n_devices != prod)
			return shs_seterr(e, SHS_EVERIFY, "sharding: %u devices for tile dims "
							  "product %lld", s->n_devices, (long long)prod);
		return check_explicit(s, num_devices, e);
	}
	if (s->n_devices)
		return shs_seterr(e, SHS_EVERIFY, "sharding: both iota and explicit devices");
	if (!shs__dims_product(s->iota_dims, s->n_iota, &iprod) || iprod != prod)
		return shs_seterr(e, SHS_EVERIFY, "sharding: iota dims product differs from tile "
						  "dims product %lld", (long long)prod);
	if (!shs__is_permutation(s->iota_perm, s->n_iota))
		return shs_seterr(e, SHS_EVERIFY, "sharding: iota transpose is not a permutation");
	return SHS_OK;
}

static int check_any(const shs_sharding *s, bool with_rank, uint32_t rank, int64_t num_devices,
		     int depth, shs_err *e)
{
	int rc;

	if (depth > SHS_MAX_NESTING)
		return shs_seterr(e, SHS_EVERIFY, "sharding: nested deeper than %d",
				  SHS_MAX_NESTING);
	switch (s->kind) {
	case SHS_SHARDING_TUPLE:
		for (uint32_t i = 0; i < s->n_tuple; i++) {
			rc = check_any(&s->tuple[i], false, 0, num_devices, depth + 1, e);
			if (rc != SHS_OK) {
				if (e && strlen(e->msg) < SHS_ERRMSG_MAX / 2)
					shs_err_prefix(e, "tuple element %u", i);
				return rc;
			}
		}
		return SHS_OK;
	case SHS_SHARDING_MAXIMAL:
		if (s->n_devices != 1 || s->devices[0] < 0 ||
		    (num_devices > 0 && s->devices[0] >= num_devices))
			return shs_seterr(e, SHS_EVERIFY, "sharding: maximal device %lld out of "
							  "range", (long long)(s->n_devices ? s->devices[0] : -1));
		return SHS_OK;
	case SHS_SHARDING_TILED:
		return check_tiled(s, with_rank, rank, num_devices, e);
	case SHS_SHARDING_REPLICATED:
	case SHS_SHARDING_MANUAL:
	case SHS_SHARDING_UNKNOWN:
	case SHS_SHARDING_UNREDUCED:
		return SHS_OK;
	}
	return shs_seterr(e, SHS_EVERIFY, "sharding: unknown kind %d", (int)s->kind);
}

int shs_sharding_check(const shs_sharding *s, uint32_t rank, int64_t num_devices, shs_err *e)
{
	return check_any(s, true, rank, num_devices, 0, e);
}
