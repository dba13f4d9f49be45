/* render_sdl.h — the one place the viewer meets SDL (render_sdl.c): glyphs
 * from SDL2_ttf, PNG files through SDL2_image, the window and its events,
 * the display's scale, SIGINT / SIGTERM. No SDL type appears here, so
 * main.c and the tests stay SDL-free. */
#ifndef MPSIM_VIZ_RENDER_SDL_H
#define MPSIM_VIZ_RENDER_SDL_H

#include "app.h"
#include "sim/common.h"
#include "draw.h"

/* Open DejaVu Sans ($MPSIM_FONT first, then the usual places) at `px`
 * pixels, and DejaVu Sans Mono beside it as font->mono (for the help's
 * table; the proportional font stands in when it is missing). A missing
 * font is MP_ERR_INTERNAL with a message that says which paths were tried
 * and which package to install. */
int viz_sdl_font_open(struct viz_font *font, int px, struct mp_error *err);
void viz_sdl_font_close(struct viz_font *font);

/* Write the canvas as a PNG (temporary file renamed into place). */
int viz_sdl_save_png(const struct viz_canvas *cv, const char *path, struct mp_error *err);

/* From now on SIGINT and SIGTERM ask the window or the benchmark to stop
 * (SDL's own handlers are kept out); viz_sdl_signal says which came, 0 if
 * none. */
void viz_sdl_catch_signals(void);
int viz_sdl_signal(void);

/* Open a window and run the viewer until the user quits (or a signal
 * comes). `scale` 0 takes the display's: its pixels per window point, or its
 * DPI over 96, in steps of 1/4, at least 1; the font is opened for it here. */
int viz_sdl_run(struct viz_app *app, const char *title, double scale, struct mp_error *err);

/* Draw `frames` frames into an offscreen window (SDL's offscreen or dummy
 * video driver, software surface) while zooming and replaying, and print the
 * frames per second (mean and median) with the time spent in layout,
 * rasterising and showing. Stops early on a signal. */
int viz_sdl_bench(struct viz_app *app, int frames, struct mp_error *err);

#endif
