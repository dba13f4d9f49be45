/* bench_search.c — `mpsim search` end to end, timed, with a reference in
 * the same process: the search's best layout simulated op by op
 * (run.steady_skip = false), so that the search's time can be read as "so
 * many full simulations of its winner", which travels between machines.
 *
 * Usage: bench_search SCENARIO.ini CHIPS [--round-down] [ROUNDS]
 * Prints each round's wall time, the medians, their ratio, how many layouts
 * fit and the best. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/explore/search.h"
#include "sim/io/config.h"
#include "sim/strategy/offload.h"
#include "sim/train/sim.h"
#include "bench/bench_util.h"

int main(int argc, char **argv)
{
    mp_heap_keep(); /* as the CLI does (sim/common.h) */
    if (argc < 3) {
        fprintf(stderr, "usage: bench_search SCENARIO.ini CHIPS [--round-down] [ROUNDS]\n");
        return 2;
    }
    struct config base;
    struct mp_error err = { 0 };
    config_defaults(&base);
    if (config_load(&base, argv[1], &err)) { fprintf(stderr, "%s\n", err.msg); return 2; }
    struct search_options opt = { .chips = atoi(argv[2]) };
    int rounds = 3;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--round-down")) opt.batch_policy = SEARCH_BATCH_ROUND_DOWN;
        else if (atoi(argv[i]) > 0) rounds = atoi(argv[i]);
    }
    if (rounds > 16) rounds = 16;
    double w[16], ref[16];
    struct search_result res = { 0 };
    for (int i = 0; i < rounds; i++) {
        search_result_release(&res);
        double t0 = now();
        if (search_run(&base, &opt, &res, &err)) { fprintf(stderr, "%s\n", err.msg); return 2; }
        w[i] = now() - t0;
        /* The reference: the winner, op by op. */
        ref[i] = 0;
        if (res.feasible) {
            const struct search_hit *h = &res.hit[0];
            struct config c = base;
            c.parallel.tp = h->tp, c.parallel.pp = h->pp, c.parallel.dp = h->dp;
            c.parallel.ep = h->ep, c.parallel.vpp = h->vpp, c.parallel.sp = h->sp;
            c.parallel.tp_overlap = h->tp_overlap, c.training.micro_batch = h->micro_batch;
            c.training.global_batch = h->global_batch, c.training.recompute = h->recompute;
            c.training.zero = h->zero, c.training.offload = h->offload;
            snprintf(c.training.schedule, sizeof c.training.schedule, "%s", h->schedule);
            c.run.steady_skip = false;
            struct sim s;
            t0 = now();
            sim_run(&s, &c, NULL, &err);
            ref[i] = now() - t0;
            sim_release(&s);
        }
    }
    printf("%s on %d chips (%s batch): %lld layouts enumerated, %lld bounded, %lld simulated, "
           "%lld fit; wall", base.name, opt.chips,
           opt.batch_policy == SEARCH_BATCH_ROUND_DOWN ? "round-down" : "exact", res.enumerated,
           res.bounded, res.simulated, res.feasible);
    for (int i = 0; i < rounds; i++) printf(" %.2f", w[i]);
    double mw = median(w, rounds);
    printf(" s, median %.2f s", mw);
    if (res.feasible) {
        const struct search_hit *h = &res.hit[0];
        double mr = median(ref, rounds);
        printf("; the winner op by op (reference) median %.3f s: the search costs %.1f of them\n",
               mr, mr > 0 ? mw / mr : 0);
        static const char *const off[] = { "none", "optimizer", "optimizer+weights", "all" };
        printf("  best: tp %d pp %d dp %d vpp %d mb %d sp %d tp_overlap %d %s recompute %d zero %d "
               "offload %s, global batch %d: %.4f s per step, %.6g tokens/s, MFU %.2f%%\n",
               h->tp, h->pp, h->dp, h->vpp, h->micro_batch, h->sp, h->tp_overlap, h->schedule,
               h->recompute, h->zero, off[h->offload], h->global_batch, h->step_s, h->tokens_per_s,
               100 * h->mfu);
    } else {
        printf("; nothing fits\n");
    }
    search_result_release(&res);
    return 0;
}
