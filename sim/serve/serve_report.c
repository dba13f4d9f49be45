/* serve_report.c — a serving run for people and for tools; see serve.h. */
#include <cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "serve_impl.h"

/* A duration in seconds for people: 3 significant decimals in a fitting unit. */
static const char *secs(double s, char *buf, size_t n)
{
    double a = fabs(s);
    if (a >= 1) snprintf(buf, n, "%.3f s", s);
    else if (a >= 1e-3) snprintf(buf, n, "%.3f ms", s * 1e3);
    else snprintf(buf, n, "%.3f us", s * 1e6);
    return buf;
}

static const char *dist_name(int d)
{
    return d == DIST_UNIFORM ? "uniform" : d == DIST_LOGNORMAL ? "lognormal" : "fixed";
}

static void quant_line(FILE *f, const char *name, const double q[4])
{
    char a[32], b[32], c[32], d[32];
    fprintf(f, "%-11s p50 %s   p90 %s   p99 %s   mean %s\n", name, secs(q[0], a, sizeof a),
            secs(q[1], b, sizeof b), secs(q[2], c, sizeof c), secs(q[3], d, sizeof d));
}

static double bubble(const struct serve *s)
{
    const struct serve_result *r = &s->res;
    double busy = 0;
    for (int st = 0; st < r->stages; st++) busy += (double)r->stage[st].busy;
    double span = (double)r->makespan * r->stages;
    return span > 0 ? 1 - busy / span : 0;
}

void serve_report_text(FILE *f, const struct serve *s)
{
    const struct config *c = &s->cfg;
    const struct config_inference *in = &c->inference;
    const struct serve_result *r = &s->res;
    const struct model *m = &s->pr.model;
    char a[32], b[32];
    fprintf(f, "scenario    %s (serving)\n", c->name[0] ? c->name : "(defaults)");
    fprintf(f, "model       %s: %d layers, %.2fB parameters", m->name, m->decoders,
            model_params(m) / 1e9);
    if (m->experts) fprintf(f, " (%.2fB active)", model_active_params(m) / 1e9);
    fprintf(f, ", weights %d-bit, KV %d-bit\n", c->model.weight_bits, c->model.kv_bits);
    fprintf(f, "system      %s: %d × %s (%.2f GB each), hop %s\n", s->sys.name, r->stages,
            s->pr.chip.name, s->pr.chip.mem_bytes / 1e9,
            secs(r->stages > 1 ? mp_seconds(serve_hop_time(s, 0, 1)) : 0, a, sizeof a));
    char kernels[512];
    serve_price_describe(s, kernels, sizeof kernels);
    fprintf(f, "kernels     %s\n", kernels);
    fprintf(f, "serving     %d stages (%s), %d microbatches in flight × %d requests, "
               "token budget %d, chunked prefill %s, context %d\n",
            r->stages, in->placement == PLACEMENT_EVEN ? "even" : "plan", r->slots,
            r->micro_batch, in->token_budget, in->chunked_prefill ? "on" : "off",
            in->context_len);
    if (in->arrivals == ARRIVALS_TRACE)
        fprintf(f, "requests    %d from %s\n", r->requests, in->trace);
    else
        fprintf(f, "requests    %d, Poisson at %g/s; prompt %s %d, output %s %d\n", r->requests,
                in->rate, dist_name(in->prompt_dist), in->prompt_len,
                dist_name(in->output_dist), in->output_len);
    fprintf(f, "done        %d completed, %.0f output tokens, %.0f prompt tokens in %s%s\n",
            r->completed, r->output_tokens, r->prompt_tokens,
            secs(mp_seconds(r->makespan), a, sizeof a),
            r->completed < r->requests ? " (cut at inference.horizon)" : "");
    fprintf(f, "throughput  %.0f output tokens/s, %.1f requests/s\n", r->tokens_per_s,
            r->requests_per_s);
    quant_line(f, "TTFT", r->ttft);
    quant_line(f, "TPOT", r->tpot);
    quant_line(f, "latency", r->e2e);
    fprintf(f, "in flight   max %d (seats: %d microbatches × %d = %lld), mean %.1f; waiting max "
               "%d; in system mean %.1f\n", r->max_inflight, r->slots, r->micro_batch,
            (long long)r->slots * r->micro_batch, r->mean_inflight, r->max_waiting,
            r->mean_in_system);
    fprintf(f, "KV          peak %.2f GB over all chips; fullest chip at %.1f%% of its free "
               "memory; %llu admissions waited for memory\n", r->kv_peak_bytes / 1e9,
            100 * r->kv_peak_fraction, (unsigned long long)r->kv_blocked);
    if (r->little_window_s > 0)
        fprintf(f, "Little      arrivals %.1f/s × mean latency %s = %.2f; mean in system over "
                   "the arrival window %.2f\n", r->little_rate,
                secs(r->little_latency_s, a, sizeof a), r->little_rate * r->little_latency_s,
                r->little_in_system);
    fprintf(f, "bubble      %.4f (1 − Σ stage busy / (stages × makespan))\n", bubble(s));
    fprintf(f, "events      %llu in %s (%.1f M events/s)\n", (unsigned long long)r->events,
            secs(r->sim_wall_s, b, sizeof b),
            r->sim_wall_s > 0 ? r->events / r->sim_wall_s / 1e6 : 0);
    fprintf(f, "\n  stage  chip  layers     busy          util   passes   weights   KV peak\n");
    for (int st = 0; st < r->stages; st++) {
        const struct serve_stage_report *x = &r->stage[st];
        double util = r->makespan > 0 ? (double)x->busy / (double)r->makespan : 0;
        fprintf(f, "  %5d  %4d  %3d-%-3d  %12s  %5.1f%%  %7llu  %6.2f GB  %6.2f GB\n", st,
                x->chip, x->layer_first, x->layer_last, secs(mp_seconds(x->busy), a, sizeof a),
                100 * util, (unsigned long long)x->passes, x->weights / 1e9, x->kv_peak / 1e9);
    }
}

static void add_quant(cJSON *o, const char *name, const double q[4])
{
    char key[48];
    static const char *suffix[4] = { "p50", "p90", "p99", "mean" };
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "%s_%s_s", name, suffix[i]);
        cJSON_AddNumberToObject(o, key, q[i]);
    }
}

void serve_report_json(FILE *f, const struct serve *s)
{
    const struct serve_result *r = &s->res;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "mode", "serve");
    cJSON_AddNumberToObject(o, "step_time_s", mp_seconds(r->makespan));
    cJSON_AddNumberToObject(o, "tokens_per_s", r->tokens_per_s);
    cJSON_AddNumberToObject(o, "mfu", 0);
    cJSON_AddNumberToObject(o, "hfu", 0);
    cJSON_AddNumberToObject(o, "bubble", bubble(s));
    cJSON_AddBoolToObject(o, "feasible", 1);
    cJSON_AddStringToObject(o, "infeasible_reason", "");
    cJSON_AddNumberToObject(o, "events", (double)r->events);
    cJSON_AddNumberToObject(o, "sim_wall_s", r->sim_wall_s);
    /* issue 15: every parameter, and those one token uses (models/model.h) */
    cJSON_AddNumberToObject(o, "params", model_params(&s->pr.model));
    cJSON_AddNumberToObject(o, "active_params", model_active_params(&s->pr.model));
    add_quant(o, "ttft", r->ttft);
    add_quant(o, "tpot", r->tpot);
    add_quant(o, "latency", r->e2e);
    cJSON_AddNumberToObject(o, "requests", r->requests);
    cJSON_AddNumberToObject(o, "requests_completed", r->completed);
    cJSON_AddNumberToObject(o, "requests_per_s", r->requests_per_s);
    cJSON_AddNumberToObject(o, "output_tokens", r->output_tokens);
    cJSON_AddNumberToObject(o, "prompt_tokens", r->prompt_tokens);
    cJSON_AddNumberToObject(o, "max_inflight", r->max_inflight);
    cJSON_AddNumberToObject(o, "mean_inflight", r->mean_inflight);
    cJSON_AddNumberToObject(o, "max_waiting", r->max_waiting);
    cJSON_AddNumberToObject(o, "mean_in_system", r->mean_in_system);
    cJSON_AddNumberToObject(o, "micro_batch", r->micro_batch);
    cJSON_AddNumberToObject(o, "inflight_microbatches", r->slots);
    cJSON_AddNumberToObject(o, "kv_peak_bytes", r->kv_peak_bytes);
    cJSON_AddNumberToObject(o, "kv_peak_fraction", r->kv_peak_fraction);
    cJSON_AddNumberToObject(o, "kv_blocked", (double)r->kv_blocked);
    cJSON *little = cJSON_AddObjectToObject(o, "little");
    cJSON_AddNumberToObject(little, "window_s", r->little_window_s);
    cJSON_AddNumberToObject(little, "arrival_rate", r->little_rate);
    cJSON_AddNumberToObject(little, "mean_latency_s", r->little_latency_s);
    cJSON_AddNumberToObject(little, "mean_in_system", r->little_in_system);

    cJSON *stages = cJSON_AddArrayToObject(o, "stages");
    for (int st = 0; st < r->stages; st++) {
        const struct serve_stage_report *x = &r->stage[st];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", x->index);
        cJSON_AddNumberToObject(e, "chip", x->chip);
        cJSON_AddNumberToObject(e, "layer_first", x->layer_first);
        cJSON_AddNumberToObject(e, "layer_last", x->layer_last);
        cJSON_AddNumberToObject(e, "busy_s", mp_seconds(x->busy));
        cJSON_AddNumberToObject(e, "first_start_s", mp_seconds(x->first_start));
        cJSON_AddNumberToObject(e, "last_end_s", mp_seconds(x->last_end));
        cJSON_AddNumberToObject(e, "passes", (double)x->passes);
        cJSON_AddNumberToObject(e, "peak_mem_bytes", x->weights + x->kv_peak);
        cJSON *mem = cJSON_AddObjectToObject(e, "mem");
        cJSON_AddNumberToObject(mem, "weights", x->weights);
        cJSON_AddNumberToObject(mem, "grads", 0);
        cJSON_AddNumberToObject(mem, "optimizer", 0);
        cJSON_AddNumberToObject(mem, "activations", 0);
        cJSON_AddNumberToObject(mem, "kv", x->kv_peak);
        cJSON_AddItemToArray(stages, e);
    }
    /* KV over time: every change when few, else an even thinning that keeps
     * each kept point exact (time, bytes in use over all chips). */
    cJSON *kv = cJSON_AddArrayToObject(o, "kv_timeline");
    int step = r->n_kv_log > 500 ? (r->n_kv_log + 499) / 500 : 1;
    for (int i = 0; i < r->n_kv_log; i += step) {
        cJSON *pt = cJSON_CreateArray();
        cJSON_AddItemToArray(pt, cJSON_CreateNumber(mp_seconds(r->kv_log[i].t)));
        cJSON_AddItemToArray(pt, cJSON_CreateNumber(r->kv_log[i].bytes));
        cJSON_AddItemToArray(kv, pt);
    }
    char *text = cJSON_Print(o);
    fprintf(f, "%s\n", text);
    cJSON_free(text);
    cJSON_Delete(o);
}
