/* render_sdl.c — everything SDL: font glyphs, PNG output, the window.
 *
 * Frames are painted by the plain-C rasteriser (draw.c) straight into the
 * window's software surface when its pixel layout is 32-bit xRGB (the usual
 * case), else into a buffer converted on the way out. Nothing here decides
 * what to draw: that is app.c and layout*.c. */
#include "render_sdl.h"

#include <SDL.h>
#include <SDL_image.h>
#include <SDL_ttf.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- font ---- */

#define GLYPH_CACHE 0x2600   /* Latin, Greek, punctuation, arrows, math, shapes (▸ ▾) */

struct font_ctx {
    TTF_Font *ttf;
    struct viz_glyph *cache[GLYPH_CACHE];
    struct viz_font mono;      /* font->mono points here when it opened */
    struct font_ctx *mono_ctx;
};

static const struct viz_glyph *glyph(void *ctxp, uint32_t cp)
{
    struct font_ctx *ctx = ctxp;
    if (cp >= GLYPH_CACHE || !TTF_GlyphIsProvided32(ctx->ttf, cp)) cp = '?';
    if (ctx->cache[cp]) return ctx->cache[cp];
    struct viz_glyph *g = mp_xcalloc(1, sizeof *g);
    int minx, maxx, miny, maxy, adv;
    if (TTF_GlyphMetrics32(ctx->ttf, cp, &minx, &maxx, &miny, &maxy, &adv) == 0) g->advance = adv;
    SDL_Color white = { 255, 255, 255, 255 };
    SDL_Surface *s = cp == ' ' ? NULL : TTF_RenderGlyph32_Blended(ctx->ttf, cp, white);
    if (s) {
        SDL_Surface *argb = SDL_ConvertSurfaceFormat(s, SDL_PIXELFORMAT_ARGB8888, 0);
        SDL_FreeSurface(s);
        if (argb) {
            /* Keep only coverage: the rasteriser tints it with the text colour. */
            uint8_t *alpha = mp_xmalloc((size_t)argb->w * (size_t)argb->h);
            SDL_LockSurface(argb);
            for (int y = 0; y < argb->h; y++) {
                const uint32_t *row = (const uint32_t *)((const uint8_t *)argb->pixels + y * argb->pitch);
                for (int x = 0; x < argb->w; x++) alpha[y * argb->w + x] = (uint8_t)(row[x] >> 24);
            }
            SDL_UnlockSurface(argb);
            g->w = argb->w;
            g->h = argb->h;
            g->alpha = alpha;
            SDL_FreeSurface(argb);
        }
    }
    ctx->cache[cp] = g;
    return g;
}

/* The first readable of $env and `paths`. */
static const char *find_font(const char *env, const char *const *paths, size_t n,
                             struct mp_error *err, int *rc)
{
    *rc = MP_OK;
    if (env && *env) {
        if (access(env, R_OK) == 0) return env;
        *rc = mp_fail(err, MP_ERR_INTERNAL, "MPSIM_FONT=%s: cannot read the font: %s", env,
                      strerror(errno));
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (access(paths[i], R_OK) == 0) return paths[i];
    return NULL;
}

static struct font_ctx *open_ctx(const char *path, int px, struct mp_error *err, int *rc)
{
    TTF_Font *ttf = TTF_OpenFont(path, px);
    if (!ttf) {
        *rc = mp_fail(err, MP_ERR_INTERNAL, "%s: cannot open the font: %s", path, TTF_GetError());
        return NULL;
    }
    TTF_SetFontHinting(ttf, TTF_HINTING_LIGHT);
    struct font_ctx *ctx = mp_xcalloc(1, sizeof *ctx);
    ctx->ttf = ttf;
    return ctx;
}

int viz_sdl_font_open(struct viz_font *font, int px, struct mp_error *err)
{
    static const char *const paths[] = {
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",   /* Debian fonts-dejavu-core */
        "/usr/share/fonts/TTF/DejaVuSans.ttf",               /* Arch */
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",            /* Fedora */
        "/usr/local/share/fonts/DejaVuSans.ttf",
        "/opt/homebrew/share/fonts/DejaVuSans.ttf",
    };
    static const char *const mono_paths[] = {
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
        "/usr/share/fonts/TTF/DejaVuSansMono.ttf",
        "/usr/share/fonts/dejavu/DejaVuSansMono.ttf",
        "/usr/local/share/fonts/DejaVuSansMono.ttf",
        "/opt/homebrew/share/fonts/DejaVuSansMono.ttf",
    };
    memset(font, 0, sizeof *font);
    if (!TTF_WasInit() && TTF_Init() != 0)
        return mp_fail(err, MP_ERR_INTERNAL, "cannot start SDL_ttf: %s", TTF_GetError());
    int rc;
    const char *found = find_font(getenv("MPSIM_FONT"), paths, sizeof paths / sizeof *paths, err, &rc);
    if (rc) return rc;
    if (!found)
        return mp_fail(err, MP_ERR_INTERNAL,
                       "no font found: the viewer draws text with DejaVu Sans; install the "
                       "fonts-dejavu-core package (looked in %s and 4 other places) or set "
                       "MPSIM_FONT=/path/to/font.ttf", paths[0]);
    struct font_ctx *ctx = open_ctx(found, px, err, &rc);
    if (!ctx) return rc;
    font->ctx = ctx;
    font->height = TTF_FontHeight(ctx->ttf);
    font->glyph = glyph;
    const char *mono = find_font(getenv("MPSIM_FONT_MONO"), mono_paths,
                                 sizeof mono_paths / sizeof *mono_paths, err, &rc);
    if (rc) {
        viz_sdl_font_close(font);
        return rc;
    }
    struct font_ctx *mctx = mono ? open_ctx(mono, px, err, &rc) : NULL;
    if (mono && !mctx) {
        viz_sdl_font_close(font);
        return rc;
    }
    if (mctx) {
        ctx->mono_ctx = mctx;
        ctx->mono = (struct viz_font){ .ctx = mctx, .height = TTF_FontHeight(mctx->ttf), .glyph = glyph };
        font->mono = &ctx->mono;
    }
    return MP_OK;
}

static void close_ctx(struct font_ctx *ctx)
{
    for (int i = 0; i < GLYPH_CACHE; i++) {
        if (!ctx->cache[i]) continue;
        free((void *)ctx->cache[i]->alpha);
        free(ctx->cache[i]);
    }
    TTF_CloseFont(ctx->ttf);
    free(ctx);
}

void viz_sdl_font_close(struct viz_font *font)
{
    struct font_ctx *ctx = font->ctx;
    if (!ctx) return;
    if (ctx->mono_ctx) close_ctx(ctx->mono_ctx);
    close_ctx(ctx);
    memset(font, 0, sizeof *font);
    TTF_Quit();
}

/* ---- signals ---- */

static volatile sig_atomic_t caught;

static void on_signal(int sig) { caught = sig; }

void viz_sdl_catch_signals(void)
{
    /* SDL would turn them into SDL_QUIT events only while events are read;
     * the benchmark reads none. Our handler works in both loops. */
    SDL_SetHint(SDL_HINT_NO_SIGNAL_HANDLERS, "1");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int viz_sdl_signal(void) { return (int)caught; }

/* ---- PNG ---- */

int viz_sdl_save_png(const struct viz_canvas *cv, const char *path, struct mp_error *err)
{
    SDL_Surface *s = SDL_CreateRGBSurfaceWithFormatFrom(cv->px, cv->w, cv->h, 32, cv->pitch * 4,
                                                        SDL_PIXELFORMAT_ARGB8888);
    if (!s) return mp_fail(err, MP_ERR_INTERNAL, "cannot wrap the image: %s", SDL_GetError());
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.png", path, (long)getpid());
    int rc = IMG_SavePNG(s, tmp);
    SDL_FreeSurface(s);
    if (rc != 0) {
        remove(tmp);
        return mp_fail(err, MP_ERR_INTERNAL, "%s: cannot write the PNG: %s", path, IMG_GetError());
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return mp_fail(err, MP_ERR_INTERNAL, "%s: cannot write: %s", path, strerror(e));
    }
    return MP_OK;
}

/* ---- window ---- */

struct screen {
    SDL_Window *win;
    uint32_t *own;      /* our buffer when the surface is not 32-bit xRGB */
    size_t own_cap;
};

static int screen_open(struct screen *sc, const char *title, int w, int h, Uint32 flags,
                       struct mp_error *err)
{
    memset(sc, 0, sizeof *sc);
    sc->win = SDL_CreateWindow(title, SDL_WINDOWPOS_UNDEFINED, SDL_WINDOWPOS_UNDEFINED, w, h, flags);
    if (!sc->win) return mp_fail(err, MP_ERR_INTERNAL, "cannot open a window: %s", SDL_GetError());
    return MP_OK;
}

static void screen_close(struct screen *sc)
{
    if (sc->win) SDL_DestroyWindow(sc->win);
    free(sc->own);
    memset(sc, 0, sizeof *sc);
}

/* Paint the draw list into the window's surface and show it. Times in
 * seconds go to *raster_s and *present_s when not NULL. */
static int screen_show(struct screen *sc, const struct viz_draw_list *dl, const struct viz_font *font,
                       double *raster_s, double *present_s, struct mp_error *err)
{
    SDL_Surface *surf = SDL_GetWindowSurface(sc->win);
    if (!surf) return mp_fail(err, MP_ERR_INTERNAL, "no window surface: %s", SDL_GetError());
    Uint64 t0 = SDL_GetPerformanceCounter();
    bool direct = surf->format->BytesPerPixel == 4 &&
                  (surf->format->format == SDL_PIXELFORMAT_ARGB8888 ||
                   surf->format->format == SDL_PIXELFORMAT_RGB888);
    struct viz_canvas cv = { .w = surf->w, .h = surf->h };
    if (direct) {
        if (SDL_MUSTLOCK(surf)) SDL_LockSurface(surf);
        cv.px = surf->pixels;
        cv.pitch = surf->pitch / 4;
    } else {
        size_t need = (size_t)surf->w * (size_t)surf->h;
        MP_GROW(sc->own, sc->own_cap, need);
        cv.px = sc->own;
        cv.pitch = surf->w;
    }
    viz_raster(dl, &cv, font);
    if (direct) {
        if (SDL_MUSTLOCK(surf)) SDL_UnlockSurface(surf);
    } else {
        SDL_ConvertPixels(surf->w, surf->h, SDL_PIXELFORMAT_ARGB8888, sc->own, surf->w * 4,
                          surf->format->format, surf->pixels, surf->pitch);
    }
    Uint64 t1 = SDL_GetPerformanceCounter();
    SDL_UpdateWindowSurface(sc->win);
    Uint64 t2 = SDL_GetPerformanceCounter();
    double f = (double)SDL_GetPerformanceFrequency();
    if (raster_s) *raster_s += (double)(t1 - t0) / f;
    if (present_s) *present_s += (double)(t2 - t1) / f;
    return MP_OK;
}

static bool on_key(struct viz_app *app, SDL_Keycode k)
{
    switch (k) {
    case SDLK_SPACE: viz_app_key(app, VIZ_KEY_SPACE); return true;
    case SDLK_LEFT: viz_app_key(app, VIZ_KEY_LEFT); return true;
    case SDLK_RIGHT: viz_app_key(app, VIZ_KEY_RIGHT); return true;
    case SDLK_UP: viz_app_key(app, VIZ_KEY_UP); return true;
    case SDLK_DOWN: viz_app_key(app, VIZ_KEY_DOWN); return true;
    case SDLK_PAGEUP: viz_app_key(app, VIZ_KEY_PAGEUP); return true;
    case SDLK_PAGEDOWN: viz_app_key(app, VIZ_KEY_PAGEDOWN); return true;
    case SDLK_HOME: viz_app_key(app, VIZ_KEY_HOME); return true;
    case SDLK_END: viz_app_key(app, VIZ_KEY_END); return true;
    case SDLK_ESCAPE: viz_app_key(app, VIZ_KEY_ESCAPE); return true;
    default: return false;
    }
}

/* Characters come as text so '?', '+' and '-' work on any keyboard layout. */
static bool on_text(struct viz_app *app, const char *s)
{
    switch (s[0]) {
    case '?': case 'h': viz_app_key(app, VIZ_KEY_HELP); return true;
    case '+': case '=': viz_app_key(app, VIZ_KEY_PLUS); return true;
    case '-': case '_': viz_app_key(app, VIZ_KEY_MINUS); return true;
    case 'q': viz_app_key(app, VIZ_KEY_QUIT); return true;
    case '0': viz_app_key(app, VIZ_KEY_HOME); return true;
    case 'f': viz_app_key(app, VIZ_KEY_FOLD); return true;
    case 'u': viz_app_key(app, VIZ_KEY_HEAT); return true;
    default: return false;
    }
}

static bool handle(struct viz_app *app, const SDL_Event *e)
{
    switch (e->type) {
    case SDL_QUIT: app->quit = true; return true;
    case SDL_KEYDOWN: return on_key(app, e->key.keysym.sym);
    case SDL_TEXTINPUT: return on_text(app, e->text.text);
    case SDL_MOUSEMOTION: viz_app_mouse_move(app, e->motion.x, e->motion.y); return true;
    case SDL_MOUSEBUTTONDOWN:
    case SDL_MOUSEBUTTONUP:
        if (e->button.button != SDL_BUTTON_LEFT) return false;
        viz_app_mouse_button(app, e->button.x, e->button.y, e->type == SDL_MOUSEBUTTONDOWN);
        return true;
    case SDL_MOUSEWHEEL: {
        int x, y;
        SDL_GetMouseState(&x, &y);
        double n = e->wheel.preciseY;
        if (e->wheel.direction == SDL_MOUSEWHEEL_FLIPPED) n = -n;
        viz_app_wheel(app, x, y, n, (SDL_GetModState() & KMOD_SHIFT) != 0);
        return true;
    }
    case SDL_WINDOWEVENT:
        if (e->window.event == SDL_WINDOWEVENT_SIZE_CHANGED)
            viz_app_resize(app, e->window.data1, e->window.data2);
        else if (e->window.event == SDL_WINDOWEVENT_LEAVE)
            viz_app_mouse_leave(app);
        return true;
    default: return false;
    }
}

/* The display's scale: pixels per window point (macOS, Wayland), or the
 * DPI over 96 (X11 reports it), in quarter steps, at least 1, at most 4. */
static double display_scale(SDL_Window *win)
{
    int w = 0, h = 0, pw = 0, ph = 0;
    SDL_GetWindowSize(win, &w, &h);
    SDL_GetWindowSizeInPixels(win, &pw, &ph);
    double s = w > 0 && pw > w ? (double)pw / w : 1.0;
    float dpi = 0;
    int d = SDL_GetWindowDisplayIndex(win);
    if (s <= 1.0 && d >= 0 && SDL_GetDisplayDPI(d, NULL, &dpi, NULL) == 0 && dpi > 0)
        s = dpi / 96.0;
    s = floor(s * 4 + 0.5) / 4;
    return s < 1 ? 1 : s > 4 ? 4 : s;
}

int viz_sdl_run(struct viz_app *app, const char *title, double scale, struct mp_error *err)
{
    if (SDL_Init(SDL_INIT_VIDEO) != 0)
        return mp_fail(err, MP_ERR_INTERNAL, "cannot start SDL video (no display?): %s; "
                       "--screenshot works without one", SDL_GetError());
    struct screen sc;
    int rc = screen_open(&sc, title, app->view.width, app->view.height,
                         SDL_WINDOW_RESIZABLE | SDL_WINDOW_SHOWN, err);
    if (rc) { SDL_Quit(); return rc; }
    if (scale <= 0) scale = display_scale(sc.win);
    SDL_SetWindowMinimumSize(sc.win, VIZ_MIN_W, VIZ_MIN_H);
    struct viz_font font;
    rc = viz_sdl_font_open(&font, (int)lround(VIZ_FONT_PX * scale), err);
    if (rc) { screen_close(&sc); SDL_Quit(); return rc; }
    viz_app_set_font(app, &font);
    viz_app_set_scale(app, scale);
    SDL_Surface *surf = SDL_GetWindowSurface(sc.win);
    if (surf && (surf->w != app->view.width || surf->h != app->view.height))
        viz_app_resize(app, surf->w, surf->h);
    SDL_StartTextInput();
    bool dirty = true;
    Uint64 last = SDL_GetPerformanceCounter();
    double freq = (double)SDL_GetPerformanceFrequency();
    while (!app->quit && rc == MP_OK && !viz_sdl_signal()) {
        SDL_Event e;
        /* Sleep in the event queue unless the replay is running; wake now
         * and then to see a signal. */
        if (!dirty && !viz_app_animating(app)) {
            if (SDL_WaitEventTimeout(&e, 250)) dirty |= handle(app, &e);
        }
        while (SDL_PollEvent(&e)) dirty |= handle(app, &e);
        Uint64 now = SDL_GetPerformanceCounter();
        double dt = (double)(now - last) / freq;
        last = now;
        if (viz_app_animating(app)) {
            viz_app_tick(app, dt > 0.1 ? 0.1 : dt);
            dirty = true;
        }
        if (dirty && !app->quit) {
            rc = screen_show(&sc, viz_app_frame(app), app->font, NULL, NULL, err);
            dirty = false;
            if (viz_app_animating(app)) SDL_Delay(10);
        }
    }
    viz_app_set_font(app, NULL);
    viz_sdl_font_close(&font);
    screen_close(&sc);
    SDL_Quit();
    return rc;
}

/* This thread's CPU time: on a shared machine the wall clock also counts
 * the time other processes had the core. */
static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, int n)
{
    if (n == 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int viz_sdl_bench(struct viz_app *app, int frames, struct mp_error *err)
{
    /* No display needed: prefer the offscreen driver, fall back to dummy. */
    if (!getenv("SDL_VIDEODRIVER")) setenv("SDL_VIDEODRIVER", "offscreen", 0);
    /* Measure the software path: the window surface itself, not a texture
     * that SDL would otherwise put behind it and upload every frame. */
    SDL_SetHintWithPriority(SDL_HINT_FRAMEBUFFER_ACCELERATION, "software", SDL_HINT_DEFAULT);
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        setenv("SDL_VIDEODRIVER", "dummy", 1);
        if (SDL_Init(SDL_INIT_VIDEO) != 0)
            return mp_fail(err, MP_ERR_INTERNAL, "cannot start SDL video: %s", SDL_GetError());
    }
    struct screen sc;
    int rc = screen_open(&sc, "mpsim-view bench", app->view.width, app->view.height,
                         SDL_WINDOW_HIDDEN, err);
    if (rc) { SDL_Quit(); return rc; }
    double freq = (double)SDL_GetPerformanceFrequency();
    double layout_s = 0, raster_s = 0, present_s = 0, slowest = 0;
    double *times = mp_xmalloc((size_t)frames * sizeof *times);
    double *cpu = mp_xmalloc((size_t)frames * sizeof *cpu);
    int done = 0;
    Uint64 start = SDL_GetPerformanceCounter();
    int mid = (app->geom.plot_x0 + app->geom.plot_x1) / 2;
    for (int i = 0; i < frames && rc == MP_OK && !viz_sdl_signal(); i++) {
        /* Every frame differs: the first shows the whole step (every op on
         * screen, the heaviest case), then zoom in and out around the
         * middle, a third of the frames with the replay cursor sweeping,
         * hovering the middle. */
        if (i > 0) viz_app_wheel(app, mid, 0, (i / 20) % 2 ? -1.0 : 1.0, false);
        viz_app_set_cursor(app, i % 3 == 1 ? app->t_begin + (app->t_end - app->t_begin) *
                                               (double)(i % 97) / 97.0 : INFINITY);
        viz_app_mouse_move(app, mid, app->geom.rows_y0 + app->geom.panel[0].header_h + 10);
        Uint64 t0 = SDL_GetPerformanceCounter();
        double c0 = cpu_seconds();
        const struct viz_draw_list *dl = viz_app_frame(app);
        layout_s += (double)(SDL_GetPerformanceCounter() - t0) / freq;
        rc = screen_show(&sc, dl, app->font, &raster_s, &present_s, err);
        double ft = (double)(SDL_GetPerformanceCounter() - t0) / freq;
        if (ft > slowest) slowest = ft;
        cpu[done] = cpu_seconds() - c0;
        times[done++] = ft;
    }
    double total = (double)(SDL_GetPerformanceCounter() - start) / freq;
    size_t ops = 0;
    for (int p = 0; p < app->scene.n; p++) ops += app->scene.tl[p]->n_ops;
    double median = median_of(times, done), cpu_median = median_of(cpu, done);
    if (rc == MP_OK && done)
        printf("bench: %d frames at %dx%d, %zu ops, driver %s: %.1f frames/s mean, median frame "
               "%.2f ms = %.1f frames/s (its CPU time %.2f ms = %.1f frames/s on a core of its "
               "own; per frame: layout %.2f ms, raster %.2f ms, show %.2f ms; slowest frame "
               "%.1f ms = %.1f frames/s)%s\n",
               done, app->view.width, app->view.height, ops, SDL_GetCurrentVideoDriver(),
               done / total, 1e3 * median, median > 0 ? 1 / median : 0.0, 1e3 * cpu_median,
               cpu_median > 0 ? 1 / cpu_median : 0.0, 1e3 * layout_s / done,
               1e3 * raster_s / done, 1e3 * present_s / done, 1e3 * slowest,
               slowest > 0 ? 1 / slowest : 0.0, done < frames ? " (stopped by a signal)" : "");
    free(times);
    free(cpu);
    screen_close(&sc);
    SDL_Quit();
    return rc;
}
