/* cli_compare.c — `mpsim compare A B`: two runs side by side. Each side is
 * a scenario (simulated here) or the JSON `mpsim run --json` printed; the
 * table has the step, throughput, MFU, cost, memory and the step
 * accounting part by part with the difference, then the scenario keys in
 * which the two differ. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "sim/io/config.h"
#include "sim/io/units.h"
#include "sim/train/sim.h"

static const char compare_usage_text[] =
    "usage: mpsim compare A B [--set k=v]... [--set-a k=v]... [--set-b k=v]... [--tokens N]\n"
    "\n"
    "A and B are scenarios (.ini, simulated now) or results of `mpsim run --json`\n"
    "(.json). Prints them side by side: step time, tokens/s, MFU and HFU, cost, chips,\n"
    "peak memory, and the step accounting part by part (compute, recompute, exposed\n"
    "TP/CP/PP/DP/EP, pipeline bubble, optimizer, other) with B − A; then every scenario\n"
    "key whose value differs between them.\n"
    "\n"
    "  --set k=v     override a key of both scenarios (repeatable)\n"
    "  --set-a k=v   of A only; --set-b k=v of B only (compare a scenario with itself,\n"
    "                changed: mpsim compare s.ini s.ini --set-b parallel.tp_overlap=true)\n"
    "\n"
    "exit status: 0 done (a side that does not fit is shown as such); 2 bad input.\n";

struct side {
    char label[160];
    bool feasible, has_metrics;
    char reason[1100];
    double step, tokens, mfu, hfu, usd_step, usd_mtok, chips, peak, capacity;
    bool has_mfu;
    struct step_split split;
    struct config cfg;    /* its keys (a JSON side: defaults + its "keys") */
};

/* Apply the --set (both) and --set-X (this side) assignments. */
static int apply_sets(struct config *cfg, int argc, char **argv, const char *own,
                      struct mp_error *err)
{
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--set") || !strcmp(argv[i], own)) {
            int rc = config_set(cfg, argv[i + 1], argv[i], err);
            if (rc) return rc;
            i++;
        }
    return MP_OK;
}

static int side_from_ini(struct side *sd, const char *path, int argc, char **argv,
                         const char *own, double tokens, struct mp_error *err)
{
    config_defaults(&sd->cfg);
    int rc = config_load(&sd->cfg, path, err);
    if (!rc) rc = apply_sets(&sd->cfg, argc, argv, own, err);
    if (rc) return rc;
    if (sd->cfg.inference.present)
        return mp_fail(err, MP_ERR_INPUT, "%s: compare takes training scenarios; this one has an "
                       "[inference] section", path);
    struct sim *s = mp_xcalloc(1, sizeof *s);
    struct sim_options opts = { .token_budget = tokens };
    rc = sim_run(s, &sd->cfg, &opts, err);
    const struct sim_result *r = &s->res;
    if (rc && !(rc == MP_ERR_INFEASIBLE && r->stage)) {
        if (rc == MP_ERR_INFEASIBLE) {
            sd->feasible = false;
            snprintf(sd->reason, sizeof sd->reason, "%s", err->msg);
            rc = MP_OK;
        }
        sim_release(s);
        free(s);
        return rc;
    }
    sd->feasible = rc == MP_OK;
    if (!sd->feasible) snprintf(sd->reason, sizeof sd->reason, "%s", r->infeasible_reason);
    sd->has_metrics = true;
    sd->step = mp_seconds(r->step_time);
    sd->tokens = r->tokens_per_s;
    sd->has_mfu = s->has_model;
    sd->mfu = r->mfu, sd->hfu = r->hfu;
    sd->usd_step = r->cost.basis != COST_UNKNOWN ? r->cost.usd_per_step : NAN;
    sd->usd_mtok = r->cost.basis != COST_UNKNOWN ? r->cost.usd_per_mtok : NAN;
    sd->chips = r->n_chips;
    sd->capacity = s->sys.chip.mem_bytes;
    for (int d = 0; d < r->stages; d++)
        if (r->stage[d].peak_mem > sd->peak) sd->peak = r->stage[d].peak_mem;
    sd->split = r->split;
    sim_release(s);
    free(s);
    return MP_OK;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int side_from_json(struct side *sd, const char *path, struct mp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return mp_fail(err, MP_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = mp_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 >= cap) {
            if (cap > (size_t)1 << 30) break;
            cap *= 2;
            buf = mp_xrealloc(buf, cap);
        }
    }
    fclose(f);
    buf[n] = '\0';
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    if (!cJSON_IsObject(root) || !cJSON_IsNumber(cJSON_GetObjectItem(root, "step_time_s"))) {
        cJSON_Delete(root);
        return mp_fail(err, MP_ERR_INPUT, "%s: expected the JSON object `mpsim run --json` prints "
                       "(with step_time_s); got something else", path);
    }
    config_defaults(&sd->cfg);
    const cJSON *keys = cJSON_GetObjectItem(root, "keys"), *k;
    cJSON_ArrayForEach(k, keys) {
        if (!cJSON_IsString(k)) continue;
        struct mp_error e2;
        if (config_set_key(&sd->cfg, k->string, k->valuestring, path, &e2) != MP_OK) {
            cJSON_Delete(root);
            return mp_fail(err, MP_ERR_INPUT, "%s: key \"keys\".%s: %s", path, k->string, e2.msg);
        }
    }
    const cJSON *fe = cJSON_GetObjectItem(root, "feasible");
    sd->feasible = !cJSON_IsFalse(fe);
    const cJSON *why = cJSON_GetObjectItem(root, "infeasible_reason");
    if (cJSON_IsString(why)) snprintf(sd->reason, sizeof sd->reason, "%s", why->valuestring);
    sd->has_metrics = true;
    sd->step = num(root, "step_time_s");
    sd->tokens = num(root, "tokens_per_s");
    sd->mfu = num(root, "mfu"), sd->hfu = num(root, "hfu");
    sd->has_mfu = !isnan(sd->mfu);
    sd->usd_step = num(root, "usd_per_step"), sd->usd_mtok = num(root, "usd_per_mtok");
    sd->chips = num(root, "chips");
    sd->capacity = num(root, "capacity_bytes");
    const cJSON *st;
    cJSON_ArrayForEach(st, cJSON_GetObjectItem(root, "stages")) {
        double p = num(st, "peak_mem_bytes");
        if (p > sd->peak) sd->peak = p;
    }
    const cJSON *ps = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "step_split"), "ps");
    for (int i = 0; i < N_SPLIT; i++) {
        double v = num(ps, step_split_name(i));
        if (!isnan(v) && !(v >= 0 && v < (double)MP_TIME_HUGE)) {
            cJSON_Delete(root);
            return mp_fail(err, MP_ERR_INPUT, "%s: key step_split.ps.%s: expected picoseconds "
                           ">= 0 and below 2^62, got %g", path, step_split_name(i), v);
        }
        sd->split.part[i] = isnan(v) ? 0 : mp_time_from_ps(v);
    }
    cJSON_Delete(root);
    return MP_OK;
}

static bool is_json(const char *path)
{
    size_t n = strlen(path);
    return n > 5 && !strcmp(path + n - 5, ".json");
}

static void row(const char *what, const char *a, const char *b, const char *diff)
{
    printf("%-14s %-22s %-22s %s\n", what, a, b, diff);
}

static void row_num(const char *what, double a, double b, const char *fmt, bool pct_diff)
{
    char x[48] = "n/a", y[48] = "n/a", d[48] = "";
    if (!isnan(a)) snprintf(x, sizeof x, fmt, a);
    if (!isnan(b)) snprintf(y, sizeof y, fmt, b);
    if (pct_diff && !isnan(a) && !isnan(b) && a != 0) snprintf(d, sizeof d, "%+.1f%%", 100 * (b - a) / a);
    row(what, x, y, d);
}

static void fmt_part(char *buf, size_t size, mp_time t, double step)
{
    char d[32];
    units_format_duration(t, d, (int)sizeof d);
    snprintf(buf, size, "%s (%.1f%%)", d, step > 0 ? 100 * mp_seconds(t) / step : 0);
}

int cli_compare(int argc, char **argv)
{
    const char *path[2] = { NULL, NULL };
    int n = 0;
    double tokens = 0;
    static const char *const options[] = { "--set", "--set-a", "--set-b", "--tokens", "--help", NULL };
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(compare_usage_text, stdout);
            return MP_OK;
        } else if (!strcmp(a, "--set") || !strcmp(a, "--set-a") || !strcmp(a, "--set-b") ||
                   !strcmp(a, "--tokens")) {
            if (i + 1 >= argc) return cli_usage_error("compare: %s needs a value", a);
            if (!strcmp(a, "--tokens") && cost_parse_tokens(argv[i + 1], &tokens))
                return cli_usage_error("compare: --tokens: expected a token count > 0 such as 1T, "
                                       "300B or 1e12, got '%s'", argv[i + 1]);
            i++;
        } else if (a[0] == '-' && a[1]) {
            return cli_unknown_option("compare", a, options);
        } else if (n == 2) {
            return cli_usage_error("compare: two runs at a time (extra argument '%s')", a);
        } else {
            path[n++] = a;
        }
    }
    if (n < 2) return cli_usage_error("%s", "compare: which two? usage: mpsim compare A.ini B.ini");
    struct side *sd = mp_xcalloc(2, sizeof *sd);
    struct mp_error err = { 0 };
    int rc = MP_OK;
    for (int k = 0; k < 2 && !rc; k++) {
        const char *own = k == 0 ? "--set-a" : "--set-b";
        size_t ll = (size_t)snprintf(sd[k].label, sizeof sd[k].label, "%s", path[k]);
        for (int i = 0; i + 1 < argc && ll < sizeof sd[k].label; i++)
            if (!strcmp(argv[i], "--set") || !strcmp(argv[i], own))
                ll += (size_t)snprintf(sd[k].label + ll, sizeof sd[k].label - ll, " %s %s", argv[i],
                                       argv[i + 1]), i++;
        if (is_json(path[k])) {
            for (int i = 0; i + 1 < argc && !rc; i++)
                if (!strcmp(argv[i], "--set") || !strcmp(argv[i], own))
                    rc = mp_fail(&err, MP_ERR_INPUT, "compare: %s %s: a JSON result is what a run "
                                 "printed; its keys cannot be changed", argv[i], argv[i + 1]);
            if (!rc) rc = side_from_json(&sd[k], path[k], &err);
        } else {
            rc = side_from_ini(&sd[k], path[k], argc, argv, own, tokens, &err);
        }
    }
    if (rc) {
        free(sd);
        return cli_fail(&err);
    }
    const struct side *A = &sd[0], *B = &sd[1];
    char a[64], b[64], d[64];
    printf("A  %s\nB  %s\n\n", A->label, B->label);
    row("", "A", "B", "B - A");
    row("fits", A->feasible ? "yes" : "no (see below)", B->feasible ? "yes" : "no (see below)", "");
    row_num("step time s", A->step, B->step, "%.6g", true);
    row_num("tokens/s", A->tokens, B->tokens, "%.6g", true);
    row_num("MFU %", A->has_mfu ? 100 * A->mfu : NAN, B->has_mfu ? 100 * B->mfu : NAN, "%.2f", false);
    row_num("HFU %", A->has_mfu ? 100 * A->hfu : NAN, B->has_mfu ? 100 * B->hfu : NAN, "%.2f", false);
    row_num("$ per step", A->usd_step, B->usd_step, "%.4g", true);
    row_num("$ per Mtok", A->usd_mtok, B->usd_mtok, "%.4g", true);
    row_num("chips", A->chips, B->chips, "%.0f", false);
    snprintf(a, sizeof a, "%.2f of %.0f GB", A->peak / 1e9, A->capacity / 1e9);
    snprintf(b, sizeof b, "%.2f of %.0f GB", B->peak / 1e9, B->capacity / 1e9);
    snprintf(d, sizeof d, "%+.2f GB", (B->peak - A->peak) / 1e9);
    row("peak memory", a, b, d);
    printf("\nstep accounting (mean over stages; each column sums to its step time):\n");
    for (int k = 0; k < N_SPLIT; k++) {
        mp_time x = A->split.part[k], y = B->split.part[k];
        if (!x && !y && k != SPLIT_COMPUTE && k != SPLIT_BUBBLE) continue;
        fmt_part(a, sizeof a, x, A->step);
        fmt_part(b, sizeof b, y, B->step);
        char t[32];
        units_format_duration(y - x < 0 ? x - y : y - x, t, (int)sizeof t);
        if (y == x) snprintf(d, sizeof d, "0");
        else snprintf(d, sizeof d, "%s%s", y < x ? "-" : "+", t);
        row(step_split_label(k), a, b, d);
    }
    printf("\nkeys that differ:\n");
    int diffs = 0;
    for (const struct config_key *k = config_keys; k->name; k++) {
        char x[CONFIG_STR], y[CONFIG_STR];
        config_format_value(&A->cfg, k, x, sizeof x);
        config_format_value(&B->cfg, k, y, sizeof y);
        if (!strcmp(x, y)) continue;
        printf("  %-28s %-22s %s\n", k->name, x, y);
        diffs++;
    }
    if (!diffs) printf("  (none: the same scenario keys)\n");
    for (int k = 0; k < 2; k++)
        if (!sd[k].feasible) printf("\n%s does not fit: %s\n", k ? "B" : "A", sd[k].reason);
    free(sd);
    return MP_OK;
}
