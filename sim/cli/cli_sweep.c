/* cli_sweep.c — `mpsim sweep`: a grid of configurations of one scenario,
 * one CSV row each (sweep.h), then optionally the best of them and the
 * Pareto front. Every argument is checked before the first point runs. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sim/io/config.h"
#include "sim/train/cost.h"
#include "sim/explore/sweep.h"
#include "sim/explore/sweep_mpi.h"
#include "sim/io/units.h"

static const char sweep_usage_text[] =
    "usage: mpsim sweep SCENARIO.ini --vary section.key=VALUES [--vary ...] --out OUT.csv\n"
    "                   [--chips N] [options]\n"
    "\n"
    "Simulates every point of the grid (the product of the --vary lists; the first\n"
    "--vary is the outermost loop) and writes one CSV row per point: the varied keys,\n"
    "then " SWEEP_METRIC_COLUMNS ",\n"
    "feasible and reason. A serving scenario (an [inference] section, or a varied\n"
    "inference.* key) runs the serving simulation and has the columns\n"
    SWEEP_SERVE_COLUMNS ".\n"
    "\n"
    "VALUES is a comma-separated list; for numeric keys an item may be a range:\n"
    "  A..B*K   multiply by K while ≤ B   parallel.pp=1..64*2   → 1,2,4,8,16,32,64\n"
    "  A..B+S   add S while ≤ B           training.micro_batch=8..64+8 → 8,16,...,64\n"
    "  A..B     add 1                     parallel.vpp=1..4     → 1,2,3,4\n"
    "and items mix: parallel.tp=1,2..8*2 → 1,2,4,8.\n"
    "\n"
    "  --out OUT.csv      where the rows go (required). Rows are appended to\n"
    "                     OUT.csv.partial in grid order as points finish, and the\n"
    "                     file is renamed to OUT.csv when the last one is written\n"
    "  --resume           carry on from OUT.csv.partial after a kill: finished points\n"
    "                     are not run again; the result is byte-identical\n"
    "  --chips N          hold the machine at N chips: each point's parallel.dp is\n"
    "                     N / (tp × cp × pp), written as a parallel.dp column; points\n"
    "                     whose tp × cp × pp does not divide N are rows with the reason\n"
    "  --jobs N           worker threads (default: the number of cores)\n"
    "  --set key=value    override one scenario key for every point (repeatable)\n"
    "  --tokens N         token budget for budget_chip_hours (default 1T)\n"
    "  --best METRIC      print the top configurations by METRIC, and what each\n"
    "                     neighbour of the best lost by (bubble, comm, compute, memory)\n"
    "  --top N            how many --best prints (default 5)\n"
    "  --pareto X,Y       print the Pareto front of two columns (e.g.\n"
    "                     usd_per_mtok,step_time_s); tokens_per_s and mfu are better\n"
    "                     higher, every other column lower\n"
    "  --quiet            no progress on stderr (the closing summary stays)\n"
    "  --force            run past the work budget (below)\n"
    "\n"
    "Progress goes to stderr: a bar when it is a terminal, else a line per 10%.\n"
    "Built with `make MPI=1`, `mpirun -n K mpsim sweep ...` deals the points over K\n"
    "ranks (--jobs threads each, default the node's cores / its ranks); rank 0 writes\n"
    "the same file as one process would (docs/sweeps.md).\n"
    "Limits: at most 10^8 points and 32 --vary keys, 10^6 values per range. The work\n"
    "is estimated first from up to 32 points spread over the grid (2 ms a point\n"
    "plus 1 us an event, on --jobs threads); past an hour, or 4 GiB held at once,\n"
    "the sweep stops before any point runs and says so, unless --force. A point\n"
    "past its own budget is a row with the reason.\n"
    "Interrupted (SIGINT, SIGTERM) or killed, a sweep keeps OUT.csv.partial for\n"
    "--resume (exit 130 / 143).\n"
    "exit status: 0 done (infeasible points are rows, not failures); 2 bad input,\n"
    "before any point runs.\n";

/* The options that take the next argument as their value: the first pass
 * checks them, and the later passes over argv (--vary, --set) step over
 * their values with the same list. */
static bool takes_value(const char *a)
{
    static const char *const valued[] = { "--vary", "--set", "--out", "--jobs", "--tokens",
                                          "--best", "--top", "--pareto", "--chips", NULL };
    for (const char *const *v = valued; *v; v++)
        if (!strcmp(a, *v)) return true;
    return false;
}

/* A --pareto or --best column must be a metric or a varied key. */
static int check_column(const struct sweep_grid *g, bool serving, const char *name,
                        const char *flag)
{
    if (sweep_is_metric(name, serving)) return MP_OK;
    for (int a = 0; a < g->n_axes; a++) {
        const char *full = g->axis[a].key->name;
        if (!strcmp(full, name) || !strcmp(strchr(full, '.') + 1, name)) return MP_OK;
    }
    struct mp_error err;
    char q[128];
    mp_quote(name, strlen(name), 60, q, sizeof q);
    mp_fail(&err, MP_ERR_INPUT, "%s: '%s' is not a column of this sweep; metrics are %s, or a "
            "varied key", flag, q, sweep_columns(serving));
    return cli_fail(&err);
}

static int sweep_main(int argc, char **argv, int rank)
{
    const char *scenario = NULL, *best = NULL, *pareto = NULL;
    struct sweep_options opt = { .progress = stderr, .progress_tty = isatty(2) };
    int top = 5, chips = 0;
    bool quiet = false;
    struct mp_error err = { 0 };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(sweep_usage_text, stdout);
            return MP_OK;
        } else if (!strcmp(a, "--resume")) {
            opt.resume = true;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "--force")) {
            opt.force = true;
        } else if (takes_value(a)) {
            if (i + 1 >= argc) return cli_usage_error("sweep: %s needs a value", a);
            const char *v = argv[++i];
            long long n;
            if (!strcmp(a, "--out")) opt.out = v;
            else if (!strcmp(a, "--best")) best = v;
            else if (!strcmp(a, "--pareto")) pareto = v;
            else if (!strcmp(a, "--jobs")) {
                if (units_parse_int(v, 1, 4096, &n))
                    return cli_usage_error("sweep: --jobs: expected a whole number from 1 to "
                                           "4096, got '%s'", v);
                opt.jobs = (int)n;
            } else if (!strcmp(a, "--chips")) {
                if (units_parse_int(v, 1, CONFIG_DEGREE_MAX, &n))
                    return cli_usage_error("sweep: --chips: expected a whole number of chips "
                                           "from 1 to 1000000, got '%s'", v);
                chips = (int)n;
            } else if (!strcmp(a, "--top")) {
                if (units_parse_int(v, 1, 1000000, &n))
                    return cli_usage_error("sweep: --top: expected a whole number ≥ 1, got '%s'",
                                           v);
                top = (int)n;
            } else if (!strcmp(a, "--tokens") && cost_parse_tokens(v, &opt.token_budget)) {
                return cli_usage_error("sweep: --tokens: expected a token count > 0 such as "
                                       "1T, 300B or 1e12, got '%s'", v);
            }
        } else if (a[0] == '-' && a[1]) {
            return cli_unknown_option("sweep", a, (const char *const[]){ "--vary", "--set",
                                      "--out", "--jobs", "--tokens", "--best", "--top", "--pareto",
                                      "--chips", "--resume", "--quiet", "--help", NULL });
        } else if (scenario) {
            return cli_usage_error("sweep: one scenario at a time (extra argument '%s')", a);
        } else {
            scenario = a;
        }
    }
    if (!scenario)
        return cli_usage_error("%s", "sweep: which scenario? usage: mpsim sweep SCENARIO.ini "
                                     "--vary key=v1,v2 --out OUT.csv");
    if (!opt.out) return cli_usage_error("%s", "sweep: --out OUT.csv is required");
    const char *outs[] = { opt.out }, *flags[] = { "--out" };
    if (cli_check_outputs(outs, flags, 1, scenario)) return MP_ERR_INPUT;

    struct config base;
    if (cli_load_scenario(&base, scenario, argc, argv, &err)) return cli_fail(&err);

    struct sweep_grid g;
    sweep_grid_init(&g);
    int rc = MP_OK;
    for (int i = 0; i < argc && !rc; i++) {
        if (!takes_value(argv[i])) continue;
        if (!strcmp(argv[i++], "--vary") && sweep_grid_add(&g, &base, argv[i], &err))
            rc = cli_fail(&err);
    }
    if (!rc && g.n_axes == 0)
        rc = cli_usage_error("%s", "sweep: nothing varies; give at least one --vary "
                                   "section.key=v1,v2,...");
    /* --set of a varied key would be silently overridden by every point. */
    for (int i = 0; i < argc && !rc; i++) {
        if (!takes_value(argv[i])) continue;
        if (strcmp(argv[i++], "--set")) continue;
        const char *s = argv[i];
        size_t n = strcspn(s, "=");
        for (int a = 0; a < g.n_axes && !rc; a++)
            if (strlen(g.axis[a].key->name) == n && !strncmp(g.axis[a].key->name, s, n))
                rc = cli_usage_error("sweep: %s is both --set and --vary; keep one",
                                     g.axis[a].key->name);
    }
    if (!rc && chips) {
        for (int i = 0; i < argc && !rc; i++)
            if (takes_value(argv[i]) && !strcmp(argv[i++], "--set") &&
                !strncmp(argv[i], "parallel.dp=", 12))
                rc = cli_usage_error("sweep: --chips derives parallel.dp; drop --set %s", argv[i]);
        if (!rc && sweep_grid_fix_chips(&g, &base, chips, &err)) rc = cli_fail(&err);
    }
    bool serving = sweep_grid_serving(&g, &base);
    if (!rc && best) rc = check_column(&g, serving, best, "--best");
    if (!rc && pareto) {
        char x[128];
        const char *comma = strchr(pareto, ',');
        if (!comma) {
            rc = cli_usage_error("sweep: --pareto '%s': expected two columns X,Y such as "
                                 "usd_per_mtok,step_time_s", pareto);
        } else {
            snprintf(x, sizeof x, "%.*s", (int)(comma - pareto), pareto);
            rc = check_column(&g, serving, x, "--pareto");
            if (!rc) rc = check_column(&g, serving, comma + 1, "--pareto");
        }
    }
    if (rc) {
        sweep_grid_release(&g);
        return rc;
    }

    if (quiet) opt.progress = NULL;
    opt.best_metric = best && sweep_is_metric(best, serving) ? best : "tokens_per_s";
    struct sweep_stats st;
    rc = sweep_run(&g, &base, &opt, &st, &err);
    if (rc) {
        sweep_grid_release(&g);
        return cli_fail(&err);
    }
    if (rank != 0) { /* rank 0 reports for the job */
        sweep_grid_release(&g);
        return MP_OK;
    }
    fprintf(stderr, "sweep: %lld points (%lld resumed, %lld simulated, %lld feasible) in "
                        "%.2f s, %.1f points/s", st.points, st.resumed, st.simulated,
                st.feasible, st.wall_s, st.wall_s > 0 ? st.simulated / st.wall_s : 0);
    if (sweep_mpi_size() > 1) fprintf(stderr, " over %d ranks", sweep_mpi_size());
    fprintf(stderr, " → %s\n", opt.out);
    if (best || pareto) {
        struct sweep_table t;
        if ((rc = sweep_table_load(&t, opt.out, &err)) == MP_OK) {
            if (best) rc = sweep_print_best(stdout, &t, g.n_axes, best, top, &err);
            if (!rc && pareto) {
                if (best) fputc('\n', stdout);
                rc = sweep_print_pareto(stdout, &t, g.n_axes, pareto, &err);
            }
            sweep_table_release(&t);
        }
        if (rc) rc = cli_fail(&err);
    }
    sweep_grid_release(&g);
    return rc;
}

int cli_sweep(int argc, char **argv)
{
    sweep_mpi_init();
    int rank = sweep_mpi_rank();
    /* Every rank parses the same arguments and meets the same input errors;
     * rank 0 says them (and draws the progress) for all. */
    if (rank != 0 && !freopen("/dev/null", "w", stderr)) return MP_ERR_INTERNAL;
    int rc = sweep_main(argc, argv, rank);
    sweep_mpi_finalize();
    return rc;
}
