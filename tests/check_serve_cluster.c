/* check_serve_cluster.c — serving on GPU clusters (issue 19): TP collectives
 * and blocks by hand, preemption's recompute and swap costs, the prefix
 * cache's hits, disaggregated TTFT, speculative tokens per step, Little's
 * law per replica, the routers, and bad input. Every expected figure is
 * worked out in the comment above it. */
#define _GNU_SOURCE /* open_memstream */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/serve/serve.h"
#include "sim/serve/serve_impl.h"
#include "sim/strategy/collective.h"
#include "testutil.h"
#include "viz/timeline.h"

static char *setting(const char *key, const char *value)
{
    static char buf[16][1300];
    static int k;
    char *b = buf[k++ % 16];
    snprintf(b, 1300, "%s=%s", key, value);
    return b;
}

/* Defaults, then `base`, then `more`. */
static void build(struct config *cfg, const char *const *base, const char *const *more)
{
    struct mp_error err = { 0 };
    config_defaults(cfg);
    for (; base && *base; base++) {
        int rc = config_set(cfg, *base, "t", &err);
        if (rc) fprintf(stderr, "%s\n", err.msg);
        ck_assert_int_eq(rc, MP_OK);
    }
    for (; more && *more; more++) {
        int rc = config_set(cfg, *more, "t", &err);
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

/* Llama-3-70B, TP4 replicas on DGX H100 nodes, vLLM's defaults. */
static const char *const l70[] = {
    "model.config=llama3-70b", "hardware.system=dgx-h100", "parallel.tp=4",
    "inference.placement=even", "inference.max_num_seqs=256",
    "inference.max_num_batched_tokens=8192", "inference.context_len=8192", NULL,
};

static const char *trace(const char *rows)
{
    static char path[16][600];
    static int k;
    char *p = path[k++ % 16];
    snprintf(p, 600, "%s", mp_test_tmpfile(".csv", rows));
    return p;
}

/* ---- tensor parallelism ----------------------------------------------------- */

/* A decode pass of 32 requests on a TP4 replica of Llama-3-70B (80 layers,
 * h = 8192) runs 2 all-reduces per layer and 1 after the embedding: 161,
 * each of 32 tokens × 8192 × 2 B = 524,288 B, and one all-gather of the
 * 32 × 128,256 logits at 2 B. The DGX H100 prices an all-reduce inside its
 * node from the measured busbw curve (hardware/collectives.csv, h100-nvlink4,
 * calibration.md §5a): T = S · 2(n−1)/n / busbw, a group of n = 4 of the
 * 8-GPU curve reading it at S · 8/4 = 1,048,576 B, exactly its 1M point,
 * 43.70 GB/s: T = 524,288 × 1.5 / 43.70e9 s = 17.996 us, in 2(n−1) = 6 ring
 * steps rounded to the picosecond each (6 × 2,999,359 ps). The pass is
 * its lane's compute (serve_stage_time) plus those collectives, and one
 * request's end-to-end time is the sum of its passes. */
START_TEST(tp_allreduces_per_decode_step_by_hand)
{
    struct config cfg;
    const char *more[] = { "inference.arrivals=trace",
                           setting("inference.trace", trace("arrival_s,p,o\n0,1000,3\n")), NULL };
    build(&cfg, l70, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    int n = 0;
    double bytes = 0;
    mp_time comm = serve_comm_time(&s, 0, 32, 32, &n, &bytes);
    ck_assert_int_eq(n, 161);
    ck_assert_double_eq(bytes, 32.0 * 8192 * 2);
    ck_assert_int_eq(s.res.tp_allreduces_per_pass, 161);
    int chips[4] = { 0, 1, 2, 3 };
    struct coll_spec ar = { .op = COLL_ALL_REDUCE, .chips = chips, .n = 4, .bytes = bytes };
    struct coll_spec ag = { .op = COLL_ALL_GATHER, .chips = chips, .n = 4,
                            .bytes = 32.0 * 128256 * 2 };
    mp_time one = collective_time(&s.sys, &ar);
    ck_assert_int_le(llabs(one - 17996154), 1000); /* 6 × (524288 × 1.5 / 43.70e9 s) / 6 */
    ck_assert_int_eq(comm, 161 * one + collective_time(&s.sys, &ag));

    /* One request: a prefill pass of 1000 tokens, then two decode passes. */
    struct serve_item it[3] = { { 1000, 0, true, false }, { 1, 1000, true, true }, { 1, 1001, true, true } };
    mp_time want = 0;
    for (int p = 0; p < 3; p++) {
        int ars;
        double b;
        want += serve_stage_time(&s, 0, &it[p], 1) +
                serve_comm_time(&s, 0, it[p].tokens, 1, &ars, &b);
    }
    ck_assert_int_eq(s.req[0].done - s.req[0].arrival, want);
    /* A TP4 replica takes a quarter of the weights per chip. */
    ck_assert_double_eq_tol(s.res.stage[0].weights, model_params(&s.pr.model) * 2 / 4, 1);
    serve_release(&s);
}
END_TEST

/* A TP decode step against a published component figure (calibration.md
 * §9, gpt-fast README: Llama-2-70B, fp16 weights, batch 1, a 5-token prompt
 * and 200 new tokens on 8 A100-80GB): 21.32, 38.01 and 62.50 tokens/s at
 * TP 2, 4 and 8, i.e. 46.90, 26.31 and 16.00 ms a step. mpsim's step is the
 * shard's kernels and 161 all-reduces of 16 KB (1 token × 8192 × 2 B) on
 * the DGX A100, by hand:
 *  - weights: 68.71B matrix parameters (80 × (8192·(8192 + 2·1024 + 8192)
 *    + 3·8192·28,672) = 68.45B, and the head's 32,000 × 8192) × 2 B / t a
 *    chip at the a100 weights_stream bandwidth of 1,397 GB/s
 *    (hardware/kernels.csv, fitted to gpt-fast's one-GPU 7B run, not to
 *    these): 49.18, 24.59, 12.30 ms at t = 2, 4, 8;
 *  - launches: 11 kernels a decoder (2 norms, qkv, rotary, decode attention,
 *    attention-out, 2 residual adds, MLP up, SwiGLU, down) × 80 and the
 *    head's, at 1 us of CUDA-graph launch each: 0.89 ms;
 *  - all-reduces from the measured curve (a100-nvlink3: calibration.md §5b
 *    and §5a; T = S · 2(t−1)/t / busbw, a group of t < 8 reading the 8-GPU
 *    curve at S · 8/t): t = 2 at 64 KB, between the 32 KB point (S/busbw =
 *    32768 / 1.31e9 = 25.01 us) and the 1 MiB one (1048576 / 36.22e9 =
 *    28.95 us), 25.01 + (32768/1015808) × 3.94 = 25.14 us per 64 KB, busbw 2.607
 *    GB/s, T = 16384 × 1 / 2.607e9 = 6.29 us; t = 4 at 32 KB, the point
 *    itself, T = 16384 × 1.5 / 1.31e9 = 18.76 us; t = 8 below the smallest
 *    point, the latency floor of 32 KB's time, 25.01 × 1.75 = 43.77 us.
 *    × 161: 1.01, 3.02, 7.05 ms.
 * Sums: 51.08, 28.50, 20.24 ms, held within 2%. Against gpt-fast TP 2 and
 * 4 land within 10% (+9%, +8%); TP 8 is +27%, a known miss: nccl-tests on
 * two different 8×A100 nodes (§5a 1K: ≈ 45 us; §5b 32K: 43.83 us) measure a
 * small all-reduce at 44 us, while gpt-fast's 16.00 ms leaves at most
 * (16.00 − 12.30 − 0.89) / 161 = 17 us for each; the curve is not fitted to
 * an end-to-end figure, so the gap stays visible here.
 * The vocabulary-parallel head takes V/t of the columns a chip. */
static const char llama2_70b[] =
    "{\"architectures\":[\"LlamaForCausalLM\"],\"hidden_size\":8192,"
    "\"intermediate_size\":28672,\"num_attention_heads\":64,\"num_key_value_heads\":8,"
    "\"num_hidden_layers\":80,\"vocab_size\":32000,\"hidden_act\":\"silu\","
    "\"max_position_embeddings\":4096}";

START_TEST(tp_decode_step_against_gpt_fast)
{
    char json[600];
    snprintf(json, sizeof json, "%s", mp_test_tmpfile(".json", llama2_70b));
    static const int tps[3] = { 2, 4, 8 };
    static const double tokens_per_s[3] = { 21.32, 38.01, 62.50 };
    static const double by_hand[3] = { 51.08e-3, 28.50e-3, 20.24e-3 };
    for (int i = 0; i < 3; i++) {
        char tp[32];
        snprintf(tp, sizeof tp, "parallel.tp=%d", tps[i]);
        const char *base[] = { setting("model.config", json), "hardware.system=dgx-a100", tp,
                               "inference.placement=even", "inference.arrivals=trace",
                               setting("inference.trace", trace("a,p,o\n0,5,200\n")), NULL };
        struct config cfg;
        build(&cfg, base, NULL);
        struct serve s;
        ck_assert_int_eq(run(&s, &cfg), MP_OK);
        double step = s.res.tpot[3], want = 1 / tokens_per_s[i];
        fprintf(stderr, "Llama-2-70B TP%d decode step on A100: %.2f ms (gpt-fast %.2f, %+.1f%%)\n",
                tps[i], step * 1e3, want * 1e3, 100 * (step / want - 1));
        ck_assert_msg(fabs(step / by_hand[i] - 1) < 0.02, "TP%d: %g ms, by hand %g", tps[i],
                      step * 1e3, by_hand[i] * 1e3);
        if (tps[i] < 8) ck_assert(fabs(step / want - 1) < 0.10);
        /* The head's GEMM on one chip: 32,000 / tp columns. */
        struct kernel_params kp = { .tp = tps[i], .ep = 1, .flash = true };
        struct kernel_batch b = { .tokens = 1, .emits = 1, .items = 1, .decode = 1,
                                  .decode_ctx = 100 };
        struct kernel_list kl;
        kernel_list_init(&kl);
        kernels_serve_layer(&s.pr.model, s.pr.model.n_layers - 1, &kp, &b, KSERVE_TOKENS, &kl);
        bool head = false;
        for (int k = 0; k < kl.n; k++)
            if (!strcmp(kl.k[k].name, "lm_head")) {
                ck_assert_double_eq(kl.k[k].n, 32000.0 / tps[i]);
                head = true;
            }
        ck_assert(head);
        kernel_list_release(&kl);
        serve_release(&s);
    }
}
END_TEST

/* A speculative step verifies k + 1 = 4 tokens of a request 1,000 tokens
 * in as one decode member: the kernel does the work of 4 queries at
 * 1,001 keys each (decode_ctx 4 × 1,001 = 4,004, the FLOPs) but reads the
 * cache once: 1,004 tokens (decode_reread = 3 × 1,000 = 3,000 counted
 * once only). Llama-3-70B at TP4: 2 KV heads a chip × 128 × 2 (K, V) × 2 B
 * = 1,024 B a token a layer, q 16 heads × 128 × 2 B = 4,096 B, so the
 * bytes are 1,004 × 1,024 + 4 × (1,024 + 2 × 4,096) = 1,064,960 (not
 * 4,004 × 1,024 + 36,864 = 4,136,960: the cache four times). */
START_TEST(speculative_verification_reads_the_cache_once)
{
    struct config cfg;
    const char *more[] = { "inference.arrivals=trace",
                           setting("inference.trace", trace("a,p,o\n0,10,2\n")), NULL };
    build(&cfg, l70, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    struct kernel_batch b = { 0 };
    serve_batch_add(&s, &b, 4, 1000, true, true);
    ck_assert_double_eq(b.decode_ctx, 4004);
    ck_assert_double_eq(b.decode_reread, 3000);
    struct kernel_params kp = { .tp = 4, .ep = 1, .flash = true };
    struct kernel_attention a;
    kernels_serve_attention_shape(&s.pr.model, 1, &kp, &a);
    ck_assert_double_eq(a.kv_token, 1024);
    ck_assert_double_eq(a.q_bytes, 4096);
    struct kernel k[2];
    ck_assert_int_eq(kernels_serve_attention(&a, &b, k), 1);
    ck_assert_double_eq(k[0].bytes, 1064960);
    ck_assert_double_eq(k[0].flops, a.flops_decode * 4004);
    serve_release(&s);
}
END_TEST

/* The paged pool of that replica: 0.9 × 80 GB − weights − activations.
 *   weights per chip  70,553,706,496 params × 2 B / 4 = 35,276,853,248 B
 *   activations       8192 tokens × (2h + (64 + 2·8)·128/4 + 3·28,672/4) × 2 B
 *                     = 8192 × 40,448 × 2 = 662,700,032, plus the logits of
 *                     256 requests: 256 × 128,256/4 × 4 B = 32,833,536
 *   one block         80 layers × 2 (K, V) × 8/4 heads × 128 × 2 B × 16 tokens
 *                     = 1,310,720 B
 *   blocks            ⌊(72e9 − 35,276,853,248 − 695,533,568) / 1,310,720⌋
 *                     = ⌊36,027,613,184 / 1,310,720⌋ = ⌊27,486.89⌋ = 27,486.
 * A request of 100 prompt and 29 output tokens holds at most 128 tokens
 * (its last token's KV is never computed): 8 blocks. */
START_TEST(paged_block_count_by_hand)
{
    struct config cfg;
    const char *more[] = { "inference.arrivals=trace",
                           setting("inference.trace", trace("a,p,o\n0,100,29\n")), NULL };
    build(&cfg, l70, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    double weights = 70553706496.0 * 2 / 4, act = 8192.0 * 40448 * 2 + 256.0 * 128256 / 4 * 4;
    ck_assert_double_eq_tol(s.pool[0].weights[0], weights, 1);
    ck_assert_double_eq_tol(s.pool[0].act[0], act, 1);
    ck_assert_double_eq(s.pool[0].block_bytes[0], 1310720);
    ck_assert_int_eq((long long)floor((72e9 - weights - act) / 1310720), 27486);
    ck_assert_int_eq(s.pool[0].blocks, 27486);
    ck_assert_double_eq(s.res.stage[0].kv_peak, 8 * 1310720.0);
    serve_release(&s);
}
END_TEST

/* ---- preemption ------------------------------------------------------------------ */

/* Llama-3-8B on one H100 with a pool of exactly 10 blocks of 16 tokens
 * (gpu_memory_utilization set to leave 10.5 blocks). A and B arrive at the
 * same instant, 64 prompt + 64 output tokens each; A's arrival starts the
 * first pass, so B prefills in the second, beside A's first decode. Pass
 * j + 1 decodes A's j-th token (64 + j tokens held) and B's (j − 1)-th:
 * from pass 3 each holds 5 blocks (65..80 tokens), 10 in all. A's 17th
 * decode needs 81 tokens, 6 blocks: 6 + 5 > 10, so B, the latest admitted,
 * is preempted with 16 tokens out (1 from its prefill, 15 decodes), its
 * sequence 80 tokens. Those need 5 blocks, which A's 6 leave no room for,
 * so B waits until A is done (127 tokens, 8 blocks), then prefills its 80
 * tokens again (sampling its 17th) and decodes 47 more. Recompute: 80
 * tokens; B's end = A's end + that prefill + 47 decode passes over 80..126
 * tokens, each priced on its own. */
static void tight_pool(struct config *cfg, const char *preemption)
{
    static const char *const base[] = {
        "model.config=llama3-8b", "hardware.system=dgx-h100", "inference.placement=even",
        "inference.max_num_seqs=8", "inference.max_num_batched_tokens=512",
        "inference.context_len=4096", "inference.arrivals=trace", NULL,
    };
    const char *more[] = { setting("inference.trace", trace("a,p,o\n0,64,64\n0,64,64\n")),
                           setting("inference.preemption", preemption), NULL };
    build(cfg, base, more);
    /* Find the share of memory that leaves 10.5 blocks. */
    struct serve s;
    ck_assert_int_eq(run(&s, cfg), MP_OK);
    double need = s.pool[0].weights[0] + s.pool[0].act[0] + 10.5 * s.pool[0].block_bytes[0];
    char u[64];
    snprintf(u, sizeof u, "%.12f", need / s.pr.chip.mem_bytes);
    serve_release(&s);
    ck_assert_int_eq(config_set(cfg, setting("inference.gpu_memory_utilization", u), "t", NULL), 0);
}

START_TEST(preemption_recompute_cost_by_hand)
{
    struct config cfg;
    tight_pool(&cfg, "recompute");
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.pool[0].blocks, 10);
    ck_assert_int_eq(s.res.completed, 2);
    ck_assert_uint_eq(s.res.preemptions, 1);
    ck_assert_int_eq(s.req[1].preempted, 1);
    ck_assert_int_eq(s.req[0].preempted, 0);
    ck_assert_double_eq(s.res.recomputed_tokens, 80);
    ck_assert_double_eq(s.res.prompt_tokens, 128);
    mp_time want = 0;
    struct serve_item pre = { 80, 0, true, false };
    want += serve_stage_time(&s, 0, &pre, 1);
    for (int j = 0; j < 47; j++) {
        struct serve_item d = { 1, 80 + j, true, true };
        want += serve_stage_time(&s, 0, &d, 1);
    }
    ck_assert_int_eq(s.req[1].done - s.req[0].done, want);
    serve_release(&s);
}
END_TEST

/* The same with swap: B's 79 tokens of KV (64 prompt + 15 decoded) go to
 * the host over the DGX H100's PCIe 5.0 x16 (51 GB/s, 10 us per copy) in
 * the pass that preempts it and come back in the pass that resumes it;
 * nothing is recomputed: 79 × 131,072 B (32 layers × 2 × 8 heads × 128 ×
 * 2 B per token) each way. It resumes when A is done with a decode over
 * its 79 tokens plus the swap-in, 10 us + 10,354,688 B / 51 GB/s, and
 * decodes its last 48 tokens over 79..126. */
START_TEST(preemption_swap_cost_by_hand)
{
    struct config cfg;
    tight_pool(&cfg, "swap");
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_uint_eq(s.res.preemptions, 1);
    ck_assert_uint_eq(s.res.swaps_out, 1);
    ck_assert_uint_eq(s.res.swaps_in, 1);
    ck_assert_double_eq(s.res.recomputed_tokens, 0);
    ck_assert_double_eq(s.res.swap_bytes, 2 * 79 * 131072.0);
    mp_time swap = 10 * MP_PS_PER_US + (mp_time)llround(79 * 131072.0 / 51e9 * 1e12);
    mp_time want = swap;
    for (int j = 0; j < 48; j++) {
        struct serve_item d = { 1, 79 + j, true, true };
        want += serve_stage_time(&s, 0, &d, 1);
    }
    ck_assert_int_eq(s.req[1].done - s.req[0].done, want);
    serve_release(&s);
}
END_TEST

/* ---- prefix caching --------------------------------------------------------------- */

/* Ten requests one second apart (each done before the next): the first and
 * six others share prefix 1 (512 tokens = 32 blocks), three have prefixes
 * of their own. The first computes prefix 1 and leaves it cached; the six
 * find it: 6 of 10 hit, 6 × 512 tokens not prefilled. A second run with
 * prefix caching off prefills everything. */
START_TEST(prefix_cache_hits_exactly_k_of_n)
{
    char rows[2048] = "arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n";
    static const int ids[10] = { 1, 1, 2, 1, 3, 1, 1, 4, 1, 1 };
    for (int i = 0; i < 10; i++)
        snprintf(rows + strlen(rows), sizeof rows - strlen(rows), "%d,600,8,%d,512\n", i, ids[i]);
    struct config cfg;
    const char *more[] = { "inference.arrivals=trace", setting("inference.trace", trace(rows)),
                           "inference.prefix_caching=true", NULL };
    build(&cfg, l70, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.res.prefix_lookups, 10);
    ck_assert_int_eq(s.res.prefix_hit_requests, 6);
    ck_assert_double_eq(s.res.prefix_hit_tokens, 6 * 512);
    ck_assert_double_eq(s.res.prefix_query_tokens, 10 * 600);
    ck_assert_double_eq(s.res.prompt_tokens, 10 * 600 - 6 * 512);
    /* A hit's TTFT is a prefill of its 88 own tokens over 512 cached. */
    struct serve_item hit = { 88, 512, true, false };
    int ars;
    double b;
    ck_assert_int_eq(s.req[1].first_token - s.req[1].arrival,
                     serve_stage_time(&s, 0, &hit, 1) + serve_comm_time(&s, 0, 88, 1, &ars, &b));
    serve_release(&s);
}
END_TEST

/* Three turns of one session: turn 0 is 300 + 50 tokens, turn 1's prompt
 * is that history (350) + 100 with 100 out, turn 2's the history (550) +
 * 100. Each turn finds the previous turn's tokens but its last (whose KV
 * was never computed) in full blocks: turn 1 ⌊349/16⌋ × 16 = 336, turn 2
 * ⌊549/16⌋ × 16 = 544. */
START_TEST(prefix_cache_multi_turn)
{
    const char *rows = "arrival_s,prompt,output,session,turn\n"
                       "0,300,50,7,0\n10,450,100,7,1\n20,650,10,7,2\n";
    struct config cfg;
    const char *more[] = { "inference.arrivals=trace", setting("inference.trace", trace(rows)),
                           "inference.prefix_caching=true", NULL };
    build(&cfg, l70, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.res.prefix_hit_requests, 2);
    ck_assert_double_eq(s.res.prefix_hit_tokens, 336 + 544);
    serve_release(&s);
}
END_TEST

/* ---- disaggregation -------------------------------------------------------------- */

/* One prefill and one decode replica of Llama-3-8B (TP1) on one DGX H100:
 * chips 0 and 1 on the switch (370 GB/s, 1.5 us). A 1000-token prompt's KV
 * is 1000 × 131,072 B; TTFT = the prefill pass + 131,072,000 B / 370 GB/s
 * + 1.5 us. With two prefill replicas (chips 0, 1) and the decode replica
 * on chip 2, two identical requests at once prefill side by side and both
 * send to chip 2: the second's KV waits for chip 2's switch link behind the
 * first's, one serialisation. */
START_TEST(disaggregated_ttft_by_hand)
{
    static const char *const base[] = {
        "model.config=llama3-8b", "hardware.system=dgx-h100", "inference.placement=even",
        "inference.disaggregate=true", "inference.prefill_replicas=1",
        "inference.decode_replicas=1", "inference.arrivals=trace", NULL,
    };
    struct config cfg;
    const char *more[] = { setting("inference.trace", trace("a,p,o\n0,1000,5\n")), NULL };
    build(&cfg, base, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.n_pools, 2);
    ck_assert_int_eq(s.stage_chip[0], 0);
    ck_assert_int_eq(s.stage_chip[1], 1);
    struct serve_item pre = { 1000, 0, true, false };
    mp_time xfer = (mp_time)llround(1000 * 131072.0 / 370e9 * 1e12) + 1500000;
    ck_assert_int_eq(s.req[0].first_token - s.req[0].arrival, serve_stage_time(&s, 0, &pre, 1) + xfer);
    ck_assert_double_eq(s.res.kv_transfer_bytes, 1000 * 131072.0);
    ck_assert_int_eq(s.res.completed, 1);
    serve_release(&s);

    const char *two[] = { setting("inference.trace", trace("a,p,o\n0,1000,5\n0,1000,5\n")),
                          "inference.prefill_replicas=2", NULL };
    build(&cfg, base, two);
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.stage_chip[2], 2);
    ck_assert_int_eq(s.req[0].first_token - s.req[0].arrival, serve_stage_time(&s, 0, &pre, 1) + xfer);
    mp_time ser = (mp_time)llround(1000 * 131072.0 / 370e9 * 1e12);
    ck_assert_int_eq(s.req[1].first_token - s.req[0].first_token, ser);
    serve_release(&s);
}
END_TEST

/* ---- speculative decoding --------------------------------------------------------- */

/* k = 3 proposals accepted with α = 0.7 each: 1 + accepted tokens per step,
 * (1 − 0.7^4) / (1 − 0.7) = 2.533 on average. A 20,000-token output makes
 * ~7,900 steps: the Bernoulli mean is within 2% (its standard error is
 * ~0.4%); spec_draw = expected gives it to 1/steps. The verification is a
 * 4-token forward per request over its KV, beside the draft's 3 steps. */
START_TEST(speculative_tokens_per_step)
{
    static const char *const base[] = {
        "model.config=llama3-70b", "hardware.system=dgx-h100", "parallel.tp=4",
        "inference.placement=even", "inference.context_len=32768", "inference.arrivals=trace",
        "inference.speculative=draft", "inference.draft_model=llama3-8b",
        "inference.spec_tokens=3", "inference.spec_acceptance=0.7", NULL,
    };
    double E = (1 - pow(0.7, 4)) / 0.3;
    ck_assert_double_eq_tol(E, 2.533, 1e-3);
    for (int mode = 0; mode < 2; mode++) {
        struct config cfg;
        const char *more[] = { setting("inference.trace", trace("a,p,o\n0,100,20000\n")),
                               mode ? "inference.spec_draw=expected" : "inference.spec_draw=bernoulli",
                               NULL };
        build(&cfg, base, more);
        struct serve s;
        ck_assert_int_eq(run(&s, &cfg), MP_OK);
        double mean = s.res.spec_tokens / s.res.spec_steps;
        ck_assert_uint_gt(s.res.spec_steps, 7000);
        if (mode) ck_assert_double_eq_tol(mean, E, 2.0 / s.res.spec_steps);
        else ck_assert_double_eq_tol(mean / E, 1.0, 0.02);
        ck_assert_int_eq(s.res.output_tokens, 20000);
        serve_release(&s);
    }
}
END_TEST

/* A draft with another tokenizer is refused, naming the key. */
START_TEST(draft_with_another_vocabulary)
{
    const char *ini = mp_test_tmpfile(".ini", "[model]\nconfig = llama3-70b\n[hardware]\n"
                                      "system = dgx-h100\n[parallel]\ntp = 4\n[inference]\n"
                                      "placement = even\nspeculative = draft\n"
                                      "draft_model = mixtral-8x7b\n");
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, ini, &err), MP_OK);
    struct serve s;
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":10: key inference.draft_model"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "vocabulary has 32000"), "%s", err.msg);
    serve_release(&s);
}
END_TEST

/* ---- replicas and routers ----------------------------------------------------------- */

/* Round robin sends arrival i to replica i mod 8: 125 each of 1000, exactly. */
START_TEST(round_robin_balance_is_exact)
{
    struct config cfg;
    const char *more[] = { "model.config=llama3-8b", "parallel.tp=1", "inference.replicas=8",
                           "inference.requests=1000", "inference.rate=200", NULL };
    build(&cfg, l70, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(serve_chips(&s), 8);
    for (int x = 0; x < 8; x++) ck_assert_int_eq(s.res.rep[x].routed, 125);
    for (int i = 0; i < 1000; i++) ck_assert_int_eq(s.req[i].replica, i % 8);
    serve_release(&s);
    /* Least outstanding spreads them too (no replica more than twice another). */
    build(&cfg, l70, (const char *const[]){ "model.config=llama3-8b", "parallel.tp=1",
                                            "inference.replicas=8", "inference.requests=1000",
                                            "inference.rate=200",
                                            "inference.router=least_outstanding", NULL });
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    int lo = s.res.rep[0].routed, hi = lo;
    for (int x = 1; x < 8; x++) {
        if (s.res.rep[x].routed < lo) lo = s.res.rep[x].routed;
        if (s.res.rep[x].routed > hi) hi = s.res.rep[x].routed;
    }
    ck_assert_int_le(hi, 2 * lo);
    serve_release(&s);
}
END_TEST

/* Four replicas of Llama-3-70B TP4 at a steady 10 requests/s (2.5 each):
 * per replica, arrival rate × mean latency = mean number in the system,
 * within 5%. */
START_TEST(littles_law_per_replica)
{
    struct config cfg;
    const char *more[] = { "inference.replicas=4", "inference.requests=3000",
                           "inference.rate=10", "inference.prompt_dist=uniform",
                           "inference.prompt_min=64", "inference.prompt_max=1024",
                           "inference.output_dist=uniform", "inference.output_min=16",
                           "inference.output_max=256", NULL };
    build(&cfg, l70, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.res.completed, 3000);
    for (int x = 0; x < 4; x++) {
        const struct serve_replica_report *p = &s.res.rep[x];
        ck_assert_double_eq_tol(p->little_rate * p->little_latency_s / p->little_in_system, 1.0,
                                0.05);
    }
    serve_release(&s);
}
END_TEST

/* Replicas sit on nodes: two TP4 replicas per DGX H100 node; a TP3 group
 * never straddles a node (chips 0-2, 3-5, then 8-10). */
START_TEST(replicas_placed_on_nodes)
{
    struct config cfg;
    const char *more[] = { "inference.replicas=3", "inference.requests=10", NULL };
    build(&cfg, l70, more);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.stage_chip[0], 0);
    ck_assert_int_eq(s.stage_chip[1], 4);
    ck_assert_int_eq(s.stage_chip[2], 8);
    ck_assert_int_eq(s.sys.nodes, 2);
    serve_release(&s);
    const char *tp3[] = { "model.config=llama3-8b", "parallel.tp=3", NULL };
    build(&cfg, l70, tp3);
    struct mp_error err = { 0 };
    /* Llama-3-8B has 32 heads: TP3 does not divide them. */
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "parallel.tp = 3 does not divide"), "%s", err.msg);
    serve_release(&s);
}
END_TEST

/* DeepSeek-V3 with EP32 (data-parallel attention over 32 ranks): a chip
 * holds the attention, dense and shared weights and 256 / 32 = 8 routed
 * experts per MoE layer; a pass pays a dispatch and a combine all-to-all
 * per MoE layer (58 of its 61). */
START_TEST(expert_parallel_replica)
{
    static const char *const base[] = {
        "model.config=deepseek-v3", "hardware.system=dgx-h100", "parallel.tp=1",
        "parallel.ep=32", "model.weight_bits=8", "inference.placement=even",
        "inference.requests=20", "inference.context_len=8192", NULL,
    };
    struct config cfg;
    build(&cfg, base, NULL);
    struct serve s;
    ck_assert_int_eq(run(&s, &cfg), MP_OK);
    ck_assert_int_eq(s.pool[0].width, 32);
    ck_assert_int_eq(s.pool[0].dp_attn, 32);
    ck_assert_int_eq(serve_chips(&s), 32);
    double routed = 0, all = model_params(&s.pr.model);
    int moe = 0;
    for (int l = 0; l < s.pr.model.n_layers; l++) {
        routed += s.pr.model.layer[l].expert_params;
        moe += s.pr.model.layer[l].moe;
    }
    ck_assert_int_eq(moe, 58);
    ck_assert_double_eq_tol(s.res.stage[0].weights, (all - routed) + routed / 32, 1e3);
    int ars;
    double b;
    /* No TP: the pass's collectives are the 58 × 2 all-to-alls. */
    mp_time t = serve_comm_time(&s, 0, 64, 0, &ars, &b);
    ck_assert_int_eq(ars, 0);
    ck_assert_int_gt(t, 0);
    ck_assert_int_eq(t % 58, 0);
    /* The chip's routed experts for a = 8 token copies over its 8 experts:
     * 8·(1 − (7/8)^8) = 5.2511 of them reached, 8 / 5.2511 = 1.5235 copies
     * each, as grouped GEMMs of the full expert width (2048; h = 7168), FP8
     * weights (1 B) and 16-bit activations: up (2·2048 wide) reads 5.2511 ×
     * (1.5235·7168·2 + 7168·4096 + 1.5235·4096·2) B = 154.35 MB, down
     * 5.2511 × (1.5235·2048·2 + 2048·7168 + 1.5235·7168·2) B = 77.23 MB,
     * both bandwidth-bound at the H100's weights_stream share (0.729 × 3.35
     * TB/s, hardware/kernels.csv), and SwiGLU 3 × 1.5235·5.2511·2048·2 B at
     * its memory share (0.887 × 3.35 TB/s); a 1 us graph launch each. Per
     * MoE layer ≈ 97.9 us; 58 of them. */
    double El = 8, a = 8, hit = El * (1 - pow(1 - 1 / El, a)), m = a / hit;
    double up = hit * (m * 7168 * 2 + 7168.0 * 4096 + m * 4096 * 2);
    double down = hit * (m * 2048 * 2 + 2048.0 * 7168 + m * 7168 * 2);
    double act = 3 * m * hit * 2048 * 2;
    double want = 58 * ((up + down) / (0.729 * 3.35e12) + act / (0.887 * 3.35e12) + 3e-6);
    ck_assert_double_eq_tol(hit, 5.2511, 1e-4);
    double got = mp_seconds(serve_expert_time(&s, 0, a));
    ck_assert_msg(fabs(got / want - 1) < 0.01, "experts %.4g s, by hand %.4g s", got, want);
    serve_release(&s);
}
END_TEST

/* ---- bad input and layouts that do not fit -------------------------------------------- */

START_TEST(bad_layouts)
{
    const char *ini = mp_test_tmpfile(".ini", "[model]\nconfig = llama3-70b\n[hardware]\n"
                                      "system = dgx-h100\nnodes = 1\n[parallel]\ntp = 4\n"
                                      "[inference]\nplacement = even\nreplicas = 3\n");
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, ini, &err), MP_OK);
    struct serve s;
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":10: key inference.replicas = 3"), "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "expected at most 2 replicas"), "%s", err.msg);
    serve_release(&s);

    /* A block size of 0: the key's range, with file and line. */
    const char *zero = mp_test_tmpfile(".ini", "[inference]\nrate = 2\nblock_size = 0\n");
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, zero, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":3: key inference.block_size"), "%s", err.msg);

    /* TP1 Llama-3-70B weighs 141 GB on an 80 GB GPU: infeasible, with the
     * numbers; TP4 at gpu_memory_utilization 0.44 leaves no room for KV. */
    build(&cfg, l70, (const char *const[]){ "parallel.tp=1", NULL });
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INFEASIBLE);
    ck_assert_msg(strstr(err.msg, "GB of weights per chip"), "%s", err.msg);
    serve_release(&s);
    build(&cfg, l70, (const char *const[]){ "inference.gpu_memory_utilization=0.44", NULL });
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INFEASIBLE);
    ck_assert_msg(strstr(err.msg, "weights 35.28 GB + activations 0.70 GB"), "%s", err.msg);
    serve_release(&s);

    /* A later turn of a session that never started. */
    const char *rows = "arrival_s,prompt,output,session,turn\n0,100,10,1,0\n1,300,10,2,1\n";
    build(&cfg, l70, (const char *const[]){ "inference.arrivals=trace",
                                            setting("inference.trace", trace(rows)), NULL });
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":3: key inference.trace: session 2 turn 1: the session never started"), "%s",
                  err.msg);
    serve_release(&s);
    /* An unknown column. */
    build(&cfg, l70, (const char *const[]){ "inference.arrivals=trace",
                                            setting("inference.trace", trace("a,p,o,sess\n0,1,1,1\n")),
                                            NULL });
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":1: key inference.trace: unknown column 'sess'"), "%s", err.msg);
    serve_release(&s);
    /* Priority shares that are not numbers. */
    build(&cfg, l70, (const char *const[]){ "inference.priorities=high,low", NULL });
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "key inference.priorities"), "%s", err.msg);
    serve_release(&s);
}
END_TEST


/* Replicas as groups in the timeline and trace: two replicas of Llama-3-8B
 * in two stages each (chips 0-1 and 2-3). Every stage's lane holds its
 * passes and one hand-off each (to the next stage, or the tokens back from
 * a replica's last stage), each chip names its replica, every pass is
 * recorded once at its replica's stage 0, and the trace's processes are
 * named by replica. */
START_TEST(timeline_groups_replicas)
{
    struct config cfg;
    const char *more[] = { "model.config=llama3-8b", "parallel.tp=1", "parallel.pp=2",
                           "inference.replicas=2", "inference.requests=40",
                           "inference.rate=400", NULL };
    build(&cfg, l70, more);
    struct serve s;
    struct mp_error err = { 0 };
    ck_assert_int_eq(serve_run_recorded(&s, &cfg, true, &err), MP_OK);
    ck_assert_int_eq(s.stages, 4);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    serve_timeline_csv_detail(f, &s);
    fclose(f);
    struct timeline tl;
    timeline_init(&tl);
    ck_assert_msg(timeline_read_csv_buffer(&tl, "r.csv", buf, len, &err) == MP_OK, "%s", err.msg);
    uint64_t first = 0;
    for (int g = 0; g < 4; g++) {
        int chip = s.res.stage[g].chip, row = timeline_row_of(&tl, chip);
        ck_assert_int_eq(chip, g);
        ck_assert_uint_eq(timeline_lane(&tl, row, TL_COMPUTE)->n, s.res.stage[g].passes);
        ck_assert_uint_eq(timeline_lane(&tl, row, TL_COMM)->n, s.res.stage[g].passes);
        char want[16];
        snprintf(want, sizeof want, "%d", g / 2);
        ck_assert_str_eq(timeline_meta(&tl, chip, "replica"), want);
        if (g % 2 == 0) first += s.res.stage[g].passes;
    }
    ck_assert_uint_eq(s.rec->n_pass, first);
    ck_assert_uint_gt(s.res.rep[0].routed, 0);
    ck_assert_uint_gt(s.res.rep[1].routed, 0);
    timeline_release(&tl);
    free(buf);
    f = open_memstream(&buf, &len);
    serve_chrome_trace(f, &s);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(buf, "\"replica 1: chip 3 (stage 3)\""));
    free(buf);
    serve_release(&s);
}
END_TEST

static Suite *serve_cluster_suite(void)
{
    Suite *s = suite_create("serve_cluster");
    TCase *tc = tcase_create("cluster");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, tp_allreduces_per_decode_step_by_hand);
    tcase_add_test(tc, tp_decode_step_against_gpt_fast);
    tcase_add_test(tc, speculative_verification_reads_the_cache_once);
    tcase_add_test(tc, paged_block_count_by_hand);
    tcase_add_test(tc, preemption_recompute_cost_by_hand);
    tcase_add_test(tc, preemption_swap_cost_by_hand);
    tcase_add_test(tc, prefix_cache_hits_exactly_k_of_n);
    tcase_add_test(tc, prefix_cache_multi_turn);
    tcase_add_test(tc, disaggregated_ttft_by_hand);
    tcase_add_test(tc, speculative_tokens_per_step);
    tcase_add_test(tc, draft_with_another_vocabulary);
    tcase_add_test(tc, round_robin_balance_is_exact);
    tcase_add_test(tc, littles_law_per_replica);
    tcase_add_test(tc, replicas_placed_on_nodes);
    tcase_add_test(tc, expert_parallel_replica);
    tcase_add_test(tc, bad_layouts);
    tcase_add_test(tc, timeline_groups_replicas);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(serve_cluster_suite)
