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
 * parameter (other precisions and recipes: dp_bytes_per_param_recipe); ZeRO
 * stage 1 shards the optimizer state over the dp replicas, 2 also the
 * gradients, 3 also the weights.
 *
 * Traffic per step: ZeRO 0 all-reduces the fp32 gradients; ZeRO 1 and 2
 * reduce-scatter them and all-gather the updated weights after the
 * optimizer step (Megatron's distributed optimizer). Gradients are reduced
 * once per step, after the last microbatch (Megatron's order), in buckets of
 * training.dp_bucket bytes; with training.dp_overlap a bucket starts as soon
 * as the last backward has finished its layers, so it overlaps the rest of
 * that backward.
 *
 * ZeRO 3 works as PyTorch FSDP with one unit per layer (a transformer block,
 * as FSDP's auto-wrap policy makes them; DeepSpeed ZeRO-3 fetches
 * parameters the same way): every forward pass all-gathers each layer's
 * weights just before the layer computes, prefetching the next layer's as a
 * layer starts (forward_prefetch, BACKWARD_PRE), and frees a layer's
 * gathered weights once it has run (reshard_after_forward); every backward
 * gathers them again in reverse order, and as a layer's backward ends its
 * main gradients (fp32, or the recipe's grad_reduce) are reduce-scattered to their owners, every microbatch.
 * So a pass holds one layer's gathered weights and the prefetch of the next
 * (dp_units: the largest two neighbours on the stage), and a backward one
 * layer's unsharded gradients until their reduce-scatter; the last pass of
 * one stage prefetches the first layer of the device's next pass. All of it
 * runs on the DP stream in issue order (pipeline.h, units).
 *
 * Offload (training.offload, offload.h) moves the optimizer state (and the
 * weights) to host memory: gradients leave over the host link as their
 * reduction ends, the CPU steps the optimizer, updated weights come back
 * (unless they live on the host, fetched layer by layer per pass).
 *
 * Step work after the last backward, per device: the gradient norm (a read
 * of the owned gradients), its all-reduce over the model-parallel chips
 * (every pipeline stage's lane, or the TP group without PP: clip-grad-norm
 * needs the global norm before any stage may step), then the Adam step and
 * the zeroing of the gradient buffers, priced as memory traffic. With the
 * optimizer offloaded the norm and Adam run on the host (not modelled;
 * offload.h): the norm's all-reduce still runs, after the last gradient
 * has left for the host. */
#ifndef MPSIM_DATA_PARALLEL_H
#define MPSIM_DATA_PARALLEL_H

#include <stdbool.h>

#include "collective.h"
#include "offload.h"
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
    /* Forward FLOPs of each model layer (NULL with layer_params): a
     * layer's share of its stage's pass time, for ZeRO-3's units. */
    const double *layer_flops;
    double synthetic_weights;
    /* State kept in host memory (offload.h); NULL or kind OFFLOAD_NONE: none. */
    const struct offload *offload;
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
    struct pipe_units *units; /* [stages]: ZeRO-3 units (dp_units), NULL otherwise */
    double *host_bytes;       /* [devices]: bytes a chip keeps in host memory (offload) */
    /* Fast-fidelity times already priced, by (device, op, bytes): ZeRO-3
     * prices the same gathers every pass, and pricing a group of hundreds
     * walks its routes. */
    struct dp_timed { int device, op; double bytes; mp_time t; } *timed;
    int n_timed, cap_timed;
    double *unit_share;       /* their shares, [layers of all stages] */
    int *gather_first;        /* [devices]: overlap_param_gather's first bucket, -1 */
};

/* Prepare; also puts each device's static memory into `g`. */
void dp_init(struct dp_state *st, struct taskgraph *g, const struct dp_input *in);

/* Hooks for pipeline_plan (pipeline.h): point plan->on_grad here with
 * hook_ctx = st; with ZeRO 3, plan->units = dp_units(st) and
 * plan->before_unit / after_unit = dp_before_unit / dp_after_unit. */
void dp_on_grad(void *ctx, struct taskgraph *g, int device, int stage, int layer, int op);

/* ZeRO 3's units, one per layer of each stage ([stages]), with the bytes a
 * pass holds (above); NULL unless zero = 3, dp > 1 and a transformer model. */
const struct pipe_units *dp_units(const struct dp_state *st);

/* The all-gather of a unit's weights over the DP group, after `issue`; and
 * the reduce-scatter of its main gradients after `last` (pipeline.h). */
int dp_before_unit(void *ctx, struct taskgraph *g, int device, int stage, int unit, int issue);
void dp_after_unit(void *ctx, struct taskgraph *g, int device, int stage, int unit, int last);

/* After pipeline_build: the remaining buckets, the optimizer step and (ZeRO
 * 1, 2) the weight all-gather. */
void dp_finish(struct dp_state *st, struct taskgraph *g, const struct pipeline_out *po);

/* Bytes one chip of `device` keeps in host memory (offload.h): its share of
 * the optimizer state and, offloading weights, of the 16-bit weights. */
double dp_host_bytes(const struct dp_state *st, int device);

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
 * (overlap_param_gather with dp > 1); dp_init then makes each device's
 * first forward wait for its first bucket (a zero-time mark at the head of
 * its compute stream). */
bool dp_gathers_params_early(const struct dp_state *st);

#endif
