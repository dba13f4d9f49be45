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

/* What a decoder's token mixer is (models/layer_kinds.c holds the facts of
 * each: parameters, KV or state, attention-core work). */
enum mixer_kind {
    MIXER_NONE,           /* no mixer: an MLP-only layer (Nemotron-H "-") */
    MIXER_ATTENTION,      /* softmax attention over the whole context: MHA, GQA, MQA */
    MIXER_MLA,            /* multi-head latent attention (DeepSeek-V2/V3, Kimi K2) */
    MIXER_SLIDING,        /* softmax attention over the last `window` tokens */
    MIXER_CHUNKED,        /* softmax attention within chunks of `window` tokens (Llama 4) */
    MIXER_LINEAR,         /* linear attention of unpublished design: full attention's
                             projections, a heads x d x d state (kimi-k3's assumption) */
    MIXER_GATED_DELTANET, /* Gated DeltaNet (Qwen3-Next) */
    MIXER_KDA,            /* Kimi Delta Attention (Kimi-Linear): a gated DeltaNet with
                             channel-wise decay and low-rank gates */
    MIXER_LIGHTNING,      /* MiniMax lightning attention */
    MIXER_MAMBA,          /* Mamba-1 selective scan (Jamba) */
    MIXER_MAMBA2,         /* Mamba-2 (Nemotron-H) */
    N_MIXER_KINDS
};

enum mlp_kind { MLP_NONE, MLP_DENSE, MLP_MOE, N_MLP_KINDS };

/* How a mixer's memory grows, for code that needs only that: KV per token of
 * context (full or windowed softmax attention), MLA's latent per token, a
 * fixed state per request, or nothing. */
enum attn_kind { ATTN_FULL, ATTN_LINEAR, ATTN_MLA, ATTN_NONE };

struct layer {
    enum layer_kind kind;
    enum mixer_kind mixer; /* decoders only */
    enum mlp_kind mlp;     /* decoders only */
    enum attn_kind attn;   /* the mixer's class (mixer_info(mixer)->attn) */
    bool moe;              /* mlp == MLP_MOE */
    int window;            /* MIXER_SLIDING / MIXER_CHUNKED: tokens; 0 otherwise */
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
    double mixer_params;   /* of `params`, the token mixer's (norms apart) */
    /* Per request, at t = 1: K/V (or latent) elements per token of context,
     * kept for at most `window` tokens when windowed; and the fixed
     * recurrent state's elements (conv_state_elems of them the short
     * convolution's last inputs). */
    double kv_elems_per_token, state_elems, conv_state_elems;
};

/* The facts of one mixer kind (one row of the table in layer_kinds.c). */
struct mixer_info {
    const char *name;      /* as printed and in JSON: "attention", "gated_deltanet", ... */
    char letter;           /* in `mpsim model`'s pattern string */
    enum attn_kind attn;
    bool windowed;         /* KV bounded by layer.window */
    const char *source;    /* where its parameter count comes from */
};
const struct mixer_info *mixer_info(enum mixer_kind k);
const char *mlp_kind_name(enum mlp_kind k);

/* How a checkpoint stores its weights (quantization_config, torch_dtype). */
enum quant_method { QUANT_NONE, QUANT_FP8, QUANT_MXFP4, QUANT_INT4, QUANT_INT8, QUANT_OTHER };

/* Parameter groups, for quantization_config's modules_to_not_convert and
 * `mpsim model`'s breakdown. */
enum param_group { PG_EMBEDDING, PG_HEAD, PG_MIXER, PG_ROUTER, PG_EXPERTS, PG_MLP, PG_NORM,
                   N_PARAM_GROUPS };

struct model_quant {
    enum quant_method method;
    char name[32];        /* quant_method as written ("fp8", "mxfp4", "gptq", ...) */
    double bits;          /* bits per quantized weight, scales included */
    double base_bits;     /* bits of everything else (torch_dtype; 16 when absent) */
    bool quantized[N_PARAM_GROUPS]; /* which groups carry `bits` */
};

/* Which active-parameter count the family's vendor publishes. */
enum active_quote { QUOTE_UNKNOWN, QUOTE_ALL, QUOTE_NO_EMBEDDING, QUOTE_DECODERS };

/* Keys of the config that changed nothing: names kept (up to a cap) with
 * their count, for `mpsim model`'s warnings. */
struct key_list { char **names; int n, kept; };

struct arch_row;

struct model {
    char name[128];     /* preset or file name */
    char arch[64];      /* the architecture row read by ("llama", "qwen3_next", ...) */
    const struct arch_row *family; /* that row (models/arch.h) */
    const struct arch_row *wrapper; /* the multimodal row whose text_config was read, or NULL */
    int hidden;         /* h */
    int intermediate;   /* dense FFN width */
    int heads, kv_heads, head_dim;
    int decoders;       /* L */
    int vocab;
    int max_positions;  /* n_positions / max_position_embeddings (0 if absent) */
    bool tied_embeddings;
    bool gated_mlp;     /* SwiGLU-style (3 matrices) vs GeLU (2) */
    bool learned_positions; /* GPT-2: a position-embedding table */
    int window;         /* sliding window or attention chunk, tokens (0: none) */

    /* Mixture of experts (0 when dense). */
    int experts, experts_per_token, shared_experts, moe_intermediate;
    int shared_intermediate; /* width of all shared experts together (0: none) */
    int first_dense;    /* first_k_dense_replace */
    int expert_groups, groups_per_token; /* n_group / topk_group */

    /* Multi-head latent attention (DeepSeek); 0 when absent. */
    int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;

    /* Linear attention (Gated DeltaNet, KDA, lightning, generic): key and
     * value heads and widths, short-convolution kernel (0 when none). */
    struct { int k_heads, v_heads, k_dim, v_dim, conv; } lin;
    /* State-space layers (Mamba-1, Mamba-2): inner width, state size N,
     * conv kernel, dt rank (Mamba-1), heads x head_dim and groups (Mamba-2). */
    struct { int inner, state, conv, dt_rank, heads, head_dim, groups;
             bool conv_bias, proj_bias; } ssm;

    /* Facts of the family and the file that the parameter count needs. */
    unsigned bias;      /* BIAS_* of models/arch.h in effect */
    int norm_params;    /* parameters of one norm over h (h or 2h) */
    int norms_per_layer;
    int qk_norm_params; /* per decoder with attention */
    bool attn_gate, attn_sinks, embed_norm;

    /* DeepSeek's multi-token-prediction modules (num_nextn_predict_layers):
     * not in the layer list nor in model_params (vendors quote the main
     * model); priced with the LM head in training (cost_params.mtp). `mtp`
     * is one module: its decoder block, eh_proj (2h x h) and enorm, hnorm
     * and the shared head's final norm. */
    int mtp_modules;
    struct layer mtp;

    struct model_quant quant;  /* as the checkpoint ships */
    struct key_list defaults;  /* "key = value" defaults taken from the family row */
    struct key_list ignored;   /* keys that do not change size or cost */
    struct key_list unused;    /* keys not read at all: the warnings */

    int n_layers;       /* decoders + 2 */
    struct layer *layer;
};

/* Read a HF config.json by its family row (model_type, or architectures[0]
 * when model_type is absent). Bad input is MP_ERR_INPUT naming the file, the
 * line, the key and what was expected. */
int model_load(struct model *m, const char *path, struct mp_error *err);

/* Same, read by the architecture row `family` whatever model_type says
 * (NULL or "" = by model_type): the scenario key model.family. */
int model_load_as(struct model *m, const char *path, const char *family, struct mp_error *err);

/* Same, from a JSON text already in memory; `origin` names it in messages. */
int model_load_json(struct model *m, const char *json, const char *origin,
                    struct mp_error *err);
int model_load_json_as(struct model *m, const char *json, size_t len, const char *origin,
                       const char *family, struct mp_error *err);

/* The scenario's model: model.config resolved (config_resolve) and read
 * with model.family. */
struct config;
int model_load_config(struct model *m, const struct config *cfg, struct mp_error *err);

/* Free the layers; the model is then empty (releasing it again is safe). */
void model_release(struct model *m);

/* Total parameters (embedding and head counted once when tied). */
double model_params(const struct model *m);

/* Parameters one token uses (MoE: shared + top-k experts), the embedding
 * table and the LM head included (the convention of Mixtral's and Qwen's
 * published counts). */
double model_active_params(const struct model *m);

/* Parameters by the conventions vendors publish (models/README.md):
 * all — every parameter (model_params / model_active_params);
 * no_embedding — without the input embedding (and position) table; the LM
 *   head stays, tied or not, since every token multiplies by it (DeepSeek,
 *   Kimi, OpenAI's gpt-oss);
 * decoders — the decoder layers only, neither embedding nor head (Kaplan's
 *   "non-embedding"; Qwen's non-embedding figure, MiniMax). */
struct model_counts { double all, no_embedding, decoders; };
void model_param_counts(const struct model *m, struct model_counts *total,
                        struct model_counts *active);

/* The MTP modules' parameters (0 when none): outside model_params. */
double model_mtp_params(const struct model *m);

/* Parameters by group (embedding, head, mixer, router, routed experts,
 * dense/shared MLP, norms), summing to model_params. */
void model_param_groups(const struct model *m, double out[N_PARAM_GROUPS]);

/* Bytes of the weights as the checkpoint ships them (model->quant). */
double model_shipped_weight_bytes(const struct model *m);

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
    /* Context-parallel degree (0 or 1 = none; branch context, issue 17):
     * each rank holds seq_len / cp tokens of every sequence, so every
     * per-token cost and activation shrinks by cp, while attention's keys
     * still span the whole sequence: the rank's attention core is the
     * whole sequence's ÷ cp (sim/strategy/context.h prices it block by
     * block) and its stashed scores are (s / cp) × s per head. */
    int cp;
    /* Training: the LM head layer also carries the model's MTP modules
     * (model.mtp_modules): their blocks' passes, weights and stash and a
     * second head pass each. Serving leaves it false. */
    bool mtp;
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
    /* KV cache bytes per token (softmax attention and MLA), kept for at most
     * `kv_window` tokens of a request (sliding window or chunk; 0 = the whole
     * context); recurrent state bytes per request (linear attention, SSM:
     * the state and the short convolution's last inputs); 0 where the layer
     * keeps none. */
    double kv_bytes_per_token, state_bytes_per_request;
    int kv_window;
    double params;      /* parameters on one chip of the TP group */
};

/* The cost of model->layer[layer] (0 the embedding, 1..decoders, decoders + 1
 * the LM head) for one microbatch under `cp`, on one chip of the TP group. */
void model_layer_cost(const struct model *m, int layer, const struct cost_params *cp,
                      struct layer_cost *out);

/* Forward FLOPs of a decoder's mixer core (no weights): per (query, key)
 * pair for softmax kinds, per token for recurrent kinds (linear attention,
 * SSM); 0 where it has none. Serving prices decode passes from these. */
void layer_core_flops(const struct model *m, const struct layer *L, double *per_pair,
                      double *per_token);

/* KV bytes one request of `tokens` tokens keeps in this layer: min(tokens,
 * kv_window) x kv_bytes_per_token, plus the state. */
double layer_cost_request_bytes(const struct layer_cost *c, double tokens);

/* Pairs of (query, key) one forward over s tokens attends, in the
 * convention of full attention's 4bs²hd (s² per sequence, not halved for
 * the causal mask, as Megatron counts): s² for full attention; the causal
 * count scaled the same way, s² x Σ_p min(p, w) / Σ_p p, for a sliding
 * window w; and for chunks of w the causal pairs within each chunk. */
double attn_pairs(enum mixer_kind k, int window, double s);

/* Model FLOPs of one training step for `sequences` sequences of seq_len
 * tokens (no recompute): Σ over layers of F + B + W, the MTP modules
 * included. */
double model_step_flops(const struct model *m, int seq_len, double sequences);

#endif
