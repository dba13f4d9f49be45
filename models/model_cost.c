/* model_cost.c — what one layer costs for one microbatch: FLOPs of the
 * forward, input-gradient and weight-gradient passes, bytes moved, stashed
 * activations (Korthikanti et al. 2022), KV or recurrent state. See model.h;
 * the reading of config.json is model_read.c, the kinds' facts layer_kinds.c. */
#include "model_impl.h"
#include "sim/io/config.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Cost of one layer for one microbatch. */

double attn_pairs(enum mixer_kind k, int window, double s)
{
    double w = window;
    if (k == MIXER_SLIDING && w > 0 && w < s)
        /* s² x Σ_{p=1..s} min(p, w) / Σ_{p=1..s} p = s w (2s - w + 1) / (s + 1) */
        return s * w * (2 * s - w + 1) / (s + 1);
    if (k == MIXER_CHUNKED && w > 0 && w < s) {
        /* Causal pairs within each chunk of w, scaled as full attention's
         * s(s+1)/2 is to s². */
        double full = floor(s / w), rest = s - full * w;
        double causal = full * w * (w + 1) / 2 + rest * (rest + 1) / 2;
        return causal * 2 * s / (s + 1);
    }
    return s * s;
}

/* Attention-core FLOPs of one forward over a microbatch of b sequences of s
 * tokens (the parts with no weights): per-pair work over the pairs the kind
 * attends (full and MLA: QK^T and AV over the whole sequence, not halved for
 * causal masking, as Megatron counts it and the 72BLsh^2 formula does), and
 * per-token work of the recurrent kinds (layer_kinds.c). */
static double attn_flops(const struct model *m, const struct layer *L, double s, double b)
{
    double pair, tok;
    kind_core_flops(m, L->mixer, &pair, &tok);
    double flops = 0;
    if (pair > 0) flops += b * attn_pairs(L->mixer, L->window, s) * pair;
    if (tok > 0) flops += b * s * tok;
    return flops;
}

void layer_core_flops(const struct model *m, const struct layer *L, double *per_pair,
                      double *per_token)
{
    kind_core_flops(m, L->mixer, per_pair, per_token);
}

double layer_cost_request_bytes(const struct layer_cost *c, double tokens)
{
    double kept = c->kv_window > 0 && c->kv_window < tokens ? c->kv_window : tokens;
    return kept * c->kv_bytes_per_token + c->state_bytes_per_request;
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
    /* Context parallelism: the rank's s/cp tokens, each query scoring all s
     * keys, so every term, the 5as one too, is ÷ cp (docs/context_parallel.md). */
    double s = cp->seq_len, tok = (double)cp->seq_len * cp->micro_batch / (cp->cp > 1 ? cp->cp : 1);
    double t = cp->tp, h = m->hidden;
    if (cp->recompute == RECOMPUTE_FULL)
        return tok * h * A / (cp->sp ? t : 1); /* only the layer input */

    /* Per block (mixer, MLP): its input and its norm's input (h elements
     * each) and a 1-byte dropout mask of h (none without dropout): 10h at
     * 16 bits for a layer of two blocks, half for Nemotron-H's one-block
     * layers. */
    double blocks = (L->mixer != MIXER_NONE) + (L->mlp != MLP_NONE);
    double rep = blocks * (2 * h * A + (cp->no_dropout ? 0 : h));
    double attn_el = kind_act_elems(m, L->mixer);
    double mlp_el = 0, per = m->gated_mlp ? 3 : 2;
    if (L->mlp == MLP_MOE)
        mlp_el = per * ((double)m->experts_per_token * m->moe_intermediate +
                        m->shared_intermediate);
    else if (L->mlp == MLP_DENSE)
        mlp_el = per * m->intermediate;
    double split = (attn_el + mlp_el) * A;
    double score = 0;
    bool softmax = L->attn == ATTN_FULL || L->attn == ATTN_MLA;
    if (softmax && cp->flash)
        score = (double)m->heads * 4; /* FlashAttention's fp32 log-sum-exp */
    else if (softmax && cp->recompute != RECOMPUTE_SELECTIVE)
        score = (double)m->heads * s * (cp->no_dropout ? A : 2 * A + 1);
    /* Each part is an integer count of bytes over the microbatch before the
     * division, so exact sizes stay exact. */
    return tok * rep / (cp->sp ? t : 1) + tok * split / t + tok * score / t;
}

/* The LM head of one microbatch: 2sbhV each pass, also when tied. */
static void head_cost(const struct model *m, const struct layer *L, const struct cost_params *cp,
                      struct layer_cost *out)
{
    double W = (cp->weight_bits ? cp->weight_bits : 16) / 8.0;
    double A = (cp->activation_bits ? cp->activation_bits : 16) / 8.0;
    double tok = (double)cp->seq_len * cp->micro_batch / (cp->cp > 1 ? cp->cp : 1), t = cp->tp;
    double h = m->hidden, V = m->vocab, seq_split = cp->sp ? t : 1;
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
}

/* A decoder block of one microbatch (a layer of the list, or an MTP
 * module's block). `out->params` is set by the caller. */
static void decoder_cost(const struct model *m, const struct layer *L,
                         const struct cost_params *cp, bool ep_routed, struct layer_cost *out)
{
    double W = (cp->weight_bits ? cp->weight_bits : 16) / 8.0;
    double A = (cp->activation_bits ? cp->activation_bits : 16) / 8.0;
    double K = (cp->kv_bits ? cp->kv_bits : 16) / 8.0;
    /* Context parallelism: this rank's share of the tokens (model.h), and
     * of the whole sequence's attention core. */
    double cpd = cp->cp > 1 ? cp->cp : 1;
    double s = cp->seq_len, b = cp->micro_batch, tok = s * b / cpd, t = cp->tp;
    double h = m->hidden, seq_split = cp->sp ? t : 1;

    double mm = 2 * tok * L->matmul_params;
    if (ep_routed) mm -= 2 * tok * L->expert_params * m->experts_per_token / m->experts;
    double attn = attn_flops(m, L, s, b) / cpd;
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

    if (L->attn == ATTN_MLA)
        /* The compressed latent and the shared rope key serve every head, so
         * each tensor-parallel rank keeps all of it. */
        out->kv_bytes_per_token = L->kv_elems_per_token * K;
    else if (L->attn == ATTN_FULL)
        /* Fewer KV heads than ranks: each rank keeps a replica of one. */
        out->kv_bytes_per_token = 2.0 * (m->kv_heads >= t ? m->kv_heads / t : 1) *
                                  m->head_dim * K;
    if (mixer_info(L->mixer)->windowed) out->kv_window = L->window;
    /* Recurrent state: heads are split over the ranks. */
    if (L->state_elems > 0) out->state_bytes_per_request = L->state_elems * K / t;

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

static void cost_add(struct layer_cost *to, const struct layer_cost *x, double times)
{
    to->flops_f += times * x->flops_f;
    to->flops_b += times * x->flops_b;
    to->flops_w += times * x->flops_w;
    to->flops_recompute += times * x->flops_recompute;
    to->bytes_f += times * x->bytes_f;
    to->bytes_b += times * x->bytes_b;
    to->bytes_w += times * x->bytes_w;
    to->act_bytes += times * x->act_bytes;
    to->act_w_bytes += times * x->act_w_bytes;
}

/* A layer's parameters on one chip: ÷ t, routed experts ÷ ep under EP. */
static double chip_params(const struct layer *L, const struct cost_params *cp)
{
    if (L->moe && cp->ep > 1)
        return (L->params - L->expert_params) / cp->tp + L->expert_params / cp->ep;
    return L->params / cp->tp;
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
    double tok = (double)cp->seq_len * cp->micro_batch / (cp->cp > 1 ? cp->cp : 1), t = cp->tp;
    double h = m->hidden, V = m->vocab;
    double seq_split = cp->sp ? t : 1;

    memset(out, 0, sizeof *out);
    out->params = chip_params(L, cp);
    switch (L->kind) {
    case LAYER_EMBEDDING:
        /* A lookup: no FLOPs, no stash; reads one row per distinct token. */
        out->boundary_bytes = tok * h * A / seq_split;
        out->bytes_f = (tok < V ? tok : V) * h * W / t + out->boundary_bytes;
        out->bytes_b = out->boundary_bytes;
        out->bytes_w = out->bytes_f - out->boundary_bytes;
        return;
    case LAYER_LM_HEAD:
        head_cost(m, L, cp, out);
        if (cp->mtp && m->mtp_modules > 0) {
            /* DeepSeek-V3 trains with its MTP modules on the last stage:
             * each runs its block and the shared head once more. With EP
             * the block's routed experts are priced here, on the chip, as
             * if its tokens' experts were local (experts.c routes only the
             * main decoders). */
            struct layer_cost x;
            memset(&x, 0, sizeof x);
            decoder_cost(m, &m->mtp, cp, false, &x);
            cost_add(out, &x, m->mtp_modules);
            memset(&x, 0, sizeof x);
            head_cost(m, L, cp, &x);
            cost_add(out, &x, m->mtp_modules);
            out->params += m->mtp_modules * chip_params(&m->mtp, cp);
        }
        return;
    case LAYER_DECODER:
        decoder_cost(m, L, cp, L->moe && cp->ep > 1, out);
        return;
    }
}

double model_step_flops(const struct model *m, int seq_len, double sequences)
{
    /* A training step: the MTP modules run too. */
    struct cost_params cp = {.seq_len = seq_len, .micro_batch = 1, .tp = 1,
                             .recompute = RECOMPUTE_NONE, .mtp = true};
    double sum = 0;
    for (int i = 0; i < m->n_layers; i++) {
        struct layer_cost c;
        model_layer_cost(m, i, &cp, &c);
        sum += c.flops_f + c.flops_b + c.flops_w;
    }
    return sum * sequences;
}
