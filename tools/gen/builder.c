/* The graph builder's frame: computations, scopes, sticky errors, and new instructions. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "builder_internal.h"

void shs_gb_init(shs_gb *g, shs_module *m, shs_err *e)
{
	memset(g, 0, sizeof(*g));
	g->m = m;
	g->e = e;
	g->next_id = 1;
}

void shs_gb_fail(shs_gb *g, int code, const char *fmt, ...)
{
	va_list ap;

	if (g->rc != SHS_OK)
		return;
	g->rc = code;
	va_start(ap, fmt);
	shs_vseterr_at(g->e, code, g->scope[0] ? g->scope : "gen", fmt, ap);
	va_end(ap);
}

void shs_gb_begin(shs_gb *g, shs_gb_frame *saved, const char *name)
{
	shs_computation *c;
	char buf[SHS_GB_SCOPE_MAX];

	saved->c = g->c;
	memcpy(saved->scope, g->scope, sizeof(g->scope));
	saved->depth = g->depth;
	memcpy(saved->marks, g->marks, sizeof(g->marks));
	if (g->rc != SHS_OK)
		return;
	c = shs_arena_calloc(g->m->arena, 1, sizeof(*c));
	snprintf(buf, sizeof(buf), "%s.%lld", name, (long long)g->next_id);
	if (!c || !(c->name = shs_arena_strdup(g->m->arena, buf))) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return;
	}
	c->id = g->next_id++;
	g->c = c;
}

uint32_t shs_gb_end(shs_gb *g, const shs_gb_frame *saved, shs_v root)
{
	uint32_t index = 0;

	if (g->rc == SHS_OK && !shs__gb_valid(g, root))
		shs_gb_fail(g, SHS_EINVAL, "root of %s is not one of its values", g->c->name);
	if (g->rc == SHS_OK) {
		g->c->root = root;
		if (shs_module_add_comp(g->m, g->c) != SHS_OK)
			shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		index = g->m->n_comps - 1;
	}
	g->c = saved->c;
	memcpy(g->scope, saved->scope, sizeof(g->scope));
	g->depth = saved->depth;
	memcpy(g->marks, saved->marks, sizeof(g->marks));
	return index;
}

void shs_gb_push(shs_gb *g, const char *fmt, ...)
{
	size_t used = strlen(g->scope);
	va_list ap;
	int n;

	if (used + 1 >= sizeof(g->scope) || g->depth >= SHS_GB_SCOPE_DEPTH) {
		shs_gb_fail(g, SHS_EINVAL, "metadata scope too deep");
		return;
	}
	g->marks[g->depth++] = (uint16_t)used;
	if (used)
		g->scope[used++] = '/';
	va_start(ap, fmt);
	n = vsnprintf(g->scope + used, sizeof(g->scope) - used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(g->scope) - used)
		shs_gb_fail(g, SHS_EINVAL, "metadata scope too long");
}

void shs_gb_pop(shs_gb *g)
{
	if (g->depth)
		g->scope[g->marks[--g->depth]] = '\0';
}

bool shs__gb_valid(const shs_gb *g, shs_v v)
{
	return g->c && v < g->c->n_instrs;
}

const shs_shape *shs_gb_shape(const shs_gb *g, shs_v v)
{
	static const shs_shape none = { .type = SHS_INVALID };

	return shs__gb_valid(g, v) ? &g->c->instrs[v]->shape : &none;
}

shs_gdims shs_gb_dims(const shs_gb *g, shs_v v)
{
	const shs_shape *s = shs_gb_shape(g, v);
	shs_gdims d = { 0 };

	if (s->type == SHS_TUPLE || s->rank > SHS_GB_MAX_RANK)
		return d;
	d.n = s->rank;
	for (uint32_t k = 0; k < s->rank; k++)
		d.d[k] = s->dims[k];
	return d;
}

int32_t shs_gb_type(const shs_gb *g, shs_v v)
{
	return shs_gb_shape(g, v)->type;
}

int shs__gb_array_shape(shs_gb *g, shs_shape *s, int32_t type, shs_gdims d)
{
	shs_arena *a = g->m->arena;

	memset(s, 0, sizeof(*s));
	s->type = type;
	s->rank = d.n;
	if (!d.n)
		return SHS_OK; /* scalars carry no layout, as XLA prints them */
	s->layout = shs_arena_calloc(a, 1, sizeof(*s->layout));
	s->dims = shs_arena_memdup(a, d.d, d.n * sizeof(int64_t));
	if (s->layout)
		s->layout->minor_to_major.v = shs_arena_alloc(a, d.n * sizeof(int64_t));
	if (!s->layout || !s->dims || !s->layout->minor_to_major.v) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return SHS_ENOMEM;
	}
	s->layout->minor_to_major.n = d.n;
	for (uint32_t k = 0; k < d.n; k++)
		s->layout->minor_to_major.v[k] = d.n - 1 - k;
	return SHS_OK;
}

int64_t *shs__gb_i64s(shs_gb *g, shs_i64s *out, shs_gdims d)
{
	out->n = d.n;
	out->v = NULL;
	if (!d.n)
		return NULL;
	out->v = shs_arena_memdup(g->m->arena, d.d, d.n * sizeof(int64_t));
	if (!out->v)
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
	return out->v;
}

static int set_metadata(shs_gb *g, shs_instr *i)
{
	const char *op = shs_opcode_name(i->op);
	size_t len = strlen(g->scope) + strlen(op) + 2;
	char *name = shs_arena_alloc(g->m->arena, len);

	i->metadata = shs_arena_calloc(g->m->arena, 1, sizeof(*i->metadata));
	if (!name || !i->metadata)
		return SHS_ENOMEM;
	snprintf(name, len, "%s%s%s", g->scope, g->scope[0] ? "/" : "", op);
	for (char *p = name + len - 1 - strlen(op); *p; p++)
		if (*p == '-')
			*p = '_';
	i->metadata->op_name = name;
	return SHS_OK;
}

shs_v shs__gb_add(shs_gb *g, shs_instr *i, const char *name)
{
	char buf[SHS_GB_SCOPE_MAX];

	if (g->rc != SHS_OK)
		return 0;
	i->id = g->next_id++;
	snprintf(buf, sizeof(buf), "%s.%lld", name ? name : shs_opcode_name(i->op),
		 (long long)i->id);
	i->name = shs_arena_strdup(g->m->arena, buf);
	if (!i->name || set_metadata(g, i) != SHS_OK ||
	    shs_comp_add_instr(g->m, g->c, i) != SHS_OK) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	return g->c->n_instrs - 1;
}

shs_instr *shs__gb_new(shs_gb *g, shs_opcode op, const shs_v *operands, uint32_t n)
{
	shs_instr *i;

	if (g->rc != SHS_OK)
		return NULL;
	if (!g->c) {
		shs_gb_fail(g, SHS_EINVAL, "no computation is being built");
		return NULL;
	}
	for (uint32_t k = 0; k < n; k++)
		if (!shs__gb_valid(g, operands[k])) {
			shs_gb_fail(g, SHS_EINVAL, "%s: operand %u is not a value of %s",
				    shs_opcode_name(op), k, g->c->name);
			return NULL;
		}
	i = shs_arena_calloc(g->m->arena, 1, sizeof(*i));
	if (i && n)
		i->operands = shs_arena_memdup(g->m->arena, operands, n * sizeof(*operands));
	if (!i || (n && !i->operands)) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return NULL;
	}
	i->op = op;
	i->n_operands = n;
	i->parameter_number = 0;
	return i;
}

shs_v shs_gb_param_shape(shs_gb *g, int64_t number, const shs_shape *s, const char *name)
{
	shs_instr *i = shs__gb_new(g, SHS_OP_PARAMETER, NULL, 0);

	if (!i)
		return 0;
	if (shs_shape_copy(g->m->arena, &i->shape, s) != SHS_OK) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	i->parameter_number = number;
	return shs__gb_add(g, i, name);
}

shs_v shs_gb_param(shs_gb *g, int64_t number, int32_t type, shs_gdims dims, const char *name)
{
	shs_shape s;

	if (g->rc != SHS_OK || shs__gb_array_shape(g, &s, type, dims) != SHS_OK)
		return 0;
	return shs_gb_param_shape(g, number, &s, name);
}

static int scalar_bytes(int32_t type, double value, uint8_t *out)
{
	float f = (float)value;
	uint16_t h;
	int32_t s;
	uint32_t u;

	switch (type) {
	case SHS_F32: memcpy(out, &f, 4); return 4;
	case SHS_BF16: h = shs_f32_to_bf16(f); memcpy(out, &h, 2); return 2;
	case SHS_S32: s = (int32_t)value; memcpy(out, &s, 4); return 4;
	case SHS_U32:
		if (!(value >= 0 && value <= 4294967295.0))
			return 0;
		u = (uint32_t)value;
		memcpy(out, &u, 4);
		return 4;
	case SHS_PRED: out[0] = value != 0; return 1;
	default: return 0;
	}
}

shs_v shs_gb_const(shs_gb *g, int32_t type, double value)
{
	shs_instr *i = shs__gb_new(g, SHS_OP_CONSTANT, NULL, 0);
	uint8_t bytes[8];
	int n = scalar_bytes(type, value, bytes);

	if (!i)
		return 0;
	if (!n || (type == SHS_S32 && !isfinite(value))) {
		shs_gb_fail(g, SHS_EINVAL, "constant of type %s is not supported",
			    shs_elem_name(type));
		return 0;
	}
	i->literal = shs_arena_calloc(g->m->arena, 1, sizeof(*i->literal));
	if (!i->literal || !(i->literal->data = shs_arena_memdup(g->m->arena, bytes, (size_t)n))) {
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
		return 0;
	}
	i->literal->size = (size_t)n;
	if (shs__gb_array_shape(g, &i->shape, type, GD()) != SHS_OK)
		return 0;
	return shs__gb_add(g, i, NULL);
}

/* name with its ".N" suffix replaced by ".id", in the module's arena. */
static const char *renamed(shs_gb *g, const char *name, int64_t id)
{
	const char *dot = strrchr(name, '.');
	size_t base = dot ? (size_t)(dot - name) : strlen(name);
	char buf[SHS_GB_SCOPE_MAX];
	const char *out;

	snprintf(buf, sizeof(buf), "%.*s.%lld", (int)(base < sizeof(buf) / 2 ? base : sizeof(buf) / 2),
		 name, (long long)id);
	out = shs_arena_strdup(g->m->arena, buf);
	if (!out)
		shs_gb_fail(g, SHS_ENOMEM, "out of memory");
	return out ? out : name;
}

void shs_gb_renumber(shs_gb *g)
{
	int64_t next = 1;

	for (uint32_t k = 0; k < g->m->n_comps && g->rc == SHS_OK; k++) {
		shs_computation *c = g->m->comps[k];
		c->id = (int64_t)k + 1;
		c->name = renamed(g, c->name, c->id);
		for (uint32_t j = 0; j < c->n_instrs; j++) {
			c->instrs[j]->id = next++;
			c->instrs[j]->name = renamed(g, c->instrs[j]->name, c->instrs[j]->id);
		}
	}
}
