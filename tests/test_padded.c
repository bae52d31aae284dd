/* Tests: dims that do not divide their axes are padded as XLA pads them, and paid for. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "host.h"
#include "plan.h"
#include "report_padded.h"
#include "test_util.h"

static const char *const axis_names[] = { "fsdp", "tensor" };

static shs_mesh make_mesh(uint32_t n, const int64_t *sizes)
{
	return shs_test_mesh(n, axis_names, sizes);
}

/* A shape of f32 with the given dims (dims borrowed). */
static shs_shape f32_shape(uint32_t rank, int64_t *dims)
{
	return (shs_shape){ .type = SHS_F32, .rank = rank, .dims = dims };
}

/* A padded spec holds ceil(dim / split) on every device: 6 rows over 4 are 2 each (8 with the
 * padding), 1024 over 2240 is 1 each. */
static void local_bytes_round_up(void)
{
	static const int64_t sizes[] = { 4, 2240 };
	shs_mesh mesh = make_mesh(2, sizes);
	int64_t d1[] = { 6, 16 }, d2[] = { 1024, 4096 };
	shs_shape a = f32_shape(2, d1), b = f32_shape(2, d2);
	shs_pspec s;

	shs_spec_replicated(&s, 2);
	s.dims[0] = (shs_pdim){ .n = 1, .axes = { 0 } };
	shs_spec_mark_padded(&s, &a, &mesh);
	CU_ASSERT_TRUE(s.padded);
	CU_ASSERT_DOUBLE_EQUAL(shs_spec_local_bytes(&s, &a, &mesh), 2 * 16 * 4, 0);
	s.dims[0] = (shs_pdim){ .n = 1, .axes = { 1 } };
	shs_spec_mark_padded(&s, &b, &mesh);
	CU_ASSERT_TRUE(s.padded);
	CU_ASSERT_DOUBLE_EQUAL(shs_spec_local_bytes(&s, &b, &mesh), 1 * 4096 * 4, 0);
	SHS_ASSERT_INT_EQ(shs_spec_dim_split(&s, 0, &mesh), 2240);
	/* a dim that divides is not padded */
	s.dims[0] = (shs_pdim){ .n = 0 };
	s.dims[1] = (shs_pdim){ .n = 1, .axes = { 0 } };
	shs_spec_mark_padded(&s, &b, &mesh);
	CU_ASSERT_FALSE(s.padded);
	CU_ASSERT_DOUBLE_EQUAL(shs_spec_local_bytes(&s, &b, &mesh), 1024 * 1024 * 4, 0);
}

/* The dot keeps a hinted split that does not divide, padded, and pays for the padding: lhs
 * f32[6,16] with its rows on fsdp=4 gives a [2,16] x [16,8] matmul per device. */
static void dot_pays_for_padding(void)
{
	static const int64_t sizes[] = { 4 };
	static const char *hlo = "HloModule m\nENTRY e {\n  a = f32[6,16] parameter(0)\n"
				 "  b = f32[16,8] parameter(1)\n"
				 "  ROOT d = f32[6,8] dot(a, b), lhs_contracting_dims={1}, "
				 "rhs_contracting_dims={0}\n}\n";
	shs_mesh mesh = make_mesh(1, sizes);
	shs_module *m = shs_test_parse(hlo);
	shs_computation *c = shs_module_entry(m);
	shs_host *h = shs_test_host();
	shs_pspec lhs, rhs;
	const shs_pspec *hints[] = { &lhs, &rhs };
	shs_cands cands = { 0 };
	shs_err e = { 0 };
	const shs_cand *found = NULL;

	shs_spec_replicated(&lhs, 2);
	shs_spec_replicated(&rhs, 2);
	lhs.dims[0] = (shs_pdim){ .n = 1, .axes = { 0 } };
	lhs.padded = true;
	SHS_ASSERT_OK(shs_host_candidates(h, m, c, c->instrs[c->root], &mesh, hints, NULL,
					  SHS_PMODE_PROPAGATE, &cands, &e), &e);
	for (uint32_t k = 0; k < cands.n; k++) {
		const shs_cand *x = &cands.v[k];
		const shs_pspec *l = &x->operands[x->operand_first[0]];
		if (!strcmp(x->strategy, "dot.assign") && l->dims[0].n == 1 && !l->dims[1].n &&
		    x->result[0].dims[0].n == 1 && !x->n_colls)
			found = x;
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(found);
	CU_ASSERT_TRUE(found->result[0].padded);
	CU_ASSERT_TRUE(found->operands[found->operand_first[0]].padded);
	CU_ASSERT_FALSE(found->operands[found->operand_first[1]].padded);
	CU_ASSERT_DOUBLE_EQUAL(found->flops, 2.0 * 2 * 8 * 16, 0);
	CU_ASSERT_DOUBLE_EQUAL(found->bytes, (2 * 16 + 16 * 8 + 2 * 8) * 4.0, 0);
	shs_cands_free(&cands);
	shs_host_free(h);
	shs_module_free(m);
}

/* A plan made and evaluated on a cluster; fails the test on error. */
typedef struct evaluated {
	shs_module *m;
	shs_plan *p;
	shs_eval ev;
} evaluated;

static void evaluate(shs_module *m, const char *hardware, int64_t devices, const char *mesh,
		     const char *plan, evaluated *out)
{
	shs_cluster_spec spec = { .hardware = hardware, .devices = devices, .slices = 1,
				  .mesh = mesh };
	shs_plan_request *r = calloc(1, sizeof(*r));
	shs_host *h = shs_test_host();
	shs_hw_catalog cat;
	shs_cluster cl;
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_cluster_make(&cat, &spec, &cl, &e), &e);
	shs_hw_chip(&cl.hw, &r->chip);
	SHS_ASSERT_OK(shs_plan_parse_mesh(r, mesh, &e), &e);
	SHS_ASSERT_OK(shs_plan_parse_kind(r, plan, &e), &e);
	out->m = m;
	SHS_ASSERT_OK(shs_plan_make(h, m, r, &out->p, &e), &e);
	SHS_ASSERT_OK(shs_evaluate(m, out->p, &cl, NULL, &out->ev, &e), &e);
	shs_host_free(h);
	free(r);
}

static void evaluated_free(evaluated *x)
{
	shs_eval_free(&x->ev);
	shs_plan_free(x->p);
	shs_module_free(x->m);
}

/* The decision of the entry parameter whose name starts with prefix. */
static const shs_decision *entry_param(const evaluated *x, const char *prefix)
{
	const shs_computation *c = shs_module_entry(x->m);

	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (c->instrs[i]->op == SHS_OP_PARAMETER &&
		    !strncmp(c->instrs[i]->name, prefix, strlen(prefix)))
			return &x->p->d[x->m->entry][i];
	CU_FAIL_FATAL("no such parameter");
	return NULL;
}

/* A vocabulary of 32000 on fsdp=512 (it does not divide: 62.5 rows each) splits like one of
 * 32768, padded to 63 rows: the step takes within 3 % of the same time (it took 2.9 times as
 * long when the embedding went to d_model and the activations followed it). */
static void vocab_that_does_not_divide(void)
{
	const char *const base[] = { "layers", "1", "batch", "512", "vocab", "32000", NULL };
	const char *const pow2[] = { "layers", "1", "batch", "512", "vocab", "32768", NULL };
	evaluated a, b;
	const shs_decision *emb;

	evaluate(shs_test_generate("llama3-8b", base), "v5p", 512, "fsdp=512", "fsdp", &a);
	evaluate(shs_test_generate("llama3-8b", pow2), "v5p", 512, "fsdp=512", "fsdp", &b);
	emb = entry_param(&a, "params.token_embedder");
	CU_ASSERT_TRUE(emb->leaves[0].padded);
	SHS_ASSERT_INT_EQ(emb->leaves[0].dims[0].n, 1); /* the vocab, as with 32768 */
	if (fabs(a.ev.step_time_s / b.ev.step_time_s - 1) > 0.03)
		fprintf(stderr, "\n  vocab 32000: %.6g s, 32768: %.6g s\n", a.ev.step_time_s,
			b.ev.step_time_s);
	CU_ASSERT_TRUE(fabs(a.ev.step_time_s / b.ev.step_time_s - 1) <= 0.03);
	CU_ASSERT_TRUE(fabs(a.ev.memory_bytes / b.ev.memory_bytes - 1) <= 0.03);
	evaluated_free(&a);
	evaluated_free(&b);
}

/* The instruction of computation c whose name starts with prefix. */
static uint32_t named(const evaluated *x, uint32_t c, const char *prefix)
{
	const shs_computation *comp = x->m->comps[c];

	for (uint32_t i = 0; i < comp->n_instrs; i++)
		if (!strncmp(comp->instrs[i]->name, prefix, strlen(prefix)))
			return i;
	CU_FAIL_FATAL("no such instruction");
	return 0;
}

/* The book's LLaMA-3 70B example: 1024 sequences of 4096 tokens on fsdp=2240,tensor=4 (8960
 * v5p chips). The batch does not divide 2240: it is split, padded (one sequence a device, 1216
 * devices with none), not replicated, and the report names it. Replicated it needed 63,673 GiB
 * a device; with the token lookup following the table's FSDP split of d_model, 1359 GiB. */
static void book_batch_is_padded_not_replicated(void)
{
	const char *const set[] = { "batch", "1024", "seq", "4096", "scan", "true", NULL };
	evaluated x;
	const shs_decision *in;
	shs_padded_dim *dims = NULL;
	uint32_t n = 0;
	bool is_named = false;

	evaluate(shs_test_generate("llama3-70b", set), "v5p", 8960, "fsdp=2240,tensor=4",
		 "fsdp+tp", &x);
	in = entry_param(&x, "inputs");
	CU_ASSERT_TRUE(in->leaves[0].padded);
	SHS_ASSERT_INT_EQ(shs_spec_dim_split(&in->leaves[0], 0, &x.p->mesh), 2240);
	SHS_ASSERT_INT_EQ(shs_padded_dims(x.m, x.p, &dims, &n), 0);
	for (uint32_t k = 0; k < n; k++)
		is_named |= !strncmp(dims[k].instr, "inputs", 6) && dims[k].dim == 0 &&
			    dims[k].size == 1024 && dims[k].padded == 2240 && dims[k].split == 2240;
	CU_ASSERT_TRUE(is_named);
	CU_ASSERT_TRUE(x.ev.fits);
	free(dims);
	evaluated_free(&x);
}

/* Issue 15's acceptance: the book's example under fsdp + tensor on the whole pod fits with MFU
 * above 40 % (fsdp=1120,tensor=8: 1024 sequences padded to 1120, 8.6 % of the devices idle).
 * It takes two things. The token lookup is split by the batch as the tokens are, not by
 * d_model as the table is: following the table, every layer's matmuls gathered their
 * activations over fsdp (11 s a step, MFU 4 %). And a norm's scale, broadcast, is brought to
 * the activation's sharding by resharding the scale, not the broadcast (XLA re-broadcasts on
 * each device): priced as the broadcast's whole array, moving the activation to the scale's
 * split of d_model looked cheaper (9.3 s with the lookup split alone, 5.8 s with the
 * broadcast priced alone). */
static void book_example_fits_above_40_percent(void)
{
	const char *const set[] = { "batch", "1024", "seq", "4096", "scan", "true", NULL };
	evaluated x;
	const shs_decision *lookup;

	evaluate(shs_test_generate("llama3-70b", set), "v5p", 8960, "fsdp=1120,tensor=8",
		 "fsdp+tp", &x);
	lookup = &x.p->d[x.m->entry][named(&x, x.m->entry, "gather")];
	SHS_ASSERT_INT_EQ(shs_spec_dim_split(&lookup->leaves[0], 0, &x.p->mesh), 1120);
	SHS_ASSERT_INT_EQ(shs_spec_dim_split(&lookup->leaves[0], 2, &x.p->mesh), 1);
	fprintf(stderr, "\n  book 70B, fsdp=1120,tensor=8: %.4g s, MFU %.1f %%, %.2f GiB ",
		x.ev.step_time_s, 100 * x.ev.mfu, x.ev.memory_bytes / (1 << 30));
	CU_ASSERT_TRUE(x.ev.fits);
	CU_ASSERT_TRUE(x.ev.mfu > 0.40);
	evaluated_free(&x);
}

CU_TestInfo padded_tests[] = {
	{ "local bytes of a padded spec round up", local_bytes_round_up },
	{ "a dot keeps a padded split and pays for it", dot_pays_for_padding },
	{ "vocab 32000 on fsdp=512 runs like 32768", vocab_that_does_not_divide },
	{ "the book's 70B batch is padded, not replicated", book_batch_is_padded_not_replicated },
	{ "the book's 70B under fsdp + tensor fits above 40 % MFU",
	  book_example_fits_above_40_percent },
	CU_TEST_INFO_NULL,
};
