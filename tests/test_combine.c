/* XLA's AllReduceCombiner on the event schedule: independent all-reduces over the same devices
 * pay one latency between them; an all-reduce that reads another's result pays its own. */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "evaluate.h"
#include "hardware.h"
#include "plan.h"
#include "test_util.h"

enum { NORMS = 6 };

/* NORMS squared norms of weights split over data=8 (given as their shardings), summed: each
 * norm's reduction leaves a partial sum, all-reduced over data. With `chained`, each weight is
 * scaled by the sum so far before its norm is taken, so each all-reduce reads the one before. */
static shs_module *norms_module(bool chained)
{
	char text[8192];
	size_t n = 0;

	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "HloModule norms\n\nsum {\n  a = f32[] parameter(0)\n"
			      "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
			      "ENTRY main {\n  z = f32[] constant(0)\n");
	for (int k = 0; k < NORMS; k++) {
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "  p%d = f32[4096,1024] parameter(%d), "
				      "sharding={devices=[8,1]<=[8]}\n", k, k);
		if (chained && k > 0)
			n += (size_t)snprintf(text + n, sizeof(text) - n,
					      "  b%d = f32[4096,1024] broadcast(t%d), dimensions={}\n"
					      "  q%d = f32[4096,1024] multiply(p%d, b%d)\n"
					      "  m%d = f32[4096,1024] multiply(q%d, q%d)\n",
					      k, k - 1, k, k, k, k, k, k);
		else
			n += (size_t)snprintf(text + n, sizeof(text) - n,
					      "  m%d = f32[4096,1024] multiply(p%d, p%d)\n", k, k,
					      k);
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "  r%d = f32[] reduce(m%d, z), dimensions={0,1}, to_apply=sum\n",
				      k, k);
		if (k == 0)
			n += (size_t)snprintf(text + n, sizeof(text) - n,
					      "  t0 = f32[] add(r0, z)\n");
		else
			n += (size_t)snprintf(text + n, sizeof(text) - n,
					      "  t%d = f32[] add(t%d, r%d)\n", k, k - 1, k);
	}
	n += (size_t)snprintf(text + n, sizeof(text) - n, "  ROOT out = f32[] copy(t%d)\n}\n",
			      NORMS - 1);
	CU_ASSERT_FATAL(n < sizeof(text));
	return shs_test_parse(text);
}

/* Evaluates the module on 8 v5p chips over data=8 with the combiner up to `combine` bytes (0:
 * none): the step time, the number of all-reduces and one all-reduce's time alone. */
static double step_time(const shs_module *m, double combine, uint32_t *all_reduces,
			double *alone)
{
	shs_cluster_spec spec = { .hardware = "v5p", .devices = 8, .slices = 1,
				  .mesh = "data=8" };
	shs_host *h = shs_test_host();
	shs_hw_catalog cat;
	shs_cluster c;
	shs_plan *p = NULL;
	shs_eval ev;
	double t;

	shs_hw_catalog_builtin(&cat);
	for (uint32_t k = 0; k < cat.n; k++)
		if (!strcmp(cat.hw[k].name, "v5p"))
			cat.hw[k].all_reduce_combine_bytes = combine;
	shs_test_plan_evaluate(h, &cat, &spec, m, "dp", NULL, &c, &p, &ev);
	*all_reduces = 0;
	for (uint32_t k = 0; k < ev.n_colls; k++)
		if (ev.colls[k].kind == SHS_PCOLL_ALL_REDUCE) {
			(*all_reduces)++;
			*alone = shs_coll_time(&c, SHS_PCOLL_ALL_REDUCE, ev.colls[k].axes_mask,
					       ev.colls[k].bytes);
		}
	t = ev.step_time_s;
	shs_eval_free(&ev);
	shs_plan_free(p);
	shs_host_free(h);
	return t;
}

/* The step times of the norms (chained or not) with XLA's default threshold and with none; both
 * with one all-reduce a norm, of *alone seconds each. */
static void on_and_off(bool chained, double *on, double *off, double *alone)
{
	shs_module *m = norms_module(chained);
	uint32_t n_on = 0, n_off = 0;

	*on = step_time(m, 30 * 1048576.0 + 7, &n_on, alone);
	*off = step_time(m, 0, &n_off, alone);
	CU_ASSERT_EQUAL(n_on, NORMS);
	CU_ASSERT_EQUAL(n_off, NORMS);
	CU_ASSERT_TRUE(*alone > 0);
	shs_module_free(m);
}

static void independent_all_reduces_pay_one_latency(void)
{
	double on, off, alone = 0;

	on_and_off(false, &on, &off, &alone);
	/* alone they queue on the links, one latency each; combined they cost one between them */
	CU_ASSERT_TRUE(off - on > 0.8 * (NORMS - 1) * alone);
	CU_ASSERT_TRUE(off - on < 1.05 * (NORMS - 1) * alone);
	if (!(off - on > 0.8 * (NORMS - 1) * alone))
		fprintf(stderr, "\n  combined %.4g s, alone %.4g s, one all-reduce %.4g s", on, off,
			alone);
}

static void dependent_all_reduces_are_not_combined(void)
{
	double on, off, alone = 0;

	on_and_off(true, &on, &off, &alone);
	CU_ASSERT_DOUBLE_EQUAL(on, off, 1e-12 * off);
}

CU_TestInfo combine_tests[] = {
	{ "independent all-reduces pay one latency between them",
	  independent_all_reduces_pay_one_latency },
	{ "an all-reduce that reads another's result is not combined with it",
	  dependent_all_reduces_are_not_combined },
	CU_TEST_INFO_NULL,
};
