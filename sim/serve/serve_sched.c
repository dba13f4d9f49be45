/* serve_sched.c — each replica's scheduler: what a slot's next pass
 * carries. A registry like the pipeline schedules' (a const table looked up
 * by name, `inference.scheduler`); each entry says which real system it
 * mirrors. See serve.h ("Microbatches", "Memory").
 *
 * Every scheduler fills a pass from three groups, in an order of its own:
 *   decodes   members that have their whole sequence's KV but its last token:
 *             one token each (1 + k with speculative decoding: the draft's k
 *             proposals verified in one forward);
 *   prefills  members part way through a prompt (chunked prefill) or a
 *             recompute after preemption: as many tokens as the budget leaves
 *             (chunked_prefill) or the whole rest when it fits (or the pass
 *             is empty);
 *   admits    waiting requests, first come first served (the priority
 *             scheduler: by class, then arrival), while seats (micro_batch =
 *             max_num_seqs), the token budget (token_budget =
 *             max_num_batched_tokens) and memory allow.
 * Memory. kv_cache = reserve: an admission needs prompt + output tokens of KV
 * on every stage; when the head of the queue does not fit, admission waits
 * (no preemption). kv_cache = paged: each scheduled token needs a block slot
 * in the slot's pool; when one cannot be had, the latest-admitted member not
 * yet scheduled this pass (vLLM V1's running.pop()) — or the lowest-priority
 * one — is preempted: recompute drops its KV and puts it at the front of the
 * queue, to prefill its prompt and the output so far again; swap copies its
 * KV to host memory (priced on the [host] link as part of this pass) and
 * back when it is admitted again. A pass that preempted admits nobody (as
 * vLLM V1). An admission takes its cached prefix first (serve_kv.c). */
#include "serve_impl.h"

#include <math.h>
#include <string.h>

enum sched_mode { MODE_MIXED, MODE_PREFILL_FIRST, MODE_DECODE_FIRST };

/* Tokens a prefill of `rem` prompt tokens carries when `used` of the budget
 * is taken. */
static int prefill_chunk(const struct serve *s, int rem, double used)
{
    double left = serve_budget(s) - used;
    if (s->cfg.inference.chunked_prefill) return left <= 0 ? 0 : rem < left ? rem : (int)left;
    return rem <= left || used == 0 ? rem : 0;
}

static bool is_decode(const struct serve_request *r)
{
    return r->generated > 0 && r->kv + 1 == serve_seq(r);
}

struct former {
    struct serve *s;
    int k, rep, mb, kspec;
    int *mem;
    double T;                /* tokens scheduled (for the budget and pricing) */
    bool paged, preempted, stop;
    bool priority;
    int rest;                /* after run_decodes: members left for run_prefills (−1: unknown) */
};

/* Tokens a member's chunk costs in the pass (speculation verifies k more). */
static int priced_tokens(const struct former *f, const struct serve_request *r)
{
    return f->kspec > 0 && is_decode(r) && r->chunk == 1 ? 1 + f->kspec : r->chunk;
}

static int n_members(const struct former *f)
{
    int n = 0;
    for (int i = 0; i < f->s->slot[f->k].n; i++)
        if (f->s->req[f->mem[i]].chunk >= 0) n++;
    return n;
}

/* Preempt member i of the slot (paged KV ran out). */
static void preempt(struct former *f, int i)
{
    struct serve *s = f->s;
    struct serve_request *v = &s->req[f->mem[i]];
    struct serve_slot *sl = &s->slot[f->k];
    if (v->chunk > 0) f->T -= priced_tokens(f, v);
    const struct serve_pool *P = &s->pool[s->rep[f->rep].pool];
    bool swap = s->cfg.inference.preemption == PREEMPT_SWAP && v->kv > 0;
    if (swap) {
        /* The host keeps swap_space per chip; the stage with the most KV per
         * token fills first. */
        double per = 0;
        for (int st = 0; st < P->stages; st++) {
            double b = P->block_bytes[st] / s->cfg.inference.block_size;
            if (b > per) per = b;
        }
        if ((s->kvp[f->k].host_tokens + v->kv) * per > s->cfg.inference.swap_space) swap = false;
    }
    serve_kv_free(s, f->k, v, false);
    if (swap) {
        s->kvp[f->k].host_tokens += v->kv;
        sl->swap_tokens += v->kv;
        v->swapped = true;
        s->res.swaps_out++;
        for (int st = 0; st < P->stages; st++)
            s->res.swap_bytes += (double)v->kv * P->block_bytes[st] / s->cfg.inference.block_size;
    } else {
        v->kv = 0;
    }
    v->chunk = -1; /* out of the slot when the pass is formed */
    v->slot = -1;
    v->preempted++;
    s->inflight--;
    s->res.preemptions++;
    s->rep[f->rep].preemptions++;
    serve_wait_push(s, f->rep, (int)(v - s->req), true);
    f->preempted = true;
}

/* The member to preempt so that member `cur` can have its tokens: the
 * latest-admitted one not yet scheduled this pass (vLLM V1), or with
 * priorities the lowest class, latest arrival, scheduled or not. */
static int victim(const struct former *f, int cur)
{
    const struct serve *s = f->s;
    const struct serve_slot *sl = &s->slot[f->k];
    int best = -1;
    for (int i = sl->n - 1; i >= 0; i--) {
        const struct serve_request *r = &s->req[f->mem[i]];
        if (r->chunk < 0) continue;
        if (!f->priority) {
            if (i == cur || r->chunk == 0) return i;
            continue;
        }
        const struct serve_request *b = best >= 0 ? &s->req[f->mem[best]] : NULL;
        if (!b || r->prio > b->prio || (r->prio == b->prio && r->arrival > b->arrival)) best = i;
    }
    return best;
}

/* Member i wants to hold `tokens` tokens of KV; preempt until it can, or
 * until it is the one preempted (then the pass stops taking running
 * members). Returns whether it holds them. */
static bool hold(struct former *f, int i, int tokens)
{
    struct serve *s = f->s;
    struct serve_request *r = &s->req[f->mem[i]];
    if (!f->paged) return true;
    /* Its blocks already hold them (serve_kv_grow's first test, without
     * the call): most decode steps stay inside the last block. */
    int B = s->cfg.inference.block_size;
    if (r->slot >= 0 && ((int64_t)tokens + B - 1) / B - r->shared - r->blocks <= 0) return true;
    while (!serve_kv_grow(s, f->k, r, tokens)) {
        int v = victim(f, i);
        if (v < 0) return false;
        preempt(f, v);
        if (v == i) {
            f->stop = true;
            return false;
        }
    }
    return true;
}

static void run_decodes(struct former *f)
{
    struct serve *s = f->s;
    int rest = 0;
    for (int i = 0; i < s->slot[f->k].n && !f->stop; i++) {
        struct serve_request *r = &s->req[f->mem[i]];
        if (r->chunk != 0) continue;
        if (!is_decode(r)) {
            rest++;
            continue;
        }
        if (!hold(f, i, r->kv + 1 + f->kspec)) continue;
        r->chunk = 1;
        f->T += priced_tokens(f, r);
    }
    /* Every member was looked at (or the pass stopped, and run_prefills
     * takes none): a preemption only takes members out. */
    f->rest = rest;
}

static void run_prefills(struct former *f)
{
    struct serve *s = f->s;
    if (f->rest == 0) return; /* run_decodes saw no member needing prompt work */
    for (int i = 0; i < s->slot[f->k].n && !f->stop; i++) {
        struct serve_request *r = &s->req[f->mem[i]];
        if (r->chunk != 0 || is_decode(r)) continue;
        int c = prefill_chunk(s, serve_seq(r) - r->kv, f->T);
        if (c == 0 || !hold(f, i, r->kv + c)) continue;
        r->chunk = c;
        f->T += c;
    }
}

static void admit(struct former *f)
{
    struct serve *s = f->s;
    struct serve_slot *sl = &s->slot[f->k];
    int cap = s->cfg.inference.concurrency;
    if (f->preempted) return; /* vLLM V1: no admissions in a step that preempted */
    while (n_members(f) < f->mb && serve_wait_n(s, f->rep) > 0 &&
           (cap == 0 || s->inflight < cap)) {
        int id = serve_wait_head(s, f->rep);
        struct serve_request *r = &s->req[id];
        int hit = 0;
        if (f->paged && s->tree && !r->swapped && r->kv == 0)
            hit = serve_prefix_lookup(s, f->k, r, false);
        /* KV it has: swapped out, or sent from a prefill replica. */
        int kv0 = r->kv, start = r->kv > 0 ? r->kv : hit;
        int rem = serve_seq(r) - start;
        int c = prefill_chunk(s, rem, f->T);
        if (c == 0) break;
        bool decode = r->generated > 0 && rem == 1;
        if (!f->paged) {
            if (!serve_kv_fits(s, r)) {
                s->res.kv_blocked++;
                break;
            }
        } else {
            if (hit > 0) serve_prefix_lookup(s, f->k, r, true);
            r->kv = start;
            if (!serve_kv_grow(s, f->k, r, start + c + (decode ? f->kspec : 0))) {
                serve_kv_free(s, f->k, r, false);
                r->kv = kv0;
                s->res.kv_blocked++;
                break;
            }
        }
        serve_wait_pop(s, f->rep);
        r->slot = f->k;
        r->chunk = c;
        f->mem[sl->n++] = id;
        f->T += priced_tokens(f, r);
        if (!f->paged) serve_kv_reserve(s, r, +1);
        if (r->swapped) {
            s->kvp[f->k].host_tokens -= r->kv;
            sl->swap_tokens += r->kv;
            r->swapped = false;
            s->res.swaps_in++;
            const struct serve_pool *P = &s->pool[s->rep[f->rep].pool];
            for (int st = 0; st < P->stages; st++)
                s->res.swap_bytes += (double)r->kv * P->block_bytes[st] / s->cfg.inference.block_size;
        }
        if (s->tree && r->preempted == 0 && r->admitted < 0) {
            s->res.prefix_lookups++;
            s->res.prefix_query_tokens += r->prompt;
            s->res.prefix_hit_tokens += hit;
            if (hit > 0) s->res.prefix_hit_requests++;
        }
        if (r->admitted < 0) {
            r->admitted = s->now;
            s->res.admitted++;
        }
        s->inflight++;
        if (s->inflight > s->res.max_inflight) s->res.max_inflight = s->inflight;
    }
}

/* The pass's totals for pricing; preempted members leave the slot. */
static void finish(struct former *f)
{
    struct serve *s = f->s;
    struct serve_slot *sl = &s->slot[f->k];
    int kept = 0;
    for (int i = 0; i < sl->n; i++)
        if (s->req[f->mem[i]].chunk >= 0) f->mem[kept++] = f->mem[i];
        else s->req[f->mem[i]].chunk = 0;
    sl->n = kept;
    static const struct kernel_batch empty; /* copied, not memset: no rep stos */
    sl->b = empty;
    sl->spec_items = sl->spec_ctx = 0;
    for (int i = 0; i < sl->n; i++) {
        const struct serve_request *r = &s->req[f->mem[i]];
        if (r->chunk == 0) continue;
        double past = r->kv, tok = priced_tokens(f, r);
        bool decode = is_decode(r), emits = r->kv + r->chunk == serve_seq(r);
        serve_batch_add(s, &sl->b, tok, past, decode, emits);
        if (tok != r->chunk) {
            /* A speculative step: the draft proposes for it, and the
             * model's LM head scores all k + 1 positions to verify them. */
            sl->spec_items++;
            sl->spec_ctx += past;
            sl->b.emits += tok - 1;
        }
    }
    sl->b.tokens = f->T;
}

static void form(struct serve *s, int k, enum sched_mode mode, bool priority)
{
    struct serve_slot *sl = &s->slot[k];
    struct former f = {
        .s = s, .k = k, .rep = s->slot_rep[k], .mb = serve_mb(s), .kspec = serve_spec_k(s),
        .mem = &s->members[(size_t)k * serve_mb(s)],
        .paged = s->cfg.inference.kv_cache == KV_PAGED, .priority = priority, .rest = -1,
    };
    sl->swap_tokens = 0;
    for (int i = 0; i < sl->n; i++) s->req[f.mem[i]].chunk = 0;
    int waiting = serve_wait_n(s, f.rep);
    switch (mode) {
    case MODE_MIXED:
        run_decodes(&f);
        run_prefills(&f);
        admit(&f);
        break;
    case MODE_PREFILL_FIRST: {
        /* A prefill step while there is prompt work; decodes wait. */
        bool mid = false;
        for (int i = 0; i < sl->n; i++)
            if (!is_decode(&s->req[f.mem[i]])) mid = true;
        if (mid || (waiting > 0 && sl->n < f.mb)) {
            run_prefills(&f);
            admit(&f);
        }
        if (f.T == 0) run_decodes(&f);
        break;
    }
    case MODE_DECODE_FIRST: {
        /* TGI: new requests join when the queue is long enough against the
         * batch, or after max_waiting_tokens decode steps. */
        const struct config_inference *in = &s->cfg.inference;
        int min = (int)floor(sl->n * in->waiting_served_ratio);
        bool allow = sl->n == 0 || sl->waited >= in->max_waiting_tokens ||
                     (waiting > 0 && waiting >= min);
        if (allow && waiting > 0) {
            run_prefills(&f);
            admit(&f);
            if (f.T > 0) sl->waited = 0;
        }
        if (f.T == 0) {
            run_decodes(&f);
            run_prefills(&f);
            if (f.T > 0) sl->waited++;
        }
        break;
    }
    }
    finish(&f);
}

/* form(s, k, MODE_MIXED, false) with reserved KV and no speculation, the
 * wafer case's every pass: nothing is preempted (hold always holds, no
 * member leaves while the pass is formed) and a member's priced tokens are
 * its chunk, so the three groups take one scan of the members each at
 * most, and the members count is the slot's. Same passes, same order of
 * the batch's sums (finish's loop). */
static void form_reserve(struct serve *s, int k)
{
    struct serve_slot *sl = &s->slot[k];
    int rep = s->slot_rep[k], mb = serve_mb(s);
    int *mem = &s->members[(size_t)k * mb];
    sl->swap_tokens = 0;
    struct kernel_batch *b = &sl->b;
    static const struct kernel_batch empty; /* copied, not memset: no rep stos */
    *b = empty;
    double T = 0;
    int rest = 0;  /* members that are not decodes */
    int added = 0; /* leading members (all decodes) already in b, in member order */
    for (int i = 0; i < sl->n; i++) {
        struct serve_request *r = &s->req[mem[i]];
        if (is_decode(r)) {
            r->chunk = 1;
            T += 1;
            if (added == i) { /* the final loop's call for it, one member earlier */
                if (s->windowed) serve_batch_add(s, b, 1, r->kv, true, true);
                else serve_batch_add_decode(b, r->kv);
                added++;
            }
        } else {
            r->chunk = 0;
            rest++;
        }
    }
    for (int i = 0; rest > 0 && i < sl->n; i++) {
        struct serve_request *r = &s->req[mem[i]];
        if (r->chunk != 0) continue;
        rest--;
        int c = prefill_chunk(s, serve_seq(r) - r->kv, T);
        if (c == 0) continue;
        r->chunk = c;
        T += c;
    }
    int cap = s->cfg.inference.concurrency;
    while (sl->n < mb && serve_wait_n(s, rep) > 0 && (cap == 0 || s->inflight < cap)) {
        int id = serve_wait_head(s, rep);
        struct serve_request *r = &s->req[id];
        int c = prefill_chunk(s, serve_seq(r) - r->kv, T);
        if (c == 0) break;
        if (!serve_kv_fits(s, r)) {
            s->res.kv_blocked++;
            break;
        }
        serve_wait_pop(s, rep);
        r->slot = k;
        r->chunk = c;
        mem[sl->n++] = id;
        T += c;
        serve_kv_reserve(s, r, +1);
        if (r->admitted < 0) {
            r->admitted = s->now;
            s->res.admitted++;
        }
        s->inflight++;
        if (s->inflight > s->res.max_inflight) s->res.max_inflight = s->inflight;
    }
    sl->spec_items = sl->spec_ctx = 0;
    for (int i = added; i < sl->n; i++) {
        const struct serve_request *r = &s->req[mem[i]];
        if (r->chunk == 0) continue;
        int seq = serve_seq(r);
        serve_batch_add(s, b, r->chunk, r->kv, r->generated > 0 && r->kv + 1 == seq,
                        r->kv + r->chunk == seq);
    }
    b->tokens = T;
}

static bool reserve_applies(const struct serve *s)
{
    return s->cfg.inference.kv_cache != KV_PAGED && serve_spec_k(s) == 0 && !s->tree;
}

static void form_vllm(struct serve *s, int k)
{
    if (reserve_applies(s)) {
        form_reserve(s, k);
        return;
    }
    form(s, k, MODE_MIXED, false);
}
static void form_prefill_first(struct serve *s, int k) { form(s, k, MODE_PREFILL_FIRST, false); }
static void form_decode_first(struct serve *s, int k) { form(s, k, MODE_DECODE_FIRST, false); }
static void form_priority(struct serve *s, int k) { form(s, k, MODE_MIXED, true); }

static const struct serve_scheduler schedulers[] = {
    { "vllm",
      "vLLM V1 (vllm/v1/core/sched/scheduler.py): continuous batching, each step decodes the "
      "running requests and fills the rest of max_num_batched_tokens with prompt chunks, then "
      "admits waiting requests first come first served; a full KV pool preempts the "
      "latest-admitted running request", form_vllm, false },
    { "prefill_first",
      "vLLM V0's default (vllm/core/scheduler.py, _schedule_default) and SGLang's: a step is all "
      "prefill while waiting requests can be admitted, otherwise all decode", form_prefill_first,
      false },
    { "decode_first",
      "Hugging Face TGI's router (batching_task): the running batch keeps decoding; new "
      "requests are prefilled when the queue reaches waiting_served_ratio x the batch or "
      "after max_waiting_tokens decode steps", form_decode_first, false },
    { "priority",
      "vLLM V1 with --scheduling-policy priority: as vllm, but waiting requests go by priority "
      "class (inference.priorities) then arrival, and the lowest-priority running request is "
      "preempted first", form_priority, true },
    { NULL, NULL, NULL, false },
};

const struct serve_scheduler *serve_scheduler_find(const char *name)
{
    for (const struct serve_scheduler *x = schedulers; x->name; x++)
        if (!strcmp(x->name, name)) return x;
    return NULL;
}

const struct serve_scheduler *serve_scheduler_of(const struct serve *s)
{
    if (s->sched) return s->sched; /* looked up once: a pass asks it */
    const struct serve_scheduler *x = serve_scheduler_find(s->cfg.inference.scheduler);
    return x ? x : &schedulers[0];
}

void (*serve_scheduler_form(const struct serve *s))(struct serve *s, int k)
{
    const struct serve_scheduler *x = serve_scheduler_of(s);
    return x->form == form_vllm && reserve_applies(s) ? form_reserve : x->form;
}

bool serve_scheduler_reserve(const struct serve *s) { return serve_scheduler_form(s) == form_reserve; }

const char *serve_scheduler_name(int i, const char **summary)
{
    if (i < 0 || i >= (int)(sizeof schedulers / sizeof *schedulers) - 1) return NULL;
    if (summary) *summary = schedulers[i].summary;
    return schedulers[i].name;
}
