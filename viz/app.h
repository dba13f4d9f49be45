/* app.h — the viewer's state and what each key and mouse gesture does to it,
 * without SDL: render_sdl.c turns SDL events into these calls and shows the
 * frames that viz_app_frame builds, so the behaviour is testable in Check.
 *
 * Keys: space play/pause the replay cursor, + / − replay speed, ← / → step
 * the cursor to the previous / next op start or end, Home fit everything,
 * End show everything (leave replay), ↑ ↓ PgUp PgDn scroll rows, f fold or
 * unfold every group of peers, u heat map or kinds for serving runs, ? help,
 * q / Esc quit. Mouse: wheel zooms around the pointer (shift+wheel scrolls
 * rows), drag pans, drag on the time axis scrubs the cursor, a click on a
 * stage's label shows or hides its peers, hover explains what is under
 * the pointer (an op, an idle stretch, memory). */
#ifndef MPSIM_VIZ_APP_H
#define MPSIM_VIZ_APP_H

#include <stdbool.h>

#include "draw.h"
#include "layout.h"

enum viz_key {
    VIZ_KEY_SPACE, VIZ_KEY_PLUS, VIZ_KEY_MINUS, VIZ_KEY_LEFT, VIZ_KEY_RIGHT,
    VIZ_KEY_UP, VIZ_KEY_DOWN, VIZ_KEY_PAGEUP, VIZ_KEY_PAGEDOWN, VIZ_KEY_HOME, VIZ_KEY_END,
    VIZ_KEY_HELP, VIZ_KEY_ESCAPE, VIZ_KEY_QUIT, VIZ_KEY_FOLD, VIZ_KEY_HEAT,
};

enum viz_drag { VIZ_DRAG_NONE, VIZ_DRAG_PAN, VIZ_DRAG_SCRUB };

struct viz_app {
    struct viz_scene scene;
    struct viz_view view;
    struct viz_geom geom;
    struct viz_draw_list dl;
    const struct viz_font *font;   /* may be NULL (tests) */
    bool *unfold[VIZ_MAX_PANELS];  /* the scene's fold state, owned here */
    double t_begin, t_end;         /* the scene's span, ps */

    bool playing;
    double speed;                  /* simulated ps per wall-clock second */
    bool help, quit;
    int mouse_x, mouse_y;
    bool mouse_in;
    enum viz_drag drag;
    int drag_x, drag_y;
    double drag_t0, drag_scroll;
};

/* Start on the whole scene, everything shown, replay paused, at scale 1.
 * Groups of peers start unfolded when every row then fits in 16. */
void viz_app_init(struct viz_app *app, const struct viz_scene *sc, const struct viz_font *font,
                  int width, int height);
/* Sizes × scale (> 0; the font must be opened at VIZ_FONT_PX × scale). */
void viz_app_set_scale(struct viz_app *app, double scale);
/* Draw text with this font from now on (opened for the current scale). */
void viz_app_set_font(struct viz_app *app, const struct viz_font *font);
/* Show or hide the peers of panel p's row (a timeline row index). */
void viz_app_toggle_fold(struct viz_app *app, int panel, int row);
void viz_app_release(struct viz_app *app);

/* The window changed size: keep the visible time span across the new width. */
void viz_app_resize(struct viz_app *app, int width, int height);
void viz_app_key(struct viz_app *app, enum viz_key key);
void viz_app_mouse_move(struct viz_app *app, int x, int y);
void viz_app_mouse_leave(struct viz_app *app);
void viz_app_mouse_button(struct viz_app *app, int x, int y, bool down);
/* Wheel notches (> 0 away from the user: zoom in); with shift, scroll rows. */
void viz_app_wheel(struct viz_app *app, int x, int y, double notches, bool shift);
/* Advance the replay by `seconds` of wall-clock time. */
void viz_app_tick(struct viz_app *app, double seconds);
/* Put the replay cursor at t (ps); INFINITY shows everything. */
void viz_app_set_cursor(struct viz_app *app, double t);
/* True while something moves on its own (the replay): keep redrawing. */
bool viz_app_animating(const struct viz_app *app);

/* Build this frame's draw list (scene, status line, tooltip, help). */
const struct viz_draw_list *viz_app_frame(struct viz_app *app);

#endif
