/* explain.c — the step accounting and simulated levers; see explain.h. */
#include "explain.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "sim/io/units.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"
#include "sweep.h"

static void fill_run(struct explain_run *out, const struct sim *s, int rc,
                     const struct mp_error *err)
{
    const struct sim_result *r = &s->res;
    memset(out, 0, sizeof *out);
    out->rc = rc;
    out->has_metrics = r->stage != NULL;
    out->chips = r->n_chips;
    if (out->has_metrics) {
        out->step = r->step_time;
        out->split = r->split;
        out->mfu = r->mfu;
        for (int d = 0; d < r->stages; d++)
            if (r->stage[d].peak_mem > out->peak_mem) out->peak_mem = r->stage[d].peak_mem;
    }
    if (rc != MP_OK)
        snprintf(out->reason, sizeof out->reason, "%s",
                 rc == MP_ERR_INFEASIBLE && r->infeasible_reason[0] ? r->infeasible_reason : err->msg);
}

/* ---- the neighbourhood ----------------------------------------------------- */

struct gen {
    struct explain *x;
    int cap;
    struct config *cfgs;   /* [n_levers], the changed scenarios */
};

static void fmt_s(char *buf, size_t size, mp_time t)
{
    units_format_duration(t, buf, (int)size);
}

/* Add a lever: `why` (printf) and NULL-terminated key=value changes. A
 * change the key table refuses (out of range) drops the lever. */
static void lever(struct gen *g, bool memory, const char *why, ...)
{
    struct explain *x = g->x;
    struct explain_lever lv = { .memory = memory };
    snprintf(lv.why, sizeof lv.why, "%s", why);
    struct config c = x->cfg;
    va_list ap;
    va_start(ap, why);
    const char *set;
    bool ok = true;
    while ((set = va_arg(ap, const char *)) && lv.n_set < EXPLAIN_MAX_SETS) {
        struct mp_error err;
        if (config_set(&c, set, "explain", &err) != MP_OK) ok = false;
        snprintf(lv.set[lv.n_set++], sizeof lv.set[0], "%s", set);
    }
    va_end(ap);
    if (!ok) return;
    /* The same change twice (two rules reaching it) runs once. */
    for (int i = 0; i < x->n_levers; i++) {
        bool same = x->lever[i].n_set == lv.n_set;
        for (int k = 0; same && k < lv.n_set; k++) same = !strcmp(x->lever[i].set[k], lv.set[k]);
        if (same) return;
    }
    MP_GROW(x->lever, g->cap, x->n_levers + 1);
    g->cfgs = mp_xrealloc(g->cfgs, (size_t)g->cap * sizeof *g->cfgs);
    g->cfgs[x->n_levers] = c;
    x->lever[x->n_levers++] = lv;
}

static void generate(struct gen *g)
{
    struct explain *x = g->x;
    const struct config *c = &x->cfg;
    const struct sim *s = x->sim;
    const mp_time *part = x->base.split.part;
    int tp = c->parallel.tp, pp = c->parallel.pp, dp = c->parallel.dp, vpp = c->parallel.vpp;
    int mb = c->training.micro_batch, gb = c->training.global_batch;
    int layers = s->has_model ? s->model.decoders : 0;
    const char *sched = c->training.schedule;
    bool plain = !strcmp(sched, "1f1b") || !strcmp(sched, "gpipe");
    char why[96], t[32], a[96], b[96], d[96];

    /* The pipeline bubble. */
    fmt_s(t, sizeof t, part[SPLIT_BUBBLE]);
    snprintf(why, sizeof why, "bubble %s", t);
    if (pp > 1) {
        int from = plain ? 2 : !strcmp(sched, "interleaved") ? vpp * 2 : 0;
        for (int v = from; v && v <= (plain ? 4 : from); v *= 2) {
            if (layers && layers % (pp * v)) continue;
            snprintf(a, sizeof a, "parallel.vpp=%d", v);
            lever(g, false, why, "training.schedule=interleaved", a, NULL);
        }
        if (plain || !strcmp(sched, "interleaved")) {
            if (vpp > 1) lever(g, false, why, "training.schedule=zb-h1", "parallel.vpp=1", NULL);
            else lever(g, false, why, "training.schedule=zb-h1", NULL);
        }
        if (mb >= 2 && mb % 2 == 0) {
            snprintf(a, sizeof a, "training.micro_batch=%d", mb / 2);
            lever(g, false, why, a, NULL);
        }
    }
    /* Exposed tensor-parallel communication. */
    fmt_s(t, sizeof t, part[SPLIT_TP]);
    snprintf(why, sizeof why, "exposed TP %s", t);
    if (tp > 1 && !c->parallel.tp_overlap) lever(g, false, why, "parallel.tp_overlap=true", NULL);
    /* Re-splits need a model that shrinks per stage: a synthetic one's
     * times are per stage whatever pp is. */
    if (s->has_model && tp > 1 && tp % 2 == 0 && pp * 2 * vpp <= layers) {
        snprintf(a, sizeof a, "parallel.tp=%d", tp / 2);
        snprintf(b, sizeof b, "parallel.pp=%d", pp * 2);
        lever(g, false, why, a, b, NULL);
    }
    fmt_s(t, sizeof t, part[SPLIT_BUBBLE]);
    snprintf(d, sizeof d, "bubble %s", t);
    if (s->has_model && pp % 2 == 0) {
        snprintf(a, sizeof a, "parallel.tp=%d", tp * 2);
        snprintf(b, sizeof b, "parallel.pp=%d", pp / 2);
        if (pp / 2 == 1 && strcmp(sched, "1f1b"))
            lever(g, false, d, a, b, "training.schedule=1f1b", "parallel.vpp=1", NULL);
        else
            lever(g, false, d, a, b, NULL);
    }
    /* Exposed data-parallel communication. */
    fmt_s(t, sizeof t, part[SPLIT_DP]);
    snprintf(why, sizeof why, "exposed DP %s", t);
    if (dp > 1 && !c->training.dp_overlap) lever(g, false, why, "training.dp_overlap=true", NULL);
    if (s->has_model && dp > 1 && dp % 2 == 0 && pp * 2 * vpp <= layers) {
        snprintf(a, sizeof a, "parallel.pp=%d", pp * 2);
        snprintf(b, sizeof b, "parallel.dp=%d", dp / 2);
        lever(g, false, why, a, b, NULL);
    }
    if (s->has_model && pp % 2 == 0 && gb % (mb * dp * 2) == 0) {
        snprintf(a, sizeof a, "parallel.pp=%d", pp / 2);
        snprintf(b, sizeof b, "parallel.dp=%d", dp * 2);
        if (pp / 2 == 1 && strcmp(sched, "1f1b"))
            lever(g, false, d, a, b, "training.schedule=1f1b", "parallel.vpp=1", NULL);
        else
            lever(g, false, d, a, b, NULL);
    }
    /* Compute: less recompute, larger microbatches. */
    fmt_s(t, sizeof t, part[SPLIT_RECOMPUTE]);
    snprintf(why, sizeof why, "recompute %s", t);
    if (c->training.recompute == RECOMPUTE_FULL) lever(g, false, why, "training.recompute=selective", NULL);
    /* Selective recompute of FlashAttention layers re-runs nothing (its
     * kernel recomputes inside its backward): no lever where it costs 0. */
    if (c->training.recompute == RECOMPUTE_SELECTIVE && part[SPLIT_RECOMPUTE] > 0)
        lever(g, false, why, "training.recompute=none", NULL);
    fmt_s(t, sizeof t, part[SPLIT_COMPUTE]);
    snprintf(why, sizeof why, "compute %s", t);
    if (s->has_model && gb % (2 * mb * dp) == 0) {
        snprintf(a, sizeof a, "training.micro_batch=%d", mb * 2);
        lever(g, false, why, a, NULL);
    }
    /* Memory. */
    snprintf(why, sizeof why, "memory %.1f/%.1f GB", x->base.peak_mem / 1e9, x->capacity / 1e9);
    if (s->has_model && c->training.recompute == RECOMPUTE_NONE)
        lever(g, true, why, "training.recompute=selective", NULL);
    if (tp > 1 && !c->parallel.sp && !c->parallel.tsp) lever(g, true, why, "parallel.sp=true", NULL);
    if (dp > 1 && c->training.zero < 3) {
        snprintf(a, sizeof a, "training.zero=%d", c->training.zero + 1);
        lever(g, true, why, a, NULL);
    }
    /* Short of memory (or out of it): the strongest savings too. */
    if (s->has_model && (x->base.rc != MP_OK || x->base.peak_mem > 0.9 * x->capacity)) {
        if (c->training.recompute != RECOMPUTE_FULL) lever(g, true, why, "training.recompute=full", NULL);
        if (dp > 1 && c->training.zero < 3) lever(g, true, why, "training.zero=3", NULL);
    }
}

/* ---- running and ranking ------------------------------------------------------ */

struct done_ctx {
    struct explain *x;
};

static void lever_done(void *vctx, int i, const struct sim *s, int rc, const struct mp_error *err)
{
    struct done_ctx *d = vctx;
    fill_run(&d->x->lever[i].run, s, rc, err);
}

static int lever_cmp(const void *pa, const void *pb)
{
    const struct explain_lever *a = pa, *b = pb;
    bool fa = a->run.rc == MP_OK, fb = b->run.rc == MP_OK;
    if (fa != fb) return fa ? -1 : 1;
    if (fa && a->run.step != b->run.step) return a->run.step < b->run.step ? -1 : 1;
    return 0;
}

int explain_run(struct explain *x, const struct config *cfg, int jobs, struct mp_error *err)
{
    memset(x, 0, sizeof *x);
    x->cfg = *cfg;
    if (cfg->inference.present)
        return mp_fail(err, MP_ERR_INPUT, "%s: explain is for training scenarios; this one has "
                       "an [inference] section (serving)", cfg->path[0] ? cfg->path : "scenario");
    x->sim = mp_xcalloc(1, sizeof *x->sim);
    int rc = sim_run(x->sim, cfg, NULL, err);
    if (rc != MP_OK && !(rc == MP_ERR_INFEASIBLE && x->sim->res.stage)) return rc;
    fill_run(&x->base, x->sim, rc, err);
    x->capacity = x->sim->sys.chip.mem_bytes;
    snprintf(x->chip, sizeof x->chip, "%s", x->sim->sys.chip.name);
    x->stages = x->sim->res.stages;
    x->microbatches = x->sim->res.microbatches;
    struct gen g = { .x = x };
    generate(&g);
    /* Levers run in the order they were proposed (insertion order), so the
     * ranking's ties break the same way for any jobs count. */
    struct done_ctx d = { .x = x };
    struct sim_options none = { 0 };
    sweep_run_configs(g.cfgs, x->n_levers, jobs, &none, lever_done, &d);
    free(g.cfgs);
    /* Fitting levers first, by step (a stable insertion sort: ties keep the
     * order they were proposed in), then the rest in that order. */
    struct explain_lever *sorted = mp_xmalloc((size_t)(x->n_levers ? x->n_levers : 1) * sizeof *sorted);
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < x->n_levers; i++)
            if ((x->lever[i].run.rc == MP_OK) == (pass == 0)) sorted[n++] = x->lever[i];
    int fit = 0;
    while (fit < n && sorted[fit].run.rc == MP_OK) fit++;
    for (int i = 1; i < fit; i++) {
        struct explain_lever k = sorted[i];
        int j = i - 1;
        while (j >= 0 && lever_cmp(&sorted[j], &k) > 0) {
            sorted[j + 1] = sorted[j];
            j--;
        }
        sorted[j + 1] = k;
    }
    memcpy(x->lever, sorted, (size_t)n * sizeof *sorted);
    free(sorted);
    return MP_OK;
}

void explain_release(struct explain *x)
{
    if (x->sim) {
        sim_release(x->sim);
        free(x->sim);
    }
    free(x->lever);
    memset(x, 0, sizeof *x);
}

/* ---- output -------------------------------------------------------------- */

static void print_sets(FILE *f, const struct explain_lever *lv)
{
    for (int k = 0; k < lv->n_set; k++) fprintf(f, "%s%s", k ? " " : "", lv->set[k]);
}

/* The parts that moved most, largest first: "exposed TP −1.6 s, bubble −0.1 s". */
static void print_moves(FILE *f, const struct step_split *from, const struct step_split *to)
{
    int order[N_SPLIT], n = 0;
    for (int k = 0; k < N_SPLIT; k++)
        if (to->part[k] != from->part[k]) order[n++] = k;
    for (int i = 1; i < n; i++) {
        int k = order[i], j = i - 1;
        mp_time dk = llabs(to->part[k] - from->part[k]);
        while (j >= 0 && llabs(to->part[order[j]] - from->part[order[j]]) < dk) {
            order[j + 1] = order[j];
            j--;
        }
        order[j + 1] = k;
    }
    for (int i = 0; i < n && i < 3; i++) {
        char t[32];
        mp_time dd = to->part[order[i]] - from->part[order[i]];
        units_format_duration(dd < 0 ? -dd : dd, t, sizeof t);
        fprintf(f, "%s%s %s%s", i ? ", " : "", step_split_label(order[i]), dd < 0 ? "-" : "+", t);
    }
}

void explain_print(FILE *f, const struct explain *x, int top)
{
    const struct config *c = &x->cfg;
    const struct sim *s = x->sim;
    char t[32];
    /* context (issue 17): the CP degree in the product when there is one */
    char cp[32] = "";
    if (c->parallel.cp > 1) snprintf(cp, sizeof cp, " × cp %d", c->parallel.cp);
    fprintf(f, "scenario    %s: %s, tp %d%s × pp %d × dp %d = %d × %s, %s, %d microbatches of %d\n",
            c->name[0] ? c->name : "(defaults)", s->has_model ? s->model.name : "synthetic",
            c->parallel.tp, cp, c->parallel.pp, c->parallel.dp, x->base.chips, x->chip,
            c->training.schedule, x->microbatches, c->training.micro_batch);
    units_format_duration(x->base.step, t, sizeof t);
    fprintf(f, "step time   %s%s; peak memory %.2f GB of %.2f GB\n", t,
            x->base.rc == MP_OK ? "" : " (does not fit)", x->base.peak_mem / 1e9, x->capacity / 1e9);
    report_split_text(f, s);
    report_split_stage_table(f, s);

    int fit = 0;
    for (int i = 0; i < x->n_levers; i++) fit += x->lever[i].run.rc == MP_OK;
    fprintf(f, "\nlevers, each simulated on the same %d chips (the step with the change, against "
               "%s):\n", x->base.chips, t);
    if (fit == 0) fprintf(f, "  (none of the changes tried fits or runs)\n");
    for (int i = 0, shown = 0; i < x->n_levers && shown < top; i++) {
        const struct explain_lever *lv = &x->lever[i];
        if (lv->run.rc != MP_OK) continue;
        shown++;
        char st[32], dt[32];
        mp_time d = lv->run.step - x->base.step;
        units_format_duration(lv->run.step, st, sizeof st);
        units_format_duration(d < 0 ? -d : d, dt, sizeof dt);
        fprintf(f, "  %2d. %s: ", shown, lv->why);
        print_sets(f, lv);
        fprintf(f, "\n      → step %s (%s%s, %+.1f%%); ", st, d < 0 ? "-" : d > 0 ? "+" : "±", dt,
                x->base.step > 0 ? 100.0 * (double)d / (double)x->base.step : 0);
        if (d) print_moves(f, &x->base.split, &lv->run.split);
        else fprintf(f, "no change");
        fprintf(f, "; peak %.1f", x->base.peak_mem / 1e9);
        if (fabs(lv->run.peak_mem - x->base.peak_mem) >= 0.05e9) fprintf(f, " → %.1f", lv->run.peak_mem / 1e9);
        fprintf(f, " of %.0f GB%s\n", x->capacity / 1e9,
                lv->memory && lv->run.peak_mem < x->base.peak_mem ? " (frees memory)" : "");
    }
    if (fit < x->n_levers) {
        fprintf(f, "\ntried, but not possible here:\n");
        for (int i = 0; i < x->n_levers; i++) {
            const struct explain_lever *lv = &x->lever[i];
            if (lv->run.rc == MP_OK) continue;
            fprintf(f, "   - ");
            print_sets(f, lv);
            const char *why = lv->run.reason;
            /* The scenario's path prefix says nothing new here. */
            size_t pl = strlen(c->path);
            if (pl && !strncmp(why, c->path, pl) && why[pl] == ':') why += pl + 1;
            while (*why == ' ') why++;
            fprintf(f, ": %.200s%s\n", why, strlen(why) > 200 ? "..." : "");
        }
    }
}

static void run_json(cJSON *o, const struct explain_run *r, double capacity)
{
    cJSON_AddBoolToObject(o, "feasible", r->rc == MP_OK);
    if (r->rc == MP_OK) cJSON_AddNullToObject(o, "reason");
    else cJSON_AddStringToObject(o, "reason", r->reason);
    if (!r->has_metrics) return;
    cJSON_AddNumberToObject(o, "step_time_s", mp_seconds(r->step));
    cJSON_AddNumberToObject(o, "peak_mem_bytes", r->peak_mem);
    cJSON_AddBoolToObject(o, "fits_memory", r->peak_mem <= capacity);
    report_split_json(o, "step_split", &r->split);
}

void explain_json(FILE *f, const struct explain *x)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scenario", x->cfg.name);
    cJSON_AddNumberToObject(root, "chips", x->base.chips);
    cJSON_AddNumberToObject(root, "capacity_bytes", x->capacity);
    run_json(root, &x->base, x->capacity);
    cJSON *levers = cJSON_AddArrayToObject(root, "levers");
    for (int i = 0; i < x->n_levers; i++) {
        const struct explain_lever *lv = &x->lever[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "attacks", lv->why);
        cJSON_AddBoolToObject(o, "memory", lv->memory);
        cJSON *sets = cJSON_AddArrayToObject(o, "set");
        for (int k = 0; k < lv->n_set; k++) cJSON_AddItemToArray(sets, cJSON_CreateString(lv->set[k]));
        run_json(o, &lv->run, x->capacity);
        if (lv->run.rc == MP_OK)
            cJSON_AddNumberToObject(o, "gain_s", mp_seconds(x->base.step - lv->run.step));
        cJSON_AddItemToArray(levers, o);
    }
    char *text = cJSON_Print(root);
    fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(root);
}
