/* serve.c — serving through a pipeline of chips; see serve.h for the model.
 *
 * Steps: check the [inference] keys, place the model (plan.c), load the
 * system for that many chips, price each stage's layers once, generate or
 * read the requests, run the event loop, fold the request times into metrics
 * (quantiles with gsl_sort + gsl_stats). */
#include "serve.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define POW_TAB 64

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

/* ---- checks ------------------------------------------------------------- */

static int dist_max(int max, int fallback) { return max > 0 ? max : fallback; }

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
        int max = dist_max(d[i].max, d[i].limit);
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

/* ---- requests ----------------------------------------------------------- */

static int draw(const gsl_rng *rng, int dist, int len, int min, int max, double sigma)
{
    double v;
    switch (dist) {
    case DIST_UNIFORM:
        return min + (int)gsl_rng_uniform_int(rng, (unsigned long)(max - min) + 1);
    case DIST_LOGNORMAL:
        v = round(gsl_ran_lognormal(rng, log((double)len), sigma));
        return v < min ? min : v > max ? max : (int)v;
    default:
        return len;
    }
}

static void add_request(struct serve *s, int *cap, mp_time t, int prompt, int output)
{
    MP_GROW(s->req, *cap, s->n_req + 1);
    s->req[s->n_req++] = (struct serve_request){
        .arrival = t, .admitted = -1, .first_token = -1, .done = -1,
        .prompt = prompt, .output = output, .slot = -1,
    };
}

static int poisson_requests(struct serve *s)
{
    const struct config_inference *in = &s->cfg.inference;
    int ctx = in->context_len, cap = 0;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)s->cfg.run.seed);
    double t = 0;
    for (int i = 0; i < in->requests; i++) {
        t += gsl_ran_exponential(rng, 1.0 / in->rate);
        int p = draw(rng, in->prompt_dist, in->prompt_len, in->prompt_min,
                     dist_max(in->prompt_max, ctx - 1), in->prompt_sigma);
        if (p > ctx - 1) p = ctx - 1;
        int omax = dist_max(in->output_max, ctx - p);
        if (omax > ctx - p) omax = ctx - p;
        int omin = in->output_min < omax ? in->output_min : omax;
        int o = draw(rng, in->output_dist, in->output_len, omin, omax, in->output_sigma);
        if (o > ctx - p) o = ctx - p;
        add_request(s, &cap, (mp_time)llround(t * 1e12), p, o);
    }
    gsl_rng_free(rng);
    return MP_OK;
}

/* CSV rows "arrival_s,prompt_tokens,output_tokens"; a first row that does not
 * start with a number is a header; blank lines and '#' comments are skipped. */
static int trace_requests(struct serve *s, struct mp_error *err)
{
    char path[1024];
    int rc = config_resolve(&s->cfg, s->cfg.inference.trace, "scenarios", ".csv", path,
                            sizeof path, err);
    if (rc) {
        mp_error_prefix(err, "key inference.trace: ");
        return rc;
    }
    FILE *f = fopen(path, "r");
    if (!f) return mp_fail(err, MP_ERR_INPUT, "%s: cannot open trace", path);
    char line[512];
    int ln = 0, cap = 0, ctx = s->cfg.inference.context_len;
    mp_time last = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '\0' || *p == '\n' || *p == '\r' || *p == '#') continue;
        char *end;
        double t = strtod(p, &end);
        if (end == p && s->n_req == 0 && ln == 1) continue; /* header */
        long prompt = 0, output = 0;
        /* At most 10^6 s, so t × 10^12 stays an exact-enough int64 (llround
         * of a larger product is unspecified, and wrapped arrivals would be
         * reported as going back in time). */
        bool ok = end != p && isfinite(t) && t >= 0 && t <= 1e6 && *end == ',';
        if (ok) { p = end + 1; prompt = strtol(p, &end, 10); ok = end != p && *end == ','; }
        if (ok) { p = end + 1; output = strtol(p, &end, 10); ok = end != p; }
        while (ok && (*end == ' ' || *end == '\r' || *end == '\n' || *end == '\t')) end++;
        ok = ok && *end == '\0' && prompt >= 1 && output >= 1;
        mp_time at = ok ? (mp_time)llround(t * 1e12) : 0;
        if (!ok || at < last || prompt + output > ctx) {
            fclose(f);
            if (!ok)
                return mp_fail(err, MP_ERR_INPUT, "%s:%d: expected arrival_s,prompt_tokens,"
                               "output_tokens (seconds ≥ 0, tokens ≥ 1), got '%.80s'", path, ln,
                               line);
            if (at < last)
                return mp_fail(err, MP_ERR_INPUT, "%s:%d: arrivals must not go back in time "
                               "(%.9f s after %.9f s)", path, ln, t, mp_seconds(last));
            return mp_fail(err, MP_ERR_INPUT, "%s:%d: prompt + output = %ld tokens exceeds "
                           "inference.context_len = %d", path, ln, prompt + output, ctx);
        }
        last = at;
        add_request(s, &cap, at, (int)prompt, (int)output);
    }
    fclose(f);
    if (s->n_req == 0)
        return mp_fail(err, MP_ERR_INPUT, "%s: the trace has no requests", path);
    return MP_OK;
}

/* ---- the machine -------------------------------------------------------- */

static void price_layers(struct serve *s)
{
    const struct model *m = &s->pr.model;
    const struct plan *pl = &s->pr.plan;
    const struct config *c = &s->cfg;
    double W = c->model.weight_bits / 8.0, A = c->model.activation_bits / 8.0;
    s->layer_off = mp_xcalloc((size_t)s->stages + 1, sizeof *s->layer_off);
    s->layers = mp_xcalloc((size_t)m->n_layers, sizeof *s->layers);
    int n = 0;
    struct cost_params cp = { .seq_len = 1, .micro_batch = 1, .tp = 1,
                              .weight_bits = c->model.weight_bits, .kv_bits = c->model.kv_bits };
    for (int st = 0; st < s->stages; st++) {
        s->layer_off[st] = n;
        for (int l = pl->stage[st].first; l <= pl->stage[st].last; l++) {
            const struct layer *L = &m->layer[l];
            struct layer_cost lc;
            model_layer_cost(m, l, &cp, &lc);
            struct serve_layer *x = &s->layers[n++];
            *x = (struct serve_layer){
                .kind = L->kind, .attn = L->attn,
                .fixed_bytes = (L->params - L->expert_params) * W,
                .expert_bytes = L->expert_params * W,
                .expert_frac = m->experts ? (double)m->experts_per_token / m->experts : 0,
                .matmul_params = L->matmul_params,
                .kv_per_token = lc.kv_bytes_per_token, .state = lc.state_bytes_per_request,
                .hidden_bytes = m->hidden * A, .row_bytes = m->hidden * W,
                .vocab = m->vocab, .head_flops = 2.0 * m->vocab * m->hidden,
            };
            double heads = m->heads, d = m->head_dim;
            if (L->attn == ATTN_LINEAR) x->attn_coef = 4 * heads * d * d;
            else if (L->attn == ATTN_MLA)
                x->attn_coef = 2 * heads * ((double)m->qk_nope_head_dim + m->qk_rope_head_dim +
                                            m->v_head_dim);
            else x->attn_coef = 4 * heads * d;
            for (int i = 0; i < POW_TAB; i++) x->miss[i] = pow(1 - x->expert_frac, i);
        }
    }
    s->layer_off[s->stages] = n;
}

static mp_time sum_time(const struct serve *s, int stage, double T, double pairs, double ctx,
                        double items, double emits)
{
    const struct chip *chip = &s->pr.chip;
    int bits = s->cfg.model.weight_bits <= 8 ? 8 : 16;
    mp_time t = 0;
    for (int i = s->layer_off[stage]; i < s->layer_off[stage + 1]; i++) {
        const struct serve_layer *x = &s->layers[i];
        double flops = 0, bytes = 0;
        if (x->kind == LAYER_EMBEDDING) {
            bytes = (T < x->vocab ? T : x->vocab) * x->row_bytes + T * x->hidden_bytes;
        } else if (x->kind == LAYER_LM_HEAD) {
            if (emits <= 0) continue;
            flops = emits * x->head_flops;
            bytes = x->fixed_bytes + emits * x->hidden_bytes;
        } else {
            flops = 2 * T * x->matmul_params;
            bytes = x->fixed_bytes + 2 * T * x->hidden_bytes;
            if (x->expert_bytes > 0)
                bytes += x->expert_bytes * (1 - (T < POW_TAB && T == (int)T ? x->miss[(int)T]
                                                             : pow(1 - x->expert_frac, T)));
            if (x->attn == ATTN_LINEAR) {
                flops += x->attn_coef * T;
                bytes += 2 * items * x->state;
            } else {
                flops += x->attn_coef * pairs;
                bytes += (ctx + T) * x->kv_per_token; /* read the cache, write the new */
            }
        }
        t += chip_op_time(chip, flops, bytes, bits);
    }
    return t;
}

mp_time serve_stage_time(const struct serve *s, int stage, const struct serve_item *items,
                         int n)
{
    double T = 0, pairs = 0, ctx = 0, emits = 0;
    for (int i = 0; i < n; i++) {
        T += items[i].tokens;
        pairs += (double)items[i].tokens * (items[i].past + items[i].tokens);
        ctx += items[i].past;
        emits += items[i].emits;
    }
    return sum_time(s, stage, T, pairs, ctx, n, emits);
}

static double hop_bytes(const struct serve *s, int stage, double tokens)
{
    if (stage == s->stages - 1) return 4 * tokens; /* token ids back to stage 0 */
    return tokens * s->pr.model.hidden * s->cfg.model.activation_bits / 8.0;
}

mp_time serve_hop_time(const struct serve *s, int stage, int tokens)
{
    if (s->stages == 1) return 0;
    double b = hop_bytes(s, stage, tokens);
    return s->hop[stage] + (isinf(s->hop_bw[stage]) ? 0 : (mp_time)llround(b / s->hop_bw[stage] * 1e12));
}

/* Routes of the hand-offs: s → s+1, and the last stage's return hop, priced
 * as the route back to its predecessor (one hop on a chain). */
static void build_hops(struct serve *s)
{
    int S = s->stages;
    s->hop = mp_xcalloc((size_t)S, sizeof *s->hop);
    s->hop_bw = mp_xcalloc((size_t)S, sizeof *s->hop_bw);
    s->hop_route_off = mp_xcalloc((size_t)S + 1, sizeof *s->hop_route_off);
    int cap = 0, n = 0, stack[64], *buf;
    for (int st = 0; st < S; st++) {
        s->hop_route_off[st] = n;
        s->hop_bw[st] = INFINITY;
        if (S == 1) continue;
        int a = s->stage_chip[st], b = st + 1 < S ? s->stage_chip[st + 1] : s->stage_chip[st - 1];
        int len = system_route_buf(&s->sys, a, b, stack, 64, &buf);
        s->hop[st] = system_route_time(&s->sys, buf, len, 0);
        for (int i = 0; i < len; i++) {
            double bw = s->sys.links[buf[i]].bw;
            if (bw < s->hop_bw[st]) s->hop_bw[st] = bw;
            if (st + 1 < S) { /* the return hop's bytes are too few to hold a link */
                MP_GROW(s->hop_route, cap, n + 1);
                s->hop_route[n++] = buf[i];
            }
        }
        if (buf != stack) free(buf);
    }
    s->hop_route_off[S] = n;
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
    return (double)(r->prompt + r->output) * p->kv_per_token + p->state_per_request;
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
    sl->tokens = T;
    sl->pairs = sl->ctx = sl->items = sl->emits = 0;
    for (int i = 0; i < sl->n; i++) {
        const struct serve_request *r = &s->req[mem[i]];
        if (r->chunk == 0) continue;
        int past = r->prefilled + (r->generated > 0 ? r->generated - 1 : 0);
        sl->pairs += (double)r->chunk * (past + r->chunk);
        sl->ctx += past;
        sl->items++;
        sl->emits += r->prefilled == r->prompt || r->prefilled + r->chunk == r->prompt;
    }
}

static void start_stage(struct serve *s, int st, mp_time now)
{
    if (s->stage_busy[st] || s->sq_n[st] == 0) return;
    int k = s->stage_queue[(size_t)st * s->slots + s->sq_head[st]];
    s->sq_head[st] = (s->sq_head[st] + 1) % s->slots;
    s->sq_n[st]--;
    struct serve_slot *sl = &s->slot[k];
    mp_time d = sum_time(s, st, sl->tokens, sl->pairs, sl->ctx, sl->items, sl->emits);
    struct serve_stage_report *rep = &s->res.stage[st];
    if (rep->first_start < 0) rep->first_start = now;
    rep->busy += d;
    rep->passes++;
    s->stage_busy[st] = true;
    if (s->rec) { /* who is in the pass, for the timeline's label and kind */
        struct serve_pass_rec p = { now, now + d, st, k, 0, 0, 0 };
        const int *mem = &s->members[(size_t)k * s->cfg.inference.micro_batch];
        for (int i = 0; i < sl->n; i++) {
            const struct serve_request *r = &s->req[mem[i]];
            if (r->chunk == 0) continue;
            if (r->prefilled < r->prompt) { p.prefill++; p.prefill_tokens += r->chunk; }
            else p.decode++;
        }
        struct serve_record *rc = s->rec;
        MP_GROW(rc->pass, rc->cap_pass, rc->n_pass + 1);
        rc->pass[rc->n_pass++] = p;
    }
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

static void walk(struct serve *s, int k, mp_time now);

/* Form slot k at stage 0; send it in, or leave it idle when it has nothing. */
static void launch(struct serve *s, int k, mp_time now)
{
    int before = s->res.admitted;
    form(s, k);
    int *mem = &s->members[(size_t)k * s->cfg.inference.micro_batch];
    for (int i = s->slot[k].n - (s->res.admitted - before); i < s->slot[k].n; i++)
        s->req[mem[i]].admitted = now;
    if (s->res.admitted != before) kv_log(s, now);
    bool was = s->slot[k].active;
    s->slot[k].active = s->slot[k].tokens > 0;
    s->n_idle += (int)was - (int)s->slot[k].active;
    if (s->fast) {
        /* Its event, if any, was taken off when it was handled. */
        if (s->slot[k].active) walk(s, k, now);
    } else if (s->slot[k].active) {
        enqueue(s, 0, k, now);
    }
}

static void wake_idle(struct serve *s, mp_time now)
{
    /* n_idle only ends the scan early: the slots launched, and their order,
     * are those of the full scan. */
    for (int k = 0; k < s->slots && s->wait_n > 0 && s->n_idle > 0; k++)
        if (!s->slot[k].active) launch(s, k, now);
}

/* The pass of slot k left the last stage: tokens out, finished requests go. */
static void emit(struct serve *s, int k, mp_time now)
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

static void record_hop(struct serve *s, mp_time start, mp_time end, int st, int slot,
                       double bytes)
{
    struct serve_record *rc = s->rec;
    MP_GROW(rc->hop, rc->cap_hop, rc->n_hop + 1);
    rc->hop[rc->n_hop++] = (struct serve_hop_rec){ start, end, st, slot, bytes };
}

static void handle(void *ctx, const struct eventq_event *ev)
{
    struct serve *s = ctx;
    int kind = (int)(ev->data & ((1 << EV_SHIFT) - 1)), id = (int)(ev->data >> EV_SHIFT);
    mp_time now = ev->time;
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
        wake_idle(s, now);
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
            mp_time ser = serve_hop_time(s, st, (int)s->slot[id].tokens) - s->hop[st];
            for (int i = s->hop_route_off[st]; i < s->hop_route_off[st + 1]; i++)
                s->link_free[s->hop_route[i]] = start + ser;
            s->slot[id].stage = st + 1;
            schedule(s, start + ser + s->hop[st], EV_HOP_DONE, id);
            if (s->rec && s->stages > 1)
                record_hop(s, start, start + ser + s->hop[st], st, id,
                           hop_bytes(s, st, s->slot[id].tokens));
        } else {
            int emits = (int)s->slot[id].emits;
            emit(s, id, now);
            schedule(s, now + serve_hop_time(s, st, emits > 0 ? emits : 1), EV_RETURN, id);
            if (s->rec && s->stages > 1)
                record_hop(s, now, now + serve_hop_time(s, st, emits > 0 ? emits : 1), st, id,
                           hop_bytes(s, st, emits > 0 ? emits : 1));
            wake_idle(s, now); /* memory may have been freed */
        }
        break;
    }
    case EV_HOP_DONE:
        enqueue(s, s->slot[id].stage, id, now);
        break;
    case EV_RETURN:
        launch(s, id, now);
        break;
    case EV_HORIZON:
        if (s->res.completed < s->n_req) s->res.makespan = now; /* cut short */
        eventq_stop(&s->q);
        break;
    }
}

/* ---- the walk-at-a-time loop -------------------------------------------- */

/* Why it gives the per-stage events' results exactly (serve.h, "Event
 * granularity"):
 * - Each stage serves passes first come first served, and each hand-off
 *   route's links serve only that hand-off (checked in fast_init), so passes
 *   leave a stage, cross a hop and reach the next stage in the order they
 *   were formed at stage 0. A pass starts on a stage at max(its arrival, the
 *   end of the pass before it there) and its hop at max(its end, the hop's
 *   link free time) — whatever order same-time events ran in. So the walk
 *   of a pass follows from the walk of the pass formed before it alone.
 * - Requests, the queue and memory change only at arrivals, pass ends at the
 *   last stage and returns to stage 0: those stay events, in the order the
 *   per-stage loop runs them: time, then priority (passes before arrivals),
 *   then the order they were scheduled in, which for the per-stage loop is
 *   the time they were scheduled at (a pass end is scheduled when the pass
 *   starts on the last stage, a return when the pass ends there). Two with
 *   the same time and schedule time would be ordered by the per-stage
 *   loop's finer history; the run then starts over with per-stage events.
 * - Stage busy time and passes are sums, kept per stage class (stages with
 *   the same layers) and spread over the stages at the end; first_start is
 *   the first pass's and last_end the last one's.
 * A pass that cannot meet the one before it anywhere ("clear") takes only
 * the stage classes' times; the check is a bound, and when it fails the walk
 * is computed stage by stage — unless it joins a convoy: where its hop waits
 * for the link behind the previous pass's and sums over (hop class, stage
 * class, hop class) triples show it keeps waiting for every later link
 * (conv_holds), its hops free each link a fixed serialisation after the
 * previous pass's, so the stages past that point are kept lazily as the
 * anchor's (the last pass written out in full) plus a per-hop-class offset,
 * and its end is a few sums. In the wafer case the chain is link-bound
 * (a hop's serialisation exceeds most stage times): ~92% of the walks that
 * are not clear join, nearly all at stage 0. */

enum { FAST_DONE, FAST_RETURN }; /* a slot's pending event: pass end at the last stage, return */
#define MEMO 64                  /* per class: stage times by (tokens, items, emits) */

struct fast_memo { double tokens, items, emits; mp_time d; bool set; };

struct serve_walk {
    /* Formed at stage 0 at t0 − lag; lag is what it waited on the way. Its
     * times on each stage are at most t0 + the stage and hop times before
     * it (a wait delays every later stage at least as much), and exactly
     * that when lag = 0. */
    mp_time t0, lag;
    mp_time *d, *ser;            /* [classes] stage time; [hop classes] serialisation */
    mp_time maxd, maxser, span;  /* span: formed to the end on the last stage, unhindered */
};

struct fast_node { mp_time t, sched; int k; };

/* Per stage, in one array for the per-stage walk. */
struct fast_stage {
    mp_time free_at;             /* the stage is free after the previous walk */
    mp_time link_at;             /* the hand-off's links are free after it */
    mp_time lat;                 /* the hand-off's latency */
    int cls, hcls;               /* stage class, hand-off class */
};

struct serve_fast {
    int n_cls, n_hcls;
    int *cls, *cnt, *rep;        /* stage → class; stages per class; one stage of each */
    bool *ctx_dep;               /* a class's time depends on the KV context (full attention) */
    struct fast_memo *memo;      /* [classes × MEMO], context-free classes only */
    int *hcls, *hcnt;            /* hand-off s → s+1 → class (same bandwidth); hops per class */
    bool *has_link;              /* hand-off holds links */
    mp_time lat;                 /* Σ latencies of the hand-offs s → s+1 */
    double ser_tokens;           /* ser_of: serialisation per hop class for that many tokens */
    mp_time *ser_of;
    mp_time ret[POW_TAB];        /* return hop for n emitted tokens; −1 until asked */
    bool lean;                   /* every hand-off holds links: the plain per-stage loop */
    struct fast_stage *st;       /* [stages] */
    bool stale;                  /* st[].free_at, link_at lag the previous walk (it was clear) */
    bool last_end_lags;          /* stage reports' last_end are st[].free_at, not yet copied */
    /* Link convoys (walk, "Convoys"). mx: stages ≥ j0 are lazy — a
     * hand-off's true link-free time is st[].link_at + conv[its class], and
     * past j0 a stage's true free time is the true link-free time of the
     * hand-off into it + its latency + the previous walk's time there.
     * jf (not mx): from stage jf on the previous walk started each stage on
     * arrival. The anchor wrote st[] last in full; ad, aser are its times. */
    bool mx;
    int j0, jf;
    /* virt (with mx, j0 = 0): the anchor waited nowhere and st[] was never
     * brought up to it; its times are at0 + its offsets (aend: its end on
     * the last stage), and F0 is stage 0's true free time. */
    bool virt;
    mp_time at0, aend, F0;
    mp_time *conv, *ad, *aser;   /* [hop classes + 1], [classes], [hop classes + 1] */
    int n_tup, *tup_h, *tup_c2, *tup_h2; /* distinct (hcls s, cls s + 1, hcls s + 1 or −1) */
    struct serve_walk w[2];      /* w[cur] is being computed, w[cur ^ 1] came before */
    int cur;
    bool have_prev;
    mp_time *cbusy;              /* [classes] busy time of walks ended by the horizon */
    uint64_t walks;              /* walks whose passes are all in cbusy */
    /* Slots with a pending event (one each at most), by (time, scheduled
     * at). Pass ends come in the order the passes were formed (no pass
     * overtakes another), and returns nearly so (a fixed hop time per
     * token count), so each kind goes to a sorted run, a FIFO, when it is
     * no earlier than the run's last; only the others go to a binary heap.
     * The earliest is the least of the three heads. */
    struct fast_node *fifo[2];   /* [FAST_DONE], [FAST_RETURN]: rings of ring_n ≥ slots */
    unsigned fhead[2], ftail[2]; /* taken, put so far: index & (ring_n − 1) */
    struct fast_node *heap;
    int *pos, n_heap, *kind;     /* per slot: where in heap (−1: none), which event */
    unsigned ring_n;             /* a power of two ≥ slots: the rings' size */
    mp_time last_t, last_s;      /* key of the slot event handled last */
    bool tie;                    /* two slot events the keys cannot order */
    uint64_t events;
};

static bool same_layer(const struct serve_layer *a, const struct serve_layer *b)
{
    return a->kind == b->kind && a->attn == b->attn && a->fixed_bytes == b->fixed_bytes &&
           a->expert_bytes == b->expert_bytes && a->expert_frac == b->expert_frac &&
           a->matmul_params == b->matmul_params && a->attn_coef == b->attn_coef &&
           a->kv_per_token == b->kv_per_token && a->state == b->state &&
           a->hidden_bytes == b->hidden_bytes && a->row_bytes == b->row_bytes &&
           a->vocab == b->vocab && a->head_flops == b->head_flops;
}

static bool same_stage(const struct serve *s, int a, int b)
{
    int n = s->layer_off[a + 1] - s->layer_off[a];
    if (n != s->layer_off[b + 1] - s->layer_off[b]) return false;
    for (int i = 0; i < n; i++)
        if (!same_layer(&s->layers[s->layer_off[a] + i], &s->layers[s->layer_off[b] + i]))
            return false;
    return true;
}

/* Set up the fast loop, or leave s->fast NULL when a hand-off route shares a
 * link with another's (then links are contended out of walk order). */
static void fast_init(struct serve *s)
{
    int S = s->stages, K = s->slots;
    int *owner = mp_xmalloc(((size_t)s->sys.n_links + 1) * sizeof *owner);
    for (int i = 0; i <= s->sys.n_links; i++) owner[i] = -1;
    for (int st = 0; st + 1 < S; st++)
        for (int i = s->hop_route_off[st]; i < s->hop_route_off[st + 1]; i++) {
            int l = s->hop_route[i];
            if (owner[l] >= 0 && owner[l] != st) { free(owner); return; }
            owner[l] = st;
        }
    free(owner);
    struct serve_fast *f = mp_xcalloc(1, sizeof *f);
    s->fast = f;
    f->cls = mp_xmalloc((size_t)S * sizeof *f->cls);
    f->cnt = mp_xcalloc((size_t)S, sizeof *f->cnt);
    f->rep = mp_xmalloc((size_t)S * sizeof *f->rep);
    f->ctx_dep = mp_xcalloc((size_t)S, sizeof *f->ctx_dep);
    for (int st = 0; st < S; st++) {
        int c = 0;
        while (c < f->n_cls && !same_stage(s, f->rep[c], st)) c++;
        if (c == f->n_cls) {
            f->rep[f->n_cls++] = st;
            for (int i = s->layer_off[st]; i < s->layer_off[st + 1]; i++)
                if (s->layers[i].kind == LAYER_DECODER && s->layers[i].attn != ATTN_LINEAR)
                    f->ctx_dep[c] = true;
        }
        f->cls[st] = c;
        f->cnt[c]++;
    }
    f->memo = mp_xcalloc((size_t)f->n_cls * MEMO, sizeof *f->memo);
    f->hcls = mp_xcalloc((size_t)S, sizeof *f->hcls);
    f->hcnt = mp_xcalloc((size_t)S, sizeof *f->hcnt);
    f->has_link = mp_xcalloc((size_t)S, sizeof *f->has_link);
    int *hrep = mp_xmalloc((size_t)S * sizeof *hrep);
    for (int st = 0; st + 1 < S; st++) {
        int c = 0;
        while (c < f->n_hcls && s->hop_bw[hrep[c]] != s->hop_bw[st]) c++;
        if (c == f->n_hcls) hrep[f->n_hcls++] = st;
        f->hcls[st] = c;
        f->hcnt[c]++;
        f->has_link[st] = s->hop_route_off[st + 1] > s->hop_route_off[st];
        f->lat += s->hop[st];
    }
    free(hrep);
    f->st = mp_xcalloc((size_t)S, sizeof *f->st);
    f->lean = true;
    for (int st = 0; st < S; st++) {
        f->st[st] = (struct fast_stage){ 0, 0, st + 1 < S ? s->hop[st] : 0, f->cls[st],
                                         f->hcls[st] };
        if (st + 1 < S && !f->has_link[st]) f->lean = false;
    }
    for (int i = 0; i < 2; i++) {
        f->w[i].d = mp_xcalloc((size_t)f->n_cls, sizeof *f->w[i].d);
        f->w[i].ser = mp_xcalloc((size_t)f->n_hcls + 1, sizeof *f->w[i].ser);
    }
    f->tup_h = mp_xmalloc((size_t)S * sizeof *f->tup_h);
    f->tup_c2 = mp_xmalloc((size_t)S * sizeof *f->tup_c2);
    f->tup_h2 = mp_xmalloc((size_t)S * sizeof *f->tup_h2);
    for (int st = 0; st + 1 < S; st++) {
        int h = f->hcls[st], c2 = f->cls[st + 1], h2 = st + 2 < S ? f->hcls[st + 1] : -1, i = 0;
        while (i < f->n_tup && (f->tup_h[i] != h || f->tup_c2[i] != c2 || f->tup_h2[i] != h2))
            i++;
        if (i == f->n_tup) {
            f->tup_h[i] = h;
            f->tup_c2[i] = c2;
            f->tup_h2[i] = h2;
            f->n_tup++;
        }
    }
    f->conv = mp_xcalloc((size_t)f->n_hcls + 1, sizeof *f->conv);
    f->ad = mp_xcalloc((size_t)f->n_cls, sizeof *f->ad);
    f->aser = mp_xcalloc((size_t)f->n_hcls + 1, sizeof *f->aser);
    f->jf = S; /* no walk yet */
    f->cbusy = mp_xcalloc((size_t)f->n_cls, sizeof *f->cbusy);
    f->ser_tokens = -1;
    f->ser_of = mp_xcalloc((size_t)f->n_hcls + 1, sizeof *f->ser_of);
    for (int i = 0; i < POW_TAB; i++) f->ret[i] = -1;
    f->heap = mp_xmalloc((size_t)K * sizeof *f->heap);
    for (f->ring_n = 1; f->ring_n < (unsigned)K; f->ring_n *= 2) {}
    for (int q = 0; q < 2; q++) f->fifo[q] = mp_xmalloc(f->ring_n * sizeof *f->fifo[q]);
    f->pos = mp_xmalloc((size_t)K * sizeof *f->pos);
    for (int k = 0; k < K; k++) f->pos[k] = -1;
    f->kind = mp_xcalloc((size_t)K, sizeof *f->kind);
    f->last_t = f->last_s = -1;
}

static void fast_release(struct serve_fast *f)
{
    if (!f) return;
    free(f->cls); free(f->cnt); free(f->rep); free(f->ctx_dep); free(f->memo);
    free(f->hcls); free(f->hcnt); free(f->has_link); free(f->st);
    for (int i = 0; i < 2; i++) { free(f->w[i].d); free(f->w[i].ser); }
    free(f->tup_h); free(f->tup_c2); free(f->tup_h2); free(f->conv); free(f->ad); free(f->aser);
    free(f->cbusy); free(f->ser_of); free(f->heap); free(f->pos); free(f->kind);
    free(f->fifo[0]); free(f->fifo[1]);
    free(f);
}

/* ---- slots with a pending event: a binary heap on (time, scheduled at) */

static bool node_less(const struct fast_node *a, const struct fast_node *b)
{
    return a->t != b->t ? a->t < b->t : a->sched < b->sched;
}

static void heap_put(struct serve_fast *f, int i, struct fast_node n)
{
    f->heap[i] = n;
    f->pos[n.k] = i;
}

/* Put node n at position i, moved up or down to its place. */
static void heap_fix(struct serve_fast *f, int i, struct fast_node n)
{
    while (i > 0 && node_less(&n, &f->heap[(i - 1) / 2])) {
        heap_put(f, i, f->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        int c = 2 * i + 1;
        if (c >= f->n_heap) break;
        if (c + 1 < f->n_heap && node_less(&f->heap[c + 1], &f->heap[c])) c++;
        if (!node_less(&f->heap[c], &n)) break;
        heap_put(f, i, f->heap[c]);
        i = c;
    }
    heap_put(f, i, n);
}

static void slot_event(struct serve_fast *f, int k, int kind, mp_time t, mp_time sched)
{
    f->kind[k] = kind;
    struct fast_node n = { t, sched, k };
    int q = kind;
    unsigned m = f->ring_n - 1;
    if (f->ftail[q] == f->fhead[q] || !node_less(&n, &f->fifo[q][(f->ftail[q] - 1) & m])) {
        f->fifo[q][f->ftail[q]++ & m] = n;
        return;
    }
    f->pos[k] = f->n_heap++;
    heap_fix(f, f->pos[k], n);
}

/* Where the earliest pending slot event is: a FIFO (0, 1), the heap (2),
 * or none (−1). */
static int slot_peek(const struct serve_fast *f, const struct fast_node **top)
{
    int src = -1;
    const struct fast_node *b = NULL;
    unsigned m = f->ring_n - 1;
    for (int q = 0; q < 2; q++)
        if (f->ftail[q] != f->fhead[q] && (!b || node_less(&f->fifo[q][f->fhead[q] & m], b))) {
            b = &f->fifo[q][f->fhead[q] & m];
            src = q;
        }
    if (f->n_heap > 0 && (!b || node_less(&f->heap[0], b))) {
        b = &f->heap[0];
        src = 2;
    }
    *top = b;
    return src;
}

static void slot_pop(struct serve_fast *f, int src)
{
    if (src < 2) {
        f->fhead[src]++;
        return;
    }
    f->pos[f->heap[0].k] = -1;
    if (--f->n_heap > 0) heap_fix(f, 0, f->heap[f->n_heap]);
}

/* ---- walks */

/* Time of slot k's pass on a stage of class c. */
static mp_time class_time(struct serve *s, int c, const struct serve_slot *sl)
{
    struct serve_fast *f = s->fast;
    if (f->ctx_dep[c])
        return sum_time(s, f->rep[c], sl->tokens, sl->pairs, sl->ctx, sl->items, sl->emits);
    /* Without full attention the time depends on tokens, items and emits
     * only, which repeat from pass to pass. */
    unsigned h = (unsigned)sl->tokens * 2654435761u ^ (unsigned)sl->items * 40503u ^
                 (unsigned)sl->emits;
    struct fast_memo *m = &f->memo[(size_t)c * MEMO + h % MEMO];
    if (!m->set || m->tokens != sl->tokens || m->items != sl->items || m->emits != sl->emits)
        *m = (struct fast_memo){ sl->tokens, sl->items, sl->emits,
                                 sum_time(s, f->rep[c], sl->tokens, 0, 0, sl->items, sl->emits),
                                 true };
    return m->d;
}

/* st[] holds walk a's times on every stage, and a started every stage
 * from jf on when it arrived there: a is the anchor, nothing is lazy. */
static void mx_reset(struct serve_fast *f, const struct serve_walk *a, int jf)
{
    if (f->mx) memset(f->conv, 0, ((size_t)f->n_hcls + 1) * sizeof *f->conv);
    f->mx = f->virt = false;
    f->j0 = 0;
    f->jf = jf;
    memcpy(f->ad, a->d, (size_t)f->n_cls * sizeof *f->ad);
    memcpy(f->aser, a->ser, ((size_t)f->n_hcls + 1) * sizeof *f->aser);
}

/* Convoys. Walk w has just ended its pass on stage s ≤ S − 2 no later than
 * the link there frees after the previous walk p (true time L): its hop
 * starts at L, so it reaches s + 1 at L + ser + lat (ser, d: w's times;
 * primes: stage s + 1 and the hand-off out of it). Where p started s + 1
 * on arrival (past j0, or from jf), p ended there at L + lat + dp'. If
 * ser ≥ dp', w too starts s + 1 on arrival and ends at L + ser + lat + d';
 * if that is no later than p's true link-free time L' on s + 1, w's hop
 * waits for the link again, and so on by induction to the last stage: each
 * hop of w frees its link ser after p's, each stage w ends its hop's
 * arrival + d. L' ≥ (p's end on s + 1) + serp' = L + lat + dp' + serp',
 * and, the anchor A having reached s + 1 at its own link-free time + lat
 * and held the link for its serialisation, L' − L ≥ lat + dA' + serA' +
 * conv' − conv. So per distinct (hop class of s, class of s + 1, hop
 * class of s + 1) this suffices: ser ≥ dp' and ser + d' at most the larger
 * of dp' + serp' and dA' + serA' + conv' − conv. Nothing is assumed about
 * the sizes of w and p: the sums decide. */
static bool conv_holds(const struct serve_fast *f, const struct serve_walk *w,
                       const struct serve_walk *p)
{
    for (int i = 0; i < f->n_tup; i++) {
        int h = f->tup_h[i], c2 = f->tup_c2[i], h2 = f->tup_h2[i];
        if (w->ser[h] < p->d[c2]) return false;
        if (h2 < 0) continue;
        mp_time a = p->d[c2] + p->ser[h2];
        mp_time b = f->ad[c2] + f->aser[h2] + f->conv[h2] - f->conv[h];
        if (w->ser[h] + w->d[c2] > (a > b ? a : b)) return false;
    }
    return true;
}

/* Walk w joins the convoy at stage j (conv_holds): from j on its hops free
 * their links ser after the previous walk's; stages past j are lazy. */
static void conv_join(struct serve_fast *f, const struct serve_walk *w, int j)
{
    for (int h = 0; h <= f->n_hcls; h++) f->conv[h] += w->ser[h];
    f->mx = true;
    f->j0 = j;
}

/* Write walk w's times on every stage into st[] (w waited nowhere: each
 * time is t0 plus the stage and hop times before it). */
static void fast_write(struct serve *s, const struct serve_walk *w)
{
    struct serve_fast *f = s->fast;
    mp_time t = w->t0;
    for (int st = 0; st < s->stages; st++) {
        struct fast_stage *x = &f->st[st];
        mp_time end = t + w->d[x->cls];
        x->free_at = end;
        if (st + 1 == s->stages) break;
        mp_time link = end + w->ser[x->hcls];
        if (f->has_link[st]) x->link_at = link;
        t = link + x->lat;
    }
}

/* Write the virtual anchor's times into st[], and stage 0's true free time. */
static void virt_write(struct serve *s)
{
    struct serve_fast *f = s->fast;
    struct serve_walk a = { .t0 = f->at0, .d = f->ad, .ser = f->aser };
    fast_write(s, &a);
    f->st[0].free_at = f->F0;
    f->virt = false;
}

/* Walk w has caught up at stage 0 (its hop there waits for the link) and
 * conv_holds: it joins the convoy at stage 0 without touching st[] (virt:
 * the anchor's link-free time there is at0 + dA + serA). Its end on the
 * last stage is the anchor's hop into it (aend − dA there) plus the
 * convoy's serialisations on that hop plus its own time there. */
static void virt_join(struct serve_fast *f, const struct serve_walk *w, int S, mp_time e0,
                      mp_time *start, mp_time *end)
{
    conv_join(f, w, 0);
    f->virt = true;
    f->F0 = e0;
    int last = f->cls[S - 1];
    *end = f->aend - f->ad[last] + f->conv[f->hcls[S - 2]] + w->d[last];
    *start = *end - w->d[last];
}

/* Bring st[] and the stage reports' last_end up to the previous walk. */
static void fast_sync(struct serve *s)
{
    struct serve_fast *f = s->fast;
    const struct serve_walk *p = &f->w[f->cur ^ 1];
    if (f->stale) {
        fast_write(s, p);
        mx_reset(f, p, 0); /* it waited nowhere */
    } else if (f->mx) {
        if (f->virt) virt_write(s);
        /* The lazy stages' true times (fast_init's fields above). */
        mp_time L = 0;
        for (int st = f->j0; st < s->stages; st++) {
            struct fast_stage *x = &f->st[st];
            if (st > f->j0) x->free_at = L + x[-1].lat + p->d[x->cls];
            if (st + 1 < s->stages) L = x->link_at += f->conv[x->hcls];
        }
        mx_reset(f, p, f->j0 + 1);
    }
    f->stale = false;
    if (f->last_end_lags)
        for (int st = 0; st < s->stages; st++) s->res.stage[st].last_end = f->st[st].free_at;
    f->last_end_lags = false;
}

/* Slot k's pass, formed at `now`, down the whole chain; its end on the last
 * stage becomes the slot's pending event. */
static void walk(struct serve *s, int k, mp_time now)
{
    struct serve_fast *f = s->fast;
    const struct serve_slot *sl = &s->slot[k];
    struct serve_walk *w = &f->w[f->cur], *p = &f->w[f->cur ^ 1];
    int S = s->stages, last = f->cls[S - 1];
    mp_time H = s->cfg.inference.horizon;
    w->t0 = now;
    w->maxd = w->maxser = 0;
    w->span = f->lat;
    mp_time shortfall = 0; /* Σ max(0, p's time − its own) over stages and hops (below) */
    for (int c = 0; c < f->n_cls; c++) {
        mp_time d = class_time(s, c, sl);
        w->d[c] = d;
        if (d > w->maxd) w->maxd = d;
        w->span += f->cnt[c] * d;
        if (p->d[c] > d) shortfall += f->cnt[c] * (p->d[c] - d);
    }
    if (sl->tokens != f->ser_tokens) { /* as serve_hop_time, less the latency */
        double b = hop_bytes(s, 0, (int)sl->tokens);
        for (int c = 0; c < f->n_hcls; c++) {
            int st = 0;
            while (f->hcls[st] != c) st++;
            double bw = s->hop_bw[st];
            f->ser_of[c] = isinf(bw) ? 0 : (mp_time)llround(b / bw * 1e12);
        }
        f->ser_tokens = sl->tokens;
    }
    for (int c = 0; c < f->n_hcls; c++) {
        mp_time x = f->ser_of[c];
        w->ser[c] = x;
        if (x > w->maxser) w->maxser = x;
        w->span += f->hcnt[c] * x;
        if (p->ser[c] > x) shortfall += f->hcnt[c] * (p->ser[c] - x);
    }
    /* Stage busy and passes go by class unless a horizon may cut the walk:
     * then per stage, for the passes that start by it. */
    bool by_class = H <= 0;
    bool started = s->res.stage[S - 1].first_start >= 0;
    /* Clear of the walk before it p if on every stage it arrives no earlier
     * than p leaves, and ends its pass no earlier than p's hop frees the
     * link. p's times are at most p.t0 + its offsets; behind p by
     * now − p.t0, its own offsets fall short of p's by at most
     * Σ max(0, p's stage or hop time − its own): so that sum plus p's
     * longest stage time and its own longest serialisation is enough. */
    bool lazy = false;
    if (f->have_prev && started && (H <= 0 || now + w->span <= H))
        lazy = now - p->t0 >= shortfall + (p->maxd > w->maxser ? p->maxd : w->maxser);
    mp_time end, start;
    if (lazy) {
        end = now + w->span; /* exact: it waits nowhere, so ends by any horizon */
        start = end - w->d[last];
        f->stale = true;
        if (f->mx) mx_reset(f, w, 0); /* st[] is stale whole: nothing lazy left */
        f->last_end_lags = true;
        by_class = true;
    } else if (f->lean && started && H <= 0) {
        /* Stage by stage, with nothing to record: the stage reports get
         * last_end from st[] later, busy and passes by class. */
        f->last_end_lags = true;
        const mp_time *d = w->d, *ser = w->ser;
        mp_time t = now;
        start = end = now;
        bool vjoined = false;
        if (f->stale && S >= 2) {
            /* p waited nowhere. If this walk's hop on stage 0 waits for
             * p's, p becomes the (virtual) anchor and this walk may join
             * the convoy there; nothing lazy is left (the clear walk reset
             * it), so conv is zero. */
            struct fast_stage *x0 = f->st;
            mp_time pend = p->t0 + p->d[x0->cls];
            mp_time e0 = (now > pend ? now : pend) + d[x0->cls];
            if (e0 <= pend + p->ser[x0->hcls]) {
                memcpy(f->ad, p->d, (size_t)f->n_cls * sizeof *f->ad);
                memcpy(f->aser, p->ser, ((size_t)f->n_hcls + 1) * sizeof *f->aser);
                f->jf = 0;
                if (conv_holds(f, w, p)) {
                    f->at0 = p->t0;
                    f->aend = p->t0 + p->span;
                    virt_join(f, w, S, e0, &start, &end);
                    f->stale = false;
                    vjoined = true;
                }
            }
        } else if (f->virt) {
            /* The same at stage 0 behind the last walk of a virtual convoy. */
            struct fast_stage *x0 = f->st;
            mp_time L = f->at0 + f->ad[x0->cls] + f->aser[x0->hcls] + f->conv[x0->hcls];
            mp_time e0 = (now > f->F0 ? now : f->F0) + d[x0->cls];
            if (e0 <= L && conv_holds(f, w, p)) {
                virt_join(f, w, S, e0, &start, &end);
                vjoined = true;
            } else {
                virt_write(s);
            }
        }
        if (vjoined) {
            /* Joined at stage 0: nothing per stage. */
        } else if (f->stale) {
            /* p waited nowhere: its times come from its offsets, here
             * rather than through st[] (fast_write) first. */
            const mp_time *pd = p->d, *pser = p->ser;
            mp_time tp = p->t0;
            /* The last stage outside the loop: no test per stage. */
            struct fast_stage *x = f->st, *xe = f->st + S - 1;
            int kf = -1; /* last stage it waited on */
            for (; x < xe; x++) {
                mp_time pend = tp + pd[x->cls];
                if (pend > t) kf = (int)(x - f->st);
                start = t > pend ? t : pend;
                end = start + d[x->cls];
                x->free_at = end;
                mp_time plink = pend + pser[x->hcls];
                mp_time link = end > plink ? end : plink;
                x->link_at = link + ser[x->hcls];
                t = x->link_at + x->lat;
                tp = plink + x->lat;
            }
            mp_time pend = tp + pd[x->cls];
            if (pend > t) kf = S - 1;
            start = t > pend ? t : pend;
            end = start + d[x->cls];
            x->free_at = end;
            f->stale = false;
            mx_reset(f, w, kf + 1);
        } else {
            /* Stages before j0 hold the previous walk's times, later ones
             * are lazy (mx). Where this walk's hop waits for the link and
             * conv_holds, it stays so to the end: it joins the convoy. */
            struct fast_stage *x = f->st, *xe = f->st + S - 1;
            struct fast_stage *xj = f->mx ? f->st + f->j0 : xe;
            struct fast_stage *xf = f->st + (f->mx ? S : f->jf > 0 ? f->jf - 1 : 0);
            int holds = -1, kf = -1; /* conv_holds once asked; last stage waited on */
            bool joined = false;
            for (; x < xj; x++) {
                mp_time F = x->free_at;
                if (F > t) { kf = (int)(x - f->st); start = F; } else start = t;
                end = start + d[x->cls];
                x->free_at = end;
                mp_time L = x->link_at;
                if (end <= L && x >= xf && (holds < 0 ? (holds = conv_holds(f, w, p)) : holds)) {
                    conv_join(f, w, (int)(x - f->st));
                    joined = true;
                    break;
                }
                mp_time link = end > L ? end : L;
                x->link_at = link + ser[x->hcls];
                t = x->link_at + x->lat;
            }
            if (!joined && f->mx) {
                /* The lazy stages: true times from conv and the previous
                 * walk's, read before this walk overwrites them. */
                mp_time Lprev = 0;
                for (;; x++) {
                    mp_time F = x == xj ? x->free_at : Lprev + x[-1].lat + p->d[x->cls];
                    if (F > t) { kf = (int)(x - f->st); start = F; } else start = t;
                    end = start + d[x->cls];
                    x->free_at = end;
                    if (x == xe) break;
                    mp_time L = x->link_at + f->conv[x->hcls];
                    if (end <= L && (holds < 0 ? (holds = conv_holds(f, w, p)) : holds)) {
                        conv_join(f, w, (int)(x - f->st));
                        joined = true;
                        break;
                    }
                    Lprev = L;
                    mp_time link = end > L ? end : L;
                    x->link_at = link + ser[x->hcls];
                    t = x->link_at + x->lat;
                }
            } else if (!joined) {
                mp_time F = x->free_at;
                if (F > t) { kf = S - 1; start = F; } else start = t;
                end = start + d[x->cls];
                x->free_at = end;
            }
            if (joined) {
                /* Its end on the last stage: the last hop's true link-free
                 * time (now with this walk's serialisation), its latency,
                 * its stage time there. */
                struct fast_stage *y = xe - 1;
                end = y->link_at + f->conv[y->hcls] + y->lat + d[xe->cls];
                start = end - d[xe->cls];
            } else {
                mx_reset(f, w, kf + 1);
            }
        }
    } else {
        fast_sync(s);
        mp_time t = now;
        start = end = now;
        for (int st = 0; st < S; st++) {
            struct fast_stage *x = &f->st[st];
            mp_time d = w->d[x->cls];
            start = t > x->free_at ? t : x->free_at;
            end = start + d;
            x->free_at = end;
            struct serve_stage_report *rep = &s->res.stage[st];
            if (H <= 0 || start <= H) {
                if (rep->first_start < 0) rep->first_start = start;
                if (!by_class) { rep->busy += d; rep->passes++; }
            }
            if (H <= 0 || end <= H) rep->last_end = end;
            if (st + 1 == S) break;
            mp_time link = end;
            if (f->has_link[st]) {
                if (x->link_at > link) link = x->link_at;
                x->link_at = link + w->ser[x->hcls];
            }
            t = link + w->ser[x->hcls] + x->lat;
        }
        mx_reset(f, w, S); /* where it started on arrival is not tracked here */
    }
    w->lag = end - (now + w->span); /* ≥ 0; a wait anywhere shows here */
    w->t0 = now + w->lag;
    if (by_class) {
        for (int c = 0; c < f->n_cls; c++) f->cbusy[c] += w->d[c];
        f->walks++;
    }
    f->cur ^= 1;
    f->have_prev = true;
    slot_event(f, k, FAST_DONE, end, start);
}

/* The loop: arrivals from the request array (in arrival order), slot events
 * from the heap; pass events first at equal times, as in handle(). */
static void fast_run(struct serve *s)
{
    struct serve_fast *f = s->fast;
    mp_time H = s->cfg.inference.horizon;
    int next = 0;
    for (;;) {
        mp_time ta = next < s->n_req ? s->req[next].arrival : INT64_MAX;
        const struct fast_node *top;
        int src = slot_peek(f, &top);
        bool slot = src >= 0 && top->t <= ta;
        if (!slot && next >= s->n_req) break;
        mp_time now = slot ? top->t : ta;
        if (H > 0 && now > H) break;
        s->now = now;
        f->events++;
        if (!slot) {
            int at = (s->wait_head + s->wait_n) % s->n_req;
            s->waiting[at] = next++;
            s->wait_n++;
            if (s->wait_n > s->res.max_waiting) s->res.max_waiting = s->wait_n;
            wake_idle(s, now);
            continue;
        }
        int k = top->k;
        if (top->t == f->last_t && top->sched == f->last_s) {
            f->tie = true;
            return;
        }
        f->last_t = top->t;
        f->last_s = top->sched;
        slot_pop(f, src); /* top is stale from here */
        if (f->kind[k] == FAST_DONE) {
            int emits = (int)s->slot[k].emits;
            if (emits < 1) emits = 1;
            emit(s, k, now);
            mp_time back = emits < POW_TAB ? f->ret[emits] : -1;
            if (back < 0) back = serve_hop_time(s, s->stages - 1, emits);
            if (emits < POW_TAB) f->ret[emits] = back;
            slot_event(f, k, FAST_RETURN, now + back, now);
            wake_idle(s, now); /* memory may have been freed */
        } else {
            launch(s, k, now);
        }
    }
    if (H > 0) { /* the horizon event */
        f->events++;
        if (s->res.completed < s->n_req) s->res.makespan = H;
    }
    fast_sync(s);
    for (int st = 0; st < s->stages; st++) {
        s->res.stage[st].busy += f->cbusy[f->cls[st]];
        s->res.stage[st].passes += f->walks;
    }
    s->res.events = f->events;
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
    if ((rc = config_resolve(c, c->hardware.system, "hardware/systems", ".ini", path,
                             sizeof path, err)) ||
        (rc = system_load(&s->sys, path, c->hardware.nodes, s->stages, &s->catalog, err)))
        return rc;
    s->has_sys = true;
    s->stage_chip = mp_xmalloc((size_t)s->stages * sizeof *s->stage_chip);
    for (int st = 0; st < s->stages; st++) s->stage_chip[st] = st;
    price_layers(s);
    build_hops(s);
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
    rc = c->inference.arrivals == ARRIVALS_TRACE ? trace_requests(s, err) : poisson_requests(s);
    if (rc) return rc;
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
                    struct mp_error *err)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    if (record) s->rec = mp_xcalloc(1, sizeof *s->rec);
    gsl_set_error_handler_off();
    int rc = config_check(&s->cfg, err);
    if (!rc) rc = setup(s, err);
    if (rc) return rc;

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
    if (!record && !events) fast_init(s);
    if (s->fast) {
        fast_run(s);
        if (s->fast->tie) return MP_OK; /* serve_run_recorded starts over */
    } else {
        /* All arrivals go in up front: the heap holds them, and the loop
         * stays free of allocation. */
        for (int i = 0; i < s->n_req; i++) schedule(s, s->req[i].arrival, EV_ARRIVAL, i);
        if (s->cfg.inference.horizon > 0) schedule(s, s->cfg.inference.horizon, EV_HORIZON, 0);
        eventq_run(&s->q, handle, s);
    }
    fold(s);
    return MP_OK;
}

int serve_run_recorded(struct serve *s, const struct config *cfg, bool record,
                       struct mp_error *err)
{
    double t0 = mp_wall_seconds();
    int rc = run_mode(s, cfg, record, false, err);
    if (!rc && s->fast && s->fast->tie) {
        serve_release(s);
        rc = run_mode(s, cfg, record, true, err);
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
    fast_release(s->fast);
    free(s->res.kv_log);
    free(s->res.stage);
    if (s->rec) {
        free(s->rec->pass);
        free(s->rec->hop);
        free(s->rec->kv);
        free(s->rec);
    }
    memset(s, 0, sizeof *s);
}
