/* Checks shared by the module targets (fuzz_module.h). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_module.h"
#include "fuzz_util.h"

/* m2 equals m1, else abort saying how they differ. */
static void require_equal(const shs_module *m1, const shs_module *m2, const char *what)
{
	shs_buf why = { 0 };
	bool same = shs_module_equal(m1, m2, &why);

	fuzz_require(same, what, why.data);
	shs_buf_free(&why);
}

/* text (m printed) loads back as a module that prints the same text and, when m was read from
 * text (its ids are the text's), is equal to m. A module read from protobuf may hold what the
 * text form has no words for (a parameter's slice_sizes, an absent literal): it is only held to
 * its text reading back as itself. */
static void check_text(const shs_module *m, const shs_buf *text, bool from_text)
{
	shs_module *again = NULL;
	shs_buf second = { 0 };
	shs_err e = { 0 };
	int rc = shs_text_load(text->data, text->len, "printed.hlo", &again, &e);

	fuzz_require(rc == SHS_OK, "a printed module loads back", e.msg);
	if (from_text)
		require_equal(m, again, "the printed module loads back equal");
	rc = shs_module_verify(again, &e);
	fuzz_require(rc == SHS_OK, "the printed module verifies", e.msg);
	shs_text_print(&second, again, NULL);
	fuzz_require(!second.oom && second.len == text->len &&
		     !memcmp(second.data, text->data, text->len),
		     "the reloaded module prints the same", NULL);
	shs_buf_free(&second);
	shs_module_free(again);
}

/* pb (m saved) loads back as a module equal to m that saves to the same bytes. */
static void check_proto(const shs_module *m, const uint8_t *pb, size_t len)
{
	shs_module *again = NULL;
	uint8_t *pb2 = NULL;
	size_t len2 = 0;
	shs_err e = { 0 };
	int rc = shs_proto_load(pb, len, "saved.pb", &again, &e);

	fuzz_require(rc == SHS_OK, "a saved module loads back", e.msg);
	require_equal(m, again, "the saved module loads back equal");
	rc = shs_proto_save(again, m->from_hlo_proto, &pb2, &len2, &e);
	fuzz_require(rc == SHS_OK, "the reloaded module saves", e.msg);
	fuzz_require(len2 == len && !memcmp(pb, pb2, len), "the reloaded module saves the same",
		     NULL);
	free(pb2);
	shs_module_free(again);
}

void fuzz_check_module(const shs_module *m, bool from_text)
{
	shs_buf text = { 0 };
	uint8_t *pb = NULL;
	size_t len = 0;
	shs_err e = { 0 };
	bool verified;
	int rc;

	shs_text_print(&text, m, NULL);
	fuzz_require(!text.oom, "the module prints", NULL);
	rc = shs_proto_save(m, m->from_hlo_proto, &pb, &len, &e);
	fuzz_check_failure("shs_proto_save", rc, &e);
	rc = shs_module_verify(m, &e);
	fuzz_check_failure("shs_module_verify", rc, &e);
	verified = rc == SHS_OK;
	if (verified) {
		uint64_t *h = calloc(m->n_comps + 1, sizeof(*h));

		fuzz_require(h != NULL, "memory for the hashes", NULL);
		rc = shs_module_hash(m, h, &e);
		fuzz_require(rc == SHS_OK, "a verified module hashes", e.msg);
		free(h);
		check_text(m, &text, from_text);
		if (pb)
			check_proto(m, pb, len);
	}
	free(pb);
	shs_buf_free(&text);
}
