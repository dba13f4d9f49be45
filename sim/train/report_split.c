/* report_split.c — the step accounting (step_split.h) as people and tools
 * read it: the summary's block and per-stage table, the JSON objects, the
 * timeline CSV's meta rows; see report.h. */
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <csv.h>

#include "sim/io/units.h"

/* A duration for people, in the largest unit below it. */
static void fmt_dur(char *buf, size_t size, mp_time t)
{
    double a = fabs((double)t);
    if (t == 0) snprintf(buf, size, "0");
    else if (a >= 1e12) snprintf(buf, size, "%.3f s", (double)t / 1e12);
    else if (a >= 1e9) snprintf(buf, size, "%.3f ms", (double)t / 1e9);
    else if (a >= 1e6) snprintf(buf, size, "%.3f us", (double)t / 1e6);
    else snprintf(buf, size, "%.3f ns", (double)t / 1e3);
}

/* A part is shown when some stage has any of it; compute and bubble always. */
static bool part_shown(const struct sim_result *r, int k)
{
    if (k == SPLIT_COMPUTE || k == SPLIT_BUBBLE) return true;
    for (int d = 0; d < r->stages; d++)
        if (r->stage[d].split.part[k]) return true;
    return false;
}

void report_split_text(FILE *f, const struct sim *s)
{
    const struct sim_result *r = &s->res;
    if (!r->stage || r->stages == 0) return;
    double step = (double)r->step_time;
    fprintf(f, "step split  where the step went, mean over %d stage%s (sums to the step time):\n",
            r->stages, r->stages > 1 ? "s" : "");
    for (int k = 0; k < N_SPLIT; k++) {
        if (!part_shown(r, k)) continue;
        char t[32];
        fmt_dur(t, sizeof t, r->split.part[k]);
        fprintf(f, "            %-12s %12s  %5.1f%%\n", step_split_label(k), t,
                step > 0 ? 100.0 * (double)r->split.part[k] / step : 0);
    }
}

void report_split_stage_table(FILE *f, const struct sim *s)
{
    const struct sim_result *r = &s->res;
    if (!r->stage || r->stages == 0) return;
    /* Which columns, once: asked per row it was stages² (a pipeline of
     * thousands of stages took seconds: the value fuzzer). */
    bool shown[N_SPLIT];
    fprintf(f, "\n%-5s", "stage");
    for (int k = 0; k < N_SPLIT; k++)
        if ((shown[k] = part_shown(r, k))) fprintf(f, " %-12s", step_split_label(k));
    fputc('\n', f);
    for (int d = 0; d < r->stages; d++) {
        fprintf(f, "%-5d", d);
        for (int k = 0; k < N_SPLIT; k++) {
            if (!shown[k]) continue;
            char t[32];
            fmt_dur(t, sizeof t, r->stage[d].split.part[k]);
            fprintf(f, " %-12s", t);
        }
        fputc('\n', f);
    }
}

void report_split_json(struct cJSON *parent, const char *name, const struct step_split *x)
{
    cJSON *o = cJSON_AddObjectToObject(parent, name);
    char key[48];
    for (int k = 0; k < N_SPLIT; k++) {
        snprintf(key, sizeof key, "%s_s", step_split_name(k));
        cJSON_AddNumberToObject(o, key, mp_seconds(x->part[k]));
    }
    /* The same parts in integer picoseconds: they add up to the step
     * exactly (doubles hold them exactly below 2^53 ps, about 2.5 hours). */
    cJSON *ps = cJSON_AddObjectToObject(o, "ps");
    for (int k = 0; k < N_SPLIT; k++)
        cJSON_AddNumberToObject(ps, step_split_name(k), (double)x->part[k]);
}

void report_split_meta(const struct sim *s, void (*meta)(void *ctx, int chip, int stage,
                                                        const char *key_value), void *ctx)
{
    const struct sim_result *r = &s->res;
    if (!r->stage) return;
    char a[48], label[96];
    for (int k = 0; k < N_SPLIT; k++) {
        units_format_seconds_exact(r->split.part[k], a, sizeof a);
        snprintf(label, sizeof label, "step_split.%s_s=%s", step_split_name(k), a);
        meta(ctx, -1, -1, label);
    }
    for (int d = 0; d < r->stages; d++)
        for (int k = 0; k < N_SPLIT; k++) {
            units_format_seconds_exact(r->stage[d].split.part[k], a, sizeof a);
            snprintf(label, sizeof label, "step_split.%s_s=%s", step_split_name(k), a);
            meta(ctx, r->stage[d].chip, d, label);
        }
}
