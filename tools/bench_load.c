/* Load-throughput benchmark: median time to parse one module from HLO text and from protobuf. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "io.h"

enum { DEFAULT_RUNS = 21 };

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		data = malloc((size_t)n + 1);
		if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
			free(data);
			data = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return data;
}

/* Times runs loads of buf with load(); returns the median seconds, or -1 on a failed load. */
static double median_load(const void *buf, size_t len, bool text, int runs)
{
	double *t = calloc((size_t)runs, sizeof(*t));
	double med = -1;

	if (!t)
		return -1;
	for (int r = 0; r < runs; r++) {
		shs_module *m = NULL;
		shs_err e = { 0 };
		double t0 = shs_bench_now();
		int rc = text ? shs_text_load(buf, len, "bench", &m, &e)
			      : shs_proto_load(buf, len, "bench", &m, &e);

		t[r] = shs_bench_now() - t0;
		shs_module_free(m);
		if (rc != SHS_OK) {
			fprintf(stderr, "bench_load: %s\n", e.msg);
			goto out;
		}
	}
	qsort(t, (size_t)runs, sizeof(*t), shs_bench_cmp_double);
	med = t[runs / 2];
out:
	free(t);
	return med;
}

int main(int argc, char **argv)
{
	int runs = argc > 2 ? atoi(argv[2]) : DEFAULT_RUNS;
	size_t text_len = 0, pb_len = 0;
	char *text;
	uint8_t *pb = NULL;
	shs_module *m = NULL;
	shs_err e = { 0 };
	double tt, tp;
	int status = 1;

	if (argc < 2 || runs < 1) {
		fprintf(stderr, "usage: bench_load FILE.hlo [RUNS]\n");
		return 2;
	}
	text = read_file(argv[1], &text_len);
	if (!text) {
		fprintf(stderr, "bench_load: cannot read %s\n", argv[1]);
		return 1;
	}
	if (shs_text_load(text, text_len, argv[1], &m, &e) != SHS_OK ||
	    shs_proto_save(m, true, &pb, &pb_len, &e) != SHS_OK) {
		fprintf(stderr, "bench_load: %s\n", e.msg);
		goto out;
	}
	tt = median_load(text, text_len, true, runs);
	tp = median_load(pb, pb_len, false, runs);
	if (tt <= 0 || tp <= 0)
		goto out;
	printf("text  %9zu bytes  median %8.3f ms  %8.1f MB/s  (%d runs)\n", text_len, tt * 1e3,
	       (double)text_len / tt / 1e6, runs);
	printf("proto %9zu bytes  median %8.3f ms  %8.1f MB/s  (%d runs)\n", pb_len, tp * 1e3,
	       (double)pb_len / tp / 1e6, runs);
	status = 0;
out:
	shs_module_free(m);
	free(pb);
	free(text);
	return status;
}
