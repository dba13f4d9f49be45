/* serve_price.c — the machine a serving run uses: each stage's layers and
 * the chip's kernel calibration (hardware/kernels.csv), a pass's time as
 * the kernels it runs (models/kernels.h, the same lists and prices as
 * training), and the hand-off routes between consecutive stages. See
 * serve.h ("Costs of one pass"). */
#include "serve_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hardware/calib.h"
#include "models/kernels.h"

/* The part of a pass's time that depends on its token and emit counts
 * alone (GEMMs, norms, activations, LM head) repeats from pass to pass:
 * memoised per priced stage. */
#define SERVE_MEMO 4096
struct serve_memo { double tokens, emits, seconds; bool set; };

/* The attention part depends on who is in the pass, but its inputs (the
 * batch's decode and prompt sums) recur: a decode member of context c
 * prices as any other one of context c. So a pass's whole time on a stage
 * with attention is memoised too, on the stage, the emits and every
 * kernel_batch field kernels_serve_attention reads (tokens among them):
 * the time is a function of those alone, so a hit is the time a miss
 * computes, bit for bit. One table for all stages (2.2 MB, allocated when
 * first used): the walk-at-a-time loop prices one
 * stage per class, and only full attention's varies. */
#define ATTN_MEMO 16384
#define ATTN_KEY 11
struct attn_memo {
    double key[ATTN_KEY], emits;
    int stage;
    mp_time d;               /* the pass's time on the stage */
    bool set;
};

struct serve_pricer {
    struct calib calib;
    struct kernel_params *kp;   /* [priced stages]: the shard's tp and ep */
    struct kernel_list kl;
    struct serve_memo *memo;    /* [priced stages × SERVE_MEMO] */
    bool *attention;            /* [priced stages]: has layers whose time depends on who is in it */
    bool *first;                /* [priced stages]: a replica's stage 0 (pays the host step) */
    struct kernel_attention *shape; /* [s->layers]: each layer's serving attention */
    /* [s->layers]: the first layer of its stage with the same attention
     * shape (a 70B model's 80 decoders have one), whose kernels a pass
     * prices once; their costs, the current pass's. */
    int *rep;
    int *kn;
    double (*kc)[2];
    /* [s->layers]: the first layer of its stage with the same kinds
     * (kernels.c reads a layer's kind, mixer, MLP and window only), whose
     * token-count kernels a memo miss prices once; their costs in `tc`
     * from tc_off for tc_n. */
    int *trep, *tc_off, *tc_n;
    double *tc;
    int tc_cap;
    struct kernel_window win;   /* the model's attention window */
    struct attn_memo *amemo;    /* NULL until used */
};

/* Forget every stage's attention memo. */
static void attn_memo_clear(struct serve *s)
{
    free(s->pricer->amemo);
    s->pricer->amemo = NULL;
}

static bool same_kinds(const struct serve_layer *a, const struct serve_layer *b)
{
    return a->kind == b->kind && a->mixer == b->mixer && a->mlp == b->mlp &&
           a->window == b->window && a->moe == b->moe;
}

static bool same_shape(const struct kernel_attention *a, const struct kernel_attention *b)
{
    return a->kind == b->kind && a->kv_token == b->kv_token &&
           a->flops_decode == b->flops_decode && a->flops_prefill == b->flops_prefill &&
           a->q_bytes == b->q_bytes && a->flops_token == b->flops_token &&
           a->state_bytes == b->state_bytes && a->io_token == b->io_token &&
           a->head_dim == b->head_dim && a->windowed == b->windowed && a->window == b->window;
}

/* Issue 19 (replicas): a priced stage is the layers one chip of a stage
 * group holds, its kernels shaped by the group's tensor-parallel degree
 * (Megatron's column/row split of the weight matrices, heads and the
 * vocabulary-parallel LM head, as vLLM runs it) and with ep > 1 its routed
 * experts left to serve_expert_time. With s->priced NULL (a shell such as
 * accel_gen.c's) the stages are s->pr's plan, unsplit. */
static struct serve_priced priced_stage(const struct serve *s, int st)
{
    if (s->priced) return s->priced[st];
    const struct plan_stage *p = &s->pr.plan.stage[st];
    return (struct serve_priced){ p->first, p->last, 1, 1 };
}

static int priced_count(const struct serve *s)
{
    return s->priced ? s->n_priced : s->stages;
}

int serve_price_layers(struct serve *s, struct mp_error *err)
{
    const struct model *m = &s->pr.model;
    const struct config *c = &s->cfg;
    int P = priced_count(s), total = 0;
    for (int st = 0; st < P; st++) total += priced_stage(s, st).last - priced_stage(s, st).first + 1;
    s->layer_off = mp_xcalloc((size_t)P + 1, sizeof *s->layer_off);
    s->layers = mp_xcalloc((size_t)(total > 0 ? total : 1), sizeof *s->layers);
    struct serve_pricer *p = s->pricer = mp_xcalloc(1, sizeof *s->pricer);
    p->memo = mp_xcalloc((size_t)(P > 0 ? P : 1) * SERVE_MEMO, sizeof *p->memo);
    p->attention = mp_xcalloc((size_t)(P > 0 ? P : 1), sizeof *p->attention);
    p->first = mp_xcalloc((size_t)(P > 0 ? P : 1), sizeof *p->first);
    p->kp = mp_xcalloc((size_t)(P > 0 ? P : 1), sizeof *p->kp);
    if (s->priced && s->pool)
        for (int q = 0; q < s->n_pools; q++) p->first[s->pool[q].priced0] = true;
    else if (P > 0)
        p->first[0] = true;
    int n = 0;
    for (int st = 0; st < P; st++) {
        struct serve_priced ps = priced_stage(s, st);
        p->kp[st] = (struct kernel_params){
            .seq_len = 1, .micro_batch = 1, .tp = ps.tp, .weight_bits = c->model.weight_bits,
            .activation_bits = c->model.activation_bits, .kv_bits = c->model.kv_bits,
            .compute_bits = c->model.compute_bits, .flash = true, .ep = ps.ep,
        };
        s->layer_off[st] = n;
        for (int l = ps.first; l <= ps.last; l++) {
            const struct layer *L = &m->layer[l];
            s->layers[n++] = (struct serve_layer){
                .layer = l, .kind = L->kind, .attn = L->attn, .mixer = L->mixer, .mlp = L->mlp,
                .moe = L->moe, .window = L->window, .params = L->params,
                .matmul_params = L->matmul_params, .expert_params = L->expert_params,
            };
            if (L->kind == LAYER_DECODER) p->attention[st] = true;
        }
    }
    s->layer_off[P] = n;
    int rc = calib_load_default(&p->calib, &s->sys.chip, err);
    if (rc) return rc;
    p->calib.graphs = true; /* serving replays its steps as CUDA graphs */
    if (c->model.compute_bits == 8 && !(s->sys.chip.peak_fp8 > 0))
        return mp_fail(err, MP_ERR_INPUT,
                       "%s%skey model.compute_bits = 8: chip %s has no FP8 peak "
                       "(hardware/chips.csv fp8_tflops = 0); expected 16 on this chip",
                       c->path, c->path[0] ? ": " : "", s->sys.chip.name);
    kernel_window_of(m, &p->win);
    p->shape = mp_xcalloc((size_t)(n > 0 ? n : 1), sizeof *p->shape);
    p->rep = mp_xcalloc((size_t)(n > 0 ? n : 1), sizeof *p->rep);
    p->kn = mp_xcalloc((size_t)(n > 0 ? n : 1), sizeof *p->kn);
    p->kc = mp_xcalloc((size_t)(n > 0 ? n : 1), sizeof *p->kc);
    p->trep = mp_xcalloc((size_t)(n > 0 ? n : 1), sizeof *p->trep);
    p->tc_off = mp_xcalloc((size_t)(n > 0 ? n : 1), sizeof *p->tc_off);
    p->tc_n = mp_xcalloc((size_t)(n > 0 ? n : 1), sizeof *p->tc_n);
    for (int st = 0; st < P; st++)
        for (int i = s->layer_off[st]; i < s->layer_off[st + 1]; i++) {
            kernels_serve_attention_shape(m, s->layers[i].layer, &p->kp[st], &p->shape[i]);
            p->rep[i] = p->trep[i] = i;
            for (int j = s->layer_off[st]; j < i; j++)
                if (p->rep[j] == j && same_shape(&p->shape[j], &p->shape[i])) {
                    p->rep[i] = j;
                    break;
                }
            for (int j = s->layer_off[st]; j < i; j++)
                if (p->trep[j] == j && same_kinds(&s->layers[j], &s->layers[i])) {
                    p->trep[i] = j;
                    break;
                }
        }
    return MP_OK;
}

void serve_price_describe(const struct serve *s, char *buf, size_t size)
{
    const struct calib *c = &s->pricer->calib;
    char launch[64], host[64];
    double l = c->graphs ? c->graph_launch_s : c->launch_s;
    if (l > 0) snprintf(launch, sizeof launch, "%.3g us a kernel (%s)", l * 1e6,
                        c->graphs ? "CUDA graphs" : "launched one by one, eager");
    else snprintf(launch, sizeof launch, "no per-kernel launch");
    if (c->host_s > 0) snprintf(host, sizeof host, ", host %.3g ms a step beside stage 0's pass",
                                c->host_s * 1e3);
    else host[0] = '\0';
    if (c->generic)
        snprintf(buf, size, "%s has no rows in %s: generic rows (*) with its catalogue "
                 "compute_eff and mem_eff; %s%s", c->chip, c->path, launch, host);
    else
        snprintf(buf, size, "priced by the %s rows of %s; %s%s%s", c->chip, c->path, launch, host,
                 s->cfg.model.compute_bits == 8 ? "; FP8 GEMMs" : "");
}

void serve_price_release(struct serve *s)
{
    struct serve_pricer *p = s->pricer;
    if (!p) return;
    calib_release(&p->calib);
    kernel_list_release(&p->kl);
    free(p->memo);
    free(p->attention);
    free(p->first);
    free(p->kp);
    free(p->amemo);
    free(p->shape);
    free(p->rep);
    free(p->kn);
    free(p->kc);
    free(p->trep);
    free(p->tc_off);
    free(p->tc_n);
    free(p->tc);
    free(p);
    s->pricer = NULL;
}

/* Seconds of the kernels `which` (kernels.h) of a stage's layers: each
 * layer of distinct kinds priced once, every layer's kernel costs added in
 * order (the sum a kernel-by-kernel walk gives). */
static double stage_kernels(const struct serve *s, int stage, const struct kernel_batch *b,
                            int which)
{
    struct serve_pricer *p = s->pricer;
    int used = 0;
    double t = 0;
    for (int i = s->layer_off[stage]; i < s->layer_off[stage + 1]; i++) {
        int r = p->trep[i];
        if (r == i) {
            kernel_list_clear(&p->kl);
            kernels_serve_layer(&s->pr.model, s->layers[i].layer, &p->kp[stage], b, which, &p->kl);
            MP_GROW(p->tc, p->tc_cap, used + p->kl.n);
            p->tc_off[i] = used;
            p->tc_n[i] = p->kl.n;
            for (int j = 0; j < p->kl.n; j++) {
                struct calib_cost c;
                calib_kernel(&p->calib, &p->kl.k[j], &c);
                p->tc[used++] = c.busy + c.launch;
            }
        }
        for (int j = 0; j < p->tc_n[r]; j++) t += p->tc[p->tc_off[r] + j];
    }
    return t;
}

void serve_batch_add(const struct serve *s, struct kernel_batch *b, double tokens, double past,
                     bool decode, bool emits)
{
    kernel_batch_add(b, tokens, past, decode, emits, &s->pricer->win);
}

bool serve_price_windowed(const struct serve *s) { return s->pricer->win.mixer != 0; }

void serve_price_eager(struct serve *s)
{
    s->pricer->calib.graphs = false;
    s->pricer->calib.host_s = 0;
    attn_memo_clear(s); /* launches priced otherwise from here */
}

void serve_price_no_host(struct serve *s)
{
    s->pricer->calib.host_s = 0;
    attn_memo_clear(s);
}

mp_time serve_expert_time(const struct serve *s, int stage, double assignments)
{
    struct serve_pricer *p = s->pricer;
    const struct model *m = &s->pr.model;
    const struct kernel_params *kp = &p->kp[stage];
    if (kp->ep <= 1 || assignments <= 0 || m->experts <= 0) return 0;
    /* The chip's experts/ep experts; assignments spread evenly over them:
     * the distinct ones a pass reaches, E_l·(1 − (1 − 1/E_l)^a) in
     * expectation (mlp_moe's rule for the experts a pass reads), each with
     * a / hit token copies, as one grouped GEMM per matrix. */
    double El = (double)m->experts / kp->ep;
    double hit = El * (1 - pow(1 - 1 / El, assignments));
    if (!(hit > 0)) return 0;
    int moe = 0;
    for (int i = s->layer_off[stage]; i < s->layer_off[stage + 1]; i++) moe += s->layers[i].moe;
    if (moe == 0) return 0;
    kernel_list_clear(&p->kl);
    kernels_serve_experts(m, assignments / hit, hit, kp, &p->kl);
    double t = 0;
    for (int j = 0; j < p->kl.n; j++) {
        struct calib_cost c;
        calib_kernel(&p->calib, &p->kl.k[j], &c);
        t += c.busy + c.launch;
    }
    t *= moe; /* every MoE layer of the stage routes the same copies */
    return mp_time_from_s(t); /* saturates (sim/common.h) */
}

/* The batch's fields kernels_serve_attention reads. */
static void attn_key(const struct kernel_batch *b, double key[ATTN_KEY])
{
    const double k[ATTN_KEY] = { b->decode, b->decode_ctx, b->decode_ctx_win, b->decode_reread,
                                 b->decode_reread_win, b->prefill_tokens, b->prefill_pairs,
                                 b->prefill_pairs_win, b->prefill_items, b->tokens, b->items };
    memcpy(key, k, sizeof k);
}

static bool attn_same(const struct attn_memo *e, int stage, const struct kernel_batch *b)
{
    const double *k = e->key;
    return e->stage == stage && e->emits == b->emits && k[1] == b->decode_ctx && k[6] == b->prefill_pairs && k[9] == b->tokens &&
           k[0] == b->decode && k[5] == b->prefill_tokens && k[10] == b->items &&
           k[8] == b->prefill_items && k[2] == b->decode_ctx_win &&
           k[7] == b->prefill_pairs_win && k[3] == b->decode_reread &&
           k[4] == b->decode_reread_win;
}

/* The memo entry of batch b on priced stage `stage`. */
static struct attn_memo *attn_find(const struct serve *s, int stage, const struct kernel_batch *b)
{
    struct serve_pricer *p = s->pricer;
    if (!p->amemo) p->amemo = mp_xcalloc(ATTN_MEMO, sizeof *p->amemo);
    /* The sums are whole numbers in practice; any bits hash. */
    uint64_t c, q;
    memcpy(&c, &b->decode_ctx, sizeof c);
    memcpy(&q, &b->prefill_pairs, sizeof q);
    uint64_t h = (c * 0x9e3779b97f4a7c15u) ^ (q * 0xc2b2ae3d27d4eb4fu) ^
                 ((uint64_t)stage * 0x165667b19e3779f9u);
    return &p->amemo[(h >> 40) % ATTN_MEMO];
}

mp_time serve_batch_time(const struct serve *s, int stage, const struct kernel_batch *b)
{
    struct serve_pricer *p = s->pricer;
    struct attn_memo *e = NULL;
    if (p->attention[stage]) {
        e = attn_find(s, stage, b);
        if (e->set && attn_same(e, stage, b)) return e->d;
    }
    /* Token and emit counts are whole numbers below the token budget. */
    size_t h = ((size_t)b->tokens * 40503u + (size_t)b->emits) % SERVE_MEMO;
    struct serve_memo *m = &p->memo[(size_t)stage * SERVE_MEMO + h];
    if (!m->set || m->tokens != b->tokens || m->emits != b->emits)
        *m = (struct serve_memo){ b->tokens, b->emits, stage_kernels(s, stage, b, KSERVE_TOKENS),
                                  true };
    double t = m->seconds;
    /* The attention part, priced anew each pass (decode members' KV grows
     * by a token a pass): kernels_serve_layer's KSERVE_ATTENTION kernels,
     * from shapes taken once, each distinct shape priced once a pass and
     * its costs added layer by layer in order (the same sum). */
    for (int i = s->layer_off[stage]; p->attention[stage] && i < s->layer_off[stage + 1]; i++) {
        int r = p->rep[i];
        if (r != i) {
            for (int j = 0; j < p->kn[r]; j++) t += p->kc[r][j];
            continue;
        }
        struct kernel k[2];
        p->kn[i] = kernels_serve_attention(&p->shape[i], b, k);
        for (int j = 0; j < p->kn[i]; j++) {
            struct calib_cost c;
            calib_kernel(&p->calib, &k[j], &c);
            t += p->kc[i][j] = c.busy + c.launch;
        }
    }
    /* The host's scheduling and sampling for a step run beside the GPU's
     * (an overlap scheduler), one pass at a time: stage 0 takes at least
     * that long per pass (every replica's first stage). */
    if (p->first[stage] && p->calib.host_s > t) t = p->calib.host_s;
    mp_time d = mp_time_from_s(t); /* saturates; the serving walk bound names the inputs */
    if (e) {
        attn_key(b, e->key);
        e->emits = b->emits;
        e->stage = stage;
        e->d = d;
        e->set = true;
    }
    return d;
}

mp_time serve_slot_time(const struct serve *s, int stage, const struct serve_slot *sl)
{
    return serve_batch_time(s, stage, &sl->b);
}

mp_time serve_stage_time(const struct serve *s, int stage, const struct serve_item *items,
                         int n)
{
    struct kernel_batch b = { 0 };
    for (int i = 0; i < n; i++)
        serve_batch_add(s, &b, items[i].tokens, items[i].past, items[i].decode, items[i].emits);
    return serve_batch_time(s, stage, &b);
}

/* Whether global stage g is the last of its replica (issue 19: replicas; a
 * shell without them is one chain). */
static bool last_of_replica(const struct serve *s, int g)
{
    if (!s->rep) return g == s->stages - 1;
    const struct serve_replica *R = &s->rep[s->stage_rep[g]];
    return g == R->stage0 + s->pool[R->pool].stages - 1;
}

double serve_hop_bytes(const struct serve *s, int stage, double tokens)
{
    if (last_of_replica(s, stage)) return 4 * tokens; /* token ids back to stage 0 */
    return tokens * s->pr.model.hidden * s->cfg.model.activation_bits / 8.0;
}

mp_time serve_hop_time(const struct serve *s, int stage, int tokens)
{
    /* A one-stage replica has no hop: latency 0, bandwidth infinite. */
    double b = serve_hop_bytes(s, stage, tokens);
    return mp_time_add(s->hop[stage], isinf(s->hop_bw[stage]) ? 0 : mp_time_from_ps(b / s->hop_bw[stage] * 1e12));
}

/* Routes of the hand-offs: s → s+1, and the last stage's return hop, priced
 * as the route back to its predecessor (one hop on a chain). */
void serve_build_hops(struct serve *s)
{
    int S = s->stages;
    s->hop = mp_xcalloc((size_t)S, sizeof *s->hop);
    s->hop_bw = mp_xcalloc((size_t)S, sizeof *s->hop_bw);
    s->hop_route_off = mp_xcalloc((size_t)S + 1, sizeof *s->hop_route_off);
    int cap = 0, n = 0, stack[64], *buf;
    for (int st = 0; st < S; st++) {
        s->hop_route_off[st] = n;
        s->hop_bw[st] = INFINITY;
        /* A replica's last stage returns its tokens over the route back to
         * its predecessor; a one-stage replica has no hop. */
        bool last = last_of_replica(s, st);
        bool alone = last && (st == 0 || last_of_replica(s, st - 1));
        if (alone) continue;
        int a = s->stage_chip[st], b = !last ? s->stage_chip[st + 1] : s->stage_chip[st - 1];
        int len = system_route_buf(&s->sys, a, b, stack, 64, &buf);
        s->hop[st] = system_route_time(&s->sys, buf, len, 0);
        for (int i = 0; i < len; i++) {
            double bw = s->sys.links[buf[i]].bw;
            if (bw < s->hop_bw[st]) s->hop_bw[st] = bw;
            if (!last) { /* the return hop's bytes are too few to hold a link */
                MP_GROW(s->hop_route, cap, n + 1);
                s->hop_route[n++] = buf[i];
            }
        }
        if (buf != stack) free(buf);
    }
    s->hop_route_off[S] = n;
}

