/* eventq.c — d-ary heap with the payload in the node; see eventq.h.
 *
 * Why this shape (measured with bench/bench_engine, hold model):
 *  - The payload lives in the heap node. The first version kept it in a
 *    handle slot and wrote slots[node.slot].pos on every heap move; at 1M
 *    pending that write lands on a random cache line per level and was most
 *    of the cost. The engine never cancels, so cancel may scan (O(n)).
 *  - Four children per node: half the levels of a binary heap, and the four
 *    children of a node sit next to each other (one or two cache lines), so
 *    a sift-down costs fewer misses though it compares more.
 *  - A pop leaves the root vacant ("hole") instead of moving the last node up
 *    at once. The usual caller (the engine, a hold loop) schedules the next
 *    event right after a pop; that event then drops into the hole and is
 *    sifted down once, instead of one sift-down for the pop and one sift-up
 *    for the push. Anything else first fills the hole the ordinary way.
 *  - Beside the heap, a sorted run: an event no earlier than the latest in
 *    the run is appended to it in O(1). Ops of equal duration started in
 *    time order (a ring collective's steps, a pipeline's steady state) end
 *    in that order, so most events never touch the heap. A pop takes the
 *    earlier of the run's head and the heap's root.
 * Pop order is fixed by the keys alone (time, prio, sequence are unique), so
 * none of this can change which event runs when. */
/* madvise(MADV_HUGEPAGE) is not POSIX; ask for it before any header. */
#define _DEFAULT_SOURCE
#include "eventq.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SEQ_BITS 48
#define ARITY EVENTQ_ARITY

void eventq_init(struct eventq *q)
{
    *q = (struct eventq){ 0 };
}

void eventq_release(struct eventq *q)
{
    free(q->heap);
    free(q->run);
    *q = (struct eventq){ 0 };
}

#define HUGE_PAGE ((size_t)2 << 20)

/* Grow the heap array. Past a huge page it is allocated huge-page aligned and
 * the kernel asked to back it with huge pages: at 1M pending the heap is
 * 24 MB, and with 4 KiB pages every level of a sift below the cached top
 * costs a TLB miss on top of the cache miss. */
static void grow(struct eventq *q, size_t need)
{
    if (need <= q->cap) return;
    size_t cap = q->cap ? q->cap * 2 : 64;
    while (cap < need) cap *= 2;
    size_t bytes = cap * sizeof *q->heap;
    struct eventq_node *h;
    if (bytes >= HUGE_PAGE) {
        bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        h = aligned_alloc(HUGE_PAGE, bytes);
#ifdef MADV_HUGEPAGE
        if (h) madvise(h, bytes, MADV_HUGEPAGE); /* advice only: failure is harmless */
#endif
        if (!h) h = mp_xmalloc(bytes); /* exits when memory is out */
        if (q->n) memcpy(h, q->heap, q->n * sizeof *q->heap);
        free(q->heap);
    } else {
        h = mp_xrealloc(q->heap, bytes);
    }
    q->heap = h;
    q->cap = cap;
}

/* Bitwise, not short-circuit: the outcome is a coin toss in a heap, so a
 * branch on it mispredicts half the time; this compiles to flag arithmetic. */
static inline bool before(const struct eventq_node *a, const struct eventq_node *b)
{
#ifdef __SIZEOF_INT128__
    /* (time, order) as one unsigned 128-bit key: a compare and a borrow. */
    unsigned __int128 ka = (unsigned __int128)((uint64_t)a->time ^ ((uint64_t)1 << 63)) << 64 | a->order;
    unsigned __int128 kb = (unsigned __int128)((uint64_t)b->time ^ ((uint64_t)1 << 63)) << 64 | b->order;
    return ka < kb;
#else
    return (a->time < b->time) | ((a->time == b->time) & (a->order < b->order));
#endif
}

static inline void sift_up(struct eventq_node *h, size_t i, struct eventq_node node)
{
    while (i > 0) {
        size_t parent = (i - 1) / ARITY;
        if (!before(&node, &h[parent])) break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = node;
}

static inline void sift_down(struct eventq_node *h, size_t n, size_t i, struct eventq_node node)
{
    for (;;) {
        size_t first = ARITY * i + 1;
        if (first >= n) break;
        size_t best = first;
        if (ARITY == 4 && first + 4 <= n) {
            /* A full family: a two-round tournament without branches. */
            size_t a = first + before(&h[first + 1], &h[first]);
            size_t b = first + 2 + before(&h[first + 3], &h[first + 2]);
            best = before(&h[b], &h[a]) ? b : a;
        } else {
            size_t end = first + ARITY < n ? first + ARITY : n;
            for (size_t c = first + 1; c < end; c++)
                if (before(&h[c], &h[best])) best = c;
        }
        if (!before(&h[best], &node)) break;
        h[i] = h[best];
        i = best;
    }
    h[i] = node;
}

/* Complete a pop that left the root vacant: the last node fills it. */
static inline void fill_hole(struct eventq *q)
{
    q->hole = false;
    struct eventq_node last = q->heap[--q->n];
    if (q->n > 0) sift_down(q->heap, q->n, 0, last);
}

/* Append to the sorted run (a ring buffer, capacity a power of two). */
static void run_push(struct eventq *q, struct eventq_node node)
{
    if (q->run_n == q->run_cap) {
        size_t cap = q->run_cap ? 2 * q->run_cap : 64;
        struct eventq_node *r = mp_xmalloc(cap * sizeof *r);
        for (size_t k = 0; k < q->run_n; k++) r[k] = q->run[(q->run_head + k) & (q->run_cap - 1)];
        free(q->run);
        q->run = r;
        q->run_cap = cap;
        q->run_head = 0;
    }
    q->run[(q->run_head + q->run_n++) & (q->run_cap - 1)] = node;
}

static inline const struct eventq_node *run_tail(const struct eventq *q)
{
    return &q->run[(q->run_head + q->run_n - 1) & (q->run_cap - 1)];
}

uint32_t eventq_schedule(struct eventq *q, mp_time time, int prio, int64_t data)
{
    assert(prio >= 0 && prio <= EVENTQ_MAX_PRIO);
    assert(q->seq < ((uint64_t)1 << SEQ_BITS));
    uint64_t seq = q->seq++;
    struct eventq_node node = {
        .time = time, .order = ((uint64_t)prio << SEQ_BITS) | seq, .data = data,
    };
    /* No earlier than everything in the run: append, O(1). In a simulation
     * most events are; a ring of transfers of one size schedules nothing
     * else. */
    if (q->run_n == 0 || !before(&node, run_tail(q))) {
        run_push(q, node);
    } else if (q->hole) {
        q->hole = false;
        sift_down(q->heap, q->n, 0, node);
    } else {
        grow(q, q->n + 1);
        q->n++;
        sift_up(q->heap, q->n - 1, node);
    }
    return (uint32_t)seq;
}

bool eventq_cancel(struct eventq *q, uint32_t handle)
{
    if (q->hole) fill_hole(q);
    /* A linear scan: the engine never cancels, and keeping a position per
     * event up to date costs a random write on every heap move. */
    for (size_t i = 0; i < q->n; i++) {
        if ((uint32_t)q->heap[i].order != handle) continue;
        struct eventq_node last = q->heap[--q->n];
        if (i == q->n) return true;
        if (i > 0 && before(&last, &q->heap[(i - 1) / ARITY]))
            sift_up(q->heap, i, last);
        else
            sift_down(q->heap, q->n, i, last);
        return true;
    }
    size_t mask = q->run_cap - 1;
    for (size_t k = 0; k < q->run_n; k++) {
        if ((uint32_t)q->run[(q->run_head + k) & mask].order != handle) continue;
        for (; k + 1 < q->run_n; k++)  /* close the gap, keeping the run sorted */
            q->run[(q->run_head + k) & mask] = q->run[(q->run_head + k + 1) & mask];
        q->run_n--;
        return true;
    }
    return false;
}

bool eventq_pop(struct eventq *q, struct eventq_event *out)
{
    if (q->hole) fill_hole(q);
    const struct eventq_node *top;
    if (q->run_n > 0 && (q->n == 0 || before(&q->run[q->run_head], &q->heap[0]))) {
        top = &q->run[q->run_head];
        q->run_head = (q->run_head + 1) & (q->run_cap - 1);
        q->run_n--;
    } else if (q->n > 0) {
        top = &q->heap[0];
        q->hole = true;
    } else {
        return false;
    }
    /* `top` stays readable: a vacated run entry or the vacant root is only
     * overwritten by the next schedule. */
    out->time = top->time;
    out->prio = (int)(top->order >> SEQ_BITS);
    out->data = top->data;
    out->handle = (uint32_t)top->order;
    q->popped++;
    return true;
}

uint64_t eventq_run(struct eventq *q,
                    void (*handler)(void *ctx, const struct eventq_event *ev),
                    void *ctx)
{
    uint64_t delivered = 0;
    struct eventq_event ev;
    q->stopped = false;
    while (!q->stopped && eventq_pop(q, &ev)) {
        handler(ctx, &ev);
        delivered++;
    }
    return delivered;
}

void eventq_stop(struct eventq *q)
{
    q->stopped = true;
}
