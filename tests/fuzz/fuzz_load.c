/* libFuzzer target: HLO text or protobuf bytes must load, or fail cleanly; loaded modules must
 * verify or fail cleanly, and survive printing and saving. */
#include <stdint.h>
#include <stdlib.h>

#include "io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc;

	if (size < 1)
		return 0;
	/* the first byte picks the loader so one corpus exercises both */
	if (data[0] & 1)
		rc = shs_proto_load(data + 1, size - 1, "fuzz.pb", &m, &e);
	else
		rc = shs_text_load((const char *)data + 1, size - 1, "fuzz.hlo", &m, &e);
	if (rc == SHS_OK && shs_module_verify(m, &e) == SHS_OK) {
		shs_buf b = { 0 };
		uint8_t *pb = NULL;
		size_t len = 0;
		uint64_t *h = calloc(m->n_comps + 1, sizeof(*h));

		shs_text_print(&b, m, NULL);
		shs_buf_free(&b);
		if (shs_proto_save(m, false, &pb, &len, &e) == SHS_OK)
			free(pb);
		if (h)
			(void)shs_module_hash(m, h, &e);
		free(h);
	}
	shs_module_free(m);
	return 0;
}
