/* The compiler-pass entry point: one serialized module in, the same message type annotated out. */
#include <stdlib.h>
#include <string.h>

#include "shardsearch.h"

int shs_pass_run(const uint8_t *in, size_t in_len, const char *options, uint8_t **out,
		 size_t *out_len, char **err)
{
	shs_context *ctx = NULL;
	const char *why = NULL;
	int rc = -1;

	if (out)
		*out = NULL;
	if (out_len)
		*out_len = 0;
	if (err)
		*err = NULL;
	if (!out || !out_len || !err)
		return -1;
	if (!in || !in_len)
		why = "shardsearch pass: empty input";
	else if (!(ctx = shs_context_new()))
		why = "shardsearch pass: out of memory";
	if (!why && (rc = shs_context_configure(ctx, options)) == 0 &&
	    (rc = shs_context_load(ctx, in, in_len, "pass input")) == 0 &&
	    (rc = shs_context_search(ctx)) == 0)
		rc = shs_context_write(ctx, out, out_len);
	if (!why && rc)
		why = shs_context_error(ctx);
	if (why) {
		*err = strdup(why); /* NULL when out of memory: the non-zero status still says it */
		rc = rc ? rc : -1;
	}
	shs_context_free(ctx);
	return rc;
}

void shs_pass_free(void *p)
{
	free(p);
}
