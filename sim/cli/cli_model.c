/* cli_model.c — `mpsim model PATH|PRESET`: what mpsim read from a Hugging
 * Face config.json — the family row, the layer table and pattern, parameter
 * counts by each vendor convention, KV per token and state per request, the
 * weights as shipped, and every key it took a default for, ignored or did
 * not read (models/model.h, models/arch.h). */
#include <cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim/io/config.h"
#include "models/arch.h"
#include "models/model.h"

static const char model_usage_text[] =
    "usage: mpsim model PATH|PRESET [--json] [--family ROW] [--kv-bits N]\n"
    "       mpsim model --families\n"
    "\n"
    "Reads a Hugging Face config.json (a path, or a preset of models/) and prints\n"
    "what mpsim understood: the architecture row it was read by, the decoder\n"
    "layers by kind (attention, sliding window, MLA, Gated DeltaNet, lightning,\n"
    "Mamba, ...; dense MLP or mixture of experts) and their pattern, parameters\n"
    "total and active, each with and without the embedding table and as decoder\n"
    "layers only (vendors quote different ones), KV bytes per token and recurrent\n"
    "state per request, weight bytes as the checkpoint ships them\n"
    "(quantization_config), and the keys it did not use, as warnings.\n"
    "\n"
    "  --json         one JSON object instead of the text\n"
    "  --family ROW   read the file by this architecture row (as model.family)\n"
    "  --kv-bits N    KV-cache and state precision for the byte figures (default 16)\n"
    "  --families     list the architecture rows: families read, and refused with why\n";

static const char *quote_name(enum active_quote q)
{
    switch (q) {
    case QUOTE_ALL: return "all";
    case QUOTE_NO_EMBEDDING: return "no_embedding";
    case QUOTE_DECODERS: return "decoders";
    case QUOTE_UNKNOWN: break;
    }
    return NULL;
}

/* Decoders grouped by (mixer, MLP, parameters), in order of first layer. */
struct kind_row {
    const struct layer *first;
    int count;
};

static int layer_groups(const struct model *m, struct kind_row *rows)
{
    int n = 0;
    for (int l = 1; l <= m->decoders; l++) {
        const struct layer *L = &m->layer[l];
        int g = 0;
        while (g < n && !(rows[g].first->mixer == L->mixer && rows[g].first->mlp == L->mlp &&
                          rows[g].first->params == L->params))
            g++;
        if (g == n) rows[n++] = (struct kind_row){ L, 0 };
        rows[g].count++;
    }
    return n;
}

/* One letter per decoder: its mixer, or - / E for MLP-only layers. */
static char layer_letter(const struct layer *L)
{
    if (L->mixer == MIXER_NONE) return L->mlp == MLP_MOE ? 'E' : '-';
    return mixer_info(L->mixer)->letter;
}

static char *pattern_string(const struct model *m)
{
    char *s = malloc((size_t)m->decoders + 1);
    if (!s) return NULL;
    for (int l = 1; l <= m->decoders; l++) s[l - 1] = layer_letter(&m->layer[l]);
    s[m->decoders] = '\0';
    return s;
}

static char *mlp_string(const struct model *m)
{
    char *s = malloc((size_t)m->decoders + 1);
    if (!s) return NULL;
    for (int l = 1; l <= m->decoders; l++)
        s[l - 1] = m->layer[l].mlp == MLP_MOE ? 'E' : m->layer[l].mlp == MLP_DENSE ? 'D' : '-';
    s[m->decoders] = '\0';
    return s;
}

static void fmt_count(char *buf, size_t n, double p)
{
    if (p >= 1e12) snprintf(buf, n, "%.3fT", p / 1e12);
    else if (p >= 1e9) snprintf(buf, n, "%.2fB", p / 1e9);
    else if (p >= 1e6) snprintf(buf, n, "%.2fM", p / 1e6);
    else snprintf(buf, n, "%.0f", p);
}

static void fmt_bytes(char *buf, size_t n, double b)
{
    if (b >= 1e12) snprintf(buf, n, "%.2f TB", b / 1e12);
    else if (b >= 1e9) snprintf(buf, n, "%.2f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, n, "%.2f MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, n, "%.2f KB", b / 1e3);
    else snprintf(buf, n, "%.0f B", b);
}

/* KV bytes per token and state bytes per request of one layer at `kv_bits`,
 * on one chip (tp 1). */
static void layer_kv(const struct model *m, int l, int kv_bits, struct layer_cost *c)
{
    struct cost_params cp = { .seq_len = 1, .micro_batch = 1, .tp = 1, .kv_bits = kv_bits };
    model_layer_cost(m, l, &cp, c);
}

static void print_list(FILE *f, const char *label, const char *what, const struct key_list *l)
{
    if (l->n == 0) return;
    fprintf(f, "%-11s %d %s:", label, l->n, what);
    for (int i = 0; i < l->kept; i++) fprintf(f, "%s %s", i ? "," : "", l->names[i]);
    if (l->n > l->kept) fprintf(f, ", ... (%d more)", l->n - l->kept);
    fputc('\n', f);
}

static void print_text(FILE *f, const struct model *m, const char *path, int kv_bits)
{
    char a[32], b[32], c3[32];
    const struct arch_row *row = m->family;
    fprintf(f, "model       %s (%s)\n", m->name, path);
    if (m->wrapper)
        fprintf(f, "family      %s: %s\n            its %s read as %s: %s\n", m->wrapper->model_type,
                m->wrapper->summary, m->wrapper->text_key, row->model_type, row->summary);
    else
        fprintf(f, "family      %s: %s\n", row->model_type, row->summary);
    fprintf(f, "sizes       hidden %d, %d decoder layers, vocab %d, %s embeddings; attention %d "
               "heads x %d (%d KV heads)%s\n", m->hidden, m->decoders, m->vocab,
            m->tied_embeddings ? "tied" : "untied", m->heads, m->head_dim, m->kv_heads,
            m->attn_gate ? ", output gate" : "");
    if (m->experts)
        fprintf(f, "experts     %d routed, top-%d, width %d; shared width %d\n", m->experts,
                m->experts_per_token, m->moe_intermediate, m->shared_intermediate);

    struct kind_row *rows = malloc(((size_t)m->decoders + 1) * sizeof *rows);
    int n = rows ? layer_groups(m, rows) : 0;
    fprintf(f, "\nlayers      %-26s %6s %14s %14s %16s\n", "mixer + MLP", "count", "params each",
            "KV B/token", "state B/request");
    for (int g = 0; g < n; g++) {
        const struct layer *L = rows[g].first;
        struct layer_cost c;
        layer_kv(m, (int)(L - m->layer), kv_bits, &c);
        char kinds[64], kv[32], st[32];
        if (L->window) snprintf(kinds, sizeof kinds, "%s %d + %s", mixer_info(L->mixer)->name,
                                L->window, mlp_kind_name(L->mlp));
        else snprintf(kinds, sizeof kinds, "%s + %s", mixer_info(L->mixer)->name,
                      mlp_kind_name(L->mlp));
        fmt_count(a, sizeof a, L->params);
        if (c.kv_bytes_per_token > 0) snprintf(kv, sizeof kv, "%.0f", c.kv_bytes_per_token);
        else snprintf(kv, sizeof kv, "-");
        if (c.state_bytes_per_request > 0) snprintf(st, sizeof st, "%.0f", c.state_bytes_per_request);
        else snprintf(st, sizeof st, "-");
        fprintf(f, "            %-26s %6d %14s %14s %16s\n", kinds, rows[g].count, a, kv, st);
    }
    free(rows);
    char *pat = pattern_string(m), *mlp = mlp_string(m);
    if (pat) {
        fprintf(f, "pattern     ");
        int len = (int)strlen(pat);
        for (int i = 0; i < len; i += 64) fprintf(f, "%s%.64s\n", i ? "            " : "", pat + i);
        bool mixed = false;
        for (int i = 1; mlp && mlp[i]; i++) mixed |= mlp[i] != mlp[0];
        if (mixed && mlp) {
            fprintf(f, "mlp         ");
            for (int i = 0; i < len; i += 64)
                fprintf(f, "%s%.64s\n", i ? "            " : "", mlp + i);
        }
        fprintf(f, "            (A attention, S sliding, C chunked, L linear, G gated_deltanet, "
                   "K kda, N lightning, M mamba, - MLP only, E MoE only%s)\n",
                mixed ? "; mlp: D dense, E MoE" : "");
    }
    free(pat);
    free(mlp);

    struct model_counts t, ac;
    model_param_counts(m, &t, &ac);
    fmt_count(a, sizeof a, t.all);
    fmt_count(b, sizeof b, t.no_embedding);
    fmt_count(c3, sizeof c3, t.decoders);
    fprintf(f, "\nparams      %s total; %s without the embedding table; %s in decoder layers\n",
            a, b, c3);
    fmt_count(a, sizeof a, ac.all);
    fmt_count(b, sizeof b, ac.no_embedding);
    fmt_count(c3, sizeof c3, ac.decoders);
    fprintf(f, "active      %s per token; %s without the embedding table; %s in decoder layers\n",
            a, b, c3);
    static const char *const conv[] = {
        [QUOTE_ALL] = "with the embedding (Mixtral's, Qwen's, Meta's convention)",
        [QUOTE_NO_EMBEDDING] = "without the embedding table (DeepSeek's, Kimi's, OpenAI's convention)",
        [QUOTE_DECODERS] = "decoder layers only, neither embedding nor head (MiniMax's convention)",
    };
    if (row->quote != QUOTE_UNKNOWN)
        fprintf(f, "            %s publishes its counts %s\n", row->model_type, conv[row->quote]);
    else
        fprintf(f, "            vendors differ: Mixtral and Qwen quote active with the embedding, "
                   "DeepSeek, Kimi and OpenAI without it, MiniMax decoder layers only\n");
    if (m->mtp_modules) {
        fmt_count(a, sizeof a, model_mtp_params(m));
        fprintf(f, "mtp         %d multi-token-prediction module%s, %s parameters: not in the "
                   "totals (vendors quote the main model); trained with it\n", m->mtp_modules,
                m->mtp_modules > 1 ? "s" : "", a);
    }

    /* KV per token and state per request, by mixer kind. */
    double kv_by[N_MIXER_KINDS] = {0}, st_by[N_MIXER_KINDS] = {0}, conv_by[N_MIXER_KINDS] = {0};
    int cnt[N_MIXER_KINDS] = {0};
    for (int l = 1; l <= m->decoders; l++) {
        struct layer_cost c;
        layer_kv(m, l, kv_bits, &c);
        const struct layer *L = &m->layer[l];
        kv_by[L->mixer] += c.kv_bytes_per_token;
        st_by[L->mixer] += c.state_bytes_per_request;
        conv_by[L->mixer] += L->conv_state_elems * kv_bits / 8.0;
        cnt[L->mixer]++;
    }
    bool any_kv = false, any_state = false;
    for (int k = 0; k < N_MIXER_KINDS; k++) {
        if (kv_by[k] > 0) {
            fmt_bytes(a, sizeof a, kv_by[k]);
            fprintf(f, "%-11s %s: %d layers, %s per token%s", any_kv ? "" : "kv cache",
                    mixer_info((enum mixer_kind)k)->name, cnt[k], a,
                    mixer_info((enum mixer_kind)k)->windowed ? " (kept for the window)" : "");
            fprintf(f, " at %d-bit\n", kv_bits);
            any_kv = true;
        }
    }
    for (int k = 0; k < N_MIXER_KINDS; k++) {
        if (st_by[k] > 0) {
            fmt_bytes(a, sizeof a, st_by[k]);
            fmt_bytes(b, sizeof b, conv_by[k]);
            fprintf(f, "%-11s %s: %d layers, %s per request (conv inputs %s of it) at %d-bit\n",
                    any_state ? "" : "state", mixer_info((enum mixer_kind)k)->name, cnt[k], a, b,
                    kv_bits);
            any_state = true;
        }
    }
    if (!any_kv && !any_state) fprintf(f, "kv cache    none\n");

    double P = model_params(m);
    fmt_bytes(a, sizeof a, model_shipped_weight_bytes(m));
    if (m->quant.method != QUANT_NONE && m->quant.method != QUANT_OTHER)
        fprintf(f, "weights     %s as shipped (%s: %.4g bits per quantized weight, %.0f-bit rest)",
                a, m->quant.name, m->quant.bits, m->quant.base_bits);
    else
        fprintf(f, "weights     %s as shipped (%.0f-bit)", a, m->quant.base_bits);
    fmt_bytes(a, sizeof a, P * 2);
    fmt_bytes(b, sizeof b, P);
    fmt_bytes(c3, sizeof c3, P / 2);
    fprintf(f, "; %s at 16 bits, %s at 8, %s at 4 (model.weight_bits)\n", a, b, c3);
    print_list(f, "defaults", "keys absent, the family's defaults taken", &m->defaults);
    print_list(f, "ignored", "keys that change no size or cost", &m->ignored);
    print_list(f, "warning", "keys not read", &m->unused);
}

static cJSON *key_array(const struct key_list *l)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < l->kept; i++) cJSON_AddItemToArray(a, cJSON_CreateString(l->names[i]));
    return a;
}

static void add_counts(cJSON *o, const char *key, const struct model_counts *c)
{
    cJSON *x = cJSON_AddObjectToObject(o, key);
    cJSON_AddNumberToObject(x, "total", c->all);
    cJSON_AddNumberToObject(x, "no_embedding", c->no_embedding);
    cJSON_AddNumberToObject(x, "decoders", c->decoders);
}

static void print_json(FILE *f, const struct model *m, const char *path, int kv_bits)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddStringToObject(o, "path", path);
    cJSON_AddStringToObject(o, "family", m->family->model_type);
    if (m->wrapper) cJSON_AddStringToObject(o, "wrapper", m->wrapper->model_type);
    else cJSON_AddNullToObject(o, "wrapper");
    cJSON_AddNumberToObject(o, "hidden", m->hidden);
    cJSON_AddNumberToObject(o, "decoders", m->decoders);
    cJSON_AddNumberToObject(o, "vocab", m->vocab);
    cJSON_AddNumberToObject(o, "heads", m->heads);
    cJSON_AddNumberToObject(o, "kv_heads", m->kv_heads);
    cJSON_AddNumberToObject(o, "head_dim", m->head_dim);
    cJSON_AddBoolToObject(o, "tied_embeddings", m->tied_embeddings);
    cJSON_AddBoolToObject(o, "gated_mlp", m->gated_mlp);
    cJSON_AddNumberToObject(o, "experts", m->experts);
    cJSON_AddNumberToObject(o, "experts_per_token", m->experts_per_token);
    cJSON_AddNumberToObject(o, "kv_bits", kv_bits);

    struct kind_row *rows = malloc(((size_t)m->decoders + 1) * sizeof *rows);
    int n = rows ? layer_groups(m, rows) : 0;
    cJSON *kinds = cJSON_AddArrayToObject(o, "layer_kinds");
    for (int g = 0; g < n; g++) {
        const struct layer *L = rows[g].first;
        struct layer_cost c;
        layer_kv(m, (int)(L - m->layer), kv_bits, &c);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "mixer", mixer_info(L->mixer)->name);
        cJSON_AddStringToObject(e, "mlp", mlp_kind_name(L->mlp));
        cJSON_AddNumberToObject(e, "count", rows[g].count);
        cJSON_AddNumberToObject(e, "first_layer", L->decoder_index);
        cJSON_AddNumberToObject(e, "params_per_layer", L->params);
        cJSON_AddNumberToObject(e, "active_params_per_layer", L->active_params);
        cJSON_AddNumberToObject(e, "window", L->window);
        cJSON_AddNumberToObject(e, "kv_bytes_per_token", c.kv_bytes_per_token);
        cJSON_AddNumberToObject(e, "state_bytes_per_request", c.state_bytes_per_request);
        cJSON_AddNumberToObject(e, "conv_state_bytes_per_request", L->conv_state_elems * kv_bits / 8.0);
        cJSON_AddItemToArray(kinds, e);
    }
    free(rows);
    char *pat = pattern_string(m), *mlp = mlp_string(m);
    cJSON_AddStringToObject(o, "pattern", pat ? pat : "");
    cJSON_AddStringToObject(o, "mlp_pattern", mlp ? mlp : "");
    free(pat);
    free(mlp);
    struct model_counts t, ac;
    model_param_counts(m, &t, &ac);
    add_counts(o, "params", &t);
    add_counts(o, "active_params", &ac);
    const char *q = quote_name(m->family->quote);
    if (q) cJSON_AddStringToObject(o, "vendor_quote", q);
    else cJSON_AddNullToObject(o, "vendor_quote");
    cJSON *mt = cJSON_AddObjectToObject(o, "mtp");
    cJSON_AddNumberToObject(mt, "modules", m->mtp_modules);
    cJSON_AddNumberToObject(mt, "params", model_mtp_params(m));

    double kv = 0, st = 0;
    cJSON *kvo = cJSON_AddObjectToObject(o, "kv_bytes_per_token");
    cJSON *sto = cJSON_AddObjectToObject(o, "state_bytes_per_request");
    double kv_by[N_MIXER_KINDS] = {0}, st_by[N_MIXER_KINDS] = {0};
    for (int l = 1; l <= m->decoders; l++) {
        struct layer_cost c;
        layer_kv(m, l, kv_bits, &c);
        kv_by[m->layer[l].mixer] += c.kv_bytes_per_token;
        st_by[m->layer[l].mixer] += c.state_bytes_per_request;
        kv += c.kv_bytes_per_token;
        st += c.state_bytes_per_request;
    }
    for (int k = 0; k < N_MIXER_KINDS; k++) {
        if (kv_by[k] > 0) cJSON_AddNumberToObject(kvo, mixer_info((enum mixer_kind)k)->name, kv_by[k]);
        if (st_by[k] > 0) cJSON_AddNumberToObject(sto, mixer_info((enum mixer_kind)k)->name, st_by[k]);
    }
    cJSON_AddNumberToObject(kvo, "total", kv);
    cJSON_AddNumberToObject(sto, "total", st);

    cJSON *w = cJSON_AddObjectToObject(o, "weights");
    cJSON_AddStringToObject(w, "quant_method", m->quant.method == QUANT_NONE ? "none" : m->quant.name);
    cJSON_AddNumberToObject(w, "quantized_bits", m->quant.bits);
    cJSON_AddNumberToObject(w, "base_bits", m->quant.base_bits);
    cJSON_AddNumberToObject(w, "shipped_bytes", model_shipped_weight_bytes(m));
    cJSON_AddNumberToObject(w, "bytes_at_16_bits", model_params(m) * 2);
    cJSON_AddItemToObject(o, "defaults", key_array(&m->defaults));
    cJSON_AddItemToObject(o, "ignored_keys", key_array(&m->ignored));
    cJSON_AddNumberToObject(o, "ignored_count", m->ignored.n);
    cJSON_AddItemToObject(o, "unused_keys", key_array(&m->unused));
    cJSON_AddNumberToObject(o, "unused_count", m->unused.n);
    char *text = cJSON_Print(o);
    fprintf(f, "%s\n", text);
    cJSON_free(text);
    cJSON_Delete(o);
}

static void print_families(FILE *f)
{
    fprintf(f, "read:\n");
    for (const struct arch_row *r = arch_rows; r->model_type; r++)
        if (!r->refused) fprintf(f, "  %-16s %s\n", r->model_type, r->summary);
    fprintf(f, "refused:\n");
    for (const struct arch_row *r = arch_rows; r->model_type; r++)
        if (r->refused) fprintf(f, "  %-16s %s\n", r->model_type, r->refused);
}

int cli_model(int argc, char **argv)
{
    const char *what = NULL, *family = NULL;
    bool json = false;
    int kv_bits = 16;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(model_usage_text, stdout);
            return MP_OK;
        } else if (!strcmp(a, "--families")) {
            print_families(stdout);
            return MP_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--family") || !strcmp(a, "--kv-bits")) {
            if (i + 1 >= argc) return cli_usage_error("%s needs a value", a);
            if (!strcmp(a, "--family")) {
                family = argv[++i];
            } else {
                char *end;
                errno = 0;
                long v = strtol(argv[++i], &end, 10);
                if (errno || *end || end == argv[i] || v < 4 || v > 32)
                    return cli_usage_error("--kv-bits: expected bits per element from 4 to 32, "
                                           "got '%s'", argv[i]);
                kv_bits = (int)v;
            }
        } else if (a[0] == '-' && a[1]) {
            static const char *const known[] = { "--json", "--family", "--kv-bits", "--families",
                                                 "--help", NULL };
            return cli_unknown_option("model", a, known);
        } else if (what) {
            return cli_usage_error("model: one config at a time (extra argument '%s')", a);
        } else {
            what = a;
        }
    }
    if (!what)
        return cli_usage_error("%s", "model: which config? usage: mpsim model PATH|PRESET "
                                     "(mpsim list models shows the presets)");
    /* A file, else a preset of models/ (the scenario's own lookup, with its
     * list of presets and did-you-mean). */
    char path[1200];
    struct config defaults;
    config_defaults(&defaults);
    struct mp_error perr = { 0 };
    if (config_resolve(&defaults, what, "models", ".json", path, sizeof path, &perr))
        return cli_fail(&perr);
    struct model m;
    struct mp_error err = { 0 };
    if (model_load_as(&m, path, family, &err)) return cli_fail(&err);
    if (json) print_json(stdout, &m, path, kv_bits);
    else print_text(stdout, &m, path, kv_bits);
    model_release(&m);
    return MP_OK;
}
