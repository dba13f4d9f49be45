/* check_cost.c — money and chip time of a step (cost.h), by hand:
 * an A100 at $12,500 over three years is 12500 / 26280 = $0.47565 per
 * chip-hour; a TPU v5p is listed at $4.20 per chip-hour. */
#include <math.h>
#include <string.h>

#include "sim/train/cost.h"
#include "sim/train/sim.h"
#include "testutil.h"

START_TEST(purchase_price_amortised_over_three_years)
{
    struct chip a100 = { .price_usd = 12500 };
    struct cost c;
    /* 1024 chips, 20 s per step, 1536 × 2048 = 3,145,728 tokens per step. */
    cost_compute(&c, &a100, 1024, 20.0, 1536.0 * 2048, 1e12);
    ck_assert_int_eq(c.basis, COST_PURCHASE);
    ck_assert_double_eq_tol(c.usd_per_chip_hour, 12500.0 / 26280, 1e-12);
    /* 1024 × 20 / 3600 = 5.6889 chip-hours per step, × $0.47565 = $2.7059. */
    ck_assert_double_eq_tol(c.chip_hours_per_step, 1024 * 20 / 3600.0, 1e-12);
    ck_assert_double_eq_tol(c.usd_per_step, 1024 * 20 / 3600.0 * 12500 / 26280, 1e-9);
    ck_assert_double_eq_tol(c.usd_per_step, 2.70595, 1e-4);
    /* Per million tokens: $2.7059 / 3.145728 = $0.86020. */
    ck_assert_double_eq_tol(c.usd_per_mtok, 0.86020, 1e-4);
    /* 1T tokens: 317,891 steps × 5.6889 = 1.8085e6 chip-hours, 73.59 days. */
    ck_assert_double_eq_tol(c.budget_chip_hours, 1e12 / 3145728 * 1024 * 20 / 3600, 1e-3);
    ck_assert_double_eq_tol(c.budget_days, 1e12 / 3145728 * 20 / 86400, 1e-9);
    ck_assert_double_eq_tol(c.budget_days, 73.586, 1e-3);
    ck_assert_double_eq_tol(c.budget_usd, c.budget_chip_hours * 12500 / 26280, 1e-6);
}
END_TEST

START_TEST(hourly_price_wins_and_unknown_is_zero)
{
    struct chip v5p = { .price_hour_usd = 4.20, .price_usd = 99999 };
    struct cost c;
    /* 8 chips for one hour-long step of a million tokens: 8 × $4.20. */
    cost_compute(&c, &v5p, 8, 3600, 1e6, 0);
    ck_assert_int_eq(c.basis, COST_HOURLY);
    ck_assert_double_eq_tol(c.usd_per_step, 33.6, 1e-9);
    ck_assert_double_eq_tol(c.usd_per_mtok, 33.6, 1e-9);
    ck_assert_double_eq(c.budget_tokens, COST_DEFAULT_BUDGET);
    ck_assert_double_eq_tol(c.budget_chip_hours, 8e6, 1e-6); /* 1e6 steps × 8 chip-hours */
    struct chip none = { 0 };
    cost_compute(&c, &none, 8, 3600, 1e6, 0);
    ck_assert_int_eq(c.basis, COST_UNKNOWN);
    ck_assert_double_eq(c.usd_per_step, 0);
    ck_assert_double_eq_tol(c.budget_chip_hours, 8e6, 1e-6); /* chip time needs no price */
}
END_TEST

START_TEST(token_counts_as_people_write_them)
{
    static const struct { const char *text; double v; } ok[] = {
        { "1T", 1e12 }, { "300B", 3e11 }, { "2.5M", 2.5e6 }, { "1500k", 1.5e6 },
        { "1e12", 1e12 }, { " 7 ", 7 }, { "1.4t", 1.4e12 }, { "2G", 2e9 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        double v = 0;
        ck_assert_int_eq(cost_parse_tokens(ok[i].text, &v), 0);
        ck_assert_double_eq_tol(v, ok[i].v, ok[i].v * 1e-12);
    }
    static const char *const bad[] = { "", "T", "-1", "0", "1X", "1TT", "inf", "nan", "1 T B" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double v;
        if (cost_parse_tokens(bad[i], &v) == 0) ck_abort_msg("'%s' was accepted", bad[i]);
    }
}
END_TEST

/* End to end: the A100 catalogue row gives what cost_compute gives. */
START_TEST(sim_result_carries_the_cost)
{
    const char *ini = mp_test_tmpfile(".ini",
        "[model]\nconfig = gpt3-175b\n[hardware]\nsystem = dgx-a100\n"
        "[parallel]\ntp = 8\npp = 16\ndp = 8\n"
        "[training]\nglobal_batch = 1536\nrecompute = full\n");
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, ini, &err), MP_OK);
    struct sim s;
    struct sim_options so = { .token_budget = 3e11 };
    int rc = sim_run(&s, &cfg, &so, &err);
    ck_assert_msg(rc == MP_OK, "%s", err.msg);
    const struct cost *c = &s.res.cost;
    double step = mp_seconds(s.res.step_time);
    ck_assert_int_eq(c->basis, COST_PURCHASE);
    ck_assert_double_eq_tol(c->usd_per_step, 1024 * step / 3600 * 12500 / 26280, 1e-9);
    ck_assert_double_eq_tol(c->usd_per_mtok, c->usd_per_step * 1e6 / (1536.0 * 2048), 1e-12);
    ck_assert_double_eq(c->budget_tokens, 3e11);
    ck_assert_double_eq_tol(c->budget_days, 3e11 / (1536.0 * 2048) * step / 86400, 1e-9);
    sim_release(&s);
}
END_TEST

static Suite *cost_suite(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, purchase_price_amortised_over_three_years);
    tcase_add_test(tc, hourly_price_wins_and_unknown_is_zero);
    tcase_add_test(tc, token_counts_as_people_write_them);
    tcase_add_test(tc, sim_result_carries_the_cost);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(cost_suite)
