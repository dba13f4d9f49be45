/* check_schedules_e2e.c — every pipeline schedule end to end through sim_run
 * (config → schedule → task graph → engine → metrics), against the worked
 * cases of shared/reference/cases.md §3. check_schedule.c counts the pure op
 * orders; here the engine times them, so these figures are what a user sees.
 *
 * All cases: synthetic model, the textbook system (free, instant links), no
 * hop, p = 4. The [synthetic] times are per device per microbatch and are
 * split evenly over the chunks a device holds, so a V or interleaved chunk
 * runs in time/v. Every run has the validator on (sim_options.validate, the
 * CLI's --validate), so each schedule's program is checked on the way. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/sim.h"
#include "testutil.h"

#define MS MP_PS_PER_MS

static const char textbook[] =
    "[model]\nkind = synthetic\n"
    "[synthetic]\nforward = 1ms\nbackward_input = 1ms\nbackward_weight = 1ms\nactivation = 1GB\n"
    "[hardware]\nsystem = textbook\n"
    "[parallel]\npp = 4\n"
    "[training]\nmicro_batch = 1\nglobal_batch = 8\nschedule = 1f1b\n";

/* Run the textbook scenario with "key=value" overrides (NULL-terminated),
 * validator on. Returns sim_run's status; the caller releases `s`. */
static int run(struct sim *s, const char *const *sets)
{
    static char path[512];
    if (!path[0]) snprintf(path, sizeof path, "%s", mp_test_tmpfile(".ini", textbook));
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, path, &err), MP_OK);
    for (; sets && *sets; sets++) {
        int rc = config_set(&cfg, *sets, "test", &err);
        ck_assert_msg(rc == MP_OK, "%s: %s", *sets, err.msg);
    }
    struct sim_options opts = { .validate = true };
    return sim_run(s, &cfg, &opts, &err);
}

/* A run that must succeed. */
static void run_ok(struct sim *s, const char *const *sets)
{
    int rc = run(s, sets);
    ck_assert_msg(rc == MP_OK, "rc %d: %s", rc, s->res.infeasible_reason);
}

/* Activations at a stage's peak as (M_B count, M_W count), when M_B = 1 GB
 * and M_W = 1 MB: F stashes 1 GB, B gives back 999 MB and keeps 1 MB until W,
 * so the bytes are a·10^9 + b·10^6 with b ≤ m < 1000. */
static void decode_peak(const struct stage_report *st, int *a, int *b)
{
    double bytes = st->mem[MEM_ACTIVATIONS];
    *a = (int)floor(bytes / 1e9 + 1e-9);
    *b = (int)llround((bytes - *a * 1e9) / 1e6);
}

static mp_time worst_idle(const struct sim *s)
{
    mp_time w = 0;
    for (int d = 0; d < s->res.stages; d++)
        if (s->res.step_time - s->res.stage[d].busy > w) w = s->res.step_time - s->res.stage[d].busy;
    return w;
}

/* ---- interleaved 1F1B ------------------------------------------------------------------- */

/* p = 4, m = 8, t_f = 1, t_b = 2 ms per device: 8 × 3 = 24 ms of work, and
 * the fill and drain shrink from (p−1)(t_f+t_b) = 9 ms to 9/v ms:
 * v = 2 → 24 + 4.5 = 28.5 ms; v = 4 → 24 + 2.25 = 26.25 ms.
 * Device 0 warms up with 2(p−1) + (v−1)p chunk-forwards and stashes one more
 * before its first backward: (6 + 4 + 1)/2 = 5.5 stage-units at v = 2 and
 * (6 + 12 + 1)/4 = 4.75 at v = 4, i.e. p + (p−1)/v; with 1 GB per stage-unit
 * that is 5.5 GB and 4.75 GB. */
START_TEST(interleaved_v2_28_5ms_v4_26_25ms)
{
    static const struct { const char *vpp; mp_time step; double peak; } c[] = {
        { "parallel.vpp=2", 28500 * MP_PS_PER_US, 5.5e9 },
        { "parallel.vpp=4", 26250 * MP_PS_PER_US, 4.75e9 },
    };
    for (int k = 0; k < 2; k++) {
        struct sim s;
        const char *sets[] = { "training.schedule=interleaved", c[k].vpp, NULL };
        run_ok(&s, sets);
        ck_assert_int_eq(s.res.step_time, c[k].step);
        ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_ACTIVATIONS], c[k].peak, 1);
        /* the closed form is printed beside it and agrees */
        ck_assert(s.res.has_formula);
        ck_assert_int_eq(s.res.formula_step, c[k].step);
        ck_assert_double_eq_tol(s.res.formula_bubble, s.res.bubble, 1e-12);
        sim_release(&s);
    }
}
END_TEST

/* ---- zero bubble ------------------------------------------------------------------------- */

/* ZB-H1, T_F = T_B = T_W = 1 ms: 8 × 3 = 24 ms of work per stage plus the
 * bubble (p−1)(T_F+T_B−T_W) = 3 ms → 27 ms (1F1B: 33). Stage i stashes like
 * 1F1B (p−i forwards) and holds i deferred weight gradients: (M_B, M_W) =
 * (4,0), (3,1), (2,2), (1,3). */
START_TEST(zb_h1_27ms_peaks_4_0_3_1_2_2_1_3)
{
    struct sim s;
    const char *sets[] = { "training.schedule=zb-h1", "synthetic.activation_w=1MB", NULL };
    run_ok(&s, sets);
    ck_assert_int_eq(s.res.step_time, 27 * MS);
    ck_assert_double_eq_tol(s.res.bubble, 3.0 / 27.0, 1e-12);
    for (int i = 0; i < 4; i++) {
        int a, b;
        decode_peak(&s.res.stage[i], &a, &b);
        ck_assert_int_eq(a, 4 - i);
        ck_assert_int_eq(b, i);
    }
    ck_assert_int_eq(s.res.formula_step, 27 * MS);
    sim_release(&s);
}
END_TEST

/* ZB-H2: stage i warms up with 2(p−1−i)+1 forwards, so it starts i ms after
 * stage 0 and ends (p−1−i) ms before the last; inside its own span it never
 * idles ((p−1)(T_F+T_B−2T_W) = 0): each span is 24 ms, the makespan 27 ms.
 * The bubble over the largest span is 0, over the makespan 3/27. Peaks:
 * (2p−2i−1) M_B and 2i M_W = (7,0), (5,2), (3,4), (1,6). max_span counts
 * the chip's comm ops too, which take no time on this system. */
START_TEST(zb_h2_makespan_27_span_24_peaks)
{
    struct sim s;
    const char *sets[] = { "training.schedule=zb-h2", "synthetic.activation_w=1MB", NULL };
    run_ok(&s, sets);
    ck_assert_int_eq(s.res.step_time, 27 * MS);
    ck_assert_int_eq(s.res.max_span, 24 * MS);
    ck_assert_double_eq_tol(s.res.bubble_span, 0, 1e-12);
    ck_assert_double_eq_tol(s.res.bubble, 3.0 / 27.0, 1e-12);
    for (int i = 0; i < 4; i++) {
        int a, b;
        decode_peak(&s.res.stage[i], &a, &b);
        ck_assert_int_eq(a, 7 - 2 * i);
        ck_assert_int_eq(b, 2 * i);
        ck_assert_int_eq(s.res.stage[i].last_end - s.res.stage[i].first_start, 24 * MS);
    }
    /* its closed form predicts the span's bubble, and says so */
    ck_assert_str_eq(s.res.formula_figure, "bubble_span");
    ck_assert_double_eq_tol(s.res.formula_bubble, s.res.formula_simulated, 1e-12);
    sim_release(&s);
}
END_TEST

/* ZB-V with equal times and m = 2p = 8: 2p chunks of 0.5 ms per pass; no
 * stage idles inside its span (cases.md §3: zero bubble at p·M_B), so every
 * span is the 24 ms of work; each device peaks at 2p chunk-activations of
 * 0.5 GB = 4 GB = p·M_B. */
START_TEST(zb_v_zero_bubble_in_span_at_p_mb)
{
    struct sim s;
    const char *sets[] = { "training.schedule=zb-v", NULL };
    run_ok(&s, sets);
    ck_assert_int_eq(s.res.max_span, 24 * MS);
    ck_assert_double_eq_tol(s.res.bubble_span, 0, 1e-12);
    for (int i = 0; i < 4; i++)
        ck_assert_double_le_tol(s.res.stage[i].mem[MEM_ACTIVATIONS], 4e9, 1);
    ck_assert(s.res.has_formula);
    sim_release(&s);
}
END_TEST

/* zb-auto's limit, as a count and as bytes. With M_B = 1 GB, "2" and "2GB"
 * are the same limit and give the same schedule; a pending W counts as a
 * whole M_B there, so no device ever stashes more than 2 GB. The default
 * (p = 4 M_B) admits ZB-H1, 27 ms; 2 M_B cannot hold 1F1B's warm-up on stage
 * 0 and must be slower. Below one M_B nothing fits: infeasible. */
START_TEST(zb_auto_memory_limit_count_and_bytes)
{
    struct sim s;
    const char *def[] = { "training.schedule=zb-auto", NULL };
    run_ok(&s, def);
    ck_assert_int_eq(s.res.step_time, 27 * MS);
    sim_release(&s);

    const char *count[] = { "training.schedule=zb-auto", "training.memory_limit=2", NULL };
    run_ok(&s, count);
    mp_time step2 = s.res.step_time;
    ck_assert_int_gt(step2, 27 * MS);
    for (int i = 0; i < 4; i++)
        ck_assert_double_le_tol(s.res.stage[i].mem[MEM_ACTIVATIONS], 2e9, 1);
    sim_release(&s);

    const char *bytes[] = { "training.schedule=zb-auto", "training.memory_limit=2GB", NULL };
    run_ok(&s, bytes);
    ck_assert_int_eq(s.res.step_time, step2);
    sim_release(&s);

    const char *tiny[] = { "training.schedule=zb-auto", "training.memory_limit=500MB", NULL };
    ck_assert_int_eq(run(&s, tiny), MP_ERR_INFEASIBLE);
    ck_assert(!s.res.feasible);
    ck_assert_ptr_nonnull(strstr(s.res.infeasible_reason, "0.5 M_B"));
    sim_release(&s);
}
END_TEST

/* A transformer (scenarios/uneven-stages.ini: Llama 3 8B, pp 4, 16
 * microbatches of 4096 tokens on H100s) with the limit in bytes. The limit
 * is divided by the largest stage's M_B (the last stage's, which holds the
 * LM head's logits): 8 decoders × 4096 tokens × (norm and block inputs 4h·2
 * B + Q, K, V, O 10240·2 B + gate, up, product 3·14336·2 B = 139,264 B;
 * selective recompute, and no dropout masks: the default trains without
 * dropout) = 4.563 GB, plus the head's 2·4096·4096·2 B + fp32 logits
 * 4·4096·128256 B = 2.168 GB: 6.731 GB. So "10GB" is 1.49 M_B: every stage
 * then stashes at most 10 GB, and the step is longer than at the default
 * limit. "4GB" is 0.594 M_B, below one microbatch: infeasible, in both
 * units. */
START_TEST(zb_auto_transformer_limit_in_bytes)
{
    static const char *const llama[] = {
        "model.kind=transformer", "model.config=llama3-8b", "model.seq_len=4096",
        "hardware.system=dgx-h100", "training.global_batch=16", "training.recompute=selective",
        "training.schedule=zb-auto",
    };
    struct sim s;
    const char *def[] = { llama[0], llama[1], llama[2], llama[3], llama[4], llama[5], llama[6],
                          NULL };
    run_ok(&s, def);
    mp_time step_default = s.res.step_time;
    sim_release(&s);

    const char *ten[] = { llama[0], llama[1], llama[2], llama[3], llama[4], llama[5], llama[6],
                          "training.memory_limit=10GB", NULL };
    run_ok(&s, ten);
    for (int i = 0; i < 4; i++) ck_assert_double_le(s.res.stage[i].mem[MEM_ACTIVATIONS], 10e9);
    ck_assert_int_gt(s.res.step_time, step_default);
    sim_release(&s);

    const char *four[] = { llama[0], llama[1], llama[2], llama[3], llama[4], llama[5], llama[6],
                           "training.memory_limit=4GB", NULL };
    ck_assert_int_eq(run(&s, four), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(s.res.infeasible_reason, "training.memory_limit = 4 GB is 0.594 M_B"));
    sim_release(&s);
}
END_TEST

/* ---- DualPipe ---------------------------------------------------------------------------- */

/* cases.md §3's worked check: DualPipeV on R = 4 ranks (PP = 8 stages),
 * m = 16, chunk times F = B_in = W = 1 ms (full backward B = 2), F&B = 2.75
 * ms. The [synthetic] times are per device and split over its 2 chunks, so
 * they are written doubled. DeepSeek's bubble (PP/2−1)(F&B+B−3W) =
 * 3 × (2.75 + 2 − 3) = 5.25 ms is the largest per-rank step − busy. */
START_TEST(dualpipev_worked_check_5_25ms)
{
    struct sim s;
    const char *sets[] = { "training.schedule=dualpipev", "training.global_batch=16",
                           "synthetic.forward=2ms", "synthetic.backward_input=2ms",
                           "synthetic.backward_weight=2ms", "synthetic.forward_backward=5.5ms",
                           NULL };
    run_ok(&s, sets);
    ck_assert_int_eq(worst_idle(&s), 5250 * MP_PS_PER_US);
    ck_assert_str_eq(s.res.formula_figure, "idle_s");
    ck_assert_double_eq_tol(s.res.formula_bubble, 5.25e-3, 1e-15);
    ck_assert_double_eq_tol(s.res.formula_simulated, 5.25e-3, 1e-15);
    sim_release(&s);
}
END_TEST

/* DualPipe on R = 4 ranks (PP = 4 stages, each rank one stage of each
 * direction), m = 8 = 2R, F = B_in = W = 1 ms, F&B = 2.75 ms:
 * (4/2 − 1)(2.75 + 2 − 3) = 1.75 ms. Without the key (F&B = F + B + W = 3,
 * no overlap): 1 × (3 + 2 − 3) = 2 ms. Both are the largest step − busy. */
START_TEST(dualpipe_matches_deepseek_when_f_equals_b)
{
    struct sim s;
    const char *fb[] = { "training.schedule=dualpipe", "synthetic.forward_backward=2.75ms", NULL };
    run_ok(&s, fb);
    ck_assert_int_eq(worst_idle(&s), 1750 * MP_PS_PER_US);
    ck_assert_double_eq_tol(s.res.formula_bubble, 1.75e-3, 1e-15);
    sim_release(&s);
    const char *plain[] = { "training.schedule=dualpipe", NULL };
    run_ok(&s, plain);
    ck_assert_int_eq(worst_idle(&s), 2 * MS);
    /* PP + 1 = 5 microbatches of activations per rank at the peak */
    ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_ACTIVATIONS], 5e9, 1);
    sim_release(&s);
}
END_TEST

/* Where DeepSeek's form stops matching: B_in = 2F. Chunk times F = 1,
 * B_in = 2, W = 1 (full backward B = 3), F&B = 3.5 ms. The form gives
 * DualPipeV 3 × (3.5 + 3 − 3) = 10.5 ms and DualPipe 1 × 3.5 = 3.5 ms; the
 * simulation gives 9.5 and 2.5 ms. The form is derived with the forward
 * equal to the input-gradient pass (so is cases.md's worked check): a rank's
 * idle comes from waiting for forwards to arrive on the ramp up and for
 * input-gradients on the ramp down, and only when the two passes take the
 * same time does that sum collapse into F&B + B − 3W per step of the ramp.
 * The report prints both and flags "the form assumes F = B". */
START_TEST(dualpipe_parts_from_deepseek_when_f_differs_from_b)
{
    static const struct {
        const char *sched, *mb, *f, *b, *w, *fb;
        mp_time form;
    } c[] = {
        { "training.schedule=dualpipev", "training.global_batch=16", "synthetic.forward=2ms",
          "synthetic.backward_input=4ms", "synthetic.backward_weight=2ms",
          "synthetic.forward_backward=7ms", 10500 * MP_PS_PER_US },
        { "training.schedule=dualpipe", "training.global_batch=8", "synthetic.forward=1ms",
          "synthetic.backward_input=2ms", "synthetic.backward_weight=1ms",
          "synthetic.forward_backward=3.5ms", 3500 * MP_PS_PER_US },
    };
    for (int k = 0; k < 2; k++) {
        struct sim s;
        const char *sets[] = { c[k].sched, c[k].mb, c[k].f, c[k].b, c[k].w, c[k].fb, NULL };
        run_ok(&s, sets);
        ck_assert_double_eq_tol(s.res.formula_bubble, mp_seconds(c[k].form), 1e-15);
        ck_assert_double_eq_tol(s.res.formula_simulated, mp_seconds(worst_idle(&s)), 1e-15);
        ck_assert_int_ne(worst_idle(&s), c[k].form);
        ck_assert_int_eq(worst_idle(&s), c[k].form - MS); /* 9.5 and 2.5 ms, as found */
        ck_assert_ptr_nonnull(strstr(s.res.formula_text, "assumes F = B"));
        sim_release(&s);
    }
}
END_TEST

/* ---- every schedule: the validator, and never worse than 1F1B -------------------------- */

static const char *const all_schedules[] = {
    "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v", "zb-auto", "dualpipe", "dualpipev",
};
#define N_SCHEDULES (sizeof all_schedules / sizeof *all_schedules)

/* Every schedule on p = 4, m = 8 (the textbook case; DualPipe's m ≥ 2R = 8
 * holds) passes the validator inside sim_run and does all its work: each
 * device computes 8 microbatches × 3 ms = 24 ms whatever the order. */
START_TEST(validator_passes_every_schedule)
{
    for (size_t k = 0; k < N_SCHEDULES; k++) {
        char sched[64];
        snprintf(sched, sizeof sched, "training.schedule=%s", all_schedules[k]);
        const char *sets[] = { sched, "parallel.vpp=2", NULL };
        if (strcmp(all_schedules[k], "interleaved")) sets[1] = NULL;
        struct sim s;
        run_ok(&s, sets);
        ck_assert(s.res.feasible);
        for (int d = 0; d < 4; d++) ck_assert_int_eq(s.res.stage[d].busy, 24 * MS);
        sim_release(&s);
    }
}
END_TEST

/* The microbatch rules of sched_dualpipe.c: DualPipe sends half of them each
 * way (m even) and both need m ≥ 2R to fill their main phase. */
static bool rejects(const char *name, int m, int p)
{
    if (!strcmp(name, "dualpipe")) return m % 2 != 0 || m < 2 * p;
    if (!strcmp(name, "dualpipev")) return m < 2 * p;
    return false;
}

/* Sweep m from p to 8p for each schedule: its simulated bubble never
 * exceeds 1F1B's at the same m, whose bubble is (p−1)/(m+p−1). Values of m a
 * schedule's rules reject (DualPipe: odd m or m < 2p) must be rejected as
 * infeasible, and only those, so no schedule passes by refusing to run. Four time
 * ratios (T_F:T_B:T_W): equal, B_in doubled, F doubled, W doubled. */
START_TEST(no_schedule_bubbles_more_than_1f1b)
{
    static const char *const times[][3] = {
        { "synthetic.forward=1ms", "synthetic.backward_input=1ms", "synthetic.backward_weight=1ms" },
        { "synthetic.forward=1ms", "synthetic.backward_input=2ms", "synthetic.backward_weight=1ms" },
        { "synthetic.forward=2ms", "synthetic.backward_input=1ms", "synthetic.backward_weight=1ms" },
        { "synthetic.forward=1ms", "synthetic.backward_input=1ms", "synthetic.backward_weight=2ms" },
    };
    for (size_t t = 0; t < sizeof times / sizeof *times; t++) {
        for (int m = 4; m <= 32; m++) {
            char mb[64];
            snprintf(mb, sizeof mb, "training.global_batch=%d", m);
            struct sim s;
            const char *base[] = { "training.schedule=1f1b", mb, times[t][0], times[t][1],
                                   times[t][2], NULL };
            run_ok(&s, base);
            double b1f1b = s.res.bubble;
            ck_assert_double_eq_tol(b1f1b, 3.0 / (m + 3), 1e-12);
            sim_release(&s);
            for (size_t k = 0; k < N_SCHEDULES; k++) {
                char sched[64];
                snprintf(sched, sizeof sched, "training.schedule=%s", all_schedules[k]);
                const char *sets[] = { sched, mb, times[t][0], times[t][1], times[t][2],
                                       "parallel.vpp=2", NULL };
                if (strcmp(all_schedules[k], "interleaved")) sets[5] = NULL;
                int rc = run(&s, sets);
                if (rejects(all_schedules[k], m, 4)) {
                    ck_assert_int_eq(rc, MP_ERR_INFEASIBLE);
                } else {
                    ck_assert_msg(rc == MP_OK, "%s m=%d: %s", all_schedules[k], m,
                                  s.res.infeasible_reason);
                    ck_assert_msg(s.res.bubble <= b1f1b + 1e-12,
                                  "%s m=%d times %zu: bubble %.4f > 1F1B %.4f", all_schedules[k],
                                  m, t, s.res.bubble, b1f1b);
                }
                sim_release(&s);
            }
        }
    }
}
END_TEST

/* ---- the closed forms agree where they are exact ---------------------------------------- */

/* With uniform stages and free links every closed form equals the
 * simulation: GPipe/1F1B 3/11, interleaved (v = 2) 1.5/9.5, ZB-H1 3/27,
 * ZB-H2 0 over its span. The printed line reads "... = 0.2727, simulated
 * 0.2727". With hop = 1 ms the hand-offs enter and the two part: GPipe
 * takes 39 ms (check_sim.c walks through it) against the form's 33, and the
 * text says why. */
START_TEST(closed_forms_match_then_part_with_hops)
{
    static const struct { const char *sched; double bubble; } c[] = {
        { "training.schedule=gpipe", 3.0 / 11 },
        { "training.schedule=1f1b", 3.0 / 11 },
        { "training.schedule=zb-h1", 3.0 / 27 },
        { "training.schedule=zb-h2", 0 },
    };
    for (size_t k = 0; k < sizeof c / sizeof *c; k++) {
        struct sim s;
        const char *sets[] = { c[k].sched, NULL };
        run_ok(&s, sets);
        ck_assert(s.res.has_formula);
        ck_assert_double_eq_tol(s.res.formula_bubble, c[k].bubble, 1e-12);
        ck_assert_double_eq_tol(s.res.formula_simulated, c[k].bubble, 1e-12);
        sim_release(&s);
    }
    struct sim s;
    const char *one[] = { "training.schedule=1f1b", NULL };
    run_ok(&s, one);
    ck_assert_ptr_nonnull(strstr(s.res.formula_text, "(p-1)/(m+p-1) = 3/11 = 0.2727, simulated 0.2727"));
    sim_release(&s);
    const char *hop[] = { "training.schedule=gpipe", "synthetic.hop=1ms", NULL };
    run_ok(&s, hop);
    ck_assert_int_eq(s.res.step_time, 39 * MS);
    ck_assert_int_eq(s.res.formula_step, 33 * MS);
    ck_assert_ptr_nonnull(strstr(s.res.formula_text, "hand-offs not counted"));
    sim_release(&s);
}
END_TEST

static Suite *schedules_e2e_suite(void)
{
    Suite *s = suite_create("schedules_e2e");
    TCase *tc = tcase_create("worked cases");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, interleaved_v2_28_5ms_v4_26_25ms);
    tcase_add_test(tc, zb_h1_27ms_peaks_4_0_3_1_2_2_1_3);
    tcase_add_test(tc, zb_h2_makespan_27_span_24_peaks);
    tcase_add_test(tc, zb_v_zero_bubble_in_span_at_p_mb);
    tcase_add_test(tc, zb_auto_memory_limit_count_and_bytes);
    tcase_add_test(tc, zb_auto_transformer_limit_in_bytes);
    tcase_add_test(tc, dualpipev_worked_check_5_25ms);
    tcase_add_test(tc, dualpipe_matches_deepseek_when_f_equals_b);
    tcase_add_test(tc, dualpipe_parts_from_deepseek_when_f_differs_from_b);
    tcase_add_test(tc, validator_passes_every_schedule);
    tcase_add_test(tc, no_schedule_bubbles_more_than_1f1b);
    tcase_add_test(tc, closed_forms_match_then_part_with_hops);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(schedules_e2e_suite)
