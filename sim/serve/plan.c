/* plan.c — layers onto chips by memory; see plan.h. */
#include "plan.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hardware/system.h"
#include "sim/strategy/tensor.h"

static void layer_cost(const struct model *m, int layer, const struct plan_params *p,
                       struct layer_cost *lc)
{
    struct cost_params cp = { .seq_len = 1, .micro_batch = 1, .tp = p->tp,
                              .weight_bits = p->weight_bits, .kv_bits = p->kv_bits,
                              .ep = p->ep };
    model_layer_cost(m, layer, &cp, lc);
}

/* Weight bytes per chip, and reserve bytes per request at context_len, of
 * one model layer. */
static double plan_layer_weights(const struct model *m, int layer, const struct plan_params *p)
{
    struct layer_cost lc;
    layer_cost(m, layer, p, &lc);
    return lc.params * p->weight_bits / 8.0;
}

static double plan_layer_per_request(const struct model *m, int layer,
                                     const struct plan_params *p)
{
    struct layer_cost lc;
    layer_cost(m, layer, p, &lc);
    return layer_cost_request_bytes(&lc, p->context_len);
}

static const char *layer_name(const struct model *m, int layer, char *buf, size_t size)
{
    if (layer == 0) snprintf(buf, size, "the embedding");
    else if (layer == m->n_layers - 1) snprintf(buf, size, "the LM head");
    else {
        /* "full attention", "linear attention", "sliding attention",
         * "gated_deltanet", "mamba2", ... */
        enum mixer_kind k = m->layer[layer].mixer;
        const char *name = k == MIXER_ATTENTION || k == MIXER_MLA ? "full attention"
                           : k == MIXER_LINEAR ? "linear attention"
                           : k == MIXER_SLIDING ? "sliding-window attention"
                           : mixer_info(k)->name;
        snprintf(buf, size, "layer %d (%s)", layer - 1, name);
    }
    return buf;
}

/* Add `layer` to stage `s`, keeping the per-request sums. */
static void stage_add(struct plan_stage *s, const struct model *m, int layer,
                      const struct plan_params *p)
{
    struct layer_cost lc;
    layer_cost(m, layer, p, &lc);
    if (s->first < 0) s->first = layer;
    s->last = layer;
    const struct layer *L = &m->layer[layer];
    if (L->kind == LAYER_DECODER) {
        if (L->attn == ATTN_LINEAR) s->n_linear++;
        else if (L->attn != ATTN_NONE) s->n_full++;
    }
    s->weights += lc.params * p->weight_bits / 8.0;
    if (lc.kv_window > 0) {
        s->kv_window_per_token += lc.kv_bytes_per_token;
        s->kv_window = lc.kv_window;
    } else {
        s->kv_per_token += lc.kv_bytes_per_token;
    }
    s->state_per_request += lc.state_bytes_per_request;
    s->per_request = plan_stage_request_bytes(s, p->context_len);
}

/* Fill reserve and max_requests once the stages are final. */
static void finish(struct plan *pl)
{
    for (int i = 0; i < pl->stages; i++) {
        struct plan_stage *s = &pl->stage[i];
        s->reserve = pl->concurrency * s->per_request;
        double free_bytes = pl->p.chip_mem - s->weights;
        if (s->per_request <= 0) s->max_requests = INT_MAX;
        else {
            double n = floor(free_bytes / s->per_request);
            s->max_requests = n > INT_MAX ? INT_MAX : n < 0 ? 0 : (int)n;
        }
    }
    pl->chips = pl->stages * pl->p.tp;
}

static int too_big(const struct model *m, int layer, double w, const struct plan_params *p,
                   struct mp_error *err)
{
    char name[64];
    return mp_fail(err, MP_ERR_INFEASIBLE,
                   "%s of %s holds %.2f GB of weights per chip, more than a chip's %.2f GB; "
                   "layers are never split unless parallel.tp says so (tp is %d)",
                   layer_name(m, layer, name, sizeof name), m->name, w / 1e9,
                   p->chip_mem / 1e9, p->tp);
}

/* The largest target every decoder meets alone on a chip (with the embedding
 * or head beside it when it is first or last). */
static int auto_concurrency(const struct model *m, const struct plan_params *p,
                            struct mp_error *err, int *out)
{
    int L = m->decoders;
    double emb = plan_layer_weights(m, 0, p), head = plan_layer_weights(m, L + 1, p);
    double best = INT_MAX;
    for (int l = 1; l <= L; l++) {
        double w = plan_layer_weights(m, l, p) + (l == 1 ? emb : 0) + (l == L ? head : 0);
        if (w > p->chip_mem) return too_big(m, l, w, p, err);
        double r = plan_layer_per_request(m, l, p);
        if (r <= 0) continue;
        double n = floor((p->chip_mem - w) / r);
        if (n < 1) {
            char name[64];
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "a chip holding %s alone has %.2f GB free, less than one request "
                           "needs at inference.context_len = %d (%.2f GB)",
                           layer_name(m, l, name, sizeof name), (p->chip_mem - w) / 1e9,
                           p->context_len, r / 1e9);
        }
        if (n < best) best = n;
    }
    *out = (int)best;
    return MP_OK;
}

/* Greedy placement (plan.h). A layer whose weights alone exceed a chip, or a
 * target that leaves a layer no room, is MP_ERR_INFEASIBLE with the numbers. */
static int plan_place(struct plan *pl, const struct model *m, const struct plan_params *p,
                      struct mp_error *err)
{
    memset(pl, 0, sizeof *pl);
    pl->p = *p;
    int rc;
    pl->concurrency = p->concurrency;
    if (pl->concurrency == 0 && (rc = auto_concurrency(m, p, err, &pl->concurrency)))
        return rc;
    double N = pl->concurrency;
    pl->stage = mp_xcalloc((size_t)m->n_layers, sizeof *pl->stage);
    struct plan_stage *cur = NULL;
    double used = 0;
    for (int l = 0; l < m->n_layers; l++) {
        double need = plan_layer_weights(m, l, p) + N * plan_layer_per_request(m, l, p);
        if (!cur || used + need > p->chip_mem) {
            if (plan_layer_weights(m, l, p) > p->chip_mem)
                return too_big(m, l, plan_layer_weights(m, l, p), p, err);
            if (need > p->chip_mem) {
                char name[64];
                return mp_fail(err, MP_ERR_INFEASIBLE,
                               "%s needs %.2f GB per chip with its reserve for "
                               "inference.concurrency = %d requests at context %d, more than "
                               "a chip's %.2f GB", layer_name(m, l, name, sizeof name),
                               need / 1e9, pl->concurrency, p->context_len, p->chip_mem / 1e9);
            }
            cur = &pl->stage[pl->stages++];
            cur->first = -1;
            used = 0;
        }
        stage_add(cur, m, l, p);
        used += need;
    }
    finish(pl);
    return MP_OK;
}

/* `stages` equal slices of the decoders, for serving with
 * inference.placement = even: decoders / stages each, the remainder one each
 * to stages 0, 1, ... (training's split, sim_stage_layers, starts it at
 * stage 1), the embedding on the first and the head on the last.
 * MP_ERR_INFEASIBLE when a slice's weights do not fit or leave no room for
 * one request. */
static int plan_even(struct plan *pl, const struct model *m, const struct plan_params *p,
                     int stages, struct mp_error *err)
{
    memset(pl, 0, sizeof *pl);
    pl->p = *p;
    int L = m->decoders;
    if (stages > L)
        return mp_fail(err, MP_ERR_INPUT, "key parallel.pp: %d stages is more than the "
                       "model's %d layers", stages, L);
    pl->stage = mp_xcalloc((size_t)stages, sizeof *pl->stage);
    pl->stages = stages;
    int base = L / stages, rem = L % stages, next = 1;
    for (int s = 0; s < stages; s++) {
        struct plan_stage *st = &pl->stage[s];
        st->first = -1;
        int count = base + (s < rem ? 1 : 0);
        if (s == 0) stage_add(st, m, 0, p);
        for (int k = 0; k < count; k++) stage_add(st, m, next++, p);
        if (s == stages - 1) stage_add(st, m, L + 1, p);
        if (st->weights > p->chip_mem)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "stage %d (layers %d..%d) holds %.2f GB of weights per chip, more "
                           "than a chip's %.2f GB", s, st->first, st->last, st->weights / 1e9,
                           p->chip_mem / 1e9);
    }
    pl->concurrency = p->concurrency;
    finish(pl);
    if (pl->concurrency == 0) {
        int n = plan_kv_bound(pl, NULL);
        for (int s = 0; s < stages; s++)
            if (pl->stage[s].max_requests < n) n = pl->stage[s].max_requests;
        pl->concurrency = n;
        finish(pl);
    }
    for (int s = 0; s < stages; s++)
        if (pl->stage[s].max_requests < 1)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "stage %d has %.2f GB free, less than one request needs at "
                           "inference.context_len = %d (%.2f GB)", s,
                           (p->chip_mem - pl->stage[s].weights) / 1e9, p->context_len,
                           pl->stage[s].per_request / 1e9);
    return MP_OK;
}

static void plan_release(struct plan *pl)
{
    free(pl->stage);
    memset(pl, 0, sizeof *pl);
}

int plan_kv_bound(const struct plan *pl, int *stage)
{
    int best = INT_MAX, at = -1;
    for (int s = 0; s < pl->stages; s++)
        if (pl->stage[s].n_full > 0 && pl->stage[s].max_requests < best) {
            best = pl->stage[s].max_requests;
            at = s;
        }
    if (stage) *stage = at;
    return best;
}

/* ---- a scenario's plan ---------------------------------------------------- */

int plan_run(struct plan_run *r, const struct config *cfg, struct mp_error *err)
{
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    int rc = config_check(&r->cfg, err);
    if (rc) return rc;
    if (cfg->model.kind != MODEL_TRANSFORMER)
        return mp_fail(err, MP_ERR_INPUT, "key model.kind: plan and serving need a model "
                       "(model.kind = transformer), got synthetic");
    char path[1024];
    if ((rc = model_load_config(&r->model, cfg, err))) return rc;
    r->has_model = true;
    char where[CONFIG_STR + 128];
    config_where(cfg, "parallel.tp", where, sizeof where);
    if ((rc = tensor_check_degree(&r->model, cfg->parallel.tp, where, err))) return rc;

    /* Only the chip matters for placement; the system is loaded for it. */
    struct chip_catalog cat;
    if ((rc = chip_catalog_load_default(&cat, err))) return rc;
    struct system sys;
    rc = config_resolve_key(cfg, "hardware.system", "hardware/systems", ".ini", path,
                        sizeof path, err);
    if (!rc) rc = system_load(&sys, path, 0, 1, &cat, err);
    chip_catalog_release(&cat);
    if (rc) return rc;
    r->chip = sys.chip;
    snprintf(r->system, sizeof r->system, "%s", sys.name);
    system_release(&sys);

    struct plan_params p = {
        .chip_mem = r->chip.mem_bytes, .tp = cfg->parallel.tp,
        .weight_bits = cfg->model.weight_bits, .kv_bits = cfg->model.kv_bits,
        .context_len = cfg->inference.context_len, .concurrency = cfg->inference.concurrency,
        /* Expert parallelism splits the experts of a serving replica (issue
         * 19); a training scenario's plan keeps them whole, as before. */
        .ep = cfg->inference.present && cfg->parallel.ep > 1 ? cfg->parallel.ep : 1,
    };
    if (cfg->inference.placement == PLACEMENT_EVEN)
        rc = plan_even(&r->plan, &r->model, &p, cfg->parallel.pp, err);
    else
        rc = plan_place(&r->plan, &r->model, &p, err);
    r->has_plan = true;
    return rc;
}

void plan_run_release(struct plan_run *r)
{
    if (r->has_plan) plan_release(&r->plan);
    if (r->has_model) model_release(&r->model);
    memset(r, 0, sizeof *r);
}

/* ---- reports ---------------------------------------------------------------- */

/* "emb+0-1", "2", "91-92+head": decoder numbers 0-based, as in layer_types. */
static void layers_text(const struct model *m, const struct plan_stage *s, char *buf, size_t n)
{
    int lo = s->first, hi = s->last, L = m->decoders;
    buf[0] = '\0';
    size_t len = 0;
    if (lo == 0) len += (size_t)snprintf(buf + len, n - len, "emb");
    int a = lo < 1 ? 1 : lo, b = hi > L ? L : hi;
    if (a <= b && len < n)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", len ? "+" : "", a - 1);
    if (a < b && len < n) len += (size_t)snprintf(buf + len, n - len, "-%d", b - 1);
    if (hi == L + 1 && len < n) snprintf(buf + len, n - len, "%shead", len ? "+" : "");
}

static void kinds_text(const struct plan_stage *s, char *buf, size_t n)
{
    if (s->n_full && s->n_linear) snprintf(buf, n, "%d full + %d linear", s->n_full, s->n_linear);
    else if (s->n_full) snprintf(buf, n, "%d full", s->n_full);
    else if (s->n_linear) snprintf(buf, n, "%d linear", s->n_linear);
    else snprintf(buf, n, "-");
}

void plan_report_text(FILE *f, const struct plan_run *r)
{
    const struct plan *pl = &r->plan;
    const struct model *m = &r->model;
    fprintf(f, "plan        %s on %s (%s, %.2f GB per chip), tp %d, weights %d-bit, KV %d-bit\n",
            m->name, r->system, r->chip.name, pl->p.chip_mem / 1e9, pl->p.tp,
            pl->p.weight_bits, pl->p.kv_bits);
    int linear = 0;
    int none = 0; /* MLP-only layers (Nemotron-H) keep neither KV nor state */
    for (int l = 1; l <= m->decoders; l++) {
        linear += m->layer[l].attn == ATTN_LINEAR;
        none += m->layer[l].attn == ATTN_NONE;
    }
    fprintf(f, "model       %d layers (%d full attention, %d linear", m->decoders,
            m->decoders - linear - none, linear);
    if (none) fprintf(f, ", %d MLP only", none);
    fprintf(f, "), %.2fB parameters = %.2f TB of weights\n", model_params(m) / 1e9,
            model_params(m) * pl->p.weight_bits / 8 / 1e12);
    fprintf(f, "reserve     %d requests at %d tokens each (%s)\n", pl->concurrency,
            pl->p.context_len,
            r->cfg.inference.concurrency ? "inference.concurrency"
                                         : "auto: the most a chip holding one layer fits");
    fprintf(f, "chips       %d (%d stages × tp %d)\n\n", pl->chips, pl->stages, pl->p.tp);
    fprintf(f, "  chip  layers        kinds              weights   reserve      free  requests\n");
    for (int i = 0; i < pl->stages; i++) {
        const struct plan_stage *s = &pl->stage[i];
        char lay[64], kinds[48], req[16];
        layers_text(m, s, lay, sizeof lay);
        kinds_text(s, kinds, sizeof kinds);
        if (s->max_requests == INT_MAX) snprintf(req, sizeof req, "-");
        else snprintf(req, sizeof req, "%d", s->max_requests);
        fprintf(f, "  %4d  %-13s %-16s %8.2f GB %6.2f GB %6.2f GB %9s\n", i * pl->p.tp, lay,
                kinds, s->weights / 1e9, s->reserve / 1e9, (pl->p.chip_mem - s->weights) / 1e9,
                req);
    }
    /* The wafer case's summary: stages by what they hold. */
    int only_linear = 0, lin_two = 0, one_full = 0, mixed = 0, other = 0;
    for (int i = 0; i < pl->stages; i++) {
        const struct plan_stage *s = &pl->stage[i];
        if (s->n_full == 0 && s->n_linear > 0) {
            only_linear++;
            if (s->n_linear == 2) lin_two++;
        } else if (s->n_full == 1 && s->n_linear == 0) one_full++;
        else if (s->n_full && s->n_linear) mixed++;
        else other++;
    }
    fprintf(f, "\nsummary     %d stages of linear-attention layers only (%d of them two), "
               "%d of one full-attention layer, %d mixed, %d other\n",
            only_linear, lin_two, one_full, mixed, other);
    int at;
    int n = plan_kv_bound(pl, &at);
    if (at >= 0) {
        const struct plan_stage *s = &pl->stage[at];
        double free_b = pl->p.chip_mem - s->weights;
        if (s->kv_window_per_token > 0)
            fprintf(f, "KV bound    stage %d: %.2f GB free / %.2f MB per request (%d tokens × "
                       "%.0f B per token + %d-token windows × %.0f B per token) = %d concurrent "
                       "requests\n", at, free_b / 1e9, s->per_request / 1e6, pl->p.context_len,
                    s->kv_per_token, s->kv_window, s->kv_window_per_token, n);
        else
            fprintf(f, "KV bound    stage %d: %.2f GB free / %.2f MB per request (%d tokens × "
                       "%.0f B per token) = %d concurrent requests\n", at, free_b / 1e9,
                    s->per_request / 1e6, pl->p.context_len, s->kv_per_token, n);
    }
}

void plan_report_json(FILE *f, const struct plan_run *r)
{
    const struct plan *pl = &r->plan;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "chips", pl->chips);
    cJSON_AddNumberToObject(o, "stages", pl->stages);
    cJSON_AddNumberToObject(o, "tp", pl->p.tp);
    cJSON_AddStringToObject(o, "model", r->model.name);
    cJSON_AddStringToObject(o, "system", r->system);
    cJSON_AddNumberToObject(o, "chip_mem_bytes", pl->p.chip_mem);
    cJSON_AddNumberToObject(o, "context_len", pl->p.context_len);
    cJSON_AddNumberToObject(o, "concurrency", pl->concurrency);
    cJSON *arr = cJSON_AddArrayToObject(o, "placement");
    for (int i = 0; i < pl->stages; i++) {
        const struct plan_stage *s = &pl->stage[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "chip", i * pl->p.tp);
        cJSON *ls = cJSON_AddArrayToObject(e, "layers");
        for (int l = s->first; l <= s->last; l++) cJSON_AddItemToArray(ls, cJSON_CreateNumber(l));
        cJSON_AddNumberToObject(e, "mem_bytes", s->weights + s->reserve);
        cJSON_AddNumberToObject(e, "weights_bytes", s->weights);
        cJSON_AddNumberToObject(e, "reserve_bytes", s->reserve);
        cJSON_AddNumberToObject(e, "full_attention", s->n_full);
        cJSON_AddNumberToObject(e, "linear_attention", s->n_linear);
        cJSON_AddNumberToObject(e, "per_request_bytes", s->per_request);
        if (s->max_requests != INT_MAX) cJSON_AddNumberToObject(e, "max_requests", s->max_requests);
        cJSON_AddItemToArray(arr, e);
    }
    int at, n = plan_kv_bound(pl, &at);
    if (at >= 0) {
        cJSON *kv = cJSON_AddObjectToObject(o, "kv_bound");
        cJSON_AddNumberToObject(kv, "stage", at);
        cJSON_AddNumberToObject(kv, "free_bytes", pl->p.chip_mem - pl->stage[at].weights);
        cJSON_AddNumberToObject(kv, "per_request_bytes", pl->stage[at].per_request);
        cJSON_AddNumberToObject(kv, "requests", n);
    }
    char *text = cJSON_Print(o);
    fprintf(f, "%s\n", text);
    cJSON_free(text);
    cJSON_Delete(o);
}
