/* layout.h — from timelines and a view to draw commands: where every chip's
 * row sits, which pixels an op covers, what lies under the pointer.
 *
 * Screen, top to bottom: the time axis (shared by every panel), then for each
 * timeline a header line and one row per chip, then a status line. A row has
 * a compute lane, a communication lane (when the run has transfers) and a
 * memory strip (when it has memory rows); a label column sits left of the
 * time area and a gutter with utilization and peak memory to its right.
 * `--compare` stacks more timelines as more panels on the same time axis.
 *
 * Time maps to x linearly: x = plot_x0 + (t − view.t0) / view.ps_per_px. A
 * box spans pixel columns floor(x(start)) .. floor(x(end)) − 1; ops narrower
 * than a pixel are pooled per column and drawn as one column in the colour of
 * the kind that covers most of it, shaded by how much of it is busy, so a
 * million ops cost at most one rectangle per column per lane. */
#ifndef MPSIM_VIZ_LAYOUT_H
#define MPSIM_VIZ_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "draw.h"
#include "timeline.h"

#define VIZ_MAX_PANELS 4

/* Fixed sizes in pixels; lanes shrink (down to a few px) when rows would not
 * fit the window, and the rows area scrolls beyond that. */
enum {
    VIZ_AXIS_H = 30, VIZ_STATUS_H = 20, VIZ_HEADER_H = 22,
    VIZ_LABEL_W = 112, VIZ_GUTTER_W = 132,
    VIZ_COMPUTE_H = 22, VIZ_COMM_H = 10, VIZ_MEM_H = 16, VIZ_ROW_GAP = 4, VIZ_GROUP_GAP = 8,
};

/* What part of the timeline is on screen. */
struct viz_view {
    int width, height;   /* window, px */
    double t0;           /* picoseconds at the left edge of the time area */
    double ps_per_px;    /* zoom: picoseconds per pixel, > 0 */
    double cursor;       /* replay: only what happened before it is drawn (ps); INFINITY = all */
    double scroll_y;     /* rows scrolled up by this many px */
};

/* One chip's row on screen (y after scrolling); a lane with h = 0 is absent. */
struct viz_row {
    int panel, chip;
    int y, h;                   /* the whole row */
    int compute_y, compute_h;
    int comm_y, comm_h;
    int mem_y, mem_h;
    bool group_start;           /* first row of a new stage */
};

struct viz_geom {
    int plot_x0, plot_x1;       /* the time area, [x0, x1) */
    int rows_y0, rows_y1;       /* the visible rows area, [y0, y1) */
    int content_h;              /* every panel, unscrolled */
    int n_panels;
    int header_y[VIZ_MAX_PANELS];
    struct viz_row *rows; int n_rows, cap_rows;
};

/* The timelines on screen: 1 normally, more with --compare. */
struct viz_scene {
    const struct timeline *tl[VIZ_MAX_PANELS];
    int n;
};

void viz_geom_init(struct viz_geom *g);
void viz_geom_release(struct viz_geom *g);

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
/* Bytes in binary units: "10 GiB", "512 MiB". */
void viz_format_bytes(double bytes, char *buf, size_t size);

/* The bytes a chip's memory strip spans, top to bottom: the panel's
 * largest peak, or the capacity when some peak comes near it (layout_draw.c). */
double viz_mem_scale(const struct timeline *tl, int chip);

/* What is under a point. */
struct viz_hit {
    bool ok;
    int panel, chip, stream;
    size_t op;                  /* index into scene->tl[panel]->ops */
};
struct viz_hit viz_layout_hit(const struct viz_geom *g, const struct viz_scene *sc,
                              const struct viz_view *v, int x, int y);

/* The pixel columns [*x0, *x1) an op's box covers at this view (before the
 * cursor cuts it); false when it is narrower than one column. */
bool viz_op_columns(const struct viz_geom *g, const struct viz_view *v, const struct tl_op *op,
                    int *x0, int *x1);

/* Append the whole scene: background, axis, headers, rows, cursor. `font`
 * may be NULL (no text: the pixel tests). */
void viz_layout_draw(struct viz_draw_list *dl, const struct viz_geom *g, const struct viz_scene *sc,
                     const struct viz_view *v, const struct viz_font *font);

/* Overlays, drawn after the scene. */
void viz_layout_status(struct viz_draw_list *dl, const struct viz_view *v,
                       const struct viz_font *font, const char *left, const char *right);
/* A box of text lines near (x, y), kept inside the window. */
void viz_layout_tooltip(struct viz_draw_list *dl, const struct viz_view *v,
                        const struct viz_font *font, int x, int y, const char *const *lines, int n);
/* The detail lines of an op for the tooltip; returns how many (<= 6), each
 * written into lines[i] of `cap` bytes. */
int viz_op_details(const struct timeline *tl, const struct tl_op *op, char lines[][96], int cap);

#endif
