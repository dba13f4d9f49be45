/* bench_step.c — one scenario through the whole library, timed: events,
 * wall time, events/s and peak RSS.
 *
 * Usage: bench_step SCENARIO.ini [--reference [ROUNDS]] [k=v]...
 * With --reference the step is also simulated op by op (run.steady_skip =
 * false: the reference) in the same process, runs alternating (ROUNDS of
 * each, default 5), and the medians are printed with their ratio, which
 * travels between machines where the absolute figures do not. The peak RSS
 * printed then is the skipping run's, taken before any reference run. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim/io/config.h"
#include "sim/train/sim.h"
#include "bench/bench_util.h"

static double rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

/* One run; its wall time (the simulated step and counts in *out). */
static double once(const struct config *cfg, bool skip, struct sim_result *out, int *ops, int *rc)
{
    struct config c = *cfg;
    c.run.steady_skip = skip;
    struct mp_error err = { 0 };
    struct sim s;
    double t0 = now();
    *rc = sim_run(&s, &c, NULL, &err);
    double wall = now() - t0;
    if (*rc && *rc != MP_ERR_INFEASIBLE) fprintf(stderr, "%s\n", err.msg);
    *out = s.res;
    out->stage = NULL;
    *ops = s.g.n_ops;
    sim_release(&s);
    return wall;
}

int main(int argc, char **argv)
{
    mp_heap_keep(); /* as the CLI does (sim/common.h) */
    if (argc < 2) {
        fprintf(stderr, "usage: bench_step SCENARIO.ini [--reference [ROUNDS]] [section.key=value]...\n");
        return 2;
    }
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    if (config_load(&cfg, argv[1], &err)) { fprintf(stderr, "%s\n", err.msg); return 2; }
    int rounds = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--reference")) {
            rounds = 5;
            if (i + 1 < argc && atoi(argv[i + 1]) > 0) rounds = atoi(argv[++i]);
            continue;
        }
        if (config_set(&cfg, argv[i], "argument", &err)) { fprintf(stderr, "%s\n", err.msg); return 2; }
    }
    struct sim_result r = { 0 };
    int ops = 0, rc = 0;
    if (!rounds) {
        double wall = once(&cfg, cfg.run.steady_skip, &r, &ops, &rc);
        if (rc && rc != MP_ERR_INFEASIBLE) return rc;
        printf("%s: %d ops, %llu events, step %.6f s simulated, wall %.3f s, %.2f M events/s, "
               "peak RSS %.1f MB%s\n", cfg.name, ops, (unsigned long long)r.events,
               mp_seconds(r.step_time), wall, r.events / wall / 1e6, rss_mb(),
               rc == MP_ERR_INFEASIBLE ? " (infeasible)" : "");
        return 0;
    }
    if (rounds > 32) rounds = 32;
    double w[32], ref[32], rss = 0;
    struct sim_result rr = { 0 };
    int ref_ops = 0, ref_rc = 0;
    for (int i = 0; i < rounds; i++) {
        w[i] = once(&cfg, true, &r, &ops, &rc);
        if (i == 0) rss = rss_mb();
        ref[i] = once(&cfg, false, &rr, &ref_ops, &ref_rc);
        if ((rc && rc != MP_ERR_INFEASIBLE) || rc != ref_rc) return rc ? rc : ref_rc;
    }
    printf("%s: step %.6f s simulated (reference %.6f s), %lld periods skipped: %d ops, %llu "
           "events (reference %d ops, %llu events); wall", cfg.name, mp_seconds(r.step_time),
           mp_seconds(rr.step_time), (long long)r.steady_skipped_periods, ops,
           (unsigned long long)r.events, ref_ops, (unsigned long long)rr.events);
    for (int i = 0; i < rounds; i++) printf(" %.4f", w[i]);
    printf(" s, reference");
    for (int i = 0; i < rounds; i++) printf(" %.4f", ref[i]);
    double mw = median(w, rounds), mr = median(ref, rounds);
    printf(" s; medians %.4f vs %.4f s: %.3fx the reference's time; peak RSS %.1f MB%s\n", mw, mr,
           mw / mr, rss, rc == MP_ERR_INFEASIBLE ? " (infeasible)" : "");
    return 0;
}
