/* serve_workload.c — the requests a serving run answers: Poisson arrivals
 * with drawn prompt and output lengths (one gsl_rng seeded from run.seed), or
 * a trace CSV of arrival_s,prompt_tokens,output_tokens. See serve.h. */
#include "serve_impl.h"

#include <ctype.h>
#include <errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/csv_reader.h"

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

/* A whole number of tokens in [1, INT_MAX], or -1. */
static long tokens_of(const char *cell)
{
    char *end;
    errno = 0;
    long v = strtol(cell, &end, 10);
    while (*end == ' ' || *end == '\t') end++;
    if (end == cell || *end || errno == ERANGE || v < 1 || v > INT_MAX) return -1;
    return v;
}

/* CSV rows "arrival_s,prompt_tokens,output_tokens" (sim/io/csv_reader.h:
 * BOM, CRLF, quotes, '#' comments, line numbers); a first row that does not
 * start with a number is a header. */
int serve_trace_requests(struct serve *s, struct mp_error *err)
{
    char path[1024];
    int rc = config_resolve_key(&s->cfg, "inference.trace", "scenarios", ".csv", path,
                                sizeof path, err);
    if (rc) return rc;
    struct csv_reader r;
    struct csv_reader_opts o = { .key = "inference.trace", .comments = true };
    if ((rc = csv_reader_open(&r, path, &o, err))) return rc;
    static const char *const names[3] = { "arrival_s", "prompt_tokens", "output_tokens" };
    int cap = 0, ctx = s->cfg.inference.context_len, got = 0;
    bool first = true;
    mp_time last = 0;
    struct csv_row row;
    while (!rc && (got = csv_reader_next(&r, &row, err)) > 0) {
        const char *c0 = row.cell[0];
        while (*c0 == ' ' || *c0 == '\t') c0++;
        bool header = first && !isdigit((unsigned char)*c0) && *c0 != '.';
        first = false;
        if (header) continue;
        if (row.n != 3) {
            rc = csv_reader_fail(&r, row.line, err, "expected 3 cells, arrival_s,prompt_tokens,"
                                 "output_tokens, got %d", row.n);
            break;
        }
        char q[128];
        char *end;
        errno = 0;
        double t = strtod(row.cell[0], &end);
        while (*end == ' ' || *end == '\t') end++;
        /* At most 10^6 s, so t × 10^12 stays an exact-enough int64; digits
         * only (strtod takes "inf", "nan" and hex). */
        bool digits = strspn(row.cell[0], "0123456789.eE+- \t") == strlen(row.cell[0]);
        long v[3] = { 0 };
        int bad = -1;
        if (end == row.cell[0] || *end || !digits || !isfinite(t) || t < 0 || t > 1e6) bad = 0;
        for (int k = 1; k < 3 && bad < 0; k++)
            if ((v[k] = tokens_of(row.cell[k])) < 0) bad = k;
        if (bad >= 0) {
            mp_quote(row.cell[bad], strlen(row.cell[bad]), 40, q, sizeof q);
            rc = csv_reader_fail(&r, row.line, err, "column %s: expected %s, got '%s'",
                                 names[bad], bad == 0 ? "seconds from 0 to 1000000"
                                 : "a whole number of tokens ≥ 1", q);
            break;
        }
        mp_time at = mp_time_from_s(t);
        if (at < last) {
            rc = csv_reader_fail(&r, row.line, err, "column arrival_s: arrivals must not go back "
                                 "in time (%.9f s after %.9f s)", t, mp_seconds(last));
        } else if (v[1] + v[2] > ctx) {
            rc = csv_reader_fail(&r, row.line, err, "prompt_tokens + output_tokens = %ld tokens "
                                 "exceeds inference.context_len = %d", v[1] + v[2], ctx);
        } else {
            last = at;
            add_request(s, &cap, at, (int)v[1], (int)v[2]);
        }
    }
    if (!rc && got < 0) rc = MP_ERR_INPUT;
    if (!rc && s->n_req == 0) rc = csv_reader_fail(&r, 0, err, "the trace has no requests");
    csv_reader_close(&r);
    return rc;
}
