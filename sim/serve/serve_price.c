/* serve_price.c — the machine a serving run uses: each stage's layers and
 * the chip's kernel calibration (hardware/kernels.csv), a pass's time as
 * the kernels it runs (models/kernels.h, the same lists and prices as
 * training), and the hand-off routes between consecutive stages. See
 * serve.h ("Costs of one pass"). */
#include "serve_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hardware/calib.h"
#include "models/kernels.h"

/* The part of a pass's time that depends on its token and emit counts
 * alone (GEMMs, norms, activations, LM head) repeats from pass to pass:
 * memoised per stage. */
#define SERVE_MEMO 4096
struct serve_memo { double tokens, emits, seconds; bool set; };

struct serve_pricer {
    struct calib calib;
    struct kernel_params kp;
    struct kernel_list kl;
    struct serve_memo *memo;    /* [stages × SERVE_MEMO] */
    bool *attention;            /* [stages]: has layers whose time depends on who is in it */
    struct kernel_attention *shape; /* [s->layers]: each layer's serving attention */
    struct kernel_window win;   /* the model's attention window */
};

int serve_price_layers(struct serve *s, struct mp_error *err)
{
    const struct model *m = &s->pr.model;
    const struct plan *pl = &s->pr.plan;
    const struct config *c = &s->cfg;
    s->layer_off = mp_xcalloc((size_t)s->stages + 1, sizeof *s->layer_off);
    s->layers = mp_xcalloc((size_t)m->n_layers, sizeof *s->layers);
    struct serve_pricer *p = s->pricer = mp_xcalloc(1, sizeof *s->pricer);
    p->memo = mp_xcalloc((size_t)s->stages * SERVE_MEMO, sizeof *p->memo);
    p->attention = mp_xcalloc((size_t)s->stages, sizeof *p->attention);
    int n = 0;
    for (int st = 0; st < s->stages; st++) {
        s->layer_off[st] = n;
        for (int l = pl->stage[st].first; l <= pl->stage[st].last; l++) {
            const struct layer *L = &m->layer[l];
            s->layers[n++] = (struct serve_layer){
                .layer = l, .kind = L->kind, .attn = L->attn, .mixer = L->mixer, .mlp = L->mlp,
                .moe = L->moe, .window = L->window, .params = L->params,
                .matmul_params = L->matmul_params, .expert_params = L->expert_params,
            };
            if (L->kind == LAYER_DECODER) p->attention[st] = true;
        }
    }
    s->layer_off[s->stages] = n;
    int rc = calib_load_default(&p->calib, &s->sys.chip, err);
    if (rc) return rc;
    p->calib.graphs = true; /* serving replays its steps as CUDA graphs */
    if (c->model.compute_bits == 8 && !(s->sys.chip.peak_fp8 > 0))
        return mp_fail(err, MP_ERR_INPUT,
                       "%s%skey model.compute_bits = 8: chip %s has no FP8 peak "
                       "(hardware/chips.csv fp8_tflops = 0); expected 16 on this chip",
                       c->path, c->path[0] ? ": " : "", s->sys.chip.name);
    p->kp = (struct kernel_params){
        .seq_len = 1, .micro_batch = 1, .tp = 1, .weight_bits = c->model.weight_bits,
        .activation_bits = c->model.activation_bits, .kv_bits = c->model.kv_bits,
        .compute_bits = c->model.compute_bits, .flash = true, .ep = 1,
    };
    kernel_window_of(m, &p->win);
    p->shape = mp_xcalloc((size_t)(n > 0 ? n : 1), sizeof *p->shape);
    for (int i = 0; i < n; i++)
        kernels_serve_attention_shape(m, s->layers[i].layer, &p->kp, &p->shape[i]);
    return MP_OK;
}

void serve_price_describe(const struct serve *s, char *buf, size_t size)
{
    const struct calib *c = &s->pricer->calib;
    char launch[64], host[64];
    double l = c->graphs ? c->graph_launch_s : c->launch_s;
    if (l > 0) snprintf(launch, sizeof launch, "%.3g us a kernel (%s)", l * 1e6,
                        c->graphs ? "CUDA graphs" : "launched one by one, eager");
    else snprintf(launch, sizeof launch, "no per-kernel launch");
    if (c->host_s > 0) snprintf(host, sizeof host, ", host %.3g ms a step beside stage 0's pass",
                                c->host_s * 1e3);
    else host[0] = '\0';
    if (c->generic)
        snprintf(buf, size, "%s has no rows in %s: generic rows (*) with its catalogue "
                 "compute_eff and mem_eff; %s%s", c->chip, c->path, launch, host);
    else
        snprintf(buf, size, "priced by the %s rows of %s; %s%s%s", c->chip, c->path, launch, host,
                 s->cfg.model.compute_bits == 8 ? "; FP8 GEMMs" : "");
}

void serve_price_release(struct serve *s)
{
    struct serve_pricer *p = s->pricer;
    if (!p) return;
    calib_release(&p->calib);
    kernel_list_release(&p->kl);
    free(p->memo);
    free(p->attention);
    free(p->shape);
    free(p);
    s->pricer = NULL;
}

/* Seconds of the kernels `which` (kernels.h) of a stage's layers. */
static double stage_kernels(const struct serve *s, int stage, const struct kernel_batch *b,
                            int which)
{
    struct serve_pricer *p = s->pricer;
    kernel_list_clear(&p->kl);
    for (int i = s->layer_off[stage]; i < s->layer_off[stage + 1]; i++)
        kernels_serve_layer(&s->pr.model, s->layers[i].layer, &p->kp, b, which, &p->kl);
    double t = 0;
    for (int i = 0; i < p->kl.n; i++) {
        struct calib_cost c;
        calib_kernel(&p->calib, &p->kl.k[i], &c);
        t += c.busy + c.launch;
    }
    return t;
}

void serve_batch_add(const struct serve *s, struct kernel_batch *b, double tokens, double past,
                     bool decode, bool emits)
{
    kernel_batch_add(b, tokens, past, decode, emits, &s->pricer->win);
}

void serve_price_eager(struct serve *s)
{
    s->pricer->calib.graphs = false;
    s->pricer->calib.host_s = 0;
}

mp_time serve_batch_time(const struct serve *s, int stage, const struct kernel_batch *b)
{
    struct serve_pricer *p = s->pricer;
    /* Token and emit counts are whole numbers below the token budget. */
    size_t h = ((size_t)b->tokens * 40503u + (size_t)b->emits) % SERVE_MEMO;
    struct serve_memo *m = &p->memo[(size_t)stage * SERVE_MEMO + h];
    if (!m->set || m->tokens != b->tokens || m->emits != b->emits)
        *m = (struct serve_memo){ b->tokens, b->emits, stage_kernels(s, stage, b, KSERVE_TOKENS),
                                  true };
    double t = m->seconds;
    /* The attention part, priced anew each pass (decode members' KV grows
     * by a token a pass): kernels_serve_layer's KSERVE_ATTENTION kernels,
     * from shapes taken once. */
    for (int i = s->layer_off[stage]; p->attention[stage] && i < s->layer_off[stage + 1]; i++) {
        struct kernel k[2];
        int n = kernels_serve_attention(&p->shape[i], b, k);
        for (int j = 0; j < n; j++) {
            struct calib_cost c;
            calib_kernel(&p->calib, &k[j], &c);
            t += c.busy + c.launch;
        }
    }
    /* The host's scheduling and sampling for a step run beside the GPU's
     * (an overlap scheduler), one pass at a time: stage 0 takes at least
     * that long per pass. */
    if (stage == 0 && p->calib.host_s > t) t = p->calib.host_s;
    return mp_time_from_s(t); /* saturates; the serving walk bound names the inputs */
}

mp_time serve_slot_time(const struct serve *s, int stage, const struct serve_slot *sl)
{
    return serve_batch_time(s, stage, &sl->b);
}

mp_time serve_stage_time(const struct serve *s, int stage, const struct serve_item *items,
                         int n)
{
    struct kernel_batch b = { 0 };
    for (int i = 0; i < n; i++)
        serve_batch_add(s, &b, items[i].tokens, items[i].past, items[i].decode, items[i].emits);
    return serve_batch_time(s, stage, &b);
}

double serve_hop_bytes(const struct serve *s, int stage, double tokens)
{
    if (stage == s->stages - 1) return 4 * tokens; /* token ids back to stage 0 */
    return tokens * s->pr.model.hidden * s->cfg.model.activation_bits / 8.0;
}

mp_time serve_hop_time(const struct serve *s, int stage, int tokens)
{
    if (s->stages == 1) return 0;
    double b = serve_hop_bytes(s, stage, tokens);
    return mp_time_add(s->hop[stage], isinf(s->hop_bw[stage]) ? 0 : mp_time_from_ps(b / s->hop_bw[stage] * 1e12));
}

/* Routes of the hand-offs: s → s+1, and the last stage's return hop, priced
 * as the route back to its predecessor (one hop on a chain). */
void serve_build_hops(struct serve *s)
{
    int S = s->stages;
    s->hop = mp_xcalloc((size_t)S, sizeof *s->hop);
    s->hop_bw = mp_xcalloc((size_t)S, sizeof *s->hop_bw);
    s->hop_route_off = mp_xcalloc((size_t)S + 1, sizeof *s->hop_route_off);
    int cap = 0, n = 0, stack[64], *buf;
    for (int st = 0; st < S; st++) {
        s->hop_route_off[st] = n;
        s->hop_bw[st] = INFINITY;
        if (S == 1) continue;
        int a = s->stage_chip[st], b = st + 1 < S ? s->stage_chip[st + 1] : s->stage_chip[st - 1];
        int len = system_route_buf(&s->sys, a, b, stack, 64, &buf);
        s->hop[st] = system_route_time(&s->sys, buf, len, 0);
        for (int i = 0; i < len; i++) {
            double bw = s->sys.links[buf[i]].bw;
            if (bw < s->hop_bw[st]) s->hop_bw[st] = bw;
            if (st + 1 < S) { /* the return hop's bytes are too few to hold a link */
                MP_GROW(s->hop_route, cap, n + 1);
                s->hop_route[n++] = buf[i];
            }
        }
        if (buf != stack) free(buf);
    }
    s->hop_route_off[S] = n;
}

