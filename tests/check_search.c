/* check_search.c — `mpsim search`: the counts add up, the memory bound that
 * prunes is a lower bound of what the simulator then measures (so pruning
 * never drops a layout that fits), hand-checked static bytes, ranking. */
#include <math.h>
#include <string.h>

#include "sim/explore/search.h"
#include "sim/train/sim.h"
#include "testutil.h"

static void load(struct config *cfg, const char *text)
{
    struct mp_error err = { 0 };
    config_defaults(cfg);
    ck_assert_int_eq(config_load(cfg, mp_test_tmpfile(".ini", text), &err), MP_OK);
}

static const char llama8b[] =
    "[model]\nconfig = llama3-8b\nseq_len = 2048\n"
    "[hardware]\nsystem = dgx-h100\n"
    "[training]\nglobal_batch = 32\n";

START_TEST(counts_add_up_and_ranking_is_best_first)
{
    struct config base;
    load(&base, llama8b);
    struct search_options opt = { .chips = 16, .jobs = 2, .max_micro_batch = 2, .max_vpp = 2,
                                  .schedules = "1f1b,gpipe,interleaved,zb-h1" };
    struct search_result r;
    struct mp_error err = { 0 };
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_OK);
    ck_assert_int_eq(r.enumerated, r.duplicates + r.rule_pruned + r.mem_pruned +
                                       r.slower_skipped + r.n_hits);
    ck_assert_int_gt(r.feasible, 10);
    ck_assert_int_gt(r.mem_pruned, 0);
    for (int i = 0; i < r.n_hits; i++) {
        const struct search_hit *h = &r.hit[i];
        ck_assert_int_eq(h->tp * h->pp * h->dp, 16);
        ck_assert_int_eq(32 % (h->dp * h->micro_batch), 0);
        if (i > 0 && h->feasible) ck_assert(r.hit[i - 1].feasible);
        if (i > 0 && h->feasible) ck_assert(r.hit[i - 1].tokens_per_s >= h->tokens_per_s);
        /* The bound never exceeds what the simulator measured. */
        if (h->peak_mem > 0)
            ck_assert_msg(h->mem_bound <= h->peak_mem * (1 + 1e-9),
                          "tp %d pp %d dp %d mb %d %s vpp %d rec %d zero %d: bound %.4g > peak %.4g",
                          h->tp, h->pp, h->dp, h->micro_batch, h->schedule, h->vpp, h->recompute,
                          h->zero, h->mem_bound, h->peak_mem);
    }
    /* One thread ranks the same way. */
    struct search_result r1;
    opt.jobs = 1;
    ck_assert_int_eq(search_run(&base, &opt, &r1, &err), MP_OK);
    ck_assert_int_eq(r1.n_hits, r.n_hits);
    for (int i = 0; i < r.n_hits; i++) {
        ck_assert_str_eq(r1.hit[i].schedule, r.hit[i].schedule);
        ck_assert_int_eq(r1.hit[i].pp, r.hit[i].pp);
        ck_assert_int_eq(r1.hit[i].zero, r.hit[i].zero);
        ck_assert_double_eq(r1.hit[i].tokens_per_s, r.hit[i].tokens_per_s);
    }
    search_result_release(&r1);
    search_result_release(&r);
}
END_TEST

/* GPT-3 175B, tp 8, pp 16, ZeRO 0: a middle stage holds 6 decoders of
 * 12h² = 1.812e9 parameters, ÷ 8 = 226.5M per chip, 1.359e9 in all, at
 * 2 + 4 + 12 = 18 bytes each: 24.46 GB before any activation. The bound is
 * at least that and at most the simulated peak. */
START_TEST(memory_bound_by_hand)
{
    struct config cfg;
    load(&cfg, "[model]\nconfig = gpt3-175b\n[hardware]\nsystem = dgx-a100\n"
               "[parallel]\ntp = 8\npp = 16\ndp = 8\n"
               "[training]\nglobal_batch = 1536\nrecompute = full\n");
    double bound;
    struct mp_error err = { 0 };
    ck_assert_int_eq(search_memory_bound(&cfg, &bound, &err), MP_OK);
    double layer = 12.0 * 12288 * 12288 / 8;
    ck_assert_double_ge(bound, 6 * layer * 18 * 0.999);
    struct sim s;
    ck_assert_int_eq(sim_run(&s, &cfg, NULL, &err), MP_OK);
    double peak = 0;
    for (int d = 0; d < s.res.stages; d++)
        if (s.res.stage[d].peak_mem > peak) peak = s.res.stage[d].peak_mem;
    ck_assert_double_le(bound, peak);
    sim_release(&s);
    /* ZeRO-3 over 8 replicas shards all 18 bytes: the static part ÷ 8. */
    cfg.training.zero = 3;
    double z3;
    ck_assert_int_eq(search_memory_bound(&cfg, &z3, &err), MP_OK);
    ck_assert_double_lt(z3, bound - 6 * layer * 18 * 7 / 8 * 0.99);
}
END_TEST

START_TEST(bad_requests_are_input_errors)
{
    struct config base;
    load(&base, llama8b);
    struct search_result r;
    struct mp_error err = { 0 };
    struct search_options opt = { .chips = 0 };
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_ERR_INPUT);
    opt.chips = 16;
    opt.schedules = "1f1b,1f1bb";
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "unknown pipeline schedule '1f1bb'"));
    opt.schedules = NULL;
    opt.metric = "speed";
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "--metric 'speed'"));
    struct config syn;
    load(&syn, "[model]\nkind = synthetic\n");
    opt.metric = NULL;
    ck_assert_int_eq(search_run(&syn, &opt, &r, &err), MP_ERR_INPUT);
}
END_TEST

static Suite *search_suite(void)
{
    Suite *s = suite_create("search");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, counts_add_up_and_ranking_is_best_first);
    tcase_add_test(tc, memory_bound_by_hand);
    tcase_add_test(tc, bad_requests_are_input_errors);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(search_suite)
