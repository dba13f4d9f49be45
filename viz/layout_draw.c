/* layout_draw.c — viz_layout_draw: the scene as draw commands (layout.h).
 *
 * Order matters only where things overlap: background and grid first, then
 * each row (lanes, bubble tint, ops, memory, gutter), then panel headers and
 * the axis on top so scrolled rows slide under them, then the cursor. */
#include "layout.h"

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
    const struct viz_font *font;
    const struct timeline *tl;
    double tv0, tv1;          /* time at the left and right edge */
    int fh;                   /* font height, 0 without a font */
    int label_bottom;         /* lowest y a row label reached (labels never overlap) */
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

/* Many ops per pixel: read the lane's level-of-detail pyramid instead of
 * its ops. The level is the coarsest whose bins are at most half a column
 * wide, so each column sums two to four bins (splitting the ones on its
 * edges by time) and a frame costs about (columns × 3) reads per lane,
 * whatever the number of ops. Equal neighbouring columns merge into one
 * rectangle. A bin's busy time is assumed spread evenly across it, which is
 * exact for fully busy and fully idle bins and off by at most one bin's
 * share for a column edge inside a partly busy bin. */
static void draw_lod(struct ctx *c, const struct tl_lod *lod, int y, int h, double tcut)
{
    const struct viz_geom *g = c->g;
    const struct viz_view *v = c->v;
    double pp = v->ps_per_px;
    int l = 0;
    while (l + 1 < lod->levels && lod->b0 * (double)(2u << l) <= pp / 2) l++;
    double bw = lod->b0 * (double)(1u << l);
    uint32_t n = lod->n0 >> l;
    const float *busy = lod->busy + lod->off[l];
    const uint8_t *kind = lod->kind + lod->off[l];
    double lane_end = lod->base + bw * n;
    int xa = (int)floor(viz_x_of(g, v, lod->base));
    int xb = (int)ceil(viz_x_of(g, v, lane_end < tcut ? lane_end : tcut));
    if (xa < g->plot_x0) xa = g->plot_x0;
    if (xb > g->plot_x1) xb = g->plot_x1;
    int run_x = -1, run_w = 0;
    viz_color run_c = 0;
    for (int x = xa; x < xb; x++) {
        double t0 = viz_t_of(g, v, x), t1 = t0 + pp;
        if (t1 > tcut) t1 = tcut;
        double r0 = (t0 - lod->base) / bw, r1 = (t1 - lod->base) / bw;
        if (r0 < 0) r0 = 0;
        if (r1 > n) r1 = n;
        double cov = 0, w[TL_LOD_SLOTS] = { 0 };
        for (uint32_t j = (uint32_t)r0; j < n && (double)j < r1; j++) {
            double lo = j > r0 ? j : r0, hi = j + 1.0 < r1 ? j + 1.0 : r1;
            double part = busy[j] * (hi - lo);
            cov += part;
            w[kind[j]] += part;
        }
        viz_color col = 0;
        if (cov > 0) {
            int best = 0;
            for (int k = 1; k < TL_LOD_SLOTS; k++)
                if (w[k] > w[best]) best = k;
            /* cov is in bins; the column is pp / bw bins wide. */
            col = pool_color(cov * bw / pp, best);
        }
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

/* Index of the first op of the lane starting at or after t. */
static size_t lane_upper(const struct timeline *tl, const struct tl_lane *lane, double t)
{
    size_t lo = lane->first, hi = lane->first + lane->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((double)tl->ops[mid].start < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void draw_ops(struct ctx *c, int chip, int stream, int y, int h)
{
    const struct timeline *tl = c->tl;
    const struct tl_lane *lane = timeline_lane(tl, chip, stream);
    if (!lane->count) return;
    const struct viz_view *v = c->v;
    double tcut = v->cursor < c->tv1 ? v->cursor : c->tv1;
    int by = h >= 6 ? y + 1 : y, bh = h >= 6 ? h - 2 : h;
    size_t i0 = timeline_lane_seek(tl, lane, (mp_time)floor(c->tv0));
    /* More than two ops per pixel on average: the pyramid is cheaper, and
     * just as faithful at this zoom (few boxes are a pixel wide). */
    if (lane->lod && (double)(lane_upper(tl, lane, tcut) - i0) >
                         2.0 * (c->g->plot_x1 - c->g->plot_x0) &&
        lane->lod->b0 <= v->ps_per_px / 2) {
        draw_lod(c, lane->lod, by, bh, tcut);
        return;
    }
    struct pool pl = { .col = -1 };
    size_t end = lane->first + lane->count;
    for (size_t i = i0; i < end; i++) {
        const struct tl_op *o = &tl->ops[i];
        if ((double)o->start >= tcut) break;           /* sorted by start */
        if ((double)o->end <= c->tv0) continue;
        double e = (double)o->end < v->cursor ? (double)o->end : v->cursor;
        double xs = viz_x_of(c->g, v, (double)o->start), xe = viz_x_of(c->g, v, e);
        int x0 = px(xs, c->g), x1 = px(xe, c->g);
        if (xe - xs < 1.0) {
            /* Narrower than a pixel: pool it; one straddling a column edge
             * gives each column its share, so a run of tiny ops adds up to
             * exactly one fully busy column per pixel. */
            int kind = o->kind < TL_KIND_CUSTOM ? o->kind : TL_KIND_CUSTOM;
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
        viz_color col = viz_kind_color(o->kind);
        int w = x1 - x0;
        if (w >= 5) {
            /* A darker last column tells neighbouring boxes apart without a
             * gap that would look like idle time. */
            viz_draw_rect(c->dl, x0, by, w - 1, bh, col);
            viz_draw_rect(c->dl, x1 - 1, by, 1, bh, darker(col));
        } else {
            viz_draw_rect(c->dl, x0, by, w, bh, col);
        }
        if (c->fh && o->microbatch >= 0 && bh >= c->fh - 2) {
            char num[16];
            snprintf(num, sizeof num, "%d", (int)o->microbatch);
            int tw = viz_text_width(c->font, num);
            if (tw + 4 <= w)
                viz_draw_text(c->dl, x0 + (w - tw) / 2, by + (bh - c->fh) / 2, 0, VIZ_TEXT_ON_OP, num);
        }
    }
    if (pl.col >= 0) pool_flush(c, &pl, by, bh);
}

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
    int fill = (int)lround((double)in_cap / scale * r->mem_h);
    int total = (int)lround((double)value / scale * r->mem_h);
    int over = total - fill;
    if (run->x1 == x && run->fill == fill && run->over == over) {
        run->x1 = x + w;
        return;
    }
    mem_emit(c, r, run);
    *run = (struct mem_run){ x, x + w, fill, over };
}

double viz_mem_scale(const struct timeline *tl, int chip)
{
    /* Every chip of a panel on one scale, so strips compare by eye. A far
     * away capacity would squash the strips to a line (a 4 GiB stash on an
     * 80 GiB chip), so the scale is the largest peak on the panel, and the
     * capacity joins it (with its dotted line) only when some peak comes
     * within 4/5 of it or passes it; the gutter always says peak / capacity. */
    double peak = (double)tl->max_peak_mem, cap = (double)tl->chips[chip].capacity;
    if (cap > 0 && peak >= 0.8 * cap) return cap > peak ? cap : peak;
    return peak;
}

static void draw_memory(struct ctx *c, const struct viz_row *r)
{
    const struct timeline *tl = c->tl;
    const struct tl_chip *ch = &tl->chips[r->chip];
    const struct viz_geom *g = c->g;
    viz_draw_rect(c->dl, g->plot_x0, r->mem_y, g->plot_x1 - g->plot_x0, r->mem_h, VIZ_MEM_LANE);
    int64_t cap = ch->capacity;
    double scale = viz_mem_scale(tl, r->chip);
    if (!ch->mem_count || scale <= 0) return;
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
    if (cap > 0 && (double)cap <= scale) {
        int cy = r->mem_y + r->mem_h - (int)lround((double)cap / scale * r->mem_h);
        /* Dotted, so it reads as a limit rather than a separator. */
        viz_draw_hatch(c->dl, g->plot_x0, imax(cy, r->mem_y), g->plot_x1 - g->plot_x0, 1,
                       VIZ_MEM_LANE, VIZ_CAPACITY);
    }
}

static void draw_gutter(struct ctx *c, const struct viz_row *r)
{
    const struct timeline *tl = c->tl;
    const struct tl_chip *ch = &tl->chips[r->chip];
    int x = c->g->plot_x1 + 8;
    char buf[64];
    if (timeline_lane(tl, r->chip, TL_COMPUTE)->count) {
        /* During a replay, the busy share so far: it climbs as the pipeline
         * fills and sinks in the drain, ending at the step's figure. */
        double cur = c->v->cursor;
        double u = isfinite(cur) && cur < (double)tl->t_end
                 ? timeline_utilization_until(tl, r->chip, (mp_time)floor(cur))
                 : timeline_utilization(tl, r->chip);
        int bh = imax(2, imin(r->compute_h - 6, 10));
        int by = r->compute_y + (r->compute_h - bh) / 2;
        viz_draw_rect(c->dl, x, by, 50, bh, VIZ_UTIL_BG);
        viz_draw_rect(c->dl, x, by, (int)lround(50 * u), bh, VIZ_UTIL_FILL);
        if (c->fh && r->compute_h >= c->fh - 4) {
            snprintf(buf, sizeof buf, "%.1f%%", 100 * u);
            viz_draw_text(c->dl, x + 56, r->compute_y + (r->compute_h - c->fh) / 2, 0, VIZ_TEXT, buf);
        }
    }
    if (r->mem_h && c->fh && ch->mem_count && r->mem_h + r->comm_h >= c->fh) {
        char a[24], b[24];
        viz_format_bytes((double)ch->peak_mem, a, sizeof a);
        if (ch->capacity > 0) {
            viz_format_bytes((double)ch->capacity, b, sizeof b);
            snprintf(buf, sizeof buf, "%s / %s", a, b);
        } else {
            snprintf(buf, sizeof buf, "peak %s", a);
        }
        viz_draw_text(c->dl, x, r->mem_y + r->mem_h - c->fh + 2, c->g->plot_x1 + VIZ_GUTTER_W - x,
                      ch->capacity > 0 && ch->peak_mem > ch->capacity ? VIZ_MEM_OVER : VIZ_TEXT_DIM, buf);
    }
}

static void draw_row(struct ctx *c, const struct viz_row *r)
{
    const struct viz_geom *g = c->g;
    const struct viz_view *v = c->v;
    const struct timeline *tl = c->tl;
    int plot_w = g->plot_x1 - g->plot_x0;
    viz_draw_clip(c->dl, 0, g->rows_y0, v->width, g->rows_y1 - g->rows_y0);
    if (r->group_start)
        viz_draw_rect(c->dl, 0, r->y - (VIZ_GROUP_GAP + 1) / 2 - 1, v->width, 1, VIZ_SEPARATOR);
    if (c->fh) {
        char buf[48];
        int ly = r->h >= 2 * c->fh ? r->y : r->compute_y + (r->compute_h - c->fh) / 2;
        /* Rows thinner than a line of text get a label only where it does
         * not run into the previous one (every second, third... row). */
        if (ly >= c->label_bottom) {
            snprintf(buf, sizeof buf, "chip %d", r->chip);
            viz_draw_text(c->dl, 8, ly, VIZ_LABEL_W - 12, VIZ_TEXT, buf);
            c->label_bottom = ly + c->fh - 2;
        }
        if (r->mem_h >= c->fh - 3 && r->mem_y >= ly + 2 * c->fh)
            viz_draw_text(c->dl, 20, r->mem_y + (r->mem_h - c->fh) / 2, VIZ_LABEL_W - 24,
                          VIZ_TEXT_DIM, "memory");
        if (r->h >= 2 * c->fh && tl->chips[r->chip].stage >= 0) {
            int node = tl->chips[r->chip].node;
            if (node >= 0) snprintf(buf, sizeof buf, "stage %d  node %d", tl->chips[r->chip].stage, node);
            else snprintf(buf, sizeof buf, "stage %d", tl->chips[r->chip].stage);
            viz_draw_text(c->dl, 8, ly + c->fh, VIZ_LABEL_W - 12, VIZ_TEXT_DIM, buf);
        }
    }
    draw_gutter(c, r);

    viz_draw_clip(c->dl, g->plot_x0, g->rows_y0, plot_w, g->rows_y1 - g->rows_y0);
    viz_draw_rect(c->dl, g->plot_x0, r->compute_y, plot_w, r->compute_h, VIZ_LANE);
    /* The bubble: the compute stream's idle time inside the step, tinted
     * and hatched so it reads as a hole; ops are drawn over it. */
    double bend = (double)tl->t_end < v->cursor ? (double)tl->t_end : v->cursor;
    int bx0 = px(viz_x_of(g, v, (double)tl->t_begin), g), bx1 = px(viz_x_of(g, v, bend), g);
    if (tl->n_ops && bx1 > bx0)
        viz_draw_hatch(c->dl, bx0, r->compute_y, bx1 - bx0, r->compute_h, VIZ_BUBBLE, VIZ_BUBBLE_HATCH);
    draw_ops(c, r->chip, TL_COMPUTE, r->compute_y, r->compute_h);
    if (r->comm_h) {
        viz_draw_rect(c->dl, g->plot_x0, r->comm_y, plot_w, r->comm_h, VIZ_COMM_LANE);
        draw_ops(c, r->chip, TL_COMM, r->comm_y, r->comm_h);
    }
    if (r->mem_h) draw_memory(c, r);
}

/* The colour key, right-aligned in the panel header: the kinds this
 * timeline has, then bubble and memory. Drawn only if it fits beside the
 * header's text (from x_min), whole, so it never overlaps it. */
static void draw_legend(struct ctx *c, int y, int x_min)
{
    const struct timeline *tl = c->tl;
    struct { const char *name; viz_color col; bool hatch; } items[TL_LOD_SLOTS + 2];
    int n = 0;
    for (int k = 0; k < TL_LOD_SLOTS; k++) {
        if (!tl->kind_seen[k]) continue;
        items[n].name = k < TL_KIND_CUSTOM ? timeline_kind_name(tl, (uint16_t)k) : "other";
        items[n].col = viz_kind_color((unsigned)k);
        items[n++].hatch = false;
    }
    if (tl->n_ops) items[n].name = "bubble", items[n].col = VIZ_BUBBLE, items[n++].hatch = true;
    if (tl->has_mem) items[n].name = "memory", items[n].col = VIZ_MEM_FILL, items[n++].hatch = false;
    const int sw = 12, pad = 4, space = 12;
    int total = 0;
    for (int i = 0; i < n; i++) total += sw + pad + viz_text_width(c->font, items[i].name) + space;
    int x = c->v->width - 8 - total;
    if (n == 0 || x < x_min) return;
    int sy = y + (VIZ_HEADER_H - 2 - sw) / 2, ty = y + (VIZ_HEADER_H - 2 - c->fh) / 2;
    for (int i = 0; i < n; i++) {
        if (items[i].hatch) viz_draw_hatch(c->dl, x, sy, sw, sw, VIZ_BUBBLE, VIZ_BUBBLE_HATCH);
        else viz_draw_rect(c->dl, x, sy, sw, sw, items[i].col);
        x += sw + pad;
        viz_draw_text(c->dl, x, ty, 0, VIZ_TEXT_DIM, items[i].name);
        x += viz_text_width(c->font, items[i].name) + space;
    }
}

static void draw_header(struct ctx *c, int y)
{
    const struct timeline *tl = c->tl;
    viz_draw_clip(c->dl, 0, c->g->rows_y0, c->v->width, c->g->rows_y1 - c->g->rows_y0);
    viz_draw_rect(c->dl, 0, y, c->v->width, VIZ_HEADER_H - 2, VIZ_AXIS_BG);
    if (!c->fh) return;
    const char *scen = timeline_meta(tl, -1, "scenario");
    const char *sched = timeline_meta(tl, -1, "schedule");
    const char *step_s = timeline_meta(tl, -1, "step_time_s");
    const char *bub = timeline_meta(tl, -1, "bubble");
    const char *mfu = timeline_meta(tl, -1, "mfu");
    char step[32], line[512], mfu_txt[32];
    /* Prefer the simulator's own numbers; fall back to what the ops say. */
    double step_ps = step_s ? atof(step_s) * 1e12 : (double)(tl->t_end - tl->t_begin);
    viz_format_time(step_ps, step, sizeof step);
    double bubble = bub ? atof(bub) : tl->bubble;
    /* A synthetic model has no FLOPs, so the simulator's MFU is 0: say n/a
     * rather than print a zero that reads like a finding. */
    if (mfu && atof(mfu) > 0) snprintf(mfu_txt, sizeof mfu_txt, "%.1f%%", 100 * atof(mfu));
    else snprintf(mfu_txt, sizeof mfu_txt, "n/a");
    snprintf(line, sizeof line, "%s    scenario %s    schedule %s    step %s    bubble %.1f%%    MFU %s",
             tl->name ? tl->name : "timeline",
             scen ? scen : "?", sched ? sched : "?", step, 100 * bubble, mfu_txt);
    int ty = y + (VIZ_HEADER_H - 2 - c->fh) / 2;
    viz_draw_text(c->dl, 8, ty, c->v->width - 16, VIZ_TEXT, line);
    draw_legend(c, y, 8 + viz_text_width(c->font, line) + 24);
}

static void draw_axis(struct ctx *c)
{
    const struct viz_geom *g = c->g;
    const struct viz_view *v = c->v;
    viz_draw_noclip(c->dl);
    viz_draw_rect(c->dl, 0, 0, v->width, VIZ_AXIS_H, VIZ_AXIS_BG);
    viz_draw_rect(c->dl, 0, VIZ_AXIS_H - 1, v->width, 1, VIZ_SEPARATOR);
    if (c->fh) viz_draw_text(c->dl, 8, (VIZ_AXIS_H - c->fh) / 2, VIZ_LABEL_W - 12, VIZ_TEXT_DIM, "time");
    double step = viz_axis_step(v->ps_per_px, 90);
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
    viz_draw_clip(c->dl, g->plot_x0 - 40, 0, g->plot_x1 - g->plot_x0 + 80, VIZ_AXIS_H);
    for (double k = ceil(c->tv0 / step); k * step <= c->tv1; k++) {
        double t = k * step;
        int x = (int)floor(viz_x_of(g, v, t));
        viz_draw_rect(c->dl, x, VIZ_AXIS_H - 8, 1, 7, VIZ_TEXT_DIM);
        if (c->fh) {
            char buf[48];
            if (t == 0) snprintf(buf, sizeof buf, "0");
            else snprintf(buf, sizeof buf, "%.*f %s", decimals, t / units[u].scale, units[u].unit);
            /* A label cut by the edge of the window reads as another number. */
            if (x + 3 + viz_text_width(c->font, buf) <= g->plot_x1 + 40)
                viz_draw_text(c->dl, x + 3, VIZ_AXIS_H - 9 - c->fh, 0, VIZ_TEXT, buf);
        }
    }
}

void viz_layout_draw(struct viz_draw_list *dl, const struct viz_geom *g, const struct viz_scene *sc,
                     const struct viz_view *v, const struct viz_font *font)
{
    struct ctx c = { .dl = dl, .g = g, .v = v, .font = font, .fh = font ? font->height : 0 };
    c.tv0 = viz_t_of(g, v, g->plot_x0);
    c.tv1 = viz_t_of(g, v, g->plot_x1);
    viz_draw_noclip(dl);
    viz_draw_rect(dl, 0, 0, v->width, v->height, VIZ_BG);

    double step = viz_axis_step(v->ps_per_px, 90);
    viz_draw_clip(dl, g->plot_x0, g->rows_y0, g->plot_x1 - g->plot_x0, g->rows_y1 - g->rows_y0);
    for (double k = ceil(c.tv0 / step); k * step <= c.tv1; k++)
        viz_draw_rect(dl, (int)floor(viz_x_of(g, v, k * step)), g->rows_y0, 1,
                      g->rows_y1 - g->rows_y0, VIZ_GRID);

    for (int i = 0; i < g->n_rows; i++) {
        const struct viz_row *r = &g->rows[i];
        if (r->y + r->h < g->rows_y0 || r->y >= g->rows_y1) continue;
        c.tl = sc->tl[r->panel];
        draw_row(&c, r);
    }
    for (int p = 0; p < sc->n; p++) {
        if (g->header_y[p] + VIZ_HEADER_H < g->rows_y0 || g->header_y[p] >= g->rows_y1) continue;
        c.tl = sc->tl[p];
        draw_header(&c, g->header_y[p]);
    }
    draw_axis(&c);

    if (isfinite(v->cursor) && v->cursor >= c.tv0 && v->cursor <= c.tv1) {
        int x = (int)floor(viz_x_of(g, v, v->cursor));
        viz_draw_clip(dl, g->plot_x0 - 1, 0, g->plot_x1 - g->plot_x0 + 2, g->rows_y1);
        viz_draw_rect(dl, x - 1, VIZ_AXIS_H - 10, 2, g->rows_y1 - VIZ_AXIS_H + 10, VIZ_CURSOR);
        if (c.fh) {
            char buf[32];
            viz_format_time(v->cursor, buf, sizeof buf);
            int tw = viz_text_width(font, buf);
            int tx = x + 4 + tw + 4 > g->plot_x1 ? x - tw - 8 : x + 4;
            viz_draw_noclip(dl);
            viz_draw_rect(dl, tx - 2, 1, tw + 4, c.fh, VIZ_CURSOR);
            viz_draw_text(dl, tx, 1, 0, VIZ_TEXT_ON_OP, buf);
        }
    }
    viz_draw_noclip(dl);
}
