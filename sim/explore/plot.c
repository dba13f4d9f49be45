/* plot.c — a sweep CSV as a PLplot chart; see plot.h. */
#include "plot.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plplot.h>

#include "sim/io/outfile.h"

/* Our own colour map 0: background white, axes black, then eight line
 * colours that stay apart on white (Okabe–Ito plus two), red last for
 * infeasible points. */
enum { COL_BG, COL_FG, COL_LINE0, N_LINE_COLS = 8, COL_BAD = COL_LINE0 + N_LINE_COLS, N_COLS };
static const PLINT pal_r[N_COLS] = { 255, 0, 0, 230, 86, 0, 240, 0, 204, 120, 213 };
static const PLINT pal_g[N_COLS] = { 255, 0, 114, 159, 180, 158, 228, 0, 121, 120, 0 };
static const PLINT pal_b[N_COLS] = { 255, 0, 178, 0, 233, 115, 66, 0, 167, 120, 0 };

/* Hershey symbol codes for the markers, one per line. */
static const PLINT marks[N_LINE_COLS] = { 840, 841, 842, 843, 844, 845, 846, 847 };

struct series {
    const char *name; /* the --by value, or NULL */
    double *x, *y;    /* best feasible y per x, sorted by x */
    int n;
};

static const char *device_for(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot) return NULL;
    if (!strcmp(dot, ".png")) return "pngcairo";
    if (!strcmp(dot, ".svg")) return "svgcairo";
    if (!strcmp(dot, ".pdf")) return "pdfcairo";
    return NULL;
}

static int numeric_col(const struct sweep_table *t, int c, const char *flag, struct mp_error *err)
{
    for (int r = 0; r < t->n_rows; r++) {
        const char *s = t->cell[r][c];
        if (*s && isnan(sweep_table_num(t, r, c)))
            return mp_fail(err, MP_ERR_INPUT, "%s %s: row %d has '%s', not a number; %s needs "
                           "a numeric column (use a text column as --by)", flag, t->col[c],
                           r + 2, s, flag);
    }
    return MP_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* For each distinct x of the rows in `rows`, the best feasible y. */
static void build_series(const struct sweep_table *t, const int *rows, int n, int cx, int cy,
                         int sense, struct series *s)
{
    double *xs = mp_xmalloc((size_t)(n ? n : 1) * sizeof *xs);
    int nx = 0;
    for (int i = 0; i < n; i++)
        if (sweep_table_feasible(t, rows[i]) && !isnan(sweep_table_num(t, rows[i], cy)))
            xs[nx++] = sweep_table_num(t, rows[i], cx);
    qsort(xs, (size_t)nx, sizeof *xs, cmp_double);
    s->x = mp_xmalloc((size_t)(nx ? nx : 1) * sizeof *s->x);
    s->y = mp_xmalloc((size_t)(nx ? nx : 1) * sizeof *s->y);
    s->n = 0;
    for (int k = 0; k < nx; k++) {
        if (k > 0 && xs[k] == xs[k - 1]) continue;
        double best = NAN;
        for (int i = 0; i < n; i++) {
            int r = rows[i];
            double y = sweep_table_num(t, r, cy);
            if (!sweep_table_feasible(t, r) || isnan(y) || sweep_table_num(t, r, cx) != xs[k])
                continue;
            if (isnan(best) || (sense > 0 ? y > best : y < best)) best = y;
        }
        s->x[s->n] = xs[k];
        s->y[s->n++] = best;
    }
    free(xs);
}

static double axis_value(double v, bool log) { return log ? log10(v) : v; }

/* PLplot reports errors through plabort (and keeps going) or plexit; the
 * first message is kept here, so that a chart PLplot could not draw is an
 * error and never a file written with exit 0 (issue 16). PLplot keeps global
 * state anyway: one plot at a time (plot.h). */
static char pl_error[256];

static void on_pl_abort(PLCHAR_VECTOR msg)
{
    if (!pl_error[0]) snprintf(pl_error, sizeof pl_error, "%s", msg ? msg : "?");
}

static int on_pl_exit(PLCHAR_VECTOR msg)
{
    on_pl_abort(msg);
    return 0;
}

int plot_sweep(const struct sweep_table *t, const struct plot_options *opt,
               struct mp_error *err)
{
    const char *dev = device_for(opt->out);
    if (!dev)
        return mp_fail(err, MP_ERR_INPUT, "--out %s: expected a file name ending in .png, .svg "
                       "or .pdf", opt->out);
    int cx = sweep_table_need(t, opt->x, "--x", err);
    if (cx < 0) return MP_ERR_INPUT;
    int cy = sweep_table_need(t, opt->y, "--y", err);
    if (cy < 0) return MP_ERR_INPUT;
    int cb = -1;
    if (opt->by && (cb = sweep_table_need(t, opt->by, "--by", err)) < 0) return MP_ERR_INPUT;
    int rc;
    if ((rc = numeric_col(t, cx, "--x", err)) || (rc = numeric_col(t, cy, "--y", err))) return rc;

    /* Ranges over every drawable point, feasible or not. */
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    int drawable = 0;
    for (int r = 0; r < t->n_rows; r++) {
        double x = sweep_table_num(t, r, cx), y = sweep_table_num(t, r, cy);
        if (isnan(x) || (opt->log_x && x <= 0)) continue;
        x0 = fmin(x0, x), x1 = fmax(x1, x);
        if (!isnan(y) && !(opt->log_y && y <= 0)) {
            y0 = fmin(y0, y), y1 = fmax(y1, y);
            drawable++;
        }
    }
    if (!drawable)
        return mp_fail(err, MP_ERR_INPUT, "plot: no row has numbers in both %s and %s",
                       t->col[cx], t->col[cy]);
    x0 = axis_value(x0, opt->log_x), x1 = axis_value(x1, opt->log_x);
    y0 = axis_value(y0, opt->log_y), y1 = axis_value(y1, opt->log_y);
    /* Margins, and room for a range of one value. */
    double dx = x1 > x0 ? (x1 - x0) * 0.05 : fmax(fabs(x0) * 0.1, 1);
    double dy = y1 > y0 ? (y1 - y0) * 0.08 : fmax(fabs(y0) * 0.1, 1);
    x0 -= dx, x1 += dx, y0 -= dy, y1 += dy;
    if (!isfinite(x0) || !isfinite(x1) || !isfinite(y0) || !isfinite(y1))
        return mp_fail(err, MP_ERR_INPUT, "plot: %s or %s spans more than a double can hold "
                       "with its margins (values near ±1.8e308): expected finite ranges, or "
                       "--log", t->col[cx], t->col[cy]);
    if (!opt->log_y && y0 < 0 && y0 + dy >= 0) y0 = 0 - dy * 0.5;

    /* Lines: the distinct --by values in order of first appearance. */
    int n_series = 0;
    struct series *ser = mp_xcalloc((size_t)(t->n_rows ? t->n_rows : 1), sizeof *ser);
    int *rows = mp_xmalloc((size_t)(t->n_rows ? t->n_rows : 1) * sizeof *rows);
    int sense = sweep_metric_sense(t->col[cy]);
    bool more_keys = false;
    for (int r = 0; r < t->n_rows; r++) {
        const char *name = cb >= 0 ? t->cell[r][cb] : NULL;
        int k = 0;
        while (k < n_series && name && strcmp(ser[k].name, name)) k++;
        if (k < n_series) continue;
        if (!name && n_series) continue;
        int n = 0;
        for (int i = 0; i < t->n_rows; i++)
            if (!name || !strcmp(t->cell[i][cb], name)) rows[n++] = i;
        ser[n_series].name = name;
        build_series(t, rows, n, cx, cy, sense, &ser[n_series]);
        int fe = 0;
        for (int i = 0; i < n; i++) fe += sweep_table_feasible(t, rows[i]);
        if (fe > ser[n_series].n) more_keys = true;
        n_series++;
    }
    free(rows);

    /* PLplot writes into memory (open_memstream; plend closes it), mpsim
     * writes the file through outfile.h. PLplot's own messages go to a
     * muted stderr while it draws: its errors come back as pl_error. */
    char *image = NULL;
    size_t image_len = 0;
    FILE *mem = open_memstream(&image, &image_len);
    if (!mem) {
        for (int k = 0; k < n_series; k++) free(ser[k].x), free(ser[k].y);
        free(ser);
        return mp_fail(err, MP_ERR_INTERNAL, "plot: out of memory");
    }
    pl_error[0] = '\0';
    fflush(stderr);
    int saved_err = dup(STDERR_FILENO), null_fd = open("/dev/null", O_WRONLY);
    if (saved_err >= 0 && null_fd >= 0) dup2(null_fd, STDERR_FILENO);
    if (null_fd >= 0) close(null_fd);
    plsabort(on_pl_abort);
    plsexit(on_pl_exit);
    char geometry[64];
    snprintf(geometry, sizeof geometry, "%dx%d", opt->width > 0 ? opt->width : 1000,
             opt->height > 0 ? opt->height : 700);
    plsdev(dev);
    plsfile(mem);
    plsetopt("geometry", geometry);
    plscmap0(pal_r, pal_g, pal_b, N_COLS);
    plinit();
    plcol0(COL_FG);
    plschr(0, 1.1);
    int axis = (opt->log_x ? 10 : 0) + (opt->log_y ? 20 : 0) + 2; /* + grid */
    plenv(x0, x1, y0, y1, 0, axis);
    char title[256], sub[256];
    if (opt->title) snprintf(title, sizeof title, "%s", opt->title);
    else snprintf(title, sizeof title, "%s against %s", t->col[cy], t->col[cx]);
    pllab(t->col[cx], t->col[cy], title);
    if (more_keys) {
        snprintf(sub, sizeof sub, "best %s over the other varied keys at each point",
                 t->col[cy]);
        plschr(0, 0.8);
        plmtex("t", 0.6, 0.5, 0.5, sub);
        plschr(0, 1.1);
    }

    plwidth(2);
    for (int k = 0; k < n_series; k++) {
        struct series *s = &ser[k];
        for (int i = 0; i < s->n; i++) {
            s->x[i] = axis_value(s->x[i], opt->log_x);
            s->y[i] = axis_value(s->y[i], opt->log_y);
        }
        plcol0(COL_LINE0 + k % N_LINE_COLS);
        if (s->n > 1) plline(s->n, s->x, s->y);
        plssym(0, 1.2);
        plsym(s->n, s->x, s->y, marks[k % N_LINE_COLS]);
    }
    /* Infeasible points: red ×, at their y when they have one. */
    int bad = 0;
    plcol0(COL_BAD);
    for (int r = 0; r < t->n_rows; r++) {
        if (sweep_table_feasible(t, r)) continue;
        double x = sweep_table_num(t, r, cx), y = sweep_table_num(t, r, cy);
        if (isnan(x) || (opt->log_x && x <= 0)) continue;
        PLFLT px = axis_value(x, opt->log_x);
        PLFLT py = isnan(y) || (opt->log_y && y <= 0) ? y0 : axis_value(y, opt->log_y);
        plssym(0, 1.6);
        plpoin(1, &px, &py, 5); /* PLplot's × */
        bad++;
    }
    plwidth(1);

    /* Legend: one entry per line, and one for the red ×. */
    int n_leg = n_series + (bad ? 1 : 0);
    if (n_leg > 0 && (n_series > 1 || bad)) {
        PLINT *lopt = mp_xcalloc((size_t)n_leg, sizeof(PLINT));
        PLINT *tcol = mp_xcalloc((size_t)n_leg, sizeof(PLINT));
        PLINT *lcol = mp_xcalloc((size_t)n_leg, sizeof(PLINT));
        PLINT *lsty = mp_xcalloc((size_t)n_leg, sizeof(PLINT));
        PLFLT *lwid = mp_xcalloc((size_t)n_leg, sizeof(PLFLT));
        PLINT *scol = mp_xcalloc((size_t)n_leg, sizeof(PLINT));
        PLFLT *ssca = mp_xcalloc((size_t)n_leg, sizeof(PLFLT));
        PLINT *snum = mp_xcalloc((size_t)n_leg, sizeof(PLINT));
        const char **text = mp_xcalloc((size_t)n_leg, sizeof(char *));
        const char **sym = mp_xcalloc((size_t)n_leg, sizeof(char *));
        char (*labels)[160] = mp_xcalloc((size_t)n_leg, sizeof *labels);
        static const char *const sym_text[N_LINE_COLS] = {
            "#(840)", "#(841)", "#(842)", "#(843)", "#(844)", "#(845)", "#(846)", "#(847)" };
        for (int k = 0; k < n_leg; k++) {
            bool is_bad = k == n_series;
            lopt[k] = is_bad ? PL_LEGEND_SYMBOL : PL_LEGEND_LINE | PL_LEGEND_SYMBOL;
            tcol[k] = COL_FG;
            lcol[k] = is_bad ? COL_BAD : COL_LINE0 + k % N_LINE_COLS;
            lsty[k] = 1;
            lwid[k] = 2;
            scol[k] = lcol[k];
            ssca[k] = 1;
            snum[k] = 1;
            sym[k] = is_bad ? "x" : sym_text[k % N_LINE_COLS];
            if (is_bad) snprintf(labels[k], sizeof labels[k], "infeasible");
            else if (ser[k].name) snprintf(labels[k], sizeof labels[k], "%s=%s", t->col[cb],
                                           ser[k].name);
            else snprintf(labels[k], sizeof labels[k], "%s", t->col[cy]);
            text[k] = labels[k];
        }
        PLFLT lw, lh;
        plschr(0, 0.9);
        pllegend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
                 PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE, 0.02, 0.02, 0.08,
                 COL_BG, COL_FG, 1, 0, 0, n_leg, lopt, 1.0, 1.0, 2.0, 0.0, tcol, text, NULL,
                 NULL, NULL, NULL, lcol, lsty, lwid, scol, ssca, snum, sym);
        free(lopt), free(tcol), free(lcol), free(lsty), free(lwid), free(scol), free(ssca);
        free(snum), free(text), free(sym), free(labels);
    }
    plend(); /* closes `mem`: image and image_len hold the file */
    fflush(stderr);
    if (saved_err >= 0) {
        dup2(saved_err, STDERR_FILENO);
        close(saved_err);
    }
    for (int k = 0; k < n_series; k++) free(ser[k].x), free(ser[k].y);
    free(ser);

    rc = MP_OK;
    if (pl_error[0]) {
        /* One line, whatever PLplot wrote. */
        for (char *c = pl_error; *c; c++)
            if (*c == '\n' || *c == '\r') *c = ' ';
        rc = mp_fail(err, MP_ERR_INTERNAL, "%s: PLplot could not draw the chart (driver %s): %s; "
                     "nothing written", opt->out, dev, pl_error);
    } else if (image_len == 0) {
        rc = mp_fail(err, MP_ERR_INTERNAL, "%s: PLplot wrote nothing (driver %s)", opt->out, dev);
    } else {
        struct outfile out;
        rc = outfile_open(&out, opt->out, err);
        if (!rc && fwrite(image, 1, image_len, out.f) != image_len) {
            outfile_abort(&out);
            rc = mp_fail(err, MP_ERR_INTERNAL, "%s: write failed, nothing written: %s",
                         opt->out, strerror(errno));
        } else if (!rc) {
            rc = outfile_commit(&out, err);
        }
    }
    free(image);
    return rc;
}
