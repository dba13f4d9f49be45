/* app.c — see app.h. */
#include "app.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void relayout(struct viz_app *app)
{
    viz_layout_geom(&app->geom, &app->scene, &app->view);
}

void viz_app_init(struct viz_app *app, const struct viz_scene *sc, const struct viz_font *font,
                  int width, int height)
{
    memset(app, 0, sizeof *app);
    app->scene = *sc;
    app->scene.font = font;
    app->font = font;
    /* Unfold every group when all the rows then fit in 16: a small run
     * (the hot-expert lesson's 8 EP ranks) shows its peers at once. */
    int all = 0;
    for (int p = 0; p < sc->n; p++) all += sc->tl[p]->n_rows;
    for (int p = 0; p < sc->n; p++) {
        int n = sc->tl[p]->n_rows;
        app->unfold[p] = mp_xcalloc((size_t)(n ? n : 1), sizeof *app->unfold[p]);
        for (int r = 0; r < n && all <= 16; r++) app->unfold[p][r] = true;
        app->scene.unfold[p] = app->unfold[p];
    }
    viz_geom_init(&app->geom);
    viz_draw_init(&app->dl);
    app->view.width = width;
    app->view.height = height;
    app->view.scale = 1.0;
    app->view.cursor = INFINITY;
    viz_scene_span(sc, &app->t_begin, &app->t_end);
    relayout(app);
    viz_view_fit(&app->view, &app->geom, app->t_begin, app->t_end);
    /* One step replays in about eight seconds at the start. */
    app->speed = (app->t_end - app->t_begin) / 8.0;
}

void viz_app_set_scale(struct viz_app *app, double scale)
{
    double span = app->view.ps_per_px * (app->geom.plot_x1 - app->geom.plot_x0);
    app->view.scale = scale > 0 ? scale : 1.0;
    relayout(app);
    app->view.ps_per_px = span / (app->geom.plot_x1 - app->geom.plot_x0);
    viz_view_clamp_scroll(&app->view, &app->geom);
}

void viz_app_set_font(struct viz_app *app, const struct viz_font *font)
{
    double span = app->view.ps_per_px * (app->geom.plot_x1 - app->geom.plot_x0);
    app->font = font;
    app->scene.font = font;
    relayout(app);
    app->view.ps_per_px = span / (app->geom.plot_x1 - app->geom.plot_x0);
    viz_view_clamp_scroll(&app->view, &app->geom);
}

void viz_app_toggle_fold(struct viz_app *app, int panel, int row)
{
    if (panel < 0 || panel >= app->scene.n || row < 0 || row >= app->scene.tl[panel]->n_rows) return;
    app->unfold[panel][row] = !app->unfold[panel][row];
    relayout(app);
    viz_view_clamp_scroll(&app->view, &app->geom);
}

void viz_app_release(struct viz_app *app)
{
    for (int p = 0; p < VIZ_MAX_PANELS; p++) free(app->unfold[p]);
    viz_geom_release(&app->geom);
    viz_draw_release(&app->dl);
}

void viz_app_resize(struct viz_app *app, int width, int height)
{
    double span = app->view.ps_per_px * (app->geom.plot_x1 - app->geom.plot_x0);
    app->view.width = width;
    app->view.height = height;
    relayout(app);
    app->view.ps_per_px = span / (app->geom.plot_x1 - app->geom.plot_x0);
    viz_view_clamp_scroll(&app->view, &app->geom);
}

void viz_app_set_cursor(struct viz_app *app, double t)
{
    app->view.cursor = t;
}

bool viz_app_animating(const struct viz_app *app) { return app->playing; }

/* Keep the moving cursor on screen when zoomed in. */
static void follow_cursor(struct viz_app *app)
{
    struct viz_view *v = &app->view;
    if (!isfinite(v->cursor)) return;
    double left = viz_t_of(&app->geom, v, app->geom.plot_x0);
    double right = viz_t_of(&app->geom, v, app->geom.plot_x1);
    double span = right - left;
    if (v->cursor > right || v->cursor < left) v->t0 = v->cursor - 0.1 * span;
}

static void step_event(struct viz_app *app, int dir)
{
    app->playing = false;
    double cur = app->view.cursor;
    if (!isfinite(cur)) cur = dir > 0 ? -INFINITY : INFINITY;
    double best = dir > 0 ? INFINITY : -INFINITY;
    for (int p = 0; p < app->scene.n; p++) {
        const struct timeline *tl = app->scene.tl[p];
        mp_time from = isfinite(cur) ? (mp_time)(dir > 0 ? floor(cur) : ceil(cur))
                     : (dir > 0 ? INT64_MIN : INT64_MAX);
            mp_time t;
        if (timeline_next_event(tl, from, dir, &t)) {
            if (dir > 0 ? (double)t < best : (double)t > best) best = (double)t;
        }
    }
    /* Past the last event the replay is over: show everything again. */
    app->view.cursor = isfinite(best) ? best : (dir > 0 ? INFINITY : app->view.cursor);
    follow_cursor(app);
}

void viz_app_key(struct viz_app *app, enum viz_key key)
{
    struct viz_view *v = &app->view;
    int page = app->geom.rows_y1 - app->geom.rows_y0;
    double line = 40 * (v->scale > 0 ? v->scale : 1);
    switch (key) {
    case VIZ_KEY_SPACE:
        if (!app->playing && (!isfinite(v->cursor) || v->cursor >= app->t_end))
            v->cursor = app->t_begin;
        app->playing = !app->playing;
        break;
    case VIZ_KEY_PLUS: app->speed *= 2; break;
    case VIZ_KEY_MINUS: app->speed /= 2; break;
    case VIZ_KEY_LEFT: step_event(app, -1); break;
    case VIZ_KEY_RIGHT: step_event(app, +1); break;
    case VIZ_KEY_UP: v->scroll_y -= line; break;
    case VIZ_KEY_DOWN: v->scroll_y += line; break;
    case VIZ_KEY_PAGEUP: v->scroll_y -= page * 0.9; break;
    case VIZ_KEY_PAGEDOWN: v->scroll_y += page * 0.9; break;
    case VIZ_KEY_HOME:
        viz_view_fit(v, &app->geom, app->t_begin, app->t_end);
        v->scroll_y = 0;
        break;
    case VIZ_KEY_END:
        app->playing = false;
        v->cursor = INFINITY;
        break;
    case VIZ_KEY_HELP: app->help = !app->help; break;
    case VIZ_KEY_ESCAPE:
        if (app->help) app->help = false;
        else app->quit = true;
        break;
    case VIZ_KEY_QUIT: app->quit = true; break;
    case VIZ_KEY_FOLD: {
        /* All open if any is closed, else all closed. */
        bool any_closed = false;
        for (int p = 0; p < app->scene.n; p++)
            for (int r = 0; r < app->scene.tl[p]->n_rows; r++)
                if (!app->unfold[p][r] && viz_fold_label(app->scene.tl[p], r, false, NULL, 0))
                    any_closed = true;
        for (int p = 0; p < app->scene.n; p++)
            for (int r = 0; r < app->scene.tl[p]->n_rows; r++) app->unfold[p][r] = any_closed;
        break;
    }
    case VIZ_KEY_HEAT: v->no_heatmap = !v->no_heatmap; break;
    }
    relayout(app);
    viz_view_clamp_scroll(v, &app->geom);
}

static double clamp_time(const struct viz_app *app, double t)
{
    return t < app->t_begin ? app->t_begin : t > app->t_end ? app->t_end : t;
}

void viz_app_mouse_move(struct viz_app *app, int x, int y)
{
    app->mouse_x = x;
    app->mouse_y = y;
    app->mouse_in = true;
    struct viz_view *v = &app->view;
    if (app->drag == VIZ_DRAG_PAN) {
        v->t0 = app->drag_t0 - (x - app->drag_x) * v->ps_per_px;
        v->scroll_y = app->drag_scroll - (y - app->drag_y);
        relayout(app);
        viz_view_clamp_scroll(v, &app->geom);
    } else if (app->drag == VIZ_DRAG_SCRUB) {
        v->cursor = clamp_time(app, viz_t_of(&app->geom, v, x));
    }
}

void viz_app_mouse_leave(struct viz_app *app) { app->mouse_in = false; }

void viz_app_mouse_button(struct viz_app *app, int x, int y, bool down)
{
    if (!down) {
        app->drag = VIZ_DRAG_NONE;
        return;
    }
    app->drag_x = x;
    app->drag_y = y;
    app->drag_t0 = app->view.t0;
    app->drag_scroll = app->view.scroll_y;
    struct viz_hit h = viz_layout_hit(&app->geom, &app->scene, &app->view, x, y);
    if (h.ok && h.kind == VIZ_HIT_FOLD) {
        viz_app_toggle_fold(app, h.panel, h.row);
        app->drag = VIZ_DRAG_NONE;
        return;
    }
    if (y < app->geom.m.axis_h && x >= app->geom.plot_x0 && x < app->geom.plot_x1) {
        app->drag = VIZ_DRAG_SCRUB;
        app->playing = false;
        app->view.cursor = clamp_time(app, viz_t_of(&app->geom, &app->view, x));
    } else {
        app->drag = VIZ_DRAG_PAN;
    }
}

void viz_app_wheel(struct viz_app *app, int x, int y, double notches, bool shift)
{
    (void)y;
    if (shift) {
        app->view.scroll_y -= 40 * (app->view.scale > 0 ? app->view.scale : 1) * notches;
    } else {
        double at = x >= app->geom.plot_x0 && x < app->geom.plot_x1
                  ? x : (app->geom.plot_x0 + app->geom.plot_x1) / 2.0;
        viz_view_zoom(&app->view, &app->geom, at, pow(1.25, notches));
    }
    relayout(app);
    viz_view_clamp_scroll(&app->view, &app->geom);
}

void viz_app_tick(struct viz_app *app, double seconds)
{
    if (!app->playing) return;
    app->view.cursor += app->speed * seconds;
    if (app->view.cursor >= app->t_end) {
        app->view.cursor = INFINITY;
        app->playing = false;
    }
    follow_cursor(app);
}

/* The keys as a table, drawn in the monospace font so the columns line up. */
static const char *const help_rows[][2] = {
    { "space", "play / pause the replay cursor" },
    { "+  -", "replay faster / slower" },
    { "left right", "step the cursor to the previous / next op start or end" },
    { "End", "leave the replay: show everything" },
    { "Home  0", "fit the whole step on screen" },
    { "wheel", "zoom around the pointer" },
    { "shift+wheel", "scroll rows (also up, down, PgUp, PgDn)" },
    { "drag", "pan; on the time axis: scrub the cursor" },
    { "hover", "an op's details; what an idle stretch waited for; memory" },
    { "click", "a stage's label: show / hide its peers' rows" },
    { "f", "fold / unfold every stage's peers" },
    { "u", "serving runs: heat map of busy share / op kinds" },
    { "?  h", "this help" },
    { "q  Esc", "quit (Esc first closes the help)" },
};

static const char *const help_notes[] = {
    "Rows are pipeline stages. Compute lane: F blue, B teal, W green,",
    "BW orange; a later chunk is darker; FB is F over BW (overlapped);",
    "triangles are DualPipe's directions. Below: communication,",
    "memory (one scale for every run shown, dotted red = capacity).",
    "Hatched pink = bubble (waits for another stage); hatched blue =",
    "waits for the chip's own communication. Right: utilization, peak.",
};

static void draw_help(struct viz_app *app)
{
    const struct viz_font *f = app->font;
    const struct viz_font *mono = f && f->mono ? f->mono : f;
    int nr = (int)(sizeof help_rows / sizeof help_rows[0]);
    int nn = (int)(sizeof help_notes / sizeof help_notes[0]);
    int lh = f ? f->height : 12, w = 0;
    char line[128];
    for (int i = 0; i < nr; i++) {
        snprintf(line, sizeof line, "%-12s %s", help_rows[i][0], help_rows[i][1]);
        int tw = viz_text_width(mono, line);
        if (tw > w) w = tw;
    }
    for (int i = 0; i < nn; i++) {
        int tw = viz_text_width(f, help_notes[i]);
        if (tw > w) w = tw;
    }
    int pad = app->geom.m.pad * 2;
    int bw = w + 2 * pad, bh = (nr + nn + 3) * lh + 2 * pad;
    if (bw > app->view.width) bw = app->view.width;
    if (bh > app->view.height) bh = app->view.height;
    int bx = (app->view.width - bw) / 2, by = (app->view.height - bh) / 2;
    viz_draw_noclip(&app->dl);
    viz_draw_rect(&app->dl, bx - 1, by - 1, bw + 2, bh + 2, VIZ_SEPARATOR);
    viz_draw_rect(&app->dl, bx, by, bw, bh, VIZ_HELP_BG);
    viz_draw_clip(&app->dl, bx, by, bw, bh);
    int y = by + pad;
    viz_draw_text(&app->dl, bx + pad, y, 0, VIZ_CURSOR, "mpsim-view keys");
    y += 2 * lh;
    for (int i = 0; i < nr; i++, y += lh) {
        snprintf(line, sizeof line, "%-12s %s", help_rows[i][0], help_rows[i][1]);
        viz_draw_text_mono(&app->dl, bx + pad, y, 0, VIZ_TEXT, line);
    }
    y += lh;
    for (int i = 0; i < nn; i++, y += lh)
        viz_draw_text(&app->dl, bx + pad, y, 0, VIZ_TEXT_DIM, help_notes[i]);
    viz_draw_noclip(&app->dl);
}

const struct viz_draw_list *viz_app_frame(struct viz_app *app)
{
    struct viz_view *v = &app->view;
    relayout(app);
    viz_draw_clear(&app->dl);
    viz_layout_draw(&app->dl, &app->geom, &app->scene, v);

    char left[160], right[200], a[32], b[32], c[32], d[32];
    viz_format_time(viz_t_of(&app->geom, v, app->geom.plot_x0), a, sizeof a);
    viz_format_time(viz_t_of(&app->geom, v, app->geom.plot_x1), b, sizeof b);
    viz_format_time(app->speed, d, sizeof d);
    if (isfinite(v->cursor)) viz_format_time(v->cursor, c, sizeof c);
    else snprintf(c, sizeof c, "end");
    snprintf(left, sizeof left, "%s   cursor %s   speed %s/s",
             app->playing ? "playing" : "paused", c, d);
    snprintf(right, sizeof right, "view %s .. %s    ? keys", a, b);
    viz_layout_status(&app->dl, &app->geom, v, app->font, left, right);

    if (app->mouse_in && app->drag == VIZ_DRAG_NONE && !app->help) {
        struct viz_hit h = viz_layout_hit(&app->geom, &app->scene, v, app->mouse_x, app->mouse_y);
        if (h.ok) {
            viz_layout_highlight(&app->dl, &app->geom, &app->scene, v, &h);
            char lines[10][VIZ_TIP_W];
            const char *ptrs[10];
            int n = viz_hit_details(&app->scene, &h, lines, 10);
            for (int i = 0; i < n; i++) ptrs[i] = lines[i];
            if (n) viz_layout_tooltip(&app->dl, v, app->font, app->mouse_x, app->mouse_y, ptrs, n);
        }
    }
    if (app->help) draw_help(app);
    return &app->dl;
}
