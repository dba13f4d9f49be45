/* hf_modules.h — a model as Transformers builds it for from_pretrained: the
 * module tree of its *ForCausalLM with Hugging Face's names
 * (`model.embed_tokens`, `model.layers.N`, `model.norm`, `model.rotary_emb`,
 * `lm_head`; GPT-2's `transformer.wte` ... `transformer.h.N`), each module's
 * bytes as Accelerate's compute_module_sizes counts them at a target dtype,
 * the class Transformers never splits (the decoder layer), and the tied
 * embedding. What sim/serve/device_map.h places.
 *
 * A decoder layer is one opaque node: infer_auto_device_map never looks
 * inside a no-split module, so only its size and its count of leaf modules
 * (Linear, norm, router: the mean term of get_balanced_memory) are kept.
 * The tensors inside, per family (transformers 4.45-4.5x, the versions
 * shared/reference/device-map.md was read against):
 *   Llama, Mistral, Qwen2 and unknown relatives: self_attn.{q,k,v,o}_proj
 *     (Qwen2: q/k/v biases), mlp.{gate,up,down}_proj, input_layernorm,
 *     post_attention_layernorm;
 *   Mixtral: block_sparse_moe.gate and .experts.E.{w1,w2,w3};
 *   Qwen2-MoE: mlp.gate, mlp.experts.E.*_proj, mlp.shared_expert.*_proj,
 *     mlp.shared_expert_gate;
 *   DeepSeek (and other n_routed_experts models): MLA's q_a_proj,
 *     q_a_layernorm, q_b_proj (or q_proj), kv_a_proj_with_mqa,
 *     kv_a_layernorm, kv_b_proj, o_proj; mlp.experts.E.*, mlp.gate (a router
 *     with weight and, V3, the e_score_correction_bias buffer),
 *     mlp.shared_experts.*;
 *   GPT-2: ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj (each
 *     with its bias). The causal-mask buffer older GPT-2 code registered is
 *     not counted (assumed absent, as in recent transformers).
 * The rotary `inv_freq` buffer (head_dim / 2 float32; MLA: qk_rope_head_dim
 * / 2) sits in `model.rotary_emb`, counted at min(target, 4) bytes.
 *
 * Bytes per element (compute_module_sizes): min(target, the tensor's own),
 * where the checkpoint is loaded at 16 bits (32 when weight_bits is 32):
 *   plain N bits: every parameter N / 8;
 *   bitsandbytes 8 / 4 bit: target 1 / 0.5 for everything but the modules
 *     bnb leaves unquantized (get_keys_to_not_convert: `lm_head`, or when
 *     tied the embedding, `lm_head` and the final norm), sized at 16 bits;
 *   fp8 (fine-grained, DeepSeek-V3's quantization_config): decoder Linear
 *     weights 1 byte plus their float32 weight_scale_inv per block (counted
 *     at 2), everything else 16 bits. */
#ifndef MPSIM_HF_MODULES_H
#define MPSIM_HF_MODULES_H

#include <stdbool.h>

#include "models/model.h"
#include "sim/common.h"

enum hf_quant { HF_QUANT_NONE, HF_QUANT_BNB_8BIT, HF_QUANT_BNB_4BIT, HF_QUANT_FP8 };

/* The dtype the model is sized at. */
struct hf_dtype {
    enum hf_quant quant;
    int weight_bits;      /* HF_QUANT_NONE: bits per parameter (4, 8, 16, 32) */
    int fp8_block[2];     /* HF_QUANT_FP8: weight_block_size (default 128 x 128) */
};

#define HF_NAME 96

struct hf_module {
    char name[HF_NAME];   /* dotted HF name; "" for the root */
    char cls[64];         /* Transformers class name */
    bool no_split;        /* the decoder layer class (_no_split_modules) */
    int parent, first_child, next_sibling; /* indices into hf_tree.mod; -1 none */
    double size;          /* Accelerate's module_sizes[name]: bytes of every tensor under it */
    bool sized;           /* it holds a tensor (a key of module_sizes) */
    double stream_bytes;  /* bytes a forward needs moved to its execution device when
                             offloaded (a tied lm_head: the embedding table) */
    int leaves;           /* sized modules under it (itself included) with no sized child */
    double leaf_bytes;    /* their bytes */
    int model_layer;      /* models/model.h layer it computes (0 embedding, 1..L
                             decoders, L+1 head), -1 for none (norm, rotary, dropout) */
};

struct hf_tree {
    char arch_class[64];  /* "LlamaForCausalLM" */
    char layer_class[64]; /* the no-split class, "LlamaDecoderLayer" */
    struct hf_module *mod; /* preorder: each module before its children, children in
                              registration order, so index order is model order */
    int n;
    /* The tied embedding (tie_word_embeddings): tensor names in the order
     * find_tied_parameters sorts them, the counted one (registered first) and
     * its size; module_sizes of the other name is 0. */
    bool tied;
    char tie_name[2][HF_NAME];
    double tie_size[2];
};

/* Build the tree of `m` sized at `dt`. MP_ERR_INPUT when a size is beyond
 * what the arithmetic keeps exact (2^52 bytes). Release with hf_tree_release. */
int hf_tree_build(struct hf_tree *t, const struct model *m, const struct hf_dtype *dt,
                  struct mp_error *err);
void hf_tree_release(struct hf_tree *t);

/* Index of the module named `name`, or -1. */
int hf_find(const struct hf_tree *t, const char *name);

/* Is module `i` module `anc` or inside it? */
bool hf_under(const struct hf_tree *t, int i, int anc);

/* Read the `quantization_config` of a Hugging Face config.json into `dt`:
 * bitsandbytes (quant_method "bitsandbytes" or load_in_8bit/load_in_4bit)
 * and fp8 (quant_method "fp8", weight_block_size). `dt` is left as it is when
 * there is none; another quant_method is MP_ERR_INPUT naming it (its sizes
 * are not modelled: pass --weight-bits instead). */
int hf_read_quantization(const char *config_path, struct hf_dtype *dt, struct mp_error *err);

/* "bf16", "int8 (bitsandbytes)", ... for reports. */
const char *hf_dtype_name(const struct hf_dtype *dt);

#endif
