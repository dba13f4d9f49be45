/* serve_plan.h — capacity planning for serving (`mpsim serve-plan`): which
 * layout serves a request rate within an SLO for the least money.
 *
 * The candidates are a sweep grid (sweep.h) over the layout keys —
 * parallel.tp, parallel.pp, inference.replicas, inference.scheduler,
 * hardware.system by default, any --vary besides — of the scenario with
 * inference.rate fixed and the SLO keys set (inference.slo_*), so the
 * sweep's machinery runs them: threads, MPI ranks, the CSV with --resume.
 * A layout meets the SLO when it fits, serves every request, and at least
 * `attain` of them meet every SLO set (goodput_frac; DistServe's "SLO
 * attainment", Zhong et al. 2024, reports 90%). The ones that do are ranked
 * by their chips' price per hour, then per million output tokens. */
#ifndef MPSIM_SERVE_PLAN_H
#define MPSIM_SERVE_PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "sim/io/config.h"
#include "sweep.h"
#include "sweep_table.h"

#define SERVE_PLAN_AXES 16

struct serve_plan_spec {
    double rate;                       /* requests per second */
    double attain;                     /* share of requests that must meet the SLO */
    const char *axis[SERVE_PLAN_AXES]; /* --vary specs, "key=values" */
    int n_axes;
};

/* The default axes of a scenario: parallel.tp=1,2,4,8, parallel.pp as set,
 * inference.replicas=1..16; `spec` axes naming the same key replace them. */
int serve_plan_grid(struct sweep_grid *g, struct config *base, const struct serve_plan_spec *spec,
                    struct mp_error *err);

struct serve_plan_row {
    int row;               /* in the table */
    bool fits, meets;      /* feasible; and meets the SLO at the rate */
    double usd_hour, usd_mtok, goodput, ttft99, tpot99, tokens_per_s;
    int chips;
};

/* Every row of a serve-plan CSV judged (meets first, cheapest first; then
 * the rest by goodput). `rows` is malloc'd, *n of them. */
int serve_plan_rank(const struct sweep_table *t, int requests, double attain,
                    struct serve_plan_row **rows, int *n, struct mp_error *err);

/* The ranked table for people: the `top` layouts that meet the SLO with
 * their price per hour and per million output tokens, then how many miss
 * it or do not fit, and the closest misses. `varied` leading columns are
 * the grid's keys. */
void serve_plan_print(FILE *f, const struct sweep_table *t, int varied,
                      const struct serve_plan_row *rows, int n, int top, double rate,
                      double attain, const struct config *base);

#endif
