/* search.h — the best layouts of one model on a given number of chips.
 *
 * Given a scenario (model, system, global batch) and a chip count, search
 * enumerates every layout: tp (a power of two within one node that divides
 * the attention heads), cp (powers of two the sequence allows, up to
 * max_cp), pp (dividing the chips left, at most the layers; the length of
 * parallel.stage_layers when the scenario gives it),
 * dp (the rest; it must divide the global batch), ep (MoE models: a power of
 * two dividing dp and the experts), micro_batch (every divisor of the
 * per-replica batch up to a cap), schedule (the registered ones asked for),
 * vpp (powers of two for interleaved schedules), recompute and ZeRO stage.
 *
 * Before any simulation it drops, without running them:
 *  - duplicates: with dp = 1 every ZeRO stage is the same run, and with
 *    pp = 1 every schedule is (only 1f1b is kept);
 *  - layouts the schedule's own rules refuse (its check function);
 *  - layouts whose memory cannot fit: a lower bound of one stage's peak —
 *    weights, gradients and optimizer state as sharded by ZeRO, plus the
 *    activations the schedule must hold at least (GPipe all m microbatches,
 *    1F1B min(p, m) on the first stage, anything else one) — above the
 *    chip's capacity. Being a lower bound it never drops a layout that fits;
 *    the survivors are simulated op by op and ranked. */
#ifndef MPSIM_SEARCH_H
#define MPSIM_SEARCH_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/io/config.h"

struct search_options {
    int chips;            /* total chips (required) */
    int jobs;             /* threads; ≤ 0: the online cores */
    int max_micro_batch;  /* largest micro_batch tried (0: 8) */
    int max_vpp;          /* largest vpp for interleaved schedules (0: 8) */
    /* Largest context-parallel degree tried, powers of two (0: the largest
     * leaving each CP rank 8192 tokens or more; 1 for short sequences). */
    int max_cp;
    const char *schedules;/* comma-separated; NULL: "1f1b,interleaved,zb-h1,zb-h2,gpipe" */
    const char *metric;   /* ranking: a sweep metric column (NULL: tokens_per_s) */
    double token_budget;  /* for the cost figures (0: 1T) */
    FILE *progress;       /* one line per 10% (NULL: quiet) */
    /* When set, every simulated layout is a row of this CSV, in enumeration
     * order, with a sweep's conventions (sweep.h): the layout's keys
     * (SEARCH_KEYS), SWEEP_METRIC_COLUMNS, feasible, reason. Written to
     * OUT.partial and renamed when whole. */
    const char *out;
    bool force;           /* simulate layouts past the work budget (sim/io/budget.h) */
};

/* The key columns of `search --out`, as dotted names. */
#define SEARCH_KEYS                                                            \
    "parallel.tp,parallel.cp,parallel.pp,parallel.dp,parallel.ep,parallel.vpp," \
    "training.micro_batch,training.schedule,training.recompute,training.zero"

/* One simulated layout. */
struct search_hit {
    int tp, pp, dp, ep, vpp, micro_batch, recompute, zero;
    int cp;               /* context-parallel degree */
    char schedule[32];
    bool feasible;
    double step_s, tokens_per_s, mfu, bubble, peak_mem, usd_per_mtok, mem_bound;
    double metric;        /* the ranking metric's value */
    char reason[200];     /* why not feasible */
    int order;            /* enumeration order, to break ties */
    bool skipped;         /* not simulated: see search.c's groups */
};

struct search_result {
    struct search_hit *hit; /* [n_hits] simulated, best first (infeasible last) */
    int n_hits;
    long long enumerated;   /* layouts before any pruning */
    long long duplicates;   /* dropped as the same run as another */
    long long rule_pruned;  /* refused by the schedule's rules */
    long long mem_pruned;   /* memory lower bound above capacity */
    long long mem_pruned_nocp; /* of those, layouts without context parallelism */
    long long slower_skipped; /* more recompute than a fitting twin: cannot be faster */
    long long feasible;     /* simulated and fit */
    double wall_s;
    double capacity;        /* bytes per chip */
    char chip[64];
};

/* Enumerate, prune, simulate and rank. MP_ERR_INPUT for a bad chip count
 * (not a multiple of tp options, or one the global batch cannot use), bad
 * schedule names or metric, a scenario that does not load, or an --out
 * that cannot be written (checked before anything is simulated). */
int search_run(const struct config *base, const struct search_options *opt,
               struct search_result *res, struct mp_error *err);

/* Free the ranked layouts; call after every search_run, failed or not. */
void search_result_release(struct search_result *res);

/* The lower bound of peak memory per chip that pruning uses, for `cfg`
 * (exposed so tests can hold it against simulated peaks). */
int search_memory_bound(const struct config *cfg, double *bytes, struct mp_error *err);

/* Print the best `top` layouts as a table, then the counts and time. */
void search_print(FILE *f, const struct search_result *res, const struct search_options *opt,
                  int top);

#endif
