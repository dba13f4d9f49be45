/* explain.h — "why is this step slow, and what would help": a scenario's
 * step accounting (sim/train/step_split.h), then levers — small changes of
 * its layout, each simulated (never guessed), ranked by the step time the
 * changed scenario actually gets.
 *
 * The neighbourhood, from the scenario's own keys (a lever is proposed only
 * where it could apply; its run then checks every constraint: memory,
 * divisibility, the schedule's rules):
 *   pipeline bubble   training.schedule=interleaved with parallel.vpp 2 or 4
 *                     (vpp × 2 when already interleaved); zb-h1; more
 *                     microbatches (micro_batch ÷ 2)
 *   exposed TP        parallel.tp_overlap; the other tp × pp splits of the
 *                     same tp × pp (tp ÷ 2, pp × 2 and tp × 2, pp ÷ 2)
 *   exposed DP        training.dp_overlap; pp × 2, dp ÷ 2
 *   compute           recompute full → selective → none (less recompute);
 *                     micro_batch × 2 (larger GEMMs, fewer microbatches)
 *   memory            recompute none → selective, parallel.sp, ZeRO + 1,
 *                     pp × 2, dp ÷ 2 (each frees memory: shown as peak before →
 *                     after)
 * The chip count never changes: every re-split keeps tp × pp × dp.
 * Each lever's predicted step is exactly what `mpsim run SCENARIO --set
 * KEY=VALUE ...` prints for its changes. */
#ifndef MPSIM_EXPLAIN_H
#define MPSIM_EXPLAIN_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/io/config.h"
#include "sim/train/step_split.h"

#define EXPLAIN_MAX_SETS 4

struct explain_run {
    int rc;                   /* sim_run's status: MP_OK, MP_ERR_INFEASIBLE or MP_ERR_INPUT */
    bool has_metrics;         /* the engine ran (an out-of-memory run has them too) */
    mp_time step;
    struct step_split split;  /* mean over stages */
    double peak_mem;          /* the largest stage peak, bytes */
    double mfu;
    int chips;
    char reason[1100];        /* why not, when rc != MP_OK */
};

struct explain_lever {
    bool memory;              /* a memory lever: it frees memory, speed second */
    char why[96];             /* what it attacks, in words: "exposed TP 2.729 s" */
    char set[EXPLAIN_MAX_SETS][96]; /* key=value, as --set takes them */
    int n_set;
    struct explain_run run;
};

struct sim;

struct explain {
    struct config cfg;        /* the scenario as given */
    struct sim *sim;          /* its run, kept for the accounting's tables */
    struct explain_run base;
    double capacity;          /* a chip's memory, bytes */
    char chip[64];
    int stages, microbatches;
    struct explain_lever *lever;    /* [n_levers], ranked: fitting ones by step, then the rest */
    int n_levers;
};

/* Run the scenario, then every lever of its neighbourhood on `jobs`
 * threads, and rank them. MP_ERR_INPUT for a serving scenario or a
 * scenario that does not run (bad keys, files); a base that does not fit
 * in memory still gets its levers (memory ones first). Free with
 * explain_release. */
int explain_run(struct explain *x, const struct config *cfg, int jobs, struct mp_error *err);
void explain_release(struct explain *x);

/* The accounting and the ranked levers, for people; as one JSON object. */
void explain_print(FILE *f, const struct explain *x, int top);
void explain_json(FILE *f, const struct explain *x);

#endif
