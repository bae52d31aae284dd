/* The function table plugins are lent: registration during init, the candidate builder during
 * generate (faults recorded per candidate, checked once the generator returns). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"

enum {
	FAULT_MAX = 256,   /* one candidate's fault text */
	GROW_MIN = 8       /* first capacity of a growing array */
};

bool shs__host_in_list(const char *const *list, const char *s)
{
	for (size_t k = 0; list && list[k]; k++)
		if (!strcmp(list[k], s))
			return true;
	return false;
}

void shs__host_prefix(const shs_pemit *out, char *buf, size_t n)
{
	snprintf(buf, n, "%s(strategy %s): %s (%s)", out->h->plugins[out->st->plugin].path,
		 out->st->s.name, out->v->instr.name, out->v->instr.opcode);
}

/* ---- Registration (during init) ---- */

static bool strategy_complete(const shs_strategy *s)
{
	return s->struct_size >= offsetof(shs_strategy, user) + sizeof(s->user) && s->name &&
	       s->generate;
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
	if (h->n_strats - reg->first >= SHS_PLUGIN_MAX_STRATEGIES) {
		shs__host_warn(h, "%s: strategy %s refused: more than %d strategies", reg->path,
			       s->name, SHS_PLUGIN_MAX_STRATEGIES);
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
			shs__host_in_list(h->strats[h->n_strats].s.opcodes,
					  shs_opcode_name((shs_opcode)op));
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

/* Warns once per generate call about a call that names no candidate of this strategy. */
static void misuse(shs_pemit *out, const char *fn, uint32_t c)
{
	char pre[SHS_ERRMSG_MAX];

	if (out->misused)
		return;
	out->misused = true;
	shs__host_prefix(out, pre, sizeof(pre));
	shs__host_warn(out->h, "%s: %s on candidate %u, which does not exist", pre, fn, c);
}

/* Candidate c of this strategy, or NULL (reported) when there is none. */
static shs_cand *cand_at(shs_pemit *out, uint32_t c, const char *fn)
{
	if (!out || out->oom)
		return NULL;
	if (c >= out->list->n - out->first) {
		if (c != SHS_PLUGIN_NO_CANDIDATE)
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
		uint32_t cap = out->cap ? out->cap * 4 : GROW_MIN;

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

/* A new candidate: its result and operand leaves copied from result and operands (every leaf
 * of each) when both are given, else replicated (every leaf's spec has its shape's rank and no
 * axes). Its specs, operand offsets and label (cut to SHS_PLUGIN_LABEL_MAX - 1 bytes) take one
 * block of the list's arena. */
static bool cand_init(const shs_pemit *out, shs_cand *c, const char *label,
		      const shs_pspec *result, const shs_pspec *operands)
{
	const shs_host_iview *v = out->v;
	size_t specs = (size_t)v->n_leaves * sizeof(shs_pspec);
	uint32_t n_ops = v->instr.n_operands;
	size_t firsts = ((size_t)n_ops + 1) * sizeof(uint32_t);
	size_t len = label ? strnlen(label, SHS_PLUGIN_LABEL_MAX - 1) : 0;
	bool given = result && operands;
	uint8_t *block = given ? shs_arena_alloc(out->list->a, specs + firsts + len + 1)
			       : shs_arena_calloc(out->list->a, 1, specs + firsts + len + 1);

	*c = (shs_cand){ .strategy = out->st->s.name,
			 .plugin = out->h->plugins[out->st->plugin].path };
	if (!block)
		return false;
	c->label = (char *)block + specs + firsts;
	if (len)
		memcpy(block + specs + firsts, label, len);
	block[specs + firsts + len] = '\0';
	c->result = (shs_pspec *)block;
	c->n_result = v->n_result;
	c->operands = c->result + v->n_result;
	c->n_operands = n_ops;
	c->operand_first = (uint32_t *)(block + specs);
	if (given) {
		memcpy(c->result, result, v->n_result * sizeof(*result));
		memcpy(c->operands, operands, (v->n_leaves - v->n_result) * sizeof(*operands));
	} else {
		for (uint32_t k = 0; k < v->n_leaves; k++)
			c->result[k].rank = v->leaf[k]->rank;
	}
	for (uint32_t k = 0; k < n_ops; k++)
		c->operand_first[k] = v->operand_first[k] - v->n_result;
	c->operand_first[n_ops] = v->n_leaves - v->n_result;
	return true;
}

/* A new candidate (cand_init); its index, or SHS_PLUGIN_NO_CANDIDATE past the limit or out of
 * memory. */
static uint32_t new_candidate(shs_pemit *out, const char *label, const shs_pspec *result,
			      const shs_pspec *operands)
{
	char pre[SHS_ERRMSG_MAX];
	shs_cand *c;

	if (!out || out->oom)
		return SHS_PLUGIN_NO_CANDIDATE;
	if (out->list->n >= out->limit) {
		if (!out->capped) {
			shs__host_prefix(out, pre, sizeof(pre));
			shs__host_warn(out->h, "%s: more than %u candidates; the rest are dropped",
				       pre, out->limit);
		}
		out->capped = true;
		return SHS_PLUGIN_NO_CANDIDATE;
	}
	if (!grow(out)) {
		out->oom = true;
		return SHS_PLUGIN_NO_CANDIDATE;
	}
	c = &out->list->v[out->list->n];
	if (!cand_init(out, c, label, result, operands)) {
		out->oom = true;
		return SHS_PLUGIN_NO_CANDIDATE;
	}
	out->faults[out->list->n - out->first] = NULL;
	return out->list->n++ - out->first;
}

static uint32_t api_candidate(shs_pemit *out, const char *label)
{
	return new_candidate(out, label, NULL, NULL);
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

static uint32_t api_add_candidate(shs_pemit *out, const char *label, const shs_pspec *result,
				  const shs_pspec *operands, double flops, double bytes)
{
	uint32_t c = new_candidate(out, label, result, operands);

	if (c == SHS_PLUGIN_NO_CANDIDATE)
		return c;
	if (!result || !operands)
		fault(out, c, "add_candidate: NULL %s", result ? "operands" : "result");
	api_set_cost(out, c, flops, bytes);
	return c;
}

static void api_add_collective(shs_pemit *out, uint32_t c, int kind, uint32_t axes_mask,
			       double bytes, bool overlappable)
{
	shs_cand *x = cand_at(out, c, "add_collective");
	shs_coll *grown;

	if (!x)
		return;
	if (x->n_colls >= SHS_PLUGIN_MAX_COLLECTIVES) {
		fault(out, c, "more than %d collectives", SHS_PLUGIN_MAX_COLLECTIVES);
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
	.add_candidate = api_add_candidate,
};

const shs_host_api *shs__host_api(void)
{
	return &host_api;
}
