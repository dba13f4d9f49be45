/* bench_engine.c — the event queue alone, in the hold model: pop the earliest
 * event, schedule one a random time later, so the queue stays at N pending.
 * Prints events/s at N = 1K and 1M, wall time and peak RSS.
 * Usage: bench_engine [DIVISOR [PENDING]] — run 1/DIVISOR of the events (for
 * valgrind --tool=callgrind, whose instruction counts are repeatable where
 * wall time on a shared machine is not); with PENDING, only that case. For
 * the cost per event under valgrind, subtract a run with a huge DIVISOR
 * (the fill alone). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include "sim/engine/eventq.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void hold(size_t pending, long events, const mp_time *delta, size_t n_delta)
{
    struct eventq q;
    eventq_init(&q);
    for (size_t i = 0; i < pending; i++) eventq_schedule(&q, delta[i % n_delta], 0, (int64_t)i);
    struct eventq_event ev;
    double t0 = now();
    for (long k = 0; k < events; k++) {
        eventq_pop(&q, &ev);
        eventq_schedule(&q, ev.time + delta[(size_t)k % n_delta], 0, ev.data);
    }
    double wall = now() - t0;
    printf("engine hold model: %8zu pending  %10ld events  %.3f s  %6.2f M events/s\n", pending,
           events, wall, events / wall / 1e6);
    eventq_release(&q);
}

int main(int argc, char **argv)
{
    long div = argc > 1 ? atol(argv[1]) : 1;
    if (div < 1) div = 1;
    enum { N_DELTA = 1 << 16 };
    mp_time *delta = malloc(N_DELTA * sizeof *delta);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    /* Exponential-ish spread of increments (1 ns .. 1 ms) precomputed, so the
     * random numbers are not what we time. */
    for (int i = 0; i < N_DELTA; i++)
        delta[i] = 1000 + (mp_time)(gsl_rng_uniform(rng) * gsl_rng_uniform(rng) * 1e9);
    long only = argc > 2 ? atol(argv[2]) : 0;
    if (only <= 0 || only == 1000) hold(1000, 20000000 / div, delta, N_DELTA);
    if (only <= 0 || only == 1000000) hold(1000000, 5000000 / div, delta, N_DELTA);
    if (only > 0 && only != 1000 && only != 1000000)
        hold((size_t)only, 5000000 / div, delta, N_DELTA);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("engine peak RSS: %.1f MB\n", ru.ru_maxrss / 1024.0);
    gsl_rng_free(rng);
    free(delta);
    return 0;
}
