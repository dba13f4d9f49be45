/* cli_list.c — `mpsim list`: the presets and plug-ins mpsim knows. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "hardware/chip.h"
#include "cli.h"
#include "sim/io/config.h"
#include "models/model.h"
#include "sim/strategy/schedule.h"
#include "hardware/system.h"

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

int cli_list(int argc, char **argv)
{
    if (argc != 1) return cli_usage_error("%s", "usage: mpsim list models|chips|systems|schedules|keys");
    const char *what = argv[0];
    struct mp_error err = { 0 };
    static char names[256][128];
    if (!strcmp(what, "schedules")) {
        for (int i = 0; schedule_kinds[i]; i++)
            printf("%-12s %s\n", schedule_kinds[i]->name, schedule_kinds[i]->summary);
    } else if (!strcmp(what, "keys")) {
        cli_print_keys(stdout);
    } else if (!strcmp(what, "models")) {
        int n = list_dir("models", ".json", names, 256);
        for (int i = 0; i < n; i++) {
            char path[1200];
            if (snprintf(path, sizeof path, "%s/models/%s.json", mp_data_dir(), names[i]) >= (int)sizeof path) continue;
            struct model m;
            if (model_load(&m, path, &err)) return cli_fail(&err);
            printf("%-16s %-12s %3d layers  hidden %-6d %8.2fB parameters (%.2fB active)\n",
                   names[i], m.arch, m.decoders, m.hidden, model_params(&m) / 1e9,
                   model_active_params(&m) / 1e9);
            model_release(&m);
        }
    } else if (!strcmp(what, "chips")) {
        struct chip_catalog cat;
        if (chip_catalog_load_default(&cat, &err)) return cli_fail(&err);
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
        if (chip_catalog_load_default(&cat, &err)) return cli_fail(&err);
        int n = list_dir("hardware/systems", ".ini", names, 256);
        for (int i = 0; i < n; i++) {
            char path[1200];
            if (snprintf(path, sizeof path, "%s/hardware/systems/%s.ini", mp_data_dir(), names[i]) >= (int)sizeof path) continue;
            struct system sys;
            if (system_load(&sys, path, 1, 1, &cat, &err)) {
                chip_catalog_release(&cat);
                return cli_fail(&err);
            }
            printf("%-16s %4d × %-14s per node\n", names[i], sys.chips_per_node, sys.chip.name);
            system_release(&sys);
        }
        chip_catalog_release(&cat);
    } else {
        return cli_usage_error("list: unknown '%s'; choose models, chips, systems, schedules or keys",
                           what);
    }
    return MP_OK;
}

