/* tensor.h — tensor, sequence and folded (TSP) parallelism: what a pipeline
 * pass looks like on the lane of a tensor-parallel group.
 *
 * The TP group of a stage is simulated as one lane, the chip of TP rank 0
 * (DESIGN.md §2). A pass (F, B, W or BW of one microbatch on one stage) is a
 * list of segments: compute pieces on the lane's compute stream and the
 * group's collectives on its comm stream, each collective issued when the
 * compute before it ends and each compute piece waiting for the collective
 * whose result it needs. pipeline.c appends them (sim/strategy/pipeline.h).
 *
 * Megatron (Shoeybi et al. 2019; Korthikanti et al. 2022), per decoder
 * block (token mixer, then MLP), from the block's priced parts (kernels.h:
 * PRE norm, IN column-parallel GEMMs, MID core, OUT row-parallel GEMM,
 * POST residual):
 *   forward   [pre in mid out] all-reduce [post];
 *   backward  [post out-dgrad (out-wgrad) mid in-dgrad] all-reduce
 *             [(in-wgrad) pre]; the in-wgrad waits for the all-reduce
 *             unless parallel.tp_overlap (Megatron's async all-reduce);
 *   with SP   forward [pre] all-gather [in mid out] reduce-scatter [post];
 *             backward [post] all-gather(grad) [out-dgrad (out-wgrad) mid]
 *             all-gather(input) [in-dgrad] reduce-scatter [(in-wgrad) pre]:
 *             the layer input was stashed sharded, so the weight gradient
 *             re-gathers it, under the input-gradient GEMMs, and the
 *             reduce-scatter runs under the weight gradient (Megatron does
 *             both always with SP); a W-only pass (zero-bubble) gathers it
 *             itself; with parallel.tp_comm_overlap the forward's
 *             all-gather also runs under the IN GEMMs and its
 *             reduce-scatter under the OUT GEMM (Megatron-Core's TP comm
 *             overlap);
 *   a compute piece beside a collective it overlaps is lengthened by the
 *   share of the shorter of the two that the chip cannot hide
 *   (overlap_hidden: both use the SMs and memory);
 *   full recompute repeats the forward's collectives in the backward;
 *   selective recompute re-runs the unfused attention core first;
 *   the embedding's output and the LM head's input gradient add one each.
 *
 * TSP (parallel.tsp, cases.md §2): each of D = tp ranks holds 1/D of the
 * weights and 1/D of the tokens. Per decoder the ranks gather the layer's
 * weight shards (broadcast in turn for attention, a ring for the MLP: an
 * all-gather's volume), prefetched one layer ahead so they overlap compute,
 * and exchange K/V along the sequence (an all-gather the attention waits on);
 * the backward gathers the weights again and reduce-scatters their
 * gradients and the K/V gradients. Activations are split by D everywhere
 * (as TP+SP), and the lane holds two gathered layers of weights and one
 * layer's full-sequence K/V while a pass runs.
 *
 * Context parallelism (parallel.cp, context.h) puts its core between a
 * decoder's attention projections, its ring steps and all-to-alls as comm
 * segments of the lane's CP groups (tp_seg.group). */
#ifndef MPSIM_TENSOR_H
#define MPSIM_TENSOR_H

#include <stdbool.h>

#include "collective.h"
#include "models/kernels.h"
#include "context.h"
#include "models/model.h"
#include "hardware/system.h"

/* The kinds of pass, as the pipeline knows them. *_LAST are the same passes
 * for a stage's last backward of the step, cut per layer so data-parallel
 * gradient buckets can start as each layer's gradients are done. */
enum tp_pass_kind { TPP_F, TPP_B, TPP_W, TPP_BW, TPP_W_LAST, TPP_BW_LAST, N_TP_PASSES };

struct tp_seg {
    mp_time duration;     /* compute: its time; comm: the collective's fast time */
    double bytes;         /* comm: the collective's buffer (collective.h) */
    int32_t wait;         /* compute: index in the pass of the comm segment it waits
                             for, -1 none; comm: unused */
    int32_t grad_layer;   /* compute: after it the weight grads of this model layer
                             are complete (last passes only), -1 none */
    uint8_t is_comm;
    uint8_t blocking;     /* comm: a later compute (or the pass's output) needs it */
    uint8_t op;           /* comm: enum coll_op */
    /* Expert parallelism: enum ep_role (experts.h) of a MoE layer's segment
     * whose duration depends on the microbatch's routing, and its model
     * layer; the pipeline asks experts_time for it. EPR_NONE otherwise. */
    uint8_t ep_role;
    int32_t ep_layer;     /* int32: models have up to 10^5 layers, a pass as many segments */
    /* Context parallelism: enum cp_group (context.h) of a comm segment that
     * runs in the lane's CP ring or all-to-all group; 0 = the TP group. */
    uint8_t group;
};

struct tp_pass {
    int off, n;           /* segments in tensor_plan.seg; n = 0: one plain op */
    double extra_bytes;   /* MEM_COMM the pass holds while it runs (TSP buffers) */
};

struct tensor_plan {
    int tp;               /* group size (1 = no tensor parallelism) */
    int stages;
    int *group;           /* [stages × tp]: chips of each stage's group, lane first */
    struct tp_pass *pass; /* [stages × N_TP_PASSES] */
    struct tp_seg *seg;
    int n_seg, cap_seg;
    enum fidelity fidelity;
    enum coll_algo algo;
    const struct cp_plan *context; /* context parallelism (context.h); NULL = none */
};

/* What tensor_plan_build needs to know. */
struct tensor_input {
    const struct model *model;
    const struct cost_params *cp;   /* tp, sp, recompute, bits, s, b */
    const struct system *sys;
    const struct chip *chip;
    const int *layer_first, *layer_last; /* [stages]: model layers on each stage */
    const int *lane;                     /* [stages]: chip of TP rank 0 */
    int stages;
    bool tsp, overlap;
    bool comm_overlap;                   /* SP forward: all-gather / reduce-scatter under the
                                            GEMMs (parallel.tp_comm_overlap) */
    double overlap_hidden;               /* of a compute and a collective side by side, the
                                            share of the shorter hidden (kernels.csv
                                            comm_overlap); 1 = all */
    bool split_last;                     /* cut the *_LAST passes per layer */
    enum fidelity fidelity;
    enum coll_algo algo;
    /* Each model layer's kernels priced on the chip, by pass, block and
     * part (models/kernels.h; sim/train/price.c): [model layers]. */
    const struct layer_price *price;
    /* Expert parallelism (cp->ep > 1): each MoE decoder's FFN becomes
     * [router] dispatch [shared experts ‖ dispatch] [routed experts] combine
     * (backward: gradient all-to-all, experts, gradient all-to-all, router),
     * its attention sequence-parallel inside a TP group (Megatron runs MoE
     * with TP only so); routed-expert and all-to-all segments carry
     * ep_role and take their per-microbatch durations from experts.h. */
    bool ep;
    /* Context parallelism (context.h), NULL = none: a decoder's attention
     * becomes [QKV projections] [the CP core: all-to-all, ring steps,
     * all-to-all] [output projection], its other work on the rank's s/cp
     * tokens (cp->cp of the cost params). */
    const struct cp_plan *context;
};

/* Build every stage's passes. With tp = 1 and no split, every pass has
 * n = 0 and the pipeline emits one op per pass, as before this module. */
void tensor_plan_build(struct tensor_plan *p, const struct tensor_input *in);
void tensor_plan_release(struct tensor_plan *p);

/* Whether tensor parallelism of degree `tp` splits `m`'s attention: the
 * query heads evenly (heads % tp = 0), and the KV heads either evenly
 * (kv_heads % tp = 0) or each copied on tp / kv_heads ranks (tp %
 * kv_heads = 0, as vLLM and Megatron-Core replicate GQA's KV heads). The
 * run, the plan and the search all ask this. */
bool tensor_degree_ok(const struct model *m, int tp);

/* tensor_degree_ok, or MP_ERR_INPUT: "WHERE: parallel.tp = 3 does not
 * divide model M's 32 attention heads: expected a divisor (1, 2, 4, ...)". */
int tensor_check_degree(const struct model *m, int tp, const char *where, struct mp_error *err);

/* Passes of a stage. */
const struct tp_pass *tensor_pass(const struct tensor_plan *p, int stage, enum tp_pass_kind k);

/* The collective of a comm segment, for collective_add. */
struct coll_spec tensor_coll(const struct tensor_plan *p, int stage, const struct tp_seg *s);

#endif
