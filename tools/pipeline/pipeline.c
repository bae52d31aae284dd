/* pipeline: a small XLA-like pass pipeline runner, the reference of how a compiler embeds
 * shardsearch. It links nothing of ours: each pass is a shared object loaded with dlopen whose
 * shs_pass_run (and shs_pass_free) it looks up, run in order over one serialized module.
 *
 *   pipeline --pass LIB.so[:OPTIONS] [--pass ...] IN.pb -o OUT.pb
 *
 * OPTIONS is the pass's "key=value;key=value" string. OUT is written atomically, or in place
 * when it is a device. Exit status: 0 success, 1 a failed pass or file, 2 bad usage. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_write.h" /* its file_write.c is compiled in: libc only */

enum { MAX_PASSES = 32, EXIT_USAGE = 2 };

typedef int (*pass_run_fn)(const uint8_t *in, size_t in_len, const char *options,
			   uint8_t **out, size_t *out_len, char **err);
typedef void (*pass_free_fn)(void *p);

/* One --pass: the library path and its options (NULL: none), split in place. */
typedef struct pass {
	char *lib;
	const char *options;
} pass;

/* A module in memory, and how to free it: free() for what we read, the pass's for its output. */
typedef struct bytes {
	uint8_t *data;
	size_t len;
	pass_free_fn release;
} bytes;

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "pipeline: %s\n", why);
	fprintf(stderr, "usage: pipeline --pass LIB.so[:OPTIONS] [--pass ...] IN -o OUT\n");
	return EXIT_USAGE;
}

static void release(bytes *b)
{
	if (b->data)
		(b->release ? b->release : free)(b->data);
	*b = (bytes){ 0 };
}

static int read_file(const char *path, bytes *out)
{
	FILE *f = fopen(path, "rb");
	long n;
	int rc = 1;

	if (!f) {
		fprintf(stderr, "pipeline: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (out->data = malloc(n ? (size_t)n : 1)) && fread(out->data, 1, (size_t)n, f) == (size_t)n) {
		out->len = (size_t)n;
		rc = 0;
	} else {
		fprintf(stderr, "pipeline: %s: cannot read\n", path);
		release(out);
	}
	fclose(f);
	return rc;
}

/* Writes b as the whole of path (see shs_file_write: atomic, or in place on a device). */
static int write_file(const char *path, const bytes *b)
{
	char why[SHS_FILE_WHY_MAX];

	if (shs_file_write(path, b->data, b->len, why, sizeof(why)) == 0)
		return 0;
	fprintf(stderr, "pipeline: %s: %s\n", path, why);
	return 1;
}

/* Runs pass p over *module, replacing it with the pass's output. */
static int run_pass(const pass *p, bytes *module)
{
	void *lib = dlopen(p->lib, RTLD_NOW | RTLD_LOCAL);
	pass_run_fn run;
	pass_free_fn pfree;
	bytes next = { 0 };
	char *err = NULL;
	int rc = 1;

	if (!lib) {
		fprintf(stderr, "pipeline: %s\n", dlerror());
		return 1;
	}
	*(void **)&run = dlsym(lib, "shs_pass_run");
	*(void **)&pfree = dlsym(lib, "shs_pass_free");
	if (!run || !pfree) {
		fprintf(stderr, "pipeline: %s: no shs_pass_run / shs_pass_free\n", p->lib);
	} else if (run(module->data, module->len, p->options, &next.data, &next.len, &err) != 0) {
		fprintf(stderr, "pipeline: %s: %s\n", p->lib, err ? err : "failed");
		pfree(next.data);
	} else {
		next.release = pfree;
		release(module);
		/* the output is freed by the pass's own free: keep the library loaded */
		*module = next;
		rc = 0;
	}
	if (err)
		pfree(err);
	if (rc)
		dlclose(lib);
	return rc;
}

int main(int argc, char **argv)
{
	pass passes[MAX_PASSES];
	const char *in = NULL, *out = NULL;
	bytes module = { 0 };
	int n = 0, rc;

	shs_file_write_clean_on_signals();
	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h"))
			return usage(NULL), 0;
		if (!strcmp(argv[k], "--pass") || !strcmp(argv[k], "-o")) {
			char *colon;
			if (k + 1 >= argc)
				return usage("an option needs a value");
			if (!strcmp(argv[k++], "-o")) {
				out = argv[k];
				continue;
			}
			if (n == MAX_PASSES)
				return usage("at most 32 passes");
			passes[n] = (pass){ .lib = argv[k] };
			if ((colon = strchr(argv[k], ':'))) {
				*colon = '\0';
				passes[n].options = colon + 1;
			}
			n++;
		} else if (argv[k][0] == '-' && argv[k][1]) {
			return usage("unknown option");
		} else if (in) {
			return usage("one input only");
		} else {
			in = argv[k];
		}
	}
	if (!in || !out || !n)
		return usage("needs --pass, IN and -o OUT");
	rc = read_file(in, &module);
	for (int k = 0; k < n && !rc; k++)
		rc = run_pass(&passes[k], &module);
	if (!rc)
		rc = write_file(out, &module);
	release(&module);
	return rc;
}
