/* pipeline.c — schedule → task graph; see pipeline.h. */
#include "pipeline.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"

enum { PASS_F, PASS_B, PASS_W, N_PASSES };

/* Op ids of every pass of every (microbatch, stage), and of the transfer that
 * carries its output to the neighbouring stage (-1 when none). Stage-major:
 * a device walks its stage's microbatches in order, so its lookups are
 * sequential; microbatch-major, each lookup was a new cache line, and with
 * 2x the microbatches the tables outgrew the cache (callgrind, 1T GPT:
 * pipeline_build's last-level misses grew 3.8x for 2x the microbatches). */
struct op_index {
    int mbs;
    int *pass;   /* [(s*mbs + mb)*N_PASSES + pass]: op whose end is the pass's output */
    int *first;  /* same index: the pass's first op (dependencies land on it) */
    int *send;   /* [(s*mbs + mb)*2 + (0 fwd, 1 bwd)] */
    int *stash;  /* [s*mbs + mb]: the copy of its activations to the host (offload), or -1 */
};

static int *at_first(struct op_index *ix, int mb, int s, int pass)
{
    return &ix->first[((size_t)s * ix->mbs + mb) * N_PASSES + pass];
}

static int *at_pass(struct op_index *ix, int mb, int s, int pass)
{
    return &ix->pass[((size_t)s * ix->mbs + mb) * N_PASSES + pass];
}

static int *at_send(struct op_index *ix, int mb, int s, int dir)
{
    return &ix->send[((size_t)s * ix->mbs + mb) * 2 + dir];
}

static enum op_tag tag_of(int kind)
{
    switch (kind) {
    case PIPE_F: return TAG_F;
    case PIPE_B: return TAG_B;
    case PIPE_W: return TAG_W;
    case PIPE_BW: return TAG_BW;
    default: return TAG_FB;
    }
}

/* The compute op of one program entry, with its memory effect:
 * F takes M_B; B gives back M_B − M_W; W gives back M_W; BW gives back M_B;
 * FB takes its forward's M_B and gives back its backward's. */
static struct op compute_op(const struct pipeline_plan *pl, int chip, const struct pipe_op *p)
{
    const struct stage_cost *c = &pl->stage[p->stage];
    mp_time d = 0;
    double alloc = 0, release = 0;
    switch (p->kind) {
    case PIPE_F: d = c->t_f; alloc = c->act_bytes; break;
    case PIPE_B: d = c->t_b; alloc = c->work_bytes; release = c->act_bytes - c->act_w_bytes + c->work_bytes; break;
    case PIPE_W: d = c->t_w; release = c->act_w_bytes; break;
    case PIPE_BW: d = mp_time_add(c->t_b, c->t_w); alloc = c->work_bytes; release = c->act_bytes + c->work_bytes; break;
    case PIPE_FB: {
        const struct stage_cost *c2 = &pl->stage[p->stage2];
        d = pl->t_fb > 0 ? pl->t_fb : mp_time_add(c->t_f, mp_time_add(c2->t_b, c2->t_w));
        alloc = c->act_bytes + c2->work_bytes;
        release = c2->act_bytes + c2->work_bytes;
        break;
    }
    }
    struct op o = tg_op(OP_COMPUTE, chip, STREAM_COMPUTE, tag_of(p->kind), d);
    o.mb = p->mb;
    o.mb2 = p->kind == PIPE_FB ? p->mb2 : -1;
    o.stage = p->stage;
    o.layer_first = c->layer_first;
    o.layer_last = c->layer_last;
    o.alloc_bytes = alloc;
    o.alloc_cat = o.free_cat = MEM_ACTIVATIONS;
    o.free_bytes = release;
    return o;
}

/* What one appended pass left behind. */
struct emitted {
    int first;        /* its first op: input dependencies land here */
    int out;          /* the op whose end makes its output available */
    int last_compute; /* its last compute op */
    bool grad_seen;   /* on_grad was called for it */
};

static enum tp_pass_kind tp_kind(int kind, bool last)
{
    switch (kind) {
    case PIPE_F: return TPP_F;
    case PIPE_B: return TPP_B;
    case PIPE_W: return last ? TPP_W_LAST : TPP_W;
    default: return last ? TPP_BW_LAST : TPP_BW;
    }
}

/* Context parallelism at detailed fidelity (context.h): the lane's CP ring
 * (chips tp·ulysses apart), every member sending its block to the next at
 * once, or its all-to-all group (chips tp apart) expanded as collective.c
 * does. Returns the op after which the lane has what it receives. */
static int emit_cp_comm(struct taskgraph *g, const struct pipeline_plan *pl, int chip, int stage,
                        int mb, const struct tp_seg *sg, int dep, int *ready, int *done)
{
    const struct cp_plan *cp = pl->tensor->context;
    bool ring = sg->group == CPG_RING;
    int n = ring ? cp->ring : cp->ulysses, stride = ring ? cp->tp * cp->ulysses : cp->tp;
    int *group = mp_xmalloc((size_t)n * sizeof *group);
    for (int i = 0; i < n; i++) {
        group[i] = chip + i * stride;
        ready[i] = dep;
    }
    int id;
    if (ring) {
        id = context_add_shift(g, pl->sys, group, n, sg->bytes, dep, mb, stage);
    } else {
        struct coll_spec c = { .op = COLL_ALL_TO_ALL, .algo = pl->tensor->algo, .chips = group,
                               .n = n, .bytes = sg->bytes, .comm = COMM_CP, .mb = mb,
                               .stage = stage };
        collective_add(g, pl->sys, &c, FIDELITY_DETAILED, ready, done);
        id = done[0];
    }
    free(group);
    return id;
}

/* A collective of the stage's TP group: one op at fast fidelity, its
 * transfers at detailed. Returns the op after which the lane has the result. */
static int emit_comm(struct taskgraph *g, const struct pipeline_plan *pl, int chip, int stage,
                     int mb, const struct tp_seg *sg, int dep, int *ready, int *done)
{
    const struct tensor_plan *tp = pl->tensor;
    if (sg->ep_role) {
        /* The EP all-to-all: its cost comes from the routing (experts.h). */
        struct op o = tg_op(OP_COLLECTIVE, chip, STREAM_COMM, TAG_ALL_TO_ALL,
                            experts_time(pl->experts, mb, sg->ep_layer, sg->ep_role));
        o.bytes = pl->experts->bytes_per_rank;
        o.comm = COMM_EP;
        o.mb = mb;
        o.stage = stage;
        o.layer_first = o.layer_last = sg->ep_layer;
        int id = tg_add(g, &o);
        if (dep >= 0) tg_dep(g, dep, id);
        return id;
    }
    if (tp->fidelity == FIDELITY_FAST) {
        static const enum op_tag tags[N_COLL_OPS] = {
            TAG_ALL_REDUCE, TAG_REDUCE_SCATTER, TAG_ALL_GATHER, TAG_ALL_TO_ALL, TAG_BROADCAST,
            TAG_SEND,
        };
        struct op o = tg_op(OP_COLLECTIVE, chip, STREAM_COMM, tags[sg->op], sg->duration);
        o.bytes = sg->bytes;
        o.comm = sg->group ? COMM_CP : COMM_TP;
        o.mb = mb;
        o.stage = stage;
        int id = tg_add(g, &o);
        if (dep >= 0) tg_dep(g, dep, id);
        return id;
    }
    if (sg->group) return emit_cp_comm(g, pl, chip, stage, mb, sg, dep, ready, done);
    /* The group of the device running the pass (DualPipe runs a stage on
     * two devices): its lane and the next tp − 1 chips. */
    struct coll_spec c = tensor_coll(tp, stage, sg);
    int *group = mp_xmalloc((size_t)tp->tp * sizeof *group);
    for (int i = 0; i < tp->tp; i++) {
        group[i] = chip + i;
        ready[i] = dep;
    }
    c.chips = group;
    c.mb = mb;
    collective_add(g, pl->sys, &c, tp->fidelity, ready, done);
    free(group);
    return done[0];
}

/* A zero-time op on the lane's compute stream that takes (bytes > 0) or
 * gives back (bytes < 0) communication buffers around a pass. */
static int comm_buffer(struct taskgraph *g, int chip, double bytes, int mb, int stage)
{
    /* Taken on the compute stream before the pass; given back on the comm
     * stream, so the next pass's compute need not wait for it. */
    struct op o = tg_op(OP_MEMORY, chip, bytes > 0 ? STREAM_COMPUTE : STREAM_COMM, TAG_MEM, 0);
    o.alloc_cat = o.free_cat = MEM_COMM;
    if (bytes > 0) o.alloc_bytes = bytes;
    else o.free_bytes = -bytes;
    o.mb = mb;
    o.stage = stage;
    return tg_add(g, &o);
}

static void dep_all(struct taskgraph *g, const int *deps, int n, int id)
{
    for (int i = 0; i < n; i++)
        if (deps[i] >= 0 && deps[i] != id) tg_dep(g, deps[i], id);
}

/* Duration of a segment for microbatch `mb`: its own, plus the routed part
 * under expert parallelism. */
static mp_time seg_time(const struct pipeline_plan *pl, const struct tp_seg *sg, int mb)
{
    if (!sg->ep_role || !pl->experts) return sg->duration;
    return mp_time_add(sg->duration, experts_time(pl->experts, mb, sg->ep_layer, sg->ep_role));
}

/* Compute and communication time of one pass of (stage, mb). */
static void pass_sums(const struct pipeline_plan *pl, int stage, enum tp_pass_kind k, int mb,
                      mp_time *compute, mp_time *comm)
{
    const struct tp_pass *tpp = tensor_pass(pl->tensor, stage, k);
    const struct tp_seg *seg = pl->tensor->seg + tpp->off;
    for (int i = 0; i < tpp->n; i++) {
        mp_time *sum = seg[i].is_comm ? comm : compute;
        *sum = mp_time_add(*sum, seg_time(pl, &seg[i], mb));
    }
}

/* DualPipe's F&B under expert parallelism: the forward of one microbatch
 * and the backward of another share the chip so that each one's
 * all-to-alls hide behind the other's compute (DeepSeek-V3 §3.2.1). One
 * compute op and one comm op start together after a zero-time start op;
 * a zero-time join on the compute stream ends the pair when both are done,
 * so whatever all-to-all time the compute cannot cover shows as exposed. */
static void emit_fb_overlapped(struct taskgraph *g, const struct pipeline_plan *pl, int chip,
                               const struct pipe_op *p, struct op base, const int *deps,
                               int n_deps, struct emitted *em)
{
    mp_time comp = 0, comm = 0;
    pass_sums(pl, p->stage, TPP_F, p->mb, &comp, &comm);
    pass_sums(pl, p->stage2, TPP_BW, p->mb2, &comp, &comm);
    struct op st = tg_op(OP_MEMORY, chip, STREAM_COMPUTE, TAG_FB, 0);
    st.mb = p->mb;
    st.mb2 = p->mb2;
    st.stage = p->stage;
    int start = tg_add(g, &st);
    dep_all(g, deps, n_deps, start);
    struct op c = base;
    c.duration = comp;
    int cid = tg_add(g, &c);
    tg_dep(g, start, cid);
    struct op k = tg_op(OP_COLLECTIVE, chip, STREAM_COMM, TAG_ALL_TO_ALL, comm);
    k.comm = COMM_EP;
    k.mb = p->mb;
    k.mb2 = p->mb2;
    k.stage = p->stage;
    int kid = tg_add(g, &k);
    tg_dep(g, start, kid);
    struct op j = st;
    int jid = tg_add(g, &j);
    tg_dep(g, cid, jid);
    tg_dep(g, kid, jid);
    em->first = start;
    em->out = em->last_compute = jid;
    em->grad_seen = false;
}

/* show_ranks: the other EP ranks' expert GEMMs of one segment, each on its
 * own chip (the lane is the gating rank; chip lane + j shows the j-th of the
 * others), after the dispatch; the combine waits for all of them. */
static int rank_ops(struct taskgraph *g, const struct pipeline_plan *pl, int chip, int mb,
                    int stage, const struct tp_seg *sg, int after, int *out)
{
    const struct ep_plan *ep = pl->experts;
    int moe = ep->moe_of_layer[sg->ep_layer];
    int gate = ep->gate_rank[(size_t)mb * ep->n_moe + moe], n = 0;
    for (int r = 0; r < ep->ep; r++) {
        if (r == gate) continue;
        struct op o = tg_op(OP_COMPUTE, chip + 1 + n, STREAM_COMPUTE, TAG_OTHER,
                            experts_rank_time(ep, mb, sg->ep_layer, r, sg->ep_role));
        o.mb = mb;
        o.stage = stage;
        o.layer_first = o.layer_last = sg->ep_layer;
        out[n] = tg_add(g, &o);
        if (after >= 0) tg_dep(g, after, out[n]);
        n++;
    }
    return n;
}

/* ---- ZeRO-3 / FSDP units (pipeline.h) ---------------------------------- */

/* Per device, across its passes: the marker of the last unit opened, and an
 * all-gather already issued for the first unit of program entry `for_k`. */
struct unit_carry {
    int last_marker;
    int prefetched, for_k;
};

/* One pass cut into units: bound[j] .. bound[j+1] is the j-th unit opened
 * (in pass order) as a time into the pass's compute. */
struct unit_walk {
    const struct pipeline_plan *pl;
    struct taskgraph *g;
    struct unit_carry *carry;
    int device, chip, stage, n, opened, closed, k;
    bool gather, scatter, reverse;
    const struct pipe_op *next;   /* the device's next program entry, NULL if none */
    int next_k;
    mp_time bound[1];             /* [n + 1], allocated with the walk */
};

static bool gathers(int kind) { return kind == PIPE_F || kind == PIPE_B || kind == PIPE_BW; }

static struct unit_walk *units_begin(struct taskgraph *g, const struct pipeline_plan *pl,
                                     struct unit_carry *carry, int device, int chip,
                                     const struct pipe_op *p, int k, mp_time total)
{
    const struct pipe_units *u = pl->units ? &pl->units[p->stage] : NULL;
    if (!u || u->n == 0 || p->kind == PIPE_FB) return NULL;
    struct unit_walk *w = mp_xcalloc(1, sizeof *w + (size_t)u->n * sizeof w->bound[0]);
    *w = (struct unit_walk){ .pl = pl, .g = g, .carry = carry, .device = device, .chip = chip,
                             .stage = p->stage, .n = u->n, .k = k, .gather = gathers(p->kind),
                             .scatter = p->kind == PIPE_W || p->kind == PIPE_BW,
                             .reverse = p->kind != PIPE_F };
    const struct pipe_program *prog = pl->prog;
    if (k + 1 < prog->n_ops[device]) {
        w->next = &prog->ops[device][k + 1];
        w->next_k = k + 1;
    }
    double at = 0;
    w->bound[0] = 0;
    for (int j = 0; j < u->n; j++) {
        at += u->share[w->reverse ? u->n - 1 - j : j];
        mp_time b = j + 1 == u->n ? total : mp_time_from_ps(at * (double)total);
        /* The shares' running sum can pass 1 by a rounding, which at a
         * saturated total is thousands of picoseconds past it: a last unit
         * of negative time (the value fuzzer). Bounds stay in [0, total]. */
        w->bound[j + 1] = b > total ? total : b;
    }
    return w;
}

static int unit_of(const struct unit_walk *w, int j) { return w->reverse ? w->n - 1 - j : j; }

/* Open the next unit: its marker (the pass's input lands on the first),
 * the all-gather of the unit after it (or of the next pass's first unit)
 * issued at that marker, and the op its compute waits for. */
static int unit_open(struct unit_walk *w, const int *deps, int n_deps, int mb)
{
    const struct pipeline_plan *pl = w->pl;
    struct unit_carry *c = w->carry;
    int j = w->opened++;
    int gate = -1;
    if (w->gather && j == 0 && c->for_k == w->k) gate = c->prefetched;
    else if (w->gather && j == 0)
        gate = pl->before_unit(pl->hook_ctx, w->g, w->device, w->stage, unit_of(w, 0), c->last_marker);
    else if (w->gather)
        gate = c->prefetched; /* issued at the previous unit's marker */
    struct op m = tg_op(OP_MEMORY, w->chip, STREAM_COMPUTE, TAG_MEM, 0);
    m.mb = mb;
    m.stage = w->stage;
    int marker = tg_add(w->g, &m);
    if (j == 0) dep_all(w->g, deps, n_deps, marker);
    c->last_marker = marker;
    c->for_k = -1;
    c->prefetched = -1;
    if (w->gather && j + 1 < w->n) {
        c->prefetched = pl->before_unit(pl->hook_ctx, w->g, w->device, w->stage, unit_of(w, j + 1), marker);
    } else if (j + 1 == w->n && w->next && gathers(w->next->kind) && pl->units[w->next->stage].n > 0) {
        int first = w->next->kind == PIPE_F ? 0 : pl->units[w->next->stage].n - 1;
        c->prefetched = pl->before_unit(pl->hook_ctx, w->g, w->device, w->next->stage, first, marker);
        c->for_k = w->next_k;
    }
    return gate;
}

static void unit_close(struct unit_walk *w, int last)
{
    int j = w->closed++;
    if (w->scatter) w->pl->after_unit(w->pl->hook_ctx, w->g, w->device, w->stage, unit_of(w, j), last);
}

/* FB (DualPipe) passes are not cut: every unit of the forward stage is
 * gathered before and every unit of the backward stage reduce-scattered
 * after. */
static int fb_gather(struct taskgraph *g, const struct pipeline_plan *pl, struct unit_carry *c,
                     int device, const struct pipe_op *p, int id)
{
    if (!pl->units || pl->units[p->stage].n == 0) return id;
    for (int u = 0; u < pl->units[p->stage].n; u++) {
        c->last_marker = pl->before_unit(pl->hook_ctx, g, device, p->stage, u, c->last_marker);
        if (id >= 0) tg_dep(g, c->last_marker, id);
    }
    c->prefetched = c->for_k = -1;
    return id;
}

/* Append one program entry as its segments (tensor.h) or as one op; the
 * pass's activation memory rides on its first and last compute ops, its
 * communication buffers (TSP, ZeRO-3) on zero-time ops around it. `deps`
 * are the ops its input waits for. */
static void emit_pass_body(struct taskgraph *g, const struct pipeline_plan *pl, int device,
                           int chip, const struct pipe_op *p, int k, const struct tp_pass *tpp,
                           struct op base, double extra, const int *deps, int n_deps, int *ready,
                           int *done, struct unit_carry *carry, struct emitted *em);

static void emit_pass(struct taskgraph *g, const struct pipeline_plan *pl, int device, int chip,
                      const struct pipe_op *p, int k, bool last, const int *deps, int n_deps,
                      int *ready, int *done, struct unit_carry *carry, struct emitted *em)
{
    struct op base = compute_op(pl, chip, p);
    const struct tp_pass *tpp = NULL;
    if (pl->tensor && p->kind != PIPE_FB) tpp = tensor_pass(pl->tensor, p->stage, tp_kind(p->kind, last));
    /* ZeRO-3 units' buffers (gathered weights, a unit's gradients) are given
     * back as the pass's compute ends, on the compute stream: the next
     * pass's come after them, never beside. TSP's wait for its comm too. */
    double zbuf = 0, extra = 0;
    if (pl->units && pl->units[p->stage].n > 0) {
        if (gathers(p->kind)) zbuf += pl->units[p->stage].gathered_bytes;
        if (p->kind == PIPE_W || p->kind == PIPE_BW) zbuf += pl->units[p->stage].grad_bytes;
    }
    if (tpp && tpp->n > 0) extra += tpp->extra_bytes;
    if (zbuf > 0) {
        struct op z = tg_op(OP_MEMORY, chip, STREAM_COMPUTE, TAG_MEM, 0);
        z.alloc_cat = z.free_cat = MEM_COMM;
        z.alloc_bytes = zbuf;
        z.mb = p->mb;
        z.stage = p->stage;
        int id = tg_add(g, &z);
        dep_all(g, deps, n_deps, id);
        emit_pass_body(g, pl, device, chip, p, k, tpp, base, extra, deps, n_deps, ready, done,
                       carry, em);
        z.alloc_bytes = 0;
        z.free_bytes = zbuf;
        tg_add(g, &z); /* after the pass's last compute, in stream order */
        em->first = id;
        return;
    }
    emit_pass_body(g, pl, device, chip, p, k, tpp, base, extra, deps, n_deps, ready, done, carry,
                   em);
}

/* emit_pass after its ZeRO-3 buffer: the compute, TSP's buffer around it. */
static void emit_pass_body(struct taskgraph *g, const struct pipeline_plan *pl, int device,
                           int chip, const struct pipe_op *p, int k, const struct tp_pass *tpp,
                           struct op base, double extra, const int *deps, int n_deps, int *ready,
                           int *done, struct unit_carry *carry, struct emitted *em)
{
    em->grad_seen = false;
    em->last_compute = -1;
    if (p->kind == PIPE_FB && pl->experts && pl->tensor) {
        emit_fb_overlapped(g, pl, chip, p, base, deps, n_deps, em);
        return;
    }
    int buf = extra > 0 ? comm_buffer(g, chip, extra, p->mb, p->stage) : -1;
    if (!tpp || tpp->n == 0) {
        struct unit_walk *w = units_begin(g, pl, carry, device, chip, p, k, base.duration);
        if (!w) {
            int id = tg_add(g, &base);
            dep_all(g, deps, n_deps, id);
            if (p->kind == PIPE_FB) fb_gather(g, pl, carry, device, p, id);
            em->first = buf >= 0 ? buf : id;
            em->out = em->last_compute = id;
            if (buf >= 0) tg_dep(g, id, comm_buffer(g, chip, -extra, p->mb, p->stage));
            return;
        }
        /* One piece per unit, its time the unit's share of the pass. */
        int id = -1;
        em->first = buf;
        for (int j = 0; j < w->n; j++) {
            int gate = unit_open(w, deps, n_deps, p->mb);
            if (em->first < 0) em->first = carry->last_marker;
            struct op o = base;
            o.duration = w->bound[j + 1] - w->bound[j];
            o.alloc_bytes = j == 0 ? base.alloc_bytes : 0;
            o.free_bytes = j == w->n - 1 ? base.free_bytes : 0;
            id = tg_add(g, &o);
            if (j == 0) dep_all(g, deps, n_deps, id);
            if (gate >= 0) tg_dep(g, gate, id);
            unit_close(w, id);
        }
        free(w);
        em->out = em->last_compute = id;
        if (buf >= 0) tg_dep(g, id, comm_buffer(g, chip, -extra, p->mb, p->stage));
        return;
    }
    const struct tp_seg *seg = pl->tensor->seg + tpp->off;
    int *ids = mp_xmalloc((size_t)tpp->n * sizeof *ids);
    int first_c = -1, last_c = -1, prev_c = buf, out_k = -1;
    int n_ranks = 0, *ranks = pl->ep_show_ranks ? mp_xmalloc((size_t)pl->experts->ep * sizeof *ranks) : NULL;
    for (int k = 0; k < tpp->n; k++) {
        if (!seg[k].is_comm) {
            if (first_c < 0) first_c = k;
            last_c = k;
        }
        if (!seg[k].is_comm || seg[k].blocking) out_k = k;
    }
    em->first = buf;
    /* ZeRO-3 units over segments: a unit opens before the compute segment
     * at whose start its share begins and closes after the one in which it
     * ends. */
    mp_time total = 0, at = 0;
    for (int i = 0; i < tpp->n; i++)
        if (!seg[i].is_comm) total = mp_time_add(total, seg_time(pl, &seg[i], p->mb));
    struct unit_walk *w = units_begin(g, pl, carry, device, chip, p, k, total);
    for (int k = 0; k < tpp->n; k++) {
        const struct tp_seg *sg = &seg[k];
        int id;
        if (sg->is_comm) {
            id = emit_comm(g, pl, chip, p->stage, p->mb, sg, prev_c, ready, done);
            if (prev_c < 0) dep_all(g, deps, n_deps, id);
            for (int r = 0; r < n_ranks; r++) tg_dep(g, ranks[r], id);
            n_ranks = 0;
        } else {
            int gates[8], n_gates = 0;
            while (w && w->opened < w->n && (w->bound[w->opened] <= at || k == last_c)) {
                int gate = unit_open(w, deps, n_deps, p->mb);
                if (em->first < 0) em->first = carry->last_marker;
                if (gate >= 0 && n_gates < 8) gates[n_gates++] = gate;
                else if (gate >= 0) tg_dep(g, gate, carry->last_marker);
            }
            struct op o = base;
            o.duration = seg_time(pl, sg, p->mb);
            at = mp_time_add(at, o.duration);
            o.alloc_bytes = k == first_c ? base.alloc_bytes : 0;
            o.free_bytes = k == last_c ? base.free_bytes : 0;
            id = tg_add(g, &o);
            if (prev_c < 0) dep_all(g, deps, n_deps, id);
            for (int i = 0; i < n_gates; i++) tg_dep(g, gates[i], id);
            while (w && w->closed < w->opened && (w->bound[w->closed + 1] <= at || k == last_c))
                unit_close(w, id);
            if (sg->wait >= 0) tg_dep(g, ids[sg->wait], id);
            if (ranks && sg->ep_role)
                n_ranks = rank_ops(g, pl, chip, p->mb, p->stage, sg,
                                   sg->wait >= 0 ? ids[sg->wait] : prev_c, ranks);
            prev_c = id;
            em->last_compute = id;
            if (sg->grad_layer >= 0 && pl->on_grad) {
                pl->on_grad(pl->hook_ctx, g, device, p->stage, sg->grad_layer, id);
                em->grad_seen = true;
            }
        }
        ids[k] = id;
        if (em->first < 0) em->first = id;
    }
    free(w);
    em->out = ids[out_k];
    if (buf >= 0) {
        /* Given back once the pass's last op, compute or comm, is done. */
        int rel = comm_buffer(g, chip, -extra, p->mb, p->stage);
        tg_dep(g, ids[tpp->n - 1], rel);
        if (em->last_compute >= 0 && ids[tpp->n - 1] != em->last_compute) tg_dep(g, em->last_compute, rel);
    }
    free(ids);
    free(ranks);
}

/* ---- passes copied from the first of their kind ------------------------
 * A pass of a TP group at fast fidelity is the same ops and edges for every
 * microbatch (tensor.h's segments, their collectives one op each): only the
 * ops' microbatch differs, and their ids by where they land. So when no
 * hook, unit, routing draw or input dependency takes part, the first pass
 * of each (stage, kind, last) is built as above and recorded, ops and
 * edges in the order they were appended, and later ones append copies of
 * them in that order (ids moved, the microbatch set): the graph is the one
 * emit_pass builds, op for op and edge for edge, at a fraction of the work
 * (1T GPT, 129,555 ops: bench/README.md). */
struct pass_memo {
    bool tried, ok;
    int chip, mb;
    int n_ops, n_edges;
    struct op *ops;
    int32_t *edge;         /* [2 × n_edges]: (from, to) as indexes into ops */
    int first, out, last_compute; /* indexes into ops, -1 none */
};

/* The passes that can be copied: nothing outside the pass's own ops is
 * touched while it is appended, and nothing in it depends on the
 * microbatch but the ops' `mb`. `m`: the pass's memo entry, whose `ok`
 * says its segments passed the scan below (memo_record only runs after
 * it), so a copy skips the scan (~46 segments a pass, 9,216 passes in the
 * 1T step). */
static bool memo_able(const struct pipeline_plan *pl, const struct pipe_op *p, bool last,
                      int n_deps, const struct pass_memo *m)
{
    if (!pl->tensor || p->kind == PIPE_FB || n_deps > 0 || pl->experts || pl->ep_show_ranks ||
        pl->tensor->fidelity != FIDELITY_FAST || (pl->units && pl->units[p->stage].n > 0))
        return false;
    if (m->ok) return true;
    const struct tp_pass *tpp = tensor_pass(pl->tensor, p->stage, tp_kind(p->kind, last));
    if (tpp->n == 0) return false;
    const struct tp_seg *seg = pl->tensor->seg + tpp->off;
    for (int i = 0; i < tpp->n; i++)
        if (seg[i].ep_role || (pl->on_grad && seg[i].grad_layer >= 0)) return false;
    return true;
}

static int memo_rel(int id, int op0) { return id >= op0 ? id - op0 : -1; }

/* Keep the pass just appended (ops op0.., edges e0..) when it is self-contained. */
static void memo_record(struct pass_memo *m, const struct taskgraph *g, int chip,
                        const struct pipe_op *p, int op0, int e0, const struct emitted *em)
{
    m->tried = true;
    if (g->over || em->grad_seen) return;
    for (int i = op0; i < g->n_ops; i++)
        if (g->ops[i].mb != p->mb || g->ops[i].mb2 != -1 || g->ops[i].route_len) return;
    for (int e = e0; e < g->n_edges; e++)
        if (g->edge_from[e] < op0 || g->edge_to[e] < op0) return;
    if ((em->first >= 0 && em->first < op0) || (em->out >= 0 && em->out < op0) ||
        (em->last_compute >= 0 && em->last_compute < op0))
        return;
    m->chip = chip;
    m->mb = p->mb;
    m->n_ops = g->n_ops - op0;
    m->n_edges = g->n_edges - e0;
    m->ops = mp_xmalloc((size_t)(m->n_ops ? m->n_ops : 1) * sizeof *m->ops);
    memcpy(m->ops, g->ops + op0, (size_t)m->n_ops * sizeof *m->ops);
    m->edge = mp_xmalloc((size_t)(m->n_edges ? m->n_edges : 1) * 2 * sizeof *m->edge);
    for (int e = 0; e < m->n_edges; e++) {
        m->edge[2 * e] = g->edge_from[e0 + e] - op0;
        m->edge[2 * e + 1] = g->edge_to[e0 + e] - op0;
    }
    m->first = memo_rel(em->first, op0);
    m->out = memo_rel(em->out, op0);
    m->last_compute = memo_rel(em->last_compute, op0);
    m->ok = true;
}

/* Append the recorded pass for microbatch p->mb, as tg_add and tg_dep
 * would have been called for it (the ids they return, past the cap too). */
static void memo_replay(const struct pass_memo *m, struct taskgraph *g, const struct pipe_op *p,
                        struct emitted *em)
{
    int cap = g->max_ops > 0 ? g->max_ops : INT32_MAX;
    int base = g->n_ops;
    if (m->n_ops <= cap - g->n_ops) {
        tg_add_many(g, m->ops, m->n_ops);
        for (int i = base; i < g->n_ops; i++) g->ops[i].mb = p->mb;
        tg_dep_many(g, m->edge, m->n_edges, base);
        em->first = m->first >= 0 ? base + m->first : -1;
        em->out = m->out >= 0 ? base + m->out : -1;
        em->last_compute = m->last_compute >= 0 ? base + m->last_compute : -1;
    } else {
        /* Crossing the cap: op by op, as emit_pass would (tg_add's stand-ins). */
        int *ids = mp_xmalloc((size_t)(m->n_ops ? m->n_ops : 1) * sizeof *ids);
        for (int i = 0; i < m->n_ops; i++) {
            struct op o = m->ops[i];
            o.mb = p->mb;
            ids[i] = tg_add(g, &o);
        }
        for (int e = 0; e < m->n_edges; e++)
            tg_dep(g, ids[m->edge[2 * e]], ids[m->edge[2 * e + 1]]);
        em->first = m->first >= 0 ? ids[m->first] : -1;
        em->out = m->out >= 0 ? ids[m->out] : -1;
        em->last_compute = m->last_compute >= 0 ? ids[m->last_compute] : -1;
        free(ids);
    }
    em->grad_seen = false;
}

/* emit_pass, or the copy of the first pass of its (stage, kind, last). */
static void emit_pass_memo(struct taskgraph *g, const struct pipeline_plan *pl,
                           struct pass_memo *memo, int device,
                           int chip, const struct pipe_op *p, int k, bool last, const int *deps,
                           int n_deps, int *ready, int *done, struct unit_carry *carry,
                           struct emitted *em)
{
    struct pass_memo *m = &memo[((size_t)p->stage * 5 + p->kind) * 2 + last];
    if (pl->every_pass || !memo_able(pl, p, last, n_deps, m)) {
        emit_pass(g, pl, device, chip, p, k, last, deps, n_deps, ready, done, carry, em);
        return;
    }
    if (m->ok && m->chip == chip && !g->over) {
        memo_replay(m, g, p, em);
        return;
    }
    int op0 = g->n_ops, e0 = g->n_edges;
    emit_pass(g, pl, device, chip, p, k, last, deps, n_deps, ready, done, carry, em);
    if (!m->tried) memo_record(m, g, chip, p, op0, e0, em);
}

/* Hand (mb, s)'s output to the stage next along `dir` (0 forward, 1 back) when
 * that stage lives on another device: a transfer on the sender's comm stream. */
/* The last hand-off of (stage, direction): its route and times. Every
 * microbatch sends the same bytes between the same chips (unless a path
 * differs, DualPipe), so the route and its two times are found once per
 * (stage, direction, chips), not per microbatch (9,216 sends in the 1T
 * step); routes longer than SEND_MEMO_LINKS are found each time. */
#define SEND_MEMO_LINKS 64
struct send_memo {
    bool ok;
    int src, dst, n;
    mp_time duration, latency;
    int links[SEND_MEMO_LINKS];
};

static void add_send(struct taskgraph *g, const struct pipeline_plan *pl, struct op_index *ix,
                     struct send_memo *memo, int producer, int mb, int s, int dir)
{
    const struct pipe_program *prog = pl->prog;
    int to = dir == 0 ? s + 1 : s - 1;
    if (to < 0 || to >= prog->stages) return;
    int from_dev = pipe_device(prog, mb, s), to_dev = pipe_device(prog, mb, to);
    if (from_dev == to_dev) return;
    int src = pl->chip_of_device[from_dev], dst = pl->chip_of_device[to_dev];
    struct send_memo *sm = &memo[(size_t)s * 2 + dir];
    int stack[SEND_MEMO_LINKS], *links;
    int n;
    mp_time duration, latency;
    double bytes = pl->stage[s].send_bytes;
    if (sm->ok && sm->src == src && sm->dst == dst) {
        links = sm->links;
        n = sm->n;
        duration = sm->duration;
        latency = sm->latency;
    } else {
        n = system_route_buf(pl->sys, src, dst, stack, SEND_MEMO_LINKS, &links);
        duration = mp_time_add(system_route_time(pl->sys, links, n, bytes), pl->hop);
        /* The route's latency and the hand-off delay are propagation: the
         * link and stream are free once the bytes have left (DESIGN.md §2). */
        latency = mp_time_add(system_route_time(pl->sys, links, n, 0), pl->hop);
        sm->ok = links == stack;
        if (sm->ok) {
            *sm = (struct send_memo){ .ok = true, .src = src, .dst = dst, .n = n,
                                      .duration = duration, .latency = latency };
            memcpy(sm->links, stack, (size_t)n * sizeof *stack);
        }
    }
    struct op o = tg_op(OP_TRANSFER, src, STREAM_COMM, TAG_SEND, duration);
    o.latency = latency;
    o.bytes = bytes;
    o.comm = COMM_PP;
    o.mb = mb;
    o.stage = s;
    o.layer_first = pl->stage[s].layer_first;
    o.layer_last = pl->stage[s].layer_last;
    int id = tg_add_transfer(g, &o, links, n);
    if (links != stack && links != sm->links) free(links);
    tg_dep(g, producer, id);
    *at_send(ix, mb, s, dir) = id;
}

/* The op whose end makes (mb, s)'s input available when coming from stage
 * `from`: the transfer if there was one, else the producing op itself. */
static int arrival(struct op_index *ix, int mb, int from, int dir, int pass)
{
    int send = *at_send(ix, mb, from, dir);
    return send >= 0 ? send : *at_pass(ix, mb, from, pass);
}

/* The last W/BW op index per (device, stage), two device slots per stage. */
struct last_w {
    int *dev, *k; /* [stage * 2 + slot] */
};

static int *last_w_at(struct last_w *lw, int device, int stage)
{
    int *dev = lw->dev + (size_t)stage * 2;
    int slot = dev[0] == device || dev[0] < 0 ? 0 : 1;
    assert(dev[slot] == device || dev[slot] < 0); /* at most two devices per stage */
    dev[slot] = device;
    return lw->k + (size_t)stage * 2 + slot;
}

void pipeline_build(struct taskgraph *g, const struct pipeline_plan *pl, struct pipeline_out *out)
{
    const struct pipe_program *prog = pl->prog;
    int S = prog->stages, M = prog->microbatches;
    struct op_index ix = { .mbs = M, .stash = NULL };
    size_t cells = (size_t)M * S;
    ix.pass = mp_xmalloc(cells * N_PASSES * sizeof *ix.pass);
    ix.first = mp_xmalloc(cells * N_PASSES * sizeof *ix.first);
    ix.send = mp_xmalloc(cells * 2 * sizeof *ix.send);
    for (size_t i = 0; i < cells * N_PASSES; i++) ix.pass[i] = ix.first[i] = -1;
    for (size_t i = 0; i < cells * 2; i++) ix.send[i] = -1;
    if (pl->act_offload) {
        ix.stash = mp_xmalloc(cells * sizeof *ix.stash);
        for (size_t i = 0; i < cells; i++) ix.stash[i] = -1;
    }
    out->last_op = mp_xmalloc((size_t)prog->devices * sizeof *out->last_op);
    out->first_op = mp_xmalloc((size_t)prog->devices * sizeof *out->first_op);
    out->last_any = mp_xmalloc((size_t)prog->devices * sizeof *out->last_any);
    int tp = pl->tensor ? pl->tensor->tp : 1;
    /* Scratch for the largest group a pass's collectives span (TP, or a CP
     * ring or all-to-all group). */
    const struct cp_plan *cpp = pl->tensor ? pl->tensor->context : NULL;
    if (cpp && cpp->ring > tp) tp = cpp->ring;
    if (cpp && cpp->ulysses > tp) tp = cpp->ulysses;
    int *ready = mp_xmalloc((size_t)tp * sizeof *ready), *done = mp_xmalloc((size_t)tp * sizeof *done);
    /* The program index of each (device, stage)'s last weight-gradient op:
     * its gradients are complete for the step when it ends. A stage runs on
     * one device, or two under DualPipe, so two slots per stage keep this
     * O(stages) (a stages × devices table was pp² × 4 bytes: 6.4 GB at
     * pp = 40,000). */
    struct last_w lw = { .dev = mp_xmalloc((size_t)S * 2 * sizeof *lw.dev),
                         .k = mp_xmalloc((size_t)S * 2 * sizeof *lw.k) };
    for (size_t i = 0; i < (size_t)S * 2; i++) lw.dev[i] = lw.k[i] = -1;
    for (int d = 0; d < prog->devices; d++)
        for (int k = 0; k < prog->n_ops[d]; k++) {
            const struct pipe_op *p = &prog->ops[d][k];
            if (p->kind == PIPE_W || p->kind == PIPE_BW) *last_w_at(&lw, d, p->stage) = k;
            if (p->kind == PIPE_FB) *last_w_at(&lw, d, p->stage2) = k;
        }

    /* Passes copied from the first of their kind: [stage][kind][last]. */
    struct pass_memo *memo = mp_xcalloc((size_t)S * 5 * 2, sizeof *memo);
    struct send_memo *sends = mp_xcalloc((size_t)S * 2, sizeof *sends);
    /* Pass 1: every compute op in each device's order, each followed by the
     * transfers of what it produced, so a chip's comm stream sends in the
     * order its results appear. */
    out->origin = out->origin_device = NULL;
    out->origin_first = g->n_ops;
    out->n_origin = 0;
    int cap_origin = 0;
    for (int d = 0; d < prog->devices; d++) {
        int chip = pl->chip_of_device[d];
        out->first_op[d] = out->last_op[d] = out->last_any[d] = -1;
        struct unit_carry carry = { .last_marker = -1, .prefetched = -1, .for_k = -1 };
        int prev_first = -1;
        for (int k = 0; k < prog->n_ops[d]; k++) {
            const struct pipe_op *p = &prog->ops[d][k];
            bool last = (p->kind == PIPE_W || p->kind == PIPE_BW) && *last_w_at(&lw, d, p->stage) == k;
            /* Offloaded activations come back before the backward, fetched
             * once the pass before it has started and they have arrived. */
            int reload = -1;
            double stash = pl->stage[p->stage].act_bytes;
            if (pl->act_offload && (p->kind == PIPE_B || p->kind == PIPE_BW) && stash > 0) {
                reload = offload_copy(g, pl->act_offload, chip, false, stash, prev_first,
                                      MEM_ACTIVATIONS, stash, 0);
                int gone = ix.stash[(size_t)p->stage * M + p->mb];
                if (gone >= 0) tg_dep(g, gone, reload);
            }
            struct emitted em;
            emit_pass_memo(g, pl, memo, d, chip, p, k, last, &reload,
                           reload >= 0, ready, done, &carry, &em);
            prev_first = em.first;
            if (p->kind == PIPE_FB && pl->units && pl->units[p->stage2].n > 0)
                for (int u = 0; u < pl->units[p->stage2].n; u++)
                    pl->after_unit(pl->hook_ctx, g, d, p->stage2, u, em.last_compute);
            if (out->first_op[d] < 0) out->first_op[d] = em.first;
            out->last_op[d] = em.last_compute;
            out->last_any[d] = em.out;
            int id = em.out;
            switch (p->kind) {
            case PIPE_F:
                *at_pass(&ix, p->mb, p->stage, PASS_F) = id;
                *at_first(&ix, p->mb, p->stage, PASS_F) = em.first;
                add_send(g, pl, &ix, sends, id, p->mb, p->stage, 0);
                if (pl->act_offload && stash > 0)
                    ix.stash[(size_t)p->stage * M + p->mb] =
                        offload_copy(g, pl->act_offload, chip, true, stash, em.last_compute,
                                     MEM_ACTIVATIONS, 0, stash);
                break;
            case PIPE_B:
                *at_pass(&ix, p->mb, p->stage, PASS_B) = id;
                *at_first(&ix, p->mb, p->stage, PASS_B) = em.first;
                add_send(g, pl, &ix, sends, id, p->mb, p->stage, 1);
                break;
            case PIPE_W:
                *at_pass(&ix, p->mb, p->stage, PASS_W) = id;
                *at_first(&ix, p->mb, p->stage, PASS_W) = em.first;
                break;
            case PIPE_BW:
                *at_pass(&ix, p->mb, p->stage, PASS_B) = id;
                *at_pass(&ix, p->mb, p->stage, PASS_W) = id;
                *at_first(&ix, p->mb, p->stage, PASS_B) = em.first;
                *at_first(&ix, p->mb, p->stage, PASS_W) = em.first;
                add_send(g, pl, &ix, sends, id, p->mb, p->stage, 1);
                break;
            case PIPE_FB:
                *at_pass(&ix, p->mb, p->stage, PASS_F) = id;
                *at_pass(&ix, p->mb2, p->stage2, PASS_B) = id;
                *at_pass(&ix, p->mb2, p->stage2, PASS_W) = id;
                *at_first(&ix, p->mb, p->stage, PASS_F) = em.first;
                *at_first(&ix, p->mb2, p->stage2, PASS_B) = em.first;
                *at_first(&ix, p->mb2, p->stage2, PASS_W) = em.first;
                add_send(g, pl, &ix, sends, id, p->mb, p->stage, 0);
                add_send(g, pl, &ix, sends, id, p->mb2, p->stage2, 1);
                break;
            }
            /* A last backward with no per-layer cut: the whole stage's
             * gradients are done when it is. */
            if (pl->on_grad && !em.grad_seen) {
                if (last) pl->on_grad(pl->hook_ctx, g, d, p->stage, -1, em.last_compute);
                else if (p->kind == PIPE_FB && *last_w_at(&lw, d, p->stage2) == k)
                    pl->on_grad(pl->hook_ctx, g, d, p->stage2, -1, em.last_compute);
            }
            if (pl->record_origin) {
                int n = g->n_ops - out->origin_first;
                if (n > cap_origin) {
                    int cap = cap_origin;
                    MP_GROW(out->origin, cap_origin, n);
                    MP_GROW(out->origin_device, cap, n);
                }
                for (int i = out->n_origin; i < n; i++) {
                    out->origin[i] = k;
                    out->origin_device[i] = d;
                }
                out->n_origin = n;
            }
        }
        /* The devices run alike programs: make room for the rest at once,
         * as the first one needed (a doubling array copies what it holds
         * each time it grows; the rest is a guess, so it may still grow). */
        if (d == 0) {
            double more = (double)prog->devices * 1.125;
            tg_reserve(g, (double)g->n_ops * more, (double)g->n_edges * more);
            /* The origins have an entry per op: the same room. */
            int room = g->cap_ops - out->origin_first;
            if (pl->record_origin && room > cap_origin) {
                cap_origin = room;
                out->origin = mp_xrealloc(out->origin, (size_t)room * sizeof *out->origin);
                out->origin_device = mp_xrealloc(out->origin_device,
                                                 (size_t)room * sizeof *out->origin_device);
            }
        }
    }

    for (size_t i = 0; i < (size_t)S * 5 * 2; i++) {
        free(memo[i].ops);
        free(memo[i].edge);
    }
    free(memo);
    free(sends);

    /* Pass 2: dependencies along each microbatch's path, from the op that
     * produced an input to the first op of the pass that takes it. */
    for (int mb = 0; mb < M; mb++) {
        for (int s = 0; s < S; s++) {
            int f = *at_pass(&ix, mb, s, PASS_F);
            int b = *at_pass(&ix, mb, s, PASS_B);
            int w = *at_pass(&ix, mb, s, PASS_W);
            int f0 = *at_first(&ix, mb, s, PASS_F);
            int b0 = *at_first(&ix, mb, s, PASS_B);
            int w0 = *at_first(&ix, mb, s, PASS_W);
            assert(f >= 0 && b >= 0 && w >= 0); /* the validator guarantees it */
            if (s > 0) {
                int in = arrival(&ix, mb, s - 1, 0, PASS_F);
                if (in != f) tg_dep(g, in, f0);
            }
            if (b != f) tg_dep(g, f, b0);
            if (s < S - 1) {
                int in = arrival(&ix, mb, s + 1, 1, PASS_B);
                if (in != b) tg_dep(g, in, b0);
            }
            if (w != b) tg_dep(g, b, w0);
        }
    }
    free(ix.pass);
    free(ix.first);
    free(ix.send);
    free(ix.stash);
    free(ready);
    free(done);
    free(lw.dev);
    free(lw.k);
}

void pipeline_out_release(struct pipeline_out *out)
{
    free(out->last_op);
    free(out->first_op);
    free(out->last_any);
    free(out->origin);
    free(out->origin_device);
    out->last_op = out->first_op = out->last_any = NULL;
    out->origin = out->origin_device = NULL;
}
