/* model_keys.c — the reader's access to config keys: by the row's spellings
 * (two that disagree are an error), with the family's defaults noted,
 * JSON null as "not set", dotted paths into sub-objects, the line of a key
 * for messages, and the keys never read (model_impl.h). */
#include "model_impl.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names kept per key list (all are counted). */
#define KEY_LIST_CAP 64

/* ------------------------------------------------------------------ */
/* Key lists. */

void key_list_add(struct key_list *l, const char *fmt, ...)
{
    l->n++;
    if (l->kept >= KEY_LIST_CAP) return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!l->names) l->names = mp_xcalloc(KEY_LIST_CAP, sizeof *l->names);
    l->names[l->kept++] = mp_xstrdup(buf);
}

void key_list_free(struct key_list *l)
{
    for (int i = 0; i < l->kept; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------------ */
/* Keys: dotted paths, lines, messages. */

/* Resolve "a.b" to object a's member b; "b" to the model object's. */
static const cJSON *locate(const struct reader *r, const char *key, const char **leaf)
{
    const char *dot = strchr(key, '.');
    *leaf = key;
    if (!dot) return r->obj;
    char head[64];
    size_t n = (size_t)(dot - key);
    if (n >= sizeof head) return NULL;
    memcpy(head, key, n);
    head[n] = '\0';
    *leaf = dot + 1;
    const cJSON *o = json_doc_peek(&r->doc, r->obj, head);
    return o && cJSON_IsObject(o) ? o : NULL;
}

int rd_fail(const struct reader *r, const char *key, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *leaf;
    const cJSON *o = locate(r, key, &leaf);
    int line = o ? json_doc_key_line(&r->doc, o, leaf) : 0;
    /* A key missing under text_config: the line that opens text_config. */
    if (line == 0 && r->obj != r->root && r->m->wrapper)
        line = json_doc_key_line(&r->doc, r->root, r->m->wrapper->text_key);
    if (line > 0)
        return mp_fail(r->err, MP_ERR_INPUT, "%s:%d: key %s%s: %s", r->origin, line, r->prefix,
                       key, what);
    return mp_fail(r->err, MP_ERR_INPUT, "%s: key %s%s: %s", r->origin, r->prefix, key, what);
}

void rd_show(const cJSON *v, char *buf, size_t size)
{
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble)) {
        snprintf(buf, size, "%s", isnan(v->valuedouble) ? "NaN"
                                  : v->valuedouble > 0 ? "Infinity" : "-Infinity");
        return;
    }
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
 * "not set" (n_inner, head_dim, q_lora_rank, sliding_window, ...). */
const cJSON *rd_get(struct reader *r, const char *key)
{
    const char *leaf;
    const cJSON *o = locate(r, key, &leaf);
    if (o && leaf != key) {
        /* The parent object counts as read too. */
        char head[64];
        size_t n = (size_t)(leaf - 1 - key);
        memcpy(head, key, n);
        head[n] = '\0';
        json_doc_get(&r->doc, r->obj, head);
    }
    const cJSON *v = o ? json_doc_get(&r->doc, o, leaf) : NULL;
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int int_value(const struct reader *r, const char *key, const cJSON *v, int min, int *out)
{
    const char *want = min > 0 ? "a positive integer" : "a non-negative integer";
    char shown[64];
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    /* Integral floats (4096.0) are accepted; HF writes them sometimes. */
    if (!cJSON_IsNumber(v) || d != floor(d) || d > INT_MAX || d < INT_MIN) {
        rd_show(v, shown, sizeof shown);
        return rd_fail(r, key, "expected %s, got %s", want, shown);
    }
    /* No real model has a width, count or length near this; the cap keeps
     * int sums and small multiples of these fields from overflowing, and a
     * typo from allocating. */
    if (d > MODEL_INT_MAX)
        return rd_fail(r, key, "expected %s of at most %d, got %.0f", want, MODEL_INT_MAX, d);
    if (d < min) return rd_fail(r, key, "expected %s, got %.0f", want, d);
    *out = (int)d;
    return MP_OK;
}

int rd_int(struct reader *r, const char *key, int fallback, int min, int *out)
{
    const cJSON *v = rd_get(r, key);
    if (!v) { *out = fallback; return MP_OK; }
    return int_value(r, key, v, min, out);
}

static int bool_value(const struct reader *r, const char *key, const cJSON *v, bool *out)
{
    if (!cJSON_IsBool(v)) {
        char shown[64];
        rd_show(v, shown, sizeof shown);
        return rd_fail(r, key, "expected true or false, got %s", shown);
    }
    *out = cJSON_IsTrue(v);
    return MP_OK;
}

int rd_bool(struct reader *r, const char *key, bool fallback, bool *out)
{
    const cJSON *v = rd_get(r, key);
    if (!v) { *out = fallback; return MP_OK; }
    return bool_value(r, key, v, out);
}

/* ------------------------------------------------------------------ */
/* Fields by the row's spellings. */

static const char *const *spellings(const struct reader *r, enum field f)
{
    return r->row->keys[f][0] ? r->row->keys[f] : field_info(f)->keys;
}

const char *rd_field_key(const struct reader *r, enum field f)
{
    const char *const *k = spellings(r, f);
    for (int i = 0; i < 3 && k[i]; i++) {
        const char *leaf;
        const cJSON *o = locate(r, k[i], &leaf);
        const cJSON *v = o ? json_doc_peek(&r->doc, o, leaf) : NULL;
        if (v && !cJSON_IsNull(v)) return k[i];
    }
    return k[0] ? k[0] : field_info(f)->name;
}

/* Tie and dtype may sit at the top level of a multimodal config. */
static bool falls_back_to_root(enum field f) { return f == F_TIED || f == F_DTYPE; }

/* Was `key` written as JSON null? That is HF's None, "explicitly not set":
 * the family's default does not apply (Mistral's sliding_window: null). */
static bool written_null(const struct reader *r, const char *key)
{
    const char *leaf;
    const cJSON *o = locate(r, key, &leaf);
    const cJSON *v = o ? json_doc_peek(&r->doc, o, leaf) : NULL;
    return v && cJSON_IsNull(v);
}

/* The value of field f and the key it was found under; with two spellings
 * present, they must be equal. `*null` (may be NULL) says a spelling was
 * written as null. */
static int field_value_n(struct reader *r, enum field f, const cJSON **out, const char **key,
                         bool *null)
{
    const char *const *k = spellings(r, f);
    *out = NULL;
    *key = k[0];
    if (null) *null = false;
    for (int i = 0; i < 3 && k[i]; i++) {
        const cJSON *v = rd_get(r, k[i]);
        if (!v && null && written_null(r, k[i])) *null = true;
        if (!v) continue;
        if (!*out) {
            *out = v;
            *key = k[i];
        } else if (field_info(f)->type != FT_STRING && !cJSON_Compare(v, *out, true)) {
            char a[64], b[64];
            rd_show(*out, a, sizeof a);
            rd_show(v, b, sizeof b);
            return rd_fail(r, k[i], "%s and %s are one key spelled twice and disagree (%s vs "
                           "%s); expected one value", *key, k[i], a, b);
        }
    }
    if (!*out && r->obj != r->root && falls_back_to_root(f)) {
        const cJSON *save = r->obj;
        const char *prefix = r->prefix;
        r->obj = r->root;
        r->prefix = "";
        int rc = field_value_n(r, f, out, key, null);
        r->obj = save;
        r->prefix = prefix;
        return rc;
    }
    return MP_OK;
}

static int field_value(struct reader *r, enum field f, const cJSON **out, const char **key)
{
    return field_value_n(r, f, out, key, NULL);
}

/* The row's default of field f (NULL: none), noted as taken. */
static const char *field_default(struct reader *r, enum field f, const char *key)
{
    const char *def = r->row->def[f];
    bool spelled = r->row->keys[f][0] || field_info(f)->keys[0];
    if (def && spelled) key_list_add(&r->m->defaults, "%s%s = %s (%s default)", r->prefix, key, def,
                          r->row->model_type);
    return def;
}

int rd_field_int(struct reader *r, enum field f, bool required, int fallback, int *out,
                 bool *present)
{
    const cJSON *v;
    const char *key;
    bool null;
    int rc = field_value_n(r, f, &v, &key, &null);
    if (rc) return rc;
    if (present) *present = v != NULL;
    const struct field_info *fi = field_info(f);
    if (v) {
        /* A row's own reading of a string (mamba_dt_rank "auto") is the
         * caller's; here every other string is an error. */
        return int_value(r, key, v, fi->min, out);
    }
    const char *def = null ? NULL : field_default(r, f, key ? key : fi->name);
    if (def) {
        *out = atoi(def);
        return MP_OK;
    }
    if (required) {
        const char *want = fi->min > 0 ? "a positive integer" : "a non-negative integer";
        const struct arch_row *outer = r->m->wrapper;
        if (outer && r->obj == r->root)
            return rd_fail(r, key ? key : fi->name, "missing; expected %s (%s keeps its language "
                           "model under %s, which this file lacks)", want, outer->model_type,
                           outer->text_key);
        return rd_fail(r, key ? key : fi->name, "missing; expected %s", want);
    }
    *out = fallback;
    return MP_OK;
}

int rd_field_bool(struct reader *r, enum field f, bool fallback, bool *out)
{
    const cJSON *v;
    const char *key;
    bool null;
    int rc = field_value_n(r, f, &v, &key, &null);
    if (rc) return rc;
    if (v) return bool_value(r, key, v, out);
    const char *def = null ? NULL : field_default(r, f, key ? key : field_info(f)->name);
    *out = def ? strcmp(def, "true") == 0 : fallback;
    return MP_OK;
}

const char *rd_field_str(struct reader *r, enum field f)
{
    const cJSON *v;
    const char *key;
    if (field_value(r, f, &v, &key)) return NULL;
    if (v && cJSON_IsString(v)) return v->valuestring;
    return r->row->def[f];
}

/* ------------------------------------------------------------------ */
/* Keys that change nothing mpsim computes (sizes, FLOPs, memory): listed
 * apart from the warnings. Sorted, for bsearch. */
static const char *const no_effect[] = {
    "_attn_implementation", "_comment", "_name_or_path", "activation_scheme",
    "add_cross_attention", "attention_dropout", "attention_softmax_in_fp32",
    "attn_logit_softcapping", "attn_pdrop", "auto_map", "aux_loss_alpha", "boi_token_index",
    "bos_token_id", "chunk_size", "decoder_start_token_id", "do_sample", "dropout",
    "embd_pdrop", "embedding_multiplier", "eoi_token_index", "eos_token_id", "ep_size",
    "expand", "final_logit_softcapping", "hidden_dropout", "image_token_id",
    "image_token_index", "initial_context_length", "initializer_factor", "initializer_range",
    "is_decoder", "layer_norm_eps", "layer_norm_epsilon", "layernorm_full_attention_alpha",
    "layernorm_full_attention_beta", "layernorm_linear_attention_alpha",
    "layernorm_linear_attention_beta", "layernorm_mlp_alpha", "layernorm_mlp_beta",
    "logit_scale", "logits_scaling", "mamba_hidden_act", "max_length", "max_window_layers",
    "mla_use_nope", "mlp_hidden_act", "mm_tokens_per_image", "moe_renormalize",
    "moe_router_activation_func", "n_ctx", "norm_eps", "norm_epsilon", "norm_topk_prob",
    "num_logits_to_keep", "output_attentions", "output_hidden_states", "output_router_logits",
    "pad_token_id", "partial_rotary_factor", "postnorm", "pretraining_tp",
    "query_pre_attn_scalar", "rescale_prenorm_residual", "resid_pdrop", "residual_in_fp32",
    "residual_multiplier", "return_dict", "rms_norm_eps", "rope_local_base_freq",
    "rope_parameters", "rope_scaling", "rope_theta", "rotary_dim", "rotary_emb_base",
    "rotary_pct", "routed_scaling_factor", "router_aux_loss_coef", "router_jitter_noise",
    "router_z_loss_coef", "scoring_func", "seq_aux", "shared_moe_mode", "sliding_window",
    "summary_activation", "summary_first_dropout", "summary_proj_to_labels", "summary_type",
    "summary_use_proj", "swiglu_limit", "tie_encoder_decoder", "tie_word_embeddings_for_head",
    "time_step_floor", "time_step_limit", "time_step_max", "time_step_min", "time_step_rank",
    "topk_method", "torchscript", "transformers_version", "unk_token_id", "use_bias_in_router",
    "use_cache", "use_flash_attention", "use_grouped_topk", "use_mamba_kernels",
    "use_sliding_window", "use_sliding_window_for_all", "video_token_id",
    "vision_end_token_id", "vision_start_token_id", "vision_token_id", "z_loss_coef",
};

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool has_no_effect(const char *key)
{
    return bsearch(&key, no_effect, sizeof no_effect / sizeof *no_effect, sizeof *no_effect,
                   str_cmp) != NULL;
}

static int by_offset(const void *a, const void *b)
{
    const struct json_key *x = *(const struct json_key *const *)a;
    const struct json_key *y = *(const struct json_key *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* Keys of `obj` never read: no-effect ones apart, in document order. */
void rd_collect_unused(struct reader *r, const cJSON *obj, const char *prefix)
{
    const struct json_obj *o = json_doc_object(&r->doc, obj);
    if (!o) return;
    const struct json_key **order = mp_xmalloc(((size_t)o->n + 1) * sizeof *order);
    for (int i = 0; i < o->n; i++) order[i] = &o->keys[i];
    qsort(order, (size_t)o->n, sizeof *order, by_offset);
    for (int i = 0; i < o->n; i++) {
        if (order[i]->used) continue;
        struct key_list *l = has_no_effect(order[i]->name) ? &r->m->ignored : &r->m->unused;
        key_list_add(l, "%s%s", prefix, order[i]->name);
    }
    free(order);
}

