/* serve_price.c — the machine a serving run uses: each stage's layers priced
 * once into what a pass's time needs (roofline per layer, chip_op_time), a
 * pass's time from its token totals, and the hand-off routes between
 * consecutive stages. See serve.h ("Costs of one pass"). */
#include "serve_impl.h"

#include <math.h>
#include <stdlib.h>

void serve_price_layers(struct serve *s)
{
    const struct model *m = &s->pr.model;
    const struct plan *pl = &s->pr.plan;
    const struct config *c = &s->cfg;
    double W = c->model.weight_bits / 8.0, A = c->model.activation_bits / 8.0;
    s->layer_off = mp_xcalloc((size_t)s->stages + 1, sizeof *s->layer_off);
    s->layers = mp_xcalloc((size_t)m->n_layers, sizeof *s->layers);
    int n = 0;
    struct cost_params cp = { .seq_len = 1, .micro_batch = 1, .tp = 1,
                              .weight_bits = c->model.weight_bits, .kv_bits = c->model.kv_bits };
    for (int st = 0; st < s->stages; st++) {
        s->layer_off[st] = n;
        for (int l = pl->stage[st].first; l <= pl->stage[st].last; l++) {
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
                .hidden_bytes = m->hidden * A, .row_bytes = m->hidden * W,
                .vocab = m->vocab, .head_flops = 2.0 * m->vocab * m->hidden,
            };
            double heads = m->heads, d = m->head_dim;
            if (L->attn == ATTN_LINEAR) x->attn_coef = 4 * heads * d * d;
            else if (L->attn == ATTN_MLA)
                x->attn_coef = 2 * heads * ((double)m->qk_nope_head_dim + m->qk_rope_head_dim +
                                            m->v_head_dim);
            else x->attn_coef = 4 * heads * d;
            for (int i = 0; i < POW_TAB; i++) x->miss[i] = pow(1 - x->expert_frac, i);
        }
    }
    s->layer_off[s->stages] = n;
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
            } else {
                flops += x->attn_coef * pairs;
                bytes += (ctx + T) * x->kv_per_token; /* read the cache, write the new */
            }
        }
        t = mp_time_add(t, chip_op_time(chip, flops, bytes, bits));
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

