/* Shared pieces of the benchmarks: a monotonic clock and sorting times for medians. */
#ifndef SHS_BENCH_UTIL_H
#define SHS_BENCH_UTIL_H

/* Seconds on the monotonic clock. */
double shs_bench_now(void);

/* qsort comparator of doubles, ascending. */
int shs_bench_cmp_double(const void *a, const void *b);

#endif
