/* timeline_lod.c — the level-of-detail pyramid of each lane (timeline.h),
 * built once by timeline_finish. */
#include "timeline_impl.h"

#include <stdlib.h>
#include <string.h>

/* Level 0 has about one bin per op (a power of two, at most
 * TL_LOD_MAX_BINS), so a column that covers several bins covers several ops;
 * each level above halves the bins. The per-kind time of every bin is summed
 * exactly in doubles in `w` (scratch of n0 × TL_LOD_SLOTS), then folded
 * pairwise level by level. */
static void build_lod(const struct timeline *tl, struct tl_lane *lane, double *w)
{
    double base = (double)lane->start[0];
    double end = (double)(lane->maxend ? lane->maxend[lane->n - 1] : lane->end[lane->n - 1]);
    if (!(end > base)) return;
    uint32_t n0 = 64;
    while (n0 < lane->n && n0 < TL_LOD_MAX_BINS) n0 <<= 1;
    double b0 = (end - base) / n0;
    /* Sums only for the kinds the lane has (a serving lane has three of
     * the sixteen slots): K columns of scratch per bin instead of 16. */
    int slot_of[TL_LOD_SLOTS], kind_of[TL_LOD_SLOTS], K = 0;
    for (int k = 0; k < TL_LOD_SLOTS; k++) slot_of[k] = -1;
    for (size_t i = 0; i < lane->n; i++) {
        uint16_t kind = tl->infos[lane->info[i]].kind;
        int slot = kind < TL_KIND_CUSTOM ? kind : TL_KIND_CUSTOM;
        if (slot_of[slot] < 0) kind_of[K] = slot, slot_of[slot] = K++;
    }
    memset(w, 0, (size_t)n0 * (size_t)K * sizeof *w);
    for (size_t i = 0; i < lane->n; i++) {
        double s = (double)lane->start[i] - base, e = (double)lane->end[i] - base;
        uint16_t kind = tl->infos[lane->info[i]].kind;
        int slot = slot_of[kind < TL_KIND_CUSTOM ? kind : TL_KIND_CUSTOM];
        size_t j0 = (size_t)(s / b0), j1 = (size_t)(e / b0);
        if (j1 >= n0) j1 = n0 - 1;
        if (j0 > j1) j0 = j1;
        for (size_t j = j0; j <= j1; j++) {
            double lo = j * b0, hi = lo + b0;
            double ov = (e < hi ? e : hi) - (s > lo ? s : lo);
            if (j == n0 - 1 && e > hi) ov += e - hi; /* rounding at the very end */
            if (ov > 0) w[j * (size_t)K + (size_t)slot] += ov;
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
                for (int k = 0; k < K; k++)
                    w[j * K + k] = w[2 * j * K + k] + w[(2 * j + 1) * K + k];
        for (uint32_t j = 0; j < n; j++) {
            const double *x = &w[j * (size_t)K];
            double sum = 0;
            int best = 0;
            for (int k = 0; k < K; k++) {
                sum += x[k];
                if (x[k] > x[best]) best = k;
            }
            double q = sum / width * TL_LOD_ONE + 0.5;
            lod->busy[lod->off[l] + j] = (uint16_t)(q > 65535 ? 65535 : q);
            lod->kind[lod->off[l] + j] = (uint8_t)kind_of[best];
        }
    }
    lane->lod = lod;
}

void timeline_build_lod(struct timeline *tl)
{
    double *w = NULL;
    for (int r = 0; r < tl->n_rows; r++)
        for (int s = 0; s < TL_STREAMS; s++) {
            struct tl_lane *lane = &tl->rows[r].lane[s];
            if (lane->n < TL_LOD_MIN_OPS) continue;
            if (!w) w = mp_xmalloc((size_t)TL_LOD_MAX_BINS * TL_LOD_SLOTS * sizeof *w);
            build_lod(tl, lane, w);
        }
    free(w);
}
