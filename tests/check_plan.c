/* check_plan.c — `mpsim plan`: layers onto chips by memory. The wafer case of
 * shared/reference/cases.md §1 to the chip, the kimi-k3 preset's sizes by
 * hand, and the hybrid layer-type forms the loader reads. */
#define _GNU_SOURCE /* open_memstream */
#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/serve/plan.h"
#include "testutil.h"

/* One kimi-k3 decoder, by hand (models/README.md, kimi-k3):
 *   attention q,o 2·7168·8192 + k,v 2·7168·1024 = 132,120,576
 *   two RMSNorms 2·7168                         =      14,336
 *   router 7168·720                             =   5,160,960
 *   720 routed + 2 shared experts 722·3·7168·2048 = 31,797,018,624
 * = 31,934,314,496 parameters = 15,967,157,248 bytes at 4 bits. */
#define KIMI_LAYER_PARAMS 31934314496.0
#define KIMI_LAYER_BYTES 15967157248.0
#define WAFER 44e9

static int plan_of(struct plan_run *r, const char *const *sets)
{
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, mp_test_path("scenarios/kimi-k3-wafers.ini"), &err), MP_OK);
    for (; sets && *sets; sets++) ck_assert_int_eq(config_set(&cfg, *sets, "test", &err), MP_OK);
    int rc = plan_run(r, &cfg, &err);
    if (rc) fprintf(stderr, "plan: %s\n", err.msg);
    return rc;
}

START_TEST(kimi_k3_preset_sizes)
{
    struct model m;
    struct mp_error err = { 0 };
    ck_assert_int_eq(model_load(&m, mp_test_path("models/kimi-k3.json"), &err), MP_OK);
    ck_assert_int_eq(m.decoders, 93);
    int linear = 0;
    for (int l = 1; l <= 93; l++) {
        linear += m.layer[l].attn == ATTN_LINEAR;
        ck_assert_double_eq(m.layer[l].params, KIMI_LAYER_PARAMS);
    }
    ck_assert_int_eq(linear, 69);
    /* ~3T: 93 layers + embedding and head of 163840 × 7168 each + final norm. */
    double total = 93 * KIMI_LAYER_PARAMS + 2 * 163840.0 * 7168 + 7168;
    ck_assert_double_eq(model_params(&m), total);
    ck_assert_double_eq_tol(total / 3e12, 1.0, 0.01);
    /* At 4 bits, 1.5 TB within 1% and about 16 GB per layer. */
    ck_assert_double_eq_tol(total * 0.5 / 1.5e12, 1.0, 0.01);
    ck_assert_double_eq_tol(KIMI_LAYER_BYTES / 16e9, 1.0, 0.003);
    model_release(&m);
}
END_TEST

/* The article's count: 59 wafers, 35 holding linear-attention layers (34 × 2
 * and the odd one, which also takes the LM head), 24 holding one dense
 * layer with 44 − 15.97 = 28.03 GB left for KV. At 131072 tokens a request
 * keeps 131072 × 2 (K, V) × 8 heads × 128 × 1 byte = 268,435,456 B of KV per
 * dense layer: 28,032,842,752 / 268,435,456 = 104.4 → 104 requests. */
START_TEST(wafer_case_59_chips)
{
    struct plan_run r;
    ck_assert_int_eq(plan_of(&r, NULL), MP_OK);
    const struct plan *pl = &r.plan;
    ck_assert_int_eq(pl->chips, 59);
    ck_assert_int_eq(pl->stages, 59);
    int linear_only = 0, linear_two = 0, one_dense = 0, layers = 0;
    for (int s = 0; s < pl->stages; s++) {
        const struct plan_stage *st = &pl->stage[s];
        ck_assert(st->n_full == 0 || st->n_linear == 0); /* never mixed */
        if (st->n_full == 0) {
            linear_only++;
            linear_two += st->n_linear == 2;
        } else {
            ck_assert_int_eq(st->n_full, 1);
            one_dense++;
            ck_assert_double_eq(st->weights, KIMI_LAYER_BYTES);
            ck_assert_double_eq(WAFER - st->weights, 28032842752.0);
            ck_assert_double_eq(st->per_request, 268435456.0);
            ck_assert_int_eq(st->max_requests, 104);
        }
        ck_assert(st->weights + st->reserve <= WAFER);
        layers += st->n_full + st->n_linear;
    }
    ck_assert_int_eq(linear_only, 35);
    ck_assert_int_eq(linear_two, 34);
    ck_assert_int_eq(one_dense, 24);
    ck_assert_int_eq(layers, 93);
    /* Embedding on the first wafer, the head on the last. */
    ck_assert_int_eq(pl->stage[0].first, 0);
    ck_assert_int_eq(pl->stage[58].last, 94);
    ck_assert_int_eq(pl->concurrency, 104);
    int at;
    ck_assert_int_eq(plan_kv_bound(pl, &at), 104);
    ck_assert_int_eq(at, 1);
    plan_run_release(&r);
}
END_TEST

START_TEST(wafer_case_json)
{
    struct plan_run r;
    ck_assert_int_eq(plan_of(&r, NULL), MP_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    plan_report_json(f, &r);
    fclose(f);
    cJSON *o = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(cJSON_GetObjectItem(o, "chips")->valueint, 59);
    cJSON *pl = cJSON_GetObjectItem(o, "placement");
    ck_assert_int_eq(cJSON_GetArraySize(pl), 59);
    cJSON *dense = cJSON_GetArrayItem(pl, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(dense, "chip")->valueint, 1);
    cJSON *ls = cJSON_GetObjectItem(dense, "layers");
    ck_assert_int_eq(cJSON_GetArraySize(ls), 1);
    ck_assert_int_eq(cJSON_GetArrayItem(ls, 0)->valueint, 3); /* decoder 2 = model layer 3 */
    /* weights + 104 requests' KV: 15,967,157,248 + 104 × 268,435,456 */
    ck_assert_double_eq(cJSON_GetObjectItem(dense, "mem_bytes")->valuedouble,
                        KIMI_LAYER_BYTES + 104 * 268435456.0);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "kv_bound"), "requests")->valueint,
                     104);
    cJSON_Delete(o);
    free(buf);
    plan_run_release(&r);
}
END_TEST

/* A smaller target lets a linear layer share a dense layer's wafer: at 20
 * requests the dense reserve is 5.4 GB and 16 + 16 + 5.4 < 44. */
START_TEST(smaller_target_packs_tighter_larger_fails)
{
    struct plan_run r;
    const char *small[] = { "inference.concurrency=20", NULL };
    ck_assert_int_eq(plan_of(&r, small), MP_OK);
    ck_assert_int_lt(r.plan.chips, 59);
    for (int s = 0; s < r.plan.stages; s++)
        ck_assert(r.plan.stage[s].weights + r.plan.stage[s].reserve <= WAFER);
    plan_run_release(&r);
    /* 105 requests need 105 × 268 MB = 28.19 GB beside a 15.97 GB layer. */
    const char *big[] = { "inference.concurrency=105", NULL };
    ck_assert_int_eq(plan_of(&r, big), MP_ERR_INFEASIBLE);
    plan_run_release(&r);
    /* 16-bit weights: a 63.9 GB layer never fits a 44 GB wafer unsplit. */
    const char *wide[] = { "model.weight_bits=16", NULL };
    ck_assert_int_eq(plan_of(&r, wide), MP_ERR_INFEASIBLE);
    plan_run_release(&r);
    /* Splitting every layer over 2 chips (tp 2) halves each layer. */
    const char *tp[] = { "parallel.tp=2", NULL };
    ck_assert_int_eq(plan_of(&r, tp), MP_OK);
    ck_assert_int_eq(r.plan.chips, 2 * r.plan.stages);
    plan_run_release(&r);
}
END_TEST

/* Per-kind reserves (issue 15), placed evenly on 2 chips of the wafer
 * system so every stage's per-request figure is a sum a person can check. */
START_TEST(sliding_and_state_reserves)
{
    struct plan_run r;
    /* Mistral 7B slides over 4096 tokens: at 32768 tokens a stage of 16
     * layers keeps 16 × 4096 tokens × 4096 B (2 × 8 KV heads × 128 × 2 B),
     * not 16 × 32768 × 4096. */
    const char *mistral[] = { "model.config=mistral-7b", "model.weight_bits=16", "model.kv_bits=16",
                              "inference.placement=even", "parallel.pp=2",
                              "inference.context_len=32768", "inference.concurrency=1", NULL };
    ck_assert_int_eq(plan_of(&r, mistral), MP_OK);
    ck_assert_double_eq(r.plan.stage[0].kv_window_per_token, 16 * 4096.0);
    ck_assert_int_eq(r.plan.stage[0].kv_window, 4096);
    ck_assert_double_eq(r.plan.stage[0].per_request, 16 * 4096.0 * 4096);
    ck_assert_double_eq(plan_stage_request_bytes(&r.plan.stage[0], 1000), 16 * 1000.0 * 4096);
    ck_assert_int_eq(r.plan.stage[0].n_full, 16);
    plan_run_release(&r);
    /* Jamba: stage 0 holds layers 0-15, 14 Mamba layers of (8192 × 16 +
     * 8192 × 3) elements and 2 attention layers (4 and 12) of 2 × 8 × 128 per
     * token, at 16 bits. */
    const char *jamba[] = { "model.config=jamba-v0.1", "model.weight_bits=16", "model.kv_bits=16",
                            "inference.placement=even", "parallel.pp=2",
                            "inference.context_len=1000", "inference.concurrency=1", NULL };
    ck_assert_int_eq(plan_of(&r, jamba), MP_ERR_INFEASIBLE); /* 51.6B at 16 bits on 2 wafers */
    plan_run_release(&r);
    const char *jamba4[] = { "model.config=jamba-v0.1", "model.weight_bits=4", "model.kv_bits=16",
                             "inference.placement=even", "parallel.pp=2",
                             "inference.context_len=1000", "inference.concurrency=1", NULL };
    ck_assert_int_eq(plan_of(&r, jamba4), MP_OK);
    ck_assert_int_eq(r.plan.stage[0].n_linear, 14);
    ck_assert_int_eq(r.plan.stage[0].n_full, 2);
    ck_assert_double_eq(r.plan.stage[0].state_per_request, 14 * (8192.0 * 16 + 8192 * 3) * 2);
    ck_assert_double_eq(r.plan.stage[0].per_request,
                        14 * (8192.0 * 16 + 8192 * 3) * 2 + 2 * 1000.0 * 2 * 8 * 128 * 2);
    plan_run_release(&r);
}
END_TEST

/* placement = even: the training split over parallel.pp chips. */
START_TEST(even_placement_splits_decoders)
{
    struct plan_run r;
    const char *sets[] = { "inference.placement=even", "parallel.pp=93", NULL };
    ck_assert_int_eq(plan_of(&r, sets), MP_OK);
    ck_assert_int_eq(r.plan.stages, 93);
    for (int s = 0; s < 93; s++) ck_assert_int_eq(r.plan.stage[s].n_full + r.plan.stage[s].n_linear, 1);
    plan_run_release(&r);
    const char *few[] = { "inference.placement=even", "parallel.pp=40", NULL };
    ck_assert_int_eq(plan_of(&r, few), MP_ERR_INFEASIBLE); /* 3 layers = 48 GB on some */
    plan_run_release(&r);
}
END_TEST

/* The hybrid forms (models/model_pattern.c): Kimi's linear_attn_config
 * (full_attn_layers 1-based, the rest linear) and Qwen3-Next's
 * full_attention_interval; a layer_types list must agree with them. */
#define KIMI "\"model_type\":\"kimi_k3\","
#define QNEXT "\"model_type\":\"qwen3_next\",\"linear_num_key_heads\":2," \
              "\"linear_num_value_heads\":4,\"linear_key_head_dim\":16," \
              "\"linear_value_head_dim\":16,\"linear_conv_kernel_dim\":4,"
static int load(struct model *m, const char *family, const char *extra)
{
    char json[1024];
    snprintf(json, sizeof json, "{%s\"hidden_size\":64,\"intermediate_size\":128,"
             "\"num_attention_heads\":4,\"num_hidden_layers\":6,\"vocab_size\":100%s}",
             family, extra);
    struct mp_error err = { 0 };
    int rc = model_load_json(m, json, "t.json", &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    return rc;
}

static void expect_full(const struct model *m, const char *pattern)
{
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(m->layer[i + 1].attn == ATTN_LINEAR, pattern[i] == 'L');
}

START_TEST(hybrid_layer_forms)
{
    struct model m;
    ck_assert_int_eq(load(&m, KIMI, ",\"linear_attn_config\":{\"full_attn_layers\":[2,6]}"), MP_OK);
    expect_full(&m, "LFLLLF");
    model_release(&m);
    ck_assert_int_eq(load(&m, KIMI, ",\"linear_attn_config\":{\"full_attn_layers\":[1,4]}"), MP_OK);
    expect_full(&m, "FLLFLL");
    model_release(&m);
    ck_assert_int_eq(load(&m, QNEXT, ",\"full_attention_interval\":3"), MP_OK);
    expect_full(&m, "LLFLLF");
    model_release(&m);
    /* A list that says the same as the interval is read; one that does not
     * is an error naming both. */
    ck_assert_int_eq(load(&m, QNEXT, ",\"full_attention_interval\":3,\"layer_types\":["
                              "\"linear_attention\",\"linear_attention\",\"full_attention\","
                              "\"linear_attention\",\"linear_attention\",\"full_attention\"]"),
                     MP_OK);
    expect_full(&m, "LLFLLF");
    model_release(&m);
    struct mp_error err = { 0 };
    static const struct { const char *family, *extra, *key; } bad[] = {
        { KIMI, ",\"linear_attn_config\":{\"full_attn_layers\":[0]}", "full_attn_layers" },
        { KIMI, ",\"linear_attn_config\":{\"full_attn_layers\":[7]}", "full_attn_layers" },
        { KIMI, ",\"linear_attn_config\":{\"full_attn_layers\":[2,2]}", "full_attn_layers" },
        { KIMI, ",\"linear_attn_config\":{\"full_attn_layers\":3}", "full_attn_layers" },
        { KIMI, ",\"linear_attn_config\":{\"full_attn_layers\":[2],\"kda_layers\":[1,3,4,5]}",
          "kda_layers" },
        { KIMI, "", "linear_attn_config" },
        { QNEXT, ",\"full_attention_interval\":0", "full_attention_interval" },
        { QNEXT, ",\"full_attention_interval\":3,\"layer_types\":[\"full_attention\","
                 "\"full_attention\",\"full_attention\",\"full_attention\","
                 "\"full_attention\",\"linear_attention\"]", "full_attention_interval" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char json[768];
        snprintf(json, sizeof json, "{%s\"hidden_size\":64,\"intermediate_size\":128,"
                 "\"num_attention_heads\":4,\"num_hidden_layers\":6,\"vocab_size\":100%s}",
                 bad[i].family, bad[i].extra);
        ck_assert_int_eq(model_load_json(&m, json, "t.json", &err), MP_ERR_INPUT);
        ck_assert_ptr_nonnull(strstr(err.msg, "t.json"));
        ck_assert_msg(strstr(err.msg, bad[i].key), "case %zu: no %s in: %s", i, bad[i].key, err.msg);
    }
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("placement");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, kimi_k3_preset_sizes);
    tcase_add_test(tc, wafer_case_59_chips);
    tcase_add_test(tc, wafer_case_json);
    tcase_add_test(tc, smaller_target_packs_tighter_larger_fails);
    tcase_add_test(tc, even_placement_splits_decoders);
    tcase_add_test(tc, sliding_and_state_reserves);
    tcase_add_test(tc, hybrid_layer_forms);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(plan_suite)
