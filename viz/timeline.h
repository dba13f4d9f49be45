/* timeline.h — what the viewer shows: the ops, memory changes and run facts of
 * one simulated step, as the simulator's `--timeline OUT.csv` writes them.
 *
 * The struct is filled either by the CSV reader (timeline_read_csv) or,
 * in-process, by whoever runs a scenario through the library: call
 * timeline_add_op / timeline_add_mem / timeline_set_meta in any order, then
 * timeline_finish once, which sorts and indexes everything the layout needs.
 * Times are integer picoseconds (mp_time), as in the engine, so a box edge
 * lands exactly where the simulator put it.
 *
 * Plain C: no SDL here (DESIGN.md §1, §6). */
#ifndef MPSIM_VIZ_TIMELINE_H
#define MPSIM_VIZ_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/common.h"

/* A chip's two queues (DESIGN.md §2). */
enum tl_stream { TL_COMPUTE = 0, TL_COMM = 1, TL_STREAMS = 2 };

/* Known op kinds sit at fixed ids so colours and tests can name them; any
 * other kind string is interned after TL_KIND_CUSTOM and drawn grey. */
enum tl_kind {
    TL_KIND_F,              /* forward */
    TL_KIND_B,              /* input-gradient backward */
    TL_KIND_W,              /* weight-gradient backward */
    TL_KIND_BW,             /* fused backward */
    TL_KIND_FB,             /* overlapped forward + backward */
    TL_KIND_SEND,           /* stage-to-stage transfer */
    TL_KIND_ALL_REDUCE,
    TL_KIND_REDUCE_SCATTER,
    TL_KIND_ALL_GATHER,
    TL_KIND_ALL_TO_ALL,
    TL_KIND_BROADCAST,
    TL_KIND_OPTIMIZER,
    TL_KIND_PREFILL,        /* serving: a pass of prompt chunks only */
    TL_KIND_DECODE,         /* serving: a pass of decode tokens only */
    TL_KIND_MIXED,          /* serving: prompt chunks and decode tokens together */
    TL_KIND_CUSTOM          /* first id of a kind the viewer does not know */
};

/* Memory categories; an unknown label counts as TL_MEM_OTHER. */
enum tl_mem_cat {
    TL_MEM_WEIGHTS, TL_MEM_GRADS, TL_MEM_OPTIMIZER, TL_MEM_ACTIVATIONS, TL_MEM_KV,
    TL_MEM_OTHER, TL_MEM_CATS
};

/* One op on one chip's stream. Kept small: a 1-million-op timeline is ~56 MB. */
struct tl_op {
    mp_time start, end;    /* picoseconds, end >= start */
    int64_t bytes;         /* bytes moved; 0 for compute */
    int32_t chip, stage;
    int32_t microbatch;    /* -1 when none */
    int32_t chunk;         /* -1 when none */
    int32_t layer_first, layer_last; /* -1 when none */
    uint32_t label;        /* offset of the label in timeline.strings ("" is 0) */
    uint16_t kind;         /* enum tl_kind, or an interned custom id */
    uint8_t stream;        /* enum tl_stream */
};

/* One change of a chip's memory in use. */
struct tl_mem {
    mp_time t;
    int64_t delta;         /* signed bytes */
    int64_t in_use;        /* the chip's bytes in use after the change */
    int32_t chip;
    uint16_t category;     /* enum tl_mem_cat */
};

/* A key=value fact; chip -1 for run-wide keys (scenario, schedule, ...). */
struct tl_meta {
    int32_t chip;
    char *key, *value;
};

/* Per-chip facts derived by timeline_finish. */
struct tl_chip {
    bool present;           /* some row names this chip */
    int32_t stage;          /* of its first op, -1 if none */
    int32_t node;           /* from per-chip meta node=N, -1 if absent */
    int64_t capacity;       /* from meta capacity_bytes, 0 if unknown */
    int64_t peak_mem;       /* max in_use over its memory rows */
    mp_time busy;           /* union of its compute ops' intervals */
    size_t mem_first, mem_count; /* its slice of timeline.mem (sorted by t) */
};

/* A lane's level-of-detail pyramid: how busy each time bin is and which
 * kind fills most of it, at bin widths b0, 2·b0, 4·b0, ... over the step.
 * A frame that shows many ops per pixel reads a few bins per pixel column
 * instead of every op, so its cost follows the window width, not the op
 * count (timeline_finish builds it for lanes of TL_LOD_MIN_OPS ops or more). */
#define TL_LOD_MIN_OPS 512
#define TL_LOD_SLOTS 16          /* kinds below TL_KIND_CUSTOM, customs share the last */
struct tl_lod {
    double base, b0;             /* time of bin 0's left edge, level-0 bin width (ps) */
    int levels;
    uint32_t n0;                 /* level-0 bins; level l has n0 >> l */
    size_t off[24];              /* start of level l in busy/kind */
    float *busy;                 /* busy share of the bin, [0, 1] (more if ops overlap) */
    uint8_t *kind;               /* kind slot covering most of the bin */
};

/* One chip's stream: a slice of timeline.ops sorted by start. */
struct tl_lane {
    size_t first, count;
    struct tl_lod *lod;          /* NULL for short lanes */
};

struct timeline {
    char *name;                  /* what to call it on screen (file name) */

    struct tl_op *ops;   size_t n_ops, cap_ops;
    struct tl_mem *mem;  size_t n_mem, cap_mem;
    struct tl_meta *meta; size_t n_meta, cap_meta;
    char *strings;       size_t n_strings, cap_strings; /* label pool */
    char **kinds;        size_t n_kinds, cap_kinds;     /* id -> name */

    /* Derived by timeline_finish; valid while `finished`. */
    bool finished;
    int n_chips;                 /* max chip index + 1 */
    struct tl_chip *chips;       /* [n_chips] */
    struct tl_lane *lanes;       /* [n_chips * TL_STREAMS], chip*2 + stream */
    mp_time *maxend;             /* [n_ops]: running max of end within a lane */
    mp_time *cumbusy;            /* [n_ops]: union of the lane's ops first..i, ps */
    bool kind_seen[TL_LOD_SLOTS];/* which kinds occur (customs in the last slot) */
    int *rows;  int n_rows;      /* present chips ordered by (stage, node, chip) */
    mp_time t_begin, t_end;      /* first op start, last op end (the step) */
    mp_time *events; size_t n_events; /* sorted distinct op starts and ends */
    int64_t max_peak_mem;        /* over all chips */
    bool has_comm, has_mem;
    double bubble;               /* DESIGN.md §3, from the ops */
};

void timeline_init(struct timeline *tl);
void timeline_release(struct timeline *tl);

/* The id of a kind name ("F", "all_reduce", "my_thing"), interning new ones. */
uint16_t timeline_kind_id(struct timeline *tl, const char *name);
const char *timeline_kind_name(const struct timeline *tl, uint16_t kind);

/* Append an op; `label` may be NULL. Fields are taken as they are: the CSV
 * reader checks them, the library is trusted (asserts end >= start, chip >= 0). */
void timeline_add_op(struct timeline *tl, const struct tl_op *op, const char *label);
void timeline_add_mem(struct timeline *tl, const struct tl_mem *m);
/* Set (or replace) a key for `chip` (-1: run-wide). */
void timeline_set_meta(struct timeline *tl, int chip, const char *key, const char *value);
/* The value of a key, or NULL. */
const char *timeline_meta(const struct timeline *tl, int chip, const char *key);
/* A memory category from its label ("activations" -> TL_MEM_ACTIVATIONS). */
uint16_t timeline_mem_category(const char *label);
const char *timeline_mem_category_name(uint16_t cat);

static inline const char *timeline_label(const struct timeline *tl, const struct tl_op *op)
{
    return tl->strings ? tl->strings + op->label : "";
}

/* Sort and index after the last add: ops by (chip, stream, start), memory by
 * (chip, t); per-chip busy time, peak memory, rows, events, bubble. May be
 * called again after more adds. */
void timeline_finish(struct timeline *tl);

/* The lane of (chip, stream) after timeline_finish. */
static inline const struct tl_lane *timeline_lane(const struct timeline *tl, int chip, int stream)
{
    return &tl->lanes[chip * TL_STREAMS + stream];
}

/* Index (into tl->ops) of the first op of the lane that may still be running
 * at time t (its end > t), using the running max end; lane->first+count if none. */
size_t timeline_lane_seek(const struct timeline *tl, const struct tl_lane *lane, mp_time t);

/* Busy share of a chip's compute stream over the step, in [0, 1]. */
double timeline_utilization(const struct timeline *tl, int chip);

/* Compute-stream busy time (union of ops) of a chip before time t, exact,
 * in O(log ops); and the busy share of [step start, t], the utilization a
 * replay has reached at its cursor (the whole step's when t is past it). */
mp_time timeline_busy_until(const struct timeline *tl, int chip, mp_time t);
double timeline_utilization_until(const struct timeline *tl, int chip, mp_time t);

/* The first event time > t (or < t when `dir` < 0); returns false if none. */
bool timeline_next_event(const struct timeline *tl, mp_time t, int dir, mp_time *out);

/* ---- CSV (timeline_csv.c) ---- */

/* The exact header row of a timeline CSV. */
extern const char timeline_csv_header[];

/* Read a timeline CSV into `tl` (initialised, empty) and finish it. On a
 * malformed file returns MP_ERR_INPUT with "FILE:LINE: what was expected". */
int timeline_read_csv(struct timeline *tl, const char *path, struct mp_error *err);
/* The same from a buffer; `name` is used in messages. */
int timeline_read_csv_buffer(struct timeline *tl, const char *name, const char *data,
                             size_t len, struct mp_error *err);
/* Write `tl` as a timeline CSV (to a temporary file renamed into place). */
int timeline_write_csv(const struct timeline *tl, const char *path, struct mp_error *err);

/* Seconds written as decimal text ("0.001") to picoseconds, exactly for up to
 * 12 decimals. Returns -1 unless the whole text is a non-negative number. */
int timeline_parse_seconds(const char *text, mp_time *out);

/* ---- textbook and synthetic timelines (synth.c) ---- */

/* A textbook pipeline on p stages with m microbatches, forward t_f and fused
 * backward t_b per microbatch per stage, no transfer time: schedule "gpipe"
 * (all forwards, then all backwards in microbatch order) or "1f1b" (PipeDream-flush).
 * Stage i runs on chip i. Memory rows stash one activation per forward.
 * Returns MP_ERR_INPUT for an unknown schedule. The timeline is finished. */
int timeline_textbook(struct timeline *tl, const char *schedule, int p, int m,
                      mp_time t_f, mp_time t_b, struct mp_error *err);

/* A large made-up timeline for benchmarks: `chips` chips with about `ops`
 * ops in all (compute and communication), deterministic. Finished. */
void timeline_synthetic(struct timeline *tl, int chips, size_t ops);

#endif
