/* import.c — the scenario an import builds, its model and its INI; word
 * splitting; see import.h. The two readers are import_megatron.c and
 * import_deepspeed.c. */
#include "import_impl.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "models/model.h"
#include "sim/io/outfile.h"

void imp_init(struct imp *im, const char *what, const struct import_options *opt)
{
    memset(im, 0, sizeof *im);
    im->what = what;
    im->opt = opt;
    config_defaults(&im->cfg);
}

void imp_release(struct imp *im)
{
    free(im->e);
    im->e = NULL;
    im->n = im->cap = 0;
}

void imp_warn(struct imp *im, const char *fmt, ...)
{
    if (!im->opt->warn) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(im->opt->warn, "mpsim: %s: warning: ", im->what);
    vfprintf(im->opt->warn, fmt, ap);
    fputc('\n', im->opt->warn);
    va_end(ap);
}

bool imp_has_key(const char *key)
{
    return config_find_key(key) != NULL;
}

int imp_set(struct imp *im, const char *key, const char *value, const char *from,
            struct mp_error *err)
{
    const struct config_key *k = config_find_key(key);
    if (!k) {
        imp_warn(im, "%s: not modelled yet (mpsim has no key %s); left out", from, key);
        return MP_OK;
    }
    struct mp_error e2 = { 0 };
    if (config_set_key(&im->cfg, key, value, from, &e2) != MP_OK)
        return mp_fail(err, MP_ERR_INPUT, "%s: %s", im->what, e2.msg);
    for (int i = 0; i < im->n; i++)
        if (im->e[i].key == k) {
            snprintf(im->e[i].value, sizeof im->e[i].value, "%s", value);
            snprintf(im->e[i].from, sizeof im->e[i].from, "%s", from);
            return MP_OK;
        }
    MP_GROW(im->e, im->cap, im->n + 1);
    struct imp_entry *e = &im->e[im->n++];
    e->key = k;
    snprintf(e->value, sizeof e->value, "%s", value);
    snprintf(e->from, sizeof e->from, "%s", from);
    return MP_OK;
}

/* ---- the model ----------------------------------------------------------- */

/* Megatron pads the vocabulary to a multiple of 128 × tp
 * (--make-vocab-size-divisible-by 128, megatron/training/tokenizer). */
static int padded_vocab(int v, int tp)
{
    int m = 128 * (tp > 0 ? tp : 1);
    return (v + m - 1) / m * m;
}

/* The FFN width Megatron uses when --ffn-hidden-size is not given: 4h, or
 * with --swiglu int(4h · 2/3) rounded up to a multiple of 64
 * (megatron/training/arguments.py). */
static int default_ffn(const struct imp_shape *sh)
{
    if (!sh->swiglu) return 4 * sh->hidden;
    int f = (int)(4.0 * sh->hidden * 2 / 3);
    return (f + 63) / 64 * 64;
}

static bool shape_matches(const struct imp_shape *sh, const struct model *m)
{
    if (m->decoders != sh->layers || m->hidden != sh->hidden || m->heads != sh->heads) return false;
    int ffn = sh->ffn ? sh->ffn : default_ffn(sh);
    if (sh->experts) {
        if (m->experts != sh->experts) return false;
        if (sh->topk && m->experts_per_token != sh->topk) return false;
        if (sh->moe_ffn && m->moe_intermediate != sh->moe_ffn) return false;
    } else if (m->experts || m->intermediate != ffn) {
        return false;
    }
    int kv = sh->gqa && sh->kv_groups ? sh->kv_groups : sh->heads;
    if (m->kv_heads != kv) return false;
    if (m->gated_mlp != sh->swiglu) return false;
    if (sh->vocab && m->vocab != sh->vocab) return false;
    return true;
}

/* The preset of this shape, if any: name into `out`. */
static bool find_preset(const struct imp_shape *sh, char *out, size_t size)
{
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/models", mp_data_dir());
    DIR *d = opendir(dir);
    if (!d) return false;
    char best[256] = "";
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") || n - 5 >= sizeof best) continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct model m;
        struct mp_error e;
        if (model_load(&m, path, &e) != MP_OK) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - 5), de->d_name);
        /* readdir's order is the file system's: take the first by name. */
        if (shape_matches(sh, &m) && (!best[0] || strcmp(name, best) < 0))
            snprintf(best, sizeof best, "%s", name);
        model_release(&m);
    }
    closedir(d);
    if (!best[0]) return false;
    snprintf(out, size, "%s", best);
    return true;
}

/* The shape as a Hugging Face config.json (Llama's layout with SwiGLU,
 * Mixtral's with experts, GPT-2's otherwise). */
static int write_model(const struct imp_shape *sh, const char *path, struct mp_error *err)
{
    cJSON *o = cJSON_CreateObject();
    int ffn = sh->ffn ? sh->ffn : default_ffn(sh);
    int kv = sh->gqa && sh->kv_groups ? sh->kv_groups : sh->heads;
    cJSON_AddStringToObject(o, "_comment", "written by mpsim import from Megatron-LM flags");
    if (sh->swiglu || sh->experts) {
        const char *arch = sh->experts ? "MixtralForCausalLM" : "LlamaForCausalLM";
        cJSON *a = cJSON_AddArrayToObject(o, "architectures");
        cJSON_AddItemToArray(a, cJSON_CreateString(arch));
        cJSON_AddStringToObject(o, "model_type", sh->experts ? "mixtral" : "llama");
        cJSON_AddNumberToObject(o, "hidden_size", sh->hidden);
        cJSON_AddNumberToObject(o, "intermediate_size", sh->experts && sh->moe_ffn ? sh->moe_ffn : ffn);
        cJSON_AddNumberToObject(o, "num_attention_heads", sh->heads);
        cJSON_AddNumberToObject(o, "num_key_value_heads", kv);
        cJSON_AddNumberToObject(o, "num_hidden_layers", sh->layers);
        cJSON_AddNumberToObject(o, "vocab_size", sh->vocab);
        cJSON_AddNumberToObject(o, "max_position_embeddings", sh->max_pos);
        cJSON_AddBoolToObject(o, "tie_word_embeddings", !sh->untied);
        cJSON_AddStringToObject(o, "hidden_act", "silu");
        if (sh->experts) {
            cJSON_AddNumberToObject(o, "num_local_experts", sh->experts);
            cJSON_AddNumberToObject(o, "num_experts_per_tok", sh->topk ? sh->topk : 2);
        }
    } else {
        cJSON *a = cJSON_AddArrayToObject(o, "architectures");
        cJSON_AddItemToArray(a, cJSON_CreateString("GPT2LMHeadModel"));
        cJSON_AddStringToObject(o, "model_type", "gpt2");
        cJSON_AddNumberToObject(o, "n_embd", sh->hidden);
        cJSON_AddNumberToObject(o, "n_head", sh->heads);
        cJSON_AddNumberToObject(o, "n_layer", sh->layers);
        cJSON_AddNumberToObject(o, "n_inner", ffn);
        cJSON_AddNumberToObject(o, "n_positions", sh->max_pos);
        cJSON_AddNumberToObject(o, "vocab_size", sh->vocab);
        cJSON_AddBoolToObject(o, "tie_word_embeddings", !sh->untied);
        cJSON_AddStringToObject(o, "activation_function", "gelu_new");
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    struct outfile out;
    int rc = outfile_open(&out, path, err);
    if (!rc) {
        fprintf(out.f, "%s\n", text);
        rc = outfile_commit(&out, err);
    }
    free(text);
    return rc;
}

int imp_model(struct imp *im, struct mp_error *err)
{
    struct imp_shape *sh = &im->shape;
    if (!sh->layers && !sh->hidden && !sh->heads) {
        imp_warn(im, "no model shape given (--num-layers, --hidden-size, "
                     "--num-attention-heads): model.config stays %s", im->cfg.model.config);
        return MP_OK;
    }
    if (!sh->layers || !sh->hidden || !sh->heads)
        return mp_fail(err, MP_ERR_INPUT, "%s: the model needs --num-layers, --hidden-size and "
                       "--num-attention-heads together (got %d, %d, %d)", im->what, sh->layers,
                       sh->hidden, sh->heads);
    if (!sh->vocab && !strcmp(sh->tokenizer, "GPT2BPETokenizer"))
        sh->vocab = padded_vocab(50257, im->cfg.parallel.tp); /* GPT-2's BPE: 50,257 tokens */
    if (!sh->max_pos) sh->max_pos = im->cfg.model.seq_len;
    char name[256];
    if (find_preset(sh, name, sizeof name)) {
        char from[400];
        snprintf(from, sizeof from, "the preset of this shape (%s)", im->shape_from);
        return imp_set(im, "model.config", name, from, err);
    }
    if (!im->opt->model_out)
        return mp_fail(err, MP_ERR_INPUT, "%s: no preset in models/ has this shape (%d layers, "
                       "hidden %d, %d heads, FFN %d%s); add --model-out FILE.json to write its "
                       "config.json", im->what, sh->layers, sh->hidden, sh->heads,
                       sh->ffn ? sh->ffn : default_ffn(sh), sh->experts ? ", experts" : "");
    if (!sh->vocab) {
        sh->vocab = padded_vocab(50257, im->cfg.parallel.tp);
        imp_warn(im, "no --vocab-size (and no GPT2BPETokenizer): vocabulary %d assumed "
                     "(GPT-2's, padded to 128 × tp)", sh->vocab);
    }
    int rc = write_model(sh, im->opt->model_out, err);
    if (rc) return rc;
    char from[400];
    snprintf(from, sizeof from, "written to %s from %s", im->opt->model_out, im->shape_from);
    return imp_set(im, "model.config", im->opt->model_out, from, err);
}

/* ---- the INI ------------------------------------------------------------- */

static int entry_order(const struct imp_entry *e)
{
    return (int)(e->key - config_keys);
}

static int entry_cmp(const void *pa, const void *pb)
{
    return entry_order(pa) - entry_order(pb);
}

/* "; text" wrapped at word boundaries to lines of at most 78 columns (an
 * INI line has a length limit, and people read these). */
static void write_comment(FILE *out, const char *text)
{
    const char *p = text;
    while (*p) {
        size_t len = strlen(p), cut = len;
        if (len > 76) {
            cut = 76;
            while (cut > 20 && p[cut] != ' ') cut--;
            if (p[cut] != ' ') cut = 76;
        }
        fprintf(out, "; %.*s\n", (int)cut, p);
        p += cut;
        while (*p == ' ') p++;
    }
}

int imp_finish(struct imp *im, const char *header, FILE *out, struct mp_error *err)
{
    int rc;
    for (const char *const *s = im->opt->sets; s && *s; s++) {
        const char *eq = strchr(*s, '=');
        if (!eq) return mp_fail(err, MP_ERR_INPUT, "%s: --set '%s': expected section.key=value",
                                im->what, *s);
        char key[128];
        snprintf(key, sizeof key, "%.*s", (int)(eq - *s), *s);
        char from[160];
        snprintf(from, sizeof from, "--set %s", *s);
        if (!config_find_key(key)) {
            /* A typo in our own flag is an error, with config's did-you-mean. */
            struct config scratch = im->cfg;
            return config_set(&scratch, *s, "--set", err) ? err->status : MP_ERR_INPUT;
        }
        if ((rc = imp_set(im, key, eq + 1, from, err))) return rc;
    }
    bool has_system = false;
    for (int i = 0; i < im->n; i++) has_system |= !strcmp(im->e[i].key->name, "hardware.system");
    if (!has_system) {
        const char *sys = im->opt->system ? im->opt->system : "dgx-h100";
        if (!im->opt->system)
            imp_warn(im, "the flags do not say which machine: hardware.system = dgx-h100 "
                         "assumed (--system NAME to choose)");
        if ((rc = imp_set(im, "hardware.system", sys, im->opt->system ? "--system" :
                          "assumed (no flag names the machine)", err)))
            return rc;
    }
    struct mp_error e2 = { 0 };
    if (config_check(&im->cfg, &e2) != MP_OK)
        return mp_fail(err, MP_ERR_INPUT, "%s: the flags do not make a valid scenario: %s",
                       im->what, e2.msg);
    qsort(im->e, (size_t)im->n, sizeof *im->e, entry_cmp);
    fputs(header, out);
    const char *section = "";
    for (int i = 0; i < im->n; i++) {
        const char *name = im->e[i].key->name;
        size_t len = strcspn(name, ".");
        if (strncmp(section, name, len) || section[len] != '.') {
            fprintf(out, "\n[%.*s]\n", (int)len, name);
            section = name;
        }
        char value[CONFIG_STR];
        config_format_value(&im->cfg, im->e[i].key, value, sizeof value);
        write_comment(out, im->e[i].from);
        fprintf(out, "%s = %s\n", name + len + 1, value);
    }
    return MP_OK;
}

/* ---- words --------------------------------------------------------------- */

int import_split_words(const char *s, char ***words, int *n, struct mp_error *err)
{
    char **w = NULL;
    int cap = 0, count = 0;
    size_t len = strlen(s);
    char *cur = mp_xmalloc(len + 1);
    size_t k = 0;
    bool in_word = false;
    for (size_t i = 0; i <= len; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < len) {
            if (s[i + 1] == '\n') { i++; continue; } /* a continued line */
            cur[k++] = s[++i];
            in_word = true;
        } else if (c == '\'' || c == '"') {
            const char *end = strchr(s + i + 1, c);
            if (!end) {
                free(cur);
                import_words_free(w, count);
                return mp_fail(err, MP_ERR_INPUT, "import: unterminated %c quote in the command "
                               "line", c);
            }
            size_t q = (size_t)(end - (s + i + 1));
            memcpy(cur + k, s + i + 1, q);
            k += q;
            i += q + 1;
            in_word = true;
        } else if (c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (in_word) {
                cur[k] = '\0';
                MP_GROW(w, cap, count + 1);
                w[count++] = mp_xstrdup(cur);
                k = 0;
                in_word = false;
            }
        } else {
            cur[k++] = c;
            in_word = true;
        }
    }
    free(cur);
    *words = w;
    *n = count;
    return MP_OK;
}

void import_words_free(char **words, int n)
{
    for (int i = 0; i < n; i++) free(words[i]);
    free(words);
}
