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
    load_text(&m, "{\"model_type\":\"toy\",\"hidden_size\":256,\"intermediate_size\":512,"
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
    load_text(&m, "{\"hidden_size\":66,\"head_dim\":32,\"intermediate_size\":8,"
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
    const char *p = mp_test_tmpfile(".json", with_head("  \"hidden_size\": 64,\n"
                                    "  \"num_local_experts\": 4, \"num_experts_per_tok\": 5,\n"));
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
