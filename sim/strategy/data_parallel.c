/* data_parallel.c — DP gradient sync, ZeRO and the optimizer step; see
 * data_parallel.h. */
#include "data_parallel.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Mixed-precision Adam (cases.md §4, calibration.md §8): fp32 master
 * weights (4 bytes), two moments, and the main gradients (Megatron keeps and
 * all-reduces them in fp32 by default, --grad-reduce-in-bf16 in bf16). */
#define MASTER_BYTES_PER_PARAM 4.0

static double bits_or(int bits, int fallback) { return (bits ? bits : fallback) / 8.0; }

void dp_bytes_per_param_recipe(int weight_bits, int grad_bits, int optimizer_bits, int zero,
                               int dp, double out[3])
{
    double g = bits_or(grad_bits, 32), o = bits_or(optimizer_bits, 32);
    out[0] = weight_bits / 8.0;
    out[1] = g;
    /* 16-bit gradients get an fp32 copy for the update (Megatron's table:
     * fp16/fp16 is 20 bytes, 4 + 16/d distributed). */
    out[2] = MASTER_BYTES_PER_PARAM + 2 * o + (g < 4 ? 4 : 0);
    if (zero >= 1) out[2] /= dp;
    if (zero >= 2) out[1] /= dp;
    if (zero >= 3) out[0] /= dp;
}

void dp_bytes_per_param(int weight_bits, int zero, int dp, double out[3])
{
    dp_bytes_per_param_recipe(weight_bits, 32, 32, zero, dp, out);
}

double dp_norm_bytes_per_param(int grad_bits) { return bits_or(grad_bits, 32); }

double dp_adam_bytes_per_param(int weight_bits, int grad_bits, int optimizer_bits)
{
    double g = bits_or(grad_bits, 32), o = bits_or(optimizer_bits, 32), w = weight_bits / 8.0;
    double read = g + MASTER_BYTES_PER_PARAM + 2 * o;
    double write = MASTER_BYTES_PER_PARAM + 2 * o + w;
    return read + write;
}

static double grad_bytes(const struct dp_state *st) { return bits_or(st->in.grad_bits, 32); }

/* The simulated DP group of the device's chip: TP rank 1's when there is one;
 * with context parallelism and no TP, the DP-CP group listed from CP rank 1
 * (the same ring, another chip's comm stream). */
static void group(struct dp_state *st, int device)
{
    int lane = st->in.chip_of_device[device] + (st->in.tp > 1 ? 1 : 0);
    int first = st->in.tp == 1 && st->in.cp > 1 ? 1 : 0;
    for (int r = 0; r < st->in.dp; r++)
        st->chips[r] = lane + ((r + first) % st->in.dp) * st->in.tp;
}

/* Index of device d's copy of stage s: path × stages + stage, for the first
 * path whose device runs s on d. */
static int copy_of(const struct dp_state *st, int d, int s)
{
    const struct pipe_program *prog = st->in.prog;
    int q = 0;
    while (q + 1 < prog->paths && prog->device_of[q * prog->stages + s] != d) q++;
    assert(prog->device_of[q * prog->stages + s] == d);
    return q * prog->stages + s;
}

bool dp_gathers_params_early(const struct dp_state *st)
{
    return st->in.overlap_param_gather && (st->in.zero == 1 || st->in.zero == 2) &&
           st->in.dp > 1 && st->in.layer_params;
}

/* ZeRO-1/2's all-gather of device d's updated weights, in buckets of as
 * many parameters as a gradient bucket holds, after op `after` (-1 none).
 * `first_of` >= 0: remember the first bucket's end as that device's
 * gather_first. */
static void gather_params(struct dp_state *st, struct taskgraph *g, int d, int after,
                          int first_of)
{
    double params = st->device_params[d];
    if (params <= 0) return;
    double per_bucket = st->in.bucket_bytes / grad_bytes(st);
    int n = (int)ceil(params / per_bucket);
    if (n < 1) n = 1;
    if (first_of < 0) n = 1; /* after the optimizer: one gather, as before */
    group(st, d);
    for (int k = 0; k < n; k++) {
        for (int r = 0; r < st->in.dp; r++) st->ready[r] = after;
        struct coll_spec c = { .op = COLL_ALL_GATHER, .algo = st->in.algo, .chips = st->chips,
                               .n = st->in.dp, .bytes = params / n * st->in.weight_bits / 8.0,
                               .comm = COMM_DP, .mb = -1, .stage = -1 };
        collective_add(g, st->in.sys, &c, st->in.fidelity, st->ready, st->done);
        st->collectives++;
        if (k == 0 && first_of >= 0) st->gather_first[first_of] = st->done[0];
    }
}

void dp_init(struct dp_state *st, struct taskgraph *g, const struct dp_input *in)
{
    memset(st, 0, sizeof *st);
    st->in = *in;
    const struct pipe_program *prog = in->prog;
    int S = prog->stages, D = prog->devices;
    st->stage_params = mp_xcalloc((size_t)S, sizeof *st->stage_params);
    st->device_params = mp_xcalloc((size_t)D, sizeof *st->device_params);
    /* Per (device, stage) copy: DualPipe holds each stage on two devices,
     * and each copy syncs its own gradients. */
    size_t copies = (size_t)prog->paths * S;
    st->pending_bytes = mp_xcalloc(copies, sizeof *st->pending_bytes);
    st->left_bytes = mp_xcalloc(copies, sizeof *st->left_bytes);
    st->pending_op = mp_xmalloc(copies * sizeof *st->pending_op);
    for (size_t i = 0; i < copies; i++) st->pending_op[i] = -1;
    /* Each device's copies in stage order (a counting sort by device). */
    st->dev_off = mp_xcalloc((size_t)D + 1, sizeof *st->dev_off);
    st->dev_key = mp_xmalloc(copies * sizeof *st->dev_key);
    for (int pass = 0; pass < 2; pass++) {
        int *fill = pass ? mp_xmalloc((size_t)D * sizeof *fill) : NULL;
        if (pass) memcpy(fill, st->dev_off, (size_t)D * sizeof *fill);
        for (int s = 0; s < S; s++)
            for (int q = 0; q < prog->paths; q++) {
                int d = prog->device_of[q * S + s];
                if (copy_of(st, d, s) != q * S + s) continue; /* same device twice */
                if (pass) st->dev_key[fill[d]++] = q * S + s;
                else st->dev_off[d + 1]++;
            }
        if (!pass)
            for (int d = 0; d < D; d++) st->dev_off[d + 1] += st->dev_off[d];
        free(fill);
    }
    st->sync_done = mp_xcalloc((size_t)D, sizeof *st->sync_done);
    st->n_sync = mp_xcalloc((size_t)D, sizeof *st->n_sync);
    st->cap_sync = mp_xcalloc((size_t)D, sizeof *st->cap_sync);
    st->chips = mp_xmalloc((size_t)in->dp * sizeof *st->chips);
    st->ready = mp_xmalloc((size_t)in->dp * sizeof *st->ready);
    st->done = mp_xmalloc((size_t)in->dp * sizeof *st->done);
    for (int s = 0; s < S; s++) {
        const struct stage_cost *c = &in->stage[s];
        if (in->layer_params)
            for (int l = c->layer_first; l <= c->layer_last; l++) st->stage_params[s] += in->layer_params[l];
        for (int q = 0; q < prog->paths; q++) {
            int d = prog->device_of[q * S + s];
            st->left_bytes[copy_of(st, d, s)] = in->layer_params ? st->stage_params[s] * grad_bytes(st)
                                                         : in->synthetic_weights;
        }
    }
    /* A device holds each stage it runs once per path (DualPipe holds every
     * stage twice, once per direction). */
    for (int q = 0; q < prog->paths; q++)
        for (int s = 0; s < S; s++) {
            int d = prog->device_of[q * S + s];
            bool seen = false;
            for (int q2 = 0; q2 < q; q2++) seen |= prog->device_of[q2 * S + s] == d;
            if (!seen || prog->paths == 2) st->device_params[d] += st->stage_params[s];
        }
    for (int d = 0; d < D; d++) {
        int chip = in->chip_of_device[d];
        double b[3];
        dp_bytes_per_param_recipe(in->weight_bits, in->grad_bits, in->optimizer_bits, in->zero,
                                  in->dp, b);
        if (in->layer_params) {
            tg_static_alloc(g, chip, MEM_WEIGHTS, st->device_params[d] * b[0]);
            tg_static_alloc(g, chip, MEM_GRADS, st->device_params[d] * b[1]);
            tg_static_alloc(g, chip, MEM_OPTIMIZER, st->device_params[d] * b[2]);
        } else {
            tg_static_alloc(g, chip, MEM_WEIGHTS, in->synthetic_weights);
        }
    }
    st->gather_first = mp_xmalloc((size_t)D * sizeof *st->gather_first);
    for (int d = 0; d < D; d++) st->gather_first[d] = -1;
    if (dp_gathers_params_early(st))
        for (int d = 0; d < D; d++) gather_params(st, g, d, -1, d);
}

static void add_sync(struct dp_state *st, int device, int op)
{
    MP_GROW(st->sync_done[device], st->cap_sync[device], st->n_sync[device] + 1);
    st->sync_done[device][st->n_sync[device]++] = op;
}

/* One bucket: an all-reduce (ZeRO 0) or reduce-scatter (ZeRO ≥ 1) over the
 * device's DP group, after `after`. */
static void bucket(struct dp_state *st, struct taskgraph *g, int d, int stage, double bytes,
                   int after)
{
    if (bytes <= 0 || st->in.dp <= 1) return;
    group(st, d);
    for (int r = 0; r < st->in.dp; r++) st->ready[r] = after;
    struct coll_spec c = { .op = st->in.zero >= 1 ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE,
                           .algo = st->in.algo, .chips = st->chips, .n = st->in.dp, .bytes = bytes,
                           .comm = COMM_DP, .mb = -1, .stage = stage };
    collective_add(g, st->in.sys, &c, st->in.fidelity, st->ready, st->done);
    add_sync(st, d, st->done[0]);
    st->collectives++;
}

static void flush(struct dp_state *st, struct taskgraph *g, int d, int stage)
{
    int k = copy_of(st, d, stage);
    bucket(st, g, d, stage, st->pending_bytes[k], st->pending_op[k]);
    st->pending_bytes[k] = 0;
}

void dp_on_grad(void *ctx, struct taskgraph *g, int device, int stage, int layer, int op)
{
    struct dp_state *st = ctx;
    if (!st->in.overlap) return;
    int k = copy_of(st, device, stage);
    double bytes = layer < 0 || !st->in.layer_params
                       ? st->left_bytes[k]
                       : st->in.layer_params[layer] * grad_bytes(st);
    if (bytes > st->left_bytes[k]) bytes = st->left_bytes[k];
    st->left_bytes[k] -= bytes;
    st->pending_bytes[k] += bytes;
    st->pending_op[k] = op;
    if (st->pending_bytes[k] >= st->in.bucket_bytes || st->left_bytes[k] <= 0)
        flush(st, g, device, stage);
}

double dp_pass_buffer(const struct dp_state *st, int device)
{
    if (st->in.zero < 3 || st->in.dp <= 1 || !st->in.layer_params) return 0;
    /* The gathered weights of the device's largest stage. */
    double most = 0;
    const struct pipe_program *prog = st->in.prog;
    for (int s = 0; s < prog->stages; s++)
        if (prog->device_of[s] == device && st->stage_params[s] > most) most = st->stage_params[s];
    return most * st->in.weight_bits / 8.0;
}

int dp_before_pass(void *ctx, struct taskgraph *g, int device, int stage, int kind, int prev)
{
    struct dp_state *st = ctx;
    if (st->gather_first && st->gather_first[device] >= 0) {
        /* overlap_param_gather: the first forward needs its first bucket. */
        int op = kind == PIPE_F ? st->gather_first[device] : -1;
        if (op >= 0) st->gather_first[device] = -1;
        return op;
    }
    if (st->in.zero < 3 || st->in.dp <= 1 || !st->in.layer_params) return -1;
    group(st, device);
    for (int r = 0; r < st->in.dp; r++) st->ready[r] = prev;
    struct coll_spec c = { .op = COLL_ALL_GATHER, .algo = st->in.algo, .chips = st->chips,
                           .n = st->in.dp, .bytes = st->stage_params[stage] * st->in.weight_bits / 8.0,
                           .comm = COMM_DP, .mb = -1, .stage = stage };
    collective_add(g, st->in.sys, &c, st->in.fidelity, st->ready, st->done);
    st->collectives++;
    return st->done[0];
}

/* The model-parallel group of the gradient norm's all-reduce: every
 * device's lane, or the TP group of a one-stage pipeline. */
static int norm_group(const struct dp_state *st, int *chips)
{
    int D = st->in.prog->devices;
    if (D > 1) {
        for (int d = 0; d < D; d++) chips[d] = st->in.chip_of_device[d];
        return D;
    }
    for (int r = 0; r < st->in.tp; r++) chips[r] = st->in.chip_of_device[0] + r;
    return st->in.tp;
}

/* Per device after its gradients are synced: the gradient norm, its
 * all-reduce over the model-parallel chips, the Adam step with the
 * zeroing of the gradient buffers; ZeRO 1/2 then all-gather the updated
 * weights (unless they are gathered at the step's start). */
static void step_work(struct dp_state *st, struct taskgraph *g, const struct pipeline_out *po)
{
    const struct dp_input *in = &st->in;
    int D = in->prog->devices;
    if (!in->layer_params) return;
    int *norm = mp_xmalloc((size_t)D * sizeof *norm), *after = mp_xmalloc((size_t)D * sizeof *after);
    int n_group = D > in->tp ? D : in->tp;
    int *chips = mp_xmalloc((size_t)n_group * sizeof *chips);
    int *ready = mp_xmalloc((size_t)n_group * sizeof *ready);
    int *done = mp_xmalloc((size_t)n_group * sizeof *done);
    double b[3];
    dp_bytes_per_param_recipe(in->weight_bits, in->grad_bits, in->optimizer_bits, in->zero, in->dp, b);
    for (int d = 0; d < D; d++) {
        int chip = in->chip_of_device[d];
        double params = st->device_params[d];
        double owned = in->zero >= 1 ? params / in->dp : params;
        mp_time t = in->memory_time
                        ? in->memory_time(in->ctx, owned * dp_norm_bytes_per_param(in->grad_bits), 1)
                        : 0;
        struct op o = tg_op(OP_COMPUTE, chip, STREAM_COMPUTE, TAG_OPTIMIZER, t);
        norm[d] = tg_add(g, &o);
        if (po->last_op[d] >= 0) tg_dep(g, po->last_op[d], norm[d]);
        if (po->last_any[d] >= 0 && po->last_any[d] != po->last_op[d]) tg_dep(g, po->last_any[d], norm[d]);
        for (int k = 0; k < st->n_sync[d]; k++) tg_dep(g, st->sync_done[d][k], norm[d]);
        after[d] = norm[d];
    }
    int n = norm_group(st, chips);
    if (n > 1) {
        for (int i = 0; i < n; i++) ready[i] = norm[D > 1 ? i : 0];
        struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = in->algo, .chips = chips, .n = n,
                               .bytes = 4, .comm = COMM_DP, .mb = -1, .stage = -1 };
        collective_add(g, in->sys, &c, in->fidelity, ready, done);
        for (int d = 0; d < D; d++) after[d] = done[D > 1 ? d : 0];
    }
    for (int d = 0; d < D; d++) {
        int chip = in->chip_of_device[d];
        double params = st->device_params[d];
        if (params <= 0) continue;
        double owned = in->zero >= 1 ? params / in->dp : params;
        double held = params * b[1];   /* gradient bytes the chip holds */
        double bytes = owned * dp_adam_bytes_per_param(in->weight_bits, in->grad_bits,
                                                       in->optimizer_bits) + held;
        mp_time t = in->memory_time ? in->memory_time(in->ctx, bytes, 2) : 0;
        struct op o = tg_op(OP_COMPUTE, chip, STREAM_COMPUTE, TAG_OPTIMIZER, t);
        int id = tg_add(g, &o);
        tg_dep(g, norm[d], id);
        if (after[d] != norm[d]) tg_dep(g, after[d], id);
        if ((in->zero == 1 || in->zero == 2) && in->dp > 1 && !dp_gathers_params_early(st))
            gather_params(st, g, d, id, -1);
    }
    free(norm);
    free(after);
    free(chips);
    free(ready);
    free(done);
}

void dp_finish(struct dp_state *st, struct taskgraph *g, const struct pipeline_out *po)
{
    const struct pipe_program *prog = st->in.prog;
    /* Whatever no bucket took yet syncs after the device's last op; without
     * overlap that is one collective per device, as Megatron does. */
    for (int d = 0; d < prog->devices; d++)
        for (int i = st->dev_off[d]; i < st->dev_off[d + 1]; i++) {
            int k = st->dev_key[i], s = k % prog->stages;
            if (st->pending_bytes[k] > 0) flush(st, g, d, s);
            if (st->left_bytes[k] <= 0) continue;
            st->pending_bytes[k] = st->left_bytes[k];
            st->left_bytes[k] = 0;
            st->pending_op[k] = po->last_op[d];
            if (!st->in.overlap)
                for (int j = i + 1; j < st->dev_off[d + 1]; j++) {
                    st->pending_bytes[k] += st->left_bytes[st->dev_key[j]];
                    st->left_bytes[st->dev_key[j]] = 0;
                }
            flush(st, g, d, s);
        }
    step_work(st, g, po);
}

void dp_release(struct dp_state *st)
{
    for (int d = 0; st->sync_done && d < st->in.prog->devices; d++) free(st->sync_done[d]);
    free(st->sync_done);
    free(st->n_sync);
    free(st->cap_sync);
    free(st->stage_params);
    free(st->device_params);
    free(st->pending_bytes);
    free(st->pending_op);
    free(st->left_bytes);
    free(st->dev_off);
    free(st->dev_key);
    free(st->chips);
    free(st->ready);
    free(st->done);
    free(st->gather_first);
    memset(st, 0, sizeof *st);
}
