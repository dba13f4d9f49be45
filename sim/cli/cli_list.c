/* cli_list.c — `mpsim list`: the presets and plug-ins mpsim knows. */
#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hardware/chip.h"
#include "cli.h"
#include "sim/serve/serve.h"
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

static const char list_usage_text[] =
    "usage: mpsim list models|chips|systems|schedules|keys\n"
    "\n"
    "  models     the model presets (models/*.json): layers, hidden size, parameters\n"
    "  chips      the chip catalogue (hardware/chips.csv): peaks, memory, price\n"
    "  systems    the system presets (hardware/systems/*.ini): chips per node and the\n"
    "             scale-up (inside a node) and scale-out (between nodes) bandwidths\n"
    "  schedules  the pipeline schedules\n"
    "  schedulers the serving schedulers (inference.scheduler) and the systems they mirror\n"
    "  routers    the serving routers (inference.router)\n"
    "  keys       every scenario key with its default and meaning\n";

static const char *const list_whats[] = { "models", "chips", "systems", "schedules", "keys",
                                          "schedulers", "routers", NULL };

/* A bandwidth per chip per direction for a table: "450 GB/s", "free". */
static void fmt_bw(char *buf, size_t size, double bw)
{
    if (!(bw < 1e30)) snprintf(buf, size, "free");
    else if (bw <= 0) snprintf(buf, size, "—");
    else snprintf(buf, size, "%.0f GB/s", bw / 1e9);
}

/* A column of `width` display columns: printf pads by bytes, and "—" is
 * three bytes wide on the wire but one on the screen. */
static void col(const char *text, int width, bool right)
{
    int w = 0;
    for (const char *p = text; *p; p++) w += (*p & 0xC0) != 0x80;
    int pad = width > w ? width - w : 0;
    if (right) printf("%*s%s", pad, "", text);
    else printf("%s%*s", text, pad, "");
}

int cli_list(int argc, char **argv)
{
    if (argc == 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs(list_usage_text, stdout);
        return MP_OK;
    }
    if (argc != 1) return cli_usage_error("%s", "list: usage: mpsim list models|chips|systems|schedules|schedulers|routers|keys");
    const char *what = argv[0];
    struct mp_error err = { 0 };
    static char names[256][128];
    if (!strcmp(what, "schedules")) {
        for (int i = 0; schedule_kinds[i]; i++)
            printf("%-12s %s\n", schedule_kinds[i]->name, schedule_kinds[i]->summary);
    } else if (!strcmp(what, "schedulers") || !strcmp(what, "routers")) {
        /* Serving's registries (sim/serve/serve.h). */
        const char *name, *summary;
        bool sched = what[6] == 'l';
        for (int i = 0; (name = sched ? serve_scheduler_name(i, &summary)
                                      : serve_router_name(i, &summary)); i++)
            printf("%-18s %s\n", name, summary);
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
        printf("%-16s %10s %10s %8s %10s %12s  %s\n", "chip", "bf16 TF/s", "fp8 TF/s", "mem GB",
               "mem TB/s", "price", "label");
        for (int i = 0; i < cat.n; i++) {
            const struct chip *c = &cat.chips[i];
            char fp8[32] = "—", price[32] = "—";
            if (c->peak_fp8 > 0) snprintf(fp8, sizeof fp8, "%.0f", c->peak_fp8 / 1e12);
            /* a purchase price, else a cloud price per chip-hour */
            if (c->price_usd > 0) snprintf(price, sizeof price, "$%.0f", c->price_usd);
            else if (c->price_hour_usd > 0) snprintf(price, sizeof price, "$%.2f/h", c->price_hour_usd);
            printf("%-16s %10.0f ", c->name, c->peak_bf16 / 1e12);
            col(fp8, 10, true);
            printf(" %8.1f %10.2f ", c->mem_bytes / 1e9, c->mem_bw / 1e12);
            col(price, 12, true);
            printf("  %s\n", c->label);
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
            int wn = 16;
            for (int k = 0; k < n; k++) wn = (int)strlen(names[k]) > wn ? (int)strlen(names[k]) : wn;
            if (i == 0)
                printf("%-*s %-22s %-20s %-20s %s\n", wn, "system", "chips per node", "scale-up per dir",
                       "scale-out per dir", "collectives in a node");
            char node[96], up[32], out[32];
            snprintf(node, sizeof node, "%d × %s", sys.chips_per_node, sys.chip.name);
            fmt_bw(up, sizeof up, sys.chips_per_node > 1 ? sys.scaleup.bw : 0);
            /* A ring or mesh figure is one link's; say how many a chip has. */
            size_t ul = strlen(up);
            int links = sys.scaleup.topo == TOPO_RING ? 2
                        : sys.scaleup.topo == TOPO_FULL_MESH ? sys.chips_per_node - 1
                        : sys.scaleup.topo == TOPO_TORUS ? 2 * sys.n_dims : 1;
            if (sys.chips_per_node > 2 && sys.scaleup.bw < 1e30 && links > 1)
                snprintf(up + ul, sizeof up - ul, " × %d links", links);
            fmt_bw(out, sizeof out, sys.scaleout.bw);
            printf("%-*s ", wn, names[i]);
            col(node, 22, false);
            printf(" ");
            col(up, 20, false);
            printf(" ");
            col(out, 20, false);
            /* Which model prices in-node collectives (hardware/coll_curve.h). */
            if (sys.curve.present) printf(" measured busbw curve %s\n", sys.curve.name);
            else printf(" %s\n", sys.chips_per_node > 1 ? "alpha-beta on the links" : "—");
            system_release(&sys);
        }
        chip_catalog_release(&cat);
    } else {
    {
        const char *near = cli_closest(what, list_whats);
        fprintf(stderr, "mpsim: list: unknown '%s'%s%s%s; choose models, chips, systems, "
                        "schedules, schedulers, routers or keys\n(see `mpsim list --help`)\n", what,
                near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
        return MP_ERR_INPUT;
    }
    }
    return MP_OK;
}

