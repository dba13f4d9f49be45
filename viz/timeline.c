/* timeline.c — the in-memory timeline: adding rows, then one finishing pass
 * that sorts and indexes them so each frame only touches what is on screen. */
#include "timeline.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

static const char *const known_kinds[TL_KIND_CUSTOM] = {
    [TL_KIND_F] = "F", [TL_KIND_B] = "B", [TL_KIND_W] = "W", [TL_KIND_BW] = "BW",
    [TL_KIND_FB] = "FB", [TL_KIND_SEND] = "send", [TL_KIND_ALL_REDUCE] = "all_reduce",
    [TL_KIND_REDUCE_SCATTER] = "reduce_scatter", [TL_KIND_ALL_GATHER] = "all_gather",
    [TL_KIND_ALL_TO_ALL] = "all_to_all", [TL_KIND_BROADCAST] = "broadcast",
    [TL_KIND_OPTIMIZER] = "optimizer", [TL_KIND_PREFILL] = "prefill",
    [TL_KIND_DECODE] = "decode", [TL_KIND_MIXED] = "mixed",
};

_Static_assert(TL_KIND_CUSTOM + 1 == TL_LOD_SLOTS, "one pyramid slot per known kind + customs");

static const char *const mem_cats[TL_MEM_CATS] = {
    "weights", "grads", "optimizer", "activations", "kv", "other",
};

void timeline_init(struct timeline *tl)
{
    memset(tl, 0, sizeof *tl);
    /* Offset 0 of the label pool is the empty string, so a zeroed op has "". */
    MP_GROW(tl->strings, tl->cap_strings, 1);
    tl->strings[0] = '\0';
    tl->n_strings = 1;
    for (int k = 0; k < TL_KIND_CUSTOM; k++) {
        MP_GROW(tl->kinds, tl->cap_kinds, tl->n_kinds + 1);
        tl->kinds[tl->n_kinds++] = mp_xstrdup(known_kinds[k]);
    }
}

static void free_derived(struct timeline *tl)
{
    for (int i = 0; tl->lanes && i < tl->n_chips * TL_STREAMS; i++) {
        struct tl_lod *lod = tl->lanes[i].lod;
        if (!lod) continue;
        free(lod->busy);
        free(lod->kind);
        free(lod);
    }
    free(tl->chips);  tl->chips = NULL;
    free(tl->lanes);  tl->lanes = NULL;
    free(tl->maxend); tl->maxend = NULL;
    free(tl->cumbusy); tl->cumbusy = NULL;
    free(tl->rows);   tl->rows = NULL;
    free(tl->events); tl->events = NULL;
    tl->n_chips = tl->n_rows = 0;
    tl->n_events = 0;
    tl->finished = false;
}

void timeline_release(struct timeline *tl)
{
    free_derived(tl);
    free(tl->name);
    free(tl->ops);
    free(tl->mem);
    for (size_t i = 0; i < tl->n_meta; i++) {
        free(tl->meta[i].key);
        free(tl->meta[i].value);
    }
    free(tl->meta);
    free(tl->strings);
    for (size_t i = 0; i < tl->n_kinds; i++) free(tl->kinds[i]);
    free(tl->kinds);
    memset(tl, 0, sizeof *tl);
}

uint16_t timeline_kind_id(struct timeline *tl, const char *name)
{
    /* Few distinct kinds exist, so a linear scan beats a hash table here. */
    for (size_t i = 0; i < tl->n_kinds; i++)
        if (strcmp(tl->kinds[i], name) == 0) return (uint16_t)i;
    assert(tl->n_kinds < UINT16_MAX);
    MP_GROW(tl->kinds, tl->cap_kinds, tl->n_kinds + 1);
    tl->kinds[tl->n_kinds] = mp_xstrdup(name);
    return (uint16_t)tl->n_kinds++;
}

const char *timeline_kind_name(const struct timeline *tl, uint16_t kind)
{
    return kind < tl->n_kinds ? tl->kinds[kind] : "?";
}

void timeline_add_op(struct timeline *tl, const struct tl_op *op, const char *label)
{
    assert(op->end >= op->start && op->chip >= 0 && op->stream < TL_STREAMS);
    MP_GROW(tl->ops, tl->cap_ops, tl->n_ops + 1);
    struct tl_op *o = &tl->ops[tl->n_ops++];
    *o = *op;
    o->label = 0;
    if (label && *label) {
        size_t n = strlen(label) + 1;
        assert(tl->n_strings + n < UINT32_MAX);
        MP_GROW(tl->strings, tl->cap_strings, tl->n_strings + n);
        memcpy(tl->strings + tl->n_strings, label, n);
        o->label = (uint32_t)tl->n_strings;
        tl->n_strings += n;
    }
    tl->finished = false;
}

void timeline_add_mem(struct timeline *tl, const struct tl_mem *m)
{
    assert(m->chip >= 0);
    MP_GROW(tl->mem, tl->cap_mem, tl->n_mem + 1);
    tl->mem[tl->n_mem++] = *m;
    tl->finished = false;
}

void timeline_set_meta(struct timeline *tl, int chip, const char *key, const char *value)
{
    for (size_t i = 0; i < tl->n_meta; i++) {
        if (tl->meta[i].chip == chip && strcmp(tl->meta[i].key, key) == 0) {
            free(tl->meta[i].value);
            tl->meta[i].value = mp_xstrdup(value);
            return;
        }
    }
    MP_GROW(tl->meta, tl->cap_meta, tl->n_meta + 1);
    tl->meta[tl->n_meta++] = (struct tl_meta){ chip, mp_xstrdup(key), mp_xstrdup(value) };
    tl->finished = false;
}

const char *timeline_meta(const struct timeline *tl, int chip, const char *key)
{
    for (size_t i = 0; i < tl->n_meta; i++)
        if (tl->meta[i].chip == chip && strcmp(tl->meta[i].key, key) == 0)
            return tl->meta[i].value;
    return NULL;
}

uint16_t timeline_mem_category(const char *label)
{
    for (int c = 0; c < TL_MEM_OTHER; c++)
        if (strcmp(label, mem_cats[c]) == 0) return (uint16_t)c;
    return TL_MEM_OTHER;
}

const char *timeline_mem_category_name(uint16_t cat)
{
    return cat < TL_MEM_CATS ? mem_cats[cat] : "other";
}

/* ---- finishing ---- */

static int cmp_op(const void *a, const void *b)
{
    const struct tl_op *x = a, *y = b;
    if (x->chip != y->chip) return x->chip < y->chip ? -1 : 1;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* Memory rows keep their file order among equal times (qsort is not stable,
 * so the index breaks ties): in_use after the last change at t is what the
 * simulator meant. */
struct mem_sort { struct tl_mem m; size_t idx; };

static int cmp_mem(const void *a, const void *b)
{
    const struct mem_sort *x = a, *y = b;
    if (x->m.chip != y->m.chip) return x->m.chip < y->m.chip ? -1 : 1;
    if (x->m.t != y->m.t) return x->m.t < y->m.t ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_time(const void *a, const void *b)
{
    mp_time x = *(const mp_time *)a, y = *(const mp_time *)b;
    return x < y ? -1 : x > y;
}

static const struct timeline *row_sort_tl; /* qsort has no context pointer */

static int cmp_row(const void *a, const void *b)
{
    const struct tl_chip *x = &row_sort_tl->chips[*(const int *)a];
    const struct tl_chip *y = &row_sort_tl->chips[*(const int *)b];
    /* Chips without a stage (memory or meta only) go last. */
    int32_t sx = x->stage < 0 ? INT32_MAX : x->stage, sy = y->stage < 0 ? INT32_MAX : y->stage;
    if (sx != sy) return sx < sy ? -1 : 1;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    int ca = *(const int *)a, cb = *(const int *)b;
    return ca < cb ? -1 : ca > cb;
}

static void index_memory(struct timeline *tl)
{
    if (tl->n_mem > 1) {
        struct mem_sort *tmp = mp_xmalloc(tl->n_mem * sizeof *tmp);
        for (size_t i = 0; i < tl->n_mem; i++) tmp[i] = (struct mem_sort){ tl->mem[i], i };
        qsort(tmp, tl->n_mem, sizeof *tmp, cmp_mem);
        for (size_t i = 0; i < tl->n_mem; i++) tl->mem[i] = tmp[i].m;
        free(tmp);
    }
    for (size_t i = 0; i < tl->n_mem; i++) {
        struct tl_chip *c = &tl->chips[tl->mem[i].chip];
        if (c->mem_count == 0) c->mem_first = i;
        c->mem_count++;
        if (tl->mem[i].in_use > c->peak_mem) c->peak_mem = tl->mem[i].in_use;
        if (c->peak_mem > tl->max_peak_mem) tl->max_peak_mem = c->peak_mem;
    }
}

static void index_ops(struct timeline *tl)
{
    qsort(tl->ops, tl->n_ops, sizeof *tl->ops, cmp_op);
    tl->maxend = mp_xmalloc((tl->n_ops ? tl->n_ops : 1) * sizeof *tl->maxend);
    tl->cumbusy = mp_xmalloc((tl->n_ops ? tl->n_ops : 1) * sizeof *tl->cumbusy);
    memset(tl->kind_seen, 0, sizeof tl->kind_seen);
    tl->t_begin = tl->n_ops ? INT64_MAX : 0;
    tl->t_end = 0;
    for (size_t i = 0; i < tl->n_ops; i++) {
        const struct tl_op *o = &tl->ops[i];
        struct tl_lane *lane = &tl->lanes[o->chip * TL_STREAMS + o->stream];
        struct tl_chip *c = &tl->chips[o->chip];
        if (lane->count == 0) {
            lane->first = i;
            tl->maxend[i] = o->end;
            tl->cumbusy[i] = o->end - o->start;
        } else {
            /* The union grows by the part of this op past everything before. */
            mp_time prev = tl->maxend[i - 1];
            tl->maxend[i] = o->end > prev ? o->end : prev;
            tl->cumbusy[i] = tl->cumbusy[i - 1] +
                             (o->end > prev ? o->end - (o->start > prev ? o->start : prev) : 0);
        }
        tl->kind_seen[o->kind < TL_KIND_CUSTOM ? o->kind : TL_KIND_CUSTOM] = true;
        lane->count++;
        if (c->stage < 0) c->stage = o->stage;
        if (o->stream == TL_COMM) tl->has_comm = true;
        if (o->start < tl->t_begin) tl->t_begin = o->start;
        if (o->end > tl->t_end) tl->t_end = o->end;
    }
    /* Busy time is the union of intervals, so overlapping ops count once. */
    for (int chip = 0; chip < tl->n_chips; chip++) {
        const struct tl_lane *lane = &tl->lanes[chip * TL_STREAMS + TL_COMPUTE];
        tl->chips[chip].busy = lane->count ? tl->cumbusy[lane->first + lane->count - 1] : 0;
    }
}

/* Level-of-detail pyramid of one lane (timeline.h). Level 0 has about one
 * bin per op (a power of two, at most 65536), so a column that covers
 * several bins covers several ops; each level above halves the bins. The
 * per-kind time of every bin is summed exactly in doubles in `w` (scratch
 * of n0 × TL_LOD_SLOTS), then folded pairwise level by level. */
static void build_lod(struct timeline *tl, struct tl_lane *lane, double *w)
{
    const struct tl_op *ops = &tl->ops[lane->first];
    double base = (double)ops[0].start;
    double end = (double)tl->maxend[lane->first + lane->count - 1];
    if (!(end > base)) return;
    uint32_t n0 = 64;
    while (n0 < lane->count && n0 < (1u << 16)) n0 <<= 1;
    double b0 = (end - base) / n0;
    memset(w, 0, (size_t)n0 * TL_LOD_SLOTS * sizeof *w);
    for (size_t i = 0; i < lane->count; i++) {
        double s = (double)ops[i].start - base, e = (double)ops[i].end - base;
        int slot = ops[i].kind < TL_KIND_CUSTOM ? ops[i].kind : TL_KIND_CUSTOM;
        size_t j0 = (size_t)(s / b0), j1 = (size_t)(e / b0);
        if (j1 >= n0) j1 = n0 - 1;
        if (j0 > j1) j0 = j1;
        for (size_t j = j0; j <= j1; j++) {
            double lo = j * b0, hi = lo + b0;
            double ov = (e < hi ? e : hi) - (s > lo ? s : lo);
            if (j == n0 - 1 && e > hi) ov += e - hi; /* rounding at the very end */
            if (ov > 0) w[j * TL_LOD_SLOTS + (size_t)slot] += ov;
        }
    }
    struct tl_lod *lod = mp_xcalloc(1, sizeof *lod);
    lod->base = base;
    lod->b0 = b0;
    lod->n0 = n0;
    size_t total = 0;
    int levels = 0;
    for (uint32_t n = n0; n >= 4 && levels < 24; n >>= 1) lod->off[levels++] = total, total += n;
    lod->levels = levels;
    lod->busy = mp_xmalloc(total * sizeof *lod->busy);
    lod->kind = mp_xmalloc(total * sizeof *lod->kind);
    for (int l = 0; l < levels; l++) {
        uint32_t n = n0 >> l;
        double width = b0 * (double)(1u << l);
        if (l > 0) /* fold pairs of the level below, in place */
            for (uint32_t j = 0; j < n; j++)
                for (int k = 0; k < TL_LOD_SLOTS; k++)
                    w[j * TL_LOD_SLOTS + k] = w[2 * j * TL_LOD_SLOTS + k] +
                                              w[(2 * j + 1) * TL_LOD_SLOTS + k];
        for (uint32_t j = 0; j < n; j++) {
            const double *x = &w[j * TL_LOD_SLOTS];
            double sum = 0;
            int best = 0;
            for (int k = 0; k < TL_LOD_SLOTS; k++) {
                sum += x[k];
                if (x[k] > x[best]) best = k;
            }
            lod->busy[lod->off[l] + j] = (float)(sum / width);
            lod->kind[lod->off[l] + j] = (uint8_t)best;
        }
    }
    lane->lod = lod;
}

static void index_lod(struct timeline *tl)
{
    double *w = NULL;
    for (int i = 0; i < tl->n_chips * TL_STREAMS; i++) {
        struct tl_lane *lane = &tl->lanes[i];
        if (lane->count < TL_LOD_MIN_OPS) continue;
        if (!w) w = mp_xmalloc((size_t)(1u << 16) * TL_LOD_SLOTS * sizeof *w);
        build_lod(tl, lane, w);
    }
    free(w);
}

static void index_events(struct timeline *tl)
{
    tl->events = mp_xmalloc((2 * tl->n_ops + 1) * sizeof *tl->events);
    size_t n = 0;
    for (size_t i = 0; i < tl->n_ops; i++) {
        tl->events[n++] = tl->ops[i].start;
        tl->events[n++] = tl->ops[i].end;
    }
    qsort(tl->events, n, sizeof *tl->events, cmp_time);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || tl->events[u - 1] != tl->events[i]) tl->events[u++] = tl->events[i];
    tl->n_events = u;
}

void timeline_finish(struct timeline *tl)
{
    free_derived(tl);
    tl->has_comm = tl->has_mem = false;
    tl->max_peak_mem = 0;

    int max_chip = -1;
    for (size_t i = 0; i < tl->n_ops; i++)
        if (tl->ops[i].chip > max_chip) max_chip = tl->ops[i].chip;
    for (size_t i = 0; i < tl->n_mem; i++)
        if (tl->mem[i].chip > max_chip) max_chip = tl->mem[i].chip;
    for (size_t i = 0; i < tl->n_meta; i++)
        if (tl->meta[i].chip > max_chip) max_chip = tl->meta[i].chip;
    tl->n_chips = max_chip + 1;
    tl->chips = mp_xcalloc((size_t)(tl->n_chips ? tl->n_chips : 1), sizeof *tl->chips);
    tl->lanes = mp_xcalloc((size_t)(tl->n_chips ? tl->n_chips : 1) * TL_STREAMS, sizeof *tl->lanes);
    for (int c = 0; c < tl->n_chips; c++) {
        tl->chips[c].stage = -1;
        tl->chips[c].node = -1;
    }
    for (size_t i = 0; i < tl->n_ops; i++) tl->chips[tl->ops[i].chip].present = true;
    for (size_t i = 0; i < tl->n_mem; i++) tl->chips[tl->mem[i].chip].present = true;
    for (size_t i = 0; i < tl->n_meta; i++) {
        const struct tl_meta *m = &tl->meta[i];
        if (m->chip < 0) continue;
        struct tl_chip *c = &tl->chips[m->chip];
        c->present = true;
        if (strcmp(m->key, "capacity_bytes") == 0) c->capacity = strtoll(m->value, NULL, 10);
        else if (strcmp(m->key, "node") == 0) c->node = (int32_t)strtol(m->value, NULL, 10);
    }

    index_ops(tl);
    index_lod(tl);
    index_memory(tl);
    tl->has_mem = tl->n_mem > 0;
    index_events(tl);

    tl->rows = mp_xmalloc((size_t)(tl->n_chips ? tl->n_chips : 1) * sizeof *tl->rows);
    for (int c = 0; c < tl->n_chips; c++)
        if (tl->chips[c].present) tl->rows[tl->n_rows++] = c;
    row_sort_tl = tl;
    qsort(tl->rows, (size_t)tl->n_rows, sizeof *tl->rows, cmp_row);
    row_sort_tl = NULL;

    /* bubble = 1 − Σ busy / (chips with compute × makespan), DESIGN.md §3;
     * a stage is a chip row here (one lane per tensor-parallel group). */
    mp_time span = tl->t_end - tl->t_begin;
    double busy = 0;
    int lanes = 0;
    for (int c = 0; c < tl->n_chips; c++) {
        if (tl->lanes[c * TL_STREAMS + TL_COMPUTE].count == 0) continue;
        busy += (double)tl->chips[c].busy;
        lanes++;
    }
    tl->bubble = (lanes && span > 0) ? 1.0 - busy / ((double)lanes * (double)span) : 0.0;
    tl->finished = true;
}

size_t timeline_lane_seek(const struct timeline *tl, const struct tl_lane *lane, mp_time t)
{
    /* maxend is non-decreasing within a lane: find the first entry > t. */
    size_t lo = lane->first, hi = lane->first + lane->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tl->maxend[mid] > t) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

double timeline_utilization(const struct timeline *tl, int chip)
{
    mp_time span = tl->t_end - tl->t_begin;
    if (chip < 0 || chip >= tl->n_chips || span <= 0) return 0.0;
    return (double)tl->chips[chip].busy / (double)span;
}

mp_time timeline_busy_until(const struct timeline *tl, int chip, mp_time t)
{
    if (chip < 0 || chip >= tl->n_chips) return 0;
    const struct tl_lane *lane = timeline_lane(tl, chip, TL_COMPUTE);
    /* lo = first op starting at or after t; the ops before it all start
     * before t, so their union's part past t is [t, their max end). */
    size_t lo = lane->first, hi = lane->first + lane->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tl->ops[mid].start < t) lo = mid + 1;
        else hi = mid;
    }
    if (lo == lane->first) return 0;
    size_t i = lo - 1;
    return tl->cumbusy[i] - (tl->maxend[i] > t ? tl->maxend[i] - t : 0);
}

double timeline_utilization_until(const struct timeline *tl, int chip, mp_time t)
{
    if (t >= tl->t_end) return timeline_utilization(tl, chip);
    if (t <= tl->t_begin) return 0.0;
    return (double)timeline_busy_until(tl, chip, t) / (double)(t - tl->t_begin);
}

bool timeline_next_event(const struct timeline *tl, mp_time t, int dir, mp_time *out)
{
    /* lo = number of events <= t (dir > 0) or < t (dir < 0). */
    size_t lo = 0, hi = tl->n_events;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        bool left = dir > 0 ? tl->events[mid] <= t : tl->events[mid] < t;
        if (left) lo = mid + 1;
        else hi = mid;
    }
    if (dir > 0) {
        if (lo >= tl->n_events) return false;
        *out = tl->events[lo];
    } else {
        if (lo == 0) return false;
        *out = tl->events[lo - 1];
    }
    return true;
}
