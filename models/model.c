/* model.c — read a Hugging Face config.json into a layer list (the pricing
 * of a layer is model_cost.c). See model.h for the API and models/README.md for
 * the keys read per architecture and the presets' parameter counts.
 *
 * Two config styles are read:
 *  - GPT-2 / Megatron (n_embd, n_head, n_layer, ...): LayerNorm with bias,
 *    biases on every linear, GeLU MLP, learned positions, tied embeddings;
 *    a layer holds 12h^2 + 13h parameters.
 *  - Llama family (hidden_size, num_attention_heads, ...), which covers
 *    Mistral, Mixtral, Qwen2(-MoE), DeepSeek-V2/V3 and unknown architectures
 *    that use the same standard key names: RMSNorm, no biases (Qwen2: q/k/v
 *    biases), gated (SwiGLU) MLP when hidden_act is silu/swish/swiglu. */
#include "model.h"

#include <assert.h>
#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest integer any config.json key may hold (2^26), and the most
 * decoder layers a model may have (each gets a struct layer). */
#define MODEL_INT_MAX (1 << 26)
#define MODEL_MAX_LAYERS 100000

/* ------------------------------------------------------------------ */
/* Reading the JSON: every message names the origin, the line when we can
 * find it, the key, and what was expected. */

struct reader {
    const char *origin;   /* file name for messages */
    const char *text;     /* the JSON text, to find a key's line */
    const cJSON *root;
    struct mp_error *err;
};

/* 1-based line of position `pos` in `text`. */
static int line_of(const char *text, const char *pos)
{
    int line = 1;
    for (const char *p = text; p < pos && *p; p++)
        if (*p == '\n') line++;
    return line;
}

/* Line of the first `"key" :` in the text, 0 if absent. Only top-level keys
 * are looked up, and HF configs name each once, so the first hit is it. */
static int key_line_nth(const struct reader *r, const char *key, int nth)
{
    size_t n = strlen(key);
    for (const char *p = strchr(r->text, '"'); p; p = strchr(p + 1, '"')) {
        if (strncmp(p + 1, key, n) != 0 || p[n + 1] != '"') continue;
        const char *q = p + n + 2;
        while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n') q++;
        if (*q == ':' && nth-- == 0) return line_of(r->text, p);
    }
    return 0;
}

static int key_line(const struct reader *r, const char *key)
{
    return key_line_nth(r, key, 0);
}

/* "FILE:LINE: key K: " or "FILE: key K: " as a prefix for key errors. */
static int key_fail(const struct reader *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int key_fail(const struct reader *r, const char *key, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int line = key_line(r, key);
    if (line > 0)
        return mp_fail(r->err, MP_ERR_INPUT, "%s:%d: key %s: %s", r->origin, line, key, what);
    return mp_fail(r->err, MP_ERR_INPUT, "%s: key %s: %s", r->origin, key, what);
}

/* A short rendering of a JSON value for "got ..." in messages. */
static void show_value(const cJSON *v, char *buf, size_t size)
{
    char *s = cJSON_PrintUnformatted(v);
    if (!s) { snprintf(buf, size, "(unprintable)"); return; }
    if (strlen(s) >= size && size > 4) {
        memcpy(buf, s, size - 4);
        strcpy(buf + size - 4, "...");
    } else {
        snprintf(buf, size, "%s", s);
    }
    cJSON_free(s);
}

/* A key whose value is JSON null is treated as absent: HF writes null for
 * "not set" (n_inner, head_dim, q_lora_rank, ...). */
static const cJSON *get(const struct reader *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->root, key);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

/* Read an integer >= `min`. Absent: `*out = fallback` when !required, else an
 * error. Integral floats (4096.0) are accepted; HF writes them sometimes. */
static int get_int(const struct reader *r, const char *key, bool required,
                   int fallback, int min, int *out)
{
    const char *want = min > 0 ? "a positive integer" : "a non-negative integer";
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->root, key);
    if (!v || (cJSON_IsNull(v) && !required)) {
        if (required) return key_fail(r, key, "missing; expected %s", want);
        *out = fallback;
        return 0;
    }
    char shown[64];
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || d != floor(d) || d > INT_MAX || d < INT_MIN) {
        show_value(v, shown, sizeof shown);
        return key_fail(r, key, "expected %s, got %s", want, shown);
    }
    /* No real model has a width, count or length near this; the cap keeps
     * int sums and small multiples of these fields (4 × n_embd, ranks added
     * to head widths) from overflowing, and a typo from allocating. */
    if (d > MODEL_INT_MAX)
        return key_fail(r, key, "expected %s of at most %d, got %.0f", want, MODEL_INT_MAX, d);
    if (d < min) return key_fail(r, key, "expected %s, got %.0f", want, d);
    *out = (int)d;
    return 0;
}

static int get_bool(const struct reader *r, const char *key, bool fallback, bool *out)
{
    const cJSON *v = get(r, key);
    if (!v) { *out = fallback; return 0; }
    if (!cJSON_IsBool(v)) {
        char shown[64];
        show_value(v, shown, sizeof shown);
        return key_fail(r, key, "expected true or false, got %s", shown);
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

/* String value or NULL when absent; a non-string is an error. */
static int get_str(const struct reader *r, const char *key, const char **out)
{
    const cJSON *v = get(r, key);
    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsString(v)) {
        char shown[64];
        show_value(v, shown, sizeof shown);
        return key_fail(r, key, "expected a string, got %s", shown);
    }
    *out = v->valuestring;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Architecture: "architectures"[0] when present (what transformers itself
 * dispatches on), else "model_type". The arch string only names the family;
 * MoE and MLA are recognised by their keys, so relatives (Qwen3-MoE,
 * DeepSeek-V2) load without a table entry. */

static const struct { const char *cls, *arch; } arch_classes[] = {
    {"LlamaForCausalLM", "llama"},        {"MistralForCausalLM", "mistral"},
    {"MixtralForCausalLM", "mixtral"},    {"Qwen2ForCausalLM", "qwen2"},
    {"Qwen2MoeForCausalLM", "qwen2_moe"}, {"DeepseekV2ForCausalLM", "deepseek_v2"},
    {"DeepseekV3ForCausalLM", "deepseek_v3"}, {"GPT2LMHeadModel", "gpt2"},
    {"GPT2Model", "gpt2"},                {"MegatronGPTModel", "gpt2"},
    {NULL, NULL},
};

static int detect_arch(const struct reader *r, struct model *m)
{
    const char *type = NULL;
    int rc = get_str(r, "model_type", &type);
    if (rc) return rc;
    const cJSON *archs = get(r, "architectures");
    if (archs) {
        const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
        if (!first || !cJSON_IsString(first)) {
            char shown[64];
            show_value(archs, shown, sizeof shown);
            return key_fail(r, "architectures", "expected a list of class names, got %s", shown);
        }
        for (int i = 0; arch_classes[i].cls; i++)
            if (strcmp(first->valuestring, arch_classes[i].cls) == 0) {
                snprintf(m->arch, sizeof m->arch, "%s", arch_classes[i].arch);
                return 0;
            }
    }
    /* GPT-2 style is told by its key names, whatever the type says. */
    if (cJSON_GetObjectItemCaseSensitive(r->root, "n_embd"))
        snprintf(m->arch, sizeof m->arch, "gpt2");
    else if (type && *type)
        snprintf(m->arch, sizeof m->arch, "%s", type);
    else
        snprintf(m->arch, sizeof m->arch, "llama");
    return 0;
}

static bool is_gpt2(const struct model *m) { return strcmp(m->arch, "gpt2") == 0; }
static bool is_qwen2(const struct model *m) { return strncmp(m->arch, "qwen2", 5) == 0; }

/* ------------------------------------------------------------------ */
/* Reading the sizes. */

static int read_gpt2(const struct reader *r, struct model *m)
{
    int rc;
    if ((rc = get_int(r, "n_embd", true, 0, 1, &m->hidden)) ||
        (rc = get_int(r, "n_head", true, 0, 1, &m->heads)) ||
        (rc = get_int(r, "n_layer", true, 0, 1, &m->decoders)) ||
        (rc = get_int(r, "vocab_size", true, 0, 1, &m->vocab)) ||
        (rc = get_int(r, "n_positions", true, 0, 1, &m->max_positions)) ||
        (rc = get_int(r, "n_inner", false, 4 * m->hidden, 1, &m->intermediate)) ||
        (rc = get_bool(r, "tie_word_embeddings", true, &m->tied_embeddings)))
        return rc;
    if (m->hidden % m->heads)
        return key_fail(r, "n_head", "%d heads do not divide n_embd %d", m->heads, m->hidden);
    m->kv_heads = m->heads;
    m->head_dim = m->hidden / m->heads;
    m->gated_mlp = false;
    m->learned_positions = true;
    return 0;
}

/* MoE keys, by family: Mixtral (num_local_experts; experts as wide as
 * intermediate_size), Qwen2-MoE (num_experts, moe_intermediate_size, one
 * shared expert of shared_expert_intermediate_size), DeepSeek (n_routed_experts,
 * n_shared_experts of moe_intermediate_size each, first_k_dense_replace). */
static int read_moe(const struct reader *r, struct model *m)
{
    int rc, shared_width = 0;
    if (get(r, "num_local_experts")) {
        rc = get_int(r, "num_local_experts", true, 0, 0, &m->experts);
    } else if (get(r, "n_routed_experts")) {
        if ((rc = get_int(r, "n_routed_experts", true, 0, 0, &m->experts)) ||
            (rc = get_int(r, "n_shared_experts", false, 0, 0, &m->shared_experts)) ||
            (rc = get_int(r, "first_k_dense_replace", false, 0, 0, &m->first_dense)))
            return rc;
    } else if (get(r, "num_experts")) {
        if ((rc = get_int(r, "num_experts", true, 0, 0, &m->experts)) ||
            (rc = get_int(r, "shared_expert_intermediate_size", false, 0, 0, &shared_width)))
            return rc;
        m->shared_experts = shared_width > 0;
    } else {
        return 0;
    }
    if (rc || m->experts == 0) return rc;
    if ((rc = get_int(r, "num_experts_per_tok", true, 0, 1, &m->experts_per_token)) ||
        (rc = get_int(r, "moe_intermediate_size", false, m->intermediate, 1,
                      &m->moe_intermediate)) ||
        (rc = get_int(r, "n_group", false, 0, 0, &m->expert_groups)) ||
        (rc = get_int(r, "topk_group", false, 0, 0, &m->groups_per_token)))
        return rc;
    if (m->experts_per_token > m->experts)
        return key_fail(r, "num_experts_per_tok", "%d is more than the %d experts",
                        m->experts_per_token, m->experts);
    if (!shared_width && (double)m->shared_experts * m->moe_intermediate > MODEL_INT_MAX)
        return key_fail(r, "n_shared_experts", "expected n_shared_experts × "
                        "moe_intermediate_size of at most %d, got %d × %d", MODEL_INT_MAX,
                        m->shared_experts, m->moe_intermediate);
    m->shared_intermediate = shared_width ? shared_width
                                          : m->shared_experts * m->moe_intermediate;
    return 0;
}

static int read_mla(const struct reader *r, struct model *m)
{
    int rc;
    if (!get(r, "kv_lora_rank")) return 0;
    if ((rc = get_int(r, "kv_lora_rank", true, 0, 1, &m->kv_lora_rank)) ||
        (rc = get_int(r, "q_lora_rank", false, 0, 0, &m->q_lora_rank)) ||
        (rc = get_int(r, "qk_nope_head_dim", true, 0, 1, &m->qk_nope_head_dim)) ||
        (rc = get_int(r, "qk_rope_head_dim", true, 0, 1, &m->qk_rope_head_dim)) ||
        (rc = get_int(r, "v_head_dim", true, 0, 1, &m->v_head_dim)))
        return rc;
    m->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
    return 0;
}

static int read_llama(const struct reader *r, struct model *m)
{
    int rc;
    const char *act = NULL;
    if ((rc = get_int(r, "hidden_size", true, 0, 1, &m->hidden)) ||
        (rc = get_int(r, "intermediate_size", true, 0, 1, &m->intermediate)) ||
        (rc = get_int(r, "num_attention_heads", true, 0, 1, &m->heads)) ||
        (rc = get_int(r, "num_key_value_heads", false, m->heads, 1, &m->kv_heads)) ||
        (rc = get_int(r, "num_hidden_layers", true, 0, 1, &m->decoders)) ||
        (rc = get_int(r, "vocab_size", true, 0, 1, &m->vocab)) ||
        (rc = get_int(r, "max_position_embeddings", false, 0, 0, &m->max_positions)) ||
        (rc = get_int(r, "head_dim", false, 0, 1, &m->head_dim)) ||
        /* transformers' LlamaConfig defaults to untied; so do its relatives. */
        (rc = get_bool(r, "tie_word_embeddings", false, &m->tied_embeddings)) ||
        (rc = get_str(r, "hidden_act", &act)))
        return rc;
    /* MLA fixes its own head widths, so heads need not divide hidden. */
    if ((rc = read_mla(r, m))) return rc;
    if (m->head_dim == 0) {
        if (m->hidden % m->heads)
            return key_fail(r, "num_attention_heads",
                            "%d heads do not divide hidden_size %d (and no head_dim is given)",
                            m->heads, m->hidden);
        m->head_dim = m->hidden / m->heads;
    }
    if (m->kv_heads > m->heads || m->heads % m->kv_heads)
        return key_fail(r, "num_key_value_heads", "%d does not divide num_attention_heads %d",
                        m->kv_heads, m->heads);
    /* The Llama family's MLP is gated whatever the activation; the name
     * only tells SwiGLU (silu) from GeGLU. Others are gated when their
     * activation says so. */
    m->gated_mlp = !act || strcmp(act, "silu") == 0 || strcmp(act, "swish") == 0 ||
                   strcmp(act, "swiglu") == 0 || strcmp(m->arch, "llama") == 0 ||
                   strcmp(m->arch, "mistral") == 0 || strcmp(m->arch, "mixtral") == 0 ||
                   is_qwen2(m) || strncmp(m->arch, "deepseek", 8) == 0;
    return read_moe(r, m);
}

/* ------------------------------------------------------------------ */
/* Parameters of one decoder. */

static double mlp_matmul(const struct model *m, double width)
{
    return (m->gated_mlp ? 3.0 : 2.0) * m->hidden * width;
}

/* Is decoder i's FFN a mixture of experts? DeepSeek: after the first k dense
 * layers, every moe_layer_freq-th; Qwen2-MoE: every decoder_sparse_step-th
 * (1-based) unless listed in mlp_only_layers; Mixtral: all. */
struct moe_pattern { int freq, sparse_step; const cJSON *mlp_only; };

static bool layer_is_moe(const struct model *m, const struct moe_pattern *p, int i)
{
    if (m->experts == 0 || i < m->first_dense) return false;
    if (p->freq > 1 && i % p->freq) return false;
    if (p->sparse_step > 1 && (i + 1) % p->sparse_step) return false;
    const cJSON *x;
    cJSON_ArrayForEach(x, p->mlp_only)
        if (cJSON_IsNumber(x) && x->valueint == i) return false;
    return true;
}

/* Fill a decoder's params, active params and matmul params. */
static void count_decoder(const struct model *m, struct layer *L)
{
    double h = m->hidden, mm = 0, other = 0;
    if (L->attn == ATTN_MLA) {
        double heads = m->heads, qk = (double)m->qk_nope_head_dim + m->qk_rope_head_dim;
        if (m->q_lora_rank) {
            mm += h * m->q_lora_rank + (double)m->q_lora_rank * heads * qk;
            other += m->q_lora_rank; /* q_a_layernorm */
        } else {
            mm += h * heads * qk;
        }
        mm += h * ((double)m->kv_lora_rank + m->qk_rope_head_dim) +
              (double)m->kv_lora_rank * heads * ((double)m->qk_nope_head_dim + m->v_head_dim);
        other += m->kv_lora_rank; /* kv_a_layernorm */
        mm += heads * m->v_head_dim * h;
    } else {
        /* Linear-attention layers are given the projections of full
         * attention: their extra gates/convolutions differ per design and
         * no config names them in a standard way. */
        double q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
        mm += 2 * h * q + 2 * h * kv;
        if (is_gpt2(m)) other += q + 2 * kv + h;
        else if (is_qwen2(m)) other += q + 2 * kv;
    }
    other += is_gpt2(m) ? 4 * h : 2 * h; /* two norms; LayerNorm has a bias */

    double active_mm = mm, all_mm = mm, expert = 0;
    if (L->moe) {
        double one = mlp_matmul(m, m->moe_intermediate);
        double router = h * m->experts;
        double shared = m->shared_intermediate ? mlp_matmul(m, m->shared_intermediate) : 0;
        if (is_qwen2(m) && m->shared_intermediate) shared += h; /* shared_expert_gate */
        if (strcmp(m->arch, "deepseek_v3") == 0) other += m->experts; /* score bias */
        expert = one * m->experts;
        active_mm += router + shared + one * m->experts_per_token;
        all_mm += router + shared + expert;
    } else {
        double ffn = mlp_matmul(m, m->intermediate);
        active_mm += ffn;
        all_mm += ffn;
        if (is_gpt2(m)) other += m->intermediate + h;
    }
    L->params = all_mm + other;
    L->active_params = active_mm + other;
    L->matmul_params = active_mm;
    L->expert_params = expert;
}

/* The other hybrid forms, when no `layer_types` list is given (a list wins):
 *  - `full_attn_layers`: 1-based numbers of the full-attention layers, the
 *    rest linear; top level or inside `linear_attn_config` (Kimi-Linear);
 *  - `full_attention_interval` k: every k-th layer (1-based) is full, the
 *    rest linear (Qwen3-Next). */
static int read_full_attn_forms(const struct reader *r, struct model *m)
{
    const char *key = "full_attn_layers";
    const cJSON *list = get(r, key);
    const cJSON *lac = get(r, "linear_attn_config");
    if (!list && lac && cJSON_IsObject(lac)) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(lac, key);
        if (v && !cJSON_IsNull(v)) list = v;
    }
    if (list) {
        if (!cJSON_IsArray(list))
            return key_fail(r, key, "expected a list of 1-based layer numbers (1..%d)",
                            m->decoders);
        enum attn_kind full = m->layer[1].attn;
        for (int i = 0; i < m->decoders; i++) m->layer[i + 1].attn = ATTN_LINEAR;
        int k = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, list) {
            double d = cJSON_IsNumber(x) ? x->valuedouble : 0;
            if (d != floor(d) || d < 1 || d > m->decoders)
                return key_fail(r, key, "entry %d: expected a layer number 1..%d", k,
                                m->decoders);
            if (m->layer[(int)d].attn != ATTN_LINEAR)
                return key_fail(r, key, "entry %d: layer %d is listed twice", k, (int)d);
            m->layer[(int)d].attn = full;
            k++;
        }
        return 0;
    }
    if (!get(r, "full_attention_interval")) return 0;
    int every;
    int rc = get_int(r, "full_attention_interval", true, 0, 1, &every);
    if (rc) return rc;
    for (int i = 0; i < m->decoders; i++)
        if ((i + 1) % every) m->layer[i + 1].attn = ATTN_LINEAR;
    return 0;
}

/* Per-layer attention kinds from a `layer_types` list ("full_attention",
 * "sliding_attention" (priced as full), "linear_attention"). */
static int read_layer_types(const struct reader *r, struct model *m)
{
    const cJSON *types = get(r, "layer_types");
    enum attn_kind full = m->kv_lora_rank ? ATTN_MLA : ATTN_FULL;
    for (int i = 0; i < m->decoders; i++) m->layer[i + 1].attn = full;
    if (!types) return read_full_attn_forms(r, m);
    if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != m->decoders)
        return key_fail(r, "layer_types", "expected a list of %d layer types (one per layer)",
                        m->decoders);
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, types) {
        const char *s = cJSON_IsString(t) ? t->valuestring : "";
        if (strcmp(s, "linear_attention") == 0)
            m->layer[i + 1].attn = ATTN_LINEAR;
        else if (strcmp(s, "full_attention") != 0 && strcmp(s, "sliding_attention") != 0)
            return key_fail(r, "layer_types", "entry %d: expected \"full_attention\", "
                            "\"sliding_attention\" or \"linear_attention\"", i);
        i++;
    }
    return 0;
}

static int build_layers(const struct reader *r, struct model *m)
{
    struct moe_pattern pat = {1, 1, NULL};
    int rc;
    if ((rc = get_int(r, "moe_layer_freq", false, 1, 1, &pat.freq)) ||
        (rc = get_int(r, "decoder_sparse_step", false, 1, 1, &pat.sparse_step)))
        return rc;
    pat.mlp_only = get(r, "mlp_only_layers");

    if (m->decoders > MODEL_MAX_LAYERS)
        return key_fail(r, is_gpt2(m) ? "n_layer" : "num_hidden_layers",
                        "expected at most %d layers, got %d", MODEL_MAX_LAYERS, m->decoders);
    m->n_layers = m->decoders + 2;
    m->layer = mp_xcalloc((size_t)m->n_layers, sizeof *m->layer);
    if ((rc = read_layer_types(r, m))) return rc;

    double h = m->hidden, V = m->vocab;
    struct layer *e = &m->layer[0];
    e->kind = LAYER_EMBEDDING;
    e->decoder_index = -1;
    e->params = V * h + (m->learned_positions ? (double)m->max_positions * h : 0);
    /* Published "active" counts (Mixtral 12.9B, DeepSeek-V3 37B) include the
     * embedding table, so we do too. */
    e->active_params = e->params;

    for (int i = 0; i < m->decoders; i++) {
        struct layer *L = &m->layer[i + 1];
        L->kind = LAYER_DECODER;
        L->decoder_index = i;
        L->moe = layer_is_moe(m, &pat, i);
        count_decoder(m, L);
    }

    struct layer *head = &m->layer[m->n_layers - 1];
    head->kind = LAYER_LM_HEAD;
    head->decoder_index = -1;
    /* The final norm lives with the head (it runs on the last stage). */
    head->params = (m->tied_embeddings ? 0 : V * h) + (is_gpt2(m) ? 2 * h : h);
    head->active_params = head->params;
    head->matmul_params = V * h; /* a tied head still multiplies by the table */
    return 0;
}

/* ------------------------------------------------------------------ */
/* Loading. */

/* Name a model after its file: "models/llama3-8b.json" -> "llama3-8b", and
 * ".../Meta-Llama-3-8B/config.json" -> "Meta-Llama-3-8B". */
static void name_from_origin(char *out, size_t size, const char *origin)
{
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    size_t n = strlen(base);
    if (strcmp(base, "config.json") == 0 && base > origin + 1) {
        const char *end = base - 1, *start = end;
        while (start > origin && start[-1] != '/') start--;
        n = (size_t)(end - start);
        base = start;
    } else if (n > 5 && strcmp(base + n - 5, ".json") == 0) {
        n -= 5;
    }
    if (n >= size) n = size - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

/* Does the text stop inside a string or with brackets still open? Then the
 * file was cut short, whatever character cJSON tripped on. */
static bool is_truncated(const char *json)
{
    int depth = 0;
    bool in_str = false;
    for (const char *p = json; *p; p++) {
        if (in_str) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == '"') in_str = false;
        } else if (*p == '"') {
            in_str = true;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            depth--;
        }
    }
    return in_str || depth > 0;
}

static int parse_error(const char *json, const char *at, const char *origin,
                       struct mp_error *err)
{
    const char *p = at;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (*p == '\0' || is_truncated(json)) {
        /* Point at the last line that has content. */
        const char *q = json + strlen(json);
        while (q > json && strchr(" \t\r\n", q[-1])) q--;
        return mp_fail(err, MP_ERR_INPUT,
                       "%s:%d: invalid JSON: the text ends before the object is complete "
                       "(truncated file?)", origin, line_of(json, q));
    }
    /* cJSON may point just past the culprit (a stray comma): back up over
     * blanks, then quote the line around that spot. */
    const char *q = at;
    while (q > json && strchr(" \t\r\n", q[-1]) && strchr(" \t\r\n", *q)) q--;
    const char *from = q;
    while (from > json && from[-1] != '\n' && q - from < 24) from--;
    while (*from == ' ' || *from == '\t') from++;
    size_t n = (size_t)(q - from) + strcspn(q, "\r\n");
    char near[48];
    if (n >= sizeof near) n = sizeof near - 1;
    memcpy(near, from, n);
    near[n] = '\0';
    return mp_fail(err, MP_ERR_INPUT, "%s:%d: invalid JSON near '%s'", origin,
                   line_of(json, q), near);
}

int model_load_json(struct model *m, const char *json, const char *origin,
                    struct mp_error *err)
{
    memset(m, 0, sizeof *m);
    const char *p = json;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (*p == '\0')
        return mp_fail(err, MP_ERR_INPUT, "%s: empty file; expected a JSON object "
                       "(a Hugging Face config.json)", origin);
    /* JSON is UTF-8 (RFC 8259); cJSON passes any bytes through, and a name
     * read from here would make our own JSON outputs invalid. */
    size_t n = strlen(json), ok = mp_utf8_valid_prefix(json, n);
    if (ok < n)
        return mp_fail(err, MP_ERR_INPUT, "%s:%d: byte 0x%02x is not UTF-8: expected a UTF-8 "
                       "JSON text", origin, line_of(json, json + ok),
                       (unsigned char)json[ok]);
    const char *end = NULL;
    /* cJSON keeps its last parse error in a global, written on every parse:
     * sweeps load models from several threads at once. */
    static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&parse_lock);
    cJSON *root = cJSON_ParseWithOpts(json, &end, 1);
    pthread_mutex_unlock(&parse_lock);
    if (!root) return parse_error(json, end ? end : json, origin, err);
    if (!cJSON_IsObject(root)) {
        const char *what = cJSON_IsArray(root) ? "an array" : "a single value";
        cJSON_Delete(root);
        return mp_fail(err, MP_ERR_INPUT, "%s:1: expected a JSON object of config keys "
                       "(hidden_size, ...) at the top level, got %s", origin, what);
    }

    struct reader r = {origin, json, root, err};
    name_from_origin(m->name, sizeof m->name, origin);
    int rc = 0;
    /* cJSON keeps every duplicate and reads the first; a config that names a
     * key twice is ambiguous, so which one the author meant is their call. */
    for (const cJSON *a = root->child; a && !rc; a = a->next)
        for (const cJSON *b = root->child; b != a && !rc; b = b->next)
            if (strcmp(a->string, b->string) == 0) {
                int first = key_line(&r, a->string), second = key_line_nth(&r, a->string, 1);
                rc = mp_fail(err, MP_ERR_INPUT, "%s:%d: key %s: expected once, got it twice "
                             "(lines %d and %d)", origin, second, a->string, first, second);
            }
    if (!rc) rc = detect_arch(&r, m);
    if (!rc) rc = is_gpt2(m) ? read_gpt2(&r, m) : read_llama(&r, m);
    if (!rc) rc = build_layers(&r, m);
    cJSON_Delete(root);
    if (rc) model_release(m);
    return rc;
}

int model_load(struct model *m, const char *path, struct mp_error *err)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    if (!f)
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot open model config: %s", path,
                       strerror(errno));
    size_t cap = 0, len = 0;
    char *buf = NULL;
    for (;;) {
        MP_GROW(buf, cap, len + 4096);
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f), e = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot read model config: %s", path,
                       strerror(e));
    }
    buf[len] = '\0';
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        int line = line_of(buf, nul);
        free(buf);
        return mp_fail(err, MP_ERR_INPUT, "%s:%d: a NUL byte: expected a JSON text (is the "
                       "file binary, or UTF-16?)", path, line);
    }
    int rc = model_load_json(m, buf, path, err);
    free(buf);
    return rc;
}

void model_release(struct model *m)
{
    free(m->layer);
    memset(m, 0, sizeof *m);
}

double model_params(const struct model *m)
{
    double sum = 0;
    for (int i = 0; i < m->n_layers; i++) sum += m->layer[i].params;
    return sum;
}

double model_active_params(const struct model *m)
{
    double sum = 0;
    for (int i = 0; i < m->n_layers; i++) sum += m->layer[i].active_params;
    return sum;
}
