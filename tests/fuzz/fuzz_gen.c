/* libFuzzer target: gen config files (shs_gen_config_load_json) apply to a preset or fail with
 * a message, leaving the config unchanged; a config that loaded, written as JSON
 * (shs_gen_config_json, its "kind" aside), loads back as the same config and is checked
 * (shs_gen_config_check) with a message when it cannot be built. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "gen.h"

/* c written as a config file loads onto a config of c's kind and nothing else as c. */
static void check_written(const shs_gen_config *c)
{
	json_t *first = shs_gen_config_json(c), *second;
	shs_gen_config back;
	char *text;
	shs_err e = { 0 };
	int rc;

	fuzz_require(first != NULL, "memory for the config written back", NULL);
	json_object_del(first, "kind"); /* the preset's, not a key */
	text = json_dumps(first, JSON_COMPACT);
	fuzz_require(text != NULL, "memory for the config written back", NULL);
	memset(&back, 0, sizeof(back));
	back.kind = c->kind;
	rc = shs_gen_config_load_json(fuzz_as_file((const uint8_t *)text, strlen(text)), &back,
				      &e);
	fuzz_require(rc == SHS_OK, "a written config loads back", e.msg);
	second = shs_gen_config_json(&back);
	fuzz_require(second != NULL, "memory for the config read back", NULL);
	json_object_del(second, "kind");
	fuzz_require(json_equal(first, second), "the config loads back the same", text);
	json_decref(second);
	json_decref(first);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shs_gen_config c, before;
	shs_err e = { 0 };
	int rc;

	memset(&c, 0, sizeof(c));
	fuzz_require(shs_gen_preset("llama3-8b", &c, &e) == SHS_OK, "the preset", e.msg);
	memcpy(&before, &c, sizeof(c));
	rc = shs_gen_config_load_json(fuzz_as_file(data, size), &c, &e);
	fuzz_check_failure("shs_gen_config_load_json", rc, &e);
	if (rc != SHS_OK) {
		fuzz_require(!memcmp(&c, &before, sizeof(c)), "a failed load leaves the config",
			     e.msg);
		return 0;
	}
	check_written(&c);
	rc = shs_gen_config_check(&c, &e);
	fuzz_check_failure("shs_gen_config_check", rc, &e);
	return 0;
}
