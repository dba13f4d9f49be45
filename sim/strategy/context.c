/* context.c — context parallelism: the causal geometry, the attention
 * kernel's price, each layer's core as pieces, the ring's transfers; see
 * context.h (and docs/context_parallel.md for the formulas). */
#include "context.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "hardware/calib.h"
#include "models/kernels.h"
#include "sim/io/config.h"

/* ---- the attention kernel ------------------------------------------------ */

double context_attention_flops(double batch, double q_tokens, double k_tokens, double causal,
                               const struct cp_heads *h)
{
    /* Today's convention (models/model_cost.c): a causal attention of s
     * tokens costs 2·b·s²·heads·(qk + v) forward, as if dense, over s²/2
     * unmasked pairs, i.e. 4·b·heads·(qk + v) per unmasked pair. */
    return 4.0 * batch * q_tokens * k_tokens * causal * h->heads * (h->qk_dim + h->v_dim);
}

mp_time context_attention_time(const struct cp_pricer *pr, double q_tokens, double k_tokens,
                               double causal, const struct cp_heads *h, bool backward)
{
    if (q_tokens <= 0 || k_tokens <= 0 || causal <= 0) return 0;
    double b = pr->batch, A = pr->act_bytes;
    double flops = context_attention_flops(b, q_tokens, k_tokens, causal, h);
    double q = q_tokens * h->heads, kv = k_tokens * h->kv_heads;
    /* FlashAttention's traffic: Q, K, V read and O written once; the
     * backward reads Q, K, V, O, dO and writes dQ, dK, dV. */
    double bytes = b * A * (q * h->qk_dim + kv * (h->qk_dim + h->v_dim) + q * h->v_dim);
    struct kernel k = { .kind = backward ? KERNEL_FLASH_BWD : KERNEL_FLASH_FWD,
                        .block = KBLOCK_MIXER, .part = KPART_MID, .name = "cp_attention",
                        .batch = 1, .causal = causal < 1, .seq = k_tokens,
                        .head_dim = (h->qk_dim + h->v_dim) / 2.0 };
    /* context_attention_flops counts a pair as the dense convention does
     * (twice FlashAttention's). */
    k.flops = flops / 2 * (backward ? 2.5 : 1);
    k.bytes = backward ? 2 * bytes : bytes;
    struct calib_cost c;
    calib_kernel(pr->calib, &k, &c);
    return mp_time_from_s(c.busy + c.launch); /* saturates; sim_run names the inputs */
}

/* ---- the causal geometry ----------------------------------------------- */

/* Chunk c of the 2·ranks held by `rank` as its k-th (k = 0, 1). */
static int chunk_of(int ranks, int rank, int k, bool zigzag)
{
    if (zigzag) return k == 0 ? rank : 2 * ranks - 1 - rank;
    return 2 * rank + k;
}

/* Unmasked share of query chunk a against key chunk b. */
static double pair(int a, int b)
{
    return b < a ? 1.0 : b == a ? 0.5 : 0.0;
}

int context_rank_blocks(int ranks, int rank, bool zigzag, struct cp_block *out)
{
    assert(ranks >= 1 && rank >= 0 && rank < ranks);
    for (int j = 0; j < ranks; j++) {
        int src = ((rank - j) % ranks + ranks) % ranks;
        double area = 0;
        bool q_used[2] = { false, false }, k_used[2] = { false, false };
        for (int qa = 0; qa < 2; qa++)
            for (int kb = 0; kb < 2; kb++) {
                double v = pair(chunk_of(ranks, rank, qa, zigzag), chunk_of(ranks, src, kb, zigzag));
                area += v;
                if (v > 0) q_used[qa] = k_used[kb] = true;
            }
        double q = q_used[0] + q_used[1], k = k_used[0] + k_used[1];
        out[j] = (struct cp_block){ .q_tokens = q, .k_tokens = k,
                                    .causal = q * k > 0 ? area / (q * k) : 0 };
    }
    return ranks;
}

double context_rank_work(int ranks, int rank, bool zigzag)
{
    struct cp_block *b = mp_xmalloc((size_t)ranks * sizeof *b);
    context_rank_blocks(ranks, rank, zigzag, b);
    double work = 0;
    for (int j = 0; j < ranks; j++) work += b[j].q_tokens * b[j].k_tokens * b[j].causal;
    free(b);
    return work;
}

/* ---- the plan ------------------------------------------------------------ */

static int shape_index(const struct model *m, int layer)
{
    return m->layer[layer].attn == ATTN_MLA ? 1 : 0;
}

bool context_layer_applies(const struct cp_plan *p, int layer)
{
    const struct layer *L = &p->model->layer[layer];
    return p->cp > 1 && L->kind == LAYER_DECODER &&
           (L->mixer == MIXER_ATTENTION || L->mixer == MIXER_MLA);
}

/* Route time of `bytes` from every chip of the ring to the next: the
 * slowest pair sets the pace of a step. */
static mp_time shift_time(const struct system *sys, const int *chips, int n, double bytes)
{
    mp_time worst = 0;
    int stack[256], *links;
    for (int i = 0; i < n; i++) {
        int nl = system_route_buf(sys, chips[i], chips[(i + 1) % n], stack, 256, &links);
        mp_time t = system_route_time(sys, links, nl, bytes);
        if (links != stack) free(links);
        if (t > worst) worst = t;
    }
    return worst;
}

/* Memo of block times: a plan prices a handful of distinct shapes. */
struct memo {
    struct { double q, k, c; bool bwd; mp_time t; } e[8];
    int n;
};

static mp_time block_time(struct memo *mo, const struct cp_pricer *pr, const struct cp_heads *h,
                          double q, double k, double c, bool bwd)
{
    for (int i = 0; i < mo->n; i++)
        if (mo->e[i].q == q && mo->e[i].k == k && mo->e[i].c == c && mo->e[i].bwd == bwd)
            return mo->e[i].t;
    mp_time t = context_attention_time(pr, q, k, c, h, bwd);
    if (mo->n < 8) {
        mo->e[mo->n].q = q, mo->e[mo->n].k = k, mo->e[mo->n].c = c;
        mo->e[mo->n].bwd = bwd, mo->e[mo->n].t = t;
        mo->n++;
    }
    return t;
}

static const char *kind_name(int kind)
{
    return kind == CP_ULYSSES ? "ulysses" : kind == CP_HYBRID ? "hybrid" : "ring";
}

/* Heads one rank holds after TP and the all-to-all (context.h). */
static int shape_heads(const struct cp_plan *p, const struct cp_input *in, int attn,
                       struct cp_heads *h, double *kv_tp, struct mp_error *err)
{
    const struct model *m = in->model;
    int tp = p->tp, u = p->ulysses;
    if (m->heads % tp != 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "parallel.cp = %d: the model's %d attention heads do not divide over "
                       "parallel.tp = %d", p->cp, m->heads, tp);
    int ht = m->heads / tp;
    if (ht % u != 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "parallel.cp_kind = %s with an all-to-all over %d ranks: the model's %d "
                       "attention heads leave %d per TP rank (parallel.tp = %d), which %d does "
                       "not divide (Ulysses gives each rank whole heads)", kind_name(p->kind), u,
                       m->heads, ht, tp, u);
    if (attn == ATTN_MLA) {
        /* MLA's keys and values are per head once up-projected. */
        *h = (struct cp_heads){ .heads = (double)ht / u, .kv_heads = (double)ht / u,
                                .qk_dim = m->qk_nope_head_dim + m->qk_rope_head_dim,
                                .v_dim = m->v_head_dim };
        *kv_tp = ht;
        return MP_OK;
    }
    /* Fewer K/V heads than TP ranks: each keeps a replica of one
     * (model_cost.c's rule); fewer than the all-to-all's ranks: replicated
     * up to one per rank first (DeepSpeed-Ulysses), so either the degree
     * divides them or they divide the degree. */
    int kvt = m->kv_heads >= tp ? m->kv_heads / tp : 1;
    if (kvt % u != 0 && u % kvt != 0)
        return mp_fail(err, MP_ERR_INPUT,
                       "parallel.cp_kind = %s with an all-to-all over %d ranks: the model's %d "
                       "K/V heads leave %d per TP rank (parallel.tp = %d); expected a multiple "
                       "or a divisor of %d (K/V heads are split, or replicated to one per rank)",
                       kind_name(p->kind), u, m->kv_heads, kvt, tp, u);
    *h = (struct cp_heads){ .heads = (double)ht / u,
                            .kv_heads = kvt >= u ? (double)kvt / u : 1.0,
                            .qk_dim = m->head_dim, .v_dim = m->head_dim };
    *kv_tp = kvt >= u ? kvt : u;  /* K/V heads sent by the all-to-all */
    return MP_OK;
}

static int build_shape(struct cp_plan *p, const struct cp_input *in, int attn, int layer,
                       struct cp_shape *sh, struct mp_error *err)
{
    const struct model *m = in->model;
    const struct cost_params *cp = in->cp;
    double kv_tp = 0;
    int rc = shape_heads(p, in, attn, &sh->h, &kv_tp, err);
    if (rc) return rc;
    double s = cp->seq_len, b = cp->micro_batch;
    double A = (cp->activation_bits ? cp->activation_bits : 16) / 8.0;
    double local = s / p->cp, ht = (double)m->heads / p->tp;
    int r = p->ring, qk = sh->h.qk_dim, v = sh->h.v_dim;
    sh->kv_block_bytes = (s / r) * b * sh->h.kv_heads * (qk + v) * A;
    sh->a2a_qkv_bytes = local * b * (ht * qk + kv_tp * (qk + v)) * A;
    sh->a2a_o_bytes = local * b * ht * v * A;

    struct cp_pricer pr = { .calib = in->calib, .batch = b, .act_bytes = A };
    (void)layer;
    /* The zigzag split's blocks, in chunks of s / (2·ring) tokens
     * (context_rank_blocks gives them for any rank; the tests hold these
     * against it): step 0 is a rank's own two chunks, q = k = 2 with half
     * the pairs unmasked; at step j ≥ 1 a rank i ≥ j attends to an earlier
     * rank's keys (both its query chunks against their first key chunk:
     * q = 2, k = 1) and a rank i < j to a later rank's (its second query
     * chunk against both: q = 1, k = 2), wholly unmasked. Both kinds occur
     * at every step j ≥ 1, so each such step takes the slower of the two;
     * the FLOPs are the same, 2 chunk pairs a step, on every rank. */
    double c = s / (2.0 * r);
    struct memo mo = { .n = 0 };
    sh->step_f = mp_xcalloc((size_t)r, sizeof *sh->step_f);
    sh->step_b = mp_xcalloc((size_t)r, sizeof *sh->step_b);
    static const struct cp_block own = { 2, 2, 0.5 }, earlier = { 2, 1, 1 }, later = { 1, 2, 1 };
    for (int j = 0; j < r; j++) {
        for (int kind = 0; kind < (j == 0 ? 1 : 2); kind++) {
            const struct cp_block *bk = j == 0 ? &own : kind == 0 ? &earlier : &later;
            double q = bk->q_tokens * c, k = bk->k_tokens * c;
            mp_time tf = block_time(&mo, &pr, &sh->h, q, k, bk->causal, false);
            mp_time tb = block_time(&mo, &pr, &sh->h, q, k, bk->causal, true);
            if (tf > sh->step_f[j]) sh->step_f[j] = tf;
            if (tb > sh->step_b[j]) sh->step_b[j] = tb;
        }
        /* Rank 0's own block list (a later rank's keys at every j ≥ 1). */
        const struct cp_block *b0 = j == 0 ? &own : &later;
        sh->core_flops += context_attention_flops(b, b0->q_tokens * c, b0->k_tokens * c,
                                                  b0->causal, &sh->h);
    }
    /* Saturating: a block priced past MP_TIME_HUGE (a seq_len of 10^9) stays
     * there, for sim_run's horizon check to report (common.h). */
    for (int j = 0; j < r; j++) {
        sh->core_f = mp_time_add(sh->core_f, sh->step_f[j]);
        sh->core_b = mp_time_add(sh->core_b, sh->step_b[j]);
    }

    /* Each stage's groups, as the lanes place them (context.h's chip order). */
    sh->ring_t = mp_xcalloc((size_t)p->stages * 2, sizeof *sh->ring_t);
    sh->a2a_t = mp_xcalloc((size_t)p->stages * 2, sizeof *sh->a2a_t);
    int n = r > p->ulysses ? r : p->ulysses;
    int *chips = mp_xmalloc((size_t)n * sizeof *chips);
    for (int st = 0; st < p->stages; st++) {
        if (r > 1) {
            for (int k = 0; k < r; k++) chips[k] = in->lane[st] + p->tp * p->ulysses * k;
            sh->ring_t[st * 2] = shift_time(in->sys, chips, r, sh->kv_block_bytes);
            sh->ring_t[st * 2 + 1] = shift_time(in->sys, chips, r, 2 * sh->kv_block_bytes);
        }
        if (p->ulysses > 1) {
            for (int a = 0; a < p->ulysses; a++) chips[a] = in->lane[st] + p->tp * a;
            struct coll_spec c = { .op = COLL_ALL_TO_ALL, .algo = COLL_AUTO, .chips = chips,
                                   .n = p->ulysses, .bytes = sh->a2a_qkv_bytes };
            sh->a2a_t[st * 2] = collective_time(in->sys, &c);
            c.bytes = sh->a2a_o_bytes;
            sh->a2a_t[st * 2 + 1] = collective_time(in->sys, &c);
        }
    }
    free(chips);
    sh->present = true;
    return MP_OK;
}

/* Hybrid's default all-to-all degree: the most CP ranks that share a node
 * (CP ranks are tp chips apart) and split the heads evenly. */
static int auto_ulysses(const struct cp_input *in, int cp, int tp)
{
    int per_node = in->sys->chips_per_node / tp, ht = in->model->heads / tp, best = 1;
    for (int u = 1; u <= cp; u++)
        if (cp % u == 0 && u <= per_node && ht > 0 && ht % u == 0) best = u;
    return best;
}

int context_plan_build(struct cp_plan *p, const struct cp_input *in, struct mp_error *err)
{
    memset(p, 0, sizeof *p);
    const struct model *m = in->model;
    p->cp = in->cp->cp > 1 ? in->cp->cp : 1;
    p->tp = in->cp->tp;
    p->kind = in->kind;
    p->stages = in->stages;
    p->model = m;
    /* Whole-sequence softmax attention (MHA, GQA, MQA, MLA) is what the
     * ring and the all-to-all serve; an MLP-only layer has nothing to
     * exchange. Recurrent mixers pass state from rank to rank and windowed
     * ones need only the last window's K/V: neither is modelled. */
    for (int l = 0; l < m->n_layers; l++) {
        const struct layer *L = &m->layer[l];
        if (L->kind != LAYER_DECODER || L->mixer == MIXER_NONE || L->mixer == MIXER_ATTENTION ||
            L->mixer == MIXER_MLA)
            continue;
        bool windowed = L->mixer == MIXER_SLIDING || L->mixer == MIXER_CHUNKED;
        return mp_fail(err, MP_ERR_INPUT,
                       "parallel.cp = %d: model %s has %s layers (%s, decoder %d); their context "
                       "parallelism %s, which mpsim does not model: expected parallel.cp = 1",
                       p->cp, m->name, windowed ? "windowed-attention" : "linear-attention",
                       mixer_info(L->mixer)->name, L->decoder_index,
                       windowed ? "exchanges only the last window's K/V"
                                : "passes recurrent state from rank to rank");
    }
    p->ulysses = in->kind == CP_ULYSSES ? p->cp
                 : in->kind == CP_HYBRID ? (in->ulysses > 0 ? in->ulysses
                                                            : auto_ulysses(in, p->cp, p->tp))
                                         : 1;
    p->ring = p->cp / p->ulysses;
    for (int l = 0; l < m->n_layers; l++) {
        if (!context_layer_applies(p, l)) continue;
        int k = shape_index(m, l);
        if (p->shape[k].present) continue;
        int rc = build_shape(p, in, m->layer[l].attn, l, &p->shape[k], err);
        if (rc) {
            context_plan_release(p);
            return rc;
        }
    }
    return MP_OK;
}

void context_plan_release(struct cp_plan *p)
{
    for (int k = 0; k < 2; k++) {
        free(p->shape[k].step_f);
        free(p->shape[k].step_b);
        free(p->shape[k].ring_t);
        free(p->shape[k].a2a_t);
    }
    memset(p, 0, sizeof *p);
}

/* ---- a layer's core as pieces ------------------------------------------ */

int context_max_pieces(const struct cp_plan *p)
{
    return 2 * p->ring + 4;
}

static int piece_comm(struct cp_piece *out, int *n, enum cp_group g, double bytes, mp_time t)
{
    out[*n] = (struct cp_piece){ .duration = t, .bytes = bytes, .wait = -1, .is_comm = 1,
                                 .group = (uint8_t)g, .blocking = 1 };
    return (*n)++;
}

static void piece_compute(struct cp_piece *out, int *n, mp_time t, int wait)
{
    out[*n] = (struct cp_piece){ .duration = t, .wait = (int16_t)wait };
    (*n)++;
}

static const struct cp_shape *shape_of(const struct cp_plan *p, int layer)
{
    const struct cp_shape *sh = &p->shape[shape_index(p->model, layer)];
    assert(sh->present);
    return sh;
}

int context_core(const struct cp_plan *p, int stage, int layer, bool backward,
                 struct cp_piece *out)
{
    assert(context_layer_applies(p, layer) && stage >= 0 && stage < p->stages);
    const struct cp_shape *sh = shape_of(p, layer);
    const mp_time *rt = sh->ring_t + stage * 2, *at = sh->a2a_t + stage * 2;
    int n = 0, a2a = -1, r = p->ring, prev = -1;
    double kv = sh->kv_block_bytes;
    /* Sequence-sharded to head-sharded: Q, K, V forward, dO backward. */
    if (p->ulysses > 1)
        a2a = backward ? piece_comm(out, &n, CPG_A2A, sh->a2a_o_bytes, at[1])
                       : piece_comm(out, &n, CPG_A2A, sh->a2a_qkv_bytes, at[0]);
    const mp_time *step = backward ? sh->step_b : sh->step_f;
    for (int j = 0; j < r; j++) {
        /* Step j's transfer starts with block j's attention: forward the
         * K/V block for step j + 1; backward also the dK/dV accumulated on
         * block j − 1 (the owner keeps block 0's own gradient), so each
         * travels cp − 1 hops. */
        double bytes = 0;
        if (j < r - 1) bytes += kv;
        if (backward && j >= 2) bytes += kv;
        int c = bytes > 0 ? piece_comm(out, &n, CPG_RING, bytes, rt[bytes > kv ? 1 : 0]) : -1;
        piece_compute(out, &n, step[j], j == 0 ? a2a : prev);
        prev = c;
    }
    /* The last block's dK/dV go home before the projections' backward. */
    if (backward && r > 1) piece_comm(out, &n, CPG_RING, kv, rt[0]);
    /* And back: the output forward, dQ, dK, dV backward. */
    if (p->ulysses > 1 && backward) piece_comm(out, &n, CPG_A2A, sh->a2a_qkv_bytes, at[0]);
    else if (p->ulysses > 1) piece_comm(out, &n, CPG_A2A, sh->a2a_o_bytes, at[1]);
    assert(n <= context_max_pieces(p));
    return n;
}

mp_time context_core_time(const struct cp_plan *p, int layer, bool backward)
{
    const struct cp_shape *sh = shape_of(p, layer);
    return backward ? sh->core_b : sh->core_f;
}

double context_core_flops(const struct cp_plan *p, int layer)
{
    return shape_of(p, layer)->core_flops;
}

double context_buffer_bytes(const struct cp_plan *p, int layer, bool backward)
{
    const struct cp_shape *sh = shape_of(p, layer);
    double bytes = 0;
    if (p->ring > 1) bytes += (backward ? 4 : 2) * sh->kv_block_bytes;
    if (p->ulysses > 1) bytes += sh->a2a_qkv_bytes + sh->a2a_o_bytes;
    return bytes;
}

double context_sent_bytes(const struct cp_plan *p, int layer, bool backward)
{
    struct cp_piece *pc = mp_xmalloc((size_t)context_max_pieces(p) * sizeof *pc);
    int n = context_core(p, 0, layer, backward, pc);
    double sent = 0, u = p->ulysses;
    for (int i = 0; i < n; i++)
        if (pc[i].is_comm) sent += pc[i].group == CPG_A2A ? pc[i].bytes * (u - 1) / u : pc[i].bytes;
    free(pc);
    return sent;
}

/* ---- detailed fidelity ---------------------------------------------------- */

int context_add_shift(struct taskgraph *g, const struct system *sys, const int *chips, int n,
                      double bytes, int dep, int mb, int stage)
{
    assert(n >= 2);
    int own = -1, into = -1;
    for (int i = 0; i < n; i++) {
        int src = chips[i], dst = chips[(i + 1) % n];
        int stack[256], *links;
        int nl = system_route_buf(sys, src, dst, stack, 256, &links);
        struct op o = tg_op(OP_TRANSFER, src, STREAM_COMM, TAG_SEND,
                            system_route_time(sys, links, nl, bytes));
        o.bytes = bytes;
        o.comm = COMM_CP;
        o.mb = mb;
        o.stage = stage;
        int id = tg_add_transfer(g, &o, links, nl);
        if (links != stack) free(links);
        if (dep >= 0) tg_dep(g, dep, id);
        if (i == 0) own = id;
        if (i == n - 1) into = id;
    }
    struct op j = tg_op(OP_MEMORY, chips[0], STREAM_COMM, TAG_SEND, 0);
    j.comm = COMM_CP;
    j.mb = mb;
    j.stage = stage;
    int id = tg_add(g, &j);
    tg_dep(g, own, id);
    tg_dep(g, into, id);
    return id;
}
