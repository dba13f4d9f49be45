/* sched_dualpipe.c — DualPipe and DualPipeV (DeepSeek-V3 report, 2024; the
 * public deepseek-ai/DualPipe code). The order below follows that code's
 * eight phases step by step; the descriptions are ours.
 *
 * DualPipe runs two pipelines at once over the same R ranks: microbatches
 * 0..m/2−1 go down (stage s on rank s) and m/2..m−1 go up (stage s on rank
 * R−1−s), so each rank holds one stage of each direction (two copies of the
 * parameters) and the forward of one direction can hide behind the backward
 * of the other: the overlapped "F&B" op (PIPE_FB), which holds the rank's
 * compute stream for one combined time.
 *
 * DualPipeV folds the same idea into a V on R ranks: 2R stages, rank r holds
 * stages r (going down) and 2R−1−r (coming back), and all m microbatches take
 * that one path.
 *
 * On each rank "chunk 0" is the direction in which the rank is nearer the
 * entry and "chunk 1" the other; h is the rank's distance from the entry of
 * chunk 0 and N the number of such distances (R for V, R/2 for DualPipe).
 * With C microbatches per chunk (m for V, m/2 for DualPipe) a rank runs:
 *   1. 2(N−h−1) forwards of chunk 0                       (fill the pipe below)
 *   2. h+1 pairs: forward chunk 0, forward chunk 1
 *   3. N−h−1 triples: B of chunk 1 (W deferred), a deferred W, F of chunk 1
 *   4. C−2N+h+1 times: F&B (F chunk 0, backward chunk 1), F&B (F chunk 1,
 *      backward chunk 0) — on the rank where both chunks meet (h = N−1) the
 *      very first F&B is split into F then BW, as its backward needs that F
 *   5. N−h−1 times: backward of chunk 1, then F&B (F chunk 1, B chunk 0)
 *   6. h+1 pairs of backwards, chunk 1 then chunk 0; from the middle pair on
 *      they split off their W (zero-bubble style) to fill the drain
 *   7. N−h−1 times: a deferred W, then B of chunk 0 with its W deferred
 *   8. h+1 remaining W's.
 * Deferred W's run oldest first. Every count sums to C per chunk and pass
 * (the tests count them) and the validator proves the order deadlock-free. */
#include <stdio.h>
#include <stdlib.h>

#include "schedule.h"

/* One rank's view while its ops are emitted. */
struct rank_gen {
    struct pipe_program *prog;
    int dev;
    int stage[2];   /* stage of chunk 0 and chunk 1 */
    int base[2];    /* first microbatch of each chunk's direction */
    int nf[2], nb[2];
    int *wq, wq_head, wq_tail; /* deferred W's as mb*stages+stage */
};

static void emit(struct rank_gen *g, int kind, int mb, int stage)
{
    pipe_program_push(g->prog, g->dev, pipe_op_single(kind, mb, stage));
}

static void fwd(struct rank_gen *g, int c)
{
    emit(g, PIPE_F, g->base[c] + g->nf[c]++, g->stage[c]);
}

/* Backward of chunk c: fused BW, or with `zb` a B whose W joins the queue. */
static void bwd(struct rank_gen *g, int c, int zb)
{
    int mb = g->base[c] + g->nb[c]++;
    emit(g, zb ? PIPE_B : PIPE_BW, mb, g->stage[c]);
    if (zb) g->wq[g->wq_tail++] = mb * g->prog->stages + g->stage[c];
}

static void wgt(struct rank_gen *g)
{
    int id = g->wq[g->wq_head++];
    emit(g, PIPE_W, id / g->prog->stages, id % g->prog->stages);
}

/* F&B: forward of chunk cf overlapped with the full backward of chunk cb. */
static void fwd_bwd(struct rank_gen *g, int cf, int cb)
{
    int mb2 = g->base[cb] + g->nb[cb]++;
    pipe_program_push(g->prog, g->dev,
                      (struct pipe_op){.kind = PIPE_FB, .mb = g->base[cf] + g->nf[cf]++,
                                       .stage = g->stage[cf], .mb2 = mb2,
                                       .stage2 = g->stage[cb]});
}

/* The eight phases for one rank (see the file comment). */
static void rank_phases(struct rank_gen *g, int N, int h, int C)
{
    int tail = N - h - 1;
    for (int i = 0; i < 2 * tail; i++) fwd(g, 0);                 /* 1 */
    for (int i = 0; i <= h; i++) fwd(g, 0), fwd(g, 1);            /* 2 */
    for (int i = 0; i < tail; i++) bwd(g, 1, 1), wgt(g), fwd(g, 1); /* 3 */
    for (int i = 0; i < C - 2 * N + h + 1; i++) {                 /* 4 */
        if (i == 0 && h == N - 1) fwd(g, 0), bwd(g, 1, 0);
        else fwd_bwd(g, 0, 1);
        fwd_bwd(g, 1, 0);
    }
    for (int i = 0; i < tail; i++) bwd(g, 1, 0), fwd_bwd(g, 1, 0); /* 5 */
    int zb = 0;                                                   /* 6 */
    for (int i = 0; i <= h; i++) {
        /* The second half of these backwards split off their W. Which of
         * the middle pair's two backwards is first to split alternates with
         * h's parity, so that h+1 W's are deferred in all. */
        if (i == (h + 1) / 2 && h % 2 == 1) zb = 1;
        bwd(g, 1, zb);
        if (i == (h + 1) / 2 && h % 2 == 0) zb = 1;
        bwd(g, 0, zb);
    }
    for (int i = 0; i < tail; i++) wgt(g), bwd(g, 0, 1);          /* 7 */
    for (int i = 0; i <= h; i++) wgt(g);                          /* 8 */
}

static void run_rank(struct pipe_program *prog, int dev, const int stage[2],
                     const int base[2], int N, int h, int C)
{
    struct rank_gen g = {.prog = prog, .dev = dev, .stage = {stage[0], stage[1]},
                         .base = {base[0], base[1]}};
    g.wq = mp_xmalloc((size_t)(2 * C + 1) * sizeof *g.wq);
    rank_phases(&g, N, h, C);
    free(g.wq);
}

/* ---- DualPipe ---------------------------------------------------------------------- */

static int check_dualpipe(const struct pipe_shape *shape, struct mp_error *err)
{
    int p = shape->devices, m = shape->microbatches;
    if (p < 2 || p % 2 != 0)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "dualpipe needs an even pp (half the ranks feed each direction), got %d",
                       p);
    if (m % 2 != 0)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "dualpipe needs an even number of microbatches (half go each way), got %d",
                       m);
    if (m < 2 * p)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "dualpipe needs at least 2·pp = %d microbatches, got %d", 2 * p, m);
    /* Stages need not be equal: DeepSeek-V3 ran its 61 layers on 16 ranks.
     * Each stage needs a layer, though. */
    if (shape->layers > 0 && shape->layers < p)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "dualpipe needs at least one layer per stage: %d layers for pp = %d",
                       shape->layers, p);
    return MP_OK;
}

static int gen_dualpipe(const struct pipe_shape *shape, struct pipe_program *prog,
                        struct mp_error *err)
{
    (void)err;
    int R = shape->devices, m = shape->microbatches, H = R / 2;
    pipe_program_release(prog);
    pipe_program_init(prog, R, R, m, 2);
    for (int mb = 0; mb < m; mb++) prog->path_of_mb[mb] = mb < m / 2 ? 0 : 1;
    for (int s = 0; s < R; s++) {
        prog->device_of[s] = s;             /* down */
        prog->device_of[R + s] = R - 1 - s; /* up */
    }
    for (int r = 0; r < R; r++) {
        /* chunk 0 is the direction whose entry is nearer: down for the upper
         * half of the ranks, up for the lower half */
        int down = r, up = R - 1 - r;
        int stage[2], base[2];
        if (r < H) stage[0] = down, base[0] = 0, stage[1] = up, base[1] = m / 2;
        else stage[0] = up, base[0] = m / 2, stage[1] = down, base[1] = 0;
        int h = r < R - 1 - r ? r : R - 1 - r;
        run_rank(prog, r, stage, base, H, h, m / 2);
    }
    return MP_OK;
}

/* ---- DualPipeV --------------------------------------------------------------------- */

static int check_dualpipev(const struct pipe_shape *shape, struct mp_error *err)
{
    int p = shape->devices, m = shape->microbatches;
    if (m < 2 * p)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "dualpipev needs at least 2·pp = %d microbatches, got %d", 2 * p, m);
    if (shape->layers > 0 && shape->layers < 2 * p)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "dualpipev splits the layers into 2·pp = %d stages in a V: it needs at "
                       "least %d layers, got %d", 2 * p, 2 * p, shape->layers);
    for (int d = 0; shape->device_layers && d < p; d++)
        if (shape->device_layers[d] < 2)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "dualpipev runs two chunks per device in a V: parallel.stage_layers "
                           "gives stage %d %d layer, expected at least 2", d,
                           shape->device_layers[d]);
    return MP_OK;
}

static int gen_dualpipev(const struct pipe_shape *shape, struct pipe_program *prog,
                         struct mp_error *err)
{
    (void)err;
    int R = shape->devices, m = shape->microbatches;
    pipe_program_release(prog);
    pipe_program_init(prog, R, 2 * R, m, 1);
    for (int s = 0; s < 2 * R; s++) prog->device_of[s] = s < R ? s : 2 * R - 1 - s;
    for (int r = 0; r < R; r++) {
        int stage[2] = {r, 2 * R - 1 - r}, base[2] = {0, 0};
        run_rank(prog, r, stage, base, R, r, m);
    }
    return MP_OK;
}

const struct schedule_kind sched_dualpipe = {
    .name = "dualpipe",
    .chunks = 1, .passes = 3,
    .summary = "DualPipe (DeepSeek-V3): two directions at once, F&B overlap, 2x parameters",
    .check = check_dualpipe,
    .generate = gen_dualpipe,
};

const struct schedule_kind sched_dualpipev = {
    .name = "dualpipev",
    .chunks = 2, .passes = 3,
    .summary = "DualPipeV: DualPipe folded into a V of 2·pp stages, one parameter copy",
    .check = check_dualpipev,
    .generate = gen_dualpipev,
};
