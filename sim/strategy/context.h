/* context.h — context parallelism (parallel.cp): every sequence split over
 * cp ranks, and the attention that needs the keys and values of the whole
 * sequence, run the three ways long-context training stacks run it
 * (docs/context_parallel.md has the formulas and a worked example):
 *
 *  ring    (Megatron-Core CP over TransformerEngine's K/V P2P; Liu et al.
 *          2023, "Ring Attention"): the sequence is cut into 2·cp chunks and
 *          rank i holds chunks i and 2cp − 1 − i, so every rank gets the same
 *          share of the causal mask. K/V blocks travel the ring in cp − 1
 *          steps; each step's transfer to the next rank starts with the
 *          attention of the block in hand and hides behind it when the link
 *          keeps up. The backward sends the K/V blocks round again and their
 *          gradients (dK, dV) back to their owners, each cp − 1 times.
 *  ulysses (DeepSpeed-Ulysses, Jacobs et al. 2023): an all-to-all turns Q,
 *          K, V from sequence-sharded (s/cp tokens, every head) into
 *          head-sharded (all s tokens, heads/cp), attention runs locally, a
 *          second all-to-all turns the output back; the backward does the
 *          same with dO and dQ, dK, dV. With GQA, K/V heads fewer than the
 *          degree are replicated to one per rank (DeepSpeed's rule: the
 *          degree divides the K/V heads or they divide it).
 *  hybrid  (Megatron-Core's a2a+p2p, "USP"): Ulysses over u ranks inside a
 *          node, then a ring of r = cp/u such groups across nodes.
 *
 * Chip order (Megatron-Core's default "tp-cp-ep-dp-pp"): TP ranks fastest,
 * then CP, then DP, then PP: chip = t + tp·(c + cp·(d + dp·p)). The CP group
 * of a lane is lane + tp·c; in a hybrid c = a + u·k, the all-to-all index a
 * fastest so that the u ranks share a node. Gradients are reduced over the
 * dp × cp ranks of the DP-CP group (data_parallel.h).
 *
 * The lane (TP rank 0, CP rank 0) is simulated; the CP ranks run the same
 * ops at the same times. Each attention step takes the slowest rank's block
 * (all ranks do the same work with the 2·cp split; the block shapes differ).
 * tensor.c puts the pieces of context_core between the attention's
 * projections, as segments on the lane's compute and comm streams. */
#ifndef MPSIM_CONTEXT_H
#define MPSIM_CONTEXT_H

#include <stdbool.h>

#include "sim/common.h"
#include "hardware/system.h"
#include "models/model.h"
#include "sim/engine/taskgraph.h"

/* The group a CP comm piece runs in (tp_seg.group; 0 is the TP group). */
enum cp_group { CPG_NONE, CPG_RING, CPG_A2A };

/* One piece of a layer's attention core on the lane. */
struct cp_piece {
    mp_time duration;   /* compute: the kernel; comm: its fast (alpha-beta) time */
    double bytes;       /* comm: what the lane sends to its ring successor, or its
                           all-to-all buffer (collective.h's convention) */
    int16_t wait;       /* compute: index of the comm piece it waits for, -1 none */
    uint8_t is_comm;
    uint8_t group;      /* comm: enum cp_group */
    uint8_t blocking;   /* comm: a later compute of the pass needs it */
};

/* One rank's attention over one block of keys: `q_tokens` queries of a
 * sequence against `k_tokens` keys, of which the `causal` fraction of the
 * q × k pairs is unmasked. */
struct cp_block {
    double q_tokens, k_tokens, causal;
};

/* Heads and head widths one rank's attention kernel sees (after TP and the
 * Ulysses all-to-all). */
struct cp_heads {
    double heads, kv_heads;
    int qk_dim, v_dim;
};

/* How attention kernels are timed: the chip's kernel calibration
 * (hardware/calib.h). */
struct calib;
struct cp_pricer {
    const struct calib *calib;
    double batch;       /* sequences per microbatch */
    double act_bytes;   /* bytes per activation element */
};

/* The one place an attention kernel is priced: q_tokens × k_tokens with the
 * `causal` unmasked fraction, `h` heads, forward or backward (dQ, dK, dV),
 * as the FlashAttention kernel of models/kernels.h: FLOPs as the
 * FlashAttention benchmarks count them, 2·b·q·k·causal·heads·(qk + v)
 * forward and 2.5× that backward, at the chip's flash efficiency for head
 * dim (qk + v)/2 and the block's k_tokens keys (causal where the block
 * straddles the diagonal); its traffic Q, K, V, O read or written once (the
 * backward also dO, dQ, dK, dV); one launch each. */
mp_time context_attention_time(const struct cp_pricer *pr, double q_tokens, double k_tokens,
                               double causal, const struct cp_heads *h, bool backward);

/* FLOPs context_attention_time charges (forward; the backward is twice). */
double context_attention_flops(double batch, double q_tokens, double k_tokens, double causal,
                               const struct cp_heads *h);

/* The causal geometry. The sequence is cut into 2·ranks equal chunks;
 * rank i holds chunks i and 2·ranks − 1 − i (`zigzag`) or chunks 2i and
 * 2i + 1 (a plain contiguous split). At step j rank i attends to the keys
 * rank (i − j) mod ranks holds, computing only the chunk pairs not wholly
 * masked (Megatron's kernels: the diagonal pairs half, those below whole).
 * Writes step j's block in chunk units (q_tokens and k_tokens count chunks,
 * `causal` the unmasked share of their pairs; a step with nothing unmasked
 * has q = k = 0) and returns `ranks` steps. */
int context_rank_blocks(int ranks, int rank, bool zigzag, struct cp_block *out);

/* Unmasked chunk pairs rank `rank` computes over all its steps (each pair
 * of chunks counts 1, a diagonal pair 1/2). With the zigzag split every
 * rank has 2·ranks, the mean; contiguous, rank i has 4i + 2. */
double context_rank_work(int ranks, int rank, bool zigzag);

/* What context_plan_build needs. */
struct cp_input {
    const struct model *model;
    const struct system *sys;
    const struct cost_params *cp;  /* seq_len, micro_batch, tp, cp, bits */
    int kind;                      /* enum cp_kind (config.h) */
    int ulysses;                   /* hybrid's all-to-all degree, 0 = the CP ranks of a node */
    const int *lane;               /* [stages]: chip of TP rank 0, CP rank 0 */
    int stages;
    const struct calib *calib;     /* the chip's kernel calibration */
};

/* One attention kind's shape under the plan (built by context_plan_build). */
struct cp_shape {
    bool present;
    struct cp_heads h;          /* per rank after TP and the all-to-all */
    double kv_block_bytes;      /* K+V of one ring block (s / ring tokens) */
    double a2a_qkv_bytes;       /* all-to-all buffer of Q, K, V (sequence-sharded) */
    double a2a_o_bytes;         /* all-to-all buffer of the attention output */
    double core_flops;          /* forward core FLOPs of one rank */
    mp_time core_f, core_b;     /* sums of the step times below */
    mp_time *step_f, *step_b;   /* [ring]: each step's block, the slowest rank's */
    mp_time *ring_t;            /* [stages × 2]: a ring step carrying one block, two */
    mp_time *a2a_t;             /* [stages × 2]: the Q/K/V and the output all-to-alls */
};

struct cp_plan {
    int cp, ulysses, ring;      /* cp = ulysses × ring */
    int kind;                   /* enum cp_kind */
    int tp;                     /* chips between CP ranks */
    int stages;
    struct cp_shape shape[2];   /* [0] full attention (MHA, GQA, MQA), [1] MLA */
    const struct model *model;
};

/* Check the model against the layout (heads over the degree; no linear
 * attention, whose CP is state passing, not modelled) and price every
 * block. MP_ERR_INPUT naming the keys and the numbers. */
int context_plan_build(struct cp_plan *p, const struct cp_input *in, struct mp_error *err);
void context_plan_release(struct cp_plan *p);

/* Whether model layer `layer` runs its attention under the plan. */
bool context_layer_applies(const struct cp_plan *p, int layer);

/* Room context_core needs. */
int context_max_pieces(const struct cp_plan *p);

/* The pieces of layer `layer`'s attention core on stage `stage`: forward
 * (all-to-all, ring steps, all-to-all) or backward (the gradients' pieces;
 * recompute reruns the forward's). Returns how many were written. */
int context_core(const struct cp_plan *p, int stage, int layer, bool backward,
                 struct cp_piece *out);

/* The core's compute on the lane (the sum of its compute pieces), and the
 * FLOPs of the forward core that model_layer_cost counts (÷ cp, on one
 * chip of the TP group); the backward core is 2× both. */
mp_time context_core_time(const struct cp_plan *p, int layer, bool backward);
double context_core_flops(const struct cp_plan *p, int layer);

/* Communication buffers a pass holds while a layer's attention runs: the
 * ring's receive buffers (two blocks in flight: K/V forward, K/V and dK/dV
 * backward) and the all-to-all's gathered heads. */
double context_buffer_bytes(const struct cp_plan *p, int layer, bool backward);

/* Bytes the lane sends per layer and pass over its CP groups (the sum of
 * its comm pieces' `bytes` × (n − 1)/n for all-to-alls): for tests/docs. */
double context_sent_bytes(const struct cp_plan *p, int layer, bool backward);

/* Detailed fidelity: every chip of `chips` sends `bytes` to the next (the
 * last to the first) on its route, all at once. Returns a zero-time op on
 * chips[0]'s comm stream that ends when its own send and its receive have. */
int context_add_shift(struct taskgraph *g, const struct system *sys, const int *chips, int n,
                      double bytes, int dep, int mb, int stage);

#endif
