/* shardsearch info: what a module holds, as text or one JSON object. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "manual.h"

static const char usage[] =
	"usage: shardsearch info FILE [--json] [--from proto|text] [--no-verify]\n"
	"\n"
	"Prints what FILE holds: computations, instructions, the opcode histogram, the bytes of the\n"
	"entry computation's parameters, the dot FLOPs of one execution of the entry computation\n"
	"(while bodies counted by their trip count when the loop condition shows it) and the number\n"
	"of structurally distinct computations; and the instructions of shard_map's manual regions\n"
	"(their shapes, and so their FLOPs, are one device's) and of its regions manual over only\n"
	"some axes (shapes of one manual group: shard_map with auto axes).\n"
	"\n"
	"  --json   one JSON object with the keys module, format, computations, instructions,\n"
	"           opcodes (opcode -> count), parameters, parameter_bytes, dot_flops,\n"
	"           unknown_trip_counts, distinct_computations, manual_instructions,\n"
	"           partly_manual_instructions\n";

enum { LINE_WIDTH = 100, INFO_JSON_PRECISION = 17 /* exact counts */ };

typedef struct facts {
	const shs_module *m;
	uint64_t counts[SHS_OP_COUNT];
	uint64_t instructions;
	uint32_t params;
	int64_t param_bytes;
	double dot_flops;
	uint32_t unknown_loops;
	uint32_t distinct;
	uint64_t manual;   /* instructions in shard_map's regions */
	uint64_t partial;  /* ... in its regions manual over only some axes (auto axes) */
} facts;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int gather(const shs_module *m, facts *f, shs_err *e)
{
	const shs_computation *entry = shs_module_entry(m);
	shs_manual mm;
	uint64_t *hashes;
	int rc;

	f->m = m;
	f->instructions = shs_opcode_histogram(m, f->counts);
	f->params = 0;
	for (uint32_t j = 0; j < entry->n_instrs; j++)
		f->params += entry->instrs[j]->op == SHS_OP_PARAMETER;
	f->param_bytes = shs_entry_param_bytes(m);
	f->dot_flops = shs_comp_dot_flops(m, entry, &f->unknown_loops);
	if (f->dot_flops < 0 || shs_manual_make(m, &mm, e) != SHS_OK)
		return shs_seterr(e, SHS_ENOMEM, "out of memory");
	f->manual = f->partial = 0;
	for (uint32_t c = 0; c < m->n_comps; c++)
		for (uint32_t i = 0; i < m->comps[c]->n_instrs; i++) {
			f->manual += shs_manual_is(&mm, c, i);
			f->partial += shs_manual_entry(&mm, c, i) != NULL;
		}
	shs_manual_free(&mm);
	hashes = calloc(m->n_comps ? m->n_comps : 1, sizeof(*hashes));
	if (!hashes)
		return shs_seterr(e, SHS_ENOMEM, "out of memory");
	rc = shs_module_hash(m, hashes, e);
	if (rc == SHS_OK) {
		qsort(hashes, m->n_comps, sizeof(*hashes), cmp_u64);
		f->distinct = 0;
		for (uint32_t k = 0; k < m->n_comps; k++)
			f->distinct += k == 0 || hashes[k] != hashes[k - 1];
	}
	free(hashes);
	return rc;
}

/* True when opcode x comes before y: larger count first, then by name. */
static bool before(const uint64_t *counts, int x, int y)
{
	if (counts[x] != counts[y])
		return counts[x] > counts[y];
	return strcmp(shs_opcode_name((shs_opcode)x), shs_opcode_name((shs_opcode)y)) < 0;
}

/* The opcodes that occur, in order[], most frequent first (insertion sort: C11's qsort takes
 * no context and the list is short). Returns how many. */
static int sorted_opcodes(const facts *f, int *order)
{
	int n = 0;

	for (int op = 0; op < SHS_OP_COUNT; op++) {
		int k;

		if (!f->counts[op])
			continue;
		for (k = n; k > 0 && before(f->counts, op, order[k - 1]); k--)
			order[k] = order[k - 1];
		order[k] = op;
		n++;
	}
	return n;
}

static void human_bytes(char *out, size_t n, double b)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while (b >= 1024 && u < 5) {
		b /= 1024;
		u++;
	}
	snprintf(out, n, u ? "%.2f %s" : "%.0f %s", b, units[u]);
}

static void print_text(const facts *f, const char *path, const char *format)
{
	int order[SHS_OP_COUNT];
	int n = sorted_opcodes(f, order);
	char bytes[32];

	human_bytes(bytes, sizeof(bytes), (double)f->param_bytes);
	printf("module          %s (%s, %s)\n", f->m->name, format, path);
	printf("computations    %u (%u structurally distinct)\n", f->m->n_comps, f->distinct);
	printf("instructions    %llu\n", (unsigned long long)f->instructions);
	printf("entry params    %u, %lld bytes (%s)\n", f->params, (long long)f->param_bytes, bytes);
	printf("dot FLOPs       %.6g per execution of the entry computation", f->dot_flops);
	if (f->unknown_loops)
		printf(" (%u while loop(s) of unknown trip count counted once)", f->unknown_loops);
	if (f->manual)
		printf("\nshard_map       %llu instructions in manual regions (their shapes and FLOPs "
		       "are one device's)", (unsigned long long)f->manual);
	if (f->partial)
		printf("\nshard_map       %llu instructions in regions manual over some axes "
		       "(their shapes are one manual group's)", (unsigned long long)f->partial);
	printf("\nopcodes         ");
	for (int k = 0, col = 16; k < n; k++) {
		char item[64];
		int len = snprintf(item, sizeof(item), "%s %llu%s", shs_opcode_name((shs_opcode)order[k]),
				   (unsigned long long)f->counts[order[k]], k + 1 < n ? "," : "");

		if (col > 16 && col + 1 + len > LINE_WIDTH) {
			printf("\n                ");
			col = 16;
		} else if (col > 16) {
			putchar(' ');
			col++;
		}
		fputs(item, stdout);
		col += len;
	}
	putchar('\n');
}

static int print_json(const facts *f, const char *format)
{
	json_t *o = json_object(), *ops = json_object();
	int order[SHS_OP_COUNT];
	int n = sorted_opcodes(f, order);

	for (int k = 0; k < n; k++)
		json_object_set_new(ops, shs_opcode_name((shs_opcode)order[k]),
				    json_integer((json_int_t)f->counts[order[k]]));
	json_object_set_new(o, "module", json_string(f->m->name ? f->m->name : ""));
	json_object_set_new(o, "format", json_string(format));
	json_object_set_new(o, "computations", json_integer(f->m->n_comps));
	json_object_set_new(o, "instructions", json_integer((json_int_t)f->instructions));
	json_object_set_new(o, "opcodes", ops);
	json_object_set_new(o, "parameters", json_integer(f->params));
	json_object_set_new(o, "parameter_bytes", json_integer(f->param_bytes));
	json_object_set_new(o, "dot_flops", json_real(f->dot_flops));
	json_object_set_new(o, "unknown_trip_counts", json_integer(f->unknown_loops));
	json_object_set_new(o, "distinct_computations", json_integer(f->distinct));
	json_object_set_new(o, "manual_instructions", json_integer((json_int_t)f->manual));
	json_object_set_new(o, "partly_manual_instructions",
			    json_integer((json_int_t)f->partial));
	return shs_cli_put_json(o, INFO_JSON_PRECISION);
}

int shs_cmd_info(int argc, char **argv)
{
	const char *path = NULL;
	shs_format from = SHS_FORMAT_AUTO;
	bool json = false, verify = true;
	shs_module *m;
	facts f;
	shs_err e = { 0 };
	int rc;

	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return SHS_EXIT_OK;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--no-verify")) {
			verify = false;
		} else if (!strcmp(a, "--from")) {
			if (k + 1 >= argc || !shs_cli_format(argv[k + 1], &from))
				return shs_cli_usage_error("info", "--from takes proto or text");
			k++;
		} else if (a[0] == '-' && a[1]) {
			return shs_cli_usage_error("info", "unknown option '%s'", a);
		} else if (!path) {
			path = a;
		} else {
			return shs_cli_usage_error("info", "too many arguments ('%s')", a);
		}
	}
	if (!path)
		return shs_cli_usage_error("info", "needs FILE");
	m = shs_cli_load(path, from, verify);
	if (!m)
		return SHS_EXIT_FAIL;
	rc = gather(m, &f, &e);
	if (rc == SHS_OK) {
		const char *format = m->source_format == SHS_FORMAT_PROTO ? "proto" : "text";

		if (json)
			rc = print_json(&f, format);
		else
			print_text(&f, path, format);
		if (rc != SHS_OK)
			shs_seterr(&e, rc, "out of memory");
	}
	if (rc != SHS_OK)
		fprintf(stderr, "shardsearch: %s: %s\n", path, e.msg);
	shs_module_free(m);
	return rc == SHS_OK ? SHS_EXIT_OK : SHS_EXIT_FAIL;
}
