/* check_serve_sched.c — serving's schedulers, workloads and metrics (issue
 * 19): which passes each scheduler forms, priority classes, Gamma and
 * empirical arrivals and lengths, sessions, inter-token latency, goodput
 * under an SLO and its flag. Expected figures are worked out in the
 * comments. */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/serve/serve.h"
#include "sim/serve/serve_impl.h"
#include "testutil.h"

static char *setting(const char *key, const char *value)
{
    static char buf[16][1300];
    static int k;
    char *b = buf[k++ % 16];
    snprintf(b, 1300, "%s=%s", key, value);
    return b;
}

/* Llama-3-8B on one H100, vLLM-like seats. */
static void build(struct config *cfg, const char *const *more)
{
    static const char *const base[] = {
        "model.config=llama3-8b", "hardware.system=dgx-h100", "inference.placement=even",
        "inference.max_num_seqs=64", "inference.max_num_batched_tokens=2048",
        "inference.context_len=8192", NULL,
    };
    struct mp_error err = { 0 };
    config_defaults(cfg);
    for (const char *const *p = base; *p; p++) ck_assert_int_eq(config_set(cfg, *p, "t", &err), 0);
    for (; more && *more; more++) {
        int rc = config_set(cfg, *more, "t", &err);
        if (rc) fprintf(stderr, "%s\n", err.msg);
        ck_assert_int_eq(rc, 0);
    }
}

static int run(struct serve *s, const struct config *cfg, bool record)
{
    struct mp_error err = { 0 };
    int rc = serve_run_recorded(s, cfg, record, &err);
    if (rc) fprintf(stderr, "serve: %s\n", err.msg);
    return rc;
}

static const char *csv(const char *rows)
{
    static char path[16][600];
    static int k;
    char *p = path[k++ % 16];
    snprintf(p, 600, "%s", mp_test_tmpfile(".csv", rows));
    return p;
}

/* prefill_first (vLLM V0, SGLang): a pass is all prompt or all decode, never
 * both; vllm mixes them under the same load. */
START_TEST(prefill_first_never_mixes)
{
    for (int sched = 0; sched < 2; sched++) {
        struct config cfg;
        const char *more[] = { "inference.requests=200", "inference.rate=50",
                               "inference.prompt_len=300", "inference.output_len=60",
                               sched ? "inference.scheduler=vllm"
                                     : "inference.scheduler=prefill_first", NULL };
        build(&cfg, more);
        struct serve s;
        ck_assert_int_eq(run(&s, &cfg, true), MP_OK);
        ck_assert_int_eq(s.res.completed, 200);
        size_t mixed = 0;
        for (size_t i = 0; i < s.rec->n_pass; i++)
            mixed += s.rec->pass[i].prefill > 0 && s.rec->pass[i].decode > 0;
        if (sched == 0) ck_assert_uint_eq(mixed, 0);
        else ck_assert_uint_gt(mixed, 0);
        serve_release(&s);
    }
}
END_TEST

/* decode_first (TGI) with waiting_served_ratio too high to matter and
 * max_waiting_tokens = 5: A (100 + 50 tokens) arrives at 0 and prefills
 * alone; B arrives 1 us later, during that pass, and waits: A decodes 5
 * times (its passes over 100..104 tokens of KV), then B is let in. So B is
 * admitted A's first token + those 5 decode passes after; with vllm it
 * would join the pass after A's prefill. */
START_TEST(decode_first_waits_max_waiting_tokens)
{
    const char *rows = "a,p,o\n0,100,50\n0.000001,100,50\n";
    struct config cfg;
    const char *more[] = { "inference.arrivals=trace", setting("inference.trace", csv(rows)),
                           "inference.scheduler=decode_first", "inference.max_waiting_tokens=5",
                           "inference.waiting_served_ratio=1000", NULL };
    build(&cfg, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
    mp_time want = 0;
    for (int j = 0; j < 5; j++) {
        struct serve_item d = { 1, 100 + j, true, true };
        want += serve_stage_time(&s, 0, &d, 1);
    }
    ck_assert_int_eq(s.req[1].admitted - s.req[0].first_token, want);
    serve_release(&s);

    build(&cfg, (const char *const[]){ "inference.arrivals=trace",
                                       setting("inference.trace", csv(rows)), NULL });
    ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
    ck_assert_int_eq(s.req[1].admitted, s.req[0].first_token);
    serve_release(&s);
}
END_TEST

/* The priority scheduler under a backlog (4 seats, 50 requests/s of 500 +
 * 100 tokens): class 0 (a fifth of the requests) jumps the queue, so it
 * waits far less on average than class 1; first come first served treats
 * both alike. */
START_TEST(priority_classes_jump_the_queue)
{
    struct config cfg;
    const char *more[] = { "inference.requests=400", "inference.rate=60",
                           "inference.prompt_len=500", "inference.output_len=100",
                           "inference.max_num_seqs=4", "inference.scheduler=priority",
                           "inference.priorities=0.2,0.8", NULL };
    build(&cfg, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
    double wait[2] = { 0 }, n[2] = { 0 };
    for (int i = 0; i < s.n_req; i++) {
        const struct serve_request *r = &s.req[i];
        ck_assert(r->prio == 0 || r->prio == 1);
        wait[r->prio] += mp_seconds(r->admitted - r->arrival);
        n[r->prio]++;
    }
    ck_assert_double_gt(n[0], 40);
    ck_assert_double_lt(wait[0] / n[0], 0.25 * wait[1] / n[1]);
    serve_release(&s);
}
END_TEST

/* Gamma inter-arrival times of shape k and mean 1/rate have a coefficient
 * of variation 1/√k: 2 at burstiness 0.25, 1 (Poisson) at 1. Over 20,000
 * gaps the mean is within 3% and the CV within 5%. */
START_TEST(gamma_arrivals_burstiness)
{
    static const double shape[2] = { 0.25, 1.0 };
    for (int k = 0; k < 2; k++) {
        struct config cfg;
        char b[32];
        snprintf(b, sizeof b, "%g", shape[k]);
        const char *more[] = { "inference.arrivals=gamma", setting("inference.burstiness", b),
                               "inference.rate=1000", "inference.requests=20000",
                               "inference.horizon=1us", NULL };
        build(&cfg, more);
        struct serve s;
        ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
        double sum = 0, sq = 0;
        int n = s.n_req - 1;
        for (int i = 1; i < s.n_req; i++) {
            double g = mp_seconds(s.req[i].arrival - s.req[i - 1].arrival);
            sum += g;
            sq += g * g;
        }
        double mean = sum / n, cv = sqrt(sq / n - mean * mean) / mean;
        ck_assert_double_eq_tol(mean * 1000, 1.0, 0.03);
        ck_assert_double_eq_tol(cv * sqrt(shape[k]), 1.0, 0.05);
        serve_release(&s);
    }
}
END_TEST

/* Empirical lengths: a CSV of 100 (weight 3) and 400 (weight 1) gives only
 * those, 100 three times in four (within 2% over 8,000 draws); a length
 * beyond the context is refused with the file and line. */
START_TEST(empirical_lengths)
{
    const char *file = csv("tokens,weight\n100,3\n400,1\n");
    struct config cfg;
    const char *more[] = { "inference.prompt_dist=empirical", setting("inference.prompt_file", file),
                           "inference.requests=8000", "inference.horizon=1us", NULL };
    build(&cfg, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
    int hundred = 0;
    for (int i = 0; i < s.n_req; i++) {
        ck_assert(s.req[i].prompt == 100 || s.req[i].prompt == 400);
        hundred += s.req[i].prompt == 100;
    }
    ck_assert_double_eq_tol(hundred / 8000.0, 0.75, 0.02);
    serve_release(&s);
    const char *bad = csv("# lengths\n100\n9000\n");
    build(&cfg, (const char *const[]){ "inference.prompt_dist=empirical",
                                       setting("inference.prompt_file", bad), NULL });
    struct mp_error err = { 0 };
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":3: key inference.prompt_file: expected tokens[,weight]"), "%s", err.msg);
    serve_release(&s);
    /* empirical without a file names the key. */
    build(&cfg, (const char *const[]){ "inference.output_dist=empirical", NULL });
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "key inference.output_file"), "%s", err.msg);
    serve_release(&s);
}
END_TEST

/* The work estimate counts the loop that will run (issue 16): 100 requests
 * of 300 + 60 tokens make 100 × (60 + 1) = 6,100 passes; on 4 stages the
 * per-stage loop (a paged cache) has two events per stage per pass,
 * 100 + 2 × 6,100 × 4 = 48,900, past a budget of 20,000; the walk-at-a-time
 * loop (a reserved cache) two per pass, 100 + 2 × 6,100 = 12,300, within it. */
START_TEST(work_estimate_counts_the_loop_that_runs)
{
    struct config cfg;
    struct serve s;
    struct mp_error err = { 0 };
    struct serve_options o = { .budget_events = 20000 };
    const char *paged[] = { "parallel.pp=4", "inference.requests=100", "inference.prompt_len=300",
                            "inference.output_len=60", "inference.kv_cache=paged", NULL };
    build(&cfg, paged);
    ck_assert_int_eq(serve_run_opts(&s, &cfg, &o, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "4.89e+04 events, past this run's budget of 20000"), "%s", err.msg);
    serve_release(&s);
    const char *reserve[] = { "parallel.pp=4", "inference.requests=100", "inference.prompt_len=300",
                              "inference.output_len=60", "inference.kv_cache=reserve", NULL };
    build(&cfg, reserve);
    memset(&err, 0, sizeof err);
    ck_assert_msg(serve_run_opts(&s, &cfg, &o, &err) == MP_OK, "%s", err.msg);
    ck_assert_int_eq(s.res.completed, 100);
    serve_release(&s);
    /* vLLM's name for the token budget counts as the run uses it: 10
     * tokens a pass cut each 300-token prompt in 30 chunks, so 100 × (60 +
     * 30) = 9,000 passes, 100 + 2 × 9,000 = 18,100 events on the fast loop
     * (it counted 2,048-token chunks, one a prompt: the value fuzzer). */
    const char *vllm[] = { "parallel.pp=4", "inference.requests=100", "inference.prompt_len=300",
                           "inference.output_len=60", "inference.kv_cache=reserve",
                           "inference.max_num_batched_tokens=10", NULL };
    build(&cfg, vllm);
    memset(&err, 0, sizeof err);
    o.budget_events = 18000;
    ck_assert_int_eq(serve_run_opts(&s, &cfg, &o, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "up to 9e+03 passes): 1.81e+04 events"), "%s", err.msg);
    serve_release(&s);
    /* A shared prefix is prompt too: 200 tokens before each 100-token
     * prompt, 10 a pass, is 30 chunks again — the same 9,000 passes and
     * 18,100 events (counted without the prefix: 100 × (60 + 10) = 7,000
     * passes, 14,100 events, under the budget). */
    const char *prefix[] = { "parallel.pp=4", "inference.requests=100", "inference.prompt_len=100",
                             "inference.prefix_tokens=200", "inference.output_len=60",
                             "inference.kv_cache=reserve", "inference.max_num_batched_tokens=10",
                             NULL };
    build(&cfg, prefix);
    memset(&err, 0, sizeof err);
    ck_assert_int_eq(serve_run_opts(&s, &cfg, &o, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "about 300 + 60 tokens (up to 9e+03 passes): 1.81e+04 events"),
                  "%s", err.msg);
    serve_release(&s);
}
END_TEST

/* The layout's slots are weighed before they are allocated: 16 replicas
 * of one H100 with 10^6 in flight each hold 16 × 10^6 slot numbers of 4
 * bytes, 64 MB = 400,000 events at 160 bytes, past a budget of 100,000. */
START_TEST(layout_slots_weighed_before_allocating)
{
    struct config cfg;
    struct serve s;
    struct mp_error err = { 0 };
    struct serve_options o = { .budget_events = 100000 };
    const char *more[] = { "hardware.nodes=2", "inference.replicas=16", "inference.inflight=1000000",
                           NULL };
    build(&cfg, more);
    ck_assert_int_eq(serve_run_opts(&s, &cfg, &o, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "16000000 slots and 16 stages over the replicas, past this run's "
                         "budget of 100000 events"), "%s", err.msg);
    serve_release(&s);
}
END_TEST

/* Sessions of 3 turns, a fixed 200-token message and 20 output tokens per
 * turn, think time 1 s: turn t's prompt is 220 t + 200 tokens (the history
 * plus the new message), and it arrives no earlier than the turn before it
 * is done. With prefix caching each later turn finds the history but its
 * last token: ⌊(220 t − 1) / 16⌋ × 16 tokens. */
START_TEST(sessions_are_closed_loop)
{
    struct config cfg;
    const char *more[] = { "inference.turns=3", "inference.think_time=1s",
                           "inference.prompt_len=200", "inference.output_len=20",
                           "inference.requests=30", "inference.rate=5",
                           "inference.prefix_caching=true", NULL };
    build(&cfg, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
    ck_assert_int_eq(s.n_req, 30);
    ck_assert_int_eq(s.res.completed, 30);
    double hits = 0;
    for (int i = 0; i < s.n_req; i++) {
        const struct serve_request *r = &s.req[i];
        ck_assert_int_eq(r->prompt, 220 * r->turn + 200);
        if (r->turn > 0) {
            ck_assert_int_ge(r->arrival, s.req[i - 1].done);
            hits += (220 * r->turn - 1) / 16 * 16;
        }
    }
    ck_assert_double_eq(s.res.prefix_hit_tokens, hits);
    serve_release(&s);
}
END_TEST

/* Inter-token latency of one request alone: the gaps between its tokens are
 * its decode passes, one each (no hops: one stage); the 10 output tokens
 * make 9 gaps, their mean (done − first token) / 9 = TPOT. */
START_TEST(itl_is_the_decode_pass)
{
    struct config cfg;
    const char *more[] = { "inference.arrivals=trace",
                           setting("inference.trace", csv("a,p,o\n0,500,10\n")), NULL };
    build(&cfg, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
    ck_assert_uint_eq(s.res.itl.n, 9);
    mp_time d[9];
    for (int j = 0; j < 9; j++) {
        struct serve_item it = { 1, 500 + j, true, true };
        d[j] = serve_stage_time(&s, 0, &it, 1);
    }
    ck_assert_double_eq_tol(s.res.itl.q[0], mp_seconds(d[4]), 1e-15);
    ck_assert_double_eq_tol(s.res.itl.q[3], s.res.tpot[0], 1e-12);
    serve_release(&s);
}
END_TEST

/* Goodput counts completed requests that meet every SLO set: none at a TTFT
 * below any pass, all at a generous one; --slo sets the keys and refuses
 * unknown metrics. */
START_TEST(goodput_under_slo)
{
    struct config cfg;
    struct mp_error err = { 0 };
    build(&cfg, (const char *const[]){ "inference.requests=100", "inference.rate=20", NULL });
    ck_assert_int_eq(serve_parse_slo(&cfg, "ttft=1ns", "--slo", &err), MP_OK);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
    ck_assert_int_eq(s.res.slo_met, 0);
    serve_release(&s);
    ck_assert_int_eq(serve_parse_slo(&cfg, "ttft=100s,tpot=1s,e2e=1000s", "--slo", &err), MP_OK);
    ck_assert_int_eq(cfg.inference.slo_tpot, MP_PS_PER_S);
    ck_assert_int_eq(run(&s, &cfg, false), MP_OK);
    ck_assert_int_eq(s.res.slo_met, 100);
    ck_assert_double_eq_tol(s.res.goodput_rps, s.res.requests_per_s, 1e-12);
    serve_release(&s);
    ck_assert_int_eq(serve_parse_slo(&cfg, "ttfb=1s", "--slo", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "--slo: unknown metric 'ttfb'"), "%s", err.msg);
    ck_assert_int_eq(serve_parse_slo(&cfg, "ttft=soon", "--slo", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "ttft=soon"), "%s", err.msg);
    ck_assert_int_eq(serve_parse_slo(&cfg, "tpot", "--slo", &err), MP_ERR_INPUT);
}
END_TEST

/* Same seed, same bytes: a run with every new feature on repeats exactly. */
START_TEST(features_are_deterministic)
{
    struct config cfg;
    const char *more[] = { "inference.requests=300", "inference.rate=40",
                           "inference.arrivals=gamma", "inference.burstiness=0.5",
                           "inference.prefix_caching=true", "inference.prefix_tokens=256",
                           "inference.prefix_groups=3", "inference.replicas=3",
                           "inference.router=prefix_aware", "inference.scheduler=priority",
                           "inference.priorities=0.5,0.5", "inference.gpu_memory_utilization=0.25",
                           "inference.preemption=swap", NULL };
    build(&cfg, more);
    struct serve a, b;
    ck_assert_int_eq(run(&a, &cfg, false), MP_OK);
    ck_assert_int_eq(run(&b, &cfg, false), MP_OK);
    ck_assert_int_eq(a.res.makespan, b.res.makespan);
    ck_assert_uint_eq(a.res.preemptions, b.res.preemptions);
    for (int i = 0; i < a.n_req; i++) ck_assert_int_eq(a.req[i].done, b.req[i].done);
    ck_assert_double_gt(a.res.prefix_hit_tokens, 0);
    serve_release(&a);
    serve_release(&b);
}
END_TEST

/* serve_batch_add_decode is kernel_batch_add for one sampled decode token
 * without a window, field for field: after the same three adds (pasts 0,
 * 1023, 131071) both batches hold tokens = items = emits = decode = 3 and
 * decode_ctx = 1 + 1024 + 131072 = 132097, every other sum 0. */
START_TEST(decode_add_is_kernel_batch_add)
{
    struct kernel_batch a = { 0 }, b = { 0 };
    const double past[] = { 0, 1023, 131071 };
    for (int i = 0; i < 3; i++) {
        kernel_batch_add(&a, 1, past[i], true, true, NULL);
        serve_batch_add_decode(&b, past[i]);
    }
    ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
    ck_assert_double_eq(b.decode_ctx, 132097);
    ck_assert_double_eq(b.items, 3);
    ck_assert_double_eq(b.decode_ctx_win, 0);
}
END_TEST

static Suite *serve_sched_suite(void)
{
    Suite *s = suite_create("serve_sched");
    TCase *tc = tcase_create("sched");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, prefill_first_never_mixes);
    tcase_add_test(tc, decode_first_waits_max_waiting_tokens);
    tcase_add_test(tc, priority_classes_jump_the_queue);
    tcase_add_test(tc, gamma_arrivals_burstiness);
    tcase_add_test(tc, empirical_lengths);
    tcase_add_test(tc, work_estimate_counts_the_loop_that_runs);
    tcase_add_test(tc, layout_slots_weighed_before_allocating);
    tcase_add_test(tc, sessions_are_closed_loop);
    tcase_add_test(tc, itl_is_the_decode_pass);
    tcase_add_test(tc, goodput_under_slo);
    tcase_add_test(tc, features_are_deterministic);
    tcase_add_test(tc, decode_add_is_kernel_batch_add);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(serve_sched_suite)
