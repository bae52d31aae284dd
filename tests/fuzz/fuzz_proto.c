/* libFuzzer target: binary HloProto / HloModuleProto (shs_proto_load) loads or fails with a
 * message; a loaded module passes the module checks (fuzz_module.h: printing, saving, and for
 * a verified one the text and protobuf round trips). */
#include "fuzz_module.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_proto_load(data, size, "fuzz.pb", &m, &e);

	fuzz_check_failure("shs_proto_load", rc, &e);
	fuzz_require((rc == SHS_OK) == (m != NULL), "a module exactly when the load succeeds",
		     e.msg);
	if (m)
		fuzz_check_module(m, false);
	shs_module_free(m);
	return 0;
}
