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
#include <time.h>

#include "collective.h"

/* Mixed-precision Adam (cases.md §4): 2 bytes of 16-bit weights, 4 of fp32
 * gradients, 12 of fp32 master weights and two moments. Gradients are
 * all-reduced in fp32, as Megatron does by default. */
#define GRAD_BYTES_PER_PARAM 4.0
#define OPTIMIZER_BYTES_PER_PARAM 12.0
/* The optimizer step streams weights, grads, master and moments in (18 B)
 * and writes weights, master and moments back (14 B); about 12 FLOPs/param. */
#define OPTIMIZER_TRAFFIC_PER_PARAM 32.0
#define OPTIMIZER_FLOPS_PER_PARAM 12.0

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Split `n` layers over `stages` as evenly as possible: each stage gets
 * n / stages, and the remainder goes one each to the stages after the first
 * (the first already holds the embedding). */
static void split_layers(int n, int stages, int s, int *first, int *count)
{
    int base = n / stages, rem = n % stages;
    int start = s * base + (s >= 1 ? (s - 1 < rem ? s - 1 : rem) : 0);
    *count = base + (s >= 1 && s - 1 < rem ? 1 : 0);
    if (stages == 1) *count = n;
    *first = start;
}

/* Price each stage from the model's layers on the chip. */
static void price_transformer(struct sim *s)
{
    const struct config *cfg = &s->cfg;
    int S = s->prog.stages, L = s->model.decoders;
    struct cost_params cp = {
        .seq_len = cfg->model.seq_len, .micro_batch = cfg->training.micro_batch,
        .tp = cfg->parallel.tp, .sp = cfg->parallel.sp, .recompute = cfg->training.recompute,
        .weight_bits = cfg->model.weight_bits, .activation_bits = cfg->model.activation_bits,
    };
    for (int st = 0; st < S; st++) {
        int first, count;
        split_layers(L, S, st, &first, &count);
        /* layer indices in model->layer: 0 embedding, 1..L decoders, L+1 head */
        int lo = 1 + first, hi = first + count;
        if (st == 0) lo = 0;
        if (st == S - 1) hi = L + 1;
        struct stage_cost *c = &s->stage_cost[st];
        memset(c, 0, sizeof *c);
        c->layer_first = lo;
        c->layer_last = hi;
        double f = 0, b = 0, w = 0;
        for (int l = lo; l <= hi; l++) {
            struct layer_cost lc;
            model_layer_cost(&s->model, l, &cp, &lc);
            int bits = cfg->model.weight_bits <= 8 ? 8 : 16;
            f += (double)chip_op_time(&s->sys.chip, lc.flops_f, lc.bytes_f, bits);
            b += (double)chip_op_time(&s->sys.chip, lc.flops_b + lc.flops_recompute, lc.bytes_b, bits);
            w += (double)chip_op_time(&s->sys.chip, lc.flops_w, lc.bytes_w, bits);
            c->act_bytes += lc.act_bytes;
            c->act_w_bytes += lc.act_w_bytes;
            c->send_bytes = lc.boundary_bytes; /* the last layer's output leaves */
        }
        c->t_f = (mp_time)f;
        c->t_b = (mp_time)b;
        c->t_w = (mp_time)w;
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

/* Parameters (per chip of the TP group) on the stages device d holds. */
static double device_params(const struct sim *s, int d)
{
    if (!s->has_model) return 0;
    struct cost_params cp = {
        .seq_len = s->cfg.model.seq_len, .micro_batch = s->cfg.training.micro_batch,
        .tp = s->cfg.parallel.tp, .sp = s->cfg.parallel.sp,
        .weight_bits = s->cfg.model.weight_bits, .activation_bits = s->cfg.model.activation_bits,
    };
    double params = 0;
    bool *held = mp_xcalloc((size_t)s->prog.stages, sizeof *held);
    for (int q = 0; q < s->prog.paths; q++)
        for (int st = 0; st < s->prog.stages; st++)
            if (s->prog.device_of[q * s->prog.stages + st] == d && !held[st]) {
                held[st] = true;
                const struct stage_cost *c = &s->stage_cost[st];
                for (int l = c->layer_first; l <= c->layer_last; l++) {
                    struct layer_cost lc;
                    model_layer_cost(&s->model, l, &cp, &lc);
                    params += lc.params;
                }
            }
    /* DualPipe holds each stage twice (once per direction). */
    if (s->prog.paths == 2) params *= 2;
    free(held);
    return params;
}

/* Weights, gradients and optimizer state from time 0, sharded by ZeRO stage;
 * then the gradient all-reduce over DP replicas and the optimizer step. */
static void add_weights_and_sync(struct sim *s, const struct pipeline_out *po)
{
    const struct config *cfg = &s->cfg;
    int dp = cfg->parallel.dp, tp = cfg->parallel.tp, zero = cfg->training.zero;
    int *chips = mp_xmalloc((size_t)dp * sizeof *chips);
    int *ready = mp_xmalloc((size_t)dp * sizeof *ready);
    int *done = mp_xmalloc((size_t)dp * sizeof *done);
    for (int d = 0; d < s->prog.devices; d++) {
        int chip = s->chip_of_device[d];
        double params = device_params(s, d);
        double wbytes, gbytes, obytes;
        if (s->has_model) {
            wbytes = params * cfg->model.weight_bits / 8.0;
            gbytes = params * GRAD_BYTES_PER_PARAM;
            obytes = params * OPTIMIZER_BYTES_PER_PARAM;
        } else {
            wbytes = cfg->synthetic.weights;
            gbytes = obytes = 0;
        }
        double sync_bytes = s->has_model ? gbytes : wbytes;
        if (zero >= 1) obytes /= dp;
        if (zero >= 2) gbytes /= dp;
        if (zero >= 3) wbytes /= dp;
        tg_static_alloc(&s->g, chip, MEM_WEIGHTS, wbytes);
        tg_static_alloc(&s->g, chip, MEM_GRADS, gbytes);
        tg_static_alloc(&s->g, chip, MEM_OPTIMIZER, obytes);

        /* DP replicas run the same ops at the same times, so every replica's
         * gradients are ready when replica 0's last backward ends. */
        int last = po->last_op[d];
        if (dp > 1 && sync_bytes > 0) {
            for (int r = 0; r < dp; r++) {
                chips[r] = chip + r * tp;
                ready[r] = last;
            }
            collective_ring_all_reduce(&s->g, &s->sys, chips, dp, sync_bytes, ready, done);
            last = done[0];
        }
        if (s->has_model && params > 0) {
            double shard = zero >= 1 ? params / dp : params;
            struct op o = tg_op(OP_COMPUTE, chip, STREAM_COMPUTE, TAG_OPTIMIZER,
                                chip_op_time(&s->sys.chip, shard * OPTIMIZER_FLOPS_PER_PARAM,
                                             shard * OPTIMIZER_TRAFFIC_PER_PARAM, 16));
            int id = tg_add(&s->g, &o);
            if (last >= 0) tg_dep(&s->g, last, id);
        }
    }
    free(chips);
    free(ready);
    free(done);
}

/* Closed forms for the textbook schedules with uniform stages and no
 * communication (cases.md §3), to print beside the simulated figures. */
static void textbook_formula(struct sim *s)
{
    struct sim_result *r = &s->res;
    const struct config *cfg = &s->cfg;
    if (cfg->model.kind != MODEL_SYNTHETIC) return;
    double p = cfg->parallel.pp, m = r->microbatches, v = cfg->parallel.vpp;
    double tf = (double)cfg->synthetic.forward, tb = (double)cfg->synthetic.backward_input;
    double tw = (double)cfg->synthetic.backward_weight;
    const char *name = cfg->training.schedule;
    double step;
    if (!strcmp(name, "gpipe") || !strcmp(name, "1f1b")) {
        step = (m + p - 1) * (tf + tb + tw);
        snprintf(r->formula_text, sizeof r->formula_text, "(p-1)/(m+p-1) = %g/%g",
                 p - 1, m + p - 1);
    } else if (!strcmp(name, "interleaved")) {
        step = m * (tf + tb + tw) + (p - 1) * (tf + tb + tw) / v;
        snprintf(r->formula_text, sizeof r->formula_text, "(p-1)/v idle of m+(p-1)/v");
    } else if (!strcmp(name, "zb-h1")) {
        step = m * (tf + tb + tw) + (p - 1) * (tf + tb - tw);
        snprintf(r->formula_text, sizeof r->formula_text, "(p-1)(T_F+T_B-T_W) idle");
    } else if (!strcmp(name, "zb-h2")) {
        double idle = (p - 1) * (tf + tb - 2 * tw);
        step = m * (tf + tb + tw) + (idle > 0 ? idle : 0);
        snprintf(r->formula_text, sizeof r->formula_text, "(p-1)(T_F+T_B-2T_W) idle");
    } else {
        return;
    }
    if (cfg->synthetic.hop > 0) snprintf(r->formula_text + strlen(r->formula_text),
                                         sizeof r->formula_text - strlen(r->formula_text),
                                         ", hops not counted");
    r->has_formula = true;
    r->formula_step = (mp_time)llround(step);
    r->formula_bubble = 1.0 - m * (tf + tb + tw) / step;
}

static void fold_metrics(struct sim *s)
{
    struct sim_result *r = &s->res;
    const struct taskgraph *g = &s->g;
    const struct engine *e = &s->e;
    int P = s->prog.devices;
    r->step_time = engine_makespan(e);
    r->events = e->events;
    r->stages = P;
    r->stage = mp_xcalloc((size_t)P, sizeof *r->stage);
    int *device_of_chip = mp_xmalloc((size_t)g->n_chips * sizeof *device_of_chip);
    for (int c = 0; c < g->n_chips; c++) device_of_chip[c] = -1;
    for (int d = 0; d < P; d++) {
        device_of_chip[s->chip_of_device[d]] = d;
        r->stage[d] = (struct stage_report){ .index = d, .chip = s->chip_of_device[d],
                                             .first_start = -1, .last_end = 0 };
    }
    for (int i = 0; i < g->n_ops; i++) {
        const struct op *o = &g->ops[i];
        int d = device_of_chip[o->chip];
        if (d < 0) continue;
        struct stage_report *st = &r->stage[d];
        if (o->stream == STREAM_COMPUTE) st->busy += e->end[i] - e->start[i];
        if (st->first_start < 0 || e->start[i] < st->first_start) st->first_start = e->start[i];
        if (e->end[i] > st->last_end) st->last_end = e->end[i];
    }
    double busy = 0;
    r->max_span = 0;
    for (int d = 0; d < P; d++) {
        struct stage_report *st = &r->stage[d];
        if (st->first_start < 0) st->first_start = 0;
        const struct chip_memory *m = &e->mem[st->chip];
        st->peak_mem = m->peak;
        memcpy(st->mem, m->at_peak, sizeof st->mem);
        double unit = s->stage_cost[0].act_bytes;
        st->peak_act_units = unit > 0 ? (int)llround(m->at_peak[MEM_ACTIVATIONS] / unit) : 0;
        busy += (double)st->busy;
        mp_time span = st->last_end - st->first_start;
        if (span > r->max_span) r->max_span = span;
    }
    free(device_of_chip);
    r->bubble = r->step_time > 0 ? 1.0 - busy / ((double)P * (double)r->step_time) : 0;
    r->bubble_span = r->max_span > 0 ? 1.0 - busy / ((double)P * (double)r->max_span) : 0;

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
                                  .activation_bits = cfg->model.activation_bits };
        double extra = 0;
        for (int l = 0; l < s->model.n_layers; l++) {
            struct layer_cost lc;
            model_layer_cost(&s->model, l, &cp, &lc);
            extra += lc.flops_recompute;
        }
        r->hardware_flops = r->model_flops + extra * sequences;
        double peak = cfg->model.weight_bits <= 8 && s->sys.chip.peak_fp8 > 0
                          ? s->sys.chip.peak_fp8 : s->sys.chip.peak_bf16;
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
                 "(weights %s, grads %s, optimizer %s, activations %s, kv %s)",
                 st->chip, d, s->sys.chip.name, need, have, parts[MEM_WEIGHTS],
                 parts[MEM_GRADS], parts[MEM_OPTIMIZER], parts[MEM_ACTIVATIONS], parts[MEM_KV]);
        r->feasible = false;
        return mp_fail(err, MP_ERR_INFEASIBLE, "%s", r->infeasible_reason);
    }
    return MP_OK;
}

static int load_inputs(struct sim *s, struct mp_error *err)
{
    const struct config *cfg = &s->cfg;
    char path[1024];
    int rc;
    if (cfg->model.kind == MODEL_TRANSFORMER) {
        if ((rc = config_resolve(cfg, cfg->model.config, "models", ".json", path, sizeof path, err)))
            return rc;
        if ((rc = model_load(&s->model, path, err))) return rc;
        s->has_model = true;
    }
    if ((rc = chip_catalog_load_default(&s->catalog, err))) return rc;
    if ((rc = config_resolve(cfg, cfg->hardware.system, "hardware/systems", ".ini", path,
                             sizeof path, err)))
        return rc;
    int chips = cfg->parallel.tp * cfg->parallel.pp * cfg->parallel.dp;
    if ((rc = system_load(&s->sys, path, cfg->hardware.nodes, chips, &s->catalog, err))) return rc;
    s->has_system = true;
    return MP_OK;
}

int sim_run(struct sim *s, const struct config *cfg, const struct sim_options *opts,
            struct mp_error *err)
{
    struct sim_options none = { 0 };
    if (!opts) opts = &none;
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->res.feasible = true;
    double t0 = now_seconds();
    int rc = config_check(&s->cfg, err);
    if (rc) return rc;
    if ((rc = load_inputs(s, err))) return rc;

    int pp = cfg->parallel.pp, tp = cfg->parallel.tp, dp = cfg->parallel.dp;
    if (s->has_model && pp * cfg->parallel.vpp > s->model.decoders)
        return mp_fail(err, MP_ERR_INPUT,
                       "key parallel.pp: %d stages × %d chunks is more than the model's %d layers",
                       pp, cfg->parallel.vpp, s->model.decoders);
    struct pipe_shape shape = {
        .devices = pp, .microbatches = config_microbatches(cfg), .chunks = cfg->parallel.vpp,
        .layers = s->has_model ? s->model.decoders : 0,
    };
    if ((rc = schedule_build(cfg->training.schedule, &shape, &s->prog, err))) {
        s->has_prog = true;
        if (rc == MP_ERR_INFEASIBLE) {
            s->res.feasible = false;
            snprintf(s->res.infeasible_reason, sizeof s->res.infeasible_reason, "%s", err->msg);
        }
        return rc;
    }
    s->has_prog = true;
    if (opts->validate && (rc = pipe_validate(&s->prog, err))) {
        s->res.feasible = false;
        snprintf(s->res.infeasible_reason, sizeof s->res.infeasible_reason, "%s", err->msg);
        return rc;
    }

    s->res.n_chips = tp * pp * dp;
    s->res.microbatches = shape.microbatches;
    s->stage_cost = mp_xcalloc((size_t)s->prog.stages, sizeof *s->stage_cost);
    if (s->has_model) price_transformer(s); else price_synthetic(s);
    /* Megatron's layout: TP ranks fastest, then DP replicas, then stages. */
    s->chip_of_device = mp_xmalloc((size_t)pp * sizeof *s->chip_of_device);
    for (int d = 0; d < pp; d++) s->chip_of_device[d] = d * tp * dp;

    tg_init(&s->g, s->sys.n_chips, s->sys.n_links);
    s->has_graph = true;
    struct pipeline_plan plan = {
        .prog = &s->prog, .stage = s->stage_cost, .chip_of_device = s->chip_of_device,
        .sys = &s->sys, .hop = s->has_model ? 0 : cfg->synthetic.hop,
    };
    struct pipeline_out po;
    pipeline_build(&s->g, &plan, &po);
    add_weights_and_sync(s, &po);
    pipeline_out_release(&po);
    tg_finalize(&s->g);

    engine_init(&s->e, &s->g);
    s->e.record_memory = opts->record_memory;
    rc = engine_run(&s->e, err);
    if (rc) {
        s->res.feasible = false;
        snprintf(s->res.infeasible_reason, sizeof s->res.infeasible_reason, "%s", err->msg);
        return rc;
    }
    fold_metrics(s);
    s->res.sim_wall_s = now_seconds() - t0;
    return check_memory(s, err);
}

void sim_release(struct sim *s)
{
    if (s->has_graph) {
        engine_release(&s->e);
        tg_release(&s->g);
    }
    if (s->has_prog) pipe_program_release(&s->prog);
    if (s->has_system) system_release(&s->sys);
    if (s->has_model) model_release(&s->model);
    chip_catalog_release(&s->catalog);
    free(s->stage_cost);
    free(s->chip_of_device);
    free(s->res.stage);
    memset(s, 0, sizeof *s);
}
