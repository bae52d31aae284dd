/* --trace FILE of annotate and evaluate: the chosen plan's predicted step as a Chrome trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "file_write.h"
#include "trace_json.h"

const char shs_cli_trace_usage[] =
	"  --trace FILE          also write the plan's predicted step as a Chrome / Perfetto\n"
	"                        trace (JSON: load it in ui.perfetto.dev or chrome://tracing)\n";

int shs_cli_trace_text(const char *cmd, const char *path, const shs_run *r, const shs_module *m,
		       char **text)
{
	shs_trace t = { 0 };
	shs_eval ev = { 0 };
	shs_err e = { 0 };
	int rc = shs_run_trace(r, m, &t, &ev, &e);

	*text = NULL;
	if (rc == SHS_OK)
		rc = shs_trace_json(&t, m, r->searched ? &r->search.cluster : &r->cluster, &ev,
				    text, &e);
	if (rc != SHS_OK) {
		fprintf(stderr, "shardsearch: %s: %s: %s\n", cmd, path, e.msg);
		rc = shs_cli_exit(rc);
	}
	shs_trace_free(&t);
	shs_eval_free(&ev);
	return rc;
}

int shs_cli_write_text(const char *cmd, const char *path, const char *text)
{
	char why[SHS_FILE_WHY_MAX];

	if (!shs_file_write(path, text, strlen(text), why, sizeof(why)))
		return SHS_EXIT_OK;
	fprintf(stderr, "shardsearch: %s: %s: %s\n", cmd, path, why);
	return SHS_EXIT_FAIL;
}
