/* serve_workload.c — the requests a serving run answers: Poisson arrivals
 * with drawn prompt and output lengths (one gsl_rng seeded from run.seed), or
 * a trace CSV of arrival_s,prompt_tokens,output_tokens. See serve.h. */
#include "serve_impl.h"

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int draw(const gsl_rng *rng, int dist, int len, int min, int max, double sigma)
{
    double v;
    switch (dist) {
    case DIST_UNIFORM:
        return min + (int)gsl_rng_uniform_int(rng, (unsigned long)(max - min) + 1);
    case DIST_LOGNORMAL:
        v = round(gsl_ran_lognormal(rng, log((double)len), sigma));
        return v < min ? min : v > max ? max : (int)v;
    default:
        return len;
    }
}

static void add_request(struct serve *s, int *cap, mp_time t, int prompt, int output)
{
    MP_GROW(s->req, *cap, s->n_req + 1);
    s->req[s->n_req++] = (struct serve_request){
        .arrival = t, .admitted = -1, .first_token = -1, .done = -1,
        .prompt = prompt, .output = output, .slot = -1,
    };
}

int serve_poisson_requests(struct serve *s)
{
    const struct config_inference *in = &s->cfg.inference;
    int ctx = in->context_len, cap = 0;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)s->cfg.run.seed);
    double t = 0;
    for (int i = 0; i < in->requests; i++) {
        t += gsl_ran_exponential(rng, 1.0 / in->rate);
        int p = draw(rng, in->prompt_dist, in->prompt_len, in->prompt_min,
                     serve_dist_max(in->prompt_max, ctx - 1), in->prompt_sigma);
        if (p > ctx - 1) p = ctx - 1;
        int omax = serve_dist_max(in->output_max, ctx - p);
        if (omax > ctx - p) omax = ctx - p;
        int omin = in->output_min < omax ? in->output_min : omax;
        int o = draw(rng, in->output_dist, in->output_len, omin, omax, in->output_sigma);
        if (o > ctx - p) o = ctx - p;
        add_request(s, &cap, mp_time_from_s(t), p, o);
    }
    gsl_rng_free(rng);
    return MP_OK;
}

/* CSV rows "arrival_s,prompt_tokens,output_tokens"; a first row that does not
 * start with a number is a header; blank lines and '#' comments are skipped. */
int serve_trace_requests(struct serve *s, struct mp_error *err)
{
    char path[1024];
    int rc = config_resolve(&s->cfg, s->cfg.inference.trace, "scenarios", ".csv", path,
                            sizeof path, err);
    if (rc) {
        mp_error_prefix(err, "key inference.trace: ");
        return rc;
    }
    FILE *f = fopen(path, "r");
    if (!f) return mp_fail(err, MP_ERR_INPUT, "%s: cannot open trace", path);
    char line[512];
    int ln = 0, cap = 0, ctx = s->cfg.inference.context_len;
    mp_time last = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '\0' || *p == '\n' || *p == '\r' || *p == '#') continue;
        char *end;
        double t = strtod(p, &end);
        if (end == p && s->n_req == 0 && ln == 1) continue; /* header */
        long prompt = 0, output = 0;
        /* At most 10^6 s, so t × 10^12 stays an exact-enough int64 (llround
         * of a larger product is unspecified, and wrapped arrivals would be
         * reported as going back in time). */
        bool ok = end != p && isfinite(t) && t >= 0 && t <= 1e6 && *end == ',';
        if (ok) { p = end + 1; prompt = strtol(p, &end, 10); ok = end != p && *end == ','; }
        if (ok) { p = end + 1; output = strtol(p, &end, 10); ok = end != p; }
        while (ok && (*end == ' ' || *end == '\r' || *end == '\n' || *end == '\t')) end++;
        ok = ok && *end == '\0' && prompt >= 1 && output >= 1;
        mp_time at = ok ? mp_time_from_s(t) : 0;
        if (!ok || at < last || prompt + output > ctx) {
            fclose(f);
            if (!ok)
                return mp_fail(err, MP_ERR_INPUT, "%s:%d: expected arrival_s,prompt_tokens,"
                               "output_tokens (seconds ≥ 0, tokens ≥ 1), got '%.80s'", path, ln,
                               line);
            if (at < last)
                return mp_fail(err, MP_ERR_INPUT, "%s:%d: arrivals must not go back in time "
                               "(%.9f s after %.9f s)", path, ln, t, mp_seconds(last));
            return mp_fail(err, MP_ERR_INPUT, "%s:%d: prompt + output = %ld tokens exceeds "
                           "inference.context_len = %d", path, ln, prompt + output, ctx);
        }
        last = at;
        add_request(s, &cap, at, (int)prompt, (int)output);
    }
    fclose(f);
    if (s->n_req == 0)
        return mp_fail(err, MP_ERR_INPUT, "%s: the trace has no requests", path);
    return MP_OK;
}

