/* check_context.c — context parallelism (sim/strategy/context.h) and given
 * pipeline stages (parallel.stage_layers), against hand counts: the causal
 * split's work per rank, the ring's and the all-to-alls' bytes per layer,
 * activations ÷ cp, a free-link CP run equal to its compute, a ring step
 * whose transfer outlasts its block, and uneven stages under interleaving. */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/explore/search.h"
#include "sim/strategy/context.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"
#include "testutil.h"

/* Load a scenario from text with overrides ("key=value", NULL-terminated)
 * and run it; the scenario's relative paths resolve against the project. */
static int run_text(struct sim *s, const char *text, const char *const *sets,
                    struct mp_error *err)
{
    struct config cfg;
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, mp_test_tmpfile(".ini", text), err), MP_OK);
    for (; sets && *sets; sets++) ck_assert_int_eq(config_set(&cfg, *sets, "test", err), MP_OK);
    return sim_run(s, &cfg, NULL, err);
}

/* The TSP paper's 7B (cases.md §2): h 4096, 32 layers, 32 heads of 128, MHA. */
static char tsp7b[600];
static const char *tsp7b_scenario(void)
{
    snprintf(tsp7b, sizeof tsp7b,
             "[model]\nconfig = %s\nseq_len = 16384\n"
             "[hardware]\nsystem = dgx-h100\n"
             "[parallel]\ntp = 2\ncp = 4\n"
             "[training]\nglobal_batch = 1\nmicro_batch = 1\nrecompute = selective\n",
             mp_test_path("scenarios/tsp-7b.json"));
    return tsp7b;
}

/* Bytes of a stage-0 pass's comm segments in `group`, and their count. */
static double pass_bytes(const struct sim *s, enum tp_pass_kind k, int group, int *count)
{
    const struct tp_pass *p = tensor_pass(&s->tensor, 0, k);
    double sum = 0;
    *count = 0;
    for (int i = 0; i < p->n; i++) {
        const struct tp_seg *sg = &s->tensor.seg[p->off + i];
        if (sg->is_comm && sg->group == group) sum += sg->bytes, (*count)++;
    }
    return sum;
}

/* ---- the causal split -------------------------------------------------- */

/* Work in chunk pairs (a diagonal pair is half). With 2·cp chunks, the
 * whole mask has (2cp)²/2 = 2cp² unmasked pairs, 2cp per rank on average.
 * Zigzag: rank i holds chunks i and 2cp−1−i, whose rows see i + ½ and
 * 2cp − 1 − i + ½ pairs: 2cp on every rank, exactly. Contiguous: rank i holds
 * 2i and 2i+1: (2i + ½) + (2i + 1 + ½) = 4i + 2; the last rank 4cp − 2, i.e.
 * (2cp − 1)/cp times the mean. */
START_TEST(zigzag_balances_the_mask_contiguous_does_not)
{
    static const int cps[] = { 2, 3, 4, 8, 16 };
    for (size_t k = 0; k < sizeof cps / sizeof *cps; k++) {
        int cp = cps[k];
        double total = 0, naive_total = 0;
        for (int i = 0; i < cp; i++) {
            ck_assert_double_eq(context_rank_work(cp, i, true), 2.0 * cp);
            ck_assert_double_eq(context_rank_work(cp, i, false), 4.0 * i + 2);
            total += context_rank_work(cp, i, true);
            naive_total += context_rank_work(cp, i, false);
        }
        ck_assert_double_eq(total, 2.0 * cp * cp);
        ck_assert_double_eq(naive_total, 2.0 * cp * cp);
        double mean = naive_total / cp;
        ck_assert_double_eq(context_rank_work(cp, cp - 1, false), (2.0 * cp - 1) / cp * mean);
    }
}
END_TEST

/* The zigzag blocks context.c prices (its comment): step 0 the rank's own
 * chunks, q = k = 2 with half unmasked; at step j ≥ 1 rank i ≥ j sees an
 * earlier rank (q = 2, k = 1) and rank i < j a later one (q = 1, k = 2). */
START_TEST(zigzag_steps_have_the_two_shapes)
{
    int r = 8;
    struct cp_block b[8];
    for (int i = 0; i < r; i++) {
        ck_assert_int_eq(context_rank_blocks(r, i, true, b), r);
        ck_assert_double_eq(b[0].q_tokens, 2);
        ck_assert_double_eq(b[0].k_tokens, 2);
        ck_assert_double_eq(b[0].causal, 0.5);
        for (int j = 1; j < r; j++) {
            ck_assert_double_eq(b[j].q_tokens, i >= j ? 2 : 1);
            ck_assert_double_eq(b[j].k_tokens, i >= j ? 1 : 2);
            ck_assert_double_eq(b[j].causal, 1);
        }
    }
}
END_TEST

/* ---- bytes on the wire ------------------------------------------------- */

/* Ring, tp 2 × cp 4, s = 16384: each TP rank holds 32/2 = 16 K/V heads of
 * 128, so the whole sequence's K + V is 2 × 16384 × 16 × 128 × 2 B =
 * 134,217,728 B. A forward sends cp − 1 = 3 blocks of s/cp = 4096 tokens'
 * K and V, 33,554,432 B each: 100,663,296 B = (cp−1)/cp of the whole. The
 * backward sends the K/V again and their gradients (dK, dV) home: twice. */
START_TEST(ring_sends_cp_minus_1_blocks_per_layer)
{
    struct sim s;
    struct mp_error err = { 0 };
    const char *sets[] = { "parallel.cp_kind=ring", NULL };
    int rc = run_text(&s, tsp7b_scenario(), sets, &err);
    ck_assert_msg(rc == MP_OK, "%s", err.msg);
    int layers = s.stage_cost[0].layer_last - s.stage_cost[0].layer_first + 1 - 2; /* less emb, head */
    ck_assert_int_eq(layers, 32);
    double whole = 2.0 * 16384 * 16 * 128 * 2;
    ck_assert_double_eq(whole, 134217728.0);
    int n;
    double f = pass_bytes(&s, TPP_F, CPG_RING, &n);
    ck_assert_int_eq(n, 3 * layers);
    ck_assert_double_eq(f / layers, 3.0 / 4.0 * whole);
    ck_assert_double_eq(f / n, 33554432.0);
    /* 1F1B's last backward of the step is BW_LAST (cut per layer for DP);
     * selective recompute reruns the forward's ring first: 1 + 2 times. */
    double bw = pass_bytes(&s, TPP_BW_LAST, CPG_RING, &n);
    ck_assert_double_eq(bw / layers, 3 * 3.0 / 4.0 * whole);
    ck_assert_double_eq(context_sent_bytes(&s.context, 1, false), 3.0 / 4.0 * whole);
    ck_assert_double_eq(context_sent_bytes(&s.context, 1, true), 1.5 * whole);
    /* Two blocks in flight forward; K/V and dK/dV, two each, backward. */
    ck_assert_double_eq(context_buffer_bytes(&s.context, 1, false), 2 * 33554432.0);
    ck_assert_double_eq(context_buffer_bytes(&s.context, 1, true), 4 * 33554432.0);
    sim_release(&s);
}
END_TEST

/* Ulysses, tp 2 × cp 4: a rank holds s/cp = 4096 tokens of 16 query and 16
 * K/V heads (MHA after TP). Forward: Q, K, V go head-sharded, a buffer of
 * 4096 × (16 + 2 × 16) × 128 × 2 B = 50,331,648 B, of which the rank sends
 * (cp−1)/cp to the others; the output comes back, 4096 × 16 × 128 × 2 =
 * 16,777,216 B. Backward: dO out (16,777,216), dQ, dK, dV back (50,331,648),
 * after selective recompute's rerun of the forward's pair. */
START_TEST(ulysses_all_to_all_bytes_by_hand)
{
    struct sim s;
    struct mp_error err = { 0 };
    const char *sets[] = { "parallel.cp_kind=ulysses", NULL };
    int rc = run_text(&s, tsp7b_scenario(), sets, &err);
    ck_assert_msg(rc == MP_OK, "%s", err.msg);
    const struct tp_pass *p = tensor_pass(&s.tensor, 0, TPP_F);
    double want_f[2] = { 50331648.0, 16777216.0 };
    double want_b[4] = { 50331648.0, 16777216.0, 16777216.0, 50331648.0 };
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        const struct tp_seg *sg = &s.tensor.seg[p->off + i];
        if (!sg->is_comm || sg->group != CPG_A2A) continue;
        ck_assert_double_eq(sg->bytes, want_f[k % 2]);
        ck_assert_int_eq(sg->op, COLL_ALL_TO_ALL);
        k++;
    }
    ck_assert_int_eq(k, 2 * 32);
    p = tensor_pass(&s.tensor, 0, TPP_BW_LAST);
    k = 0;
    for (int i = 0; i < p->n; i++) {
        const struct tp_seg *sg = &s.tensor.seg[p->off + i];
        if (sg->is_comm && sg->group == CPG_A2A) ck_assert_double_eq(sg->bytes, want_b[k++ % 4]);
    }
    ck_assert_int_eq(k, 4 * 32);
    ck_assert_double_eq(context_sent_bytes(&s.context, 1, false), 0.75 * (50331648.0 + 16777216.0));
    int n;
    ck_assert_double_eq(pass_bytes(&s, TPP_F, CPG_RING, &n), 0);
    sim_release(&s);
}
END_TEST

/* GQA (Llama 3 8B: 32 query heads, 8 K/V heads of 128) at s = 8192; the
 * all-to-all buffers of a layer's forward (Q, K, V out and O back), with
 * (s/cp) tokens a rank:
 *  tp 1 × cp 4: 8 K/V heads, 2 per rank after the all-to-all:
 *        2048 × (32 + 2 × 8) × 128 × 2 B = 25,165,824 B, O 2048 × 32 × 256;
 *  tp 4 × cp 2: 2 K/V heads per TP rank, 1 per rank after it:
 *        4096 × (8 + 2 × 2) × 256, O 4096 × 8 × 256;
 *  tp 4 × cp 4: 2 K/V heads per TP rank, fewer than the 4 ranks, so they
 *        are replicated to one per rank first (DeepSpeed-Ulysses) and 4 go
 *        out: 2048 × (8 + 2 × 4) × 256 = 8,388,608 B, O 2048 × 8 × 256. */
START_TEST(ulysses_gqa_heads)
{
    const char *base = "[model]\nconfig = llama3-8b\nseq_len = 8192\n[hardware]\nsystem = dgx-h100\n"
                       "[parallel]\ncp = 4\ncp_kind = ulysses\n"
                       "[training]\nglobal_batch = 1\nrecompute = selective\nzero = 3\n";
    struct sim s;
    struct mp_error err = { 0 };
    const char *tp1[] = { "parallel.tp=1", NULL }, *tp4[] = { "parallel.tp=4", "parallel.cp=2", NULL };
    ck_assert_int_eq(run_text(&s, base, tp1, &err), MP_OK);
    int n;
    ck_assert_double_eq(pass_bytes(&s, TPP_F, CPG_A2A, &n) / 32, 25165824.0 + 2048.0 * 32 * 128 * 2);
    sim_release(&s);
    ck_assert_int_eq(run_text(&s, base, tp4, &err), MP_OK);
    ck_assert_double_eq(pass_bytes(&s, TPP_F, CPG_A2A, &n) / 32,
                        4096.0 * (8 + 2 * 2) * 128 * 2 + 4096.0 * 8 * 128 * 2);
    sim_release(&s);
    const char *tp4cp4[] = { "parallel.tp=4", NULL };
    ck_assert_int_eq(run_text(&s, base, tp4cp4, &err), MP_OK);
    ck_assert_double_eq(pass_bytes(&s, TPP_F, CPG_A2A, &n) / 32, 8388608.0 + 2048.0 * 8 * 128 * 2);
    sim_release(&s);
}
END_TEST

/* Ulysses needs whole heads per rank: 32 heads over cp 3 do not split, nor
 * do 6 K/V heads over 4 ranks (neither divides the other). Linear-attention
 * layers pass state between CP ranks, which is not modelled. */
START_TEST(ulysses_heads_that_do_not_split_are_input_errors)
{
    struct sim s;
    struct mp_error err = { 0 };
    const char *base = "[model]\nconfig = llama3-8b\nseq_len = 3072\n[hardware]\nsystem = dgx-h100\n"
                       "[parallel]\ncp = 3\ncp_kind = ulysses\n[training]\nglobal_batch = 1\n";
    ck_assert_int_eq(run_text(&s, base, NULL, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "parallel.cp_kind = ulysses"));
    ck_assert_ptr_nonnull(strstr(err.msg, "32 attention heads"));
    sim_release(&s);
    const char *json = "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 1536,"
                       "\"intermediate_size\": 4096, \"num_attention_heads\": 24,"
                       "\"num_key_value_heads\": 6, \"num_hidden_layers\": 4,"
                       "\"vocab_size\": 1000}";
    char text[800];
    snprintf(text, sizeof text, "[model]\nconfig = %s\nseq_len = 4096\n[hardware]\nsystem = dgx-h100\n"
             "[parallel]\ncp = 4\ncp_kind = ulysses\n[training]\nglobal_batch = 1\n",
             mp_test_tmpfile(".json", json));
    ck_assert_int_eq(run_text(&s, text, NULL, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "6 K/V heads"));
    sim_release(&s);
    const char *k3 = "[model]\nconfig = kimi-k3\nseq_len = 4096\n[hardware]\nsystem = dgx-h100\n"
                     "[parallel]\ncp = 2\n[training]\nglobal_batch = 1\n";
    ck_assert_int_eq(run_text(&s, k3, NULL, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "linear-attention"));
    sim_release(&s);
}
END_TEST

/* ---- memory ----------------------------------------------------------- */

/* Every activation a CP rank stashes is for its s/cp tokens (the scores of
 * its queries against all s keys too), so each layer's stash is the non-CP
 * figure ÷ cp, exactly, for every recompute mode and with or without SP. */
START_TEST(activations_are_the_non_cp_figure_over_cp)
{
    struct model m;
    struct mp_error err = { 0 };
    ck_assert_int_eq(model_load(&m, mp_test_path("scenarios/tsp-7b.json"), &err), MP_OK);
    for (int rec = RECOMPUTE_NONE; rec <= RECOMPUTE_FULL; rec++)
        for (int tp = 1; tp <= 2; tp++)
            for (int sp = 0; sp <= 1; sp++)
                for (int l = 0; l < m.n_layers; l += 15) {
                    struct cost_params one = { .seq_len = 131072, .micro_batch = 2, .tp = tp,
                                               .sp = sp, .recompute = rec };
                    struct cost_params four = one;
                    four.cp = 4;
                    struct layer_cost a, b;
                    model_layer_cost(&m, l, &one, &a);
                    model_layer_cost(&m, l, &four, &b);
                    ck_assert_double_eq(b.act_bytes * 4, a.act_bytes);
                    ck_assert_double_eq(b.act_w_bytes * 4, a.act_w_bytes);
                    ck_assert_double_eq(b.boundary_bytes * 4, a.boundary_bytes);
                    /* FLOPs too: the attention core of the whole sequence ÷ cp */
                    ck_assert_double_eq(b.flops_f * 4, a.flops_f);
                    ck_assert_double_eq(b.params, a.params);
                }
    /* Korthikanti, selective recompute, TP + SP: 34·s·b·h/t per layer, ÷ cp. */
    struct cost_params c = { .seq_len = 131072, .micro_batch = 1, .tp = 2, .sp = true,
                             .recompute = RECOMPUTE_SELECTIVE, .cp = 4 };
    struct layer_cost lc;
    model_layer_cost(&m, 1, &c, &lc);
    /* gated MLP, MHA: rep 10h, split 2·32·128·2 + 2·3·11008·2 bytes per token */
    double per_tok = 10.0 * 4096 / 2 + (4.0 * 4096 * 2 + 3.0 * 11008 * 2) / 2;
    ck_assert_double_eq(lc.act_bytes, 131072.0 / 4 * per_tok);
    model_release(&m);
}
END_TEST

/* ---- time --------------------------------------------------------------- */

/* On the textbook system every link is free, so a CP run's step is its
 * compute: the stage's passes as priced (noncore on the chip, the core
 * block by block) plus the optimizer step, with nothing exposed. */
START_TEST(free_links_cp_run_is_its_compute)
{
    static const char *const kinds[][3] = {
        { "parallel.cp_kind=ring", "parallel.cp_ulysses=0", NULL },
        { "parallel.cp_kind=ulysses", "parallel.cp_ulysses=0", NULL },
        { "parallel.cp_kind=hybrid", "parallel.cp_ulysses=2", NULL },
    };
    for (int k = 0; k < 3; k++)
        for (int rec = 0; rec < 3; rec++) {
            static const char *const recs[] = { "training.recompute=none",
                                                "training.recompute=selective",
                                                "training.recompute=full" };
            const char *sets[] = { "hardware.system=textbook", kinds[k][0], kinds[k][1],
                                   recs[rec], "model.seq_len=2048", NULL };
            struct sim s;
            struct mp_error err = { 0 };
            int rc = run_text(&s, tsp7b_scenario(), sets, &err);
            ck_assert_msg(rc == MP_OK, "%s", err.msg);
            const struct stage_cost *c = &s.stage_cost[0];
            mp_time opt = 0;
            for (int i = 0; i < s.g.n_ops; i++)
                if (s.g.ops[i].tag == TAG_OPTIMIZER && s.g.ops[i].chip == 0) opt += s.g.ops[i].duration;
            ck_assert_int_eq(s.res.step_time, c->t_f + c->t_b + c->t_w + opt);
            ck_assert_int_eq(s.res.stage[0].busy, s.res.step_time);
            for (int kind = 0; kind < N_COMM_KINDS; kind++)
                ck_assert_double_eq(s.res.exposed_comm_s[kind], 0);
            sim_release(&s);
        }
}
END_TEST

/* A ring step whose transfer outlasts its block: textbook chips (1 PFLOP/s,
 * efficiency 1) on a 100 GB/s switch, tp 1 × cp 4, s = 16384. A block at
 * steps j ≥ 1 is 2 chunk pairs of c = s/8 = 2048 tokens: 8,388,608 pairs ×
 * 32 heads × 2 × (128 + 128) FLOPs (FlashAttention's count, the kernel
 * context.h prices) = 137,438,953,472 FLOPs: T_a = 137.438953 µs. A step's transfer is one block's K and V,
 * 4096 tokens × 32 heads × 256 × 2 B = 67,108,864 B: T_c = 671.08864 µs.
 * Step j's transfer and block start together, and block j + 1 waits for
 * transfer j: the forward core takes 3·T_c + T_a instead of 4·T_a, so each
 * of the 32 layers' forward is 3·(T_c − T_a) longer than its compute. */
START_TEST(ring_transfer_longer_than_its_block_is_exposed)
{
    const char *sys_ini = "[system]\nname = t\nchip = textbook\nchips_per_node = 8\n"
                          "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\nlatency = 0\n"
                          "[scaleout]\ntopology = none\n";
    char system[600];
    snprintf(system, sizeof system, "hardware.system=%s", mp_test_tmpfile(".ini", sys_ini));
    const char *sets[] = { system, "parallel.tp=1", "training.zero=2", NULL };
    struct sim s;
    struct mp_error err = { 0 };
    int rc = run_text(&s, tsp7b_scenario(), sets, &err);
    ck_assert_msg(rc == MP_OK, "%s", err.msg);
    const struct cp_shape *sh = &s.context.shape[0];
    mp_time ta = sh->step_f[1], tc = sh->ring_t[0];
    ck_assert(llabs(ta - 137438953) <= 1);
    ck_assert_int_eq(tc, 671088640);
    ck_assert_double_eq(sh->kv_block_bytes, 67108864.0);
    /* The forward ends (its last compute op) 32 × 3 × (T_c − T_a) after its
     * compute alone would. */
    mp_time f_end = 0;
    for (int i = 0; i < s.g.n_ops; i++)
        if (s.g.ops[i].tag == TAG_F && s.g.ops[i].chip == 0 && s.e.end[i] > f_end) f_end = s.e.end[i];
    ck_assert_int_eq(f_end, s.stage_cost[0].t_f + 32 * 3 * (tc - ta));
    sim_release(&s);
}
END_TEST

/* Gradients and ZeRO over the DP-CP group: dp 2 × cp 2 shards Adam's 12
 * bytes per parameter over 4 chips at ZeRO 1. */
START_TEST(zero_shards_over_dp_times_cp)
{
    const char *sets[] = { "parallel.dp=2", "parallel.cp=2", "parallel.tp=2",
                           "training.global_batch=2", "training.zero=1", NULL };
    struct sim s;
    struct mp_error err = { 0 };
    int rc = run_text(&s, tsp7b_scenario(), sets, &err);
    ck_assert_msg(rc == MP_OK, "%s", err.msg);
    ck_assert_int_eq(s.res.n_chips, 8);
    double params = model_params(&s.model) / 2; /* per TP rank */
    ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_OPTIMIZER], 12 * params / 4, 1e-9 * params);
    ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_WEIGHTS], 2 * params, 1e-9 * params);
    sim_release(&s);
}
END_TEST

/* ---- given stages ------------------------------------------------------- */

/* 7,8,8,7 decoders on 4 stages: stage 0 the embedding (layer 0) and
 * decoders 1–7, stage 1 8–15, stage 2 16–23, stage 3 24–30 and the head
 * (layer 31). The ranges tile the model. */
START_TEST(stage_layers_tile_the_model)
{
    static const int per[4] = { 7, 8, 8, 7 };
    static const int want[4][2] = { { 0, 7 }, { 8, 15 }, { 16, 23 }, { 24, 31 } };
    for (int st = 0; st < 4; st++) {
        int lo, hi;
        sim_stage_layers(30, 4, per, st, &lo, &hi);
        ck_assert_int_eq(lo, want[st][0]);
        ck_assert_int_eq(hi, want[st][1]);
    }
}
END_TEST

static char *json_of(const struct sim *s, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    report_json(f, s);
    fclose(f);
    /* The wall time, the scenario's (temporary) file name and the echo of
     * the keys set (stage_layers is one of them) are what differ between
     * the two runs: cut them. */
    static const char *const cut[] = { "\"sim_wall_s\"", "\"scenario\"" };
    for (int k = 0; k < 2; k++) {
        char *w = strstr(buf, cut[k]), *end = w ? strchr(w, '\n') : NULL;
        if (end) memmove(w, end + 1, strlen(end + 1) + 1);
    }
    char *keys = strstr(buf, "\"keys\":"), *after = keys ? strstr(keys, "\"stages\":") : NULL;
    if (after) memmove(keys, after, strlen(after) + 1);
    *len = strlen(buf);
    return buf;
}

/* Equal stages given by hand are the even split, to the byte: 8,8,8,8 over
 * Llama 3 8B's 32 decoders on 4 stages (1F1B), and under interleaving with
 * 2 chunks (4 each), and under zb-v (a V of 8 chunks of 4). */
START_TEST(uniform_stage_layers_are_the_even_split)
{
    static const char *const sch[][2] = {
        { "training.schedule=1f1b", "parallel.vpp=1" },
        { "training.schedule=interleaved", "parallel.vpp=2" },
        { "training.schedule=zb-v", "parallel.vpp=1" },
    };
    const char *base = "[model]\nconfig = llama3-8b\nseq_len = 2048\n[hardware]\nsystem = dgx-h100\n"
                       "[parallel]\npp = 4\n[training]\nglobal_batch = 8\nrecompute = selective\n";
    for (int k = 0; k < 3; k++) {
        struct sim a, b;
        struct mp_error err = { 0 };
        const char *even[] = { sch[k][0], sch[k][1], NULL };
        const char *given[] = { sch[k][0], sch[k][1], "parallel.stage_layers=8,8,8,8", NULL };
        ck_assert_int_eq(run_text(&a, base, even, &err), MP_OK);
        ck_assert_int_eq(run_text(&b, base, given, &err), MP_OK);
        size_t la, lb;
        char *ja = json_of(&a, &la), *jb = json_of(&b, &lb);
        ck_assert_uint_eq(la, lb);
        ck_assert_str_eq(ja, jb);
        free(ja);
        free(jb);
        sim_release(&a);
        sim_release(&b);
    }
}
END_TEST

/* Reference: devices run their ops in program order on free links, an op
 * starting when its device is free and its input is there (F after the
 * stage before, BW after the stage after and its own F). A person does this
 * with a pencil; the test does it in a loop over the stage costs. */
static mp_time list_schedule(const struct sim *s)
{
    const struct pipe_program *p = &s->prog;
    int S = p->stages, M = p->microbatches, D = p->devices;
    mp_time *fend = mp_xcalloc((size_t)S * M, sizeof *fend), *bend = mp_xcalloc((size_t)S * M, sizeof *bend);
    char *fd = mp_xcalloc((size_t)S * M, 1), *bd = mp_xcalloc((size_t)S * M, 1);
    mp_time *free_at = mp_xcalloc((size_t)D, sizeof *free_at);
    int *pc = mp_xcalloc((size_t)D, sizeof *pc);
    for (bool moved = true; moved;) {
        moved = false;
        for (int d = 0; d < D; d++)
            for (; pc[d] < p->n_ops[d]; pc[d]++) {
                const struct pipe_op *o = &p->ops[d][pc[d]];
                int id = o->mb * S + o->stage;
                const struct stage_cost *c = &s->stage_cost[o->stage];
                mp_time ready;
                if (o->kind == PIPE_F) {
                    if (o->stage > 0 && !fd[id - 1]) break;
                    ready = o->stage > 0 ? fend[id - 1] : 0;
                } else {
                    ck_assert_int_eq(o->kind, PIPE_BW);
                    if (o->stage < S - 1 && !bd[id + 1]) break;
                    ready = o->stage < S - 1 ? bend[id + 1] : fend[id];
                    if (fend[id] > ready) ready = fend[id];
                }
                mp_time start = ready > free_at[d] ? ready : free_at[d];
                free_at[d] = start + (o->kind == PIPE_F ? c->t_f : c->t_b + c->t_w);
                if (o->kind == PIPE_F) fend[id] = free_at[d], fd[id] = 1;
                else bend[id] = free_at[d], bd[id] = 1;
                moved = true;
            }
    }
    /* Each device's step work follows its last op: its share of the
     * gradient norm, then (once the norm's all-reduce over the stages is
     * done: free links, no time) the Adam update (data_parallel.c). */
    mp_time sync = 0, adam = 0;
    for (int d = 0; d < D; d++) {
        ck_assert_int_eq(pc[d], p->n_ops[d]);
        mp_time work[2] = { 0, 0 };
        int k = 0;
        for (int i = 0; i < s->g.n_ops && k < 2; i++)
            if (s->g.ops[i].tag == TAG_OPTIMIZER && s->g.ops[i].chip == s->chip_of_device[d])
                work[k++] = s->g.ops[i].duration;
        if (free_at[d] + work[0] > sync) sync = free_at[d] + work[0];
        if (work[1] > adam) adam = work[1];
    }
    mp_time step = sync + adam;
    free(fend); free(bend); free(fd); free(bd); free(free_at); free(pc);
    return step;
}

/* Interleaved 1F1B over 7,8,8,7 (a 30-layer model, pp 4, vpp 2, m = 4) on
 * the textbook system. Each stage's layers split over its two chunks, the
 * extra one to chunk 1: device 0 holds 3 (stage 0, with the embedding) and
 * 4 (stage 4), devices 1 and 2 4 and 4, device 3 3 (stage 3) and 4 (stage
 * 7, with the head): stages 0–7 hold 3,4,4,3,4,4,4,4 decoders. With m = p
 * every op is warm-up: device 0 runs chunk 0 for microbatches 0–3, then
 * chunk 1, whose microbatch 0 has come round the other three devices after
 * F_0 + F_1 + F_2 + F_3, later than device 0's 4·F_0 (14 layers against
 * 12 + 3 embeddings), so that is when it starts. Each device is busy
 * m × (its chunks' F + B + W) + its optimizer step, and the step is the
 * pencil-and-paper list schedule of the program over these stage costs. */
START_TEST(interleaved_over_7_8_8_7_by_hand)
{
    const char *json = "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 1024,"
                       "\"intermediate_size\": 4096, \"num_attention_heads\": 8,"
                       "\"num_key_value_heads\": 8, \"num_hidden_layers\": 30,"
                       "\"vocab_size\": 1000}";
    char text[800];
    snprintf(text, sizeof text, "[model]\nconfig = %s\nseq_len = 1024\n[hardware]\nsystem = textbook\n"
             "[parallel]\npp = 4\nvpp = 2\nstage_layers = 7,8,8,7\n"
             "[training]\nschedule = interleaved\nglobal_batch = 4\n",
             mp_test_tmpfile(".json", json));
    struct sim s;
    struct mp_error err = { 0 };
    int rc = run_text(&s, text, NULL, &err);
    ck_assert_msg(rc == MP_OK, "%s", err.msg);
    static const int dec[8] = { 3, 4, 4, 3, 4, 4, 4, 4 };
    int next = 1;
    for (int st = 0; st < 8; st++) {
        const struct stage_cost *c = &s.stage_cost[st];
        ck_assert_int_eq(c->layer_first, st == 0 ? 0 : next);
        ck_assert_int_eq(c->layer_last, next + dec[st] - 1 + (st == 7));
        next += dec[st];
    }
    const struct stage_cost *c = s.stage_cost;
    /* chunk 1 of device 0 (stage 4) starts microbatch 0 after stages 0-3 */
    mp_time arrive = c[0].t_f + c[1].t_f + c[2].t_f + c[3].t_f;
    ck_assert(arrive > 4 * c[0].t_f);
    for (int i = 0; i < s.g.n_ops; i++)
        if (s.g.ops[i].tag == TAG_F && s.g.ops[i].mb == 0 && s.g.ops[i].stage == 4)
            ck_assert_int_eq(s.e.start[i], arrive);
    for (int d = 0; d < 4; d++) {
        mp_time busy = 0, opt = 0;
        for (int st = d; st < 8; st += 4) busy += 4 * (c[st].t_f + c[st].t_b + c[st].t_w);
        for (int i = 0; i < s.g.n_ops; i++)
            if (s.g.ops[i].tag == TAG_OPTIMIZER && s.g.ops[i].chip == s.chip_of_device[d])
                opt += s.g.ops[i].duration;
        ck_assert_int_eq(s.res.stage[d].busy, busy + opt);
    }
    ck_assert_int_eq(s.res.step_time, list_schedule(&s));
    sim_release(&s);
}
END_TEST

/* 126 layers on 16 stages, interleaved: refused when split evenly (126 is
 * no multiple of 16), run when the stages are given as Llama 3 405B's
 * 7, 8 × 14, 7 (a stage's layers over its 2 chunks: 3 + 4, 4 + 4). Schedule
 * rules then hold per stage: zb-v needs an even count on each. */
START_TEST(uneven_stages_under_chunked_schedules)
{
    char list[128] = "parallel.stage_layers=7";
    for (int i = 0; i < 14; i++) strcat(list, ",8");
    strcat(list, ",7");
    const char *base = "[model]\nconfig = llama3-405b\nseq_len = 512\n[hardware]\nsystem = textbook\n"
                       "[parallel]\ntp = 8\npp = 16\nvpp = 2\n[training]\nschedule = interleaved\n"
                       "global_batch = 16\nrecompute = full\n";
    struct sim s;
    struct mp_error err = { 0 };
    ck_assert_int_eq(run_text(&s, base, NULL, &err), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "parallel.stage_layers"));
    sim_release(&s);
    const char *given[] = { list, NULL };
    ck_assert_int_eq(run_text(&s, base, given, &err), MP_OK);
    ck_assert_int_eq(s.stage_decoders[0], 3);
    ck_assert_int_eq(s.stage_decoders[16], 4);
    ck_assert_int_eq(s.stage_decoders[15], 3);
    ck_assert_int_eq(s.stage_decoders[31], 4);
    ck_assert_int_eq(s.stage_cost[31].layer_last, 127);
    sim_release(&s);
    const char *zbv[] = { list, "training.schedule=zb-v", "parallel.vpp=1", NULL };
    ck_assert_int_eq(run_text(&s, base, zbv, &err), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "even number"));
    sim_release(&s);
    const char *dpv[] = { list, "training.schedule=dualpipev", "parallel.vpp=1",
                          "training.global_batch=32", NULL };
    ck_assert_int_eq(run_text(&s, base, dpv, &err), MP_OK);
    sim_release(&s);
}
END_TEST

/* ---- search ---------------------------------------------------------- */

/* Llama 3 8B at 262,144 tokens on 16 H100s (global batch 2): search tries
 * cp up to the largest leaving 8192 tokens a rank (262144 / 16 / 2 ≥ 8192:
 * 16); every layout's cp × tp × pp × dp is the 16 chips. Without CP a rank
 * would stash 256K tokens' layer inputs plus the fp32 logits, 4 × 262144 ×
 * 128256 / tp bytes on the last stage (134 GB at tp 1, 17 GB at tp 8, the
 * most one node's TP allows, on top of everything else): nothing fits, and
 * the printout says CP is what made it fit. The bound it prunes by stays a
 * lower bound of the simulated peak with CP too. */
START_TEST(search_includes_cp_and_says_when_it_made_the_fit)
{
    struct config base;
    struct mp_error err = { 0 };
    config_defaults(&base);
    ck_assert_int_eq(config_load(&base, mp_test_tmpfile(".ini",
        "[model]\nconfig = llama3-8b\nseq_len = 262144\n[hardware]\nsystem = dgx-h100\n"
        "[training]\nglobal_batch = 2\n"), &err), MP_OK);
    /* The scenario's own sp and no offload: with SP on TP 8, or the
     * stash in host memory, 262K tokens fit without CP (search varies
     * both since issue 22). */
    static const char *const fix[] = { "parallel.sp=false", "training.offload=none", NULL };
    struct search_options opt = { .chips = 16, .jobs = 2, .max_micro_batch = 1,
                                  .schedules = "1f1b", .fix = fix };
    struct search_result r;
    ck_assert_int_eq(search_run(&base, &opt, &r, &err), MP_OK);
    bool cp_seen[17] = { false };
    for (int i = 0; i < r.n_hits; i++) {
        const struct search_hit *h = &r.hit[i];
        ck_assert_int_eq(h->tp * h->cp * h->pp * h->dp, 16);
        ck_assert(h->cp >= 1 && h->cp <= 16);
        cp_seen[h->cp] = true;
        if (h->feasible) ck_assert_int_gt(h->cp, 1);
        if (h->peak_mem > 0) ck_assert_double_le(h->mem_bound, h->peak_mem * (1 + 1e-9));
    }
    ck_assert(cp_seen[1] && cp_seen[8]);
    ck_assert_int_gt(r.feasible, 0);
    char *out = NULL;
    size_t len;
    FILE *f = open_memstream(&out, &len);
    search_print(f, &r, &opt, 3);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(out, "context parallelism is what made this fit"));
    ck_assert_ptr_nonnull(strstr(out, " cp "));
    free(out);
    search_result_release(&r);
}
END_TEST

static Suite *context_suite(void)
{
    Suite *s = suite_create("context");
    TCase *tc = tcase_create("context parallelism");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, zigzag_balances_the_mask_contiguous_does_not);
    tcase_add_test(tc, zigzag_steps_have_the_two_shapes);
    tcase_add_test(tc, ring_sends_cp_minus_1_blocks_per_layer);
    tcase_add_test(tc, ulysses_all_to_all_bytes_by_hand);
    tcase_add_test(tc, ulysses_gqa_heads);
    tcase_add_test(tc, ulysses_heads_that_do_not_split_are_input_errors);
    tcase_add_test(tc, activations_are_the_non_cp_figure_over_cp);
    tcase_add_test(tc, free_links_cp_run_is_its_compute);
    tcase_add_test(tc, ring_transfer_longer_than_its_block_is_exposed);
    tcase_add_test(tc, zero_shards_over_dp_times_cp);
    suite_add_tcase(s, tc);
    TCase *st = tcase_create("stage layers");
    tcase_set_timeout(st, 60);
    tcase_add_test(st, stage_layers_tile_the_model);
    tcase_add_test(st, uniform_stage_layers_are_the_even_split);
    tcase_add_test(st, interleaved_over_7_8_8_7_by_hand);
    tcase_add_test(st, uneven_stages_under_chunked_schedules);
    suite_add_tcase(s, st);
    TCase *se = tcase_create("search");
    tcase_set_timeout(se, 60);
    tcase_add_test(se, search_includes_cp_and_says_when_it_made_the_fit);
    suite_add_tcase(s, se);
    return s;
}

MP_TEST_MAIN(context_suite)
