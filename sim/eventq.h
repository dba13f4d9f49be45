/* eventq.h — the event queue: a binary heap of (time, priority, sequence).
 *
 * Events at the same time run in priority order (lower first), then in the
 * order they were scheduled, so every run of a scenario is bit-for-bit the
 * same. Nothing is allocated per event: the heap grows geometrically and is
 * reused. A 4-ary heap whose nodes carry the payload, beside a sorted run
 * that takes events later than all before them (eventq.c says why).
 * A handle lets a scheduled event be cancelled in O(n): nothing on the hot
 * path cancels, so cancel scans rather than every heap move paying to keep
 * an index current. */
#ifndef MPSIM_EVENTQ_H
#define MPSIM_EVENTQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define EVENTQ_MAX_PRIO 0xffff

struct eventq_event {
    mp_time time;
    int prio;
    int64_t data;      /* the scheduler's payload (an op index, say) */
    uint32_t handle;
};

#ifndef EVENTQ_ARITY
#define EVENTQ_ARITY 4 /* children per heap node; 2 measured slower (bench/README.md) */
#endif

struct eventq_node {   /* one heap entry, payload included: 24 bytes */
    mp_time time;
    uint64_t order;    /* prio << 48 | sequence */
    int64_t data;
};

struct eventq {
    struct eventq_node *heap;
    size_t n, cap;        /* entries in heap[], counting a vacant root */
    bool hole;            /* heap[0] is vacant: popped, not yet refilled */
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
    return q->n - (q->hole ? 1 : 0) + q->run_n;
}

#endif
