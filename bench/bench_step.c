/* bench_step.c — one scenario through the whole library, timed: events,
 * wall time, events/s and peak RSS. Usage: bench_step SCENARIO.ini [k=v]... */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "sim/io/config.h"
#include "sim/train/sim.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_step SCENARIO.ini [section.key=value]...\n");
        return 2;
    }
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    if (config_load(&cfg, argv[1], &err)) { fprintf(stderr, "%s\n", err.msg); return 2; }
    for (int i = 2; i < argc; i++)
        if (config_set(&cfg, argv[i], "argument", &err)) { fprintf(stderr, "%s\n", err.msg); return 2; }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct sim s;
    int rc = sim_run(&s, &cfg, NULL, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (rc && rc != MP_ERR_INFEASIBLE) { fprintf(stderr, "%s\n", err.msg); sim_release(&s); return rc; }
    printf("%s: %d ops, %llu events, step %.6f s simulated, wall %.3f s, %.2f M events/s, "
           "peak RSS %.1f MB%s\n",
           cfg.name, s.g.n_ops, (unsigned long long)s.res.events, mp_seconds(s.res.step_time),
           wall, s.res.events / wall / 1e6, ru.ru_maxrss / 1024.0,
           rc == MP_ERR_INFEASIBLE ? " (infeasible)" : "");
    sim_release(&s);
    return 0;
}
