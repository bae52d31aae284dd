/* shardsearch convert: read a module in one format and write it in another. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: shardsearch convert IN OUT [options]\n"
	"\n"
	"Reads IN (binary HloProto / HloModuleProto or HLO text), verifies it, and writes OUT. The\n"
	"formats come from the extensions (.pb = protobuf; .hlo or .txt = HLO text) unless given.\n"
	"Every field is kept, including protobuf fields this version does not know. OUT is written\n"
	"atomically: on any error no OUT file is left behind.\n"
	"\n"
	"options:\n"
	"  --from proto|text     the format of IN (default: extension, else content)\n"
	"  --to proto|text       the format of OUT (default: extension)\n"
	"  --module-proto        write a bare HloModuleProto (default: what IN was; HloModuleProto\n"
	"                        for text input)\n"
	"  --hlo-proto           write an HloProto wrapper, as XLA's dumps do\n"
	"  --style plain|percent HLO text names as `name` (plain) or `%%name` with operand shapes\n"
	"                        and signatures (percent); default: as IN\n"
	"  --no-verify           skip the verifier\n"
	"  --force               allow OUT to be the same file as IN\n"
	"  --verbose             say what protobuf output leaves out: the header's module\n"
	"                        configuration (num_partitions, replica_count,\n"
	"                        allow_spmd_sharding_propagation_to_*), which XLA keeps in\n"
	"                        HloModuleConfig rather than HloModuleProto\n"
	"  --help                this text\n";

/* Names a header attribute that protobuf output leaves out (ctx: the output path). */
static void note_dropped(const char *name, void *ctx)
{
	fprintf(stderr, "shardsearch: note: %s: header attribute '%s' is module configuration, "
		"which HloModuleProto does not hold: left out, as XLA leaves it out\n",
		(const char *)ctx, name);
}

int shs_cmd_convert(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	shs_format from = SHS_FORMAT_AUTO, to = SHS_FORMAT_AUTO;
	int wrapper = -1; /* -1: as the input */
	const char *style = NULL;
	bool verify = true, force = false, verbose = false;
	shs_module *m;
	shs_err e = { 0 };
	int rc;

	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return SHS_EXIT_OK;
		} else if (!strcmp(a, "--from") || !strcmp(a, "--to") || !strcmp(a, "--style")) {
			if (k + 1 >= argc)
				return shs_cli_usage_error("convert", "%s needs a value", a);
			if (!strcmp(a, "--style")) {
				style = argv[++k];
				if (strcmp(style, "plain") && strcmp(style, "percent"))
					return shs_cli_usage_error("convert", "--style takes plain or percent, not '%s'", style);
			} else if (!shs_cli_format(argv[k + 1], !strcmp(a, "--from") ? &from : &to)) {
				return shs_cli_usage_error("convert", "%s takes proto or text, not '%s'", a, argv[k + 1]);
			} else {
				k++;
			}
		} else if (!strcmp(a, "--module-proto")) {
			wrapper = 0;
		} else if (!strcmp(a, "--hlo-proto")) {
			wrapper = 1;
		} else if (!strcmp(a, "--no-verify")) {
			verify = false;
		} else if (!strcmp(a, "--force")) {
			force = true;
		} else if (!strcmp(a, "--verbose")) {
			verbose = true;
		} else if (a[0] == '-' && a[1]) {
			return shs_cli_usage_error("convert", "unknown option '%s'", a);
		} else if (!in) {
			in = a;
		} else if (!out) {
			out = a;
		} else {
			return shs_cli_usage_error("convert", "too many arguments ('%s')", a);
		}
	}
	if (!in || !out)
		return shs_cli_usage_error("convert", "needs IN and OUT");
	if (to == SHS_FORMAT_AUTO)
		to = shs_format_from_path(out);
	if (to == SHS_FORMAT_AUTO)
		return shs_cli_usage_error("convert", "%s: cannot tell the output format from the extension; use .pb, .hlo or --to", out);
	if (!force && shs_cli_same_file(in, out))
		return shs_cli_usage_error("convert", "%s: refusing to overwrite the input (use --force)", out);
	m = shs_cli_load(in, from, verify);
	if (!m)
		return SHS_EXIT_FAIL;
	if (wrapper >= 0)
		m->from_hlo_proto = wrapper;
	if (style) {
		bool percent = !strcmp(style, "percent");

		m->style.percent = percent;
		m->style.operand_shapes = percent;
		m->style.signatures = percent;
	}
	rc = shs_module_save_file(m, out, to, &e);
	if (rc != SHS_OK)
		fprintf(stderr, "shardsearch: %s\n", e.msg);
	else if (verbose && to == SHS_FORMAT_PROTO)
		shs_proto_config_attrs(m, note_dropped, (void *)out);
	shs_module_free(m);
	return rc == SHS_OK ? SHS_EXIT_OK : SHS_EXIT_FAIL;
}
