/* model.h — a neural network as its authors ship it (a Hugging Face
 * config.json), turned into a list of layers with their parameters, and the
 * cost model that prices one layer for one microbatch: FLOPs and bytes of the
 * forward, input-gradient (B) and weight-gradient (W) passes, stashed
 * activation bytes, the activation handed to the next stage, KV bytes.
 *
 * Layer list: [embedding] [decoder 0] ... [decoder L-1] [lm_head]. The
 * embedding and LM head are layers of their own so the pipeline can put them
 * on the first and last stages, as Megatron does. */
#ifndef MPSIM_MODEL_H
#define MPSIM_MODEL_H

#include <stdbool.h>

#include "sim/common.h"

enum layer_kind { LAYER_EMBEDDING, LAYER_DECODER, LAYER_LM_HEAD };
enum attn_kind { ATTN_FULL, ATTN_LINEAR, ATTN_MLA };

struct layer {
    enum layer_kind kind;
    enum attn_kind attn;   /* decoders only */
    bool moe;              /* decoder whose FFN is a mixture of experts */
    int decoder_index;     /* 0-based among decoders, -1 otherwise */
    double params;         /* every parameter the layer holds */
    double active_params;  /* parameters one token touches (MoE: shared + top-k) */
    /* Weight-matrix parameters one token multiplies by (no norms, biases or
     * embedding lookups; MoE: router + shared + top-k experts). FLOPs are
     * 2 x tokens x this. The LM head counts V*h here even when tied. */
    double matmul_params;
    /* Of `params`, the routed experts' (0 when dense): a small microbatch
     * reads only the experts its tokens reach. */
    double expert_params;
};

struct model {
    char name[128];     /* preset or file name */
    char arch[64];      /* "llama", "gpt2", "mixtral", "qwen2_moe", "deepseek_v3" */
    int hidden;         /* h */
    int intermediate;   /* dense FFN width */
    int heads, kv_heads, head_dim;
    int decoders;       /* L */
    int vocab;
    int max_positions;  /* n_positions / max_position_embeddings (0 if absent) */
    bool tied_embeddings;
    bool gated_mlp;     /* SwiGLU-style (3 matrices) vs GeLU (2) */
    bool learned_positions; /* GPT-2: a position-embedding table */

    /* Mixture of experts (0 when dense). */
    int experts, experts_per_token, shared_experts, moe_intermediate;
    int shared_intermediate; /* width of all shared experts together (0: none) */
    int first_dense;    /* first_k_dense_replace */
    int expert_groups, groups_per_token; /* n_group / topk_group */

    /* Multi-head latent attention (DeepSeek); 0 when absent. */
    int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;

    int n_layers;       /* decoders + 2 */
    struct layer *layer;
};

/* Read a HF config.json. Unknown architectures are read by their standard key
 * names; missing required keys are MP_ERR_INPUT naming the file and key. */
int model_load(struct model *m, const char *path, struct mp_error *err);

/* Same, from a JSON text already in memory; `origin` names it in messages. */
int model_load_json(struct model *m, const char *json, const char *origin,
                    struct mp_error *err);

/* Free the layers; the model is then empty (releasing it again is safe). */
void model_release(struct model *m);

/* Total parameters (embedding and head counted once when tied). */
double model_params(const struct model *m);

/* Parameters one token uses (MoE: shared + top-k experts). */
double model_active_params(const struct model *m);

/* What a layer costs for one microbatch. */
struct cost_params {
    int seq_len;        /* s */
    int micro_batch;    /* b */
    int tp;             /* t, tensor-parallel degree (1 = none) */
    bool sp;            /* sequence parallel */
    int recompute;      /* enum recompute_kind (config.h) */
    int weight_bits, activation_bits;
    int kv_bits;        /* KV cache / recurrent state precision */
    /* Any of the three bit widths left 0 means 16. */
    /* Expert-parallel degree (0 or 1 = none). With ep > 1 a MoE layer's cost
     * leaves out its routed experts, which sim/strategy/experts.c prices by
     * the tokens each rank actually receives, and `params` counts the chip's
     * share of them (experts ÷ ep, not ÷ tp). */
    int ep;
    /* The attention kernels (issue 14): FlashAttention keeps no s² scores
     * (only a 4-byte log-sum-exp per head and token) and recomputes inside
     * its backward, so selective recompute has nothing left to re-run;
     * without dropout no masks are kept. Both false (zero) is Korthikanti's
     * unfused attention with dropout, the default of this struct. */
    bool flash;
    bool no_dropout;
};

struct layer_cost {
    /* FLOPs on one chip of the tensor-parallel group. F + B + W is the full
     * training cost; zero-bubble splits backward into B (input grad) and W
     * (weight grad): F = sbh(24h+4s), B = sbh(24h+8s), W = 24sbh² for a GPT
     * layer (cases.md §3). Recompute adds `flops_recompute` to the backward. */
    double flops_f, flops_b, flops_w, flops_recompute;
    /* Bytes moved through memory by each pass (weights read + activations). */
    double bytes_f, bytes_b, bytes_w;
    /* Activation bytes a forward stashes until its backward (M_B), and the part
     * only W needs (M_W), per chip (Korthikanti et al. 2022, cases.md §4). */
    double act_bytes, act_w_bytes;
    /* Bytes of the activation the layer hands to the next one (s·b·h at
     * activation precision). */
    double boundary_bytes;
    /* KV cache bytes per token (full attention), recurrent state bytes per
     * request (linear attention); 0 where the layer keeps none. */
    double kv_bytes_per_token, state_bytes_per_request;
    double params;      /* parameters on one chip of the TP group */
};

/* The cost of model->layer[layer] (0 the embedding, 1..decoders, decoders + 1
 * the LM head) for one microbatch under `cp`, on one chip of the TP group. */
void model_layer_cost(const struct model *m, int layer, const struct cost_params *cp,
                      struct layer_cost *out);

/* Model FLOPs of one training step for `sequences` sequences of seq_len
 * tokens (no recompute): Σ over layers of F + B + W. */
double model_step_flops(const struct model *m, int seq_len, double sequences);

#endif
