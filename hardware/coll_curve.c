/* coll_curve.c — the measured collective table (hardware/collectives.csv,
 * read through sim/io/csv_reader.h) and busbw by message size; see
 * coll_curve.h. */
#include "coll_curve.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/csv_reader.h"

static const char *const op_names[N_CURVE_OPS] = { "all_reduce", "all_gather", "reduce_scatter" };

enum { COL_CURVE, COL_COLLECTIVE, COL_GPUS, COL_SIZE, COL_BUSBW, COL_SOURCE, N_COLS };
static const char *const col_names[N_COLS] = { "curve", "collective", "gpus", "size_bytes",
                                               "busbw_gbs", "source" };

/* Sizes stop where a scenario's do (2^60 bytes, sim/io/config.c). */
#define SIZE_MAX_BYTES 0x1p60

struct row {
    char curve[64];
    int op, gpus;
    double size, busbw;   /* bytes, bytes/s */
    long line;
};

struct reader {
    const char *path;
    struct csv_reader cr;
    struct mp_error *err;
    int col[N_COLS], n_header;
    struct row *rows;
    int n, cap;
};

static int header(struct reader *r, const struct csv_row *row)
{
    for (int k = 0; k < N_COLS; k++) r->col[k] = -1;
    for (int i = 0; i < row->n; i++) {
        int k = 0;
        while (k < N_COLS && strcmp(col_names[k], row->cell[i])) k++;
        char q[160];
        mp_quote(row->cell[i], strlen(row->cell[i]), 100, q, sizeof q);
        if (k == N_COLS)
            return csv_reader_fail(&r->cr, row->line, r->err, "header: expected the columns "
                                   "curve, collective, gpus, size_bytes, busbw_gbs, source, "
                                   "got '%s'", q);
        if (r->col[k] >= 0)
            return csv_reader_fail(&r->cr, row->line, r->err, "header: column %s: expected "
                                   "once, got it twice", col_names[k]);
        r->col[k] = i;
    }
    for (int k = 0; k < N_COLS; k++)
        if (r->col[k] < 0)
            return csv_reader_fail(&r->cr, row->line, r->err, "column %s: expected in the "
                                   "header row, got no such column", col_names[k]);
    r->n_header = row->n;
    return MP_OK;
}

static int row_check(struct reader *r, const struct csv_row *row)
{
    if (row->n != r->n_header)
        return csv_reader_fail(&r->cr, row->line, r->err, "expected %d columns as in the "
                               "header row, got %d", r->n_header, row->n);
    const char *cell[N_COLS];
    char q[N_COLS][160];
    for (int k = 0; k < N_COLS; k++) {
        cell[k] = row->cell[r->col[k]];
        mp_quote(cell[k], strlen(cell[k]), 100, q[k], sizeof q[k]);
    }
    struct row x = { .line = row->line };
    const char *name = cell[COL_CURVE];
    if (!*name || strlen(name) >= sizeof x.curve ||
        strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != strlen(name))
        return csv_reader_fail(&r->cr, row->line, r->err, "column curve: expected a name of "
                               "lower-case letters, digits, -, _ or . (1 to 63), got '%s'",
                               q[COL_CURVE]);
    snprintf(x.curve, sizeof x.curve, "%s", name);
    x.op = 0;
    while (x.op < N_CURVE_OPS && strcmp(op_names[x.op], cell[COL_COLLECTIVE])) x.op++;
    if (x.op == N_CURVE_OPS)
        return csv_reader_fail(&r->cr, row->line, r->err, "column collective: expected "
                               "all_reduce, all_gather or reduce_scatter, got '%s'",
                               q[COL_COLLECTIVE]);
    double v;
    if (!csv_cell_number(cell[COL_GPUS], &v) || v < 2 || v > 1e6 || v != floor(v))
        return csv_reader_fail(&r->cr, row->line, r->err, "column gpus: expected the whole "
                               "number of GPUs measured, 2 to 1000000, got '%s'", q[COL_GPUS]);
    x.gpus = (int)v;
    if (!csv_cell_number(cell[COL_SIZE], &v) || v < 1 || v > SIZE_MAX_BYTES || v != floor(v))
        return csv_reader_fail(&r->cr, row->line, r->err, "column size_bytes: expected a "
                               "whole number of bytes from 1 to 2^60, got '%s'", q[COL_SIZE]);
    x.size = v;
    /* 1e-6 GB/s (1 kB/s) at the least keeps S / busbw finite for any size. */
    if (!csv_cell_number(cell[COL_BUSBW], &v) || !(v > 0) || v < 1e-6 || v > 1e6)
        return csv_reader_fail(&r->cr, row->line, r->err, "column busbw_gbs: expected a "
                               "busbw in GB/s above 0, from 1e-6 to 1000000, got '%s'",
                               q[COL_BUSBW]);
    x.busbw = v * 1e9;
    if (!*cell[COL_SOURCE])
        return csv_reader_fail(&r->cr, row->line, r->err, "column source: expected where "
                               "the figure comes from, got an empty cell");
    int points = 0, counts = 0;
    const struct row *first = NULL;
    for (int i = 0; i < r->n; i++) {
        const struct row *o = &r->rows[i];
        if (strcmp(o->curve, x.curve)) continue;
        if (!first) first = o;
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(r->rows[j].curve, x.curve) && r->rows[j].gpus == o->gpus;
        counts += !seen;
        if (o->gpus != x.gpus || o->op != x.op) continue;
        points++;
        if (o->size >= x.size)
            return csv_reader_fail(&r->cr, row->line, r->err, "column size_bytes: expected "
                                   "sizes increasing down the rows of curve %s %s on %d GPUs "
                                   "(line %ld has %.0f), got '%s'", x.curve, op_names[x.op],
                                   x.gpus, o->line, o->size, q[COL_SIZE]);
    }
    /* The curve's first row names the GPU count it was measured on; rows on
     * fewer GPUs are ceilings for groups of that many (coll_curve.h). */
    if (first && x.gpus > first->gpus)
        return csv_reader_fail(&r->cr, row->line, r->err, "column gpus: expected at most %d, "
                               "the count of curve %s's first row (line %ld; rows on fewer "
                               "GPUs are ceilings for smaller groups), got '%s'", first->gpus,
                               x.curve, first->line, q[COL_GPUS]);
    if (points >= COLL_CURVE_MAX_POINTS)
        return csv_reader_fail(&r->cr, row->line, r->err, "curve %s %s: expected at most %d "
                               "sizes, got more", x.curve, op_names[x.op],
                               COLL_CURVE_MAX_POINTS);
    bool new_count = true;
    for (int i = 0; i < r->n && new_count; i++)
        new_count = strcmp(r->rows[i].curve, x.curve) || r->rows[i].gpus != x.gpus;
    if (new_count && counts >= COLL_CURVE_MAX_SETS)
        return csv_reader_fail(&r->cr, row->line, r->err, "curve %s: expected at most %d GPU "
                               "counts, got more", x.curve, COLL_CURVE_MAX_SETS);
    MP_GROW(r->rows, r->cap, r->n + 1);
    r->rows[r->n++] = x;
    return MP_OK;
}

/* Every curve has all-reduce rows on its measured count (its first row's):
 * the other collectives and the smaller groups are priced on them. */
static int check_complete(struct reader *r)
{
    for (int i = 0; i < r->n; i++) {
        int j0 = 0;
        while (strcmp(r->rows[j0].curve, r->rows[i].curve)) j0++;
        bool ar = false;
        for (int j = j0; j < r->n && !ar; j++)
            ar = !strcmp(r->rows[j].curve, r->rows[i].curve) && r->rows[j].op == CURVE_ALL_REDUCE &&
                 r->rows[j].gpus == r->rows[j0].gpus;
        if (!ar)
            return mp_fail(r->err, MP_ERR_INPUT, "%s:%ld: curve %s has no all_reduce row on "
                           "%d GPUs: expected every curve to have all_reduce rows on the count "
                           "of its first row (all_gather, reduce_scatter and smaller groups are "
                           "priced on them)", r->path, r->rows[i].line, r->rows[i].curve,
                           r->rows[j0].gpus);
    }
    return MP_OK;
}

int coll_curve_load(struct coll_curve *c, const char *path, const char *name,
                    struct mp_error *err)
{
    memset(c, 0, sizeof *c);
    struct reader r = { .path = path, .err = err };
    struct csv_reader_opts o = { .comments = true };
    struct mp_error e2;
    if (csv_reader_open(&r.cr, path, &o, &e2))
        return mp_fail(err, MP_ERR_INPUT, "%s (the collective busbw table)", e2.msg);
    struct csv_row row;
    int got, rc = MP_OK;
    bool have_header = false;
    while (!rc && (got = csv_reader_next(&r.cr, &row, &e2)) > 0) {
        rc = have_header ? row_check(&r, &row) : header(&r, &row);
        have_header = true;
    }
    if (!rc && got < 0) {
        if (err) *err = e2;
        rc = MP_ERR_INPUT;
    }
    csv_reader_close(&r.cr);
    if (!rc && !have_header)
        rc = mp_fail(err, MP_ERR_INPUT, "%s: empty; expected a header row naming the columns",
                     path);
    if (!rc) rc = check_complete(&r);
    if (!rc) {
        for (int i = 0; i < r.n; i++) {
            const struct row *x = &r.rows[i];
            if (strcmp(x->curve, name)) continue;
            if (!c->present) c->gpus = x->gpus;
            c->present = true;
            struct coll_curve_points *p = &c->op[x->op];
            if (x->gpus != c->gpus) {
                int k = 0;
                while (k < c->n_caps && c->cap_gpus[k] != x->gpus) k++;
                if (k == c->n_caps) c->cap_gpus[c->n_caps++] = x->gpus;
                p = &c->cap[k][x->op];
            }
            p->size[p->n] = x->size;
            p->busbw[p->n] = x->busbw;
            p->n++;
        }
        if (!c->present) {
            char known[512] = "";
            for (int i = 0; i < r.n; i++) {
                bool first = true;
                for (int j = 0; j < i && first; j++) first = strcmp(r.rows[j].curve, r.rows[i].curve) != 0;
                if (first && strlen(known) + strlen(r.rows[i].curve) + 3 < sizeof known) {
                    if (*known) strcat(known, ", ");
                    strcat(known, r.rows[i].curve);
                }
            }
            char q[160];
            mp_quote(name, strlen(name), 100, q, sizeof q);
            rc = mp_fail(err, MP_ERR_INPUT, "no curve '%s' in %s (known: %s)", q, path,
                         *known ? known : "none");
        } else {
            snprintf(c->name, sizeof c->name, "%s", name);
        }
    }
    free(r.rows);
    if (rc) memset(c, 0, sizeof *c);
    return rc;
}

int coll_curve_load_default(struct coll_curve *c, const char *name, struct mp_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/collectives.csv", mp_data_dir());
    return coll_curve_load(c, path, name, err);
}

/* busbw of one collective's own points (coll_curve.h): the time S/busbw
 * linear in S between neighbours; outside the points the nearest busbw
 * (ceiling) or, for the all-reduce curve below its smallest point, the
 * smallest point's time (floor). */
static double points_busbw(const struct coll_curve_points *p, double bytes, bool floor_below)
{
    if (bytes <= p->size[0])
        return floor_below ? p->busbw[0] * bytes / p->size[0] : p->busbw[0];
    for (int i = 0; i + 1 < p->n; i++)
        if (bytes <= p->size[i + 1]) {
            double t0 = p->size[i] / p->busbw[i], t1 = p->size[i + 1] / p->busbw[i + 1];
            double u = (bytes - p->size[i]) / (p->size[i + 1] - p->size[i]);
            return bytes / (t0 + (t1 - t0) * u);
        }
    return p->busbw[p->n - 1];
}

double coll_curve_cap(const struct coll_curve *c, enum curve_op op, int n, double bytes)
{
    if (!c->present || n >= c->gpus || c->n_caps == 0) return INFINITY;
    /* The largest count measured at or below n; below them all, the smallest. */
    int best = -1, least = 0;
    for (int k = 0; k < c->n_caps; k++) {
        if (c->cap_gpus[k] <= n && (best < 0 || c->cap_gpus[k] > c->cap_gpus[best])) best = k;
        if (c->cap_gpus[k] < c->cap_gpus[least]) least = k;
    }
    const struct coll_curve_points *p = &c->cap[best >= 0 ? best : least][op];
    return p->n > 0 ? points_busbw(p, bytes, false) : INFINITY;
}

double coll_curve_busbw(const struct coll_curve *c, enum curve_op op, double bytes)
{
    if (!c->present || !(bytes > 0)) return 0;
    double b = points_busbw(&c->op[CURVE_ALL_REDUCE], bytes, true);
    if (op != CURVE_ALL_REDUCE && c->op[op].n > 0) {
        double cap = points_busbw(&c->op[op], bytes, false);
        if (cap < b) b = cap;
    }
    return b;
}
