/* Tests: model presets, --set keys, JSON config files and the whole-model config checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "gen.h"
#include "test_util.h"

enum { PATH_MAX_LEN = 4096, LONG_NAME_LEN = 80, N_PRESETS_PUBLISHED = 8 };

/* Asserts that haystack contains needle, printing both otherwise. */
#define ASSERT_HAS(haystack, needle)                                                       \
	do {                                                                               \
		const char *h_ = (haystack), *n_ = (needle);                                     \
		if (!strstr(h_, n_))                                                             \
			fprintf(stderr, "\n  %s:%d: \"%s\" does not contain \"%s\"\n", __FILE__, \
				__LINE__, h_, n_);                                               \
		CU_ASSERT_PTR_NOT_NULL_FATAL(strstr(h_, n_));                                    \
	} while (0)


/* Writes text to a fresh temp file genconfig-NAME; its path goes into path. */
static void write_tmp(const char *name, const char *text, char path[PATH_MAX_LEN])
{
	char file[PATH_MAX_LEN];
	FILE *f;

	snprintf(file, sizeof(file), "genconfig-%s", name);
	snprintf(path, PATH_MAX_LEN, "%s", shs_test_tmp_path(file));
	f = fopen(path, "wb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL_FATAL(fwrite(text, 1, strlen(text), f), strlen(text));
	CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
}

/* shs_gen_config_set must fail with SHS_EINVAL, leave c as it was and say want. */
static void set_fails(const char *key, const char *value, const char *want)
{
	shs_gen_config c = shs_test_preset("llama3-8b"), before = c;
	shs_err e = { 0 };

	SHS_ASSERT_INT_EQ(shs_gen_config_set(&c, key, value, &e), SHS_EINVAL);
	ASSERT_HAS(e.msg, want);
	CU_ASSERT_EQUAL_FATAL(memcmp(&c, &before, sizeof(c)), 0);
}

/* Loading text as a config file on top of llama3-8b must fail with code and say want (and name
 * the file); the config must stay as it was. */
static void json_fails(const char *name, const char *text, int code, const char *want)
{
	char path[PATH_MAX_LEN];
	shs_gen_config c = shs_test_preset("llama3-8b"), before = c;
	shs_err e = { 0 };

	write_tmp(name, text, path);
	SHS_ASSERT_INT_EQ(shs_gen_config_load_json(path, &c, &e), code);
	ASSERT_HAS(e.msg, path);
	ASSERT_HAS(e.msg, want);
	CU_ASSERT_EQUAL_FATAL(memcmp(&c, &before, sizeof(c)), 0);
}

/* shs_gen_config_check must reject c with a message containing want. */
static void check_fails(const shs_gen_config *c, const char *want)
{
	shs_err e = { 0 };

	SHS_ASSERT_INT_EQ(shs_gen_config_check(c, &e), SHS_EINVAL);
	ASSERT_HAS(e.msg, want);
}

static void every_preset_loads_and_checks(void)
{
	const char *const *names = shs_gen_preset_names();
	size_t n = 0;

	for (; names[n]; n++) {
		shs_gen_config c = shs_test_preset(names[n]);
		shs_err e = { 0 };

		SHS_ASSERT_STR_EQ(c.name, names[n]);
		SHS_ASSERT_OK(shs_gen_config_check(&c, &e), &e);
		CU_ASSERT_FALSE(c.scan);
	}
	SHS_ASSERT_INT_EQ(n, N_PRESETS_PUBLISHED);
}

static void llama2_13b_is_the_books_problem(void)
{
	shs_gen_config c = shs_test_preset("llama2-13b");

	SHS_ASSERT_INT_EQ(c.kind, SHS_GEN_TRANSFORMER);
	SHS_ASSERT_INT_EQ(c.layers, 40);
	SHS_ASSERT_INT_EQ(c.d_model, 5120);
	SHS_ASSERT_INT_EQ(c.d_ff, 13824);
	SHS_ASSERT_INT_EQ(c.heads, 40);
	SHS_ASSERT_INT_EQ(c.kv_heads, 40);
	SHS_ASSERT_INT_EQ(c.head_dim, 128);
	SHS_ASSERT_INT_EQ(c.vocab, 32000);
	SHS_ASSERT_INT_EQ(c.seq, 32768);
	SHS_ASSERT_INT_EQ(c.batch * c.seq, 3145728); /* 3M tokens per step */
	CU_ASSERT_TRUE(c.gated_mlp);
	CU_ASSERT_FALSE(c.tied_embedding);
	SHS_ASSERT_INT_EQ(c.experts, 0);
}

static void llama3_presets_have_published_dims(void)
{
	shs_gen_config s = shs_test_preset("llama3-8b"), m = shs_test_preset("llama3-70b");
	shs_gen_config l = shs_test_preset("llama3-405b");

	SHS_ASSERT_INT_EQ(s.layers, 32);
	SHS_ASSERT_INT_EQ(s.d_ff, 14336);
	SHS_ASSERT_INT_EQ(s.kv_heads, 8);
	SHS_ASSERT_INT_EQ(s.vocab, 128256);
	SHS_ASSERT_INT_EQ(m.layers, 80);
	SHS_ASSERT_INT_EQ(m.d_model, 8192);
	SHS_ASSERT_INT_EQ(m.d_ff, 28672);
	SHS_ASSERT_INT_EQ(m.heads, 64);
	SHS_ASSERT_INT_EQ(m.batch * m.seq, 4194304); /* the book's 4M-token batch */
	SHS_ASSERT_INT_EQ(l.layers, 126);
	SHS_ASSERT_INT_EQ(l.d_model, 16384);
	SHS_ASSERT_INT_EQ(l.d_ff, 53248);
	SHS_ASSERT_INT_EQ(l.heads, 128);
	SHS_ASSERT_INT_EQ(l.kv_heads, 8);
	SHS_ASSERT_INT_EQ(l.head_dim, 128);
	SHS_ASSERT_INT_EQ(l.seq, 4096);
	SHS_ASSERT_INT_EQ(l.batch, 1024);
}

static void gpt3_is_plain_tied_and_short(void)
{
	shs_gen_config c = shs_test_preset("gpt3-175b");

	SHS_ASSERT_INT_EQ(c.layers, 96);
	SHS_ASSERT_INT_EQ(c.d_model, 12288);
	SHS_ASSERT_INT_EQ(c.d_ff, 49152);
	SHS_ASSERT_INT_EQ(c.heads, 96);
	SHS_ASSERT_INT_EQ(c.kv_heads, 96);
	SHS_ASSERT_INT_EQ(c.vocab, 50257);
	SHS_ASSERT_INT_EQ(c.seq, 2048);
	SHS_ASSERT_INT_EQ(c.batch, 1536);
	CU_ASSERT_FALSE(c.gated_mlp);
	CU_ASSERT_TRUE(c.tied_embedding);
}

static void mixtral_has_eight_experts_top_two(void)
{
	shs_gen_config c = shs_test_preset("mixtral-8x7b");

	SHS_ASSERT_INT_EQ(c.experts, 8);
	SHS_ASSERT_INT_EQ(c.top_k, 2);
	CU_ASSERT_DOUBLE_EQUAL(c.capacity_factor, 1.25, 0);
	SHS_ASSERT_INT_EQ(c.d_ff, 14336);
	SHS_ASSERT_INT_EQ(c.kv_heads, 8);
	SHS_ASSERT_INT_EQ(c.vocab, 32000);
}

static void mlp_only_is_the_books_model(void)
{
	shs_gen_config c = shs_test_preset("mlp-only");

	SHS_ASSERT_INT_EQ(c.kind, SHS_GEN_MLP_ONLY);
	SHS_ASSERT_INT_EQ(c.dtype, SHS_GEN_BF16);
	SHS_ASSERT_INT_EQ(c.layers, 64);
	SHS_ASSERT_INT_EQ(c.d_model, 8192);
	SHS_ASSERT_INT_EQ(c.d_ff, 32768);
	SHS_ASSERT_INT_EQ(c.batch, 48000);
	SHS_ASSERT_INT_EQ(c.seq, 1);
	SHS_ASSERT_INT_EQ(c.vocab, 0);
	SHS_ASSERT_INT_EQ(c.heads, 0);
	CU_ASSERT_FALSE(c.gated_mlp);
}

static void transformer_presets_share_defaults(void)
{
	shs_gen_config c = shs_test_preset("llama3-70b");

	SHS_ASSERT_INT_EQ(c.dtype, SHS_GEN_F32_MASTER);
	SHS_ASSERT_INT_EQ(c.top_k, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.capacity_factor, 1.25, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.norm_eps, 1e-6, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.learning_rate, 1e-4, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.adam_b1, 0.9, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.adam_b2, 0.95, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.adam_eps, 1e-8, 0);
}

static void unknown_preset_lists_the_presets(void)
{
	shs_gen_config c = shs_test_preset("llama3-8b"), before = c;
	const char *const *names = shs_gen_preset_names();
	shs_err e = { 0 };

	SHS_ASSERT_INT_EQ(shs_gen_preset("llama4", &c, &e), SHS_EINVAL);
	ASSERT_HAS(e.msg, "'llama4'");
	for (size_t i = 0; names[i]; i++)
		ASSERT_HAS(e.msg, names[i]);
	CU_ASSERT_EQUAL(memcmp(&c, &before, sizeof(c)), 0);
	SHS_ASSERT_INT_EQ(shs_gen_preset(NULL, &c, &e), SHS_EINVAL);
}

static void set_writes_each_key_kind(void)
{
	shs_gen_config c = shs_test_preset("llama3-8b");
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_gen_config_set(&c, "d_model", "8192", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "batch", "0025600", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "experts", "0", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "learning_rate", "3e-4", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "capacity_factor", "2", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "adam_b2", ".999", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "scan", "true", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "gated_mlp", "0", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "tied_embedding", "1", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "dtype", "bf16", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "name", "my_model-v1.2", &e), &e);
	SHS_ASSERT_INT_EQ(c.d_model, 8192);
	SHS_ASSERT_INT_EQ(c.batch, 25600);
	CU_ASSERT_DOUBLE_EQUAL(c.learning_rate, 3e-4, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.capacity_factor, 2.0, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.adam_b2, 0.999, 0);
	CU_ASSERT_TRUE(c.scan);
	CU_ASSERT_FALSE(c.gated_mlp);
	CU_ASSERT_TRUE(c.tied_embedding);
	SHS_ASSERT_INT_EQ(c.dtype, SHS_GEN_BF16);
	SHS_ASSERT_STR_EQ(c.name, "my_model-v1.2");
	SHS_ASSERT_OK(shs_gen_config_set(&c, "dtype", "f32-master", &e), &e);
	SHS_ASSERT_INT_EQ(c.dtype, SHS_GEN_F32_MASTER);
	/* the other fields stayed as the preset set them */
	SHS_ASSERT_INT_EQ(c.layers, 32);
	SHS_ASSERT_INT_EQ(c.kv_heads, 8);
}

static void set_rejects_unknown_keys_listing_them(void)
{
	set_fails("d_modle", "1", "unknown key 'd_modle'");
	set_fails("kind", "1", "unknown key 'kind'");
	set_fails("D_MODEL", "1", "keys: vocab, d_model, d_ff, layers");
	set_fails("x", "1",
		  "adam_eps, weight_decay, grad_clip, dropout, scan, gated_mlp, tied_embedding, dtype, "
		  "attention, attention_kernel, name");
	set_fails(NULL, "1", "unknown key");
	set_fails("layers", NULL, "layers: no value");
}

static void set_rejects_malformed_integers(void)
{
	set_fails("d_model", "abc", "d_model: 'abc' is not an integer");
	set_fails("d_model", "", "d_model: '' is not an integer");
	set_fails("d_model", " 5", "is not an integer");
	set_fails("d_model", "5 ", "is not an integer");
	set_fails("d_model", "+5", "is not an integer");
	set_fails("d_model", "--5", "is not an integer");
	set_fails("d_model", "5x", "is not an integer");
	set_fails("d_model", "1e3", "is not an integer");
	set_fails("d_model", "1_000", "is not an integer");
	set_fails("d_model", "0x10", "is not an integer");
	set_fails("d_model", "8192.0", "is not an integer");
	set_fails("batch", "99999999999999999999", "batch: '99999999999999999999' is out of range");
}

static void set_rejects_out_of_range_integers(void)
{
	set_fails("layers", "0", "layers: must be >= 1 (got 0)");
	set_fails("seq", "-4096", "seq: must be >= 1 (got -4096)");
	set_fails("vocab", "-1", "vocab: must be >= 0 (got -1)");
	set_fails("experts", "-2", "experts: must be >= 0 (got -2)");
	set_fails("top_k", "-9223372036854775808", "top_k: must be >= 0");
}

static void set_rejects_bad_reals_bools_and_dtypes(void)
{
	set_fails("learning_rate", "nan", "learning_rate: 'nan' is not a number");
	set_fails("learning_rate", "inf", "is not a number");
	set_fails("learning_rate", "0x1p-3", "is not a number");
	set_fails("learning_rate", "", "is not a number");
	set_fails("learning_rate", " 1", "is not a number");
	set_fails("learning_rate", "1e-4x", "is not a number");
	set_fails("learning_rate", "1e400", "learning_rate: '1e400' is out of range");
	set_fails("adam_b1", "-0.9", "adam_b1: must be >= 0 (got -0.9)");
	set_fails("scan", "yes", "scan: 'yes' is not a boolean");
	set_fails("scan", "TRUE", "is not a boolean");
	set_fails("scan", "", "is not a boolean");
	set_fails("dtype", "fp32", "dtype: 'fp32' is not a dtype (bf16 or f32-master)");
	set_fails("dtype", "BF16", "is not a dtype");
}

static void set_accepts_only_safe_names(void)
{
	char longest[SHS_GEN_NAME_MAX], too_long[LONG_NAME_LEN];
	shs_gen_config c = shs_test_preset("llama3-8b");
	shs_err e = { 0 };

	memset(longest, 'a', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	SHS_ASSERT_OK(shs_gen_config_set(&c, "name", longest, &e), &e);
	SHS_ASSERT_STR_EQ(c.name, longest);
	memset(too_long, 'b', sizeof(too_long) - 1);
	too_long[sizeof(too_long) - 1] = '\0';
	set_fails("name", too_long, "is longer than 63 characters");
	set_fails("name", "", "name: must not be empty");
	set_fails("name", "my model", "name: 'my model' has character ' ' outside [A-Za-z0-9._-]");
	set_fails("name", "a/b", "character '/'");
	set_fails("name", "a\"b", "character '\"'");
	set_fails("name", "a\nb", "byte 0x0a");
}

static void json_applies_preset_then_members(void)
{
	char path[PATH_MAX_LEN];
	shs_gen_config c = shs_test_preset("mlp-only");
	shs_err e = { 0 };

	write_tmp("good.json",
		  "{\n  \"layers\": 4,\n  \"preset\": \"llama3-70b\",\n  \"d_ff\": 1024.0,\n"
		  "  \"learning_rate\": 0.0003,\n  \"adam_b1\": 1,\n  \"scan\": true,\n"
		  "  \"gated_mlp\": false,\n  \"dtype\": \"bf16\",\n  \"name\": \"tiny70\",\n"
		  "  \"capacity_factor\": 2.5e0\n}\n",
		  path);
	SHS_ASSERT_OK(shs_gen_config_load_json(path, &c, &e), &e);
	SHS_ASSERT_INT_EQ(c.kind, SHS_GEN_TRANSFORMER); /* from the preset, before "layers" */
	SHS_ASSERT_INT_EQ(c.layers, 4);
	SHS_ASSERT_INT_EQ(c.d_ff, 1024);
	SHS_ASSERT_INT_EQ(c.d_model, 8192);
	CU_ASSERT_DOUBLE_EQUAL(c.learning_rate, 0.0003, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.adam_b1, 1.0, 0);
	CU_ASSERT_DOUBLE_EQUAL(c.capacity_factor, 2.5, 0);
	CU_ASSERT_TRUE(c.scan);
	CU_ASSERT_FALSE(c.gated_mlp);
	SHS_ASSERT_INT_EQ(c.dtype, SHS_GEN_BF16);
	SHS_ASSERT_STR_EQ(c.name, "tiny70");
}

static void json_without_preset_starts_from_the_given_config(void)
{
	char path[PATH_MAX_LEN];
	shs_gen_config c = shs_test_preset("mlp-only");
	shs_err e = { 0 };

	write_tmp("nopreset.json", "{\"batch\": 25600, \"d_model\": 1024}", path);
	SHS_ASSERT_OK(shs_gen_config_load_json(path, &c, &e), &e);
	SHS_ASSERT_INT_EQ(c.kind, SHS_GEN_MLP_ONLY);
	SHS_ASSERT_INT_EQ(c.batch, 25600);
	SHS_ASSERT_INT_EQ(c.d_model, 1024);
	SHS_ASSERT_INT_EQ(c.d_ff, 32768);
	SHS_ASSERT_STR_EQ(c.name, "mlp-only");
	write_tmp("empty.json", "{}", path);
	SHS_ASSERT_OK(shs_gen_config_load_json(path, &c, &e), &e);
	SHS_ASSERT_INT_EQ(c.batch, 25600);
}

static void json_missing_file_is_an_io_error(void)
{
	char path[PATH_MAX_LEN];
	shs_gen_config c = shs_test_preset("llama3-8b"), before = c;
	shs_err e = { 0 };

	snprintf(path, sizeof(path), "%s", shs_test_tmp_path("no-such-config.json"));
	remove(path);
	SHS_ASSERT_INT_EQ(shs_gen_config_load_json(path, &c, &e), SHS_EIO);
	ASSERT_HAS(e.msg, path);
	ASSERT_HAS(e.msg, "No such file");
	CU_ASSERT_EQUAL(memcmp(&c, &before, sizeof(c)), 0);
	/* a folder opens but does not read */
	snprintf(path, sizeof(path), "%s", shs_test_tmp_path(""));
	SHS_ASSERT_INT_EQ(shs_gen_config_load_json(path, &c, &e), SHS_EIO);
	ASSERT_HAS(e.msg, "cannot read");
	CU_ASSERT_EQUAL(memcmp(&c, &before, sizeof(c)), 0);
}

static void json_syntax_errors_give_line_and_column(void)
{
	json_fails("syntax.json", "{\n  \"layers\": 4,\n  \"seq\": 12 34\n}\n", SHS_EPARSE, ":3:");
	json_fails("trailing.json", "{\"layers\": 4}\n{}", SHS_EPARSE, ":2:");
	json_fails("emptyfile.json", "", SHS_EPARSE, ":");
	json_fails("dup.json", "{\"layers\": 4,\n \"layers\": 5}", SHS_EPARSE, "duplicate");
}

/* attention and attention_kernel: flash and pallas by default, set by word from --set and
 * JSON, other words refused with the choices listed, written back by shs_gen_config_json. */
static void attention_keys(void)
{
	char path[PATH_MAX_LEN];
	shs_gen_config c = shs_test_preset("llama3-8b");
	shs_err e = { 0 };
	json_t *j;

	SHS_ASSERT_INT_EQ(c.attention, SHS_GEN_ATTN_FLASH);
	SHS_ASSERT_INT_EQ(c.attention_kernel, SHS_GEN_KERNEL_PALLAS);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "attention", "dot", &e), &e);
	SHS_ASSERT_OK(shs_gen_config_set(&c, "attention_kernel", "cudnn", &e), &e);
	SHS_ASSERT_INT_EQ(c.attention, SHS_GEN_ATTN_DOT);
	SHS_ASSERT_INT_EQ(c.attention_kernel, SHS_GEN_KERNEL_CUDNN);
	j = shs_gen_config_json(&c);
	CU_ASSERT_PTR_NOT_NULL_FATAL(j);
	SHS_ASSERT_STR_EQ(json_string_value(json_object_get(j, "attention")), "dot");
	SHS_ASSERT_STR_EQ(json_string_value(json_object_get(j, "attention_kernel")), "cudnn");
	json_decref(j);
	set_fails("attention", "FLASH", "attention: 'FLASH' is not one of flash or dot");
	set_fails("attention_kernel", "triton", "'triton' is not one of pallas or cudnn");
	set_fails("attention", "", "is not one of");

	write_tmp("attn.json", "{\"attention\": \"dot\", \"attention_kernel\": \"cudnn\"}", path);
	c = shs_test_preset("llama3-8b");
	SHS_ASSERT_OK(shs_gen_config_load_json(path, &c, &e), &e);
	SHS_ASSERT_INT_EQ(c.attention, SHS_GEN_ATTN_DOT);
	SHS_ASSERT_INT_EQ(c.attention_kernel, SHS_GEN_KERNEL_CUDNN);
	json_fails("attn_bad.json", "{\"attention\": 1}", SHS_EINVAL,
		   "member 'attention': must be a string");
	json_fails("attn_word.json", "{\"attention\": \"sparse\"}", SHS_EINVAL,
		   "'sparse' is not one of flash or dot");
	c.attention = (shs_gen_attention)7;
	SHS_ASSERT_INT_EQ(shs_gen_config_check(&c, &e), SHS_EINVAL);
	ASSERT_HAS(e.msg, "attention 7");
}

static void json_top_level_must_be_an_object(void)
{
	json_fails("array.json", "[1, 2]", SHS_EINVAL,
		   "the top level must be an object (got an array)");
	json_fails("number.json", "42", SHS_EINVAL, "must be an object (got an integer)");
}

static void json_unknown_member_is_named(void)
{
	json_fails("unknown.json", "{\"preset\": \"llama3-8b\", \"d_modle\": 5}", SHS_EINVAL,
		   "member 'd_modle': unknown key 'd_modle' (keys: vocab");
	json_fails("kind.json", "{\"kind\": 1}", SHS_EINVAL, "member 'kind': unknown key");
	json_fails("badpreset.json", "{\"preset\": \"llama9\"}", SHS_EINVAL,
		   "member 'preset': unknown preset 'llama9' (presets: llama2-13b");
}

static void json_members_must_have_the_keys_type(void)
{
	json_fails("t1.json", "{\"layers\": \"4\"}", SHS_EINVAL,
		   "member 'layers': must be an integer (got a string)");
	json_fails("t2.json", "{\"layers\": 4.5}", SHS_EINVAL,
		   "member 'layers': must be an integer (got 4.5)");
	json_fails("t3.json", "{\"layers\": 1e30}", SHS_EINVAL, "must be an integer (got 1e+30)");
	json_fails("t4.json", "{\"d_model\": true}", SHS_EINVAL,
		   "member 'd_model': must be an integer (got true)");
	json_fails("t5.json", "{\"scan\": 1}", SHS_EINVAL,
		   "member 'scan': must be true or false (got an integer)");
	json_fails("t6.json", "{\"dtype\": 16}", SHS_EINVAL, "member 'dtype': must be a string");
	json_fails("t7.json", "{\"learning_rate\": null}", SHS_EINVAL,
		   "member 'learning_rate': must be a number (got null)");
	json_fails("t8.json", "{\"preset\": 3}", SHS_EINVAL, "member 'preset': must be a string");
	json_fails("t9.json", "{\"name\": [\"a\"]}", SHS_EINVAL, "member 'name': must be a string");
}

static void json_values_go_through_the_key_checks(void)
{
	json_fails("v1.json", "{\"dtype\": \"fp8\"}", SHS_EINVAL,
		   "member 'dtype': 'fp8' is not a dtype (bf16 or f32-master)");
	json_fails("v2.json", "{\"name\": \"my model\"}", SHS_EINVAL,
		   "member 'name': 'my model' has character ' '");
	json_fails("v3.json", "{\"name\": \"a\\u0000b\"}", SHS_EPARSE, "\\u0000");
	json_fails("v4.json", "{\"layers\": 0}", SHS_EINVAL,
		   "member 'layers': must be >= 1 (got 0)");
	json_fails("v5.json", "{\"adam_b1\": -0.5}", SHS_EINVAL, "member 'adam_b1': must be >= 0");
	/* the first bad member fails the file even after good ones */
	json_fails("v6.json", "{\"preset\": \"mixtral-8x7b\", \"seq\": 128, \"top_k\": -1}",
		   SHS_EINVAL, "member 'top_k'");
}

static void check_requires_positive_sizes(void)
{
	static const char *const fields[] = { "vocab", "d_model", "d_ff", "layers", "heads",
					      "kv_heads", "head_dim", "seq", "batch" };
	char want[PATH_MAX_LEN];

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		shs_gen_config c = shs_test_preset("llama3-8b");
		int64_t *const values[] = { &c.vocab, &c.d_model, &c.d_ff, &c.layers, &c.heads,
					    &c.kv_heads, &c.head_dim, &c.seq, &c.batch };

		*values[i] = i % 2 ? 0 : -3;
		snprintf(want, sizeof(want), "%s must be >= 1 (got %d)", fields[i], i % 2 ? 0 : -3);
		check_fails(&c, want);
	}
}

static void check_heads_divisible_by_kv_heads(void)
{
	shs_gen_config c = shs_test_preset("llama2-13b");

	c.kv_heads = 6;
	check_fails(&c, "heads (40) must be a multiple of kv_heads (6)");
	c.kv_heads = 80;
	check_fails(&c, "heads (40) must be a multiple of kv_heads (80)");
}

static void check_experts_and_top_k(void)
{
	shs_gen_config c = shs_test_preset("mixtral-8x7b");
	shs_err e = { 0 };

	c.experts = 1;
	check_fails(&c, "experts must be 0 (dense) or >= 2 (got 1)");
	c.experts = 8;
	c.top_k = 9;
	check_fails(&c, "top_k must be in [1, experts (8)] (got 9)");
	c.top_k = 0;
	check_fails(&c, "top_k must be in [1, experts (8)] (got 0)");
	c.top_k = 8;
	SHS_ASSERT_OK(shs_gen_config_check(&c, &e), &e);
	c.capacity_factor = 0;
	check_fails(&c, "capacity_factor must be > 0");
	c.experts = 0; /* dense: top_k and capacity_factor do not matter */
	SHS_ASSERT_OK(shs_gen_config_check(&c, &e), &e);
}

static void check_optimizer_constants(void)
{
	shs_gen_config c = shs_test_preset("llama3-8b");

	c.adam_b1 = 1;
	check_fails(&c, "adam_b1 must be < 1 (got 1)");
	c.adam_b1 = 0.9;
	c.adam_b2 = 0;
	check_fails(&c, "adam_b2 must be > 0 (got 0)");
	c.adam_b2 = 0.95;
	c.learning_rate = NAN;
	check_fails(&c, "learning_rate must be > 0");
	c.learning_rate = 1e-4;
	c.adam_eps = -1e-8;
	check_fails(&c, "adam_eps must be > 0");
	c.adam_eps = 1e-8;
	c.norm_eps = INFINITY;
	check_fails(&c, "norm_eps must be > 0");
}

static void check_rejects_tensors_too_big_to_count(void)
{
	shs_gen_config c = shs_test_preset("llama3-8b");
	shs_err e = { 0 };

	c.seq = INT64_C(1) << 31;
	c.batch = INT64_C(1) << 31;
	check_fails(&c,
		    "activations tensor batch*seq*d_model = 2147483648*2147483648*4096 has 2^62");
	c = shs_test_preset("llama3-8b");
	c.seq = INT64_C(1) << 20;
	c.batch = INT64_C(1) << 20;
	check_fails(&c, "attention scores tensor batch*heads*seq*seq");
	c = shs_test_preset("llama3-8b");
	c.d_model = (INT64_C(1) << 40) + 1;
	check_fails(&c, "d_model must be <= 2^40 (got 1099511627777)");
	c = shs_test_preset("llama3-8b");
	c.scan = true;
	c.layers = 100001;
	check_fails(&c, "layers must be <= 100000 (got 100001)");
	c.layers = 100000;
	SHS_ASSERT_OK(shs_gen_config_check(&c, &e), &e);
	/* unrolled, each layer is its own computations: refused before building what would not
	 * fit in memory */
	c.scan = false;
	check_fails(&c, "layers must be <= 4096 unrolled (got 100000)");
	c.layers = 4096;
	SHS_ASSERT_OK(shs_gen_config_check(&c, &e), &e);
	c = shs_test_preset("llama3-8b");
	c.scan = true;
	c.layers = 100000;
	c.d_model = INT64_C(1) << 30;
	c.d_ff = INT64_C(1) << 30;
	check_fails(&c, "stacked mlp weights tensor layers*d_model*d_ff");
}

static void check_bounds_moe_dispatch(void)
{
	shs_gen_config c = shs_test_preset("mixtral-8x7b");

	c.capacity_factor = 1e300;
	check_fails(&c, "expert capacity ceil(top_k * seq * capacity_factor / experts)");
	c = shs_test_preset("mixtral-8x7b");
	c.capacity_factor = 1e9; /* capacity just under 2^40: fits one dim, not the dispatch mask */
	check_fails(&c, "dispatch mask tensor batch*seq*experts*capacity");
}

static void check_mlp_only_ignores_attention_fields(void)
{
	shs_gen_config c = shs_test_preset("mlp-only");
	shs_err e = { 0 };

	c.heads = 7; /* no attention: not checked against kv_heads = 0 */
	c.vocab = 0;
	SHS_ASSERT_OK(shs_gen_config_check(&c, &e), &e);
	c.d_ff = 0;
	check_fails(&c, "d_ff must be >= 1 (got 0)");
	c = shs_test_preset("mlp-only");
	c.batch = INT64_C(1) << 35;
	c.d_ff = INT64_C(1) << 30;
	check_fails(&c, "mlp hidden tensor batch*d_ff = 34359738368*1073741824 has 2^62");
}

static void check_rejects_bad_name_kind_and_dtype(void)
{
	shs_gen_config c = shs_test_preset("llama3-8b");

	memcpy(c.name, "a b", sizeof("a b"));
	check_fails(&c, "name: 'a b' has character ' '");
	c.name[0] = '\0';
	check_fails(&c, "name: must not be empty");
	memset(c.name, 'x', sizeof(c.name));
	check_fails(&c, "name is not NUL-terminated");
	c = shs_test_preset("llama3-8b");
	c.kind = (shs_gen_kind)7;
	check_fails(&c, "kind 7 is not a model kind");
	c = shs_test_preset("llama3-8b");
	c.dtype = (shs_gen_dtype)-1;
	check_fails(&c, "dtype -1 is not a dtype");
}

CU_TestInfo genconfig_tests[] = {
	{ "every preset loads and passes the checks", every_preset_loads_and_checks },
	{ "llama2-13b is the book's 3M-token, 32k problem", llama2_13b_is_the_books_problem },
	{ "llama3 presets have their published dimensions", llama3_presets_have_published_dims },
	{ "gpt3-175b is plain-MLP, tied, T=2048", gpt3_is_plain_tied_and_short },
	{ "mixtral-8x7b has 8 experts, top-2", mixtral_has_eight_experts_top_two },
	{ "mlp-only is the book's bf16 model with batch in tokens", mlp_only_is_the_books_model },
	{ "transformer presets share the optimizer defaults", transformer_presets_share_defaults },
	{ "an unknown preset's error lists the presets", unknown_preset_lists_the_presets },
	{ "set writes int, real, bool, dtype and name keys", set_writes_each_key_kind },
	{ "set rejects unknown keys and lists the keys", set_rejects_unknown_keys_listing_them },
	{ "set rejects malformed integers", set_rejects_malformed_integers },
	{ "set rejects negative and zero sizes", set_rejects_out_of_range_integers },
	{ "set rejects bad reals, booleans and dtypes", set_rejects_bad_reals_bools_and_dtypes },
	{ "set accepts only [A-Za-z0-9._-] names that fit", set_accepts_only_safe_names },
	{ "JSON applies the preset, then the other members", json_applies_preset_then_members },
	{ "JSON without preset starts from the given config",
	  json_without_preset_starts_from_the_given_config },
	{ "JSON: a missing file is an I/O error naming it", json_missing_file_is_an_io_error },
	{ "JSON syntax errors give line and column", json_syntax_errors_give_line_and_column },
	{ "JSON top level must be an object", json_top_level_must_be_an_object },
	{ "attention=flash|dot and attention_kernel=pallas|cudnn", attention_keys },
	{ "JSON unknown members are named", json_unknown_member_is_named },
	{ "JSON members must have their key's type", json_members_must_have_the_keys_type },
	{ "JSON values go through the key checks", json_values_go_through_the_key_checks },
	{ "check requires every size >= 1", check_requires_positive_sizes },
	{ "check requires heads divisible by kv_heads", check_heads_divisible_by_kv_heads },
	{ "check bounds experts and top_k", check_experts_and_top_k },
	{ "check bounds the optimizer constants", check_optimizer_constants },
	{ "check rejects tensors of 2^62 elements", check_rejects_tensors_too_big_to_count },
	{ "check bounds expert capacity and the dispatch mask", check_bounds_moe_dispatch },
	{ "check ignores attention fields of mlp-only", check_mlp_only_ignores_attention_fields },
	{ "check rejects bad names, kinds and dtypes", check_rejects_bad_name_kind_and_dtype },
	CU_TEST_INFO_NULL,
};
