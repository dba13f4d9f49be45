/* check_tensor.c — tensor, sequence and data parallelism end to end:
 * Korthikanti et al.'s activation formulas exact to the byte, the TP/SP
 * collectives a step contains, fast against detailed fidelity, the exposed
 * communication report, ZeRO's memory and traffic, and the keys' checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/config.h"
#include "models/model.h"
#include "sim/train/sim.h"
#include "testutil.h"

static struct mp_error err;

static void gpt(struct model *m, int a, int h, int L)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"architectures\":[\"GPT2LMHeadModel\"],\"n_embd\":%d,\"n_head\":%d,"
             "\"n_layer\":%d,\"n_positions\":2048,\"vocab_size\":51200}", h, a, L);
    ck_assert_int_eq(model_load_json(m, json, "test", &err), MP_OK);
}

/* Table 3 of Korthikanti et al. 2022 (cases.md §4): per-layer activation
 * bytes, s = 2048, t = 8, in every layout, as integers:
 *   none         sbh·34 + 5as²b
 *   TP           sbh·10 + sbh·24/t + 5as²b/t
 *   TP+SP        sbh·34/t + 5as²b/t
 *   TP+sel       sbh·10 + sbh·24/t
 *   TP+SP+sel    sbh·34/t
 *   full         2sbh (÷t with SP) */
START_TEST(korthikanti_table3_exact_to_the_byte)
{
    struct { int a, h, L, b; } cfg[] = {
        { 64, 6144, 48, 4 }, { 96, 12288, 96, 1 }, { 128, 20480, 105, 1 }, { 160, 25600, 128, 1 },
    };
    const long long s = 2048, t = 8;
    for (size_t k = 0; k < 4; k++) {
        struct model m;
        gpt(&m, cfg[k].a, cfg[k].h, cfg[k].L);
        long long b = cfg[k].b, h = cfg[k].h, a = cfg[k].a, sbh = s * b * h;
        struct { int tp; bool sp; int rc; long long want; } lay[] = {
            { 1, false, RECOMPUTE_NONE, sbh * 34 + 5 * a * s * s * b },
            { 8, false, RECOMPUTE_NONE, sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t },
            { 8, true, RECOMPUTE_NONE, sbh * 34 / t + 5 * a * s * s * b / t },
            { 8, false, RECOMPUTE_SELECTIVE, sbh * 10 + sbh * 24 / t },
            { 8, true, RECOMPUTE_SELECTIVE, sbh * 34 / t },
            { 8, false, RECOMPUTE_FULL, 2 * sbh },
            { 8, true, RECOMPUTE_FULL, 2 * sbh / t },
        };
        for (size_t j = 0; j < sizeof lay / sizeof *lay; j++) {
            struct cost_params cp = { .seq_len = (int)s, .micro_batch = (int)b, .tp = lay[j].tp,
                                      .sp = lay[j].sp, .recompute = lay[j].rc };
            struct layer_cost lc;
            model_layer_cost(&m, 1, &cp, &lc);
            ck_assert_msg(lc.act_bytes == (double)lay[j].want,
                          "model %zu layout %zu: %.0f bytes, want %lld", k, j, lc.act_bytes,
                          lay[j].want);
        }
        model_release(&m);
    }
}
END_TEST

/* A 4-layer GPT (h 1024, 16 heads) on a switch of 8 chips at 100 GB/s. */
static const char *small_model(void)
{
    static char path[512];
    if (!path[0])
        snprintf(path, sizeof path, "%s",
                 mp_test_tmpfile(".json", "{\"architectures\":[\"GPT2LMHeadModel\"],\"n_embd\":1024,"
                                          "\"n_head\":16,\"n_layer\":4,\"n_positions\":2048,"
                                          "\"vocab_size\":51200}"));
    return path;
}

static const char *switch8(void)
{
    static char path[512];
    if (!path[0])
        snprintf(path, sizeof path, "%s",
                 mp_test_tmpfile(".ini", "[system]\nchip = a100-sxm\nchips_per_node = 8\n"
                                         "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\n"
                                         "latency = 5us\n[scaleout]\ntopology = fat_tree\n"
                                         "bandwidth = 10GB/s\nlatency = 10us\n"));
    return path;
}

static int run(struct sim *s, const char *const *sets)
{
    struct config cfg;
    config_defaults(&cfg);
    char m[600], y[600];
    snprintf(m, sizeof m, "model.config=%s", small_model());
    snprintf(y, sizeof y, "hardware.system=%s", switch8());
    ck_assert_int_eq(config_set(&cfg, m, "t", &err), MP_OK);
    ck_assert_int_eq(config_set(&cfg, y, "t", &err), MP_OK);
    ck_assert_int_eq(config_set(&cfg, "model.seq_len=1024", "t", &err), MP_OK);
    for (; *sets; sets++) ck_assert_int_eq(config_set(&cfg, *sets, "t", &err), MP_OK);
    int rc = sim_run(s, &cfg, NULL, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    return rc;
}

static int count_ops(const struct sim *s, int comm, int tag)
{
    int n = 0;
    for (int i = 0; i < s->g.n_ops; i++)
        n += s->g.ops[i].comm == comm && (tag < 0 || s->g.ops[i].tag == tag) &&
             s->g.ops[i].kind != OP_MEMORY;
    return n;
}

/* Megatron: per microbatch and decoder 2 all-reduces forward and 2 backward,
 * plus the embedding's output and the LM head's input gradient: m(4L + 2).
 * With SP: an all-gather and a reduce-scatter around each block each way
 * (8 per decoder), and in the backward the all-gather of each block's
 * stashed (sharded) input for its weight gradient (2 more), the embedding's
 * reduce-scatter, the LM head's all-gather forward and reduce-scatter
 * backward: m(10L + 3), of them m(6L + 1) all-gathers. Without SP
 * everything is serial on one stage, so the step is compute + TP comm + the
 * gradient norm's all-reduce over the 4 TP ranks (the only DP-kind op with
 * dp = 1) + optimizer exactly, and all the TP time is exposed. */
START_TEST(tp_and_sp_collectives_per_step)
{
    struct sim s;
    const char *tp[] = { "parallel.tp=4", "training.global_batch=2", NULL };
    ck_assert_int_eq(run(&s, tp), MP_OK);
    ck_assert_int_eq(count_ops(&s, COMM_TP, TAG_ALL_REDUCE), 2 * (4 * 4 + 2));
    ck_assert_int_eq(count_ops(&s, COMM_TP, -1), 2 * (4 * 4 + 2));
    mp_time comm = 0, norm = 0;
    for (int i = 0; i < s.g.n_ops; i++) {
        if (s.g.ops[i].comm == COMM_TP) comm += s.g.ops[i].duration;
        if (s.g.ops[i].comm == COMM_DP) norm += s.g.ops[i].duration;
    }
    ck_assert_int_eq(count_ops(&s, COMM_DP, TAG_ALL_REDUCE), 1);
    /* 4 bytes over 4 chips: 6 steps of 5 µs (and 1 byte each at 100 GB/s). */
    ck_assert_int_eq(norm, 6 * (llround(1 * 1e12 / 100e9) + 5000000));
    ck_assert_int_eq(s.res.stage[0].exposed_comm[COMM_TP], comm);
    ck_assert_int_eq(s.res.step_time, s.res.stage[0].busy + comm + norm);
    ck_assert_double_eq_tol(s.res.exposed_comm_s[COMM_TP], mp_seconds(comm), 1e-12);
    /* One all-reduce of s·b·h·2 bytes = 2 MiB over 4 chips: 6 × (512 KiB at
     * 100 GB/s + 5 µs). */
    for (int i = 0; i < s.g.n_ops; i++)
        if (s.g.ops[i].comm == COMM_TP) {
            ck_assert_double_eq(s.g.ops[i].bytes, 1024.0 * 1024 * 2);
            ck_assert_int_eq(s.g.ops[i].duration, 6 * (llround(524288 * 1e12 / 100e9) + 5000000));
            break;
        }
    sim_release(&s);
    const char *sp[] = { "parallel.tp=4", "parallel.sp=true", "training.global_batch=2", NULL };
    ck_assert_int_eq(run(&s, sp), MP_OK);
    ck_assert_int_eq(count_ops(&s, COMM_TP, -1), 2 * (10 * 4 + 3));
    ck_assert_int_eq(count_ops(&s, COMM_TP, TAG_ALL_GATHER), 2 * (6 * 4 + 1));
    ck_assert_int_eq(count_ops(&s, COMM_TP, TAG_REDUCE_SCATTER), 2 * (4 * 4 + 2));
    sim_release(&s);
}
END_TEST

/* The same step at fast and detailed fidelity: on an idle fabric each TP
 * ring all-reduce takes the same time either way, so the steps agree to the
 * picosecond; detailed has the transfers on all four chips. */
START_TEST(fast_and_detailed_steps_agree)
{
    struct sim a, b;
    const char *fast[] = { "parallel.tp=4", "parallel.pp=2", "training.global_batch=4", NULL };
    const char *det[] = { "parallel.tp=4", "parallel.pp=2", "training.global_batch=4",
                          "run.fidelity=detailed", NULL };
    ck_assert_int_eq(run(&a, fast), MP_OK);
    ck_assert_int_eq(run(&b, det), MP_OK);
    ck_assert_int_eq(a.res.step_time, b.res.step_time);
    ck_assert_int_gt(b.g.n_ops, a.g.n_ops);
    sim_release(&a);
    sim_release(&b);
}
END_TEST

/* With tp_overlap the backward all-reduce runs beside the weight-gradient
 * GEMMs, so the step is shorter and less TP time is exposed. */
START_TEST(tp_overlap_hides_backward_all_reduce)
{
    struct sim a, b;
    const char *off[] = { "parallel.tp=4", "training.global_batch=2", NULL };
    const char *on[] = { "parallel.tp=4", "training.global_batch=2", "parallel.tp_overlap=true", NULL };
    ck_assert_int_eq(run(&a, off), MP_OK);
    ck_assert_int_eq(run(&b, on), MP_OK);
    ck_assert_int_lt(b.res.step_time, a.res.step_time);
    ck_assert_int_lt(b.res.stage[0].exposed_comm[COMM_TP], a.res.stage[0].exposed_comm[COMM_TP]);
    sim_release(&a);
    sim_release(&b);
}
END_TEST

/* ZeRO memory by stage, dp = 4, tp = 1: per parameter 2 B weights, 4 B
 * grads, 12 B optimizer; stage 1 divides the optimizer by 4, stage 2 also
 * the grads, stage 3 also the weights. Traffic: ZeRO 0 all-reduces, ZeRO 1
 * reduce-scatters and all-gathers the weights once, ZeRO 3 (FSDP, one unit
 * per layer) all-gathers every layer's weights in each of the 2 × m forward
 * and backward passes and reduce-scatters every layer's gradients in each
 * of the m backward passes. */
START_TEST(zero_memory_and_traffic)
{
    double want[4][3] = { { 2, 4, 12 }, { 2, 4, 3 }, { 2, 1, 3 }, { 0.5, 1, 3 } };
    for (int z = 0; z <= 3; z++) {
        struct sim s;
        char key[32];
        snprintf(key, sizeof key, "training.zero=%d", z);
        const char *sets[] = { "parallel.dp=4", "training.global_batch=8", key, NULL };
        ck_assert_int_eq(run(&s, sets), MP_OK);
        double p = model_params(&s.model);
        ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_WEIGHTS], want[z][0] * p, 1e-6 * p);
        ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_GRADS], want[z][1] * p, 1e-6 * p);
        ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_OPTIMIZER], want[z][2] * p, 1e-6 * p);
        int ar = count_ops(&s, COMM_DP, TAG_ALL_REDUCE), rs = count_ops(&s, COMM_DP, TAG_REDUCE_SCATTER);
        int ag = count_ops(&s, COMM_DP, TAG_ALL_GATHER);
        if (z == 0) ck_assert(ar >= 1 && rs == 0 && ag == 0);
        if (z == 1 || z == 2) ck_assert(ar == 0 && rs >= 1 && ag == 1);
        int L = s.model.n_layers; /* embedding, 4 decoders, LM head */
        if (z == 3) ck_assert(ar == 0 && rs == 2 * L && ag == 2 * 2 * L);
        sim_release(&s);
    }
}
END_TEST

/* ZeRO-3 by hand (FSDP, one unit per layer). GPT-2 of h = 1024, 4 decoders
 * on pp = 3 stages: stage 1 holds decoders 2 and 3 (model layers 2..3), each
 * 12h² + 13h = 12,596,224 parameters. A forward or backward holds one
 * layer's gathered weights and the next one's prefetch: 2 × 12,596,224 × 2 B
 * = 50,384,896 B; a backward also one layer's fp32 gradients until they are
 * reduce-scattered, 12,596,224 × 4 B = 50,384,896 B. So stage 1's
 * communication buffers peak at 100,769,792 B (the old model held the whole
 * stage's weights per pass and let two passes' overlap). Traffic on stage 1
 * per step, m = 8 microbatches: 2 passes × 2 layers × 8 all-gathers of
 * 25,192,448 B and 2 × 8 reduce-scatters of 50,384,896 B. */
START_TEST(zero3_holds_one_layer_and_the_prefetch)
{
    struct config cfg;
    config_defaults(&cfg);
    char m[600], y[600];
    snprintf(m, sizeof m, "model.config=%s", small_model());
    snprintf(y, sizeof y, "hardware.system=%s", switch8());
    const char *sets[] = { m, y, "model.seq_len=1024", "parallel.pp=3", "parallel.dp=2",
                           "training.global_batch=16", "training.zero=3", NULL };
    for (const char *const *k = sets; *k; k++) ck_assert_int_eq(config_set(&cfg, *k, "t", &err), MP_OK);
    struct sim s;
    struct sim_options o = { .record_memory = true };
    ck_assert_int_eq(sim_run(&s, &cfg, &o, &err), MP_OK);
    ck_assert_int_eq(s.stage_cost[1].layer_first, 2);
    ck_assert_int_eq(s.stage_cost[1].layer_last, 3);
    int chip = s.res.stage[1].chip;
    double comm = 0, most = 0;
    for (int i = 0; i < s.e.n_mem_log; i++) {
        const struct mem_event *ev = &s.e.mem_log[i];
        if (ev->chip != chip || ev->cat != MEM_COMM) continue;
        comm += ev->delta;
        if (comm > most) most = comm;
    }
    ck_assert_double_eq(most, 100769792.0);
    int ag = 0, rs = 0;
    for (int i = 0; i < s.g.n_ops; i++) {
        const struct op *op = &s.g.ops[i];
        if (op->comm != COMM_DP || op->stage != 1) continue;
        if (op->tag == TAG_ALL_GATHER) {
            ag++;
            ck_assert_double_eq(op->bytes, 25192448.0);
        } else if (op->tag == TAG_REDUCE_SCATTER) {
            rs++;
            ck_assert_double_eq(op->bytes, 50384896.0);
        }
    }
    ck_assert_int_eq(ag, 2 * 2 * 8);
    ck_assert_int_eq(rs, 2 * 8);
    sim_release(&s);
}
END_TEST

/* Offload traffic per step by hand (offload.h). The GPT-2 of h = 1024 with
 * 4 decoders on one stage (pp = 1, tp = 1), dp = 2, m = 4 microbatches,
 * on the switch system with a [host] section of 25 GB/s and 10 µs per copy.
 * P = the chip's parameters (all 6 layers), wb = 2 bytes.
 *  - optimizer, ZeRO 1: the reduced fp32 gradient shard leaves once per
 *    step, P × 4 / 2 bytes in all (however the buckets cut it), and the
 *    updated weight shard comes back, P × 2 / 2; the chip holds no
 *    optimizer state.
 *  - optimizer+weights, ZeRO 3: every forward and backward fetches each
 *    layer's shard, 2 passes × m × P × 2 / 2; every backward sends each
 *    layer's reduced gradient shard, m × P × 4 / 2; nothing comes back after
 *    the step; the chip holds neither weights nor optimizer state.
 *  - all: the same, and each forward's stash (M_B of the stage) goes out
 *    and comes back once per microbatch: m × M_B each way. */
static void offload_traffic(const char *offload, int zero, double *out, double *back,
                            struct sim *s)
{
    struct config cfg;
    config_defaults(&cfg);
    char m[600], y[600], z[64], o[64];
    snprintf(m, sizeof m, "model.config=%s", small_model());
    snprintf(y, sizeof y, "hardware.system=%s",
             mp_test_tmpfile(".ini", "[system]\nchip = a100-sxm\nchips_per_node = 8\n"
                                     "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\n"
                                     "latency = 5us\n[scaleout]\ntopology = fat_tree\n"
                                     "bandwidth = 10GB/s\nlatency = 10us\n[host]\n"
                                     "memory = 1TB\nlink_bw = 25GB/s\nlink_latency = 10us\n"));
    snprintf(z, sizeof z, "training.zero=%d", zero);
    snprintf(o, sizeof o, "training.offload=%s", offload);
    const char *sets[] = { m, y, "model.seq_len=1024", "parallel.dp=2", "training.global_batch=8",
                           z, o, NULL };
    for (const char *const *k = sets; *k; k++) ck_assert_int_eq(config_set(&cfg, *k, "t", &err), MP_OK);
    struct sim_options so = { .record_memory = true }; /* every op in s->g */
    ck_assert_int_eq(sim_run(s, &cfg, &so, &err), MP_OK);
    *out = *back = 0;
    for (int i = 0; i < s->g.n_ops; i++) {
        const struct op *op = &s->g.ops[i];
        if (op->tag == TAG_OFFLOAD) *out += op->bytes;
        if (op->tag == TAG_RELOAD) *back += op->bytes;
    }
}

START_TEST(offload_traffic_by_hand)
{
    struct sim s;
    double out, back;
    offload_traffic("optimizer", 1, &out, &back, &s);
    double P = model_params(&s.model);
    ck_assert_double_eq_tol(out, P * 4 / 2, 1e-9 * P);
    ck_assert_double_eq_tol(back, P * 2 / 2, 1e-9 * P);
    ck_assert_double_eq(s.res.stage[0].mem[MEM_OPTIMIZER], 0);
    /* The host holds the optimizer state of 8 chips: 12 B × P / 2 each. */
    ck_assert_double_eq_tol(s.res.host_mem_bytes, 8 * 12 * P / 2, 1e-9 * P);
    sim_release(&s);

    offload_traffic("optimizer+weights", 3, &out, &back, &s);
    ck_assert_double_eq_tol(back, 2 * 4 * P * 2 / 2, 1e-9 * P);
    ck_assert_double_eq_tol(out, 4 * P * 4 / 2, 1e-9 * P);
    ck_assert_double_eq(s.res.stage[0].mem[MEM_WEIGHTS], 0);
    ck_assert_double_eq(s.res.stage[0].mem[MEM_OPTIMIZER], 0);
    sim_release(&s);

    offload_traffic("all", 3, &out, &back, &s);
    double mb = s.stage_cost[0].act_bytes;
    ck_assert_double_gt(mb, 0);
    ck_assert_double_eq_tol(back, 2 * 4 * P * 2 / 2 + 4 * mb, 1e-9 * P);
    ck_assert_double_eq_tol(out, 4 * P * 4 / 2 + 4 * mb, 1e-9 * P);
    sim_release(&s);
}
END_TEST

/* Gradient buckets synced during the last backward (dp_overlap) end the
 * step no later than one all-reduce after it, and hide some DP time. */
START_TEST(dp_overlap_hides_gradient_sync)
{
    struct sim a, b;
    const char *off[] = { "parallel.dp=4", "training.global_batch=8", "training.dp_overlap=false",
                          "training.dp_bucket=10MB", NULL };
    const char *on[] = { "parallel.dp=4", "training.global_batch=8", "training.dp_overlap=true",
                         "training.dp_bucket=10MB", NULL };
    ck_assert_int_eq(run(&a, off), MP_OK);
    ck_assert_int_eq(run(&b, on), MP_OK);
    ck_assert_int_eq(count_ops(&a, COMM_DP, TAG_ALL_REDUCE), 1);
    ck_assert_int_gt(count_ops(&b, COMM_DP, TAG_ALL_REDUCE), 1);
    ck_assert_int_lt(b.res.step_time, a.res.step_time);
    ck_assert_int_lt(b.res.stage[0].exposed_comm[COMM_DP], a.res.stage[0].exposed_comm[COMM_DP]);
    sim_release(&a);
    sim_release(&b);
}
END_TEST

/* The step work after the last backward (issue 14), dp = 4, ZeRO 1, on the
 * switch's A100s (memory at 2.04 TB/s × 0.833, 2.6 us a launch): the
 * gradient norm reads the owned fp32 gradients, P/4 × 4 B; the Adam step
 * reads gradient, master and both moments (16 B) and writes master, moments
 * and the bf16 weights (14 B) for the P/4 owned parameters, and zeroes the
 * P × 4 B of gradients the chip holds, in two launches. With bf16
 * gradients and moments (training.grad_reduce, optimizer_state) the same
 * counts are 2 B, 2 + 4 + 2·2 read and 4 + 2·2 + 2 written, and 2 B held;
 * the gradient buffer then holds 2 B per parameter and the optimizer state
 * 4 + 2·2 + 4 (the fp32 gradient copy) over 4. */
START_TEST(step_work_by_the_precision_recipe)
{
    static const struct { const char *grad, *opt; double g, o, adam, held, state; } cases[] = {
        { "fp32", "fp32", 4, 4, 30, 4, 12 },
        { "bf16", "bf16", 2, 2, 10 + 10, 2, 12 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char g[64], o[64];
        snprintf(g, sizeof g, "training.grad_reduce=%s", cases[i].grad);
        snprintf(o, sizeof o, "training.optimizer_state=%s", cases[i].opt);
        const char *sets[] = { "parallel.dp=4", "training.global_batch=8", "training.zero=1",
                               g, o, NULL };
        struct sim s;
        ck_assert_int_eq(run(&s, sets), MP_OK);
        double p = model_params(&s.model), bw = 2.04e12 * 0.833, launch = 2.6e-6;
        ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_GRADS], cases[i].held * p, 1e-6 * p);
        ck_assert_double_eq_tol(s.res.stage[0].mem[MEM_OPTIMIZER], cases[i].state * p / 4,
                                1e-6 * p);
        double want[2] = { p / 4 * cases[i].g / bw + launch,
                           (p / 4 * cases[i].adam + p * cases[i].held) / bw + 2 * launch };
        int k = 0;
        for (int j = 0; j < s.g.n_ops && k < 2; j++)
            if (s.g.ops[j].tag == TAG_OPTIMIZER) {
                ck_assert_double_eq_tol(mp_seconds(s.g.ops[j].duration), want[k], 1e-9);
                k++;
            }
        ck_assert_int_eq(k, 2);
        sim_release(&s);
    }
}
END_TEST

/* training.overlap_param_gather: ZeRO-1's weight all-gather runs at the
 * step's start, in gradient-bucket-sized pieces, under the first forward
 * (which waits for the first piece only), not after the optimizer: the step
 * is shorter by about the gather, and the last op is the optimizer's. */
START_TEST(overlap_param_gather_moves_the_gather_off_the_end)
{
    struct sim a, b;
    const char *off[] = { "parallel.dp=4", "training.global_batch=8", "training.zero=1",
                          "training.dp_bucket=10MB", NULL };
    const char *on[] = { "parallel.dp=4", "training.global_batch=8", "training.zero=1",
                         "training.dp_bucket=10MB", "training.overlap_param_gather=true", NULL };
    ck_assert_int_eq(run(&a, off), MP_OK);
    ck_assert_int_eq(run(&b, on), MP_OK);
    ck_assert_int_eq(count_ops(&a, COMM_DP, TAG_ALL_GATHER), 1);
    /* One gather per 10 MB of fp32 gradients' worth of parameters. */
    double p = model_params(&b.model);
    ck_assert_int_eq(count_ops(&b, COMM_DP, TAG_ALL_GATHER), (int)ceil(p * 4 / 10e6));
    ck_assert_int_lt(b.res.step_time, a.res.step_time);
    mp_time last_opt = 0, last_ag = 0;
    for (int j = 0; j < b.g.n_ops; j++) {
        if (b.g.ops[j].tag == TAG_OPTIMIZER && b.e.end[j] > last_opt) last_opt = b.e.end[j];
        if (b.g.ops[j].comm == COMM_DP && b.g.ops[j].tag == TAG_ALL_GATHER && b.e.end[j] > last_ag)
            last_ag = b.e.end[j];
    }
    ck_assert_int_eq(b.res.step_time, last_opt);
    ck_assert_int_lt(last_ag, last_opt);
    sim_release(&a);
    sim_release(&b);
}
END_TEST

/* --breakdown's figures are the stage costs: one microbatch's forward by
 * kernel class adds up to the stage's t_f (each of its parts rounded to
 * the picosecond once). */
START_TEST(breakdown_adds_up_to_the_stage_costs)
{
    struct sim s;
    const char *sets[] = { "parallel.pp=2", "training.global_batch=4", NULL };
    struct config cfg;
    config_defaults(&cfg);
    char m[600], y[600];
    snprintf(m, sizeof m, "model.config=%s", small_model());
    snprintf(y, sizeof y, "hardware.system=%s", switch8());
    ck_assert_int_eq(config_set(&cfg, m, "t", &err), MP_OK);
    ck_assert_int_eq(config_set(&cfg, y, "t", &err), MP_OK);
    for (const char *const *x = sets; *x; x++) ck_assert_int_eq(config_set(&cfg, *x, "t", &err), MP_OK);
    struct sim_options opts = { .breakdown = true };
    ck_assert_int_eq(sim_run(&s, &cfg, &opts, &err), MP_OK);
    for (int st = 0; st < s.prog.stages; st++) {
        const struct time_breakdown *f = &s.stage_bd[(size_t)st * N_BD + BD_F];
        double sum = 0;
        for (int c = 0; c < N_CT; c++) sum += f->s[c];
        ck_assert_double_eq_tol(sum, mp_seconds(s.stage_cost[st].t_f), 1e-9);
        ck_assert_int_gt(f->kernels, 0);
        ck_assert_int_ge(f->row[CT_GEMM], 0);
    }
    sim_release(&s);
}
END_TEST

/* TSP holds 1/D of everything: activations as TP+SP, plus gathered layers. */
START_TEST(tsp_shards_activations_and_adds_buffers)
{
    struct sim a, b;
    const char *tsp[] = { "parallel.tp=4", "parallel.tsp=true", "training.global_batch=1", NULL };
    const char *sp[] = { "parallel.tp=4", "parallel.sp=true", "training.global_batch=1", NULL };
    ck_assert_int_eq(run(&a, tsp), MP_OK);
    ck_assert_int_eq(run(&b, sp), MP_OK);
    ck_assert_double_eq_tol(a.stage_cost[0].act_bytes, b.stage_cost[0].act_bytes, 1);
    ck_assert_double_gt(a.res.stage[0].mem[MEM_COMM] + a.res.stage[0].peak_mem, b.res.stage[0].peak_mem);
    ck_assert_int_gt(count_ops(&a, COMM_TP, TAG_ALL_GATHER), 0);
    sim_release(&a);
    sim_release(&b);
}
END_TEST

/* DualPipe runs each stage on two devices: TP collectives and DP buckets
 * must go on the group of the device running the pass, or the graph
 * deadlocks. Every schedule finishes with TP, SP, DP and ZeRO-3, at both
 * fidelities. */
START_TEST(every_schedule_finishes_with_tp_and_dp)
{
    const char *sch[] = { "training.schedule=1f1b", "training.schedule=zb-h1",
                          "training.schedule=zb-v", "training.schedule=dualpipe",
                          "training.schedule=dualpipev" };
    const char *fid[] = { "run.fidelity=fast", "run.fidelity=detailed" };
    for (size_t k = 0; k < sizeof sch / sizeof *sch; k++)
        for (int f = 0; f < 2; f++) {
            struct sim s;
            const char *sets[] = { "parallel.tp=2", "parallel.pp=2", "parallel.dp=2", "parallel.sp=true",
                                   "training.zero=3", "training.global_batch=16", sch[k], fid[f], NULL };
            ck_assert_msg(run(&s, sets) == MP_OK, "%s %s", sch[k], fid[f]);
            sim_release(&s);
        }
}
END_TEST

/* Each new key refuses a bad value with its name in the message. */
START_TEST(bad_values_of_the_new_keys)
{
    struct config cfg;
    config_defaults(&cfg);
    const char *bad[] = { "parallel.tsp=maybe", "parallel.tp_overlap=2", "training.dp_overlap=yes please",
                          "training.dp_bucket=lots", "run.fidelity=slow", "run.collective=mesh" };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        ck_assert_int_eq(config_set(&cfg, bad[k], "t", &err), MP_ERR_INPUT);
        char key[64];
        snprintf(key, sizeof key, "%.*s", (int)(strchr(bad[k], '=') - bad[k]), bad[k]);
        ck_assert_msg(strstr(err.msg, key) != NULL, "%s: %s", key, err.msg);
    }
    ck_assert_int_eq(config_set(&cfg, "training.dp_bucket=0", "t", &err), MP_OK);
    ck_assert_int_eq(config_check(&cfg, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "training.dp_bucket"));
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "parallel.tsp=true", "t", &err), MP_OK);
    ck_assert_int_eq(config_set(&cfg, "parallel.sp=true", "t", &err), MP_OK);
    ck_assert_int_eq(config_check(&cfg, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "parallel.tsp"));
}
END_TEST

static Suite *tensor_suite(void)
{
    Suite *s = suite_create("tensor");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, korthikanti_table3_exact_to_the_byte);
    tcase_add_test(tc, tp_and_sp_collectives_per_step);
    tcase_add_test(tc, fast_and_detailed_steps_agree);
    tcase_add_test(tc, tp_overlap_hides_backward_all_reduce);
    tcase_add_test(tc, zero_memory_and_traffic);
    tcase_add_test(tc, zero3_holds_one_layer_and_the_prefetch);
    tcase_add_test(tc, offload_traffic_by_hand);
    tcase_add_test(tc, dp_overlap_hides_gradient_sync);
    tcase_add_test(tc, step_work_by_the_precision_recipe);
    tcase_add_test(tc, overlap_param_gather_moves_the_gather_off_the_end);
    tcase_add_test(tc, breakdown_adds_up_to_the_stage_costs);
    tcase_add_test(tc, tsp_shards_activations_and_adds_buffers);
    tcase_add_test(tc, every_schedule_finishes_with_tp_and_dp);
    tcase_add_test(tc, bad_values_of_the_new_keys);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(tensor_suite)
