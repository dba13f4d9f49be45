/* pipeline.h — turns a schedule's op order (schedule.h) into a task graph:
 * compute ops timed per stage, activation and gradient hand-offs as transfers
 * on the route between the stages' chips, activation memory taken by F and
 * given back by B, W and BW, and the dependencies that tie it together.
 *
 * The TP group of a stage is one lane (the chip of TP rank 0, DESIGN.md §2);
 * data-parallel replicas are simulated once (replica 0's chips). */
#ifndef MPSIM_PIPELINE_H
#define MPSIM_PIPELINE_H

#include "sim/common.h"
#include "experts.h"
#include "offload.h"
#include "schedule.h"
#include "hardware/system.h"
#include "sim/engine/taskgraph.h"
#include "tensor.h"

/* ZeRO-3 / FSDP units of one stage (data_parallel.h): its layers gathered
 * one at a time. */
struct pipe_units {
    int n;                 /* units, in forward order; 0 = none */
    const double *share;   /* [n]: each one's share of a pass's compute time (Σ 1) */
    double gathered_bytes; /* MEM_COMM an F, B or BW pass holds: a unit and the next's prefetch */
    double grad_bytes;     /* MEM_COMM a W or BW pass holds: one unit's unsharded gradients */
};

/* What one microbatch costs on one pipeline stage. */
struct stage_cost {
    mp_time t_f, t_b, t_w;   /* forward, input-grad, weight-grad */
    mp_time t_rc;            /* of t_b, the part that re-runs the forward (recompute);
                                read by the step accounting only (step_split.h) */
    double act_bytes;        /* M_B: stashed by F until its backward */
    double act_w_bytes;      /* M_W: the part kept from B until W */
    double send_bytes;       /* activation handed to the next stage (and its gradient back) */
    double work_bytes;       /* held by a backward while it runs: full recompute rebuilds
                                one layer's activations at a time */
    int layer_first, layer_last; /* model layers on this stage */
};

struct pipeline_plan {
    const struct pipe_program *prog;
    const struct stage_cost *stage;  /* [prog->stages] */
    const int *chip_of_device;       /* [prog->devices] */
    const struct system *sys;        /* routes and their times */
    mp_time hop;                     /* extra delay on every stage-to-stage hand-off */
    mp_time t_fb;                    /* duration of an overlapped FB op; 0 = F + B + W */
    /* Tensor parallelism (tensor.h): passes as segments with the group's
     * collectives; NULL = one op per pass. FB ops stay one op. */
    const struct tensor_plan *tensor;
    /* Data-parallel hooks (data_parallel.h), all optional:
     * on_grad: `op` is the lane's op after which the weight gradients of
     *   model layer `layer` of `stage` are complete for the step (layer -1:
     *   all of the stage's); called as the op is appended, so collectives
     *   the hook appends sit in stream order right behind it.
     * units (ZeRO-3 / FSDP), [stages], NULL = none: a pass over a stage with
     *   units is cut at their boundaries (a plain op into pieces by share,
     *   segments by their compute time), each unit opened by a zero-time
     *   marker on the compute stream. F gathers its units in forward order,
     *   B and BW in reverse; W and BW reduce-scatter them.
     *   before_unit appends the all-gather of `unit` of `stage`, issued once
     *   op `issue` has ended (the marker of the unit before it, as FSDP
     *   prefetches one unit ahead; -1: none), and returns the op the unit's
     *   compute waits for. The next pass's first unit is prefetched at the
     *   last unit of the pass before. after_unit appends what follows the
     *   unit's last compute op `last` (its gradients' reduce-scatter). */
    void (*on_grad)(void *ctx, struct taskgraph *g, int device, int stage, int layer, int op);
    const struct pipe_units *units;
    int (*before_unit)(void *ctx, struct taskgraph *g, int device, int stage, int unit, int issue);
    void (*after_unit)(void *ctx, struct taskgraph *g, int device, int stage, int unit, int last);
    void *hook_ctx;
    /* Expert parallelism (experts.h), with `tensor` built for it: segments
     * with an ep_role take the microbatch's routed durations; the
     * all-to-alls are one op each on the lane's comm stream (COMM_EP) at
     * every fidelity; an FB op runs its compute and its all-to-alls side by
     * side (DualPipe's overlap) and ends when both have. NULL = none. */
    const struct ep_plan *experts;
    bool ep_show_ranks;              /* also put the other EP ranks' expert GEMMs on their chips */
    /* Activations to host memory (training.offload = all, offload.h): a
     * forward's stash leaves when the forward ends and comes back before
     * its backward, fetched once the device's pass before that starts.
     * NULL = kept on the chip. */
    const struct offload *act_offload;
    /* Build every pass from its segments, none copied from the first of
     * its kind (pipeline.c, "passes copied"): the same graph, for tests
     * that show it. */
    bool every_pass;
    /* Record, per op appended, which program entry appended it (for the
     * steady-state period, sim/strategy/steady.h): pipeline_out.origin. */
    bool record_origin;
};

struct pipeline_out {
    int *last_op;   /* [devices]: the device's last compute op (its gradients are done) */
    int *first_op;  /* [devices]: the device's first compute op */
    int *last_any;  /* [devices]: the device's last appended pass op (compute or comm) */
    /* With plan->record_origin: for op ids origin_first .. origin_first +
     * n_origin − 1, the device and program position whose entry appended it
     * (hooks included: a ZeRO-3 gather belongs to the pass it feeds). */
    int32_t *origin, *origin_device;
    int origin_first, n_origin;
};

/* Append the pipeline's ops to `g` (not yet finalized). `out` arrays are
 * allocated here; free with pipeline_out_release. */
void pipeline_build(struct taskgraph *g, const struct pipeline_plan *plan,
                    struct pipeline_out *out);
void pipeline_out_release(struct pipeline_out *out);

#endif
