/* libFuzzer target: the pass options string (shs_run_options_parse) sets options or fails with
 * a message naming the option; options that parse and name no file are made ready
 * (shs_run_start: the catalog, a named plan's cluster, mesh and request) or refused with a
 * message, and freed. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "run.h"

/* Whether o names something the run would read from disk (a hardware or plan file) or load
 * (plugins): the fuzzer must not read the machine's files. */
static bool reads_files(const shs_run_options *o)
{
	size_t n = o->plan ? strlen(o->plan) : 0;

	return o->hw_file || o->n_dirs || o->n_files || o->env_plugins ||
	       (n >= strlen(".json") && !strcmp(o->plan + n - strlen(".json"), ".json"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size);
	shs_run_options o = { .spec.slices = 1 };
	shs_err e = { 0 };
	int rc = shs_run_options_parse(&o, text, &e);

	fuzz_check_failure("shs_run_options_parse", rc, &e);
	if (rc == SHS_OK && !reads_files(&o)) {
		shs_run r;

		rc = shs_run_start(&r, &o, NULL, NULL, &e);
		fuzz_check_failure("shs_run_start", rc, &e);
		shs_run_free(&r);
	}
	free(text);
	return 0;
}
