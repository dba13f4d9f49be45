/* sched_zero_bubble.c — zero-bubble schedules (Qi et al., "Zero Bubble
 * Pipeline Parallelism", ICLR 2024): the backward is split into the
 * input-gradient pass B, which is on the critical path between devices, and
 * the weight-gradient pass W, which nobody waits for and so can be moved into
 * the gaps that 1F1B leaves idle.
 *
 *  - zb-h1: 1F1B's memory (p·M_B-equivalent), bubble (p−1)(T_F+T_B−T_W);
 *  - zb-h2: more warm-up forwards, bubble (p−1)(T_F+T_B−2T_W);
 *  - zb-v:  2p chunks in a V, zero bubble at p·M_B with equal pass times;
 *  - zb-auto: a greedy search under a memory limit.
 *
 * zb-h1 and zb-h2 are the exact hand-written orders of cases.md §3. zb-v and
 * zb-auto come out of one list-scheduling simulation (greedy() below) run
 * with different layouts and priorities; see the comments there. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

/* ---- ZB-H1 and ZB-H2: the hand-written orders ------------------------------------ */

/* ZB-H1 on stage i: warm-up p−1−i forwards (1F1B's); then for k = 0..m−1:
 * the next F if any remain, B(k), and W(k−i) once k ≥ i; then the rest of
 * the W's. Delaying W by i lets the B chain run back to stage 0 without
 * waiting for weight gradients, and the i deferred W's fill the cool-down. */
static void zb_h1_device(struct pipe_program *prog, int p, int m, int i)
{
    int nf = 0, nw = 0;
    int warm = p - 1 - i < m ? p - 1 - i : m;
    while (nf < warm) pipe_program_push(prog, i, pipe_op_single(PIPE_F, nf++, i));
    for (int k = 0; k < m; k++) {
        if (nf < m) pipe_program_push(prog, i, pipe_op_single(PIPE_F, nf++, i));
        pipe_program_push(prog, i, pipe_op_single(PIPE_B, k, i));
        if (k >= i) pipe_program_push(prog, i, pipe_op_single(PIPE_W, nw++, i));
    }
    while (nw < m) pipe_program_push(prog, i, pipe_op_single(PIPE_W, nw++, i));
}

/* ZB-H2 on stage i: warm-up 2(p−1−i)+1 forwards, which exactly fill the time
 * until the first B comes back when T_F = T_B = T_W; then for k: B(k),
 * W(k−2i) once k ≥ 2i, the next F if any remain; then the rest of the W's. */
static void zb_h2_device(struct pipe_program *prog, int p, int m, int i)
{
    int nf = 0, nw = 0;
    int warm = 2 * (p - 1 - i) + 1 < m ? 2 * (p - 1 - i) + 1 : m;
    while (nf < warm) pipe_program_push(prog, i, pipe_op_single(PIPE_F, nf++, i));
    for (int k = 0; k < m; k++) {
        pipe_program_push(prog, i, pipe_op_single(PIPE_B, k, i));
        if (k >= 2 * i) pipe_program_push(prog, i, pipe_op_single(PIPE_W, nw++, i));
        if (nf < m) pipe_program_push(prog, i, pipe_op_single(PIPE_F, nf++, i));
    }
    while (nw < m) pipe_program_push(prog, i, pipe_op_single(PIPE_W, nw++, i));
}

static int gen_zb_h1(const struct pipe_shape *shape, struct pipe_program *prog,
                     struct mp_error *err)
{
    (void)err;
    for (int i = 0; i < shape->devices; i++)
        zb_h1_device(prog, shape->devices, shape->microbatches, i);
    return MP_OK;
}

static int gen_zb_h2(const struct pipe_shape *shape, struct pipe_program *prog,
                     struct mp_error *err)
{
    (void)err;
    for (int i = 0; i < shape->devices; i++)
        zb_h2_device(prog, shape->devices, shape->microbatches, i);
    return MP_OK;
}

/* ---- evaluation of a candidate order ---------------------------------------------- */

struct zb_times {
    double f, b, w;
};

/* Makespan of `prog` when each device runs its ops in order and an op starts
 * once its device is free and its inputs exist (no communication time); -1
 * if it cannot finish. Used to pick among zb-auto's candidates. */
static double eval_makespan(const struct pipe_program *prog, const struct zb_times *t)
{
    int S = prog->stages, D = prog->devices;
    size_t n = (size_t)prog->microbatches * S;
    double *fend = mp_xmalloc(n * sizeof *fend), *bend = mp_xmalloc(n * sizeof *bend);
    double *free_at = mp_xcalloc((size_t)D, sizeof *free_at);
    int *pc = mp_xcalloc((size_t)D, sizeof *pc);
    for (size_t i = 0; i < n; i++) fend[i] = bend[i] = -1;
    /* Each device runs its ops until one waits for an input; the device
     * that produces that input wakes it (a worklist: sweeping every device
     * until nothing moved took pp sweeps down a V's return leg, O(pp²)).
     * The times do not depend on the order devices are taken in. */
    int *todo = mp_xmalloc((size_t)D * sizeof *todo), n_todo = 0;
    char *queued = mp_xcalloc((size_t)D, 1);
    for (int d = D - 1; d >= 0; d--) todo[n_todo++] = d, queued[d] = 1;
    while (n_todo > 0) {
        int d = todo[--n_todo];
        queued[d] = 0;
        for (; pc[d] < prog->n_ops[d]; pc[d]++) {
            const struct pipe_op *op = &prog->ops[d][pc[d]];
            size_t id = (size_t)op->mb * S + op->stage;
            double start = free_at[d], dep, dur;
            if (op->kind == PIPE_F) {
                dep = op->stage > 0 ? fend[id - 1] : 0;
                dur = t->f;
            } else if (op->kind == PIPE_W) {
                dep = bend[id];
                dur = t->w;
            } else { /* B or BW */
                dep = op->stage < S - 1 ? bend[id + 1] : fend[id];
                dur = op->kind == PIPE_B ? t->b : t->b + t->w;
            }
            if (dep < 0) break;
            if (dep > start) start = dep;
            free_at[d] = start + dur;
            int wake = -1;
            if (op->kind == PIPE_F) {
                fend[id] = free_at[d];
                if (op->stage + 1 < S) wake = prog->device_of[op->stage + 1];
            } else if (op->kind != PIPE_W) {
                bend[id] = free_at[d];
                if (op->stage > 0) wake = prog->device_of[op->stage - 1];
            }
            if (wake >= 0 && wake != d && !queued[wake]) queued[wake] = 1, todo[n_todo++] = wake;
        }
    }
    free(todo), free(queued);
    double span = 0;
    for (int d = 0; d < D; d++) {
        if (pc[d] < prog->n_ops[d]) span = -1;
        if (span >= 0 && free_at[d] > span) span = free_at[d];
    }
    free(fend), free(bend), free(free_at), free(pc);
    return span;
}

/* Peak activation memory of device d in units of M_B, when a pending W holds
 * `w_mem` of its M_B (the greedy's own accounting). */
static double peak_mem(const struct pipe_program *prog, int d, double w_mem)
{
    double mem = 0, peak = 0;
    for (int i = 0; i < prog->n_ops[d]; i++) {
        switch (prog->ops[d][i].kind) {
        case PIPE_F: mem += 1; break;
        case PIPE_B: mem -= 1 - w_mem; break;
        case PIPE_W: mem -= w_mem; break;
        case PIPE_BW: mem -= 1; break;
        }
        if (mem > peak) peak = mem;
    }
    return peak;
}

/* ---- the greedy list scheduler ------------------------------------------------------ *
 *
 * Simulate the devices' clocks with the given pass times. Whenever a device
 * is free it picks, among the passes whose inputs have arrived:
 *   - a forward, if its memory stays within `limit` (F adds 1 M_B, B frees
 *     1 − w_mem, W frees w_mem), or
 *   - an input-gradient backward B,
 * in the order given by `b_first`; ties between the chunks a device holds go
 * to the lowest microbatch, then to the later stage (the one nearer the end
 * of the microbatch's path). Failing both it runs a deferred W (oldest first)
 * — always, or with `w_fits` only if the W ends before the next input already
 * on its way arrives, so that filling a gap never delays the critical B
 * chain. Otherwise it waits for the next completion.
 *
 * This is the zero-bubble paper's heuristic in list-scheduling form: warm-up
 * forwards up to the memory limit, then F and B as they arrive, W into the
 * gaps and at the end. The result is a fixed op order like any other. */

struct greedy_cfg {
    struct zb_times t;
    double limit, w_mem;
    int b_first, w_fits;
};

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A min-heap of (time, device): when each busy device's current op ends. */
struct end_heap {
    double *t;
    int *d, n;
};

static void heap_push(struct end_heap *h, double t, int d)
{
    int i = h->n++;
    while (i > 0) {
        int up = (i - 1) / 2;
        if (h->t[up] < t || (h->t[up] == t && h->d[up] < d)) break;
        h->t[i] = h->t[up], h->d[i] = h->d[up];
        i = up;
    }
    h->t[i] = t, h->d[i] = d;
}

static int heap_pop(struct end_heap *h)
{
    int top = h->d[0];
    double t = h->t[--h->n];
    int d = h->d[h->n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && (h->t[c + 1] < h->t[c] || (h->t[c + 1] == h->t[c] && h->d[c + 1] < h->d[c])))
            c++;
        if (t < h->t[c] || (t == h->t[c] && d < h->d[c])) break;
        h->t[i] = h->t[c], h->d[i] = h->d[c];
        i = c;
    }
    h->t[i] = t, h->d[i] = d;
    return top;
}

/* The greedy as an event loop. A free device's choice depends only on its
 * own stages' counters and memory and on the end times of its neighbours'
 * passes, so it can change only when one of its own ops ends or when an op
 * ends on a stage next to one of its own (an F on stage s − 1 or a B on
 * stage s + 1); only those devices are looked at, at each op end, in device
 * order. (Looking at every device at every op end made the greedy
 * quadratic in pp: 95 s for zb-v at pp = 20,000, one microbatch.) */
static int greedy(struct pipe_program *prog, const struct greedy_cfg *cfg)
{
    int D = prog->devices, S = prog->stages, m = prog->microbatches;
    size_t n = (size_t)m * S;
    /* stages of each device, in stage order: device d's are st[off[d]..],
     * nst[d] of them (a CSR list, O(stages); a devices × stages table was
     * quadratic in pp) */
    int *nst = mp_xcalloc((size_t)D, sizeof *nst), *off = mp_xcalloc((size_t)D + 1, sizeof *off);
    int *st = mp_xmalloc((size_t)S * sizeof *st);
    for (int s = 0; s < S; s++) off[prog->device_of[s] + 1]++;
    for (int d = 0; d < D; d++) off[d + 1] += off[d];
    for (int s = 0; s < S; s++) {
        int d = prog->device_of[s];
        st[off[d] + nst[d]++] = s;
    }
    double *fend = mp_xmalloc(n * sizeof *fend), *bend = mp_xmalloc(n * sizeof *bend);
    for (size_t i = 0; i < n; i++) fend[i] = bend[i] = -1;
    int *nf = mp_xcalloc((size_t)S, sizeof *nf), *nb = mp_xcalloc((size_t)S, sizeof *nb);
    int *wq = mp_xmalloc(n * sizeof *wq); /* per device a FIFO of mb*S+s, at d*... */
    int *wq_head = mp_xcalloc((size_t)D, sizeof *wq_head);
    int *wq_tail = mp_xcalloc((size_t)D, sizeof *wq_tail);
    int *wq_base = mp_xcalloc((size_t)D, sizeof *wq_base);
    for (int d = 1; d < D; d++) wq_base[d] = wq_base[d - 1] + m * nst[d - 1];
    double *mem = mp_xcalloc((size_t)D, sizeof *mem);
    double *free_at = mp_xcalloc((size_t)D, sizeof *free_at);
    int *last_kind = mp_xmalloc((size_t)D * sizeof *last_kind), *last_stage = mp_xmalloc((size_t)D * sizeof *last_stage);
    /* Devices to look at now (a list, and a flag against duplicates). */
    int *todo = mp_xmalloc((size_t)D * sizeof *todo), n_todo = 0;
    char *queued = mp_xcalloc((size_t)D, 1);
    struct end_heap h = { mp_xmalloc((size_t)D * sizeof *h.t), mp_xmalloc((size_t)D * sizeof *h.d), 0 };
    for (int d = 0; d < D; d++) todo[n_todo++] = d, queued[d] = 1;
    long total = 3L * m * S, done = 0;
    double now = 0;
    int rc = MP_OK;
    while (done < total) {
        /* In device order, as a sweep over all of them would take them. */
        qsort(todo, (size_t)n_todo, sizeof *todo, cmp_int);
        for (int t = 0; t < n_todo; t++) {
            int d = todo[t];
            queued[d] = 0;
            if (free_at[d] > now) continue;
            int fs = -1, bs = -1; /* chosen stages for F and B */
            double next_in = INFINITY;
            for (int j = nst[d] - 1; j >= 0; j--) {
                int s = st[off[d] + j];
                int k = nf[s];
                if (k < m) {
                    double in = s > 0 ? fend[(size_t)k * S + s - 1] : 0;
                    if (in >= 0 && in <= now) {
                        if (mem[d] + 1 <= cfg->limit + 1e-9 && (fs < 0 || k < nf[fs])) fs = s;
                    } else if (in > now && in < next_in) {
                        next_in = in;
                    }
                }
                k = nb[s];
                if (k < nf[s] && fend[(size_t)k * S + s] <= now) {
                    double in = s < S - 1 ? bend[(size_t)k * S + s + 1] : 0;
                    if (in >= 0 && in <= now) {
                        if (bs < 0 || k < nb[bs]) bs = s;
                    } else if (in > now && in < next_in) {
                        next_in = in;
                    }
                }
            }
            int kind = -1, s = -1;
            if (cfg->b_first && bs >= 0) kind = PIPE_B, s = bs;
            else if (fs >= 0) kind = PIPE_F, s = fs;
            else if (bs >= 0) kind = PIPE_B, s = bs;
            else if (wq_head[d] < wq_tail[d] &&
                     (!cfg->w_fits || now + cfg->t.w <= next_in + 1e-9))
                kind = PIPE_W;
            if (kind < 0) continue;
            int mb;
            double dur;
            if (kind == PIPE_F) {
                mb = nf[s]++;
                dur = cfg->t.f;
                fend[(size_t)mb * S + s] = now + dur;
                mem[d] += 1;
            } else if (kind == PIPE_B) {
                mb = nb[s]++;
                dur = cfg->t.b;
                bend[(size_t)mb * S + s] = now + dur;
                mem[d] -= 1 - cfg->w_mem;
                wq[wq_base[d] + wq_tail[d]++] = mb * S + s;
            } else {
                int id = wq[wq_base[d] + wq_head[d]++];
                mb = id / S, s = id % S;
                dur = cfg->t.w;
                mem[d] -= cfg->w_mem;
            }
            pipe_program_push(prog, d, pipe_op_single(kind, mb, s));
            free_at[d] = now + dur;
            last_kind[d] = kind, last_stage[d] = s;
            heap_push(&h, free_at[d], d);
            done++;
        }
        n_todo = 0;
        if (done >= total) break;
        /* The next op end; every device whose op ends then, and the
         * devices next to the stages those ops were on. An op that took no
         * time (pass times 10^15 apart, where now + t == now in a double)
         * ends now: its device and its neighbours go on at the same time —
         * its neighbours too, or a B that took no time would leave the
         * device below waiting for an event that never comes. */
        if (h.n > 0 && h.t[0] > now) now = h.t[0];
        while (h.n > 0 && !(h.t[0] > now)) {
            int d = heap_pop(&h), s = last_stage[d];
            int wake[3] = { d, -1, -1 };
            if (last_kind[d] == PIPE_F && s + 1 < S) wake[1] = prog->device_of[s + 1];
            if (last_kind[d] == PIPE_B && s > 0) wake[2] = prog->device_of[s - 1];
            for (int k = 0; k < 3; k++)
                if (wake[k] >= 0 && !queued[wake[k]]) queued[wake[k]] = 1, todo[n_todo++] = wake[k];
        }
        if (n_todo == 0) {
            rc = MP_ERR_INTERNAL; /* nothing runs and nothing will: the limit is too tight */
            break;
        }
    }
    free(nst), free(off), free(st), free(fend), free(bend), free(nf), free(nb);
    free(wq), free(wq_head), free(wq_tail), free(wq_base), free(mem), free(free_at);
    free(last_kind), free(last_stage), free(todo), free(queued), free(h.t), free(h.d);
    return rc;
}

static void clear_ops(struct pipe_program *prog)
{
    for (int d = 0; d < prog->devices; d++) prog->n_ops[d] = 0;
}

/* ---- ZB-V ------------------------------------------------------------------------------ *
 *
 * 2p stages in a V: device d runs stage d going down and stage 2p−1−d coming
 * back, so every microbatch starts and ends on device 0 and each device's two
 * chunks balance its memory. The order is the greedy above with the shape's
 * pass times (equal by default), a limit of 2p chunk activations (= p·M_B, as
 * each chunk holds half a stage's layers) and a pending W counted as half a
 * chunk's stash. With equal times and forwards first it reproduces the
 * hand-written ZB-V of cases.md §3: device i
 * (1-based) warms up with 2p−i forwards of its first chunk and i−1 of its
 * second, interleaved as they arrive; then runs F-B-W groups of the second
 * chunk until the first backward of its first chunk arrives; then both chunks
 * alternate, B first once no forwards remain, with W filling the gaps. With
 * T_F = T_B = T_W and m ≥ 2p no device idles between its first and last op
 * (the tests check it). */
static int check_zb_v(const struct pipe_shape *shape, struct mp_error *err)
{
    int p = shape->devices;
    /* Given stages: each device's two chunks must be equal (the V's times). */
    for (int d = 0; shape->device_layers && d < p; d++)
        if (shape->device_layers[d] % 2 != 0)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "zb-v runs two equal chunks per device in a V: parallel.stage_layers "
                           "gives stage %d %d layers, expected an even number", d,
                           shape->device_layers[d]);
    if (shape->device_layers) return MP_OK;
    if (shape->layers > 0 && shape->layers % (2 * p) != 0)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "zb-v splits the layers into 2·pp = %d chunks in a V: layers (%d) must "
                       "be divisible by %d", 2 * p, shape->layers, 2 * p);
    return MP_OK;
}

static void v_layout(struct pipe_program *prog, int p, int m)
{
    pipe_program_release(prog);
    pipe_program_init(prog, p, 2 * p, m, 1);
    for (int s = 0; s < 2 * p; s++) prog->device_of[s] = s < p ? s : 2 * p - 1 - s;
}

static void copy_ops(struct pipe_program *dst, const struct pipe_program *src);

/* The greedy runs with the pass times the shape gives (equal by default),
 * because an order tuned for equal times idles in every steady-state round
 * once B is slower than F (at T_B = 2T_F it fell behind 1F1B from m = 19 on,
 * p = 4). With unequal times no one priority rule is best either, so the
 * four combinations of B-first and W-only-when-it-fits are tried and the
 * shortest kept, the default rule first so that equal times keep the order
 * above. */
static int gen_zb_v(const struct pipe_shape *shape, struct pipe_program *prog,
                    struct mp_error *err)
{
    int p = shape->devices, m = shape->microbatches;
    struct zb_times t = {shape->t_f > 0 ? shape->t_f : 1, shape->t_b > 0 ? shape->t_b : 1,
                         shape->t_w > 0 ? shape->t_w : 1};
    v_layout(prog, p, m);
    struct pipe_program cand;
    memset(&cand, 0, sizeof cand);
    v_layout(&cand, p, m);
    double best = -1;
    for (int c = 0; c < 4; c++) {
        clear_ops(&cand);
        struct greedy_cfg cfg = {.t = t, .limit = 2.0 * p, .w_mem = 0.5,
                                 .b_first = c / 2, .w_fits = c % 2};
        if (greedy(&cand, &cfg) != MP_OK) continue;
        double span = eval_makespan(&cand, &t);
        if (span >= 0 && (best < 0 || span < best - 1e-9)) {
            best = span;
            copy_ops(prog, &cand);
        }
    }
    pipe_program_release(&cand);
    if (best < 0)
        return mp_fail(err, MP_ERR_INTERNAL, "zb-v: the V schedule stalled for pp = %d, %d "
                       "microbatches", p, m);
    return MP_OK;
}

/* ---- zb-auto ---------------------------------------------------------------------------- *
 *
 * The greedy under the user's memory limit (shape->mem_limit M_B per device,
 * default p, i.e. 1F1B's) and pass times (default equal). Here a pending W is
 * counted as a whole M_B — the conservative reading, in which ZB-H1 holds
 * exactly p on every device — so that the limit bounds everything the device
 * stashes. No single priority rule wins for every time ratio, so, like the
 * zero-bubble authors' own search, we try the greedy with B or F first and
 * with W filling every gap or only gaps it fits, add the hand-written ZB-H1
 * and ZB-H2 when they fit the limit, and keep the order with the smallest
 * makespan (earliest candidate on ties). With the limit at p, ZB-H1 is always
 * a candidate, so zb-auto's bubble is never larger than ZB-H1's. */
static int check_zb_auto(const struct pipe_shape *shape, struct mp_error *err)
{
    if (shape->mem_limit != 0 && shape->mem_limit < 1)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "zb-auto memory limit (%.3g M_B) is below one microbatch's activations "
                       "(1 M_B)", shape->mem_limit);
    if (shape->t_f < 0 || shape->t_b < 0 || shape->t_w < 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "zb-auto pass times must not be negative (t_f %g, t_b %g, t_w %g)",
                       shape->t_f, shape->t_b, shape->t_w);
    return MP_OK;
}

static void copy_ops(struct pipe_program *dst, const struct pipe_program *src)
{
    clear_ops(dst);
    for (int d = 0; d < src->devices; d++)
        for (int i = 0; i < src->n_ops[d]; i++) pipe_program_push(dst, d, src->ops[d][i]);
}

static int gen_zb_auto(const struct pipe_shape *shape, struct pipe_program *prog,
                       struct mp_error *err)
{
    int p = shape->devices, m = shape->microbatches;
    struct zb_times t = {shape->t_f > 0 ? shape->t_f : 1, shape->t_b > 0 ? shape->t_b : 1,
                         shape->t_w > 0 ? shape->t_w : 1};
    double limit = shape->mem_limit > 0 ? shape->mem_limit : p;
    struct pipe_program cand;
    pipe_program_init(&cand, p, p, m, 1);
    double best = -1;
    for (int c = 0; c < 6; c++) {
        clear_ops(&cand);
        if (c < 4) {
            struct greedy_cfg cfg = {.t = t, .limit = limit, .w_mem = 1,
                                     .b_first = c < 2, .w_fits = c % 2};
            if (greedy(&cand, &cfg) != MP_OK) continue;
        } else {
            for (int i = 0; i < p; i++)
                (c == 4 ? zb_h1_device : zb_h2_device)(&cand, p, m, i);
            int fits = 1;
            for (int d = 0; d < p; d++) fits &= peak_mem(&cand, d, 1) <= limit + 1e-9;
            if (!fits) continue;
        }
        double span = eval_makespan(&cand, &t);
        if (span >= 0 && (best < 0 || span < best - 1e-9)) {
            best = span;
            copy_ops(prog, &cand);
        }
    }
    pipe_program_release(&cand);
    if (best < 0)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "zb-auto found no schedule within %.3g M_B per device (pp = %d, %d "
                       "microbatches)", limit, p, m);
    return MP_OK;
}

const struct schedule_kind sched_zb_h1 = {
    .name = "zb-h1",
    .chunks = 1, .passes = 3,
    .summary = "zero bubble H1: 1F1B memory, W deferred into the cool-down",
    .generate = gen_zb_h1,
};

const struct schedule_kind sched_zb_h2 = {
    .name = "zb-h2",
    .chunks = 1, .passes = 3,
    .summary = "zero bubble H2: extra warm-up forwards, ~zero bubble at ~2x 1F1B memory",
    .generate = gen_zb_h2,
};

const struct schedule_kind sched_zb_v = {
    .name = "zb-v",
    .chunks = 2, .passes = 3,
    .summary = "zero bubble V: 2 chunks per device in a V, ~zero bubble at 1F1B memory",
    .check = check_zb_v,
    .generate = gen_zb_v,
};

const struct schedule_kind sched_zb_auto = {
    .name = "zb-auto",
    .chunks = 1, .passes = 3,
    .summary = "zero bubble, greedy search under training.memory_limit (default pp x M_B)",
    .check = check_zb_auto,
    .generate = gen_zb_auto,
};
