/* main.c — mpsim-view: read the arguments, load every timeline (before any
 * window exists, so bad input exits 2 with nothing opened), then either
 * write a screenshot, run the benchmark or open the window.
 *
 *   mpsim-view (TIMELINE.csv | SCENARIO.ini [--set k=v]...) [--compare OTHER]...
 *              [--screenshot OUT.png [--at TIME] [--view A..B] [--hover TIME[,ROW]]]
 *              [--size WxH] [--scale S] [--bench-frames N]
 *              [--demo gpipe|1f1b|synthetic:OPS] [--export OUT.csv] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "layout.h"
#include "load.h"
#include "render_sdl.h"
#include "sim/common.h"
#include "timeline.h"

#define MAX_SETS 64
#define MAX_BENCH_FRAMES 100000

static const char usage[] =
    "usage: mpsim-view (TIMELINE.csv | SCENARIO.ini [--set k=v]...) [--compare OTHER]...\n"
    "                  [--screenshot OUT.png [--at TIME] [--view A..B] [--hover TIME[,ROW]]]\n"
    "                  [--size WxH] [--scale S] [--bench-frames N]\n"
    "                  [--demo gpipe|1f1b|synthetic:OPS] [--export OUT.csv]\n"
    "  TIMELINE.csv   a timeline written by `mpsim run X.ini --timeline OUT.csv`\n"
    "  SCENARIO.ini   run it in-process (training or serving) and show it\n"
    "  --compare F    stack another run on the same time axis and memory scale (up to 3)\n"
    "  --screenshot   render without a display and write a PNG\n"
    "  --at TIME      replay cursor for the screenshot: 12ms, 3.5us, 0.012 (seconds)\n"
    "  --view A..B    start with this time range across the window (100ms..100.5ms)\n"
    "  --hover T[,R]  screenshot with the pointer at time T over row R (0: the top row)\n"
    "  --size WxH     window or image size, 320x200 .. 16384x16384 (default 1600x900;\n"
    "                 bench 1920x1080)\n"
    "  --scale S      sizes and fonts x S, 0.5 .. 4 (default: the display's; 1 for files)\n"
    "  --bench-frames N  draw N frames (1 .. 100000) offscreen and print frames/s\n"
    "  --demo NAME    a built-in timeline: gpipe or 1f1b (p=4, m=8, t_f=1ms, t_b=2ms),\n"
    "                 or synthetic:OPS (64 chips, OPS ops) for benchmarks\n"
    "  --export F     write the (first) timeline as CSV and exit\n"
    "Keys in the window: press ? (see viz/README.md).\n";

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int open_demo(const char *name, struct timeline *tl, struct mp_error *err)
{
    if (strncmp(name, "synthetic:", 10) == 0) {
        char *end;
        long long ops = strtoll(name + 10, &end, 10);
        if (*end || ops < 1 || ops > 100000000)
            return mp_fail(err, MP_ERR_INPUT, "--demo %s: expected synthetic:OPS with OPS in 1..1e8",
                           name);
        timeline_synthetic(tl, 64, (size_t)ops);
        return MP_OK;
    }
    return timeline_textbook(tl, name, 4, 8, MP_PS_PER_MS, 2 * MP_PS_PER_MS, err);
}

static int open_input(const char *path, char *const *sets, int n_sets, struct timeline *tl,
                      struct mp_error *err)
{
    if (ends_with(path, ".ini")) return viz_load_scenario(tl, path, sets, n_sets, err);
    return timeline_read_csv(tl, path, err);
}

/* "12ms", "3.5 us", "1s", "250ns", "7ps" or plain seconds "0.012". */
static int parse_time_arg(const char *s, double *ps)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0) return -1;
    while (*end == ' ') end++;
    static const struct { const char *unit; double scale; } units[] = {
        { "", 1e12 }, { "s", 1e12 }, { "ms", 1e9 }, { "us", 1e6 }, { "ns", 1e3 }, { "ps", 1 },
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) == 0) {
            *ps = v * units[i].scale;
            return 0;
        }
    }
    return -1;
}

struct args {
    const char *inputs[VIZ_MAX_PANELS];
    int n_inputs;
    char *sets[MAX_SETS];
    int n_sets;
    const char *demo, *screenshot, *export_csv;
    double at, view_t0, view_t1;   /* view_t1 > view_t0 when --view was given */
    double hover_t;                /* NAN unless --hover */
    int hover_row;
    double scale;                  /* 0: the display's (window), 1 (files) */
    int width, height, bench_frames;
    bool size_given;
};

static int parse_args(int argc, char **argv, struct args *a, struct mp_error *err)
{
    memset(a, 0, sizeof *a);
    a->at = INFINITY;
    a->hover_t = NAN;
    a->width = 1600;
    a->height = 900;
    static const char *const with_value[] = {
        "--compare", "--set", "--screenshot", "--at", "--size", "--bench-frames", "--demo",
        "--export", "--view", "--scale", "--hover",
    };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
            takes |= strcmp(arg, with_value[k]) == 0;
        if (takes && !val) return mp_fail(err, MP_ERR_INPUT, "%s needs a value\n%s", arg, usage);
        if (takes) i++;
        char *end;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(arg, "--compare") == 0) {
            if (a->n_inputs == 0 && !a->demo)
                return mp_fail(err, MP_ERR_INPUT, "--compare %s: give the main timeline first", val);
            if (a->n_inputs + (a->demo ? 1 : 0) >= VIZ_MAX_PANELS)
                return mp_fail(err, MP_ERR_INPUT, "at most %d timelines at once", VIZ_MAX_PANELS);
            a->inputs[a->n_inputs++] = val;
        } else if (strcmp(arg, "--set") == 0) {
            if (!strchr(val, '=') || a->n_sets >= MAX_SETS)
                return mp_fail(err, MP_ERR_INPUT, "--set %s: expected section.key=value", val);
            a->sets[a->n_sets++] = (char *)val;
        } else if (strcmp(arg, "--screenshot") == 0) {
            /* PNG is what it writes: refuse a name that says otherwise. */
            size_t vl = strlen(val);
            if (vl < 4 || strcmp(val + vl - 4, ".png") != 0)
                return mp_fail(err, MP_ERR_INPUT, "--screenshot %s: expected a .png file (the "
                               "screenshot is written as PNG)", val);
            a->screenshot = val;
        } else if (strcmp(arg, "--at") == 0) {
            if (parse_time_arg(val, &a->at) != 0)
                return mp_fail(err, MP_ERR_INPUT, "--at %s: expected a time such as 12ms, 3.5us "
                               "or 0.012 (seconds)", val);
        } else if (strcmp(arg, "--hover") == 0) {
            char t[64];
            const char *comma = strchr(val, ',');
            size_t n = comma ? (size_t)(comma - val) : strlen(val);
            long row = 0;
            if (n >= sizeof t)
                return mp_fail(err, MP_ERR_INPUT, "--hover %s: expected TIME[,ROW] such as 7ms,0", val);
            memcpy(t, val, n);
            t[n] = '\0';
            if (comma) {
                row = strtol(comma + 1, &end, 10);
                if (end == comma + 1 || *end || row < 0 || row > 1000000) row = -1;
            }
            if (parse_time_arg(t, &a->hover_t) != 0 || row < 0)
                return mp_fail(err, MP_ERR_INPUT, "--hover %s: expected TIME[,ROW] such as 7ms,0 "
                               "(ROW counts the rows on screen from 0)", val);
            a->hover_row = (int)row;
        } else if (strcmp(arg, "--view") == 0) {
            const char *dots = strstr(val, "..");
            char first[64];
            if (!dots || (size_t)(dots - val) >= sizeof first)
                return mp_fail(err, MP_ERR_INPUT, "--view %s: expected A..B such as 10ms..12ms", val);
            memcpy(first, val, (size_t)(dots - val));
            first[dots - val] = '\0';
            if (parse_time_arg(first, &a->view_t0) != 0 || parse_time_arg(dots + 2, &a->view_t1) != 0 ||
                !(a->view_t1 > a->view_t0))
                return mp_fail(err, MP_ERR_INPUT, "--view %s: expected A..B with A < B, such as "
                               "10ms..12ms", val);
        } else if (strcmp(arg, "--size") == 0) {
            char x, extra;
            if (sscanf(val, "%d%c%d%c", &a->width, &x, &a->height, &extra) != 3 || x != 'x' ||
                a->width < VIZ_MIN_W || a->height < VIZ_MIN_H || a->width > 16384 ||
                a->height > 16384)
                return mp_fail(err, MP_ERR_INPUT, "--size %s: expected WxH such as 1920x1080, "
                               "width in %d..16384 and height in %d..16384", val, VIZ_MIN_W, VIZ_MIN_H);
            a->size_given = true;
        } else if (strcmp(arg, "--scale") == 0) {
            a->scale = strtod(val, &end);
            if (end == val || *end || !(a->scale >= 0.5 && a->scale <= 4))
                return mp_fail(err, MP_ERR_INPUT, "--scale %s: expected a factor in 0.5..4 such as "
                               "1.5 (sizes and fonts are multiplied by it)", val);
        } else if (strcmp(arg, "--bench-frames") == 0) {
            long n = strtol(val, &end, 10);
            if (end == val || *end || n < 1 || n > MAX_BENCH_FRAMES)
                return mp_fail(err, MP_ERR_INPUT, "--bench-frames %s: expected a count in 1..%d",
                               val, MAX_BENCH_FRAMES);
            a->bench_frames = (int)n;
        } else if (strcmp(arg, "--demo") == 0) {
            a->demo = val;
        } else if (strcmp(arg, "--export") == 0) {
            a->export_csv = val;
        } else if (arg[0] == '-' && arg[1]) {
            return mp_fail(err, MP_ERR_INPUT, "unknown option %s\n%s", arg, usage);
        } else {
            if (a->n_inputs > 0)
                return mp_fail(err, MP_ERR_INPUT, "%s: one timeline at a time; use --compare %s",
                               arg, arg);
            a->inputs[a->n_inputs++] = arg;
        }
    }
    if (a->n_inputs == 0 && !a->demo) return mp_fail(err, MP_ERR_INPUT, "%s", usage);
    if (a->bench_frames && !a->size_given) {
        a->width = 1920;
        a->height = 1080;
    }
    return MP_OK;
}

/* Point at time t over the ROW-th row on screen (its compute lane). */
static void hover_at(struct viz_app *app, double t, int row)
{
    viz_app_frame(app); /* lay out first */
    if (app->geom.n_rows == 0) return;
    const struct viz_row *r = &app->geom.rows[row < app->geom.n_rows ? row : app->geom.n_rows - 1];
    viz_app_mouse_move(app, (int)floor(viz_x_of(&app->geom, &app->view, t)),
                       r->compute_y + r->compute_h / 2);
}

static int screenshot(struct viz_app *app, const struct args *a, struct mp_error *err)
{
    viz_app_set_cursor(app, a->at);
    if (!isnan(a->hover_t)) hover_at(app, a->hover_t, a->hover_row);
    const struct viz_draw_list *dl = viz_app_frame(app);
    struct viz_canvas cv = { .w = app->view.width, .h = app->view.height, .pitch = app->view.width };
    cv.px = mp_xmalloc((size_t)cv.w * (size_t)cv.h * sizeof *cv.px);
    viz_raster(dl, &cv, app->font);
    int rc = viz_sdl_save_png(&cv, a->screenshot, err);
    free(cv.px);
    return rc;
}

int main(int argc, char **argv)
{
    struct mp_error err = { 0 };
    struct args a;
    struct timeline tls[VIZ_MAX_PANELS];
    int n_tl = 0, rc = parse_args(argc, argv, &a, &err);
    double t_open = mp_wall_seconds(), c_open = (double)clock() / CLOCKS_PER_SEC;

    /* Load everything first: bad input must exit 2 before any window. */
    if (rc == MP_OK && a.demo) {
        timeline_init(&tls[n_tl]);
        rc = open_demo(a.demo, &tls[n_tl++], &err);
    }
    for (int i = 0; rc == MP_OK && i < a.n_inputs && n_tl < VIZ_MAX_PANELS; i++) {
        timeline_init(&tls[n_tl]);
        rc = open_input(a.inputs[i], a.sets, a.n_sets, &tls[n_tl++], &err);
    }
    t_open = mp_wall_seconds() - t_open;
    c_open = (double)clock() / CLOCKS_PER_SEC - c_open;
    if (rc == MP_OK && a.export_csv) {
        rc = timeline_write_csv(&tls[0], a.export_csv, &err);
    } else if (rc == MP_OK) {
        struct viz_scene sc = { .n = n_tl };
        for (int i = 0; i < n_tl; i++) sc.tl[i] = &tls[i];
        struct viz_app app;
        bool window = !a.screenshot && !a.bench_frames;
        double scale = a.scale > 0 ? a.scale : 1.0;
        struct viz_font font = { 0 };
        /* The window opens its font once it knows the display's scale. */
        if (!window) rc = viz_sdl_font_open(&font, (int)lround(VIZ_FONT_PX * scale), &err);
        if (rc == MP_OK) {
            viz_app_init(&app, &sc, window ? NULL : &font, a.width, a.height);
            viz_app_set_scale(&app, scale);
            if (a.view_t1 > a.view_t0) viz_view_fit(&app.view, &app.geom, a.view_t0, a.view_t1);
            if (a.screenshot) {
                rc = screenshot(&app, &a, &err);
            } else if (a.bench_frames) {
                /* The CPU time beside the wall clock: the machine may be shared. */
                printf("open: %.3f s wall, %.3f s CPU (%s: load, run and index)\n", t_open,
                       c_open, a.n_inputs ? a.inputs[0] : a.demo);
                viz_sdl_catch_signals();
                rc = viz_sdl_bench(&app, a.bench_frames, &err);
            } else {
                viz_sdl_catch_signals();
                if (a.view_t1 > a.view_t0) viz_view_fit(&app.view, &app.geom, a.view_t0, a.view_t1);
                rc = viz_sdl_run(&app, tls[0].name ? tls[0].name : "mpsim-view", a.scale, &err);
            }
            viz_app_release(&app);
            if (!window) viz_sdl_font_close(&font);
        }
    }
    for (int i = 0; i < n_tl; i++) timeline_release(&tls[i]);
    if (rc == MP_OK && viz_sdl_signal()) {
        fprintf(stderr, "mpsim-view: stopped by signal %d\n", viz_sdl_signal());
        return 128 + viz_sdl_signal();
    }
    if (rc != MP_OK) fprintf(stderr, "mpsim-view: %s\n", err.msg);
    return rc;
}
