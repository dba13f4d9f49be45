/* serve_price.c — the machine a serving run uses: each stage's layers priced
 * once into what a pass's time needs (roofline per layer, chip_op_time), a
 * pass's time from its token totals, and the hand-off routes between
 * consecutive stages. See serve.h ("Costs of one pass"). */
#include "serve_impl.h"

#include <math.h>
#include <stdlib.h>

/* ---- issue 19 (branch serving): the priced stages and their TP/EP shard ----
 * A stage group of tp chips splits every layer's weight matrices, heads and
 * vocabulary tp ways (Megatron's column/row split, as vLLM runs it); with
 * ep > 1 its routed experts are split ep ways and priced apart
 * (serve_expert_time). The fields below are one chip's share; with
 * s->priced NULL (a shell such as accel_gen.c's) the stages are s->pr's
 * plan, unsplit. */
static struct serve_priced priced_stage(const struct serve *s, int st)
{
    if (s->priced) return s->priced[st];
    const struct plan_stage *p = &s->pr.plan.stage[st];
    return (struct serve_priced){ p->first, p->last, 1, 1 };
}

static int priced_count(const struct serve *s)
{
    return s->priced ? s->n_priced : s->stages;
}

static void shard_layer(struct serve_layer *x, const struct model *m, const struct layer *L,
                        double W, int tp, int ep)
{
    double t = tp;
    x->fixed_bytes /= t;
    x->matmul_params /= t;
    x->attn_coef /= t;
    x->head_flops /= t;
    x->row_bytes /= t; /* vocabulary-parallel embedding: a row's shard */
    if (ep > 1 && L->moe) {
        /* The routed experts leave the dense pricing for the chip's own. */
        double routed = L->expert_params * m->experts_per_token / m->experts;
        x->matmul_params = (L->matmul_params - routed) / t;
        x->expert_bytes = 0;
        x->expert_frac = 0;
        x->ep_total = m->experts;
        x->ep_local = (double)m->experts / ep;
        x->ep_params = L->expert_params / m->experts;
        x->ep_bytes = x->ep_params * W;
    } else {
        x->expert_bytes /= t;
    }
}

mp_time serve_expert_time(const struct serve *s, int stage, double assignments)
{
    const struct chip *chip = &s->pr.chip;
    int bits = s->cfg.model.weight_bits <= 8 ? 8 : 16;
    mp_time t = 0;
    for (int i = s->layer_off[stage]; i < s->layer_off[stage + 1]; i++) {
        const struct serve_layer *x = &s->layers[i];
        if (x->ep_local <= 0 || assignments <= 0) continue;
        /* Assignments spread uniformly over the chip's experts: the
         * distinct ones hit, and each token copy's GEMMs. */
        double hit = x->ep_local * (1 - pow(1 - 1 / x->ep_local, assignments));
        double flops = 2 * assignments * x->ep_params;
        double bytes = hit * x->ep_bytes + 2 * assignments * x->hidden_bytes;
        t += chip_op_time(chip, flops, bytes, bits);
    }
    return t;
}
/* ---- end of issue 19's part ---- */

void serve_price_layers(struct serve *s)
{
    const struct model *m = &s->pr.model;
    const struct config *c = &s->cfg;
    double W = c->model.weight_bits / 8.0, A = c->model.activation_bits / 8.0;
    int P = priced_count(s), total = 0;
    for (int st = 0; st < P; st++) total += priced_stage(s, st).last - priced_stage(s, st).first + 1;
    s->layer_off = mp_xcalloc((size_t)P + 1, sizeof *s->layer_off);
    s->layers = mp_xcalloc((size_t)(total > 0 ? total : 1), sizeof *s->layers);
    int n = 0;
    for (int st = 0; st < P; st++) {
        struct serve_priced ps = priced_stage(s, st);
        struct cost_params cp = { .seq_len = 1, .micro_batch = 1, .tp = ps.tp,
                                  .weight_bits = c->model.weight_bits, .kv_bits = c->model.kv_bits };
        s->layer_off[st] = n;
        for (int l = ps.first; l <= ps.last; l++) {
            const struct layer *L = &m->layer[l];
            struct layer_cost lc;
            model_layer_cost(m, l, &cp, &lc);
            struct serve_layer *x = &s->layers[n++];
            *x = (struct serve_layer){
                .kind = L->kind, .attn = L->attn,
                .fixed_bytes = (L->params - L->expert_params) * W,
                .expert_bytes = L->expert_params * W,
                .expert_frac = m->experts ? (double)m->experts_per_token / m->experts : 0,
                .matmul_params = L->matmul_params,
                .kv_per_token = lc.kv_bytes_per_token, .state = lc.state_bytes_per_request,
                .window = lc.kv_window,
                .hidden_bytes = m->hidden * A, .row_bytes = m->hidden * W,
                .vocab = m->vocab, .head_flops = 2.0 * m->vocab * m->hidden,
            };
            /* The mixer's core FLOPs (models/layer_kinds.c): per (token,
             * context) pair for softmax attention, per token for linear
             * attention and state-space layers. */
            double per_pair = 0, per_token = 0;
            if (L->kind == LAYER_DECODER) layer_core_flops(m, L, &per_pair, &per_token);
            x->attn_coef = L->attn == ATTN_LINEAR ? per_token : per_pair;
            if (ps.tp > 1 || ps.ep > 1) shard_layer(x, m, L, W, ps.tp, ps.ep);
            for (int i = 0; i < POW_TAB; i++) x->miss[i] = pow(1 - x->expert_frac, i);
        }
    }
    s->layer_off[P] = n;
}

mp_time serve_sum_time(const struct serve *s, int stage, double T, double pairs, double ctx,
                        double items, double emits)
{
    const struct chip *chip = &s->pr.chip;
    int bits = s->cfg.model.weight_bits <= 8 ? 8 : 16;
    mp_time t = 0;
    for (int i = s->layer_off[stage]; i < s->layer_off[stage + 1]; i++) {
        const struct serve_layer *x = &s->layers[i];
        double flops = 0, bytes = 0;
        if (x->kind == LAYER_EMBEDDING) {
            bytes = (T < x->vocab ? T : x->vocab) * x->row_bytes + T * x->hidden_bytes;
        } else if (x->kind == LAYER_LM_HEAD) {
            if (emits <= 0) continue;
            flops = emits * x->head_flops;
            bytes = x->fixed_bytes + emits * x->hidden_bytes;
        } else {
            flops = 2 * T * x->matmul_params;
            bytes = x->fixed_bytes + 2 * T * x->hidden_bytes;
            if (x->expert_bytes > 0)
                bytes += x->expert_bytes * (1 - (T < POW_TAB && T == (int)T ? x->miss[(int)T]
                                                             : pow(1 - x->expert_frac, T)));
            if (x->attn == ATTN_LINEAR) {
                flops += x->attn_coef * T;
                bytes += 2 * items * x->state;
            } else if (x->window > 0) {
                /* A sliding window or chunk: each item attends and keeps at
                 * most `window` tokens. From the pass's totals the bound is
                 * items × window (exact when every item is inside its
                 * window, or every one past it). */
                double kv = ctx + T, cap = items * x->window, p = pairs, pcap = T * x->window;
                flops += x->attn_coef * (p < pcap ? p : pcap);
                bytes += (kv < cap ? kv : cap) * x->kv_per_token;
            } else {
                flops += x->attn_coef * pairs;
                bytes += (ctx + T) * x->kv_per_token; /* read the cache, write the new */
            }
        }
        t += chip_op_time(chip, flops, bytes, bits);
    }
    return t;
}

mp_time serve_stage_time(const struct serve *s, int stage, const struct serve_item *items,
                         int n)
{
    double T = 0, pairs = 0, ctx = 0, emits = 0;
    for (int i = 0; i < n; i++) {
        T += items[i].tokens;
        pairs += (double)items[i].tokens * (items[i].past + items[i].tokens);
        ctx += items[i].past;
        emits += items[i].emits;
    }
    return serve_sum_time(s, stage, T, pairs, ctx, n, emits);
}

/* Whether global stage g is the last of its replica (issue 19: replicas; a
 * shell without them is one chain). */
static bool last_of_replica(const struct serve *s, int g)
{
    if (!s->rep) return g == s->stages - 1;
    const struct serve_replica *R = &s->rep[s->stage_rep[g]];
    return g == R->stage0 + s->pool[R->pool].stages - 1;
}

double serve_hop_bytes(const struct serve *s, int stage, double tokens)
{
    if (last_of_replica(s, stage)) return 4 * tokens; /* token ids back to stage 0 */
    return tokens * s->pr.model.hidden * s->cfg.model.activation_bits / 8.0;
}

mp_time serve_hop_time(const struct serve *s, int stage, int tokens)
{
    /* A one-stage replica has no hop: latency 0, bandwidth infinite. */
    double b = serve_hop_bytes(s, stage, tokens);
    return s->hop[stage] + (isinf(s->hop_bw[stage]) ? 0 : (mp_time)llround(b / s->hop_bw[stage] * 1e12));
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
        /* A replica's last stage returns its tokens over the route back to
         * its predecessor; a one-stage replica has no hop. */
        bool last = last_of_replica(s, st);
        bool alone = last && (st == 0 || last_of_replica(s, st - 1));
        if (alone) continue;
        int a = s->stage_chip[st], b = !last ? s->stage_chip[st + 1] : s->stage_chip[st - 1];
        int len = system_route_buf(&s->sys, a, b, stack, 64, &buf);
        s->hop[st] = system_route_time(&s->sys, buf, len, 0);
        for (int i = 0; i < len; i++) {
            double bw = s->sys.links[buf[i]].bw;
            if (bw < s->hop_bw[st]) s->hop_bw[st] = bw;
            if (!last) { /* the return hop's bytes are too few to hold a link */
                MP_GROW(s->hop_route, cap, n + 1);
                s->hop_route[n++] = buf[i];
            }
        }
        if (buf != stack) free(buf);
    }
    s->hop_route_off[S] = n;
}

