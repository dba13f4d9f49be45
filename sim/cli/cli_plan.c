/* cli_plan.c — `mpsim plan`: place a scenario's model on chips by memory and
 * print the chip count and the layer map (sim/serve/plan.h). */
#include <stdbool.h>
#include <string.h>

#include "cli.h"
#include "sim/io/config.h"
#include "sim/serve/plan.h"

static const char plan_usage_text[] =
    "usage: mpsim plan SCENARIO.ini [--set section.key=value]... [--json]\n"
    "\n"
    "Places the model's layers on the system's chips in order, each chip filled\n"
    "with weights plus the reserve its layers need for inference.concurrency\n"
    "requests at inference.context_len tokens (KV cache for full attention, the\n"
    "fixed state for linear attention); layers are split only by parallel.tp.\n"
    "Prints the chip count, one row per chip and the KV-bound concurrency.\n"
    "\n"
    "mpsim plan --device-map MODEL|SCENARIO.ini [...] places a Hugging Face model\n"
    "as from_pretrained(device_map=\"auto\") does (`mpsim plan --device-map --help`).\n";

int cli_plan(int argc, char **argv)
{
    const char *scenario = NULL;
    bool json = false;
    struct mp_error err = { 0 };
    /* Accelerate's placement has options of its own (cli_device_map.c). */
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--device-map")) return cli_plan_device_map(argc, argv);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(plan_usage_text, stdout);
            return MP_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--set")) {
            if (i + 1 >= argc) return cli_usage_error("plan: %s needs a value", a);
            i++;
        } else if (a[0] == '-' && a[1]) {
            return cli_unknown_option("plan", a, (const char *const[]){ "--set", "--json",
                                      "--help", NULL });
        } else if (scenario) {
            return cli_usage_error("plan: one scenario at a time (extra argument '%s')", a);
        } else {
            scenario = a;
        }
    }
    if (!scenario)
        return cli_usage_error("%s", "plan: which scenario? usage: mpsim plan SCENARIO.ini");
    struct config cfg;
    if (cli_load_scenario(&cfg, scenario, argc, argv, &err)) return cli_fail(&err);
    if (!cfg.inference.present)
        fprintf(stderr, "mpsim: warning: %s has no [inference] section: plan places layers for "
                        "serving (a KV reserve at inference.context_len = %d), with the serving "
                        "defaults; for a training step use `mpsim run`\n", scenario,
                cfg.inference.context_len);
    struct plan_run r;
    int rc = plan_run(&r, &cfg, &err);
    if (rc) {
        plan_run_release(&r);
        if (rc == MP_ERR_INFEASIBLE) {
            cli_infeasible(&err);
            return rc;
        }
        return cli_fail(&err);
    }
    if (json) plan_report_json(stdout, &r);
    else plan_report_text(stdout, &r);
    plan_run_release(&r);
    return MP_OK;
}
