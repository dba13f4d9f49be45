/* sweep.c — a sweep's rows and its run on worker threads (the grid itself
 * is sweep_grid.c); see sweep.h.
 *
 * Threads: each worker takes the next point number, builds its config,
 * runs sim_run on a struct sim of its own and formats the row; the calling
 * thread alone writes rows, in grid order, and draws the progress. Rows that
 * finish ahead of the next one to write wait in a ring of `window` slots;
 * a worker does not take a point beyond the ring, so memory stays bounded
 * by jobs × SLOTS_PER_JOB rows however large the grid.
 *
 * What sim_run shares between threads, and why that is safe: config_set_key
 * and the key table keep no static buffers; model loading goes through
 * cJSON, whose parse error pointer is a global (models/model.c takes a lock
 * around the parse); GSL's error handler is global, so it is switched off
 * once here before any thread starts and callers check return codes; the
 * schedule registry is a constant table. Everything else lives in the
 * worker's struct sim. */
#include "sweep.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csv.h>
#include <gsl/gsl_errno.h>

#include "progress.h"
#include "sim/train/cost.h"
#include "sim/serve/serve.h"
#include "sim/train/sim.h"
#include "sweep_mpi.h"
#include "sim/io/budget.h"
#include "sim/io/csv_reader.h"
#include "sim/io/outfile.h"
#include "sim/io/units.h"
#include "sim/train/estimate.h"

#define SLOTS_PER_JOB 64

/* ---- rows ---------------------------------------------------------------- */

struct sbuf {
    char *p;
    size_t n, cap;
};

static void sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    MP_GROW(b->p, b->cap, b->n + (size_t)need + 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

/* A text cell: plain when it can be, else quoted by libcsv. Newlines become
 * spaces so that every row is one line, which --resume relies on. */
static void sb_field(struct sbuf *b, const char *text)
{
    size_t len = strlen(text);
    char *clean = mp_xmalloc(len + 1);
    for (size_t i = 0; i <= len; i++)
        clean[i] = text[i] == '\n' || text[i] == '\r' ? ' ' : text[i];
    bool plain = len > 0 && !strpbrk(clean, ",\"") && clean[0] != ' ' && clean[len - 1] != ' ';
    if (plain || len == 0) {
        sb_add(b, "%s", clean);
    } else {
        size_t need = csv_write(NULL, 0, clean, len);
        MP_GROW(b->p, b->cap, b->n + need + 1);
        csv_write(b->p + b->n, need, clean, len);
        b->n += need;
        b->p[b->n] = '\0';
    }
    free(clean);
}

bool sweep_grid_serving(const struct sweep_grid *g, const struct config *base)
{
    if (base->inference.present) return true;
    for (int a = 0; a < g->n_axes; a++)
        if (!strncmp(g->axis[a].key->name, "inference.", 10)) return true;
    return false;
}

const char *sweep_columns(bool serving)
{
    return serving ? SWEEP_SERVE_COLUMNS : SWEEP_METRIC_COLUMNS;
}

char *sweep_header(const struct sweep_grid *g, bool serving)
{
    struct sbuf b = { 0 };
    for (int a = 0; a < g->n_axes; a++) sb_add(&b, "%s,", g->axis[a].key->name);
    if (g->chips > 0) sb_add(&b, "parallel.dp,");
    sb_add(&b, "%s,feasible,reason\n", sweep_columns(serving));
    return b.p;
}

/* A metric of a finished run by its column name; NaN when it has none. */
static double result_metric(const struct sim_result *r, const char *name)
{
    if (!strcmp(name, "step_time_s")) return mp_seconds(r->step_time);
    if (!strcmp(name, "tokens_per_s")) return r->tokens_per_s;
    if (!strcmp(name, "mfu")) return r->mfu;
    if (!strcmp(name, "bubble")) return r->bubble;
    if (!strcmp(name, "chips")) return r->n_chips;
    if (!strcmp(name, "usd_per_step"))
        return r->cost.basis != COST_UNKNOWN ? r->cost.usd_per_step : NAN;
    if (!strcmp(name, "usd_per_mtok"))
        return r->cost.basis != COST_UNKNOWN ? r->cost.usd_per_mtok : NAN;
    if (!strcmp(name, "budget_chip_hours")) return r->cost.budget_chip_hours;
    if (!strcmp(name, "exposed_comm_s")) {
        double sum = 0;
        for (int k = 0; k < N_COMM_KINDS; k++) sum += r->exposed_comm_s[k];
        return sum;
    }
    for (int k = 0; k < N_SPLIT; k++) {
        size_t n = strlen(step_split_name(k));
        if (!strncmp(name, step_split_name(k), n) && !strcmp(name + n, "_s"))
            return mp_seconds(r->split.part[k]);
    }
    if (!strcmp(name, "peak_mem_bytes")) {
        double peak = 0;
        for (int d = 0; d < r->stages; d++)
            if (r->stage[d].peak_mem > peak) peak = r->stage[d].peak_mem;
        return peak;
    }
    return NAN;
}

bool sweep_is_metric(const char *name, bool serving)
{
    const char *p = sweep_columns(serving);
    size_t n = strlen(name);
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, name, n)) return true;
        p += len;
        if (*p == ',') p++;
    }
    return false;
}

/* A metric of a finished serving run by its column name; NaN when none. */
static double serve_metric(const struct serve *sv, const struct cost *c, const char *name)
{
    const struct serve_result *r = &sv->res;
    if (!strcmp(name, "step_time_s")) return mp_seconds(r->makespan);
    if (!strcmp(name, "tokens_per_s")) return r->tokens_per_s;
    if (!strcmp(name, "ttft_p50_s")) return r->ttft[0];
    if (!strcmp(name, "ttft_p99_s")) return r->ttft[2];
    if (!strcmp(name, "tpot_p50_s")) return r->tpot[0];
    if (!strcmp(name, "tpot_p99_s")) return r->tpot[2];
    if (!strcmp(name, "e2e_p50_s")) return r->e2e[0];
    if (!strcmp(name, "requests_completed")) return r->completed;
    if (!strcmp(name, "requests_per_s")) return r->requests_per_s;
    if (!strcmp(name, "max_inflight")) return r->max_inflight;
    if (!strcmp(name, "kv_peak_fraction")) return r->kv_peak_fraction;
    if (!strcmp(name, "chips")) return serve_chips(sv);
    if (!strcmp(name, "usd_per_mtok")) return c->basis != COST_UNKNOWN ? c->usd_per_mtok : NAN;
    if (!strcmp(name, "usd_per_hour"))
        return c->basis != COST_UNKNOWN ? c->usd_per_chip_hour * serve_chips(sv) : NAN;
    if (!strcmp(name, "goodput_frac")) return r->requests ? (double)r->slo_met / r->requests : 0;
    if (!strcmp(name, "goodput_rps")) return r->goodput_rps;
    if (!strcmp(name, "itl_p99_s")) return r->itl.q[2];
    if (!strcmp(name, "preemptions")) return (double)r->preemptions;
    if (!strcmp(name, "replicas")) return r->replicas;
    return NAN;
}

/* The cells after the varied keys. `ran` says the engine got as far as the
 * metrics (a run that does not fit in memory still has them, and they show
 * what it would have done); otherwise they are empty. */
static void sb_metrics(struct sbuf *b, const struct sim *s, bool ran, int chips)
{
    const struct sim_result *r = &s->res;
    if (!ran) {
        sb_add(b, ",,,,,,%d,,,", chips);
        for (int k = 0; k < N_SPLIT; k++) sb_add(b, ",");
        return;
    }
    const struct cost *c = &r->cost;
    char step[32]; /* exactly, as the engine's integer picoseconds allow */
    units_format_seconds_exact(r->step_time, step, sizeof step);
    sb_add(b, "%s,%.10g,", step, r->tokens_per_s);
    if (s->has_model) sb_add(b, "%.6g", r->mfu);
    sb_add(b, ",%.6g,%.0f,%.6g,%d,", r->bubble, result_metric(r, "peak_mem_bytes"),
           result_metric(r, "exposed_comm_s"), r->n_chips);
    if (c->basis != COST_UNKNOWN) sb_add(b, "%.6g,%.6g,", c->usd_per_step, c->usd_per_mtok);
    else sb_add(b, ",,");
    sb_add(b, "%.6g", c->budget_chip_hours);
    for (int k = 0; k < N_SPLIT; k++) {
        units_format_seconds_exact(r->split.part[k], step, sizeof step);
        sb_add(b, ",%s", step);
    }
}

/* metrics, feasible, reason and the newline of a training point. */
static void sb_tail(struct sbuf *b, const struct sim *s, int rc, const struct mp_error *err,
                    int chips)
{
    sb_metrics(b, s, s->res.stage != NULL /* fold_metrics ran */, chips);
    if (rc == MP_OK) {
        sb_add(b, ",true,\n");
    } else {
        /* Input errors of one point (global_batch not divisible by this
         * point's micro_batch × dp, pp beyond the model's layers) are rows
         * too: the grid is a product, and some corners of it do not exist. */
        sb_add(b, ",false,");
        sb_field(b, rc == MP_ERR_INFEASIBLE && s->res.infeasible_reason[0]
                        ? s->res.infeasible_reason : err->msg);
        sb_add(b, "\n");
    }
}

char *sweep_row_tail(const struct sim *s, int rc, const struct mp_error *err, int chips)
{
    struct sbuf b = { 0 };
    sb_tail(&b, s, rc, err, chips);
    return b.p;
}

/* The cells after the varied keys of a serving point. Only a finished run
 * has figures: serve_run's infeasible answers (the model does not fit, a
 * request could never be admitted) come before any request is served. */
static void sb_serve_tail(struct sbuf *b, const struct config *cfg, int rc,
                          const struct mp_error *err, const char *best, bool force,
                          double *metric)
{
    struct serve *sv = mp_xmalloc(sizeof *sv);
    struct mp_error e2 = { 0 };
    if (!rc) {
        struct serve_options so = { .force = force };
        rc = serve_run_opts(sv, cfg, &so, &e2);
    } else {
        memset(sv, 0, sizeof *sv);
        e2 = *err;
    }
    if (rc == MP_OK) {
        /* Priced like a training step: all stages' chips for the makespan,
         * per million output tokens. */
        struct cost c;
        cost_compute(&c, &sv->pr.chip, serve_chips(sv), mp_seconds(sv->res.makespan),
                     sv->res.output_tokens, 0);
        const struct serve_result *r = &sv->res;
        char span[32];
        units_format_seconds_exact(r->makespan, span, sizeof span);
        sb_add(b, "%s,%.10g,%.6g,%.6g,%.6g,%.6g,%.6g,%d,%.10g,%d,%.6g,%d,", span,
               r->tokens_per_s, r->ttft[0],
               r->ttft[2], r->tpot[0], r->tpot[2], r->e2e[0], r->completed, r->requests_per_s,
               r->max_inflight, r->kv_peak_fraction, serve_chips(sv));
        if (c.basis != COST_UNKNOWN) sb_add(b, "%.6g", c.usd_per_mtok);
        sb_add(b, ",");
        if (c.basis != COST_UNKNOWN) sb_add(b, "%.6g", c.usd_per_chip_hour * serve_chips(sv));
        sb_add(b, ",%.6g,%.6g,%.6g,%llu,%d", r->requests ? (double)r->slo_met / r->requests : 0,
               r->goodput_rps, r->itl.q[2], (unsigned long long)r->preemptions, r->replicas);
        sb_add(b, ",true,\n");
        *metric = serve_metric(sv, &c, best);
    } else {
        for (const char *p = SWEEP_SERVE_COLUMNS; *p; p++)
            if (*p == ',') sb_add(b, ",");
        sb_add(b, ",false,");
        sb_field(b, e2.msg);
        sb_add(b, "\n");
    }
    serve_release(sv); /* after a memset too: serve_run's own fields say what to free */
    free(sv);
}

struct point_out {
    char *row;     /* the CSV line, with '\n' */
    double metric; /* for "best so far"; NaN when infeasible */
};

static void run_point(const struct sweep_grid *g, const struct config *base,
                      const struct sweep_options *opt, const char *best, bool serving,
                      long long index, struct sim *s, struct point_out *out)
{
    struct sbuf b = { 0 };
    int which[SWEEP_MAX_AXES];
    sweep_grid_point(g, index, which);
    for (int a = 0; a < g->n_axes; a++) {
        sb_field(&b, g->axis[a].values[which[a]]);
        sb_add(&b, ",");
    }
    struct config cfg;
    struct mp_error err = { 0 };
    int rc = sweep_grid_config(g, base, index, &cfg, &err);
    if (g->chips > 0) {
        /* The derived degree; empty when tp × cp × pp does not divide --chips. */
        if (rc == MP_OK) sb_add(&b, "%d", cfg.parallel.dp);
        sb_add(&b, ",");
    }
    out->metric = NAN;
    if (serving) {
        sb_serve_tail(&b, &cfg, rc, &err, best, opt->force, &out->metric);
        out->row = b.p;
        return;
    }
    struct sim_options so = { .token_budget = opt->token_budget, .force = opt->force };
    if (!rc) rc = sim_run(s, &cfg, &so, &err);
    sb_tail(&b, s, rc, &err, g->chips > 0 ? g->chips : (int)config_chips(&cfg)); /* tp × cp × pp × dp (issue 17) */
    if (rc == MP_OK) out->metric = result_metric(&s->res, best);
    sim_release(s); /* safe on a struct sim_run never touched: workers calloc it */
    out->row = b.p;
}

/* ---- the work ------------------------------------------------------------ */

/* Events of one point: a training step's estimate (estimate.h, with its
 * model, loaded once per file), or a serving run's walks (two events per
 * microbatch pass of a prefill or a decode step, serve.h). */
static double point_events(const struct config *cfg, bool serving, char *model_path,
                           struct model *m, bool *have_model)
{
    if (serving) {
        const struct config_inference *in = &cfg->inference;
        int mb = in->max_num_seqs ? in->max_num_seqs : in->micro_batch; /* serve_mb */
        return in->requests * (1 + 2.0 * (in->output_len + 1) / mb);
    }
    if (cfg->model.kind != MODEL_TRANSFORMER) return sim_events_estimate(cfg, NULL, NULL);
    char path[1024];
    if (config_resolve(cfg, cfg->model.config, "models", ".json", path, sizeof path, NULL))
        return 0; /* the point fails at once */
    /* The cache key is the file and the family it is read as. */
    size_t n = strlen(path);
    snprintf(path + n, sizeof path - n, "\n%s", cfg->model.family);
    if (!*have_model || strcmp(path, model_path) != 0) {
        if (*have_model) model_release(m);
        *have_model = model_load_config(m, cfg, NULL) == MP_OK;
        snprintf(model_path, 1024, "%s", path);
    }
    return *have_model ? sim_events_estimate(cfg, m, NULL) : 0;
}

void sweep_estimate(const struct sweep_grid *g, const struct config *base, int jobs,
                    struct work_estimate *w)
{
    memset(w, 0, sizeof *w);
    w->points = (double)g->n_points;
    w->jobs = jobs;
    bool serving = sweep_grid_serving(g, base), have_model = false;
    char model_path[1024] = "";
    struct model m;
    long long k_max = g->n_points < SWEEP_ESTIMATE_SAMPLES ? g->n_points : SWEEP_ESTIMATE_SAMPLES;
    double sum = 0;
    for (long long k = 0; k < k_max; k++) {
        long long i = k_max > 1 ? k * (g->n_points - 1) / (k_max - 1) : 0;
        struct config cfg;
        if (sweep_grid_config(g, base, i, &cfg, NULL) || config_check(&cfg, NULL)) continue;
        double e = point_events(&cfg, serving, model_path, &m, &have_model);
        double chips = (double)config_chips(&cfg);
        sum += e;
        if (e > w->events) w->events = e;
        if (chips > w->chips) w->chips = chips;
    }
    if (have_model) model_release(&m);
    w->total_events = k_max > 0 ? sum / k_max * (double)g->n_points : 0;
}

/* ---- a list of configurations ------------------------------------------- */

struct list_run {
    const struct config *cfgs;
    int n;
    const struct sim_options *opts;
    sweep_done_fn done;
    void *ctx;
    pthread_mutex_t mu;
    int next;
};

static void *list_worker(void *arg)
{
    struct list_run *l = arg;
    struct sim *s = mp_xcalloc(1, sizeof *s);
    for (;;) {
        pthread_mutex_lock(&l->mu);
        int i = l->next < l->n ? l->next++ : -1;
        pthread_mutex_unlock(&l->mu);
        if (i < 0) break;
        struct mp_error err = { 0 };
        int rc = sim_run(s, &l->cfgs[i], l->opts, &err);
        l->done(l->ctx, i, s, rc, &err);
        sim_release(s);
    }
    free(s);
    return NULL;
}

void sweep_run_configs(const struct config *cfgs, int n, int jobs, const struct sim_options *opts,
                       sweep_done_fn done, void *ctx)
{
    struct list_run l = { .cfgs = cfgs, .n = n, .opts = opts, .done = done, .ctx = ctx };
    gsl_set_error_handler_off(); /* global in GSL: once, before any thread */
    pthread_mutex_init(&l.mu, NULL);
    if (jobs <= 0) jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs > n) jobs = n;
    if (jobs < 1) jobs = 1;
    pthread_t *tid = mp_xcalloc((size_t)jobs, sizeof *tid);
    int started = 0;
    for (int j = 0; j < jobs; j++)
        if (pthread_create(&tid[j], NULL, list_worker, &l) == 0) started++;
        else break;
    if (started == 0) list_worker(&l); /* no thread: run them here */
    for (int j = 0; j < started; j++) pthread_join(tid[j], NULL);
    free(tid);
    pthread_mutex_destroy(&l.mu);
}

/* ---- resuming ------------------------------------------------------------ */

struct best {
    const char *metric;
    int sense;        /* +1 more is better, −1 less is */
    double value;     /* NaN until a feasible row */
    long long index;
};

static void best_offer(struct best *b, double v, long long index)
{
    if (isnan(v)) return;
    if (isnan(b->value) || (b->sense > 0 ? v > b->value : v < b->value)) {
        b->value = v;
        b->index = index;
    }
}

/* What a sweep file already holds: its complete rows, checked against the
 * grid, and the byte offset just past the last of them. */
struct held {
    bool header;      /* the file has this sweep's whole header row */
    long long rows;
    long long feasible;
    off_t keep;       /* bytes of the header and the whole rows */
};

/* Read `path` (OUT.partial or OUT) through the one CSV reader
 * (sim/io/csv_reader.h): the header must be this sweep's, and row i's varied
 * values must be point i's, with `feasible` true or false. A last row torn
 * by a kill or a crash (no line break, a NUL from a block the disk never
 * wrote, a quote never closed) is not counted and will be run again; the
 * same damage before the last line is an error naming it. An empty file, or
 * one whose header is torn, holds nothing (h->header false): the sweep
 * starts over. */
static int held_read(const char *path, const char *header, const char *columns,
                     const struct sweep_grid *g, const struct config *base, struct best *best, struct held *h,
                     struct mp_error *err)
{
    memset(h, 0, sizeof *h);
    struct csv_reader r;
    struct mp_error e2;
    int rc = csv_reader_open(&r, path, NULL, &e2);
    if (rc) return mp_fail(err, rc, "--resume: %s", e2.msg);
    char **want;
    int n_want;
    if (csv_split_line(header, strlen(header) - 1, &want, &n_want) != 0) abort(); /* ours */
    int derived = g->chips > 0 ? 1 : 0; /* the parallel.dp column of --chips */
    int ncols = g->n_axes + derived + 1;
    for (const char *c = columns; *c; c++) ncols += *c == ',';
    ncols += 2;
    int best_col = g->n_axes + derived;
    {
        const char *p = columns;
        size_t n = strlen(best->metric);
        while (*p && !(strncmp(p, best->metric, n) == 0 && (p[n] == ',' || !p[n]))) {
            p += strcspn(p, ",");
            if (*p) p++;
            best_col++;
        }
    }
    int which[SWEEP_MAX_AXES];
    struct csv_row row;
    int got = 0;
    while (!rc && (got = csv_reader_next(&r, &row, &e2)) > 0) {
        if (!row.ended) break; /* torn by a kill */
        if (!h->header) {
            bool same = row.n == n_want;
            for (int i = 0; same && i < n_want; i++) same = !strcmp(row.cell[i], want[i]);
            if (!same)
                rc = mp_fail(err, MP_ERR_INPUT, "--resume: %s was written by a different sweep "
                             "(its header is not this one's: the --vary keys differ); run "
                             "without --resume to start over", path);
            h->header = true;
            h->keep = row.end;
            continue;
        }
        if (h->rows >= g->n_points) {
            rc = mp_fail(err, MP_ERR_INPUT, "--resume: %s has more rows than the grid's %lld "
                         "points", path, g->n_points);
            break;
        }
        if (row.n != ncols) {
            rc = mp_fail(err, MP_ERR_INPUT, "--resume: %s:%ld: expected %d cells as in the "
                         "header, got %d; run without --resume to start over", path, row.line,
                         ncols, row.n);
            break;
        }
        sweep_grid_point(g, h->rows, which);
        for (int a = 0; a < g->n_axes && !rc; a++)
            if (strcmp(row.cell[a], g->axis[a].values[which[a]]) != 0) {
                char q[128];
                mp_quote(row.cell[a], strlen(row.cell[a]), 60, q, sizeof q);
                rc = mp_fail(err, MP_ERR_INPUT,
                             "--resume: %s:%ld has %s=%s where this sweep's point %lld has %s; "
                             "the --vary values differ, run without --resume to start over",
                             path, row.line, g->axis[a].key->name, q, h->rows + 1,
                             g->axis[a].values[which[a]]);
            }
        if (!rc && derived) {
            /* --chips N of another count gives other degrees. */
            struct config cfg;
            struct mp_error e3;
            char dp[32] = "";
            if (sweep_grid_config(g, base, h->rows, &cfg, &e3) == MP_OK)
                snprintf(dp, sizeof dp, "%d", cfg.parallel.dp);
            if (strcmp(row.cell[g->n_axes], dp) != 0) {
                char q[128];
                mp_quote(row.cell[g->n_axes], strlen(row.cell[g->n_axes]), 60, q, sizeof q);
                rc = mp_fail(err, MP_ERR_INPUT, "--resume: %s:%ld has parallel.dp=%s where "
                             "--chips %d gives %s; run without --resume to start over", path,
                             row.line, q, g->chips, dp[0] ? dp : "none");
            }
        }
        const char *feasible = row.cell[ncols - 2];
        if (!rc && strcmp(feasible, "true") && strcmp(feasible, "false"))
            rc = mp_fail(err, MP_ERR_INPUT, "--resume: %s:%ld: column feasible: expected true "
                         "or false, got something else; run without --resume to start over",
                         path, row.line);
        if (rc) break;
        if (!strcmp(feasible, "true")) {
            h->feasible++;
            char *end;
            double v = strtod(row.cell[best_col], &end);
            if (end != row.cell[best_col] && !*end) best_offer(best, v, h->rows);
        }
        h->rows++;
        h->keep = row.end;
    }
    if (!rc && got < 0 && !csv_reader_at_end(&r))
        rc = mp_fail(err, MP_ERR_INPUT, "--resume: %s; run without --resume to start over",
                     e2.msg);
    sweep_values_free(want, n_want);
    csv_reader_close(&r);
    if (!h->header) h->rows = h->feasible = 0, h->keep = 0;
    return rc;
}

/* ---- progress ------------------------------------------------------------ */

struct progress {
    FILE *f;
    bool tty;
    double t0, last_draw;
    int decile;           /* last 10% step printed (lines mode) */
    long long total, resumed;
};

static void fmt_eta(char *buf, size_t size, double s)
{
    if (!isfinite(s) || s < 0) snprintf(buf, size, "?");
    else if (s < 60) snprintf(buf, size, "%.0fs", s);
    else if (s < 3600) snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static void progress_draw(struct progress *p, const struct sweep_grid *g, const struct best *b,
                          long long done, bool final)
{
    if (!p->f) return;
    double now = mp_wall_seconds();
    int decile = p->total ? (int)(done * 10 / p->total) : 10;
    if (p->tty ? (!final && now - p->last_draw < 0.1) : decile <= p->decile) return;
    p->last_draw = now;
    p->decile = decile;
    double el = now - p->t0;
    long long ran = done - p->resumed;
    double rate = el > 0 ? ran / el : 0;
    char eta[32], best[256] = "";
    fmt_eta(eta, sizeof eta, rate > 0 ? (p->total - done) / rate : NAN);
    if (!isnan(b->value)) {
        int which[SWEEP_MAX_AXES];
        sweep_grid_point(g, b->index, which);
        int n = snprintf(best, sizeof best, "  best %s %.4g at", b->metric, b->value);
        for (int a = 0; a < g->n_axes && n > 0 && (size_t)n < sizeof best; a++) {
            const char *name = strchr(g->axis[a].key->name, '.') + 1;
            n += snprintf(best + n, sizeof best - (size_t)n, " %s=%s", name,
                          g->axis[a].values[which[a]]);
        }
    }
    int pct = p->total ? (int)(100 * done / p->total) : 100;
    if (p->tty) {
        char text[512];
        snprintf(text, sizeof text, "%lld/%lld %3d%%  %.1f points/s  ETA %s%s", done, p->total,
                 pct, rate, eta, best);
        progress_bar(p->f, progress_width(p->f), done, p->total, text, final);
    } else {
        fprintf(p->f, "sweep: %3d%%  %lld/%lld points, %.1f points/s, ETA %s%s\n", pct, done,
                p->total, rate, eta, best);
    }
    fflush(p->f);
}

/* ---- the run ------------------------------------------------------------- */

struct slot {
    bool ready;
    struct point_out out;
};

/* This process's share of the grid: points first, first + stride, ... (one
 * process: every point from the first not yet written; K MPI ranks: every
 * K-th, sweep_mpi.h). The counters and the ring count items of the share. */
struct runner {
    const struct sweep_grid *g;
    const struct config *base;
    const struct sweep_options *opt;
    const char *best_metric;
    bool serving;
    long long first, stride;
    pthread_mutex_t mu;
    pthread_cond_t ready; /* a slot was filled */
    pthread_cond_t space; /* the writer moved on */
    long long next_take, next_write, total;
    long long window;
    struct slot *slot;    /* [window], item k in slot k % window */
    bool stop;
    pthread_t *tid;
    int started;
};

static void *worker(void *arg)
{
    struct runner *r = arg;
    struct sim *s = mp_xcalloc(1, sizeof *s);
    for (;;) {
        pthread_mutex_lock(&r->mu);
        while (!r->stop && r->next_take < r->total && r->next_take >= r->next_write + r->window)
            pthread_cond_wait(&r->space, &r->mu);
        if (r->stop || r->next_take >= r->total) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        long long k = r->next_take++;
        pthread_mutex_unlock(&r->mu);

        struct point_out out;
        run_point(r->g, r->base, r->opt, r->best_metric, r->serving, r->first + k * r->stride,
                  s, &out);

        pthread_mutex_lock(&r->mu);
        struct slot *sl = &r->slot[k % r->window];
        sl->out = out;
        sl->ready = true;
        pthread_cond_signal(&r->ready);
        pthread_mutex_unlock(&r->mu);
    }
    free(s);
    return NULL;
}

/* Start `jobs` workers on the share; false when none could start. */
static bool runner_start(struct runner *r, int jobs)
{
    r->window = (long long)(jobs > 0 ? jobs : 1) * SLOTS_PER_JOB;
    r->slot = mp_xcalloc((size_t)r->window, sizeof *r->slot);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->ready, NULL);
    pthread_cond_init(&r->space, NULL);
    r->tid = mp_xcalloc((size_t)(jobs > 0 ? jobs : 1), sizeof *r->tid);
    for (int j = 0; j < jobs; j++) {
        if (pthread_create(&r->tid[j], NULL, worker, r) != 0) break;
        r->started++;
    }
    return jobs == 0 || r->started > 0;
}

static void runner_stop(struct runner *r)
{
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->space);
    pthread_mutex_unlock(&r->mu);
    for (int j = 0; j < r->started; j++) pthread_join(r->tid[j], NULL);
    for (long long k = 0; k < r->window; k++)
        if (r->slot[k].ready) free(r->slot[k].out.row);
    free(r->slot);
    free(r->tid);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->ready);
    pthread_cond_destroy(&r->space);
}

/* Wait for the share's next item in order and take it. While waiting on a
 * terminal, redraw the progress (`pg` NULL: none) at `done` points. */
static void runner_take(struct runner *r, struct point_out *out, struct progress *pg,
                        const struct best *best, long long done)
{
    pthread_mutex_lock(&r->mu);
    struct slot *sl = &r->slot[r->next_write % r->window];
    while (!sl->ready) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100000000;
        if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&r->ready, &r->mu, &until);
        if (!sl->ready && pg && pg->tty) {
            pthread_mutex_unlock(&r->mu);
            progress_draw(pg, r->g, best, done, false);
            pthread_mutex_lock(&r->mu);
        }
    }
    *out = sl->out;
    sl->ready = false;
    r->next_write++;
    pthread_cond_broadcast(&r->space);
    pthread_mutex_unlock(&r->mu);
}

static int write_fail(struct mp_error *err, const char *path, int e)
{
    return mp_fail(err, MP_ERR_INTERNAL, "%s: write failed: %s (the rows written so far stay "
                   "there; --resume carries on)", path, strerror(e));
}

/* Rank 0's files: open OUT.partial for appending after what --resume may
 * keep of it (`held`), or fresh with the header. `*f` stays NULL, with
 * MP_OK, when OUT is already this sweep, whole (resume with nothing left). */
static int open_rows(const struct sweep_grid *g, const struct config *base,
                     const struct sweep_options *opt, const char *partial, const char *columns, bool serving, struct best *best,
                     struct held *held, FILE **f, struct mp_error *err)
{
    char *header = sweep_header(g, serving);
    struct stat st;
    int rc = MP_OK;
    bool have_partial = stat(partial, &st) == 0;
    *f = NULL;
    memset(held, 0, sizeof *held);
    if (opt->resume && !have_partial && stat(opt->out, &st) == 0 && S_ISREG(st.st_mode)) {
        /* Finished before: nothing to run if it is this sweep, whole. */
        struct best b2 = *best;
        struct mp_error e2;
        if (held_read(opt->out, header, columns, g, base, &b2, held, &e2) == MP_OK &&
            held->rows == g->n_points) {
            free(header);
            return MP_OK;
        }
        memset(held, 0, sizeof *held);
    }
    if (opt->resume && have_partial &&
        (rc = held_read(partial, header, columns, g, base, best, held, err)))
        goto out;
    if (opt->resume && have_partial && held->header) {
        if (truncate(partial, held->keep) != 0) {
            rc = mp_fail(err, MP_ERR_INTERNAL, "%s: cannot cut the torn last row: %s", partial,
                         strerror(errno));
            goto out;
        }
        *f = fopen(partial, "a");
    } else {
        *f = fopen(partial, "w");
        if (*f && fputs(header, *f) < 0) {
            fclose(*f);
            *f = NULL;
        }
    }
    if (!*f)
        rc = mp_fail(err, MP_ERR_INPUT, "--out %s: cannot write %s: %s", opt->out, partial,
                     strerror(errno));
    else
        fflush(*f);
out:
    free(header);
    return rc;
}

int sweep_run(const struct sweep_grid *g, const struct config *base,
              const struct sweep_options *opt, struct sweep_stats *stats, struct mp_error *err)
{
    struct sweep_stats none;
    if (!stats) stats = &none;
    memset(stats, 0, sizeof *stats);
    stats->points = g->n_points;
    double t0 = mp_wall_seconds();
    gsl_set_error_handler_off(); /* global in GSL: once, before any thread */
    int me = sweep_mpi_rank(), ranks = sweep_mpi_size();

    char partial[1100];
    if (!opt->out || !*opt->out || !strcmp(opt->out, "-"))
        return mp_fail(err, MP_ERR_INPUT, "--out: a sweep needs a file to write (rows are "
                       "appended as points finish), got '%s'", opt->out ? opt->out : "");
    if (snprintf(partial, sizeof partial, "%s.partial", opt->out) >= (int)sizeof partial)
        return mp_fail(err, MP_ERR_INPUT, "--out %s: path too long", opt->out);

    bool serving = sweep_grid_serving(g, base);
    const char *columns = sweep_columns(serving);
    int jobs = opt->jobs;
    if (jobs <= 0) jobs = (int)sysconf(_SC_NPROCESSORS_ONLN) / sweep_mpi_local_size();
    if (jobs < 1) jobs = 1;
    /* The whole grid's work, before any file is touched. */
    struct work_estimate work;
    sweep_estimate(g, base, jobs * ranks, &work);
    char what[96];
    snprintf(what, sizeof what, "sweep of %lld points", g->n_points);
    int budget_rc = work_check(&work, what, "fewer --vary values", opt->force, err);
    if (budget_rc) return budget_rc;
    const char *metric = opt->best_metric ? opt->best_metric : "tokens_per_s";
    struct best best = { .metric = metric, .sense = sweep_metric_sense(metric), .value = NAN };
    struct held held = { 0 };
    FILE *f = NULL;
    int rc = MP_OK;
    long long start = g->n_points;
    int keep_slot = -1; /* OUT.partial: kept, and named, if a signal stops the sweep */
    if (me == 0) {
        rc = open_rows(g, base, opt, partial, columns, serving, &best, &held, &f, err);
        if (f) start = held.rows;
        if (f) keep_slot = outfile_register(partial, true);
    }
    /* Only rank 0 reads and writes files; the others learn from it where
     * to start, or that it failed before any point ran. */
    if (ranks > 1 && sweep_mpi_share_start(rc, &start) != MP_OK && me != 0)
        return mp_fail(err, MP_ERR_INPUT, "rank %d: rank 0 stopped the sweep", me);
    if (rc) return rc;
    stats->resumed = me == 0 ? held.rows : 0;
    stats->feasible = held.feasible;
    if (me == 0 && !f) {
        stats->resumed = g->n_points; /* finished before */
        return MP_OK;
    }

    struct runner r = { .g = g, .base = base, .opt = opt, .best_metric = metric,
                        .serving = serving, .first = start + me, .stride = ranks };
    r.total = r.first < g->n_points ? (g->n_points - r.first + ranks - 1) / ranks : 0;
    if (jobs > r.total) jobs = (int)r.total;
    if (!runner_start(&r, jobs))
        rc = mp_fail(err, MP_ERR_INTERNAL, "sweep: cannot start a worker thread");

    struct progress pg = { .f = me == 0 ? opt->progress : NULL, .tty = opt->progress_tty,
                           .t0 = t0, .total = g->n_points, .resumed = start };
    pg.decile = g->n_points ? (int)(start * 10 / g->n_points) : 10;
    if (me == 0) {
        for (long long i = start; !rc && i < g->n_points; i++) {
            struct point_out out;
            int owner = (int)((i - start) % ranks);
            if (owner == 0) runner_take(&r, &out, &pg, &best, i);
            else if ((rc = sweep_mpi_recv_row(owner, &out.row, &out.metric, err))) break;
            /* One row, flushed: a kill from here on cannot lose it. */
            if (fputs(out.row, f) < 0 || fflush(f) != 0) rc = write_fail(err, partial, errno);
            free(out.row);
            stats->simulated++;
            if (!isnan(out.metric)) stats->feasible++;
            best_offer(&best, out.metric, i);
            progress_draw(&pg, g, &best, i + 1, false);
        }
    } else {
        for (long long k = 0; !rc && k < r.total; k++) {
            struct point_out out;
            runner_take(&r, &out, NULL, NULL, 0);
            rc = sweep_mpi_send_row(out.row, out.metric, err);
            free(out.row);
            stats->simulated++;
        }
    }
    runner_stop(&r);
    if (rc && ranks > 1) {
        /* The other ranks would wait for rank 0 (or it for them) forever:
         * say why once, and stop the whole job. The partial file keeps
         * every row written, for --resume. */
        fprintf(stderr, "mpsim: rank %d: %s\n", me, err->msg);
        sweep_mpi_abort(rc);
    }
    if (me != 0) {
        stats->wall_s = mp_wall_seconds() - t0;
        return rc;
    }

    if (!rc) progress_draw(&pg, g, &best, g->n_points, true);
    else if (pg.f && pg.tty) fputc('\n', pg.f);
    int e = 0;
    if (!rc && (fflush(f) != 0 || fsync(fileno(f)) != 0)) e = errno;
    if (fclose(f) != 0 && !e) e = errno;
    if (!rc && e) rc = write_fail(err, partial, e);
    if (!rc) rc = outfile_install(partial, opt->out, err);
    outfile_forget(keep_slot);
    stats->wall_s = mp_wall_seconds() - t0;
    return rc;
}
