/* fuzz_values.c — libFuzzer: the value fuzzer (issue 16). The input does not
 * become text for a parser; it chooses, for every key of the scenario table
 * in turn, a value the parser accepts — its default, an edge of its range
 * (tiny and huge numbers included), or a random point in it — and the whole
 * pipe then runs on that scenario: the plan, the training step or serving
 * run, and every report. Whatever the values, it must end in MP_OK,
 * MP_ERR_INPUT or MP_ERR_INFEASIBLE with a one-line message, under ASan and
 * UBSan, inside libFuzzer's time and memory limit (tests/fuzz/run): the work
 * budget (sim/io/budget.h), lowered here so that each input stays fast, is
 * what keeps any legal scenario from running away, and the checked duration
 * arithmetic (sim/common.h) what keeps it from wrapping.
 *
 * Bytes are read as a stream: one selector byte per key, then what the
 * choice needs; an input that runs out leaves the rest at their defaults.
 * With MPSIM_FUZZ_PRINT set, the scenario an input makes is printed as an
 * INI file (to replay a crash with mpsim run; "record" means --timeline). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "sim/io/config.h"
#include "sim/serve/accel.h"
#include "sim/serve/plan.h"
#include "sim/serve/serve.h"
#include "sim/strategy/schedule.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"

/* Events one input may ask for: ~0.05 s without sanitizers, a few seconds
 * under ASan on a loaded machine. At 10^5 the heaviest legal input found
 * (zb-v's four greedy orders over 65,536 microbatches, right at the budget)
 * took 6.8 s with the machine shared, too near libFuzzer's 10 s for a
 * slower CI machine: half of that. Then a serving step of gemma3-27b
 * under coverage and ASan ran 58 µs an event (92,900 events, past the
 * estimate then, in 5.4 s a run): 5·10^4 would be 2.9 s, a third of the
 * timeout; 3·10^4 leaves a CI machine twice as slow room for an input
 * twice as heavy. */
#define FUZZ_BUDGET_EVENTS 30000.0

struct bytes {
    const uint8_t *d;
    size_t n, i;
};

static uint64_t take(struct bytes *b, int k)
{
    uint64_t v = 0;
    for (int j = 0; j < k; j++) v = v << 8 | (b->i < b->n ? b->d[b->i++] : 0);
    return v;
}

/* A number in [lo, hi], log-uniform when lo > 0 (so 1e-6 and 1e12 are as
 * likely as 1), from 4 bytes. */
static double spread(struct bytes *b, double lo, double hi)
{
    double u = (double)take(b, 4) / 4294967295.0;
    if (lo > 0 && hi / lo > 100) return exp(log(lo) + u * (log(hi) - log(lo)));
    return lo + u * (hi - lo);
}

static const char *const models[] = { "llama3-8b", "mixtral-8x7b", "deepseek-v3", "gpt3-175b",
                                      "llama3-70b", "kimi-k3", "no-such-model",
                                      /* the architecture table's kinds (branch models):
                                       * sliding, linear, Mamba-2, MLA, gated, MoE */
                                      "gemma3-27b", "qwen3-next-80b-a3b", "nemotron-h-8b",
                                      "jamba-v0.1", "minimax-text-01", "gpt-oss-120b",
                                      "qwen2.5-1.5b-instruct", "mistral-7b" };
static const char *const systems[] = { "textbook", "dgx-h100", "dgx-a100", "mi300x-node",
                                       "tpu-v5p", "cerebras-cs3", "gb200-nvl72", "ring",
                                       "dgx-h800", "no-such-system",
                                       /* with a [host] tier (branch devmap) */
                                       "desktop-2x3060", "laptop-4090",
                                       "workstation-4x6000ada" };
/* model.family: rows of the architecture table, a wrong case, none such. */
static const char *const families[] = { "auto", "llama", "mixtral", "deepseek_v3", "qwen3_next",
                                        "nemotron_h", "gemma3_text", "LLAMA", "no_such" };
/* device_map.max_memory: Accelerate's dict, edges included. */
static const char *const max_memories[] = { "auto", "0=10GiB,cpu=64GiB", "0=1B", "0=0,1=0",
                                            "0=10GiB,1=10GiB,cpu=64GiB,disk=1TB",
                                            "cpu=64GiB", "7=1GiB", "0=1024PiB", "0=10GiB,0=1GiB" };
static const char *const odd_schedules[] = { "GPIPE", "1F1B", "zb", "" };

static char trace_dir[256];

/* Two small trace files the trace keys may name. */
static void write_traces(void)
{
    snprintf(trace_dir, sizeof trace_dir, "/tmp/mpsim-fuzz-values-%d", (int)getpid());
    char path[320];
    if (mkdir(trace_dir, 0755) != 0 && errno != EEXIST) abort();
    snprintf(path, sizeof path, "%s/loads.csv", trace_dir);
    FILE *f = fopen(path, "w");
    if (!f) abort();
    for (int l = 0; l < 4; l++) {
        for (int e = 0; e < 256; e++) fprintf(f, "%s%d", e ? "," : "", (e * 7 + l) % 13);
        fputc('\n', f);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/requests.csv", trace_dir);
    f = fopen(path, "w");
    if (!f) abort();
    fprintf(f, "arrival_s,prompt_tokens,output_tokens\n");
    for (int i = 0; i < 20; i++) fprintf(f, "%.3f,%d,%d\n", i * 0.05, 10 + i * 37, 1 + i % 9);
    fclose(f);
}

/* The value text for key `k`: NULL keeps the default. */
static const char *choose(struct bytes *b, const struct config_key *k, char *buf, size_t size)
{
    unsigned sel = (unsigned)take(b, 1);
    if (sel < 96) return NULL; /* most keys keep their default: runs stay meaningful */
    unsigned pick = sel % 8;
    bool ranged = k->min <= k->max;
    switch (k->type) {
    case CONFIG_INT: {
        double lo = ranged ? k->min : -1e9, hi = ranged ? k->max : 1e9;
        double v = pick == 0 ? lo : pick == 1 ? hi : pick == 2 ? lo + 1 : pick == 3 ? hi - 1
                   : pick == 4 ? 1 + take(b, 1) % 16 : pick == 5 ? ldexp(1, (int)(take(b, 1) % 31))
                   : floor(spread(b, lo > 0 ? lo : 1, hi));
        snprintf(buf, size, "%.0f", v);
        return buf;
    }
    case CONFIG_U64:
        snprintf(buf, size, "%llu", (unsigned long long)take(b, 8));
        return buf;
    case CONFIG_BOOL:
        return pick & 1 ? "true" : "false";
    case CONFIG_DURATION: {
        static const char *const edge[] = { "0", "1ps", "1ns", "1000000s", "999999s", "1us" };
        if (pick < 6) return edge[pick];
        snprintf(buf, size, "%.6gs", spread(b, 1e-12, 1e6));
        return buf;
    }
    case CONFIG_SIZE: {
        static const char *const edge[] = { "0", "1", "1024PiB", "1B", "80GB", "1KB" };
        if (pick < 6) return edge[pick];
        snprintf(buf, size, "%.6g", spread(b, 1, 0x1p60));
        return buf;
    }
    case CONFIG_DOUBLE: {
        double lo = ranged ? k->min : 0, hi = ranged ? k->max : 1e12;
        double v = pick == 0 ? lo : pick == 1 ? hi : spread(b, lo > 0 ? lo : 1e-9, hi);
        if (v < lo) v = lo;
        snprintf(buf, size, "%.9g", v);
        return buf;
    }
    case CONFIG_ENUM: {
        int n = 1;
        for (const char *c = k->choices; *c; c++) n += *c == '|';
        int i = (int)(take(b, 1) % (unsigned)n);
        const char *c = k->choices;
        for (int j = 0; j < i; j++) c = strchr(c, '|') + 1;
        snprintf(buf, size, "%.*s", (int)strcspn(c, "|"), c);
        return buf;
    }
    case CONFIG_INT_LIST: {
        /* parallel.stage_layers: "even", or 1 to 16 counts from 0 to the
         * key's maximum (a few small, a few huge). */
        if (pick == 0) return "even";
        int n = 1 + (int)(take(b, 1) % 16), len = 0;
        buf[0] = '\0';
        for (int i = 0; i < n && len < (int)size - 16; i++) {
            unsigned c = (unsigned)take(b, 1);
            double v = c < 200 ? 1 + c % 12 : c < 250 ? spread(b, 1, k->max) : c % 2 ? 0 : k->max;
            len += snprintf(buf + len, size - (size_t)len, "%s%.0f", i ? "," : "", v);
        }
        return buf;
    }
    case CONFIG_MEM_AMOUNT:
        if (pick < 4) snprintf(buf, size, "%.6g", spread(b, 1e-3, k->max));
        else snprintf(buf, size, "%.6gB", spread(b, 1, 0x1p60));
        return buf;
    case CONFIG_STRING:
        if (!strcmp(k->name, "model.config"))
            return models[take(b, 1) % (sizeof models / sizeof *models)];
        if (!strcmp(k->name, "hardware.system"))
            return systems[take(b, 1) % (sizeof systems / sizeof *systems)];
        if (!strcmp(k->name, "training.schedule")) {
            int n = 0;
            while (schedule_kinds[n]) n++;
            unsigned i = (unsigned)take(b, 1) % (unsigned)(n + 4);
            return i < (unsigned)n ? schedule_kinds[i]->name : odd_schedules[i - n];
        }
        if (!strcmp(k->name, "model.family"))
            return families[take(b, 1) % (sizeof families / sizeof *families)];
        if (!strcmp(k->name, "device_map.max_memory"))
            return max_memories[take(b, 1) % (sizeof max_memories / sizeof *max_memories)];
        if (!strcmp(k->name, "experts.trace")) {
            snprintf(buf, size, pick & 1 ? "%s/loads.csv" : "%s/missing.csv", trace_dir);
            return buf;
        }
        if (!strcmp(k->name, "inference.trace")) {
            snprintf(buf, size, pick & 1 ? "%s/requests.csv" : "%s/missing.csv", trace_dir);
            return buf;
        }
        return NULL;
    }
    return NULL;
}

static void one_line(int rc, const struct mp_error *err)
{
    if ((rc != MP_OK && rc != MP_ERR_INPUT && rc != MP_ERR_INFEASIBLE) ||
        (rc != MP_OK && (!err->msg[0] || strchr(err->msg, '\n')))) {
        fprintf(stderr, "fuzz_values: status %d, message '%s'\n", rc, err->msg);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!trace_dir[0]) write_traces();
    struct bytes b = { data, size, 0 };
    struct config cfg;
    config_defaults(&cfg);
    /* A synthetic model or a real one, training or serving: the first byte. */
    unsigned mode = (unsigned)take(&b, 1);
    config_set_key(&cfg, "model.kind", mode & 1 ? "transformer" : "synthetic", "fuzz", NULL);
    for (const struct config_key *k = config_keys; k->name; k++) {
        char buf[CONFIG_STR];
        if (!strcmp(k->name, "model.kind")) continue;
        const char *v = choose(&b, k, buf, sizeof buf);
        /* Only what the parser takes: a value it refuses keeps the default. */
        if (v) config_set_key(&cfg, k->name, v, "fuzz", NULL);
    }
    if (!(mode & 2)) cfg.inference.present = false; /* training; else serving if any key set */
    if (getenv("MPSIM_FUZZ_PRINT")) {
        fprintf(stderr, "; %s%s\n", cfg.inference.present ? "serving" : "training",
                mode & 4 ? ", record (--timeline)" : "");
        const char *sec = "";
        size_t sec_n = 0;
        for (const struct config_key *k = config_keys; k->name; k++) {
            char text[CONFIG_STR], def[CONFIG_STR];
            struct config d;
            config_defaults(&d);
            config_format_value(&cfg, k, text, sizeof text);
            config_format_value(&d, k, def, sizeof def);
            size_t n = strcspn(k->name, ".");
            if (!strcmp(text, def) && strcmp(k->name, "model.kind")) continue;
            if (!cfg.inference.present && !strncmp(k->name, "inference.", 10)) continue;
            if (sec_n != n || strncmp(sec, k->name, n)) fprintf(stderr, "[%.*s]\n", (int)n, k->name);
            sec = k->name, sec_n = n;
            fprintf(stderr, "%s = %s\n", k->name + n + 1, text);
        }
    }
    FILE *null = fopen("/dev/null", "w");
    if (!null) abort();
    struct mp_error err = { 0 };
    if (cfg.device_map.policy != DEVMAP_NONE) {
        /* As `mpsim run` does: a device map generates the way Accelerate
         * runs it (sim/serve/accel.h), whatever else the scenario says. */
        struct accel_setup a;
        int rc = accel_setup(&a, &cfg, NULL, &err);
        one_line(rc, &err);
        a.budget_events = FUZZ_BUDGET_EVENTS;
        struct accel_report rep = { 0 };
        if (rc == MP_OK) {
            rc = accel_generate_recorded(&rep, &a, mode & 4, &err);
            one_line(rc, &err);
        }
        if (rc == MP_OK) {
            accel_report_text(null, &a, &rep);
            accel_report_json(null, &a, &rep);
            if (mode & 4) {
                accel_timeline_csv(null, &a, &rep);
                accel_chrome_trace(null, &a, &rep);
            }
        }
        accel_report_release(&rep);
        accel_setup_release(&a);
    } else if (cfg.inference.present) {
        struct serve s;
        struct serve_options o = { .record = mode & 4, .budget_events = FUZZ_BUDGET_EVENTS };
        int rc = serve_run_opts(&s, &cfg, &o, &err);
        one_line(rc, &err);
        if (rc == MP_OK) {
            serve_report_text(null, &s);
            serve_report_json(null, &s);
            if (o.record) {
                serve_timeline_csv(null, &s);
                serve_chrome_trace(null, &s);
            }
        }
        serve_release(&s);
        struct plan_run p;
        memset(&err, 0, sizeof err);
        rc = plan_run(&p, &cfg, &err);
        one_line(rc, &err);
        if (rc == MP_OK) plan_report_json(null, &p);
        plan_run_release(&p);
    } else {
        struct sim s;
        struct sim_options o = { .record_memory = mode & 4, .budget_events = FUZZ_BUDGET_EVENTS };
        int rc = sim_run(&s, &cfg, &o, &err);
        one_line(rc, &err);
        if (rc == MP_OK) {
            if (s.res.step_time < 0 || !isfinite(s.res.tokens_per_s) || s.res.events > 4 * FUZZ_BUDGET_EVENTS)
                abort();
            report_text(null, &s);
            report_json(null, &s);
            if (o.record_memory) {
                report_timeline_csv(null, &s);
                report_chrome_trace(null, &s);
            }
        }
        sim_release(&s);
    }
    fclose(null);
    return 0;
}
