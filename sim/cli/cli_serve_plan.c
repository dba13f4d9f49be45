/* cli_serve_plan.c — `mpsim serve-plan`: the cheapest serving layout that
 * meets an SLO at a request rate (sim/explore/serve_plan.h), run as a sweep
 * (threads, MPI ranks, --resume) and printed as a ranked table. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "sim/explore/serve_plan.h"
#include "sim/explore/sweep_mpi.h"
#include "sim/io/units.h"
#include "sim/serve/serve.h"

static const char plan_usage_text[] =
    "usage: mpsim serve-plan SCENARIO.ini --rate R --slo ttft=T,tpot=T [options]\n"
    "\n"
    "Searches serving layouts of the scenario's model at R requests/s for the\n"
    "cheapest one that meets the SLO: by default parallel.tp = 1,2,4,8, the\n"
    "scenario's parallel.pp and inference.replicas = 1..16, each point a serving\n"
    "run of the scenario's workload (inference.requests of them at rate R). A\n"
    "layout meets the SLO when it fits, serves every request, and --attain of\n"
    "them meet every SLO metric given (ttft, tpot, e2e). They are ranked by their\n"
    "chips' price per hour, and shown with the price per million output tokens\n"
    "(hardware/chips.csv prices; cost.h).\n"
    "\n"
    "  --rate R           requests per second (required)\n"
    "  --slo M=T,...      ttft=500ms, tpot=50ms, e2e=10s (required; at least one)\n"
    "  --attain F         share of requests that must meet the SLO (default 0.9)\n"
    "  --vary key=VALUES  another axis, or one replacing a default (as `mpsim sweep`):\n"
    "                     --vary inference.scheduler=vllm,prefill_first\n"
    "                     --vary hardware.system=dgx-h100,dgx-a100,mi300x-node\n"
    "  --requests N       requests per point (default: the scenario's)\n"
    "  --out OUT.csv      every point's row (default SCENARIO.serve-plan.csv); rows go\n"
    "                     to OUT.csv.partial in grid order, so --resume carries on\n"
    "  --resume           carry on from OUT.csv.partial after a kill\n"
    "  --jobs N           worker threads (default: the number of cores)\n"
    "  --top N            layouts shown (default 10)\n"
    "  --set key=value    override a scenario key for every point (repeatable)\n"
    "  --quiet            no progress on stderr\n"
    "\n"
    "Built with `make MPI=1`, `mpirun -n K mpsim serve-plan ...` deals the points over\n"
    "K ranks as `mpsim sweep` does (docs/sweeps.md).\n"
    "exit status: 0 done (even when no layout meets the SLO: the table says so);\n"
    "2 bad input, before any point runs.\n";

static bool takes_value(const char *a)
{
    static const char *const valued[] = { "--rate", "--slo", "--attain", "--vary", "--requests",
                                          "--out", "--jobs", "--top", "--set", NULL };
    for (const char *const *v = valued; *v; v++)
        if (!strcmp(a, *v)) return true;
    return false;
}

static int plan_main(int argc, char **argv, int rank)
{
    const char *scenario = NULL, *slo = NULL, *out = NULL;
    struct serve_plan_spec spec = { .attain = 0.9 };
    struct sweep_options opt = { .progress = stderr, .progress_tty = isatty(2) };
    bool have_rate = false, quiet = false;
    int top = 10;
    long long requests = 0;
    struct mp_error err = { 0 };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(plan_usage_text, stdout);
            return MP_OK;
        } else if (!strcmp(a, "--resume")) {
            opt.resume = true;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (takes_value(a)) {
            if (i + 1 >= argc) return cli_usage_error("serve-plan: %s needs a value", a);
            const char *v = argv[++i];
            long long n;
            double d;
            if (!strcmp(a, "--rate")) {
                if (units_parse_double(v, &d) || !(d > 0) || d > 1e12)
                    return cli_usage_error("serve-plan: --rate: expected requests per second "
                                           "> 0 (such as 20), got '%s'", v);
                spec.rate = d;
                have_rate = true;
            } else if (!strcmp(a, "--slo")) {
                slo = v;
            } else if (!strcmp(a, "--attain")) {
                if (units_parse_double(v, &d) || !(d > 0) || d > 1)
                    return cli_usage_error("serve-plan: --attain: expected a share in (0, 1] "
                                           "such as 0.9, got '%s'", v);
                spec.attain = d;
            } else if (!strcmp(a, "--vary")) {
                if (spec.n_axes == SERVE_PLAN_AXES)
                    return cli_usage_error("serve-plan: at most 16 --vary (%s)", v);
                spec.axis[spec.n_axes++] = v;
            } else if (!strcmp(a, "--requests")) {
                if (units_parse_int(v, 1, 10000000, &n))
                    return cli_usage_error("serve-plan: --requests: expected a whole number "
                                           "from 1 to 10000000, got '%s'", v);
                requests = n;
            } else if (!strcmp(a, "--out")) {
                out = v;
            } else if (!strcmp(a, "--jobs")) {
                if (units_parse_int(v, 1, 4096, &n))
                    return cli_usage_error("serve-plan: --jobs: expected a whole number from 1 "
                                           "to 4096, got '%s'", v);
                opt.jobs = (int)n;
            } else if (!strcmp(a, "--top")) {
                if (units_parse_int(v, 1, 1000000, &n))
                    return cli_usage_error("serve-plan: --top: expected a whole number ≥ 1, "
                                           "got '%s'", v);
                top = (int)n;
            }
        } else if (a[0] == '-' && a[1]) {
            return cli_unknown_option("serve-plan", a, (const char *const[]){ "--rate", "--slo",
                                      "--attain", "--vary", "--requests", "--out", "--jobs",
                                      "--top", "--set", "--resume", "--quiet", "--help", NULL });
        } else if (scenario) {
            return cli_usage_error("serve-plan: one scenario at a time (extra argument '%s')", a);
        } else {
            scenario = a;
        }
    }
    if (!scenario)
        return cli_usage_error("%s", "serve-plan: which scenario? usage: mpsim serve-plan "
                                     "SCENARIO.ini --rate R --slo ttft=T,tpot=T");
    if (!have_rate) return cli_usage_error("%s", "serve-plan: --rate R (requests/s) is required");
    if (!slo)
        return cli_usage_error("%s", "serve-plan: --slo is required, such as "
                                     "--slo ttft=500ms,tpot=50ms");

    struct config base;
    if (cli_load_scenario(&base, scenario, argc, argv, &err)) return cli_fail(&err);
    if (!base.inference.present)
        return cli_usage_error("serve-plan: %s has no [inference] section: it is a training "
                               "scenario", scenario);
    if (serve_parse_slo(&base, slo, "--slo", &err)) return cli_fail(&err);
    if (requests > 0) base.inference.requests = (int)requests;
    char def_out[CONFIG_STR + 32];
    if (!out) {
        snprintf(def_out, sizeof def_out, "%s.serve-plan.csv", base.name[0] ? base.name : "serve");
        out = def_out;
    }
    opt.out = out;
    struct sweep_grid g;
    sweep_grid_init(&g);
    int rc = serve_plan_grid(&g, &base, &spec, &err);
    if (rc) {
        sweep_grid_release(&g);
        return cli_fail(&err);
    }
    if (quiet) opt.progress = NULL;
    opt.best_metric = "goodput_frac";
    struct sweep_stats st;
    rc = sweep_run(&g, &base, &opt, &st, &err);
    if (rc) {
        sweep_grid_release(&g);
        return cli_fail(&err);
    }
    if (rank != 0) {
        sweep_grid_release(&g);
        return MP_OK;
    }
    fprintf(stderr, "serve-plan: %lld layouts (%lld resumed, %lld simulated) in %.2f s → %s\n",
            st.points, st.resumed, st.simulated, st.wall_s, out);
    struct sweep_table t;
    struct serve_plan_row *rows = NULL;
    int n = 0;
    if ((rc = sweep_table_load(&t, out, &err)) == MP_OK) {
        rc = serve_plan_rank(&t, base.inference.requests, spec.attain, &rows, &n, &err);
        if (!rc) serve_plan_print(stdout, &t, g.n_axes, rows, n, top, spec.rate, spec.attain, &base);
        free(rows);
        sweep_table_release(&t);
    }
    sweep_grid_release(&g);
    return rc ? cli_fail(&err) : MP_OK;
}

int cli_serve_plan(int argc, char **argv)
{
    sweep_mpi_init();
    int rank = sweep_mpi_rank();
    if (rank != 0 && !freopen("/dev/null", "w", stderr)) return MP_ERR_INTERNAL;
    int rc = plan_main(argc, argv, rank);
    sweep_mpi_finalize();
    return rc;
}
