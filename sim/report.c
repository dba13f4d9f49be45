/* report.c — summary, JSON, timeline CSV and Chrome trace; see report.h. */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <csv.h>

#include "units.h"

/* Exact decimal seconds from picoseconds ("0.033000000000"): the timeline
 * keeps every picosecond, so a reader can recompute the engine's sums. */
static void fmt_seconds(char *buf, size_t size, mp_time t)
{
    const char *sign = t < 0 ? "-" : "";
    uint64_t a = t < 0 ? (uint64_t)-t : (uint64_t)t;
    snprintf(buf, size, "%s%" PRIu64 ".%012" PRIu64, sign, a / (uint64_t)1000000000000,
             a % (uint64_t)1000000000000);
}

/* Exact microseconds from picoseconds, for the Chrome trace's ts and dur. */
static void fmt_micros(char *buf, size_t size, mp_time t)
{
    const char *sign = t < 0 ? "-" : "";
    uint64_t a = t < 0 ? (uint64_t)-t : (uint64_t)t;
    snprintf(buf, size, "%s%" PRIu64 ".%06" PRIu64, sign, a / (uint64_t)1000000, a % (uint64_t)1000000);
}

/* A duration for people: 3 decimals in the largest unit below it. */
static void fmt_time(char *buf, size_t size, mp_time t)
{
    double a = fabs((double)t);
    if (t == 0) snprintf(buf, size, "0");
    else if (a >= 1e12) snprintf(buf, size, "%.3f s", (double)t / 1e12);
    else if (a >= 1e9) snprintf(buf, size, "%.3f ms", (double)t / 1e9);
    else if (a >= 1e6) snprintf(buf, size, "%.3f us", (double)t / 1e6);
    else snprintf(buf, size, "%.3f ns", (double)t / 1e3);
}

static void fmt_bytes(char *buf, size_t size, double b)
{
    if (b >= 1e12) snprintf(buf, size, "%.2f TB", b / 1e12);
    else if (b >= 1e9) snprintf(buf, size, "%.2f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, size, "%.2f MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, size, "%.2f KB", b / 1e3);
    else snprintf(buf, size, "%.0f B", b);
}

static const char *recompute_name(int r)
{
    return r == RECOMPUTE_FULL ? "full" : r == RECOMPUTE_SELECTIVE ? "selective" : "none";
}

void report_text(FILE *f, const struct sim *s)
{
    const struct config *c = &s->cfg;
    const struct sim_result *r = &s->res;
    char a[64], b[64];
    fprintf(f, "scenario    %s\n", c->name[0] ? c->name : "(defaults)");
    if (s->has_model)
        fprintf(f, "model       %s: %d layers, hidden %d, %.2fB parameters, seq %d\n",
                s->model.name, s->model.decoders, s->model.hidden, model_params(&s->model) / 1e9,
                c->model.seq_len);
    else
        fprintf(f, "model       synthetic: forward %g ms, backward %g + %g ms per stage, hop %g ms\n",
                (double)c->synthetic.forward / 1e9, (double)c->synthetic.backward_input / 1e9,
                (double)c->synthetic.backward_weight / 1e9, (double)c->synthetic.hop / 1e9);
    fprintf(f, "system      %s: %d × %s\n", s->sys.name, r->n_chips, s->sys.chip.name);
    fprintf(f, "layout      tp %d × pp %d × dp %d, vpp %d, schedule %s, %d microbatches of %d, "
               "recompute %s, zero %d\n",
            c->parallel.tp, c->parallel.pp, c->parallel.dp, c->parallel.vpp, c->training.schedule,
            r->microbatches, c->training.micro_batch, recompute_name(c->training.recompute),
            c->training.zero);
    if (!r->feasible) {
        fprintf(f, "INFEASIBLE  %s\n", r->infeasible_reason);
        if (!r->stage) return;
    }
    fmt_time(a, sizeof a, r->step_time);
    fprintf(f, "\nstep time   %s", a);
    if (r->has_formula) {
        fmt_time(b, sizeof b, r->formula_step);
        fprintf(f, "    (closed form %s)", b);
    }
    fprintf(f, "\nbubble      %.4f", r->bubble);
    if (r->has_formula)
        fprintf(f, "      (closed form %s = %.4f, simulated %.4f)", r->formula_text,
                r->formula_bubble, r->bubble);
    fmt_time(a, sizeof a, r->max_span);
    fprintf(f, "\n            %.4f over the largest stage span (%s)\n", r->bubble_span, a);
    fprintf(f, "tokens/s    %.6g\n", r->tokens_per_s);
    if (s->has_model)
        fprintf(f, "MFU         %.2f%%   HFU %.2f%%   (%.4g model FLOPs per step)\n", 100 * r->mfu,
                100 * r->hfu, r->model_flops);
    else
        fprintf(f, "MFU         n/a (a synthetic model has no FLOP count)\n");
    fprintf(f, "events      %" PRIu64 " in %.3f s of simulator time\n", r->events, r->sim_wall_s);

    fprintf(f, "\n%-5s %-5s %-12s %-12s %-12s %-12s %-11s %-10s %-10s %-10s %-11s\n", "stage",
            "chip", "busy", "idle", "first start", "last end", "peak mem", "weights", "grads",
            "optimizer", "activations");
    for (int d = 0; d < r->stages; d++) {
        const struct stage_report *st = &r->stage[d];
        char busy[32], idle[32], first[32], last[32], peak[32], w[32], g[32], o[32], act[32];
        fmt_time(busy, sizeof busy, st->busy);
        fmt_time(idle, sizeof idle, r->step_time - st->busy);
        fmt_time(first, sizeof first, st->first_start);
        fmt_time(last, sizeof last, st->last_end);
        fmt_bytes(peak, sizeof peak, st->peak_mem);
        fmt_bytes(w, sizeof w, st->mem[MEM_WEIGHTS]);
        fmt_bytes(g, sizeof g, st->mem[MEM_GRADS]);
        fmt_bytes(o, sizeof o, st->mem[MEM_OPTIMIZER]);
        fmt_bytes(act, sizeof act, st->mem[MEM_ACTIVATIONS]);
        fprintf(f, "%-5d %-5d %-12s %-12s %-12s %-12s %-11s %-10s %-10s %-10s %-11s\n", d,
                st->chip, busy, idle, first, last, peak, w, g, o, act);
    }
}

void report_json(FILE *f, const struct sim *s)
{
    const struct sim_result *r = &s->res;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "scenario", s->cfg.name);
    cJSON_AddStringToObject(root, "schedule", s->cfg.training.schedule);
    cJSON_AddNumberToObject(root, "step_time_s", mp_seconds(r->step_time));
    cJSON_AddNumberToObject(root, "tokens_per_s", r->tokens_per_s);
    cJSON_AddNumberToObject(root, "mfu", r->mfu);
    cJSON_AddNumberToObject(root, "hfu", r->hfu);
    cJSON_AddNumberToObject(root, "bubble", r->bubble);
    cJSON_AddNumberToObject(root, "bubble_span", r->bubble_span);
    cJSON_AddBoolToObject(root, "feasible", r->feasible);
    if (r->feasible)
        cJSON_AddNullToObject(root, "infeasible_reason");
    else
        cJSON_AddStringToObject(root, "infeasible_reason", r->infeasible_reason);
    cJSON_AddNumberToObject(root, "events", (double)r->events);
    cJSON_AddNumberToObject(root, "sim_wall_s", r->sim_wall_s);
    cJSON_AddNumberToObject(root, "chips", r->n_chips);
    cJSON_AddNumberToObject(root, "microbatches", r->microbatches);
    if (r->has_formula) {
        cJSON *fo = cJSON_AddObjectToObject(root, "closed_form");
        cJSON_AddStringToObject(fo, "text", r->formula_text);
        cJSON_AddNumberToObject(fo, "step_time_s", mp_seconds(r->formula_step));
        cJSON_AddNumberToObject(fo, "bubble", r->formula_bubble);
    }
    cJSON *stages = cJSON_AddArrayToObject(root, "stages");
    for (int d = 0; r->stage && d < r->stages; d++) {
        const struct stage_report *st = &r->stage[d];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", d);
        cJSON_AddNumberToObject(o, "chip", st->chip);
        cJSON_AddNumberToObject(o, "busy_s", mp_seconds(st->busy));
        cJSON_AddNumberToObject(o, "first_start_s", mp_seconds(st->first_start));
        cJSON_AddNumberToObject(o, "last_end_s", mp_seconds(st->last_end));
        cJSON_AddNumberToObject(o, "peak_mem_bytes", st->peak_mem);
        cJSON *mem = cJSON_AddObjectToObject(o, "mem");
        static const int cats[] = { MEM_WEIGHTS, MEM_GRADS, MEM_OPTIMIZER, MEM_ACTIVATIONS, MEM_KV };
        for (size_t k = 0; k < sizeof cats / sizeof *cats; k++)
            cJSON_AddNumberToObject(mem, tg_mem_cat_name(cats[k]), st->mem[cats[k]]);
        cJSON_AddItemToArray(stages, o);
    }
    char *text = cJSON_Print(root);
    fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(root);
}

/* chunk_of[path*stages + s]: the stage's index among those its device holds. */
static int *chunk_table(const struct pipe_program *p)
{
    int *chunk = mp_xmalloc((size_t)p->paths * p->stages * sizeof *chunk);
    int *count = mp_xcalloc((size_t)p->devices, sizeof *count);
    for (int q = 0; q < p->paths; q++)
        for (int s = 0; s < p->stages; s++) {
            int d = p->device_of[q * p->stages + s];
            chunk[q * p->stages + s] = count[d]++;
        }
    free(count);
    return chunk;
}

static void csv_text(FILE *f, const char *text, const char *sep)
{
    csv_fwrite(f, text, strlen(text));
    fputs(sep, f);
}

void report_timeline_csv(FILE *f, const struct sim *s)
{
    const struct taskgraph *g = &s->g;
    const struct engine *e = &s->e;
    const struct sim_result *r = &s->res;
    int *chunk = chunk_table(&s->prog);
    int *stage_of_chip = mp_xmalloc((size_t)g->n_chips * sizeof *stage_of_chip);
    for (int c = 0; c < g->n_chips; c++) stage_of_chip[c] = -1;
    for (int d = 0; d < s->prog.devices; d++) stage_of_chip[s->chip_of_device[d]] = d;

    fputs("chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,"
          "mem_bytes,label\n", f);
    char a[48], b[48], label[256];
    /* Run-wide facts first, so a reader has them before the ops. */
    snprintf(label, sizeof label, "scenario=%s", s->cfg.name);
    fputs("-1,-1,meta,meta,-1,-1,-1,-1,0,0,0,,", f); csv_text(f, label, "\n");
    snprintf(label, sizeof label, "schedule=%s", s->cfg.training.schedule);
    fputs("-1,-1,meta,meta,-1,-1,-1,-1,0,0,0,,", f); csv_text(f, label, "\n");
    fmt_seconds(a, sizeof a, r->step_time);
    snprintf(label, sizeof label, "step_time_s=%s", a);
    fputs("-1,-1,meta,meta,-1,-1,-1,-1,0,0,0,,", f); csv_text(f, label, "\n");
    snprintf(label, sizeof label, "bubble=%.6f", r->bubble);
    fputs("-1,-1,meta,meta,-1,-1,-1,-1,0,0,0,,", f); csv_text(f, label, "\n");
    snprintf(label, sizeof label, "mfu=%.6f", r->mfu);
    fputs("-1,-1,meta,meta,-1,-1,-1,-1,0,0,0,,", f); csv_text(f, label, "\n");
    snprintf(label, sizeof label, "chips=%d", r->n_chips);
    fputs("-1,-1,meta,meta,-1,-1,-1,-1,0,0,0,,", f); csv_text(f, label, "\n");
    for (int d = 0; d < s->prog.devices; d++) {
        snprintf(label, sizeof label, "capacity_bytes=%.0f", s->sys.chip.mem_bytes);
        fprintf(f, "%d,%d,meta,meta,-1,-1,-1,-1,0,0,0,,", s->chip_of_device[d], d);
        csv_text(f, label, "\n");
    }

    for (int i = 0; i < g->n_ops; i++) {
        const struct op *o = &g->ops[i];
        int ch = -1;
        if (o->stage >= 0 && o->mb >= 0 && o->mb < s->prog.microbatches)
            ch = chunk[s->prog.path_of_mb[o->mb] * s->prog.stages + o->stage];
        fmt_seconds(a, sizeof a, e->start[i]);
        fmt_seconds(b, sizeof b, e->end[i]);
        if (o->mb2 >= 0)
            snprintf(label, sizeof label, "%s mb %d + mb %d", tg_tag_name(o->tag), o->mb, o->mb2);
        else if (o->mb >= 0)
            snprintf(label, sizeof label, "%s mb %d stage %d", tg_tag_name(o->tag), o->mb, o->stage);
        else
            snprintf(label, sizeof label, "%s", tg_tag_name(o->tag));
        fprintf(f, "%d,%d,%s,%s,%d,%d,%d,%d,%s,%s,%.0f,,", o->chip, stage_of_chip[o->chip],
                tg_stream_name(o->stream), tg_tag_name(o->tag), o->mb, ch, o->layer_first,
                o->layer_last, a, b, o->bytes);
        csv_text(f, label, "\n");
    }
    for (int i = 0; i < e->n_mem_log; i++) {
        const struct mem_event *m = &e->mem_log[i];
        fmt_seconds(a, sizeof a, m->time);
        fprintf(f, "%d,%d,memory,mem,-1,-1,-1,-1,%s,%s,%.0f,%.0f,%s\n", m->chip,
                stage_of_chip[m->chip], a, a, m->delta, m->in_use, tg_mem_cat_name(m->cat));
    }
    free(chunk);
    free(stage_of_chip);
}

void report_chrome_trace(FILE *f, const struct sim *s)
{
    const struct taskgraph *g = &s->g;
    const struct engine *e = &s->e;
    int *stage_of_chip = mp_xmalloc((size_t)g->n_chips * sizeof *stage_of_chip);
    bool *used = mp_xcalloc((size_t)g->n_chips, sizeof *used);
    for (int c = 0; c < g->n_chips; c++) stage_of_chip[c] = -1;
    for (int d = 0; d < s->prog.devices; d++) stage_of_chip[s->chip_of_device[d]] = d;
    for (int i = 0; i < g->n_ops; i++) used[g->ops[i].chip] = true;

    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    const char *sep = "";
    for (int c = 0; c < g->n_chips; c++) {
        if (!used[c]) continue;
        char name[64];
        if (stage_of_chip[c] >= 0) snprintf(name, sizeof name, "chip %d (stage %d)", c, stage_of_chip[c]);
        else snprintf(name, sizeof name, "chip %d", c);
        fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"name\":\"%s\"}}", sep, c, name);
        sep = ",\n";
        fprintf(f, "%s{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"sort_index\":%d}}", sep, c, c);
        for (int st = 0; st < N_STREAMS; st++)
            fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                       "\"args\":{\"name\":\"%s\"}}", sep, c, st, tg_stream_name(st));
    }
    char ts[48], dur[48];
    for (int i = 0; i < g->n_ops; i++) {
        const struct op *o = &g->ops[i];
        fmt_micros(ts, sizeof ts, e->start[i]);
        fmt_micros(dur, sizeof dur, e->end[i] - e->start[i]);
        char name[64];
        if (o->mb2 >= 0) snprintf(name, sizeof name, "%s%d+%d", tg_tag_name(o->tag), o->mb, o->mb2);
        else if (o->mb >= 0) snprintf(name, sizeof name, "%s%d", tg_tag_name(o->tag), o->mb);
        else snprintf(name, sizeof name, "%s", tg_tag_name(o->tag));
        fprintf(f, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                   "\"ts\":%s,\"dur\":%s,\"args\":{\"microbatch\":%d,\"stage\":%d,"
                   "\"layers\":\"%d-%d\",\"bytes\":%.0f}}",
                sep, name, tg_tag_name(o->tag), o->chip, o->stream, ts, dur, o->mb, o->stage,
                o->layer_first, o->layer_last, o->bytes);
        /* An arrow from each hand-off to the op that receives it. */
        if (o->tag == TAG_SEND && g->succ_off[i] < g->succ_off[i + 1]) {
            const struct op *to = &g->ops[g->succ[g->succ_off[i]]];
            char te[48];
            fmt_micros(te, sizeof te, e->end[i]);
            fprintf(f, "%s{\"name\":\"handoff\",\"cat\":\"send\",\"ph\":\"s\",\"id\":%d,"
                       "\"pid\":%d,\"tid\":%d,\"ts\":%s}", sep, i, o->chip, o->stream, ts);
            fprintf(f, "%s{\"name\":\"handoff\",\"cat\":\"send\",\"ph\":\"f\",\"bp\":\"e\","
                       "\"id\":%d,\"pid\":%d,\"tid\":%d,\"ts\":%s}", sep, i, to->chip,
                    to->stream, te);
        }
    }
    for (int i = 0; i < e->n_mem_log; i++) {
        const struct mem_event *m = &e->mem_log[i];
        fmt_micros(ts, sizeof ts, m->time);
        fprintf(f, "%s{\"name\":\"memory\",\"ph\":\"C\",\"pid\":%d,\"ts\":%s,"
                   "\"args\":{\"bytes\":%.0f}}", sep, m->chip, ts, m->in_use);
    }
    fputs("\n]}\n", f);
    free(stage_of_chip);
    free(used);
}
