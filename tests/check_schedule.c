/* check_schedule.c — pipeline schedules as op orders: counts, in-flight
 * peaks, validator verdicts, and makespans from a tiny unit-time evaluator
 * (below) against the worked cases of cases.md §3. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/strategy/schedule.h"
#include "testutil.h"

/* ---- helpers ----------------------------------------------------------------- */

static struct pipe_shape shape_of(int p, int m, int v)
{
    return (struct pipe_shape){.devices = p, .microbatches = m, .chunks = v};
}

/* Build and insist it succeeded; the build itself already ran the validator. */
static void build_ok(const char *name, const struct pipe_shape *sh, struct pipe_program *prog)
{
    struct mp_error err = {0};
    int rc = schedule_build(name, sh, prog, &err);
    ck_assert_msg(rc == MP_OK, "%s p=%d m=%d v=%d: %s", name, sh->devices, sh->microbatches,
                  sh->chunks, err.msg);
    ck_assert_int_eq(pipe_validate(prog, &err), MP_OK);
}

static int count_kind(const struct pipe_program *prog, int d, int kind)
{
    int n = 0;
    for (int i = 0; i < prog->n_ops[d]; i++) n += prog->ops[d][i].kind == kind;
    return n;
}

static struct pipe_op mkop(int kind, int mb, int stage)
{
    return (struct pipe_op){.kind = (uint8_t)kind, .mb = mb, .stage = stage, .mb2 = -1,
                            .stage2 = -1};
}

/* ---- a unit-time list-scheduling evaluator --------------------------------------
 * Devices run their ops in order; an op starts when its device is free and
 * its dependencies (the same ones the validator uses) have ended. This is the
 * textbook model of cases.md §3: no communication time, one stream per device. */

struct times {
    double f, b, w;
    double fb; /* overlapped F&B; < 0 means f + b + w (no overlap gain) */
};

struct eval {
    double makespan;
    double busy[64], first[64], last[64];
};

static double op_time(const struct times *t, int kind)
{
    switch (kind) {
    case PIPE_F: return t->f;
    case PIPE_B: return t->b;
    case PIPE_W: return t->w;
    case PIPE_BW: return t->b + t->w;
    default: return t->fb >= 0 ? t->fb : t->f + t->b + t->w;
    }
}

/* Returns 0 on success, -1 if the program cannot finish. */
static int evaluate(const struct pipe_program *prog, const struct times *t, struct eval *ev)
{
    int S = prog->stages, D = prog->devices;
    size_t n = (size_t)prog->microbatches * S;
    double *fend = malloc(n * sizeof *fend), *bend = malloc(n * sizeof *bend);
    int *pc = calloc((size_t)D, sizeof *pc);
    double *free_at = calloc((size_t)D, sizeof *free_at);
    ck_assert(D <= 64);
    for (size_t i = 0; i < n; i++) fend[i] = bend[i] = -1;
    for (int d = 0; d < D; d++) ev->busy[d] = 0, ev->first[d] = -1, ev->last[d] = 0;
    int progress = 1, left = 0;
    for (int d = 0; d < D; d++) left += prog->n_ops[d];
    while (progress && left > 0) {
        progress = 0;
        for (int d = 0; d < D; d++) {
            while (pc[d] < prog->n_ops[d]) {
                const struct pipe_op *op = &prog->ops[d][pc[d]];
                double ready = free_at[d];
                int ok = 1;
                int fmb = -1, fst = -1, bmb = -1, bst = -1;
                if (op->kind == PIPE_F || op->kind == PIPE_FB) fmb = op->mb, fst = op->stage;
                if (op->kind == PIPE_B || op->kind == PIPE_BW) bmb = op->mb, bst = op->stage;
                if (op->kind == PIPE_FB) bmb = op->mb2, bst = op->stage2;
                if (fmb >= 0 && fst > 0) {
                    double e = fend[(size_t)fmb * S + fst - 1];
                    if (e < 0) ok = 0; else if (e > ready) ready = e;
                }
                if (bmb >= 0) {
                    double e = fend[(size_t)bmb * S + bst];
                    if (e < 0) ok = 0; else if (e > ready) ready = e;
                    if (bst < S - 1) {
                        e = bend[(size_t)bmb * S + bst + 1];
                        if (e < 0) ok = 0; else if (e > ready) ready = e;
                    }
                }
                if (op->kind == PIPE_W) {
                    double e = bend[(size_t)op->mb * S + op->stage];
                    if (e < 0) ok = 0; else if (e > ready) ready = e;
                }
                if (!ok) break;
                double end = ready + op_time(t, op->kind);
                if (fmb >= 0) fend[(size_t)fmb * S + fst] = end;
                if (bmb >= 0) bend[(size_t)bmb * S + bst] = end;
                if (ev->first[d] < 0) ev->first[d] = ready;
                ev->last[d] = end;
                ev->busy[d] += op_time(t, op->kind);
                free_at[d] = end;
                pc[d]++, left--, progress = 1;
            }
        }
    }
    ev->makespan = 0;
    for (int d = 0; d < D; d++)
        if (ev->last[d] > ev->makespan) ev->makespan = ev->last[d];
    free(fend), free(bend), free(pc), free(free_at);
    return left == 0 ? 0 : -1;
}

static double makespan_of(const char *name, const struct pipe_shape *sh, const struct times *t)
{
    struct pipe_program prog;
    struct eval ev;
    build_ok(name, sh, &prog);
    ck_assert_int_eq(evaluate(&prog, t, &ev), 0);
    pipe_program_release(&prog);
    return ev.makespan;
}

#define ck_assert_near(a, b) ck_assert_msg(fabs((a) - (b)) < 1e-9, "%s = %g, want %g", #a, \
                                           (double)(a), (double)(b))

/* ---- gpipe and 1f1b ------------------------------------------------------------ */

START_TEST(basic_counts)
{
    const char *names[] = {"gpipe", "1f1b"};
    for (int k = 0; k < 2; k++) {
        struct pipe_shape sh = shape_of(4, 8, 1);
        struct pipe_program prog;
        build_ok(names[k], &sh, &prog);
        ck_assert_int_eq(prog.stages, 4);
        for (int d = 0; d < 4; d++) {
            ck_assert_int_eq(prog.n_ops[d], 16);
            ck_assert_int_eq(count_kind(&prog, d, PIPE_F), 8);
            ck_assert_int_eq(count_kind(&prog, d, PIPE_BW), 8);
            for (int i = 0; i < prog.n_ops[d]; i++) ck_assert_int_eq(prog.ops[d][i].stage, d);
        }
        pipe_program_release(&prog);
    }
}
END_TEST

START_TEST(basic_1f1b_order)
{
    /* Device 1 of p=4, m=8: warm-up p−1−d = 2 forwards, then pairs. */
    struct pipe_shape sh = shape_of(4, 8, 1);
    struct pipe_program prog;
    build_ok("1f1b", &sh, &prog);
    const int kinds[] = {PIPE_F, PIPE_F, PIPE_F, PIPE_BW, PIPE_F, PIPE_BW};
    const int mbs[] = {0, 1, 2, 0, 3, 1};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(prog.ops[1][i].kind, kinds[i]);
        ck_assert_int_eq(prog.ops[1][i].mb, mbs[i]);
    }
    /* the last device alternates from the start */
    ck_assert_int_eq(prog.ops[3][0].kind, PIPE_F);
    ck_assert_int_eq(prog.ops[3][1].kind, PIPE_BW);
    pipe_program_release(&prog);
}
END_TEST

START_TEST(basic_peaks)
{
    struct pipe_shape sh = shape_of(4, 8, 1);
    struct pipe_program g, o;
    build_ok("gpipe", &sh, &g);
    build_ok("1f1b", &sh, &o);
    for (int d = 0; d < 4; d++) {
        int b, w;
        pipe_peak_inflight(&g, d, 0.5, &b, &w);
        ck_assert_int_eq(b, 8);
        ck_assert_int_eq(w, 0);
        pipe_peak_inflight(&o, d, 0.5, &b, &w);
        ck_assert_int_eq(b, 4 - d); /* [4,3,2,1] */
        ck_assert_int_eq(w, 0);
    }
    pipe_program_release(&g);
    pipe_program_release(&o);
}
END_TEST

START_TEST(basic_few_microbatches)
{
    /* m < p: valid, and 1F1B stashes min(p−d, m). */
    for (int m = 1; m < 4; m++) {
        struct pipe_shape sh = shape_of(4, m, 1);
        struct pipe_program prog;
        build_ok("1f1b", &sh, &prog);
        for (int d = 0; d < 4; d++) {
            int b;
            pipe_peak_inflight(&prog, d, 0, &b, NULL);
            ck_assert_int_eq(b, 4 - d < m ? 4 - d : m);
            ck_assert_int_eq(prog.n_ops[d], 2 * m);
        }
        pipe_program_release(&prog);
        build_ok("gpipe", &sh, &prog);
        pipe_program_release(&prog);
    }
}
END_TEST

START_TEST(basic_makespans)
{
    /* (m+p−1)(t_f+t_b) with t_f=1, t_b=2: p=4 → m=8: 33; m=1,2,3: 12,15,18. */
    struct times t = {.f = 1, .b = 2, .w = 0, .fb = -1};
    const int ms[] = {8, 1, 2, 3};
    const double want[] = {33, 12, 15, 18};
    for (int k = 0; k < 4; k++) {
        struct pipe_shape sh = shape_of(4, ms[k], 1);
        ck_assert_near(makespan_of("gpipe", &sh, &t), want[k]);
        ck_assert_near(makespan_of("1f1b", &sh, &t), want[k]);
    }
    /* bubble = 1 − busy/(p·makespan) = 1 − 4·24/(4·33) = 3/11 */
    struct pipe_shape sh = shape_of(4, 8, 1);
    struct pipe_program prog;
    struct eval ev;
    build_ok("1f1b", &sh, &prog);
    ck_assert_int_eq(evaluate(&prog, &t, &ev), 0);
    double busy = 0;
    for (int d = 0; d < 4; d++) busy += ev.busy[d];
    ck_assert_near(1 - busy / (4 * ev.makespan), 3.0 / 11.0);
    pipe_program_release(&prog);
}
END_TEST

/* ---- registry ------------------------------------------------------------------- */

START_TEST(registry_unknown)
{
    struct pipe_shape sh = shape_of(4, 8, 1);
    struct pipe_program prog;
    struct mp_error err = {0};
    ck_assert_int_eq(schedule_build("zb-h3", &sh, &prog, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "zb-h3"));
    const char *want[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v",
                          "zb-auto", "dualpipe", "dualpipev"};
    for (int i = 0; i < 9; i++) {
        ck_assert_ptr_nonnull(strstr(err.msg, want[i]));
        ck_assert_ptr_nonnull(schedule_find(want[i]));
        ck_assert_ptr_nonnull(strstr(schedule_names(), want[i]));
    }
    ck_assert_ptr_null(schedule_find("GPipe"));
    pipe_program_release(&prog); /* harmless after a failed build */
    sh.microbatches = 0;
    ck_assert_int_eq(schedule_build("1f1b", &sh, &prog, &err), MP_ERR_INPUT);
}
END_TEST

/* ---- the validator on hand-broken programs -------------------------------------- */

static void expect_invalid(const struct pipe_program *prog, const char *needle)
{
    struct mp_error err = {0};
    ck_assert_int_eq(pipe_validate(prog, &err), MP_ERR_INFEASIBLE);
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'", err.msg, needle);
}

START_TEST(validate_missing_duplicate)
{
    struct pipe_shape sh = shape_of(2, 2, 1);
    struct pipe_program prog;
    build_ok("1f1b", &sh, &prog);
    /* device 1: F0 BW0 F1 BW1; drop the last BW */
    prog.n_ops[1]--;
    expect_invalid(&prog, "device 1 is missing the backward (B, BW or FB) of mb 1, stage 1");
    prog.n_ops[1]++;
    pipe_program_push(&prog, 0, mkop(PIPE_F, 1, 0));
    expect_invalid(&prog, "duplicate forward of microbatch 1 stage 0");
    pipe_program_release(&prog);
}
END_TEST

START_TEST(validate_order)
{
    struct pipe_shape sh = shape_of(2, 2, 1);
    struct pipe_program prog;
    build_ok("1f1b", &sh, &prog);
    /* device 1 runs F0 BW0 F1 BW1: swap to BW0 F0 */
    struct pipe_op tmp = prog.ops[1][0];
    prog.ops[1][0] = prog.ops[1][1];
    prog.ops[1][1] = tmp;
    expect_invalid(&prog, "device 1 runs the backward of mb 0 stage 1");
    pipe_program_release(&prog);

    /* W before B: split device 1's backwards and put W(0) first */
    pipe_program_init(&prog, 2, 2, 1, 1);
    pipe_program_push(&prog, 0, mkop(PIPE_F, 0, 0));
    pipe_program_push(&prog, 0, mkop(PIPE_BW, 0, 0));
    pipe_program_push(&prog, 1, mkop(PIPE_F, 0, 1));
    pipe_program_push(&prog, 1, mkop(PIPE_W, 0, 1));
    pipe_program_push(&prog, 1, mkop(PIPE_B, 0, 1));
    expect_invalid(&prog, "device 1 runs W(mb 0, stage 1) at op 1 before its B (op 2)");
    /* and in the right order it is fine */
    prog.ops[1][1] = mkop(PIPE_B, 0, 1);
    prog.ops[1][2] = mkop(PIPE_W, 0, 1);
    struct mp_error err;
    ck_assert_int_eq(pipe_validate(&prog, &err), MP_OK);
    /* B without its W */
    prog.n_ops[1]--;
    expect_invalid(&prog, "device 1 is missing W(mb 0, stage 1)");
    pipe_program_release(&prog);
}
END_TEST

START_TEST(validate_wrong_device)
{
    struct pipe_shape sh = shape_of(2, 2, 1);
    struct pipe_program prog;
    build_ok("gpipe", &sh, &prog);
    prog.ops[0][1].stage = 1; /* F(mb 1, stage 1) placed on device 0 */
    expect_invalid(&prog, "device 0 op 1 F(mb 1, stage 1): stage 1 of microbatch 1 belongs on device 1");
    pipe_program_release(&prog);
}
END_TEST

START_TEST(validate_deadlock)
{
    /* device 0 waits for device 1's backward of mb 0, which device 1 only
     * runs after a forward of mb 1 that device 0 has not sent yet. */
    struct pipe_program prog;
    pipe_program_init(&prog, 2, 2, 2, 1);
    pipe_program_push(&prog, 0, mkop(PIPE_F, 0, 0));
    pipe_program_push(&prog, 0, mkop(PIPE_BW, 0, 0));
    pipe_program_push(&prog, 0, mkop(PIPE_F, 1, 0));
    pipe_program_push(&prog, 0, mkop(PIPE_BW, 1, 0));
    pipe_program_push(&prog, 1, mkop(PIPE_F, 1, 1));
    pipe_program_push(&prog, 1, mkop(PIPE_F, 0, 1));
    pipe_program_push(&prog, 1, mkop(PIPE_BW, 0, 1));
    pipe_program_push(&prog, 1, mkop(PIPE_BW, 1, 1));
    expect_invalid(&prog, "deadlock: device 0 is stuck at op 1 BW(mb 0, stage 0) waiting for "
                          "B(mb 0, stage 1) on device 1");
    struct times t = {1, 1, 1, -1};
    struct eval ev;
    ck_assert_int_eq(evaluate(&prog, &t, &ev), -1);
    pipe_program_release(&prog);
}
END_TEST

/* ---- interleaved ------------------------------------------------------------------ */

START_TEST(interleaved_peaks_and_makespans)
{
    /* cases.md: device 0 peaks at 2(p−1) + (v−1)p + 1 chunk-forwards: 11 for
     * v=2, 19 for v=4 (p=4) — 5.5 and 4.75 stage-units = p + (p−1)/v. */
    const int vs[] = {2, 4};
    const int peak0[] = {11, 19};
    const double want[] = {28.5, 26.25}; /* m(t_f+t_b) + (p−1)(t_f+t_b)/v */
    for (int k = 0; k < 2; k++) {
        int v = vs[k];
        struct pipe_shape sh = shape_of(4, 8, v);
        struct pipe_program prog;
        build_ok("interleaved", &sh, &prog);
        ck_assert_int_eq(prog.stages, 4 * v);
        for (int d = 0; d < 4; d++) {
            int b, w;
            ck_assert_int_eq(prog.n_ops[d], 2 * 8 * v);
            pipe_peak_inflight(&prog, d, 0.5, &b, &w);
            ck_assert_int_eq(b, 2 * (4 - 1 - d) + (v - 1) * 4 + 1);
            ck_assert_int_eq(w, 0);
            for (int i = 0; i < prog.n_ops[d]; i++)
                ck_assert_int_eq(prog.ops[d][i].stage % 4, d);
        }
        int b0;
        pipe_peak_inflight(&prog, 0, 0, &b0, NULL);
        ck_assert_int_eq(b0, peak0[k]);
        /* device time per microbatch is t_f=1, t_b=2, split over v chunks */
        struct times t = {.f = 1.0 / v, .b = 2.0 / v, .w = 0, .fb = -1};
        struct eval ev;
        ck_assert_int_eq(evaluate(&prog, &t, &ev), 0);
        ck_assert_near(ev.makespan, want[k]);
        pipe_program_release(&prog);
    }
}
END_TEST

START_TEST(interleaved_order)
{
    /* p=2, m=4, v=2, group 2: the forward table is (mb,chunk) =
     * (0,0)(1,0)(0,1)(1,1)(2,0)(3,0)(2,1)(3,1); device 1 warms up
     * 0·2 + 1·2 = 2 forwards, then F(table[2]) B(table[0] mirrored)... */
    struct pipe_shape sh = shape_of(2, 4, 2);
    struct pipe_program prog;
    build_ok("interleaved", &sh, &prog);
    const int kind[] = {PIPE_F, PIPE_F, PIPE_F, PIPE_BW, PIPE_F, PIPE_BW};
    const int mb[] = {0, 1, 0, 0, 1, 1};
    const int st[] = {1, 1, 3, 3, 3, 3};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(prog.ops[1][i].kind, kind[i]);
        ck_assert_int_eq(prog.ops[1][i].mb, mb[i]);
        ck_assert_int_eq(prog.ops[1][i].stage, st[i]);
    }
    pipe_program_release(&prog);
}
END_TEST

START_TEST(interleaved_rules)
{
    struct pipe_shape sh = shape_of(4, 8, 1);
    struct pipe_program prog;
    struct mp_error err;
    ck_assert_int_eq(schedule_build("interleaved", &sh, &prog, &err), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "got 1"));
    sh.chunks = 2;
    sh.layers = 36; /* 9 per stage, not divisible by 2 */
    ck_assert_int_eq(schedule_build("interleaved", &sh, &prog, &err), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "layers per stage (9) must be divisible by vpp (2)"));
    sh.layers = 32;
    sh.microbatches = 3;
    ck_assert_int_eq(schedule_build("interleaved", &sh, &prog, &err), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "got 3 microbatches for pp = 4"));
    /* m = 6 is not a multiple of 4: the group grows to 6 (6 mod 5 = 1 < 4) */
    sh.microbatches = 6;
    build_ok("interleaved", &sh, &prog);
    pipe_program_release(&prog);
}
END_TEST

/* ---- zero bubble ------------------------------------------------------------------ */

START_TEST(zb_h_peaks)
{
    /* cases.md: ZB-H1 holds (p−i)M_B + i·M_W, ZB-H2 (2p−2i−1)M_B + 2i·M_W.
     * M_W is small next to M_B, so a tiny weight ranks the peak by M_B first
     * and then by M_W: the (M_B, M_W) pair at that moment is the table's. */
    struct pipe_shape sh = shape_of(4, 8, 1);
    struct pipe_program h1, h2;
    build_ok("zb-h1", &sh, &h1);
    build_ok("zb-h2", &sh, &h2);
    const int h2b[] = {7, 5, 3, 1}, h2w[] = {0, 2, 4, 6};
    for (int d = 0; d < 4; d++) {
        int b, w;
        pipe_peak_inflight(&h1, d, 0.001, &b, &w);
        ck_assert_int_eq(b, 4 - d);
        ck_assert_int_eq(w, d);
        pipe_peak_inflight(&h2, d, 0.001, &b, &w);
        ck_assert_int_eq(b, h2b[d]);
        ck_assert_int_eq(w, h2w[d]);
        ck_assert_int_eq(count_kind(&h1, d, PIPE_F), 8);
        ck_assert_int_eq(count_kind(&h1, d, PIPE_B), 8);
        ck_assert_int_eq(count_kind(&h1, d, PIPE_W), 8);
        ck_assert_int_eq(count_kind(&h2, d, PIPE_W), 8);
    }
    pipe_program_release(&h1);
    pipe_program_release(&h2);
}
END_TEST

START_TEST(zb_h_makespans)
{
    /* all passes 1: ZB-H1 27 (1F1B with B+W fused: 33); ZB-H2 27 with every
     * device busy without a gap for 3m = 24 between its first and last op. */
    struct times t = {1, 1, 1, -1};
    struct pipe_shape sh = shape_of(4, 8, 1);
    ck_assert_near(makespan_of("zb-h1", &sh, &t), 27);
    ck_assert_near(makespan_of("1f1b", &sh, &t), 33);
    struct pipe_program prog;
    struct eval ev;
    build_ok("zb-h2", &sh, &prog);
    ck_assert_int_eq(evaluate(&prog, &t, &ev), 0);
    ck_assert_near(ev.makespan, 27);
    for (int d = 0; d < 4; d++) ck_assert_near(ev.last[d] - ev.first[d], 24);
    pipe_program_release(&prog);
    /* ZB-H1's order on stage 1: F0 F1 | F2 B0 | F3 B1 W0 | ... */
    build_ok("zb-h1", &sh, &prog);
    const int kind[] = {PIPE_F, PIPE_F, PIPE_F, PIPE_B, PIPE_F, PIPE_B, PIPE_W};
    const int mb[] = {0, 1, 2, 0, 3, 1, 0};
    for (int i = 0; i < 7; i++) {
        ck_assert_int_eq(prog.ops[1][i].kind, kind[i]);
        ck_assert_int_eq(prog.ops[1][i].mb, mb[i]);
    }
    pipe_program_release(&prog);
}
END_TEST

START_TEST(zb_v_shape)
{
    for (int p = 2; p <= 8; p++) {
        for (int m = 1; m <= 4 * p; m++) {
            struct pipe_shape sh = shape_of(p, m, 1);
            struct pipe_program prog;
            build_ok("zb-v", &sh, &prog);
            ck_assert_int_eq(prog.stages, 2 * p);
            for (int d = 0; d < p; d++) {
                ck_assert_int_eq(prog.device_of[d], d);
                ck_assert_int_eq(prog.device_of[2 * p - 1 - d], d);
                ck_assert_int_eq(count_kind(&prog, d, PIPE_F), 2 * m);
                ck_assert_int_eq(count_kind(&prog, d, PIPE_B), 2 * m);
                ck_assert_int_eq(count_kind(&prog, d, PIPE_W), 2 * m);
                /* peak p·M_B = 2p chunk stashes, a pending W at half */
                int b, w;
                pipe_peak_inflight(&prog, d, 0.5, &b, &w);
                ck_assert_msg(b + 0.5 * w <= 2 * p, "p=%d m=%d d=%d: %d + %d/2", p, m, d, b, w);
            }
            /* T_F = T_B = T_W: no device idles inside its span once m ≥ 2p */
            struct times t = {1, 1, 1, -1};
            struct eval ev;
            ck_assert_int_eq(evaluate(&prog, &t, &ev), 0);
            if (m >= 2 * p) {
                for (int d = 0; d < p; d++)
                    ck_assert_near(ev.last[d] - ev.first[d], ev.busy[d]);
                ck_assert_near(ev.makespan, 6 * m + p - 1);
            }
            if (m >= 2 * p) {
                /* warm-up on device i (1-based): 2p−i forwards of the first
                 * chunk and i−1 of the second, before anything else */
                for (int i = 1; i <= p; i++) {
                    int fa = 0, fc = 0;
                    for (int k = 0; k < 2 * p - 1; k++) {
                        const struct pipe_op *op = &prog.ops[i - 1][k];
                        ck_assert_int_eq(op->kind, PIPE_F);
                        if (op->stage == i - 1) fa++; else fc++;
                    }
                    ck_assert_int_eq(fa, 2 * p - i);
                    ck_assert_int_eq(fc, i - 1);
                }
            }
            pipe_program_release(&prog);
        }
    }
}
END_TEST

/* Pass times so far apart that now + T_B == now in a double (T_F = 1,
 * T_B = 2e-19, T_W = 2e-7: the value fuzzer's synthetic 4,853.7 s forward
 * beside a 1 ps backward): a B that takes no time still ends, and the
 * device below it, waiting for its gradient, goes on. Before, only the
 * device itself was looked at again and the greedy stalled (zb-v exit 1).
 * Every pass is scheduled, and each device still runs its 2m forwards
 * first-chunk-first as above. */
START_TEST(zb_greedy_pass_times_beyond_a_double)
{
    for (int p = 2; p <= 4; p++) {
        for (int m = 1; m <= 2 * p + 4; m++) {
            struct pipe_shape sh = shape_of(p, m, 1);
            sh.t_f = 1, sh.t_b = 2e-19, sh.t_w = 2e-7;
            const char *names[] = {"zb-v", "zb-auto"};
            for (int k = 0; k < 2; k++) {
                struct pipe_program prog;
                build_ok(names[k], &sh, &prog);
                int per = k == 0 ? 2 : 1; /* zb-v: two chunks a device */
                for (int d = 0; d < p; d++) {
                    ck_assert_int_eq(count_kind(&prog, d, PIPE_F), per * m);
                    ck_assert_int_eq(count_kind(&prog, d, PIPE_B), per * m);
                    ck_assert_int_eq(count_kind(&prog, d, PIPE_W), per * m);
                }
                pipe_program_release(&prog);
            }
        }
    }
}
END_TEST

START_TEST(zb_auto_vs_h1)
{
    /* At the default limit (p M_B, a pending W counted whole, where ZB-H1
     * sits exactly) zb-auto is never slower than ZB-H1 and stays in budget. */
    const struct times ts[] = {{1, 1, 1, -1}, {1, 2, 1, -1}, {2, 1, 1, -1},
                               {1, 1.5, 0.7, -1}, {1, 1, 0.25, -1}};
    for (int k = 0; k < 5; k++) {
        for (int p = 2; p <= 8; p *= 2) {
            for (int m = 1; m <= 4 * p; m++) {
                struct pipe_shape sh = shape_of(p, m, 1);
                sh.t_f = ts[k].f, sh.t_b = ts[k].b, sh.t_w = ts[k].w;
                double a = makespan_of("zb-auto", &sh, &ts[k]);
                double h = makespan_of("zb-h1", &sh, &ts[k]);
                ck_assert_msg(a <= h + 1e-9, "p=%d m=%d t=%d: %g > %g", p, m, k, a, h);
                struct pipe_program prog;
                build_ok("zb-auto", &sh, &prog);
                for (int d = 0; d < p; d++) {
                    int b, w;
                    pipe_peak_inflight(&prog, d, 1, &b, &w);
                    ck_assert_int_le(b + w, p);
                }
                pipe_program_release(&prog);
            }
        }
    }
    /* equal times, p=4, m=8: at least as good as ZB-H1's 27 */
    struct pipe_shape sh = shape_of(4, 8, 1);
    struct times t = {1, 1, 1, -1};
    ck_assert(makespan_of("zb-auto", &sh, &t) <= 27 + 1e-9);
    /* a tighter budget still gives a valid schedule within it */
    sh.mem_limit = 2;
    struct pipe_program prog;
    build_ok("zb-auto", &sh, &prog);
    for (int d = 0; d < 4; d++) {
        int b, w;
        pipe_peak_inflight(&prog, d, 1, &b, &w);
        ck_assert_int_le(b + w, 2);
    }
    pipe_program_release(&prog);
    /* and a roomier one is no slower than the default */
    sh.mem_limit = 8;
    ck_assert(makespan_of("zb-auto", &sh, &t) <= 27 + 1e-9);
}
END_TEST

/* ---- DualPipe ---------------------------------------------------------------------- */

START_TEST(dualpipe_counts)
{
    /* Each rank runs one forward and one backward per microbatch and chunk:
     * DualPipeV's two chunks see all m, DualPipe's each see m/2. */
    for (int R = 2; R <= 8; R += 2) {
        for (int m = 2 * R; m <= 6 * R; m += 2) {
            struct pipe_shape sh = shape_of(R, m, 1);
            struct pipe_program pv, pd;
            build_ok("dualpipev", &sh, &pv);
            build_ok("dualpipe", &sh, &pd);
            ck_assert_int_eq(pv.stages, 2 * R);
            ck_assert_int_eq(pd.paths, 2);
            for (int r = 0; r < R; r++) {
                /* phase 4 has m−2R+r+1 pairs of F&B, one split on the last rank */
                int fb = 2 * (m - 2 * R + r + 1) - (r == R - 1) + (R - r - 1);
                ck_assert_int_eq(count_kind(&pv, r, PIPE_FB), fb);
                ck_assert_int_eq(count_kind(&pv, r, PIPE_F) + fb, 2 * m);
                ck_assert_int_eq(count_kind(&pv, r, PIPE_B) + count_kind(&pv, r, PIPE_BW) + fb,
                                 2 * m);
                /* deferred W's: phases 3, 6 and 7 → 2(R−r−1) + (r+1) */
                ck_assert_int_eq(count_kind(&pv, r, PIPE_W), 2 * (R - r - 1) + r + 1);
                int h = r < R - 1 - r ? r : R - 1 - r, N = R / 2;
                int fbd = 2 * (m / 2 - 2 * N + h + 1) - (h == N - 1) + (N - h - 1);
                ck_assert_int_eq(count_kind(&pd, r, PIPE_FB), fbd);
                ck_assert_int_eq(count_kind(&pd, r, PIPE_F) + fbd, m);
                ck_assert_int_eq(count_kind(&pd, r, PIPE_W), 2 * (N - h - 1) + h + 1);
            }
            pipe_program_release(&pv);
            pipe_program_release(&pd);
        }
    }
}
END_TEST

START_TEST(dualpipe_activations)
{
    /* DeepSeek-V3 Table 2: DualPipe holds PP+1 microbatch activations per
     * rank (the overlapped F&B counted while both halves are live). */
    for (int R = 2; R <= 8; R += 2) {
        struct pipe_shape sh = shape_of(R, 4 * R, 1);
        struct pipe_program prog;
        build_ok("dualpipe", &sh, &prog);
        for (int r = 0; r < R; r++) {
            int b, w;
            pipe_peak_inflight(&prog, r, 1, &b, &w);
            ck_assert_int_eq(b + w, R + 1);
        }
        pipe_program_release(&prog);
    }
}
END_TEST

START_TEST(dualpipe_layout)
{
    struct pipe_shape sh = shape_of(4, 8, 1);
    struct pipe_program prog;
    build_ok("dualpipe", &sh, &prog);
    for (int mb = 0; mb < 8; mb++) ck_assert_int_eq(prog.path_of_mb[mb], mb < 4 ? 0 : 1);
    for (int s = 0; s < 4; s++) {
        ck_assert_int_eq(pipe_device(&prog, 0, s), s);
        ck_assert_int_eq(pipe_device(&prog, 7, s), 3 - s);
    }
    /* rank 0 starts its down chunk: 2(N−h−1) = 2 forwards, then a down/up pair */
    ck_assert_int_eq(prog.ops[0][0].mb, 0);
    ck_assert_int_eq(prog.ops[0][1].mb, 1);
    ck_assert_int_eq(prog.ops[0][2].mb, 2);
    ck_assert_int_eq(prog.ops[0][3].mb, 4); /* first up microbatch, at its last stage */
    ck_assert_int_eq(prog.ops[0][3].stage, 3);
    /* rank 3 mirrors it on the up direction */
    ck_assert_int_eq(prog.ops[3][0].mb, 4);
    ck_assert_int_eq(prog.ops[3][0].stage, 0);
    pipe_program_release(&prog);
}
END_TEST

START_TEST(dualpipev_idle)
{
    /* cases.md: R=4 (8 stages), m=16, F=B=W=1 (full backward 2), F&B 2.75:
     * the largest per-rank idle is (8/2−1)(2.75 + 2 − 3) = 5.25. */
    struct pipe_shape sh = shape_of(4, 16, 1);
    struct pipe_program prog;
    build_ok("dualpipev", &sh, &prog);
    struct times t = {1, 1, 1, 2.75};
    struct eval ev;
    ck_assert_int_eq(evaluate(&prog, &t, &ev), 0);
    /* idle = time in the step the rank's compute stream is not busy */
    double worst = 0;
    for (int r = 0; r < 4; r++) {
        double idle = ev.makespan - ev.busy[r];
        if (idle > worst) worst = idle;
    }
    ck_assert_near(worst, 5.25);
    ck_assert_near(ev.makespan, 95.5);
    /* ranks 2 and 3 are the worst: their busy time is 90.25 */
    ck_assert_near(ev.busy[3], 90.25);
    pipe_program_release(&prog);
}
END_TEST

/* ---- every schedule, every shape ----------------------------------------------------- */

START_TEST(all_validate)
{
    const char *names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2",
                           "zb-v", "zb-auto", "dualpipe", "dualpipev"};
    int built = 0;
    for (int k = 0; k < 9; k++) {
        for (int p = 2; p <= 8; p *= 2) {
            /* m from 1 where no rule asks for more: a pipe that never fills */
            for (int m = k == 2 || k >= 7 ? p : 1; m <= 8 * p; m++) {
                for (int v = 2; v <= (k == 2 ? 4 : 2); v += 2) {
                    struct pipe_shape sh = shape_of(p, m, v);
                    if (k >= 7 && m < 2 * p) continue;   /* DualPipe's rule */
                    if (k == 7 && m % 2) continue;
                    struct pipe_program prog;
                    build_ok(names[k], &sh, &prog); /* validates */
                    long fwd = 0;
                    for (int d = 0; d < p; d++)
                        fwd += count_kind(&prog, d, PIPE_F) + count_kind(&prog, d, PIPE_FB);
                    ck_assert_int_eq(fwd, (long)m * prog.stages);
                    pipe_program_release(&prog);
                    built++;
                }
            }
        }
    }
    ck_assert_int_gt(built, 9 * 80);
}
END_TEST

START_TEST(all_rules)
{
    struct pipe_program prog;
    struct mp_error err;
    struct {
        const char *name;
        int p, m, v, layers;
        const char *needle;
    } cases[] = {
        {"dualpipe", 3, 12, 1, 0, "even pp (half the ranks feed each direction), got 3"},
        {"dualpipe", 4, 9, 1, 0, "even number of microbatches (half go each way), got 9"},
        {"dualpipe", 4, 6, 1, 0, "at least 2·pp = 8 microbatches, got 6"},
        {"dualpipe", 4, 8, 1, 3, "at least one layer per stage: 3 layers for pp = 4"},
        {"dualpipev", 4, 7, 1, 0, "at least 2·pp = 8 microbatches, got 7"},
        {"dualpipev", 4, 8, 1, 7, "it needs at least 8 layers, got 7"},
        {"zb-v", 4, 8, 1, 36, "layers (36) must be divisible by 8"},
        {"interleaved", 4, 8, 1, 0, "got 1"},
        {"interleaved", 4, 2, 2, 0, "got 2 microbatches for pp = 4"},
        {"interleaved", 4, 8, 3, 32, "layers per stage (8) must be divisible by vpp (3)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pipe_shape sh = shape_of(cases[i].p, cases[i].m, cases[i].v);
        sh.layers = cases[i].layers;
        ck_assert_int_eq(schedule_build(cases[i].name, &sh, &prog, &err), MP_ERR_INFEASIBLE);
        ck_assert_msg(strstr(err.msg, cases[i].needle) != NULL, "%s: '%s' lacks '%s'",
                      cases[i].name, err.msg, cases[i].needle);
    }
    struct pipe_shape sh = shape_of(4, 8, 1);
    sh.mem_limit = 0.5;
    ck_assert_int_eq(schedule_build("zb-auto", &sh, &prog, &err), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "(0.5 M_B)"));
    sh.mem_limit = 0;
    sh.t_w = -1;
    ck_assert_int_eq(schedule_build("zb-auto", &sh, &prog, &err), MP_ERR_INPUT);
    /* the basic ones have no rule beyond p, m ≥ 1, and layers are not theirs to check */
    sh = shape_of(3, 2, 1);
    sh.layers = 93;
    build_ok("1f1b", &sh, &prog);
    pipe_program_release(&prog);
    /* DualPipe's stages may be unequal: DeepSeek-V3's 61 layers on pp 16 */
    sh = shape_of(16, 32, 1);
    sh.layers = 61;
    build_ok("dualpipe", &sh, &prog);
    pipe_program_release(&prog);
    build_ok("dualpipev", &sh, &prog);
    pipe_program_release(&prog);
}
END_TEST

Suite *schedule_suite(void)
{
    Suite *s = suite_create("schedule");
    TCase *tc = tcase_create("basic");
    tcase_add_test(tc, basic_counts);
    tcase_add_test(tc, basic_1f1b_order);
    tcase_add_test(tc, basic_peaks);
    tcase_add_test(tc, basic_few_microbatches);
    tcase_add_test(tc, basic_makespans);
    suite_add_tcase(s, tc);
    tc = tcase_create("interleaved");
    tcase_add_test(tc, interleaved_peaks_and_makespans);
    tcase_add_test(tc, interleaved_order);
    tcase_add_test(tc, interleaved_rules);
    suite_add_tcase(s, tc);
    tc = tcase_create("zero_bubble");
    tcase_add_test(tc, zb_h_peaks);
    tcase_add_test(tc, zb_h_makespans);
    tcase_add_test(tc, zb_v_shape);
    tcase_add_test(tc, zb_greedy_pass_times_beyond_a_double);
    tcase_add_test(tc, zb_auto_vs_h1);
    suite_add_tcase(s, tc);
    tc = tcase_create("dualpipe");
    tcase_add_test(tc, dualpipe_counts);
    tcase_add_test(tc, dualpipe_activations);
    tcase_add_test(tc, dualpipe_layout);
    tcase_add_test(tc, dualpipev_idle);
    suite_add_tcase(s, tc);
    tc = tcase_create("all");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, all_validate);
    tcase_add_test(tc, all_rules);
    suite_add_tcase(s, tc);
    tc = tcase_create("registry");
    tcase_add_test(tc, registry_unknown);
    suite_add_tcase(s, tc);
    tc = tcase_create("validate");
    tcase_add_test(tc, validate_missing_duplicate);
    tcase_add_test(tc, validate_order);
    tcase_add_test(tc, validate_wrong_device);
    tcase_add_test(tc, validate_deadlock);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(schedule_suite)
