/* step_split.h — the step accounting: where every picosecond of a training
 * step went, per pipeline stage and overall, adding up exactly (integer
 * picoseconds) to the step time (DESIGN.md §3, `step_split`).
 *
 * Each stage (pipeline device) is looked at through its lane's compute
 * stream (TP rank 0 of its DP replica 0), over [0, step time):
 *
 *   busy       a compute op runs: `compute` for the passes (F, B, W, BW,
 *              FB) less the part of a backward that re-runs the forward
 *              (`recompute`: the stage's stage_cost.t_rc share of each B,
 *              BW and FB op, floored to the picosecond), `optimizer` for
 *              the optimizer step, `other` for any other compute op;
 *   idle       the stream waits. Each idle interval is charged to what it
 *              waited for, found by walking back from the op that ended
 *              the wait (the next compute op, or for the tail after the
 *              stage's last compute op, the stage's last op of any kind)
 *              through the dependency that finished last (its latest-
 *              ending predecessor or the op before it on its stream):
 *                - an op of the stage's own chips (its TP × CP group × DP
 *                  replicas) on a comm stream: `exposed_<kind>` by the op's
 *                  comm kind (tp, cp, pp, dp, ep; host for training.
 *                  offload's copies) for the part of the
 *                  interval the op ran (and for the time it queued for a
 *                  link);
 *                - a stage-to-stage hand-off coming to the stage: `exposed_pp`;
 *                - zero-length ops (memory bookkeeping) are stepped through;
 *                - another EP rank's compute on the stage's chips: `other`;
 *                - anything on another stage (its compute, its comm, a
 *                  hand-off leaving it for elsewhere): the rest of the
 *                  interval, back to its start, is `bubble` — the compute
 *                  stream waits for another stage;
 *              after the stage's last op, until the step ends: `bubble`.
 *
 * So `bubble` is the pipeline bubble only: exposed communication is never
 * called bubble, and communication hidden under compute, or running while
 * the stage waits for another stage anyway, is charged nowhere (it cost the
 * stage nothing). Every part of one stage sums to the step time exactly.
 *
 * The overall split is the mean over stages (so `bubble` over the step is
 * Σ bubble / (stages × step time), DESIGN.md's definition), rounded to
 * integer picoseconds by largest remainder so that it, too, sums exactly to
 * the step time. The accounting reads only the engine's op times, the ops'
 * tags and comm kinds and stage_cost.t_rc: not how compute was priced. */
#ifndef MPSIM_STEP_SPLIT_H
#define MPSIM_STEP_SPLIT_H

#include "sim/common.h"
#include "sim/engine/taskgraph.h"

enum split_part {
    SPLIT_COMPUTE, SPLIT_RECOMPUTE,
    SPLIT_TP, SPLIT_CP, SPLIT_PP, SPLIT_DP, SPLIT_EP, SPLIT_HOST,
    SPLIT_BUBBLE, SPLIT_OPTIMIZER, SPLIT_OTHER,
    N_SPLIT
};

struct step_split {
    mp_time part[N_SPLIT];
};

/* Key names ("compute", "recompute", "exposed_tp", ..., "bubble",
 * "optimizer", "other") for JSON, CSV columns (+ "_s") and meta rows. */
const char *step_split_name(enum split_part p);

/* Short labels for people ("compute", "exposed TP", "bubble", ...). */
const char *step_split_label(enum split_part p);

/* The part a communication op of kind `k` is charged to (COMM_NONE: other). */
enum split_part step_split_of_comm(enum comm_kind k);

/* Sum of the parts. */
mp_time step_split_total(const struct step_split *x);

/* The mean of `n` stages' splits, each summing to `step`, rounded by
 * largest remainder (ties to the earlier part) so it sums to `step`. */
void step_split_mean(const struct step_split *stage, int n, mp_time step,
                     struct step_split *out);

struct sim;

/* Fill s->res.stage[d].split for every stage and s->res.split (the mean),
 * after the engine ran (sim.c's fold_metrics). */
void step_split_fold(struct sim *s);

/* Every attributed interval [a, b) of every stage (in no promised order),
 * with its part, to `fn` (the Chrome trace's bubble slices). */
typedef void (*step_split_fn)(void *ctx, int device, mp_time a, mp_time b, enum split_part p);
void step_split_intervals(const struct sim *s, step_split_fn fn, void *ctx);

#endif
