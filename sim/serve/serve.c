/* serve.c — serving through a pipeline of chips; see serve.h for the model.
 *
 * Steps: check the [inference] keys, place the model (plan.c), load the
 * system for that many chips, price each stage's layers once
 * (serve_price.c), generate or read the requests (serve_workload.c), run the
 * event loop (here, or the walk-at-a-time loop of serve_fast.c), fold the
 * request times into metrics (quantiles with gsl_sort + gsl_stats). */
#include "serve_impl.h"

#include "sim/io/budget.h"

#include <assert.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks ------------------------------------------------------------- */

int serve_check_config(const struct config *cfg, struct mp_error *err)
{
    const char *w = cfg->path[0] ? cfg->path : "scenario";
    const struct config_inference *in = &cfg->inference;
    int ctx = in->context_len;
    if (in->arrivals == ARRIVALS_TRACE && !strcmp(in->trace, "none"))
        return mp_fail(err, MP_ERR_INPUT, "%s: key inference.trace: inference.arrivals = trace "
                       "needs a CSV file of arrival_s,prompt_tokens,output_tokens", w);
    if (cfg->parallel.tp != 1)
        return mp_fail(err, MP_ERR_INPUT, "%s: key parallel.tp = %d: serving simulates whole "
                       "layers per chip only (tp = 1); `mpsim plan` accepts tp", w,
                       cfg->parallel.tp);
    if (cfg->model.kind != MODEL_TRANSFORMER)
        return mp_fail(err, MP_ERR_INPUT, "%s: key model.kind: serving needs a model "
                       "(transformer), got synthetic", w);
    struct { const char *name; int dist, len, min, max, limit; } d[2] = {
        { "prompt", in->prompt_dist, in->prompt_len, in->prompt_min, in->prompt_max, ctx - 1 },
        { "output", in->output_dist, in->output_len, in->output_min, in->output_max, ctx - 1 },
    };
    for (int i = 0; i < 2; i++) {
        int max = serve_dist_max(d[i].max, d[i].limit);
        if (d[i].max > d[i].limit)
            return mp_fail(err, MP_ERR_INPUT, "%s: key inference.%s_max = %d: at most "
                           "inference.context_len - 1 = %d", w, d[i].name, d[i].max, d[i].limit);
        if (d[i].dist != DIST_FIXED && d[i].min > max)
            return mp_fail(err, MP_ERR_INPUT, "%s: key inference.%s_min = %d is more than "
                           "inference.%s_max = %d", w, d[i].name, d[i].min, d[i].name, max);
        if (d[i].dist == DIST_FIXED && d[i].len > d[i].limit)
            return mp_fail(err, MP_ERR_INPUT, "%s: key inference.%s_len = %d: at most "
                           "inference.context_len - 1 = %d", w, d[i].name, d[i].len, d[i].limit);
    }
    if (in->prompt_dist == DIST_FIXED && in->output_dist == DIST_FIXED &&
        (long long)in->prompt_len + in->output_len > ctx)
        return mp_fail(err, MP_ERR_INPUT, "%s: key inference.output_len: prompt_len + "
                       "output_len = %d + %d exceeds inference.context_len = %d", w,
                       in->prompt_len, in->output_len, ctx);
    return MP_OK;
}

/* ---- the event loop ----------------------------------------------------- */

static void schedule(struct serve *s, mp_time t, int kind, int id)
{
    /* Ties: the pipeline moves before new arrivals are seen. */
    eventq_schedule(&s->q, t, kind == EV_ARRIVAL ? 1 : kind == EV_HORIZON ? 2 : 0,
                    ((int64_t)id << EV_SHIFT) | kind);
}

static double request_need(const struct serve *s, const struct serve_request *r, int st)
{
    const struct plan_stage *p = &s->pr.plan.stage[st];
    return plan_stage_request_bytes(p, (double)r->prompt + r->output);
}

static void kv_log(struct serve *s, mp_time t)
{
    double total = 0;
    for (int st = 0; st < s->stages; st++) total += s->kv_used[st];
    struct serve_result *r = &s->res;
    if (r->n_kv_log > 0 && r->kv_log[r->n_kv_log - 1].t == t) r->n_kv_log--;
    MP_GROW(r->kv_log, r->cap_kv_log, r->n_kv_log + 1);
    r->kv_log[r->n_kv_log++] = (struct serve_kv_point){ t, total };
    if (total > r->kv_peak_bytes) r->kv_peak_bytes = total;
}

static bool fits(const struct serve *s, const struct serve_request *r)
{
    for (int st = 0; st < s->stages; st++)
        if (s->kv_used[st] + request_need(s, r, st) > s->res.stage[st].free_bytes) return false;
    return true;
}

static void reserve(struct serve *s, struct serve_request *r, double sign)
{
    for (int st = 0; st < s->stages; st++) {
        double d = sign * request_need(s, r, st);
        s->kv_used[st] += d;
        if (s->kv_used[st] > s->res.stage[st].kv_peak) s->res.stage[st].kv_peak = s->kv_used[st];
        if (s->rec) {
            struct serve_record *rc = s->rec;
            MP_GROW(rc->kv, rc->cap_kv, rc->n_kv + 1);
            rc->kv[rc->n_kv++] = (struct serve_kv_rec){ s->now, st, d, s->kv_used[st] };
        }
    }
}

/* Tokens a prefill of `rem` prompt tokens carries when `used` of the budget
 * is taken. */
static int prefill_chunk(const struct serve *s, int rem, double used)
{
    double left = s->cfg.inference.token_budget - used;
    if (s->cfg.inference.chunked_prefill) return left <= 0 ? 0 : rem < left ? rem : (int)left;
    return rem <= left || used == 0 ? rem : 0;
}

/* Form slot k's next pass at stage 0 (serve.h). */
static void form(struct serve *s, int k)
{
    struct serve_slot *sl = &s->slot[k];
    int mb = s->cfg.inference.micro_batch, cap = s->cfg.inference.concurrency;
    int *mem = &s->members[(size_t)k * mb];
    double T = 0;
    for (int i = 0; i < sl->n; i++) {
        struct serve_request *r = &s->req[mem[i]];
        r->chunk = r->prefilled == r->prompt ? 1 : 0;
        T += r->chunk;
    }
    for (int i = 0; i < sl->n; i++) {
        struct serve_request *r = &s->req[mem[i]];
        if (r->prefilled == r->prompt) continue;
        r->chunk = prefill_chunk(s, r->prompt - r->prefilled, T);
        T += r->chunk;
    }
    while (sl->n < mb && s->wait_n > 0 && (cap == 0 || s->inflight < cap)) {
        struct serve_request *r = &s->req[s->waiting[s->wait_head]];
        int c = prefill_chunk(s, r->prompt, T);
        if (c == 0) break;
        if (!fits(s, r)) {
            s->res.kv_blocked++;
            break;
        }
        s->wait_head = (s->wait_head + 1) % s->n_req;
        s->wait_n--;
        r->slot = k;
        r->chunk = c;
        T += c;
        mem[sl->n++] = (int)(r - s->req);
        reserve(s, r, +1);
        s->inflight++;
        s->res.admitted++;
        if (s->inflight > s->res.max_inflight) s->res.max_inflight = s->inflight;
    }
    memset(&sl->b, 0, sizeof sl->b);
    for (int i = 0; i < sl->n; i++) {
        const struct serve_request *r = &s->req[mem[i]];
        if (r->chunk == 0) continue;
        double past = r->prefilled + (r->generated > 0 ? r->generated - 1 : 0);
        bool decode = r->prefilled == r->prompt;
        serve_batch_add(s, &sl->b, r->chunk, past, decode,
                        decode || r->prefilled + r->chunk == r->prompt);
    }
    sl->b.tokens = T;
}

static void record_pass(struct serve *s, int st, int k, mp_time start, mp_time end);

static void start_stage(struct serve *s, int st, mp_time now)
{
    if (s->stage_busy[st] || s->sq_n[st] == 0) return;
    int k = s->stage_queue[(size_t)st * s->slots + s->sq_head[st]];
    s->sq_head[st] = (s->sq_head[st] + 1) % s->slots;
    s->sq_n[st]--;
    struct serve_slot *sl = &s->slot[k];
    mp_time d = serve_slot_time(s, st, sl);
    struct serve_stage_report *rep = &s->res.stage[st];
    if (rep->first_start < 0) rep->first_start = now;
    rep->busy += d;
    rep->passes++;
    s->stage_busy[st] = true;
    if (s->rec) record_pass(s, st, k, now, now + d);
    schedule(s, now + d, EV_STAGE_DONE, k);
}

static void enqueue(struct serve *s, int st, int k, mp_time now)
{
    s->slot[k].stage = st;
    int at = (s->sq_head[st] + s->sq_n[st]) % s->slots;
    s->stage_queue[(size_t)st * s->slots + at] = k;
    s->sq_n[st]++;
    start_stage(s, st, now);
}

/* Form slot k at stage 0; send it in, or leave it idle when it has nothing. */
void serve_launch(struct serve *s, int k, mp_time now)
{
    int before = s->res.admitted;
    form(s, k);
    int *mem = &s->members[(size_t)k * s->cfg.inference.micro_batch];
    for (int i = s->slot[k].n - (s->res.admitted - before); i < s->slot[k].n; i++)
        s->req[mem[i]].admitted = now;
    if (s->res.admitted != before) kv_log(s, now);
    bool was = s->slot[k].active;
    s->slot[k].active = s->slot[k].b.tokens > 0;
    s->n_idle += (int)was - (int)s->slot[k].active;
    if (s->fast) {
        /* Its event, if any, was taken off when it was handled. */
        if (s->slot[k].active) serve_fast_walk(s, k, now);
    } else if (s->slot[k].active) {
        enqueue(s, 0, k, now);
    }
}

void serve_wake_idle(struct serve *s, mp_time now)
{
    /* n_idle only ends the scan early: the slots launched, and their order,
     * are those of the full scan. */
    for (int k = 0; k < s->slots && s->wait_n > 0 && s->n_idle > 0; k++)
        if (!s->slot[k].active) serve_launch(s, k, now);
}

/* The pass of slot k left the last stage: tokens out, finished requests go. */
void serve_emit(struct serve *s, int k, mp_time now)
{
    struct serve_slot *sl = &s->slot[k];
    int *mem = &s->members[(size_t)k * s->cfg.inference.micro_batch];
    bool freed = false;
    int kept = 0;
    for (int i = 0; i < sl->n; i++) {
        struct serve_request *r = &s->req[mem[i]];
        if (r->chunk > 0) {
            if (r->prefilled < r->prompt) {
                r->prefilled += r->chunk;
                s->res.prompt_tokens += r->chunk;
                if (r->prefilled == r->prompt) {
                    r->generated = 1;
                    r->first_token = now;
                    s->res.output_tokens++;
                }
            } else {
                r->generated++;
                s->res.output_tokens++;
            }
            r->chunk = 0;
        }
        if (r->generated == r->output) {
            r->done = now;
            s->res.makespan = now;
            r->slot = -1;
            reserve(s, r, -1);
            s->inflight--;
            s->res.completed++;
            freed = true;
        } else {
            mem[kept++] = mem[i]; /* keep arrival order: it decides who prefills first */
        }
    }
    sl->n = kept;
    if (freed) kv_log(s, now);
}

static struct serve_stage_rec *rec_stage(struct serve *s, int st)
{
    struct serve_record *rc = s->rec;
    if (!rc->stage) {
        rc->stage = mp_xcalloc((size_t)s->stages, sizeof *rc->stage);
        rc->slot_pass = mp_xcalloc((size_t)s->slots, sizeof *rc->slot_pass);
    }
    return &rc->stage[st];
}

/* Slot k's pass starts on stage st over [start, end]. At stage 0 it is a
 * new pass: who is in it, for the timeline's label and kind. */
static void record_pass(struct serve *s, int st, int k, mp_time start, mp_time end)
{
    struct serve_record *rc = s->rec;
    struct serve_stage_rec *sr = rec_stage(s, st);
    if (st == 0) {
        const struct serve_slot *sl = &s->slot[k];
        struct serve_pass_rec p = { .start = start, .end = end, .slot = k,
                                    .emits = (int)sl->b.emits, .tokens = sl->b.tokens };
        const int *mem = &s->members[(size_t)k * s->cfg.inference.micro_batch];
        for (int i = 0; i < sl->n; i++) {
            const struct serve_request *r = &s->req[mem[i]];
            if (r->chunk == 0) continue;
            if (r->prefilled < r->prompt) { p.prefill++; p.prefill_tokens += r->chunk; }
            else p.decode++;
        }
        assert(rc->n_pass < UINT32_MAX);
        MP_GROW(rc->pass, rc->cap_pass, rc->n_pass + 1);
        rc->slot_pass[k] = (uint32_t)rc->n_pass;
        rc->pass[rc->n_pass++] = p;
    }
    uint32_t id = rc->slot_pass[k];
    if (st == s->stages - 1) rc->pass[id].end = end;
    if (sr->n == sr->cap) {
        size_t cap = sr->cap ? 2 * sr->cap : 256;
        sr->start = mp_xrealloc(sr->start, cap * sizeof *sr->start);
        sr->end = mp_xrealloc(sr->end, cap * sizeof *sr->end);
        sr->pass = mp_xrealloc(sr->pass, cap * sizeof *sr->pass);
        sr->cap = cap;
    }
    sr->start[sr->n] = start;
    sr->end[sr->n] = end;
    sr->pass[sr->n++] = id;
    rc->n_copies++;
}

static void record_hop(struct serve *s, mp_time start, mp_time end, int st, int slot)
{
    struct serve_stage_rec *sr = rec_stage(s, st);
    if (sr->n_hop == sr->cap_hop) {
        size_t cap = sr->cap_hop ? 2 * sr->cap_hop : 256;
        sr->hop_start = mp_xrealloc(sr->hop_start, cap * sizeof *sr->hop_start);
        sr->hop_end = mp_xrealloc(sr->hop_end, cap * sizeof *sr->hop_end);
        sr->hop_pass = mp_xrealloc(sr->hop_pass, cap * sizeof *sr->hop_pass);
        sr->cap_hop = cap;
    }
    sr->hop_start[sr->n_hop] = start;
    sr->hop_end[sr->n_hop] = end;
    sr->hop_pass[sr->n_hop++] = s->rec->slot_pass[slot];
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
    /* Counted as the walk-at-a-time loop counts (serve.h): the same figure
     * whichever loop runs. */
    if (kind != EV_HOP_DONE && (kind != EV_STAGE_DONE || s->slot[id].stage + 1 == s->stages))
        s->res.events++;
    switch (kind) {
    case EV_ARRIVAL: {
        int at = (s->wait_head + s->wait_n) % s->n_req;
        s->waiting[at] = id;
        s->wait_n++;
        if (s->wait_n > s->res.max_waiting) s->res.max_waiting = s->wait_n;
        serve_wake_idle(s, now);
        break;
    }
    case EV_STAGE_DONE: {
        int st = s->slot[id].stage;
        s->stage_busy[st] = false;
        s->res.stage[st].last_end = now;
        start_stage(s, st, now);
        if (st + 1 < s->stages) {
            /* Links are held for the serialisation; latency overlaps. */
            mp_time start = now;
            for (int i = s->hop_route_off[st]; i < s->hop_route_off[st + 1]; i++)
                if (s->link_free[s->hop_route[i]] > start) start = s->link_free[s->hop_route[i]];
            mp_time ser = serve_hop_time(s, st, (int)s->slot[id].b.tokens) - s->hop[st];
            for (int i = s->hop_route_off[st]; i < s->hop_route_off[st + 1]; i++)
                s->link_free[s->hop_route[i]] = start + ser;
            s->slot[id].stage = st + 1;
            schedule(s, start + ser + s->hop[st], EV_HOP_DONE, id);
            if (s->rec && s->stages > 1)
                record_hop(s, start, start + ser + s->hop[st], st, id);
        } else {
            int emits = (int)s->slot[id].b.emits;
            serve_emit(s, id, now);
            schedule(s, now + serve_hop_time(s, st, emits > 0 ? emits : 1), EV_RETURN, id);
            if (s->rec && s->stages > 1)
                record_hop(s, now, now + serve_hop_time(s, st, emits > 0 ? emits : 1), st, id);
            serve_wake_idle(s, now); /* memory may have been freed */
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

/* ---- metrics ------------------------------------------------------------ */

static void quantiles(double *v, size_t n, double out[4])
{
    if (n == 0) { out[0] = out[1] = out[2] = out[3] = 0; return; }
    gsl_sort(v, 1, n);
    out[0] = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.50);
    out[1] = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.90);
    out[2] = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
    out[3] = gsl_stats_mean(v, 1, n);
}

/* Length of [a, b] ∩ [lo, hi] in seconds. */
static double overlap(mp_time a, mp_time b, mp_time lo, mp_time hi)
{
    mp_time x = a > lo ? a : lo, y = b < hi ? b : hi;
    return y > x ? mp_seconds(y - x) : 0;
}

static void fold(struct serve *s)
{
    struct serve_result *r = &s->res;
    mp_time T = r->makespan;
    double *ttft = mp_xmalloc((size_t)s->n_req * sizeof *ttft);
    double *tpot = mp_xmalloc((size_t)s->n_req * sizeof *tpot);
    double *e2e = mp_xmalloc((size_t)s->n_req * sizeof *e2e);
    size_t nt = 0, np = 0, ne = 0;
    double inflight = 0, in_system = 0, window_in = 0, window_lat = 0;
    mp_time t0 = s->req[0].arrival, t1 = s->req[s->n_req - 1].arrival;
    for (int i = 0; i < s->n_req; i++) {
        const struct serve_request *q = &s->req[i];
        mp_time end = q->done >= 0 ? q->done : T;
        if (q->arrival <= T) in_system += overlap(q->arrival, end, 0, T);
        if (q->admitted >= 0) inflight += overlap(q->admitted, end, 0, T);
        window_in += overlap(q->arrival, end, t0, t1);
        window_lat += mp_seconds(end - q->arrival);
        if (q->first_token >= 0) ttft[nt++] = mp_seconds(q->first_token - q->arrival);
        if (q->done < 0) continue;
        e2e[ne++] = mp_seconds(q->done - q->arrival);
        if (q->output > 1) tpot[np++] = mp_seconds(q->done - q->first_token) / (q->output - 1);
    }
    quantiles(ttft, nt, r->ttft);
    quantiles(tpot, np, r->tpot);
    quantiles(e2e, ne, r->e2e);
    free(ttft);
    free(tpot);
    free(e2e);
    double sec = mp_seconds(T);
    r->mean_inflight = sec > 0 ? inflight / sec : 0;
    r->mean_in_system = sec > 0 ? in_system / sec : 0;
    r->tokens_per_s = sec > 0 ? r->output_tokens / sec : 0;
    r->requests_per_s = sec > 0 ? r->completed / sec : 0;
    r->little_window_s = mp_seconds(t1 - t0);
    if (t1 > t0) {
        r->little_rate = (s->n_req - 1) / r->little_window_s;
        r->little_latency_s = window_lat / s->n_req;
        r->little_in_system = window_in / r->little_window_s;
    }
    for (int st = 0; st < s->stages; st++) {
        struct serve_stage_report *x = &r->stage[st];
        if (x->first_start < 0) x->first_start = 0;
        double f = x->free_bytes > 0 ? x->kv_peak / x->free_bytes : 0;
        if (f > r->kv_peak_fraction) r->kv_peak_fraction = f;
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
    double mb = in->micro_batch, T = in->token_budget > mb ? in->token_budget : mb;
    double ctx = in->context_len;
    /* An upper bound of any pass: every token a prompt token after a full
     * context, every member also decoding one at a full context. */
    struct kernel_batch b = { .tokens = T, .emits = mb, .items = mb, .decode = mb,
                              .decode_ctx = mb * ctx, .prefill_tokens = T,
                              .prefill_pairs = T * ctx, .prefill_items = mb,
                              .decode_ctx_win = mb * ctx, .prefill_pairs_win = T * ctx };
    mp_time walk = 0;
    for (int st = 0; st < s->stages; st++) {
        walk = mp_time_add(walk, serve_batch_time(s, st, &b));
        walk = mp_time_add(walk, serve_hop_time(s, st, (int)T));
    }
    if (walk <= SERVE_WALK_MAX) return MP_OK;
    char chip[512], sys[512];
    chip_describe(&s->pr.chip, chip, sizeof chip);
    system_describe(&s->sys, sys, sizeof sys);
    return mp_fail(err, MP_ERR_INPUT, "%s: one pass down the %d stages at inference.token_budget "
                   "= %d tokens and inference.context_len = %d could take 2^60 ps (13 days) or "
                   "more, past what mpsim counts; it comes from %s and %s: expected a faster "
                   "chip or links, or a smaller token_budget or context_len",
                   s->cfg.path[0] ? s->cfg.path : "scenario", s->stages, in->token_budget,
                   in->context_len, chip, sys);
}

/* The work of serving `n` requests of about `prompt` and `output` tokens
 * (issue 16): a walk per microbatch pass (a prefill chunk or a decode step),
 * two events each in the walk-at-a-time loop and
 * a pass record per stage when a timeline is kept; the requests themselves
 * are held. Checked before the requests are drawn, or once a trace is read. */
static int check_work(const struct serve *s, double n, double prompt, double output,
                      struct mp_error *err)
{
    const struct config_inference *in = &s->cfg.inference;
    double chunks = in->chunked_prefill ? ceil(prompt / in->token_budget) : 1;
    /* An upper bound: every pass carries at least one request's token, and
     * how many it carries depends on arrivals and slots (one slot with slow
     * arrivals decodes one request at a time whatever micro_batch says). */
    double walks = n * (output + (chunks < 1 ? 1 : chunks));
    /* Each slot's member list has room for a microbatch (at most every
     * request), and each stage a queue of every slot (run_mode). */
    double members = fmin(in->micro_batch, n), slots = s->slots;
    struct work_estimate w = { .events = n + 2 * walks, .held = n,
                               .bytes = 4 * slots * (members + s->stages) };
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
    rc = plan_run(&s->pr, c, err);
    s->has_plan = true;
    if (rc) return rc;
    const struct plan *pl = &s->pr.plan;
    s->stages = pl->stages;
    if ((rc = chip_catalog_load_default(&s->catalog, err))) return rc;
    char path[1024];
    if ((rc = config_resolve_key(c, "hardware.system", "hardware/systems", ".ini", path,
                             sizeof path, err)) ||
        (rc = system_plan(&s->sys, path, c->hardware.nodes, s->stages, &s->catalog, err)))
        return rc;
    s->has_sys = true;
    /* The system's own size (hardware.nodes may ask for millions of chips)
     * against the budget before its links are laid out. */
    struct work_estimate sys_work = { .chips = s->sys.n_chips };
    if (!s->force && s->budget_events > 0 && s->sys.n_chips > s->budget_events)
        return mp_fail(err, MP_ERR_INPUT, "%s: a system of %d chips, past this run's budget of "
                       "%.0f", c->path[0] ? c->path : "scenario", s->sys.n_chips, s->budget_events);
    if ((rc = work_check(&sys_work, c->path[0] ? c->path : "scenario", "lower hardware.nodes",
                         s->force, err)))
        return rc;
    system_build(&s->sys);
    s->stage_chip = mp_xmalloc((size_t)s->stages * sizeof *s->stage_chip);
    for (int st = 0; st < s->stages; st++) s->stage_chip[st] = st;
    if ((rc = serve_price_layers(s, err))) return rc;
    serve_build_hops(s);
    if ((rc = check_walk(s, err))) return rc;
    s->slots = c->inference.inflight ? c->inference.inflight : s->stages;
    struct serve_result *r = &s->res;
    r->stages = s->stages;
    r->slots = s->slots;
    r->micro_batch = c->inference.micro_batch;
    r->stage = mp_xcalloc((size_t)s->stages, sizeof *r->stage);
    for (int st = 0; st < s->stages; st++)
        r->stage[st] = (struct serve_stage_report){
            .index = st, .chip = s->stage_chip[st], .layer_first = pl->stage[st].first,
            .layer_last = pl->stage[st].last, .first_start = -1,
            .weights = pl->stage[st].weights,
            .free_bytes = pl->p.chip_mem - pl->stage[st].weights,
        };
    const struct config_inference *in = &c->inference;
    int ctx = in->context_len;
    if (in->arrivals != ARRIVALS_TRACE &&
        (rc = check_work(s, in->requests,
                         mean_len(in->prompt_dist, in->prompt_len, in->prompt_min,
                                  serve_dist_max(in->prompt_max, ctx - 1), in->prompt_sigma),
                         mean_len(in->output_dist, in->output_len, in->output_min,
                                  serve_dist_max(in->output_max, ctx - 1), in->output_sigma),
                         err)))
        return rc;
    rc = in->arrivals == ARRIVALS_TRACE ? serve_trace_requests(s, err) : serve_poisson_requests(s);
    if (rc) return rc;
    if (in->arrivals == ARRIVALS_TRACE) {
        double prompt = 0, output = 0;
        for (int i = 0; i < s->n_req; i++) prompt += s->req[i].prompt, output += s->req[i].output;
        if ((rc = check_work(s, s->n_req, prompt / s->n_req, output / s->n_req, err))) return rc;
    }
    r->requests = s->n_req;
    /* A request that cannot fit even alone would wait for ever. */
    for (int i = 0; i < s->n_req; i++)
        for (int st = 0; st < s->stages; st++) {
            double need = request_need(s, &s->req[i], st);
            if (need > r->stage[st].free_bytes)
                return mp_fail(err, MP_ERR_INFEASIBLE,
                               "request %d (%d + %d tokens) needs %.2f GB of KV/state on "
                               "stage %d, which has %.2f GB free after its weights", i,
                               s->req[i].prompt, s->req[i].output, need / 1e9, st,
                               r->stage[st].free_bytes / 1e9);
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
    if (record) s->rec = mp_xcalloc(1, sizeof *s->rec);
    gsl_set_error_handler_off();
    int rc = config_check(&s->cfg, err);
    if (!rc) rc = setup(s, err);
    if (rc) return rc;

    /* A microbatch never holds more requests than there are: its member
     * list need not have room for more (micro_batch = 10^6 with 8 requests
     * would ask slots × 4 MB). */
    if (s->cfg.inference.micro_batch > s->n_req) s->cfg.inference.micro_batch = s->n_req;
    int S = s->stages, K = s->slots, mb = s->cfg.inference.micro_batch;
    eventq_init(&s->q);
    s->slot = mp_xcalloc((size_t)K, sizeof *s->slot);
    s->members = mp_xcalloc((size_t)K * mb, sizeof *s->members);
    s->waiting = mp_xcalloc((size_t)s->n_req, sizeof *s->waiting);
    s->stage_queue = mp_xcalloc((size_t)S * K, sizeof *s->stage_queue);
    s->sq_head = mp_xcalloc((size_t)S, sizeof *s->sq_head);
    s->sq_n = mp_xcalloc((size_t)S, sizeof *s->sq_n);
    s->stage_busy = mp_xcalloc((size_t)S, sizeof *s->stage_busy);
    s->link_free = mp_xcalloc((size_t)s->sys.n_links + 1, sizeof *s->link_free);
    s->kv_used = mp_xcalloc((size_t)S, sizeof *s->kv_used);
    s->n_idle = K;
    kv_log(s, 0);
    /* A timeline lists every pass and hop in the order the per-stage loop
     * meets them, so recording runs that loop. */
    if (!record && !events) serve_fast_init(s);
    if (s->fast) {
        serve_fast_run(s);
        if (!s->clock_overflow && serve_fast_tied(s->fast))
            return MP_OK; /* serve_run_recorded starts over */
    } else {
        /* All arrivals go in up front: the heap holds them, and the loop
         * stays free of allocation. */
        for (int i = 0; i < s->n_req; i++) schedule(s, s->req[i].arrival, EV_ARRIVAL, i);
        if (s->cfg.inference.horizon > 0) schedule(s, s->cfg.inference.horizon, EV_HORIZON, 0);
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
    fold(s);
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

void serve_release(struct serve *s)
{
    if (s->has_plan) plan_run_release(&s->pr);
    if (s->has_sys) system_release(&s->sys);
    chip_catalog_release(&s->catalog);
    if (s->slot) eventq_release(&s->q);
    serve_price_release(s);
    free(s->stage_chip);
    free(s->layers);
    free(s->layer_off);
    free(s->hop);
    free(s->hop_bw);
    free(s->hop_route_off);
    free(s->hop_route);
    free(s->req);
    free(s->slot);
    free(s->members);
    free(s->waiting);
    free(s->stage_queue);
    free(s->sq_head);
    free(s->sq_n);
    free(s->stage_busy);
    free(s->link_free);
    free(s->kv_used);
    serve_fast_release(s->fast);
    free(s->res.kv_log);
    free(s->res.stage);
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
