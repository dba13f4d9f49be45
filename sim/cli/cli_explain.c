/* cli_explain.c — `mpsim explain`: where a training step's time goes, and
 * the changes that would help, each simulated (sim/explore/explain.h). */
#include <stdbool.h>
#include <string.h>

#include "cli.h"
#include "sim/explore/explain.h"
#include "sim/io/units.h"

static const char explain_usage_text[] =
    "usage: mpsim explain SCENARIO.ini [--set section.key=value]... [--top N] [--jobs N] [--json]\n"
    "\n"
    "Runs the scenario and prints where its step went (the step accounting: compute,\n"
    "recompute, exposed TP/CP/PP/DP/EP communication, the pipeline bubble, optimizer;\n"
    "per stage, summing to the step time), then levers: small changes of the layout\n"
    "on the same chips — interleaving with vpp, zero-bubble, tp_overlap, other\n"
    "tp × pp and pp × dp splits, less recompute, microbatch size, sequence\n"
    "parallelism, ZeRO — each one simulated, never guessed, ranked by the step the\n"
    "changed scenario gets. Its memory and the schedule's rules are checked: what\n"
    "does not fit is listed apart with the reason. Each lever's step is what\n"
    "`mpsim run SCENARIO.ini --set KEY=VALUE ...` prints for the same changes.\n"
    "\n"
    "  --set key=value   override one scenario key (repeatable)\n"
    "  --top N           how many levers to print (default 10)\n"
    "  --jobs N          worker threads for the levers (default: the cores)\n"
    "  --json            one JSON object: the accounting and every lever\n"
    "\n"
    "exit status: 0 done (also when the scenario does not fit: the levers say what\n"
    "would); 2 bad input.\n";

int cli_explain(int argc, char **argv)
{
    const char *scenario = NULL;
    bool json = false;
    int top = 10, jobs = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        long long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(explain_usage_text, stdout);
            return MP_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--set") || !strcmp(a, "--top") || !strcmp(a, "--jobs")) {
            if (i + 1 >= argc) return cli_usage_error("explain: %s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--top")) {
                if (units_parse_int(v, 1, 1000000, &n))
                    return cli_usage_error("explain: --top: expected a whole number ≥ 1, got '%s'", v);
                top = (int)n;
            } else if (!strcmp(a, "--jobs")) {
                if (units_parse_int(v, 1, 4096, &n))
                    return cli_usage_error("explain: --jobs: expected a whole number from 1 to "
                                           "4096, got '%s'", v);
                jobs = (int)n;
            }
        } else if (a[0] == '-' && a[1]) {
            return cli_unknown_option("explain", a, (const char *const[]){ "--set", "--top",
                                      "--jobs", "--json", "--help", NULL });
        } else if (scenario) {
            return cli_usage_error("explain: one scenario at a time (extra argument '%s')", a);
        } else {
            scenario = a;
        }
    }
    if (!scenario) return cli_usage_error("%s", "explain: which scenario? usage: mpsim explain SCENARIO.ini");
    struct config cfg;
    struct mp_error err = { 0 };
    if (cli_load_scenario(&cfg, scenario, argc, argv, &err)) return cli_fail(&err);
    struct explain x;
    if (explain_run(&x, &cfg, jobs, &err)) {
        explain_release(&x);
        return cli_fail(&err);
    }
    if (json) explain_json(stdout, &x);
    else explain_print(stdout, &x, top);
    explain_release(&x);
    return MP_OK;
}
