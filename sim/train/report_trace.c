/* report_trace.c — a training step as a Chrome / Perfetto trace; see
 * report.h (report_chrome_trace) and formats.md.
 *
 * Time. The format's `ts` and `dur` are microseconds, read by viewers as
 * doubles. Decimal microseconds (1 ps = 0.000001 µs) are not binary
 * fractions: after parsing, ts + dur of one op could land a hair past the
 * next op's ts (842 such pairs in the DeepSeek-V3 trace). Here every time
 * is a whole number of 1/1024 µs (≈ 0.98 ns; units_trace_ticks, shared
 * with the serving and device-map traces), rounded once per boundary
 * from the integer picoseconds, and written exactly in decimal
 * (k/1024 has at most ten decimals), so a double holds each value exactly,
 * ts + dur is exactly the end boundary, and an op that starts where
 * another ends starts at exactly that number; a viewer converting to whole
 * nanoseconds by truncating (Perfetto) keeps floor(a) + floor(b) ≤
 * floor(a + b), so no overlap appears there either. Ops shorter than half
 * a step round to nothing and are left out, as are zero-length ops
 * (memory bookkeeping, DualPipe's start and join markers). */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "sim/io/units.h"

/* Trace time units: 1/1024 µs (sim/io/units.h). */
typedef long long trace_t;

static void fmt_trace(char *buf, size_t size, trace_t k)
{
    units_format_trace_ticks(k, buf, (int)size);
}

/* Thread of each stage lane's bubble slices (beside compute and comm). */
#define TID_BUBBLE N_STREAMS

struct trace_ctx {
    FILE *f;
    const struct sim *s;
    const char *sep;
};

/* An op's slice ends when its stream comes free: for a transfer whose
 * route has latency, when its last byte leaves (it arrives `latency`
 * later, while the stream may already carry the next; taskgraph.h). */
static mp_time slice_end(const struct sim *s, int id)
{
    return s->e.end[id] - s->g.ops[id].latency;
}

static trace_t op_dur(const struct sim *s, int id)
{
    return units_trace_ticks(slice_end(s, id)) - units_trace_ticks(s->e.start[id]);
}

static void emit_bubble(void *vctx, int device, mp_time a, mp_time b, enum split_part p)
{
    struct trace_ctx *c = vctx;
    if (p != SPLIT_BUBBLE) return;
    trace_t ta = units_trace_ticks(a), tb = units_trace_ticks(b);
    if (tb <= ta) return;
    char ts[48], dur[48];
    fmt_trace(ts, sizeof ts, ta);
    fmt_trace(dur, sizeof dur, tb - ta);
    fprintf(c->f, "%s{\"name\":\"bubble\",\"cat\":\"bubble\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                  "\"ts\":%s,\"dur\":%s,\"args\":{\"stage\":%d}}",
            c->sep, c->s->chip_of_device[device], TID_BUBBLE, ts, dur, device);
    c->sep = ",\n";
}

/* The first op at or after stream position `pos` of `stream` that shows as
 * a slice (its rounded duration > 0), or -1. */
static int slice_at_or_after(const struct sim *s, int stream, int pos)
{
    const struct taskgraph *g = &s->g;
    for (int i = pos; i < g->stream_off[stream + 1]; i++)
        if (op_dur(s, g->stream_ops[i]) > 0) return g->stream_ops[i];
    return -1;
}

static int slice_at_or_before(const struct sim *s, int stream, int pos)
{
    const struct taskgraph *g = &s->g;
    for (int i = pos; i >= g->stream_off[stream]; i--)
        if (op_dur(s, g->stream_ops[i]) > 0) return g->stream_ops[i];
    return -1;
}

static int stream_of(const struct op *o)
{
    return o->chip * N_STREAMS + o->stream;
}

/* The hand-off arrows: from the send's slice (or, when the transfer took
 * no time, the slice that produced it) to the slice that takes it in, each
 * end placed at its slice's start, which that slice encloses (Perfetto
 * binds a flow to the slice enclosing its time on its thread). */
static void emit_flows(struct trace_ctx *c, const int *pos, const int *producer)
{
    const struct sim *s = c->s;
    const struct taskgraph *g = &s->g;
    for (int i = 0; i < g->n_ops; i++) {
        const struct op *o = &g->ops[i];
        if (o->tag != TAG_SEND || o->comm != COMM_PP) continue;
        int from = op_dur(s, i) > 0 ? i : -1;
        if (from < 0 && producer[i] >= 0)
            from = slice_at_or_before(s, stream_of(&g->ops[producer[i]]), pos[producer[i]]);
        int to = -1;
        for (int k = g->succ_off[i]; k < g->succ_off[i + 1] && to < 0; k++) {
            int v = g->succ[k];
            to = slice_at_or_after(s, stream_of(&g->ops[v]), pos[v]);
        }
        if (from < 0 || to < 0) continue;
        char t0[48], t1[48];
        fmt_trace(t0, sizeof t0, units_trace_ticks(s->e.start[from]));
        fmt_trace(t1, sizeof t1, units_trace_ticks(s->e.start[to]));
        const struct op *a = &g->ops[from], *b = &g->ops[to];
        fprintf(c->f, "%s{\"name\":\"handoff\",\"cat\":\"handoff\",\"ph\":\"s\",\"id\":%d,"
                      "\"pid\":%d,\"tid\":%d,\"ts\":%s}", c->sep, i, a->chip, a->stream, t0);
        c->sep = ",\n";
        fprintf(c->f, "%s{\"name\":\"handoff\",\"cat\":\"handoff\",\"ph\":\"f\",\"bp\":\"e\","
                      "\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%s}", c->sep, i, b->chip, b->stream,
                t1);
    }
}

static void emit_op(struct trace_ctx *c, int i)
{
    const struct sim *s = c->s;
    const struct op *o = &s->g.ops[i];
    trace_t t0 = units_trace_ticks(s->e.start[i]), t1 = units_trace_ticks(slice_end(s, i));
    if (t1 <= t0) return;
    char ts[48], dur[48], name[64];
    fmt_trace(ts, sizeof ts, t0);
    fmt_trace(dur, sizeof dur, t1 - t0);
    if (o->mb2 >= 0) snprintf(name, sizeof name, "%s%d+%d", tg_tag_name(o->tag), o->mb, o->mb2);
    else if (o->mb >= 0) snprintf(name, sizeof name, "%s%d", tg_tag_name(o->tag), o->mb);
    else snprintf(name, sizeof name, "%s", tg_tag_name(o->tag));
    fprintf(c->f, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                  "\"ts\":%s,\"dur\":%s,\"args\":{",
            c->sep, name, tg_tag_name(o->tag), o->chip, o->stream, ts, dur);
    c->sep = ",\n";
    /* Only the facts the op has: no -1 placeholders. */
    const char *sep = "";
    if (o->mb >= 0) fprintf(c->f, "%s\"microbatch\":%d", sep, o->mb), sep = ",";
    if (o->mb2 >= 0) fprintf(c->f, "%s\"microbatch2\":%d", sep, o->mb2), sep = ",";
    if (o->stage >= 0) fprintf(c->f, "%s\"stage\":%d", sep, o->stage), sep = ",";
    if (o->layer_first >= 0 && o->layer_last >= 0)
        fprintf(c->f, "%s\"layers\":\"%d-%d\"", sep, o->layer_first, o->layer_last), sep = ",";
    if (o->comm != COMM_NONE) fprintf(c->f, "%s\"comm\":\"%s\"", sep, tg_comm_name(o->comm)), sep = ",";
    if (o->bytes > 0) fprintf(c->f, "%s\"bytes\":%.0f", sep, o->bytes), sep = ",";
    if (o->latency > 0) {
        /* In flight after the slice: it arrives this much later. */
        char lat[48];
        fmt_trace(lat, sizeof lat, units_trace_ticks(s->e.end[i]) - t1);
        fprintf(c->f, "%s\"arrives_after_us\":%s", sep, lat);
    }
    fputs("}}", c->f);
}

/* The run's figures, for a reader of the trace alone. */
static void emit_metadata(FILE *f, const struct sim *s)
{
    const struct sim_result *r = &s->res;
    cJSON *o = cJSON_CreateObject();
    char a[48];
    cJSON_AddStringToObject(o, "scenario", s->cfg.name);
    cJSON_AddStringToObject(o, "schedule", s->cfg.training.schedule);
    units_format_seconds_exact(r->step_time, a, sizeof a);
    cJSON_AddStringToObject(o, "step_time_s", a);
    cJSON_AddBoolToObject(o, "feasible", r->feasible);
    if (!r->feasible) cJSON_AddStringToObject(o, "infeasible_reason", r->infeasible_reason);
    cJSON_AddNumberToObject(o, "chips", r->n_chips);
    cJSON_AddNumberToObject(o, "stages", r->stages);
    cJSON_AddNumberToObject(o, "microbatches", r->microbatches);
    cJSON_AddNumberToObject(o, "bubble", r->bubble);
    cJSON_AddNumberToObject(o, "capacity_bytes", s->sys.chip.mem_bytes);
    if (s->has_model) cJSON_AddNumberToObject(o, "mfu", r->mfu);
    else cJSON_AddNullToObject(o, "mfu");
    if (r->stage) report_split_json(o, "step_split", &r->split);
    cJSON_AddStringToObject(o, "time_unit", "ts and dur in microseconds, multiples of 1/1024");
    char *text = cJSON_PrintUnformatted(o);
    fprintf(f, "\"otherData\":%s", text);
    free(text);
    cJSON_Delete(o);
}

void report_chrome_trace(FILE *f, const struct sim *s)
{
    const struct taskgraph *g = &s->g;
    const struct engine *e = &s->e;
    int *stage_of_chip = mp_xmalloc((size_t)(g->n_chips ? g->n_chips : 1) * sizeof *stage_of_chip);
    bool *used = mp_xcalloc((size_t)(g->n_chips ? g->n_chips : 1), sizeof *used);
    for (int c = 0; c < g->n_chips; c++) stage_of_chip[c] = -1;
    for (int d = 0; d < s->prog.devices; d++) stage_of_chip[s->chip_of_device[d]] = d;
    /* Streams of a chip with ops: the copy streams (offload) only then. */
    unsigned *streams = mp_xcalloc((size_t)(g->n_chips ? g->n_chips : 1), sizeof *streams);
    for (int i = 0; i < g->n_ops; i++) {
        used[g->ops[i].chip] = true;
        streams[g->ops[i].chip] |= 1u << g->ops[i].stream;
    }
    for (int d = 0; d < s->prog.devices; d++) used[s->chip_of_device[d]] = true;

    fputs("{\"displayTimeUnit\":\"ms\",", f);
    emit_metadata(f, s);
    fputs(",\"traceEvents\":[\n", f);
    struct trace_ctx c = { .f = f, .s = s, .sep = "" };
    for (int ch = 0; ch < g->n_chips; ch++) {
        if (!used[ch]) continue;
        char name[160];
        if (stage_of_chip[ch] >= 0) snprintf(name, sizeof name, "chip %d (stage %d)", ch, stage_of_chip[ch]);
        else snprintf(name, sizeof name, "chip %d", ch);
        /* Over capacity (an infeasible run): said where it is seen. */
        double peak = e->mem ? e->mem[ch].peak : 0;
        if (peak > s->sys.chip.mem_bytes) {
            size_t len = strlen(name);
            snprintf(name + len, sizeof name - len, " OVER CAPACITY: peak %.2f GB of %.2f GB",
                     peak / 1e9, s->sys.chip.mem_bytes / 1e9);
        }
        fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"name\":\"%s\"}}", c.sep, ch, name);
        c.sep = ",\n";
        fprintf(f, "%s{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"sort_index\":%d}}", c.sep, ch, ch);
        for (int st = 0; st < N_STREAMS; st++)
            if (st <= STREAM_COMM || (streams[ch] & (1u << st)))
                fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                           "\"args\":{\"name\":\"%s\"}}", c.sep, ch, st, tg_stream_name(st));
        if (stage_of_chip[ch] >= 0 && s->res.stage)
            fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                       "\"args\":{\"name\":\"bubble\"}}", c.sep, ch, TID_BUBBLE);
    }
    for (int i = 0; i < g->n_ops; i++) emit_op(&c, i);

    /* Stream positions, and the op each send waits for (its producer). */
    int *pos = mp_xmalloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *pos);
    int *producer = mp_xmalloc((size_t)(g->n_ops ? g->n_ops : 1) * sizeof *producer);
    for (int st = 0; st < g->n_chips * N_STREAMS; st++)
        for (int k = g->stream_off[st]; k < g->stream_off[st + 1]; k++) pos[g->stream_ops[k]] = k;
    for (int i = 0; i < g->n_ops; i++) producer[i] = -1;
    for (int k = 0; k < g->n_edges; k++)
        if (producer[g->edge_to[k]] < 0) producer[g->edge_to[k]] = g->edge_from[k];
    emit_flows(&c, pos, producer);
    free(pos);
    free(producer);
    if (s->res.stage) step_split_intervals(s, emit_bubble, &c);

    /* One counter track per chip with a series per memory category, which
     * the viewers stack, so weights, activations and the rest are seen
     * apart; their sum is the chip's total. The engine logs changes, so
     * the running level of each category is kept here. */
    double *level = mp_xcalloc((size_t)(g->n_chips ? g->n_chips : 1) * N_MEM_CATS, sizeof *level);
    char ts[48];
    for (int i = 0; i < e->n_mem_log; i++) {
        const struct mem_event *m = &e->mem_log[i];
        double *lv = &level[(size_t)m->chip * N_MEM_CATS];
        lv[m->cat] += m->delta;
        fmt_trace(ts, sizeof ts, units_trace_ticks(m->time));
        fprintf(f, "%s{\"name\":\"memory\",\"ph\":\"C\",\"pid\":%d,\"ts\":%s,\"args\":{",
                c.sep, m->chip, ts);
        c.sep = ",\n";
        for (int k = 0; k < N_MEM_CATS; k++)
            fprintf(f, "%s\"%s\":%.0f", k ? "," : "", tg_mem_cat_name(k), lv[k]);
        fputs("}}", f);
    }
    fputs("\n]}\n", f);
    free(level);
    free(stage_of_chip);
    free(used);
    free(streams);
}
