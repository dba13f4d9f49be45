/* accel_trace.c — the first generate() call of a device_map run as the
 * timeline CSV mpsim-view reads and as a Chrome trace (accel.h). One row per
 * module computed and per copy a hook makes, in the call's order, so the
 * viewer shows the GPUs taking turns. Times are exact decimal seconds. */
#include "accel.h"

#include <csv.h>
#include <string.h>

#include "sim/io/units.h"

static const char *rec_kind(const struct accel_rec *r)
{
    switch (r->what) {
    case AR_HOP: return "send";
    case AR_HOST: return "host_copy";
    case AR_DISK: return "disk_read";
    default: return r->forward == 0 ? "prefill" : "decode";
    }
}

static void rec_label(char *buf, size_t size, const struct accel_setup *a,
                      const struct accel_rec *r)
{
    const char *name = a->tree.mod[r->mod].name;
    switch (r->what) {
    case AR_HOP:
        snprintf(buf, size, "copy for %s (%.0f B)", r->mod ? name : "logits", r->bytes);
        break;
    case AR_HOST: snprintf(buf, size, "%s weights host -> GPU (%.0f B)", name, r->bytes); break;
    case AR_DISK: snprintf(buf, size, "%s weights read from disk (%.0f B)", name, r->bytes); break;
    default: snprintf(buf, size, "%s, forward %d", name, r->forward); break;
    }
}

static void meta(FILE *f, int chip, const char *label)
{
    fprintf(f, "%d,%d,meta,meta,-1,-1,-1,-1,0,0,0,,", chip, chip);
    csv_fwrite(f, label, strlen(label));
    fputc('\n', f);
}

void accel_timeline_csv(FILE *f, const struct accel_setup *a, const struct accel_report *rep)
{
    const struct accel_gen *g = &rep->gen;
    char s0[48], s1[48], label[512];
    fputs("chip,stage,stream,kind,microbatch,chunk,layer_first,layer_last,start_s,end_s,bytes,"
          "mem_bytes,label\n", f);
    int gpus = 0;
    mp_time busy = 0;
    for (int i = 0; i < a->gpus && i < DM_MAX_GPUS; i++)
        if (g->gpu_need[i] > 0 || g->gpu_compute[i] > 0) {
            gpus = i + 1;
            busy += g->gpu_compute[i];
        }
    snprintf(label, sizeof label, "scenario=%s", a->cfg.name);
    meta(f, -1, label);
    snprintf(label, sizeof label, "schedule=accelerate generate() (device_map %s)",
             dm_policy_names[a->map.policy]);
    meta(f, -1, label);
    units_format_seconds_exact(g->call, s0, (int)sizeof s0);
    snprintf(label, sizeof label, "step_time_s=%s", s0);
    meta(f, -1, label);
    /* Idle share of the GPUs over the call: they take turns. */
    snprintf(label, sizeof label, "bubble=%.6f",
             g->call > 0 && gpus ? 1 - (double)busy / ((double)gpus * g->call) : 0.0);
    meta(f, -1, label);
    snprintf(label, sizeof label, "chips=%d", gpus);
    meta(f, -1, label);
    snprintf(label, sizeof label, "tokens_per_s=%.6g", g->tokens_per_s);
    meta(f, -1, label);
    snprintf(label, sizeof label, "ttft_p50_s=%.6g", g->prefill / 1e12);
    meta(f, -1, label);
    for (int i = 0; i < gpus; i++) {
        snprintf(label, sizeof label, "capacity_bytes=%.0f", a->sys.chip.mem_bytes);
        meta(f, i, label);
    }
    for (size_t i = 0; i < rep->n_rec; i++) {
        const struct accel_rec *r = &rep->rec[i];
        units_format_seconds_exact(r->start, s0, (int)sizeof s0);
        units_format_seconds_exact(r->end, s1, (int)sizeof s1);
        rec_label(label, sizeof label, a, r);
        fprintf(f, "%d,%d,%s,%s,%d,-1,%d,%d,%s,%s,%.0f,,", r->chip, r->chip,
                r->comm ? "comm" : "compute", rec_kind(r), r->forward, r->layer, r->layer, s0,
                s1, r->bytes);
        csv_fwrite(f, label, strlen(label));
        fputc('\n', f);
    }
    for (int i = 0; i < a->map.n_dev; i++) {
        const struct dm_device *d = &a->map.dev[i];
        if (d->device >= 0 && d->device < gpus)
            fprintf(f, "%d,%d,memory,mem,-1,-1,-1,-1,0,0,%.0f,%.0f,weights\n", d->device,
                    d->device, d->weights, d->weights);
    }
}

void accel_chrome_trace(FILE *f, const struct accel_setup *a, const struct accel_report *rep)
{
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    const char *sep = "";
    for (int c = 0; c < a->gpus && c < DM_MAX_GPUS; c++) {
        if (!(rep->gen.gpu_need[c] > 0 || rep->gen.gpu_compute[c] > 0)) continue;
        fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"name\":\"GPU %d\"}}", sep, c, c);
        sep = ",\n";
        fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"name\":\"compute\"}}", sep, c);
        fprintf(f, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,"
                   "\"args\":{\"name\":\"copies\"}}", sep, c);
    }
    char ts[48], dur[48], label[512];
    for (size_t i = 0; i < rep->n_rec; i++) {
        const struct accel_rec *r = &rep->rec[i];
        if (!units_format_trace_span(r->start, r->end, ts, dur, (int)sizeof ts))
            continue; /* rounds to nothing (units.h) */
        rec_label(label, sizeof label, a, r);
        /* Module names are plain identifiers and digits: no JSON escaping. */
        fprintf(f, "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                   "\"ts\":%s,\"dur\":%s,\"args\":{\"forward\":%d,\"bytes\":%.0f}}",
                sep, label, rec_kind(r), r->chip, r->comm ? 1 : 0, ts, dur, r->forward, r->bytes);
        sep = ",\n";
    }
    fputs("\n]}\n", f);
}
