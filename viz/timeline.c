/* timeline.c — the in-memory timeline: adding rows, then one finishing pass
 * that sorts and indexes them so each frame only touches what is on screen.
 * Idle time and memory queries are in timeline_query.c. */
#include "timeline.h"
#include "timeline_impl.h"

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
    "weights", "grads", "optimizer", "activations", "kv", "comm", "other",
};

static const char *const comm_names[TL_COMM_KINDS] = { "", "tp", "pp", "dp", "ep", "cp" };

void timeline_init(struct timeline *tl)
{
    memset(tl, 0, sizeof *tl);
    /* Offset 0 of the label pool is the empty string, so a zeroed info has "". */
    MP_GROW(tl->strings, tl->cap_strings, 1);
    tl->strings[0] = '\0';
    tl->n_strings = 1;
    for (int k = 0; k < TL_KIND_CUSTOM; k++) {
        MP_GROW(tl->kinds, tl->cap_kinds, tl->n_kinds + 1);
        tl->kinds[tl->n_kinds++] = mp_xstrdup(known_kinds[k]);
    }
    tl->max_chunk = -1;
}

static void free_lane_derived(struct tl_lane *l)
{
    if (l->ends != l->end) free(l->ends);
    l->ends = NULL;
    free(l->maxend);
    free(l->ck_busy);
    free(l->ck_maxend);
    free(l->rel);
    l->maxend = l->ck_busy = l->ck_maxend = NULL;
    l->rel = NULL;
    if (l->lod) {
        free(l->lod->busy);
        free(l->lod->kind);
        free(l->lod);
        l->lod = NULL;
    }
}

static void free_derived(struct timeline *tl)
{
    for (int r = 0; r < tl->n_rows; r++) {
        for (int s = 0; s < TL_STREAMS; s++) free_lane_derived(&tl->rows[r].lane[s]);
        free(tl->rows[r].mem_ck);
        tl->rows[r].mem_ck = NULL;
    }
    free(tl->order);
    tl->order = NULL;
    tl->finished = false;
}

void timeline_release(struct timeline *tl)
{
    free_derived(tl);
    for (int r = 0; r < tl->n_rows; r++) {
        for (int s = 0; s < TL_STREAMS; s++) {
            struct tl_lane *l = &tl->rows[r].lane[s];
            free(l->start);
            free(l->end);
            free(l->info);
            free(l->released);
            free(l->ids);
        }
    }
    free(tl->rows);
    free(tl->row_of_key);
    free(tl->name);
    free(tl->infos);
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

uint8_t timeline_comm_id(const char *name)
{
    for (int c = 1; c < TL_COMM_KINDS; c++)
        if (strcmp(name, comm_names[c]) == 0) return (uint8_t)c;
    return TL_COMM_NONE;
}

const char *timeline_comm_name(uint8_t comm) { return comm < TL_COMM_KINDS ? comm_names[comm] : ""; }

void timeline_rows_by_slot(struct timeline *tl)
{
    assert(tl->n_ops == 0);
    tl->rows_by_slot = true;
}

/* ---- adding ---- */

/* The row of `key`, made when new. */
static int row_for(struct timeline *tl, int key)
{
    assert(key >= 0 && key <= TL_MAX_CHIP);
    if (key >= tl->n_keys) {
        int n = tl->n_keys ? tl->n_keys : 16;
        while (n <= key) n *= 2;
        tl->row_of_key = mp_xrealloc(tl->row_of_key, (size_t)n * sizeof *tl->row_of_key);
        for (int i = tl->n_keys; i < n; i++) tl->row_of_key[i] = -1;
        tl->n_keys = n;
    }
    int r = tl->row_of_key[key];
    if (r >= 0) return r;
    MP_GROW(tl->rows, tl->cap_rows, tl->n_rows + 1);
    r = tl->n_rows++;
    struct tl_row *row = &tl->rows[r];
    memset(row, 0, sizeof *row);
    row->key = key;
    row->stage = row->node = row->serves = -1;
    tl->row_of_key[key] = r;
    return r;
}

int timeline_row_of(const struct timeline *tl, int key)
{
    return key >= 0 && key < tl->n_keys ? tl->row_of_key[key] : -1;
}

uint32_t timeline_intern(struct timeline *tl, const char *label)
{
    if (!label || !*label) return 0;
    size_t n = strlen(label) + 1;
    assert(tl->n_strings + n < UINT32_MAX);
    MP_GROW(tl->strings, tl->cap_strings, tl->n_strings + n);
    memcpy(tl->strings + tl->n_strings, label, n);
    uint32_t off = (uint32_t)tl->n_strings;
    tl->n_strings += n;
    return off;
}

uint32_t timeline_add_info(struct timeline *tl, const struct tl_op *op, const char *label)
{
    assert(tl->n_infos < TL_NONE);
    MP_GROW(tl->infos, tl->cap_infos, tl->n_infos + 1);
    struct tl_info *in = &tl->infos[tl->n_infos];
    bool fb = op->kind == TL_KIND_FB;
    *in = (struct tl_info){
        .bytes = op->bytes, .chip = op->chip, .stage = op->stage, .microbatch = op->microbatch,
        .microbatch2 = fb ? op->microbatch2 : -1, .layer_first = op->layer_first,
        .layer_last = op->layer_last, .label = timeline_intern(tl, label),
        .chunk = (int16_t)(op->chunk < INT16_MAX ? op->chunk : INT16_MAX),
        .chunk2 = (int16_t)(!fb ? -1 : op->chunk2 < INT16_MAX ? op->chunk2 : INT16_MAX),
        .kind = op->kind, .comm = op->comm, .dir = op->dir, .dir2 = fb ? op->dir2 : TL_DIR_NONE,
    };
    return (uint32_t)tl->n_infos++;
}

static void lane_grow(struct tl_lane *l, size_t need)
{
    if (need <= l->cap) return;
    size_t cap = l->cap ? l->cap : 64;
    while (cap < need) cap = cap + cap / 2;
    l->start = mp_xrealloc(l->start, cap * sizeof *l->start);
    l->end = mp_xrealloc(l->end, cap * sizeof *l->end);
    l->info = mp_xrealloc(l->info, cap * sizeof *l->info);
    if (l->released) l->released = mp_xrealloc(l->released, cap * sizeof *l->released);
    if (l->ids) l->ids = mp_xrealloc(l->ids, cap * sizeof *l->ids);
    l->cap = cap;
}

void timeline_reserve(struct timeline *tl, int chip, int stream, size_t n)
{
    int ri_ = row_for(tl, chip); /* may move tl->rows */
    struct tl_lane *l = &tl->rows[ri_].lane[stream];
    lane_grow(l, l->n + n);
}

static struct tl_lane *lane_push(struct timeline *tl, int key, int stream, mp_time start,
                                 mp_time end, uint32_t info)
{
    assert(end >= start && stream >= 0 && stream < TL_STREAMS);
    int ri_ = row_for(tl, key); /* may move tl->rows */
    struct tl_lane *l = &tl->rows[ri_].lane[stream];
    lane_grow(l, l->n + 1);
    l->start[l->n] = start;
    l->end[l->n] = end;
    l->info[l->n] = info;
    if (l->released) l->released[l->n] = TL_NONE;
    if (l->ids) l->ids[l->n] = TL_NONE;
    l->n++;
    tl->n_ops++;
    tl->finished = false;
    return l;
}

void timeline_add_ops(struct timeline *tl, int chip, int stream, size_t n, const mp_time *start,
                      const mp_time *end, const uint32_t *info)
{
    if (!n) return;
    int ri_ = row_for(tl, chip);
    struct tl_lane *l = &tl->rows[ri_].lane[stream];
    lane_grow(l, l->n + n);
    for (size_t i = 0; i < n; i++) assert(end[i] >= start[i] && info[i] < tl->n_infos);
    memcpy(l->start + l->n, start, n * sizeof *start);
    memcpy(l->end + l->n, end, n * sizeof *end);
    memcpy(l->info + l->n, info, n * sizeof *info);
    if (l->released) for (size_t i = 0; i < n; i++) l->released[l->n + i] = TL_NONE;
    if (l->ids) for (size_t i = 0; i < n; i++) l->ids[l->n + i] = TL_NONE;
    l->n += n;
    tl->n_ops += n;
    tl->finished = false;
}

void timeline_add_op_info(struct timeline *tl, int chip, int stream, mp_time start, mp_time end,
                          uint32_t info)
{
    assert(info < tl->n_infos);
    lane_push(tl, chip, stream, start, end, info);
}

/* An optional per-op array, made on first use with TL_NONE for the ops
 * before. */
static uint32_t *optional(uint32_t **arr, const struct tl_lane *l)
{
    if (!*arr) {
        *arr = mp_xmalloc(l->cap * sizeof **arr);
        for (size_t i = 0; i < l->cap; i++) (*arr)[i] = TL_NONE;
    }
    return *arr;
}

void timeline_add_op(struct timeline *tl, const struct tl_op *op, const char *label)
{
    assert(op->chip >= 0 && op->chip <= TL_MAX_CHIP);
    int key = tl->rows_by_slot ? (op->microbatch >= 0 ? op->microbatch : 0) : op->chip;
    uint32_t info = timeline_add_info(tl, op, label);
    struct tl_lane *l = lane_push(tl, key, op->stream, op->start, op->end, info);
    if (op->has_id) {
        assert(op->id <= TL_MAX_ID);
        optional(&l->ids, l)[l->n - 1] = op->id;
        tl->has_ids = true;
    }
    if (op->has_released) {
        assert(op->released_by <= TL_MAX_ID);
        optional(&l->released, l)[l->n - 1] = op->released_by;
        tl->has_released = true;
    }
}

void timeline_add_mem(struct timeline *tl, const struct tl_mem *m)
{
    assert(m->chip >= 0 && m->chip <= TL_MAX_CHIP);
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

/* qsort has no context pointer; finishing is not reentrant anyway. */
static const struct tl_lane *sort_lane;

static int cmp_lane_idx(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    const struct tl_lane *l = sort_lane;
    if (l->start[x] != l->start[y]) return l->start[x] < l->start[y] ? -1 : 1;
    if (l->end[x] != l->end[y]) return l->end[x] < l->end[y] ? -1 : 1;
    return x < y ? -1 : x > y; /* stable: equal ops keep their order */
}

#define PERMUTE(arr, perm, n, type)                                          \
    do {                                                                    \
        if (arr) {                                                          \
            type *tmp_ = mp_xmalloc((n) * sizeof *tmp_);                    \
            for (size_t i_ = 0; i_ < (n); i_++) tmp_[i_] = (arr)[(perm)[i_]]; \
            memcpy((arr), tmp_, (n) * sizeof *tmp_);                        \
            free(tmp_);                                                     \
        }                                                                   \
    } while (0)

/* Sort a lane by (start, end) unless it already is (the simulator's lanes
 * are: a stream runs its ops one after another). */
static void sort_lane_ops(struct tl_lane *l)
{
    bool sorted = true;
    for (size_t i = 1; i < l->n && sorted; i++)
        sorted = l->start[i - 1] < l->start[i] ||
                 (l->start[i - 1] == l->start[i] && l->end[i - 1] <= l->end[i]);
    if (sorted) return;
    size_t *perm = mp_xmalloc(l->n * sizeof *perm);
    for (size_t i = 0; i < l->n; i++) perm[i] = i;
    sort_lane = l;
    qsort(perm, l->n, sizeof *perm, cmp_lane_idx);
    sort_lane = NULL;
    PERMUTE(l->start, perm, l->n, mp_time);
    PERMUTE(l->end, perm, l->n, mp_time);
    PERMUTE(l->info, perm, l->n, uint32_t);
    PERMUTE(l->released, perm, l->n, uint32_t);
    PERMUTE(l->ids, perm, l->n, uint32_t);
    free(perm);
}

static int cmp_time(const void *a, const void *b)
{
    mp_time x = *(const mp_time *)a, y = *(const mp_time *)b;
    return x < y ? -1 : x > y;
}

/* Running max end (only when ops overlap), sorted ends, busy checkpoints. */
static void index_lane(struct tl_lane *l)
{
    bool overlap = false;
    for (size_t i = 1; i < l->n && !overlap; i++) overlap = l->end[i - 1] > l->start[i];
    if (overlap) {
        l->maxend = mp_xmalloc(l->n * sizeof *l->maxend);
        l->ends = mp_xmalloc(l->n * sizeof *l->ends);
        mp_time m = INT64_MIN;
        for (size_t i = 0; i < l->n; i++) {
            if (l->end[i] > m) m = l->end[i];
            l->maxend[i] = m;
        }
        memcpy(l->ends, l->end, l->n * sizeof *l->ends);
        qsort(l->ends, l->n, sizeof *l->ends, cmp_time);
    } else {
        l->ends = l->end;
    }
    size_t nck = l->n / TL_CK + 1;
    l->ck_busy = mp_xmalloc(nck * sizeof *l->ck_busy);
    l->ck_maxend = mp_xmalloc(nck * sizeof *l->ck_maxend);
    /* Busy time is the union of intervals, so overlapping ops count once. */
    mp_time busy = 0, m = INT64_MIN;
    for (size_t i = 0; i < l->n; i++) {
        if (i % TL_CK == 0) {
            l->ck_busy[i / TL_CK] = busy;
            l->ck_maxend[i / TL_CK] = m;
        }
        if (l->end[i] > m) {
            busy += l->end[i] - (l->start[i] > m ? l->start[i] : m);
            m = l->end[i];
        }
    }
    if (l->n % TL_CK == 0) {
        l->ck_busy[l->n / TL_CK] = busy;
        l->ck_maxend[l->n / TL_CK] = m;
    }
    l->busy = busy;
}

struct id_pair { uint32_t id, g; };

static int cmp_id(const void *a, const void *b)
{
    const struct id_pair *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* released_by names ops by their file ids; turn them into global indices.
 * Dense ids (the simulator's are 0..n−1) use a table, others a sorted list. */
static void resolve_released(struct timeline *tl)
{
    if (!tl->has_released) return;
    uint32_t max_id = 0;
    size_t n_ids = 0;
    for (int r = 0; r < tl->n_rows; r++)
        for (int s = 0; s < TL_STREAMS; s++) {
            const struct tl_lane *l = &tl->rows[r].lane[s];
            for (size_t k = 0; l->ids && k < l->n; k++)
                if (l->ids[k] != TL_NONE) {
                    n_ids++;
                    if (l->ids[k] > max_id) max_id = l->ids[k];
                }
        }
    bool dense = n_ids > 0 && (size_t)max_id < 2 * n_ids + 1024;
    uint32_t *table = NULL;
    struct id_pair *pairs = NULL;
    if (dense) {
        table = mp_xmalloc(((size_t)max_id + 1) * sizeof *table);
        for (size_t i = 0; i <= max_id; i++) table[i] = TL_NONE;
    } else if (n_ids) {
        pairs = mp_xmalloc(n_ids * sizeof *pairs);
    }
    size_t np = 0;
    for (int r = 0; r < tl->n_rows; r++)
        for (int s = 0; s < TL_STREAMS; s++) {
            const struct tl_lane *l = &tl->rows[r].lane[s];
            for (size_t k = 0; l->ids && k < l->n; k++) {
                if (l->ids[k] == TL_NONE) continue;
                uint32_t g = (uint32_t)(l->base + k);
                if (table) table[l->ids[k]] = g;
                else pairs[np++] = (struct id_pair){ l->ids[k], g };
            }
        }
    if (pairs) qsort(pairs, np, sizeof *pairs, cmp_id);
    for (int r = 0; r < tl->n_rows; r++)
        for (int s = 0; s < TL_STREAMS; s++) {
            struct tl_lane *l = &tl->rows[r].lane[s];
            if (!l->released || !l->n) continue;
            l->rel = mp_xmalloc(l->n * sizeof *l->rel);
            for (size_t k = 0; k < l->n; k++) {
                uint32_t id = l->released[k], g = TL_NONE;
                if (id != TL_NONE && table && id <= max_id) {
                    g = table[id];
                } else if (id != TL_NONE && pairs) {
                    struct id_pair key = { id, 0 };
                    const struct id_pair *hit = bsearch(&key, pairs, np, sizeof *pairs, cmp_id);
                    if (hit) g = hit->g;
                }
                l->rel[k] = g;
            }
        }
    free(table);
    free(pairs);
}

static const struct timeline *order_tl;

/* Screen order: pipeline rows by (stage, node, key); the rows that serve one
 * (DP lanes, EP ranks) right after it by key; rows with neither last. */
static int cmp_order(const void *a, const void *b)
{
    const struct tl_row *rows = order_tl->rows;
    int ra = *(const int *)a, rb = *(const int *)b;
    const struct tl_row *x = &rows[ra], *y = &rows[rb];
    const struct tl_row *ox = x->serves >= 0 ? &rows[x->serves] : x;
    const struct tl_row *oy = y->serves >= 0 ? &rows[y->serves] : y;
    int32_t sx = ox->stage < 0 ? INT32_MAX : ox->stage, sy = oy->stage < 0 ? INT32_MAX : oy->stage;
    if (sx != sy) return sx < sy ? -1 : 1;
    if (ox->node != oy->node) return ox->node < oy->node ? -1 : 1;
    if (ox->key != oy->key) return ox->key < oy->key ? -1 : 1;
    if ((x->serves >= 0) != (y->serves >= 0)) return x->serves >= 0 ? 1 : -1;
    return x->key < y->key ? -1 : x->key > y->key;
}

struct mem_sort { struct tl_mem m; size_t idx; };

/* Memory rows keep their file order among equal times (qsort is not stable,
 * so the index breaks ties): in_use after the last change at t is what the
 * simulator meant. */
static int cmp_mem(const void *a, const void *b)
{
    const struct mem_sort *x = a, *y = b;
    if (x->m.chip != y->m.chip) return x->m.chip < y->m.chip ? -1 : 1;
    if (x->m.t != y->m.t) return x->m.t < y->m.t ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void index_memory(struct timeline *tl)
{
    bool sorted = true;
    for (size_t i = 1; i < tl->n_mem && sorted; i++)
        sorted = tl->mem[i - 1].chip < tl->mem[i].chip ||
                 (tl->mem[i - 1].chip == tl->mem[i].chip && tl->mem[i - 1].t <= tl->mem[i].t);
    if (!sorted) {
        struct mem_sort *tmp = mp_xmalloc(tl->n_mem * sizeof *tmp);
        for (size_t i = 0; i < tl->n_mem; i++) tmp[i] = (struct mem_sort){ tl->mem[i], i };
        qsort(tmp, tl->n_mem, sizeof *tmp, cmp_mem);
        for (size_t i = 0; i < tl->n_mem; i++) tl->mem[i] = tmp[i].m;
        free(tmp);
    }
    for (size_t i = 0; i < tl->n_mem; i++) {
        int ri_ = row_for(tl, tl->mem[i].chip); /* may move tl->rows */
        struct tl_row *r = &tl->rows[ri_];
        if (r->mem_count == 0) r->mem_first = i;
        r->mem_count++;
        if (tl->mem[i].in_use > r->peak_mem) r->peak_mem = tl->mem[i].in_use;
        if (r->peak_mem > tl->max_peak_mem) tl->max_peak_mem = r->peak_mem;
    }
    /* Per category levels every TL_CK rows, for the breakdown at an instant. */
    for (int ri = 0; ri < tl->n_rows; ri++) {
        struct tl_row *r = &tl->rows[ri];
        if (!r->mem_count) continue;
        size_t nck = r->mem_count / TL_CK + 1;
        r->mem_ck = mp_xcalloc(nck, sizeof *r->mem_ck);
        int64_t lv[TL_MEM_CATS] = { 0 };
        for (size_t j = 0; j < r->mem_count; j++) {
            if (j % TL_CK == 0) memcpy(r->mem_ck[j / TL_CK], lv, sizeof lv);
            const struct tl_mem *m = &tl->mem[r->mem_first + j];
            lv[m->category < TL_MEM_CATS ? m->category : TL_MEM_OTHER] += m->delta;
        }
        if (r->mem_count % TL_CK == 0) memcpy(r->mem_ck[r->mem_count / TL_CK], lv, sizeof lv);
    }
}

static void apply_meta(struct timeline *tl)
{
    for (size_t i = 0; i < tl->n_meta; i++) {
        const struct tl_meta *m = &tl->meta[i];
        if (m->chip < 0 || m->chip > TL_MAX_CHIP || tl->rows_by_slot) continue;
        int ri_ = row_for(tl, m->chip); /* may move tl->rows */
        struct tl_row *r = &tl->rows[ri_];
        if (strcmp(m->key, "capacity_bytes") == 0) r->capacity = strtoll(m->value, NULL, 10);
        else if (strcmp(m->key, "node") == 0) r->node = (int32_t)strtol(m->value, NULL, 10);
        else if (strcmp(m->key, "stages") == 0) r->stages = m->value;
        else if (strcmp(m->key, "stage") == 0) r->stage = (int32_t)strtol(m->value, NULL, 10);
    }
    /* serves= names a chip; rows may have been made after the meta row. */
    for (size_t i = 0; i < tl->n_meta; i++) {
        const struct tl_meta *m = &tl->meta[i];
        if (m->chip < 0 || tl->rows_by_slot || strcmp(m->key, "serves") != 0) continue;
        char *end;
        long owner = strtol(m->value, &end, 10);
        int ro = *end ? -1 : timeline_row_of(tl, (int)owner);
        int r = timeline_row_of(tl, m->chip);
        if (ro >= 0 && r >= 0 && ro != r && tl->rows[ro].serves < 0) tl->rows[r].serves = ro;
    }
}

void timeline_finish(struct timeline *tl)
{
    free_derived(tl);
    tl->has_comm = tl->has_mem = tl->has_dir = tl->has_fb = false;
    tl->max_peak_mem = 0;
    tl->max_chunk = -1;
    memset(tl->kind_seen, 0, sizeof tl->kind_seen);
    if (!tl->rows_by_slot)
        for (size_t i = 0; i < tl->n_mem; i++) row_for(tl, tl->mem[i].chip);
    apply_meta(tl);

    size_t base = 0;
    uint8_t *seen = mp_xcalloc(tl->n_infos / 8 + 1, 1); /* infos of ops that last */
    tl->t_begin = tl->n_ops ? INT64_MAX : 0;
    tl->t_end = 0;
    for (int r = 0; r < tl->n_rows; r++) {
        struct tl_row *row = &tl->rows[r];
        row->peak_mem = 0;
        row->mem_count = 0;
        for (int s = 0; s < TL_STREAMS; s++) {
            struct tl_lane *l = &row->lane[s];
            sort_lane_ops(l);
            l->base = base;
            base += l->n;
            index_lane(l);
            bool lasts = false;
            for (size_t k = 0; k < l->n; k++) {
                /* Ops that take no time (a hand-off with free links) are
                 * never seen: they get no colour key and no lane. */
                if (l->end[k] > l->start[k]) {
                    seen[l->info[k] >> 3] |= (uint8_t)(1u << (l->info[k] & 7));
                    lasts = true;
                }
            }
            for (size_t k = 0; k < l->n && row->stage < 0; k++)
                if (tl->infos[l->info[k]].stage >= 0) row->stage = tl->infos[l->info[k]].stage;
            for (size_t k = 0; s == TL_COMPUTE && k < l->n; k++) {
                const struct tl_info *in = &tl->infos[l->info[k]];
                if (in->chunk > tl->max_chunk) tl->max_chunk = in->chunk;
                if (in->kind == TL_KIND_FB && in->chunk2 > tl->max_chunk) tl->max_chunk = in->chunk2;
            }
            if (l->n) {
                if (l->start[0] < tl->t_begin) tl->t_begin = l->start[0];
                mp_time e = l->maxend ? l->maxend[l->n - 1] : l->end[l->n - 1];
                if (e > tl->t_end) tl->t_end = e;
                if (s == TL_COMM && lasts) tl->has_comm = true;
            }
        }
    }
    assert(base == tl->n_ops);
    for (size_t i = 0; i < tl->n_infos; i++) {
        const struct tl_info *in = &tl->infos[i];
        if (seen[i >> 3] & (1u << (i & 7)))
            tl->kind_seen[in->kind < TL_KIND_CUSTOM ? in->kind : TL_KIND_CUSTOM] = true;
        if (in->dir != TL_DIR_NONE) tl->has_dir = true;
        if (in->kind == TL_KIND_FB) tl->has_fb = true;
    }
    free(seen);
    resolve_released(tl);
    timeline_build_lod(tl);
    if (!tl->rows_by_slot) index_memory(tl);
    tl->has_mem = tl->n_mem > 0 && !tl->rows_by_slot;

    tl->order = mp_xmalloc((size_t)(tl->n_rows ? tl->n_rows : 1) * sizeof *tl->order);
    for (int r = 0; r < tl->n_rows; r++) tl->order[r] = r;
    order_tl = tl;
    qsort(tl->order, (size_t)tl->n_rows, sizeof *tl->order, cmp_order);
    order_tl = NULL;

    timeline_classify_idle(tl);
    tl->finished = true;
}

bool timeline_locate(const struct timeline *tl, size_t g, int *row, int *stream, size_t *k)
{
    if (g >= tl->n_ops) return false;
    /* Lanes are numbered row by row, stream by stream: search the rows. */
    int lo = 0, hi = tl->n_rows - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (tl->rows[mid].lane[0].base <= g) lo = mid;
        else hi = mid - 1;
    }
    const struct tl_row *r = &tl->rows[lo];
    for (int s = 0; s < TL_STREAMS; s++) {
        const struct tl_lane *l = &r->lane[s];
        if (g >= l->base && g < l->base + l->n) {
            *row = lo;
            *stream = s;
            *k = g - l->base;
            return true;
        }
    }
    return false;
}

void timeline_get_op(const struct timeline *tl, int row, int stream, size_t k, struct tl_op *out)
{
    const struct tl_row *r = &tl->rows[row];
    const struct tl_lane *l = &r->lane[stream];
    const struct tl_info *in = &tl->infos[l->info[k]];
    *out = (struct tl_op){
        .start = l->start[k], .end = l->end[k], .bytes = in->bytes,
        .chip = in->chip >= 0 ? in->chip : r->key, .stage = in->stage >= 0 ? in->stage : r->stage,
        .microbatch = in->microbatch, .microbatch2 = in->microbatch2, .chunk = in->chunk,
        .chunk2 = in->chunk2, .layer_first = in->layer_first, .layer_last = in->layer_last,
        .kind = in->kind, .stream = (uint8_t)stream, .comm = in->comm, .dir = in->dir,
        .dir2 = in->dir2,
    };
    if (l->ids && l->ids[k] != TL_NONE) out->has_id = true, out->id = l->ids[k];
    if (l->released && l->released[k] != TL_NONE)
        out->has_released = true, out->released_by = l->released[k];
}

uint32_t timeline_released(const struct timeline *tl, int row, int stream, size_t k)
{
    const struct tl_lane *l = &tl->rows[row].lane[stream];
    return l->rel ? l->rel[k] : TL_NONE;
}
