/* pipeline.h — turns a schedule's op order (schedule.h) into a task graph:
 * compute ops timed per stage, activation and gradient hand-offs as transfers
 * on the route between the stages' chips, activation memory taken by F and
 * given back by B, W and BW, and the dependencies that tie it together.
 *
 * The TP group of a stage is one lane (the chip of TP rank 0, DESIGN.md §2);
 * data-parallel replicas are simulated once (replica 0's chips). */
#ifndef MPSIM_PIPELINE_H
#define MPSIM_PIPELINE_H

#include "common.h"
#include "schedule.h"
#include "system.h"
#include "taskgraph.h"

/* What one microbatch costs on one pipeline stage. */
struct stage_cost {
    mp_time t_f, t_b, t_w;   /* forward, input-grad, weight-grad */
    double act_bytes;        /* M_B: stashed by F until its backward */
    double act_w_bytes;      /* M_W: the part kept from B until W */
    double send_bytes;       /* activation handed to the next stage (and its gradient back) */
    int layer_first, layer_last; /* model layers on this stage */
};

struct pipeline_plan {
    const struct pipe_program *prog;
    const struct stage_cost *stage;  /* [prog->stages] */
    const int *chip_of_device;       /* [prog->devices] */
    const struct system *sys;        /* routes and their times */
    mp_time hop;                     /* extra delay on every stage-to-stage hand-off */
    mp_time t_fb;                    /* duration of an overlapped FB op; 0 = F + B + W */
};

struct pipeline_out {
    int *last_op;   /* [devices]: the device's last compute op (its gradients are done) */
    int *first_op;  /* [devices]: the device's first compute op */
};

/* Append the pipeline's ops to `g` (not yet finalized). `out` arrays are
 * allocated here; free with pipeline_out_release. */
void pipeline_build(struct taskgraph *g, const struct pipeline_plan *plan,
                    struct pipeline_out *out);
void pipeline_out_release(struct pipeline_out *out);

#endif
