/* bench_engine.c — the event queue alone, in the hold model: pop the earliest
 * event, schedule one a random time later, so the queue stays at N pending.
 * Prints events/s at N = 1K and 1M for the engine's queue (sim/engine/eventq)
 * and, in the same process, for a reference: a plain binary heap of the same
 * (time, sequence) keys, the textbook structure. Runs alternate between the
 * two (ROUNDS of each) and the medians are printed with their ratio, which
 * travels between machines where the absolute figures do not.
 * Usage: bench_engine [DIVISOR [PENDING [ROUNDS]]] — run 1/DIVISOR of the
 * events (for valgrind --tool=callgrind, whose instruction counts are
 * repeatable where wall time on a shared machine is not); with PENDING,
 * only that case. For the cost per event under valgrind, subtract a run
 * with a huge DIVISOR (the fill alone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include "sim/engine/eventq.h"
#include "bench/bench_util.h"

/* ---- the reference: a binary heap of (time, sequence, data) ---- */

struct ref_node { mp_time time; uint64_t seq; int64_t data; };
struct ref_heap { struct ref_node *a; size_t n, cap; uint64_t seq; };

static int ref_less(const struct ref_node *x, const struct ref_node *y)
{
    return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static void ref_push(struct ref_heap *h, mp_time t, int64_t data)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 1024;
        h->a = realloc(h->a, h->cap * sizeof *h->a);
        if (!h->a) abort();
    }
    struct ref_node x = { t, h->seq++, data };
    size_t i = h->n++;
    while (i > 0 && ref_less(&x, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = x;
}

static struct ref_node ref_pop(struct ref_heap *h)
{
    struct ref_node top = h->a[0], x = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && ref_less(&h->a[c + 1], &h->a[c])) c++;
        if (!ref_less(&h->a[c], &x)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n) h->a[i] = x;
    return top;
}

/* One hold-model run; events/s. */
static double hold(bool reference, size_t pending, long events, const mp_time *delta,
                   size_t n_delta)
{
    double t0, wall;
    if (reference) {
        struct ref_heap h = { 0 };
        for (size_t i = 0; i < pending; i++) ref_push(&h, delta[i % n_delta], (int64_t)i);
        t0 = now();
        for (long k = 0; k < events; k++) {
            struct ref_node x = ref_pop(&h);
            ref_push(&h, x.time + delta[(size_t)k % n_delta], x.data);
        }
        wall = now() - t0;
        free(h.a);
    } else {
        struct eventq q;
        eventq_init(&q);
        for (size_t i = 0; i < pending; i++) eventq_schedule(&q, delta[i % n_delta], 0, (int64_t)i);
        struct eventq_event ev;
        t0 = now();
        for (long k = 0; k < events; k++) {
            eventq_pop(&q, &ev);
            eventq_schedule(&q, ev.time + delta[(size_t)k % n_delta], 0, ev.data);
        }
        wall = now() - t0;
        eventq_release(&q);
    }
    return events / wall;
}

static void compare(size_t pending, long events, int rounds, const mp_time *delta, size_t n)
{
    double q[32], r[32];
    if (rounds > 32) rounds = 32;
    for (int i = 0; i < rounds; i++) {
        q[i] = hold(false, pending, events, delta, n);
        r[i] = hold(true, pending, events, delta, n);
    }
    printf("engine hold model: %8zu pending  %10ld events  radix heap", pending, events);
    for (int i = 0; i < rounds; i++) printf(" %.2f", q[i] / 1e6);
    printf(" M events/s; binary heap (reference)");
    for (int i = 0; i < rounds; i++) printf(" %.2f", r[i] / 1e6);
    double mq = median(q, rounds), mr = median(r, rounds);
    printf("; medians %.2f vs %.2f M events/s: %.2fx the reference\n", mq / 1e6, mr / 1e6, mq / mr);
}

int main(int argc, char **argv)
{
    long div = argc > 1 ? atol(argv[1]) : 1;
    if (div < 1) div = 1;
    long only = argc > 2 ? atol(argv[2]) : 0;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (rounds < 1) rounds = 1;
    enum { N_DELTA = 1 << 16 };
    mp_time *delta = malloc(N_DELTA * sizeof *delta);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 1);
    /* Exponential-ish spread of increments (1 ns .. 1 ms) precomputed, so the
     * random numbers are not what we time. */
    for (int i = 0; i < N_DELTA; i++)
        delta[i] = 1000 + (mp_time)(gsl_rng_uniform(rng) * gsl_rng_uniform(rng) * 1e9);
    if (only <= 0 || only == 1000) compare(1000, 20000000 / div, rounds, delta, N_DELTA);
    if (only <= 0 || only == 1000000) compare(1000000, 5000000 / div, rounds, delta, N_DELTA);
    if (only > 0 && only != 1000 && only != 1000000)
        compare((size_t)only, 5000000 / div, rounds, delta, N_DELTA);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("engine peak RSS: %.1f MB\n", ru.ru_maxrss / 1024.0);
    gsl_rng_free(rng);
    free(delta);
    return 0;
}
