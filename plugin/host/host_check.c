/* The host's function table for plugins, and the checked candidate lists it builds for them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "host_internal.h"

enum {
	FAULT_MAX = 256,   /* one candidate's fault text */
	WHERE_MAX = 64,    /* "operand 12 leaf 3" */
	AXES_TEXT_MAX = 96, /* "fsdp,tensor" */
	GROW_MIN = 8,       /* first capacity of a growing array */
	CANDS_CHUNK = 4096  /* block size of a candidate list's arena */
};

/* Kinds of instructions warned about once. */
enum { SEEN_UNSERVED = 1, SEEN_TOO_LARGE = 2 };

/* A candidate list being filled by one strategy's generator. Candidates [first, list->n) are
 * this strategy's; faults[k - first] is the first misuse found in candidate k, or NULL. */
struct shs_pemit {
	shs_host *h;
	const shs_host_strat *st;
	const shs_host_iview *v;
	const shs_pmesh *mesh;
	shs_cands *list;
	uint32_t cap;       /* room in list->v */
	uint32_t limit;     /* candidates kept for this instruction */
	uint32_t first;
	char **faults;
	uint32_t cap_faults;
	bool capped, oom, failed, misused;
	char fail_msg[SHS_HOST_MSG_MAX];
};

/* ---- Registration (during init) ---- */

static bool strategy_complete(const shs_strategy *s)
{
	return s->struct_size >= offsetof(shs_strategy, user) + sizeof(s->user) && s->name &&
	       s->generate;
}

static bool in_list(const char *const *list, const char *s)
{
	for (size_t k = 0; list && list[k]; k++)
		if (!strcmp(list[k], s))
			return true;
	return false;
}

static int register_strategy(shs_registry *reg, const shs_strategy *s)
{
	shs_host *h = reg ? reg->h : NULL;
	shs_host_strat *grown;
	uint32_t cap;

	if (!h || !reg->open)
		return -1;
	if (!s || !strategy_complete(s)) {
		shs__host_warn(h, "%s: strategy %s refused: %s", reg->path,
			       s && s->name && s->struct_size > offsetof(shs_strategy, name) ?
				       s->name : "(unnamed)",
			       !s ? "NULL descriptor" : "no name or generate function");
		return -1;
	}
	if (h->n_strats == h->cap_strats) {
		cap = h->cap_strats ? h->cap_strats * 2 : GROW_MIN;
		grown = realloc(h->strats, cap * sizeof(*grown));
		if (!grown)
			return -1;
		h->strats = grown;
		h->cap_strats = cap;
	}
	h->strats[h->n_strats] = (shs_host_strat){ .plugin = reg->plugin };
	memcpy(&h->strats[h->n_strats].s, s, sizeof(*s) < s->struct_size ? sizeof(*s) :
									  s->struct_size);
	h->strats[h->n_strats].s.struct_size = sizeof(*s);
	for (int op = 0; op < SHS_OP_COUNT; op++)
		h->strats[h->n_strats].by_op[op] =
			in_list(h->strats[h->n_strats].s.opcodes, shs_opcode_name((shs_opcode)op));
	h->n_strats++;
	return 0;
}

static void set_error(shs_registry *reg, const char *fmt, ...)
{
	va_list ap;

	if (!reg || !reg->open || !fmt)
		return;
	va_start(ap, fmt);
	vsnprintf(reg->err, sizeof(reg->err), fmt, ap);
	va_end(ap);
	reg->has_err = true;
}

/* ---- Building candidates (during generate) ---- */

/* "PLUGIN(strategy NAME): INSTR (opcode)" into buf. */
static void prefix(const shs_pemit *out, char *buf, size_t n)
{
	snprintf(buf, n, "%s(strategy %s): %s (%s)", out->h->plugins[out->st->plugin].path,
		 out->st->s.name, out->v->instr.name, out->v->instr.opcode);
}

/* Warns once per generate call about a call that names no candidate of this strategy. */
static void misuse(shs_pemit *out, const char *fn, uint32_t c)
{
	char pre[SHS_ERRMSG_MAX];

	if (out->misused)
		return;
	out->misused = true;
	prefix(out, pre, sizeof(pre));
	shs__host_warn(out->h, "%s: %s on candidate %u, which does not exist", pre, fn, c);
}

/* Candidate c of this strategy, or NULL (reported) when there is none. */
static shs_cand *cand_at(shs_pemit *out, uint32_t c, const char *fn)
{
	if (!out || out->oom)
		return NULL;
	if (c >= out->list->n - out->first) {
		if (c != UINT32_MAX) /* what candidate() returns past the cap */
			misuse(out, fn, c);
		return NULL;
	}
	return &out->list->v[out->first + c];
}

/* Records the first fault of candidate c (later ones are consequences or noise). */
static void fault(shs_pemit *out, uint32_t c, const char *fmt, ...) SHS_PRINTF(3, 4);
static void fault(shs_pemit *out, uint32_t c, const char *fmt, ...)
{
	char **slot = &out->faults[c];
	va_list ap;

	if (*slot)
		return;
	*slot = malloc(FAULT_MAX);
	if (!*slot) {
		out->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(*slot, FAULT_MAX, fmt, ap);
	va_end(ap);
}

/* A copy of the n elements of size bytes at old in a new array of cap from arena a (the old
 * one stays in the arena: growing by doubling keeps the waste under the final size). */
static void *grow_array(shs_arena *a, const void *old, uint32_t n, uint32_t cap, size_t size)
{
	void *grown = shs_arena_alloc(a, (size_t)cap * size);

	if (grown && n)
		memcpy(grown, old, (size_t)n * size);
	return grown;
}

static bool grow(shs_pemit *out)
{
	uint32_t mine = out->list->n - out->first;
	shs_cand *v;
	char **f;

	if (out->list->n == out->cap) {
		uint32_t cap = out->cap ? out->cap * 2 : GROW_MIN;

		v = grow_array(out->list->a, out->list->v, out->list->n, cap, sizeof(*v));
		if (!v)
			return false;
		out->list->v = v;
		out->cap = cap;
	}
	if (mine == out->cap_faults) {
		uint32_t cap = out->cap_faults ? out->cap_faults * 2 : GROW_MIN;

		f = grow_array(out->list->a, out->faults, mine, cap, sizeof(*f));
		if (!f)
			return false;
		out->faults = f;
		out->cap_faults = cap;
	}
	return true;
}

/* A replicated candidate: every leaf's spec has its shape's rank and no axes. */
static bool cand_init(const shs_pemit *out, shs_cand *c, const char *label)
{
	const shs_host_iview *v = out->v;
	size_t specs = (size_t)v->n_leaves * sizeof(shs_pspec);
	uint32_t n_ops = v->instr.n_operands;
	uint8_t *block = shs_arena_calloc(out->list->a, 1,
					  specs + ((size_t)n_ops + 1) * sizeof(uint32_t));

	*c = (shs_cand){ .strategy = out->st->s.name,
			 .plugin = out->h->plugins[out->st->plugin].path };
	if (!block)
		return false;
	shs_str_copy(c->label, sizeof(c->label), label ? label : "");
	c->result = (shs_pspec *)block;
	c->n_result = v->n_result;
	c->operands = c->result + v->n_result;
	c->n_operands = n_ops;
	c->operand_first = (uint32_t *)(block + specs);
	for (uint32_t k = 0; k < v->n_leaves; k++)
		c->result[k].rank = v->leaf[k]->rank;
	for (uint32_t k = 0; k < n_ops; k++)
		c->operand_first[k] = v->operand_first[k] - v->n_result;
	c->operand_first[n_ops] = v->n_leaves - v->n_result;
	return true;
}

static uint32_t api_candidate(shs_pemit *out, const char *label)
{
	char pre[SHS_ERRMSG_MAX];
	shs_cand *c;

	if (!out || out->oom)
		return UINT32_MAX;
	if (out->list->n >= out->limit) {
		if (!out->capped) {
			prefix(out, pre, sizeof(pre));
			shs__host_warn(out->h, "%s: more than %u candidates; the rest are dropped",
				       pre, out->limit);
		}
		out->capped = true;
		return UINT32_MAX;
	}
	if (!grow(out)) {
		out->oom = true;
		return UINT32_MAX;
	}
	c = &out->list->v[out->list->n];
	if (!cand_init(out, c, label)) {
		out->oom = true;
		return UINT32_MAX;
	}
	out->faults[out->list->n - out->first] = NULL;
	return out->list->n++ - out->first;
}

static void api_set_result(shs_pemit *out, uint32_t c, uint32_t leaf, const shs_pspec *spec)
{
	shs_cand *x = cand_at(out, c, "set_result");

	if (!x)
		return;
	if (leaf >= x->n_result)
		fault(out, c, "set_result leaf %u, the result has %u leaves", leaf, x->n_result);
	else if (!spec)
		fault(out, c, "set_result leaf %u: NULL spec", leaf);
	else
		x->result[leaf] = *spec;
}

static void api_set_operand(shs_pemit *out, uint32_t c, uint32_t operand, uint32_t leaf,
			    const shs_pspec *spec)
{
	shs_cand *x = cand_at(out, c, "set_operand");
	uint32_t end;

	if (!x)
		return;
	if (operand >= x->n_operands) {
		fault(out, c, "set_operand operand %u, the instruction has %u operands", operand,
		      x->n_operands);
		return;
	}
	end = operand + 1 < x->n_operands ? x->operand_first[operand + 1] :
					    out->v->n_leaves - out->v->n_result;
	if (leaf >= end - x->operand_first[operand])
		fault(out, c, "set_operand operand %u leaf %u, the operand has %u leaves", operand,
		      leaf, end - x->operand_first[operand]);
	else if (!spec)
		fault(out, c, "set_operand operand %u leaf %u: NULL spec", operand, leaf);
	else
		x->operands[x->operand_first[operand] + leaf] = *spec;
}

static void api_set_cost(shs_pemit *out, uint32_t c, double flops, double bytes)
{
	shs_cand *x = cand_at(out, c, "set_cost");

	if (!x)
		return;
	if (!isfinite(flops) || !isfinite(bytes) || flops < 0 || bytes < 0)
		fault(out, c, "cost flops %g bytes %g: not a finite count >= 0", flops, bytes);
	x->flops = flops;
	x->bytes = bytes;
}

static void api_add_collective(shs_pemit *out, uint32_t c, int kind, uint32_t axes_mask,
			       double bytes, bool overlappable)
{
	shs_cand *x = cand_at(out, c, "add_collective");
	shs_coll *grown;

	if (!x)
		return;
	if (x->n_colls >= SHS_HOST_MAX_COLLS) {
		fault(out, c, "more than %d collectives", SHS_HOST_MAX_COLLS);
		return;
	}
	/* a candidate has a few collectives at most: the arena keeps the shorter copies */
	grown = shs_arena_alloc(out->list->a, (x->n_colls + 1u) * sizeof(*grown));
	if (!grown) {
		out->oom = true;
		return;
	}
	if (x->n_colls)
		memcpy(grown, x->colls, x->n_colls * sizeof(*grown));
	x->colls = grown;
	x->colls[x->n_colls++] = (shs_coll){ kind, axes_mask, bytes, overlappable };
}

static void api_fail(shs_pemit *out, const char *fmt, ...)
{
	va_list ap;

	if (!out || out->failed)
		return;
	out->failed = true;
	if (!fmt) {
		snprintf(out->fail_msg, sizeof(out->fail_msg), "no reason given");
		return;
	}
	va_start(ap, fmt);
	vsnprintf(out->fail_msg, sizeof(out->fail_msg), fmt, ap);
	va_end(ap);
}

static int api_elem_bytes(int32_t type)
{
	return shs_elem_bytes(type);
}

static const shs_host_api host_api = {
	.struct_size = sizeof(shs_host_api),
	.abi_version = SHS_PLUGIN_ABI_VERSION,
	.register_strategy = register_strategy,
	.set_error = set_error,
	.candidate = api_candidate,
	.set_result = api_set_result,
	.set_operand = api_set_operand,
	.set_cost = api_set_cost,
	.add_collective = api_add_collective,
	.fail = api_fail,
	.leaves = shs__pshape_leaves,
	.elem_bytes = api_elem_bytes,
};

const shs_host_api *shs__host_api(void)
{
	return &host_api;
}

/* ---- Checks ---- */

/* "result", "result leaf 2", "operand 1", "operand 1 leaf 0" for leaf k of the candidate. */
static void where(const shs_host_iview *v, uint32_t k, bool always_leaf, char *buf, size_t n)
{
	uint32_t op = 0, first = 0, count = v->n_result;

	if (k >= v->n_result) {
		while (op + 1 < v->instr.n_operands && v->operand_first[op + 1] <= k)
			op++;
		first = v->operand_first[op];
		count = (op + 1 < v->instr.n_operands ? v->operand_first[op + 1] : v->n_leaves) -
			first;
	}
	if (k < v->n_result)
		snprintf(buf, n, "result");
	else
		snprintf(buf, n, "operand %u", op);
	if (always_leaf || count != 1)
		snprintf(buf + strlen(buf), n - strlen(buf), " leaf %u", k - first);
}

static void axes_text(const shs_pmesh *mesh, const shs_pdim *dim, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (uint32_t j = 0; j < dim->n && len < n; j++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", j ? "," : "",
					mesh->names[dim->axes[j]]);
}

/* The axes of spec s (leaf k of v) exist and none repeats; writes the fault to msg when
 * not. */
static bool check_axes(const shs_host_iview *v, uint32_t k, const shs_pmesh *mesh,
		       const shs_pspec *s, char *msg, size_t n)
{
	char at[WHERE_MAX];
	uint32_t used = 0;

	for (uint32_t d = 0; d < s->rank; d++) {
		const shs_pdim *dim = &s->dims[d];

		if (dim->n > SHS_PLUGIN_MAX_AXES) {
			where(v, k, false, at, sizeof(at));
			snprintf(msg, n, "%s dim %u lists %u axes, at most %d", at, d, dim->n,
				 SHS_PLUGIN_MAX_AXES);
			return false;
		}
		for (uint32_t j = 0; j < dim->n; j++) {
			uint8_t x = dim->axes[j];

			if (x >= mesh->n_axes) {
				where(v, k, false, at, sizeof(at));
				snprintf(msg, n,
					 "%s dim %u: axis index %u but the mesh has %u axes", at,
					 d, x, mesh->n_axes);
				return false;
			}
			if (used & (1u << x)) {
				where(v, k, false, at, sizeof(at));
				snprintf(msg, n, "%s uses axis '%s' twice", at, mesh->names[x]);
				return false;
			}
			used |= 1u << x;
		}
	}
	return true;
}

/* The product of a dim's axis sizes, or -1 when not a positive int64. */
static int64_t axes_product(const shs_pmesh *mesh, const shs_pdim *dim)
{
	int64_t prod = 1;

	for (uint32_t j = 0; j < dim->n; j++)
		if (mesh->sizes[dim->axes[j]] < 1 ||
		    __builtin_mul_overflow(prod, mesh->sizes[dim->axes[j]], &prod))
			return -1;
	return prod;
}

/* Checks one spec against its leaf; writes the fault to msg and returns false when bad. */
static bool check_spec(const shs_host_iview *v, const shs_pmesh *mesh, uint32_t k,
		       const shs_pspec *s, char *msg, size_t n)
{
	const shs_pshape *leaf = v->leaf[k];
	char at[WHERE_MAX], axes[AXES_TEXT_MAX];

	if (s->rank != leaf->rank) {
		where(v, k, true, at, sizeof(at));
		snprintf(msg, n, "%s has rank %u, the shape has rank %u", at, s->rank, leaf->rank);
		return false;
	}
	if (!check_axes(v, k, mesh, s, msg, n))
		return false;
	for (uint32_t d = 0; d < s->rank && !s->padded; d++) {
		int64_t prod = axes_product(mesh, &s->dims[d]);

		if (s->dims[d].n && (prod < 1 || leaf->dims[d] % prod)) {
			where(v, k, false, at, sizeof(at));
			axes_text(mesh, &s->dims[d], axes, sizeof(axes));
			snprintf(msg, n, "%s dim %u (size %lld) does not divide by %lld (%s)",
				 at, d, (long long)leaf->dims[d], (long long)prod, axes);
			return false;
		}
	}
	return true;
}

static bool check_colls(const shs_cand *c, const shs_pmesh *mesh, char *msg, size_t n)
{
	uint32_t valid = mesh->n_axes >= 32 ? UINT32_MAX : (1u << mesh->n_axes) - 1u;

	for (uint32_t k = 0; k < c->n_colls; k++) {
		const shs_coll *x = &c->colls[k];

		if (x->kind < SHS_PCOLL_ALL_REDUCE || x->kind > SHS_PCOLL_ALL_TO_ALL) {
			snprintf(msg, n, "collective %u has kind %d", k, x->kind);
			return false;
		}
		if (!x->axes_mask || (x->axes_mask & ~valid)) {
			snprintf(msg, n, "collective %u: axes mask 0x%x but the mesh has %u axes",
				 k, x->axes_mask, mesh->n_axes);
			return false;
		}
		if (!isfinite(x->bytes) || x->bytes < 0) {
			snprintf(msg, n, "collective %u: %g bytes", k, x->bytes);
			return false;
		}
	}
	return true;
}

/* Whether candidate c is valid; writes the fault to msg when not. */
static bool check_cand(const shs_pemit *out, const shs_cand *c, const char *recorded,
		       char *msg, size_t n)
{
	if (recorded) {
		snprintf(msg, n, "%s", recorded);
		return false;
	}
	for (uint32_t k = 0; k < out->v->n_leaves; k++)
		if (!check_spec(out->v, out->mesh, k, &c->result[k], msg, n))
			return false;
	return check_colls(c, out->mesh, msg, n);
}

/* Keeps this strategy's valid candidates (in order) and reports the others. */
static void check_strategy(shs_pemit *out)
{
	char pre[SHS_ERRMSG_MAX], msg[SHS_ERRMSG_MAX];
	uint32_t keep = out->first;

	for (uint32_t k = out->first; k < out->list->n; k++) {
		shs_cand *c = &out->list->v[k];
		char **rec = &out->faults[k - out->first];

		if (check_cand(out, c, *rec, msg, sizeof(msg))) {
			out->list->v[keep++] = *c;
		} else {
			prefix(out, pre, sizeof(pre));
			shs__host_warn(out->h, "%s: candidate '%s': %s", pre, c->label, msg);
		}
		free(*rec);
		*rec = NULL;
	}
	out->list->n = keep;
}

/* Drops every candidate of this strategy: its generator failed. */
static void drop_strategy(shs_pemit *out)
{
	char pre[SHS_ERRMSG_MAX];
	uint32_t n = out->list->n - out->first;

	prefix(out, pre, sizeof(pre));
	shs__host_warn(out->h, "%s: generator failed: %s (%u candidates dropped)", pre,
		       out->failed ? out->fail_msg : "no reason given", n);
	for (uint32_t k = out->first; k < out->list->n; k++) {
		free(out->faults[k - out->first]);
		out->faults[k - out->first] = NULL;
	}
	out->list->n = out->first;
}

/* ---- Asking the strategies ---- */

static bool serves(const shs_host_strat *st, shs_opcode op, const shs_pinstr *i)
{
	const shs_strategy *s = &st->s;

	if (op < SHS_OP_COUNT && st->by_op[op])
		return true;
	if (op == SHS_OP_CUSTOM_CALL && in_list(s->custom_call_targets, i->custom_call_target))
		return true;
	return s->match && s->match(i, s->user);
}

/* Runs strategy st's generator and keeps its checked candidates. */
static void run_strategy(shs_pemit *out, const shs_host_strat *st, const shs_pquery *q)
{
	int rc;

	out->st = st;
	out->first = out->list->n;
	out->failed = out->misused = false;
	rc = st->s.generate(q, out, shs__host_api(), st->s.user);
	if (out->oom)
		return;
	if (rc != 0 || out->failed)
		drop_strategy(out);
	else
		check_strategy(out);
}

/* The candidates cap for an instruction with n_leaves leaves per candidate. */
static uint32_t cand_limit(uint32_t n_leaves)
{
	uint32_t by_specs = n_leaves ? SHS_HOST_SPEC_BUDGET / n_leaves : SHS_HOST_MAX_CANDS;

	if (by_specs < 1)
		by_specs = 1;
	return by_specs < SHS_HOST_MAX_CANDS ? by_specs : SHS_HOST_MAX_CANDS;
}

static int ask(shs_host *h, shs_opcode op, const shs_host_iview *v, const shs_pquery *q,
	       shs_cands *out, shs_err *e)
{
	shs_pemit em = { .h = h, .v = v, .mesh = q->mesh, .list = out,
			 .limit = cand_limit(v->n_leaves) };
	int rc = SHS_OK;

	for (uint32_t k = 0; k < h->n_strats && !em.oom; k++) {
		if (!serves(&h->strats[k], op, &v->instr))
			continue;
		out->served = true;
		run_strategy(&em, &h->strats[k], q);
	}
	if (em.oom) {
		for (uint32_t k = em.first; k < out->n && em.faults; k++)
			free(em.faults[k - em.first]);
		rc = shs_seterr(e, SHS_ENOMEM, "%s: candidates: out of memory", v->instr.name);
	}
	return rc;
}

/* Not served: too large for the ABI, or no strategy. Warns once per instruction. */
static void unserved(shs_host *h, const shs_module *m, const shs_computation *c,
		     const shs_instr *i, const shs_host_iview *v, int why, const char *reason)
{
	if (shs__host_first_time(h, m, c, i, why))
		shs__host_warn(h, "%s (%s): %s; replicated", v->instr.name, v->instr.opcode,
			       reason);
}

static int build_query(shs_arena *a, const shs_instr *i, const shs_host_iview *v,
		       const shs_host_query *hq, shs_mesh_view *mv, shs_pquery *q)
{
	const shs_pspec **none;
	uint32_t n = v->instr.n_operands > i->n_called ? v->instr.n_operands : i->n_called;

	none = shs_arena_calloc(a, n + 1u, sizeof(*none));
	if (!none)
		return SHS_ENOMEM;
	shs_host_mesh_view(hq->mesh, mv);
	*q = (shs_pquery){
		.struct_size = sizeof(*q),
		.instr = &v->instr,
		.mesh = &mv->view,
		.mode = hq->mode,
		.hints = hq->hints ? hq->hints : none,
		.result_hint = hq->result_hint,
		.n_called = hq->called_roots ? hq->n_called : i->n_called,
		.called_roots = hq->called_roots ? hq->called_roots : none,
	};
	if (!q->result_hint && hq->use_annotation)
		q->result_hint = shs__host_annotation_hint(a, i, v, hq->mesh);
	return SHS_OK;
}

int shs_host_candidates_q(shs_host *h, const shs_module *m, const shs_computation *c,
			   const shs_instr *i, const shs_host_query *hq, shs_cands *out,
			   shs_err *e)
{
	const shs_host_iview *kept = shs__host_views_get(hq ? hq->views : NULL, hq ? hq->comp : 0,
							 hq ? hq->instr : 0);
	shs_err why; /* asked hundreds of thousands of times: only its head is cleared */
	shs_mesh_view mv;
	shs_host_iview v;
	shs_pquery q;
	shs_arena *a;
	int rc;

	why.code = SHS_OK;
	why.msg[0] = '\0';
	if (out)
		*out = (shs_cands){ .a = hq ? hq->arena : NULL }; /* the caller's, taken */
	else if (hq)
		shs_arena_free(hq->arena);
	if (!h || !c || !i || !hq || !hq->mesh || !out)
		return shs_seterr(e, SHS_EINVAL, "shs_host_candidates: NULL argument");
	if (hq->mode != SHS_PMODE_PROPAGATE && hq->mode != SHS_PMODE_ENUMERATE)
		return shs_seterr(e, SHS_EINVAL, "%s: unknown mode %d", i->name, hq->mode);
	a = out->a = out->a ? out->a : shs_arena_new(0);
	if (!a)
		return shs_seterr(e, SHS_ENOMEM, "%s: out of memory", i->name);
	shs_arena_set_chunk(a, CANDS_CHUNK);
	if (kept)
		v = *kept;
	rc = kept ? SHS_OK : shs__host_view(a, c, i, &v, &why);
	if (rc == SHS_EINVAL) {
		if (shs__host_first_time(h, m, c, i, SEEN_TOO_LARGE))
			shs__host_warn(h, "%s (%s): %s; replicated", i->name ? i->name : "?",
				       shs_opcode_name(i->op), why.msg);
		rc = SHS_OK;
		goto out_free;
	}
	if (rc != SHS_OK) {
		rc = shs_seterr(e, rc, "%s", why.msg);
		goto out_free;
	}
	if (v.max_rank > SHS_PLUGIN_MAX_RANK) {
		snprintf(why.msg, sizeof(why.msg), "rank %u, over the %d dims strategies handle",
			 v.max_rank, SHS_PLUGIN_MAX_RANK);
		unserved(h, m, c, i, &v, SEEN_TOO_LARGE, why.msg);
		goto out_free;
	}
	rc = build_query(a, i, &v, hq, &mv, &q);
	if (rc != SHS_OK) {
		rc = shs_seterr(e, rc, "%s: out of memory", i->name);
		goto out_free;
	}
	rc = ask(h, i->op, &v, &q, out, e);
	if (rc == SHS_OK && !out->served)
		unserved(h, m, c, i, &v, SEEN_UNSERVED, "no strategy");
out_free:
	if (rc != SHS_OK || !out->n) {
		bool served = out->served;
		shs_cands_free(out);
		out->served = served && rc == SHS_OK;
	}
	return rc;
}

int shs_host_candidates(shs_host *h, const shs_module *m, const shs_computation *c,
			const shs_instr *i, const shs_mesh *mesh, const shs_pspec *const *hints,
			const shs_pspec *result_hint, int mode, shs_cands *out, shs_err *e)
{
	shs_host_query q = { .mesh = mesh, .mode = mode, .hints = hints,
			     .result_hint = result_hint };

	return shs_host_candidates_q(h, m, c, i, &q, out, e);
}

void shs_cands_free(shs_cands *c)
{
	if (!c)
		return;
	shs_arena_free(c->a);
	*c = (shs_cands){ 0 };
}
