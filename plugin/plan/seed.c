/* Seeds of a plan: the shardings of the entry parameters under a named plan and a plan file. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

enum { NO_DIM = -1 };

/* The parameter's role, from its type and path. */
typedef enum role { ROLE_SCALAR, ROLE_BATCH, ROLE_WEIGHT } role;

/* What the seeding knows about the module. */
typedef struct seeding {
	const shs_module *m;
	const shs_plan_request *r;
	int64_t d_model;        /* the most common weight dim size */
	bool matched[SHS_PLAN_MAX_RULES]; /* rules that matched some parameter */
	int *layer_dim;         /* per entry parameter: its stacked-layer dim, or NO_DIM */
	shs_warn_fn warn;
	void *user;
} seeding;

bool shs_param_path_has_segment(const char *path, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = path; (p = strstr(p, word)); p++) {
		bool start = p == path || p[-1] == '/' || p[-1] == '.';
		bool end = p[n] == '\0' || p[n] == '/' || p[n] == '.';
		if (start && end)
			return true;
	}
	return false;
}

static bool has_any(const char *path, const char *const *words)
{
	for (; *words; words++)
		if (shs_param_path_has_segment(path, *words))
			return true;
	return false;
}

static const char *const batch_words[] = { "batch", "data", "inputs", "targets",
					   "inputs_position", "inputs_segmentation",
					   "targets_segmentation", NULL };
static const char *const attention_words[] = { "query", "key", "value", "out", "qkv", NULL };
static const char *const mlp_words[] = { "wi", "wi_0", "wi_1", "wo", "w1", "w2", "w3", NULL };
static const char *const vocab_words[] = { "embedding", "token_embedder", "logits_dense",
					   "logits", "unembed", "lm_head", NULL };

static role role_of(const shs_instr *p, const char *path)
{
	if (p->shape.type == SHS_TUPLE || p->shape.rank == 0)
		return ROLE_SCALAR;
	if (!shs_elem_is_float(p->shape.type) || has_any(path, batch_words))
		return ROLE_BATCH;
	return ROLE_WEIGHT;
}

/* The entry parameter that v is, through converts and copies; -1 when it is not one. */
static int64_t param_of(const shs_computation *c, uint32_t v)
{
	const shs_instr *i = c->instrs[v];

	while ((i->op == SHS_OP_CONVERT || i->op == SHS_OP_COPY) && i->n_operands == 1)
		i = c->instrs[i->operands[0]];
	return i->op == SHS_OP_PARAMETER ? i->parameter_number : -1;
}

enum { LAYER_DEPTH = 8 }; /* loops and calls a stacked weight may pass through to its slice */

static int layer_dim_of(const shs_module *m, const shs_computation *c, uint32_t v, int depth);

/* The layer dim of element k of the carry of while loop w (whose init is tuple value k's
 * user): what its body does with that element. */
static int carried_layer_dim(const shs_module *m, const shs_instr *w, uint32_t k, int depth)
{
	const shs_computation *body;

	if (w->n_called < 1 || w->called[0] >= m->n_comps)
		return NO_DIM;
	body = m->comps[w->called[0]];
	for (uint32_t j = 0; j < body->n_instrs; j++) {
		const shs_instr *g = body->instrs[j];
		int d;
		if (g->op != SHS_OP_GET_TUPLE_ELEMENT || g->tuple_index != (int64_t)k ||
		    body->instrs[g->operands[0]]->op != SHS_OP_PARAMETER)
			continue;
		if ((d = layer_dim_of(m, body, j, depth + 1)) != NO_DIM)
			return d;
	}
	return NO_DIM;
}

/* The dim of shape sh that dynamic-slice u takes one index of (size 1 of a larger dim), or
 * NO_DIM. */
static int unit_slice_dim(const shs_instr *u, const shs_shape *sh)
{
	for (uint32_t x = 0; x < u->dynamic_slice_sizes.n && x < sh->rank; x++)
		if (u->dynamic_slice_sizes.v[x] == 1 && sh->dims[x] > 1)
			return (int)x;
	return NO_DIM;
}

/* The layer dim of operand k of call u: what its callee does with that parameter. */
static int called_layer_dim(const shs_module *m, const shs_instr *u, uint32_t k, int depth)
{
	const shs_computation *callee;

	if (u->n_called != 1 || u->called[0] >= m->n_comps)
		return NO_DIM;
	callee = m->comps[u->called[0]];
	for (uint32_t x = 0; x < callee->n_instrs; x++)
		if (callee->instrs[x]->op == SHS_OP_PARAMETER &&
		    callee->instrs[x]->parameter_number == (int64_t)k)
			return layer_dim_of(m, callee, x, depth + 1);
	return NO_DIM;
}

/* The dim a layer loop slices value v of computation c by, one layer at a time: the size-1 dim
 * of a dynamic-slice of it on a larger dim, found through converts and copies, calls (a
 * layer's computation) and the carries of while loops (the layer loop, and a micro-batch loop
 * around it); NO_DIM when nothing slices it so. */
static int layer_dim_of(const shs_module *m, const shs_computation *c, uint32_t v, int depth)
{
	const shs_shape *sh = &c->instrs[v]->shape;

	if (depth > LAYER_DEPTH)
		return NO_DIM;
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		const shs_instr *u = c->instrs[j];
		for (uint32_t k = 0; k < u->n_operands; k++) {
			int d = NO_DIM;
			if (u->operands[k] != v)
				continue;
			if (u->op == SHS_OP_DYNAMIC_SLICE && k == 0) {
				d = unit_slice_dim(u, sh);
			} else if ((u->op == SHS_OP_CONVERT || u->op == SHS_OP_COPY) &&
				   u->shape.rank == sh->rank) {
				d = layer_dim_of(m, c, j, depth + 1);
			} else if (u->op == SHS_OP_CALL) {
				d = called_layer_dim(m, u, k, depth);
			} else if (u->op == SHS_OP_TUPLE) {
				for (uint32_t x = 0; x < c->n_instrs && d == NO_DIM; x++)
					if (c->instrs[x]->op == SHS_OP_WHILE &&
					    c->instrs[x]->n_operands == 1 &&
					    c->instrs[x]->operands[0] == j)
						d = carried_layer_dim(m, c->instrs[x], k, depth);
			}
			if (d != NO_DIM)
				return d;
		}
	}
	return NO_DIM;
}

/* Layer dims of the entry's float parameters that loops slice layer by layer (the layer loop
 * itself, or inside a micro-batch loop): followed from the while loops and calls of the entry
 * that take them (one pass over the entry: an unrolled one holds 10^5 instructions). */
static void find_layer_dims(seeding *s, uint32_t n_params)
{
	const shs_computation *c = shs_module_entry(s->m);

	for (uint32_t k = 0; k < n_params; k++)
		s->layer_dim[k] = NO_DIM;
	for (uint32_t j = 0; j < c->n_instrs; j++) {
		const shs_instr *w = c->instrs[j], *args = w;
		if (w->op == SHS_OP_WHILE && w->n_operands == 1)
			args = c->instrs[w->operands[0]];
		else if (w->op != SHS_OP_CALL)
			continue;
		if (w->op == SHS_OP_WHILE && args->op != SHS_OP_TUPLE)
			continue;
		for (uint32_t k = 0; k < args->n_operands; k++) {
			int64_t p = param_of(c, args->operands[k]);
			const shs_instr *pi = p >= 0 ? c->instrs[args->operands[k]] : NULL;
			int d;
			if (p < 0 || p >= n_params || s->layer_dim[p] != NO_DIM ||
			    !shs_elem_is_float(pi->shape.type))
				continue;
			d = w->op == SHS_OP_WHILE ? carried_layer_dim(s->m, w, k, 0)
						  : called_layer_dim(s->m, w, k, 0);
			s->layer_dim[p] = d;
		}
	}
}

/* Where the weight's own path starts in a parameter's path: after its "params" segment
 * ("train_step/params/layers/mlp/wi" -> "/layers/mlp/wi"), or after its first segment. */
static const char *weight_tail(const char *path)
{
	const char *p = path;

	for (; (p = strstr(p, "params")); p++)
		if ((p == path || p[-1] == '/' || p[-1] == '.') && (p[6] == '/' || p[6] == '.'))
			return p + 6;
	p = strpbrk(path, "/.");
	return p ? p : path + strlen(path);
}

/* Whether path names the same weight as other, the path of a parameter the loops slice: it
 * ends with other's weight_tail ("train_step/opt_state/mu/layers/mlp/wi" for
 * "train_step/params/layers/mlp/wi"). */
static bool same_weight(const char *path, const char *other)
{
	const char *tail = weight_tail(other);
	size_t n = strlen(tail), len = strlen(path);

	return n > 1 && len >= n && !strcmp(path + len - n, tail);
}

/* The optimizer state of a stacked weight is read elementwise by the update, never sliced by
 * a loop: it takes the layer dim of the weight it belongs to (same shape, same path after the
 * first segment), so that it splits as that weight and as the unrolled layers' state. */
static void share_layer_dims(seeding *s, const shs_instr *const *params, uint32_t n)
{
	char path[SHS_PATH_CAP], other[SHS_PATH_CAP];
	bool stacked = false;

	for (uint32_t k = 0; k < n; k++)
		stacked |= params[k] && s->layer_dim[k] != NO_DIM;
	for (uint32_t k = 0; stacked && k < n; k++) { /* unrolled layers stack nothing */
		if (!params[k] || s->layer_dim[k] != NO_DIM || params[k]->shape.type == SHS_TUPLE)
			continue;
		shs_param_path(params[k], path, sizeof(path));
		for (uint32_t k2 = 0; k2 < n; k2++) {
			if (!params[k2] || s->layer_dim[k2] == NO_DIM ||
			    !shs_shape_equal(&params[k]->shape, &params[k2]->shape))
				continue;
			shs_param_path(params[k2], other, sizeof(other));
			if (same_weight(path, other)) {
				s->layer_dim[k] = s->layer_dim[k2];
				break;
			}
		}
	}
}

/* One dim of a parameter: its size, and whether the parameter is a float array. */
typedef struct dim_size {
	int64_t size;
	bool is_float;
} dim_size;

static int cmp_dim_size(const void *a, const void *b)
{
	int64_t x = ((const dim_size *)a)->size, y = ((const dim_size *)b)->size;

	return (x > y) - (x < y);
}

/* d_model: the dim size most common over the parameters' dims (layer dims left out) that some
 * float weight has, the larger on a tie; 0 when there is none (or out of memory). Sorted, so
 * that modules of thousands of parameters (an unrolled 80-layer model) take no quadratic
 * time. */
static int64_t find_d_model(const seeding *s, const shs_instr *const *params, uint32_t n)
{
	size_t count = 0, best_count = 0;
	int64_t best = 0;
	dim_size *dims;

	for (uint32_t k = 0; k < n; k++)
		count += params[k] ? params[k]->shape.rank : 0;
	dims = malloc((count + 1) * sizeof(*dims));
	if (!dims)
		return 0;
	count = 0;
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t d = 0; params[k] && d < params[k]->shape.rank; d++)
			if ((int)d != s->layer_dim[k])
				dims[count++] = (dim_size){ params[k]->shape.dims[d],
							    shs_elem_is_float(params[k]->shape.type) };
	qsort(dims, count, sizeof(*dims), cmp_dim_size);
	for (size_t j = 0, end; j < count; j = end) {
		bool is_float = false;
		for (end = j; end < count && dims[end].size == dims[j].size; end++)
			is_float |= dims[end].is_float;
		/* ascending: a tie goes to the larger */
		if (is_float && end - j >= best_count) {
			best_count = end - j;
			best = dims[j].size;
		}
	}
	free(dims);
	return best;
}

/* How try_axis treats a dim the axis does not divide. XLA's partitioner pads it (each device
 * holds ceil(size / split), the last ones padding or nothing: HloSharding::TileShape), so the
 * split is kept, padded, rather than replicated when it shrinks the piece; a weight is only
 * padded where no device is left with nothing of it. */
typedef enum pad_mode {
	PAD_SHRINKS,  /* padded whenever ceil(size / split) gets smaller (the batch) */
	PAD_NO_EMPTY  /* padded when also size >= split (weights) */
} pad_mode;

/* Adds axis name to dim d of spec when the mesh has it and the dim divides or, as mode says,
 * may be padded (the spec is then marked padded). */
static void try_axis(const seeding *s, shs_pspec *spec, const shs_shape *a, int d,
		     const char *name, pad_mode mode)
{
	int ax = shs_mesh_axis(&s->r->mesh, name);
	shs_pspec t = *spec;
	int64_t before, after;

	/* an axis of size 1 splits nothing: a mesh with one is the mesh without it */
	if (ax < 0 || s->r->mesh.sizes[ax] <= 1 || d < 0 || (uint32_t)d >= a->rank)
		return;
	for (uint32_t e = 0; e < spec->rank; e++)
		for (uint32_t k = 0; k < spec->dims[e].n; k++)
			if (spec->dims[e].axes[k] == ax)
				return;
	before = shs_spec_dim_split(spec, (uint32_t)d, &s->r->mesh);
	shs__spec_add(&t, (uint32_t)d, ax);
	after = shs_spec_dim_split(&t, (uint32_t)d, &s->r->mesh);
	if (a->dims[d] % after) {
		int64_t size = a->dims[d];
		if ((size + after - 1) / after >= (size + before - 1) / before ||
		    (mode == PAD_NO_EMPTY && size < after))
			return;
	}
	shs_spec_mark_padded(&t, a, &s->r->mesh);
	if (shs__spec_fits(&t, a, &s->r->mesh))
		*spec = t;
}

static bool dim_free(const shs_pspec *spec, int d, int layer)
{
	return d != layer && !spec->dims[d].n;
}

/* The tensor-parallel dim of a weight by its role: attention heads (the first dim that is not
 * d_model), MLP hidden (the largest that is not d_model), vocab; NO_DIM for the rest. */
static int tp_dim(const seeding *s, const shs_instr *p, const char *path, int layer)
{
	const shs_shape *a = &p->shape;
	bool attention = has_any(path, attention_words) && !shs_param_path_has_segment(path, "moe");
	bool mlp = has_any(path, mlp_words), vocab = has_any(path, vocab_words);
	int best = NO_DIM;

	if (shs_param_path_has_segment(path, "scale") || shs_param_path_has_segment(path, "gate") ||
	    shs_param_path_has_segment(path, "bias"))
		return NO_DIM;
	for (int d = 0; d < (int)a->rank; d++) {
		if (d == layer || a->dims[d] == s->d_model)
			continue;
		if (attention)
			return d;
		if ((mlp || vocab) && (best == NO_DIM || a->dims[d] > a->dims[best]))
			best = d;
	}
	return mlp || vocab ? best : NO_DIM;
}

/* The largest dim still free (not the layer dim), or NO_DIM. */
static int largest_free(const shs_pspec *spec, const shs_shape *a, int layer)
{
	int best = NO_DIM;

	for (int d = 0; d < (int)a->rank; d++)
		if (dim_free(spec, d, layer) && (best == NO_DIM || a->dims[d] > a->dims[best]))
			best = d;
	return best;
}

static bool plan_has_tp(shs_plan_kind k)
{
	return k == SHS_PLAN_TP || k == SHS_PLAN_FSDP_TP;
}

static bool plan_has_fsdp(shs_plan_kind k)
{
	return k == SHS_PLAN_FSDP || k == SHS_PLAN_FSDP_TP;
}

static void seed_batch(const seeding *s, const shs_shape *a, shs_pspec *spec)
{
	/* the batch is split even where it does not divide (padded, as XLA pads it): never
	 * silently replicated */
	try_axis(s, spec, a, 0, "data", PAD_SHRINKS);
	if (plan_has_fsdp(s->r->kind))
		try_axis(s, spec, a, 0, "fsdp", PAD_SHRINKS);
	/* the expert axis splits the batch outside the experts (expert parallelism) */
	try_axis(s, spec, a, 0, "expert", PAD_SHRINKS);
	/* the tokens' sequence: context parallelism (the search's axis; "sequence" is the
	 * same split under another name) */
	if (a->rank >= 2 && !shs_elem_is_float(a->type)) {
		try_axis(s, spec, a, 1, "context", PAD_SHRINKS);
		try_axis(s, spec, a, 1, "sequence", PAD_SHRINKS);
	}
	/* activations given as input (the book's In[B, D]) carry D on tensor under TP */
	if (plan_has_tp(s->r->kind) && shs_elem_is_float(a->type) && a->rank >= 2)
		try_axis(s, spec, a, (int)a->rank - 1, "tensor", PAD_NO_EMPTY);
}

bool shs__path_is_vocab(const char *path)
{
	return has_any(path, vocab_words);
}

void shs__seed_tokens(const shs_plan_request *r, const shs_shape *a, shs_pspec *spec)
{
	const seeding s = { .r = r };

	memset(spec, 0, sizeof(*spec));
	spec->rank = a->rank;
	seed_batch(&s, a, spec);
}

bool shs_param_is_data(const shs_instr *p)
{
	char path[SHS_PATH_CAP];

	shs_param_path(p, path, sizeof(path));
	return role_of(p, path) == ROLE_BATCH;
}

bool shs_param_path_is_optimizer_state(const char *path)
{
	static const char *const words[] = { "opt_state", "mu", "nu", NULL };

	return has_any(path, words);
}

shs_param_role shs_param_role_named(const char *path, shs_param_role by_use)
{
	if (shs_param_path_is_optimizer_state(path))
		return SHS_PARAM_OPT_STATE;
	if (shs_param_path_has_segment(path, "params"))
		return SHS_PARAM_WEIGHT;
	return by_use;
}

static void seed_weight(const seeding *s, const shs_instr *p, const char *path, int layer,
			shs_pspec *spec)
{
	const shs_shape *a = &p->shape;

	/* an expert's weight: the expert dim on the expert axis (not the router's, nor the
	 * shared experts' dense MLP) */
	if (shs_param_path_has_segment(path, "moe") && !shs_param_path_has_segment(path, "gate") &&
	    !shs_param_path_has_segment(path, "shared"))
		for (int d = 0; d < (int)a->rank; d++)
			if (d != layer && a->dims[d] != s->d_model) {
				try_axis(s, spec, a, d, "expert", PAD_NO_EMPTY);
				break;
			}
	if (plan_has_tp(s->r->kind)) {
		int d = tp_dim(s, p, path, layer);
		if (d != NO_DIM && dim_free(spec, d, layer))
			try_axis(s, spec, a, d, "tensor", PAD_NO_EMPTY);
	}
	if (plan_has_fsdp(s->r->kind) &&
	    (!s->r->fsdp_state_only || shs_param_path_is_optimizer_state(path))) {
		/* the largest free dim that fsdp divides or pads with no device left empty (a
		 * vocab of 32000 splits like one of 32768); `tried` marks the dims that did not */
		shs_pspec tried = *spec;
		for (int n = 0; n < (int)a->rank; n++) {
			int d = largest_free(&tried, a, layer);
			shs_pspec before = *spec;
			if (d == NO_DIM)
				break;
			/* a context axis shards the weights with fsdp, as MaxText's logical
			 * rules put "embed" over fsdp, sequence and context */
			try_axis(s, spec, a, d, "fsdp", PAD_NO_EMPTY);
			try_axis(s, spec, a, d, "context", PAD_NO_EMPTY);
			if (!shs_spec_equal(spec, &before))
				break;
			shs__spec_add(&tried, (uint32_t)d, 0);
		}
	}
}

static void warn(const seeding *s, const char *fmt, const char *a, const char *b)
{
	char msg[SHS_ERRMSG_MAX];

	if (!s->warn)
		return;
	snprintf(msg, sizeof(msg), fmt, a, b);
	s->warn(s->user, msg);
}

/* The first plan-file rule matching path; true when it set spec. */
static bool seed_rules(seeding *s, const shs_instr *p, const char *path, shs_pspec *spec)
{
	for (uint32_t k = 0; k < s->r->n_rules; k++) {
		const shs_plan_rule *rule = &s->r->rules[k];
		shs_pspec want = rule->spec;
		if (rule->activation || fnmatch(rule->pattern, path, 0))
			continue;
		s->matched[k] = true;
		/* a split that does not divide is padded, as XLA pads it */
		if (p->shape.type != SHS_TUPLE && want.rank == p->shape.rank)
			shs_spec_mark_padded(&want, &p->shape, &s->r->mesh);
		if (p->shape.type == SHS_TUPLE || !shs__spec_fits(&want, &p->shape, &s->r->mesh)) {
			warn(s, "plan rule '%s' does not fit parameter %s (rank or sizes); ignored",
			     rule->pattern, p->name);
			return false;
		}
		*spec = want;
		return true;
	}
	return false;
}

static int seed_all(seeding *s, const shs_instr *const *params, uint32_t n, shs_pspec **out,
		    bool *set)
{
	char path[SHS_PATH_CAP];

	find_layer_dims(s, n);
	share_layer_dims(s, params, n);
	s->d_model = find_d_model(s, params, n);
	for (uint32_t k = 0; k < n; k++) {
		const shs_instr *p = params[k];
		shs_pspec *spec = out[k];
		if (!p)
			continue;
		/* a tuple parameter takes what its users want */
		set[k] = p->shape.type != SHS_TUPLE;
		if (!set[k])
			continue;
		shs_spec_replicated(spec, p->shape.rank);
		if (p->shape.rank > SHS_PLUGIN_MAX_RANK) /* beyond what a spec can split */
			continue;
		shs_param_path(p, path, sizeof(path));
		if (seed_rules(s, p, path, spec))
			continue;
		if (s->r->kind == SHS_PLAN_RULES) {
			set[k] = false;
			continue;
		}
		switch (role_of(p, path)) {
		case ROLE_SCALAR: break;
		case ROLE_BATCH: seed_batch(s, &p->shape, spec); break;
		case ROLE_WEIGHT: seed_weight(s, p, path, s->layer_dim[k], spec); break;
		}
	}
	return SHS_OK;
}

int shs__plan_seed(const shs_module *m, const shs_plan_request *r, shs_pspec **out, bool *set,
		   shs_warn_fn warn_fn, void *user, shs_err *e)
{
	const shs_computation *c = shs_module_entry(m);
	seeding s = { .m = m, .r = r, .warn = warn_fn, .user = user };
	const shs_instr **params = NULL;
	uint32_t n = 0;
	int rc = SHS_OK;

	for (uint32_t j = 0; j < c->n_instrs; j++)
		if (c->instrs[j]->op == SHS_OP_PARAMETER && c->instrs[j]->parameter_number >= n)
			n = (uint32_t)c->instrs[j]->parameter_number + 1;
	params = calloc(n ? n : 1, sizeof(*params));
	s.layer_dim = calloc(n ? n : 1, sizeof(*s.layer_dim));
	if (!params || !s.layer_dim) {
		rc = shs_seterr(e, SHS_ENOMEM, "plan: out of memory");
		goto done;
	}
	for (uint32_t j = 0; j < c->n_instrs; j++)
		if (c->instrs[j]->op == SHS_OP_PARAMETER)
			params[c->instrs[j]->parameter_number] = c->instrs[j];
	rc = seed_all(&s, params, n, out, set);
	for (uint32_t k = 0; rc == SHS_OK && k < r->n_rules; k++)
		if (!s.matched[k] && !r->rules[k].activation)
			rc = shs_seterr(e, SHS_EINVAL, "plan rule '%s' matches no parameter of the "
					"module", r->rules[k].pattern);
done:
	free(params);
	free(s.layer_dim);
	return rc;
}
