/* pipeline.c — schedule → task graph; see pipeline.h. */
#include "pipeline.h"

#include <assert.h>
#include <stdlib.h>

enum { PASS_F, PASS_B, PASS_W, N_PASSES };

/* Op ids of every pass of every (microbatch, stage), and of the transfer that
 * carries its output to the neighbouring stage (-1 when none). */
struct op_index {
    int stages;
    int *pass;   /* [(mb*stages + s)*N_PASSES + pass] */
    int *send;   /* [(mb*stages + s)*2 + (0 fwd, 1 bwd)] */
};

static int *at_pass(struct op_index *ix, int mb, int s, int pass)
{
    return &ix->pass[((size_t)mb * ix->stages + s) * N_PASSES + pass];
}

static int *at_send(struct op_index *ix, int mb, int s, int dir)
{
    return &ix->send[((size_t)mb * ix->stages + s) * 2 + dir];
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
    case PIPE_B: d = c->t_b; release = c->act_bytes - c->act_w_bytes; break;
    case PIPE_W: d = c->t_w; release = c->act_w_bytes; break;
    case PIPE_BW: d = c->t_b + c->t_w; release = c->act_bytes; break;
    case PIPE_FB: {
        const struct stage_cost *c2 = &pl->stage[p->stage2];
        d = pl->t_fb > 0 ? pl->t_fb : c->t_f + c2->t_b + c2->t_w;
        alloc = c->act_bytes;
        release = c2->act_bytes;
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

/* Hand (mb, s)'s output to the stage next along `dir` (0 forward, 1 back) when
 * that stage lives on another device: a transfer on the sender's comm stream. */
static void add_send(struct taskgraph *g, const struct pipeline_plan *pl, struct op_index *ix,
                     int producer, int mb, int s, int dir)
{
    const struct pipe_program *prog = pl->prog;
    int to = dir == 0 ? s + 1 : s - 1;
    if (to < 0 || to >= prog->stages) return;
    int from_dev = pipe_device(prog, mb, s), to_dev = pipe_device(prog, mb, to);
    if (from_dev == to_dev) return;
    int src = pl->chip_of_device[from_dev], dst = pl->chip_of_device[to_dev];
    int links[64];
    int n = system_route(pl->sys, src, dst, links, 64);
    assert(n <= 64);
    double bytes = pl->stage[s].send_bytes;
    struct op o = tg_op(OP_TRANSFER, src, STREAM_COMM, TAG_SEND,
                        system_route_time(pl->sys, links, n, bytes) + pl->hop);
    o.bytes = bytes;
    o.mb = mb;
    o.stage = s;
    o.layer_first = pl->stage[s].layer_first;
    o.layer_last = pl->stage[s].layer_last;
    int id = tg_add_transfer(g, &o, links, n);
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

void pipeline_build(struct taskgraph *g, const struct pipeline_plan *pl, struct pipeline_out *out)
{
    const struct pipe_program *prog = pl->prog;
    int S = prog->stages, M = prog->microbatches;
    struct op_index ix = { .stages = S };
    size_t cells = (size_t)M * S;
    ix.pass = mp_xmalloc(cells * N_PASSES * sizeof *ix.pass);
    ix.send = mp_xmalloc(cells * 2 * sizeof *ix.send);
    for (size_t i = 0; i < cells * N_PASSES; i++) ix.pass[i] = -1;
    for (size_t i = 0; i < cells * 2; i++) ix.send[i] = -1;
    out->last_op = mp_xmalloc((size_t)prog->devices * sizeof *out->last_op);
    out->first_op = mp_xmalloc((size_t)prog->devices * sizeof *out->first_op);

    /* Pass 1: every compute op in each device's order, each followed by the
     * transfers of what it produced, so a chip's comm stream sends in the
     * order its results appear. */
    for (int d = 0; d < prog->devices; d++) {
        int chip = pl->chip_of_device[d];
        out->first_op[d] = out->last_op[d] = -1;
        for (int k = 0; k < prog->n_ops[d]; k++) {
            const struct pipe_op *p = &prog->ops[d][k];
            struct op o = compute_op(pl, chip, p);
            int id = tg_add(g, &o);
            if (out->first_op[d] < 0) out->first_op[d] = id;
            out->last_op[d] = id;
            switch (p->kind) {
            case PIPE_F:
                *at_pass(&ix, p->mb, p->stage, PASS_F) = id;
                add_send(g, pl, &ix, id, p->mb, p->stage, 0);
                break;
            case PIPE_B:
                *at_pass(&ix, p->mb, p->stage, PASS_B) = id;
                add_send(g, pl, &ix, id, p->mb, p->stage, 1);
                break;
            case PIPE_W:
                *at_pass(&ix, p->mb, p->stage, PASS_W) = id;
                break;
            case PIPE_BW:
                *at_pass(&ix, p->mb, p->stage, PASS_B) = id;
                *at_pass(&ix, p->mb, p->stage, PASS_W) = id;
                add_send(g, pl, &ix, id, p->mb, p->stage, 1);
                break;
            case PIPE_FB:
                *at_pass(&ix, p->mb, p->stage, PASS_F) = id;
                *at_pass(&ix, p->mb2, p->stage2, PASS_B) = id;
                *at_pass(&ix, p->mb2, p->stage2, PASS_W) = id;
                add_send(g, pl, &ix, id, p->mb, p->stage, 0);
                add_send(g, pl, &ix, id, p->mb2, p->stage2, 1);
                break;
            }
        }
    }

    /* Pass 2: dependencies along each microbatch's path. */
    for (int mb = 0; mb < M; mb++) {
        for (int s = 0; s < S; s++) {
            int f = *at_pass(&ix, mb, s, PASS_F);
            int b = *at_pass(&ix, mb, s, PASS_B);
            int w = *at_pass(&ix, mb, s, PASS_W);
            assert(f >= 0 && b >= 0 && w >= 0); /* the validator guarantees it */
            if (s > 0) {
                int in = arrival(&ix, mb, s - 1, 0, PASS_F);
                if (in != f) tg_dep(g, in, f);
            }
            if (b != f) tg_dep(g, f, b);
            if (s < S - 1) {
                int in = arrival(&ix, mb, s + 1, 1, PASS_B);
                if (in != b) tg_dep(g, in, b);
            }
            if (w != b) tg_dep(g, b, w);
        }
    }
    free(ix.pass);
    free(ix.send);
}

void pipeline_out_release(struct pipeline_out *out)
{
    free(out->last_op);
    free(out->first_op);
    out->last_op = out->first_op = NULL;
}
