/* model_cost.c — what one layer costs for one microbatch: FLOPs of the
 * forward, input-gradient and weight-gradient passes, bytes moved, stashed
 * activations (Korthikanti et al. 2022), KV or recurrent state. See model.h;
 * the reading of config.json is model.c. */
#include "model.h"
#include "sim/io/config.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Cost of one layer for one microbatch. */

/* Attention-core FLOPs of one forward (the parts with no weights).
 * Full/MLA: QK^T and AV over the whole sequence, 2bs^2 per head-dim each,
 * not halved for causal masking (Megatron counts it that way; so does the
 * 72BLsh^2 formula). Linear attention: per token and head a state update
 * (k v^T, 2d^2) and a read (q S, 2d^2). */
static double attn_flops(const struct model *m, const struct layer *L, double s, double b)
{
    double heads = m->heads;
    switch (L->attn) {
    case ATTN_MLA:
        return 2 * b * s * s * heads * (m->qk_nope_head_dim + m->qk_rope_head_dim) +
               2 * b * s * s * heads * m->v_head_dim;
    case ATTN_LINEAR:
        return 4 * b * s * heads * (double)m->head_dim * m->head_dim;
    case ATTN_FULL:
    default:
        return 4 * b * s * s * heads * m->head_dim;
    }
}

/* Stashed activation bytes of a decoder, Korthikanti et al. 2022 (cases.md
 * §4), per token and written as three parts so the table's layouts fall out:
 *   rep   — LayerNorm inputs (2 elements of h), attention and MLP inputs (h
 *           each), two dropout masks (1 byte x h each): 10h at 16 bits. Split
 *           by t only under sequence parallelism.
 *   split — Q, K, V, attention output, MLP intermediates: 24h at 16 bits for
 *           GPT, always split by t. Generalised by actual widths: GQA's K/V
 *           are kv_heads*d; a gated MLP keeps gate, up and their product (3f)
 *           where GeLU keeps 2f; MoE keeps top-k experts' plus shared.
 *   score — softmax output, dropout mask and output: 5as at 16 bits, split
 *           by t; selective recompute drops it; linear attention has none.
 * Activation elements take activation_bits; masks stay 1 byte. */
static double decoder_act_bytes(const struct model *m, const struct layer *L,
                                const struct cost_params *cp, double A)
{
    double s = cp->seq_len, tok = (double)cp->seq_len * cp->micro_batch;
    double t = cp->tp, h = m->hidden;
    if (cp->recompute == RECOMPUTE_FULL)
        return tok * h * A / (cp->sp ? t : 1); /* only the layer input */

    double rep = 4 * h * A + (cp->no_dropout ? 0 : 2 * h);
    double attn_el;
    if (L->attn == ATTN_MLA)
        attn_el = (double)m->heads * (2.0 * m->head_dim + 2.0 * m->v_head_dim);
    else
        attn_el = 2.0 * m->heads * m->head_dim + 2.0 * m->kv_heads * m->head_dim;
    double mlp_el, per = m->gated_mlp ? 3 : 2;
    if (L->moe)
        mlp_el = per * ((double)m->experts_per_token * m->moe_intermediate +
                        m->shared_intermediate);
    else
        mlp_el = per * m->intermediate;
    double split = (attn_el + mlp_el) * A;
    double score = 0;
    if (L->attn != ATTN_LINEAR && cp->flash)
        score = (double)m->heads * 4; /* FlashAttention's fp32 log-sum-exp */
    else if (L->attn != ATTN_LINEAR && cp->recompute != RECOMPUTE_SELECTIVE)
        score = (double)m->heads * s * (cp->no_dropout ? A : 2 * A + 1);
    /* Each part is an integer count of bytes over the microbatch before the
     * division, so exact sizes stay exact. */
    return tok * rep / (cp->sp ? t : 1) + tok * split / t + tok * score / t;
}

void model_layer_cost(const struct model *m, int layer, const struct cost_params *cp,
                      struct layer_cost *out)
{
    /* Programmer errors: callers index layers they got from the model. */
    assert(layer >= 0 && layer < m->n_layers);
    assert(cp->tp >= 1 && cp->seq_len >= 1 && cp->micro_batch >= 1);
    const struct layer *L = &m->layer[layer];
    double W = (cp->weight_bits ? cp->weight_bits : 16) / 8.0;
    double A = (cp->activation_bits ? cp->activation_bits : 16) / 8.0;
    double K = (cp->kv_bits ? cp->kv_bits : 16) / 8.0;
    double s = cp->seq_len, b = cp->micro_batch, tok = s * b, t = cp->tp;
    double h = m->hidden, V = m->vocab;
    double seq_split = cp->sp ? t : 1;

    memset(out, 0, sizeof *out);
    out->params = L->params / t;
    bool ep_routed = L->moe && cp->ep > 1;
    if (ep_routed) out->params = (L->params - L->expert_params) / t + L->expert_params / cp->ep;

    switch (L->kind) {
    case LAYER_EMBEDDING:
        /* A lookup: no FLOPs, no stash; reads one row per distinct token. */
        out->boundary_bytes = tok * h * A / seq_split;
        out->bytes_f = (tok < V ? tok : V) * h * W / t + out->boundary_bytes;
        out->bytes_b = out->boundary_bytes;
        out->bytes_w = out->bytes_f - out->boundary_bytes;
        return;

    case LAYER_LM_HEAD: {
        double mm = 2 * tok * L->matmul_params / t;
        out->flops_f = out->flops_b = out->flops_w = mm;
        /* Final-norm and projection inputs, then fp32 logits for the loss
         * (Korthikanti §4.3: 4sbv/t). Hands nothing on: it is the last layer. */
        out->act_bytes = 2 * tok * h * A / seq_split + 4 * tok * V / t;
        out->act_w_bytes = tok * h * A / seq_split;
        double wb = L->matmul_params * W / t, in = tok * h * A / seq_split;
        double logits = tok * V * A / t;
        out->bytes_f = wb + in + logits;
        out->bytes_b = wb + out->act_bytes + logits + in;
        out->bytes_w = wb + out->act_w_bytes;
        return;
    }

    case LAYER_DECODER:
        break;
    }

    double mm = 2 * tok * L->matmul_params;
    if (ep_routed) mm -= 2 * tok * L->expert_params * m->experts_per_token / m->experts;
    double attn = attn_flops(m, L, s, b);
    out->flops_f = (mm + attn) / t;
    out->flops_b = (mm + 2 * attn) / t;
    out->flops_w = mm / t;
    if (cp->recompute == RECOMPUTE_SELECTIVE && !cp->flash) out->flops_recompute = attn / t;
    else if (cp->recompute == RECOMPUTE_FULL) out->flops_recompute = out->flops_f;

    out->act_bytes = decoder_act_bytes(m, L, cp, A);
    /* M_W = 32sbh/t at 16 bits (zero-bubble paper; cases.md §3), capped at
     * M_B so B never frees a negative amount (full recompute). */
    out->act_w_bytes = 16 * A * tok * h / t;
    if (out->act_w_bytes > out->act_bytes) out->act_w_bytes = out->act_bytes;
    out->boundary_bytes = tok * h * A / seq_split;

    if (L->attn == ATTN_LINEAR)
        out->state_bytes_per_request = (double)m->heads * m->head_dim * m->head_dim * K / t;
    else if (L->attn == ATTN_MLA)
        /* The compressed latent and the shared rope key serve every head, so
         * each tensor-parallel rank keeps all of it. */
        out->kv_bytes_per_token = ((double)m->kv_lora_rank + m->qk_rope_head_dim) * K;
    else
        /* Fewer KV heads than ranks: each rank keeps a replica of one. */
        out->kv_bytes_per_token = 2.0 * (m->kv_heads >= t ? m->kv_heads / t : 1) *
                                  m->head_dim * K;

    /* Memory traffic, kept simple: each pass reads the weights once (a MoE
     * layer only the experts its tokens reach, in expectation under uniform
     * routing), F reads its input and writes its output, B reads the stash
     * and the output gradient and writes the input gradient, W reads its
     * stash and writes weight gradients the size of the weights. */
    double experts_hit = 0;
    if (L->moe && !ep_routed) {
        double miss = pow(1.0 - (double)m->experts_per_token / m->experts, tok);
        experts_hit = L->expert_params * (1.0 - miss);
    }
    double wb = (L->params - L->expert_params + experts_hit) * W / t;
    double io = out->boundary_bytes;
    out->bytes_f = wb + 2 * io;
    out->bytes_b = wb + out->act_bytes + 2 * io;
    out->bytes_w = wb + out->act_w_bytes;
}

double model_step_flops(const struct model *m, int seq_len, double sequences)
{
    struct cost_params cp = {.seq_len = seq_len, .micro_batch = 1, .tp = 1,
                             .recompute = RECOMPUTE_NONE};
    double sum = 0;
    for (int i = 0; i < m->n_layers; i++) {
        struct layer_cost c;
        model_layer_cost(m, i, &cp, &c);
        sum += c.flops_f + c.flops_b + c.flops_w;
    }
    return sum * sequences;
}
