/* sched_basic.c — GPipe and non-interleaved 1F1B (Megatron's
 * forward_backward_pipelining_without_interleaving), the two textbook
 * schedules every other one is measured against.
 *
 * Both put stage s on device s and use the fused backward (BW): they do not
 * split the weight gradient, so there is nothing to gain from separate B and
 * W ops and the task graph stays smaller. */
#include "schedule.h"

/* GPipe: every forward, then every backward. The backward walks the
 * microbatches in the same order (0..m−1) as the forward, so microbatch 0's
 * gradient leaves the last stage first; each device stashes all m. */
static int gen_gpipe(const struct pipe_shape *shape, struct pipe_program *prog,
                     struct mp_error *err)
{
    (void)err;
    int p = shape->devices, m = shape->microbatches;
    for (int d = 0; d < p; d++) {
        for (int k = 0; k < m; k++) pipe_program_push(prog, d, pipe_op_single(PIPE_F, k, d));
        for (int k = 0; k < m; k++) pipe_program_push(prog, d, pipe_op_single(PIPE_BW, k, d));
    }
    return MP_OK;
}

/* 1F1B: device d first runs enough forwards to fill the pipe below it
 * (p−1−d, fewer if there are not that many microbatches), then alternates one
 * forward with one backward, then drains the backwards. The warm-up is what
 * bounds the stash at min(p−d, m) microbatches, against GPipe's m. */
static int gen_1f1b(const struct pipe_shape *shape, struct pipe_program *prog,
                    struct mp_error *err)
{
    (void)err;
    int p = shape->devices, m = shape->microbatches;
    for (int d = 0; d < p; d++) {
        int warm = p - 1 - d < m ? p - 1 - d : m;
        int steady = m - warm;
        for (int k = 0; k < warm; k++) pipe_program_push(prog, d, pipe_op_single(PIPE_F, k, d));
        for (int k = 0; k < steady; k++) {
            pipe_program_push(prog, d, pipe_op_single(PIPE_F, warm + k, d));
            pipe_program_push(prog, d, pipe_op_single(PIPE_BW, k, d));
        }
        for (int k = steady; k < m; k++) pipe_program_push(prog, d, pipe_op_single(PIPE_BW, k, d));
    }
    return MP_OK;
}

/* Neither has a rule of its own (no .check): any p ≥ 1 and m ≥ 1 work, and
 * with m < p the pipeline simply never fills, which is a legitimate thing to
 * simulate. */
const struct schedule_kind sched_gpipe = {
    .name = "gpipe",
    .chunks = 1, .passes = 2,
    .summary = "GPipe: all forwards, then all backwards; stashes every microbatch",
    .generate = gen_gpipe,
};

const struct schedule_kind sched_1f1b = {
    .name = "1f1b",
    .chunks = 1, .passes = 2,
    .summary = "1F1B (Megatron, non-interleaved): warm-up, one forward one backward, cool-down",
    .generate = gen_1f1b,
};
