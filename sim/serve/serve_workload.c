/* serve_workload.c — the requests a serving run answers: drawn (one
 * gsl_rng seeded from run.seed) or read from a trace CSV. See serve.h.
 *
 * Drawn: arrivals Poisson at inference.rate (exponential gaps), or Gamma
 * gaps of shape `burstiness` and mean 1 / rate (vLLM benchmark_serving's
 * --burstiness: below 1 burstier than Poisson, above it more even);
 * prompt and output lengths fixed, uniform, lognormal or empirical (a CSV of
 * tokens[,weight]). Per request the draws come in a fixed order (gap,
 * prompt, output, then only what is turned on: system prompt, priority
 * class), so a workload without the new keys draws what it always drew.
 *
 * A shared system prompt (prefix_tokens > 0) comes before every drawn
 * prompt: prompt = prefix_tokens + the drawn length, one of prefix_groups
 * prompts drawn per request (or per session). Sessions (turns > 1): the
 * arrivals are sessions' starts; a session's turn t + 1 arrives think_time
 * (exponential mean, drawn as the run goes) after turn t's last token, and
 * its prompt is the history — turn t's prompt and output — plus a newly
 * drawn message. A session ends early when its next prompt and output
 * would not fit context_len. `requests` counts turns.
 *
 * With prefix caching each request carries its place in the prefix tree
 * (serve_kv.c): a system prompt is a node under the root; a turn a later turn
 * continues gets a node of its own tokens under its prefix. */
#include "serve_impl.h"
#include "sim/io/csv_reader.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An empirical length distribution (inference.*_file). */
struct empirical {
    int *len;
    gsl_ran_discrete_t *table;
};

static int draw(const gsl_rng *rng, int dist, int len, int min, int max, double sigma,
                const struct empirical *emp)
{
    double v;
    switch (dist) {
    case DIST_UNIFORM:
        return min + (int)gsl_rng_uniform_int(rng, (unsigned long)(max - min) + 1);
    case DIST_LOGNORMAL:
        v = round(gsl_ran_lognormal(rng, log((double)len), sigma));
        return v < min ? min : v > max ? max : (int)v;
    case DIST_EMPIRICAL:
        return emp->len[gsl_ran_discrete(rng, emp->table)];
    default:
        return len;
    }
}

static struct serve_request *add_request(struct serve *s, int *cap, mp_time t, int prompt,
                                         int output)
{
    MP_GROW(s->req, *cap, s->n_req + 1);
    s->req[s->n_req] = (struct serve_request){
        .arrival = t, .admitted = -1, .first_token = -1, .done = -1, .last_emit = -1,
        .prompt = prompt, .output = output, .slot = -1, .replica = -1, .node = -1,
        .own_node = -1, .next = -1, .session = -1,
    };
    return &s->req[s->n_req++];
}

/* ---- small inputs: empirical lengths, priority shares --------------------------- */

/* A whole number (blanks around it allowed), or false. */
static bool cell_long(const char *cell, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(cell, &end, 10);
    while (*end == ' ' || *end == '\t') end++;
    return end != cell && !*end && errno != ERANGE;
}

static int load_empirical(struct serve *s, const char *key, const char *name, int limit,
                          struct empirical *e, struct mp_error *err)
{
    char path[1024];
    int rc = config_resolve(&s->cfg, name, "scenarios", ".csv", path, sizeof path, err);
    if (rc) {
        char at[CONFIG_STR + 96], pre[CONFIG_STR + 100];
        snprintf(pre, sizeof pre, "%s: ", config_key_where(&s->cfg, key, at, sizeof at));
        mp_error_prefix(err, "%s", pre);
        return rc;
    }
    /* The one CSV reader (sim/io/csv_reader.h), '#' comments allowed. */
    struct csv_reader cr;
    struct csv_reader_opts ro = { .key = key, .comments = true };
    if ((rc = csv_reader_open(&cr, path, &ro, err))) return rc;
    struct csv_row row;
    int n = 0, cap = 0, got = 0;
    double *w = NULL;
    while ((got = csv_reader_next(&cr, &row, err)) > 0) {
        long v = 0;
        if (n == 0 && row.line == 1 && !cell_long(row.cell[0], &v)) continue; /* header */
        double weight = 1;
        bool ok = row.n <= 2 && cell_long(row.cell[0], &v) && v >= 1 && v <= limit;
        if (ok && row.n == 2) {
            char *end;
            weight = strtod(row.cell[1], &end);
            while (*end == ' ' || *end == '\t') end++;
            ok = end != row.cell[1] && !*end && isfinite(weight) && weight >= 0;
        }
        if (!ok) {
            char q[128];
            mp_quote(row.cell[0], strlen(row.cell[0]), 40, q, sizeof q);
            csv_reader_fail(&cr, row.line, err, "expected tokens[,weight] with tokens in 1..%d "
                            "and weight >= 0, got %d cell%s starting '%s'", limit, row.n,
                            row.n == 1 ? "" : "s", q);
            got = -1;
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            e->len = realloc(e->len, (size_t)cap * sizeof *e->len);
            w = realloc(w, (size_t)cap * sizeof *w);
            if (!e->len || !w) abort();
        }
        e->len[n] = (int)v;
        w[n++] = weight;
    }
    csv_reader_close(&cr);
    if (got < 0) {
        free(w);
        free(e->len);
        e->len = NULL;
        return MP_ERR_INPUT;
    }
    double total = 0;
    for (int i = 0; i < n; i++) total += w[i];
    if (n == 0 || total <= 0) {
        free(w);
        free(e->len);
        e->len = NULL;
        return mp_fail(err, MP_ERR_INPUT, "%s: key %s: no lengths with a positive weight: "
                       "expected rows of tokens[,weight] with some weight > 0", path, key);
    }
    e->table = gsl_ran_discrete_preproc((size_t)n, w);
    free(w);
    return MP_OK;
}

static void free_empirical(struct empirical *e)
{
    free(e->len);
    if (e->table) gsl_ran_discrete_free(e->table);
}

/* "0.2,0.8": the shares of priority classes 0, 1, ... */
static int parse_priorities(const struct serve *s, double *share, int max, int *n,
                            struct mp_error *err)
{
    const char *t = s->cfg.inference.priorities;
    *n = 0;
    if (!strcmp(t, "none")) return MP_OK;
    char at[CONFIG_STR + 96];
    double total = 0;
    while (*t) {
        char *end;
        double v = strtod(t, &end);
        if (end == t || !isfinite(v) || v < 0 || *n == max || (*end && *end != ','))
            return mp_fail(err, MP_ERR_INPUT, "%s = '%s': expected comma-separated shares >= 0 "
                           "of priority classes 0, 1, ... (at most %d), such as 0.2,0.8",
                           config_key_where(&s->cfg, "inference.priorities", at, sizeof at),
                           s->cfg.inference.priorities, max);
        share[(*n)++] = v;
        total += v;
        t = *end ? end + 1 : end;
    }
    if (total <= 0)
        return mp_fail(err, MP_ERR_INPUT, "%s = '%s': the shares add up to 0",
                       config_key_where(&s->cfg, "inference.priorities", at, sizeof at),
                       s->cfg.inference.priorities);
    return MP_OK;
}

/* ---- drawn workloads ------------------------------------------------------------- */

int serve_poisson_requests(struct serve *s, struct mp_error *err)
{
    const struct config_inference *in = &s->cfg.inference;
    int ctx = in->context_len, cap = 0, rc = MP_OK;
    struct empirical ep = { 0 }, eo = { 0 };
    double share[64];
    int n_prio = 0;
    if (in->prompt_dist == DIST_EMPIRICAL &&
        (rc = load_empirical(s, "inference.prompt_file", in->prompt_file, ctx - 1, &ep, err)))
        return rc;
    if (in->output_dist == DIST_EMPIRICAL &&
        (rc = load_empirical(s, "inference.output_file", in->output_file, ctx - 1, &eo, err))) {
        free_empirical(&ep);
        return rc;
    }
    if ((rc = parse_priorities(s, share, 64, &n_prio, err))) {
        free_empirical(&ep);
        free_empirical(&eo);
        return rc;
    }
    gsl_ran_discrete_t *prio = n_prio > 1 ? gsl_ran_discrete_preproc((size_t)n_prio, share) : NULL;
    bool caching = in->prefix_caching;
    int P = in->prefix_tokens, groups = in->prefix_groups, turns = in->turns;
    int *group_node = NULL;
    if (caching && P > 0) {
        group_node = mp_xmalloc((size_t)groups * sizeof *group_node);
        for (int g = 0; g < groups; g++) group_node[g] = serve_prefix_node(s, -1, P);
    }
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)s->cfg.run.seed);
    double t = 0;
    int made = 0;
    while (made < in->requests) {
        if (in->arrivals == ARRIVALS_GAMMA)
            t += gsl_ran_gamma(rng, in->burstiness, 1.0 / (in->rate * in->burstiness));
        else
            t += gsl_ran_exponential(rng, 1.0 / in->rate);
        mp_time at = mp_time_from_s(t);
        int session = turns > 1 ? s->n_req : -1, prev = -1, group = 0, cls = 0;
        for (int turn = 0; turn < turns && made < in->requests; turn++) {
            int hist = prev >= 0 ? s->req[prev].prompt + s->req[prev].output : P;
            int room = ctx - 1 - hist;
            int pmax = serve_dist_max(in->prompt_max, ctx - 1);
            if (pmax > room) pmax = room;
            int p = draw(rng, in->prompt_dist, in->prompt_len, in->prompt_min, pmax,
                         in->prompt_sigma, &ep);
            if (p > ctx - 1) p = ctx - 1;
            int prompt = hist + p;
            int omax = serve_dist_max(in->output_max, ctx - prompt);
            if (omax > ctx - prompt) omax = ctx - prompt;
            int omin = in->output_min < omax ? in->output_min : omax;
            int o = draw(rng, in->output_dist, in->output_len, omin, omax, in->output_sigma, &eo);
            if (turn == 0) {
                if (P > 0 && groups > 1) group = (int)gsl_rng_uniform_int(rng, (unsigned long)groups);
                if (prio) cls = (int)gsl_ran_discrete(rng, prio);
            }
            if (prompt > ctx - 1 || room < 1 || o > ctx - prompt || o < 1) {
                if (turn == 0) { /* as before the sessions: clamp to the context */
                    if (prompt > ctx - 1) prompt = ctx - 1;
                    if (o > ctx - prompt) o = ctx - prompt;
                    if (o < 1) o = 1, prompt = ctx - 1;
                } else {
                    break; /* the session has filled its context */
                }
            }
            struct serve_request *r = add_request(s, &cap, turn == 0 ? at : -1, prompt, o);
            made++;
            r->session = session;
            r->turn = turn;
            r->prio = cls;
            r->pending = turn > 0;
            if (turn == 0 && group_node) {
                r->node = group_node[group];
                r->prefix = P;
            }
            if (prev >= 0) {
                struct serve_request *q = &s->req[prev];
                q->next = s->n_req - 1;
                r->prefix = q->prompt + q->output;
                if (caching) {
                    /* The previous turn's tokens (its last one has no KV)
                     * become a node this turn continues. */
                    int end = q->prompt + q->output - 1;
                    q->own_node = serve_prefix_node(s, q->node, end - serve_prefix_end(s, q->node));
                    r->node = q->own_node;
                }
            }
            prev = s->n_req - 1;
        }
    }
    gsl_rng_free(rng);
    if (prio) gsl_ran_discrete_free(prio);
    free(group_node);
    free_empirical(&ep);
    free_empirical(&eo);
    return MP_OK;
}

/* ---- traces ------------------------------------------------------------------------ */

/* A small map from a trace's ids (sessions, prefix ids) to an int. */
struct idmap { long long *key; int *val; int cap, n; };

static int *idmap_slot(struct idmap *m, long long key, bool add)
{
    if (add && 2 * (m->n + 1) > m->cap) {
        struct idmap o = *m;
        m->cap = o.cap ? 2 * o.cap : 64;
        m->key = mp_xmalloc((size_t)m->cap * sizeof *m->key);
        m->val = mp_xmalloc((size_t)m->cap * sizeof *m->val);
        for (int i = 0; i < m->cap; i++) m->val[i] = -1;
        m->n = 0;
        for (int i = 0; i < o.cap; i++)
            if (o.val[i] >= 0) *idmap_slot(m, o.key[i], true) = o.val[i];
        free(o.key);
        free(o.val);
    }
    if (!m->cap) return NULL;
    unsigned mask = (unsigned)m->cap - 1;
    for (unsigned i = (unsigned)((unsigned long long)key * 11400714819323198485ull >> 40) & mask;;
         i = (i + 1) & mask) {
        if (m->val[i] >= 0 && m->key[i] == key) return &m->val[i];
        if (m->val[i] < 0) {
            if (!add) return NULL;
            m->key[i] = key;
            m->n++;
            return &m->val[i];
        }
    }
}

enum { COL_SESSION, COL_TURN, COL_PREFIX_ID, COL_PREFIX_TOKENS, COL_PRIORITY, N_COLS };
static const char *const col_names[N_COLS] = { "session", "turn", "prefix_id", "prefix_tokens",
                                               "priority" };

/* The optional columns named in a header row after the first three. */
static int read_header(struct csv_reader *r, const struct csv_row *row, int *col, int *ncols,
                       struct mp_error *err)
{
    for (int c = 0; c < N_COLS; c++) col[c] = -1;
    if (row->n < 3)
        return csv_reader_fail(r, row->line, err, "header: expected arrival_s,prompt_tokens,"
                               "output_tokens and the optional columns, got %d cell%s", row->n,
                               row->n == 1 ? "" : "s");
    for (int i = 3; i < row->n; i++) { /* arrival, prompt, output: by position */
        const char *tok = row->cell[i];
        while (*tok == ' ' || *tok == '\t') tok++;
        size_t len = strlen(tok);
        while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t')) len--;
        int c = 0;
        while (c < N_COLS && (strlen(col_names[c]) != len || strncmp(tok, col_names[c], len))) c++;
        char q[128];
        mp_quote(tok, len, 40, q, sizeof q);
        if (c == N_COLS)
            return csv_reader_fail(r, row->line, err, "unknown column '%s'; after "
                                   "arrival_s,prompt_tokens,output_tokens expected session, turn, "
                                   "prefix_id, prefix_tokens or priority", q);
        if (col[c] >= 0)
            return csv_reader_fail(r, row->line, err, "column %s: expected once, got it twice",
                                   col_names[c]);
        col[c] = i;
    }
    *ncols = row->n;
    return MP_OK;
}


/* CSV rows "arrival_s,prompt_tokens,output_tokens" and the optional columns
 * of the header; a first row that does not start with a number is a header;
 * blank lines and '#' comments are skipped. */
int serve_trace_requests(struct serve *s, struct mp_error *err)
{
    char path[1024];
    int rc = config_resolve_key(&s->cfg, "inference.trace", "scenarios", ".csv", path,
                                sizeof path, err);
    if (rc) return rc;
    /* The one CSV reader (sim/io/csv_reader.h): BOM, CRLF, quotes, NUL and
     * long lines alike everywhere, '#' comments, every message
     * "PATH:LINE: key inference.trace: ...". */
    struct csv_reader cr;
    struct csv_reader_opts ro = { .key = "inference.trace", .comments = true };
    if ((rc = csv_reader_open(&cr, path, &ro, err))) return rc;
    struct csv_row row;
    int got = 0, cap = 0, ctx = s->cfg.inference.context_len, col[N_COLS], ncols = 3;
    bool first = true;
    for (int c = 0; c < N_COLS; c++) col[c] = -1;
    bool caching = s->cfg.inference.prefix_caching;
    struct idmap sessions = { 0 }, prefixes = { 0 };
    mp_time last = 0;
    rc = MP_OK;
    while (!rc && (got = csv_reader_next(&cr, &row, err)) > 0) {
        long ln = row.line;
        const char *c0 = row.cell[0];
        while (*c0 == ' ' || *c0 == '\t') c0++;
        if (first && !isdigit((unsigned char)*c0) && *c0 != '.') { /* header */
            first = false;
            if ((rc = read_header(&cr, &row, col, &ncols, err))) break;
            continue;
        }
        first = false;
        if (row.n != ncols) {
            rc = csv_reader_fail(&cr, ln, err, "expected %d cells (arrival_s,prompt_tokens,"
                                 "output_tokens%s), got %d", ncols,
                                 ncols > 3 ? " and the header's columns" : "", row.n);
            break;
        }
        long v[8] = { 0 };
        char *end;
        errno = 0;
        double t = strtod(row.cell[0], &end);
        while (*end == ' ' || *end == '\t') end++;
        /* At most 10^6 s, so t × 10^12 stays an exact-enough int64; digits
         * only (strtod takes "inf", "nan" and hex). */
        bool digits = strspn(row.cell[0], "0123456789.eE+- \t") == strlen(row.cell[0]);
        int bad = end == row.cell[0] || *end || !digits || !isfinite(t) || t < 0 || t > 1e6 ? 0 : -1;
        for (int c = 1; bad < 0 && c < ncols; c++)
            if (!cell_long(row.cell[c], &v[c]) || (c < 3 && (v[c] < 1 || v[c] > INT_MAX)) ||
                v[c] < INT_MIN || v[c] > INT_MAX)
                bad = c;
        if (bad >= 0) {
            char q[128];
            mp_quote(row.cell[bad], strlen(row.cell[bad]), 40, q, sizeof q);
            const char *name = bad < 3 ? (const char *const[]){ "arrival_s", "prompt_tokens",
                                                                "output_tokens" }[bad]
                                       : "of the header";
            rc = csv_reader_fail(&cr, ln, err, "column %s%.0d: expected %s, got '%s'", name,
                                 bad < 3 ? 0 : bad + 1, bad == 0 ? "seconds from 0 to 1000000"
                                 : bad < 3 ? "a whole number of tokens ≥ 1" : "a whole number",
                                 q);
            break;
        }
        long prompt = v[1], output = v[2];
        mp_time at = mp_time_from_s(t);
        if (at < last || prompt + output > ctx) {
            if (at < last)
                rc = csv_reader_fail(&cr, ln, err, "column arrival_s: arrivals must not go back "
                                     "in time (%.9f s after %.9f s)", t, mp_seconds(last));
            else
                rc = csv_reader_fail(&cr, ln, err, "prompt_tokens + output_tokens = %ld tokens "
                                     "exceeds inference.context_len = %d", prompt + output, ctx);
            break;
        }
        last = at;
        struct serve_request *r = add_request(s, &cap, at, (int)prompt, (int)output);
        int id = s->n_req - 1;
        if (col[COL_PRIORITY] >= 0) {
            long pr = v[col[COL_PRIORITY]];
            if (pr < 0 || pr > 1000) {
                rc = csv_reader_fail(&cr, ln, err, "column priority: expected a class in "
                             "0..1000 (0 the highest), got %ld", pr);
                break;
            }
            r->prio = (int)pr;
        }
        if (col[COL_PREFIX_ID] >= 0 || col[COL_PREFIX_TOKENS] >= 0) {
            if (col[COL_PREFIX_ID] < 0 || col[COL_PREFIX_TOKENS] < 0) {
                rc = csv_reader_fail(&cr, 1, err, "columns prefix_id and prefix_tokens go "
                             "together");
                break;
            }
            long pid = v[col[COL_PREFIX_ID]], ptok = v[col[COL_PREFIX_TOKENS]];
            if (ptok < 0 || ptok > prompt) {
                rc = csv_reader_fail(&cr, ln, err, "column prefix_tokens = %ld: expected "
                             "0..prompt_tokens (%ld)", ptok, prompt);
                break;
            }
            if (ptok > 0) {
                int *slot = idmap_slot(&prefixes, pid, false);
                if (!slot) {
                    slot = idmap_slot(&prefixes, pid, true);
                    *slot = caching ? serve_prefix_node(s, -1, (int)ptok) : (int)ptok;
                } else if ((caching ? serve_prefix_end(s, *slot) : *slot) != ptok) {
                    rc = csv_reader_fail(&cr, ln, err, "prefix_id %ld has prefix_tokens "
                                 "%ld here and %d before: one prefix has one length",
                                 pid, ptok, caching ? serve_prefix_end(s, *slot) : *slot);
                    break;
                }
                r->prefix = (int)ptok;
                if (caching) r->node = *slot;
            }
        }
        if (col[COL_SESSION] >= 0 || col[COL_TURN] >= 0) {
            if (col[COL_SESSION] < 0 || col[COL_TURN] < 0) {
                rc = csv_reader_fail(&cr, 1, err, "columns session and turn go together");
                break;
            }
            long sess = v[col[COL_SESSION]], turn = v[col[COL_TURN]];
            int *slot = idmap_slot(&sessions, sess, false);
            int prev = slot ? *slot : -1;
            if (turn < 0 || (turn == 0 && prev >= 0) ||
                (turn > 0 && (prev < 0 || s->req[prev].turn != turn - 1))) {
                if (turn > 0 && prev < 0)
                    rc = csv_reader_fail(&cr, ln, err, "session %ld turn %ld: the session "
                                 "never started (no turn %ld of it before this line)",
                                 sess, turn, turn - 1);
                else
                    rc = csv_reader_fail(&cr, ln, err, "session %ld turn %ld: expected turn "
                                 "%d (turns of a session come in order from 0)", sess,
                                 turn, prev >= 0 ? s->req[prev].turn + 1 : 0);
                break;
            }
            r->session = (int)sess;
            r->turn = (int)turn;
            if (prev >= 0) {
                struct serve_request *q = &s->req[prev];
                int hist = q->prompt + q->output;
                if (prompt < hist) {
                    rc = csv_reader_fail(&cr, ln, err, "session %ld turn %ld: prompt_tokens "
                                 "%ld is shorter than the history of turn %ld (its prompt + "
                                 "output = %d)", sess, turn, prompt, turn - 1, hist);
                    break;
                }
                r->prefix = hist;
                if (caching) {
                    int e = hist - 1;
                    q->own_node = serve_prefix_node(s, q->node, e - serve_prefix_end(s, q->node));
                    r->node = q->own_node;
                }
                if (r->prio == 0) r->prio = q->prio;
            }
            if (!slot) slot = idmap_slot(&sessions, sess, true);
            *slot = id;
        }
    }
    if (!rc && got < 0) rc = MP_ERR_INPUT; /* the reader said why, with the line */
    csv_reader_close(&cr);
    free(sessions.key);
    free(sessions.val);
    free(prefixes.key);
    free(prefixes.val);
    if (rc) return rc;
    if (s->n_req == 0)
        return mp_fail(err, MP_ERR_INPUT, "%s: key inference.trace: the trace has no requests",
                       path);
    return MP_OK;
}
