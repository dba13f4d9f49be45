/* step_split.c — the step accounting; the definition is in step_split.h.
 *
 * One pass over the graph's edges finds, for every op, the constraint that
 * released it last (`bind`: its latest-ending predecessor or the op before
 * it on its stream). An idle interval of a stage's compute stream is then
 * charged by following `bind` back from the op that ended it, which costs
 * no more than the ops that ran inside the interval: O(ops + edges) for
 * the whole step.
 *
 * A run with steady-state periods left out (sim/engine/skip.c) is read as
 * the step simulated in full: ops are engine_fop's (a graph op, some
 * periods ahead), times shifted by engine_fop_shift, and the constraint
 * that released an op in the left-out periods or after them found among
 * its full-step predecessors (engine_fop_pred, engine_fop_prev), in the
 * graph's edge order as above. The graph repeats with the state, so this
 * is the walk over the full step's graph (tests/check_steady.c compares
 * the two on every shipped scenario and random layouts). */
#include "step_split.h"

#include <stdlib.h>
#include <string.h>

#include "sim.h"

static const char *const split_names[N_SPLIT] = {
    [SPLIT_COMPUTE] = "compute", [SPLIT_RECOMPUTE] = "recompute",
    [SPLIT_TP] = "exposed_tp", [SPLIT_CP] = "exposed_cp", [SPLIT_PP] = "exposed_pp",
    [SPLIT_DP] = "exposed_dp", [SPLIT_EP] = "exposed_ep", [SPLIT_HOST] = "exposed_host",
    [SPLIT_BUBBLE] = "bubble", [SPLIT_OPTIMIZER] = "optimizer", [SPLIT_OTHER] = "other",
};

static const char *const split_labels[N_SPLIT] = {
    [SPLIT_COMPUTE] = "compute", [SPLIT_RECOMPUTE] = "recompute",
    [SPLIT_TP] = "exposed TP", [SPLIT_CP] = "exposed CP", [SPLIT_PP] = "exposed PP",
    [SPLIT_DP] = "exposed DP", [SPLIT_EP] = "exposed EP", [SPLIT_HOST] = "exposed host",
    [SPLIT_BUBBLE] = "bubble", [SPLIT_OPTIMIZER] = "optimizer", [SPLIT_OTHER] = "other",
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
    case COMM_HOST: return SPLIT_HOST;
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

typedef struct engine_fop fop;

struct walk {
    const struct sim *s;
    const struct taskgraph *g;
    const struct engine *e;
    const mp_time *start, *end;
    int32_t *bind;      /* [n_ops]: the constraint that released the op last, -1 none */
    bool view;          /* periods were left out: read the full step (above) */
    int32_t *pred_off, *pred; /* with `view`: CSR in-edges in edge order */
    /* With `view`: after[id] (engine_after_jump), and same[id] = 1 for an op
     * after the jump whose predecessors and stream predecessor are after it
     * too: in the full step they are the same graph ops, the same periods
     * ahead, with the same recorded times, so its `bind` there is the
     * graph's bind[id] (the same edges in the same order). */
    const uint8_t *after;
    uint8_t *same;
    int64_t ahead;      /* with `view`: the periods an op after the jump is ahead */
    int block;          /* chips per stage: tp × cp × dp (stage d holds d·block ...) */
    int c0;             /* the walked stage's first chip, its lane (walk_device) */
    /* While walking the j-th repetition of the left-out periods
     * (walk_device, probe_note): whether an op the walk looked at lies past
     * what the repetitions after it can translate (`probe_fail`), and how
     * many repetitions short of them it reached back (`probe_short`). */
    bool probing, probe_fail;
    int64_t probe_j, probe_short;
    step_split_fn fn;
    void *ctx;
};

/* Ops after the jump have their times recorded as the full step's. */
static mp_time f_start(const struct walk *w, fop f)
{
    return w->start[f.id] + (f.ahead && !w->after[f.id] ? engine_fop_shift(w->e, f) : 0);
}

static mp_time f_end(const struct walk *w, fop f)
{
    return w->end[f.id] + (f.ahead && !w->after[f.id] ? engine_fop_shift(w->e, f) : 0);
}

static void walk_init(struct walk *w, const struct sim *s)
{
    const struct taskgraph *g = &s->g;
    w->s = s;
    w->g = g;
    w->e = &s->e;
    w->start = s->e.start;
    w->end = s->e.end;
    /* A stage's chips: its TP × CP × DP ranks (context parallelism's ranks
     * sit between TP's and DP's in the chip order, context.h). */
    w->block = s->cfg.parallel.tp * s->cfg.parallel.cp * s->cfg.parallel.dp;
    w->fn = NULL;
    w->c0 = 0;
    w->probing = w->probe_fail = false;
    w->ctx = NULL;
    w->bind = mp_xmalloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *w->bind);
    w->view = engine_skipped_periods(&s->e) > 0;
    w->pred_off = w->pred = NULL;
    w->after = engine_after_jump(&s->e);
    w->same = NULL;
    w->ahead = engine_skipped_periods(&s->e);
    if (w->view) {
        w->same = mp_xmalloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *w->same);
        memcpy(w->same, w->after, (size_t)g->n_ops * sizeof *w->same);
        /* The graph's n_deps counts each op's in-edges: pred_off[v] starts
         * as the end of v's list, and the edge pass below (last to first)
         * walks each back to its start, so no count pass and no copy. */
        w->pred_off = mp_xmalloc(((size_t)g->n_ops + 1) * sizeof *w->pred_off);
        int32_t run = 0;
        for (int i = 0; i < g->n_ops; i++) w->pred_off[i] = run += g->n_deps[i];
        w->pred_off[g->n_ops] = run;
        w->pred = mp_xmalloc((size_t)(g->n_edges ? g->n_edges : 1) * sizeof *w->pred);
    }
    /* The latest-ending of an op's dependencies and the op before it on
     * its stream; on a tie the first dependency in the graph's edge order,
     * and the stream's op only when it ends strictly later than every
     * dependency (deterministic). Read as a running maximum: `bind` starts
     * as the stream's op (-1 for a stream's first: every op is on one
     * stream, so this pass sets every op's), then the edges, last to
     * first, take it over with a later end or an equal one, which leaves
     * the first edge of the latest end unless the stream's op ends later.
     * Last to first also fills each op's predecessor list from its end (in
     * edge order, above). The same two passes set `same` (each edge's
     * terms are its own: fused, they come out as they did apart). */
    /* In locals: `same` is bytes, and a store through a byte pointer could
     * be any of *w's fields, which the compiler would then load again. */
    int32_t *bind = w->bind, *pred = w->pred, *pred_off = w->pred_off;
    const mp_time *end = w->end;
    const uint8_t *after = w->after;
    uint8_t *same = w->same;
    bool view = w->view;
    const int32_t *stream_ops = g->stream_ops, *stream_off = g->stream_off;
    const int32_t *edge_from = g->edge_from, *edge_to = g->edge_to;
    int n_streams = g->n_chips * N_STREAMS;
    for (int st = 0; st < n_streams; st++) {
        int i0 = stream_off[st], i1 = stream_off[st + 1];
        if (i0 == i1) continue;
        bind[stream_ops[i0]] = -1;
        for (int i = i0 + 1; i < i1; i++) bind[stream_ops[i]] = stream_ops[i - 1];
        if (view) {
            /* The first op after the jump follows a copy on its stream:
             * the op at the jump's position (those after it are after it
             * too, engine.h). */
            int64_t at;
            int len;
            engine_stream_period(w->e, st, &at, &len);
            if (at > 0 && at < i1 - i0) same[stream_ops[i0 + at]] = 0;
        }
    }
    if (view) {
        for (int k = g->n_edges - 1; k >= 0; k--) {
            int u = edge_from[k], v = edge_to[k];
            if (bind[v] < 0 || end[u] >= end[bind[v]]) bind[v] = u;
            if (!after[u]) same[v] = 0;
            pred[--pred_off[v]] = u;
        }
    } else {
        for (int k = g->n_edges - 1; k >= 0; k--) {
            int u = edge_from[k], v = edge_to[k];
            if (bind[v] < 0 || end[u] >= end[bind[v]]) bind[v] = u;
        }
    }
}

static void walk_release(struct walk *w)
{
    free(w->same);
    w->same = NULL;
    free(w->bind);
    free(w->pred_off);
    free(w->pred);
    w->bind = w->pred_off = w->pred = NULL;
}

/* Probing: op `f` was looked at by the walk from an op of the j-th of the R
 * repetitions of the left-out periods, for a wait that began at `a`. The
 * repetitions are copies: on every stream, positions at − len .. at + R·len
 * − 1 (engine_stream_period) are the same ops with every time one Δ later
 * per len positions. So the walk from the k-th repetition (j < k < R) is
 * the walk from the j-th, len·(k − j) positions and (k − j)·Δ on, if every
 * op it looks at stays among them when moved that far: at − len ≤ position
 * < at + (j + 1)·len. One looked at and passed over because it ended by
 * `a` (a backward's forward, many periods earlier) may lie before: it is
 * passed over again, k − j repetitions on, if the op that far on ends by
 * a + (k − j)·Δ, which is checked up to the first such op among the
 * copies (from there both move by Δ). Any other op before says how many
 * repetitions later a probe could hold (probe_short); one after, or on a
 * stream that does not repeat, fails the probe. */
static void probe_note(struct walk *w, fop f, mp_time a)
{
    if (!w->probing || w->probe_fail || f.id < 0) return;
    const struct op *o = &w->g->ops[f.id];
    int st = o->chip * N_STREAMS + o->stream;
    int64_t at;
    int len;
    engine_stream_period(w->e, st, &at, &len);
    int64_t q = engine_fop_pos(w->e, f);
    if (len <= 0 || q >= at + (w->probe_j + 1) * (int64_t)len) {
        w->probe_fail = true;
        return;
    }
    if (q >= at - len) return;
    if (f_end(w, f) <= a) {
        mp_time delta = engine_period(w->e);
        bool ok = true;
        for (int64_t k = 1; ok; k++) {
            int64_t qk = q + k * len;
            ok = f_end(w, engine_full_op(w->e, st, qk)) <= a + k * delta;
            if (qk >= at - len) break;
        }
        if (ok) return;
    }
    int64_t short_by = (at - len - q + len - 1) / len;
    if (short_by > w->probe_short) w->probe_short = short_by;
}

/* bind_of's walk over the full step's predecessors (below). Out of line:
 * most calls take bind_of's first answers, and with this inlined in it
 * every call paid this path's register saves (~18 instructions a call of
 * the 1T step's ~129 K). */
static fop __attribute__((noinline)) bind_walk(struct walk *w, fop f, mp_time a)
{
    fop best = { -1, 0 };
    mp_time best_end = 0;
    for (int k = w->pred_off[f.id]; k < w->pred_off[f.id + 1]; k++) {
        fop u = engine_fop_pred(w->e, f, w->pred[k]);
        probe_note(w, u, a);
        mp_time t = f_end(w, u);
        if (best.id < 0 || t > best_end) best = u, best_end = t;
    }
    fop prev = engine_fop_prev(w->e, f);
    probe_note(w, prev, a);
    if (prev.id >= 0 && (best.id < 0 || f_end(w, prev) > best_end)) best = prev;
    return best;
}

/* `bind` of an op of the full step. An op not ahead is one the run
 * simulated before its jump, with its predecessors: the graph's own (but
 * a probe looks at each; `a`: where the wait being walked began). */
static inline fop bind_of(struct walk *w, fop f, mp_time a)
{
    if (f.id < 0) return f;
    if (f.ahead == 0 && !w->probing) return (fop){ w->bind[f.id], 0 };
    if (!w->probing && f.ahead == w->ahead && w->same[f.id])
        return w->bind[f.id] < 0 ? (fop){ -1, 0 } : (fop){ w->bind[f.id], w->ahead };
    return bind_walk(w, f, a);
}

/* What an op means to stage `d` when the stage's compute stream waits on it. */
enum verdict { V_STOP, V_THROUGH, V_PART, V_FOREIGN };

/* Whether `chip` is one of the walked stage's (w->c0: stage d's first). */
static bool in_block(const struct walk *w, int chip)
{
    return chip >= w->c0 && chip < w->c0 + w->block;
}

static inline enum verdict classify(const struct walk *w, int id, enum split_part *part)
{
    const struct op *o = &w->g->ops[id];
    bool zero = w->end[id] == w->start[id];
    int lane = w->c0;
    if (in_block(w, o->chip)) {
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
        in_block(w, w->g->ops[w->g->succ[w->g->succ_off[id]]].chip)) {
        *part = SPLIT_PP;
        return V_PART;
    }
    return V_FOREIGN;
}

/* `intervals`: w->fn is set (step_split_intervals). A constant at every
 * call, so the fold's walk (step_split_fold: no fn) has no test of it in
 * its ~200 K charges. */
static inline __attribute__((always_inline)) void charge(struct walk *w, struct step_split *x,
                                                         int d, enum split_part p, mp_time a,
                                                         mp_time b, bool intervals)
{
    if (b <= a) return;
    x->part[p] += b - a;
    if (intervals) w->fn(w->ctx, d, a, b, p);
}

/* Charge the idle interval [a, t): `y` is the op whose end released the
 * wait (at or before t); [end(y), t) is charged to `pending`, the part of
 * the op y released (which queued for a link that long), or bubble. */
/* Inline in walk_device: one call per idle gap (~65 K in the 1T step),
 * whose saves and eight arguments cost a fifth of the walk itself. */
static inline __attribute__((always_inline)) void walk_back(struct walk *w, struct step_split *x,
                                                            int d, mp_time a, mp_time t, fop y,
                                                            enum split_part pending, bool intervals)
{
    while (t > a) {
        if (y.id < 0) {
            charge(w, x, d, SPLIT_BUBBLE, a, t, intervals);
            return;
        }
        mp_time ye = f_end(w, y);
        if (ye < t) {
            mp_time lo = ye > a ? ye : a;
            charge(w, x, d, pending, lo, t, intervals);
            t = lo;
            if (t <= a) return;
        }
        enum split_part part = SPLIT_OTHER;
        switch (classify(w, y.id, &part)) {
        case V_FOREIGN:
            charge(w, x, d, SPLIT_BUBBLE, a, t, intervals);
            return;
        case V_STOP:
            /* The stage's own compute ended the wait's start: nothing left
             * unless the times disagree, which they cannot. */
            charge(w, x, d, SPLIT_BUBBLE, a, t, intervals);
            return;
        case V_THROUGH:
            pending = SPLIT_BUBBLE;
            break;
        case V_PART: {
            mp_time ys = f_start(w, y);
            mp_time lo = ys > a ? ys : a;
            charge(w, x, d, part, lo, t, intervals);
            t = lo;
            pending = part;
            break;
        }
        }
        /* Once the wait is all charged, the op that released y matters
         * only to a probe (probe_note, through bind_of). */
        if (t > a || w->probing) y = bind_of(w, y, a);
    }
}

/* The recompute share of a backward compute op lasting `dur`
 * (step_split.h): its stage's t_rc share, floored. A stage's passes are a
 * few segment times over and over, so the shares are kept, each in the
 * slot of its time's hash, for the walk of one stage: the 1T step asks
 * 43,404 times and divides 726 (a 128-bit division each, ~50 instructions
 * with its set-up). */
#define RC_MEMO_BITS 6
struct rc_memo {
    mp_time dur[1 << RC_MEMO_BITS], rc[1 << RC_MEMO_BITS];
    int32_t stage[1 << RC_MEMO_BITS];
    uint8_t tag[1 << RC_MEMO_BITS];
};

static unsigned rc_slot(const struct op *o, mp_time dur)
{
    return (unsigned)(((uint64_t)dur * 0x9e3779b97f4a7c15u) >> (64 - RC_MEMO_BITS)) ^
           (o->tag & ((1u << RC_MEMO_BITS) - 1));
}

/* The share itself, into its slot. Out of line: the walk finds nearly
 * every one in the memo. */
static mp_time __attribute__((noinline)) recompute_fill(const struct sim *s, struct rc_memo *m,
                                                        const struct op *o, mp_time dur)
{
    mp_time rc = 0;
    if (o->tag != TAG_F && o->tag != TAG_W && o->stage >= 0 && o->stage < s->prog.stages) {
        const struct stage_cost *c = &s->stage_cost[o->stage];
        mp_time den = o->tag == TAG_B ? c->t_b
                      : o->tag == TAG_BW ? c->t_b + c->t_w : c->t_f + c->t_b + c->t_w;
        /* Exact in 128 bits and at most dur, so it fits an mp_time: no
         * double, nothing for the checked path to do. */
        if (c->t_rc > 0 && den > 0) {
            __int128 part = (__int128)dur * (c->t_rc < den ? c->t_rc : den) / den;
            rc = (int64_t)part;
        }
    }
    unsigned h = rc_slot(o, dur);
    m->dur[h] = dur;
    m->stage[h] = o->stage;
    m->tag[h] = o->tag;
    m->rc[h] = rc;
    return rc;
}

static inline mp_time recompute_share(const struct sim *s, struct rc_memo *m, const struct op *o,
                                      mp_time dur)
{
    unsigned h = rc_slot(o, dur);
    if (m->dur[h] == dur && m->stage[h] == o->stage && m->tag[h] == o->tag) return m->rc[h];
    return recompute_fill(s, m, o, dur);
}

/* The split of stage `d` over [0, step). Inline in the two walks below
 * with `intervals` a constant (charge). */
static inline __attribute__((always_inline)) void walk_device_as(struct walk *w, int d,
                                                                 struct step_split *x,
                                                                 bool intervals)
{
    const struct sim *s = w->s;
    const struct taskgraph *g = w->g;
    mp_time step = s->res.step_time;
    int lane = s->chip_of_device[d];
    w->c0 = lane;
    memset(x, 0, sizeof *x);
    int cs = lane * N_STREAMS + STREAM_COMPUTE;
    mp_time prev_end = 0;
    int64_t n = engine_stream_len(w->e, cs), at = 0, R;
    int len = 0;
    /* R repetitions of the left-out periods at positions at + (k − 1)·len,
     * k = 1 .. R: walk them from the first until a probe of the j-th holds
     * (probe_note, from j = 2), then count the j-th for the (j+1)-th ..
     * (R − 1)-th and walk the last. */
    R = w->view && !intervals ? engine_stream_period(w->e, cs, &at, &len) : 0;
    /* Positions before the jump are the graph's own ops, and those past
     * the left-out periods the graph's own from the jump on, w->ahead
     * periods ahead (engine.h): read here without engine_full_op's call
     * (one per compute op walked); only the copies in between ask it. */
    int64_t jump = n, copies_end = n, copies_len = 0;
    if (w->view) {
        int64_t jat;
        int jlen;
        int64_t reps = engine_stream_period(w->e, cs, &jat, &jlen);
        jump = jat;
        copies_len = reps * jlen;
        copies_end = jat + copies_len;
    }
    const int32_t *own = g->stream_ops + g->stream_off[cs];
    int64_t j = 2;
    struct step_split before;
    memset(&before, 0, sizeof before);
    struct rc_memo rcm;
    for (int k = 0; k < 1 << RC_MEMO_BITS; k++) rcm.dur[k] = -1;
    /* The next position at which a probe starts or ends (-1: none): the
     * loop's one test of them per op. */
    int64_t mark = len > 0 && j + 2 <= R ? at + (j - 1) * len : -1;
    for (int64_t i = 0; i < n; i++) {
        if (i == mark) {
            if (len > 0 && j + 2 <= R && i == at + (j - 1) * len) {
                before = *x;
                w->probing = true;
                w->probe_fail = false;
                w->probe_j = j;
                w->probe_short = 0;
            } else if (w->probing && i == at + j * len) {
                w->probing = false;
                if (!w->probe_fail && w->probe_short == 0) {
                    for (int k = 0; k < N_SPLIT; k++)
                        x->part[k] += (R - j - 1) * (x->part[k] - before.part[k]);
                    prev_end += (R - j - 1) * engine_period(w->e);
                    i = at + (R - 1) * len;
                    j = R; /* no more probes */
                } else {
                    j = w->probe_fail ? R : j + w->probe_short;
                    if (j + 2 <= R && i == at + (j - 1) * len) { /* the next copy: probe it now */
                        before = *x;
                        w->probing = true;
                        w->probe_fail = false;
                        w->probe_j = j;
                        w->probe_short = 0;
                    }
                }
            }
            /* A probe's start is passed once i is past it (i only grows). */
            mark = w->probing ? at + j * len : len > 0 && j + 2 <= R ? at + (j - 1) * len : -1;
        }
        fop f = i < jump ? (fop){ own[i], 0 }
                : i >= copies_end ? (fop){ own[i - copies_len], w->ahead }
                                  : engine_full_op(w->e, cs, i);
        const struct op *o = &g->ops[f.id];
        mp_time a = f_start(w, f), b = f_end(w, f);
        if (b <= a) continue;
        if (a > prev_end)
            walk_back(w, x, d, prev_end, a, bind_of(w, f, prev_end), SPLIT_BUBBLE, intervals);
        switch (o->tag) {
        case TAG_F: case TAG_B: case TAG_W: case TAG_BW: case TAG_FB: {
            mp_time rc = o->tag == TAG_F || o->tag == TAG_W ? 0 : recompute_share(s, &rcm, o, b - a);
            charge(w, x, d, SPLIT_RECOMPUTE, a, a + rc, intervals);
            charge(w, x, d, SPLIT_COMPUTE, a + rc, b, intervals);
            break;
        }
        case TAG_OPTIMIZER:
            charge(w, x, d, SPLIT_OPTIMIZER, a, b, intervals);
            break;
        default:
            charge(w, x, d, SPLIT_OTHER, a, b, intervals);
            break;
        }
        prev_end = b;
    }
    /* The tail: back from the stage's last op of any kind; after it, the
     * stage only waits for the others to finish the step. */
    fop last = { -1, 0 };
    int c0 = s->chip_of_device[d];
    for (int c = c0; c < c0 + w->block && c < g->n_chips; c++)
        for (int k = 0; k < N_STREAMS; k++) {
            int st = c * N_STREAMS + k;
            /* A stream the graph leaves empty has no periods either. */
            if (g->stream_off[st + 1] == g->stream_off[st]) continue;
            int64_t len = engine_stream_len(w->e, st);
            fop f = engine_full_op(w->e, st, len - 1); /* a stream's last ends last */
            if (last.id < 0 || f_end(w, f) > f_end(w, last)) last = f;
        }
    if (step > prev_end) walk_back(w, x, d, prev_end, step, last, SPLIT_BUBBLE, intervals);
}

static void walk_device(struct walk *w, int d, struct step_split *x)
{
    walk_device_as(w, d, x, false);
}

static void walk_device_intervals(struct walk *w, int d, struct step_split *x)
{
    walk_device_as(w, d, x, true);
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
        walk_device_intervals(&w, d, &x);
    }
    walk_release(&w);
}
