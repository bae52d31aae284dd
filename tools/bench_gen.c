/* Generator benchmark: time to build a preset's training step, save it as protobuf, print it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "gen.h"
#include "io.h"

enum { DEFAULT_RUNS = 5 };

/* The stages timed in each run. */
enum { T_GEN, T_PROTO, T_TEXT, T_GEN_PROTO, N_TIMES };

static const char *const stage_names[N_TIMES] = { "generate", "proto save", "text print",
						  "gen+proto" };

/* What one run measured besides its times. */
typedef struct run_facts {
	shs_gen_stats st;
	size_t proto_bytes, text_bytes;
} run_facts;

/* Generates c, saves it to memory as protobuf and prints it as text, timing each stage into
 * t[N_TIMES]. Returns SHS_OK or the failing stage's code with the message in e. */
static int one_run(const shs_gen_config *c, double *t, run_facts *f, shs_err *e)
{
	shs_module *m = NULL;
	uint8_t *pb = NULL;
	shs_buf text = { 0 };
	double t0 = shs_bench_now();
	int rc = shs_gen_module(c, &m, &f->st, e);

	t[T_GEN] = shs_bench_now() - t0;
	if (rc != SHS_OK)
		return rc;
	t0 = shs_bench_now();
	rc = shs_proto_save(m, m->from_hlo_proto, &pb, &f->proto_bytes, e);
	t[T_PROTO] = shs_bench_now() - t0;
	t[T_GEN_PROTO] = t[T_GEN] + t[T_PROTO];
	if (rc != SHS_OK)
		goto out_free;
	t0 = shs_bench_now();
	shs_text_print(&text, m, NULL);
	t[T_TEXT] = shs_bench_now() - t0;
	f->text_bytes = text.len;
	if (text.oom)
		rc = shs_seterr(e, SHS_ENOMEM, "out of memory printing the module");
	shs_buf_free(&text);
out_free:
	free(pb);
	shs_module_free(m);
	return rc;
}

static void print_figures(const shs_gen_config *c, double *const *t, int runs, const run_facts *f)
{
	const char *form = c->scan ? "scanned" : "unrolled";
	double med[N_TIMES], min[N_TIMES];

	for (int s = 0; s < N_TIMES; s++) {
		qsort(t[s], (size_t)runs, sizeof(*t[s]), shs_bench_cmp_double);
		med[s] = t[s][runs / 2];
		min[s] = t[s][0];
	}
	printf("%s %s: %llu instructions, %u computations, %d runs\n", c->name, form,
	       (unsigned long long)f->st.instructions, f->st.computations, runs);
	for (int s = 0; s < N_TIMES; s++) {
		printf("  %-12s median %8.3f s  min %8.3f s", stage_names[s], med[s], min[s]);
		if (s == T_PROTO)
			printf("  %10zu bytes", f->proto_bytes);
		else if (s == T_TEXT)
			printf("  %10zu bytes", f->text_bytes);
		putchar('\n');
	}
	printf("%s %s: generate %.2f s, proto save %.2f s (%.1f MB), text %.2f s (%.1f MB), "
	       "%llu instructions\n",
	       c->name, form, med[T_GEN], med[T_PROTO], (double)f->proto_bytes / 1e6, med[T_TEXT],
	       (double)f->text_bytes / 1e6, (unsigned long long)f->st.instructions);
}

int main(int argc, char **argv)
{
	const char *preset = NULL;
	int runs = DEFAULT_RUNS;
	bool scan = false;
	shs_gen_config c;
	double *t[N_TIMES] = { 0 };
	run_facts f = { 0 };
	shs_err e = { 0 };
	int status = 1;

	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--scan"))
			scan = true;
		else if (!preset)
			preset = argv[k];
		else
			runs = atoi(argv[k]);
	}
	if (!preset || runs < 1) {
		fprintf(stderr, "usage: bench_gen PRESET [RUNS] [--scan]\n");
		return 2;
	}
	if (shs_gen_preset(preset, &c, &e) != SHS_OK) {
		fprintf(stderr, "bench_gen: %s\n", e.msg);
		return 1;
	}
	c.scan = scan;
	for (int s = 0; s < N_TIMES; s++) {
		t[s] = calloc((size_t)runs, sizeof(*t[s]));
		if (!t[s]) {
			fprintf(stderr, "bench_gen: out of memory\n");
			goto out_free;
		}
	}
	for (int r = 0; r < runs; r++) {
		double tr[N_TIMES];

		if (one_run(&c, tr, &f, &e) != SHS_OK) {
			fprintf(stderr, "bench_gen: %s %s: %s\n", preset,
				scan ? "scanned" : "unrolled", e.msg);
			goto out_free;
		}
		for (int s = 0; s < N_TIMES; s++)
			t[s][r] = tr[s];
	}
	print_figures(&c, t, runs, &f);
	status = 0;
out_free:
	for (int s = 0; s < N_TIMES; s++)
		free(t[s]);
	return status;
}
