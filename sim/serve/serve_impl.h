/* serve_impl.h — what the files of sim/serve/ share and nothing else sees:
 * the per-layer pricing record, the microbatch slot, pools and replicas,
 * the waiting queues, the event kinds, and the functions one file calls in
 * another (serve.c the loop, serve_price.c the machine, serve_layout.c the
 * replicas on the system, serve_sched.c the schedulers, serve_router.c the
 * routers, serve_kv.c paged KV and the prefix cache, serve_workload.c the
 * requests, serve_metrics.c the figures, serve_disagg.c prefill/decode
 * pools, serve_spec.c speculative decoding, serve_fast.c the walk-at-a-time
 * loop). The module's API is serve.h. */
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

/* A priced stage: the layers one chip of a stage group holds, split by its
 * tensor-parallel degree (and its routed experts by ep). */
struct serve_priced { int first, last, tp, ep; };

struct serve_slot {
    int n;                   /* members */
    int stage;               /* where the slot is (or goes): a global stage */
    bool active;             /* in the pipeline; false = idle at stage 0 */
    /* This pass, for pricing (models/kernels.h): tokens, items, emits,
     * decode members and the KV lengths they read, prompt chunks, their
     * tokens and (query, key) pairs. */
    struct kernel_batch b;
    double swap_tokens;      /* KV tokens copied to or from the host before this pass */
    double spec_items, spec_ctx; /* decode members the draft proposes for, their context */
    int waited;              /* decode_first: decode steps since its last prefill */
};

/* Replicas of one layout (serve_layout.c): one pool, or with
 * inference.disaggregate a prefill pool (0) and a decode pool (1). */
struct serve_pool {
    int tp, pp, ep, dp_attn;     /* per stage: max(tp, ep) chips, attention DP ep / tp */
    int width;                   /* chips per stage */
    int stages, replicas, rep0;  /* stages of one replica; its replicas' numbers */
    int slots;                   /* slots per replica */
    int priced0;                 /* its first priced stage */
    struct plan_run *pr;         /* its placement: &s->pr, or its own */
    bool own_pr;
    /* Per stage, per chip. */
    double *weights, *act;       /* weight bytes, activation workspace (paged) */
    double *cap;                 /* reserve: capacity − weights; paged: pool bytes of the replica */
    double *block_bytes;         /* bytes of one KV block (block_size tokens) */
    double *state_bytes;         /* recurrent state of one request */
    int64_t blocks;              /* paged: blocks of one replica (min over stages) */
    int64_t slot_blocks;         /* paged: blocks of one slot's pool */
    bool has_state;              /* some stage keeps recurrent state per request */
    /* Memoised collectives of a pass by token count (serve_layout.c). */
    struct serve_comm_memo *comm;/* [stages × COMM_MEMO] */
};

/* Requests waiting for a seat: a ring (first come first served; preempted
 * requests go back to the front), or with the priority scheduler a heap on
 * (priority class, order). */
struct serve_wait {
    int *a;
    int cap, head, n;
    bool heap;
    int64_t *key;                /* heap: order of each entry */
    int64_t front;               /* next order for a request put at the front */
};

struct serve_replica {
    int pool, index;             /* its pool; its index in the pool */
    int stage0, slot0, chip0;    /* its first global stage and slot, its first chip */
    struct serve_wait wait;
    int outstanding;             /* routed here, not done */
    int n_idle;                  /* slots idle at stage 0 (wake stops at none) */
    int routed, completed;
    uint64_t preemptions;
    /* Paged KV: Σ over its slots' pools of `used` and `states`, kept as
     * they change (serve_kv.c) so that serve_kv_account is O(stages), not
     * O(slots): a wake that formed each of 80 idle slots summed all 80 for
     * each (the value fuzzer: 6.3 s under ASan for 25,701 events). */
    int64_t kv_used, kv_states;
};

/* A slot's KV block pool (paged) and its prefix cache entries (serve_kv.c). */
struct serve_pc_entry;
struct serve_kvpool {
    int64_t blocks;              /* capacity */
    int64_t used;                /* members' own blocks + cached prefix blocks */
    int64_t cached;              /* of used: in prefix-tree nodes */
    int states;                  /* requests holding recurrent state here */
    int64_t peak;
    double host_tokens;          /* swapped-out KV tokens on the host */
    struct serve_pc_entry *ent;  /* prefix cache: entries, open addressing on node */
    int n_ent, cap_ent;
    int *lru;                    /* heap of evictable entry indices (by last use) */
    int n_lru;
};

enum { EV_ARRIVAL, EV_STAGE_DONE, EV_HOP_DONE, EV_RETURN, EV_HORIZON, EV_KV_ARRIVE };
#define EV_SHIFT 3

/* A length limit that is 0 when unset. */
static inline int serve_dist_max(int max, int fallback) { return max > 0 ? max : fallback; }

/* Requests per pass and tokens per pass of the run (micro_batch or
 * max_num_seqs; token_budget or max_num_batched_tokens). */
static inline int serve_mb(const struct serve *s)
{
    return s->cfg.inference.max_num_seqs ? s->cfg.inference.max_num_seqs
                                         : s->cfg.inference.micro_batch;
}
static inline int serve_budget(const struct serve *s)
{
    return s->cfg.inference.max_num_batched_tokens ? s->cfg.inference.max_num_batched_tokens
                                                   : s->cfg.inference.token_budget;
}
/* The sequence a request has: prompt and the output so far. */
static inline int serve_seq(const struct serve_request *r) { return r->prompt + r->generated; }

/* serve_workload.c: the requests, drawn (Poisson or Gamma arrivals, length
 * distributions, shared prefixes, sessions, priority classes; one gsl_rng
 * seeded from run.seed) or read from a trace CSV. */
int serve_poisson_requests(struct serve *s, struct mp_error *err);
int serve_trace_requests(struct serve *s, struct mp_error *err);

/* serve_price.c: each priced stage's layers (s->layers, s->layer_off)
 * and the chip's calibration rows; a pass's time on a priced stage from the
 * kernels its shard runs (models/kernels.h kernels_serve_layer with the
 * stage's tp and ep), the routed experts of an EP shard, the hand-off
 * routes. MP_ERR_INPUT when the calibration table is bad or FP8 is asked of
 * a chip without an FP8 peak. */
int serve_price_layers(struct serve *s, struct mp_error *err);
mp_time serve_slot_time(const struct serve *s, int stage, const struct serve_slot *sl);
/* A pass of batch `b` on a priced stage; serve_batch_add puts one request's
 * part of a pass in `b` (serve_stage_time's, under the model's window). */
mp_time serve_batch_time(const struct serve *s, int stage, const struct kernel_batch *b);
void serve_batch_add(const struct serve *s, struct kernel_batch *b, double tokens, double past,
                     bool decode, bool emits);
/* Whether the model has an attention window (its sums under it are
 * kernel_batch_add's to make). */
bool serve_price_windowed(const struct serve *s);
/* serve_batch_add(s, b, 1, past, true, true) of a model without an
 * attention window: one decode token that samples, the sums
 * kernel_batch_add makes for it (models/kernels.c; its windowed ones stay
 * 0), inline for the former's loop. tests/check_serve_sched.c holds the
 * two equal. */
static inline void serve_batch_add_decode(struct kernel_batch *b, double past)
{
    b->tokens += 1;
    b->items++;
    b->emits += 1;
    b->decode += 1;
    b->decode_ctx += 1 * (past + 1);
}
/* Expert parallelism (the priced stage's ep > 1): one chip's routed
 * experts for `assignments` token copies routed to it, spread evenly over
 * its experts/ep experts (models/kernels.h kernels_serve_experts). */
mp_time serve_expert_time(const struct serve *s, int stage, double assignments);
/* Price as model.generate() runs: kernels launched one by one (no CUDA
 * graphs), no serving scheduler's host step (sim/serve/accel_gen.c). */
void serve_price_eager(struct serve *s);
/* No host step on any stage (a draft's shell: its passes run inside the
 * model's step, whose stage 0 already pays it). */
void serve_price_no_host(struct serve *s);
void serve_price_release(struct serve *s);
/* One line for the summary: which calibration rows priced the kernels. */
void serve_price_describe(const struct serve *s, char *buf, size_t size);
double serve_hop_bytes(const struct serve *s, int stage, double tokens);
void serve_build_hops(struct serve *s);

/* serve_layout.c: pools and replicas on the system's chips, the memory of
 * each stage, and a pass's whole time on a global stage (compute of the
 * lane's share, the group's collectives, swaps, the draft). */
int serve_layout_build(struct serve *s, struct mp_error *err);
void serve_layout_release(struct serve *s);
mp_time serve_pass_time(struct serve *s, int g, const struct serve_slot *sl);
/* The collectives of a pass of `tokens` tokens (`emits` sampled) on global
 * stage g: count of TP all-reduces and their bytes each, and the total time
 * of every collective of the pass. */
mp_time serve_comm_time(struct serve *s, int g, double tokens, double emits, int *allreduces,
                        double *ar_bytes);
static inline const struct serve_pool *serve_pool_of(const struct serve *s, int g)
{
    return &s->pool[s->rep[s->stage_rep[g]].pool];
}
/* The priced stage of global stage g, and its plan stage. */
int serve_priced_of(const struct serve *s, int g);
const struct plan_stage *serve_plan_stage(const struct serve *s, int g);

/* serve.c: what the fast loop, schedulers and pools share with the loop. */
void serve_launch(struct serve *s, int k, mp_time now);
/* Whether inference.concurrency requests are admitted: then no slot admits
 * another (admit, form_reserve), so an idle slot's form is a no-op, and
 * waking them is skipped (at the cap with 498 idle slots, every event formed
 * each for nothing: 43 s for 20,000 requests, 8 µs an event). */
static inline bool serve_at_cap(const struct serve *s)
{
    return s->cfg.inference.concurrency > 0 && s->inflight >= s->cfg.inference.concurrency;
}

/* Launch replica rep's idle slots while requests wait (serve_wake_idle
 * does the scan; the inline test saves the call at nearly every pass end,
 * when nobody waits or no slot is idle). */
void serve_wake_scan(struct serve *s, int rep, mp_time now);
static inline void serve_wake_idle(struct serve *s, int rep, mp_time now)
{
    if (s->rep[rep].wait.n > 0 && s->rep[rep].n_idle > 0 && !serve_at_cap(s))
        serve_wake_scan(s, rep, now);
}
void serve_emit(struct serve *s, int k, mp_time now);
void serve_route_arrival(struct serve *s, int id, mp_time now);
void serve_kv_log(struct serve *s, mp_time t);
/* An event of `kind` for `id` (a slot, or a request) at t. */
void serve_schedule(struct serve *s, mp_time t, int kind, int id);

/* serve.c: the waiting queue of a replica. */
void serve_wait_push(struct serve *s, int rep, int id, bool front);
int serve_wait_head(const struct serve *s, int rep); /* -1 when empty */
void serve_wait_pop(struct serve *s, int rep);
static inline int serve_wait_n(const struct serve *s, int rep) { return s->rep[rep].wait.n; }

/* serve_sched.c: the scheduler registry; form slot k's next pass. */
struct serve_scheduler {
    const char *name;
    const char *summary;       /* what it does and which real system it mirrors */
    void (*form)(struct serve *s, int k);
    bool priority;             /* waiting queue ordered by priority class */
};
const struct serve_scheduler *serve_scheduler_find(const char *name);
const struct serve_scheduler *serve_scheduler_of(const struct serve *s);
/* The former this run's passes take: the scheduler's, or the same passes
 * by a specialised one (vllm with reserved KV: form_reserve). */
void (*serve_scheduler_form(const struct serve *s))(struct serve *s, int k);
/* Whether that former is form_reserve (serve_fast.c repeats its steps for a
 * pass of one decoding member). */
bool serve_scheduler_reserve(const struct serve *s);

/* serve_router.c: the router registry; the replica of an arriving request. */
struct serve_router {
    const char *name;
    const char *summary;
    int (*pick)(struct serve *s, const struct serve_request *r, int pool);
};
const struct serve_router *serve_router_find(const char *name);

/* serve_kv.c: memory. Reserve: a request's need on global stage g, fits
 * and reserve over its replica's stages. Paged: each slot's pool; grow a
 * request to hold `tokens` (evicting cached prefixes, false when the pool
 * is short), release its blocks, the prefix cache. */
int serve_kv_setup(struct serve *s, struct mp_error *err);
void serve_kv_release_all(struct serve *s);
double serve_kv_need(const struct serve *s, const struct serve_request *r, int g);
bool serve_kv_fits(const struct serve *s, const struct serve_request *r);
void serve_kv_reserve(struct serve *s, struct serve_request *r, double sign);
bool serve_kv_grow(struct serve *s, int k, struct serve_request *r, int tokens);
void serve_kv_free(struct serve *s, int k, struct serve_request *r, bool done);
void serve_kv_trim(struct serve *s, int k, struct serve_request *r);
/* Prefix cache: tokens of r's prompt cached in slot k's pool (`take`:
 * hold them, r->shared); the nodes r computed this pass become cached. */
int serve_prefix_lookup(struct serve *s, int k, struct serve_request *r, bool take);
void serve_prefix_commit(struct serve *s, int k, struct serve_request *r);
/* The prefix tree: a node of `len` tokens after `parent` (-1: the root). */
int serve_prefix_node(struct serve *s, int parent, int len);
int serve_prefix_end(const struct serve *s, int node);
/* Paged: every stage's KV + state bytes in use of the replica of slot k,
 * from its pools (for the KV log and peaks). */
void serve_kv_account(struct serve *s, int rep);

/* serve_metrics.c: per-pass distributions as the run goes, and the fold
 * into the result at the end. */
void serve_hist_init(struct serve *s);
void serve_hist_release(struct serve *s);
void serve_hist_transfer(struct serve *s, mp_time t);
/* A distribution's count, sum and, once it is a histogram, the value
 * binned last and its bin's count: a value equal to the last one (a pass
 * of one request, one token, the same gap again) is counted here, inline,
 * without a call; any other goes through serve_hist_add. s->hist begins
 * with the heads of SERVE_HIST_ITL, _BATCH and _TOKENS. */
enum { SERVE_HIST_ITL, SERVE_HIST_BATCH, SERVE_HIST_TOKENS, SERVE_HIST_TRANSFER, SERVE_HISTS };
struct serve_vd_head {
    uint64_t count;
    double sum;
    double hot_x;
    double *hot_bin;    /* NULL until the distribution is a histogram */
};
void serve_hist_add(struct serve *s, int which, double x);
static inline void serve_hist_put(struct serve *s, int which, double x)
{
    struct serve_vd_head *h = &((struct serve_vd_head *)(void *)s->hist)[which];
    if (h->hot_bin && x == h->hot_x) {
        h->count++;
        h->sum += x;
        (*h->hot_bin)++;
        return;
    }
    serve_hist_add(s, which, x);
}
static inline void serve_hist_pass(struct serve *s, double requests, double tokens)
{
    serve_hist_put(s, SERVE_HIST_BATCH, requests);
    serve_hist_put(s, SERVE_HIST_TOKENS, tokens);
}
static inline void serve_hist_itl(struct serve *s, mp_time gap)
{
    serve_hist_put(s, SERVE_HIST_ITL, mp_seconds(gap));
}
void serve_fold(struct serve *s);

/* serve_disagg.c: a request whose prefill ended on a prefill replica: its
 * KV to a decode replica over the system's links; its arrival there. */
void serve_disagg_send(struct serve *s, struct serve_request *r, mp_time now);
void serve_disagg_arrive(struct serve *s, int id, mp_time now);

/* serve_spec.c: speculative decoding. */
int serve_spec_setup(struct serve *s, struct mp_error *err);
void serve_spec_release(struct serve *s);
/* Bytes per chip of the draft's weights (on stage 0), 0 without one. */
double serve_spec_weights(const struct serve *s);
/* Draft time of a pass with `items` speculating decode members holding
 * `ctx` tokens of context between them. */
mp_time serve_spec_draft_time(struct serve *s, double items, double ctx);
/* Tokens a speculating decode step gives request r (1 + accepted). */
int serve_spec_tokens(struct serve *s, struct serve_request *r);
static inline int serve_spec_k(const struct serve *s)
{
    return s->cfg.inference.speculative != SPEC_NONE ? s->cfg.inference.spec_tokens : 0;
}

/* serve_fast.c: the walk-at-a-time loop (serve.h, "Event granularity").
 * serve_fast_init leaves s->fast NULL when hand-off routes share links. */
bool serve_fast_applies(const struct serve *s);
/* Whether the fast loop will run: it applies, no hand-off routes share a
 * link (serve_fast_init's condition), and the run is not forced to
 * per-stage events or recorded. The work estimate counts by this. */
bool serve_fast_will_run(const struct serve *s);
void serve_fast_init(struct serve *s);
void serve_fast_release(struct serve_fast *f);
void serve_fast_walk(struct serve *s, int k, mp_time now);
void serve_fast_run(struct serve *s);
/* Two slot events the fast loop's keys could not order: the run must start
 * over with per-stage events. */
bool serve_fast_tied(const struct serve_fast *f);

#endif
