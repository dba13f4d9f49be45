/* serve_report.c — a serving run for people and for tools; see serve.h.
 * Lines and keys of features a run does not use are left out of the text;
 * the JSON always has every key. */
#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve_impl.h"
#include "sim/strategy/collective.h"

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
    return d == DIST_UNIFORM ? "uniform" : d == DIST_LOGNORMAL ? "lognormal"
           : d == DIST_EMPIRICAL ? "empirical" : "fixed";
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

/* Whether the run is the pipeline of issue 9 (one replica of whole-layer
 * stages with reserved KV): its summary is the one it always was. */
static bool plain(const struct serve *s)
{
    const struct config_inference *in = &s->cfg.inference;
    return s->n_pools == 1 && s->replicas == 1 && s->pool[0].tp == 1 && s->pool[0].ep == 1 &&
           in->kv_cache == KV_RESERVE;
}

static void pool_text(char *buf, size_t n, const struct serve_pool *P)
{
    int len = snprintf(buf, n, "%d replica%s × (tp %d × pp %d", P->replicas,
                       P->replicas == 1 ? "" : "s", P->tp, P->stages);
    if (P->ep > 1) len += snprintf(buf + len, n - (size_t)len, ", ep %d: attention dp %d", P->ep, P->dp_attn);
    snprintf(buf + len, n - (size_t)len, ") = %d chips", P->replicas * P->stages * P->width);
}

static void layout_lines(FILE *f, const struct serve *s)
{
    const struct config_inference *in = &s->cfg.inference;
    char a[160], b[160];
    pool_text(a, sizeof a, &s->pool[0]);
    if (s->n_pools == 2) {
        pool_text(b, sizeof b, &s->pool[1]);
        fprintf(f, "layout      prefill %s; decode %s; router %s, scheduler %s\n", a, b,
                in->router, in->scheduler);
    } else {
        fprintf(f, "layout      %s; router %s, scheduler %s\n", a, in->router, in->scheduler);
    }
    const struct serve_result *r = &s->res;
    if (r->tp_allreduces_per_pass > 0)
        fprintf(f, "TP          %d all-reduces per pass of a replica (2 per layer + the embedding's) "
                   "of tokens × %d × %d B, on %s (%s)\n", r->tp_allreduces_per_pass,
                s->pr.model.hidden, s->cfg.model.activation_bits / 8, s->sys.name,
                s->pool[0].tp <= s->sys.chips_per_node ? "inside a node" : "across nodes");
    for (int p = 0; p < s->n_pools; p++) {
        const struct serve_pool *P = &s->pool[p];
        if (P->ep <= 1) continue;
        int moe = 0;
        const struct model *m = &P->pr->model;
        for (int l = 0; l < m->n_layers; l++) moe += m->layer[l].moe;
        int nodes = (P->width + s->sys.chips_per_node - 1) / s->sys.chips_per_node;
        fprintf(f, "EP          %d GPUs%s (%d node%s), %d of %d experts each: %d MoE layers × a "
                   "dispatch (%d-bit) and a combine all-to-all per pass; attention data-parallel "
                   "over %d ranks\n", P->width, s->n_pools == 2 ? (p ? " (decode)" : " (prefill)") : "",
                nodes, nodes == 1 ? "" : "s", m->experts / P->ep, m->experts, moe,
                s->cfg.experts.dispatch_bits ? s->cfg.experts.dispatch_bits
                                             : s->cfg.model.activation_bits, P->dp_attn);
    }
    if (in->kv_cache == KV_PAGED) {
        for (int p = 0; p < s->n_pools; p++) {
            const struct serve_pool *P = &s->pool[p];
            fprintf(f, "KV pool     %s%lld blocks of %d tokens per replica (%lld per slot): "
                       "%.2f × %.2f GB − %.2f GB weights − %.2f GB activations = %.2f GB per "
                       "chip of stage 0, %.0f B per block\n",
                    s->n_pools == 2 ? (p ? "decode: " : "prefill: ") : "", (long long)P->blocks,
                    in->block_size, (long long)P->slot_blocks, in->gpu_memory_utilization,
                    s->pr.chip.mem_bytes / 1e9, P->weights[0] / 1e9, P->act[0] / 1e9,
                    P->cap[0] / 1e9, P->block_bytes[0]);
        }
    }
}

static void feature_lines(FILE *f, const struct serve *s)
{
    const struct config_inference *in = &s->cfg.inference;
    const struct serve_result *r = &s->res;
    char a[32], b[32], c[32], d[32];
    if (r->itl.n > 0) quant_line(f, "ITL", r->itl.q);
    quant_line(f, "queued", r->sched_delay.q);
    fprintf(f, "batch       requests per pass p50 %.0f p90 %.0f p99 %.0f mean %.1f; tokens per "
               "pass p50 %.0f p90 %.0f p99 %.0f mean %.1f\n", r->batch.q[0], r->batch.q[1],
            r->batch.q[2], r->batch.q[3], r->step_tokens.q[0], r->step_tokens.q[1],
            r->step_tokens.q[2], r->step_tokens.q[3]);
    if (in->kv_cache == KV_PAGED)
        fprintf(f, "preempted   %llu (%s): %.0f tokens prefilled again; %llu swapped out, %llu "
                   "in, %.2f GB over the host link\n", (unsigned long long)r->preemptions,
                in->preemption == PREEMPT_SWAP ? "swap, recompute when the host is full"
                                               : "recompute",
                r->recomputed_tokens, (unsigned long long)r->swaps_out,
                (unsigned long long)r->swaps_in, r->swap_bytes / 1e9);
    if (in->prefix_caching)
        fprintf(f, "prefix      %d of %d requests found a cached prefix; %.0f of %.0f prompt "
                   "tokens (%.1f%%) not prefilled\n", r->prefix_hit_requests, r->prefix_lookups,
                r->prefix_hit_tokens, r->prefix_query_tokens,
                r->prefix_query_tokens > 0 ? 100 * r->prefix_hit_tokens / r->prefix_query_tokens : 0);
    if (in->speculative != SPEC_NONE) {
        double a_ = in->spec_acceptance;
        int k = in->spec_tokens;
        double E = a_ >= 1 ? k + 1 : (1 - pow(a_, k + 1)) / (1 - a_);
        fprintf(f, "speculative %s, k %d, acceptance %.2f (%s): %llu steps gave %.0f tokens, "
                   "%.3f per step (expected (1 − a^(k+1)) / (1 − a) = %.3f)\n",
                in->speculative == SPEC_MTP ? "MTP" : in->draft_model, k, a_,
                in->spec_draw == SPEC_DRAW_EXPECTED ? "expected" : "Bernoulli",
                (unsigned long long)r->spec_steps, r->spec_tokens,
                r->spec_steps ? r->spec_tokens / r->spec_steps : 0, E);
    }
    if (s->n_pools == 2)
        fprintf(f, "KV sent     %.2f GB by each GPU of a prefill group (%.2f GB by all %d); "
                   "transfer p50 %s p90 %s p99 %s mean %s\n", r->kv_transfer_bytes / 1e9,
                r->kv_transfer_bytes * s->pool[0].tp / 1e9, s->pool[0].tp,
                secs(r->kv_transfer.q[0], a, sizeof a),
                secs(r->kv_transfer.q[1], b, sizeof b), secs(r->kv_transfer.q[2], c, sizeof c),
                secs(r->kv_transfer.q[3], d, sizeof d));
    if (in->slo_ttft > 0 || in->slo_tpot > 0 || in->slo_e2e > 0) {
        char slo[128] = "";
        if (in->slo_ttft > 0) snprintf(slo + strlen(slo), sizeof slo - strlen(slo), " ttft ≤ %s",
                                       secs(mp_seconds(in->slo_ttft), a, sizeof a));
        if (in->slo_tpot > 0) snprintf(slo + strlen(slo), sizeof slo - strlen(slo), " tpot ≤ %s",
                                       secs(mp_seconds(in->slo_tpot), a, sizeof a));
        if (in->slo_e2e > 0) snprintf(slo + strlen(slo), sizeof slo - strlen(slo), " e2e ≤ %s",
                                      secs(mp_seconds(in->slo_e2e), a, sizeof a));
        fprintf(f, "goodput     %d of %d requests (%.1f%%) meet%s: %.2f requests/s\n", r->slo_met,
                r->requests, r->requests ? 100.0 * r->slo_met / r->requests : 0, slo,
                r->goodput_rps);
    }
}

void serve_report_text(FILE *f, const struct serve *s)
{
    const struct config *c = &s->cfg;
    const struct config_inference *in = &c->inference;
    const struct serve_result *r = &s->res;
    const struct model *m = &s->pr.model;
    char a[32], b[32];
    bool old = plain(s);
    fprintf(f, "scenario    %s (serving)\n", c->name[0] ? c->name : "(defaults)");
    fprintf(f, "model       %s: %d layers, %.2fB parameters", m->name, m->decoders,
            model_params(m) / 1e9);
    if (m->experts) fprintf(f, " (%.2fB active)", model_active_params(m) / 1e9);
    fprintf(f, ", weights %d-bit, KV %d-bit\n", c->model.weight_bits, c->model.kv_bits);
    int S0 = s->pool[0].stages;
    fprintf(f, "system      %s: %d × %s (%.2f GB each), hop %s\n", s->sys.name,
            old ? r->stages : serve_chips(s), s->pr.chip.name, s->pr.chip.mem_bytes / 1e9,
            secs(S0 > 1 ? mp_seconds(serve_hop_time(s, 0, 1)) : 0, a, sizeof a));
    if (s->has_sys) { /* the TP and expert collectives' model, as training prints it */
        char line[256];
        fprintf(f, "collectives %s\n", collective_summary(&s->sys, line, sizeof line));
    }
    char kernels[512];
    serve_price_describe(s, kernels, sizeof kernels);
    fprintf(f, "kernels     %s\n", kernels);
    if (!old) layout_lines(f, s);
    fprintf(f, "serving     %d stage%s (%s)%s, %d microbatch%s in flight × %d requests, "
               "token budget %d, chunked prefill %s, context %d\n",
            old ? r->stages : S0, (old ? r->stages : S0) == 1 ? "" : "s",
            in->placement == PLACEMENT_EVEN ? "even" : "plan", old ? "" : " per replica",
            r->slots, r->slots == 1 ? "" : "es", r->micro_batch, serve_budget(s),
            in->chunked_prefill ? "on" : "off", in->context_len);
    if (in->arrivals == ARRIVALS_TRACE)
        fprintf(f, "requests    %d from %s\n", r->requests, in->trace);
    else
        fprintf(f, "requests    %d, %s at %g/s%s; prompt %s %d, output %s %d%s\n", r->requests,
                in->arrivals == ARRIVALS_GAMMA ? "Gamma" : "Poisson", in->rate,
                in->turns > 1 ? " (sessions)" : "", dist_name(in->prompt_dist), in->prompt_len,
                dist_name(in->output_dist), in->output_len,
                in->turns > 1 ? " per turn" : "");
    fprintf(f, "done        %d completed, %.0f output tokens, %.0f prompt tokens in %s%s\n",
            r->completed, r->output_tokens, r->prompt_tokens,
            secs(mp_seconds(r->makespan), a, sizeof a),
            r->completed < r->requests ? " (cut at inference.horizon)" : "");
    fprintf(f, "throughput  %.0f output tokens/s, %.1f requests/s\n", r->tokens_per_s,
            r->requests_per_s);
    quant_line(f, "TTFT", r->ttft);
    quant_line(f, "TPOT", r->tpot);
    quant_line(f, "latency", r->e2e);
    if (!old) feature_lines(f, s);
    if (old)
        fprintf(f, "in flight   max %d (seats: %d microbatches × %d = %lld), mean %.1f; waiting max "
                   "%d; in system mean %.1f\n", r->max_inflight, r->slots, r->micro_batch,
                (long long)r->slots * r->micro_batch, r->mean_inflight, r->max_waiting,
                r->mean_in_system);
    else
        fprintf(f, "in flight   max %d (seats: %d slot%s × %d = %lld over all replicas), mean %.1f; "
                   "waiting max %d; in system mean %.1f\n", r->max_inflight, s->slots,
                s->slots == 1 ? "" : "s", r->micro_batch, (long long)s->slots * r->micro_batch,
                r->mean_inflight, r->max_waiting, r->mean_in_system);
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
    if (r->replicas > 1) {
        fprintf(f, "\n  replica  pool      chips  routed   done  TTFT p50   TTFT p99   TPOT p50  "
                   " TPOT p99   tokens/s  preempted  Little\n");
        for (int x = 0; x < r->replicas; x++) {
            const struct serve_replica_report *p = &r->rep[x];
            char t1[32], t2[32], t3[32], t4[32];
            if (s->n_pools == 2 && p->pool == 0) { /* prefill only: its requests finish elsewhere */
                fprintf(f, "  %7d  %-8s  %5d  %6d  %5s  (prefill only: requests finish on a decode "
                           "replica)\n", x, "prefill", p->chips, p->routed, "-");
                continue;
            }
            fprintf(f, "  %7d  %-8s  %5d  %6d  %5d  %9s  %9s  %9s  %9s  %9.0f  %9llu  %.2f/%.2f\n",
                    x, s->n_pools == 2 ? (p->pool ? "decode" : "prefill") : "-", p->chips,
                    p->routed, p->completed, secs(p->ttft[0], t1, sizeof t1),
                    secs(p->ttft[2], t2, sizeof t2), secs(p->tpot[0], t3, sizeof t3),
                    secs(p->tpot[2], t4, sizeof t4), p->tokens_per_s,
                    (unsigned long long)p->preemptions, p->little_rate * p->little_latency_s,
                    p->little_in_system);
        }
    }
    int shown = r->stages <= 64 ? r->stages : S0;
    fprintf(f, "\n  stage  chip  layers     busy          util   passes   weights   KV peak\n");
    for (int st = 0; st < shown; st++) {
        const struct serve_stage_report *x = &r->stage[st];
        double util = r->makespan > 0 ? (double)x->busy / (double)r->makespan : 0;
        fprintf(f, "  %5d  %4d  %3d-%-3d  %12s  %5.1f%%  %7llu  %6.2f GB  %6.2f GB\n", st,
                x->chip, x->layer_first, x->layer_last, secs(mp_seconds(x->busy), a, sizeof a),
                100 * util, (unsigned long long)x->passes, x->weights / 1e9, x->kv_peak / 1e9);
    }
    if (shown < r->stages)
        fprintf(f, "  (the stages of replica 0; %d stages in all, every one in --json)\n",
                r->stages);
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

static void add_dist(cJSON *o, const char *name, const struct serve_dist4 *d, bool seconds)
{
    char key[48];
    static const char *suffix[4] = { "p50", "p90", "p99", "mean" };
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "%s_%s%s", name, suffix[i], seconds ? "_s" : "");
        cJSON_AddNumberToObject(o, key, d->q[i]);
    }
}

/* Issue 19's keys: layout, paged KV, preemption, prefix cache, speculation,
 * disaggregation, goodput, ITL and the per-pass distributions, replicas. */
static void json_cluster(cJSON *o, const struct serve *s)
{
    const struct serve_result *r = &s->res;
    const struct config_inference *in = &s->cfg.inference;
    cJSON_AddNumberToObject(o, "replicas", r->replicas);
    cJSON_AddNumberToObject(o, "chips", serve_chips(s));
    cJSON *pools = cJSON_AddArrayToObject(o, "pools");
    for (int p = 0; p < s->n_pools; p++) {
        const struct serve_pool *P = &s->pool[p];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "role", s->n_pools == 2 ? (p ? "decode" : "prefill") : "serve");
        cJSON_AddNumberToObject(e, "replicas", P->replicas);
        cJSON_AddNumberToObject(e, "tp", P->tp);
        cJSON_AddNumberToObject(e, "pp", P->stages);
        cJSON_AddNumberToObject(e, "ep", P->ep);
        cJSON_AddNumberToObject(e, "attention_dp", P->dp_attn);
        cJSON_AddNumberToObject(e, "chips_per_replica", P->stages * P->width);
        cJSON_AddNumberToObject(e, "kv_blocks_per_replica", (double)P->blocks);
        cJSON_AddNumberToObject(e, "kv_blocks_per_slot", (double)P->slot_blocks);
        cJSON_AddNumberToObject(e, "kv_pool_bytes_per_chip", P->stages ? P->cap[0] : 0);
        cJSON_AddNumberToObject(e, "activation_bytes_per_chip", P->stages ? P->act[0] : 0);
        cJSON_AddItemToArray(pools, e);
    }
    cJSON_AddStringToObject(o, "router", in->router);
    cJSON_AddStringToObject(o, "scheduler", in->scheduler);
    cJSON_AddStringToObject(o, "kv_cache", in->kv_cache == KV_PAGED ? "paged" : "reserve");
    cJSON_AddNumberToObject(o, "tp_allreduces_per_pass", r->tp_allreduces_per_pass);
    add_dist(o, "itl", &r->itl, true);
    add_dist(o, "sched_delay", &r->sched_delay, true);
    add_dist(o, "batch_requests", &r->batch, false);
    add_dist(o, "batch_tokens", &r->step_tokens, false);
    cJSON_AddNumberToObject(o, "preemptions", (double)r->preemptions);
    cJSON_AddNumberToObject(o, "recomputed_tokens", r->recomputed_tokens);
    cJSON_AddNumberToObject(o, "swaps_out", (double)r->swaps_out);
    cJSON_AddNumberToObject(o, "swaps_in", (double)r->swaps_in);
    cJSON_AddNumberToObject(o, "swap_bytes", r->swap_bytes);
    cJSON *px = cJSON_AddObjectToObject(o, "prefix_cache");
    cJSON_AddBoolToObject(px, "enabled", in->prefix_caching);
    cJSON_AddNumberToObject(px, "lookups", r->prefix_lookups);
    cJSON_AddNumberToObject(px, "hit_requests", r->prefix_hit_requests);
    cJSON_AddNumberToObject(px, "query_tokens", r->prefix_query_tokens);
    cJSON_AddNumberToObject(px, "hit_tokens", r->prefix_hit_tokens);
    cJSON_AddNumberToObject(px, "hit_rate", r->prefix_query_tokens > 0
                                                ? r->prefix_hit_tokens / r->prefix_query_tokens : 0);
    cJSON *sp = cJSON_AddObjectToObject(o, "speculative");
    cJSON_AddNumberToObject(sp, "steps", (double)r->spec_steps);
    cJSON_AddNumberToObject(sp, "tokens", r->spec_tokens);
    cJSON_AddNumberToObject(sp, "tokens_per_step", r->spec_steps ? r->spec_tokens / r->spec_steps : 0);
    cJSON *dg = cJSON_AddObjectToObject(o, "disaggregated");
    cJSON_AddBoolToObject(dg, "enabled", s->n_pools == 2);
    cJSON_AddNumberToObject(dg, "kv_transfer_bytes", r->kv_transfer_bytes);
    add_dist(dg, "kv_transfer", &r->kv_transfer, true);
    cJSON *gp = cJSON_AddObjectToObject(o, "goodput");
    cJSON_AddNumberToObject(gp, "slo_ttft_s", mp_seconds(in->slo_ttft));
    cJSON_AddNumberToObject(gp, "slo_tpot_s", mp_seconds(in->slo_tpot));
    cJSON_AddNumberToObject(gp, "slo_e2e_s", mp_seconds(in->slo_e2e));
    cJSON_AddNumberToObject(gp, "requests_met", r->slo_met);
    cJSON_AddNumberToObject(gp, "fraction", r->requests ? (double)r->slo_met / r->requests : 0);
    cJSON_AddNumberToObject(gp, "requests_per_s", r->goodput_rps);
    cJSON *reps = cJSON_AddArrayToObject(o, "replica_reports");
    for (int x = 0; x < r->replicas; x++) {
        const struct serve_replica_report *p = &r->rep[x];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", x);
        cJSON_AddNumberToObject(e, "pool", p->pool);
        cJSON_AddNumberToObject(e, "chips", p->chips);
        cJSON_AddNumberToObject(e, "routed", p->routed);
        cJSON_AddNumberToObject(e, "requests_completed", p->completed);
        cJSON_AddNumberToObject(e, "slo_met", p->slo_met);
        add_quant(e, "ttft", p->ttft);
        add_quant(e, "tpot", p->tpot);
        add_quant(e, "latency", p->e2e);
        cJSON_AddNumberToObject(e, "tokens_per_s", p->tokens_per_s);
        cJSON_AddNumberToObject(e, "preemptions", (double)p->preemptions);
        cJSON_AddNumberToObject(e, "kv_blocks", (double)p->blocks);
        cJSON_AddNumberToObject(e, "kv_peak_fraction", p->kv_peak_fraction);
        cJSON *little = cJSON_AddObjectToObject(e, "little");
        cJSON_AddNumberToObject(little, "arrival_rate", p->little_rate);
        cJSON_AddNumberToObject(little, "mean_latency_s", p->little_latency_s);
        cJSON_AddNumberToObject(little, "mean_in_system", p->little_in_system);
        cJSON_AddItemToArray(reps, e);
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
    if (s->has_sys) {
        char model[160];
        cJSON_AddStringToObject(o, "collective_model", collective_model(&s->sys, model, sizeof model));
    }
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
        cJSON_AddNumberToObject(e, "replica", x->replica);
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
    json_cluster(o, s);
    char *text = cJSON_Print(o);
    fprintf(f, "%s\n", text);
    cJSON_free(text);
    cJSON_Delete(o);
}
