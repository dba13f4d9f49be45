/* cli.c — helpers shared by the mpsim subcommands; see cli.h. */
#include "cli.h"

#include <string.h>

#include "sim/io/config.h"
#include "sim/io/outfile.h"

int cli_fail(const struct mp_error *err)
{
    fprintf(stderr, "mpsim: %s\n", err->msg);
    return err->status ? err->status : MP_ERR_INPUT;
}

int cli_usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "mpsim: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see `mpsim --help`)\n");
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
        char value[64];
        config_format_value(&def, k, value, sizeof value);
        fprintf(f, "    %-22s = %-12s %s%s%s\n", k->name + len + 1, value, k->doc,
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

