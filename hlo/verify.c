/* The module verifier: structure, unique names and ids, operand and call order, cycles. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "verify_internal.h"

enum {
	DETAIL_MAX = SHS_ERRMSG_MAX /* longest message detail */
};

typedef shs__verifier verifier;

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

int shs__verify_vfail(const shs__verifier *v, const shs_computation *c, const shs_instr *i,
		      const char *fmt, va_list ap)
{
	char detail[DETAIL_MAX];

	vsnprintf(detail, sizeof(detail), fmt, ap);
	if (!c)
		return shs_seterr(v->e, SHS_EVERIFY, "module '%s': %s", or_unnamed(v->m->name),
				  detail);
	if (!i)
		return shs_seterr(v->e, SHS_EVERIFY, "computation '%s': %s", or_unnamed(c->name),
				  detail);
	return shs_seterr(v->e, SHS_EVERIFY, "computation '%s', instruction '%s': %s",
			  or_unnamed(c->name), or_unnamed(i->name), detail);
}

/* Fails with fmt's message on instruction i of c (NULL: on c; c NULL too: on the module). */
static int fail(const verifier *v, const shs_computation *c, const shs_instr *i,
		const char *fmt, ...) SHS_PRINTF(4, 5);

static int fail(const verifier *v, const shs_computation *c, const shs_instr *i,
		const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = shs__verify_vfail(v, c, i, fmt, ap);
	va_end(ap);
	return rc;
}

/* Sets v->e to SHS_ENOMEM and returns it. */
static int out_of_memory(const verifier *v)
{
	return shs_seterr(v->e, SHS_ENOMEM, "verify: out of memory");
}

/* ---- Shapes ---- */

/* Whether the layout of array shape s, when it lists dims, is a permutation of them; when not,
 * writes why into why[0..n). */
static bool layout_ok(const shs_shape *s, char *why, size_t n)
{
	const shs_i64s *mm = &s->layout->minor_to_major;
	uint64_t seen = 0; /* one bit per dim */

	if (!mm->n)
		return true;
	if (mm->n != s->rank) {
		snprintf(why, n, "the layout lists %" PRIu32 " dims for rank %" PRIu32, mm->n,
			 s->rank);
		return false;
	}
	for (uint32_t d = 0; d < mm->n; d++) {
		if (mm->v[d] < 0 || mm->v[d] >= (int64_t)s->rank || (seen >> mm->v[d] & 1)) {
			snprintf(why, n, "the layout is not a permutation of the dims");
			return false;
		}
		seen |= UINT64_C(1) << mm->v[d];
	}
	return true;
}

_Static_assert(SHS_MAX_RANK <= 64, "layout_ok keeps one bit per dim in a uint64_t");

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
	return !s->layout || layout_ok(s, why, n);
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

/* Room in g for n nodes and n_edges edges. */
static int graph_alloc(graph *g, uint32_t n, size_t n_edges)
{
	g->n = n;
	g->start = malloc(((size_t)n + 1) * sizeof(*g->start));
	g->edge = malloc((n_edges ? n_edges : 1) * sizeof(*g->edge));
	return g->start && g->edge ? SHS_OK : SHS_ENOMEM;
}

/* The operand and control edges of c (user -> operand), in-range ones only. */
static int instr_graph(const shs_computation *c, graph *g)
{
	size_t n_edges = 0, at = 0;

	for (uint32_t j = 0; j < c->n_instrs; j++)
		n_edges += (size_t)c->instrs[j]->n_operands + c->instrs[j]->n_control;
	if (graph_alloc(g, c->n_instrs, n_edges) != SHS_OK)
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

	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t j = 0; j < m->comps[c]->n_instrs; j++)
			n_edges += m->comps[c]->instrs[j]->n_called;
	if (graph_alloc(g, m->n_comps, n_edges) != SHS_OK)
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

/* Node k's name for messages: instruction k of c, or computation k of the module when c is
 * NULL. */
static const char *node_name(const verifier *v, const shs_computation *c, uint32_t k)
{
	return or_unnamed(c ? c->instrs[k]->name : v->m->comps[k]->name);
}

/* Searches g from root for a cycle and, when there is one, fails instruction i of c with the
 * names along it. The nodes are c's instructions (of_instrs: the search walks user -> operand,
 * so they print against the edges, producer first) or the module's computations (caller first).
 * Returns SHS_OK when there is no cycle, SHS_EVERIFY, or SHS_ENOMEM (not reported in v->e). */
static int report_cycle(const verifier *v, const shs_computation *c, const shs_instr *i,
			const graph *g, uint32_t root, bool of_instrs)
{
	uint32_t *cycle = malloc(((size_t)g->n + 1) * sizeof(*cycle)), n_cycle = 0;
	const shs_computation *nodes = of_instrs ? c : NULL;
	int rc = cycle ? find_cycle(g, root, cycle, &n_cycle) : SHS_ENOMEM;
	shs_buf b = { 0 };

	if (rc != SHS_OK || !n_cycle)
		goto out_free;
	shs_buf_puts(&b, of_instrs ? "cycle: " : "computations call each other: ");
	for (uint32_t k = 0; k < n_cycle; k++) {
		shs_buf_puts(&b, node_name(v, nodes, cycle[of_instrs ? n_cycle - 1 - k : k]));
		shs_buf_puts(&b, " -> ");
	}
	shs_buf_puts(&b, node_name(v, nodes, cycle[of_instrs ? n_cycle - 1 : 0]));
	rc = b.oom ? SHS_ENOMEM : fail(v, c, i, "%s", b.data);
out_free:
	shs_buf_free(&b);
	free(cycle);
	return rc;
}

/* Reports an operand or control predecessor at index op_idx >= the user's index user_idx:
 * a cycle when the graph has one reachable from the user, else a forward reference. */
static int report_forward_ref(const verifier *v, const shs_computation *c, uint32_t user_idx,
			      uint32_t op_idx, const char *what)
{
	const shs_instr *user = c->instrs[user_idx];
	graph g = { 0 };
	int rc = instr_graph(c, &g);

	if (rc == SHS_OK)
		rc = report_cycle(v, c, user, &g, user_idx, true);
	if (rc == SHS_OK)
		rc = fail(v, c, user, "%s '%s' is defined after its user", what,
			  or_unnamed(c->instrs[op_idx]->name));
	graph_free(&g);
	return rc == SHS_ENOMEM ? out_of_memory(v) : rc;
}

/* Reports a called computation at index callee >= the caller's index ci. */
static int report_late_callee(const verifier *v, uint32_t ci, const shs_instr *i, uint32_t callee)
{
	const shs_computation *c = v->m->comps[ci];
	graph g = { 0 };
	int rc;

	if (callee == ci)
		return fail(v, c, i, "calls its own computation");
	rc = call_graph(v->m, &g);
	if (rc == SHS_OK)
		rc = report_cycle(v, c, i, &g, ci, false);
	if (rc == SHS_OK)
		rc = fail(v, c, i, "called computation '%s' comes after its caller",
			  or_unnamed(v->m->comps[callee]->name));
	graph_free(&g);
	return rc == SHS_ENOMEM ? out_of_memory(v) : rc;
}

/* ---- Structure ---- */

/* Everything the later passes dereference: non-NULL computations, instructions and names,
 * and an entry in range. */
static int check_module_frame(const verifier *v)
{
	const shs_module *m = v->m;
	char why[DETAIL_MAX];

	if (!m->n_comps || !m->comps)
		return fail(v, NULL, NULL, "has no computations");
	if (m->entry >= m->n_comps)
		return fail(v, NULL, NULL, "entry computation index %" PRIu32 " is out of range (%"
			    PRIu32 " computations)", m->entry, m->n_comps);
	for (uint32_t c = 0; c < m->n_comps; c++) {
		const shs_computation *comp = m->comps[c];

		if (!comp || !comp->name)
			return fail(v, NULL, NULL, "computation %" PRIu32 " has no name", c);
		if (!comp->n_instrs || !comp->instrs)
			return fail(v, comp, NULL, "has no instructions");
		for (uint32_t j = 0; j < comp->n_instrs; j++)
			if (!comp->instrs[j] || !comp->instrs[j]->name)
				return fail(v, comp, NULL, "instruction %" PRIu32 " has no name",
					    j);
	}
	if (m->entry_layout) {
		const shs_program_shape *ps = m->entry_layout;

		for (uint32_t k = 0; k < ps->n_params; k++)
			if (!shape_ok(&ps->params[k], 0, why, sizeof(why)))
				return fail(v, NULL, NULL, "entry_computation_layout parameter %"
					    PRIu32 ": %s", k, why);
		if (!shape_ok(&ps->result, 0, why, sizeof(why)))
			return fail(v, NULL, NULL, "entry_computation_layout result: %s", why);
	}
	return SHS_OK;
}

/* How check_range names a list in its message: "<what> K is <is> X, out of range (N <units>)". */
typedef struct range_words {
	const char *what, *is, *units;
} range_words;

/* Every entry of idx[0..n), a list of instruction i of c, is below limit. */
static int check_range(const verifier *v, const shs_computation *c, const shs_instr *i,
		       const uint32_t *idx, uint32_t n, uint32_t limit, const range_words *w)
{
	for (uint32_t k = 0; k < n; k++)
		if (idx[k] >= limit)
			return fail(v, c, i, "%s %" PRIu32 " is %s %" PRIu32 ", out of range (%"
				    PRIu32 " %s)", w->what, k, w->is, idx[k], limit, w->units);
	return SHS_OK;
}

/* Indices of operands, control predecessors and callees of instruction j of computation ci. */
static int check_links(const verifier *v, uint32_t ci, uint32_t j)
{
	static const range_words operands = { "operand", "instruction", "instructions" };
	static const range_words control = { "control predecessor", "instruction", "instructions" };
	static const range_words callees = { "called computation", "index", "computations" };
	const shs_computation *c = v->m->comps[ci];
	const shs_instr *i = c->instrs[j];
	int rc;

	if ((i->n_operands && !i->operands) || (i->n_control && !i->control) ||
	    (i->n_called && !i->called))
		return fail(v, c, i, "operand, control or callee list missing");
	if ((rc = check_range(v, c, i, i->operands, i->n_operands, c->n_instrs, &operands)) ||
	    (rc = check_range(v, c, i, i->control, i->n_control, c->n_instrs, &control)))
		return rc;
	return check_range(v, c, i, i->called, i->n_called, v->m->n_comps, &callees);
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
			return fail(v, c, i, "parameter number %" PRId64 " is out of range (%"
				    PRIu32 " parameters)", num, n);
		if (store[num])
			return fail(v, c, i, "parameter number %" PRId64 " is also used by '%s'",
				    num, store[num]->name);
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
		return fail(v, c, NULL, "root index %" PRIu32 " is out of range (%" PRIu32
			    " instructions)", c->root, c->n_instrs);
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		const shs_instr *i = c->instrs[j];

		if ((unsigned)i->op >= SHS_OP_COUNT)
			return fail(v, c, i, "opcode %d is not valid", (int)i->op);
		if (!shape_ok(&i->shape, 0, why, sizeof(why)))
			return fail(v, c, i, "invalid shape: %s", why);
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

/* Equal keys go by place: computation, then instruction. */
static int cmp_place(const occurrence *x, const occurrence *y)
{
	if (x->comp != y->comp)
		return x->comp < y->comp ? -1 : 1;
	return x->instr < y->instr ? -1 : x->instr > y->instr;
}

static int cmp_by_name(const void *a, const void *b)
{
	const occurrence *x = a, *y = b;
	int d = strcmp(x->name, y->name);

	return d ? d : cmp_place(x, y);
}

static int cmp_by_id(const void *a, const void *b)
{
	const occurrence *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return cmp_place(x, y);
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
		return fail(v, m->comps[dup->comp], NULL, "computation name is used twice");
	dup = find_duplicate(occ, m->n_comps, cmp_by_id, &first);
	if (dup)
		return fail(v, m->comps[dup->comp], NULL, "id %" PRId64
			    " is also the id of computation '%s'", dup->id,
			    m->comps[first->comp]->name);
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
		return fail(v, m->comps[dup->comp], m->comps[dup->comp]->instrs[dup->instr],
			    "name is also used in computation '%s'", m->comps[first->comp]->name);
	dup = find_duplicate(occ, n, cmp_by_id, &first);
	if (dup)
		return fail(v, m->comps[dup->comp], m->comps[dup->comp]->instrs[dup->instr], "id %"
			    PRId64 " is also the id of '%s' in computation '%s'", dup->id,
			    m->comps[first->comp]->instrs[first->instr]->name,
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
		return out_of_memory(v);
	rc = check_comp_unique(v, occ);
	if (rc == SHS_OK)
		rc = check_instr_unique(v, occ, n);
	free(occ);
	return rc;
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
			rc = shs__verify_instr_shape(v, m->comps[c], m->comps[c]->instrs[j]);
			if (rc == SHS_OK)
				rc = shs__verify_instr_attrs(v, m->comps[c], m->comps[c]->instrs[j]);
		}
	}
	return rc == SHS_OK ? shs__verify_entry_layout(v) : rc;
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
	if (n_instrs > SHS_MAX_INSTRS)
		return shs_seterr(e, SHS_EUNSUPPORTED, "%zu instructions, over the %d a module may "
				  "hold here", n_instrs, SHS_MAX_INSTRS);
	param_store = calloc(n_instrs, sizeof(*param_store));
	v.params = calloc(m->n_comps, sizeof(*v.params));
	v.n_params = calloc(m->n_comps, sizeof(*v.n_params));
	if (!param_store || !v.params || !v.n_params) {
		rc = out_of_memory(&v);
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
