/* serve.c — serving on replicas of a pipeline of chips; see serve.h for the
 * model.
 *
 * Steps: check the [inference] keys, place the model (plan.c), lay the
 * replicas out on the system (serve_layout.c), price each stage's layers
 * once (serve_price.c), size the KV pools (serve_kv.c), generate or read the
 * requests (serve_workload.c), run the event loop (here, or the
 * walk-at-a-time loop of serve_fast.c), fold the request times into metrics
 * (serve_metrics.c). Each replica's scheduler forms its passes
 * (serve_sched.c); the router sends arrivals to replicas (serve_router.c). */
#include "serve_impl.h"

#include "sim/io/budget.h"

#include <assert.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks ------------------------------------------------------------- */

int serve_check_config(const struct config *cfg, struct mp_error *err)
{
    const char *w = cfg->path[0] ? cfg->path : "scenario";
    const struct config_inference *in = &cfg->inference;
    char at[CONFIG_STR + 96];
    int ctx = in->context_len;
    if (in->arrivals == ARRIVALS_TRACE && !strcmp(in->trace, "none"))
        return mp_fail(err, MP_ERR_INPUT, "%s: key inference.trace: inference.arrivals = trace "
                       "needs a CSV file of arrival_s,prompt_tokens,output_tokens", w);
    if (cfg->model.kind != MODEL_TRANSFORMER)
        return mp_fail(err, MP_ERR_INPUT, "%s: key model.kind: serving needs a model "
                       "(transformer), got synthetic", w);
    struct { const char *name; int dist, len, min, max, limit; const char *file; } d[2] = {
        { "prompt", in->prompt_dist, in->prompt_len, in->prompt_min, in->prompt_max, ctx - 1,
          in->prompt_file },
        { "output", in->output_dist, in->output_len, in->output_min, in->output_max, ctx - 1,
          in->output_file },
    };
    for (int i = 0; i < 2; i++) {
        int max = serve_dist_max(d[i].max, d[i].limit);
        if (d[i].max > d[i].limit)
            return mp_fail(err, MP_ERR_INPUT, "%s: key inference.%s_max = %d: at most "
                           "inference.context_len - 1 = %d", w, d[i].name, d[i].max, d[i].limit);
        if (d[i].dist != DIST_FIXED && d[i].dist != DIST_EMPIRICAL && d[i].min > max)
            return mp_fail(err, MP_ERR_INPUT, "%s: key inference.%s_min = %d is more than "
                           "inference.%s_max = %d", w, d[i].name, d[i].min, d[i].name, max);
        if (d[i].dist == DIST_FIXED && d[i].len > d[i].limit)
            return mp_fail(err, MP_ERR_INPUT, "%s: key inference.%s_len = %d: at most "
                           "inference.context_len - 1 = %d", w, d[i].name, d[i].len, d[i].limit);
        char key[48];
        snprintf(key, sizeof key, "inference.%s_file", d[i].name);
        if (d[i].dist == DIST_EMPIRICAL && !strcmp(d[i].file, "none"))
            return mp_fail(err, MP_ERR_INPUT, "%s: inference.%s_dist = empirical needs a CSV "
                           "of lengths (tokens[,weight] per row)",
                           config_key_where(cfg, key, at, sizeof at), d[i].name);
    }
    if (in->prompt_dist == DIST_FIXED && in->output_dist == DIST_FIXED &&
        (long long)in->prompt_len + in->output_len > ctx)
        return mp_fail(err, MP_ERR_INPUT, "%s: key inference.output_len: prompt_len + "
                       "output_len = %d + %d exceeds inference.context_len = %d", w,
                       in->prompt_len, in->output_len, ctx);
    /* Issue 19: layouts, registries, the features' own rules. */
    if (!serve_scheduler_find(in->scheduler)) {
        char list[256] = "";
        const char *sum;
        for (int i = 0; serve_scheduler_name(i, &sum); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     serve_scheduler_name(i, &sum));
        return mp_fail(err, MP_ERR_INPUT, "%s = '%s': unknown scheduler; expected one of %s",
                       config_key_where(cfg, "inference.scheduler", at, sizeof at),
                       in->scheduler, list);
    }
    if (!serve_router_find(in->router)) {
        char list[256] = "";
        const char *sum;
        for (int i = 0; serve_router_name(i, &sum); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                     serve_router_name(i, &sum));
        return mp_fail(err, MP_ERR_INPUT, "%s = '%s': unknown router; expected one of %s",
                       config_key_where(cfg, "inference.router", at, sizeof at), in->router,
                       list);
    }
    if (in->prefix_caching && in->kv_cache != KV_PAGED)
        return mp_fail(err, MP_ERR_INPUT, "%s: prefix caching keeps KV blocks, so it needs "
                       "inference.kv_cache = paged (got reserve)",
                       config_key_where(cfg, "inference.prefix_caching", at, sizeof at));
    if (in->prefix_tokens > 0 && in->prefix_tokens >= ctx)
        return mp_fail(err, MP_ERR_INPUT, "%s = %d: a shared prefix must leave room in "
                       "inference.context_len = %d", config_key_where(cfg,
                       "inference.prefix_tokens", at, sizeof at), in->prefix_tokens, ctx);
    if (in->speculative != SPEC_NONE && cfg->parallel.pp > 1)
        return mp_fail(err, MP_ERR_INPUT, "%s: speculative decoding runs the draft beside "
                       "stage 0 of one-stage replicas only (vLLM has no pipeline-parallel "
                       "speculation); got parallel.pp = %d",
                       config_key_where(cfg, "inference.speculative", at, sizeof at),
                       cfg->parallel.pp);
    if (in->speculative == SPEC_DRAFT && !strcmp(in->draft_model, "none"))
        return mp_fail(err, MP_ERR_INPUT, "%s: inference.speculative = draft needs "
                       "inference.draft_model (a preset or config.json)",
                       config_key_where(cfg, "inference.speculative", at, sizeof at));
    if (in->speculative != SPEC_NONE && in->disaggregate)
        return mp_fail(err, MP_ERR_INPUT, "%s: speculative decoding with a disaggregated "
                       "decode pool is not modelled yet",
                       config_key_where(cfg, "inference.speculative", at, sizeof at));
    if (in->preemption == PREEMPT_SWAP && in->kv_cache != KV_PAGED)
        return mp_fail(err, MP_ERR_INPUT, "%s: swapping moves KV blocks, so it needs "
                       "inference.kv_cache = paged",
                       config_key_where(cfg, "inference.preemption", at, sizeof at));
    if (in->turns > 1 && in->arrivals == ARRIVALS_TRACE)
        return mp_fail(err, MP_ERR_INPUT, "%s: a trace gives its own sessions (session,turn "
                       "columns); inference.turns is for drawn workloads",
                       config_key_where(cfg, "inference.turns", at, sizeof at));
    if (in->disaggregate && in->kv_cache != KV_PAGED)
        return mp_fail(err, MP_ERR_INPUT, "%s: disaggregated serving moves KV blocks between "
                       "pools, so it needs inference.kv_cache = paged",
                       config_key_where(cfg, "inference.disaggregate", at, sizeof at));
    return MP_OK;
}

/* ---- the event loop ----------------------------------------------------- */

void serve_schedule(struct serve *s, mp_time t, int kind, int id)
{
    /* Ties: the pipeline moves before new arrivals are seen. */
    eventq_schedule(&s->q, t, kind == EV_ARRIVAL ? 1 : kind == EV_HORIZON ? 2 : 0,
                    ((int64_t)id << EV_SHIFT) | kind);
}

void serve_kv_log(struct serve *s, mp_time t)
{
    /* Every chip of a stage's group holds its share (a TP shard, an
     * attention rank's requests): kv_used is one chip's. */
    double total = 0;
    if (s->n_pools == 1) { /* one width: the same products, no lookup per stage */
        int width = s->pool[0].width;
        for (int st = 0; st < s->stages; st++) total += s->kv_used[st] * width;
    } else {
        for (int st = 0; st < s->stages; st++) total += s->kv_used[st] * serve_pool_of(s, st)->width;
    }
    struct serve_result *r = &s->res;
    if (r->n_kv_log > 0 && r->kv_log[r->n_kv_log - 1].t == t) r->n_kv_log--;
    /* Paged pools change at every pass; keep only changes. (Reserved KV
     * changes only when requests come and go, and every such point is kept.) */
    if (s->cfg.inference.kv_cache == KV_PAGED && r->n_kv_log > 0 &&
        r->kv_log[r->n_kv_log - 1].bytes == total)
        return;
    MP_GROW(r->kv_log, r->cap_kv_log, r->n_kv_log + 1);
    r->kv_log[r->n_kv_log++] = (struct serve_kv_point){ t, total };
    if (total > r->kv_peak_bytes) r->kv_peak_bytes = total;
}

/* ---- waiting queues ------------------------------------------------------- */

static bool wait_less(const struct serve *s, const struct serve_wait *w, int i, int j)
{
    const struct serve_request *a = &s->req[w->a[i]], *b = &s->req[w->a[j]];
    if (a->prio != b->prio) return a->prio < b->prio;
    return w->key[i] < w->key[j];
}

static void wait_swap(struct serve_wait *w, int i, int j)
{
    int t = w->a[i];
    w->a[i] = w->a[j];
    w->a[j] = t;
    int64_t k = w->key[i];
    w->key[i] = w->key[j];
    w->key[j] = k;
}

void serve_wait_push(struct serve *s, int rep, int id, bool front)
{
    struct serve_wait *w = &s->rep[rep].wait;
    if (w->n == w->cap) { /* grow the ring, unrolled from head */
        int cap = w->cap ? 2 * w->cap : 64;
        int *a = mp_xmalloc((size_t)cap * sizeof *a);
        for (int i = 0; i < w->n; i++) a[i] = w->a[(w->head + i) % w->cap];
        free(w->a);
        w->a = a;
        if (w->heap) {
            w->key = realloc(w->key, (size_t)cap * sizeof *w->key);
            if (!w->key) abort();
        }
        w->cap = cap;
        w->head = 0;
    }
    if (w->heap) {
        /* Preempted requests keep their place by going ahead of everyone of
         * their class; new ones queue by arrival. */
        int i = w->n++;
        w->a[i] = id;
        w->key[i] = front ? --w->front : (int64_t)s->req[id].arrival;
        while (i > 0 && wait_less(s, w, i, (i - 1) / 2)) {
            wait_swap(w, i, (i - 1) / 2);
            i = (i - 1) / 2;
        }
    } else if (front) {
        w->head = (w->head + w->cap - 1) % w->cap;
        w->a[w->head] = id;
        w->n++;
    } else {
        w->a[(w->head + w->n) % w->cap] = id;
        w->n++;
    }
    if (w->n > s->res.max_waiting) {
        int total = 0;
        for (int r = 0; r < s->replicas; r++) total += s->rep[r].wait.n;
        if (total > s->res.max_waiting) s->res.max_waiting = total;
    }
}

int serve_wait_head(const struct serve *s, int rep)
{
    const struct serve_wait *w = &s->rep[rep].wait;
    if (w->n == 0) return -1;
    return w->heap ? w->a[0] : w->a[w->head];
}

void serve_wait_pop(struct serve *s, int rep)
{
    struct serve_wait *w = &s->rep[rep].wait;
    if (!w->heap) {
        w->head = (w->head + 1) % w->cap;
        w->n--;
        return;
    }
    w->n--;
    if (w->n == 0) return;
    w->a[0] = w->a[w->n];
    w->key[0] = w->key[w->n];
    for (int i = 0;;) {
        int c = 2 * i + 1;
        if (c >= w->n) break;
        if (c + 1 < w->n && wait_less(s, w, c + 1, c)) c++;
        if (!wait_less(s, w, c, i)) break;
        wait_swap(w, i, c);
        i = c;
    }
}

/* ---- passes ----------------------------------------------------------------- */

static int slots_per_rep_max(const struct serve *s)
{
    int k = 1;
    for (int p = 0; p < s->n_pools; p++)
        if (s->pool[p].slots > k) k = s->pool[p].slots;
    return k;
}

/* Slot k's pass starts on global stage g over [start, end]. At its replica's
 * stage 0 it is a new pass: who is in it, for the timeline's label and kind. */
static void record_pass(struct serve *s, int g, int k, mp_time start, mp_time end);

static void start_stage(struct serve *s, int g, mp_time now)
{
    int K = slots_per_rep_max(s);
    if (s->stage_busy[g] || s->sq_n[g] == 0) return;
    int k = s->stage_queue[(size_t)g * K + s->sq_head[g]];
    s->sq_head[g] = (s->sq_head[g] + 1) % K;
    s->sq_n[g]--;
    struct serve_slot *sl = &s->slot[k];
    mp_time d = serve_pass_time(s, g, sl);
    struct serve_stage_report *rep = &s->res.stage[g];
    if (rep->first_start < 0) rep->first_start = now;
    rep->busy += d;
    rep->passes++;
    s->stage_busy[g] = true;
    if (s->rec) record_pass(s, g, k, now, now + d);
    serve_schedule(s, now + d, EV_STAGE_DONE, k);
}

static void enqueue(struct serve *s, int g, int k, mp_time now)
{
    int K = slots_per_rep_max(s);
    s->slot[k].stage = g;
    int at = (s->sq_head[g] + s->sq_n[g]) % K;
    s->stage_queue[(size_t)g * K + at] = k;
    s->sq_n[g]++;
    start_stage(s, g, now);
}

/* Form slot k at stage 0; send it in, or leave it idle when it has nothing. */
void serve_launch(struct serve *s, int k, mp_time now)
{
    int before = s->res.admitted;
    struct serve_replica *R = &s->rep[s->slot_rep[k]];
    s->form(s, k); /* looked up once, in run_mode */
    struct serve_slot *sl = &s->slot[k];
    if (s->cfg.inference.kv_cache == KV_PAGED) {
        serve_kv_account(s, s->slot_rep[k]);
        serve_kv_log(s, now);
    } else if (s->res.admitted != before) {
        serve_kv_log(s, now);
    }
    bool was = sl->active;
    sl->active = sl->b.tokens > 0;
    R->n_idle += (int)was - (int)sl->active;
    if (sl->active) serve_hist_pass(s, sl->b.items, sl->b.tokens);
    if (s->fast) {
        /* Its event, if any, was taken off when it was handled. */
        if (sl->active) serve_fast_walk(s, k, now);
    } else if (sl->active) {
        enqueue(s, R->stage0, k, now);
    }
}

void serve_wake_scan(struct serve *s, int rep, mp_time now)
{
    /* n_idle only ends the scan early: the slots launched, and their order,
     * are those of the full scan. */
    struct serve_replica *R = &s->rep[rep];
    int K = s->pool[R->pool].slots;
    for (int k = R->slot0; k < R->slot0 + K && R->wait.n > 0 && R->n_idle > 0 && !serve_at_cap(s);
         k++)
        if (!s->slot[k].active) serve_launch(s, k, now);
}

/* A request has arrived (or its KV has, in a decode pool): route it. */
void serve_route_arrival(struct serve *s, int id, mp_time now)
{
    struct serve_request *r = &s->req[id];
    const struct serve_router *rt = serve_router_find(s->cfg.inference.router);
    int pool = 0;
    int idx = s->pool[pool].replicas == 1 ? 0 : rt->pick(s, r, pool);
    int rep = s->pool[pool].rep0 + idx;
    r->replica = rep;
    s->rep[rep].outstanding++;
    s->rep[rep].routed++;
    s->route_seq++;
    serve_wait_push(s, rep, id, false);
    serve_wake_idle(s, rep, now);
}

/* Request r is done: its memory goes, its session's next turn is due. */
static void finish(struct serve *s, int k, struct serve_request *r, mp_time now)
{
    r->done = now;
    s->res.makespan = now;
    if (s->cfg.inference.kv_cache == KV_PAGED) serve_kv_free(s, k, r, true);
    else serve_kv_reserve(s, r, -1);
    r->slot = -1;
    s->inflight--;
    s->res.completed++;
    s->rep[r->replica].outstanding--;
    s->rep[r->replica].completed++;
    if (r->next >= 0) {
        struct serve_request *n = &s->req[r->next];
        double think = 0;
        if (s->cfg.inference.think_time > 0)
            think = gsl_ran_exponential(s->rng, (double)s->cfg.inference.think_time);
        n->arrival = mp_time_add(now, mp_time_from_ps(think));
        n->pending = false;
        serve_schedule(s, n->arrival, EV_ARRIVAL, r->next);
    }
}

/* serve_emit with one pool, no speculation and no prefix cache (the wafer
 * case's every pass, and plain paged replicas'): nothing to commit, one
 * token a step, no prefill pool to leave for. The same figures in the same
 * order. */
static void emit_plain(struct serve *s, int k, mp_time now)
{
    struct serve_slot *sl = &s->slot[k];
    int *mem = &s->members[(size_t)k * serve_mb(s)];
    bool freed = false;
    int kept = 0;
    for (int i = 0; i < sl->n; i++) {
        struct serve_request *r = &s->req[mem[i]];
        if (r->chunk > 0) {
            int seq = serve_seq(r);
            bool decode = r->generated > 0 && r->kv + 1 == seq && r->chunk == 1;
            if (!decode) {
                if (r->preempted == 0) s->res.prompt_tokens += r->chunk;
                else s->res.recomputed_tokens += r->chunk;
            }
            r->kv += r->chunk;
            if (r->kv == seq) {
                int n = 1;
                if (n > r->output - r->generated) n = r->output - r->generated;
                if (r->generated == 0) r->first_token = now;
                else if (r->last_emit >= 0) serve_hist_itl(s, now - r->last_emit);
                r->last_emit = now;
                r->generated += n;
                s->res.output_tokens += n;
            }
            r->chunk = 0;
        }
        if (r->generated == r->output) {
            finish(s, k, r, now);
            freed = true;
        } else {
            mem[kept++] = mem[i];
        }
    }
    sl->n = kept;
    if (freed) {
        if (s->cfg.inference.kv_cache == KV_PAGED) serve_kv_account(s, s->slot_rep[k]);
        serve_kv_log(s, now);
    }
}

/* The pass of slot k left the last stage: tokens out, finished requests go. */
void serve_emit(struct serve *s, int k, mp_time now)
{
    if (s->emit_plain) { /* run_mode's test, taken once */
        emit_plain(s, k, now);
        return;
    }
    struct serve_slot *sl = &s->slot[k];
    int *mem = &s->members[(size_t)k * serve_mb(s)];
    const struct serve_pool *P = &s->pool[s->rep[s->slot_rep[k]].pool];
    bool prefill_pool = s->n_pools == 2 && P == &s->pool[0];
    bool paged = s->cfg.inference.kv_cache == KV_PAGED;
    bool freed = false;
    int kept = 0;
    for (int i = 0; i < sl->n; i++) {
        struct serve_request *r = &s->req[mem[i]];
        bool left = false;
        if (r->chunk > 0) {
            int seq = serve_seq(r);
            bool decode = r->generated > 0 && r->kv + 1 == seq && r->chunk == 1;
            if (!decode) {
                /* Prompt tokens the first time through, recomputed ones after a
                 * preemption. */
                if (r->preempted == 0) s->res.prompt_tokens += r->chunk;
                else s->res.recomputed_tokens += r->chunk;
            }
            r->kv += r->chunk;
            if (paged && s->tree) serve_prefix_commit(s, k, r);
            if (r->kv == seq) {
                int n = 1, drawn = 1;
                if (decode && serve_spec_k(s) > 0) n = drawn = serve_spec_tokens(s, r);
                /* The last step may accept more than the request has left. */
                if (n > r->output - r->generated) n = r->output - r->generated;
                if (r->generated == 0) {
                    r->first_token = now;
                } else if (r->last_emit >= 0) {
                    serve_hist_itl(s, now - r->last_emit);
                }
                r->last_emit = now;
                r->generated += n;
                s->res.output_tokens += n;
                if (decode && serve_spec_k(s) > 0) {
                    r->spec_steps++;
                    r->spec_tokens += n;
                    s->res.spec_steps++;
                    s->res.spec_tokens += drawn; /* the acceptance's figure */
                    r->kv = serve_seq(r) - 1;
                    if (paged) serve_kv_trim(s, k, r);
                }
                if (prefill_pool && r->generated < r->output) {
                    /* Prefill done: the KV goes to a decode replica. */
                    r->chunk = 0;
                    serve_disagg_send(s, r, now);
                    left = true;
                }
            }
            r->chunk = 0;
        }
        if (!left && r->generated == r->output) {
            finish(s, k, r, now);
            freed = true;
        } else if (!left) {
            mem[kept++] = mem[i]; /* keep arrival order: it decides who prefills first */
        } else {
            freed = true;
        }
    }
    sl->n = kept;
    if (freed) {
        if (paged) serve_kv_account(s, s->slot_rep[k]);
        serve_kv_log(s, now);
    }
}

/* ---- recording (serve.h, struct serve_record) ------------------------------ */

static struct serve_stage_rec *rec_stage(struct serve *s, int g)
{
    struct serve_record *rc = s->rec;
    if (!rc->stage) {
        rc->stage = mp_xcalloc((size_t)s->stages, sizeof *rc->stage);
        rc->slot_pass = mp_xcalloc((size_t)s->slots, sizeof *rc->slot_pass);
    }
    return &rc->stage[g];
}

/* Append the span [a, b] of pass `id` to one of a stage record's three
 * parallel arrays (serve_stage_rec: copies or hand-offs), doubling them. */
static void span_push(mp_time **start, mp_time **end, uint32_t **pass, size_t *n, size_t *cap,
                      mp_time a, mp_time b, uint32_t id)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        *start = mp_xrealloc(*start, c * sizeof **start);
        *end = mp_xrealloc(*end, c * sizeof **end);
        *pass = mp_xrealloc(*pass, c * sizeof **pass);
        *cap = c;
    }
    (*start)[*n] = a;
    (*end)[*n] = b;
    (*pass)[(*n)++] = id;
}

static void record_pass(struct serve *s, int g, int k, mp_time start, mp_time end)
{
    struct serve_record *rc = s->rec;
    struct serve_stage_rec *sr = rec_stage(s, g);
    const struct serve_replica *R = &s->rep[s->slot_rep[k]];
    if (g == R->stage0) {
        const struct serve_slot *sl = &s->slot[k];
        struct serve_pass_rec p = { .start = start, .end = end, .slot = k,
                                    .emits = (int)sl->b.emits, .tokens = sl->b.tokens };
        const int *mem = &s->members[(size_t)k * serve_mb(s)];
        for (int i = 0; i < sl->n; i++) {
            const struct serve_request *r = &s->req[mem[i]];
            if (r->chunk == 0) continue;
            if (r->kv + r->chunk < serve_seq(r) || r->generated == 0) {
                p.prefill++;
                p.prefill_tokens += r->chunk;
            } else {
                p.decode++;
            }
        }
        assert(rc->n_pass < UINT32_MAX);
        MP_GROW(rc->pass, rc->cap_pass, rc->n_pass + 1);
        rc->slot_pass[k] = (uint32_t)rc->n_pass;
        rc->pass[rc->n_pass++] = p;
    }
    uint32_t id = rc->slot_pass[k];
    if (g == R->stage0 + s->pool[R->pool].stages - 1) rc->pass[id].end = end;
    span_push(&sr->start, &sr->end, &sr->pass, &sr->n, &sr->cap, start, end, id);
    rc->n_copies++;
}

static void record_hop(struct serve *s, mp_time start, mp_time end, int g, int slot)
{
    struct serve_stage_rec *sr = rec_stage(s, g);
    span_push(&sr->hop_start, &sr->hop_end, &sr->hop_pass, &sr->n_hop, &sr->cap_hop, start, end,
              s->rec->slot_pass[slot]);
    s->rec->n_hops++;
}

static void handle(void *ctx, const struct eventq_event *ev)
{
    struct serve *s = ctx;
    int kind = (int)(ev->data & ((1 << EV_SHIFT) - 1)), id = (int)(ev->data >> EV_SHIFT);
    mp_time now = ev->time;
    if (now > SERVE_CLOCK_MAX) {
        s->clock_overflow = true;
        eventq_stop(&s->q);
        return;
    }
    s->now = now;
    bool last = false, multi = false;
    int g = -1;
    if (kind == EV_STAGE_DONE) {
        g = s->slot[id].stage;
        const struct serve_replica *R = &s->rep[s->stage_rep[g]];
        int S = s->pool[R->pool].stages;
        last = g + 1 == R->stage0 + S;
        multi = S > 1;
    }
    /* Counted as the walk-at-a-time loop counts (serve.h): the same figure
     * whichever loop runs. */
    if (kind != EV_HOP_DONE && (kind != EV_STAGE_DONE || last)) s->res.events++;
    switch (kind) {
    case EV_ARRIVAL:
        serve_route_arrival(s, id, now);
        break;
    case EV_KV_ARRIVE:
        serve_disagg_arrive(s, id, now);
        break;
    case EV_STAGE_DONE: {
        s->stage_busy[g] = false;
        s->res.stage[g].last_end = now;
        start_stage(s, g, now);
        if (!last) {
            /* Links are held for the serialisation; latency overlaps. */
            mp_time start = now;
            for (int i = s->hop_route_off[g]; i < s->hop_route_off[g + 1]; i++)
                if (s->link_free[s->hop_route[i]] > start) start = s->link_free[s->hop_route[i]];
            mp_time ser = serve_hop_time(s, g, (int)s->slot[id].b.tokens) - s->hop[g];
            for (int i = s->hop_route_off[g]; i < s->hop_route_off[g + 1]; i++)
                s->link_free[s->hop_route[i]] = start + ser;
            s->slot[id].stage = g + 1;
            serve_schedule(s, start + ser + s->hop[g], EV_HOP_DONE, id);
            if (s->rec) record_hop(s, start, start + ser + s->hop[g], g, id);
        } else {
            int emits = (int)s->slot[id].b.emits;
            serve_emit(s, id, now);
            mp_time back = serve_hop_time(s, g, emits > 0 ? emits : 1);
            serve_schedule(s, now + back, EV_RETURN, id);
            if (s->rec && multi) record_hop(s, now, now + back, g, id);
            /* memory may have been freed */
            serve_wake_idle(s, s->slot_rep[id], now);
        }
        break;
    }
    case EV_HOP_DONE:
        enqueue(s, s->slot[id].stage, id, now);
        break;
    case EV_RETURN:
        serve_launch(s, id, now);
        break;
    case EV_HORIZON:
        if (s->res.completed < s->n_req) s->res.makespan = now; /* cut short */
        eventq_stop(&s->q);
        break;
    }
}

/* ---- the front door ----------------------------------------------------- */

/* The longest walk any pass can take down the chain: every stage at a full
 * token budget, every request at the full context, plus every hop; at most
 * SERVE_WALK_MAX (serve_impl.h), or the inputs behind it are named. Stage
 * and hop times grow with tokens, pairs and context, so this bounds them. */
static int check_walk(const struct serve *s, struct mp_error *err)
{
    const struct config_inference *in = &s->cfg.inference;
    /* vLLM's names, when given, are the ones the run uses (serve_mb). */
    double mb = serve_mb(s), T = serve_budget(s) > mb ? serve_budget(s) : mb;
    double ctx = in->context_len;
    /* An upper bound of any pass: every token a prompt token after a full
     * context, every member also decoding one at a full context. */
    struct kernel_batch b = { .tokens = T, .emits = mb, .items = mb, .decode = mb,
                              .decode_ctx = mb * ctx, .prefill_tokens = T,
                              .prefill_pairs = T * ctx, .prefill_items = mb,
                              .decode_ctx_win = mb * ctx, .prefill_pairs_win = T * ctx };
    mp_time walk = 0;
    for (int j = 0; j < s->n_priced; j++) walk = mp_time_add(walk, serve_batch_time(s, j, &b));
    /* Every hop of every replica: more than one walk takes, an upper bound. */
    for (int g = 0; g < s->stages; g++) walk = mp_time_add(walk, serve_hop_time(s, g, (int)T));
    if (walk <= SERVE_WALK_MAX) return MP_OK;
    char chip[512], sys[512];
    chip_describe(&s->pr.chip, chip, sizeof chip);
    system_describe(&s->sys, sys, sizeof sys);
    const char *budget_key = in->max_num_batched_tokens ? "max_num_batched_tokens" : "token_budget";
    return mp_fail(err, MP_ERR_INPUT, "%s: one pass down the %d stages at inference.%s = %d "
                   "tokens and inference.context_len = %d could take 2^60 ps (13 days) or "
                   "more, past what mpsim counts; it comes from %s and %s: expected a faster "
                   "chip or links, or a smaller %s or context_len",
                   s->cfg.path[0] ? s->cfg.path : "scenario", s->stages, budget_key,
                   serve_budget(s), in->context_len, chip, sys, budget_key);
}

/* The work of serving `n` requests of about `prompt` and `output` tokens
 * (issue 16): a walk per microbatch pass (a prefill chunk or a decode step),
 * two events each in the walk-at-a-time loop (serve_fast.c), two per stage
 * (the stage's pass and its hand-off) in the per-stage loop that runs
 * otherwise (hand-offs sharing a link, or the rerun after the fast loop met
 * a tie: serve_fast_will_run), and a pass record per stage when a timeline
 * is kept; the requests themselves are held. Checked before the requests
 * are drawn, and again once a trace is read or sessions are drawn. */
static int check_work(const struct serve *s, double n, double prompt, double output,
                      struct mp_error *err)
{
    const struct config_inference *in = &s->cfg.inference;
    double chunks = in->chunked_prefill ? ceil(prompt / serve_budget(s)) : 1;
    /* An upper bound: every pass carries at least one request's token, and
     * how many it carries depends on arrivals and slots (one slot with slow
     * arrivals decodes one request at a time whatever micro_batch says). */
    double walks = n * (output + (chunks < 1 ? 1 : chunks));
    /* Each slot's member list has room for a whole microbatch (serve_mb),
     * however few the requests, and each stage a queue of every slot. */
    double members = serve_mb(s), slots = s->slots;
    struct work_estimate w = { .events = n + 2 * walks, .held = n,
                               .bytes = 4 * slots * (members + s->stages) };
    /* Measured: kimi-k3 on 93 stages with a paged cache (the per-stage
     * loop), 100 requests of 128 output tokens: 25,900 events estimated as
     * walks, 1.57 G instructions run — 2.4 M events of the per-stage loop. */
    if (!s->rec && !serve_fast_will_run(s)) w.events = n + 2 * walks * s->stages;
    if (s->rec) {
        /* A pass and a hand-off recorded per stage, and as many rows out. */
        w.held += 2 * walks * s->stages;
        w.events += 2 * walks * s->stages;
    }
    char what[CONFIG_STR + 128];
    snprintf(what, sizeof what, "%s: serving %.0f requests of about %.0f + %.0f tokens (up to "
             "%.3g passes)", s->cfg.path[0] ? s->cfg.path : "scenario", n, prompt, output, walks);
    if (!s->force && s->budget_events > 0 &&
        w.events + w.bytes / WORK_BYTES_PER_EVENT > s->budget_events)
        return mp_fail(err, MP_ERR_INPUT, "%s: %.3g events, past this run's budget of %.0f", what,
                       w.events, s->budget_events);
    return work_check(&w, what, "lower inference.requests", s->force, err);
}

/* A length's mean under its distribution (serve_workload.c draws them). */
static double mean_len(int dist, int len, int min, int max, double sigma)
{
    if (dist == DIST_FIXED) return len; /* min and max bound the other two only */
    double v = dist == DIST_UNIFORM ? (min + (double)max) / 2 : len * exp(sigma * sigma / 2);
    return v > max ? max : v < min ? min : v;
}

static int setup(struct serve *s, struct mp_error *err)
{
    const struct config *c = &s->cfg;
    int rc = serve_check_config(c, err);
    if (rc) return rc;
    if ((rc = chip_catalog_load_default(&s->catalog, err))) return rc;
    if ((rc = serve_layout_build(s, err))) return rc;
    if ((rc = serve_price_layers(s, err))) return rc;
    serve_build_hops(s);
    if ((rc = check_walk(s, err))) return rc;
    if ((rc = serve_spec_setup(s, err))) return rc;
    if ((rc = serve_kv_setup(s, err))) return rc;
    struct serve_result *r = &s->res;
    r->stages = s->stages;
    r->slots = s->pool[0].slots;
    r->micro_batch = serve_mb(s);
    r->replicas = s->replicas;
    r->pools = s->n_pools;
    const struct config_inference *in = &c->inference;
    int ctx = in->context_len;
    /* A shared system prompt comes before every drawn one (serve_workload.c:
     * prompt = prefix_tokens + the drawn length), so its tokens are prefill
     * passes too (a prefix of 921 tokens before prompts of 4 at 2 tokens a
     * pass was estimated at 2 chunks a request and ran 463: the value
     * fuzzer). Counted whole, cached or not: the estimate is an upper bound. */
    double prompt_est = mean_len(in->prompt_dist, in->prompt_len, in->prompt_min,
                                 serve_dist_max(in->prompt_max, ctx - 1), in->prompt_sigma) +
                        (in->prefix_tokens > 0 ? in->prefix_tokens : 0);
    if (prompt_est > ctx - 1) prompt_est = ctx - 1;
    if (in->arrivals != ARRIVALS_TRACE &&
        (rc = check_work(s, in->requests, prompt_est,
                         mean_len(in->output_dist, in->output_len, in->output_min,
                                  serve_dist_max(in->output_max, ctx - 1), in->output_sigma),
                         err)))
        return rc;
    rc = c->inference.arrivals == ARRIVALS_TRACE ? serve_trace_requests(s, err)
                                                 : serve_poisson_requests(s, err);
    if (rc) return rc;
    /* A trace's lengths, and a session's later turns (their prompts carry
     * the history, up to the context), are known once drawn or read. */
    if (in->arrivals == ARRIVALS_TRACE || in->turns > 1) {
        double prompt = 0, output = 0;
        for (int i = 0; i < s->n_req; i++) prompt += s->req[i].prompt, output += s->req[i].output;
        if ((rc = check_work(s, s->n_req, prompt / s->n_req, output / s->n_req, err))) return rc;
    }
    r->requests = s->n_req;
    /* A request that cannot fit even alone would wait for ever. */
    if (c->inference.kv_cache == KV_RESERVE)
        for (int i = 0; i < s->n_req; i++)
            for (int st = 0; st < s->pool[0].stages; st++) {
                /* serve_kv_need; the first replica's stages are its plan's. */
                const struct plan_stage *ps = &s->pool[0].pr->plan.stage[st];
                double need = plan_stage_request_bytes(ps, (double)s->req[i].prompt + s->req[i].output);
                if (need > r->stage[st].free_bytes)
                    return mp_fail(err, MP_ERR_INFEASIBLE,
                                   "request %d (%d + %d tokens) needs %.2f GB of KV/state on "
                                   "stage %d, which has %.2f GB free after its weights", i,
                                   s->req[i].prompt, s->req[i].output, need / 1e9, st,
                                   r->stage[st].free_bytes / 1e9);
            }
    else
        for (int i = 0; i < s->n_req; i++) {
            const struct serve_request *q = &s->req[i];
            for (int p = 0; p < s->n_pools; p++) {
                const struct serve_pool *P = &s->pool[p];
                int64_t need = (q->prompt + q->output + c->inference.block_size - 1) /
                               c->inference.block_size;
                if (need > P->slot_blocks)
                    return mp_fail(err, MP_ERR_INFEASIBLE,
                                   "request %d (%d + %d tokens) needs %lld KV blocks of %d "
                                   "tokens, more than a%s slot's pool holds (%lld blocks)", i,
                                   q->prompt, q->output, (long long)need,
                                   c->inference.block_size,
                                   s->n_pools == 2 ? (p ? " decode" : " prefill") : "",
                                   (long long)P->slot_blocks);
            }
        }
    return MP_OK;
}

int serve_run(struct serve *s, const struct config *cfg, struct mp_error *err)
{
    return serve_run_recorded(s, cfg, false, err);
}

/* One run; `events` forces one event per stage pass and hop. */
static int run_mode(struct serve *s, const struct config *cfg, bool record, bool events,
                    const struct serve_options *o, struct mp_error *err)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->force = o->force;
    s->budget_events = o->budget_events;
    s->per_stage = events;
    if (record) s->rec = mp_xcalloc(1, sizeof *s->rec);
    gsl_set_error_handler_off();
    int rc = config_check(&s->cfg, err);
    if (!rc) rc = setup(s, err);
    if (rc) return rc;

    int S = s->stages, K = s->slots, mb = serve_mb(s), Kr = slots_per_rep_max(s);
    eventq_init(&s->q);
    s->slot = mp_xcalloc((size_t)K, sizeof *s->slot);
    s->members = mp_xcalloc((size_t)K * mb, sizeof *s->members);
    s->stage_queue = mp_xcalloc((size_t)S * Kr, sizeof *s->stage_queue);
    s->sq_head = mp_xcalloc((size_t)S, sizeof *s->sq_head);
    s->sq_n = mp_xcalloc((size_t)S, sizeof *s->sq_n);
    s->stage_busy = mp_xcalloc((size_t)S, sizeof *s->stage_busy);
    s->link_free = mp_xcalloc((size_t)s->sys.n_links + 1, sizeof *s->link_free);
    s->kv_used = mp_xcalloc((size_t)S, sizeof *s->kv_used);
    s->sched = serve_scheduler_of(s);
    s->form = serve_scheduler_form(s);
    s->windowed = serve_price_windowed(s);
    s->emit_plain = s->n_pools == 1 && serve_spec_k(s) == 0 &&
                    !(s->cfg.inference.kv_cache == KV_PAGED && s->tree);
    for (int r = 0; r < s->replicas; r++) {
        s->rep[r].n_idle = s->pool[s->rep[r].pool].slots;
        s->rep[r].wait.heap = serve_scheduler_of(s)->priority;
    }
    s->rng = gsl_rng_alloc(gsl_rng_mt19937);
    /* Draws during serving come from their own stream of the run's seed,
     * after the workload's, so turning a feature on keeps the workload. */
    gsl_rng_set(s->rng, (unsigned long)s->cfg.run.seed ^ 0x5eed5e17u);
    serve_hist_init(s);
    serve_kv_log(s, 0);
    /* A timeline lists every pass and hop in the order the per-stage loop
     * meets them, so recording runs that loop. */
    if (!record && !events && serve_fast_applies(s)) serve_fast_init(s);
    if (s->fast) {
        serve_fast_run(s);
        if (!s->clock_overflow && serve_fast_tied(s->fast))
            return MP_OK; /* serve_run_recorded starts over */
    } else {
        /* All arrivals go in up front: the heap holds them, and the loop
         * stays free of allocation. Later turns of a session arrive when
         * the turn before them is done. */
        for (int i = 0; i < s->n_req; i++)
            if (!s->req[i].pending) serve_schedule(s, s->req[i].arrival, EV_ARRIVAL, i);
        if (s->cfg.inference.horizon > 0) serve_schedule(s, s->cfg.inference.horizon, EV_HORIZON, 0);
        eventq_run(&s->q, handle, s);
    }
    if (s->clock_overflow) {
        char chip[512];
        chip_describe(&s->pr.chip, chip, sizeof chip);
        return mp_fail(err, MP_ERR_INPUT, "%s: the serving run's simulated clock passed 2^61 ps "
                       "(27 days) after %.0f s with %d of %d requests done, past what mpsim "
                       "counts: expected fewer, shorter or more frequent requests (inference.requests, "
                       "output_len, rate) or a faster %s", s->cfg.path[0] ? s->cfg.path
                       : "scenario", mp_seconds(s->now), s->res.completed, s->n_req, chip);
    }
    serve_fold(s);
    return MP_OK;
}

int serve_run_recorded(struct serve *s, const struct config *cfg, bool record,
                       struct mp_error *err)
{
    struct serve_options o = { .record = record };
    return serve_run_opts(s, cfg, &o, err);
}

int serve_run_opts(struct serve *s, const struct config *cfg, const struct serve_options *o,
                   struct mp_error *err)
{
    double t0 = mp_wall_seconds();
    bool record = o->record;
    int rc = run_mode(s, cfg, record, false, o, err);
    if (!rc && s->fast && serve_fast_tied(s->fast)) {
        serve_release(s);
        rc = run_mode(s, cfg, record, true, o, err);
    }
    if (!rc) s->res.sim_wall_s = mp_wall_seconds() - t0;
    return rc;
}

int serve_chips(const struct serve *s)
{
    int n = 0;
    for (int p = 0; p < s->n_pools; p++)
        n += s->pool[p].replicas * s->pool[p].stages * s->pool[p].width;
    return n;
}

void serve_release(struct serve *s)
{
    serve_spec_release(s);
    serve_kv_release_all(s);
    serve_hist_release(s);
    serve_layout_release(s);
    if (s->has_plan) plan_run_release(&s->pr);
    if (s->has_sys) system_release(&s->sys);
    chip_catalog_release(&s->catalog);
    if (s->slot) eventq_release(&s->q);
    if (s->rng) gsl_rng_free(s->rng);
    serve_price_release(s);
    free(s->stage_chip);
    free(s->layers);
    free(s->layer_off);
    free(s->priced);
    free(s->hop);
    free(s->hop_bw);
    free(s->hop_route_off);
    free(s->hop_route);
    free(s->req);
    free(s->slot);
    free(s->members);
    free(s->stage_queue);
    free(s->sq_head);
    free(s->sq_n);
    free(s->stage_busy);
    free(s->link_free);
    free(s->kv_used);
    serve_fast_release(s->fast);
    free(s->res.kv_log);
    free(s->res.stage);
    free(s->res.rep);
    if (s->rec) {
        for (int st = 0; s->rec->stage && st < s->stages; st++) {
            struct serve_stage_rec *sr = &s->rec->stage[st];
            free(sr->start);
            free(sr->end);
            free(sr->pass);
            free(sr->hop_start);
            free(sr->hop_end);
            free(sr->hop_pass);
        }
        free(s->rec->stage);
        free(s->rec->slot_pass);
        free(s->rec->pass);
        free(s->rec->kv);
        free(s->rec);
    }
    memset(s, 0, sizeof *s);
}
