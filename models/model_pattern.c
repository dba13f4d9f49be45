/* model_pattern.c — which kind of mixer and MLP each decoder has, from the
 * way the family spells it (arch.h, enum layer_form and enum moe_form):
 *
 *   layer_types            every family: "full_attention", "sliding_attention",
 *                          "chunked_attention", "linear_attention" per layer
 *   sliding_window         Mistral, Mixtral, Phi-3, StarCoder2: every layer
 *   use_sliding_window,    Qwen2/3: layers >= max_window_layers slide when
 *   max_window_layers        use_sliding_window is true
 *   sliding_window_pattern Gemma 3 (6), Cohere2 (4); Gemma 2 alternates (2):
 *                          layer i global when (i+1) % k == 0
 *   full_attention_interval Qwen3-Next (4): layer i full when (i+1) % k == 0,
 *                          the rest Gated DeltaNet
 *   linear_attn_config     Kimi-Linear: full_attn_layers (1-based), the rest KDA
 *   attn_type_list         MiniMax-Text-01: 0 lightning, 1 softmax, per layer
 *   hybrid_override_pattern Nemotron-H: M Mamba-2, * attention, - MLP, E MoE
 *   attn_layer_period/offset Jamba (8, 4): attention when i % period == offset
 *   no_rope_layers         Llama 4: 1 = RoPE layer, chunked attention;
 *                          0 = NoPE layer, full (default every 4th NoPE)
 *
 * and for experts: every layer (Mixtral); decoder_sparse_step and
 * mlp_only_layers (Qwen); first_k_dense_replace and moe_layer_freq
 * (DeepSeek); expert_layer_period/offset (Jamba, 2 and 1); moe_layers or
 * interleave_moe_layer_step (Llama 4). A `layer_types` list and the family's
 * own form must agree when both are written. */
#include "model_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pattern {
    enum mixer_kind *mix;
    enum mlp_kind *mlp;
    int n;
    const char *form_key;   /* the family's own pattern key, when written */
    bool mlp_set;           /* the form said which layers are MoE */
};

/* An integer form key with transformers' default, noted when taken. */
static int form_int(struct reader *r, const char *key, int def, int min, int *out)
{
    if (!rd_get(r, key)) {
        *out = def;
        return MP_OK;
    }
    return rd_int(r, key, def, min, out);
}

static int length_fail(struct reader *r, const char *key, int got, int n)
{
    return rd_fail(r, key, "%d entries, expected %d (one per layer: the model has %d decoder "
                   "layers)", got, n, n);
}

/* A list of per-layer integers (0/1 flags or 0-based indices). */
static int int_at(struct reader *r, const char *key, const cJSON *x, int k, int lo, int hi,
                  int *out)
{
    double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    if (d != floor(d) || d < lo || d > hi)
        return rd_fail(r, key, "entry %d: expected an integer %d..%d", k, lo, hi);
    *out = (int)d;
    return MP_OK;
}

static int read_kimi(struct reader *r, struct pattern *p, enum mixer_kind base)
{
    const char *key = "linear_attn_config.full_attn_layers";
    const cJSON *lac = rd_get(r, "linear_attn_config");
    if (!lac && rd_get(r, "layer_types")) return MP_OK; /* the list says it all */
    if (!lac || !cJSON_IsObject(lac))
        return rd_fail(r, "linear_attn_config", "%s; expected an object with full_attn_layers "
                       "(1-based numbers of the full-attention layers)", lac ? "not an object"
                       : "missing");
    const cJSON *full = rd_get(r, key);
    if (!full || !cJSON_IsArray(full))
        return rd_fail(r, key, "expected a list of 1-based layer numbers (1..%d)", p->n);
    p->form_key = key;
    for (int i = 0; i < p->n; i++) p->mix[i] = r->row->linear;
    int k = 0, v;
    const cJSON *x;
    cJSON_ArrayForEach(x, full) {
        int rc = int_at(r, key, x, k, 1, p->n, &v);
        if (rc) return rc;
        if (p->mix[v - 1] == base)
            return rd_fail(r, key, "entry %d: layer %d is listed twice", k, v);
        p->mix[v - 1] = base;
        k++;
    }
    /* kda_layers, when written, must name exactly the other layers. */
    const char *kkey = "linear_attn_config.kda_layers";
    const cJSON *kda = rd_get(r, kkey);
    if (!kda) return MP_OK;
    if (!cJSON_IsArray(kda))
        return rd_fail(r, kkey, "expected a list of 1-based layer numbers (1..%d)", p->n);
    bool *seen = mp_xcalloc((size_t)p->n, sizeof *seen);
    int rc = MP_OK;
    k = 0;
    cJSON_ArrayForEach(x, kda) {
        if ((rc = int_at(r, kkey, x, k, 1, p->n, &v))) break;
        if (p->mix[v - 1] == base || seen[v - 1]) {
            rc = rd_fail(r, kkey, "entry %d: layer %d is %s", k, v, seen[v - 1]
                         ? "listed twice" : "also in full_attn_layers");
            break;
        }
        seen[v - 1] = true;
        k++;
    }
    for (int i = 0; !rc && i < p->n; i++)
        if (p->mix[i] != base && !seen[i])
            rc = rd_fail(r, kkey, "layer %d is in neither full_attn_layers nor kda_layers; "
                         "expected every layer in one of them", i + 1);
    free(seen);
    return rc;
}

static int read_attn_type_list(struct reader *r, struct pattern *p, enum mixer_kind base)
{
    const char *key = "attn_type_list";
    const cJSON *list = rd_get(r, key);
    if (!list || !cJSON_IsArray(list))
        return rd_fail(r, key, "%s; expected a list of %d entries, 0 (lightning) or 1 (softmax)",
                       list ? "not a list" : "missing", p->n);
    int n = cJSON_GetArraySize(list);
    if (n != p->n) return length_fail(r, key, n, p->n);
    p->form_key = key;
    int k = 0, v;
    const cJSON *x;
    cJSON_ArrayForEach(x, list) {
        int rc = int_at(r, key, x, k, 0, 1, &v);
        if (rc) return rc;
        p->mix[k++] = v ? base : r->row->linear;
    }
    return MP_OK;
}

static int read_hybrid_pattern(struct reader *r, struct pattern *p, enum mixer_kind base)
{
    const char *key = "hybrid_override_pattern";
    const cJSON *s = rd_get(r, key);
    if (!s || !cJSON_IsString(s))
        return rd_fail(r, key, "%s; expected a string of %d characters, one per layer: M "
                       "(Mamba-2), * (attention), - (MLP), E (mixture of experts)",
                       s ? "not a string" : "missing", p->n);
    int n = (int)strlen(s->valuestring);
    if (n != p->n) return length_fail(r, key, n, p->n);
    p->form_key = key;
    p->mlp_set = true;
    for (int i = 0; i < n; i++) {
        char c = s->valuestring[i];
        switch (c) {
        case 'M': p->mix[i] = MIXER_MAMBA2; p->mlp[i] = MLP_NONE; break;
        case '*': p->mix[i] = base; p->mlp[i] = MLP_NONE; break;
        case '-': p->mix[i] = MIXER_NONE; p->mlp[i] = MLP_DENSE; break;
        case 'E':
            if (r->m->experts == 0)
                return rd_fail(r, key, "layer %d is E (mixture of experts), but the config has "
                               "no experts; expected %s", i, rd_field_key(r, F_EXPERTS));
            p->mix[i] = MIXER_NONE; p->mlp[i] = MLP_MOE;
            break;
        default:
            return rd_fail(r, key, "character %d is '%c'; expected M, *, - or E", i, c);
        }
    }
    return MP_OK;
}

static int read_llama4(struct reader *r, struct pattern *p, enum mixer_kind base)
{
    const char *key = "no_rope_layers";
    const cJSON *list = rd_get(r, key);
    int every = 4, rc, v;
    if (list) {
        if (!cJSON_IsArray(list))
            return rd_fail(r, key, "expected a list of %d flags (1: RoPE, chunked; 0: NoPE)", p->n);
        int n = cJSON_GetArraySize(list);
        if (n != p->n) return length_fail(r, key, n, p->n);
        p->form_key = key;
    } else if ((rc = form_int(r, "no_rope_layer_interval", 4, 1, &every))) {
        return rc;
    }
    const cJSON *x = list ? list->child : NULL;
    for (int i = 0; i < p->n; i++, x = x ? x->next : NULL) {
        bool rope;
        if (list) {
            if ((rc = int_at(r, key, x, i, 0, 1, &v))) return rc;
            rope = v;
        } else {
            rope = (i + 1) % every != 0;
        }
        p->mix[i] = rope && r->m->window > 0 ? MIXER_CHUNKED : base;
    }
    return MP_OK;
}

/* The family's own form of the mixer pattern. */
static int read_form(struct reader *r, struct pattern *p, enum mixer_kind base)
{
    struct model *m = r->m;
    int rc, a, b;
    switch (r->row->layers) {
    case LF_UNIFORM:
        return MP_OK;
    case LF_ALL_SLIDING:
        if (m->window > 0) {
            for (int i = 0; i < p->n; i++) p->mix[i] = MIXER_SLIDING;
            p->form_key = rd_field_key(r, F_WINDOW);
        }
        return MP_OK;
    case LF_QWEN2_WINDOW: {
        bool use;
        if ((rc = rd_bool(r, "use_sliding_window", false, &use)) ||
            (rc = form_int(r, "max_window_layers", p->n, 0, &a)))
            return rc;
        if (rd_get(r, "use_sliding_window")) p->form_key = "use_sliding_window";
        if (use && m->window > 0)
            for (int i = a; i < p->n; i++) p->mix[i] = MIXER_SLIDING;
        return MP_OK;
    }
    case LF_EVERY_NTH: {
        bool present;
        if ((rc = rd_field_int(r, F_FULL_EVERY, true, 0, &a, &present))) return rc;
        if (present) p->form_key = rd_field_key(r, F_FULL_EVERY);
        for (int i = 0; i < p->n; i++) p->mix[i] = (i + 1) % a ? r->row->other : base;
        return MP_OK;
    }
    case LF_KIMI:
        return read_kimi(r, p, base);
    case LF_ATTN_TYPE_LIST:
        return read_attn_type_list(r, p, base);
    case LF_HYBRID_PATTERN:
        return read_hybrid_pattern(r, p, base);
    case LF_JAMBA:
        if ((rc = form_int(r, "attn_layer_period", 8, 1, &a)) ||
            (rc = form_int(r, "attn_layer_offset", 4, 0, &b)))
            return rc;
        if (b >= a)
            return rd_fail(r, "attn_layer_offset", "%d is not below attn_layer_period %d", b, a);
        if (rd_get(r, "attn_layer_period")) p->form_key = "attn_layer_period";
        for (int i = 0; i < p->n; i++) p->mix[i] = i % a == b ? base : MIXER_MAMBA;
        return MP_OK;
    case LF_LLAMA4:
        return read_llama4(r, p, base);
    }
    return MP_OK;
}

/* `layer_types`, which every family may write. */
static int read_layer_types(struct reader *r, struct pattern *p, enum mixer_kind base)
{
    const char *key = "layer_types";
    const cJSON *types = rd_get(r, key);
    if (!types) return MP_OK;
    if (!cJSON_IsArray(types)) return rd_fail(r, key, "expected a list of %d layer types (one per "
                                              "layer)", p->n);
    int n = cJSON_GetArraySize(types);
    if (n != p->n)
        return rd_fail(r, key, "expected a list of %d layer types (one per layer), got %d", p->n, n);
    static const struct { const char *name; int kind; } names[] = {
        {"full_attention", -1}, {"sliding_attention", MIXER_SLIDING},
        {"chunked_attention", MIXER_CHUNKED}, {"linear_attention", -2},
    };
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, types) {
        const char *s = cJSON_IsString(t) ? t->valuestring : "";
        int kind = -3;
        for (size_t j = 0; j < sizeof names / sizeof *names; j++)
            if (!strcmp(s, names[j].name)) kind = names[j].kind;
        if (kind == -3)
            return rd_fail(r, key, "entry %d: expected \"full_attention\", \"sliding_attention\", "
                           "\"chunked_attention\" or \"linear_attention\"", i);
        enum mixer_kind k = kind == -1 ? base : kind == -2 ? r->row->linear : (enum mixer_kind)kind;
        if (kind == -2 && k == MIXER_NONE)
            return rd_fail(r, key, "entry %d: linear_attention, but %s has no linear-attention "
                           "layers; expected full_attention or sliding_attention", i,
                           r->row->model_type);
        if (p->form_key && k != p->mix[i])
            return rd_fail(r, key, "entry %d is %s, but %s%s makes layer %d %s; expected the "
                           "two to agree", i, s, r->prefix, p->form_key, i,
                           mixer_info(p->mix[i])->name);
        p->mix[i++] = k;
    }
    return MP_OK;
}

/* Which decoders are MoE, by the family's spelling. */
static int read_moe_layers(struct reader *r, struct pattern *p)
{
    struct model *m = r->m;
    int rc, a, b;
    if (m->experts == 0 || p->mlp_set) return MP_OK;
    bool *moe = mp_xcalloc((size_t)p->n, sizeof *moe);
    switch (r->row->moe) {
    case MOE_ALL:
    case MOE_PATTERN:
        for (int i = 0; i < p->n; i++) moe[i] = true;
        break;
    case MOE_QWEN: {
        if ((rc = form_int(r, "decoder_sparse_step", 1, 1, &a))) goto out;
        for (int i = 0; i < p->n; i++) moe[i] = (i + 1) % a == 0;
        const char *key = "mlp_only_layers";
        const cJSON *list = rd_get(r, key), *x;
        if (list && !cJSON_IsArray(list)) {
            rc = rd_fail(r, key, "expected a list of 0-based layer numbers (0..%d)", p->n - 1);
            goto out;
        }
        int k = 0;
        cJSON_ArrayForEach(x, list) {
            if ((rc = int_at(r, key, x, k++, 0, p->n - 1, &b))) goto out;
            moe[b] = false;
        }
        break;
    }
    case MOE_DEEPSEEK:
        if ((rc = form_int(r, "moe_layer_freq", 1, 1, &a))) goto out;
        for (int i = 0; i < p->n; i++) moe[i] = i >= m->first_dense && i % a == 0;
        break;
    case MOE_JAMBA:
        if ((rc = form_int(r, "expert_layer_period", 2, 1, &a)) ||
            (rc = form_int(r, "expert_layer_offset", 1, 0, &b)))
            goto out;
        if (b >= a) {
            rc = rd_fail(r, "expert_layer_offset", "%d is not below expert_layer_period %d", b, a);
            goto out;
        }
        for (int i = 0; i < p->n; i++) moe[i] = i % a == b;
        break;
    case MOE_LLAMA4: {
        const char *key = "moe_layers";
        const cJSON *list = rd_get(r, key), *x;
        if (list) {
            if (!cJSON_IsArray(list)) {
                rc = rd_fail(r, key, "expected a list of 0-based layer numbers (0..%d)", p->n - 1);
                goto out;
            }
            int k = 0;
            cJSON_ArrayForEach(x, list) {
                if ((rc = int_at(r, key, x, k++, 0, p->n - 1, &b))) goto out;
                moe[b] = true;
            }
        } else {
            if ((rc = form_int(r, "interleave_moe_layer_step", 1, 1, &a))) goto out;
            for (int i = a - 1; i < p->n; i += a) moe[i] = true;
        }
        break;
    }
    }
    for (int i = 0; i < p->n; i++) p->mlp[i] = moe[i] ? MLP_MOE : MLP_DENSE;
    rc = MP_OK;
out:
    free(moe);
    return rc;
}

int pattern_read(struct reader *r)
{
    struct model *m = r->m;
    struct pattern p = {
        .mix = mp_xmalloc((size_t)m->decoders * sizeof *p.mix),
        .mlp = mp_xmalloc((size_t)m->decoders * sizeof *p.mlp),
        .n = m->decoders,
    };
    enum mixer_kind base = m->kv_lora_rank ? MIXER_MLA : MIXER_ATTENTION;
    for (int i = 0; i < p.n; i++) {
        p.mix[i] = base;
        p.mlp[i] = MLP_DENSE;
    }
    int rc = read_form(r, &p, base);
    if (!rc) rc = read_layer_types(r, &p, base);
    if (!rc) rc = read_moe_layers(r, &p);
    for (int i = 0; !rc && i < p.n; i++) {
        struct layer *L = &m->layer[i + 1];
        L->mixer = p.mix[i];
        L->mlp = p.mlp[i];
        if (mixer_info(L->mixer)->windowed) {
            if (m->window <= 0)
                rc = rd_fail(r, rd_field_key(r, F_WINDOW), "missing; expected the window (tokens) "
                             "of the %s layers (layer %d is one)", mixer_info(L->mixer)->name, i);
            L->window = m->window;
        }
    }
    free(p.mix);
    free(p.mlp);
    return rc;
}
