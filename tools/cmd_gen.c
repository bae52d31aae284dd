/* shardsearch gen: write the training step of a transformer preset or config as HLO. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "gen.h"

static const char usage_head[] =
	"usage: shardsearch gen PRESET [options]\n"
	"       shardsearch gen [PRESET] --config FILE.json [options]\n"
	"       shardsearch gen --list\n"
	"\n"
	"Builds the HLO module a JAX jit(train_step) writes before optimisation (full logical\n"
	"shapes, forward, backward and Adam) for a model, verifies it and prints what it holds.\n"
	"With -o it writes the module atomically (no partial file on failure); without -o it is\n"
	"a dry run that only prints the summary.\n"
	"\n"
	"The model starts from PRESET; --config FILE.json then applies the file's members on top.\n"
	"A \"preset\" member of the file names the base instead of PRESET; without PRESET the file\n"
	"must have one. Then each --set applies, in the order given.\n"
	"\n"
	"options:\n"
	"  --config FILE.json    a JSON object: optional \"preset\", then keys of --set with JSON\n"
	"                        numbers, booleans or strings\n"
	"  --set KEY=VALUE       set one field of the model (repeatable), keys below\n"
	"  --scan                layers as one while loop over stacked weights (--set scan=true)\n"
	"  -o OUT                write the module to OUT (.pb = protobuf, .hlo or .txt = HLO text)\n"
	"  --format proto|text   the format of OUT (default: its extension)\n"
	"  --json                print one JSON object: preset, name, params, matmul_params,\n"
	"                        tokens, flops, instructions, computations, scan, config (every\n"
	"                        field of the model) and, with -o, output and output_bytes\n"
	"  --list                print the preset names, one per line\n"
	"  --help                this text\n"
	"\n"
	"keys of --set and of a config file:\n"
	"  vocab, d_model, d_ff, layers      sizes (integers)\n"
	"  heads, kv_heads, head_dim         query heads, key/value heads (GQA), head size\n"
	"  seq, batch                        tokens per sequence, sequences per step\n"
	"  microbatches                      gradient accumulation: the batch as this many micro-batches\n"
	"                                    in one while loop (a lax.scan), the optimizer once (1: none)\n"
	"  experts, top_k, capacity_factor   MoE layers (experts=0: dense MLP layers)\n"
	"  shared_experts                    experts every token goes through (DeepSeekMoE): a dense\n"
	"                                    MLP of shared_experts x d_ff beside the routed ones\n"
	"  scan, gated_mlp, tied_embedding   true or false\n"
	"  dtype                             bf16 or f32-master (f32 weights, bf16 compute)\n"
	"  attention                         flash (default: the fused kernel, no [T,T] scores)\n"
	"                                    or dot (scores and softmax materialised)\n"
	"  attention_kernel                  pallas (default: splash attention, tpu_custom_call)\n"
	"                                    or cudnn (__cudnn$fmhaSoftmax[Backward]); same cost\n"
	"  norm_eps, learning_rate           numbers\n"
	"  adam_b1, adam_b2, adam_eps        numbers (Adam's betas and epsilon)\n"
	"  weight_decay, grad_clip           AdamW decay and global-norm clipping (0: off)\n"
	"  name                              the module's name ([A-Za-z0-9._-])\n"
	"batch counts sequences of seq tokens; for mlp-only it counts tokens (seq is 1).\n"
	"\n";

/* Significant digits of reals in --json: the config's 1e-06 prints as itself. */
enum { GEN_JSON_PRECISION = 15 };

static const char usage_tail[] =
	"\n"
	"example:\n"
	"  shardsearch gen mlp-only --set d_model=8192 --set d_ff=32768 --set batch=25600 -o mlp.pb\n"
	"\n"
	"exit status: 0 success; 1 unknown preset, a value the model rejects (--set or config),\n"
	"unreadable or malformed config, or a failed write; 2 bad usage (unknown option, missing\n"
	"value, two presets, --set without '=', neither PRESET nor --config)\n";


/* What the command line asks for. sets[] borrows argv's strings. */
typedef struct gen_args {
	const char *preset, *config, *out;
	const char **sets; /* "key=value" in order; caller frees the array with free() */
	int n_sets;
	shs_format format;
	bool json, list, help;
} gen_args;

static void print_usage(void)
{
	const char *const *names = shs_gen_preset_names();

	fputs(usage_head, stdout);
	fputs("presets:", stdout);
	for (int k = 0; names[k]; k++)
		printf("%s %s", k ? "," : "", names[k]);
	putchar('\n');
	fputs(usage_tail, stdout);
}

/* Fills *a from argv. Returns SHS_EXIT_OK or SHS_EXIT_USAGE (message printed). */
static int parse_args(int argc, char **argv, gen_args *a)
{
	for (int k = 1; k < argc; k++) {
		const char *s = argv[k];

		if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
			a->help = true;
		} else if (!strcmp(s, "--list")) {
			a->list = true;
		} else if (!strcmp(s, "--json")) {
			a->json = true;
		} else if (!strcmp(s, "--scan")) {
			a->sets[a->n_sets++] = "scan=true";
		} else if (!strcmp(s, "--config") || !strcmp(s, "--set") || !strcmp(s, "-o") ||
			   !strcmp(s, "--format")) {
			const char *v = k + 1 < argc ? argv[++k] : NULL;

			if (!v)
				return shs_cli_usage_error("gen", "%s needs a value", s);
			if (!strcmp(s, "--set")) {
				if (!strchr(v, '='))
					return shs_cli_usage_error("gen", "--set takes KEY=VALUE, not '%s'",
								   v);
				a->sets[a->n_sets++] = v;
			} else if (!strcmp(s, "--format")) {
				if (!shs_cli_format(v, &a->format))
					return shs_cli_usage_error("gen", "--format takes proto or text, "
								   "not '%s'", v);
			} else if (!strcmp(s, "--config")) {
				if (a->config)
					return shs_cli_usage_error("gen", "--config given twice ('%s', '%s')",
								   a->config, v);
				a->config = v;
			} else {
				if (a->out)
					return shs_cli_usage_error("gen", "-o given twice ('%s', '%s')",
								   a->out, v);
				a->out = v;
			}
		} else if (s[0] == '-' && s[1]) {
			return shs_cli_usage_error("gen", "unknown option '%s'", s);
		} else if (!a->preset) {
			a->preset = s;
		} else {
			return shs_cli_usage_error("gen", "two presets ('%s', '%s'); give one",
						   a->preset, s);
		}
	}
	if (a->help || a->list)
		return SHS_EXIT_OK;
	if (!a->preset && !a->config)
		return shs_cli_usage_error("gen", "needs PRESET or --config FILE.json");
	if (a->format != SHS_FORMAT_AUTO && !a->out)
		return shs_cli_usage_error("gen", "--format applies to -o OUT, which is missing");
	if (a->out && a->format == SHS_FORMAT_AUTO) {
		a->format = shs_format_from_path(a->out);
		if (a->format == SHS_FORMAT_AUTO)
			return shs_cli_usage_error("gen", "%s: cannot tell the output format from the "
						   "extension; use .pb, .hlo or --format", a->out);
	}
	return SHS_EXIT_OK;
}

/* The "preset" member of the config file at path into out (empty when it has none). The file
 * was read by shs_gen_config_load_json already, so a failure here only means no member. */
static void config_preset(const char *path, char *out, size_t n)
{
	json_t *root = json_load_file(path, 0, NULL);
	const char *p = json_string_value(json_object_get(root, "preset"));

	snprintf(out, n, "%s", p ? p : "");
	json_decref(root);
}

/* Applies one "key=value" to c. */
static int apply_set(shs_gen_config *c, const char *kv, shs_err *e)
{
	const char *eq = strchr(kv, '=');
	char *key = strndup(kv, (size_t)(eq - kv));
	int rc;

	if (!key)
		return shs_seterr(e, SHS_ENOMEM, "out of memory");
	rc = shs_gen_config_set(c, key, eq + 1, e);
	if (rc != SHS_OK)
		shs_err_prefix(e, "--set %s", kv);
	free(key);
	return rc;
}

/* The model the arguments describe, checked, into *c; preset receives the base preset's name.
 * Returns SHS_OK or an error with the message in e. */
static int make_config(const gen_args *a, shs_gen_config *c, char *preset, size_t n, shs_err *e)
{
	int rc = SHS_OK;

	memset(c, 0, sizeof(*c));
	snprintf(preset, n, "%s", a->preset ? a->preset : "");
	if (a->preset)
		rc = shs_gen_preset(a->preset, c, e);
	if (rc == SHS_OK && a->config) {
		char named[SHS_GEN_NAME_MAX];

		rc = shs_gen_config_load_json(a->config, c, e);
		if (rc == SHS_OK) {
			config_preset(a->config, named, sizeof(named));
			if (named[0])
				snprintf(preset, n, "%s", named);
			else if (!a->preset)
				rc = shs_seterr(e, SHS_EINVAL, "%s: no preset named (give PRESET or a "
						"\"preset\" member)", a->config);
		}
	}
	for (int k = 0; rc == SHS_OK && k < a->n_sets; k++)
		rc = apply_set(c, a->sets[k], e);
	if (rc == SHS_OK) {
		rc = shs_gen_config_check(c, e);
		if (rc != SHS_OK && c->name[0])
			shs_err_prefix(e, "%s", c->name);
	}
	return rc;
}

static const char *kind_name(shs_gen_kind k)
{
	return k == SHS_GEN_MLP_ONLY ? "mlp-only" : "transformer";
}

static const char *dtype_name(shs_gen_dtype d)
{
	return d == SHS_GEN_F32_MASTER ? "f32-master" : "bf16";
}

/* What was built and written, for the summary. */
typedef struct gen_result {
	const char *preset;
	const shs_gen_config *c;
	shs_gen_stats st;
	const char *out;
	shs_format format;
	long long out_bytes;
} gen_result;

static int print_json(const gen_result *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "preset", json_string(r->preset));
	json_object_set_new(o, "name", json_string(r->c->name));
	json_object_set_new(o, "params", json_integer((json_int_t)r->st.params));
	json_object_set_new(o, "matmul_params", json_integer((json_int_t)r->st.matmul_params));
	json_object_set_new(o, "tokens", json_integer((json_int_t)r->st.tokens));
	json_object_set_new(o, "flops", json_real(r->st.flops));
	json_object_set_new(o, "instructions", json_integer((json_int_t)r->st.instructions));
	json_object_set_new(o, "computations", json_integer(r->st.computations));
	json_object_set_new(o, "scan", json_boolean(r->c->scan));
	json_object_set_new(o, "config", shs_gen_config_json(r->c));
	if (r->out) {
		json_object_set_new(o, "output", json_string(r->out));
		json_object_set_new(o, "output_format",
				    json_string(r->format == SHS_FORMAT_PROTO ? "proto" : "text"));
		json_object_set_new(o, "output_bytes", json_integer(r->out_bytes));
	}
	return shs_cli_put_json(o, GEN_JSON_PRECISION);
}

static void print_text(const gen_result *r)
{
	const shs_gen_config *c = r->c;

	printf("model           %s (%s, %s, %s)\n", c->name, kind_name(c->kind),
	       c->scan ? "scanned" : "unrolled", dtype_name(c->dtype));
	printf("parameters      %.0f (%.4g), %.0f in matmuls\n", r->st.params, r->st.params,
	       r->st.matmul_params);
	printf("tokens          %.0f per step\n", r->st.tokens);
	printf("dot FLOPs       %.6g per step (forward + backward)\n", r->st.flops);
	printf("instructions    %llu in %u computations\n", (unsigned long long)r->st.instructions,
	       r->st.computations);
	if (r->out)
		printf("output          %s (%s, %lld bytes)\n", r->out,
		       r->format == SHS_FORMAT_PROTO ? "proto" : "text", r->out_bytes);
	else
		printf("output          none (dry run; -o OUT.pb or OUT.hlo writes it)\n");
}

/* Builds the module of c, writes it when a->out is set and prints the summary. */
static int build_and_write(const gen_args *a, const shs_gen_config *c, const char *preset,
			   shs_err *e)
{
	gen_result r = { .preset = preset, .c = c, .out = a->out, .format = a->format };
	shs_module *m = NULL;
	int rc = shs_gen_module(c, &m, &r.st, e);

	if (rc != SHS_OK)
		return shs_err_prefix(e, "%s", c->name);
	if (a->out) {
		struct stat st;

		rc = shs_module_save_file(m, a->out, a->format, e);
		if (rc != SHS_OK)
			goto out_free;
		r.out_bytes = stat(a->out, &st) == 0 ? (long long)st.st_size : -1;
	}
	if (a->json)
		rc = print_json(&r);
	else
		print_text(&r);
	if (rc != SHS_OK)
		shs_seterr(e, rc, "out of memory");
out_free:
	shs_module_free(m);
	return rc;
}

int shs_cmd_gen(int argc, char **argv)
{
	gen_args a = { .format = SHS_FORMAT_AUTO };
	shs_gen_config c;
	char preset[SHS_GEN_NAME_MAX];
	shs_err e = { 0 };
	int status;

	a.sets = calloc((size_t)argc, sizeof(*a.sets));
	if (!a.sets) {
		fprintf(stderr, "shardsearch: gen: out of memory\n");
		return SHS_EXIT_FAIL;
	}
	status = parse_args(argc, argv, &a);
	if (status != SHS_EXIT_OK)
		goto out_free;
	if (a.help) {
		print_usage();
	} else if (a.list) {
		for (const char *const *n = shs_gen_preset_names(); *n; n++)
			puts(*n);
	} else if (make_config(&a, &c, preset, sizeof(preset), &e) != SHS_OK ||
		   build_and_write(&a, &c, preset, &e) != SHS_OK) {
		fprintf(stderr, "shardsearch: gen: %s\n", e.msg);
		status = SHS_EXIT_FAIL;
	}
out_free:
	free(a.sets);
	return status;
}
