/* schedule.h — pipeline schedules as pure op orders.
 *
 * A schedule decides, for each device of a pipeline, the order in which it
 * runs the forward (F), input-gradient backward (B), weight-gradient backward
 * (W), fused backward (BW = B then W) and overlapped forward-and-backward (FB)
 * passes of every microbatch on every stage it holds. It knows nothing of
 * time, chips or bytes: the pipeline builder (pipeline.h) turns a program into
 * a task graph, and the engine times it. Keeping schedules pure lets the
 * validator and the tests check them by counting.
 *
 * Stages here are the pipeline positions a microbatch walks through in order,
 * 0 .. stages-1 (the model's layers are split evenly over them). A schedule
 * with v chunks per device has stages = devices × v; a V schedule puts stage
 * d and 2p−1−d on device d; DualPipe sends half the microbatches down the
 * devices and half up, so each microbatch follows one of two paths.
 *
 * Schedules register in a NULL-terminated table of const structs looked up by
 * name (DESIGN.md §7); an unknown name lists the known ones. */
#ifndef MPSIM_SCHEDULE_H
#define MPSIM_SCHEDULE_H

#include <assert.h>
#include <stdint.h>

#include "sim/common.h"

enum pipe_op_kind {
    PIPE_F,   /* forward of (mb, stage) */
    PIPE_B,   /* input-gradient backward of (mb, stage) */
    PIPE_W,   /* weight-gradient backward of (mb, stage) */
    PIPE_BW,  /* full backward (B then W) of (mb, stage) as one op */
    PIPE_FB,  /* forward of (mb, stage) overlapped with backward (BW) of (mb2, stage2) */
};

struct pipe_op {
    uint8_t kind;     /* enum pipe_op_kind */
    int32_t mb, stage;
    int32_t mb2, stage2; /* PIPE_FB only: the backward half; -1 otherwise */
};

/* What the user asked for. */
struct pipe_shape {
    int devices;        /* p: pipeline devices (parallel.pp) */
    int microbatches;   /* m */
    int chunks;         /* v: model chunks per device (parallel.vpp; V/DualPipe set their own) */
    int layers;         /* layers to split over stages (for divisibility rules); 0 = unchecked */
    /* parallel.stage_layers: decoder layers of each device [devices], split
     * over its chunks as evenly as possible; NULL = `layers` split evenly.
     * A schedule's layer rules then hold per device instead. */
    const int *device_layers;
    double mem_limit;   /* zb-auto: activation memory limit in units of M_B (0 = default) */
    double t_f, t_b, t_w; /* zb-auto: relative pass times (0 = equal) */
};

/* A generated schedule. */
struct pipe_program {
    int devices, stages, microbatches;
    int paths;              /* 1, or 2 for DualPipe's two directions */
    int *path_of_mb;        /* [microbatches]: which path each microbatch takes */
    int *device_of;         /* [paths × stages]: device running stage s on path q */
    struct pipe_op **ops;   /* [devices]: each device's ops in order */
    int *n_ops;             /* [devices] */
    int *cap_ops;           /* [devices], for growth */
};

struct schedule_kind {
    const char *name;
    const char *summary;    /* one line for `mpsim list schedules` */
    /* Check the schedule's rules against the shape: MP_ERR_INFEASIBLE with
     * the rule and the numbers ("dualpipe needs an even pp, got 3"). NULL
     * when any p ≥ 1 and m ≥ 1 work (schedule_build checks those). */
    int (*check)(const struct pipe_shape *shape, struct mp_error *err);
    /* Fill `prog` (already pipe_program_init'ed by the caller). */
    int (*generate)(const struct pipe_shape *shape, struct pipe_program *prog,
                    struct mp_error *err);
    /* Its size, for the work estimate before it is built (issue 16): stages
     * per device (0: parallel.vpp; V schedules 2) and ops per microbatch
     * per stage (F + BW = 2; F, B, W = 3). */
    int chunks, passes;
};

/* NULL-terminated table of every schedule. */
extern const struct schedule_kind *const schedule_kinds[];

/* Look up by name; NULL if unknown. */
const struct schedule_kind *schedule_find(const char *name);

/* How many ops the schedule `name` gives `shape` (devices × chunks × m ×
 * passes, an upper bound where F and B merge), before it is built; an
 * unknown name counts 2 chunks of 3. */
double schedule_ops_estimate(const char *name, const struct pipe_shape *shape);

/* Comma-separated list of known names, for error messages. */
const char *schedule_names(void);

/* Check then generate `name` for `shape`. Unknown name: MP_ERR_INPUT listing
 * the known ones; broken rule: MP_ERR_INFEASIBLE. */
int schedule_build(const char *name, const struct pipe_shape *shape,
                   struct pipe_program *prog, struct mp_error *err);

/* schedule_build without the final pipe_validate, for programs proven
 * otherwise: steady.h shows a long program to be a validated short one with
 * periods put back, op by op, which costs less than validating it. */
int schedule_generate(const char *name, const struct pipe_shape *shape,
                      struct pipe_program *prog, struct mp_error *err);

/* Program lifecycle. init sets sizes and one path with device_of[s] = s mod
 * devices (interleaved layout); generators overwrite paths as they need. */
void pipe_program_init(struct pipe_program *prog, int devices, int stages,
                       int microbatches, int paths);
void pipe_program_release(struct pipe_program *prog);

/* Append `op` to device `device`'s list (a non-FB op's second half is set
 * to -1). Inline: the generators push every pass of every microbatch, and
 * a call cost a third of the push (the 1T step pushes ~100 K). */
static inline void pipe_program_push(struct pipe_program *prog, int device, struct pipe_op op)
{
    assert(device >= 0 && device < prog->devices);
    if (op.kind != PIPE_FB) op.mb2 = op.stage2 = -1;
    MP_GROW(prog->ops[device], prog->cap_ops[device], prog->n_ops[device] + 1);
    prog->ops[device][prog->n_ops[device]++] = op;
}

/* A single pass (F, B, W or BW) of (mb, stage); PIPE_FB ops name their
 * backward half too and are written out in full. */
static inline struct pipe_op pipe_op_single(int kind, int mb, int stage)
{
    return (struct pipe_op){.kind = (uint8_t)kind, .mb = mb, .stage = stage,
                            .mb2 = -1, .stage2 = -1};
}

/* Device running (mb, stage). */
static inline int pipe_device(const struct pipe_program *p, int mb, int stage)
{
    return p->device_of[p->path_of_mb[mb] * p->stages + stage];
}

/* Validate a program: every (mb, stage) has exactly one forward and one
 * backward (B and W, or BW, or inside an FB) on the device the path gives;
 * on each device F precedes B precedes W; and running devices in order with
 * the cross-stage dependencies (F(mb,s) after F(mb,s−1); B(mb,s) after
 * B(mb,s+1) and F(mb,s)) completes without deadlock. MP_ERR_INFEASIBLE with
 * the first violation found. */
int pipe_validate(const struct pipe_program *prog, struct mp_error *err);

/* Peak number of microbatches whose activations device `d` holds at once,
 * counted from the op order, in units of M_B and M_W: F adds one M_B; B turns
 * it into one M_W (frees M_B − M_W); W frees the M_W; BW frees M_B.
 * Writes the (M_B count, M_W count) at the moment of the peak, where the peak
 * is ranked by mb_units + w_weight × w_units (w_weight = M_W / M_B). */
void pipe_peak_inflight(const struct pipe_program *prog, int d, double w_weight,
                        int *mb_units, int *w_units);

#endif
