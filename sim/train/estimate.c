/* estimate.c — a training step's events estimated from its scenario before
 * anything is built (issue 16); see estimate.h.
 *
 * What the pipeline builder emits, counted the way it counts (pipeline.c,
 * tensor.c, data_parallel.c, collective.c):
 *   ops      the schedule's compute ops: devices × chunks × microbatches ×
 *            passes (schedule_ops_estimate);
 *   sends    each F and each B (or BW) hands its output to the next stage:
 *            2 per (stage, microbatch), minus the path's two ends;
 *   segments with a TP group every pass is cut per layer: Megatron's
 *            forward is 2 compute pieces and 2 collectives (4 with sequence
 *            parallelism), its backward 2 + 2 (+2 with SP) plus the weight
 *            pieces; under EP a MoE layer adds its dispatch, experts and
 *            combine (3 forward, 3 backward) and, with tp = 1, about 4
 *            compute pieces around them (dense layers' pieces merge);
 *   detailed at run.fidelity = detailed each collective is its transfers:
 *            a ring over n chips is about 2n(n − 1) of them;
 *   CP       (branch context, context.c) every attention layer's core is
 *            cut into pieces: a ring of r ranks is r attention steps and
 *            r − 1 K/V transfers forward, r steps and r transfers (the
 *            dK/dV going home) backward, Ulysses adds two all-to-alls each
 *            way; the projections either side become pieces of their own
 *            (2 a pass), and recompute runs the forward core again; at
 *            detailed fidelity each rank's transfer is an op;
 *   ZeRO-3   a weight all-gather before every F and B pass (dp > 1);
 *   step     per device the DP buckets and the optimizer: a few, ignored.
 * The estimate is meant to be within a factor of about two; the graph's own
 * cap (taskgraph.h) counts exactly and catches what it misses. */
#include "estimate.h"

#include "sim/strategy/collective.h"
#include "sim/strategy/schedule.h"

/* Transfers a collective of `n` chips becomes at detailed fidelity (a ring
 * all-reduce's 2(n − 1) steps of n transfers), or 1 at fast, for a tree, or
 * for a ring inside one node of a full mesh (collective.c keeps those one
 * op). */
static double coll_events(const struct config *cfg, const struct system *sys, int n)
{
    if (cfg->run.fidelity != FIDELITY_DETAILED || n <= 1 || cfg->run.collective == COLL_TREE)
        return 1;
    if (sys && sys->scaleup.topo == TOPO_FULL_MESH && n <= sys->chips_per_node) return 1;
    return 2.0 * n * (n - 1);
}

/* Both estimates: the step's events, and the pieces its per-stage pass
 * programs hold (one microbatch's, on every stage and chunk). */
static void estimate(const struct config *cfg, const struct model *m, const struct system *sys,
                     double *events, double *pieces)
{
    int pp = cfg->parallel.pp, tp = cfg->parallel.tp, dp = cfg->parallel.dp;
    struct pipe_shape shape = { .devices = pp, .chunks = cfg->parallel.vpp,
                                .microbatches = config_microbatches(cfg) };
    double ops = schedule_ops_estimate(cfg->training.schedule, &shape);
    const struct schedule_kind *k = schedule_find(cfg->training.schedule);
    double passes = k && k->passes > 0 ? k->passes : 3;
    double stage_mbs = ops / passes; /* (stage, microbatch) pairs */
    double stages = stage_mbs / shape.microbatches;
    double sends = stages > 1 ? 2.0 * (stages - 1) * shape.microbatches : 0;

    double per_stage_mb = passes; /* ops per (stage, microbatch) without cuts */
    bool ep = cfg->parallel.ep > 1;
    if (m && (tp > 1 || ep)) {
        double layers = (double)m->n_layers / stages, moe = 0;
        for (int l = 0; l < m->n_layers; l++) moe += m->layer[l].moe;
        moe /= stages;
        /* Pieces of F, B and W per layer; with tp = 1 a dense layer's pieces
         * merge with their neighbours', and only MoE layers cut the pass. */
        double compute = tp > 1 ? 6 * layers : 4 * moe, comm = 0;
        if (tp > 1) comm += (cfg->parallel.sp || cfg->parallel.tsp ? 8 : 4) * layers;
        if (ep) comm += 6 * moe;
        per_stage_mb = compute + comm * coll_events(cfg, sys, tp);
        if (per_stage_mb < passes) per_stage_mb = passes;
    }
    int cp = cfg->parallel.cp;
    if (m && cp > 1) {
        /* Hybrid with the degree left to context.c: counted as a ring of
         * every rank (the most pieces). */
        int u = cfg->parallel.cp_kind == CP_ULYSSES ? cp
                : cfg->parallel.cp_kind == CP_HYBRID && cfg->parallel.cp_ulysses > 0
                    ? cfg->parallel.cp_ulysses : 1;
        double r = cp / u, attn = 0;
        for (int l = 0; l < m->n_layers; l++)
            attn += m->layer[l].kind == LAYER_DECODER &&
                    (m->layer[l].mixer == MIXER_ATTENTION || m->layer[l].mixer == MIXER_MLA);
        attn /= stages;
        /* At detailed fidelity every rank's transfer is an op: a ring step
         * is r sends, an all-to-all u(u − 1); at fast, one op each. */
        bool det = cfg->run.fidelity == FIDELITY_DETAILED;
        double step = det ? r : 1, a2a = u > 1 ? 2 * (det ? u * (u - 1.0) : 1) : 0;
        double fwd = r + (r - 1) * step + a2a + 2;
        double bwd = r + r * step + a2a + 2;
        if (cfg->training.recompute != RECOMPUTE_NONE) bwd += fwd;
        per_stage_mb += attn * (fwd + bwd);
    }
    if (m && cfg->training.zero >= 3 && dp > 1)
        per_stage_mb += 2 * coll_events(cfg, sys, dp) + 4; /* gathers and their buffers */
    *events = stage_mbs * per_stage_mb + sends;
    *pieces = stages * per_stage_mb;
}

double sim_events_estimate(const struct config *cfg, const struct model *m,
                           const struct system *sys)
{
    double events, pieces;
    estimate(cfg, m, sys, &events, &pieces);
    return events;
}

double sim_plan_pieces_estimate(const struct config *cfg, const struct model *m,
                                const struct system *sys)
{
    double events, pieces;
    estimate(cfg, m, sys, &events, &pieces);
    return pieces;
}
