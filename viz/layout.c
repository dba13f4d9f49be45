/* layout.c — see layout.h: sizes, where rows go, time <-> pixels, what lies
 * under the pointer. Texts are in layout_text.c, drawing in layout_draw.c.
 * Everything here is arithmetic on the timeline's indexes: per lane a binary
 * search finds the first op on screen. */
#include "layout.h"
#include "layout_impl.h"

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
static int sc(double v, double s) { return (int)lround(v * s); }

struct viz_metrics viz_metrics_for(const struct viz_view *v, int font_h)
{
    double s = v->scale > 0 ? v->scale : 1.0;
    int fh = font_h > 0 ? font_h : (int)lround(14 * s);
    struct viz_metrics m = {
        .axis_h = imax(sc(VIZ_AXIS_H, s), 2 * fh + 2), .status_h = imax(sc(VIZ_STATUS_H, s), fh + 6),
        .line_h = imax(sc(VIZ_HEADER_H, s), fh + 8), .label_w = sc(VIZ_LABEL_W, s),
        .gutter_w = sc(VIZ_GUTTER_W, s), .compute_h = sc(VIZ_COMPUTE_H, s),
        .comm_h = sc(VIZ_COMM_H, s), .mem_h = sc(VIZ_MEM_H, s), .row_gap = imax(1, sc(VIZ_ROW_GAP, s)),
        .group_gap = imax(2, sc(VIZ_GROUP_GAP, s)), .pad = imax(4, sc(8, s)),
    };
    /* A narrow window keeps most of its width for time: the label column
     * and the gutter give way first (their texts are cut to fit). */
    if (v->width > 0) {
        m.label_w = imin(m.label_w, imax(v->width * 22 / 100, sc(48, s)));
        m.gutter_w = imin(m.gutter_w, imax(v->width * 18 / 100, sc(40, s)));
    }
    return m;
}

/* Heights of one row's parts at a given shrink factor. */
struct row_sizes { int compute, comm, peer, mem, gap, group_gap, fold; };

static struct row_sizes sizes_at(const struct viz_metrics *m, double s, int fold_h)
{
    struct row_sizes r;
    r.compute = imax(3, (int)lround(m->compute_h * s));
    r.comm = imax(2, (int)lround(m->comm_h * s));
    r.peer = imax(2, (int)lround(m->comm_h * s));
    r.mem = imax(2, (int)lround(m->mem_h * s));
    r.gap = imax(1, (int)lround(m->row_gap * s));
    r.group_gap = imax(1, (int)lround(m->group_gap * s));
    r.fold = fold_h;
    return r;
}

/* Peers that only communicate (a DP all-reduce lane) are drawn inside
 * their stage's row while it is folded. */
static bool comm_only(const struct timeline *tl, int row)
{
    return tl->rows[row].lane[TL_COMPUTE].n == 0 && tl->rows[row].lane[TL_COMM].n > 0;
}

static struct viz_row *push_row(struct viz_geom *g)
{
    MP_GROW(g->rows, g->cap_rows, g->n_rows + 1);
    struct viz_row *r = &g->rows[g->n_rows++];
    memset(r, 0, sizeof *r);
    return r;
}

/* One row's lanes from y; returns the y below it. */
static int place_lanes(struct viz_row *r, const struct timeline *tl, struct row_sizes rs,
                       bool extras, int y)
{
    r->y = y;
    r->compute_y = y;
    r->compute_h = rs.compute;
    y += rs.compute;
    if (extras && tl->has_comm && tl->rows[r->row].lane[TL_COMM].n) {
        r->comm_y = y;
        r->comm_h = rs.comm;
        y += rs.comm;
    }
    if (extras && r->n_peer) {
        r->peer_h = rs.peer;
        for (int i = 0; i < r->n_peer; i++) { r->peer_y[i] = y; y += rs.peer; }
    } else {
        r->n_peer = 0;
    }
    if (extras && tl->has_mem && tl->rows[r->row].mem_count) {
        r->mem_y = y + 1;
        r->mem_h = rs.mem;
        y += rs.mem + 1;
    }
    r->h = y - r->y;
    return y;
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
        g->panel[p].header_y = y;
        y += g->panel[p].header_h;
        g->panel[p].top = y;
        int last_stage = INT32_MIN;
        bool first = true;
        for (int i = 0; i < tl->n_rows; i++) {
            int row = tl->order[i];
            if (tl->rows[row].serves >= 0) continue;   /* drawn with its stage */
            int stage = tl->rows[row].stage;
            bool open = sc->unfold[p] && sc->unfold[p][row];
            struct viz_row *r = push_row(g);
            r->panel = p;
            r->row = row;
            r->group_start = !first && stage != last_stage;
            if (r->group_start) y += rs.group_gap - rs.gap;
            first = false;
            last_stage = stage;
            /* Its peers follow it in tl->order. */
            int n_peers = 0;
            for (int j = i + 1; j < tl->n_rows && tl->rows[tl->order[j]].serves == row; j++) {
                n_peers++;
                if (!open && comm_only(tl, tl->order[j]) && r->n_peer < VIZ_MAX_PEER_LANES)
                    r->peer_row[r->n_peer++] = tl->order[j];
            }
            y = place_lanes(r, tl, rs, extras, y) + rs.gap;
            if (!open) continue;
            for (int j = i + 1; j < i + 1 + n_peers; j++) {
                struct viz_row *pr = push_row(g);
                pr->panel = p;
                pr->row = tl->order[j];
                pr->peer = true;
                y = place_lanes(pr, tl, rs, extras, y) + rs.gap;
            }
        }
        if (tl->n_rows == 0) y += 2 * rs.fold; /* room for "no ops in this timeline" */
        g->panel[p].bottom = y;
        y += rs.group_gap;
    }
    return y;
}

/* The bytes at the top of every memory strip: one scale for every panel, so
 * strips compare by eye across compared runs. A capacity far above every
 * peak would squash the strips to a line (a 4 GB stash on an 80 GB chip),
 * so the scale is the largest peak, rounded up, and the capacity joins it
 * (with its dotted line) only when some peak comes within 4/5 of it or
 * passes it; the gutter always says peak / capacity. */
static double scene_mem_scale(const struct viz_scene *sc)
{
    double top = 0;
    for (int p = 0; p < sc->n; p++) {
        const struct timeline *tl = sc->tl[p];
        for (int r = 0; r < tl->n_rows; r++) {
            double peak = (double)tl->rows[r].peak_mem, cap = (double)tl->rows[r].capacity;
            double want = cap > 0 && peak >= 0.8 * cap ? (cap > peak ? cap : peak) : peak;
            if (want > top) top = want;
        }
    }
    return top > 0 ? viz_nice_bytes(top) : 0;
}

void viz_layout_geom(struct viz_geom *g, const struct viz_scene *sc, const struct viz_view *v)
{
    const struct viz_font *font = sc->font;
    g->m = viz_metrics_for(v, font ? font->height : 0);
    const struct viz_metrics *m = &g->m;
    g->plot_x0 = m->label_w;
    g->plot_x1 = imax(g->plot_x0 + 1, v->width - m->gutter_w);
    g->rows_y0 = m->axis_h;
    g->rows_y1 = imax(g->rows_y0 + 1, v->height - m->status_h);
    g->n_panels = sc->n;
    g->mem_scale = scene_mem_scale(sc);
    int headers = 0;
    for (int p = 0; p < sc->n; p++) {
        g->panel[p].header_h = viz_header_lines(sc, p, v->width, m) * m->line_h;
        headers += g->panel[p].header_h + m->group_gap;
    }
    int fold_h = (font ? font->height : 12) + imax(2, m->pad / 2);
    int avail = g->rows_y1 - g->rows_y0;
    int full = place_rows(g, sc, sizes_at(m, 1.0, fold_h), true);
    int fixed = headers;
    double s = 1.0;
    if (full < avail && full > fixed) {
        /* Few rows: grow the lanes (up to three times) rather than leave
         * half the window empty; a taller memory strip shows its shape.
         * Rounding may overshoot, so step down until it fits. */
        s = (double)(avail - fixed) / (double)(full - fixed);
        if (s > 3.0) s = 3.0;
        for (full = place_rows(g, sc, sizes_at(m, s, fold_h), true); full > avail && s > 1.0;
             full = place_rows(g, sc, sizes_at(m, s, fold_h), true))
            s = s - 0.05 > 1.0 ? s - 0.05 : 1.0;
    }
    /* Shrink the lanes (not the headers) to fit; rounding and the minimum
     * sizes may overshoot, so retry a few times; scroll what still won't. */
    bool extras = true;
    for (int tries = 0; full > avail && full > fixed && tries < 4 && s > 0.05; tries++) {
        s *= (double)imax(1, avail - fixed) / (double)(full - fixed);
        if (s < 0.05) s = 0.05;
        full = place_rows(g, sc, sizes_at(m, s, fold_h), extras);
        /* Compute lanes thinner than 10 px next to 2-px comm lanes and
         * memory strips show nothing well: drop the extras, keep the
         * compute lanes as tall as the window allows. */
        if (extras && g->n_rows && g->rows[0].compute_h < 10 &&
            (g->rows[0].comm_h || g->rows[0].mem_h || g->rows[0].n_peer)) {
            extras = false;
            s = 1.0;
            tries = -1;
            full = place_rows(g, sc, sizes_at(m, s, fold_h), extras);
        }
    }
    g->content_h = full;
    int dy = g->rows_y0 - (int)lround(v->scroll_y);
    for (int i = 0; i < g->n_rows; i++) {
        struct viz_row *r = &g->rows[i];
        r->y += dy;
        r->compute_y += dy;
        if (r->comm_h) r->comm_y += dy;
        for (int k = 0; k < r->n_peer; k++) r->peer_y[k] += dy;
        if (r->mem_h) r->mem_y += dy;
    }
    /* Sticky headers: a panel's header stays at the top of the rows area
     * while its rows scroll under it, and the next panel's pushes it off. */
    for (int p = 0; p < sc->n; p++) {
        struct viz_panel_geom *pg = &g->panel[p];
        pg->header_y += dy;
        pg->top += dy;
        pg->bottom += dy;
        if (pg->header_y < g->rows_y0 && pg->bottom > g->rows_y0) {
            int y = g->rows_y0;
            if (y + pg->header_h > pg->bottom) y = pg->bottom - pg->header_h;
            pg->header_y = y;
        }
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
    /* The CLI's units: GB = 10^9 bytes (report.c fmt_bytes). */
    static const char *const units[] = { "B", "KB", "MB", "GB", "TB", "PB" };
    int u = 0;
    while (fabs(bytes) >= 999.5 && u < 5) { bytes /= 1000; u++; }
    snprintf(buf, size, "%.3g %s", bytes, units[u]);
}

double viz_nice_bytes(double bytes)
{
    static const double steps[] = { 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10 };
    if (!(bytes > 0)) return 0;
    double p = pow(10, floor(log10(bytes)));
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * p >= bytes * (1 - 1e-12)) return steps[i] * p;
    return 10 * p;
}

bool viz_span_columns(const struct viz_geom *g, const struct viz_view *v, mp_time start,
                      mp_time end, int *x0, int *x1)
{
    double a = floor(viz_x_of(g, v, (double)start));
    double b = floor(viz_x_of(g, v, (double)end));
    if (!(b > a)) return false;
    /* Clamp far off-screen boxes so the ints stay sane when zoomed far in. */
    *x0 = (int)fmax(a, g->plot_x0 - 2.0);
    *x1 = (int)fmin(b, g->plot_x1 + 2.0);
    return *x1 > *x0;
}

/* ---- hit testing ---- */

/* The op of a lane nearest to t within two pixels (so a sub-pixel op can
 * still be picked), before the replay cursor; false if none. */
static bool lane_hit(const struct tl_lane *lane, const struct viz_view *v, double t, size_t *out)
{
    double tol = 2 * v->ps_per_px, best = INFINITY;
    size_t i0 = timeline_lane_seek(lane, (mp_time)floor(t - tol));
    bool found = false;
    for (size_t k = i0; k < lane->n; k++) {
        double s = (double)lane->start[k], e = (double)lane->end[k];
        if (s > t + tol) break;
        if (s >= v->cursor || e < t - tol) continue;
        double d = t < s ? s - t : t > e ? t - e : 0;
        if (d < best) {
            best = d;
            *out = k;
            found = true;
            if (d == 0) break;
        }
    }
    return found;
}

struct viz_hit viz_layout_hit(const struct viz_geom *g, const struct viz_scene *sc,
                              const struct viz_view *v, int x, int y)
{
    struct viz_hit h = { .ok = false };
    if (y < g->rows_y0 || y >= g->rows_y1) return h;
    /* Nothing under a (sticky) header counts as a row. */
    for (int p = 0; p < g->n_panels; p++)
        if (y >= g->panel[p].header_y && y < g->panel[p].header_y + g->panel[p].header_h) return h;
    for (int i = 0; i < g->n_rows; i++) {
        const struct viz_row *r = &g->rows[i];
        if (y < r->y || y >= r->y + r->h) continue;
        const struct timeline *tl = sc->tl[r->panel];
        h.panel = r->panel;
        h.row = r->row;
        /* The label of a stage that stands for more chips: a click folds. */
        if (x < g->plot_x0 && !r->peer && viz_fold_label(tl, r->row, false, NULL, 0)) {
            h.kind = VIZ_HIT_FOLD;
            h.ok = true;
            return h;
        }
        if (x < g->plot_x0 || x >= g->plot_x1) return h;
        h.t = viz_t_of(g, v, x + 0.5);
        int stream = -1, row = r->row;
        if (y >= r->compute_y && y < r->compute_y + r->compute_h) stream = TL_COMPUTE;
        else if (r->comm_h && y >= r->comm_y && y < r->comm_y + r->comm_h) stream = TL_COMM;
        for (int k = 0; k < r->n_peer && stream < 0; k++)
            if (y >= r->peer_y[k] && y < r->peer_y[k] + r->peer_h) stream = TL_COMM, row = r->peer_row[k];
        if (stream < 0) {
            if (r->mem_h && y >= r->mem_y && y < r->mem_y + r->mem_h && tl->rows[row].mem_count &&
                h.t < v->cursor) {
                h.kind = VIZ_HIT_MEM;
                h.ok = true;
            }
            return h;
        }
        h.row = row;
        h.stream = stream;
        if (lane_hit(timeline_lane(tl, row, stream), v, h.t, &h.op)) {
            h.kind = VIZ_HIT_OP;
            h.ok = true;
        } else if (stream == TL_COMPUTE && h.t < v->cursor &&
                   timeline_wait_at(tl, row, (mp_time)floor(h.t)).idle) {
            h.kind = VIZ_HIT_IDLE;
            h.ok = true;
        }
        return h;
    }
    return h;
}

bool viz_lane_y(const struct viz_geom *g, int panel, int row, int stream, int *y, int *h)
{
    for (int i = 0; i < g->n_rows; i++) {
        const struct viz_row *r = &g->rows[i];
        if (r->panel != panel) continue;
        if (r->row == row) {
            if (stream == TL_COMPUTE) { *y = r->compute_y; *h = r->compute_h; }
            else { *y = r->comm_y; *h = r->comm_h; }
            return *h > 0;
        }
        for (int k = 0; k < r->n_peer; k++)
            if (r->peer_row[k] == row && stream == TL_COMM) {
                *y = r->peer_y[k];
                *h = r->peer_h;
                return true;
            }
    }
    return false;
}
