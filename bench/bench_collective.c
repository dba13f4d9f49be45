/* bench_collective.c — one collective at fidelity = detailed through the
 * engine: a ring all-reduce of one buffer in CHUNKS pieces in flight at once
 * (coll_spec.chunks, as NCCL pipelines a buffer), on N chips wired as a ring
 * of links. Prints events, wall time (graph build + run), events/s, peak RSS.
 *
 * Usage: bench_collective N [CHUNKS] [BYTES] [--expanded]
 *   defaults: 4 chunks of a 1 MiB buffer, 50 GB/s links with 500 ns latency
 *   (the workload issue 10 compares against). --expanded builds one op per
 *   transfer instead of the compact ring ops (O(n²) memory: for comparison). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "hardware/chip.h"
#include "sim/strategy/collective.h"
#include "sim/engine/engine.h"
#include "hardware/system.h"
#include "bench/bench_util.h"

int main(int argc, char **argv)
{
    mp_heap_keep(); /* as the CLI does (sim/common.h) */
    if (argc < 2) {
        fprintf(stderr, "usage: bench_collective N [CHUNKS] [BYTES] [--expanded]\n");
        return 2;
    }
    int n = atoi(argv[1]), chunks = argc > 2 ? atoi(argv[2]) : 4;
    double bytes = argc > 3 ? atof(argv[3]) : 1048576.0;
    bool expanded = argc > 4 && !strcmp(argv[4], "--expanded");
    if (n < 2 || chunks < 1 || !(bytes > 0)) {
        fprintf(stderr, "bench_collective: N >= 2, CHUNKS >= 1, BYTES > 0\n");
        return 2;
    }
    char path[] = "/tmp/mpsim-bench-ring-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) { perror("bench_collective: temporary system file"); return 1; }
    fprintf(f, "[system]\nname = ring-%d\nchip = textbook\nchips_per_node = %d\n"
               "[scaleup]\ntopology = ring\nbandwidth = 50GB/s\nlatency = 500ns\n"
               "[scaleout]\ntopology = none\n", n, n);
    fclose(f);
    struct mp_error err = { 0 };
    struct chip_catalog cat;
    struct system sys;
    if (chip_catalog_load_default(&cat, &err) || system_load(&sys, path, 0, n, &cat, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        remove(path);
        return 1;
    }
    remove(path);

    double t0 = now();
    int *chips = malloc((size_t)n * sizeof *chips), *ready = malloc((size_t)n * sizeof *ready);
    int *done = malloc((size_t)n * sizeof *done);
    for (int i = 0; i < n; i++) chips[i] = i;
    struct taskgraph g;
    tg_init(&g, sys.n_chips, sys.n_links);
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_RING, .chips = chips, .n = n,
                           .bytes = bytes, .mb = -1, .stage = -1, .compact = !expanded,
                           .chunks = chunks };
    for (int i = 0; i < n; i++) ready[i] = -1;
    collective_add(&g, &sys, &c, FIDELITY_DETAILED, ready, done);
    tg_finalize(&g);
    struct engine e;
    engine_init(&e, &g);
    int rc = engine_run(&e, &err);
    double wall = now() - t0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (rc) { fprintf(stderr, "%s\n", err.msg); return 1; }
    printf("ring all-reduce, detailed: %5d chips, %d chunks of %.0f B, %d ops, %llu events, "
           "%.1f us simulated, wall %.3f s, %.2f M events/s, peak RSS %.1f MB\n",
           n, chunks, bytes / chunks, g.n_ops, (unsigned long long)e.events,
           mp_seconds(engine_makespan(&e)) * 1e6, wall, e.events / wall / 1e6,
           ru.ru_maxrss / 1024.0);
    engine_release(&e);
    tg_release(&g);
    system_release(&sys);
    chip_catalog_release(&cat);
    free(chips); free(ready); free(done);
    return 0;
}
