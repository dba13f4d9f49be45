/* check_search.c — `mpsim search`: the counts add up, the bounds that prune
 * are lower bounds of what the simulator then measures (so pruning never
 * drops a layout that could rank), the top K exact, --fix and round-down,
 * hand-checked static bytes, ranking. */
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

static bool same_layout(const struct search_hit *a, const struct search_hit *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && a->vpp == b->vpp &&
           a->micro_batch == b->micro_batch && a->recompute == b->recompute &&
           a->zero == b->zero && a->offload == b->offload && a->sp == b->sp &&
           a->tp_overlap == b->tp_overlap && !strcmp(a->schedule, b->schedule);
}

/* The counts add up; the bounds never exceed what the simulator measured;
 * the ranking is best first; and the top K found with the bound's pruning
 * are the top K of simulating every layout (issue 22: the bound may only
 * skip layouts that cannot reach the top K). */
START_TEST(counts_add_up_and_the_top_k_is_exact)
{
    struct config base;
    load(&base, llama8b);
    struct search_options opt = { .chips = 16, .jobs = 2, .max_micro_batch = 2, .max_vpp = 2,
                                  .schedules = "1f1b,gpipe,interleaved,zb-h1", .simulate = 4 };
    struct search_result r;
    struct mp_error err = { 0 };
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_OK);
    ck_assert_int_eq(r.enumerated, r.fixed_out + r.duplicates + r.batch_pruned + r.rule_pruned +
                                       r.mem_pruned + r.host_pruned + r.bounded);
    ck_assert_int_eq(r.bounded, r.simulated + r.separated);
    ck_assert_int_eq(r.n_hits, r.bounded);
    ck_assert_int_gt(r.separated, 0); /* the bound did prune */
    ck_assert_int_ge(r.feasible, 4);
    for (int i = 0; i < r.n_hits; i++) {
        const struct search_hit *h = &r.hit[i];
        ck_assert_int_eq(h->tp * h->pp * h->dp, 16);
        ck_assert_int_eq(32 % (h->dp * h->micro_batch), 0);
        ck_assert_int_eq(h->global_batch, 32);
        if (i > 0 && h->feasible) ck_assert(r.hit[i - 1].feasible);
        if (i > 0 && h->feasible) ck_assert(r.hit[i - 1].tokens_per_s >= h->tokens_per_s);
        if (!h->simulated) continue;
        ck_assert_msg(h->bound_step_s <= h->step_s, "bound %.9g > step %.9g", h->bound_step_s,
                      h->step_s);
        if (h->peak_mem > 0)
            ck_assert_msg(h->mem_bound <= h->peak_mem * (1 + 1e-9),
                          "tp %d pp %d dp %d mb %d %s vpp %d rec %d zero %d: bound %.4g > peak %.4g",
                          h->tp, h->pp, h->dp, h->micro_batch, h->schedule, h->vpp, h->recompute,
                          h->zero, h->mem_bound, h->peak_mem);
    }
    /* Simulating everything finds the same top 4. */
    struct search_result all;
    opt.simulate = 100000;
    ck_assert_int_eq(search_run(&base, &opt, &all, &err), MP_OK);
    ck_assert_int_eq(all.separated, 0);
    for (int i = 0; i < 4; i++) {
        ck_assert(same_layout(&all.hit[i], &r.hit[i]));
        ck_assert_double_eq(all.hit[i].tokens_per_s, r.hit[i].tokens_per_s);
    }
    search_result_release(&all);
    /* One thread ranks and prunes the same way. */
    struct search_result r1;
    opt.simulate = 4;
    opt.jobs = 1;
    ck_assert_int_eq(search_run(&base, &opt, &r1, &err), MP_OK);
    ck_assert_int_eq(r1.simulated, r.simulated);
    for (int i = 0; i < r.n_hits; i++) {
        ck_assert(same_layout(&r1.hit[i], &r.hit[i]));
        ck_assert_double_eq(r1.hit[i].tokens_per_s, r.hit[i].tokens_per_s);
    }
    search_result_release(&r1);
    search_result_release(&r);
}
END_TEST

/* --fix keeps only the values asked for; round-down runs the largest batch
 * that splits (30 sequences over dp 4 × micro_batch 2 → 24). */
START_TEST(fix_and_round_down)
{
    struct config base;
    load(&base, "[model]\nconfig = llama3-8b\nseq_len = 2048\n[hardware]\nsystem = dgx-h100\n"
                "[training]\nglobal_batch = 30\n");
    const char *fix[] = { "parallel.tp=4", "training.schedule=1f1b,zb-h1", NULL };
    struct search_options opt = { .chips = 16, .jobs = 2, .max_micro_batch = 2, .simulate = 2,
                                  .fix = fix, .batch_policy = SEARCH_BATCH_EXACT };
    struct search_result r;
    struct mp_error err = { 0 };
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_OK);
    /* Exact: only dp × micro_batch dividing 30 (dp 4 never does). */
    ck_assert_int_gt(r.batch_pruned, 0);
    for (int i = 0; i < r.n_hits; i++) {
        ck_assert_int_eq(30 % (r.hit[i].dp * r.hit[i].micro_batch), 0);
        ck_assert_int_ne(r.hit[i].dp, 4);
    }
    search_result_release(&r);
    opt.batch_policy = SEARCH_BATCH_ROUND_DOWN;
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_OK);
    ck_assert_int_gt(r.feasible, 0);
    ck_assert_int_gt(r.fixed_out, 0);
    bool dp4 = false;
    for (int i = 0; i < r.n_hits; i++) {
        const struct search_hit *h = &r.hit[i];
        dp4 |= h->dp == 4;
        ck_assert_int_eq(h->tp, 4);
        ck_assert(!strcmp(h->schedule, "1f1b") || !strcmp(h->schedule, "zb-h1"));
        int unit = h->dp * h->micro_batch;
        ck_assert_int_eq(h->global_batch, 30 / unit * unit);
        if (h->dp == 4 && h->micro_batch == 2) ck_assert_int_eq(h->global_batch, 24);
    }
    ck_assert(dp4);
    search_result_release(&r);
    const char *bad[] = { "parallel.tpp=4", NULL };
    opt.fix = bad;
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "--fix parallel.tpp"));
    const char *bad2[] = { "training.schedule=1f1c", NULL };
    opt.fix = bad2;
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "1f1c"));
}
END_TEST

/* GPT-3 175B, tp 8, pp 16, ZeRO 0: a middle stage holds 6 decoders of
 * 12h² = 1.812e9 parameters, ÷ 8 = 226.5M per chip, 1.359e9 in all, at
 * 2 + 4 + 12 = 18 bytes each: 24.46 GB before any activation. The bound is
 * at least that and at most the simulated peak. */
/* Selective recompute under FlashAttention without CP is the same run as no
 * recompute (the kernels it re-runs and the scores it frees exist only in
 * unfused attention): the simulator gives both the same step and peak, to
 * the picosecond and byte, so the search counts selective as a duplicate
 * there, and keeps it under unfused attention, where it differs. */
START_TEST(selective_under_flash_is_a_duplicate)
{
    mp_time step[2];
    double peak[2];
    for (int r = 0; r < 2; r++) {
        struct config cfg;
        load(&cfg, llama8b);
        struct mp_error err = { 0 };
        ck_assert_int_eq(config_set(&cfg, "parallel.tp=8", "test", &err), MP_OK);
        ck_assert_int_eq(config_set(&cfg, "parallel.dp=2", "test", &err), MP_OK);
        char rec[64];
        snprintf(rec, sizeof rec, "training.recompute=%s", r ? "selective" : "none");
        ck_assert_int_eq(config_set(&cfg, rec, "test", &err), MP_OK);
        struct sim s;
        ck_assert_int_eq(sim_run(&s, &cfg, NULL, &err), MP_OK);
        step[r] = s.res.step_time;
        peak[r] = 0;
        for (int d = 0; d < s.res.stages; d++)
            if (s.res.stage[d].peak_mem > peak[r]) peak[r] = s.res.stage[d].peak_mem;
        sim_release(&s);
    }
    ck_assert_int_eq(step[0], step[1]);
    ck_assert(peak[0] == peak[1]);
    for (int unfused = 0; unfused < 2; unfused++) {
        struct config base;
        load(&base, llama8b);
        base.training.attention = unfused ? ATTENTION_UNFUSED : ATTENTION_FLASH;
        struct search_options opt = { .chips = 16, .jobs = 2, .max_micro_batch = 1,
                                      .schedules = "1f1b", .simulate = 4 };
        struct search_result r;
        struct mp_error err = { 0 };
        ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_OK);
        int selective = 0;
        for (int i = 0; i < r.n_hits; i++) selective += r.hit[i].recompute == RECOMPUTE_SELECTIVE;
        if (unfused) ck_assert_int_gt(selective, 0);
        else ck_assert_int_eq(selective, 0);
        search_result_release(&r);
    }
}
END_TEST

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
    opt.simulate = -1;
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "--simulate"));
    opt.simulate = 0;
    opt.batch_policy = 7;
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "--batch-policy"));
}
END_TEST

static Suite *search_suite(void)
{
    Suite *s = suite_create("search");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, counts_add_up_and_the_top_k_is_exact);
    tcase_add_test(tc, fix_and_round_down);
    tcase_add_test(tc, memory_bound_by_hand);
    tcase_add_test(tc, selective_under_flash_is_a_duplicate);
    tcase_add_test(tc, bad_requests_are_input_errors);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(search_suite)
