/* layer_kinds.c — the facts of each token-mixer kind, in one table: its
 * parameters, the K/V it keeps per token or the state it keeps per request,
 * the FLOPs of its core (the part with no weights) and what a forward
 * stashes. Reader and cost model both ask here, so a kind is described once.
 *
 * Notation: h hidden size; H heads, K KV heads, d head_dim (attention);
 * the linear-attention sizes of model.lin; the SSM sizes of model.ssm.
 * Parameter layouts follow the transformers module of the family named in
 * each row's `source`; FLOP counts are the recurrent form of each kernel
 * (chunked kernels do the same arithmetic in another order), as the simplest
 * faithful count until the kernel model (issue 14) prices them kernel by
 * kernel. */
#include "model_impl.h"

#include <stddef.h>

/* ------------------------------------------------------------------ */
/* Softmax attention: MHA / GQA / MQA, full, sliding or chunked. */

static double attention_params(const struct model *m, double *matmul)
{
    double h = m->hidden, q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    /* Qwen3-Next's q_proj also emits the sigmoid output gate: 2Hd wide. */
    double q_out = m->attn_gate ? 2 * q : q;
    *matmul = h * q_out + 2 * h * kv + q * h;
    double other = 0;
    if (m->bias & BIAS_QKV) other += q_out + 2 * kv;
    if (m->bias & BIAS_O) other += h;
    other += m->qk_norm_params;
    if (m->attn_sinks) other += m->heads; /* gpt-oss: one sink logit per head */
    return *matmul + other;
}

static double attention_kv(const struct model *m) { return 2.0 * m->kv_heads * m->head_dim; }

static void attention_core(const struct model *m, double *pair, double *tok)
{
    /* QK^T and AV: 2d each per head and pair. */
    *pair = 4.0 * m->heads * m->head_dim;
    *tok = 0;
}

static double attention_act(const struct model *m)
{
    /* Q, K, V and the attention output (and the output gate's values). */
    double q = (double)m->heads * m->head_dim;
    return 2 * q + 2.0 * m->kv_heads * m->head_dim + (m->attn_gate ? q : 0);
}

/* ------------------------------------------------------------------ */
/* Multi-head latent attention (DeepSeek-V2/V3, modeling_deepseek.py). */

static double mla_params(const struct model *m, double *matmul)
{
    double h = m->hidden, H = m->heads, qk = (double)m->qk_nope_head_dim + m->qk_rope_head_dim;
    double mm = 0, other = 0;
    if (m->q_lora_rank) {
        mm += h * m->q_lora_rank + (double)m->q_lora_rank * H * qk;
        other += m->q_lora_rank; /* q_a_layernorm */
    } else {
        mm += h * H * qk;
    }
    mm += h * ((double)m->kv_lora_rank + m->qk_rope_head_dim) +
          (double)m->kv_lora_rank * H * ((double)m->qk_nope_head_dim + m->v_head_dim);
    other += m->kv_lora_rank; /* kv_a_layernorm */
    mm += H * m->v_head_dim * h;
    *matmul = mm;
    return mm + other;
}

/* The compressed latent and the shared rope key, for all heads at once. */
static double mla_kv(const struct model *m) { return (double)m->kv_lora_rank + m->qk_rope_head_dim; }

static void mla_core(const struct model *m, double *pair, double *tok)
{
    *pair = 2.0 * m->heads * ((double)m->qk_nope_head_dim + m->qk_rope_head_dim) +
            2.0 * m->heads * m->v_head_dim;
    *tok = 0;
}

static double mla_act(const struct model *m)
{
    return (double)m->heads * (2.0 * m->head_dim + 2.0 * m->v_head_dim);
}

/* ------------------------------------------------------------------ */
/* Linear attention of unpublished design (kimi-k3, models/README.md): full
 * attention's q, k, v, o and a heads x d x d state per request. */

static double linear_params(const struct model *m, double *matmul)
{
    double h = m->hidden, q = (double)m->heads * m->head_dim, kv = (double)m->kv_heads * m->head_dim;
    *matmul = 2 * h * q + 2 * h * kv;
    double other = 0;
    if (m->bias & BIAS_QKV) other += q + 2 * kv;
    if (m->bias & BIAS_O) other += h;
    return *matmul + other;
}

static double linear_state(const struct model *m, double *conv)
{
    *conv = 0;
    return (double)m->lin.k_heads * m->lin.k_dim * m->lin.k_dim;
}

static void linear_core(const struct model *m, double *pair, double *tok)
{
    /* Per head and token: the state update k v^T (2d^2) and the read q S (2d^2). */
    *pair = 0;
    *tok = 4.0 * m->lin.k_heads * m->lin.k_dim * m->lin.k_dim;
}

/* ------------------------------------------------------------------ */
/* Gated DeltaNet (Qwen3-Next, modeling_qwen3_next.py Qwen3NextGatedDeltaNet):
 * in_proj_qkvz h -> 2 nk dk + 2 nv dv; in_proj_ba h -> 2 nv; a depthwise
 * conv1d over q, k, v (2 nk dk + nv dv channels, no bias); dt_bias and A_log
 * (nv each); a gated RMSNorm over dv; out_proj nv dv -> h. */

static double gdn_conv_dim(const struct model *m)
{
    return 2.0 * m->lin.k_heads * m->lin.k_dim + (double)m->lin.v_heads * m->lin.v_dim;
}

static double gdn_params(const struct model *m, double *matmul)
{
    double h = m->hidden, nk = m->lin.k_heads, nv = m->lin.v_heads;
    double dk = m->lin.k_dim, dv = m->lin.v_dim;
    *matmul = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + nv * dv * h;
    return *matmul + gdn_conv_dim(m) * m->lin.conv + 2 * nv + dv;
}

static double gdn_state(const struct model *m, double *conv)
{
    /* One dk x dv state per value head, and the conv's last K - 1 inputs. */
    *conv = gdn_conv_dim(m) * (m->lin.conv - 1);
    return (double)m->lin.v_heads * m->lin.k_dim * m->lin.v_dim + *conv;
}

static void gdn_core(const struct model *m, double *pair, double *tok)
{
    /* Gated delta rule, S_t = a_t S_{t-1} (I - b_t k_t k_t^T) + b_t v_t k_t^T,
     * o_t = S_t q_t (Yang et al. 2024): S k, the rank-1 update and S q are
     * 2 dk dv each per value head; the conv 2 K per channel. */
    *pair = 0;
    *tok = 6.0 * m->lin.v_heads * m->lin.k_dim * m->lin.v_dim + 2 * gdn_conv_dim(m) * m->lin.conv;
}

static double gdn_act(const struct model *m)
{
    double nv = m->lin.v_heads, dv = m->lin.v_dim;
    /* qkvz and ba projections, conv output, core output, gated norm output. */
    return 2.0 * m->lin.k_heads * m->lin.k_dim + 2 * nv * dv + 2 * nv + gdn_conv_dim(m) +
           2 * nv * dv;
}

/* ------------------------------------------------------------------ */
/* Kimi Delta Attention (Kimi-Linear; fla-org's KimiDeltaAttention as the
 * authors of this table know it — an assumption until checked against the
 * published modeling code): q, k, v projections h -> H d each with a
 * depthwise short conv on each (no bias); the channel-wise decay from a
 * low-rank f_proj (h -> d -> H d); beta from b_proj (h -> H); A_log (H) and
 * dt_bias (H d); a low-rank output gate g_proj (h -> d -> H d, biased); a
 * gated RMSNorm over d; o_proj H d -> h. */

static double kda_params(const struct model *m, double *matmul)
{
    double h = m->hidden, H = m->lin.k_heads, d = m->lin.k_dim, w = H * d;
    *matmul = 3 * h * w + (h * d + d * w) + h * H + (h * d + d * w) + w * h;
    double other = 3 * w * m->lin.conv + H + w + w /* g_proj bias */ + d;
    return *matmul + other;
}

static double kda_state(const struct model *m, double *conv)
{
    double w = (double)m->lin.k_heads * m->lin.k_dim;
    *conv = 3 * w * (m->lin.conv - 1);
    return w * m->lin.k_dim + *conv;
}

static void kda_core(const struct model *m, double *pair, double *tok)
{
    double H = m->lin.k_heads, d = m->lin.k_dim;
    *pair = 0;
    *tok = 6 * H * d * d + 2 * 3 * H * d * m->lin.conv; /* the delta rule as in GDN */
}

static double kda_act(const struct model *m)
{
    /* q, k, v; their conv outputs; decay and output gates; core output. */
    return 9.0 * m->lin.k_heads * m->lin.k_dim;
}

/* ------------------------------------------------------------------ */
/* Lightning attention (MiniMax-Text-01, MiniMaxText01LightningAttention):
 * qkv_proj h -> 3 H d, output_gate h -> H d, out_proj H d -> h, an RMSNorm
 * over H d; a d x d state per head. */

static double lightning_params(const struct model *m, double *matmul)
{
    double h = m->hidden, w = (double)m->heads * m->head_dim;
    *matmul = h * 3 * w + h * w + w * h;
    return *matmul + w;
}

static double lightning_state(const struct model *m, double *conv)
{
    *conv = 0;
    return (double)m->heads * m->head_dim * m->head_dim;
}

static void lightning_core(const struct model *m, double *pair, double *tok)
{
    *pair = 0;
    *tok = 4.0 * m->heads * m->head_dim * m->head_dim; /* k v^T and q S per head */
}

static double lightning_act(const struct model *m)
{
    return 6.0 * m->heads * m->head_dim; /* q, k, v, gate, core output, norm output */
}

/* ------------------------------------------------------------------ */
/* Mamba-1 (Jamba, modeling_jamba.py JambaMambaMixer), inner width E = expand
 * h, state N, dt rank R, conv kernel C: in_proj h -> 2E; a depthwise conv1d
 * (E C, + E bias); x_proj E -> R + 2N; dt_proj R -> E with bias; A_log E x N;
 * D (E); out_proj E -> h; Jamba's RMSNorms on dt, B and C (R + 2N). */

static double mamba_params(const struct model *m, double *matmul)
{
    double h = m->hidden, E = m->ssm.inner, N = m->ssm.state, R = m->ssm.dt_rank;
    *matmul = h * 2 * E + E * (R + 2 * N) + R * E + E * h;
    double other = E * m->ssm.conv + (m->ssm.conv_bias ? E : 0) + E /* dt_proj bias */ +
                   E * N + E + (m->ssm.proj_bias ? 2 * E + h : 0);
    if (m->family && m->family->mamba_inner_norms) other += R + 2 * N;
    return *matmul + other;
}

static double mamba_state(const struct model *m, double *conv)
{
    *conv = (double)m->ssm.inner * (m->ssm.conv - 1);
    return (double)m->ssm.inner * m->ssm.state + *conv;
}

static void mamba_core(const struct model *m, double *pair, double *tok)
{
    /* The selective scan, 9 E N per token as mamba_ssm's flop count writes
     * it (discretise, update, read), + E each for the D skip and the z gate;
     * the conv 2 C per channel. */
    double E = m->ssm.inner;
    *pair = 0;
    *tok = 9 * E * m->ssm.state + 2 * E + 2 * E * m->ssm.conv;
}

static double mamba_act(const struct model *m)
{
    double E = m->ssm.inner;
    /* in_proj (x, z), conv output, x_proj (dt, B, C), dt, scan output. */
    return 5 * E + m->ssm.dt_rank + 2.0 * m->ssm.state;
}

/* ------------------------------------------------------------------ */
/* Mamba-2 (Nemotron-H, modeling_nemotron_h.py NemotronHMamba2Mixer), heads
 * nh x head_dim p = inner E, groups G, state N, conv C: in_proj h -> 2E +
 * 2GN + nh; a depthwise conv1d over E + 2GN channels (+ bias); dt_bias, A_log,
 * D (nh each); a gated RMSNorm over E; out_proj E -> h. */

static double mamba2_conv_dim(const struct model *m)
{
    return (double)m->ssm.inner + 2.0 * m->ssm.groups * m->ssm.state;
}

static double mamba2_params(const struct model *m, double *matmul)
{
    double h = m->hidden, E = m->ssm.inner, nh = m->ssm.heads;
    double in = 2 * E + 2.0 * m->ssm.groups * m->ssm.state + nh;
    *matmul = h * in + E * h;
    double other = mamba2_conv_dim(m) * m->ssm.conv + (m->ssm.conv_bias ? mamba2_conv_dim(m) : 0) +
                   3 * nh + E + (m->ssm.proj_bias ? in + h : 0);
    return *matmul + other;
}

static double mamba2_state(const struct model *m, double *conv)
{
    *conv = mamba2_conv_dim(m) * (m->ssm.conv - 1);
    return (double)m->ssm.heads * m->ssm.head_dim * m->ssm.state + *conv;
}

static void mamba2_core(const struct model *m, double *pair, double *tok)
{
    /* Per head and token, on its p x N state: decay and add (2 p N), the
     * outer product x B^T (2 p N), the read h C (2 p N); the conv 2 C per
     * channel. */
    *pair = 0;
    *tok = 6.0 * m->ssm.inner * m->ssm.state + 2 * mamba2_conv_dim(m) * m->ssm.conv;
}

static double mamba2_act(const struct model *m)
{
    double E = m->ssm.inner;
    return (2 * E + 2.0 * m->ssm.groups * m->ssm.state + m->ssm.heads) + mamba2_conv_dim(m) +
           2 * E; /* in_proj, conv output, scan output, gated norm output */
}

/* ------------------------------------------------------------------ */

static double no_params(const struct model *m, double *matmul) { (void)m; *matmul = 0; return 0; }
static double no_kv(const struct model *m) { (void)m; return 0; }
static double no_state(const struct model *m, double *conv) { (void)m; *conv = 0; return 0; }
static void no_core(const struct model *m, double *pair, double *tok) { (void)m; *pair = *tok = 0; }
static double no_act(const struct model *m) { (void)m; return 0; }

struct kind {
    struct mixer_info info;
    double (*params)(const struct model *, double *matmul);
    double (*kv)(const struct model *);
    double (*state)(const struct model *, double *conv);
    void (*core)(const struct model *, double *pair, double *tok);
    double (*act)(const struct model *);
};

static const struct kind kinds[N_MIXER_KINDS] = {
    [MIXER_NONE] = {{"none", '-', ATTN_NONE, false, "no mixer (Nemotron-H MLP-only layer)"},
                    no_params, no_kv, no_state, no_core, no_act},
    [MIXER_ATTENTION] = {{"attention", 'A', ATTN_FULL, false, "q, k, v, o projections (Llama)"},
                         attention_params, attention_kv, no_state, attention_core, attention_act},
    [MIXER_MLA] = {{"mla", 'A', ATTN_MLA, false, "DeepSeek-V2 paper section 2.1; modeling_deepseek.py"},
                   mla_params, mla_kv, no_state, mla_core, mla_act},
    [MIXER_SLIDING] = {{"sliding", 'S', ATTN_FULL, true, "as attention; KV for the last window tokens"},
                       attention_params, attention_kv, no_state, attention_core, attention_act},
    [MIXER_CHUNKED] = {{"chunked", 'C', ATTN_FULL, true, "as attention, within chunks (Llama 4)"},
                       attention_params, attention_kv, no_state, attention_core, attention_act},
    [MIXER_LINEAR] = {{"linear", 'L', ATTN_LINEAR, false,
                       "assumed: attention's projections, heads x d x d state (kimi-k3)"},
                      linear_params, no_kv, linear_state, linear_core, attention_act},
    [MIXER_GATED_DELTANET] = {{"gated_deltanet", 'G', ATTN_LINEAR, false,
                               "modeling_qwen3_next.py Qwen3NextGatedDeltaNet"},
                              gdn_params, no_kv, gdn_state, gdn_core, gdn_act},
    [MIXER_KDA] = {{"kda", 'K', ATTN_LINEAR, false,
                    "fla-org KimiDeltaAttention (as known; an assumption)"},
                   kda_params, no_kv, kda_state, kda_core, kda_act},
    [MIXER_LIGHTNING] = {{"lightning", 'N', ATTN_LINEAR, false,
                          "MiniMax-Text-01 MiniMaxText01LightningAttention"},
                         lightning_params, no_kv, lightning_state, lightning_core, lightning_act},
    [MIXER_MAMBA] = {{"mamba", 'M', ATTN_LINEAR, false, "modeling_jamba.py JambaMambaMixer"},
                     mamba_params, no_kv, mamba_state, mamba_core, mamba_act},
    [MIXER_MAMBA2] = {{"mamba2", 'M', ATTN_LINEAR, false,
                       "modeling_nemotron_h.py NemotronHMamba2Mixer"},
                      mamba2_params, no_kv, mamba2_state, mamba2_core, mamba2_act},
};

const struct mixer_info *mixer_info(enum mixer_kind k) { return &kinds[k].info; }

const char *mlp_kind_name(enum mlp_kind k)
{
    static const char *const names[N_MLP_KINDS] = {"none", "dense", "moe"};
    return names[k];
}

double kind_params(const struct model *m, enum mixer_kind k, double *matmul)
{
    return kinds[k].params(m, matmul);
}

double kind_kv_elems(const struct model *m, enum mixer_kind k) { return kinds[k].kv(m); }

double kind_state_elems(const struct model *m, enum mixer_kind k, double *conv)
{
    return kinds[k].state(m, conv);
}

void kind_core_flops(const struct model *m, enum mixer_kind k, double *per_pair, double *per_token)
{
    kinds[k].core(m, per_pair, per_token);
}

double kind_act_elems(const struct model *m, enum mixer_kind k) { return kinds[k].act(m); }
