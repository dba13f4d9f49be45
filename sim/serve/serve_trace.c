/* serve_trace.c — a recorded serving run (serve_run_recorded) as the timeline
 * CSV that `mpsim run --timeline` writes for training and mpsim-view reads,
 * and as a Chrome trace; see serve.h.
 *
 * Passes come in the order they were formed, stage copies and hand-offs
 * stage by stage, each in time order (the event queue makes it
 * deterministic), so the same seed writes the same bytes. Times are exact
 * decimal seconds (every picosecond kept), so a reader can add the compute
 * rows of a stage and get the report's busy time back exactly. */
#include "serve.h"

#include <string.h>

#include <csv.h>

#include "serve_impl.h"
#include "sim/io/units.h"

/* The kind of a pass: what its members are doing. A pass that mixes prompt
 * chunks with decode tokens is the signature of continuous batching, so it
 * gets its own name (and colour in the viewer). */
const char *serve_pass_kind(const struct serve_pass_rec *p)
{
    if (p->prefill && p->decode) return "mixed";
    return p->prefill ? "prefill" : "decode";
}

void serve_pass_label(char *buf, size_t size, const struct serve_pass_rec *p)
{
    if (p->prefill && p->decode)
        snprintf(buf, size, "slot %d: %d prefill (%d tokens) + %d decode", p->slot, p->prefill,
                 p->prefill_tokens, p->decode);
    else if (p->prefill)
        snprintf(buf, size, "slot %d: %d prefill (%d tokens)", p->slot, p->prefill,
                 p->prefill_tokens);
    else
        snprintf(buf, size, "slot %d: %d decode", p->slot, p->decode);
}

static const char header[] =
    "chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,"
    "mem_bytes,label,op,released_by,microbatch2,chunk2,direction,direction2,comm\n";

static void meta_csv(void *ctx, int chip, int stage, const char *label)
{
    FILE *f = ctx;
    fprintf(f, "%d,%d,meta,meta,-1,-1,-1,-1,0,0,0,,", chip, stage);
    csv_fwrite(f, label, strlen(label));
    fputs(",,,,,,,\n", f);
}

/* Whether global stage st is its replica's last (its hand-off is the
 * tokens' return). */
static bool last_stage(const struct serve *s, int st)
{
    const struct serve_result *r = &s->res;
    return st + 1 == r->stages || r->stage[st + 1].replica != r->stage[st].replica;
}

double serve_record_hop_bytes(const struct serve *s, int st, const struct serve_pass_rec *p)
{
    if (last_stage(s, st)) return serve_hop_bytes(s, st, p->emits > 0 ? p->emits : 1);
    return serve_hop_bytes(s, st, p->tokens);
}

/* Run-wide facts first. bubble is DESIGN.md §3's over the makespan:
 * 1 − Σ stage busy / (stages × makespan) (every idle moment of a serving
 * stage waits for another stage or for arrivals). No MFU: serving reports
 * tokens/s and latencies instead, and the viewer shows n/a. */
void serve_timeline_meta(const struct serve *s, bool detail,
                         void (*meta)(void *ctx, int chip, int stage, const char *kv), void *f)
{
    const struct serve_result *r = &s->res;
    char a[48], label[256];
    double busy = 0;
    for (int st = 0; st < r->stages; st++) busy += mp_seconds(r->stage[st].busy);
    double span = mp_seconds(r->makespan);
    snprintf(label, sizeof label, "scenario=%s", s->cfg.name);
    meta(f, -1, -1, label);
    snprintf(label, sizeof label, "schedule=serving (%d slots x %d)", r->slots, r->micro_batch);
    meta(f, -1, -1, label);
    meta(f, -1, -1, "mode=serving");
    units_format_seconds_exact(r->makespan, a, (int)sizeof a);
    snprintf(label, sizeof label, "step_time_s=%s", a);
    meta(f, -1, -1, label);
    snprintf(label, sizeof label, "bubble=%.6f",
             span > 0 && r->stages ? 1 - busy / (r->stages * span) : 0.0);
    meta(f, -1, -1, label);
    snprintf(label, sizeof label, "chips=%d", r->stages);
    meta(f, -1, -1, label);
    snprintf(label, sizeof label, "requests_completed=%d", r->completed);
    meta(f, -1, -1, label);
    snprintf(label, sizeof label, "tokens_per_s=%.6g", r->tokens_per_s);
    meta(f, -1, -1, label);
    snprintf(label, sizeof label, "ttft_p50_s=%.6g", r->ttft[0]);
    meta(f, -1, -1, label);
    snprintf(label, sizeof label, "tpot_p50_s=%.6g", r->tpot[0]);
    meta(f, -1, -1, label);
    if (!detail) {
        /* One row per pass: the viewer draws a row per slot, not per chip. */
        meta(f, -1, -1, "rows=slots");
        snprintf(label, sizeof label, "stages=%d", r->stages);
        meta(f, -1, -1, label);
        return;
    }
    for (int st = 0; st < r->stages; st++) {
        snprintf(label, sizeof label, "capacity_bytes=%.0f",
                 r->stage[st].free_bytes + r->stage[st].weights);
        meta(f, r->stage[st].chip, st, label);
    }
    /* Replicas as groups: which replica (and pool) each stage's chip serves. */
    if (r->replicas > 1 || r->pools > 1)
        for (int st = 0; st < r->stages; st++) {
            const struct serve_stage_report *x = &r->stage[st];
            snprintf(label, sizeof label, "replica=%d%s", x->replica,
                     r->pools > 1 ? (x->pool ? " decode" : " prefill") : "");
            meta(f, x->chip, st, label);
        }
}

void serve_timeline_csv(FILE *f, const struct serve *s)
{
    const struct serve_result *r = &s->res;
    const struct serve_record *rc = s->rec;
    fputs(header, f);
    serve_timeline_meta(s, false, meta_csv, f);
    if (!rc || r->stages < 1) return;
    char a[48], b[48], label[256];
    for (size_t i = 0; i < rc->n_pass; i++) {
        const struct serve_pass_rec *p = &rc->pass[i];
        /* Its replica's stages (the replica's first chip holds the row). */
        int g0 = s->rep ? s->rep[s->slot_rep[p->slot]].stage0 : 0, g1 = g0;
        while (!last_stage(s, g1)) g1++;
        int first = r->stage[g0].layer_first, last = r->stage[g1].layer_last;
        units_format_seconds_exact(p->start, a, (int)sizeof a);
        units_format_seconds_exact(p->end, b, (int)sizeof b);
        serve_pass_label(label, sizeof label, p);
        int n = (int)strlen(label);
        if (r->replicas > 1)
            snprintf(label + n, sizeof label - (size_t)n, ", replica %d, stages %d-%d",
                     r->stage[g0].replica, g0, g1);
        else
            snprintf(label + n, sizeof label - (size_t)n, ", stages 0-%d", g1);
        fprintf(f, "%d,%d,compute,%s,%d,-1,%d,%d,%s,%s,0,,", r->stage[g0].chip, g0,
                serve_pass_kind(p), p->slot, first, last, a, b);
        csv_fwrite(f, label, strlen(label));
        fprintf(f, ",%zu,-1,-1,-1,,,\n", i);
    }
}

void serve_timeline_csv_detail(FILE *f, const struct serve *s)
{
    const struct serve_result *r = &s->res;
    const struct serve_record *rc = s->rec;
    char a[48], b[48], label[256];
    fputs(header, f);
    serve_timeline_meta(s, true, meta_csv, f);
    if (!rc) return;
    for (int st = 0; rc->stage && st < r->stages; st++) {
        const struct serve_stage_rec *sr = &rc->stage[st];
        const struct serve_stage_report *x = &r->stage[st];
        for (size_t i = 0; i < sr->n; i++) {
            const struct serve_pass_rec *p = &rc->pass[sr->pass[i]];
            units_format_seconds_exact(sr->start[i], a, (int)sizeof a);
            units_format_seconds_exact(sr->end[i], b, (int)sizeof b);
            serve_pass_label(label, sizeof label, p);
            fprintf(f, "%d,%d,compute,%s,%d,-1,%d,%d,%s,%s,0,,", x->chip, st, serve_pass_kind(p),
                    p->slot, x->layer_first, x->layer_last, a, b);
            csv_fwrite(f, label, strlen(label));
            fputs(",,,,,,,\n", f);
        }
    }
    for (int st = 0; rc->stage && st < r->stages; st++) {
        const struct serve_stage_rec *sr = &rc->stage[st];
        bool back = last_stage(s, st);
        for (size_t i = 0; i < sr->n_hop; i++) {
            const struct serve_pass_rec *p = &rc->pass[sr->hop_pass[i]];
            /* The row is the link's busy time; the bytes arrive one hop
             * latency later (serve.c: latency overlaps the next hand-off). */
            mp_time held = sr->hop_end[i] - s->hop[st];
            if (held < sr->hop_start[i]) held = sr->hop_start[i];
            units_format_seconds_exact(sr->hop_start[i], a, (int)sizeof a);
            units_format_seconds_exact(held, b, (int)sizeof b);
            char at[48];
            units_format_seconds_exact(sr->hop_end[i], at, (int)sizeof at);
            if (back) snprintf(label, sizeof label, "tokens of slot %d back to stage 0, there at %s s",
                               p->slot, at);
            else snprintf(label, sizeof label, "activations of slot %d to stage %d, there at %s s",
                          p->slot, st + 1, at);
            fprintf(f, "%d,%d,comm,send,%d,-1,-1,-1,%s,%s,%.0f,,", r->stage[st].chip, st, p->slot,
                    a, b, serve_record_hop_bytes(s, st, p));
            csv_fwrite(f, label, strlen(label));
            fputs(",,,,,,,pp\n", f);
        }
    }
    /* Weights are resident from the start; KV + state come and go with
     * requests. mem_bytes is the chip's total: weights + KV in use. */
    for (int st = 0; st < r->stages; st++)
        fprintf(f, "%d,%d,memory,mem,-1,-1,-1,-1,0,0,%.0f,%.0f,weights,,,,,,,\n", r->stage[st].chip,
                st, r->stage[st].weights, r->stage[st].weights);
    for (size_t i = 0; i < rc->n_kv; i++) {
        const struct serve_kv_rec *k = &rc->kv[i];
        units_format_seconds_exact(k->t, a, (int)sizeof a);
        fprintf(f, "%d,%d,memory,mem,-1,-1,-1,-1,%s,%s,%.0f,%.0f,kv,,,,,,,\n", r->stage[k->stage].chip,
                k->stage, a, a, k->delta, r->stage[k->stage].weights + k->in_use);
    }
}

void serve_chrome_trace(FILE *f, const struct serve *s)
{
    const struct serve_result *r = &s->res;
    const struct serve_record *rc = s->rec;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    const char *sep = "";
    for (int st = 0; st < r->stages; st++) {
        int c = r->stage[st].chip;
        if (r->replicas > 1 || r->pools > 1)
            fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                       "\"args\":{\"name\":\"replica %d%s: chip %d (stage %d)\"}}", sep, c,
                    r->stage[st].replica,
                    r->pools > 1 ? (r->stage[st].pool ? " decode" : " prefill") : "", c, st);
        else
            fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                       "\"args\":{\"name\":\"chip %d (stage %d)\"}}", sep, c, c, st);
        sep = ",\n";
        fprintf(f, "%s{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"sort_index\":%d}}", sep, c, st);
        fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"name\":\"compute\"}}", sep, c);
        fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,"
                   "\"args\":{\"name\":\"comm\"}}", sep, c);
    }
    char ts[48], dur[48];
    for (int st = 0; rc && rc->stage && st < r->stages; st++) {
        const struct serve_stage_rec *sr = &rc->stage[st];
        for (size_t i = 0; i < sr->n; i++) {
            const struct serve_pass_rec *p = &rc->pass[sr->pass[i]];
            if (!units_format_trace_span(sr->start[i], sr->end[i], ts, dur, (int)sizeof ts))
                continue; /* rounds to nothing (units.h) */
            fprintf(f, "%s{\"name\":\"%s slot %d\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0,"
                       "\"ts\":%s,\"dur\":%s,\"args\":{\"slot\":%d,\"stage\":%d,\"prefill\":%d,"
                       "\"prefill_tokens\":%d,\"decode\":%d}}",
                    sep, serve_pass_kind(p), p->slot, serve_pass_kind(p), r->stage[st].chip, ts, dur,
                    p->slot, st, p->prefill, p->prefill_tokens, p->decode);
        }
        for (size_t i = 0; i < sr->n_hop; i++) {
            const struct serve_pass_rec *p = &rc->pass[sr->hop_pass[i]];
            if (!units_format_trace_span(sr->hop_start[i], sr->hop_end[i], ts, dur, (int)sizeof ts))
                continue;
            fprintf(f, "%s{\"name\":\"send slot %d\",\"cat\":\"send\",\"ph\":\"X\",\"pid\":%d,"
                       "\"tid\":1,\"ts\":%s,\"dur\":%s,\"args\":{\"slot\":%d,\"stage\":%d,"
                       "\"bytes\":%.0f}}",
                    sep, p->slot, r->stage[st].chip, ts, dur, p->slot, st,
                    serve_record_hop_bytes(s, st, p));
        }
    }
    /* One counter per chip: KV + state in use (weights are constant). */
    for (size_t i = 0; rc && i < rc->n_kv; i++) {
        const struct serve_kv_rec *k = &rc->kv[i];
        units_format_trace_ticks(units_trace_ticks(k->t), ts, (int)sizeof ts);
        fprintf(f, "%s{\"name\":\"memory\",\"ph\":\"C\",\"pid\":%d,\"ts\":%s,"
                   "\"args\":{\"kv\":%.0f}}", sep, r->stage[k->stage].chip, ts, k->in_use);
    }
    fputs("\n]}\n", f);
}
