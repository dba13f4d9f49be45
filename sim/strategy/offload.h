/* offload.h — training state kept in host memory (training.offload), and the
 * copies over each chip's host link that it costs.
 *
 * What moves, as DeepSpeed does it (ZeRO-Offload, Ren et al., USENIX ATC
 * 2021; ZeRO-Infinity, Rajbhandari et al., SC 2021):
 *  - optimizer: the fp32 master weights and Adam moments live in host memory
 *    and the CPU runs the optimizer step (CPU-Adam). The gradients go to the
 *    host as soon as they are reduced (bucket by bucket, overlapping the
 *    backward; with ZeRO-3 every layer's shard as its reduce-scatter ends,
 *    every microbatch), and after the step the updated 16-bit weights come
 *    back (then ZeRO 1/2 all-gather them as without offload). Needs ZeRO ≥ 1.
 *  - optimizer+weights: also the 16-bit weights live in host memory: every
 *    pass fetches each layer's weights over the host link just before the
 *    layer computes, one layer ahead (ZeRO-Infinity's parameter offload,
 *    which runs on ZeRO-3's fetch/release, so it needs ZeRO 3), and the
 *    updated weights stay on the host.
 *  - all: also the activations a forward stashes for its backward go to the
 *    host when the forward ends and come back before the backward, fetched
 *    when the pass before it starts (ZeRO-Infinity's activation offload).
 *
 * The host link is each chip's own, one link per direction at [host] link_bw
 * with link_latency per copy (TEAM.md interface 1, hardware/system.h), on
 * two copy streams per chip (STREAM_TO_HOST, STREAM_FROM_HOST: GPUs have
 * separate copy engines per direction), so copies overlap compute and NCCL
 * exactly as far as dependencies allow. Not modelled (assumptions): the
 * CPU-Adam time itself (ZeRO-Offload overlaps it with the gradient copies,
 * bucket by bucket; no figure of its speed is in our sources), and sharing
 * of a PCIe switch by two GPUs (nvbandwidth's per-GPU figure is used). Host
 * memory per node must hold what every chip of the node offloads. */
#ifndef MPSIM_OFFLOAD_H
#define MPSIM_OFFLOAD_H

#include <stdbool.h>

#include "hardware/system.h"
#include "sim/engine/taskgraph.h"

/* The order matches the choices of `training.offload`. */
enum offload_kind { OFFLOAD_NONE, OFFLOAD_OPTIMIZER, OFFLOAD_WEIGHTS, OFFLOAD_ALL };

struct offload {
    enum offload_kind kind;
    struct system_host host;
    int link_base;   /* graph link of chip c to the host: link_base + 2c; back: + 1 */
};

/* Links the graph needs beyond the system's for `kind` (2 per chip, or 0). */
int offload_links(enum offload_kind kind, int n_chips);

/* A copy of `bytes` between `chip` and host memory on the chip's copy
 * stream and host link, after op `after` (-1: none). It takes `alloc` bytes
 * of `cat` as it starts and gives back `release` as it ends (activations
 * that leave or come back). Returns the op. */
int offload_copy(struct taskgraph *g, const struct offload *o, int chip, bool to_host,
                 double bytes, int after, enum mem_cat cat, double alloc, double release);

#endif
