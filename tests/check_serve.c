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
#include "viz/load.h"
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
                                 .emits = true, .decode = pass > 0 };
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

    /* One stage time by hand: wafer 1 holds one full-attention MoE layer; a
     * decode token at 1000 cached tokens runs (hardware/kernels.csv rows of
     * cerebras-wse3: GEMMs at 62.5 PF × 0.80 with no waves, plus the generic
     * 128 K elements of per-tile work; memory at 21 PB/s × 0.90; no launch):
     *   GEMMs, each compute-bound at M = 1, 2·N·(K + 128) FLOPs: qkv
     *     10240 × 7296, attention out 7168 × 8320, router 720 × 7296, shared
     *     experts up 8192 × 7296 and down 7168 × 4224, the 8 routed experts
     *     reached, up 8 × 4096 × 7296 and down 8 × 7168 × 2176: 1,187,008,512
     *     FLOPs / 5e16 = 23,740.2 ps;
     *   memory-bound kernels: two norms and two residual adds (2 + 2 + 3 + 3
     *     passes of 14,336 B), rotary 2 × 72 heads × 128 × 2, top-k 3 × 720 ×
     *     4, permute and unpermute 2 × 14,336 × 9, SwiGLU 3 × 8,192 and 3 ×
     *     32,768: 569,792 B / 1.89e16 = 30.1 ps;
     *   decode attention: 4 × 64 × 128 × 1001 = 32,800,768 FLOPs at the
     *     generic flash share at d = 128, non-causal, 1001 keys: between
     *     0.5788 (512) and 0.6555 (1024), 489/512 of the way: 0.6521 →
     *     32,800,768 / (62.5e15 × 0.6521) = 804.8 ps (its 2.08 MB of KV and
     *     q/o read at 1.89e16 take 110 ps, less);
     * 23,740.2 + 30.1 + 804.8 = 24,575 ps. */
    struct serve_item dec = { .tokens = 1, .past = 1000, .emits = true, .decode = true };
    ck_assert_int_eq(serve_stage_time(&s, 1, &dec, 1), 24575);
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
                           "inference.micro_batch=8", "inference.token_budget=2048",
                           "inference.kv_cache=reserve", NULL };
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
        /* Issue 19's keys. */
        { "inference.replicas", "0" }, { "inference.max_num_seqs", "-1" },
        { "inference.max_num_batched_tokens", "-3" }, { "inference.kv_cache", "static" },
        { "inference.block_size", "0" }, { "inference.gpu_memory_utilization", "0" },
        { "inference.gpu_memory_utilization", "1.5" }, { "inference.preemption", "drop" },
        { "inference.swap_space", "lots" }, { "inference.prefix_caching", "sometimes" },
        { "inference.prefix_tokens", "-1" }, { "inference.prefix_groups", "0" },
        { "inference.turns", "0" }, { "inference.think_time", "3" },
        { "inference.burstiness", "0" }, { "inference.prompt_dist", "zipf" },
        { "inference.max_waiting_tokens", "0" }, { "inference.waiting_served_ratio", "-1" },
        { "inference.slo_ttft", "fast" }, { "inference.slo_tpot", "50" },
        { "inference.slo_e2e", "-1s" }, { "inference.disaggregate", "2" },
        { "inference.prefill_replicas", "0" }, { "inference.prefill_tp", "-1" },
        { "inference.prefill_pp", "x" }, { "inference.decode_replicas", "-1" },
        { "inference.decode_tp", "1.5" }, { "inference.decode_pp", "-2" },
        { "inference.speculative", "eagle" }, { "inference.spec_tokens", "0" },
        { "inference.spec_tokens", "65" }, { "inference.spec_acceptance", "1.1" },
        { "inference.spec_draw", "mean" }, { "inference.arrivals", "bursty" },
        { "inference.router", "" }, { "inference.scheduler", "" },
        { "inference.draft_model", "" }, { "inference.prompt_file", "" },
        { "inference.output_file", "" }, { "inference.priorities", "" },
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
        { "inference.scheduler=fifo", NULL, "inference.scheduler" },
        { "inference.router=random", NULL, "inference.router" },
        { "inference.prefix_caching=true", NULL, "inference.prefix_caching" },
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
 * with --timeline-detail one compute row per stage pass whose durations add
 * up, per stage, to the report's busy time to the picosecond; one hand-off
 * per pass (to the next stage, or the tokens' return from the last); a KV
 * row per stage at every admission and completion; by default one row per
 * pass instead, on a row per slot; the same bytes on every run; and the
 * viewer's in-process loader (viz/load.h) gives the detail file's ops. 40
 * requests of 64 prompt + 8 output tokens on 4 stages, arriving fast enough
 * that passes mix prompt chunks with decode tokens. */
static char *timeline_text(const struct serve *s, bool detail, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    ck_assert_ptr_nonnull(f);
    if (detail) serve_timeline_csv_detail(f, s);
    else serve_timeline_csv(f, s);
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

    size_t len = 0, len2 = 0, plen = 0;
    char *text = timeline_text(&s, true, &len);
    struct timeline tl;
    timeline_init(&tl);
    ck_assert_msg(timeline_read_csv_buffer(&tl, "serve.csv", text, len, &err) == MP_OK, "%s", err.msg);

    uint64_t passes = 0;
    size_t comm = 0, kinds[3] = { 0 };
    for (int st = 0; st < 4; st++) {
        int row = timeline_row_of(&tl, s.res.stage[st].chip);
        ck_assert_int_ge(row, 0);
        passes += s.res.stage[st].passes;
        const struct tl_lane *l = timeline_lane(&tl, row, TL_COMPUTE);
        ck_assert_uint_eq(l->n, s.res.stage[st].passes);
        ck_assert_uint_eq(s.rec->stage[st].n, s.res.stage[st].passes);
        /* A stage runs one pass at a time, so the union is the sum. */
        ck_assert_int_eq(l->busy, s.res.stage[st].busy);
        ck_assert_int_eq(tl.rows[row].capacity,
                         (int64_t)llround(s.res.stage[st].free_bytes + s.res.stage[st].weights));
        /* Every request has left: KV back to zero, only the weights remain. */
        const struct tl_row *r = &tl.rows[row];
        const struct tl_mem *last = &tl.mem[r->mem_first + r->mem_count - 1];
        ck_assert_int_eq(last->in_use, (int64_t)llround(s.res.stage[st].weights));
        comm += timeline_lane(&tl, row, TL_COMM)->n;
        for (size_t k = 0; k < l->n; k++) {
            uint16_t kind = timeline_info(&tl, l, k)->kind;
            ck_assert(kind >= TL_KIND_PREFILL && kind <= TL_KIND_MIXED);
            kinds[kind - TL_KIND_PREFILL]++;
        }
    }
    ck_assert_uint_eq(s.rec->n_copies, passes);
    ck_assert_uint_eq(s.rec->n_hops, passes);
    ck_assert_uint_eq(comm, passes);
    ck_assert_uint_eq(kinds[0] + kinds[1] + kinds[2], passes);
    ck_assert_uint_gt(kinds[1], 0);
    ck_assert_uint_gt(kinds[2], 0);   /* continuous batching: some passes mix */
    /* Weights once per stage, then KV per stage at 40 admissions + 40 exits. */
    ck_assert_uint_eq(tl.n_mem, 4 + 4 * 80);
    /* Every prompt token went through stage 0 exactly once: a pass is
     * recorded once, when formed at stage 0. */
    double prompt = 0;
    for (size_t i = 0; i < s.rec->n_pass; i++) prompt += s.rec->pass[i].prefill_tokens;
    ck_assert_double_eq(prompt, 40 * 64);
    ck_assert_double_eq(prompt, s.res.prompt_tokens);
    ck_assert_uint_eq(s.rec->n_pass, s.res.stage[0].passes);
    char want[64];
    snprintf(want, sizeof want, "%.12f", mp_seconds(s.res.makespan));
    ck_assert_str_eq(timeline_meta(&tl, -1, "step_time_s"), want);

    /* The default file: one row per pass, from its start on stage 0 to its
     * end on the last stage, a row per slot. */
    char *ptext = timeline_text(&s, false, &plen);
    struct timeline pt;
    timeline_init(&pt);
    ck_assert_msg(timeline_read_csv_buffer(&pt, "passes.csv", ptext, plen, &err) == MP_OK, "%s", err.msg);
    ck_assert(pt.rows_by_slot);
    ck_assert_uint_eq(pt.n_ops, s.rec->n_pass);
    ck_assert_int_le(pt.n_rows, s.res.slots);
    ck_assert_int_eq(pt.t_begin, s.rec->stage[0].start[0]);
    const struct serve_stage_rec *last_stage = &s.rec->stage[3];
    ck_assert_int_eq(pt.t_end, last_stage->end[last_stage->n - 1]);
    timeline_release(&pt);
    free(ptext);

    /* Same seed, same bytes. */
    ck_assert_int_eq(serve_run_recorded(&again, &cfg, true, &err), MP_OK);
    char *text2 = timeline_text(&again, true, &len2);
    ck_assert_uint_eq(len, len2);
    ck_assert(memcmp(text, text2, len) == 0);

    /* In process, no CSV: the same ops, lane by lane. */
    struct timeline mem;
    timeline_init(&mem);
    viz_load_serve(&mem, &again);
    ck_assert_uint_eq(mem.n_ops, tl.n_ops);
    for (int st = 0; st < 4; st++)
        for (int sm = 0; sm < TL_STREAMS; sm++) {
            const struct tl_lane *a = timeline_lane(&tl, timeline_row_of(&tl, s.res.stage[st].chip), sm);
            const struct tl_lane *b = timeline_lane(&mem, timeline_row_of(&mem, s.res.stage[st].chip), sm);
            ck_assert_uint_eq(a->n, b->n);
            for (size_t k = 0; k < a->n; k++) {
                ck_assert_int_eq(a->start[k], b->start[k]);
                ck_assert_int_eq(a->end[k], b->end[k]);
                ck_assert_int_eq(timeline_info(&tl, a, k)->kind, timeline_info(&mem, b, k)->kind);
                ck_assert_int_eq(timeline_info(&tl, a, k)->bytes, timeline_info(&mem, b, k)->bytes);
            }
        }
    ck_assert_uint_eq(mem.n_mem, tl.n_mem);
    timeline_release(&mem);
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
