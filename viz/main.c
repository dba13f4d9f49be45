/* main.c — mpsim-view: read the arguments, load every timeline (before any
 * window exists, so bad input exits 2 with nothing opened), then either
 * write a screenshot, run the benchmark or open the window.
 *
 *   mpsim-view (TIMELINE.csv | SCENARIO.ini [--set k=v]...) [--compare OTHER]...
 *              [--screenshot OUT.png [--at TIME] [--view A..B] [--size WxH]] [--bench-frames N]
 *              [--demo gpipe|1f1b|synthetic:OPS] [--export OUT.csv] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "sim/common.h"
#include "layout.h"
#include "render_sdl.h"
#include "sim/io/config.h"
#include "sim/train/report.h"
#include "sim/serve/serve.h"
#include "sim/train/sim.h"
#include "timeline.h"

#define MAX_SETS 64

static const char usage[] =
    "usage: mpsim-view (TIMELINE.csv | SCENARIO.ini [--set k=v]...) [--compare OTHER]...\n"
    "                  [--screenshot OUT.png [--at TIME] [--size WxH]] [--bench-frames N]\n"
    "                  [--demo gpipe|1f1b|synthetic:OPS] [--export OUT.csv]\n"
    "  TIMELINE.csv   a timeline written by `mpsim run X.ini --timeline OUT.csv`\n"
    "  --compare F    stack another run on the same time axis (up to 3)\n"
    "  --screenshot   render without a display and write a PNG\n"
    "  --at TIME      replay cursor for the screenshot: 12ms, 3.5us, 0.012 (seconds)\n"
    "  --view A..B    start with this time range across the window (100ms..100.5ms)\n"
    "  --size WxH     window or image size (default 1600x900; bench 1920x1080)\n"
    "  --bench-frames N  draw N frames offscreen and print frames/s\n"
    "  --demo NAME    a built-in timeline: gpipe or 1f1b (p=4, m=8, t_f=1ms, t_b=2ms),\n"
    "                 or synthetic:OPS (64 chips, OPS ops) for benchmarks\n"
    "  --export F     write the (first) timeline as CSV and exit\n"
    "Keys in the window: press ? (see viz/README.md).\n";

/* The seam for "opens a scenario": run SCENARIO.ini with its --set
 * overrides in-process through the simulator library and fill `out`
 * (timeline_add_op / _add_mem / _set_meta, then timeline_finish). */
static int open_scenario(const char *path, char *const *sets, int n_sets, struct timeline *out,
                         struct mp_error *err)
{
    struct config cfg;
    config_defaults(&cfg);
    int rc = config_load(&cfg, path, err);
    for (int i = 0; !rc && i < n_sets; i++) rc = config_set(&cfg, sets[i], "--set", err);
    if (rc) return rc;
    /* The timeline CSV is the contract between simulator and viewer; going
     * through it in memory keeps one reader for files and scenarios alike. */
    char *buf = NULL;
    size_t len = 0;
    if (cfg.inference.present) { /* a serving run: passes of continuous batching */
        struct serve sv;
        rc = serve_run_recorded(&sv, &cfg, true, err);
        FILE *f = rc ? NULL : open_memstream(&buf, &len);
        if (f) {
            serve_timeline_csv(f, &sv);
            fclose(f);
        } else if (!rc) {
            rc = mp_fail(err, MP_ERR_INTERNAL, "%s: out of memory", path);
        }
        serve_release(&sv);
        if (!rc) rc = timeline_read_csv_buffer(out, path, buf, len, err);
        free(buf);
        return rc;
    }
    struct sim s;
    struct sim_options opts = { .record_memory = true };
    rc = sim_run(&s, &cfg, &opts, err);
    if (rc) {
        sim_release(&s);
        return rc;
    }
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        sim_release(&s);
        return mp_fail(err, MP_ERR_INTERNAL, "%s: out of memory", path);
    }
    report_timeline_csv(f, &s);
    fclose(f);
    sim_release(&s);
    rc = timeline_read_csv_buffer(out, path, buf, len, err);
    free(buf);
    return rc;
}

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
    if (ends_with(path, ".ini")) return open_scenario(path, sets, n_sets, tl, err);
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
    int width, height, bench_frames;
    bool size_given;
};

static int parse_args(int argc, char **argv, struct args *a, struct mp_error *err)
{
    memset(a, 0, sizeof *a);
    a->at = INFINITY;
    a->width = 1600;
    a->height = 900;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = strcmp(arg, "--compare") == 0 || strcmp(arg, "--set") == 0 ||
                     strcmp(arg, "--screenshot") == 0 || strcmp(arg, "--at") == 0 ||
                     strcmp(arg, "--size") == 0 || strcmp(arg, "--bench-frames") == 0 ||
                     strcmp(arg, "--demo") == 0 || strcmp(arg, "--export") == 0 ||
                     strcmp(arg, "--view") == 0;
        if (takes && !val) return mp_fail(err, MP_ERR_INPUT, "%s needs a value\n%s", arg, usage);
        if (takes) i++;
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(arg, "--compare") == 0) {
            if (a->n_inputs == 0 && !a->demo)
                return mp_fail(err, MP_ERR_INPUT, "--compare %s: give the main timeline first", val);
            if (a->n_inputs >= VIZ_MAX_PANELS)
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
            char x;
            if (sscanf(val, "%d%c%d", &a->width, &x, &a->height) != 3 || x != 'x' ||
                a->width < 320 || a->height < 200 || a->width > 16384 || a->height > 16384)
                return mp_fail(err, MP_ERR_INPUT, "--size %s: expected WxH such as 1920x1080 "
                               "(at least 320x200)", val);
            a->size_given = true;
        } else if (strcmp(arg, "--bench-frames") == 0) {
            a->bench_frames = atoi(val);
            if (a->bench_frames < 1)
                return mp_fail(err, MP_ERR_INPUT, "--bench-frames %s: expected a count >= 1", val);
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

static int screenshot(struct viz_app *app, const char *path, double at, struct mp_error *err)
{
    viz_app_set_cursor(app, at);
    const struct viz_draw_list *dl = viz_app_frame(app);
    struct viz_canvas cv = { .w = app->view.width, .h = app->view.height, .pitch = app->view.width };
    cv.px = mp_xmalloc((size_t)cv.w * (size_t)cv.h * sizeof *cv.px);
    viz_raster(dl, &cv, app->font);
    int rc = viz_sdl_save_png(&cv, path, err);
    free(cv.px);
    return rc;
}

int main(int argc, char **argv)
{
    struct mp_error err = { 0 };
    struct args a;
    struct timeline tls[VIZ_MAX_PANELS + 1];
    int n_tl = 0, rc = parse_args(argc, argv, &a, &err);

    /* Load everything first: bad input must exit 2 before any window. */
    if (rc == MP_OK && a.demo) {
        timeline_init(&tls[n_tl]);
        rc = open_demo(a.demo, &tls[n_tl++], &err);
    }
    for (int i = 0; rc == MP_OK && i < a.n_inputs && n_tl < VIZ_MAX_PANELS; i++) {
        timeline_init(&tls[n_tl]);
        rc = open_input(a.inputs[i], a.sets, a.n_sets, &tls[n_tl++], &err);
    }
    if (rc == MP_OK && a.export_csv) {
        rc = timeline_write_csv(&tls[0], a.export_csv, &err);
    } else if (rc == MP_OK) {
        struct viz_font font;
        rc = viz_sdl_font_open(&font, 12, &err);
        if (rc == MP_OK) {
            struct viz_scene sc = { .n = n_tl };
            for (int i = 0; i < n_tl; i++) sc.tl[i] = &tls[i];
            struct viz_app app;
            viz_app_init(&app, &sc, &font, a.width, a.height);
            if (a.view_t1 > a.view_t0) viz_view_fit(&app.view, &app.geom, a.view_t0, a.view_t1);
            if (a.screenshot) rc = screenshot(&app, a.screenshot, a.at, &err);
            else if (a.bench_frames) rc = viz_sdl_bench(&app, a.bench_frames, &err);
            else rc = viz_sdl_run(&app, tls[0].name ? tls[0].name : "mpsim-view", &err);
            viz_app_release(&app);
            viz_sdl_font_close(&font);
        }
    }
    for (int i = 0; i < n_tl; i++) timeline_release(&tls[i]);
    if (rc != MP_OK) fprintf(stderr, "mpsim-view: %s\n", err.msg);
    return rc;
}
