/* layout_impl.h — what layout.c, layout_text.c and layout_draw.c share; not
 * part of the viewer's API (layout.h is). */
#ifndef MPSIM_VIZ_LAYOUT_IMPL_H
#define MPSIM_VIZ_LAYOUT_IMPL_H

#include "layout.h"

/* A panel header is a flow of items, wrapped onto lines: texts (the run's
 * figures) and colour-key entries (a swatch and a name). */
enum viz_swatch {
    VIZ_SW_NONE, VIZ_SW_RECT, VIZ_SW_HATCH, VIZ_SW_CHUNKS, VIZ_SW_FB, VIZ_SW_DOWN, VIZ_SW_UP,
    VIZ_SW_HEAT,
};
struct viz_hitem {
    char text[200];
    enum viz_swatch sw;
    viz_color c1, c2;
    bool strong;               /* the run's name: darker text */
    /* Placed by viz_header_flow: */
    int x, line, w;            /* w: the text's width, cut to the line */
};
#define VIZ_HEADER_ITEMS 48
#define VIZ_HEADER_MAX_LINES 4

/* The items of panel p's header; `heat_max` > 0 adds the heat map's key
 * (busy share at its darkest). Returns how many. */
int viz_header_items(const struct viz_scene *sc, int p, double heat_max, struct viz_hitem *items,
                     int cap);
/* Place items left to right in `width`, wrapping; an item wider than a line
 * is cut with "…"; past VIZ_HEADER_MAX_LINES the rest is dropped. Returns
 * the lines used (at least 1). */
int viz_header_flow(const struct viz_font *font, const struct viz_metrics *m, int width,
                    struct viz_hitem *items, int n);
/* Lines of panel p's header at this width (geometry). */
int viz_header_lines(const struct viz_scene *sc, int p, int width, const struct viz_metrics *m);
/* Width of an item's swatch (0 for none). */
int viz_swatch_w(const struct viz_metrics *m, enum viz_swatch sw);

/* Whether a timeline is a serving run (meta mode=serving). */
bool viz_is_serving(const struct timeline *tl);

#endif
