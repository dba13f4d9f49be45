/* check_model.c — the model loader and cost model against numbers a person
 * can check: published parameter counts, the closed-form FLOP split of a GPT
 * layer (cases.md §3), the 72BLsh^2 step formula, Korthikanti's activation
 * table (cases.md §4), and messages for broken config files. */
#include "testutil.h"
#include "models/model.h"
#include "sim/io/config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void load_preset(struct model *m, const char *name)
{
    char rel[128];
    snprintf(rel, sizeof rel, "models/%s.json", name);
    struct mp_error err = {0};
    int rc = model_load(m, mp_test_path(rel), &err);
    ck_assert_msg(rc == 0, "%s: %s", name, err.msg);
}

static void load_text(struct model *m, const char *json)
{
    struct mp_error err = {0};
    int rc = model_load_json(m, json, "test.json", &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
}

/* |got - want| within `rel` of want. */
#define ck_assert_rel(got, want, rel)                                              \
    ck_assert_msg(fabs((got) - (want)) <= (rel) * fabs(want),                     \
                  "%s = %.6g, expected %.6g (within %g)", #got, (double)(got),      \
                  (double)(want), (double)(rel))

/* ---------------- parameter counts ---------------- */

START_TEST(gpt3_params_megatron_formula)
{
    struct model m;
    load_preset(&m, "gpt3-175b");
    double L = 96, h = 12288, V = 51200, s = 2048;
    double megatron = 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h));
    /* Megatron's formula leaves out the final LayerNorm (2h); we count it
     * with the LM head. Everything else agrees term by term. */
    ck_assert_rel(model_params(&m), megatron + 2 * h, 1e-12);
    ck_assert_rel(model_params(&m), 174.6e9, 0.01);
    ck_assert_int_eq(m.n_layers, 98);
    ck_assert(m.tied_embeddings && m.learned_positions && !m.gated_mlp);
    ck_assert_int_eq(m.intermediate, 4 * 12288);
    ck_assert_double_eq(m.layer[1].params, 12 * h * h + 13 * h);
    ck_assert_double_eq(m.layer[97].params, 2 * h); /* tied: only the final LN */
    model_release(&m);
}
END_TEST

START_TEST(llama3_params)
{
    static const struct { const char *name; double published; } cases[] = {
        {"llama3-8b", 8.03e9}, {"llama3-70b", 70.6e9}, {"llama3-405b", 405.9e9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct model m;
        load_preset(&m, cases[i].name);
        ck_assert_rel(model_params(&m), cases[i].published, 0.01);
        ck_assert_double_eq(model_params(&m), model_active_params(&m));
        ck_assert(m.gated_mlp && !m.tied_embeddings);
        ck_assert_int_eq(m.kv_heads, 8);
        ck_assert_int_eq(m.head_dim, 128);
        model_release(&m);
    }
    /* Llama 3 8B by hand: embedding Vh; per layer 2h^2 (q, o) + 2h*1024
     * (k, v) + 3h*14336 (SwiGLU) + 2h (norms); head Vh + h. */
    struct model m;
    load_preset(&m, "llama3-8b");
    double h = 4096, V = 128256;
    double layer = 2 * h * h + 2 * h * 1024 + 3 * h * 14336 + 2 * h;
    ck_assert_double_eq(m.layer[1].params, layer);
    ck_assert_double_eq(model_params(&m), 2 * V * h + 32 * layer + h);
    model_release(&m);
}
END_TEST

START_TEST(mixtral_params)
{
    struct model m;
    load_preset(&m, "mixtral-8x7b");
    ck_assert_str_eq(m.arch, "mixtral");
    ck_assert_int_eq(m.experts, 8);
    ck_assert_int_eq(m.experts_per_token, 2);
    ck_assert_int_eq(m.moe_intermediate, 14336);
    ck_assert(m.layer[1].moe && m.layer[32].moe);
    ck_assert_rel(model_params(&m), 46.7e9, 0.01);
    ck_assert_rel(model_active_params(&m), 12.9e9, 0.01);
    model_release(&m);
}
END_TEST

START_TEST(deepseek_v3_params)
{
    struct model m;
    load_preset(&m, "deepseek-v3");
    ck_assert_str_eq(m.arch, "deepseek_v3");
    ck_assert_int_eq(m.decoders, 61); /* the MTP module is not a decoder */
    ck_assert(!m.layer[3].moe && m.layer[4].moe); /* decoders 0..2 dense */
    ck_assert_int_eq(m.layer[1].attn, ATTN_MLA);
    ck_assert_int_eq(m.shared_intermediate, 2048);
    ck_assert_int_eq(m.expert_groups, 8);
    ck_assert_int_eq(m.groups_per_token, 4);
    ck_assert_rel(model_params(&m), 671e9, 0.01);
    /* "37B activated": we get 37.5B counting the embedding table as active,
     * the same convention that gives Mixtral its published 12.9B. */
    ck_assert_rel(model_active_params(&m), 37e9, 0.02);
    model_release(&m);
}
END_TEST

START_TEST(qwen2_moe_mapping)
{
    /* Qwen1.5-MoE-A2.7B's keys: one shared expert 4x as wide as a routed one. */
    struct model m;
    load_text(&m, "{\"architectures\":[\"Qwen2MoeForCausalLM\"],\"hidden_size\":2048,"
                  "\"intermediate_size\":5632,\"num_attention_heads\":16,"
                  "\"num_key_value_heads\":16,\"num_hidden_layers\":24,\"vocab_size\":151936,"
                  "\"num_experts\":60,\"num_experts_per_tok\":4,\"moe_intermediate_size\":1408,"
                  "\"shared_expert_intermediate_size\":5632,\"decoder_sparse_step\":1,"
                  "\"mlp_only_layers\":[],\"tie_word_embeddings\":false}");
    ck_assert_int_eq(m.shared_experts, 1);
    ck_assert_int_eq(m.shared_intermediate, 5632);
    double h = 2048;
    double attn = 4 * h * h + 3 * h;          /* q,k,v,o + q/k/v biases */
    double one = 3 * h * 1408, shared = 3 * h * 5632 + h; /* + shared_expert_gate */
    double layer = attn + h * 60 + shared + 60 * one + 2 * h;
    ck_assert_double_eq(m.layer[1].params, layer);
    ck_assert_double_eq(m.layer[1].active_params, layer - 56 * one);
    ck_assert_rel(model_params(&m), 14.3e9, 0.01);      /* published total */
    ck_assert_rel(model_active_params(&m), 2.7e9, 0.03); /* "A2.7B" */
    model_release(&m);
}
END_TEST

START_TEST(hybrid_linear_layers)
{
    struct model m;
    load_text(&m, "{\"model_type\":\"kimi_k3\",\"hidden_size\":256,\"intermediate_size\":512,"
                  "\"num_attention_heads\":4,\"num_key_value_heads\":2,\"num_hidden_layers\":3,"
                  "\"vocab_size\":1000,\"layer_types\":[\"linear_attention\","
                  "\"full_attention\",\"linear_attention\"]}");
    ck_assert_int_eq(m.layer[1].attn, ATTN_LINEAR);
    ck_assert_int_eq(m.layer[2].attn, ATTN_FULL);
    struct cost_params cp = {.seq_len = 100, .micro_batch = 2, .tp = 2, .kv_bits = 8};
    struct layer_cost c;
    model_layer_cost(&m, 1, &cp, &c);
    ck_assert_double_eq(c.kv_bytes_per_token, 0);
    ck_assert_double_eq(c.state_bytes_per_request, 4.0 * 64 * 64 * 1 / 2);
    model_layer_cost(&m, 2, &cp, &c);
    ck_assert_double_eq(c.kv_bytes_per_token, 2.0 * (2 / 2) * 64 * 1);
    ck_assert_double_eq(c.state_bytes_per_request, 0);
    model_release(&m);
}
END_TEST

/* ---------------- FLOPs ---------------- */

static const char *gpt_small =
    "{\"model_type\":\"gpt2\",\"n_embd\":64,\"n_head\":4,\"n_layer\":3,"
    "\"n_positions\":128,\"vocab_size\":1000}";

START_TEST(gpt_layer_flop_split)
{
    struct model m;
    load_text(&m, gpt_small);
    double s = 32, b = 2, h = 64, V = 1000;
    struct cost_params cp = {.seq_len = 32, .micro_batch = 2, .tp = 1};
    struct layer_cost c;
    model_layer_cost(&m, 2, &cp, &c);
    ck_assert_double_eq(c.flops_f, s * b * h * (24 * h + 4 * s));
    ck_assert_double_eq(c.flops_b, s * b * h * (24 * h + 8 * s));
    ck_assert_double_eq(c.flops_w, 24 * s * b * h * h);
    ck_assert_double_eq(c.flops_recompute, 0);

    cp.recompute = RECOMPUTE_SELECTIVE; /* the attention core again: 4bs^2h */
    model_layer_cost(&m, 2, &cp, &c);
    ck_assert_double_eq(c.flops_recompute, 4 * b * s * s * h);
    cp.recompute = RECOMPUTE_FULL;      /* a whole forward again */
    model_layer_cost(&m, 2, &cp, &c);
    ck_assert_double_eq(c.flops_recompute, s * b * h * (24 * h + 4 * s));

    cp.recompute = RECOMPUTE_NONE;
    cp.tp = 4;
    model_layer_cost(&m, 2, &cp, &c);
    ck_assert_double_eq(c.flops_f, s * b * h * (24 * h + 4 * s) / 4);

    cp.tp = 1; /* LM head: 2sbhV each pass, though tied; embedding: nothing */
    model_layer_cost(&m, 4, &cp, &c);
    ck_assert_double_eq(c.flops_f, 2 * s * b * h * V);
    ck_assert_double_eq(c.flops_b, 2 * s * b * h * V);
    ck_assert_double_eq(c.flops_w, 2 * s * b * h * V);
    ck_assert_double_eq(c.params, 2 * h);
    model_layer_cost(&m, 0, &cp, &c);
    ck_assert_double_eq(c.flops_f + c.flops_b + c.flops_w, 0);
    ck_assert_double_eq(c.boundary_bytes, s * b * h * 2);
    model_release(&m);
}
END_TEST

START_TEST(step_flops_formula)
{
    const char *names[] = {"gpt3-175b"};
    struct model m;
    load_preset(&m, names[0]);
    double B = 1536, L = 96, s = 2048, h = 12288, V = 51200;
    double want = 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
    ck_assert_rel(model_step_flops(&m, 2048, B), want, 1e-12);
    model_release(&m);

    load_text(&m, gpt_small);
    B = 8, L = 3, s = 32, h = 64, V = 1000;
    want = 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
    ck_assert_rel(model_step_flops(&m, 32, B), want, 1e-12);
    model_release(&m);
}
END_TEST

START_TEST(gqa_and_moe_flops)
{
    /* Mixtral: 2 tokens x (attention + router + two experts) matmul params. */
    struct model m;
    load_preset(&m, "mixtral-8x7b");
    double h = 4096, s = 1024, b = 1;
    double mm = 2 * h * h + 2 * h * 1024 + h * 8 + 2 * 3 * h * 14336;
    ck_assert_double_eq(m.layer[1].matmul_params, mm);
    struct cost_params cp = {.seq_len = 1024, .micro_batch = 1, .tp = 1};
    struct layer_cost c;
    model_layer_cost(&m, 1, &cp, &c);
    ck_assert_double_eq(c.flops_w, 2 * s * b * mm);
    ck_assert_double_eq(c.flops_f, 2 * s * b * mm + 4 * b * s * s * 32 * 128);
    ck_assert_double_eq(c.kv_bytes_per_token, 2 * 8 * 128 * 2);
    model_release(&m);

    /* MLA: latent + rope key per token, whatever tp. */
    load_preset(&m, "deepseek-v3");
    cp.tp = 8;
    model_layer_cost(&m, 10, &cp, &c);
    ck_assert_double_eq(c.kv_bytes_per_token, (512 + 64) * 2);
    model_release(&m);
}
END_TEST

/* ---------------- activation memory (Korthikanti et al. 2022) ---------------- */

START_TEST(korthikanti_22b_activations)
{
    /* The paper's 22B config: a 64, h 6144, s 2048, b 4, t 8. */
    struct model m;
    load_text(&m, "{\"model_type\":\"gpt2\",\"n_embd\":6144,\"n_head\":64,\"n_layer\":48,"
                  "\"n_positions\":2048,\"vocab_size\":51200}");
    double a = 64, h = 6144, s = 2048, b = 4, t = 8, sbh = s * b * h;
    static const struct { int tp; bool sp; int rc; } lay[] = {
        {1, false, RECOMPUTE_NONE},     {8, false, RECOMPUTE_NONE},
        {8, true, RECOMPUTE_NONE},      {8, false, RECOMPUTE_SELECTIVE},
        {8, true, RECOMPUTE_SELECTIVE}, {8, false, RECOMPUTE_FULL},
        {8, true, RECOMPUTE_FULL},
    };
    const double want[] = {
        sbh * (34 + 5 * a * s / h),
        sbh * (10 + 24 / t + 5 * a * s / (h * t)),
        sbh * (34 / t + 5 * a * s / (h * t)),
        sbh * (10 + 24 / t),
        34 * sbh / t,
        2 * sbh,
        2 * sbh / t,
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        struct cost_params cp = {.seq_len = 2048, .micro_batch = 4, .tp = lay[i].tp,
                                 .sp = lay[i].sp, .recompute = lay[i].rc,
                                 .weight_bits = 16, .activation_bits = 16};
        struct layer_cost c;
        model_layer_cost(&m, 5, &cp, &c);
        /* The table's 5as/(ht) is inexact in binary; the sizes are whole
         * bytes, so allow rounding only. */
        ck_assert_msg(fabs(c.act_bytes - want[i]) <= 1e-12 * want[i],
                      "layout %zu: %.17g vs %.17g", i, c.act_bytes, want[i]);
        ck_assert_double_eq(c.act_bytes, floor(c.act_bytes));
        double mw = 32 * sbh / lay[i].tp;
        ck_assert_double_eq(c.act_w_bytes, mw < c.act_bytes ? mw : c.act_bytes);
        ck_assert_double_eq(c.boundary_bytes, 2 * sbh / (lay[i].sp ? t : 1));
    }
    model_release(&m);
}
END_TEST

/* ---------------- bad input ---------------- */

static void expect_bad(const char *path, const char *needle1, const char *needle2)
{
    struct model m;
    struct mp_error err = {0};
    int rc = model_load(&m, path, &err);
    ck_assert_int_eq(rc, MP_ERR_INPUT);
    ck_assert_int_eq(err.status, MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, path), "no file name in: %s", err.msg);
    ck_assert_msg(strstr(err.msg, needle1), "no '%s' in: %s", needle1, err.msg);
    if (needle2) ck_assert_msg(strstr(err.msg, needle2), "no '%s' in: %s", needle2, err.msg);
    ck_assert_ptr_null(m.layer);
}

static const char *llama_tail =
    "  \"intermediate_size\": 512,\n  \"num_attention_heads\": 4,\n"
    "  \"num_hidden_layers\": 2,\n  \"vocab_size\": 1000\n}\n";

static const char *with_head(const char *head)
{
    static char buf[1024];
    snprintf(buf, sizeof buf, "{\n  \"model_type\": \"llama\",\n%s%s", head, llama_tail);
    return buf;
}

START_TEST(bad_missing_file)
{
    expect_bad("/nonexistent/dir/none.json", "cannot open", "No such file");
}
END_TEST

START_TEST(bad_truncated)
{
    const char *p = mp_test_tmpfile(".json", "{\n  \"hidden_size\": 4096,\n  \"vocab\n");
    char where[600];
    snprintf(where, sizeof where, "%s:3:", p);
    expect_bad(p, where, "truncated");
    p = mp_test_tmpfile(".json", "{\n  \"hidden_size\": 4096,\n  \"num_hidden_layers\": 2,\n");
    snprintf(where, sizeof where, "%s:3:", p);
    expect_bad(p, where, "invalid JSON");
    p = mp_test_tmpfile(".json", "{\n \"a\": 1,,\n \"b\": 2\n}\n");
    snprintf(where, sizeof where, "%s:2:", p);
    expect_bad(p, where, "invalid JSON near '\"a\": 1,,'");
}
END_TEST

START_TEST(bad_wrong_type)
{
    const char *p = mp_test_tmpfile(".json", with_head("  \"hidden_size\": \"abc\",\n"));
    char where[600];
    snprintf(where, sizeof where, "%s:3: key hidden_size", p);
    expect_bad(p, where, "expected a positive integer, got \"abc\"");
    p = mp_test_tmpfile(".json", with_head("  \"hidden_size\": 64.5,\n"));
    expect_bad(p, "key hidden_size", "got 64.5");
    p = mp_test_tmpfile(".json", with_head("  \"hidden_size\": 64, \"tie_word_embeddings\": 1,\n"));
    expect_bad(p, "key tie_word_embeddings", "expected true or false");
}
END_TEST

START_TEST(bad_negative_layers)
{
    const char *p = mp_test_tmpfile(".json",
        "{\"model_type\":\"llama\",\"hidden_size\":64,\"intermediate_size\":128,"
        "\"num_attention_heads\":4,\"num_hidden_layers\":-3,\"vocab_size\":10}");
    expect_bad(p, "key num_hidden_layers", "expected a positive integer, got -3");
    p = mp_test_tmpfile(".json", with_head("  \"hidden_size\": 0,\n"));
    expect_bad(p, "key hidden_size", "got 0");
}
END_TEST

START_TEST(bad_missing_hidden)
{
    const char *p = mp_test_tmpfile(".json", with_head(""));
    expect_bad(p, "key hidden_size", "missing");
    p = mp_test_tmpfile(".json", "{\"model_type\":\"gpt2\",\"n_embd\":64,\"n_head\":4,"
                                 "\"n_positions\":16,\"vocab_size\":10}");
    expect_bad(p, "key n_layer", "missing");
}
END_TEST

START_TEST(bad_heads_not_dividing)
{
    const char *p = mp_test_tmpfile(".json", with_head("  \"hidden_size\": 66,\n"));
    expect_bad(p, "key num_attention_heads", "do not divide hidden_size 66");
    p = mp_test_tmpfile(".json", with_head("  \"hidden_size\": 64,\n"
                                           "  \"num_key_value_heads\": 3,\n"));
    expect_bad(p, "key num_key_value_heads", "does not divide num_attention_heads 4");
    /* An explicit head_dim lifts the divisibility rule (Gemma-style). */
    struct model m;
    load_text(&m, "{\"model_type\":\"llama\",\"hidden_size\":66,\"head_dim\":32,\"intermediate_size\":8,"
                  "\"num_attention_heads\":4,\"num_hidden_layers\":1,\"vocab_size\":10}");
    ck_assert_int_eq(m.head_dim, 32);
    model_release(&m);
}
END_TEST

START_TEST(bad_empty_and_array)
{
    const char *p = mp_test_tmpfile(".json", "");
    expect_bad(p, "empty file", "JSON object");
    p = mp_test_tmpfile(".json", "  \n\n");
    expect_bad(p, "empty file", NULL);
    p = mp_test_tmpfile(".json", "[{\"hidden_size\": 4096}]\n");
    expect_bad(p, "expected a JSON object", "got an array");
}
END_TEST

START_TEST(bad_moe_and_types)
{
    const char *p = mp_test_tmpfile(".json", "{\n  \"model_type\": \"mixtral\",\n"
                                    "  \"hidden_size\": 64,\n  \"num_local_experts\": 4, "
                                    "\"num_experts_per_tok\": 5,\n"
                                    "  \"intermediate_size\": 512,\n  \"num_attention_heads\": 4,\n"
                                    "  \"num_hidden_layers\": 2,\n  \"vocab_size\": 1000\n}\n");
    expect_bad(p, "key num_experts_per_tok", "more than the 4 experts");
    p = mp_test_tmpfile(".json", with_head("  \"hidden_size\": 64,\n"
                                           "  \"layer_types\": [\"full_attention\"],\n"));
    expect_bad(p, "key layer_types", "list of 2");
}
END_TEST

START_TEST(names_and_arch)
{
    struct model m;
    struct mp_error err = {0};
    ck_assert_int_eq(model_load_json(&m, gpt_small, "/x/My-Model/config.json", &err), 0);
    ck_assert_str_eq(m.name, "My-Model");
    ck_assert_str_eq(m.arch, "gpt2");
    model_release(&m);
    load_preset(&m, "llama3-70b");
    ck_assert_str_eq(m.name, "llama3-70b");
    ck_assert_str_eq(m.arch, "llama");
    ck_assert_int_eq(m.max_positions, 8192);
    model_release(&m);
}
END_TEST

/* ---------------- today's presets against their published counts ---------------- */

/* Published figures as their vendors state them (models/README.md names
 * each source). Where a figure is given to 3 or more digits the count must
 * be within 1 %; a figure given as a round number ("37B", "1T") only says
 * the count rounds to it, so the test allows half its last unit, and says
 * so. `conv` is the active-count convention the vendor's figure matches:
 * a all, n without the embedding table, d decoder layers only. */
static const struct {
    const char *name;
    double total, total_tol;   /* published, relative tolerance */
    double active, active_tol; /* 0: dense */
    char conv;
} presets[] = {
    {"qwen3-8b", 8.2e9, 0.01, 0, 0, 'a'},            /* model card: 8.2B */
    {"qwen3-235b-a22b", 235e9, 0.01, 22e9, 0.01, 'a'}, /* 235B, 22B activated */
    {"qwen3-next-80b-a3b", 80e9, 0.01, 3e9, 0.5 / 3, 'd'}, /* "3B activated": rounded */
    {"gemma3-27b", 27e9, 0.01, 0, 0, 'a'},           /* 27B (text model; vision tower apart) */
    {"gpt-oss-120b", 116.83e9, 0.01, 5.13e9, 0.01, 'n'}, /* model card table */
    {"mistral-7b", 7.3e9, 0.01, 0, 0, 'a'},          /* "7.3B" (HF counts 7.24B) */
    {"kimi-k2", 1e12, 0.05, 32e9, 0.01, 'n'},        /* "1T" rounded; 32B activated */
    {"minimax-text-01", 456e9, 0.01, 45.9e9, 0.01, 'd'}, /* 456B, 45.9B activated */
    {"jamba-v0.1", 52e9, 0.01, 12e9, 0.01, 'a'},     /* 52B, 12B active */
    {"nemotron-h-8b", 8e9, 0.5 / 8, 0, 0, 'a'},      /* "8B": rounded */
    {"deepseek-v3", 671e9, 0.01, 37e9, 0.5 / 37, 'n'}, /* 671B, "37B" rounded */
    {"mixtral-8x7b", 46.7e9, 0.01, 12.9e9, 0.01, 'a'},
    {"llama3-8b", 8.03e9, 0.01, 0, 0, 'a'},
    {"llama3-70b", 70.6e9, 0.01, 0, 0, 'a'},
    {"llama3-405b", 405.9e9, 0.01, 0, 0, 'a'},
    {"gpt3-175b", 174.6e9, 0.01, 0, 0, 'a'},
};

START_TEST(preset_published_counts)
{
    struct model m;
    load_preset(&m, presets[_i].name);
    struct model_counts t, a;
    model_param_counts(&m, &t, &a);
    ck_assert_msg(fabs(t.all - presets[_i].total) <= presets[_i].total_tol * presets[_i].total,
                  "%s: %.4gB total, published %.4gB", presets[_i].name, t.all / 1e9,
                  presets[_i].total / 1e9);
    if (presets[_i].active > 0) {
        double got = presets[_i].conv == 'a' ? a.all : presets[_i].conv == 'n' ? a.no_embedding
                                                                                : a.decoders;
        ck_assert_msg(fabs(got - presets[_i].active) <= presets[_i].active_tol * presets[_i].active,
                      "%s: %.4gB active (%c), published %.4gB", presets[_i].name, got / 1e9,
                      presets[_i].conv, presets[_i].active / 1e9);
    }
    model_release(&m);
}
END_TEST

START_TEST(preset_figures_by_hand)
{
    struct model m;
    /* Qwen3-8B's "6.95B non-embedding" is the decoder layers: 36 x (attention
     * 2 x 4096^2 + 2 x 4096 x 1024 + q/k norms 256 + SwiGLU 3 x 4096 x 12288 +
     * norms 8192) = 36 x 192,946,432. */
    load_preset(&m, "qwen3-8b");
    struct model_counts t;
    model_param_counts(&m, &t, NULL);
    ck_assert_double_eq(t.decoders, 36.0 * (2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 256 +
                                            3.0 * 4096 * 12288 + 8192));
    model_release(&m);
    /* gpt-oss-120b ships its experts in MXFP4 (4 bits + one 8-bit scale per
     * 32: 4.25), the rest in bf16; OpenAI's checkpoint is 60.8 GiB. */
    load_preset(&m, "gpt-oss-120b");
    double g[N_PARAM_GROUPS];
    model_param_groups(&m, g);
    ck_assert_double_eq(g[PG_EXPERTS], 36 * 128 * (3.0 * 2880 * 2880 + 3 * 2880));
    double bytes = g[PG_EXPERTS] * 4.25 / 8 + (model_params(&m) - g[PG_EXPERTS]) * 2;
    ck_assert_double_eq(model_shipped_weight_bytes(&m), bytes);
    ck_assert_rel(bytes / (1024.0 * 1024 * 1024), 60.8, 0.01);
    model_release(&m);
    /* Gemma 3 27B's text_config leaves vocab_size and tying out: 262,208
     * tied, so the head adds only its norm. */
    load_preset(&m, "gemma3-27b");
    ck_assert(m.tied_embeddings);
    ck_assert_int_eq(m.vocab, 262208);
    ck_assert_double_eq(m.layer[m.n_layers - 1].params, 5376);
    model_release(&m);
}
END_TEST

/* ---------------- KV and state of the layer kinds, by hand ---------------- */

START_TEST(sliding_window_kv)
{
    struct model m;
    struct cost_params cp = {.seq_len = 1, .micro_batch = 1, .tp = 1, .kv_bits = 16};
    struct layer_cost c;
    /* Mistral 7B: every layer slides over 4096 tokens; K and V of 8 heads x
     * 128 x 2 bytes = 4096 B per token, so a 32768-token request keeps
     * 4096 x 4096 B = 16 MiB per layer, not 128 MiB. */
    load_preset(&m, "mistral-7b");
    model_layer_cost(&m, 1, &cp, &c);
    ck_assert_double_eq(c.kv_bytes_per_token, 2 * 8 * 128 * 2);
    ck_assert_int_eq(c.kv_window, 4096);
    ck_assert_double_eq(layer_cost_request_bytes(&c, 32768), 4096.0 * 4096);
    ck_assert_double_eq(layer_cost_request_bytes(&c, 100), 100.0 * 4096);
    model_release(&m);
    /* gpt-oss-120b: 18 sliding layers of 128 tokens, 18 full; KV 2 x 8 x 64 x
     * 2 = 2048 B per token each. A 10,000-token request: 18 x 128 x 2048 +
     * 18 x 10,000 x 2048 bytes. */
    load_preset(&m, "gpt-oss-120b");
    double sum = 0;
    for (int l = 1; l <= m.decoders; l++) {
        model_layer_cost(&m, l, &cp, &c);
        sum += layer_cost_request_bytes(&c, 10000);
    }
    ck_assert_double_eq(sum, 18.0 * 128 * 2048 + 18.0 * 10000 * 2048);
    model_release(&m);
    /* Attention work by min(position, window): 10 tokens, window 4: the
     * causal pairs 1 + 2 + 3 + 4 x 7 = 34, scaled like full attention's
     * 55 causal pairs are to s^2 = 100. Chunks of 4: 10 + 10 + 3 = 23. */
    ck_assert_double_eq_tol(attn_pairs(MIXER_SLIDING, 4, 10), 34 * 100.0 / 55, 1e-12);
    ck_assert_double_eq_tol(attn_pairs(MIXER_CHUNKED, 4, 10), 23 * 100.0 / 55, 1e-12);
    ck_assert_double_eq(attn_pairs(MIXER_SLIDING, 16, 10), 100);
    ck_assert_double_eq(attn_pairs(MIXER_ATTENTION, 0, 10), 100);
}
END_TEST

START_TEST(recurrent_state_bytes)
{
    struct model m;
    struct cost_params cp = {.seq_len = 1, .micro_batch = 1, .tp = 1, .kv_bits = 16};
    struct layer_cost c;
    /* Qwen3-Next's Gated DeltaNet: 32 value heads x 128 x 128 state + the
     * conv's last 3 inputs of 2 x 16 x 128 + 32 x 128 = 8192 channels, at 2
     * bytes: (524,288 + 24,576) x 2 = 1,097,728 B per layer per request. (Read
     * as attention heads x head_dim^2 it was 16 x 256^2 x 2 = 2 MiB.) */
    load_preset(&m, "qwen3-next-80b-a3b");
    model_layer_cost(&m, 1, &cp, &c);
    ck_assert_int_eq(m.layer[1].mixer, MIXER_GATED_DELTANET);
    ck_assert_double_eq(c.state_bytes_per_request, (32.0 * 128 * 128 + 8192 * 3) * 2);
    ck_assert_double_eq(c.kv_bytes_per_token, 0);
    model_layer_cost(&m, 4, &cp, &c); /* layer 3: full attention, 2 KV heads of 256 */
    ck_assert_double_eq(c.kv_bytes_per_token, 2 * 2 * 256 * 2);
    cp.tp = 2;
    model_layer_cost(&m, 1, &cp, &c);
    ck_assert_double_eq(c.state_bytes_per_request, (32.0 * 128 * 128 + 8192 * 3));
    cp.tp = 1;
    model_release(&m);
    /* Nemotron-H 8B's Mamba-2: 128 heads x 64 x state 128 + conv inputs
     * (8192 + 2 x 8 x 128) x 3, at 2 bytes: 2,158,592 B. */
    load_preset(&m, "nemotron-h-8b");
    model_layer_cost(&m, 1, &cp, &c);
    ck_assert_int_eq(m.layer[1].mixer, MIXER_MAMBA2);
    ck_assert_double_eq(c.state_bytes_per_request, (128.0 * 64 * 128 + 10240 * 3) * 2);
    model_release(&m);
    /* Jamba's Mamba-1: inner 8192 x state 16 + 8192 x 3 conv inputs. */
    load_preset(&m, "jamba-v0.1");
    model_layer_cost(&m, 1, &cp, &c);
    ck_assert_int_eq(m.layer[1].mixer, MIXER_MAMBA);
    ck_assert_double_eq(c.state_bytes_per_request, (8192.0 * 16 + 8192 * 3) * 2);
    model_layer_cost(&m, 5, &cp, &c); /* layer 4: attention (period 8, offset 4) */
    ck_assert_double_eq(c.kv_bytes_per_token, 2 * 8 * 128 * 2);
    model_release(&m);
    /* MiniMax's lightning attention: 64 heads x 128 x 128. */
    load_preset(&m, "minimax-text-01");
    model_layer_cost(&m, 1, &cp, &c);
    ck_assert_int_eq(m.layer[1].mixer, MIXER_LIGHTNING);
    ck_assert_double_eq(c.state_bytes_per_request, 64.0 * 128 * 128 * 2);
    model_layer_cost(&m, 8, &cp, &c); /* layer 7: softmax */
    ck_assert_double_eq(c.kv_bytes_per_token, 2 * 8 * 128 * 2);
    model_release(&m);
}
END_TEST

START_TEST(recurrent_layer_flops)
{
    /* A Mamba-1 layer of tests/data/models/jamba.json (inner 128, state 4,
     * conv 4) over s = 8 tokens: weights 2 x 8 x matmul, the scan
     * 9 x 128 x 4 + D and z 2 x 128 + conv 2 x 128 x 4 per token. */
    struct model m;
    struct mp_error err = {0};
    ck_assert_int_eq(model_load(&m, mp_test_path("tests/data/models/jamba.json"), &err), 0);
    struct cost_params cp = {.seq_len = 8, .micro_batch = 1, .tp = 1};
    struct layer_cost c;
    model_layer_cost(&m, 1, &cp, &c);
    double scan = 8 * (9.0 * 128 * 4 + 2 * 128 + 2 * 128 * 4);
    ck_assert_double_eq(c.flops_f, 2 * 8 * m.layer[1].matmul_params + scan);
    ck_assert_double_eq(c.flops_b, 2 * 8 * m.layer[1].matmul_params + 2 * scan);
    ck_assert_double_eq(c.kv_bytes_per_token, 0);
    model_release(&m);
    /* Nemotron-H's MLP-only layer: no mixer, no KV, no state. */
    ck_assert_int_eq(model_load(&m, mp_test_path("tests/data/models/nemotron_h.json"), &err), 0);
    model_layer_cost(&m, 2, &cp, &c);
    ck_assert_int_eq(m.layer[2].mixer, MIXER_NONE);
    ck_assert_double_eq(c.flops_f, 2 * 8 * 2 * 64.0 * 128);
    ck_assert_double_eq(c.kv_bytes_per_token + c.state_bytes_per_request, 0);
    model_release(&m);
}
END_TEST

START_TEST(mtp_modules_in_training)
{
    /* tests/data/models/deepseek_v3.json: one MTP module = its MoE block
     * (38,188, check_arch.c) + eh_proj 2 x 64 x 64 + enorm, hnorm and the
     * head's norm 3 x 64 = 46,572; outside the model's total. */
    struct model m;
    struct mp_error err = {0};
    ck_assert_int_eq(model_load(&m, mp_test_path("tests/data/models/deepseek_v3.json"), &err), 0);
    ck_assert_int_eq(m.mtp_modules, 1);
    ck_assert_double_eq(model_mtp_params(&m), 38188 + 2 * 64.0 * 64 + 3 * 64);
    ck_assert_double_eq(model_params(&m), 236224);
    /* Training puts it beside the LM head: its block's passes and a second
     * head pass. */
    struct cost_params cp = {.seq_len = 16, .micro_batch = 1, .tp = 1};
    struct layer_cost head, with;
    int last = m.n_layers - 1;
    model_layer_cost(&m, last, &cp, &head);
    cp.mtp = true;
    model_layer_cost(&m, last, &cp, &with);
    double block_f = 2 * 16 * m.mtp.matmul_params + 16 * 16.0 * (2 * 4 * 12 + 2 * 4 * 8);
    ck_assert_double_eq(with.params, head.params + model_mtp_params(&m));
    ck_assert_double_eq(with.flops_f, 2 * head.flops_f + block_f);
    /* fp8 with 16 x 16 blocks: 8 + 32/256 bits for the decoders' matrices
     * (mixer 21,240, experts 49,152, dense and shared MLP 36,864), bf16 for
     * the embedding, head, routers and norms (128,968). */
    ck_assert_double_eq(model_shipped_weight_bytes(&m), (21240 + 49152 + 36864) * 8.125 / 8 +
                                                            128968.0 * 2);
    model_release(&m);
}
END_TEST

Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("params");
    tcase_add_test(tc, gpt3_params_megatron_formula);
    tcase_add_test(tc, llama3_params);
    tcase_add_test(tc, mixtral_params);
    tcase_add_test(tc, deepseek_v3_params);
    tcase_add_test(tc, qwen2_moe_mapping);
    tcase_add_test(tc, hybrid_linear_layers);
    tcase_add_test(tc, names_and_arch);
    tcase_add_loop_test(tc, preset_published_counts, 0, (int)(sizeof presets / sizeof *presets));
    tcase_add_test(tc, preset_figures_by_hand);
    suite_add_tcase(s, tc);

    tc = tcase_create("kinds");
    tcase_add_test(tc, sliding_window_kv);
    tcase_add_test(tc, recurrent_state_bytes);
    tcase_add_test(tc, recurrent_layer_flops);
    tcase_add_test(tc, mtp_modules_in_training);
    suite_add_tcase(s, tc);

    tc = tcase_create("cost");
    tcase_add_test(tc, gpt_layer_flop_split);
    tcase_add_test(tc, step_flops_formula);
    tcase_add_test(tc, gqa_and_moe_flops);
    tcase_add_test(tc, korthikanti_22b_activations);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_input");
    tcase_add_test(tc, bad_missing_file);
    tcase_add_test(tc, bad_truncated);
    tcase_add_test(tc, bad_wrong_type);
    tcase_add_test(tc, bad_negative_layers);
    tcase_add_test(tc, bad_missing_hidden);
    tcase_add_test(tc, bad_heads_not_dividing);
    tcase_add_test(tc, bad_empty_and_array);
    tcase_add_test(tc, bad_moe_and_types);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(model_suite)
