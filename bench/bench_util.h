/* bench_util.h — what every benchmark in bench/ shares: a monotonic clock
 * and the median of a few alternating runs (bench/README.md says why
 * medians: the machine may be shared). Header-only, so each bench_*.c
 * stays one file the Makefile links on its own. */
#ifndef MPSIM_BENCH_UTIL_H
#define MPSIM_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n ≥ 1); sorts v. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
