/* eventq.c — a radix heap on (time, priority, sequence), a sorted run and
 * a small early heap; see eventq.h for why, with the measurements.
 *
 * Where an event goes when scheduled:
 *  - no earlier than the run's last entry: appended to the run (O(1));
 *  - else, no smaller than the radix base: into its bucket (O(1));
 *  - else (below the base, which only happens when a lower priority or an
 *    earlier time is scheduled after the base moved past it, e.g. serve.c's
 *    prio-0 event at the time of a prio-1 arrival): the early heap, a binary
 *    heap that stays tiny.
 * A pop takes the earliest of the three heads; for the radix part, settle()
 * first brings its minimum into bucket 0. Pop order is fixed by the keys
 * alone ((time, prio, sequence) is unique), so none of this can change which
 * event runs when. */
#include "eventq.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define SEQ_BITS 48
/* A drained bucket keeps its array up to this many entries; a bigger one is
 * freed, else every bucket keeps the largest size it ever had (hold model at
 * 1M pending: peak RSS 129 MB keeping all, 65 MB at 65536, 53 MB at 4096,
 * with no measurable change in speed). */
#ifndef EVENTQ_KEEP
#define EVENTQ_KEEP 4096
#endif

void eventq_init(struct eventq *q)
{
    *q = (struct eventq){ 0 };
}

void eventq_release(struct eventq *q)
{
    free(q->slot);
    free(q->sorted);
    free(q->free_slot);
    for (int b = 0; b < EVENTQ_BUCKETS; b++) free(q->bucket[b].a);
    free(q->early);
    free(q->run);
    *q = (struct eventq){ 0 };
}

/* Keys: time (sign bit flipped, so signed order is unsigned order) in `hi`,
 * prio << 48 | sequence in `lo`; every key is unique. */
static inline uint64_t key_hi(const struct eventq_node *a)
{
    return (uint64_t)a->time ^ ((uint64_t)1 << 63);
}

/* Bitwise, not short-circuit: in the early heap the outcome is a coin toss,
 * so a branch on it mispredicts half the time. */
static inline bool before(const struct eventq_node *a, const struct eventq_node *b)
{
#ifdef __SIZEOF_INT128__
    unsigned __int128 ka = (unsigned __int128)key_hi(a) << 64 | a->order;
    unsigned __int128 kb = (unsigned __int128)key_hi(b) << 64 | b->order;
    return ka < kb;
#else
    return (a->time < b->time) | ((a->time == b->time) & (a->order < b->order));
#endif
}

/* The bucket of a key no smaller than the base (last_hi, last_lo): 0 when
 * equal; else, with d the highest DIGIT-bit digit in which they differ and
 * v the key's value of that digit, 1 + (d << DIGIT) + v. Bucket order is
 * key order: all keys in a lower bucket are smaller. */
static inline int bucket_of(const struct eventq *q, const struct eventq_node *a)
{
    enum { D = EVENTQ_DIGIT, M = (1 << EVENTQ_DIGIT) - 1 };
    uint64_t hi = key_hi(a), x = hi ^ q->last_hi;
    if (x) {
        int d = (63 - __builtin_clzll(x)) / D;
        return 1 + ((64 / D + d) << D) + (int)((hi >> (d * D)) & M);
    }
    uint64_t y = a->order ^ q->last_lo;
    if (y) {
        int d = (63 - __builtin_clzll(y)) / D;
        return 1 + (d << D) + (int)((a->order >> (d * D)) & M);
    }
    return 0;
}

static inline void bucket_push(struct eventq *q, int b, struct eventq_node node)
{
    struct eventq_bucket *k = &q->bucket[b];
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 16;
        k->a = mp_xrealloc(k->a, k->cap * sizeof *k->a);
    }
    k->a[k->n++] = node;
    q->mask[b >> 6] |= (uint64_t)1 << (b & 63);
}

/* ---- the early heap: keys below the radix base (rare; see eventq.h) ---- */

static void early_push(struct eventq *q, struct eventq_node node)
{
    MP_GROW(q->early, q->early_cap, q->early_n + 1);
    size_t i = q->early_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&node, &q->early[parent])) break;
        q->early[i] = q->early[parent];
        i = parent;
    }
    q->early[i] = node;
}

static void early_remove(struct eventq *q, size_t i)
{
    struct eventq_node *h = q->early;
    struct eventq_node node = h[--q->early_n];
    size_t n = q->early_n;
    if (i == n) return;
    while (i > 0 && before(&node, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&h[c + 1], &h[c])) c++;
        if (!before(&h[c], &node)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = node;
}

/* ---- the sorted run: a ring buffer (capacity a power of two) ---- */

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

/* ---- the small mode: one sorted array of slots (eventq.h) ---- */

static void radix_push(struct eventq *q, struct eventq_node node);

/* Key order in two compares: the time as a signed number, then the order. */
static inline bool small_before(const struct eventq_node *a, const struct eventq_node *b)
{
    return a->time < b->time || (a->time == b->time && a->order < b->order);
}

static void small_alloc(struct eventq *q)
{
    q->slot = mp_xmalloc(EVENTQ_SMALL * sizeof *q->slot);
    q->sorted = mp_xmalloc(2 * EVENTQ_SMALL * sizeof *q->sorted);
    q->free_slot = mp_xmalloc(EVENTQ_SMALL * sizeof *q->free_slot);
    for (int i = 0; i < EVENTQ_SMALL; i++) q->free_slot[i] = (uint8_t)(EVENTQ_SMALL - 1 - i);
    q->n_free = EVENTQ_SMALL;
}

/* Into a free slot, and the slot into its place among sorted[head .. head
 * + n): bisect for the first key after it (keys are unique), move the
 * slots of those up one (a byte each). */
static void small_push(struct eventq *q, struct eventq_node node)
{
    if (!q->slot) small_alloc(q);
    if (q->small_head + q->small_n == 2 * EVENTQ_SMALL) {
        memmove(q->sorted, q->sorted + q->small_head, q->small_n);
        q->small_head = 0;
    }
    uint8_t id = q->free_slot[--q->n_free];
    q->slot[id] = node;
    uint8_t *a = q->sorted + q->small_head;
    size_t lo = 0, hi = q->small_n;
    /* Most events go at or near the end (later than what is pending). */
    if (hi > 0 && small_before(&node, &q->slot[a[hi - 1]])) {
        hi--;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (small_before(&node, &q->slot[a[mid]])) hi = mid; else lo = mid + 1;
        }
        memmove(a + lo + 1, a + lo, q->small_n - lo);
    } else {
        lo = hi;
    }
    a[lo] = id;
    q->small_n++;
}

/* Past EVENTQ_SMALL pending: every event to the radix heap, for good. */
static void small_to_radix(struct eventq *q)
{
    q->big = true;
    for (size_t i = 0; i < q->small_n; i++) radix_push(q, q->slot[q->sorted[q->small_head + i]]);
    q->small_head = q->small_n = 0;
}

uint32_t eventq_schedule(struct eventq *q, mp_time time, int prio, int64_t data)
{
    assert(prio >= 0 && prio <= EVENTQ_MAX_PRIO);
    assert(q->seq < ((uint64_t)1 << SEQ_BITS));
    uint64_t seq = q->seq++;
    struct eventq_node node = {
        .time = time, .order = ((uint64_t)prio << SEQ_BITS) | seq, .data = data,
    };
    if (!q->big && q->small_n < EVENTQ_SMALL) {
        small_push(q, node);
        return (uint32_t)seq;
    }
    if (!q->big) small_to_radix(q);
    radix_push(q, node);
    return (uint32_t)seq;
}

static void radix_push(struct eventq *q, struct eventq_node node)
{
    if (q->run_n == 0 || !before(&node, run_tail(q))) {
        /* No earlier than everything in the run: append, O(1). A ring of
         * transfers of one size schedules nothing else. */
        run_push(q, node);
    } else {
        uint64_t hi = key_hi(&node);
        if (hi > q->last_hi || (hi == q->last_hi && node.order >= q->last_lo))
            bucket_push(q, bucket_of(q, &node), node);
        else
            early_push(q, node);
        q->n++;
    }
}

/* Make bucket 0 hold the radix part's smallest key (the radix part must not
 * be empty): the lowest non-empty bucket's minimum becomes the base and the
 * bucket is spread over the buckets below it. Every key moves to a strictly
 * lower bucket each time, at most 128 times in all and in practice a few. */
static void settle(struct eventq *q)
{
    if (q->bucket[0].n) return;
    int b = 0;
    for (int w = 0; w < EVENTQ_MASK_WORDS; w++)
        if (q->mask[w]) {
            b = 64 * w + __builtin_ctzll(q->mask[w]);
            break;
        }
    struct eventq_bucket *k = &q->bucket[b];
    size_t m = 0;
    for (size_t i = 1; i < k->n; i++)
        if (before(&k->a[i], &k->a[m])) m = i;
    q->last_hi = key_hi(&k->a[m]);
    q->last_lo = k->a[m].order;
    size_t n = k->n;
    k->n = 0;
    q->mask[b >> 6] &= ~((uint64_t)1 << (b & 63));
    for (size_t i = 0; i < n; i++) bucket_push(q, bucket_of(q, &k->a[i]), k->a[i]);
    if (k->cap > EVENTQ_KEEP) {
        free(k->a);
        k->a = NULL;
        k->cap = 0;
    }
}

bool eventq_cancel(struct eventq *q, uint32_t handle)
{
    /* A linear scan: the engine never cancels. */
    for (size_t i = 0; i < q->small_n; i++) {
        uint8_t *a = q->sorted + q->small_head;
        if ((uint32_t)q->slot[a[i]].order != handle) continue;
        q->free_slot[q->n_free++] = a[i];
        memmove(a + i, a + i + 1, q->small_n - i - 1);
        q->small_n--;
        return true;
    }
    for (size_t i = 0; i < q->early_n; i++) {
        if ((uint32_t)q->early[i].order != handle) continue;
        early_remove(q, i);
        q->n--;
        return true;
    }
    for (int b = 0; b < EVENTQ_BUCKETS; b++) {
        struct eventq_bucket *k = &q->bucket[b];
        for (size_t i = 0; i < k->n; i++) {
            if ((uint32_t)k->a[i].order != handle) continue;
            k->a[i] = k->a[--k->n]; /* buckets are unordered */
            if (k->n == 0) q->mask[b >> 6] &= ~((uint64_t)1 << (b & 63));
            q->n--;
            return true;
        }
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

/* eventq_pop's body, inline in eventq_run too: the engine's ~46 K pops of
 * the 1T step each paid a call and the copy out through memory. */
static inline __attribute__((always_inline)) bool pop(struct eventq *q, struct eventq_event *out)
{
    if (!q->big) {
        if (q->small_n == 0) return false;
        uint8_t id = q->sorted[q->small_head];
        const struct eventq_node *top = &q->slot[id];
        q->free_slot[q->n_free++] = id;
        out->time = top->time;
        out->prio = (int)(top->order >> SEQ_BITS);
        out->data = top->data;
        out->handle = (uint32_t)top->order;
        q->small_head = --q->small_n ? q->small_head + 1 : 0;
        q->popped++;
        return true;
    }
    /* The earliest of three: the run's head, the radix minimum, the early
     * heap's root. */
    const struct eventq_node *top = NULL;
    int from = 0;
    if (q->n > q->early_n) {
        settle(q);
        top = &q->bucket[0].a[0];
        from = 1;
    }
    if (q->early_n && (!top || before(&q->early[0], top))) {
        top = &q->early[0];
        from = 2;
    }
    if (q->run_n && (!top || before(&q->run[q->run_head], top))) {
        top = &q->run[q->run_head];
        from = 3;
    }
    if (!top) return false;
    out->time = top->time;
    out->prio = (int)(top->order >> SEQ_BITS);
    out->data = top->data;
    out->handle = (uint32_t)top->order;
    if (from == 1) {
        q->bucket[0].n = 0;
        q->mask[0] &= ~(uint64_t)1;
        q->n--;
    } else if (from == 2) {
        early_remove(q, 0);
        q->n--;
    } else {
        q->run_head = (q->run_head + 1) & (q->run_cap - 1);
        q->run_n--;
    }
    q->popped++;
    return true;
}

bool eventq_pop(struct eventq *q, struct eventq_event *out)
{
    return pop(q, out);
}

uint64_t eventq_run(struct eventq *q,
                    void (*handler)(void *ctx, const struct eventq_event *ev),
                    void *ctx)
{
    uint64_t delivered = 0;
    struct eventq_event ev;
    q->stopped = false;
    while (!q->stopped && pop(q, &ev)) {
        handler(ctx, &ev);
        delivered++;
    }
    return delivered;
}

void eventq_stop(struct eventq *q)
{
    q->stopped = true;
}
