/* price.h — a training step's compute priced kernel by kernel (issue 14):
 * every model layer's kernels (models/kernels.h) timed on the chip from the
 * calibration table (hardware/calib.h), once per layer, into the
 * per-layer prices the stage costs, tensor.c's segments and the breakdown
 * share; one routed expert's kernels by its token count (memoised, for
 * experts.c); the optimizer step's memory traffic.
 *
 * Used by sim.c; the functions take the struct sim being built. */
#ifndef MPSIM_PRICE_H
#define MPSIM_PRICE_H

#include "sim.h"

/* The kernel shapes of the scenario (tokens, TP/SP, precisions, attention). */
struct kernel_params price_kernel_params(const struct sim *s);

/* Load the chip's calibration rows (or borrow `shared`, loaded for the
 * same chip, when not NULL: sim_options.inputs) and check that the
 * scenario can run on it (FP8 needs an FP8 peak). MP_ERR_INPUT naming the
 * key or file. */
int price_load(struct sim *s, const struct calib *shared, struct mp_error *err);

/* Price every model layer (s->price, s->layer_bd) and every stage from its
 * layers (s->stage_cost times, s->stage_bd). */
void price_layers(struct sim *s);

/* experts.h's callback: pass 0/1/2 (F/B/W) of one routed expert for
 * `tokens` tokens, in ps. `ctx` is the struct sim. */
mp_time price_expert(void *ctx, double tokens, int pass);

/* data_parallel.h's callback: `bytes` of memory-bound traffic in `kernels`
 * launches, in ps. */
mp_time price_memory(void *ctx, double bytes, int kernels);

/* Free what price_* allocated. */
void price_release(struct sim *s);

#endif
