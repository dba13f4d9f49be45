/* search.c — enumerate layouts, bound them in closed form, simulate the ones
 * the bound cannot rule out, rank; see search.h. */
#include "search.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "hardware/calib.h"
#include "hardware/system.h"
#include "models/model.h"
#include "sim/io/budget.h"
#include "sim/io/outfile.h"
#include "sim/strategy/offload.h"
#include "sim/strategy/schedule.h"
#include "sim/strategy/tensor.h"
#include "sim/train/bound.h"
#include "sim/train/cost.h"
#include "sim/train/estimate.h"
#include "sim/train/sim.h"
#include "progress.h"
#include "sweep.h"

#define DEFAULT_SCHEDULES "1f1b,interleaved,zb-h1,zb-h2,gpipe"
#define DEFAULT_K 32

/* ---- --fix ---------------------------------------------------------------- */

struct fix {
    const struct config_key *key;
    char (*val)[CONFIG_STR];
    int n;
};

static bool in_csv(const char *csv, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = csv; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, name, n)) return true;
        p += len;
        if (*p) p++;
    }
    return false;
}

static void free_fixes(struct fix *f, int n)
{
    for (int i = 0; i < n; i++) free(f[i].val);
    free(f);
}

/* "key=v1,v2": each value set on a scratch config through the key table
 * (so "16" and "16 " or "yes" and "true" are one value) and kept in the
 * form config_format_value writes, which is what candidates are held to. */
static int parse_fixes(const struct search_options *opt, const struct config *base,
                       struct fix **out, int *n_out, struct mp_error *err)
{
    *out = NULL;
    *n_out = 0;
    int n = 0;
    for (const char *const *p = opt->fix; p && *p; p++) n++;
    if (!n) return MP_OK;
    struct fix *f = mp_xcalloc((size_t)n, sizeof *f);
    for (int i = 0; i < n; i++) {
        const char *text = opt->fix[i], *eq = strchr(text, '=');
        char key[64];
        if (!eq || eq == text || eq[1] == 0 || (size_t)(eq - text) >= sizeof key) {
            free_fixes(f, i);
            return mp_fail(err, MP_ERR_INPUT, "--fix '%s': expected key=value[,value...] "
                           "with a layout key (%s)", text, SEARCH_KEYS);
        }
        snprintf(key, sizeof key, "%.*s", (int)(eq - text), text);
        if (!in_csv(SEARCH_KEYS, key)) {
            free_fixes(f, i);
            return mp_fail(err, MP_ERR_INPUT, "--fix %s: not a layout key the search varies; "
                           "expected one of %s", key, SEARCH_KEYS);
        }
        f[i].key = config_find_key(key);
        for (const char *v = eq + 1; *v;) {
            size_t len = strcspn(v, ",");
            char one[CONFIG_STR];
            snprintf(one, sizeof one, "%.*s", (int)len, v);
            struct config scratch = *base;
            if (config_set_key(&scratch, key, one, "--fix", err)) {
                free_fixes(f, i + 1);
                return MP_ERR_INPUT;
            }
            if (!strcmp(key, "training.schedule") && !schedule_find(one)) {
                free_fixes(f, i + 1);
                return mp_fail(err, MP_ERR_INPUT, "--fix training.schedule: unknown pipeline "
                               "schedule '%s' (known: %s)", one, schedule_names());
            }
            f[i].val = mp_xrealloc(f[i].val, (size_t)(f[i].n + 1) * sizeof *f[i].val);
            config_format_value(&scratch, f[i].key, f[i].val[f[i].n++], CONFIG_STR);
            v += len;
            if (*v) v++;
        }
    }
    *out = f;
    *n_out = n;
    return MP_OK;
}

static bool fixes_allow(const struct fix *f, int n, const struct config *c)
{
    char v[CONFIG_STR];
    for (int i = 0; i < n; i++) {
        config_format_value(c, f[i].key, v, sizeof v);
        bool ok = false;
        for (int k = 0; k < f[i].n && !ok; k++) ok = !strcmp(v, f[i].val[k]);
        if (!ok) return false;
    }
    return true;
}

/* ---- candidates ----------------------------------------------------------- */

/* A layout past the rules and the memory bound: its keys, its bounds, and
 * what the bound promises for the ranking metric (`hope`). */
struct cand {
    int tp, cp, pp, dp, ep, vpp, mb, rec, zero, off, batch;
    bool sp, ov;
    int sched;               /* index in schedule_kinds */
    int order;               /* enumeration order */
    double mem, host;        /* memory bounds */
    mp_time bound;           /* step-time bound, ps; -1: refused while pricing */
    double hope;             /* the metric at the bound */
    int status;              /* 0 bound only, 1 simulated */
};

struct list {
    struct cand *c;
    int n, cap;
};

static void layout(const struct config *base, const struct cand *c, struct config *cfg)
{
    *cfg = *base;
    cfg->parallel.tp = c->tp;
    cfg->parallel.cp = c->cp;
    cfg->parallel.pp = c->pp;
    cfg->parallel.dp = c->dp;
    cfg->parallel.ep = c->ep;
    cfg->parallel.vpp = c->vpp;
    cfg->parallel.sp = c->sp;
    cfg->parallel.tp_overlap = c->ov;
    cfg->training.micro_batch = c->mb;
    cfg->training.global_batch = c->batch;
    cfg->training.recompute = c->rec;
    cfg->training.zero = c->zero;
    cfg->training.offload = c->off;
    snprintf(cfg->training.schedule, sizeof cfg->training.schedule, "%s",
             schedule_kinds[c->sched]->name);
}

enum { WHY_BATCH, WHY_RULES, WHY_MEMORY, WHY_HOST, WHY_SIMULATED };

/* Layer tables (sim_layer_table) by the keys they depend on. */
struct table {
    int tp, cp, mb, rec;
    bool sp;
    double *v; /* [2 × layers]: params, then stash */
};

struct enum_ctx {
    struct table *tables;
    int n_tables, cap_tables;
    const struct search_options *opt;
    const struct config *base;
    const struct model *m;
    const struct system *sys;
    const struct fix *fix;
    int n_fix;
    struct search_result *res;
    struct list *out;
    struct config scratch;
};

static void note(struct search_result *res, int why, const char *text)
{
    if (!res->example[why][0]) snprintf(res->example[why], sizeof res->example[why], "%.199s", text);
}

/* One full assignment: held to the limits, deduplicated, the batch, the
 * rules and the memory bound; survivors join the list. */
static void consider(struct enum_ctx *x, struct cand c)
{
    struct search_result *res = x->res;
    res->enumerated++;
    struct config *cfg = &x->scratch;
    layout(x->base, &c, cfg);
    if (!fixes_allow(x->fix, x->n_fix, cfg)) {
        res->fixed_out++;
        return;
    }
    /* The same run as another layout: not counted as pruned. Selective
     * recompute under FlashAttention without CP is recompute none: the
     * kernels it re-runs (models/kernels.c, `recompute`) and the scores it
     * frees (models/model_cost.c) exist only in unfused attention. */
    if ((c.dp == 1 && c.zero > 0 && c.off == OFFLOAD_NONE) ||
        (c.pp == 1 && strcmp(schedule_kinds[c.sched]->name, "1f1b")) ||
        (c.tp == 1 && (c.sp || c.ov)) ||
        (c.rec == RECOMPUTE_SELECTIVE && cfg->training.attention == ATTENTION_FLASH &&
         cfg->parallel.cp <= 1)) {
        res->duplicates++;
        return;
    }
    int gb = x->base->training.global_batch, unit = c.dp * c.mb;
    char why[200];
    if (x->opt->batch_policy == SEARCH_BATCH_EXACT ? gb % unit : gb / unit == 0) {
        res->batch_pruned++;
        snprintf(why, sizeof why, "global batch %d over dp %d × micro_batch %d", gb, c.dp, c.mb);
        note(res, WHY_BATCH, why);
        return;
    }
    c.batch = gb / unit * unit;
    cfg->training.global_batch = c.batch;
    const struct schedule_kind *kind = schedule_kinds[c.sched];
    const struct config_int_list *sl = &x->base->parallel.stage_layers;
    struct pipe_shape shape = { .devices = c.pp, .microbatches = c.batch / unit, .chunks = c.vpp,
                                .layers = x->m->decoders, .device_layers = sl->n ? sl->v : NULL };
    struct mp_error e;
    if (c.pp * c.vpp > x->m->decoders) {
        res->rule_pruned++;
        snprintf(why, sizeof why, "pp %d × vpp %d is more than the model's %d layers", c.pp,
                 c.vpp, x->m->decoders);
        note(res, WHY_RULES, why);
        return;
    }
    if (kind->check && kind->check(&shape, &e)) {
        res->rule_pruned++;
        note(res, WHY_RULES, e.msg);
        return;
    }
    int t = 0;
    while (t < x->n_tables && !(x->tables[t].tp == c.tp && x->tables[t].cp == c.cp &&
                                x->tables[t].mb == c.mb && x->tables[t].rec == c.rec &&
                                x->tables[t].sp == c.sp))
        t++;
    if (t == x->n_tables) {
        MP_GROW(x->tables, x->cap_tables, x->n_tables + 1);
        struct table *tb = &x->tables[x->n_tables++];
        *tb = (struct table){ .tp = c.tp, .cp = c.cp, .mb = c.mb, .rec = c.rec, .sp = c.sp,
                              .v = mp_xmalloc(2 * (size_t)x->m->n_layers * sizeof *tb->v) };
        sim_layer_table(cfg, x->m, tb->v, tb->v + x->m->n_layers);
    }
    const double *tv = x->tables[t].v;
    sim_memory_bound(cfg, x->m, x->sys->chips_per_node, tv, tv + x->m->n_layers, &c.mem, &c.host);
    if (c.mem > x->sys->chip.mem_bytes) {
        res->mem_pruned++;
        res->mem_pruned_nocp += c.cp == 1;
        snprintf(why, sizeof why, "memory bound %.1f GB per chip > %.1f GB (tp %d cp %d pp %d "
                 "dp %d mb %d %s, recompute %d, zero %d)", c.mem / 1e9,
                 x->sys->chip.mem_bytes / 1e9, c.tp, c.cp, c.pp, c.dp, c.mb, kind->name, c.rec,
                 c.zero);
        note(res, WHY_MEMORY, why);
        return;
    }
    if (c.off != OFFLOAD_NONE && c.host > x->sys->host.mem_bytes) {
        res->host_pruned++;
        snprintf(why, sizeof why, "host memory bound %.1f GB per node > %.1f GB",
                 c.host / 1e9, x->sys->host.mem_bytes / 1e9);
        note(res, WHY_HOST, why);
        return;
    }
    c.order = x->out->n;
    MP_GROW(x->out->c, x->out->cap, x->out->n + 1);
    x->out->c[x->out->n++] = c;
}

/* The innermost loops: schedule (with vpp), sp, tp_overlap, recompute,
 * ZeRO, offload. */
static void enum_tail(struct enum_ctx *x, struct cand c)
{
    const char *schedules = x->opt->schedules ? x->opt->schedules : DEFAULT_SCHEDULES;
    int max_vpp = x->opt->max_vpp > 0 ? x->opt->max_vpp : 8;
    int L = x->m->decoders;
    int offloads = x->sys->host.present ? OFFLOAD_ALL : OFFLOAD_NONE;
    for (int k = 0; schedule_kinds[k]; k++) {
        if (!in_csv(schedules, schedule_kinds[k]->name)) continue;
        bool interleaved = !strcmp(schedule_kinds[k]->name, "interleaved");
        c.sched = k;
        /* Interleaved: every vpp ≥ 2 that divides the layers per stage
         * (Megatron's rule; the schedule check refuses the others). */
        for (int v = interleaved ? 2 : 1; v <= (interleaved ? max_vpp : 1); v++) {
            if (interleaved && (L % c.pp || (L / c.pp) % v)) continue;
            c.vpp = v;
            for (int sp = 0; sp <= 1; sp++)
                for (int ov = 0; ov <= 1; ov++)
                    for (int rec = RECOMPUTE_NONE; rec <= RECOMPUTE_FULL; rec++)
                        for (int z = 0; z <= 3; z++)
                            for (int off = OFFLOAD_NONE; off <= offloads; off++) {
                                /* Offload as DeepSpeed allows it (offload.h). */
                                if ((off == OFFLOAD_OPTIMIZER && z < 1) ||
                                    (off >= OFFLOAD_WEIGHTS && z < 3))
                                    continue;
                                c.sp = sp, c.ov = ov, c.rec = rec, c.zero = z, c.off = off;
                                consider(x, c);
                            }
        }
    }
}

/* ---- context parallelism (branch context, issue 17) -------------------- */

/* The largest cp tried: --max-cp, else the largest power of two leaving
 * each CP rank at least 8192 tokens (Llama 3 405B's 131,072-token run used
 * CP 16, i.e. 8192 per rank: shorter shares are an assumption not to be
 * worth their K/V traffic), so short sequences search as before. */
static int max_cp(const struct search_options *opt, const struct config *base)
{
    if (opt->max_cp > 0) return opt->max_cp;
    int cp = 1;
    while ((long long)base->model.seq_len / (2 * cp) >= 8192) cp *= 2;
    return cp;
}

/* Whether cp fits the sequence and the heads (config_check and context.c
 * refuse the rest, so they are not enumerated). */
static bool cp_allowed(const struct config *base, const struct model *m, int tp, int cp)
{
    if (cp == 1) return true;
    int kind = base->parallel.cp_kind;
    long long s = base->model.seq_len;
    if (s % (kind == CP_ULYSSES ? cp : 2 * cp) != 0) return false;
    if (kind == CP_ULYSSES && (m->heads / tp) % cp != 0) return false;
    if (kind == CP_HYBRID && base->parallel.cp_ulysses && cp % base->parallel.cp_ulysses) return false;
    for (int l = 0; l < m->n_layers; l++) {
        enum mixer_kind k = m->layer[l].mixer;
        if (m->layer[l].kind == LAYER_DECODER && k != MIXER_NONE && k != MIXER_ATTENTION &&
            k != MIXER_MLA)
            return false; /* context.c refuses recurrent and windowed mixers */
    }
    return true;
}

/* cp × tp × pp × dp = N; parallel.stage_layers fixes pp (issue 17). */
static void enumerate(struct enum_ctx *x)
{
    const struct model *m = x->m;
    int N = x->opt->chips;
    int max_mb = x->opt->max_micro_batch > 0 ? x->opt->max_micro_batch : 8;
    int fixed_pp = x->base->parallel.stage_layers.n;
    for (int tp = 1; tp <= N && tp <= x->sys->chips_per_node; tp *= 2) {
        if (N % tp || !tensor_degree_ok(m, tp)) continue; /* one rule with the runner */
        for (int cp = 1; cp <= max_cp(x->opt, x->base) && cp <= N / tp; cp *= 2) {
            if ((N / tp) % cp || !cp_allowed(x->base, m, tp, cp)) continue;
            for (int pp = 1; pp <= N / tp / cp && pp <= m->decoders; pp++) {
                if ((N / tp / cp) % pp || (fixed_pp && pp != fixed_pp)) continue;
                int dp = N / tp / cp / pp;
                for (int ep = 1; ep <= dp; ep *= 2) {
                    if (ep > 1 && (!m->experts || m->experts % ep || dp % ep)) break;
                    for (int mb = 1; mb <= max_mb; mb++) {
                        struct cand c = { .tp = tp, .cp = cp, .pp = pp, .dp = dp, .ep = ep,
                                          .mb = mb };
                        enum_tail(x, c);
                    }
                }
            }
        }
    }
}

/* ---- the metric ----------------------------------------------------------- */

static bool higher_better(const char *metric)
{
    return sweep_metric_sense(metric) > 0;
}

/* What the step-time bound promises for the metric (the best it can be). */
static double hope(const char *metric, const struct cand *c, const struct config *base,
                   const struct model *m, const struct system *sys, double budget)
{
    double s = mp_seconds(c->bound), tokens = (double)c->batch * base->model.seq_len;
    if (!strcmp(metric, "step_time_s")) return s;
    if (!strcmp(metric, "tokens_per_s")) return s > 0 ? tokens / s : INFINITY;
    if (!strcmp(metric, "peak_mem_bytes")) return c->mem;
    if (!strcmp(metric, "bubble")) return 0; /* no bound: every layout could reach 0 */
    int chips = c->tp * c->cp * c->pp * c->dp;
    if (!strcmp(metric, "mfu")) {
        double peak = base->model.weight_bits <= 8 && sys->chip.peak_fp8 > 0 ? sys->chip.peak_fp8
                                                                            : sys->chip.peak_bf16;
        double flops = model_step_flops(m, base->model.seq_len, c->batch);
        return s > 0 ? flops / (chips * peak * s) : INFINITY;
    }
    struct cost cost;
    cost_compute(&cost, &sys->chip, chips, s, tokens, budget);
    return cost.basis != COST_UNKNOWN ? cost.usd_per_mtok : NAN;
}

/* a is strictly better than b. */
static bool better(const char *metric, double a, double b)
{
    if (isnan(a) || isnan(b)) return !isnan(a) && isnan(b);
    return higher_better(metric) ? a > b : a < b;
}

/* ---- work on threads ------------------------------------------------------ */

struct pool {
    const struct config *base;
    const struct search_options *opt;
    const struct sim_inputs *inputs;
    const char *metric;
    struct cand *c;
    const int *todo;        /* indices into c (bounding: the first of each group) */
    int n_todo;
    int n_group_end;        /* bounding: where the last group ends */
    bool simulate;          /* else bound */
    struct search_hit *hit; /* [n cands], filled for the simulated */
    char **row;             /* [n cands] CSV rows, or NULL */
    pthread_mutex_t mu;
    int next;
    /* On a terminal, a bar per tier or round (progress.h); else NULL. */
    FILE *tty;
    int done;
    double t0, last_draw;
    char what[48];
};

/* One more of the pool's items done: redraw the bar at most 10 times a
 * second, and when the last is done. */
static void pool_tick(struct pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->done++;
    double now = mp_wall_seconds();
    if (p->tty && (now - p->last_draw >= 0.1 || p->done == p->n_todo)) {
        char text[160];
        double el = now - p->t0;
        p->last_draw = now;
        snprintf(text, sizeof text, "search: %s %d/%d, %.0f/s", p->what, p->done, p->n_todo,
                 el > 0 ? p->done / el : 0);
        progress_bar(p->tty, progress_width(p->tty), p->done, p->n_todo, text, false);
    }
    pthread_mutex_unlock(&p->mu);
}

static void fill_hit(struct search_hit *h, const struct cand *c, const struct sim *s, int rc,
                     const struct mp_error *err, const char *metric)
{
    memset(h, 0, sizeof *h);
    h->tp = c->tp, h->cp = c->cp, h->pp = c->pp, h->dp = c->dp, h->ep = c->ep, h->vpp = c->vpp;
    h->micro_batch = c->mb, h->recompute = c->rec, h->zero = c->zero, h->offload = c->off;
    h->sp = c->sp, h->tp_overlap = c->ov, h->global_batch = c->batch;
    snprintf(h->schedule, sizeof h->schedule, "%.31s", schedule_kinds[c->sched]->name);
    h->mem_bound = c->mem;
    h->bound_step_s = mp_seconds(c->bound);
    h->order = c->order;
    if (!s) {
        h->step_s = h->bound_step_s;
        h->metric = c->hope;
        return;
    }
    h->simulated = true;
    h->feasible = rc == MP_OK;
    const struct sim_result *r = &s->res;
    if (r->stage) {
        h->step_s = mp_seconds(r->step_time);
        h->tokens_per_s = r->tokens_per_s;
        h->mfu = r->mfu;
        h->bubble = r->bubble;
        for (int d = 0; d < r->stages; d++)
            if (r->stage[d].peak_mem > h->peak_mem) h->peak_mem = r->stage[d].peak_mem;
        h->usd_per_mtok = r->cost.basis != COST_UNKNOWN ? r->cost.usd_per_mtok : NAN;
    }
    if (!h->feasible)
        snprintf(h->reason, sizeof h->reason, "%.199s",
                 r->infeasible_reason[0] ? r->infeasible_reason : err->msg);
    double v = NAN;
    if (!strcmp(metric, "tokens_per_s")) v = h->tokens_per_s;
    else if (!strcmp(metric, "step_time_s")) v = h->step_s;
    else if (!strcmp(metric, "mfu")) v = h->mfu;
    else if (!strcmp(metric, "bubble")) v = h->bubble;
    else if (!strcmp(metric, "peak_mem_bytes")) v = h->peak_mem;
    else if (!strcmp(metric, "usd_per_mtok")) v = h->usd_per_mtok;
    h->metric = h->feasible ? v : NAN;
}

/* One row of `--out`: the layout's keys as an INI holds them, then what a
 * sweep writes after its keys. */
static char *csv_row(const struct config *cfg, const struct sim *s, int rc,
                     const struct mp_error *err)
{
    char keys[16 * CONFIG_STR] = "", one[CONFIG_STR];
    for (const char *p = SEARCH_KEYS ",training.global_batch"; *p;) {
        size_t len = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        config_format_value(cfg, config_find_key(name), one, sizeof one);
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s,", one);
        p += len;
        if (*p) p++;
    }
    char *tail = sweep_row_tail(s, rc, err, (int)config_chips(cfg));
    char *row = mp_xmalloc(strlen(keys) + strlen(tail) + 1);
    strcpy(row, keys);
    strcat(row, tail);
    free(tail);
    return row;
}

static void *worker(void *arg)
{
    struct pool *p = arg;
    struct sim *s = mp_xcalloc(1, sizeof *s);
    struct sim_options so = { .token_budget = p->opt->token_budget, .inputs = p->inputs,
                              .force = p->opt->force };
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int k = p->next++;
        pthread_mutex_unlock(&p->mu);
        if (k >= p->n_todo) break;
        struct mp_error err = { 0 };
        if (!p->simulate) {
            /* A group of layouts that differ only in ZeRO and offload:
             * priced once (bound.h). */
            int first = p->todo[k], end = k + 1 < p->n_todo ? p->todo[k + 1] : p->n_group_end;
            int n = end - first;
            struct config *cfg = mp_xmalloc((size_t)n * sizeof *cfg);
            const struct config **cp = mp_xmalloc((size_t)n * sizeof *cp);
            struct sim_bound *b = mp_xmalloc((size_t)n * sizeof *b);
            for (int i = 0; i < n; i++) {
                layout(p->base, &p->c[first + i], &cfg[i]);
                cp[i] = &cfg[i];
            }
            int rc = sim_bound_many(cp, n, &so, b, &err);
            for (int i = 0; i < n; i++) {
                struct cand *c = &p->c[first + i];
                c->bound = rc == MP_OK ? b[i].step : -1;
                if (rc == MP_OK && b[i].mem > c->mem) c->mem = b[i].mem;
                if (rc == MP_OK && b[i].host_mem > c->host) c->host = b[i].host_mem;
            }
            free(cfg);
            free(cp);
            free(b);
            pool_tick(p);
            continue;
        }
        struct cand *c = &p->c[p->todo[k]];
        struct config cfg;
        layout(p->base, c, &cfg);
        int rc = sim_run(s, &cfg, &so, &err);
        fill_hit(&p->hit[p->todo[k]], c, s, rc, &err, p->metric);
        if (p->row) p->row[p->todo[k]] = csv_row(&cfg, s, rc, &err);
        c->status = 1;
        sim_release(s);
        pool_tick(p);
    }
    free(s);
    return NULL;
}

static void run_pool(struct pool *p, int jobs)
{
    p->next = p->done = 0;
    p->t0 = mp_wall_seconds();
    p->last_draw = 0;
    pthread_mutex_init(&p->mu, NULL);
    if (jobs > p->n_todo) jobs = p->n_todo;
    pthread_t *tid = mp_xcalloc((size_t)(jobs > 0 ? jobs : 1), sizeof *tid);
    int started = 0;
    for (int j = 0; j < jobs; j++)
        if (pthread_create(&tid[j], NULL, worker, p) == 0) started++;
    if (started == 0 && p->n_todo) worker(p);
    for (int j = 0; j < started; j++) pthread_join(tid[j], NULL);
    pthread_mutex_destroy(&p->mu);
    free(tid);
}

/* ---- ranking and output --------------------------------------------------- */

static const char *rank_metric;

/* Best hope first; ties by enumeration order, so any --jobs agrees. */
static int hope_cmp(const void *pa, const void *pb)
{
    const struct cand *a = *(struct cand *const *)pa, *b = *(struct cand *const *)pb;
    if (better(rank_metric, a->hope, b->hope)) return -1;
    if (better(rank_metric, b->hope, a->hope)) return 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Simulated and fit, best first; then simulated and not; then the bound
 * only, best bound first. */
static int hit_cmp(const void *pa, const void *pb)
{
    const struct search_hit *a = pa, *b = pb;
    int ka = a->simulated ? (a->feasible ? 0 : 1) : 2, kb = b->simulated ? (b->feasible ? 0 : 1) : 2;
    if (ka != kb) return ka - kb;
    if (better(rank_metric, a->metric, b->metric)) return -1;
    if (better(rank_metric, b->metric, a->metric)) return 1;
    return (a->order > b->order) - (a->order < b->order);
}

static int write_rows(FILE *f, const char *partial, const char *path, char **row, int n,
                      struct mp_error *err)
{
    int bad = fprintf(f, "%s,training.global_batch,%s,feasible,reason\n", SEARCH_KEYS,
                      SWEEP_METRIC_COLUMNS) < 0;
    for (int i = 0; i < n && !bad; i++)
        if (row[i]) bad = fputs(row[i], f) < 0;
    int e = bad ? errno : 0;
    if (fflush(f) != 0 && !e) e = errno;
    if (fclose(f) != 0 && !e) e = errno;
    if (bad || e) {
        remove(partial);
        return mp_fail(err, MP_ERR_INTERNAL, "--out %s: write failed: %s", partial, strerror(e));
    }
    return outfile_install(partial, path, err); /* a device or FIFO is written, not replaced */
}

/* The K-th best simulated metric among the fit (NAN while fewer than K fit). */
static double kth_best(struct search_hit *hit, const struct cand *c, int n, int K,
                       const char *metric)
{
    double *v = mp_xmalloc((size_t)(n ? n : 1) * sizeof *v);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (c[i].status == 1 && hit[i].feasible && !isnan(hit[i].metric)) v[m++] = hit[i].metric;
    double out = NAN;
    if (m >= K) {
        /* Partial selection by repeated passes is enough for K ≤ a few hundred. */
        for (int k = 0; k < K; k++) {
            int best = k;
            for (int j = k + 1; j < m; j++)
                if (better(metric, v[j], v[best])) best = j;
            double t = v[k]; v[k] = v[best]; v[best] = t;
        }
        out = v[K - 1];
    }
    free(v);
    return out;
}

static int check_options(const struct search_options *opt, const struct config *base,
                         const char *metric, struct mp_error *err)
{
    if (strcmp(metric, "tokens_per_s") && strcmp(metric, "step_time_s") && strcmp(metric, "mfu") &&
        strcmp(metric, "bubble") && strcmp(metric, "peak_mem_bytes") &&
        strcmp(metric, "usd_per_mtok"))
        return mp_fail(err, MP_ERR_INPUT, "--metric '%s': expected tokens_per_s, step_time_s, "
                       "mfu, bubble, peak_mem_bytes or usd_per_mtok", metric);
    if (opt->chips < 1) return mp_fail(err, MP_ERR_INPUT, "--chips: expected a chip count ≥ 1");
    if (opt->simulate < 0)
        return mp_fail(err, MP_ERR_INPUT, "--simulate %d: expected a number of layouts ≥ 1",
                       opt->simulate);
    if (opt->batch_policy != SEARCH_BATCH_EXACT && opt->batch_policy != SEARCH_BATCH_ROUND_DOWN)
        return mp_fail(err, MP_ERR_INPUT, "--batch-policy: expected exact or round-down");
    if (base->parallel.stage_layers.n && opt->chips % base->parallel.stage_layers.n)
        /* stage_layers fixes pp; its sum is checked against the model below. */
        return mp_fail(err, MP_ERR_INPUT, "--chips %d: parallel.stage_layers fixes parallel.pp = "
                       "%d, which does not divide the chips (expected cp × tp × pp × dp = chips)",
                       opt->chips, base->parallel.stage_layers.n);
    if (base->model.kind != MODEL_TRANSFORMER)
        return mp_fail(err, MP_ERR_INPUT, "search: needs a transformer model (model.kind = "
                       "transformer and model.config), not a synthetic one");
    const char *schedules = opt->schedules ? opt->schedules : DEFAULT_SCHEDULES;
    for (const char *p = schedules; *p;) {
        size_t len = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        if (!schedule_find(name))
            return mp_fail(err, MP_ERR_INPUT, "--schedules: unknown pipeline schedule '%s' "
                           "(known: %s)", name, schedule_names());
        p += len;
        if (*p) p++;
    }
    return MP_OK;
}

/* The inputs every layout shares, loaded once (sim_options.inputs). */
struct shared {
    struct model m;
    struct chip_catalog cat;
    struct system sys;
    struct calib calib;
    struct sim_inputs in;
    int loaded; /* 1 model, 2 + catalogue, 3 + system, 4 + kernel calibration */
};

static void shared_release(struct shared *sh)
{
    if (sh->loaded >= 4) calib_release(&sh->calib);
    if (sh->loaded >= 3) system_release(&sh->sys);
    if (sh->loaded >= 2) chip_catalog_release(&sh->cat);
    if (sh->loaded >= 1) model_release(&sh->m);
}

static int shared_load(struct shared *sh, const struct config *base, int chips,
                       struct mp_error *err)
{
    char path[1024];
    memset(sh, 0, sizeof *sh);
    int rc = model_load_config(&sh->m, base, err);
    if (rc) return rc;
    sh->loaded = 1;
    if ((rc = chip_catalog_load_default(&sh->cat, err))) return rc;
    sh->loaded = 2;
    rc = config_resolve_key(base, "hardware.system", "hardware/systems", ".ini", path, sizeof path,
                        err);
    if (!rc) rc = system_load(&sh->sys, path, base->hardware.nodes, chips, &sh->cat, err);
    if (rc) return rc;
    sh->loaded = 3;
    if ((rc = calib_load_default(&sh->calib, &sh->sys.chip, err))) return rc;
    sh->loaded = 4;
    sh->in = (struct sim_inputs){ .model = &sh->m, .catalog = &sh->cat, .sys = &sh->sys,
                                  .calib = &sh->calib };
    return MP_OK;
}

int search_run(const struct config *base, const struct search_options *opt,
               struct search_result *res, struct mp_error *err)
{
    memset(res, 0, sizeof *res);
    double t0 = mp_wall_seconds();
    gsl_set_error_handler_off();
    const char *metric = opt->metric ? opt->metric : "tokens_per_s";
    int rc = check_options(opt, base, metric, err);
    if (rc) return rc;
    struct fix *fix;
    int n_fix;
    if ((rc = parse_fixes(opt, base, &fix, &n_fix, err))) return rc;

    char partial[1100];
    FILE *out = NULL;
    int slot = -1; /* the partial file, removed if a signal stops the search */
    if (opt->out) {
        if (snprintf(partial, sizeof partial, "%s.partial", opt->out) >= (int)sizeof partial) {
            free_fixes(fix, n_fix);
            return mp_fail(err, MP_ERR_INPUT, "--out %s: path too long", opt->out);
        }
        if (!(out = fopen(partial, "w"))) {
            free_fixes(fix, n_fix);
            return mp_fail(err, MP_ERR_INPUT, "--out %s: cannot write %s: %s", opt->out,
                           partial, strerror(errno));
        }
        slot = outfile_register(partial, false);
    }
    struct shared sh;
    if ((rc = shared_load(&sh, base, opt->chips, err))) {
        shared_release(&sh);
        free_fixes(fix, n_fix);
        if (out) {
            fclose(out);
            remove(partial);
            outfile_forget(slot);
        }
        return rc;
    }
    const struct config_int_list *sl = &base->parallel.stage_layers;
    if (sl->n) {
        long long sum = 0;
        for (int i = 0; i < sl->n; i++) sum += sl->v[i];
        if (sum != sh.m.decoders) {
            rc = mp_fail(err, MP_ERR_INPUT, "key parallel.stage_layers adds up to %lld decoder "
                         "layers, but model %s has %d", sum, sh.m.name, sh.m.decoders);
            shared_release(&sh);
            free_fixes(fix, n_fix);
            if (out) {
                fclose(out);
                remove(partial);
            }
            return rc;
        }
    }
    res->capacity = sh.sys.chip.mem_bytes;
    res->host_tier = sh.sys.host.present;
    snprintf(res->chip, sizeof res->chip, "%s", sh.sys.chip.name);

    /* Tier one: enumerate, rules, memory bound, then the step-time bound. */
    struct list cands = { 0 };
    struct enum_ctx x = { .opt = opt, .base = base, .m = &sh.m, .sys = &sh.sys, .fix = fix,
                          .n_fix = n_fix, .res = res, .out = &cands };
    enumerate(&x);
    for (int t = 0; t < x.n_tables; t++) free(x.tables[t].v);
    free(x.tables);
    free_fixes(fix, n_fix);
    int n = cands.n, jobs = opt->jobs > 0 ? opt->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1) jobs = 1;
    /* Groups of layouts that differ only in ZeRO and offload (the inner
     * loops of the enumeration) share their pricing. */
    int *idx = mp_xmalloc((size_t)(n ? n : 1) * sizeof *idx), groups = 0;
    for (int i = 0; i < n; i++) {
        const struct cand *a = &cands.c[i], *b = i ? &cands.c[i - 1] : NULL;
        if (!b || a->tp != b->tp || a->pp != b->pp || a->ep != b->ep || a->mb != b->mb ||
            a->sched != b->sched || a->vpp != b->vpp || a->sp != b->sp || a->ov != b->ov ||
            a->rec != b->rec || a->batch != b->batch)
            idx[groups++] = i;
    }
    struct search_hit *hit = mp_xcalloc((size_t)(n ? n : 1), sizeof *hit);
    struct pool p = { .base = base, .opt = opt, .inputs = &sh.in, .metric = metric, .c = cands.c,
                      .todo = idx, .n_todo = groups, .n_group_end = n, .hit = hit,
                      .tty = opt->progress && isatty(fileno(opt->progress)) ? opt->progress : NULL,
                      .what = "bounding layout groups" };
    if (opt->out) p.row = mp_xcalloc((size_t)(n ? n : 1), sizeof *p.row);
    run_pool(&p, jobs);
    /* Ranked by what the bound promises for the metric. */
    struct cand **rank = mp_xmalloc((size_t)(n ? n : 1) * sizeof *rank);
    int n_rank = 0;
    for (int i = 0; i < n; i++) {
        struct cand *c = &cands.c[i];
        if (c->bound < 0) {
            res->rule_pruned++; /* a rule only pricing found (e.g. a stage with no layers) */
            continue;
        }
        /* The priced memory bound counts each device's busiest moment. */
        char why[200];
        if (c->mem > res->capacity) {
            res->mem_pruned++;
            snprintf(why, sizeof why, "memory bound %.1f GB per chip > %.1f GB (tp %d pp %d dp %d "
                     "mb %d %s, recompute %d, zero %d)", c->mem / 1e9, res->capacity / 1e9, c->tp,
                     c->pp, c->dp, c->mb, schedule_kinds[c->sched]->name, c->rec, c->zero);
            note(res, WHY_MEMORY, why);
            continue;
        }
        if (c->off != OFFLOAD_NONE && c->host > sh.sys.host.mem_bytes) {
            res->host_pruned++;
            snprintf(why, sizeof why, "host memory bound %.1f GB per node > %.1f GB",
                     c->host / 1e9, sh.sys.host.mem_bytes / 1e9);
            note(res, WHY_HOST, why);
            continue;
        }
        c->hope = hope(metric, c, base, &sh.m, &sh.sys, opt->token_budget);
        rank[n_rank++] = c;
    }
    res->bounded = n_rank;
    rank_metric = metric;
    qsort(rank, (size_t)n_rank, sizeof *rank, hope_cmp);
    res->bound_wall_s = mp_wall_seconds() - t0;

    /* Tier two: the best K, then rounds of whatever could still beat the
     * K-th best simulated, until the bound separates the rest. */
    int K = opt->simulate > 0 ? opt->simulate : DEFAULT_K, pos = 0, round = 0;
    int step = K / 4 > 8 ? K / 4 : 8;
    p.simulate = true;
    /* The simulate tier's own estimate (issue 16): every round adds its
     * layouts' step estimates (estimate.h) to the rounds before it, and the
     * whole is held against the work budget (budget.h) before the round runs,
     * so that --simulate 10000000 on a wide space is refused, with the
     * estimate, instead of running for days. */
    struct work_estimate work = { .jobs = jobs };
    struct config *probe = mp_xmalloc(sizeof *probe);
    while (pos < n_rank) {
        double kth = kth_best(hit, cands.c, n, K, metric);
        int take = 0;
        while (pos + take < n_rank && take < (round == 0 ? K : step)) {
            const struct cand *c = rank[pos + take];
            if (!isnan(kth) && better(metric, kth, c->hope)) break; /* separated, and all after */
            idx[take] = (int)(c - cands.c);
            take++;
        }
        if (take == 0) break;
        for (int i = 0; i < take; i++) {
            layout(base, &cands.c[idx[i]], probe);
            double e = sim_events_estimate(probe, &sh.m, &sh.sys);
            work.total_events += e;
            if (e > work.events) work.events = e;
        }
        work.points = pos + take;
        char what[128];
        snprintf(what, sizeof what, "search: simulating %d of %d bounded layouts (round %d)",
                 pos + take, n_rank, round + 1);
        if ((rc = work_check(&work, what, "a smaller --simulate, or --fix some layout keys",
                             opt->force, err)))
            break;
        p.n_todo = take;
        snprintf(p.what, sizeof p.what, "round %d, simulated", round + 1);
        run_pool(&p, jobs);
        pos += take;
        round++;
        if (p.tty) {
            char text[160];
            snprintf(text, sizeof text, "search: round %d, %d of %d bounded layouts simulated, "
                     "%.1f s", round, pos, n_rank, mp_wall_seconds() - t0);
            progress_bar(p.tty, progress_width(p.tty), pos, n_rank, text, false);
        } else if (opt->progress) {
            fprintf(opt->progress, "search: round %d, %d of %d bounded layouts simulated, %.1f s\n",
                    round, pos, n_rank, mp_wall_seconds() - t0);
            fflush(opt->progress);
        }
    }
    free(probe);
    if (p.tty) fputc('\n', p.tty);
    if (rc) {
        free(idx);
        if (opt->out) {
            fclose(out);
            remove(partial);
            outfile_forget(slot);
            for (int i = 0; i < n; i++) free(p.row[i]);
            free(p.row);
        }
        free(rank);
        free(hit);
        free(cands.c);
        shared_release(&sh);
        return rc;
    }
    res->simulated = pos;
    res->separated = n_rank - pos;
    free(idx);

    if (opt->out) {
        rc = write_rows(out, partial, opt->out, p.row, n, err);
        outfile_forget(slot);
        for (int i = 0; i < n; i++) free(p.row[i]);
        free(p.row);
    }
    /* Every bounded layout becomes a row: simulated ones with their
     * figures, the others with the bound's. */
    res->hit = mp_xcalloc((size_t)(n_rank ? n_rank : 1), sizeof *res->hit);
    for (int i = 0; i < n_rank; i++) {
        const struct cand *c = rank[i];
        int id = (int)(c - cands.c);
        if (c->status == 1) {
            res->hit[res->n_hits] = hit[id];
            if (hit[id].feasible) res->feasible++;
            else note(res, WHY_SIMULATED, hit[id].reason);
        } else {
            fill_hit(&res->hit[res->n_hits], c, NULL, 0, NULL, metric);
        }
        res->n_hits++;
    }
    qsort(res->hit, (size_t)res->n_hits, sizeof *res->hit, hit_cmp);
    free(rank);
    free(hit);
    free(cands.c);
    shared_release(&sh);
    res->wall_s = mp_wall_seconds() - t0;
    return rc;
}

void search_result_release(struct search_result *res)
{
    free(res->hit);
    memset(res, 0, sizeof *res);
}

int search_memory_bound(const struct config *cfg, double *bytes, struct mp_error *err)
{
    struct model m;
    *bytes = 0;
    if (cfg->model.kind != MODEL_TRANSFORMER) return MP_OK;
    int rc = model_load_config(&m, cfg, err);
    if (rc) return rc;
    double host;
    sim_memory_bound(cfg, &m, 1, NULL, NULL, bytes, &host);
    model_release(&m);
    return MP_OK;
}

static const char *recompute_name(int r)
{
    return r == RECOMPUTE_FULL ? "full" : r == RECOMPUTE_SELECTIVE ? "sel" : "none";
}

static const char *offload_name(int o)
{
    static const char *const names[] = { "none", "opt", "opt+w", "all" };
    return o >= 0 && o <= OFFLOAD_ALL ? names[o] : "?";
}

/* context (issue 17): when the best layout has CP and no layout without
 * it fits, CP is what made the context fit; say so, with the counts. A
 * layout without CP that passed the memory bound but was never simulated
 * (its step bound could not reach the top) may fit: then say only that. */
static void print_cp_fit(FILE *f, const struct search_result *res)
{
    if (res->n_hits == 0 || !res->hit[0].feasible || res->hit[0].cp <= 1) return;
    int fit_nocp = 0, failed_nocp = 0, unsimulated_nocp = 0;
    for (int i = 0; i < res->n_hits; i++) {
        const struct search_hit *h = &res->hit[i];
        if (h->cp > 1) continue;
        if (!h->simulated) unsimulated_nocp++;
        else if (h->feasible) fit_nocp++;
        else failed_nocp++;
    }
    if (fit_nocp) return;
    if (unsimulated_nocp)
        fprintf(f, "\nthe best has cp = %d; no layout without CP that was simulated fits (%d did "
                   "not, %lld more pruned by the memory bound), and %d more without CP passed "
                   "the memory bound but were not simulated (their step bound cannot reach "
                   "the top)\n", res->hit[0].cp, failed_nocp, res->mem_pruned_nocp,
                unsimulated_nocp);
    else
        fprintf(f, "\ncontext parallelism is what made this fit: no layout without CP fits (%d "
                   "simulated did not, %lld more pruned by the memory bound before any ran); the "
                   "best has cp = %d\n", failed_nocp, res->mem_pruned_nocp, res->hit[0].cp);
}

void search_print(FILE *f, const struct search_result *res, const struct search_options *opt,
                  int top)
{
    const char *metric = opt->metric ? opt->metric : "tokens_per_s";
    bool round = opt->batch_policy == SEARCH_BATCH_ROUND_DOWN;
    fprintf(f, "best %d of %lld feasible layouts on %d × %s by %s (src: sim = simulated op by "
               "op, bound = closed form only):\n",
            top < res->feasible ? top : (int)res->feasible, res->feasible, opt->chips, res->chip,
            metric);
    /* context (issue 17): a cp column once any layout has CP */
    bool any_cp = false;
    for (int i = 0; i < res->n_hits; i++) any_cp |= res->hit[i].cp > 1;
    fprintf(f, "%4s %3s ", "rank", "tp");
    if (any_cp) fprintf(f, "%3s ", "cp");
    fprintf(f, "%3s %5s %3s %3s %3s %2s %2s %-11s %-4s %4s %-5s", "pp", "dp", "ep", "vpp", "mb",
            "sp", "ov", "schedule", "rec", "zero", "offl");
    if (round) fprintf(f, " %6s", "batch");
    fprintf(f, " %10s %10s %12s %6s %7s %8s %8s %5s\n", "step_s", "bound_s", "tokens/s", "MFU%",
            "bubble", "peak_GB", "$/Mtok", "src");
    int shown = 0;
    for (int i = 0; i < res->n_hits && shown < top; i++) {
        const struct search_hit *h = &res->hit[i];
        if (h->simulated && !h->feasible) continue;
        if (!h->simulated && shown < res->feasible) continue;
        shown++;
        fprintf(f, "%4d %3d ", shown, h->tp);
        if (any_cp) fprintf(f, "%3d ", h->cp);
        fprintf(f, "%3d %5d %3d %3d %3d %2s %2s %-11s %-4s %4d %-5s", h->pp, h->dp, h->ep, h->vpp,
                h->micro_batch, h->sp ? "y" : "n", h->tp_overlap ? "y" : "n", h->schedule,
                recompute_name(h->recompute), h->zero, offload_name(h->offload));
        if (round) fprintf(f, " %6d", h->global_batch);
        if (h->simulated) {
            fprintf(f, " %10.4f %10.4f %12.6g %6.2f %7.4f %8.2f", h->step_s, h->bound_step_s,
                    h->tokens_per_s, 100 * h->mfu, h->bubble, h->peak_mem / 1e9);
            /* A chip without a price in chips.csv has no cost: say so, not "nan". */
            if (isnan(h->usd_per_mtok)) fprintf(f, " %8s %5s\n", "-", "sim");
            else fprintf(f, " %8.4g %5s\n", h->usd_per_mtok, "sim");
        } else
            fprintf(f, " %10s %10.4f %12s %6s %7s %8s %8s %5s\n", "-", h->bound_step_s, "-", "-",
                    "-", "-", "-", "bound");
    }
    print_cp_fit(f, res);
    long long simulated_fail = res->simulated - res->feasible;
    fprintf(f, "\n%lld layouts enumerated: %lld excluded by --fix, %lld duplicates, %lld where "
               "the batch does not split (%s), %lld refused by schedule rules, %lld cannot fit "
               "(memory bound > %.0f GB)",
            res->enumerated, res->fixed_out, res->duplicates, res->batch_pruned,
            round ? "round-down" : "exact", res->rule_pruned, res->mem_pruned,
            res->capacity / 1e9);
    if (res->host_tier) fprintf(f, ", %lld over host memory", res->host_pruned);
    fprintf(f, "; %lld bounded in %.2f s, %lld simulated (%lld fit, %lld did not), %lld "
               "separated by the bound; %.2f s in all",
            res->bounded, res->bound_wall_s, res->simulated, res->feasible, simulated_fail,
            res->separated, res->wall_s);
    fprintf(f, res->host_tier ? "\n" : "; no [host] tier: offload not tried\n");
    if (res->feasible > 0) return;
    /* Nothing fits: which constraint ruled out the most. */
    struct { const char *what; long long n; int ex; } why[] = {
        { "--fix", res->fixed_out, -1 },
        { "the global batch does not split over dp × micro_batch", res->batch_pruned, WHY_BATCH },
        { "the schedules' rules", res->rule_pruned, WHY_RULES },
        { "the memory bound", res->mem_pruned, WHY_MEMORY },
        { "host memory (offload)", res->host_pruned, WHY_HOST },
        { "the simulation (out of memory)", simulated_fail, WHY_SIMULATED },
    };
    /* --fix is the user's choice, not a constraint: named only when
     * nothing else ruled any layout out. */
    int best = 1;
    for (int i = 2; i < 6; i++)
        if (why[i].n > why[best].n) best = i;
    if (why[best].n == 0) best = 0;
    fprintf(f, "nothing fits: the most layouts (%lld of %lld) were ruled out by %s", why[best].n,
            res->enumerated, why[best].what);
    if (why[best].ex >= 0 && res->example[why[best].ex][0])
        fprintf(f, ", e.g. %s", res->example[why[best].ex]);
    if (best == 1 && !round) fprintf(f, "; --batch-policy round-down uses the largest batch that splits");
    fputc('\n', f);
}
