/* kernels.h — a layer pass as the list of GPU kernels it runs, each with its
 * shape (DESIGN.md §2, "Compute is priced kernel by kernel"): GEMMs by
 * (M, N, K, batch), fused attention by its FLOPs, head dim and sequence,
 * memory-bound kernels by the bytes they read and write. The lists know
 * nothing of chips; hardware/calib.h prices each kernel on one.
 *
 * Training (kernels_train_layer): every pass of one microbatch through one
 * model layer on one chip of its tensor-parallel group — forward (F),
 * input gradient (B) and weight gradient (W) — with the shapes split as
 * Megatron splits them (QKV and MLP-up by columns, attention-out and
 * MLP-down by rows, heads by t, the vocabulary by t; with sequence
 * parallelism the norms, residual adds and dropouts see s·b/t tokens).
 * Kernels that selective recompute re-runs (the unfused attention core:
 * QKᵀ, softmax, dropout, AV) carry `recompute`; full recompute re-runs the
 * whole forward list. FlashAttention recomputes inside its own backward, so
 * with `flash` nothing is marked.
 *
 * Serving (kernels_serve_layer): one pass of a continuous batch: the GEMMs
 * take the batch's total tokens; the attention of the decode members (each
 * at its own KV length: one batched decode kernel whose work is the sum of
 * theirs) sits beside the prompt chunks' FlashAttention; the LM head runs
 * for the tokens sampled.
 *
 * Each kernel has a place in its layer — a block (token mixer or MLP) and a
 * part of that block (PRE: norm; IN: the column-parallel GEMMs; MID: core
 * and activation; OUT: the row-parallel GEMM; POST: residual / dropout) —
 * which is where sim/strategy/tensor.c puts the TP/SP collectives. Per
 * mixer kind and MLP kind the kernels come from one small function each
 * (kernels.c), so a new layer kind is one function and one table row. */
#ifndef MPSIM_KERNELS_H
#define MPSIM_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "sim/common.h"

enum kernel_kind {
    KERNEL_GEMM,        /* m × n × k, `batch` independent ones (batched / grouped) */
    KERNEL_FLASH_FWD,   /* fused attention forward (FlashAttention) */
    KERNEL_FLASH_BWD,   /* its backward, recompute of the scores included */
    KERNEL_DECODE_ATTN, /* attention of decode tokens over their KV cache */
    KERNEL_SCAN,        /* linear attention's chunked state update (priced like flash) */
    KERNEL_MEMORY,      /* memory-bound: norms, activations, residual, dropout, ... */
    N_KERNEL_KINDS
};

enum kernel_pass { KPASS_F, KPASS_B, KPASS_W, N_KPASSES };
enum kernel_block { KBLOCK_MIXER, KBLOCK_MLP, N_KBLOCKS };
enum kernel_part { KPART_PRE, KPART_IN, KPART_MID, KPART_OUT, KPART_POST, N_KPARTS };
/* MoE: the router runs before the dispatch; the routed experts are priced
 * per rank by sim/strategy/experts.c under expert parallelism. */
enum kernel_role { KROLE_DENSE, KROLE_ROUTER, KROLE_ROUTED };

struct kernel {
    uint8_t kind, pass, block, part, role;
    bool causal;        /* attention: a causal mask (the FLOPs are already halved) */
    bool recompute;     /* re-run by selective recompute before the backward */
    bool accumulate;    /* GEMM: C is read and written (fp32 main-gradient accumulation) */
    const char *name;   /* "qkv", "softmax", ... (static text) */
    double m, n, k, batch;           /* GEMM */
    double a_bytes, b_bytes, c_bytes;/* GEMM: bytes per element of A (M×K), B (K×N), C (M×N) */
    double flops;       /* attention, scan */
    double bytes;       /* memory-bound kernels, attention: bytes read + written */
    double seq;         /* attention: KV length the efficiency is looked up at */
    double head_dim;    /* attention: head dim the efficiency is looked up at */
};

struct kernel_list {
    struct kernel *k;
    int n, cap;
};

void kernel_list_init(struct kernel_list *l);
void kernel_list_release(struct kernel_list *l);
static inline void kernel_list_clear(struct kernel_list *l) { l->n = 0; }

/* How a step's kernels are shaped. Bit widths of 0 mean 16. */
struct kernel_params {
    int seq_len, micro_batch;   /* s, b (training) */
    int tp;                     /* t */
    bool sp;                    /* sequence parallel (norms, residuals on s·b/t tokens) */
    int weight_bits, activation_bits, kv_bits;
    int compute_bits;           /* 16, or 8: FP8 GEMMs (inputs of 1 byte) */
    int grad_bits;              /* main gradients the W GEMMs accumulate into: 32 or 16 */
    bool flash;                 /* FlashAttention; else unfused attention */
    bool dropout;               /* dropout on attention probabilities and hidden states */
    int ep;                     /* > 1: routed experts left to experts.c */
    bool mtp;                   /* training: the LM head also runs the MTP modules */
    /* Context parallelism (> 1): every kernel sees the rank's s·b/cp tokens,
     * and whole-sequence attention and MLA leave their core out (priced
     * block by block by sim/strategy/context.h). */
    int cp;
};

/* Append every kernel of one microbatch of model->layer[layer] (F, B and W)
 * to `out`. */
void kernels_train_layer(const struct model *m, int layer, const struct kernel_params *p,
                         struct kernel_list *out);

/* Serving under expert parallelism (issue 19): one chip's routed experts
 * in a pass, `experts` of them reached with `tokens` token copies each, as
 * grouped forward GEMMs of the full expert width (an EP rank holds whole
 * experts) with the weights as stored. */
void kernels_serve_experts(const struct model *m, double tokens, double experts,
                           const struct kernel_params *p, struct kernel_list *out);

/* One routed expert's kernels for `tokens` tokens (gate/up GEMM, activation,
 * down GEMM, and their B and W), for experts.c's per-rank token counts. */
void kernels_expert(const struct model *m, double tokens, const struct kernel_params *p,
                    struct kernel_list *out);

/* What one serving pass carries through a layer. */
struct kernel_batch {
    double tokens;          /* every token in the pass (GEMMs take them together) */
    double emits;           /* tokens sampled at the end (LM head) */
    double items;           /* requests in the pass */
    double decode;          /* members decoding one token */
    double decode_ctx;      /* Σ over decode members of the KV length each reads */
    double prefill_tokens;  /* prompt tokens in the pass */
    double prefill_pairs;   /* Σ over prompt chunks of (query, key) pairs, causal */
    double prefill_items;   /* prompt chunks */
    /* The same two sums within the model's attention window (sliding or
     * chunked layers: kernel_window_of), by kernel_batch_add. */
    double decode_ctx_win, prefill_pairs_win;
    /* Decode members of more than one token (a speculative step's k + 1
     * tokens verified at once): the KV tokens decode_ctx counts more than
     * once, Σ (c − 1)·past, and within the window; the kernel reads each
     * member's cache once (issue 19). 0 for one-token decodes. */
    double decode_reread, decode_reread_win;
};

/* The model's windowed attention: the mixer kind (MIXER_SLIDING or
 * MIXER_CHUNKED; 0 when none) and its window in tokens (a model has one). */
struct kernel_window { int mixer; double w; };
void kernel_window_of(const struct model *m, struct kernel_window *w);

/* Add one request's part of a pass to `b`: `tokens` tokens after `past`
 * cached ones, decoding (each reads past + itself) or a prompt chunk
 * (causal), sampling a token at the end or not; the windowed sums under
 * `w` (may be NULL). */
void kernel_batch_add(struct kernel_batch *b, double tokens, double past, bool decode,
                      bool emits, const struct kernel_window *w);

/* Which serving kernels to emit: those that depend on the token count only
 * (GEMMs, norms, activations, LM head: a pass with the same tokens and
 * emits costs the same), those that depend on who is in the batch
 * (attention of decode members and prompt chunks, linear-attention state),
 * or both. */
enum { KSERVE_TOKENS = 1, KSERVE_ATTENTION = 2, KSERVE_ALL = 3 };

void kernels_serve_layer(const struct model *m, int layer, const struct kernel_params *p,
                         const struct kernel_batch *b, int which, struct kernel_list *out);

/* The batch-dependent part of a serving layer (its KSERVE_ATTENTION
 * kernels) in two steps, for the serving loop's hot path: the layer's
 * attention shape once (per token: KV bytes, FLOPs per (query, key) pair,
 * or the linear state), then for each pass its kernels (at most two) into
 * `out`, the count returned. kernels_serve_layer emits the same. */
enum { KATTN_NONE, KATTN_SOFTMAX, KATTN_LINEAR };
struct kernel_attention {
    int kind;
    double kv_token, flops_decode, flops_prefill, q_bytes;  /* softmax attention */
    double flops_token, state_bytes, io_token;              /* linear attention */
    double head_dim;
    bool windowed;          /* reads the batch's windowed sums */
    double window;
};
void kernels_serve_attention_shape(const struct model *m, int layer,
                                   const struct kernel_params *p, struct kernel_attention *a);
int kernels_serve_attention(const struct kernel_attention *a, const struct kernel_batch *b,
                            struct kernel out[2]);

/* A layer's kernels priced, in picoseconds, by pass, block and part; the
 * sums are what the pipeline and tensor.c lay out. */
struct layer_price {
    mp_time t[N_KPASSES][N_KBLOCKS][N_KPARTS];
    mp_time recompute;      /* selective recompute: the forward kernels marked `recompute` */
    mp_time router[N_KPASSES]; /* MoE: the router's share of the MLP block's IN part */
};

/* Σ of one pass (all blocks and parts), of one block, and of F + B + W. */
mp_time layer_price_pass(const struct layer_price *lp, enum kernel_pass pass);
mp_time layer_price_block(const struct layer_price *lp, enum kernel_pass pass,
                          enum kernel_block block);

/* Readable name of a kind / pass / part ("gemm", "forward", "in"). */
const char *kernel_kind_name(enum kernel_kind k);

#endif
