/* tensor.c — TP, SP and TSP passes as segments; see tensor.h. */
#include "tensor.h"

#include <assert.h>
#include <stdio.h>
#include <math.h>
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
    /* An empty piece keeps the pending collective for the next one. */
    if (d <= 0 && grad_layer < 0) return;
    int wait = needs ? b->pending : -1;
    if (needs) b->pending = -1;
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

/* A compute piece that waits for comm segment `wait` of the pass (not the
 * pending one, which stays pending for the compute after it). */
static void compute_after(struct builder *b, mp_time d, int wait, int grad_layer)
{
    if (d <= 0 && grad_layer < 0) return;
    struct tp_seg *s = push(b);
    s->duration = d;
    s->wait = (int32_t)wait;
    s->grad_layer = (int32_t)grad_layer;
}

/* Compute that runs beside collective `comm_idx` of the pass: the two
 * share the chip (the collective's kernels take SMs and memory bandwidth),
 * so of the shorter only the share `overlap_hidden` (hardware/kernels.csv
 * comm_overlap) is hidden; the compute is lengthened by the rest. */
static mp_time contend(const struct builder *b, int comm_idx, mp_time c)
{
    double eta = b->in->overlap_hidden;
    if (comm_idx < 0 || c <= 0 || eta >= 1) return c;
    mp_time a = b->p->seg[b->start + comm_idx].duration;
    mp_time lo = a < c ? a : c;
    return mp_time_add(c, mp_time_from_ps((1 - eta) * (double)lo));
}

struct layer_times {
    const struct layer_price *lp;
    mp_time f, b, w, rc;     /* pass totals; rc = what recompute re-runs first */
    double a;                /* the token mixer's share of the forward (TSP) */
    double tok_bytes, kv_bytes, w_bytes;
    bool cp;                 /* the attention core is context-parallel (context.h) */
};

static mp_time part(const struct layer_times *t, int pass, int block, int q)
{
    return t->lp->t[pass][block][q];
}

/* ---- context parallelism (branch context, issue 17; context.h) ---------- */

/* The CP core's pieces as segments: comm pieces in the lane's CP groups,
 * compute pieces waiting for the transfer that brought their block. The
 * core's last piece, when a transfer (the final dK/dV, an all-to-all), is
 * what the next compute waits for. */
static void cp_core(struct builder *b, int l, bool backward)
{
    const struct cp_plan *cpp = b->in->context;
    struct cp_piece pc[2 * 64 + 4], *pcs = pc;
    int room = context_max_pieces(cpp);
    if (room > (int)(sizeof pc / sizeof *pc)) pcs = mp_xmalloc((size_t)room * sizeof *pcs);
    int n = context_core(cpp, b->stage, l, backward, pcs);
    int *at = mp_xmalloc((size_t)n * sizeof *at);
    for (int i = 0; i < n; i++) {
        at[i] = here(b);
        struct tp_seg *sg = push(b);
        sg->duration = pcs[i].duration;
        if (pcs[i].is_comm) {
            sg->is_comm = 1;
            sg->group = pcs[i].group;
            sg->op = pcs[i].group == CPG_A2A ? COLL_ALL_TO_ALL : COLL_SEND_RECV;
            sg->bytes = pcs[i].bytes;
            sg->blocking = pcs[i].blocking;
        } else {
            sg->wait = (int32_t)(pcs[i].wait >= 0 ? at[pcs[i].wait] : -1);
        }
    }
    b->pending = n > 0 && pcs[n - 1].is_comm ? at[n - 1] : -1;
    free(at);
    if (pcs != pc) free(pcs);
}

/* A whole block's compute in one pass, around a CP core where the block
 * has one: forward the norm, projections and rotary, the core, the output
 * projection and residual; backward the reverse. */
static void block_compute(struct builder *b, int l, const struct layer_times *t, int pass,
                          int blk)
{
    mp_time all = layer_price_block(t->lp, pass, blk);
    if (!t->cp || blk != KBLOCK_MIXER) {
        compute(b, all, true, -1);
        return;
    }
    mp_time tail = mp_time_add(part(t, pass, blk, KPART_OUT), part(t, pass, blk, KPART_POST));
    bool bwd = pass != KPASS_F;
    compute(b, bwd ? tail : all - tail, true, -1);
    cp_core(b, l, bwd);
    compute(b, bwd ? all - tail : tail, true, -1);
}

static void layer_times(const struct builder *b, int l, struct layer_times *t)
{
    const struct tensor_input *in = b->in;
    const struct model *m = in->model;
    const struct layer_price *lp = &in->price[l];
    double A = (in->cp->activation_bits ? in->cp->activation_bits : 16) / 8.0;
    double W = (in->cp->weight_bits ? in->cp->weight_bits : 16) / 8.0;
    double tok = (double)in->cp->seq_len * in->cp->micro_batch;
    if (in->context) tok /= in->context->cp; /* the CP rank's share (context.h) */
    t->cp = in->context && context_layer_applies(in->context, l);
    t->lp = lp;
    t->f = layer_price_pass(lp, KPASS_F);
    t->b = layer_price_pass(lp, KPASS_B);
    t->w = layer_price_pass(lp, KPASS_W);
    t->rc = lp->recompute;
    mp_time mixer = layer_price_block(lp, KPASS_F, KBLOCK_MIXER);
    t->a = t->f > 0 ? (double)mixer / (double)t->f : 0.5;
    t->tok_bytes = tok * m->hidden * A;               /* s·b·h: one TP collective's buffer */
    t->kv_bytes = t->cp ? 0 : 2.0 * tok * m->kv_heads * m->head_dim * A;
    t->w_bytes = m->layer[l].params * W;              /* the layer's full weights */
}

/* A MoE decoder under expert parallelism, forward (tensor.h):
 *   [AG] attention [RS] router → dispatch ‖ shared experts → routed experts
 *   → combine, AG/RS only with a TP group (sequence-parallel attention). */
static void ep_forward(struct builder *b, int l, const struct layer_times *t)
{
    mp_time attn = layer_price_block(t->lp, KPASS_F, KBLOCK_MIXER);
    mp_time router = mp_time_add(part(t, KPASS_F, KBLOCK_MLP, KPART_PRE), t->lp->router[KPASS_F]);
    mp_time rest = t->f - attn - router;
    comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
    block_compute(b, l, t, KPASS_F, KBLOCK_MIXER);
    comm(b, COLL_REDUCE_SCATTER, t->tok_bytes, true);
    compute(b, router, true, -1);
    ep_seg(b, EPR_DISPATCH, l, false);
    compute(b, rest, false, -1);
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
    if (t->cp && b->in->cp->recompute != RECOMPUTE_NONE) cp_core(b, l, false);
    mp_time attn_b = layer_price_block(t->lp, KPASS_B, KBLOCK_MIXER), mlp_b = t->b - attn_b;
    mp_time attn_w = layer_price_block(t->lp, KPASS_W, KBLOCK_MIXER), mlp_w = t->w - attn_w;
    ep_seg(b, EPR_GRAD, l, false);
    ep_seg(b, with_w ? EPR_EXPERTS_BW : EPR_EXPERTS_B, l, true);
    ep_seg(b, EPR_GRAD, l, false);
    compute(b, mlp_b, true, -1);
    if (with_w) compute(b, mlp_w, false, -1);
    comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
    (void)attn_b;
    block_compute(b, l, t, KPASS_B, KBLOCK_MIXER);
    comm(b, COLL_REDUCE_SCATTER, t->tok_bytes, true);
    if (with_w) compute(b, attn_w, !overlap, gl);
}

/* One decoder block's forward with its TP (or SP) collectives. */
static void forward_block(struct builder *b, int l, const struct layer_times *t, int blk,
                          bool sp, bool overlap)
{
    mp_time pre = part(t, KPASS_F, blk, KPART_PRE), in = part(t, KPASS_F, blk, KPART_IN);
    mp_time mid = part(t, KPASS_F, blk, KPART_MID), out = part(t, KPASS_F, blk, KPART_OUT);
    mp_time post = part(t, KPASS_F, blk, KPART_POST);
    /* A context-parallel core runs between the core's part and the
     * output projection (its transfers on the CP groups). */
    bool core = t->cp && blk == KBLOCK_MIXER;
    if (!sp) {
        compute(b, mp_time_add(mp_time_add(pre, in), mp_time_add(mid, core ? 0 : out)), true, -1);
        if (core) {
            cp_core(b, l, false);
            compute(b, out, true, -1);
        }
        comm(b, COLL_ALL_REDUCE, t->tok_bytes, true);
        compute(b, post, true, -1);
        return;
    }
    compute(b, pre, true, -1);
    if (overlap && b->p->tp > 1 && !core) {
        /* The gather runs under the IN GEMMs and the reduce-scatter under
         * the OUT GEMM (chunked, as Megatron-Core's TP comm overlap). */
        int ag = comm(b, COLL_ALL_GATHER, t->tok_bytes, false);
        compute(b, contend(b, ag, in), false, -1);
        compute_after(b, mid, ag, -1);
        int rs = comm(b, COLL_REDUCE_SCATTER, t->tok_bytes, true);
        compute_after(b, contend(b, rs, out), -1, -1);
        compute(b, post, true, -1);
        return;
    }
    comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
    compute(b, mp_time_add(in, mp_time_add(mid, core ? 0 : out)), true, -1);
    if (core) {
        cp_core(b, l, false);
        compute(b, out, true, -1);
    }
    comm(b, COLL_REDUCE_SCATTER, t->tok_bytes, true);
    compute(b, post, true, -1);
}

static void megatron_forward(struct builder *b, int l, const struct layer_times *t, bool sp)
{
    const struct layer *L = &b->in->model->layer[l];
    bool overlap = b->in->comm_overlap;
    enum coll_op after = sp ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE;
    if (L->kind == LAYER_EMBEDDING) {
        compute(b, t->f - part(t, KPASS_F, KBLOCK_MIXER, KPART_POST), true, -1);
        comm(b, after, t->tok_bytes, true);
        compute(b, part(t, KPASS_F, KBLOCK_MIXER, KPART_POST), true, -1);
    } else if (L->kind == LAYER_LM_HEAD) {
        mp_time pre = part(t, KPASS_F, KBLOCK_MIXER, KPART_PRE);
        compute(b, pre, true, -1);
        if (sp) comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
        compute(b, t->f - pre, true, -1);
    } else {
        if (L->mixer != MIXER_NONE) forward_block(b, l, t, KBLOCK_MIXER, sp, overlap);
        if (L->mlp != MLP_NONE) forward_block(b, l, t, KBLOCK_MLP, sp, overlap);
    }
}

/* One decoder block's backward (tensor.h). `with_w` puts the weight
 * gradients in (BW); `gl`: the model layer whose gradients the block's last
 * weight-gradient piece completes, -1 none. */
static void backward_block(struct builder *b, int l, const struct layer_times *t, int blk,
                           bool sp, bool with_w, bool overlap, int gl)
{
    bool core = t->cp && blk == KBLOCK_MIXER; /* the CP core's backward after the output's */
    mp_time post = part(t, KPASS_B, blk, KPART_POST), out = part(t, KPASS_B, blk, KPART_OUT);
    mp_time mid = part(t, KPASS_B, blk, KPART_MID), in = part(t, KPASS_B, blk, KPART_IN);
    mp_time pre = part(t, KPASS_B, blk, KPART_PRE);
    mp_time w_out = part(t, KPASS_W, blk, KPART_OUT);
    mp_time w_in = layer_price_block(t->lp, KPASS_W, blk) - w_out;
    if (!sp) {
        compute(b, mp_time_add(post, out), true, -1);
        if (with_w) compute(b, w_out, false, -1);
        if (core) cp_core(b, l, true);
        compute(b, mp_time_add(mid, in), core, -1);
        int ar = comm(b, COLL_ALL_REDUCE, t->tok_bytes, true);
        if (with_w) compute(b, overlap ? contend(b, ar, w_in) : w_in, !overlap, gl);
        compute(b, pre, true, -1);
        return;
    }
    compute(b, post, true, -1);
    comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
    compute(b, out, true, -1);
    if (with_w) compute(b, w_out, false, -1);
    if (core) cp_core(b, l, true);
    compute(b, mid, core, -1);
    int ag = with_w ? comm(b, COLL_ALL_GATHER, t->tok_bytes, false) : -1;
    compute(b, contend(b, ag, in), false, -1);
    int rs = comm(b, COLL_REDUCE_SCATTER, t->tok_bytes, true);
    if (with_w) compute_after(b, contend(b, rs, w_in), ag, gl);
    compute(b, pre, true, -1);
}

/* Backward of one layer. */
static void megatron_backward(struct builder *b, int l, const struct layer_times *t, bool sp,
                              bool with_w, bool overlap, bool split)
{
    const struct layer *L = &b->in->model->layer[l];
    int gl = split ? l : -1;
    enum coll_op dgrad_out = sp ? COLL_REDUCE_SCATTER : COLL_ALL_REDUCE;
    if (L->kind != LAYER_DECODER) {
        compute(b, mp_time_add(t->b, t->rc), true, -1);
        if (L->kind == LAYER_LM_HEAD) comm(b, dgrad_out, t->tok_bytes, true);
        if (with_w) compute(b, t->w, !overlap, gl);
        return;
    }
    if (t->rc > 0 && b->in->cp->recompute == RECOMPUTE_FULL) {
        /* Full recompute reruns the forward, collectives included. */
        megatron_forward(b, l, t, sp);
    } else if (t->rc > 0) {
        compute(b, t->rc, true, -1);
    } else if (t->cp && b->in->cp->recompute == RECOMPUTE_SELECTIVE) {
        cp_core(b, l, false); /* selective recompute reruns the core, ring and all */
    }
    /* A layer of one block (Nemotron-H: a mixer or an MLP) has one pair of
     * collectives; the last block's weight gradients complete the layer's. */
    if (L->mlp != MLP_NONE)
        backward_block(b, l, t, KBLOCK_MLP, sp, with_w, overlap, L->mixer == MIXER_NONE ? gl : -1);
    if (L->mixer != MIXER_NONE) backward_block(b, l, t, KBLOCK_MIXER, sp, with_w, overlap, gl);
}

/* A W-only pass (zero-bubble) of one decoder: with SP the stashed input of
 * each block's column-parallel GEMMs is gathered again first. */
static void weight_pass(struct builder *b, int l, const struct layer_times *t, bool sp,
                        int gl)
{
    const struct layer *L = &b->in->model->layer[l];
    if (!sp || b->p->tp <= 1 || L->kind != LAYER_DECODER) {
        compute(b, t->w, false, gl);
        return;
    }
    for (int blk = KBLOCK_MLP; blk >= KBLOCK_MIXER; blk--) {
        if (blk == KBLOCK_MLP ? L->mlp == MLP_NONE : L->mixer == MIXER_NONE) continue;
        bool last = blk == KBLOCK_MIXER || L->mixer == MIXER_NONE;
        mp_time w_out = part(t, KPASS_W, blk, KPART_OUT);
        compute(b, w_out, false, -1);
        comm(b, COLL_ALL_GATHER, t->tok_bytes, true);
        compute(b, layer_price_block(t->lp, KPASS_W, blk) - w_out, true, last ? gl : -1);
    }
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
    mp_time main = fwd ? t->f : dgrad ? mp_time_add(t->b, t->rc) : 0;
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
    if (p->tp <= 1 && !split && !in->ep && !in->context) return;
    bool sp = in->cp->sp, fwd = k == TPP_F;
    bool with_w = k == TPP_BW || k == TPP_BW_LAST, only_w = k == TPP_W || k == TPP_W_LAST;
    int gathered = -1;
    double max_w = 0, max_kv = 0, max_cp = 0;
    for (int i = 0; i <= hi - lo; i++) {
        int l = fwd ? lo + i : hi - i;
        int next = fwd ? (l < hi ? l + 1 : -1) : (l > lo ? l - 1 : -1);
        struct layer_times t;
        layer_times(b, l, &t);
        if (t.w_bytes > max_w) max_w = t.w_bytes;
        if (t.kv_bytes > max_kv) max_kv = t.kv_bytes;
        if (t.cp && !only_w) {
            /* The ring's blocks in flight and the all-to-all's gathered heads;
             * a backward that reruns the forward core holds the larger. */
            double cb = context_buffer_bytes(in->context, l, !fwd);
            if (cb > max_cp) max_cp = cb;
        }
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
            weight_pass(b, l, &t, sp, split ? l : -1);
        } else {
            megatron_backward(b, l, &t, sp, with_w, in->overlap, split);
        }
    }
    if (in->tsp && p->tp > 1 && !only_w) pass->extra_bytes = 2 * max_w + max_kv;
    pass->extra_bytes += max_cp;
    pass->n = p->n_seg - pass->off;
}

void tensor_plan_build(struct tensor_plan *p, const struct tensor_input *in)
{
    memset(p, 0, sizeof *p);
    p->tp = in->cp->tp;
    p->stages = in->stages;
    p->fidelity = in->fidelity;
    p->algo = in->algo;
    p->context = in->context;
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
