/* engine.h — executes a task graph: the discrete-event core.
 *
 * The engine knows chips' streams, their memory and the links; it does not
 * know what a pipeline is. Each (chip, stream) runs its ops in graph order;
 * an op starts when it heads its stream, its dependencies are done, the
 * stream is free and (for a transfer) every link on its route is free. A link
 * carries one transfer at a time; waiting transfers queue on it in arrival
 * order, so contention is simulated, not assumed away. Only op ends are
 * events; starts happen inside the end handler that frees the op to run. */
#ifndef MPSIM_ENGINE_H
#define MPSIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/common.h"
#include "eventq.h"
#include "taskgraph.h"

/* One change of a chip's memory, kept when engine.record_memory is set. */
struct mem_event {
    mp_time time;
    int32_t chip;
    uint8_t cat;           /* enum mem_cat */
    double delta;          /* bytes, signed */
    double in_use;         /* the chip's total after the change */
};

struct chip_memory {
    double current[N_MEM_CATS];
    double peak;                    /* highest total seen */
    double at_peak[N_MEM_CATS];     /* breakdown at that moment */
    mp_time peak_time;
};

struct engine {
    const struct taskgraph *g;
    struct eventq q;
    mp_time *start, *end;           /* per op, -1 until it runs */
    struct chip_memory *mem;        /* per chip */
    bool record_memory;
    struct mem_event *mem_log;
    int n_mem_log, cap_mem_log;
    /* released_by[op]: the op whose end let `op` start — its last
     * dependency, the op before it on its stream, or the transfer that freed
     * a link it waited for; -1 for ops that started at once. Kept only when
     * record_released is set before engine_run (a timeline asks for it), so
     * a plain run pays one store per event and nothing else. */
    bool record_released;
    int32_t *released_by;
    int32_t cur;                    /* the op whose end is being handled, -1 at start */
    mp_time now;
    int done;                       /* ops finished */
    uint64_t events;
    /* Run state: */
    int32_t *pending;               /* unfinished dependencies per op */
    int32_t *next;                  /* per stream: index into its op list */
    bool *busy;                     /* per stream */
    int32_t *link_holder;           /* per link: op holding it, -1 free */
    int32_t *link_wait_head, *link_wait_tail, *wait_next; /* FIFO per link */
    bool *waiting;                  /* per op: queued on a link */
    int32_t *ring_step;             /* per op: steps of an OP_RING ended (NULL: no rings) */
    int32_t *ring_prev, *ring_next; /* per op: neighbours in its ring */
};

/* Prepare to run `g` (finalized). Set e->record_memory before engine_run to
 * keep a memory log, e->record_released to keep released_by. */
void engine_init(struct engine *e, const struct taskgraph *g);
void engine_release(struct engine *e);

/* Run to completion. A graph that cannot finish (a dependency cycle, or a
 * stream order that contradicts the dependencies) is MP_ERR_INFEASIBLE naming
 * the stuck streams and the ops they wait on. */
int engine_run(struct engine *e, struct mp_error *err);

/* Makespan: latest op end (time 0 is the start). */
mp_time engine_makespan(const struct engine *e);

#endif
