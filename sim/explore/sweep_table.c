/* sweep_table.c — a sweep CSV read back (libcsv), and the two questions
 * people ask of it: which configurations are best and what their neighbours
 * lost by (--best), and which trade one metric for another (--pareto).
 * See sweep_table.h. Working from the file, not from memory, means a resumed
 * sweep, or a CSV from yesterday, answers the same way. */
#include "sweep_table.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/csv_reader.h"

void sweep_values_free(char **values, int n)
{
    for (int i = 0; i < n; i++) free(values[i]);
    free(values);
}

/* ---- parsing ------------------------------------------------------------- */

int sweep_csv_split(const char *line, size_t len, char ***cells, int *n)
{
    return csv_split_line(line, len, cells, n);
}

/* A row's cells, copied out of the reader's (which reuses them). */
static char **copy_row(const struct csv_row *row)
{
    char **c = mp_xmalloc((size_t)(row->n ? row->n : 1) * sizeof *c);
    for (int i = 0; i < row->n; i++) c[i] = mp_xstrdup(row->cell[i]);
    return c;
}

int sweep_table_load(struct sweep_table *t, const char *path, struct mp_error *err)
{
    memset(t, 0, sizeof *t);
    struct csv_reader r;
    int rc = csv_reader_open(&r, path, NULL, err);
    if (rc) return rc;
    struct csv_row row;
    int got = 0, cap = 0;
    while ((got = csv_reader_next(&r, &row, err)) > 0) {
        if (!t->col) {
            /* The header: every name once, or --x, --by and the reader would
             * silently take the first of two columns. */
            for (int i = 0; i < row.n && !rc; i++)
                for (int j = 0; j < i && !rc; j++)
                    if (!strcmp(row.cell[i], row.cell[j])) {
                        char q[128];
                        mp_quote(row.cell[i], strlen(row.cell[i]), 60, q, sizeof q);
                        rc = csv_reader_fail(&r, row.line, err, "header: column '%s' appears "
                                             "twice (columns %d and %d): expected each name "
                                             "once", q, j + 1, i + 1);
                    }
            if (rc) break;
            t->col = copy_row(&row);
            t->n_cols = row.n;
            continue;
        }
        if (row.n != t->n_cols) {
            rc = csv_reader_fail(&r, row.line, err, "%d cells, but the header has %d: expected "
                                 "one cell per column%s", row.n, t->n_cols,
                                 row.n > t->n_cols ? " (an unquoted comma?)" : "");
            break;
        }
        MP_GROW(t->cell, cap, t->n_rows + 1);
        t->cell[t->n_rows++] = copy_row(&row);
    }
    if (!rc && got < 0) rc = MP_ERR_INPUT;
    if (!rc && !t->col) rc = mp_fail(err, MP_ERR_INPUT, "%s: empty; expected a header row and "
                                     "rows", path);
    csv_reader_close(&r);
    if (!t->cell) t->cell = mp_xmalloc(sizeof *t->cell);
    if (rc) sweep_table_release(t);
    return rc;
}

void sweep_table_release(struct sweep_table *t)
{
    for (int r = 0; r < t->n_rows; r++) sweep_values_free(t->cell[r], t->n_cols);
    free(t->cell);
    sweep_values_free(t->col, t->n_cols);
    memset(t, 0, sizeof *t);
}

int sweep_table_col(const struct sweep_table *t, const char *name)
{
    for (int c = 0; c < t->n_cols; c++)
        if (!strcmp(t->col[c], name)) return c;
    return -1;
}

int sweep_table_need(const struct sweep_table *t, const char *name, const char *flag,
                     struct mp_error *err)
{
    int c = sweep_table_col(t, name);
    if (c >= 0) return c;
    /* Also match a bare key name to its dotted column ("pp" → parallel.pp). */
    int bare = -1, hits = 0;
    for (int i = 0; i < t->n_cols; i++) {
        const char *dot = strchr(t->col[i], '.');
        if (dot && !strcmp(dot + 1, name)) bare = i, hits++;
    }
    if (hits == 1) return bare;
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: no column '%s'", flag, name);
    size_t best_d = (size_t)-1;
    int best = -1;
    for (int i = 0; i < t->n_cols; i++) {
        size_t d = mp_edit_distance(name, t->col[i]);
        if (d < best_d) best_d = d, best = i;
    }
    if (best >= 0 && best_d <= 1 + strlen(name) / 4)
        n += snprintf(msg + n, sizeof msg - (size_t)n, " (did you mean '%s'?)", t->col[best]);
    n += snprintf(msg + n, sizeof msg - (size_t)n, "; columns are");
    for (int i = 0; i < t->n_cols && n > 0 && (size_t)n < sizeof msg; i++)
        n += snprintf(msg + n, sizeof msg - (size_t)n, "%s %s", i ? "," : "", t->col[i]);
    mp_fail(err, MP_ERR_INPUT, "%s", msg);
    return -1;
}

double sweep_table_num(const struct sweep_table *t, int row, int col)
{
    const char *s = t->cell[row][col];
    char *end;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return NAN;
    double v = strtod(s, &end);
    return end != s && !*end && isfinite(v) ? v : NAN; /* no inf, nan or overflow */
}

bool sweep_table_feasible(const struct sweep_table *t, int row)
{
    int c = sweep_table_col(t, "feasible");
    return c >= 0 && !strcmp(t->cell[row][c], "true");
}

int sweep_metric_sense(const char *column)
{
    return !strcmp(column, "tokens_per_s") || !strcmp(column, "mfu") ||
                   !strcmp(column, "requests_completed") || !strcmp(column, "requests_per_s") ||
                   !strcmp(column, "goodput_frac") || !strcmp(column, "goodput_rps")
               ? +1 : -1;
}

/* ---- --best and --pareto ------------------------------------------------- */

/* Feasible rows with a number in `col`, best first (ties: grid order). */
struct ranked {
    int row;
    double v;
};

static int ranked_sense;

static int ranked_cmp(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;
    if (a->v != b->v) return (a->v > b->v) == (ranked_sense > 0) ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

static int rank_rows(const struct sweep_table *t, int col, int sense, struct ranked **out)
{
    struct ranked *r = mp_xmalloc((size_t)(t->n_rows ? t->n_rows : 1) * sizeof *r);
    int n = 0;
    for (int i = 0; i < t->n_rows; i++) {
        double v = sweep_table_num(t, i, col);
        if (sweep_table_feasible(t, i) && !isnan(v)) r[n++] = (struct ranked){ i, v };
    }
    /* qsort's comparator has no context argument; the CLI is one thread. */
    ranked_sense = sense;
    qsort(r, (size_t)n, sizeof *r, ranked_cmp);
    *out = r;
    return n;
}

/* The varied keys of a row, and the parallel.dp that `--chips` derives
 * from them (the column right after them). */
static void print_keys(FILE *f, const struct sweep_table *t, int varied, int row)
{
    for (int a = 0; a < varied; a++)
        fprintf(f, "%s%s=%s", a ? " " : "", t->col[a], t->cell[row][a]);
    if (varied < t->n_cols && !strcmp(t->col[varied], "parallel.dp"))
        fprintf(f, " parallel.dp=%s", t->cell[row][varied]);
}

/* Which row differs from `row` in varied column `a` only, holding the value
 * `step` places before (−1) or after (+1) in the order the grid has them. */
static int neighbour(const struct sweep_table *t, int varied, int row, int a, int step)
{
    /* The distinct values of column a, in order of first appearance. */
    const char **vals = mp_xmalloc((size_t)(t->n_rows ? t->n_rows : 1) * sizeof *vals);
    int nv = 0, at = -1;
    for (int i = 0; i < t->n_rows; i++) {
        int k = 0;
        while (k < nv && strcmp(vals[k], t->cell[i][a])) k++;
        if (k == nv) vals[nv++] = t->cell[i][a];
    }
    for (int k = 0; k < nv; k++)
        if (!strcmp(vals[k], t->cell[row][a])) at = k;
    int want = at + step, found = -1;
    if (at >= 0 && want >= 0 && want < nv) {
        for (int i = 0; i < t->n_rows && found < 0; i++) {
            if (strcmp(t->cell[i][a], vals[want])) continue;
            int b = 0;
            while (b < varied && (b == a || !strcmp(t->cell[i][b], t->cell[row][b]))) b++;
            if (b == varied) found = i;
        }
    }
    free(vals);
    return found;
}

/* Below a nanosecond a difference of decimal cells is rounding, not time. */
static double tidy(double x)
{
    return fabs(x) < 1e-9 ? 0 : x;
}

/* A cell as a number, 0 when the column is missing or the cell empty. */
static double num0(const struct sweep_table *t, int row, int col)
{
    double v = col >= 0 ? sweep_table_num(t, row, col) : 0;
    return isnan(v) ? 0 : v;
}

/* One neighbour of the best: its metric, and what its step time lost by.
 * With the step accounting's columns (sweep.h) the difference is exact,
 * part by part (compute and recompute, pipeline bubble, exposed
 * communication by kind, optimizer and other); an older CSV has only
 * bubble (× step) and exposed_comm_s, and the rest is called compute.
 * A neighbour on another number of chips says so first: that, not its
 * parts, is usually why it differs. */
static void print_loss(FILE *f, const struct sweep_table *t, int best, int nb, int col,
                       const char *metric)
{
    int ct = sweep_table_col(t, "step_time_s"), cb = sweep_table_col(t, "bubble");
    int cm = sweep_table_col(t, "peak_mem_bytes"), cx = sweep_table_col(t, "exposed_comm_s");
    int cr = sweep_table_col(t, "reason"), cc = sweep_table_col(t, "chips");
    double mv = sweep_table_num(t, nb, col), bv = sweep_table_num(t, best, col);
    if (!sweep_table_feasible(t, nb)) {
        const char *why = cr >= 0 ? t->cell[nb][cr] : "";
        fprintf(f, "infeasible: %.160s%s\n", why, strlen(why) > 160 ? "..." : "");
        return;
    }
    fprintf(f, "%s %.4g (%+.1f%%)", metric, mv, bv != 0 ? 100 * (mv - bv) / fabs(bv) : 0);
    double chips_b = num0(t, best, cc), chips_n = num0(t, nb, cc);
    if (cc >= 0 && chips_b > 0 && chips_n != chips_b)
        fprintf(f, " on %.0f chips, %.3g× the best's %.0f", chips_n, chips_n / chips_b, chips_b);
    if (ct < 0 || cb < 0) {
        fputc('\n', f);
        return;
    }
    double tb = sweep_table_num(t, best, ct), tn = sweep_table_num(t, nb, ct);
    const char *most = "compute";
    double worst;
    int c_comp = sweep_table_col(t, "compute_s"), c_bub = sweep_table_col(t, "bubble_s");
    if (c_comp >= 0 && c_bub >= 0) {
        static const char *const comm[] = { "tp", "cp", "pp", "dp", "ep", "host" };
        double d_comp = num0(t, nb, c_comp) - num0(t, best, c_comp);
        int c_rc = sweep_table_col(t, "recompute_s");
        d_comp += num0(t, nb, c_rc) - num0(t, best, c_rc);
        double d_bub = num0(t, nb, c_bub) - num0(t, best, c_bub), d_comm = 0, d_kind[6];
        for (int k = 0; k < 6; k++) {
            char name[32];
            snprintf(name, sizeof name, "exposed_%s_s", comm[k]);
            int c = sweep_table_col(t, name);
            d_kind[k] = num0(t, nb, c) - num0(t, best, c);
            d_comm += d_kind[k];
        }
        int c_opt = sweep_table_col(t, "optimizer_s"), c_oth = sweep_table_col(t, "other_s");
        double d_rest = num0(t, nb, c_opt) - num0(t, best, c_opt) + num0(t, nb, c_oth) -
                        num0(t, best, c_oth);
        d_comp = tidy(d_comp), d_bub = tidy(d_bub), d_comm = tidy(d_comm), d_rest = tidy(d_rest);
        for (int k = 0; k < 6; k++) d_kind[k] = tidy(d_kind[k]);
        fprintf(f, ": step %+.4g s = compute %+.4g s, bubble %+.4g s, exposed comm %+.4g s",
                tidy(tn - tb), d_comp, d_bub, d_comm);
        int shown = 0;
        for (int k = 0; k < 6; k++)
            if (d_kind[k] != 0)
                fprintf(f, "%s%s %+.3g", shown++ ? ", " : " (", comm[k], d_kind[k]);
        if (shown) fputc(')', f);
        if (d_rest != 0) fprintf(f, ", optimizer and other %+.4g s", d_rest);
        worst = d_comp;
        if (d_bub > worst) most = "bubble", worst = d_bub;
        if (d_comm > worst) most = "exposed comm", worst = d_comm;
        if (d_rest > worst) most = "optimizer and other";
    } else {
        /* bubble × step is the pipeline bubble alone; exposed comm apart. */
        double idle = sweep_table_num(t, nb, cb) * tn - sweep_table_num(t, best, cb) * tb;
        double comm = cx >= 0 ? sweep_table_num(t, nb, cx) - sweep_table_num(t, best, cx) : 0;
        if (isnan(comm)) comm = 0;
        double compute = (tn - tb) - idle - comm;
        /* Differences of products leave rounding dust: below a picosecond is 0. */
        if (fabs(compute) < 1e-12) compute = 0;
        if (fabs(idle) < 1e-12) idle = 0;
        fprintf(f, ": step %+.4g s = bubble %+.4g s", tn - tb, idle);
        if (cx >= 0) fprintf(f, ", exposed comm %+.4g s", comm);
        fprintf(f, ", compute %+.4g s", compute);
        worst = compute;
        if (idle > worst) most = "bubble", worst = idle;
        if (cx >= 0 && comm > worst) most = "exposed comm";
    }
    if (cm >= 0)
        fprintf(f, "; peak mem %.1f → %.1f GB", sweep_table_num(t, best, cm) / 1e9,
                sweep_table_num(t, nb, cm) / 1e9);
    if (tn > tb) {
        if (cc >= 0 && chips_b > 0 && chips_n != chips_b)
            fprintf(f, "  [%s chips; mostly %s]", chips_n < chips_b ? "fewer" : "more", most);
        else
            fprintf(f, "  [mostly %s]", most);
    }
    fputc('\n', f);
}

/* Context parallelism (branch context, issue 17): when the best row has
 * parallel.cp > 1 among the varied keys and the row equal to it but for
 * cp = 1 is infeasible, CP is what made the context fit: say so, with that
 * row's reason and the smallest cp that fits. */
static void print_cp_fit(FILE *f, const struct sweep_table *t, int varied, int best)
{
    int a = -1;
    for (int k = 0; k < varied; k++)
        if (!strcmp(t->col[k], "parallel.cp")) a = k;
    if (a < 0 || !(sweep_table_num(t, best, a) > 1)) return;
    int none = -1, least = -1, cr = sweep_table_col(t, "reason");
    for (int i = 0; i < t->n_rows; i++) {
        int k = 0;
        while (k < varied && (k == a || !strcmp(t->cell[i][k], t->cell[best][k]))) k++;
        if (k < varied) continue;
        double c = sweep_table_num(t, i, a);
        if (c == 1) none = i;
        else if (sweep_table_feasible(t, i) && (least < 0 || c < sweep_table_num(t, least, a)))
            least = i;
    }
    if (none < 0 || sweep_table_feasible(t, none)) return;
    const char *why = cr >= 0 ? t->cell[none][cr] : "";
    fprintf(f, "\ncontext parallelism is what made the best fit: with the same other keys, "
               "parallel.cp = 1 is infeasible (%.160s%s); the least that fits is parallel.cp = "
               "%s\n", why, strlen(why) > 160 ? "..." : "", t->cell[least][a]);
}

int sweep_print_best(FILE *f, const struct sweep_table *t, int varied, const char *metric,
                     int top, struct mp_error *err)
{
    int col = sweep_table_need(t, metric, "--best", err);
    if (col < 0) return MP_ERR_INPUT;
    metric = t->col[col];
    int sense = sweep_metric_sense(metric);
    struct ranked *r;
    int n = rank_rows(t, col, sense, &r);
    fprintf(f, "best %d of %d feasible configurations (of %d) by %s, %s is better:\n",
            n < top ? n : top, n, t->n_rows, metric, sense > 0 ? "higher" : "lower");
    if (n == 0) {
        fprintf(f, "  none is feasible\n");
        free(r);
        return MP_OK;
    }
    /* Name the chip counts when the ranked rows differ in them: a faster
     * row on four times the chips is another question. */
    int cc = sweep_table_col(t, "chips");
    bool chips_differ = false;
    for (int i = 1; cc >= 0 && i < n; i++)
        chips_differ |= strcmp(t->cell[r[i].row][cc], t->cell[r[0].row][cc]) != 0;
    for (int i = 0; i < n && i < top; i++) {
        fprintf(f, "  %2d. %s %-12.6g ", i + 1, metric, r[i].v);
        print_keys(f, t, varied, r[i].row);
        if (chips_differ) fprintf(f, "  (%s chips)", t->cell[r[i].row][cc]);
        fputc('\n', f);
    }
    if (chips_differ)
        fprintf(f, "  (the rows differ in chip count; `mpsim sweep --chips N` holds it fixed)\n");
    int b = r[0].row;
    fprintf(f, "\nneighbours of the best (one key one step away) and what cost them:\n");
    int shown = 0;
    for (int a = 0; a < varied; a++)
        for (int step = -1; step <= 1; step += 2) {
            int nb = neighbour(t, varied, b, a, step);
            if (nb < 0) continue;
            char what[160];
            snprintf(what, sizeof what, "%s=%s", t->col[a], t->cell[nb][a]);
            fprintf(f, "  %-30s ", what);
            print_loss(f, t, b, nb, col, metric);
            shown++;
        }
    if (!shown) fprintf(f, "  (none: no key has another value in the grid)\n");
    print_cp_fit(f, t, varied, b);
    free(r);
    return MP_OK;
}

int sweep_print_pareto(FILE *f, const struct sweep_table *t, int varied, const char *spec,
                       struct mp_error *err)
{
    const char *comma = strchr(spec, ',');
    if (!comma || comma == spec || !comma[1] || strchr(comma + 1, ','))
        return mp_fail(err, MP_ERR_INPUT, "--pareto '%s': expected two columns X,Y such as "
                       "usd_per_mtok,step_time_s", spec);
    char x[128];
    snprintf(x, sizeof x, "%.*s", (int)(comma - spec), spec);
    int cx = sweep_table_need(t, x, "--pareto", err);
    if (cx < 0) return MP_ERR_INPUT;
    int cy = sweep_table_need(t, comma + 1, "--pareto", err);
    if (cy < 0) return MP_ERR_INPUT;
    int sy = sweep_metric_sense(t->col[cy]);
    struct ranked *r;
    int n = rank_rows(t, cx, sweep_metric_sense(t->col[cx]), &r);
    fprintf(f, "Pareto front of %s (%s is better) against %s (%s is better), %d feasible "
               "rows:\n", t->col[cx], sweep_metric_sense(t->col[cx]) > 0 ? "higher" : "lower",
            t->col[cy], sy > 0 ? "higher" : "lower", n);
    /* Best X first: a row is on the front when its Y beats every row
     * before it, whose X is at least as good. */
    double best_y = NAN;
    int on = 0;
    for (int i = 0; i < n; i++) {
        double y = sweep_table_num(t, r[i].row, cy);
        if (isnan(y)) continue;
        /* Among rows of equal X only the best Y can be on the front. */
        bool beaten = false;
        for (int j = i + 1; j < n && r[j].v == r[i].v && !beaten; j++) {
            double yj = sweep_table_num(t, r[j].row, cy);
            beaten = sy > 0 ? yj > y : yj < y;
        }
        for (int j = i - 1; j >= 0 && r[j].v == r[i].v && !beaten; j--) {
            double yj = sweep_table_num(t, r[j].row, cy);
            beaten = sy > 0 ? yj > y : yj < y;
        }
        if (beaten) continue;
        if (!isnan(best_y) && !(sy > 0 ? y > best_y : y < best_y)) continue;
        best_y = y;
        fprintf(f, "  %s %-12.6g %s %-12.6g ", t->col[cx], r[i].v, t->col[cy], y);
        print_keys(f, t, varied, r[i].row);
        fputc('\n', f);
        on++;
    }
    if (!on) fprintf(f, "  (empty)\n");
    free(r);
    return MP_OK;
}
