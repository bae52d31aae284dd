/* Kernels sharded by a factor rule: every operand and result dim is one factor of the kernel's
 * iteration space (a dim made of several, or none, stays whole); putting mesh axes on a factor
 * splits its dims alike everywhere, and a result that lacks a split factor is a partial sum.
 *
 * The rules come from:
 *  - Shardy's xla.sdy.sharding_rule frontend attribute, on any custom call:
 *    #sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=16, k=8}, reduction={j},
 *    need_replication={...}, ...>: what JAX's custom_partitioning(sharding_rule=...) writes,
 *    so a Pallas, Mosaic or Triton kernel states how it shards (the contract: factors in
 *    need_replication, blocked_propagation or permutation stay whole);
 *  - cuBLAS GEMMs (__cublas$gemm, __cublas$lt$matmul...): batch, free and contracting dims from
 *    the backend_config's dot_dimension_numbers;
 *  - Transformer Engine's layer and RMS norms (te_norm_forward_ffi and the older
 *    te_layernorm_* / te_rmsnorm_* targets): x [rows..., hidden] as TE passes it, its rows split
 *    freely, the hidden dim whole; arrays of x's shape follow x, of its rows' (mu, rsigma)
 *    the rows, of the hidden size (gamma, beta) the hidden dim, the rest (scales, amax, the
 *    workspace) stay whole; the backward's gamma and beta gradients are partial sums over the
 *    rows.
 * A kernel's FLOPs are its backend_config's cost estimate ("flops") where it has one, else the
 * GEMM's 2 M N K, else none (its bytes still count); each device does its share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_rule.h"
#include "rule_util.h"

enum { KR_MAX_FACTORS = 16, KR_MAX_TENSORS = 16, KR_NAME = 8, KR_ENUM_CAP = 4096 };
enum { KR_NONE = -1 }; /* a dim of no single factor: whole */

typedef struct kr_rule {
	uint32_t n_factors;
	char name[KR_MAX_FACTORS][KR_NAME];
	int64_t size[KR_MAX_FACTORS];
	uint32_t whole;                      /* bit f: factor f stays whole */
	uint32_t aux;                        /* bit t: tensor t is no function of the factors (a
					      * workspace, scales): whole, never a partial sum */
	uint32_t n_ops, n_res;               /* tensors: the operands, then the result leaves */
	uint32_t rank[KR_MAX_TENSORS];
	int8_t factor[KR_MAX_TENSORS][SHS_PLUGIN_MAX_RANK];
	double flops;                        /* the whole call's (0: unknown) */
	const char *what;                    /* the label's prefix */
} kr_rule;

/* ---- Shardy's rule text ---- */

static const char *skip_space(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

/* The factor named by the identifier at *p (a letter, then optionally _digits), added when
 * new; -1 when there are too many. Advances *p past it. */
static int factor_at(kr_rule *r, const char **p)
{
	char name[KR_NAME] = { 0 };
	size_t n = 0;

	name[n++] = *(*p)++;
	if (**p == '_')
		while ((**p == '_' || (**p >= '0' && **p <= '9')) && n + 1 < KR_NAME)
			name[n++] = *(*p)++;
	for (uint32_t f = 0; f < r->n_factors; f++)
		if (!strcmp(r->name[f], name))
			return (int)f;
	if (r->n_factors >= KR_MAX_FACTORS)
		return -1;
	memcpy(r->name[r->n_factors], name, sizeof(name));
	return (int)r->n_factors++;
}

/* One tensor "[i, jk, ]" at *p into tensor t; false when malformed. */
static bool tensor_at(kr_rule *r, uint32_t t, const char **p)
{
	const char *s = skip_space(*p);
	uint32_t d = 0;

	if (*s++ != '[' || t >= KR_MAX_TENSORS)
		return false;
	for (s = skip_space(s); *s && *s != ']'; s = skip_space(s)) {
		int first = KR_NONE, count = 0;
		while (*s >= 'a' && *s <= 'z') {
			int f = factor_at(r, &s);
			if (f < 0)
				return false;
			first = count++ ? first : f;
			if (count > 1) /* a dim of several factors: none of them splits */
				r->whole |= (1u << f) | (1u << first);
		}
		if (d >= SHS_PLUGIN_MAX_RANK || !count)
			return false;
		r->factor[t][d++] = (int8_t)(count == 1 ? first : KR_NONE);
		s = skip_space(s);
		if (*s == ',')
			s++;
	}
	if (*s != ']')
		return false;
	r->rank[t] = d;
	*p = s + 1;
	return true;
}

/* A list of tensors "(" [..], [..] ")" at *p from tensor *t on. */
static bool tensors_at(kr_rule *r, uint32_t *t, const char **p)
{
	const char *s = skip_space(*p);

	if (*s++ != '(')
		return false;
	for (s = skip_space(s); *s && *s != ')'; s = skip_space(s)) {
		if (!tensor_at(r, (*t)++, &s))
			return false;
		s = skip_space(s);
		if (*s == ',')
			s++;
	}
	if (*s != ')')
		return false;
	*p = s + 1;
	return true;
}

/* The factors of a "{i, j}" list at *p, or with sizes "{i=8, j=16}" into r->size. */
static bool factor_list(kr_rule *r, const char **p, bool sizes, uint32_t *set)
{
	const char *s = skip_space(*p);

	if (*s++ != '{')
		return false;
	for (s = skip_space(s); *s >= 'a' && *s <= 'z'; s = skip_space(s)) {
		int f = factor_at(r, &s);
		char *end;
		if (f < 0)
			return false;
		if (set)
			*set |= 1u << f;
		if (sizes) {
			if (*s++ != '=')
				return false;
			r->size[f] = strtoll(s, &end, 10);
			s = end;
		}
		s = skip_space(s);
		if (*s == ',')
			s++;
	}
	if (*s != '}')
		return false;
	*p = s + 1;
	return true;
}

/* Parses Shardy's op_sharding_rule text into r; false when it is not one this reads. */
static bool parse_sdy(const char *text, kr_rule *r)
{
	const char *p = strstr(text, "op_sharding_rule<");
	uint32_t t = 0, dummy = 0;

	if (!p)
		return false;
	p += strlen("op_sharding_rule<");
	if (!tensors_at(r, &t, &p))
		return false;
	r->n_ops = t;
	if (strncmp(skip_space(p), "->", 2))
		return false;
	p = skip_space(p) + 2;
	if (!tensors_at(r, &t, &p) || !factor_list(r, &p, true, NULL))
		return false;
	r->n_res = t - r->n_ops;
	/* reduction={...} (a result without the factor says it anyway), need_replication,
	 * permutation, blocked_propagation: the last three stay whole */
	while (*(p = skip_space(p)) == ',') {
		static const char *const keep[] = { "need_replication=", "permutation=",
						    "blocked_propagation=" };
		bool matched = false;
		p = skip_space(p + 1);
		for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]) && !matched; k++)
			if (!strncmp(p, keep[k], strlen(keep[k]))) {
				p += strlen(keep[k]);
				if (!factor_list(r, &p, false, &r->whole))
					return false;
				matched = true;
			}
		if (!matched && !strncmp(p, "reduction=", strlen("reduction="))) {
			p += strlen("reduction=");
			if (!factor_list(r, &p, false, &dummy))
				return false;
		} else if (!matched) {
			break; /* custom, or what a later Shardy adds: the factors above stand */
		}
	}
	r->what = "rule";
	return true;
}

/* ---- Rules of known targets ---- */

/* The dims listed under key in a backend_config's JSON (["1","2"] or [1,2]) into bit mask *out;
 * false when the key is missing. */
static bool json_dims(const char *cfg, const char *key, uint32_t *out)
{
	const char *p = strstr(cfg, key);

	*out = 0;
	if (!p || !(p = strchr(p + strlen(key), '[')))
		return false;
	for (p++; *p && *p != ']'; p++)
		if (*p >= '0' && *p <= '9') {
			char *end;
			long d = strtol(p, &end, 10);
			if (d >= 0 && d < SHS_PLUGIN_MAX_RANK)
				*out |= 1u << d;
			p = end - 1;
		}
	return *p == ']';
}

/* Adds a factor of the given size named prefix + n; its index, or -1. */
static int add_factor(kr_rule *r, char prefix, uint32_t n, int64_t size)
{
	if (r->n_factors >= KR_MAX_FACTORS)
		return -1;
	snprintf(r->name[r->n_factors], KR_NAME, "%c%u", prefix, n);
	r->size[r->n_factors] = size;
	return (int)r->n_factors++;
}

/* A cuBLAS GEMM: result [batch..., lhs free..., rhs free...], then a workspace leaf; the
 * k-th batch (contracting) dim of the lhs pairs with the k-th of the rhs, in ascending order. */
static bool gemm_rule(const shs_pinstr *i, const shs_pshape *const *res, uint32_t n_res,
		      kr_rule *r)
{
	const shs_pshape *a = &i->operands[0], *b = &i->operands[1], *c = res[0];
	uint32_t lc, rc, lb, rb, nb = 0, nk = 0, nm = 0, nn = 0, d = 0;
	int8_t paired[2][SHS_PLUGIN_MAX_RANK]; /* the lhs's batch, contracting factors in order */
	double flops = 2;

	if (i->n_operands < 2 || i->n_operands > KR_MAX_TENSORS - n_res ||
	    !json_dims(i->backend_config, "lhs_contracting_dimensions", &lc) ||
	    !json_dims(i->backend_config, "rhs_contracting_dimensions", &rc) ||
	    !json_dims(i->backend_config, "lhs_batch_dimensions", &lb) ||
	    !json_dims(i->backend_config, "rhs_batch_dimensions", &rb) ||
	    __builtin_popcount(lb) != __builtin_popcount(rb) ||
	    __builtin_popcount(lc) != __builtin_popcount(rc))
		return false;
	for (uint32_t x = 0; x < a->rank; x++) {
		bool batch = lb & (1u << x), contract = lc & (1u << x);
		int f = add_factor(r, batch ? 'b' : contract ? 'k' : 'm',
				   batch ? nb : contract ? nk : nm, a->dims[x]);
		if (f < 0)
			return false;
		if (batch)
			paired[0][nb++] = (int8_t)f;
		else if (contract)
			paired[1][nk++] = (int8_t)f;
		else
			nm++;
		r->factor[0][x] = (int8_t)f;
		flops *= (double)a->dims[x];
	}
	for (uint32_t y = 0, kb = 0, kk = 0; y < b->rank; y++) {
		bool free = !(rb & (1u << y)) && !(rc & (1u << y));
		int f = free ? add_factor(r, 'n', nn++, b->dims[y]) :
			rb & (1u << y) ? paired[0][kb++] : paired[1][kk++];
		if (f < 0 || r->size[f] != b->dims[y])
			return false;
		if (free)
			flops *= (double)b->dims[y];
		r->factor[1][y] = (int8_t)f;
	}
	if (c->rank != nb + nm + nn)
		return false;
	for (uint32_t x = 0; x < a->rank; x++) /* batch, then the lhs's free dims */
		if (lb & (1u << x))
			r->factor[i->n_operands][d++] = r->factor[0][x];
	for (uint32_t x = 0; x < a->rank; x++)
		if (!(lb & (1u << x)) && !(lc & (1u << x)))
			r->factor[i->n_operands][d++] = r->factor[0][x];
	for (uint32_t y = 0; y < b->rank; y++)
		if (!(rb & (1u << y)) && !(rc & (1u << y)))
			r->factor[i->n_operands][d++] = r->factor[1][y];
	r->n_ops = i->n_operands;
	r->n_res = n_res;
	for (uint32_t t = 0; t < r->n_ops + r->n_res; t++) {
		const shs_pshape *s = t < r->n_ops ? &i->operands[t] : res[t - r->n_ops];
		r->rank[t] = s->rank;
		/* c (beta != 0) follows the result; a bias, scales, the workspace stay whole */
		bool like_c = t >= 2 && t < r->n_ops && ru_same_dims(s, c);
		for (uint32_t x = 0; t >= 2 && t != r->n_ops && x < s->rank; x++)
			r->factor[t][x] = like_c ? r->factor[r->n_ops][x] : KR_NONE;
		if (t >= 2 && t != r->n_ops && !like_c)
			r->aux |= 1u << t;
	}
	r->flops = flops;
	r->what = "gemm";
	return true;
}

/* Transformer Engine's norm: x [rows..., hidden] with the hidden dim whole; operands and
 * results of x's shape follow it, of its rows' shape (mu, rsigma) follow the rows, rank-1
 * ones of the hidden size (gamma, beta, their gradients) the hidden dim. */
static bool norm_rule(const shs_pinstr *i, const shs_pshape *const *res, uint32_t n_res,
		      kr_rule *r)
{
	const shs_pshape *x = &i->operands[0];
	int hidden;

	if (!i->n_operands || x->rank < 2 || x->rank > SHS_PLUGIN_MAX_RANK)
		return false;
	for (uint32_t d = 0; d + 1 < x->rank; d++)
		if (add_factor(r, 'r', d, x->dims[d]) < 0)
			return false;
	if ((hidden = add_factor(r, 'h', 0, x->dims[x->rank - 1])) < 0)
		return false;
	r->whole |= 1u << hidden;
	r->n_ops = i->n_operands;
	r->n_res = n_res;
	for (uint32_t t = 0; t < r->n_ops + r->n_res && t < KR_MAX_TENSORS; t++) {
		const shs_pshape *s = t < r->n_ops ? &i->operands[t] : res[t - r->n_ops];
		bool like_x = ru_same_dims(s, x), rows = s->rank + 1 == x->rank;
		r->rank[t] = s->rank;
		/* factor d is x's dim d: its rows, then the hidden dim */
		for (uint32_t d = 0; d < s->rank && d < SHS_PLUGIN_MAX_RANK; d++) {
			r->factor[t][d] = KR_NONE;
			if (like_x || (rows && s->dims[d] == x->dims[d]))
				r->factor[t][d] = (int8_t)d;
			else if (s->rank == 1 && s->dims[0] == x->dims[x->rank - 1])
				r->factor[t][d] = (int8_t)hidden;
		}
		if (rows) /* every row dim must match, else the tensor stays whole */
			for (uint32_t d = 0; d < s->rank; d++)
				if (s->dims[d] != x->dims[d])
					for (uint32_t e = 0; e < s->rank; e++)
						r->factor[t][e] = KR_NONE;
		r->aux |= 1u << t; /* no factor: a scale, amax, the workspace */
		for (uint32_t d = 0; d < s->rank; d++)
			if (r->factor[t][d] != KR_NONE)
				r->aux &= ~(1u << t);
	}
	r->what = "norm";
	return true;
}

static const char *const gemm_targets[] = { "__cublas$gemm", "__cublas$lt$matmul",
					    "__cublas$lt$matmul$f8", NULL };
static const char *const norm_targets[] = { "te_layernorm_forward_ffi", "te_layernorm_backward_ffi",
					    "te_rmsnorm_forward_ffi", "te_rmsnorm_backward_ffi",
					    "te_norm_forward_ffi", "te_norm_backward_ffi",
					    "te_layernorm_forward", "te_layernorm_backward",
					    "te_rmsnorm_forward", "te_rmsnorm_backward", NULL };

static bool listed(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

/* The rule of call i, if it has one, into r (its result leaves res[0..n_res)). */
static bool rule_of(const shs_pinstr *i, const shs_pshape *const *res, uint32_t n_res,
		    kr_rule *r)
{
	memset(r, 0, sizeof(*r));
	for (uint32_t k = 0; i->struct_size >= sizeof(*i) && k < i->n_frontend_attrs; k++)
		if (!strcmp(i->frontend_attrs[k].key, "xla.sdy.sharding_rule"))
			return parse_sdy(i->frontend_attrs[k].value, r) &&
			       r->n_ops == i->n_operands && r->n_res == n_res;
	if (listed(gemm_targets, i->custom_call_target))
		return gemm_rule(i, res, n_res, r);
	if (listed(norm_targets, i->custom_call_target))
		return norm_rule(i, res, n_res, r);
	return false;
}

/* ---- Candidates ---- */

typedef struct kr_ctx {
	const shs_pquery *q;
	shs_pemit *out;
	const shs_host_api *api;
	const kr_rule *r;
	const shs_pshape *const *res;
	uint32_t emitted;
} kr_ctx;

/* Tensor t's shape. */
static const shs_pshape *tensor_shape(const kr_ctx *x, uint32_t t)
{
	return t < x->r->n_ops ? &x->q->instr->operands[t] : x->res[t - x->r->n_ops];
}

/* Tensor t's spec under assignment slots (per factor, its axes). */
static void tensor_spec(const kr_rule *r, uint32_t t, const shs_pdim *slots, shs_pspec *out)
{
	sc_replicated(r->rank[t], out);
	for (uint32_t d = 0; d < r->rank[t]; d++)
		if (r->factor[t][d] != KR_NONE)
			out->dims[d] = slots[r->factor[t][d]];
}

/* The label: the rule's kind, then each split factor with its axes ("gemm m0:{data}"). */
static void label_of(const kr_ctx *x, const shs_pdim *slots, char *buf)
{
	size_t len = 0;

	buf[0] = '\0';
	sc_append(buf, SC_LABEL_MAX, &len, x->r->what);
	for (uint32_t f = 0; f < x->r->n_factors; f++) {
		if (!slots[f].n)
			continue;
		sc_append(buf, SC_LABEL_MAX, &len, " ");
		sc_append(buf, SC_LABEL_MAX, &len, x->r->name[f]);
		sc_append(buf, SC_LABEL_MAX, &len, ":");
		sc_append_dim(buf, SC_LABEL_MAX, &len, &slots[f], x->q->mesh);
	}
	if (!len || !strcmp(buf, x->r->what))
		sc_append(buf, SC_LABEL_MAX, &len, " whole");
}

static int emit_one(const shs_pdim *slots, void *user)
{
	kr_ctx *x = user;
	const kr_rule *r = x->r;
	char label[SC_LABEL_MAX];
	double share = 1;
	ru_emit e;

	if (x->emitted++ >= KR_ENUM_CAP)
		return 1;
	for (uint32_t f = 0; f < r->n_factors; f++)
		share /= (double)sc_dim_shards(&slots[f], x->q->mesh);
	label_of(x, slots, label);
	ru_begin(&e, x->q, x->out, x->api, label);
	for (uint32_t t = 0; t < r->n_ops + r->n_res; t++) {
		shs_pspec s;
		tensor_spec(r, t, slots, &s);
		if (t < r->n_ops)
			ru_operand(&e, t, &s);
		else
			ru_result_leaf(&e, t - r->n_ops, tensor_shape(x, t), &s);
	}
	ru_end(&e, r->flops * share);
	/* a result without a split factor holds a partial sum over that factor's axes */
	for (uint32_t t = r->n_ops; t < r->n_ops + r->n_res; t++) {
		uint32_t partial = 0, in_t = 0;
		shs_pspec s;
		if (r->aux & (1u << t))
			continue;
		for (uint32_t d = 0; d < r->rank[t]; d++)
			if (r->factor[t][d] != KR_NONE)
				in_t |= 1u << r->factor[t][d];
		for (uint32_t f = 0; f < r->n_factors; f++)
			if (!(in_t & (1u << f)))
				partial |= sc_dim_mask(&slots[f]);
		tensor_spec(r, t, slots, &s);
		if (partial)
			x->api->add_collective(x->out, e.c, SHS_PCOLL_ALL_REDUCE, partial,
					       sc_local_bytes(x->api, tensor_shape(x, t), &s,
							      x->q->mesh), false);
	}
	return 0;
}

/* Whether every dim of a single factor has that factor's size (a rule that does not describe
 * the call is not used). */
static bool rule_fits(const kr_ctx *x)
{
	const kr_rule *r = x->r;

	for (uint32_t t = 0; t < r->n_ops + r->n_res; t++) {
		const shs_pshape *s = tensor_shape(x, t);
		if (!ru_is_array(s) || s->rank != r->rank[t])
			return false;
		for (uint32_t d = 0; d < s->rank; d++)
			if (r->factor[t][d] != KR_NONE && s->dims[d] != r->size[r->factor[t][d]])
				return false;
	}
	return true;
}

/* Which factors each mesh axis may go to: any that may split (ENUMERATE), else those an
 * operand's or the result's hint puts it on. */
static void allowed_of(const kr_ctx *x, uint64_t *allowed)
{
	const kr_rule *r = x->r;
	uint64_t any = ((1ull << r->n_factors) - 1) & ~(uint64_t)r->whole;

	for (uint32_t a = 0; a < x->q->mesh->n_axes; a++)
		allowed[a] = x->q->mode == SHS_PMODE_ENUMERATE ? any : 0;
	if (x->q->mode == SHS_PMODE_ENUMERATE)
		return;
	for (uint32_t t = 0; t < r->n_ops + r->n_res; t++) {
		const shs_pspec *h = t < r->n_ops ? sc_operand_hint(x->q, t) :
			t == r->n_ops ? sc_result_hint(x->q) : NULL;
		for (uint32_t d = 0; h && d < h->rank && d < r->rank[t]; d++)
			for (uint32_t k = 0; r->factor[t][d] != KR_NONE && k < h->dims[d].n; k++)
				if (h->dims[d].axes[k] < x->q->mesh->n_axes)
					allowed[h->dims[d].axes[k]] |=
						any & (1ull << r->factor[t][d]);
	}
}

bool shs_kernel_rule_serve(const shs_pquery *q, shs_pemit *out, const shs_host_api *api,
			   int *rc)
{
	double declared;
	const shs_pshape *res[KR_MAX_TENSORS];
	uint64_t allowed[SHS_PLUGIN_MAX_AXES];
	uint32_t n_res = ru_leaf_count(&q->instr->shape);
	kr_rule r;
	kr_ctx x = { q, out, api, &r, res, 0 };

	if (n_res + q->instr->n_operands > KR_MAX_TENSORS)
		return false;
	ru_leaf_shapes(&q->instr->shape, res, 0);
	if (!rule_of(q->instr, res, n_res, &r) || !rule_fits(&x))
		return false;
	/* a kernel's own cost estimate (Pallas' pl.CostEstimate) is its word on its FLOPs */
	if ((declared = sc_config_number(q->instr->backend_config, "\"flops\"", ':')) >= 0)
		r.flops = declared;
	allowed_of(&x, allowed);
	*rc = sc_enum_assign(r.n_factors, r.size, allowed, q->mesh, emit_one, &x) < 0 ? -1 : 0;
	if (*rc)
		api->fail(out, "%s: cannot enumerate the %u factors of its rule", q->instr->name,
			  r.n_factors);
	return true;
}
