/* The public context (shardsearch.h): a module, options, plugins and the search's result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "arena.h"
#include "buf.h"
#include "io.h"
#include "report.h"
#include "run.h"
#include "shardsearch.h"

struct shs_context {
	shs_arena *a;              /* copies of option values and plugin paths */
	shs_run_options o;
	shs_module *m;
	double load_s;             /* how long loading it took */
	shs_run run;               /* the last search: its plugins, plan and result */
	bool searched;
	shs_warning_fn warn;
	void *warn_user;
	shs_buf text;              /* the last sharding text handed out */
	char *report;              /* the last report handed out (malloc'ed) */
	shs_err e;
};

/* Records a failure on ctx; returns code. */
static int fail(shs_context *ctx, int code, const char *msg)
{
	return shs_seterr(&ctx->e, code, "%s", msg);
}

static void forget_result(shs_context *ctx)
{
	shs_run_free(&ctx->run);
	ctx->searched = false;
}

shs_context *shs_context_new(void)
{
	shs_context *ctx = calloc(1, sizeof(*ctx));

	if (ctx && !(ctx->a = shs_arena_new(0))) {
		free(ctx);
		return NULL;
	}
	if (ctx)
		ctx->o.spec.slices = 1;
	return ctx;
}

void shs_context_free(shs_context *ctx)
{
	if (!ctx)
		return;
	forget_result(ctx);
	shs_module_free(ctx->m);
	shs_buf_free(&ctx->text);
	free(ctx->report);
	shs_arena_free(ctx->a);
	free(ctx);
}

const char *shs_context_error(const shs_context *ctx)
{
	return ctx ? ctx->e.msg : "no context";
}

void shs_context_set_warnings(shs_context *ctx, shs_warning_fn fn, void *user)
{
	if (!ctx)
		return;
	ctx->warn = fn;
	ctx->warn_user = user;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Takes module m (NULL after a failure), loaded since start, into ctx, verified. */
static int take_module(shs_context *ctx, shs_module *m, int rc, double start)
{
	if (rc == SHS_OK)
		rc = shs_module_verify(m, &ctx->e);
	if (rc != SHS_OK) {
		shs_module_free(m);
		return rc;
	}
	forget_result(ctx);
	shs_module_free(ctx->m);
	ctx->m = m;
	ctx->load_s = now_s() - start;
	ctx->e = (shs_err){ 0 };
	return SHS_OK;
}

int shs_context_load(shs_context *ctx, const uint8_t *buf, size_t len, const char *origin)
{
	shs_module *m = NULL;
	double start = now_s();
	int rc;

	if (!ctx)
		return SHS_EINVAL;
	if (!buf)
		return fail(ctx, SHS_EINVAL, "load: no input");
	rc = shs_module_load_bytes(buf, len, origin ? origin : "input", SHS_FORMAT_AUTO, &m,
				   &ctx->e);
	return take_module(ctx, m, rc, start);
}

int shs_context_load_file(shs_context *ctx, const char *path)
{
	shs_module *m = NULL;
	double start = now_s();
	int rc;

	if (!ctx)
		return SHS_EINVAL;
	if (!path)
		return fail(ctx, SHS_EINVAL, "load: no path");
	rc = shs_module_load_file(path, SHS_FORMAT_AUTO, &m, &ctx->e);
	return take_module(ctx, m, rc, start);
}

int shs_context_set(shs_context *ctx, const char *key, const char *value)
{
	const char *copy;

	if (!ctx)
		return SHS_EINVAL;
	if (!key)
		return fail(ctx, SHS_EINVAL, "set: no option name");
	copy = value ? shs_arena_strdup(ctx->a, value) : NULL;
	if (value && !copy)
		return fail(ctx, SHS_ENOMEM, "set: out of memory");
	if (shs_run_option_set(&ctx->o, key, copy, &ctx->e) != SHS_OK)
		return shs_err_prefix(&ctx->e, "option %s%s%s", key, value ? "=" : "",
				      value ? value : "");
	return SHS_OK;
}

/* Whether ctx's options name a mesh with a stage axis. */
static bool staged(const shs_context *ctx)
{
	return ctx->o.mesh && strstr(ctx->o.mesh, "stage=");
}

int shs_context_configure(shs_context *ctx, const char *options)
{
	char *copy;

	if (!ctx)
		return SHS_EINVAL;
	if (!options)
		return SHS_OK;
	if (!(copy = shs_arena_strdup(ctx->a, options)))
		return fail(ctx, SHS_ENOMEM, "options: out of memory");
	int rc = shs_run_options_parse(&ctx->o, copy, &ctx->e);
	/* a compiler takes the module it is given: one with pipeline stages must be the pipelined
	 * program, which is written for a named plan's GPipe (shs_run_annotate), not a search's */
	if (rc == SHS_OK && ctx->o.stages)
		return fail(ctx, SHS_EINVAL, "options: a search over pipeline stages (stages) is "
			    "not written as a pipelined program; the library and the pass leave it "
			    "out (shardsearch annotate --stages reports it)");
	if (rc == SHS_OK && staged(ctx) &&
	    (!ctx->o.plan || ctx->o.eval.pipeline != SHS_PIPE_GPIPE ||
	     ctx->o.eval.virtual_stages > 1))
		return fail(ctx, SHS_EINVAL, "options: a stage mesh axis is written as the "
			    "pipelined program for a named plan with pipeline=gpipe only");
	return rc;
}

int shs_context_add_plugin(shs_context *ctx, const char *path)
{
	if (!ctx)
		return SHS_EINVAL;
	if (!path)
		return fail(ctx, SHS_EINVAL, "plugin: no path");
	return shs_context_set(ctx, "plugin", path);
}

static void on_warning(void *user, const char *msg)
{
	const shs_context *ctx = user;

	if (ctx->warn)
		ctx->warn(ctx->warn_user, msg);
}

int shs_context_search(shs_context *ctx)
{
	int rc;

	if (!ctx)
		return SHS_EINVAL;
	if (!ctx->m)
		return fail(ctx, SHS_EINVAL, "search: no module loaded");
	if (!ctx->o.spec.hardware && !ctx->o.plan)
		return fail(ctx, SHS_EINVAL, "search: no hardware (option hardware=NAME)");
	forget_result(ctx);
	rc = shs_run_start(&ctx->run, &ctx->o, on_warning, ctx, &ctx->e);
	if (rc == SHS_OK)
		rc = shs_run_microbatch(&ctx->run, &ctx->m, &ctx->e);
	if (rc == SHS_OK)
		rc = shs_run_annotate(&ctx->run, &ctx->m, &ctx->e);
	if (rc == SHS_OK && staged(ctx) && !ctx->run.pipeline_written)
		rc = shs_seterr(&ctx->e, SHS_EINVAL, "pipeline: not written (%s)",
				ctx->run.pipeline_refused[0] ? ctx->run.pipeline_refused :
							       "a stage axis of one device");
	/* nothing fits: the result and report stay, to say what would */
	ctx->searched = (rc == SHS_OK || rc == SHS_ENOFIT) && ctx->run.searched;
	if (rc != SHS_OK && rc != SHS_ENOFIT)
		forget_result(ctx);
	return rc;
}

int shs_context_result(const shs_context *ctx, shs_result *out)
{
	const shs_search_try *b;
	shs_result r = { .struct_size = sizeof(r) };

	if (!ctx || !ctx->searched || !out || out->struct_size < sizeof(uint32_t))
		return SHS_EINVAL;
	b = &ctx->run.search.best;
	r.mesh = b->mesh;
	r.plan = b->plan;
	r.bound = b->bound;
	r.step_time_s = b->step_time_s;
	r.mfu = b->mfu;
	r.memory_bytes = b->memory_bytes;
	r.hbm_bytes = ctx->run.search.eval.hbm_bytes;
	r.fits = b->fits;
	r.zero_stage = ctx->run.search.zero_stage;
	r.search_time_s = ctx->run.search.search_time_s;
	r.candidates = ctx->run.search.n_tries;
	r.partial = ctx->run.search.partial;
	memcpy(out, &r, out->struct_size < sizeof(r) ? out->struct_size : sizeof(r));
	return SHS_OK;
}

/* The text report, printed into a memory stream; NULL when out of memory. */
static char *text_report(const shs_context *ctx)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	if (!f)
		return NULL;
	shs_report_print(f, ctx->m, &ctx->run.search, ctx->load_s);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

const char *shs_context_report(shs_context *ctx, bool json)
{
	json_t *o;

	if (!ctx)
		return NULL;
	free(ctx->report);
	ctx->report = NULL;
	if (!ctx->searched) {
		fail(ctx, SHS_EINVAL, "report: no search yet");
		return NULL;
	}
	if (!json) {
		ctx->report = text_report(ctx);
	} else if ((o = shs_report_json(ctx->m, &ctx->run.search, ctx->load_s))) {
		ctx->report = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
					 JSON_REAL_PRECISION(SHS_REPORT_JSON_DIGITS));
		json_decref(o);
	}
	if (!ctx->report)
		fail(ctx, SHS_ENOMEM, "report: out of memory");
	return ctx->report;
}

const char *shs_context_sharding(shs_context *ctx, const char *name)
{
	if (!ctx || !ctx->m || !name)
		return NULL;
	for (uint32_t c = 0; c < ctx->m->n_comps; c++)
		for (uint32_t i = 0; i < ctx->m->comps[c]->n_instrs; i++) {
			const shs_instr *in = ctx->m->comps[c]->instrs[i];
			if (!in->name || strcmp(in->name, name) || !in->sharding)
				continue;
			shs_buf_reset(&ctx->text);
			shs_sharding_print(&ctx->text, in->sharding);
			return ctx->text.oom || !ctx->text.len ? NULL : ctx->text.data;
		}
	return NULL;
}

int shs_context_write(shs_context *ctx, uint8_t **out, size_t *out_len)
{
	if (!ctx)
		return SHS_EINVAL;
	if (!out || !out_len)
		return fail(ctx, SHS_EINVAL, "write: NULL output");
	*out = NULL;
	*out_len = 0;
	if (!ctx->m)
		return fail(ctx, SHS_EINVAL, "write: no module loaded");
	return shs_proto_save(ctx->m, ctx->m->from_hlo_proto, out, out_len, &ctx->e);
}

int shs_context_write_file(shs_context *ctx, const char *path)
{
	if (!ctx)
		return SHS_EINVAL;
	if (!ctx->m || !path)
		return fail(ctx, SHS_EINVAL, "write: no module loaded or no path");
	return shs_module_save_file(ctx->m, path, SHS_FORMAT_AUTO, &ctx->e);
}
