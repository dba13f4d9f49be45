/* timeline_query.c — questions the layout asks of a finished timeline: which
 * ops are on screen, how busy a row was until the cursor, what memory held
 * at an instant, and what an idle stretch waited for (timeline.h). */
#include "timeline_impl.h"

#include <string.h>

size_t timeline_lane_seek(const struct tl_lane *lane, mp_time t)
{
    /* Ends (or running max ends) are sorted: binary search for the first > t. */
    const mp_time *e = lane->maxend ? lane->maxend : lane->end;
    size_t lo = 0, hi = lane->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e[mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

size_t timeline_lane_upper(const struct tl_lane *lane, double t)
{
    size_t lo = 0, hi = lane->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((double)lane->start[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* First index whose value is > t (strict) in a sorted array. */
static size_t upper_strict(const mp_time *a, size_t n, mp_time t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* First index whose value is >= t in a sorted array. */
static size_t lower(const mp_time *a, size_t n, mp_time t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

double timeline_utilization(const struct timeline *tl, int row)
{
    mp_time span = tl->t_end - tl->t_begin;
    if (row < 0 || row >= tl->n_rows || span <= 0) return 0.0;
    return (double)tl->rows[row].lane[TL_COMPUTE].busy / (double)span;
}

mp_time timeline_busy_until(const struct timeline *tl, int row, mp_time t)
{
    if (row < 0 || row >= tl->n_rows) return 0;
    const struct tl_lane *l = &tl->rows[row].lane[TL_COMPUTE];
    /* lo = ops starting before t; their union up to t is the union of the
     * checkpoint before them plus a walk of at most TL_CK ops, cut at t. */
    size_t lo = lower(l->start, l->n, t);
    if (lo == 0) return 0;
    size_t j = (lo - 1) / TL_CK;
    mp_time busy = l->ck_busy[j], m = l->ck_maxend[j];
    for (size_t i = j * TL_CK; i < lo; i++) {
        if (l->end[i] > m) {
            busy += l->end[i] - (l->start[i] > m ? l->start[i] : m);
            m = l->end[i];
        }
    }
    return busy - (m > t ? m - t : 0);
}

double timeline_utilization_until(const struct timeline *tl, int row, mp_time t)
{
    if (t >= tl->t_end) return timeline_utilization(tl, row);
    if (t <= tl->t_begin) return 0.0;
    return (double)timeline_busy_until(tl, row, t) / (double)(t - tl->t_begin);
}

bool timeline_next_event(const struct timeline *tl, mp_time t, int dir, mp_time *out)
{
    bool found = false;
    mp_time best = 0;
    for (int r = 0; r < tl->n_rows; r++)
        for (int s = 0; s < TL_STREAMS; s++) {
            const struct tl_lane *l = &tl->rows[r].lane[s];
            if (!l->n) continue;
            const mp_time *arr[2] = { l->start, l->ends };
            for (int a = 0; a < 2; a++) {
                mp_time v;
                if (dir > 0) {
                    size_t i = upper_strict(arr[a], l->n, t);
                    if (i >= l->n) continue;
                    v = arr[a][i];
                    if (!found || v < best) best = v, found = true;
                } else {
                    size_t i = lower(arr[a], l->n, t);
                    if (i == 0) continue;
                    v = arr[a][i - 1];
                    if (!found || v > best) best = v, found = true;
                }
            }
        }
    if (found) *out = best;
    return found;
}

int64_t timeline_mem_at(const struct timeline *tl, int row, mp_time t, int64_t cats[TL_MEM_CATS])
{
    if (cats) memset(cats, 0, TL_MEM_CATS * sizeof *cats);
    if (row < 0 || row >= tl->n_rows) return 0;
    const struct tl_row *r = &tl->rows[row];
    if (!r->mem_count) return 0;
    const struct tl_mem *m = &tl->mem[r->mem_first];
    size_t lo = 0, hi = r->mem_count;
    while (lo < hi) { /* changes at or before t */
        size_t mid = lo + (hi - lo) / 2;
        if (m[mid].t <= t) lo = mid + 1;
        else hi = mid;
    }
    if (cats && lo) {
        size_t j = lo / TL_CK;
        memcpy(cats, r->mem_ck[j], TL_MEM_CATS * sizeof *cats);
        for (size_t i = j * TL_CK; i < lo; i++)
            cats[m[i].category < TL_MEM_CATS ? m[i].category : TL_MEM_OTHER] += m[i].delta;
    }
    return lo ? m[lo - 1].in_use : 0;
}

/* ---- what idle time waited for ---- */

/* Op k of row's compute lane started after an idle stretch w->from..w->to:
 * fill in what released it (tl_wait in timeline.h). Zero-time ops of the
 * row itself (a memory marker) pass the question on to their own cause. */
static void explain(const struct timeline *tl, int row, size_t k, struct tl_wait *w)
{
    const struct tl_lane *l = &tl->rows[row].lane[TL_COMPUTE];
    w->op = (uint32_t)(l->base + k);
    w->split = w->to;
    w->comm = TL_COMM_NONE;
    w->cause = w->origin = TL_NONE;
    w->kind = TL_WAIT_UNKNOWN;
    uint32_t cause = l->rel ? l->rel[k] : TL_NONE;
    int cr = -1, cs = 0;
    size_t ck = 0;
    for (int hop = 0; hop < 8 && cause != TL_NONE; hop++) {
        if (!timeline_locate(tl, cause, &cr, &cs, &ck)) return;
        const struct tl_lane *cl = &tl->rows[cr].lane[cs];
        if (cr != row || cs != TL_COMPUTE || cl->start[ck] != cl->end[ck]) break;
        cause = cl->rel ? cl->rel[ck] : TL_NONE;
    }
    if (cause == TL_NONE || cr < 0) return;
    w->cause = w->origin = cause;
    const struct tl_lane *cl = &tl->rows[cr].lane[cs];
    const struct tl_info *ci = timeline_info(tl, cl, ck);
    if (cs == TL_COMPUTE) {
        w->kind = TL_WAIT_STAGE;
    } else if (ci->kind == TL_KIND_SEND || ci->comm == TL_COMM_PP) {
        /* A hand-off: the other stage's work until it left, the bytes after. */
        uint32_t o = cl->rel ? cl->rel[ck] : TL_NONE;
        if (o != TL_NONE) w->origin = o;
        mp_time s = cl->start[ck];
        if (s <= w->from) {
            w->kind = TL_WAIT_PP;
        } else {
            w->kind = TL_WAIT_STAGE;
            w->split = s < w->to ? s : w->to;
        }
    } else {
        w->kind = TL_WAIT_COMM;
        w->comm = ci->comm;
    }
}

struct tl_wait timeline_wait_at(const struct timeline *tl, int row, mp_time t)
{
    struct tl_wait w = { .idle = false, .op = TL_NONE, .cause = TL_NONE, .origin = TL_NONE };
    if (row < 0 || row >= tl->n_rows || t < tl->t_begin || t >= tl->t_end) return w;
    const struct tl_lane *l = &tl->rows[row].lane[TL_COMPUTE];
    if (!l->n) return w;
    size_t idx = upper_strict(l->start, l->n, t);
    mp_time m = idx ? (l->maxend ? l->maxend[idx - 1] : l->end[idx - 1]) : tl->t_begin;
    if (idx && m > t) return w;
    w.idle = true;
    w.from = m > tl->t_begin ? m : tl->t_begin;
    w.to = idx < l->n ? l->start[idx] : tl->t_end;
    if (idx == l->n) {
        w.kind = TL_WAIT_DONE;
        w.split = w.to;
        return w;
    }
    explain(tl, row, idx, &w);
    return w;
}

void timeline_classify_idle(struct timeline *tl)
{
    double busy = 0, bubble = 0, exposed = 0, by[TL_COMM_KINDS] = { 0 };
    int n = 0;
    for (int r = 0; r < tl->n_rows; r++) {
        struct tl_row *row = &tl->rows[r];
        memset(row->wait, 0, sizeof row->wait);
        memset(row->wait_comm, 0, sizeof row->wait_comm);
        const struct tl_lane *l = &row->lane[TL_COMPUTE];
        if (!l->n) continue;
        mp_time cur = tl->t_begin;
        for (size_t k = 0; k < l->n; k++) {
            if (l->start[k] > cur) {
                struct tl_wait w = { .idle = true, .from = cur, .to = l->start[k] };
                explain(tl, r, k, &w);
                row->wait[w.kind] += w.split - w.from;
                row->wait[TL_WAIT_PP] += w.to - w.split;
                if (w.kind == TL_WAIT_COMM) row->wait_comm[w.comm] += w.split - w.from;
            }
            if (l->end[k] > cur) cur = l->end[k];
        }
        if (cur < tl->t_end) row->wait[TL_WAIT_DONE] += tl->t_end - cur;
        row->wait_comm[TL_COMM_PP] += row->wait[TL_WAIT_PP];
        /* DESIGN.md §3 counts pipeline stages: rows serving another (a DP
         * lane, an EP rank) are not stages. */
        if (row->serves >= 0) continue;
        n++;
        busy += (double)l->busy;
        bubble += (double)(row->wait[TL_WAIT_STAGE] + row->wait[TL_WAIT_DONE] +
                           row->wait[TL_WAIT_UNKNOWN]);
        exposed += (double)(row->wait[TL_WAIT_PP] + row->wait[TL_WAIT_COMM]);
        for (int c = 0; c < TL_COMM_KINDS; c++) by[c] += (double)row->wait_comm[c];
    }
    double base = (double)n * (double)(tl->t_end - tl->t_begin);
    tl->n_pipe_rows = n;
    tl->idle = base > 0 ? 1.0 - busy / base : 0.0;
    tl->bubble = base > 0 ? bubble / base : 0.0;
    tl->exposed_comm = base > 0 ? exposed / base : 0.0;
    for (int c = 0; c < TL_COMM_KINDS; c++) tl->exposed[c] = base > 0 ? by[c] / base : 0.0;
}
