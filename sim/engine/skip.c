/* skip.c — steady-state skipping: snapshots of the engine's state, the test
 * that two of them a period apart agree, the jump, and the view of the step
 * as simulated in full (engine.h explains the idea; taskgraph.h's struct
 * tg_period what a builder declares).
 *
 * Why two agreeing snapshots are enough. The engine is deterministic: what
 * it does next depends only on the ops not yet ended, the dependencies they
 * still wait for, the streams, the links, the memory in use and the events
 * pending (with their order). Ops on a stream start in stream order, so the
 * ops started are each stream's positions below `next`, and the dependencies
 * still awaited follow from which of them have ended — the pending events
 * say which have not. So when snapshot B (a period after A) has every
 * stream one period further on, the same events pending at the same times
 * relative to the snapshot in the same order, the same holders and queues
 * on every link and the same bytes in use on every chip, and the graph
 * repeats over the window (checked op by op in skip_init), the engine will
 * do from B exactly what it did from A, a period later, and so again from
 * there: the state is periodic, and K more periods can be put in by
 * shifting everything after them by K·Δ. Memory is compared bit for bit,
 * so peaks and their breakdowns come out the same as in the full run.
 *
 * Only the positions on streams are compared, never op identities: an op
 * stands for a different microbatch one period later, which the engine does
 * not need to know. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#define NONE (-1)

enum { EV_RELEASE = 1, EV_END = 2 }; /* as in engine.c */

struct pend {
    mp_time rel;        /* event time − snapshot time */
    uint32_t seq;       /* queue order among equal times */
    int32_t stream;     /* active-stream index */
    int32_t back;       /* next[stream] − the op's position */
    int32_t what;       /* EV_RELEASE, EV_END or both */
};

struct snapshot {
    mp_time t;
    int32_t *next;          /* [active streams] */
    int32_t *xnext;         /* the same as a run without chains (engine.c) would have it */
    uint8_t *busy;
    struct pend *ev;
    int n_ev, cap_ev;
    int32_t *holder;        /* [active links]: the holder's active-stream index, or NONE */
    int32_t *holder_back;   /* next[that stream] − the holder's position */
    int32_t *q_off;         /* [active links + 1] into q */
    int32_t *q;             /* (stream, back) pairs */
    int n_q, cap_q;
    double *mem;            /* [active chips × N_MEM_CATS] */
    int n_mem_log;
};

struct engine_skip {
    const struct tg_period *p;
    int n_streams;              /* chips × N_STREAMS */
    int n_act;
    int32_t *act;               /* streams with ops */
    int32_t *act_of;            /* [streams]: index in act, or NONE */
    int n_links;
    int32_t *links;             /* links on some route */
    int32_t *link_of;           /* [g->n_links]: index in links, or NONE */
    int n_chips;
    int32_t *chips;             /* chips with ops or static memory */
    const int32_t *pos;         /* [ops]: position on its stream (the graph's) */
    uint32_t *seq_rel, *seq_end;/* [ops]: queue handles of its events */
    int32_t *oldest;            /* [active]: no op below it is in flight */
    int watch;                  /* op whose end takes the next snapshot; NONE */
    int64_t watch_pos;
    struct snapshot snap[3];
    int taken;
    bool failed, jumped;
    int64_t periods;            /* declared periods put back (the builder's `elided`) */
    int r;                      /* they repeat every r declared periods (1 or 2) */
    mp_time delta;              /* the time of r periods */
    int32_t *at;                /* [streams]: next op at the jump */
    uint8_t *after;             /* [ops]: 1 at or after the jump on its stream */
    int log_a, log_b;           /* memory log length at the two snapshots */
};

static int s_len(const struct taskgraph *g, int s) { return g->stream_off[s + 1] - g->stream_off[s]; }

/* Ops len apart on a periodic stream must be the same work. */
static bool same_work(const struct taskgraph *g, const struct op *a, const struct op *b, int ia,
                      int ib)
{
    if (a->kind != b->kind || a->duration != b->duration || a->latency != b->latency ||
        a->alloc_bytes != b->alloc_bytes || a->free_bytes != b->free_bytes ||
        a->alloc_cat != b->alloc_cat || a->free_cat != b->free_cat ||
        a->route_len != b->route_len || g->n_deps[ia] != g->n_deps[ib] ||
        g->succ_off[ia + 1] - g->succ_off[ia] != g->succ_off[ib + 1] - g->succ_off[ib])
        return false;
    for (int k = 0; k < a->route_len; k++)
        if (g->route[a->route_off + k] != g->route[b->route_off + k]) return false;
    return true;
}

static bool declaration_holds(const struct taskgraph *g, const struct tg_period *p)
{
    if (g->n_rings) return false; /* ring ops keep state of their own */
    if (p->len[p->ref] <= 0) return false;
    for (int s = 0; s < g->n_chips * N_STREAMS; s++) {
        int n = s_len(g, s), len = p->len[s], lo = p->lo[s], hi = p->hi[s];
        if (len < 0 || lo < 0 || hi < lo || hi > n) return false;
        if (len == 0) continue;
        if (lo - len < 0 || hi + len > n) return false;
        for (int q = lo - len; q < hi; q++) {
            int ia = g->stream_ops[g->stream_off[s] + q], ib = g->stream_ops[g->stream_off[s] + q + len];
            if (!same_work(g, &g->ops[ia], &g->ops[ib], ia, ib)) {
                return false;
            }
        }
    }
    return true;
}

/* The op whose end takes the next snapshot, in k->watch and (for
 * engine.c's test of every event) e->skip_watch. */
static void set_watch(struct engine *e, struct engine_skip *k, const struct taskgraph *g)
{
    int r = k->p->ref;
    if (k->watch_pos >= k->p->hi[r] || k->watch_pos >= s_len(g, r))
        k->watch = NONE;
    else
        k->watch = g->stream_ops[g->stream_off[r] + k->watch_pos];
    e->skip_watch = k->watch;
}

void skip_init(struct engine *e)
{
    const struct taskgraph *g = e->g;
    struct engine_skip *k = mp_xcalloc(1, sizeof *k);
    e->skip = k;
    k->p = g->period;
    k->n_streams = g->n_chips * N_STREAMS;
    k->watch = NONE;
    if (!declaration_holds(g, k->p)) {
        k->failed = true;
        return;
    }
    size_t n = (size_t)(g->n_ops ? g->n_ops : 1);
    k->act_of = mp_xmalloc((size_t)k->n_streams * sizeof *k->act_of);
    k->act = mp_xmalloc((size_t)k->n_streams * sizeof *k->act);
    for (int s = 0; s < k->n_streams; s++) {
        k->act_of[s] = NONE;
        if (s_len(g, s) > 0) {
            k->act_of[s] = k->n_act;
            k->act[k->n_act++] = s;
        }
    }
    k->pos = g->stream_pos;
    /* Not zeroed: a snapshot reads the handles of events pending, which
     * skip_note_event wrote as they were scheduled. */
    k->seq_rel = mp_xmalloc(n * sizeof *k->seq_rel);
    k->seq_end = mp_xmalloc(n * sizeof *k->seq_end);
    k->link_of = mp_xmalloc((size_t)(g->n_links ? g->n_links : 1) * sizeof *k->link_of);
    for (int l = 0; l < g->n_links; l++) k->link_of[l] = NONE;
    k->links = mp_xmalloc((size_t)(g->n_links ? g->n_links : 1) * sizeof *k->links);
    for (int i = 0; i < g->n_route; i++) {
        int l = g->route[i];
        if (k->link_of[l] == NONE) {
            k->link_of[l] = k->n_links;
            k->links[k->n_links++] = l;
        }
    }
    bool *used = mp_xcalloc((size_t)g->n_chips, sizeof *used);
    for (int c = 0; c < g->n_chips; c++) /* a chip with an op has it on a stream */
        for (int k2 = 0; k2 < N_STREAMS; k2++) used[c] |= s_len(g, c * N_STREAMS + k2) > 0;
    for (int c = 0; c < g->n_chips; c++)
        for (int m = 0; m < N_MEM_CATS; m++) used[c] |= g->static_mem[(size_t)c * N_MEM_CATS + m] > 0;
    k->chips = mp_xmalloc((size_t)g->n_chips * sizeof *k->chips);
    for (int c = 0; c < g->n_chips; c++)
        if (used[c]) k->chips[k->n_chips++] = c;
    free(used);
    k->oldest = mp_xcalloc((size_t)k->n_act, sizeof *k->oldest);
    for (int j = 0; j < 3; j++) {
        struct snapshot *sn = &k->snap[j];
        sn->next = mp_xmalloc(((size_t)k->n_act + 1) * sizeof *sn->next);
        sn->xnext = mp_xmalloc(((size_t)k->n_act + 1) * sizeof *sn->xnext);
        sn->busy = mp_xmalloc(((size_t)k->n_act + 1) * sizeof *sn->busy);
        sn->holder = mp_xmalloc(((size_t)k->n_links + 1) * sizeof *sn->holder);
        sn->holder_back = mp_xmalloc(((size_t)k->n_links + 1) * sizeof *sn->holder_back);
        sn->q_off = mp_xmalloc(((size_t)k->n_links + 1) * sizeof *sn->q_off);
        sn->mem = mp_xmalloc(((size_t)k->n_chips * N_MEM_CATS + 1) * sizeof *sn->mem);
    }
    int r = k->p->ref, lo = k->p->lo[r], len = k->p->len[r];
    k->watch_pos = lo >= 1 ? lo - 1 : lo - 1 + len;
    set_watch(e, k, g);
    if (k->watch == NONE) k->failed = true; /* no room for two snapshots */
}

void skip_release(struct engine *e)
{
    struct engine_skip *k = e->skip;
    if (!k) return;
    for (int j = 0; j < 3; j++) {
        struct snapshot *sn = &k->snap[j];
        free(sn->next);
        free(sn->xnext);
        free(sn->busy);
        free(sn->ev);
        free(sn->holder);
        free(sn->holder_back);
        free(sn->q_off);
        free(sn->q);
        free(sn->mem);
    }
    free(k->act);
    free(k->act_of);
    free(k->links);
    free(k->link_of);
    free(k->chips);
    free(k->seq_rel);
    free(k->seq_end);
    free(k->oldest);
    free(k->at);
    free(k->after);
    free(k);
    e->skip = NULL;
}

void skip_note_event(struct engine *e, int id, uint32_t handle, int what)
{
    struct engine_skip *k = e->skip;
    if (k->failed || k->jumped) return;
    if (what & EV_RELEASE) k->seq_rel[id] = handle;
    if (what & EV_END) k->seq_end[id] = handle;
}

static int pend_cmp(const void *pa, const void *pb)
{
    const struct pend *a = pa, *b = pb;
    if (a->rel != b->rel) return a->rel < b->rel ? -1 : 1;
    int32_t d = (int32_t)(a->seq - b->seq); /* handles wrap at 2^32 */
    return (d > 0) - (d < 0);
}

static void push_pend(struct snapshot *sn, struct pend p)
{
    MP_GROW(sn->ev, sn->cap_ev, sn->n_ev + 1);
    sn->ev[sn->n_ev++] = p;
}

/* Stream s's next op, as a position on the stream (e->next is an index into
 * g->stream_ops). */
static int next_pos(const struct engine *e, int s) { return e->next[s] - e->g->stream_off[s]; }

/* Op `id` has ended by now. */
static bool ended(const struct engine *e, int id)
{
    return e->end[id] != NONE && (!e->fused || e->end[id] - e->shift <= e->now);
}

static void take(struct engine *e, struct snapshot *sn)
{
    const struct taskgraph *g = e->g;
    struct engine_skip *k = e->skip;
    sn->t = e->now;
    sn->n_ev = 0;
    for (int a = 0; a < k->n_act; a++) {
        int s = k->act[a], off = g->stream_off[s], next = next_pos(e, s);
        sn->next[a] = next;
        sn->xnext[a] = next;
        sn->busy[a] = e->busy[s];
        /* Ops in flight: started, not ended, at or above `oldest`. An op
         * of a chain (engine.c) has its end written ahead of time: ended
         * only once that time has come. */
        while (k->oldest[a] < next && ended(e, g->stream_ops[off + k->oldest[a]])) k->oldest[a]++;
        for (int i = k->oldest[a]; i < next; i++) {
            int id = g->stream_ops[off + i];
            if (e->fused && e->fused[id] && e->end[id] != NONE) {
                /* Timed by its chain: where would a run without chains be? */
                mp_time t0 = e->start[id] - e->shift;
                if (t0 > e->now && i < sn->xnext[a]) sn->xnext[a] = i;
                if (t0 == e->now && e->fused[id] != 3) e->fuse_unsafe = true;
                continue;
            }
            if (e->end[id] != NONE) continue;
            if (e->fused && e->fused[id] == 2 && e->start[id] - e->shift > e->now) {
                if (i < sn->xnext[a]) sn->xnext[a] = i;
            } else if (e->fused && e->fused[id] == 2 && e->start[id] - e->shift == e->now) {
                e->fuse_unsafe = true;
            }
            const struct op *o = &g->ops[id];
            int back = next - i;
            mp_time t0 = e->start[id] - e->shift;
            if (o->latency == 0) {
                push_pend(sn, (struct pend){ t0 + o->duration - e->now, k->seq_end[id], a, back,
                                             EV_RELEASE | EV_END });
                continue;
            }
            if (e->busy[s] && i == next - 1)
                push_pend(sn, (struct pend){ t0 + o->duration - o->latency - e->now,
                                             k->seq_rel[id], a, back, EV_RELEASE });
            push_pend(sn, (struct pend){ t0 + o->duration - e->now, k->seq_end[id], a, back, EV_END });
        }
    }
    qsort(sn->ev, (size_t)sn->n_ev, sizeof *sn->ev, pend_cmp);
    sn->n_q = 0;
    for (int j = 0; j < k->n_links; j++) {
        int l = k->links[j], h = e->link_holder[l];
        sn->holder[j] = h == NONE ? NONE : k->act_of[g->ops[h].chip * N_STREAMS + g->ops[h].stream];
        sn->holder_back[j] = h == NONE ? 0 : next_pos(e, g->ops[h].chip * N_STREAMS + g->ops[h].stream) - k->pos[h];
        sn->q_off[j] = sn->n_q;
        for (int w = e->link_wait_head[l]; w != NONE; w = e->wait_next[w]) {
            int s = g->ops[w].chip * N_STREAMS + g->ops[w].stream;
            MP_GROW(sn->q, sn->cap_q, sn->n_q + 2);
            sn->q[sn->n_q++] = k->act_of[s];
            sn->q[sn->n_q++] = next_pos(e, s) - k->pos[w];
        }
    }
    sn->q_off[k->n_links] = sn->n_q;
    for (int c = 0; c < k->n_chips; c++)
        memcpy(sn->mem + (size_t)c * N_MEM_CATS, e->mem[k->chips[c]].current,
               N_MEM_CATS * sizeof *sn->mem);
    sn->n_mem_log = e->n_mem_log;
}

/* B is A r periods on: see the top of the file. */
static bool agree(const struct engine_skip *k, const struct snapshot *a, const struct snapshot *b,
                  int r)
{
    if (b->t <= a->t || a->n_ev != b->n_ev || a->n_q != b->n_q) return false;
    for (int i = 0; i < k->n_act; i++)
        if (b->next[i] != a->next[i] + r * k->p->len[k->act[i]] || b->busy[i] != a->busy[i])
            return false;
    for (int i = 0; i < k->n_act; i++)
        if (b->xnext[i] != a->xnext[i] + r * k->p->len[k->act[i]]) return false;
    for (int i = 0; i < a->n_ev; i++) {
        const struct pend *x = &a->ev[i], *y = &b->ev[i];
        if (x->rel != y->rel || x->stream != y->stream || x->back != y->back || x->what != y->what)
            return false;
    }
    for (int j = 0; j < k->n_links; j++)
        if (a->holder[j] != b->holder[j] || a->holder_back[j] != b->holder_back[j] ||
            a->q_off[j] != b->q_off[j])
            return false;
    if (a->n_q && memcmp(a->q, b->q, (size_t)a->n_q * sizeof *a->q)) return false;
    for (size_t i = 0; i < (size_t)k->n_chips * N_MEM_CATS; i++)
        if (a->mem[i] != b->mem[i]) return false;
    return true;
}

/* Every stream where the periods can go in, with r periods of margin ahead
 * (the ones just run must repeat once more for the copies to be exact). */
static bool in_window_of(const struct engine_skip *k, const int32_t *next, int r)
{
    for (int i = 0; i < k->n_act; i++) {
        int s = k->act[i], len = r * k->p->len[s];
        if (next[i] < k->p->lo[s] || next[i] > k->p->hi[s] - len) return false;
    }
    return true;
}

/* With chains (engine.c) the positions a run without them would have must
 * be in the window too, or the two runs would not jump at the same
 * snapshot: then the run is marked unsafe. */
static bool in_window(struct engine *e, const struct snapshot *b, int r)
{
    const struct engine_skip *k = e->skip;
    bool in = in_window_of(k, b->next, r);
    if (e->fused && in != in_window_of(k, b->xnext, r)) e->fuse_unsafe = true;
    return in;
}

static void jump(struct engine *e, const struct snapshot *a, const struct snapshot *b, int r)
{
    const struct taskgraph *g = e->g;
    struct engine_skip *k = e->skip;
    mp_time delta = b->t - a->t, shift;
    if (__builtin_mul_overflow(k->p->elided / r, delta, &shift) || shift > MP_TIME_HUGE) {
        k->failed = true; /* the full step would not fit int64 ps: the full run says so */
        eventq_stop(&e->q);
        return;
    }
    k->at = mp_xmalloc((size_t)k->n_streams * sizeof *k->at);
    for (int s = 0; s < k->n_streams; s++) k->at[s] = next_pos(e, s);
    k->after = mp_xcalloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof *k->after);
    /* In locals: a byte store could be any field the loop reads. */
    uint8_t *after = k->after;
    const int32_t *stream_ops = g->stream_ops, *stream_off = g->stream_off, *next = e->next;
    for (int s = 0; s < k->n_streams; s++)
        for (int i = next[s]; i < stream_off[s + 1]; i++) after[stream_ops[i]] = 1;
    /* Ops in flight across the jump end, in the full step, where they would
     * have without it; their pending events stand for their copies in the
     * last inserted period. */
    for (int i = 0; i < b->n_ev; i++) {
        if (!(b->ev[i].what & EV_END)) continue;
        int s = k->act[b->ev[i].stream];
        int id = g->stream_ops[e->next[s] - b->ev[i].back];
        e->end[id] = e->start[id] + g->ops[id].duration;
    }
    k->jumped = true;
    k->periods = k->p->elided;
    k->r = r;
    k->delta = delta;
    k->log_a = a->n_mem_log;
    k->log_b = b->n_mem_log;
    e->shift = shift;
    k->watch = e->skip_watch = NONE;
}

void skip_after_event(struct engine *e, int id, int what)
{
    struct engine_skip *k = e->skip;
    if (id != k->watch || !(what & EV_END)) return;
    struct snapshot *b = &k->snap[k->taken % 3];
    take(e, b);
    k->taken++;
    /* The state may repeat every period or, when two kinds of period
     * alternate (DualPipe's directions, ZeRO-3's prefetches across passes),
     * every second one; the builder's K is even so that either fits. */
    for (int r = 1; r <= 2; r++) {
        const struct snapshot *a = &k->snap[(k->taken - 1 - r + 3) % 3];
        if (k->taken > r && k->p->elided % r == 0 && in_window(e, b, r) && agree(k, a, b, r)) {
            if (e->fuse_unsafe) break;
            jump(e, a, b, r);
            return;
        }
    }
    if (e->fuse_unsafe) {
        eventq_stop(&e->q); /* engine_run simulates the graph again, unfused */
        return;
    }
    k->watch_pos += k->p->len[k->p->ref];
    set_watch(e, k, e->g);
    if (k->watch == NONE) {
        /* Out of the window with no repetition seen: the caller runs the
         * full graph. */
        k->failed = true;
        eventq_stop(&e->q);
    }
}

int64_t engine_skipped_periods(const struct engine *e)
{
    return e->skip && e->skip->jumped ? e->skip->periods : 0;
}

mp_time engine_period(const struct engine *e)
{
    return e->skip && e->skip->jumped ? e->skip->delta : 0;
}

bool skip_watching(const struct engine *e, int s)
{
    const struct engine_skip *k = e->skip;
    return k && !k->failed && !k->jumped && s == k->p->ref && k->p->len[s] > 0;
}

bool skip_watched(const struct engine *e, int id)
{
    const struct engine_skip *k = e->skip;
    if (!k || k->failed || k->jumped) return false;
    const struct op *o = &e->g->ops[id];
    int ref = k->p->ref, lo = k->p->lo[ref], len = k->p->len[ref];
    if (o->chip * N_STREAMS + o->stream != ref || len <= 0) return false;
    int first = lo >= 1 ? lo - 1 : lo - 1 + len, q = k->pos[id];
    return q >= first && q < k->p->hi[ref] && (q - first) % len == 0;
}

bool engine_skip_failed(const struct engine *e)
{
    return e->skip && e->skip->failed;
}

int64_t engine_stream_len(const struct engine *e, int s)
{
    int64_t n = e->g->stream_off[s + 1] - e->g->stream_off[s];
    if (engine_skipped_periods(e) > 0) n += e->skip->periods * e->skip->p->len[s];
    return n;
}

int engine_stream_op(const struct engine *e, int s, int64_t i, mp_time *shift)
{
    const struct taskgraph *g = e->g;
    int off = g->stream_off[s];
    *shift = 0;
    if (engine_skipped_periods(e) == 0 || i < e->skip->at[s]) return g->stream_ops[off + i];
    const struct engine_skip *k = e->skip;
    /* Copies of the r periods before the jump, shifted by r periods each. */
    int64_t len = (int64_t)k->r * k->p->len[s], t = i - k->at[s];
    if (t < k->periods * k->p->len[s]) {
        *shift = (t / len + 1) * k->delta;
        return g->stream_ops[off + k->at[s] - len + t % len];
    }
    return g->stream_ops[off + i - k->periods * k->p->len[s]];
}

static int stream_of(const struct taskgraph *g, int id)
{
    return g->ops[id].chip * N_STREAMS + g->ops[id].stream;
}

struct engine_fop engine_full_op(const struct engine *e, int s, int64_t q)
{
    const struct taskgraph *g = e->g;
    int off = g->stream_off[s];
    if (engine_skipped_periods(e) == 0 || q < e->skip->at[s])
        return (struct engine_fop){ g->stream_ops[off + q], 0 };
    const struct engine_skip *k = e->skip;
    int64_t len = (int64_t)k->r * k->p->len[s], t = q - k->at[s];
    if (t < k->periods * k->p->len[s]) /* the copy t / len + 1 of the r periods before at */
        return (struct engine_fop){ g->stream_ops[off + k->at[s] - len + t % len],
                                    (t / len + 1) * k->r };
    return (struct engine_fop){ g->stream_ops[off + q - k->periods * k->p->len[s]], k->periods };
}

const uint8_t *engine_after_jump(const struct engine *e)
{
    return engine_skipped_periods(e) > 0 ? e->skip->after : NULL;
}

mp_time engine_fop_shift(const struct engine *e, struct engine_fop f)
{
    if (f.ahead == 0 || engine_skipped_periods(e) == 0) return 0;
    const struct engine_skip *k = e->skip;
    /* The ops after the jump have their times recorded shifted already. */
    if (k->pos[f.id] >= k->at[stream_of(e->g, f.id)]) return 0;
    return f.ahead / k->r * k->delta;
}

struct engine_fop engine_fop_pred(const struct engine *e, struct engine_fop f, int u)
{
    if (f.ahead == 0 || engine_skipped_periods(e) == 0) return (struct engine_fop){ u, 0 };
    int su = stream_of(e->g, u);
    return engine_full_op(e, su, e->skip->pos[u] + f.ahead * e->skip->p->len[su]);
}

struct engine_fop engine_fop_prev(const struct engine *e, struct engine_fop f)
{
    const struct taskgraph *g = e->g;
    int s = stream_of(g, f.id);
    if (engine_skipped_periods(e) == 0) { /* without a jump the stream is the graph's */
        int p = g->stream_pos[f.id];
        return (struct engine_fop){ p > 0 ? g->stream_ops[g->stream_off[s] + p - 1] : -1, 0 };
    }
    int64_t q = e->skip->pos[f.id] + f.ahead * e->skip->p->len[s] - 1;
    if (q < 0) return (struct engine_fop){ -1, 0 };
    return engine_full_op(e, s, q);
}

int64_t engine_fop_pos(const struct engine *e, struct engine_fop f)
{
    const struct taskgraph *g = e->g;
    int s = stream_of(g, f.id);
    if (engine_skipped_periods(e) == 0) return g->stream_pos[f.id];
    return e->skip->pos[f.id] + f.ahead * e->skip->p->len[s];
}

int64_t engine_op_count(const struct engine *e, int id)
{
    if (engine_skipped_periods(e) == 0) return 1;
    const struct engine_skip *k = e->skip;
    int s = stream_of(e->g, id), len = k->r * k->p->len[s];
    if (len > 0 && k->pos[id] >= k->at[s] - len && k->pos[id] < k->at[s])
        return 1 + k->periods / k->r;
    return 1;
}

mp_time skip_inserted_last_end(const struct engine *e)
{
    if (engine_skipped_periods(e) == 0) return 0;
    const struct taskgraph *g = e->g;
    const struct engine_skip *k = e->skip;
    mp_time last = 0, shift = k->periods / k->r * k->delta;
    for (int a = 0; a < k->n_act; a++) {
        int s = k->act[a], len = k->r * k->p->len[s];
        for (int i = k->at[s] - len; i < k->at[s]; i++) {
            mp_time t = e->end[g->stream_ops[g->stream_off[s] + i]] + shift;
            if (t > last) last = t;
        }
    }
    return last;
}

/* The op of `full` whose end let the op at position i of stream s start:
 * graph op rid's releaser as many periods ahead as that op is (the state
 * repeats, so the releaser of a copy is the copy of the releaser). */
static int32_t released_in_full(const struct engine *e, const struct taskgraph *full, int rid,
                                int s, int64_t i)
{
    int u = e->released_by[rid];
    if (u < 0) return -1;
    struct engine_fop f = engine_full_op(e, s, i);
    int64_t ahead = f.ahead;
    int su = stream_of(e->g, u);
    int64_t q = engine_skipped_periods(e) ? e->skip->pos[u] + ahead * e->skip->p->len[su]
                                          : e->g->stream_pos[u]; /* no jump: the same graph */
    return full->stream_ops[full->stream_off[su] + q];
}

int engine_expand(const struct engine *e, struct engine *out, struct mp_error *err)
{
    const struct taskgraph *g = e->g, *full = out->g;
    if (e->released_by && out->record_released && !out->released_by)
        out->released_by = mp_xmalloc((size_t)(full->n_ops ? full->n_ops : 1) *
                                      sizeof *out->released_by);
    if (full->n_chips != g->n_chips)
        return mp_fail(err, MP_ERR_INTERNAL, "engine_expand: %d chips, the run had %d",
                       full->n_chips, g->n_chips);
    for (int s = 0; s < full->n_chips * N_STREAMS; s++) {
        int64_t n = engine_stream_len(e, s);
        if (n != full->stream_off[s + 1] - full->stream_off[s])
            return mp_fail(err, MP_ERR_INTERNAL, "engine_expand: stream %d has %d ops, the run "
                           "stands for %lld", s, full->stream_off[s + 1] - full->stream_off[s],
                           (long long)n);
        for (int64_t i = 0; i < n; i++) {
            mp_time shift;
            int rid = engine_stream_op(e, s, i, &shift);
            int fid = full->stream_ops[full->stream_off[s] + i];
            if (out->released_by) out->released_by[fid] = released_in_full(e, full, rid, s, i);
            const struct op *a = &g->ops[rid], *b = &full->ops[fid];
            if (a->kind != b->kind || a->duration != b->duration)
                return mp_fail(err, MP_ERR_INTERNAL, "engine_expand: op %lld of stream %d differs "
                               "from the one the run stands for", (long long)i, s);
            out->start[fid] = e->start[rid] + shift;
            out->end[fid] = e->end[rid] + shift;
            if (out->end[fid] > out->stream_last[s]) out->stream_last[s] = out->end[fid];
            out->stream_sum[s] += out->end[fid] - out->start[fid];
        }
    }
    memcpy(out->mem, e->mem, (size_t)g->n_chips * sizeof *out->mem);
    out->events = e->events;
    out->done = full->n_ops;
    out->now = e->now + e->shift;
    out->record_memory = e->record_memory;
    if (e->record_memory) {
        int64_t K = engine_skipped_periods(e);
        int a = K ? e->skip->log_a : 0, b = K ? e->skip->log_b : e->n_mem_log;
        int64_t n = e->n_mem_log + (K ? K / e->skip->r : 0) * (b - a);
        if (n > INT32_MAX)
            return mp_fail(err, MP_ERR_INTERNAL, "engine_expand: memory log too long");
        out->mem_log = mp_xmalloc((size_t)(n ? n : 1) * sizeof *out->mem_log);
        out->n_mem_log = out->cap_mem_log = (int)n;
        struct mem_event *w = out->mem_log;
        /* No memory events at all (nothing allocated): the log is NULL,
         * which memcpy may not be passed even for no bytes. */
        if (n == 0) return MP_OK;
        memcpy(w, e->mem_log, (size_t)b * sizeof *w);
        w += b;
        for (int64_t k = 1; k <= (K ? K / e->skip->r : 0); k++)
            for (int i = a; i < b; i++) {
                *w = e->mem_log[i];
                w++->time += k * e->skip->delta;
            }
        memcpy(w, e->mem_log + b, (size_t)(e->n_mem_log - b) * sizeof *w);
    }
    return MP_OK;
}

mp_time engine_stream_busy(const struct engine *e, int s)
{
    const struct taskgraph *g = e->g;
    mp_time busy = e->stream_sum[s], period = 0; /* the graph's ops (engine.c) */
    if (engine_skipped_periods(e) == 0) return busy;
    const struct engine_skip *k = e->skip;
    for (int i = k->at[s] - k->r * k->p->len[s]; i < k->at[s]; i++) {
        int id = g->stream_ops[g->stream_off[s] + i];
        period += e->end[id] - e->start[id];
    }
    return busy + k->periods / k->r * period;
}

mp_time engine_stream_last_end(const struct engine *e, int s)
{
    const struct taskgraph *g = e->g;
    mp_time last = e->stream_last[s]; /* the graph's ops (engine.c) */
    if (engine_skipped_periods(e) == 0) return last;
    const struct engine_skip *k = e->skip;
    for (int i = k->at[s] - k->r * k->p->len[s]; i < k->at[s]; i++) {
        mp_time t = e->end[g->stream_ops[g->stream_off[s] + i]] + k->periods / k->r * k->delta;
        if (t > last) last = t;
    }
    return last;
}

int64_t engine_stream_period(const struct engine *e, int s, int64_t *at, int *len)
{
    *at = 0;
    *len = 0;
    if (engine_skipped_periods(e) == 0) return 0;
    *at = e->skip->at[s];
    *len = e->skip->r * e->skip->p->len[s];
    return e->skip->periods / e->skip->r;
}
