/* system.h — chips wired into a machine: nodes of chips on a scale-up fabric
 * (NVSwitch, xGMI mesh, torus, wafer), nodes joined by a scale-out fabric
 * (fat-tree, rail-optimised, Ethernet chain). Presets are INI files under
 * hardware/systems/.
 *
 * The system is a set of directed links, each with a bandwidth and a latency;
 * a route between two chips is a list of link indices. The engine only sees
 * link indices and durations, so topology lives here alone. */
#ifndef MPSIM_SYSTEM_H
#define MPSIM_SYSTEM_H

#include <stdbool.h>

#include "chip.h"
#include "coll_curve.h"
#include "sim/common.h"

enum topology {
    TOPO_SWITCH,    /* every chip has one up and one down link to a switch */
    TOPO_RING,      /* chip i -> i+1 and i -> i-1 */
    TOPO_FULL_MESH, /* a direct link between every pair */
    TOPO_CHAIN,     /* a line of hops (Ethernet between wafers): i <-> i+1 */
    TOPO_FAT_TREE,  /* scale-out: one NIC per chip into a non-blocking fabric */
    TOPO_NONE,      /* no fabric: one chip per node, or one node per system */
    TOPO_TORUS,     /* scale-up: 2D or 3D torus (dims), dimension-order routing */
    TOPO_RAIL,      /* scale-out: rail-optimised; NIC l of every node on rail switch l */
};

#define SYSTEM_MAX_DIMS 3

struct link {
    double bw;         /* bytes/s; INFINITY for an instant link */
    mp_time latency;   /* per traversal */
};

struct fabric {
    enum topology topo;
    double bw;         /* each link, one direction, bytes/s (INFINITY: instant);
                          on a switch or fat-tree that is per chip per direction */
    mp_time latency;   /* per hop; a switch or fat-tree charges it once per
                          route, on the up link */
};

/* The host tier of a node (the [host] section; interface 1 of TEAM.md): the
 * CPU's memory, the link between host memory and each chip, and the local
 * NVMe disk. What offloading weights (Accelerate's cpu/disk devices, ZeRO
 * offload) pays for. */
struct system_host {
    bool present;         /* the preset has a [host] section */
    double mem_bytes;     /* host memory per node */
    double link_bw;       /* host <-> one chip, bytes/s per direction (link's
                             sourced default, or link_bw) */
    mp_time link_latency; /* per copy */
    double disk_bytes;    /* local NVMe per node (0: none given) */
    double disk_bw;       /* NVMe read bytes/s per node (0: none given) */
};

/* Host-link kinds of `[host] link`, each with its default bandwidth per chip
 * per direction and where that figure comes from (hardware/README.md). */
struct host_link_kind {
    const char *name;     /* "pcie4x16" */
    double bw;            /* bytes/s per direction */
    const char *source;
};
extern const struct host_link_kind host_link_kinds[];  /* ends with name NULL */

struct system {
    char name[64];
    char description[256]; /* one line for `mpsim list systems` ("" if none) */
    struct chip chip;
    int chips_per_node;
    int nodes;
    int n_chips;
    struct fabric scaleup, scaleout;
    /* [scaleout] auto_algorithm = ring: `auto` prices a reduce-like
     * collective across nodes as NCCL's ring on every NIC rail at every
     * size, where the collective library was measured to pick it (false,
     * `fastest`: the faster of that ring and hierarchical, as a tuner
     * choosing by modelled time would). */
    bool ring_across;
    int dims[SYSTEM_MAX_DIMS]; /* torus: chips along x, y, z (unused dims 1) */
    int n_dims;                /* torus: 2 or 3; 0 otherwise */
    struct link *links;
    int n_links;
    /* Internal routing tables, built by system_load: per chip, the index of
     * a link, -1 where it has none; NULL when the topology has no such link.
     * Chips are numbered node by node: chip c is local c % chips_per_node of
     * node c / chips_per_node. */
    int *up, *down;          /* switch: chip -> switch, switch -> chip */
    int *next, *prev;        /* ring/chain: to local + 1 / local - 1 (ring wraps) */
    int *mesh;               /* full mesh: first of the chip's chips_per_node - 1
                                out-links, in local order with itself skipped */
    int *nic_up, *nic_down;  /* fat-tree: NIC out, NIC in */
    int *out_next, *out_prev; /* scale-out chain: to the same local chip of
                                 node + 1 / node - 1 (one chain per rail) */
    int *torus;              /* torus: [chip * 2 * n_dims + 2 * dim + (0 plus, 1 minus)] */
    struct system_host host; /* [host]: host memory, host link, disk */
    struct coll_curve curve; /* [scaleup] busbw_curve: measured collective busbw by size
                                (hardware/collectives.csv); curve.present false = none */
    struct coll_curve out_curve; /* [scaleout] busbw_curve: an all-reduce measured across
                                    whole nodes of this system, from which the ring on every
                                    NIC rail takes its step time by piece size
                                    (sim/strategy/collective.c); present false = none */
};

/* Load a system preset (name under hardware/systems/ or a path) with the chip
 * its [system] chip key names in `cat`. A name with no '/' and no ".ini" is a
 * preset. `nodes` = 0 picks the fewest nodes holding `chips_needed` chips (at
 * least 1); n_chips is then nodes × chips_per_node. MP_ERR_INPUT names file,
 * line and key. On failure `sys` is empty and safe to release. */
int system_load(struct system *sys, const char *path, int nodes, int chips_needed,
                const struct chip_catalog *cat, struct mp_error *err);

/* system_load in two steps, so that a caller can weigh the system before
 * its links exist (sim_run's work budget, issue 16): system_plan reads the
 * preset and fixes nodes and n_chips (everything but links and routes);
 * system_build then lays the links out, O(n_chips). */
int system_plan(struct system *sys, const char *path, int nodes, int chips_needed,
                const struct chip_catalog *cat, struct mp_error *err);
void system_build(struct system *sys);

/* The links system_build lays out, known once system_plan has run (for the
 * work budget: a torus or a mesh has several links a chip). */
long long system_link_count(const struct system *sys);

/* Free the links and routing tables; the system is then empty. */
void system_release(struct system *sys);

/* Node of a chip. */
int system_node_of(const struct system *sys, int chip);

/* Links a transfer from `src` to `dst` crosses, written to `out` (up to
 * `max`); returns the route's full length (0 when src == dst), which exceeds
 * `max` when `out` was too short (like snprintf). Inside a node: switch
 * [up, down], ring the shorter way hop by hop, full mesh the direct link,
 * chain hop by hop. Across nodes: fat-tree [nic_up, nic_down]; chain: first
 * to the destination's local index inside the source node, then node by
 * node. */
int system_route(const struct system *sys, int src, int dst, int *out, int max);

/* The route src → dst, held in `stack` (room for `max` links) when it fits
 * and in a new heap array when it does not (a long chain of wafers): *links
 * points at whichever holds it; free(*links) when it is not `stack`.
 * Returns the route's length. */
int system_route_buf(const struct system *sys, int src, int dst, int *stack, int max,
                     int **links);

/* Time to move `bytes` along a route with nothing else on it: the sum of the
 * links' latencies plus bytes over the slowest link's bandwidth. */
mp_time system_route_time(const struct system *sys, const int *route, int n, double bytes);

/* The fabric figures a transfer time comes from, for messages naming the
 * inputs behind a duration past its cap: "system NAME ([scaleup] bandwidth
 * = 450GB/s, latency = 1us; [scaleout] bandwidth = 50GB/s, latency = 5us)". */
void system_describe(const struct system *sys, char *buf, size_t size);

#endif
