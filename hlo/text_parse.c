/* HLO text parser: the driver, from the module header through computations and instructions. */
#include "io.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "text_literal.h"
#include "text_parse.h"

enum {
	MIB_SHIFT = 20,
	NAME_TABLE_MIN = 64,
	VEC_MIN = 16,
	ARRAY_MIN = 4
};

static const uint32_t FNV_OFFSET = 2166136261u, FNV_PRIME = 16777619u;

/* ---- Scratch: growable arrays and name tables ------------------------------------------------ */

bool shs__vec_grow(shs__vec *v)
{
	size_t cap = v->cap ? v->cap * 2 : VEC_MIN;
	void *d;

	if (cap > SIZE_MAX / 2 / v->size)
		return false;
	d = realloc(v->data, cap * v->size);
	if (!d)
		return false;
	v->data = d;
	v->cap = cap;
	return true;
}

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
static shs__name_slot *nt_slot(const shs__names *t, const char *s, size_t n, uint32_t h)
{
	uint32_t mask = t->cap - 1;

	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		shs__name_slot *e = &t->slots[i];

		if (e->gen != t->gen)
			return e;
		if (e->hash == h && e->len == n && !memcmp(e->s, s, n))
			return e;
	}
}

bool shs__names_find(const shs__names *t, const char *s, size_t n, uint32_t *val)
{
	const shs__name_slot *e;

	if (!t->cap)
		return false;
	e = nt_slot(t, s, n, hash_name(s, n));
	if (e->gen != t->gen)
		return false;
	*val = e->val;
	return true;
}

static int nt_grow(shs__names *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : NAME_TABLE_MIN;
	shs__name_slot *old = t->slots, *slots;
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
			shs__name_slot *e = nt_slot(t, old[i].s, old[i].len, old[i].hash);

			*e = old[i];
			e->gen = 1;
		}
	}
	free(old);
	return SHS_OK;
}

int shs__names_put(shs__names *t, const char *s, size_t n, uint32_t val)
{
	uint32_t h = hash_name(s, n);
	shs__name_slot *e;

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

static void nt_reset(shs__names *t)
{
	t->count = 0;
	if (++t->gen == 0) {
		if (t->cap)
			memset(t->slots, 0, t->cap * sizeof(*t->slots));
		t->gen = 1;
	}
}

/* ---- Errors and arena helpers ---------------------------------------------------------------- */

static int vfail_at(shs__parser *p, size_t off, int code, const char *fmt, va_list ap)
	SHS_PRINTF(4, 0);

/* An error at the token starting at off. For SHS_EPARSE a token the lexer rejected gives the
 * lexer's reason; other codes keep the message and quote the token. */
static int vfail_at(shs__parser *p, size_t off, int code, const char *fmt, va_list ap)
{
	shs_tok t = shs__lex_at(&p->lx, off);

	if (t.kind == SHS_TOK_ERROR && code != SHS_EPARSE)
		t.kind = SHS_TOK_IDENT;
	return shs__lex_vfail(&p->lx, &t, code, fmt, ap);
}

int shs__fail(shs__parser *p, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = shs__lex_vfail(&p->lx, &p->lx.tok, SHS_EPARSE, fmt, ap);
	va_end(ap);
	return rc;
}

int shs__fail_at(shs__parser *p, size_t off, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail_at(p, off, SHS_EPARSE, fmt, ap);
	va_end(ap);
	return rc;
}

int shs__unsupported(shs__parser *p, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vfail_at(p, p->lx.tok.off, SHS_EUNSUPPORTED, fmt, ap);
	va_end(ap);
	return rc;
}

int shs__oom(shs__parser *p)
{
	return shs__lex_fail_plain(&p->lx, p->lx.tok.off, SHS_ENOMEM,
				   "out of memory (the load budget is %zu MiB)",
				   p->budget >> MIB_SHIFT);
}

char *shs__dup_name(shs__parser *p, const shs_tok *t)
{
	size_t n;
	const char *s = shs__name_ptr(p, t, &n);

	return shs_arena_strndup(p->a, s, n);
}

int shs__take_i64s(shs__parser *p, shs_i64s *out)
{
	out->n = (uint32_t)p->i64s.n;
	out->v = NULL;
	if (!p->i64s.n)
		return SHS_OK;
	out->v = shs_arena_memdup(p->a, p->i64s.data, p->i64s.n * sizeof(int64_t));
	return out->v ? SHS_OK : shs__oom(p);
}

/* Grows the array when n is 0 or a power of two >= ARRAY_MIN, doubling its room. */
int shs__grow_array(shs__parser *p, void **arr, uint32_t n, size_t size)
{
	void *fresh;
	uint32_t cap;

	if (n >= ARRAY_MIN && (n & (n - 1)) != 0)
		return SHS_OK;
	if (n > 0 && n < ARRAY_MIN)
		return SHS_OK;
	if (n > UINT32_MAX / 2)
		return shs__oom(p);
	cap = n ? n * 2 : ARRAY_MIN;
	fresh = shs_arena_alloc(p->a, (size_t)cap * size);
	if (!fresh)
		return shs__oom(p);
	if (n)
		memcpy(fresh, *arr, (size_t)n * size);
	*arr = fresh;
	return SHS_OK;
}

/* ---- Module header --------------------------------------------------------------------------- */

static int parse_header(shs__parser *p)
{
	int rc;

	if (!shs__at_word(p, "HloModule"))
		return shs__fail(p, "expected 'HloModule' at the start of the module");
	shs__next(p);
	if (!shs__is_name(&p->lx.tok))
		return shs__fail(p, "expected the module name");
	if (!(p->m->name = shs__dup_name(p, &p->lx.tok)))
		return shs__oom(p);
	shs__next(p);
	while (shs__at(p, SHS_TOK_COMMA)) {
		shs__next(p);
		if ((rc = shs__parse_module_attr(p)))
			return rc;
	}
	return SHS_OK;
}

/* ---- References: operands, control predecessors, called computations ------------------------- */

/* An operand or control predecessor named before it can be resolved. */
typedef struct ref {
	size_t tok_off;          /* the name token, '%' included */
	size_t off;              /* the name without '%' */
	uint32_t len;
	uint32_t instr;          /* index of the user in the computation */
	uint32_t slot;           /* operand or control position */
	bool control;
	const shs_shape *shape;  /* the shape written before the operand, or NULL */
	size_t shape_off;
} ref;

/* Where an instruction's name and shape are in the text. */
typedef struct span {
	size_t name_off, shape_off, shape_len;
} span;

/* Notes that operand (control: control predecessor) slot of instruction instr names the
 * instruction of token t, to resolve when the computation ends; shape is the shape written
 * before the operand (NULL: none), at shape_off. */
static int push_ref(shs__parser *p, const shs_tok *t, uint32_t instr, uint32_t slot,
		    bool control, const shs_shape *shape, size_t shape_off)
{
	ref *r = shs__vec_push(&p->refs);
	size_t n;

	if (!r)
		return shs__oom(p);
	r->tok_off = t->off;
	r->off = (size_t)(shs__name_ptr(p, t, &n) - p->lx.src);
	r->len = (uint32_t)n;
	r->instr = instr;
	r->slot = slot;
	r->control = control;
	r->shape = shape;
	r->shape_off = shape_off;
	return SHS_OK;
}

/* *out is n zeroed slots (one at least, so that it is never NULL) for references. */
static int ref_slots(shs__parser *p, uint32_t n, uint32_t **out)
{
	*out = shs_arena_calloc(p->a, n ? n : 1, sizeof(**out));
	return *out ? SHS_OK : shs__oom(p);
}

/* A reference to a computation defined earlier in the file. */
int shs__parse_comp_ref(shs__parser *p, uint32_t *idx)
{
	const shs_tok t = p->lx.tok;
	const char *s;
	size_t n;

	if (!shs__is_name(&t))
		return shs__fail(p, "expected a computation name");
	s = shs__name_ptr(p, &t, &n);
	if (!shs__names_find(&p->comps, s, n, idx))
		return shs__fail(p, "unknown computation (a computation must be defined before it "
				 "is called)");
	shs__next(p);
	return SHS_OK;
}

int shs__parse_comp_list(shs__parser *p, uint32_t *n, uint32_t **out)
{
	bool braced = shs__at(p, SHS_TOK_LBRACE);
	uint32_t idx;
	int rc = SHS_OK;

	p->i64s.n = 0;
	if (braced)
		shs__next(p);
	while (rc == SHS_OK && (braced ? !shs__at(p, SHS_TOK_RBRACE) : p->i64s.n == 0)) {
		if (p->i64s.n &&
		    (rc = shs__expect(p, SHS_TOK_COMMA, "',' or '}' between computations")))
			return rc;
		rc = shs__parse_comp_ref(p, &idx);
		if (rc == SHS_OK)
			rc = shs__push_i64(p, idx);
	}
	if (rc)
		return rc;
	if (braced)
		shs__next(p);
	*n = (uint32_t)p->i64s.n;
	*out = shs_arena_alloc(p->a, (*n ? *n : 1) * sizeof(**out));
	if (!*out)
		return shs__oom(p);
	for (uint32_t i = 0; i < *n; i++)
		(*out)[i] = (uint32_t)((int64_t *)p->i64s.data)[i];
	return SHS_OK;
}

int shs__parse_control(shs__parser *p, shs_instr *ins, uint32_t index)
{
	int rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open control-predecessors");
	uint32_t n = 0;

	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		if (n && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or '}' in control-predecessors")))
			return rc;
		if (!shs__is_name(&p->lx.tok))
			return shs__fail(p, "expected an instruction name");
		rc = push_ref(p, &p->lx.tok, index, n++, true, NULL, 0);
		shs__next(p);
	}
	if (rc)
		return rc;
	shs__next(p);
	ins->n_control = n;
	return ref_slots(p, n, &ins->control);
}

/* ---- Instructions ---------------------------------------------------------------------------- */

/* `(shape? name, ...)` into pending references. */
static int parse_operand_list(shs__parser *p, shs_instr *ins, uint32_t index)
{
	uint32_t n = 0;
	int rc;

	while (!shs__at(p, SHS_TOK_RPAREN)) {
		shs_shape *shape = NULL;
		size_t shape_off = 0;

		if (n && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or ')' between operands")))
			return rc;
		if (n == SHS_MAX_OPERANDS)
			return shs__fail(p, "more than %d operands", SHS_MAX_OPERANDS);
		if (shs__at_shape(p)) {
			shape_off = p->lx.tok.off;
			if (!(shape = shs_arena_calloc(p->a, 1, sizeof(*shape))))
				return shs__oom(p);
			if ((rc = shs__parse_shape(p, shape, 0)))
				return rc;
			p->m->style.operand_shapes = true;
		}
		if (!shs__is_name(&p->lx.tok))
			return shs__fail(p, "expected an operand name");
		p->m->style.percent |= shs__at(p, SHS_TOK_PNAME);
		if ((rc = push_ref(p, &p->lx.tok, index, n++, false, shape, shape_off)))
			return rc;
		shs__next(p);
	}
	ins->n_operands = n;
	return ref_slots(p, n, &ins->operands);
}

/* `constant(literal)`; the old form `constant(f32[2] {...})` repeats the shape. */
static int parse_constant(shs__parser *p, shs_instr *ins)
{
	if (shs__at_shape(p) && !shs__at(p, SHS_TOK_LPAREN)) {
		const shs_tok t = p->lx.tok;
		shs_shape s = { 0 };
		int rc = shs__parse_shape(p, &s, 0);

		if (rc)
			return rc;
		if (!shs_shape_compatible(&s, &ins->shape))
			return shs__fail_at(p, t.off,
					    "constant shape differs from the instruction's shape");
	}
	return shs__text_literal_parse(&p->lx, p->a, &ins->shape, &ins->literal);
}

static int parse_operands(shs__parser *p, shs_instr *ins, uint32_t index)
{
	int rc = shs__expect(p, SHS_TOK_LPAREN, "'(' after the opcode");

	if (rc)
		return rc;
	if (ins->op == SHS_OP_CONSTANT)
		rc = parse_constant(p, ins);
	else if (ins->op == SHS_OP_PARAMETER)
		rc = shs__parse_int(p, 0, INT64_MAX, "parameter number", &ins->parameter_number);
	else
		rc = parse_operand_list(p, ins, index);
	return rc ? rc : shs__expect(p, SHS_TOK_RPAREN, "')' after the operands");
}

/* What follows `name =`: shape, opcode, operands and attributes. */
static int parse_instr_body(shs__parser *p, shs_instr *ins, uint32_t index)
{
	const shs_tok *t = &p->lx.tok;
	span *sp = &((span *)p->spans.data)[index];
	uint32_t op;
	int rc;

	sp->shape_off = t->off;
	if ((rc = shs__parse_shape(p, &ins->shape, 0)))
		return rc;
	sp->shape_len = p->lx.prev_end - sp->shape_off;
	if (t->kind != SHS_TOK_IDENT)
		return shs__fail(p, "expected an opcode");
	if (!shs__names_find(&p->ops, p->lx.src + t->off, t->len, &op))
		return shs__fail(p, "unknown opcode");
	ins->op = (shs_opcode)op;
	shs__next(p);
	if ((rc = parse_operands(p, ins, index)))
		return rc;
	return shs__parse_instr_attrs(p, ins, index);
}

/* `[ROOT] name = shape opcode(operands), attr=value, ...`. */
static int parse_instr(shs__parser *p, shs_computation *c, uint32_t *root)
{
	shs_tok name;
	shs_instr *ins;
	span *sp;
	uint32_t index = c->n_instrs, dup;
	const char *s;
	size_t n;
	int rc;

	if (shs__at_word(p, "ROOT")) {
		if (*root != SHS__NO_INDEX)
			return shs__fail(p, "second ROOT in computation '%s'", c->name);
		*root = index;
		shs__next(p);
	}
	name = p->lx.tok;
	if (!shs__is_name(&name))
		return shs__fail(p, "expected an instruction name");
	s = shs__name_ptr(p, &name, &n);
	if (shs__names_find(&p->instrs, s, n, &dup))
		return shs__fail(p, "duplicate instruction name in computation '%s'", c->name);
	p->m->style.percent |= name.kind == SHS_TOK_PNAME;
	shs__next(p);
	if ((rc = shs__expect(p, SHS_TOK_EQ, "'=' after the instruction name")))
		return rc;
	if (!(ins = shs_arena_calloc(p->a, 1, sizeof(*ins))) || !(sp = shs__vec_push(&p->spans)) ||
	    !(ins->name = shs_arena_strndup(p->a, s, n)))
		return shs__oom(p);
	sp->name_off = name.off;
	ins->id = ++p->next_instr_id;
	if (shs_comp_add_instr(p->m, c, ins) != SHS_OK ||
	    shs__names_put(&p->instrs, s, n, index) != SHS_OK)
		return shs__oom(p);
	return parse_instr_body(p, ins, index);
}

/* ---- Computations ---------------------------------------------------------------------------- */

/* A computation's `(p: shape, ...) -> shape`, with the text positions of its parts. */
typedef struct signature {
	bool present;
	size_t off;
	shs_program_shape ps;
	size_t *param_offs; /* n_params + 1: the parameters, then the result */
} signature;

static int resolve_refs(shs__parser *p, shs_computation *c)
{
	const ref *refs = p->refs.data;
	const span *spans = p->spans.data;

	for (size_t i = 0; i < p->refs.n; i++) {
		const ref *r = &refs[i];
		shs_instr *user = c->instrs[r->instr];
		uint32_t idx;

		if (!shs__names_find(&p->instrs, p->lx.src + r->off, r->len, &idx))
			return shs__fail_at(p, r->tok_off, "unknown %s in computation '%s'",
					    r->control ? "control predecessor" : "operand",
					    c->name);
		if (r->shape && !shs_shape_compatible(r->shape, &c->instrs[idx]->shape))
			return shs__fail_at(p, r->shape_off,
					    "operand shape differs from the shape of '%s', "
					    "which is %.*s",
					    c->instrs[idx]->name, (int)spans[idx].shape_len,
					    p->lx.src + spans[idx].shape_off);
		if (r->control)
			user->control[r->slot] = idx;
		else
			user->operands[r->slot] = idx;
	}
	return SHS_OK;
}

/* Errors point at the parameter instruction. */
int shs__collect_params(shs__parser *p, const shs_computation *c, uint32_t *n_params)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < c->n_instrs; i++)
		n += c->instrs[i]->op == SHS_OP_PARAMETER;
	p->params.n = 0;
	for (uint32_t k = 0; k < n; k++)
		if (!shs__vec_push(&p->params))
			return shs__oom(p);
	for (uint32_t k = 0; k < n; k++)
		((uint32_t *)p->params.data)[k] = SHS__NO_INDEX;
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *ins = c->instrs[i];
		uint32_t *slot;

		if (ins->op != SHS_OP_PARAMETER)
			continue;
		if (ins->parameter_number >= (int64_t)n)
			return shs__fail_at(p, ((span *)p->spans.data)[i].name_off,
					    "parameter number %lld out of range: computation '%s' "
					    "has %u parameters",
					    (long long)ins->parameter_number, c->name, n);
		slot = &((uint32_t *)p->params.data)[ins->parameter_number];
		if (*slot != SHS__NO_INDEX)
			return shs__fail_at(p, ((span *)p->spans.data)[i].name_off,
					    "parameter number %lld used twice in computation '%s'",
					    (long long)ins->parameter_number, c->name);
		*slot = i;
	}
	*n_params = n;
	return SHS_OK;
}

/* Resolves c's references and checks its parameters against its signature. */
static int finish_computation(shs__parser *p, shs_computation *c, uint32_t root,
			      const signature *sig)
{
	uint32_t n_params;
	int rc;

	c->root = root != SHS__NO_INDEX ? root : c->n_instrs - 1;
	if ((rc = resolve_refs(p, c)) || (rc = shs__collect_params(p, c, &n_params)))
		return rc;
	if (sig->present)
		return shs__check_program_shape(p, c, &sig->ps, sig->param_offs, sig->off,
						"signature");
	return SHS_OK;
}

static int parse_execution_thread(shs__parser *p, shs_computation *c)
{
	shs__next(p); /* ',' */
	if (!shs__at_word(p, "execution_thread"))
		return shs__fail(p, "expected execution_thread");
	if (c->execution_thread)
		return shs__fail(p, "execution_thread given twice");
	shs__next(p);
	if (!shs__at(p, SHS_TOK_EQ))
		return shs__fail(p, "expected '=' after execution_thread");
	shs__next(p);
	return shs__parse_string(p, &c->execution_thread, NULL);
}

/* `{ instructions }` of c. */
static int parse_body(shs__parser *p, shs_computation *c, uint32_t *root)
{
	int rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open the computation");

	nt_reset(&p->instrs);
	p->refs.n = 0;
	p->spans.n = 0;
	*root = SHS__NO_INDEX;
	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		if (shs__at(p, SHS_TOK_EOF))
			return shs__fail(p, "expected '}' to close computation '%s'", c->name);
		rc = parse_instr(p, c, root);
	}
	if (rc == SHS_OK && c->n_instrs == 0)
		return shs__fail(p, "computation '%s' has no instructions", c->name);
	if (rc == SHS_OK)
		shs__next(p);
	return rc;
}

static int add_computation(shs__parser *p, shs_computation *c, bool is_entry)
{
	uint32_t index = p->m->n_comps;

	if (shs_module_add_comp(p->m, c) != SHS_OK ||
	    shs__names_put(&p->comps, c->name, strlen(c->name), index) != SHS_OK)
		return shs__oom(p);
	if (is_entry) {
		p->have_entry = true;
		p->entry = index;
	}
	return SHS_OK;
}

/* `[ENTRY] name [(p: shape, ...) -> shape] [, execution_thread="x"] { ... }
 * [, execution_thread="x"]`. */
static int parse_computation(shs__parser *p)
{
	signature sig = { 0 };
	shs_computation *c;
	bool is_entry = false;
	uint32_t root, dup;
	int rc;

	if (shs__at_word(p, "ENTRY")) {
		if (p->have_entry)
			return shs__fail(p, "second ENTRY computation (the first is '%s')",
					 p->m->comps[p->entry]->name);
		is_entry = true;
		shs__next(p);
	}
	if (!shs__is_name(&p->lx.tok))
		return shs__fail(p, "expected a computation name");
	{
		size_t n;
		const char *s = shs__name_ptr(p, &p->lx.tok, &n);

		if (shs__names_find(&p->comps, s, n, &dup))
			return shs__fail(p, "duplicate computation name");
	}
	if (!(c = shs_arena_calloc(p->a, 1, sizeof(*c))) ||
	    !(c->name = shs__dup_name(p, &p->lx.tok)))
		return shs__oom(p);
	p->m->style.percent |= shs__at(p, SHS_TOK_PNAME);
	c->id = ++p->next_comp_id;
	shs__next(p);
	if (shs__at(p, SHS_TOK_LPAREN)) {
		sig.present = true;
		sig.off = p->lx.tok.off;
		p->m->style.signatures = true;
		if ((rc = shs__parse_program_shape(p, true, &sig.ps, &sig.param_offs)))
			return rc;
	}
	if (shs__at(p, SHS_TOK_COMMA) && (rc = parse_execution_thread(p, c)))
		return rc;
	if ((rc = parse_body(p, c, &root)))
		return rc;
	if (shs__at(p, SHS_TOK_COMMA) && (rc = parse_execution_thread(p, c)))
		return rc;
	if ((rc = finish_computation(p, c, root, &sig)))
		return rc;
	return add_computation(p, c, is_entry);
}

/* ---- Module and setup ------------------------------------------------------------------------ */

static int parse_module(shs__parser *p)
{
	int rc = parse_header(p);

	while (rc == SHS_OK && !shs__at(p, SHS_TOK_EOF)) {
		if (shs__at_word(p, "FileNames") || shs__at_word(p, "FunctionNames") ||
		    shs__at_word(p, "FileLocations") || shs__at_word(p, "StackFrames"))
			return shs__unsupported(p, "stack frame tables are not supported");
		rc = parse_computation(p);
	}
	if (rc)
		return rc;
	if (!p->m->n_comps)
		return shs__fail(p, "expected a computation");
	p->m->entry = p->have_entry ? p->entry : p->m->n_comps - 1;
	return shs__finish_entry_layout(p);
}

static int fill_keywords(shs__parser *p)
{
	for (int op = 0; op < SHS_OP_COUNT; op++) {
		const char *s = shs_opcode_name((shs_opcode)op);

		if (shs__names_put(&p->ops, s, strlen(s), (uint32_t)op))
			return SHS_ENOMEM;
	}
	for (int t = 1; t < SHS_ELEM_COUNT; t++) {
		const char *s = shs_elem_name(t);

		/* tuples are written as (...); buffers have no text form here */
		if (s && t != SHS_TUPLE && t != SHS_BUFFER &&
		    shs__names_put(&p->elems, s, strlen(s), (uint32_t)t))
			return SHS_ENOMEM;
	}
	return shs__attr_keywords(p);
}

static void free_scratch(shs__parser *p)
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
	shs__parser p;
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
	if (p.m)
		shs_arena_reserve(p.m->arena, len * SHS_IR_BYTES_PER_INPUT_BYTE);
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
