/* cli_plot.c — `mpsim plot`: a sweep CSV as a chart (plot.h). */
#include <string.h>

#include "cli.h"
#include "sim/explore/plot.h"
#include "sim/explore/sweep.h"
#include "sim/io/units.h"

static const char plot_usage_text[] =
    "usage: mpsim plot SWEEP.csv --x KEY --y METRIC [--by KEY] --out FILE.png|svg|pdf\n"
    "\n"
    "Draws METRIC against KEY from a sweep CSV, one line per value of --by, with\n"
    "infeasible points marked by a red x. Where the sweep varied more keys, each\n"
    "line goes through the best value at each x.\n"
    "\n"
    "  --x KEY, --y METRIC  columns (a bare key name such as pp also works)\n"
    "  --by KEY             one line per value of this column\n"
    "  --out FILE           .png, .svg or .pdf (written whole or not at all)\n"
    "  --title TEXT         instead of \"METRIC against KEY\"\n"
    "  --log x|y|xy         logarithmic axes\n"
    "  --size WxH           picture size (default 1000x700)\n";

int cli_plot(int argc, char **argv)
{
    const char *csv = NULL;
    struct plot_options opt = { 0 };
    struct mp_error err = { 0 };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(plot_usage_text, stdout);
            return MP_OK;
        } else if (!strcmp(a, "--x") || !strcmp(a, "--y") || !strcmp(a, "--by") ||
                   !strcmp(a, "--out") || !strcmp(a, "--title") || !strcmp(a, "--log") ||
                   !strcmp(a, "--size")) {
            if (i + 1 >= argc) return cli_usage_error("plot: %s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--x")) opt.x = v;
            else if (!strcmp(a, "--y")) opt.y = v;
            else if (!strcmp(a, "--by")) opt.by = v;
            else if (!strcmp(a, "--out")) opt.out = v;
            else if (!strcmp(a, "--title")) opt.title = v;
            else if (!strcmp(a, "--log")) {
                if (strcmp(v, "x") && strcmp(v, "y") && strcmp(v, "xy"))
                    return cli_usage_error("plot: --log: expected x, y or xy, got '%s'", v);
                opt.log_x = strchr(v, 'x') != NULL;
                opt.log_y = strchr(v, 'y') != NULL;
            } else {
                char w[16], h[16];
                long long wn, hn;
                const char *x = strchr(v, 'x');
                if (!x || x - v >= 15 || strlen(x + 1) >= 15 ||
                    (snprintf(w, sizeof w, "%.*s", (int)(x - v), v), snprintf(h, sizeof h, "%s", x + 1),
                     units_parse_int(w, 100, 10000, &wn) || units_parse_int(h, 100, 10000, &hn)))
                    return cli_usage_error("plot: --size: expected WxH such as 1000x700, got '%s'",
                                           v);
                opt.width = (int)wn;
                opt.height = (int)hn;
            }
        } else if (a[0] == '-' && a[1]) {
            return cli_unknown_option("plot", a, (const char *const[]){ "--x", "--y", "--by",
                                      "--out", "--title", "--log", "--size", "--help", NULL });
        } else if (csv) {
            return cli_usage_error("plot: one CSV at a time (extra argument '%s')", a);
        } else {
            csv = a;
        }
    }
    if (!csv) return cli_usage_error("%s", "plot: which sweep CSV? usage: mpsim plot SWEEP.csv "
                                           "--x KEY --y METRIC --out FILE.png");
    if (!opt.x || !opt.y || !opt.out)
        return cli_usage_error("%s", "plot: --x, --y and --out are required");
    const char *outs[] = { opt.out }, *flags[] = { "--out" };
    if (cli_check_outputs(outs, flags, 1, csv)) return MP_ERR_INPUT;
    struct sweep_table t;
    if (sweep_table_load(&t, csv, &err)) return cli_fail(&err);
    int rc = plot_sweep(&t, &opt, &err);
    sweep_table_release(&t);
    return rc ? cli_fail(&err) : MP_OK;
}
