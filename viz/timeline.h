/* timeline.h — what the viewer shows: the ops, memory changes and run facts of
 * one simulated step (or serving run), as `mpsim run --timeline OUT.csv`
 * writes them, or as the simulator leaves them in memory (viz/load.h).
 *
 * The struct is filled by the CSV reader (timeline_read_csv) or by a loader
 * that runs a scenario through the library: timeline_add_op /
 * timeline_add_mem / timeline_set_meta in any order, then timeline_finish
 * once, which sorts and indexes everything the layout needs.
 *
 * Storage is compact because real runs are big (the 59-wafer serving run has
 * 9.2 million ops): ops live per lane (one chip's compute or communication
 * stream) as three arrays, start, end and an index into `infos`, 20 bytes an
 * op. An info holds everything else (kind, microbatch, chunk, bytes, label,
 * ...), one per op for training, one per pass for serving, where the 59
 * stage copies of a pass share it. Times are integer picoseconds (mp_time),
 * as in the engine, so a box edge lands exactly where the simulator put it.
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
    TL_MEM_COMM, TL_MEM_OTHER, TL_MEM_CATS
};

/* DualPipe's two directions (the timeline's `direction` column). Zero is
 * "none" so that a zeroed tl_op has none. */
enum tl_dir { TL_DIR_NONE = 0, TL_DIR_DOWN = 1, TL_DIR_UP = 2 };

/* The parallelism a communication op serves (the `comm` column). */
enum tl_comm { TL_COMM_NONE, TL_COMM_TP, TL_COMM_PP, TL_COMM_DP, TL_COMM_EP, TL_COMM_CP,
               TL_COMM_KINDS };

#define TL_NONE UINT32_MAX
/* Chip indices the viewer accepts: a 2^20-chip cluster. A bigger index in a
 * file is an input error (rows are kept per chip index). */
#define TL_MAX_CHIP 1048575
/* Op ids in a file: below TL_NONE. */
#define TL_MAX_ID 4294967294LL

/* An op with every field: what timeline_add_op takes and timeline_get_op
 * gives back. A zeroed struct is a valid op of chunk 0, microbatch 0. The
 * second microbatch, chunk and direction belong to FB ops only (others get
 * -1 / none). */
struct tl_op {
    mp_time start, end;    /* picoseconds, end >= start */
    int64_t bytes;         /* bytes moved; 0 for compute */
    int32_t chip, stage;   /* stage: the pipeline device of the row, -1 none */
    int32_t microbatch;    /* -1 when none */
    int32_t microbatch2;   /* FB: the backward half's microbatch */
    int32_t chunk, chunk2; /* -1 when none; chunk2: FB's backward half */
    int32_t layer_first, layer_last; /* -1 when none */
    uint16_t kind;         /* enum tl_kind, or an interned custom id */
    uint8_t stream;        /* enum tl_stream */
    uint8_t comm;          /* enum tl_comm */
    uint8_t dir, dir2;     /* enum tl_dir */
    bool has_id, has_released;
    uint32_t id;           /* the op's id in its file (when has_id) */
    uint32_t released_by;  /* id of the op whose end let it start (when has_released) */
};

/* What an op is, apart from its times and its lane. */
struct tl_info {
    int64_t bytes;
    int32_t chip;          /* -1: the lane's row */
    int32_t stage, microbatch, microbatch2, layer_first, layer_last;
    uint32_t label;        /* offset of the label in timeline.strings ("" is 0) */
    int16_t chunk, chunk2;
    uint16_t kind;
    uint8_t comm, dir, dir2;
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

/* A lane's level-of-detail pyramid: how busy each time bin is and which
 * kind fills most of it, at bin widths b0, 2·b0, 4·b0, ... over the lane.
 * A frame that shows many ops per pixel reads a few bins per pixel column
 * instead of every op, so its cost follows the window width, not the op
 * count (timeline_finish builds it once for lanes of TL_LOD_MIN_OPS ops or
 * more). Busy shares are fixed point, TL_LOD_ONE = fully busy. */
#define TL_LOD_MIN_OPS 512
#define TL_LOD_MAX_BINS 32768
#define TL_LOD_SLOTS 16          /* kinds below TL_KIND_CUSTOM, customs share the last */
#define TL_LOD_ONE 16384.0f
struct tl_lod {
    double base, b0;             /* time of bin 0's left edge, level-0 bin width (ps) */
    int levels;
    uint32_t n0;                 /* level-0 bins; level l has n0 >> l */
    size_t off[24];              /* start of level l in busy/kind */
    uint16_t *busy;              /* busy share × TL_LOD_ONE (more than one if ops overlap) */
    uint8_t *kind;               /* kind slot covering most of the bin */
};

/* Ops of one row's stream, sorted by (start, end). Op k of the lane is op
 * base + k of the timeline (its global index). */
#define TL_CK 32                 /* busy checkpoint every TL_CK ops */
struct tl_lane {
    size_t n, cap, base;
    mp_time *start, *end;
    uint32_t *info;
    uint32_t *released;          /* [n] id of the releasing op, or TL_NONE; NULL: none given */
    uint32_t *ids;               /* [n] the ops' ids in their file; NULL when they had none */
    /* Derived by timeline_finish: */
    uint32_t *rel;               /* [n] released as a global op index, or TL_NONE */
    mp_time *maxend;             /* running max end; NULL when no two ops overlap */
    mp_time *ends;               /* ends sorted (== end when no two ops overlap) */
    mp_time *ck_busy, *ck_maxend;/* union busy and max end of ops [0, j·TL_CK) */
    mp_time busy;                /* union of all ops */
    struct tl_lod *lod;          /* NULL for short lanes */
};

/* What a row's idle time waited for (timeline_finish, from released_by). */
enum tl_wait_kind {
    TL_WAIT_NONE,      /* not idle */
    TL_WAIT_STAGE,     /* another stage's work: the pipeline bubble */
    TL_WAIT_PP,        /* a stage-to-stage transfer in flight (exposed PP comm) */
    TL_WAIT_COMM,      /* one of its own collectives (exposed comm, kind in tl_wait.comm) */
    TL_WAIT_UNKNOWN,   /* no released_by recorded */
    TL_WAIT_DONE,      /* after its last op, while other stages finish (bubble) */
};

/* One row: a chip (or, for a passes-only serving timeline, a slot). */
struct tl_row {
    int32_t key;             /* chip index (slot with timeline.rows_by_slot) */
    int32_t stage;           /* of its first op with a stage, else from meta, else -1 */
    int32_t node;            /* from per-chip meta node=N, -1 if absent */
    int32_t serves;          /* row of the pipeline device it serves (meta serves=CHIP), -1 */
    int64_t capacity;        /* from meta capacity_bytes, 0 if unknown */
    int64_t peak_mem;        /* max in_use over its memory rows */
    size_t mem_first, mem_count; /* its slice of timeline.mem (sorted by t) */
    int64_t (*mem_ck)[TL_MEM_CATS]; /* bytes per category before mem row j·TL_CK of the slice */
    const char *stages;      /* meta stages=0,7: the model stages its chunks hold, or NULL */
    struct tl_lane lane[TL_STREAMS];
    /* Its compute stream's idle time inside the step, by what it waited for. */
    mp_time wait[TL_WAIT_DONE + 1];
    mp_time wait_comm[TL_COMM_KINDS];
};

struct timeline {
    char *name;                  /* what to call it on screen (file name) */

    struct tl_info *infos; size_t n_infos, cap_infos;
    struct tl_mem *mem;  size_t n_mem, cap_mem;
    struct tl_meta *meta; size_t n_meta, cap_meta;
    char *strings;       size_t n_strings, cap_strings; /* label pool */
    char **kinds;        size_t n_kinds, cap_kinds;     /* id -> name */

    struct tl_row *rows; int n_rows, cap_rows;  /* in order of first appearance */
    int32_t *row_of_key; int n_keys;           /* key -> row, -1 */
    bool rows_by_slot;           /* rows are microbatch slots (timeline_rows_by_slot) */
    size_t n_ops;
    bool has_ids, has_released;  /* some op came with an id / a released_by */

    /* Derived by timeline_finish; valid while `finished`. */
    bool finished;
    int *order;                  /* rows in screen order: (stage, node, key), peers after */
    mp_time t_begin, t_end;      /* first op start, last op end (the step) */
    int64_t max_peak_mem;        /* over all rows */
    bool has_comm, has_mem;
    bool kind_seen[TL_LOD_SLOTS];/* which kinds occur (customs in the last slot) */
    int max_chunk;               /* largest chunk of a compute op, -1 if none */
    bool has_dir, has_fb;        /* DualPipe directions; overlapped F&B ops */
    int n_pipe_rows;             /* rows with compute that serve no other row */
    double idle;                 /* 1 − busy / (pipe rows × makespan) */
    double bubble;               /* waits for another stage, same base (DESIGN.md §3) */
    double exposed_comm;         /* waits for own collectives and transfers, same base */
    double exposed[TL_COMM_KINDS];
};

void timeline_init(struct timeline *tl);
void timeline_release(struct timeline *tl);

/* The id of a kind name ("F", "all_reduce", "my_thing"), interning new ones. */
uint16_t timeline_kind_id(struct timeline *tl, const char *name);
const char *timeline_kind_name(const struct timeline *tl, uint16_t kind);
/* enum tl_comm from "tp", "pp", ...; TL_COMM_NONE for "" or anything else. */
uint8_t timeline_comm_id(const char *name);
const char *timeline_comm_name(uint8_t comm);

/* Rows are microbatch slots rather than chips (a passes-only serving
 * timeline). Call before the first op is added. */
void timeline_rows_by_slot(struct timeline *tl);

/* Append an op; `label` may be NULL. Fields are taken as they are: the CSV
 * reader checks them, the library is trusted (asserts end >= start, chip in
 * 0..TL_MAX_CHIP). */
void timeline_add_op(struct timeline *tl, const struct tl_op *op, const char *label);
/* For many ops alike but for their times and lanes (a serving pass on each
 * stage): add what they share once (the chip field -1: the lane's), then
 * each op by lane. `reserve` sizes a lane before many adds. */
uint32_t timeline_add_info(struct timeline *tl, const struct tl_op *op, const char *label);
/* A label in the pool, for infos that share one (set tl_info.label to it). */
uint32_t timeline_intern(struct timeline *tl, const char *label);
void timeline_add_op_info(struct timeline *tl, int chip, int stream, mp_time start, mp_time end,
                          uint32_t info);
void timeline_reserve(struct timeline *tl, int chip, int stream, size_t n);
/* Append n ops to one lane at once: start[i], end[i], info[i]. */
void timeline_add_ops(struct timeline *tl, int chip, int stream, size_t n, const mp_time *start,
                      const mp_time *end, const uint32_t *info);
void timeline_add_mem(struct timeline *tl, const struct tl_mem *m);
/* Set (or replace) a key for `chip` (-1: run-wide). */
void timeline_set_meta(struct timeline *tl, int chip, const char *key, const char *value);
/* The value of a key, or NULL. */
const char *timeline_meta(const struct timeline *tl, int chip, const char *key);
/* A memory category from its label ("activations" -> TL_MEM_ACTIVATIONS). */
uint16_t timeline_mem_category(const char *label);
const char *timeline_mem_category_name(uint16_t cat);

/* Sort and index after the last add: each lane by (start, end), memory by
 * (chip, t); released_by ids to ops (an id that names no op is dropped: the
 * reader rejects such files first), rows, busy time, peak memory, idle time
 * by cause, level of detail. May be called again after more adds. */
void timeline_finish(struct timeline *tl);

/* ---- after timeline_finish ---- */

/* The row of a chip (a slot with rows_by_slot), or -1. */
int timeline_row_of(const struct timeline *tl, int key);
static inline const struct tl_lane *timeline_lane(const struct timeline *tl, int row, int stream)
{
    return &tl->rows[row].lane[stream];
}
static inline const struct tl_info *timeline_info(const struct timeline *tl,
                                                  const struct tl_lane *lane, size_t k)
{
    return &tl->infos[lane->info[k]];
}
static inline const char *timeline_label_of(const struct timeline *tl, const struct tl_info *in)
{
    return tl->strings + in->label;
}
/* The row, stream and lane index of global op `g`; false if there is none. */
bool timeline_locate(const struct timeline *tl, size_t g, int *row, int *stream, size_t *k);
/* Op k of a lane with every field (chip and stage filled in from the row). */
void timeline_get_op(const struct timeline *tl, int row, int stream, size_t k, struct tl_op *out);
/* The op `g` released by, as a global index; TL_NONE when unknown. */
uint32_t timeline_released(const struct timeline *tl, int row, int stream, size_t k);

/* Index (in the lane) of the first op that may still be running at time t
 * (its end, or running max end, > t); lane->n if none. */
size_t timeline_lane_seek(const struct tl_lane *lane, mp_time t);
/* Index of the first op of the lane starting at or after t. */
size_t timeline_lane_upper(const struct tl_lane *lane, double t);

/* Busy share of a row's compute stream over the step, in [0, 1]. */
double timeline_utilization(const struct timeline *tl, int row);
/* Compute-stream busy time (union of ops) of a row before time t, exact;
 * and the busy share of [step start, t], the utilization a replay has
 * reached at its cursor (the whole step's when t is past it). */
mp_time timeline_busy_until(const struct timeline *tl, int row, mp_time t);
double timeline_utilization_until(const struct timeline *tl, int row, mp_time t);

/* The first op start or end > t (or < t when `dir` < 0); false if none. */
bool timeline_next_event(const struct timeline *tl, mp_time t, int dir, mp_time *out);

/* A row's memory at time t (after every change at or before t): the total,
 * and per category in `cats` (may be NULL). */
int64_t timeline_mem_at(const struct timeline *tl, int row, mp_time t, int64_t cats[TL_MEM_CATS]);

/* The idle stretch of a row's compute stream around time t, and what ended
 * it: `op` (global index, TL_NONE after the last op) is the op that then
 * started, `cause` the op whose end let it start, `origin` the compute op
 * behind a transfer (== cause when the cause is no transfer). An idle
 * stretch before a transfer is split: waiting for the other stage until the
 * transfer starts (TL_WAIT_STAGE), for the bytes after (TL_WAIT_PP). */
struct tl_wait {
    bool idle;                   /* false: t is not in an idle stretch of the step */
    mp_time from, to;            /* the whole stretch */
    mp_time split;               /* == to unless part of it waited for a transfer */
    enum tl_wait_kind kind;      /* of [from, split) */
    uint8_t comm;                /* TL_WAIT_COMM: which collective */
    uint32_t op, cause, origin;  /* global indices, TL_NONE when none */
};
struct tl_wait timeline_wait_at(const struct timeline *tl, int row, mp_time t);

/* ---- CSV (timeline_csv.c) ---- */

/* The header row mpsim writes; the reader also takes the first 13 columns
 * alone (the original format), and the added ones in any order after them. */
extern const char timeline_csv_header[];

/* Read a timeline CSV into `tl` (initialised, empty) and finish it. On a
 * malformed file returns MP_ERR_INPUT with "FILE:LINE:COLUMN: what was
 * expected" (COLUMN the character where the bad field starts). */
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
 * Stage i runs on chip i. Memory rows stash one activation (1 GB) per
 * forward over 2 GB of weights; each op names the op that released it.
 * Returns MP_ERR_INPUT for an unknown schedule. The timeline is finished. */
int timeline_textbook(struct timeline *tl, const char *schedule, int p, int m,
                      mp_time t_f, mp_time t_b, struct mp_error *err);

/* A large made-up timeline for benchmarks: `chips` chips with about `ops`
 * ops in all (compute and communication), deterministic. Finished. */
void timeline_synthetic(struct timeline *tl, int chips, size_t ops);

#endif
