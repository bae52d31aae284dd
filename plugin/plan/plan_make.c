/* Making a plan: the per-instruction state, seeds and hints, then propagation passes. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "propagate_internal.h"
#include "sdy.h"

enum { MAX_PASSES = 8, MAX_SOURCE_HOPS = 8 };

static int oom(shs_err *e)
{
	return shs_seterr(e, SHS_ENOMEM, "plan: out of memory");
}

static int alloc_plan(const shs_module *m, const shs_plan_request *r, shs_plan **out, shs_err *e)
{
	shs_plan *p = calloc(1, sizeof(*p));

	if (!p)
		return oom(e);
	*out = p;
	p->mesh = r->mesh;
	memcpy(p->axis_names, r->axis_names, sizeof(p->axis_names));
	for (uint32_t k = 0; k < p->mesh.n_axes; k++)
		p->mesh.names[k] = p->axis_names[k];
	p->n_comps = m->n_comps;
	p->n_instrs = calloc(m->n_comps + 1, sizeof(*p->n_instrs));
	p->d = calloc(m->n_comps + 1, sizeof(*p->d));
	p->arena = shs_arena_new(0);
	if (!p->n_instrs || !p->d || !p->arena)
		return oom(e);
	for (uint32_t c = 0; c < m->n_comps; c++) {
		const shs_computation *comp = m->comps[c];
		p->d[c] = calloc(comp->n_instrs + 1, sizeof(*p->d[c]));
		if (!p->d[c])
			return oom(e);
		p->n_instrs[c] = comp->n_instrs;
		for (uint32_t i = 0; i < comp->n_instrs; i++) {
			shs_decision *d = &p->d[c][i];
			d->n_leaves = shs_shape_leaves(&comp->instrs[i]->shape);
			d->leaves_cap = d->n_leaves;
			d->leaves = shs_arena_calloc(p->arena, d->n_leaves ? d->n_leaves : 1,
						     sizeof(shs_pspec));
			if (!d->leaves)
				return oom(e);
		}
	}
	return SHS_OK;
}

/* Constants, iotas, and broadcasts / converts / reshapes / copies of them. */
static bool is_free(const shs_computation *c, const bool *free_instr, uint32_t i)
{
	const shs_instr *in = c->instrs[i];

	if (in->op == SHS_OP_CONSTANT || in->op == SHS_OP_IOTA)
		return in->shape.type != SHS_TUPLE;
	if (in->op != SHS_OP_BROADCAST && in->op != SHS_OP_CONVERT && in->op != SHS_OP_RESHAPE &&
	    in->op != SHS_OP_COPY)
		return false;
	for (uint32_t k = 0; k < in->n_operands; k++)
		if (!free_instr[in->operands[k]])
			return false;
	return true;
}

static void warn(const shs_plan_request *r, const char *msg)
{
	if (r->warn)
		r->warn(r->warn_user, msg);
}

bool shs__hint_room(shs__prop *x, uint32_t c)
{
	uint32_t n = x->m->comps[c]->n_instrs;

	if (!x->hints[c]) {
		x->hints[c] = calloc(n, sizeof(*x->hints[c]));
		x->hint_set[c] = calloc(n, sizeof(*x->hint_set[c]));
		x->pinned[c] = calloc(n, sizeof(*x->pinned[c]));
	}
	return x->hints[c] && x->hint_set[c] && x->pinned[c];
}

/* The plan's activation rules: each instruction of c but the entry's parameters (seeded) and
 * tuples whose path matches a rule of its rank, the first, is pinned to the rule's spec when
 * that fits (else a warning); matched[k] notes rule k matched. A path is an op_name (scopes
 * separated by '/'), matched as a path: '*' stays within one scope, so a rule names the
 * scope it means ("train_step/layers*" + "/add" is each layer's own add, not one nested in
 * its attention). */
static int collect_pins(shs__prop *x, uint32_t c, bool *matched, shs_err *e)
{
	const shs_computation *comp = x->m->comps[c];
	char path[SHS_PATH_CAP];
	bool any = false;

	for (uint32_t k = 0; k < x->r->n_rules; k++)
		any |= x->r->rules[k].activation;
	for (uint32_t i = 0; any && i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		if (in->shape.type == SHS_TUPLE ||
		    (c == x->m->entry && in->op == SHS_OP_PARAMETER))
			continue;
		shs_param_path(in, path, sizeof(path));
		for (uint32_t k = 0; k < x->r->n_rules; k++) {
			const shs_plan_rule *rule = &x->r->rules[k];
			shs_pspec want = rule->spec;
			char msg[SHS_ERRMSG_MAX];
			if (!rule->activation || want.rank != in->shape.rank ||
			    fnmatch(rule->pattern, path, FNM_PATHNAME))
				continue;
			matched[k] = true;
			shs_spec_mark_padded(&want, &in->shape, &x->r->mesh);
			if (shs__spec_fits(&want, &in->shape, &x->r->mesh)) {
				if (!shs__hint_room(x, c))
					return oom(e);
				x->hints[c][i] = want;
				x->hint_set[c][i] = x->pinned[c][i] = true;
			} else {
				snprintf(msg, sizeof(msg), "activation rule '%s' does not fit %s "
					 "(sizes); ignored", rule->pattern, in->name);
				warn(x->r, msg);
			}
			break;
		}
	}
	return SHS_OK;
}

/* What makes in's value, through conversions, copies and reshapes. */
static const shs_instr *source_of(const shs_computation *comp, const shs_instr *in)
{
	for (uint32_t hops = 0; hops < MAX_SOURCE_HOPS && in->n_operands == 1 &&
			       (in->op == SHS_OP_CONVERT || in->op == SHS_OP_COPY ||
				in->op == SHS_OP_BITCAST || in->op == SHS_OP_RESHAPE);
	     hops++)
		in = comp->instrs[in->operands[0]];
	return in;
}

/* Table lookups by tokens (embeddings): a gather of a weight's rows at integer indices, the
 * weight an entry parameter (through conversions) or, in a loop body (micro-batches), the
 * lookup named as the vocabulary's. The result dims beside the row are the indices' and are
 * pinned to the plan's sharding of tokens of the indices' shape, as frameworks split an
 * embedding: MaxText constrains its output to (activation_batch, activation_length,
 * activation_embed), FSDP gathers the table before the lookup, Megatron splits it by the
 * batch. Left to itself the propagation follows the table's FSDP split of d_model (free at
 * the lookup) and every layer's matmuls then gather their activations (the book's 70B on
 * fsdp=1120,tensor=8: 11 s a step against 0.59 s). An activation rule or a hint on the lookup
 * comes first. */
static int pin_lookups(shs__prop *x, uint32_t c, shs_err *e)
{
	const shs_computation *comp = x->m->comps[c];
	char path[SHS_PATH_CAP];

	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i], *table, *idx;
		shs_pspec tokens, want = { .rank = in->shape.rank };
		uint32_t k = 0, axes = 0;
		if (in->op != SHS_OP_GATHER || !in->gather || in->n_operands != 2 ||
		    in->shape.type == SHS_TUPLE || (x->hint_set[c] && x->hint_set[c][i]))
			continue;
		table = source_of(comp, comp->instrs[in->operands[0]]);
		idx = comp->instrs[in->operands[1]];
		shs_param_path(in, path, sizeof(path));
		if (!shs_elem_is_float(table->shape.type) || idx->shape.type == SHS_TUPLE ||
		    shs_elem_is_float(idx->shape.type) ||
		    !(c == x->m->entry ? table->op == SHS_OP_PARAMETER : shs__path_is_vocab(path)))
			continue;
		shs__seed_tokens(x->r, &idx->shape, &tokens);
		for (uint32_t d = 0; d < in->shape.rank; d++) {
			bool offset = false;
			for (uint32_t j = 0; j < in->gather->offset_dims.n; j++)
				offset |= in->gather->offset_dims.v[j] == (int64_t)d;
			if (offset)
				continue;
			if ((int64_t)k == in->gather->index_vector_dim)
				k++;
			if (k >= idx->shape.rank)
				break;
			want.dims[d] = tokens.dims[k++];
			axes += want.dims[d].n;
		}
		shs_spec_mark_padded(&want, &in->shape, &x->r->mesh);
		if (!axes || !shs__spec_fits(&want, &in->shape, &x->r->mesh))
			continue;
		if (!shs__hint_room(x, c))
			return oom(e);
		x->hints[c][i] = want;
		x->hint_set[c][i] = x->pinned[c][i] = true;
	}
	return SHS_OK;
}

/* The sharding a constraint custom call holds: XLA's Sharding (its sharding) or Shardy's
 * xla.sdy.ShardingConstraint (its xla.sdy.sharding attribute); NULL for any other. */
static const shs_sharding *constraint(const shs__prop *x, const shs_instr *in)
{
	shs_sharding *s = NULL;
	shs_err why = { 0 };

	if (in->op != SHS_OP_CUSTOM_CALL || !in->custom_call_target)
		return NULL;
	if (!strcmp(in->custom_call_target, "Sharding"))
		return in->sharding;
	if (strcmp(in->custom_call_target, "xla.sdy.ShardingConstraint"))
		return NULL;
	if (shs_stated_sharding(x->m, in, x->p->arena, &s, &why) != SHS_OK)
		warn(x->r, why.msg);
	return s;
}

/* The module's Sharding custom-call hints that fit the mesh. */
static int collect_hints(shs__prop *x, uint32_t c, shs_err *e)
{
	const shs_computation *comp = x->m->comps[c];

	for (uint32_t i = 0; i < comp->n_instrs; i++) {
		const shs_instr *in = comp->instrs[i];
		char msg[SHS_ERRMSG_MAX + 128];
		const shs_sharding *s = shs_manual_is(&x->manual, c, i) ? NULL : constraint(x, in);
		if (x->r->ignore_hints || !s || in->shape.type == SHS_TUPLE)
			continue;
		shs_err why = { 0 };
		if (!shs__hint_room(x, c))
			return oom(e);
		if (shs__spec_from_sharding(&x->r->mesh, s, in->shape.rank,
					    &x->hints[c][i], &why) == SHS_OK &&
		    shs__spec_fits(&x->hints[c][i], &in->shape, &x->r->mesh)) {
			x->hint_set[c][i] = true;
			x->p->n_given++;
			continue;
		}
		snprintf(msg, sizeof(msg), "%s: its Sharding hint does not fit the mesh (%s); "
			 "propagated instead", in->name, why.msg[0] ? why.msg : "sizes");
		warn(x->r, msg);
	}
	return SHS_OK;
}

/* Twin classes: computations with the same structural hash (repeated layers), and which of
 * them call nothing (a pass over those depends on their own state alone). */
static int find_twins(shs__prop *x, shs_err *e)
{
	uint32_t n = x->m->n_comps;
	uint64_t *hash = calloc(n + 1, sizeof(*hash));
	int rc = SHS_OK;

	x->twin = calloc(n + 1, sizeof(*x->twin));
	x->leaf = calloc(n + 1, sizeof(*x->leaf));
	x->memo = calloc(n + 1, sizeof(*x->memo));
	if (!hash || !x->twin || !x->leaf || !x->memo)
		rc = oom(e);
	if (rc == SHS_OK && x->r->comp_hash)
		memcpy(hash, x->r->comp_hash, n * sizeof(*hash));
	else if (rc == SHS_OK)
		rc = shs_module_hash(x->m, hash, e);
	for (uint32_t c = 0; rc == SHS_OK && c < n; c++) {
		const shs_computation *comp = x->m->comps[c];
		x->twin[c] = c;
		for (uint32_t d = 0; d < c; d++)
			if (hash[d] == hash[c] && x->twin[d] == d) {
				x->twin[c] = d;
				break;
			}
		x->leaf[c] = true;
		for (uint32_t i = 0; i < comp->n_instrs; i++)
			if (shs_opcode_runs_called(comp->instrs[i]->op))
				x->leaf[c] = false;
	}
	free(hash);
	return rc;
}

/* Whether computations c and d have the same weights (a layer called with the step's input
 * batch, a parameter of the entry, may gather it before it runs; the next layers' input is an
 * activation), the same shard_map regions and the same hints (pins included). */
static bool same_context(const shs__prop *x, uint32_t c, uint32_t d)
{
	const shs_computation *comp = x->m->comps[c];

	for (uint32_t i = 0; i < comp->n_instrs; i++)
		if (shs_is_weight(x->weights, c, i) != shs_is_weight(x->weights, d, i) ||
		    shs_manual_is(&x->manual, c, i) != shs_manual_is(&x->manual, d, i))
			return false;
	if (!x->hint_set[c] || !x->hint_set[d])
		return !x->hint_set[c] && !x->hint_set[d];
	for (uint32_t i = 0; i < comp->n_instrs; i++)
		if (x->hint_set[c][i] != x->hint_set[d][i] ||
		    x->pinned[c][i] != x->pinned[d][i] ||
		    (x->hint_set[c][i] && !shs_spec_equal(&x->hints[c][i], &x->hints[d][i])))
			return false;
	return true;
}

/* A computation whose weights or hints differ from its twin's (an activation rule matched by
 * name in one layer but not another) is its own. */
static void untwin_differing(shs__prop *x)
{
	for (uint32_t c = 0; c < x->m->n_comps; c++)
		if (x->twin[c] != c && !same_context(x, c, x->twin[c]))
			x->twin[c] = c;
}

static int setup(shs__prop *x, shs_err *e)
{
	uint32_t n = x->m->n_comps + 1;
	bool matched[SHS_PLAN_MAX_RULES] = { false };

	x->users = calloc(n, sizeof(*x->users));
	x->free_instr = calloc(n, sizeof(*x->free_instr));
	x->hints = calloc(n, sizeof(*x->hints));
	x->hint_set = calloc(n, sizeof(*x->hint_set));
	x->pinned = calloc(n, sizeof(*x->pinned));
	x->visits = calloc(n, sizeof(*x->visits));
	x->ext_req = calloc(n, sizeof(*x->ext_req));
	x->ext_off = calloc(n, sizeof(*x->ext_off));
	x->loop_of = calloc(n, sizeof(*x->loop_of));
	x->cache = calloc(n, sizeof(*x->cache));
	if (!x->users || !x->free_instr || !x->hints || !x->hint_set || !x->pinned ||
	    !x->visits || !x->ext_req || !x->ext_off || !x->loop_of ||
	    !x->cache)
		return oom(e);
	if (find_twins(x, e) != SHS_OK)
		return e->code;
	x->share = x->r->lists ? shs__plan_lists_share(x->r->lists) : &x->own_share;
	if (x->r->lists && !shs__plan_lists_fit(x->r->lists, x->m, &x->r->mesh))
		return shs_seterr(e, SHS_EINVAL, "plan: the shared candidate lists are of another "
				  "module or mesh");
	if (!x->r->lists && shs__share_init(&x->own_share, x->m) != SHS_OK)
		return oom(e);
	if (shs_weights_make(x->m, &x->weights, e) != SHS_OK ||
	    shs_manual_make(x->m, &x->manual, e) != SHS_OK)
		return e->code;
	x->views = x->r->views;
	if (!x->views) {
		int rc = shs_host_views_make(x->m, &x->own_views, e);
		if (rc != SHS_OK)
			return rc;
		x->views = x->own_views;
	}
	for (uint32_t c = 0; c < x->m->n_comps; c++)
		for (uint32_t i = 0; i < x->m->comps[c]->n_instrs; i++)
			if (x->p->d[c][i].n_leaves > x->scratch_cap)
				x->scratch_cap = x->p->d[c][i].n_leaves;
	x->scratch = calloc(x->scratch_cap + 1, sizeof(*x->scratch));
	if (!x->scratch)
		return oom(e);
	for (uint32_t c = 0; c < x->m->n_comps; c++) {
		const shs_computation *comp = x->m->comps[c];
		int rc = shs_users_make(comp, &x->users[c]) == SHS_OK ? SHS_OK : oom(e);
		if (rc != SHS_OK)
			return rc;
		x->free_instr[c] = calloc(comp->n_instrs + 1, sizeof(bool));
		x->cache[c] = calloc(comp->n_instrs + 1, sizeof(*x->cache[c]));
		if (!x->free_instr[c] || !x->cache[c])
			return oom(e);
		for (uint32_t i = 0; i < comp->n_instrs; i++)
			x->free_instr[c][i] = is_free(comp, x->free_instr[c], i);
		rc = collect_hints(x, c, e);
		if (rc == SHS_OK)
			rc = collect_pins(x, c, matched, e);
		if (rc == SHS_OK)
			rc = pin_lookups(x, c, e);
		if (rc != SHS_OK)
			return rc;
	}
	/* a plan file may serve models with and without what a rule names (dropout): said, not
	 * refused */
	for (uint32_t k = 0; k < x->r->n_rules; k++) {
		char msg[SHS_ERRMSG_MAX];
		if (!x->r->rules[k].activation || matched[k])
			continue;
		snprintf(msg, sizeof(msg), "activation rule '%s' matches no instruction of its "
			 "rank (%u) in the module; ignored", x->r->rules[k].pattern,
			 x->r->rules[k].spec.rank);
		warn(x->r, msg);
	}
	untwin_differing(x);
	return SHS_OK;
}

static void teardown(shs__prop *x)
{
	for (uint32_t c = 0; c < x->m->n_comps; c++) {
		if (x->users)
			shs_users_free(&x->users[c]);
		if (x->free_instr)
			free(x->free_instr[c]);
		if (x->hints)
			free(x->hints[c]);
		if (x->hint_set)
			free(x->hint_set[c]);
		if (x->pinned)
			free(x->pinned[c]);
		for (uint32_t i = 0; x->cache && x->cache[c] && i < x->m->comps[c]->n_instrs; i++)
			shs__list_drop(x->share, x->cache[c][i].list);
		if (x->cache)
			free(x->cache[c]);
	}
	free(x->cache);
	shs__share_free(&x->own_share);
	shs_host_views_free(x->own_views);
	free(x->twin);
	free(x->leaf);
	free(x->memo);
	free(x->users);
	free(x->free_instr);
	free(x->hints);
	free(x->hint_set);
	free(x->pinned);
	free(x->visits);
	free(x->ext_req);
	free(x->ext_off);
	free(x->loop_of);
	free(x->state);
	shs_weights_free(x->weights);
	shs_manual_free(&x->manual);
	free(x->scratch);
	shs__score_memo_free(&x->score);
	free(x->root_want);
	free(x->root_aliased);
}

/* The entry parameters' seeds become fixed decisions. */
static int seed(shs__prop *x, shs_err *e)
{
	const shs_computation *c = shs_module_entry(x->m);
	uint32_t entry = x->m->entry, n = 0;
	shs_pspec **seeds;
	bool *set;
	int rc;

	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER && c->instrs[i]->parameter_number >= n)
			n = (uint32_t)c->instrs[i]->parameter_number + 1;
	seeds = calloc(n + 1, sizeof(*seeds));
	set = calloc(n + 1, sizeof(*set));
	if (!seeds || !set) {
		rc = oom(e);
		goto done;
	}
	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER)
			seeds[c->instrs[i]->parameter_number] = x->p->d[entry][i].leaves;
	for (uint32_t k = 0; k < n; k++)
		if (!seeds[k] && !(seeds[k] = calloc(1, sizeof(shs_pspec)))) {
			rc = oom(e);
			goto done;
		}
	rc = shs__plan_seed(x->m, x->r, seeds, set, x->r->warn, x->r->warn_user, e);
	for (uint32_t i = 0; rc == SHS_OK && i < c->n_instrs; i++) {
		shs_decision *d = &x->p->d[entry][i];
		if (c->instrs[i]->op != SHS_OP_PARAMETER || !set[c->instrs[i]->parameter_number])
			continue;
		d->set = d->fixed = true;
		d->strategy = "seed";
		snprintf(d->label, sizeof(d->label), "plan");
	}
done:
	for (uint32_t i = 0; seeds && i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER)
			seeds[c->instrs[i]->parameter_number] = NULL;
	for (uint32_t k = 0; seeds && k < n; k++)
		free(seeds[k]);
	free(seeds);
	free(set);
	return rc;
}

/* The step's outputs that alias a parameter (input_output_alias: the new weights, Adam state
 * and step) must come out sharded as that parameter: the entry root's requirement, which the
 * optimizer's instructions then follow. Elements that alias nothing keep what they get. */
static int alias_root(shs__prop *x, shs_err *e)
{
	const shs_computation *c = shs_module_entry(x->m);
	const shs_instr *root = c->instrs[c->root];
	const shs_decision *rd = shs__dec(x, x->m->entry, c->root);
	shs_pspec *want = NULL;
	uint32_t *param_at = NULL, *alias_of = NULL, n_params = 0;
	bool any = false, *aliased = NULL;
	int rc = SHS_OK;

	if (root->op != SHS_OP_TUPLE || !x->m->n_aliases)
		return SHS_OK;
	/* the entry instruction of each parameter number, and the alias of each root element
	 * (UINT32_MAX: none), so that matching them is linear */
	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER &&
		    c->instrs[i]->parameter_number >= (int64_t)n_params &&
		    c->instrs[i]->parameter_number < (int64_t)c->n_instrs)
			n_params = (uint32_t)c->instrs[i]->parameter_number + 1;
	want = calloc(rd->n_leaves + 1, sizeof(*want));
	aliased = calloc(rd->n_leaves + 1, sizeof(*aliased));
	param_at = malloc((n_params + 1) * sizeof(*param_at));
	alias_of = malloc((root->n_operands + 1) * sizeof(*alias_of));
	if (!want || !aliased || !param_at || !alias_of) {
		rc = oom(e);
		goto done;
	}
	memset(param_at, 0xff, (n_params + 1) * sizeof(*param_at));
	memset(alias_of, 0xff, (root->n_operands + 1) * sizeof(*alias_of));
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *p = c->instrs[i];
		if (p->op == SHS_OP_PARAMETER && p->parameter_number >= 0 &&
		    p->parameter_number < (int64_t)n_params)
			param_at[p->parameter_number] = i;
	}
	for (uint32_t a = 0; a < x->m->n_aliases; a++) {
		const shs_alias *al = &x->m->aliases[a];
		if (al->output_index.n == 1 && !al->param_index.n &&
		    al->output_index.v[0] >= 0 && al->output_index.v[0] < root->n_operands &&
		    alias_of[al->output_index.v[0]] == UINT32_MAX)
			alias_of[al->output_index.v[0]] = a;
	}
	for (uint32_t k = 0, off = 0; k < root->n_operands; k++) {
		const shs_instr *op = c->instrs[root->operands[k]];
		uint32_t n = shs_shape_leaves(&op->shape), a = alias_of[k], i;
		const shs_decision *pd;
		if (off + n > rd->n_leaves)
			break;
		if (a != UINT32_MAX && x->m->aliases[a].param_number >= 0 &&
		    x->m->aliases[a].param_number < (int64_t)n_params &&
		    (i = param_at[x->m->aliases[a].param_number]) != UINT32_MAX &&
		    (pd = shs__dec(x, x->m->entry, i))->set && pd->n_leaves == n) {
			memcpy(&want[off], pd->leaves, n * sizeof(*want));
			memset(&aliased[off], 1, n * sizeof(*aliased));
			any = true;
		}
		off += n;
	}
	if (any) {
		x->root_want = want;
		x->root_aliased = aliased;
		x->ext_req[x->m->entry] = want;
		want = NULL;
		aliased = NULL;
	}
done:
	free(want);
	free(aliased);
	free(param_at);
	free(alias_of);
	return rc;
}

bool shs__same_dims(const shs_shape *a, const shs_shape *b)
{
	return a->type != SHS_TUPLE && b->type != SHS_TUPLE && a->rank == b->rank &&
	       !memcmp(a->dims, b->dims, a->rank * sizeof(*a->dims));
}

/* Marks the state: the seeded parameters of the entry and what elementwise work makes of them
 * at their shape (mu * b1, the update, the new weight), which propagation moves as reluctantly
 * as the parameters themselves: the gradient comes to the state's layout, once. */
static int mark_state(shs__prop *x, shs_err *e)
{
	const shs_computation *c = shs_module_entry(x->m);

	x->state = calloc(c->n_instrs + 1, sizeof(*x->state));
	if (!x->state)
		return oom(e);
	for (uint32_t i = 0; i < c->n_instrs; i++) {
		const shs_instr *in = c->instrs[i];
		if (in->op == SHS_OP_PARAMETER) {
			x->state[i] = shs__dec(x, x->m->entry, i)->fixed && in->shape.rank > 0;
			continue;
		}
		if (!shs_opcode_is_elementwise(in->op))
			continue;
		for (uint32_t k = 0; k < in->n_operands && !x->state[i]; k++) {
			const shs_instr *op = c->instrs[in->operands[k]];
			x->state[i] = x->state[in->operands[k]] &&
				      shs__same_dims(&op->shape, &in->shape);
		}
	}
	return SHS_OK;
}

/* The Sharding hints are fixed decisions too. */
static void fix_hints(shs__prop *x)
{
	uint32_t first[2] = { 0, 1 };

	for (uint32_t c = 0; c < x->m->n_comps; c++)
		for (uint32_t i = 0; x->hint_set[c] && i < x->m->comps[c]->n_instrs; i++) {
			shs_decision *d;
			if (!x->hint_set[c][i] || x->pinned[c][i])
				continue;
			d = shs__dec(x, c, i);
			shs__dec_set(x, d, &x->hints[c][i], 1, &x->hints[c][i], first, 1, "hint",
				     "the module's Sharding hint", 0);
			d->fixed = true;
		}
}

static void totals(shs__prop *x)
{
	for (uint32_t c = 0; c < x->m->n_comps; c++) {
		const shs_computation *comp = x->m->comps[c];
		for (uint32_t i = 0; i < comp->n_instrs; i++) {
			const shs_decision *d = shs__dec(x, c, i);
			const shs_instr *in = comp->instrs[i];
			x->p->total_cost += d->cost;
			for (uint32_t k = 0; d->n_req && k < in->n_operands; k++) {
				const shs_decision *od = shs__dec(x, c, in->operands[k]);
				uint32_t n = d->req_first[k + 1] - d->req_first[k];
				const shs_pspec *want = &d->req[d->req_first[k]];
				if (od->set && n == od->n_leaves &&
				    !shs__specs_equal(od->leaves, want, n))
					x->p->n_reshards++;
			}
		}
	}
}

/* Names every custom call the plan replicates because no strategy knows its target. */
static void warn_unknown_calls(const shs__prop *x)
{
	for (uint32_t c = 0; c < x->m->n_comps; c++)
		for (uint32_t i = 0; i < x->m->comps[c]->n_instrs; i++) {
			const shs_instr *in = x->m->comps[c]->instrs[i];
			const shs_decision *d = &x->p->d[c][i];
			char msg[SHS_ERRMSG_MAX];

			if (in->op != SHS_OP_CUSTOM_CALL || !d->set ||
			    strcmp(d->label, SHS_PLUGIN_UNKNOWN_CALL))
				continue;
			snprintf(msg, sizeof(msg), "%s (custom call '%s'): no sharding rule for this "
				 "target; replicated", in->name,
				 in->custom_call_target ? in->custom_call_target : "");
			warn(x->r, msg);
		}
}

static int make(shs_host *h, const shs_module *m, const shs_plan_request *r, shs_plan **out,
		shs_err *e)
{
	shs__prop x = { .h = h, .m = m, .r = r, .e = e };
	int rc;

	*out = NULL;
	if (!r->mesh.n_axes)
		return shs_seterr(e, SHS_EINVAL, "plan: no mesh");
	if (!(r->chip.flops > 0 && r->chip.hbm_bw > 0 && r->chip.link_bw > 0))
		return shs_seterr(e, SHS_EINVAL, "plan: no chip to compare candidates on");
	rc = alloc_plan(m, r, &x.p, e);
	if (rc == SHS_OK)
		rc = setup(&x, e);
	if (rc == SHS_OK)
		rc = seed(&x, e);
	if (rc == SHS_OK)
		rc = shs__given_shardings(&x, e);
	if (rc == SHS_OK)
		rc = alias_root(&x, e);
	if (rc == SHS_OK)
		rc = mark_state(&x, e);
	if (rc == SHS_OK)
		rc = shs__pin_update(&x, e);
	if (rc == SHS_OK)
		rc = shs__manual_fix(&x, e);
	if (rc == SHS_OK) {
		fix_hints(&x);
		for (uint32_t pass = 0; pass < MAX_PASSES && x.rc == SHS_OK; pass++) {
			x.reverse = pass % 2 == 1;
			x.pull = pass > 0;
			x.changed = false;
			shs__pass_comp(&x, m->entry);
			x.p->passes = pass + 1;
			if (pass >= 2 && !x.changed)
				break;
		}
		rc = x.rc;
	}
	if (rc == SHS_OK)
		warn_unknown_calls(&x);
	if (rc == SHS_OK && x.pins_missed) {
		char msg[SHS_ERRMSG_MAX];
		snprintf(msg, sizeof(msg), "%u instructions that activation rules pin have no "
			 "strategy that makes the pinned sharding; they were propagated",
			 x.pins_missed);
		warn(r, msg);
	}
	if (rc == SHS_OK) {
		totals(&x);
		x.p->keep_given = !r->ignore_hints;
		*out = x.p;
		x.p = NULL;
	}
	teardown(&x);
	shs_plan_free(x.p);
	return rc;
}

/* Whether m's shard_map regions run mesh axis `axis` by hand: a manual region (over every
 * axis), or a partly manual one whose manual axes hold it. */
static bool manual_over(const shs_module *m, const shs_mesh *mesh, int axis)
{
	shs_manual mm;
	shs_err e = { 0 };
	bool over = false;

	if (shs_manual_make(m, &mm, &e) != SHS_OK)
		return false;
	for (uint32_t c = 0; c < m->n_comps && !over; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs && !over; i++) {
			const shs_instr *at = shs_manual_entry(&mm, c, i);
			uint32_t mask = 0;
			over = shs_manual_is(&mm, c, i) ||
			       (at == m->comps[c]->instrs[i] &&
				shs__manual_axes(mesh, at, &mask, &e) == SHS_OK &&
				((mask >> axis) & 1u));
		}
	shs_manual_free(&mm);
	return over;
}

/* Pipeline stages (a mesh axis named "stage") split the layers, not tensors
 * (evaluate_pipeline.c): the plan is made as if that axis held one device, so that no strategy
 * splits a value over it, and then carries the axis at its size. A module that runs the stage
 * axis by hand in its shard_map regions pipelines itself: the axis is an ordinary one. */
int shs_plan_make(shs_host *h, const shs_module *m, const shs_plan_request *r, shs_plan **out,
		  shs_err *e)
{
	int stage = shs_mesh_axis(&r->mesh, "stage");
	shs_plan_request *flat;
	int rc;

	if (stage < 0 || r->mesh.sizes[stage] <= 1)
		return make(h, m, r, out, e);
	if (manual_over(m, &r->mesh, stage)) {
		rc = make(h, m, r, out, e);
		if (rc == SHS_OK)
			(*out)->self_staged = true;
		return rc;
	}
	if (shs_manual_any(m))
		return shs_seterr(e, SHS_EUNSUPPORTED, "plan: the module holds shard_map regions, "
				  "whose shapes are each device's, none of them manual over the "
				  "stage axis: the stage axis (the evaluator's pipeline of the "
				  "layers) cannot split them; leave stage out of the mesh, or write "
				  "the pipeline in the program (a region manual over stage)");
	if (!(flat = malloc(sizeof(*flat))))
		return shs_seterr(e, SHS_ENOMEM, "plan: out of memory");
	*flat = *r;
	flat->mesh.sizes[stage] = 1;
	rc = make(h, m, flat, out, e);
	if (rc == SHS_OK)
		(*out)->mesh.sizes[stage] = r->mesh.sizes[stage];
	free(flat);
	return rc;
}
