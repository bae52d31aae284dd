/* HLO text printer: modules, computations, instructions and shapes as XLA prints them. */
#include "io.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "text_print.h"

enum { ALIAS_MUST = 2 }; /* shs_alias.kind of must-alias */

/* ---- small pieces ---------------------------------------------------------------------- */

void shs__put_list_sep(shs_buf *b, uint32_t i, bool indexed)
{
	if (i)
		shs_buf_puts(b, ", ");
	if (i && indexed && i % SHS__INDEX_COMMENT_EVERY == 0)
		shs_buf_printf(b, "/*index=%u*/", i);
}

void shs__put_i64_csv(shs_buf *b, const int64_t *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			shs_buf_putc(b, ',');
		shs_buf_put_i64(b, v[i]);
	}
}

void shs__put_i64_braced(shs_buf *b, const shs_i64s *l)
{
	shs_buf_putc(b, '{');
	shs__put_i64_csv(b, l->v, l->n);
	shs_buf_putc(b, '}');
}

void shs__put_name(const shs__printer *p, const char *name)
{
	if (p->st.percent)
		shs_buf_putc(p->b, '%');
	shs_buf_puts(p->b, name ? name : "");
}

const shs_instr *shs__instr_at(const shs__printer *p, uint32_t idx)
{
	return idx < p->c->n_instrs ? p->c->instrs[idx] : NULL;
}

/* ---- shapes ---------------------------------------------------------------------------- */

static void put_tile(shs_buf *b, const shs_i64s *t)
{
	shs_buf_putc(b, '(');
	for (uint32_t i = 0; i < t->n; i++) {
		if (i)
			shs_buf_putc(b, ',');
		if (t->v[i] == INT64_MIN) /* Tile::kCombineDimension */
			shs_buf_putc(b, '*');
		else
			shs_buf_put_i64(b, t->v[i]);
	}
	shs_buf_putc(b, ')');
}

static bool layout_has_extras(const shs_layout *l)
{
	return l->n_tiles || l->element_size_in_bits || l->memory_space;
}

/* `{1,0}`, `{1,0:T(8,128)E(4)S(1)}`; scalars print only a layout with extras. */
static void put_layout(shs_buf *b, const shs_layout *l, uint32_t rank)
{
	if (!rank && !l->minor_to_major.n && !layout_has_extras(l))
		return;
	shs_buf_putc(b, '{');
	shs__put_i64_csv(b, l->minor_to_major.v, l->minor_to_major.n);
	if (layout_has_extras(l))
		shs_buf_putc(b, ':');
	if (l->n_tiles) {
		shs_buf_putc(b, 'T');
		for (uint32_t t = 0; t < l->n_tiles; t++)
			put_tile(b, &l->tiles[t]);
	}
	if (l->element_size_in_bits)
		shs_buf_printf(b, "E(%" PRId64 ")", l->element_size_in_bits);
	if (l->memory_space)
		shs_buf_printf(b, "S(%" PRId64 ")", l->memory_space);
	shs_buf_putc(b, '}');
}

static void put_dims(shs_buf *b, const shs_shape *s)
{
	shs_buf_putc(b, '[');
	for (uint32_t d = 0; d < s->rank; d++) {
		if (d)
			shs_buf_putc(b, ',');
		if (s->dims[d] == INT64_MIN) { /* Shape::kUnboundedSize */
			shs_buf_putc(b, '?');
			continue;
		}
		if (s->dynamic && s->dynamic[d])
			shs_buf_puts(b, "<=");
		shs_buf_put_i64(b, s->dims[d]);
	}
	shs_buf_putc(b, ']');
}

static void put_shape(shs_buf *b, const shs_shape *s, bool with_layout, int depth)
{
	const char *name;

	if (s->type == SHS_TUPLE) {
		if (depth > SHS_MAX_NESTING) {
			shs_buf_puts(b, "(...)");
			return;
		}
		shs_buf_putc(b, '(');
		for (uint32_t i = 0; i < s->n_tuple; i++) {
			shs__put_list_sep(b, i, true);
			put_shape(b, &s->tuple[i], with_layout, depth + 1);
		}
		shs_buf_putc(b, ')');
		return;
	}
	name = shs_elem_name(s->type);
	shs_buf_puts(b, name ? name : "invalid");
	put_dims(b, s);
	if (with_layout && s->layout && shs_elem_is_array(s->type))
		put_layout(b, s->layout, s->rank);
}

void shs_shape_print(shs_buf *b, const shs_shape *s, bool with_layout)
{
	put_shape(b, s, with_layout, 0);
}

/* ---- operands -------------------------------------------------------------------------- */

/* Operand idx of the computation being printed, named `name` (NULL: its own). */
static void put_operand(const shs__printer *p, uint32_t idx, const char *name)
{
	const shs_instr *op = shs__instr_at(p, idx);

	if (!op) {
		shs_buf_puts(p->b, "null");
		return;
	}
	if (p->st.operand_shapes) {
		put_shape(p->b, &op->shape, true, 0);
		shs_buf_putc(p->b, ' ');
	}
	shs__put_name(p, name ? name : op->name);
}

/* The text between the opcode's parentheses. */
static void put_operands(const shs__printer *p, const shs_instr *in)
{
	if (in->op == SHS_OP_CONSTANT) {
		if (in->literal)
			shs__put_literal(p->b, in->literal, &in->shape);
		else
			shs_buf_puts(p->b, "{...}");
		return;
	}
	if (in->op == SHS_OP_PARAMETER) {
		shs_buf_put_i64(p->b, in->parameter_number);
		return;
	}
	for (uint32_t i = 0; i < in->n_operands; i++) {
		/* the long form annotates every fifth operand, the short form does not */
		shs__put_list_sep(p->b, i, p->st.operand_shapes);
		put_operand(p, in->operands[i], p->operands ? p->operands[i] : NULL);
	}
}

/* ---- instructions and computations ----------------------------------------------------- */

static void put_instr(const shs__printer *p, const shs_instr *in, bool root)
{
	shs_buf_puts(p->b, root ? "  ROOT " : "  ");
	shs__put_name(p, in->name);
	shs_buf_puts(p->b, " = ");
	put_shape(p->b, &in->shape, true, 0);
	shs_buf_putc(p->b, ' ');
	shs_buf_puts(p->b, shs_opcode_name(in->op));
	shs_buf_putc(p->b, '(');
	put_operands(p, in);
	shs_buf_putc(p->b, ')');
	shs__put_instr_attrs(p, in);
	shs_buf_putc(p->b, '\n');
}

static int cmp_param(const void *a, const void *b)
{
	const shs_instr *x = *(const shs_instr *const *)a, *y = *(const shs_instr *const *)b;

	return (x->parameter_number > y->parameter_number) -
	       (x->parameter_number < y->parameter_number);
}

/* `(a: f32[2], b: s32[]) -> f32[2] ` from the parameters (by number) and the root. */
static void put_signature(const shs__printer *p)
{
	const shs_computation *c = p->c;
	const shs_instr **params = malloc(((size_t)c->n_instrs + 1) * sizeof(*params));
	uint32_t n = 0;

	if (!params) {
		p->b->oom = true;
		return;
	}
	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER)
			params[n++] = c->instrs[i];
	qsort(params, n, sizeof(*params), cmp_param);
	shs_buf_putc(p->b, '(');
	for (uint32_t i = 0; i < n; i++) {
		shs__put_list_sep(p->b, i, false);
		shs_buf_puts(p->b, params[i]->name ? params[i]->name : "");
		shs_buf_puts(p->b, ": ");
		put_shape(p->b, &params[i]->shape, false, 0);
	}
	shs_buf_puts(p->b, ") -> ");
	if (c->root < c->n_instrs)
		put_shape(p->b, &c->instrs[c->root]->shape, false, 0);
	shs_buf_putc(p->b, ' ');
	free(params);
}

static bool is_main_thread(const char *t)
{
	return !t || !*t || !strcmp(t, "main");
}

static void put_computation(shs__printer *p, const shs_computation *c, bool entry,
			    shs_text_replace_fn replace, void *user)
{
	p->c = c;
	if (entry)
		shs_buf_puts(p->b, "ENTRY ");
	shs__put_name(p, c->name);
	shs_buf_putc(p->b, ' ');
	if (p->st.signatures)
		put_signature(p);
	shs_buf_puts(p->b, "{\n");
	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (!replace || !replace(user, i, p->b))
			put_instr(p, c->instrs[i], i == c->root);
	shs_buf_putc(p->b, '}');
	if (!is_main_thread(c->execution_thread)) {
		shs_buf_puts(p->b, ", execution_thread=");
		shs_text_put_quoted(p->b, c->execution_thread, strlen(c->execution_thread));
	}
	shs_buf_puts(p->b, "\n\n");
}

/* ---- the module header ----------------------------------------------------------------- */

static void put_alias(shs_buf *b, const shs_alias *a)
{
	shs__put_i64_braced(b, &a->output_index);
	shs_buf_printf(b, ": (%" PRId64 ", ", a->param_number);
	shs__put_i64_braced(b, &a->param_index);
	shs_buf_puts(b, a->kind == ALIAS_MUST ? ", must-alias)" : ", may-alias)");
}

static void put_entry_layout(const shs__printer *p, const shs_program_shape *ps)
{
	shs_buf_puts(p->b, ", entry_computation_layout={(");
	for (uint32_t i = 0; i < ps->n_params; i++) {
		if (!p->st.compact_entry_layout)
			shs__put_list_sep(p->b, i, true);
		else if (i)
			shs_buf_putc(p->b, ',');
		put_shape(p->b, &ps->params[i], true, 0);
	}
	shs_buf_puts(p->b, ")->");
	put_shape(p->b, &ps->result, true, 0);
	shs_buf_putc(p->b, '}');
}

/* Header attributes the IR keeps verbatim that XLA prints before entry_computation_layout:
 * `is_scheduled` first (placement 0), `buffer_donor` / `alias_passthrough_params` after
 * input_output_alias (1); the rest after the layout (2). */
static int raw_header_place(const char *name)
{
	if (name && !strcmp(name, "is_scheduled"))
		return 0;
	if (name && (!strcmp(name, "buffer_donor") || !strcmp(name, "alias_passthrough_params")))
		return 1;
	return 2;
}

static void put_raw_header(shs_buf *b, const shs_module *m, int place)
{
	for (uint32_t i = 0; i < m->n_raw_attrs; i++)
		if (raw_header_place(m->raw_attrs[i].name) == place)
			shs__put_raw_attrs(b, &m->raw_attrs[i], 1);
}

static void put_header(const shs__printer *p)
{
	const shs_module *m = p->m;

	shs_buf_puts(p->b, "HloModule ");
	shs_buf_puts(p->b, m->name ? m->name : "");
	put_raw_header(p->b, m, 0);
	if (m->n_aliases) {
		shs_buf_puts(p->b, ", input_output_alias={ ");
		for (uint32_t i = 0; i < m->n_aliases; i++) {
			shs__put_list_sep(p->b, i, false);
			put_alias(p->b, &m->aliases[i]);
		}
		shs_buf_puts(p->b, " }");
	}
	put_raw_header(p->b, m, 1);
	if (m->entry_layout)
		put_entry_layout(p, m->entry_layout);
	put_raw_header(p->b, m, 2);
	if (m->replica_count > 0)
		shs_buf_printf(p->b, ", replica_count=%" PRId64, m->replica_count);
	if (m->num_partitions > 0)
		shs_buf_printf(p->b, ", num_partitions=%" PRId64, m->num_partitions);
	if (m->n_frontend_attrs) {
		shs_buf_puts(p->b, ", frontend_attributes=");
		shs__put_frontend_attrs(p->b, m->frontend_attrs, m->n_frontend_attrs);
	}
	shs_buf_puts(p->b, "\n\n");
}

void shs_text_print(shs_buf *b, const shs_module *m, const shs_text_style *style)
{
	shs__printer p = { .b = b, .m = m, .st = style ? *style : m->style };

	put_header(&p);
	for (uint32_t i = 0; i < m->n_comps; i++)
		put_computation(&p, m->comps[i], i == m->entry, NULL, NULL);
}

void shs_text_print_header(shs_buf *b, const shs_module *m, const shs_text_style *style)
{
	shs__printer p = { .b = b, .m = m, .st = style ? *style : m->style };

	put_header(&p);
}

void shs_text_print_comp(shs_buf *b, const shs_module *m, uint32_t c,
			 const shs_text_style *style, shs_text_replace_fn replace, void *user)
{
	shs__printer p = { .b = b, .m = m, .st = style ? *style : m->style };

	if (c < m->n_comps)
		put_computation(&p, m->comps[c], c == m->entry, replace, user);
}

void shs_text_print_instr(shs_buf *b, const shs_module *m, uint32_t c, uint32_t i,
			  const char *name, const char *const *operands,
			  const shs_text_style *style)
{
	shs__printer p = { .b = b, .m = m, .st = style ? *style : m->style,
			   .operands = operands };
	shs_instr in;

	if (c >= m->n_comps || i >= m->comps[c]->n_instrs)
		return;
	p.c = m->comps[c];
	in = *p.c->instrs[i]; /* a shallow copy, renamed: printed, never kept */
	if (name)
		in.name = name;
	put_instr(&p, &in, false);
}
