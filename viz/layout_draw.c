/* layout_draw.c — viz_layout_draw: the scene as draw commands (layout.h).
 *
 * Order matters only where things overlap: background and grid first, then
 * each row (lanes, idle tint, ops, memory, gutter, label), then panel headers
 * and the axis on top so scrolled rows slide under them, then the cursor.
 * Every text goes where no other text is: the tests collect the text boxes
 * of small windows and check that none overlaps another. */
#include "layout.h"
#include "layout_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* Everything one row's drawing needs. */
struct ctx {
    struct viz_draw_list *dl;
    const struct viz_geom *g;
    const struct viz_view *v;
    const struct viz_scene *sc;
    const struct viz_font *font;
    const struct timeline *tl;
    double tv0, tv1;          /* time at the left and right edge */
    int fh;                   /* font height, 0 without a font */
    int label_bottom;         /* lowest y a row label reached (labels never overlap) */
    int clip_y0;              /* rows of this panel are drawn below here (sticky header) */
    int n_chunks;             /* of this panel's timeline */
    bool heat;                /* this panel draws busy share as a heat map */
    double heat_max;          /* the darkest colour's share */
    float *cov; uint8_t *kind;/* [plot width] scratch: one lane's columns */
};

static viz_color darker(viz_color c)
{
    uint32_t r = (c >> 16) & 0xFF, g = (c >> 8) & 0xFF, b = c & 0xFF;
    return 0xFF000000u | (r * 3 / 4) << 16 | (g * 3 / 4) << 8 | (b * 3 / 4);
}

/* The pixel column of x, clamped to just around the time area. Called per
 * op, so no floor(): after the clamp x is positive (plot_x0 > 4) and the int
 * conversion truncates to the same column. */
static inline int px(double x, const struct viz_geom *g)
{
    if (x < g->plot_x0 - 4.0) return g->plot_x0 - 4;
    if (x > g->plot_x1 + 4.0) return g->plot_x1 + 4;
    return (int)x;
}

/* A text in the label column or gutter, cut to fit with "…". */
static void text_fit(struct ctx *c, int x, int y, int w, viz_color col, const char *s)
{
    char buf[256];
    if (w <= 0) return;
    viz_text_fit(c->font, s, w, buf, sizeof buf);
    if (*buf) viz_draw_text(c->dl, x, y, w, col, buf);
}

/* ---- ops: boxes, pooled columns, the pyramid, the heat map ---- */

/* Sub-pixel ops accumulate here until the walk leaves their column. */
struct pool {
    int col;
    double cov;                         /* busy share of the column, may exceed 1 */
    double w[TL_LOD_SLOTS];             /* per kind; customs share the last slot */
};

/* A pooled column: the kind covering most of it, faded by how busy it is so
 * a mostly idle column reads as mostly bubble; a floor keeps a lone tiny op
 * visible at all. */
static viz_color pool_color(double cov, int kind)
{
    double a = cov > 1 ? 1 : cov;
    uint32_t alpha = (uint32_t)lround(48 + 207 * a);
    return (viz_kind_color((unsigned)kind) & 0x00FFFFFFu) | (alpha << 24);
}

static void pool_flush(struct ctx *c, struct pool *pl, int y, int h)
{
    if (pl->cov <= 0) return;
    int best = 0;
    for (int k = 1; k < TL_LOD_SLOTS; k++)
        if (pl->w[k] > pl->w[best]) best = k;
    viz_draw_rect(c->dl, pl->col, y, 1, h, pool_color(pl->cov, best));
    memset(pl, 0, sizeof *pl);
}

/* Columns of a lane from its level-of-detail pyramid (timeline.h): the
 * coarsest level whose bins are still at most half a pixel, read 2–4 bins a
 * column, so a frame costs the same for 1 000 or 1 000 000 ops. A bin's
 * busy time is assumed spread evenly across it, which is exact for fully
 * busy and fully idle bins and off by at most one bin's share for a column
 * edge inside a partly busy bin. Fills c->cov / c->kind for [x0, x1). */
static void lod_columns(struct ctx *c, const struct tl_lod *lod, double tcut, int *x0, int *x1)
{
    const struct viz_geom *g = c->g;
    const struct viz_view *v = c->v;
    double pp = v->ps_per_px;
    int l = 0;
    while (l + 1 < lod->levels && lod->b0 * (double)(2u << l) <= pp / 2) l++;
    double bw = lod->b0 * (double)(1u << l);
    uint32_t n = lod->n0 >> l;
    const uint16_t *busy = lod->busy + lod->off[l];
    const uint8_t *kind = lod->kind + lod->off[l];
    double lane_end = lod->base + bw * n;
    int xa = (int)floor(viz_x_of(g, v, lod->base));
    int xb = (int)ceil(viz_x_of(g, v, lane_end < tcut ? lane_end : tcut));
    if (xa < g->plot_x0) xa = g->plot_x0;
    if (xb > g->plot_x1) xb = g->plot_x1;
    *x0 = xa;
    *x1 = xb;
    for (int x = xa; x < xb; x++) {
        double t0 = viz_t_of(g, v, x), t1 = t0 + pp;
        if (t1 > tcut) t1 = tcut;
        double r0 = (t0 - lod->base) / bw, r1 = (t1 - lod->base) / bw;
        if (r0 < 0) r0 = 0;
        if (r1 > n) r1 = n;
        /* A column reads 2-4 bins: sum per kind in a short list rather
         * than all 16 slots (this loop runs for every column of every lane). */
        double cov = 0, w[8];
        uint8_t kk[8];
        int nk = 0;
        for (uint32_t j = (uint32_t)r0; j < n && (double)j < r1; j++) {
            double lo = j > r0 ? j : r0, hi = j + 1.0 < r1 ? j + 1.0 : r1;
            double part = busy[j] / TL_LOD_ONE * (hi - lo);
            cov += part;
            int i = 0;
            while (i < nk && kk[i] != kind[j]) i++;
            if (i == nk) {
                if (nk == 8) continue;
                kk[nk] = kind[j];
                w[nk++] = 0;
            }
            w[i] += part;
        }
        int best = 0;
        for (int i = 1; i < nk; i++)
            if (w[i] > w[best] || (w[i] == w[best] && kk[i] < kk[best])) best = i;
        best = nk ? kk[best] : 0;
        /* cov is in bins; the column is pp / bw bins wide. */
        c->cov[x - g->plot_x0] = (float)(cov * bw / pp);
        c->kind[x - g->plot_x0] = (uint8_t)best;
    }
}

/* Draw the columns, equal neighbours merged into one rectangle. */
static void draw_columns(struct ctx *c, int x0, int x1, int y, int h)
{
    int run_x = -1, run_w = 0;
    viz_color run_c = 0;
    for (int x = x0; x < x1; x++) {
        double cov = c->cov[x - c->g->plot_x0];
        viz_color col = 0;
        /* A square-root scale: a serving chain is mostly idle, and the
         * difference between 0.5% and 2% busy is the story. */
        if (c->heat) col = viz_heat_color(c->heat_max > 0 ? sqrt(cov / c->heat_max) : 0);
        else if (cov > 0) col = pool_color(cov, c->kind[x - c->g->plot_x0]);
        if (col == run_c && run_x >= 0 && x == run_x + run_w) {
            run_w++;
            continue;
        }
        if (run_x >= 0 && run_c) viz_draw_rect(c->dl, run_x, y, run_w, h, run_c);
        run_x = x;
        run_w = 1;
        run_c = col;
    }
    if (run_x >= 0 && run_c) viz_draw_rect(c->dl, run_x, y, run_w, h, run_c);
}

/* A small triangle pointing down or up, in rectangles: DualPipe's direction. */
static void triangle(struct ctx *c, int x, int y, int size, bool down, viz_color col)
{
    for (int i = 0; i < size; i++) {
        int half = down ? size - 1 - i : i;
        viz_draw_rect(c->dl, x + (size - 1) - half, y + i, 2 * half + 1, 1, col);
    }
}

/* A number centred in [x0, x0+w) × [y, y+h) when it fits. */
static void box_number(struct ctx *c, int x0, int w, int y, int h, int mb, int pad_left)
{
    if (!c->fh || mb < 0 || h < c->fh - 3) return;
    char num[16];
    snprintf(num, sizeof num, "%d", mb);
    int tw = viz_text_width(c->font, num);
    if (tw + 4 + 2 * pad_left > w) return;
    viz_draw_text(c->dl, x0 + (w - tw) / 2, y + (h - c->fh) / 2, 0, VIZ_TEXT_ON_OP, num);
}

/* One op wider than a pixel: its kind's hue, shaded for its chunk, a darker
 * last column to tell neighbours apart without a gap that would read as idle
 * time, its microbatch number, a DualPipe direction mark; an FB box is split
 * in two — its forward on top, its backward below, each with its own
 * microbatch — because both run at once. */
static void draw_box(struct ctx *c, int x0, int x1, int by, int bh, const struct tl_info *in)
{
    int w = x1 - x0;
    int tri = imax(3, imin(bh / 4, 6));
    bool marks = w >= 4 * tri && bh >= 2 * tri + 4;
    if (in->kind == TL_KIND_FB) {
        int top = bh / 2, bot = bh - top;
        viz_color cf = viz_chunk_color(viz_kind_color(TL_KIND_F), in->chunk, c->n_chunks);
        viz_color cb = viz_chunk_color(viz_kind_color(TL_KIND_BW), in->chunk2, c->n_chunks);
        viz_draw_rect(c->dl, x0, by, w, top, cf);
        viz_draw_rect(c->dl, x0, by + top, w, bot, cb);
        if (w >= 5) viz_draw_rect(c->dl, x1 - 1, by, 1, bh, darker(cb));
        if (bh >= 8) viz_draw_rect(c->dl, x0, by + top, w - (w >= 5), 1, darker(cf));
        int mark = marks && in->dir && top >= 2 * tri ? tri : 0;
        if (mark) triangle(c, x0 + 2, by + (top - tri) / 2, tri, in->dir == TL_DIR_DOWN, 0xC8FFFFFFu);
        if (mark && in->dir2)
            triangle(c, x0 + 2, by + top + (bot - tri) / 2, tri, in->dir2 == TL_DIR_DOWN, 0xC8FFFFFFu);
        box_number(c, x0, w, by, top, in->microbatch, mark ? tri + 2 : 0);
        box_number(c, x0, w, by + top, bot, in->microbatch2, mark ? tri + 2 : 0);
        return;
    }
    viz_color col = viz_kind_color(in->kind);
    if (in->kind < TL_KIND_SEND || in->kind == TL_KIND_PREFILL || in->kind == TL_KIND_DECODE ||
        in->kind == TL_KIND_MIXED)
        col = viz_chunk_color(col, in->chunk, c->n_chunks);
    if (w >= 5) {
        viz_draw_rect(c->dl, x0, by, w - 1, bh, col);
        viz_draw_rect(c->dl, x1 - 1, by, 1, bh, darker(col));
    } else {
        viz_draw_rect(c->dl, x0, by, w, bh, col);
    }
    int mark = marks && in->dir ? tri : 0;
    if (mark) triangle(c, x0 + 2, by + 2, tri, in->dir == TL_DIR_DOWN, 0xC8FFFFFFu);
    box_number(c, x0, w, by, bh, in->microbatch, mark ? tri + 2 : 0);
}

static void draw_ops(struct ctx *c, int row, int stream, int y, int h)
{
    const struct timeline *tl = c->tl;
    const struct tl_lane *lane = timeline_lane(tl, row, stream);
    if (!lane->n) return;
    const struct viz_view *v = c->v;
    double tcut = v->cursor < c->tv1 ? v->cursor : c->tv1;
    int by = h >= 6 ? y + 1 : y, bh = h >= 6 ? h - 2 : h;
    size_t i0 = timeline_lane_seek(lane, (mp_time)floor(c->tv0));
    /* More than two ops per pixel on average: the pyramid is cheaper, and
     * just as faithful at this zoom (few boxes are a pixel wide). */
    if (lane->lod && (double)(timeline_lane_upper(lane, tcut) - i0) >
                         2.0 * (c->g->plot_x1 - c->g->plot_x0) &&
        lane->lod->b0 <= v->ps_per_px / 2) {
        int x0, x1;
        lod_columns(c, lane->lod, tcut, &x0, &x1);
        draw_columns(c, x0, x1, by, bh);
        return;
    }
    struct pool pl = { .col = -1 };
    for (size_t i = i0; i < lane->n; i++) {
        double s = (double)lane->start[i];
        if (s >= tcut) break;           /* sorted by start */
        if ((double)lane->end[i] <= c->tv0) continue;
        double e = (double)lane->end[i] < v->cursor ? (double)lane->end[i] : v->cursor;
        double xs = viz_x_of(c->g, v, s), xe = viz_x_of(c->g, v, e);
        int x0 = px(xs, c->g), x1 = px(xe, c->g);
        const struct tl_info *in = timeline_info(tl, lane, i);
        if (xe - xs < 1.0) {
            /* Narrower than a pixel: pool it; one straddling a column edge
             * gives each column its share, so a run of tiny ops adds up to
             * exactly one fully busy column per pixel. */
            int kind = in->kind < TL_KIND_CUSTOM ? in->kind : TL_KIND_CUSTOM;
            double split = x1 > x0 ? (double)x1 : xe;
            if (x0 != pl.col) {
                pool_flush(c, &pl, by, bh);
                pl.col = x0;
            }
            pl.cov += split - xs;
            pl.w[kind] += split - xs;
            if (x1 > x0) {
                pool_flush(c, &pl, by, bh);
                pl.col = x1;
                pl.cov = xe - split;
                pl.w[kind] = xe - split;
            }
            continue;
        }
        if (pl.col >= 0) pool_flush(c, &pl, by, bh);
        pl.col = -1;
        draw_box(c, x0, x1, by, bh, in);
    }
    if (pl.col >= 0) pool_flush(c, &pl, by, bh);
}

/* Idle stretches of at least two pixels that waited for the chip's own
 * communication (or a hand-off in flight) get their own tint over the
 * bubble's: they are exposed communication, not bubble. */
static void draw_comm_waits(struct ctx *c, int row, int y, int h)
{
    const struct timeline *tl = c->tl;
    const struct tl_lane *lane = timeline_lane(tl, row, TL_COMPUTE);
    if (!tl->has_released || !lane->n) return;
    const struct viz_view *v = c->v;
    double tcut = v->cursor < c->tv1 ? v->cursor : c->tv1;
    size_t i0 = timeline_lane_seek(lane, (mp_time)floor(c->tv0));
    if ((double)(timeline_lane_upper(lane, tcut) - i0) > (c->g->plot_x1 - c->g->plot_x0) / 2.0)
        return; /* stretches under two pixels on average: nothing to see */
    double prev = i0 ? (double)(lane->maxend ? lane->maxend[i0 - 1] : lane->end[i0 - 1])
                     : (double)tl->t_begin;
    for (size_t i = i0; i <= lane->n; i++) {
        double s = i < lane->n ? (double)lane->start[i] : (double)tl->t_end;
        if (prev >= tcut) break;
        if ((s - prev) / v->ps_per_px >= 2) {
            struct tl_wait w = timeline_wait_at(tl, row, (mp_time)floor((prev + s) / 2));
            if (w.idle && w.kind != TL_WAIT_DONE) {
                double a = w.kind == TL_WAIT_COMM || w.kind == TL_WAIT_PP ? (double)w.from
                         : (double)w.split;
                double b = (double)w.to < tcut ? (double)w.to : tcut;
                int x0 = px(viz_x_of(c->g, v, a), c->g), x1 = px(viz_x_of(c->g, v, b), c->g);
                if (x1 > x0) viz_draw_hatch(c->dl, x0, y, x1 - x0, h, VIZ_COMMWAIT, VIZ_COMMWAIT_HATCH);
            }
        }
        if (i < lane->n && (double)lane->end[i] > prev) prev = (double)lane->end[i];
    }
}

/* ---- memory ---- */

/* Memory columns are merged into runs of equal height before drawing. */
struct mem_run {
    int x0, x1;
    int fill, over;      /* px of in-capacity fill and of the part above capacity */
};

static void mem_emit(struct ctx *c, const struct viz_row *r, struct mem_run *run)
{
    if (run->x1 <= run->x0) return;
    int base = r->mem_y + r->mem_h;
    viz_draw_rect(c->dl, run->x0, base - run->fill, run->x1 - run->x0, run->fill, VIZ_MEM_FILL);
    viz_draw_rect(c->dl, run->x0, base - run->fill - run->over, run->x1 - run->x0, run->over,
                  VIZ_MEM_OVER);
}

static void mem_cols(struct ctx *c, const struct viz_row *r, struct mem_run *run, int x, int w,
                     int64_t value, double scale, int64_t cap)
{
    if (w <= 0) return;
    int64_t in_cap = cap > 0 && value > cap ? cap : value;
    int fill = imin(r->mem_h, (int)lround((double)in_cap / scale * r->mem_h));
    int total = imin(r->mem_h, (int)lround((double)value / scale * r->mem_h));
    int over = total - fill;
    if (run->x1 == x && run->fill == fill && run->over == over) {
        run->x1 = x + w;
        return;
    }
    mem_emit(c, r, run);
    *run = (struct mem_run){ x, x + w, fill, over };
}

static void draw_memory(struct ctx *c, const struct viz_row *r)
{
    const struct timeline *tl = c->tl;
    const struct tl_row *ch = &tl->rows[r->row];
    const struct viz_geom *g = c->g;
    viz_draw_rect(c->dl, g->plot_x0, r->mem_y, g->plot_x1 - g->plot_x0, r->mem_h, VIZ_MEM_LANE);
    double scale = g->mem_scale;
    if (scale <= 0) return;
    /* The half-scale line: with the same scale on every strip, a strip
     * half as full holds half the bytes. */
    if (r->mem_h >= 8)
        viz_draw_rect(c->dl, g->plot_x0, r->mem_y + r->mem_h / 2, g->plot_x1 - g->plot_x0, 1,
                      VIZ_MEM_GRID);
    int64_t cap = ch->capacity;
    if (ch->mem_count) {
        const struct tl_mem *pts = &tl->mem[ch->mem_first];
        size_t n = ch->mem_count;
        double tlim = c->v->cursor < c->tv1 ? c->v->cursor : c->tv1;
        /* The value at the left edge is that of the last change at or before it. */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if ((double)pts[mid].t <= c->tv0) lo = mid + 1;
            else hi = mid;
        }
        int64_t val = lo ? pts[lo - 1].in_use : 0, colmax = val;
        int col = g->plot_x0;
        int xend = isfinite(tlim) ? imin(g->plot_x1, px(viz_x_of(g, c->v, tlim), g)) : g->plot_x1;
        struct mem_run run = { 0, 0, 0, 0 };
        for (size_t j = lo; j < n && (double)pts[j].t < tlim; j++) {
            int pc = px(viz_x_of(g, c->v, (double)pts[j].t), g);
            if (pc >= g->plot_x1) break;
            if (pc > col) {
                mem_cols(c, r, &run, col, 1, colmax, scale, cap);
                mem_cols(c, r, &run, col + 1, pc - col - 1, val, scale, cap);
                col = pc;
                colmax = val;
            }
            val = pts[j].in_use;
            if (val > colmax) colmax = val;
        }
        if (col < xend) {
            mem_cols(c, r, &run, col, 1, colmax, scale, cap);
            mem_cols(c, r, &run, col + 1, xend - col - 1, val, scale, cap);
        }
        mem_emit(c, r, &run);
    }
    if (cap > 0 && (double)cap <= scale) {
        int cy = r->mem_y + r->mem_h - (int)lround((double)cap / scale * r->mem_h);
        /* Dotted, so it reads as a limit rather than a separator. */
        viz_draw_hatch(c->dl, g->plot_x0, imax(cy, r->mem_y), g->plot_x1 - g->plot_x0, 1,
                       VIZ_MEM_LANE, VIZ_CAPACITY);
    }
    /* The axis: ticks at 0 and at the top, and the scale written beside. */
    viz_draw_rect(c->dl, g->plot_x0 - 4, r->mem_y, 4, 1, VIZ_TEXT_DIM);
    viz_draw_rect(c->dl, g->plot_x0 - 4, r->mem_y + r->mem_h - 1, 4, 1, VIZ_TEXT_DIM);
    viz_draw_rect(c->dl, g->plot_x0 - 1, r->mem_y, 1, r->mem_h, VIZ_TEXT_DIM);
}

/* ---- the row around its lanes ---- */

static void draw_gutter(struct ctx *c, const struct viz_row *r)
{
    const struct timeline *tl = c->tl;
    const struct tl_row *ch = &tl->rows[r->row];
    const struct viz_metrics *m = &c->g->m;
    int x = c->g->plot_x1 + m->pad, right = c->v->width - m->pad / 2;
    int bar = imin(50, (right - x) / 3);
    char buf[64];
    int util_bottom = INT32_MIN;
    if (timeline_lane(tl, r->row, TL_COMPUTE)->n && bar >= 8) {
        /* During a replay, the busy share so far: it climbs as the pipeline
         * fills and sinks in the drain, ending at the step's figure. */
        double cur = c->v->cursor;
        double u = isfinite(cur) && cur < (double)tl->t_end
                 ? timeline_utilization_until(tl, r->row, (mp_time)floor(cur))
                 : timeline_utilization(tl, r->row);
        int bh = imax(2, imin(r->compute_h - 6, 10));
        int by = r->compute_y + (r->compute_h - bh) / 2;
        viz_draw_rect(c->dl, x, by, bar, bh, VIZ_UTIL_BG);
        viz_draw_rect(c->dl, x, by, (int)lround(bar * u), bh, VIZ_UTIL_FILL);
        if (c->fh && r->compute_h >= c->fh - 4) {
            snprintf(buf, sizeof buf, "%.1f%%", 100 * u);
            int ty = r->compute_y + (r->compute_h - c->fh) / 2;
            text_fit(c, x + bar + 6, ty, right - (x + bar + 6), VIZ_TEXT, buf);
            util_bottom = ty + c->fh;
        }
    }
    if (r->mem_h && c->fh && ch->mem_count) {
        int ty = r->mem_y + r->mem_h - c->fh + 2;
        if (ty >= util_bottom && ty + c->fh <= r->y + r->h + 2) {
            char a[24], b[24];
            viz_format_bytes((double)ch->peak_mem, a, sizeof a);
            if (ch->capacity > 0) {
                viz_format_bytes((double)ch->capacity, b, sizeof b);
                snprintf(buf, sizeof buf, "%s / %s", a, b);
            } else {
                snprintf(buf, sizeof buf, "peak %s", a);
            }
            text_fit(c, x, ty, right - x,
                     ch->capacity > 0 && ch->peak_mem > ch->capacity ? VIZ_MEM_OVER : VIZ_TEXT_DIM,
                     buf);
        }
    }
}

static void draw_labels(struct ctx *c, const struct viz_row *r)
{
    if (!c->fh) return;
    const struct viz_metrics *m = &c->g->m;
    int x = m->pad + (r->peer ? m->pad : 0), w = m->label_w - x - m->pad / 2 - 4;
    char a[96], b[96];
    viz_row_label(c->tl, r->row, a, sizeof a, b, sizeof b);
    /* A stage that stands for more chips says how many, where its chip
     * number would be (the chip is in the label's tooltip). */
    bool open = c->sc->unfold[r->panel] && c->sc->unfold[r->panel][r->row];
    if (!r->peer) viz_fold_short(c->tl, r->row, open, b, sizeof b);
    int ly = r->compute_h + r->comm_h >= 2 * c->fh ? r->y : r->compute_y + (r->compute_h - c->fh) / 2;
    /* A label a little taller than its row may hang below it, never above
     * the panel's first row (into the header). */
    if (ly < c->clip_y0 && r->y >= c->clip_y0) ly = c->clip_y0;
    /* Rows thinner than a line of text get a label only where it does not
     * run into the previous one (every second, third... row). */
    int bottom = ly;
    if (ly >= c->label_bottom && ly >= c->clip_y0) {
        text_fit(c, x, ly, w, VIZ_TEXT, a);
        bottom = ly + c->fh;
        if (*b && r->h >= 2 * c->fh + 2) {
            text_fit(c, x, bottom, w, VIZ_TEXT_DIM, b);
            bottom += c->fh;
        }
        c->label_bottom = bottom;
    }
    for (int k = 0; k < r->n_peer; k++) {
        int py = r->peer_y[k] + (r->peer_h - c->fh) / 2;
        if (r->peer_h < c->fh - 4 || py < c->label_bottom) continue;
        snprintf(a, sizeof a, "chip %d", c->tl->rows[r->peer_row[k]].key);
        text_fit(c, x + m->pad, py, w - m->pad, VIZ_TEXT_DIM, a);
        c->label_bottom = py + c->fh;
    }
    if (r->mem_h >= c->fh - 3) {
        int my = r->mem_y + (r->mem_h - c->fh) / 2;
        if (my >= c->label_bottom) {
            char sc[24];
            viz_format_bytes(c->g->mem_scale, sc, sizeof sc);
            snprintf(a, sizeof a, "mem 0-%s", sc);
            text_fit(c, x + (r->peer ? 0 : m->pad), my, w - (r->peer ? 0 : m->pad), VIZ_TEXT_DIM, a);
            c->label_bottom = my + c->fh;
        }
    }
}

static void draw_row(struct ctx *c, const struct viz_row *r)
{
    const struct viz_geom *g = c->g;
    const struct viz_view *v = c->v;
    const struct timeline *tl = c->tl;
    int plot_w = g->plot_x1 - g->plot_x0, y0 = c->clip_y0, y1 = g->rows_y1;
    viz_draw_clip(c->dl, 0, y0, v->width, y1 - y0);
    /* A line between stages, unless rows are thinner than a label: then it
     * would cut the labels and stripe the picture. */
    if (r->group_start && r->compute_h >= c->fh + 2)
        viz_draw_rect(c->dl, 0, r->y - (g->m.group_gap + 1) / 2 - 1, v->width, 1, VIZ_SEPARATOR);
    draw_gutter(c, r);
    draw_labels(c, r);

    viz_draw_clip(c->dl, g->plot_x0, y0, plot_w, y1 - y0);
    /* Idle compute inside the step: the bubble, tinted and hatched so it
     * reads as a hole (plain in a heat map: no moiré); ops over it. The
     * plain lane is painted only outside it (a frame paints every pixel
     * once fewer: the biggest share of a frame is filling pixels). */
    double bend = (double)tl->t_end < v->cursor ? (double)tl->t_end : v->cursor;
    int bx0 = px(viz_x_of(g, v, (double)tl->t_begin), g), bx1 = px(viz_x_of(g, v, bend), g);
    bool tinted = tl->n_ops && bx1 > bx0 && timeline_lane(tl, r->row, TL_COMPUTE)->n;
    if (!tinted) {
        viz_draw_rect(c->dl, g->plot_x0, r->compute_y, plot_w, r->compute_h, VIZ_LANE);
    } else {
        viz_draw_rect(c->dl, g->plot_x0, r->compute_y, bx0 - g->plot_x0, r->compute_h, VIZ_LANE);
        viz_draw_rect(c->dl, bx1, r->compute_y, g->plot_x1 - bx1, r->compute_h, VIZ_LANE);
    }
    if (tinted) {
        if (c->heat) viz_draw_rect(c->dl, bx0, r->compute_y, bx1 - bx0, r->compute_h, VIZ_HEAT_IDLE);
        else if (r->compute_h >= 8) /* stripes on a thin lane only flicker */
            viz_draw_hatch(c->dl, bx0, r->compute_y, bx1 - bx0, r->compute_h, VIZ_BUBBLE,
                           VIZ_BUBBLE_HATCH);
        else viz_draw_rect(c->dl, bx0, r->compute_y, bx1 - bx0, r->compute_h, VIZ_BUBBLE);
    }
    if (!c->heat) draw_comm_waits(c, r->row, r->compute_y, r->compute_h);
    draw_ops(c, r->row, TL_COMPUTE, r->compute_y, r->compute_h);
    if (r->comm_h) {
        viz_draw_rect(c->dl, g->plot_x0, r->comm_y, plot_w, r->comm_h, VIZ_COMM_LANE);
        bool heat = c->heat;
        c->heat = false;
        draw_ops(c, r->row, TL_COMM, r->comm_y, r->comm_h);
        c->heat = heat;
    }
    for (int k = 0; k < r->n_peer; k++) {
        viz_draw_rect(c->dl, g->plot_x0, r->peer_y[k], plot_w, r->peer_h, VIZ_COMM_LANE);
        viz_draw_rect(c->dl, g->plot_x0, r->peer_y[k], plot_w, 1, VIZ_BG);
        draw_ops(c, r->peer_row[k], TL_COMM, r->peer_y[k], r->peer_h);
    }
    if (r->mem_h) {
        viz_draw_clip(c->dl, g->plot_x0 - 4, y0, plot_w + 4, y1 - y0);
        draw_memory(c, r);
    }
}

/* ---- headers and axis ---- */

static void draw_swatch(struct ctx *c, const struct viz_hitem *it, int x, int y, int u)
{
    struct viz_draw_list *dl = c->dl;
    switch (it->sw) {
    case VIZ_SW_RECT: viz_draw_rect(dl, x, y, u, u, it->c1); break;
    case VIZ_SW_HATCH: viz_draw_hatch(dl, x, y, u, u, it->c1, it->c2); break;
    case VIZ_SW_CHUNKS:
        viz_draw_rect(dl, x, y, u, u, it->c1);
        viz_draw_rect(dl, x + u, y, u, u, it->c2);
        break;
    case VIZ_SW_FB:
        viz_draw_rect(dl, x, y, u, u / 2, it->c1);
        viz_draw_rect(dl, x, y + u / 2, u, u - u / 2, it->c2);
        break;
    case VIZ_SW_DOWN:
    case VIZ_SW_UP:
        viz_draw_rect(dl, x, y, u, u, viz_kind_color(TL_KIND_F));
        triangle(c, x + 1, y + (u - (u - 2) / 2) / 2, (u - 2) / 2 + 1, it->sw == VIZ_SW_DOWN,
                 0xFFFFFFFFu);
        break;
    case VIZ_SW_HEAT:
        for (int i = 0; i < 2 * u; i++)
            viz_draw_rect(dl, x + i, y, 1, u, viz_heat_color(sqrt((double)i / (2 * u - 1))));
        break;
    default: break;
    }
}

static void draw_header(struct ctx *c, int p)
{
    const struct viz_geom *g = c->g;
    const struct viz_panel_geom *pg = &g->panel[p];
    const struct viz_metrics *m = &g->m;
    viz_draw_clip(c->dl, 0, g->rows_y0, c->v->width, g->rows_y1 - g->rows_y0);
    viz_draw_rect(c->dl, 0, pg->header_y, c->v->width, pg->header_h - 2, VIZ_AXIS_BG);
    viz_draw_rect(c->dl, 0, pg->header_y + pg->header_h - 2, c->v->width, 1, VIZ_GRID);
    struct viz_hitem items[VIZ_HEADER_ITEMS];
    int n = viz_header_items(c->sc, p, c->heat ? c->heat_max : 0, items, VIZ_HEADER_ITEMS);
    int lines = viz_header_flow(c->font, m, c->v->width, items, n);
    (void)lines;
    int u = imax(8, m->line_h / 2), sgap = imax(3, m->pad / 2);
    for (int i = 0; i < n; i++) {
        const struct viz_hitem *it = &items[i];
        if (it->line < 0 || it->line * m->line_h >= pg->header_h) continue;
        int y = pg->header_y + it->line * m->line_h;
        int x = it->x;
        if (it->sw) {
            draw_swatch(c, it, x, y + (m->line_h - 2 - u) / 2, u);
            x += viz_swatch_w(m, it->sw) + sgap;
        }
        if (c->fh && it->text[0])
            viz_draw_text(c->dl, x, y + (m->line_h - 2 - c->fh) / 2, it->w,
                          it->sw || (!it->strong && strncmp(it->text, "showing", 7) == 0)
                              ? VIZ_TEXT_DIM : VIZ_TEXT, it->text);
    }
}

static void draw_axis(struct ctx *c, int cursor_x0, int cursor_x1)
{
    const struct viz_geom *g = c->g;
    const struct viz_view *v = c->v;
    int ah = g->m.axis_h;
    viz_draw_noclip(c->dl);
    viz_draw_rect(c->dl, 0, 0, v->width, ah, VIZ_AXIS_BG);
    viz_draw_rect(c->dl, 0, ah - 1, v->width, 1, VIZ_SEPARATOR);
    if (c->fh) text_fit(c, g->m.pad, (ah - c->fh) / 2, g->m.label_w - 2 * g->m.pad, VIZ_TEXT_DIM, "time");
    double step = viz_axis_step(v->ps_per_px, 90 * (v->scale > 0 ? v->scale : 1));
    /* Label ticks in the largest unit not above the step, so every label is
     * a whole number of that unit and neighbours never print alike. */
    static const struct { double scale; const char *unit; } units[] = {
        { 1e12, "s" }, { 1e9, "ms" }, { 1e6, "us" }, { 1e3, "ns" }, { 1, "ps" },
    };
    int u = 0;
    while (u < 4 && units[u].scale > step * 1.0000001) u++;
    /* Far from zero ("60350 us") a larger unit with decimals reads better
     * ("60.35 ms"): as many decimals as the step needs. */
    double tmax = fmax(fabs(c->tv0), fabs(c->tv1));
    while (u > 0 && tmax / units[u].scale >= 10000) u--;
    double in_unit = step / units[u].scale;
    int decimals = in_unit >= 1 ? 0 : (int)ceil(-log10(in_unit) - 1e-9);
    viz_draw_clip(c->dl, g->plot_x0, 0, g->plot_x1 - g->plot_x0 + g->m.gutter_w, ah);
    int last_right = INT32_MIN;
    for (double k = ceil(c->tv0 / step); k * step <= c->tv1; k++) {
        double t = k * step;
        int x = (int)floor(viz_x_of(g, v, t));
        viz_draw_rect(c->dl, x, ah - 8, 1, 7, VIZ_TEXT_DIM);
        if (!c->fh) continue;
        char buf[48];
        if (t == 0) snprintf(buf, sizeof buf, "0");
        else snprintf(buf, sizeof buf, "%.*f %s", decimals, t / units[u].scale, units[u].unit);
        int tw = viz_text_width(c->font, buf), tx = x + 3;
        /* A label cut by the edge of the window reads as another number; one
         * under the cursor's time label is hidden by it. */
        if (tx + tw > v->width - 2 || tx <= last_right + 4) continue;
        if (tx < cursor_x1 && tx + tw > cursor_x0) continue;
        viz_draw_text(c->dl, tx, ah - 9 - c->fh, 0, VIZ_TEXT, buf);
        last_right = tx + tw;
    }
}

/* Whether a panel draws its compute lanes as a heat map: a serving run of
 * many rows, seen with many passes per pixel (whole-run zoom). */
static bool wants_heat(const struct ctx *c, const struct timeline *tl)
{
    if (c->v->no_heatmap || !viz_is_serving(tl) || tl->n_rows < 16) return false;
    for (int i = 0; i < tl->n_rows; i++) {
        const struct tl_lane *l = timeline_lane(tl, tl->order[i], TL_COMPUTE);
        if (!l->lod) continue;
        size_t a = timeline_lane_seek(l, (mp_time)floor(c->tv0));
        size_t b = timeline_lane_upper(l, c->tv1);
        return (double)(b - a) > 2.0 * (c->g->plot_x1 - c->g->plot_x0) &&
               l->lod->b0 <= c->v->ps_per_px / 2;
    }
    return false;
}

/* The heat map's scale: the busiest column of any visible row. */
static double heat_scale(struct ctx *c, int p)
{
    double top = 0;
    double tcut = c->v->cursor < c->tv1 ? c->v->cursor : c->tv1;
    for (int i = 0; i < c->g->n_rows; i++) {
        const struct viz_row *r = &c->g->rows[i];
        if (r->panel != p || r->y + r->h < c->g->rows_y0 || r->y >= c->g->rows_y1) continue;
        const struct tl_lane *l = timeline_lane(c->tl, r->row, TL_COMPUTE);
        if (!l->lod) continue;
        int x0, x1;
        lod_columns(c, l->lod, tcut, &x0, &x1);
        for (int x = x0; x < x1; x++)
            if (c->cov[x - c->g->plot_x0] > top) top = c->cov[x - c->g->plot_x0];
    }
    return top > 1 ? 1 : top;
}

void viz_layout_draw(struct viz_draw_list *dl, const struct viz_geom *g, const struct viz_scene *sc,
                     const struct viz_view *v)
{
    const struct viz_font *font = sc->font;
    struct ctx c = { .dl = dl, .g = g, .v = v, .sc = sc, .font = font,
                     .fh = font ? font->height : 0 };
    c.tv0 = viz_t_of(g, v, g->plot_x0);
    c.tv1 = viz_t_of(g, v, g->plot_x1);
    int plot_w = imax(1, g->plot_x1 - g->plot_x0);
    c.cov = mp_xmalloc((size_t)plot_w * sizeof *c.cov);
    c.kind = mp_xmalloc((size_t)plot_w * sizeof *c.kind);
    viz_draw_noclip(dl);
    viz_draw_rect(dl, 0, 0, v->width, v->height, VIZ_BG);

    double step = viz_axis_step(v->ps_per_px, 90 * (v->scale > 0 ? v->scale : 1));
    viz_draw_clip(dl, g->plot_x0, g->rows_y0, g->plot_x1 - g->plot_x0, g->rows_y1 - g->rows_y0);
    for (double k = ceil(c.tv0 / step); k * step <= c.tv1; k++)
        viz_draw_rect(dl, (int)floor(viz_x_of(g, v, k * step)), g->rows_y0, 1,
                      g->rows_y1 - g->rows_y0, VIZ_GRID);

    double heat_max[VIZ_MAX_PANELS] = { 0 };
    bool heat[VIZ_MAX_PANELS] = { false };
    for (int p = 0; p < sc->n; p++) {
        const struct timeline *tl = sc->tl[p];
        const struct viz_panel_geom *pg = &g->panel[p];
        c.tl = tl;
        c.n_chunks = tl->max_chunk + 1;
        c.heat = heat[p] = wants_heat(&c, tl);
        if (c.heat) c.heat_max = heat_max[p] = heat_scale(&c, p);
        c.label_bottom = INT32_MIN;
        c.clip_y0 = imax(g->rows_y0, pg->header_y + pg->header_h);
        for (int i = 0; i < g->n_rows; i++) {
            const struct viz_row *r = &g->rows[i];
            if (r->panel != p || r->y + r->h < c.clip_y0 || r->y >= g->rows_y1) continue;
            draw_row(&c, r);
        }
        if (tl->n_rows == 0 && c.fh) {
            const char *msg = "no ops in this timeline";
            int tw = viz_text_width(font, msg), ty = pg->top + g->m.pad;
            if (ty >= c.clip_y0 && ty + c.fh <= g->rows_y1) {
                viz_draw_clip(dl, 0, c.clip_y0, v->width, g->rows_y1 - c.clip_y0);
                text_fit(&c, imax(g->m.pad, (g->plot_x0 + g->plot_x1 - tw) / 2), ty,
                         v->width - 2 * g->m.pad, VIZ_TEXT_DIM, msg);
            }
        }
    }
    for (int p = 0; p < sc->n; p++) {
        const struct viz_panel_geom *pg = &g->panel[p];
        if (pg->header_y + pg->header_h <= g->rows_y0 || pg->header_y >= g->rows_y1) continue;
        c.tl = sc->tl[p];
        c.heat = heat[p];
        c.heat_max = heat_max[p];
        draw_header(&c, p);
    }

    /* The cursor and its time, in the axis; tick labels step aside. */
    int cx0 = INT32_MAX, cx1 = INT32_MIN;
    char cbuf[32];
    int tx = 0, tw = 0;
    bool show_cursor = isfinite(v->cursor) && v->cursor >= c.tv0 && v->cursor <= c.tv1;
    if (show_cursor && c.fh) {
        int x = (int)floor(viz_x_of(g, v, v->cursor));
        viz_format_time(v->cursor, cbuf, sizeof cbuf);
        tw = viz_text_width(font, cbuf);
        tx = x + 4 + tw + 4 > v->width ? x - tw - 8 : x + 4;
        cx0 = tx - 2;
        cx1 = tx + tw + 2;
    }
    draw_axis(&c, cx0, cx1);
    if (show_cursor) {
        int x = (int)floor(viz_x_of(g, v, v->cursor));
        viz_draw_clip(dl, g->plot_x0 - 1, 0, g->plot_x1 - g->plot_x0 + 2, g->rows_y1);
        viz_draw_rect(dl, x - 1, g->m.axis_h - 10, 2, g->rows_y1 - g->m.axis_h + 10, VIZ_CURSOR);
        if (c.fh) {
            viz_draw_noclip(dl);
            viz_draw_rect(dl, tx - 2, 1, tw + 4, c.fh, VIZ_CURSOR);
            viz_draw_text(dl, tx, 1, 0, VIZ_TEXT_ON_OP, cbuf);
        }
    }
    viz_draw_noclip(dl);
    free(c.cov);
    free(c.kind);
}
