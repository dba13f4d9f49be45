/* check_serve.c — serving through a pipeline (sim/serve/serve.h): one request by
 * hand, the KV bound of the wafer case, saturation, Little's law, the JSON
 * keys and every [inference] key's bad values. */
#define _GNU_SOURCE /* open_memstream */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/serve/serve.h"
#include "testutil.h"
#include "viz/timeline.h"

#define US MP_PS_PER_US

/* Wafers chained at 2 us per hop with unlimited bandwidth, so every hop is
 * exactly 2 us; and textbook chips chained the same way. */
static const char wafer_chain[] =
    "[system]\nname = wafer-chain\nchip = cerebras-wse3\nchips_per_node = 1\n"
    "[scaleup]\ntopology = none\n"
    "[scaleout]\ntopology = chain\nbandwidth = inf\nlatency = 2us\n";
static const char textbook_chain[] =
    "[system]\nname = textbook-chain\nchip = textbook\nchips_per_node = 1\n"
    "[scaleup]\ntopology = none\n"
    "[scaleout]\ntopology = chain\nbandwidth = inf\nlatency = 2us\n";

/* Load the wafer scenario (or `base` when given) and apply `sets`. */
static void scenario(struct config *cfg, const char *base, const char *const *sets)
{
    struct mp_error err = { 0 };
    config_defaults(cfg);
    if (!base) base = mp_test_path("scenarios/kimi-k3-wafers.ini");
    ck_assert_int_eq(config_load(cfg, base, &err), MP_OK);
    for (; sets && *sets; sets++) {
        int rc = config_set(cfg, *sets, "test", &err);
        if (rc) fprintf(stderr, "%s\n", err.msg);
        ck_assert_int_eq(rc, MP_OK);
    }
}

static int run(struct serve *s, const struct config *cfg)
{
    struct mp_error err = { 0 };
    int rc = serve_run(s, cfg, &err);
    if (rc) fprintf(stderr, "serve: %s\n", err.msg);
    return rc;
}

static char *setting(const char *key, const char *value)
{
    static char buf[8][1300];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 1300, "%s=%s", key, value);
    return b;
}

/* One request, 1000 prompt tokens and 4 output tokens, through the idle
 * 59-wafer pipeline: one prefill pass, then 3 decode passes. Each pass takes
 * the 59 stage times and 58 hops; between passes the token goes back to
 * stage 0 in 1 hop: 4 × 58 + 3 = 235 hops of 2 us. */
START_TEST(one_request_latency_by_hand)
{
    struct config cfg;
    char sys[600], trace[600];
    snprintf(sys, sizeof sys, "%s", mp_test_tmpfile(".ini", wafer_chain));
    snprintf(trace, sizeof trace, "%s", mp_test_tmpfile(".csv", "arrival_s,prompt,output\n0.001,1000,4\n"));
    const char *sets[] = { setting("hardware.system", sys), "inference.arrivals=trace",
                           setting("inference.trace", trace), NULL };
    scenario(&cfg, NULL, sets);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.stages, 59);
    ck_assert_int_eq(s.res.completed, 1);
    for (int st = 0; st < 59; st++) ck_assert_int_eq(serve_hop_time(&s, st, 1000), 2 * US);

    mp_time stages = 0, first = 0;
    for (int pass = 0; pass < 4; pass++) {
        struct serve_item it = { .tokens = pass ? 1 : 1000, .past = pass ? 1000 + pass - 1 : 0,
                                 .emits = true };
        for (int st = 0; st < 59; st++) stages += serve_stage_time(&s, st, &it, 1);
        if (pass == 0) first = stages;
    }
    const struct serve_request *r = &s.req[0];
    ck_assert_int_eq(r->arrival, 1000 * US);
    ck_assert_int_eq(r->first_token - r->arrival, first + 58 * 2 * US);
    ck_assert_int_eq(r->done - r->arrival, stages + 235 * 2 * US);
    ck_assert_double_eq_tol(s.res.e2e[0], mp_seconds(stages + 470 * US), 1e-15);
    ck_assert_int_eq(s.res.output_tokens, 4);
    ck_assert_int_eq(s.res.max_inflight, 1);

    /* One stage time by hand: wafer 1 holds one full-attention layer; a
     * decode token at 1000 cached tokens does
     *   FLOPs 2 × 577,683,456 active params + 4 × 64 heads × 128 × 1001
     *       = 1,188,167,680 → / (62.5 PF × 0.8) = 23,763.35 ps, and reads
     *   bytes 112,688,128 (attention, norms, router, shared experts at 4 bits)
     *       + 8/720 of 15,854,469,120 (routed experts) + 1001 × 2048 (KV)
     *       + 2 × 14,336 (activations in and out) ≈ 291.0 MB → 15,392 ps;
     * the compute side wins: 23,763 ps. */
    struct serve_item dec = { .tokens = 1, .past = 1000, .emits = true };
    ck_assert_int_eq(serve_stage_time(&s, 1, &dec, 1), 23763);
    serve_release(&s);

    /* On the real CS-3 chain (1.2 Tb/s) each hop adds the activations' bytes:
     * 1000 tokens × 7168 × 2 bytes / 150 GB/s = 95.573 us. */
    const char *real[] = { "inference.arrivals=trace", setting("inference.trace", trace), NULL };
    scenario(&cfg, NULL, real);
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(serve_hop_time(&s, 0, 1000), 2 * US + 95573333);
    serve_release(&s);
}
END_TEST

/* The KV bound of the wafer case: requests of 131070 + 2 = 131072 tokens
 * hold 268,435,456 B of KV on each dense wafer, whose 28,032,842,752 free
 * bytes take 104 of them. 120 arrive at once with 59 × 2 = 118 seats: 104
 * are admitted, the other 16 wait until the first request finishes. */
START_TEST(kv_bound_admits_free_over_per_request)
{
    char rows[120 * 24] = "arrival_s,prompt,output\n", trace[600];
    for (int i = 0; i < 120; i++) strcat(rows, "0,131070,2\n");
    snprintf(trace, sizeof trace, "%s", mp_test_tmpfile(".csv", rows));
    struct config cfg;
    const char *sets[] = { "inference.arrivals=trace", setting("inference.trace", trace),
                           "inference.micro_batch=2", "inference.chunked_prefill=false",
                           "inference.token_budget=131072", NULL };
    scenario(&cfg, NULL, sets);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    double free_kv = 44e9 - 15967157248.0, per_req = 131072.0 * 2048;
    ck_assert_int_eq((int)floor(free_kv / per_req), 104);
    ck_assert_int_eq(s.res.max_inflight, 104);
    ck_assert(s.res.kv_blocked > 0);
    ck_assert_int_eq(s.res.completed, 120);
    mp_time first_done = -1;
    for (int i = 0; i < 120; i++)
        if (first_done < 0 || s.req[i].done < first_done) first_done = s.req[i].done;
    int before = 0, after = 0;
    for (int i = 0; i < 120; i++) {
        if (s.req[i].admitted < first_done) before++;
        else after++;
    }
    ck_assert_int_eq(before, 104);
    ck_assert_int_eq(after, 16);
    /* Admission is first come, first served. */
    for (int i = 1; i < 120; i++) ck_assert(s.req[i].admitted >= s.req[i - 1].admitted);
    ck_assert_double_eq_tol(s.res.kv_peak_fraction, 104 * per_req / free_kv, 1e-12);
    serve_release(&s);
}
END_TEST

/* A small pipeline: llama3-8b, 4 even stages of 8 layers on textbook chips
 * chained at 2 us per hop. */
static void small(struct config *cfg, const char *const *more)
{
    static char sys[600];
    if (!sys[0]) snprintf(sys, sizeof sys, "%s", mp_test_tmpfile(".ini", textbook_chain));
    const char *base[] = { "model.config=llama3-8b", "model.weight_bits=16", "model.kv_bits=16",
                           setting("hardware.system", sys), "inference.placement=even",
                           "parallel.pp=4", "inference.context_len=4096",
                           "inference.prompt_dist=fixed", "inference.prompt_len=64",
                           "inference.output_dist=fixed", "inference.output_len=8",
                           "inference.micro_batch=8", "inference.token_budget=2048", NULL };
    struct mp_error err = { 0 };
    config_defaults(cfg);
    for (const char *const *p = base; *p; p++) ck_assert_int_eq(config_set(cfg, *p, "t", &err), 0);
    for (; more && *more; more++) ck_assert_int_eq(config_set(cfg, *more, "t", &err), 0);
}

/* Saturating load (every request at once, far more than the seats): in
 * flight = stages × micro_batch = 4 × 8 = 32; with 2 microbatches in
 * flight, 2 × 8 = 16. */
START_TEST(saturation_fills_stages_times_micro_batch)
{
    struct config cfg;
    const char *sets[] = { "inference.rate=1e12", "inference.requests=400", NULL };
    small(&cfg, sets);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.stages, 4);
    ck_assert_int_eq(s.res.max_inflight, 4 * 8);
    ck_assert_int_eq(s.res.completed, 400);
    ck_assert_int_eq(s.res.output_tokens, 400 * 8);
    /* Busy most of the time: mean in flight close to the 32 seats. */
    ck_assert(s.res.mean_inflight > 0.9 * 32);
    serve_release(&s);
    const char *two[] = { "inference.rate=1e12", "inference.requests=400", "inference.inflight=2",
                          NULL };
    small(&cfg, two);
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.res.max_inflight, 2 * 8);
    serve_release(&s);
}
END_TEST

/* Little's law at steady state: arrival rate × mean latency = mean number in
 * the system, within 5%, at a light load (300/s: 1.2 in the system) and a
 * queueing one (500/s: about 8). This pipeline saturates near 600/s, where
 * prefill fills the stages; beyond it the queue grows without bound and
 * there is no steady state to check. */
START_TEST(littles_law_within_5_percent)
{
    static const char *const rates[] = { "inference.rate=300", "inference.rate=500" };
    for (int k = 0; k < 2; k++) {
        struct config cfg;
        const char *sets[] = { rates[k], "inference.requests=4000",
                               "inference.prompt_dist=uniform", "inference.prompt_min=16",
                               "inference.prompt_max=256", NULL };
        small(&cfg, sets);
        struct serve s;
        ck_assert_int_eq(run(&s, &cfg), MP_OK);
        const struct serve_result *r = &s.res;
        ck_assert_int_eq(r->completed, 4000);
        double lw = r->little_rate * r->little_latency_s;
        ck_assert_double_eq_tol(lw / r->little_in_system, 1.0, 0.05);
        if (k == 1) /* some queueing: requests wait for seats */
            ck_assert(r->max_waiting > 0 && r->mean_in_system > r->mean_inflight);
        serve_release(&s);
    }
}
END_TEST

/* Same seed, same run; another seed, other arrivals. */
START_TEST(seeded_runs_repeat)
{
    struct config cfg;
    const char *a[] = { "inference.requests=300", "inference.rate=5000",
                        "inference.output_dist=lognormal", "inference.output_max=64", NULL };
    small(&cfg, a);
    struct serve s1, s2;
    ck_assert_int_eq(run(&s1, &cfg), MP_OK);
    ck_assert_int_eq(run(&s2, &cfg), MP_OK);
    ck_assert_int_eq(s1.res.makespan, s2.res.makespan);
    ck_assert_int_eq(s1.res.events, s2.res.events);
    for (int i = 0; i < 300; i++) ck_assert_int_eq(s1.req[i].done, s2.req[i].done);
    serve_release(&s2);
    cfg.run.seed = 2;
    ck_assert_int_eq(run(&s2, &cfg), MP_OK);
    ck_assert(s1.req[0].arrival != s2.req[0].arrival);
    serve_release(&s1);
    serve_release(&s2);
}
END_TEST

START_TEST(json_has_the_design_keys)
{
    struct config cfg;
    const char *sets[] = { "inference.requests=50", NULL };
    small(&cfg, sets);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    serve_report_json(f, &s);
    fclose(f);
    cJSON *o = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(o);
    static const char *keys[] = { "step_time_s", "tokens_per_s", "mfu", "hfu", "bubble",
                                  "feasible", "infeasible_reason", "events", "sim_wall_s",
                                  "stages", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s",
                                  "requests_completed", "max_inflight", "latency_p90_s",
                                  "kv_timeline", "mean_inflight" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        ck_assert_msg(cJSON_GetObjectItem(o, keys[i]), "missing %s", keys[i]);
    ck_assert_int_eq(cJSON_GetObjectItem(o, "requests_completed")->valueint, 50);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "stages")), 4);
    ck_assert_double_eq(cJSON_GetObjectItem(o, "ttft_p50_s")->valuedouble, s.res.ttft[0]);
    cJSON_Delete(o);
    free(buf);
    /* The text summary names the figures too. */
    f = open_memstream(&buf, &len);
    serve_report_text(f, &s);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "TTFT"));
    ck_assert_ptr_nonnull(strstr(buf, "in flight   max"));
    free(buf);
    serve_release(&s);
}
END_TEST

/* Each new key refuses a bad value as an input error naming the key. */
START_TEST(bad_values_are_input_errors)
{
    static const struct { const char *key, *value; } bad[] = {
        { "inference.rate", "0" }, { "inference.rate", "-5" }, { "inference.rate", "fast" },
        { "inference.requests", "0" }, { "inference.arrivals", "burst" },
        { "inference.trace", "" }, { "inference.prompt_dist", "normal" },
        { "inference.prompt_len", "0" }, { "inference.prompt_min", "0" },
        { "inference.prompt_max", "-1" }, { "inference.prompt_sigma", "-0.1" },
        { "inference.output_dist", "zipf" }, { "inference.output_len", "x" },
        { "inference.output_min", "0" }, { "inference.output_max", "-2" },
        { "inference.output_sigma", "11" }, { "inference.micro_batch", "0" },
        { "inference.inflight", "-1" }, { "inference.token_budget", "0" },
        { "inference.chunked_prefill", "maybe" }, { "inference.context_len", "1" },
        { "inference.concurrency", "-1" }, { "inference.horizon", "5" },
        { "inference.placement", "auto" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct config cfg;
        struct mp_error err = { 0 };
        config_defaults(&cfg);
        char a[128];
        snprintf(a, sizeof a, "%s=%s", bad[i].key, bad[i].value);
        ck_assert_int_eq(config_set(&cfg, a, "--set", &err), MP_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, bad[i].key), "%s: %s", a, err.msg);
    }
    /* In a file, the message names file and line. */
    const char *ini = mp_test_tmpfile(".ini", "[inference]\nrate = 10\nmicro_batch = 0\n");
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, ini, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, ":3: key inference.micro_batch"));
}
END_TEST

/* Values fine alone but wrong together, and bad traces. */
START_TEST(cross_key_and_trace_errors)
{
    static const char *const cases[][3] = {
        { "inference.arrivals=trace", NULL, "inference.trace" },
        { "inference.prompt_dist=uniform", "inference.prompt_min=300", "inference.prompt_min" },
        { "inference.prompt_len=4000", "inference.output_len=200", "context_len" },
        { "inference.prompt_max=5000", NULL, "inference.prompt_max" },
        { "parallel.tp=2", NULL, "parallel.tp" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct config cfg;
        const char *sets[] = { cases[i][0], cases[i][1], NULL };
        small(&cfg, sets);
        if (i == 1) ck_assert_int_eq(config_set(&cfg, "inference.prompt_max=200", "t", NULL), 0);
        struct serve s;
        struct mp_error err = { 0 };
        ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, cases[i][2]), "%s", err.msg);
        serve_release(&s);
    }
    static const char *const traces[][2] = {
        { "0,10\n", ":1: key inference.trace: expected 3 cells" },
        { "0.5,10,4\n0.1,10,4\n", ":2: key inference.trace: column arrival_s: arrivals must "
                                  "not go back" },
        { "# comment\n0,4000,200\n", ":2: key inference.trace: prompt_tokens + output_tokens "
                                     "= 4200" },
        { "0,0,4\n", ":1: key inference.trace: column prompt_tokens: expected a whole number" },
    };
    for (size_t i = 0; i < sizeof traces / sizeof *traces; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s", mp_test_tmpfile(".csv", traces[i][0]));
        struct config cfg;
        const char *sets[] = { "inference.arrivals=trace", setting("inference.trace", path), NULL };
        small(&cfg, sets);
        struct serve s;
        struct mp_error err = { 0 };
        ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, traces[i][1]), "%s", err.msg);
        serve_release(&s);
    }
}
END_TEST

/* The serving timeline (serve_trace.c), read back by the viewer's reader:
 * one compute row per stage pass whose durations add up, per stage, to the
 * report's busy time to the picosecond; one hand-off per pass (to the next
 * stage, or the tokens' return from the last); a KV row per stage at every
 * admission and completion; the same bytes on every run. 40 requests of 64
 * prompt + 8 output tokens on 4 stages, arriving fast enough that passes mix
 * prompt chunks with decode tokens. */
static char *timeline_text(const struct serve *s, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    serve_timeline_csv(f, s);
    fclose(f);
    return buf;
}

START_TEST(timeline_rows_add_up_to_the_report)
{
    struct config cfg;
    const char *more[] = { "inference.requests=40", "inference.rate=20000", NULL };
    small(&cfg, more);
    struct serve s, plain, again;
    struct mp_error err = { 0 };
    ck_assert_int_eq(serve_run_recorded(&s, &cfg, true, &err), MP_OK);
    ck_assert_int_eq(s.res.completed, 40);
    /* Recording changes nothing in the run, and the default keeps nothing. */
    ck_assert_int_eq(run(&plain, &cfg), MP_OK);
    ck_assert_ptr_null(plain.rec);
    ck_assert_int_eq(plain.res.makespan, s.res.makespan);
    ck_assert_int_eq(plain.res.events, s.res.events);

    size_t len = 0, len2 = 0;
    char *text = timeline_text(&s, &len);
    struct timeline tl;
    timeline_init(&tl);
    ck_assert_msg(timeline_read_csv_buffer(&tl, "serve.csv", text, len, &err) == MP_OK, "%s", err.msg);

    uint64_t passes = 0;
    for (int st = 0; st < 4; st++) {
        int chip = s.res.stage[st].chip;
        passes += s.res.stage[st].passes;
        ck_assert_uint_eq(timeline_lane(&tl, chip, TL_COMPUTE)->count, s.res.stage[st].passes);
        /* A stage runs one pass at a time, so the union is the sum. */
        ck_assert_int_eq(tl.chips[chip].busy, s.res.stage[st].busy);
        ck_assert_int_eq(tl.chips[chip].capacity,
                         (int64_t)llround(s.res.stage[st].free_bytes + s.res.stage[st].weights));
        /* Every request has left: KV back to zero, only the weights remain. */
        const struct tl_mem *last = &tl.mem[tl.chips[chip].mem_first + tl.chips[chip].mem_count - 1];
        ck_assert_int_eq(last->in_use, (int64_t)llround(s.res.stage[st].weights));
    }
    ck_assert_uint_eq(s.rec->n_pass, passes);
    ck_assert_uint_eq(s.rec->n_hop, passes);
    size_t comm = 0, kinds[3] = { 0 };
    for (size_t i = 0; i < tl.n_ops; i++) {
        if (tl.ops[i].stream == TL_COMM) { comm++; continue; }
        ck_assert(tl.ops[i].kind >= TL_KIND_PREFILL && tl.ops[i].kind <= TL_KIND_MIXED);
        kinds[tl.ops[i].kind - TL_KIND_PREFILL]++;
    }
    ck_assert_uint_eq(comm, passes);
    ck_assert_uint_eq(kinds[0] + kinds[1] + kinds[2], passes);
    ck_assert_uint_gt(kinds[1], 0);
    ck_assert_uint_gt(kinds[2], 0);   /* continuous batching: some passes mix */
    /* Weights once per stage, then KV per stage at 40 admissions + 40 exits. */
    ck_assert_uint_eq(tl.n_mem, 4 + 4 * 80);
    /* Every prompt token went through stage 0 exactly once. */
    double prompt = 0;
    for (size_t i = 0; i < s.rec->n_pass; i++)
        if (s.rec->pass[i].stage == 0) prompt += s.rec->pass[i].prefill_tokens;
    ck_assert_double_eq(prompt, 40 * 64);
    ck_assert_double_eq(prompt, s.res.prompt_tokens);
    char want[64];
    snprintf(want, sizeof want, "%.12f", mp_seconds(s.res.makespan));
    ck_assert_str_eq(timeline_meta(&tl, -1, "step_time_s"), want);

    /* Same seed, same bytes. */
    ck_assert_int_eq(serve_run_recorded(&again, &cfg, true, &err), MP_OK);
    char *text2 = timeline_text(&again, &len2);
    ck_assert_uint_eq(len, len2);
    ck_assert(memcmp(text, text2, len) == 0);
    free(text);
    free(text2);
    timeline_release(&tl);
    serve_release(&s);
    serve_release(&plain);
    serve_release(&again);
}
END_TEST

/* Defaults are not a request to serve; any inference key is. */
START_TEST(inference_keys_switch_run_to_serving)
{
    struct config cfg;
    config_defaults(&cfg);
    ck_assert(!cfg.inference.present);
    ck_assert_int_eq(config_set(&cfg, "inference.micro_batch=2", "t", NULL), MP_OK);
    ck_assert(cfg.inference.present);
}
END_TEST

static Suite *serve_suite(void)
{
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("serving");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, one_request_latency_by_hand);
    tcase_add_test(tc, kv_bound_admits_free_over_per_request);
    tcase_add_test(tc, saturation_fills_stages_times_micro_batch);
    tcase_add_test(tc, littles_law_within_5_percent);
    tcase_add_test(tc, seeded_runs_repeat);
    tcase_add_test(tc, json_has_the_design_keys);
    tcase_add_test(tc, bad_values_are_input_errors);
    tcase_add_test(tc, cross_key_and_trace_errors);
    tcase_add_test(tc, inference_keys_switch_run_to_serving);
    tcase_add_test(tc, timeline_rows_add_up_to_the_report);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(serve_suite)
