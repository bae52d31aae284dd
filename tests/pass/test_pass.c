/* The public API as a compiler sees it: shs_pass_run on several threads at once, bad input,
 * and a context. Links libshardsearch.so and includes shardsearch.h only.
 * usage: pass_tests DIR DOT, where DIR holds the modules pass_test.sh generates (a.pb .. d.pb,
 * mlp.hlo) and DOT names the first dot of mlp.hlo. */
#include <CUnit/Basic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardsearch.h"

enum { N_MODULES = 4 };

static const char *dir, *first_dot;

/* Each module, and the options it is searched with (small clusters: fast under ASan). */
static const char *const names[N_MODULES] = { "a.pb", "b.pb", "c.pb", "d.pb" };
static const char *const options[N_MODULES] = {
	"hardware=v5p;devices=16", "hardware=h100;devices=8", "hardware=v5p;topology=2x2x2;remat=full",
	"hardware=v5p;devices=16;mesh=fsdp=4,tensor=4",
};

typedef struct blob {
	uint8_t *data;
	size_t len;
} blob;

static blob read_module(const char *name)
{
	char path[4096];
	blob b = { 0 };
	FILE *f;
	long n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_TRUE_FATAL(fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0);
	rewind(f);
	b.data = malloc((size_t)n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.data);
	b.len = fread(b.data, 1, (size_t)n, f);
	CU_ASSERT_EQUAL_FATAL(b.len, (size_t)n);
	fclose(f);
	return b;
}

typedef struct job {
	blob in;
	const char *options;
	blob out;
	char *err;
	int rc;
} job;

static void *run_job(void *arg)
{
	job *j = arg;

	j->rc = shs_pass_run(j->in.data, j->in.len, j->options, &j->out.data, &j->out.len, &j->err);
	return NULL;
}

/* Four modules on four threads at once give the bytes the same calls give one after another. */
static void test_threads(void)
{
	job seq[N_MODULES], par[N_MODULES];
	pthread_t t[N_MODULES];

	for (int k = 0; k < N_MODULES; k++) {
		seq[k] = (job){ .in = read_module(names[k]), .options = options[k] };
		par[k] = seq[k];
		run_job(&seq[k]);
		if (seq[k].rc)
			fprintf(stderr, "\n  %s: %s\n", names[k], seq[k].err);
		CU_ASSERT_EQUAL(seq[k].rc, 0);
		CU_ASSERT_PTR_NULL(seq[k].err);
		CU_ASSERT_TRUE(seq[k].out.len > 0);
	}
	for (int k = 0; k < N_MODULES; k++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[k], NULL, run_job, &par[k]), 0);
	for (int k = 0; k < N_MODULES; k++) {
		pthread_join(t[k], NULL);
		CU_ASSERT_EQUAL(par[k].rc, 0);
		CU_ASSERT_TRUE(par[k].out.len == seq[k].out.len &&
			       !memcmp(par[k].out.data, seq[k].out.data, seq[k].out.len));
	}
	/* the four answers differ: each thread got its own module's */
	CU_ASSERT_TRUE(seq[0].out.len != seq[1].out.len ||
		       memcmp(seq[0].out.data, seq[1].out.data, seq[0].out.len));
	for (int k = 0; k < N_MODULES; k++) {
		shs_pass_free(seq[k].out.data);
		shs_pass_free(par[k].out.data);
		shs_pass_free(seq[k].err);
		shs_pass_free(par[k].err);
		free(seq[k].in.data);
	}
}

/* A failing call: non-zero, no output, a message containing want (freed: ASan checks leaks). */
static void expect_failure(const uint8_t *in, size_t len, const char *opts, const char *want)
{
	uint8_t *out = (uint8_t *)"x";
	size_t out_len = 1;
	char *err = NULL;
	int rc = shs_pass_run(in, len, opts, &out, &out_len, &err);

	CU_ASSERT_NOT_EQUAL(rc, 0);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_EQUAL(out_len, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(err);
	if (!strstr(err, want))
		fprintf(stderr, "\n  message '%s' lacks '%s'\n", err, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
	shs_pass_free(err);
}

static void test_bad_input(void)
{
	static const uint8_t junk[] = "\xff\xff\xff\xff not a module";
	blob good = read_module(names[0]);

	expect_failure(NULL, 0, "hardware=v5p;devices=16", "empty input");
	expect_failure(good.data, 0, "hardware=v5p;devices=16", "empty input");
	expect_failure(junk, sizeof(junk) - 1, "hardware=v5p;devices=16", "malformed protobuf");
	/* a module cut short */
	expect_failure(good.data, good.len / 2, "hardware=v5p;devices=16", "pass input");
	expect_failure(good.data, good.len, "hardware=v5p;devices=16;remat=all", "remat=all");
	expect_failure(good.data, good.len, "hardware=v5p;devices=16;colour=blue", "unknown option");
	expect_failure(good.data, good.len, "devices=16", "no hardware");
	expect_failure(good.data, good.len, "hardware=tpu9;devices=16", "tpu9");
	expect_failure(good.data, good.len, "hardware=v5p;devices=16;mesh=fsdp=5", "fsdp=5");
	/* pipeline stages: the pass writes the pipelined program for a named plan's GPipe only
	 * (pass_test.sh: a scanned module written so; an unrolled one refused) */
	expect_failure(good.data, good.len, "hardware=h100;devices=16;stages", "pipeline stages");
	expect_failure(good.data, good.len, "hardware=h100;devices=16;mesh=stage=2,data=8",
		       "for a named plan with pipeline=gpipe only");
	expect_failure(good.data, good.len,
		       "hardware=h100;devices=16;mesh=stage=2,data=8;plan=dp;pipeline=1f1b",
		       "for a named plan with pipeline=gpipe only");
	CU_ASSERT_NOT_EQUAL(shs_pass_run(good.data, good.len, NULL, NULL, NULL, NULL), 0);
	free(good.data);
}

/* The context: a search's result and shardings, the bytes the pass gives, and its errors. */
static void test_context(void)
{
	shs_context *ctx = shs_context_new();
	blob in = read_module(names[0]);
	shs_result r = { .struct_size = sizeof(r) };
	uint8_t *pass_out = NULL, *out = NULL;
	size_t pass_len = 0, len = 0;
	const char *report;
	char *err = NULL;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	CU_ASSERT_STRING_EQUAL(shs_version(), SHS_TEST_VERSION);
	/* a NULL context is refused, not followed */
	CU_ASSERT_NOT_EQUAL(shs_context_search(NULL), 0);
	CU_ASSERT_NOT_EQUAL(shs_context_load(NULL, in.data, in.len, "x"), 0);
	CU_ASSERT_PTR_NULL(shs_context_report(NULL, true));
	CU_ASSERT_NOT_EQUAL(shs_context_search(ctx), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(shs_context_error(ctx), "no module"));
	CU_ASSERT_NOT_EQUAL(shs_context_result(ctx, &r), 0);
	CU_ASSERT_PTR_NULL(shs_context_report(ctx, true));
	CU_ASSERT_NOT_EQUAL(shs_context_set(ctx, "colour", "blue"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(shs_context_error(ctx), "unknown option"));
	CU_ASSERT_NOT_EQUAL(shs_context_load(ctx, (const uint8_t *)"HloModule broken\n", 17, "t"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(shs_context_error(ctx), "t:"));
	CU_ASSERT_NOT_EQUAL(shs_context_load_file(ctx, "/no/such/step.pb"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(shs_context_error(ctx), "/no/such/step.pb"));
	CU_ASSERT_NOT_EQUAL(shs_context_write_file(ctx, "/tmp/never.pb"), 0); /* nothing loaded */
	CU_ASSERT_EQUAL_FATAL(shs_context_load(ctx, in.data, in.len, names[0]), 0);
	CU_ASSERT_EQUAL(shs_context_set(ctx, "hardware", "v5p"), 0);
	CU_ASSERT_EQUAL(shs_context_configure(ctx, "devices=16"), 0);
	CU_ASSERT_EQUAL_FATAL(shs_context_search(ctx), 0);
	CU_ASSERT_EQUAL_FATAL(shs_context_result(ctx, &r), 0);
	CU_ASSERT_TRUE(r.step_time_s > 0 && r.mfu > 0 && r.mfu <= 1);
	CU_ASSERT_TRUE(r.memory_bytes > 0 && r.hbm_bytes > 0 && r.candidates > 0);
	CU_ASSERT_TRUE(strlen(r.mesh) > 0 && strchr(r.mesh, '='));
	CU_ASSERT_TRUE(r.zero_stage >= 0 && r.zero_stage <= 3);
	CU_ASSERT_PTR_NULL(shs_context_sharding(ctx, "no-such-instruction"));
	report = shs_context_report(ctx, false);
	CU_ASSERT_PTR_NOT_NULL_FATAL(report);
	CU_ASSERT_TRUE(!strncmp(report, "mesh ", 5) && strstr(report, r.mesh) &&
		       strstr(report, "\nrunners-up\n"));
	report = shs_context_report(ctx, true);
	CU_ASSERT_PTR_NOT_NULL_FATAL(report);
	CU_ASSERT_TRUE(report[0] == '{' && strstr(report, "\"step_time_s\"") &&
		       strstr(report, "\"runners_up\"") && strstr(report, "\"zero_stage\""));
	CU_ASSERT_EQUAL_FATAL(shs_context_write(ctx, &out, &len), 0);
	CU_ASSERT_EQUAL_FATAL(shs_pass_run(in.data, in.len, options[0], &pass_out, &pass_len, &err),
			      0);
	CU_ASSERT_TRUE(len == pass_len && !memcmp(out, pass_out, len));
	shs_pass_free(out);
	shs_pass_free(pass_out);
	free(in.data);
	shs_context_free(ctx);
}

/* A searched module written to a file loads back to the same bytes, with no result yet. */
static void test_context_file(void)
{
	shs_context *ctx = shs_context_new();
	shs_result r = { .struct_size = sizeof(r) };
	uint8_t *first = NULL, *again = NULL;
	size_t first_len = 0, again_len = 0;
	char path[4096];

	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	snprintf(path, sizeof(path), "%s/%s", dir, names[2]);
	CU_ASSERT_EQUAL_FATAL(shs_context_load_file(ctx, path), 0);
	CU_ASSERT_EQUAL(shs_context_configure(ctx, options[2]), 0);
	CU_ASSERT_EQUAL_FATAL(shs_context_search(ctx), 0);
	CU_ASSERT_EQUAL_FATAL(shs_context_write(ctx, &first, &first_len), 0);
	snprintf(path, sizeof(path), "%s/context-out.pb", dir);
	CU_ASSERT_EQUAL_FATAL(shs_context_write_file(ctx, path), 0);
	CU_ASSERT_EQUAL_FATAL(shs_context_load_file(ctx, path), 0);
	CU_ASSERT_NOT_EQUAL(shs_context_result(ctx, &r), 0);
	CU_ASSERT_EQUAL_FATAL(shs_context_write(ctx, &again, &again_len), 0);
	CU_ASSERT_TRUE(again_len == first_len && !memcmp(again, first, first_len));
	shs_pass_free(first);
	shs_pass_free(again);
	shs_context_free(ctx);
}

/* The first matmul of a small MLP under fsdp=8 is split over the eight devices. */
static void test_context_sharding(void)
{
	shs_context *ctx = shs_context_new();
	char path[4096];
	const char *s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	snprintf(path, sizeof(path), "%s/mlp.hlo", dir);
	CU_ASSERT_EQUAL_FATAL(shs_context_load_file(ctx, path), 0);
	CU_ASSERT_EQUAL(shs_context_configure(ctx, "hardware=v5p;devices=8;mesh=fsdp=8"), 0);
	CU_ASSERT_EQUAL_FATAL(shs_context_search(ctx), 0);
	s = shs_context_sharding(ctx, first_dot);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	/* by its rows (the batch) or, 64 tokens being fewer than the weights' columns, by those */
	if (!strstr(s, "devices=[8,1]") && !strstr(s, "devices=[1,8]"))
		fprintf(stderr, "\n  %s: %s\n", first_dot, s);
	CU_ASSERT_TRUE(strstr(s, "devices=[8,1]") || strstr(s, "devices=[1,8]"));
	shs_context_free(ctx);
}

/* Warnings a context hands out: whether one mentioned the wrong_abi test plugin. */
static void note_wrong_abi(void *user, const char *msg)
{
	if (strstr(msg, "wrong_abi"))
		*(bool *)user = true;
}

/* SHARDSEARCH_PLUGIN_PATH is read only when the host asks (plugin-path-env): a compiler that
 * loads the pass does not pick up plugins from its environment. */
static void test_plugin_path_env(void)
{
	blob in = read_module(names[0]);
	bool asked;

	setenv("SHARDSEARCH_PLUGIN_PATH", SHS_TEST_PLUGIN_DIR, 1);
	for (int k = 0; k < 2; k++) {
		shs_context *ctx = shs_context_new();
		bool seen = false;
		asked = k == 1;
		CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
		shs_context_set_warnings(ctx, note_wrong_abi, &seen);
		CU_ASSERT_EQUAL_FATAL(shs_context_load(ctx, in.data, in.len, names[0]), SHS_OK);
		CU_ASSERT_EQUAL(shs_context_configure(ctx, options[0]), SHS_OK);
		if (asked)
			CU_ASSERT_EQUAL(shs_context_set(ctx, "plugin-path-env", NULL), SHS_OK);
		CU_ASSERT_EQUAL(shs_context_search(ctx), SHS_OK);
		/* the folder's refused plugin was tried only when asked */
		CU_ASSERT_EQUAL(seen, asked);
		shs_context_free(ctx);
	}
	unsetenv("SHARDSEARCH_PLUGIN_PATH");
	free(in.data);
}

/* plan= makes a named plan by propagation: annotated, with no search result. */
static void test_context_named_plan(void)
{
	shs_context *ctx = shs_context_new();
	shs_result r = { .struct_size = sizeof(r) };
	char path[4096];
	const char *s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	snprintf(path, sizeof(path), "%s/mlp.hlo", dir);
	CU_ASSERT_EQUAL_FATAL(shs_context_load_file(ctx, path), SHS_OK);
	CU_ASSERT_EQUAL(shs_context_configure(ctx, "plan=fsdp;mesh=fsdp=8"), SHS_OK);
	CU_ASSERT_EQUAL_FATAL(shs_context_search(ctx), SHS_OK);
	CU_ASSERT_EQUAL(shs_context_result(ctx, &r), SHS_EINVAL); /* not a search */
	CU_ASSERT_PTR_NULL(shs_context_report(ctx, false));
	s = shs_context_sharding(ctx, first_dot);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "devices=[")); /* split over the 8 devices */
	CU_ASSERT_EQUAL(shs_context_set(ctx, "plan", "zero9"), SHS_OK); /* checked at the run */
	CU_ASSERT_EQUAL(shs_context_search(ctx), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(shs_context_error(ctx), "zero9"));
	CU_ASSERT_STRING_EQUAL(shs_strerror(SHS_EINVAL), shs_strerror(-1));
	shs_context_free(ctx);
}

/* No plan fits (nofit.pb on one H100, the whole batch at once): the pass and the context
 * return SHS_ENOFIT, no module from the pass, and say what would fit; the context's result and
 * report stay readable. Searched with micro-batches, it fits. */
static void test_nothing_fits(void)
{
	static const char opts[] = "hardware=h100;devices=1;microbatches=1";
	shs_context *ctx = shs_context_new();
	shs_result r = { .struct_size = sizeof(r) };
	blob in = read_module("nofit.pb");
	uint8_t *out = NULL;
	size_t len = 1;
	char *err = NULL;
	const char *s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(ctx);
	CU_ASSERT_EQUAL(shs_pass_run(in.data, in.len, opts, &out, &len, &err), SHS_ENOFIT);
	CU_ASSERT_TRUE(out == NULL && len == 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "nothing fits in HBM"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "chips"));
	CU_ASSERT_STRING_EQUAL(shs_strerror(SHS_ENOFIT), "does not fit");
	CU_ASSERT_EQUAL_FATAL(shs_context_load(ctx, in.data, in.len, "nofit.pb"), SHS_OK);
	CU_ASSERT_EQUAL(shs_context_configure(ctx, opts), SHS_OK);
	CU_ASSERT_EQUAL(shs_context_search(ctx), SHS_ENOFIT);
	CU_ASSERT_STRING_EQUAL(shs_context_error(ctx), err);
	CU_ASSERT_EQUAL_FATAL(shs_context_result(ctx, &r), SHS_OK);
	CU_ASSERT_FALSE(r.fits);
	CU_ASSERT_TRUE(r.memory_bytes > r.hbm_bytes);
	s = shs_context_report(ctx, false);
	CU_ASSERT_TRUE(s && strstr(s, "\nwhat would fit ") && strstr(s, "  more chips    devices="));
	s = shs_context_report(ctx, true);
	CU_ASSERT_TRUE(s && strstr(s, "\"would_fit\"") && strstr(s, "\"fits\": false"));
	/* nothing annotated: the module writes back as it came */
	CU_ASSERT_EQUAL_FATAL(shs_context_write(ctx, &out, &len), SHS_OK);
	CU_ASSERT_TRUE(len == in.len && !memcmp(out, in.data, len));
	shs_pass_free(out);
	shs_pass_free(err);
	out = NULL;
	err = NULL;
	CU_ASSERT_EQUAL(shs_pass_run(in.data, in.len, "hardware=h100;devices=1", &out, &len, &err),
			SHS_OK);
	CU_ASSERT_TRUE(out != NULL && len > in.len); /* the loop over micro-batches */
	shs_pass_free(out);
	shs_pass_free(err);
	free(in.data);
	shs_context_free(ctx);
}

static CU_TestInfo tests[] = {
	{ "shs_pass_run on 4 threads gives the bytes of sequential calls", test_threads },
	{ "bad bytes, bad options, empty input: non-zero and a message", test_bad_input },
	{ "a context: errors, search, result, write as the pass does", test_context },
	{ "a context: an instruction's sharding text", test_context_sharding },
	{ "a context: a written file loads back to the same bytes", test_context_file },
	{ "SHARDSEARCH_PLUGIN_PATH only when the host asks", test_plugin_path_env },
	{ "a context: plan= makes a named plan, with no search result", test_context_named_plan },
	{ "nothing fits: SHS_ENOFIT, no module, what would fit", test_nothing_fits },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	CU_SuiteInfo suites[] = { { "pass", NULL, NULL, NULL, NULL, tests }, CU_SUITE_INFO_NULL };
	unsigned failed;

	if (argc != 3) {
		fprintf(stderr, "usage: pass_tests DIR DOT\n");
		return 2;
	}
	dir = argv[1];
	first_dot = argv[2];
	if (CU_initialize_registry() != CUE_SUCCESS || CU_register_suites(suites) != CUE_SUCCESS)
		return 1;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	failed += CU_get_number_of_tests_run() == 0;
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
