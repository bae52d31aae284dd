/* Private to the HLO text parser: the state its pieces share and what each offers the others. */
#ifndef SHS_TEXT_PARSE_H
#define SHS_TEXT_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ir.h"
#include "status.h"
#include "text_lexer.h"

#define SHS__NO_INDEX UINT32_MAX /* no instruction, computation or parameter */

/* ---- Scratch (text_parse.c): malloc'ed, freed after the parse -------------------------------- */

/* A growable array of elements of size bytes. */
typedef struct shs__vec {
	void *data;
	size_t n, cap, size;
} shs__vec;

/* Names (borrowed from the input) to values, by open addressing over (name, length); slots of
 * another generation are empty, so a reset costs nothing. */
typedef struct shs__name_slot {
	const char *s;
	uint32_t len, hash, gen, val;
} shs__name_slot;

typedef struct shs__names {
	shs__name_slot *slots;
	uint32_t cap, count, gen;
} shs__names;

/* Doubles the room of v; false when out of memory. v->data: caller frees with free(). */
bool shs__vec_grow(shs__vec *v);

/* A new zeroed slot at the end of v, or NULL when out of memory. The slot: borrowed, valid until
 * the next push (growing moves v->data). */
static inline void *shs__vec_push(shs__vec *v)
{
	void *slot;

	if (v->n == v->cap && !shs__vec_grow(v))
		return NULL;
	slot = (char *)v->data + v->n++ * v->size;
	memset(slot, 0, v->size);
	return slot;
}

/* True, with the value in *val, when s[0..n) is in t. t and s: borrowed, valid until this returns.
 * */
bool shs__names_find(const shs__names *t, const char *s, size_t n, uint32_t *val);

/* Adds s[0..n), which is not in t yet. Returns SHS_OK or SHS_ENOMEM. s: borrowed, valid until
 * t's last use; t->slots: caller frees with free(). */
int shs__names_put(shs__names *t, const char *s, size_t n, uint32_t val);

/* ---- Parser state ---------------------------------------------------------------------------- */

/* The state of one shs_text_load. m and everything hung on it is allocated in a, m's arena. */
typedef struct shs__parser {
	shs_lexer lx;
	shs_err err;
	shs_module *m;
	shs_arena *a;
	size_t budget;
	shs__names ops, elems, attrs;  /* keywords */
	shs__names comps;              /* computation names -> index into m->comps */
	shs__names instrs;             /* instruction names of the computation being read */
	shs__vec refs, spans, i64s, params;
	int64_t next_comp_id, next_instr_id;
	bool have_entry;
	uint32_t entry;
	size_t layout_off;
	size_t *layout_offs; /* where each parameter and the result of the header's layout are */
	bool have_layout;
	uint64_t header_seen;
} shs__parser;

/* ---- Tokens ---------------------------------------------------------------------------------- */

/* The token tests and moves of p's lexer. p, word and what: borrowed, valid until this returns. */
static inline bool shs__at(const shs__parser *p, shs_tok_kind kind)
{
	return p->lx.tok.kind == kind;
}

static inline bool shs__at_word(const shs__parser *p, const char *word)
{
	return shs__tok_is_word(&p->lx, &p->lx.tok, word);
}

static inline void shs__next(shs__parser *p)
{
	shs__lex_next(&p->lx);
}

static inline int shs__expect(shs__parser *p, shs_tok_kind kind, const char *what)
{
	return shs__lex_expect(&p->lx, kind, what);
}

/* True for a name token. t: borrowed, valid until this returns. */
static inline bool shs__is_name(const shs_tok *t)
{
	return t->kind == SHS_TOK_IDENT || t->kind == SHS_TOK_PNAME;
}

/* The name of t without a leading '%'. The result: borrowed, valid until the input text is freed.
 * */
static inline const char *shs__name_ptr(const shs__parser *p, const shs_tok *t, size_t *len)
{
	size_t skip = t->kind == SHS_TOK_PNAME;

	*len = t->len - skip;
	return p->lx.src + t->off + skip;
}

/* ---- Errors and arena helpers (text_parse.c) ------------------------------------------------- */

/* Each sets p->err and returns the code: SHS_EPARSE at the current token, or at the token
 * starting at off. p and fmt: borrowed, valid until this returns. */
int shs__fail(shs__parser *p, const char *fmt, ...) SHS_PRINTF(2, 3);
int shs__fail_at(shs__parser *p, size_t off, const char *fmt, ...) SHS_PRINTF(3, 4);

/* SHS_EUNSUPPORTED at the current token, quoted even when the lexer rejected it. p and fmt:
 * borrowed, valid until this returns. */
int shs__unsupported(shs__parser *p, const char *fmt, ...) SHS_PRINTF(2, 3);

/* SHS_ENOMEM, naming the load budget. p: borrowed, valid until this returns. */
int shs__oom(shs__parser *p);

/* A copy of t's name (without '%'), or NULL when out of memory. The result: copied; caller frees
 * with shs_module_free(p->m). */
char *shs__dup_name(shs__parser *p, const shs_tok *t);

/* Makes room in *arr, an arena array of n elements of size bytes, for element n. *arr: caller
 * frees with shs_module_free(p->m). */
int shs__grow_array(shs__parser *p, void **arr, uint32_t n, size_t size);

/* Appends v to the p->i64s scratch. p: borrowed, valid until this returns. */
static inline int shs__push_i64(shs__parser *p, int64_t v)
{
	int64_t *slot = shs__vec_push(&p->i64s);

	if (!slot)
		return shs__oom(p);
	*slot = v;
	return SHS_OK;
}

/* Copies the p->i64s scratch into out (v NULL when it is empty). out->v: copied; caller frees
 * with shs_module_free(p->m). */
int shs__take_i64s(shs__parser *p, shs_i64s *out);

/* ---- References (text_parse.c) --------------------------------------------------------------- */

/* A reference to a computation defined earlier in the file: *idx indexes m->comps. p: borrowed,
 * valid until this returns. */
int shs__parse_comp_ref(shs__parser *p, uint32_t *idx);

/* A computation name, or `{a, b}`: *out holds *n indices into m->comps. *out: caller frees with
 * shs_module_free(p->m). */
int shs__parse_comp_list(shs__parser *p, uint32_t *n, uint32_t **out);

/* `{a, b}` after control-predecessors= of instruction index, resolved when the computation
 * ends. ins: borrowed, valid until the computation ends; its control list: caller frees with
 * shs_module_free(p->m). */
int shs__parse_control(shs__parser *p, shs_instr *ins, uint32_t index);

/* Fills p->params[number] with the index of each parameter instruction of c; the numbers must
 * be 0..n-1, each once. *n_params is n. p and c: borrowed, valid until this returns. */
int shs__collect_params(shs__parser *p, const shs_computation *c, uint32_t *n_params);

/* ---- Values (text_parse_shape.c) ------------------------------------------------------------- */

/* An integer token in [lo, hi]; what names it in messages. p and what: borrowed, valid until this
 * returns. */
int shs__parse_int(shs__parser *p, int64_t lo, int64_t hi, const char *what, int64_t *out);

/* `{1, 2, 3}` into the p->i64s scratch. p: borrowed, valid until this returns. */
int shs__parse_i64_scratch(shs__parser *p);

/* Ends a nested parse (quoted string, metadata, sharding) that began at off: reports its error
 * rc (message in p->err) at off + err_off, or moves past the used bytes. p: borrowed, valid until
 * this returns. */
int shs__nested_done(shs__parser *p, int rc, size_t off, size_t used, size_t err_off);

/* A double-quoted string, unescaped; *out_len (unless NULL) is its length. *out: copied; caller
 * frees with shs_module_free(p->m). */
int shs__parse_string(shs__parser *p, const char **out, size_t *out_len);

/* An identifier, one of allowed (NULL-terminated; NULL allows any). *out: copied; caller frees
 * with shs_module_free(p->m). allowed and what: borrowed, valid until this returns. */
int shs__parse_word(shs__parser *p, const char *const *allowed, const char *what,
		    const char **out);

/* ---- Shapes (text_parse_shape.c) ------------------------------------------------------------- */

/* A shape into out (zeroed by the caller); depth counts the enclosing tuples. What out points
 * to: caller frees with shs_module_free(p->m). */
int shs__parse_shape(shs__parser *p, shs_shape *out, int depth);

/* True when the current token starts a shape (before an operand name). p: borrowed, valid until
 * this returns. */
bool shs__at_shape(const shs__parser *p);

/* `(shape, ...) -> shape` (named: `(name: shape, ...) -> shape`) into ps; *offs holds the offsets
 * of the parts (n_params + 1 entries, the result last). *offs and what ps points to: caller frees
 * with shs_module_free(p->m). */
int shs__parse_program_shape(shs__parser *p, bool named, shs_program_shape *ps, size_t **offs);

/* Checks a program shape (signature or entry layout) against c's parameters (in p->params, from
 * shs__collect_params) and root; offs locate each parameter and the result (NULL: report at
 * base); what names the program shape in messages. p, c, ps, offs and what: borrowed, valid until
 * this returns. */
int shs__check_program_shape(shs__parser *p, const shs_computation *c,
			     const shs_program_shape *ps, const size_t *offs, size_t base,
			     const char *what);

/* One `name=value` module attribute after the module name. What it hangs on p->m: caller frees
 * with shs_module_free(p->m). */
int shs__parse_module_attr(shs__parser *p);

/* Checks the header's entry layout against the entry computation, or derives it from the
 * entry's parameters and root when the header has none. The derived layout: caller frees with
 * shs_module_free(p->m). */
int shs__finish_entry_layout(shs__parser *p);

/* ---- Attributes (text_parse_attr.c) ---------------------------------------------------------- */

/* `{key="value", key={json}, ...}`. *out and its strings: copied; caller frees with
 * shs_module_free(p->m). */
int shs__parse_frontend_attrs(shs__parser *p, uint32_t *n, shs_attr_kv **out);

/* `name=value` for a name the IR does not model (the current token), kept verbatim in *arr of
 * *n entries; what names such attributes in messages ("attribute", "module attribute"). *arr:
 * copied; caller frees with shs_module_free(p->m). what: borrowed, valid until this returns. */
int shs__parse_raw_attr(shs__parser *p, const char *what, uint32_t *n, shs_raw_attr **arr);

/* Checks a text value (name, value) and sets *canonical to the text XLA prints for it (the value
 * itself when already so, else a copy in a); SHS_OK, SHS_EPARSE with the reason in why (cap
 * bytes), or SHS_ENOMEM. raw_attrs.h's shs__instr_canonical and shs__header_canonical. */
typedef int (*shs__canonical_fn)(shs_arena *a, const char *name, const char *value,
				 const char **canonical, char *why, size_t cap);

/* shs__parse_raw_attr, then the value checked and replaced by its canonical text; a bad value
 * fails at the value's place, naming the attribute. */
int shs__parse_raw_checked(shs__parser *p, const char *what, uint32_t *n, shs_raw_attr **arr,
			   shs__canonical_fn canonical);

/* The `, name=value` list after instruction index's operands, into ins. ins: borrowed, valid
 * until the computation ends; what it hangs on ins: caller frees with shs_module_free(p->m). */
int shs__parse_instr_attrs(shs__parser *p, shs_instr *ins, uint32_t index);

/* Fills p->attrs with the names of the attributes the IR models. p->attrs.slots: caller frees
 * with free(). */
int shs__attr_keywords(shs__parser *p);

#endif
