/* step_split.c — the step accounting; the definition is in step_split.h.
 *
 * One pass over the graph's edges finds, for every op, the constraint that
 * released it last (`bind`: its latest-ending predecessor or the op before
 * it on its stream). An idle interval of a stage's compute stream is then
 * charged by following `bind` back from the op that ended it, which costs
 * no more than the ops that ran inside the interval: O(ops + edges) for
 * the whole step. */
#include "step_split.h"

#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const char *const split_names[N_SPLIT] = {
    [SPLIT_COMPUTE] = "compute", [SPLIT_RECOMPUTE] = "recompute",
    [SPLIT_TP] = "exposed_tp", [SPLIT_CP] = "exposed_cp", [SPLIT_PP] = "exposed_pp",
    [SPLIT_DP] = "exposed_dp", [SPLIT_EP] = "exposed_ep", [SPLIT_BUBBLE] = "bubble",
    [SPLIT_OPTIMIZER] = "optimizer", [SPLIT_OTHER] = "other",
};

static const char *const split_labels[N_SPLIT] = {
    [SPLIT_COMPUTE] = "compute", [SPLIT_RECOMPUTE] = "recompute",
    [SPLIT_TP] = "exposed TP", [SPLIT_CP] = "exposed CP", [SPLIT_PP] = "exposed PP",
    [SPLIT_DP] = "exposed DP", [SPLIT_EP] = "exposed EP", [SPLIT_BUBBLE] = "bubble",
    [SPLIT_OPTIMIZER] = "optimizer", [SPLIT_OTHER] = "other",
};

const char *step_split_name(enum split_part p)
{
    return p < N_SPLIT ? split_names[p] : "?";
}

const char *step_split_label(enum split_part p)
{
    return p < N_SPLIT ? split_labels[p] : "?";
}

enum split_part step_split_of_comm(enum comm_kind k)
{
    switch (k) {
    case COMM_TP: return SPLIT_TP;
    case COMM_CP: return SPLIT_CP;
    case COMM_PP: return SPLIT_PP;
    case COMM_DP: return SPLIT_DP;
    case COMM_EP: return SPLIT_EP;
    default: return SPLIT_OTHER;
    }
}

mp_time step_split_total(const struct step_split *x)
{
    mp_time t = 0;
    for (int k = 0; k < N_SPLIT; k++) t += x->part[k];
    return t;
}

void step_split_mean(const struct step_split *stage, int n, mp_time step, struct step_split *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0) return;
    mp_time rem[N_SPLIT], sum = 0;
    for (int k = 0; k < N_SPLIT; k++) {
        /* The sum over stages could pass int64 (stages × step): keep it as
         * quotient and remainder of ÷ n instead, both exact. */
        mp_time q = 0, r = 0;
        for (int d = 0; d < n; d++) {
            q += stage[d].part[k] / n;
            r += stage[d].part[k] % n;
            q += r / n;
            r %= n;
        }
        out->part[k] = q;
        rem[k] = r;
        sum += q;
    }
    /* The floors fall short of `step` by less than N_SPLIT picoseconds: give
     * them to the parts with the largest remainders. */
    for (mp_time left = step - sum; left > 0; left--) {
        int best = -1;
        for (int k = 0; k < N_SPLIT; k++)
            if (rem[k] >= 0 && (best < 0 || rem[k] > rem[best])) best = k;
        if (best < 0) break;
        out->part[best]++;
        rem[best] = -1;
    }
}

/* ---- the walk ------------------------------------------------------------ */

struct walk {
    const struct sim *s;
    const struct taskgraph *g;
    const mp_time *start, *end;
    int32_t *bind;      /* [n_ops]: the constraint that released the op last, -1 none */
    int block;          /* chips per stage: tp × cp × dp (stage d holds d·block ...) */
    step_split_fn fn;
    void *ctx;
};

static void walk_init(struct walk *w, const struct sim *s)
{
    const struct taskgraph *g = &s->g;
    w->s = s;
    w->g = g;
    w->start = s->e.start;
    w->end = s->e.end;
    /* A stage's chips: its TP × CP × DP ranks (context parallelism's ranks
     * sit between TP's and DP's in the chip order, context.h). */
    w->block = s->cfg.parallel.tp * s->cfg.parallel.cp * s->cfg.parallel.dp;
    w->fn = NULL;
    w->ctx = NULL;
    w->bind = mp_xmalloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *w->bind);
    for (int i = 0; i < g->n_ops; i++) w->bind[i] = -1;
    /* Dependencies, then the op before on the same stream; the later end
     * wins, the first seen on a tie (the graph's order: deterministic). */
    for (int k = 0; k < g->n_edges; k++) {
        int u = g->edge_from[k], v = g->edge_to[k];
        if (w->bind[v] < 0 || w->end[u] > w->end[w->bind[v]]) w->bind[v] = u;
    }
    for (int st = 0; st < g->n_chips * N_STREAMS; st++)
        for (int i = g->stream_off[st] + 1; i < g->stream_off[st + 1]; i++) {
            int u = g->stream_ops[i - 1], v = g->stream_ops[i];
            if (w->bind[v] < 0 || w->end[u] > w->end[w->bind[v]]) w->bind[v] = u;
        }
}

static void walk_release(struct walk *w)
{
    free(w->bind);
    w->bind = NULL;
}

/* What an op means to stage `d` when the stage's compute stream waits on it. */
enum verdict { V_STOP, V_THROUGH, V_PART, V_FOREIGN };

static bool in_block(const struct walk *w, int d, int chip)
{
    int c0 = w->s->chip_of_device[d];
    return chip >= c0 && chip < c0 + w->block;
}

static enum verdict classify(const struct walk *w, int d, int id, enum split_part *part)
{
    const struct op *o = &w->g->ops[id];
    bool zero = w->end[id] == w->start[id];
    int lane = w->s->chip_of_device[d];
    if (in_block(w, d, o->chip)) {
        if (o->stream == STREAM_COMPUTE) {
            if (zero) return V_THROUGH;
            if (o->chip == lane) return V_STOP;
            *part = SPLIT_OTHER; /* another EP rank's expert GEMMs */
            return V_PART;
        }
        if (o->comm == COMM_NONE && zero) return V_THROUGH;
        *part = step_split_of_comm((enum comm_kind)o->comm);
        return V_PART;
    }
    /* A hand-off from another stage to this one. */
    if (o->tag == TAG_SEND && o->comm == COMM_PP && w->g->succ_off[id] < w->g->succ_off[id + 1] &&
        in_block(w, d, w->g->ops[w->g->succ[w->g->succ_off[id]]].chip)) {
        *part = SPLIT_PP;
        return V_PART;
    }
    return V_FOREIGN;
}

static void charge(struct walk *w, struct step_split *x, int d, enum split_part p, mp_time a,
                   mp_time b)
{
    if (b <= a) return;
    x->part[p] += b - a;
    if (w->fn) w->fn(w->ctx, d, a, b, p);
}

/* Charge the idle interval [a, t): `y` is the op whose end released the
 * wait (at or before t); [end(y), t) is charged to `pending`, the part of
 * the op y released (which queued for a link that long), or bubble. */
static void walk_back(struct walk *w, struct step_split *x, int d, mp_time a, mp_time t, int y,
                      enum split_part pending)
{
    while (t > a) {
        if (y < 0) {
            charge(w, x, d, SPLIT_BUBBLE, a, t);
            return;
        }
        mp_time ye = w->end[y];
        if (ye < t) {
            mp_time lo = ye > a ? ye : a;
            charge(w, x, d, pending, lo, t);
            t = lo;
            if (t <= a) return;
        }
        enum split_part part = SPLIT_OTHER;
        switch (classify(w, d, y, &part)) {
        case V_FOREIGN:
            charge(w, x, d, SPLIT_BUBBLE, a, t);
            return;
        case V_STOP:
            /* The stage's own compute ended the wait's start: nothing left
             * unless the times disagree, which they cannot. */
            charge(w, x, d, SPLIT_BUBBLE, a, t);
            return;
        case V_THROUGH:
            pending = SPLIT_BUBBLE;
            break;
        case V_PART: {
            mp_time lo = w->start[y] > a ? w->start[y] : a;
            charge(w, x, d, part, lo, t);
            t = lo;
            pending = part;
            break;
        }
        }
        y = w->bind[y];
    }
}

/* The split of stage `d` over [0, step). */
static void walk_device(struct walk *w, int d, struct step_split *x)
{
    const struct sim *s = w->s;
    const struct taskgraph *g = w->g;
    mp_time step = s->res.step_time;
    int lane = s->chip_of_device[d];
    memset(x, 0, sizeof *x);
    int cs = lane * N_STREAMS + STREAM_COMPUTE;
    mp_time prev_end = 0;
    for (int i = g->stream_off[cs]; i < g->stream_off[cs + 1]; i++) {
        int id = g->stream_ops[i];
        const struct op *o = &g->ops[id];
        mp_time a = w->start[id], b = w->end[id];
        if (b <= a) continue;
        if (a > prev_end) walk_back(w, x, d, prev_end, a, w->bind[id], SPLIT_BUBBLE);
        switch (o->tag) {
        case TAG_F: case TAG_B: case TAG_W: case TAG_BW: case TAG_FB: {
            mp_time rc = 0;
            if (o->tag != TAG_F && o->tag != TAG_W && o->stage >= 0 && o->stage < s->prog.stages) {
                const struct stage_cost *c = &s->stage_cost[o->stage];
                mp_time den = o->tag == TAG_B ? c->t_b
                              : o->tag == TAG_BW ? c->t_b + c->t_w : c->t_f + c->t_b + c->t_w;
                /* Exact in 128 bits and at most b - a, so it fits an
                 * mp_time: no double, nothing for the checked path to do. */
                if (c->t_rc > 0 && den > 0) {
                    __int128 part = (__int128)(b - a) * (c->t_rc < den ? c->t_rc : den) / den;
                    rc = (int64_t)part;
                }
            }
            charge(w, x, d, SPLIT_RECOMPUTE, a, a + rc);
            charge(w, x, d, SPLIT_COMPUTE, a + rc, b);
            break;
        }
        case TAG_OPTIMIZER:
            charge(w, x, d, SPLIT_OPTIMIZER, a, b);
            break;
        default:
            charge(w, x, d, SPLIT_OTHER, a, b);
            break;
        }
        prev_end = b;
    }
    /* The tail: back from the stage's last op of any kind; after it, the
     * stage only waits for the others to finish the step. */
    int last = -1;
    int c0 = s->chip_of_device[d];
    for (int c = c0; c < c0 + w->block && c < g->n_chips; c++)
        for (int k = 0; k < N_STREAMS; k++) {
            int st = c * N_STREAMS + k;
            if (g->stream_off[st] == g->stream_off[st + 1]) continue;
            int id = g->stream_ops[g->stream_off[st + 1] - 1]; /* a stream's last ends last */
            if (last < 0 || w->end[id] > w->end[last]) last = id;
        }
    if (step > prev_end) walk_back(w, x, d, prev_end, step, last, SPLIT_BUBBLE);
}

void step_split_fold(struct sim *s)
{
    struct sim_result *r = &s->res;
    struct walk w;
    walk_init(&w, s);
    struct step_split *all = mp_xcalloc((size_t)(r->stages ? r->stages : 1), sizeof *all);
    for (int d = 0; d < r->stages; d++) {
        walk_device(&w, d, &r->stage[d].split);
        all[d] = r->stage[d].split;
    }
    step_split_mean(all, r->stages, r->step_time, &r->split);
    free(all);
    walk_release(&w);
}

void step_split_intervals(const struct sim *s, step_split_fn fn, void *ctx)
{
    struct walk w;
    walk_init(&w, s);
    w.fn = fn;
    w.ctx = ctx;
    for (int d = 0; d < s->res.stages; d++) {
        struct step_split x;
        walk_device(&w, d, &x);
    }
    walk_release(&w);
}
