/* layout.c — see layout.h. Everything here is arithmetic on the timeline's
 * indexes: per lane a binary search finds the first op on screen and the walk
 * stops at the first one past the right edge (or past the replay cursor). */
#include "layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void viz_geom_init(struct viz_geom *g) { memset(g, 0, sizeof *g); }

void viz_geom_release(struct viz_geom *g)
{
    free(g->rows);
    memset(g, 0, sizeof *g);
}

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* Heights of one row's parts at a given shrink factor. */
struct row_sizes { int compute, comm, mem, gap, group_gap, header; };

static struct row_sizes sizes_at(double s)
{
    struct row_sizes r;
    r.compute = imax(3, (int)lround(VIZ_COMPUTE_H * s));
    r.comm = imax(2, (int)lround(VIZ_COMM_H * s));
    r.mem = imax(2, (int)lround(VIZ_MEM_H * s));
    r.gap = imax(1, (int)lround(VIZ_ROW_GAP * s));
    r.group_gap = imax(1, (int)lround(VIZ_GROUP_GAP * s));
    r.header = VIZ_HEADER_H;
    return r;
}

/* Lay the rows out from y = 0 (unscrolled); returns the content height.
 * Without `extras` rows have their compute lane only. */
static int place_rows(struct viz_geom *g, const struct viz_scene *sc, struct row_sizes rs,
                      bool extras)
{
    int y = 0;
    g->n_rows = 0;
    for (int p = 0; p < sc->n; p++) {
        const struct timeline *tl = sc->tl[p];
        g->header_y[p] = y;
        y += rs.header;
        int last_stage = INT32_MIN;
        for (int i = 0; i < tl->n_rows; i++) {
            int chip = tl->rows[i];
            int stage = tl->chips[chip].stage;
            struct viz_row r = { .panel = p, .chip = chip };
            r.group_start = i > 0 && stage != last_stage;
            if (r.group_start) y += rs.group_gap - rs.gap;
            last_stage = stage;
            r.y = y;
            r.compute_y = y;
            r.compute_h = rs.compute;
            y += rs.compute;
            if (extras && tl->has_comm) { r.comm_y = y; r.comm_h = rs.comm; y += rs.comm; }
            if (extras && tl->has_mem) { r.mem_y = y + 1; r.mem_h = rs.mem; y += rs.mem + 1; }
            r.h = y - r.y;
            y += rs.gap;
            MP_GROW(g->rows, g->cap_rows, g->n_rows + 1);
            g->rows[g->n_rows++] = r;
        }
        y += rs.group_gap;
    }
    return y;
}

void viz_layout_geom(struct viz_geom *g, const struct viz_scene *sc, const struct viz_view *v)
{
    g->plot_x0 = VIZ_LABEL_W;
    g->plot_x1 = imax(g->plot_x0 + 1, v->width - VIZ_GUTTER_W);
    g->rows_y0 = VIZ_AXIS_H;
    g->rows_y1 = imax(g->rows_y0 + 1, v->height - VIZ_STATUS_H);
    g->n_panels = sc->n;
    int avail = g->rows_y1 - g->rows_y0;
    int full = place_rows(g, sc, sizes_at(1.0), true);
    int headers = sc->n * (VIZ_HEADER_H + VIZ_GROUP_GAP);
    double s = 1.0;
    if (full < avail && full > headers) {
        /* Few rows: grow the lanes (up to twice) rather than leave half the
         * window empty; a taller memory strip shows its shape. Rounding may
         * overshoot, so step down until it fits. */
        s = (double)(avail - headers) / (double)(full - headers);
        if (s > 2.0) s = 2.0;
        for (full = place_rows(g, sc, sizes_at(s), true); full > avail && s > 1.0;
             full = place_rows(g, sc, sizes_at(s), true))
            s = s - 0.05 > 1.0 ? s - 0.05 : 1.0;
    }
    /* Shrink the lanes (not the headers) to fit; rounding and the minimum
     * sizes may overshoot, so retry a few times; scroll what still won't. */
    bool extras = true;
    for (int tries = 0; full > avail && tries < 4 && s > 0.05; tries++) {
        s *= (double)(avail - headers) / (double)(full - headers);
        if (s < 0.05) s = 0.05;
        full = place_rows(g, sc, sizes_at(s), extras);
        /* Compute lanes thinner than 10 px next to 2-px comm lanes and
         * memory strips show nothing well: drop the extras, keep the
         * compute lanes as tall as the window allows. */
        if (extras && g->n_rows && g->rows[0].compute_h < 10 &&
            (g->rows[0].comm_h || g->rows[0].mem_h)) {
            extras = false;
            s = 1.0;
            tries = -1;
            full = place_rows(g, sc, sizes_at(s), extras);
        }
    }
    g->content_h = full;
    int dy = g->rows_y0 - (int)lround(v->scroll_y);
    for (int p = 0; p < sc->n; p++) g->header_y[p] += dy;
    for (int i = 0; i < g->n_rows; i++) {
        struct viz_row *r = &g->rows[i];
        r->y += dy;
        r->compute_y += dy;
        if (r->comm_h) r->comm_y += dy;
        if (r->mem_h) r->mem_y += dy;
    }
}

double viz_x_of(const struct viz_geom *g, const struct viz_view *v, double t)
{
    return g->plot_x0 + (t - v->t0) / v->ps_per_px;
}

double viz_t_of(const struct viz_geom *g, const struct viz_view *v, double x)
{
    return v->t0 + (x - g->plot_x0) * v->ps_per_px;
}

void viz_scene_span(const struct viz_scene *sc, double *t_begin, double *t_end)
{
    double b = INFINITY, e = -INFINITY;
    for (int p = 0; p < sc->n; p++) {
        const struct timeline *tl = sc->tl[p];
        if (tl->n_ops == 0) continue;
        if ((double)tl->t_begin < b) b = (double)tl->t_begin;
        if ((double)tl->t_end > e) e = (double)tl->t_end;
    }
    if (!(e > b)) { b = 0; e = (double)MP_PS_PER_MS; }
    *t_begin = b;
    *t_end = e;
}

void viz_view_fit(struct viz_view *v, const struct viz_geom *g, double t_begin, double t_end)
{
    double span = t_end > t_begin ? t_end - t_begin : 1.0;
    double margin = span * 0.015;
    v->ps_per_px = (span + 2 * margin) / (double)(g->plot_x1 - g->plot_x0);
    v->t0 = t_begin - margin;
}

void viz_view_zoom(struct viz_view *v, const struct viz_geom *g, double x, double factor)
{
    double t = viz_t_of(g, v, x);
    double pp = v->ps_per_px / factor;
    /* Below 1/1000 ps per pixel nothing can be told apart; above ~30 h per
     * pixel doubles start to lose whole picoseconds. */
    if (pp < 1e-3) pp = 1e-3;
    if (pp > 1e17) pp = 1e17;
    v->ps_per_px = pp;
    v->t0 = t - (x - g->plot_x0) * pp;
}

void viz_view_clamp_scroll(struct viz_view *v, const struct viz_geom *g)
{
    double max = g->content_h - (g->rows_y1 - g->rows_y0);
    if (v->scroll_y > max) v->scroll_y = max;
    if (v->scroll_y < 0) v->scroll_y = 0;
}

double viz_axis_step(double ps_per_px, double min_px)
{
    double want = ps_per_px * min_px;
    double step = 1.0;
    while (step * 10 <= want) step *= 10;
    while (step < want) {
        if (step * 2 >= want) return step * 2;
        if (step * 5 >= want) return step * 5;
        step *= 10;
    }
    return step;
}

void viz_format_time(double ps, char *buf, size_t size)
{
    static const struct { double scale; const char *unit; } units[] = {
        { 1e12, "s" }, { 1e9, "ms" }, { 1e6, "us" }, { 1e3, "ns" }, { 1, "ps" },
    };
    if (ps == 0) { snprintf(buf, size, "0"); return; }
    double a = fabs(ps);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (a >= units[i].scale * 0.9995 || i + 1 == sizeof units / sizeof units[0]) {
            snprintf(buf, size, "%.4g %s", ps / units[i].scale, units[i].unit);
            return;
        }
    }
}

void viz_format_bytes(double bytes, char *buf, size_t size)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    int u = 0;
    while (fabs(bytes) >= 1024 && u < 5) { bytes /= 1024; u++; }
    snprintf(buf, size, "%.3g %s", bytes, units[u]);
}

bool viz_op_columns(const struct viz_geom *g, const struct viz_view *v, const struct tl_op *op,
                    int *x0, int *x1)
{
    double a = floor(viz_x_of(g, v, (double)op->start));
    double b = floor(viz_x_of(g, v, (double)op->end));
    if (!(b > a)) return false;
    /* Clamp far off-screen boxes so the ints stay sane when zoomed far in. */
    *x0 = (int)fmax(a, g->plot_x0 - 2.0);
    *x1 = (int)fmin(b, g->plot_x1 + 2.0);
    return *x1 > *x0;
}

/* ---- hit testing ---- */

struct viz_hit viz_layout_hit(const struct viz_geom *g, const struct viz_scene *sc,
                              const struct viz_view *v, int x, int y)
{
    struct viz_hit h = { .ok = false };
    if (x < g->plot_x0 || x >= g->plot_x1 || y < g->rows_y0 || y >= g->rows_y1) return h;
    for (int i = 0; i < g->n_rows; i++) {
        const struct viz_row *r = &g->rows[i];
        int stream;
        if (y >= r->compute_y && y < r->compute_y + r->compute_h) stream = TL_COMPUTE;
        else if (r->comm_h && y >= r->comm_y && y < r->comm_y + r->comm_h) stream = TL_COMM;
        else continue;
        const struct timeline *tl = sc->tl[r->panel];
        const struct tl_lane *lane = timeline_lane(tl, r->chip, stream);
        /* Within two pixels counts, so a sub-pixel op can still be picked. */
        double t = viz_t_of(g, v, x + 0.5), tol = 2 * v->ps_per_px;
        size_t i0 = timeline_lane_seek(tl, lane, (mp_time)floor(t - tol));
        double best = INFINITY;
        for (size_t k = i0; k < lane->first + lane->count; k++) {
            const struct tl_op *o = &tl->ops[k];
            if ((double)o->start > t + tol) break;
            if ((double)o->start >= v->cursor || (double)o->end < t - tol) continue;
            double d = t < (double)o->start ? (double)o->start - t
                     : t > (double)o->end ? t - (double)o->end : 0;
            if (d < best) {
                best = d;
                h = (struct viz_hit){ true, r->panel, r->chip, stream, k };
                if (d == 0) break;
            }
        }
        return h;
    }
    return h;
}

int viz_op_details(const struct timeline *tl, const struct tl_op *op, char lines[][96], int cap)
{
    int n = 0;
    char a[32], b[32];
    if (n < cap) {
        int len = snprintf(lines[n], 96, "%s", timeline_kind_name(tl, op->kind));
        if (op->microbatch >= 0)
            len += snprintf(lines[n] + len, (size_t)(96 - len), "  microbatch %d", (int)op->microbatch);
        if (op->chunk > 0 && len < 96)
            snprintf(lines[n] + len, (size_t)(96 - len), "  chunk %d", (int)op->chunk);
        n++;
    }
    if (n < cap) {
        int len = snprintf(lines[n], 96, "chip %d  stage %d  %s", (int)op->chip, (int)op->stage,
                           op->stream == TL_COMM ? "comm" : "compute");
        if (op->layer_first >= 0 && len < 96)
            snprintf(lines[n] + len, (size_t)(96 - len), "  layers %d-%d", (int)op->layer_first,
                     (int)op->layer_last);
        n++;
    }
    if (n < cap) {
        viz_format_time((double)op->start, a, sizeof a);
        viz_format_time((double)(op->end - op->start), b, sizeof b);
        snprintf(lines[n++], 96, "start %s  duration %s", a, b);
    }
    if (n < cap && op->bytes > 0) {
        viz_format_bytes((double)op->bytes, a, sizeof a);
        snprintf(lines[n++], 96, "bytes %s (%lld)", a, (long long)op->bytes);
    }
    const char *label = timeline_label(tl, op);
    if (n < cap && *label) snprintf(lines[n++], 96, "%.90s", label);
    return n;
}

/* ---- overlays ---- */

void viz_layout_status(struct viz_draw_list *dl, const struct viz_view *v,
                       const struct viz_font *font, const char *left, const char *right)
{
    int y = v->height - VIZ_STATUS_H;
    viz_draw_rect(dl, 0, y, v->width, VIZ_STATUS_H, VIZ_AXIS_BG);
    viz_draw_rect(dl, 0, y, v->width, 1, VIZ_SEPARATOR);
    int ty = y + (VIZ_STATUS_H - (font ? font->height : 0)) / 2;
    if (left) viz_draw_text(dl, 6, ty, v->width / 2, VIZ_TEXT_DIM, left);
    if (right) {
        int w = viz_text_width(font, right);
        viz_draw_text(dl, v->width - w - 6, ty, 0, VIZ_TEXT_DIM, right);
    }
}

void viz_layout_tooltip(struct viz_draw_list *dl, const struct viz_view *v,
                        const struct viz_font *font, int x, int y, const char *const *lines, int n)
{
    int lh = font ? font->height : 12, w = 0;
    for (int i = 0; i < n; i++) w = imax(w, viz_text_width(font, lines[i]));
    int bw = w + 12, bh = n * lh + 8;
    int bx = x + 14, by = y + 16;
    if (bx + bw > v->width) bx = imax(0, x - 14 - bw);
    if (by + bh > v->height) by = imax(0, y - 8 - bh);
    viz_draw_noclip(dl);
    viz_draw_rect(dl, bx, by, bw, bh, VIZ_TOOLTIP_BORDER);
    viz_draw_rect(dl, bx + 1, by + 1, bw - 2, bh - 2, VIZ_TOOLTIP_BG);
    for (int i = 0; i < n; i++)
        viz_draw_text(dl, bx + 6, by + 4 + i * lh, 0, i == 0 ? VIZ_TEXT : VIZ_TEXT_DIM, lines[i]);
    (void)imin;
}
