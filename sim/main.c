/* main.c — the `mpsim` command: parse the command line, call the library,
 * print the one error message and pick the exit status (DESIGN.md §4). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chip.h"
#include "config.h"
#include "model.h"
#include "outfile.h"
#include "report.h"
#include "schedule.h"
#include "sim.h"
#include "system.h"

#define MPSIM_VERSION "0.1.0"

static const char usage_text[] =
    "mpsim — simulate how a neural network runs split across many chips\n"
    "\n"
    "usage:\n"
    "  mpsim run SCENARIO.ini [--set section.key=value]... [--json]\n"
    "            [--timeline OUT.csv] [--trace OUT.json] [--validate]\n"
    "  mpsim list models|chips|systems|schedules|keys\n"
    "  mpsim --help | mpsim run --help | mpsim --version\n"
    "\n"
    "A scenario is an INI file naming a model (a Hugging Face config.json or a\n"
    "preset), a system (chips and how they are wired) and a parallel layout.\n"
    "`mpsim run` simulates one training step op by op and prints the step time,\n"
    "tokens/s, MFU, the pipeline bubble and a per-stage table of busy time and\n"
    "peak memory. Try:\n"
    "\n"
    "  mpsim run scenarios/teach-bubbles.ini\n"
    "  mpsim run scenarios/teach-bubbles.ini --set training.schedule=1f1b\n"
    "\n"
    "exit status: 0 done; 2 bad input (the message names file, line, key and\n"
    "what was expected); 3 the configuration is infeasible (does not fit in\n"
    "memory, or the schedule's rules fail), with the reason.\n";

static const char run_usage_text[] =
    "usage: mpsim run SCENARIO.ini [options]\n"
    "\n"
    "  --set section.key=value  override one scenario key (repeatable)\n"
    "  --json                   print one JSON object instead of the summary\n"
    "  --timeline OUT.csv       one row per op and memory change (mpsim-view reads it)\n"
    "  --trace OUT.json         Chrome trace: open it in https://ui.perfetto.dev\n"
    "  --validate               check the generated schedule's rules before running\n"
    "\n"
    "Outputs are written to a temporary file and renamed when complete.\n"
    "Scenario keys (`mpsim list keys` prints the same with current defaults):\n";

static int fail(const struct mp_error *err)
{
    fprintf(stderr, "mpsim: %s\n", err->msg);
    return err->status ? err->status : MP_ERR_INPUT;
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "mpsim: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see `mpsim --help`)\n");
    return MP_ERR_INPUT;
}

static void print_keys(FILE *f)
{
    struct config def;
    config_defaults(&def);
    const char *section = "";
    for (const struct config_key *k = config_keys; k->name; k++) {
        size_t len = strcspn(k->name, ".");
        if (strncmp(section, k->name, len) || section[len] != '.') {
            fprintf(f, "  [%.*s]\n", (int)len, k->name);
            section = k->name;
        }
        char value[64];
        config_format_value(&def, k, value, sizeof value);
        fprintf(f, "    %-22s = %-12s %s%s%s\n", k->name + len + 1, value, k->doc,
                k->choices ? " — one of " : "", k->choices ? k->choices : "");
    }
}

/* Write one output through a temporary file. */
static int write_output(const char *path, void (*writer)(FILE *, const struct sim *),
                        const struct sim *s, struct mp_error *err)
{
    struct outfile out;
    int rc = outfile_open(&out, path, err);
    if (rc) return rc;
    writer(out.f, s);
    return outfile_commit(&out, err);
}

static int cmd_run(int argc, char **argv)
{
    const char *scenario = NULL, *timeline = NULL, *trace = NULL;
    bool json = false, validate = false;
    struct mp_error err = { 0 };
    /* First pass: flags and the scenario path; --set is applied after loading. */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(run_usage_text, stdout);
            print_keys(stdout);
            return MP_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--validate")) {
            validate = true;
        } else if (!strcmp(a, "--set") || !strcmp(a, "--timeline") || !strcmp(a, "--trace")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            if (!strcmp(a, "--timeline")) timeline = argv[i + 1];
            if (!strcmp(a, "--trace")) trace = argv[i + 1];
            i++;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("run: unknown option '%s'", a);
        } else if (scenario) {
            return usage_error("run: one scenario at a time (extra argument '%s')", a);
        } else {
            scenario = a;
        }
    }
    if (!scenario) return usage_error("%s", "run: which scenario? usage: mpsim run SCENARIO.ini");

    struct config cfg;
    config_defaults(&cfg);
    if (config_load(&cfg, scenario, &err)) return fail(&err);
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--set") && config_set(&cfg, argv[i + 1], "--set", &err))
            return fail(&err);

    struct sim s;
    struct sim_options opts = { .record_memory = timeline || trace, .validate = validate };
    int rc = sim_run(&s, &cfg, &opts, &err);
    if (rc == MP_ERR_INFEASIBLE) {
        /* A valid question with a "no" answer: say why, in the form asked for. */
        if (json) report_json(stdout, &s);
        else report_text(stdout, &s);
        fprintf(stderr, "mpsim: infeasible: %s\n", err.msg);
        sim_release(&s);
        return MP_ERR_INFEASIBLE;
    }
    if (rc) {
        sim_release(&s);
        return fail(&err);
    }
    if ((timeline && write_output(timeline, report_timeline_csv, &s, &err)) ||
        (trace && write_output(trace, report_chrome_trace, &s, &err))) {
        sim_release(&s);
        return fail(&err);
    }
    if (json) report_json(stdout, &s);
    else report_text(stdout, &s);
    if (validate && !json) printf("\nschedule   %s passed the validator\n", cfg.training.schedule);
    sim_release(&s);
    return MP_OK;
}

/* Files in <data>/<subdir> ending in `ext`, sorted, for `list`. */
static int list_dir(const char *subdir, const char *ext, char names[][128], int max)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", mp_data_dir(), subdir);
    DIR *dir = opendir(path);
    if (!dir) return 0;
    int n = 0;
    struct dirent *de;
    size_t el = strlen(ext);
    while ((de = readdir(dir)) && n < max) {
        size_t len = strlen(de->d_name);
        if (len <= el || strcmp(de->d_name + len - el, ext) || len - el >= 128) continue;
        memcpy(names[n], de->d_name, len - el);
        names[n][len - el] = '\0';
        n++;
    }
    closedir(dir);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    return n;
}

static int cmd_list(int argc, char **argv)
{
    if (argc != 1) return usage_error("%s", "usage: mpsim list models|chips|systems|schedules|keys");
    const char *what = argv[0];
    struct mp_error err = { 0 };
    static char names[256][128];
    if (!strcmp(what, "schedules")) {
        for (int i = 0; schedule_kinds[i]; i++)
            printf("%-12s %s\n", schedule_kinds[i]->name, schedule_kinds[i]->summary);
    } else if (!strcmp(what, "keys")) {
        print_keys(stdout);
    } else if (!strcmp(what, "models")) {
        int n = list_dir("models", ".json", names, 256);
        for (int i = 0; i < n; i++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/models/%s.json", mp_data_dir(), names[i]);
            struct model m;
            if (model_load(&m, path, &err)) return fail(&err);
            printf("%-16s %-12s %3d layers  hidden %-6d %8.2fB parameters (%.2fB active)\n",
                   names[i], m.arch, m.decoders, m.hidden, model_params(&m) / 1e9,
                   model_active_params(&m) / 1e9);
            model_release(&m);
        }
    } else if (!strcmp(what, "chips")) {
        struct chip_catalog cat;
        if (chip_catalog_load_default(&cat, &err)) return fail(&err);
        printf("%-16s %10s %10s %8s %10s  %s\n", "chip", "bf16 TF/s", "fp8 TF/s", "mem GB",
               "mem TB/s", "label");
        for (int i = 0; i < cat.n; i++) {
            const struct chip *c = &cat.chips[i];
            printf("%-16s %10.0f %10.0f %8.1f %10.2f  %s\n", c->name, c->peak_bf16 / 1e12,
                   c->peak_fp8 / 1e12, c->mem_bytes / 1e9, c->mem_bw / 1e12, c->label);
        }
        chip_catalog_release(&cat);
    } else if (!strcmp(what, "systems")) {
        struct chip_catalog cat;
        if (chip_catalog_load_default(&cat, &err)) return fail(&err);
        int n = list_dir("hardware/systems", ".ini", names, 256);
        for (int i = 0; i < n; i++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/hardware/systems/%s.ini", mp_data_dir(), names[i]);
            struct system sys;
            if (system_load(&sys, path, 1, 1, &cat, &err)) {
                chip_catalog_release(&cat);
                return fail(&err);
            }
            printf("%-16s %4d × %-14s per node\n", names[i], sys.chips_per_node, sys.chip.name);
            system_release(&sys);
        }
        chip_catalog_release(&cat);
    } else {
        return usage_error("list: unknown '%s'; choose models, chips, systems, schedules or keys",
                           what);
    }
    return MP_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return MP_ERR_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return MP_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("mpsim %s\n", MPSIM_VERSION);
        return MP_OK;
    }
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "list")) return cmd_list(argc - 2, argv + 2);
    return usage_error("unknown command '%s'; the commands are run and list", cmd);
}
