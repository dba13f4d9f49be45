/* eventq.h — the event queue: (time, priority, sequence) order.
 *
 * Events at the same time run in priority order (lower first), then in the
 * order they were scheduled, so every run of a scenario is bit-for-bit the
 * same. A handle lets a scheduled event be cancelled in O(n): nothing on the
 * hot path cancels, so cancel scans.
 *
 * Why a radix heap. Simulated time never goes back: every event the engine
 * schedules is no earlier than the one being handled, so the keys popped are
 * non-decreasing and a radix heap applies. It files each key in O(1) into a
 * bucket by the highest 4-bit digit in which it differs from the last
 * minimum; a pop spreads only the lowest bucket. Every access is an append
 * or a sequential sweep, where a d-ary heap at 1M pending sifts through a
 * random cache line per level. Hold model (bench/bench_engine: pop one, push
 * one 1 ns–1 ms later), against the 4-ary heap of 24-byte nodes it replaces:
 *   - callgrind --cache-sim, 2 MB LL, per event: 1K pending 442 → 409
 *     instructions; 1M pending 748 → 654 instructions and 6.0 → 4.3 LL misses,
 *     which are now streaming (prefetched) instead of dependent;
 *   - wall, medians of interleaved runs: bench/README.md (1M pending ~2 →
 *     ~10 M events/s; 1K pending no loss).
 *   Digits of 1 bit: 535/968 instructions per event (1K/1M), 6.6/11.7 moves
 *   of a key per event; 4 bits: 409/654, 4.3/6.8 moves; 8 bits: 554/644
 *   (4,097 buckets to scan at 1K). Hence 4.
 * Beside it, the sorted run kept from the heap version: ops of equal
 * duration started in time order (a ring collective's steps) end in that
 * order and never enter the buckets. Keys below the base (a lower priority
 * scheduled at the current time) go to a small binary heap. Nothing is
 * allocated per event: arrays grow geometrically and are reused.
 *
 * Before all that, while no more than EVENTQ_SMALL events have ever been
 * pending at once, the queue is one sorted array of slot numbers (a byte
 * each; the events sit in fixed slots): a schedule finds its place by
 * bisection and moves the later slot numbers up one, a pop takes the head.
 * A pipeline step keeps few events pending (the 1T GPT step on 3,072
 * A100s: 48 on average, 75 at most), where the radix heap spreads a bucket
 * at almost every pop: callgrind, that step, 138,627 events: radix heap
 * 35.0 M instructions popping + 11.4 M scheduling (335 an event), the
 * array 7.5 M + 19.7 M (196); the binary early heap alone was 34.0 M
 * popping (tried, dropped), a sorted array of whole 24-byte events 6.2 M +
 * 28.6 M (the moves). The first schedule past
 * EVENTQ_SMALL moves every event into the radix heap for good, so large
 * queues (the hold model at 1K and 1M pending, serving) run as before.
 * The pop order is the keys' in both, so nothing outside can tell. */
#ifndef MPSIM_EVENTQ_H
#define MPSIM_EVENTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/common.h"

#define EVENTQ_MAX_PRIO 0xffff

struct eventq_event {
    mp_time time;
    int prio;
    int64_t data;      /* the scheduler's payload (an op index, say) */
    uint32_t handle;
};

struct eventq_node {   /* one entry, payload included: 24 bytes */
    mp_time time;
    uint64_t order;    /* prio << 48 | sequence */
    int64_t data;
};

struct eventq_bucket {
    struct eventq_node *a;
    size_t n, cap;
};

/* Keys are read as 128-bit numbers (time, order) in digits of EVENTQ_DIGIT
 * bits (1, 2, 4 or 8). Bucket 0 holds the base itself; bucket
 * 1 + (d << EVENTQ_DIGIT) + v the keys whose highest digit differing from
 * the base is digit d, with value v there. */
#ifndef EVENTQ_DIGIT
#define EVENTQ_DIGIT 4
#endif
#define EVENTQ_BUCKETS (1 + (128 / EVENTQ_DIGIT << EVENTQ_DIGIT))
#define EVENTQ_MASK_WORDS ((EVENTQ_BUCKETS + 63) / 64)

#ifndef EVENTQ_SMALL
#define EVENTQ_SMALL 128
#endif
#if EVENTQ_SMALL > 256
#error "slot numbers are bytes"
#endif

struct eventq {
    /* The small mode: events in slot[] (EVENTQ_SMALL of them), their slot
     * numbers in key order at sorted[small_head .. small_head + small_n)
     * (room for 2 × EVENTQ_SMALL, so the head can slide before a
     * compaction), the free slots a stack; `big` once the radix heap took
     * over (then the small mode is empty and unused). */
    struct eventq_node *slot;
    uint8_t *sorted, *free_slot;
    size_t small_head, small_n, n_free;
    bool big;
    struct eventq_bucket bucket[EVENTQ_BUCKETS];
    uint64_t mask[EVENTQ_MASK_WORDS];     /* non-empty buckets */
    uint64_t last_hi, last_lo; /* the radix base: no radix key is below it */
    struct eventq_node *early; /* binary heap of keys below the base (eventq.c) */
    size_t early_n, early_cap;
    size_t n;             /* events in the buckets and the early heap */
    struct eventq_node *run; /* ring buffer of events in key order (eventq.c) */
    size_t run_head, run_n, run_cap;
    uint64_t seq;
    bool stopped;
    uint64_t popped;      /* events delivered so far */
};

void eventq_init(struct eventq *q);
void eventq_release(struct eventq *q);

/* Schedule `data` at `time` with priority `prio` (0..EVENTQ_MAX_PRIO);
 * returns a handle valid until the event is delivered or cancelled (the low
 * 32 bits of its sequence number, so a stale handle could name a newer event
 * only after 2^32 more schedules). */
uint32_t eventq_schedule(struct eventq *q, mp_time time, int prio, int64_t data);

/* Remove a scheduled event; false if it was already delivered or cancelled. */
bool eventq_cancel(struct eventq *q, uint32_t handle);

/* Take the earliest event into `out`; false when the queue is empty. */
bool eventq_pop(struct eventq *q, struct eventq_event *out);

/* Deliver events to `handler` in order until the queue is empty or the handler
 * calls eventq_stop. Returns the number of events delivered by this call. */
uint64_t eventq_run(struct eventq *q,
                    void (*handler)(void *ctx, const struct eventq_event *ev),
                    void *ctx);

/* Make eventq_run return after the current event. */
void eventq_stop(struct eventq *q);

static inline size_t eventq_size(const struct eventq *q)
{
    return q->n + q->run_n + q->small_n;
}

#endif
