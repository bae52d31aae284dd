/* Shared helpers for the CUnit suites: asserts that print both values, fixtures, temp files. */
#ifndef SHS_TEST_UTIL_H
#define SHS_TEST_UTIL_H

#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "evaluate.h"
#include "gen.h"
#include "hardware.h"
#include "host.h"
#include "io.h"
#include "ir.h"

/* Asserts got == want for integers, printing both on failure. */
#define SHS_ASSERT_INT_EQ(got, want)                                                   \
	do {                                                                               \
		long long g_ = (long long)(got), w_ = (long long)(want);                       \
		if (g_ != w_)                                                                  \
			fprintf(stderr, "\n  %s:%d: %s: got %lld, want %lld\n", __FILE__, __LINE__, \
				#got, g_, w_);                                                 \
		CU_ASSERT_EQUAL_FATAL(g_, w_);                                                 \
	} while (0)

/* Asserts two strings are equal, printing both on failure. */
#define SHS_ASSERT_STR_EQ(got, want)                                                   \
	do {                                                                               \
		const char *g_ = (got), *w_ = (want);                                          \
		bool same_ = g_ && w_ && !strcmp(g_, w_);                                      \
		if (!same_)                                                                    \
			fprintf(stderr, "\n  %s:%d: %s:\n    got  \"%s\"\n    want \"%s\"\n",     \
				__FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_ ? w_ : "(null)");     \
		CU_ASSERT_TRUE_FATAL(same_);                                                   \
	} while (0)

/* Asserts rc == SHS_OK, printing the error message otherwise. */
#define SHS_ASSERT_OK(rc, err)                                                         \
	do {                                                                               \
		int rc_ = (rc);                                                                \
		if (rc_ != SHS_OK)                                                             \
			fprintf(stderr, "\n  %s:%d: %s: %s: %s\n", __FILE__, __LINE__, #rc,       \
				shs_strerror(rc_), (err)->msg);                                        \
		CU_ASSERT_EQUAL_FATAL(rc_, SHS_OK);                                            \
	} while (0)

/* Path of a file of ../shared/hlo (static buffer, valid until the next call). */
const char *shs_test_hlo_path(const char *name);

/* A fresh path under the test temp folder (created on demand); static buffer as above. */
const char *shs_test_tmp_path(const char *name);

/* Writes text to shs_test_tmp_path(name) and returns that path (the same static buffer); fails
 * the test when it cannot. */
const char *shs_test_write_tmp(const char *name, const char *text);

/* Reads a whole file into a malloc'ed buffer (caller frees); NULL on error. */
uint8_t *shs_test_read_file(const char *path, size_t *len);

/* Parses HLO text given inline; fails the test on error. Caller frees with shs_module_free. */
shs_module *shs_test_parse(const char *text);

/* A fresh copy of m (printed as text and parsed back); fails the test on error. Caller frees
 * with shs_module_free. */
shs_module *shs_test_copy(const shs_module *m);

/* The generator preset name (fails the test when there is none). */
shs_gen_config shs_test_preset(const char *name);

/* A module evaluated on a cluster: what a test keeps of one evaluation (all owned). */
typedef struct shs_test_eval {
	shs_hw_catalog cat;
	shs_cluster cluster;
	shs_host *h;
	shs_module *m;
	shs_plan *p;
	shs_eval ev;
} shs_test_eval;

/* Frees s's evaluation, plan, host and module, then s itself (calloc'ed). */
void shs_test_eval_free(shs_test_eval *s);

/* A mesh of n axes with the given names and sizes (names borrowed). */
shs_mesh shs_test_mesh(uint32_t n, const char *const *names, const int64_t *sizes);

/* Makes *c from spec on catalog cat, plans m with the named plan (dp, fsdp, tp, fsdp+tp) or
 * plan file (a path ending in .json) on its mesh with host h's strategies, and evaluates it
 * with options o (NULL: defaults) into *ev; *p is the plan. Every step must succeed. The caller frees *p (shs_plan_free, before h:
 * it borrows strategy names) and *ev (shs_eval_free). */
void shs_test_plan_evaluate(shs_host *h, const shs_hw_catalog *cat, const shs_cluster_spec *spec,
			    const shs_module *m, const char *plan, const shs_eval_options *o,
			    shs_cluster *c, shs_plan **p, shs_eval *ev);

/* The built-in catalog as the book's machine: peak FLOP/s, line-rate links, no tile
 * quantization, collective matmuls at any size, the book's v5p HBM (96e9); for the tests of
 * the book's formulas and choices. */
void shs_test_book_catalog(shs_hw_catalog *c);

/* The generator's module for preset with the settings set (NULL-terminated key, value pairs);
 * fails the test on error. Caller frees with shs_module_free. */
shs_module *shs_test_generate(const char *preset, const char *const *set);

/* A host with the built strategy plugins (SHS_STRATEGY_DIR) loaded; fails the test otherwise.
 * Caller frees with shs_host_free. */
shs_host *shs_test_host(void);

/* Lists the .hlo files of ../shared/hlo and its xla-fuzz/ (paths, malloc'ed; caller frees
 * each and the array). */
char **shs_test_corpus(size_t *n);

#endif
