/* libFuzzer target: the pass entry point on any bytes must give an annotated module or a
 * message, never a crash or a leak; its output must load back. A 4-chip v5p slice keeps each
 * search small. */
#include <stdint.h>
#include <stdlib.h>

#include "io.h"
#include "shardsearch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
		/* what the pass wrote loads and verifies */
		if (shs_proto_load(out, len, "pass output", &m, &e) != SHS_OK ||
		    shs_module_verify(m, &e) != SHS_OK)
			abort();
		shs_module_free(m);
	} else if (!err) {
		abort(); /* a failure always says why */
	}
	shs_pass_free(out);
	shs_pass_free(err);
	return 0;
}
