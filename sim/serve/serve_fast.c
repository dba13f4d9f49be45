/* serve_fast.c — the walk-at-a-time loop: a pass's whole walk down the chain
 * computed when it is formed, only arrivals, last-stage ends and returns as
 * events; results identical to one event per stage pass and hop (serve.c).
 * See serve.h ("Event granularity") and the proof below. */
#include "serve_impl.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
/* conv_holds on the triples of context-free stage classes, between two
 * walks of one key: both bounds hold on each, one fails on some, or the
 * second depends on the anchor (a hop class slower than the next one's). */
enum { CONV_HOLD, CONV_FAILS, CONV_OPEN };
#define MEMO 1024                /* per class: stage times by (tokens, items, emits) */
/* The context-dependent classes' times by the whole batch: serve_batch_time
 * memoises them too, behind two calls and a generic test; this table sits
 * in the walk (a decode of context c costs what any other one does). */
#define CTX_MEMO 8192

struct fast_memo { double tokens, items, emits; mp_time d; bool set; };
struct ctx_memo { struct kernel_batch b; mp_time d; int c; };

struct serve_walk {
    /* Formed at stage 0 at t0 − lag; lag is what it waited on the way. Its
     * times on each stage are at most t0 + the stage and hop times before
     * it (a wait delays every later stage at least as much), and exactly
     * that when lag = 0. */
    mp_time t0, lag;
    mp_time *d, *ser;            /* [classes] stage time; [hop classes] serialisation */
    mp_time maxd, maxser, span;  /* span: formed to the end on the last stage, unhindered */
    uint64_t gen;                /* d's context-free classes and ser are the key of this number's */
};

struct fast_node { mp_time t, sched; int k, kind; };
/* An empty source's head: later than any event (times stay below
 * SERVE_CLOCK_MAX plus a walk). */
static const struct fast_node NODE_NONE = { INT64_MAX, INT64_MAX, -1, -1 };

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
    /* The key: the last walk's (tokens, items, emits), its context-free
     * classes' times, and with the hops' serialisations (ser_of) their
     * sums and maxima (key_set); consecutive passes are mostly alike (one
     * decode). gen numbers the keys set so far. */
    double lk_tokens, lk_items, lk_emits;
    mp_time *lk_d;               /* [classes], context-free ones */
    uint64_t gen;
    mp_time cf_span;             /* Σ latencies + the key's stage and hop times over the chain */
    mp_time cf_maxd, cf_maxser;
    uint64_t run_n;              /* walks of this key not yet in cbusy (no horizon) */
    int n_ctx, *ctx_cls;         /* the classes that depend on the context */
    struct ctx_memo *cmemo;      /* [CTX_MEMO]; c = −1: empty */
    /* A pass of one member decoding after kv cached tokens (decode_launch
     * sets single_kv, −1 otherwise) is the same batch for every such kv:
     * the context classes' times by kv, −1 until priced. */
    int single_kv;
    mp_time **single;            /* [n_ctx][single_cap[i]] */
    int *single_cap;
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
    int n_tup_ctx, *tup_ctx;     /* the triples whose cls s + 1 depends on the context */
    int cf_conv;                 /* the other triples under the key (conv_holds): CONV_* */
    struct serve_walk w[2];      /* w[cur] is being computed, w[cur ^ 1] came before */
    int cur;
    bool have_prev;
    bool reserve_former;         /* the run's former is form_reserve (decode_launch) */
    mp_time *cbusy;              /* [classes] busy time of walks ended by the horizon */
    uint64_t walks;              /* walks whose passes are all in cbusy */
    /* Slots with a pending event (one each at most), by (time, scheduled
     * at). Pass ends come in the order the passes were formed (no pass
     * overtakes another), and returns nearly so (a fixed hop time per
     * token count), so each kind goes to a sorted run, a FIFO, when it is
     * no earlier than the run's last; only the others go to a binary heap.
     * The earliest is the least of the three heads, hd[] (&NODE_NONE when
     * a source is empty; a FIFO's entries stay in place until taken). */
    struct fast_node *fifo[2];   /* [FAST_DONE], [FAST_RETURN]: rings of ring_n ≥ slots */
    unsigned fhead[2], ftail[2]; /* taken, put so far: index & (ring_n − 1) */
    struct fast_node *heap;
    int n_heap;
    const struct fast_node *hd[3]; /* heads of fifo[0], fifo[1], the heap */
    unsigned ring_n;             /* a power of two ≥ slots: the rings' size */
    mp_time last_t, last_s;      /* key of the slot event handled last */
    bool tie;                    /* two slot events the keys cannot order */
    uint64_t events;
};

static bool same_layer(const struct serve_layer *a, const struct serve_layer *b)
{
    return a->kind == b->kind && a->attn == b->attn && a->mixer == b->mixer &&
           a->mlp == b->mlp && a->moe == b->moe && a->window == b->window &&
           a->params == b->params && a->matmul_params == b->matmul_params &&
           a->expert_params == b->expert_params;
}

static bool same_stage(const struct serve *s, int a, int b)
{
    /* Stage 0 also carries the host's per-step work (serve_price.c). */
    if ((a == 0) != (b == 0)) return false;
    int n = s->layer_off[a + 1] - s->layer_off[a];
    if (n != s->layer_off[b + 1] - s->layer_off[b]) return false;
    for (int i = 0; i < n; i++)
        if (!same_layer(&s->layers[s->layer_off[a] + i], &s->layers[s->layer_off[b] + i]))
            return false;
    return true;
}

/* Whether the walk-at-a-time loop gives this run's results: one replica of
 * whole-layer stages (no TP or EP group: a pass's time is its layers'),
 * reserved KV with the vllm scheduler (memory and membership change only at
 * admissions and completions), arrivals all known up front (no sessions),
 * no speculation. The wafer case is such a run. */
bool serve_fast_applies(const struct serve *s)
{
    const struct config_inference *in = &s->cfg.inference;
    const struct serve_pool *P = &s->pool[0];
    return s->n_pools == 1 && s->replicas == 1 && P->tp == 1 && P->ep == 1 &&
           in->kv_cache == KV_RESERVE && !strcmp(serve_scheduler_of(s)->name, "vllm") &&
           in->turns == 1 && in->speculative == SPEC_NONE && !in->prefix_caching;
}

/* Whether each link carries the hand-offs of one stage only (else links
 * are contended out of walk order, and the fast loop cannot run). */
static bool routes_apart(const struct serve *s)
{
    int *owner = mp_xmalloc(((size_t)s->sys.n_links + 1) * sizeof *owner);
    for (int i = 0; i <= s->sys.n_links; i++) owner[i] = -1;
    bool apart = true;
    for (int st = 0; st + 1 < s->stages && apart; st++)
        for (int i = s->hop_route_off[st]; i < s->hop_route_off[st + 1] && apart; i++) {
            int l = s->hop_route[i];
            apart = owner[l] < 0 || owner[l] == st;
            owner[l] = st;
        }
    free(owner);
    return apart;
}

bool serve_fast_will_run(const struct serve *s)
{
    return !s->rec && !s->per_stage && serve_fast_applies(s) && routes_apart(s);
}

/* Set up the fast loop, or leave s->fast NULL when a hand-off route shares a
 * link with another's (routes_apart). */
void serve_fast_init(struct serve *s)
{
    int S = s->stages, K = s->slots;
    if (!routes_apart(s)) return;
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
    f->lk_d = mp_xcalloc((size_t)f->n_cls, sizeof *f->lk_d);
    f->lk_tokens = -1; /* no pass has −1 tokens */
    f->ctx_cls = mp_xmalloc((size_t)f->n_cls * sizeof *f->ctx_cls);
    for (int c = 0; c < f->n_cls; c++)
        if (f->ctx_dep[c]) f->ctx_cls[f->n_ctx++] = c;
    f->single_kv = -1;
    f->single = mp_xcalloc((size_t)(f->n_ctx > 0 ? f->n_ctx : 1), sizeof *f->single);
    f->single_cap = mp_xcalloc((size_t)(f->n_ctx > 0 ? f->n_ctx : 1), sizeof *f->single_cap);
    f->cmemo = mp_xcalloc(CTX_MEMO, sizeof *f->cmemo);
    for (int i = 0; i < CTX_MEMO; i++) f->cmemo[i].c = -1;
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
    f->tup_ctx = mp_xmalloc((size_t)(f->n_tup > 0 ? f->n_tup : 1) * sizeof *f->tup_ctx);
    for (int i = 0; i < f->n_tup; i++)
        if (f->ctx_dep[f->tup_c2[i]]) f->tup_ctx[f->n_tup_ctx++] = i;
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
    for (int q = 0; q < 3; q++) f->hd[q] = &NODE_NONE;
    f->reserve_former = serve_scheduler_reserve(s);
    f->last_t = f->last_s = -1;
}

void serve_fast_release(struct serve_fast *f)
{
    if (!f) return;
    free(f->cls); free(f->cnt); free(f->rep); free(f->ctx_dep); free(f->memo); free(f->lk_d);
    free(f->ctx_cls); free(f->cmemo);
    for (int i = 0; i < f->n_ctx; i++) free(f->single[i]);
    free(f->single); free(f->single_cap);
    free(f->hcls); free(f->hcnt); free(f->has_link); free(f->st);
    for (int i = 0; i < 2; i++) { free(f->w[i].d); free(f->w[i].ser); }
    free(f->tup_h); free(f->tup_c2); free(f->tup_h2); free(f->tup_ctx); free(f->conv); free(f->ad); free(f->aser);
    free(f->cbusy); free(f->ser_of); free(f->heap);
    free(f->fifo[0]); free(f->fifo[1]);
    free(f);
}

/* ---- slots with a pending event: a binary heap on (time, scheduled at) */

static bool node_less(const struct fast_node *a, const struct fast_node *b)
{
    return a->t != b->t ? a->t < b->t : a->sched < b->sched;
}

/* Put node n at position i, moved up or down to its place. */
static void heap_fix(struct serve_fast *f, int i, struct fast_node n)
{
    while (i > 0 && node_less(&n, &f->heap[(i - 1) / 2])) {
        f->heap[i] = f->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    for (;;) {
        int c = 2 * i + 1;
        if (c >= f->n_heap) break;
        if (c + 1 < f->n_heap && node_less(&f->heap[c + 1], &f->heap[c])) c++;
        if (!node_less(&f->heap[c], &n)) break;
        f->heap[i] = f->heap[c];
        i = c;
    }
    f->heap[i] = n;
}

static inline void slot_event(struct serve_fast *f, int k, int kind, mp_time t, mp_time sched)
{
    struct fast_node n = { t, sched, k, kind };
    int q = kind;
    unsigned m = f->ring_n - 1;
    if (f->ftail[q] == f->fhead[q]) {
        f->hd[q] = &f->fifo[q][f->ftail[q] & m];
        f->fifo[q][f->ftail[q]++ & m] = n;
        return;
    }
    if (!node_less(&n, &f->fifo[q][(f->ftail[q] - 1) & m])) {
        f->fifo[q][f->ftail[q]++ & m] = n;
        return;
    }
    heap_fix(f, f->n_heap++, n);
    f->hd[2] = &f->heap[0];
}

/* Which head is the earliest pending slot event: a FIFO (0, 1) or the heap
 * (2); the first of equal ones. NODE_NONE when there is none. */
static inline int slot_peek(const struct serve_fast *f)
{
    int src = node_less(f->hd[1], f->hd[0]);
    if (node_less(f->hd[2], f->hd[src])) src = 2;
    return src;
}

static void slot_pop(struct serve_fast *f, int src)
{
    if (src < 2) {
        unsigned h = ++f->fhead[src];
        f->hd[src] = h != f->ftail[src] ? &f->fifo[src][h & (f->ring_n - 1)] : &NODE_NONE;
        return;
    }
    if (--f->n_heap > 0) heap_fix(f, 0, f->heap[f->n_heap]);
    f->hd[2] = f->n_heap > 0 ? &f->heap[0] : &NODE_NONE;
}

/* ---- walks */

/* Time of slot k's pass on a stage of context-free class c. */
static mp_time class_time(struct serve *s, int c, const struct serve_slot *sl)
{
    struct serve_fast *f = s->fast;
    /* Without full attention the time depends on tokens, items and emits
     * only (GEMMs and norms on the tokens, linear-attention state on the
     * items), which repeat from pass to pass. */
    unsigned h = (unsigned)sl->b.tokens * 2654435761u ^ (unsigned)sl->b.items * 40503u ^
                 (unsigned)sl->b.emits;
    struct fast_memo *m = &f->memo[(size_t)c * MEMO + h % MEMO];
    if (!m->set || m->tokens != sl->b.tokens || m->items != sl->b.items || m->emits != sl->b.emits)
        *m = (struct fast_memo){ sl->b.tokens, sl->b.items, sl->b.emits,
                                 serve_slot_time(s, f->rep[c], sl),
                                 true };
    return m->d;
}

/* Time of the pass of batch b on a stage of context-dependent class c: the
 * batch compared bit for bit (equal bits are equal sums, so a hit is the
 * time serve_batch_time gives; +0 against −0 would only miss). */
static mp_time ctx_time(struct serve *s, int c, const struct kernel_batch *b)
{
    struct serve_fast *f = s->fast;
    uint64_t x, y;
    memcpy(&x, &b->decode_ctx, sizeof x);
    memcpy(&y, &b->prefill_pairs, sizeof y);
    uint64_t h = (x * 0x9e3779b97f4a7c15u) ^ (y * 0xc2b2ae3d27d4eb4fu) ^ (uint64_t)c;
    struct ctx_memo *e = &f->cmemo[(h >> 40) % CTX_MEMO];
    if (e->c == c && !memcmp(&e->b, b, sizeof *b)) return e->d;
    e->b = *b;
    e->c = c;
    e->d = serve_batch_time(s, f->rep[c], b);
    return e->d;
}

/* ctx_time of the i-th context class c for a pass of one member decoding
 * after kv cached tokens (batch b is that pass's): by kv from a table. */
static mp_time single_time(struct serve *s, int i, int c, const struct kernel_batch *b, int kv)
{
    struct serve_fast *f = s->fast;
    if (kv >= f->single_cap[i]) {
        int old = f->single_cap[i];
        MP_GROW(f->single[i], f->single_cap[i], (size_t)kv + 1);
        for (int j = old; j < f->single_cap[i]; j++) f->single[i][j] = -1;
    }
    mp_time *e = &f->single[i][kv];
    if (*e < 0) *e = ctx_time(s, c, b);
    return *e;
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
/* The bound above on triple i. */
static inline bool triple_holds(const struct serve_fast *f, const struct serve_walk *w,
                                const struct serve_walk *p, int i)
{
    int h = f->tup_h[i], c2 = f->tup_c2[i], h2 = f->tup_h2[i];
    if (w->ser[h] < p->d[c2]) return false;
    if (h2 < 0) return true;
    mp_time a = p->d[c2] + p->ser[h2];
    mp_time b = f->ad[c2] + f->aser[h2] + f->conv[h2] - f->conv[h];
    return w->ser[h] + w->d[c2] <= (a > b ? a : b);
}

static bool conv_holds(const struct serve_fast *f, const struct serve_walk *w,
                       const struct serve_walk *p)
{
    if (w->gen == p->gen && f->cf_conv != CONV_OPEN) {
        /* The same key: on a triple whose stage class is context-free, p's
         * times there are w's, so ser + d' ≤ dp' + serp' when ser ≤ serp'
         * (the second bound holds), and the first bound is the key's:
         * key_set decided both (cf_conv). Only the context's triples are
         * left. */
        if (f->cf_conv == CONV_FAILS) return false;
        for (int j = 0; j < f->n_tup_ctx; j++)
            if (!triple_holds(f, w, p, f->tup_ctx[j])) return false;
        return true;
    }
    for (int i = 0; i < f->n_tup; i++)
        if (!triple_holds(f, w, p, i)) return false;
    return true;
}

/* Walk w joins the convoy at stage j (conv_holds): from j on its hops free
 * their links ser after the previous walk's; stages past j are lazy. */
static inline void conv_join(struct serve_fast *f, const struct serve_walk *w, int j)
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
static inline void virt_join(struct serve_fast *f, const struct serve_walk *w, int S,
                             mp_time e0, mp_time *start, mp_time *end)
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

/* The pass's (tokens, items, emits) differ from the last walk's: its
 * context-free classes' times and hop serialisations, their sums and
 * maxima, under a new generation number; the walks of the old key go
 * into the class busy times (their count times each time: integers). */
static void key_set(struct serve *s, const struct serve_slot *sl)
{
    struct serve_fast *f = s->fast;
    if (f->run_n > 0)
        for (int c = 0; c < f->n_cls; c++)
            if (!f->ctx_dep[c]) f->cbusy[c] += mp_time_mul(f->lk_d[c], (long long)f->run_n);
    f->run_n = 0;
    f->gen++;
    f->lk_tokens = sl->b.tokens;
    f->lk_items = sl->b.items;
    f->lk_emits = sl->b.emits;
    if (sl->b.tokens != f->ser_tokens) { /* as serve_hop_time, less the latency */
        double b = serve_hop_bytes(s, 0, (int)sl->b.tokens);
        for (int c = 0; c < f->n_hcls; c++) {
            int st = 0;
            while (f->hcls[st] != c) st++;
            double bw = s->hop_bw[st];
            f->ser_of[c] = isinf(bw) ? 0 : mp_time_from_ps(b / bw * 1e12);
        }
        f->ser_tokens = sl->b.tokens;
    }
    f->cf_span = f->lat;
    f->cf_maxd = f->cf_maxser = 0;
    for (int c = 0; c < f->n_cls; c++) {
        if (f->ctx_dep[c]) continue;
        mp_time d = f->lk_d[c] = class_time(s, c, sl);
        if (d > f->cf_maxd) f->cf_maxd = d;
        f->cf_span += f->cnt[c] * d;
    }
    for (int c = 0; c < f->n_hcls; c++) {
        mp_time x = f->ser_of[c];
        if (x > f->cf_maxser) f->cf_maxser = x;
        f->cf_span += f->hcnt[c] * x;
    }
    f->cf_conv = CONV_HOLD;
    for (int i = 0; i < f->n_tup; i++) {
        int h = f->tup_h[i], c2 = f->tup_c2[i], h2 = f->tup_h2[i];
        if (f->ctx_dep[c2]) continue;
        if (h2 >= 0 && f->ser_of[h] > f->ser_of[h2]) {
            f->cf_conv = CONV_OPEN;
            break;
        }
        if (f->ser_of[h] < f->lk_d[c2]) f->cf_conv = CONV_FAILS;
    }
}

/* serve_fast_walk, lean loop, walk w not joined at stage 0: stage by
 * stage from the previous walk p's offsets (p waited nowhere) or from st[]
 * and the lazy stages, joining a convoy where conv_holds. Apart from the
 * walk's header so that the common paths (clear, joined at stage 0) keep
 * their registers. */
static __attribute__((noinline)) void walk_lean(struct serve *s, struct serve_walk *w,
                                                const struct serve_walk *p, mp_time now,
                                                mp_time *startp, mp_time *endp)
{
    struct serve_fast *f = s->fast;
    int S = s->stages;
    const mp_time *d = w->d, *ser = w->ser;
    mp_time t = now, start = now, end = now;
    if (f->stale) {
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
    *startp = start;
    *endp = end;
}

/* serve_fast_walk, any other walk: st[] brought up to date, every stage
 * and hop walked in full, the stage reports kept as it goes. */
static __attribute__((noinline)) void walk_full(struct serve *s, struct serve_walk *w,
                                                mp_time now, bool by_class, mp_time *startp,
                                                mp_time *endp)
{
    struct serve_fast *f = s->fast;
    int S = s->stages;
    mp_time H = s->cfg.inference.horizon;
    mp_time start, end;
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
    *startp = start;
    *endp = end;
}

/* Slot k's pass, formed at `now`, down the whole chain; its end on the last
 * stage becomes the slot's pending event. */
void serve_fast_walk(struct serve *s, int k, mp_time now)
{
    struct serve_fast *f = s->fast;
    const struct serve_slot *sl = &s->slot[k];
    struct serve_walk *w = &f->w[f->cur], *p = &f->w[f->cur ^ 1];
    int S = s->stages, last = f->cls[S - 1];
    mp_time H = s->cfg.inference.horizon;
    w->t0 = now;
    if (sl->b.tokens != f->lk_tokens || sl->b.items != f->lk_items ||
        sl->b.emits != f->lk_emits)
        key_set(s, sl);
    /* The key's context-free times, copied once per buffer and key. */
    if (w->gen != f->gen) {
        memcpy(w->d, f->lk_d, (size_t)f->n_cls * sizeof *w->d);
        memcpy(w->ser, f->ser_of, (size_t)f->n_hcls * sizeof *w->ser);
        w->gen = f->gen;
    }
    w->maxd = f->cf_maxd;
    w->maxser = f->cf_maxser;
    w->span = f->cf_span;
    if (H <= 0) f->run_n++; /* by class (below) whatever the walk */
    mp_time shortfall = 0; /* Σ max(0, p's time − its own) over stages and hops (below) */
    for (int i = 0; i < f->n_ctx; i++) {
        int c = f->ctx_cls[i];
        mp_time d = f->single_kv >= 0 ? single_time(s, i, c, &sl->b, f->single_kv)
                                      : ctx_time(s, c, &sl->b);
        w->d[c] = d;
        if (H <= 0) f->cbusy[c] += d;
        if (d > w->maxd) w->maxd = d;
        w->span += f->cnt[c] * d;
        if (p->d[c] > d) shortfall += f->cnt[c] * (p->d[c] - d);
    }
    if (p->gen != w->gen) {
        /* p had other context-free times: their shortfall too. */
        for (int c = 0; c < f->n_cls; c++)
            if (!f->ctx_dep[c] && p->d[c] > w->d[c]) shortfall += f->cnt[c] * (p->d[c] - w->d[c]);
        for (int c = 0; c < f->n_hcls; c++)
            if (p->ser[c] > w->ser[c]) shortfall += f->hcnt[c] * (p->ser[c] - w->ser[c]);
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
        const mp_time *d = w->d;
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
        if (!vjoined) walk_lean(s, w, p, now, &start, &end);
    } else {
        walk_full(s, w, now, by_class, &start, &end);
    }
    w->lag = end - (now + w->span); /* ≥ 0; a wait anywhere shows here */
    w->t0 = now + w->lag;
    if (by_class) {
        if (H > 0) /* lazy under a horizon: not summed above */
            for (int c = 0; c < f->n_cls; c++) f->cbusy[c] += w->d[c];
        f->walks++;
    }
    f->cur ^= 1;
    f->have_prev = true;
    slot_event(f, k, FAST_DONE, end, start);
}

/* ---- one decoding member: its pass's end and its next pass ---------------- */

/* Most of the wafer case's passes carry one request decoding one token. For
 * such a pass these two take the steps serve_emit (emit_plain) and
 * serve_launch (form_reserve, the former of every run this loop takes) take
 * for it, in the same order, without their calls and general loops; any
 * other pass goes through those. The serving suites compare this loop with
 * the per-stage one, which runs the general functions. */

/* serve_emit for slot k when its one member decoded a token and has more
 * to go; false (nothing done) otherwise. */
static inline bool decode_emit(struct serve *s, int k, mp_time now)
{
    const struct serve_slot *sl = &s->slot[k];
    if (sl->n != 1 || !s->emit_plain) return false;
    struct serve_request *r = &s->req[s->members[(size_t)k * serve_mb(s)]];
    if (r->chunk != 1 || r->generated == 0 || r->kv + 1 != serve_seq(r) ||
        r->generated + 1 >= r->output)
        return false;
    r->kv += 1;
    if (r->last_emit >= 0) serve_hist_itl(s, now - r->last_emit);
    r->last_emit = now;
    r->generated += 1;
    s->res.output_tokens += 1;
    r->chunk = 0;
    return true;
}

/* serve_launch for slot k when its one member decodes and no admission can
 * be tried (the slot is full, nobody waits, or the concurrency cap is
 * reached) in a model without an attention window; false otherwise. */
static inline bool decode_launch(struct serve *s, int k, mp_time now)
{
    struct serve_slot *sl = &s->slot[k];
    if (sl->n != 1 || s->windowed || !s->fast->reserve_former) return false;
    struct serve_replica *R = &s->rep[s->slot_rep[k]];
    int cap = s->cfg.inference.concurrency, mb = serve_mb(s);
    if (sl->n < mb && R->wait.n > 0 && (cap == 0 || s->inflight < cap)) return false;
    struct serve_request *r = &s->req[s->members[(size_t)k * mb]];
    if (!(r->generated > 0 && r->kv + 1 == serve_seq(r))) return false;
    static const struct kernel_batch empty;
    sl->swap_tokens = 0;
    r->chunk = 1;
    sl->b = empty;
    serve_batch_add_decode(&sl->b, r->kv);
    sl->spec_items = sl->spec_ctx = 0;
    sl->b.tokens = 1;
    bool was = sl->active;
    sl->active = true;
    R->n_idle += (int)was - 1;
    serve_hist_pass(s, sl->b.items, sl->b.tokens);
    s->fast->single_kv = r->kv; /* the batch is this kv's (single_time) */
    serve_fast_walk(s, k, now);
    s->fast->single_kv = -1;
    return true;
}

/* The loop: arrivals from the request array (in arrival order), slot events
 * from the heap; pass events first at equal times, as in handle(). */
void serve_fast_run(struct serve *s)
{
    struct serve_fast *f = s->fast;
    mp_time H = s->cfg.inference.horizon;
    int next = 0;
    mp_time ta = s->n_req > 0 ? s->req[0].arrival : INT64_MAX; /* the next arrival */
    for (;;) {
        int src = slot_peek(f);
        const struct fast_node *top = f->hd[src];
        bool slot = top->t <= ta;
        if (slot && top->t == INT64_MAX) break; /* no event, no arrival left */
        mp_time now = slot ? top->t : ta;
        if (H > 0 && now > H) break;
        if (now > SERVE_CLOCK_MAX) {
            s->clock_overflow = true;
            return;
        }
        s->now = now;
        f->events++;
        if (!slot) {
            serve_route_arrival(s, next++, now);
            ta = next < s->n_req ? s->req[next].arrival : INT64_MAX;
            continue;
        }
        int k = top->k, kind = top->kind;
        if (top->t == f->last_t && top->sched == f->last_s) {
            f->tie = true;
            return;
        }
        f->last_t = top->t;
        f->last_s = top->sched;
        slot_pop(f, src); /* top is stale from here */
        if (kind == FAST_DONE) {
            int emits = (int)s->slot[k].b.emits;
            if (emits < 1) emits = 1;
            if (!decode_emit(s, k, now)) serve_emit(s, k, now);
            mp_time back = emits < POW_TAB ? f->ret[emits] : -1;
            if (back < 0) back = serve_hop_time(s, s->stages - 1, emits);
            if (emits < POW_TAB) f->ret[emits] = back;
            slot_event(f, k, FAST_RETURN, now + back, now);
            serve_wake_idle(s, 0, now); /* memory may have been freed */
        } else if (!decode_launch(s, k, now)) {
            serve_launch(s, k, now);
        }
    }
    if (H > 0) { /* the horizon event */
        f->events++;
        if (s->res.completed < s->n_req) s->res.makespan = H;
    }
    fast_sync(s);
    for (int c = 0; c < f->n_cls; c++) /* the last key's walks */
        if (!f->ctx_dep[c]) f->cbusy[c] += mp_time_mul(f->lk_d[c], (long long)f->run_n);
    f->run_n = 0;
    for (int st = 0; st < s->stages; st++) {
        s->res.stage[st].busy += f->cbusy[f->cls[st]];
        s->res.stage[st].passes += f->walks;
    }
    s->res.events = f->events;
}

bool serve_fast_tied(const struct serve_fast *f) { return f->tie; }
