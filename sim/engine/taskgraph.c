/* taskgraph.c — building the op graph; see taskgraph.h. */
#include "taskgraph.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* tg_add_many and tg_dep_many take copies of ops and edges that went
 * through tg_add and tg_dep once (pipeline.c's pass memo copies a pass the
 * graph already holds, its edges made relative). Their per-item asserts
 * repeat those checks, ~3.6 M instructions of the 1T step's 144 M, so they
 * run in sanitized builds only (make sanitize: GCC's __SANITIZE_ADDRESS__). */
#ifdef __SANITIZE_ADDRESS__
#define COPIES_CHECKED 1
#else
#define COPIES_CHECKED 0
#endif

struct op tg_op(enum op_kind kind, int chip, enum stream_kind stream, enum op_tag tag,
                mp_time duration)
{
    return (struct op){
        .duration = duration, .chip = chip, .mb = -1, .mb2 = -1, .stage = -1,
        .layer_first = -1, .layer_last = -1, .route_off = 0, .route_len = 0,
        .stream = (uint8_t)stream, .kind = (uint8_t)kind, .tag = (uint8_t)tag,
        .alloc_cat = MEM_ACTIVATIONS, .free_cat = MEM_ACTIVATIONS,
    };
}

void tg_init(struct taskgraph *g, int n_chips, int n_links)
{
    memset(g, 0, sizeof *g);
    g->n_chips = n_chips;
    g->n_links = n_links;
    g->static_mem = mp_xcalloc((size_t)n_chips * N_MEM_CATS, sizeof *g->static_mem);
}

void tg_release(struct taskgraph *g)
{
    free(g->ops);
    free(g->rings);
    free(g->route);
    free(g->edge_from);
    free(g->edge_to);
    free(g->static_mem);
    free(g->succ_off);
    free(g->succ);
    free(g->n_deps);
    free(g->stream_off);
    free(g->stream_ops);
    free(g->stream_pos);
    if (g->period) {
        free(g->period->lo);
        free(g->period->hi);
        free(g->period->len);
        free(g->period);
    }
    memset(g, 0, sizeof *g);
}

int tg_add(struct taskgraph *g, const struct op *op)
{
    assert(!g->finalized);
    assert(op->chip >= 0 && op->chip < g->n_chips);
    assert(op->stream < N_STREAMS);
    assert(op->duration >= 0 && op->latency >= 0 && op->latency <= op->duration);
    g->wanted_ops++;
    int cap = g->max_ops > 0 ? g->max_ops : INT32_MAX;
    if (g->over || g->n_ops >= cap) {
        g->over = true;
        return g->n_ops > 0 ? g->n_ops - 1 : 0;
    }
    MP_GROW(g->ops, g->cap_ops, g->n_ops + 1);
    g->ops[g->n_ops] = *op;
    return g->n_ops++;
}

int tg_add_many(struct taskgraph *g, const struct op *ops, int n)
{
    assert(!g->finalized && n >= 0);
    int cap = g->max_ops > 0 ? g->max_ops : INT32_MAX;
    if (g->over || n > cap - g->n_ops) {
        int first = g->n_ops;
        for (int i = 0; i < n; i++) {
            int id = tg_add(g, &ops[i]);
            if (i == 0) first = id;
        }
        return first;
    }
#if COPIES_CHECKED
    for (int i = 0; i < n; i++) {
        assert(ops[i].chip >= 0 && ops[i].chip < g->n_chips && ops[i].stream < N_STREAMS);
        assert(ops[i].duration >= 0 && ops[i].latency >= 0 && ops[i].latency <= ops[i].duration);
        assert(ops[i].route_len == 0);
    }
#endif
    g->wanted_ops += n;
    MP_GROW(g->ops, g->cap_ops, g->n_ops + n);
    memcpy(g->ops + g->n_ops, ops, (size_t)n * sizeof *ops);
    int first = g->n_ops;
    g->n_ops += n;
    return first;
}

void tg_reserve(struct taskgraph *g, double ops, double edges)
{
    int cap = g->max_ops > 0 ? g->max_ops : INT32_MAX;
    if (g->over || !(ops >= 0 && edges >= 0)) return;
    if (ops > cap) ops = cap;
    if (edges > INT32_MAX) edges = INT32_MAX;
    if ((size_t)ops > (size_t)g->cap_ops) {
        g->cap_ops = (int)ops;
        g->ops = mp_xrealloc(g->ops, (size_t)g->cap_ops * sizeof *g->ops);
    }
    if ((int)edges > g->cap_edges) {
        g->cap_edges = (int)edges;
        g->edge_from = mp_xrealloc(g->edge_from, (size_t)g->cap_edges * sizeof *g->edge_from);
        g->edge_to = mp_xrealloc(g->edge_to, (size_t)g->cap_edges * sizeof *g->edge_to);
    }
}

int tg_add_transfer(struct taskgraph *g, const struct op *op, const int *links, int n)
{
    if (g->over || (size_t)g->n_route + (size_t)n > INT32_MAX) {
        g->over = true;
        return tg_add(g, op);
    }
    MP_GROW(g->route, g->cap_route, g->n_route + n);
    struct op o = *op;
    o.route_off = g->n_route;
    o.route_len = n;
    for (int i = 0; i < n; i++) {
        assert(links[i] >= 0 && links[i] < g->n_links);
        g->route[g->n_route++] = links[i];
    }
    return tg_add(g, &o);
}

void tg_add_ring(struct taskgraph *g, int first, int n, int steps)
{
    tg_add_ring_chunked(g, first, n, steps, 1);
}

void tg_add_ring_chunked(struct taskgraph *g, int first, int n, int steps, int chunks)
{
    if (g->over) return;
    assert(!g->finalized && n >= 2 && steps >= 1 && first >= 0 && first + n <= g->n_ops);
    assert(chunks >= 1 && steps % chunks == 0);
    assert(g->n_rings == 0 || g->rings[g->n_rings - 1].first + g->rings[g->n_rings - 1].n <= first);
    for (int i = first; i < first + n; i++)
        assert(g->ops[i].kind == OP_RING && g->ops[i].stream == STREAM_COMM);
    MP_GROW(g->rings, g->cap_rings, g->n_rings + 1);
    g->rings[g->n_rings++] = (struct tg_ring){ .first = first, .n = n, .steps = steps,
                                               .chunks = chunks };
}

void tg_set_period(struct taskgraph *g, const int32_t *lo, const int32_t *hi,
                   const int32_t *len, int ref, int64_t elided)
{
    size_t n = (size_t)g->n_chips * N_STREAMS;
    assert(ref >= 0 && (size_t)ref < n && elided >= 1);
    struct tg_period *p = mp_xcalloc(1, sizeof *p);
    p->lo = mp_xmalloc(n * sizeof *p->lo);
    p->hi = mp_xmalloc(n * sizeof *p->hi);
    p->len = mp_xmalloc(n * sizeof *p->len);
    memcpy(p->lo, lo, n * sizeof *p->lo);
    memcpy(p->hi, hi, n * sizeof *p->hi);
    memcpy(p->len, len, n * sizeof *p->len);
    p->ref = ref;
    p->elided = elided;
    g->period = p;
}

const struct tg_ring *tg_ring_of(const struct taskgraph *g, int id)
{
    if (g->ops[id].kind != OP_RING) return NULL;
    /* Rings are few and sorted by their first op: bisect. */
    int lo = 0, hi = g->n_rings - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (g->rings[mid].first <= id) lo = mid; else hi = mid - 1;
    }
    assert(hi >= 0 && g->rings[lo].first <= id && id < g->rings[lo].first + g->rings[lo].n);
    return &g->rings[lo];
}

void tg_dep(struct taskgraph *g, int before, int after)
{
    if (g->over || g->n_edges == INT32_MAX) {
        g->over = true;
        return;
    }
    assert(before >= 0 && before < g->n_ops && after >= 0 && after < g->n_ops);
    assert(before != after);
    if (g->n_edges == g->cap_edges) {
        g->cap_edges = g->cap_edges ? 2 * g->cap_edges : 64;
        g->edge_from = mp_xrealloc(g->edge_from, (size_t)g->cap_edges * sizeof *g->edge_from);
        g->edge_to = mp_xrealloc(g->edge_to, (size_t)g->cap_edges * sizeof *g->edge_to);
    }
    g->edge_from[g->n_edges] = before;
    g->edge_to[g->n_edges] = after;
    g->n_edges++;
}

void tg_dep_many(struct taskgraph *g, const int32_t *pair, int n, int base)
{
    if (g->over || n > INT32_MAX - g->n_edges) {
        for (int k = 0; k < n; k++) tg_dep(g, base + pair[2 * k], base + pair[2 * k + 1]);
        return;
    }
    if (g->n_edges + n > g->cap_edges) {
        int cap = g->cap_edges ? g->cap_edges : 64;
        while (cap < g->n_edges + n) cap = cap > INT32_MAX / 2 ? INT32_MAX : 2 * cap;
        g->cap_edges = cap;
        g->edge_from = mp_xrealloc(g->edge_from, (size_t)cap * sizeof *g->edge_from);
        g->edge_to = mp_xrealloc(g->edge_to, (size_t)cap * sizeof *g->edge_to);
    }
    /* In locals: a store to an int32 could be g->n_edges, as far as the
     * compiler knows, which it would load again for every edge. */
    int32_t *from = g->edge_from + g->n_edges, *to = g->edge_to + g->n_edges;
    for (int k = 0; k < n; k++) {
        int before = base + pair[2 * k], after = base + pair[2 * k + 1];
#if COPIES_CHECKED
        assert(before >= 0 && before < g->n_ops && after >= 0 && after < g->n_ops);
        assert(before != after);
#endif
        from[k] = before;
        to[k] = after;
    }
    g->n_edges += n;
}

void tg_static_alloc(struct taskgraph *g, int chip, enum mem_cat cat, double bytes)
{
    assert(chip >= 0 && chip < g->n_chips && bytes >= 0);
    g->static_mem[(size_t)chip * N_MEM_CATS + cat] += bytes;
}

/* Counting sort of `n` items into `buckets` by key, keeping insertion order
 * within a bucket: off[b]..off[b+1] indexes `out`; with `pos_out`, each
 * item's place within its bucket too. */
static void bucket(int n, int buckets, const int32_t *key, int32_t **off_out, int32_t **out,
                   int32_t **pos_out)
{
    int32_t *off = mp_xcalloc((size_t)buckets + 1, sizeof *off);
    for (int i = 0; i < n; i++) off[key[i] + 1]++;
    for (int b = 0; b < buckets; b++) off[b + 1] += off[b];
    int32_t *fill = mp_xmalloc(((size_t)buckets + 1) * sizeof *fill);
    memcpy(fill, off, ((size_t)buckets + 1) * sizeof *fill);
    int32_t *o = mp_xmalloc((size_t)(n ? n : 1) * sizeof *o);
    if (pos_out) {
        int32_t *pos = mp_xmalloc((size_t)(n ? n : 1) * sizeof *pos);
        for (int i = 0; i < n; i++) {
            pos[i] = fill[key[i]] - off[key[i]];
            o[fill[key[i]]++] = i;
        }
        *pos_out = pos;
    } else {
        for (int i = 0; i < n; i++) o[fill[key[i]]++] = i;
    }
    free(fill);
    *off_out = off;
    *out = o;
}

void tg_finalize(struct taskgraph *g)
{
    assert(!g->finalized && !g->over);
    /* Successors: edges bucketed by their source, in the order added (as
     * bucket() would, but the targets written at once). succ_off[u] first
     * counts u's edges, then (summed) is the end of u's list, and the fill
     * from the last edge to the first walks it back to the list's start:
     * no edge-id array, no copy of the offsets. Predecessors are counted
     * in the same pass. */
    g->succ_off = mp_xcalloc((size_t)g->n_ops + 1, sizeof *g->succ_off);
    g->succ = mp_xmalloc((size_t)(g->n_edges ? g->n_edges : 1) * sizeof *g->succ);
    g->n_deps = mp_xcalloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof *g->n_deps);
    for (int e = 0; e < g->n_edges; e++) {
        g->succ_off[g->edge_from[e]]++;
        g->n_deps[g->edge_to[e]]++;
    }
    for (int i = 0; i < g->n_ops; i++) g->succ_off[i + 1] += g->succ_off[i];
    for (int e = g->n_edges - 1; e >= 0; e--)
        g->succ[--g->succ_off[g->edge_from[e]]] = g->edge_to[e];

    int32_t *stream_key = mp_xmalloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *stream_key);
    /* In locals: an int32 store could be g->n_ops for the compiler. */
    const struct op *ops = g->ops;
    for (int i = 0, n = g->n_ops; i < n; i++)
        stream_key[i] = ops[i].chip * N_STREAMS + ops[i].stream;
    bucket(g->n_ops, g->n_chips * N_STREAMS, stream_key, &g->stream_off, &g->stream_ops,
           &g->stream_pos);
    free(stream_key);
    g->finalized = 1;
}

static const char *const tag_names[N_TAGS] = {
    [TAG_F] = "F", [TAG_B] = "B", [TAG_W] = "W", [TAG_BW] = "BW", [TAG_FB] = "FB",
    [TAG_OPTIMIZER] = "optimizer", [TAG_SEND] = "send", [TAG_ALL_REDUCE] = "all_reduce",
    [TAG_REDUCE_SCATTER] = "reduce_scatter", [TAG_ALL_GATHER] = "all_gather",
    [TAG_ALL_TO_ALL] = "all_to_all", [TAG_BROADCAST] = "broadcast", [TAG_MEM] = "mem",
    [TAG_OTHER] = "other", [TAG_OFFLOAD] = "offload", [TAG_RELOAD] = "reload",
};

static const char *const mem_names[N_MEM_CATS] = {
    [MEM_WEIGHTS] = "weights", [MEM_GRADS] = "grads", [MEM_OPTIMIZER] = "optimizer",
    [MEM_ACTIVATIONS] = "activations", [MEM_KV] = "kv", [MEM_COMM] = "comm",
};

const char *tg_tag_name(enum op_tag tag) { return tag < N_TAGS ? tag_names[tag] : "?"; }
const char *tg_mem_cat_name(enum mem_cat cat) { return cat < N_MEM_CATS ? mem_names[cat] : "?"; }
const char *tg_stream_name(enum stream_kind s)
{
    static const char *const names[N_STREAMS] = {
        [STREAM_COMPUTE] = "compute", [STREAM_COMM] = "comm", [STREAM_TO_HOST] = "to_host",
        [STREAM_FROM_HOST] = "from_host",
    };
    return s < N_STREAMS ? names[s] : "?";
}

const char *tg_comm_name(enum comm_kind c)
{
    static const char *const names[N_COMM_KINDS] = {
        [COMM_NONE] = "none", [COMM_TP] = "tp", [COMM_PP] = "pp", [COMM_DP] = "dp", [COMM_EP] = "ep",
        [COMM_CP] = "cp", [COMM_HOST] = "host",
    };
    return c < N_COMM_KINDS ? names[c] : "?";
}
