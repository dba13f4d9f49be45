/* engine.c — the discrete-event core; see engine.h. */
#include "engine.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE (-1)

static int n_streams(const struct taskgraph *g) { return g->n_chips * N_STREAMS; }

void engine_init(struct engine *e, const struct taskgraph *g)
{
    assert(g->finalized);
    memset(e, 0, sizeof *e);
    e->g = g;
    eventq_init(&e->q);
    size_t n = (size_t)(g->n_ops ? g->n_ops : 1);
    /* Not filled: an op's start and end are written as it starts (its end
     * NONE until it ends), and nothing reads those of an op that has not
     * started (engine.h: a run stopped early is not read). */
    e->start = mp_xmalloc(n * sizeof *e->start);
    e->end = mp_xmalloc(n * sizeof *e->end);
    e->mem = mp_xcalloc((size_t)g->n_chips, sizeof *e->mem);
    e->pending = mp_xmalloc(n * sizeof *e->pending);
    memcpy(e->pending, g->n_deps, (size_t)g->n_ops * sizeof *e->pending);
    e->waiting = mp_xcalloc(n, sizeof *e->waiting);
    e->wait_next = mp_xmalloc(n * sizeof *e->wait_next);
    e->next = mp_xmalloc((size_t)n_streams(g) * sizeof *e->next);
    for (int s = 0; s < n_streams(g); s++) e->next[s] = g->stream_off[s];
    e->busy = mp_xcalloc((size_t)n_streams(g), sizeof *e->busy);
    e->stream_last = mp_xmalloc((size_t)n_streams(g) * sizeof *e->stream_last);
    for (int s = 0; s < n_streams(g); s++) e->stream_last[s] = NONE;
    e->stream_sum = mp_xcalloc((size_t)n_streams(g), sizeof *e->stream_sum);
    size_t nl = (size_t)(g->n_links ? g->n_links : 1);
    e->link_holder = mp_xmalloc(nl * sizeof *e->link_holder);
    e->link_wait_head = mp_xmalloc(nl * sizeof *e->link_wait_head);
    e->link_wait_tail = mp_xmalloc(nl * sizeof *e->link_wait_tail);
    for (int l = 0; l < g->n_links; l++)
        e->link_holder[l] = e->link_wait_head[l] = e->link_wait_tail[l] = NONE;
    if (g->n_rings) {
        e->ring_sent = mp_xcalloc(n, sizeof *e->ring_sent);
        e->ring_arrived = mp_xcalloc(n, sizeof *e->ring_arrived);
        /* Each ring member's neighbours and ring, found once rather than per
         * transfer. */
        e->ring_prev = mp_xmalloc(n * sizeof *e->ring_prev);
        e->ring_next = mp_xmalloc(n * sizeof *e->ring_next);
        e->ring_of = mp_xmalloc(n * sizeof *e->ring_of);
        e->ring_release_at = mp_xmalloc(n * sizeof *e->ring_release_at);
        for (size_t i = 0; i < n; i++) e->ring_release_at[i] = NONE;
        for (int r = 0; r < g->n_rings; r++) {
            const struct tg_ring *x = &g->rings[r];
            for (int i = 0; i < x->n; i++) {
                e->ring_prev[x->first + i] = x->first + (i + x->n - 1) % x->n;
                e->ring_next[x->first + i] = x->first + (i + 1) % x->n;
                e->ring_of[x->first + i] = r;
            }
        }
    }
    e->skip_watch = NONE;
    if (g->period) skip_init(e);
}

void engine_release(struct engine *e)
{
    eventq_release(&e->q);
    free(e->start);
    free(e->end);
    free(e->mem);
    free(e->mem_log);
    free(e->pending);
    free(e->waiting);
    free(e->wait_next);
    free(e->next);
    free(e->busy);
    free(e->stream_last);
    free(e->stream_sum);
    free(e->link_holder);
    free(e->link_wait_head);
    free(e->link_wait_tail);
    free(e->ring_sent);
    free(e->ring_arrived);
    free(e->ring_prev);
    free(e->ring_next);
    free(e->ring_of);
    free(e->ring_release_at);
    free(e->fused);
    skip_release(e);
    free(e->released_by);
    memset(e, 0, sizeof *e);
}

static void mem_change(struct engine *e, int chip, int cat, double delta)
{
    struct chip_memory *m = &e->mem[chip];
    m->current[cat] += delta;
    double total = 0;
    for (int c = 0; c < N_MEM_CATS; c++) total += m->current[c];
    if (total > m->peak) {
        m->peak = total;
        memcpy(m->at_peak, m->current, sizeof m->at_peak);
        m->peak_time = e->now + e->shift;
    }
    if (e->record_memory) {
        MP_GROW(e->mem_log, e->cap_mem_log, e->n_mem_log + 1);
        e->mem_log[e->n_mem_log++] = (struct mem_event){
            .time = e->now + e->shift, .chip = chip, .cat = (uint8_t)cat, .delta = delta,
            .in_use = total,
        };
    }
}

static void link_enqueue(struct engine *e, int link, int op)
{
    e->waiting[op] = true;
    e->wait_next[op] = NONE;
    if (e->link_wait_tail[link] == NONE)
        e->link_wait_head[link] = op;
    else
        e->wait_next[e->link_wait_tail[link]] = op;
    e->link_wait_tail[link] = op;
}

/* Event payloads: the op index times 4, plus what its event does. A transfer
 * with latency has two events: its last byte leaves (the stream and links
 * come free) and, the latency later, it arrives (it ends). Everything else,
 * and a transfer with no latency, has one event doing both; so does a ring
 * piece whose release ring_defers leaves to ring_settle (its arrival). */
enum { EV_RELEASE = 1, EV_END = 2 };

static int stream_of(const struct op *o) { return o->chip * N_STREAMS + o->stream; }

/* A ring transfer in flight whose letting go of its stream and links was
 * left to whoever looks next (start_op: the next transfer of a ring waiting
 * on its neighbour's piece needs no event at its last byte, only at the
 * piece's arrival). At or past that time it lets go now; before it, the
 * release becomes an event as any transfer's, for what waits on it. True
 * when the stream and links are free now. No transfer queues on the links
 * of a deferred release (it settles first), so none is woken here. */
static bool ring_settle(struct engine *e, int id)
{
    mp_time at = e->ring_release_at[id];
    e->ring_release_at[id] = NONE;
    const struct op *o = &e->g->ops[id];
    if (at > e->now) {
        eventq_schedule(&e->q, at, 0, (int64_t)id * 4 + EV_RELEASE);
        return false;
    }
    e->busy[stream_of(o)] = false;
    const int32_t *route = o->route_len ? e->g->route + o->route_off : NULL;
    for (int i = 0; i < o->route_len; i++) {
        assert(e->link_wait_head[route[i]] == NONE);
        e->link_holder[route[i]] = NONE;
    }
    return true;
}

/* Whether ring op `id`, starting transfer t (not its last), may leave its
 * release to ring_settle: its next transfer waits on a piece from the
 * member before it that has not arrived (so that arrival, an event, comes
 * to look), and nothing queues on its links. */
static bool ring_defers(const struct engine *e, int id, const struct tg_ring *r, int t)
{
    const struct op *o = &e->g->ops[id];
    if (o->latency <= 0 || t + 1 >= r->steps || t + 1 < r->chunks) return false;
    if (e->ring_arrived[e->ring_prev[id]] > t + 1 - r->chunks) return false;
    const int32_t *route = o->route_len ? e->g->route + o->route_off : NULL;
    for (int i = 0; i < o->route_len; i++)
        if (e->link_wait_head[route[i]] != NONE) return false;
    return true;
}

/* Stream s is busy: if with a ring transfer whose release was deferred (the
 * ring op heads the stream until its last transfer, which never defers),
 * settle it; true when the stream is free now. */
static bool ring_settle_head(struct engine *e, int s)
{
    int k = e->next[s];
    if (k >= e->g->stream_off[s + 1]) return false;
    int id = e->g->stream_ops[k];
    return e->ring_release_at[id] != NONE && ring_settle(e, id);
}

/* ---- chains timed at once --------------------------------------------
 * A TP pass is a chain on one chip: compute, a collective on the comm
 * stream waiting for it, compute waiting for that, and so on. Once such a
 * collective A starts while the chip's compute stream is idle with the
 * chain's next compute op C at its head, the rest is fixed: C depends on A
 * alone and nothing else can take the compute stream before it (it heads
 * it); the collective after C depends on C alone and follows A on the comm
 * stream, so nothing else can take that stream before it either; and so on
 * while each op has exactly the one successor the chain continues with, no
 * memory effect, no link and no latency. So their starts and ends are
 * written at once and only the chain's last collective gets an event, its
 * end doing what it would have done; the events the chain's other ops
 * would have had are counted (`fused_events`), so `events` is unchanged.
 * When that collective's end does nothing but start the compute op after
 * it (the pass's last piece, whose hand-off is the comm stream's next op),
 * that op is the chain's tail: its start is written too and its end is the
 * chain's event (the 1T step: 9,009 of its 9,280 chains, an event each).
 *
 * What can differ is the order of events at one picosecond: the chain's
 * last event is scheduled when the chain starts, not when its op starts,
 * so an event at the same time scheduled in between would run on the other
 * side of it. Any such event at the time of a chain's last one marks the
 * run unsafe, and so does a steady-state snapshot that could read the
 * state differently (skip.c); engine_run then simulates the graph again,
 * every op with its own events. A chain never hides the end of an op a
 * snapshot waits for (skip_watched). */

/* latency, route_len, alloc_bytes and free_bytes all 0: in one test of
 * their bits, each byte count shifted past its sign (so -0, which == 0
 * lets through too, passes, and NaN does not); asked twice a link. */
static bool chain_plain(const struct op *o)
{
    uint64_t alloc, freed;
    memcpy(&alloc, &o->alloc_bytes, sizeof alloc);
    memcpy(&freed, &o->free_bytes, sizeof freed);
    return ((uint64_t)o->latency | (uint32_t)o->route_len | (alloc | freed) << 1) == 0 &&
           (o->kind == OP_COMPUTE || o->kind == OP_COLLECTIVE);
}

static int succ_count(const struct taskgraph *g, int id)
{
    return g->succ_off[id + 1] - g->succ_off[id];
}

/* Collective `a` has just started (its stream taken, next advanced): time
 * the chain after it. Returns its last op (its last collective, or the
 * tail), started at *t_last (engine clock), or -1 when there is no chain
 * (nothing changed). The
 * compute op after the chain's last compute one must wait for that last
 * collective (as the pass's next piece does), or it could start before its
 * time while the stream looks free: a chain ends a link earlier where it
 * would not (an op beside a collective under tp_comm_overlap, say). */
#define CHAIN_MAX 256
static int fuse_chain(struct engine *e, int a, mp_time *t_last)
{
    const struct taskgraph *g = e->g;
    const struct op *oa = &g->ops[a];
    int sc = oa->chip * N_STREAMS + STREAM_COMPUTE, sm = oa->chip * N_STREAMS + STREAM_COMM;
    if (!chain_plain(oa) || oa->kind != OP_COLLECTIVE || e->busy[sc]) return -1;
    int ic = e->next[sc], im = e->next[sm], cur = a, n = 0;
    int comp[CHAIN_MAX], coll[CHAIN_MAX + 1]; /* coll[j] then comp[j], j = 0 .. n − 1, then coll[n] */
    coll[0] = a;
    /* Only the reference stream's ops are watched, and none after the
     * jump: asked once for the chain's compute stream. */
    bool watching = skip_watching(e, sc);
    /* In locals: skip_watched is a call, after which the compiler would
     * load every one of these again for the next link. */
    const int32_t *succ_off = g->succ_off, *succ = g->succ, *sops = g->stream_ops;
    const int32_t *n_deps = g->n_deps;
    const struct op *ops = g->ops;
    int lim = CHAIN_MAX;
    if (g->stream_off[sc + 1] - ic < lim) lim = g->stream_off[sc + 1] - ic;
    if (g->stream_off[sm + 1] - im < lim) lim = g->stream_off[sm + 1] - im;
    while (n < lim && succ_off[cur + 1] - succ_off[cur] == 1) {
        int c = succ[succ_off[cur]];
        const struct op *oc = &ops[c];
        if (c != sops[ic + n] || oc->kind != OP_COMPUTE || !chain_plain(oc) || n_deps[c] != 1 ||
            succ_off[c + 1] - succ_off[c] != 1 || (watching && skip_watched(e, c)))
            break;
        int a2 = succ[succ_off[c]];
        const struct op *o2 = &ops[a2];
        if (a2 != sops[im + n] || o2->kind != OP_COLLECTIVE || !chain_plain(o2) || n_deps[a2] != 1)
            break;
        comp[n] = c;
        coll[++n] = a2;
        cur = a2;
    }
    /* The compute stream's op after the chain must wait for its last collective. */
    while (n > 0 && ic + n < g->stream_off[sc + 1]) {
        int next = g->stream_ops[ic + n];
        bool waits = false;
        for (int k = g->succ_off[coll[n]]; k < g->succ_off[coll[n] + 1] && !waits; k++)
            waits = g->succ[k] == next;
        if (waits) break;
        n--;
    }
    if (n == 0) return -1;
    /* The tail (below): that compute op `cl` joins the chain when nothing
     * but starting it happens at coll[n]'s end: coll[n] has no other
     * successor, cl no other dependency and no memory taken or link at its
     * start, and the comm stream's op after coll[n], if any, waits for cl. */
    int cl = -1;
    if (ic + n < g->stream_off[sc + 1] && succ_count(g, coll[n]) == 1) {
        int c = g->stream_ops[ic + n];
        const struct op *oc = &g->ops[c];
        bool ok = oc->kind == OP_COMPUTE && oc->latency == 0 && oc->route_len == 0 &&
                  oc->alloc_bytes == 0 && g->n_deps[c] == 1;
        if (ok && im + n < g->stream_off[sm + 1]) {
            int x = g->stream_ops[im + n];
            ok = false;
            for (int k = g->succ_off[c]; k < g->succ_off[c + 1] && !ok; k++) ok = g->succ[k] == x;
        }
        if (ok) cl = c;
    }
    mp_time t = e->now;
    /* In locals: a store through e->start or e->end could be e->shift, as
     * far as the compiler knows, which it would then load four times a
     * link. */
    mp_time shift = e->shift, *start = e->start, *end = e->end;
    int32_t *pending = e->pending, *released_by = e->released_by;
    uint8_t *fused = e->fused;
    mp_time sum_m = 0, sum_c = 0;
    for (int j = 0; j < n; j++) {
        /* coll[j] ends, comp[j] runs, coll[j + 1] starts: without an event. */
        int x = coll[j], c = comp[j], y = coll[j + 1];
        mp_time te = t + g->ops[x].duration, tc = te + g->ops[c].duration;
        sum_m += te - t;
        sum_c += tc - te;
        end[x] = te + shift;
        start[c] = te + shift;
        end[c] = tc + shift;
        start[y] = tc + shift;
        pending[c] = pending[y] = 0;
        if (released_by) {
            released_by[c] = x;
            released_by[y] = c;
        }
        fused[x] = fused[c] = 1;
        t = tc;
    }
    e->fused[a] = 3; /* the chain's head: a real start, a timed end */
    e->next[sm] = im + n;
    int last = coll[n];
    if (cl >= 0) {
        /* coll[n] ends and cl starts without an event; cl's end is the
         * chain's event. The compute stream is cl's from now (nothing else
         * may start on it before cl ends, as in the run without the chain,
         * where it heads it), and the comm stream's next op waits for cl:
         * taking the comm stream off now changes no start. */
        int x = coll[n];
        mp_time te = t + g->ops[x].duration;
        sum_m += te - t;
        end[x] = te + shift;
        start[cl] = te + shift;
        pending[cl] = 0;
        if (released_by) released_by[cl] = x;
        fused[x] = 1;
        t = te;
        e->busy[sc] = true;
        e->busy[sm] = false;
        e->next[sc] = ic + n + 1;
        e->done++;
        e->fused_events++;
        last = cl;
    } else {
        e->next[sc] = ic + n;
    }
    end[last] = NONE; /* started, ends by its event */
    /* The ops ended here (all but `last`), in the streams' tallies: each
     * stream's ends grow along the chain. */
    int lm = cl >= 0 ? coll[n] : coll[n - 1];
    if (end[lm] > e->stream_last[sm]) e->stream_last[sm] = end[lm];
    if (end[comp[n - 1]] > e->stream_last[sc]) e->stream_last[sc] = end[comp[n - 1]];
    e->stream_sum[sm] += sum_m;
    e->stream_sum[sc] += sum_c;
    e->done += 2 * n;
    e->fused_events += 2 * (uint64_t)n;
    e->fused[last] = 2;
    *t_last = t;
    return last;
}

/* Start op `id`, heading stream `s` and ready, if its links are free
 * (try_start's body). Out of line: more than half of the 1T step's ~86 K
 * try_start calls find the stream busy or its op not ready, and with this
 * inlined there each paid its register saves. */
static void __attribute__((noinline)) start_op(struct engine *e, int s, int id)
{
    const struct taskgraph *g = e->g;
    const struct op *o = &g->ops[id];
    int t = 0;
    const struct tg_ring *r = NULL;
    if (o->kind == OP_RING) {
        /* Transfer t (step t / chunks, chunk t % chunks) needs the same chunk
         * of the step before to have arrived from the ring's previous member,
         * as the t-th transfer of the expanded ring depends on it. */
        r = &g->rings[e->ring_of[id]];
        t = e->ring_sent[id];
        if (t >= r->chunks && e->ring_arrived[e->ring_prev[id]] <= t - r->chunks) return;
    }
    /* A graph with no transfers has no route array: NULL + 0 is undefined. */
    const int32_t *route = o->route_len ? g->route + o->route_off : NULL;
    for (int i = 0; i < o->route_len; i++) {
        int holder = e->link_holder[route[i]];
        if (holder != NONE &&
            !(e->ring_release_at && e->ring_release_at[holder] != NONE && ring_settle(e, holder))) {
            link_enqueue(e, route[i], id);
            return;
        }
    }
    for (int i = 0; i < o->route_len; i++) e->link_holder[route[i]] = id;
    e->busy[s] = true;
    /* A ring op keeps the head of its stream until its last transfer starts. */
    if (o->kind != OP_RING || ++e->ring_sent[id] == g->rings[e->ring_of[id]].steps) e->next[s]++;
    if (t == 0) {
        e->start[id] = e->now + e->shift;
        e->end[id] = NONE;
        if (e->released_by) e->released_by[id] = e->cur;
        if (o->alloc_bytes > 0) mem_change(e, o->chip, o->alloc_cat, o->alloc_bytes);
    }
    uint32_t h;
    mp_time t_last;
    /* Only a collective can head a chain (fuse_chain's first test, here
     * to spare the other ops the call). */
    int last = e->fused && o->kind == OP_COLLECTIVE ? fuse_chain(e, id, &t_last) : -1;
    if (last >= 0) {
        h = eventq_schedule(&e->q, t_last + g->ops[last].duration, 0,
                            (int64_t)last * 4 + (EV_RELEASE | EV_END));
        if (e->skip) skip_note_event(e, last, h, EV_RELEASE | EV_END);
    } else if (r && ring_defers(e, id, r, t)) {
        e->ring_release_at[id] = e->now + (o->duration - o->latency);
        eventq_schedule(&e->q, e->now + o->duration, 0, (int64_t)id * 4 + EV_END);
    } else if (o->latency > 0) {
        h = eventq_schedule(&e->q, e->now + (o->duration - o->latency), 0, (int64_t)id * 4 + EV_RELEASE);
        if (e->skip) skip_note_event(e, id, h, EV_RELEASE);
        h = eventq_schedule(&e->q, e->now + o->duration, 0, (int64_t)id * 4 + EV_END);
        if (e->skip) skip_note_event(e, id, h, EV_END);
    } else {
        h = eventq_schedule(&e->q, e->now + o->duration, 0, (int64_t)id * 4 + (EV_RELEASE | EV_END));
        if (e->skip) skip_note_event(e, id, h, EV_RELEASE | EV_END);
    }
}

/* Start the op heading stream `s` if everything it needs is free. */
static inline void try_start(struct engine *e, int s)
{
    const struct taskgraph *g = e->g;
    if (e->busy[s] && !(e->ring_release_at && ring_settle_head(e, s))) return;
    if (e->next[s] >= g->stream_off[s + 1]) return;
    int id = g->stream_ops[e->next[s]];
    if (e->pending[id] > 0 || e->waiting[id]) return;
    start_op(e, s, id);
}

/* A link came free: every transfer queued on it tries again, in arrival
 * order; those still blocked (by another link) queue where they block. */
static void link_release(struct engine *e, int link)
{
    e->link_holder[link] = NONE;
    int op = e->link_wait_head[link];
    e->link_wait_head[link] = e->link_wait_tail[link] = NONE;
    while (op != NONE) {
        int next = e->wait_next[op];
        e->waiting[op] = false;
        try_start(e, stream_of(&e->g->ops[op]));
        op = next;
    }
}

static void release_links(struct engine *e, const struct op *o)
{
    const int32_t *route = o->route_len ? e->g->route + o->route_off : NULL;
    for (int i = 0; i < o->route_len; i++) link_release(e, route[i]);
}

/* The op ends: it is done, its memory goes back, its successors may start. */
static void op_done(struct engine *e, int id, const struct op *o, mp_time t)
{
    /* A skip (skip.c) sets the end of an op in flight across it beforehand. */
    if (e->end[id] == NONE) e->end[id] = t + e->shift;
    int s = stream_of(o);
    if (e->end[id] > e->stream_last[s]) e->stream_last[s] = e->end[id];
    e->stream_sum[s] += e->end[id] - e->start[id];
    e->done++;
    if (o->free_bytes > 0) mem_change(e, o->chip, o->free_cat, -o->free_bytes);
}

static void wake_successors(struct engine *e, int id)
{
    const struct taskgraph *g = e->g;
    for (int k = g->succ_off[id]; k < g->succ_off[id + 1]; k++) {
        int next = g->succ[k];
        if (--e->pending[next] == 0) try_start(e, stream_of(&g->ops[next]));
    }
}

static void on_op_end(void *ctx, const struct eventq_event *ev)
{
    struct engine *e = ctx;
    const struct taskgraph *g = e->g;
    int id = (int)(ev->data >> 2), what = (int)(ev->data & 3);
    const struct op *o = &g->ops[id];
    if (e->fused) {
        /* A tie with a chain's last event: its order may not be the unfused
         * one's. Unless the event after it was scheduled once it had
         * popped (by its handler, say: a hand-off of no serialization time
         * its last compute op starts): then it comes after it in both. */
        bool fin = e->fused[id] == 2;
        if (ev->time == e->last_pop &&
            (fin || (e->last_fused && (int32_t)(ev->handle - e->fin_mark) < 0))) {
            e->fuse_unsafe = true;
            eventq_stop(&e->q);
            return;
        }
        e->last_pop = ev->time;
        e->last_fused = fin;
        if (fin) e->fin_mark = (uint32_t)e->q.seq; /* handles wrap at 2^32 */
    }
    e->now = ev->time;
    e->cur = id;
    int s = stream_of(o);
    if (o->kind == OP_RING) {
        /* One transfer of a ring op: its bytes left (the stream and links
         * come free for the next) and/or it arrived (the next member may
         * send what it carried on). The op ends with its last arrival. */
        const struct tg_ring *r = &g->rings[e->ring_of[id]];
        if (what & EV_RELEASE) {
            e->busy[s] = false;
            release_links(e, o);
        }
        bool last = false;
        if (what & EV_END) {
            last = ++e->ring_arrived[id] == r->steps;
            if (!last) try_start(e, stream_of(&g->ops[e->ring_next[id]]));
        }
        if (last) {
            op_done(e, id, o, ev->time);
            wake_successors(e, id);
        }
        /* An arrival alone changes nothing this stream waits on (its next
         * transfer waits on the member before it); looking would only
         * settle a deferred release early, as an event. */
        if ((what & EV_RELEASE) || last) try_start(e, s);
    } else if (what == (EV_RELEASE | EV_END)) {
        e->busy[s] = false;
        op_done(e, id, o, ev->time);
        release_links(e, o);
        wake_successors(e, id);
        try_start(e, s);
    } else if (what == EV_RELEASE) {
        e->busy[s] = false;
        release_links(e, o);
        try_start(e, s);
    } else {
        op_done(e, id, o, ev->time);
        wake_successors(e, id);
    }
    /* Only the watched op's end does anything there (skip.c). */
    if (id == e->skip_watch && (what & EV_END)) skip_after_event(e, id, what);
}

int engine_run(struct engine *e, struct mp_error *err)
{
    const struct taskgraph *g = e->g;
    e->now = 0;
    e->cur = NONE;
    if (e->record_released && !e->released_by) {
        e->released_by = mp_xmalloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *e->released_by);
        for (int i = 0; i < g->n_ops; i++) e->released_by[i] = NONE;
    }
    for (int chip = 0; chip < g->n_chips; chip++)
        for (int c = 0; c < N_MEM_CATS; c++) {
            double b = g->static_mem[(size_t)chip * N_MEM_CATS + c];
            if (b > 0) mem_change(e, chip, c, b);
        }
    /* A declared period that does not hold: nothing to run (the caller
     * runs the full graph). */
    if (engine_skip_failed(e)) return MP_OK;
    if (!e->no_fuse && !g->n_rings)
        e->fused = mp_xcalloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof *e->fused);
    e->last_pop = -1;
    for (int s = 0; s < n_streams(g); s++) try_start(e, s);
    e->events += eventq_run(&e->q, on_op_end, e);
    /* Chains could not vouch for the order (above), or a window that did
     * not repeat with them might have without: the graph again, unfused. */
    if (e->fused && (e->fuse_unsafe || (engine_skip_failed(e) && e->fused_events))) {
        bool mem = e->record_memory, rel = e->record_released;
        engine_release(e);
        engine_init(e, g);
        e->record_memory = mem;
        e->record_released = rel;
        e->no_fuse = true;
        return engine_run(e, err);
    }
    e->events += e->fused_events;
    if (e->done == g->n_ops || engine_skip_failed(e)) return MP_OK;

    /* Stuck. The ops that never started have no start or end yet (not
     * filled at engine_init): NONE, as for the ops a report may still read
     * of a run that stopped (a stream starts its ops in order; a ring at
     * the head has started once it sent a step). */
    for (int s = 0; s < n_streams(g); s++)
        for (int i = e->next[s]; i < g->stream_off[s + 1]; i++) {
            int id = g->stream_ops[i];
            if (i == e->next[s] && g->ops[id].kind == OP_RING && e->ring_sent[id] > 0) continue;
            e->start[id] = e->end[id] = NONE;
        }
    /* Name the streams whose next op never became ready. */
    char buf[700] = "";
    int shown = 0;
    for (int s = 0; s < n_streams(g) && shown < 4; s++) {
        if (e->next[s] >= g->stream_off[s + 1]) continue;
        int id = g->stream_ops[e->next[s]];
        const struct op *o = &g->ops[id];
        size_t len = strlen(buf);
        snprintf(buf + len, sizeof buf - len, "%s chip %d %s waits on op %s mb %d stage %d (%d deps left)",
                 shown ? ";" : "", o->chip, tg_stream_name(o->stream), tg_tag_name(o->tag),
                 o->mb, o->stage, e->pending[id]);
        shown++;
    }
    return mp_fail(err, MP_ERR_INFEASIBLE,
                   "the schedule cannot finish: %d of %d ops ran, then nothing could start:%s",
                   e->done, g->n_ops, buf);
}

mp_time engine_makespan(const struct engine *e)
{
    mp_time t = 0;
    for (int s = 0; s < n_streams(e->g); s++)
        if (e->stream_last[s] > t) t = e->stream_last[s];
    /* The left-out periods end before the ops after them, but with latency
     * in flight that is not certain: count them (skip.c). */
    mp_time k = skip_inserted_last_end(e);
    return k > t ? k : t;
}
