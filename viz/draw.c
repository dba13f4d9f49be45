/* draw.c — the command list and a small software rasteriser (rectangles,
 * hatching, alpha-blended glyphs). Only axis-aligned shapes: a timeline is
 * boxes, and boxes rasterise fast enough to repaint a full HD frame from
 * scratch every frame, so there is no dirty-rectangle cache to get wrong. */
#include "draw.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/common.h"
#include "timeline.h"

viz_color viz_kind_color(unsigned kind)
{
    static const viz_color colors[TL_KIND_CUSTOM] = {
        [TL_KIND_F] = 0xFF3B78D8u,              /* blue */
        [TL_KIND_B] = 0xFF14A3A3u,              /* teal */
        [TL_KIND_W] = 0xFF43A047u,              /* green */
        [TL_KIND_BW] = 0xFFF08C21u,             /* orange */
        [TL_KIND_FB] = 0xFF8E5CC4u,             /* purple: both halves at once */
        [TL_KIND_SEND] = 0xFF607D8Bu,           /* slate */
        [TL_KIND_ALL_REDUCE] = 0xFFD64545u,     /* red */
        [TL_KIND_REDUCE_SCATTER] = 0xFFE573A8u, /* pink */
        [TL_KIND_ALL_GATHER] = 0xFFD9A21Bu,     /* gold */
        [TL_KIND_ALL_TO_ALL] = 0xFF8D6E63u,     /* brown */
        [TL_KIND_BROADCAST] = 0xFF9CA63Au,      /* olive */
        [TL_KIND_OPTIMIZER] = 0xFF37474Fu,      /* dark slate */
        /* Serving passes: prompt-heavy work dark, decode light, so the
         * shift from filling the pipeline to streaming tokens shows. */
        [TL_KIND_PREFILL] = 0xFF3949ABu,        /* indigo */
        [TL_KIND_DECODE] = 0xFF4FC3F7u,         /* light blue */
        [TL_KIND_MIXED] = 0xFF7E57C2u,          /* violet: both at once */
    };
    return kind < TL_KIND_CUSTOM ? colors[kind] : VIZ_UNKNOWN_OP;
}

viz_color viz_chunk_color(viz_color c, int chunk, int n_chunks)
{
    if (chunk <= 0 || n_chunks <= 1) return c;
    if (chunk >= n_chunks) chunk = n_chunks - 1;
    /* 100% for chunk 0 down to 62% for the last: dark enough to tell at a
     * glance, light enough that white numbers still read. */
    uint32_t f = 1000 - (uint32_t)(380 * chunk / (n_chunks - 1));
    uint32_t r = (c >> 16) & 0xFF, g = (c >> 8) & 0xFF, b = c & 0xFF;
    return (c & 0xFF000000u) | (r * f / 1000) << 16 | (g * f / 1000) << 8 | (b * f / 1000);
}

viz_color viz_heat_color(double share)
{
    /* ColorBrewer "Blues" (9 classes), interpolated: light = idle. */
    static const uint32_t stops[] = { 0xF7FBFF, 0xDEEBF7, 0xC6DBEF, 0x9ECAE1, 0x6BAED6,
                                      0x4292C6, 0x2171B5, 0x08519C, 0x08306B };
    const int n = (int)(sizeof stops / sizeof stops[0]);
    if (!(share > 0)) return 0xFF000000u | stops[0];
    if (share >= 1) return 0xFF000000u | stops[n - 1];
    double x = share * (n - 1);
    int i = (int)x;
    double t = x - i;
    uint32_t a = stops[i], b = stops[i + 1], out = 0xFF000000u;
    for (int sh = 0; sh <= 16; sh += 8) {
        double ca = (a >> sh) & 0xFF, cb = (b >> sh) & 0xFF;
        out |= (uint32_t)(ca + (cb - ca) * t + 0.5) << sh;
    }
    return out;
}

void viz_draw_init(struct viz_draw_list *dl) { memset(dl, 0, sizeof *dl); }

void viz_draw_release(struct viz_draw_list *dl)
{
    free(dl->cmds);
    free(dl->text);
    memset(dl, 0, sizeof *dl);
}

void viz_draw_clear(struct viz_draw_list *dl)
{
    dl->n = 0;
    dl->n_text = 0;
}

static struct viz_cmd *push(struct viz_draw_list *dl, int type, int x, int y, int w, int h,
                            viz_color c)
{
    MP_GROW(dl->cmds, dl->cap, dl->n + 1);
    struct viz_cmd *cmd = &dl->cmds[dl->n++];
    *cmd = (struct viz_cmd){ .type = (uint8_t)type, .x = x, .y = y, .w = w, .h = h, .color = c };
    return cmd;
}

void viz_draw_rect(struct viz_draw_list *dl, int x, int y, int w, int h, viz_color c)
{
    if (w > 0 && h > 0) push(dl, VIZ_CMD_RECT, x, y, w, h, c);
}

void viz_draw_hatch(struct viz_draw_list *dl, int x, int y, int w, int h, viz_color c,
                    viz_color stripe)
{
    if (w > 0 && h > 0) push(dl, VIZ_CMD_HATCH, x, y, w, h, c)->color2 = stripe;
}

static void text_cmd(struct viz_draw_list *dl, int x, int y, int max_w, viz_color c, const char *s,
                     int font)
{
    size_t n = strlen(s) + 1;
    MP_GROW(dl->text, dl->cap_text, dl->n_text + n);
    memcpy(dl->text + dl->n_text, s, n);
    struct viz_cmd *cmd = push(dl, VIZ_CMD_TEXT, x, y, max_w, 0, c);
    cmd->text = (uint32_t)dl->n_text;
    cmd->font = (uint8_t)font;
    dl->n_text += n;
}

void viz_draw_text(struct viz_draw_list *dl, int x, int y, int max_w, viz_color c, const char *s)
{
    text_cmd(dl, x, y, max_w, c, s, 0);
}

void viz_draw_text_mono(struct viz_draw_list *dl, int x, int y, int max_w, viz_color c,
                        const char *s)
{
    text_cmd(dl, x, y, max_w, c, s, 1);
}

void viz_draw_clip(struct viz_draw_list *dl, int x, int y, int w, int h)
{
    push(dl, VIZ_CMD_CLIP, x, y, w, h, 0);
}

void viz_draw_noclip(struct viz_draw_list *dl) { push(dl, VIZ_CMD_CLIP, 0, 0, -1, -1, 0); }

/* Decode one UTF-8 code point and advance *s ('?' for a broken byte). */
static uint32_t viz_utf8_next(const char **s)
{
    const unsigned char *p = (const unsigned char *)*s;
    uint32_t c = p[0];
    int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
    if (n < 0) { *s += 1; return '?'; }
    if (n > 0) c &= 0x3Fu >> n;
    for (int i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) { *s += i; return '?'; }
        c = (c << 6) | (p[i] & 0x3F);
    }
    *s += n + 1;
    return c;
}

int viz_text_width(const struct viz_font *font, const char *s)
{
    if (!font) return 0;
    int w = 0;
    while (*s) {
        const struct viz_glyph *g = font->glyph(font->ctx, viz_utf8_next(&s));
        if (g) w += g->advance;
    }
    return w;
}

int viz_text_fit(const struct viz_font *font, const char *s, int max_w, char *buf, size_t size)
{
    int w = viz_text_width(font, s);
    if (!font || w <= max_w) {
        snprintf(buf, size, "%s", s);
        return w;
    }
    static const char ell[] = "\xE2\x80\xA6"; /* … */
    int ew = viz_text_width(font, ell), acc = 0;
    size_t keep = 0;
    const char *p = s;
    while (*p) {
        const char *q = p;
        const struct viz_glyph *g = font->glyph(font->ctx, viz_utf8_next(&q));
        int adv = g ? g->advance : 0;
        if (acc + adv + ew > max_w || (size_t)(q - s) + sizeof ell > size) break;
        acc += adv;
        p = q;
        keep = (size_t)(p - s);
    }
    if (keep == 0 && ew > max_w) {
        if (size) buf[0] = '\0';
        return 0;
    }
    memcpy(buf, s, keep);
    memcpy(buf + keep, ell, sizeof ell);
    return acc + ew;
}

/* ---- rasteriser ---- */

struct clip { int x0, y0, x1, y1; };

/* Intersect a rectangle with the clip; false when nothing is left. */
static bool clip_rect(const struct clip *cl, int *x0, int *y0, int *x1, int *y1)
{
    if (*x0 < cl->x0) *x0 = cl->x0;
    if (*y0 < cl->y0) *y0 = cl->y0;
    if (*x1 > cl->x1) *x1 = cl->x1;
    if (*y1 > cl->y1) *y1 = cl->y1;
    return *x0 < *x1 && *y0 < *y1;
}

static inline uint32_t blend(uint32_t dst, uint32_t src, unsigned a)
{
    /* Red and blue in one multiply, green in another; a is 1..256. */
    uint32_t rb = ((src & 0xFF00FFu) * a + (dst & 0xFF00FFu) * (256 - a)) >> 8;
    uint32_t g = ((src & 0x00FF00u) * a + (dst & 0x00FF00u) * (256 - a)) >> 8;
    return 0xFF000000u | (rb & 0xFF00FFu) | (g & 0x00FF00u);
}

static void fill(struct viz_canvas *cv, const struct clip *cl, const struct viz_cmd *c)
{
    int x0 = c->x, y0 = c->y, x1 = c->x + c->w, y1 = c->y + c->h;
    if (!clip_rect(cl, &x0, &y0, &x1, &y1)) return;
    unsigned a = c->color >> 24;
    for (int y = y0; y < y1; y++) {
        uint32_t *row = cv->px + (size_t)y * (size_t)cv->pitch;
        if (a == 0xFF) {
            for (int x = x0; x < x1; x++) row[x] = c->color;
        } else if (a) {
            for (int x = x0; x < x1; x++) row[x] = blend(row[x], c->color, a + 1);
        }
    }
}

static void hatch(struct viz_canvas *cv, const struct clip *cl, const struct viz_cmd *c)
{
    /* Stripes run up-right, 2 px wide every 8 px, anchored to the screen so
     * neighbouring hatched boxes line up. */
    int x0 = c->x, y0 = c->y, x1 = c->x + c->w, y1 = c->y + c->h;
    if (!clip_rect(cl, &x0, &y0, &x1, &y1)) return;
    for (int y = y0; y < y1; y++) {
        uint32_t *row = cv->px + (size_t)y * (size_t)cv->pitch;
        /* Fill, then set the stripe pixels ((x + y) mod 8 < 2) by stepping
         * 8 at a time: bubbles cover much of a frame, so no per-pixel test. */
        for (int x = x0; x < x1; x++) row[x] = c->color;
        int first = x0 + ((8 - ((x0 + y) & 7)) & 7); /* first x with (x + y) mod 8 == 0 */
        if (first - 7 == x0) row[x0] = c->color2; /* the 2nd px of a stripe cut at x0 */
        for (int x = first; x < x1; x += 8) {
            row[x] = c->color2;
            if (x + 1 < x1) row[x + 1] = c->color2;
        }
    }
}

static void text(struct viz_canvas *cv, const struct clip *cl, const struct viz_cmd *c,
                 const char *s, const struct viz_font *font)
{
    struct clip tc = *cl;
    if (c->w > 0 && c->x + c->w < tc.x1) tc.x1 = c->x + c->w;
    int pen = c->x;
    uint32_t opaque = c->color | 0xFF000000u;
    while (*s && pen < tc.x1) {
        const struct viz_glyph *gl = font->glyph(font->ctx, viz_utf8_next(&s));
        if (!gl) continue;
        if (gl->alpha) {
            int x0 = pen, y0 = c->y, x1 = pen + gl->w, y1 = c->y + gl->h;
            if (clip_rect(&tc, &x0, &y0, &x1, &y1)) {
                for (int y = y0; y < y1; y++) {
                    uint32_t *row = cv->px + (size_t)y * (size_t)cv->pitch;
                    const uint8_t *src = gl->alpha + (size_t)(y - c->y) * (size_t)gl->w - pen;
                    for (int x = x0; x < x1; x++) {
                        unsigned a = src[x];
                        if (a == 255) row[x] = opaque;
                        else if (a) row[x] = blend(row[x], opaque, a + 1);
                    }
                }
            }
        }
        pen += gl->advance;
    }
}

void viz_raster(const struct viz_draw_list *dl, struct viz_canvas *cv, const struct viz_font *font)
{
    const struct clip full = { 0, 0, cv->w, cv->h };
    struct clip cl = full;
    for (size_t i = 0; i < dl->n; i++) {
        const struct viz_cmd *c = &dl->cmds[i];
        switch (c->type) {
        case VIZ_CMD_RECT: fill(cv, &cl, c); break;
        case VIZ_CMD_HATCH: hatch(cv, &cl, c); break;
        case VIZ_CMD_TEXT:
            if (font) text(cv, &cl, c, dl->text + c->text, c->font && font->mono ? font->mono : font);
            break;
        case VIZ_CMD_CLIP:
            cl = full;
            if (c->w >= 0) {
                struct clip want = { c->x, c->y, c->x + c->w, c->y + c->h };
                if (!clip_rect(&full, &want.x0, &want.y0, &want.x1, &want.y1))
                    want = (struct clip){ 0, 0, 0, 0 };
                cl = want;
            }
            break;
        }
    }
}

size_t viz_draw_text_boxes(const struct viz_draw_list *dl, const struct viz_font *font,
                           struct viz_box *out, size_t cap)
{
    if (!font) return 0;
    struct clip cl = { 0, 0, INT32_MAX, INT32_MAX };
    size_t n = 0;
    for (size_t i = 0; i < dl->n; i++) {
        const struct viz_cmd *c = &dl->cmds[i];
        if (c->type == VIZ_CMD_CLIP) {
            cl = c->w < 0 ? (struct clip){ 0, 0, INT32_MAX, INT32_MAX }
                          : (struct clip){ c->x, c->y, c->x + c->w, c->y + c->h };
            continue;
        }
        if (c->type != VIZ_CMD_TEXT) continue;
        const struct viz_font *f = c->font && font->mono ? font->mono : font;
        int w = viz_text_width(f, dl->text + c->text);
        if (c->w > 0 && w > c->w) w = c->w;
        int x0 = c->x, y0 = c->y, x1 = c->x + w, y1 = c->y + f->height;
        if (!clip_rect(&cl, &x0, &y0, &x1, &y1)) continue;
        if (n < cap) out[n] = (struct viz_box){ x0, y0, x1 - x0, y1 - y0, c->text };
        n++;
    }
    return n;
}
