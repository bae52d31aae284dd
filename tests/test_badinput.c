/* Tests: bad input of every kind gives a clear error, a non-OK code and no output file. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

static bool exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/* Loads path and asserts the code is want and the message holds every needle. */
static void expect_load_error(const char *path, int want, const char *needle1, const char *needle2)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_module_load_file(path, SHS_FORMAT_AUTO, &m, &e);

	if (rc == SHS_OK) /* loading may succeed where only the verifier objects */
		rc = shs_module_verify(m, &e);
	if (rc != want || (needle1 && !strstr(e.msg, needle1)) || (needle2 && !strstr(e.msg, needle2)))
		fprintf(stderr, "\n  %s: got %d \"%s\", want %d with \"%s\" \"%s\"\n", path, rc, e.msg,
			want, needle1 ? needle1 : "", needle2 ? needle2 : "");
	CU_ASSERT_EQUAL(rc, want);
	if (needle1)
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, needle1));
	if (needle2)
		CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, needle2));
	shs_module_free(m);
}

static const char *write_tmp(const char *name, const void *data, size_t len)
{
	const char *path = shs_test_tmp_path(name);
	FILE *f = fopen(path, "wb");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL_FATAL(fwrite(data, 1, len, f), len);
	fclose(f);
	return path;
}

static void missing_file(void)
{
	expect_load_error("/nonexistent/model.pb", SHS_EIO, "/nonexistent/model.pb", "cannot open");
	expect_load_error(SHS_HLO_DIR, SHS_EIO, "is a directory", NULL);
}

static void empty_and_random_files(void)
{
	uint8_t junk[4096];
	uint32_t x = 12345;

	expect_load_error(write_tmp("empty.hlo", "", 0), SHS_EPARSE, "empty.hlo", NULL);
	for (size_t k = 0; k < sizeof(junk); k++) {
		x = x * 1103515245u + 12345u;
		junk[k] = (uint8_t)(x >> 16);
	}
	expect_load_error(write_tmp("junk.pb", junk, sizeof(junk)), SHS_EPARSE, "junk.pb", NULL);
}

/* A tuple shape nested 100,000 deep must be refused, not overflow the stack. */
static void deep_tuple_text(void)
{
	enum { DEPTH = 100000 };
	shs_buf b = { 0 };

	shs_buf_puts(&b, "HloModule deep\n\nENTRY e {\n  ROOT p = ");
	for (int k = 0; k < DEPTH; k++)
		shs_buf_putc(&b, '(');
	shs_buf_puts(&b, "f32[]");
	for (int k = 0; k < DEPTH; k++)
		shs_buf_putc(&b, ')');
	shs_buf_puts(&b, " parameter(0)\n}\n");
	CU_ASSERT_FALSE_FATAL(b.oom);
	expect_load_error(write_tmp("deep.hlo", b.data, b.len), SHS_EPARSE, "deep.hlo:4:", "nest");
	shs_buf_free(&b);
}

/* Appends a protobuf varint. */
static void put_varint(shs_buf *b, uint64_t v)
{
	while (v >= 0x80) {
		shs_buf_putc(b, (char)(0x80 | (v & 0x7f)));
		v >>= 7;
	}
	shs_buf_putc(b, (char)v);
}

static void deep_tuple_proto(void)
{
	enum { DEPTH = 100000 };
	/* ShapeProto{ tuple_shapes(4) { tuple_shapes { ... { element_type(2) = F32 } } } }, built
	 * from the inside out: each level wraps the previous bytes in field 4 */
	shs_buf inner = { 0 }, outer = { 0 }, tmp;

	shs_buf_putc(&inner, 0x10); /* field 2, varint */
	shs_buf_putc(&inner, 11);   /* F32 */
	for (int k = 0; k < DEPTH; k++) {
		shs_buf_reset(&outer);
		shs_buf_putc(&outer, 0x22); /* field 4, length-delimited */
		put_varint(&outer, inner.len);
		shs_buf_put(&outer, inner.data, inner.len);
		tmp = inner;
		inner = outer;
		outer = tmp;
	}
	/* HloModuleProto{ computations(3) { instructions(2) { name(1) "p", opcode(2), shape(3) } } } */
	{
		shs_buf instr = { 0 }, comp = { 0 }, mod = { 0 };

		shs_buf_put(&instr, "\x0a\x01p\x12\x09parameter", 14);
		shs_buf_putc(&instr, 0x1a);
		put_varint(&instr, inner.len);
		shs_buf_put(&instr, inner.data, inner.len);
		shs_buf_putc(&comp, 0x12);
		put_varint(&comp, instr.len);
		shs_buf_put(&comp, instr.data, instr.len);
		shs_buf_put(&mod, "\x0a\x01m", 3);
		shs_buf_putc(&mod, 0x1a);
		put_varint(&mod, comp.len);
		shs_buf_put(&mod, comp.data, comp.len);
		CU_ASSERT_FALSE_FATAL(mod.oom);
		expect_load_error(write_tmp("deep.pb", mod.data, mod.len), SHS_EPARSE, "deep.pb", "nest");
		shs_buf_free(&instr);
		shs_buf_free(&comp);
		shs_buf_free(&mod);
	}
	shs_buf_free(&inner);
	shs_buf_free(&outer);
}

static void text_errors_at_known_places(void)
{
	static const struct {
		const char *name, *text, *where, *what;
	} cases[] = {
		{ "opcode.hlo", "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] frobnicate(p)\n}\n",
		  "opcode.hlo:5:", "frobnicate" },
		{ "operand.hlo", "HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(q)\n}\n",
		  "operand.hlo:5:", "q" },
		{ "negdim.hlo", "HloModule m\n\nENTRY e {\n  ROOT p = f32[2,-3] parameter(0)\n}\n",
		  "negdim.hlo:4:", NULL },
		{ "overflow.hlo", "HloModule m\n\nENTRY e {\n  ROOT p = f32[9223372036854775807,4] parameter(0)\n}\n",
		  "overflow.hlo:4:", NULL },
		{ "bigdim.hlo", "HloModule m\n\nENTRY e {\n  ROOT p = f32[99999999999999999999] parameter(0)\n}\n",
		  "bigdim.hlo:4:", NULL },
		{ "noeq.hlo", "HloModule m\n\nENTRY e {\n  p f32[2] parameter(0)\n}\n", "noeq.hlo:4:", NULL },
		{ "comment.hlo", "HloModule m\n\nENTRY e {\n  /* never closed\n  ROOT p = f32[] parameter(0)\n}\n",
		  "comment.hlo:4:", "comment" },
		{ "trunc.hlo", "HloModule m\n\nENTRY e {\n  ROOT p = f32[2] parame", "trunc.hlo:4:", NULL },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		expect_load_error(write_tmp(cases[k].name, cases[k].text, strlen(cases[k].text)),
				  SHS_EPARSE, cases[k].where, cases[k].what);
}

static void cycle_and_order(void)
{
	static const char cyc[] =
		"HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n  a = f32[2] add(p, b)\n"
		"  b = f32[2] negate(a)\n  ROOT r = f32[2] add(a, b)\n}\n";

	expect_load_error(write_tmp("cycle.hlo", cyc, strlen(cyc)), SHS_EVERIFY, "cycle", "'e'");
}

/* Every prefix of a valid protobuf either loads or fails cleanly. */
static void proto_cut_everywhere(void)
{
	shs_module *m = NULL, *back = NULL;
	uint8_t *pb = NULL;
	size_t len = 0, failed = 0;
	shs_err e = { 0 };

	SHS_ASSERT_OK(shs_module_load_file(shs_test_hlo_path("mha_block_1x12x128x64_bf16.hlo"),
					   SHS_FORMAT_AUTO, &m, &e), &e);
	SHS_ASSERT_OK(shs_proto_save(m, true, &pb, &len, &e), &e);
	for (size_t cut = 0; cut < len; cut++) {
		int rc = shs_proto_load(pb, cut, "cut.pb", &back, &e);

		if (rc != SHS_OK) {
			failed++;
			CU_ASSERT_PTR_NULL(back);
			CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "cut.pb"));
		}
		shs_module_free(back);
		back = NULL;
	}
	/* nearly every prefix cuts a message short */
	CU_ASSERT_TRUE(failed > len * 9 / 10);
	free(pb);
	shs_module_free(m);
}

static void unwritable_output(void)
{
	shs_module *m = shs_test_parse("HloModule m\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n");
	const char *file = write_tmp("plain-file", "x", 1);
	char path[4096];
	shs_err e = { 0 };

	snprintf(path, sizeof(path), "%s/out.pb", file); /* a path under a regular file */
	SHS_ASSERT_INT_EQ(shs_module_save_file(m, path, SHS_FORMAT_AUTO, &e), SHS_EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "out.pb"));
	CU_ASSERT_FALSE(exists(path));
	SHS_ASSERT_INT_EQ(shs_module_save_file(m, "/nonexistent/dir/out.hlo", SHS_FORMAT_AUTO, &e),
			  SHS_EIO);
	SHS_ASSERT_INT_EQ(shs_module_save_file(m, shs_test_tmp_path("out.unknown"), SHS_FORMAT_AUTO, &e),
			  SHS_EINVAL);
	CU_ASSERT_FALSE(exists(shs_test_tmp_path("out.unknown")));
	shs_module_free(m);
}

/* An attribute kept only as text cannot become protobuf: an error, and no file. */
static void raw_attribute_to_proto(void)
{
	shs_module *m = shs_test_parse(
		"HloModule m\n\nENTRY e {\n  p = f32[2] parameter(0)\n"
		"  ROOT r = f32[2] negate(p), some_future_attr={a, b}\n}\n");
	const char *out = shs_test_tmp_path("raw.pb");
	shs_err e = { 0 };

	unlink(out);
	SHS_ASSERT_INT_EQ(shs_module_save_file(m, out, SHS_FORMAT_AUTO, &e), SHS_EUNSUPPORTED);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "some_future_attr"));
	CU_ASSERT_FALSE(exists(out));
	shs_module_free(m);
}

CU_TestInfo badinput_tests[] = {
	{ "a missing file or a folder is named in the error", missing_file },
	{ "empty and random files are refused", empty_and_random_files },
	{ "a tuple shape nested 100,000 deep in text is refused", deep_tuple_text },
	{ "a tuple shape nested 100,000 deep in protobuf is refused", deep_tuple_proto },
	{ "HLO text errors give file, line and column", text_errors_at_known_places },
	{ "a cycle is reported as a cycle", cycle_and_order },
	{ "a protobuf cut at every offset fails cleanly", proto_cut_everywhere },
	{ "an unwritable output leaves no file", unwritable_output },
	{ "a text-only attribute cannot be written as protobuf", raw_attribute_to_proto },
	CU_TEST_INFO_NULL,
};
