/* serve_metrics.c — a serving run's figures: per-pass distributions kept as
 * the run goes (inter-token latency, requests and tokens per pass, KV
 * transfer times), and at the end the request times folded into quantiles
 * (qsort + gsl_stats), Little's law, goodput, per replica and overall.
 *
 * A per-pass distribution keeps its values exactly up to DIST_EXACT
 * (65,536) of them (its quantiles are then GSL's over the sorted values,
 * like TTFT's); past that it moves them into a histogram of ln(value)
 * (gsl_histogram, DIST_BINS bins over [ln 1e-12, ln 1e7]: each bin 0.21%
 * wide), whose quantiles are bin centres: a 1,000,000-request run has ~10^8
 * token gaps, and keeping (and sorting) them all would cost more memory and
 * time than the run. The mean is always exact. */
#include "serve_impl.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_histogram.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DIST_EXACT (1u << 16)
#define DIST_BINS 20000
#define DIST_LO (-27.631021115928547) /* ln 1e-12 */
#define DIST_HI (16.11809565095832)   /* ln 1e7 */

/* Histogram mode: the bins of recent values by value (token gaps recur,
 * not only back to back), so that most values cost no logarithm. */
#define VD_MEMO 4096
struct vd_memo { double x; double *bin; };

struct vdist {
    struct serve_vd_head *hd; /* count, sum, the value binned last (serve_impl.h) */
    double *v;
    size_t n, cap;
    gsl_histogram *h;
    struct vd_memo *memo;     /* [VD_MEMO] with h */
};

struct serve_hist {
    struct serve_vd_head head[SERVE_HISTS]; /* first: serve_hist_put reads them */
    struct vdist d[SERVE_HISTS];
};

static void vd_bin(gsl_histogram *h, double x)
{
    double l = x > 0 ? log(x) : DIST_LO;
    if (l < DIST_LO) l = DIST_LO;
    if (l >= DIST_HI) l = nextafter(DIST_HI, 0);
    gsl_histogram_increment(h, l);
}

static void vd_add(struct vdist *d, double x)
{
    struct serve_vd_head *hd = d->hd;
    hd->count++;
    hd->sum += x;
    if (d->h) {
        if (hd->hot_bin && x == hd->hot_x) {
            (*hd->hot_bin)++;
            return;
        }
        uint64_t u;
        memcpy(&u, &x, sizeof u);
        struct vd_memo *e = &d->memo[(u * 0x9e3779b97f4a7c15u) >> 52]; /* 12 bits: VD_MEMO */
        if (e->bin && e->x == x) {
            (*e->bin)++;
            hd->hot_bin = e->bin;
            hd->hot_x = x;
            return;
        }
        /* vd_bin's bin, found once (one logarithm, one search). */
        double l = x > 0 ? log(x) : DIST_LO;
        if (l < DIST_LO) l = DIST_LO;
        if (l >= DIST_HI) l = nextafter(DIST_HI, 0);
        size_t i;
        if (gsl_histogram_find(d->h, l, &i) == GSL_SUCCESS) {
            d->h->bin[i]++;
            hd->hot_bin = e->bin = &d->h->bin[i];
            hd->hot_x = e->x = x;
        }
        return;
    }
    if (d->n == DIST_EXACT) {
        d->h = gsl_histogram_alloc(DIST_BINS);
        gsl_histogram_set_ranges_uniform(d->h, DIST_LO, DIST_HI);
        d->memo = mp_xcalloc(VD_MEMO, sizeof *d->memo);
        for (size_t i = 0; i < d->n; i++) vd_bin(d->h, d->v[i]);
        free(d->v);
        d->v = NULL;
        d->n = d->cap = 0;
        vd_bin(d->h, x);
        return;
    }
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 1024;
        d->v = realloc(d->v, d->cap * sizeof *d->v);
        if (!d->v) abort();
    }
    d->v[d->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quantiles(double *v, size_t n, double out[4])
{
    if (n == 0) { out[0] = out[1] = out[2] = out[3] = 0; return; }
    /* qsort (libc's merge sort) is several times faster than gsl_sort's
     * heap sort on millions of values; the sorted array is the same. */
    qsort(v, n, sizeof *v, cmp_double);
    out[0] = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.50);
    out[1] = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.90);
    out[2] = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.99);
    out[3] = gsl_stats_mean(v, 1, n);
}

static void vd_fold(struct vdist *d, struct serve_dist4 *out)
{
    out->n = d->hd->count;
    if (!d->h) {
        quantiles(d->v, d->n, out->q);
        return;
    }
    static const double p[3] = { 0.50, 0.90, 0.99 };
    double total = (double)d->hd->count, cum = 0;
    size_t bins = gsl_histogram_bins(d->h), b = 0;
    for (int i = 0; i < 3; i++) {
        while (b < bins && cum + gsl_histogram_get(d->h, b) < p[i] * total) cum += gsl_histogram_get(d->h, b++);
        double lo, hi;
        gsl_histogram_get_range(d->h, b < bins ? b : bins - 1, &lo, &hi);
        out->q[i] = exp((lo + hi) / 2);
    }
    out->q[3] = d->hd->sum / total;
}

static void vd_release(struct vdist *d)
{
    free(d->v);
    free(d->memo);
    if (d->h) gsl_histogram_free(d->h);
}

void serve_hist_init(struct serve *s)
{
    s->hist = mp_xcalloc(1, sizeof *s->hist);
    for (int i = 0; i < SERVE_HISTS; i++) s->hist->d[i].hd = &s->hist->head[i];
}

void serve_hist_release(struct serve *s)
{
    if (!s->hist) return;
    for (int i = 0; i < SERVE_HISTS; i++) vd_release(&s->hist->d[i]);
    free(s->hist);
    s->hist = NULL;
}

void serve_hist_add(struct serve *s, int which, double x) { vd_add(&s->hist->d[which], x); }

void serve_hist_transfer(struct serve *s, mp_time t)
{
    vd_add(&s->hist->d[SERVE_HIST_TRANSFER], mp_seconds(t));
}

/* ---- the fold ------------------------------------------------------------------- */

/* Length of [a, b] ∩ [lo, hi] in seconds. */
static double overlap(mp_time a, mp_time b, mp_time lo, mp_time hi)
{
    mp_time x = a > lo ? a : lo, y = b < hi ? b : hi;
    return y > x ? mp_seconds(y - x) : 0;
}

static bool meets_slo(const struct config_inference *in, const struct serve_request *q)
{
    if (q->done < 0) return false;
    if (in->slo_ttft > 0 && q->first_token - q->arrival > in->slo_ttft) return false;
    if (in->slo_tpot > 0 && q->output > 1 &&
        (double)(q->done - q->first_token) / (q->output - 1) > (double)in->slo_tpot)
        return false;
    if (in->slo_e2e > 0 && q->done - q->arrival > in->slo_e2e) return false;
    return true;
}

/* Latency figures of the requests ids[0..n) (one replica or all). */
struct fold_out {
    double ttft[4], tpot[4], e2e[4];
    double window_s, rate, latency_s, in_system, in_system_all, inflight, output_tokens;
    int completed, slo_met;
};

static void fold_group(const struct serve *s, const int *ids, int n, mp_time T,
                       struct fold_out *o, double *buf)
{
    memset(o, 0, sizeof *o);
    if (n == 0) return;
    double *ttft = buf, *tpot = buf + n, *e2e = buf + 2 * (size_t)n;
    size_t nt = 0, np = 0, ne = 0;
    mp_time t0 = -1, t1 = -1;
    for (int j = 0; j < n; j++) {
        const struct serve_request *q = &s->req[ids[j]];
        if (q->pending) continue; /* a later turn that never came */
        if (t0 < 0 || q->arrival < t0) t0 = q->arrival;
        if (q->arrival > t1) t1 = q->arrival;
    }
    double window_in = 0, window_lat = 0;
    int counted = 0;
    for (int j = 0; j < n; j++) {
        const struct serve_request *q = &s->req[ids[j]];
        if (q->pending) continue;
        counted++;
        mp_time end = q->done >= 0 ? q->done : T;
        if (q->arrival <= T) o->in_system_all += overlap(q->arrival, end, 0, T);
        if (q->admitted >= 0) o->inflight += overlap(q->admitted, end, 0, T);
        window_in += overlap(q->arrival, end, t0, t1);
        window_lat += mp_seconds(end - q->arrival);
        if (q->first_token >= 0) ttft[nt++] = mp_seconds(q->first_token - q->arrival);
        o->output_tokens += q->generated;
        if (q->done < 0) continue;
        o->completed++;
        o->slo_met += meets_slo(&s->cfg.inference, q);
        e2e[ne++] = mp_seconds(q->done - q->arrival);
        if (q->output > 1) tpot[np++] = mp_seconds(q->done - q->first_token) / (q->output - 1);
    }
    quantiles(ttft, nt, o->ttft);
    quantiles(tpot, np, o->tpot);
    quantiles(e2e, ne, o->e2e);
    o->window_s = mp_seconds(t1 - t0);
    if (t1 > t0 && counted > 0) {
        o->rate = (counted - 1) / o->window_s;
        o->latency_s = window_lat / counted;
        o->in_system = window_in / o->window_s;
    }
}

void serve_fold(struct serve *s)
{
    struct serve_result *r = &s->res;
    const struct config_inference *in = &s->cfg.inference;
    mp_time T = r->makespan;
    int n = s->n_req;
    int *ids = mp_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    double *buf = mp_xmalloc(3 * (size_t)(n > 0 ? n : 1) * sizeof *buf);
    for (int i = 0; i < n; i++) ids[i] = i;
    struct fold_out all;
    fold_group(s, ids, n, T, &all, buf);
    memcpy(r->ttft, all.ttft, sizeof r->ttft);
    memcpy(r->tpot, all.tpot, sizeof r->tpot);
    memcpy(r->e2e, all.e2e, sizeof r->e2e);
    double sec = mp_seconds(T);
    r->mean_inflight = sec > 0 ? all.inflight / sec : 0;
    r->mean_in_system = sec > 0 ? all.in_system_all / sec : 0;
    r->tokens_per_s = sec > 0 ? r->output_tokens / sec : 0;
    r->requests_per_s = sec > 0 ? r->completed / sec : 0;
    r->little_window_s = all.window_s;
    r->little_rate = all.rate;
    r->little_latency_s = all.latency_s;
    r->little_in_system = all.in_system;

    /* Scheduling delay: arrival to first admission. */
    size_t nd = 0;
    for (int i = 0; i < n; i++)
        if (s->req[i].admitted >= 0) buf[nd++] = mp_seconds(s->req[i].admitted - s->req[i].arrival);
    quantiles(buf, nd, r->sched_delay.q);
    r->sched_delay.n = nd;
    vd_fold(&s->hist->d[SERVE_HIST_ITL], &r->itl);
    vd_fold(&s->hist->d[SERVE_HIST_BATCH], &r->batch);
    vd_fold(&s->hist->d[SERVE_HIST_TOKENS], &r->step_tokens);
    vd_fold(&s->hist->d[SERVE_HIST_TRANSFER], &r->kv_transfer);

    /* Goodput. */
    r->slo_met = 0;
    for (int i = 0; i < n; i++) r->slo_met += meets_slo(in, &s->req[i]);
    r->goodput_rps = sec > 0 ? r->slo_met / sec : 0;

    /* Per replica: a counting sort of the requests by where they went (a
     * decode pool's replica for disaggregated requests). */
    int R = s->replicas;
    int *off = mp_xcalloc((size_t)R + 1, sizeof *off);
    for (int i = 0; i < n; i++)
        if (s->req[i].replica >= 0) off[s->req[i].replica + 1]++;
    for (int x = 0; x < R; x++) off[x + 1] += off[x];
    int *at = mp_xmalloc((size_t)R * sizeof *at);
    memcpy(at, off, (size_t)R * sizeof *at);
    for (int i = 0; i < n; i++)
        if (s->req[i].replica >= 0) ids[at[s->req[i].replica]++] = i;
    for (int x = 0; x < R; x++) {
        struct serve_replica_report *p = &r->rep[x];
        struct fold_out o;
        /* One replica that every request went to: its group is the run's,
         * in the same order, so its figures are those folded above (the
         * same sorts would give the same values again). */
        if (R == 1 && off[1] == n) o = all;
        else fold_group(s, ids + off[x], off[x + 1] - off[x], T, &o, buf);
        memcpy(p->ttft, o.ttft, sizeof p->ttft);
        memcpy(p->tpot, o.tpot, sizeof p->tpot);
        memcpy(p->e2e, o.e2e, sizeof p->e2e);
        p->routed = s->rep[x].routed;
        p->completed = s->rep[x].completed;
        p->output_tokens = o.output_tokens;
        p->tokens_per_s = sec > 0 ? o.output_tokens / sec : 0;
        p->little_rate = o.rate;
        p->little_latency_s = o.latency_s;
        p->little_in_system = o.in_system;
        p->preemptions = s->rep[x].preemptions;
        p->slo_met = o.slo_met;
    }
    free(at);
    free(off);
    free(ids);
    free(buf);
    /* The TP all-reduces of one pass through replica 0 (serve_layout.c). */
    r->tp_allreduces_per_pass = 0;
    for (int st = 0; st < s->pool[0].stages; st++) {
        int ars = 0;
        double bytes = 0;
        serve_comm_time(s, st, 1, 0, &ars, &bytes);
        r->tp_allreduces_per_pass += ars;
    }
    for (int st = 0; st < s->stages; st++) {
        struct serve_stage_report *x = &r->stage[st];
        if (x->first_start < 0) x->first_start = 0;
        double f = x->free_bytes > 0 ? x->kv_peak / x->free_bytes : 0;
        if (f > r->kv_peak_fraction) r->kv_peak_fraction = f;
        struct serve_replica_report *p = &r->rep[x->replica];
        if (f > p->kv_peak_fraction) p->kv_peak_fraction = f;
    }
}

int serve_parse_slo(struct config *cfg, const char *text, const char *flag,
                    struct mp_error *err)
{
    static const char *const names[] = { "ttft", "tpot", "e2e" };
    const char *p = text;
    if (!*p)
        return mp_fail(err, MP_ERR_INPUT, "%s: expected metric=duration[,...] such as "
                       "ttft=500ms,tpot=50ms (metrics ttft, tpot, e2e), got ''", flag);
    while (*p) {
        size_t len = strcspn(p, ",");
        char item[128];
        if (len >= sizeof item) len = sizeof item - 1;
        memcpy(item, p, len);
        item[len] = '\0';
        char *eq = strchr(item, '=');
        if (eq) *eq = '\0';
        int which = -1;
        for (int i = 0; i < 3; i++)
            if (!strcmp(item, names[i])) which = i;
        if (which < 0 || !eq)
            return mp_fail(err, MP_ERR_INPUT, "%s: %s '%s'; expected metric=duration with "
                           "metric ttft, tpot or e2e (such as ttft=500ms,tpot=50ms)", flag,
                           eq ? "unknown metric" : "expected metric=duration, got", item);
        char key[32];
        snprintf(key, sizeof key, "inference.slo_%s", names[which]);
        struct mp_error e2 = { 0 };
        if (config_set_key(cfg, key, eq + 1, flag, &e2))
            return mp_fail(err, MP_ERR_INPUT, "%s: %s=%s: expected a duration with a unit "
                           "(500ms, 50ms, 2s)", flag, item, eq + 1);
        p += strcspn(p, ",");
        if (*p == ',') p++;
    }
    return MP_OK;
}
