/* When nothing fits: the search says what would (more chips, more recomputation, fewer tokens
 * per step), and each suggestion holds when tried; a plan with under 3 % of HBM to spare is
 * tight. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>

#include "report.h"
#include "search.h"
#include "test_util.h"

/* A 2-layer LLaMA-3 8B slice (vocab 32768, 1024-token sequences), scanned, of that many
 * sequences: its model state (24 GB) fits one H100, its activations grow with the batch. */
static shs_module *llama_of(int64_t sequences)
{
	char batch[32];
	const char *set[] = { "layers", "2", "seq", "1024", "vocab", "32768", "scan", "true",
			      "batch", batch, NULL };

	snprintf(batch, sizeof(batch), "%lld", (long long)sequences);
	return shs_test_generate("llama3-8b", set);
}

/* The search of m on that many H100s (remat fixed to none when hold_remat), into *r. */
static void search_h100(shs_host *h, const shs_module *m, int64_t devices, bool hold_remat,
			shs_search_result *r)
{
	shs_hw_catalog cat;
	shs_cluster_spec spec = { .hardware = "h100", .devices = devices };
	shs_search_options o = { .threads = 2, .fixed_remat = hold_remat,
				 .eval = { .remat = SHS_REMAT_NONE } };
	shs_err e = { 0 };

	shs_hw_catalog_builtin(&cat);
	SHS_ASSERT_OK(shs_search(h, m, &cat, &spec, &o, r, &e), &e);
	if (!r->best.fits)
		SHS_ASSERT_OK(shs_search_advise(h, m, &cat, &spec, &o, r, &e), &e);
}

static bool fits_on(shs_host *h, const shs_module *m, int64_t devices, bool hold_remat)
{
	shs_search_result r;
	bool fits;

	search_h100(h, m, devices, hold_remat, &r);
	fits = r.best.fits;
	shs_search_result_free(&r);
	return fits;
}

/* 512 sequences need more than one H100 under any remat: the advice names the fewest
 * doubling of the chips that fits, and the one before it does not. */
static void test_more_chips(void)
{
	shs_host *h = shs_test_host();
	shs_module *m = llama_of(512);
	shs_search_result r;
	const shs_search_advice *a = &r.advice;

	search_h100(h, m, 1, false, &r);
	CU_ASSERT_FALSE_FATAL(r.best.fits);
	CU_ASSERT_TRUE(a->given);
	fprintf(stderr, "\n  512 sequences: %.2f GiB on 1 H100; fits on %lld (%s, %.2f GiB, %.4g s)",
		r.eval.memory_bytes / (1 << 30), (long long)a->devices, a->more_chips.mesh,
		a->more_chips.memory_bytes / (1 << 30), a->more_chips.step_time_s);
	CU_ASSERT_TRUE_FATAL(a->devices > 1);
	CU_ASSERT_EQUAL(a->devices & (a->devices - 1), 0);
	CU_ASSERT_TRUE(a->more_chips.memory_bytes <= r.eval.hbm_bytes);
	CU_ASSERT_TRUE(a->more_chips.step_time_s > 0);
	CU_ASSERT_TRUE(fits_on(h, m, a->devices, false));
	CU_ASSERT_FALSE(fits_on(h, m, a->devices / 2, false));
	/* any remat was tried already: none is suggested */
	CU_ASSERT_FALSE(a->remat_fits);
	shs_search_result_free(&r);
	shs_module_free(m);
	shs_host_free(h);
}

/* Held to remat none, 256 sequences do not fit one H100; recomputation would, and so would the
 * fewer sequences the advice counts (the peak less the model state scales with the tokens). */
static void test_recomputation_and_fewer_tokens(void)
{
	shs_host *h = shs_test_host();
	shs_module *m = llama_of(256), *fewer;
	shs_search_result r;
	const shs_search_advice *a = &r.advice;

	search_h100(h, m, 1, true, &r);
	CU_ASSERT_FALSE_FATAL(r.best.fits);
	CU_ASSERT_TRUE_FATAL(a->remat_fits);
	CU_ASSERT_NOT_EQUAL(a->with_remat.remat, SHS_REMAT_NONE);
	CU_ASSERT_TRUE(a->with_remat.memory_bytes <= r.eval.hbm_bytes);
	CU_ASSERT_EQUAL(a->sequences, 256);
	CU_ASSERT_TRUE(a->state_bytes > 0 && a->state_bytes < r.eval.hbm_bytes);
	fprintf(stderr, "\n  256 sequences, remat none: %.2f GiB; about %lld would fit",
		r.eval.memory_bytes / (1 << 30), (long long)a->fit_sequences);
	CU_ASSERT_TRUE_FATAL(a->fit_sequences > 0 && a->fit_sequences < 256);
	fewer = llama_of(a->fit_sequences);
	CU_ASSERT_TRUE(fits_on(h, fewer, 1, true));
	shs_module_free(fewer);
	shs_search_result_free(&r);
	shs_module_free(m);
	shs_host_free(h);
}

/* The state alone over the HBM: fewer tokens cannot help, and the advice says none fit. */
static void test_state_over_hbm(void)
{
	shs_host *h = shs_test_host();
	const char *set[] = { "layers", "24", "seq", "256", "batch", "8", "vocab", "32768",
			      "scan", "true", NULL };
	shs_module *m = shs_test_generate("llama3-8b", set);
	shs_search_result r;

	search_h100(h, m, 1, false, &r);
	CU_ASSERT_FALSE_FATAL(r.best.fits);
	CU_ASSERT_TRUE(r.advice.state_bytes > r.eval.hbm_bytes);
	CU_ASSERT_EQUAL(r.advice.fit_sequences, 0);
	CU_ASSERT_TRUE(r.advice.devices > 1);
	shs_search_result_free(&r);
	shs_module_free(m);
	shs_host_free(h);
}

/* Tight: fits with under 3 % of the HBM to spare; the text says it. */
static void test_tight(void)
{
	shs_eval ev = { .hbm_bytes = 100, .memory_bytes = 98, .fits = true };

	CU_ASSERT_TRUE(shs_eval_tight(&ev));
	CU_ASSERT_STRING_EQUAL(shs_eval_fit_text(&ev), "fits, tight: within 3 % of HBM");
	ev.memory_bytes = 96;
	CU_ASSERT_FALSE(shs_eval_tight(&ev));
	CU_ASSERT_STRING_EQUAL(shs_eval_fit_text(&ev), "fits");
	ev.memory_bytes = 101;
	ev.fits = false;
	CU_ASSERT_FALSE(shs_eval_tight(&ev));
	CU_ASSERT_STRING_EQUAL(shs_eval_fit_text(&ev), "does not fit");
}

CU_TestInfo advice_tests[] = {
	{ "nothing fits: the fewest doubling of the chips that fits", test_more_chips },
	{ "held to remat none: recomputation, or the fewer sequences counted, fit",
	  test_recomputation_and_fewer_tokens },
	{ "the model state alone over the HBM: no fewer tokens fit", test_state_over_hbm },
	{ "a plan with under 3 % of HBM to spare is tight", test_tight },
	CU_TEST_INFO_NULL,
};
