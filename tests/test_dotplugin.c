/* Tests of the dot plugin: its candidates against an independent enumeration, costs, hints. */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "test_util.h"

enum {
	T_MAX_DIMS = 16,     /* dot dims of one test case */
	T_MAX_RANK = 8,
	T_NONE = -1,         /* a dot dim absent from an operand or the result */
	T_TYPE_BF16 = 16,
	T_TYPE_F32 = 11,
	T_BF16_BYTES = 2,
	T_F32_BYTES = 4,
	T_STR = 256
};

/* One dot dim of a test case: its dim in lhs, rhs and the result (T_NONE when absent). A
 * contracting dim has result T_NONE; the contracting dims are listed in the dot's
 * lhs_contracting_dims order. */
typedef struct t_dotdim {
	int l, r, res;
} t_dotdim;

/* A test dot: the module, and its dims described by hand (independently of the plugin). */
typedef struct t_case {
	const char *hlo;
	uint32_t n_dims;
	t_dotdim dims[T_MAX_DIMS];
} t_case;

/* One batch, one lhs free, one rhs free and two contracting dims (16 and 4); 6 does not divide
 * by tensor=4, 12 not by 16, 4 not by 8: some assignments are filtered. */
static const t_case case_small = {
	"HloModule m\n"
	"ENTRY e {\n"
	"  a = bf16[8,4,6,16] parameter(0)\n"
	"  b = bf16[8,16,4,12] parameter(1)\n"
	"  ROOT d = f32[8,6,12] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
	"lhs_contracting_dims={3,1}, rhs_contracting_dims={1,2}\n"
	"}\n",
	5,
	{ { 0, 0, 0 }, { 2, T_NONE, 1 }, { T_NONE, 3, 2 }, { 3, 1, T_NONE }, { 1, 2, T_NONE } },
};

/* Two batch, two lhs free, two rhs free and two contracting dims, operands permuted. */
static const t_case case_big = {
	"HloModule m\n"
	"ENTRY e {\n"
	"  a = bf16[6,4,2,8,10,4] parameter(0)\n"
	"  b = bf16[4,3,2,4,12,8] parameter(1)\n"
	"  ROOT d = bf16[4,2,6,10,3,12] dot(a, b), lhs_batch_dims={1,2}, rhs_batch_dims={0,2}, "
	"lhs_contracting_dims={5,3}, rhs_contracting_dims={3,5}\n"
	"}\n",
	8,
	{ { 1, 0, 0 }, { 2, 2, 1 }, { 0, T_NONE, 2 }, { 4, T_NONE, 3 }, { T_NONE, 1, 4 },
	  { T_NONE, 4, 5 }, { 5, 3, T_NONE }, { 3, 5, T_NONE } },
};

/* An outer product: no batch and no contracting dims, so never a partial sum. */
static const t_case case_outer = {
	"HloModule m\n"
	"ENTRY e {\n"
	"  a = f32[4,6] parameter(0)\n"
	"  b = f32[8] parameter(1)\n"
	"  ROOT d = f32[4,6,8] dot(a, b), lhs_contracting_dims={}, rhs_contracting_dims={}\n"
	"}\n",
	3,
	{ { 0, T_NONE, 0 }, { 1, T_NONE, 1 }, { T_NONE, 0, 2 } },
};

/* A plain matmul f32[6,16] x f32[16,32]. */
static const char matmul_hlo[] =
	"HloModule m\n"
	"ENTRY e {\n"
	"  a = f32[6,16] parameter(0)\n"
	"  b = f32[16,32] parameter(1)\n"
	"  ROOT d = f32[6,32] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"}\n";

static const char *const axis_names[] = { "data", "fsdp", "tensor" };

static shs_mesh make_mesh(uint32_t n, const int64_t *sizes)
{
	return shs_test_mesh(n, axis_names, sizes);
}

/* ---- A growable list of strings ---- */

typedef struct t_strs {
	size_t n, cap;
	char **v;
} t_strs;

static void strs_add(t_strs *s, const char *str)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		CU_ASSERT_PTR_NOT_NULL_FATAL(s->v);
	}
	s->v[s->n] = strdup(str);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s->v[s->n]);
	s->n++;
}

static void strs_free(t_strs *s)
{
	for (size_t k = 0; k < s->n; k++)
		free(s->v[k]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool strs_has(const t_strs *s, const char *str)
{
	for (size_t k = 0; k < s->n; k++)
		if (!strcmp(s->v[k], str))
			return true;
	return false;
}

/* Sorts both lists and asserts they are the same set with no duplicates, printing a few
 * differences otherwise. */
static void assert_same_set(t_strs *got, t_strs *want)
{
	size_t i = 0, j = 0, shown = 0;
	enum { SHOW = 8 };

	qsort(got->v, got->n, sizeof(*got->v), cmp_str);
	qsort(want->v, want->n, sizeof(*want->v), cmp_str);
	for (size_t k = 1; k < got->n; k++) {
		if (!strcmp(got->v[k - 1], got->v[k]))
			fprintf(stderr, "\n  duplicate candidate: %s\n", got->v[k]);
		CU_ASSERT_NOT_EQUAL(strcmp(got->v[k - 1], got->v[k]), 0);
	}
	while ((i < got->n || j < want->n) && shown < SHOW) {
		int c = i == got->n ? 1 : j == want->n ? -1 : strcmp(got->v[i], want->v[j]);

		if (c == 0) {
			i++;
			j++;
			continue;
		}
		fprintf(stderr, "\n  %s: %s\n", c < 0 ? "unexpected" : "missing",
			c < 0 ? got->v[i] : want->v[j]);
		shown++;
		if (c < 0)
			i++;
		else
			j++;
	}
	SHS_ASSERT_INT_EQ(got->n, want->n);
	CU_ASSERT_EQUAL(shown, 0);
}

/* ---- Canonical form of a candidate ---- */

/* Appends "[0.2,-,1]" (axis indices; '.' joins the axes of a dim) to str. */
static void spec_str(char *str, size_t cap, uint32_t rank, const uint8_t n[],
		     const uint8_t axes[][SHS_PLUGIN_MAX_AXES])
{
	size_t len = strlen(str);

	snprintf(str + len, cap - len, "[");
	for (uint32_t d = 0; d < rank; d++) {
		len = strlen(str);
		if (d > 0)
			snprintf(str + len, cap - len, ",");
		len = strlen(str);
		if (n[d] == 0)
			snprintf(str + len, cap - len, "-");
		for (uint32_t k = 0; k < n[d]; k++) {
			len = strlen(str);
			snprintf(str + len, cap - len, "%s%u", k ? "." : "", axes[d][k]);
		}
	}
	len = strlen(str);
	snprintf(str + len, cap - len, "]");
}

static void pspec_str(char *str, size_t cap, const shs_pspec *s)
{
	uint8_t n[SHS_PLUGIN_MAX_RANK] = { 0 };
	uint8_t axes[SHS_PLUGIN_MAX_RANK][SHS_PLUGIN_MAX_AXES] = { { 0 } };

	for (uint32_t d = 0; d < s->rank; d++) {
		n[d] = s->dims[d].n;
		memcpy(axes[d], s->dims[d].axes, sizeof(axes[d]));
	}
	spec_str(str, cap, s->rank, n, axes);
}

/* The canonical string of a candidate: its specs, costs and collectives. */
static void cand_str(char *str, size_t cap, const shs_cand *c)
{
	size_t len;

	snprintf(str, cap, "res=");
	pspec_str(str, cap, &c->result[0]);
	len = strlen(str);
	snprintf(str + len, cap - len, " lhs=");
	pspec_str(str, cap, &c->operands[c->operand_first[0]]);
	len = strlen(str);
	snprintf(str + len, cap - len, " rhs=");
	pspec_str(str, cap, &c->operands[c->operand_first[1]]);
	len = strlen(str);
	snprintf(str + len, cap - len, " flops=%.0f bytes=%.0f", c->flops, c->bytes);
	for (uint32_t k = 0; k < c->n_colls; k++) {
		len = strlen(str);
		snprintf(str + len, cap - len, " coll=%d:%x:%.0f:%d", c->colls[k].kind,
			 c->colls[k].axes_mask, c->colls[k].bytes, c->colls[k].overlappable);
	}
}

/* The mesh axes a candidate uses anywhere (bit k: axis k). */
static uint32_t cand_axes(const shs_cand *c)
{
	uint32_t mask = 0;

	for (uint32_t leaf = 0; leaf < c->n_result + 2; leaf++) {
		const shs_pspec *s = leaf < c->n_result ? &c->result[leaf]
							: &c->operands[leaf - c->n_result];

		for (uint32_t d = 0; d < s->rank; d++)
			for (uint32_t k = 0; k < s->dims[d].n; k++)
				mask |= 1u << s->dims[d].axes[k];
	}
	return mask;
}

/* ---- Running the plugin through the host ---- */

static void count_warning(void *user, const char *msg)
{
	fprintf(stderr, "\n  host warning: %s\n", msg);
	(*(int *)user)++;
}

/* The host's (checked) candidates for the root of the module's entry, with no host warning. */
static void host_cands(const char *hlo, const shs_mesh *mesh, const shs_pspec *const *hints,
		       const shs_pspec *result_hint, int mode, shs_cands *out)
{
	shs_module *m = shs_test_parse(hlo);
	shs_computation *c = shs_module_entry(m);
	int warnings = 0;
	shs_host *h = shs_host_new(count_warning, &warnings);
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	SHS_ASSERT_OK(shs_host_load(h, SHS_STRATEGY_DIR "/dot.so", &e), &e);
	memset(out, 0, sizeof(*out));
	SHS_ASSERT_OK(shs_host_candidates(h, m, c, c->instrs[c->root], mesh, hints,
					  result_hint, mode, out, &e), &e);
	SHS_ASSERT_INT_EQ(warnings, 0);
	CU_ASSERT_TRUE(out->served);
	for (uint32_t k = 0; k < out->n; k++) {
		SHS_ASSERT_STR_EQ(out->v[k].strategy, "dot.assign");
		SHS_ASSERT_INT_EQ(out->v[k].n_result, 1);
		SHS_ASSERT_INT_EQ(out->v[k].n_operands, 2);
	}
	shs_host_free(h);
	shs_module_free(m);
}

static void host_strs(const shs_cands *cands, t_strs *out)
{
	for (uint32_t k = 0; k < cands->n; k++) {
		char str[T_STR * 2];

		cand_str(str, sizeof(str), &cands->v[k]);
		strs_add(out, str);
	}
}

/* ---- The independent enumeration ---- */

/* A test case's shapes, read from the parsed module. */
typedef struct t_shapes {
	const shs_shape *lhs, *rhs, *res;
} t_shapes;

/* One spec being built: per dim, its axes. */
typedef struct t_spec {
	uint32_t rank;
	uint8_t n[T_MAX_RANK];
	uint8_t axes[T_MAX_RANK][SHS_PLUGIN_MAX_AXES];
} t_spec;

static int64_t t_shards(const t_spec *s, uint32_t d, const shs_mesh *mesh)
{
	int64_t p = 1;

	for (uint32_t k = 0; k < s->n[d]; k++)
		p *= mesh->sizes[s->axes[d][k]];
	return p;
}

static double t_elem_bytes(int32_t type)
{
	return type == T_TYPE_BF16 ? T_BF16_BYTES : type == T_TYPE_F32 ? T_F32_BYTES : 0;
}

/* ceil(size / shards): a padded dim holds the ceil on every device (XLA pads it). */
static int64_t t_ceil(int64_t size, int64_t shards)
{
	return (size + shards - 1) / shards;
}

/* Whether each axis of dim d (in mesh order, as the plugin places them) divides what the
 * earlier ones left, or (pad) still shrinks the piece (PROPAGATE: XLA pads a hinted split). */
static bool t_fits_dim(const t_spec *s, uint32_t d, const shs_shape *shape, const shs_mesh *mesh,
		       bool pad)
{
	uint8_t axes[SHS_PLUGIN_MAX_AXES];
	int64_t prod = 1, size = shape->dims[d];

	memcpy(axes, s->axes[d], s->n[d]);
	for (uint32_t i = 1; i < s->n[d]; i++)
		for (uint32_t j = i; j > 0 && axes[j - 1] > axes[j]; j--) {
			uint8_t t = axes[j];
			axes[j] = axes[j - 1];
			axes[j - 1] = t;
		}
	for (uint32_t k = 0; k < s->n[d]; k++) {
		int64_t n = mesh->sizes[axes[k]];

		if (size % (prod * n) != 0 && (!pad || t_ceil(size, prod * n) >= t_ceil(size, prod)))
			return false;
		prod *= n;
	}
	return true;
}

static bool t_fits(const t_spec *s, const shs_shape *shape, const shs_mesh *mesh, bool pad)
{
	for (uint32_t d = 0; d < s->rank; d++)
		if (!t_fits_dim(s, d, shape, mesh, pad))
			return false;
	return true;
}

static double t_local_bytes(const t_spec *s, const shs_shape *shape, const shs_mesh *mesh)
{
	double elems = 1;

	for (uint32_t d = 0; d < s->rank; d++)
		elems *= (double)t_ceil(shape->dims[d], t_shards(s, d, mesh));
	return elems * t_elem_bytes(shape->type);
}

static void t_spec_str(char *str, size_t cap, const t_spec *s)
{
	spec_str(str, cap, s->rank, s->n, s->axes);
}

/* Adds the expected candidates of one ordered assignment (order[j]: the axes of dot dim j,
 * major first), if its specs are valid: one, or its partial-sum variants. */
static void expect_assignment(const t_case *tc, const t_shapes *sh, const shs_mesh *mesh,
			      const uint8_t cnt[], const uint8_t order[][SHS_PLUGIN_MAX_AXES],
			      bool pad, t_strs *out)
{
	t_spec lhs = { .rank = sh->lhs->rank }, rhs = { .rank = sh->rhs->rank },
	       res = { .rank = sh->res->rank };
	uint8_t part[SHS_PLUGIN_MAX_AXES];
	uint32_t n_part = 0, mask = 0;
	int64_t part_size = 1;
	double contract = 1, flops, res_bytes, in_bytes;
	char head[T_STR] = "", specs[T_STR], str[T_STR * 6];

	for (uint32_t j = 0; j < tc->n_dims; j++) {
		const t_dotdim *dd = &tc->dims[j];

		if (dd->l != T_NONE) {
			lhs.n[dd->l] = cnt[j];
			memcpy(lhs.axes[dd->l], order[j], cnt[j]);
		}
		if (dd->r != T_NONE) {
			rhs.n[dd->r] = cnt[j];
			memcpy(rhs.axes[dd->r], order[j], cnt[j]);
		}
		if (dd->res != T_NONE) {
			res.n[dd->res] = cnt[j];
			memcpy(res.axes[dd->res], order[j], cnt[j]);
		}
	}
	if (!t_fits(&lhs, sh->lhs, mesh, pad) || !t_fits(&rhs, sh->rhs, mesh, pad) ||
	    !t_fits(&res, sh->res, mesh, pad))
		return;
	for (uint32_t j = 0; j < tc->n_dims; j++) {
		const t_dotdim *dd = &tc->dims[j];

		if (dd->res != T_NONE)
			continue;
		contract *= (double)t_ceil(sh->lhs->dims[dd->l],
					   t_shards(&lhs, (uint32_t)dd->l, mesh));
		for (uint32_t k = 0; k < cnt[j]; k++) {
			part[n_part++] = order[j][k];
			mask |= 1u << order[j][k];
			part_size *= mesh->sizes[order[j][k]];
		}
	}
	res_bytes = t_local_bytes(&res, sh->res, mesh);
	flops = 2 * res_bytes / t_elem_bytes(sh->res->type) * contract;
	in_bytes = t_local_bytes(&lhs, sh->lhs, mesh) + t_local_bytes(&rhs, sh->rhs, mesh);
	snprintf(specs, sizeof(specs), " lhs=");
	t_spec_str(specs, sizeof(specs), &lhs);
	snprintf(specs + strlen(specs), sizeof(specs) - strlen(specs), " rhs=");
	t_spec_str(specs, sizeof(specs), &rhs);
	snprintf(head, sizeof(head), "res=");
	t_spec_str(head, sizeof(head), &res);
	if (n_part == 0) {
		snprintf(str, sizeof(str), "%s%s flops=%.0f bytes=%.0f", head, specs, flops,
			 in_bytes + res_bytes);
		strs_add(out, str);
		return;
	}
	snprintf(str, sizeof(str), "%s%s flops=%.0f bytes=%.0f coll=%d:%x:%.0f:0", head, specs,
		 flops, in_bytes + res_bytes, SHS_PCOLL_ALL_REDUCE, mask, res_bytes);
	strs_add(out, str);
	for (uint32_t d = 0; d < res.rank; d++) {
		t_spec rs = res;

		int64_t have = t_shards(&res, d, mesh), size = sh->res->dims[d];

		/* PROPAGATE also scatters onto a dim it does not divide when that shrinks it */
		if (size % (have * part_size) != 0 &&
		    (!pad || t_ceil(size, have * part_size) >= t_ceil(size, have)))
			continue;
		memcpy(&rs.axes[d][rs.n[d]], part, n_part);
		rs.n[d] = (uint8_t)(rs.n[d] + n_part);
		snprintf(head, sizeof(head), "res=");
		t_spec_str(head, sizeof(head), &rs);
		for (int ov = 0; ov <= 1; ov++) {
			snprintf(str, sizeof(str), "%s%s flops=%.0f bytes=%.0f coll=%d:%x:%.0f:%d",
				 head, specs, flops, in_bytes + res_bytes,
				 SHS_PCOLL_REDUCE_SCATTER, mask, res_bytes, ov);
			strs_add(out, str);
		}
	}
}

static uint32_t factorial(uint32_t n)
{
	return n <= 1 ? 1 : n * factorial(n - 1);
}

/* Writes permutation number p (0 <= p < n!) of the n items of in to out (Lehmer code). */
static void nth_permutation(uint32_t p, const uint8_t *in, uint32_t n, uint8_t *out)
{
	uint8_t left[SHS_PLUGIN_MAX_AXES];

	memcpy(left, in, n);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t f = factorial(n - 1 - k), pick = p / f;

		p %= f;
		out[k] = left[pick];
		memmove(&left[pick], &left[pick + 1], n - 1 - k - pick);
	}
}

/* Every candidate the dot should have: each of the (n_dims + 1)^n_axes maps of axes to a dot
 * dim or none (restricted to allowed[axis] bits when allowed is given, PROPAGATE: then a hinted
 * split that does not divide is padded), in every order of the axes sharing a dim. */
static void expect_all(const t_case *tc, const t_shapes *sh, const shs_mesh *mesh,
		       const uint64_t *allowed, t_strs *out)
{
	uint32_t base = tc->n_dims + 1, total = 1;

	for (uint32_t k = 0; k < mesh->n_axes; k++)
		total *= base;
	for (uint32_t code = 0; code < total; code++) {
		uint8_t cnt[T_MAX_DIMS] = { 0 }, group[T_MAX_DIMS][SHS_PLUGIN_MAX_AXES];
		uint8_t order[T_MAX_DIMS][SHS_PLUGIN_MAX_AXES];
		uint32_t c = code, n_orders = 1;
		bool ok = true;

		for (uint32_t a = 0; a < mesh->n_axes; a++, c /= base) {
			uint32_t j = c % base;

			if (j == tc->n_dims)
				continue;
			if (allowed && !(allowed[a] & ((uint64_t)1 << j)))
				ok = false;
			group[j][cnt[j]++] = (uint8_t)a;
		}
		if (!ok)
			continue;
		for (uint32_t j = 0; j < tc->n_dims; j++)
			n_orders *= factorial(cnt[j]);
		for (uint32_t p = 0; p < n_orders; p++) {
			uint32_t rest = p;

			for (uint32_t j = 0; j < tc->n_dims; j++) {
				uint32_t f = factorial(cnt[j]);

				nth_permutation(rest % f, group[j], cnt[j], order[j]);
				rest /= f;
			}
			expect_assignment(tc, sh, mesh, cnt, order, allowed != NULL, out);
		}
	}
}

/* Compares the plugin's ENUMERATE candidates for tc on mesh with the independent ones. */
static void check_enumerate(const t_case *tc, const shs_mesh *mesh, size_t min_count)
{
	shs_module *m = shs_test_parse(tc->hlo);
	shs_computation *c = shs_module_entry(m);
	const shs_instr *d = c->instrs[c->root];
	t_shapes sh = { &c->instrs[d->operands[0]]->shape, &c->instrs[d->operands[1]]->shape,
			&d->shape };
	t_strs got = { 0 }, want = { 0 };
	shs_cands cands;

	expect_all(tc, &sh, mesh, NULL, &want);
	host_cands(tc->hlo, mesh, NULL, NULL, SHS_PMODE_ENUMERATE, &cands);
	host_strs(&cands, &got);
	CU_ASSERT_TRUE(want.n >= min_count);
	assert_same_set(&got, &want);
	shs_cands_free(&cands);
	strs_free(&got);
	strs_free(&want);
	shs_module_free(m);
}

static void enumerate_three_axes(void)
{
	static const int64_t sizes[] = { 2, 2, 4 };
	shs_mesh mesh = make_mesh(3, sizes);

	check_enumerate(&case_small, &mesh, 100);
}

static void enumerate_three_axes_all_kinds(void)
{
	static const int64_t sizes[] = { 2, 2, 4 };
	shs_mesh mesh = make_mesh(3, sizes);

	check_enumerate(&case_big, &mesh, 1000);
}

static void enumerate_one_and_two_axes(void)
{
	static const int64_t one[] = { 4 }, two[] = { 2, 4 };
	shs_mesh m1 = make_mesh(1, one), m2 = make_mesh(2, two);

	check_enumerate(&case_small, &m1, 5);
	check_enumerate(&case_small, &m2, 20);
	check_enumerate(&case_big, &m2, 50);
	check_enumerate(&case_outer, &m2, 10);
}

/* The candidates are in a deterministic order: two runs list the same labels. */
static void enumerate_is_deterministic(void)
{
	static const int64_t sizes[] = { 2, 2, 4 };
	shs_mesh mesh = make_mesh(3, sizes);
	shs_cands a, b;

	host_cands(case_small.hlo, &mesh, NULL, NULL, SHS_PMODE_ENUMERATE, &a);
	host_cands(case_small.hlo, &mesh, NULL, NULL, SHS_PMODE_ENUMERATE, &b);
	SHS_ASSERT_INT_EQ(a.n, b.n);
	for (uint32_t k = 0; k < a.n; k++)
		SHS_ASSERT_STR_EQ(a.v[k].label, b.v[k].label);
	shs_cands_free(&a);
	shs_cands_free(&b);
}

/* ---- Costs and labels on a plain matmul ---- */

/* The candidate labelled label (fails the test when missing). */
static const shs_cand *by_label(const shs_cands *cands, const char *label)
{
	for (uint32_t k = 0; k < cands->n; k++)
		if (!strcmp(cands->v[k].label, label))
			return &cands->v[k];
	fprintf(stderr, "\n  no candidate labelled \"%s\"\n", label);
	CU_FAIL_FATAL("candidate missing");
	return NULL;
}

static void matmul_costs(void)
{
	static const int64_t sizes[] = { 2, 4 };
	shs_mesh mesh = make_mesh(2, sizes); /* data=2, fsdp=4 */
	shs_cands cands;
	const shs_cand *c;

	host_cands(matmul_hlo, &mesh, NULL, NULL, SHS_PMODE_ENUMERATE, &cands);
	/* replicated: 2 * 6 * 32 * 16 FLOPs; (6*16 + 16*32 + 6*32) * 4 bytes */
	c = by_label(&cands, "lhs=- rhs=- contract=-");
	CU_ASSERT_DOUBLE_EQUAL(c->flops, 6144, 0);
	CU_ASSERT_DOUBLE_EQUAL(c->bytes, 3200, 0);
	SHS_ASSERT_INT_EQ(c->n_colls, 0);
	/* lhs rows on data, rhs columns on fsdp: local lhs [3,16], rhs [16,8], result [3,8] */
	c = by_label(&cands, "lhs=data rhs=fsdp contract=-");
	CU_ASSERT_DOUBLE_EQUAL(c->flops, 2 * 3 * 8 * 16, 0);
	CU_ASSERT_DOUBLE_EQUAL(c->bytes, (3 * 16 + 16 * 8 + 3 * 8) * 4, 0);
	SHS_ASSERT_INT_EQ(c->n_colls, 0);
	/* contracting on fsdp: local result [3,32] is a partial sum, contracting size 4 */
	c = by_label(&cands, "lhs=data rhs=- contract=fsdp ar");
	CU_ASSERT_DOUBLE_EQUAL(c->flops, 2 * 3 * 32 * 4, 0);
	CU_ASSERT_DOUBLE_EQUAL(c->bytes, (3 * 4 + 4 * 32 + 3 * 32) * 4, 0);
	SHS_ASSERT_INT_EQ(c->n_colls, 1);
	SHS_ASSERT_INT_EQ(c->colls[0].kind, SHS_PCOLL_ALL_REDUCE);
	SHS_ASSERT_INT_EQ(c->colls[0].axes_mask, 1u << 1);
	CU_ASSERT_DOUBLE_EQUAL(c->colls[0].bytes, 3 * 32 * 4, 0);
	CU_ASSERT_FALSE(c->colls[0].overlappable);
	/* reduce-scatter onto the result's columns: result [3,8], written whole as the partial
	 * sum [3,32] first */
	c = by_label(&cands, "lhs=data rhs=- contract=fsdp rs1 cm");
	CU_ASSERT_DOUBLE_EQUAL(c->flops, 2 * 3 * 32 * 4, 0);
	CU_ASSERT_DOUBLE_EQUAL(c->bytes, (3 * 4 + 4 * 32 + 3 * 32) * 4, 0);
	SHS_ASSERT_INT_EQ(c->result[0].dims[1].n, 1);
	SHS_ASSERT_INT_EQ(c->result[0].dims[1].axes[0], 1);
	SHS_ASSERT_INT_EQ(c->n_colls, 1);
	SHS_ASSERT_INT_EQ(c->colls[0].kind, SHS_PCOLL_REDUCE_SCATTER);
	CU_ASSERT_DOUBLE_EQUAL(c->colls[0].bytes, 3 * 32 * 4, 0);
	CU_ASSERT_TRUE(c->colls[0].overlappable);
	/* both axes on the contracting dim, fsdp major: the partial sum scatters in that order */
	c = by_label(&cands, "lhs=- rhs=- contract=fsdp+data rs1");
	SHS_ASSERT_INT_EQ(c->operands[c->operand_first[0]].dims[1].axes[0], 1);
	SHS_ASSERT_INT_EQ(c->operands[c->operand_first[0]].dims[1].axes[1], 0);
	SHS_ASSERT_INT_EQ(c->result[0].dims[1].n, 2);
	SHS_ASSERT_INT_EQ(c->result[0].dims[1].axes[0], 1);
	SHS_ASSERT_INT_EQ(c->result[0].dims[1].axes[1], 0);
	SHS_ASSERT_INT_EQ(c->colls[0].axes_mask, 3);
	CU_ASSERT_DOUBLE_EQUAL(c->flops, 2 * 6 * 32 * 2, 0);
	CU_ASSERT_DOUBLE_EQUAL(c->bytes, (6 * 2 + 2 * 32 + 6 * 32) * 4, 0);
	/* 6 rows do not split 8 ways: no reduce-scatter onto the rows with data and fsdp */
	for (uint32_t k = 0; k < cands.n; k++) {
		CU_ASSERT_STRING_NOT_EQUAL(cands.v[k].label, "lhs=data rhs=- contract=fsdp rs0");
		CU_ASSERT_STRING_NOT_EQUAL(cands.v[k].label, "lhs=- rhs=- contract=fsdp+data rs0");
		CU_ASSERT_STRING_NOT_EQUAL(cands.v[k].label, "lhs=fsdp rhs=- contract=-");
	}
	shs_cands_free(&cands);
}

/* ---- PROPAGATE ---- */

/* A spec of the given rank with axis on dim d for each (d, axis) pair in on[0..n). */
static shs_pspec hint_spec(uint32_t rank, uint32_t n, const uint8_t on[][2])
{
	shs_pspec s;

	memset(&s, 0, sizeof(s));
	s.rank = rank;
	for (uint32_t k = 0; k < n; k++) {
		shs_pdim *dim = &s.dims[on[k][0]];

		dim->axes[dim->n++] = on[k][1];
	}
	return s;
}

/* The allowed dot dims per axis (bit j: dot dim j of tc) given the hints (each may be NULL). */
static void allowed_from(const t_case *tc, const shs_pspec *lhs, const shs_pspec *rhs,
			 const shs_pspec *res, uint64_t *allowed)
{
	for (uint32_t j = 0; j < tc->n_dims; j++) {
		const t_dotdim *dd = &tc->dims[j];
		const shs_pdim *on[] = { lhs && dd->l != T_NONE ? &lhs->dims[dd->l] : NULL,
					 rhs && dd->r != T_NONE ? &rhs->dims[dd->r] : NULL,
					 res && dd->res != T_NONE ? &res->dims[dd->res] : NULL };

		for (uint32_t s = 0; s < sizeof(on) / sizeof(on[0]); s++)
			for (uint32_t k = 0; on[s] && k < on[s]->n; k++)
				allowed[on[s]->axes[k]] |= (uint64_t)1 << j;
	}
}

/* PROPAGATE gives exactly the assignments that put each axis where a hint has it or nowhere,
 * the replicated one among them. */
static void check_propagate(const shs_pspec *lhs, const shs_pspec *rhs, const shs_pspec *res)
{
	static const int64_t sizes[] = { 2, 2, 4 };
	shs_mesh mesh = make_mesh(3, sizes);
	shs_module *m = shs_test_parse(case_small.hlo);
	shs_computation *c = shs_module_entry(m);
	const shs_instr *d = c->instrs[c->root];
	t_shapes sh = { &c->instrs[d->operands[0]]->shape, &c->instrs[d->operands[1]]->shape,
			&d->shape };
	const shs_pspec *hints[] = { lhs, rhs };
	uint64_t allowed[SHS_PLUGIN_MAX_AXES] = { 0 };
	t_strs got = { 0 }, want = { 0 }, all = { 0 };
	shs_cands cands;
	bool replicated = false;

	allowed_from(&case_small, lhs, rhs, res, allowed);
	expect_all(&case_small, &sh, &mesh, allowed, &want);
	expect_all(&case_small, &sh, &mesh, NULL, &all);
	host_cands(case_small.hlo, &mesh, hints, res, SHS_PMODE_PROPAGATE, &cands);
	host_strs(&cands, &got);
	for (uint32_t k = 0; k < cands.n; k++)
		replicated |= !cand_axes(&cands.v[k]);
	CU_ASSERT_TRUE(replicated);
	CU_ASSERT_TRUE(want.n < all.n);
	assert_same_set(&got, &want);
	shs_cands_free(&cands);
	strs_free(&got);
	strs_free(&want);
	strs_free(&all);
	shs_module_free(m);
}

static void propagate_follows_hints(void)
{
	/* lhs: batch on data, contracting 16 on fsdp; rhs: batch on data, free 12 on tensor */
	static const uint8_t l_on[][2] = { { 0, 0 }, { 3, 1 } }, r_on[][2] = { { 0, 0 }, { 3, 2 } };
	shs_pspec lhs = hint_spec(4, 2, l_on), rhs = hint_spec(4, 2, r_on);

	check_propagate(&lhs, &rhs, NULL);
}

static void propagate_conflicting_hints(void)
{
	/* tensor on the lhs free dim (6: does not divide) and on the rhs contracting 16; fsdp on
	 * the lhs batch and on the rhs contracting 4 */
	static const uint8_t l_on[][2] = { { 2, 2 }, { 0, 1 } }, r_on[][2] = { { 1, 2 }, { 2, 1 } };
	shs_pspec lhs = hint_spec(4, 2, l_on), rhs = hint_spec(4, 2, r_on);

	check_propagate(&lhs, &rhs, NULL);
}

static void propagate_result_hint(void)
{
	/* only the result is decided: tensor on the rhs free dim, data+fsdp on the batch dim; the
	 * lhs hint adds fsdp on its contracting 4 */
	static const uint8_t res_on[][2] = { { 2, 2 }, { 0, 0 }, { 0, 1 } };
	static const uint8_t l_on[][2] = { { 1, 1 } };
	shs_pspec res = hint_spec(3, 3, res_on), lhs = hint_spec(4, 1, l_on);

	check_propagate(NULL, NULL, &res);
	check_propagate(&lhs, NULL, &res);
}

/* The candidate that follows both hints exactly is among the PROPAGATE ones. */
static void propagate_keeps_hinted(void)
{
	static const int64_t sizes[] = { 2, 2, 4 };
	static const uint8_t l_on[][2] = { { 0, 0 }, { 2, 1 } };
	shs_mesh mesh = make_mesh(3, sizes);
	shs_pspec lhs = hint_spec(4, 2, l_on);
	const shs_pspec *hints[] = { &lhs, NULL };
	shs_cands cands;
	char want[T_STR], got[T_STR];
	t_strs lhs_specs = { 0 };

	host_cands(case_small.hlo, &mesh, hints, NULL, SHS_PMODE_PROPAGATE, &cands);
	for (uint32_t k = 0; k < cands.n; k++) {
		got[0] = '\0';
		pspec_str(got, sizeof(got), &cands.v[k].operands[cands.v[k].operand_first[0]]);
		strs_add(&lhs_specs, got);
		/* no hint has tensor: it stays unused */
		CU_ASSERT_EQUAL(cand_axes(&cands.v[k]) & (1u << 2), 0);
	}
	want[0] = '\0';
	pspec_str(want, sizeof(want), &lhs);
	CU_ASSERT_TRUE(strs_has(&lhs_specs, want));
	CU_ASSERT_TRUE(strs_has(&lhs_specs, "[-,-,-,-]"));
	strs_free(&lhs_specs);
	shs_cands_free(&cands);
}

CU_TestInfo dotplugin_tests[] = {
	{ "enumerate on a 3-axis mesh is exactly the valid assignments", enumerate_three_axes },
	{ "enumerate with 2 batch, 4 free, 2 contracting dims on 3 axes",
	  enumerate_three_axes_all_kinds },
	{ "enumerate on 1- and 2-axis meshes", enumerate_one_and_two_axes },
	{ "enumerate order is deterministic", enumerate_is_deterministic },
	{ "matmul FLOPs, bytes, collectives and labels", matmul_costs },
	{ "propagate follows the operand hints", propagate_follows_hints },
	{ "propagate with conflicting hints", propagate_conflicting_hints },
	{ "propagate follows the result hint", propagate_result_hint },
	{ "propagate keeps the hinted sharding and replicated", propagate_keeps_hinted },
	CU_TEST_INFO_NULL,
};
