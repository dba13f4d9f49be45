/* draw.h — the viewer's draw commands, and a rasteriser that turns them into
 * pixels without SDL.
 *
 * The layout (layout.c) turns a timeline and a view into a list of commands;
 * this file paints them into a plain 32-bit pixel buffer. The SDL file only
 * shows that buffer (or saves it as PNG) and supplies glyphs, so the
 * screenshot, the interactive window and the Check pixel tests all come from
 * the same pixels (rxi/lite's rencache, microui's command list). */
#ifndef MPSIM_VIZ_DRAW_H
#define MPSIM_VIZ_DRAW_H

#include <stddef.h>
#include <stdint.h>

/* Colours are 0xAARRGGBB; alpha below 0xFF blends over what is there. */
typedef uint32_t viz_color;

/* The palette: the field's colours for op kinds (forward blue, input-gradient
 * backward teal, weight-gradient green, fused backward orange, collectives by
 * kind), and the tint that marks a bubble. Tests compare pixels to these. */
enum {
    VIZ_BG = 0xFFFFFFFFu,          /* window */
    VIZ_LANE = 0xFFF4F4F4u,        /* a lane outside the step */
    VIZ_BUBBLE = 0xFFF8D7D7u,      /* idle compute inside the step, waiting for another stage ... */
    VIZ_BUBBLE_HATCH = 0xFFEBB4B4u,/* ... with diagonal stripes of this */
    VIZ_COMMWAIT = 0xFFDCE6F2u,    /* idle compute waiting for its own communication ... */
    VIZ_COMMWAIT_HATCH = 0xFFA9BED8u, /* ... striped in this */
    VIZ_HEAT_IDLE = 0xFFF7FBFFu,   /* heat map: no work (ColorBrewer Blues, light end) */
    VIZ_COMM_LANE = 0xFFEEF1F4u,   /* communication lane background */
    VIZ_MEM_LANE = 0xFFF6F6FAu,
    VIZ_MEM_FILL = 0xFF9FA8DAu,    /* memory in use */
    VIZ_MEM_OVER = 0xFFC62828u,    /* memory above capacity */
    VIZ_CAPACITY = 0xFFC62828u,    /* the capacity line */
    VIZ_TEXT = 0xFF202020u,
    VIZ_TEXT_DIM = 0xFF707070u,
    VIZ_TEXT_ON_OP = 0xFFFFFFFFu,
    VIZ_GRID = 0xFFE2E2E2u,
    VIZ_AXIS_BG = 0xFFFAFAFAu,
    VIZ_SEPARATOR = 0xFFB0B0B0u,
    VIZ_CURSOR = 0xFF111111u,
    VIZ_UTIL_BG = 0xFFE6E6E6u,
    VIZ_UTIL_FILL = 0xFF5E8C31u,
    VIZ_TOOLTIP_BG = 0xFFFFFDE7u,
    VIZ_TOOLTIP_BORDER = 0xFF9E9E9Eu,
    VIZ_HELP_BG = 0xF0FFFFFFu,
    VIZ_UNKNOWN_OP = 0xFFA0A0A0u,
    VIZ_FOLD_BG = 0xFFF2F4F7u,     /* the line of a folded group of peers */
    VIZ_MEM_GRID = 0xFFDADCE8u,    /* memory strip: half-scale line */
};

/* An op's colour for a chunk: the kind's hue, darker for later chunks
 * (chunk 0 is the kind colour; the last of n_chunks is 62% of it), so chip
 * 0 of an interleaved run reads "0 1 2 3" light, then dark, as the papers
 * shade them. */
viz_color viz_chunk_color(viz_color kind_color, int chunk, int n_chunks);
/* The heat map's colour for a busy share in [0, 1] (ColorBrewer Blues). */
viz_color viz_heat_color(double share);

/* The colour of an op kind (enum tl_kind; anything past the known ones grey). */
viz_color viz_kind_color(unsigned kind);

enum viz_cmd_type {
    VIZ_CMD_RECT,   /* fill x,y,w,h with color (blended if alpha < 0xFF) */
    VIZ_CMD_HATCH,  /* fill with color, diagonal stripes of color2 every h2 px */
    VIZ_CMD_TEXT,   /* text at x,y (top-left), cut at w px when w > 0 */
    VIZ_CMD_CLIP,   /* later commands draw only inside x,y,w,h; w < 0: no clip */
};

struct viz_cmd {
    uint8_t type;
    uint8_t font;    /* text: 0 the proportional font, 1 the monospace one */
    int32_t x, y, w, h;
    viz_color color, color2;
    uint32_t text;   /* offset into viz_draw_list.text */
};

struct viz_draw_list {
    struct viz_cmd *cmds; size_t n, cap;
    char *text;           size_t n_text, cap_text;
};

void viz_draw_init(struct viz_draw_list *dl);
void viz_draw_release(struct viz_draw_list *dl);
/* Empty the list, keeping its memory for the next frame. */
void viz_draw_clear(struct viz_draw_list *dl);
void viz_draw_rect(struct viz_draw_list *dl, int x, int y, int w, int h, viz_color c);
void viz_draw_hatch(struct viz_draw_list *dl, int x, int y, int w, int h, viz_color c,
                    viz_color stripe);
void viz_draw_text(struct viz_draw_list *dl, int x, int y, int max_w, viz_color c, const char *s);
/* The same in the monospace font (tables: the help). */
void viz_draw_text_mono(struct viz_draw_list *dl, int x, int y, int max_w, viz_color c,
                        const char *s);
void viz_draw_clip(struct viz_draw_list *dl, int x, int y, int w, int h);
void viz_draw_noclip(struct viz_draw_list *dl);

/* Glyphs come from outside (SDL_ttf in render_sdl.c, a stub in tests). A
 * glyph's bitmap is `w`×`h` coverage bytes placed with its top-left at the
 * pen position (top of the line); `alpha` may be NULL (nothing to paint). */
struct viz_glyph {
    int w, h, advance;
    const uint8_t *alpha;
};

struct viz_font {
    void *ctx;
    int height;  /* line height in px */
    const struct viz_glyph *(*glyph)(void *ctx, uint32_t codepoint);
    const struct viz_font *mono; /* the monospace companion, or NULL (then this one) */
};

/* Width in pixels of `s` in `font` (0 when font is NULL). */
int viz_text_width(const struct viz_font *font, const char *s);
/* The longest prefix of `s` that fits `max_w` px, with "…" when cut, into
 * buf; returns its width. */
int viz_text_fit(const struct viz_font *font, const char *s, int max_w, char *buf, size_t size);

/* Where text was drawn: the box each text command covers on screen (its
 * width cut at max_w and at the clip then in force, its height the font's),
 * for the tests that no two labels overlap. Empty boxes are left out.
 * Returns how many boxes there are (writes at most `cap`). */
struct viz_box { int x, y, w, h; uint32_t text; };
size_t viz_draw_text_boxes(const struct viz_draw_list *dl, const struct viz_font *font,
                           struct viz_box *out, size_t cap);

/* A pixel buffer: `pitch` is in pixels. */
struct viz_canvas {
    uint32_t *px;
    int w, h, pitch;
};

/* Paint every command into the canvas (which it does not clear: the layout's
 * first command fills the background). `font` may be NULL: text is skipped. */
void viz_raster(const struct viz_draw_list *dl, struct viz_canvas *cv, const struct viz_font *font);

#endif
