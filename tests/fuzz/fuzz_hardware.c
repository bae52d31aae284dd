/* libFuzzer target: hardware files (shs_hw_catalog_load_json) load into the built-in catalog
 * or fail with a message, leaving it unchanged; every entry of a catalog that loaded, written
 * as a hardware file (shs_hw_to_json), loads back as the same entry. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "hardware.h"

/* {"hardware": [every entry of c]}, or NULL when out of memory. */
static json_t *catalog_json(const shs_hw_catalog *c)
{
	json_t *list = json_array(), *root = json_object();
	bool ok = list && root;

	for (uint32_t k = 0; ok && k < c->n; k++)
		ok = !json_array_append_new(list, shs_hw_to_json(&c->hw[k]));
	if (ok)
		return json_object_set_new(root, "hardware", list) ? NULL : root;
	json_decref(list);
	json_decref(root);
	return NULL;
}

/* c written as a hardware file loads into the built-in catalog as the same entries. */
static void check_written(const shs_hw_catalog *c)
{
	shs_hw_catalog *back = malloc(sizeof(*back));
	json_t *first = catalog_json(c), *second;
	char *text = first ? json_dumps(first, JSON_COMPACT) : NULL;
	shs_err e = { 0 };
	int rc;

	fuzz_require(back && text, "memory for the catalog written back", NULL);
	shs_hw_catalog_builtin(back);
	rc = shs_hw_catalog_load_json(back, fuzz_as_file((const uint8_t *)text, strlen(text)),
				      &e);
	fuzz_require(rc == SHS_OK, "a written catalog loads back", e.msg);
	second = catalog_json(back);
	fuzz_require(second && json_equal(first, second), "the catalog loads back the same", text);
	json_decref(second);
	json_decref(first);
	free(text);
	free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shs_hw_catalog *c = malloc(sizeof(*c)), *builtin = malloc(sizeof(*builtin));
	shs_err e = { 0 };
	int rc;

	fuzz_require(c && builtin, "memory for two catalogs", NULL);
	shs_hw_catalog_builtin(c);
	shs_hw_catalog_builtin(builtin);
	rc = shs_hw_catalog_load_json(c, fuzz_as_file(data, size), &e);
	fuzz_check_failure("shs_hw_catalog_load_json", rc, &e);
	if (rc != SHS_OK)
		fuzz_require(!memcmp(c, builtin, sizeof(*c)), "a failed load leaves the catalog",
			     e.msg);
	else
		check_written(c);
	free(builtin);
	free(c);
	return 0;
}
