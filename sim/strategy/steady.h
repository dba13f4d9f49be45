/* steady.h — where a pipeline program repeats itself, so that a step can be
 * simulated with whole periods of its steady state left out (issue 22).
 *
 * With every microbatch costing the same, a schedule's steady state repeats:
 * on each device the op order advances by one "period" (1F1B: one forward and
 * one backward; interleaved: a group of p microbatches on every chunk) and
 * every microbatch number goes up by q. Removing K periods from every device
 * turns the program for m microbatches into the one for m − K·q, exactly:
 * this module finds such a K and q, builds the shorter ("reduced") program and
 * proves, by comparing the two programs op by op, where on each device the K
 * periods can be put back:
 *
 *   full[d] = reduced[d][0..p) · K periods · σ_{Kq}(reduced[d][p..))   for every
 *   p in [lo[d], hi[d]], the periods being reduced[d][p − c[d] .. p) with
 *   microbatches advanced by q, 2q, ..., K·q (σ_x: every microbatch + x).
 *
 * The pipeline builder turns that into the task graph's declared period
 * (taskgraph.h, struct tg_period); the engine then checks at run time that
 * its own state repeats and jumps the K periods (engine.h). A schedule whose
 * programs do not line up this way (GPipe has two steady phases, zb-auto's
 * greedy order need not repeat, DualPipe's bidirectional phases) gets no
 * plan, and the step is simulated in full. */
#ifndef MPSIM_STEADY_H
#define MPSIM_STEADY_H

#include <stdbool.h>
#include <stdint.h>

#include "schedule.h"

struct steady_plan {
    int q;                       /* microbatches per period */
    int64_t elided;              /* K: periods the reduced program leaves out */
    int reduced_microbatches;    /* m − K·q */
    struct pipe_program reduced; /* the program for m − K·q microbatches */
    int *lo, *hi;                /* [devices]: program positions where the periods fit */
    int *c;                      /* [devices]: program ops per period */
};

/* Look for a plan whose reduced program still has at least `min_periods`
 * whole periods of steady state on every device (room for the engine to see
 * the state settle and repeat). q is tried as 1, 2 and the pipeline depth;
 * m' as small as the rule allows. `shape` and `full` are the schedule's
 * input and program for the step (same schedule name). Returns false, with
 * `plan` empty, when no plan exists or leaving out periods would save less
 * than half the step's microbatches. Release with steady_plan_release. */
bool steady_plan_find(const char *schedule, const struct pipe_shape *shape,
                      const struct pipe_program *full, int min_periods,
                      struct steady_plan *plan);

void steady_plan_release(struct steady_plan *plan);

/* The window of one device given both programs (exposed for tests): true
 * with lo/hi/c set when full[d] is reduced[d] with K periods of q
 * microbatches inserted anywhere in [lo, hi], as above. */
bool steady_device_window(const struct pipe_program *full, const struct pipe_program *reduced,
                          int d, int64_t K, int q, int *lo, int *hi, int *c);

#endif
