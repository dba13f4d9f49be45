/* schedule.c — the schedule registry, program lifecycle, the validator and
 * the in-flight counter. The generators live in one file per family
 * (sched_basic.c, sched_interleaved.c, sched_zero_bubble.c, sched_dualpipe.c);
 * this file knows none of them beyond their table entries. */
#include "schedule.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct schedule_kind sched_gpipe, sched_1f1b;
extern const struct schedule_kind sched_interleaved;
extern const struct schedule_kind sched_zb_h1, sched_zb_h2, sched_zb_v, sched_zb_auto;
extern const struct schedule_kind sched_dualpipe, sched_dualpipev;

const struct schedule_kind *const schedule_kinds[] = {
    &sched_gpipe,
    &sched_1f1b,
    &sched_interleaved,
    &sched_zb_h1,
    &sched_zb_h2,
    &sched_zb_v,
    &sched_zb_auto,
    &sched_dualpipe,
    &sched_dualpipev,
    NULL,
};

const struct schedule_kind *schedule_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; schedule_kinds[i]; i++)
        if (strcmp(schedule_kinds[i]->name, name) == 0) return schedule_kinds[i];
    return NULL;
}

double schedule_ops_estimate(const char *name, const struct pipe_shape *shape)
{
    const struct schedule_kind *k = schedule_find(name);
    double chunks = !k ? 2 : k->chunks > 0 ? k->chunks : shape->chunks > 0 ? shape->chunks : 1;
    double passes = k && k->passes > 0 ? k->passes : 3;
    return (double)shape->devices * chunks * shape->microbatches * passes;
}

const char *schedule_names(void)
{
    /* Built on first use: the table is constant, so the text never changes. */
    static char buf[512];
    if (buf[0]) return buf;
    size_t used = 0;
    for (int i = 0; schedule_kinds[i]; i++) {
        int n = snprintf(buf + used, sizeof buf - used, "%s%s", i ? ", " : "",
                         schedule_kinds[i]->name);
        assert(n > 0 && (size_t)n < sizeof buf - used);
        used += (size_t)n;
    }
    return buf;
}

int schedule_build(const char *name, const struct pipe_shape *shape,
                   struct pipe_program *prog, struct mp_error *err)
{
    int rc = schedule_generate(name, shape, prog, err);
    if (rc == MP_OK) {
        /* A generator bug must surface here, not as a hang in the engine. The
         * check is linear in the number of ops, so it is cheap to always run. */
        struct mp_error verr;
        if (pipe_validate(prog, &verr) != MP_OK) {
            rc = mp_fail(err, MP_ERR_INTERNAL, "schedule %s produced an invalid program: %s",
                         name, verr.msg);
            pipe_program_release(prog);
        }
    }
    return rc;
}

int schedule_generate(const char *name, const struct pipe_shape *shape,
                      struct pipe_program *prog, struct mp_error *err)
{
    memset(prog, 0, sizeof *prog);
    const struct schedule_kind *kind = schedule_find(name);
    if (!kind) {
        /* The nearest name, case aside ("GPIPE" is gpipe): names are lower case. */
        const char *near = NULL;
        size_t best = SIZE_MAX;
        for (int i = 0; name && schedule_kinds[i]; i++) {
            size_t d = mp_edit_distance(name, schedule_kinds[i]->name);
            if (d < best) best = d, near = schedule_kinds[i]->name;
        }
        char hint[96] = "";
        if (near && best <= 1 + strlen(name) / 4)
            snprintf(hint, sizeof hint, " (did you mean '%s'?%s)", near,
                     best == 0 ? " schedule names are lower case" : "");
        char q[128];
        mp_quote(name ? name : "", name ? strlen(name) : 0, 60, q, sizeof q);
        return mp_fail(err, MP_ERR_INPUT, "unknown pipeline schedule '%s'%s; known: %s", q, hint,
                       schedule_names());
    }
    if (shape->devices < 1)
        return mp_fail(err, MP_ERR_INPUT, "%s: pipeline devices (pp) must be at least 1, got %d",
                       name, shape->devices);
    if (shape->microbatches < 1)
        return mp_fail(err, MP_ERR_INPUT, "%s: microbatches must be at least 1, got %d",
                       name, shape->microbatches);
    int rc = kind->check ? kind->check(shape, err) : MP_OK;
    if (rc) return rc;
    /* The default layout; V and DualPipe generators re-init with their own. */
    pipe_program_init(prog, shape->devices, shape->devices, shape->microbatches, 1);
    rc = kind->generate(shape, prog, err);
    if (rc) pipe_program_release(prog);
    return rc;
}

/* ---- program lifecycle ---------------------------------------------------- */

void pipe_program_init(struct pipe_program *prog, int devices, int stages,
                       int microbatches, int paths)
{
    assert(devices >= 1 && stages >= 1 && microbatches >= 1 && paths >= 1);
    prog->devices = devices;
    prog->stages = stages;
    prog->microbatches = microbatches;
    prog->paths = paths;
    prog->path_of_mb = mp_xcalloc((size_t)microbatches, sizeof *prog->path_of_mb);
    prog->device_of = mp_xmalloc((size_t)paths * (size_t)stages * sizeof *prog->device_of);
    for (int q = 0; q < paths; q++)
        for (int s = 0; s < stages; s++) prog->device_of[q * stages + s] = s % devices;
    prog->ops = mp_xcalloc((size_t)devices, sizeof *prog->ops);
    prog->n_ops = mp_xcalloc((size_t)devices, sizeof *prog->n_ops);
    prog->cap_ops = mp_xcalloc((size_t)devices, sizeof *prog->cap_ops);
    /* Room for a forward and a fused backward of every microbatch on each
     * of the device's stages (1F1B's count; others grow from there), so
     * that pushing does not reallocate ~log2(2m) times per device. */
    int64_t per = 2LL * microbatches * ((stages + devices - 1) / devices);
    if (per > 1 << 20) per = 1 << 20;
    for (int d = 0; d < devices; d++) {
        prog->ops[d] = mp_xmalloc((size_t)per * sizeof *prog->ops[d]);
        prog->cap_ops[d] = (int)per;
    }
}

void pipe_program_release(struct pipe_program *prog)
{
    if (prog->ops)
        for (int d = 0; d < prog->devices; d++) free(prog->ops[d]);
    free(prog->ops);
    free(prog->n_ops);
    free(prog->cap_ops);
    free(prog->path_of_mb);
    free(prog->device_of);
    /* Zeroed so that releasing twice, or after a failed build, is harmless. */
    memset(prog, 0, sizeof *prog);
}

/* ---- validation ------------------------------------------------------------ */

static const char *const op_names[] = {"F", "B", "W", "BW", "FB"};

/* "F(mb 3, stage 1)"; FB names both halves. */
static const char *op_str(const struct pipe_op *op, char *buf, size_t n)
{
    if (op->kind == PIPE_FB)
        snprintf(buf, n, "FB(F of mb %d stage %d, BW of mb %d stage %d)", (int)op->mb,
                 (int)op->stage, (int)op->mb2, (int)op->stage2);
    else if (op->kind <= PIPE_FB)
        snprintf(buf, n, "%s(mb %d, stage %d)", op_names[op->kind], (int)op->mb, (int)op->stage);
    else
        snprintf(buf, n, "op kind %d", (int)op->kind);
    return buf;
}

/* Per (mb, stage): where its passes sit, as device op indices (-1 = absent).
 * `back` is the op that carries the input-gradient (B, BW or FB). */
struct vslot {
    int f, back, w;
};

struct vstate {
    const struct pipe_program *prog;
    struct vslot *slot;     /* [mb * stages + stage] */
    char *fdone, *bdone;    /* completion flags for the deadlock run */
    int *pc;                /* [devices]: next op to run */
};

static int in_range(const struct pipe_program *prog, int mb, int stage)
{
    return mb >= 0 && mb < prog->microbatches && stage >= 0 && stage < prog->stages;
}

/* Record one pass of (mb, stage) found at ops[d][i]; catches duplicates and
 * ops placed on a device the path does not give. Inline: once per pass of
 * every program validated (9,216 for the 1T step's reduced one), where the
 * call and its frame were a third of the work. */
static inline __attribute__((always_inline)) int record(struct vstate *v, int d, int i, int kind, int mb, int stage, struct mp_error *err)
{
    const struct pipe_program *prog = v->prog;
    char buf[128];
    const struct pipe_op *op = &prog->ops[d][i];
    if (!in_range(prog, mb, stage))
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "device %d op %d %s: microbatch or stage out of range (%d microbatches, %d stages)",
                       d, i, op_str(op, buf, sizeof buf), prog->microbatches, prog->stages);
    int want = pipe_device(prog, mb, stage);
    if (want != d)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "device %d op %d %s: stage %d of microbatch %d belongs on device %d",
                       d, i, op_str(op, buf, sizeof buf), stage, mb, want);
    struct vslot *s = &v->slot[(size_t)mb * prog->stages + stage];
    int *where = kind == PIPE_F ? &s->f : kind == PIPE_W ? &s->w : &s->back;
    const char *what = kind == PIPE_F ? "forward" : kind == PIPE_W ? "weight-gradient"
                                                                   : "backward";
    if (*where >= 0)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "device %d op %d %s: duplicate %s of microbatch %d stage %d (first at op %d)",
                       d, i, op_str(op, buf, sizeof buf), what, mb, stage, *where);
    *where = i;
    if (kind == PIPE_B) s->w = s->w == -1 ? -2 : s->w; /* -2: a W is owed */
    if (kind == PIPE_W && s->back >= 0 && prog->ops[d][s->back].kind != PIPE_B)
        return mp_fail(err, MP_ERR_INFEASIBLE,
                       "device %d op %d %s: microbatch %d stage %d already has a fused backward",
                       d, i, op_str(op, buf, sizeof buf), mb, stage);
    return MP_OK;
}

/* Is the op at ops[d][pc] runnable given what has completed? On failure,
 * names the pass it waits for in `why` unless `why` is NULL (the run loop
 * asks often and only a deadlock report reads the reason: formatting it
 * every time cost ~5% of a 1T-GPT step). Inline, so the run loop's copy
 * (why NULL) has no formatting in it at all. */
static inline __attribute__((always_inline)) int ready(const struct vstate *v, const struct pipe_op *op, char *why, size_t n)
{
    const struct pipe_program *prog = v->prog;
    int S = prog->stages;
    int mb = op->mb, st = op->stage;
    switch (op->kind) {
    case PIPE_F:
    case PIPE_FB:
        if (st > 0 && !v->fdone[(size_t)mb * S + st - 1]) {
            if (why) snprintf(why, n, "F(mb %d, stage %d) on device %d", mb, st - 1,
                              pipe_device(prog, mb, st - 1));
            return 0;
        }
        if (op->kind == PIPE_F) return 1;
        mb = op->mb2, st = op->stage2; /* then its backward half, as below */
        if (st < S - 1 && !v->bdone[(size_t)mb * S + st + 1]) {
            if (why) snprintf(why, n, "B(mb %d, stage %d) on device %d", mb, st + 1,
                              pipe_device(prog, mb, st + 1));
            return 0;
        }
        return 1;
    case PIPE_B:
    case PIPE_BW:
        if (st < S - 1 && !v->bdone[(size_t)mb * S + st + 1]) {
            if (why) snprintf(why, n, "B(mb %d, stage %d) on device %d", mb, st + 1,
                              pipe_device(prog, mb, st + 1));
            return 0;
        }
        return 1; /* its own F is earlier on this device: checked before the run */
    case PIPE_W:
        return 1; /* its B is earlier on this device */
    }
    return 0;
}

static void complete(struct vstate *v, const struct pipe_op *op)
{
    int S = v->prog->stages;
    switch (op->kind) {
    case PIPE_F: v->fdone[(size_t)op->mb * S + op->stage] = 1; break;
    case PIPE_B:
    case PIPE_BW: v->bdone[(size_t)op->mb * S + op->stage] = 1; break;
    case PIPE_FB:
        v->fdone[(size_t)op->mb * S + op->stage] = 1;
        v->bdone[(size_t)op->mb2 * S + op->stage2] = 1;
        break;
    default: break;
    }
}

/* Run the devices in order under the cross-stage dependencies. Each op's
 * completion can only unblock the devices of the next stage (F) or of the
 * previous stage (B), so a work list of devices keeps this linear in ops. */
static int run_deadlock(struct vstate *v, struct mp_error *err)
{
    const struct pipe_program *prog = v->prog;
    int D = prog->devices;
    int *queue = mp_xmalloc((size_t)D * sizeof *queue);
    char *queued = mp_xcalloc((size_t)D, 1);
    int head = 0, count = 0;
    for (int d = 0; d < D; d++) queue[count++] = d, queued[d] = 1;
    char why[160];
    while (count > 0) {
        int d = queue[head];
        head = (head + 1) % D, count--, queued[d] = 0;
        while (v->pc[d] < prog->n_ops[d]) {
            const struct pipe_op *op = &prog->ops[d][v->pc[d]];
            if (!ready(v, op, NULL, 0)) break;
            complete(v, op);
            v->pc[d]++;
            /* Wake the neighbours this op may have unblocked. */
            int wake[4], nw = 0;
            if ((op->kind == PIPE_F || op->kind == PIPE_FB) && op->stage + 1 < prog->stages)
                wake[nw++] = pipe_device(prog, op->mb, op->stage + 1);
            if ((op->kind == PIPE_B || op->kind == PIPE_BW) && op->stage > 0)
                wake[nw++] = pipe_device(prog, op->mb, op->stage - 1);
            if (op->kind == PIPE_FB && op->stage2 > 0)
                wake[nw++] = pipe_device(prog, op->mb2, op->stage2 - 1);
            for (int k = 0; k < nw; k++) {
                int e = wake[k];
                if (e != d && !queued[e]) {
                    queue[(head + count) % D] = e, count++, queued[e] = 1;
                }
            }
        }
    }
    int rc = MP_OK;
    for (int d = 0; d < D && rc == MP_OK; d++) {
        if (v->pc[d] >= prog->n_ops[d]) continue;
        char buf[128];
        const struct pipe_op *op = &prog->ops[d][v->pc[d]];
        ready(v, op, why, sizeof why);
        rc = mp_fail(err, MP_ERR_INFEASIBLE,
                     "deadlock: device %d is stuck at op %d %s waiting for %s", d, v->pc[d],
                     op_str(op, buf, sizeof buf), why);
    }
    free(queue);
    free(queued);
    return rc;
}

int pipe_validate(const struct pipe_program *prog, struct mp_error *err)
{
    int S = prog->stages, M = prog->microbatches;
    size_t n = (size_t)M * (size_t)S;
    for (int mb = 0; mb < M; mb++)
        if (prog->path_of_mb[mb] < 0 || prog->path_of_mb[mb] >= prog->paths)
            return mp_fail(err, MP_ERR_INFEASIBLE, "microbatch %d has path %d of %d", mb,
                           prog->path_of_mb[mb], prog->paths);
    for (int i = 0; i < prog->paths * S; i++)
        if (prog->device_of[i] < 0 || prog->device_of[i] >= prog->devices)
            return mp_fail(err, MP_ERR_INFEASIBLE, "path %d stage %d is on device %d of %d",
                           i / S, i % S, prog->device_of[i], prog->devices);

    struct vstate v = {.prog = prog};
    v.slot = mp_xmalloc(n * sizeof *v.slot);
    for (size_t i = 0; i < n; i++) v.slot[i] = (struct vslot){-1, -1, -1};
    v.fdone = mp_xcalloc(n, 1);
    v.bdone = mp_xcalloc(n, 1);
    v.pc = mp_xcalloc((size_t)prog->devices, sizeof *v.pc);
    int rc = MP_OK;
    char buf[128];

    /* 1. Every pass on the right device, none twice. */
    for (int d = 0; d < prog->devices && rc == MP_OK; d++) {
        for (int i = 0; i < prog->n_ops[d] && rc == MP_OK; i++) {
            const struct pipe_op *op = &prog->ops[d][i];
            switch (op->kind) {
            case PIPE_F: case PIPE_B: case PIPE_W: case PIPE_BW:
                rc = record(&v, d, i, op->kind, op->mb, op->stage, err);
                break;
            case PIPE_FB:
                rc = record(&v, d, i, PIPE_F, op->mb, op->stage, err);
                if (rc == MP_OK) rc = record(&v, d, i, PIPE_BW, op->mb2, op->stage2, err);
                break;
            default:
                rc = mp_fail(err, MP_ERR_INFEASIBLE, "device %d op %d: unknown op kind %d", d,
                             i, (int)op->kind);
            }
        }
    }
    /* 2. None missing, and F before B before W on the device. */
    for (size_t i = 0; i < n && rc == MP_OK; i++) {
        int mb = (int)(i / (size_t)S), st = (int)(i % (size_t)S);
        const struct vslot *s = &v.slot[i];
        int dev = pipe_device(prog, mb, st);
        if (s->f < 0)
            rc = mp_fail(err, MP_ERR_INFEASIBLE, "device %d is missing F(mb %d, stage %d)", dev,
                         mb, st);
        else if (s->back < 0)
            rc = mp_fail(err, MP_ERR_INFEASIBLE,
                         "device %d is missing the backward (B, BW or FB) of mb %d, stage %d",
                         dev, mb, st);
        else if (s->w == -2)
            rc = mp_fail(err, MP_ERR_INFEASIBLE, "device %d is missing W(mb %d, stage %d)", dev,
                         mb, st);
        else if (s->w >= 0 && prog->ops[dev][s->back].kind != PIPE_B)
            rc = mp_fail(err, MP_ERR_INFEASIBLE,
                         "device %d has W(mb %d, stage %d) but its backward already includes W",
                         dev, mb, st);
        else if (s->back <= s->f)
            rc = mp_fail(err, MP_ERR_INFEASIBLE,
                         "device %d runs the backward of mb %d stage %d (op %d %s) before its F "
                         "(op %d)", dev, mb, st, s->back,
                         op_str(&prog->ops[dev][s->back], buf, sizeof buf), s->f);
        else if (s->w >= 0 && s->w <= s->back)
            rc = mp_fail(err, MP_ERR_INFEASIBLE,
                         "device %d runs W(mb %d, stage %d) at op %d before its B (op %d)", dev,
                         mb, st, s->w, s->back);
    }
    /* 3. No cross-device deadlock. */
    if (rc == MP_OK) rc = run_deadlock(&v, err);
    free(v.slot);
    free(v.fdone);
    free(v.bdone);
    free(v.pc);
    return rc;
}

/* ---- in-flight counting ------------------------------------------------------ */

void pipe_peak_inflight(const struct pipe_program *prog, int d, double w_weight,
                        int *mb_units, int *w_units)
{
    assert(d >= 0 && d < prog->devices);
    int b = 0, w = 0, best_b = 0, best_w = 0;
    double best = 0;
    for (int i = 0; i < prog->n_ops[d]; i++) {
        const struct pipe_op *op = &prog->ops[d][i];
        switch (op->kind) {
        case PIPE_F: b++; break;
        case PIPE_B: b--, w++; break;
        case PIPE_W: w--; break;
        case PIPE_BW: b--; break;
        case PIPE_FB:
            /* The overlapped forward allocates while the backward still holds
             * its stash: count the moment both are live. */
            b++;
            break;
        }
        double val = b + w_weight * w;
        if (val > best) best = val, best_b = b, best_w = w;
        if (op->kind == PIPE_FB) b--;
    }
    if (mb_units) *mb_units = best_b;
    if (w_units) *w_units = best_w;
}
