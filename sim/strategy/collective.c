/* collective.c — collectives priced (fast) or expanded into transfers
 * (detailed); see collective.h.
 *
 * Alpha-beta formulas, with n chips, S bytes, and "hop(x)" the route time of
 * x bytes between neighbours (latency α plus x over the route's slowest link;
 * the slowest neighbour pair of the group sets the pace):
 *   ring        all-reduce 2(n−1)·hop(S/n); reduce-scatter, all-gather
 *               (n−1)·hop(S/n); broadcast, a chain pipelined in C chunks,
 *               (n+C−2)·s + (n−1)·α with s = hop(S/C) − α (the latency is
 *               in flight while the next chunk is sent).
 *   tree        (NCCL's double binary tree, pipelined) all-reduce
 *               2·⌈log2 n⌉·α + 2·S/B: every chip sends its partial up one tree
 *               and the result down the other, S each way.
 *   halving-doubling  (Rabenseifner) log2 n steps of S/2, S/4, …: reduce-
 *               scatter Σ hop(S/2^k); all-gather the same; all-reduce both.
 *   direct      every chip sends S/n to every other at once; messages that
 *               leave by the same first link share it.
 *   hierarchical  inside each node a reduce-scatter, across nodes the op on
 *               S/g (g chips of the group per node), inside the node an
 *               all-gather.
 *   ring across nodes (g > 1 chips of the group per node, a switch inside,
 *               a NIC per chip): NCCL's g rings, one per NIC rail, each on
 *               S/g (rails_step): steps of max(hop_nic(p), hop_up((g−1)·p))
 *               with p = S/(n·g). `auto` takes it over hierarchical where it
 *               is faster (auto_algo).
 * On a full mesh (xGMI) the ring algorithms run n−1 rings at once over the
 * disjoint links, as RCCL does, so each ring carries 1/(n−1) of the data.
 * The detailed expansion has one comm stream per chip and so cannot drive
 * several links at once; that case (and tree) is priced as at fast, one op.
 *
 * Measured curve. When the system has a busbw curve (hardware/coll_curve.h,
 * [scaleup] busbw_curve), a ring (or auto) all-reduce, all-gather or
 * reduce-scatter whose chips are all in one node, no more of them than the
 * curve was measured on, in one buffer (chunks ≤ 1), takes the measured
 * time instead:
 *   T = S·factor(n)/busbw(S), factor 2(n−1)/n (all-reduce) or (n−1)/n,
 * busbw(S) the curve's (coll_curve_busbw) for the g GPUs it was measured
 * on. A group of n < g chips reads it where the alpha-beta model puts the
 * same split of latency and bandwidth (an assumption: the curves are for 8
 * GPUs only):
 *   busbw_n(S) = k · busbw_g(S · (g/n) / k),
 * k = 1 on a switch (one ring: busbw = S/(n·α + S/B), and busbw_g at S·g/n
 * is exactly that — the curve indexed by the piece S/n each ring step
 * moves, so the latency floor of n chips is 2(n−1) steps, not 2(g−1)) and
 * k = (n−1)/(g−1) on a full mesh (n−1 rings over n−1 of each GPU's g−1
 * links: busbw = S/(n·α + S/((n−1)·B)), again exact) — and no higher than
 * the curve's rows on fewer GPUs allow (coll_curve_cap: NVLink SHARP's
 * gain grows with the GPU count, 8×H200 1.29× a ring at 8 GPUs and 1.00×
 * at 4, calibration.md §5c, so a 4-GPU H200 all-reduce tops out at the
 * ring's 363 GB/s where 8 reach 480). That covers the TP/SP
 * groups' collectives, ZeRO's gathers and scatters and DP reduces inside a
 * node, and the intra-node phases of hierarchical collectives; across
 * nodes, explicit tree all-reduce, halving-doubling and direct, all-to-all,
 * broadcast and send/recv stay alpha-beta. T is rounded per ring step
 * (T/steps, steps = 2(n−1) or n−1) and the detailed expansion sends each
 * step's S/n at that step time (the link held for the step less the route's
 * latency), so the fast and detailed times agree exactly on an idle fabric. */
#include "collective.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine/engine.h"

#define MAX_ROUTE 256
#define BCAST_CHUNKS 8

static const char *const op_names[N_COLL_OPS] = {
    "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "send_recv",
};
static const char *const algo_names[N_COLL_ALGOS] = {
    "auto", "ring", "tree", "halving_doubling", "direct", "hierarchical",
};
static const enum op_tag op_tags[N_COLL_OPS] = {
    TAG_ALL_REDUCE, TAG_REDUCE_SCATTER, TAG_ALL_GATHER, TAG_ALL_TO_ALL, TAG_BROADCAST, TAG_SEND,
};

const char *collective_op_name(enum coll_op op) { return op < N_COLL_OPS ? op_names[op] : "?"; }
const char *collective_algo_name(enum coll_algo a) { return a < N_COLL_ALGOS ? algo_names[a] : "?"; }

int collective_op_find(const char *name)
{
    for (int i = 0; i < N_COLL_OPS; i++)
        if (!strcmp(name, op_names[i])) return i;
    return -1;
}

int collective_algo_find(const char *name)
{
    for (int i = 0; i < N_COLL_ALGOS; i++)
        if (!strcmp(name, algo_names[i])) return i;
    return -1;
}

double collective_bus_factor(enum coll_op op, int n)
{
    if (n <= 1) return 1;
    switch (op) {
    case COLL_ALL_REDUCE: return 2.0 * (n - 1) / n;
    case COLL_REDUCE_SCATTER: case COLL_ALL_GATHER: case COLL_ALL_TO_ALL: return (double)(n - 1) / n;
    default: return 1;
    }
}

static bool is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

static int ceil_log2(int n)
{
    int k = 0;
    while ((1 << k) < n) k++;
    return k;
}

/* Every chip of the group in one node of a full mesh: RCCL's n−1 rings. */
static bool mesh_group(const struct system *sys, const int *chips, int n)
{
    if (sys->scaleup.topo != TOPO_FULL_MESH || n < 3) return false;
    for (int i = 1; i < n; i++)
        if (system_node_of(sys, chips[i]) != system_node_of(sys, chips[0])) return false;
    return true;
}

static mp_time pair_time(const struct system *sys, int a, int b, double bytes)
{
    int stack[MAX_ROUTE], *links;
    int nl = system_route_buf(sys, a, b, stack, MAX_ROUTE, &links);
    mp_time t = system_route_time(sys, links, nl, bytes);
    if (links != stack) free(links);
    return t;
}

/* hop(x): the slowest ring-neighbour route for x bytes. */
static mp_time ring_hop(const struct system *sys, const int *chips, int n, double bytes)
{
    mp_time slowest = 0;
    for (int i = 0; i < n; i++) {
        mp_time t = pair_time(sys, chips[i], chips[(i + 1) % n], bytes);
        if (t > slowest) slowest = t;
    }
    return slowest;
}

/* Nodes of the group in order of first appearance, `per` chips each in
 * group order; false when nodes hold different numbers of its chips. */
struct hier { int nodes, per; int *local; /* [nodes][per] */ };

static bool hier_split(const struct system *sys, const int *chips, int n, struct hier *h)
{
    int *node = mp_xmalloc((size_t)n * sizeof *node), *count = mp_xcalloc((size_t)n, sizeof *count);
    /* Node → its index in order of appearance, through a table over the
     * system's nodes (a search of the nodes seen was O(n × nodes): a minute
     * for a million chips). */
    int *index = mp_xmalloc((size_t)sys->nodes * sizeof *index);
    for (int k = 0; k < sys->nodes; k++) index[k] = -1;
    int nn = 0;
    for (int i = 0; i < n; i++) {
        int nd = system_node_of(sys, chips[i]);
        if (index[nd] < 0) index[nd] = nn++;
        int k = index[nd];
        node[i] = k;
        count[k]++;
    }
    bool ok = nn > 1 && n % nn == 0;
    for (int k = 0; ok && k < nn; k++) ok = count[k] == n / nn;
    if (ok) {
        h->nodes = nn;
        h->per = n / nn;
        h->local = mp_xmalloc((size_t)n * sizeof *h->local);
        int *fill = mp_xcalloc((size_t)nn, sizeof *fill);
        for (int i = 0; i < n; i++) h->local[node[i] * h->per + fill[node[i]]++] = chips[i];
        free(fill);
    }
    free(node);
    free(count);
    free(index);
    return ok;
}

/* NCCL's ring across nodes (calibration.md §5d: the algorithm NCCL selected
 * on 4 nodes of 8×H200) runs one channel per NIC rail: with `per` chips of
 * the group in each node, `per` rings, each carrying S/per, each passing
 * through a node's chips in turn and leaving it by another chip's NIC
 * (NCCL builds its rings from the topology, node by node, not from rank
 * order). So at every ring step a chip sends one piece S/(n·per) out of
 * its NIC (for the ring that leaves the node there) and per − 1 pieces to
 * the next chip of its node through its one scale-up port: the step takes
 * the slower of hop_out(piece) and hop_up((per − 1)·piece), and an
 * all-reduce 2(n − 1) steps, at large S 2(n−1)/n · S/(per · B_nic): busbw
 * per × the NIC's, which is what 4 nodes of 8×B200 on 8 × 50 GB/s reach at
 * 4–16 GiB (§5d: 377–382 GB/s). Only a group of per > 1 chips on each of
 * several nodes, a scale-up switch and a NIC per chip (fat-tree or rails).
 * The node-crossing hop is taken between chips at the same place in their
 * nodes (one rail). On a system with a measured across-node curve
 * ([scaleout] busbw_curve, out_curve_hop) the node-crossing hop takes the
 * step time that curve's own ring took at the same piece. */
static mp_time out_curve_hop(const struct system *sys, double piece);

static bool rails_step_of(const struct system *sys, const struct hier *h, int n, double bytes,
                          mp_time *step)
{
    if (sys->scaleup.topo != TOPO_SWITCH ||
        (sys->scaleout.topo != TOPO_FAT_TREE && sys->scaleout.topo != TOPO_RAIL) || h->per < 2)
        return false;
    double piece = bytes / n / h->per;
    bool measured = sys->out_curve.present;
    mp_time slowest = measured ? out_curve_hop(sys, piece) : 0;
    for (int k = 0; k < h->nodes; k++) {
        const int *node = h->local + k * h->per, *next = h->local + ((k + 1) % h->nodes) * h->per;
        for (int j = 0; j + 1 < h->per; j++) {
            mp_time t = pair_time(sys, node[j], node[j + 1], (h->per - 1) * piece);
            if (t > slowest) slowest = t;
        }
        if (measured) continue;
        mp_time t = pair_time(sys, node[h->per - 1], next[h->per - 1], piece);
        if (t > slowest) slowest = t;
    }
    *step = slowest;
    return true;
}

static bool rails_step(const struct system *sys, const int *chips, int n, double bytes,
                       mp_time *step)
{
    /* Most rings asked about (TP groups, hierarchical's own phases and
     * rails) lie in one node or one chip a node: no split to allocate. */
    int first = n > 0 ? system_node_of(sys, chips[0]) : 0;
    bool across = false;
    for (int i = 1; i < n && !across; i++) across = system_node_of(sys, chips[i]) != first;
    if (!across || n / 2 < 2) return false;
    struct hier h;
    if (!hier_split(sys, chips, n, &h)) return false;
    bool ok = rails_step_of(sys, &h, n, bytes, step);
    free(h.local);
    return ok;
}

enum coll_algo collective_pick(const struct system *sys, enum coll_op op, const int *chips, int n)
{
    if (op == COLL_ALL_TO_ALL || op == COLL_SEND_RECV) return COLL_DIRECT;
    if (op == COLL_BROADCAST) return COLL_RING;
    struct hier h;
    if (hier_split(sys, chips, n, &h)) {
        bool multi = h.per > 1;
        free(h.local);
        if (multi) return COLL_HIERARCHICAL;
    }
    return COLL_RING;
}

/* Direct exchange of `piece` bytes from every chip to every other: chip i's
 * messages to destinations that share its first link queue on it. */
static mp_time direct_time(const struct system *sys, const int *chips, int n, double piece)
{
    int links[MAX_ROUTE];
    int *first = mp_xmalloc((size_t)n * sizeof *first);
    /* Messages per first link, counted in a table over the system's links
     * (and reset after each sender), so a sender costs O(n), not O(n²). */
    int *per_link = mp_xcalloc((size_t)sys->n_links + 1, sizeof *per_link);
    mp_time worst = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            first[j] = -1;
            if (j == i) continue;
            int nl = system_route(sys, chips[i], chips[j], links, MAX_ROUTE);
            first[j] = nl > 0 ? links[0] : -1;
            per_link[first[j] + 1]++; /* slot 0: no link (a chip with itself) */
        }
        for (int j = 0; j < n; j++) {
            if (j == i) continue;
            mp_time t = pair_time(sys, chips[i], chips[j], piece * per_link[first[j] + 1]);
            if (t > worst) worst = t;
        }
        for (int j = 0; j < n; j++)
            if (j != i) per_link[first[j] + 1] = 0;
    }
    free(first);
    free(per_link);
    return worst;
}

/* Halving-doubling reduce-scatter (or all-gather) steps: Σ_k hop(S/2^(k+1)). */
static mp_time hd_time(const struct system *sys, const int *chips, int n, double bytes)
{
    mp_time total = 0;
    double piece = bytes;
    for (int dist = n / 2; dist >= 1; dist /= 2) {
        piece /= 2;
        mp_time worst = 0;
        for (int i = 0; i < n; i++) {
            mp_time t = pair_time(sys, chips[i], chips[i ^ dist], piece);
            if (t > worst) worst = t;
        }
        total = mp_time_add(total, worst);
    }
    return total;
}

static mp_time op_time(const struct system *sys, enum coll_op op, enum coll_algo algo,
                       const int *chips, int n, double bytes, int chunks);

/* The measured curve prices this ring collective (the rule at the top). */
static bool curve_prices(const struct system *sys, enum coll_op op, const int *chips, int n,
                         int chunks)
{
    const struct coll_curve *cv = &sys->curve;
    if (!cv->present || n < 2 || n > cv->gpus || chunks > 1) return false;
    if (op != COLL_ALL_REDUCE && op != COLL_ALL_GATHER && op != COLL_REDUCE_SCATTER) return false;
    int node = system_node_of(sys, chips[0]);
    for (int i = 1; i < n; i++)
        if (system_node_of(sys, chips[i]) != node) return false;
    return true;
}

static long long ring_steps(enum coll_op op, int n)
{
    return op == COLL_ALL_REDUCE ? 2LL * (n - 1) : n - 1;
}

/* The measured across-node curve was an all-reduce on G chips, G/cpn
 * whole nodes of this system, as a ring on every rail: 2(G − 1) steps, each
 * moving a piece S0/(G·cpn) over a NIC. So a piece p takes that ring's step
 * at S0 = p·G·cpn: T0(S0)/(2(G−1)) = S0 / (G·busbw(S0)) — NCCL's per-step
 * cost at that message size, whatever the node count (a step's messages
 * cross a non-blocking fabric side by side). Below the curve's smallest
 * buffer the step stays that buffer's (the latency floor). */
static mp_time out_curve_hop(const struct system *sys, double piece)
{
    double g = sys->out_curve.gpus, s0 = piece * g * sys->chips_per_node;
    return mp_time_from_s(s0 / (g * coll_curve_busbw(&sys->out_curve, CURVE_ALL_REDUCE, s0)));
}

/* One ring step of the curve-priced collective: T / steps, T = S·factor /
 * busbw (collective.c's header). */
static mp_time curve_step(const struct system *sys, enum coll_op op, int n, double bytes)
{
    enum curve_op cop = op == COLL_ALL_REDUCE ? CURVE_ALL_REDUCE
                        : op == COLL_ALL_GATHER ? CURVE_ALL_GATHER : CURVE_REDUCE_SCATTER;
    /* n < g chips: the g-chip curve read at S·(g/n)/k and scaled by k (the
     * header's rule; k = 1 on a switch, (n−1)/(g−1) on a full mesh). */
    double g = sys->curve.gpus;
    double k = sys->scaleup.topo == TOPO_FULL_MESH ? (n - 1) / (g - 1) : 1;
    double busbw = k * coll_curve_busbw(&sys->curve, cop, bytes * (g / n) / k);
    double cap = coll_curve_cap(&sys->curve, cop, n, bytes);
    if (cap < busbw) busbw = cap;
    return mp_time_from_s(bytes * collective_bus_factor(op, n) / busbw / (double)ring_steps(op, n));
}

static mp_time hier_time_of(const struct system *sys, enum coll_op op, const struct hier *h,
                            double bytes)
{
    mp_time t = 0;
    int *rail = mp_xmalloc((size_t)h->nodes * sizeof *rail);
    /* The node-local phases run in every node at once; the slowest sets it. */
    mp_time in_rs = 0, in_ag = 0, across = 0;
    for (int k = 0; k < h->nodes; k++) {
        const int *node = h->local + k * h->per;
        mp_time a = op_time(sys, COLL_REDUCE_SCATTER, COLL_RING, node, h->per, bytes, 1);
        mp_time b = op_time(sys, COLL_ALL_GATHER, COLL_RING, node, h->per, bytes, 1);
        if (a > in_rs) in_rs = a;
        if (b > in_ag) in_ag = b;
    }
    for (int l = 0; l < h->per; l++) {
        for (int k = 0; k < h->nodes; k++) rail[k] = h->local[k * h->per + l];
        mp_time c = op_time(sys, op, COLL_RING, rail, h->nodes, bytes / h->per, 1);
        if (c > across) across = c;
    }
    if (op == COLL_ALL_REDUCE) t = mp_time_add(mp_time_add(in_rs, across), in_ag);
    else if (op == COLL_REDUCE_SCATTER) t = mp_time_add(in_rs, across);
    else t = mp_time_add(across, in_ag);
    free(rail);
    return t;
}

static mp_time hier_time(const struct system *sys, enum coll_op op, const int *chips, int n,
                         double bytes)
{
    struct hier h;
    if (!hier_split(sys, chips, n, &h)) return op_time(sys, op, COLL_RING, chips, n, bytes, 1);
    mp_time t = hier_time_of(sys, op, &h, bytes);
    free(h.local);
    return t;
}

/* `auto` for these bytes: collective_pick's algorithm, except that a
 * reduce-like op across nodes takes NCCL's ring on every rail (rails_step)
 * where that is faster than hierarchical: NCCL's tuner picks between its
 * algorithms by their modelled time, and the ring, bandwidth-bound at large
 * sizes where hierarchical pays its node-local phases on top, wins there
 * (§5d), while hierarchical's fewer latencies win small buffers and many
 * nodes. A system whose library was seen to pick the ring at every size
 * ([scaleout] auto_algorithm = ring, sys->ring_across) takes it always. */
static enum coll_algo auto_algo(const struct system *sys, enum coll_op op, const int *chips, int n,
                                double bytes, int chunks, mp_time *time)
{
    /* collective_pick's choice, the group split once for all of it. */
    if (op == COLL_ALL_TO_ALL || op == COLL_SEND_RECV) return COLL_DIRECT;
    if (op == COLL_BROADCAST) return COLL_RING;
    struct hier h;
    if (!hier_split(sys, chips, n, &h)) return COLL_RING;
    enum coll_algo algo = h.per > 1 ? COLL_HIERARCHICAL : COLL_RING;
    mp_time step;
    if (algo == COLL_HIERARCHICAL && chunks <= 1 && rails_step_of(sys, &h, n, bytes, &step)) {
        /* Both times are op_time's for these algorithms: hand back the one taken. */
        mp_time ring = mp_time_mul(step, ring_steps(op, n));
        /* With auto_algorithm = ring hierarchical is not priced at all. */
        bool take_ring = sys->ring_across;
        mp_time hier = 0;
        if (!take_ring) {
            hier = hier_time_of(sys, op, &h, bytes);
            take_ring = ring < hier;
        }
        if (take_ring) algo = COLL_RING;
        if (time) *time = take_ring ? ring : hier;
    }
    free(h.local);
    return algo;
}

enum coll_algo collective_resolve(const struct system *sys, const struct coll_spec *c)
{
    if (c->algo != COLL_AUTO) return c->algo;
    return auto_algo(sys, c->op, c->chips, c->n, c->bytes, c->chunks > 1 ? c->chunks : 1, NULL);
}

static mp_time op_time(const struct system *sys, enum coll_op op, enum coll_algo algo,
                       const int *chips, int n, double bytes, int chunks)
{
    if (n <= 1 || bytes <= 0) return 0;
    if (algo == COLL_AUTO) {
        mp_time t = -1;
        algo = auto_algo(sys, op, chips, n, bytes, chunks, &t);
        if (t >= 0) return t;
    }
    if (op == COLL_SEND_RECV) return pair_time(sys, chips[0], chips[1], bytes);
    if (op == COLL_ALL_TO_ALL && algo != COLL_DIRECT) algo = COLL_DIRECT;
    if (algo == COLL_HIERARCHICAL && op != COLL_ALL_REDUCE && op != COLL_REDUCE_SCATTER &&
        op != COLL_ALL_GATHER)
        algo = COLL_RING;
    if (algo == COLL_HALVING_DOUBLING && !is_pow2(n)) algo = COLL_RING;
    if (algo == COLL_RING && curve_prices(sys, op, chips, n, chunks))
        return mp_time_mul(curve_step(sys, op, n, bytes), ring_steps(op, n));
    double rings = mesh_group(sys, chips, n) ? n - 1 : 1;
    switch (algo) {
    case COLL_TREE: {
        mp_time lat = pair_time(sys, chips[0], chips[1 % n], 0);
        mp_time bw = ring_hop(sys, chips, n, bytes) - ring_hop(sys, chips, n, 0);
        int depth = ceil_log2(n);
        if (op == COLL_ALL_REDUCE) return mp_time_add(mp_time_mul(lat, 2LL * depth), mp_time_mul(bw, 2));
        if (op == COLL_BROADCAST) return mp_time_add(mp_time_mul(lat, depth), bw);
        return op_time(sys, op, COLL_RING, chips, n, bytes, 1);
    }
    case COLL_HALVING_DOUBLING:
        if (op == COLL_ALL_REDUCE) return mp_time_mul(hd_time(sys, chips, n, bytes), 2);
        if (op == COLL_BROADCAST) return op_time(sys, op, COLL_TREE, chips, n, bytes, 1);
        return hd_time(sys, chips, n, bytes);
    case COLL_DIRECT:
        if (op == COLL_ALL_REDUCE) return mp_time_mul(direct_time(sys, chips, n, bytes / n), 2);
        if (op == COLL_BROADCAST) return direct_time(sys, chips, 2, bytes * (n - 1));
        return direct_time(sys, chips, n, bytes / n);
    case COLL_HIERARCHICAL:
        return hier_time(sys, op, chips, n, bytes);
    case COLL_RING:
    default: {
        mp_time step;
        if (chunks <= 1 && op != COLL_BROADCAST && rails_step(sys, chips, n, bytes, &step))
            return mp_time_mul(step, ring_steps(op, n));
        if (chunks > 1 && op != COLL_BROADCAST) {
            /* collective.h: steps every max(α + s, C·s), the last piece
             * landing C·s + α after the last step starts. */
            long long steps = op == COLL_ALL_REDUCE ? 2LL * (n - 1) : n - 1;
            mp_time a = ring_hop(sys, chips, n, 0);
            mp_time ser = ring_hop(sys, chips, n, bytes / n / rings / chunks) - a;
            mp_time cs = mp_time_mul(ser, chunks), as = mp_time_add(a, ser);
            mp_time pace = as > cs ? as : cs;
            return mp_time_add(mp_time_add(mp_time_mul(pace, steps - 1), cs), a);
        }
        if (op == COLL_ALL_REDUCE) return mp_time_mul(ring_hop(sys, chips, n, bytes / n / rings), 2LL * (n - 1));
        if (op == COLL_BROADCAST) {
            /* Chunk j reaches chip i at (j + i)·s + i·α: each chip forwards a
             * chunk as it arrives and the latency is in flight, not on the
             * link (DESIGN.md §2), so the last chunk lands at
             * (n + C − 2)·s + (n − 1)·α. */
            mp_time a = ring_hop(sys, chips, n, 0);
            mp_time ser = ring_hop(sys, chips, n, bytes / BCAST_CHUNKS / rings) - a;
            return mp_time_add(mp_time_mul(ser, n + BCAST_CHUNKS - 2), mp_time_mul(a, n - 1));
        }
        return mp_time_mul(ring_hop(sys, chips, n, bytes / n / rings), n - 1);
    }
    }
}

const char *collective_model(const struct system *sys, char *buf, size_t size)
{
    if (sys->curve.present)
        snprintf(buf, size, "measured busbw curve %s (hardware/collectives.csv)", sys->curve.name);
    else
        snprintf(buf, size, "alpha-beta");
    return buf;
}

const char *collective_summary(const struct system *sys, char *buf, size_t size)
{
    char model[160];
    const char *curve = sys->out_curve.present ? sys->out_curve.name : NULL;
    char across[200];
    if (curve && sys->ring_across)
        snprintf(across, sizeof across, "a ring on every NIC rail, its steps from measured "
                 "busbw curve %s (auto_algorithm = ring)", curve);
    else if (curve)
        snprintf(across, sizeof across, "the faster of hierarchical (alpha-beta) and rail "
                 "rings (their steps from measured busbw curve %s)", curve);
    else
        snprintf(across, sizeof across, "alpha-beta, %s",
                 sys->ring_across ? "a ring on every NIC rail (auto_algorithm = ring)"
                                  : "the faster of hierarchical and rail rings");
    snprintf(buf, size, "in a node: %s; across nodes: %s",
             collective_model(sys, model, sizeof model), across);
    return buf;
}

const char *collective_priced_by(const struct system *sys, const struct coll_spec *c, char *buf,
                                 size_t size)
{
    /* The algorithm op_time ends up pricing, as it resolves it. */
    enum coll_op op = c->op;
    int chunks = c->chunks > 1 ? c->chunks : 1;
    enum coll_algo algo = c->algo == COLL_AUTO
                              ? auto_algo(sys, op, c->chips, c->n, c->bytes, chunks, NULL)
                              : c->algo;
    bool reduce_like = op == COLL_ALL_REDUCE || op == COLL_REDUCE_SCATTER || op == COLL_ALL_GATHER;
    if (algo == COLL_HIERARCHICAL && !reduce_like) algo = COLL_RING;
    if (algo == COLL_HALVING_DOUBLING && !is_pow2(c->n)) algo = COLL_RING;
    if (algo == COLL_TREE && op != COLL_ALL_REDUCE && op != COLL_BROADCAST) algo = COLL_RING;
    bool whole = false, phases = false;
    struct hier h;
    if (algo == COLL_HIERARCHICAL) {
        if (hier_split(sys, c->chips, c->n, &h)) {
            phases = curve_prices(sys, COLL_REDUCE_SCATTER, h.local, h.per, 1);
            free(h.local);
        } else {
            algo = COLL_RING;
        }
    }
    mp_time step;
    bool rails = algo == COLL_RING && reduce_like && chunks == 1 &&
                 rails_step(sys, c->chips, c->n, c->bytes, &step);
    if (algo == COLL_RING && op != COLL_SEND_RECV && op != COLL_ALL_TO_ALL)
        whole = curve_prices(sys, op, c->chips, c->n, chunks);
    if (whole) snprintf(buf, size, "measured busbw curve %s", sys->curve.name);
    else if (rails && sys->out_curve.present)
        snprintf(buf, size, "a ring on every NIC rail, its steps from measured busbw curve %s",
                 sys->out_curve.name);
    else if (rails) snprintf(buf, size, "alpha-beta, a ring on every NIC rail");
    else if (phases)
        snprintf(buf, size, "measured busbw curve %s inside each node, alpha-beta across",
                 sys->curve.name);
    else snprintf(buf, size, "alpha-beta");
    return buf;
}

mp_time collective_time(const struct system *sys, const struct coll_spec *c)
{
    return op_time(sys, c->op, c->algo, c->chips, c->n, c->bytes, c->chunks > 1 ? c->chunks : 1);
}

double collective_work(const struct system *sys, const struct coll_spec *c, enum fidelity fid,
                       double *held)
{
    double n = c->n, none;
    if (!held) held = &none;
    *held = 0;
    if (c->n <= 1 || c->bytes <= 0) return 0;
    enum coll_algo algo = c->algo == COLL_AUTO ? collective_pick(sys, c->op, c->chips, c->n) : c->algo;
    if (c->op == COLL_ALL_TO_ALL) algo = COLL_DIRECT;
    double log_n = ceil_log2(c->n) + 1;
    /* Pricing (fast): the routes the formulas look at. */
    double priced = algo == COLL_DIRECT ? n * n : algo == COLL_HALVING_DOUBLING ? n * log_n
                    : 2 * n;
    *held = 1;
    if (fid == FIDELITY_FAST) return priced;
    /* Detailed: the transfers (a compact ring is one event per step). */
    bool mesh = mesh_group(sys, c->chips, c->n);
    double steps = c->op == COLL_ALL_REDUCE ? 2 * (n - 1) : n - 1;
    double events;
    struct hier h;
    if (algo == COLL_HIERARCHICAL && c->op != COLL_BROADCAST && hier_split(sys, c->chips, c->n, &h)) {
        /* Rings inside each node (reduce-scatter and all-gather), then the
         * op across nodes on every rail. */
        double per = h.per, nodes = h.nodes;
        free(h.local);
        double across = c->op == COLL_ALL_REDUCE ? 2 * (nodes - 1) : nodes - 1;
        events = nodes * per * 2 * (per - 1) + per * nodes * across;
        *held = c->compact ? 4 * n : events;
        return priced + events;
    }
    switch (algo) {
    case COLL_TREE: events = 1; break;
    case COLL_DIRECT: events = (c->op == COLL_ALL_REDUCE ? 2 : 1) * n * n; break;
    case COLL_HALVING_DOUBLING: events = (c->op == COLL_ALL_REDUCE ? 2 : 1) * n * log_n; break;
    default:
        events = mesh ? 1 : c->op == COLL_BROADCAST ? BCAST_CHUNKS * n : n * steps;
        break;
    }
    bool ring = !mesh && algo != COLL_TREE && algo != COLL_DIRECT && algo != COLL_HALVING_DOUBLING &&
                c->op != COLL_BROADCAST;
    *held = ring && c->compact ? 2 * n : events;
    return priced + events;
}

/* ---- detailed expansion ------------------------------------------------- */

struct expand {
    struct taskgraph *g;
    const struct system *sys;
    const struct coll_spec *c;
    int added;
};

/* A transfer of `bytes` on the route src → dst, priced by the route, or
 * taking `step` when that is > 0 (a curve-priced ring step: the latency is
 * the route's, at most the step, and the link is held for the rest). */
static int transfer_at(struct expand *x, int src, int dst, double bytes, int dep1, int dep2,
                       mp_time step)
{
    int stack[MAX_ROUTE], *links;
    int nl = system_route_buf(x->sys, src, dst, stack, MAX_ROUTE, &links);
    enum op_tag tag = x->c->tag ? x->c->tag : op_tags[x->c->op];
    mp_time lat = system_route_time(x->sys, links, nl, 0);
    struct op o = tg_op(OP_TRANSFER, src, STREAM_COMM, tag,
                        step > 0 ? step : system_route_time(x->sys, links, nl, bytes));
    o.latency = step > 0 && lat > step ? step : lat;
    o.bytes = bytes;
    o.comm = x->c->comm;
    o.mb = x->c->mb;
    o.stage = x->c->stage;
    int id = tg_add_transfer(x->g, &o, links, nl);
    if (links != stack) free(links);
    if (dep1 >= 0) tg_dep(x->g, dep1, id);
    if (dep2 >= 0 && dep2 != dep1) tg_dep(x->g, dep2, id);
    x->added++;
    return id;
}

static int transfer(struct expand *x, int src, int dst, double bytes, int dep1, int dep2)
{
    return transfer_at(x, src, dst, bytes, dep1, dep2, 0);
}

/* Ring with `steps` steps of bytes/n over chips[0..n), each step in C
 * chunks (coll_spec.chunks) sent one after another: in done[i] the last
 * transfer into chip i. Appended step by step, chunk by chunk, so that each
 * chip's comm stream sends in that order (collective.h has the times). */
static void ring_expand(struct expand *x, const int *chips, int n, double bytes, int steps,
                        mp_time step_time, const int *ready, int *done)
{
    /* A curve-priced ring (step_time > 0) is one buffer: the curve is NCCL's
     * own pipelining, measured. */
    int C = x->c->chunks > 1 && step_time <= 0 ? x->c->chunks : 1;
    double chunk = bytes / n / C;
    if (x->c->compact) {
        /* One OP_RING per chip; the engine generates its steps (taskgraph.h). */
        int first = x->g->n_ops;
        for (int i = 0; i < n; i++) {
            int id = transfer_at(x, chips[i], chips[(i + 1) % n], chunk, ready[i], -1, step_time);
            if (!x->g->over) x->g->ops[id].kind = OP_RING;
        }
        tg_add_ring_chunked(x->g, first, n, steps * C, C);
        for (int i = 0; i < n; i++) done[i] = first + (i + n - 1) % n;
        return;
    }
    /* prev[c·n + i]: chunk c's transfer out of chip i in the step before. */
    int *prev = mp_xmalloc((size_t)n * C * sizeof *prev), *cur = mp_xmalloc((size_t)n * C * sizeof *cur);
    for (int step = 0; step < steps; step++) {
        for (int c = 0; c < C; c++)
            for (int i = 0; i < n; i++) {
                /* What chip i sends at this step is what it received last step. */
                int dep = step == 0 ? ready[i] : prev[c * n + (i + n - 1) % n];
                cur[c * n + i] = transfer_at(x, chips[i], chips[(i + 1) % n], chunk, dep, -1,
                                             step_time);
            }
        int *t = prev; prev = cur; cur = t;
    }
    /* The last chunk lands last (the chunks of a step go in order). */
    for (int i = 0; i < n; i++) done[i] = prev[(C - 1) * n + (i + n - 1) % n];
    free(prev);
    free(cur);
}

/* Recursive halving (reduce-scatter) or doubling (all-gather). Each step
 * needs what the chip received in the step before. */
static void hd_expand(struct expand *x, const int *chips, int n, double bytes, bool gather,
                      const int *ready, int *done)
{
    int *in = mp_xmalloc((size_t)n * sizeof *in), *next = mp_xmalloc((size_t)n * sizeof *next);
    memcpy(in, ready, (size_t)n * sizeof *in);
    int steps = ceil_log2(n);
    for (int k = 0; k < steps; k++) {
        int dist = gather ? 1 << k : n >> (k + 1);
        double piece = gather ? bytes / n * (1 << k) : bytes / (2 << k);
        for (int i = 0; i < n; i++) next[i ^ dist] = transfer(x, chips[i], chips[i ^ dist], piece, in[i], -1);
        /* Chip j may send its next piece once it has both its own previous
         * result and the partner's; the partner's transfer carries both. */
        for (int i = 0; i < n; i++) in[i] = next[i];
    }
    memcpy(done, in, (size_t)n * sizeof *done);
    free(in);
    free(next);
}

/* Zero-time op on chip's comm stream after every op in deps[0..k). */
static int join(struct expand *x, int chip, const int *deps, int k)
{
    struct op o = tg_op(OP_MEMORY, chip, STREAM_COMM, x->c->tag ? x->c->tag : op_tags[x->c->op], 0);
    o.comm = x->c->comm;
    o.mb = x->c->mb;
    o.stage = x->c->stage;
    int id = tg_add(x->g, &o);
    for (int i = 0; i < k; i++)
        if (deps[i] >= 0) tg_dep(x->g, deps[i], id);
    x->added++;
    return id;
}

/* Every chip sends `piece` to every other; done[i] joins what i received. */
static void direct_expand(struct expand *x, const int *chips, int n, double piece,
                          const int *ready, int *done)
{
    int *into = mp_xmalloc((size_t)n * n * sizeof *into);
    /* Chip i sends to i+1, i+2, ...: every round is a permutation, so no two
     * messages of a round land on one receiver's link. */
    for (int i = 0; i < n; i++) into[i * n + i] = ready[i];
    for (int k = 1; k < n; k++)
        for (int i = 0; i < n; i++) {
            int j = (i + k) % n;
            into[j * n + i] = transfer(x, chips[i], chips[j], piece, ready[i], -1);
        }
    for (int j = 0; j < n; j++) done[j] = join(x, chips[j], into + (size_t)j * n, n);
    free(into);
}

static void expand_op(struct expand *x, enum coll_op op, enum coll_algo algo, const int *chips,
                      int n, double bytes, const int *ready, int *done);

static void hier_expand(struct expand *x, enum coll_op op, const int *chips, int n, double bytes,
                        const int *ready, int *done)
{
    struct hier h;
    bool ok = hier_split(x->sys, chips, n, &h);
    assert(ok);
    (void)ok;
    /* Ready and done by chip position in h.local. */
    int *r = mp_xmalloc((size_t)n * sizeof *r), *d = mp_xmalloc((size_t)n * sizeof *d);
    int *sub = mp_xmalloc((size_t)n * sizeof *sub), *sr = mp_xmalloc((size_t)n * sizeof *sr);
    int *sd = mp_xmalloc((size_t)n * sizeof *sd);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < n; i++)
            if (chips[i] == h.local[p]) r[p] = ready[i];
    memcpy(d, r, (size_t)n * sizeof *d);
    if (op != COLL_ALL_GATHER)
        for (int k = 0; k < h.nodes; k++)
            expand_op(x, COLL_REDUCE_SCATTER, COLL_RING, h.local + k * h.per, h.per, bytes,
                      d + k * h.per, d + k * h.per);
    for (int l = 0; l < h.per; l++) {
        for (int k = 0; k < h.nodes; k++) {
            sub[k] = h.local[k * h.per + l];
            sr[k] = d[k * h.per + l];
        }
        expand_op(x, op, COLL_RING, sub, h.nodes, bytes / h.per, sr, sd);
        for (int k = 0; k < h.nodes; k++) d[k * h.per + l] = sd[k];
    }
    if (op != COLL_REDUCE_SCATTER)
        for (int k = 0; k < h.nodes; k++)
            expand_op(x, COLL_ALL_GATHER, COLL_RING, h.local + k * h.per, h.per, bytes,
                      d + k * h.per, d + k * h.per);
    for (int p = 0; p < n; p++)
        for (int i = 0; i < n; i++)
            if (chips[i] == h.local[p]) done[i] = d[p];
    free(r); free(d); free(sub); free(sr); free(sd);
    free(h.local);
}

/* One op standing for the whole collective (fast, or an algorithm the
 * detailed expansion does not cover). */
static void single_op(struct expand *x, enum coll_op op, enum coll_algo algo, const int *chips,
                      int n, double bytes, const int *ready, int *done)
{
    enum op_tag tag = x->c->tag ? x->c->tag : op_tags[op];
    bool whole = op == x->c->op && chips == x->c->chips && n == x->c->n && bytes == x->c->bytes;
    mp_time t = whole && x->c->time > 0
                    ? x->c->time
                    : op_time(x->sys, op, algo, chips, n, bytes, x->c->chunks > 1 ? x->c->chunks : 1);
    struct op o = tg_op(OP_COLLECTIVE, chips[0], STREAM_COMM, tag, t);
    o.bytes = bytes;
    o.comm = x->c->comm;
    o.mb = x->c->mb;
    o.stage = x->c->stage;
    int id = tg_add(x->g, &o);
    /* Usually every member waits on the same op: one dependency. */
    bool same = true;
    for (int i = 1; i < n && same; i++) same = ready[i] == ready[0];
    for (int i = 0; i < (same ? 1 : n); i++) {
        bool seen = false;
        for (int k = 0; k < i; k++) seen |= ready[k] == ready[i];
        if (ready[i] >= 0 && !seen) tg_dep(x->g, ready[i], id);
    }
    for (int i = 0; i < n; i++) done[i] = id;
    x->added++;
}

static void expand_op(struct expand *x, enum coll_op op, enum coll_algo algo, const int *chips,
                      int n, double bytes, const int *ready, int *done)
{
    if (n <= 1 || bytes <= 0) {
        for (int i = 0; i < n; i++) done[i] = ready[i];
        return;
    }
    int chunks = x->c->chunks > 1 ? x->c->chunks : 1;
    if (algo == COLL_AUTO) algo = auto_algo(x->sys, op, chips, n, bytes, chunks, NULL);
    if (op == COLL_ALL_TO_ALL) algo = COLL_DIRECT;
    if (algo == COLL_HALVING_DOUBLING && !is_pow2(n)) algo = COLL_RING;
    if (algo == COLL_HIERARCHICAL) {
        struct hier h;
        bool ok = (op == COLL_ALL_REDUCE || op == COLL_REDUCE_SCATTER || op == COLL_ALL_GATHER) &&
                  hier_split(x->sys, chips, n, &h);
        if (ok) {
            free(h.local);
            hier_expand(x, op, chips, n, bytes, ready, done);
            return;
        }
        algo = COLL_RING;
    }
    if (op == COLL_SEND_RECV) {
        done[0] = ready[0];
        done[1] = transfer(x, chips[0], chips[1], bytes, ready[0], ready[1]);
        for (int i = 2; i < n; i++) done[i] = ready[i];
        return;
    }
    bool mesh = mesh_group(x->sys, chips, n);
    /* A ring on every rail drives a NIC and the scale-up port at once,
     * which one comm stream per chip cannot: one op, as on a mesh. */
    mp_time rail_step;
    bool rails = algo == COLL_RING && op != COLL_BROADCAST && chunks == 1 &&
                 rails_step(x->sys, chips, n, bytes, &rail_step);
    if (algo == COLL_TREE || ((mesh || rails) && algo == COLL_RING)) {
        single_op(x, op, algo, chips, n, bytes, ready, done);
        return;
    }
    switch (algo) {
    case COLL_HALVING_DOUBLING:
        if (op == COLL_ALL_REDUCE) {
            hd_expand(x, chips, n, bytes, false, ready, done);
            hd_expand(x, chips, n, bytes, true, done, done);
        } else if (op == COLL_REDUCE_SCATTER || op == COLL_ALL_GATHER) {
            hd_expand(x, chips, n, bytes, op == COLL_ALL_GATHER, ready, done);
        } else {
            single_op(x, op, algo, chips, n, bytes, ready, done);
        }
        return;
    case COLL_DIRECT:
        if (op == COLL_ALL_REDUCE) {
            direct_expand(x, chips, n, bytes / n, ready, done);
            direct_expand(x, chips, n, bytes / n, done, done);
        } else if (op == COLL_BROADCAST) {
            single_op(x, op, algo, chips, n, bytes, ready, done);
        } else {
            direct_expand(x, chips, n, bytes / n, ready, done);
        }
        return;
    default:
        break;
    }
    /* Ring, at the measured curve's step time where it applies. */
    mp_time step = curve_prices(x->sys, op, chips, n, chunks) ? curve_step(x->sys, op, n, bytes) : 0;
    if (op == COLL_ALL_REDUCE) {
        ring_expand(x, chips, n, bytes, 2 * (n - 1), step, ready, done);
    } else if (op == COLL_BROADCAST) {
        /* A chain from chips[0], pipelined in chunks: chunk j moves from chip
         * i to i+1 once it has reached i. The ring's closing link is unused. */
        int *at = mp_xmalloc((size_t)n * sizeof *at);
        for (int j = 0; j < BCAST_CHUNKS; j++) {
            at[0] = ready[0];
            for (int i = 0; i + 1 < n; i++)
                at[i + 1] = transfer(x, chips[i], chips[i + 1], bytes / BCAST_CHUNKS, at[i],
                                     j == 0 ? ready[i + 1] : -1);
            if (j == BCAST_CHUNKS - 1)
                for (int i = 0; i < n; i++) done[i] = at[i];
        }
        free(at);
    } else {
        ring_expand(x, chips, n, bytes, n - 1, step, ready, done);
    }
}

int collective_add(struct taskgraph *g, const struct system *sys, const struct coll_spec *c,
                   enum fidelity fid, const int *ready, int *done)
{
    assert(c->n >= 1 && (c->op != COLL_SEND_RECV || c->n >= 2));
    struct expand x = { .g = g, .sys = sys, .c = c };
    if (c->n <= 1 || c->bytes <= 0) {
        for (int i = 0; i < c->n; i++) done[i] = ready[i];
        return 0;
    }
    if (fid == FIDELITY_FAST)
        single_op(&x, c->op, c->algo, c->chips, c->n, c->bytes, ready, done);
    else
        expand_op(&x, c->op, c->algo, c->chips, c->n, c->bytes, ready, done);
    return x.added;
}

void collective_ring_all_reduce(struct taskgraph *g, const struct system *sys,
                                const int *chips, int n, double bytes,
                                const int *ready, int *done)
{
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_RING, .chips = chips, .n = n,
                           .bytes = bytes, .mb = -1, .stage = -1 };
    struct expand x = { .g = g, .sys = sys, .c = &c };
    if (n <= 1) {
        for (int i = 0; i < n; i++) done[i] = ready[i];
        return;
    }
    ring_expand(&x, chips, n, bytes, 2 * (n - 1), 0, ready, done);
}

mp_time collective_ring_all_reduce_time(const struct system *sys, const int *chips, int n,
                                        double bytes)
{
    if (n <= 1) return 0;
    return mp_time_mul(ring_hop(sys, chips, n, bytes / n), 2LL * (n - 1));
}

int collective_run_alone(const struct system *sys, const struct coll_spec *c, mp_time *t,
                         uint64_t *events, struct mp_error *err)
{
    struct taskgraph g;
    tg_init(&g, sys->n_chips, sys->n_links);
    int n = c->n > 0 ? c->n : 1;
    int *ready = mp_xmalloc((size_t)n * sizeof *ready), *done = mp_xmalloc((size_t)n * sizeof *done);
    for (int i = 0; i < n; i++) ready[i] = -1;
    collective_add(&g, sys, c, FIDELITY_DETAILED, ready, done);
    tg_finalize(&g);
    struct engine e;
    engine_init(&e, &g);
    int rc = engine_run(&e, err);
    *t = rc == MP_OK ? engine_makespan(&e) : -1;
    if (events) *events = e.events;
    engine_release(&e);
    tg_release(&g);
    free(ready);
    free(done);
    return rc;
}
