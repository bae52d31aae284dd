/* libFuzzer target: the pass entry point (shs_pass_run: load, search, annotate, write) on any
 * bytes gives an annotated module or a message, never a crash or a leak; what it wrote loads
 * back and verifies. A 4-chip v5p slice, one thread and a 2 s budget keep each search small. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io.h"
#include "shardsearch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char options[] = "hardware=v5p;devices=4;threads=1;time-budget=2;plugins="
				      SHS_STRATEGY_DIR;
	uint8_t *out = NULL;
	size_t len = 0;
	char *err = NULL;

	if (shs_pass_run(data, size, options, &out, &len, &err) == 0) {
		shs_module *m = NULL;
		shs_err e = { 0 };
		int rc = shs_proto_load(out, len, "pass output", &m, &e);

		fuzz_require(rc == SHS_OK, "what the pass wrote loads", e.msg);
		rc = shs_module_verify(m, &e);
		fuzz_require(rc == SHS_OK, "what the pass wrote verifies", e.msg);
		shs_module_free(m);
	} else {
		fuzz_require(err && err[0], "a failed pass says why", NULL);
	}
	shs_pass_free(out);
	shs_pass_free(err);
	return 0;
}
