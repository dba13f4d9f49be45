/* cli.c — helpers shared by the mpsim subcommands; see cli.h. */
#include "cli.h"

#include <stdint.h>
#include <string.h>

#include <cJSON.h>

#include "sim/io/config.h"
#include "sim/io/outfile.h"
#include "sim/strategy/schedule.h"

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

void cli_infeasible_json(const char *mode, const char *reason)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "mode", mode);
    cJSON_AddBoolToObject(o, "feasible", 0);
    cJSON_AddStringToObject(o, "infeasible_reason", reason);
    char *text = cJSON_Print(o);
    printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(o);
}

int cli_usage_error(const char *fmt, const char *arg)
{
    char q[512], msg[1024];
    mp_quote(arg ? arg : "", arg ? strlen(arg) : 0, 200, q, sizeof q);
    snprintf(msg, sizeof msg, fmt, q);
    print_line(msg);
    /* One hint, the most useful: the subcommand's own help when the
     * message names it ("sweep: ..."), and none when it already points at
     * a --help. */
    if (strstr(msg, "--help")) return MP_ERR_INPUT;
    size_t n = strcspn(msg, ": ");
    if (msg[n] == ':' && n < 16 && n > 0 && strchr("abcdefghijklmnopqrstuvwxyz", msg[0]))
        fprintf(stderr, "(see `mpsim %.*s --help`)\n", (int)n, msg);
    else
        fprintf(stderr, "(see `mpsim --help`)\n");
    return MP_ERR_INPUT;
}

const char *cli_closest(const char *word, const char *const *names)
{
    const char *best = NULL;
    size_t bd = SIZE_MAX, len = strlen(word);
    for (; *names; names++) {
        size_t d = mp_edit_distance(word, *names);
        if (d < bd) bd = d, best = *names;
    }
    /* A typo, not another word: a third of the letters at most (and 2). */
    size_t limit = len / 3 > 2 ? 2 : len / 3 < 1 ? 1 : len / 3;
    return best && bd <= limit ? best : NULL;
}

int cli_unknown_option(const char *cmd, const char *arg, const char *const *known)
{
    const char *near = cli_closest(arg, known);
    char q[512];
    mp_quote(arg, strlen(arg), 200, q, sizeof q);
    fprintf(stderr, "mpsim: %s: unknown option '%s'", cmd, q);
    if (near) fprintf(stderr, " (did you mean '%s'?)", near);
    fprintf(stderr, "\n(see `mpsim %s --help`)\n", cmd);
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


void cli_warn_layout(const struct sim *s)
{
    const struct config *c = &s->cfg;
    int per_node = s->sys.chips_per_node;
    if (c->parallel.tp > 1 && per_node > 0 && c->parallel.tp > per_node)
        fprintf(stderr, "mpsim: warning: tp %d spans %d nodes of %d chips: every tensor-parallel "
                        "collective crosses the scale-out fabric (keep tp ≤ %d, or use pp or dp "
                        "across nodes)\n", c->parallel.tp, (c->parallel.tp + per_node - 1) / per_node,
                per_node, per_node);
    /* A schedule with a fixed number of chunks per device (its row in
     * schedule_kinds[]) does not read parallel.vpp; say so rather than run
     * a layout other than the one asked for without a word. */
    const struct schedule_kind *k = schedule_find(c->training.schedule);
    if (k && k->chunks > 0 && c->parallel.vpp > 1)
        fprintf(stderr, "mpsim: warning: schedule %s runs %d model chunk%s per device: "
                        "parallel.vpp = %d is ignored (schedule = interleaved takes vpp)\n",
                k->name, k->chunks, k->chunks == 1 ? "" : "s", c->parallel.vpp);
    const struct sim_result *r = &s->res;
    int lo = -1, hi = -1;
    for (int d = 0; d < r->stages; d++) {
        if (lo < 0 || r->stage[d].busy < r->stage[lo].busy) lo = d;
        if (hi < 0 || r->stage[d].busy > r->stage[hi].busy) hi = d;
    }
    /* 15%: an assumption for "very different". Megatron's embedding and LM
     * head make 4% on GPT-3 175B over 16 stages; one extra layer in eight,
     * or Llama 3's 128K-word LM head on an 8-layer stage, make 15%. */
    if (lo >= 0 && r->stage[lo].busy > 0 && (double)r->stage[hi].busy > 1.15 * (double)r->stage[lo].busy)
        fprintf(stderr, "mpsim: warning: stage %d computes %.4g s, stage %d %.4g s (%.2f×): the "
                        "pipeline runs at the slowest stage's pace, and the others wait (see the "
                        "bubble per stage)\n", hi, mp_seconds(r->stage[hi].busy), lo,
                mp_seconds(r->stage[lo].busy), (double)r->stage[hi].busy / (double)r->stage[lo].busy);
}
