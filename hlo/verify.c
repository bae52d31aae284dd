/* The module verifier: structure, unique names and ids, and the shape rules of the common opcodes. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"

/* Fixed positions and counts of XLA's instruction layouts. */
enum {
	WHILE_BODY = 0,        /* called[0] of a while */
	WHILE_COND = 1,        /* called[1] of a while */
	WHILE_N_CALLED = 2,
	PRED_BRANCHES = 2,     /* a conditional on a pred has exactly true and false branches */
	DOT_LHS = 0,
	DOT_RHS = 1,
	CLAMP_OPERAND = 1,     /* clamp(min, operand, max): min and max may be scalars */
	DETAIL_MAX = SHS_ERRMSG_MAX
};

/* State of one verification. params[c][k] is the parameter instruction k of computation c. */
typedef struct verifier {
	const shs_module *m;
	shs_err *e;
	const shs_instr ***params;
	uint32_t *n_params;
	shs_buf txt[2];          /* scratch for shapes and dims quoted in messages */
} verifier;

/* One name or id with where it occurs, for the duplicate search. */
typedef struct occurrence {
	const char *name;
	int64_t id;
	uint32_t comp, instr;
} occurrence;

static const char *or_unnamed(const char *name)
{
	return name ? name : "(unnamed)";
}

static int fail_module(const verifier *v, const char *fmt, ...) SHS_PRINTF(2, 3);
static int fail_comp(const verifier *v, const shs_computation *c, const char *fmt, ...)
	SHS_PRINTF(3, 4);
static int fail_instr(const verifier *v, const shs_computation *c, const shs_instr *i,
		      const char *fmt, ...) SHS_PRINTF(4, 5);

static int fail_module(const verifier *v, const char *fmt, ...)
{
	char detail[DETAIL_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return shs_seterr(v->e, SHS_EVERIFY, "module '%s': %s", or_unnamed(v->m->name), detail);
}

static int fail_comp(const verifier *v, const shs_computation *c, const char *fmt, ...)
{
	char detail[DETAIL_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return shs_seterr(v->e, SHS_EVERIFY, "computation '%s': %s", or_unnamed(c->name), detail);
}

static int fail_instr(const verifier *v, const shs_computation *c, const shs_instr *i,
		      const char *fmt, ...)
{
	char detail[DETAIL_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return shs_seterr(v->e, SHS_EVERIFY, "computation '%s', instruction '%s': %s",
			  or_unnamed(c->name), or_unnamed(i->name), detail);
}

/* The text of s in scratch slot k (layouts left out), for messages. */
static const char *shape_text(verifier *v, int k, const shs_shape *s)
{
	shs_buf_reset(&v->txt[k]);
	shs_shape_print(&v->txt[k], s, false);
	return v->txt[k].len && !v->txt[k].oom ? v->txt[k].data : "?";
}

/* "[2,3]" for d[0..n) in scratch slot k, for messages. */
static const char *dims_text(verifier *v, int k, const int64_t *d, uint32_t n)
{
	shs_buf *b = &v->txt[k];

	shs_buf_reset(b);
	shs_buf_putc(b, '[');
	for (uint32_t j = 0; j < n; j++) {
		if (j)
			shs_buf_putc(b, ',');
		shs_buf_put_i64(b, d[j]);
	}
	shs_buf_putc(b, ']');
	return b->oom ? "?" : b->data;
}

/* ---- Shapes ---- */

/* Whether s is well formed; when not, writes why into why[0..n). Recursion is bounded by
 * SHS_MAX_NESTING however deep the input nests. */
static bool shape_ok(const shs_shape *s, unsigned depth, char *why, size_t n)
{
	if (depth > SHS_MAX_NESTING) {
		snprintf(why, n, "tuples nest deeper than %d", SHS_MAX_NESTING);
		return false;
	}
	if (!shs_elem_valid(s->type)) {
		snprintf(why, n, "element type %" PRId32 " is not valid", s->type);
		return false;
	}
	if (s->type == SHS_TUPLE) {
		if (s->rank) {
			snprintf(why, n, "type tuple cannot have dims (has %" PRIu32 ")", s->rank);
			return false;
		}
		if (s->n_tuple && !s->tuple) {
			snprintf(why, n, "tuple elements missing");
			return false;
		}
		for (uint32_t k = 0; k < s->n_tuple; k++)
			if (!shape_ok(&s->tuple[k], depth + 1, why, n))
				return false;
		return true;
	}
	if (s->n_tuple) {
		snprintf(why, n, "type %s cannot have tuple elements", shs_elem_name(s->type));
		return false;
	}
	if (s->rank > SHS_MAX_RANK || (s->rank && !s->dims)) {
		snprintf(why, n, "rank %" PRIu32 " is not valid (at most %d)", s->rank,
			 SHS_MAX_RANK);
		return false;
	}
	if (!shs_elem_is_array(s->type) && s->type != SHS_BUFFER && s->rank) {
		snprintf(why, n, "type %s cannot have dims", shs_elem_name(s->type));
		return false;
	}
	for (uint32_t d = 0; d < s->rank; d++) {
		if (s->dims[d] < 0) {
			snprintf(why, n, "dim %" PRIu32 " has size %" PRId64, d, s->dims[d]);
			return false;
		}
	}
	if (shs_shape_elements(s) < 0) {
		snprintf(why, n, "the element count overflows");
		return false;
	}
	if (s->layout && s->layout->minor_to_major.n) {
		const shs_i64s *mm = &s->layout->minor_to_major;
		uint64_t seen = 0; /* one bit per dim */

		if (mm->n != s->rank) {
			snprintf(why, n, "the layout lists %" PRIu32 " dims for rank %" PRIu32,
				 mm->n, s->rank);
			return false;
		}
		for (uint32_t d = 0; d < mm->n; d++) {
			if (mm->v[d] < 0 || mm->v[d] >= (int64_t)s->rank ||
			    (seen >> mm->v[d] & 1)) {
				snprintf(why, n, "the layout is not a permutation of the dims");
				return false;
			}
			seen |= UINT64_C(1) << mm->v[d];
		}
	}
	return true;
}

_Static_assert(SHS_MAX_RANK <= 64, "shape_ok keeps one bit per dim in a uint64_t");

static bool is_array(const shs_shape *s)
{
	return shs_elem_is_array(s->type);
}

static bool is_scalar(const shs_shape *s)
{
	return is_array(s) && s->rank == 0;
}

static bool same_dims(const shs_shape *x, const shs_shape *y)
{
	return x->rank == y->rank &&
	       (!x->rank || !memcmp(x->dims, y->dims, x->rank * sizeof(*x->dims)));
}

static bool has_dynamic_dim(const shs_shape *s)
{
	for (uint32_t d = 0; s->dynamic && d < s->rank; d++)
		if (s->dynamic[d])
			return true;
	return false;
}

/* ---- Cycle search ---- */

/* A graph in compressed rows: the edges of node k are edge[start[k] .. start[k + 1]). */
typedef struct graph {
	uint32_t n;
	size_t *start;
	uint32_t *edge;
} graph;

static void graph_free(graph *g)
{
	free(g->start);
	free(g->edge);
}

/* The operand and control edges of c (user -> operand), in-range ones only. */
static int instr_graph(const shs_computation *c, graph *g)
{
	size_t n_edges = 0, at = 0;

	g->n = c->n_instrs;
	for (uint32_t j = 0; j < c->n_instrs; j++)
		n_edges += (size_t)c->instrs[j]->n_operands + c->instrs[j]->n_control;
	g->start = malloc(((size_t)g->n + 1) * sizeof(*g->start));
	g->edge = malloc((n_edges ? n_edges : 1) * sizeof(*g->edge));
	if (!g->start || !g->edge)
		return SHS_ENOMEM;
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		const shs_instr *i = c->instrs[j];

		g->start[j] = at;
		for (uint32_t k = 0; k < i->n_operands; k++)
			if (i->operands[k] < c->n_instrs)
				g->edge[at++] = i->operands[k];
		for (uint32_t k = 0; k < i->n_control; k++)
			if (i->control[k] < c->n_instrs)
				g->edge[at++] = i->control[k];
	}
	g->start[g->n] = at;
	return SHS_OK;
}

/* The call edges of m (caller -> callee), in-range ones only. */
static int call_graph(const shs_module *m, graph *g)
{
	size_t n_edges = 0, at = 0;

	g->n = m->n_comps;
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t j = 0; j < m->comps[c]->n_instrs; j++)
			n_edges += m->comps[c]->instrs[j]->n_called;
	g->start = malloc(((size_t)g->n + 1) * sizeof(*g->start));
	g->edge = malloc((n_edges ? n_edges : 1) * sizeof(*g->edge));
	if (!g->start || !g->edge)
		return SHS_ENOMEM;
	for (uint32_t c = 0; c < m->n_comps; c++) {
		g->start[c] = at;
		for (uint32_t j = 0; j < m->comps[c]->n_instrs; j++) {
			const shs_instr *i = m->comps[c]->instrs[j];

			for (uint32_t k = 0; i->called && k < i->n_called; k++)
				if (i->called[k] < m->n_comps)
					g->edge[at++] = i->called[k];
		}
	}
	g->start[g->n] = at;
	return SHS_OK;
}

/* Depth-first search from root for a cycle, without recursion. On finding one, sets
 * cycle[0..*n_cycle) to its nodes in edge order (cycle[k] -> cycle[k + 1] -> ... -> cycle[0]).
 * cycle must hold g->n entries. Returns SHS_OK (check *n_cycle) or SHS_ENOMEM. */
static int find_cycle(const graph *g, uint32_t root, uint32_t *cycle, uint32_t *n_cycle)
{
	enum { WHITE, GRAY, BLACK };
	unsigned char *color = calloc(g->n, 1);
	uint32_t *stack = malloc((size_t)g->n * sizeof(*stack));
	size_t *next = malloc((size_t)g->n * sizeof(*next));
	uint32_t depth = 0;
	int rc = SHS_ENOMEM;

	*n_cycle = 0;
	if (!color || !stack || !next)
		goto out_free;
	rc = SHS_OK;
	stack[depth] = root;
	next[depth++] = g->start[root];
	color[root] = GRAY;
	while (depth) {
		uint32_t node = stack[depth - 1], to;

		if (next[depth - 1] == g->start[node + 1]) {
			color[node] = BLACK;
			depth--;
			continue;
		}
		to = g->edge[next[depth - 1]++];
		if (color[to] == GRAY) {
			uint32_t from = depth;

			while (stack[from - 1] != to)
				from--;
			for (uint32_t k = from - 1; k < depth; k++)
				cycle[(*n_cycle)++] = stack[k];
			break;
		}
		if (color[to] == WHITE) {
			color[to] = GRAY;
			stack[depth] = to;
			next[depth++] = g->start[to];
		}
	}
out_free:
	free(color);
	free(stack);
	free(next);
	return rc;
}

/* Reports an operand or control predecessor at index op_idx >= the user's index user_idx:
 * a cycle when the graph has one reachable from the user, else a forward reference. */
static int report_forward_ref(const verifier *v, const shs_computation *c, uint32_t user_idx,
			      uint32_t op_idx, const char *what)
{
	graph g = { 0 };
	uint32_t *cycle = malloc(((size_t)c->n_instrs + 1) * sizeof(*cycle)), n_cycle = 0;
	const shs_instr *user = c->instrs[user_idx];
	int rc = SHS_ENOMEM;
	shs_buf b = { 0 };

	if (!cycle)
		goto out_free;
	rc = instr_graph(c, &g);
	if (rc == SHS_OK)
		rc = find_cycle(&g, user_idx, cycle, &n_cycle);
	if (rc != SHS_OK)
		goto out_free;
	if (!n_cycle) {
		rc = fail_instr(v, c, user, "%s '%s' is defined after its user", what,
				or_unnamed(c->instrs[op_idx]->name));
		goto out_free;
	}
	/* The search walks user -> operand; print the data flow, producer -> consumer. */
	shs_buf_puts(&b, "cycle: ");
	for (uint32_t k = n_cycle; k-- > 0;) {
		shs_buf_puts(&b, or_unnamed(c->instrs[cycle[k]]->name));
		shs_buf_puts(&b, " -> ");
	}
	shs_buf_puts(&b, or_unnamed(c->instrs[cycle[n_cycle - 1]]->name));
	rc = b.oom ? SHS_ENOMEM : fail_instr(v, c, user, "%s", b.data);
out_free:
	shs_buf_free(&b);
	graph_free(&g);
	free(cycle);
	return rc == SHS_ENOMEM ? shs_seterr(v->e, rc, "verify: out of memory") : rc;
}

/* Reports a called computation at index callee >= the caller's index ci. */
static int report_late_callee(const verifier *v, uint32_t ci, const shs_instr *i, uint32_t callee)
{
	const shs_module *m = v->m;
	const shs_computation *c = m->comps[ci];
	graph g = { 0 };
	uint32_t *cycle = malloc(((size_t)m->n_comps + 1) * sizeof(*cycle)), n_cycle = 0;
	int rc = SHS_ENOMEM;
	shs_buf b = { 0 };

	if (callee == ci) {
		free(cycle);
		return fail_instr(v, c, i, "calls its own computation");
	}
	if (!cycle)
		goto out_free;
	rc = call_graph(m, &g);
	if (rc == SHS_OK)
		rc = find_cycle(&g, ci, cycle, &n_cycle);
	if (rc != SHS_OK)
		goto out_free;
	if (!n_cycle) {
		rc = fail_instr(v, c, i, "called computation '%s' comes after its caller",
				or_unnamed(m->comps[callee]->name));
		goto out_free;
	}
	shs_buf_puts(&b, "computations call each other: ");
	for (uint32_t k = 0; k < n_cycle; k++) {
		shs_buf_puts(&b, or_unnamed(m->comps[cycle[k]]->name));
		shs_buf_puts(&b, " -> ");
	}
	shs_buf_puts(&b, or_unnamed(m->comps[cycle[0]]->name));
	rc = b.oom ? SHS_ENOMEM : fail_instr(v, c, i, "%s", b.data);
out_free:
	shs_buf_free(&b);
	graph_free(&g);
	free(cycle);
	return rc == SHS_ENOMEM ? shs_seterr(v->e, rc, "verify: out of memory") : rc;
}

/* ---- Structure ---- */

/* Everything the later passes dereference: non-NULL computations, instructions and names,
 * and an entry in range. */
static int check_module_frame(const verifier *v)
{
	const shs_module *m = v->m;
	char why[DETAIL_MAX];

	if (!m->n_comps || !m->comps)
		return fail_module(v, "has no computations");
	if (m->entry >= m->n_comps)
		return fail_module(v, "entry computation index %" PRIu32
				   " is out of range (%" PRIu32 " computations)",
				   m->entry, m->n_comps);
	for (uint32_t c = 0; c < m->n_comps; c++) {
		const shs_computation *comp = m->comps[c];

		if (!comp || !comp->name)
			return fail_module(v, "computation %" PRIu32 " has no name", c);
		if (!comp->n_instrs || !comp->instrs)
			return fail_comp(v, comp, "has no instructions");
		for (uint32_t j = 0; j < comp->n_instrs; j++)
			if (!comp->instrs[j] || !comp->instrs[j]->name)
				return fail_comp(v, comp, "instruction %" PRIu32 " has no name", j);
	}
	if (m->entry_layout) {
		const shs_program_shape *ps = m->entry_layout;

		for (uint32_t k = 0; k < ps->n_params; k++)
			if (!shape_ok(&ps->params[k], 0, why, sizeof(why)))
				return fail_module(v, "entry_computation_layout parameter %" PRIu32
						   ": %s", k, why);
		if (!shape_ok(&ps->result, 0, why, sizeof(why)))
			return fail_module(v, "entry_computation_layout result: %s", why);
	}
	return SHS_OK;
}

/* Indices of operands, control predecessors and callees of instruction j of computation ci. */
static int check_links(const verifier *v, uint32_t ci, uint32_t j)
{
	const shs_computation *c = v->m->comps[ci];
	const shs_instr *i = c->instrs[j];

	if ((i->n_operands && !i->operands) || (i->n_control && !i->control) ||
	    (i->n_called && !i->called))
		return fail_instr(v, c, i, "operand, control or callee list missing");
	for (uint32_t k = 0; k < i->n_operands; k++) {
		uint32_t o = i->operands[k];

		if (o >= c->n_instrs)
			return fail_instr(v, c, i, "operand %" PRIu32 " is instruction %" PRIu32
					  ", out of range (%" PRIu32 " instructions)",
					  k, o, c->n_instrs);
	}
	for (uint32_t k = 0; k < i->n_control; k++) {
		uint32_t o = i->control[k];

		if (o >= c->n_instrs)
			return fail_instr(v, c, i, "control predecessor %" PRIu32
					  " is instruction %" PRIu32 ", out of range (%" PRIu32
					  " instructions)", k, o, c->n_instrs);
	}
	for (uint32_t k = 0; k < i->n_called; k++) {
		uint32_t callee = i->called[k];

		if (callee >= v->m->n_comps)
			return fail_instr(v, c, i, "called computation %" PRIu32
					  " is index %" PRIu32 ", out of range (%" PRIu32
					  " computations)", k, callee, v->m->n_comps);
	}
	return SHS_OK;
}

/* Operands and control predecessors come before their user; callees before their caller. */
static int check_order(const verifier *v, uint32_t ci, uint32_t j)
{
	const shs_computation *c = v->m->comps[ci];
	const shs_instr *i = c->instrs[j];

	for (uint32_t k = 0; k < i->n_operands; k++)
		if (i->operands[k] >= j)
			return report_forward_ref(v, c, j, i->operands[k], "operand");
	for (uint32_t k = 0; k < i->n_control; k++)
		if (i->control[k] >= j)
			return report_forward_ref(v, c, j, i->control[k], "control predecessor");
	for (uint32_t k = 0; k < i->n_called; k++)
		if (i->called[k] >= ci)
			return report_late_callee(v, ci, i, i->called[k]);
	return SHS_OK;
}

/* Parameter numbers 0..n-1, each once; fills v->params[ci] (storage at *store). */
static int collect_params(verifier *v, uint32_t ci, const shs_instr **store)
{
	const shs_computation *c = v->m->comps[ci];
	uint32_t n = 0;

	for (uint32_t j = 0; j < c->n_instrs; j++)
		n += c->instrs[j]->op == SHS_OP_PARAMETER;
	v->params[ci] = store;
	v->n_params[ci] = n;
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		const shs_instr *i = c->instrs[j];
		int64_t num = i->parameter_number;

		if (i->op != SHS_OP_PARAMETER)
			continue;
		if (num < 0 || num >= (int64_t)n)
			return fail_instr(v, c, i, "parameter number %" PRId64 " is out of range (%"
					  PRIu32 " parameters)", num, n);
		if (store[num])
			return fail_instr(v, c, i, "parameter number %" PRId64
					  " is also used by '%s'", num, store[num]->name);
		store[num] = i;
	}
	return SHS_OK;
}

/* Opcode, shape, links, order and root of computation ci; fills its parameter table. */
static int check_comp_structure(verifier *v, uint32_t ci, const shs_instr **param_store)
{
	const shs_computation *c = v->m->comps[ci];
	char why[DETAIL_MAX];
	int rc;

	if (c->root >= c->n_instrs)
		return fail_comp(v, c, "root index %" PRIu32 " is out of range (%" PRIu32
				 " instructions)", c->root, c->n_instrs);
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		const shs_instr *i = c->instrs[j];

		if ((unsigned)i->op >= SHS_OP_COUNT)
			return fail_instr(v, c, i, "opcode %d is not valid", (int)i->op);
		if (!shape_ok(&i->shape, 0, why, sizeof(why)))
			return fail_instr(v, c, i, "invalid shape: %s", why);
		rc = check_links(v, ci, j);
		if (rc != SHS_OK)
			return rc;
	}
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		rc = check_order(v, ci, j);
		if (rc != SHS_OK)
			return rc;
	}
	return collect_params(v, ci, param_store);
}

/* ---- Unique names and ids ---- */

static int cmp_by_name(const void *a, const void *b)
{
	const occurrence *x = a, *y = b;
	int d = strcmp(x->name, y->name);

	if (d)
		return d;
	if (x->comp != y->comp)
		return x->comp < y->comp ? -1 : 1;
	return x->instr < y->instr ? -1 : x->instr > y->instr;
}

static int cmp_by_id(const void *a, const void *b)
{
	const occurrence *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->comp != y->comp)
		return x->comp < y->comp ? -1 : 1;
	return x->instr < y->instr ? -1 : x->instr > y->instr;
}

/* The later of the first pair of equal keys in occ[0..n) after sorting, or NULL. */
static const occurrence *find_duplicate(occurrence *occ, size_t n,
					int (*cmp)(const void *, const void *),
					const occurrence **first)
{
	if (n < 2)
		return NULL;
	qsort(occ, n, sizeof(*occ), cmp);
	for (size_t k = 1; k < n; k++) {
		occurrence a = occ[k - 1], b = occ[k];

		a.comp = b.comp = a.instr = b.instr = 0;
		if (!cmp(&a, &b)) {
			*first = &occ[k - 1];
			return &occ[k];
		}
	}
	return NULL;
}

static int check_comp_unique(verifier *v, occurrence *occ)
{
	const shs_module *m = v->m;
	const occurrence *dup, *first = NULL;

	for (uint32_t c = 0; c < m->n_comps; c++)
		occ[c] = (occurrence){ m->comps[c]->name, m->comps[c]->id, c, 0 };
	dup = find_duplicate(occ, m->n_comps, cmp_by_name, &first);
	if (dup)
		return fail_comp(v, m->comps[dup->comp], "computation name is used twice");
	dup = find_duplicate(occ, m->n_comps, cmp_by_id, &first);
	if (dup)
		return fail_comp(v, m->comps[dup->comp], "id %" PRId64
				 " is also the id of computation '%s'",
				 dup->id, m->comps[first->comp]->name);
	return SHS_OK;
}

static int check_instr_unique(verifier *v, occurrence *occ, size_t n)
{
	const shs_module *m = v->m;
	const occurrence *dup, *first = NULL;
	size_t at = 0;

	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t j = 0; j < m->comps[c]->n_instrs; j++) {
			const shs_instr *i = m->comps[c]->instrs[j];

			occ[at++] = (occurrence){ i->name, i->id, c, j };
		}
	dup = find_duplicate(occ, n, cmp_by_name, &first);
	if (dup)
		return fail_instr(v, m->comps[dup->comp], m->comps[dup->comp]->instrs[dup->instr],
				  "name is also used in computation '%s'",
				  m->comps[first->comp]->name);
	dup = find_duplicate(occ, n, cmp_by_id, &first);
	if (dup)
		return fail_instr(v, m->comps[dup->comp], m->comps[dup->comp]->instrs[dup->instr],
				  "id %" PRId64 " is also the id of '%s' in computation '%s'",
				  dup->id, m->comps[first->comp]->instrs[first->instr]->name,
				  m->comps[first->comp]->name);
	return SHS_OK;
}

/* Computation names and ids unique; instruction names and ids unique module-wide. */
static int check_unique(verifier *v)
{
	const shs_module *m = v->m;
	size_t n = 0;
	occurrence *occ;
	int rc;

	for (uint32_t c = 0; c < m->n_comps; c++)
		n += m->comps[c]->n_instrs;
	occ = malloc((n > m->n_comps ? n : m->n_comps) * sizeof(*occ));
	if (!occ)
		return shs_seterr(v->e, SHS_ENOMEM, "verify: out of memory");
	rc = check_comp_unique(v, occ);
	if (rc == SHS_OK)
		rc = check_instr_unique(v, occ, n);
	free(occ);
	return rc;
}

/* ---- Shape rules ---- */

/* What one shape rule needs: the instruction, its computation and its operands' shapes. */
typedef struct site {
	verifier *v;
	const shs_computation *c;
	const shs_instr *i;
} site;

static const shs_shape *operand_shape(const site *s, uint32_t k)
{
	return &s->c->instrs[s->i->operands[k]]->shape;
}

static const char *operand_name(const site *s, uint32_t k)
{
	return s->c->instrs[s->i->operands[k]]->name;
}

static int want_operands(const site *s, uint32_t n)
{
	if (s->i->n_operands != n)
		return fail_instr(s->v, s->c, s->i, "has %" PRIu32 " operands, want %" PRIu32,
				  s->i->n_operands, n);
	return SHS_OK;
}

static int want_array_operand(const site *s, uint32_t k)
{
	if (!is_array(operand_shape(s, k)))
		return fail_instr(s->v, s->c, s->i, "operand %" PRIu32 " ('%s') is %s, not an array",
				  k, operand_name(s, k), shape_text(s->v, 0, operand_shape(s, k)));
	return SHS_OK;
}

static int want_array_result(const site *s)
{
	if (!is_array(&s->i->shape))
		return fail_instr(s->v, s->c, s->i, "result is %s, not an array",
				  shape_text(s->v, 0, &s->i->shape));
	return SHS_OK;
}

/* bitcast-convert between widths adds (narrowing) or drops (widening) a minor dim. */
static bool bitcast_dims_ok(const shs_shape *in, const shs_shape *out)
{
	int in_bits = shs_elem_bits(in->type), out_bits = shs_elem_bits(out->type);
	const shs_shape *wide = in_bits > out_bits ? in : out, *narrow = in_bits > out_bits ? out : in;
	int ratio = in_bits > out_bits ? in_bits / out_bits : out_bits / in_bits;

	if (in_bits == out_bits)
		return same_dims(in, out);
	if (narrow->rank != wide->rank + 1 || narrow->dims[wide->rank] != ratio)
		return false;
	return !wide->rank || !memcmp(wide->dims, narrow->dims, wide->rank * sizeof(*wide->dims));
}

/* copy: the operand's shape, which may be a tuple. */
static int check_copy(const site *s)
{
	int rc = want_operands(s, 1);

	if (rc == SHS_OK && !shs_shape_compatible(operand_shape(s, 0), &s->i->shape))
		rc = fail_instr(s->v, s->c, s->i, "operand '%s' is %s but the result is %s",
				operand_name(s, 0), shape_text(s->v, 0, operand_shape(s, 0)),
				shape_text(s->v, 1, &s->i->shape));
	return rc;
}

/* Element-wise ops: every operand has the result's dims (no implicit scalar broadcast, except
 * clamp's bounds); compare gives pred and select takes a pred. */
static int check_elementwise(const site *s)
{
	const shs_shape *r = &s->i->shape;
	int rc;

	if (s->i->op == SHS_OP_COPY)
		return check_copy(s);
	rc = want_array_result(s);
	if (rc != SHS_OK)
		return rc;
	if (!s->i->n_operands)
		return fail_instr(s->v, s->c, s->i, "has no operands");
	for (uint32_t k = 0; k < s->i->n_operands; k++) {
		const shs_shape *o = operand_shape(s, k);
		bool ok;

		rc = want_array_operand(s, k);
		if (rc != SHS_OK)
			return rc;
		if (s->i->op == SHS_OP_CLAMP && k != CLAMP_OPERAND && o->rank == 0)
			continue;
		ok = s->i->op == SHS_OP_BITCAST_CONVERT ? bitcast_dims_ok(o, r) : same_dims(o, r);
		if (!ok)
			return fail_instr(s->v, s->c, s->i, "operand %" PRIu32 " ('%s') has dims %s "
					  "but the result has dims %s", k, operand_name(s, k),
					  dims_text(s->v, 0, o->dims, o->rank),
					  dims_text(s->v, 1, r->dims, r->rank));
	}
	if (s->i->op == SHS_OP_COMPARE && r->type != SHS_PRED)
		return fail_instr(s->v, s->c, s->i, "compare gives %s, not pred",
				  shs_elem_name(r->type));
	if (s->i->op == SHS_OP_SELECT && operand_shape(s, 0)->type != SHS_PRED)
		return fail_instr(s->v, s->c, s->i, "select's operand 0 ('%s') is %s, not pred",
				  operand_name(s, 0), shs_elem_name(operand_shape(s, 0)->type));
	return SHS_OK;
}

/* Dims of one dot side: in range of rank and listed once across contracting and batch. */
static int check_dot_side(const site *s, const char *side, const shs_shape *o,
			  const shs_i64s *contracting, const shs_i64s *batch, bool *used)
{
	const shs_i64s *lists[2] = { contracting, batch };
	const char *kinds[2] = { "contracting", "batch" };

	memset(used, 0, o->rank * sizeof(*used));
	for (int l = 0; l < 2; l++) {
		for (uint32_t k = 0; k < lists[l]->n; k++) {
			int64_t d = lists[l]->v[k];

			if (d < 0 || d >= (int64_t)o->rank)
				return fail_instr(s->v, s->c, s->i, "%s %s dim %" PRId64
						  " is out of range (rank %" PRIu32 ")",
						  side, kinds[l], d, o->rank);
			if (used[d])
				return fail_instr(s->v, s->c, s->i, "%s dim %" PRId64
						  " is listed twice", side, d);
			used[d] = true;
		}
	}
	return SHS_OK;
}

/* Sizes of paired dims agree: lhs list[k] with rhs list[k]. */
static int check_dot_pairs(const site *s, const char *kind, const shs_shape *l, const shs_shape *r,
			   const shs_i64s *ld, const shs_i64s *rd)
{
	if (ld->n != rd->n)
		return fail_instr(s->v, s->c, s->i, "lhs has %" PRIu32 " %s dims but rhs has %"
				  PRIu32, ld->n, kind, rd->n);
	for (uint32_t k = 0; k < ld->n; k++)
		if (l->dims[ld->v[k]] != r->dims[rd->v[k]])
			return fail_instr(s->v, s->c, s->i, "lhs %s dim %" PRId64 " has size %"
					  PRId64 " but rhs %s dim %" PRId64 " has size %" PRId64,
					  kind, ld->v[k], l->dims[ld->v[k]], kind, rd->v[k],
					  r->dims[rd->v[k]]);
	return SHS_OK;
}

/* dot: dims in range and distinct, paired sizes agree, and the result is batch dims, lhs free
 * dims, rhs free dims in that order. The element type may differ from the operands'. */
static int check_dot(const site *s)
{
	static const shs_dot_dims none;
	const shs_dot_dims *dd = s->i->dot ? s->i->dot : &none;
	const shs_shape *l, *r, *res = &s->i->shape;
	bool lused[SHS_MAX_RANK], rused[SHS_MAX_RANK];
	int64_t want[2 * SHS_MAX_RANK];
	uint32_t n = 0;
	int rc;

	if (s->i->n_operands < 2)
		return fail_instr(s->v, s->c, s->i, "has %" PRIu32 " operands, want 2",
				  s->i->n_operands);
	if ((rc = want_array_operand(s, DOT_LHS)) || (rc = want_array_operand(s, DOT_RHS)) ||
	    (rc = want_array_result(s)))
		return rc;
	l = operand_shape(s, DOT_LHS);
	r = operand_shape(s, DOT_RHS);
	if ((rc = check_dot_side(s, "lhs", l, &dd->lhs_contracting, &dd->lhs_batch, lused)) ||
	    (rc = check_dot_side(s, "rhs", r, &dd->rhs_contracting, &dd->rhs_batch, rused)) ||
	    (rc = check_dot_pairs(s, "batch", l, r, &dd->lhs_batch, &dd->rhs_batch)) ||
	    (rc = check_dot_pairs(s, "contracting", l, r, &dd->lhs_contracting,
				  &dd->rhs_contracting)))
		return rc;
	for (uint32_t k = 0; k < dd->lhs_batch.n; k++)
		want[n++] = l->dims[dd->lhs_batch.v[k]];
	for (uint32_t d = 0; d < l->rank; d++)
		if (!lused[d])
			want[n++] = l->dims[d];
	for (uint32_t d = 0; d < r->rank; d++)
		if (!rused[d])
			want[n++] = r->dims[d];
	if (res->rank != n || (n && memcmp(res->dims, want, n * sizeof(*want))))
		return fail_instr(s->v, s->c, s->i, "result has dims %s but batch, lhs free and "
				  "rhs free dims give %s", dims_text(s->v, 0, res->dims, res->rank),
				  dims_text(s->v, 1, want, n));
	return SHS_OK;
}

/* broadcast: dimensions[k] is the result dim of operand dim k, increasing, same size. */
static int check_broadcast(const site *s)
{
	const shs_shape *o, *r = &s->i->shape;
	const shs_i64s *dims = &s->i->dimensions;
	int rc;

	if ((rc = want_operands(s, 1)) || (rc = want_array_operand(s, 0)) ||
	    (rc = want_array_result(s)))
		return rc;
	o = operand_shape(s, 0);
	if (dims->n != o->rank)
		return fail_instr(s->v, s->c, s->i, "dimensions has %" PRIu32
				  " entries but the operand has rank %" PRIu32, dims->n, o->rank);
	for (uint32_t k = 0; k < dims->n; k++) {
		int64_t d = dims->v[k];

		if (d < 0 || d >= (int64_t)r->rank)
			return fail_instr(s->v, s->c, s->i, "dimensions[%" PRIu32 "] = %" PRId64
					  " is out of range (result rank %" PRIu32 ")", k, d,
					  r->rank);
		if (k && d <= dims->v[k - 1])
			return fail_instr(s->v, s->c, s->i, "dimensions are not increasing: %s",
					  dims_text(s->v, 0, dims->v, dims->n));
		if (o->dims[k] != r->dims[d])
			return fail_instr(s->v, s->c, s->i, "operand dim %" PRIu32 " has size %"
					  PRId64 " but result dim %" PRId64 " has size %" PRId64,
					  k, o->dims[k], d, r->dims[d]);
	}
	return SHS_OK;
}

/* transpose: dimensions is a permutation and result dim k is operand dim dimensions[k]. */
static int check_transpose(const site *s)
{
	const shs_shape *o, *r = &s->i->shape;
	const shs_i64s *perm = &s->i->dimensions;
	bool seen[SHS_MAX_RANK] = { false };
	int rc;

	if ((rc = want_operands(s, 1)) || (rc = want_array_operand(s, 0)) ||
	    (rc = want_array_result(s)))
		return rc;
	o = operand_shape(s, 0);
	if (perm->n != o->rank || r->rank != o->rank)
		return fail_instr(s->v, s->c, s->i, "operand rank %" PRIu32 ", result rank %" PRIu32
				  " and %" PRIu32 " dimensions differ", o->rank, r->rank, perm->n);
	for (uint32_t k = 0; k < perm->n; k++) {
		int64_t d = perm->v[k];

		if (d < 0 || d >= (int64_t)o->rank || seen[d])
			return fail_instr(s->v, s->c, s->i, "dimensions %s are not a permutation",
					  dims_text(s->v, 0, perm->v, perm->n));
		seen[d] = true;
	}
	for (uint32_t k = 0; k < perm->n; k++) {
		int64_t d = perm->v[k];

		if (r->dims[k] != o->dims[d])
			return fail_instr(s->v, s->c, s->i, "result dim %" PRIu32 " has size %"
					  PRId64 " but operand dim %" PRId64 " has size %" PRId64,
					  k, r->dims[k], d, o->dims[d]);
	}
	return SHS_OK;
}

/* reshape: same element count, unless a dim is dynamic (its size is only a bound). */
static int check_reshape(const site *s)
{
	const shs_shape *o, *r = &s->i->shape;
	int rc;

	if ((rc = want_operands(s, 1)) || (rc = want_array_operand(s, 0)) ||
	    (rc = want_array_result(s)))
		return rc;
	o = operand_shape(s, 0);
	if (has_dynamic_dim(o) || has_dynamic_dim(r))
		return SHS_OK;
	if (shs_shape_elements(o) != shs_shape_elements(r))
		return fail_instr(s->v, s->c, s->i, "operand %s has %" PRId64
				  " elements but the result %s has %" PRId64,
				  dims_text(s->v, 0, o->dims, o->rank), shs_shape_elements(o),
				  dims_text(s->v, 1, r->dims, r->rank), shs_shape_elements(r));
	return SHS_OK;
}

/* The reduce's to_apply takes 2N scalars and returns N of them (a tuple when N > 1). */
static int check_reducer(const site *s, uint32_t n_in)
{
	const shs_module *m = s->v->m;
	uint32_t callee, n_params;
	const shs_computation *f;
	const shs_shape *root;

	if (s->i->n_called != 1)
		return fail_instr(s->v, s->c, s->i, "has %" PRIu32 " to_apply computations, want 1",
				  s->i->n_called);
	callee = s->i->called[0];
	f = m->comps[callee];
	n_params = s->v->n_params[callee];
	if (n_params != 2 * n_in)
		return fail_instr(s->v, s->c, s->i, "to_apply '%s' takes %" PRIu32
				  " parameters, want %" PRIu32, f->name, n_params, 2 * n_in);
	for (uint32_t k = 0; k < n_params; k++)
		if (!is_scalar(&s->v->params[callee][k]->shape))
			return fail_instr(s->v, s->c, s->i, "to_apply '%s' parameter %" PRIu32
					  " is %s, not a scalar", f->name, k,
					  shape_text(s->v, 0, &s->v->params[callee][k]->shape));
	root = &f->instrs[f->root]->shape;
	if (n_in == 1 ? !is_scalar(root) : root->type != SHS_TUPLE || root->n_tuple != n_in)
		return fail_instr(s->v, s->c, s->i, "to_apply '%s' returns %s, want %" PRIu32
				  " scalar(s)", f->name, shape_text(s->v, 0, root), n_in);
	for (uint32_t k = 0; n_in > 1 && k < n_in; k++)
		if (!is_scalar(&root->tuple[k]))
			return fail_instr(s->v, s->c, s->i, "to_apply '%s' returns %s, want %" PRIu32
					  " scalars", f->name, shape_text(s->v, 0, root), n_in);
	return SHS_OK;
}

/* One result array of a reduce: the input dims without the reduced ones. */
static int check_reduce_result(const site *s, const shs_shape *got, const int64_t *want,
			       uint32_t n)
{
	if (!is_array(got) || got->rank != n ||
	    (n && memcmp(got->dims, want, n * sizeof(*want))))
		return fail_instr(s->v, s->c, s->i, "result %s should have dims %s (the input "
				  "without the reduced dims)", shape_text(s->v, 0, got),
				  dims_text(s->v, 1, want, n));
	return SHS_OK;
}

/* reduce(in_1..in_N, init_1..init_N): inputs of one shape, scalar inits, reduced dims in range
 * and distinct, result the input without them (a tuple of N when N > 1). */
static int check_reduce(const site *s)
{
	const shs_i64s *dims = &s->i->dimensions;
	uint32_t n_in = s->i->n_operands / 2, n = 0;
	bool reduced[SHS_MAX_RANK] = { false };
	int64_t want[SHS_MAX_RANK];
	const shs_shape *in;
	int rc;

	if (!n_in || s->i->n_operands % 2)
		return fail_instr(s->v, s->c, s->i, "has %" PRIu32 " operands, want N inputs and N "
				  "init values", s->i->n_operands);
	for (uint32_t k = 0; k < s->i->n_operands; k++) {
		const shs_shape *o = operand_shape(s, k);

		if ((rc = want_array_operand(s, k)))
			return rc;
		if (k < n_in && !same_dims(o, operand_shape(s, 0)))
			return fail_instr(s->v, s->c, s->i, "input %" PRIu32 " ('%s') has dims %s "
					  "but input 0 has %s", k, operand_name(s, k),
					  dims_text(s->v, 0, o->dims, o->rank),
					  dims_text(s->v, 1, operand_shape(s, 0)->dims,
						    operand_shape(s, 0)->rank));
		if (k >= n_in && o->rank)
			return fail_instr(s->v, s->c, s->i, "init value %" PRIu32 " ('%s') is %s, "
					  "not a scalar", k - n_in, operand_name(s, k),
					  shape_text(s->v, 0, o));
	}
	in = operand_shape(s, 0);
	for (uint32_t k = 0; k < dims->n; k++) {
		int64_t d = dims->v[k];

		if (d < 0 || d >= (int64_t)in->rank || reduced[d])
			return fail_instr(s->v, s->c, s->i, "dimensions %s are not distinct dims "
					  "of rank %" PRIu32, dims_text(s->v, 0, dims->v, dims->n),
					  in->rank);
		reduced[d] = true;
	}
	for (uint32_t d = 0; d < in->rank; d++)
		if (!reduced[d])
			want[n++] = in->dims[d];
	if (n_in == 1)
		rc = check_reduce_result(s, &s->i->shape, want, n);
	else if (s->i->shape.type != SHS_TUPLE || s->i->shape.n_tuple != n_in)
		rc = fail_instr(s->v, s->c, s->i, "result %s should be a tuple of %" PRIu32
				" arrays", shape_text(s->v, 0, &s->i->shape), n_in);
	for (uint32_t k = 0; rc == SHS_OK && n_in > 1 && k < n_in; k++)
		rc = check_reduce_result(s, &s->i->shape.tuple[k], want, n);
	return rc == SHS_OK ? check_reducer(s, n_in) : rc;
}

/* tuple: result element k is operand k's shape. */
static int check_tuple(const site *s)
{
	const shs_shape *r = &s->i->shape;

	if (r->type != SHS_TUPLE || r->n_tuple != s->i->n_operands)
		return fail_instr(s->v, s->c, s->i, "result %s is not a tuple of %" PRIu32
				  " elements", shape_text(s->v, 0, r), s->i->n_operands);
	for (uint32_t k = 0; k < s->i->n_operands; k++)
		if (!shs_shape_compatible(&r->tuple[k], operand_shape(s, k)))
			return fail_instr(s->v, s->c, s->i, "result element %" PRIu32 " is %s but "
					  "operand %" PRIu32 " ('%s') is %s", k,
					  shape_text(s->v, 0, &r->tuple[k]), k, operand_name(s, k),
					  shape_text(s->v, 1, operand_shape(s, k)));
	return SHS_OK;
}

/* get-tuple-element: the operand is a tuple, the index in range, the result that element. */
static int check_gte(const site *s)
{
	const shs_shape *o;
	int64_t idx = s->i->tuple_index;
	int rc = want_operands(s, 1);

	if (rc != SHS_OK)
		return rc;
	o = operand_shape(s, 0);
	if (o->type != SHS_TUPLE)
		return fail_instr(s->v, s->c, s->i, "operand '%s' is %s, not a tuple",
				  operand_name(s, 0), shape_text(s->v, 0, o));
	if (idx < 0 || idx >= (int64_t)o->n_tuple)
		return fail_instr(s->v, s->c, s->i, "index %" PRId64 " is out of range (tuple of %"
				  PRIu32 ")", idx, o->n_tuple);
	if (!shs_shape_compatible(&s->i->shape, &o->tuple[idx]))
		return fail_instr(s->v, s->c, s->i, "result %s differs from tuple element %" PRId64
				  " %s", shape_text(s->v, 0, &s->i->shape), idx,
				  shape_text(s->v, 1, &o->tuple[idx]));
	return SHS_OK;
}

/* Computation callee takes exactly the shapes args[0..n) and returns ret (NULL: any). */
static int check_signature(const site *s, const char *role, uint32_t callee,
			   const shs_shape *const *args, uint32_t n, const shs_shape *ret)
{
	const shs_computation *f = s->v->m->comps[callee];
	const shs_shape *root = &f->instrs[f->root]->shape;

	if (s->v->n_params[callee] != n)
		return fail_instr(s->v, s->c, s->i, "%s '%s' takes %" PRIu32 " parameters, want %"
				  PRIu32, role, f->name, s->v->n_params[callee], n);
	for (uint32_t k = 0; k < n; k++) {
		const shs_shape *p = &s->v->params[callee][k]->shape;

		if (!shs_shape_compatible(p, args[k]))
			return fail_instr(s->v, s->c, s->i, "%s '%s' parameter %" PRIu32 " is %s "
					  "but gets %s", role, f->name, k, shape_text(s->v, 0, p),
					  shape_text(s->v, 1, args[k]));
	}
	if (ret && !shs_shape_compatible(root, ret))
		return fail_instr(s->v, s->c, s->i, "%s '%s' returns %s, want %s", role, f->name,
				  shape_text(s->v, 0, root), shape_text(s->v, 1, ret));
	return SHS_OK;
}

/* while(init), body=called[0], condition=called[1]: both take the loop's shape; the body
 * returns it and the condition returns pred[]. */
static int check_while(const site *s)
{
	const shs_shape *loop = &s->i->shape, *args[1] = { &s->i->shape };
	static const shs_shape pred = { .type = SHS_PRED };
	int rc;

	if ((rc = want_operands(s, 1)))
		return rc;
	if (s->i->n_called != WHILE_N_CALLED)
		return fail_instr(s->v, s->c, s->i, "has %" PRIu32 " called computations, want "
				  "body and condition", s->i->n_called);
	if (!shs_shape_compatible(operand_shape(s, 0), loop))
		return fail_instr(s->v, s->c, s->i, "operand '%s' is %s but the loop's shape is %s",
				  operand_name(s, 0), shape_text(s->v, 0, operand_shape(s, 0)),
				  shape_text(s->v, 1, loop));
	if ((rc = check_signature(s, "body", s->i->called[WHILE_BODY], args, 1, loop)))
		return rc;
	return check_signature(s, "condition", s->i->called[WHILE_COND], args, 1, &pred);
}

/* call and fusion: the callee takes the operands' shapes and returns the result's. */
static int check_call(const site *s)
{
	const shs_shape **args;
	int rc;

	if (s->i->n_called != 1)
		return fail_instr(s->v, s->c, s->i, "has %" PRIu32 " called computations, want 1",
				  s->i->n_called);
	args = malloc(((size_t)s->i->n_operands + 1) * sizeof(*args));
	if (!args)
		return shs_seterr(s->v->e, SHS_ENOMEM, "verify: out of memory");
	for (uint32_t k = 0; k < s->i->n_operands; k++)
		args[k] = operand_shape(s, k);
	rc = check_signature(s, "callee", s->i->called[0], args, s->i->n_operands, &s->i->shape);
	free(args);
	return rc;
}

/* conditional(index, arg_0..arg_B-1): index is pred[] (two branches) or s32[]; branch b takes
 * arg_b and returns the result's shape. */
static int check_conditional(const site *s)
{
	const shs_shape *idx;
	uint32_t nb = s->i->n_called;
	int rc;

	if (!nb || s->i->n_operands != nb + 1)
		return fail_instr(s->v, s->c, s->i, "has %" PRIu32 " operands and %" PRIu32
				  " branches, want one operand per branch after the index",
				  s->i->n_operands, nb);
	idx = operand_shape(s, 0);
	if (!((idx->type == SHS_PRED && nb == PRED_BRANCHES) || idx->type == SHS_S32) ||
	    idx->rank)
		return fail_instr(s->v, s->c, s->i, "branch index '%s' is %s, want pred[] with two "
				  "branches or s32[]", operand_name(s, 0), shape_text(s->v, 0, idx));
	for (uint32_t b = 0; b < nb; b++) {
		const shs_shape *args[1] = { operand_shape(s, b + 1) };

		if ((rc = check_signature(s, "branch", s->i->called[b], args, 1, &s->i->shape)))
			return rc;
	}
	return SHS_OK;
}

static int check_instr_shape(const site *s)
{
	switch (s->i->op) {
	case SHS_OP_DOT: return check_dot(s);
	case SHS_OP_BROADCAST: return check_broadcast(s);
	case SHS_OP_TRANSPOSE: return check_transpose(s);
	case SHS_OP_RESHAPE: return check_reshape(s);
	case SHS_OP_REDUCE: return check_reduce(s);
	case SHS_OP_TUPLE: return check_tuple(s);
	case SHS_OP_GET_TUPLE_ELEMENT: return check_gte(s);
	case SHS_OP_WHILE: return check_while(s);
	case SHS_OP_CALL: case SHS_OP_FUSION: return check_call(s);
	case SHS_OP_CONDITIONAL: return check_conditional(s);
	default:
		return shs_opcode_is_elementwise(s->i->op) ? check_elementwise(s) : SHS_OK;
	}
}

/* The entry's parameters and root agree with entry_computation_layout, layouts aside. */
static int check_entry_layout(verifier *v)
{
	const shs_module *m = v->m;
	const shs_program_shape *ps = m->entry_layout;
	const shs_computation *c = m->comps[m->entry];
	const shs_instr *root = c->instrs[c->root];

	if (!ps)
		return SHS_OK;
	if (ps->n_params != v->n_params[m->entry])
		return fail_comp(v, c, "takes %" PRIu32 " parameters but entry_computation_layout "
				 "lists %" PRIu32, v->n_params[m->entry], ps->n_params);
	for (uint32_t k = 0; k < ps->n_params; k++) {
		const shs_instr *p = v->params[m->entry][k];

		if (!shs_shape_compatible(&p->shape, &ps->params[k]))
			return fail_instr(v, c, p, "parameter %" PRIu32 " is %s but "
					  "entry_computation_layout says %s", k,
					  shape_text(v, 0, &p->shape), shape_text(v, 1, &ps->params[k]));
	}
	if (!shs_shape_compatible(&root->shape, &ps->result))
		return fail_instr(v, c, root, "root is %s but entry_computation_layout returns %s",
				  shape_text(v, 0, &root->shape), shape_text(v, 1, &ps->result));
	return SHS_OK;
}

/* ---- Driver ---- */

static int check_all(verifier *v, const shs_instr **param_store)
{
	const shs_module *m = v->m;
	size_t at = 0;
	int rc;

	for (uint32_t c = 0; c < m->n_comps; c++) {
		rc = check_comp_structure(v, c, param_store + at);
		if (rc != SHS_OK)
			return rc;
		at += v->n_params[c];
	}
	rc = check_unique(v);
	for (uint32_t c = 0; rc == SHS_OK && c < m->n_comps; c++) {
		for (uint32_t j = 0; rc == SHS_OK && j < m->comps[c]->n_instrs; j++) {
			site s = { v, m->comps[c], m->comps[c]->instrs[j] };

			rc = check_instr_shape(&s);
		}
	}
	return rc == SHS_OK ? check_entry_layout(v) : rc;
}

int shs_module_verify(const shs_module *m, shs_err *e)
{
	verifier v = { .m = m, .e = e };
	const shs_instr **param_store = NULL;
	size_t n_instrs = 0;
	int rc;

	if (!m)
		return shs_seterr(e, SHS_EINVAL, "verify: no module");
	rc = check_module_frame(&v);
	if (rc != SHS_OK)
		return rc;
	for (uint32_t c = 0; c < m->n_comps; c++)
		n_instrs += m->comps[c]->n_instrs;
	param_store = calloc(n_instrs, sizeof(*param_store));
	v.params = calloc(m->n_comps, sizeof(*v.params));
	v.n_params = calloc(m->n_comps, sizeof(*v.n_params));
	if (!param_store || !v.params || !v.n_params) {
		rc = shs_seterr(e, SHS_ENOMEM, "verify: out of memory");
		goto out_free;
	}
	rc = check_all(&v, param_store);
out_free:
	shs_buf_free(&v.txt[0]);
	shs_buf_free(&v.txt[1]);
	free(v.n_params);
	free(v.params);
	free(param_store);
	return rc;
}
