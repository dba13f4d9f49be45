/* bound.c — lower bounds of step time and memory; see bound.h. */
#include "bound.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/strategy/collective.h"
#include "sim/strategy/data_parallel.h"
#include "sim/strategy/offload.h"
#include "price.h"

/* ---- memory --------------------------------------------------------------- */

/* The precision recipe's bits, as sim.c hands them to data_parallel.c:
 * main gradients and Adam's moments (fp32, or bf16). */
static int grad_bits(const struct config *cfg)
{
    return cfg->training.grad_reduce == PRECISION_BF16 ? 16 : 32;
}

static int moment_bits(const struct config *cfg)
{
    return cfg->training.optimizer_state == PRECISION_BF16 ? 16 : 32;
}

/* Bytes of main gradient per parameter, as data_parallel.c holds and
 * reduces them. */
static double grad_bytes(const struct config *cfg) { return grad_bits(cfg) / 8.0; }

/* The chips gradients are reduced and ZeRO shards over: the DP-CP group
 * (data_parallel.h; parallel.cp is 1 without context parallelism). */
static int dp_group(const struct config *cfg)
{
    return cfg->parallel.dp * (cfg->parallel.cp > 1 ? cfg->parallel.cp : 1);
}

/* Σ params and stashed activation bytes (per chip of the TP group, one
 * microbatch) over layers lo..hi, and the largest two neighbouring layers'
 * parameters (ZeRO-3's gathered unit and its prefetch). */
void sim_layer_table(const struct config *cfg, const struct model *m, double *params, double *act)
{
    struct cost_params cp = {
        .seq_len = cfg->model.seq_len, .micro_batch = cfg->training.micro_batch,
        .tp = cfg->parallel.tp, .sp = cfg->parallel.sp || cfg->parallel.tsp,
        .recompute = cfg->training.recompute, .weight_bits = cfg->model.weight_bits,
        .activation_bits = cfg->model.activation_bits, .cp = cfg->parallel.cp,
        .flash = cfg->training.attention == ATTENTION_FLASH, .no_dropout = !cfg->training.dropout,
        .mtp = true, .ep = cfg->parallel.ep, /* as sim.c's (ep counts only with MoE layers) */
    };
    for (int l = 0; l < m->n_layers; l++) {
        struct layer_cost lc;
        model_layer_cost(m, l, &cp, &lc);
        params[l] = lc.params;
        act[l] = lc.act_bytes;
    }
}

static void layer_sums(const double *lp, const double *la, int lo, int hi, double *params,
                       double *act, double *pair)
{
    *params = *act = *pair = 0;
    double prev = 0;
    for (int l = lo; l <= hi; l++) {
        *params += lp[l];
        *act += la[l];
        double two = l > lo ? prev + lp[l] : lp[l];
        if (two > *pair) *pair = two;
        prev = lp[l];
    }
}

/* Static bytes of `params` on the chip and on the host (offload). */
static void static_bytes(const struct config *cfg, double params, double *chip, double *host)
{
    int off = cfg->training.offload;
    double b[3];
    dp_bytes_per_param_recipe(cfg->model.weight_bits, grad_bits(cfg), moment_bits(cfg),
                              cfg->training.zero, dp_group(cfg), b);
    double w = params * b[0], g = params * b[1], o = params * b[2];
    *host = 0;
    if (off >= OFFLOAD_OPTIMIZER) *host += o, o = 0;
    if (off >= OFFLOAD_WEIGHTS) *host += w, w = 0;
    *chip = w + g + o;
}

static bool zero3_units(const struct config *cfg)
{
    return cfg->training.zero >= 3 &&
           (dp_group(cfg) > 1 || cfg->training.offload >= OFFLOAD_WEIGHTS);
}

void sim_memory_bound(const struct config *cfg, const struct model *m, int chips_per_node,
                      const double *table_params, const double *table_act, double *chip_bytes,
                      double *host_bytes)
{
    double *own = NULL;
    if (!table_params) {
        own = mp_xmalloc(2 * (size_t)m->n_layers * sizeof *own);
        sim_layer_table(cfg, m, own, own + m->n_layers);
        table_params = own;
        table_act = own + m->n_layers;
    }
    int pp = cfg->parallel.pp, mb = config_microbatches(cfg);
    const char *sch = cfg->training.schedule;
    bool gpipe = !strcmp(sch, "gpipe");
    bool ofob = !strcmp(sch, "1f1b") || !strcmp(sch, "zb-h1") || !strcmp(sch, "zb-h2");
    bool act_out = cfg->training.offload == OFFLOAD_ALL;
    double wb = cfg->model.weight_bits / 8.0;
    double params, act, pair, chip, host;
    layer_sums(table_params, table_act, 0, m->n_layers - 1, &params, &act, &pair);
    /* The average chip: everything lives on some device. */
    double held = gpipe && !act_out ? mb : 1;
    static_bytes(cfg, params / pp, &chip, &host);
    double best = chip + held * act / pp, host_most = host;
    if ((!gpipe && !ofob) || cfg->parallel.vpp != 1) goto done;
    /* Each device under the stage split sim.c uses, holding what the
     * schedule must stash before its first backward. */
    for (int d = 0; d < pp; d++) {
        int lo, hi;
        const struct config_int_list *sl = &cfg->parallel.stage_layers;
        sim_stage_layers(m->decoders, pp, sl->n == pp ? sl->v : NULL, d, &lo, &hi);
        layer_sums(table_params, table_act, lo, hi, &params, &act, &pair);
        int k = gpipe ? mb : (pp - d < mb ? pp - d : mb);
        static_bytes(cfg, params, &chip, &host);
        double need = chip + (act_out ? 1 : k) * act;
        /* A forward holds one layer's gathered weights and the next one's. */
        if (zero3_units(cfg)) need += pair * wb;
        if (act_out) host += k * act;
        if (need > best) best = need;
        if (host > host_most) host_most = host;
    }
done:
    free(own);
    *chip_bytes = best;
    *host_bytes = cfg->training.offload != OFFLOAD_NONE ? host_most * chips_per_node : 0;
}

/* ---- time ----------------------------------------------------------------- */

/* A pass's segments alone on an idle lane: compute in order, each
 * collective after the compute before it, each compute after what it waits
 * for. Its compute stream is busy until the last compute ends; collectives
 * before the first compute are taken as done (they may have run under the
 * previous pass). */
static mp_time chain(const struct sim *s, int stage, enum tp_pass_kind k, mp_time plain)
{
    if (!s->has_tensor) return plain;
    const struct tp_pass *p = tensor_pass(&s->tensor, stage, k);
    if (p->n == 0) return plain;
    mp_time *end = mp_xmalloc((size_t)p->n * sizeof *end);
    mp_time tc = 0, tk = 0;
    bool computed = false;
    for (int i = 0; i < p->n; i++) {
        const struct tp_seg *g = &s->tensor.seg[p->off + i];
        if (g->is_comm && !computed) {
            /* Before the pass's first compute a collective waits only for
             * the pass's input: it may run under the previous pass. */
            end[i] = 0;
        } else if (g->is_comm) {
            mp_time at = tk > tc ? tk : tc;
            end[i] = tk = at + g->duration;
        } else {
            computed = true;
            mp_time at = tc, w = g->wait >= 0 ? end[g->wait] : 0;
            if (w > at) at = w;
            end[i] = tc = at + g->duration;
        }
    }
    free(end);
    return tc;
}

/* The hand-off of stage st's output along path q, alone on the fabric. */
static mp_time send_time(const struct sim *s, int q, int st)
{
    const struct pipe_program *p = &s->prog;
    if (st + 1 >= p->stages) return 0;
    int a = p->device_of[q * p->stages + st], b = p->device_of[q * p->stages + st + 1];
    if (a == b) return 0;
    int stack[64], *links;
    int n = system_route_buf(&s->sys, s->chip_of_device[a], s->chip_of_device[b], stack, 64, &links);
    mp_time t = system_route_time(&s->sys, links, n, s->stage_cost[st].send_bytes);
    if (links != stack) free(links);
    return t + (s->has_model ? 0 : s->cfg.synthetic.hop);
}

static double layer_params(const struct sim *s, int l)
{
    /* sim.c's cost parameters (build_graph's, experts' ep included). */
    const struct config *cfg = &s->cfg;
    struct cost_params cp = {
        .seq_len = cfg->model.seq_len, .micro_batch = cfg->training.micro_batch,
        .tp = cfg->parallel.tp, .sp = cfg->parallel.sp || cfg->parallel.tsp,
        .recompute = cfg->training.recompute, .weight_bits = cfg->model.weight_bits,
        .activation_bits = cfg->model.activation_bits, .cp = cfg->parallel.cp,
        .flash = cfg->training.attention == ATTENTION_FLASH, .no_dropout = !cfg->training.dropout,
        .mtp = true, .ep = s->has_experts ? cfg->parallel.ep : 0,
    };
    struct layer_cost lc;
    model_layer_cost(&s->model, l, &cp, &lc);
    return lc.params;
}

static mp_time group_time(const struct sim *s, const struct config *cfg, int d, enum coll_op op,
                          double bytes)
{
    /* data_parallel.c's group: TP rank 1's, or with CP and no TP listed
     * from CP rank 1. */
    int dp = dp_group(cfg), tp = cfg->parallel.tp, first = tp == 1 && cfg->parallel.cp > 1;
    int *chips = mp_xmalloc((size_t)dp * sizeof *chips);
    for (int r = 0; r < dp; r++)
        chips[r] = s->chip_of_device[d] + (tp > 1) + ((r + first) % dp) * tp;
    struct coll_spec c = { .op = op, .algo = (enum coll_algo)cfg->run.collective,
                           .chips = chips, .n = dp, .bytes = bytes, .mb = -1, .stage = -1 };
    mp_time t = collective_time(&s->sys, &c);
    free(chips);
    return t;
}

static mp_time host_copy(const struct sim *s, double bytes)
{
    return mp_time_add(s->sys.host.link_latency, mp_time_from_ps(bytes * 1e12 / s->sys.host.link_bw));
}

/* Collective or copy times by bytes, priced once per bound (ZeRO-3 moves
 * the same few layer sizes thousands of times, and every device's DP group
 * looks alike). A DP group's time is reused for another device's group only
 * where it must be equal: a fabric that looks the same from every node
 * (switch, mesh or none inside, fat-tree, rail or none across) and groups
 * with the same chips per node at the same local positions. */
struct timed { double bytes; int kind, sig; mp_time t; };
struct times { struct timed *v; int n, cap; };

static bool uniform_fabric(const struct system *sys)
{
    enum topology u = sys->scaleup.topo, o = sys->scaleout.topo;
    return (u == TOPO_SWITCH || u == TOPO_FULL_MESH || u == TOPO_NONE) &&
           (o == TOPO_FAT_TREE || o == TOPO_RAIL || o == TOPO_NONE);
}

/* Device d's DP group as the fabric sees it: on a uniform fabric the local
 * index of its first chip (the stride is tp, the same for every device);
 * otherwise d itself (never shared). */
static int group_sig(const struct sim *s, const struct config *cfg, int d)
{
    if (!uniform_fabric(&s->sys)) return -1 - d;
    int first = s->chip_of_device[d] + (cfg->parallel.tp > 1);
    return first % s->sys.chips_per_node;
}

static mp_time timed(struct times *tm, const struct sim *s, const struct config *cfg, int d,
                     int kind, double bytes)
{
    int sig = kind < N_COLL_OPS ? group_sig(s, cfg, d) : 0;
    for (int i = 0; i < tm->n; i++)
        if (tm->v[i].kind == kind && tm->v[i].bytes == bytes && tm->v[i].sig == sig)
            return tm->v[i].t;
    mp_time t = kind < N_COLL_OPS ? group_time(s, cfg, d, (enum coll_op)kind, bytes)
                                  : host_copy(s, bytes);
    MP_GROW(tm->v, tm->cap, tm->n + 1);
    tm->v[tm->n++] = (struct timed){ bytes, kind, sig, t };
    return t;
}

/* The gradient sync that cannot start before device d's last backward: its
 * lowest stage's last bucket (with training.dp_overlap, buckets fill from
 * the stage's last layer down, as data_parallel.c cuts them), or the whole
 * device's gradients (without), or ZeRO-3's reduce-scatter of the first
 * layer; then, offloading, that shard's copy to the host. */
static mp_time sync_tail(const struct sim *s, const double *lp, const struct config *cfg, int d,
                         int lowest, double params, struct times *tm)
{
    int dp = dp_group(cfg), z = cfg->training.zero;
    bool off = cfg->training.offload >= OFFLOAD_OPTIMIZER;
    if (!s->has_model || (dp <= 1 && !off)) return 0;
    const struct stage_cost *c = &s->stage_cost[lowest];
    double bytes;
    if (z >= 3) {
        bytes = lp[c->layer_first] * grad_bytes(cfg);
    } else if (cfg->training.dp_overlap && dp > 1) {
        double pending = 0;
        for (int l = c->layer_last; l >= c->layer_first; l--) {
            pending += lp[l] * grad_bytes(cfg);
            if (pending >= cfg->training.dp_bucket && l > c->layer_first) pending = 0;
        }
        bytes = pending;
    } else {
        bytes = params * grad_bytes(cfg);
    }
    mp_time t = 0;
    if (dp > 1) t = timed(tm, s, cfg, d, z >= 1 ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE, bytes);
    if (off) t += timed(tm, s, cfg, d, N_COLL_OPS, z >= 1 ? bytes / dp : bytes);
    return t;
}

/* What must follow device d's last op: its step work (data_parallel.c:
 * the gradient norm and the Adam step on the chip, priced by the kernel
 * model's memory rate as sim.c prices them; with the optimizer offloaded,
 * the updated weights coming back from the host) and ZeRO 1/2's weight
 * all-gather, unless overlap_param_gather moved it to the step's start.
 * The norm's all-reduce (4 bytes) is left out: a bound need not be tight.
 * *norm: the gradient norm's part, which runs before that all-reduce (0
 * when the host runs it); the rest follows the all-reduce. */
static mp_time tail(const struct sim *s, const struct config *cfg, int d, double params,
                    struct times *tm, mp_time *norm)
{
    int dp = dp_group(cfg), z = cfg->training.zero;
    *norm = 0;
    if (params <= 0 || !s->has_model) return 0;
    double shard = z >= 1 ? params / dp : params, wb = cfg->model.weight_bits / 8.0;
    mp_time t = 0;
    if (cfg->training.offload == OFFLOAD_NONE) {
        double b[3];
        int gb = grad_bits(cfg), ob = moment_bits(cfg);
        dp_bytes_per_param_recipe(cfg->model.weight_bits, gb, ob, z, dp, b);
        *norm = price_memory((void *)s, shard * dp_norm_bytes_per_param(gb), 1);
        t = *norm +
            price_memory((void *)s,
                         shard * dp_adam_bytes_per_param(cfg->model.weight_bits, gb, ob) +
                             params * b[1], 2);
    } else if (cfg->training.offload == OFFLOAD_OPTIMIZER) {
        t = timed(tm, s, cfg, d, N_COLL_OPS, shard * wb);
    }
    bool early = cfg->training.overlap_param_gather;
    if ((z == 1 || z == 2) && dp > 1 && !early)
        t += timed(tm, s, cfg, d, COLL_ALL_GATHER, params * wb);
    return t;
}

/* What one device's DP stream and host copy streams must carry in a step,
 * one op after another (ZeRO-3 units, offload.h): each stream's Σ is a
 * bound of the step too, the optimizer following the last of them. Per
 * microbatch and stage: two gathers of every layer (forward, backward),
 * one reduce-scatter of its gradients; offloading, the shard of every
 * gather fetched from the host, the gradient shard sent to it, and with
 * `all` the stash each way. */
static mp_time stream_sum(const struct sim *s, const double *lp, const struct config *cfg, int d,
                          const double *mq, bool fb, struct times *tm)
{
    const struct pipe_program *pg = &s->prog;
    /* DualPipe's F&B ops gather only their forward's stage and offload no
     * activations (pipeline.c): count what every schedule surely does. */
    double gathers = fb ? 1 : 2, stashes = fb ? 0 : 1;
    int dp = dp_group(cfg), off = cfg->training.offload;
    bool units = zero3_units(cfg), gather = units && dp > 1;
    if (!s->has_model || (!units && off != OFFLOAD_ALL)) return 0;
    double wb = cfg->model.weight_bits / 8.0, dpq = 0, from = 0, to = 0;
    for (int q = 0; q < pg->paths; q++)
        for (int st = 0; st < pg->stages; st++) {
            if (pg->device_of[q * pg->stages + st] != d) continue;
            const struct stage_cost *c = &s->stage_cost[st];
            double per_dp = 0, per_from = 0, per_to = 0;
            /* Layers of one size in a row (a model's decoders) have the
             * same times: looked up once. */
            double last_p = -1, t_dp = 0, t_from = 0, t_to = 0;
            for (int l = c->layer_first; units && l <= c->layer_last; l++) {
                double p = lp[l];
                if (p != last_p) {
                    last_p = p;
                    t_dp = gather ? gathers * (double)timed(tm, s, cfg, d, COLL_ALL_GATHER, p * wb) +
                                        (double)timed(tm, s, cfg, d, COLL_REDUCE_SCATTER, p * grad_bytes(cfg))
                                  : 0;
                    t_from = off >= OFFLOAD_WEIGHTS
                                 ? gathers * (double)timed(tm, s, cfg, d, N_COLL_OPS, p * wb / dp) : 0;
                    t_to = off >= OFFLOAD_OPTIMIZER
                               ? (double)timed(tm, s, cfg, d, N_COLL_OPS, p * grad_bytes(cfg) / dp) : 0;
                }
                per_dp += t_dp;
                per_from += t_from;
                per_to += t_to;
            }
            if (off == OFFLOAD_ALL && c->act_bytes > 0) {
                mp_time a = timed(tm, s, cfg, d, N_COLL_OPS, c->act_bytes);
                per_from += stashes * (double)a;
                per_to += stashes * (double)a;
            }
            dpq += mq[q] * per_dp;
            from += mq[q] * per_from;
            to += mq[q] * per_to;
        }
    double most = dpq > from ? dpq : from;
    if (to > most) most = to;
    return mp_time_from_ps(floor(most)); /* a whole number already: no rounding */
}

/* The busiest moment of device d's activations, from the program's order
 * (pipe_peak_inflight), with the device's smallest stash per microbatch:
 * the activations and, under ZeRO-3, a forward's gathered weights, which
 * are held at that moment (the forward that stashes last is running). */
/* Device d's smallest stash per microbatch (and its W part), the smallest
 * of its stages' largest two neighbouring layers, and its activations'
 * busiest moment in the program's order: what device_memory needs, none
 * of it depending on ZeRO or offload. */
struct dev_mem { double mb, mw, pair; int nb, nw; };

static void device_stash(const struct sim *s, const double *lp, int d, struct dev_mem *dm)
{
    const struct pipe_program *pg = &s->prog;
    double mb = INFINITY, mw = INFINITY, pair = INFINITY;
    for (int q = 0; q < pg->paths; q++)
        for (int st = 0; st < pg->stages; st++) {
            if (pg->device_of[q * pg->stages + st] != d) continue;
            const struct stage_cost *c = &s->stage_cost[st];
            if (c->act_bytes < mb) mb = c->act_bytes;
            if (c->act_w_bytes < mw) mw = c->act_w_bytes;
            double best = 0, prev = 0;
            for (int l = c->layer_first; l <= c->layer_last; l++) {
                double p = lp[l];
                if (p > best) best = p;
                if (l > c->layer_first && prev + p > best) best = prev + p;
                prev = p;
            }
            if (best < pair) pair = best;
        }
    *dm = (struct dev_mem){ .mb = mb, .mw = mw, .pair = pair };
    if (!isinf(mb)) pipe_peak_inflight(pg, d, mb > 0 ? mw / mb : 0, &dm->nb, &dm->nw);
}

static double device_memory(const struct dev_mem *dm, const struct config *cfg, double params,
                            double *host)
{
    double wb = cfg->model.weight_bits / 8.0;
    *host = 0;
    if (isinf(dm->mb)) return 0;
    double chip;
    static_bytes(cfg, params, &chip, host);
    double act = dm->nb * dm->mb + dm->nw * dm->mw;
    if (cfg->training.offload == OFFLOAD_ALL) {
        *host += act;
        act = dm->mb;
    }
    return chip + act + (zero3_units(cfg) ? dm->pair * wb : 0);
}

int sim_bound_many(const struct config *const *cfgs, int n, const struct sim_options *opts,
                   struct sim_bound *b, struct mp_error *err)
{
    memset(b, 0, (size_t)n * sizeof *b);
    const struct config *cfg = cfgs[0];
    struct sim s;
    int m = config_microbatches(cfg), p = cfg->parallel.pp;
    /* The layout of stages on devices does not depend on m: price it with
     * a short program when the schedule allows one. */
    /* 2p reaches every schedule's deepest warm-up (ZB-H2's 2p − 1, the
     * interleaved one's with groups of p), so the in-flight peaks the
     * memory bound reads are the full program's too. */
    int small = m > 2 * p ? 2 * p : m;
    int rc = sim_price_layout(&s, cfg, opts, small, err);
    if (rc == MP_ERR_INFEASIBLE && small != m) {
        sim_release(&s);
        rc = sim_price_layout(&s, cfg, opts, m, err);
    }
    if (rc) {
        sim_release(&s);
        return rc;
    }
    const struct pipe_program *pg = &s.prog;
    int S = pg->stages, P = pg->devices, Q = pg->paths;
    bool split = false, fb = false;
    for (int d = 0; d < P; d++)
        for (int k = 0; k < pg->n_ops[d]; k++) {
            split |= pg->ops[d][k].kind == PIPE_B || pg->ops[d][k].kind == PIPE_W;
            fb |= pg->ops[d][k].kind == PIPE_FB;
        }
    /* Per stage: forward, backward as run (fused BW, or B then W), and the
     * input-gradient part the drain walks. DualPipe's F&B ops carry no TP
     * segments, so there the plain times (never more) are used. */
    mp_time *f = mp_xcalloc((size_t)S, sizeof *f), *bk = mp_xcalloc((size_t)S, sizeof *bk);
    mp_time *bin = mp_xcalloc((size_t)S, sizeof *bin), *w = mp_xcalloc((size_t)S, sizeof *w);
    for (int st = 0; st < S; st++) {
        const struct stage_cost *c = &s.stage_cost[st];
        f[st] = fb ? c->t_f : chain(&s, st, TPP_F, c->t_f);
        if (split) {
            bin[st] = fb ? c->t_b : chain(&s, st, TPP_B, c->t_b);
            w[st] = fb ? c->t_w : chain(&s, st, TPP_W, c->t_w);
            bk[st] = bin[st] + w[st];
        } else {
            bk[st] = bin[st] = fb ? c->t_b + c->t_w : chain(&s, st, TPP_BW, c->t_b + c->t_w);
        }
    }
    /* Microbatches per path, from the short program's split. */
    double *mq = mp_xcalloc((size_t)Q, sizeof *mq);
    for (int i = 0; i < pg->microbatches; i++) mq[pg->path_of_mb[i]] += (double)m / pg->microbatches;
    mp_time *pre_f = mp_xcalloc((size_t)Q * S, sizeof *pre_f), *pre_b = mp_xcalloc((size_t)Q * S, sizeof *pre_b);
    for (int q = 0; q < Q; q++)
        for (int st = 1; st < S; st++) {
            mp_time hop = send_time(&s, q, st - 1);
            pre_f[q * S + st] = pre_f[q * S + st - 1] + f[st - 1] + hop;
            /* The drain's hand-offs carry input gradients, whose bytes
             * need not be the forward's (the last stage's can be empty):
             * counted as free. */
            pre_b[q * S + st] = pre_b[q * S + st - 1] + bin[st - 1];
        }
    /* The full program, for the offloaded activations' round trips
     * (end_all below): the short one's, when it is the full one; else
     * generated for m (not zb-auto, whose order depends on priced times;
     * not DualPipe's F&B, nor two paths). */
    struct pipe_program full_prog;
    memset(&full_prog, 0, sizeof full_prog);
    const struct pipe_program *full = NULL;
    bool any_all = false;
    for (int i = 0; i < n; i++)
        any_all |= cfgs[i]->training.offload == OFFLOAD_ALL && zero3_units(cfgs[i]);
    bool want_full = !fb && Q == 1 && s.has_model && strcmp(cfg->training.schedule, "zb-auto") &&
                     any_all;
    if (want_full && pg->microbatches == m) {
        full = pg;
    } else if (want_full) {
        struct mp_error e2 = { 0 };
        const struct config_int_list *sl = &cfg->parallel.stage_layers;
        struct pipe_shape shape = {
            .devices = p, .microbatches = m, .chunks = cfg->parallel.vpp,
            .layers = s.model.decoders,
            .mem_limit = cfg->training.memory_limit.bytes ? 0 : cfg->training.memory_limit.value,
            .device_layers = sl->n ? sl->v : NULL,
        };
        if (schedule_generate(cfg->training.schedule, &shape, &full_prog, &e2) == MP_OK &&
            full_prog.stages == S && full_prog.devices == P)
            full = &full_prog;
        else if (full_prog.ops)
            pipe_program_release(&full_prog);
    }
    /* Per (microbatch, stage): its forward's earliest end (end_all). */
    mp_time *fwd_end = NULL;
    if (full && any_all) {
        fwd_end = mp_xmalloc((size_t)m * S * sizeof *fwd_end);
        for (size_t i = 0; i < (size_t)m * S; i++) fwd_end[i] = -1;
    }
    struct times tm = { 0 };
    struct coupled { mp_time own, drain, norm_min, post; } *cp = mp_xmalloc((size_t)n * sizeof *cp);
    for (int i = 0; i < n; i++) cp[i] = (struct coupled){ 0, 0, -1, 0 };
    double *lp = mp_xcalloc((size_t)(s.has_model ? s.model.n_layers : 1), sizeof *lp);
    for (int l = 0; s.has_model && l < s.model.n_layers; l++) lp[l] = layer_params(&s, l);
    for (int d = 0; d < P; d++) {
        double busy = 0, trail = 0, params = 0;
        mp_time fill = -1, drain = -1;
        int lowest = -1;
        for (int q = 0; q < Q; q++)
            for (int st = 0; st < S; st++) {
                if (pg->device_of[q * S + st] != d) continue;
                if (lowest < 0 || st < lowest) lowest = st;
                busy += mq[q] * (double)(f[st] + bk[st]);
                trail += mq[q] * (double)w[st];
                if (fill < 0 || pre_f[q * S + st] < fill) fill = pre_f[q * S + st];
                if (drain < 0 || pre_b[q * S + st] < drain) drain = pre_b[q * S + st];
                /* As data_parallel.c counts a device's parameters: a stage
                 * once, or once per direction under DualPipe. */
                bool seen = false;
                for (int q2 = 0; q2 < q; q2++) seen |= pg->device_of[q2 * S + st] == d;
                if (!seen || Q == 2)
                    for (int l = s.stage_cost[st].layer_first; s.has_model && l <= s.stage_cost[st].layer_last; l++)
                        params += lp[l];
            }
        if (fill < 0) continue;
        struct dev_mem dm;
        if (s.has_model) device_stash(&s, lp, d, &dm);
        /* Rounded down: a bound must not gain from rounding. */
        mp_time bz = mp_time_from_ps(floor(busy)), tr = mp_time_from_ps(ceil(trail));
        /* Offloaded activations (training.offload = all, ZeRO-3 units,
         * pipeline.c): a forward's stash goes to the host as its compute
         * ends, and comes back for the backward once it has arrived there
         * and the pass before the backward has started; under ZeRO-3 a pass
         * starts with a buffer op on the compute stream, after the pass
         * before it. So with E_k the earliest end of the device's k-th op
         * (E_{−1} = E_{−2} = fill), a the stash's copy time each way and
         * E_F the end of the same microbatch's forward of that stage,
         *   E_k ≥ max(E_{k−1}, max(E_{k−2}, E_F + a) + a) + chain_k
         * for a backward with a stash, E_{k−1} + chain_k otherwise.
         * `end_all`: the device's compute end at the earliest, -1 when not
         * computed. */
        mp_time end_all = -1;
        if (full && any_all && fwd_end) {
            bool ok = true;
            for (int st = 0; st < S; st++) {
                if (full->device_of[st] != d) continue;
                bool has = false;
                for (int l = s.stage_cost[st].layer_first; l <= s.stage_cost[st].layer_last; l++)
                    has |= lp[l] > 0;
                ok &= has;
            }
            mp_time e1 = fill, e2 = fill;
            for (int k = 0; ok && k < full->n_ops[d]; k++) {
                const struct pipe_op *o = &full->ops[d][k];
                mp_time c = o->kind == PIPE_F ? f[o->stage] : o->kind == PIPE_B ? bin[o->stage]
                            : o->kind == PIPE_W ? w[o->stage] : bk[o->stage];
                mp_time at = e1;
                double stash = s.stage_cost[o->stage].act_bytes;
                if ((o->kind == PIPE_B || o->kind == PIPE_BW) && stash > 0) {
                    mp_time a = timed(&tm, &s, cfg, d, N_COLL_OPS, stash);
                    mp_time from = fwd_end[(size_t)o->mb * S + o->stage];
                    mp_time r = (from >= 0 && from + a > e2 ? from + a : e2) + a;
                    if (r > at) at = r;
                }
                e2 = e1;
                e1 = at + c;
                if (o->kind == PIPE_F) fwd_end[(size_t)o->mb * S + o->stage] = e1;
            }
            if (ok) end_all = e1;
        }
        mp_time lb2 = fill + (bz - tr > 0 ? bz - tr : 0) + drain;
        for (int i = 0; i < n; i++) {
            /* The device's own end, then its tail; or the drain's end below
             * it (the tail of the device there runs after that, but is not
             * counted: a bound need not be tight); or its DP or copy
             * streams' work, then the tail. */
            mp_time norm;
            mp_time end = tail(&s, cfgs[i], d, params, &tm, &norm);
            /* When this device's norm can start, at the earliest: its
             * compute and every sync done. */
            mp_time st_t = sync_tail(&s, lp, cfgs[i], d, lowest, params, &tm);
            mp_time pre = fill + bz + st_t;
            if (end_all >= 0 && cfgs[i]->training.offload == OFFLOAD_ALL && zero3_units(cfgs[i]) &&
                end_all + st_t > pre)
                pre = end_all + st_t;
            mp_time ss = stream_sum(&s, lp, cfgs[i], d, mq, fb, &tm);
            if (ss > pre) pre = ss;
            mp_time lb = pre + end;
            if (lb2 > lb) lb = lb2;
            /* For the coupled bound below. */
            if (pre + norm > cp[i].own) cp[i].own = pre + norm;
            if (lb2 > cp[i].drain) cp[i].drain = lb2;
            if (cp[i].norm_min < 0 || norm < cp[i].norm_min) cp[i].norm_min = norm;
            if (end - norm > cp[i].post) cp[i].post = end - norm;
            if (lb > b[i].step) {
                b[i].step = lb;
                b[i].busy = bz;
                b[i].fill = fill;
                b[i].drain = drain;
            }
            if (s.has_model) {
                double host = 0, mem = device_memory(&dm, cfgs[i], params, &host);
                if (mem > b[i].mem) b[i].mem = mem;
                host *= s.sys.chips_per_node;
                if (cfgs[i]->training.offload != OFFLOAD_NONE && host > b[i].host_mem)
                    b[i].host_mem = host;
            }
        }
    }
    /* Coupled over devices: every device's Adam step (and ZeRO 1/2's
     * gather) waits for the norm's all-reduce over all of them, which
     * waits for every device's norm; and the drain below a device ends on
     * another device, whose norm follows it (the smallest norm counted). */
    for (int i = 0; i < n; i++) {
        mp_time c = cp[i].own;
        if (cp[i].drain + (cp[i].norm_min > 0 ? cp[i].norm_min : 0) > c)
            c = cp[i].drain + (cp[i].norm_min > 0 ? cp[i].norm_min : 0);
        if (c + cp[i].post > b[i].step) b[i].step = c + cp[i].post;
    }
    free(cp);
    free(fwd_end);
    free(f);
    free(bk);
    free(bin);
    free(w);
    free(mq);
    free(pre_f);
    free(pre_b);
    free(tm.v);
    free(lp);
    if (full && full != pg) pipe_program_release(&full_prog);
    sim_release(&s);
    return MP_OK;
}

int sim_bound(const struct config *cfg, const struct sim_options *opts, struct sim_bound *b,
              struct mp_error *err)
{
    return sim_bound_many(&cfg, 1, opts, b, err);
}
