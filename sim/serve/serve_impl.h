/* serve_impl.h — what the files of sim/serve/ share and nothing else sees:
 * the per-layer pricing record, the microbatch slot, the event kinds, and
 * the functions one file calls in another (serve.c the loop, serve_price.c
 * the machine, serve_workload.c the requests, serve_fast.c the
 * walk-at-a-time loop). The module's API is serve.h. */
#ifndef MPSIM_SERVE_IMPL_H
#define MPSIM_SERVE_IMPL_H

#include "serve.h"
#include "models/kernels.h"

/* Small counts (emitted tokens of a pass) the fast loop tabulates. */
#define POW_TAB 64

/* Bounds that keep every time the serving loops form inside int64 ps: one
 * pass's walk down every stage and hop (its stage times at a full token
 * budget and context) is at most SERVE_WALK_MAX (2^60 ps, 13 days), checked
 * before the run; the clock at most SERVE_CLOCK_MAX (2^61 ps, 27 days),
 * checked at every event. A clock plus a few walks then stays below 2^63. */
#define SERVE_WALK_MAX (MP_TIME_HUGE / 4)
#define SERVE_CLOCK_MAX (MP_TIME_HUGE / 2)

/* What makes two layers price the same (serve_fast.c groups stages by it). */
struct serve_layer {
    int layer;               /* index in the model */
    int kind, attn;          /* enum layer_kind, enum attn_kind */
    int mixer, mlp;          /* enum mixer_kind, enum mlp_kind */
    bool moe;
    int window;              /* sliding / chunked attention: tokens (0: none) */
    double params, matmul_params, expert_params;
};

struct serve_slot {
    int n;                   /* members */
    int stage;               /* where the slot is (or goes) */
    bool active;             /* in the pipeline; false = idle at stage 0 */
    /* This pass, for pricing (models/kernels.h): tokens, items, emits,
     * decode members and the KV lengths they read, prompt chunks, their
     * tokens and (query, key) pairs. */
    struct kernel_batch b;
};

enum { EV_ARRIVAL, EV_STAGE_DONE, EV_HOP_DONE, EV_RETURN, EV_HORIZON };
#define EV_SHIFT 3

/* A length limit that is 0 when unset. */
static inline int serve_dist_max(int max, int fallback) { return max > 0 ? max : fallback; }

/* serve_workload.c: the requests, drawn (Poisson arrivals, length
 * distributions, one gsl_rng seeded from run.seed) or read from a trace CSV. */
int serve_poisson_requests(struct serve *s);
int serve_trace_requests(struct serve *s, struct mp_error *err);

/* serve_price.c: each stage's layers (s->layers, s->layer_off) and the
 * chip's calibration rows; a pass's time on a stage from the kernels it
 * runs (models/kernels.h kernels_serve_layer), the hand-off routes.
 * MP_ERR_INPUT when the calibration table is bad or FP8 is asked of a chip
 * without an FP8 peak. */
int serve_price_layers(struct serve *s, struct mp_error *err);
mp_time serve_slot_time(const struct serve *s, int stage, const struct serve_slot *sl);
/* A pass of batch `b` on a stage; serve_batch_add puts one request's part
 * of a pass in `b` (serve_stage_time's, under the model's window). */
mp_time serve_batch_time(const struct serve *s, int stage, const struct kernel_batch *b);
void serve_batch_add(const struct serve *s, struct kernel_batch *b, double tokens, double past,
                     bool decode, bool emits);
/* Price as model.generate() runs: kernels launched one by one (no CUDA
 * graphs), no serving scheduler's host step (sim/serve/accel_gen.c). */
void serve_price_eager(struct serve *s);
void serve_price_release(struct serve *s);
/* One line for the summary: which calibration rows priced the kernels. */
void serve_price_describe(const struct serve *s, char *buf, size_t size);
double serve_hop_bytes(const struct serve *s, int stage, double tokens);
void serve_build_hops(struct serve *s);

/* serve.c: what the fast loop shares with the per-stage loop. */
void serve_launch(struct serve *s, int k, mp_time now);
void serve_wake_idle(struct serve *s, mp_time now);
void serve_emit(struct serve *s, int k, mp_time now);

/* serve_fast.c: the walk-at-a-time loop (serve.h, "Event granularity").
 * serve_fast_init leaves s->fast NULL when hand-off routes share links. */
void serve_fast_init(struct serve *s);
void serve_fast_release(struct serve_fast *f);
void serve_fast_walk(struct serve *s, int k, mp_time now);
void serve_fast_run(struct serve *s);
/* Two slot events the fast loop's keys could not order: the run must start
 * over with per-stage events. */
bool serve_fast_tied(const struct serve_fast *f);

#endif
