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
 * parameter (other precisions: dp_bytes_per_param_recipe); ZeRO stage 1 shards the optimizer state over the dp replicas,
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
 * that backward.
 *
 * Step work after the last backward, per device: the gradient norm (a read
 * of the owned gradients), its all-reduce over the model-parallel chips
 * (every pipeline stage's lane, or the TP group without PP: clip-grad-norm
 * needs the global norm before any stage may step), then the Adam step and
 * the zeroing of the gradient buffers, priced as memory traffic. */
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
    /* dp: the chips gradients are reduced and ZeRO shards over. With
     * context parallelism that is the DP-CP group, parallel.dp ×
     * parallel.cp chips tp apart (Megatron-Core's distributed optimizer;
     * FSDP over TorchTitan's dp_shard × cp); `cp` > 1 with tp = 1 puts its
     * collectives on CP rank 1's comm stream, the lane's carrying CP's ring. */
    int tp, dp, zero, cp;
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
    /* The precision recipe (issue 14, calibration.md §8): bits of the main
     * gradients (held and reduced) and of Adam's moments; master weights
     * are fp32. */
    int grad_bits, optimizer_bits;
    /* ZeRO-1/2: gather the updated weights at the start of the step, under
     * the first forward, instead of after the optimizer (Megatron's
     * --overlap-param-gather; the gather of step n's update runs under step
     * n+1's forward, which in one simulated step is its own start). */
    bool overlap_param_gather;
    /* Time of `bytes` of memory-bound traffic in `kernels` launches (sim.c
     * prices it on the chip); NULL: the step work is free (synthetic). */
    mp_time (*memory_time)(void *ctx, double bytes, int kernels);
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
    int *gather_first;        /* [devices]: overlap_param_gather's first bucket, -1 */
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

/* Bytes per parameter held (weights, grads, optimizer) at a ZeRO stage,
 * with fp32 gradients and moments (mixed-precision Adam: 18 per parameter
 * at 16-bit weights). */
void dp_bytes_per_param(int weight_bits, int zero, int dp, double out[3]);

/* The same for a precision recipe (calibration.md §8): weights weight_bits,
 * main gradients grad_bits, optimizer = fp32 master (4) + two moments of
 * optimizer_bits + an fp32 copy of 16-bit gradients for the update (4):
 * 18 bytes for bf16/fp32 and 20 for fp16/fp16, Megatron's table. */
void dp_bytes_per_param_recipe(int weight_bits, int grad_bits, int optimizer_bits, int zero,
                               int dp, double out[3]);

/* Bytes the step work moves per parameter a chip owns (calibration.md §8,
 * derived): the gradient norm reads the gradients; the fused Adam step
 * reads gradient, master and moments and writes master, moments and the
 * 16-bit weights (30 bytes for bf16 weights, fp32 gradients and moments);
 * zeroing writes each gradient the chip holds. */
double dp_norm_bytes_per_param(int grad_bits);
double dp_adam_bytes_per_param(int weight_bits, int grad_bits, int optimizer_bits);

/* Whether ZeRO-1/2's weight all-gather runs at the step's start
 * (overlap_param_gather with dp > 1); dp_before_pass then makes each
 * device's first forward wait for its first bucket. */
bool dp_gathers_params_early(const struct dp_state *st);

#endif
