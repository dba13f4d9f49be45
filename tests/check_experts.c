/* check_experts.c — expert parallelism (sim/strategy/experts.h): routing
 * statistics against their expectation, capacity drops against a hand
 * count, the all-to-all against its closed form, determinism by seed, and
 * the [experts] keys' errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/config.h"
#include "sim/strategy/experts.h"
#include "sim/train/sim.h"
#include "testutil.h"

static struct mp_error err;

/* A small Mixtral-like model: `E` experts of width 256, top-`k`, 2 layers
 * (every decoder MoE), hidden 128. */
static const char *moe_json(int E, int k)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"architectures\":[\"MixtralForCausalLM\"],\"hidden_size\":128,"
             "\"intermediate_size\":256,\"num_attention_heads\":4,\"num_key_value_heads\":4,"
             "\"num_hidden_layers\":2,\"vocab_size\":1000,\"num_local_experts\":%d,"
             "\"num_experts_per_tok\":%d}", E, k);
    return mp_test_tmpfile(".json", json);
}

/* One node of 8 H100s (dgx-h100), dp = ep = `ep`, `m` microbatches of one
 * sequence of `seq` tokens per replica. */
static void moe_config(struct config *cfg, const char *model, int ep, int m, int seq)
{
    config_defaults(cfg);
    snprintf(cfg->model.config, sizeof cfg->model.config, "%s", model);
    snprintf(cfg->hardware.system, sizeof cfg->hardware.system, "dgx-h100");
    cfg->model.seq_len = seq;
    cfg->parallel.dp = ep;
    cfg->parallel.ep = ep;
    cfg->training.global_batch = ep * m;
    cfg->training.micro_batch = 1;
}

static void run_ok(struct sim *s, const struct config *cfg)
{
    int rc = sim_run(s, cfg, NULL, &err);
    ck_assert_msg(rc == MP_OK, "sim_run: %s", err.msg);
    ck_assert(s->has_experts);
}

/* Uniform routing, dropless, 8 experts, top-2, ep = 8, 64 tokens per rank:
 * a layer makes N = 8 × 64 × 2 = 1024 assignments per microbatch, so an
 * expert expects N/E = 1024 / 8 = 128 tokens (tokens × k / experts). Its
 * count is Binomial(1024, 1/8): sd √(1024 · 1/8 · 7/8) = √112 ≈ 10.58. The
 * mean over m = 2000 microbatches has sd 10.58 / √2000 ≈ 0.237, so every
 * expert's mean lies within 1.5 tokens (6.3 sd; 16 experts-layers checked)
 * of 128 unless the sampler is wrong. */
START_TEST(uniform_mean_converges_to_tokens_k_over_experts)
{
    struct config cfg;
    moe_config(&cfg, moe_json(8, 2), 8, 2000, 64);
    struct sim s;
    run_ok(&s, &cfg);
    const struct ep_plan *p = &s.experts;
    ck_assert_int_eq(p->n_moe, 2);
    for (int i = 0; i < p->n_moe; i++) {
        ck_assert_double_eq(p->stats[i].tok_mean, 128.0);  /* exact: 1024 / 8 */
        ck_assert_double_eq(p->stats[i].dropped, 0.0);
        for (int e = 0; e < 8; e++) {
            double mean = p->expert_tokens[i * 8 + e] / 2000;
            ck_assert_msg(fabs(mean - 128) < 1.5, "layer %d expert %d: mean %.3f", i, e, mean);
        }
        /* Nothing is lost: every assignment lands on some expert. */
        double sum = 0;
        for (int e = 0; e < 8; e++) sum += p->expert_tokens[i * 8 + e];
        ck_assert_double_eq(sum, 1024.0 * 2000);
    }
    sim_release(&s);
}
END_TEST

/* Capacity factor 1.0 and a fixed skewed load from a trace: 4 experts,
 * top-1, ep = 4, 8 tokens per rank, so N = 4 × 8 × 1 = 32 assignments per
 * microbatch, and loads 5:1:1:1 give 20, 4, 4, 4 tokens. Capacity is
 * ⌈1.0 × 32 / 4⌉ = 8 per expert, so expert 0 keeps 8 and drops 20 − 8 = 12;
 * the others drop none. Over 3 microbatches: 36 dropped per layer, of 96. */
START_TEST(capacity_one_drops_the_hand_count)
{
    struct config cfg;
    moe_config(&cfg, moe_json(4, 1), 4, 3, 8);
    cfg.experts.routing = EP_TRACE;
    cfg.experts.capacity_factor = 1.0;
    snprintf(cfg.experts.trace, sizeof cfg.experts.trace, "%s",
             mp_test_tmpfile(".csv", "# loads of experts 0..3\n5,1,1,1\n"));
    struct sim s;
    run_ok(&s, &cfg);
    for (int i = 0; i < s.experts.n_moe; i++) {
        ck_assert_double_eq(s.experts.stats[i].dropped, 36.0);
        ck_assert_double_eq(s.experts.stats[i].assigned, 96.0);
        ck_assert_double_eq(s.experts.stats[i].tok_max, 8.0);   /* the capacity */
        ck_assert_double_eq(s.experts.stats[i].tok_min, 4.0);
        /* Kept 8 + 4 + 4 + 4 = 20 over 4 ranks (one expert each): the
         * busiest rank holds 8, the mean 5, an imbalance of 1.6. */
        ck_assert_double_eq_tol(s.experts.stats[i].imbalance_mean, 1.6, 1e-12);
    }
    sim_release(&s);

    /* The same counts through the function itself. */
    double count[4] = { 20, 4, 4, 4 }, kept[4];
    ck_assert_double_eq(experts_apply_capacity(count, 4, 1.0, 32, kept), 12.0);
    ck_assert_double_eq(kept[0], 8.0);
    /* Dropless keeps all; factor 2 allows ⌈2 × 32 / 4⌉ = 16, dropping 4. */
    ck_assert_double_eq(experts_apply_capacity(count, 4, 0, 32, kept), 0.0);
    ck_assert_double_eq(experts_apply_capacity(count, 4, 2.0, 32, kept), 4.0);
}
END_TEST

/* An all-to-all of S bytes per rank on n = 8 ranks of one NVSwitch node
 * (dgx-h100: B = 370 GB/s per chip per direction, α = 1.5 µs per route):
 * each rank sends (n−1)/n of S over its up link and takes as much over its
 * down link, so the time is (n−1)/n · S/B + α. With S = 8 × 370e9 × 1 ms =
 * 2.96 GB: 7/8 × 8 ms = 7 ms, plus 1.5 µs: 7.0015 ms = 7001500000 ps. */
START_TEST(all_to_all_on_a_switch_is_exact)
{
    struct chip_catalog cat;
    ck_assert_int_eq(chip_catalog_load_default(&cat, &err), MP_OK);
    struct system sys;
    ck_assert_msg(system_load(&sys, "dgx-h100", 1, 8, &cat, &err) == MP_OK, "%s", err.msg);
    int chips[8];
    double share[8];
    for (int i = 0; i < 8; i++) chips[i] = i, share[i] = 1.0 / 8;
    double S = 8 * 370e9 * 1e-3;
    mp_time t = experts_a2a_time(&sys, chips, 8, share, S, 2, 1, EP_A2A_AUTO);
    ck_assert_int_eq(t, (mp_time)7001500000);
    /* It agrees with the collective module's direct all-to-all. */
    struct coll_spec c = { .op = COLL_ALL_TO_ALL, .algo = COLL_DIRECT, .chips = chips, .n = 8,
                           .bytes = S };
    ck_assert_int_eq(collective_time(&sys, &c), t);
    /* n = 4 ranks, S = 4 × 370e9 × 1 ms: 3/4 × 4 ms + 1.5 µs. */
    ck_assert_int_eq(experts_a2a_time(&sys, chips, 4, (double[]){ .25, .25, .25, .25 },
                                      4 * 370e9 * 1e-3, 2, 1, EP_A2A_DIRECT),
                     (mp_time)3001500000);
    /* A hot rank receiving half of everything: rank 0 takes 1/2 of the
     * other 7 ranks' S, 7/2 · S over its down link: 7/2 × 8 ms = 28 ms. */
    double hot[8] = { 0.5 };
    for (int i = 1; i < 8; i++) hot[i] = 0.5 / 7;
    ck_assert_int_eq(experts_a2a_time(&sys, chips, 8, hot, S, 2, 1, EP_A2A_DIRECT),
                     (mp_time)28001500000);
    system_release(&sys);
    chip_catalog_release(&cat);
}
END_TEST

/* DeepSeek-V3's node limit: k = 8 experts over at most M = 4 nodes reach
 * 4 (1 − (3/4)^8) = 3.5995 nodes per token; over 8 free nodes
 * 8 (1 − (7/8)^8) = 5.2509; one node: 1. */
START_TEST(nodes_per_token_closed_form)
{
    ck_assert_double_eq_tol(experts_nodes_per_token(8, 4, 8), 4 * (1 - pow(0.75, 8)), 1e-12);
    ck_assert_double_eq_tol(experts_nodes_per_token(8, 0, 8), 8 * (1 - pow(0.875, 8)), 1e-12);
    ck_assert_double_eq(experts_nodes_per_token(1, 0, 8), 1.0);
}
END_TEST

/* Same seed: the same routing and times, bit for bit. Another seed: other
 * counts (the busiest expert differs somewhere), but the expected load per
 * expert, N·k/E = 8 × 64 × 2 / 8 = 128, is the same and each run's
 * empirical mean over 500 microbatches is within 5 sd (5 × 10.58/√500 =
 * 2.4 tokens) of it. Zipf skew 1 so the routing really is random. */
START_TEST(seed_fixes_routing_not_mean_load)
{
    struct config cfg;
    moe_config(&cfg, moe_json(8, 2), 8, 500, 64);
    cfg.experts.routing = EP_ZIPF;
    struct sim a, b, c;
    run_ok(&a, &cfg);
    run_ok(&b, &cfg);
    cfg.run.seed = 2;
    run_ok(&c, &cfg);
    size_t n = (size_t)a.experts.microbatches * a.experts.n_moe * N_EP_ROLES;
    ck_assert(memcmp(a.experts.t, b.experts.t, n * sizeof *a.experts.t) == 0);
    ck_assert_int_eq(a.res.step_time, b.res.step_time);
    bool differs = memcmp(a.experts.t, c.experts.t, n * sizeof *a.experts.t) != 0;
    ck_assert(differs);
    for (int i = 0; i < 2; i++) {
        ck_assert_double_eq(a.experts.stats[i].tok_mean, 128.0);
        ck_assert_double_eq(c.experts.stats[i].tok_mean, 128.0);
        double ma = 0, mc = 0;
        for (int e = 0; e < 8; e++) {
            ma += a.experts.expert_tokens[i * 8 + e] / 500 / 8;
            mc += c.experts.expert_tokens[i * 8 + e] / 500 / 8;
        }
        ck_assert_double_eq_tol(ma, 128.0, 1e-9);  /* dropless: the mean is exact */
        ck_assert_double_eq_tol(mc, 128.0, 1e-9);
    }
    /* Uniform routing, two seeds: every expert's mean within 2.4 tokens. */
    cfg.experts.routing = EP_UNIFORM;
    struct sim u1, u2;
    cfg.run.seed = 7;
    run_ok(&u1, &cfg);
    cfg.run.seed = 8;
    run_ok(&u2, &cfg);
    for (int e = 0; e < 16; e++) {
        ck_assert(fabs(u1.experts.expert_tokens[e] / 500 - 128) < 2.4);
        ck_assert(fabs(u2.experts.expert_tokens[e] / 500 - 128) < 2.4);
    }
    ck_assert(memcmp(u1.experts.expert_tokens, u2.experts.expert_tokens, 16 * sizeof(double)) != 0);
    sim_release(&a);
    sim_release(&b);
    sim_release(&c);
    sim_release(&u1);
    sim_release(&u2);
}
END_TEST

/* The lane runs the gating rank: with a trace that sends 5/8 of the load to
 * expert 0 (2560 of the 4096 tokens, against 1024 under an even trace), a
 * forward's expert kernels on the lane are the hot rank's, so they take
 * longer than under an even trace — but at most 2560/1024 = 2.5 times as
 * long, since each kernel also pays a fixed launch — and the all-to-all is
 * longer too (the hot rank takes more bytes in). */
START_TEST(hot_expert_gates_the_layer)
{
    struct config cfg;
    moe_config(&cfg, moe_json(4, 1), 4, 2, 4096);
    cfg.experts.routing = EP_TRACE;
    snprintf(cfg.experts.trace, sizeof cfg.experts.trace, "%s",
             mp_test_tmpfile(".csv", "5,1,1,1\n"));
    struct sim hot, even;
    run_ok(&hot, &cfg);
    snprintf(cfg.experts.trace, sizeof cfg.experts.trace, "%s", mp_test_tmpfile(".csv", "1,1,1,1\n"));
    run_ok(&even, &cfg);
    int l = hot.experts.stats[0].layer;
    ck_assert_int_eq(hot.experts.gate_rank[0], 0);
    mp_time th = experts_time(&hot.experts, 0, l, EPR_EXPERTS_F);
    mp_time te = experts_time(&even.experts, 0, l, EPR_EXPERTS_F);
    ck_assert(th > te);
    ck_assert(th <= 2.5 * te);
    ck_assert(experts_time(&hot.experts, 0, l, EPR_DISPATCH) >
              experts_time(&even.experts, 0, l, EPR_DISPATCH));
    ck_assert(hot.res.step_time > even.res.step_time);
    ck_assert(hot.res.exposed_comm_s[COMM_EP] > 0);
    sim_release(&hot);
    sim_release(&even);
}
END_TEST

/* Every new key, given a bad value in a file, is an input error naming the
 * file, the line and the key. */
START_TEST(bad_values_name_file_line_key)
{
    static const struct { const char *line, *key; } bad[] = {
        { "routing = pareto", "experts.routing" },
        { "skew = -1", "experts.skew" },
        { "concentration = 0", "experts.concentration" },
        { "capacity_factor = -0.5", "experts.capacity_factor" },
        { "redundant = -1", "experts.redundant" },
        { "max_nodes = x", "experts.max_nodes" },
        { "all_to_all = ring", "experts.all_to_all" },
        { "dispatch_bits = 64", "experts.dispatch_bits" },
        { "show_ranks = maybe", "experts.show_ranks" },
        { "trace = ", "experts.trace" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[256];
        snprintf(text, sizeof text, "[parallel]\nep = 1\n[experts]\n%s\n", bad[i].line);
        const char *path = mp_test_tmpfile(".ini", text);
        struct config cfg;
        config_defaults(&cfg);
        int rc = config_load(&cfg, path, &err);
        ck_assert_msg(rc == MP_ERR_INPUT, "%s accepted", bad[i].line);
        char where[1100];
        snprintf(where, sizeof where, "%s:4", path);
        ck_assert_msg(strstr(err.msg, where) && strstr(err.msg, bad[i].key),
                      "%s: message '%s' lacks %s or %s", bad[i].line, err.msg, where, bad[i].key);
    }
    /* Values each key accepts but the model does not: the key is named. */
    struct config cfg;
    struct sim s;
    moe_config(&cfg, moe_json(4, 1), 4, 2, 8);
    cfg.experts.redundant = 5;
    ck_assert_int_eq(sim_run(&s, &cfg, NULL, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "experts.redundant") != NULL, "%s", err.msg);
    sim_release(&s);
    moe_config(&cfg, moe_json(4, 1), 4, 2, 8);
    cfg.parallel.ep = 3;
    ck_assert_int_eq(sim_run(&s, &cfg, NULL, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "parallel.ep") != NULL, "%s", err.msg);
    sim_release(&s);
    /* A trace with a bad load on its line 3 names the trace and the line. */
    moe_config(&cfg, moe_json(4, 1), 4, 2, 8);
    cfg.experts.routing = EP_TRACE;
    const char *csv = mp_test_tmpfile(".csv", "1,1,1,1\n# next is wrong\n1,2,lots,1\n");
    snprintf(cfg.experts.trace, sizeof cfg.experts.trace, "%s", csv);
    ck_assert_int_eq(sim_run(&s, &cfg, NULL, &err), MP_ERR_INPUT);
    char where[1100];
    snprintf(where, sizeof where, "%s:3", csv);
    ck_assert_msg(strstr(err.msg, where) && strstr(err.msg, "experts.trace"), "%s", err.msg);
    sim_release(&s);
    /* Rows of the wrong width. */
    snprintf(cfg.experts.trace, sizeof cfg.experts.trace, "%s", mp_test_tmpfile(".csv", "1,1,1\n"));
    ck_assert_int_eq(sim_run(&s, &cfg, NULL, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":1:") && strstr(err.msg, "expected 4 loads"), "%s", err.msg);
    sim_release(&s);
}
END_TEST

static Suite *experts_suite(void)
{
    Suite *s = suite_create("experts");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, uniform_mean_converges_to_tokens_k_over_experts);
    tcase_add_test(tc, capacity_one_drops_the_hand_count);
    tcase_add_test(tc, all_to_all_on_a_switch_is_exact);
    tcase_add_test(tc, nodes_per_token_closed_form);
    tcase_add_test(tc, seed_fixes_routing_not_mean_load);
    tcase_add_test(tc, hot_expert_gates_the_layer);
    tcase_add_test(tc, bad_values_name_file_line_key);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(experts_suite)
