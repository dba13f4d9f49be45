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
    [TL_KIND_OPTIMIZER] = "optimizer",
};

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
    free(tl->chips);  tl->chips = NULL;
    free(tl->lanes);  tl->lanes = NULL;
    free(tl->maxend); tl->maxend = NULL;
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
    tl->t_begin = tl->n_ops ? INT64_MAX : 0;
    tl->t_end = 0;
    for (size_t i = 0; i < tl->n_ops; i++) {
        const struct tl_op *o = &tl->ops[i];
        struct tl_lane *lane = &tl->lanes[o->chip * TL_STREAMS + o->stream];
        struct tl_chip *c = &tl->chips[o->chip];
        if (lane->count == 0) {
            lane->first = i;
            tl->maxend[i] = o->end;
        } else {
            tl->maxend[i] = o->end > tl->maxend[i - 1] ? o->end : tl->maxend[i - 1];
        }
        lane->count++;
        if (c->stage < 0) c->stage = o->stage;
        if (o->stream == TL_COMM) tl->has_comm = true;
        if (o->start < tl->t_begin) tl->t_begin = o->start;
        if (o->end > tl->t_end) tl->t_end = o->end;
    }
    /* Busy time is the union of intervals, so overlapping ops count once. */
    for (int chip = 0; chip < tl->n_chips; chip++) {
        const struct tl_lane *lane = &tl->lanes[chip * TL_STREAMS + TL_COMPUTE];
        mp_time busy = 0, cur_s = 0, cur_e = -1;
        for (size_t i = lane->first; i < lane->first + lane->count; i++) {
            const struct tl_op *o = &tl->ops[i];
            if (o->start > cur_e) {
                if (cur_e > cur_s) busy += cur_e - cur_s;
                cur_s = o->start;
                cur_e = o->end;
            } else if (o->end > cur_e) {
                cur_e = o->end;
            }
        }
        if (cur_e > cur_s) busy += cur_e - cur_s;
        tl->chips[chip].busy = busy;
    }
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
