/* sim.c — one training step of a scenario, end to end; see sim.h.
 *
 * Steps: load the model (or take the synthetic times), load the chip
 * catalogue and the system, generate the schedule, price every stage, build
 * the task graph (pipeline ops, data-parallel gradient all-reduce, optimizer
 * step), run the engine, then fold the engine's op times and memory into the
 * metrics of DESIGN.md §3. */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "price.h"
#include "sim/strategy/collective.h"
#include "sim/strategy/context.h"
#include "sim/strategy/data_parallel.h"
#include "sim/strategy/steady.h"
#include "sim/strategy/tensor.h"
#include "estimate.h"
#include "sim/io/budget.h"
#include "sim/io/units.h"

void sim_stage_layers(int decoders, int stages, const int *per_stage, int s, int *lo, int *hi)
{
    int first, count;
    if (per_stage) {
        /* parallel.stage_layers, in stage order */
        first = 0;
        for (int k = 0; k < s; k++) first += per_stage[k];
        count = per_stage[s];
    } else {
        int base = decoders / stages, rem = decoders % stages;
        /* 0-based decoders before stage s, and how many it holds */
        first = s * base + (s >= 1 ? (s - 1 < rem ? s - 1 : rem) : 0);
        count = base + (s >= 1 && s - 1 < rem ? 1 : 0);
    }
    *lo = s == 0 ? 0 : 1 + first;
    *hi = s == stages - 1 ? decoders + 1 : first + count;
}

void sim_chunk_layers(const struct pipe_program *prog, const int *device_layers, int *out)
{
    int S = prog->stages, D = prog->devices;
    int *chunks = mp_xcalloc((size_t)D, sizeof *chunks), *seen = mp_xcalloc((size_t)D, sizeof *seen);
    for (int st = 0; st < S; st++) chunks[prog->device_of[st]]++;
    for (int st = 0; st < S; st++) {
        int d = prog->device_of[st], v = chunks[d], c = seen[d]++;
        int base = device_layers[d] / v, rem = device_layers[d] % v;
        /* as the even split: the extra layers to chunks 1, 2, ... */
        out[st] = base + (c >= 1 && c - 1 < rem ? 1 : 0);
    }
    free(chunks);
    free(seen);
}

static struct cost_params sim_cost_params(const struct sim *s)
{
    const struct config *cfg = &s->cfg;
    return (struct cost_params){
        .seq_len = cfg->model.seq_len, .micro_batch = cfg->training.micro_batch,
        .tp = cfg->parallel.tp, .sp = cfg->parallel.sp || cfg->parallel.tsp,
        .recompute = cfg->training.recompute, .weight_bits = cfg->model.weight_bits,
        .activation_bits = cfg->model.activation_bits, .cp = cfg->parallel.cp,
        .flash = cfg->training.attention == ATTENTION_FLASH, .no_dropout = !cfg->training.dropout,
        .mtp = true, /* issue 15: DeepSeek's MTP modules train with the model */
    };
}

/* Price each stage from its layers' kernels on the chip (price.c); a
 * context-parallel decoder's attention core is context.h's, block by block
 * (its compute pieces; tensor.c lays out its transfers). */
static void price_transformer(struct sim *s)
{
    int S = s->prog.stages, L = s->model.decoders;
    struct cost_params cp = sim_cost_params(s);
    for (int st = 0; st < S; st++) {
        int lo, hi;
        sim_stage_layers(L, S, s->stage_decoders, st, &lo, &hi);
        struct stage_cost *c = &s->stage_cost[st];
        memset(c, 0, sizeof *c);
        c->layer_first = lo;
        c->layer_last = hi;
    }
    price_layers(s);
    for (int st = 0; st < S; st++) {
        struct stage_cost *c = &s->stage_cost[st];
        double f = 0, b = 0, w = 0, rc = 0;
        for (int l = c->layer_first; l <= c->layer_last; l++) {
            const struct layer_price *lp = &s->price[l];
            f += (double)layer_price_pass(lp, KPASS_F);
            b += (double)layer_price_pass(lp, KPASS_B) + (double)lp->recompute;
            w += (double)layer_price_pass(lp, KPASS_W);
            /* The re-run forward's share of the backward, for the step
             * accounting (tensor.c lays the same parts out). */
            rc += (double)lp->recompute;
            struct layer_cost lc;
            model_layer_cost(&s->model, l, &cp, &lc);
            if (s->has_context && context_layer_applies(&s->context, l)) {
                double cf = (double)context_core_time(&s->context, l, false);
                f += cf;
                b += (double)context_core_time(&s->context, l, true);
                /* Recompute reruns the core, ring and all (Megatron-Core
                 * checkpoints core attention under selective recompute). */
                if (cp.recompute != RECOMPUTE_NONE) b += cf, rc += cf;
            }
            if (cp.recompute == RECOMPUTE_FULL && s->model.layer[l].kind == LAYER_DECODER) {
                /* The backward rebuilds one layer's activations at a time, as
                 * selective recompute would keep them. */
                struct cost_params sel = cp;
                sel.recompute = RECOMPUTE_SELECTIVE;
                struct layer_cost lw;
                model_layer_cost(&s->model, l, &sel, &lw);
                if (lw.act_bytes > c->work_bytes) c->work_bytes = lw.act_bytes;
            }
            c->act_bytes += lc.act_bytes;
            c->act_w_bytes += lc.act_w_bytes;
            c->send_bytes = lc.boundary_bytes; /* the last layer's output leaves */
        }
        /* Each part is at most MP_TIME_HUGE (every kernel's time saturates);
         * check_horizon reports a sum past it before the engine runs. */
        c->t_f = mp_time_from_ps(f);
        c->t_b = mp_time_from_ps(b);
        c->t_w = mp_time_from_ps(w);
        c->t_rc = rc < (double)c->t_b ? mp_time_from_ps(rc) : c->t_b;
        if (c->act_w_bytes > c->act_bytes) c->act_w_bytes = c->act_bytes;
    }
}

/* Synthetic stages: the [synthetic] times are per device per microbatch, split
 * evenly over the chunks a device holds. */
static void price_synthetic(struct sim *s)
{
    const struct config *cfg = &s->cfg;
    int S = s->prog.stages, v = S / s->prog.devices;
    for (int st = 0; st < S; st++) {
        struct stage_cost *c = &s->stage_cost[st];
        *c = (struct stage_cost){
            .t_f = cfg->synthetic.forward / v,
            .t_b = cfg->synthetic.backward_input / v,
            .t_w = cfg->synthetic.backward_weight / v,
            .act_bytes = cfg->synthetic.activation / v,
            .act_w_bytes = cfg->synthetic.activation_w / v,
            .send_bytes = 0,
            .layer_first = st, .layer_last = st,
        };
    }
}

/* The tensor-parallel passes (tensor.h) when there is a TP group, or when
 * data-parallel buckets need the last backward cut per layer. */
static void plan_tensor(struct sim *s)
{
    const struct config *cfg = &s->cfg;
    bool split = cfg->training.dp_overlap && cfg->parallel.dp * cfg->parallel.cp > 1;
    if (!s->has_model || (cfg->parallel.tp <= 1 && !split && !s->has_experts && !s->has_context))
        return;
    int S = s->prog.stages;
    int *first = mp_xmalloc((size_t)S * sizeof *first), *last = mp_xmalloc((size_t)S * sizeof *last);
    int *lane = mp_xmalloc((size_t)S * sizeof *lane);
    for (int st = 0; st < S; st++) {
        first[st] = s->stage_cost[st].layer_first;
        last[st] = s->stage_cost[st].layer_last;
        lane[st] = s->chip_of_device[s->prog.device_of[st]];
    }
    struct cost_params cp = sim_cost_params(s);
    if (s->has_experts) cp.ep = cfg->parallel.ep;
    struct tensor_input in = {
        .model = &s->model, .cp = &cp, .sys = &s->sys, .chip = &s->sys.chip,
        .layer_first = first, .layer_last = last, .lane = lane, .stages = S,
        .tsp = cfg->parallel.tsp, .overlap = cfg->parallel.tp_overlap, .split_last = split,
        .comm_overlap = cfg->parallel.tp_comm_overlap, .overlap_hidden = s->calib.comm_overlap,
        .fidelity = (enum fidelity)cfg->run.fidelity, .algo = (enum coll_algo)cfg->run.collective,
        .price = s->price, .ep = s->has_experts,
        .context = s->has_context ? &s->context : NULL,
    };
    tensor_plan_build(&s->tensor, &in);
    s->has_tensor = true;
    free(first);
    free(last);
    free(lane);
}

/* A plan's messages (experts.c, context.c) name the key but not the file:
 * put the scenario's path in front, once. Returns rc. */
static int name_scenario(const struct config *cfg, int rc, struct mp_error *err)
{
    if (cfg->path[0] && strncmp(err->msg, cfg->path, strlen(cfg->path)) != 0) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        mp_fail(err, rc, "%s: %.*s", cfg->path, (int)(sizeof msg / 2), msg);
    }
    return rc;
}

/* Expert parallelism (experts.h): the group of stage 0 (its lane first,
 * then the next ep − 1 chips of the stage's tp × dp) and every
 * microbatch's routing, drawn before the graph is built. */
static int plan_experts(struct sim *s, struct mp_error *err)
{
    const struct config *cfg = &s->cfg;
    int ep = cfg->parallel.ep;
    if (ep <= 1) return MP_OK;
    if (!s->has_model)
        return mp_fail(err, MP_ERR_INPUT, "%s%skey parallel.ep = %d: expected 1 for a synthetic "
                       "model (it has no experts)", cfg->path, cfg->path[0] ? ": " : "", ep);
    char trace[1024] = "";
    int rc;
    if (cfg->experts.routing == EP_TRACE && !strcmp(cfg->experts.trace, "none")) {
        char where[CONFIG_STR + 128];
        config_where(cfg, "experts.routing", where, sizeof where);
        return mp_fail(err, MP_ERR_INPUT, "%s = trace needs experts.trace, a CSV of expert "
                       "loads (one row per MoE layer, one column per expert): got none", where);
    }
    if (cfg->experts.routing == EP_TRACE &&
        (rc = config_resolve_key(cfg, "experts.trace", "", NULL, trace, sizeof trace, err)))
        return rc;
    int *group = mp_xmalloc((size_t)ep * sizeof *group);
    for (int r = 0; r < ep; r++) group[r] = s->chip_of_device[0] + r;
    int act = cfg->model.activation_bits;
    struct ep_input in = {
        .model = &s->model, .sys = &s->sys, .group = group, .ep = ep,
        .microbatches = s->res.microbatches,
        .tokens_per_rank = (double)cfg->model.seq_len * cfg->training.micro_batch /
                           ((double)cfg->parallel.tp * cfg->parallel.cp),
        .routing = cfg->experts.routing, .skew = cfg->experts.skew,
        .concentration = cfg->experts.concentration, .capacity_factor = cfg->experts.capacity_factor,
        .trace = trace, .redundant = cfg->experts.redundant, .max_nodes = cfg->experts.max_nodes,
        .a2a = cfg->experts.all_to_all, .act_bits = act,
        .dispatch_bits = cfg->experts.dispatch_bits ? cfg->experts.dispatch_bits : act,
        .weight_bits = cfg->model.weight_bits, .seed = (unsigned long)cfg->run.seed,
        .show_ranks = cfg->experts.show_ranks, .expert_time = price_expert, .op_ctx = s,
    };
    rc = experts_plan_build(&s->experts, &in, err);
    free(group);
    if (rc) return name_scenario(cfg, rc, err);
    s->has_experts = true;
    return MP_OK;
}

/* data_parallel.c shards optimizer state (ZeRO ≥ 1), gradients (≥ 2) and
 * weights (3) over the dp replicas; a chip's routed experts are replicated
 * only over tp × dp / ep chips (the expert-data-parallel group), so their
 * share is topped up here to what that smaller group leaves. */
static void expert_state_memory(struct sim *s)
{
    const struct config *cfg = &s->cfg;
    int ep = cfg->parallel.ep, zero = cfg->training.zero, dpcp = cfg->parallel.dp * cfg->parallel.cp;
    double edp = (double)cfg->parallel.tp * dpcp / ep, full[3], dpb[3];
    if (zero == 0 || edp >= dpcp) return;
    dp_bytes_per_param(cfg->model.weight_bits, 0, 1, full);
    dp_bytes_per_param(cfg->model.weight_bits, zero, dpcp, dpb);
    const struct pipe_program *prog = &s->prog;
    int S = prog->stages;
    for (int d = 0; d < prog->devices; d++) {
        double experts = 0;
        for (int q = 0; q < prog->paths; q++)
            for (int st = 0; st < S; st++) {
                if (prog->device_of[q * S + st] != d) continue;
                const struct stage_cost *c = &s->stage_cost[st];
                for (int l = c->layer_first; l <= c->layer_last; l++)
                    experts += s->model.layer[l].expert_params / ep;
            }
        static const enum mem_cat cat[3] = { MEM_WEIGHTS, MEM_GRADS, MEM_OPTIMIZER };
        for (int k = 0; k < 3; k++) {
            bool sharded = (k == 2 && zero >= 1) || (k == 1 && zero >= 2) || (k == 0 && zero >= 3);
            if (sharded) tg_static_alloc(&s->g, s->chip_of_device[d], cat[k],
                                         experts * (full[k] / edp - dpb[k]));
        }
    }
}

/* ---- offload (training.offload, offload.h) ------------------------------- */

/* What one node's host memory holds: every chip of a node offloads as much
 * as the busiest simulated chip (chips of a node are TP ranks of one stage
 * or stages alike: assumed symmetric), its optimizer state and weights
 * (dp_host_bytes) and, offloading activations, the stashes of its peak
 * microbatches in flight. */
static void offload_host_need(struct sim *s, const struct dp_state *dp,
                              const struct pipe_program *prog)
{
    if (s->offload.kind == OFFLOAD_NONE) return;
    double most = 0;
    for (int d = 0; d < prog->devices; d++) {
        double b = dp_host_bytes(dp, d);
        if (s->offload.kind == OFFLOAD_ALL) {
            int mb_units, w_units;
            pipe_peak_inflight(&s->prog, d, 0, &mb_units, &w_units);
            double act = 0;
            for (int st = 0; st < prog->stages; st++)
                if (prog->device_of[st] == d && s->stage_cost[st].act_bytes > act)
                    act = s->stage_cost[st].act_bytes;
            b += mb_units * act;
        }
        if (b > most) most = b;
    }
    s->res.host_mem_bytes = most * s->sys.chips_per_node;
    s->res.host_mem_capacity = s->offload.host.mem_bytes;
}

/* The offload asked for must have a host to go to, and ZeRO under it as
 * DeepSpeed does (offload.h). */
static int offload_check(struct sim *s, struct mp_error *err)
{
    const struct config *cfg = &s->cfg;
    int k = cfg->training.offload;
    s->offload = (struct offload){ .kind = (enum offload_kind)k, .host = s->sys.host,
                                   .link_base = s->sys.n_links };
    if (k == OFFLOAD_NONE) return MP_OK;
    char v[64];
    config_format_value(cfg, config_find_key("training.offload"), v, sizeof v);
    const char *at = cfg->path[0] ? cfg->path : "scenario";
    if (!s->has_model)
        return mp_fail(err, MP_ERR_INPUT, "%s: key training.offload = %s: expected none for a "
                       "synthetic model (it has no optimizer state or weights to offload)", at, v);
    if (!s->sys.host.present)
        return mp_fail(err, MP_ERR_INPUT, "%s: key training.offload = %s: system %s has no "
                       "[host] section (host memory per node and the host link); expected none, "
                       "or a system with [host]", at, v, s->sys.name);
    if (k == OFFLOAD_OPTIMIZER && cfg->training.zero < 1)
        return mp_fail(err, MP_ERR_INPUT, "%s: key training.offload = %s: expected training.zero "
                       ">= 1 (ZeRO-Offload keeps each chip's partition of the optimizer state on "
                       "the host), got zero = 0", at, v);
    if (k >= OFFLOAD_WEIGHTS && cfg->training.zero < 3)
        return mp_fail(err, MP_ERR_INPUT, "%s: key training.offload = %s: expected training.zero "
                       "= 3 (ZeRO-Infinity fetches offloaded weights layer by layer with stage "
                       "3), got zero = %d", at, v, cfg->training.zero);
    return MP_OK;
}

/* Host memory over its capacity makes the run infeasible, as a chip's does. */
static int check_host_memory(struct sim *s, struct mp_error *err)
{
    struct sim_result *r = &s->res;
    if (s->offload.kind == OFFLOAD_NONE || r->host_mem_bytes <= r->host_mem_capacity) return MP_OK;
    snprintf(r->infeasible_reason, sizeof r->infeasible_reason,
             "does not fit in host memory: training.offload keeps %.2f GB per node (%d chips × "
             "%.2f GB) but [host] memory is %.2f GB", r->host_mem_bytes / 1e9,
             s->sys.chips_per_node, r->host_mem_bytes / s->sys.chips_per_node / 1e9,
             r->host_mem_capacity / 1e9);
    r->feasible = false;
    return mp_fail(err, MP_ERR_INFEASIBLE, "%s", r->infeasible_reason);
}

/* Weights, gradients and optimizer state, the DP gradient sync and the
 * optimizer step (data_parallel.h), hooked into the pipeline build. */
static void build_graph(struct sim *s, struct pipeline_plan *plan, struct pipeline_out *po)
{
    const struct config *cfg = &s->cfg;
    double *layer_params = NULL, *layer_flops = NULL;
    if (s->has_model) {
        struct cost_params cp = sim_cost_params(s);
        if (s->has_experts) cp.ep = cfg->parallel.ep;
        layer_params = mp_xmalloc((size_t)s->model.n_layers * sizeof *layer_params);
        layer_flops = mp_xmalloc((size_t)s->model.n_layers * sizeof *layer_flops);
        for (int l = 0; l < s->model.n_layers; l++) {
            struct layer_cost lc;
            model_layer_cost(&s->model, l, &cp, &lc);
            layer_params[l] = lc.params;
            layer_flops[l] = lc.flops_f;
        }
    }
    struct dp_input in = {
        .prog = plan->prog, .stage = s->stage_cost, .chip_of_device = s->chip_of_device,
        .sys = &s->sys, .tp = cfg->parallel.tp, .dp = cfg->parallel.dp * cfg->parallel.cp,
        .cp = cfg->parallel.cp, .zero = cfg->training.zero,
        .overlap = cfg->training.dp_overlap, .bucket_bytes = cfg->training.dp_bucket,
        .fidelity = (enum fidelity)cfg->run.fidelity, .algo = (enum coll_algo)cfg->run.collective,
        .weight_bits = cfg->model.weight_bits, .layer_params = layer_params,
        .layer_flops = layer_flops,
        .grad_bits = cfg->training.grad_reduce == PRECISION_BF16 ? 16 : 32,
        .optimizer_bits = cfg->training.optimizer_state == PRECISION_BF16 ? 16 : 32,
        .overlap_param_gather = cfg->training.overlap_param_gather,
        .synthetic_weights = s->has_model ? 0 : cfg->synthetic.weights,
        .memory_time = s->has_model ? price_memory : NULL, .ctx = s, .offload = &s->offload,
    };
    struct dp_state dp;
    dp_init(&dp, &s->g, &in);
    offload_host_need(s, &dp, plan->prog);
    plan->act_offload = s->offload.kind == OFFLOAD_ALL ? &s->offload : NULL;
    plan->tensor = s->has_tensor ? &s->tensor : NULL;
    plan->on_grad = dp_on_grad;
    plan->units = dp_units(&dp);
    plan->before_unit = dp_before_unit;
    plan->after_unit = dp_after_unit;
    plan->hook_ctx = &dp;
    if (s->has_experts) {
        plan->experts = &s->experts;
        plan->ep_show_ranks = cfg->experts.show_ranks;
        expert_state_memory(s);
    }
    pipeline_build(&s->g, plan, po);
    dp_finish(&dp, &s->g, po);
    dp_release(&dp);
    free(layer_params);
    free(layer_flops);
}

/* Duration of DualPipe's overlapped F&B op on one stage: the synthetic key,
 * split over the chunks a device holds like the other synthetic times; 0
 * (and always for transformer models, which have no overlap model yet) lets
 * the pipeline builder charge F + B + W, i.e. no overlap. */
static mp_time fb_time(const struct sim *s)
{
    if (s->has_model || s->cfg.synthetic.forward_backward <= 0) return 0;
    return s->cfg.synthetic.forward_backward / (s->prog.stages / s->prog.devices);
}

static void fmt_ms(char *buf, size_t size, double ps)
{
    snprintf(buf, size, "%.4g ms", ps / 1e9);
}

/* GPipe's and 1F1B's closed form on the stages' real times. T_d is the
 * time stage d spends on one microbatch of its own: compute, recompute and
 * the collectives it waits for inside its passes (TP, CP, EP; the step
 * accounting's parts, step_split.h), and h one stage-to-stage hand-off.
 * The first microbatch fills the pipeline and the last drains it
 * (Σ T_d + 2(p−1)h), the other m − 1 pass at the slowest stage's pace,
 * and the stage that finishes last (stage 0) then does its step work
 * (exposed DP, optimizer): that is the step. Each stage waits for the
 * others what its own parts leave of it; the mean over stages is the
 * predicted bubble. Uniform stages, h = 0 and no step work give
 * (p−1)/(m+p−1) again; with hops alone (teach-bubbles, hop = 1 ms) it is
 * exact. */
static void real_stage_form(struct sim *s)
{
    struct sim_result *r = &s->res;
    int P = r->stages;
    double m = r->microbatches, sum = 0, most = 0, rest_mean = 0, h = 0;
    if (P < 2 || m <= 0) return;
    for (int d = 0; d < P; d++) {
        const mp_time *x = r->stage[d].split.part;
        double own = (double)(x[SPLIT_COMPUTE] + x[SPLIT_RECOMPUTE] + x[SPLIT_TP] + x[SPLIT_CP] +
                              x[SPLIT_EP]);
        sum += own / m;
        if (own / m > most) most = own / m;
        rest_mean += (double)(r->step_time - x[SPLIT_BUBBLE]) / P;
    }
    /* h: the mean stage-to-stage transfer, over the step as simulated in
     * full (an op of a skipped run stands for engine_op_count of them).
     * Summed in integers: the double sum of the full run is exact too. */
    int64_t sends = 0;
    mp_time hsum = 0;
    /* In locals: engine_op_count is a call, after which the compiler
     * would load the graph's ops and count again for every op. */
    const struct op *ops = s->g.ops;
    for (int i = 0, n_ops = s->g.n_ops; i < n_ops; i++)
        if (ops[i].tag == TAG_SEND && ops[i].comm == COMM_PP) {
            int64_t n = engine_op_count(&s->e, i);
            hsum += n * (s->e.end[i] - s->e.start[i]);
            sends += n;
        }
    if (sends) h = (double)hsum / (double)sends;
    const mp_time *x0 = r->stage[0].split.part;
    double tail = (double)(x0[SPLIT_DP] + x0[SPLIT_OPTIMIZER] + x0[SPLIT_OTHER]);
    double step = sum + (m - 1) * most + 2 * (P - 1) * h + tail;
    r->formula_real_bubble_s = (step - rest_mean) / 1e12;
    if (r->formula_real_bubble_s < 0) r->formula_real_bubble_s = 0;
    double sim_s = 0;
    for (int d = 0; d < P; d++) sim_s += mp_seconds(r->stage[d].split.part[SPLIT_BUBBLE]) / P;
    r->formula_real_simulated_s = sim_s;
    r->has_formula_real = true;
    char a[32], b[32], c[32], d[32], e[32], t[32];
    units_format_duration(mp_time_from_ps(step), a, sizeof a);
    units_format_duration(mp_time_from_ps(most), b, sizeof b);
    units_format_duration(mp_time_from_ps(h), c, sizeof c);
    units_format_duration(mp_time_from_ps(tail), t, sizeof t);
    units_format_duration(mp_time_from_ps(r->formula_real_bubble_s * 1e12), d, sizeof d);
    units_format_duration(mp_time_from_ps(sim_s * 1e12), e, sizeof e);
    snprintf(r->formula_real_text, sizeof r->formula_real_text,
             "on the real stage times T: sum(T) + (m-1) max T + 2(p-1) h + step work = %s "
             "(max T %s, h %s, step work %s), bubble %s per stage, simulated %s", a, b, c, t, d, e);
}

/* Closed forms of cases.md §3, set beside the simulated figure each one
 * predicts. They assume uniform stages and free hand-offs; they are evaluated
 * with the mean stage times, and when a stage differs from the mean or a
 * hand-off takes time the text says so, because that is exactly where theory
 * and simulation part (scenarios/uneven-stages.ini). Schedules without a
 * closed form (zb-auto; zb-v unless T_F = T_B = T_W) print none. */
static void textbook_formula(struct sim *s)
{
    struct sim_result *r = &s->res;
    const char *name = s->cfg.training.schedule;
    int S = s->prog.stages, P = s->prog.devices;
    double p = P, m = r->microbatches, v = (double)S / P;
    /* Mean chunk times; device times per microbatch are v chunks' worth. */
    double cf = 0, cb = 0, cw = 0;
    bool uneven = false;
    for (int st = 0; st < S; st++) {
        const struct stage_cost *c = &s->stage_cost[st], *c0 = &s->stage_cost[0];
        cf += (double)c->t_f;
        cb += (double)c->t_b;
        cw += (double)c->t_w;
        uneven |= c->t_f != c0->t_f || c->t_b != c0->t_b || c->t_w != c0->t_w;
    }
    cf /= S, cb /= S, cw /= S;
    double tf = cf * v, tb = cb * v, tw = cw * v, t = tf + tb + tw;

    char body[320], a[32], b[32], c[32];
    double pred, sim = r->bubble, step = 0;
    const char *figure = "bubble";
    bool idle_form = false, needs_f_eq_b = false;
    if (!strcmp(name, "gpipe") || !strcmp(name, "1f1b")) {
        real_stage_form(s);
        step = (m + p - 1) * t;
        pred = (p - 1) / (m + p - 1);
        snprintf(body, sizeof body, "(p-1)/(m+p-1) = %g/%g = %.4f", p - 1, m + p - 1, pred);
    } else if (!strcmp(name, "interleaved")) {
        step = m * t + (p - 1) * t / v;
        pred = 1 - m * t / step;
        snprintf(body, sizeof body, "((p-1)/v)/(m+(p-1)/v) = %g/%g = %.4f", (p - 1) / v,
                 m + (p - 1) / v, pred);
    } else if (!strcmp(name, "zb-h1") || !strcmp(name, "zb-h2")) {
        /* ZB-H2's warm-up staggers the stages' starts, so its form predicts
         * the largest stage span (the zero-bubble papers' measure), not the
         * makespan; ZB-H1's stages all end together, so both agree. */
        bool h2 = name[4] == '2';
        double idle = (p - 1) * (tf + tb - (h2 ? 2 : 1) * tw);
        if (idle < 0) idle = 0;
        double span = m * t + idle;
        pred = idle / span;
        if (h2) {
            figure = "bubble_span";
            sim = r->bubble_span;
        } else {
            step = span;
        }
        fmt_ms(a, sizeof a, idle);
        fmt_ms(b, sizeof b, span);
        snprintf(body, sizeof body, "%s(p-1)(T_F+T_B-%sT_W) over the %s = %s/%s = %.4f",
                 h2 ? "largest span: " : "", h2 ? "2" : "", h2 ? "span" : "step", a, b, pred);
    } else if (!strcmp(name, "zb-v")) {
        /* Zero bubble inside each stage's span needs equal pass times and
         * enough microbatches to fill the V (m ≥ 2p). */
        if (uneven || cf != cb || cb != cw || m < 2 * p) return;
        pred = 0;
        figure = "bubble_span";
        sim = r->bubble_span;
        snprintf(body, sizeof body, "largest span: 0 with T_F = T_B = T_W and m >= 2p");
    } else if (!strcmp(name, "dualpipe") || !strcmp(name, "dualpipev")) {
        /* DeepSeek's (PP/2−1)(F&B+B−3W), per device, with PP the number of
         * stages (pp for DualPipe, 2·pp for the V), chunk times, B the full
         * backward. It is the largest per-device idle, step − busy; it is
         * derived with the forward equal to the input-gradient pass. */
        double fb = fb_time(s) > 0 ? (double)fb_time(s) : cf + cb + cw;
        double idle = (S / 2.0 - 1) * (fb + (cb + cw) - 3 * cw);
        mp_time worst = 0;
        for (int d = 0; d < P; d++)
            if (r->step_time - r->stage[d].busy > worst) worst = r->step_time - r->stage[d].busy;
        pred = idle / 1e12;
        sim = mp_seconds(worst);
        figure = "idle_s";
        idle_form = true;
        needs_f_eq_b = cf != cb;
        char w[32], i[32];
        fmt_ms(a, sizeof a, fb);
        fmt_ms(b, sizeof b, cb + cw);
        fmt_ms(c, sizeof c, cw);
        fmt_ms(i, sizeof i, idle);
        fmt_ms(w, sizeof w, (double)worst);
        snprintf(body, sizeof body,
                 "idle per device (PP/2-1)(F&B+B-3W) = %g × (%s + %s - 3 × %s) = %s, "
                 "simulated %s (largest step - busy)", S / 2.0 - 1, a, b, c, i, w);
    } else {
        return;
    }
    bool hops = false;
    for (int i = 0; i < s->g.n_ops && !hops; i++)
        hops = s->g.ops[i].stream == STREAM_COMM && s->e.end[i] > s->e.start[i];
    int n = idle_form ? snprintf(r->formula_text, sizeof r->formula_text, "%s", body)
                      : snprintf(r->formula_text, sizeof r->formula_text, "%s, simulated %.4f",
                                 body, sim);
    if (uneven || hops || needs_f_eq_b)
        snprintf(r->formula_text + n, sizeof r->formula_text - (size_t)n, " (%s%s%s)",
                 uneven ? "stages uneven: the form uses their mean" : "",
                 hops ? (uneven ? "; hand-offs not counted" : "hand-offs not counted") : "",
                 needs_f_eq_b ? (uneven || hops ? "; the form assumes F = B" : "the form assumes F = B")
                              : "");
    /* The real-stage form says something new only where the two part. */
    if (!uneven && !hops) r->has_formula_real = false;
    r->has_formula = true;
    r->formula_step = mp_time_from_ps(step);
    r->formula_bubble = pred;
    r->formula_simulated = sim;
    r->formula_figure = figure;
}

static void fold_metrics(struct sim *s)
{
    struct sim_result *r = &s->res;
    const struct engine *e = &s->e;
    int P = s->prog.devices;
    r->step_time = engine_makespan(e);
    r->events = e->events;
    r->stages = P;
    r->stage = mp_xcalloc((size_t)P, sizeof *r->stage);
    /* An expanded run (expand_full) has the count from before. */
    if (r->steady_skipped_periods == 0) r->steady_skipped_periods = engine_skipped_periods(e);
    for (int d = 0; d < P; d++) {
        r->stage[d] = (struct stage_report){ .index = d, .chip = s->chip_of_device[d],
                                             .first_start = -1, .last_end = 0 };
        /* The lane's two streams, in the step as simulated in full: ops run
         * in stream order, so the first op starts first. */
        struct stage_report *st = &r->stage[d];
        for (int k = 0; k < N_STREAMS; k++) {
            int sid = st->chip * N_STREAMS + k;
            if (engine_stream_len(e, sid) == 0) continue;
            mp_time sh;
            int first = engine_stream_op(e, sid, 0, &sh);
            if (st->first_start < 0 || e->start[first] + sh < st->first_start)
                st->first_start = e->start[first] + sh;
            mp_time last = engine_stream_last_end(e, sid);
            if (last > st->last_end) st->last_end = last;
            if (k == STREAM_COMPUTE) st->busy = engine_stream_busy(e, sid);
        }
    }
    r->max_span = 0;
    for (int d = 0; d < P; d++) {
        struct stage_report *st = &r->stage[d];
        if (st->first_start < 0) st->first_start = 0;
        const struct chip_memory *m = &e->mem[st->chip];
        st->peak_mem = m->peak;
        memcpy(st->mem, m->at_peak, sizeof st->mem);
        double unit = s->stage_cost[0].act_bytes;
        st->peak_act_units = unit > 0 ? (int)llround(m->at_peak[MEM_ACTIVATIONS] / unit) : 0;
        mp_time span = st->last_end - st->first_start;
        if (span > r->max_span) r->max_span = span;
    }
    /* Where each picosecond went (step_split.h); exposed communication and
     * the pipeline bubble are its parts. */
    step_split_fold(s);
    double bubble = 0;
    for (int d = 0; d < P; d++) {
        struct stage_report *st = &r->stage[d];
        for (int k = 0; k < N_COMM_KINDS; k++) {
            st->exposed_comm[k] = k == COMM_NONE ? 0 : st->split.part[step_split_of_comm(k)];
            r->exposed_comm_s[k] = k == COMM_NONE ? 0 : mp_seconds(r->split.part[step_split_of_comm(k)]);
        }
        bubble += (double)st->split.part[SPLIT_BUBBLE];
    }
    r->bubble = r->step_time > 0 ? bubble / ((double)P * (double)r->step_time) : 0;
    /* Over the largest span: each stage's idle outside a window of that
     * length is bubble (the stage has no op there), so it comes off. */
    double inside = bubble - (double)P * (double)(r->step_time - r->max_span);
    r->bubble_span = r->max_span > 0 && inside > 0 ? inside / ((double)P * (double)r->max_span) : 0;

    const struct config *cfg = &s->cfg;
    double seconds = mp_seconds(r->step_time);
    double sequences = cfg->training.global_batch;
    r->tokens_per_s = seconds > 0 ? sequences * cfg->model.seq_len / seconds : 0;
    if (s->has_model) {
        r->model_flops = model_step_flops(&s->model, cfg->model.seq_len, sequences);
        /* Hardware FLOPs add what recompute repeats. */
        struct cost_params cp = { .seq_len = cfg->model.seq_len, .micro_batch = 1, .tp = 1,
                                  .recompute = cfg->training.recompute,
                                  .weight_bits = cfg->model.weight_bits,
                                  .activation_bits = cfg->model.activation_bits,
                                  .flash = cfg->training.attention == ATTENTION_FLASH,
                                  .mtp = true };
        double extra = 0;
        for (int l = 0; l < s->model.n_layers; l++) {
            struct layer_cost lc;
            model_layer_cost(&s->model, l, &cp, &lc);
            extra += lc.flops_recompute;
        }
        r->hardware_flops = r->model_flops + extra * sequences;
        double peak = cfg->model.compute_bits == 8 ? s->sys.chip.peak_fp8 : s->sys.chip.peak_bf16;
        double denom = (double)r->n_chips * peak * seconds;
        r->mfu = denom > 0 ? r->model_flops / denom : 0;
        r->hfu = denom > 0 ? r->hardware_flops / denom : 0;
    }
    textbook_formula(s);
}

/* Peak memory over capacity on any simulated chip makes the run infeasible. */
static int check_memory(struct sim *s, struct mp_error *err)
{
    struct sim_result *r = &s->res;
    double cap = s->sys.chip.mem_bytes;
    for (int d = 0; d < r->stages; d++) {
        const struct stage_report *st = &r->stage[d];
        if (st->peak_mem <= cap) continue;
        char need[32], have[32], parts[N_MEM_CATS][32];
        snprintf(need, sizeof need, "%.2f GB", st->peak_mem / 1e9);
        snprintf(have, sizeof have, "%.2f GB", cap / 1e9);
        for (int c = 0; c < N_MEM_CATS; c++) snprintf(parts[c], 32, "%.2f GB", st->mem[c] / 1e9);
        snprintf(r->infeasible_reason, sizeof r->infeasible_reason,
                 "does not fit in memory: chip %d (stage %d, %s) needs %s at its peak but has %s "
                 "(weights %s, grads %s, optimizer %s, activations %s, kv %s, comm buffers %s)",
                 st->chip, d, s->sys.chip.name, need, have, parts[MEM_WEIGHTS],
                 parts[MEM_GRADS], parts[MEM_OPTIMIZER], parts[MEM_ACTIVATIONS], parts[MEM_KV],
                 parts[MEM_COMM]);
        r->feasible = false;
        return mp_fail(err, MP_ERR_INFEASIBLE, "%s", r->infeasible_reason);
    }
    return MP_OK;
}

/* zb-auto and zb-v search with relative pass times, and zb-auto with a
 * memory limit in M_B (schedule.h). A synthetic model's times and a limit
 * given as a count are known before pricing; a transformer's times come from
 * its priced stage 0 and a limit in bytes needs M_B, so in those cases the
 * schedule is built a second time once the stages are priced (its layout,
 * and so the pricing, stay the same). Zero times are made tiny rather than
 * left at 0, which the schedule would read as "equal". */
static void zb_shape_times(struct pipe_shape *shape, double tf, double tb, double tw)
{
    double unit = tf > 0 ? tf : tb > 0 ? tb : tw;
    if (unit <= 0) return;
    shape->t_f = tf > 0 ? tf / unit : 1e-6;
    shape->t_b = tb > 0 ? tb / unit : 1e-6;
    shape->t_w = tw > 0 ? tw / unit : 1e-6;
}

static bool zb_needs_prices(const struct sim *s)
{
    const char *name = s->cfg.training.schedule;
    if (!strcmp(name, "zb-v")) return s->has_model;
    return !strcmp(name, "zb-auto") && (s->has_model || s->cfg.training.memory_limit.bytes);
}

/* A limit in bytes counts the largest stage's M_B, so that it holds on every
 * device (a transformer's first and last stages stash more than the rest). */
static void zb_priced_shape(const struct sim *s, struct pipe_shape *shape)
{
    const struct stage_cost *c0 = &s->stage_cost[0];
    if (s->has_model) zb_shape_times(shape, (double)c0->t_f, (double)c0->t_b, (double)c0->t_w);
    const struct config_mem_amount *lim = &s->cfg.training.memory_limit;
    if (lim->bytes && lim->value > 0) {
        double mb = 0;
        for (int st = 0; st < s->prog.stages; st++)
            if (s->stage_cost[st].act_bytes > mb) mb = s->stage_cost[st].act_bytes;
        /* No activations: memory cannot bind; m in flight is GPipe's most. */
        shape->mem_limit = mb > 0 ? lim->value / mb
                                  : (double)(shape->microbatches > shape->devices
                                                 ? shape->microbatches : shape->devices);
    }
}

/* The inputs an op's duration came from, for the horizon message: the
 * chip's catalogue figures and the model's shape for compute, the fabric
 * and the bytes for communication, the [synthetic] times for a synthetic
 * model. */
static void op_inputs(const struct sim *s, const struct op *o, char *buf, size_t size)
{
    const struct config *cfg = &s->cfg;
    char what[512];
    if (o->kind == OP_COMPUTE && !s->has_model) {
        char f[32], b[32], w[32];
        units_format_duration(cfg->synthetic.forward, f, sizeof f);
        units_format_duration(cfg->synthetic.backward_input, b, sizeof b);
        units_format_duration(cfg->synthetic.backward_weight, w, sizeof w);
        snprintf(buf, size, "synthetic.forward = %s, backward_input = %s, backward_weight = %s",
                 f, b, w);
    } else if (o->kind == OP_COMPUTE) {
        chip_describe(&s->sys.chip, what, sizeof what);
        snprintf(buf, size, "%s, model %s (hidden %d, %d layers), model.seq_len = %d, "
                 "training.micro_batch = %d, parallel.tp = %d", what, s->model.name,
                 s->model.hidden, s->model.decoders, cfg->model.seq_len,
                 cfg->training.micro_batch, cfg->parallel.tp);
    } else {
        char bytes[32];
        units_format_size(o->bytes, bytes, sizeof bytes);
        system_describe(&s->sys, what, sizeof what);
        snprintf(buf, size, "%s moving %s", what, bytes);
    }
}

/* The engine adds op durations to its clock. Whenever an op is unfinished
 * and the graph not stuck, some op is running, so the makespan is at most
 * the sum of all durations: if that sum fits in int64 picoseconds, no time
 * the engine forms can wrap. An op that saturated (common.h: past 2^62 ps),
 * or a sum past int64, is an input error (issues 8, 16) naming the inputs
 * behind the longest op. */
static int check_horizon(const struct sim *s, struct mp_error *err)
{
    mp_time sum = 0, longest_d = 0;
    int longest = -1;
    bool over = false;
    for (int i = 0; i < s->g.n_ops; i++) {
        mp_time d = s->g.ops[i].duration;
        /* d < 0 or saturated (mp_time_saturated) in one unsigned compare. */
        if ((uint64_t)d >= (uint64_t)MP_TIME_HUGE || __builtin_add_overflow(sum, d, &sum)) {
            over = true;
            break;
        }
    }
    if (!over) return MP_OK;
    /* Only an error names the longest op: found then, not on every run. */
    for (int i = 0; i < s->g.n_ops; i++) {
        mp_time d = s->g.ops[i].duration;
        if (longest < 0 || d > longest_d) longest = i, longest_d = d;
    }
    const struct op *o = &s->g.ops[longest];
    char t[64], inputs[768];
    units_format_duration(o->duration, t, sizeof t);
    op_inputs(s, o, inputs, sizeof inputs);
    const char *file = s->cfg.path[0] ? s->cfg.path : "scenario";
    if (mp_time_saturated(o->duration))
        return mp_fail(err, MP_ERR_INPUT,
                       "%s: op %s on chip %d (stage %d) would take 2^62 ps (53 days) or more, "
                       "past the longest duration mpsim counts; it comes from %s: expected %s",
                       file, tg_tag_name(o->tag), o->chip, o->stage, inputs,
                       o->kind != OP_COMPUTE ? "faster links (the system's bandwidths) or fewer "
                       "bytes" : s->has_model ? "a faster chip, or a smaller model.seq_len or "
                       "training.micro_batch" : "shorter [synthetic] times");
    return mp_fail(err, MP_ERR_INPUT,
                   "%s: the step would last longer than int64 picoseconds can count (about "
                   "106 days): its %d ops add up past 2^63 ps, the longest being op %s (%s) on "
                   "chip %d, stage %d, from %s; expected smaller [synthetic] times, "
                   "model.seq_len, training.global_batch or a faster chip and links",
                   file, s->g.n_ops, tg_tag_name(o->tag), t, o->chip, o->stage, inputs);
}

/* Issue 16: the graph keeps at most as many ops as the work budget's memory
 * leaves after the system's chips (sim/io/budget.h); past that the builder
 * only counts (taskgraph.h), and check_work reports the count. */
static int op_cap(const struct sim *s, const struct sim_options *opts)
{
    if (opts->force) return 0; /* only int32's own limit */
    double events = (WORK_BUDGET_BYTES - (double)s->sys.n_chips * WORK_BYTES_PER_CHIP -
                     (double)system_link_count(&s->sys) * WORK_BYTES_PER_LINK) /
                    WORK_BYTES_PER_EVENT;
    if (opts->budget_events > 0 && opts->budget_events < events) events = opts->budget_events;
    return events < 1 ? 1 : events > INT32_MAX ? 0 : (int)events;
}

/* Past the work budget (or the per-run one of opts->budget_bytes)? `events`
 * is the estimate before the schedule is built, or the graph's exact count. */
static int check_work(const struct sim *s, const struct sim_options *opts, double events,
                      double chips, struct mp_error *err)
{
    char what[CONFIG_STR + 96];
    snprintf(what, sizeof what, "%s: the step (%d microbatches, pp %d, schedule %s)",
             s->cfg.path[0] ? s->cfg.path : "scenario", config_microbatches(&s->cfg),
             s->cfg.parallel.pp, s->cfg.training.schedule);
    if (events > INT32_MAX && s->g.over)
        return mp_fail(err, MP_ERR_INPUT, "%s needs %.0f ops, more than the 2^31 an op index "
                       "counts: expected fewer microbatches (training.global_batch) or stages",
                       what, events);
    struct work_estimate w = { .events = events, .chips = chips,
                               .links = (double)system_link_count(&s->sys) };
    /* A chip costs about what an event does (budget.h). */
    if (!opts->force && opts->budget_events > 0 && events + chips > opts->budget_events)
        return mp_fail(err, MP_ERR_INPUT, "%s: %.0f events and %.0f chips, past this run's budget "
                       "of %.0f", what, events, chips, opts->budget_events);
    return work_check(&w, what, "lower training.global_batch", opts->force, err);
}

/* Whether sim_run may simulate a shorter program (steady-state skipping,
 * issue 22): asked for, no MoE layer (routing draws differ per microbatch),
 * and no timeline or trace (those expand the whole step). */
static bool may_skip(const struct sim *s, const struct sim_options *opts)
{
    if (!s->cfg.run.steady_skip || opts->record_memory || opts->record_released) return false;
    for (int l = 0; s->has_model && l < s->model.n_layers; l++)
        if (s->model.layer[l].moe) return false;
    return true;
}

/* Compute ops of a schedule program, over its devices. */
static double program_ops(const struct pipe_program *p)
{
    double n = 0;
    for (int d = 0; d < p->devices; d++) n += p->n_ops[d];
    return n;
}

static int schedule_failed(struct sim *s, int rc, const struct mp_error *err)
{
    if (rc == MP_ERR_INFEASIBLE) {
        s->res.feasible = false;
        snprintf(s->res.infeasible_reason, sizeof s->res.infeasible_reason, "%s", err->msg);
    }
    return rc;
}

/* parallel.stage_layers against the model (config_check has checked its
 * length against parallel.pp). */
static int check_stage_layers(const struct sim *s, struct mp_error *err)
{
    const struct config *cfg = &s->cfg;
    const struct config_int_list *sl = &cfg->parallel.stage_layers;
    if (!sl->n) return MP_OK;
    const char *p = cfg->path, *sep = cfg->path[0] ? ": " : "";
    if (!s->has_model)
        return mp_fail(err, MP_ERR_INPUT, "%s%skey parallel.stage_layers: a synthetic model has "
                       "no layers to place; expected 'even' (its times are per stage)", p, sep);
    long long sum = 0;
    for (int i = 0; i < sl->n; i++) sum += sl->v[i];
    if (sum != s->model.decoders)
        return mp_fail(err, MP_ERR_INPUT, "%s%skey parallel.stage_layers adds up to %lld decoder "
                       "layers, but model %s has %d: expected entries summing to %d", p, sep, sum,
                       s->model.name, s->model.decoders, s->model.decoders);
    return MP_OK;
}

/* Context parallelism's plan (context.h), once the lanes are known. */
static int plan_context(struct sim *s, struct mp_error *err)
{
    const struct config *cfg = &s->cfg;
    if (cfg->parallel.cp <= 1) return MP_OK;
    if (!s->has_model)
        return mp_fail(err, MP_ERR_INPUT, "%s%skey parallel.cp = %d: expected 1 for a synthetic "
                       "model (it has no sequence to split)", cfg->path, cfg->path[0] ? ": " : "",
                       cfg->parallel.cp);
    int S = s->prog.stages;
    int *lane = mp_xmalloc((size_t)S * sizeof *lane);
    for (int st = 0; st < S; st++) lane[st] = s->chip_of_device[s->prog.device_of[st]];
    struct cost_params cp = sim_cost_params(s);
    struct cp_input in = { .model = &s->model, .sys = &s->sys, .cp = &cp,
                           .kind = cfg->parallel.cp_kind, .ulysses = cfg->parallel.cp_ulysses,
                           .lane = lane, .stages = S, .calib = &s->calib };
    int rc = context_plan_build(&s->context, &in, err);
    free(lane);
    if (rc) return name_scenario(cfg, rc, err);
    s->has_context = true;
    return MP_OK;
}

static int load_inputs(struct sim *s, const struct sim_inputs *in, struct mp_error *err)
{
    const struct config *cfg = &s->cfg;
    char path[1024];
    int rc;
    if (in) {
        /* Borrowed (shallow copies, never freed here: sim_release). */
        s->borrowed = true;
        if (in->model) s->model = *in->model;
        s->has_model = in->model != NULL;
        s->catalog = *in->catalog;
        s->sys = *in->sys;
        s->has_system = true;
        if (s->has_model && !in->calib)
            return mp_fail(err, MP_ERR_INTERNAL, "sim_inputs without a kernel calibration");
        return s->has_model ? price_load(s, in->calib, err) : MP_OK;
    }
    if (cfg->model.kind == MODEL_TRANSFORMER) {
        if ((rc = model_load_config(&s->model, cfg, err))) return rc;
        s->has_model = true;
    }
    if ((rc = chip_catalog_load_default(&s->catalog, err))) return rc;
    if ((rc = config_resolve_key(cfg, "hardware.system", "hardware/systems", ".ini", path,
                             sizeof path, err)))
        return rc;
    int chips = (int)config_chips(cfg);
    /* The links are laid out in sim_run, once the work budget allows them. */
    if ((rc = system_plan(&s->sys, path, cfg->hardware.nodes, chips, &s->catalog, err))) return rc;
    s->has_system = true;
    if (s->has_model && (rc = price_load(s, NULL, err))) return rc;
    return MP_OK;
}

/* ---- steady-state skipping (issue 22) ------------------------------------ */

/* Whole periods of steady state the shorter program keeps on every device:
 * room for the engine's state to settle and for two snapshots to agree. A
 * run whose state has not repeated by then is simulated in full. */
#define STEADY_MIN_PERIODS 6

/* The program entry that appended graph op `op` (declare_period), INT64_MIN
 * for ops appended before the pipeline's and INT64_MAX after; *ok goes
 * false when the entry is another device's. */
static int64_t origin_of(const struct pipeline_out *po, int op, int dev, bool *ok)
{
    int id = op - po->origin_first;
    if (id < 0) return INT64_MIN;
    if (id >= po->n_origin) return INT64_MAX;
    if (po->origin_device[id] != dev) *ok = false;
    return po->origin[id];
}

/* Each stream's window and period length in ops, from the program windows
 * of `sp` and the program entry that appended each op (pipeline_out.origin):
 * stream position ins(p) = ops appended on the stream by entries before p.
 * False when a stream's ops do not line up (then nothing is declared). */
static bool declare_period(struct sim *s, const struct steady_plan *sp,
                           const struct pipeline_out *po)
{
    struct taskgraph *g = &s->g;
    int ns = g->n_chips * N_STREAMS;
    int32_t *lo = mp_xcalloc((size_t)ns, sizeof *lo), *hi = mp_xcalloc((size_t)ns, sizeof *hi);
    int32_t *len = mp_xcalloc((size_t)ns, sizeof *len);
    bool ok = true;
    for (int st = 0; st < ns && ok; st++) {
        int off = g->stream_off[st], n = g->stream_off[st + 1] - off, dev = -1;
        for (int i = 0; i < n && dev < 0; i++) {
            int id = g->stream_ops[off + i] - po->origin_first;
            if (id >= 0 && id < po->n_origin) dev = po->origin_device[id];
        }
        if (dev < 0) continue; /* no pipeline op: none may have started at the jump */
        int64_t at[4] = { sp->lo[dev], sp->lo[dev] + sp->c[dev], sp->hi[dev] - sp->c[dev], sp->hi[dev] };
        int32_t ins[4] = { 0, 0, 0, 0 };
        /* Ops appended before the pipeline's (dp_init's early weight
         * gathers) come first on their stream, those after it last; a
         * stream's ops are appended in program order, so the entries they
         * came from never decrease along it and ins[k] (how many came
         * from entries before at[k]) is where at[k] would go: bisected.
         * A stream where they do decrease is counted op by op. */
        bool sorted = true;
        int64_t prev = INT64_MIN;
        for (int i = 0; i < n && ok; i++) {
            int64_t org = origin_of(po, g->stream_ops[off + i], dev, &ok);
            sorted = sorted && org >= prev;
            prev = org;
        }
        for (int k = 0; k < 4 && ok; k++) {
            if (sorted) {
                int a = 0, b = n;
                while (a < b) {
                    int mid = a + (b - a) / 2;
                    if (origin_of(po, g->stream_ops[off + mid], dev, &ok) < at[k]) a = mid + 1;
                    else b = mid;
                }
                ins[k] = a;
            } else {
                for (int i = 0; i < n; i++)
                    ins[k] += origin_of(po, g->stream_ops[off + i], dev, &ok) < at[k];
            }
        }
        lo[st] = ins[0];
        hi[st] = ins[3];
        len[st] = ins[1] - ins[0];
        ok = ok && ins[3] - ins[2] == len[st];
    }
    if (ok) {
        tg_set_period(g, lo, hi, len, s->chip_of_device[0] * N_STREAMS + STREAM_COMPUTE,
                      sp->elided);
    }
    free(lo);
    free(hi);
    free(len);
    return ok;
}

static int validate_program(struct sim *s, struct mp_error *err)
{
    struct mp_error verr;
    if (pipe_validate(&s->prog, &verr) == MP_OK) return MP_OK;
    return mp_fail(err, MP_ERR_INTERNAL, "schedule %s produced an invalid program: %s",
                   s->cfg.training.schedule, verr.msg);
}

/* Build the graph of `prog` (the full program, or the shorter one of `sp`
 * with its period declared) and run it. */
static int run_graph(struct sim *s, struct pipeline_plan *plan, const struct steady_plan *sp,
                     const struct sim_options *opts, struct mp_error *err)
{
    tg_init(&s->g, s->sys.n_chips,
            s->sys.n_links + offload_links(s->offload.kind, s->sys.n_chips));
    s->has_graph = true;
    s->g.max_ops = op_cap(s, opts);
    plan->prog = sp ? &sp->reduced : &s->prog;
    plan->record_origin = sp != NULL;
    struct pipeline_out po;
    build_graph(s, plan, &po);
    if (s->g.over) {
        pipeline_out_release(&po);
        int rc = check_work(s, opts, (double)s->g.wanted_ops, s->sys.n_chips, err);
        if (rc) return rc;
    }
    tg_finalize(&s->g);
    bool declared = sp && declare_period(s, sp, &po);
    pipeline_out_release(&po);
    engine_init(&s->e, &s->g);
    s->e.record_memory = opts->record_memory;
    s->e.record_released = opts->record_released;
    s->e.no_fuse = opts->unfused;
    /* Not declared: the shorter graph is not the step; run nothing. */
    if (sp && !declared) return MP_OK;
    int rc = check_horizon(s, err);
    return rc ? rc : engine_run(&s->e, err);
}

/* The run of the shorter graph, expanded onto the full one (engine_expand),
 * which then replaces it: reports read every op of the step. */
static int expand_full(struct sim *s, struct pipeline_plan *plan,
                       const struct sim_options *opts, struct mp_error *err)
{
    struct taskgraph short_g = s->g;
    struct engine short_e = s->e;
    s->res.steady_skipped_periods = engine_skipped_periods(&short_e);
    tg_init(&s->g, s->sys.n_chips,
            s->sys.n_links + offload_links(s->offload.kind, s->sys.n_chips));
    s->g.max_ops = op_cap(s, opts);
    plan->prog = &s->prog;
    plan->record_origin = false;
    struct pipeline_out po;
    build_graph(s, plan, &po);
    pipeline_out_release(&po);
    if (s->g.over) {
        int rc = check_work(s, opts, (double)s->g.wanted_ops, s->sys.n_chips, err);
        if (rc) {
            engine_release(&short_e);
            tg_release(&short_g);
            return rc;
        }
    }
    tg_finalize(&s->g);
    engine_init(&s->e, &s->g);
    s->e.record_released = short_e.record_released;
    short_e.g = &short_g;
    int rc = engine_expand(&short_e, &s->e, err);
    engine_release(&short_e);
    tg_release(&short_g);
    return rc;
}

/* sim_run up to the task graph (sim_price_layout): the program for
 * `microbatches` (0: the scenario's), priced, with its TP/SP passes. */
static int prepare(struct sim *s, const struct config *cfg, const struct sim_options *opts,
                   int microbatches, struct pipe_shape *shape, struct pipeline_plan *plan,
                   struct mp_error *err)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->res.feasible = true;
    s->want_breakdown = opts->breakdown;
    int rc = config_check(&s->cfg, err);
    if (rc) return rc;
    if ((rc = load_inputs(s, opts->inputs, err))) return rc;
    if ((rc = offload_check(s, err))) return rc;

    int pp = cfg->parallel.pp, tp = cfg->parallel.tp, dp = cfg->parallel.dp, cpd = cfg->parallel.cp;
    if (s->has_model) {
        char where[CONFIG_STR + 128];
        config_where(cfg, "parallel.tp", where, sizeof where);
        if ((rc = tensor_check_degree(&s->model, tp, where, err))) return rc;
    }
    /* The work, estimated before the schedule and the graph are built (the
     * chips alone when steady-state skipping may shorten the step: sim_run
     * weighs the events once it knows). */
    if (may_skip(s, opts)) {
        /* The system alone, against this run's budget too (a chip costs
         * about what an event does, as in check_work). */
        const char *what = s->cfg.path[0] ? s->cfg.path : "scenario";
        if (!opts->force && opts->budget_events > 0 && s->sys.n_chips > opts->budget_events)
            return mp_fail(err, MP_ERR_INPUT, "%s: a system of %d chips, past this run's budget "
                           "of %.0f", what, s->sys.n_chips, opts->budget_events);
        struct work_estimate w = { .chips = s->sys.n_chips,
                                   .links = (double)system_link_count(&s->sys) };
        if ((rc = work_check(&w, what, "lower hardware.nodes", opts->force, err))) return rc;
        /* The schedule program is built whole however many periods the run
         * then leaves out (the steady plan reads it): its passes as the
         * schedule lays them out (a V's two chunks a device whatever
         * parallel.vpp says: counted as vpp, zb-v over 65,536 microbatches
         * came to half its passes and took 5.7 s under ASan, the value
         * fuzzer), weighed as budget.h measures them. */
        struct pipe_shape est = { .devices = pp, .chunks = cfg->parallel.vpp,
                                  .microbatches = microbatches ? microbatches
                                                               : config_microbatches(cfg) };
        double passes = schedule_ops_estimate(cfg->training.schedule, &est);
        /* And the per-stage pass programs, also built whole: a piece
         * weighed as an event (a segment is a quarter of one: rounded up). */
        double pieces = sim_plan_pieces_estimate(cfg, s->has_model ? &s->model : NULL, &s->sys);
        if ((rc = check_work(s, opts, passes * WORK_EVENTS_PER_PASS + pieces, s->sys.n_chips, err)))
            return rc;
    } else if ((rc = check_work(s, opts,
                                sim_events_estimate(cfg, s->has_model ? &s->model : NULL, &s->sys),
                                s->sys.n_chips, err))) {
        return rc;
    }
    if (!s->borrowed) system_build(&s->sys); /* borrowed systems come built (sim_inputs) */
    if (s->has_model && pp * cfg->parallel.vpp > s->model.decoders)
        return mp_fail(err, MP_ERR_INPUT,
                       "key parallel.pp: %d stages × %d chunks is more than the model's %d layers",
                       pp, cfg->parallel.vpp, s->model.decoders);
    if ((rc = check_stage_layers(s, err))) return rc;
    const struct config_int_list *sl = &cfg->parallel.stage_layers;
    *shape = (struct pipe_shape){
        .devices = pp, .microbatches = microbatches ? microbatches : config_microbatches(cfg),
        .chunks = cfg->parallel.vpp, .layers = s->has_model ? s->model.decoders : 0,
        .mem_limit = cfg->training.memory_limit.bytes ? 0 : cfg->training.memory_limit.value,
        .device_layers = sl->n ? sl->v : NULL,
    };
    if (!s->has_model)
        zb_shape_times(shape, (double)cfg->synthetic.forward,
                       (double)cfg->synthetic.backward_input,
                       (double)cfg->synthetic.backward_weight);
    s->has_prog = true;
    if ((rc = schedule_generate(cfg->training.schedule, shape, &s->prog, err))) {
        if (rc == MP_ERR_INPUT && !schedule_find(cfg->training.schedule)) {
            char where[CONFIG_STR + 128];
            config_where(cfg, "training.schedule", where, sizeof where);
            mp_error_prefix(err, "%s: ", where);
        }
        return schedule_failed(s, rc, err);
    }

    s->res.n_chips = tp * cpd * pp * dp;
    s->res.microbatches = shape->microbatches;
    /* Megatron-Core's order tp-cp-ep-dp-pp: TP ranks fastest, then CP, then
     * DP replicas, then stages (context.h). */
    s->chip_of_device = mp_xmalloc((size_t)pp * sizeof *s->chip_of_device);
    for (int d = 0; d < pp; d++) s->chip_of_device[d] = d * tp * cpd * dp;
    if (sl->n) {
        s->stage_decoders = mp_xmalloc((size_t)s->prog.stages * sizeof *s->stage_decoders);
        sim_chunk_layers(&s->prog, sl->v, s->stage_decoders);
    }
    if ((rc = plan_context(s, err))) return rc;
    s->stage_cost = mp_xcalloc((size_t)s->prog.stages, sizeof *s->stage_cost);
    if (s->has_model) price_transformer(s); else price_synthetic(s);
    if (zb_needs_prices(s)) {
        zb_priced_shape(s, shape);
        pipe_program_release(&s->prog);
        if ((rc = schedule_generate(cfg->training.schedule, shape, &s->prog, err))) {
            /* The user wrote bytes; say what they came to in M_B. */
            const struct config_mem_amount *lim = &cfg->training.memory_limit;
            if (rc == MP_ERR_INFEASIBLE && lim->bytes && shape->mem_limit > 0) {
                char why[sizeof err->msg];
                snprintf(why, sizeof why, "%s", err->msg);
                mp_fail(err, rc, "training.memory_limit = %.4g GB is %.3g M_B of the largest "
                        "stage's activations: %s", lim->value / 1e9, shape->mem_limit, why);
            }
            return schedule_failed(s, rc, err);
        }
    }
    if (opts->validate && (rc = pipe_validate(&s->prog, err))) {
        s->res.feasible = false;
        snprintf(s->res.infeasible_reason, sizeof s->res.infeasible_reason, "%s", err->msg);
        return rc;
    }
    *plan = (struct pipeline_plan){
        .prog = &s->prog, .stage = s->stage_cost, .chip_of_device = s->chip_of_device,
        .sys = &s->sys, .hop = s->has_model ? 0 : cfg->synthetic.hop, .t_fb = fb_time(s),
        .every_pass = opts->every_pass,
    };
    if ((rc = plan_experts(s, err))) return rc;
    plan_tensor(s);
    return MP_OK;
}

int sim_price_layout(struct sim *s, const struct config *cfg, const struct sim_options *opts,
                     int microbatches, struct mp_error *err)
{
    struct sim_options none = { 0 };
    struct pipe_shape shape;
    struct pipeline_plan plan;
    return prepare(s, cfg, opts ? opts : &none, microbatches, &shape, &plan, err);
}

int sim_run(struct sim *s, const struct config *cfg, const struct sim_options *opts,
            struct mp_error *err)
{
    struct sim_options none = { 0 };
    if (!opts) opts = &none;
    double t0 = mp_wall_seconds();
    struct pipe_shape shape;
    struct pipeline_plan plan;
    int rc = prepare(s, cfg, opts, 0, &shape, &plan, err);
    if (rc) return rc;
    /* Steady-state skipping (issue 22): with every microbatch costing the
     * same (no MoE routing draws), simulate a shorter program and let the
     * engine put the left-out periods back once its state repeats; when it
     * does not, simulate the whole step. */
    struct steady_plan sp;
    bool skip = cfg->run.steady_skip && !s->has_experts &&
                steady_plan_find(cfg->training.schedule, &shape, &s->prog, STEADY_MIN_PERIODS, &sp);
    /* A generator bug must surface here, not as a hang in the engine. With
     * a plan, the program that runs is the shorter one, validated by
     * steady_plan_find, and the full one is it with periods put back. */
    if (may_skip(s, opts)) {
        /* The work of what will run: the shorter program when there is one
         * (a step of 10^6 microbatches may be a few periods). */
        double events = sim_events_estimate(cfg, s->has_model ? &s->model : NULL, &s->sys);
        if (skip) events *= program_ops(&sp.reduced) / program_ops(&s->prog);
        if ((rc = check_work(s, opts, events, s->sys.n_chips, err))) {
            if (skip) steady_plan_release(&sp);
            return rc;
        }
    }
    if (!skip && (rc = validate_program(s, err))) return rc;
    rc = run_graph(s, &plan, skip ? &sp : NULL, opts, err);
    if (rc == MP_OK && skip && engine_skipped_periods(&s->e) == 0) {
        engine_release(&s->e);
        tg_release(&s->g);
        s->has_graph = false;
        rc = validate_program(s, err);
        if (!rc) rc = run_graph(s, &plan, NULL, opts, err);
    } else if (rc == MP_OK && skip && (opts->record_memory || opts->record_released)) {
        /* Timelines and traces list every op: expand the run onto the full
         * graph, from the periods. */
        rc = expand_full(s, &plan, opts, err);
    }
    if (skip) steady_plan_release(&sp);
    if (rc) {
        if (rc == MP_ERR_INFEASIBLE) {
            s->res.feasible = false;
            snprintf(s->res.infeasible_reason, sizeof s->res.infeasible_reason, "%s", err->msg);
        }
        return rc;
    }
    fold_metrics(s);
    cost_compute(&s->res.cost, &s->sys.chip, s->res.n_chips, mp_seconds(s->res.step_time),
                 (double)cfg->training.global_batch * cfg->model.seq_len, opts->token_budget);
    s->res.sim_wall_s = mp_wall_seconds() - t0;
    if ((rc = check_memory(s, err))) return rc;
    return check_host_memory(s, err);
}

void sim_release(struct sim *s)
{
    if (s->has_graph) {
        engine_release(&s->e);
        tg_release(&s->g);
    }
    if (s->has_prog) pipe_program_release(&s->prog);
    if (!s->borrowed) {
        if (s->has_system) system_release(&s->sys);
        if (s->has_model) model_release(&s->model);
        chip_catalog_release(&s->catalog);
    }
    if (s->has_tensor) tensor_plan_release(&s->tensor);
    if (s->has_experts) experts_plan_release(&s->experts);
    price_release(s);
    if (s->has_context) context_plan_release(&s->context);
    free(s->stage_decoders);
    free(s->stage_cost);
    free(s->chip_of_device);
    free(s->res.stage);
    memset(s, 0, sizeof *s);
}
