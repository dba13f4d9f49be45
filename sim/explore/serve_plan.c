/* serve_plan.c — capacity planning for serving; see serve_plan.h. */
#include "serve_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether `spec` ("key=values") sets `key`. */
static bool names(const char *spec, const char *key)
{
    size_t n = strlen(key);
    return !strncmp(spec, key, n) && spec[n] == '=';
}

int serve_plan_grid(struct sweep_grid *g, struct config *base, const struct serve_plan_spec *spec,
                    struct mp_error *err)
{
    char rate[64];
    snprintf(rate, sizeof rate, "inference.rate=%.17g", spec->rate);
    int rc = config_set(base, rate, "--rate", err);
    if (rc) return rc;
    char pp[64];
    snprintf(pp, sizeof pp, "parallel.pp=%d", base->parallel.pp);
    const char *defaults[] = { "parallel.tp=1,2,4,8", pp, "inference.replicas=1..16" };
    for (int d = 0; d < 3; d++) {
        char key[32];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(defaults[d], "="), defaults[d]);
        bool given = false;
        for (int i = 0; i < spec->n_axes; i++) given = given || names(spec->axis[i], key);
        if (!given && (rc = sweep_grid_add(g, base, defaults[d], err))) return rc;
    }
    for (int i = 0; i < spec->n_axes; i++)
        if ((rc = sweep_grid_add(g, base, spec->axis[i], err))) return rc;
    return MP_OK;
}

static int cmp_rows(const void *pa, const void *pb)
{
    const struct serve_plan_row *a = pa, *b = pb;
    if (a->meets != b->meets) return a->meets ? -1 : 1;
    if (a->meets) {
        /* Unknown prices last, then cheaper first. */
        bool ua = isnan(a->usd_hour), ub = isnan(b->usd_hour);
        if (ua != ub) return ua ? 1 : -1;
        if (!ua && a->usd_hour != b->usd_hour) return a->usd_hour < b->usd_hour ? -1 : 1;
        if (a->chips != b->chips) return a->chips < b->chips ? -1 : 1;
        if (a->usd_mtok != b->usd_mtok && !isnan(a->usd_mtok) && !isnan(b->usd_mtok))
            return a->usd_mtok < b->usd_mtok ? -1 : 1;
    } else {
        if (a->fits != b->fits) return a->fits ? -1 : 1;
        if (a->goodput != b->goodput) return a->goodput > b->goodput ? -1 : 1;
    }
    return a->row - b->row;
}

int serve_plan_rank(const struct sweep_table *t, int requests, double attain,
                    struct serve_plan_row **rows, int *n, struct mp_error *err)
{
    static const char *const need[] = { "usd_per_hour", "usd_per_mtok", "goodput_frac",
                                        "ttft_p99_s", "tpot_p99_s", "tokens_per_s", "chips",
                                        "requests_completed" };
    int col[8];
    for (int i = 0; i < 8; i++)
        if ((col[i] = sweep_table_need(t, need[i], "serve-plan", err)) < 0) return MP_ERR_INPUT;
    *rows = mp_xcalloc((size_t)(t->n_rows > 0 ? t->n_rows : 1), sizeof **rows);
    for (int r = 0; r < t->n_rows; r++) {
        struct serve_plan_row *x = &(*rows)[r];
        x->row = r;
        x->fits = sweep_table_feasible(t, r);
        x->usd_hour = sweep_table_num(t, r, col[0]);
        x->usd_mtok = sweep_table_num(t, r, col[1]);
        x->goodput = sweep_table_num(t, r, col[2]);
        x->ttft99 = sweep_table_num(t, r, col[3]);
        x->tpot99 = sweep_table_num(t, r, col[4]);
        x->tokens_per_s = sweep_table_num(t, r, col[5]);
        double chips = sweep_table_num(t, r, col[6]);
        x->chips = isnan(chips) ? 0 : (int)chips;
        double done = sweep_table_num(t, r, col[7]);
        if (isnan(x->goodput)) x->goodput = 0;
        x->meets = x->fits && done == requests && x->goodput >= attain;
    }
    *n = t->n_rows;
    qsort(*rows, (size_t)*n, sizeof **rows, cmp_rows);
    return MP_OK;
}

static const char *secs(double s, char *buf, size_t n)
{
    if (isnan(s)) snprintf(buf, n, "-");
    else if (s >= 1) snprintf(buf, n, "%.2f s", s);
    else if (s >= 1e-3) snprintf(buf, n, "%.1f ms", s * 1e3);
    else snprintf(buf, n, "%.0f us", s * 1e6);
    return buf;
}

static void money(double v, char *buf, size_t n)
{
    if (isnan(v)) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.2f", v);
}

/* The varied keys of a row, "tp 4, replicas 3". */
static void layout_text(const struct sweep_table *t, int varied, int row, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int c = 0; c < varied && len < n; c++) {
        const char *name = strchr(t->col[c], '.');
        name = name ? name + 1 : t->col[c];
        len += (size_t)snprintf(buf + len, n - len, "%s%s %s", c ? ", " : "", name,
                                t->cell[row][c]);
    }
}

void serve_plan_print(FILE *f, const struct sweep_table *t, int varied,
                      const struct serve_plan_row *rows, int n, int top, double rate,
                      double attain, const struct config *base)
{
    const struct config_inference *in = &base->inference;
    char a[32], b[32], c[32];
    fprintf(f, "serve-plan  %s at %g requests/s: %d layouts; SLO", base->name, rate, n);
    if (in->slo_ttft > 0) fprintf(f, " ttft ≤ %s", secs(mp_seconds(in->slo_ttft), a, sizeof a));
    if (in->slo_tpot > 0) fprintf(f, " tpot ≤ %s", secs(mp_seconds(in->slo_tpot), a, sizeof a));
    if (in->slo_e2e > 0) fprintf(f, " e2e ≤ %s", secs(mp_seconds(in->slo_e2e), a, sizeof a));
    fprintf(f, " for %.0f%% of requests\n\n", 100 * attain);
    int meet = 0, fit = 0;
    for (int i = 0; i < n; i++) {
        meet += rows[i].meets;
        fit += rows[i].fits;
    }
    fprintf(f, "  rank  %-40s  chips   $/hour  $/M tok  goodput  TTFT p99  TPOT p99  tokens/s\n",
            "layout");
    int shown = 0;
    for (int i = 0; i < n && shown < top && rows[i].meets; i++, shown++) {
        const struct serve_plan_row *x = &rows[i];
        char lay[256], h[32], m[32];
        layout_text(t, varied, x->row, lay, sizeof lay);
        money(x->usd_hour, h, sizeof h);
        money(x->usd_mtok, m, sizeof m);
        fprintf(f, "  %4d  %-40.40s  %5d  %7s  %7s  %6.1f%%  %8s  %8s  %8.0f\n", i + 1, lay,
                x->chips, h, m, 100 * x->goodput, secs(x->ttft99, a, sizeof a),
                secs(x->tpot99, b, sizeof b), x->tokens_per_s);
    }
    if (meet == 0) fprintf(f, "  (none meets the SLO at this rate)\n");
    fprintf(f, "\n%d meet the SLO, %d fit but miss it, %d do not fit or cannot run", meet,
            fit - meet, n - fit);
    if (meet < n && fit > meet) {
        /* The closest misses: the best goodput among those that fit. */
        fprintf(f, "; closest misses:\n");
        int k = 0;
        for (int i = meet; i < n && k < 3; i++) {
            if (!rows[i].fits) continue;
            char lay[256];
            layout_text(t, varied, rows[i].row, lay, sizeof lay);
            fprintf(f, "        %-40.40s  %5d chips  goodput %5.1f%%  TTFT p99 %s  TPOT p99 %s\n",
                    lay, rows[i].chips, 100 * rows[i].goodput, secs(rows[i].ttft99, a, sizeof a),
                    secs(rows[i].tpot99, c, sizeof c));
            k++;
        }
    } else {
        fputc('\n', f);
    }
}
