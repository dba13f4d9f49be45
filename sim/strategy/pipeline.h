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
#include "schedule.h"
#include "hardware/system.h"
#include "sim/engine/taskgraph.h"
#include "tensor.h"

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
     * before_pass: called before a F, B or BW pass is appended; returns an
     *   op the pass must wait for (e.g. ZeRO-3's weight all-gather) or -1.
     *   `prev` is the first op of the device's previous pass (-1 if none). */
    void (*on_grad)(void *ctx, struct taskgraph *g, int device, int stage, int layer, int op);
    int (*before_pass)(void *ctx, struct taskgraph *g, int device, int stage, int kind, int prev);
    void *hook_ctx;
    double pass_extra_comm;          /* MEM_COMM every F/B/BW pass holds while it runs */
    /* Expert parallelism (experts.h), with `tensor` built for it: segments
     * with an ep_role take the microbatch's routed durations; the
     * all-to-alls are one op each on the lane's comm stream (COMM_EP) at
     * every fidelity; an FB op runs its compute and its all-to-alls side by
     * side (DualPipe's overlap) and ends when both have. NULL = none. */
    const struct ep_plan *experts;
    bool ep_show_ranks;              /* also put the other EP ranks' expert GEMMs on their chips */
};

struct pipeline_out {
    int *last_op;   /* [devices]: the device's last compute op (its gradients are done) */
    int *first_op;  /* [devices]: the device's first compute op */
    int *last_any;  /* [devices]: the device's last appended pass op (compute or comm) */
};

/* Append the pipeline's ops to `g` (not yet finalized). `out` arrays are
 * allocated here; free with pipeline_out_release. */
void pipeline_build(struct taskgraph *g, const struct pipeline_plan *plan,
                    struct pipeline_out *out);
void pipeline_out_release(struct pipeline_out *out);

#endif
