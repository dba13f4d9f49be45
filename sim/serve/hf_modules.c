/* hf_modules.c — the Transformers module tree of a model and Accelerate's
 * sizes of it; see hf_modules.h for the families and the dtype rules. */
#include "hf_modules.h"

#include <assert.h>
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/json_doc.h"

/* Sizes stay exact in a double below 2^52 bytes (halves included). */
#define HF_MAX_BYTES 4503599627370496.0

/* What a tensor is, for its bytes per element. */
enum tensor_kind {
    T_LINEAR,   /* a decoder Linear's weight: what quantization converts */
    T_OTHER,    /* biases, norms, embeddings, routers that are not nn.Linear */
    T_SPECIAL,  /* bitsandbytes leaves it at 16 bits (get_keys_to_not_convert) */
    T_BUF_F32,  /* a float32 buffer (inv_freq) */
};

static double elem_bytes(const struct hf_dtype *dt, enum tensor_kind k)
{
    double own = dt->quant == HF_QUANT_NONE && dt->weight_bits == 32 ? 4 : 2;
    double target;
    switch (dt->quant) {
    case HF_QUANT_BNB_8BIT: target = 1; break;
    case HF_QUANT_BNB_4BIT: target = 0.5; break;
    case HF_QUANT_FP8: target = 2; if (k == T_LINEAR) own = 1; break;
    default: target = dt->weight_bits / 8.0; break;
    }
    if (k == T_BUF_F32) return target < 4 ? target : 4;
    if (k == T_SPECIAL && (dt->quant == HF_QUANT_BNB_8BIT || dt->quant == HF_QUANT_BNB_4BIT))
        return 2; /* the special dtype: torch_dtype */
    return target < own ? target : own;
}

/* ---- a decoder's tensors ------------------------------------------------------ */

struct acc {
    const struct hf_dtype *dt;
    double bytes;
    int leaves;
};

/* One nn.Linear (out x in, bias of out) as a leaf module. fp8 adds its
 * float32 weight_scale_inv, one per block, sized at 2 bytes (min(2, 4)). */
static void linear(struct acc *a, double out, double in, bool bias, bool quantizable)
{
    double w = elem_bytes(a->dt, quantizable ? T_LINEAR : T_OTHER);
    a->bytes += out * in * w + (bias ? out * elem_bytes(a->dt, T_OTHER) : 0);
    if (quantizable && a->dt->quant == HF_QUANT_FP8)
        a->bytes += ceil(out / a->dt->fp8_block[0]) * ceil(in / a->dt->fp8_block[1]) *
                    elem_bytes(a->dt, T_BUF_F32);
    a->leaves++;
}

/* A leaf of `n` elements that quantization leaves alone (a norm's weight). */
static void plain(struct acc *a, double n)
{
    a->bytes += n * elem_bytes(a->dt, T_OTHER);
    a->leaves++;
}

/* A gated MLP (gate, up, down) or a plain one (up, down) of width f. */
static void mlp(struct acc *a, double h, double f, bool gated)
{
    if (gated) linear(a, f, h, false, true);
    linear(a, f, h, false, true);
    linear(a, h, f, false, true);
}

static bool arch_is(const struct model *m, const char *prefix)
{
    return strncmp(m->arch, prefix, strlen(prefix)) == 0;
}

static void decoder_gpt2(struct acc *a, const struct model *m)
{
    double h = m->hidden, f = m->intermediate;
    plain(a, 2 * h);                       /* ln_1 (weight, bias) */
    linear(a, 3 * h, h, true, true);       /* attn.c_attn (Conv1D) */
    linear(a, h, h, true, true);           /* attn.c_proj */
    plain(a, 2 * h);                       /* ln_2 */
    linear(a, f, h, true, true);           /* mlp.c_fc */
    linear(a, h, f, true, true);           /* mlp.c_proj */
}

static void attention(struct acc *a, const struct model *m, const struct layer *L)
{
    double h = m->hidden, H = m->heads;
    if (L->attn == ATTN_MLA) {
        double qk = (double)m->qk_nope_head_dim + m->qk_rope_head_dim;
        if (m->q_lora_rank) {
            linear(a, m->q_lora_rank, h, false, true);        /* q_a_proj */
            plain(a, m->q_lora_rank);                         /* q_a_layernorm */
            linear(a, H * qk, m->q_lora_rank, false, true);   /* q_b_proj */
        } else {
            linear(a, H * qk, h, false, true);                /* q_proj */
        }
        linear(a, (double)m->kv_lora_rank + m->qk_rope_head_dim, h, false, true);
        plain(a, m->kv_lora_rank);                            /* kv_a_layernorm */
        linear(a, H * ((double)m->qk_nope_head_dim + m->v_head_dim), m->kv_lora_rank, false,
               true);                                         /* kv_b_proj */
        linear(a, h, H * m->v_head_dim, false, true);         /* o_proj */
        return;
    }
    /* Full and linear attention alike (model.c gives linear-attention layers
     * the projections of full attention). */
    double q = H * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    bool bias = arch_is(m, "qwen2");
    linear(a, q, h, bias, true);
    linear(a, kv, h, bias, true);
    linear(a, kv, h, bias, true);
    linear(a, h, q, false, true);
}

static void feed_forward(struct acc *a, const struct model *m, const struct layer *L)
{
    double h = m->hidden, E = m->experts;
    if (!L->moe) {
        mlp(a, h, m->intermediate, m->gated_mlp);
        return;
    }
    if (arch_is(m, "mixtral")) {
        linear(a, E, h, false, true);                           /* block_sparse_moe.gate */
        for (int e = 0; e < m->experts; e++) mlp(a, h, m->moe_intermediate, true); /* w1 w2 w3 */
    } else if (arch_is(m, "qwen")) {
        linear(a, E, h, false, true);                           /* mlp.gate */
        for (int e = 0; e < m->experts; e++) mlp(a, h, m->moe_intermediate, m->gated_mlp);
        if (m->shared_intermediate) {
            mlp(a, h, m->shared_intermediate, m->gated_mlp);    /* shared_expert */
            linear(a, 1, h, false, true);                       /* shared_expert_gate */
        }
    } else {
        /* DeepSeek's layout: experts, the router (a module of its own, not an
         * nn.Linear: quantization leaves it alone), shared experts. */
        for (int e = 0; e < m->experts; e++) mlp(a, h, m->moe_intermediate, m->gated_mlp);
        double router = E * h * elem_bytes(a->dt, T_OTHER);
        if (strcmp(m->arch, "deepseek_v3") == 0) router += E * elem_bytes(a->dt, T_OTHER);
        a->bytes += router;
        a->leaves++;
        if (m->shared_intermediate) mlp(a, h, m->shared_intermediate, m->gated_mlp);
    }
}

static void decoder_llama(struct acc *a, const struct model *m, const struct layer *L)
{
    attention(a, m, L);
    feed_forward(a, m, L);
    plain(a, m->hidden);  /* input_layernorm */
    plain(a, m->hidden);  /* post_attention_layernorm */
}

/* ---- the tree ----------------------------------------------------------------- */

static int add(struct hf_tree *t, int *cap, int parent, const char *suffix, const char *cls)
{
    MP_GROW(t->mod, *cap, t->n + 1);
    int i = t->n++;
    struct hf_module *x = &t->mod[i];
    memset(x, 0, sizeof *x);
    /* Names are a few dotted words and a layer number: far below HF_NAME. */
    int w = parent < 0 || !t->mod[parent].name[0]
                ? snprintf(x->name, sizeof x->name, "%s", suffix)
                : snprintf(x->name, sizeof x->name, "%s.%s", t->mod[parent].name, suffix);
    assert(w >= 0 && w < (int)sizeof x->name);
    (void)w;
    snprintf(x->cls, sizeof x->cls, "%s", cls);
    x->parent = parent;
    x->first_child = x->next_sibling = -1;
    x->model_layer = -1;
    if (parent >= 0) {
        int *link = &t->mod[parent].first_child;
        while (*link >= 0) link = &t->mod[*link].next_sibling;
        *link = i;
    }
    return i;
}

/* A leaf holding `bytes` (0: holds no tensor at all). */
static void leaf(struct hf_tree *t, int i, double bytes, int model_layer)
{
    struct hf_module *x = &t->mod[i];
    x->size = x->leaf_bytes = x->stream_bytes = bytes;
    x->sized = bytes > 0;
    x->leaves = bytes > 0;
    x->model_layer = model_layer;
}

/* The class prefix: "LlamaForCausalLM" -> "Llama". */
static void family_prefix(const struct model *m, char *out, size_t size)
{
    static const struct { const char *arch, *prefix; } known[] = {
        { "llama", "Llama" }, { "mistral", "Mistral" }, { "mixtral", "Mixtral" },
        { "qwen2_moe", "Qwen2Moe" }, { "qwen2", "Qwen2" }, { "deepseek_v3", "DeepseekV3" },
        { "deepseek_v2", "DeepseekV2" }, { "gpt2", "GPT2" }, { "kimi_linear", "KimiLinear" },
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(m->arch, known[i].arch) == 0) {
            snprintf(out, size, "%s", known[i].prefix);
            return;
        }
    /* An unknown model_type: "foo_bar" -> "FooBar", as Transformers names them. */
    size_t n = 0;
    bool up = true;
    for (const char *p = m->arch; *p && n + 1 < size; p++) {
        if (*p == '_' || *p == '-') { up = true; continue; }
        out[n++] = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        up = false;
    }
    out[n] = '\0';
    if (!n) snprintf(out, size, "Llama");
}

int hf_tree_build(struct hf_tree *t, const struct model *m, const struct hf_dtype *dt,
                  struct mp_error *err)
{
    memset(t, 0, sizeof *t);
    int cap = 0;
    bool gpt2 = strcmp(m->arch, "gpt2") == 0;
    char fam[48];
    family_prefix(m, fam, sizeof fam);
    snprintf(t->arch_class, sizeof t->arch_class, gpt2 ? "GPT2LMHeadModel" : "%sForCausalLM",
             fam);
    snprintf(t->layer_class, sizeof t->layer_class, gpt2 ? "GPT2Block" : "%sDecoderLayer", fam);
    double h = m->hidden, V = m->vocab;
    bool tied = m->tied_embeddings;
    /* bitsandbytes leaves the head alone; tied, the embedding and the final
     * norm too (get_keys_to_not_convert: the tied keys and the last
     * parameter registered). */
    enum tensor_kind emb_kind = tied ? T_SPECIAL : T_OTHER;

    int root = add(t, &cap, -1, "", t->arch_class);
    char base_cls[64];
    snprintf(base_cls, sizeof base_cls, gpt2 ? "GPT2Model" : "%sModel", fam);
    int base = add(t, &cap, root, gpt2 ? "transformer" : "model", base_cls);
    int emb = add(t, &cap, base, gpt2 ? "wte" : "embed_tokens", "Embedding");
    leaf(t, emb, V * h * elem_bytes(dt, emb_kind), 0);
    if (gpt2) {
        int wpe = add(t, &cap, base, "wpe", "Embedding");
        leaf(t, wpe, (double)m->max_positions * h * elem_bytes(dt, T_OTHER), -1);
        leaf(t, add(t, &cap, base, "drop", "Dropout"), 0, -1);
    }
    int layers = add(t, &cap, base, gpt2 ? "h" : "layers", "ModuleList");
    for (int i = 0; i < m->decoders; i++) {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        int d = add(t, &cap, layers, idx, t->layer_class);
        struct acc a = { .dt = dt };
        if (gpt2) decoder_gpt2(&a, m);
        else decoder_llama(&a, m, &m->layer[i + 1]);
        struct hf_module *x = &t->mod[d];
        x->no_split = true;
        x->size = x->leaf_bytes = x->stream_bytes = a.bytes;
        x->sized = true;
        x->leaves = a.leaves;
        x->model_layer = i + 1;
    }
    int norm = add(t, &cap, base, gpt2 ? "ln_f" : "norm", gpt2 ? "LayerNorm" : "RMSNorm");
    leaf(t, norm, (gpt2 ? 2 * h : h) * elem_bytes(dt, tied ? T_SPECIAL : T_OTHER), -1);
    if (!gpt2) {
        double rot = m->kv_lora_rank ? m->qk_rope_head_dim : m->head_dim;
        char rcls[64];
        snprintf(rcls, sizeof rcls, "%sRotaryEmbedding", fam);
        leaf(t, add(t, &cap, base, "rotary_emb", rcls), floor(rot / 2) * elem_bytes(dt, T_BUF_F32),
             -1);
    }
    int head = add(t, &cap, root, "lm_head", "Linear");
    leaf(t, head, tied ? 0 : V * h * elem_bytes(dt, T_SPECIAL), m->n_layers - 1);
    if (tied) {
        /* Moving a tied head to its device moves the table it shares. */
        t->mod[head].stream_bytes = t->mod[emb].size;
        t->tied = true;
        /* find_tied_parameters sorts each group: "lm_head.weight" first. */
        snprintf(t->tie_name[0], HF_NAME, "lm_head.weight");
        int w = snprintf(t->tie_name[1], HF_NAME, "%s.weight", t->mod[emb].name);
        assert(w >= 0 && w < HF_NAME);
        (void)w;
        t->tie_size[0] = 0;
        t->tie_size[1] = t->mod[emb].size;
    }
    /* Sizes and leaf counts of the containers, children first. */
    for (int i = t->n - 1; i > 0; i--) {
        struct hf_module *x = &t->mod[i], *p = &t->mod[x->parent];
        if (p->no_split) continue;
        p->size += x->size;
        p->stream_bytes += x->stream_bytes;
        p->leaves += x->leaves;
        p->leaf_bytes += x->leaf_bytes;
        p->sized = p->sized || x->sized;
    }
    if (!(t->mod[root].size < HF_MAX_BYTES)) {
        double total = t->mod[root].size;
        hf_tree_release(t);
        return mp_fail(err, MP_ERR_INPUT, "%s: %.3g bytes of weights; expected at most 2^52 "
                       "(4.5 PB)", m->name, total);
    }
    return MP_OK;
}

void hf_tree_release(struct hf_tree *t)
{
    free(t->mod);
    memset(t, 0, sizeof *t);
}

int hf_find(const struct hf_tree *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->mod[i].name, name) == 0) return i;
    return -1;
}

bool hf_under(const struct hf_tree *t, int i, int anc)
{
    for (; i >= 0; i = t->mod[i].parent)
        if (i == anc) return true;
    return false;
}

const char *hf_dtype_name(const struct hf_dtype *dt)
{
    switch (dt->quant) {
    case HF_QUANT_BNB_8BIT: return "int8 (bitsandbytes 8-bit)";
    case HF_QUANT_BNB_4BIT: return "4-bit (bitsandbytes 4-bit)";
    case HF_QUANT_FP8: return "fp8 (fine-grained, 16-bit embeddings and norms)";
    default: break;
    }
    switch (dt->weight_bits) {
    case 32: return "fp32";
    case 16: return "bf16";
    case 8: return "int8";
    case 4: return "4-bit";
    default: return "custom";
    }
}

/* ---- quantization_config ------------------------------------------------------ */

static char *read_file(const char *path, struct mp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mp_fail(err, MP_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        /* A config.json is a few kB; 64 MB is beyond any. */
        if (n > (64u << 20)) {
            free(buf);
            fclose(f);
            mp_fail(err, MP_ERR_INPUT, "%s: expected a config.json of at most 64 MB", path);
            return NULL;
        }
        MP_GROW(buf, cap, n + 4097);
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got < 4096) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        mp_fail(err, MP_ERR_INPUT, "%s: cannot read", path);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static bool flag(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

int hf_read_quantization(const char *config_path, struct hf_dtype *dt, struct mp_error *err)
{
    char *text = read_file(config_path, err);
    if (!text) return MP_ERR_INPUT;
    /* models' JSON reader, as model_load read the file (NaN, Infinity, a
     * BOM; TEAM.md interface 5); a parse failure here is a file changed
     * under us. */
    struct json_doc doc;
    if (json_doc_parse(&doc, text, strlen(text), config_path, err)) {
        free(text);
        return MP_ERR_INPUT;
    }
    const cJSON *root = doc.root;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization_config");
    int rc = MP_OK;
    if (q && cJSON_IsObject(q)) {
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(q, "quant_method");
        const char *mname = cJSON_IsString(method) ? method->valuestring : "";
        if (flag(q, "load_in_8bit")) {
            dt->quant = HF_QUANT_BNB_8BIT;
        } else if (flag(q, "load_in_4bit")) {
            dt->quant = HF_QUANT_BNB_4BIT;
        } else if (strcmp(mname, "fp8") == 0) {
            dt->quant = HF_QUANT_FP8;
            dt->fp8_block[0] = dt->fp8_block[1] = 128;
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
            if (cJSON_IsArray(b) && cJSON_GetArraySize(b) == 2) {
                for (int i = 0; i < 2; i++) {
                    const cJSON *v = cJSON_GetArrayItem(b, i);
                    double x = cJSON_IsNumber(v) ? v->valuedouble : 0;
                    if (!(x >= 1 && x <= 65536 && x == floor(x))) {
                        rc = mp_fail(err, MP_ERR_INPUT, "%s: key quantization_config."
                                     "weight_block_size: expected two whole numbers 1..65536",
                                     config_path);
                        break;
                    }
                    dt->fp8_block[i] = (int)x;
                }
            }
        } else {
            rc = mp_fail(err, MP_ERR_INPUT,
                         "%s: key quantization_config: quant_method '%s' is not modelled "
                         "(bitsandbytes 8/4-bit and fp8 are); give the weight size with "
                         "--weight-bits N (or device_map.quantization = none and "
                         "model.weight_bits)", config_path, mname);
        }
    }
    json_doc_release(&doc);
    free(text);
    return rc;
}
