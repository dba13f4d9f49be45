/* kernels.c — the kernels a layer runs; see kernels.h.
 *
 * Bytes of memory-bound kernels are counted as the tensors each reads and
 * writes once, in units of one activation tensor (a "pass"): a norm reads
 * x and writes y (2 passes); its backward reads x and dy and writes dx,
 * then reads x and dy again for the weight's gradient (5); a residual add
 * reads two tensors and writes one (3); dropout reads one, writes one and
 * writes a one-byte mask per element (2 + mask) and its backward reads the
 * gradient and the mask and writes one (2 + mask); SwiGLU reads gate and up
 * and writes their product (3 of f), its backward reads dy, gate and up and
 * writes both gradients (5 of f); a fused bias-GeLU reads one and writes
 * one (2), its backward reads dy and x, writes dx and reads dx again for
 * the bias gradient (4). Megatron's fused scale-mask-softmax reads and
 * writes the scores (2 per score), its backward reads the probabilities and
 * their gradient and writes one (3). The vocabulary-parallel cross-entropy
 * in fp32 (Megatron's _VocabParallelCrossEntropy) per logit: the upcast
 * reads 2 bytes and writes 4, the max reads 4, the subtraction reads and
 * writes 4 each, exp reads and writes 4 each, the sum reads 4, the division
 * into probabilities reads and writes 4 each: 38 bytes forward; backward
 * reads the saved probabilities and writes the gradient (4 + 4), then casts
 * it to 16 bits (4 + 2): 14 bytes. These counts are ours, written from the
 * kernels' definitions (calibration.md §3b has no per-kernel traffic). */
#include "kernels.h"
#include "arch.h"
#include "model_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CE_FWD_BYTES 38.0
#define CE_BWD_BYTES 14.0
#define SAMPLING_PASSES 3.0   /* serving: logits to fp32 probabilities, top-k/p, draw */

void kernel_list_init(struct kernel_list *l) { memset(l, 0, sizeof *l); }

void kernel_list_release(struct kernel_list *l)
{
    free(l->k);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------------ */
/* The builder: where the next kernels go and the sizes they use. */

struct kb {
    struct kernel_list *out;
    const struct model *m;
    const struct kernel_params *p;
    bool train;
    int block;
    double A;      /* bytes per activation element */
    double Wb;     /* bytes per weight element as a GEMM reads it */
    double Ab;     /* bytes per activation element as a GEMM reads it (FP8: 1) */
    double G;      /* bytes per main-gradient element (W accumulates into it) */
    double K;      /* bytes per KV-cache element */
    double T;      /* tokens through this chip's GEMMs (s·b, or the pass's tokens) */
    double Tr;     /* tokens of the norms, residuals and dropouts (T/t with SP) */
    double s, b;   /* sequence and sequences (training attention) */
    double t;      /* tensor-parallel degree */
};

static struct kernel *push(struct kb *x, int kind, int pass, int part, const char *name)
{
    struct kernel_list *l = x->out;
    MP_GROW(l->k, l->cap, l->n + 1);
    struct kernel *k = &l->k[l->n++];
    memset(k, 0, sizeof *k);
    k->kind = (uint8_t)kind;
    k->pass = (uint8_t)pass;
    k->block = (uint8_t)x->block;
    k->part = (uint8_t)part;
    k->name = name;
    k->batch = 1;
    return k;
}

static struct kernel *mem(struct kb *x, int pass, int part, const char *name, double bytes)
{
    if (!(bytes > 0)) return NULL;
    struct kernel *k = push(x, KERNEL_MEMORY, pass, part, name);
    k->bytes = bytes;
    return k;
}

static struct kernel *gemm(struct kb *x, int pass, int part, const char *name, double m,
                           double n, double k, double batch, double a, double b, double c)
{
    if (!(m > 0 && n > 0 && k > 0 && batch > 0)) return NULL;
    struct kernel *g = push(x, KERNEL_GEMM, pass, part, name);
    g->m = m, g->n = n, g->k = k, g->batch = batch;
    g->a_bytes = a, g->b_bytes = b, g->c_bytes = c;
    return g;
}

/* y[M × n_out] = x[M × k_in] · Wᵀ, `batch` of them (grouped experts):
 * forward; input gradient dx = dy · W; weight gradient dW = dyᵀ · x,
 * accumulated into the main gradient (Megatron's gradient-accumulation
 * fusion). Serving runs the forward with the weights as stored. */
static void linear(struct kb *x, int part, const char *name, double M, double n_out,
                   double k_in, double batch, int role)
{
    struct kernel *g;
    if (!x->train) {
        if ((g = gemm(x, KPASS_F, part, name, M, n_out, k_in, batch, x->A, x->Wb, x->A)))
            g->role = (uint8_t)role;
        return;
    }
    if ((g = gemm(x, KPASS_F, part, name, M, n_out, k_in, batch, x->Ab, x->Wb, x->A)))
        g->role = (uint8_t)role;
    if ((g = gemm(x, KPASS_B, part, name, M, k_in, n_out, batch, x->Ab, x->Wb, x->A)))
        g->role = (uint8_t)role;
    if ((g = gemm(x, KPASS_W, part, name, n_out, k_in, M, batch, x->Ab, x->Ab, x->G))) {
        g->accumulate = true;
        g->role = (uint8_t)role;
    }
}

/* A norm over `width` features of the replicated tokens. */
static void norm(struct kb *x, int part, const char *name, double tokens, double width)
{
    double n = tokens * width * x->A;
    mem(x, KPASS_F, part, name, 2 * n);
    if (x->train) mem(x, KPASS_B, part, name, 5 * n);
}

/* The residual add closing a block (with bias and dropout where the model
 * has them, Megatron's fused bias-dropout-add); its backward: dropout's
 * gradient, the bias gradient, and at the block's input the residual
 * gradient added to the norm's. */
static void residual(struct kb *x, int bias_width)
{
    const struct kernel_params *p = x->p;
    double n = x->Tr * x->m->hidden;
    bool drop = x->train && p->dropout;
    mem(x, KPASS_F, KPART_POST, drop ? "bias_dropout_add" : "residual_add",
        n * (3 * x->A + (drop ? 1 : 0)));
    if (!x->train) return;
    if (drop) mem(x, KPASS_B, KPART_POST, "dropout_grad", n * (2 * x->A + 1));
    if (bias_width > 0) mem(x, KPASS_B, KPART_POST, "bias_grad", n * x->A);
    mem(x, KPASS_B, KPART_PRE, "residual_grad_add", 3 * n * x->A);
}

/* ------------------------------------------------------------------ */
/* Token mixers, one function per kind (the table `mixers` below). */

static double q_heads(const struct kb *x) { return x->m->heads / x->t; }
static double kv_heads(const struct kb *x)
{
    return x->m->kv_heads >= x->t ? x->m->kv_heads / x->t : 1;
}

/* The attention core of a training microbatch: FlashAttention, or the
 * unfused kernels (the scores through HBM). `dqk`, `dv`: head dims of the
 * scores and the values; `kvh`: KV heads (GQA repeats them for unfused).
 * A windowed layer (sliding, chunked) does attn_pairs(kind, w, s) / s² of
 * full attention's work under FlashAttention, whose efficiency is looked
 * up at the window; unfused attention computes every score and masks. */
static void attention_core_train(struct kb *x, const struct layer *L, double hq, double kvh,
                                 double dqk, double dv)
{
    const struct kernel_params *p = x->p;
    if (p->cp > 1 && (L->mixer == MIXER_ATTENTION || L->mixer == MIXER_MLA))
        return; /* context-parallel: sim/strategy/context.h prices the core */
    double s = x->s, b = x->b, T = x->T, A = x->A;
    double io = T * (hq * dqk + kvh * dqk + kvh * dv + hq * dv) * A;
    if (p->flash) {
        /* FLOPs as the FlashAttention benchmarks count them (calibration.md
         * §2): 2·s²·(dqk + dv) per head forward, halved by the causal mask;
         * backward 2.5× the forward. */
        double share = attn_pairs(L->mixer, L->window, s) / (s * s);
        double seq = mixer_info(L->mixer)->windowed && L->window > 0 && L->window < s
                         ? L->window : s;
        double flops = 2.0 * b * hq * s * s * (dqk + dv) / 2 * share;
        struct kernel *k = push(x, KERNEL_FLASH_FWD, KPASS_F, KPART_MID, "flash_attention");
        k->flops = flops, k->bytes = io, k->seq = seq, k->head_dim = (dqk + dv) / 2;
        k->causal = true;
        k = push(x, KERNEL_FLASH_BWD, KPASS_B, KPART_MID, "flash_attention");
        k->flops = 2.5 * flops, k->bytes = 2 * io, k->seq = seq, k->head_dim = (dqk + dv) / 2;
        k->causal = true;
        return;
    }
    double batch = b * hq, el = batch * s * s;
    if (kvh < hq) {
        /* Unfused GQA repeats K and V to every query head; the backward sums
         * them back. */
        double rep = T * (hq - kvh) * (dqk + dv) * A;
        mem(x, KPASS_F, KPART_MID, "repeat_kv", 2 * rep);
        mem(x, KPASS_B, KPART_MID, "repeat_kv", 2 * rep);
    }
    struct kernel *k;
    if ((k = gemm(x, KPASS_F, KPART_MID, "qk_scores", s, s, dqk, batch, A, A, A))) k->recompute = true;
    if ((k = mem(x, KPASS_F, KPART_MID, "softmax", 2 * el * A))) k->recompute = true;
    if (p->dropout && (k = mem(x, KPASS_F, KPART_MID, "attn_dropout", el * (2 * A + 1))))
        k->recompute = true;
    if ((k = gemm(x, KPASS_F, KPART_MID, "attn_values", s, dv, s, batch, A, A, A))) k->recompute = true;
    mem(x, KPASS_F, KPART_MID, "context_permute", 2 * T * hq * dv * A);
    /* Backward: context permute, dP = dO·Vᵀ and dV = Pᵀ·dO, dropout's and
     * softmax's gradients over the scores, dQ = dS·K and dK = dSᵀ·Q. */
    mem(x, KPASS_B, KPART_MID, "context_permute", 2 * T * hq * dv * A);
    gemm(x, KPASS_B, KPART_MID, "attn_values", s, s, dv, batch, A, A, A);
    gemm(x, KPASS_B, KPART_MID, "attn_values", s, dv, s, batch, A, A, A);
    if (p->dropout) mem(x, KPASS_B, KPART_MID, "attn_dropout", el * (2 * A + 1));
    mem(x, KPASS_B, KPART_MID, "softmax", 3 * el * A);
    gemm(x, KPASS_B, KPART_MID, "qk_scores", s, dqk, s, batch, A, A, A);
    gemm(x, KPASS_B, KPART_MID, "qk_scores", s, dqk, s, batch, A, A, A);
}

/* Keys one query at absolute position p (1-based) attends under window w:
 * summed over the queries past+1 .. past+c (causal, itself included). Full
 * attention: c·past + c(c+1)/2; sliding: Σ min(p, w); chunked: the
 * position within its chunk. */
static double causal_keys(int mixer, double w, double n)
{
    if (mixer == MIXER_SLIDING && w > 0 && n > w) return w * (w + 1) / 2 + (n - w) * w;
    if (mixer == MIXER_CHUNKED && w > 0 && n > w) {
        double full = floor(n / w), r = n - full * w;
        return full * w * (w + 1) / 2 + r * (r + 1) / 2;
    }
    return n * (n + 1) / 2;
}

void kernel_window_of(const struct model *m, struct kernel_window *w)
{
    memset(w, 0, sizeof *w);
    for (int l = 0; l < m->n_layers; l++) {
        const struct layer *L = &m->layer[l];
        if (L->kind == LAYER_DECODER && mixer_info(L->mixer)->windowed && L->window > 0) {
            w->mixer = L->mixer, w->w = L->window;
            return;
        }
    }
}

void kernel_batch_add(struct kernel_batch *b, double c, double past, bool decode, bool emits,
                      const struct kernel_window *w)
{
    if (!(c > 0)) return;
    b->tokens += c;
    b->items++;
    b->emits += emits;
    double win = w && w->mixer ? causal_keys(w->mixer, w->w, past + c) -
                                 causal_keys(w->mixer, w->w, past) : 0;
    if (decode) { /* each token reads past + itself */
        b->decode += c;
        b->decode_ctx += c * (past + 1);
        b->decode_ctx_win += w && w->mixer ? win : 0;
        if (c > 1) {
            /* The batched kernel reads the member's cache once: past + c
             * keys, where decode_ctx counts c·(past + 1). Within a window
             * the keys the c queries reach together: the last one's and
             * the c − 1 before it, at most past + c. */
            b->decode_reread += (c - 1) * past;
            if (w && w->mixer) {
                double last = causal_keys(w->mixer, w->w, past + c) -
                              causal_keys(w->mixer, w->w, past + c - 1);
                double once = last + c - 1 < past + c ? last + c - 1 : past + c;
                if (win > once) b->decode_reread_win += win - once;
            }
        }
    } else {      /* a prompt chunk, causal */
        b->prefill_tokens += c;
        b->prefill_pairs += c * past + c * (c + 1) / 2;
        b->prefill_pairs_win += win;
        b->prefill_items++;
    }
}

/* Serving: the decode members' attention as one batched kernel over their
 * KV caches (its work is the sum of each member's at its own length, under
 * a window the part of it within the window), and the prompt chunks'
 * FlashAttention (causal, at their effective KV length); a recurrent
 * mixer's state read and written per request. */
int kernels_serve_attention(const struct kernel_attention *a, const struct kernel_batch *bt,
                            struct kernel out[2])
{
    int n = 0;
    double ctx = a->windowed ? bt->decode_ctx_win : bt->decode_ctx;
    double pairs = a->windowed ? bt->prefill_pairs_win : bt->prefill_pairs;
    if (a->kind == KATTN_SOFTMAX && bt->decode > 0) {
        struct kernel *k = &out[n++];
        memset(k, 0, sizeof *k);
        k->kind = KERNEL_DECODE_ATTN, k->block = KBLOCK_MIXER, k->part = KPART_MID;
        k->name = "decode_attention", k->batch = 1;
        k->flops = a->flops_decode * ctx;
        double reread = a->windowed ? bt->decode_reread_win : bt->decode_reread;
        k->bytes = (ctx - reread) * a->kv_token + bt->decode * (a->kv_token + 2 * a->q_bytes);
        k->seq = ctx / bt->decode;
        k->head_dim = a->head_dim;
    }
    if (a->kind == KATTN_SOFTMAX && bt->prefill_tokens > 0) {
        struct kernel *k = &out[n++];
        memset(k, 0, sizeof *k);
        k->kind = KERNEL_FLASH_FWD, k->block = KBLOCK_MIXER, k->part = KPART_MID;
        k->name = "prefill_attention", k->batch = 1, k->causal = true;
        k->flops = a->flops_prefill * pairs;
        k->bytes = bt->prefill_tokens * (a->kv_token + 2 * a->q_bytes);
        /* A chunk of c tokens after p cached ones has c·p + c(c+1)/2 pairs:
         * pairs/c + c/2 ≈ p + c, the length it attends over. */
        double items = bt->prefill_items > 0 ? bt->prefill_items : 1;
        k->seq = pairs / bt->prefill_tokens + bt->prefill_tokens / items / 2;
        if (a->windowed && a->window > 0 && k->seq > a->window) k->seq = a->window;
        k->head_dim = a->head_dim;
    }
    if (a->kind == KATTN_LINEAR && bt->tokens > 0) {
        struct kernel *k = &out[n++];
        memset(k, 0, sizeof *k);
        k->kind = KERNEL_SCAN, k->block = KBLOCK_MIXER, k->part = KPART_MID;
        k->name = "recurrent_scan", k->batch = 1;
        k->flops = a->flops_token * bt->tokens;
        k->bytes = 2 * bt->items * a->state_bytes + bt->tokens * a->io_token;
        k->seq = bt->tokens / (bt->items > 0 ? bt->items : 1);
        k->head_dim = a->head_dim;
    }
    return n;
}

static void attention_serve(struct kb *x, const struct kernel_batch *bt,
                            const struct kernel_attention *a)
{
    struct kernel k[2];
    int n = kernels_serve_attention(a, bt, k);
    for (int i = 0; i < n; i++) {
        struct kernel_list *l = x->out;
        MP_GROW(l->k, l->cap, l->n + 1);
        l->k[l->n++] = k[i];
    }
}

static void rotary(struct kb *x, double heads, double dim)
{
    if (x->m->learned_positions) return;   /* GPT-2: a position table, no RoPE */
    double n = x->T * heads * dim * x->A;
    mem(x, KPASS_F, KPART_MID, "rotary", 2 * n);
    if (x->train) mem(x, KPASS_B, KPART_MID, "rotary", 2 * n);
}

/* An elementwise kernel over `width` features of the pass's tokens: the
 * forward reads `fr` tensors of that size and writes `fw`, the backward
 * `br` and `bw` (a gate: 2 + 1 forward, 3 + 2 backward). */
static void pointwise(struct kb *x, int part, const char *name, double width, double f,
                      double b)
{
    double n = x->T * width * x->A;
    mem(x, KPASS_F, part, name, f * n);
    if (x->train) mem(x, KPASS_B, part, name, b * n);
}

/* Softmax attention over the whole context or a window (MHA, GQA, MQA,
 * sliding, chunked): qkv (with Qwen3-Next's output gate, 2·H·d of q), q/k
 * norms, rotary, the core, the gate, attention-out. */
static void shape_full(const struct kb *x, const struct layer *L, struct kernel_attention *a)
{
    double d = x->m->head_dim, hq = q_heads(x), hkv = kv_heads(x);
    *a = (struct kernel_attention){ .kind = KATTN_SOFTMAX, .kv_token = 2 * hkv * d * x->K,
                                    .flops_decode = 4 * hq * d, .flops_prefill = 4 * hq * d,
                                    .head_dim = d, .q_bytes = hq * d * x->A };
    if (mixer_info(L->mixer)->windowed && L->window > 0) a->windowed = true, a->window = L->window;
}

static void mixer_full(struct kb *x, const struct layer *L, const struct kernel_batch *bt,
                       int which)
{
    const struct model *m = x->m;
    double h = m->hidden, d = m->head_dim, hq = q_heads(x), hkv = kv_heads(x);
    double q_out = m->attn_gate ? 2 * hq : hq;
    if (which & KSERVE_TOKENS) {
        linear(x, KPART_IN, "qkv", x->T, (q_out + 2 * hkv) * d, h, 1, KROLE_DENSE);
        if (x->train && (m->bias & BIAS_QKV))
            mem(x, KPASS_W, KPART_IN, "bias_grad", x->T * (q_out + 2 * hkv) * d * x->A);
        if (m->qk_norm_params > 0) {
            /* q and k RMSNorm per head: read and write each once forward. */
            pointwise(x, KPART_MID, "qk_norm", (hq + hkv) * d, 2, 5);
        }
        rotary(x, hq + hkv, d);
        if (x->train) attention_core_train(x, L, hq, hkv, d, d);
        if (m->attn_gate) pointwise(x, KPART_MID, "output_gate", hq * d, 3, 5);
        linear(x, KPART_OUT, "attn_out", x->T, h, hq * d, 1, KROLE_DENSE);
    }
    if (!x->train && (which & KSERVE_ATTENTION)) {
        struct kernel_attention a;
        shape_full(x, L, &a);
        attention_serve(x, bt, &a);
    }
}

/* Multi-head latent attention (DeepSeek): low-rank q and kv projections
 * (the down projections replicated over TP ranks), norms on the latents,
 * rotary on the rope part; serving decodes in the absorbed form, reading
 * the compressed latent (kv_lora + rope per token) and doing
 * 2·heads·(2·kv_lora + rope) FLOPs per (token, cached token). */
static void shape_mla(const struct kb *x, const struct layer *L, struct kernel_attention *a)
{
    (void)L;
    const struct model *m = x->m;
    double hq = q_heads(x), rope = m->qk_rope_head_dim, lat = m->kv_lora_rank;
    double qk = m->qk_nope_head_dim + rope, dv = m->v_head_dim;
    *a = (struct kernel_attention){ .kind = KATTN_SOFTMAX, .kv_token = (lat + rope) * x->K,
                                    .flops_decode = 2 * hq * (2 * lat + rope),
                                    .flops_prefill = 2 * hq * (qk + dv),
                                    .head_dim = (qk + dv) / 2, .q_bytes = hq * qk * x->A };
}

static void mixer_mla(struct kb *x, const struct layer *L, const struct kernel_batch *bt,
                      int which)
{
    const struct model *m = x->m;
    double h = m->hidden, hq = q_heads(x);
    double nope = m->qk_nope_head_dim, rope = m->qk_rope_head_dim, dv = m->v_head_dim;
    double qk = nope + rope, lat = m->kv_lora_rank;
    if (which & KSERVE_TOKENS) {
        if (m->q_lora_rank) {
            linear(x, KPART_IN, "q_down", x->T, m->q_lora_rank, h, 1, KROLE_DENSE);
            norm(x, KPART_IN, "q_norm", x->T, m->q_lora_rank);
            linear(x, KPART_IN, "q_up", x->T, hq * qk, m->q_lora_rank, 1, KROLE_DENSE);
        } else {
            linear(x, KPART_IN, "q", x->T, hq * qk, h, 1, KROLE_DENSE);
        }
        linear(x, KPART_IN, "kv_down", x->T, lat + rope, h, 1, KROLE_DENSE);
        norm(x, KPART_IN, "kv_norm", x->T, lat);
        linear(x, KPART_IN, "kv_up", x->T, hq * (nope + dv), lat, 1, KROLE_DENSE);
        rotary(x, hq + 1, rope);
        if (x->train) attention_core_train(x, L, hq, hq, qk, dv);
        linear(x, KPART_OUT, "attn_out", x->T, h, hq * dv, 1, KROLE_DENSE);
    }
    if (!x->train && (which & KSERVE_ATTENTION)) {
        struct kernel_attention a;
        shape_mla(x, L, &a);
        attention_serve(x, bt, &a);
    }
}

/* Recurrent mixers (linear attention, Gated DeltaNet, KDA, lightning,
 * Mamba-1, Mamba-2) share one layout: an input projection (every weight
 * matrix but the output one, layer_kinds.c's count, taken as one GEMM from
 * h), a depthwise short convolution, the chunked scan (the core FLOPs of
 * layer_kinds.c less the convolution's; backward twice the forward), a
 * gated norm over the output width where the kind has one, the output
 * projection. Heads split by t. The scan is priced at FlashAttention's
 * efficiency for its head dim (calibration.md has no scan kernels: an
 * assumption, hardware/kernels.csv). */
struct recurrent { double in, out, conv_dim, conv_k, scan_flops, head_dim; bool gated_norm; };

static void recurrent_dims(const struct model *m, enum mixer_kind kind, struct recurrent *r)
{
    memset(r, 0, sizeof *r);
    double mm, conv, pair, tok, h = m->hidden;
    kind_params(m, kind, &mm);
    kind_state_elems(m, kind, &conv);
    kind_core_flops(m, kind, &pair, &tok);
    switch (kind) {
    case MIXER_LIGHTNING: r->gated_norm = true; /* fall through */
    case MIXER_LINEAR:
        r->out = (double)m->heads * m->head_dim, r->head_dim = m->head_dim;
        break;
    case MIXER_GATED_DELTANET:
        r->out = (double)m->lin.v_heads * m->lin.v_dim, r->conv_k = m->lin.conv;
        r->head_dim = m->lin.k_dim, r->gated_norm = true;
        break;
    case MIXER_KDA:
        r->out = (double)m->lin.k_heads * m->lin.k_dim, r->conv_k = m->lin.conv;
        r->head_dim = m->lin.k_dim, r->gated_norm = true;
        break;
    case MIXER_MAMBA2: r->gated_norm = true; /* fall through */
    case MIXER_MAMBA:
        r->out = m->ssm.inner, r->conv_k = m->ssm.conv;
        r->head_dim = kind == MIXER_MAMBA2 && m->ssm.head_dim ? m->ssm.head_dim : 64;
        break;
    default: break;
    }
    r->in = (mm - r->out * h) / h;
    r->conv_dim = r->conv_k > 1 ? conv / (r->conv_k - 1) : 0;
    r->scan_flops = tok - 2 * r->conv_dim * r->conv_k;
    if (r->scan_flops < 0) r->scan_flops = 0;
}

static void shape_recurrent(const struct kb *x, const struct layer *L, struct kernel_attention *a)
{
    struct recurrent r;
    recurrent_dims(x->m, L->mixer, &r);
    double conv;
    double state = kind_state_elems(x->m, L->mixer, &conv);
    *a = (struct kernel_attention){ .kind = KATTN_LINEAR, .flops_token = r.scan_flops / x->t,
                                    .state_bytes = state * x->K / x->t,
                                    .io_token = (r.in + r.out) * x->A / x->t,
                                    .head_dim = r.head_dim };
}

static void mixer_recurrent(struct kb *x, const struct layer *L, const struct kernel_batch *bt,
                            int which)
{
    const struct model *m = x->m;
    double h = m->hidden, t = x->t;
    struct recurrent r;
    recurrent_dims(m, L->mixer, &r);
    if (which & KSERVE_TOKENS) {
        linear(x, KPART_IN, "in_proj", x->T, r.in / t, h, 1, KROLE_DENSE);
        if (r.conv_dim > 0) pointwise(x, KPART_MID, "short_conv", r.conv_dim / t, 2, 3);
        if (x->train) {
            double io = x->T * (r.in + r.out) / t * x->A;
            struct kernel *k = push(x, KERNEL_SCAN, KPASS_F, KPART_MID, "recurrent_scan");
            k->flops = r.scan_flops * x->T / t, k->bytes = io, k->seq = x->s;
            k->head_dim = r.head_dim;
            k = push(x, KERNEL_SCAN, KPASS_B, KPART_MID, "recurrent_scan");
            k->flops = 2 * r.scan_flops * x->T / t, k->bytes = 2 * io, k->seq = x->s;
            k->head_dim = r.head_dim;
        }
        if (r.gated_norm) pointwise(x, KPART_MID, "gated_norm", r.out / t, 3, 6);
        linear(x, KPART_OUT, "out_proj", x->T, h, r.out / t, 1, KROLE_DENSE);
    }
    if (!x->train && (which & KSERVE_ATTENTION)) {
        struct kernel_attention a;
        shape_recurrent(x, L, &a);
        attention_serve(x, bt, &a);
    }
}

/* One row per token-mixer kind (enum mixer_kind): its kernels (training,
 * and serving's token-count part with its batch part) and the shape of its
 * serving attention. MIXER_NONE has no row: the layer has no mixer block. */
struct mixer_row {
    void (*kernels)(struct kb *, const struct layer *, const struct kernel_batch *, int);
    void (*shape)(const struct kb *, const struct layer *, struct kernel_attention *);
};
static const struct mixer_row mixers[N_MIXER_KINDS] = {
    [MIXER_ATTENTION] = { mixer_full, shape_full },
    [MIXER_SLIDING] = { mixer_full, shape_full },
    [MIXER_CHUNKED] = { mixer_full, shape_full },
    [MIXER_MLA] = { mixer_mla, shape_mla },
    [MIXER_LINEAR] = { mixer_recurrent, shape_recurrent },
    [MIXER_GATED_DELTANET] = { mixer_recurrent, shape_recurrent },
    [MIXER_KDA] = { mixer_recurrent, shape_recurrent },
    [MIXER_LIGHTNING] = { mixer_recurrent, shape_recurrent },
    [MIXER_MAMBA] = { mixer_recurrent, shape_recurrent },
    [MIXER_MAMBA2] = { mixer_recurrent, shape_recurrent },
};

/* ------------------------------------------------------------------ */
/* MLPs: dense (gated or GeLU) and mixture of experts. */

/* A dense MLP of `width` on `tokens` (the shared experts too). Gated:
 * gate and up as one GEMM, SwiGLU, down; GPT-2: fc1, fused bias-GeLU, fc2. */
static void mlp_dense(struct kb *x, double tokens, double width, double batch, int role,
                      const char *up, const char *act, const char *down)
{
    const struct model *m = x->m;
    double h = m->hidden, n = tokens * batch * width * x->A;
    bool gated = m->gated_mlp;
    linear(x, KPART_IN, up, tokens, gated ? 2 * width : width, h, batch, role);
    struct kernel *k;
    if ((k = mem(x, KPASS_F, KPART_MID, act, (gated ? 3 : 2) * n))) k->role = (uint8_t)role;
    if (x->train && (k = mem(x, KPASS_B, KPART_MID, act, (gated ? 5 : 4) * n)))
        k->role = (uint8_t)role;
    linear(x, KPART_OUT, down, tokens, h, width, batch, role);
}

static void mlp(struct kb *x)
{
    const struct model *m = x->m;
    mlp_dense(x, x->T, m->intermediate / x->t, 1, KROLE_DENSE, "mlp_up",
              m->gated_mlp ? "swiglu" : "bias_gelu", "mlp_down");
}

/* MoE: router (replicated over TP ranks) and its top-k in fp32, the local
 * permutation of token copies into expert order and back, the shared
 * experts, and the routed experts as grouped GEMMs (expert widths split by
 * t). Training without EP assumes even routing, T·k/E tokens per expert;
 * serving reads the weights of the experts a pass reaches,
 * E·(1 − (1 − k/E)^T) in expectation. */
static void mlp_moe(struct kb *x)
{
    const struct model *m = x->m;
    double t = x->t, T = x->T, h = m->hidden, E = m->experts, k = m->experts_per_token;
    linear(x, KPART_IN, "router", T, E, h, 1, KROLE_ROUTER);
    struct kernel *q;
    if ((q = mem(x, KPASS_F, KPART_IN, "router_topk", 3 * T * E * 4))) q->role = KROLE_ROUTER;
    if (x->train && (q = mem(x, KPASS_B, KPART_IN, "router_topk", 3 * T * E * 4)))
        q->role = KROLE_ROUTER;
    double copies = T * h * x->A * (1 + k);
    mem(x, KPASS_F, KPART_IN, "permute", copies);
    mem(x, KPASS_F, KPART_OUT, "unpermute", copies);
    if (x->train) {
        mem(x, KPASS_B, KPART_IN, "permute", copies);
        mem(x, KPASS_B, KPART_OUT, "unpermute", copies);
    }
    if (m->shared_intermediate)
        mlp_dense(x, T, m->shared_intermediate / t, 1, KROLE_DENSE, "shared_up",
                  m->gated_mlp ? "swiglu" : "bias_gelu", "shared_down");
    /* Qwen's sigmoid gate on the shared expert: h → 1, replicated. */
    if (m->shared_intermediate && m->family && m->family->shared_gate)
        linear(x, KPART_IN, "shared_gate", T, 1, h, 1, KROLE_DENSE);
    if (x->p->ep > 1) return;   /* experts.c prices the routed experts per rank */
    double hit = E, per = T * k / E;
    if (!x->train) {
        hit = E * (1 - pow(1 - k / E, T));
        per = hit > 0 ? T * k / hit : 0;
    }
    if (hit > 0)
        mlp_dense(x, per, m->moe_intermediate / t, hit, KROLE_ROUTED, "expert_up",
                  m->gated_mlp ? "swiglu" : "bias_gelu", "expert_down");
}

/* ------------------------------------------------------------------ */
/* Layers. */

static void embedding(struct kb *x)
{
    const struct model *m = x->m;
    double h = m->hidden, T = x->T, Vt = m->vocab / x->t, A = x->A, G = x->G;
    x->block = KBLOCK_MIXER;
    mem(x, KPASS_F, KPART_IN, "embedding", T * h * (x->Wb + A));
    if (m->learned_positions) mem(x, KPASS_F, KPART_IN, "position_add", T * h * (x->Wb + 2 * A));
    if (!x->train) return;
    if (x->p->dropout) mem(x, KPASS_F, KPART_POST, "embedding_dropout", x->Tr * h * (2 * A + 1));
    /* The table's gradient, dense: zeroed, the microbatch's rows added
     * (read the gradient, read and write the rows), then accumulated into
     * the main gradient (read it, read and write the main gradient). */
    mem(x, KPASS_W, KPART_IN, "embedding_grad", Vt * h * (2 * A + 2 * G) + 3 * T * h * A);
    if (m->learned_positions)
        mem(x, KPASS_W, KPART_IN, "position_grad",
            (double)m->max_positions * h * (2 * A + 2 * G) + 3 * T * h * A);
}

/* The final norm, the vocabulary-parallel head and the loss in fp32. */
static void head_pass(struct kb *x)
{
    const struct model *m = x->m;
    double h = m->hidden, Vt = m->vocab / x->t;
    x->block = KBLOCK_MIXER;
    norm(x, KPART_PRE, "final_norm", x->Tr, h);
    linear(x, KPART_IN, "lm_head", x->T, Vt, h, 1, KROLE_DENSE);
    mem(x, KPASS_F, KPART_MID, "cross_entropy", CE_FWD_BYTES * x->T * Vt);
    mem(x, KPASS_B, KPART_MID, "cross_entropy", CE_BWD_BYTES * x->T * Vt);
}

static void decoder(struct kb *x, const struct layer *L, const struct kernel_batch *bt,
                    int which);

static void lm_head(struct kb *x, const struct kernel_batch *bt)
{
    const struct model *m = x->m;
    double h = m->hidden;
    x->block = KBLOCK_MIXER;
    if (!x->train) {
        /* Vocabulary-parallel head (V/t columns a rank); the logits are
         * gathered (serve_layout.c prices the all-gather) and sampled whole. */
        norm(x, KPART_PRE, "final_norm", bt->tokens, h);
        linear(x, KPART_IN, "lm_head", bt->emits, m->vocab / x->t, h, 1, KROLE_DENSE);
        mem(x, KPASS_F, KPART_MID, "sampling", SAMPLING_PASSES * bt->emits * m->vocab * 4);
        return;
    }
    head_pass(x);
    if (!x->p->mtp) return;
    /* DeepSeek's MTP modules train on the last stage (model_cost.c's
     * cost_params.mtp): each normalises the main model's hidden state and
     * the next token's embedding (enorm, hnorm), projects their
     * concatenation (eh_proj, 2h → h), runs its decoder block and the
     * shared head once more. Their routed experts are priced here as local
     * ones (experts.c routes the main decoders only); the block's TP
     * collectives are not laid out (the LM head layer has none inside). */
    struct kernel_params local = *x->p;
    local.ep = 1;
    const struct kernel_params *main = x->p;
    for (int i = 0; i < m->mtp_modules; i++) {
        x->block = KBLOCK_MIXER;
        norm(x, KPART_PRE, "mtp_norms", x->Tr, 2 * h);
        linear(x, KPART_IN, "mtp_eh_proj", x->T, h / x->t, 2 * h, 1, KROLE_DENSE);
        x->p = &local;
        decoder(x, &m->mtp, NULL, KSERVE_TOKENS);
        x->p = main;
        head_pass(x);
    }
}

static void decoder(struct kb *x, const struct layer *L, const struct kernel_batch *bt,
                    int which)
{
    const struct model *m = x->m;
    double h = m->hidden;
    if (L->mixer != MIXER_NONE) {
        assert(L->mixer >= 0 && L->mixer < N_MIXER_KINDS && mixers[L->mixer].kernels);
        x->block = KBLOCK_MIXER;
        if (which & KSERVE_TOKENS) norm(x, KPART_PRE, "norm", x->Tr, h);
        mixers[L->mixer].kernels(x, L, bt, which);
        if (which & KSERVE_TOKENS) residual(x, (m->bias & BIAS_O) ? (int)h : 0);
    }
    if (!(which & KSERVE_TOKENS) || L->mlp == MLP_NONE) return;
    x->block = KBLOCK_MLP;
    norm(x, KPART_PRE, "norm", x->Tr, h);
    if (L->mlp == MLP_MOE) mlp_moe(x);
    else mlp(x);
    residual(x, (m->bias & BIAS_MLP) ? (int)h : 0);
}

static void setup(struct kb *x, const struct model *m, const struct kernel_params *p,
                  struct kernel_list *out, bool train)
{
    memset(x, 0, sizeof *x);
    x->out = out, x->m = m, x->p = p, x->train = train;
    x->t = p->tp > 0 ? p->tp : 1;
    x->A = (p->activation_bits ? p->activation_bits : 16) / 8.0;
    double W = (p->weight_bits ? p->weight_bits : 16) / 8.0;
    bool fp8 = p->compute_bits == 8;
    /* Training GEMMs read 16-bit weights (or their FP8 cast); serving reads
     * the weights as stored and dequantises in the kernel. */
    x->Wb = train ? (fp8 ? 1 : (W < 2 ? 2 : W)) : W;
    x->Ab = fp8 ? 1 : x->A;
    x->G = (p->grad_bits ? p->grad_bits : 32) / 8.0;
    x->K = (p->kv_bits ? p->kv_bits : 16) / 8.0;
}

void kernels_train_layer(const struct model *m, int layer, const struct kernel_params *p,
                         struct kernel_list *out)
{
    assert(layer >= 0 && layer < m->n_layers && p->seq_len >= 1 && p->micro_batch >= 1);
    struct kb x;
    setup(&x, m, p, out, true);
    x.s = p->seq_len, x.b = p->micro_batch;
    x.T = x.s * x.b / (p->cp > 1 ? p->cp : 1);
    x.Tr = p->sp ? x.T / x.t : x.T;
    const struct layer *L = &m->layer[layer];
    switch (L->kind) {
    case LAYER_EMBEDDING: embedding(&x); break;
    case LAYER_LM_HEAD: lm_head(&x, NULL); break;
    case LAYER_DECODER: decoder(&x, L, NULL, KSERVE_TOKENS); break;
    }
}

void kernels_expert(const struct model *m, double tokens, const struct kernel_params *p,
                    struct kernel_list *out)
{
    struct kb x;
    setup(&x, m, p, out, true);
    x.block = KBLOCK_MLP;
    if (tokens > 0)
        mlp_dense(&x, tokens, m->moe_intermediate, 1, KROLE_ROUTED, "expert_up",
                  m->gated_mlp ? "swiglu" : "bias_gelu", "expert_down");
}

void kernels_serve_experts(const struct model *m, double tokens, double experts,
                           const struct kernel_params *p, struct kernel_list *out)
{
    struct kb x;
    setup(&x, m, p, out, false);
    x.block = KBLOCK_MLP;
    x.T = x.Tr = tokens * experts;
    if (tokens > 0 && experts > 0)
        mlp_dense(&x, tokens, m->moe_intermediate, experts, KROLE_ROUTED, "expert_up",
                  m->gated_mlp ? "swiglu" : "bias_gelu", "expert_down");
}

void kernels_serve_layer(const struct model *m, int layer, const struct kernel_params *p,
                         const struct kernel_batch *b, int which, struct kernel_list *out)
{
    assert(layer >= 0 && layer < m->n_layers);
    struct kb x;
    setup(&x, m, p, out, false);
    x.T = x.Tr = b->tokens;
    const struct layer *L = &m->layer[layer];
    switch (L->kind) {
    case LAYER_EMBEDDING:
        if (which & KSERVE_TOKENS) embedding(&x);
        break;
    case LAYER_LM_HEAD:
        if ((which & KSERVE_TOKENS) && b->emits > 0) lm_head(&x, b);
        break;
    case LAYER_DECODER:
        if (b->tokens > 0) decoder(&x, L, b, which);
        break;
    }
}

void kernels_serve_attention_shape(const struct model *m, int layer,
                                   const struct kernel_params *p, struct kernel_attention *a)
{
    assert(layer >= 0 && layer < m->n_layers);
    memset(a, 0, sizeof *a);
    const struct layer *L = &m->layer[layer];
    if (L->kind != LAYER_DECODER) return;
    struct kb x;
    setup(&x, m, p, NULL, false);
    if (L->mixer == MIXER_NONE) return;
    mixers[L->mixer].shape(&x, L, a);
}

mp_time layer_price_block(const struct layer_price *lp, enum kernel_pass pass,
                          enum kernel_block block)
{
    mp_time s = 0;
    for (int q = 0; q < N_KPARTS; q++) s = mp_time_add(s, lp->t[pass][block][q]);
    return s; /* saturating: each part may be MP_TIME_HUGE (sim/common.h) */
}

mp_time layer_price_pass(const struct layer_price *lp, enum kernel_pass pass)
{
    return mp_time_add(layer_price_block(lp, pass, KBLOCK_MIXER),
                       layer_price_block(lp, pass, KBLOCK_MLP));
}

const char *kernel_kind_name(enum kernel_kind k)
{
    static const char *const names[N_KERNEL_KINDS] = {
        [KERNEL_GEMM] = "gemm", [KERNEL_FLASH_FWD] = "flash_fwd", [KERNEL_FLASH_BWD] = "flash_bwd",
        [KERNEL_DECODE_ATTN] = "decode_attention", [KERNEL_SCAN] = "scan",
        [KERNEL_MEMORY] = "memory",
    };
    return k < N_KERNEL_KINDS ? names[k] : "?";
}
