/* render_sdl.h — the one place the viewer meets SDL (render_sdl.c): glyphs
 * from SDL2_ttf, PNG files through SDL2_image, the window and its events.
 * No SDL type appears here, so main.c and the tests stay SDL-free. */
#ifndef MPSIM_VIZ_RENDER_SDL_H
#define MPSIM_VIZ_RENDER_SDL_H

#include "app.h"
#include "sim/common.h"
#include "draw.h"

/* Open the DejaVu Sans font ($MPSIM_FONT first, then the usual places) at
 * `px` pixels. A missing font is MP_ERR_INTERNAL with a message that says
 * which paths were tried and which package to install. */
int viz_sdl_font_open(struct viz_font *font, int px, struct mp_error *err);
void viz_sdl_font_close(struct viz_font *font);

/* Write the canvas as a PNG (temporary file renamed into place). */
int viz_sdl_save_png(const struct viz_canvas *cv, const char *path, struct mp_error *err);

/* Open a window and run the viewer until the user quits. */
int viz_sdl_run(struct viz_app *app, const char *title, struct mp_error *err);

/* Draw `frames` frames into an offscreen window (SDL's offscreen or dummy
 * video driver, software surface) while zooming and replaying, and print the
 * frames per second with the time spent in layout, rasterising and showing. */
int viz_sdl_bench(struct viz_app *app, int frames, struct mp_error *err);

#endif
