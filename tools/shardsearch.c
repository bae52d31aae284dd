/* The shardsearch command: dispatches to its subcommands. */
#include <jansson.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "file_write.h"
#include "shardsearch.h"

static const char usage[] =
	"usage: shardsearch COMMAND [ARGS...]\n"
	"\n"
	"Reads XLA HLO modules (binary HloProto / HloModuleProto, or HLO text) and works on them.\n"
	"\n"
	"commands:\n"
	"  convert IN OUT   read a module and write it back, as protobuf (.pb) or HLO text (.hlo)\n"
	"  info FILE        what a module holds: computations, instructions, opcodes, parameter\n"
	"                   bytes, dot FLOPs per step, distinct computations (--json for JSON)\n"
	"  annotate IN --mesh AXIS=N,... --plan NAME|FILE -o OUT\n"
	"                   shard a module by a plan (dp, fsdp, tp, fsdp+tp, or rules) and write\n"
	"                   the XLA sharding annotations\n"
	"  evaluate IN --hardware NAME --topology AxBxC --mesh AXIS=N@PHYS,... --plan NAME\n"
	"                   predict the step time, exposed communication and memory of a plan\n"
	"  hardware [NAME]  the hardware catalog: every entry as a table, or NAME in full (peaks per\n"
	"                   width, HBM, links, latencies, pod, hosts, DCN; --json, --hardware-file)\n"
	"  plot IN --hardware NAME --topology AxBxC -o OUT.svg\n"
	"                   step time and memory against the tensor x fsdp (x stage) degrees: a\n"
	"                   table and an SVG with the fits / does-not-fit boundary\n"
	"  explain IN --mesh AXIS=N,... --op NAME\n"
	"                   the candidates every strategy plugin proposes for one instruction\n"
	"  gen PRESET -o OUT  write the training step of a transformer preset (or --config\n"
	"                   FILE.json) as HLO, before optimisation (gen --help for presets)\n"
	"\n"
	"  shardsearch COMMAND --help   options of one command\n"
	"  shardsearch --version        the version\n"
	"\n"
	"exit status: 0 success, 1 bad input or failed operation, 2 bad usage, 3 annotate: no plan\n"
	"fits in HBM (nothing written; the report says what would)\n";

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "convert", shs_cmd_convert },
	{ "info", shs_cmd_info },
	{ "gen", shs_cmd_gen },
	{ "annotate", shs_cmd_annotate },
	{ "explain", shs_cmd_explain },
	{ "evaluate", shs_cmd_evaluate },
	{ "hardware", shs_cmd_hardware },
	{ "plot", shs_cmd_plot },
};

bool shs_cli_format(const char *s, shs_format *fmt)
{
	if (!strcmp(s, "proto") || !strcmp(s, "pb"))
		*fmt = SHS_FORMAT_PROTO;
	else if (!strcmp(s, "text") || !strcmp(s, "hlo"))
		*fmt = SHS_FORMAT_TEXT;
	else
		return false;
	return true;
}

shs_module *shs_cli_load(const char *path, shs_format fmt, bool verify)
{
	shs_module *m = NULL;
	shs_err e = { 0 };
	int rc = shs_module_load_file(path, fmt, &m, &e);

	if (rc == SHS_OK && verify) {
		rc = shs_module_verify(m, &e);
		if (rc != SHS_OK)
			shs_err_prefix(&e, "%s", path);
	}
	if (rc != SHS_OK) {
		fprintf(stderr, "shardsearch: %s\n", e.msg);
		shs_module_free(m);
		return NULL;
	}
	return m;
}

bool shs_cli_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int shs_cli_put_json(json_t *o, int precision)
{
	char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
					    JSON_REAL_PRECISION(precision)) : NULL;

	json_decref(o);
	if (!s)
		return SHS_ENOMEM;
	puts(s);
	free(s);
	return SHS_OK;
}

int shs_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "shardsearch: %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see shardsearch %s --help)\n", cmd);
	return SHS_EXIT_USAGE;
}

/* A search makes and frees each candidate plan's working memory (hundreds of MB for an unrolled
 * 80-layer model, candidate lists of a few MB per instruction): the command keeps freed memory
 * for the next plan rather than returning it to the system and faulting it back in (a quarter
 * of the search's time on such a model). Blocks up to HEAP_BLOCK_BYTES come from the heap, not
 * from mmap, so that they too are reused (glibc's own threshold rises only after a free). A
 * process that loads the library as a pass keeps its own malloc settings. */
static const int KEEP_FREED_BYTES = 1 << 30;
static const int HEAP_BLOCK_BYTES = 32 << 20; /* glibc's largest mmap threshold on 64 bits */

int main(int argc, char **argv)
{
	mallopt(M_TRIM_THRESHOLD, KEEP_FREED_BYTES);
	mallopt(M_MMAP_THRESHOLD, HEAP_BLOCK_BYTES);
	shs_file_write_clean_on_signals();
	if (argc < 2) {
		fputs(usage, stderr);
		return SHS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return SHS_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("shardsearch %s\n", shs_version());
		return SHS_EXIT_OK;
	}
	for (size_t k = 0; k < sizeof(commands) / sizeof(commands[0]); k++)
		if (!strcmp(argv[1], commands[k].name))
			return commands[k].run(argc - 1, argv + 1);
	fprintf(stderr, "shardsearch: unknown command '%s'\n\n%s", argv[1], usage);
	return SHS_EXIT_USAGE;
}
