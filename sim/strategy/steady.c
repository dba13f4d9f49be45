/* steady.c — finding where a pipeline program repeats; see steady.h.
 *
 * Everything here compares op orders; nothing knows time. The proof that
 * the reduced program plus K periods is the full one is the comparison
 * itself, so a schedule needs no declaration of its own: 1F1B, ZB-H1/H2,
 * interleaved (with groups of p) and ZB-V line up, others simply find no
 * window. */
#include "steady.h"

#include <stdlib.h>
#include <string.h>

/* b is a with every microbatch advanced by x. */
static inline bool shifted(const struct pipe_op *a, const struct pipe_op *b, int x)
{
    return a->kind == b->kind && a->stage == b->stage && a->stage2 == b->stage2 &&
           b->mb == a->mb + x && (a->mb2 < 0 ? b->mb2 == a->mb2 : b->mb2 == a->mb2 + x);
}

/* Prefix counts of `ok`: all of ok[a..b) true iff run[b] − run[a] == b − a. */
static int *prefix(const bool *ok, int n)
{
    int *run = mp_xmalloc(((size_t)n + 1) * sizeof *run);
    run[0] = 0;
    for (int i = 0; i < n; i++) run[i + 1] = run[i] + ok[i];
    return run;
}

static bool all_on(const int *run, int n, int a, int b)
{
    if (a < 0 || b > n || a > b) return false;
    return run[b] - run[a] == b - a;
}

/* The full program's repetition counts for one device, period c, shift q
 * (they do not change from one trial K to the next: kept across them). */
struct full_runs {
    int q, c;
    int *run;  /* prefix counts of "op i repeats at i + c" */
};

static int *full_run(const struct pipe_program *full, int d, int c, int q)
{
    const struct pipe_op *L = full->ops[d];
    int nf = full->n_ops[d] - c;
    if (nf < 0) nf = 0;
    bool *pf = mp_xmalloc(((size_t)nf + 1) * sizeof *pf);
    for (int i = 0; i < nf; i++) pf[i] = shifted(&L[i], &L[i + c], q);
    int *run = prefix(pf, nf);
    free(pf);
    return run;
}

static bool window(const struct pipe_program *full, const struct pipe_program *reduced, int d,
                   int64_t K, int q, struct full_runs *cache, int *lo, int *hi, int *c_out)
{
    const struct pipe_op *L = full->ops[d], *R = reduced->ops[d];
    int n = full->n_ops[d], nr = reduced->n_ops[d];
    int64_t D = (int64_t)n - nr;
    if (K < 1 || D <= 0 || D % K) return false;
    int c = (int)(D / K);
    int64_t xk = K * (int64_t)q;
    if (xk > 1 << 30) return false;
    int A = 0, B = 0;
    while (A < nr && shifted(&R[A], &L[A], 0)) A++;
    while (B < nr && shifted(&R[nr - 1 - B], &L[n - 1 - B], (int)xk)) B++;
    /* runf: the full program repeats from i to i + c; runr: the reduced. */
    int nf = n - c, np = nr - c > 0 ? nr - c : 0;
    int *own = NULL, *runf;
    if (cache && cache->run && cache->q == q && cache->c == c) {
        runf = cache->run;
    } else {
        runf = full_run(full, d, c, q);
        if (cache) {
            free(cache->run);
            *cache = (struct full_runs){ q, c, runf };
        } else {
            own = runf;
        }
    }
    /* Where both ops are in the prefix the programs share (i + c < A),
     * the reduced program repeats where the full one does: read from runf
     * (shifted compares the same fields). */
    bool *pr = mp_xmalloc(((size_t)np + 1) * sizeof *pr);
    int shared = A - c < np ? A - c : np;
    for (int i = 0; i < shared; i++) pr[i] = runf[i + 1] - runf[i];
    for (int i = shared < 0 ? 0 : shared; i < np; i++) pr[i] = shifted(&R[i], &R[i + c], q);
    int *runr = prefix(pr, np);
    /* p is a place for the periods when the programs agree before it and
     * (shifted by K·q) after it, the full program repeats over the inserted
     * periods and the one before, and the reduced one repeats up to p. */
    int best_lo = -1, best_hi = -2, cur = -1;
    /* A period of margin at the end: the graph marks a stage's last weight
     * gradient (its gradients are complete), which the op order cannot
     * show, and the engine checks the graph a period past the window. */
    int first = nr - B > c ? nr - B : c, last = A < nr - 2 * c ? A : nr - 2 * c;
    for (int p = first; p <= last; p++) {
        bool ok = all_on(runf, nf, p - c, (int)(p + D - c)) && all_on(runr, np, p - c, p);
        if (ok && cur < 0) cur = p;
        if (ok && p - cur > best_hi - best_lo) best_lo = cur, best_hi = p;
        if (!ok) cur = -1;
    }
    free(pr);
    free(own);
    free(runr);
    if (best_lo < 0) return false;
    *lo = best_lo;
    *hi = best_hi;
    *c_out = c;
    return true;
}

bool steady_device_window(const struct pipe_program *full, const struct pipe_program *reduced,
                          int d, int64_t K, int q, int *lo, int *hi, int *c_out)
{
    return window(full, reduced, d, K, q, NULL, lo, hi, c_out);
}

void steady_plan_release(struct steady_plan *plan)
{
    if (plan->lo) pipe_program_release(&plan->reduced);
    free(plan->lo);
    free(plan->hi);
    free(plan->c);
    memset(plan, 0, sizeof *plan);
}

/* Build the program for m − K·q and its windows; true when every device has
 * at least `need` periods of window. *fewest: the fewest periods of window
 * any device has (when the windows exist). */
static bool try_plan(const char *schedule, const struct pipe_shape *shape,
                     const struct pipe_program *full, int q, int64_t K, int need,
                     struct full_runs *cache, struct steady_plan *plan, int64_t *fewest)
{
    struct pipe_shape s = *shape;
    s.microbatches = (int)(shape->microbatches - K * q);
    *fewest = -1;
    if (s.microbatches < 1) return false;
    memset(plan, 0, sizeof *plan);
    struct mp_error err;
    if (schedule_generate(schedule, &s, &plan->reduced, &err) != MP_OK) return false;
    int P = full->devices;
    plan->lo = mp_xmalloc((size_t)P * sizeof *plan->lo);
    plan->hi = mp_xmalloc((size_t)P * sizeof *plan->hi);
    plan->c = mp_xmalloc((size_t)P * sizeof *plan->c);
    plan->q = q;
    plan->elided = K;
    plan->reduced_microbatches = s.microbatches;
    bool ok = plan->reduced.devices == P && plan->reduced.stages == full->stages &&
              plan->reduced.paths == full->paths;
    for (int i = 0; ok && i < full->paths * full->stages; i++)
        ok = plan->reduced.device_of[i] == full->device_of[i];
    /* A microbatch's path must repeat with the period too (DualPipe). */
    for (int mb = 0; ok && mb + q < full->microbatches; mb++)
        ok = full->path_of_mb[mb + q] == full->path_of_mb[mb];
    int64_t least = INT64_MAX;
    for (int d = 0; ok && d < P; d++) {
        ok = window(full, &plan->reduced, d, K, q, &cache[d], &plan->lo[d], &plan->hi[d],
                    &plan->c[d]);
        if (ok && (plan->hi[d] - plan->lo[d]) / plan->c[d] < least)
            least = (plan->hi[d] - plan->lo[d]) / plan->c[d];
    }
    if (ok) *fewest = least;
    ok = ok && least >= need;
    if (!ok) steady_plan_release(plan);
    return ok;
}

bool steady_plan_find(const char *schedule, const struct pipe_shape *shape,
                      const struct pipe_program *full, int min_periods,
                      struct steady_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    int m = shape->microbatches, p = shape->devices;
    int qs[3] = { 1, 2, p };
    struct full_runs *cache = mp_xcalloc((size_t)p, sizeof *cache);
    bool found = false;
    for (int k = 0; k < 3 && !found; k++) {
        int q = qs[k];
        if (q < 1 || (k == 2 && (p == 1 || p == 2))) continue;
        /* At least half the microbatches left out, or it is not worth it. */
        int64_t kmin = (m + 2LL * q - 1) / (2LL * q), kmax = (m - 1) / q, fewest;
        if (kmin < 1) kmin = 1;
        if (kmax < kmin) continue;
        struct steady_plan t;
        /* First try a program long enough for any schedule's warm-up (2p
         * periods) and the window asked for twice over: short, so cheap to
         * generate; then from its window, the guess below. */
        int64_t k0 = (m - (2LL * p + 2LL * min_periods) * q) / q;
        if (k0 > kmax) k0 = kmax;
        if (!(k0 >= kmin && try_plan(schedule, shape, full, q, k0, min_periods, cache, &t, &fewest)) &&
            !try_plan(schedule, shape, full, q, kmin, min_periods, cache, &t, &fewest))
            continue;
        kmin = t.elided;
        /* Each period left out shortens every window by one period, so the
         * largest K that keeps `min_periods` is first guessed from the
         * window at kmin, then (if the guess fails) bisected. */
        int64_t good = kmin, bad = kmax + 1, guess = kmin + (fewest - min_periods);
        if (guess > kmax) guess = kmax;
        while (bad - good > 1) {
            int64_t mid = guess > good && guess < bad ? guess : good + (bad - good) / 2;
            guess = -1;
            struct steady_plan u;
            int64_t f;
            if (try_plan(schedule, shape, full, q, mid, min_periods, cache, &u, &f)) {
                steady_plan_release(&t);
                t = u;
                good = mid;
                /* The guess held: one more would leave too few periods. */
                if (f == min_periods) bad = mid + 1;
            } else {
                bad = mid;
            }
        }
        /* An even number of periods, so that a state repeating every
         * second period (engine.h) fits them too. */
        if (t.elided % 2) {
            struct steady_plan u;
            int64_t f;
            bool ok = t.elided > 1 &&
                      try_plan(schedule, shape, full, q, t.elided - 1, min_periods, cache, &u, &f);
            steady_plan_release(&t);
            if (!ok) continue;
            t = u;
        }
        /* The reduced program is what runs: validate it (the full one is it
         * with periods put back, shown op by op above). */
        struct mp_error err;
        if (pipe_validate(&t.reduced, &err) != MP_OK) {
            steady_plan_release(&t);
            continue;
        }
        *plan = t;
        found = true;
    }
    for (int d = 0; d < p; d++) free(cache[d].run);
    free(cache);
    return found;
}
