/* check_arch.c — the architecture table (models/arch_table.c), one test per
 * row: a small hand-written config in tests/data/models/<row>.json, its
 * parameter count by hand (below, term by term), its layer pattern and MoE
 * placement; then the reader's bad input and the JSON reader's extensions
 * (models/json_doc.h). */
#include "testutil.h"
#include "models/arch.h"
#include "models/json_doc.h"
#include "models/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Sizes shared by most configs: h 64, 4 heads of d 16, 2 KV heads, FFN 128,
 * vocabulary 1000. */
#define h 64.0
#define V 1000.0
#define EMB (V * h)                              /* 64,000: the embedding table */
#define ATTN (h * 64 + 2 * h * 32 + 64 * h)      /* q, k, v, o with 2 KV heads: 12,288 */
#define SWIGLU(f) (3 * h * (f))                  /* gate, up, down */
#define PLAIN(f) (2 * h * (f))                   /* up, down */
#define RMS2 (2 * h)                             /* two RMSNorms per layer: 128 */

struct row_case {
    const char *file;     /* tests/data/models/FILE.json */
    double total, active; /* by hand */
    const char *pattern;  /* per decoder: the mixer's letter, - for MLP-only */
    const char *mlp;      /* per decoder: D dense, E MoE, - none */
    const char *family;   /* the row read by */
};

/* The hand counts. Each line: what the layers hold, then the sum. */
static const struct row_case rows[] = {
    /* llama: 4 x (ATTN 12,288 + SwiGLU 24,576 + norms 128) = 147,968;
     * embedding 64,000; head 64,000 + final norm 64: 276,032. */
    {"llama", EMB + 4 * (ATTN + SWIGLU(128) + RMS2) + EMB + h, 0, "AAAA", "DDDD", "llama"},
    /* mistral: llama's counts; sliding_window 32 makes every layer slide. */
    {"mistral", 276032, 0, "SSSS", "DDDD", "mistral"},
    /* mixtral: 4 experts of SwiGLU 128, top 2, router 64 x 4:
     * layer 12,288 + 256 + 4 x 24,576 + 128 = 110,976; active 61,824. */
    {"mixtral", EMB + 4 * (ATTN + h * 4 + 4 * SWIGLU(128) + RMS2) + EMB + h,
     EMB + 4 * (ATTN + h * 4 + 2 * SWIGLU(128) + RMS2) + EMB + h, "AAAA", "EEEE", "mixtral"},
    /* phi3: llama's counts, sliding_window 47 on every layer. */
    {"phi3", 276032, 0, "SSSS", "DDDD", "phi3"},
    /* qwen2: q, k, v biases 64 + 2 x 32 = 128 per layer, tied (head: norm only):
     * 64,000 + 4 x 37,120 + 64 = 212,544. use_sliding_window false: full. */
    {"qwen2", EMB + 4 * (ATTN + 128 + SWIGLU(128) + RMS2) + h, 0, "AAAA", "DDDD", "qwen2"},
    /* qwen2_moe: decoder_sparse_step 2 makes layers 1 and 3 MoE, mlp_only_layers
     * [1] leaves only 3. Dense 37,120; MoE 12,288 + 128 + 128 + router 256 +
     * shared 3 x 64 x 64 = 12,288 + its gate 64 + 4 experts x 6,144 = 49,728;
     * active 2 experts fewer: 37,440. Untied. */
    {"qwen2_moe", EMB + 3 * 37120 + 49728 + EMB + h, EMB + 3 * 37120 + 49728 - 2 * 6144 + EMB + h,
     "AAAA", "DDDE", "qwen2_moe"},
    /* qwen3: q/k norms 2 x 16 per layer: 4 x 37,024 + 128,064 = 276,160;
     * use_sliding_window with max_window_layers 2: layers 2, 3 slide. */
    {"qwen3", EMB + 4 * (ATTN + 32 + SWIGLU(128) + RMS2) + EMB + h, 0, "AASS", "DDDD", "qwen3"},
    /* qwen3_moe: 8 experts of SwiGLU 32 (6,144), top 2, router 512:
     * layer 12,288 + 32 + 128 + 512 + 49,152 = 62,112; active 25,248. */
    {"qwen3_moe", EMB + 4 * (ATTN + 32 + RMS2 + h * 8 + 8 * SWIGLU(32)) + EMB + h,
     EMB + 4 * (ATTN + 32 + RMS2 + h * 8 + 2 * SWIGLU(32)) + EMB + h, "AAAA", "EEEE", "qwen3_moe"},
    /* qwen3_next, full_attention_interval 2: layers 1, 3 gated attention
     * (q_proj 2 x 64 wide: 8,192 + k, v 4,096 + o 4,096 + q/k norms 32 =
     * 16,416), layers 0, 2 Gated DeltaNet (nk 2, nv 4, dk = dv = 8, conv 4):
     * qkvz 64 x 96 = 6,144, ba 64 x 8 = 512, conv 64 x 4 = 256, dt_bias and
     * A_log 8, norm 8, out 32 x 64 = 2,048: 8,976. Every MLP MoE: router 256 +
     * shared 6,144 + gate 64 + 4 x 6,144 = 31,040 (active 18,752). */
    {"qwen3_next", EMB + 2 * (16416 + RMS2 + 31040) + 2 * (8976 + RMS2 + 31040) + EMB + h,
     EMB + 2 * (16416 + RMS2 + 18752) + 2 * (8976 + RMS2 + 18752) + EMB + h, "GAGA", "EEEE",
     "qwen3_next"},
    /* qwen2_vl: Qwen2 at the top level beside vision_config: qwen2's 212,544. */
    {"qwen2_vl", 212544, 0, "AAAA", "DDDD", "qwen2"},
    /* qwen2_5_vl: the same under text_config. */
    {"qwen2_5_vl", 212544, 0, "AAAA", "DDDD", "qwen2"},
    /* gemma: one KV head (k, v 64 x 16 each): attention 4,096 + 2,048 + 4,096
     * = 10,240; GeGLU is gated though hidden_act says gelu: 24,576; tied by
     * default: 64,000 + 4 x 34,944 + 64 = 203,840. */
    {"gemma", EMB + 4 * (10240 + SWIGLU(128) + RMS2) + h, 0, "AAAA", "DDDD", "gemma"},
    /* gemma2: four norms per layer (256): 64,000 + 4 x 35,072 + 64; sliding
     * and global alternate, layer 0 sliding. */
    {"gemma2", EMB + 4 * (10240 + SWIGLU(128) + 4 * h) + h, 0, "SASA", "DDDD", "gemma2"},
    /* gemma3_text: vocab_size absent, so Gemma3TextConfig's 262,208; tied;
     * 6 layers of 12,288 + q/k norms 32 + 24,576 + 4 norms 256 = 37,152;
     * every 6th layer global. */
    {"gemma3_text", 262208 * h + 6 * (ATTN + 32 + SWIGLU(128) + 4 * h) + h, 0, "SSSSSA",
     "DDDDDD", "gemma3_text"},
    /* gemma3: the same under text_config, read as gemma3_text. */
    {"gemma3", 17004288, 0, "SSSSSA", "DDDDDD", "gemma3_text"},
    /* cohere: one LayerNorm without bias (64) per layer, use_qk_norm: per-head
     * norms (4 + 2) x 16 = 96; tied: 64,000 + 4 x 37,024 + 64. */
    {"cohere", EMB + 4 * (ATTN + 96 + SWIGLU(128) + h) + h, 0, "AAAA", "DDDD", "cohere"},
    /* cohere2: no q/k norms; sliding_window_pattern 4: layer 3 global. */
    {"cohere2", EMB + 4 * (ATTN + SWIGLU(128) + h) + h, 0, "SSSA", "DDDD", "cohere2"},
    /* gpt2: 12h^2 + 13h per layer (49,984), embedding + 128 positions
     * (1,128 x 64), head the final LayerNorm 2h (tied). */
    {"gpt2", (V + 128) * h + 2 * (12 * h * h + 13 * h) + 2 * h, 0, "AA", "DD", "gpt2"},
    /* gpt_neox: 4 KV heads (= heads): attention 4h^2 + q, k, v, o biases 4h;
     * GeLU 256 with biases 256 + 64; two LayerNorms 256: 49,984 per layer;
     * untied, final LayerNorm 128: 64,000 + 99,968 + 64,000 + 128. */
    {"gpt_neox", EMB + 2 * (4 * h * h + 4 * h + PLAIN(256) + 256 + h + 4 * h) + EMB + 2 * h, 0,
     "AA", "DD", "gpt_neox"},
    /* starcoder2: attention 12,288 + biases 128 + 64; GeLU 256 + biases 320;
     * LayerNorms 256; tied, final LayerNorm 128. */
    {"starcoder2", EMB + 4 * (ATTN + 192 + PLAIN(256) + 320 + 4 * h) + 2 * h, 0, "SSSS", "DDDD",
     "starcoder2"},
    /* opt: as gpt_neox's layers (49,984), positions 128 + OPT's 2 extra rows,
     * tied: (1,000 + 130) x 64 + 2 x 49,984 + 128. */
    {"opt", (V + 130) * h + 2 * 49984 + 2 * h, 0, "AA", "DD", "opt"},
    /* bloom: ALiBi (no positions), a LayerNorm after the embedding (128),
     * layers 12h^2 + 13h, tied: 64,128 + 99,968 + 128. */
    {"bloom", EMB + 2 * h + 2 * (12 * h * h + 13 * h) + 2 * h, 0, "AA", "DD", "bloom"},
    /* gpt_oss: attention 12,288 + biases 128 + 64 + 4 sink logits = 12,484;
     * router 256 + bias 4; 4 experts of SwiGLU 32 with biases (2 x 32 + 64):
     * 6,272 each; top 2: layer 37,960, active 25,416; untied. */
    {"gpt_oss", EMB + 2 * (12484 + 260 + 4 * 6272 + RMS2) + EMB + h,
     EMB + 2 * (12484 + 260 + 2 * 6272 + RMS2) + EMB + h, "SA", "EE", "gpt_oss"},
    /* deepseek_v2, MLA without q_lora: q 64 x 4 x 12 = 3,072, kv_a 64 x 20 =
     * 1,280 + its norm 16, kv_b 16 x 4 x 16 = 1,024, o 32 x 64 = 2,048:
     * 7,440. Layer 0 dense (first_k_dense_replace 1): 7,440 + 24,576 + 128;
     * layers 1, 2 MoE: router 256, 1 shared + 4 routed of 6,144: 38,544
     * (active 26,256). */
    {"deepseek_v2", EMB + (7440 + SWIGLU(128) + RMS2) + 2 * (7440 + 256 + 5 * 6144 + RMS2) + EMB + h,
     EMB + (7440 + SWIGLU(128) + RMS2) + 2 * (7440 + 256 + 3 * 6144 + RMS2) + EMB + h, "AAA",
     "DEE", "deepseek_v2"},
    /* deepseek_v3, q_lora 24: q_a 1,536 + norm 24 + q_b 24 x 48 = 1,152, kv
     * 1,280 + 16 + 1,024, o 2,048: 7,080; the router's score bias 4 per MoE
     * layer. (The MTP module is not in the total: check_model.c.) */
    {"deepseek_v3", EMB + (7080 + SWIGLU(128) + RMS2) + 2 * (7080 + 260 + 5 * 6144 + RMS2) + EMB + h,
     EMB + (7080 + SWIGLU(128) + RMS2) + 2 * (7080 + 260 + 3 * 6144 + RMS2) + EMB + h, "AAA",
     "DEE", "deepseek_v3"},
    /* kimi_k2: DeepSeek-V3's layout: the same sums. */
    {"kimi_k2", 236224, 211648, "AAA", "DEE", "kimi_k2"},
    /* kimi_linear: MLA (7,440) at layers 2, 4 (1-based), KDA at 1, 3:
     * q, k, v 3 x 64 x 64 = 12,288; f_proj and g_proj low-rank 2 x (64 x 16 +
     * 16 x 64) = 4,096; b_proj 64 x 4 = 256; o_proj 4,096; convs 3 x 64 x 4 =
     * 768; A_log 4, dt_bias 64, g bias 64, o_norm 16: 21,652. Layer 0 dense,
     * the rest MoE (1 shared + 4 routed of 6,144, router 256). */
    {"kimi_linear", EMB + (21652 + SWIGLU(128) + RMS2) + 2 * (7440 + 256 + 5 * 6144 + RMS2) +
                    (21652 + 256 + 5 * 6144 + RMS2) + EMB + h,
     EMB + (21652 + SWIGLU(128) + RMS2) + 2 * (7440 + 256 + 3 * 6144 + RMS2) +
     (21652 + 256 + 3 * 6144 + RMS2) + EMB + h, "KAKA", "DEEE", "kimi_linear"},
    /* kimi_k3: linear layers with attention's projections (12,288); every
     * layer MoE: 12,288 + 256 + 5 x 6,144 + 128 = 43,392 (active 31,104). */
    {"kimi_k3", EMB + 4 * (ATTN + 256 + 5 * 6144 + RMS2) + EMB + h,
     EMB + 4 * (ATTN + 256 + 3 * 6144 + RMS2) + EMB + h, "LALA", "EEEE", "kimi_k3"},
    /* minimax: lightning layers qkv 64 x 192 = 12,288, output gate 4,096, out
     * 4,096, norm 64: 20,544; softmax layers 12,288; every MLP 4 experts of
     * 6,144, top 2, router 256. */
    {"minimax", EMB + 2 * (20544 + 256 + 4 * 6144 + RMS2) + 2 * (ATTN + 256 + 4 * 6144 + RMS2) + EMB + h,
     EMB + 2 * (20544 + 256 + 2 * 6144 + RMS2) + 2 * (ATTN + 256 + 2 * 6144 + RMS2) + EMB + h,
     "NANA", "EEEE", "minimax"},
    /* minimax_text_01 and minimax_m1: attn_type_list [0, 1, 0, 1]: the same. */
    {"minimax_text_01", 293568, 244416, "NANA", "EEEE", "minimax_text_01"},
    {"minimax_m1", 293568, 244416, "NANA", "EEEE", "minimax_m1"},
    /* nemotron_h "M-*-M-", one norm (64) per layer. Mamba-2 (8 heads x 16 =
     * 128 inner, state 8, 2 groups, conv 4): in_proj 64 x (256 + 32 + 8) =
     * 18,944, out_proj 8,192, conv 160 x 4 + bias 160, dt_bias, A_log, D 24,
     * gated norm 128: 28,088. MLP layers squared ReLU, plain: 16,384. The
     * attention layer 12,288. */
    {"nemotron_h", EMB + 2 * (28088 + h) + 3 * (PLAIN(128) + h) + (ATTN + h) + EMB + h, 0,
     "M-A-M-", "-D-D-D", "nemotron_h"},
    /* jamba: attention at layers 1, 3 (period 2, offset 1), MoE at 0, 2 (period 2,
     * offset 0). Mamba-1, inner 128, state 4, conv 4, dt_rank auto = 64/16 = 4:
     * in_proj 16,384, x_proj 128 x 12 = 1,536, dt_proj 512 + bias 128, out
     * 8,192, conv 512 + bias 128, A_log 512, D 128, dt/B/C norms 12: 28,044. */
    {"jamba", EMB + 2 * (28044 + 256 + 4 * SWIGLU(128) + RMS2) + 2 * (ATTN + SWIGLU(128) + RMS2) + EMB + h,
     EMB + 2 * (28044 + 256 + 2 * SWIGLU(128) + RMS2) + 2 * (ATTN + SWIGLU(128) + RMS2) + EMB + h,
     "MAMA", "EDED", "jamba"},
    /* llama4_text: chunked attention (chunk 16) on the RoPE layers 0-2, full on
     * NoPE layer 3; MoE every 2nd layer (1, 3): router 256, one shared + 4
     * routed of width 32 (6,144 each), top 1; dense layers intermediate_size_mlp
     * 128; the L2 q/k norm has no weights. */
    {"llama4_text", EMB + 2 * (ATTN + SWIGLU(128) + RMS2) + 2 * (ATTN + 256 + 5 * 6144 + RMS2) + EMB + h,
     EMB + 2 * (ATTN + SWIGLU(128) + RMS2) + 2 * (ATTN + 256 + 2 * 6144 + RMS2) + EMB + h,
     "CCCA", "DEDE", "llama4_text"},
    {"llama4", 288832, 251968, "CCCA", "DEDE", "llama4_text"},
    /* mistral3 and llava: a Mistral / Llama under text_config: llama's 276,032. */
    {"mistral3", 276032, 0, "AAAA", "DDDD", "mistral"},
    {"llava", 276032, 0, "AAAA", "DDDD", "llama"},
};

static void pattern_of(const struct model *m, char *mix, char *mlp)
{
    for (int l = 1; l <= m->decoders; l++) {
        const struct layer *L = &m->layer[l];
        mix[l - 1] = L->mixer == MIXER_NONE ? '-' : mixer_info(L->mixer)->letter;
        mlp[l - 1] = L->mlp == MLP_MOE ? 'E' : L->mlp == MLP_DENSE ? 'D' : '-';
    }
    mix[m->decoders] = mlp[m->decoders] = '\0';
}

static void load_row(struct model *m, const char *file)
{
    char rel[128];
    snprintf(rel, sizeof rel, "tests/data/models/%s.json", file);
    struct mp_error err = {0};
    int rc = model_load(m, mp_test_path(rel), &err);
    ck_assert_msg(rc == 0, "%s: %s", file, err.msg);
}

START_TEST(every_row_by_hand)
{
    const struct row_case *c = &rows[_i];
    struct model m;
    load_row(&m, c->file);
    ck_assert_str_eq(m.arch, c->family);
    ck_assert_msg(model_params(&m) == c->total, "%s: %.0f parameters, %.0f by hand", c->file,
                  model_params(&m), c->total);
    double active = c->active ? c->active : c->total;
    ck_assert_msg(model_active_params(&m) == active, "%s: %.0f active, %.0f by hand", c->file,
                  model_active_params(&m), active);
    char mix[64], mlp[64];
    pattern_of(&m, mix, mlp);
    ck_assert_msg(!strcmp(mix, c->pattern), "%s: pattern %s, expected %s", c->file, mix, c->pattern);
    ck_assert_msg(!strcmp(mlp, c->mlp), "%s: mlp %s, expected %s", c->file, mlp, c->mlp);
    model_release(&m);
}
END_TEST

/* Every row of the table that is read has a case above, and every refused
 * row refuses with its reason. */
START_TEST(every_row_has_a_test)
{
    for (const struct arch_row *r = arch_rows; r->model_type; r++) {
        if (r->refused) {
            char json[256];
            snprintf(json, sizeof json, "{\"model_type\": \"%s\", \"hidden_size\": 64}", r->model_type);
            struct model m;
            struct mp_error err = {0};
            ck_assert_int_eq(model_load_json(&m, json, "r.json", &err), MP_ERR_INPUT);
            ck_assert_msg(strstr(err.msg, "is not read") && strstr(err.msg, r->refused), "%s: %s",
                          r->model_type, err.msg);
            continue;
        }
        bool found = false;
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
            found |= !strcmp(rows[i].file, r->model_type);
        ck_assert_msg(found, "row %s has no hand-counted config in tests/data/models/", r->model_type);
    }
}
END_TEST

/* ---------------- what else the rows read ---------------- */

START_TEST(defaults_and_unused_keys)
{
    struct model m;
    /* gemma3's text_config leaves vocab_size and tie_word_embeddings out:
     * the family defaults are taken and said; vision_config is not read. */
    load_row(&m, "gemma3");
    ck_assert_int_eq(m.vocab, 262208);
    ck_assert(m.tied_embeddings);
    bool vocab = false;
    for (int i = 0; i < m.defaults.kept; i++)
        vocab |= strstr(m.defaults.names[i], "text_config.vocab_size = 262208") != NULL;
    ck_assert(vocab);
    ck_assert_int_eq(m.unused.n, 1);
    ck_assert_str_eq(m.unused.names[0], "vision_config");
    ck_assert_ptr_nonnull(m.wrapper);
    ck_assert_str_eq(m.wrapper->model_type, "gemma3");
    model_release(&m);
    /* nemotron_h: time_step_limit (with Infinity) changes no size. */
    load_row(&m, "nemotron_h");
    bool ts = false;
    for (int i = 0; i < m.ignored.kept; i++) ts |= !strcmp(m.ignored.names[i], "time_step_limit");
    ck_assert(ts);
    ck_assert_int_eq(m.unused.n, 0);
    model_release(&m);
    /* jamba's mamba_dt_rank "auto" = ceil(64 / 16). */
    load_row(&m, "jamba");
    ck_assert_int_eq(m.ssm.dt_rank, 4);
    ck_assert_int_eq(m.ssm.inner, 128);
    model_release(&m);
}
END_TEST

START_TEST(model_family_key_reads_an_unknown_type)
{
    /* A model_type mpsim does not know, read by a row the user names. */
    const char *json = "{\"model_type\": \"my_llama\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                       "\"num_key_value_heads\": 2, \"intermediate_size\": 128,"
                       "\"num_hidden_layers\": 4, \"vocab_size\": 1000}";
    struct model m;
    struct mp_error err = {0};
    ck_assert_int_eq(model_load_json(&m, json, "u.json", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "u.json:1: key model_type: unknown family \"my_llama\"") &&
                  strstr(err.msg, "llama, mistral") && strstr(err.msg, "model.family"), "%s",
                  err.msg);
    ck_assert_int_eq(model_load_json_as(&m, json, strlen(json), "u.json", "llama", &err), MP_OK);
    ck_assert_double_eq(model_params(&m), 276032);
    model_release(&m);
    ck_assert_int_eq(model_load_json_as(&m, json, strlen(json), "u.json", "lama", &err),
                     MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "model.family = lama") && strstr(err.msg, "did you mean llama"),
                  "%s", err.msg);
    ck_assert_int_eq(model_load_json_as(&m, json, strlen(json), "u.json", "t5", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "encoder-decoder"), "%s", err.msg);
}
END_TEST

/* ---------------- bad input: file, key, what was expected ---------------- */

static void expect_bad_text(const char *text, const char *n1, const char *n2)
{
    const char *p = mp_test_tmpfile(".json", text);
    struct model m;
    struct mp_error err = {0};
    ck_assert_int_eq(model_load(&m, p, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, p), "no file in: %s", err.msg);
    ck_assert_msg(strstr(err.msg, n1), "no '%s' in: %s", n1, err.msg);
    if (n2) ck_assert_msg(strstr(err.msg, n2), "no '%s' in: %s", n2, err.msg);
    ck_assert_ptr_null(m.layer);
}

START_TEST(bad_text_config)
{
    /* gemma3 whose text_config lacks hidden_size: the key under text_config. */
    expect_bad_text("{\"model_type\": \"gemma3\",\n \"text_config\": {\n  \"num_attention_heads\": 4,\n"
                    "  \"num_hidden_layers\": 2, \"intermediate_size\": 8}}",
                    "key text_config.hidden_size: missing", "positive integer");
    /* ... and one with no text_config at all. */
    expect_bad_text("{\"model_type\": \"gemma3\", \"vision_config\": {}}", "key hidden_size: missing",
                    "gemma3 keeps its language model under text_config");
    /* A wrapper whose inner family is unknown. */
    expect_bad_text("{\"model_type\": \"llava\", \"text_config\": {\"model_type\": \"vicuna\"}}",
                    "key text_config.model_type", "vicuna");
}
END_TEST

START_TEST(bad_two_spellings)
{
    /* GPT-2's n_embd and hidden_size name one key. */
    expect_bad_text("{\"model_type\": \"gpt2\", \"n_embd\": 64,\n\"hidden_size\": 128, \"n_head\": 4,"
                    " \"n_layer\": 2, \"n_positions\": 16, \"vocab_size\": 10}",
                    ":2: key hidden_size: n_embd and hidden_size are one key spelled twice and "
                    "disagree (64 vs 128)", NULL);
    /* gpt-oss writes experts_per_token beside num_experts_per_tok. */
    expect_bad_text("{\"model_type\": \"gpt_oss\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"num_hidden_layers\": 2, \"vocab_size\": 10, \"intermediate_size\": 8,"
                    " \"num_local_experts\": 4, \"num_experts_per_tok\": 2,\n\"experts_per_token\": 4}",
                    ":2: key experts_per_token", "expected one value");
}
END_TEST

#define QNEXT_HEAD "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"num_attention_heads\": 4," \
    " \"intermediate_size\": 8, \"num_hidden_layers\": 6, \"vocab_size\": 10, \"mamba_num_heads\": 2," \
    " \"mamba_head_dim\": 32, \"ssm_state_size\": 4, \"n_groups\": 1, \"conv_kernel\": 4,\n"

START_TEST(bad_pattern_lengths)
{
    expect_bad_text(QNEXT_HEAD "\"hybrid_override_pattern\": \"M-*-M\"}",
                    ":2: key hybrid_override_pattern: 5 entries, expected 6", "6 decoder layers");
    expect_bad_text(QNEXT_HEAD "\"hybrid_override_pattern\": \"M-*-MX\"}",
                    "key hybrid_override_pattern: character 5 is 'X'", "M, *, - or E");
    expect_bad_text(QNEXT_HEAD "\"hybrid_override_pattern\": \"M-*-ME\"}",
                    "key hybrid_override_pattern: layer 5 is E", "no experts");
    expect_bad_text("{\"model_type\": \"minimax_text_01\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"intermediate_size\": 8, \"num_hidden_layers\": 4, \"vocab_size\": 10,\n"
                    "\"attn_type_list\": [0, 1, 0]}", ":2: key attn_type_list: 3 entries, expected 4",
                    NULL);
    expect_bad_text("{\"model_type\": \"llama4_text\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"intermediate_size_mlp\": 8, \"num_hidden_layers\": 4, \"vocab_size\": 10,\n"
                    "\"no_rope_layers\": [1, 1, 0]}", ":2: key no_rope_layers: 3 entries, expected 4", NULL);
    expect_bad_text("{\"model_type\": \"gpt_oss\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"intermediate_size\": 8, \"num_hidden_layers\": 4, \"vocab_size\": 10,\n"
                    "\"layer_types\": [\"sliding_attention\"], \"sliding_window\": 8}",
                    ":2: key layer_types: expected a list of 4 layer types", "got 1");
    /* Sliding layers without a window. */
    expect_bad_text("{\"model_type\": \"gpt_oss\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"intermediate_size\": 8, \"num_hidden_layers\": 2, \"vocab_size\": 10,\n"
                    "\"layer_types\": [\"sliding_attention\", \"full_attention\"]}",
                    "key sliding_window: missing", "sliding layers");
    /* A dense family has no linear attention. */
    expect_bad_text("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"intermediate_size\": 8, \"num_hidden_layers\": 2, \"vocab_size\": 10,\n"
                    "\"layer_types\": [\"linear_attention\", \"full_attention\"]}",
                    ":2: key layer_types: entry 0: linear_attention, but llama has no linear-attention layers", NULL);
    /* Jamba's offset must fall inside its period. */
    expect_bad_text("{\"model_type\": \"jamba\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"intermediate_size\": 8, \"num_hidden_layers\": 2, \"vocab_size\": 10,\n"
                    "\"attn_layer_period\": 2, \"attn_layer_offset\": 2}",
                    ":2: key attn_layer_offset: 2 is not below attn_layer_period 2", NULL);
}
END_TEST

START_TEST(bad_refused_and_unknown)
{
    expect_bad_text("{\"model_type\": \"t5\", \"d_model\": 512}",
                    ":1: key model_type: t5 is not read: encoder-decoder", NULL);
    expect_bad_text("{\"model_type\": \"falcon\", \"hidden_size\": 64}", "falcon is not read", NULL);
    expect_bad_text("{\"architectures\": [\"T5ForConditionalGeneration\"], \"d_model\": 512}",
                    "key architectures: T5ForConditionalGeneration is no class of a family read",
                    NULL);
    expect_bad_text("{\"d_model\": 512}", "key model_type: missing", "model.family");
    expect_bad_text("{\"model_type\": \"qwen3\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"intermediate_size\": 8, \"num_hidden_layers\": 2, \"vocab_size\": 10,"
                    " \"model_type\": \"llama\"}", "key model_type: expected once, got it twice", NULL);
    expect_bad_text("{\"model_type\": \"opt\", \"hidden_size\": 64, \"num_attention_heads\": 4,"
                    " \"ffn_dim\": 8, \"num_hidden_layers\": 2, \"vocab_size\": 10,"
                    " \"max_position_embeddings\": 8, \"word_embed_proj_dim\": 32}",
                    "key word_embed_proj_dim: 32 differs from hidden_size 64", "OPT-350m");
}
END_TEST

/* ---------------- the JSON reader ---------------- */

static int parse(const char *text, struct json_doc *d, struct mp_error *err)
{
    return json_doc_parse(d, text, strlen(text), "j.json", err);
}

START_TEST(json_python_literals_and_bom)
{
    struct json_doc d;
    struct mp_error err = {0};
    /* NaN, Infinity and -Infinity as Python's json module writes them,
     * inside lists and as values; lines stay put. */
    const char *t = "\xEF\xBB\xBF{\"a\": [0.0, Infinity],\n \"b\": -Infinity, \"c\": NaN,\n"
                    " \"d\": [1, {\"e\": NaN}, 2.5], \"s\": \"NaN Infinity\"}";
    ck_assert_int_eq(parse(t, &d, &err), MP_OK);
    const cJSON *a = json_doc_get(&d, d.root, "a");
    ck_assert(isinf(cJSON_GetArrayItem(a, 1)->valuedouble) && cJSON_GetArrayItem(a, 1)->valuedouble > 0);
    ck_assert_double_eq(cJSON_GetArrayItem(a, 0)->valuedouble, 0);
    ck_assert(isinf(json_doc_get(&d, d.root, "b")->valuedouble) &&
              json_doc_get(&d, d.root, "b")->valuedouble < 0);
    ck_assert(isnan(json_doc_get(&d, d.root, "c")->valuedouble));
    const cJSON *dd = json_doc_get(&d, d.root, "d");
    ck_assert_double_eq(cJSON_GetArrayItem(dd, 0)->valuedouble, 1);
    ck_assert(isnan(json_doc_get(&d, cJSON_GetArrayItem(dd, 1), "e")->valuedouble));
    ck_assert_double_eq(cJSON_GetArrayItem(dd, 2)->valuedouble, 2.5);
    ck_assert_str_eq(json_doc_get(&d, d.root, "s")->valuestring, "NaN Infinity");
    ck_assert_int_eq(json_doc_key_line(&d, d.root, "b"), 2);
    ck_assert_int_eq(json_doc_key_line(&d, d.root, "d"), 3);
    json_doc_release(&d);
    /* Literals glued to other text stay invalid. */
    ck_assert_int_eq(parse("{\"a\": 1Infinity}", &d, &err), MP_ERR_INPUT);
    ck_assert_int_eq(parse("{\"a\": Infinityx}", &d, &err), MP_ERR_INPUT);
    ck_assert_int_eq(parse("{\"a\": nan}", &d, &err), MP_ERR_INPUT);
}
END_TEST

START_TEST(json_bounds)
{
    struct json_doc d;
    struct mp_error err = {0};
    /* A depth bomb: 65 levels is past the bound, 64 is not. */
    char deep[400] = "{\"a\":";
    for (int i = 0; i < 63; i++) strcat(deep, "[");
    strcat(deep, "1");
    for (int i = 0; i < 63; i++) strcat(deep, "]");
    strcat(deep, "}");
    ck_assert_int_eq(parse(deep, &d, &err), MP_OK);
    json_doc_release(&d);
    char deeper[400] = "{\"a\":\n";
    for (int i = 0; i < 64; i++) strcat(deeper, "[");
    ck_assert_int_eq(parse(deeper, &d, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "j.json:2: nesting deeper than 64 levels"), "%s", err.msg);

    /* A size bomb: refused by its size before it is read. */
    char path[] = "/tmp/mpsim-bomb-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)JSON_DOC_MAX_BYTES + 1), 0);
    close(fd);
    struct model m;
    ck_assert_int_eq(model_load(&m, path, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "more than the 32 MiB bound"), "%s",
                  err.msg);
    unlink(path);
}
END_TEST

START_TEST(json_many_keys_load)
{
    /* 300,000 keys beside a valid config: loaded (sorted once, no pairwise
     * duplicate check), and every one of them a warning. */
    size_t cap = 300000 * 24 + 512, n = 0;
    char *t = malloc(cap);
    n += (size_t)snprintf(t + n, cap - n, "{\"model_type\": \"llama\", \"hidden_size\": 64,"
                          " \"num_attention_heads\": 4, \"intermediate_size\": 8,"
                          " \"num_hidden_layers\": 2, \"vocab_size\": 10");
    for (int i = 0; i < 300000; i++) n += (size_t)snprintf(t + n, cap - n, ", \"k%d\": %d", i, i);
    n += (size_t)snprintf(t + n, cap - n, "}");
    struct model m;
    struct mp_error err = {0};
    ck_assert_int_eq(model_load_json(&m, t, "many.json", &err), MP_OK);
    ck_assert_int_eq(m.unused.n, 300000);
    ck_assert_str_eq(m.unused.names[0], "k0");
    model_release(&m);
    /* The same with one key twice: found, with both lines. */
    memcpy(t + n - 1, ", \"k7\": 1}", 11);
    ck_assert_int_eq(model_load_json(&m, t, "many.json", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "key k7: expected once, got it twice (lines 1 and 1)"), "%s",
                  err.msg);
    free(t);
}
END_TEST

Suite *arch_suite(void)
{
    Suite *s = suite_create("arch");
    TCase *tc = tcase_create("rows");
    tcase_add_loop_test(tc, every_row_by_hand, 0, (int)(sizeof rows / sizeof *rows));
    tcase_add_test(tc, every_row_has_a_test);
    tcase_add_test(tc, defaults_and_unused_keys);
    tcase_add_test(tc, model_family_key_reads_an_unknown_type);
    suite_add_tcase(s, tc);
    tc = tcase_create("bad_input");
    tcase_add_test(tc, bad_text_config);
    tcase_add_test(tc, bad_two_spellings);
    tcase_add_test(tc, bad_pattern_lengths);
    tcase_add_test(tc, bad_refused_and_unknown);
    suite_add_tcase(s, tc);
    tc = tcase_create("json");
    tcase_add_test(tc, json_python_literals_and_bom);
    tcase_add_test(tc, json_bounds);
    tcase_add_test(tc, json_many_keys_load);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(arch_suite)
