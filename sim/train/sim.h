/* sim.h — one scenario, end to end: config → model and system → schedule →
 * task graph → engine → metrics. This is the library's front door; the CLI,
 * sweeps and the viewer all call it.
 *
 * Metrics follow DESIGN.md §3: step_time is the makespan of one training
 * step (first op start to last op end, gradient sync and optimizer included);
 * the step accounting (step_split.h) says where each picosecond of it went,
 * and bubble is its pipeline-bubble part over stages × makespan. */
#ifndef MPSIM_SIM_H
#define MPSIM_SIM_H

#include <stdbool.h>
#include <stdio.h>

#include "hardware/chip.h"
#include "sim/strategy/context.h"
#include "sim/io/config.h"
#include "cost.h"
#include "hardware/calib.h"
#include "models/kernels.h"
#include "sim/engine/engine.h"
#include "sim/strategy/experts.h"
#include "sim/strategy/offload.h"
#include "models/model.h"
#include "sim/strategy/pipeline.h"
#include "sim/strategy/schedule.h"
#include "hardware/system.h"
#include "sim/engine/taskgraph.h"
#include "sim/strategy/tensor.h"
#include "step_split.h"

struct stage_report {
    int index;              /* pipeline device 0..pp-1 */
    int chip;               /* the chip simulating it (TP rank 0, DP replica 0) */
    mp_time busy;           /* compute stream busy time */
    mp_time first_start, last_end; /* first op start, last op end on the chip */
    double peak_mem;        /* bytes */
    double mem[N_MEM_CATS]; /* breakdown at the peak */
    int peak_act_units;     /* peak activations ÷ M_B of one stage, rounded (synthetic) */
    /* Communication of each kind (enum comm_kind) the stage's compute
     * stream waited for: the split's exposed_* parts (step_split.h). */
    mp_time exposed_comm[N_COMM_KINDS];
    struct step_split split; /* the stage's step accounting, sums to step_time */
};

/* Where one stage pass's time goes (`mpsim run --breakdown`): seconds of
 * one microbatch by kernel class (calib.h: gemm, attention, memory,
 * launch) and, per class, the calibration row that priced its largest
 * kernel. BD_RECOMPUTE is what the backward re-runs first. */
enum { BD_F, BD_B, BD_W, BD_RECOMPUTE, N_BD };
struct time_breakdown {
    double s[N_CT];
    int row[N_CT];      /* index into sim.calib.rows, -1 none */
    double top[N_CT];   /* that kernel's seconds */
    int kernels;
};

struct sim_result {
    bool feasible;
    char infeasible_reason[1024];
    mp_time step_time;
    /* The pipeline bubble only (step_split.h): Σ stages' bubble / (stages ×
     * makespan); and over the largest stage span (zero-bubble papers' rate):
     * (Σ bubble − stages × (makespan − span)) / (stages × span). */
    double bubble;
    double bubble_span;
    mp_time max_span;
    double mfu, hfu;        /* 0 when the model has no FLOP count (synthetic; JSON null) */
    /* Exposed communication per kind (enum comm_kind), the mean over stages
     * of stage_report.exposed_comm, in seconds. */
    double exposed_comm_s[N_COMM_KINDS];
    /* The step accounting, mean over stages, summing exactly to step_time
     * (step_split.h); per stage in stage[].split. */
    struct step_split split;
    double model_flops, hardware_flops;
    double tokens_per_s;
    uint64_t events;        /* events the engine handled (fewer than ops when periods were skipped) */
    double sim_wall_s;
    /* Periods of steady state the engine did not simulate op by op but put
     * back once its state repeated (engine.h); 0 when the step ran in full. */
    int64_t steady_skipped_periods;
    /* training.offload: bytes a node's host memory holds for its chips
     * (offload.h), and the node's host memory; 0 without offload. */
    double host_mem_bytes, host_mem_capacity;
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
    /* GPipe and 1F1B: the same form on the stages' real times (sim.c's
     * real_stage_form): predicted and simulated bubble in seconds, mean per
     * stage, and the comparison in words. */
    bool has_formula_real;
    double formula_real_bubble_s, formula_real_simulated_s;
    char formula_real_text[320];
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
    struct calib calib;             /* kernel calibration rows of the chip (hardware/kernels.csv) */
    bool has_calib;
    struct kernel_params kp;        /* kernel shapes of the scenario (price.c) */
    struct layer_price *price;      /* [model.n_layers]: each layer's kernels priced */
    struct time_breakdown *layer_bd;/* [model.n_layers × N_BD] */
    struct time_breakdown *stage_bd;/* [prog.stages × N_BD] */
    struct kernel_list kl;          /* scratch kernel list */
    struct price_memo *expert_memo; /* routed-expert times by token count (price.c) */
    bool want_breakdown;            /* sim_options.breakdown */
    struct pipe_program prog;
    bool has_prog;
    struct stage_cost *stage_cost;  /* [prog.stages] */
    int *chip_of_device;            /* [pp] */
    struct tensor_plan tensor;      /* TP/SP/TSP passes (tensor.h) */
    bool has_tensor;
    struct offload offload;         /* training.offload (offload.h) */
    struct ep_plan experts;         /* MoE routing and EP all-to-alls (experts.h) */
    bool has_experts;
    struct cp_plan context;         /* context parallelism (context.h) */
    bool has_context;
    int *stage_decoders;            /* [prog.stages]: parallel.stage_layers per stage, or NULL */
    struct taskgraph g;
    struct engine e;
    bool has_graph;
    bool borrowed;                  /* model, catalogue, system, calib from sim_options.inputs */
    struct sim_result res;
};

/* Inputs many runs of one model on one machine share (search, sweeps): the
 * model, chip catalogue, system and the chip's kernel calibration
 * (calib_load_default for sys->chip; required with a model), loaded once. Borrowed
 * by sim_run, never freed by sim_release; the system must have been loaded
 * for this many chips (system_load's chips_needed). */
struct sim_inputs {
    const struct model *model;      /* NULL: a synthetic model */
    const struct chip_catalog *catalog;
    const struct system *sys;
    const struct calib *calib;
};

struct sim_options {
    bool record_memory; /* keep every memory change (timeline, trace, viewer) */
    bool record_released; /* keep which op released each op (engine.released_by: timeline, viewer) */
    bool validate;      /* run pipe_validate on the generated schedule first */
    double token_budget; /* tokens for res.cost's budget figures; 0 = 1T */
    /* Issue 16: past the work budget (sim/io/budget.h) sim_run stops with
     * MP_ERR_INPUT and the estimate before the engine allocates, unless
     * `force`; `budget_events` > 0 sets a smaller one (the value fuzzer). */
    bool force;
    double budget_events;
    const struct sim_inputs *inputs; /* NULL: load them from the scenario */
    bool breakdown;     /* keep and report where each stage pass's time goes */
    bool every_pass;    /* build every pass from its segments (pipeline_plan.every_pass; tests) */
    bool unfused;       /* every op its own events, no chain timed at once (engine.no_fuse; tests) */
};

/* Run one scenario. `cfg` is copied; `opts` may be NULL. Returns MP_OK,
 * MP_ERR_INPUT (bad files or values) or MP_ERR_INFEASIBLE (a schedule rule
 * or memory capacity fails; s->res.feasible is false and infeasible_reason
 * says why, with the numbers). Always call sim_release afterwards. */
int sim_run(struct sim *s, const struct config *cfg, const struct sim_options *opts,
            struct mp_error *err);

/* Free everything sim_run built, whatever it returned. */
void sim_release(struct sim *s);

/* Everything sim_run does before it builds the task graph — the program,
 * every stage priced, its TP/SP passes — with the program generated for
 * `microbatches` instead of the scenario's (only its layout of stages on
 * devices matters to a caller that prices, such as the search bound:
 * sim/train/bound.h). Errors as sim_run; sim_release afterwards. */
int sim_price_layout(struct sim *s, const struct config *cfg, const struct sim_options *opts,
                     int microbatches, struct mp_error *err);

/* The layers pipeline stage `s` of `stages` holds, as indices into
 * model->layer (0 the embedding, 1..decoders, decoders + 1 the LM head).
 * With `per_stage` NULL every stage gets decoders / stages, the remainder
 * goes one each to stages 1, 2, ... (stage 0 already holds the embedding);
 * else stage k holds per_stage[k] decoders (parallel.stage_layers, summing
 * to `decoders`). The last stage holds the head. search.c's memory bound
 * uses the same split as the run. */
void sim_stage_layers(int decoders, int stages, const int *per_stage, int s, int *lo, int *hi);

/* parallel.stage_layers (decoders per pipeline device) over a program's
 * stages: a device's chunks, in stage order, share its layers as evenly as
 * possible, the extra ones going to its chunks 1, 2, ... as in the even
 * split (interleaved: 7 over 2 chunks is 3 then 4). out[prog->stages]. */
void sim_chunk_layers(const struct pipe_program *prog, const int *device_layers, int *out);

#endif
