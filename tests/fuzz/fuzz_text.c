/* libFuzzer target: HLO text (shs_text_load) loads or fails with a message; a loaded module
 * passes the module checks (fuzz_module.h: printing, saving, and for a verified one the text
 * and protobuf round trips). */
#include "fuzz_module.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_text_load((const char *)data, size, "fuzz.hlo", &m, &e);

	fuzz_check_failure("shs_text_load", rc, &e);
	fuzz_require((rc == SHS_OK) == (m != NULL), "a module exactly when the load succeeds",
		     e.msg);
	if (m)
		fuzz_check_module(m, true);
	shs_module_free(m);
	return 0;
}
