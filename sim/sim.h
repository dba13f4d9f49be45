/* sim.h — one scenario, end to end: config → model and system → schedule →
 * task graph → engine → metrics. This is the library's front door; the CLI,
 * sweeps and the viewer all call it.
 *
 * Metrics follow DESIGN.md §3: step_time is the makespan of one training
 * step (first op start to last op end, gradient sync and optimizer included);
 * bubble = 1 − Σ busy compute over pipeline stages / (stages × makespan). */
#ifndef MPSIM_SIM_H
#define MPSIM_SIM_H

#include <stdbool.h>
#include <stdio.h>

#include "chip.h"
#include "config.h"
#include "engine.h"
#include "model.h"
#include "pipeline.h"
#include "schedule.h"
#include "system.h"
#include "taskgraph.h"

struct stage_report {
    int index;              /* pipeline device 0..pp-1 */
    int chip;               /* the chip simulating it (TP rank 0, DP replica 0) */
    mp_time busy;           /* compute stream busy time */
    mp_time first_start, last_end; /* first op start, last op end on the chip */
    double peak_mem;        /* bytes */
    double mem[N_MEM_CATS]; /* breakdown at the peak */
    int peak_act_units;     /* peak activations ÷ M_B of one stage, rounded (synthetic) */
};

struct sim_result {
    bool feasible;
    char infeasible_reason[1024];
    mp_time step_time;
    double bubble;          /* over the makespan */
    double bubble_span;     /* over the largest stage span (zero-bubble papers' rate) */
    mp_time max_span;
    double mfu, hfu;        /* 0 when the model has no FLOP count (synthetic) */
    double model_flops, hardware_flops;
    double tokens_per_s;
    uint64_t events;
    double sim_wall_s;
    int n_chips, microbatches, stages;
    struct stage_report *stage;   /* [stages] */
    /* The closed form for textbook schedules with uniform stages (zero when
     * the schedule has none): shown beside the simulated figures. */
    bool has_formula;
    mp_time formula_step;
    double formula_bubble;
    char formula_text[160];
};

struct sim {
    struct config cfg;
    struct model model;
    bool has_model;
    struct chip_catalog catalog;
    struct system sys;
    bool has_system;
    struct pipe_program prog;
    bool has_prog;
    struct stage_cost *stage_cost;  /* [prog.stages] */
    int *chip_of_device;            /* [pp] */
    struct taskgraph g;
    struct engine e;
    bool has_graph;
    struct sim_result res;
};

struct sim_options {
    bool record_memory; /* keep every memory change (timeline, trace, viewer) */
    bool validate;      /* run pipe_validate on the generated schedule first */
};

/* Run one scenario. `cfg` is copied; `opts` may be NULL. Returns MP_OK,
 * MP_ERR_INPUT (bad files or values) or MP_ERR_INFEASIBLE (a schedule rule
 * or memory capacity fails; s->res.feasible is false and infeasible_reason
 * says why, with the numbers). Always call sim_release afterwards. */
int sim_run(struct sim *s, const struct config *cfg, const struct sim_options *opts,
            struct mp_error *err);

void sim_release(struct sim *s);

#endif
