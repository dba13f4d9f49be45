/* arch_table.c — the architecture table (arch.h): one row per Hugging Face
 * model_type. Every fact here is transformers' own: the config class's
 * defaults (configuration_<family>.py) and the module layout of its
 * modeling_<family>.py (which projections carry biases, how many norms a
 * decoder has), as of transformers 4.5x, written from the public code and
 * configs as the authors of this table know them. Rows marked "refused" are
 * families mpsim does not read, with the reason. */
#include "arch.h"

#include <stdio.h>
#include <string.h>

static const struct field_info fields[N_FIELDS] = {
    [F_HIDDEN] = {"hidden_size", FT_INT, 1, {"hidden_size"}},
    [F_LAYERS] = {"num_hidden_layers", FT_INT, 1, {"num_hidden_layers"}},
    [F_HEADS] = {"num_attention_heads", FT_INT, 1, {"num_attention_heads"}},
    [F_KV_HEADS] = {"num_key_value_heads", FT_INT, 1, {"num_key_value_heads"}},
    [F_HEAD_DIM] = {"head_dim", FT_INT, 1, {"head_dim"}},
    [F_FFN] = {"intermediate_size", FT_INT, 1, {"intermediate_size"}},
    [F_VOCAB] = {"vocab_size", FT_INT, 1, {"vocab_size"}},
    [F_POSITIONS] = {"max_position_embeddings", FT_INT, 0, {"max_position_embeddings"}},
    [F_ACT] = {"hidden_act", FT_STRING, 0, {"hidden_act"}},
    [F_TIED] = {"tie_word_embeddings", FT_BOOL, 0, {"tie_word_embeddings"}},
    [F_ATTN_BIAS] = {"attention_bias", FT_BOOL, 0, {"attention_bias"}},
    [F_MLP_BIAS] = {"mlp_bias", FT_BOOL, 0, {"mlp_bias"}},
    [F_QK_NORM] = {"use_qk_norm", FT_BOOL, 0, {NULL}},
    [F_WINDOW] = {"sliding_window", FT_INT, 0, {"sliding_window"}},
    [F_EXPERTS] = {"num_experts", FT_INT, 0, {NULL}},
    [F_EXPERTS_PER_TOK] = {"num_experts_per_tok", FT_INT, 1, {"num_experts_per_tok"}},
    [F_MOE_FFN] = {"moe_intermediate_size", FT_INT, 1, {"moe_intermediate_size"}},
    [F_SHARED_EXPERTS] = {"n_shared_experts", FT_INT, 0, {NULL}},
    [F_SHARED_FFN] = {"shared_expert_intermediate_size", FT_INT, 0, {NULL}},
    [F_LIN_K_HEADS] = {"linear_num_key_heads", FT_INT, 1, {"linear_num_key_heads"}},
    [F_LIN_V_HEADS] = {"linear_num_value_heads", FT_INT, 1, {"linear_num_value_heads"}},
    [F_LIN_K_DIM] = {"linear_key_head_dim", FT_INT, 1, {"linear_key_head_dim"}},
    [F_LIN_V_DIM] = {"linear_value_head_dim", FT_INT, 1, {"linear_value_head_dim"}},
    [F_LIN_CONV] = {"linear_conv_kernel_dim", FT_INT, 1, {"linear_conv_kernel_dim"}},
    [F_SSM_STATE] = {"ssm_state_size", FT_INT, 1, {"ssm_state_size"}},
    [F_SSM_CONV] = {"conv_kernel", FT_INT, 1, {"conv_kernel"}},
    [F_SSM_EXPAND] = {"expand", FT_INT, 1, {"expand"}},
    [F_SSM_DT_RANK] = {"time_step_rank", FT_INT, 1, {"time_step_rank"}},
    [F_SSM_HEADS] = {"mamba_num_heads", FT_INT, 1, {"mamba_num_heads"}},
    [F_SSM_HEAD_DIM] = {"mamba_head_dim", FT_INT, 1, {"mamba_head_dim"}},
    [F_SSM_GROUPS] = {"n_groups", FT_INT, 1, {"n_groups"}},
    [F_SSM_CONV_BIAS] = {"use_conv_bias", FT_BOOL, 0, {"use_conv_bias"}},
    [F_SSM_PROJ_BIAS] = {"mamba_proj_bias", FT_BOOL, 0, {"mamba_proj_bias"}},
    [F_FULL_EVERY] = {"full_attention_interval", FT_INT, 1, {NULL}},
    [F_MTP] = {"num_nextn_predict_layers", FT_INT, 0, {NULL}},
    [F_DTYPE] = {"torch_dtype", FT_STRING, 0, {"torch_dtype", "dtype"}},
    [F_EMBED_DIM] = {"word_embed_proj_dim", FT_INT, 1, {NULL}},
};

const struct field_info *field_info(enum field f) { return &fields[f]; }

/* Rows that share one layout keep it in one macro (designated initialisers
 * may not repeat a member, so each macro names members no row sets again). */
#define LLAMA_LAYOUT .gated_mlp = true, .norm = NORM_RMS, .norms = 2
#define GEMMA_ACT [F_ACT] = {"hidden_activation", "hidden_act"}
/* Experts of DeepSeek's naming. */
#define DEEPSEEK_MOE_KEYS [F_EXPERTS] = {"n_routed_experts"}, [F_SHARED_EXPERTS] = {"n_shared_experts"}

static const char *const encoder_decoder =
    "encoder-decoder: mpsim simulates decoder-only language models";
static const char *const encoder_only =
    "encoder-only: no autoregressive decoding, no KV cache to simulate";

const struct arch_row arch_rows[] = {
    /* ---------------- Llama and its close relatives ---------------- */
    { .model_type = "llama", .classes = {"LlamaForCausalLM"},
      .summary = "Llama 2/3: GQA, SwiGLU, RMSNorm, RoPE, untied",
      LLAMA_LAYOUT, .layers = LF_UNIFORM, .quote = QUOTE_ALL },
    { .model_type = "mistral", .classes = {"MistralForCausalLM"},
      .summary = "Mistral: Llama's layout, a sliding window on every layer",
      .def = {[F_WINDOW] = "4096"},
      LLAMA_LAYOUT, .layers = LF_ALL_SLIDING, .quote = QUOTE_ALL },
    { .model_type = "mixtral", .classes = {"MixtralForCausalLM"},
      .summary = "Mixtral: Mistral with every MLP a mixture of experts as wide as intermediate_size",
      .keys = {[F_EXPERTS] = {"num_local_experts"}, [F_MOE_FFN] = {"intermediate_size"}},
      LLAMA_LAYOUT, .layers = LF_ALL_SLIDING, .moe = MOE_ALL, .quote = QUOTE_ALL },
    { .model_type = "phi3", .classes = {"Phi3ForCausalLM"},
      .summary = "Phi-3/Phi-4: fused qkv and gate_up projections (same counts as Llama's)",
      LLAMA_LAYOUT, .layers = LF_ALL_SLIDING, .quote = QUOTE_ALL },

    /* ---------------- Qwen ---------------- */
    { .model_type = "qwen2", .classes = {"Qwen2ForCausalLM"},
      .summary = "Qwen2/2.5: Llama's layout with q, k, v biases",
      LLAMA_LAYOUT, .bias = BIAS_QKV, .layers = LF_QWEN2_WINDOW, .quote = QUOTE_ALL },
    { .model_type = "qwen2_moe", .classes = {"Qwen2MoeForCausalLM"},
      .summary = "Qwen1.5/2-MoE: routed experts plus one gated shared expert",
      .keys = {[F_EXPERTS] = {"num_experts"}, [F_SHARED_FFN] = {"shared_expert_intermediate_size"}},
      LLAMA_LAYOUT, .bias = BIAS_QKV, .layers = LF_QWEN2_WINDOW, .moe = MOE_QWEN,
      .shared_gate = true, .quote = QUOTE_ALL },
    { .model_type = "qwen3", .classes = {"Qwen3ForCausalLM"},
      .summary = "Qwen3: Llama's layout with per-head q/k RMSNorm, no biases",
      LLAMA_LAYOUT, .qk_norm = QK_HEAD_DIM, .layers = LF_QWEN2_WINDOW, .quote = QUOTE_ALL },
    { .model_type = "qwen3_moe", .classes = {"Qwen3MoeForCausalLM"},
      .summary = "Qwen3-MoE: Qwen3 attention, routed experts, no shared expert",
      .keys = {[F_EXPERTS] = {"num_experts"}},
      LLAMA_LAYOUT, .qk_norm = QK_HEAD_DIM, .layers = LF_QWEN2_WINDOW, .moe = MOE_QWEN,
      .quote = QUOTE_ALL },
    { .model_type = "qwen3_next", .classes = {"Qwen3NextForCausalLM"},
      .summary = "Qwen3-Next: Gated DeltaNet with gated full attention every "
                 "full_attention_interval-th layer, routed + gated shared experts",
      .keys = {[F_EXPERTS] = {"num_experts"}, [F_SHARED_FFN] = {"shared_expert_intermediate_size"},
               [F_FULL_EVERY] = {"full_attention_interval"}},
      .def = {[F_FULL_EVERY] = "4"},
      LLAMA_LAYOUT, .qk_norm = QK_HEAD_DIM, .attn_gate = true, .linear = MIXER_GATED_DELTANET,
      .other = MIXER_GATED_DELTANET, .layers = LF_EVERY_NTH, .moe = MOE_QWEN,
      /* "3B activated" matches no convention (3.87B with the embedding,
       * 3.25B in the decoders): QUOTE_UNKNOWN. */
      .shared_gate = true, .quote = QUOTE_UNKNOWN },
    { .model_type = "qwen2_vl", .classes = {"Qwen2VLForConditionalGeneration"},
      .summary = "Qwen2-VL: a Qwen2 language model (top level or text_config) beside a "
                 "vision tower, which is not simulated",
      .text_key = "text_config", .text_row = "qwen2" },
    { .model_type = "qwen2_5_vl", .classes = {"Qwen2_5_VLForConditionalGeneration"},
      .summary = "Qwen2.5-VL: as Qwen2-VL",
      .text_key = "text_config", .text_row = "qwen2" },

    /* ---------------- Gemma ---------------- */
    { .model_type = "gemma", .classes = {"GemmaForCausalLM"},
      .summary = "Gemma: GeGLU (gated whatever the activation's name), tied, head_dim 256",
      .keys = {GEMMA_ACT}, .def = {[F_TIED] = "true", [F_HEAD_DIM] = "256",
                                   [F_ACT] = "gelu_pytorch_tanh"},
      LLAMA_LAYOUT, .layers = LF_UNIFORM, .quote = QUOTE_ALL },
    { .model_type = "gemma2", .classes = {"Gemma2ForCausalLM"},
      .summary = "Gemma 2: sandwich norms (4 per layer), sliding and global layers alternating",
      .keys = {GEMMA_ACT},
      .def = {[F_TIED] = "true", [F_HEAD_DIM] = "256", [F_WINDOW] = "4096", [F_FULL_EVERY] = "2",
              [F_ACT] = "gelu_pytorch_tanh"},
      .gated_mlp = true, .norm = NORM_RMS, .norms = 4, .other = MIXER_SLIDING,
      .layers = LF_EVERY_NTH, .quote = QUOTE_ALL },
    { .model_type = "gemma3_text", .classes = {"Gemma3ForCausalLM"},
      .summary = "Gemma 3 text: Gemma 2's layout, q/k norms, every 6th layer global",
      .keys = {GEMMA_ACT, [F_FULL_EVERY] = {"sliding_window_pattern", "_sliding_window_pattern"}},
      .def = {[F_TIED] = "true", [F_HEAD_DIM] = "256", [F_WINDOW] = "4096", [F_FULL_EVERY] = "6",
              [F_VOCAB] = "262208", [F_ACT] = "gelu_pytorch_tanh"},
      .gated_mlp = true, .norm = NORM_RMS, .norms = 4, .qk_norm = QK_HEAD_DIM,
      .other = MIXER_SLIDING, .layers = LF_EVERY_NTH, .quote = QUOTE_ALL },
    { .model_type = "gemma3", .classes = {"Gemma3ForConditionalGeneration"},
      .summary = "Gemma 3 (4B and up): the language model under text_config; the SigLIP "
                 "vision tower is not simulated",
      .text_key = "text_config", .text_row = "gemma3_text" },

    /* ---------------- Cohere ---------------- */
    { .model_type = "cohere", .classes = {"CohereForCausalLM"},
      .summary = "Command R: parallel attention and MLP after one LayerNorm (no bias), tied",
      .keys = {[F_QK_NORM] = {"use_qk_norm"}}, .def = {[F_TIED] = "true"},
      .gated_mlp = true, .norm = NORM_LAYER_NO_BIAS, .norms = 1, .qk_norm = QK_PER_HEAD,
      .layers = LF_UNIFORM, .quote = QUOTE_ALL },
    { .model_type = "cohere2", .classes = {"Cohere2ForCausalLM"},
      .summary = "Command R7B / A: Cohere's layout, three sliding layers to one global",
      .keys = {[F_FULL_EVERY] = {"sliding_window_pattern"}},
      .def = {[F_TIED] = "true", [F_WINDOW] = "4096", [F_FULL_EVERY] = "4"},
      .gated_mlp = true, .norm = NORM_LAYER_NO_BIAS, .norms = 1, .other = MIXER_SLIDING,
      .layers = LF_EVERY_NTH, .quote = QUOTE_ALL },

    /* ---------------- GPT-style: LayerNorm, biases, plain MLP ---------------- */
    { .model_type = "gpt2", .classes = {"GPT2LMHeadModel", "GPT2Model", "MegatronGPTModel"},
      .summary = "GPT-2 / Megatron GPT: learned positions, biases everywhere, GeLU MLP of 4h, tied",
      .keys = {[F_HIDDEN] = {"n_embd", "hidden_size"}, [F_LAYERS] = {"n_layer", "num_hidden_layers"},
               [F_HEADS] = {"n_head", "num_attention_heads"}, [F_FFN] = {"n_inner"},
               [F_POSITIONS] = {"n_positions", "max_position_embeddings"},
               [F_ACT] = {"activation_function"}},
      .def = {[F_TIED] = "true", [F_ACT] = "gelu_new"}, .ffn_mult = 4,
      .norm = NORM_LAYER, .norms = 2, .bias = BIAS_QKV | BIAS_O | BIAS_MLP, .pos = POS_LEARNED,
      .layers = LF_UNIFORM, .quote = QUOTE_ALL },
    { .model_type = "gpt_neox", .classes = {"GPTNeoXForCausalLM"},
      .summary = "GPT-NeoX / Pythia: LayerNorm, biases everywhere, GeLU MLP, untied",
      .def = {[F_ATTN_BIAS] = "true", [F_ACT] = "gelu"},
      .norm = NORM_LAYER, .norms = 2, .bias = BIAS_MLP, .layers = LF_UNIFORM, .quote = QUOTE_ALL },
    { .model_type = "starcoder2", .classes = {"Starcoder2ForCausalLM"},
      .summary = "StarCoder2: LayerNorm, biases (use_bias), GeLU MLP, tied, sliding window",
      .keys = {[F_ATTN_BIAS] = {"use_bias"}, [F_MLP_BIAS] = {"use_bias"}},
      .def = {[F_TIED] = "true", [F_ATTN_BIAS] = "true", [F_MLP_BIAS] = "true",
              [F_ACT] = "gelu_pytorch_tanh"},
      .norm = NORM_LAYER, .norms = 2, .layers = LF_ALL_SLIDING, .quote = QUOTE_ALL },
    { .model_type = "opt", .classes = {"OPTForCausalLM"},
      .summary = "OPT: learned positions (+2 rows), biases, ReLU MLP of ffn_dim, tied",
      .keys = {[F_FFN] = {"ffn_dim"}, [F_ATTN_BIAS] = {"enable_bias"}, [F_MLP_BIAS] = {"enable_bias"},
               [F_ACT] = {"activation_function"}, [F_EMBED_DIM] = {"word_embed_proj_dim"}},
      .def = {[F_TIED] = "true", [F_ATTN_BIAS] = "true", [F_MLP_BIAS] = "true", [F_ACT] = "relu"},
      .norm = NORM_LAYER, .norms = 2, .pos = POS_LEARNED, .pos_offset = 2,
      .layers = LF_UNIFORM, .quote = QUOTE_ALL },
    { .model_type = "bloom", .classes = {"BloomForCausalLM"},
      .summary = "BLOOM: ALiBi (no position table), a LayerNorm after the embedding, biases, GeLU 4h, tied",
      .keys = {[F_HIDDEN] = {"n_embed", "hidden_size"}, [F_LAYERS] = {"n_layer", "num_hidden_layers"},
               [F_HEADS] = {"n_head", "num_attention_heads"}, [F_FFN] = {"n_inner"}},
      .def = {[F_TIED] = "true", [F_ACT] = "gelu"}, .ffn_mult = 4,
      .norm = NORM_LAYER, .norms = 2, .bias = BIAS_QKV | BIAS_O | BIAS_MLP, .embed_norm = true,
      .layers = LF_UNIFORM, .quote = QUOTE_ALL },
    { .model_type = "gpt_oss", .classes = {"GptOssForCausalLM"},
      .summary = "gpt-oss: GQA with attention sinks, sliding/full layer_types, experts with biases",
      .keys = {[F_EXPERTS] = {"num_local_experts"},
               [F_EXPERTS_PER_TOK] = {"num_experts_per_tok", "experts_per_token"},
               [F_MOE_FFN] = {"intermediate_size"}},
      LLAMA_LAYOUT, .bias = BIAS_EXPERTS | BIAS_ROUTER, .attn_sinks = true,
      .layers = LF_UNIFORM, .moe = MOE_ALL, .quote = QUOTE_NO_EMBEDDING },

    /* ---------------- DeepSeek and Kimi ---------------- */
    { .model_type = "deepseek_v2", .classes = {"DeepseekV2ForCausalLM"},
      .summary = "DeepSeek-V2: MLA, first_k_dense_replace dense layers, shared + routed experts",
      .keys = {DEEPSEEK_MOE_KEYS},
      LLAMA_LAYOUT, .mla = true, .layers = LF_UNIFORM, .moe = MOE_DEEPSEEK,
      .quote = QUOTE_NO_EMBEDDING },
    { .model_type = "deepseek_v3", .classes = {"DeepseekV3ForCausalLM"},
      .summary = "DeepSeek-V3: V2's layout, a router score-correction bias, MTP modules",
      .keys = {DEEPSEEK_MOE_KEYS, [F_MTP] = {"num_nextn_predict_layers"}},
      LLAMA_LAYOUT, .mla = true, .layers = LF_UNIFORM, .moe = MOE_DEEPSEEK, .score_bias = true,
      .quote = QUOTE_NO_EMBEDDING },
    { .model_type = "kimi_k2",
      .summary = "Kimi K2: DeepSeek-V3's layout (64 heads, 384 experts, one dense layer)",
      .keys = {DEEPSEEK_MOE_KEYS, [F_MTP] = {"num_nextn_predict_layers"}},
      LLAMA_LAYOUT, .mla = true, .layers = LF_UNIFORM, .moe = MOE_DEEPSEEK, .score_bias = true,
      .quote = QUOTE_NO_EMBEDDING },
    { .model_type = "kimi_linear", .classes = {"KimiLinearForCausalLM"},
      .summary = "Kimi-Linear: Kimi Delta Attention with MLA every few layers (linear_attn_config)",
      .keys = {[F_EXPERTS] = {"num_experts", "n_routed_experts"},
               [F_EXPERTS_PER_TOK] = {"num_experts_per_token", "num_experts_per_tok"},
               [F_SHARED_EXPERTS] = {"num_shared_experts", "n_shared_experts"},
               [F_LIN_K_HEADS] = {"linear_attn_config.num_heads"},
               [F_LIN_V_HEADS] = {"linear_attn_config.num_heads"},
               [F_LIN_K_DIM] = {"linear_attn_config.head_dim"},
               [F_LIN_V_DIM] = {"linear_attn_config.head_dim"},
               [F_LIN_CONV] = {"linear_attn_config.short_conv_kernel_size"}},
      .def = {[F_LIN_CONV] = "4"},
      LLAMA_LAYOUT, .mla = true, .linear = MIXER_KDA, .layers = LF_KIMI, .moe = MOE_DEEPSEEK,
      .quote = QUOTE_NO_EMBEDDING },
    { .model_type = "kimi_k3",
      .summary = "Kimi K3 of the 59-wafer article (cases.md section 1): not a Hub family; its "
                 "linear layers are assumed to carry full attention's projections",
      .keys = {DEEPSEEK_MOE_KEYS, [F_LIN_K_HEADS] = {"linear_attn_config.num_heads"},
               [F_LIN_K_DIM] = {"linear_attn_config.head_dim"}},
      LLAMA_LAYOUT, .linear = MIXER_LINEAR, .layers = LF_KIMI, .moe = MOE_DEEPSEEK },

    /* ---------------- MiniMax ---------------- */
    { .model_type = "minimax", .classes = {"MiniMaxForCausalLM"},
      .summary = "MiniMax-Text-01 in transformers: lightning attention with softmax layers "
                 "(layer_types), every MLP a mixture of experts",
      .keys = {[F_EXPERTS] = {"num_local_experts"}, [F_MOE_FFN] = {"intermediate_size"},
               [F_SHARED_FFN] = {"shared_intermediate_size"}},
      LLAMA_LAYOUT, .linear = MIXER_LIGHTNING, .layers = LF_UNIFORM, .moe = MOE_ALL,
      .quote = QUOTE_DECODERS },
    { .model_type = "minimax_text_01", .classes = {"MiniMaxText01ForCausalLM"},
      .summary = "MiniMax-Text-01 as published (remote code): attn_type_list 0 lightning, 1 softmax",
      .keys = {[F_EXPERTS] = {"num_local_experts"}, [F_MOE_FFN] = {"intermediate_size"},
               [F_SHARED_FFN] = {"shared_intermediate_size"}},
      LLAMA_LAYOUT, .linear = MIXER_LIGHTNING, .layers = LF_ATTN_TYPE_LIST, .moe = MOE_ALL,
      .quote = QUOTE_DECODERS },
    { .model_type = "minimax_m1", .classes = {"MiniMaxM1ForCausalLM"},
      .summary = "MiniMax-M1: MiniMax-Text-01's layout",
      .keys = {[F_EXPERTS] = {"num_local_experts"}, [F_MOE_FFN] = {"intermediate_size"},
               [F_SHARED_FFN] = {"shared_intermediate_size"}},
      LLAMA_LAYOUT, .linear = MIXER_LIGHTNING, .layers = LF_ATTN_TYPE_LIST, .moe = MOE_ALL,
      .quote = QUOTE_DECODERS },

    /* ---------------- State-space hybrids ---------------- */
    { .model_type = "nemotron_h", .classes = {"NemotronHForCausalLM"},
      .summary = "Nemotron-H: one block per layer (Mamba-2, attention, MLP or MoE) by "
                 "hybrid_override_pattern, squared-ReLU MLP",
      .keys = {[F_HEAD_DIM] = {"head_dim", "attention_head_dim"}, [F_ACT] = {"mlp_hidden_act"},
               [F_SSM_PROJ_BIAS] = {"mamba_proj_bias", "use_bias"},
               [F_EXPERTS] = {"n_routed_experts"},
               [F_SHARED_FFN] = {"moe_shared_expert_intermediate_size"}},
      .def = {[F_ACT] = "relu2", [F_SSM_CONV_BIAS] = "true"},
      .norm = NORM_RMS, .norms = 1, .layers = LF_HYBRID_PATTERN, .moe = MOE_PATTERN },
    { .model_type = "jamba", .classes = {"JambaForCausalLM"},
      .summary = "Jamba: Mamba-1 layers with attention every attn_layer_period-th, MoE every "
                 "expert_layer_period-th",
      .keys = {[F_EXPERTS] = {"num_experts"}, [F_MOE_FFN] = {"intermediate_size"},
               [F_SSM_STATE] = {"mamba_d_state"}, [F_SSM_CONV] = {"mamba_d_conv"},
               [F_SSM_EXPAND] = {"mamba_expand"}, [F_SSM_DT_RANK] = {"mamba_dt_rank"},
               [F_SSM_CONV_BIAS] = {"mamba_conv_bias"}},
      .def = {[F_SSM_STATE] = "16", [F_SSM_CONV] = "4", [F_SSM_EXPAND] = "2",
              [F_SSM_DT_RANK] = "auto", [F_SSM_CONV_BIAS] = "true"},
      LLAMA_LAYOUT, .layers = LF_JAMBA, .moe = MOE_JAMBA, .mamba_inner_norms = true },

    /* ---------------- Llama 4 and other multimodal wrappers ---------------- */
    { .model_type = "llama4_text", .classes = {"Llama4ForCausalLM"},
      .summary = "Llama 4 text: chunked attention on RoPE layers, full on NoPE ones, routed + "
                 "one shared expert",
      .keys = {[F_EXPERTS] = {"num_local_experts"}, [F_MOE_FFN] = {"intermediate_size"},
               [F_FFN] = {"intermediate_size_mlp"}, [F_WINDOW] = {"attention_chunk_size"},
               [F_QK_NORM] = {"use_qk_norm"}},
      .def = {[F_WINDOW] = "8192", [F_SHARED_EXPERTS] = "1"},
      LLAMA_LAYOUT, .qk_norm = QK_L2, .layers = LF_LLAMA4, .moe = MOE_LLAMA4, .quote = QUOTE_ALL },
    { .model_type = "llama4", .classes = {"Llama4ForConditionalGeneration"},
      .summary = "Llama 4: the language model under text_config; the vision tower is not simulated",
      .text_key = "text_config", .text_row = "llama4_text" },
    { .model_type = "mistral3", .classes = {"Mistral3ForConditionalGeneration"},
      .summary = "Mistral Small 3.1: a Mistral language model under text_config",
      .text_key = "text_config" },
    { .model_type = "llava", .classes = {"LlavaForConditionalGeneration"},
      .summary = "LLaVA: the language model under text_config (read by its own model_type)",
      .text_key = "text_config" },

    /* ---------------- Refused ---------------- */
    { .model_type = "t5", .refused = "encoder-decoder (T5): mpsim simulates decoder-only "
                                     "language models" },
    { .model_type = "mt5", .refused = "encoder-decoder (T5): mpsim simulates decoder-only "
                                      "language models" },
    { .model_type = "umt5", .refused = "encoder-decoder (T5): mpsim simulates decoder-only "
                                       "language models" },
    { .model_type = "bart", .refused = encoder_decoder },
    { .model_type = "mbart", .refused = encoder_decoder },
    { .model_type = "pegasus", .refused = encoder_decoder },
    { .model_type = "marian", .refused = encoder_decoder },
    { .model_type = "whisper", .refused = encoder_decoder },
    { .model_type = "bert", .refused = encoder_only },
    { .model_type = "roberta", .refused = encoder_only },
    { .model_type = "xlm-roberta", .refused = encoder_only },
    { .model_type = "deberta-v2", .refused = encoder_only },
    { .model_type = "modernbert", .refused = encoder_only },
    { .model_type = "falcon", .refused = "Falcon: four layouts under one model_type "
      "(multi_query, new_decoder_architecture, parallel_attn, alibi) are not read yet" },
    { .model_type = "RefinedWeb", .refused = "old Falcon (RefinedWeb): see falcon" },
    { .model_type = "RefinedWebModel", .refused = "old Falcon (RefinedWebModel): see falcon" },
    { .model_type = "mamba", .refused = "pure Mamba models are not read yet (Mamba layers "
      "are, in jamba and nemotron_h)" },
    { .model_type = "mamba2", .refused = "pure Mamba-2 models are not read yet (Mamba-2 "
      "layers are, in nemotron_h)" },
    { .model_type = "falcon_mamba", .refused = "pure Mamba models are not read yet (Mamba "
      "layers are, in jamba and nemotron_h)" },
    { .model_type = "rwkv", .refused = "RWKV's time-mix recurrence is not a layer kind here" },
    { .model_type = NULL },
};

const struct arch_row *arch_find(const char *model_type)
{
    for (const struct arch_row *r = arch_rows; r->model_type; r++)
        if (strcmp(r->model_type, model_type) == 0) return r;
    return NULL;
}

const struct arch_row *arch_find_class(const char *cls)
{
    for (const struct arch_row *r = arch_rows; r->model_type; r++)
        for (int i = 0; i < 3 && r->classes[i]; i++)
            if (strcmp(r->classes[i], cls) == 0) return r;
    return NULL;
}

void arch_list_read(char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const struct arch_row *r = arch_rows; r->model_type && len + 1 < size; r++) {
        if (r->refused) continue;
        int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", r->model_type);
        if (n < 0) break;
        len += (size_t)n;
    }
}
