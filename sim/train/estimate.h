/* estimate.h — how many events a training step will take, from its
 * scenario and model alone, before the schedule or the graph exist (issue 16):
 * sim_run refuses a step past the work budget (sim/io/budget.h) with it, and
 * sweeps and searches add it up over their points. */
#ifndef MPSIM_ESTIMATE_H
#define MPSIM_ESTIMATE_H

#include "hardware/system.h"
#include "models/model.h"
#include "sim/io/config.h"

/* Engine events (ops) of one training step of `cfg`; `m` is its model, NULL
 * for a synthetic one, `sys` its system (NULL: not loaded yet, no full mesh). Within about a factor of two of what the run counts
 * (the value fuzzer checks the direction that matters: the graph's own cap
 * counts exactly). */
double sim_events_estimate(const struct config *cfg, const struct model *m,
                           const struct system *sys);

/* The pieces (segments) of the per-stage pass programs (tensor.h) the step
 * builds whole, however many periods steady-state skipping then leaves out:
 * one microbatch's ops on every stage, by the same count. A context-parallel
 * degree of 65,536 makes millions of them (the value fuzzer). */
double sim_plan_pieces_estimate(const struct config *cfg, const struct model *m,
                                const struct system *sys);

#endif
