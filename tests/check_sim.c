/* check_sim.c — whole scenarios through the library, against the worked
 * cases of shared/reference/cases.md §3 and hand counts. */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/strategy/collective.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"
#include "testutil.h"

#define MS MP_PS_PER_MS

/* The textbook case: p=4 stages, forward 1 ms, backward 1 + 1 ms, instant
 * links, activations 1 GB per microbatch per stage. */
static const char textbook[] =
    "[model]\nkind = synthetic\n"
    "[synthetic]\nforward = 1ms\nbackward_input = 1ms\nbackward_weight = 1ms\nactivation = 1GB\n"
    "[hardware]\nsystem = textbook\n"
    "[parallel]\npp = 4\n"
    "[training]\nmicro_batch = 1\nglobal_batch = 8\nschedule = gpipe\n";

/* Run the textbook scenario with overrides ("key=value", NULL-terminated). */
static int run_textbook(struct sim *s, const char *const *sets, struct sim_options *opts)
{
    static char path[512];
    if (!path[0]) snprintf(path, sizeof path, "%s", mp_test_tmpfile(".ini", textbook));
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, path, &err), MP_OK);
    for (; sets && *sets; sets++) ck_assert_int_eq(config_set(&cfg, *sets, "test", &err), MP_OK);
    int rc = sim_run(s, &cfg, opts, &err);
    return rc;
}

START_TEST(gpipe_and_1f1b_p4_m8_step_33ms_bubble_3_over_11)
{
    static const char *const schedules[] = { "training.schedule=gpipe", "training.schedule=1f1b" };
    for (int k = 0; k < 2; k++) {
        struct sim s;
        const char *sets[] = { schedules[k], NULL };
        ck_assert_int_eq(run_textbook(&s, sets, NULL), MP_OK);
        /* (m + p − 1)(t_f + t_b) = 11 × 3 ms */
        ck_assert_int_eq(s.res.step_time, 33 * MS);
        ck_assert_double_eq_tol(s.res.bubble, 3.0 / 11.0, 1e-12);
        /* every stage computes 8 × 3 ms */
        for (int d = 0; d < 4; d++) ck_assert_int_eq(s.res.stage[d].busy, 24 * MS);
        sim_release(&s);
    }
}
END_TEST

/* Peak activations held, in microbatches: GPipe keeps all m; 1F1B keeps
 * min(p − i, m) on stage i. */
START_TEST(peak_inflight_gpipe_8888_1f1b_4321)
{
    struct sim s;
    const char *g[] = { "training.schedule=gpipe", NULL };
    ck_assert_int_eq(run_textbook(&s, g, NULL), MP_OK);
    for (int d = 0; d < 4; d++) {
        ck_assert_int_eq(s.res.stage[d].peak_act_units, 8);
        ck_assert_double_eq_tol(s.res.stage[d].mem[MEM_ACTIVATIONS], 8e9, 1e-3);
    }
    sim_release(&s);
    const char *o[] = { "training.schedule=1f1b", NULL };
    ck_assert_int_eq(run_textbook(&s, o, NULL), MP_OK);
    for (int d = 0; d < 4; d++) ck_assert_int_eq(s.res.stage[d].peak_act_units, 4 - d);
    sim_release(&s);
}
END_TEST

/* Fewer microbatches than stages: (m + p − 1) × 3 ms = 12, 15, 18 ms. */
START_TEST(fewer_microbatches_than_stages)
{
    static const char *const m[] = { "training.global_batch=1", "training.global_batch=2",
                                     "training.global_batch=3" };
    static const char *const sch[] = { "training.schedule=gpipe", "training.schedule=1f1b" };
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 2; j++) {
            struct sim s;
            const char *sets[] = { m[k], sch[j], NULL };
            ck_assert_int_eq(run_textbook(&s, sets, NULL), MP_OK);
            ck_assert_int_eq(s.res.step_time, (mp_time)(12 + 3 * k) * MS);
            sim_release(&s);
        }
}
END_TEST

/* hop = 1 ms on every hand-off.
 * One microbatch (m = 1): its forward crosses 4 stages and 3 hops (4 + 3 =
 * 7 ms), its backward 4 stages of 2 ms and 3 hops (8 + 3 = 11 ms): 18 ms.
 * GPipe, m = 8: stage i runs F(k) in [k + 2i, k + 2i + 1] (each hop adds 1
 * ms per stage), so stage 3 ends its forwards at 7 + 6 + 1 = 14 ms and runs
 * its 8 backwards back to back, 14 → 30. Stage 2 gets the j-th gradient at
 * 14 + 2(j+1) + 1 and, also 2 ms per backward, ends at 30 + 1 + 2 = 33;
 * stage 1 at 36; stage 0 at 39 ms: the 33 ms of the textbook plus the 6 hops
 * of one microbatch's round trip. */
START_TEST(hop_delay_matches_the_hand_count)
{
    struct sim s;
    const char *one[] = { "synthetic.hop=1ms", "training.global_batch=1", NULL };
    ck_assert_int_eq(run_textbook(&s, one, NULL), MP_OK);
    ck_assert_int_eq(s.res.step_time, 18 * MS);
    sim_release(&s);
    const char *eight[] = { "synthetic.hop=1ms", NULL };
    ck_assert_int_eq(run_textbook(&s, eight, NULL), MP_OK);
    ck_assert_int_eq(s.res.step_time, 39 * MS);
    ck_assert_int_eq(s.res.stage[3].first_start, 6 * MS);
    /* stage 2's last backward ends at 33 ms; its last op is the 1 ms send of
     * that gradient to stage 1, so the chip's last op ends at 34 ms. */
    ck_assert_int_eq(s.res.stage[2].last_end, 34 * MS);
    sim_release(&s);
}
END_TEST

/* A ring all-reduce of S bytes over n chips on a switch whose links carry
 * B bytes/s with α latency per route: 2(n−1)/n · S/B + 2(n−1)·α, exactly.
 * S = 1 GiB, n = 8, B = 100 GB/s, α = 5 µs: each of the 14 steps moves
 * 134217728 B in 1342177280 ps plus 5 µs. */
START_TEST(ring_all_reduce_time_is_exact)
{
    const char *sys_ini = "[system]\nname = t\nchip = textbook\nchips_per_node = 8\n"
                          "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\nlatency = 5us\n"
                          "[scaleout]\ntopology = none\n";
    struct chip_catalog cat;
    struct system sys;
    struct mp_error err = { 0 };
    ck_assert_int_eq(chip_catalog_load_default(&cat, &err), MP_OK);
    ck_assert_int_eq(system_load(&sys, mp_test_tmpfile(".ini", sys_ini), 1, 8, &cat, &err), MP_OK);
    double S = 1024.0 * 1024 * 1024, B = 100e9;
    int n = 8, chips[8], ready[8], done[8];
    for (int i = 0; i < n; i++) { chips[i] = i; ready[i] = -1; }
    struct taskgraph g;
    tg_init(&g, sys.n_chips, sys.n_links);
    collective_ring_all_reduce(&g, &sys, chips, n, S, ready, done);
    ck_assert_int_eq(g.n_ops, 2 * (n - 1) * n);
    tg_finalize(&g);
    struct engine e;
    engine_init(&e, &g);
    ck_assert_int_eq(engine_run(&e, &err), MP_OK);
    double formula_ps = (2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * 5e-6) * 1e12;
    ck_assert_int_eq(engine_makespan(&e), (mp_time)llround(formula_ps));
    ck_assert_int_eq(engine_makespan(&e), 14 * (5 * MP_PS_PER_US + 1342177280));
    ck_assert_int_eq(collective_ring_all_reduce_time(&sys, chips, n, S), engine_makespan(&e));
    for (int i = 0; i < n; i++) ck_assert_int_eq(e.end[done[i]], engine_makespan(&e));
    engine_release(&e);
    tg_release(&g);
    system_release(&sys);
    chip_catalog_release(&cat);
}
END_TEST

/* Data parallel on the ring system (8 chips, 100 GB/s and 1 µs per link):
 * pp 2 × dp 4, so stage 0 is chips 0–3 and stage 1 chips 4–7 (Megatron's
 * order: DP replicas next to each other). Each stage hand-off 0 → 4 crosses
 * 4 links (4 µs); GPipe with m = 8 then takes (m + p − 1) × 3 ms plus one
 * hand-off each way: 27 ms + 8 µs. Stage 0 finishes last, then all-reduces
 * its 400 MB over chips 0,1,2,3: 6 steps of 100 MB at 100 GB/s (1 ms) plus
 * the latency of the slowest neighbour pair, 3 → 0, which goes back round
 * the ring over 3 links (3 µs): 6 × 1.003 ms. */
START_TEST(data_parallel_all_reduce_ends_the_step)
{
    struct sim s;
    const char *sets[] = { "hardware.system=ring", "parallel.pp=2", "parallel.dp=4",
                           "training.global_batch=32", "synthetic.weights=400MB", NULL };
    ck_assert_int_eq(run_textbook(&s, sets, NULL), MP_OK);
    mp_time pipeline = 27 * MS + 8 * MP_PS_PER_US, sync = 6 * (MS + 3 * MP_PS_PER_US);
    ck_assert_int_eq(s.res.step_time, pipeline + sync);
    sim_release(&s);
}
END_TEST

/* Activations that do not fit: 8 × 20 GB on an 80 GB chip is infeasible, with
 * the chip, the capacity and the breakdown in the reason. */
START_TEST(over_capacity_is_infeasible_with_breakdown)
{
    struct sim s;
    const char *sets[] = { "synthetic.activation=20GB", NULL };
    ck_assert_int_eq(run_textbook(&s, sets, NULL), MP_ERR_INFEASIBLE);
    ck_assert(!s.res.feasible);
    ck_assert_ptr_nonnull(strstr(s.res.infeasible_reason, "does not fit"));
    ck_assert_ptr_nonnull(strstr(s.res.infeasible_reason, "activations 160.00 GB"));
    sim_release(&s);
}
END_TEST

static char *capture(void (*writer)(FILE *, const struct sim *), const struct sim *s, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    writer(f, s);
    fclose(f);
    return buf;
}

/* Same scenario, same bytes: timeline and trace of two runs are identical. */
START_TEST(two_runs_give_identical_bytes)
{
    struct sim_options opts = { .record_memory = true };
    const char *sets[] = { "training.schedule=1f1b", "synthetic.hop=250us", NULL };
    struct sim a, b;
    ck_assert_int_eq(run_textbook(&a, sets, &opts), MP_OK);
    ck_assert_int_eq(run_textbook(&b, sets, &opts), MP_OK);
    size_t la, lb;
    char *ta = capture(report_timeline_csv, &a, &la), *tb = capture(report_timeline_csv, &b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(ta, tb, la), 0);
    ck_assert_ptr_nonnull(strstr(ta, "0,0,compute,F,0,0,0,0,0.000000000000,0.001000000000,0,,"));
    free(ta); free(tb);
    ta = capture(report_chrome_trace, &a, &la);
    tb = capture(report_chrome_trace, &b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_int_eq(memcmp(ta, tb, la), 0);
    free(ta); free(tb);
    sim_release(&a);
    sim_release(&b);
}
END_TEST

/* A real model: llama3-8b on 32 H100s (pp 4, dp 8, 32 microbatches), with
 * selective recompute (which stores what flash attention stores: no s² score
 * matrices; without it 4096-token sequences need 98 GiB on stage 0).
 * Checkable facts: tokens/s = global batch × seq / step; MFU can never beat
 * the chip's GEMM efficiency (every op runs at most at peak × efficiency);
 * each stage holds its share of 18 bytes per parameter of Adam state. */
/* DeepSeek-V3's 61 decoders on 16 stages: 3 each, the remainder 13 one each
 * to stages 1..13; stage 0 adds the embedding (layer 0), stage 15 the head
 * (layer 62). */
START_TEST(stage_layers_61_over_16)
{
    int want[16][2] = { { 0, 3 } };
    for (int s = 1; s < 16; s++) {
        want[s][0] = want[s - 1][1] + 1;
        want[s][1] = want[s][0] + (s <= 13 ? 4 : 3) - 1;
    }
    want[15][1] = 62;
    for (int s = 0; s < 16; s++) {
        int lo, hi;
        sim_stage_layers(61, 16, NULL, s, &lo, &hi);
        ck_assert_int_eq(lo, want[s][0]);
        ck_assert_int_eq(hi, want[s][1]);
    }
    int lo, hi;
    sim_stage_layers(61, 1, NULL, 0, &lo, &hi);
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(hi, 62);
}
END_TEST

START_TEST(llama3_8b_on_32_h100)
{
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    const char *sets[] = { "model.config=llama3-8b", "hardware.system=dgx-h100", "parallel.pp=4",
                           "parallel.dp=8", "training.global_batch=256", "training.micro_batch=1",
                           "training.schedule=1f1b", "model.seq_len=4096",
                           "training.recompute=selective", NULL };
    for (const char *const *p = sets; *p; p++) ck_assert_int_eq(config_set(&cfg, *p, "t", &err), 0);
    struct sim s;
    int rc = sim_run(&s, &cfg, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    ck_assert_int_eq(rc, MP_OK);
    ck_assert_int_eq(s.res.microbatches, 32);
    ck_assert_int_eq(s.res.n_chips, 32);
    double step = mp_seconds(s.res.step_time);
    ck_assert_double_eq_tol(s.res.tokens_per_s, 256.0 * 4096 / step, 1e-6 * s.res.tokens_per_s);
    ck_assert(s.res.mfu > 0.1 && s.res.mfu <= s.sys.chip.compute_eff + 1e-9);
    double state = 0, params = model_params(&s.model);
    for (int d = 0; d < 4; d++)
        state += s.res.stage[d].mem[MEM_WEIGHTS] + s.res.stage[d].mem[MEM_GRADS] +
                 s.res.stage[d].mem[MEM_OPTIMIZER];
    /* Tied-free Llama: every parameter sits on exactly one stage. */
    ck_assert_double_eq_tol(state, 18.0 * params, 1e-6 * state);
    sim_release(&s);
}
END_TEST

static Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("worked cases");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, gpipe_and_1f1b_p4_m8_step_33ms_bubble_3_over_11);
    tcase_add_test(tc, peak_inflight_gpipe_8888_1f1b_4321);
    tcase_add_test(tc, fewer_microbatches_than_stages);
    tcase_add_test(tc, hop_delay_matches_the_hand_count);
    tcase_add_test(tc, ring_all_reduce_time_is_exact);
    tcase_add_test(tc, data_parallel_all_reduce_ends_the_step);
    tcase_add_test(tc, over_capacity_is_infeasible_with_breakdown);
    tcase_add_test(tc, two_runs_give_identical_bytes);
    tcase_add_test(tc, llama3_8b_on_32_h100);
    tcase_add_test(tc, stage_layers_61_over_16);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(sim_suite)
