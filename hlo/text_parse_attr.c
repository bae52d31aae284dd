/* HLO text parser: instruction attributes, and the frontend and raw ones modules have too. */
#include "raw_attrs.h"
#include "text_parse.h"

#include <string.h>

enum {
	SPATIAL_MAX = 10,     /* dim_labels name spatial dims with one digit each */
	DIM_LABEL_PARTS = 3,  /* input_kernel->output */
	SPATIAL_FREE = -1
};

/* ---- Values: booleans, integer lists, raw text ----------------------------------------------- */

static int parse_bool(shs__parser *p, bool *out)
{
	if (shs__at_word(p, "true") || shs__at_word(p, "false")) {
		*out = shs__at_word(p, "true");
		shs__next(p);
		return SHS_OK;
	}
	return shs__fail(p, "expected true or false");
}

static int parse_i64s(shs__parser *p, shs_i64s *out)
{
	int rc = shs__parse_i64_scratch(p);

	return rc ? rc : shs__take_i64s(p, out);
}

/* A raw value at the current token, copied verbatim; the lexer moves past it. */
static int parse_raw(shs__parser *p, const char **out, size_t *out_len)
{
	size_t start = p->lx.tok.off, end = start;
	int rc = shs__lex_raw_end(&p->lx, start, &end);
	const char *nul;

	if (rc)
		return rc;
	/* kept as a C string: it would end there, and print unbalanced */
	if ((nul = memchr(p->lx.src + start, 0, end - start)))
		return shs__fail_at(p, (size_t)(nul - p->lx.src), "a NUL byte in this value, "
				    "which this does not keep");
	*out = shs_arena_strndup(p->a, p->lx.src + start, end - start);
	if (!*out)
		return shs__oom(p);
	if (out_len)
		*out_len = end - start;
	shs__lex_seek(&p->lx, end);
	return SHS_OK;
}

/* A `{...}` value kept raw, or a quoted string. */
static int parse_raw_or_string(shs__parser *p, const char **out, size_t *out_len)
{
	if (shs__at(p, SHS_TOK_LBRACE))
		return parse_raw(p, out, out_len);
	return shs__parse_string(p, out, out_len);
}

/* ---- Attributes kept as written -------------------------------------------------------------- */

int shs__parse_frontend_attrs(shs__parser *p, uint32_t *n, shs_attr_kv **out)
{
	int rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open the frontend attributes");

	*n = 0;
	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		const char *key, *value = NULL;

		if (*n && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or '}' in frontend attributes")))
			break;
		if (!shs__at(p, SHS_TOK_IDENT))
			return shs__fail(p, "expected a frontend attribute name");
		key = shs_arena_strndup(p->a, p->lx.src + p->lx.tok.off, p->lx.tok.len);
		if (!key)
			return shs__oom(p);
		shs__next(p);
		rc = shs__expect(p, SHS_TOK_EQ, "'=' after the frontend attribute name");
		if (rc == SHS_OK)
			rc = parse_raw_or_string(p, &value, NULL);
		if (rc == SHS_OK)
			rc = shs__grow_array(p, (void **)out, *n, sizeof(**out));
		if (rc == SHS_OK) {
			(*out)[*n].key = key;
			(*out)[*n].value = value;
			(*n)++;
		}
	}
	if (rc == SHS_OK)
		shs__next(p);
	return rc;
}

int shs__parse_raw_attr(shs__parser *p, const char *what, uint32_t *n, shs_raw_attr **arr)
{
	const shs_tok name = p->lx.tok;
	const char *key, *value;
	int rc;

	for (uint32_t i = 0; i < *n; i++)
		if (strlen((*arr)[i].name) == name.len &&
		    !memcmp((*arr)[i].name, p->lx.src + name.off, name.len))
			return shs__fail(p, "%s given twice", what);
	shs__next(p);
	if (!shs__at(p, SHS_TOK_EQ))
		return shs__fail(p, "expected '=' after the %s name", what);
	shs__next(p);
	if ((rc = parse_raw(p, &value, NULL)))
		return rc;
	if (!(key = shs_arena_strndup(p->a, p->lx.src + name.off, name.len)))
		return shs__oom(p);
	if ((rc = shs__grow_array(p, (void **)arr, *n, sizeof(**arr))))
		return rc;
	(*arr)[*n].name = key;
	(*arr)[*n].value = value;
	(*n)++;
	return SHS_OK;
}

int shs__parse_raw_checked(shs__parser *p, const char *what, uint32_t *n, shs_raw_attr **arr,
			   shs__canonical_fn canonical)
{
	size_t off = shs__lex_skip_blanks(&p->lx, p->lx.tok.off + p->lx.tok.len);
	shs_raw_attr *r;
	char why[160];
	int rc = shs__parse_raw_attr(p, what, n, arr);

	if (rc)
		return rc;
	r = &(*arr)[*n - 1];
	rc = canonical(p->a, r->name, r->value, &r->value, why, sizeof(why));
	if (rc == SHS_ENOMEM)
		return shs__oom(p);
	return rc ? shs__fail_at(p, off + 1, "%s: %s", r->name, why) : SHS_OK;
}

/* ---- Instruction attributes ------------------------------------------------------------------ */

#define SHS_ATTR_LIST(X)                                                                 \
	X(METADATA, "metadata") X(SHARDING, "sharding") X(DIMENSIONS, "dimensions")          \
	X(INDEX, "index") X(IOTA_DIMENSION, "iota_dimension") X(DIRECTION, "direction")      \
	X(TYPE, "type") X(LHS_BATCH, "lhs_batch_dims") X(RHS_BATCH, "rhs_batch_dims")        \
	X(LHS_CONTRACTING, "lhs_contracting_dims") X(RHS_CONTRACTING, "rhs_contracting_dims") \
	X(CC_TARGET, "custom_call_target") X(CC_SIDE_EFFECT, "custom_call_has_side_effect")  \
	X(OFFSET_DIMS, "offset_dims") X(COLLAPSED_SLICE_DIMS, "collapsed_slice_dims")        \
	X(START_INDEX_MAP, "start_index_map") X(OPERAND_BATCHING_DIMS, "operand_batching_dims") \
	X(START_INDICES_BATCHING_DIMS, "start_indices_batching_dims")                        \
	X(INDEX_VECTOR_DIM, "index_vector_dim") X(SLICE_SIZES, "slice_sizes")                \
	X(UPDATE_WINDOW_DIMS, "update_window_dims")                                          \
	X(INSERTED_WINDOW_DIMS, "inserted_window_dims")                                      \
	X(SCATTER_DIMS_TO_OPERAND_DIMS, "scatter_dims_to_operand_dims")                      \
	X(INPUT_BATCHING_DIMS, "input_batching_dims")                                        \
	X(SCATTER_INDICES_BATCHING_DIMS, "scatter_indices_batching_dims")                    \
	X(INDICES_ARE_SORTED, "indices_are_sorted") X(UNIQUE_INDICES, "unique_indices")      \
	X(DYNAMIC_SLICE_SIZES, "dynamic_slice_sizes") X(SLICE, "slice") X(WINDOW, "window")  \
	X(DIM_LABELS, "dim_labels") X(FEATURE_GROUP_COUNT, "feature_group_count")            \
	X(BATCH_GROUP_COUNT, "batch_group_count") X(EXPONENT_BITS, "exponent_bits")          \
	X(MANTISSA_BITS, "mantissa_bits") X(PADDING, "padding") X(KIND, "kind")              \
	X(BACKEND_CONFIG, "backend_config") X(FRONTEND_ATTRIBUTES, "frontend_attributes")    \
	X(CHANNEL_ID, "channel_id") X(OPERAND_PRECISION, "operand_precision")                \
	X(IS_STABLE, "is_stable") X(LARGEST, "largest") X(CONTROL, "control-predecessors")   \
	X(TO_APPLY, "to_apply") X(CALLS, "calls") X(CONDITION, "condition") X(BODY, "body")  \
	X(BRANCHES, "branch_computations") X(TRUE_COMP, "true_computation")                  \
	X(FALSE_COMP, "false_computation") X(SELECT, "select") X(SCATTER, "scatter")         \
	X(CALLED_COMPS, "called_computations") X(OPERAND_LAYOUTS, "operand_layout_constraints")

enum attr_id {
#define SHS_ATTR_ENUM(e, name) A_##e,
	SHS_ATTR_LIST(SHS_ATTR_ENUM)
#undef SHS_ATTR_ENUM
	A_COUNT
};

static const char *const attr_names[A_COUNT] = {
#define SHS_ATTR_NAME(e, name) [A_##e] = name,
	SHS_ATTR_LIST(SHS_ATTR_NAME)
#undef SHS_ATTR_NAME
};

_Static_assert(A_COUNT <= 64, "attribute ids fit a 64-bit mask");

/* The called-computation attributes of one instruction, in the order of `called`. */
enum call_slot {
	CALL_BODY, CALL_CONDITION, CALL_TRUE, CALL_FALSE, CALL_SELECT, CALL_SCATTER,
	CALL_TO_APPLY, CALL_SINGLES
};
enum call_list { LIST_CALLS, LIST_BRANCHES, LIST_CALLED, CALL_LISTS };

typedef struct comp_list {
	uint32_t n;
	uint32_t *v;
} comp_list;

/* What the attributes of one instruction collected so far. */
typedef struct attr_state {
	uint64_t seen;
	uint32_t single[CALL_SINGLES];
	comp_list lists[CALL_LISTS];
} attr_state;

/* have, or a new zeroed structure of size bytes when have is NULL; NULL when out of memory. */
static void *need(shs__parser *p, void *have, size_t size)
{
	return have ? have : shs_arena_calloc(p->a, 1, size);
}

/* The int64 list an attribute fills, or NULL (when the holder cannot be allocated: *oom). */
static shs_i64s *list_target(shs__parser *p, shs_instr *ins, int id, bool *no_mem)
{
	shs_dot_dims *d = NULL;
	shs_gather_dims *g = NULL;
	shs_scatter_dims *s = NULL;

	*no_mem = false;
	switch (id) {
	case A_DIMENSIONS: return &ins->dimensions;
	case A_SLICE_SIZES: return &ins->gather_slice_sizes;
	case A_DYNAMIC_SLICE_SIZES: return &ins->dynamic_slice_sizes;
	case A_LHS_BATCH: case A_RHS_BATCH: case A_LHS_CONTRACTING: case A_RHS_CONTRACTING:
		if (!(d = ins->dot = need(p, ins->dot, sizeof(*d))))
			break;
		return id == A_LHS_BATCH ? &d->lhs_batch : id == A_RHS_BATCH ? &d->rhs_batch
			: id == A_LHS_CONTRACTING ? &d->lhs_contracting : &d->rhs_contracting;
	case A_OFFSET_DIMS: case A_COLLAPSED_SLICE_DIMS: case A_START_INDEX_MAP:
	case A_OPERAND_BATCHING_DIMS: case A_START_INDICES_BATCHING_DIMS:
		if (!(g = ins->gather = need(p, ins->gather, sizeof(*g))))
			break;
		return id == A_OFFSET_DIMS ? &g->offset_dims
			: id == A_COLLAPSED_SLICE_DIMS ? &g->collapsed_slice_dims
			: id == A_START_INDEX_MAP ? &g->start_index_map
			: id == A_OPERAND_BATCHING_DIMS ? &g->operand_batching_dims
			: &g->start_indices_batching_dims;
	case A_UPDATE_WINDOW_DIMS: case A_INSERTED_WINDOW_DIMS:
	case A_SCATTER_DIMS_TO_OPERAND_DIMS: case A_INPUT_BATCHING_DIMS:
	case A_SCATTER_INDICES_BATCHING_DIMS:
		if (!(s = ins->scatter = need(p, ins->scatter, sizeof(*s))))
			break;
		return id == A_UPDATE_WINDOW_DIMS ? &s->update_window_dims
			: id == A_INSERTED_WINDOW_DIMS ? &s->inserted_window_dims
			: id == A_SCATTER_DIMS_TO_OPERAND_DIMS ? &s->scatter_dims_to_operand_dims
			: id == A_INPUT_BATCHING_DIMS ? &s->input_batching_dims
			: &s->scatter_indices_batching_dims;
	default:
		return NULL;
	}
	*no_mem = true;
	return NULL;
}

/* What the groups of a raw `AxBxC` value are. */
enum raw_kind { RAW_INTS, RAW_PADS, RAW_PADS_INTERIOR };

/* `low_high`, and `_interior` after it when interior allows it. */
static int raw_pad(shs__parser *p, size_t *off, shs_pad_dim *d, bool interior, const char *what)
{
	d->interior = 0;
	if (!shs__lex_raw_int(&p->lx, off, &d->low) || *off >= p->lx.len ||
	    p->lx.src[(*off)++] != '_' || !shs__lex_raw_int(&p->lx, off, &d->high))
		return shs__fail_at(p, *off, "expected low_high in %s", what);
	if (interior && *off < p->lx.len && p->lx.src[*off] == '_') {
		(*off)++;
		if (!shs__lex_raw_int(&p->lx, off, &d->interior) || d->interior < 0)
			return shs__fail_at(p, *off, "expected a non-negative interior padding");
	}
	return SHS_OK;
}

/* Reads groups of kind separated by 'x' at *off, without blanks inside, into vals (int64_t or
 * shs_pad_dim, SHS_MAX_RANK of them); *n counts them. */
static int raw_groups(shs__parser *p, size_t *off, enum raw_kind kind, void *vals, uint32_t *n,
		      const char *what)
{
	int rc;

	for (*n = 0;; (*off)++) { /* past the 'x' before the next group */
		if (*n == SHS_MAX_RANK)
			return shs__fail_at(p, *off, "%s has more than %d dimensions", what,
					    SHS_MAX_RANK);
		if (kind != RAW_INTS)
			rc = raw_pad(p, off, &((shs_pad_dim *)vals)[*n], kind == RAW_PADS_INTERIOR,
				     what);
		else if (!shs__lex_raw_int(&p->lx, off, &((int64_t *)vals)[*n]))
			rc = shs__fail_at(p, *off, "expected an integer in %s", what);
		else
			rc = SHS_OK;
		if (rc)
			return rc;
		(*n)++;
		if (*off >= p->lx.len || p->lx.src[*off] != 'x')
			break;
	}
	if (*off < p->lx.len && shs__lex_is_ident_char(p->lx.src[*off]))
		return shs__fail_at(p, *off, "malformed %s", what);
	return SHS_OK;
}

enum win_field { W_SIZE, W_STRIDE, W_PAD, W_LHS_DILATE, W_RHS_DILATE, W_RHS_REVERSAL, W_FIELDS };

static int window_field(const shs__parser *p)
{
	static const char *const keys[W_FIELDS] = {
		"size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal",
	};

	for (int f = 0; f < W_FIELDS; f++)
		if (shs__at_word(p, keys[f]))
			return f;
	return -1;
}

/* Builds the window from the fields read; defaults: stride and dilations 1, no padding. */
static int make_window(shs__parser *p, shs_instr *ins, int64_t (*vals)[SHS_MAX_RANK],
		       const shs_pad_dim *pads, const uint32_t *counts, uint32_t given,
		       size_t open_off)
{
	uint32_t n = counts[W_SIZE];

	for (int f = 0; f < W_FIELDS; f++)
		if ((given >> f & 1) && counts[f] != n)
			return shs__fail_at(p, open_off,
					    "window fields disagree on the number of dimensions");
	if (given && !(given & 1))
		return shs__fail_at(p, open_off, "window without size");
	ins->window = shs_arena_calloc(p->a, n ? n : 1, sizeof(*ins->window));
	if (!ins->window)
		return shs__oom(p);
	ins->n_window = n;
	for (uint32_t i = 0; i < n; i++) {
		shs_window_dim *w = &ins->window[i];

		w->size = vals[W_SIZE][i];
		w->stride = (given >> W_STRIDE & 1) ? vals[W_STRIDE][i] : 1;
		w->pad_low = (given >> W_PAD & 1) ? pads[i].low : 0;
		w->pad_high = (given >> W_PAD & 1) ? pads[i].high : 0;
		w->base_dilation = (given >> W_LHS_DILATE & 1) ? vals[W_LHS_DILATE][i] : 1;
		w->window_dilation = (given >> W_RHS_DILATE & 1) ? vals[W_RHS_DILATE][i] : 1;
		w->reversal = (given >> W_RHS_REVERSAL & 1) && vals[W_RHS_REVERSAL][i];
	}
	return SHS_OK;
}

/* `{size=3x3 stride=2x1 pad=0_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x1}`. */
static int parse_window(shs__parser *p, shs_instr *ins)
{
	int64_t vals[W_FIELDS][SHS_MAX_RANK];
	shs_pad_dim pads[SHS_MAX_RANK];
	uint32_t counts[W_FIELDS] = { 0 }, given = 0;
	size_t open_off = p->lx.tok.off;
	int rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open the window");

	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		int f = window_field(p);
		size_t off;

		if (f < 0)
			return shs__fail(p, "unknown window field");
		if (given >> f & 1)
			return shs__fail(p, "window field given twice");
		given |= 1u << f;
		shs__next(p);
		if ((rc = shs__expect(p, SHS_TOK_EQ, "'=' after the window field")))
			return rc;
		off = p->lx.tok.off;
		if (f == W_PAD)
			rc = raw_groups(p, &off, RAW_PADS, pads, &counts[f], "window padding");
		else
			rc = raw_groups(p, &off, RAW_INTS, vals[f], &counts[f], "window");
		if (rc == SHS_OK)
			shs__lex_seek(&p->lx, off);
	}
	if (rc == SHS_OK)
		shs__next(p);
	return rc ? rc : make_window(p, ins, vals, pads, counts, given, open_off);
}

/* Positions of the labels of one part of dim_labels: a and b (batch/feature or input/output
 * feature) and the spatial digits; false when malformed. */
static bool dim_label_part(const char *s, size_t n, char a, char b, int64_t *pa, int64_t *pb,
			   int64_t *spatial, uint32_t *n_spatial)
{
	int64_t pos[SPATIAL_MAX];

	if (n < 2 || n - 2 > SPATIAL_MAX)
		return false;
	*pa = *pb = SPATIAL_FREE;
	for (int i = 0; i < SPATIAL_MAX; i++)
		pos[i] = SPATIAL_FREE;
	*n_spatial = (uint32_t)(n - 2);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int64_t *slot = c == a ? pa : c == b ? pb : NULL;

		if (!slot && c >= '0' && c < '0' + (int)*n_spatial)
			slot = &pos[c - '0'];
		if (!slot || *slot != SPATIAL_FREE)
			return false;
		*slot = (int64_t)i;
	}
	memcpy(spatial, pos, *n_spatial * sizeof(*pos));
	return true;
}

static int spatial_list(shs__parser *p, shs_i64s *out, const int64_t *v, uint32_t n)
{
	out->n = n;
	out->v = n ? shs_arena_memdup(p->a, v, n * sizeof(*v)) : NULL;
	return (n && !out->v) ? shs__oom(p) : SHS_OK;
}

/* `b01f_01io->b01f`: positions of batch, feature and spatial dims in each part. */
static int parse_dim_labels(shs__parser *p, shs_instr *ins)
{
	const char *s = p->lx.src;
	size_t start = p->lx.tok.off, end = start, us = SIZE_MAX, arrow = SIZE_MAX;
	int64_t sp[DIM_LABEL_PARTS][SPATIAL_MAX];
	uint32_t ns[DIM_LABEL_PARTS];
	shs_conv_dims *c;
	int rc;

	while (end < p->lx.len && (shs__lex_is_ident_char(s[end]) || s[end] == '>'))
		end++;
	for (size_t i = start; i < end; i++) {
		if (s[i] == '_' && us == SIZE_MAX)
			us = i;
		if (s[i] == '-' && i + 1 < end && s[i + 1] == '>' && arrow == SIZE_MAX)
			arrow = i;
	}
	if (!(c = ins->conv = need(p, ins->conv, sizeof(*c))))
		return shs__oom(p);
	if (us == SIZE_MAX || arrow == SIZE_MAX || us > arrow ||
	    !dim_label_part(s + start, us - start, 'b', 'f', &c->input_batch, &c->input_feature,
			    sp[0], &ns[0]) ||
	    !dim_label_part(s + us + 1, arrow - us - 1, 'i', 'o', &c->kernel_input_feature,
			    &c->kernel_output_feature, sp[1], &ns[1]) ||
	    !dim_label_part(s + arrow + 2, end - arrow - 2, 'b', 'f', &c->output_batch,
			    &c->output_feature, sp[2], &ns[2]) ||
	    ns[0] != ns[1] || ns[1] != ns[2])
		return shs__fail_at(p, start, "malformed dim_labels");
	if ((rc = spatial_list(p, &c->input_spatial, sp[0], ns[0])) ||
	    (rc = spatial_list(p, &c->kernel_spatial, sp[1], ns[1])) ||
	    (rc = spatial_list(p, &c->output_spatial, sp[2], ns[2])))
		return rc;
	shs__lex_seek(&p->lx, end);
	return SHS_OK;
}

/* `{[0:16], [0:8:2]}`. */
static int parse_slice(shs__parser *p, shs_instr *ins)
{
	int rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open the slice");
	uint32_t n = 0;

	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		shs_slice_dim *d;

		if (n && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or '}' in the slice")))
			return rc;
		if ((rc = shs__grow_array(p, (void **)&ins->slice, n, sizeof(*ins->slice))))
			return rc;
		d = &ins->slice[n];
		d->stride = 1;
		rc = shs__expect(p, SHS_TOK_LBRACKET, "'[' to open a slice range");
		if (rc == SHS_OK)
			rc = shs__parse_int(p, INT64_MIN, INT64_MAX, "the slice start", &d->start);
		if (rc == SHS_OK)
			rc = shs__expect(p, SHS_TOK_COLON, "':' after the slice start");
		if (rc == SHS_OK)
			rc = shs__parse_int(p, INT64_MIN, INT64_MAX, "the slice limit", &d->limit);
		if (rc == SHS_OK && shs__at(p, SHS_TOK_COLON)) {
			shs__next(p);
			rc = shs__parse_int(p, INT64_MIN, INT64_MAX, "the slice stride",
					    &d->stride);
		}
		if (rc == SHS_OK)
			rc = shs__expect(p, SHS_TOK_RBRACKET, "']' to close a slice range");
		n++;
	}
	if (rc == SHS_OK)
		shs__next(p);
	ins->n_slice = n;
	return rc;
}

static int parse_padding(shs__parser *p, shs_instr *ins)
{
	shs_pad_dim pads[SHS_MAX_RANK];
	size_t off = p->lx.tok.off;
	uint32_t n = 0;
	int rc = raw_groups(p, &off, RAW_PADS_INTERIOR, pads, &n, "padding");

	if (rc)
		return rc;
	ins->padding = shs_arena_memdup(p->a, pads, n * sizeof(*pads));
	if (!ins->padding)
		return shs__oom(p);
	ins->n_padding = n;
	shs__lex_seek(&p->lx, off);
	return SHS_OK;
}

/* `{default, high, highest}`. */
static int parse_precision(shs__parser *p, shs_instr *ins)
{
	static const char *const names[] = { "default", "high", "highest" };
	static const char *const upper[] = { "DEFAULT", "HIGH", "HIGHEST" };
	int rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open operand_precision");

	p->i64s.n = 0;
	while (rc == SHS_OK && !shs__at(p, SHS_TOK_RBRACE)) {
		int k;

		if (p->i64s.n &&
		    (rc = shs__expect(p, SHS_TOK_COMMA, "',' or '}' in operand_precision")))
			return rc;
		for (k = 0; k < SHS_PRECISION_HIGHEST + 1; k++)
			if (shs__at_word(p, names[k]) || shs__at_word(p, upper[k]))
				break;
		if (k > SHS_PRECISION_HIGHEST)
			return shs__fail(p, "expected default, high or highest");
		shs__next(p);
		rc = shs__push_i64(p, k);
	}
	if (rc)
		return rc;
	shs__next(p);
	ins->n_precision = (uint32_t)p->i64s.n;
	ins->precision = shs_arena_alloc(p->a, p->i64s.n * sizeof(*ins->precision));
	if (!ins->precision)
		return shs__oom(p);
	for (size_t i = 0; i < p->i64s.n; i++)
		ins->precision[i] = (int32_t)((int64_t *)p->i64s.data)[i];
	return SHS_OK;
}

static int parse_backend_config(shs__parser *p, shs_instr *ins)
{
	const char *s = NULL;
	size_t n = 0;
	int rc = parse_raw_or_string(p, &s, &n);

	ins->backend_config.data = (const uint8_t *)s;
	ins->backend_config.len = n;
	return rc;
}

/* `{...}` of metadata or sharding (id), read by their own parsers. */
static int parse_nested(shs__parser *p, shs_instr *ins, int id)
{
	size_t off = p->lx.tok.off, len = p->lx.len - off, used = 0, err_off = 0;
	const char *src = p->lx.src + off;
	int rc;

	if (!shs__at(p, SHS_TOK_LBRACE))
		return shs__fail(p, "expected '{' to open the %s",
				 id == A_METADATA ? "metadata" : "sharding");
	if (id == A_SHARDING)
		rc = shs_sharding_parse(p->a, src, len, &used, &ins->sharding, &err_off, &p->err);
	else if (!(ins->metadata = shs_arena_calloc(p->a, 1, sizeof(*ins->metadata))))
		return shs__oom(p);
	else
		rc = shs_metadata_parse(p->a, src, len, &used, ins->metadata, &err_off, &p->err);
	return shs__nested_done(p, rc, off, used, err_off);
}

/* index_vector_dim of a scatter, or of a gather for the other opcodes. */
static int parse_index_vector_dim(shs__parser *p, shs_instr *ins)
{
	int64_t *dim;

	if (ins->op == SHS_OP_SCATTER) {
		if (!(ins->scatter = need(p, ins->scatter, sizeof(*ins->scatter))))
			return shs__oom(p);
		dim = &ins->scatter->index_vector_dim;
	} else {
		if (!(ins->gather = need(p, ins->gather, sizeof(*ins->gather))))
			return shs__oom(p);
		dim = &ins->gather->index_vector_dim;
	}
	return shs__parse_int(p, 0, INT64_MAX, "index_vector_dim", dim);
}

/* Attributes with a single int, bool or word value; *handled false for the others. */
static int parse_scalar_attr(shs__parser *p, shs_instr *ins, int id, bool *handled)
{
	int64_t v = 0;
	int rc;

	*handled = true;
	switch (id) {
	case A_INDEX: return shs__parse_int(p, 0, INT64_MAX, "index", &ins->tuple_index);
	case A_INDEX_VECTOR_DIM: return parse_index_vector_dim(p, ins);
	case A_FEATURE_GROUP_COUNT:
		return shs__parse_int(p, 1, INT64_MAX, "feature_group_count",
				      &ins->feature_group_count);
	case A_BATCH_GROUP_COUNT:
		return shs__parse_int(p, 1, INT64_MAX, "batch_group_count",
				      &ins->batch_group_count);
	case A_CHANNEL_ID: return shs__parse_int(p, 0, INT64_MAX, "channel_id", &ins->channel_id);
	case A_EXPONENT_BITS: case A_MANTISSA_BITS:
		rc = shs__parse_int(p, 0, INT32_MAX, attr_names[id], &v);
		*(id == A_EXPONENT_BITS ? &ins->exponent_bits : &ins->mantissa_bits) = (int32_t)v;
		return rc;
	case A_CC_SIDE_EFFECT: return parse_bool(p, &ins->custom_call_has_side_effect);
	case A_INDICES_ARE_SORTED: return parse_bool(p, &ins->indices_are_sorted);
	case A_UNIQUE_INDICES: return parse_bool(p, &ins->unique_indices);
	case A_IS_STABLE: return parse_bool(p, &ins->is_stable);
	case A_LARGEST: return parse_bool(p, &ins->largest);
	case A_DIRECTION:
		return shs__parse_word(p, shs__comparison_directions, "comparison direction",
				       &ins->comparison_direction);
	case A_TYPE:
		return shs__parse_word(p, shs__comparison_types, "comparison type",
				       &ins->comparison_type);
	case A_KIND: return shs__parse_word(p, shs__fusion_kinds, "fusion kind", &ins->fusion_kind);
	case A_CC_TARGET: return shs__parse_string(p, &ins->custom_call_target, NULL);
	default: break;
	}
	*handled = false;
	return SHS_OK;
}

static int parse_iota_dimension(shs__parser *p, shs_instr *ins)
{
	int64_t v;
	int rc = shs__parse_int(p, 0, INT64_MAX, "iota_dimension", &v);

	if (rc)
		return rc;
	ins->dimensions.n = 1;
	ins->dimensions.v = shs_arena_memdup(p->a, &v, sizeof(v));
	return ins->dimensions.v ? SHS_OK : shs__oom(p);
}

/* Called-computation attributes, collected in st and put in order once all are read. */
static int parse_call_attr(shs__parser *p, attr_state *st, int id)
{
	int slot = id == A_BODY ? CALL_BODY : id == A_CONDITION ? CALL_CONDITION
		: id == A_TRUE_COMP ? CALL_TRUE : id == A_FALSE_COMP ? CALL_FALSE
		: id == A_SELECT ? CALL_SELECT : id == A_SCATTER ? CALL_SCATTER
		: id == A_TO_APPLY ? CALL_TO_APPLY : -1;
	comp_list *list;

	if (slot >= 0)
		return shs__parse_comp_ref(p, &st->single[slot]);
	list = &st->lists[id == A_CALLS ? LIST_CALLS : id == A_BRANCHES ? LIST_BRANCHES
									 : LIST_CALLED];
	return shs__parse_comp_list(p, &list->n, &list->v);
}

/* operand_layout_constraints={shape, ...}: a custom call's operand shapes with their layouts. */
static int parse_operand_layouts(shs__parser *p, shs_instr *ins)
{
	shs_shape *shapes = NULL;
	uint32_t n = 0;
	int rc;

	if ((rc = shs__expect(p, SHS_TOK_LBRACE, "'{' to open the operand layouts")))
		return rc;
	while (!shs__at(p, SHS_TOK_RBRACE)) {
		if (n && (rc = shs__expect(p, SHS_TOK_COMMA, "',' or '}' in the operand layouts")))
			return rc;
		if ((rc = shs__grow_array(p, (void **)&shapes, n, sizeof(*shapes))))
			return rc;
		memset(&shapes[n], 0, sizeof(shapes[n]));
		if ((rc = shs__parse_shape(p, &shapes[n++], 0)))
			return rc;
	}
	shs__next(p);
	ins->layout_constrained = true;
	ins->n_operand_layouts = n;
	ins->operand_layouts = shapes;
	return SHS_OK;
}

static int parse_modelled_attr(shs__parser *p, shs_instr *ins, uint32_t index, attr_state *st,
			       int id)
{
	bool no_mem, handled;
	shs_i64s *list = list_target(p, ins, id, &no_mem);
	int rc;

	if (no_mem)
		return shs__oom(p);
	if (list)
		return parse_i64s(p, list);
	rc = parse_scalar_attr(p, ins, id, &handled);
	if (handled)
		return rc;
	switch (id) {
	case A_METADATA: case A_SHARDING: return parse_nested(p, ins, id);
	case A_IOTA_DIMENSION: return parse_iota_dimension(p, ins);
	case A_SLICE: return parse_slice(p, ins);
	case A_WINDOW: return parse_window(p, ins);
	case A_DIM_LABELS: return parse_dim_labels(p, ins);
	case A_PADDING: return parse_padding(p, ins);
	case A_BACKEND_CONFIG: return parse_backend_config(p, ins);
	case A_FRONTEND_ATTRIBUTES:
		return shs__parse_frontend_attrs(p, &ins->n_frontend_attrs, &ins->frontend_attrs);
	case A_OPERAND_PRECISION: return parse_precision(p, ins);
	case A_OPERAND_LAYOUTS: return parse_operand_layouts(p, ins);
	case A_CONTROL: return shs__parse_control(p, ins, index);
	default: return parse_call_attr(p, st, id);
	}
}

/* One `name=value` after an instruction. */
static int parse_attr(shs__parser *p, shs_instr *ins, uint32_t index, attr_state *st)
{
	const shs_tok name = p->lx.tok;
	uint32_t id, bit;
	int rc;

	if (name.kind != SHS_TOK_IDENT)
		return shs__fail(p, "expected an attribute name");
	if (!shs__names_find(&p->attrs, p->lx.src + name.off, name.len, &id))
		return shs__parse_raw_checked(p, "attribute", &ins->n_raw_attrs, &ins->raw_attrs,
					      shs__instr_canonical);
	/* iota_dimension fills dimensions: it counts as the same attribute */
	bit = id == A_IOTA_DIMENSION ? A_DIMENSIONS : id;
	if (st->seen >> bit & 1)
		return shs__fail(p, "attribute given twice");
	st->seen |= (uint64_t)1 << bit;
	shs__next(p);
	if ((rc = shs__expect(p, SHS_TOK_EQ, "'=' after the attribute name")))
		return rc;
	return parse_modelled_attr(p, ins, index, st, (int)id);
}

/* Puts the called computations in XLA's order: while [body, condition], conditional
 * [true, false] or the branches, select-and-scatter [select, scatter], then to_apply, calls
 * and called_computations. */
static int set_called(shs__parser *p, shs_instr *ins, const attr_state *st)
{
	uint32_t n = 0, k = 0;

	for (int s = 0; s < CALL_SINGLES; s++)
		n += st->single[s] != SHS__NO_INDEX;
	for (int l = 0; l < CALL_LISTS; l++)
		n += st->lists[l].n;
	if (!n)
		return SHS_OK;
	ins->called = shs_arena_alloc(p->a, n * sizeof(*ins->called));
	if (!ins->called)
		return shs__oom(p);
	for (int s = 0; s < CALL_SINGLES; s++)
		if (st->single[s] != SHS__NO_INDEX)
			ins->called[k++] = st->single[s];
	for (int l = 0; l < CALL_LISTS; l++)
		for (uint32_t i = 0; i < st->lists[l].n; i++)
			ins->called[k++] = st->lists[l].v[i];
	ins->n_called = n;
	return SHS_OK;
}

/* Structures XLA always writes for these opcodes, so the IR has them even when empty. */
static int add_op_defaults(shs__parser *p, shs_instr *ins)
{
	bool ok = true;

	switch (ins->op) {
	case SHS_OP_DOT: ok = (ins->dot = need(p, ins->dot, sizeof(*ins->dot))) != NULL; break;
	case SHS_OP_GATHER:
		ok = (ins->gather = need(p, ins->gather, sizeof(*ins->gather))) != NULL;
		break;
	case SHS_OP_SCATTER:
		ok = (ins->scatter = need(p, ins->scatter, sizeof(*ins->scatter))) != NULL;
		break;
	case SHS_OP_CONVOLUTION:
		ok = (ins->conv = need(p, ins->conv, sizeof(*ins->conv))) != NULL;
		/* fall through */
	case SHS_OP_REDUCE_WINDOW:
	case SHS_OP_SELECT_AND_SCATTER:
		if (ok)
			ok = (ins->window = need(p, ins->window, sizeof(*ins->window))) != NULL;
		break;
	default:
		break;
	}
	return ok ? SHS_OK : shs__oom(p);
}

int shs__parse_instr_attrs(shs__parser *p, shs_instr *ins, uint32_t index)
{
	attr_state st;
	int rc;

	memset(&st, 0, sizeof(st));
	for (int s = 0; s < CALL_SINGLES; s++)
		st.single[s] = SHS__NO_INDEX;
	while (shs__at(p, SHS_TOK_COMMA)) {
		shs__next(p);
		if ((rc = parse_attr(p, ins, index, &st)))
			return rc;
	}
	/* XLA's parser requires them; the zeroed ones printed dim_labels=f_o->f (fuzz_text) */
	if (ins->op == SHS_OP_CONVOLUTION && !(st.seen >> A_DIM_LABELS & 1))
		return shs__fail(p, "a convolution needs dim_labels");
	if ((rc = set_called(p, ins, &st)) || (rc = add_op_defaults(p, ins)))
		return rc;
	return shs__raw_finish(p->a, ins) ? shs__oom(p) : SHS_OK;
}

int shs__attr_keywords(shs__parser *p)
{
	for (int a = 0; a < A_COUNT; a++)
		if (shs__names_put(&p->attrs, attr_names[a], strlen(attr_names[a]), (uint32_t)a))
			return SHS_ENOMEM;
	return SHS_OK;
}
