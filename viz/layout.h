/* layout.h — from timelines and a view to draw commands: where every row
 * sits, which pixels an op covers, what lies under the pointer.
 *
 * Screen, top to bottom: the time axis (shared by every panel), then for each
 * timeline a header (its figures and colour key, wrapped onto as many lines
 * as the width needs; it sticks to the top while its rows scroll under it)
 * and its rows, then a status line. `--compare` stacks more timelines as
 * more panels on the same time axis, and one memory scale serves them all.
 *
 * Rows: one per pipeline stage. A row has a compute lane, a communication
 * lane (when the run has transfers), the lanes of peers that only
 * communicate (a DP all-reduce lane belongs to the stage it serves) and a
 * memory strip (when it has memory rows); a label column sits left of the
 * time area and a gutter with utilization and peak memory to its right.
 * When a stage stands for more chips than it shows (TP and DP peers,
 * simulated once) or has peers with work of their own (EP ranks), its label
 * says how many ("▸ 64 chips"); hovering the label says what runs there,
 * clicking it shows the peers' rows under it.
 *
 * Time maps to x linearly: x = plot_x0 + (t − view.t0) / view.ps_per_px. A
 * box spans pixel columns floor(x(start)) .. floor(x(end)) − 1; ops narrower
 * than a pixel are pooled per column and drawn as one column in the colour of
 * the kind that covers most of it, shaded by how much of it is busy, so a
 * million ops cost at most one rectangle per column per lane. Serving runs
 * of many rows seen whole draw as a heat map of busy share instead.
 *
 * Every size scales with view.scale (--scale, or the display's HiDPI
 * factor); the font is opened at 12 px × scale. */
#ifndef MPSIM_VIZ_LAYOUT_H
#define MPSIM_VIZ_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "draw.h"
#include "timeline.h"

#define VIZ_MAX_PANELS 4
#define VIZ_MAX_PEER_LANES 4

/* Sizes in pixels at scale 1; lanes shrink (down to a few px) when rows
 * would not fit the window, and the rows area scrolls beyond that. */
enum {
    VIZ_AXIS_H = 30, VIZ_STATUS_H = 20, VIZ_HEADER_H = 22,
    VIZ_LABEL_W = 112, VIZ_GUTTER_W = 132,
    VIZ_COMPUTE_H = 22, VIZ_COMM_H = 10, VIZ_MEM_H = 16, VIZ_ROW_GAP = 4, VIZ_GROUP_GAP = 8,
    VIZ_FONT_PX = 12,
    VIZ_MIN_W = 320, VIZ_MIN_H = 200,   /* the smallest window */
};

/* What part of the timeline is on screen. */
struct viz_view {
    int width, height;   /* window, px */
    double scale;        /* sizes × this (0 reads as 1) */
    double t0;           /* picoseconds at the left edge of the time area */
    double ps_per_px;    /* zoom: picoseconds per pixel, > 0 */
    double cursor;       /* replay: only what happened before it is drawn (ps); INFINITY = all */
    double scroll_y;     /* rows scrolled up by this many px */
    bool no_heatmap;     /* draw serving runs by kind even when seen whole */
};

/* Sizes at the view's scale (viz_layout_geom fills them). */
struct viz_metrics {
    int axis_h, status_h, line_h, label_w, gutter_w;
    int compute_h, comm_h, mem_h, row_gap, group_gap, pad;
};

/* One row on screen (y after scrolling); a lane with h = 0 is absent. */
struct viz_row {
    int panel, row;             /* the timeline's row (tl->rows[row]) */
    int y, h;                   /* the whole row */
    int compute_y, compute_h;
    int comm_y, comm_h;
    int n_peer;                 /* comm-only peers drawn inside this row */
    int peer_row[VIZ_MAX_PEER_LANES], peer_y[VIZ_MAX_PEER_LANES], peer_h;
    int mem_y, mem_h;
    bool group_start;           /* first row of a new stage */
    bool peer;                  /* a peer's row, shown unfolded under its stage */
};

struct viz_panel_geom {
    int header_y, header_h;     /* where the header sits (after sticking) */
    int top, bottom;            /* rows of the panel, unstuck, after scrolling */
};

struct viz_geom {
    struct viz_metrics m;
    int plot_x0, plot_x1;       /* the time area, [x0, x1) */
    int rows_y0, rows_y1;       /* the visible rows area, [y0, y1) */
    int content_h;              /* every panel, unscrolled */
    int n_panels;
    struct viz_panel_geom panel[VIZ_MAX_PANELS];
    double mem_scale;           /* bytes at the top of every memory strip (all panels) */
    struct viz_row *rows; int n_rows, cap_rows;
};

/* The timelines on screen: 1 normally, more with --compare; which groups
 * of peers are unfolded (unfold[p][row], NULL: all folded). */
struct viz_scene {
    const struct timeline *tl[VIZ_MAX_PANELS];
    int n;
    const struct viz_font *font;   /* NULL: no text (sizes as with a 12 px font) */
    bool *unfold[VIZ_MAX_PANELS];
};

void viz_geom_init(struct viz_geom *g);
void viz_geom_release(struct viz_geom *g);

/* Sizes at this view's scale for a font of line height font_h (0: none). */
struct viz_metrics viz_metrics_for(const struct viz_view *v, int font_h);

/* Place every panel and row for this window size and scroll. */
void viz_layout_geom(struct viz_geom *g, const struct viz_scene *sc, const struct viz_view *v);

/* Time <-> x in the time area (doubles: exact for the test's round numbers). */
double viz_x_of(const struct viz_geom *g, const struct viz_view *v, double t);
double viz_t_of(const struct viz_geom *g, const struct viz_view *v, double x);

/* The earliest start and latest end over the scene's timelines. */
void viz_scene_span(const struct viz_scene *sc, double *t_begin, double *t_end);

/* Show [t_begin, t_end] across the time area with a small margin. */
void viz_view_fit(struct viz_view *v, const struct viz_geom *g, double t_begin, double t_end);
/* Zoom by `factor` (> 1 zooms in) keeping the time under pixel x fixed. */
void viz_view_zoom(struct viz_view *v, const struct viz_geom *g, double x, double factor);
/* Keep scroll_y within the content. */
void viz_view_clamp_scroll(struct viz_view *v, const struct viz_geom *g);

/* The tick spacing (ps) of the time axis: the smallest 1, 2 or 5 × 10^k ps
 * at least `min_px` pixels apart. */
double viz_axis_step(double ps_per_px, double min_px);
/* A time in its most readable unit: "33 ms", "1.25 us", "0". */
void viz_format_time(double ps, char *buf, size_t size);
/* Bytes in the CLI's decimal units (GB = 10^9 bytes): "8 GB", "512 MB". */
void viz_format_bytes(double bytes, char *buf, size_t size);
/* A round number of bytes at or above `bytes` (1, 1.25, 1.5, 2, 2.5, 3, 4,
 * 5, 6, 8 × 10^k): the top of the memory scale. */
double viz_nice_bytes(double bytes);

/* What is under a point. */
enum viz_hit_kind { VIZ_HIT_NONE, VIZ_HIT_OP, VIZ_HIT_IDLE, VIZ_HIT_MEM, VIZ_HIT_FOLD };
struct viz_hit {
    bool ok;                    /* kind != VIZ_HIT_NONE */
    enum viz_hit_kind kind;
    int panel, row, stream;     /* the timeline's row */
    size_t op;                  /* VIZ_HIT_OP: index in the lane */
    double t;                   /* the time under the point */
};
struct viz_hit viz_layout_hit(const struct viz_geom *g, const struct viz_scene *sc,
                              const struct viz_view *v, int x, int y);

/* Where a timeline row's lane is on screen (a peer's comm lane may sit in
 * its stage's row); false when it is not laid out. */
bool viz_lane_y(const struct viz_geom *g, int panel, int row, int stream, int *y, int *h);

/* What a hover points at, outlined: the op's box, or the idle stretch with
 * a line to the op whose end let the next op start (layout_text.c). */
void viz_layout_highlight(struct viz_draw_list *dl, const struct viz_geom *g,
                          const struct viz_scene *sc, const struct viz_view *v,
                          const struct viz_hit *h);

/* The pixel columns [*x0, *x1) of [start, end) at this view (before the
 * cursor cuts it); false when it is narrower than one column. */
bool viz_span_columns(const struct viz_geom *g, const struct viz_view *v, mp_time start,
                      mp_time end, int *x0, int *x1);

/* Append the whole scene: background, axis, headers, rows, cursor. */
void viz_layout_draw(struct viz_draw_list *dl, const struct viz_geom *g, const struct viz_scene *sc,
                     const struct viz_view *v);

/* Overlays, drawn after the scene. */
void viz_layout_status(struct viz_draw_list *dl, const struct viz_geom *g,
                       const struct viz_view *v, const struct viz_font *font, const char *left,
                       const char *right);
/* A box of text lines near (x, y), kept inside the window. */
void viz_layout_tooltip(struct viz_draw_list *dl, const struct viz_view *v,
                        const struct viz_font *font, int x, int y, const char *const *lines, int n);

/* The lines of the tooltip for what a hit points at (an op's details; what
 * an idle stretch waited for and how long; memory by category at that
 * instant), each written into lines[i] of VIZ_TIP_W bytes; returns how
 * many (<= cap). Fields that mean nothing here ("stage -1", "layers" of a
 * synthetic model, a zero duration) are left out. */
#define VIZ_TIP_W 160
int viz_hit_details(const struct viz_scene *sc, const struct viz_hit *h, char lines[][VIZ_TIP_W],
                    int cap);

/* The row label of a timeline row ("stage 0", "stages 0, 7", "chip 65",
 * "slot 3") and its second line ("chip 0 · node 1", "serves stage 1"). */
void viz_row_label(const struct timeline *tl, int row, char *a, size_t na, char *b, size_t nb);
/* What a stage's group of chips is: how many chips it stands for and what
 * runs on its peers ("▸ 64 chips: tp 8 × dp 8, identical (simulated once);
 * DP all-reduce lane above: chip 1"), the tooltip of its label; and the
 * label's short form ("▸ 64 chips"). False when the stage stands for itself
 * alone. `buf` may be NULL (just the question). */
bool viz_fold_label(const struct timeline *tl, int row, bool unfolded, char *buf, size_t size);
bool viz_fold_short(const struct timeline *tl, int row, bool unfolded, char *buf, size_t size);
/* "showing 16 of 1,024 chips: TP and DP peers identical", or false when every
 * chip of the run has its row. */
bool viz_count_line(const struct timeline *tl, char *buf, size_t size);

#endif
