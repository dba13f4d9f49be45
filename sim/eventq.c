/* eventq.c — array binary heap with stable handles; see eventq.h. */
#include "eventq.h"

#include <assert.h>
#include <stdlib.h>

#define NO_SLOT UINT32_MAX
#define SEQ_BITS 48

void eventq_init(struct eventq *q)
{
    *q = (struct eventq){ .free_head = NO_SLOT };
}

void eventq_release(struct eventq *q)
{
    free(q->heap);
    free(q->slots);
    *q = (struct eventq){ .free_head = NO_SLOT };
}

static inline bool before(const struct eventq_node *a, const struct eventq_node *b)
{
    return a->time < b->time || (a->time == b->time && a->order < b->order);
}

static inline void place(struct eventq *q, size_t i, struct eventq_node node)
{
    q->heap[i] = node;
    q->slots[node.slot].pos = (uint32_t)i;
}

static void sift_up(struct eventq *q, size_t i, struct eventq_node node)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&node, &q->heap[parent])) break;
        place(q, i, q->heap[parent]);
        i = parent;
    }
    place(q, i, node);
}

static void sift_down(struct eventq *q, size_t i, struct eventq_node node)
{
    size_t n = q->n;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && before(&q->heap[child + 1], &q->heap[child])) child++;
        if (!before(&q->heap[child], &node)) break;
        place(q, i, q->heap[child]);
        i = child;
    }
    place(q, i, node);
}

static uint32_t take_slot(struct eventq *q)
{
    if (q->free_head != NO_SLOT) {
        uint32_t s = q->free_head;
        q->free_head = q->slots[s].next_free;
        return s;
    }
    MP_GROW(q->slots, q->cap_slots, q->n_slots + 1);
    assert(q->n_slots < NO_SLOT);
    return (uint32_t)q->n_slots++;
}

static void give_slot(struct eventq *q, uint32_t s)
{
    q->slots[s].pos = NO_SLOT;
    q->slots[s].next_free = q->free_head;
    q->free_head = s;
}

uint32_t eventq_schedule(struct eventq *q, mp_time time, int prio, int64_t data)
{
    assert(prio >= 0 && prio <= EVENTQ_MAX_PRIO);
    assert(q->seq < ((uint64_t)1 << SEQ_BITS));
    MP_GROW(q->heap, q->cap, q->n + 1);
    uint32_t s = take_slot(q);
    q->slots[s].data = data;
    struct eventq_node node = {
        .time = time,
        .order = ((uint64_t)prio << SEQ_BITS) | q->seq++,
        .slot = s,
    };
    q->n++;
    sift_up(q, q->n - 1, node);
    return s;
}

/* Remove heap entry i, keeping the heap in order. */
static void remove_at(struct eventq *q, size_t i)
{
    struct eventq_node last = q->heap[--q->n];
    if (i == q->n) return;
    if (i > 0 && before(&last, &q->heap[(i - 1) / 2]))
        sift_up(q, i, last);
    else
        sift_down(q, i, last);
}

bool eventq_cancel(struct eventq *q, uint32_t handle)
{
    if (handle >= q->n_slots || q->slots[handle].pos == NO_SLOT) return false;
    remove_at(q, q->slots[handle].pos);
    give_slot(q, handle);
    return true;
}

bool eventq_pop(struct eventq *q, struct eventq_event *out)
{
    if (q->n == 0) return false;
    struct eventq_node top = q->heap[0];
    out->time = top.time;
    out->prio = (int)(top.order >> SEQ_BITS);
    out->data = q->slots[top.slot].data;
    out->handle = top.slot;
    remove_at(q, 0);
    give_slot(q, top.slot);
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
