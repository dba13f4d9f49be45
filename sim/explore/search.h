/* search.h — the best layouts of one model on a given number of chips, in
 * two tiers: a closed-form bound for every layout, a simulation for the
 * ones the bound cannot rule out.
 *
 * Given a scenario (model, system, global batch) and a chip count, search
 * enumerates every layout the runner knows: tp (a power of two within one
 * node that divides the attention heads), cp (powers of two the sequence
 * allows, up to max_cp), pp (dividing the chips left, at most the layers;
 * the length of parallel.stage_layers when the scenario gives it), dp (the
 * rest: cp × tp × pp × dp = chips), ep (MoE models: a power of two dividing
 * dp and the experts), micro_batch (up to a cap), schedule (the registered
 * ones asked for), vpp (every divisor of the layers per stage the
 * interleaved schedule allows, up to a cap), sp and tp_overlap (with tp >
 * 1), recompute, ZeRO stage and offload (when the system has a [host]
 * tier). `--fix key=v1,v2` keeps only those values of a key. The global
 * batch must split over dp × micro_batch (--batch-policy exact), or is
 * rounded down to the largest multiple of dp × micro_batch it holds
 * (round-down: the batch each layout ran is in its row).
 *
 * Tier one, per layout, no simulation (sim/train/bound.h): the schedule's
 * rules; a lower bound of the busiest chip's memory (and of the host's,
 * offloading) against capacity; a lower bound of the step time. Ranked by
 * what that bound promises for the metric, the best K layouts are
 * simulated op by op (tier two), then every layout whose bound could still
 * beat the K-th best simulated one, in rounds, until the bound separates
 * all the rest: those cannot be in the top K (the bound never exceeds the
 * simulation), so the top K are exact. The table marks which figures are
 * simulated. When nothing fits, the counts say which constraint ruled out
 * most layouts. */
#ifndef MPSIM_SEARCH_H
#define MPSIM_SEARCH_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/io/config.h"

enum search_batch_policy { SEARCH_BATCH_EXACT, SEARCH_BATCH_ROUND_DOWN };

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
    FILE *progress;       /* one line per round (NULL: quiet) */
    int simulate;         /* K: the best K by bound, and all it cannot separate from them,
                             are simulated (0: 32) */
    int batch_policy;     /* enum search_batch_policy */
    /* NULL-terminated "key=v1,v2,..." limits on the layout keys
     * (SEARCH_KEYS), as a sweep's --vary writes them. */
    const char *const *fix;
    /* When set, every simulated layout is a row of this CSV, in enumeration
     * order, with a sweep's conventions (sweep.h): the layout's keys
     * (SEARCH_KEYS), SWEEP_METRIC_COLUMNS, feasible, reason. Written to
     * OUT.partial and renamed when whole. */
    const char *out;
    bool force;           /* simulate layouts past the work budget (sim/io/budget.h) */
};

/* The layout keys search varies (and --fix accepts), as dotted names; the
 * key columns of `search --out` are these and training.global_batch. */
#define SEARCH_KEYS                                                            \
    "parallel.tp,parallel.cp,parallel.pp,parallel.dp,parallel.ep,parallel.vpp," \
    "parallel.sp,parallel.tp_overlap,training.micro_batch,training.schedule,"  \
    "training.recompute,training.zero,training.offload"

/* One layout that got past tier one. */
struct search_hit {
    int tp, pp, dp, ep, vpp, micro_batch, recompute, zero, offload, global_batch;
    int cp;               /* context-parallel degree */
    bool sp, tp_overlap;
    char schedule[32];
    bool simulated;       /* figures below from the simulation; else from the bound */
    bool feasible;        /* simulated and fit */
    double step_s, tokens_per_s, mfu, bubble, peak_mem, usd_per_mtok;
    double bound_step_s, mem_bound;
    double metric;        /* the ranking metric's value (NAN when not feasible) */
    char reason[200];     /* why not feasible */
    int order;            /* enumeration order, to break ties */
};

struct search_result {
    struct search_hit *hit; /* [n_hits]: simulated first, best first, then infeasible,
                               then the bound-only ones best bound first */
    int n_hits;
    long long enumerated;   /* layouts before any pruning */
    long long fixed_out;    /* excluded by --fix */
    long long duplicates;   /* the same run as another layout */
    long long batch_pruned; /* the global batch does not split over dp × micro_batch */
    long long rule_pruned;  /* refused by the schedule's rules (or offload's) */
    long long mem_pruned;   /* memory lower bound above a chip's capacity */
    long long mem_pruned_nocp; /* of those, layouts without context parallelism */
    long long host_pruned;  /* host memory lower bound above a node's (offload) */
    long long bounded;      /* past tier one, with a step-time bound */
    long long simulated;    /* simulated op by op */
    long long separated;    /* not simulated: their bound cannot reach the top K */
    long long feasible;     /* simulated and fit */
    char example[5][200];   /* one reason per pruning kind: batch, rules, memory, host, simulated */
    double bound_wall_s, wall_s;
    double capacity;        /* bytes per chip */
    char chip[64];
    bool host_tier;         /* the system has [host]: offload was tried */
};

/* Enumerate, bound, simulate and rank. MP_ERR_INPUT for a bad chip count,
 * bad schedule names, metric, --fix key or value, a scenario that does not
 * load, or an --out that cannot be written (checked before anything is
 * simulated). */
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
