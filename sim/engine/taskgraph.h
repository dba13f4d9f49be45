/* taskgraph.h — the work a strategy asks of the machine: ops on chips'
 * streams, with dependencies, in the order each stream must run them.
 *
 * A strategy (sim/strategy/) appends ops; each (chip, stream) runs its ops in
 * the order they were appended, each starting when the ones it depends on are
 * done, its stream is free and, for a transfer, every link of its route is
 * free. The graph carries no notion of pipelines: tags and microbatch numbers
 * ride along only for reports. */
#ifndef MPSIM_TASKGRAPH_H
#define MPSIM_TASKGRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/common.h"

/* A chip's streams: compute, communication (NCCL), and its copy engines to
 * and from host memory (offload, sim/strategy/offload.h). */
enum stream_kind { STREAM_COMPUTE, STREAM_COMM, STREAM_TO_HOST, STREAM_FROM_HOST, N_STREAMS };

enum op_kind {
    OP_COMPUTE,    /* holds the compute stream for `duration` */
    OP_TRANSFER,   /* holds the comm stream and every link of its route */
    OP_COLLECTIVE, /* a whole collective priced analytically, on the comm stream */
    OP_MEMORY,     /* zero-time allocate/free, ordered on its stream */
    OP_RING,       /* one chip's part of a ring (tg_add_ring): `steps` transfers */
};

/* What an op is, for reports and the viewer; the engine ignores it. */
enum op_tag {
    TAG_F, TAG_B, TAG_W, TAG_BW, TAG_FB, TAG_OPTIMIZER,
    TAG_SEND, TAG_ALL_REDUCE, TAG_REDUCE_SCATTER, TAG_ALL_GATHER,
    TAG_ALL_TO_ALL, TAG_BROADCAST, TAG_MEM, TAG_OTHER,
    TAG_OFFLOAD, TAG_RELOAD,   /* copies to and from host memory */
    N_TAGS
};

/* Which parallelism a communication op serves, for the step accounting
 * (sim/train/step_split.h); the engine ignores it. COMM_CP: context
 * parallelism's K/V ring and all-to-alls (sim/strategy/context.h).
 * COMM_HOST: copies to and from host memory (training.offload). */
enum comm_kind { COMM_NONE, COMM_TP, COMM_PP, COMM_DP, COMM_EP, COMM_CP, COMM_HOST, N_COMM_KINDS };

enum mem_cat { MEM_WEIGHTS, MEM_GRADS, MEM_OPTIMIZER, MEM_ACTIVATIONS, MEM_KV,
               MEM_COMM, N_MEM_CATS };

struct op {
    mp_time duration;
    /* The part of `duration` a transfer spends in flight after its last byte
     * has left (the route's latency, DESIGN.md §2): it holds its stream and
     * links for duration − latency and its dependents wait for all of it.
     * 0 for everything but transfers and ring steps. */
    mp_time latency;
    double bytes;         /* bytes moved (transfers, collectives); reports only */
    double alloc_bytes;   /* taken from `alloc_cat` when the op starts */
    double free_bytes;    /* returned to `free_cat` when the op ends */
    int32_t chip;
    int32_t mb, mb2;      /* microbatch (and FB's second one); -1 when none */
    int32_t stage;        /* pipeline stage (position on the path); -1 when none */
    int32_t layer_first, layer_last; /* model layers covered; -1 when none */
    int32_t route_off, route_len;    /* transfer: links in taskgraph.route */
    uint8_t stream, kind, tag, alloc_cat, free_cat;
    uint8_t comm;         /* enum comm_kind; COMM_NONE for compute */
};

/* A ring of ops first..first+n−1 (tg_add_ring). */
struct tg_ring {
    int32_t first, n, steps, chunks;
};

/* The steady state a builder declares (tg_set_period; the engine checks and
 * uses it, engine.h). Per stream s (chip × N_STREAMS + stream), with ops at
 * stream positions 0, 1, ...: len[s] ops make one period, and the graph
 * repeats with that period over positions [lo[s] − len[s], hi[s] + len[s]):
 * each op there has the kind, duration, latency, memory effect, route and
 * number of dependencies of the op len[s] positions before it. The builder
 * promises that the step it stands for is this graph with `elided` more
 * periods on every stream, inserted at any positions P[s] in [lo[s], hi[s]]
 * reached at one moment, each inserted period a copy of the len[s] ops
 * before P[s]. A stream with len[s] = 0 has no periodic part: [lo, hi] is
 * where its next op may be at that moment. Snapshots are taken as the ops
 * of stream `ref` at positions lo[ref] + k·len[ref] − 1 end. */
struct tg_period {
    int32_t *lo, *hi, *len;   /* [n_chips × N_STREAMS] */
    int ref;
    int64_t elided;
};

struct taskgraph {
    int n_chips, n_links;
    struct tg_ring *rings;    /* in order of `first` */
    int n_rings, cap_rings;
    struct op *ops;
    int n_ops, cap_ops;
    int32_t *route;           /* link indices of every transfer's route */
    int n_route, cap_route;
    int32_t *edge_from, *edge_to; /* dependency edges as added */
    int n_edges, cap_edges;
    double *static_mem;       /* [n_chips × N_MEM_CATS] allocated at time 0 */
    /* A cap on what is kept (issue 16): past `max_ops` ops (0: INT32_MAX,
     * what an int32 op index can count) or INT32_MAX edges, further ops
     * are only counted in `wanted_ops`, `over` is set, and tg_add returns a
     * stand-in id; the builder runs to its end in O(its loops) without
     * memory, and the caller reports the count instead of running. */
    int max_ops;
    long long wanted_ops;
    bool over;
    struct tg_period *period; /* the declared steady state; NULL when none */
    /* Built by tg_finalize: */
    int32_t *succ_off, *succ;     /* CSR successor lists */
    int32_t *n_deps;              /* predecessors per op */
    int32_t *stream_off, *stream_ops; /* CSR: ops of stream (chip*N_STREAMS+s) in order */
    int32_t *stream_pos;          /* [n_ops]: the op's position on its stream */
    int finalized;
};

/* An op with every optional field empty (-1 / 0), for designated init:
 * struct op o = tg_op(OP_COMPUTE, chip, STREAM_COMPUTE, TAG_F, duration); */
struct op tg_op(enum op_kind kind, int chip, enum stream_kind stream, enum op_tag tag,
                mp_time duration);

void tg_init(struct taskgraph *g, int n_chips, int n_links);
void tg_release(struct taskgraph *g);

/* Append an op; returns its index. Its position among the ops already on its
 * (chip, stream) is its place in that stream's order. Past the cap (above)
 * it is only counted, and the index returned stands for no op. */
int tg_add(struct taskgraph *g, const struct op *op);

/* Append ops[0..n) (none a transfer) as n calls of tg_add would, in one
 * copy; returns the index of the first (past the cap, as tg_add: then each
 * is only counted and *all* get tg_add's stand-in). For copies of ops that
 * went through tg_add once: tg_add's per-op asserts run here only in
 * sanitized builds. */
int tg_add_many(struct taskgraph *g, const struct op *ops, int n);

/* Room for `ops` ops and `edges` edges in all (a builder's estimate, so the
 * arrays need not grow, and copy, as they fill); smaller or past the caps
 * does nothing. */
void tg_reserve(struct taskgraph *g, double ops, double edges);

/* Append a transfer whose route is `links[0..n)`. */
int tg_add_transfer(struct taskgraph *g, const struct op *op, const int *links, int n);

/* Make ops first..first+n−1 (consecutive, kind OP_RING, each on its chip's
 * comm stream with the route to the next member) one ring of `steps` steps:
 * op i stands for `steps` back-to-back transfers of `duration` each over its
 * route, step k starting once step k−1 of op i−1 (mod n) has ended (step 0
 * once op i's own dependencies have). It is the ring collective expanded
 * into transfers, timed exactly alike, but the engine generates the steps as
 * it runs: n ops instead of n × steps, so a ring over thousands of chips
 * needs O(n) memory, not O(n²). The op's start is its first step's start,
 * its end its last step's end; each step is one event. */
void tg_add_ring(struct taskgraph *g, int first, int n, int steps);

/* The same with the buffer cut in `chunks` pieces in flight at once: op i
 * stands for `steps` transfers, taken step by step and in each step chunk by
 * chunk (transfer t = step·chunks + chunk); transfer t starts once op i's
 * stream and links are free (the previous transfer's bytes have left) and
 * transfer t − chunks of op i−1 has arrived. tg_add_ring is chunks = 1. */
void tg_add_ring_chunked(struct taskgraph *g, int first, int n, int steps, int chunks);

/* Declare the graph's steady state (struct tg_period): lo, hi and len are
 * copied ([n_chips × N_STREAMS] each). */
void tg_set_period(struct taskgraph *g, const int32_t *lo, const int32_t *hi,
                   const int32_t *len, int ref, int64_t elided);

/* The ring op `id` belongs to (NULL when it is no OP_RING). */
const struct tg_ring *tg_ring_of(const struct taskgraph *g, int id);

/* `after` may not start before `before` has ended. */
void tg_dep(struct taskgraph *g, int before, int after);

/* tg_dep(base + pair[2k], base + pair[2k + 1]) for k = 0 .. n − 1, in one go
 * (for copies of edges that went through tg_dep: its asserts run here only
 * in sanitized builds). */
void tg_dep_many(struct taskgraph *g, const int32_t *pair, int n, int base);

/* Memory held on `chip` from time 0 (weights, gradients, optimizer state). */
void tg_static_alloc(struct taskgraph *g, int chip, enum mem_cat cat, double bytes);

/* Build the successor lists and per-stream orders; no ops may be added after. */
void tg_finalize(struct taskgraph *g);

/* Names for reports: "F", "all_reduce", "activations", "compute"... */
const char *tg_tag_name(enum op_tag tag);
const char *tg_mem_cat_name(enum mem_cat cat);
const char *tg_stream_name(enum stream_kind s);
const char *tg_comm_name(enum comm_kind c); /* "tp", "pp", "dp", "ep", "cp", "none" */

#endif
