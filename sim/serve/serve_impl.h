/* serve_impl.h — what the files of sim/serve/ share and nothing else sees:
 * the per-layer pricing record, the microbatch slot, the event kinds, and
 * the functions one file calls in another (serve.c the loop, serve_price.c
 * the machine, serve_workload.c the requests, serve_fast.c the
 * walk-at-a-time loop). The module's API is serve.h. */
#ifndef MPSIM_SERVE_IMPL_H
#define MPSIM_SERVE_IMPL_H

#include "serve.h"

#define POW_TAB 64

/* Bounds that keep every time the serving loops form inside int64 ps: one
 * pass's walk down every stage and hop (its stage times at a full token
 * budget and context) is at most SERVE_WALK_MAX (2^60 ps, 13 days), checked
 * before the run; the clock at most SERVE_CLOCK_MAX (2^61 ps, 27 days),
 * checked at every event. A clock plus a few walks then stays below 2^63. */
#define SERVE_WALK_MAX (MP_TIME_HUGE / 4)
#define SERVE_CLOCK_MAX (MP_TIME_HUGE / 2)

/* What pricing needs of one layer, per chip. */
struct serve_layer {
    int kind, attn;          /* enum layer_kind, enum attn_kind */
    double fixed_bytes;      /* weights every pass reads (all but routed experts) */
    double expert_bytes;     /* routed experts' weights */
    double expert_frac;      /* top-k / experts; 0 when dense */
    double matmul_params;    /* weight-matrix parameters one token multiplies by */
    double attn_coef;        /* full: FLOPs per (token, context) pair; linear: per token */
    double kv_per_token, state;
    double hidden_bytes;     /* one token's activation, h × activation bytes */
    double row_bytes;        /* embedding: one row of weights */
    double vocab;
    double head_flops;       /* LM head: FLOPs per emitted token (2 V h) */
    /* pow(1 − expert_frac, n) for small n: a pass's token count repeats
     * (decode passes carry a few), and pow was a tenth of the run. */
    double miss[POW_TAB];
};

struct serve_slot {
    int n;                   /* members */
    int stage;               /* where the slot is (or goes) */
    bool active;             /* in the pipeline; false = idle at stage 0 */
    double tokens, pairs, ctx, items, emits; /* this pass, for pricing */
};

enum { EV_ARRIVAL, EV_STAGE_DONE, EV_HOP_DONE, EV_RETURN, EV_HORIZON };
#define EV_SHIFT 3

/* A length limit that is 0 when unset. */
static inline int serve_dist_max(int max, int fallback) { return max > 0 ? max : fallback; }

/* serve_workload.c: the requests, drawn (Poisson arrivals, length
 * distributions, one gsl_rng seeded from run.seed) or read from a trace CSV. */
int serve_poisson_requests(struct serve *s);
int serve_trace_requests(struct serve *s, struct mp_error *err);

/* serve_price.c: each stage's layers priced once (s->layers, s->layer_off),
 * a pass's time on a stage from its totals, the hand-off routes. */
void serve_price_layers(struct serve *s);
mp_time serve_sum_time(const struct serve *s, int stage, double T, double pairs, double ctx,
                       double items, double emits);
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
