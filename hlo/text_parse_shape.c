/* HLO text parser: plain values, shapes and layouts, program shapes and the module attributes. */
#include "raw_attrs.h"
#include "text_parse.h"

#include <stdio.h>
#include <string.h>

/* ---- Values: integers, integer lists, strings, words ----------------------------------------- */

int shs__parse_int(shs__parser *p, int64_t lo, int64_t hi, const char *what, int64_t *out)
{
	int rc = shs__lex_int_in(&p->lx, &p->lx.tok, lo, hi, what, out);

	if (rc == SHS_OK)
		shs__next(p);
	return rc;
}

int shs__parse_i64_scratch(shs__parser *p)
{
	int64_t v;
	int rc;

	p->i64s.n = 0;
	rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open a list of integers");
	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		if (p->i64s.n &&
		    (rc = shs__expect(p, SHS_TOK_COMMA, "',' or '}' in a list of integers")))
			break;
		rc = shs__parse_int(p, INT64_MIN, INT64_MAX, "a list element", &v);
		if (rc == SHS_OK)
			rc = shs__push_i64(p, v);
	}
	if (rc == SHS_OK)
		shs__next(p);
	return rc;
}

int shs__nested_done(shs__parser *p, int rc, size_t off, size_t used, size_t err_off)
{
	char msg[SHS_ERRMSG_MAX];

	if (rc == SHS_ENOMEM)
		return shs__oom(p);
	if (rc) {
		snprintf(msg, sizeof(msg), "%s", p->err.msg);
		return shs__lex_fail_plain(&p->lx, off + err_off, rc, "%s", msg);
	}
	shs__lex_seek(&p->lx, off + used);
	return SHS_OK;
}

int shs__parse_string(shs__parser *p, const char **out, size_t *out_len)
{
	const size_t off = p->lx.tok.off;
	size_t used = 0, n = 0, err_off = 0;
	char *s = NULL;
	int rc;

	if (!shs__at(p, SHS_TOK_STRING) || p->lx.src[off] != '"')
		return shs__fail(p, "expected a quoted string");
	rc = shs_text_parse_quoted(p->a, p->lx.src + off, p->lx.len - off, &used, &s, &n,
				   &err_off, &p->err);
	if ((rc = shs__nested_done(p, rc, off, used, err_off)))
		return rc;
	if (!out_len && memchr(s, 0, n)) /* kept as a C string: it would end there */
		return shs__fail(p, "a NUL byte (\\0) in this string, which this does not keep");
	*out = s;
	if (out_len)
		*out_len = n;
	return SHS_OK;
}

int shs__parse_word(shs__parser *p, const char *const *allowed, const char *what,
		    const char **out)
{
	const shs_tok t = p->lx.tok;

	if (t.kind != SHS_TOK_IDENT)
		return shs__fail(p, "expected %s", what);
	if (allowed) {
		const char *const *w = allowed;

		while (*w && !shs__tok_is_word(&p->lx, &t, *w))
			w++;
		if (!*w)
			return shs__fail(p, "unknown %s", what);
	}
	*out = shs_arena_strndup(p->a, p->lx.src + t.off, t.len);
	if (!*out)
		return shs__oom(p);
	shs__next(p);
	return SHS_OK;
}

/* ---- Shapes ---------------------------------------------------------------------------------- */

static int parse_tuple_shape(shs__parser *p, shs_shape *out, int depth)
{
	shs_shape *elems = NULL;
	uint32_t n = 0;
	int rc;

	if (depth >= SHS_MAX_NESTING)
		return shs__fail(p, "tuple shape nested deeper than %d", SHS_MAX_NESTING);
	shs__next(p);
	while (!shs__at(p, SHS_TOK_RPAREN)) {
		if (n && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or ')' in a tuple shape")))
			return rc;
		if ((rc = shs__grow_array(p, (void **)&elems, n, sizeof(*elems))))
			return rc;
		memset(&elems[n], 0, sizeof(elems[n]));
		if ((rc = shs__parse_shape(p, &elems[n], depth + 1)))
			return rc;
		n++;
	}
	shs__next(p);
	out->type = SHS_TUPLE;
	out->n_tuple = n;
	out->tuple = n ? elems : NULL;
	return SHS_OK;
}

/* One dimension: N, <=N (dynamic with bound N) or ? (unbounded dynamic, stored as INT64_MIN).
 * *elems is the running element count, checked against overflow with bytes per element. */
static int parse_dim(shs__parser *p, int bytes, int64_t *elems, int64_t *dim, bool *dynamic)
{
	int64_t v;
	int rc;

	*dynamic = false;
	if (shs__at(p, SHS_TOK_QUESTION)) {
		*dim = INT64_MIN;
		*dynamic = true;
		shs__next(p);
		return SHS_OK;
	}
	if (shs__at(p, SHS_TOK_LEQ)) {
		*dynamic = true;
		shs__next(p);
	}
	if (shs__at(p, SHS_TOK_INT) && p->lx.src[p->lx.tok.off] == '-')
		return shs__fail(p, "negative dimension");
	if ((rc = shs__lex_int_in(&p->lx, &p->lx.tok, 0, INT64_MAX, "a dimension", &v)))
		return rc;
	if (v && *elems > INT64_MAX / v / (bytes ? bytes : 1))
		return shs__fail(p, "shape has too many elements (more than 2^63 bytes)");
	*elems *= v;
	*dim = v;
	shs__next(p);
	return SHS_OK;
}

/* `(8,128)`: one tile; '*' is XLA's combined dimension (INT64_MIN). */
static int parse_tile(shs__parser *p, shs_i64s *tile)
{
	int64_t v;
	int rc;

	p->i64s.n = 0;
	shs__next(p);
	while (!shs__at(p, SHS_TOK_RPAREN)) {
		if (p->i64s.n && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or ')' in a tile")))
			return rc;
		if (shs__at(p, SHS_TOK_STAR)) {
			v = INT64_MIN;
			shs__next(p);
		} else if ((rc = shs__parse_int(p, 0, INT64_MAX, "a tile dimension", &v))) {
			return rc;
		}
		if (p->i64s.n == SHS_MAX_RANK)
			return shs__fail(p, "tile has more than %d dimensions", SHS_MAX_RANK);
		if ((rc = shs__push_i64(p, v)))
			return rc;
	}
	shs__next(p);
	return shs__take_i64s(p, tile);
}

/* `E(n)` / `S(n)`: one integer in parentheses. */
static int parse_paren_int(shs__parser *p, const char *what, int64_t *out)
{
	int rc;

	shs__next(p);
	rc = shs__expect(p, SHS_TOK_LPAREN, "'(' after the layout attribute");
	if (rc == SHS_OK)
		rc = shs__parse_int(p, 0, INT64_MAX, what, out);
	if (rc == SHS_OK)
		rc = shs__expect(p, SHS_TOK_RPAREN, "')' after the layout attribute");
	return rc;
}

/* What follows ':' in a layout: T(..)(..) tiles, E(bits), S(memory space). */
static int parse_layout_attrs(shs__parser *p, shs_layout *l)
{
	int rc = SHS_OK;

	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		if (shs__at_word(p, "T")) {
			shs__next(p);
			if (!shs__at(p, SHS_TOK_LPAREN))
				return shs__fail(p, "expected '(' after T in a layout");
			while (rc == SHS_OK && shs__at(p, SHS_TOK_LPAREN)) {
				rc = shs__grow_array(p, (void **)&l->tiles, l->n_tiles,
						     sizeof(*l->tiles));
				if (rc == SHS_OK)
					rc = parse_tile(p, &l->tiles[l->n_tiles]);
				if (rc == SHS_OK)
					l->n_tiles++;
			}
		} else if (shs__at_word(p, "E")) {
			rc = parse_paren_int(p, "element size in bits", &l->element_size_in_bits);
		} else if (shs__at_word(p, "S")) {
			rc = parse_paren_int(p, "memory space", &l->memory_space);
		} else {
			return shs__unsupported(p, "layout attribute not supported "
						"(only T, E and S are)");
		}
	}
	return rc;
}

/* `{1,0}` or `{1,0:T(8,128)}` after an array shape of s->rank dims. */
static int parse_layout(shs__parser *p, shs_shape *s)
{
	const shs_tok open = p->lx.tok;
	shs_layout *l = shs_arena_calloc(p->a, 1, sizeof(*l));
	uint64_t used = 0;
	int rc;

	if (!l)
		return shs__oom(p);
	shs__next(p);
	p->i64s.n = 0;
	while (shs__at(p, SHS_TOK_INT)) {
		int64_t d;

		if ((rc = shs__parse_int(p, 0, SHS_MAX_RANK - 1, "a layout dimension", &d)))
			return rc;
		if (d >= (int64_t)s->rank || (used >> d & 1))
			return shs__fail_at(p, open.off,
					    "layout is not a permutation of the %u dimensions",
					    s->rank);
		used |= (uint64_t)1 << d;
		if ((rc = shs__push_i64(p, d)))
			return rc;
		if (!shs__at(p, SHS_TOK_COMMA))
			break;
		shs__next(p);
	}
	if (p->i64s.n != s->rank)
		return shs__fail_at(p, open.off, "layout has %zu dimensions, the shape %u",
				    p->i64s.n, s->rank);
	if ((rc = shs__take_i64s(p, &l->minor_to_major)))
		return rc;
	if (shs__at(p, SHS_TOK_COLON)) {
		shs__next(p);
		if ((rc = parse_layout_attrs(p, l)))
			return rc;
	}
	if ((rc = shs__expect(p, SHS_TOK_RBRACE, "'}' to close the layout")))
		return rc;
	s->layout = l;
	return SHS_OK;
}

/* True when the current '{' opens a layout rather than a computation body. */
static bool at_layout(const shs__parser *p)
{
	shs_tok t;

	if (!shs__at(p, SHS_TOK_LBRACE))
		return false;
	t = shs__lex_peek(&p->lx);
	return t.kind == SHS_TOK_INT || t.kind == SHS_TOK_RBRACE || t.kind == SHS_TOK_COLON;
}

static int parse_array_shape(shs__parser *p, shs_shape *out)
{
	const shs_tok t = p->lx.tok;
	int64_t dims[SHS_MAX_RANK], elems = 1;
	bool dyn[SHS_MAX_RANK], any_dyn = false;
	uint32_t rank = 0, type;
	int rc;

	if (t.kind != SHS_TOK_IDENT)
		return shs__fail(p, "expected a shape");
	if (!shs__names_find(&p->elems, p->lx.src + t.off, t.len, &type))
		return shs__fail(p, "expected a shape: unknown element type");
	shs__next(p);
	if ((rc = shs__expect(p, SHS_TOK_LBRACKET, "'[' after the element type")))
		return rc;
	while (!shs__at(p, SHS_TOK_RBRACKET)) {
		if (rank && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or ']' in the dimensions")))
			return rc;
		if (rank == SHS_MAX_RANK)
			return shs__fail(p, "shape has more than %d dimensions", SHS_MAX_RANK);
		rc = parse_dim(p, shs_elem_bytes((int)type), &elems, &dims[rank], &dyn[rank]);
		if (rc)
			return rc;
		any_dyn |= dyn[rank];
		rank++;
	}
	shs__next(p);
	if (rank && !shs_elem_is_array((int)type))
		return shs__fail_at(p, t.off, "a %s shape has no dimensions",
				    shs_elem_name((int)type));
	out->type = (int32_t)type;
	out->rank = rank;
	if (rank && !(out->dims = shs_arena_memdup(p->a, dims, rank * sizeof(*dims))))
		return shs__oom(p);
	if (any_dyn && !(out->dynamic = shs_arena_memdup(p->a, dyn, rank * sizeof(*dyn))))
		return shs__oom(p);
	return at_layout(p) ? parse_layout(p, out) : SHS_OK;
}

int shs__parse_shape(shs__parser *p, shs_shape *out, int depth)
{
	if (shs__at(p, SHS_TOK_LPAREN))
		return parse_tuple_shape(p, out, depth);
	return parse_array_shape(p, out);
}

bool shs__at_shape(const shs__parser *p)
{
	uint32_t type;
	shs_tok t;

	if (shs__at(p, SHS_TOK_LPAREN))
		return true;
	if (!shs__at(p, SHS_TOK_IDENT) ||
	    !shs__names_find(&p->elems, p->lx.src + p->lx.tok.off, p->lx.tok.len, &type))
		return false;
	t = shs__lex_peek(&p->lx);
	return t.kind == SHS_TOK_LBRACKET;
}

int shs__parse_program_shape(shs__parser *p, bool named, shs_program_shape *ps, size_t **offs)
{
	uint32_t n = 0;
	int rc = shs__expect(p, SHS_TOK_LPAREN, "'(' to open the parameter shapes");

	*offs = NULL;
	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RPAREN)) {
		if (n && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or ')' in the parameter list")))
			break;
		if ((rc = shs__grow_array(p, (void **)&ps->params, n, sizeof(*ps->params))) ||
		    (rc = shs__grow_array(p, (void **)offs, n, sizeof(**offs))))
			break;
		if (named && (rc = shs__grow_array(p, (void **)&ps->param_names, n,
						   sizeof(*ps->param_names))))
			break;
		if (named) {
			if (!shs__is_name(&p->lx.tok))
				return shs__fail(p, "expected a parameter name");
			if (!(ps->param_names[n] = shs__dup_name(p, &p->lx.tok)))
				return shs__oom(p);
			shs__next(p);
			if ((rc = shs__expect(p, SHS_TOK_COLON, "':' after the parameter name")))
				break;
		}
		(*offs)[n] = p->lx.tok.off;
		memset(&ps->params[n], 0, sizeof(ps->params[n]));
		if ((rc = shs__parse_shape(p, &ps->params[n], 0)))
			break;
		n++;
	}
	if (rc)
		return rc;
	shs__next(p);
	ps->n_params = n;
	if ((rc = shs__expect(p, SHS_TOK_ARROW, "'->' before the result shape")))
		return rc;
	if ((rc = shs__grow_array(p, (void **)offs, n, sizeof(**offs))))
		return rc;
	(*offs)[n] = p->lx.tok.off;
	return shs__parse_shape(p, &ps->result, 0);
}

/* ---- Module attributes ----------------------------------------------------------------------- */

enum header_attr { HDR_LAYOUT, HDR_ALIAS, HDR_PARTITIONS, HDR_REPLICAS, HDR_FRONTEND };
enum alias_kind { ALIAS_MAY = 1, ALIAS_MUST = 2 }; /* HloInputOutputAliasProto kinds */

/* `{0,1}` as a shape index. */
static int parse_shape_index(shs__parser *p, shs_i64s *out)
{
	int rc = shs__parse_i64_scratch(p);

	for (size_t i = 0; rc == SHS_OK && i < p->i64s.n; i++)
		if (((int64_t *)p->i64s.data)[i] < 0)
			return shs__fail(p, "negative tuple index in input_output_alias");
	return rc ? rc : shs__take_i64s(p, out);
}

/* One `{out}: (param, {index}, may-alias)`. */
static int parse_alias(shs__parser *p, shs_alias *al)
{
	static const char *const kinds[] = { "may-alias", "must-alias", NULL };
	const char *kind = NULL;
	int rc = parse_shape_index(p, &al->output_index);

	if (rc == SHS_OK)
		rc = shs__expect(p, SHS_TOK_COLON, "':' after the output index");
	if (rc == SHS_OK)
		rc = shs__expect(p, SHS_TOK_LPAREN, "'(' before the aliased parameter");
	if (rc == SHS_OK)
		rc = shs__parse_int(p, 0, INT64_MAX, "the parameter number", &al->param_number);
	if (rc == SHS_OK)
		rc = shs__expect(p, SHS_TOK_COMMA, "',' after the parameter number");
	if (rc == SHS_OK)
		rc = parse_shape_index(p, &al->param_index);
	al->kind = ALIAS_MAY; /* XLA's default when the kind is left out */
	if (rc == SHS_OK && shs__at(p, SHS_TOK_COMMA)) {
		shs__next(p);
		rc = shs__parse_word(p, kinds, "alias kind (may-alias or must-alias)", &kind);
		if (rc == SHS_OK)
			al->kind = strcmp(kind, "may-alias") ? ALIAS_MUST : ALIAS_MAY;
	}
	if (rc == SHS_OK)
		rc = shs__expect(p, SHS_TOK_RPAREN, "')' after the alias");
	return rc;
}

static int parse_aliases(shs__parser *p)
{
	shs_module *m = p->m;
	int rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open input_output_alias");

	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		if (m->n_aliases &&
		    (rc = shs__expect(p, SHS_TOK_COMMA, "',' or '}' between aliases")))
			return rc;
		rc = shs__grow_array(p, (void **)&m->aliases, m->n_aliases, sizeof(*m->aliases));
		if (rc)
			return rc;
		memset(&m->aliases[m->n_aliases], 0, sizeof(*m->aliases));
		rc = parse_alias(p, &m->aliases[m->n_aliases]);
		if (rc == SHS_OK)
			m->n_aliases++;
	}
	if (rc == SHS_OK)
		shs__next(p);
	return rc;
}

static int parse_entry_layout(shs__parser *p)
{
	int rc;

	p->layout_off = p->lx.tok.off;
	p->m->entry_layout = shs_arena_calloc(p->a, 1, sizeof(*p->m->entry_layout));
	if (!p->m->entry_layout)
		return shs__oom(p);
	rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open entry_computation_layout");
	if (rc == SHS_OK)
		rc = shs__parse_program_shape(p, false, p->m->entry_layout, &p->layout_offs);
	if (rc == SHS_OK)
		rc = shs__expect(p, SHS_TOK_RBRACE, "'}' to close entry_computation_layout");
	p->have_layout = rc == SHS_OK;
	/* the older printer joins the parameters with "," alone: note it for printing back */
	for (uint32_t k = 1; rc == SHS_OK && k < p->m->entry_layout->n_params; k++)
		if (p->lx.src[p->layout_offs[k] - 1] == ',')
			p->m->style.compact_entry_layout = true;
	return rc;
}

static int header_kind(const shs__parser *p, const shs_tok *t)
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

/* A header attribute the IR keeps as text: is_scheduled and buffer_donor checked and kept as XLA
 * prints them (is_scheduled=false, which XLA never prints, dropped). */
static int parse_raw_header_attr(shs__parser *p)
{
	shs_module *m = p->m;
	int rc = shs__parse_raw_checked(p, "module attribute", &m->n_raw_attrs, &m->raw_attrs,
					shs__header_canonical);

	if (rc == SHS_OK && !strcmp(m->raw_attrs[m->n_raw_attrs - 1].name, "is_scheduled") &&
	    !strcmp(m->raw_attrs[m->n_raw_attrs - 1].value, "false"))
		m->n_raw_attrs--;
	return rc;
}

int shs__parse_module_attr(shs__parser *p)
{
	shs_module *m = p->m;
	int kind, rc;

	if (!shs__at(p, SHS_TOK_IDENT))
		return shs__fail(p, "expected a module attribute name");
	kind = header_kind(p, &p->lx.tok);
	if (kind < 0)
		return parse_raw_header_attr(p);
	if (p->header_seen >> kind & 1)
		return shs__fail(p, "module attribute given twice");
	shs__next(p);
	if ((rc = shs__expect(p, SHS_TOK_EQ, "'=' after the module attribute name")))
		return rc;
	p->header_seen |= (uint64_t)1 << kind;
	switch (kind) {
	case HDR_LAYOUT: return parse_entry_layout(p);
	case HDR_ALIAS: return parse_aliases(p);
	case HDR_PARTITIONS:
		return shs__parse_int(p, 1, INT64_MAX, "num_partitions", &m->num_partitions);
	case HDR_REPLICAS:
		return shs__parse_int(p, 1, INT64_MAX, "replica_count", &m->replica_count);
	default: /* HDR_FRONTEND */
		return shs__parse_frontend_attrs(p, &m->n_frontend_attrs, &m->frontend_attrs);
	}
}

/* ---- Program shapes against computations ----------------------------------------------------- */

int shs__check_program_shape(shs__parser *p, const shs_computation *c,
			     const shs_program_shape *ps, const size_t *offs, size_t base,
			     const char *what)
{
	const uint32_t *params = p->params.data;

	if (ps->n_params != p->params.n)
		return shs__fail_at(p, base, "%s has %u parameters, computation '%s' has %zu",
				    what, ps->n_params, c->name, p->params.n);
	for (uint32_t k = 0; k < ps->n_params; k++)
		if (!shs_shape_compatible(&ps->params[k], &c->instrs[params[k]]->shape))
			return shs__fail_at(p, offs ? offs[k] : base,
					    "%s parameter %u differs from the shape of '%s'",
					    what, k, c->instrs[params[k]]->name);
	if (!shs_shape_compatible(&ps->result, &c->instrs[c->root]->shape))
		return shs__fail_at(p, offs ? offs[ps->n_params] : base,
				    "%s result differs from the shape of the root '%s'", what,
				    c->instrs[c->root]->name);
	return SHS_OK;
}

int shs__finish_entry_layout(shs__parser *p)
{
	shs_module *m = p->m;
	const shs_computation *c = m->comps[m->entry];
	const uint32_t *params;
	shs_program_shape *ps;
	uint32_t n;
	int rc = shs__collect_params(p, c, &n);

	if (rc)
		return rc;
	if (p->have_layout)
		return shs__check_program_shape(p, c, m->entry_layout, p->layout_offs,
						p->layout_off, "entry_computation_layout");
	if (!(ps = m->entry_layout = shs_arena_calloc(p->a, 1, sizeof(*ps))))
		return shs__oom(p);
	if (n && !(ps->params = shs_arena_calloc(p->a, n, sizeof(*ps->params))))
		return shs__oom(p);
	params = p->params.data;
	for (uint32_t k = 0; k < n; k++)
		if (shs_shape_copy(p->a, &ps->params[k], &c->instrs[params[k]]->shape) != SHS_OK)
			return shs__oom(p);
	ps->n_params = n;
	if (shs_shape_copy(p->a, &ps->result, &c->instrs[c->root]->shape) != SHS_OK)
		return shs__oom(p);
	return SHS_OK;
}
