/* arch.h — the architecture table: one row per Hugging Face `model_type`,
 * saying how that family spells its keys, what transformers assumes when a
 * key is absent (its config class's defaults), how the parameters are laid
 * out (gated MLP, biases, norms, positions), where a multimodal config keeps
 * its language model, and how the per-layer pattern is written. The reader
 * (model_read.c, model_pattern.c) is one piece of code driven by the row;
 * a new family is a new row in arch_table.c (models/README.md).
 *
 * Why a C table and not a CSV: a row carries lists (several spellings per
 * key, the defaults, class names) and enums (pattern forms, norm kinds) that a
 * flat CSV would have to encode in strings and parse again; here the compiler
 * checks every name, and there is no file to go missing at run time. */
#ifndef MPSIM_ARCH_H
#define MPSIM_ARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

/* What the reader asks a config for. Each field has HF's usual spellings
 * (arch_table.c, field_info); a row may give its own instead. */
enum field {
    F_HIDDEN, F_LAYERS, F_HEADS, F_KV_HEADS, F_HEAD_DIM, F_FFN, F_VOCAB, F_POSITIONS,
    F_ACT, F_TIED, F_ATTN_BIAS, F_MLP_BIAS, F_QK_NORM, F_WINDOW,
    /* mixture of experts */
    F_EXPERTS, F_EXPERTS_PER_TOK, F_MOE_FFN, F_SHARED_EXPERTS, F_SHARED_FFN,
    /* linear attention */
    F_LIN_K_HEADS, F_LIN_V_HEADS, F_LIN_K_DIM, F_LIN_V_DIM, F_LIN_CONV,
    /* state-space layers */
    F_SSM_STATE, F_SSM_CONV, F_SSM_EXPAND, F_SSM_DT_RANK, F_SSM_HEADS, F_SSM_HEAD_DIM,
    F_SSM_GROUPS, F_SSM_CONV_BIAS, F_SSM_PROJ_BIAS,
    /* the layer pattern's numbers (model_pattern.c) */
    F_FULL_EVERY,      /* every k-th layer full attention, the rest the other kind */
    F_MTP,             /* multi-token-prediction modules */
    F_DTYPE,
    F_EMBED_DIM,       /* an embedding narrower than h, projected (OPT-350m: refused) */
    N_FIELDS
};

enum field_type { FT_INT, FT_BOOL, FT_STRING };

struct field_info {
    const char *name;        /* for messages when no spelling is found */
    enum field_type type;
    int min;                 /* FT_INT: the least value accepted */
    const char *keys[3];     /* HF's usual spellings */
};
const struct field_info *field_info(enum field f);

/* Biases present in a family's layers. */
enum {
    BIAS_QKV = 1 << 0,       /* q, k, v projections */
    BIAS_O = 1 << 1,         /* attention output projection */
    BIAS_MLP = 1 << 2,       /* dense MLP (and shared experts) */
    BIAS_EXPERTS = 1 << 3,   /* routed experts (gpt-oss) */
    BIAS_ROUTER = 1 << 4,    /* router (gpt-oss) */
};

enum norm_kind { NORM_RMS, NORM_LAYER, NORM_LAYER_NO_BIAS };

/* Per-head q/k norms: none; one weight of head_dim each for q and k (Qwen3,
 * Gemma 3); one per head (Cohere's use_qk_norm); parameter-free (Llama 4's
 * L2 norm). */
enum qk_norm_kind { QK_NONE, QK_HEAD_DIM, QK_PER_HEAD, QK_L2 };

enum pos_kind { POS_NONE, POS_LEARNED };

/* How the per-layer mixer is spelled (model_pattern.c). A `layer_types`
 * list is read in every family and must agree with the row's own form. */
enum layer_form {
    LF_UNIFORM,        /* every decoder the family's attention */
    LF_ALL_SLIDING,    /* every decoder sliding when sliding_window is set (Mistral) */
    LF_QWEN2_WINDOW,   /* use_sliding_window: decoders >= max_window_layers slide */
    LF_EVERY_NTH,      /* decoder i full when (i+1) % F_FULL_EVERY == 0, else `other` */
    LF_KIMI,           /* linear_attn_config.full_attn_layers (1-based), the rest linear */
    LF_ATTN_TYPE_LIST, /* attn_type_list: 0 linear, 1 softmax (MiniMax-Text-01) */
    LF_HYBRID_PATTERN, /* hybrid_override_pattern: M mamba, * attention, - MLP, E MoE */
    LF_JAMBA,          /* attn_layer_period / attn_layer_offset, the rest Mamba */
    LF_LLAMA4,         /* no_rope_layers (1: chunked RoPE layer, 0: full NoPE) */
};

/* Which decoders' MLP is a mixture of experts (when the config has experts). */
enum moe_form {
    MOE_ALL,           /* every decoder (Mixtral) */
    MOE_QWEN,          /* every decoder_sparse_step-th, less mlp_only_layers */
    MOE_DEEPSEEK,      /* after first_k_dense_replace, every moe_layer_freq-th */
    MOE_JAMBA,         /* expert_layer_period / expert_layer_offset */
    MOE_LLAMA4,        /* moe_layers, else every interleave_moe_layer_step-th */
    MOE_PATTERN,       /* the layer pattern says (Nemotron-H "E") */
};

struct arch_row {
    const char *model_type;
    const char *classes[3];   /* architectures[0] names that mean this row */
    const char *refused;      /* set: not read, and this is why (one line) */
    const char *summary;      /* one line: what the family is */
    /* A multimodal config keeps its language model under `text_key`, read
     * with row `text_row` (NULL: by that object's own model_type). */
    const char *text_key, *text_row;
    const char *keys[N_FIELDS][3]; /* spellings that replace field_info's */
    /* transformers' config-class default when the key is absent, as the
     * text of the value ("262208", "true"); NULL: required, or 0 / false. */
    const char *def[N_FIELDS];
    int ffn_mult;             /* FFN width default = ffn_mult x h (GPT-2: 4) */
    bool gated_mlp;           /* gate, up, down (SwiGLU, GeGLU); else up, down */
    enum norm_kind norm;
    int norms;                /* norms per decoder: 2 pre-norms, 4 sandwich, 1 */
    unsigned bias;            /* BIAS_* always present */
    enum qk_norm_kind qk_norm;
    enum pos_kind pos;
    int pos_offset;           /* extra rows of a learned position table (OPT: 2) */
    bool embed_norm;          /* a norm after the embedding (BLOOM) */
    bool attn_gate;           /* q_proj doubled for a sigmoid output gate (Qwen3-Next) */
    bool attn_sinks;          /* one learned sink logit per head (gpt-oss) */
    bool mla;                 /* kv_lora_rank present: multi-head latent attention */
    enum mixer_kind linear;   /* what a "linear_attention" layer is in this family */
    enum mixer_kind other;    /* LF_EVERY_NTH: the kind of the non-full layers */
    enum layer_form layers;
    enum moe_form moe;
    bool shared_gate;         /* a sigmoid gate h x 1 on the shared expert (Qwen) */
    bool score_bias;          /* router score-correction bias E (DeepSeek-V3) */
    bool mamba_inner_norms;   /* RMSNorms on dt, B, C inside Mamba (Jamba) */
    enum active_quote quote;  /* the active count the vendor publishes */
};

/* The table, terminated by a row with model_type == NULL. */
extern const struct arch_row arch_rows[];

/* The row of `model_type`, NULL when unknown. */
const struct arch_row *arch_find(const char *model_type);

/* The row whose classes name `cls` (architectures[0]), NULL when none. */
const struct arch_row *arch_find_class(const char *cls);

/* "llama, mistral, ..." — the rows read (not refused), for messages. */
void arch_list_read(char *buf, size_t size);

#endif
