/* serve_layout.c — replicas on the system: pools of replicas, each replica's
 * stages as groups of chips on the system's nodes, the memory of each stage
 * (weights, activations, what is left for KV), and a pass's whole time on
 * a stage: the lane's compute, the group's collectives, swaps, the draft.
 * See serve.h ("The machine", "Costs of one pass").
 *
 * Placement. Pools, then replicas, then stages, each stage a group of
 * width = max(tp, ep) consecutive chips. A group that fits in a node never
 * straddles two: when the node's remaining chips are fewer than the width
 * it starts on the next node (so TP4 replicas pack two per 8-GPU node; TP3
 * ones two per node with two GPUs idle). Hence every replica's groups sit on
 * the fabric the same way, and a pass's collectives are priced once per
 * stage on replica 0's group (collective_time, run.collective's algorithm,
 * as training prices its TP collectives).
 *
 * Collectives of one pass of T tokens (E of them sampled) on a stage:
 *   tp > 1: per decoder layer two all-reduces of T × h activations (after
 *           the attention output projection and after the MLP: Megatron's
 *           row-parallel layers, as vLLM runs them), one after the
 *           vocabulary-parallel embedding, and on the last stage an
 *           all-gather of the E × vocabulary logits (vLLM gathers the
 *           vocabulary shards before sampling); with parallel.sp each
 *           all-reduce is a reduce-scatter and an all-gather of the same
 *           bytes (sequence parallelism);
 *   ep > 1: per MoE layer a dispatch and a combine all-to-all of the rank's
 *           T × top-k token copies (experts_a2a_time; dispatch at
 *           experts.dispatch_bits, combine at the activation bits).
 * Attention is data-parallel over ep / tp ranks with ep > 1: the ranks step
 * together (every MoE layer's all-to-all joins them), each with its share of
 * the pass's requests; the lane is the busiest rank, with ⌈n / ranks⌉ of
 * the n requests and that share of the tokens (an assumption: SGLang and
 * vLLM balance requests over DP ranks; the imbalance of unequal prompts is
 * not modelled). Its experts receive T × top-k / ep assignments (uniform
 * routing). */
#include "serve_impl.h"
#include "sim/io/budget.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/strategy/collective.h"
#include "sim/strategy/experts.h"

#define COMM_MEMO 256

struct serve_comm_memo { double tokens, emits; mp_time t; bool set; };

int serve_priced_of(const struct serve *s, int g)
{
    const struct serve_replica *R = &s->rep[s->stage_rep[g]];
    return s->pool[R->pool].priced0 + (g - R->stage0);
}

const struct plan_stage *serve_plan_stage(const struct serve *s, int g)
{
    const struct serve_replica *R = &s->rep[s->stage_rep[g]];
    return &s->pool[R->pool].pr->plan.stage[g - R->stage0];
}

/* The activation workspace vLLM keeps from its profiling forward: one pass
 * of max_num_batched_tokens tokens through the widest layer, per chip, and
 * the fp32 logits of max_num_seqs requests. Assumption (vLLM measures it
 * with a dummy forward; the formula counts the live tensors of one layer:
 * input and residual 2h, the Q/K/V projection, the MLP's gate, up and their
 * product 3f, each split by tp). */
static double activation_bytes(const struct serve *s, const struct serve_pool *P,
                               const struct plan_stage *ps)
{
    const struct model *m = &P->pr->model;
    double A = s->cfg.model.activation_bits / 8.0, t = P->tp;
    double f = m->intermediate;
    if (m->experts > 0) {
        double moe = (double)m->moe_intermediate * m->experts_per_token + m->shared_intermediate;
        if (moe > f) f = moe;
    }
    double qkv = ((double)m->heads + 2.0 * m->kv_heads) * m->head_dim;
    double per_token = (2.0 * m->hidden + qkv / t + 3.0 * f / t) * A;
    /* With data-parallel attention a rank runs its share of the step. */
    double act = (double)serve_budget(s) / P->dp_attn * per_token;
    bool head = ps->last == m->n_layers - 1;
    if (head) act += (double)serve_mb(s) / P->dp_attn * m->vocab / t * 4.0;
    return act;
}

static int fail_layout(const struct serve *s, const char *key, struct mp_error *err,
                       const char *fmt, int a, int b, int c)
{
    char at[CONFIG_STR + 96], msg[512];
    snprintf(msg, sizeof msg, fmt, a, b, c);
    return mp_fail(err, MP_ERR_INPUT, "%s: %s", config_key_where(&s->cfg, key, at, sizeof at),
                   msg);
}

/* One pool's degrees from the scenario; its plan (placement by memory, or
 * pp even slices), copied with its own tp and pp. */
static int pool_init(struct serve *s, struct serve_pool *P, int which, struct mp_error *err)
{
    const struct config *c = &s->cfg;
    const struct config_inference *in = &c->inference;
    bool dis = in->disaggregate;
    P->tp = c->parallel.tp;
    P->pp = c->parallel.pp;
    P->ep = c->parallel.ep;
    P->replicas = in->replicas;
    const char *tp_key = "parallel.tp";
    if (dis && which == 0) {
        if (in->prefill_tp) { P->tp = in->prefill_tp; tp_key = "inference.prefill_tp"; }
        if (in->prefill_pp) P->pp = in->prefill_pp;
        P->replicas = in->prefill_replicas;
    } else if (dis) {
        if (in->decode_tp) { P->tp = in->decode_tp; tp_key = "inference.decode_tp"; }
        if (in->decode_pp) P->pp = in->decode_pp;
        if (in->decode_replicas) P->replicas = in->decode_replicas;
    }
    struct config pc = *c;
    pc.parallel.tp = P->tp;
    pc.parallel.pp = P->pp;
    if (which == 0) {
        P->pr = &s->pr;
    } else {
        P->pr = mp_xcalloc(1, sizeof *P->pr);
        P->own_pr = true;
    }
    int rc = plan_run(P->pr, &pc, err);
    if (which == 0) s->has_plan = true;
    if (rc) {
        if (rc == MP_ERR_INFEASIBLE && P->tp * P->pp > 1) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%.900s (a %s replica of tp %d × pp %d)", err->msg,
                     dis ? (which ? "decode" : "prefill") : "serving", P->tp, P->pp);
            snprintf(err->msg, sizeof err->msg, "%s", msg);
        }
        return rc;
    }
    const struct model *m = &P->pr->model;
    if (P->ep > 1) {
        if (m->experts == 0)
            return fail_layout(s, "parallel.ep", err, "parallel.ep = %d: expert parallelism "
                               "needs a mixture-of-experts model (%d experts)", P->ep, 0, 0);
        if (m->experts % P->ep != 0)
            return fail_layout(s, "parallel.ep", err, "parallel.ep = %d does not divide the "
                               "model's %d experts", P->ep, m->experts, 0);
        if (P->ep % P->tp != 0)
            return fail_layout(s, "parallel.ep", err, "parallel.ep = %d: the expert-parallel "
                               "group is data-parallel attention ranks of tp = %d chips each, "
                               "so ep must be a multiple of tp", P->ep, P->tp, 0);
        P->dp_attn = P->ep / P->tp;
    } else {
        P->ep = 1;
        P->dp_attn = 1;
    }
    if (P->tp > 1 && m->heads % P->tp != 0) {
        char at[CONFIG_STR + 96];
        return mp_fail(err, MP_ERR_INPUT, "%s = %d does not divide the model's %d attention "
                       "heads", config_key_where(c, tp_key, at, sizeof at), P->tp, m->heads);
    }
    P->width = P->ep > P->tp ? P->ep : P->tp;
    P->stages = P->pr->plan.stages;
    P->slots = in->inflight ? in->inflight : P->stages;
    return MP_OK;
}

/* Chips from `next` on where a group of `w` chips starts without crossing a
 * node (when it fits in one). */
static int align_group(int next, int w, int cpn)
{
    if (w <= cpn && next % cpn + w > cpn) next += cpn - next % cpn;
    return next;
}

/* Where the next chip is after `g` groups of `w` chips placed from `next`
 * one by one as align_group does, in closed form: the rest of a part-used
 * node, then cpn / w groups a node. (One by one, a bisection over 10^5
 * replicas of 93 stages ran 4.3 G instructions: the value fuzzer; the form
 * was checked against the loop on every start < 60, g < 50, w ≤ 30,
 * cpn ≤ 24.) */
static long long place_groups(long long next, long long g, int w, int cpn)
{
    if (g <= 0) return next;
    if (w > cpn) return next + g * w; /* wider than a node: never aligned */
    if (next % cpn) {
        long long fit = (cpn - next % cpn) / w;
        if (g <= fit) return next + g * w;
        next += fit * w;
        g -= fit;
        if (next % cpn) next += cpn - next % cpn;
    }
    long long k = cpn / w, q = (g - 1) / k; /* q full nodes, then the last one's */
    return next + q * cpn + (g - q * k) * w;
}

/* Chips the pools take when pool 0 has `rep0` replicas (-1: as set). */
static int chips_needed(const struct serve *s, int cpn, int rep0)
{
    long long next = 0;
    for (int p = 0; p < s->n_pools; p++) {
        const struct serve_pool *P = &s->pool[p];
        int n = p == 0 && rep0 >= 0 ? rep0 : P->replicas;
        next = place_groups(next, (long long)n * P->stages, P->width, cpn);
    }
    return next > INT_MAX ? INT_MAX : (int)next;
}

int serve_layout_build(struct serve *s, struct mp_error *err)
{
    const struct config *c = &s->cfg;
    int rc;
    s->n_pools = c->inference.disaggregate ? 2 : 1;
    s->pool = mp_xcalloc((size_t)s->n_pools, sizeof *s->pool);
    for (int p = 0; p < s->n_pools; p++)
        if ((rc = pool_init(s, &s->pool[p], p, err))) return rc;

    /* The system's node size first, then every group placed. */
    char path[1024];
    if ((rc = config_resolve_key(c, "hardware.system", "hardware/systems", ".ini", path,
                                 sizeof path, err)))
        return rc;
    struct system probe;
    if ((rc = system_load(&probe, path, 0, 1, &s->catalog, err))) return rc;
    int cpn = probe.chips_per_node;
    bool one_node = probe.scaleout.topo == TOPO_NONE;
    system_release(&probe);
    long long cap = c->hardware.nodes > 0 ? (long long)c->hardware.nodes * cpn
                    : one_node ? cpn : (1LL << 24);
    /* Before placing, so that a huge count is refused without a loop. */
    long long per_rep = 0;
    for (int p = 0; p < s->n_pools; p++)
        per_rep += (long long)s->pool[p].replicas * s->pool[p].stages * s->pool[p].width;
    int need = per_rep <= cap ? chips_needed(s, cpn, -1) : (int)(cap + 1);
    if (need > cap) {
        const struct serve_pool *P = &s->pool[0];
        char at[CONFIG_STR + 96];
        /* The most replicas that fit, by bisection (chips_needed grows with
         * them): one by one was quadratic, minutes for 10^6 replicas (issue
         * 16; the value fuzzer found it). A replica takes at least its
         * stages × width chips, which bounds the search. */
        long long per = (long long)P->stages * P->width;
        int lo = 0, hi = (int)(P->replicas < cap / per + 1 ? P->replicas : cap / per + 1);
        while (lo < hi) {
            int mid = lo + (hi - lo + 1) / 2;
            if (chips_needed(s, cpn, mid) <= cap) lo = mid;
            else hi = mid - 1;
        }
        int fit = lo;
        const char *key = s->n_pools == 2 ? "inference.prefill_replicas" : "inference.replicas";
        return mp_fail(err, MP_ERR_INPUT,
                       "%s = %d: %d replica%s of %d stage%s × %d chips (tp %d, pp %d, ep %d)%s "
                       "need %lld chips on nodes of %d, but the system holds %lld (%s); "
                       "expected at most %d replica%s", config_key_where(c, key, at, sizeof at),
                       P->replicas, P->replicas, P->replicas > 1 ? "s" : "", P->stages,
                       P->stages > 1 ? "s" : "", P->width, P->tp, P->stages, P->ep,
                       s->n_pools == 2 ? " and the decode pool" : "",
                       per_rep <= cap ? (long long)chips_needed(s, cpn, -1) : per_rep, cpn, cap,
                       c->hardware.nodes > 0 ? "hardware.nodes" : "one node, no scale-out fabric",
                       fit, fit == 1 ? "" : "s");
    }
    if ((rc = system_plan(&s->sys, path, c->hardware.nodes, need, &s->catalog, err))) return rc;
    s->has_sys = true;
    /* The system's own size (hardware.nodes may ask for millions of chips)
     * against the work budget before its links are laid out (issue 16). */
    struct work_estimate sys_work = { .chips = s->sys.n_chips,
                                      .links = (double)system_link_count(&s->sys) };
    if (!s->force && s->budget_events > 0 && s->sys.n_chips > s->budget_events)
        return mp_fail(err, MP_ERR_INPUT, "%s: a system of %d chips, past this run's budget of "
                       "%.0f", c->path[0] ? c->path : "scenario", s->sys.n_chips, s->budget_events);
    if ((rc = work_check(&sys_work, c->path[0] ? c->path : "scenario", "lower hardware.nodes",
                         s->force, err)))
        return rc;
    /* The replicas' stages and slots, numbered in ints and held per slot,
     * weighed before they are allocated (the value fuzzer: 947 replicas ×
     * inference.inflight = 10^6 allocated 3.8 GB here before any check). */
    long long n_stages = 0, n_slots = 0;
    for (int p = 0; p < s->n_pools; p++) {
        n_stages += (long long)s->pool[p].replicas * s->pool[p].stages;
        n_slots += (long long)s->pool[p].replicas * s->pool[p].slots;
    }
    const char *what = c->path[0] ? c->path : "scenario";
    if (n_slots > INT_MAX)
        return mp_fail(err, MP_ERR_INPUT, "%s: key inference.inflight: %lld slots over the "
                       "replicas, past the %d mpsim counts: expected fewer in flight per "
                       "replica or fewer replicas", what, n_slots, INT_MAX);
    struct work_estimate lay = { .bytes = (double)n_slots * sizeof *s->slot_rep +
                                          (double)n_stages * (sizeof *s->stage_rep +
                                                              sizeof *s->stage_chip +
                                                              sizeof *s->res.stage) };
    if (!s->force && s->budget_events > 0 && lay.bytes / WORK_BYTES_PER_EVENT > s->budget_events)
        return mp_fail(err, MP_ERR_INPUT, "%s: %lld slots and %lld stages over the replicas, "
                       "past this run's budget of %.0f events", what, n_slots, n_stages,
                       s->budget_events);
    if ((rc = work_check(&lay, what, "lower inference.inflight or inference.replicas", s->force,
                         err)))
        return rc;
    system_build(&s->sys);

    /* Replicas, stages and slots, numbered globally. */
    s->replicas = 0;
    s->stages = s->slots = 0;
    for (int p = 0; p < s->n_pools; p++) {
        s->pool[p].rep0 = s->replicas;
        s->replicas += s->pool[p].replicas;
        s->stages += s->pool[p].replicas * s->pool[p].stages;
        s->slots += s->pool[p].replicas * s->pool[p].slots;
    }
    s->rep = mp_xcalloc((size_t)s->replicas, sizeof *s->rep);
    s->stage_rep = mp_xcalloc((size_t)s->stages, sizeof *s->stage_rep);
    s->slot_rep = mp_xcalloc((size_t)s->slots, sizeof *s->slot_rep);
    s->stage_chip = mp_xcalloc((size_t)s->stages, sizeof *s->stage_chip);
    s->res.stage = mp_xcalloc((size_t)s->stages, sizeof *s->res.stage);
    s->res.rep = mp_xcalloc((size_t)s->replicas, sizeof *s->res.rep);
    int next = 0, g = 0, k = 0, r = 0, priced = 0;
    for (int p = 0; p < s->n_pools; p++) {
        struct serve_pool *P = &s->pool[p];
        P->priced0 = priced;
        priced += P->stages;
        for (int i = 0; i < P->replicas; i++, r++) {
            struct serve_replica *R = &s->rep[r];
            R->pool = p;
            R->index = i;
            R->stage0 = g;
            R->slot0 = k;
            for (int st = 0; st < P->stages; st++, g++) {
                next = align_group(next, P->width, cpn);
                if (st == 0) R->chip0 = next;
                s->stage_chip[g] = next;
                s->stage_rep[g] = r;
                const struct plan_stage *ps = &P->pr->plan.stage[st];
                s->res.stage[g] = (struct serve_stage_report){
                    .index = g, .chip = next, .replica = r, .pool = p,
                    .layer_first = ps->first, .layer_last = ps->last, .first_start = -1,
                    .weights = ps->weights,
                };
                next += P->width;
            }
            for (int j = 0; j < P->slots; j++, k++) s->slot_rep[k] = r;
            s->res.rep[r].pool = p;
            s->res.rep[r].chips = P->stages * P->width;
        }
    }
    /* Priced stages: each pool's stages once, split by its tp (and ep). */
    s->n_priced = priced;
    s->priced = mp_xcalloc((size_t)priced, sizeof *s->priced);
    for (int p = 0; p < s->n_pools; p++) {
        const struct serve_pool *P = &s->pool[p];
        for (int st = 0; st < P->stages; st++)
            s->priced[P->priced0 + st] = (struct serve_priced){
                P->pr->plan.stage[st].first, P->pr->plan.stage[st].last, P->tp, P->ep };
    }
    /* Memory per stage and chip. */
    for (int p = 0; p < s->n_pools; p++) {
        struct serve_pool *P = &s->pool[p];
        int S = P->stages;
        P->weights = mp_xcalloc((size_t)S, sizeof *P->weights);
        P->act = mp_xcalloc((size_t)S, sizeof *P->act);
        P->cap = mp_xcalloc((size_t)S, sizeof *P->cap);
        P->block_bytes = mp_xcalloc((size_t)S, sizeof *P->block_bytes);
        P->state_bytes = mp_xcalloc((size_t)S, sizeof *P->state_bytes);
        P->comm = mp_xcalloc((size_t)S * COMM_MEMO, sizeof *P->comm);
        for (int st = 0; st < S; st++) {
            const struct plan_stage *ps = &P->pr->plan.stage[st];
            P->weights[st] = ps->weights;
            P->block_bytes[st] = (double)c->inference.block_size *
                                 (ps->kv_per_token + ps->kv_window_per_token);
            P->state_bytes[st] = ps->state_per_request;
            if (ps->state_per_request > 0) P->has_state = true;
            if (c->inference.kv_cache == KV_PAGED) P->act[st] = activation_bytes(s, P, ps);
        }
    }
    return MP_OK;
}

void serve_layout_release(struct serve *s)
{
    for (int p = 0; p < s->n_pools; p++) {
        struct serve_pool *P = &s->pool[p];
        if (P->own_pr) {
            plan_run_release(P->pr);
            free(P->pr);
        }
        free(P->weights);
        free(P->act);
        free(P->cap);
        free(P->block_bytes);
        free(P->state_bytes);
        free(P->comm);
    }
    for (int r = 0; r < s->replicas; r++) {
        free(s->rep[r].wait.a);
        free(s->rep[r].wait.key);
    }
    free(s->pool);
    free(s->rep);
    free(s->stage_rep);
    free(s->slot_rep);
}

/* ---- collectives of a pass ---------------------------------------------------- */

static mp_time coll(const struct serve *s, enum coll_op op, int chip0, int n, double bytes)
{
    if (n <= 1 || bytes <= 0) return 0;
    int chips[n];
    for (int i = 0; i < n; i++) chips[i] = chip0 + i;
    struct coll_spec cs = { .op = op, .algo = (enum coll_algo)s->cfg.run.collective,
                            .chips = chips, .n = n, .bytes = bytes };
    return collective_time(&s->sys, &cs);
}

static mp_time comm_compute(struct serve *s, int g, double T, double E, int *n_ar,
                            double *ar_bytes)
{
    const struct serve_pool *P = serve_pool_of(s, g);
    const struct plan_stage *ps = serve_plan_stage(s, g);
    const struct model *m = &P->pr->model;
    /* Replica 0 of the pool stands for all: the same groups on the fabric. */
    int st = g - s->rep[s->stage_rep[g]].stage0;
    int chip0 = s->stage_chip[s->rep[P->rep0].stage0 + st];
    double A = s->cfg.model.activation_bits / 8.0;
    int ars = 0, moe = 0;
    for (int l = ps->first; l <= ps->last; l++) {
        const struct layer *L = &m->layer[l];
        if (L->kind == LAYER_DECODER) {
            ars += 2;
            if (L->moe) moe++;
        } else if (L->kind == LAYER_EMBEDDING) {
            ars += 1;
        }
    }
    mp_time t = 0;
    double bytes = T * m->hidden * A;
    if (P->tp > 1) {
        /* parallel.sp: each all-reduce becomes a reduce-scatter after the
         * block and an all-gather before the next (the same bytes). */
        if (s->cfg.parallel.sp)
            t = mp_time_add(t, mp_time_mul(mp_time_add(coll(s, COLL_REDUCE_SCATTER, chip0, P->tp, bytes),
                                                       coll(s, COLL_ALL_GATHER, chip0, P->tp, bytes)),
                                           ars));
        else
            t = mp_time_add(t, mp_time_mul(coll(s, COLL_ALL_REDUCE, chip0, P->tp, bytes), ars));
        if (ps->last == m->n_layers - 1 && E > 0)
            t += coll(s, COLL_ALL_GATHER, chip0, P->tp, E * m->vocab * A);
    } else {
        ars = 0;
    }
    if (P->ep > 1 && moe > 0 && T > 0) {
        int n = P->ep;
        int chips[n];
        double share[n];
        for (int i = 0; i < n; i++) {
            chips[i] = chip0 + i;
            share[i] = 1.0 / n;
        }
        int k = m->experts_per_token;
        int disp = s->cfg.experts.dispatch_bits ? s->cfg.experts.dispatch_bits
                                                : s->cfg.model.activation_bits;
        int nodes = (chip0 % s->sys.chips_per_node + n + s->sys.chips_per_node - 1) /
                    s->sys.chips_per_node;
        double D = experts_nodes_per_token(nodes, s->cfg.experts.max_nodes ? s->cfg.experts.max_nodes
                                                                           : m->groups_per_token, k);
        int algo = s->cfg.experts.all_to_all;
        mp_time d = experts_a2a_time(&s->sys, chips, n, share, T * k * m->hidden * disp / 8.0, k,
                                     D, algo);
        mp_time cb = experts_a2a_time(&s->sys, chips, n, share, T * k * m->hidden * A, k, D, algo);
        t = mp_time_add(t, mp_time_mul(mp_time_add(d, cb), moe));
    }
    if (n_ar) *n_ar = ars;
    if (ar_bytes) *ar_bytes = P->tp > 1 ? bytes : 0;
    return t;
}

mp_time serve_comm_time(struct serve *s, int g, double tokens, double emits, int *allreduces,
                        double *ar_bytes)
{
    struct serve_pool *P = &s->pool[s->rep[s->stage_rep[g]].pool];
    if (allreduces || ar_bytes) return comm_compute(s, g, tokens, emits, allreduces, ar_bytes);
    int st = g - s->rep[s->stage_rep[g]].stage0;
    unsigned h = (unsigned)tokens * 2654435761u ^ (unsigned)emits * 40503u;
    struct serve_comm_memo *mm = &P->comm[(size_t)st * COMM_MEMO + h % COMM_MEMO];
    if (!mm->set || mm->tokens != tokens || mm->emits != emits)
        *mm = (struct serve_comm_memo){ tokens, emits,
                                        comm_compute(s, g, tokens, emits, NULL, NULL), true };
    return mm->t;
}

mp_time serve_pass_time(struct serve *s, int g, const struct serve_slot *sl)
{
    const struct serve_pool *P = serve_pool_of(s, g);
    int j = serve_priced_of(s, g);
    struct kernel_batch b = sl->b;
    if (P->dp_attn > 1 && b.items > 0) {
        /* The busiest attention rank's share of the pass: ceil(items /
         * ranks) of the requests, with their share of every sum. */
        double n = ceil(b.items / P->dp_attn), f = n / b.items;
        b.tokens *= f, b.emits *= f, b.decode *= f, b.decode_ctx *= f;
        b.prefill_tokens *= f, b.prefill_pairs *= f, b.prefill_items *= f;
        b.decode_ctx_win *= f, b.prefill_pairs_win *= f;
        b.decode_reread *= f, b.decode_reread_win *= f;
        b.items = n;
    }
    mp_time d = serve_batch_time(s, j, &b);
    if (P->ep > 1)
        d += serve_expert_time(s, j, sl->b.tokens * P->pr->model.experts_per_token / P->ep);
    if (P->tp > 1 || P->ep > 1) d += serve_comm_time(s, g, b.tokens, b.emits, NULL, NULL);
    if (sl->swap_tokens > 0) {
        /* The stage's chips copy their layers' share of the KV over their
         * own host links, before the pass. */
        const struct plan_stage *ps = serve_plan_stage(s, g);
        const struct system_host *h = &s->sys.host;
        d = mp_time_add(d, mp_time_add(h->link_latency,
                                       mp_time_from_ps(sl->swap_tokens *
                                                       (ps->kv_per_token + ps->kv_window_per_token) /
                                                       h->link_bw * 1e12)));
    }
    if (sl->spec_items > 0 && g == s->rep[s->stage_rep[g]].stage0)
        d += serve_spec_draft_time(s, sl->spec_items, sl->spec_ctx);
    return d;
}
