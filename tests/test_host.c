/* The plugin host: loading and refusing plugins, checked candidates, views of the IR. */
#define _GNU_SOURCE /* RTLD_NOLOAD */

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_internal.h"
#include "test_util.h"

enum { MAX_WARNINGS = 64, CMD_MAX = 8192 };

#define PLUGIN(name) SHS_TEST_PLUGIN_DIR "/" name ".so"

/* Warnings received through the host's callback. */
typedef struct warnings {
	int n;
	char *msg[MAX_WARNINGS];
} warnings;

static void record(void *user, const char *msg)
{
	warnings *w = user;

	if (w->n < MAX_WARNINGS)
		w->msg[w->n] = strdup(msg);
	w->n++;
}

static void warnings_free(warnings *w)
{
	for (int k = 0; k < w->n && k < MAX_WARNINGS; k++)
		free(w->msg[k]);
	*w = (warnings){ 0 };
}

/* The index of the first warning containing s, or -1. */
static int warned(const warnings *w, const char *s)
{
	for (int k = 0; k < w->n && k < MAX_WARNINGS; k++)
		if (w->msg[k] && strstr(w->msg[k], s))
			return k;
	return -1;
}

#define ASSERT_WARNED(w, s)                                                              \
	do {                                                                             \
		if (warned((w), (s)) < 0) {                                              \
			fprintf(stderr, "\n  %s:%d: no warning contains \"%s\"; got %d:\n",  \
				__FILE__, __LINE__, (s), (w)->n);                        \
			for (int k_ = 0; k_ < (w)->n && k_ < MAX_WARNINGS; k_++)         \
				fprintf(stderr, "    %s\n", (w)->msg[k_]);                    \
		}                                                                        \
		CU_ASSERT_TRUE_FATAL(warned((w), (s)) >= 0);                             \
	} while (0)

static const char module_text[] =
	"HloModule m\n"
	"ENTRY e {\n"
	"  p0 = f32[10,6] parameter(0)\n"
	"  p1 = f32[10,6] parameter(1)\n"
	"  add.1 = f32[10,6] add(p0, p1)\n"
	"  sub = f32[10,6] subtract(p0, p1)\n"
	"  neg = f32[10,6] negate(p0)\n"
	"  max = f32[10,6] maximum(p0, p1)\n"
	"  mul = f32[10,6] multiply(p0, p1)\n"
	"  div = f32[10,6] divide(p0, p1), metadata={op_name=\"jit/good-match/div\"}\n"
	"  cc = f32[10,6] custom-call(p0), custom_call_target=\"MyOp\"\n"
	"  other = f32[10,6] custom-call(p0), custom_call_target=\"Other\"\n"
	"  ROOT t = (f32[10,6], f32[10,6], f32[10,6]) tuple(add.1, cc, other)\n"
	"}\n";

/* fsdp=4, tensor=2: dim 0 (10) divides by tensor only. */
static const shs_mesh mesh2 = { .n_axes = 2, .names = { "fsdp", "tensor" }, .sizes = { 4, 2 } };

static const shs_instr *find(const shs_module *m, const char *name)
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t k = 0; k < c->n_instrs; k++)
		if (!strcmp(c->instrs[k]->name, name))
			return c->instrs[k];
	CU_FAIL_FATAL("no such instruction");
	return NULL;
}

/* The candidates of instruction name on mesh2 (ENUMERATE, no hints); fails the test on error. */
static shs_cands cands_of(shs_host *h, const shs_module *m, const char *name)
{
	shs_cands out = { 0 };
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_host_candidates(h, m, shs_module_entry(m), find(m, name), &mesh2, NULL,
					  NULL, SHS_PMODE_ENUMERATE, &out, &e), &e);
	return out;
}

static shs_host *host_with(warnings *w, const char *const *paths)
{
	shs_host *h = shs_host_new(record, w);
	shs_err e = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	for (size_t k = 0; paths[k]; k++)
		SHS_ASSERT_OK(shs_host_load(h, paths[k], &e), &e);
	return h;
}

/* Loads path into h, expecting refusal with code and exactly the message "path: why". */
static void expect_refused(shs_host *h, const char *path, int code, const char *why)
{
	char want[SHS_ERRMSG_MAX];
	shs_err e = { 0 };

	snprintf(want, sizeof(want), "%s: %s", path, why);
	SHS_ASSERT_INT_EQ(shs_host_load(h, path, &e), code);
	SHS_ASSERT_INT_EQ(e.code, code);
	SHS_ASSERT_STR_EQ(e.msg, want);
}

static bool is_loaded(const char *path)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_NOLOAD);

	if (dl)
		dlclose(dl);
	return dl != NULL;
}

/* ---- Loading ---- */

static void new_and_free(void)
{
	shs_host *h = shs_host_new(NULL, NULL);

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(h), 0);
	CU_ASSERT_PTR_NULL(shs_host_plugin_path(h, 0));
	shs_host_free(h);
	shs_host_free(NULL);
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(NULL), 0);
}

static void refuses_no_entry(void)
{
	shs_host *h = shs_host_new(NULL, NULL);

	expect_refused(h, PLUGIN("no_entry"), SHS_EINVAL,
		       "no shs_plugin_init (not a shardsearch plugin)");
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(h), 0);
	CU_ASSERT_FALSE(is_loaded(PLUGIN("no_entry")));
	shs_host_free(h);
}

static void refuses_wrong_abi_before_init(void)
{
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c;

	expect_refused(h, PLUGIN("wrong_abi"), SHS_EINVAL,
		       "built for plugin ABI 999, this host speaks 2");
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(h), 0);
	CU_ASSERT_FALSE(is_loaded(PLUGIN("wrong_abi")));
	c = cands_of(h, m, "add.1"); /* its init never ran: nothing serves add */
	CU_ASSERT_FALSE(c.served);
	SHS_ASSERT_INT_EQ(c.n, 0);
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void refuses_failed_init_and_rolls_back(void)
{
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w);
	shs_module *m = shs_test_parse(module_text);
	shs_err e = { 0 };
	shs_cands c;

	expect_refused(h, PLUGIN("init_fails"), SHS_EINVAL, "init failed: needs a GPU");
	SHS_ASSERT_OK(shs_host_load(h, PLUGIN("good"), &e), &e);
	c = cands_of(h, m, "add.1");
	SHS_ASSERT_INT_EQ(c.n, 2); /* good's only: init_fails.add was removed */
	for (uint32_t k = 0; k < c.n; k++)
		SHS_ASSERT_STR_EQ(c.v[k].strategy, "good.add");
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void refuses_missing_file_and_double_load(void)
{
	shs_host *h = shs_host_new(NULL, NULL);
	shs_err e = { 0 };

	SHS_ASSERT_INT_EQ(shs_host_load(h, SHS_TEST_PLUGIN_DIR "/nope.so", &e), SHS_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, SHS_TEST_PLUGIN_DIR "/nope.so"));
	CU_ASSERT_EQUAL(strncmp(e.msg, SHS_TEST_PLUGIN_DIR "/nope.so: ",
				strlen(SHS_TEST_PLUGIN_DIR "/nope.so: ")), 0);
	SHS_ASSERT_OK(shs_host_load(h, PLUGIN("good"), &e), &e);
	expect_refused(h, PLUGIN("good"), SHS_EINVAL, "already loaded (as " PLUGIN("good") ")");
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(h), 1);
	SHS_ASSERT_STR_EQ(shs_host_plugin_path(h, 0), PLUGIN("good"));
	shs_host_free(h);
}

static void good_still_serves_after_refusals(void)
{
	static const char *const broken[] = { "no_entry", "wrong_abi", "init_fails" };
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w);
	shs_module *m = shs_test_parse(module_text);
	char path[1024];
	shs_err e = { 0 };
	shs_cands c;

	for (size_t k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s/%s.so", SHS_TEST_PLUGIN_DIR, broken[k]);
		SHS_ASSERT_INT_EQ(shs_host_load(h, path, &e), SHS_EINVAL);
	}
	SHS_ASSERT_OK(shs_host_load(h, PLUGIN("good"), &e), &e);
	c = cands_of(h, m, "add.1");
	CU_ASSERT_TRUE(c.served);
	SHS_ASSERT_INT_EQ(c.n, 2);
	SHS_ASSERT_STR_EQ(c.v[0].label, "replicated");
	SHS_ASSERT_STR_EQ(c.v[1].label, "dim0=tensor");
	SHS_ASSERT_STR_EQ(c.v[1].plugin, PLUGIN("good"));
	SHS_ASSERT_INT_EQ(c.v[1].n_result, 1);
	SHS_ASSERT_INT_EQ(c.v[1].result[0].dims[0].n, 1);
	SHS_ASSERT_INT_EQ(c.v[1].result[0].dims[0].axes[0], 1);
	SHS_ASSERT_INT_EQ(c.v[1].n_operands, 2);
	SHS_ASSERT_INT_EQ(c.v[1].operand_first[1], 1);
	SHS_ASSERT_INT_EQ(c.v[1].operands[1].dims[0].axes[0], 1);
	CU_ASSERT_DOUBLE_EQUAL(c.v[1].flops, 30.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(c.v[1].bytes, 30.0 * 4 * 3, 1e-9);
	SHS_ASSERT_INT_EQ(w.n, 0);
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void load_dir_in_name_order(void)
{
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w);
	shs_err e = { 0 };

	SHS_ASSERT_INT_EQ(shs_host_load_dir(h, SHS_TEST_PLUGIN_DIR, &e), 6);
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(h), 6);
	SHS_ASSERT_STR_EQ(shs_host_plugin_path(h, 0), PLUGIN("axis_twice"));
	SHS_ASSERT_STR_EQ(shs_host_plugin_path(h, 1), PLUGIN("bad_rank"));
	SHS_ASSERT_STR_EQ(shs_host_plugin_path(h, 2), PLUGIN("destroys"));
	SHS_ASSERT_STR_EQ(shs_host_plugin_path(h, 3), PLUGIN("good"));
	SHS_ASSERT_STR_EQ(shs_host_plugin_path(h, 4), PLUGIN("no_divide"));
	SHS_ASSERT_STR_EQ(shs_host_plugin_path(h, 5), PLUGIN("whole"));
	SHS_ASSERT_INT_EQ(w.n, 4); /* refused, in name order */
	SHS_ASSERT_STR_EQ(w.msg[0], PLUGIN("init_fails") ": init failed: needs a GPU");
	SHS_ASSERT_STR_EQ(w.msg[1], PLUGIN("no_entry")
		       ": no shs_plugin_init (not a shardsearch plugin)");
	SHS_ASSERT_STR_EQ(w.msg[2], PLUGIN("wrong_abi")
		       ": built for plugin ABI 999, this host speaks 2");
	CU_ASSERT_PTR_NOT_NULL(strstr(w.msg[3], PLUGIN("wrong_sizes") ": built with other "));
	shs_host_free(h);
	warnings_free(&w);
}

static void load_dir_skips_unloadable_files(void)
{
	char dir[2048], path[4096];
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w);
	shs_err e = { 0 };
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", shs_test_tmp_path("host_junk"));
	mkdir(dir, 0777);
	snprintf(path, sizeof(path), "%s/a_junk.so", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("not an ELF file\n", f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/b_good.so", dir);
	remove(path);
	CU_ASSERT_EQUAL_FATAL(symlink(PLUGIN("good"), path), 0);
	snprintf(path, sizeof(path), "%s/c_readme.txt", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	SHS_ASSERT_INT_EQ(shs_host_load_dir(h, dir, &e), 1);
	SHS_ASSERT_INT_EQ(w.n, 1);
	snprintf(path, sizeof(path), "%s/a_junk.so: ", dir);
	CU_ASSERT_EQUAL(strncmp(w.msg[0], path, strlen(path)), 0);
	snprintf(path, sizeof(path), "%s/b_good.so", dir);
	SHS_ASSERT_STR_EQ(shs_host_plugin_path(h, 0), path);
	shs_host_free(h);
	warnings_free(&w);
}

static void load_dir_missing_folder(void)
{
	shs_host *h = shs_host_new(NULL, NULL);
	shs_err e = { 0 };

	SHS_ASSERT_INT_EQ(shs_host_load_dir(h, SHS_TEST_PLUGIN_DIR "/no-such-dir", &e), SHS_EIO);
	SHS_ASSERT_INT_EQ(e.code, SHS_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, SHS_TEST_PLUGIN_DIR "/no-such-dir: "));
	shs_host_free(h);
}

static void builtin_strategies_load(void)
{
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w);
	shs_err e = { 0 };
	int n = shs_host_load_dir(h, SHS_STRATEGY_DIR, &e);

	if (n != SHS_TEST_BUILTIN_PLUGINS)
		fprintf(stderr, "\n  %s\n", n < 0 ? e.msg : w.n ? w.msg[0] : "");
	SHS_ASSERT_INT_EQ(n, SHS_TEST_BUILTIN_PLUGINS); /* every one of them, none refused */
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(h), n);
	SHS_ASSERT_INT_EQ(w.n, 0);
	shs_host_free(h);
	warnings_free(&w);
}

static void refuses_other_sizes_before_init(void)
{
	shs_host *h = shs_host_new(NULL, NULL);
	shs_module *m = shs_test_parse(module_text);
	shs_err e = { 0 };
	shs_cands c;

	SHS_ASSERT_INT_EQ(shs_host_load(h, PLUGIN("wrong_sizes"), &e), SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, PLUGIN("wrong_sizes") ": built with other limits"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "max rank 16, host 8"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "sizeof(shs_pspec)"));
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(h), 0);
	CU_ASSERT_FALSE(is_loaded(PLUGIN("wrong_sizes")));
	c = cands_of(h, m, "add.1"); /* its init never ran: nothing serves add */
	CU_ASSERT_FALSE(c.served);
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
}

/* Loads the destroys plugin (failing its init when fail) into a new host, frees the host, and
 * returns what its strategies' destroy functions logged (caller frees). */
static char *destroy_log(bool fail, int *load_rc)
{
	const char *log = shs_test_tmp_path("destroy.log");
	shs_host *h = shs_host_new(NULL, NULL);
	shs_err e = { 0 };
	size_t len = 0;

	unlink(log);
	setenv("SHS_TEST_DESTROY_LOG", log, 1);
	if (fail)
		setenv("SHS_TEST_DESTROY_FAIL", "1", 1);
	*load_rc = shs_host_load(h, PLUGIN("destroys"), &e);
	shs_host_free(h);
	unsetenv("SHS_TEST_DESTROY_FAIL");
	unsetenv("SHS_TEST_DESTROY_LOG");
	return (char *)shs_test_read_file(log, &len);
}

static void destroys_user_data(void)
{
	int rc;
	char *log = destroy_log(false, &rc);

	SHS_ASSERT_INT_EQ(rc, SHS_OK);
	CU_ASSERT_PTR_NOT_NULL_FATAL(log);
	SHS_ASSERT_STR_EQ(log, "destroy destroys.b\ndestroy destroys.a\n"); /* newest first */
	free(log);
	log = destroy_log(true, &rc); /* init fails after registering both: released at once */
	SHS_ASSERT_INT_EQ(rc, SHS_EINVAL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(log);
	SHS_ASSERT_STR_EQ(log, "destroy destroys.b\ndestroy destroys.a\n");
	free(log);
}

static void finds_builtin_dir(void)
{
	char dir[4096], obj[4096], want[4096];
	const char *root = shs_test_tmp_path("host_inst");
	static const char *const parts[] = { "", "/bin", "/lib", "/lib/shardsearch",
					     "/lib/shardsearch/plugins" };

	/* build tree: the program sits in the build root beside strategies/ */
	CU_ASSERT_TRUE(shs__host_builtin_dir(SHS_STRATEGY_DIR "/../shardsearch", dir, sizeof(dir)));
	SHS_ASSERT_STR_EQ(dir, SHS_STRATEGY_DIR "/../strategies");
	/* install: lib/libshardsearch.so, and bin/shardsearch */
	for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++) {
		snprintf(want, sizeof(want), "%s%s", root, parts[k]);
		mkdir(want, 0777);
	}
	snprintf(obj, sizeof(obj), "%s/lib/libshardsearch.so", root);
	CU_ASSERT_TRUE(shs__host_builtin_dir(obj, dir, sizeof(dir)));
	snprintf(want, sizeof(want), "%s/lib/shardsearch/plugins", root);
	SHS_ASSERT_STR_EQ(dir, want);
	snprintf(obj, sizeof(obj), "%s/bin/shardsearch", root);
	CU_ASSERT_TRUE(shs__host_builtin_dir(obj, dir, sizeof(dir)));
	snprintf(want, sizeof(want), "%s/bin/../lib/shardsearch/plugins", root);
	SHS_ASSERT_STR_EQ(dir, want);
	CU_ASSERT_FALSE(shs__host_builtin_dir("/no/such/place/shardsearch", dir, sizeof(dir)));
	SHS_ASSERT_STR_EQ(dir, "");
}

static void honours_plugin_path(void)
{
	static const char *const missing_extra[] = { SHS_TEST_PLUGIN_DIR "/missing-extra", NULL };
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w);
	shs_err e = { 0 };
	bool found = false;
	int n;

	setenv("SHARDSEARCH_PLUGIN_PATH", "/no/such/plugin-dir::" SHS_TEST_PLUGIN_DIR, 1);
	n = shs_host_load_default(h, NULL, true, &e);
	CU_ASSERT_TRUE(n >= 4);
	SHS_ASSERT_INT_EQ(shs_host_plugin_count(h), n);
	for (uint32_t k = 0; k < shs_host_plugin_count(h); k++)
		found |= !strcmp(shs_host_plugin_path(h, k), PLUGIN("good"));
	CU_ASSERT_TRUE(found);
	ASSERT_WARNED(&w, "/no/such/plugin-dir: ");
	shs_host_free(h);

	h = shs_host_new(NULL, NULL);
	unsetenv("SHARDSEARCH_PLUGIN_PATH");
	SHS_ASSERT_INT_EQ(shs_host_load_default(h, missing_extra, true, &e), SHS_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "missing-extra"));
	shs_host_free(h);
	warnings_free(&w);
}

static void unloads_on_free(void)
{
	shs_host *h = shs_host_new(NULL, NULL);
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_host_load(h, PLUGIN("no_divide"), &e), &e);
	CU_ASSERT_TRUE(is_loaded(PLUGIN("no_divide")));
	shs_host_free(h);
	CU_ASSERT_FALSE(is_loaded(PLUGIN("no_divide")));
}

/* ---- Candidates ---- */

static void drops_wrong_rank(void)
{
	static const char *const paths[] = { PLUGIN("bad_rank"), PLUGIN("good"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = cands_of(h, m, "add.1");

	/* several plugins serve add: load order, then registration order */
	SHS_ASSERT_INT_EQ(c.n, 3);
	SHS_ASSERT_STR_EQ(c.v[0].label, "ok");
	SHS_ASSERT_STR_EQ(c.v[0].strategy, "bad.rank");
	SHS_ASSERT_STR_EQ(c.v[1].label, "replicated");
	SHS_ASSERT_STR_EQ(c.v[2].label, "dim0=tensor");
	SHS_ASSERT_INT_EQ(w.n, 1);
	SHS_ASSERT_STR_EQ(w.msg[0], PLUGIN("bad_rank") "(strategy bad.rank): add.1 (add): "
		       "candidate 'rank3': result leaf 0 has rank 3, the shape has rank 2");
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void drops_axis_twice_and_unknown_axis(void)
{
	static const char *const paths[] = { PLUGIN("axis_twice"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = cands_of(h, m, "add.1");

	CU_ASSERT_TRUE(c.served);
	SHS_ASSERT_INT_EQ(c.n, 0);
	SHS_ASSERT_INT_EQ(w.n, 2);
	SHS_ASSERT_STR_EQ(w.msg[0], PLUGIN("axis_twice") "(strategy bad.axis_twice): add.1 (add): "
		       "candidate 'twice': operand 1 uses axis 'fsdp' twice");
	ASSERT_WARNED(&w, "candidate 'axis9': result dim 0: axis index 9 but the mesh has 2 axes");
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void drops_size_that_does_not_divide(void)
{
	static const char *const paths[] = { PLUGIN("no_divide"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = cands_of(h, m, "add.1");

	SHS_ASSERT_INT_EQ(c.n, 1);
	SHS_ASSERT_STR_EQ(c.v[0].label, "split0-padded");
	CU_ASSERT_TRUE(c.v[0].result[0].padded);
	SHS_ASSERT_INT_EQ(w.n, 1);
	SHS_ASSERT_STR_EQ(w.msg[0], PLUGIN("no_divide") "(strategy bad.no_divide): add.1 (add): "
		       "candidate 'split0': result dim 0 (size 10) does not divide by 4 (fsdp)");
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void custom_call_targets_and_match(void)
{
	static const char *const paths[] = { PLUGIN("good"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = cands_of(h, m, "cc");

	SHS_ASSERT_INT_EQ(c.n, 1);
	SHS_ASSERT_STR_EQ(c.v[0].label, "myop-replicated");
	SHS_ASSERT_STR_EQ(c.v[0].strategy, "good.myop");
	SHS_ASSERT_INT_EQ(c.v[0].result[0].rank, 2);
	SHS_ASSERT_INT_EQ(c.v[0].result[0].dims[0].n, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.v[0].flops, 60.0, 1e-9);
	shs_cands_free(&c);
	c = cands_of(h, m, "div");
	SHS_ASSERT_INT_EQ(c.n, 1);
	SHS_ASSERT_STR_EQ(c.v[0].label, "matched");
	shs_cands_free(&c);
	SHS_ASSERT_INT_EQ(w.n, 0);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void hints_reach_the_plugin(void)
{
	static const char *const paths[] = { PLUGIN("good"), NULL };
	shs_pspec on_tensor = { .rank = 2, .dims = { { .n = 1, .axes = { 1 } } } };
	shs_pspec on_fsdp = { .rank = 2, .padded = true, .dims = { { .n = 1, .axes = { 0 } } } };
	const shs_pspec *hints[] = { &on_fsdp };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	const shs_instr *cc = find(m, "cc");
	shs_cands c;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_host_candidates(h, m, shs_module_entry(m), cc, &mesh2, hints, &on_tensor,
					  SHS_PMODE_PROPAGATE, &c, &e), &e);
	SHS_ASSERT_INT_EQ(c.n, 3);
	SHS_ASSERT_STR_EQ(c.v[1].label, "myop-result-hint");
	SHS_ASSERT_INT_EQ(c.v[1].result[0].dims[0].axes[0], 1);
	SHS_ASSERT_INT_EQ(c.v[1].operands[0].dims[0].axes[0], 1);
	SHS_ASSERT_STR_EQ(c.v[2].label, "myop-operand-hint");
	SHS_ASSERT_INT_EQ(c.v[2].result[0].dims[0].axes[0], 0);
	CU_ASSERT_TRUE(c.v[2].result[0].padded);
	shs_cands_free(&c);
	/* NULL hints and result hint: nothing decided */
	SHS_ASSERT_OK(shs_host_candidates(h, m, shs_module_entry(m), cc, &mesh2, NULL, NULL,
					  SHS_PMODE_PROPAGATE, &c, &e), &e);
	SHS_ASSERT_INT_EQ(c.n, 1);
	shs_cands_free(&c);
	SHS_ASSERT_INT_EQ(w.n, 0);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void unserved_warns_once(void)
{
	static const char *const paths[] = { PLUGIN("good"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = cands_of(h, m, "other");

	CU_ASSERT_FALSE(c.served);
	SHS_ASSERT_INT_EQ(c.n, 0);
	shs_cands_free(&c);
	c = cands_of(h, m, "other");
	CU_ASSERT_FALSE(c.served);
	shs_cands_free(&c);
	SHS_ASSERT_INT_EQ(w.n, 1);
	SHS_ASSERT_STR_EQ(w.msg[0],
			  "other (custom call 'Other'): no strategy for this target; replicated");
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void failed_generator_dropped(void)
{
	static const char *const paths[] = { PLUGIN("bad_rank"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = cands_of(h, m, "sub");

	CU_ASSERT_TRUE(c.served);
	SHS_ASSERT_INT_EQ(c.n, 0);
	SHS_ASSERT_INT_EQ(w.n, 1);
	SHS_ASSERT_STR_EQ(w.msg[0], PLUGIN("bad_rank") "(strategy bad.fail): sub (subtract): "
		       "generator failed: cannot shard sub (1 candidates dropped)");
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void caps_candidate_flood(void)
{
	static const char *const paths[] = { PLUGIN("bad_rank"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = cands_of(h, m, "neg");

	/* the first SHS_PLUGIN_MAX_CANDIDATES kept, then pruned: all one choice at one cost */
	SHS_ASSERT_INT_EQ(c.n, 1);
	SHS_ASSERT_STR_EQ(c.v[0].label, "flood");
	SHS_ASSERT_INT_EQ(w.n, 1);
	ASSERT_WARNED(&w, "(strategy bad.flood): neg (negate): more than 100000 candidates");
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void survives_builder_misuse(void)
{
	static const char *const paths[] = { PLUGIN("bad_rank"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = cands_of(h, m, "max");

	SHS_ASSERT_INT_EQ(c.n, 1);
	SHS_ASSERT_STR_EQ(c.v[0].label, "");
	ASSERT_WARNED(&w, "set_result on candidate 77, which does not exist");
	ASSERT_WARNED(&w, "candidate 'null-spec': set_result leaf 0: NULL spec");
	ASSERT_WARNED(&w, "candidate 'bad-operand': set_operand operand 5, the instruction has 2");
	ASSERT_WARNED(&w, "candidate 'bad-collective': collective 0: axes mask 0x200 but the mesh "
			  "has 2 axes");
	ASSERT_WARNED(&w, "candidate 'bad-cost': cost flops -1");
	SHS_ASSERT_INT_EQ(w.n, 5);
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static void rank_over_abi_not_served(void)
{
	static const char *const paths[] = { PLUGIN("good"), NULL };
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(
		"HloModule m\nENTRY e {\n"
		"  p = f32[1,1,1,1,1,1,1,1,1] parameter(0)\n"
		"  ROOT big = f32[1,1,1,1,1,1,1,1,1] add(p, p)\n}\n");
	shs_cands c = cands_of(h, m, "big");

	CU_ASSERT_FALSE(c.served);
	SHS_ASSERT_INT_EQ(c.n, 0);
	SHS_ASSERT_INT_EQ(w.n, 1);
	SHS_ASSERT_STR_EQ(w.msg[0], "big (add): rank 9, over the 8 dims strategies handle; "
		       "replicated");
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

static bool spec_equal(const shs_pspec *x, const shs_pspec *y)
{
	if (x->rank != y->rank || x->padded != y->padded)
		return false;
	for (uint32_t d = 0; d < x->rank; d++)
		if (x->dims[d].n != y->dims[d].n ||
		    memcmp(x->dims[d].axes, y->dims[d].axes, x->dims[d].n))
			return false;
	return true;
}

static void same_input_same_candidates(void)
{
	static const char *const paths[] = { PLUGIN("no_divide"), PLUGIN("bad_rank"),
					     PLUGIN("good"), NULL };
	warnings w1 = { 0 }, w2 = { 0 };
	shs_host *h1 = host_with(&w1, paths), *h2 = host_with(&w2, paths);
	shs_module *m = shs_test_parse(module_text);
	shs_cands a = cands_of(h1, m, "add.1"), b = cands_of(h2, m, "add.1");

	SHS_ASSERT_INT_EQ(a.n, 4);
	SHS_ASSERT_INT_EQ(a.n, b.n);
	for (uint32_t k = 0; k < a.n; k++) {
		SHS_ASSERT_STR_EQ(a.v[k].label, b.v[k].label);
		SHS_ASSERT_STR_EQ(a.v[k].strategy, b.v[k].strategy);
		for (uint32_t j = 0; j < 3; j++)
			CU_ASSERT_TRUE(spec_equal(&a.v[k].result[j], &b.v[k].result[j]));
	}
	SHS_ASSERT_STR_EQ(a.v[0].label, "split0-padded");
	SHS_ASSERT_STR_EQ(a.v[1].label, "ok");
	SHS_ASSERT_INT_EQ(w1.n, w2.n);
	for (int k = 0; k < w1.n && k < MAX_WARNINGS; k++)
		SHS_ASSERT_STR_EQ(w1.msg[k], w2.msg[k]);
	shs_cands_free(&a);
	shs_cands_free(&b);
	shs_module_free(m);
	shs_host_free(h1);
	shs_host_free(h2);
	warnings_free(&w1);
	warnings_free(&w2);
}

/* Whether two candidate lists hold the same candidates, in order. */
static bool same_cands(const shs_cands *a, const shs_cands *b)
{
	if (a->n != b->n || a->served != b->served)
		return false;
	for (uint32_t k = 0; k < a->n; k++) {
		const shs_cand *x = &a->v[k], *y = &b->v[k];
		uint32_t n_ops = x->operand_first ? x->operand_first[x->n_operands] : 0;
		if (strcmp(x->label, y->label) || x->strategy != y->strategy ||
		    x->n_result != y->n_result || x->n_operands != y->n_operands ||
		    x->flops != y->flops || x->bytes != y->bytes || x->n_colls != y->n_colls ||
		    (n_ops && memcmp(x->operands, y->operands, n_ops * sizeof(*x->operands))) ||
		    (x->n_colls && memcmp(x->colls, y->colls, x->n_colls * sizeof(*x->colls))))
			return false;
		for (uint32_t j = 0; j < x->n_result; j++)
			if (!spec_equal(&x->result[j], &y->result[j]))
				return false;
	}
	return true;
}

static uint32_t index_of(const shs_module *m, const char *name)
{
	const shs_computation *c = shs_module_entry(m);

	for (uint32_t i = 0; i < c->n_instrs; i++)
		if (!strcmp(c->instrs[i]->name, name))
			return i;
	CU_FAIL_FATAL("no such instruction");
	return 0;
}

/* Query classes: the built-in strategies are pure, so two instructions alike in all but name,
 * operands and op_name share a class and get the same candidates from the same query; another
 * opcode or shape is another class; a custom call (its strategy reads op_name) has none, nor has
 * anything under a host with an impure match function. A copied list is the list, and outlives
 * its source. */
static void query_classes(void)
{
	static const char text[] =
		"HloModule m\n"
		"ENTRY e {\n"
		"  p0 = f32[10,6] parameter(0)\n"
		"  p1 = f32[10,6] parameter(1)\n"
		"  a = f32[10,6] add(p0, p1), metadata={op_name=\"layers_0/update/add\"}\n"
		"  b = f32[10,6] add(p1, p0), metadata={op_name=\"layers_1/update/add\"}\n"
		"  s = f32[10,6] subtract(p0, p1)\n"
		"  t = f32[6,10] transpose(p0), dimensions={1,0}\n"
		"  cc = f32[10,6] custom-call(p0), custom_call_target=\"Sharding\"\n"
		"  ROOT r = (f32[10,6], f32[10,6], f32[10,6], f32[6,10], f32[10,6]) "
		"tuple(a, b, s, t, cc)\n"
		"}\n";
	static const char *const impure[] = { PLUGIN("good"), NULL };
	shs_pspec on_fsdp = { .rank = 2, .padded = true, .dims = { { .n = 1, .axes = { 0 } } } };
	const shs_pspec *hints[] = { &on_fsdp, NULL };
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w), *g = host_with(&w, impure);
	shs_module *m = shs_test_parse(text);
	const shs_computation *c = shs_module_entry(m);
	shs_host_views *v = NULL;
	shs_cands ca, cb;
	shs_err e = { 0 };
	uint64_t cls[5];
	const char *const names[5] = { "a", "b", "s", "t", "cc" };

	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(h, SHS_STRATEGY_DIR, &e) > 0);
	SHS_ASSERT_OK(shs_host_views_make(m, &v, &e), &e);
	for (int k = 0; k < 5; k++) {
		uint32_t i = index_of(m, names[k]);
		cls[k] = shs_host_query_class(h, v, m->entry, i, c->instrs[i]);
		CU_ASSERT_EQUAL(shs_host_query_class(g, v, m->entry, i, c->instrs[i]), 0);
	}
	CU_ASSERT_NOT_EQUAL(cls[0], 0);
	CU_ASSERT_EQUAL(cls[0], cls[1]);
	CU_ASSERT_NOT_EQUAL(cls[2], 0);
	CU_ASSERT_NOT_EQUAL(cls[2], cls[0]);
	CU_ASSERT_NOT_EQUAL(cls[3], 0);
	CU_ASSERT_NOT_EQUAL(cls[3], cls[0]);
	CU_ASSERT_EQUAL(cls[4], 0);
	SHS_ASSERT_OK(shs_host_candidates(h, m, c, find(m, "a"), &mesh2, hints, NULL,
					  SHS_PMODE_PROPAGATE, &ca, &e), &e);
	SHS_ASSERT_OK(shs_host_candidates(h, m, c, find(m, "b"), &mesh2, hints, NULL,
					  SHS_PMODE_PROPAGATE, &cb, &e), &e);
	CU_ASSERT_TRUE(ca.n > 0);
	CU_ASSERT_TRUE(same_cands(&ca, &cb));
	shs_cands_free(&ca);
	shs_cands_free(&cb);
	shs_host_views_free(v);
	shs_module_free(m);
	shs_host_free(h);
	shs_host_free(g);
	warnings_free(&w);
}

/* The digest of dot d's PROPAGATE query on mesh2 with operand hints lhs, rhs and result hint
 * res (each may be NULL). */
static uint64_t dot_digest_of(shs_host *h, const shs_host_views *v, const shs_module *m,
			      const shs_pspec *lhs, const shs_pspec *rhs, const shs_pspec *res)
{
	const shs_pspec *hints[] = { lhs, rhs, NULL };
	uint32_t i = index_of(m, "d");
	shs_host_query q = { .views = v, .comp = m->entry, .instr = i, .mesh = &mesh2,
			     .mode = SHS_PMODE_PROPAGATE, .hints = hints, .result_hint = res };

	return shs_host_query_digest(h, &q, shs_module_entry(m)->instrs[i]);
}

/* The dot's PROPAGATE candidates on mesh2 with operand hints lhs and rhs; fails on error. */
static void dot_cands_of(shs_host *h, const shs_module *m, const shs_pspec *lhs,
			 const shs_pspec *rhs, shs_cands *out)
{
	const shs_pspec *hints[] = { lhs, rhs, NULL };
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_host_candidates(h, m, shs_module_entry(m), find(m, "d"), &mesh2, hints,
					  NULL, SHS_PMODE_PROPAGATE, out, &e), &e);
}

/* Queries that differ only in what the dot does not read (a hint that lets no axis anywhere
 * new, a result hint on the dims the operands already split) digest alike and get the same
 * candidates; one that lets an axis go elsewhere does not; an instruction served by a
 * strategy without a digest has none. */
static void query_digests(void)
{
	static const char text[] =
		"HloModule m\n"
		"ENTRY e {\n"
		"  p0 = f32[8,16] parameter(0)\n"
		"  p1 = f32[16,12] parameter(1)\n"
		"  d = f32[8,12] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
		"  ROOT a = f32[8,12] add(d, d)\n"
		"}\n";
	const shs_pspec rows = { .rank = 2, .dims = { { .n = 1, .axes = { 0 } } } };
	const shs_pspec cols = { .rank = 2, .dims = { { 0 }, { .n = 1, .axes = { 0 } } } };
	const shs_pspec none = { .rank = 2 };
	warnings w = { 0 };
	shs_host *h = shs_host_new(record, &w);
	shs_module *m = shs_test_parse(text);
	const shs_pspec *add_hints[] = { &rows, &rows, NULL };
	uint32_t add = index_of(m, "a");
	shs_host_views *v = NULL;
	shs_host_query q = { .comp = m->entry, .instr = add, .mesh = &mesh2,
			     .mode = SHS_PMODE_PROPAGATE, .hints = add_hints };
	shs_cands a, b;
	shs_err e = { 0 };
	uint64_t base;

	CU_ASSERT_TRUE_FATAL(shs_host_load_dir(h, SHS_STRATEGY_DIR, &e) > 0);
	SHS_ASSERT_OK(shs_host_views_make(m, &v, &e), &e);
	q.views = v;
	base = dot_digest_of(h, v, m, &rows, &none, NULL);
	CU_ASSERT_NOT_EQUAL(base, 0);
	/* fsdp on the lhs rows: a replicated rhs, no rhs hint, or the result's rows alike */
	CU_ASSERT_EQUAL(dot_digest_of(h, v, m, &rows, NULL, NULL), base);
	CU_ASSERT_EQUAL(dot_digest_of(h, v, m, &rows, &none, &rows), base);
	/* fsdp on the contracting dim, or on the result's columns: other places */
	CU_ASSERT_NOT_EQUAL(dot_digest_of(h, v, m, &cols, &none, NULL), base);
	CU_ASSERT_NOT_EQUAL(dot_digest_of(h, v, m, &rows, &none, &cols), base);
	dot_cands_of(h, m, &rows, &none, &a);
	dot_cands_of(h, m, &rows, NULL, &b);
	CU_ASSERT_TRUE(a.n > 1);
	CU_ASSERT_TRUE(same_cands(&a, &b));
	shs_cands_free(&b);
	dot_cands_of(h, m, &cols, &none, &b);
	CU_ASSERT_FALSE(same_cands(&a, &b));
	shs_cands_free(&a);
	shs_cands_free(&b);
	/* the add's elementwise strategy has no digest */
	CU_ASSERT_EQUAL(shs_host_query_digest(h, &q, shs_module_entry(m)->instrs[add]), 0);
	CU_ASSERT_FALSE(shs_host_query_digestible(h, v, m->entry, add,
						  shs_module_entry(m)->instrs[add]));
	CU_ASSERT_TRUE(shs_host_query_digestible(h, v, m->entry, index_of(m, "d"), find(m, "d")));
	shs_host_views_free(v);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

/* add_candidate makes what candidate, set_result, set_operand and set_cost make; a whole
 * candidate without a result is dropped with a warning; a strategy's candidates of one choice
 * are pruned to those no other is cheaper than in both FLOPs and bytes. */
static void whole_candidates(void)
{
	static const char *const paths[] = { PLUGIN("whole"), NULL };
	static const char text[] = "HloModule m\n"
				   "ENTRY e {\n"
				   "  p0 = f32[8,6] parameter(0)\n"
				   "  ROOT m = f32[8,6] multiply(p0, p0)\n"
				   "}\n";
	warnings w = { 0 };
	shs_host *h = host_with(&w, paths);
	shs_module *m = shs_test_parse(text);
	shs_cands c = cands_of(h, m, "m");

	SHS_ASSERT_INT_EQ(c.n, 6);
	for (uint32_t k = 0; k < 2; k++) {
		const shs_cand *a = &c.v[k], *b = &c.v[k + 2];
		SHS_ASSERT_STR_EQ(a->label, "whole");
		SHS_ASSERT_STR_EQ(b->label, "pieces");
		CU_ASSERT_TRUE(shs_spec_equal(&a->result[0], &b->result[0]));
		for (uint32_t j = 0; j < 2; j++)
			CU_ASSERT_TRUE(shs_spec_equal(&a->operands[j], &b->operands[j]));
		CU_ASSERT_EQUAL(a->flops, b->flops);
		CU_ASSERT_EQUAL(a->bytes, b->bytes);
		SHS_ASSERT_INT_EQ(a->n_colls, 1);
		SHS_ASSERT_INT_EQ(b->n_colls, 1);
	}
	SHS_ASSERT_STR_EQ(c.v[4].label, "cheap");
	CU_ASSERT_EQUAL(c.v[4].flops, 4);
	SHS_ASSERT_STR_EQ(c.v[5].label, "lean");
	SHS_ASSERT_INT_EQ(c.v[1].result[0].dims[0].n, 1);
	SHS_ASSERT_INT_EQ(w.n, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(w.msg[0], "candidate 'no result': add_candidate: NULL result"));
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

/* The project's source folder, from this file's path as CMake compiled it. */
static bool source_dir(char *out, size_t n)
{
	static const char tail[] = "/tests/test_host.c", file[] = __FILE__;
	size_t len = strlen(file), k = sizeof(tail) - 1;

	if (file[0] != '/' || len <= k || strcmp(file + len - k, tail) || len - k >= n)
		return false;
	memcpy(out, file, len - k);
	out[len - k] = '\0';
	return true;
}

static void loads_external_plugin(void)
{
	char src[4096], so[4096], cmd[CMD_MAX];
	warnings w = { 0 };
	shs_host *h;
	shs_module *m;
	shs_cands c;
	shs_err e = { 0 };

	CU_ASSERT_TRUE_FATAL(source_dir(src, sizeof(src)));
	snprintf(so, sizeof(so), "%s", shs_test_tmp_path("ext.so"));
	remove(so);
	CU_ASSERT_TRUE_FATAL((size_t)snprintf(cmd, sizeof(cmd),
					      "cc -shared -fPIC -std=c11 -Wall -Werror "
					      "-I%.1024s/plugin/include -o %.1024s "
					      "%.1024s/tests/plugins/external/ext.c",
					      src, so, src) < sizeof(cmd));
	SHS_ASSERT_INT_EQ(system(cmd), 0);
	h = shs_host_new(record, &w);
	SHS_ASSERT_OK(shs_host_load(h, so, &e), &e);
	m = shs_test_parse(module_text);
	c = cands_of(h, m, "mul");
	SHS_ASSERT_INT_EQ(c.n, 1);
	SHS_ASSERT_STR_EQ(c.v[0].label, "ext-replicated");
	SHS_ASSERT_STR_EQ(c.v[0].strategy, "ext.mul");
	SHS_ASSERT_STR_EQ(c.v[0].plugin, so);
	CU_ASSERT_DOUBLE_EQUAL(c.v[0].bytes, 60.0 * 3 * 4, 1e-9);
	SHS_ASSERT_INT_EQ(w.n, 0);
	shs_cands_free(&c);
	shs_module_free(m);
	shs_host_free(h);
	warnings_free(&w);
}

/* ---- Views ---- */

static const char view_text[] =
	"HloModule v\n"
	"ENTRY e {\n"
	"  a = bf16[4,8,16] parameter(0)\n"
	"  b = bf16[4,16,32] parameter(1), metadata={op_name=\"jit/w\"}\n"
	"  d = bf16[4,8,32] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
	"rhs_batch_dims={0}, rhs_contracting_dims={1}, metadata={op_name=\"jit/layer/dot\"}\n"
	"  t = s32[5] parameter(2)\n"
	"  idx = s32[5,1] parameter(3)\n"
	"  tab = f32[7,3] parameter(4)\n"
	"  g = f32[5,3] gather(tab, idx), offset_dims={1}, collapsed_slice_dims={0}, "
	"start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n"
	"  sl = bf16[2,4,16] slice(a), slice={[0:4:2], [4:8], [0:16]}\n"
	"  cc = f32[7,3] custom-call(tab), custom_call_target=\"MyOp\", backend_config=\"cfg\"\n"
	"  in = (s32[5], f32[7,3]) tuple(t, tab)\n"
	"  tu = (bf16[4,8,32], (s32[5], f32[7,3]), s32[5]) tuple(d, in, t)\n"
	"  ROOT gte = s32[5] get-tuple-element(tu), index=2\n"
	"}\n";

static void view_of(shs_arena *a, const shs_module *m, const char *name, shs_host_iview *v)
{
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs__host_view(a, shs_module_entry(m), find(m, name), v, &e), &e);
}

static void views_dot_attributes(void)
{
	shs_module *m = shs_test_parse(view_text);
	shs_arena *a = shs_arena_new(0);
	shs_host_iview v;

	view_of(a, m, "d", &v);
	SHS_ASSERT_INT_EQ(v.instr.struct_size, sizeof(shs_pinstr));
	SHS_ASSERT_STR_EQ(v.instr.name, "d");
	SHS_ASSERT_STR_EQ(v.instr.opcode, "dot");
	SHS_ASSERT_STR_EQ(v.instr.op_name, "jit/layer/dot");
	SHS_ASSERT_STR_EQ(v.instr.custom_call_target, "");
	SHS_ASSERT_INT_EQ(v.instr.shape.type, 16);
	SHS_ASSERT_INT_EQ(v.instr.shape.rank, 3);
	SHS_ASSERT_INT_EQ(v.instr.shape.dims[2], 32);
	SHS_ASSERT_INT_EQ(v.instr.n_operands, 2);
	SHS_ASSERT_INT_EQ(v.instr.operands[1].dims[1], 16);
	SHS_ASSERT_INT_EQ(v.instr.lhs_batch.n, 1);
	SHS_ASSERT_INT_EQ(v.instr.lhs_batch.v[0], 0);
	SHS_ASSERT_INT_EQ(v.instr.rhs_batch.v[0], 0);
	SHS_ASSERT_INT_EQ(v.instr.lhs_contracting.v[0], 2);
	SHS_ASSERT_INT_EQ(v.instr.rhs_contracting.v[0], 1);
	SHS_ASSERT_INT_EQ(v.instr.offset_dims.n, 0);
	SHS_ASSERT_INT_EQ(v.instr.slice_starts.n, 0);
	SHS_ASSERT_INT_EQ(v.n_result, 1);
	SHS_ASSERT_INT_EQ(v.n_leaves, 3);
	SHS_ASSERT_INT_EQ(v.operand_first[1], 2);
	CU_ASSERT_PTR_EQUAL(v.leaf[2], &v.instr.operands[1]);
	SHS_ASSERT_INT_EQ(v.max_rank, 3);
	shs_arena_free(a);
	shs_module_free(m);
}

static void views_gather_slice_custom_call(void)
{
	shs_module *m = shs_test_parse(view_text);
	shs_arena *a = shs_arena_new(0);
	shs_host_iview v;

	view_of(a, m, "g", &v);
	SHS_ASSERT_INT_EQ(v.instr.offset_dims.v[0], 1);
	SHS_ASSERT_INT_EQ(v.instr.collapsed_slice_dims.v[0], 0);
	SHS_ASSERT_INT_EQ(v.instr.start_index_map.v[0], 0);
	SHS_ASSERT_INT_EQ(v.instr.slice_sizes.n, 2);
	SHS_ASSERT_INT_EQ(v.instr.slice_sizes.v[1], 3);
	SHS_ASSERT_INT_EQ(v.instr.index_vector_dim, 1);
	view_of(a, m, "sl", &v);
	SHS_ASSERT_INT_EQ(v.instr.slice_starts.n, 3);
	SHS_ASSERT_INT_EQ(v.instr.slice_starts.v[1], 4);
	SHS_ASSERT_INT_EQ(v.instr.slice_limits.v[0], 4);
	SHS_ASSERT_INT_EQ(v.instr.slice_strides.v[0], 2);
	SHS_ASSERT_INT_EQ(v.instr.slice_strides.v[1], 1);
	view_of(a, m, "cc", &v);
	SHS_ASSERT_STR_EQ(v.instr.opcode, "custom-call");
	SHS_ASSERT_STR_EQ(v.instr.custom_call_target, "MyOp");
	SHS_ASSERT_STR_EQ(v.instr.backend_config, "cfg");
	SHS_ASSERT_STR_EQ(v.instr.op_name, "");
	view_of(a, m, "gte", &v);
	SHS_ASSERT_INT_EQ(v.instr.tuple_index, 2);
	view_of(a, m, "b", &v);
	SHS_ASSERT_INT_EQ(v.instr.parameter_number, 1);
	shs_arena_free(a);
	shs_module_free(m);
}

static void views_tuple_leaves(void)
{
	shs_module *m = shs_test_parse(view_text);
	shs_arena *a = shs_arena_new(0);
	shs_host_iview v;

	view_of(a, m, "tu", &v);
	SHS_ASSERT_INT_EQ(v.instr.shape.type, SHS_TUPLE);
	SHS_ASSERT_INT_EQ(v.instr.shape.n_tuple, 3);
	SHS_ASSERT_INT_EQ(shs__pshape_leaves(&v.instr.shape), 4);
	SHS_ASSERT_INT_EQ(shs_shape_leaves(&find(m, "tu")->shape), 4);
	SHS_ASSERT_INT_EQ(shs_shape_leaves(&find(m, "d")->shape), 1);
	SHS_ASSERT_INT_EQ(shs__pshape_leaves(NULL), 0);
	SHS_ASSERT_INT_EQ(v.n_result, 4);
	SHS_ASSERT_INT_EQ(v.n_leaves, 4 + 1 + 2 + 1);
	SHS_ASSERT_INT_EQ(v.operand_first[0], 4);
	SHS_ASSERT_INT_EQ(v.operand_first[1], 5);
	SHS_ASSERT_INT_EQ(v.operand_first[2], 7);
	SHS_ASSERT_INT_EQ(v.leaf[2]->type, 11); /* depth first: bf16, s32, f32, s32 */
	SHS_ASSERT_INT_EQ(v.leaf[2]->dims[0], 7);
	SHS_ASSERT_INT_EQ(v.leaf[3]->type, 4);
	shs_arena_free(a);
	shs_module_free(m);
}

static void views_mesh(void)
{
	shs_mesh_view mv;

	shs_host_mesh_view(&mesh2, &mv);
	SHS_ASSERT_INT_EQ(mv.view.struct_size, sizeof(shs_pmesh));
	SHS_ASSERT_INT_EQ(mv.view.n_axes, 2);
	SHS_ASSERT_STR_EQ(mv.view.names[1], "tensor");
	SHS_ASSERT_INT_EQ(mv.view.sizes[0], 4);
}

static void result_hint_from_annotation(void)
{
	shs_module *m = shs_test_parse(
		"HloModule h\nENTRY e {\n"
		"  p = f32[8,6] parameter(0), sharding={devices=[2,1,4]<=[4,2]T(1,0) "
		"last_tile_dim_replicate}\n"
		"  q = f32[6,6] parameter(1), sharding={devices=[4,1,2]<=[8] "
		"last_tile_dim_replicate}\n"
		"  r = f32[8,6] parameter(2), sharding={replicated}\n"
		"  ROOT s = f32[8,6] parameter(3)\n}\n");
	shs_arena *a = shs_arena_new(0);
	const shs_pspec *hint;
	shs_host_iview v;

	view_of(a, m, "p", &v);
	hint = shs__host_annotation_hint(a, find(m, "p"), &v, &mesh2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hint);
	SHS_ASSERT_INT_EQ(hint[0].rank, 2);
	SHS_ASSERT_INT_EQ(hint[0].dims[0].n, 1);
	SHS_ASSERT_INT_EQ(hint[0].dims[0].axes[0], 1); /* tensor */
	SHS_ASSERT_INT_EQ(hint[0].dims[1].n, 0);
	CU_ASSERT_FALSE(hint[0].padded);
	view_of(a, m, "q", &v);
	hint = shs__host_annotation_hint(a, find(m, "q"), &v, &mesh2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hint);
	SHS_ASSERT_INT_EQ(hint[0].dims[0].axes[0], 0); /* fsdp, 6 % 4: padded */
	CU_ASSERT_TRUE(hint[0].padded);
	view_of(a, m, "r", &v);
	hint = shs__host_annotation_hint(a, find(m, "r"), &v, &mesh2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hint);
	SHS_ASSERT_INT_EQ(hint[0].dims[0].n + hint[0].dims[1].n, 0);
	view_of(a, m, "s", &v);
	CU_ASSERT_PTR_NULL(shs__host_annotation_hint(a, find(m, "s"), &v, &mesh2));
	shs_arena_free(a);
	shs_module_free(m);
}

static void bad_arguments(void)
{
	shs_host *h = shs_host_new(NULL, NULL);
	shs_module *m = shs_test_parse(module_text);
	shs_cands c = { .n = 7 };
	shs_err e = { 0 };

	SHS_ASSERT_INT_EQ(shs_host_candidates(h, m, shs_module_entry(m), find(m, "add.1"), &mesh2,
					      NULL, NULL, 5, &c, &e), SHS_EINVAL);
	SHS_ASSERT_INT_EQ(c.n, 0);
	SHS_ASSERT_INT_EQ(shs_host_candidates(h, m, shs_module_entry(m), NULL, &mesh2, NULL,
					      NULL, SHS_PMODE_ENUMERATE, &c, &e), SHS_EINVAL);
	SHS_ASSERT_INT_EQ(shs_host_load(h, NULL, &e), SHS_EINVAL);
	SHS_ASSERT_INT_EQ(shs_host_load_dir(NULL, SHS_TEST_PLUGIN_DIR, &e), SHS_EINVAL);
	shs_cands_free(&c);
	shs_cands_free(NULL);
	shs_module_free(m);
	shs_host_free(h);
}

CU_TestInfo host_tests[] = {
	{ "new, free, free(NULL)", new_and_free },
	{ "refuses a plugin without shs_plugin_init", refuses_no_entry },
	{ "refuses another ABI before running init", refuses_wrong_abi_before_init },
	{ "a failed init leaves no registrations", refuses_failed_init_and_rolls_back },
	{ "refuses a missing file and a second load", refuses_missing_file_and_double_load },
	{ "the good plugin serves add after refusals", good_still_serves_after_refusals },
	{ "load_dir loads in name order, reports refusals", load_dir_in_name_order },
	{ "load_dir skips files that do not load", load_dir_skips_unloadable_files },
	{ "load_dir on a missing folder is SHS_EIO", load_dir_missing_folder },
	{ "the built-in strategies folder loads, every plugin of it", builtin_strategies_load },
	{ "refuses other limits or struct sizes before init", refuses_other_sizes_before_init },
	{ "destroy releases strategies' user data, also after a failed init", destroys_user_data },
	{ "finds the built-in folder in build and install trees", finds_builtin_dir },
	{ "honours SHARDSEARCH_PLUGIN_PATH and extra dirs", honours_plugin_path },
	{ "plugins unload when the host is freed", unloads_on_free },
	{ "drops a candidate of the wrong rank", drops_wrong_rank },
	{ "drops an axis used twice, an unknown axis", drops_axis_twice_and_unknown_axis },
	{ "drops a size that does not divide unless padded", drops_size_that_does_not_divide },
	{ "custom-call targets and match functions", custom_call_targets_and_match },
	{ "hints and the result hint reach the plugin", hints_reach_the_plugin },
	{ "an unserved instruction warns once", unserved_warns_once },
	{ "a failed generator's candidates are dropped", failed_generator_dropped },
	{ "caps a flood of candidates", caps_candidate_flood },
	{ "survives NULLs and bad indices from a plugin", survives_builder_misuse },
	{ "rank over SHS_PLUGIN_MAX_RANK is not served", rank_over_abi_not_served },
	{ "same input, same candidates", same_input_same_candidates },
	{ "query classes: alike but for names, the same candidates", query_classes },
	{ "query digests: alike where the strategies read, the same candidates", query_digests },
	{ "add_candidate makes what the piecewise calls make", whole_candidates },
	{ "loads a plugin built from the header alone", loads_external_plugin },
	{ "views a dot's attributes", views_dot_attributes },
	{ "views gather, slice, custom-call, gte, parameter", views_gather_slice_custom_call },
	{ "views tuple leaves depth first", views_tuple_leaves },
	{ "views the mesh", views_mesh },
	{ "result hints from sharding annotations", result_hint_from_annotation },
	{ "bad arguments", bad_arguments },
	CU_TEST_INFO_NULL,
};
