/* eventq.h — the event queue: a binary heap of (time, priority, sequence).
 *
 * Events at the same time run in priority order (lower first), then in the
 * order they were scheduled, so every run of a scenario is bit-for-bit the
 * same. Nothing is allocated per event: the heap and the handle slots grow
 * geometrically and are reused. A handle lets a scheduled event be cancelled
 * in O(log n). */
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

struct eventq_node {   /* one heap entry; kept small for cache */
    mp_time time;
    uint64_t order;    /* prio << 48 | sequence */
    uint32_t slot;
};

struct eventq_slot {
    int64_t data;
    uint32_t pos;      /* index in heap, or UINT32_MAX when free */
    uint32_t next_free;
};

struct eventq {
    struct eventq_node *heap;
    size_t n, cap;
    struct eventq_slot *slots;
    size_t n_slots, cap_slots;
    uint32_t free_head;   /* free slot list, UINT32_MAX when empty */
    uint64_t seq;
    bool stopped;
    uint64_t popped;      /* events delivered so far */
};

void eventq_init(struct eventq *q);
void eventq_release(struct eventq *q);

/* Schedule `data` at `time` with priority `prio` (0..EVENTQ_MAX_PRIO);
 * returns a handle valid until the event is delivered or cancelled. */
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

static inline size_t eventq_size(const struct eventq *q) { return q->n; }

#endif
