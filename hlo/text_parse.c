/* HLO text parser: the module header, computations, instructions and attributes into the IR. */
#include "io.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_lexer.h"
#include "text_literal.h"

enum {
	MIB_SHIFT = 20,
	NAME_TABLE_MIN = 64,
	VEC_MIN = 16,
	ARRAY_MIN = 4,
	SPATIAL_MAX = 10,     /* dim_labels name spatial dims with one digit each */
	DIM_LABEL_PARTS = 3,  /* input_kernel->output */
	SPATIAL_FREE = -1
};

static const uint32_t NO_INDEX = UINT32_MAX;
static const uint32_t FNV_OFFSET = 2166136261u, FNV_PRIME = 16777619u;

/* ---- Scratch: growable arrays and name tables (malloc'ed, freed after the parse) --------- */

typedef struct vec {
	void *data;
	size_t n, cap, size;
} vec;

/* A new zeroed slot at the end of v, or NULL when out of memory. */
static void *vec_push(vec *v)
{
	void *slot;

	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : VEC_MIN;
		void *d;

		if (cap > SIZE_MAX / 2 / v->size)
			return NULL;
		d = realloc(v->data, cap * v->size);
		if (!d)
			return NULL;
		v->data = d;
		v->cap = cap;
	}
	slot = (char *)v->data + v->n++ * v->size;
	memset(slot, 0, v->size);
	return slot;
}

/* Open addressing over (name, length); slots of another generation are empty, so a reset
 * costs nothing. */
typedef struct name_slot {
	const char *s;
	uint32_t len, hash, gen, val;
} name_slot;

typedef struct name_table {
	name_slot *slots;
	uint32_t cap, count, gen;
} name_table;

static uint32_t hash_name(const char *s, size_t n)
{
	uint32_t h = FNV_OFFSET;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= FNV_PRIME;
	}
	return h;
}

/* The slot holding the name, or the empty slot where it would go. */
static name_slot *nt_slot(const name_table *t, const char *s, size_t n, uint32_t h)
{
	uint32_t mask = t->cap - 1;

	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		name_slot *e = &t->slots[i];

		if (e->gen != t->gen)
			return e;
		if (e->hash == h && e->len == n && !memcmp(e->s, s, n))
			return e;
	}
}

static bool nt_find(const name_table *t, const char *s, size_t n, uint32_t *val)
{
	const name_slot *e;

	if (!t->cap)
		return false;
	e = nt_slot(t, s, n, hash_name(s, n));
	if (e->gen != t->gen)
		return false;
	*val = e->val;
	return true;
}

static int nt_grow(name_table *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : NAME_TABLE_MIN;
	name_slot *old = t->slots, *slots;
	uint32_t old_cap = t->cap, old_gen = t->gen;

	if (cap < t->cap)
		return SHS_ENOMEM;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return SHS_ENOMEM;
	t->slots = slots;
	t->cap = cap;
	t->gen = 1;
	for (uint32_t i = 0; i < old_cap; i++) {
		if (old[i].gen == old_gen) {
			name_slot *e = nt_slot(t, old[i].s, old[i].len, old[i].hash);

			*e = old[i];
			e->gen = 1;
		}
	}
	free(old);
	return SHS_OK;
}

/* Adds a name that is not in t yet. */
static int nt_put(name_table *t, const char *s, size_t n, uint32_t val)
{
	uint32_t h = hash_name(s, n);
	name_slot *e;

	if (((size_t)t->count + 1) * 2 > t->cap && nt_grow(t) != SHS_OK)
		return SHS_ENOMEM;
	e = nt_slot(t, s, n, h);
	e->s = s;
	e->len = (uint32_t)n;
	e->hash = h;
	e->gen = t->gen;
	e->val = val;
	t->count++;
	return SHS_OK;
}

static void nt_reset(name_table *t)
{
	t->count = 0;
	if (++t->gen == 0) {
		if (t->cap)
			memset(t->slots, 0, t->cap * sizeof(*t->slots));
		t->gen = 1;
	}
}

/* ---- Parser state and errors -------------------------------------------------------------- */

/* An operand or control predecessor named before it can be resolved. */
typedef struct ref {
	size_t tok_off;          /* the name token, '%' included */
	size_t off;              /* the name without '%' */
	uint32_t len;
	uint32_t instr;          /* index of the user in the computation */
	uint32_t slot;           /* operand or control position */
	bool control;
	const shs_shape *shape;  /* the shape written before the operand, or NULL */
	size_t shape_off, shape_len;
} ref;

/* Where an instruction's name and shape are in the text. */
typedef struct span {
	size_t name_off, shape_off, shape_len;
} span;

/* A computation's `(p: shape, ...) -> shape`, with the text positions of its parts. */
typedef struct signature {
	bool present;
	size_t off;
	shs_program_shape ps;
	size_t *param_offs; /* n_params + 1: the parameters, then the result */
} signature;

/* The called-computation attributes of one instruction, in the order of `called`. */
enum call_slot {
	CALL_BODY, CALL_CONDITION, CALL_TRUE, CALL_FALSE, CALL_SELECT, CALL_SCATTER,
	CALL_TO_APPLY, CALL_SINGLES
};
enum call_list { LIST_CALLS, LIST_BRANCHES, LIST_CALLED, CALL_LISTS };

typedef struct comp_list {
	uint32_t n;
	uint32_t *v;
} comp_list;

typedef struct parser {
	shs_lexer lx;
	shs_err err;
	shs_module *m;
	shs_arena *a;
	size_t budget;
	name_table ops, elems, attrs; /* keywords */
	name_table comps;             /* computation names -> index into m->comps */
	name_table instrs;            /* instruction names of the computation being read */
	vec refs, spans, i64s, params;
	int64_t next_comp_id, next_instr_id;
	bool have_entry;
	uint32_t entry;
	size_t layout_off;
	size_t *layout_offs; /* where each parameter and the result of the header's layout are */
	bool have_layout;
	uint64_t header_seen;
} parser;

static int fail(parser *p, const char *fmt, ...) SHS_PRINTF(2, 3);
static int fail_tok(parser *p, const shs_tok *t, const char *fmt, ...) SHS_PRINTF(3, 4);
static int fail_at(parser *p, size_t off, const char *fmt, ...) SHS_PRINTF(3, 4);
static int fail_code_at(parser *p, size_t off, int code, const char *fmt, ...) SHS_PRINTF(4, 5);

static int vfail_tok(parser *p, const shs_tok *t, int code, const char *fmt, va_list ap)
{
	char what[SHS_ERRMSG_MAX];

	vsnprintf(what, sizeof(what), fmt, ap);
	return shs__lex_fail(&p->lx, t, code, "%s", what);
}

/* A parse error at the current token. */
static int fail(parser *p, const char *fmt, ...)
{
	shs_tok t = p->lx.tok;
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail_tok(p, &t, SHS_EPARSE, fmt, ap);
	va_end(ap);
	return rc;
}

static int fail_tok(parser *p, const shs_tok *t, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail_tok(p, t, SHS_EPARSE, fmt, ap);
	va_end(ap);
	return rc;
}

/* A parse error at the token starting at off. */
static int fail_at(parser *p, size_t off, const char *fmt, ...)
{
	shs_tok t = shs__lex_at(&p->lx, off);
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail_tok(p, &t, SHS_EPARSE, fmt, ap);
	va_end(ap);
	return rc;
}

static int fail_code_at(parser *p, size_t off, int code, const char *fmt, ...)
{
	shs_tok t = shs__lex_at(&p->lx, off);
	va_list ap;
	int rc;

	if (t.kind == SHS_TOK_ERROR) /* the message is ours, not the lexer's */
		t.kind = SHS_TOK_IDENT;
	va_start(ap, fmt);
	rc = vfail_tok(p, &t, code, fmt, ap);
	va_end(ap);
	return rc;
}

static int oom(parser *p)
{
	return shs__lex_fail_plain(&p->lx, p->lx.tok.off, SHS_ENOMEM,
				   "out of memory (the load budget is %zu MiB)", p->budget >> MIB_SHIFT);
}

/* Reports an error of a nested parser (metadata, sharding, quoted string) at off. */
static int nested_fail(parser *p, int rc, size_t off)
{
	char msg[SHS_ERRMSG_MAX];

	if (rc == SHS_ENOMEM)
		return oom(p);
	snprintf(msg, sizeof(msg), "%s", p->err.msg);
	return shs__lex_fail_plain(&p->lx, off, rc, "%s", msg);
}

static bool at(const parser *p, shs_tok_kind kind)
{
	return p->lx.tok.kind == kind;
}

static bool at_word(const parser *p, const char *word)
{
	return shs__tok_is_word(&p->lx, &p->lx.tok, word);
}

static void next(parser *p)
{
	shs__lex_next(&p->lx);
}

static int expect(parser *p, shs_tok_kind kind, const char *what)
{
	if (!at(p, kind))
		return fail(p, "expected %s", what);
	next(p);
	return SHS_OK;
}

static bool is_name(const shs_tok *t)
{
	return t->kind == SHS_TOK_IDENT || t->kind == SHS_TOK_PNAME;
}

/* The name of t without a leading '%'. */
static const char *name_ptr(const parser *p, const shs_tok *t, size_t *len)
{
	size_t skip = t->kind == SHS_TOK_PNAME;

	*len = t->len - skip;
	return p->lx.src + t->off + skip;
}

static char *dup_name(parser *p, const shs_tok *t)
{
	size_t n;
	const char *s = name_ptr(p, t, &n);

	return shs_arena_strndup(p->a, s, n);
}

/* A copy of the current int64 list scratch into the arena. */
static int take_i64s(parser *p, shs_i64s *out)
{
	out->n = (uint32_t)p->i64s.n;
	out->v = NULL;
	if (!p->i64s.n)
		return SHS_OK;
	out->v = shs_arena_memdup(p->a, p->i64s.data, p->i64s.n * sizeof(int64_t));
	return out->v ? SHS_OK : oom(p);
}

static int push_i64(parser *p, int64_t v)
{
	int64_t *slot = vec_push(&p->i64s);

	if (!slot)
		return oom(p);
	*slot = v;
	return SHS_OK;
}

/* Grows an arena array of *n elements of size bytes when *n is 0 or a power of two >= 4. */
static int grow_array(parser *p, void **arr, uint32_t n, size_t size)
{
	void *fresh;
	uint32_t cap;

	if (n >= ARRAY_MIN && (n & (n - 1)) != 0)
		return SHS_OK;
	if (n > 0 && n < ARRAY_MIN)
		return SHS_OK;
	if (n > UINT32_MAX / 2)
		return oom(p);
	cap = n ? n * 2 : ARRAY_MIN;
	fresh = shs_arena_alloc(p->a, (size_t)cap * size);
	if (!fresh)
		return oom(p);
	if (n)
		memcpy(fresh, *arr, (size_t)n * size);
	*arr = fresh;
	return SHS_OK;
}

static int push_raw_attr(parser *p, uint32_t *n, shs_raw_attr **arr, const char *name,
			 const char *value)
{
	int rc = grow_array(p, (void **)arr, *n, sizeof(**arr));

	if (rc)
		return rc;
	(*arr)[*n].name = name;
	(*arr)[*n].value = value;
	(*n)++;
	return SHS_OK;
}

/* ---- Small values --------------------------------------------------------------------------- */

/* An INT token in [lo, hi]. */
static int parse_int(parser *p, int64_t lo, int64_t hi, const char *what, int64_t *out)
{
	int rc = shs__lex_int_in(&p->lx, &p->lx.tok, lo, hi, what, out);

	if (rc == SHS_OK)
		next(p);
	return rc;
}

static int parse_bool(parser *p, bool *out)
{
	if (at_word(p, "true") || at_word(p, "false")) {
		*out = at_word(p, "true");
		next(p);
		return SHS_OK;
	}
	return fail(p, "expected true or false");
}

/* `{1, 2, 3}` into the i64s scratch. */
static int parse_i64_scratch(parser *p)
{
	int64_t v;
	int rc;

	p->i64s.n = 0;
	rc = expect(p, SHS_TOK_LBRACE, "'{' to open a list of integers");
	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		if (p->i64s.n && (rc = expect(p, SHS_TOK_COMMA, "',' or '}' in a list of integers")))
			break;
		rc = parse_int(p, INT64_MIN, INT64_MAX, "a list element", &v);
		if (rc == SHS_OK)
			rc = push_i64(p, v);
	}
	if (rc == SHS_OK)
		next(p);
	return rc;
}

static int parse_i64s(parser *p, shs_i64s *out)
{
	int rc = parse_i64_scratch(p);

	return rc ? rc : take_i64s(p, out);
}

/* A double-quoted string, unescaped into the arena. */
static int parse_string(parser *p, const char **out, size_t *out_len)
{
	const shs_tok t = p->lx.tok;
	size_t used = 0, n = 0, err_off = 0;
	char *s = NULL;
	int rc;

	if (t.kind != SHS_TOK_STRING || p->lx.src[t.off] != '"')
		return fail(p, "expected a quoted string");
	rc = shs_text_parse_quoted(p->a, p->lx.src + t.off, p->lx.len - t.off, &used, &s, &n,
				   &err_off, &p->err);
	if (rc)
		return nested_fail(p, rc, t.off + err_off);
	shs__lex_seek(&p->lx, t.off + used);
	*out = s;
	if (out_len)
		*out_len = n;
	return SHS_OK;
}

/* An identifier, one of allowed (NULL-terminated; NULL allows any), copied. */
static int parse_word(parser *p, const char *const *allowed, const char *what, const char **out)
{
	const shs_tok t = p->lx.tok;

	if (t.kind != SHS_TOK_IDENT)
		return fail(p, "expected %s", what);
	if (allowed) {
		const char *const *w = allowed;

		while (*w && !shs__tok_is_word(&p->lx, &t, *w))
			w++;
		if (!*w)
			return fail(p, "unknown %s", what);
	}
	*out = shs_arena_strndup(p->a, p->lx.src + t.off, t.len);
	if (!*out)
		return oom(p);
	next(p);
	return SHS_OK;
}

/* The end of a raw attribute value starting at start: the next top-level ',' or blank, or an
 * unmatched closing bracket; strings, comments and brackets are skipped whole. */
static int scan_raw(parser *p, size_t start, size_t *end)
{
	const char *s = p->lx.src;
	size_t len = p->lx.len, i = start;
	char closers[SHS_MAX_NESTING];
	uint32_t depth = 0;

	while (i < len) {
		char c = s[i];

		if (c == '"' || c == '\'' || (c == '/' && i + 1 < len && s[i + 1] == '*')) {
			shs_tok t = shs__lex_at(&p->lx, i);

			if (t.kind == SHS_TOK_ERROR)
				return fail_tok(p, &t, "bad value");
			i = c == '/' ? shs__lex_skip_blanks(&p->lx, i) : i + t.len;
			continue;
		}
		if (c == '{' || c == '[' || c == '(') {
			if (depth == SHS_MAX_NESTING)
				return fail_at(p, i, "value nested deeper than %d", SHS_MAX_NESTING);
			closers[depth++] = c == '{' ? '}' : c == '[' ? ']' : ')';
		} else if (c == '}' || c == ']' || c == ')') {
			if (depth == 0)
				break;
			if (closers[--depth] != c)
				return fail_at(p, i, "mismatched '%c' in a value", c);
		} else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' ||
					  c == '\r')) {
			break;
		}
		i++;
	}
	if (depth)
		return fail_at(p, start, "unterminated value");
	if (i == start)
		return fail_at(p, start, "expected a value");
	*end = i;
	return SHS_OK;
}

/* A raw value at the current token, copied verbatim; the lexer moves past it. */
static int parse_raw(parser *p, const char **out, size_t *out_len)
{
	size_t start = p->lx.tok.off, end = start;
	int rc = scan_raw(p, start, &end);

	if (rc)
		return rc;
	*out = shs_arena_strndup(p->a, p->lx.src + start, end - start);
	if (!*out)
		return oom(p);
	if (out_len)
		*out_len = end - start;
	shs__lex_seek(&p->lx, end);
	return SHS_OK;
}

/* `{key="value", key={json}, ...}`. */
static int parse_frontend_attrs(parser *p, uint32_t *n, shs_attr_kv **out)
{
	int rc = expect(p, SHS_TOK_LBRACE, "'{' to open the frontend attributes");

	*n = 0;
	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		const char *key, *value = NULL;

		if (*n && (rc = expect(p, SHS_TOK_COMMA, "',' or '}' in frontend attributes")))
			break;
		if (!at(p, SHS_TOK_IDENT))
			return fail(p, "expected a frontend attribute name");
		key = shs_arena_strndup(p->a, p->lx.src + p->lx.tok.off, p->lx.tok.len);
		if (!key)
			return oom(p);
		next(p);
		rc = expect(p, SHS_TOK_EQ, "'=' after the frontend attribute name");
		if (rc == SHS_OK)
			rc = at(p, SHS_TOK_LBRACE) ? parse_raw(p, &value, NULL)
						   : parse_string(p, &value, NULL);
		if (rc == SHS_OK)
			rc = grow_array(p, (void **)out, *n, sizeof(**out));
		if (rc == SHS_OK) {
			(*out)[*n].key = key;
			(*out)[*n].value = value;
			(*n)++;
		}
	}
	if (rc == SHS_OK)
		next(p);
	return rc;
}

/* ---- Shapes --------------------------------------------------------------------------------- */

static int parse_shape(parser *p, shs_shape *out, int depth);

static int parse_tuple_shape(parser *p, shs_shape *out, int depth)
{
	shs_shape *elems = NULL;
	uint32_t n = 0;
	int rc;

	if (depth >= SHS_MAX_NESTING)
		return fail(p, "tuple shape nested deeper than %d", SHS_MAX_NESTING);
	next(p);
	while (!at(p, SHS_TOK_RPAREN)) {
		if (n && (rc = expect(p, SHS_TOK_COMMA, "',' or ')' in a tuple shape")))
			return rc;
		if ((rc = grow_array(p, (void **)&elems, n, sizeof(*elems))))
			return rc;
		memset(&elems[n], 0, sizeof(elems[n]));
		if ((rc = parse_shape(p, &elems[n], depth + 1)))
			return rc;
		n++;
	}
	next(p);
	out->type = SHS_TUPLE;
	out->n_tuple = n;
	out->tuple = n ? elems : NULL;
	return SHS_OK;
}

/* One dimension: N, <=N (dynamic with bound N) or ? (unbounded dynamic, stored as INT64_MIN).
 * *elems is the running element count, checked against overflow with bytes per element. */
static int parse_dim(parser *p, int bytes, int64_t *elems, int64_t *dim, bool *dynamic)
{
	int64_t v;
	int rc;

	*dynamic = false;
	if (at(p, SHS_TOK_QUESTION)) {
		*dim = INT64_MIN;
		*dynamic = true;
		next(p);
		return SHS_OK;
	}
	if (at(p, SHS_TOK_LEQ)) {
		*dynamic = true;
		next(p);
	}
	if (at(p, SHS_TOK_INT) && p->lx.src[p->lx.tok.off] == '-')
		return fail(p, "negative dimension");
	if ((rc = shs__lex_int_in(&p->lx, &p->lx.tok, 0, INT64_MAX, "a dimension", &v)))
		return rc;
	if (v && *elems > INT64_MAX / v / (bytes ? bytes : 1))
		return fail(p, "shape has too many elements (more than 2^63 bytes)");
	*elems *= v;
	*dim = v;
	next(p);
	return SHS_OK;
}

/* `(8,128)`: one tile; '*' is XLA's combined dimension (INT64_MIN). */
static int parse_tile(parser *p, shs_i64s *tile)
{
	int64_t v;
	int rc;

	p->i64s.n = 0;
	next(p);
	while (!at(p, SHS_TOK_RPAREN)) {
		if (p->i64s.n && (rc = expect(p, SHS_TOK_COMMA, "',' or ')' in a tile")))
			return rc;
		if (at(p, SHS_TOK_STAR)) {
			v = INT64_MIN;
			next(p);
		} else if ((rc = parse_int(p, 0, INT64_MAX, "a tile dimension", &v))) {
			return rc;
		}
		if (p->i64s.n == SHS_MAX_RANK)
			return fail(p, "tile has more than %d dimensions", SHS_MAX_RANK);
		if ((rc = push_i64(p, v)))
			return rc;
	}
	next(p);
	return take_i64s(p, tile);
}

/* `E(n)` / `S(n)`: one integer in parentheses. */
static int parse_paren_int(parser *p, const char *what, int64_t *out)
{
	int rc;

	next(p);
	rc = expect(p, SHS_TOK_LPAREN, "'(' after the layout attribute");
	if (rc == SHS_OK)
		rc = parse_int(p, 0, INT64_MAX, what, out);
	if (rc == SHS_OK)
		rc = expect(p, SHS_TOK_RPAREN, "')' after the layout attribute");
	return rc;
}

/* What follows ':' in a layout: T(..)(..) tiles, E(bits), S(memory space). */
static int parse_layout_attrs(parser *p, shs_layout *l)
{
	int rc = SHS_OK;

	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		if (at_word(p, "T")) {
			next(p);
			if (!at(p, SHS_TOK_LPAREN))
				return fail(p, "expected '(' after T in a layout");
			while (rc == SHS_OK && at(p, SHS_TOK_LPAREN)) {
				rc = grow_array(p, (void **)&l->tiles, l->n_tiles, sizeof(*l->tiles));
				if (rc == SHS_OK)
					rc = parse_tile(p, &l->tiles[l->n_tiles]);
				if (rc == SHS_OK)
					l->n_tiles++;
			}
		} else if (at_word(p, "E")) {
			rc = parse_paren_int(p, "element size in bits", &l->element_size_in_bits);
		} else if (at_word(p, "S")) {
			rc = parse_paren_int(p, "memory space", &l->memory_space);
		} else {
			return fail_code_at(p, p->lx.tok.off, SHS_EUNSUPPORTED,
					    "layout attribute not supported (only T, E and S are)");
		}
	}
	return rc;
}

/* `{1,0}` or `{1,0:T(8,128)}` after an array shape of s->rank dims. */
static int parse_layout(parser *p, shs_shape *s)
{
	const shs_tok open = p->lx.tok;
	shs_layout *l = shs_arena_calloc(p->a, 1, sizeof(*l));
	uint64_t used = 0;
	int rc;

	if (!l)
		return oom(p);
	next(p);
	p->i64s.n = 0;
	while (at(p, SHS_TOK_INT)) {
		int64_t d;

		if ((rc = parse_int(p, 0, SHS_MAX_RANK - 1, "a layout dimension", &d)))
			return rc;
		if (d >= (int64_t)s->rank || (used >> d & 1))
			return fail_tok(p, &open, "layout is not a permutation of the %u dimensions",
					s->rank);
		used |= (uint64_t)1 << d;
		if ((rc = push_i64(p, d)))
			return rc;
		if (!at(p, SHS_TOK_COMMA))
			break;
		next(p);
	}
	if (p->i64s.n != s->rank)
		return fail_tok(p, &open, "layout has %zu dimensions, the shape %u", p->i64s.n,
				s->rank);
	if ((rc = take_i64s(p, &l->minor_to_major)))
		return rc;
	if (at(p, SHS_TOK_COLON)) {
		next(p);
		if ((rc = parse_layout_attrs(p, l)))
			return rc;
	}
	if ((rc = expect(p, SHS_TOK_RBRACE, "'}' to close the layout")))
		return rc;
	s->layout = l;
	return SHS_OK;
}

/* True when the current '{' opens a layout rather than a computation body. */
static bool at_layout(const parser *p)
{
	shs_tok t;

	if (!at(p, SHS_TOK_LBRACE))
		return false;
	t = shs__lex_peek(&p->lx);
	return t.kind == SHS_TOK_INT || t.kind == SHS_TOK_RBRACE || t.kind == SHS_TOK_COLON;
}

static int parse_array_shape(parser *p, shs_shape *out)
{
	const shs_tok t = p->lx.tok;
	int64_t dims[SHS_MAX_RANK], elems = 1;
	bool dyn[SHS_MAX_RANK], any_dyn = false;
	uint32_t rank = 0, type;
	int rc;

	if (t.kind != SHS_TOK_IDENT)
		return fail(p, "expected a shape");
	if (!nt_find(&p->elems, p->lx.src + t.off, t.len, &type))
		return fail(p, "expected a shape: unknown element type");
	next(p);
	if ((rc = expect(p, SHS_TOK_LBRACKET, "'[' after the element type")))
		return rc;
	while (!at(p, SHS_TOK_RBRACKET)) {
		if (rank && (rc = expect(p, SHS_TOK_COMMA, "',' or ']' in the dimensions")))
			return rc;
		if (rank == SHS_MAX_RANK)
			return fail(p, "shape has more than %d dimensions", SHS_MAX_RANK);
		rc = parse_dim(p, shs_elem_bytes((int)type), &elems, &dims[rank], &dyn[rank]);
		if (rc)
			return rc;
		any_dyn |= dyn[rank];
		rank++;
	}
	next(p);
	if (rank && !shs_elem_is_array((int)type))
		return fail_tok(p, &t, "a %s shape has no dimensions", shs_elem_name((int)type));
	out->type = (int32_t)type;
	out->rank = rank;
	if (rank && !(out->dims = shs_arena_memdup(p->a, dims, rank * sizeof(*dims))))
		return oom(p);
	if (any_dyn && !(out->dynamic = shs_arena_memdup(p->a, dyn, rank * sizeof(*dyn))))
		return oom(p);
	return at_layout(p) ? parse_layout(p, out) : SHS_OK;
}

static int parse_shape(parser *p, shs_shape *out, int depth)
{
	if (at(p, SHS_TOK_LPAREN))
		return parse_tuple_shape(p, out, depth);
	return parse_array_shape(p, out);
}

/* True when the current token starts a shape (before an operand name). */
static bool at_shape(const parser *p)
{
	uint32_t type;
	shs_tok t;

	if (at(p, SHS_TOK_LPAREN))
		return true;
	if (!at(p, SHS_TOK_IDENT) ||
	    !nt_find(&p->elems, p->lx.src + p->lx.tok.off, p->lx.tok.len, &type))
		return false;
	t = shs__lex_peek(&p->lx);
	return t.kind == SHS_TOK_LBRACKET;
}

/* `(shape, ...) -> shape` (named: `(name: shape, ...) -> shape`), offsets of the parts in
 * offs (n_params + 1 entries, the result last). */
static int parse_program_shape(parser *p, bool named, shs_program_shape *ps, size_t **offs)
{
	uint32_t n = 0;
	int rc = expect(p, SHS_TOK_LPAREN, "'(' to open the parameter shapes");

	*offs = NULL;
	while (rc == SHS_OK && !at(p, SHS_TOK_RPAREN)) {
		if (n && (rc = expect(p, SHS_TOK_COMMA, "',' or ')' in the parameter list")))
			break;
		if ((rc = grow_array(p, (void **)&ps->params, n, sizeof(*ps->params))) ||
		    (rc = grow_array(p, (void **)offs, n, sizeof(**offs))))
			break;
		if (named && (rc = grow_array(p, (void **)&ps->param_names, n,
					      sizeof(*ps->param_names))))
			break;
		if (named) {
			if (!is_name(&p->lx.tok))
				return fail(p, "expected a parameter name");
			if (!(ps->param_names[n] = dup_name(p, &p->lx.tok)))
				return oom(p);
			next(p);
			if ((rc = expect(p, SHS_TOK_COLON, "':' after the parameter name")))
				break;
		}
		(*offs)[n] = p->lx.tok.off;
		memset(&ps->params[n], 0, sizeof(ps->params[n]));
		if ((rc = parse_shape(p, &ps->params[n], 0)))
			break;
		n++;
	}
	if (rc)
		return rc;
	next(p);
	ps->n_params = n;
	if ((rc = expect(p, SHS_TOK_ARROW, "'->' before the result shape")))
		return rc;
	if ((rc = grow_array(p, (void **)offs, n, sizeof(**offs))))
		return rc;
	(*offs)[n] = p->lx.tok.off;
	return parse_shape(p, &ps->result, 0);
}

/* ---- Module header ------------------------------------------------------------------------ */

enum header_attr { HDR_LAYOUT, HDR_ALIAS, HDR_PARTITIONS, HDR_REPLICAS, HDR_FRONTEND };
enum alias_kind { ALIAS_MAY = 1, ALIAS_MUST = 2 }; /* HloInputOutputAliasProto kinds */

/* `{0,1}` as a shape index. */
static int parse_shape_index(parser *p, shs_i64s *out)
{
	int rc = parse_i64_scratch(p);

	for (size_t i = 0; rc == SHS_OK && i < p->i64s.n; i++)
		if (((int64_t *)p->i64s.data)[i] < 0)
			return fail(p, "negative tuple index in input_output_alias");
	return rc ? rc : take_i64s(p, out);
}

/* One `{out}: (param, {index}, may-alias)`. */
static int parse_alias(parser *p, shs_alias *al)
{
	static const char *const kinds[] = { "may-alias", "must-alias", NULL };
	const char *kind = NULL;
	int rc = parse_shape_index(p, &al->output_index);

	if (rc == SHS_OK)
		rc = expect(p, SHS_TOK_COLON, "':' after the output index");
	if (rc == SHS_OK)
		rc = expect(p, SHS_TOK_LPAREN, "'(' before the aliased parameter");
	if (rc == SHS_OK)
		rc = parse_int(p, 0, INT64_MAX, "the parameter number", &al->param_number);
	if (rc == SHS_OK)
		rc = expect(p, SHS_TOK_COMMA, "',' after the parameter number");
	if (rc == SHS_OK)
		rc = parse_shape_index(p, &al->param_index);
	al->kind = ALIAS_MAY; /* XLA's default when the kind is left out */
	if (rc == SHS_OK && at(p, SHS_TOK_COMMA)) {
		next(p);
		rc = parse_word(p, kinds, "alias kind (may-alias or must-alias)", &kind);
		if (rc == SHS_OK)
			al->kind = strcmp(kind, "may-alias") ? ALIAS_MUST : ALIAS_MAY;
	}
	if (rc == SHS_OK)
		rc = expect(p, SHS_TOK_RPAREN, "')' after the alias");
	return rc;
}

static int parse_aliases(parser *p)
{
	shs_module *m = p->m;
	int rc = expect(p, SHS_TOK_LBRACE, "'{' to open input_output_alias");

	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		if (m->n_aliases && (rc = expect(p, SHS_TOK_COMMA, "',' or '}' between aliases")))
			return rc;
		if ((rc = grow_array(p, (void **)&m->aliases, m->n_aliases, sizeof(*m->aliases))))
			return rc;
		memset(&m->aliases[m->n_aliases], 0, sizeof(*m->aliases));
		rc = parse_alias(p, &m->aliases[m->n_aliases]);
		if (rc == SHS_OK)
			m->n_aliases++;
	}
	if (rc == SHS_OK)
		next(p);
	return rc;
}

static int parse_entry_layout(parser *p)
{
	int rc;

	p->layout_off = p->lx.tok.off;
	p->m->entry_layout = shs_arena_calloc(p->a, 1, sizeof(*p->m->entry_layout));
	if (!p->m->entry_layout)
		return oom(p);
	rc = expect(p, SHS_TOK_LBRACE, "'{' to open entry_computation_layout");
	if (rc == SHS_OK)
		rc = parse_program_shape(p, false, p->m->entry_layout, &p->layout_offs);
	if (rc == SHS_OK)
		rc = expect(p, SHS_TOK_RBRACE, "'}' to close entry_computation_layout");
	p->have_layout = rc == SHS_OK;
	/* the older printer joins the parameters with "," alone: note it for printing back */
	for (uint32_t k = 1; rc == SHS_OK && k < p->m->entry_layout->n_params; k++)
		if (p->lx.src[p->layout_offs[k] - 1] == ',')
			p->m->style.compact_entry_layout = true;
	return rc;
}

static int header_kind(const parser *p, const shs_tok *t)
{
	static const char *const names[] = {
		[HDR_LAYOUT] = "entry_computation_layout", [HDR_ALIAS] = "input_output_alias",
		[HDR_PARTITIONS] = "num_partitions", [HDR_REPLICAS] = "replica_count",
		[HDR_FRONTEND] = "frontend_attributes",
	};

	for (int k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++)
		if (shs__tok_is_word(&p->lx, t, names[k]))
			return k;
	return -1;
}

static int parse_header_attr(parser *p)
{
	shs_module *m = p->m;
	const shs_tok name = p->lx.tok;
	const char *value, *key;
	int kind, rc;

	if (name.kind != SHS_TOK_IDENT)
		return fail(p, "expected a module attribute name");
	kind = header_kind(p, &name);
	for (uint32_t i = 0; i < m->n_raw_attrs; i++)
		if (strlen(m->raw_attrs[i].name) == name.len &&
		    !memcmp(m->raw_attrs[i].name, p->lx.src + name.off, name.len))
			return fail(p, "module attribute given twice");
	if (kind >= 0 && (p->header_seen >> kind & 1))
		return fail(p, "module attribute given twice");
	next(p);
	if ((rc = expect(p, SHS_TOK_EQ, "'=' after the module attribute name")))
		return rc;
	if (kind >= 0)
		p->header_seen |= (uint64_t)1 << kind;
	switch (kind) {
	case HDR_LAYOUT: return parse_entry_layout(p);
	case HDR_ALIAS: return parse_aliases(p);
	case HDR_PARTITIONS:
		return parse_int(p, 1, INT64_MAX, "num_partitions", &m->num_partitions);
	case HDR_REPLICAS:
		return parse_int(p, 1, INT64_MAX, "replica_count", &m->replica_count);
	case HDR_FRONTEND:
		return parse_frontend_attrs(p, &m->n_frontend_attrs, &m->frontend_attrs);
	default:
		break;
	}
	if ((rc = parse_raw(p, &value, NULL)))
		return rc;
	if (!(key = shs_arena_strndup(p->a, p->lx.src + name.off, name.len)))
		return oom(p);
	return push_raw_attr(p, &m->n_raw_attrs, &m->raw_attrs, key, value);
}

static int parse_header(parser *p)
{
	int rc;

	if (!at_word(p, "HloModule"))
		return fail(p, "expected 'HloModule' at the start of the module");
	next(p);
	if (!is_name(&p->lx.tok))
		return fail(p, "expected the module name");
	if (!(p->m->name = dup_name(p, &p->lx.tok)))
		return oom(p);
	next(p);
	while (at(p, SHS_TOK_COMMA)) {
		next(p);
		if ((rc = parse_header_attr(p)))
			return rc;
	}
	return SHS_OK;
}

/* ---- Instruction attributes -------------------------------------------------------------- */

#define SHS_ATTR_LIST(X)                                                                 \
	X(METADATA, "metadata") X(SHARDING, "sharding") X(DIMENSIONS, "dimensions")          \
	X(INDEX, "index") X(IOTA_DIMENSION, "iota_dimension") X(DIRECTION, "direction")      \
	X(TYPE, "type") X(LHS_BATCH, "lhs_batch_dims") X(RHS_BATCH, "rhs_batch_dims")        \
	X(LHS_CONTRACTING, "lhs_contracting_dims") X(RHS_CONTRACTING, "rhs_contracting_dims") \
	X(CC_TARGET, "custom_call_target") X(CC_SIDE_EFFECT, "custom_call_has_side_effect")  \
	X(OFFSET_DIMS, "offset_dims") X(COLLAPSED_SLICE_DIMS, "collapsed_slice_dims")        \
	X(START_INDEX_MAP, "start_index_map") X(OPERAND_BATCHING_DIMS, "operand_batching_dims") \
	X(START_INDICES_BATCHING_DIMS, "start_indices_batching_dims")                        \
	X(INDEX_VECTOR_DIM, "index_vector_dim") X(SLICE_SIZES, "slice_sizes")                \
	X(UPDATE_WINDOW_DIMS, "update_window_dims")                                          \
	X(INSERTED_WINDOW_DIMS, "inserted_window_dims")                                      \
	X(SCATTER_DIMS_TO_OPERAND_DIMS, "scatter_dims_to_operand_dims")                      \
	X(INPUT_BATCHING_DIMS, "input_batching_dims")                                        \
	X(SCATTER_INDICES_BATCHING_DIMS, "scatter_indices_batching_dims")                    \
	X(INDICES_ARE_SORTED, "indices_are_sorted") X(UNIQUE_INDICES, "unique_indices")      \
	X(DYNAMIC_SLICE_SIZES, "dynamic_slice_sizes") X(SLICE, "slice") X(WINDOW, "window")  \
	X(DIM_LABELS, "dim_labels") X(FEATURE_GROUP_COUNT, "feature_group_count")            \
	X(BATCH_GROUP_COUNT, "batch_group_count") X(EXPONENT_BITS, "exponent_bits")          \
	X(MANTISSA_BITS, "mantissa_bits") X(PADDING, "padding") X(KIND, "kind")              \
	X(BACKEND_CONFIG, "backend_config") X(FRONTEND_ATTRIBUTES, "frontend_attributes")    \
	X(CHANNEL_ID, "channel_id") X(OPERAND_PRECISION, "operand_precision")                \
	X(IS_STABLE, "is_stable") X(LARGEST, "largest") X(CONTROL, "control-predecessors")   \
	X(TO_APPLY, "to_apply") X(CALLS, "calls") X(CONDITION, "condition") X(BODY, "body")  \
	X(BRANCHES, "branch_computations") X(TRUE_COMP, "true_computation")                  \
	X(FALSE_COMP, "false_computation") X(SELECT, "select") X(SCATTER, "scatter")         \
	X(CALLED_COMPS, "called_computations")

enum attr_id {
#define SHS_ATTR_ENUM(e, name) A_##e,
	SHS_ATTR_LIST(SHS_ATTR_ENUM)
#undef SHS_ATTR_ENUM
	A_COUNT
};

static const char *const attr_names[A_COUNT] = {
#define SHS_ATTR_NAME(e, name) [A_##e] = name,
	SHS_ATTR_LIST(SHS_ATTR_NAME)
#undef SHS_ATTR_NAME
};

_Static_assert(A_COUNT <= 64, "attribute ids fit a 64-bit mask");

/* What the attributes of one instruction collected so far. */
typedef struct attr_state {
	uint64_t seen;
	uint32_t single[CALL_SINGLES];
	comp_list lists[CALL_LISTS];
} attr_state;

static shs_dot_dims *need_dot(parser *p, shs_instr *ins)
{
	if (!ins->dot)
		ins->dot = shs_arena_calloc(p->a, 1, sizeof(*ins->dot));
	return ins->dot;
}

static shs_gather_dims *need_gather(parser *p, shs_instr *ins)
{
	if (!ins->gather)
		ins->gather = shs_arena_calloc(p->a, 1, sizeof(*ins->gather));
	return ins->gather;
}

static shs_scatter_dims *need_scatter(parser *p, shs_instr *ins)
{
	if (!ins->scatter)
		ins->scatter = shs_arena_calloc(p->a, 1, sizeof(*ins->scatter));
	return ins->scatter;
}

/* The int64 list an attribute fills, or NULL (when the holder cannot be allocated: *oom). */
static shs_i64s *list_target(parser *p, shs_instr *ins, int id, bool *no_mem)
{
	shs_dot_dims *d = NULL;
	shs_gather_dims *g = NULL;
	shs_scatter_dims *s = NULL;

	*no_mem = false;
	switch (id) {
	case A_DIMENSIONS: return &ins->dimensions;
	case A_SLICE_SIZES: return &ins->gather_slice_sizes;
	case A_DYNAMIC_SLICE_SIZES: return &ins->dynamic_slice_sizes;
	case A_LHS_BATCH: case A_RHS_BATCH: case A_LHS_CONTRACTING: case A_RHS_CONTRACTING:
		if (!(d = need_dot(p, ins)))
			break;
		return id == A_LHS_BATCH ? &d->lhs_batch : id == A_RHS_BATCH ? &d->rhs_batch
			: id == A_LHS_CONTRACTING ? &d->lhs_contracting : &d->rhs_contracting;
	case A_OFFSET_DIMS: case A_COLLAPSED_SLICE_DIMS: case A_START_INDEX_MAP:
	case A_OPERAND_BATCHING_DIMS: case A_START_INDICES_BATCHING_DIMS:
		if (!(g = need_gather(p, ins)))
			break;
		return id == A_OFFSET_DIMS ? &g->offset_dims
			: id == A_COLLAPSED_SLICE_DIMS ? &g->collapsed_slice_dims
			: id == A_START_INDEX_MAP ? &g->start_index_map
			: id == A_OPERAND_BATCHING_DIMS ? &g->operand_batching_dims
			: &g->start_indices_batching_dims;
	case A_UPDATE_WINDOW_DIMS: case A_INSERTED_WINDOW_DIMS:
	case A_SCATTER_DIMS_TO_OPERAND_DIMS: case A_INPUT_BATCHING_DIMS:
	case A_SCATTER_INDICES_BATCHING_DIMS:
		if (!(s = need_scatter(p, ins)))
			break;
		return id == A_UPDATE_WINDOW_DIMS ? &s->update_window_dims
			: id == A_INSERTED_WINDOW_DIMS ? &s->inserted_window_dims
			: id == A_SCATTER_DIMS_TO_OPERAND_DIMS ? &s->scatter_dims_to_operand_dims
			: id == A_INPUT_BATCHING_DIMS ? &s->input_batching_dims
			: &s->scatter_indices_batching_dims;
	default:
		return NULL;
	}
	*no_mem = true;
	return NULL;
}

/* Reads x-separated integers (`3x3`) at off without blanks inside. */
static int raw_dxd(parser *p, size_t *off, int64_t *vals, uint32_t *n, const char *what)
{
	*n = 0;
	for (;;) {
		if (*n == SHS_MAX_RANK)
			return fail_at(p, *off, "%s has more than %d dimensions", what, SHS_MAX_RANK);
		if (!shs__lex_raw_int(&p->lx, off, &vals[*n]))
			return fail_at(p, *off, "expected an integer in %s", what);
		(*n)++;
		if (*off >= p->lx.len || p->lx.src[*off] != 'x')
			break;
		(*off)++;
	}
	if (*off < p->lx.len && shs__lex_is_ident_char(p->lx.src[*off]))
		return fail_at(p, *off, "malformed %s", what);
	return SHS_OK;
}

/* Reads `lo_hi[_interior]` groups separated by 'x'; interior NULL forbids the third part. */
static int raw_pads(parser *p, size_t *off, shs_pad_dim *pads, uint32_t *n, bool interior,
		    const char *what)
{
	*n = 0;
	for (;;) {
		shs_pad_dim *d = &pads[*n];

		if (*n == SHS_MAX_RANK)
			return fail_at(p, *off, "%s has more than %d dimensions", what, SHS_MAX_RANK);
		d->interior = 0;
		if (!shs__lex_raw_int(&p->lx, off, &d->low) || *off >= p->lx.len ||
		    p->lx.src[(*off)++] != '_' || !shs__lex_raw_int(&p->lx, off, &d->high))
			return fail_at(p, *off, "expected low_high in %s", what);
		if (interior && *off < p->lx.len && p->lx.src[*off] == '_') {
			(*off)++;
			if (!shs__lex_raw_int(&p->lx, off, &d->interior) || d->interior < 0)
				return fail_at(p, *off, "expected a non-negative interior padding");
		}
		(*n)++;
		if (*off >= p->lx.len || p->lx.src[*off] != 'x')
			break;
		(*off)++;
	}
	if (*off < p->lx.len && shs__lex_is_ident_char(p->lx.src[*off]))
		return fail_at(p, *off, "malformed %s", what);
	return SHS_OK;
}

enum win_field { W_SIZE, W_STRIDE, W_PAD, W_LHS_DILATE, W_RHS_DILATE, W_RHS_REVERSAL, W_FIELDS };

static int window_field(const parser *p)
{
	static const char *const keys[W_FIELDS] = {
		"size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal",
	};

	for (int f = 0; f < W_FIELDS; f++)
		if (at_word(p, keys[f]))
			return f;
	return -1;
}

/* Builds the window from the fields read; defaults: stride and dilations 1, no padding. */
static int make_window(parser *p, shs_instr *ins, int64_t (*vals)[SHS_MAX_RANK],
		       const shs_pad_dim *pads, const uint32_t *counts, uint32_t given,
		       size_t open_off)
{
	uint32_t n = counts[W_SIZE];

	for (int f = 0; f < W_FIELDS; f++)
		if ((given >> f & 1) && counts[f] != n)
			return fail_at(p, open_off, "window fields disagree on the number of dimensions");
	if (given && !(given & 1))
		return fail_at(p, open_off, "window without size");
	ins->window = shs_arena_calloc(p->a, n ? n : 1, sizeof(*ins->window));
	if (!ins->window)
		return oom(p);
	ins->n_window = n;
	for (uint32_t i = 0; i < n; i++) {
		shs_window_dim *w = &ins->window[i];

		w->size = vals[W_SIZE][i];
		w->stride = (given >> W_STRIDE & 1) ? vals[W_STRIDE][i] : 1;
		w->pad_low = (given >> W_PAD & 1) ? pads[i].low : 0;
		w->pad_high = (given >> W_PAD & 1) ? pads[i].high : 0;
		w->base_dilation = (given >> W_LHS_DILATE & 1) ? vals[W_LHS_DILATE][i] : 1;
		w->window_dilation = (given >> W_RHS_DILATE & 1) ? vals[W_RHS_DILATE][i] : 1;
		w->reversal = (given >> W_RHS_REVERSAL & 1) && vals[W_RHS_REVERSAL][i];
	}
	return SHS_OK;
}

/* `{size=3x3 stride=2x1 pad=0_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x1}`. */
static int parse_window(parser *p, shs_instr *ins)
{
	int64_t vals[W_FIELDS][SHS_MAX_RANK];
	shs_pad_dim pads[SHS_MAX_RANK];
	uint32_t counts[W_FIELDS] = { 0 }, given = 0;
	size_t open_off = p->lx.tok.off;
	int rc = expect(p, SHS_TOK_LBRACE, "'{' to open the window");

	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		int f = window_field(p);
		size_t off;

		if (f < 0)
			return fail(p, "unknown window field");
		if (given >> f & 1)
			return fail(p, "window field given twice");
		given |= 1u << f;
		next(p);
		if ((rc = expect(p, SHS_TOK_EQ, "'=' after the window field")))
			return rc;
		off = p->lx.tok.off;
		if (f == W_PAD)
			rc = raw_pads(p, &off, pads, &counts[f], false, "window padding");
		else
			rc = raw_dxd(p, &off, vals[f], &counts[f], "window");
		if (rc == SHS_OK)
			shs__lex_seek(&p->lx, off);
	}
	if (rc == SHS_OK)
		next(p);
	return rc ? rc : make_window(p, ins, vals, pads, counts, given, open_off);
}

/* Positions of the labels of one part of dim_labels: a and b (batch/feature or input/output
 * feature) and the spatial digits; false when malformed. */
static bool dim_label_part(const char *s, size_t n, char a, char b, int64_t *pa, int64_t *pb,
			   int64_t *spatial, uint32_t *n_spatial)
{
	int64_t pos[SPATIAL_MAX];

	if (n < 2 || n - 2 > SPATIAL_MAX)
		return false;
	*pa = *pb = SPATIAL_FREE;
	for (int i = 0; i < SPATIAL_MAX; i++)
		pos[i] = SPATIAL_FREE;
	*n_spatial = (uint32_t)(n - 2);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int64_t *slot = c == a ? pa : c == b ? pb : NULL;

		if (!slot && c >= '0' && c < '0' + (int)*n_spatial)
			slot = &pos[c - '0'];
		if (!slot || *slot != SPATIAL_FREE)
			return false;
		*slot = (int64_t)i;
	}
	memcpy(spatial, pos, *n_spatial * sizeof(*pos));
	return true;
}

static int spatial_list(parser *p, shs_i64s *out, const int64_t *v, uint32_t n)
{
	out->n = n;
	out->v = n ? shs_arena_memdup(p->a, v, n * sizeof(*v)) : NULL;
	return (n && !out->v) ? oom(p) : SHS_OK;
}

/* `b01f_01io->b01f`: positions of batch, feature and spatial dims in each part. */
static int parse_dim_labels(parser *p, shs_instr *ins)
{
	const char *s = p->lx.src;
	size_t start = p->lx.tok.off, end = start, us = SIZE_MAX, arrow = SIZE_MAX;
	int64_t sp[DIM_LABEL_PARTS][SPATIAL_MAX];
	uint32_t ns[DIM_LABEL_PARTS];
	shs_conv_dims *c = ins->conv;
	int rc;

	while (end < p->lx.len && (shs__lex_is_ident_char(s[end]) || s[end] == '>'))
		end++;
	for (size_t i = start; i < end; i++) {
		if (s[i] == '_' && us == SIZE_MAX)
			us = i;
		if (s[i] == '-' && i + 1 < end && s[i + 1] == '>' && arrow == SIZE_MAX)
			arrow = i;
	}
	if (!c && !(c = ins->conv = shs_arena_calloc(p->a, 1, sizeof(*c))))
		return oom(p);
	if (us == SIZE_MAX || arrow == SIZE_MAX || us > arrow ||
	    !dim_label_part(s + start, us - start, 'b', 'f', &c->input_batch, &c->input_feature,
			    sp[0], &ns[0]) ||
	    !dim_label_part(s + us + 1, arrow - us - 1, 'i', 'o', &c->kernel_input_feature,
			    &c->kernel_output_feature, sp[1], &ns[1]) ||
	    !dim_label_part(s + arrow + 2, end - arrow - 2, 'b', 'f', &c->output_batch,
			    &c->output_feature, sp[2], &ns[2]) ||
	    ns[0] != ns[1] || ns[1] != ns[2])
		return fail_at(p, start, "malformed dim_labels");
	if ((rc = spatial_list(p, &c->input_spatial, sp[0], ns[0])) ||
	    (rc = spatial_list(p, &c->kernel_spatial, sp[1], ns[1])) ||
	    (rc = spatial_list(p, &c->output_spatial, sp[2], ns[2])))
		return rc;
	shs__lex_seek(&p->lx, end);
	return SHS_OK;
}

/* `{[0:16], [0:8:2]}`. */
static int parse_slice(parser *p, shs_instr *ins)
{
	int rc = expect(p, SHS_TOK_LBRACE, "'{' to open the slice");
	uint32_t n = 0;

	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		shs_slice_dim *d;

		if (n && (rc = expect(p, SHS_TOK_COMMA, "',' or '}' in the slice")))
			return rc;
		if ((rc = grow_array(p, (void **)&ins->slice, n, sizeof(*ins->slice))))
			return rc;
		d = &ins->slice[n];
		d->stride = 1;
		rc = expect(p, SHS_TOK_LBRACKET, "'[' to open a slice range");
		if (rc == SHS_OK)
			rc = parse_int(p, INT64_MIN, INT64_MAX, "the slice start", &d->start);
		if (rc == SHS_OK)
			rc = expect(p, SHS_TOK_COLON, "':' after the slice start");
		if (rc == SHS_OK)
			rc = parse_int(p, INT64_MIN, INT64_MAX, "the slice limit", &d->limit);
		if (rc == SHS_OK && at(p, SHS_TOK_COLON)) {
			next(p);
			rc = parse_int(p, INT64_MIN, INT64_MAX, "the slice stride", &d->stride);
		}
		if (rc == SHS_OK)
			rc = expect(p, SHS_TOK_RBRACKET, "']' to close a slice range");
		n++;
	}
	if (rc == SHS_OK)
		next(p);
	ins->n_slice = n;
	return rc;
}

static int parse_padding(parser *p, shs_instr *ins)
{
	shs_pad_dim pads[SHS_MAX_RANK];
	size_t off = p->lx.tok.off;
	uint32_t n = 0;
	int rc = raw_pads(p, &off, pads, &n, true, "padding");

	if (rc)
		return rc;
	ins->padding = shs_arena_memdup(p->a, pads, n * sizeof(*pads));
	if (!ins->padding)
		return oom(p);
	ins->n_padding = n;
	shs__lex_seek(&p->lx, off);
	return SHS_OK;
}

/* `{default, high, highest}`. */
static int parse_precision(parser *p, shs_instr *ins)
{
	static const char *const names[] = { "default", "high", "highest" };
	static const char *const upper[] = { "DEFAULT", "HIGH", "HIGHEST" };
	int rc = expect(p, SHS_TOK_LBRACE, "'{' to open operand_precision");

	p->i64s.n = 0;
	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		int k;

		if (p->i64s.n && (rc = expect(p, SHS_TOK_COMMA, "',' or '}' in operand_precision")))
			return rc;
		for (k = 0; k < SHS_PRECISION_HIGHEST + 1; k++)
			if (at_word(p, names[k]) || at_word(p, upper[k]))
				break;
		if (k > SHS_PRECISION_HIGHEST)
			return fail(p, "expected default, high or highest");
		next(p);
		rc = push_i64(p, k);
	}
	if (rc)
		return rc;
	next(p);
	ins->n_precision = (uint32_t)p->i64s.n;
	ins->precision = shs_arena_alloc(p->a, p->i64s.n * sizeof(*ins->precision));
	if (!ins->precision)
		return oom(p);
	for (size_t i = 0; i < p->i64s.n; i++)
		ins->precision[i] = (int32_t)((int64_t *)p->i64s.data)[i];
	return SHS_OK;
}

static int parse_backend_config(parser *p, shs_instr *ins)
{
	const char *s = NULL;
	size_t n = 0;
	int rc = at(p, SHS_TOK_LBRACE) ? parse_raw(p, &s, &n) : parse_string(p, &s, &n);

	ins->backend_config.data = (const uint8_t *)s;
	ins->backend_config.len = n;
	return rc;
}

static int parse_metadata(parser *p, shs_instr *ins)
{
	size_t off = p->lx.tok.off, used = 0, err_off = 0;
	int rc;

	if (!at(p, SHS_TOK_LBRACE))
		return fail(p, "expected '{' to open the metadata");
	if (!(ins->metadata = shs_arena_calloc(p->a, 1, sizeof(*ins->metadata))))
		return oom(p);
	rc = shs_metadata_parse(p->a, p->lx.src + off, p->lx.len - off, &used, ins->metadata,
				&err_off, &p->err);
	if (rc)
		return nested_fail(p, rc, off + err_off);
	shs__lex_seek(&p->lx, off + used);
	return SHS_OK;
}

static int parse_sharding(parser *p, shs_instr *ins)
{
	size_t off = p->lx.tok.off, used = 0, err_off = 0;
	int rc;

	if (!at(p, SHS_TOK_LBRACE))
		return fail(p, "expected '{' to open the sharding");
	rc = shs_sharding_parse(p->a, p->lx.src + off, p->lx.len - off, &used, &ins->sharding,
				&err_off, &p->err);
	if (rc)
		return nested_fail(p, rc, off + err_off);
	shs__lex_seek(&p->lx, off + used);
	return SHS_OK;
}

/* A reference to a computation defined earlier in the file. */
static int parse_comp_ref(parser *p, uint32_t *idx)
{
	const shs_tok t = p->lx.tok;
	const char *s;
	size_t n;

	if (!is_name(&t))
		return fail(p, "expected a computation name");
	s = name_ptr(p, &t, &n);
	if (!nt_find(&p->comps, s, n, idx))
		return fail(p, "unknown computation (a computation must be defined before it is called)");
	next(p);
	return SHS_OK;
}

/* A computation name, or `{a, b}`. */
static int parse_comp_list(parser *p, comp_list *out)
{
	uint32_t idx;
	int rc;

	p->i64s.n = 0;
	if (!at(p, SHS_TOK_LBRACE)) {
		rc = parse_comp_ref(p, &idx);
		if (rc == SHS_OK)
			rc = push_i64(p, idx);
	} else {
		rc = SHS_OK;
		next(p);
		while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
			if (p->i64s.n && (rc = expect(p, SHS_TOK_COMMA, "',' or '}' between computations")))
				return rc;
			rc = parse_comp_ref(p, &idx);
			if (rc == SHS_OK)
				rc = push_i64(p, idx);
		}
		if (rc == SHS_OK)
			next(p);
	}
	if (rc)
		return rc;
	out->n = (uint32_t)p->i64s.n;
	out->v = shs_arena_alloc(p->a, (out->n ? out->n : 1) * sizeof(*out->v));
	if (!out->v)
		return oom(p);
	for (uint32_t i = 0; i < out->n; i++)
		out->v[i] = (uint32_t)((int64_t *)p->i64s.data)[i];
	return SHS_OK;
}

/* Pending references to operands or control predecessors, resolved when the computation
 * ends. */
static int push_ref(parser *p, const shs_tok *t, uint32_t instr, uint32_t slot, bool control,
		    const shs_shape *shape, size_t shape_off, size_t shape_len)
{
	ref *r = vec_push(&p->refs);
	size_t n;

	if (!r)
		return oom(p);
	r->tok_off = t->off;
	r->off = (size_t)(name_ptr(p, t, &n) - p->lx.src);
	r->len = (uint32_t)n;
	r->instr = instr;
	r->slot = slot;
	r->control = control;
	r->shape = shape;
	r->shape_off = shape_off;
	r->shape_len = shape_len;
	return SHS_OK;
}

static int parse_control(parser *p, shs_instr *ins, uint32_t index)
{
	int rc = expect(p, SHS_TOK_LBRACE, "'{' to open control-predecessors");
	uint32_t n = 0;

	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		if (n && (rc = expect(p, SHS_TOK_COMMA, "',' or '}' in control-predecessors")))
			return rc;
		if (!is_name(&p->lx.tok))
			return fail(p, "expected an instruction name");
		rc = push_ref(p, &p->lx.tok, index, n++, true, NULL, 0, 0);
		next(p);
	}
	if (rc)
		return rc;
	next(p);
	ins->n_control = n;
	ins->control = shs_arena_calloc(p->a, n ? n : 1, sizeof(*ins->control));
	return ins->control ? SHS_OK : oom(p);
}

/* Attributes with a single int, bool or word value; *handled false for the others. */
static int parse_scalar_attr(parser *p, shs_instr *ins, int id, bool *handled)
{
	static const char *const directions[] = { "EQ", "NE", "GE", "GT", "LE", "LT", NULL };
	static const char *const types[] = { "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED", NULL };
	static const char *const kinds[] = { "kLoop", "kInput", "kOutput", "kCustom", NULL };
	int64_t v = 0;
	int rc;

	*handled = true;
	switch (id) {
	case A_INDEX: return parse_int(p, 0, INT64_MAX, "index", &ins->tuple_index);
	case A_INDEX_VECTOR_DIM:
		if (ins->op == SHS_OP_SCATTER)
			return need_scatter(p, ins) ? parse_int(p, 0, INT64_MAX, "index_vector_dim",
								 &ins->scatter->index_vector_dim)
						    : oom(p);
		return need_gather(p, ins) ? parse_int(p, 0, INT64_MAX, "index_vector_dim",
							&ins->gather->index_vector_dim)
					   : oom(p);
	case A_FEATURE_GROUP_COUNT:
		return parse_int(p, 1, INT64_MAX, "feature_group_count", &ins->feature_group_count);
	case A_BATCH_GROUP_COUNT:
		return parse_int(p, 1, INT64_MAX, "batch_group_count", &ins->batch_group_count);
	case A_CHANNEL_ID: return parse_int(p, 0, INT64_MAX, "channel_id", &ins->channel_id);
	case A_EXPONENT_BITS: case A_MANTISSA_BITS:
		rc = parse_int(p, 0, INT32_MAX, attr_names[id], &v);
		*(id == A_EXPONENT_BITS ? &ins->exponent_bits : &ins->mantissa_bits) = (int32_t)v;
		return rc;
	case A_CC_SIDE_EFFECT: return parse_bool(p, &ins->custom_call_has_side_effect);
	case A_INDICES_ARE_SORTED: return parse_bool(p, &ins->indices_are_sorted);
	case A_UNIQUE_INDICES: return parse_bool(p, &ins->unique_indices);
	case A_IS_STABLE: return parse_bool(p, &ins->is_stable);
	case A_LARGEST: return parse_bool(p, &ins->largest);
	case A_DIRECTION:
		return parse_word(p, directions, "comparison direction", &ins->comparison_direction);
	case A_TYPE: return parse_word(p, types, "comparison type", &ins->comparison_type);
	case A_KIND: return parse_word(p, kinds, "fusion kind", &ins->fusion_kind);
	case A_CC_TARGET: return parse_string(p, &ins->custom_call_target, NULL);
	default: break;
	}
	*handled = false;
	return SHS_OK;
}

static int parse_iota_dimension(parser *p, shs_instr *ins)
{
	int64_t v;
	int rc = parse_int(p, 0, INT64_MAX, "iota_dimension", &v);

	if (rc)
		return rc;
	ins->dimensions.n = 1;
	ins->dimensions.v = shs_arena_memdup(p->a, &v, sizeof(v));
	return ins->dimensions.v ? SHS_OK : oom(p);
}

/* Called-computation attributes, collected in st and put in order once all are read. */
static int parse_call_attr(parser *p, attr_state *st, int id)
{
	int slot = id == A_BODY ? CALL_BODY : id == A_CONDITION ? CALL_CONDITION
		: id == A_TRUE_COMP ? CALL_TRUE : id == A_FALSE_COMP ? CALL_FALSE
		: id == A_SELECT ? CALL_SELECT : id == A_SCATTER ? CALL_SCATTER
		: id == A_TO_APPLY ? CALL_TO_APPLY : -1;

	if (slot >= 0)
		return parse_comp_ref(p, &st->single[slot]);
	return parse_comp_list(p, &st->lists[id == A_CALLS ? LIST_CALLS
					     : id == A_BRANCHES ? LIST_BRANCHES : LIST_CALLED]);
}

static int parse_modelled_attr(parser *p, shs_instr *ins, uint32_t index, attr_state *st,
			       int id)
{
	bool no_mem, handled;
	shs_i64s *list = list_target(p, ins, id, &no_mem);
	int rc;

	if (no_mem)
		return oom(p);
	if (list)
		return parse_i64s(p, list);
	rc = parse_scalar_attr(p, ins, id, &handled);
	if (handled)
		return rc;
	switch (id) {
	case A_METADATA: return parse_metadata(p, ins);
	case A_SHARDING: return parse_sharding(p, ins);
	case A_IOTA_DIMENSION: return parse_iota_dimension(p, ins);
	case A_SLICE: return parse_slice(p, ins);
	case A_WINDOW: return parse_window(p, ins);
	case A_DIM_LABELS: return parse_dim_labels(p, ins);
	case A_PADDING: return parse_padding(p, ins);
	case A_BACKEND_CONFIG: return parse_backend_config(p, ins);
	case A_FRONTEND_ATTRIBUTES:
		return parse_frontend_attrs(p, &ins->n_frontend_attrs, &ins->frontend_attrs);
	case A_OPERAND_PRECISION: return parse_precision(p, ins);
	case A_CONTROL: return parse_control(p, ins, index);
	default: return parse_call_attr(p, st, id);
	}
}

/* One `name=value` after an instruction. */
static int parse_attr(parser *p, shs_instr *ins, uint32_t index, attr_state *st)
{
	const shs_tok name = p->lx.tok;
	uint32_t id, bit;
	const char *value, *key;
	int rc;

	if (name.kind != SHS_TOK_IDENT)
		return fail(p, "expected an attribute name");
	if (!nt_find(&p->attrs, p->lx.src + name.off, name.len, &id)) {
		for (uint32_t i = 0; i < ins->n_raw_attrs; i++)
			if (strlen(ins->raw_attrs[i].name) == name.len &&
			    !memcmp(ins->raw_attrs[i].name, p->lx.src + name.off, name.len))
				return fail(p, "attribute given twice");
		next(p);
		if ((rc = expect(p, SHS_TOK_EQ, "'=' after the attribute name")) ||
		    (rc = parse_raw(p, &value, NULL)))
			return rc;
		if (!(key = shs_arena_strndup(p->a, p->lx.src + name.off, name.len)))
			return oom(p);
		return push_raw_attr(p, &ins->n_raw_attrs, &ins->raw_attrs, key, value);
	}
	/* iota_dimension fills dimensions: it counts as the same attribute */
	bit = id == A_IOTA_DIMENSION ? A_DIMENSIONS : id;
	if (st->seen >> bit & 1)
		return fail(p, "attribute given twice");
	st->seen |= (uint64_t)1 << bit;
	next(p);
	if ((rc = expect(p, SHS_TOK_EQ, "'=' after the attribute name")))
		return rc;
	return parse_modelled_attr(p, ins, index, st, (int)id);
}

/* Puts the called computations in XLA's order: while [body, condition], conditional
 * [true, false] or the branches, select-and-scatter [select, scatter], then to_apply, calls
 * and called_computations. */
static int set_called(parser *p, shs_instr *ins, const attr_state *st)
{
	uint32_t n = 0, k = 0;

	for (int s = 0; s < CALL_SINGLES; s++)
		n += st->single[s] != NO_INDEX;
	for (int l = 0; l < CALL_LISTS; l++)
		n += st->lists[l].n;
	if (!n)
		return SHS_OK;
	ins->called = shs_arena_alloc(p->a, n * sizeof(*ins->called));
	if (!ins->called)
		return oom(p);
	for (int s = 0; s < CALL_SINGLES; s++)
		if (st->single[s] != NO_INDEX)
			ins->called[k++] = st->single[s];
	for (int l = 0; l < CALL_LISTS; l++)
		for (uint32_t i = 0; i < st->lists[l].n; i++)
			ins->called[k++] = st->lists[l].v[i];
	ins->n_called = n;
	return SHS_OK;
}

/* Structures XLA always writes for these opcodes, so the IR has them even when empty. */
static int add_op_defaults(parser *p, shs_instr *ins)
{
	bool ok = true;

	switch (ins->op) {
	case SHS_OP_DOT: ok = need_dot(p, ins) != NULL; break;
	case SHS_OP_GATHER: ok = need_gather(p, ins) != NULL; break;
	case SHS_OP_SCATTER: ok = need_scatter(p, ins) != NULL; break;
	case SHS_OP_CONVOLUTION:
		if (!ins->conv)
			ok = (ins->conv = shs_arena_calloc(p->a, 1, sizeof(*ins->conv))) != NULL;
		/* fall through */
	case SHS_OP_REDUCE_WINDOW:
	case SHS_OP_SELECT_AND_SCATTER:
		if (ok && !ins->window)
			ok = (ins->window = shs_arena_calloc(p->a, 1, sizeof(*ins->window))) != NULL;
		break;
	default:
		break;
	}
	return ok ? SHS_OK : oom(p);
}

/* ---- Instructions ------------------------------------------------------------------------- */

/* `(shape? name, ...)` into pending references. */
static int parse_operand_list(parser *p, shs_instr *ins, uint32_t index)
{
	uint32_t n = 0;
	int rc;

	while (!at(p, SHS_TOK_RPAREN)) {
		shs_shape *shape = NULL;
		size_t shape_off = 0, shape_len = 0;

		if (n && (rc = expect(p, SHS_TOK_COMMA, "',' or ')' between operands")))
			return rc;
		if (n == SHS_MAX_OPERANDS)
			return fail(p, "more than %d operands", SHS_MAX_OPERANDS);
		if (at_shape(p)) {
			shape_off = p->lx.tok.off;
			if (!(shape = shs_arena_calloc(p->a, 1, sizeof(*shape))))
				return oom(p);
			if ((rc = parse_shape(p, shape, 0)))
				return rc;
			shape_len = p->lx.prev_end - shape_off;
			p->m->style.operand_shapes = true;
		}
		if (!is_name(&p->lx.tok))
			return fail(p, "expected an operand name");
		p->m->style.percent |= at(p, SHS_TOK_PNAME);
		if ((rc = push_ref(p, &p->lx.tok, index, n++, false, shape, shape_off, shape_len)))
			return rc;
		next(p);
	}
	ins->n_operands = n;
	ins->operands = shs_arena_calloc(p->a, n ? n : 1, sizeof(*ins->operands));
	return ins->operands ? SHS_OK : oom(p);
}

/* `constant(literal)`; the old form `constant(f32[2] {...})` repeats the shape. */
static int parse_constant(parser *p, shs_instr *ins)
{
	if (at_shape(p) && !at(p, SHS_TOK_LPAREN)) {
		const shs_tok t = p->lx.tok;
		shs_shape s = { 0 };
		int rc = parse_shape(p, &s, 0);

		if (rc)
			return rc;
		if (!shs_shape_compatible(&s, &ins->shape))
			return fail_tok(p, &t, "constant shape differs from the instruction's shape");
	}
	return shs__text_literal_parse(&p->lx, p->a, &ins->shape, &ins->literal);
}

static int parse_operands(parser *p, shs_instr *ins, uint32_t index)
{
	int rc = expect(p, SHS_TOK_LPAREN, "'(' after the opcode");

	if (rc)
		return rc;
	if (ins->op == SHS_OP_CONSTANT)
		rc = parse_constant(p, ins);
	else if (ins->op == SHS_OP_PARAMETER)
		rc = parse_int(p, 0, INT64_MAX, "parameter number", &ins->parameter_number);
	else
		rc = parse_operand_list(p, ins, index);
	return rc ? rc : expect(p, SHS_TOK_RPAREN, "')' after the operands");
}

/* What follows `name =`: shape, opcode, operands and attributes. */
static int parse_instr_body(parser *p, shs_instr *ins, uint32_t index)
{
	const shs_tok *t = &p->lx.tok;
	attr_state st;
	span *sp = &((span *)p->spans.data)[index];
	uint32_t op;
	int rc;

	sp->shape_off = t->off;
	if ((rc = parse_shape(p, &ins->shape, 0)))
		return rc;
	sp->shape_len = p->lx.prev_end - sp->shape_off;
	if (t->kind != SHS_TOK_IDENT)
		return fail(p, "expected an opcode");
	if (!nt_find(&p->ops, p->lx.src + t->off, t->len, &op))
		return fail(p, "unknown opcode");
	ins->op = (shs_opcode)op;
	next(p);
	if ((rc = parse_operands(p, ins, index)))
		return rc;
	memset(&st, 0, sizeof(st));
	for (int s = 0; s < CALL_SINGLES; s++)
		st.single[s] = NO_INDEX;
	while (at(p, SHS_TOK_COMMA)) {
		next(p);
		if ((rc = parse_attr(p, ins, index, &st)))
			return rc;
	}
	if ((rc = set_called(p, ins, &st)))
		return rc;
	return add_op_defaults(p, ins);
}

/* `[ROOT] name = shape opcode(operands), attr=value, ...`. */
static int parse_instr(parser *p, shs_computation *c, uint32_t *root)
{
	shs_tok name;
	shs_instr *ins;
	span *sp;
	uint32_t index = c->n_instrs, dup;
	const char *s;
	size_t n;
	int rc;

	if (at_word(p, "ROOT")) {
		if (*root != NO_INDEX)
			return fail(p, "second ROOT in computation '%s'", c->name);
		*root = index;
		next(p);
	}
	name = p->lx.tok;
	if (!is_name(&name))
		return fail(p, "expected an instruction name");
	s = name_ptr(p, &name, &n);
	if (nt_find(&p->instrs, s, n, &dup))
		return fail(p, "duplicate instruction name in computation '%s'", c->name);
	p->m->style.percent |= name.kind == SHS_TOK_PNAME;
	next(p);
	if ((rc = expect(p, SHS_TOK_EQ, "'=' after the instruction name")))
		return rc;
	if (!(ins = shs_arena_calloc(p->a, 1, sizeof(*ins))) || !(sp = vec_push(&p->spans)) ||
	    !(ins->name = shs_arena_strndup(p->a, s, n)))
		return oom(p);
	sp->name_off = name.off;
	ins->id = ++p->next_instr_id;
	if (shs_comp_add_instr(p->m, c, ins) != SHS_OK || nt_put(&p->instrs, s, n, index) != SHS_OK)
		return oom(p);
	return parse_instr_body(p, ins, index);
}

/* ---- Computations ------------------------------------------------------------------------- */

static int resolve_refs(parser *p, shs_computation *c)
{
	const ref *refs = p->refs.data;
	const span *spans = p->spans.data;

	for (size_t i = 0; i < p->refs.n; i++) {
		const ref *r = &refs[i];
		shs_instr *user = c->instrs[r->instr];
		uint32_t idx;

		if (!nt_find(&p->instrs, p->lx.src + r->off, r->len, &idx))
			return fail_at(p, r->tok_off, "unknown %s in computation '%s'",
				       r->control ? "control predecessor" : "operand", c->name);
		if (r->shape && !shs_shape_compatible(r->shape, &c->instrs[idx]->shape))
			return fail_at(p, r->shape_off,
				       "operand shape differs from the shape of '%s', which is %.*s",
				       c->instrs[idx]->name, (int)spans[idx].shape_len,
				       p->lx.src + spans[idx].shape_off);
		if (r->control)
			user->control[r->slot] = idx;
		else
			user->operands[r->slot] = idx;
	}
	return SHS_OK;
}

/* Fills p->params[number] with the index of each parameter instruction of c; report: the
 * numbers must be 0..n-1, each once (errors point at the instruction). */
static int collect_params(parser *p, const shs_computation *c, uint32_t *n_params)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < c->n_instrs; i++)
		n += c->instrs[i]->op == SHS_OP_PARAMETER;
	p->params.n = 0;
	for (uint32_t k = 0; k < n; k++)
		if (!vec_push(&p->params))
			return oom(p);
	for (uint32_t k = 0; k < n; k++)
		((uint32_t *)p->params.data)[k] = NO_INDEX;
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *ins = c->instrs[i];
		uint32_t *slot;

		if (ins->op != SHS_OP_PARAMETER)
			continue;
		if (ins->parameter_number >= (int64_t)n)
			return fail_at(p, ((span *)p->spans.data)[i].name_off,
				       "parameter number %lld out of range: computation '%s' has %u parameters",
				       (long long)ins->parameter_number, c->name, n);
		slot = &((uint32_t *)p->params.data)[ins->parameter_number];
		if (*slot != NO_INDEX)
			return fail_at(p, ((span *)p->spans.data)[i].name_off,
				       "parameter number %lld used twice in computation '%s'",
				       (long long)ins->parameter_number, c->name);
		*slot = i;
	}
	*n_params = n;
	return SHS_OK;
}

/* Checks a program shape (signature or entry layout) against c's parameters and root;
 * offs locate each parameter and the result (NULL: report at base). */
static int check_program_shape(parser *p, const shs_computation *c, const shs_program_shape *ps,
			       const size_t *offs, size_t base, const char *what)
{
	const uint32_t *params = p->params.data;

	if (ps->n_params != p->params.n)
		return fail_at(p, base, "%s has %u parameters, computation '%s' has %zu", what,
			       ps->n_params, c->name, p->params.n);
	for (uint32_t k = 0; k < ps->n_params; k++)
		if (!shs_shape_compatible(&ps->params[k], &c->instrs[params[k]]->shape))
			return fail_at(p, offs ? offs[k] : base,
				       "%s parameter %u differs from the shape of '%s'", what, k,
				       c->instrs[params[k]]->name);
	if (!shs_shape_compatible(&ps->result, &c->instrs[c->root]->shape))
		return fail_at(p, offs ? offs[ps->n_params] : base,
			       "%s result differs from the shape of the root '%s'", what,
			       c->instrs[c->root]->name);
	return SHS_OK;
}

static int finish_computation(parser *p, shs_computation *c, uint32_t root,
			      const signature *sig)
{
	uint32_t n_params;
	int rc;

	c->root = root != NO_INDEX ? root : c->n_instrs - 1;
	if ((rc = resolve_refs(p, c)) || (rc = collect_params(p, c, &n_params)))
		return rc;
	if (sig->present)
		return check_program_shape(p, c, &sig->ps, sig->param_offs, sig->off, "signature");
	return SHS_OK;
}

static int parse_execution_thread(parser *p, shs_computation *c)
{
	next(p); /* ',' */
	if (!at_word(p, "execution_thread"))
		return fail(p, "expected execution_thread");
	if (c->execution_thread)
		return fail(p, "execution_thread given twice");
	next(p);
	if (!at(p, SHS_TOK_EQ))
		return fail(p, "expected '=' after execution_thread");
	next(p);
	return parse_string(p, &c->execution_thread, NULL);
}

/* `{ instructions }` of c. */
static int parse_body(parser *p, shs_computation *c, uint32_t *root)
{
	int rc = expect(p, SHS_TOK_LBRACE, "'{' to open the computation");

	nt_reset(&p->instrs);
	p->refs.n = 0;
	p->spans.n = 0;
	*root = NO_INDEX;
	while (rc == SHS_OK && !at(p, SHS_TOK_RBRACE)) {
		if (at(p, SHS_TOK_EOF))
			return fail(p, "expected '}' to close computation '%s'", c->name);
		rc = parse_instr(p, c, root);
	}
	if (rc == SHS_OK && c->n_instrs == 0)
		return fail(p, "computation '%s' has no instructions", c->name);
	if (rc == SHS_OK)
		next(p);
	return rc;
}

static int add_computation(parser *p, shs_computation *c, bool is_entry)
{
	uint32_t index = p->m->n_comps;

	if (shs_module_add_comp(p->m, c) != SHS_OK ||
	    nt_put(&p->comps, c->name, strlen(c->name), index) != SHS_OK)
		return oom(p);
	if (is_entry) {
		p->have_entry = true;
		p->entry = index;
	}
	return SHS_OK;
}

/* `[ENTRY] name [(p: shape, ...) -> shape] [, execution_thread="x"] { ... }
 * [, execution_thread="x"]`. */
static int parse_computation(parser *p)
{
	signature sig = { 0 };
	shs_computation *c;
	bool is_entry = false;
	uint32_t root, dup;
	int rc;

	if (at_word(p, "ENTRY")) {
		if (p->have_entry)
			return fail(p, "second ENTRY computation (the first is '%s')",
				    p->m->comps[p->entry]->name);
		is_entry = true;
		next(p);
	}
	if (!is_name(&p->lx.tok))
		return fail(p, "expected a computation name");
	{
		size_t n;
		const char *s = name_ptr(p, &p->lx.tok, &n);

		if (nt_find(&p->comps, s, n, &dup))
			return fail(p, "duplicate computation name");
	}
	if (!(c = shs_arena_calloc(p->a, 1, sizeof(*c))) || !(c->name = dup_name(p, &p->lx.tok)))
		return oom(p);
	p->m->style.percent |= at(p, SHS_TOK_PNAME);
	c->id = ++p->next_comp_id;
	next(p);
	if (at(p, SHS_TOK_LPAREN)) {
		sig.present = true;
		sig.off = p->lx.tok.off;
		p->m->style.signatures = true;
		if ((rc = parse_program_shape(p, true, &sig.ps, &sig.param_offs)))
			return rc;
	}
	if (at(p, SHS_TOK_COMMA) && (rc = parse_execution_thread(p, c)))
		return rc;
	if ((rc = parse_body(p, c, &root)))
		return rc;
	if (at(p, SHS_TOK_COMMA) && (rc = parse_execution_thread(p, c)))
		return rc;
	if ((rc = finish_computation(p, c, root, &sig)))
		return rc;
	return add_computation(p, c, is_entry);
}

/* ---- Module ----------------------------------------------------------------------------- */

/* The entry layout from the header, checked, or derived from the entry's parameters and root. */
static int finish_entry_layout(parser *p)
{
	shs_module *m = p->m;
	const shs_computation *c = m->comps[m->entry];
	const uint32_t *params;
	shs_program_shape *ps;
	uint32_t n;
	int rc = collect_params(p, c, &n);

	if (rc)
		return rc;
	if (p->have_layout)
		return check_program_shape(p, c, m->entry_layout, p->layout_offs, p->layout_off,
					   "entry_computation_layout");
	if (!(ps = m->entry_layout = shs_arena_calloc(p->a, 1, sizeof(*ps))))
		return oom(p);
	if (n && !(ps->params = shs_arena_calloc(p->a, n, sizeof(*ps->params))))
		return oom(p);
	params = p->params.data;
	for (uint32_t k = 0; k < n; k++)
		if (shs_shape_copy(p->a, &ps->params[k], &c->instrs[params[k]]->shape) != SHS_OK)
			return oom(p);
	ps->n_params = n;
	if (shs_shape_copy(p->a, &ps->result, &c->instrs[c->root]->shape) != SHS_OK)
		return oom(p);
	return SHS_OK;
}

static int parse_module(parser *p)
{
	int rc = parse_header(p);

	while (rc == SHS_OK && !at(p, SHS_TOK_EOF)) {
		if (at_word(p, "FileNames") || at_word(p, "FunctionNames") ||
		    at_word(p, "FileLocations") || at_word(p, "StackFrames"))
			return fail_code_at(p, p->lx.tok.off, SHS_EUNSUPPORTED,
					    "stack frame tables are not supported");
		rc = parse_computation(p);
	}
	if (rc)
		return rc;
	if (!p->m->n_comps)
		return fail(p, "expected a computation");
	p->m->entry = p->have_entry ? p->entry : p->m->n_comps - 1;
	return finish_entry_layout(p);
}

/* ---- Setup -------------------------------------------------------------------------------- */

static int fill_keywords(parser *p)
{
	for (int op = 0; op < SHS_OP_COUNT; op++) {
		const char *s = shs_opcode_name((shs_opcode)op);

		if (nt_put(&p->ops, s, strlen(s), (uint32_t)op))
			return SHS_ENOMEM;
	}
	for (int t = 1; t < SHS_ELEM_COUNT; t++) {
		const char *s = shs_elem_name(t);

		/* tuples are written as (...); buffers have no text form here */
		if (s && t != SHS_TUPLE && t != SHS_BUFFER && nt_put(&p->elems, s, strlen(s), (uint32_t)t))
			return SHS_ENOMEM;
	}
	for (int a = 0; a < A_COUNT; a++)
		if (nt_put(&p->attrs, attr_names[a], strlen(attr_names[a]), (uint32_t)a))
			return SHS_ENOMEM;
	return SHS_OK;
}

static void free_scratch(parser *p)
{
	free(p->ops.slots);
	free(p->elems.slots);
	free(p->attrs.slots);
	free(p->comps.slots);
	free(p->instrs.slots);
	free(p->refs.data);
	free(p->spans.data);
	free(p->i64s.data);
	free(p->params.data);
}

/* Memory a load of len bytes may use. */
static size_t load_budget(size_t len)
{
	size_t floor = (size_t)SHS_LOAD_BUDGET_FLOOR_MB << MIB_SHIFT;

	if (len > (SIZE_MAX - floor) / SHS_LOAD_BUDGET_PER_BYTE)
		return SIZE_MAX;
	return floor + len * SHS_LOAD_BUDGET_PER_BYTE;
}

int shs_text_load(const char *text, size_t len, const char *origin, shs_module **out, shs_err *e)
{
	parser p;
	int rc;

	if (out)
		*out = NULL;
	if (!out || (!text && len))
		return shs_seterr(e, SHS_EINVAL, "shs_text_load: NULL argument");
	if (!origin)
		origin = "<text>";
	memset(&p, 0, sizeof(p));
	p.refs.size = sizeof(ref);
	p.spans.size = sizeof(span);
	p.i64s.size = sizeof(int64_t);
	p.params.size = sizeof(uint32_t);
	p.budget = load_budget(len);
	p.m = shs_module_new(p.budget);
	if (!p.m || fill_keywords(&p) != SHS_OK) {
		rc = shs_seterr(e, SHS_ENOMEM, "%s: out of memory", origin);
		goto out_free;
	}
	p.a = p.m->arena;
	shs__lex_init(&p.lx, text ? text : "", len, origin, &p.err);
	rc = parse_module(&p);
	if (rc == SHS_OK) {
		*out = p.m;
		p.m = NULL;
	} else if (e) {
		*e = p.err;
	}
out_free:
	shs_module_free(p.m);
	free_scratch(&p);
	return rc;
}
