/* sched_interleaved.c — Megatron's interleaved 1F1B (virtual pipeline).
 *
 * Each device holds v chunks: device d runs stages d, d+p, d+2p, ... (the
 * default layout of pipe_program_init), so a microbatch loops round the
 * devices v times. A device's work is a list of m·v "virtual microbatches"
 * (a microbatch on one of its chunks); the order follows Megatron-LM's
 * get_schedule_table / forward_backward_pipelining_with_interleaving:
 *
 *  - microbatches are taken in groups of `group` (≥ p). Within a group the
 *    forwards walk chunk 0 for every microbatch of the group, then chunk 1 for
 *    the same microbatches, and so on; the last group may be shorter;
 *  - the backwards use the same table with the chunk order reversed, because
 *    a microbatch's gradient enters at the last chunk;
 *  - warm-up on device d is 2(p−1−d) + (v−1)·group forwards (capped at m·v),
 *    then one forward and one backward alternate, then the backwards drain.
 *    When m = p every virtual microbatch is warm-up, as in Megatron.
 *
 * Why the warm-up has that size: chunk c+1 of the first microbatch of a group
 * reaches device d only after the whole group has passed through chunk c of
 * every device, so (v−1)·group forwards are needed before the first backward
 * can arrive, plus the usual 2(p−1−d) for the round trip below device d.
 * The stash peaks at warm-up + 1 chunk-forwards: 2(p−1−d) + (v−1)p + 1 on
 * device d for group = p, i.e. p + (p−1)/v stage-units on device 0. */
#include <stdio.h>
#include <stdlib.h>

#include "schedule.h"

/* cases.md: "allow a group size in [p, m] when m mod group is 0 or ≥ p". A
 * short last group (< p) would leave a forward of its chunk c+1 waiting on
 * devices that the warm-up count did not budget for. group = m always
 * qualifies, so any m ≥ p has one; take the smallest, as it stashes least. */
static int group_size(int p, int m)
{
    for (int g = p; g <= m; g++)
        if (m % g == 0 || m % g >= p) return g;
    return 0;
}

static int check_interleaved(const struct pipe_shape *shape, struct mp_error *err)
{
    int p = shape->devices, m = shape->microbatches, v = shape->chunks;
    if (v < 2)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "interleaved needs at least 2 chunks per device (parallel.vpp), got %d "
                       "(use 1f1b for vpp = 1)", v);
    /* Given stages (parallel.stage_layers): a stage's layers split over its
     * chunks as evenly as possible, so each stage needs one per chunk. */
    for (int d = 0; shape->device_layers && d < p; d++)
        if (shape->device_layers[d] < v)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "interleaved: parallel.stage_layers gives stage %d %d layers, fewer "
                           "than its vpp = %d chunks", d, shape->device_layers[d], v);
    if (shape->layers > 0 && !shape->device_layers) {
        if (shape->layers % p != 0)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "interleaved: layers (%d) must divide evenly over pp (%d), or "
                           "parallel.stage_layers must say how many each stage holds",
                           shape->layers, p);
        if ((shape->layers / p) % v != 0)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "interleaved: layers per stage (%d) must be divisible by vpp (%d)",
                           shape->layers / p, v);
    }
    if (m < p)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "interleaved needs at least as many microbatches as pp: got %d "
                       "microbatches for pp = %d (microbatch groups are of size %d..m)",
                       m, p, p);
    return MP_OK;
}

/* Table entry k (0 ≤ k < m·v) of Megatron's schedule table: which microbatch
 * and which chunk the k-th forward of any device is. */
static void table_entry(int k, int m, int v, int group, int *mb, int *chunk)
{
    int full = m / group * group; /* microbatches in whole groups */
    int g_start, g_len, r;
    if (k < full * v) {
        g_start = k / (group * v) * group;
        g_len = group;
        r = k % (group * v);
    } else {
        /* the short last group (empty when m is a multiple of group) */
        g_start = full;
        g_len = m - full;
        r = k - full * v;
    }
    *chunk = r / g_len;
    *mb = g_start + r % g_len;
}

static int gen_interleaved(const struct pipe_shape *shape, struct pipe_program *prog,
                           struct mp_error *err)
{
    (void)err;
    int p = shape->devices, m = shape->microbatches, v = shape->chunks;
    int group = group_size(p, m);
    int total = m * v;
    pipe_program_release(prog);
    pipe_program_init(prog, p, p * v, m, 1); /* stage s on device s mod p */
    for (int d = 0; d < p; d++) {
        int warm = (p - d - 1) * 2 + (v - 1) * group;
        if (m == p || warm > total) warm = total;
        int mb, c;
        for (int k = 0; k < warm; k++) {
            table_entry(k, m, v, group, &mb, &c);
            pipe_program_push(prog, d, pipe_op_single(PIPE_F, mb, c * p + d));
        }
        for (int k = 0; k < total - warm; k++) {
            table_entry(k + warm, m, v, group, &mb, &c);
            pipe_program_push(prog, d, pipe_op_single(PIPE_F, mb, c * p + d));
            table_entry(k, m, v, group, &mb, &c);
            pipe_program_push(prog, d, pipe_op_single(PIPE_BW, mb, (v - 1 - c) * p + d));
        }
        for (int k = total - warm; k < total; k++) {
            table_entry(k, m, v, group, &mb, &c);
            pipe_program_push(prog, d, pipe_op_single(PIPE_BW, mb, (v - 1 - c) * p + d));
        }
    }
    return MP_OK;
}

const struct schedule_kind sched_interleaved = {
    .name = "interleaved",
    .chunks = 0, .passes = 2,
    .summary = "interleaved 1F1B (Megatron virtual pipeline): vpp chunks per device, "
               "bubble / vpp",
    .check = check_interleaved,
    .generate = gen_interleaved,
};
