/* data_parallel.c — DP gradient sync, ZeRO and the optimizer step; see
 * data_parallel.h. */
#include "data_parallel.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Mixed-precision Adam (cases.md §4): fp32 gradients (Megatron all-reduces
 * them in fp32 by default) and 12 bytes of fp32 master weights and moments. */
#define GRAD_BYTES_PER_PARAM 4.0
#define OPTIMIZER_BYTES_PER_PARAM 12.0

void dp_bytes_per_param(int weight_bits, int zero, int dp, double out[3])
{
    out[0] = weight_bits / 8.0;
    out[1] = GRAD_BYTES_PER_PARAM;
    out[2] = OPTIMIZER_BYTES_PER_PARAM;
    if (zero >= 1) out[2] /= dp;
    if (zero >= 2) out[1] /= dp;
    if (zero >= 3) out[0] /= dp;
}

/* The simulated DP group of the device's chip: TP rank 1's when there is one. */
static void group(struct dp_state *st, int device)
{
    int lane = st->in.chip_of_device[device] + (st->in.tp > 1 ? 1 : 0);
    for (int r = 0; r < st->in.dp; r++) st->chips[r] = lane + r * st->in.tp;
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
            st->left_bytes[copy_of(st, d, s)] = in->layer_params ? st->stage_params[s] * GRAD_BYTES_PER_PARAM
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
        dp_bytes_per_param(in->weight_bits, in->zero, in->dp, b);
        if (in->layer_params) {
            tg_static_alloc(g, chip, MEM_WEIGHTS, st->device_params[d] * b[0]);
            tg_static_alloc(g, chip, MEM_GRADS, st->device_params[d] * b[1]);
            tg_static_alloc(g, chip, MEM_OPTIMIZER, st->device_params[d] * b[2]);
        } else {
            tg_static_alloc(g, chip, MEM_WEIGHTS, in->synthetic_weights);
        }
    }
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
                       : st->in.layer_params[layer] * GRAD_BYTES_PER_PARAM;
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
    (void)kind;
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
    for (int d = 0; d < prog->devices; d++) {
        int chip = st->in.chip_of_device[d];
        double params = st->device_params[d];
        if (!st->in.layer_params || params <= 0) continue;
        double shard = st->in.zero >= 1 ? params / st->in.dp : params;
        struct op o = tg_op(OP_COMPUTE, chip, STREAM_COMPUTE, TAG_OPTIMIZER,
                            st->in.optimizer_time(st->in.ctx, shard));
        int id = tg_add(g, &o);
        if (po->last_op[d] >= 0) tg_dep(g, po->last_op[d], id);
        if (po->last_any[d] >= 0 && po->last_any[d] != po->last_op[d]) tg_dep(g, po->last_any[d], id);
        for (int k = 0; k < st->n_sync[d]; k++) tg_dep(g, st->sync_done[d][k], id);
        if ((st->in.zero == 1 || st->in.zero == 2) && st->in.dp > 1) {
            /* The distributed optimizer's updated weights go back to all. */
            group(st, d);
            for (int r = 0; r < st->in.dp; r++) st->ready[r] = id;
            struct coll_spec c = { .op = COLL_ALL_GATHER, .algo = st->in.algo, .chips = st->chips,
                                   .n = st->in.dp, .bytes = params * st->in.weight_bits / 8.0,
                                   .comm = COMM_DP, .mb = -1, .stage = -1 };
            collective_add(g, st->in.sys, &c, st->in.fidelity, st->ready, st->done);
            st->collectives++;
        }
    }
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
    memset(st, 0, sizeof *st);
}
