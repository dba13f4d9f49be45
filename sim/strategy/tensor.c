/* tensor.c — TP, SP and TSP passes as segments; see tensor.h. */
#include "tensor.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/io/config.h"
#include "experts.h"

/* Building one pass. `pending` is the pass's latest collective that the next
 * compute must wait for (-1 none). */
struct builder {
    struct tensor_plan *p;
    const struct tensor_input *in;
    int stage, start;
    int pending;
    int prefetch;   /* TSP: comm segment gathering the next layer's weights */
    /* Fast-time cache: collectives of one stage repeat a handful of sizes. */
    struct cached { uint8_t op; double bytes; mp_time t; } cache[8];
    int n_cache;
};

static struct tp_seg *push(struct builder *b)
{
    struct tensor_plan *p = b->p;
    MP_GROW(p->seg, p->cap_seg, p->n_seg + 1);
    struct tp_seg *s = &p->seg[p->n_seg++];
    memset(s, 0, sizeof *s);
    s->wait = -1;
    s->grad_layer = -1;
    return s;
}

static int here(const struct builder *b) { return b->p->n_seg - b->start; }

/* A compute piece. `needs` says it needs the pending collective's result;
 * pieces merge with the one before when nothing separates them. */
static void compute(struct builder *b, mp_time d, bool needs, int grad_layer)
{
    int wait = needs ? b->pending : -1;
    if (needs) b->pending = -1;
    if (d <= 0 && grad_layer < 0) return;
    if (here(b) > 0) {
        struct tp_seg *prev = &b->p->seg[b->p->n_seg - 1];
        if (!prev->is_comm && prev->grad_layer < 0 && wait < 0 && !prev->ep_role) {
            prev->duration = mp_time_add(prev->duration, d);
            prev->grad_layer = (int32_t)grad_layer;
            return;
        }
    }
    struct tp_seg *s = push(b);
    s->duration = d;
    s->wait = (int32_t)wait;
    s->grad_layer = (int32_t)grad_layer;
}

/* A collective of the stage's group, issued when the compute before it ends.
 * `blocking`: the next compute waits for it. Returns its index. */
static int comm(struct builder *b, enum coll_op op, double bytes, bool blocking)
{
    struct tensor_plan *p = b->p;
    if (p->tp <= 1 || bytes <= 0) return -1;
    mp_time t = -1;
    for (int i = 0; i < b->n_cache; i++)
        if (b->cache[i].op == op && b->cache[i].bytes == bytes) t = b->cache[i].t;
    if (t < 0) {
        struct coll_spec c = { .op = op, .algo = p->algo, .chips = p->group + b->stage * p->tp,
                               .n = p->tp, .bytes = bytes };
        t = collective_time(b->in->sys, &c);
        if (b->n_cache < 8) b->cache[b->n_cache++] = (struct cached){ (uint8_t)op, bytes, t };
    }
    int idx = here(b);
    struct tp_seg *s = push(b);
    s->is_comm = 1;
    s->op = (uint8_t)op;
    s->bytes = bytes;
    s->duration = t;
    s->blocking = blocking;
    if (blocking) b->pending = idx;
    return idx;
}

/* A segment of expert parallelism (experts.h): its duration is the
 * microbatch's, filled in by the pipeline. Pushed even when it may come to
 * zero, so the dependency it carries is never lost. A comm segment is
 * blocking; a compute segment waits for the pending one when `needs`. */
static void ep_seg(struct builder *b, enum ep_role role, int layer, bool needs)
{
    bool is_comm = experts_role_is_comm(role);
    int wait = !is_comm && needs ? b->pending : -1;
    if (!is_comm && needs) b->pending = -1;
    int idx = here(b);
    struct tp_seg *s = push(b);
    s->ep_role = (uint8_t)role;
    s->ep_layer = (int32_t)layer;
    s->wait = (int32_t)wait;
    if (is_comm) {
        s->is_comm = 1;
        s->op = COLL_ALL_TO_ALL;
        s->blocking = 1;
        b->pending = idx;
    }
}

/* Share of a decoder's forward FLOPs in attention (projections and core);
 * the rest is the MLP. Sizes the compute on each side of a collective. */
static double attn_share(const struct model *m, int layer, const struct layer_cost *lc,
                         const struct cost_params *cp)
{
    const struct layer *L = &m->layer[layer];
    /* With EP the routed experts are priced apart (experts.h). */
    double routed = cp->ep > 1 ? 0 : (double)m->experts_per_token * m->moe_intermediate;
    double width = L->moe ? routed + m->shared_intermediate : m->intermediate;
    double mlp = 2.0 * cp->seq_len * cp->micro_batch * (m->gated_mlp ? 3 : 2) * m->hidden * width / cp->tp;
    double a = lc->flops_f > 0 ? 1.0 - mlp / lc->flops_f : 0.5;
    return a < 0.05 ? 0.05 : a > 0.95 ? 0.95 : a;
}

struct layer_times { mp_time f, b, w, rc; double a, tok_bytes, kv_bytes, w_bytes, router; };

static void layer_times(const struct builder *b, int l, struct layer_times *t)
{
    const struct tensor_input *in = b->in;
    const struct model *m = in->model;
    struct layer_cost lc;
    model_layer_cost(m, l, in->cp, &lc);
    double A = (in->cp->activation_bits ? in->cp->activation_bits : 16) / 8.0;
    double W = (in->cp->weight_bits ? in->cp->weight_bits : 16) / 8.0;
    double tok = (double)in->cp->seq_len * in->cp->micro_batch;
    double gemm = 2.0 * tok * m->hidden * (m->intermediate > m->hidden ? m->intermediate : m->hidden) /
                  in->cp->tp;
    /* Memory-bound kernels touch what a layer would stash with no
     * recompute; a full recompute runs them again in the backward. */
    struct cost_params none = *in->cp;
    none.recompute = RECOMPUTE_NONE;
    struct layer_cost ln;
    model_layer_cost(m, l, &none, &ln);
    double elem = m->layer[l].kind == LAYER_DECODER ? ln.act_bytes : 0;
    double elem_b = in->cp->recompute == RECOMPUTE_FULL ? 2 * elem : elem;
    t->f = in->op_time(in->op_ctx, lc.flops_f, lc.bytes_f, gemm, elem);
    mp_time ball = in->op_time(in->op_ctx, lc.flops_b + lc.flops_recompute, lc.bytes_b, gemm, elem_b);
    double share = lc.flops_recompute / (lc.flops_b + lc.flops_recompute + 1e-300);
    t->rc = mp_time_scale(ball, share);
    t->b = ball - t->rc;
    t->w = in->op_time(in->op_ctx, lc.flops_w, lc.bytes_w, gemm, 0);
    t->a = m->layer[l].kind == LAYER_DECODER ? attn_share(m, l, &lc, in->cp) : 0.5;
    t->tok_bytes = tok * m->hidden * A;               /* s·b·h: one TP collective's buffer */
    t->kv_bytes = 2.0 * tok * m->kv_heads * m->head_dim * A;
    t->w_bytes = m->layer[l].params * W;              /* the layer's full weights */
    /* Of the FFN left beside the routed experts, the router's share: it
     * must finish before the dispatch; the shared experts need not. */
    double shared = m->shared_intermediate ? (m->gated_mlp ? 3.0 : 2.0) * m->shared_intermediate : 0;
    t->router = m->layer[l].moe ? m->experts / (m->experts + shared) : 0;
}

/* A MoE decoder under expert parallelism, forward (tensor.h):
 *   [AG] attention [RS] router → dispatch ‖ shared experts → routed experts
 *   → combine, AG/RS only with a TP group (sequence-parallel attention). */
static void ep_forward(struct builder *b, int l, const struct layer_times *t)
{
    mp_time attn = mp_time_scale(t->f, t->a), rest = t->f - attn;
    mp_time router = mp_time_scale(rest, t->router);
    comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
    compute(b, attn, true, -1);
    comm(b, COLL_REDUCE_SCATTER, t->tok_bytes, true);
    compute(b, router, true, -1);
    ep_seg(b, EPR_DISPATCH, l, false);
    compute(b, rest - router, false, -1);
    ep_seg(b, EPR_EXPERTS_F, l, true);
    ep_seg(b, EPR_COMBINE, l, false);
}

/* Backward: gradient all-to-all (the combine's), routed experts' input (and
 * with BW weight) gradients, gradient all-to-all (the dispatch's), router
 * and shared experts, then attention as Megatron's SP backward. */
static void ep_backward(struct builder *b, int l, const struct layer_times *t, bool with_w,
                        bool overlap, bool split)
{
    int gl = split ? l : -1;
    if (t->rc > 0) compute(b, t->rc, true, -1);
    mp_time attn_b = mp_time_scale(t->b, t->a), mlp_b = t->b - attn_b;
    mp_time attn_w = mp_time_scale(t->w, t->a), mlp_w = t->w - attn_w;
    ep_seg(b, EPR_GRAD, l, false);
    ep_seg(b, with_w ? EPR_EXPERTS_BW : EPR_EXPERTS_B, l, true);
    ep_seg(b, EPR_GRAD, l, false);
    compute(b, mlp_b, true, -1);
    if (with_w) compute(b, mlp_w, false, -1);
    comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
    compute(b, attn_b, true, -1);
    comm(b, COLL_REDUCE_SCATTER, t->tok_bytes, true);
    if (with_w) compute(b, attn_w, !overlap, gl);
}

static void megatron_forward(struct builder *b, int l, const struct layer_times *t, bool sp)
{
    const struct layer *L = &b->in->model->layer[l];
    enum coll_op before = COLL_ALL_GATHER, after = sp ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE;
    if (L->kind == LAYER_EMBEDDING) {
        compute(b, t->f, true, -1);
        comm(b, after, t->tok_bytes, true);
    } else if (L->kind == LAYER_LM_HEAD) {
        if (sp) comm(b, before, t->tok_bytes, true);
        compute(b, t->f, true, -1);
    } else {
        mp_time attn = mp_time_scale(t->f, t->a);
        if (sp) comm(b, before, t->tok_bytes, true);
        compute(b, attn, true, -1);
        comm(b, after, t->tok_bytes, true);
        if (sp) comm(b, before, t->tok_bytes, true);
        compute(b, t->f - attn, true, -1);
        comm(b, after, t->tok_bytes, true);
    }
}

/* Backward of one layer. `w` > 0 puts the weight-gradient pieces in (BW);
 * they need the block's collective unless `overlap`. */
static void megatron_backward(struct builder *b, int l, const struct layer_times *t, bool sp,
                              bool with_w, bool overlap, bool split)
{
    const struct layer *L = &b->in->model->layer[l];
    int gl = split ? l : -1;
    enum coll_op dgrad_out = sp ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE;
    if (L->kind != LAYER_DECODER) {
        compute(b, t->b + t->rc, true, -1);
        if (L->kind == LAYER_LM_HEAD) comm(b, dgrad_out, t->tok_bytes, true);
        if (with_w) compute(b, t->w, !overlap, gl);
        return;
    }
    if (t->rc > 0 && b->in->cp->recompute == RECOMPUTE_FULL) {
        /* Full recompute reruns the forward, collectives included. */
        struct layer_times r = *t;
        r.f = t->rc;
        megatron_forward(b, l, &r, sp);
    } else if (t->rc > 0) {
        compute(b, t->rc, true, -1);
    }
    mp_time attn_b = mp_time_scale(t->b, t->a), mlp_b = t->b - attn_b;
    mp_time attn_w = mp_time_scale(t->w, t->a), mlp_w = t->w - attn_w;
    if (sp) comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
    compute(b, mlp_b, true, -1);
    comm(b, dgrad_out, t->tok_bytes, true);
    if (with_w) compute(b, mlp_w, !overlap, -1);
    if (sp) comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
    compute(b, attn_b, true, -1);
    comm(b, dgrad_out, t->tok_bytes, true);
    if (with_w) compute(b, attn_w, !overlap, gl);
}

/* TSP: weights gathered one layer ahead, K/V exchanged along the sequence. */
static void tsp_layer(struct builder *b, int l, int next, const struct layer_times *t,
                      enum tp_pass_kind k, bool split, int *gathered)
{
    const struct tensor_input *in = b->in;
    const struct layer *L = &in->model->layer[l];
    bool fwd = k == TPP_F, dgrad = k == TPP_B || k == TPP_BW || k == TPP_BW_LAST;
    bool wgrad = k == TPP_W || k == TPP_W_LAST || k == TPP_BW || k == TPP_BW_LAST;
    if (fwd || dgrad) {
        if (*gathered == l) b->pending = b->prefetch; /* gathered during the layer before */
        else comm(b, COLL_ALL_GATHER, t->w_bytes, true);
    }
    mp_time main = fwd ? t->f : dgrad ? t->b + t->rc : 0;
    mp_time first = mp_time_scale(main, 0.5 * t->a);
    compute(b, first, true, -1);
    if (L->kind == LAYER_DECODER && (fwd || dgrad))
        comm(b, fwd ? COLL_ALL_GATHER : COLL_REDUCE_SCATTER, t->kv_bytes, true);
    if (next >= 0 && (fwd || dgrad)) {
        double W = (in->cp->weight_bits ? in->cp->weight_bits : 16) / 8.0;
        b->prefetch = comm(b, COLL_ALL_GATHER, in->model->layer[next].params * W, false);
        *gathered = next;
    }
    compute(b, main - first, true, -1);
    if (wgrad) {
        compute(b, t->w, false, split ? l : -1);
        comm(b, COLL_REDUCE_SCATTER, t->w_bytes, false);
    }
}

static void build_pass(struct builder *b, enum tp_pass_kind k)
{
    const struct tensor_input *in = b->in;
    struct tensor_plan *p = b->p;
    int st = b->stage, lo = in->layer_first[st], hi = in->layer_last[st];
    bool split = (k == TPP_W_LAST || k == TPP_BW_LAST) && in->split_last;
    struct tp_pass *pass = &p->pass[st * N_TP_PASSES + k];
    b->start = p->n_seg;
    b->pending = -1;
    pass->off = p->n_seg;
    pass->n = 0;
    pass->extra_bytes = 0;
    if (p->tp <= 1 && !split && !in->ep) return;
    bool sp = in->cp->sp, fwd = k == TPP_F;
    bool with_w = k == TPP_BW || k == TPP_BW_LAST, only_w = k == TPP_W || k == TPP_W_LAST;
    int gathered = -1;
    double max_w = 0, max_kv = 0;
    for (int i = 0; i <= hi - lo; i++) {
        int l = fwd ? lo + i : hi - i;
        int next = fwd ? (l < hi ? l + 1 : -1) : (l > lo ? l - 1 : -1);
        struct layer_times t;
        layer_times(b, l, &t);
        if (t.w_bytes > max_w) max_w = t.w_bytes;
        if (t.kv_bytes > max_kv) max_kv = t.kv_bytes;
        bool ep_moe = in->ep && in->model->layer[l].moe;
        if (in->tsp && p->tp > 1) {
            tsp_layer(b, l, next, &t, k, split, &gathered);
        } else if (ep_moe && fwd) {
            ep_forward(b, l, &t);
        } else if (ep_moe && only_w) {
            ep_seg(b, EPR_EXPERTS_W, l, false);
            compute(b, t.w, false, split ? l : -1);
        } else if (ep_moe) {
            ep_backward(b, l, &t, with_w, in->overlap, split);
        } else if (fwd) {
            megatron_forward(b, l, &t, sp);
        } else if (only_w) {
            compute(b, t.w, false, split ? l : -1);
        } else {
            megatron_backward(b, l, &t, sp, with_w, in->overlap, split);
        }
    }
    if (in->tsp && p->tp > 1 && !only_w) pass->extra_bytes = 2 * max_w + max_kv;
    pass->n = p->n_seg - pass->off;
}

void tensor_plan_build(struct tensor_plan *p, const struct tensor_input *in)
{
    memset(p, 0, sizeof *p);
    p->tp = in->cp->tp;
    p->stages = in->stages;
    p->fidelity = in->fidelity;
    p->algo = in->algo;
    p->group = mp_xmalloc((size_t)in->stages * p->tp * sizeof *p->group);
    p->pass = mp_xcalloc((size_t)in->stages * N_TP_PASSES, sizeof *p->pass);
    /* TP ranks are the fastest-varying chips (Megatron's order). */
    for (int st = 0; st < in->stages; st++)
        for (int r = 0; r < p->tp; r++) p->group[st * p->tp + r] = in->lane[st] + r;
    for (int st = 0; st < in->stages; st++) {
        struct builder b = { .p = p, .in = in, .stage = st };
        for (int k = 0; k < N_TP_PASSES; k++) build_pass(&b, (enum tp_pass_kind)k);
    }
}

bool tensor_degree_ok(const struct model *m, int tp)
{
    if (tp <= 1) return true;
    if (m->heads > 0 && m->heads % tp) return false;
    return m->kv_heads <= 0 || m->kv_heads % tp == 0 || tp % m->kv_heads == 0;
}

int tensor_check_degree(const struct model *m, int tp, const char *where, struct mp_error *err)
{
    if (tensor_degree_ok(m, tp)) return MP_OK;
    char ok[128] = "";
    int n = 0;
    for (int d = 1; d <= m->heads && n < (int)sizeof ok - 16; d++)
        if (tensor_degree_ok(m, d)) n += snprintf(ok + n, sizeof ok - (size_t)n, "%s%d", n ? ", " : "", d);
    if (m->heads > 0 && m->heads % tp)
        return mp_fail(err, MP_ERR_INPUT, "%s: parallel.tp = %d does not divide model %s's %d "
                       "attention heads: expected one of %s", where, tp, m->name, m->heads, ok);
    return mp_fail(err, MP_ERR_INPUT, "%s: parallel.tp = %d neither divides model %s's %d KV "
                   "heads nor is a multiple of them: expected one of %s", where, tp, m->name,
                   m->kv_heads, ok);
}

void tensor_plan_release(struct tensor_plan *p)
{
    free(p->group);
    free(p->pass);
    free(p->seg);
    memset(p, 0, sizeof *p);
}

const struct tp_pass *tensor_pass(const struct tensor_plan *p, int stage, enum tp_pass_kind k)
{
    assert(stage >= 0 && stage < p->stages);
    return &p->pass[stage * N_TP_PASSES + k];
}

struct coll_spec tensor_coll(const struct tensor_plan *p, int stage, const struct tp_seg *s)
{
    assert(s->is_comm);
    return (struct coll_spec){ .op = (enum coll_op)s->op, .algo = p->algo,
                               .chips = p->group + stage * p->tp, .n = p->tp, .bytes = s->bytes,
                               .comm = COMM_TP, .mb = -1, .stage = stage };
}
