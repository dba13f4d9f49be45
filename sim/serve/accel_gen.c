/* accel_gen.c — model.generate() on a device map, timed the way Accelerate
 * runs it (accel.h), and the same requests through a pipeline on the same
 * GPUs (serve.h). */
#include "accel.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve_impl.h"
#include "sim/io/budget.h"

static double sec(mp_time t) { return t / 1e12; }

/* ---- pricing through serving's price path -------------------------------------- */

/* A serve shell whose "stages" are the model's layers one by one, so that
 * serve_batch_time prices exactly one layer on the system's chip, through
 * the kernels serving runs (models/kernels.h), launched one by one as eager
 * PyTorch does and with no serving scheduler's host step. */
static void pricer_free(struct serve *s);

static struct serve *pricer_new(const struct accel_setup *a, int weight_bits,
                                struct mp_error *err)
{
    struct serve *s = mp_xcalloc(1, sizeof *s);
    s->cfg = a->cfg;
    s->cfg.model.weight_bits = weight_bits;
    s->pr.model = a->model; /* borrowed: released by the setup, never here */
    s->pr.chip = a->sys.chip;
    s->sys.chip = a->sys.chip; /* what serve_price_layers prices on */
    int n = a->model.n_layers;
    s->pr.plan.stages = s->stages = n;
    s->pr.plan.stage = mp_xcalloc((size_t)n, sizeof *s->pr.plan.stage);
    for (int l = 0; l < n; l++) s->pr.plan.stage[l].first = s->pr.plan.stage[l].last = l;
    if (serve_price_layers(s, err)) { /* a bad calibration table, FP8 without a peak */
        pricer_free(s);
        return NULL;
    }
    serve_price_eager(s);
    return s;
}

static void pricer_free(struct serve *s)
{
    serve_price_release(s);
    free(s->layers);
    free(s->layer_off);
    free(s->pr.plan.stage);
    free(s);
}

/* The bits serving prices weights at, for the map's dtype. */
static int priced_bits(const struct hf_dtype *dt)
{
    switch (dt->quant) {
    case HF_QUANT_BNB_8BIT: case HF_QUANT_FP8: return 8;
    case HF_QUANT_BNB_4BIT: return 4;
    default: return dt->weight_bits;
    }
}

/* ---- one forward ------------------------------------------------------------------ */

struct unit {
    int mod;            /* hf_tree module */
    int dev;            /* where its weights live: GPU id, DM_CPU, DM_DISK */
    int exec;           /* the GPU it computes on */
    enum { U_EMBED, U_ROTARY, U_DECODER, U_OTHER } kind;
};

struct runner {
    const struct accel_setup *a;
    struct serve *price;
    struct unit *u;
    int n;
    int main_gpu;       /* inputs arrive here; offloaded modules compute here */
    int rotary_exec;    /* -1: no rotary module */
    double act_bytes;   /* per element of activations */
    struct accel_gen *g;
    struct accel_report *rep; /* records go here while `recording` */
    bool recording;
    int forward_index;
};

static void record(struct runner *x, mp_time start, mp_time dur, int chip, int what, int mod,
                   int layer, double bytes)
{
    if (!x->recording || dur <= 0) return;
    struct accel_report *r = x->rep;
    MP_GROW(r->rec, r->cap_rec, r->n_rec + 1);
    r->rec[r->n_rec++] = (struct accel_rec){ .start = start, .end = start + dur, .chip = chip,
                                             .comm = what != AR_COMPUTE, .what = what,
                                             .forward = x->forward_index, .mod = mod,
                                             .layer = layer, .bytes = bytes };
}

static mp_time hop(const struct runner *x, int from, int to, double bytes)
{
    if (from == to) return 0;
    const struct system *s = &x->a->sys;
    int stack[16], *route;
    int n = system_route_buf(s, from, to, stack, 16, &route);
    mp_time t = system_route_time(s, route, n, bytes);
    if (route != stack) free(route);
    return t;
}

/* The execution order: registration order, except that the rotary module
 * runs once at the start of the base model's forward, right after the
 * embedding (transformers >= 4.45 computes cos/sin before the layers). */
static void build_units(struct runner *x)
{
    const struct hf_tree *t = &x->a->tree;
    const struct dm_result *r = &x->a->map;
    int *dev = mp_xmalloc((size_t)t->n * sizeof *dev);
    for (int i = 0; i < t->n; i++) dev[i] = DM_DISK;
    for (int i = 0; i < r->n_placed; i++)
        for (int j = r->placed_mod[i]; j < t->n && hf_under(t, j, r->placed_mod[i]); j++)
            dev[j] = r->placed_dev[i];
    x->u = mp_xmalloc((size_t)t->n * sizeof *x->u);
    x->n = 0;
    int rotary = -1;
    for (int i = 0; i < t->n; i++) {
        const struct hf_module *m = &t->mod[i];
        if (m->first_child >= 0 && !m->no_split) continue; /* a container */
        struct unit u = { .mod = i, .dev = dev[i], .exec = dev[i] >= 0 ? dev[i] : x->main_gpu };
        u.kind = m->no_split ? U_DECODER : m->model_layer == 0 ? U_EMBED : U_OTHER;
        if (strstr(m->cls, "RotaryEmbedding")) {
            u.kind = U_ROTARY;
            rotary = x->n;
        }
        x->u[x->n++] = u;
    }
    if (rotary >= 0) {
        struct unit ro = x->u[rotary];
        int at = 0;
        while (at < x->n && x->u[at].kind != U_EMBED) at++;
        at = at < x->n ? at + 1 : 0;
        if (rotary > at) {
            memmove(x->u + at + 1, x->u + at, (size_t)(rotary - at) * sizeof *x->u);
            x->u[at] = ro;
        }
        x->rotary_exec = ro.exec;
    } else {
        x->rotary_exec = -1;
    }
    free(dev);
}

/* A tensor a hook copies: from where, its bytes, how many such. */
struct input {
    int from;
    double bytes;
    int n;
};

/* One forward of `b` sequences of T new tokens each over `past` cached
 * ones; adds to x->g's breakdown and returns its time. */
static mp_time forward(struct runner *x, int b, int T, int past, mp_time t0)
{
    const struct accel_setup *a = x->a;
    const struct model *m = &a->model;
    const struct system_host *host = &a->sys.host;
    struct accel_gen *g = x->g;
    double tok = (double)b * T;
    double hidden = tok * m->hidden * x->act_bytes;
    double ids = tok * 8; /* int64 position ids */
    double rot_dim = m->kv_lora_rank ? m->qk_rope_head_dim : m->head_dim;
    double cos = tok * rot_dim * x->act_bytes; /* cos or sin, each */
    mp_time t = t0; /* records carry times from the call's start */
    int here = x->main_gpu; /* where the hidden states are */
    for (int i = 0; i < x->n; i++) {
        const struct unit *u = &x->u[i];
        const struct hf_module *mod = &a->tree.mod[u->mod];
        /* The hook moves the module's tensor inputs to its device, one copy
         * each: the hidden states; a decoder's position ids and cache
         * positions (on the input's device) and the rotary cos and sin; the
         * rotary module's own x and position ids. */
        struct input in[3] = { { here, hidden, 1 } };
        int n_in = 1;
        if (u->kind == U_DECODER && x->rotary_exec >= 0) {
            in[n_in++] = (struct input){ x->main_gpu, ids, 2 };
            in[n_in++] = (struct input){ x->rotary_exec, cos, 2 };
        } else if (u->kind == U_ROTARY) {
            in[n_in++] = (struct input){ x->main_gpu, ids, 1 };
        }
        for (int k = 0; k < n_in; k++)
            for (int j = 0; j < in[k].n; j++) {
                mp_time h = hop(x, in[k].from, u->exec, in[k].bytes);
                record(x, t, h, in[k].from, AR_HOP, u->mod, -1, in[k].bytes);
                g->hops += h;
                t += h;
            }
        if (u->kind != U_ROTARY) here = u->exec;
        /* Offloaded weights: read from disk, then copied to the main GPU. */
        if ((u->dev == DM_CPU || u->dev == DM_DISK) && mod->stream_bytes > 0) {
            if (u->dev == DM_DISK) {
                mp_time d = mp_time_from_ps(mod->stream_bytes / host->disk_bw * 1e12);
                record(x, t, d, u->exec, AR_DISK, u->mod, -1, mod->stream_bytes);
                g->disk += d;
                t += d;
            }
            mp_time s = mp_time_add(host->link_latency,
                                    mp_time_from_ps(mod->stream_bytes / host->link_bw * 1e12));
            record(x, t, s, u->exec, AR_HOST, u->mod, -1, mod->stream_bytes);
            g->stream += s;
            t += s;
        }
        if (mod->model_layer >= 0) {
            /* b sequences of T tokens after `past` cached ones: the prompt
             * (causal) or a decode step; the last position of every
             * sequence emits a token. */
            struct kernel_batch kb = { 0 };
            for (int q = 0; q < b; q++)
                serve_batch_add(x->price, &kb, T, past, past > 0 && T == 1, true);
            mp_time c = serve_batch_time(x->price, mod->model_layer, &kb);
            record(x, t, c, u->exec, AR_COMPUTE, u->mod, mod->model_layer, 0);
            if (u->dev >= 0) g->compute_resident += c;
            else g->compute_offloaded += c;
            g->gpu_compute[u->exec] += c;
            t += c;
        }
    }
    /* The top module's hook hands the logits back on the input's device. */
    double logits = (double)b * m->vocab * x->act_bytes;
    mp_time h = hop(x, here, x->main_gpu, logits);
    record(x, t, h, here, AR_HOP, 0, -1, logits);
    g->hops += h;
    return t + h - t0;
}

/* ---- memory a call needs ----------------------------------------------------------- */

static int check_memory(struct runner *x, struct mp_error *err)
{
    const struct accel_setup *a = x->a;
    const struct model *m = &a->model;
    struct accel_gen *g = x->g;
    double tokens = (double)g->batch * ((double)g->prompt + g->output);
    double transit = 0;
    struct cost_params cp = { .seq_len = 1, .micro_batch = 1, .tp = 1,
                              .weight_bits = priced_bits(&a->dtype), .kv_bits = a->cfg.model.kv_bits };
    for (int i = 0; i < x->n; i++) {
        const struct unit *u = &x->u[i];
        const struct hf_module *mod = &a->tree.mod[u->mod];
        if (u->dev < 0 && mod->stream_bytes > transit) transit = mod->stream_bytes;
        if (mod->model_layer >= 1 && mod->model_layer <= m->decoders) {
            struct layer_cost lc;
            model_layer_cost(m, mod->model_layer, &cp, &lc);
            g->gpu_kv[u->exec] += tokens * lc.kv_bytes_per_token +
                                  g->batch * lc.state_bytes_per_request;
        }
    }
    for (int i = 0; i < a->map.n_dev; i++) {
        const struct dm_device *d = &a->map.dev[i];
        if (d->device >= 0) g->gpu_need[d->device] += d->weights;
    }
    if (x->main_gpu >= 0) g->gpu_need[x->main_gpu] += transit;
    double cap = a->sys.chip.mem_bytes;
    for (int gpu = 0; gpu < a->gpus && gpu < DM_MAX_GPUS; gpu++) {
        g->gpu_need[gpu] += g->gpu_kv[gpu];
        if (g->gpu_need[gpu] > cap)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "generate() would run out of memory on GPU %d: %.2f GB of weights "
                           "+ %.2f GB of KV cache for %d × %d tokens%s = %.2f GB, more than its "
                           "%.2f GB; lower GPU %d's max_memory, the batch or the lengths", gpu,
                           (g->gpu_need[gpu] - g->gpu_kv[gpu] -
                            (gpu == x->main_gpu ? transit : 0)) / 1e9,
                           g->gpu_kv[gpu] / 1e9, g->batch, g->prompt + g->output, /* ≤ INT_MAX */
                           gpu == x->main_gpu && transit > 0 ? " + the largest offloaded "
                                                               "module in transit" : "",
                           g->gpu_need[gpu] / 1e9, cap / 1e9, gpu);
    }
    for (int i = 0; i < a->map.n_dev; i++) {
        const struct dm_device *d = &a->map.dev[i];
        if (d->device == DM_CPU && d->weights > a->sys.host.mem_bytes)
            return mp_fail(err, MP_ERR_INFEASIBLE,
                           "the cpu holds %.2f GB of offloaded weights, more than %s's %.2f GB "
                           "of host memory; lower the cpu max_memory", d->weights / 1e9,
                           a->sys.name, a->sys.host.mem_bytes / 1e9);
    }
    return MP_OK;
}

mp_time accel_stream_time(const struct accel_setup *a, double *disk_time_out)
{
    const struct system_host *host = &a->sys.host;
    const struct hf_tree *t = &a->tree;
    const struct dm_result *r = &a->map;
    mp_time s = 0, d = 0;
    for (int i = 0; i < r->n_placed; i++) {
        int dv = r->placed_dev[i];
        if (dv >= 0) continue;
        for (int j = r->placed_mod[i]; j < t->n && hf_under(t, j, r->placed_mod[i]); j++) {
            const struct hf_module *m = &t->mod[j];
            if ((m->first_child >= 0 && !m->no_split) || m->stream_bytes <= 0) continue;
            if (dv == DM_DISK) d = mp_time_add(d, mp_time_from_ps(m->stream_bytes / host->disk_bw * 1e12));
            s = mp_time_add(s, mp_time_add(host->link_latency,
                                           mp_time_from_ps(m->stream_bytes / host->link_bw * 1e12)));
        }
    }
    if (disk_time_out) *disk_time_out = (double)d;
    return s;
}

/* ---- the pipeline beside it ------------------------------------------------------ */

static void pipeline(struct accel_pipe *p, const struct accel_setup *a, int stages, int inflight)
{
    struct config c = a->cfg;
    struct config_inference *in = &c.inference;
    int P = in->prompt_len, N = in->output_len;
    c.inference.present = true;
    in->placement = PLACEMENT_EVEN;
    c.parallel.pp = stages;
    c.parallel.tp = 1;
    c.hardware.nodes = 0;
    /* One pipeline over the map's devices, whatever else the scenario serves. */
    in->replicas = 1;
    in->disaggregate = false;
    c.model.weight_bits = priced_bits(&a->dtype);
    in->arrivals = ARRIVALS_POISSON;
    in->rate = 1e9; /* every request at once (1 ns apart) */
    in->prompt_dist = in->output_dist = DIST_FIXED;
    in->inflight = inflight;
    in->horizon = 0;
    in->concurrency = 0;
    if (in->context_len < P + N) in->context_len = P + N;
    p->stages = stages;
    p->inflight = inflight;
    struct serve s;
    struct mp_error err = { 0 };
    struct serve_options o = { .force = a->force, .budget_events = a->budget_events };
    int rc = serve_run_opts(&s, &c, &o, &err);
    p->feasible = rc == MP_OK;
    if (rc) {
        snprintf(p->reason, sizeof p->reason, "%s", err.msg);
    } else {
        p->ttft_p50_s = s.res.ttft[0];
        p->tpot_p50_s = s.res.tpot[0];
        p->makespan_s = s.res.makespan / 1e12;
        p->tokens_per_s = s.res.tokens_per_s;
        p->max_inflight = s.res.max_inflight;
    }
    serve_release(&s);
}

/* ---- the whole report -------------------------------------------------------------- */

int accel_generate(struct accel_report *rep, const struct accel_setup *a, struct mp_error *err)
{
    return accel_generate_recorded(rep, a, false, err);
}

void accel_report_release(struct accel_report *rep)
{
    free(rep->rec);
    memset(rep, 0, sizeof *rep);
}

/* The work of one generate() call (issue 16): every forward (the prompt, then
 * output_len − 1 decode steps) walks every module unit, and each decoder
 * layer adds its batch's members to the pass it prices; recorded, a row per
 * unit and per copy a forward (two per unit, an upper bound). Measured on
 * devmap-llama3-8b-2x3060 at output_len 20,000: 2.0 M unit-forwards in 0.85 s
 * (0.4 µs each; the budget's event costs 1 µs), recorded 2.0 M rows in
 * 101 MB (50 bytes a row; the budget's 160 per event). */
static int check_work(const struct runner *x, bool record, struct mp_error *err)
{
    const struct accel_gen *g = x->g;
    double forwards = g->output, layers = x->a->model.n_layers;
    double walk = forwards * (x->n + layers * g->batch);
    struct work_estimate w = { .events = walk, .held = record ? 2 * forwards * x->n : 1,
                               .chips = x->a->gpus, .bytes = 8.0 * g->requests };
    char what[CONFIG_STR + 160];
    snprintf(what, sizeof what, "%s: a device_map generate() of %d + %d tokens for %d "
             "sequences over %d module units", x->a->cfg.path[0] ? x->a->cfg.path : "scenario",
             g->prompt, g->output, g->batch, x->n);
    if (!x->a->force && x->a->budget_events > 0 && w.events > x->a->budget_events)
        return mp_fail(err, MP_ERR_INPUT, "%s: %.3g events, past this run's budget of %.0f", what,
                       w.events, x->a->budget_events);
    return work_check(&w, what, "lower inference.output_len", x->a->force, err);
}

int accel_generate_recorded(struct accel_report *rep, const struct accel_setup *a, bool record,
                            struct mp_error *err)
{
    memset(rep, 0, sizeof *rep);
    const struct config_inference *in = &a->cfg.inference;
    const char *w = a->cfg.path[0] ? a->cfg.path : "scenario";
    if (in->prompt_dist != DIST_FIXED || in->output_dist != DIST_FIXED ||
        in->arrivals != ARRIVALS_POISSON)
        return mp_fail(err, MP_ERR_INPUT, "%s: key inference.%s: a device_map run generates "
                       "fixed lengths one generate() call after another: expected fixed "
                       "prompt and output lengths and no trace", w,
                       in->arrivals != ARRIVALS_POISSON ? "arrivals"
                       : in->prompt_dist != DIST_FIXED ? "prompt_dist" : "output_dist");
    /* A position counts in an int (the model's and the KV cache's). */
    if ((long long)in->prompt_len + in->output_len > INT_MAX)
        return mp_fail(err, MP_ERR_INPUT, "%s: keys inference.prompt_len + output_len = %lld "
                       "tokens: expected at most %d (2^31 - 1) positions in a sequence", w,
                       (long long)in->prompt_len + in->output_len, INT_MAX);
    if (a->map.main_gpu < 0)
        return mp_fail(err, MP_ERR_INPUT, "%s: the device map puts everything on the cpu or "
                       "disk, where generate() computes on the CPU; mpsim has no CPU chip to "
                       "price that: give a GPU some max_memory", w);
    struct accel_gen *g = &rep->gen;
    g->prompt = in->prompt_len;
    g->output = in->output_len;
    g->batch = in->micro_batch;
    g->requests = in->requests;
    g->calls = (g->requests + g->batch - 1) / g->batch;
    struct runner x = { .a = a, .g = g, .main_gpu = a->map.main_gpu,
                        .act_bytes = a->cfg.model.activation_bits / 8.0, .rep = rep,
                        .recording = record };
    build_units(&x);
    int rc = check_memory(&x, err);
    if (!rc) rc = check_work(&x, record, err);
    if (rc) {
        free(x.u);
        return rc;
    }
    x.price = pricer_new(a, priced_bits(&a->dtype), err);
    if (!x.price) {
        free(x.u);
        return err ? err->status : MP_ERR_INPUT;
    }
    g->prefill = forward(&x, g->batch, g->prompt, 0, 0);
    for (int k = 1; k < g->output; k++) {
        x.forward_index = k;
        g->decode += forward(&x, g->batch, 1, g->prompt + k - 1, g->prefill + g->decode);
    }
    serve_price_describe(x.price, g->kernels, sizeof g->kernels);
    pricer_free(x.price);
    g->call = g->prefill + g->decode;
    /* The comparison's workload: every request arriving at once, so request
     * i starts with call i / batch; its first token comes a prefill later.
     * Those times rise with i, so request i is the i-th smallest: the median
     * is gsl_stats_quantile_from_sorted_data's interpolation between the two
     * middle requests, with no array to sort (10^7 requests took seconds). */
    if (g->requests > 0) {
        double at = (g->requests - 1) * 0.5, lo = floor(at);
        long long i = (long long)lo;
        double t_lo = (double)(i / g->batch) * sec(g->call) + sec(g->prefill);
        double t_hi = (double)((i + 1) / g->batch) * sec(g->call) + sec(g->prefill);
        g->ttft_p50_all_s = at > lo ? (1 - (at - lo)) * t_lo + (at - lo) * t_hi : t_lo;
    } else {
        g->ttft_p50_all_s = 0;
    }
    g->total = mp_time_mul(g->call, g->calls);
    double out_tokens = (double)g->requests * g->output;
    g->tokens_per_s = g->total > 0 ? out_tokens / (g->total / 1e12) : 0;
    g->decode_tokens_per_s =
        g->decode > 0 ? g->batch * (g->output - 1) / (g->decode / 1e12) : 0;
    g->stream_bytes_per_forward = 0;
    for (int i = 0; i < x.n; i++)
        if (x.u[i].dev < 0) g->stream_bytes_per_forward += a->tree.mod[x.u[i].mod].stream_bytes;
    for (int i = 0; i < x.n; i++)
        if (x.u[i].dev == DM_DISK) g->disk_bytes_per_forward += a->tree.mod[x.u[i].mod].stream_bytes;
    free(x.u);

    /* The pipeline: one stage per GPU the map computes on. */
    int stages = 0;
    for (int gpu = 0; gpu < a->gpus && gpu < DM_MAX_GPUS; gpu++)
        if (g->gpu_compute[gpu] > 0 || g->gpu_need[gpu] > 0) stages++;
    if (stages < 1) stages = 1;
    rep->n_pipe = 2;
    pipeline(&rep->pipe[0], a, stages, 1);
    pipeline(&rep->pipe[1], a, stages, in->inflight ? in->inflight : stages);
    if (rep->pipe[1].inflight == 1) rep->n_pipe = 1;
    return MP_OK;
}

/* ---- reports ---------------------------------------------------------------------- */

void accel_report_text(FILE *f, const struct accel_setup *a, const struct accel_report *rep)
{
    const struct accel_gen *g = &rep->gen;
    accel_map_text(f, a);
    fprintf(f, "\ngenerate    %d-token prompt + %d new tokens, %d sequence%s per generate() "
               "call, %d request%s = %d call%s one after another (inference.*)\n",
            g->prompt, g->output, g->batch, g->batch == 1 ? "" : "s", g->requests,
            g->requests == 1 ? "" : "s", g->calls, g->calls == 1 ? "" : "s");
    fprintf(f, "kernels     %s\n", g->kernels);
    fprintf(f, "accelerate  TTFT %.2f ms, then %.2f ms per token (%.2f tokens/s per call); "
               "all requests in %.3f s = %.2f tokens/s\n", sec(g->prefill) * 1e3,
            g->output > 1 ? sec(g->decode) * 1e3 / (g->output - 1) : 0, g->decode_tokens_per_s,
            sec(g->total), g->tokens_per_s);
    fprintf(f, "\n  where one generate() call's %.3f s go           seconds   share\n",
            sec(g->call));
    double call = g->call > 0 ? (double)g->call : 1;
    for (int gpu = 0; gpu < a->gpus && gpu < DM_MAX_GPUS; gpu++) {
        if (!g->gpu_compute[gpu]) continue;
        char what[64];
        snprintf(what, sizeof what, "compute on GPU %d", gpu);
        fprintf(f, "    %-44s %9.4f %6.1f%%\n", what, sec(g->gpu_compute[gpu]),
                100 * g->gpu_compute[gpu] / call);
    }
    if (g->compute_offloaded)
        fprintf(f, "    %-44s %9.4f %6.1f%%\n", "  of which offloaded layers on the main GPU",
                sec(g->compute_offloaded), 100 * g->compute_offloaded / call);
    if (g->hops)
        fprintf(f, "    %-44s %9.4f %6.1f%%\n", "activations between GPUs (hooks' copies)",
                sec(g->hops), 100 * g->hops / call);
    if (g->stream) {
        char what[80];
        snprintf(what, sizeof what, "offloaded weights host -> GPU (%.2f GB/fwd)",
                 g->stream_bytes_per_forward / 1e9);
        fprintf(f, "    %-44s %9.4f %6.1f%%\n", what, sec(g->stream), 100 * g->stream / call);
    }
    if (g->disk) {
        char what[80];
        snprintf(what, sizeof what, "disk reads of disk weights (%.2f GB/fwd)",
                 g->disk_bytes_per_forward / 1e9);
        fprintf(f, "    %-44s %9.4f %6.1f%%\n", what, sec(g->disk), 100 * g->disk / call);
    }
    fprintf(f, "\n  memory a call needs per GPU (weights + KV + offloaded module in transit)\n");
    for (int gpu = 0; gpu < a->gpus && gpu < DM_MAX_GPUS; gpu++)
        if (g->gpu_need[gpu] > 0)
            fprintf(f, "    GPU %d  %.2f GB of %.2f GB (KV %.3f GB)\n", gpu, g->gpu_need[gpu] / 1e9,
                    a->sys.chip.mem_bytes / 1e9, g->gpu_kv[gpu] / 1e9);

    fprintf(f, "\nversus      the same %d request%s arriving at once; the pipeline is the same "
               "model on the same %d GPU%s, one stage per GPU (inference.placement = even; "
               "whole GPU memory, not max_memory):\n",
            g->requests, g->requests == 1 ? "" : "s", rep->pipe[0].stages,
            rep->pipe[0].stages == 1 ? "" : "s");
    fprintf(f, "                   in flight   TTFT p50   TPOT p50   tokens/s   all done  "
               "speed-up\n");
    fprintf(f, "  accelerate      %10d %8.3f s %8.2f ms %10.2f %8.3f s  %7.2f×\n", 1,
            g->ttft_p50_all_s, g->output > 1 ? sec(g->decode) * 1e3 / (g->output - 1) : 0,
            g->tokens_per_s, sec(g->total), 1.0);
    for (int i = 0; i < rep->n_pipe; i++) {
        const struct accel_pipe *p = &rep->pipe[i];
        if (!p->feasible) {
            fprintf(f, "  pipeline        %10d   does not fit: %s\n", p->inflight, p->reason);
            continue;
        }
        fprintf(f, "  pipeline        %10d %8.3f s %8.2f ms %10.2f %8.3f s  %7.2f×\n",
                p->inflight, p->ttft_p50_s, p->tpot_p50_s * 1e3, p->tokens_per_s, p->makespan_s,
                g->tokens_per_s > 0 ? p->tokens_per_s / g->tokens_per_s : 0);
    }
    fprintf(f, "\nAccelerate runs one module after another, so while one GPU computes the "
               "others wait; a pipeline gains only with microbatches in flight, one per "
               "stage keeping every GPU busy.\n");
}

void accel_report_json(FILE *f, const struct accel_setup *a, const struct accel_report *rep)
{
    const struct accel_gen *g = &rep->gen;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "mode", "device_map");
    accel_map_json_into(o, a);
    cJSON *x = cJSON_AddObjectToObject(o, "accelerate");
    cJSON_AddNumberToObject(x, "prompt_tokens", g->prompt);
    cJSON_AddNumberToObject(x, "output_tokens", g->output);
    cJSON_AddNumberToObject(x, "batch", g->batch);
    cJSON_AddNumberToObject(x, "requests", g->requests);
    cJSON_AddStringToObject(x, "kernels", g->kernels);
    cJSON_AddNumberToObject(x, "ttft_s", sec(g->prefill));
    cJSON_AddNumberToObject(x, "ttft_p50_all_at_once_s", g->ttft_p50_all_s);
    cJSON_AddNumberToObject(x, "tpot_s", g->output > 1 ? sec(g->decode) / (g->output - 1) : 0);
    cJSON_AddNumberToObject(x, "call_s", sec(g->call));
    cJSON_AddNumberToObject(x, "total_s", sec(g->total));
    cJSON_AddNumberToObject(x, "tokens_per_s", g->tokens_per_s);
    cJSON *b = cJSON_AddObjectToObject(x, "breakdown_s");
    cJSON_AddNumberToObject(b, "compute_resident", sec(g->compute_resident));
    cJSON_AddNumberToObject(b, "compute_offloaded", sec(g->compute_offloaded));
    cJSON_AddNumberToObject(b, "activations_between_gpus", sec(g->hops));
    cJSON_AddNumberToObject(b, "weights_host_to_gpu", sec(g->stream));
    cJSON_AddNumberToObject(b, "weights_from_disk", sec(g->disk));
    cJSON_AddNumberToObject(x, "offloaded_bytes_per_forward", g->stream_bytes_per_forward);
    cJSON *gpus = cJSON_AddArrayToObject(x, "gpus");
    for (int gpu = 0; gpu < a->gpus && gpu < DM_MAX_GPUS; gpu++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "gpu", gpu);
        cJSON_AddNumberToObject(e, "compute_s", sec(g->gpu_compute[gpu]));
        cJSON_AddNumberToObject(e, "mem_bytes", g->gpu_need[gpu]);
        cJSON_AddNumberToObject(e, "kv_bytes", g->gpu_kv[gpu]);
        cJSON_AddItemToArray(gpus, e);
    }
    cJSON *ps = cJSON_AddArrayToObject(o, "pipeline");
    for (int i = 0; i < rep->n_pipe; i++) {
        const struct accel_pipe *p = &rep->pipe[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "stages", p->stages);
        cJSON_AddNumberToObject(e, "inflight", p->inflight);
        cJSON_AddBoolToObject(e, "feasible", p->feasible);
        if (p->feasible) {
            cJSON_AddNumberToObject(e, "ttft_p50_s", p->ttft_p50_s);
            cJSON_AddNumberToObject(e, "tpot_p50_s", p->tpot_p50_s);
            cJSON_AddNumberToObject(e, "makespan_s", p->makespan_s);
            cJSON_AddNumberToObject(e, "tokens_per_s", p->tokens_per_s);
        } else {
            cJSON_AddStringToObject(e, "infeasible_reason", p->reason);
        }
        cJSON_AddItemToArray(ps, e);
    }
    char *text = cJSON_Print(o);
    fprintf(f, "%s\n", text);
    cJSON_free(text);
    cJSON_Delete(o);
}
