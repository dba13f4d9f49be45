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

static void build_units(struct dp_state *st);
static void add_collective(struct dp_state *st, struct taskgraph *g, int d, struct coll_spec *c);

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
    /* Every bucket is one op at least: past INT32_MAX of them the graph
     * could not hold them anyway (the cap below counts them). */
    double buckets = ceil(params / per_bucket);
    int n = buckets < 1 ? 1 : buckets > INT32_MAX ? INT32_MAX : (int)buckets;
    if (first_of < 0) n = 1; /* after the optimizer: one gather, as before */
    group(st, d);
    for (int k = 0; k < n; k++) {
        long long before = g->wanted_ops;
        for (int r = 0; r < st->in.dp; r++) st->ready[r] = after;
        struct coll_spec c = { .op = COLL_ALL_GATHER, .algo = st->in.algo, .chips = st->chips,
                               .n = st->in.dp, .bytes = params / n * st->in.weight_bits / 8.0,
                               .comm = COMM_DP, .mb = -1, .stage = -1 };
        add_collective(st, g, d, &c);
        if (k == 0 && first_of >= 0) st->gather_first[first_of] = st->done[0];
        /* Past the graph's cap the rest are only counted (taskgraph.h): each
         * bucket adds what this one did, so count them without the loop — a
         * 1KB dp_bucket makes millions of them (the value fuzzer). */
        if (g->over && k + 1 < n) {
            g->wanted_ops += (long long)(n - k - 1) * (g->wanted_ops - before);
            break;
        }
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
    st->host_bytes = mp_xcalloc((size_t)D, sizeof *st->host_bytes);
    enum offload_kind off = in->offload ? in->offload->kind : OFFLOAD_NONE;
    for (int d = 0; d < D; d++) {
        int chip = in->chip_of_device[d];
        double b[3];
        dp_bytes_per_param_recipe(in->weight_bits, in->grad_bits, in->optimizer_bits, in->zero,
                                  in->dp, b);
        if (in->layer_params) {
            /* Offloaded state is held by the host, not the chip (offload.h). */
            double w = st->device_params[d] * b[0], o = st->device_params[d] * b[2];
            if (off >= OFFLOAD_OPTIMIZER) st->host_bytes[d] += o, o = 0;
            if (off >= OFFLOAD_WEIGHTS) st->host_bytes[d] += w, w = 0;
            tg_static_alloc(g, chip, MEM_WEIGHTS, w);
            tg_static_alloc(g, chip, MEM_GRADS, st->device_params[d] * b[1]);
            tg_static_alloc(g, chip, MEM_OPTIMIZER, o);
        } else {
            tg_static_alloc(g, chip, MEM_WEIGHTS, in->synthetic_weights);
        }
    }
    if (in->zero >= 3 && (in->dp > 1 || off >= OFFLOAD_WEIGHTS) && in->layer_params &&
        in->layer_flops)
        build_units(st);
    st->gather_first = mp_xmalloc((size_t)D * sizeof *st->gather_first);
    for (int d = 0; d < D; d++) st->gather_first[d] = -1;
    if (dp_gathers_params_early(st))
        for (int d = 0; d < D; d++) {
            gather_params(st, g, d, -1, d);
            if (st->gather_first[d] < 0) continue;
            /* The device's first forward needs the first bucket: a
             * zero-time mark heads its compute stream (every pass keeps
             * the same dependencies, so the steady state still repeats). */
            struct op m = tg_op(OP_MEMORY, in->chip_of_device[d], STREAM_COMPUTE, TAG_MEM, 0);
            int id = tg_add(g, &m);
            tg_dep(g, st->gather_first[d], id);
        }
}

double dp_host_bytes(const struct dp_state *st, int device)
{
    return st->host_bytes[device];
}

static enum offload_kind offloads(const struct dp_state *st)
{
    return st->in.offload ? st->in.offload->kind : OFFLOAD_NONE;
}

/* Append collective `c` of device d's DP group (group() already called),
 * its fast time looked up before it is priced. */
static void add_collective(struct dp_state *st, struct taskgraph *g, int d, struct coll_spec *c)
{
    if (st->in.fidelity == FIDELITY_FAST) {
        int i = 0;
        while (i < st->n_timed && !(st->timed[i].device == d && st->timed[i].op == (int)c->op &&
                                    st->timed[i].bytes == c->bytes))
            i++;
        if (i == st->n_timed) {
            MP_GROW(st->timed, st->cap_timed, st->n_timed + 1);
            st->timed[st->n_timed++] = (struct dp_timed){ d, (int)c->op, c->bytes,
                                                          collective_time(st->in.sys, c) };
        }
        c->time = st->timed[i].t;
    }
    collective_add(g, st->in.sys, c, st->in.fidelity, st->ready, st->done);
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
    bool off = offloads(st) >= OFFLOAD_OPTIMIZER;
    if (bytes <= 0 || (st->in.dp <= 1 && !off)) return;
    int done = after;
    if (st->in.dp > 1) {
        group(st, d);
        for (int r = 0; r < st->in.dp; r++) st->ready[r] = after;
        struct coll_spec c = { .op = st->in.zero >= 1 ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE,
                               .algo = st->in.algo, .chips = st->chips, .n = st->in.dp,
                               .bytes = bytes, .comm = COMM_DP, .mb = -1, .stage = stage };
        add_collective(st, g, d, &c);
        done = st->done[0];
    }
    /* ZeRO-Offload: the reduced shard goes to the host for CPU-Adam. */
    if (off)
        done = offload_copy(g, st->in.offload, st->in.chip_of_device[d], true,
                            st->in.zero >= 1 ? bytes / st->in.dp : bytes, done, MEM_GRADS, 0, 0);
    add_sync(st, d, done);
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
    if (!st->in.overlap || st->units) return; /* ZeRO 3 reduce-scatters per unit */
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

const struct pipe_units *dp_units(const struct dp_state *st)
{
    return st->units;
}

/* One unit per layer of each stage, its share the layer's forward FLOPs; a
 * pass holds the largest two neighbouring units' gathered weights (or the
 * largest one, when a stage has one layer or a single huge one) and a
 * backward the largest unit's fp32 gradients. */
static void build_units(struct dp_state *st)
{
    const struct dp_input *in = &st->in;
    int S = in->prog->stages, total = 0;
    for (int s = 0; s < S; s++) total += in->stage[s].layer_last - in->stage[s].layer_first + 1;
    st->units = mp_xcalloc((size_t)S, sizeof *st->units);
    st->unit_share = mp_xcalloc((size_t)total, sizeof *st->unit_share);
    double wb = in->weight_bits / 8.0, *share = st->unit_share;
    for (int s = 0; s < S; s++) {
        int lo = in->stage[s].layer_first, n = in->stage[s].layer_last - lo + 1;
        struct pipe_units *u = &st->units[s];
        double flops = 0, pair = 0, most = 0;
        for (int l = lo; l < lo + n; l++) flops += in->layer_flops[l];
        for (int k = 0; k < n; k++) {
            double p = in->layer_params[lo + k];
            share[k] = flops > 0 ? in->layer_flops[lo + k] / flops : 1.0 / n;
            if (p > most) most = p;
            if (k + 1 < n && p + in->layer_params[lo + k + 1] > pair) pair = p + in->layer_params[lo + k + 1];
        }
        u->n = n;
        u->share = share;
        u->gathered_bytes = (pair > most ? pair : most) * wb;
        u->grad_bytes = most * grad_bytes(st);
        share += n;
    }
}

int dp_before_unit(void *ctx, struct taskgraph *g, int device, int stage, int unit, int issue)
{
    struct dp_state *st = ctx;
    int layer = st->in.stage[stage].layer_first + unit;
    double wb = st->in.weight_bits / 8.0;
    /* ZeRO-Infinity: the chip's shard of the layer comes from host memory
     * first, then the group gathers the layer from the shards. */
    if (offloads(st) >= OFFLOAD_WEIGHTS)
        issue = offload_copy(g, st->in.offload, st->in.chip_of_device[device], false,
                             st->in.layer_params[layer] * wb / st->in.dp, issue, MEM_COMM, 0, 0);
    if (st->in.dp <= 1) return issue;
    group(st, device);
    for (int r = 0; r < st->in.dp; r++) st->ready[r] = issue;
    struct coll_spec c = { .op = COLL_ALL_GATHER, .algo = st->in.algo, .chips = st->chips,
                           .n = st->in.dp, .bytes = st->in.layer_params[layer] * st->in.weight_bits / 8.0,
                           .comm = COMM_DP, .mb = -1, .stage = stage };
    add_collective(st, g, device, &c);
    return st->done[0];
}

void dp_after_unit(void *ctx, struct taskgraph *g, int device, int stage, int unit, int last)
{
    struct dp_state *st = ctx;
    int layer = st->in.stage[stage].layer_first + unit;
    double bytes = st->in.layer_params[layer] * grad_bytes(st);
    int done = last;
    if (st->in.dp > 1) {
        group(st, device);
        for (int r = 0; r < st->in.dp; r++) st->ready[r] = last;
        struct coll_spec c = { .op = COLL_REDUCE_SCATTER, .algo = st->in.algo, .chips = st->chips,
                               .n = st->in.dp, .bytes = bytes, .comm = COMM_DP, .mb = -1,
                               .stage = stage };
        add_collective(st, g, device, &c);
        done = st->done[0];
    }
    /* ZeRO-Offload with ZeRO 3: every microbatch's reduced shard goes to
     * the host, where CPU-Adam accumulates it. */
    if (offloads(st) >= OFFLOAD_OPTIMIZER)
        done = offload_copy(g, st->in.offload, st->in.chip_of_device[device], true,
                            bytes / st->in.dp, done, MEM_GRADS, 0, 0);
    /* The optimizer step waits for every reduce-scatter of the device. */
    if (done != last) add_sync(st, device, done);
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
 * weights (unless they are gathered at the step's start). With the
 * optimizer offloaded (offload.h) the norm and the step run on the host
 * (CPU-Adam, not modelled): a zero-time mark on the copy stream once every
 * gradient has left, the norm's all-reduce, and (offload = optimizer) the
 * updated 16-bit weights, the chip's shard, back before the gather. */
static void step_work(struct dp_state *st, struct taskgraph *g, const struct pipeline_out *po)
{
    const struct dp_input *in = &st->in;
    int D = in->prog->devices;
    if (!in->layer_params) return;
    enum offload_kind off = offloads(st);
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
        if (off >= OFFLOAD_OPTIMIZER) o = tg_op(OP_MEMORY, chip, STREAM_FROM_HOST, TAG_OPTIMIZER, 0);
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
        int id;
        if (off >= OFFLOAD_OPTIMIZER) {
            id = after[d];
            if (off == OFFLOAD_OPTIMIZER)
                id = offload_copy(g, in->offload, chip, false, owned * in->weight_bits / 8.0, id,
                                  MEM_WEIGHTS, 0, 0);
        } else {
            double held = params * b[1];   /* gradient bytes the chip holds */
            double bytes = owned * dp_adam_bytes_per_param(in->weight_bits, in->grad_bits,
                                                           in->optimizer_bits) + held;
            mp_time t = in->memory_time ? in->memory_time(in->ctx, bytes, 2) : 0;
            struct op o = tg_op(OP_COMPUTE, chip, STREAM_COMPUTE, TAG_OPTIMIZER, t);
            id = tg_add(g, &o);
            tg_dep(g, norm[d], id);
            if (after[d] != norm[d]) tg_dep(g, after[d], id);
        }
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
    for (int d = 0; d < prog->devices && !st->units; d++)
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
    free(st->units);
    free(st->unit_share);
    free(st->host_bytes);
    free(st->timed);
    free(st->gather_first);
    memset(st, 0, sizeof *st);
}
