/* calib.c — the kernel calibration table (hardware/kernels.csv, read with
 * libcsv) and kernel times; see calib.h. */
#include "calib.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/io/csv_reader.h"

/* Split-K leaves each split at least this many K elements. */
#define SPLIT_K_MIN 256.0

static const char *const class_names[N_CAL_CLASSES] = {
    [CAL_UNITS] = "units", [CAL_GEMM] = "gemm", [CAL_K_OVERHEAD] = "gemm_k_overhead",
    [CAL_SMALL_TILE] = "gemm_small_tile", [CAL_MEMORY] = "memory",
    [CAL_WEIGHTS_STREAM] = "weights_stream", [CAL_LAUNCH] = "launch",
    [CAL_GRAPH_LAUNCH] = "graph_launch", [CAL_HOST_STEP] = "host_step",
    [CAL_FLASH_FWD] = "flash_fwd", [CAL_FLASH_BWD] = "flash_bwd",
    [CAL_COMM_OVERLAP] = "comm_overlap",
};

const char *calib_class_name(int cls)
{
    return cls >= 0 && cls < N_CAL_CLASSES ? class_names[cls] : "?";
}

const char *calib_time_name(int ct)
{
    static const char *const n[N_CT] = { "gemm", "attention", "memory", "launch" };
    return ct >= 0 && ct < N_CT ? n[ct] : "?";
}

/* What a value of each class must be. */
enum range { R_SHARE, R_COUNT, R_NONNEG };
static enum range class_range(int cls)
{
    switch (cls) {
    case CAL_UNITS: return R_COUNT;
    case CAL_K_OVERHEAD: case CAL_LAUNCH: case CAL_GRAPH_LAUNCH: case CAL_HOST_STEP:
        return R_NONNEG;
    default: return R_SHARE;
    }
}

/* Required of a chip with rows of its own (the others fall back to `*`). */
static bool class_required(int cls)
{
    return cls != CAL_K_OVERHEAD && cls != CAL_SMALL_TILE && cls != CAL_FLASH_FWD &&
           cls != CAL_FLASH_BWD && cls != CAL_COMM_OVERLAP;
}

/* ------------------------------------------------------------------ */
/* Reading the CSV. */

enum { COL_CHIP, COL_KERNEL, COL_DTYPE, COL_HEAD_DIM, COL_CAUSAL, COL_SEQ, COL_VALUE,
       COL_SOURCE, N_COLS };
static const char *const col_names[N_COLS] = { "chip", "kernel", "dtype", "head_dim", "causal",
                                               "seq_len", "value", "source" };

struct reader {
    const char *path;
    struct mp_error *err;
    bool failed, have_header;
    long row_line;         /* the row being checked (csv_reader's line) */
    char **f;              /* its cells (csv_reader's, valid until the next row) */
    int nf;
    int col[N_COLS], n_header;
    struct calib_row *rows;
    int n, cap;
};

static void fail(struct reader *r, const char *fmt, const char *a, const char *b)
{
    if (r->failed) return;
    r->failed = true;
    /* Cells are shown escaped (mp_quote): one line whatever the file holds. */
    char qa[256], qb[256], what[900];
    mp_quote(a, strlen(a), 120, qa, sizeof qa);
    mp_quote(b, strlen(b), 120, qb, sizeof qb);
    snprintf(what, sizeof what, fmt, qa, qb);
    mp_fail(r->err, MP_ERR_INPUT, "%s:%ld: %s", r->path, r->row_line, what);
}

static void header(struct reader *r)
{
    for (int k = 0; k < N_COLS; k++) r->col[k] = -1;
    for (int i = 0; i < r->nf; i++) {
        int k = 0;
        while (k < N_COLS && strcmp(col_names[k], r->f[i])) k++;
        if (k == N_COLS) {
            fail(r, "header: expected the columns chip, kernel, dtype, head_dim, causal, "
                    "seq_len, value, source, got '%s'%s", r->f[i], "");
            return;
        }
        if (r->col[k] >= 0) {
            fail(r, "header: column %s: expected once, got it twice%s", col_names[k], "");
            return;
        }
        r->col[k] = i;
    }
    for (int k = 0; k < N_COLS; k++)
        if (r->col[k] < 0) {
            fail(r, "column %s: expected in the header row, got no such column%s", col_names[k], "");
            return;
        }
    r->n_header = r->nf;
    r->have_header = true;
}

static bool dash(const char *s) { return !strcmp(s, "-") || !*s; }

static void row_check(struct reader *r)
{
    if (r->nf != r->n_header) {
        char want[16], got[16];
        snprintf(want, sizeof want, "%d", r->n_header);
        snprintf(got, sizeof got, "%d", r->nf);
        fail(r, "expected %s columns as in the header row, got %s", want, got);
        return;
    }
    const char *chip = r->f[r->col[COL_CHIP]], *kern = r->f[r->col[COL_KERNEL]];
    const char *dtype = r->f[r->col[COL_DTYPE]], *hd = r->f[r->col[COL_HEAD_DIM]];
    const char *causal = r->f[r->col[COL_CAUSAL]], *seq = r->f[r->col[COL_SEQ]];
    const char *val = r->f[r->col[COL_VALUE]], *src = r->f[r->col[COL_SOURCE]];
    struct calib_row x;
    memset(&x, 0, sizeof x);
    x.line = r->row_line;
    x.causal = -1;
    if (!*chip || strlen(chip) >= sizeof x.chip) {
        fail(r, "column chip: expected a chip name of chips.csv or *, got '%s'%s", chip, "");
        return;
    }
    snprintf(x.chip, sizeof x.chip, "%s", chip);
    int cls = 0;
    while (cls < N_CAL_CLASSES && strcmp(class_names[cls], kern)) cls++;
    if (cls == N_CAL_CLASSES) {
        fail(r, "column kernel: expected one of units, gemm, gemm_k_overhead, gemm_small_tile, "
                "memory, weights_stream, launch, graph_launch, host_step, flash_fwd, flash_bwd, "
                "comm_overlap, got '%s'%s", kern, "");
        return;
    }
    x.cls = cls;
    if (cls == CAL_GEMM) {
        if (!strcmp(dtype, "bf16")) x.bits = 16;
        else if (!strcmp(dtype, "fp8")) x.bits = 8;
        else {
            fail(r, "column dtype: expected bf16 or fp8 for a gemm row, got '%s'%s", dtype, "");
            return;
        }
    } else if (!dash(dtype)) {
        fail(r, "column dtype: expected - for a %s row, got '%s'", kern, dtype);
        return;
    }
    bool flash = cls == CAL_FLASH_FWD || cls == CAL_FLASH_BWD;
    if (flash) {
        double d, s;
        if (!csv_cell_number(hd, &d) || d < 1 || d > 4096 || d != floor(d)) {
            fail(r, "column head_dim: expected a head dimension from 1 to 4096, got '%s'%s", hd, "");
            return;
        }
        if (!strcmp(causal, "true")) x.causal = 1;
        else if (!strcmp(causal, "false")) x.causal = 0;
        else {
            fail(r, "column causal: expected true or false for a flash row, got '%s'%s", causal, "");
            return;
        }
        if (!csv_cell_number(seq, &s) || s < 1 || s > 1e9) {
            fail(r, "column seq_len: expected a sequence length from 1 to 1e9, got '%s'%s", seq, "");
            return;
        }
        x.head_dim = (int)d;
        x.seq = s;
    } else if (!dash(hd) || !dash(causal) || !dash(seq)) {
        fail(r, "columns head_dim, causal, seq_len: expected - for a %s row (they key flash "
                "rows only), got '%s'", kern, !dash(hd) ? hd : !dash(causal) ? causal : seq);
        return;
    }
    double v;
    enum range rg = class_range(cls);
    if (!csv_cell_number(val, &v) || (rg == R_SHARE && !(v > 0 && v <= 1)) ||
        (rg == R_COUNT && (v < 0 || v > 1e6 || v != floor(v))) ||
        (rg == R_NONNEG && (v < 0 || v > 1e6))) {
        fail(r, rg == R_SHARE ? "column value: expected a share of peak greater than 0 and at "
                                "most 1 for a %s row, got '%s'"
             : rg == R_COUNT ? "column value: expected a whole number of compute units from 0 "
                               "to 1000000 for a %s row, got '%s'"
                             : "column value: expected a number from 0 to 1000000 for a %s "
                               "row, got '%s'", kern, val);
        return;
    }
    x.value = v;
    if (!*src || strlen(src) >= sizeof x.source) {
        fail(r, "column source: expected where the figure comes from (1 to %s characters), "
                "got '%s'", "511", src);
        return;
    }
    snprintf(x.source, sizeof x.source, "%s", src);
    for (int i = 0; i < r->n; i++) {
        const struct calib_row *o = &r->rows[i];
        if (o->cls == x.cls && o->bits == x.bits && o->head_dim == x.head_dim &&
            o->causal == x.causal && o->seq == x.seq && !strcmp(o->chip, x.chip)) {
            char at[32];
            snprintf(at, sizeof at, "%ld", o->line);
            fail(r, "expected one row per chip and kernel class, got a second %s row "
                    "(the first is at line %s)", kern, at);
            return;
        }
    }
    MP_GROW(r->rows, r->cap, r->n + 1);
    r->rows[r->n++] = x;
}


/* Every chip with rows has each required class (gemm: bf16); flash rows,
 * where a chip has any, come for both causal settings. */
static int check_complete(struct reader *r)
{
    /* The first row of each chip seen so far: a row is its chip's first
     * when none of them names its chip (a few chips, not every row before). */
    int *firsts = mp_xmalloc((size_t)(r->n > 0 ? r->n : 1) * sizeof *firsts), n_firsts = 0;
    int rc = MP_OK;
    for (int i = 0; i < r->n && !rc; i++) {
        const char *chip = r->rows[i].chip;
        bool first = true;
        for (int j = 0; j < n_firsts && first; j++)
            first = strcmp(r->rows[firsts[j]].chip, chip) != 0;
        if (!first) continue;
        firsts[n_firsts++] = i;
        bool any[N_CAL_CLASSES] = { false }, bf16 = false, cz[2][2] = { { false } };
        for (int j = i; j < r->n; j++) {
            const struct calib_row *x = &r->rows[j];
            if (strcmp(x->chip, chip)) continue;
            any[x->cls] = true;
            if (x->cls == CAL_GEMM && x->bits == 16) bf16 = true;
            if (x->cls == CAL_FLASH_FWD || x->cls == CAL_FLASH_BWD)
                cz[x->cls == CAL_FLASH_BWD][x->causal] = true;
        }
        bool star = !strcmp(chip, "*");
        for (int c = 0; c < N_CAL_CLASSES; c++) {
            bool need = class_required(c) || star;
            bool have = c == CAL_GEMM ? bf16 : any[c];
            if (need && !have && !rc)
                rc = mp_fail(r->err, MP_ERR_INPUT,
                               "%s:%ld: chip %s has no %s%s row: expected every chip with rows "
                               "of its own to have units, gemm (bf16), memory, weights_stream, "
                               "launch, graph_launch and host_step rows%s", r->path,
                               r->rows[i].line, chip, class_names[c], c == CAL_GEMM ? " bf16" : "",
                               star ? " (and the generic * rows every class)" : "");
        }
        for (int b = 0; b < 2 && !rc; b++)
            if ((cz[b][0] || cz[b][1] || star) && !(cz[b][0] && cz[b][1]))
                rc = mp_fail(r->err, MP_ERR_INPUT,
                               "%s:%ld: chip %s: expected %s rows for causal = true and for "
                               "causal = false, got only %s", r->path, r->rows[i].line, chip,
                               b ? "flash_bwd" : "flash_fwd",
                               cz[b][0] ? "false" : cz[b][1] ? "true" : "none");
    }
    free(firsts);
    return rc;
}

static int read_rows(const char *path, struct reader *r, struct mp_error *err)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->err = err;
    /* The one CSV reader configuration (sim/io/csv_reader.h): BOM, CRLF,
     * quotes, NUL and long lines alike everywhere; '#' lines are comments. */
    struct csv_reader cr;
    struct csv_reader_opts o = { .comments = true };
    struct mp_error e2;
    if (csv_reader_open(&cr, path, &o, &e2))
        return mp_fail(err, MP_ERR_INPUT, "%s (the kernel calibration table)", e2.msg);
    struct csv_row row;
    int got = 0;
    while (!r->failed && (got = csv_reader_next(&cr, &row, &e2)) > 0) {
        r->f = row.cell;
        r->nf = row.n;
        r->row_line = row.line;
        if (!r->have_header) header(r);
        else row_check(r);
    }
    csv_reader_close(&cr);
    r->f = NULL;
    r->nf = 0;
    if (!r->failed && got < 0) {
        r->failed = true;
        if (err) *err = e2;
    }
    int rc = MP_OK;
    if (r->failed) rc = MP_ERR_INPUT;
    else if (!r->have_header)
        rc = mp_fail(err, MP_ERR_INPUT, "%s: empty; expected a header row naming the columns",
                     path);
    else rc = check_complete(r);
    if (rc) {
        free(r->rows);
        r->rows = NULL;
    }
    return rc;
}

/* The last table read, kept for the process: a search or sweep loads the
 * chip's rows once per layout, and the file is the same unless its size or
 * time of change says otherwise. Shared by the search's threads. */
static struct {
    pthread_mutex_t lock;
    char path[4096];
    struct stat st;
    struct calib_row *rows;
    int n;
} table_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void table_cache_free(void)
{
    free(table_cache.rows);
    table_cache.rows = NULL;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The rows of `path` (checked), a copy in `*rows` for the caller to free. */
static int table_rows(const char *path, struct calib_row **rows, int *n, struct mp_error *err)
{
    struct stat st;
    bool known = stat(path, &st) == 0;
    pthread_mutex_lock(&table_cache.lock);
    if (known && table_cache.rows && !strcmp(table_cache.path, path) &&
        same_file(&table_cache.st, &st)) {
        *n = table_cache.n;
        *rows = mp_xmalloc((size_t)(*n > 0 ? *n : 1) * sizeof **rows);
        memcpy(*rows, table_cache.rows, (size_t)*n * sizeof **rows);
        pthread_mutex_unlock(&table_cache.lock);
        return MP_OK;
    }
    pthread_mutex_unlock(&table_cache.lock);
    struct reader r;
    int rc = read_rows(path, &r, err);
    if (rc) return rc;
    *rows = r.rows;
    *n = r.n;
    if (known && strlen(path) < sizeof table_cache.path) {
        pthread_mutex_lock(&table_cache.lock);
        static bool registered;
        if (!registered) registered = atexit(table_cache_free) == 0;
        free(table_cache.rows);
        table_cache.rows = mp_xmalloc((size_t)(r.n > 0 ? r.n : 1) * sizeof *r.rows);
        if (r.n > 0) /* a table of no rows has none to copy (r.rows is NULL) */
            memcpy(table_cache.rows, r.rows, (size_t)r.n * sizeof *r.rows);
        table_cache.n = r.n;
        table_cache.st = st;
        snprintf(table_cache.path, sizeof table_cache.path, "%s", path);
        pthread_mutex_unlock(&table_cache.lock);
    }
    return MP_OK;
}

/* ------------------------------------------------------------------ */
/* Keeping one chip's figures. */

static void grid_index(struct calib_grid *g);

static int keep(struct calib *c, const struct calib_row *x)
{
    MP_GROW(c->rows, c->cap_rows, c->n_rows + 1);
    c->rows[c->n_rows] = *x;
    return c->n_rows++;
}

static void add_grid(struct calib_grid *g, double d, double s, double eff, int row)
{
    if (g->n == CALIB_MAX_GRID) return;
    g->d[g->n] = d, g->s[g->n] = s, g->eff[g->n] = eff, g->row[g->n] = row;
    g->n++;
}

int calib_load(struct calib *c, const char *path, const struct chip *chip, struct mp_error *err)
{
    memset(c, 0, sizeof *c);
    struct { struct calib_row *rows; int n; } r;
    int rc = table_rows(path, &r.rows, &r.n, err);
    if (rc) return rc;
    snprintf(c->path, sizeof c->path, "%s", path);
    snprintf(c->chip, sizeof c->chip, "%s", chip->name);
    bool own = false, own_flash = false;
    /* Which rows are the chip's own, compared once: the `*` rows below ask
     * it of every row (a table of ~380 rows made that 144 K strcmp calls). */
    bool *is_own = mp_xmalloc((size_t)(r.n > 0 ? r.n : 1) * sizeof *is_own);
    for (int i = 0; i < r.n; i++)
        if ((is_own[i] = !strcmp(r.rows[i].chip, chip->name))) {
            own = true;
            own_flash |= r.rows[i].cls == CAL_FLASH_FWD;
        }
    c->generic = !own;
    c->flash_generic = !own_flash;
    for (int k = 0; k < N_CAL_CLASSES; k++) c->row[k][0] = c->row[k][1] = -1;
    for (int i = 0; i < r.n; i++) {
        const struct calib_row *x = &r.rows[i];
        bool mine = is_own[i], star = !strcmp(x->chip, "*");
        if (!mine && !star) continue;
        bool flash = x->cls == CAL_FLASH_FWD || x->cls == CAL_FLASH_BWD;
        /* Own rows win; `*` fills what the chip lacks. */
        if (star && own && flash && own_flash) continue;
        if (star && own && !flash) {
            bool has = false;
            for (int j = 0; j < r.n && !has; j++)
                has = is_own[j] && r.rows[j].cls == x->cls && r.rows[j].bits == x->bits;
            if (has) continue;
        }
        int at = keep(c, x);
        double v = x->value;
        if (star && (x->cls == CAL_GEMM)) v *= chip->compute_eff;
        if (star && (x->cls == CAL_MEMORY || x->cls == CAL_WEIGHTS_STREAM)) v *= chip->mem_eff;
        switch (x->cls) {
        case CAL_UNITS: c->units = v; break;
        case CAL_GEMM: c->gemm_eff[x->bits == 8] = v; break;
        case CAL_K_OVERHEAD: c->k_overhead = v; break;
        case CAL_SMALL_TILE: c->small_tile = v; break;
        case CAL_MEMORY: c->mem_share = v; break;
        case CAL_WEIGHTS_STREAM: c->stream_share = v; break;
        case CAL_LAUNCH: c->launch_s = v * 1e-6; break;
        case CAL_GRAPH_LAUNCH: c->graph_launch_s = v * 1e-6; break;
        case CAL_HOST_STEP: c->host_s = v * 1e-6; break;
        case CAL_COMM_OVERLAP: c->comm_overlap = v; break;
        case CAL_FLASH_FWD: case CAL_FLASH_BWD:
            add_grid(&c->flash[x->cls == CAL_FLASH_BWD][x->causal], x->head_dim, x->seq, v, at);
            break;
        }
        c->row[x->cls][x->cls == CAL_GEMM && x->bits == 8] = at;
    }
    free(is_own);
    free(r.rows);
    c->peak[0] = chip->peak_bf16;
    c->peak[1] = chip->peak_fp8;
    c->mem_bps = chip->mem_bw * c->mem_share;       /* inf for an ideal chip: 0 s */
    c->stream_bps = chip->mem_bw * c->stream_share;
    for (int b = 0; b < 2; b++)
        for (int z = 0; z < 2; z++) grid_index(&c->flash[b][z]);
    return MP_OK;
}

int calib_load_default(struct calib *c, const struct chip *chip, struct mp_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/kernels.csv", mp_data_dir());
    int rc = calib_load(c, path, chip, err);
    /* Reports name the table as the project does, wherever it is installed. */
    if (!rc) snprintf(c->path, sizeof c->path, "hardware/kernels.csv");
    return rc;
}

void calib_release(struct calib *c)
{
    free(c->rows);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------ */
/* Times. */

/* Sort a grid's points by (head dim, sequence) and index its head dims. */
static void grid_index(struct calib_grid *g)
{
    for (int i = 1; i < g->n; i++)   /* insertion sort: a few dozen points */
        for (int j = i; j > 0 && (g->d[j] < g->d[j - 1] ||
                                  (g->d[j] == g->d[j - 1] && g->s[j] < g->s[j - 1])); j--) {
            double td = g->d[j], ts = g->s[j], te = g->eff[j];
            int tr = g->row[j];
            g->d[j] = g->d[j - 1], g->s[j] = g->s[j - 1], g->eff[j] = g->eff[j - 1];
            g->row[j] = g->row[j - 1];
            g->d[j - 1] = td, g->s[j - 1] = ts, g->eff[j - 1] = te, g->row[j - 1] = tr;
        }
    g->n_dims = 0;
    for (int i = 0; i + 1 < g->n; i++)
        g->slope[i] = g->d[i + 1] == g->d[i] && g->s[i + 1] > g->s[i]
                          ? (g->eff[i + 1] - g->eff[i]) / (g->s[i + 1] - g->s[i]) : 0;
    for (int i = 0; i < g->n; i++) {
        if (i == 0 || g->d[i] != g->d[i - 1]) {
            g->dims[g->n_dims] = g->d[i];
            g->first[g->n_dims] = i;
            g->count[g->n_dims++] = 0;
        }
        g->count[g->n_dims - 1]++;
    }
}

/* Share at sequence `s` among the points of head dim index `k` (linear in
 * s between measured points, clamped); `*row` the nearer point's row. */
static double along_seq(const struct calib_grid *g, int k, double s, int *row)
{
    int a = g->first[k], n = g->count[k];
    if (s <= g->s[a] || n == 1) {
        *row = g->row[a];
        return g->eff[a];
    }
    for (int i = a + 1; i < a + n; i++)
        if (s <= g->s[i]) {
            double dx = s - g->s[i - 1];
            *row = g->row[2 * dx < g->s[i] - g->s[i - 1] ? i - 1 : i];
            return g->eff[i - 1] + dx * g->slope[i - 1];
        }
    *row = g->row[a + n - 1];
    return g->eff[a + n - 1];
}

static double grid_share(const struct calib_grid *g, double d, double s, int *row)
{
    if (g->n == 0) return 0;
    int hi = 0;
    while (hi < g->n_dims && g->dims[hi] < d) hi++;
    if (hi == 0 || hi == g->n_dims || g->dims[hi] == d)
        return along_seq(g, hi == g->n_dims ? hi - 1 : hi, s, row);
    int r0, r1;
    double e0 = along_seq(g, hi - 1, s, &r0), e1 = along_seq(g, hi, s, &r1);
    double x = (d - g->dims[hi - 1]) / (g->dims[hi] - g->dims[hi - 1]);
    *row = x < 0.5 ? r0 : r1;
    return e0 + x * (e1 - e0);
}

double calib_flash_share(const struct calib *c, bool bwd, bool causal, double head_dim,
                         double seq)
{
    int row;
    return grid_share(&c->flash[bwd][causal], head_dim, seq, &row);
}

/* Seconds of a GEMM's work (compute with tile and wave quantisation, or its
 * operands' streaming, whichever is longer). */
static double gemm_seconds(const struct calib *c, const struct kernel *k, int *row)
{
    bool fp8 = k->a_bytes <= 1 && k->b_bytes <= 1 && c->peak[1] > 0 && c->gemm_eff[1] > 0;
    double peak = c->peak[fp8];
    double share = c->gemm_eff[fp8];
    *row = c->row[CAL_GEMM][fp8];
    double K = k->k + c->k_overhead, compute;
    if (c->units >= 1) {
        /* The tiles GEMM libraries pick from (the narrow ones for skinny
         * GEMMs such as decode), each also split along K when that fills
         * more units: a split writes fp32 partial sums and reduces them. */
        static const struct { double m, n; bool small; } tiles[] = {
            { 256, 128, false }, { 128, 256, false }, { 128, 128, false },
            { 128, 64, true }, { 64, 128, true }, { 32, 128, true }, { 16, 128, true },
        };
        static const double splits[] = { 1, 2, 4, 8, 16 };
        double per_unit = peak / c->units * share;
        compute = INFINITY;
        for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
            double eta = tiles[i].small ? c->small_tile : 1;
            if (!(eta > 0)) continue;
            double base = ceil(k->m / tiles[i].m) * ceil(k->n / tiles[i].n) * k->batch;
            for (size_t j = 0; j < sizeof splits / sizeof splits[0]; j++) {
                double sk = splits[j];
                if (sk > 1 && k->k / sk < SPLIT_K_MIN) break;
                double waves = ceil(base * sk / c->units);
                double t = waves * 2 * tiles[i].m * tiles[i].n * (k->k / sk + c->k_overhead) /
                           (per_unit * eta);
                if (sk > 1) t += k->batch * k->m * k->n * 4 * (sk + 1) / c->mem_bps;
                if (t < compute) compute = t;
            }
        }
        (void)K;
    } else {
        compute = 2 * k->m * k->n * K * k->batch / (peak * share);
    }
    double bytes = k->batch * (k->m * k->k * k->a_bytes + k->k * k->n * k->b_bytes +
                               k->m * k->n * k->c_bytes * (k->accumulate ? 2 : 1));
    double memory = bytes / c->stream_bps;
    return compute > memory ? compute : memory;
}

void calib_kernel(const struct calib *c, const struct kernel *k, struct calib_cost *out)
{
    out->launch = c->graphs ? c->graph_launch_s : c->launch_s;
    out->row = -1;
    switch (k->kind) {
    case KERNEL_GEMM:
        out->cls = CT_GEMM;
        out->busy = gemm_seconds(c, k, &out->row);
        return;
    case KERNEL_FLASH_FWD:
    case KERNEL_FLASH_BWD:
    case KERNEL_SCAN:
    case KERNEL_DECODE_ATTN: {
        bool bwd = k->kind == KERNEL_FLASH_BWD;
        bool causal = k->kind == KERNEL_DECODE_ATTN ? false : k->causal;
        double share = grid_share(&c->flash[bwd][causal], k->head_dim, k->seq, &out->row);
        double compute = share > 0 ? k->flops / (c->peak[0] * share) : 0;
        double memory = k->bytes / c->mem_bps;
        out->cls = CT_ATTENTION;
        out->busy = compute > memory ? compute : memory;
        if (k->kind == KERNEL_DECODE_ATTN && memory >= compute) out->row = c->row[CAL_MEMORY][0];
        return;
    }
    case KERNEL_MEMORY:
    default:
        out->cls = CT_MEMORY;
        out->busy = k->bytes / c->mem_bps;
        out->row = c->row[CAL_MEMORY][0];
        return;
    }
}

double calib_memory_seconds(const struct calib *c, double bytes)
{
    return bytes / c->mem_bps + (c->graphs ? c->graph_launch_s : c->launch_s);
}

/* Saturating at MP_TIME_HUGE: the one checked path (sim/common.h). */
static mp_time ps_of(double seconds)
{
    return mp_time_from_s(seconds);
}

void calib_price_layer(const struct calib *c, const struct kernel_list *kl, int recompute,
                       struct layer_price *lp)
{
    double t[N_KPASSES][N_KBLOCKS][N_KPARTS] = { { { 0 } } }, rc = 0, router[N_KPASSES] = { 0 };
    for (int i = 0; i < kl->n; i++) {
        const struct kernel *k = &kl->k[i];
        struct calib_cost cc;
        calib_kernel(c, k, &cc);
        double sec = cc.busy + cc.launch;
        t[k->pass][k->block][k->part] += sec;
        if (k->role == KROLE_ROUTER) router[k->pass] += sec;
        if (recompute == 1 && k->recompute) rc += sec;
    }
    memset(lp, 0, sizeof *lp);
    for (int p = 0; p < N_KPASSES; p++) {
        lp->router[p] = ps_of(router[p]);
        for (int b = 0; b < N_KBLOCKS; b++)
            for (int q = 0; q < N_KPARTS; q++) lp->t[p][b][q] = ps_of(t[p][b][q]);
    }
    /* Full recompute re-runs the forward as priced, part by part (tensor.c
     * lays the same parts out again), so its time is theirs exactly. */
    lp->recompute = recompute == 2 ? layer_price_pass(lp, KPASS_F) : ps_of(rc);
}

void calib_row_label(const struct calib *c, int i, char *buf, size_t size)
{
    if (i < 0 || i >= c->n_rows) {
        snprintf(buf, size, "-");
        return;
    }
    const struct calib_row *x = &c->rows[i];
    if (x->cls == CAL_GEMM)
        snprintf(buf, size, "%s %s (%s, line %ld)", class_names[x->cls],
                 x->bits == 8 ? "fp8" : "bf16", x->chip, x->line);
    else if (x->cls == CAL_FLASH_FWD || x->cls == CAL_FLASH_BWD)
        snprintf(buf, size, "%s %s d%d s%.0f (%s, line %ld)", class_names[x->cls],
                 x->causal ? "causal" : "non-causal", x->head_dim, x->seq, x->chip, x->line);
    else
        snprintf(buf, size, "%s (%s, line %ld)", class_names[x->cls], x->chip, x->line);
}
