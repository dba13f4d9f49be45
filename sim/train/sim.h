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

#include "hardware/chip.h"
#include "sim/io/config.h"
#include "cost.h"
#include "hardware/efficiency.h"
#include "sim/engine/engine.h"
#include "sim/strategy/experts.h"
#include "models/model.h"
#include "sim/strategy/pipeline.h"
#include "sim/strategy/schedule.h"
#include "hardware/system.h"
#include "sim/engine/taskgraph.h"
#include "sim/strategy/tensor.h"

struct stage_report {
    int index;              /* pipeline device 0..pp-1 */
    int chip;               /* the chip simulating it (TP rank 0, DP replica 0) */
    mp_time busy;           /* compute stream busy time */
    mp_time first_start, last_end; /* first op start, last op end on the chip */
    double peak_mem;        /* bytes */
    double mem[N_MEM_CATS]; /* breakdown at the peak */
    int peak_act_units;     /* peak activations ÷ M_B of one stage, rounded (synthetic) */
    /* Communication of each kind (enum comm_kind: tp, pp, dp) running while
     * the stage's compute stream is idle: time it adds to the step. */
    mp_time exposed_comm[N_COMM_KINDS];
};

struct sim_result {
    bool feasible;
    char infeasible_reason[1024];
    mp_time step_time;
    double bubble;          /* over the makespan */
    double bubble_span;     /* over the largest stage span (zero-bubble papers' rate) */
    mp_time max_span;
    double mfu, hfu;        /* 0 when the model has no FLOP count (synthetic) */
    /* Exposed communication per kind (enum comm_kind), the mean over stages
     * of stage_report.exposed_comm, in seconds. */
    double exposed_comm_s[N_COMM_KINDS];
    double model_flops, hardware_flops;
    double tokens_per_s;
    uint64_t events;
    double sim_wall_s;
    int n_chips, microbatches, stages;
    struct stage_report *stage;   /* [stages] */
    /* The closed form of the schedule (cases.md §3), shown beside the
     * simulated figure it predicts, so a student sees theory and simulation
     * agree with uniform stages and part once hops or uneven stages enter.
     * formula_figure names that figure: "bubble" (over the makespan),
     * "bubble_span" (over the largest stage span: ZB-H2, ZB-V) or "idle_s"
     * (the largest per-device step − busy: DualPipe). formula_text is the
     * whole comparison: "(p-1)/(m+p-1) = 3/11 = 0.2727, simulated 0.2727". */
    bool has_formula;
    mp_time formula_step;      /* predicted step time; 0 when the form has none */
    double formula_bubble;     /* predicted value of formula_figure */
    double formula_simulated;  /* the simulated value of formula_figure */
    const char *formula_figure;
    char formula_text[512];
    /* Money and chip time (cost.h): per step, per million tokens, and for
     * the token budget of sim_options (1T tokens by default). */
    struct cost cost;
};

struct sim {
    struct config cfg;
    struct model model;
    bool has_model;
    struct chip_catalog catalog;
    struct system sys;
    bool has_system;
    struct efficiency eff;          /* op efficiency by shape (hardware/efficiency.csv) */
    struct pipe_program prog;
    bool has_prog;
    struct stage_cost *stage_cost;  /* [prog.stages] */
    int *chip_of_device;            /* [pp] */
    struct tensor_plan tensor;      /* TP/SP/TSP passes (tensor.h) */
    bool has_tensor;
    struct ep_plan experts;         /* MoE routing and EP all-to-alls (experts.h) */
    bool has_experts;
    struct taskgraph g;
    struct engine e;
    bool has_graph;
    struct sim_result res;
};

struct sim_options {
    bool record_memory; /* keep every memory change (timeline, trace, viewer) */
    bool validate;      /* run pipe_validate on the generated schedule first */
    double token_budget; /* tokens for res.cost's budget figures; 0 = 1T */
    /* Issue 16: past the work budget (sim/io/budget.h) sim_run stops with
     * MP_ERR_INPUT and the estimate before the engine allocates, unless
     * `force`; `budget_events` > 0 sets a smaller one (the value fuzzer). */
    bool force;
    double budget_events;
};

/* Run one scenario. `cfg` is copied; `opts` may be NULL. Returns MP_OK,
 * MP_ERR_INPUT (bad files or values) or MP_ERR_INFEASIBLE (a schedule rule
 * or memory capacity fails; s->res.feasible is false and infeasible_reason
 * says why, with the numbers). Always call sim_release afterwards. */
int sim_run(struct sim *s, const struct config *cfg, const struct sim_options *opts,
            struct mp_error *err);

/* Free everything sim_run built, whatever it returned. */
void sim_release(struct sim *s);

/* The layers pipeline stage `s` of `stages` holds, as indices into
 * model->layer (0 the embedding, 1..decoders, decoders + 1 the LM head):
 * every stage gets decoders / stages, the remainder goes one each to stages
 * 1, 2, ... (stage 0 already holds the embedding) and the last stage holds
 * the head. search.c's memory bound uses the same split as the run. */
void sim_stage_layers(int decoders, int stages, int s, int *lo, int *hi);

#endif
