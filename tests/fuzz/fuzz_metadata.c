/* libFuzzer target: OpMetadata text (shs_metadata_parse) and quoted strings
 * (shs_text_parse_quoted) parse or fail with a message; what parses prints to text that parses
 * back to the same metadata or bytes, and metadata survives a trip through OpMetadata. */
#include <string.h>

#include "fuzz_util.h"
#include "metadata.h"
#include "sharding_proto.h"

enum { ARENA_BUDGET = 16 << 20 };

static void check_metadata(shs_arena *a, const char *s, size_t len)
{
	shs_metadata m = { 0 }, again = { 0 }, back = { 0 };
	shs_buf text = { 0 };
	Xla__OpMetadata p;
	size_t used = 0, at = 0;
	shs_err e = { 0 };
	int rc = shs_metadata_parse(a, s, len, &used, &m, &at, &e);

	fuzz_check_failure("shs_metadata_parse", rc, &e);
	if (rc != SHS_OK) {
		fuzz_require(at <= len, "the error offset lies in the input", e.msg);
		return;
	}
	fuzz_require(used <= len, "the parse reads no further than the input", NULL);
	shs_metadata_print(&text, &m);
	fuzz_require(!text.oom, "the metadata prints", NULL);
	rc = shs_metadata_parse(a, text.data, text.len, &used, &again, &at, &e);
	fuzz_require(rc == SHS_OK, "printed metadata parses back", e.msg);
	fuzz_require(used == text.len, "printed metadata is read to its end", text.data);
	fuzz_require(shs_metadata_equal(&m, &again), "the reparsed metadata is equal", text.data);
	rc = shs_metadata_to_proto(a, &m, &p, &e);
	fuzz_require(rc == SHS_OK, "metadata converts to OpMetadata", e.msg);
	rc = shs_metadata_from_proto(a, &p, &back, &e);
	fuzz_require(rc == SHS_OK && shs_metadata_equal(&m, &back),
		     "OpMetadata converts back to equal metadata", text.data);
	shs_buf_free(&text);
}

static void check_quoted(shs_arena *a, const char *s, size_t len)
{
	char *out = NULL, *again = NULL;
	size_t n = 0, n2 = 0, used = 0, at = 0;
	shs_buf text = { 0 };
	shs_err e = { 0 };
	int rc;

	if (!len || s[0] != '"')
		return;
	rc = shs_text_parse_quoted(a, s, len, &used, &out, &n, &at, &e);
	fuzz_check_failure("shs_text_parse_quoted", rc, &e);
	if (rc != SHS_OK)
		return;
	fuzz_require(used <= len && out[n] == '\0', "a parsed string is NUL-terminated", NULL);
	shs_text_put_quoted(&text, out, n);
	fuzz_require(!text.oom && text.len >= 2, "the string prints", NULL);
	rc = shs_text_parse_quoted(a, text.data, text.len, &used, &again, &n2, &at, &e);
	fuzz_require(rc == SHS_OK, "a printed string parses back", e.msg);
	fuzz_require(used == text.len && n2 == n && !memcmp(out, again, n),
		     "the reparsed string has the same bytes", text.data);
	shs_buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shs_arena *a = shs_arena_new(ARENA_BUDGET);

	fuzz_require(a != NULL, "an arena", NULL);
	check_metadata(a, (const char *)data, size);
	check_quoted(a, (const char *)data, size);
	shs_arena_free(a);
	return 0;
}
