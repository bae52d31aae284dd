/* libFuzzer target: sharding text (shs_sharding_parse, XLA's and the named-axis form) parses or
 * fails with a message; a parsed sharding prints to text that parses back to an equal sharding
 * and prints the same, and survives a clone, the checks and a trip through OpSharding. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "sharding.h"
#include "sharding_proto.h"

enum { ARENA_BUDGET = 64 << 20, CHECK_DEVICES = 8 };

/* The rank of the value a tiled sharding fits: its tile dims less the subgroup dims. */
static uint32_t data_rank(const shs_sharding *s)
{
	uint32_t sub = (s->replicate_on_last_tile_dim ? 1 : 0) + s->n_last_tile_dims;

	if (s->kind != SHS_SHARDING_TILED || s->n_tile_dims < sub)
		return 0;
	return s->n_tile_dims - sub;
}

/* text (len bytes) parses back to a sharding equal to s that prints as text again. */
static void check_reparse(shs_arena *a, const shs_sharding *s, const shs_buf *text)
{
	shs_sharding *again = NULL;
	shs_buf second = { 0 };
	size_t used = 0, at = 0;
	shs_err e = { 0 };
	int rc = shs_sharding_parse(a, text->data, text->len, &used, &again, &at, &e);

	fuzz_require(rc == SHS_OK, "a printed sharding parses back", e.msg);
	fuzz_require(used == text->len, "the printed sharding is read to its end", text->data);
	fuzz_require(shs_sharding_equal(s, again), "the reparsed sharding is equal", text->data);
	shs_sharding_print(&second, again);
	fuzz_require(!second.oom && second.len == text->len &&
		     !memcmp(second.data, text->data, text->len),
		     "the reparsed sharding prints the same", text->data);
	shs_buf_free(&second);
}

/* Whether s holds a tiled sharding of one device: XLA's HloSharding::FromProto reads that
 * back as maximal (an OpSharding with one device, or iota all ones), which the text does not
 * say, so the trip through OpSharding is not equal there, as in XLA. */
static bool one_device_tiled(const shs_sharding *s)
{
	int64_t n = 1;

	for (uint32_t k = 0; k < s->n_tuple; k++)
		if (one_device_tiled(&s->tuple[k]))
			return true;
	if (s->kind != SHS_SHARDING_TILED)
		return false;
	for (uint32_t k = 0; k < s->n_tile_dims; k++)
		n *= s->tile_dims[k];
	return n == 1;
}

/* s through OpSharding and back is equal to s (when it converts; one_device_tiled aside). */
static void check_proto(shs_arena *a, const shs_sharding *s, const char *text)
{
	Xla__OpSharding p;
	shs_sharding *back = NULL;
	shs_err e = { 0 };
	int rc = shs_sharding_to_proto(a, s, &p, &e);

	fuzz_check_failure("shs_sharding_to_proto", rc, &e);
	if (rc != SHS_OK)
		return;
	rc = shs_sharding_from_proto(a, &p, &back, &e);
	fuzz_require(rc == SHS_OK, "a sharding written as OpSharding reads back", e.msg);
	fuzz_require(shs_sharding_equal(s, back) || one_device_tiled(s),
		     "the OpSharding read back is equal", text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shs_arena *a = shs_arena_new(ARENA_BUDGET);
	shs_sharding *s = NULL, *copy;
	shs_buf text = { 0 };
	size_t used = 0, at = 0;
	shs_err e = { 0 };
	int rc;

	fuzz_require(a != NULL, "an arena", NULL);
	rc = shs_sharding_parse(a, (const char *)data, size, &used, &s, &at, &e);
	fuzz_check_failure("shs_sharding_parse", rc, &e);
	if (rc != SHS_OK) {
		fuzz_require(at <= size, "the error offset lies in the input", e.msg);
		goto out;
	}
	fuzz_require(used <= size, "the parse reads no further than the input", NULL);
	shs_sharding_print(&text, s);
	fuzz_require(!text.oom && text.len > 0, "the sharding prints", NULL);
	check_reparse(a, s, &text);
	copy = shs_sharding_clone(a, s);
	fuzz_require(copy && shs_sharding_equal(s, copy), "a clone is equal", text.data);
	for (int64_t devices = 0; devices <= CHECK_DEVICES; devices += CHECK_DEVICES) {
		rc = shs_sharding_check(s, data_rank(s), devices, &e);
		fuzz_check_failure("shs_sharding_check", rc, &e);
	}
	check_proto(a, s, text.data);
out:
	shs_buf_free(&text);
	shs_arena_free(a);
	return 0;
}
