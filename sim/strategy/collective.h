/* collective.h — collectives on the system's topology: all-reduce,
 * reduce-scatter, all-gather, all-to-all, broadcast and send/recv, by ring,
 * double binary tree, halving-doubling, direct or hierarchical algorithm.
 *
 * Two fidelities (DESIGN.md §2, `run.fidelity`):
 *  - fast: one OP_COLLECTIVE on the first chip's comm stream, its duration
 *    the algorithm's alpha-beta time on the links the group uses
 *    (collective_time). It holds no links, so concurrent collectives on
 *    shared links do not slow each other down at this fidelity.
 *  - detailed: the algorithm expanded into its per-step transfers on every
 *    chip of the group, routed by the system, so collectives sharing a link
 *    queue on it. Tests check that the two agree on an idle fabric.
 *
 * A ring all-reduce of S bytes over n chips is a reduce-scatter then an
 * all-gather: 2(n−1) steps, in each of which every chip sends S/n bytes to its
 * ring successor. With no other traffic the time is 2(n−1)·(α + S/(n·B)) =
 * 2(n−1)/n · S/B + 2(n−1)·α, the textbook (and nccl-tests) figure.
 *
 * In C chunks (coll_spec.chunks) every step sends C pieces of s = S/(n·C·B)
 * seconds each, one after another; a piece is forwarded as soon as it has
 * arrived and the sender's link is free, and the latency α is in flight, not
 * on the link (DESIGN.md §2). Step k+1 of a chip can start once its first
 * piece of step k has arrived (α + s after step k started) and the chip has
 * sent its C pieces of step k (C·s), so steps follow each other every
 * max(α + s, C·s), and with N steps the last piece lands at
 *   (N − 1)·max(α + s, C·s) + C·s + α:
 * 2(n−1)·(α + s) + (C − 1)·s when α ≥ (C−1)·s (each chunk one step behind
 * the one before: latency paid once per step), and N·C·s + α otherwise
 * (bandwidth-bound: the latency paid once in all).
 *
 * `bytes` is always the whole buffer as nccl-tests counts it: the reduced
 * buffer (all-reduce, reduce-scatter input), the gathered buffer
 * (all-gather output), everything a chip sends and receives (all-to-all), the
 * broadcast buffer, the message (send/recv). */
#ifndef MPSIM_COLLECTIVE_H
#define MPSIM_COLLECTIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/common.h"
#include "hardware/system.h"
#include "sim/engine/taskgraph.h"

enum coll_op {
    COLL_ALL_REDUCE, COLL_REDUCE_SCATTER, COLL_ALL_GATHER, COLL_ALL_TO_ALL,
    COLL_BROADCAST, COLL_SEND_RECV, N_COLL_OPS
};

/* The order matches the choices of the `run.collective` key. */
enum coll_algo {
    COLL_AUTO, COLL_RING, COLL_TREE, COLL_HALVING_DOUBLING, COLL_DIRECT,
    COLL_HIERARCHICAL, N_COLL_ALGOS
};

enum fidelity { FIDELITY_FAST, FIDELITY_DETAILED };

struct coll_spec {
    enum coll_op op;
    enum coll_algo algo;   /* COLL_AUTO: collective_pick */
    const int *chips;      /* the group, chips[0] is the rank whose lane is simulated */
    int n;
    double bytes;
    enum op_tag tag;       /* for reports; 0 (TAG_F) = the op's own tag */
    uint8_t comm;          /* enum comm_kind of the ops */
    int32_t mb, stage;     /* carried to the ops for reports; -1 when none */
    bool compact;          /* detailed rings as one OP_RING per chip (tg_add_ring):
                              same times, O(n) ops instead of O(n²), but no
                              op per transfer for reports to list */
    mp_time time;          /* fast fidelity: the op's duration when already known
                              (collective_time of this very spec), 0 = compute it */
    int chunks;            /* ring algorithms: the buffer cut in this many pieces in
                              flight at once, each step sending them in turn (NCCL's
                              chunks); 0 or 1 = one buffer */
};

/* Names ("all_reduce", "ring", ...) and lookup; -1 when unknown. */
const char *collective_op_name(enum coll_op op);
const char *collective_algo_name(enum coll_algo a);
int collective_op_find(const char *name);
int collective_algo_find(const char *name);

/* busbw / algbw as nccl-tests defines it: 2(n−1)/n for all-reduce, (n−1)/n
 * for reduce-scatter, all-gather and all-to-all, 1 for broadcast, send/recv. */
double collective_bus_factor(enum coll_op op, int n);

/* The algorithm `auto` takes for this group by its shape: hierarchical when
 * the group spans several nodes with more than one of its chips in a node,
 * else direct for all-to-all and send/recv, else ring. */
enum coll_algo collective_pick(const struct system *sys, enum coll_op op, const int *chips, int n);

/* The algorithm that prices `c` (its algo, or auto's for its bytes): as
 * collective_pick, except that a reduce-like op across nodes on a switch
 * with a NIC per chip is NCCL's ring on every rail where that is faster
 * than hierarchical (large buffers; collective.c). */
enum coll_algo collective_resolve(const struct system *sys, const struct coll_spec *c);

/* Time of the collective with nothing else on the links (the fast
 * fidelity's duration): alpha-beta, or the system's measured busbw curve
 * for ring/auto all-reduce, all-gather and reduce-scatter inside a node.
 * See collective.c for each algorithm's formula and when the curve applies. */
mp_time collective_time(const struct system *sys, const struct coll_spec *c);

/* Which model prices the system's scale-up collectives, for reports:
 * "measured busbw curve NAME (hardware/collectives.csv)" when it has one,
 * else "alpha-beta". Written to buf; returns buf. */
const char *collective_model(const struct system *sys, char *buf, size_t size);

/* The summary's line for the system: "in a node: <collective_model>; across
 * nodes: alpha-beta, the faster of hierarchical and rail rings", or what
 * the system's [scaleout] auto_algorithm and busbw_curve make of the part
 * across nodes (training and serving print it alike). Written to buf;
 * returns buf. */
const char *collective_summary(const struct system *sys, char *buf, size_t size);

/* What prices this one collective at fast fidelity: "measured busbw curve
 * NAME" (the whole of it), "measured busbw curve NAME inside each node,
 * alpha-beta across" (hierarchical with the curve's phases), or
 * "alpha-beta". Written to buf; returns buf. */
const char *collective_priced_by(const struct system *sys, const struct coll_spec *c, char *buf,
                                 size_t size);

/* The work of pricing (fast) or running (detailed) the collective: the
 * routes its formula looks at, plus at detailed the engine events of its
 * transfers (a compact ring's steps; a ring is n × 2(n − 1) for an
 * all-reduce, a direct all-to-all n²). `mpsim collective` holds it against
 * the work budget (sim/io/budget.h) before it starts. `held` (may be NULL)
 * gets the ops the graph holds at once: n per compact ring, not n × steps. */
double collective_work(const struct system *sys, const struct coll_spec *c, enum fidelity fid,
                       double *held);

/* Append the collective at `fid`. Chip i's part waits on ready[i] (an op id,
 * or -1). On return done[i] is the op after which chip i holds its result
 * (at fast, the one op for every i). n = 1 (or zero bytes) appends nothing
 * and copies ready to done. Returns the number of ops appended. */
int collective_add(struct taskgraph *g, const struct system *sys, const struct coll_spec *c,
                   enum fidelity fid, const int *ready, int *done);

/* The collective alone on an idle `sys` at detailed fidelity, run through
 * the engine (`mpsim collective`'s detailed column, the tests that hold the
 * fast time to it): its makespan in *t, and in *events (may be NULL) the
 * events the engine handled. MP_ERR_INFEASIBLE (*t = −1) if the graph
 * cannot finish, which a collective's never should. */
int collective_run_alone(const struct system *sys, const struct coll_spec *c, mp_time *t,
                         uint64_t *events, struct mp_error *err);

/* The ring all-reduce expanded into transfers (collective_add with ring at
 * detailed fidelity), kept for callers that want exactly that. */
void collective_ring_all_reduce(struct taskgraph *g, const struct system *sys,
                                const int *chips, int n, double bytes,
                                const int *ready, int *done);

/* The alpha-beta time of the same ring all-reduce with nothing else on the
 * links: 2(n−1) × route time of S/n bytes between ring neighbours (the
 * slowest neighbour pair sets the pace). Both of these are the links'
 * alpha-beta model, never the measured curve. */
mp_time collective_ring_all_reduce_time(const struct system *sys, const int *chips, int n,
                                        double bytes);

#endif
