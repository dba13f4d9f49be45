/* experts.h — expert parallelism: which experts each microbatch's tokens
 * reach in every MoE layer, what the EP group's all-to-alls cost on the
 * topology, and how long the busiest rank's expert GEMMs take.
 *
 * The EP group of a stage is `parallel.ep` chips drawn from the stage's
 * tp × dp chips in Megatron's order (TP fastest, then DP), so EP8 on 8-GPU
 * nodes is one node and EP64 is eight. Each rank routes its own s·b/tp
 * tokens (attention is data-parallel, and sequence-parallel inside a TP
 * group); experts are not TP-split. Like the TP group (DESIGN.md §2) the EP
 * group is one lane: the rank with the most expert work gates every MoE
 * layer (the combine cannot finish before it does), so the lane runs that
 * rank's expert GEMMs, sized by its actual token counts, and the two
 * all-to-alls as single ops priced from the fabric. Routing statistics per
 * (microbatch, layer) are a handful of numbers, drawn once before the
 * graph is built.
 *
 * Routing (experts.routing, one gsl_rng seeded from run.seed):
 *   uniform    every expert equally likely;
 *   zipf       popularity ∝ 1/rank^skew, the ranking shuffled per layer;
 *   dirichlet  popularity ~ Dirichlet(concentration), drawn per layer;
 *   trace      a CSV of loads, one row per MoE layer (rows repeat when
 *              fewer), one column per expert, used as given: no sampling.
 * Per (microbatch, layer) the group's ep·T tokens make ep·T·k choices,
 * drawn as one multinomial over the layer's popularity (a token's k
 * experts are not forced distinct: the loads, not the tokens, matter).
 * A capacity factor c keeps at most ⌈c · ep·T·k / E⌉ tokens per expert and
 * drops the rest (GShard, Megatron); c = 0 is dropless. Redundant copies go
 * to the hottest experts by popularity, each on the rank with the least
 * expected load so far, and split their expert's tokens evenly.
 *
 * All-to-all (one dispatch and one combine per MoE layer forward, the same
 * pair of gradient exchanges backward). Rank j's share of the kept tokens is
 * share_j; each rank sends S = kept·H/ep bytes spread by share.
 *   direct        every pair exchanges S·share_j; a chip's NVLink and NIC
 *                 traffic, in and out, each on its own link: time = the
 *                 busiest of those four over its bandwidth, plus one route
 *                 latency (the NIC's when any traffic crosses nodes).
 *                 On one switch with even loads: (n−1)/n · S/B + α.
 *   hierarchical  (DeepSeek-V3) a token crosses the NIC once per node it
 *                 needs, to the GPU of the same local index, which forwards
 *                 it over NVLink; node-limited routing (at most M nodes per
 *                 token) caps the nodes a token needs at
 *                 D = M(1 − (1 − 1/M)^k) on average. The two phases are
 *                 pipelined: time = max(NIC phase, NVLink phase) + both
 *                 latencies.
 *   auto          hierarchical when the group spans nodes with several of
 *                 its chips in each, else direct. */
#ifndef MPSIM_EXPERTS_H
#define MPSIM_EXPERTS_H

#include <stdbool.h>

#include "sim/common.h"
#include "models/model.h"
#include "hardware/system.h"

enum ep_routing { EP_UNIFORM, EP_ZIPF, EP_DIRICHLET, EP_TRACE };
enum ep_a2a { EP_A2A_AUTO, EP_A2A_DIRECT, EP_A2A_HIERARCHICAL };

/* What a pass segment of a MoE layer is (tensor.h carries it). */
enum ep_role {
    EPR_NONE,
    EPR_DISPATCH,   /* forward dispatch all-to-all (dispatch_bits) */
    EPR_COMBINE,    /* forward combine all-to-all (activation bits) */
    EPR_GRAD,       /* one of the two backward all-to-alls (activation bits) */
    EPR_EXPERTS_F, EPR_EXPERTS_B, EPR_EXPERTS_W, EPR_EXPERTS_BW, /* the gating rank's GEMMs */
    N_EP_ROLES
};

/* One MoE layer over the whole step (every microbatch). Tokens are
 * token-expert assignments. */
struct ep_layer_stats {
    int layer;                 /* model layer index */
    double tok_min, tok_mean, tok_max; /* per expert per microbatch, kept */
    double imbalance_mean, imbalance_max; /* busiest rank ÷ mean rank, over microbatches */
    double dropped, assigned;  /* assignments dropped by the capacity limit / made */
};

struct ep_input {
    const struct model *model;
    const struct system *sys;
    const int *group;          /* [ep]: stage 0's EP chips, the lane first */
    int ep, microbatches;
    double tokens_per_rank;    /* T = s·b/tp */
    int routing;               /* enum ep_routing */
    double skew, concentration, capacity_factor;
    const char *trace;         /* resolved CSV path (routing = trace) */
    int redundant, max_nodes;
    int a2a;                   /* enum ep_a2a */
    int act_bits, dispatch_bits, weight_bits;
    unsigned long seed;
    bool show_ranks;           /* keep every rank's expert times (experts_rank_time) */
    /* Time of one routed expert's kernels (gate/up GEMM, activation, down
     * GEMM; models/kernels.h) for `tokens` tokens, pass 0 F, 1 B, 2 W, on
     * the chip (sim/train/price.c). */
    mp_time (*expert_time)(void *ctx, double tokens, int pass);
    void *op_ctx;
};

struct ep_plan {
    int ep, experts, k, n_moe, microbatches;
    int nodes, per_node;       /* nodes the group spans, its chips in each */
    double nodes_per_token;    /* D of the hierarchical path */
    int a2a;                   /* resolved: EP_A2A_DIRECT or EP_A2A_HIERARCHICAL */
    int *moe_of_layer;         /* [model layers]: index among MoE layers, -1 */
    mp_time *t;                /* [(mb·n_moe + i)·N_EP_ROLES + role] */
    mp_time *rank_t;           /* show_ranks: [((mb·n_moe + i)·ep + r)·3 + F/B/W] */
    int *gate_rank;            /* [mb·n_moe + i]: the rank that gates it */
    int *group;                /* [ep] */
    struct ep_layer_stats *stats; /* [n_moe] */
    double *expert_tokens;     /* [n_moe × experts]: kept tokens summed over microbatches */
    double bytes_per_rank;     /* mean dispatch bytes one rank sends per layer (dropless) */
};

/* Draw the routing of every (microbatch, MoE layer) and price it. Input
 * errors (a trace that cannot be read, more redundant copies than experts,
 * an EP degree that does not divide the experts) are MP_ERR_INPUT naming
 * the key, or the trace's file and line. */
int experts_plan_build(struct ep_plan *p, const struct ep_input *in, struct mp_error *err);
void experts_plan_release(struct ep_plan *p);

/* Duration of one segment of MoE model layer `layer` for microbatch `mb`;
 * 0 for a dense layer or EPR_NONE. */
mp_time experts_time(const struct ep_plan *p, int mb, int layer, enum ep_role role);

/* show_ranks: rank r's own expert time for `role` (F, B, W or BW). */
mp_time experts_rank_time(const struct ep_plan *p, int mb, int layer, int r, enum ep_role role);

/* Whether a role is an all-to-all. */
static inline bool experts_role_is_comm(enum ep_role r)
{
    return r == EPR_DISPATCH || r == EPR_COMBINE || r == EPR_GRAD;
}

/* ---- the pieces, for tests ---------------------------------------------- */

/* Keep at most ⌈cf · total / E⌉ of count[e] (cf > 0) in kept[e]; returns the
 * number dropped. cf = 0 keeps everything. */
double experts_apply_capacity(const double *count, int E, double cf, double total, double *kept);

/* Time of one all-to-all in which the group `chips[0..n)` moves
 * `bytes_per_rank` bytes (token copies, k per token) out of every rank,
 * rank j receiving the share share[j] (Σ = 1) of everyone's;
 * `nodes_per_token` is D of the hierarchical path. `algo` EP_A2A_AUTO picks
 * as the top of this header says. */
mp_time experts_a2a_time(const struct system *sys, const int *chips, int n, const double *share,
                         double bytes_per_rank, int k, double nodes_per_token, int algo);

/* D = M(1 − (1 − 1/M)^k) with M = min(max_nodes, nodes) (max_nodes 0: nodes). */
double experts_nodes_per_token(int nodes, int max_nodes, int k);

/* Name of a routing ("uniform", ...). */
const char *experts_routing_name(int routing);

#endif
