/* Tests: metadata. */
#include <stdlib.h>
#include <string.h>

#include "metadata.h"
#include "sharding_proto.h"
#include "test_util.h"

static shs_metadata parse_md(shs_arena *a, const char *s)
{
	shs_metadata m;
	size_t used = 0, off = 0;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_metadata_parse(a, s, strlen(s), &used, &m, &off, &e), &e);
	SHS_ASSERT_INT_EQ(used, strlen(s));
	return m;
}

static char *print_md(const shs_metadata *m)
{
	shs_buf b = { 0 };
	char *out;

	shs_metadata_print(&b, m);
	out = shs_buf_take(&b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	return out;
}

static void assert_md_prints(const shs_metadata *m, const char *want)
{
	char *got = print_md(m);

	SHS_ASSERT_STR_EQ(got, want);
	free(got);
}

/* Metadata exactly as XLA's OpMetadataToString prints it. */
static const char *const xla_metadata[] = {
	"{}",
	"{op_name=\"jit(f)/add\" source_file=\"/a.py\" source_line=3}",
	"{op_type=\"Add\" op_name=\"a/b\"}",
	"{op_type=\"t\" op_name=\"n\" source_file=\"f\" source_line=1 source_end_line=2 "
	"source_column=3 source_end_column=4 deduplicated_name=\"d\" scheduling_name=\"s\" "
	"stack_frame_id=5}",
	"{source_line=-1}",
	"{stack_frame_id=2147483647}",
	"{op_name=\"q\\\"uote\\\\back\\nnl\\ttab\\rcr\\'apos\\001\\377\"}",
};

static void xla_metadata_round_trip(void)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < sizeof(xla_metadata) / sizeof(xla_metadata[0]); i++) {
		shs_metadata m = parse_md(a, xla_metadata[i]);

		assert_md_prints(&m, xla_metadata[i]);
		CU_ASSERT_EQUAL(shs_metadata_empty(&m), i == 0);
	}
	shs_arena_free(a);
}

static void fields_land_where_they_belong(void)
{
	shs_arena *a = shs_arena_new(0);
	shs_metadata m = parse_md(a, xla_metadata[3]);

	SHS_ASSERT_STR_EQ(m.op_type, "t");
	SHS_ASSERT_STR_EQ(m.op_name, "n");
	SHS_ASSERT_STR_EQ(m.source_file, "f");
	SHS_ASSERT_INT_EQ(m.source_line, 1);
	SHS_ASSERT_INT_EQ(m.source_end_line, 2);
	SHS_ASSERT_INT_EQ(m.source_column, 3);
	SHS_ASSERT_INT_EQ(m.source_end_column, 4);
	SHS_ASSERT_STR_EQ(m.deduplicated_name, "d");
	SHS_ASSERT_STR_EQ(m.scheduling_name, "s");
	SHS_ASSERT_INT_EQ(m.stack_frame_id, 5);
	shs_arena_free(a);
}

static void any_order_prints_in_xla_order(void)
{
	shs_arena *a = shs_arena_new(0);
	shs_metadata m = parse_md(a, "{ source_line=3, source_file=\"/a.py\"  op_name=\"x\" "
				     "/* c */ op_type=\"T\"}");
	shs_metadata same = parse_md(a, "{op_type=\"T\" op_name=\"x\" source_file=\"/a.py\" "
					"source_line=3}");

	assert_md_prints(&m, "{op_type=\"T\" op_name=\"x\" source_file=\"/a.py\" source_line=3}");
	CU_ASSERT_TRUE(shs_metadata_equal(&m, &same));
	same.source_line = 4;
	CU_ASSERT_FALSE(shs_metadata_equal(&m, &same));
	/* an empty string is unset */
	m = parse_md(a, "{op_name=\"\" source_line=0}");
	CU_ASSERT_TRUE(shs_metadata_empty(&m));
	CU_ASSERT_PTR_NULL(m.op_name);
	assert_md_prints(&m, "{}");
	shs_arena_free(a);
}

static void escapes_decode_and_encode(void)
{
	shs_arena *a = shs_arena_new(0);
	shs_metadata m = parse_md(a, "{op_name=\"\\x41\\x7e\\101z\\a\\?\"}"), cut;
	static const char nul[] = "{op_name=\"x\\0yz\"}";
	char *out = NULL;
	size_t used = 0, n = 0, off = 0;
	shs_err e = { 0 };
	shs_buf b = { 0 };

	SHS_ASSERT_STR_EQ(m.op_name, "A~Az\a?");
	/* a metadata string is a C string: a NUL in it is refused, not cut at */
	CU_ASSERT_EQUAL(shs_metadata_parse(a, nul, strlen(nul), &used, &cut, &off, &e),
			SHS_EPARSE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "NUL byte"));
	/* bytes with NULs survive parse_quoted with their length */
	SHS_ASSERT_OK(shs_text_parse_quoted(a, "\"a\\000b\\xff\" tail", 17, &used, &out, &n, &off,
					    &e), &e);
	SHS_ASSERT_INT_EQ(used, 12);
	SHS_ASSERT_INT_EQ(n, 4);
	CU_ASSERT_EQUAL(memcmp(out, "a\0b\xff", 5), 0);
	shs_text_put_quoted(&b, "a\0b\xff\x7f\x1f", 6);
	out = shs_buf_take(&b);
	SHS_ASSERT_STR_EQ(out, "\"a\\000b\\377\\177\\037\"");
	free(out);
	shs_arena_free(a);
}

static void quoted_string_errors(void)
{
	static const struct {
		const char *text;
		size_t off;
		const char *says;
	} cases[] = {
		{ "\"abc", 0, "unterminated" },
		{ "\"a\\qb\"", 2, "bad escape" },
		{ "\"a\\x\"", 2, "bad escape" },
		{ "\"\\777\"", 1, "bad escape" },
		{ "abc\"", 0, "expected" },
	};
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL;
		size_t used = 0, n = 0, off = 99;
		shs_err e = { 0 };

		SHS_ASSERT_INT_EQ(shs_text_parse_quoted(a, cases[i].text, strlen(cases[i].text),
							&used, &out, &n, &off, &e), SHS_EPARSE);
		SHS_ASSERT_INT_EQ(off, cases[i].off);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, cases[i].says));
	}
	shs_arena_free(a);
}

static void bad_metadata_rejected(void)
{
	static const struct {
		const char *text;
		size_t off;
		const char *says;
	} cases[] = {
		{ "{op_nme=\"x\"}", 1, "unknown key 'op_nme'" },
		{ "{op_name=\"x\" preserve_layout=true}", 13, "unknown key 'preserve_layout'" },
		{ "{op_name=\"x\" op_name=\"y\"}", 13, "twice" },
		{ "{op_name=3}", 9, "quoted string" },
		{ "{source_line=\"3\"}", 13, "integer" },
		{ "{source_line=2147483648}", 13, "int32" },
		{ "{source_line=99999999999999999999999}", 13, "int32" },
		{ "{op_name \"x\"}", 9, "'='" },
		{ "{op_name=\"x\"", 12, "'}'" },
		{ "{op_name=\"x\\q\"}", 11, "bad escape" },
		{ "op_name=\"x\"}", 0, "'{'" },
		{ "{op_name=\"x\" @}", 13, "key" },
	};
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		shs_metadata m;
		size_t used = 0, off = 99;
		shs_err e = { 0 };
		int rc = shs_metadata_parse(a, cases[i].text, strlen(cases[i].text), &used, &m,
					    &off, &e);

		if (rc != SHS_EPARSE || off != cases[i].off || !strstr(e.msg, cases[i].says))
			fprintf(stderr, "\n  %s: rc %d off %zu msg \"%s\"\n", cases[i].text, rc,
				off, e.msg);
		SHS_ASSERT_INT_EQ(rc, SHS_EPARSE);
		SHS_ASSERT_INT_EQ(off, cases[i].off);
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, cases[i].says));
	}
	shs_arena_free(a);
}

static void proto_round_trip(void)
{
	shs_arena *a = shs_arena_new(0);

	for (size_t i = 0; i < sizeof(xla_metadata) / sizeof(xla_metadata[0]); i++) {
		shs_metadata m = parse_md(a, xla_metadata[i]), back;
		Xla__OpMetadata p, *un;
		shs_err e = { 0 };
		uint8_t buf[512];
		size_t n;

		SHS_ASSERT_OK(shs_metadata_to_proto(a, &m, &p, &e), &e);
		n = xla__op_metadata__get_packed_size(&p);
		CU_ASSERT_TRUE_FATAL(n <= sizeof(buf));
		xla__op_metadata__pack(&p, buf);
		un = xla__op_metadata__unpack(NULL, n, buf);
		CU_ASSERT_PTR_NOT_NULL_FATAL(un);
		SHS_ASSERT_OK(shs_metadata_from_proto(a, un, &back, &e), &e);
		xla__op_metadata__free_unpacked(un, NULL);
		CU_ASSERT_TRUE(shs_metadata_equal(&m, &back));
		assert_md_prints(&back, xla_metadata[i]);
	}
	shs_arena_free(a);
}

/* Every metadata={...} of the real modules prints back byte for byte. */
static void real_file_metadata_round_trip(void)
{
	static const char *const files[] = {
		"nv_maxtext_1n1g_jit_train_step_before_optimization.hlo",
		"mha_block_1x12x128x64_bf16.hlo",
	};
	shs_arena *a = shs_arena_new(0);
	size_t seen = 0;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		size_t len = 0;
		char *text = (char *)shs_test_read_file(shs_test_hlo_path(files[f]), &len);
		const char *p = text;

		CU_ASSERT_PTR_NOT_NULL_FATAL(text);
		while ((p = strstr(p, "metadata={"))) {
			size_t start = (size_t)(p - text) + strlen("metadata="), used = 0, off = 0;
			shs_metadata m;
			shs_err e = { 0 };
			char *got;

			SHS_ASSERT_OK(shs_metadata_parse(a, text + start, len - start, &used, &m,
							 &off, &e), &e);
			got = print_md(&m);
			SHS_ASSERT_INT_EQ(strlen(got), used);
			CU_ASSERT_EQUAL(memcmp(got, text + start, used), 0);
			free(got);
			seen++;
			p = text + start;
		}
		free(text);
	}
	CU_ASSERT_TRUE(seen > 1000);
	shs_arena_free(a);
}

CU_TestInfo metadata_tests[] = {
	{ "XLA metadata parse and print identically", xla_metadata_round_trip },
	{ "fields land where they belong", fields_land_where_they_belong },
	{ "any order prints in XLA order", any_order_prints_in_xla_order },
	{ "escapes decode and encode like CEscape", escapes_decode_and_encode },
	{ "quoted string errors", quoted_string_errors },
	{ "bad metadata rejected at the fault", bad_metadata_rejected },
	{ "OpMetadata round trip", proto_round_trip },
	{ "real file metadata round trip", real_file_metadata_round_trip },
	CU_TEST_INFO_NULL,
};
