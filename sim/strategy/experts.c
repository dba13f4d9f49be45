/* experts.c — MoE routing, the EP all-to-all on the topology and the gating
 * rank's expert GEMMs; see experts.h. */
#include "experts.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/io/csv_reader.h"

#define MAX_ROUTE 256

const char *experts_routing_name(int routing)
{
    static const char *const names[] = { "uniform", "zipf", "dirichlet", "trace" };
    return routing >= 0 && routing <= EP_TRACE ? names[routing] : "?";
}

double experts_apply_capacity(const double *count, int E, double cf, double total, double *kept)
{
    /* Megatron's capacity: ceil(tokens × top-k / experts × factor). */
    double cap = cf > 0 ? ceil(cf * total / E) : INFINITY;
    double dropped = 0;
    for (int e = 0; e < E; e++) {
        kept[e] = count[e] < cap ? count[e] : cap;
        dropped += count[e] - kept[e];
    }
    return dropped;
}

double experts_nodes_per_token(int nodes, int max_nodes, int k)
{
    int M = max_nodes > 0 && max_nodes < nodes ? max_nodes : nodes;
    if (M <= 1) return 1;
    return M * (1.0 - pow(1.0 - 1.0 / M, k));
}

/* ---- the all-to-all ------------------------------------------------------ */

/* Bandwidth (slowest link) and latency of the route a → b. */
static void route_info(const struct system *sys, int a, int b, double *bw, mp_time *lat)
{
    int stack[MAX_ROUTE], *links;
    int n = system_route_buf(sys, a, b, stack, MAX_ROUTE, &links);
    *bw = INFINITY;
    for (int i = 0; i < n; i++)
        if (sys->links[links[i]].bw < *bw) *bw = sys->links[links[i]].bw;
    *lat = system_route_time(sys, links, n, 0);
    if (links != stack) free(links);
}

/* Seconds to move `bytes` at `bw` as picoseconds (instant links take none). */
static double ps(double bytes, double bw)
{
    return isinf(bw) || bytes <= 0 ? 0 : bytes / bw * 1e12;
}

mp_time experts_a2a_time(const struct system *sys, const int *chips, int n, const double *share,
                         double bytes_per_rank, int k, double nodes_per_token, int algo)
{
    if (n <= 1 || bytes_per_rank <= 0) return 0;
    /* Nodes of the group in order of appearance; node_share = Σ share. */
    int *node = mp_xmalloc((size_t)n * sizeof *node), *ids = mp_xmalloc((size_t)n * sizeof *ids);
    double *nshare = mp_xcalloc((size_t)n, sizeof *nshare);
    int *count = mp_xcalloc((size_t)n, sizeof *count);
    int nn = 0, local = -1, remote = -1;
    for (int i = 0; i < n; i++) {
        int nd = system_node_of(sys, chips[i]), q = 0;
        while (q < nn && ids[q] != nd) q++;
        if (q == nn) ids[nn++] = nd;
        node[i] = q;
        nshare[q] += share[i];
        count[q]++;
        if (i > 0 && q == node[0] && local < 0) local = i;
        if (q != node[0] && remote < 0) remote = i;
    }
    double bw_in = INFINITY, bw_out = INFINITY;
    mp_time lat_in = 0, lat_out = 0;
    if (local >= 0) route_info(sys, chips[0], chips[local], &bw_in, &lat_in);
    if (remote >= 0) route_info(sys, chips[0], chips[remote], &bw_out, &lat_out);
    int per = count[0];
    if (algo == EP_A2A_AUTO) algo = nn > 1 && per > 1 ? EP_A2A_HIERARCHICAL : EP_A2A_DIRECT;
    double S = bytes_per_rank, worst = 0;
    mp_time t;
    if (algo == EP_A2A_HIERARCHICAL && nn > 1) {
        /* A token (S/k bytes of a rank's S) reaches node b with chance
         * d_b = D × b's share (at most 1), once, over the NIC to the GPU
         * of the same local index; rank (l, a) sends S/k · Σ_{b≠a} d_b and
         * GPU (l, b) takes S/k · d_b from each of the other nodes. */
        double token_bytes = S / (k > 0 ? k : 1), nic = 0, nvl = 0;
        for (int a = 0; a < nn; a++) {
            double d = nodes_per_token * nshare[a], out = 0;
            if (d > 1) d = 1;
            for (int b = 0; b < nn; b++) {
                double db = nodes_per_token * nshare[b];
                if (b != a) out += token_bytes * (db > 1 ? 1 : db);
            }
            double in_nic = (nn - 1) * token_bytes * d;
            if (in_nic > nic) nic = in_nic;
            if (out > nic) nic = out;
        }
        for (int j = 0; j < n; j++) {
            /* Copies for rank j: n·S·share_j, arriving on any GPU of its node. */
            double in_nvl = n * S * share[j] * (count[node[j]] - 1) / count[node[j]];
            if (in_nvl > nvl) nvl = in_nvl;
        }
        for (int b = 0; b < nn; b++) {
            double out_nvl = n * S * nshare[b] / count[b] * (count[b] - 1) / count[b];
            if (out_nvl > nvl) nvl = out_nvl;
        }
        double a = ps(nic, bw_out), c = ps(nvl, bw_in);
        worst = a > c ? a : c;
        t = mp_time_add(mp_time_add(mp_time_from_ps(worst), lat_out), per > 1 ? lat_in : 0);
    } else {
        for (int i = 0; i < n; i++) {
            double out_nvl = S * (nshare[node[i]] - share[i]);
            double out_nic = S * (1 - nshare[node[i]]);
            double in_nvl = share[i] * S * (count[node[i]] - 1);
            double in_nic = share[i] * S * (n - count[node[i]]);
            double m = ps(out_nvl, bw_in);
            if (ps(in_nvl, bw_in) > m) m = ps(in_nvl, bw_in);
            if (ps(out_nic, bw_out) > m) m = ps(out_nic, bw_out);
            if (ps(in_nic, bw_out) > m) m = ps(in_nic, bw_out);
            if (m > worst) worst = m;
        }
        t = mp_time_add(mp_time_from_ps(worst), nn > 1 ? lat_out : lat_in);
    }
    free(node);
    free(ids);
    free(nshare);
    free(count);
    return t;
}

/* ---- the trace ----------------------------------------------------------- */

struct trace_reader {
    const char *path;
    double *rows;      /* [n_rows × E], each row scaled to its largest load */
    int n_rows, cap_rows, E;
};

/* Read the loads (sim/io/csv_reader.h: BOM, CRLF, quotes, '#' comments,
 * line numbers). Each row is divided by its largest load as it is read, so
 * loads up to 1.8e308 add up without overflow (popularity() normalises). */
static int read_trace(struct trace_reader *t, struct mp_error *err)
{
    struct csv_reader r;
    struct csv_reader_opts o = { .key = "experts.trace", .comments = true };
    int rc = csv_reader_open(&r, t->path, &o, err);
    if (rc) return rc;
    struct csv_row row;
    int got = 0;
    while ((got = csv_reader_next(&r, &row, err)) > 0) {
        if (row.n != t->E) {
            rc = csv_reader_fail(&r, row.line, err, "expected %d loads (one per expert) per row, "
                                 "got %d", t->E, row.n);
            break;
        }
        MP_GROW(t->rows, t->cap_rows, (size_t)(t->n_rows + 1) * t->E);
        double *v = t->rows + (size_t)t->n_rows * t->E, most = 0;
        for (int e = 0; e < t->E && !rc; e++) {
            char *end, q[128];
            const char *cell = row.cell[e];
            errno = 0;
            v[e] = strtod(cell, &end);
            while (*end == ' ' || *end == '\t') end++;
            bool number = *cell && strspn(cell, "0123456789.eE+- \t") == strlen(cell);
            if (!number || *end || errno == ERANGE || !isfinite(v[e]) || v[e] < 0) {
                mp_quote(cell, strlen(cell), 40, q, sizeof q);
                rc = csv_reader_fail(&r, row.line, err, "column %d: expected a load (a finite "
                                     "number ≥ 0, at most 1.8e308), got '%s'", e + 1, q);
            } else if (v[e] > most) {
                most = v[e];
            }
        }
        if (rc) break;
        if (most <= 0) {
            rc = csv_reader_fail(&r, row.line, err, "expected some load > 0 in the row, got "
                                 "all zeros");
            break;
        }
        for (int e = 0; e < t->E; e++) v[e] /= most;
        t->n_rows++;
    }
    if (!rc && got < 0) rc = MP_ERR_INPUT;
    if (!rc && t->n_rows == 0)
        rc = csv_reader_fail(&r, 0, err, "expected at least one row of %d loads, got none", t->E);
    csv_reader_close(&r);
    return rc;
}

/* ---- the plan ------------------------------------------------------------ */

/* Popularity of each expert in each MoE layer. */
static int popularity(const struct ep_input *in, int E, int n_moe, gsl_rng *rng, double *pop,
                      struct mp_error *err)
{
    struct trace_reader tr = { .path = in->trace, .E = E };
    if (in->routing == EP_TRACE) {
        int rc = read_trace(&tr, err);
        if (rc) {
            free(tr.rows);
            return rc;
        }
    }
    double *alpha = mp_xmalloc((size_t)E * sizeof *alpha);
    size_t *perm = mp_xmalloc((size_t)E * sizeof *perm);
    for (int i = 0; i < n_moe; i++) {
        double *p = pop + (size_t)i * E, sum = 0;
        switch (in->routing) {
        case EP_ZIPF:
            for (int e = 0; e < E; e++) perm[e] = (size_t)e;
            gsl_ran_shuffle(rng, perm, (size_t)E, sizeof *perm);
            for (int e = 0; e < E; e++) p[perm[e]] = pow(e + 1.0, -in->skew);
            break;
        case EP_DIRICHLET:
            for (int e = 0; e < E; e++) alpha[e] = in->concentration;
            gsl_ran_dirichlet(rng, (size_t)E, alpha, p);
            break;
        case EP_TRACE:
            memcpy(p, tr.rows + (size_t)(i % tr.n_rows) * E, (size_t)E * sizeof *p);
            break;
        default:
            for (int e = 0; e < E; e++) p[e] = 1;
        }
        for (int e = 0; e < E; e++) sum += p[e];
        for (int e = 0; e < E; e++) p[e] = sum > 0 ? p[e] / sum : 1.0 / E;
    }
    free(alpha);
    free(perm);
    free(tr.rows);
    return MP_OK;
}

/* A trace is used as given: loads scaled to `total` assignments, rounded
 * by largest remainder so they add up exactly. */
static void fixed_counts(const double *p, int E, double total, double *count, double *rem)
{
    double sum = 0;
    for (int e = 0; e < E; e++) {
        double x = p[e] * total;
        count[e] = floor(x + 1e-9);
        rem[e] = x - count[e];
        sum += count[e];
    }
    for (double left = total - sum; left > 0.5; left--) {
        int best = 0;
        for (int e = 1; e < E; e++)
            if (rem[e] > rem[best]) best = e;
        count[best]++;
        rem[best] = -1;
    }
}

/* Expert copies per rank: E/ep home experts (contiguous), then each
 * redundant copy of the hottest experts on the rank with the least
 * expected load. copies[e] counts an expert's instances; owner lists
 * (rank, expert) pairs. */
struct placement { int n; int *rank, *expert; int *copies; };

static void place(const double *p, int E, int ep, int redundant, struct placement *pl)
{
    pl->n = E + redundant;
    pl->rank = mp_xmalloc((size_t)pl->n * sizeof *pl->rank);
    pl->expert = mp_xmalloc((size_t)pl->n * sizeof *pl->expert);
    pl->copies = mp_xmalloc((size_t)E * sizeof *pl->copies);
    double *load = mp_xcalloc((size_t)ep, sizeof *load);
    int per = E / ep;
    for (int e = 0; e < E; e++) {
        pl->rank[e] = e / per;
        pl->expert[e] = e;
        pl->copies[e] = 1;
        load[e / per] += p[e];
    }
    bool *used = mp_xcalloc((size_t)E, sizeof *used);
    for (int c = 0; c < redundant; c++) {
        int hot = -1;
        for (int e = 0; e < E; e++)
            if (!used[e] && (hot < 0 || p[e] > p[hot])) hot = e;
        used[hot] = true;
        int r = 0;
        for (int q = 1; q < ep; q++)
            if (load[q] < load[r]) r = q;
        /* The copy takes half the expert's load off its home rank. */
        load[hot / per] -= p[hot] / 2;
        load[r] += p[hot] / 2;
        pl->rank[E + c] = r;
        pl->expert[E + c] = hot;
        pl->copies[hot] = 2;
    }
    free(load);
    free(used);
}

static void place_release(struct placement *pl)
{
    free(pl->rank);
    free(pl->expert);
    free(pl->copies);
}

/* One expert's kernels (gate/up, activation, down) for `tok` tokens. */
static mp_time expert_time(const struct ep_input *in, double one, double tok, int pass)
{
    (void)one;
    if (tok <= 0) return 0;
    return in->expert_time(in->op_ctx, tok, pass);
}

int experts_plan_build(struct ep_plan *p, const struct ep_input *in, struct mp_error *err)
{
    memset(p, 0, sizeof *p);
    const struct model *m = in->model;
    int E = m->experts, ep = in->ep, M = in->microbatches;
    if (E == 0)
        return mp_fail(err, MP_ERR_INPUT, "key parallel.ep = %d: model %s has no experts "
                       "(expected parallel.ep = 1 for a dense model)", ep, m->name);
    if (E % ep)
        return mp_fail(err, MP_ERR_INPUT, "key parallel.ep = %d: expected a divisor of the "
                       "model's %d experts", ep, E);
    if (in->redundant > E)
        return mp_fail(err, MP_ERR_INPUT, "key experts.redundant = %d: expected at most the "
                       "model's %d experts", in->redundant, E);
    /* GSL's multinomial draw counts a microbatch's token-expert assignments
     * in an unsigned int. */
    double assignments = (double)ep * in->tokens_per_rank * m->experts_per_token;
    if (assignments > UINT_MAX)
        return mp_fail(err, MP_ERR_INPUT, "model.seq_len × training.micro_batch × %d experts per "
                       "token = %.4g token-expert assignments per microbatch: expected at most "
                       "%u (the routing draw counts them in 32 bits)", m->experts_per_token,
                       assignments, UINT_MAX);
    p->ep = ep;
    p->experts = E;
    p->k = m->experts_per_token;
    p->microbatches = M;
    p->moe_of_layer = mp_xmalloc((size_t)m->n_layers * sizeof *p->moe_of_layer);
    for (int l = 0; l < m->n_layers; l++)
        p->moe_of_layer[l] = m->layer[l].moe ? p->n_moe++ : -1;
    p->group = mp_xmalloc((size_t)ep * sizeof *p->group);
    memcpy(p->group, in->group, (size_t)ep * sizeof *p->group);
    p->stats = mp_xcalloc((size_t)(p->n_moe ? p->n_moe : 1), sizeof *p->stats);
    p->expert_tokens = mp_xcalloc((size_t)p->n_moe * E + 1, sizeof *p->expert_tokens);
    size_t cells = (size_t)M * p->n_moe;
    p->t = mp_xcalloc(cells * N_EP_ROLES + 1, sizeof *p->t);
    p->gate_rank = mp_xcalloc(cells + 1, sizeof *p->gate_rank);
    if (in->show_ranks) p->rank_t = mp_xcalloc(cells * ep * 3 + 1, sizeof *p->rank_t);

    /* The group's shape on the topology. */
    int n0 = system_node_of(in->sys, in->group[0]);
    p->per_node = 0;
    for (int r = 0; r < ep; r++) p->per_node += system_node_of(in->sys, in->group[r]) == n0;
    p->nodes = ep / p->per_node;
    int max_nodes = in->max_nodes > 0 ? in->max_nodes
                    : m->expert_groups > 0 && m->groups_per_token > 0 ? m->groups_per_token : 0;
    p->nodes_per_token = experts_nodes_per_token(p->nodes, max_nodes, p->k);
    p->a2a = in->a2a != EP_A2A_AUTO ? in->a2a
             : p->nodes > 1 && p->per_node > 1 ? EP_A2A_HIERARCHICAL : EP_A2A_DIRECT;

    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, in->seed);
    double *pop = mp_xmalloc(((size_t)p->n_moe * E + 1) * sizeof *pop);
    int rc = popularity(in, E, p->n_moe, rng, pop, err);
    if (rc) {
        gsl_rng_free(rng);
        free(pop);
        experts_plan_release(p);
        return rc;
    }
    double H = m->hidden;
    double total = (double)ep * in->tokens_per_rank * p->k;   /* assignments per mb, layer */
    double one = 0; /* parameters of one routed expert */
    for (int l = 0; l < m->n_layers; l++)
        if (m->layer[l].moe) { one = m->layer[l].expert_params / E; break; }
    p->bytes_per_rank = total / ep * H * (in->dispatch_bits / 8.0);

    double *count = mp_xmalloc((size_t)E * sizeof *count), *kept = mp_xmalloc((size_t)E * sizeof *kept);
    double *rem = mp_xmalloc((size_t)E * sizeof *rem), *share = mp_xmalloc((size_t)ep * sizeof *share);
    double *rank_tok = mp_xmalloc((size_t)ep * sizeof *rank_tok);
    mp_time *rank_f = mp_xmalloc((size_t)ep * sizeof *rank_f);
    unsigned int *draw = mp_xmalloc((size_t)E * sizeof *draw);
    struct placement *pl = mp_xmalloc(((size_t)p->n_moe + 1) * sizeof *pl);
    for (int i = 0; i < p->n_moe; i++) place(pop + (size_t)i * E, E, ep, in->redundant, &pl[i]);
    for (int l = 0, i = 0; l < m->n_layers; l++)
        if (m->layer[l].moe) {
            p->stats[i] = (struct ep_layer_stats){ .layer = l, .tok_min = INFINITY,
                                                   .tok_mean = total / E };
            i++;
        }
    for (int mb = 0; mb < M; mb++) {
        for (int i = 0; i < p->n_moe; i++) {
            const double *pi = pop + (size_t)i * E;
            struct ep_layer_stats *st = &p->stats[i];
            if (in->routing == EP_TRACE) {
                fixed_counts(pi, E, total, count, rem);
            } else {
                gsl_ran_multinomial(rng, (size_t)E, (unsigned int)total, pi, draw);
                for (int e = 0; e < E; e++) count[e] = draw[e];
            }
            double dropped = experts_apply_capacity(count, E, in->capacity_factor, total, kept);
            st->dropped += dropped;
            st->assigned += total;
            double kept_sum = 0;
            for (int e = 0; e < E; e++) {
                if (kept[e] < st->tok_min) st->tok_min = kept[e];
                if (kept[e] > st->tok_max) st->tok_max = kept[e];
                kept_sum += kept[e];
                p->expert_tokens[(size_t)i * E + e] += kept[e];
            }
            /* Rank loads and each rank's forward expert time. */
            for (int r = 0; r < ep; r++) rank_tok[r] = 0, rank_f[r] = 0;
            for (int c = 0; c < pl[i].n; c++) {
                int e = pl[i].expert[c], r = pl[i].rank[c];
                double tok = kept[e] / pl[i].copies[e];
                rank_tok[r] += tok;
                rank_f[r] = mp_time_add(rank_f[r], expert_time(in, one, tok, 0));
            }
            int gate = 0;
            for (int r = 1; r < ep; r++)
                if (rank_f[r] > rank_f[gate] ||
                    (rank_f[r] == rank_f[gate] && rank_tok[r] > rank_tok[gate]))
                    gate = r;
            double maxtok = 0;
            for (int r = 0; r < ep; r++) {
                share[r] = kept_sum > 0 ? rank_tok[r] / kept_sum : 1.0 / ep;
                if (rank_tok[r] > maxtok) maxtok = rank_tok[r];
            }
            double imb = kept_sum > 0 ? maxtok / (kept_sum / ep) : 1;
            st->imbalance_mean += imb / M;
            if (imb > st->imbalance_max) st->imbalance_max = imb;

            size_t cell = (size_t)mb * p->n_moe + i;
            mp_time *t = p->t + cell * N_EP_ROLES;
            p->gate_rank[cell] = gate;
            double per_rank = kept_sum / ep * H;
            t[EPR_DISPATCH] = experts_a2a_time(in->sys, in->group, ep, share,
                                               per_rank * in->dispatch_bits / 8.0, p->k,
                                               p->nodes_per_token, p->a2a);
            t[EPR_COMBINE] = t[EPR_GRAD] =
                experts_a2a_time(in->sys, in->group, ep, share, per_rank * in->act_bits / 8.0,
                                 p->k, p->nodes_per_token, p->a2a);
            for (int c = 0; c < pl[i].n; c++) {
                int e = pl[i].expert[c], r = pl[i].rank[c];
                double tok = kept[e] / pl[i].copies[e];
                if (r == gate) {
                    for (int k = 0; k < 3; k++)
                        t[EPR_EXPERTS_F + k] = mp_time_add(t[EPR_EXPERTS_F + k],
                                                           expert_time(in, one, tok, k));
                }
                if (p->rank_t) {
                    mp_time *rt = p->rank_t + (cell * ep + r) * 3;
                    for (int k = 0; k < 3; k++) rt[k] = mp_time_add(rt[k], expert_time(in, one, tok, k));
                }
            }
            t[EPR_EXPERTS_BW] = mp_time_add(t[EPR_EXPERTS_B], t[EPR_EXPERTS_W]);
        }
    }
    for (int i = 0; i < p->n_moe; i++) {
        if (isinf(p->stats[i].tok_min)) p->stats[i].tok_min = 0;
        place_release(&pl[i]);
    }
    free(pl);
    free(count);
    free(kept);
    free(rem);
    free(share);
    free(rank_tok);
    free(rank_f);
    free(draw);
    free(pop);
    gsl_rng_free(rng);
    return MP_OK;
}

void experts_plan_release(struct ep_plan *p)
{
    free(p->moe_of_layer);
    free(p->t);
    free(p->rank_t);
    free(p->gate_rank);
    free(p->group);
    free(p->stats);
    free(p->expert_tokens);
    memset(p, 0, sizeof *p);
}

mp_time experts_time(const struct ep_plan *p, int mb, int layer, enum ep_role role)
{
    if (role == EPR_NONE || !p->moe_of_layer || mb < 0) return 0;
    int i = p->moe_of_layer[layer];
    if (i < 0) return 0;
    assert(mb < p->microbatches);
    return p->t[((size_t)mb * p->n_moe + i) * N_EP_ROLES + role];
}

mp_time experts_rank_time(const struct ep_plan *p, int mb, int layer, int r, enum ep_role role)
{
    if (!p->rank_t || mb < 0) return 0;
    int i = p->moe_of_layer[layer];
    if (i < 0) return 0;
    const mp_time *rt = p->rank_t + (((size_t)mb * p->n_moe + i) * p->ep + r) * 3;
    switch (role) {
    case EPR_EXPERTS_F: return rt[0];
    case EPR_EXPERTS_B: return rt[1];
    case EPR_EXPERTS_W: return rt[2];
    case EPR_EXPERTS_BW: return mp_time_add(rt[1], rt[2]);
    default: return 0;
    }
}
