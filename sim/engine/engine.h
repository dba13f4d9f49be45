/* engine.h — executes a task graph: the discrete-event core.
 *
 * The engine knows chips' streams, their memory and the links; it does not
 * know what a pipeline is. Each (chip, stream) runs its ops in graph order;
 * an op starts when it heads its stream, its dependencies are done, the
 * stream is free and (for a transfer) every link on its route is free. A link
 * carries one transfer at a time; waiting transfers queue on it in arrival
 * order, so contention is simulated, not assumed away. A transfer holds its
 * stream and the links of its route for its serialization time (duration −
 * latency) and arrives (ends, for its dependents) after the latency too, so
 * chunks in flight pay the latency once (DESIGN.md §2). Only op ends (and a
 * transfer's last byte leaving) are events; starts happen inside the handler
 * that frees the op to run.
 *
 * Steady-state skipping (skip.c). When the graph declares a period
 * (taskgraph.h, struct tg_period), the engine takes a snapshot of its state
 * each time the reference stream completes a period: every stream's next op
 * and whether it is busy, every event pending (op, what it does, time
 * relative to the snapshot, in queue order), every link's holder and queue,
 * every chip's memory in use. When two snapshots a period apart agree (ops
 * mapped one period on, times shifted by the period Δ, memory bit for bit),
 * the run from there on is the one from a period earlier shifted by Δ, so
 * the engine jumps: it inserts the graph's `elided` periods, each a copy of
 * the period just run, and carries on with every time it records shifted by
 * elided × Δ. The ops of the step as simulated in full are then reached
 * through engine_stream_len / engine_stream_op. When no two snapshots agree
 * by the end of the declared window the run stops early and
 * engine_skip_failed says so: the caller simulates the full graph instead. */
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
    /* Per op, written as it starts (end -1 until it ends). Not filled
     * ahead: when engine_run stops stuck it sets the ops that never
     * started to -1; after engine_skip_failed (a run redone op by op)
     * they are unset and not to be read. */
    mp_time *start, *end;
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
    /* Per stream, over its ops ended so far (op_done, a chain's, or
     * engine_expand's): the latest end recorded (-1: none) and Σ (end −
     * start), so engine_makespan, engine_stream_last_end and
     * engine_stream_busy need no pass over the ops. */
    mp_time *stream_last, *stream_sum;
    /* Run state: */
    int32_t *pending;               /* unfinished dependencies per op */
    int32_t *next;                  /* per stream: index into its op list */
    bool *busy;                     /* per stream */
    int32_t *link_holder;           /* per link: op holding it, -1 free */
    int32_t *link_wait_head, *link_wait_tail, *wait_next; /* FIFO per link */
    bool *waiting;                  /* per op: queued on a link */
    int32_t *ring_sent, *ring_arrived; /* per op: transfers of an OP_RING started, arrived (NULL: no rings) */
    int32_t *ring_prev, *ring_next; /* per op: neighbours in its ring */
    int32_t *ring_of;               /* per op: its ring in g->rings */
    /* Per op: when the transfer in flight of an OP_RING lets go of its
     * stream and links, if no event was scheduled for that (-1: none
     * pending so). A ring that waits on its neighbour's pieces, not on its
     * own link, is one event a transfer, its arrival; the letting go is
     * done when something next looks (engine.c, ring_settle). */
    mp_time *ring_release_at;
    /* Steady-state skipping (skip.c): */
    mp_time shift;                  /* added to every time recorded: periods jumped × Δ */
    struct engine_skip *skip;       /* NULL when the graph declares no period */
    int32_t skip_watch;             /* the op whose end takes the next snapshot, -1 none */
    /* Fused chains (engine.c, "chains timed at once"): */
    bool no_fuse;                   /* every op its own events */
    bool fuse_unsafe;               /* a chain met a tie it cannot order: run again unfused */
    uint8_t *fused;                 /* [ops]: timed as part of a chain, not by its own events */
    uint64_t fused_events;          /* the events the chains stand for */
    mp_time last_pop;               /* time of the event before the one being handled */
    bool last_fused;                /* that event ended a chain */
    uint32_t fin_mark;              /* the queue's next handle when it popped */
};

/* Prepare to run `g` (finalized). Set e->record_memory before engine_run to
 * keep a memory log, e->record_released to keep released_by. */
void engine_init(struct engine *e, const struct taskgraph *g);
void engine_release(struct engine *e);

/* Run to completion. A graph that cannot finish (a dependency cycle, or a
 * stream order that contradicts the dependencies) is MP_ERR_INFEASIBLE naming
 * the stuck streams and the ops they wait on. */
int engine_run(struct engine *e, struct mp_error *err);

/* Makespan: latest op end (time 0 is the start), left-out periods included. */
mp_time engine_makespan(const struct engine *e);

/* ---- steady-state skipping (skip.c) ---- */

/* Periods left out by the jump (0: none; the graph's ops are the step's). */
int64_t engine_skipped_periods(const struct engine *e);

/* The time Δ after which the state repeated (one declared period, or two
 * when two kinds alternate), 0 without a jump. */
mp_time engine_period(const struct engine *e);

/* True when the graph declared a period but its state never repeated in the
 * window: engine_run stopped early and the times are not the step's. */
bool engine_skip_failed(const struct engine *e);

/* Ops of stream `s` (chip × N_STREAMS + stream) in the step as simulated in
 * full: the graph's, plus the left-out periods'. */
int64_t engine_stream_len(const struct engine *e, int s);

/* The i-th of them (0 ≤ i < engine_stream_len): the graph op that stands for
 * it, with in *shift the time to add to that op's e->start and e->end. */
int engine_stream_op(const struct engine *e, int s, int64_t i, mp_time *shift);

/* The left-out periods on stream `s`: their number K (0: none), and in the
 * step as simulated in full they are the ops at positions *at .. *at +
 * K·*len − 1, *len per repetition, the k-th (1-based) a copy of the *len
 * ops before *at shifted by k·engine_period. (K counts repetitions: the
 * declared periods ÷ 1 or 2, see engine_period.) With a jump, positions
 * before *at are the graph's own ops of the stream, in order (ahead 0), and
 * positions from *at + K·*len on the graph's own from *at on, in order,
 * engine_skipped_periods declared periods ahead. */
int64_t engine_stream_period(const struct engine *e, int s, int64_t *at, int *len);

/* Σ (end − start) over the ops of stream `s` in the step as simulated in
 * full, and their latest end (−1: no ops); both in the graph's op count. */
mp_time engine_stream_busy(const struct engine *e, int s);
mp_time engine_stream_last_end(const struct engine *e, int s);

/* An op of the step as simulated in full, as a run with periods left out
 * stands for it: graph op `id`, `ahead` declared periods later (its copy in
 * a left-out period, or an op after them). Without a jump `ahead` is 0 and
 * the op is the graph's. For reading a skipped run through its
 * dependencies (the step accounting, sim/train/step_split.c). */
struct engine_fop {
    int32_t id;     /* -1: none */
    int64_t ahead;
};

/* Position `q` of stream `s` in the full step (engine_stream_len). */
struct engine_fop engine_full_op(const struct engine *e, int s, int64_t q);

/* With a jump, per graph op: 1 when it sits at or after the jump on its
 * stream. Such an op stands, in the full step, for itself
 * engine_skipped_periods declared periods ahead, its times recorded as the
 * full step's (engine_fop_shift 0); a predecessor or stream neighbour of it
 * that is such an op too is that op again. NULL without a jump. For fast
 * readers of the view (the step accounting). */
const uint8_t *engine_after_jump(const struct engine *e);

/* The time to add to e->start[f.id] and e->end[f.id] for op `f`. */
mp_time engine_fop_shift(const struct engine *e, struct engine_fop f);

/* In the full step, the predecessor of `f` that the graph's edge u → f.id
 * stands for (the graph repeats, so it is u as many periods ahead), and the
 * op before `f` on its stream (id −1 at the stream's start). */
struct engine_fop engine_fop_pred(const struct engine *e, struct engine_fop f, int u);
struct engine_fop engine_fop_prev(const struct engine *e, struct engine_fop f);

/* Op `f`'s position on its stream in the full step. */
int64_t engine_fop_pos(const struct engine *e, struct engine_fop f);

/* How many ops of the full step graph op `id` stands for: 1, or 1 + the
 * repetitions put back for an op of the periods copied. */
int64_t engine_op_count(const struct engine *e, int id);

/* Fill `out` (engine_init'ed on `full`, not run) with the run of `full` as
 * `e` simulated it with periods left out: every op's start and end, the
 * memory peaks and, when e recorded them, the memory log and (when `out`
 * asks, record_released) released_by, expanded from the periods. `full` must be the graph `e->g` stands for (its streams in the
 * same order, with the left-out periods in place), which is checked op by
 * op (kind, duration): MP_ERR_INTERNAL when it is not. */
int engine_expand(const struct engine *e, struct engine *out, struct mp_error *err);

/* Internal to the engine (engine.c calls them; skip.c defines them). */
void skip_init(struct engine *e);
bool skip_watched(const struct engine *e, int id);
/* False when skip_watched is false for every op of stream `s` (now). */
bool skip_watching(const struct engine *e, int s);
void skip_release(struct engine *e);
void skip_note_event(struct engine *e, int id, uint32_t handle, int what);
void skip_after_event(struct engine *e, int id, int what);
mp_time skip_inserted_last_end(const struct engine *e);

#endif
