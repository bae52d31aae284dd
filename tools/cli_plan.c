/* Options and set-up shared by the commands that make plans: annotate and explain. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_plan.h"

enum { MAX_SHOWN_WARNINGS = 20 };

const char shs_cli_plan_usage[] =
	"  --mesh AXIS=N,...     the device mesh: named logical axes and sizes, major first\n"
	"                        (data, fsdp, tensor, sequence, expert), e.g. fsdp=16,tensor=4\n"
	"  --plan NAME|FILE      dp, fsdp, tp, fsdp+tp, or a plan file (.json: mesh, base, rules)\n"
	"  --plugins DIR         also load the strategy plugins in DIR (repeatable); the built-in\n"
	"                        ones and SHARDSEARCH_PLUGIN_PATH's folders always load\n"
	"  --ignore-hints        drop the module's Sharding custom-call constraints\n"
	"  --quiet               no warnings\n";

static unsigned n_warnings;

static void on_warning(void *user, const char *msg)
{
	const shs_cli_plan_opts *o = user;

	if (!o->quiet && n_warnings < MAX_SHOWN_WARNINGS)
		fprintf(stderr, "shardsearch: warning: %s\n", msg);
	n_warnings++;
}

void shs_cli_warnings_done(void)
{
	if (n_warnings > MAX_SHOWN_WARNINGS)
		fprintf(stderr, "shardsearch: %u more warnings not shown\n",
			n_warnings - MAX_SHOWN_WARNINGS);
}

int shs_cli_plan_option(const char *cmd, int argc, char **argv, int *k, shs_cli_plan_opts *o,
			const char *head, const char *tail)
{
	const char *a = argv[*k];

	if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
		fputs(head, stdout);
		fputs(shs_cli_plan_usage, stdout);
		fputs(tail, stdout);
		return SHS_CLI_HELP;
	}
	if (!strcmp(a, "--ignore-hints")) {
		o->ignore_hints = true;
		return 1;
	}
	if (!strcmp(a, "--quiet")) {
		o->quiet = true;
		return 1;
	}
	if (strcmp(a, "--mesh") && strcmp(a, "--plan") && strcmp(a, "--plugins"))
		return 0;
	if (*k + 1 >= argc) {
		shs_cli_usage_error(cmd, "%s needs a value", a);
		return -1;
	}
	(*k)++;
	if (!strcmp(a, "--mesh")) {
		o->mesh = argv[*k];
	} else if (!strcmp(a, "--plan")) {
		o->plan = argv[*k];
	} else if (o->n_dirs == SHS_CLI_MAX_PLUGIN_DIRS) {
		shs_cli_usage_error(cmd, "more than %d --plugins folders", SHS_CLI_MAX_PLUGIN_DIRS);
		return -1;
	} else {
		o->dirs[o->n_dirs++] = argv[*k];
	}
	return 1;
}

shs_host *shs_cli_host(const shs_cli_plan_opts *o)
{
	shs_host *h = shs_host_new(on_warning, (void *)o);
	shs_err e = { 0 };

	if (!h) {
		fprintf(stderr, "shardsearch: out of memory\n");
		return NULL;
	}
	if (shs_host_load_default(h, o->dirs, &e) < 0) {
		fprintf(stderr, "shardsearch: %s\n", e.msg);
		shs_host_free(h);
		return NULL;
	}
	return h;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

bool shs_cli_request(const char *cmd, const shs_cli_plan_opts *o, shs_plan_request *r)
{
	shs_err e = { 0 };
	int rc = SHS_OK;

	memset(r, 0, sizeof(*r));
	r->ignore_hints = o->ignore_hints;
	r->warn = on_warning;
	r->warn_user = (void *)o;
	r->kind = SHS_PLAN_RULES;
	if (o->mesh)
		rc = shs_plan_parse_mesh(r, o->mesh, &e);
	if (rc == SHS_OK && o->plan && ends_with(o->plan, ".json"))
		rc = shs_plan_load_json(r, o->plan, &e);
	else if (rc == SHS_OK && o->plan)
		rc = shs_plan_parse_kind(r, o->plan, &e);
	if (rc == SHS_OK && !r->mesh.n_axes)
		rc = shs_seterr(&e, SHS_EINVAL, "no mesh: give --mesh AXIS=N,... (or a plan file "
				"with a \"mesh\")");
	if (rc != SHS_OK) {
		fprintf(stderr, "shardsearch: %s: %s\n", cmd, e.msg);
		return false;
	}
	return true;
}
