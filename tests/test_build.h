/* Test helpers that build small modules through the IR API, without the text parser. */
#ifndef SHS_TEST_BUILD_H
#define SHS_TEST_BUILD_H

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

/* The list "0,1,2" (empty string: empty list), in m's arena. */
static inline shs_i64s tb_list(shs_module *m, const char *csv)
{
	shs_i64s l = { 0 };
	const char *p = csv;
	char *end;

	for (const char *q = csv; *q; q++)
		l.n += *q == ',';
	l.n += *csv != '\0';
	l.v = shs_arena_calloc(m->arena, l.n ? l.n : 1, sizeof(*l.v));
	CU_ASSERT_PTR_NOT_NULL_FATAL(l.v);
	for (uint32_t k = 0; k < l.n; k++) {
		l.v[k] = strtoll(p, &end, 10);
		p = *end == ',' ? end + 1 : end;
	}
	return l;
}

/* Parses one shape of the form f32[2,3], pred[], token[] or (s32[], f32[4]) at *p. */
static inline void tb_shape_at(shs_module *m, const char **p, shs_shape *s)
{
	const char *q = *p;

	memset(s, 0, sizeof(*s));
	if (*q == '(') {
		shs_shape elems[16];

		s->type = SHS_TUPLE;
		q++;
		while (*q && *q != ')') {
			CU_ASSERT_FATAL(s->n_tuple < 16);
			tb_shape_at(m, &q, &elems[s->n_tuple++]);
			while (*q == ',' || *q == ' ')
				q++;
		}
		s->tuple = shs_arena_memdup(m->arena, elems, s->n_tuple * sizeof(*elems));
		*p = q + 1;
		return;
	}
	{
		const char *br = strchr(q, '[');
		const char *close;
		char list[256];

		CU_ASSERT_PTR_NOT_NULL_FATAL(br);
		s->type = shs_elem_from_name(q, (size_t)(br - q));
		CU_ASSERT_FATAL(s->type > 0);
		close = strchr(br, ']');
		CU_ASSERT_FATAL(close && (size_t)(close - br) < sizeof(list));
		memcpy(list, br + 1, (size_t)(close - br - 1));
		list[close - br - 1] = '\0';
		{
			shs_i64s d = tb_list(m, list);

			s->rank = d.n;
			s->dims = d.v;
		}
		*p = close + 1;
	}
}

static inline shs_shape tb_shape(shs_module *m, const char *text)
{
	shs_shape s;

	tb_shape_at(m, &text, &s);
	return s;
}

static inline shs_module *tb_module(const char *name)
{
	shs_module *m = shs_module_new(0);

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	m->name = shs_arena_strdup(m->arena, name);
	return m;
}

/* Appends a computation (id = its index + 1) and makes it the entry. */
static inline shs_computation *tb_comp(shs_module *m, const char *name)
{
	shs_computation *c = shs_arena_calloc(m->arena, 1, sizeof(*c));

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	c->name = shs_arena_strdup(m->arena, name);
	c->id = (int64_t)m->n_comps + 1;
	CU_ASSERT_EQUAL_FATAL(shs_module_add_comp(m, c), SHS_OK);
	m->entry = m->n_comps - 1;
	return c;
}

static inline uint32_t tb_comp_index(const shs_module *m, const char *name)
{
	for (uint32_t k = 0; k < m->n_comps; k++)
		if (!strcmp(m->comps[k]->name, name))
			return k;
	CU_FAIL_FATAL("no such computation");
	return 0;
}

static inline uint32_t tb_index(const shs_computation *c, const char *name)
{
	for (uint32_t k = 0; k < c->n_instrs; k++)
		if (!strcmp(c->instrs[k]->name, name))
			return k;
	CU_FAIL_FATAL("no such instruction");
	return 0;
}

static inline shs_instr *tb_find(const shs_computation *c, const char *name)
{
	return c->instrs[tb_index(c, name)];
}

/* Appends an instruction with operands named by the NULL-terminated list; it becomes the
 * root. Its id is one more than the module's instruction count. */
static inline shs_instr *tb_add(shs_module *m, shs_computation *c, const char *name,
				shs_opcode op, const char *shape, ...)
{
	shs_instr *i = shs_arena_calloc(m->arena, 1, sizeof(*i));
	uint32_t ops[64], n = 0, total = 0;
	const char *operand;
	va_list ap;

	CU_ASSERT_PTR_NOT_NULL_FATAL(i);
	i->name = shs_arena_strdup(m->arena, name);
	i->op = op;
	i->shape = tb_shape(m, shape);
	va_start(ap, shape);
	while ((operand = va_arg(ap, const char *)) != NULL)
		ops[n++] = tb_index(c, operand);
	va_end(ap);
	i->n_operands = n;
	i->operands = shs_arena_memdup(m->arena, ops, n * sizeof(*ops));
	for (uint32_t k = 0; k < m->n_comps; k++)
		total += m->comps[k]->n_instrs;
	i->id = (int64_t)total + 1;
	CU_ASSERT_EQUAL_FATAL(shs_comp_add_instr(m, c, i), SHS_OK);
	c->root = c->n_instrs - 1;
	return i;
}

static inline shs_instr *tb_param(shs_module *m, shs_computation *c, const char *name,
				  const char *shape, int64_t number)
{
	shs_instr *i = tb_add(m, c, name, SHS_OP_PARAMETER, shape, NULL);

	i->parameter_number = number;
	return i;
}

/* Sets the called computations of i to the NULL-terminated list of names. */
static inline void tb_calls(shs_module *m, shs_instr *i, ...)
{
	uint32_t idx[16], n = 0;
	const char *name;
	va_list ap;

	va_start(ap, i);
	while ((name = va_arg(ap, const char *)) != NULL)
		idx[n++] = tb_comp_index(m, name);
	va_end(ap);
	i->n_called = n;
	i->called = shs_arena_memdup(m->arena, idx, n * sizeof(*idx));
}

/* A scalar reducer `name (a, b) -> type[]` returning add(a, b); instructions are named
 * name.a, name.b and name.sum. */
static inline shs_computation *tb_adder(shs_module *m, const char *name, const char *type)
{
	shs_computation *c = tb_comp(m, name);
	char a[64], b[64], r[64], s[16];

	snprintf(s, sizeof(s), "%s[]", type);
	snprintf(a, sizeof(a), "%s.a", name);
	snprintf(b, sizeof(b), "%s.b", name);
	snprintf(r, sizeof(r), "%s.sum", name);
	tb_param(m, c, a, s, 0);
	tb_param(m, c, b, s, 1);
	tb_add(m, c, r, SHS_OP_ADD, s, a, b, NULL);
	return c;
}

#endif
