/* serve_kv.c — where requests' KV lives: reserved up front (kv_cache =
 * reserve, the wafer article's rule) or in paged blocks (vLLM), with the
 * prefix cache. See serve.h ("Memory").
 *
 * Paged pools. A stage's chips keep, after their weights and activation
 * workspace, gpu_memory_utilization × capacity − weights − activations for
 * KV; a block is block_size tokens of the stage's attention layers (plan.c's
 * KV bytes per token × block_size; sliding-window layers counted whole, as
 * vLLM's paged cache did before its hybrid allocator freed blocks outside
 * the window) and a request with recurrent state (linear attention, SSM)
 * holds that state besides. A replica's block
 * count is the smallest over its stages (vLLM takes the minimum over its
 * workers), split evenly over its slots (vLLM V0 gives each virtual engine
 * its own cache). A request holds ⌈kv / block_size⌉ blocks: `shared` of
 * them in cached prefix nodes, the rest (`blocks`) its own.
 *
 * The prefix cache (SGLang's RadixCache; vLLM's automatic prefix caching
 * hashes the same full blocks). Prefixes form a tree: a shared system
 * prompt is a node under the root, a session's turn a node under the turn
 * before it. A node covers tokens [start, end) of every sequence through it
 * and owns the full blocks that end in (start, end] (a block straddling a
 * node's start holds the parent's and the child's tokens, so it is the
 * child's). Per slot pool a node is cached whole or not at all: a request
 * that has computed through a node's end puts its blocks there (or, when
 * another request already did, drops its own copies); a finished turn whose
 * session continues caches its own tokens as the next turn's prefix. A
 * request admitted later holds every cached node of its chain from the
 * root (its hit) and prefills only the rest, but always its last prompt
 * token (to sample from). Unheld leaves are evicted whole, least recently
 * used first, when a pool runs short (SGLang evicts whole leaves by LRU;
 * vLLM block by block — the same order of nodes). Blocks that no later
 * request can hit (a prompt's unique tail) are not kept after a request
 * ends, an idealisation of vLLM's LRU that keeps them until needed. */
#include "serve_impl.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- reserved KV (kv_cache = reserve) ------------------------------------- */

double serve_kv_need(const struct serve *s, const struct serve_request *r, int g)
{
    const struct plan_stage *p = serve_plan_stage(s, g);
    return plan_stage_request_bytes(p, (double)r->prompt + r->output);
}

/* The stages of request r's replica, as plan stages (serve_plan_stage's,
 * taken once for the loops below: an admission and a completion walk every
 * stage). */
static const struct plan_stage *rep_stages(const struct serve *s, const struct serve_request *r,
                                           int *g0, int *S)
{
    const struct serve_replica *R = &s->rep[r->replica];
    const struct serve_pool *P = &s->pool[R->pool];
    *g0 = R->stage0;
    *S = P->stages;
    return P->pr->plan.stage;
}

bool serve_kv_fits(const struct serve *s, const struct serve_request *r)
{
    int g0, S;
    const struct plan_stage *ps = rep_stages(s, r, &g0, &S);
    double tokens = (double)r->prompt + r->output;
    for (int i = 0; i < S; i++)
        if (s->kv_used[g0 + i] + plan_stage_request_bytes(&ps[i], tokens) >
            s->res.stage[g0 + i].free_bytes)
            return false;
    return true;
}

static void kv_rec(struct serve *s, int g, double d)
{
    if (!s->rec) return;
    struct serve_record *rc = s->rec;
    MP_GROW(rc->kv, rc->cap_kv, rc->n_kv + 1);
    rc->kv[rc->n_kv++] = (struct serve_kv_rec){ s->now, g, d, s->kv_used[g] };
}

void serve_kv_reserve(struct serve *s, struct serve_request *r, double sign)
{
    int g0, S;
    const struct plan_stage *ps = rep_stages(s, r, &g0, &S);
    double tokens = (double)r->prompt + r->output;
    for (int i = 0; i < S; i++) {
        int g = g0 + i;
        double d = sign * plan_stage_request_bytes(&ps[i], tokens);
        s->kv_used[g] += d;
        if (s->kv_used[g] > s->res.stage[g].kv_peak) s->res.stage[g].kv_peak = s->kv_used[g];
        if (s->rec) kv_rec(s, g, d);
    }
}

/* ---- the prefix tree ------------------------------------------------------------ */

struct serve_prefix_tree {
    int *parent, *start, *end;
    int n, cap;
    uint64_t clock;           /* last-use stamps */
    int *chain;               /* scratch: a node's chain, root first */
    int cap_chain;
};

struct serve_pc_entry {
    int node;                 /* -1: empty slot */
    int ref;                  /* requests holding it */
    int children;             /* cached children */
    int heap;                 /* position in the LRU heap, -1 */
    uint64_t last;
};

int serve_prefix_node(struct serve *s, int parent, int len)
{
    if (!s->tree) s->tree = mp_xcalloc(1, sizeof *s->tree);
    struct serve_prefix_tree *t = s->tree;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        t->parent = realloc(t->parent, (size_t)cap * sizeof *t->parent);
        t->start = realloc(t->start, (size_t)cap * sizeof *t->start);
        t->end = realloc(t->end, (size_t)cap * sizeof *t->end);
        if (!t->parent || !t->start || !t->end) abort();
        t->cap = cap;
    }
    int st = parent >= 0 ? t->end[parent] : 0;
    t->parent[t->n] = parent;
    t->start[t->n] = st;
    t->end[t->n] = st + len;
    return t->n++;
}

int serve_prefix_end(const struct serve *s, int node)
{
    return node >= 0 ? s->tree->end[node] : 0;
}

/* A slot's pool's blocks or states change by `d`, and with them its
 * replica's sums (serve_replica.kv_used, kv_states). */
static void kv_used_add(struct serve *s, struct serve_kvpool *kp, int64_t d)
{
    kp->used += d;
    s->rep[s->slot_rep[kp - s->kvp]].kv_used += d;
}

static void kv_states_add(struct serve *s, struct serve_kvpool *kp, int d)
{
    kp->states += d;
    s->rep[s->slot_rep[kp - s->kvp]].kv_states += d;
}

static int node_blocks(const struct serve *s, int node)
{
    int B = s->cfg.inference.block_size;
    return s->tree->end[node] / B - s->tree->start[node] / B;
}

/* The chain of `node`, root first, into t->chain; returns its length. */
static int chain_of(struct serve *s, int node)
{
    struct serve_prefix_tree *t = s->tree;
    int n = 0;
    for (int x = node; x >= 0; x = t->parent[x]) n++;
    if (n > t->cap_chain) {
        t->cap_chain = n;
        t->chain = realloc(t->chain, (size_t)n * sizeof *t->chain);
        if (!t->chain) abort();
    }
    int i = n;
    for (int x = node; x >= 0; x = t->parent[x]) t->chain[--i] = x;
    return n;
}

/* ---- a pool's cache entries: open addressing on the node --------------------- */

static unsigned hash_node(int node) { return (unsigned)node * 2654435761u; }

static struct serve_pc_entry *ent_find(struct serve_kvpool *kp, int node)
{
    if (!kp->cap_ent) return NULL;
    unsigned m = (unsigned)kp->cap_ent - 1;
    for (unsigned i = hash_node(node) & m;; i = (i + 1) & m) {
        if (kp->ent[i].node == node) return &kp->ent[i];
        if (kp->ent[i].node < 0) return NULL;
    }
}

static void ent_grow(struct serve_kvpool *kp);

/* Callers make room first (ent_room), so the LRU heap grows with the table. */
static struct serve_pc_entry *ent_add(struct serve_kvpool *kp, int node)
{
    unsigned m = (unsigned)kp->cap_ent - 1, i = hash_node(node) & m;
    while (kp->ent[i].node >= 0) i = (i + 1) & m;
    kp->ent[i] = (struct serve_pc_entry){ node, 0, 0, -1, 0 };
    kp->n_ent++;
    return &kp->ent[i];
}

static void lru_fix_entry(struct serve_kvpool *kp, struct serve_pc_entry *e);

static void ent_grow(struct serve_kvpool *kp)
{
    int old = kp->cap_ent;
    struct serve_pc_entry *o = kp->ent;
    kp->cap_ent = old ? 2 * old : 64;
    kp->ent = mp_xmalloc((size_t)kp->cap_ent * sizeof *kp->ent);
    for (int i = 0; i < kp->cap_ent; i++) kp->ent[i].node = -1;
    kp->n_ent = 0;
    for (int i = 0; i < old; i++)
        if (o[i].node >= 0) {
            struct serve_pc_entry *e = ent_add(kp, o[i].node);
            *e = o[i];
        }
    free(o);
}

/* Remove the entry of `node` (backward-shift deletion keeps probes whole). */
static void ent_del(struct serve_kvpool *kp, int node)
{
    unsigned m = (unsigned)kp->cap_ent - 1, i = hash_node(node) & m;
    while (kp->ent[i].node != node) i = (i + 1) & m;
    kp->ent[i].node = -1;
    kp->n_ent--;
    for (unsigned j = (i + 1) & m; kp->ent[j].node >= 0; j = (j + 1) & m) {
        unsigned want = hash_node(kp->ent[j].node) & m;
        /* Move j back to i when i lies on its probe path from want. */
        if (((j - want) & m) >= ((j - i) & m)) {
            kp->ent[i] = kp->ent[j];
            kp->ent[j].node = -1;
            i = j;
        }
    }
}

/* ---- the LRU heap of evictable entries (by node, ordered by last use) ---- */

static bool lru_less(struct serve_kvpool *kp, int a, int b)
{
    const struct serve_pc_entry *x = ent_find(kp, a), *y = ent_find(kp, b);
    return x->last != y->last ? x->last < y->last : a < b;
}

static void lru_set(struct serve_kvpool *kp, int i, int node)
{
    kp->lru[i] = node;
    ent_find(kp, node)->heap = i;
}

static void lru_sift(struct serve_kvpool *kp, int i)
{
    int node = kp->lru[i];
    while (i > 0 && lru_less(kp, node, kp->lru[(i - 1) / 2])) {
        lru_set(kp, i, kp->lru[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        int c = 2 * i + 1;
        if (c >= kp->n_lru) break;
        if (c + 1 < kp->n_lru && lru_less(kp, kp->lru[c + 1], kp->lru[c])) c++;
        if (!lru_less(kp, kp->lru[c], node)) break;
        lru_set(kp, i, kp->lru[c]);
        i = c;
    }
    lru_set(kp, i, node);
}

static void lru_remove(struct serve_kvpool *kp, struct serve_pc_entry *e)
{
    int i = e->heap;
    e->heap = -1;
    if (--kp->n_lru > i) {
        kp->lru[i] = kp->lru[kp->n_lru];
        lru_sift(kp, i);
    }
}

/* Put e in the heap when it is evictable (unheld leaf), out when not. */
static void lru_fix_entry(struct serve_kvpool *kp, struct serve_pc_entry *e)
{
    bool want = e->ref == 0 && e->children == 0;
    if (want && e->heap < 0) {
        int i = kp->n_lru++;
        kp->lru[i] = e->node;
        e->heap = i;
        lru_sift(kp, i);
    } else if (!want && e->heap >= 0) {
        lru_remove(kp, e);
    }
}

/* Room for one more entry; the heap never holds more than the table. */
static void ent_room(struct serve_kvpool *kp)
{
    if (kp->cap_ent > 0 && 2 * (kp->n_ent + 1) <= kp->cap_ent) return;
    ent_grow(kp);
    kp->lru = realloc(kp->lru, (size_t)kp->cap_ent * sizeof *kp->lru);
    if (!kp->lru) abort();
}

/* Evict the least recently used unheld leaf; its blocks are free again.
 * Returns the blocks freed, 0 when nothing can go. */
static int evict_one(struct serve *s, struct serve_kvpool *kp)
{
    if (kp->n_lru == 0) return 0;
    int node = kp->lru[0];
    struct serve_pc_entry *e = ent_find(kp, node);
    lru_remove(kp, e);
    int nb = node_blocks(s, node);
    kv_used_add(s, kp, -nb);
    kp->cached -= nb;
    ent_del(kp, node);
    int parent = s->tree->parent[node];
    if (parent >= 0) {
        struct serve_pc_entry *p = ent_find(kp, parent);
        if (p) {
            p->children--;
            lru_fix_entry(kp, p);
        }
    }
    return nb;
}

/* ---- paged pools ------------------------------------------------------------------ */

static const struct serve_pool *pool_of_slot(const struct serve *s, int k)
{
    return &s->pool[s->rep[s->slot_rep[k]].pool];
}

/* Room in slot k's pool for `blocks` more blocks and `states` more states. */
static bool room(const struct serve *s, int k, int64_t blocks, int states)
{
    const struct serve_kvpool *kp = &s->kvp[k];
    const struct serve_pool *P = pool_of_slot(s, k);
    if (!P->has_state) return kp->used + blocks <= kp->blocks;
    for (int st = 0; st < P->stages; st++)
        if ((double)(kp->used + blocks) * P->block_bytes[st] +
                (double)(kp->states + states) * P->state_bytes[st] >
            P->cap[st] * P->dp_attn / P->slots)
            return false;
    return kp->used + blocks <= kp->blocks;
}

bool serve_kv_grow(struct serve *s, int k, struct serve_request *r, int tokens)
{
    struct serve_kvpool *kp = &s->kvp[k];
    int B = s->cfg.inference.block_size;
    int64_t need = ((int64_t)tokens + B - 1) / B - r->shared - r->blocks;
    int states = r->slot < 0 ? 1 : 0; /* a request not yet in the slot brings its state */
    if (need < 0) need = 0;
    if (need == 0 && (states == 0 || !pool_of_slot(s, k)->has_state)) return true;
    while (!room(s, k, need, states))
        if (evict_one(s, kp) == 0) return false;
    kv_used_add(s, kp, need);
    r->blocks += (int)need;
    if (states && pool_of_slot(s, k)->has_state) kv_states_add(s, kp, 1);
    if (kp->used > kp->peak) kp->peak = kp->used;
    return true;
}

void serve_kv_trim(struct serve *s, int k, struct serve_request *r)
{
    /* Speculative slots beyond what was accepted go back. */
    int B = s->cfg.inference.block_size;
    int64_t want = ((int64_t)r->kv + 1 + B - 1) / B - r->shared;
    if (want < 0) want = 0;
    if (r->blocks > want) {
        kv_used_add(s, &s->kvp[k], -(r->blocks - want));
        r->blocks = (int)want;
    }
}

/* Let go of the nodes r holds (`refs` of its chain, from the root). */
static void unref_chain(struct serve *s, struct serve_kvpool *kp, struct serve_request *r,
                        int refs)
{
    if (!s->tree || refs == 0) return;
    int n = chain_of(s, r->node);
    for (int i = 0; i < refs && i < n; i++) {
        struct serve_pc_entry *e = ent_find(kp, s->tree->chain[i]);
        if (!e) continue;
        e->ref--;
        e->last = ++s->tree->clock;
        lru_fix_entry(kp, e);
    }
}

/* Chain nodes r holds: those of its chain that are cached, from the root,
 * counted by walking (the held ones are a prefix of the chain). */
static int held_refs(struct serve *s, struct serve_kvpool *kp, struct serve_request *r)
{
    if (!s->tree || r->node < 0 || r->shared == 0) return 0;
    int n = chain_of(s, r->node), blocks = 0, i = 0;
    for (; i < n && blocks < r->shared; i++) {
        if (!ent_find(kp, s->tree->chain[i])) break;
        blocks += node_blocks(s, s->tree->chain[i]);
    }
    return i;
}

void serve_kv_free(struct serve *s, int k, struct serve_request *r, bool done)
{
    struct serve_kvpool *kp = &s->kvp[k];
    const struct serve_pool *P = pool_of_slot(s, k);
    int refs = held_refs(s, kp, r);
    if (done && s->tree && r->own_node >= 0) {
        /* Its own tokens are the next turn's prefix: cached under its chain
         * when the chain is (a turn is cached only below cached nodes). */
        int node = r->own_node, parent = s->tree->parent[node];
        bool parent_ok = parent < 0 || ent_find(kp, parent) != NULL;
        int nb = node_blocks(s, node);
        if (parent_ok && !ent_find(kp, node) && nb > 0 && nb <= r->blocks &&
            s->tree->end[node] <= r->kv) {
            ent_room(kp);
            struct serve_pc_entry *e = ent_add(kp, node);
            e->last = ++s->tree->clock;
            r->blocks -= nb;
            kp->cached += nb;
            if (parent >= 0) {
                struct serve_pc_entry *pe = ent_find(kp, parent);
                pe->children++;
                lru_fix_entry(kp, pe);
            }
            lru_fix_entry(kp, ent_find(kp, node));
        }
    }
    unref_chain(s, kp, r, refs);
    kv_used_add(s, kp, -r->blocks);
    r->blocks = 0;
    r->shared = 0;
    if (P->has_state && r->slot >= 0) kv_states_add(s, kp, -1);
}

int serve_prefix_lookup(struct serve *s, int k, struct serve_request *r, bool take)
{
    if (!s->tree || r->node < 0) return 0;
    struct serve_kvpool *kp = &s->kvp[k];
    int n = chain_of(s, r->node), blocks = 0, i = 0;
    for (; i < n; i++) {
        if (!ent_find(kp, s->tree->chain[i])) break;
        blocks += node_blocks(s, s->tree->chain[i]);
    }
    int B = s->cfg.inference.block_size;
    int seq = serve_seq(r);
    /* The last token is always computed: its logits give the next one. */
    int cap = (seq - 1) / B;
    if (blocks > cap) blocks = cap;
    if (take && blocks > 0) {
        /* Hold the nodes that cover the hit, from the root. */
        for (int j = 0, got = 0; j < i && got < blocks; j++) {
            got += node_blocks(s, s->tree->chain[j]);
            struct serve_pc_entry *e = ent_find(kp, s->tree->chain[j]);
            e->ref++;
            e->last = ++s->tree->clock;
            lru_fix_entry(kp, e);
        }
        r->shared = blocks;
    }
    return blocks * B;
}

void serve_prefix_commit(struct serve *s, int k, struct serve_request *r)
{
    if (r->node < 0) return;
    struct serve_kvpool *kp = &s->kvp[k];
    int n = chain_of(s, r->node);
    int refs = held_refs(s, kp, r);
    /* Nodes past the ones it holds that it has now computed through. */
    for (int i = refs; i < n; i++) {
        int node = s->tree->chain[i];
        if (s->tree->end[node] > r->kv) break;
        int nb = node_blocks(s, node);
        struct serve_pc_entry *e = ent_find(kp, node);
        if (nb > r->blocks) break;
        if (e) {
            /* Cached meanwhile by another request: its own copies go. */
            kv_used_add(s, kp, -nb);
        } else {
            ent_room(kp);
            e = ent_add(kp, node);
            kp->cached += nb;
            int parent = s->tree->parent[node];
            if (parent >= 0) {
                struct serve_pc_entry *pe = ent_find(kp, parent);
                if (pe) {
                    pe->children++;
                    lru_fix_entry(kp, pe);
                }
            }
            e = ent_find(kp, node);
        }
        e->ref++;
        e->last = ++s->tree->clock;
        lru_fix_entry(kp, e);
        r->blocks -= nb;
        r->shared += nb;
    }
}

/* ---- setup and accounting ---------------------------------------------------------- */

int serve_kv_setup(struct serve *s, struct mp_error *err)
{
    const struct config *c = &s->cfg;
    const struct config_inference *in = &c->inference;
    double mem = s->pr.chip.mem_bytes;
    bool paged = in->kv_cache == KV_PAGED;
    for (int p = 0; p < s->n_pools; p++) {
        struct serve_pool *P = &s->pool[p];
        int64_t best = INT64_MAX;
        for (int st = 0; st < P->stages; st++) {
            double extra = st == 0 ? serve_spec_weights(s) : 0; /* the draft beside stage 0 */
            if (!paged) {
                P->cap[st] = mem - P->weights[st];
                continue;
            }
            double usable = in->gpu_memory_utilization * mem;
            P->cap[st] = usable - P->weights[st] - P->act[st] - extra;
            double bb = P->block_bytes[st];
            if (P->cap[st] < (bb > 0 ? bb : P->state_bytes[st])) {
                const struct plan_stage *ps = &P->pr->plan.stage[st];
                return mp_fail(err, MP_ERR_INFEASIBLE,
                               "%sstage %d (layers %d-%d) of a replica of tp %d × pp %d%s: "
                               "weights %.2f GB + activations %.2f GB = %.2f GB per chip; "
                               "inference.gpu_memory_utilization %.2f × %.2f GB = %.2f GB "
                               "leaves %.3f GB for KV, less than one block of %d tokens "
                               "(%.2f MB)", s->n_pools == 2 ? (p ? "decode pool: " : "prefill pool: ") : "",
                               st, ps->first, ps->last, P->tp, P->stages,
                               P->ep > 1 ? " (ep)" : "", P->weights[st] / 1e9, P->act[st] / 1e9,
                               (P->weights[st] + P->act[st]) / 1e9, in->gpu_memory_utilization,
                               mem / 1e9, usable / 1e9, P->cap[st] / 1e9, in->block_size,
                               (bb > 0 ? bb : P->state_bytes[st]) / 1e6);
            }
            if (bb > 0) {
                int64_t n = (int64_t)floor(P->cap[st] / bb);
                if (n < best) best = n;
            }
        }
        if (paged) {
            /* With data-parallel attention each of the dp_attn ranks keeps
             * the KV of its own requests: the replica's pool is theirs
             * together (requests spread evenly, serve_layout.c). */
            P->blocks = best == INT64_MAX ? (int64_t)1 << 40 : best * P->dp_attn;
            P->slot_blocks = P->blocks / P->slots;
            if (P->slot_blocks < 1)
                return mp_fail(err, MP_ERR_INFEASIBLE,
                               "a replica's %lld KV blocks over its %d slots (inference.inflight) "
                               "leave none per slot", (long long)P->blocks, P->slots);
        }
        for (int r = P->rep0; r < P->rep0 + P->replicas; r++) {
            const struct serve_replica *R = &s->rep[r];
            for (int st = 0; st < P->stages; st++)
                s->res.stage[R->stage0 + st].free_bytes = P->cap[st];
            s->res.rep[r].blocks = paged ? P->blocks : 0;
        }
    }
    if (!paged) return MP_OK;
    s->res.blocks_per_replica = s->pool[s->n_pools - 1].blocks;
    s->kvp = mp_xcalloc((size_t)s->slots, sizeof *s->kvp);
    for (int k = 0; k < s->slots; k++) s->kvp[k].blocks = pool_of_slot(s, k)->slot_blocks;
    return MP_OK;
}

void serve_kv_release_all(struct serve *s)
{
    for (int k = 0; s->kvp && k < s->slots; k++) {
        free(s->kvp[k].ent);
        free(s->kvp[k].lru);
    }
    free(s->kvp);
    s->kvp = NULL;
    if (s->tree) {
        free(s->tree->parent);
        free(s->tree->start);
        free(s->tree->end);
        free(s->tree->chain);
        free(s->tree);
        s->tree = NULL;
    }
}

void serve_kv_account(struct serve *s, int rep)
{
    const struct serve_replica *R = &s->rep[rep];
    const struct serve_pool *P = &s->pool[R->pool];
    /* The sums over its slots (kv_used_add): exact integers, so the same
     * doubles as summing the slots here. */
    double used = (double)R->kv_used, states = (double)R->kv_states;
    for (int st = 0; st < P->stages; st++) {
        int g = R->stage0 + st;
        /* Per chip: a rank's share of the replica's blocks and states. */
        double b = (used * P->block_bytes[st] + states * P->state_bytes[st]) / P->dp_attn;
        if (b != s->kv_used[g]) {
            double d = b - s->kv_used[g];
            s->kv_used[g] = b;
            kv_rec(s, g, d);
        }
        if (b > s->res.stage[g].kv_peak) s->res.stage[g].kv_peak = b;
    }
}
