/* search.c — enumerate layouts, prune by rules and memory, simulate the
 * rest on threads, rank; see search.h. */
#include "search.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

#include "sim/train/cost.h"
#include "models/model.h"
#include "sim/io/outfile.h"
#include "sim/strategy/schedule.h"
#include "sim/strategy/tensor.h"
#include "sim/train/sim.h"
#include "progress.h"
#include "sweep.h"
#include "hardware/system.h"

/* The bytes per parameter sim.c charges (mixed-precision Adam: fp32
 * gradients, fp32 master weights and two moments). The bound must not
 * exceed what the simulator counts; check_search holds it against
 * simulated peaks so a change there shows up. */
#define GRAD_BYTES 4.0
#define OPTIMIZER_BYTES 12.0

#define DEFAULT_SCHEDULES "1f1b,interleaved,zb-h1,zb-h2,gpipe"

/* ---- the memory bound ---------------------------------------------------- */

/* Sum of params and activation bytes (per chip of the TP group, one
 * microbatch) over layers lo..hi. */
static void layer_sums(const struct model *m, const struct config *cfg, int lo, int hi,
                       double *params, double *act)
{
    struct cost_params cp = {
        .seq_len = cfg->model.seq_len, .micro_batch = cfg->training.micro_batch,
        .tp = cfg->parallel.tp, .sp = cfg->parallel.sp, .recompute = cfg->training.recompute,
        .weight_bits = cfg->model.weight_bits, .activation_bits = cfg->model.activation_bits,
        .flash = cfg->training.attention == ATTENTION_FLASH, .no_dropout = !cfg->training.dropout,
        .cp = cfg->parallel.cp, /* context (issue 17): activations ÷ cp */
    };
    *params = *act = 0;
    for (int l = lo; l <= hi; l++) {
        struct layer_cost lc;
        model_layer_cost(m, l, &cp, &lc);
        *params += lc.params;
        *act += lc.act_bytes;
    }
}

static double static_bytes(const struct config *cfg, double params)
{
    /* context (issue 17): ZeRO shards over the DP-CP group */
    int dp = cfg->parallel.dp * cfg->parallel.cp, z = cfg->training.zero;
    double w = params * cfg->model.weight_bits / 8.0, g = params * GRAD_BYTES;
    double o = params * OPTIMIZER_BYTES;
    if (z >= 1) o /= dp;
    if (z >= 2) g /= dp;
    if (z >= 3) w /= dp;
    return w + g + o;
}

/* Two lower bounds of the busiest chip's peak, the larger wins:
 *  - the average chip: every parameter and every stashed activation lives
 *    on some pipeline device, so max ≥ mean = total / pp (plus, for GPipe,
 *    all m microbatches' activations at once);
 *  - without interleaving, each device d under the stage split sim.c uses,
 *    holding what the schedule must stash before d's first backward: all m
 *    microbatches under GPipe; min(p − d, m) under 1F1B, ZB-H1 and ZB-H2,
 *    which all run p − d forwards on device d before its first backward. */
static double memory_bound(const struct model *m, const struct config *cfg)
{
    int pp = cfg->parallel.pp, mb = config_microbatches(cfg);
    const char *sch = cfg->training.schedule;
    bool gpipe = !strcmp(sch, "gpipe");
    bool ofob = !strcmp(sch, "1f1b") || !strcmp(sch, "zb-h1") || !strcmp(sch, "zb-h2");
    double params, act;
    layer_sums(m, cfg, 0, m->n_layers - 1, &params, &act);
    double held = gpipe ? mb : 1;
    double best = static_bytes(cfg, params / pp) + held * act / pp;
    if ((!gpipe && !ofob) || cfg->parallel.vpp != 1) return best;
    const struct config_int_list *sl = &cfg->parallel.stage_layers;
    for (int d = 0; d < pp; d++) {
        int lo, hi;
        sim_stage_layers(m->decoders, pp, sl->n == pp ? sl->v : NULL, d, &lo, &hi);
        layer_sums(m, cfg, lo, hi, &params, &act);
        int k = gpipe ? mb : (pp - d < mb ? pp - d : mb);
        double need = static_bytes(cfg, params) + k * act;
        if (need > best) best = need;
    }
    return best;
}

int search_memory_bound(const struct config *cfg, double *bytes, struct mp_error *err)
{
    struct model m;
    *bytes = 0;
    if (cfg->model.kind != MODEL_TRANSFORMER) return MP_OK;
    int rc = model_load_config(&m, cfg, err);
    if (rc) return rc;
    *bytes = memory_bound(&m, cfg);
    model_release(&m);
    return MP_OK;
}

/* ---- enumeration --------------------------------------------------------- */

/* Candidates that differ only in recompute share a group, in the order
 * none, selective, full: recompute only adds work, so once one of them
 * fits, the ones after it cannot be faster and are not simulated. */
struct cand {
    struct config cfg;
    double bound;
    int group;
};

struct list {
    struct cand *c;
    int n, cap;
};

static bool in_list(const char *csv, const char *name)
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

struct enum_ctx {
    const struct search_options *opt;
    const struct model *m;
    double capacity;
    struct search_result *res;
    struct list *out;
    int group;
};

/* The innermost loops: schedule (with vpp), recompute, ZeRO. */
static void enum_tail(struct enum_ctx *x, struct config c)
{
    const char *schedules = x->opt->schedules ? x->opt->schedules : DEFAULT_SCHEDULES;
    int max_vpp = x->opt->max_vpp > 0 ? x->opt->max_vpp : 8;
    int L = x->m->decoders, pp = c.parallel.pp, dp = c.parallel.dp;
    for (int k = 0; schedule_kinds[k]; k++) {
        const struct schedule_kind *kind = schedule_kinds[k];
        if (!in_list(schedules, kind->name)) continue;
        bool interleaved = !strcmp(kind->name, "interleaved");
        for (int v = 1; v <= (interleaved ? max_vpp : 1); v *= 2) {
            if (interleaved && v == 1) continue; /* that is 1f1b */
            for (int z = 0; z <= 3; z++) {
                x->group++;
                for (int rec = RECOMPUTE_NONE; rec <= RECOMPUTE_FULL; rec++) {
                    x->res->enumerated++;
                    /* Same run as another layout: not even counted as pruned. */
                    if ((dp == 1 && z > 0) || (pp == 1 && strcmp(kind->name, "1f1b"))) {
                        x->res->duplicates++;
                        continue;
                    }
                    snprintf(c.training.schedule, sizeof c.training.schedule, "%s", kind->name);
                    c.parallel.vpp = v;
                    c.training.recompute = rec;
                    c.training.zero = z;
                    const struct config_int_list *sl = &c.parallel.stage_layers;
                    struct pipe_shape shape = { .devices = pp,
                                                .microbatches = config_microbatches(&c),
                                                .chunks = v, .layers = L,
                                                .device_layers = sl->n ? sl->v : NULL };
                    struct mp_error e;
                    if (pp * v > L || (kind->check && kind->check(&shape, &e))) {
                        x->res->rule_pruned++;
                        continue;
                    }
                    double bound = memory_bound(x->m, &c);
                    if (bound > x->capacity) {
                        x->res->mem_pruned++;
                        x->res->mem_pruned_nocp += c.parallel.cp == 1;
                        continue;
                    }
                    MP_GROW(x->out->c, x->out->cap, x->out->n + 1);
                    x->out->c[x->out->n++] = (struct cand){ c, bound, x->group };
                }
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

/* ------------------------------------------------------------------------ */

static void enumerate(struct enum_ctx *x, const struct config *base, int chips_per_node)
{
    const struct model *m = x->m;
    int N = x->opt->chips, gb = base->training.global_batch;
    int max_mb = x->opt->max_micro_batch > 0 ? x->opt->max_micro_batch : 8;
    int fixed_pp = base->parallel.stage_layers.n; /* stage_layers fixes pp (issue 17) */
    for (int tp = 1; tp <= N && tp <= chips_per_node; tp *= 2) {
        if (N % tp || !tensor_degree_ok(m, tp)) continue;
      for (int cp = 1; cp <= max_cp(x->opt, base) && cp <= N / tp; cp *= 2) {
        if ((N / tp) % cp || !cp_allowed(base, m, tp, cp)) continue;
        for (int pp = 1; pp <= N / tp / cp && pp <= m->decoders; pp++) {
            if ((N / tp / cp) % pp || (fixed_pp && pp != fixed_pp)) continue;
            int dp = N / tp / cp / pp;
            if (gb % dp) continue;
            int per = gb / dp;
            for (int ep = 1; ep <= dp; ep *= 2) {
                if (ep > 1 && (!m->experts || m->experts % ep || dp % ep)) break;
                for (int mb = 1; mb <= max_mb && mb <= per; mb++) {
                    if (per % mb) continue;
                    struct config c = *base;
                    c.parallel.tp = tp;
                    c.parallel.cp = cp;
                    c.parallel.pp = pp;
                    c.parallel.dp = dp;
                    c.parallel.ep = ep;
                    c.training.micro_batch = mb;
                    enum_tail(x, c);
                }
            }
        }
      }
    }
}

/* ---- simulating the survivors ------------------------------------------- */

struct pool {
    const struct list *in;
    char **row;           /* [in->n] CSV rows when opt->out, else NULL */
    const struct search_options *opt;
    const char *metric;
    struct search_hit *hit;
    pthread_mutex_t mu;
    int next, done;
    FILE *progress;
    bool tty;             /* progress is a terminal: a bar (progress.h) */
    int decile;
    double t0, last_draw;
};

static void fill_hit(struct search_hit *h, const struct cand *c, const struct sim *s, int rc,
                     const struct mp_error *err, const char *metric)
{
    const struct config *cfg = &c->cfg;
    memset(h, 0, sizeof *h);
    h->tp = cfg->parallel.tp, h->pp = cfg->parallel.pp, h->dp = cfg->parallel.dp;
    h->cp = cfg->parallel.cp;
    h->ep = cfg->parallel.ep, h->vpp = cfg->parallel.vpp;
    h->micro_batch = cfg->training.micro_batch, h->recompute = cfg->training.recompute;
    h->zero = cfg->training.zero;
    snprintf(h->schedule, sizeof h->schedule, "%.31s", cfg->training.schedule);
    h->mem_bound = c->bound;
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
    char keys[10 * CONFIG_STR] = "", one[CONFIG_STR]; /* nine keys, none truncated */
    for (const char *p = SEARCH_KEYS; *p;) {
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

/* Write the rows of the simulated layouts, in enumeration order, into `f`
 * (`partial`, opened before any simulation so a bad path fails early), and
 * rename it to `path`. */
static int write_rows(FILE *f, const char *partial, const char *path, char **row,
                      const struct search_hit *hit, int n, struct mp_error *err)
{
    int bad = fprintf(f, "%s,%s,feasible,reason\n", SEARCH_KEYS, SWEEP_METRIC_COLUMNS) < 0;
    for (int i = 0; i < n && !bad; i++)
        if (!hit[i].skipped && row[i]) bad = fputs(row[i], f) < 0;
    int e = bad ? errno : 0;
    if (fflush(f) != 0 && !e) e = errno;
    if (fclose(f) != 0 && !e) e = errno;
    if (bad || e) {
        remove(partial);
        return mp_fail(err, MP_ERR_INTERNAL, "--out %s: write failed: %s", partial,
                       strerror(e));
    }
    return outfile_install(partial, path, err); /* a device or FIFO is written, not replaced */
}

static void *search_worker(void *arg)
{
    struct pool *p = arg;
    struct sim *s = mp_xcalloc(1, sizeof *s);
    struct sim_options so = { .token_budget = p->opt->token_budget, .force = p->opt->force };
    for (;;) {
        /* One group at a time, so the skip below needs no lock. */
        pthread_mutex_lock(&p->mu);
        int first = p->next, end = first;
        while (end < p->in->n && p->in->c[end].group == p->in->c[first].group) end++;
        p->next = end;
        pthread_mutex_unlock(&p->mu);
        if (first >= p->in->n) break;
        bool fits = false;
        for (int i = first; i < end; i++) {
            if (fits) {
                p->hit[i].skipped = true;
                continue;
            }
            struct mp_error err = { 0 };
            int rc = sim_run(s, &p->in->c[i].cfg, &so, &err);
            fill_hit(&p->hit[i], &p->in->c[i], s, rc, &err, p->metric);
            if (p->row) p->row[i] = csv_row(&p->in->c[i].cfg, s, rc, &err);
            sim_release(s);
            fits = rc == MP_OK;
        }
        pthread_mutex_lock(&p->mu);
        p->done = end;
        int dec = (int)(10LL * p->done / p->in->n);
        if (p->progress && p->tty) {
            /* A terminal: a bar that fits it, redrawn at most 10 times a second. */
            double now = mp_wall_seconds(), el = now - p->t0;
            if (now - p->last_draw >= 0.1 || p->done == p->in->n) {
                char text[160];
                p->last_draw = now;
                snprintf(text, sizeof text, "search %d/%d simulated, %.0f/s", p->done, p->in->n,
                         el > 0 ? p->done / el : 0);
                progress_bar(p->progress, progress_width(p->progress), p->done, p->in->n, text,
                             p->done == p->in->n);
            }
        } else if (p->progress && dec > p->decile) {
            p->decile = dec;
            double el = mp_wall_seconds() - p->t0;
            fprintf(p->progress, "search: %3d%%  %d/%d simulated, %.0f/s\n", dec * 10, p->done,
                    p->in->n, el > 0 ? p->done / el : 0);
            fflush(p->progress);
        }
        pthread_mutex_unlock(&p->mu);
    }
    free(s);
    return NULL;
}

static int hit_sense;

static int hit_cmp(const void *pa, const void *pb)
{
    const struct search_hit *a = pa, *b = pb;
    bool an = isnan(a->metric), bn = isnan(b->metric);
    if (an != bn) return an ? 1 : -1;
    if (!an && a->metric != b->metric) return (a->metric > b->metric) == (hit_sense > 0) ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

int search_run(const struct config *base, const struct search_options *opt,
               struct search_result *res, struct mp_error *err)
{
    memset(res, 0, sizeof *res);
    double t0 = mp_wall_seconds();
    gsl_set_error_handler_off();
    const char *metric = opt->metric ? opt->metric : "tokens_per_s";
    if (strcmp(metric, "tokens_per_s") && strcmp(metric, "step_time_s") && strcmp(metric, "mfu") &&
        strcmp(metric, "bubble") && strcmp(metric, "peak_mem_bytes") &&
        strcmp(metric, "usd_per_mtok"))
        return mp_fail(err, MP_ERR_INPUT, "--metric '%s': expected tokens_per_s, step_time_s, "
                       "mfu, bubble, peak_mem_bytes or usd_per_mtok", metric);
    if (opt->chips < 1) return mp_fail(err, MP_ERR_INPUT, "--chips: expected a chip count ≥ 1");
    if (base->parallel.stage_layers.n) {
        /* stage_layers fixes pp; its sum is checked against the model below. */
        int pp = base->parallel.stage_layers.n;
        if (opt->chips % pp)
            return mp_fail(err, MP_ERR_INPUT, "--chips %d: parallel.stage_layers fixes "
                           "parallel.pp = %d, which does not divide the chips (expected cp × tp "
                           "× pp × dp = chips)", opt->chips, pp);
    }
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

    char path[1024], partial[1100];
    struct model m;
    struct chip_catalog cat;
    struct system sys;
    FILE *out = NULL;
    int slot = -1; /* the partial file, removed if a signal stops the search */
    if (opt->out) {
        if (snprintf(partial, sizeof partial, "%s.partial", opt->out) >= (int)sizeof partial)
            return mp_fail(err, MP_ERR_INPUT, "--out %s: path too long", opt->out);
        if (!(out = fopen(partial, "w")))
            return mp_fail(err, MP_ERR_INPUT, "--out %s: cannot write %s: %s", opt->out,
                           partial, strerror(errno));
        slot = outfile_register(partial, false);
    }
    int rc = model_load_config(&m, base, err);
    if (rc) goto fail_out;
    if ((rc = chip_catalog_load_default(&cat, err))) {
        model_release(&m);
        goto fail_out;
    }
    rc = config_resolve_key(base, "hardware.system", "hardware/systems", ".ini", path,
                        sizeof path, err);
    if (!rc) rc = system_load(&sys, path, base->hardware.nodes, opt->chips, &cat, err);
    if (rc) {
        chip_catalog_release(&cat);
        model_release(&m);
        goto fail_out;
    }
    if (base->parallel.stage_layers.n) {
        long long sum = 0;
        for (int i = 0; i < base->parallel.stage_layers.n; i++) sum += base->parallel.stage_layers.v[i];
        if (sum != m.decoders) {
            system_release(&sys);
            chip_catalog_release(&cat);
            model_release(&m);
            rc = mp_fail(err, MP_ERR_INPUT, "key parallel.stage_layers adds up to %lld decoder "
                         "layers, but model %s has %d", sum, m.name, m.decoders);
            goto fail_out;
        }
    }
    res->capacity = sys.chip.mem_bytes;
    snprintf(res->chip, sizeof res->chip, "%s", sys.chip.name);
    int per_node = sys.chips_per_node;
    system_release(&sys);
    chip_catalog_release(&cat);

    struct list cands = { 0 };
    struct enum_ctx x = { .opt = opt, .m = &m, .capacity = res->capacity, .res = res,
                          .out = &cands };
    enumerate(&x, base, per_node);
    model_release(&m);

    struct pool p = { .in = &cands, .opt = opt, .metric = metric, .progress = opt->progress,
                      .tty = opt->progress && isatty(fileno(opt->progress)),
                      .t0 = t0 };
    p.hit = mp_xcalloc((size_t)(cands.n ? cands.n : 1), sizeof *p.hit);
    if (opt->out) p.row = mp_xcalloc((size_t)(cands.n ? cands.n : 1), sizeof *p.row);
    pthread_mutex_init(&p.mu, NULL);
    int jobs = opt->jobs > 0 ? opt->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1) jobs = 1;
    if (jobs > cands.n) jobs = cands.n;
    pthread_t *tid = mp_xcalloc((size_t)(jobs ? jobs : 1), sizeof *tid);
    int started = 0;
    for (int j = 0; j < jobs; j++)
        if (pthread_create(&tid[j], NULL, search_worker, &p) == 0) started++;
    if (started == 0 && cands.n) search_worker(&p);
    for (int j = 0; j < started; j++) pthread_join(tid[j], NULL);
    pthread_mutex_destroy(&p.mu);
    free(tid);
    free(cands.c);

    if (opt->out) {
        rc = write_rows(out, partial, opt->out, p.row, p.hit, cands.n, err);
        outfile_forget(slot);
        for (int i = 0; i < cands.n; i++) free(p.row[i]);
        free(p.row);
        if (rc) {
            free(p.hit);
            return rc;
        }
    }
    /* Keep the simulated ones. */
    res->hit = p.hit;
    for (int i = 0; i < cands.n; i++) {
        if (p.hit[i].skipped) {
            res->slower_skipped++;
            continue;
        }
        res->hit[res->n_hits++] = p.hit[i];
        res->feasible += p.hit[i].feasible;
    }
    /* qsort is not stable: ties go by enumeration order, so output is
     * the same for any --jobs. */
    hit_sense = sweep_metric_sense(metric);
    for (int i = 0; i < res->n_hits; i++) res->hit[i].order = i;
    qsort(res->hit, (size_t)res->n_hits, sizeof *res->hit, hit_cmp);
    res->wall_s = mp_wall_seconds() - t0;
    return MP_OK;
fail_out:
    if (out) {
        fclose(out);
        remove(partial);
        outfile_forget(slot);
    }
    return rc;
}

void search_result_release(struct search_result *res)
{
    free(res->hit);
    memset(res, 0, sizeof *res);
}

static const char *recompute_name(int r)
{
    return r == RECOMPUTE_FULL ? "full" : r == RECOMPUTE_SELECTIVE ? "selective" : "none";
}

/* context (issue 17): when the best layout has CP and no layout without
 * it fits, CP is what made the context fit; say so, with the counts. */
static void print_cp_fit(FILE *f, const struct search_result *res)
{
    if (res->n_hits == 0 || !res->hit[0].feasible || res->hit[0].cp <= 1) return;
    int fit_nocp = 0, tried_nocp = 0;
    for (int i = 0; i < res->n_hits; i++) {
        if (res->hit[i].cp > 1) continue;
        tried_nocp++;
        fit_nocp += res->hit[i].feasible;
    }
    if (fit_nocp) return;
    fprintf(f, "\ncontext parallelism is what made this fit: no layout without CP fits (%d "
               "simulated did not, %lld more pruned by the memory bound before any ran); the "
               "best has cp = %d\n", tried_nocp, res->mem_pruned_nocp, res->hit[0].cp);
}

void search_print(FILE *f, const struct search_result *res, const struct search_options *opt,
                  int top)
{
    const char *metric = opt->metric ? opt->metric : "tokens_per_s";
    fprintf(f, "best %d of %lld feasible layouts on %d × %s by %s:\n",
            top < res->feasible ? top : (int)res->feasible, res->feasible, opt->chips, res->chip,
            metric);
    /* context (issue 17): a cp column once any layout has CP */
    bool any_cp = false;
    for (int i = 0; i < res->n_hits; i++) any_cp |= res->hit[i].cp > 1;
    fprintf(f, "%4s %3s ", "rank", "tp");
    if (any_cp) fprintf(f, "%3s ", "cp");
    fprintf(f, "%3s %5s %3s %3s %3s %-12s %-9s %4s %10s %12s %6s %7s %9s %8s\n",
            "pp", "dp", "ep", "vpp", "mb", "schedule", "recompute", "zero", "step_s",
            "tokens/s", "MFU%", "bubble", "peak_GB", "$/Mtok");
    for (int i = 0; i < res->n_hits && i < top && res->hit[i].feasible; i++) {
        const struct search_hit *h = &res->hit[i];
        fprintf(f, "%4d %3d ", i + 1, h->tp);
        if (any_cp) fprintf(f, "%3d ", h->cp);
        fprintf(f, "%3d %5d %3d %3d %3d %-12s %-9s %4d %10.4f %12.6g %6.2f %7.4f %9.2f "
                   "%8.4g\n", h->pp, h->dp, h->ep, h->vpp, h->micro_batch,
                h->schedule, recompute_name(h->recompute), h->zero, h->step_s, h->tokens_per_s,
                100 * h->mfu, h->bubble, h->peak_mem / 1e9, h->usd_per_mtok);
    }
    print_cp_fit(f, res);
    long long simulated = res->n_hits;
    fprintf(f, "\n%lld layouts enumerated: %lld duplicates, %lld refused by schedule rules, "
               "%lld cannot fit (memory bound > %.0f GB), %lld slower than the same layout "
               "with less recompute that fits; %lld simulated, %lld fit, in %.2f s "
               "(%.1f ms per simulated layout)\n",
            res->enumerated, res->duplicates, res->rule_pruned, res->mem_pruned,
            res->capacity / 1e9, res->slower_skipped, simulated, res->feasible, res->wall_s,
            simulated ? 1e3 * res->wall_s / simulated : 0);
}
