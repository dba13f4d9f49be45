/* cli_search.c — `mpsim search`: the best layouts of a scenario's model on
 * a number of chips (search.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sim/io/config.h"
#include "sim/train/cost.h"
#include "sim/explore/search.h"
#include "sim/io/units.h"

static const char search_usage_text[] =
    "usage: mpsim search SCENARIO.ini --chips N [options]\n"
    "\n"
    "Takes the model, system, sequence length and global batch from the scenario,\n"
    "enumerates every layout of N chips (tp within a node, cp for long sequences,\n"
    "pp, dp, ep for MoE, micro_batch, schedule, vpp, sp, tp_overlap, recompute, ZeRO\n"
    "stage, offload when the system has a [host] tier; cp × tp × pp × dp = N), drops\n"
    "duplicates, layouts the schedule's rules\n"
    "refuse and layouts a lower bound of memory says cannot fit, bounds every other\n"
    "one's step time in closed form, then simulates op by op the best K by that\n"
    "bound and every layout the bound cannot separate from them (the bound never\n"
    "exceeds the simulation, so the top K are exact), and prints the best.\n"
    "\n"
    "  --chips N            chips to lay out (required)\n"
    "  --top N              how many to print (default 10)\n"
    "  --simulate K         simulate the best K by bound and all it cannot separate\n"
    "                       from them (default 32)\n"
    "  --batch-policy P     exact (default): dp × micro_batch must divide the global\n"
    "                       batch; round-down: each layout runs the largest multiple\n"
    "                       of dp × micro_batch the batch holds (shown per row)\n"
    "  --fix key=v1[,v2]    keep only these values of a layout key (repeatable):\n"
    "                       parallel.tp, .cp, .pp, .dp, .ep, .vpp, .sp, .tp_overlap,\n"
    "                       training.micro_batch, .schedule, .recompute, .zero, .offload\n"
    "  --metric M           rank by tokens_per_s (default), step_time_s, mfu, bubble,\n"
    "                       peak_mem_bytes or usd_per_mtok\n"
    "  --schedules a,b,...  schedules to try (default 1f1b,interleaved,zb-h1,zb-h2,gpipe)\n"
    "  --max-micro-batch N  largest micro_batch tried (default 8)\n"
    "  --max-vpp N          largest vpp for interleaved (default 8; every divisor of the\n"
    "                       layers per stage up to it)\n"
    "  --max-cp N           largest context-parallel degree, powers of two (default:\n"
    "                       the largest leaving each CP rank 8192 tokens; 1 below 16K)\n"
    "  --jobs N             threads (default: the number of cores)\n"
    "  --set key=value      override a scenario key (repeatable)\n"
    "  --tokens N           token budget for cost figures (default 1T)\n"
    "  --out OUT.csv        also write every simulated layout as a CSV row, in\n"
    "                       enumeration order, as `mpsim sweep` does (for `mpsim plot`)\n"
    "  --quiet              no progress on stderr\n"
    "  --force              simulate past the work budget (mpsim run --help): each\n"
    "                       round of the simulate tier is estimated (the rounds so far\n"
    "                       plus its layouts' steps) and refused past it without this\n"
    "\n"
    "Limits: --chips at most 16777216 (2^24, as tp x pp x dp), --top, --jobs,\n"
    "--max-micro-batch and --max-vpp at most 10^7.\n";

int cli_search(int argc, char **argv)
{
    const char *scenario = NULL;
    struct search_options opt = { .progress = stderr };
    int top = 10;
    struct mp_error err = { 0 };
    const char **fix = mp_xcalloc((size_t)argc + 1, sizeof *fix);
    int n_fix = 0, rc;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        long long n;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(search_usage_text, stdout);
            free(fix);
            return MP_OK;
        } else if (!strcmp(a, "--quiet")) {
            opt.progress = NULL;
        } else if (!strcmp(a, "--force")) {
            opt.force = true;
        } else if (!strcmp(a, "--chips") || !strcmp(a, "--top") || !strcmp(a, "--jobs") ||
                   !strcmp(a, "--max-micro-batch") || !strcmp(a, "--max-vpp") ||
                   !strcmp(a, "--max-cp") || !strcmp(a, "--simulate")) {
            if (i + 1 >= argc) {
                free(fix);
                return cli_usage_error("search: %s needs a value", a);
            }
            long long max = !strcmp(a, "--chips") ? CONFIG_CHIPS_MAX : 10000000;
            if (units_parse_int(argv[++i], 1, max, &n)) {
                char q[128];
                mp_quote(argv[i], strlen(argv[i]), 60, q, sizeof q);
                mp_fail(&err, MP_ERR_INPUT, "search: %s: expected a whole number from 1 to %lld, "
                        "got '%s'", a, max, q);
                free(fix);
                return cli_fail(&err);
            }
            if (!strcmp(a, "--chips")) opt.chips = (int)n;
            else if (!strcmp(a, "--simulate")) opt.simulate = (int)n;
            else if (!strcmp(a, "--top")) top = (int)n;
            else if (!strcmp(a, "--jobs")) opt.jobs = (int)n;
            else if (!strcmp(a, "--max-micro-batch")) opt.max_micro_batch = (int)n;
            else if (!strcmp(a, "--max-cp")) opt.max_cp = (int)n;
            else opt.max_vpp = (int)n;
        } else if (!strcmp(a, "--metric") || !strcmp(a, "--schedules") || !strcmp(a, "--set") ||
                   !strcmp(a, "--tokens") || !strcmp(a, "--out") || !strcmp(a, "--fix") ||
                   !strcmp(a, "--batch-policy")) {
            if (i + 1 >= argc) {
                free(fix);
                return cli_usage_error("search: %s needs a value", a);
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--metric")) opt.metric = v;
            else if (!strcmp(a, "--fix")) fix[n_fix++] = v;
            else if (!strcmp(a, "--batch-policy")) {
                if (!strcmp(v, "exact")) opt.batch_policy = SEARCH_BATCH_EXACT;
                else if (!strcmp(v, "round-down")) opt.batch_policy = SEARCH_BATCH_ROUND_DOWN;
                else {
                    free(fix);
                    return cli_usage_error("search: --batch-policy '%s': expected exact or "
                                           "round-down", v);
                }
            }
            else if (!strcmp(a, "--schedules")) opt.schedules = v;
            else if (!strcmp(a, "--out")) opt.out = v;
            else if (!strcmp(a, "--tokens") && cost_parse_tokens(v, &opt.token_budget)) {
                free(fix);
                return cli_usage_error("search: --tokens: expected a token count such as 1T, "
                                       "got '%s'", v);
            }
        } else if (a[0] == '-' && a[1]) {
            free(fix);
            return cli_unknown_option("search", a, (const char *const[]){ "--chips", "--top",
                                      "--jobs", "--max-micro-batch", "--max-vpp", "--max-cp", "--metric",
                                      "--schedules", "--set", "--tokens", "--out", "--quiet",
                                      "--simulate", "--batch-policy", "--fix", "--help", NULL });
        } else if (scenario) {
            free(fix);
            return cli_usage_error("search: one scenario at a time (extra argument '%s')", a);
        } else {
            scenario = a;
        }
    }
    opt.fix = fix;
    const char *outs[] = { opt.out }, *flags[] = { "--out" };
    if (scenario && cli_check_outputs(outs, flags, 1, scenario)) {
        free(fix);
        return MP_ERR_INPUT;
    }
    struct config base;
    struct search_result res;
    if (!scenario)
        rc = cli_usage_error("%s", "search: which scenario? usage: mpsim search SCENARIO.ini "
                                   "--chips N");
    else if (!opt.chips)
        rc = cli_usage_error("%s", "search: --chips N is required");
    else if (cli_load_scenario(&base, scenario, argc, argv, &err) ||
             search_run(&base, &opt, &res, &err))
        rc = cli_fail(&err);
    else {
        search_print(stdout, &res, &opt, top);
        rc = res.feasible ? MP_OK : MP_ERR_INFEASIBLE;
        if (!res.feasible) fprintf(stderr, "mpsim: infeasible: no layout of %d chips fits\n", opt.chips);
        search_result_release(&res);
    }
    free(fix);
    return rc;
}
