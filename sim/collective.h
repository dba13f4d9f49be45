/* collective.h — collectives expanded into transfers on the topology.
 *
 * A ring all-reduce of S bytes over n chips is a reduce-scatter then an
 * all-gather: 2(n−1) steps, in each of which every chip sends S/n bytes to its
 * ring successor along the system's route. Steps are transfers in the task
 * graph, so two collectives sharing a link slow each other down. With no other
 * traffic the time is 2(n−1)·(α + S/(n·B)) = 2(n−1)/n · S/B + 2(n−1)·α, the
 * textbook (and nccl-tests) figure. */
#ifndef MPSIM_COLLECTIVE_H
#define MPSIM_COLLECTIVE_H

#include "common.h"
#include "system.h"
#include "taskgraph.h"

/* Append a ring all-reduce over chips[0..n) (ring order as given). Chip i's
 * first send waits on ready[i] (an op id, or -1 for none). On return done[i]
 * is the op after which chip i holds the reduced result. n = 1 appends
 * nothing and copies ready to done. */
void collective_ring_all_reduce(struct taskgraph *g, const struct system *sys,
                                const int *chips, int n, double bytes,
                                const int *ready, int *done);

/* The alpha-beta time of the same ring all-reduce with nothing else on the
 * links: 2(n−1) × route time of S/n bytes between ring neighbours (the
 * slowest neighbour pair sets the pace). */
mp_time collective_ring_all_reduce_time(const struct system *sys, const int *chips, int n,
                                        double bytes);

#endif
