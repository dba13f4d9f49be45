/* cli_run.c — `mpsim run`: one scenario, one training step, the reports. */
#include <stdbool.h>
#include <string.h>

#include "cli.h"
#include "sim/io/config.h"
#include "sim/serve/serve.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"

static const char run_usage_text[] =
    "usage: mpsim run SCENARIO.ini [options]\n"
    "\n"
    "  --set section.key=value  override one scenario key (repeatable)\n"
    "  --json                   print one JSON object instead of the summary\n"
    "  --timeline OUT.csv       one row per op and memory change (mpsim-view reads it)\n"
    "  --timeline-detail        serving: every stage's copy of every pass and hand-off in the\n"
    "                           timeline (default: one row per pass, from stage 0 to the last)\n"
    "  --trace OUT.json         Chrome trace: open it in https://ui.perfetto.dev\n"
    "  --validate               check the generated schedule's rules before running\n"
    "  --breakdown              where each stage pass's time goes: kernels by class and the\n"
    "                           hardware/kernels.csv line that priced them (--json: key breakdown)\n"
    "  --tokens N               token budget for the chip-hours and cost lines (default 1T)\n"
    "  --force                  run past the work budget (below)\n"
    "  --slo ttft=T,tpot=T      serving: goodput counts requests meeting these (also e2e=T)\n"
    "\n"
    "Outputs are written to a temporary file and renamed when complete (a device or\n"
    "FIFO is written directly); two outputs may not name one file. Interrupted\n"
    "(SIGINT, SIGTERM), mpsim removes what it had half written and exits 130 / 143.\n"
    "\n"
    "Limits: one duration at most 10^6 s and one size 2^60 bytes in a scenario;\n"
    "tp x cp x pp x dp at most 2^24 chips, cp at most 65,536; pp x vpp x\n"
    "microbatches at most 2^23 stage passes. The work budget: a step estimated past\n"
    "4 GiB (about 27 million events, half a minute; 160 bytes and 1 us an event)\n"
    "stops before it is built, with the estimate, unless --force; a serving or\n"
    "device_map run past 4 GiB or an hour likewise.\n"
    "Scenario keys (`mpsim list keys` prints the same with current defaults):\n";

int cli_run(int argc, char **argv)
{
    const char *scenario = NULL, *timeline = NULL, *trace = NULL;
    bool json = false, validate = false, breakdown = false, detail = false, force = false;
    double tokens = 0;
    const char *slo = NULL;
    struct mp_error err = { 0 };
    /* First pass: flags and the scenario path; --set is applied after loading. */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(run_usage_text, stdout);
            cli_print_keys(stdout);
            return MP_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--validate")) {
            validate = true;
        } else if (!strcmp(a, "--force")) {
            force = true;
        } else if (!strcmp(a, "--breakdown")) {
            breakdown = true;
        } else if (!strcmp(a, "--timeline-detail")) {
            detail = true;
        } else if (!strcmp(a, "--set") || !strcmp(a, "--timeline") || !strcmp(a, "--trace") ||
                   !strcmp(a, "--tokens") || !strcmp(a, "--slo")) {
            if (i + 1 >= argc) return cli_usage_error("run: %s needs a value", a);
            if (!strcmp(a, "--tokens") && cost_parse_tokens(argv[i + 1], &tokens))
                return cli_usage_error("--tokens: expected a token count > 0 such as 1T, 300B "
                                       "or 1e12, got '%s'", argv[i + 1]);
            if (!strcmp(a, "--timeline")) timeline = argv[i + 1];
            if (!strcmp(a, "--trace")) trace = argv[i + 1];
            if (!strcmp(a, "--slo")) slo = argv[i + 1];
            i++;
        } else if (a[0] == '-' && a[1]) {
            return cli_unknown_option("run", a, (const char *const[]){ "--set", "--json",
                                      "--timeline", "--trace", "--validate", "--tokens",
                                      "--slo", "--breakdown", "--timeline-detail", "--force", "--help", NULL });
        } else if (scenario) {
            return cli_usage_error("run: one scenario at a time (extra argument '%s')", a);
        } else {
            scenario = a;
        }
    }
    if (!scenario) return cli_usage_error("%s", "run: which scenario? usage: mpsim run SCENARIO.ini");
    if (detail && !timeline)
        return cli_usage_error("%s", "run: --timeline-detail says what --timeline OUT.csv writes; "
                               "give --timeline too");
    const char *outs[] = { timeline, trace }, *flags[] = { "--timeline", "--trace" };
    if (cli_check_outputs(outs, flags, 2, scenario)) return MP_ERR_INPUT;

    struct config cfg;
    if (cli_load_scenario(&cfg, scenario, argc, argv, &err)) return cli_fail(&err);
    /* --slo sets the serving SLO keys (and so asks for serving). */
    if (slo && !cfg.inference.present)
        return cli_usage_error("run: --slo is for serving scenarios (an [inference] section); "
                               "%s has none", scenario);
    if (slo && serve_parse_slo(&cfg, slo, "--slo", &err)) return cli_fail(&err);
    /* [device_map] policy: generate the way Accelerate runs the placement. */
    if (cfg.device_map.policy != DEVMAP_NONE) return cli_devmap_run(&cfg, json, timeline, trace, force);
    /* An [inference] section (or any inference.* key) asks for serving. */
    if (cfg.inference.present) return cli_serve(&cfg, json, timeline, trace, detail, force);

    struct sim s;
    struct sim_options opts = { .record_memory = timeline || trace, .validate = validate,
                                .token_budget = tokens, .breakdown = breakdown,
                                .record_released = timeline != NULL, .force = force };
    int rc = sim_run(&s, &cfg, &opts, &err);
    if (rc == MP_ERR_INFEASIBLE) {
        /* A valid question with a "no" answer: say why, in the form asked
         * for. A step that ran but does not fit in memory still has its
         * timeline and trace, so what running out looks like can be seen. */
        struct mp_error werr = { 0 };
        if (s.res.stage && ((timeline && cli_write_output(timeline, report_timeline_csv, &s, &werr)) ||
                            (trace && cli_write_output(trace, report_chrome_trace, &s, &werr)))) {
            sim_release(&s);
            return cli_fail(&werr);
        }
        if (json) report_json(stdout, &s);
        else report_text(stdout, &s);
        cli_infeasible(&err);
        sim_release(&s);
        return MP_ERR_INFEASIBLE;
    }
    if (rc) {
        sim_release(&s);
        return cli_fail(&err);
    }
    if ((timeline && cli_write_output(timeline, report_timeline_csv, &s, &err)) ||
        (trace && cli_write_output(trace, report_chrome_trace, &s, &err))) {
        sim_release(&s);
        return cli_fail(&err);
    }
    cli_warn_layout(&s);
    if (json) report_json(stdout, &s);
    else report_text(stdout, &s);
    if (validate && !json) printf("\nschedule   %s passed the validator\n", cfg.training.schedule);
    sim_release(&s);
    return MP_OK;
}

