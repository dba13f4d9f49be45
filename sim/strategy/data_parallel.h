/* data_parallel.h — data parallelism and ZeRO: the weights, gradients and
 * optimizer state each chip holds, the gradient synchronisation over the
 * replicas and the optimizer step.
 *
 * Replicas run the same ops at the same times, so one is simulated
 * (DESIGN.md §2) and the gradient collective spans them all. Each TP rank
 * syncs its own shard over its own DP group at the same time as the others;
 * the simulated DP group is TP rank 1's when tp > 1 (chips lane+1+r·tp),
 * so its collectives have a comm stream to themselves, as NCCL gives DP its
 * own communicator and stream, and TP rank 0's stream carries TP and PP.
 *
 * Memory (cases.md §4): mixed-precision Adam keeps weight_bits/8 bytes of
 * weights, 4 of fp32 gradients and 12 of fp32 master weights and moments per
 * parameter; ZeRO stage 1 shards the optimizer state over the dp replicas,
 * 2 also the gradients, 3 also the weights (a chip then gathers a stage's
 * weights for each pass, held while the pass runs).
 *
 * Traffic per step: ZeRO 0 all-reduces the fp32 gradients; ZeRO 1 and 2
 * reduce-scatter them and all-gather the updated weights after the
 * optimizer step (Megatron's distributed optimizer); ZeRO 3 reduce-scatters
 * the gradients and all-gathers the stage's weights before every forward
 * and backward pass (prefetched one pass ahead). Gradients are reduced once
 * per step, after the last microbatch (Megatron's order), in buckets of
 * training.dp_bucket bytes; with training.dp_overlap a bucket starts as soon
 * as the last backward has finished its layers, so it overlaps the rest of
 * that backward. */
#ifndef MPSIM_DATA_PARALLEL_H
#define MPSIM_DATA_PARALLEL_H

#include <stdbool.h>

#include "collective.h"
#include "pipeline.h"
#include "schedule.h"
#include "hardware/system.h"
#include "sim/engine/taskgraph.h"

struct dp_input {
    const struct pipe_program *prog;
    const struct stage_cost *stage;  /* [prog->stages]: layer ranges */
    const int *chip_of_device;       /* [devices]: the lane (TP rank 0) */
    const struct system *sys;
    int tp, dp, zero;
    bool overlap;
    double bucket_bytes;
    enum fidelity fidelity;
    enum coll_algo algo;
    int weight_bits;
    /* Parameters per chip (already ÷ tp) of each model layer; NULL for a
     * synthetic model, whose stages hold `synthetic_weights` bytes each and
     * sync that many bytes. */
    const double *layer_params;
    double synthetic_weights;
    /* The optimizer step's time for `params` parameters (sim.c prices it). */
    mp_time (*optimizer_time)(void *ctx, double params);
    void *ctx;
};

struct dp_state {
    struct dp_input in;
    double *stage_params;     /* [stages]: parameters per chip */
    double *device_params;    /* [devices] */
    /* Per (device, stage) copy, indexed by path × stages + stage (the path
     * whose device holds it first): O(stages), not devices × stages. */
    double *pending_bytes;    /* gradient bytes waiting for a bucket */
    int *pending_op;          /* the op after which they are ready */
    double *left_bytes;       /* gradient bytes not yet bucketed */
    int *dev_off, *dev_key;   /* CSR: each device's copies, by stage */
    int **sync_done;          /* [devices]: the lane-side ops of each bucket */
    int *n_sync, *cap_sync;
    int *chips, *ready, *done;/* scratch [dp] */
    int collectives;          /* bucket collectives appended */
};

/* Prepare; also puts each device's static memory into `g`. */
void dp_init(struct dp_state *st, struct taskgraph *g, const struct dp_input *in);

/* Hooks for pipeline_plan (pipeline.h): point plan->on_grad / before_pass
 * here with hook_ctx = st. pipeline_plan.pass_extra_comm: dp_pass_buffer. */
void dp_on_grad(void *ctx, struct taskgraph *g, int device, int stage, int layer, int op);
int dp_before_pass(void *ctx, struct taskgraph *g, int device, int stage, int kind, int prev);
double dp_pass_buffer(const struct dp_state *st, int device);

/* After pipeline_build: the remaining buckets, the optimizer step and (ZeRO
 * 1, 2) the weight all-gather. */
void dp_finish(struct dp_state *st, struct taskgraph *g, const struct pipeline_out *po);

/* Free the bucket and sync bookkeeping (the ops stay in the task graph). */
void dp_release(struct dp_state *st);

/* Bytes per parameter held (weights, grads, optimizer) at a ZeRO stage. */
void dp_bytes_per_param(int weight_bits, int zero, int dp, double out[3]);

#endif
