/* model_read.c — read a Hugging Face config.json into a layer list, by the
 * family's row of the architecture table (arch.h, arch_table.c). This file
 * picks the row, finds the language model (top level or text_config), reads
 * the sizes by the row's spellings and defaults, and counts each layer's
 * parameters from the kinds of layer_kinds.c; the per-layer pattern is
 * model_pattern.c, quantization model_quant.c, pricing model_cost.c. See
 * model.h for the API and models/README.md for the families read; the
 * access to keys (spellings, defaults, lines) is model_keys.c. */
#include "model_impl.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/io/config.h"

/* The most decoder layers a model may have (each gets a struct layer). */
#define MODEL_MAX_LAYERS 100000

/* ------------------------------------------------------------------ */
/* Which row: model.family, else model_type, else architectures[0]. */

static int unknown_family(const struct reader *r, const char *what, const char *name,
                          const char *cls)
{
    char known[640];
    arch_list_read(known, sizeof known);
    const struct arch_row *best = NULL;
    size_t bd = 4;
    for (const struct arch_row *a = arch_rows; a->model_type; a++) {
        size_t d = mp_edit_distance(name, a->model_type);
        if (!a->refused && d < bd) { bd = d; best = a; }
    }
    char hint[160] = "";
    const struct arch_row *by_class = cls ? arch_find_class(cls) : NULL;
    if (by_class && !by_class->refused)
        snprintf(hint, sizeof hint, " (its architectures[0] %s is read by row %s: set "
                 "model.family = %s)", cls, by_class->model_type, by_class->model_type);
    else if (best)
        snprintf(hint, sizeof hint, " (did you mean %s?)", best->model_type);
    if (!strcmp(what, "model.family"))
        return mp_fail(r->err, MP_ERR_INPUT, "%s: key model.family = %s: unknown architecture "
                       "row%s; expected one of %s", r->origin, name, hint, known);
    return rd_fail(r, "model_type", "unknown family \"%s\"%s; expected one of %s, or "
                   "model.family = <row> to read it as one of them", name, hint, known);
}

static int pick_row(struct reader *r, const char *family)
{
    const cJSON *type = rd_get(r, "model_type");
    if (type && !cJSON_IsString(type)) {
        char shown[64];
        rd_show(type, shown, sizeof shown);
        return rd_fail(r, "model_type", "expected a family name (a string), got %s", shown);
    }
    const cJSON *archs = rd_get(r, "architectures");
    const char *cls = NULL;
    if (archs) {
        const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
        if (!first || !cJSON_IsString(first)) {
            char shown[64];
            rd_show(archs, shown, sizeof shown);
            return rd_fail(r, "architectures", "expected a list of class names, got %s", shown);
        }
        cls = first->valuestring;
    }
    const struct arch_row *row = NULL;
    if (family && *family) {
        row = arch_find(family);
        if (!row) return unknown_family(r, "model.family", family, NULL);
        if (row->refused)
            return mp_fail(r->err, MP_ERR_INPUT, "%s: key model.family = %s: that row is not "
                           "read: %s", r->origin, family, row->refused);
    } else if (type) {
        row = arch_find(type->valuestring);
        if (!row) return unknown_family(r, "model_type", type->valuestring, cls);
        if (row->refused)
            return rd_fail(r, "model_type", "%s is not read: %s", type->valuestring,
                           row->refused);
    } else if (cls) {
        row = arch_find_class(cls);
        if (!row) {
            char known[640];
            arch_list_read(known, sizeof known);
            return rd_fail(r, "architectures", "%s is no class of a family read, and there is no "
                           "model_type; expected a model_type of %s, or model.family = <row>",
                           cls, known);
        }
        if (row->refused) return rd_fail(r, "architectures", "%s is not read: %s", cls,
                                         row->refused);
    } else {
        char known[640];
        arch_list_read(known, sizeof known);
        return mp_fail(r->err, MP_ERR_INPUT, "%s: key model_type: missing (and no "
                       "architectures); expected one of %s, or model.family = <row>",
                       r->origin, known);
    }
    r->row = row;
    if (!row->text_key) return MP_OK;

    /* A multimodal wrapper: the language model under text_key, read by the
     * row it names or by that object's own model_type. */
    r->m->wrapper = row;
    const cJSON *text = rd_get(r, row->text_key);
    if (text && !cJSON_IsObject(text))
        return rd_fail(r, row->text_key, "expected an object holding the language model's keys");
    const char *inner = row->text_row;
    if (text) {
        r->obj = text;
        snprintf(r->prefix_buf, sizeof r->prefix_buf, "%s.", row->text_key);
        r->prefix = r->prefix_buf;
        const cJSON *t = rd_get(r, "model_type");
        if (!inner) {
            if (!t || !cJSON_IsString(t))
                return rd_fail(r, "model_type", "missing; expected the language model's family "
                               "(%s reads its %s by that)", row->model_type, row->text_key);
            inner = t->valuestring;
        }
    } else if (!inner) {
        return rd_fail(r, row->text_key, "missing; expected the language model's keys (%s "
                       "keeps them there)", row->model_type);
    }
    const struct arch_row *in = arch_find(inner);
    if (!in || in->refused || in->text_key)
        return rd_fail(r, "model_type", "\"%s\": expected a language-model family mpsim reads "
                       "(%s's %s)", inner, row->model_type, row->text_key);
    r->row = in;
    return MP_OK;
}

/* ------------------------------------------------------------------ */
/* Sizes. */

static int read_mla(struct reader *r, struct model *m)
{
    int rc;
    if (!r->row->mla || !rd_get(r, "kv_lora_rank")) return MP_OK;
    if ((rc = rd_int(r, "kv_lora_rank", 0, 1, &m->kv_lora_rank)) ||
        (rc = rd_int(r, "q_lora_rank", 0, 0, &m->q_lora_rank)) ||
        (rc = rd_int(r, "qk_nope_head_dim", 0, 1, &m->qk_nope_head_dim)) ||
        (rc = rd_int(r, "qk_rope_head_dim", 0, 1, &m->qk_rope_head_dim)) ||
        (rc = rd_int(r, "v_head_dim", 0, 1, &m->v_head_dim)))
        return rc;
    if (!m->qk_nope_head_dim || !m->qk_rope_head_dim || !m->v_head_dim)
        return rd_fail(r, !m->qk_nope_head_dim ? "qk_nope_head_dim" : !m->qk_rope_head_dim
                       ? "qk_rope_head_dim" : "v_head_dim",
                       "missing; expected a positive integer (MLA, as kv_lora_rank says)");
    m->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
    return MP_OK;
}

static int norm_params(enum norm_kind k, int h) { return k == NORM_LAYER ? 2 * h : h; }

static int read_sizes(struct reader *r, struct model *m)
{
    const struct arch_row *row = r->row;
    int rc;
    bool has_ffn, has_head_dim, has_kv;
    if ((rc = rd_field_int(r, F_HIDDEN, true, 0, &m->hidden, NULL)) ||
        (rc = rd_field_int(r, F_LAYERS, true, 0, &m->decoders, NULL)) ||
        (rc = rd_field_int(r, F_HEADS, true, 0, &m->heads, NULL)) ||
        (rc = rd_field_int(r, F_KV_HEADS, false, m->heads, &m->kv_heads, &has_kv)) ||
        (rc = rd_field_int(r, F_HEAD_DIM, false, 0, &m->head_dim, &has_head_dim)) ||
        (rc = rd_field_int(r, F_FFN, row->ffn_mult == 0, 0, &m->intermediate, &has_ffn)) ||
        (rc = rd_field_int(r, F_VOCAB, true, 0, &m->vocab, NULL)) ||
        (rc = rd_field_int(r, F_POSITIONS, row->pos == POS_LEARNED, 0, &m->max_positions, NULL)) ||
        (rc = rd_field_bool(r, F_TIED, false, &m->tied_embeddings)) ||
        (rc = rd_field_int(r, F_WINDOW, false, 0, &m->window, NULL)))
        return rc;
    if (!has_ffn && row->ffn_mult) {
        m->intermediate = row->ffn_mult * m->hidden;
        key_list_add(&m->defaults, "%s%s = %d (%d x hidden)", r->prefix, rd_field_key(r, F_FFN),
                     m->intermediate, row->ffn_mult);
    }
    if (!has_kv && m->kv_heads == m->heads && rd_field_key(r, F_KV_HEADS))
        key_list_add(&m->defaults, "%s%s = %d (= heads)", r->prefix, rd_field_key(r, F_KV_HEADS),
                     m->kv_heads);
    if (row->pos == POS_LEARNED && m->max_positions < 1)
        return rd_fail(r, rd_field_key(r, F_POSITIONS), "expected a positive integer (the rows "
                       "of %s's learned position table)", row->model_type);
    int embed_dim;
    bool has_embed;
    if ((rc = rd_field_int(r, F_EMBED_DIM, false, m->hidden, &embed_dim, &has_embed))) return rc;
    if (has_embed && r->row->keys[F_EMBED_DIM][0] && embed_dim != m->hidden)
        return rd_fail(r, rd_field_key(r, F_EMBED_DIM), "%d differs from hidden_size %d; expected "
                       "them equal (a projected embedding, as OPT-350m has, is not read)",
                       embed_dim, m->hidden);

    /* Biases, norms, the family's extras. */
    bool attn_bias, mlp_bias;
    if ((rc = rd_field_bool(r, F_ATTN_BIAS, false, &attn_bias)) ||
        (rc = rd_field_bool(r, F_MLP_BIAS, false, &mlp_bias)))
        return rc;
    m->bias = row->bias | (attn_bias ? BIAS_QKV | BIAS_O : 0) | (mlp_bias ? BIAS_MLP : 0);
    m->gated_mlp = row->gated_mlp;
    m->learned_positions = row->pos == POS_LEARNED;
    m->norm_params = norm_params(row->norm, m->hidden);
    m->norms_per_layer = row->norms;
    m->attn_gate = row->attn_gate;
    m->attn_sinks = row->attn_sinks;
    m->embed_norm = row->embed_norm;
    (void)rd_field_str(r, F_ACT); /* read for `mpsim model`; the row fixes the MLP's shape */

    if ((rc = read_mla(r, m))) return rc;
    if (m->head_dim == 0) {
        /* MLA fixes its own head widths, so heads need not divide hidden. */
        if (m->hidden % m->heads)
            return rd_fail(r, rd_field_key(r, F_HEADS),
                           "%d heads do not divide %s %d (and no head_dim is given)", m->heads,
                           rd_field_key(r, F_HIDDEN), m->hidden);
        m->head_dim = m->hidden / m->heads;
        (void)has_head_dim;
    }
    if (m->kv_heads > m->heads || m->heads % m->kv_heads)
        return rd_fail(r, rd_field_key(r, F_KV_HEADS), "%d does not divide %s %d", m->kv_heads,
                       rd_field_key(r, F_HEADS), m->heads);
    bool qk = row->qk_norm != QK_NONE;
    if (qk && row->keys[F_QK_NORM][0] && (rc = rd_field_bool(r, F_QK_NORM, false, &qk))) return rc;
    m->qk_norm_params = !qk ? 0 : row->qk_norm == QK_HEAD_DIM ? 2 * m->head_dim
                        : row->qk_norm == QK_PER_HEAD ? (m->heads + m->kv_heads) * m->head_dim : 0;
    return MP_OK;
}

/* MoE keys by the row's spellings: experts, top-k, expert width, shared
 * experts (a count, a width, or both), DeepSeek's groups and dense prefix. */
static int read_moe(struct reader *r, struct model *m)
{
    const struct arch_row *row = r->row;
    int rc, shared_width = 0;
    bool has_width = false;
    if (!row->keys[F_EXPERTS][0]) return MP_OK; /* a dense family */
    if ((rc = rd_field_int(r, F_EXPERTS, false, 0, &m->experts, NULL))) return rc;
    if (m->experts == 0) return MP_OK;
    if ((rc = rd_field_int(r, F_EXPERTS_PER_TOK, true, 0, &m->experts_per_token, NULL)) ||
        (rc = rd_field_int(r, F_MOE_FFN, true, 0, &m->moe_intermediate, NULL)) ||
        (rc = rd_field_int(r, F_SHARED_EXPERTS, false, 0, &m->shared_experts, NULL)) ||
        (rc = rd_field_int(r, F_SHARED_FFN, false, 0, &shared_width, &has_width)))
        return rc;
    if (row->moe == MOE_DEEPSEEK &&
        ((rc = rd_int(r, "n_group", 0, 0, &m->expert_groups)) ||
         (rc = rd_int(r, "topk_group", 0, 0, &m->groups_per_token)) ||
         (rc = rd_int(r, "first_k_dense_replace", 0, 0, &m->first_dense))))
        return rc;
    if (m->experts_per_token > m->experts)
        return rd_fail(r, rd_field_key(r, F_EXPERTS_PER_TOK), "%d is more than the %d experts",
                       m->experts_per_token, m->experts);
    /* Qwen names a width and means one shared expert; DeepSeek names a count
     * of experts as wide as the routed ones. */
    if (!m->shared_experts && shared_width > 0) m->shared_experts = 1;
    if (!has_width || shared_width == 0) shared_width = m->shared_experts ? m->moe_intermediate : 0;
    if ((double)m->shared_experts * shared_width > MODEL_INT_MAX)
        return rd_fail(r, rd_field_key(r, F_SHARED_EXPERTS), "expected shared experts x width of "
                       "at most %d, got %d x %d", MODEL_INT_MAX, m->shared_experts, shared_width);
    m->shared_intermediate = m->shared_experts * shared_width;
    return MP_OK;
}

/* Linear-attention and SSM sizes, read only when a layer of that kind is
 * there (so a dense config's stray keys stay in the warnings). */
static int read_recurrent(struct reader *r, struct model *m)
{
    bool kind[N_MIXER_KINDS] = {false};
    for (int i = 1; i <= m->decoders; i++) kind[m->layer[i].mixer] = true;
    int rc;
    if (kind[MIXER_GATED_DELTANET] &&
        ((rc = rd_field_int(r, F_LIN_K_HEADS, true, 0, &m->lin.k_heads, NULL)) ||
         (rc = rd_field_int(r, F_LIN_V_HEADS, true, 0, &m->lin.v_heads, NULL)) ||
         (rc = rd_field_int(r, F_LIN_K_DIM, true, 0, &m->lin.k_dim, NULL)) ||
         (rc = rd_field_int(r, F_LIN_V_DIM, true, 0, &m->lin.v_dim, NULL)) ||
         (rc = rd_field_int(r, F_LIN_CONV, true, 0, &m->lin.conv, NULL))))
        return rc;
    if (kind[MIXER_KDA] &&
        ((rc = rd_field_int(r, F_LIN_K_HEADS, true, 0, &m->lin.k_heads, NULL)) ||
         (rc = rd_field_int(r, F_LIN_K_DIM, true, 0, &m->lin.k_dim, NULL)) ||
         (rc = rd_field_int(r, F_LIN_CONV, true, 0, &m->lin.conv, NULL))))
        return rc;
    if (kind[MIXER_KDA]) {
        m->lin.v_heads = m->lin.k_heads;
        m->lin.v_dim = m->lin.k_dim;
    }
    if (kind[MIXER_LINEAR] &&
        ((rc = rd_field_int(r, F_LIN_K_HEADS, false, m->heads, &m->lin.k_heads, NULL)) ||
         (rc = rd_field_int(r, F_LIN_K_DIM, false, m->head_dim, &m->lin.k_dim, NULL))))
        return rc;
    if (kind[MIXER_MAMBA]) {
        int expand;
        if ((rc = rd_field_int(r, F_SSM_STATE, true, 0, &m->ssm.state, NULL)) ||
            (rc = rd_field_int(r, F_SSM_CONV, true, 0, &m->ssm.conv, NULL)) ||
            (rc = rd_field_int(r, F_SSM_EXPAND, true, 0, &expand, NULL)) ||
            (rc = rd_field_bool(r, F_SSM_CONV_BIAS, true, &m->ssm.conv_bias)) ||
            (rc = rd_field_bool(r, F_SSM_PROJ_BIAS, false, &m->ssm.proj_bias)))
            return rc;
        if ((double)expand * m->hidden > MODEL_INT_MAX)
            return rd_fail(r, rd_field_key(r, F_SSM_EXPAND), "expected expand x hidden of at "
                           "most %d, got %d x %d", MODEL_INT_MAX, expand, m->hidden);
        m->ssm.inner = expand * m->hidden;
        /* JambaConfig: mamba_dt_rank "auto" means ceil(hidden / 16). */
        const char *key = rd_field_key(r, F_SSM_DT_RANK);
        const cJSON *v = rd_get(r, key);
        const char *def = r->row->def[F_SSM_DT_RANK];
        if ((v && cJSON_IsString(v) && !strcmp(v->valuestring, "auto")) ||
            (!v && def && !strcmp(def, "auto"))) {
            m->ssm.dt_rank = (m->hidden + 15) / 16;
            if (!v) key_list_add(&m->defaults, "%s%s = auto = %d (%s default)", r->prefix, key,
                                 m->ssm.dt_rank, r->row->model_type);
        } else if ((rc = rd_field_int(r, F_SSM_DT_RANK, true, 0, &m->ssm.dt_rank, NULL))) {
            return rc;
        }
    }
    if (kind[MIXER_MAMBA2]) {
        if ((rc = rd_field_int(r, F_SSM_HEADS, true, 0, &m->ssm.heads, NULL)) ||
            (rc = rd_field_int(r, F_SSM_HEAD_DIM, true, 0, &m->ssm.head_dim, NULL)) ||
            (rc = rd_field_int(r, F_SSM_STATE, true, 0, &m->ssm.state, NULL)) ||
            (rc = rd_field_int(r, F_SSM_GROUPS, true, 0, &m->ssm.groups, NULL)) ||
            (rc = rd_field_int(r, F_SSM_CONV, true, 0, &m->ssm.conv, NULL)) ||
            (rc = rd_field_bool(r, F_SSM_CONV_BIAS, true, &m->ssm.conv_bias)) ||
            (rc = rd_field_bool(r, F_SSM_PROJ_BIAS, false, &m->ssm.proj_bias)))
            return rc;
        if ((double)m->ssm.heads * m->ssm.head_dim > MODEL_INT_MAX)
            return rd_fail(r, rd_field_key(r, F_SSM_HEADS), "expected heads x head_dim of at "
                           "most %d, got %d x %d", MODEL_INT_MAX, m->ssm.heads, m->ssm.head_dim);
        m->ssm.inner = m->ssm.heads * m->ssm.head_dim;
        if (m->ssm.heads % m->ssm.groups)
            return rd_fail(r, rd_field_key(r, F_SSM_GROUPS), "%d groups do not divide %d heads",
                           m->ssm.groups, m->ssm.heads);
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ */
/* Parameters of one decoder. */

static double mlp_matmul(const struct model *m, double width)
{
    return (m->gated_mlp ? 3.0 : 2.0) * m->hidden * width;
}

/* Biases of one MLP of `width`: gate and up (width each) or up, and down (h). */
static double mlp_biases(const struct model *m, double width)
{
    return (m->gated_mlp ? 2.0 : 1.0) * width + m->hidden;
}

/* Fill a decoder's params, active params, matmul params and KV/state. */
static void count_decoder(const struct model *m, struct layer *L)
{
    double h = m->hidden, mixer_mm = 0;
    double mixer = kind_params(m, L->mixer, &mixer_mm);
    /* What every token of the layer uses, and its weight matrices. */
    double fixed = mixer + (double)m->norms_per_layer * m->norm_params, fixed_mm = mixer_mm;
    double expert_all = 0, expert_active = 0, expert_active_mm = 0;
    if (L->mlp == MLP_DENSE) {
        double ffn = mlp_matmul(m, m->intermediate);
        fixed_mm += ffn;
        fixed += ffn + (m->bias & BIAS_MLP ? mlp_biases(m, m->intermediate) : 0);
    } else if (L->mlp == MLP_MOE) {
        double one = mlp_matmul(m, m->moe_intermediate);
        double one_bias = m->bias & BIAS_EXPERTS ? mlp_biases(m, m->moe_intermediate) : 0;
        double router = h * m->experts;
        double shared = m->shared_intermediate ? mlp_matmul(m, m->shared_intermediate) : 0;
        if (m->family->shared_gate && m->shared_intermediate) shared += h; /* shared_expert_gate */
        fixed_mm += router + shared;
        fixed += router + shared;
        if (m->bias & BIAS_ROUTER) fixed += m->experts;
        if (m->family->score_bias) fixed += m->experts; /* e_score_correction_bias */
        expert_all = (one + one_bias) * m->experts;
        expert_active = (one + one_bias) * m->experts_per_token;
        expert_active_mm = one * m->experts_per_token;
    }
    L->attn = mixer_info(L->mixer)->attn;
    L->moe = L->mlp == MLP_MOE;
    L->mixer_params = mixer;
    L->params = fixed + expert_all;
    L->active_params = fixed + expert_active;
    L->matmul_params = fixed_mm + expert_active_mm;
    L->expert_params = expert_all;
    double conv;
    L->kv_elems_per_token = kind_kv_elems(m, L->mixer);
    L->state_elems = kind_state_elems(m, L->mixer, &conv);
    L->conv_state_elems = conv;
}

/* DeepSeek's MTP module (DeepSeek-V3 report, section 2.2): enorm and hnorm
 * (h each), eh_proj (2h -> h), one decoder block like the last, and the
 * shared head's final norm (h); embedding and head are the main model's. */
static int read_mtp(struct reader *r, struct model *m)
{
    int rc = rd_field_int(r, F_MTP, false, 0, &m->mtp_modules, NULL);
    if (rc || m->mtp_modules == 0) return rc;
    if (m->mtp_modules > 16)
        return rd_fail(r, rd_field_key(r, F_MTP), "expected at most 16 prediction modules, got %d",
                       m->mtp_modules);
    struct layer *L = &m->mtp;
    *L = m->layer[m->decoders];
    L->decoder_index = -1;
    double h = m->hidden;
    L->params += 2 * h * h + 3 * h;
    L->active_params += 2 * h * h + 3 * h;
    L->matmul_params += 2 * h * h;
    return MP_OK;
}

static int build_layers(struct reader *r, struct model *m)
{
    if (m->decoders > MODEL_MAX_LAYERS)
        return rd_fail(r, rd_field_key(r, F_LAYERS), "expected at most %d layers, got %d",
                       MODEL_MAX_LAYERS, m->decoders);
    m->n_layers = m->decoders + 2;
    m->layer = mp_xcalloc((size_t)m->n_layers, sizeof *m->layer);
    int rc;
    if ((rc = pattern_read(r)) || (rc = read_recurrent(r, m))) return rc;

    double h = m->hidden, V = m->vocab;
    struct layer *e = &m->layer[0];
    e->kind = LAYER_EMBEDDING;
    e->decoder_index = -1;
    e->attn = ATTN_NONE;
    e->params = V * h +
                (m->learned_positions ? ((double)m->max_positions + m->family->pos_offset) * h : 0) +
                (m->embed_norm ? m->norm_params : 0);
    /* Published "active" counts (Mixtral 12.9B, Qwen3's) include the
     * embedding table, so model_active_params does too; model_param_counts
     * gives the other conventions. */
    e->active_params = e->params;

    for (int i = 0; i < m->decoders; i++) {
        struct layer *L = &m->layer[i + 1];
        L->kind = LAYER_DECODER;
        L->decoder_index = i;
        count_decoder(m, L);
    }

    struct layer *head = &m->layer[m->n_layers - 1];
    head->kind = LAYER_LM_HEAD;
    head->decoder_index = -1;
    head->attn = ATTN_NONE;
    /* The final norm lives with the head (it runs on the last stage). */
    head->params = (m->tied_embeddings ? 0 : V * h) + m->norm_params;
    head->active_params = head->params;
    head->matmul_params = V * h; /* a tied head still multiplies by the table */
    return read_mtp(r, m);
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

int model_load_json_as(struct model *m, const char *json, size_t len, const char *origin,
                       const char *family, struct mp_error *err)
{
    memset(m, 0, sizeof *m);
    struct reader r = {.origin = origin, .prefix = "", .m = m, .err = err};
    int rc = json_doc_parse(&r.doc, json, len, origin, err);
    if (rc) return rc;
    r.root = r.obj = r.doc.root;
    if (!cJSON_IsObject(r.root)) {
        const char *what = cJSON_IsArray(r.root) ? "an array" : "a single value";
        json_doc_release(&r.doc);
        return mp_fail(err, MP_ERR_INPUT, "%s:1: expected a JSON object of config keys "
                       "(hidden_size, ...) at the top level, got %s", origin, what);
    }
    name_from_origin(m->name, sizeof m->name, origin);
    rc = pick_row(&r, family);
    if (!rc) {
        m->family = r.row;
        snprintf(m->arch, sizeof m->arch, "%s", r.row->model_type);
        rc = read_sizes(&r, m);
    }
    if (!rc) rc = read_moe(&r, m);
    if (!rc) rc = build_layers(&r, m);
    if (!rc) rc = quant_read(&r);
    if (!rc) {
        rd_collect_unused(&r, r.root, "");
        if (r.obj != r.root) rd_collect_unused(&r, r.obj, r.prefix);
    }
    json_doc_release(&r.doc);
    if (rc) model_release(m);
    return rc;
}

int model_load_json(struct model *m, const char *json, const char *origin, struct mp_error *err)
{
    return model_load_json_as(m, json, strlen(json), origin, NULL, err);
}

int model_load_as(struct model *m, const char *path, const char *family, struct mp_error *err)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    if (!f)
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot open model config: %s", path,
                       strerror(errno));
    /* The size bound before reading, so a size bomb is never loaded. */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
        (unsigned long long)st.st_size > JSON_DOC_MAX_BYTES) {
        fclose(f);
        return mp_fail(err, MP_ERR_INPUT, "%s: %lld bytes, more than the %zu MiB bound on a "
                       "config.json (Hub configs are a few KB)", path, (long long)st.st_size,
                       JSON_DOC_MAX_BYTES >> 20);
    }
    size_t cap = 0, len = 0;
    char *buf = NULL;
    for (;;) {
        MP_GROW(buf, cap, len + 4096);
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0 || len > JSON_DOC_MAX_BYTES) break;
    }
    int bad = ferror(f), e = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return mp_fail(err, MP_ERR_INPUT, "%s: cannot read model config: %s", path,
                       strerror(e));
    }
    buf[len] = '\0';
    if (len > JSON_DOC_MAX_BYTES) {
        free(buf);
        return mp_fail(err, MP_ERR_INPUT, "%s: more than the %zu MiB bound on a config.json "
                       "(Hub configs are a few KB)", path, JSON_DOC_MAX_BYTES >> 20);
    }
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        int line = 1;
        for (const char *p = buf; p < nul; p++) line += *p == '\n';
        free(buf);
        return mp_fail(err, MP_ERR_INPUT, "%s:%d: a NUL byte: expected a JSON text (is the "
                       "file binary, or UTF-16?)", path, line);
    }
    int rc = model_load_json_as(m, buf, len, path, family, err);
    free(buf);
    return rc;
}

int model_load(struct model *m, const char *path, struct mp_error *err)
{
    return model_load_as(m, path, NULL, err);
}

int model_load_config(struct model *m, const struct config *cfg, struct mp_error *err)
{
    char path[1024];
    memset(m, 0, sizeof *m);
    int rc = config_resolve_key(cfg, "model.config", "models", ".json", path, sizeof path, err);
    if (rc) return rc;
    const char *family = strcmp(cfg->model.family, "auto") ? cfg->model.family : NULL;
    return model_load_as(m, path, family, err);
}

void model_release(struct model *m)
{
    free(m->layer);
    key_list_free(&m->defaults);
    key_list_free(&m->ignored);
    key_list_free(&m->unused);
    memset(m, 0, sizeof *m);
}
