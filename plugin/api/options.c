/* Options of a search run by name (annotate's long option names), from the command line or a
 * "key=value;key=value" string. */
#include <stdlib.h>
#include <string.h>

#include "run.h"

enum { DECIMAL = 10 };

static const char *const flags[] = { "no-overlap", "no-fusion", "exhaustive", "ignore-hints",
				     "plugin-path-env", "stages", "force", "gathers-hidden", NULL };
static const char *const valued[] = { "hardware", "hardware-file", "topology", "devices",
				      "slices", "schedule", "fusion", "remat", "prefetch", "mesh",
				      "plan",
				      "threads", "time-budget", "plugins", "plugin",
				      "microbatches", "blocking", "pipeline", "virtual-stages",
				      NULL };

/* The index of s in names (NULL-terminated), or -1. */
static int choice(const char *s, const char *const *names)
{
	for (int k = 0; names[k]; k++)
		if (!strcmp(s, names[k]))
			return k;
	return -1;
}

static bool count_arg(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v = strtoll(s, &end, DECIMAL);

	if (!*s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool shs_run_option_is_flag(const char *key, bool *known)
{
	bool flag = choice(key, flags) >= 0;

	*known = flag || choice(key, valued) >= 0;
	return flag;
}

static int set_flag(shs_run_options *o, const char *key, const char *value, shs_err *e)
{
	if (value && *value && strcmp(value, "true"))
		return shs_seterr(e, SHS_EINVAL, "takes no value");
	if (!strcmp(key, "no-overlap"))
		o->eval.no_overlap = true;
	else if (!strcmp(key, "no-fusion"))
		o->eval.fusion = SHS_FUSION_NONE;
	else if (!strcmp(key, "exhaustive"))
		o->exhaustive = true;
	else if (!strcmp(key, "stages"))
		o->stages = true;
	else if (!strcmp(key, "force"))
		o->force = true;
	else if (!strcmp(key, "gathers-hidden"))
		o->gathers_hidden = true;
	else if (!strcmp(key, "plugin-path-env"))
		o->env_plugins = true;
	else
		o->ignore_hints = true;
	return SHS_OK;
}

/* A count from 1 to max for option key into *out; SHS_EINVAL saying the range otherwise. */
static int bounded(const char *v, int64_t max, int64_t *out, shs_err *e)
{
	return count_arg(v, 1, max, out) ? SHS_OK :
	       shs_seterr(e, SHS_EINVAL, "takes a count from 1 to %lld", (long long)max);
}

/* The options with a numeric or enumerated value. */
static int set_number(shs_run_options *o, const char *key, const char *v, shs_err *e)
{
	static const char *const schedules[] = { "events", "segments", NULL };
	static const char *const fusions[] = { "xla", "kernels", "none", NULL };
	int64_t n = 0;
	int c, rc = SHS_OK;

	if (!strcmp(key, "devices") || !strcmp(key, "slices")) {
		if (!count_arg(v, 1, INT64_MAX, !strcmp(key, "devices") ? &o->spec.devices :
									 &o->spec.slices))
			rc = shs_seterr(e, SHS_EINVAL, "takes a count >= 1");
	} else if (!strcmp(key, "schedule")) {
		if ((c = choice(v, schedules)) < 0)
			rc = shs_seterr(e, SHS_EINVAL, "takes events or segments");
		else
			o->eval.schedule = (shs_schedule)c;
	} else if (!strcmp(key, "fusion")) {
		if ((c = choice(v, fusions)) < 0)
			rc = shs_seterr(e, SHS_EINVAL, "takes xla, kernels or none");
		else
			o->eval.fusion = (shs_fusion)c;
	} else if (!strcmp(key, "remat")) {
		if (!shs_remat_from_name(v, &o->eval.remat))
			rc = shs_seterr(e, SHS_EINVAL, "takes none, attention, dots, offload or full");
		else
			o->remat_given = true;
	} else if (!strcmp(key, "prefetch")) {
		if ((rc = bounded(v, SHS_MAX_PREFETCH, &n, e)) == SHS_OK)
			o->eval.prefetch_depth = (uint32_t)n;
	} else if (!strcmp(key, "microbatches")) {
		rc = bounded(v, SHS_MAX_MICROBATCHES, &o->microbatches, e);
	} else if (!strcmp(key, "pipeline")) {
		if (!shs_pipe_schedule_from_name(v, &o->eval.pipeline))
			rc = shs_seterr(e, SHS_EINVAL, "takes 1f1b, gpipe or interleaved");
		else if (o->eval.pipeline != SHS_PIPE_INTERLEAVED && !o->eval.virtual_stages)
			o->eval.virtual_stages = 1; /* one chunk a stage: no interleaving */
	} else if (!strcmp(key, "virtual-stages")) {
		if ((rc = bounded(v, SHS_MAX_VIRTUAL_STAGES, &n, e)) == SHS_OK)
			o->eval.virtual_stages = (uint32_t)n;
	} else if (!strcmp(key, "threads")) {
		if ((rc = bounded(v, SHS_MAX_THREADS, &n, e)) == SHS_OK)
			o->threads = (uint32_t)n;
	} else {
		char *end;
		o->time_budget_s = strtod(v, &end);
		if (*end || end == v || !(o->time_budget_s > 0))
			rc = shs_seterr(e, SHS_EINVAL, "takes seconds > 0");
	}
	return rc;
}

/* Appends value to list (n entries, at most max) or says the option is given too often. */
static int add_to(const char **list, uint32_t *n, uint32_t max, const char *what,
		  const char *value, shs_err *e)
{
	if (*n >= max)
		return shs_seterr(e, SHS_EINVAL, "is given too often (at most %u %s)", max, what);
	list[(*n)++] = value;
	return SHS_OK;
}

int shs_run_option_set(shs_run_options *o, const char *key, const char *value, shs_err *e)
{
	bool known;

	if (shs_run_option_is_flag(key, &known))
		return set_flag(o, key, value, e);
	if (!known)
		return shs_seterr(e, SHS_EINVAL, "unknown option");
	if (!value || !*value)
		return shs_seterr(e, SHS_EINVAL, "needs a value");
	if (!strcmp(key, "hardware"))
		o->spec.hardware = value;
	else if (!strcmp(key, "hardware-file"))
		o->hw_file = value;
	else if (!strcmp(key, "topology"))
		o->spec.topology = value;
	else if (!strcmp(key, "mesh"))
		o->mesh = value;
	else if (!strcmp(key, "plan"))
		o->plan = value;
	else if (!strcmp(key, "blocking"))
		o->eval.blocking = value;
	else if (!strcmp(key, "plugins"))
		return add_to(o->dirs, &o->n_dirs, SHS_OPTIONS_MAX_DIRS, "folders", value, e);
	else if (!strcmp(key, "plugin"))
		return add_to(o->files, &o->n_files, SHS_OPTIONS_MAX_FILES, "files", value, e);
	else
		return set_number(o, key, value, e);
	return SHS_OK;
}

int shs_run_options_parse(shs_run_options *o, char *text, shs_err *e)
{
	char *save = NULL;
	int rc = SHS_OK;

	for (char *part = strtok_r(text, ";", &save); part && rc == SHS_OK;
	     part = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(part, '=');
		const char *key = part, *value = NULL;
		if (eq) {
			*eq = '\0';
			value = eq + 1;
		}
		rc = shs_run_option_set(o, key, value, e);
		if (rc != SHS_OK)
			shs_err_prefix(e, "option %s%s%s", key, value ? "=" : "", value ? value : "");
	}
	return rc;
}
