/* check_step_split.c — the step accounting (sim/train/step_split.h): it adds
 * up to the step time to the picosecond on every shipped training scenario,
 * gives the textbook bubble exactly, charges hand-offs as a person counts
 * them, and its pipeline bubble on GPT-3 175B is the closed form evaluated
 * on the real stage times. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/train/sim.h"
#include "testutil.h"

#define MS MP_PS_PER_MS

static int run_file(struct sim *s, const char *path, const char *const *sets)
{
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_msg(config_load(&cfg, path, &err) == MP_OK, "%s", err.msg);
    for (; sets && *sets; sets++) ck_assert_int_eq(config_set(&cfg, *sets, "test", &err), MP_OK);
    if (cfg.inference.present) return -1;
    return sim_run(s, &cfg, NULL, &err);
}

/* Every part of every stage, and the mean, sum to the step exactly. */
static void assert_sums(const struct sim *s, const char *what)
{
    const struct sim_result *r = &s->res;
    ck_assert_msg(r->stage != NULL, "%s: no metrics", what);
    for (int d = 0; d < r->stages; d++) {
        mp_time t = step_split_total(&r->stage[d].split);
        ck_assert_msg(t == r->step_time, "%s stage %d: parts sum to %lld ps, step %lld ps", what,
                      d, (long long)t, (long long)r->step_time);
        for (int k = 0; k < N_SPLIT; k++) ck_assert(r->stage[d].split.part[k] >= 0);
        /* busy = compute + recompute + optimizer + other busy: the parts of
         * the compute stream's time never exceed what it ran */
        mp_time busy = r->stage[d].split.part[SPLIT_COMPUTE] +
                       r->stage[d].split.part[SPLIT_RECOMPUTE] +
                       r->stage[d].split.part[SPLIT_OPTIMIZER];
        ck_assert(busy <= r->stage[d].busy);
    }
    ck_assert_msg(step_split_total(&r->split) == r->step_time, "%s: mean sums to %lld, step %lld",
                  what, (long long)step_split_total(&r->split), (long long)r->step_time);
}

START_TEST(every_shipped_training_scenario_adds_up_to_the_picosecond)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", mp_test_path("scenarios"));
    DIR *dp = opendir(dir);
    ck_assert_ptr_nonnull(dp);
    struct dirent *de;
    int ran = 0;
    while ((de = readdir(dp))) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 4, ".ini")) continue;
        char path[2100];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct sim s;
        int rc = run_file(&s, path, NULL);
        if (rc < 0) continue; /* serving */
        /* Infeasible by memory still has every metric (exit 3 shows them). */
        ck_assert_msg(rc == MP_OK || rc == MP_ERR_INFEASIBLE, "%s: rc %d", de->d_name, rc);
        assert_sums(&s, de->d_name);
        sim_release(&s);
        ran++;
    }
    closedir(dp);
    ck_assert_int_ge(ran, 20);
}
END_TEST

/* GPipe and 1F1B, p = 4, m = 8, F = 1 ms, B + W = 2 ms, free links: each
 * stage computes 24 ms of the 33 ms step and waits 9 ms for the others:
 * all of it bubble, (p−1)/(m+p−1) = 3/11 exactly. */
START_TEST(textbook_bubble_is_3_over_11_and_all_idle_is_bubble)
{
    static const char *const sched[] = { "training.schedule=gpipe", "training.schedule=1f1b" };
    for (int k = 0; k < 2; k++) {
        struct sim s;
        const char *sets[] = { sched[k], NULL };
        ck_assert_int_eq(run_file(&s, mp_test_path("scenarios/teach-bubbles.ini"), sets), MP_OK);
        ck_assert_int_eq(s.res.step_time, 33 * MS);
        ck_assert_double_eq_tol(s.res.bubble, 3.0 / 11.0, 1e-15);
        for (int d = 0; d < 4; d++) {
            ck_assert_int_eq(s.res.stage[d].split.part[SPLIT_COMPUTE], 24 * MS);
            ck_assert_int_eq(s.res.stage[d].split.part[SPLIT_BUBBLE], 9 * MS);
        }
        ck_assert_int_eq(s.res.split.part[SPLIT_BUBBLE], 9 * MS);
        sim_release(&s);
    }
}
END_TEST

/* GPipe with a 1 ms hop on every hand-off (step 39 ms, README). By hand:
 * stage 0 runs F0..F7 in [0, 8) and BW in [23, 39); between, it waits for
 * its first gradient, which stage 1 sends in [22, 23): 1 ms of exposed PP,
 * and before that stage 1's own work: 14 ms of bubble.
 * Stage 1: F0 arrives over [1, 2) (PP 1, bubble [0, 1) 1); its first
 * gradient over [19, 20) (PP 1, bubble [10, 19) 9); after its last BW it
 * sends the gradient over [36, 37) (PP 1) and waits 2 ms for stage 0.
 * Stage 2 likewise: PP 1 + 1 + 1, bubble 3 + 4 + 5 = 12. Stage 3: F0 over
 * [5, 6) (PP 1, bubble 5), its last send [30, 31) (PP 1), bubble [31, 39) 8.
 * Each stage: 24 ms compute + PP + bubble = 39 ms. Mean PP 9/4 ms,
 * bubble 51/4 ms. */
START_TEST(hand_offs_charged_as_counted_by_hand)
{
    struct sim s;
    const char *sets[] = { "synthetic.hop=1ms", NULL };
    ck_assert_int_eq(run_file(&s, mp_test_path("scenarios/teach-bubbles.ini"), sets), MP_OK);
    ck_assert_int_eq(s.res.step_time, 39 * MS);
    static const int pp[4] = { 1, 3, 3, 2 }, bub[4] = { 14, 12, 12, 13 };
    for (int d = 0; d < 4; d++) {
        ck_assert_int_eq(s.res.stage[d].split.part[SPLIT_COMPUTE], 24 * MS);
        ck_assert_int_eq(s.res.stage[d].split.part[SPLIT_PP], pp[d] * MS);
        ck_assert_int_eq(s.res.stage[d].split.part[SPLIT_BUBBLE], bub[d] * MS);
    }
    ck_assert_int_eq(s.res.split.part[SPLIT_PP], 9 * MS / 4);
    ck_assert_int_eq(s.res.split.part[SPLIT_BUBBLE], 51 * MS / 4);
    /* bubble over the step: 51/4 of 39 ms */
    ck_assert_double_eq_tol(s.res.bubble, 51.0 / 4 / 39, 1e-15);
    ck_assert_double_eq_tol(s.res.exposed_comm_s[COMM_PP], 9.0 / 4 / 1000, 1e-15);
    /* The form on the real stage times, T = 3 ms, h = 1 ms: 12 + 7 × 3 +
     * 2 × 3 × 1 = 39 ms, less 24 + 9/4 of each stage's own: 12.75 ms. */
    ck_assert(s.res.has_formula_real);
    ck_assert_double_eq_tol(s.res.formula_real_bubble_s, 12.75e-3, 1e-15);
    assert_sums(&s, "hop");
    sim_release(&s);
}
END_TEST

/* The mean over stages is rounded by largest remainder and still sums. */
START_TEST(mean_rounds_by_largest_remainder)
{
    struct step_split st[3] = { 0 };
    /* three stages of a 10 ps step: compute 3, 3, 4; bubble 7, 7, 6 */
    st[0].part[SPLIT_COMPUTE] = 3, st[0].part[SPLIT_BUBBLE] = 7;
    st[1].part[SPLIT_COMPUTE] = 3, st[1].part[SPLIT_BUBBLE] = 7;
    st[2].part[SPLIT_COMPUTE] = 4, st[2].part[SPLIT_BUBBLE] = 6;
    struct step_split m;
    step_split_mean(st, 3, 10, &m);
    /* exact means 10/3 and 20/3: floors 3 and 6 leave 1 ps; the larger
     * remainder (20 mod 3 = 2 against 10 mod 3 = 1) takes it */
    ck_assert_int_eq(m.part[SPLIT_COMPUTE], 3);
    ck_assert_int_eq(m.part[SPLIT_BUBBLE], 7);
    ck_assert_int_eq(step_split_total(&m), 10);
}
END_TEST

/* GPT-3 175B as Megatron ran it (TP8 × PP16 × DP8, m = 192, 1F1B): the
 * pipeline bubble is the closed form on the real stage times within 1 %.
 * T_d = (compute + recompute + exposed TP) / m of stage d, h the mean
 * hand-off; the step is Σ T + (m − 1) max T (the fill and drain, then the
 * slowest stage's pace) + 2(p − 1) h (one hop per stage each way) + stage
 * 0's step work after the pipeline (its exposed DP and optimizer), and each
 * stage's bubble is that step less everything else it did. The textbook
 * (p−1)/(m+p−1) on mean compute times alone (7.25 %) is far off, because
 * exposed TP communication lengthens every T. The form is evaluated here
 * from the split itself, as a person would from the tables. */
START_TEST(gpt3_bubble_within_one_percent_of_the_real_stage_closed_form)
{
    struct sim s;
    ck_assert_int_eq(run_file(&s, mp_test_path("scenarios/megatron-gpt3-175b.ini"), NULL), MP_OK);
    const struct sim_result *r = &s.res;
    int P = r->stages;
    double m = r->microbatches, sum = 0, most = 0, rest = 0, h = 0;
    ck_assert_int_eq(P, 16);
    ck_assert_int_eq((int)m, 192);
    for (int d = 0; d < P; d++) {
        const mp_time *x = r->stage[d].split.part;
        double own = (double)(x[SPLIT_COMPUTE] + x[SPLIT_RECOMPUTE] + x[SPLIT_TP]);
        sum += own / m;
        most = fmax(most, own / m);
        rest += (double)(r->step_time - x[SPLIT_BUBBLE]) / P;
    }
    int n = 0;
    for (int i = 0; i < s.g.n_ops; i++)
        if (s.g.ops[i].tag == TAG_SEND) h += (double)(s.e.end[i] - s.e.start[i]), n++;
    h /= n;
    const mp_time *x0 = r->stage[0].split.part;
    double step = sum + (m - 1) * most + 2 * (P - 1) * h + (double)(x0[SPLIT_DP] + x0[SPLIT_OPTIMIZER]);
    double form = step - rest, sim = (double)r->split.part[SPLIT_BUBBLE];
    ck_assert_msg(fabs(sim - form) <= 0.01 * form, "bubble %.6g s, form %.6g s", sim / 1e12,
                  form / 1e12);
    ck_assert_double_eq_tol(r->formula_real_bubble_s, form / 1e12, 1e-9);
    /* the predicted step is the simulated one within 1 % too */
    ck_assert(fabs(step - (double)r->step_time) <= 0.01 * (double)r->step_time);
    /* the bubble is not the exposed TP time, which is its own part */
    ck_assert(r->split.part[SPLIT_TP] > 0);
    ck_assert_double_eq_tol(r->bubble, sim / ((double)r->step_time), 1e-12);
    sim_release(&s);
}
END_TEST

static Suite *step_split_suite(void)
{
    Suite *s = suite_create("step_split");
    TCase *tc = tcase_create("accounting");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_shipped_training_scenario_adds_up_to_the_picosecond);
    tcase_add_test(tc, textbook_bubble_is_3_over_11_and_all_idle_is_bubble);
    tcase_add_test(tc, hand_offs_charged_as_counted_by_hand);
    tcase_add_test(tc, mean_rounds_by_largest_remainder);
    tcase_add_test(tc, gpt3_bubble_within_one_percent_of_the_real_stage_closed_form);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(step_split_suite)
