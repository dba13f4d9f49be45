/* bound.h — closed-form lower bounds of a layout's step time and memory,
 * priced exactly as sim_run prices it but without simulating: the first
 * tier of the search (sim/explore/search.h), as fast per layout as an
 * analytic planner.
 *
 * Time. Every device runs, for every microbatch, the passes of the stages it
 * holds; a pass cannot take less than its segments in isolation (its
 * compute, and the TP/EP collectives the compute waits for, on an idle
 * fabric: `chain`). A device cannot start before the first microbatch's
 * forward has reached its first stage (the chains and hand-offs of the
 * stages before), and after its last input-gradient backward the same
 * microbatch's backward still walks down the stages below. So for every
 * device d, with busy_d the Σ of its chains:
 *   step ≥ fill_d + busy_d + tail_d,
 *   step ≥ fill_d + busy_d − (weight-gradient work that may trail) + drain_d,
 * where tail_d is what must follow the device's last op: its optimizer step
 * (or, with the optimizer offloaded, the updated weights coming back) and,
 * under ZeRO 1/2, the weights' all-gather. Contention, bubbles the
 * schedule leaves beyond fill and drain, and exposed DP or PP traffic only
 * add to the simulated step, so the bound never exceeds it (tests hold it
 * against simulations). With uniform stages and free hand-offs, GPipe and
 * 1F1B meet it: (m + p − 1)(t_f + t_b).
 *
 * Memory. A chip's peak is at least its static state (weights, gradients,
 * optimizer state as ZeRO shards them, less what offload keeps on the
 * host), plus the activations its schedule holds at its busiest moment
 * (counted from the program's order: GPipe all m, 1F1B min(p − d, m) on
 * device d, ...; one microbatch's when activations are offloaded), plus
 * ZeRO-3's buffers of the forward running then (one layer's gathered
 * weights and the next one's prefetch). The host's share is the offloaded
 * state of every chip of a node. */
#ifndef MPSIM_BOUND_H
#define MPSIM_BOUND_H

#include "sim.h"

struct sim_bound {
    mp_time step;        /* lower bound of step_time_s, in ps */
    mp_time busy;        /* the busiest device's Σ pass chains */
    mp_time fill, drain; /* of the device that sets `step` */
    double mem;          /* lower bound of the busiest chip's peak, bytes */
    double host_mem;     /* bytes a node's host memory must hold (offload) */
};

/* Bound the layout `cfg` (a scenario that sim_run would accept). `opts`
 * may share loaded inputs (sim_options.inputs). Errors as sim_run's before
 * simulating (MP_ERR_INFEASIBLE for a schedule's rules). */
int sim_bound(const struct config *cfg, const struct sim_options *opts, struct sim_bound *b,
              struct mp_error *err);

/* sim_bound for n layouts that differ only in training.zero and
 * training.offload (and agree in every other key), priced once. */
int sim_bound_many(const struct config *const *cfgs, int n, const struct sim_options *opts,
                   struct sim_bound *b, struct mp_error *err);

/* The memory bound alone, from the model and the system's chips per node,
 * without pricing (search's first cut), from a layer table: the average
 * chip, and under
 * GPipe, 1F1B, ZB-H1 and ZB-H2 each device by the schedule's warm-up
 * count. sim_bound's `mem` also counts each device's activations at its
 * busiest moment from the program's order, so it is the tighter one. */
void sim_memory_bound(const struct config *cfg, const struct model *m, int chips_per_node,
                      const double *table_params, const double *table_act, double *chip_bytes,
                      double *host_bytes);

/* Per model layer, per chip of the TP group: parameters and one
 * microbatch's stash (M_B) for cfg's tp, sp, micro_batch and recompute —
 * sim_memory_bound's table (NULL there: it prices them itself). */
void sim_layer_table(const struct config *cfg, const struct model *m, double *params, double *act);

#endif
