/* sweep.h — many configurations of one scenario, each simulated, one CSV
 * row each (DESIGN.md §1: "sweep = many configs ─► the same pipe").
 *
 * A grid is the product of axes, one per `--vary key=values`; the first axis
 * is the outermost, so points are numbered like nested loops written in the
 * order of the flags. A value list is comma-separated; each item is a value
 * as the key takes it, or for whole-number and decimal keys a range:
 *
 *   A..B*K   A, A·K, A·K², ... while ≤ B      (1..64*2 = 1,2,4,...,64)
 *   A..B+S   A, A+S, A+2S, ... while ≤ B      (8..64+8 = 8,16,...,64)
 *   A..B     A..B+1
 *
 * Every value is checked against the key before any point runs, so a bad
 * --vary is an input error (exit 2) and never a half-finished sweep.
 *
 * The CSV has the varied keys (their dotted names as headers, values as an
 * INI would hold them), then SWEEP_METRIC_COLUMNS (training) or
 * SWEEP_SERVE_COLUMNS (serving: an [inference] scenario, run by serve_run),
 * then `feasible` and `reason`. Rows are appended and flushed in grid order as points finish
 * (later points that finish early wait in memory), into OUT.partial beside
 * the output; the last row renames it to OUT. A killed sweep therefore
 * leaves OUT.partial holding every point that finished before its first
 * unfinished one, and `--resume` carries on from there. The file holds no
 * wall-clock figures, so any --jobs count, and any number of interruptions,
 * give the same bytes. */
#ifndef MPSIM_SWEEP_H
#define MPSIM_SWEEP_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/io/config.h"
#include "sweep_table.h"

/* The metric columns, in order, after the varied keys. bubble is the
 * pipeline bubble only (sim/train/step_split.h); exposed_comm_s the sum
 * over kinds of the exposed communication the stages waited for; then the
 * step accounting (mean over stages, exact decimal seconds that add up to
 * step_time_s). mfu is empty for a synthetic model (no FLOP count). */
#define SWEEP_SPLIT_COLUMNS                                                   \
    "compute_s,recompute_s,exposed_tp_s,exposed_cp_s,exposed_pp_s,"           \
    "exposed_dp_s,exposed_ep_s,exposed_host_s,bubble_s,optimizer_s,other_s"
#define SWEEP_METRIC_COLUMNS                                                  \
    "step_time_s,tokens_per_s,mfu,bubble,peak_mem_bytes,exposed_comm_s,chips," \
    "usd_per_step,usd_per_mtok,budget_chip_hours," SWEEP_SPLIT_COLUMNS

/* The metric columns of a serving sweep (sim/serve/serve.h): step_time_s is the
 * makespan, tokens_per_s output tokens per second; latencies in seconds
 * over completed requests; chips = every replica's chips; usd_per_mtok per
 * million output tokens (chips × makespan priced as cost.h says),
 * usd_per_hour the chips' hourly price; goodput_frac the share of requests
 * meeting the SLO keys (inference.slo_*; all of them when none is set),
 * goodput_rps those per second. */
#define SWEEP_SERVE_COLUMNS                                                   \
    "step_time_s,tokens_per_s,ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,"    \
    "e2e_p50_s,requests_completed,requests_per_s,max_inflight,"               \
    "kv_peak_fraction,chips,usd_per_mtok,usd_per_hour,goodput_frac,"          \
    "goodput_rps,itl_p99_s,preemptions,replicas"

/* The most points one sweep may have; a grid larger than this is almost
 * certainly a typo in a range. */
#define SWEEP_MAX_POINTS 100000000LL
#define SWEEP_MAX_AXES 32

struct sweep_axis {
    const struct config_key *key;
    char **values; /* canonical text of each value (config_format_value) */
    int n;
};

struct sweep_grid {
    struct sweep_axis *axis; /* [n_axes], outermost first */
    int n_axes;
    long long n_points;      /* product of the axes' sizes */
    /* `--chips N` (sweep_grid_fix_chips): every point runs on N chips, its
     * parallel.dp = N / (tp × cp × pp), written as a `parallel.dp` column after
     * the varied keys; a point whose tp × cp × pp does not divide N is a row
     * with feasible = false and the reason. 0: not fixed. */
    int chips;
};

/* An empty grid (one point: the base scenario), and freeing its axes (the
 * grid is then empty again). */
void sweep_grid_init(struct sweep_grid *g);
void sweep_grid_release(struct sweep_grid *g);

/* Add one `--vary` argument ("key=v1,v2,A..B*K") as the next, inner axis.
 * Each value is set on a copy of `base` to check it (unknown key with a
 * did-you-mean, empty list or item, bad range, wrong type, out of range,
 * unknown schedule, model or system preset, key varied twice): MP_ERR_INPUT
 * with a message that starts "--vary KEY". */
int sweep_grid_add(struct sweep_grid *g, const struct config *base, const char *spec,
                   struct mp_error *err);

/* Expand one value list for `key` into `*values` (malloc'd strings, caller
 * frees them with sweep_values_free, sweep_table.h), as written, ranges
 * expanded. */
int sweep_expand(const struct config_key *key, const char *list, char ***values, int *n,
                 struct mp_error *err);

/* Hold the chip count at `chips` (`--chips N`, grid above): MP_ERR_INPUT
 * when parallel.dp is varied, when `base` is a serving scenario, or when no
 * point of the grid has a tp × cp × pp dividing `chips` (the message lists the
 * products the grid has). Call after the last sweep_grid_add. */
int sweep_grid_fix_chips(struct sweep_grid *g, const struct config *base, int chips,
                         struct mp_error *err);

/* Which value of each axis point `index` takes (which[n_axes]). */
void sweep_grid_point(const struct sweep_grid *g, long long index, int *which);

/* `base` with point `index`'s values set (and parallel.dp derived when the
 * grid holds the chip count; MP_ERR_INPUT naming --chips when tp × cp × pp does
 * not divide it, `out` then has the varied values). */
int sweep_grid_config(const struct sweep_grid *g, const struct config *base, long long index,
                      struct config *out, struct mp_error *err);

/* Whether the grid's points are serving runs: the scenario has an
 * [inference] section, or an inference.* key is varied (any such key makes
 * a scenario a serving one, config.h). The same for every point. */
bool sweep_grid_serving(const struct sweep_grid *g, const struct config *base);

/* The metric columns of a training or a serving sweep. */
const char *sweep_columns(bool serving);

/* The CSV header line (with '\n') into a malloc'd string. */
char *sweep_header(const struct sweep_grid *g, bool serving);

struct sweep_options {
    const char *out;     /* the CSV path */
    int jobs;            /* worker threads; ≤ 0: the number of online cores */
    bool resume;         /* carry on from OUT.partial */
    double token_budget; /* for budget_chip_hours; 0 = 1T tokens */
    /* Progress on `progress` (NULL: none): a bar redrawn in place when
     * `progress_tty`, else one line per 10%. "Best so far" uses
     * `best_metric` (a metric column; NULL: tokens_per_s). */
    FILE *progress;
    bool progress_tty;
    const char *best_metric;
    /* Past the work budget (sim/io/budget.h: sweep_estimate) sweep_run stops
     * before any point runs, and each point's own run past its budget is a
     * row with the reason, unless `force`. */
    bool force;
};

/* The grid's work: its points, the estimated events of its largest point and
 * of all of them (sampled: at most SWEEP_ESTIMATE_SAMPLES points spread
 * over the grid, scaled up), on `jobs` threads. */
#define SWEEP_ESTIMATE_SAMPLES 32
struct work_estimate;
void sweep_estimate(const struct sweep_grid *g, const struct config *base, int jobs,
                    struct work_estimate *w);

struct sweep_stats {
    long long points;    /* in the grid */
    long long resumed;   /* rows taken from OUT.partial */
    long long simulated; /* points run now */
    long long feasible;  /* rows with feasible = true, resumed ones included */
    double wall_s;
};

/* Run every point not already in OUT.partial (when resuming) and write OUT.
 * MP_ERR_INPUT for a bad --resume (no partial file, or one from another
 * sweep) or an unwritable output; points that fail or do not fit are rows
 * with feasible = false, not errors. A one-point sweep is fine. */
int sweep_run(const struct sweep_grid *g, const struct config *base,
              const struct sweep_options *opt, struct sweep_stats *stats, struct mp_error *err);

/* Whether `name` is one of the metric columns (sweep_columns(serving)). */
bool sweep_is_metric(const char *name, bool serving);

struct sim;
struct sim_options;

/* Run sim_run on each of `n` configurations on `jobs` worker threads (≤ 0:
 * the online cores), as a sweep runs its points, and hand each finished
 * run to `done(ctx, i, s, rc, err)` on the worker that ran it, before the
 * struct sim is released; `done` must only write what belongs to index i.
 * `opts` (may be NULL) is the same for every run. For lists of changed
 * scenarios that are no grid (`mpsim explain`'s levers). */
typedef void (*sweep_done_fn)(void *ctx, int i, const struct sim *s, int rc,
                              const struct mp_error *err);
void sweep_run_configs(const struct config *cfgs, int n, int jobs, const struct sim_options *opts,
                       sweep_done_fn done, void *ctx);

/* The cells after the varied keys of one training point's row, with the
 * newline: SWEEP_METRIC_COLUMNS, `feasible`, `reason`, from what sim_run
 * returned (`rc`, `err`) and left in `s`. `chips` fills that cell when the
 * run got no metrics. malloc'd. Shared with `mpsim search --out`. */
char *sweep_row_tail(const struct sim *s, int rc, const struct mp_error *err, int chips);

#endif
