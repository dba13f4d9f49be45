/* cli.c — helpers shared by the mpsim subcommands; see cli.h. */
#include "cli.h"

#include <string.h>

#include "sim/io/config.h"
#include "sim/io/outfile.h"

/* Every message is one line (issue 16): whatever a file or an argument put
 * into it — a newline, a NUL's neighbours, a BOM — is shown escaped. */
static void print_line(const char *msg)
{
    char line[4 * sizeof ((struct mp_error *)0)->msg + 4];
    mp_quote(msg, strlen(msg), sizeof line, line, sizeof line);
    fprintf(stderr, "mpsim: %s\n", line);
}

int cli_fail(const struct mp_error *err)
{
    print_line(err->msg);
    return err->status ? err->status : MP_ERR_INPUT;
}

int cli_infeasible(const struct mp_error *err)
{
    char msg[sizeof err->msg + 16];
    snprintf(msg, sizeof msg, "infeasible: %s", err->msg);
    print_line(msg);
    return MP_ERR_INFEASIBLE;
}

int cli_usage_error(const char *fmt, const char *arg)
{
    char q[512], msg[1024];
    mp_quote(arg ? arg : "", arg ? strlen(arg) : 0, 200, q, sizeof q);
    snprintf(msg, sizeof msg, fmt, q);
    print_line(msg);
    fprintf(stderr, "(see `mpsim --help`)\n");
    return MP_ERR_INPUT;
}

int cli_load_scenario(struct config *cfg, const char *path, int argc, char **argv,
                      struct mp_error *err)
{
    config_defaults(cfg);
    int rc = config_load(cfg, path, err);
    /* --set is applied after the file, wherever it stood on the line: the
     * command line overrides the scenario. */
    for (int i = 0; i + 1 < argc && !rc; i++)
        if (!strcmp(argv[i], "--set")) rc = config_set(cfg, argv[++i], "--set", err);
    return rc;
}

void cli_print_keys(FILE *f)
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
        char value[64], range[96] = "";
        config_format_value(&def, k, value, sizeof value);
        /* Every cap said where the keys are listed (issue 16). */
        if ((k->type == CONFIG_INT || k->type == CONFIG_DOUBLE) && k->min <= k->max)
            snprintf(range, sizeof range, " [%.10g..%.10g]", k->min, k->max);
        else if (k->type == CONFIG_DURATION) snprintf(range, sizeof range, " [0..1000000s]");
        else if (k->type == CONFIG_SIZE && k->min <= k->max)
            snprintf(range, sizeof range, " [%g..%g bytes]", k->min, k->max);
        else if (k->type == CONFIG_SIZE) snprintf(range, sizeof range, " [0..1024PiB]");
        fprintf(f, "    %-22s = %-12s %s%s%s%s\n", k->name + len + 1, value, k->doc, range,
                k->choices ? " — one of " : "", k->choices ? k->choices : "");
    }
}

int cli_check_outputs(const char *const *paths, const char *const *flags, int n,
                      const char *input)
{
    struct mp_error err = { 0 };
    if (outfile_distinct(paths, flags, n, &err)) return cli_fail(&err);
    for (int i = 0; input && i < n; i++)
        if (paths[i] && strcmp(paths[i], "-") && outfile_same(paths[i], input)) {
            mp_fail(&err, MP_ERR_INPUT, "%s %.300s names the input %.300s: expected an output "
                    "file of its own (it would replace what it was made from)", flags[i],
                    paths[i], input);
            return cli_fail(&err);
        }
    return MP_OK;
}

int cli_write_output(const char *path, void (*writer)(FILE *, const struct sim *),
                     const struct sim *s, struct mp_error *err)
{
    struct outfile out;
    int rc = outfile_open(&out, path, err);
    if (rc) return rc;
    writer(out.f, s);
    return outfile_commit(&out, err);
}

