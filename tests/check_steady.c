/* check_steady.c — steady-state skipping (sim/engine/skip.c,
 * sim/strategy/steady.c) and the search's bound (sim/train/bound.h).
 *
 * The claim under test is exactness: a step simulated with periods left out
 * and put back gives every figure of the step simulated op by op — step
 * time, each stage's busy time, first start and last end, memory peak and
 * its breakdown, exposed communication of every kind, bubble, MFU, cost —
 * to the picosecond and the byte, and its timeline and trace byte for byte.
 * It is checked on every shipped training scenario and on randomized
 * layouts (schedules, TP/SP, DP and ZeRO, recompute, offload, hand-off
 * delays, fidelity, the precision recipe, overlap_param_gather, unfused
 * attention), at least 50 of which do skip. On the same layouts the
 * closed-form bound never exceeds the simulated step or memory peak. */
#define _GNU_SOURCE /* open_memstream */
#include <cJSON.h>
#include <dirent.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/engine/engine.h"
#include "sim/strategy/steady.h"
#include "sim/train/bound.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"
#include "sim/train/step_split.h"
#include "testutil.h"

static int run(struct sim *s, const struct config *base, bool skip, bool record)
{
    struct config cfg = *base;
    cfg.run.steady_skip = skip;
    struct sim_options o = { .record_memory = record, .record_released = record };
    struct mp_error err = { 0 };
    return sim_run(s, &cfg, &o, &err);
}

/* The run's --json without the keys that describe the run itself. */
static char *json_of(const struct sim *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    report_json(f, s);
    fclose(f);
    cJSON *o = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(o);
    free(buf);
    static const char *const drop[] = { "sim_wall_s", "events", "steady_state_skipped_periods",
                                        "keys" };
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++) cJSON_DeleteItemFromObject(o, drop[i]);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* Every figure of the two runs, exactly. */
static void same_results(const struct sim *a, const struct sim *b, const char *what)
{
    const struct sim_result *x = &a->res, *y = &b->res;
    ck_assert_msg(x->feasible == y->feasible, "%s: feasible", what);
    ck_assert_msg(x->step_time == y->step_time, "%s: step %lld vs %lld ps", what,
                  (long long)x->step_time, (long long)y->step_time);
    ck_assert_msg(x->bubble == y->bubble && x->bubble_span == y->bubble_span, "%s: bubble", what);
    ck_assert_msg(x->max_span == y->max_span, "%s: span", what);
    ck_assert_msg(x->mfu == y->mfu && x->hfu == y->hfu && x->tokens_per_s == y->tokens_per_s,
                  "%s: mfu", what);
    ck_assert_msg(x->cost.usd_per_step == y->cost.usd_per_step, "%s: cost", what);
    ck_assert_msg(x->host_mem_bytes == y->host_mem_bytes, "%s: host memory", what);
    for (int k = 0; k < N_COMM_KINDS; k++)
        ck_assert_msg(x->exposed_comm_s[k] == y->exposed_comm_s[k], "%s: exposed %d: %.17g vs %.17g",
                      what, k, x->exposed_comm_s[k], y->exposed_comm_s[k]);
    ck_assert_int_eq(x->stages, y->stages);
    for (int d = 0; d < x->stages; d++) {
        const struct stage_report *p = &x->stage[d], *q = &y->stage[d];
        ck_assert_msg(p->busy == q->busy && p->first_start == q->first_start &&
                          p->last_end == q->last_end,
                      "%s: stage %d busy/first/last %lld/%lld/%lld vs %lld/%lld/%lld", what, d,
                      (long long)p->busy, (long long)p->first_start, (long long)p->last_end,
                      (long long)q->busy, (long long)q->first_start, (long long)q->last_end);
        ck_assert_msg(p->peak_mem == q->peak_mem, "%s: stage %d peak %.17g vs %.17g", what, d,
                      p->peak_mem, q->peak_mem);
        ck_assert_msg(!memcmp(p->mem, q->mem, sizeof p->mem), "%s: stage %d breakdown", what, d);
        ck_assert_msg(p->peak_act_units == q->peak_act_units, "%s: stage %d units", what, d);
        for (int k = 0; k < N_COMM_KINDS; k++)
            ck_assert_msg(p->exposed_comm[k] == q->exposed_comm[k], "%s: stage %d exposed %d",
                          what, d, k);
        for (int k = 0; k < N_SPLIT; k++)
            ck_assert_msg(p->split.part[k] == q->split.part[k], "%s: stage %d %s %lld vs %lld ps",
                          what, d, step_split_name(k), (long long)p->split.part[k],
                          (long long)q->split.part[k]);
    }
    for (int k = 0; k < N_SPLIT; k++)
        ck_assert_msg(x->split.part[k] == y->split.part[k], "%s: %s", what, step_split_name(k));
    /* And everything --json prints, but what says how the run went (its
     * wall time, events processed, periods skipped, the run.steady_skip key). */
    char *ja = json_of(a), *jb = json_of(b);
    ck_assert_msg(!strcmp(ja, jb), "%s: --json differs:\n%s\n%s", what, ja, jb);
    free(ja);
    free(jb);
}

/* The timeline CSV and the Chrome trace of a run, as text. */
static char *written(const struct sim *s, bool trace)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    if (trace) report_chrome_trace(f, s);
    else report_timeline_csv(f, s);
    fclose(f);
    return buf;
}

/* Skipped against full; returns the periods skipped. With `files`, the
 * timeline and trace (expanded from the periods) too. */
static long long compare(const struct config *cfg, const char *what, bool files)
{
    struct sim a, b;
    int ra = run(&a, cfg, true, false), rb = run(&b, cfg, false, false);
    ck_assert_msg(ra == rb, "%s: exit %d vs %d", what, ra, rb);
    long long k = a.res.steady_skipped_periods;
    if (a.res.stage && b.res.stage) same_results(&a, &b, what);
    ck_assert_int_eq(b.res.steady_skipped_periods, 0);
    sim_release(&a);
    sim_release(&b);
    if (!files || k == 0 || ra != MP_OK) return k;
    ck_assert_int_eq(run(&a, cfg, true, true), MP_OK);
    ck_assert_int_eq(run(&b, cfg, false, true), MP_OK);
    ck_assert_int_eq(a.res.steady_skipped_periods, k);
    same_results(&a, &b, what);
    for (int t = 0; t < 2; t++) {
        char *x = written(&a, t), *y = written(&b, t);
        ck_assert_msg(!strcmp(x, y), "%s: %s differs", what, t ? "trace" : "timeline");
        free(x);
        free(y);
    }
    sim_release(&a);
    sim_release(&b);
    return k;
}

/* Every shipped training scenario (serving ones have no pipeline step).
 * bench-gpt-1t-dp6 is among them: 440 periods skipped. */
START_TEST(shipped_training_scenarios_are_identical)
{
    DIR *dir = opendir(mp_test_path("scenarios"));
    ck_assert_ptr_nonnull(dir);
    int n = 0, skipped = 0;
    struct dirent *de;
    char names[64][256];
    while ((de = readdir(dir)) && n < 64) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".ini")) continue;
        snprintf(names[n++], sizeof names[0], "%s", de->d_name);
    }
    closedir(dir);
    for (int i = 0; i < n; i++) {
        char rel[300];
        snprintf(rel, sizeof rel, "scenarios/%.250s", names[i]);
        struct config cfg;
        struct mp_error err = { 0 };
        config_defaults(&cfg);
        ck_assert_int_eq(config_load(&cfg, mp_test_path(rel), &err), MP_OK);
        if (cfg.inference.present) continue;
        /* Timelines of the 1T step are 900,000 rows: the figures suffice. */
        bool files = !strstr(names[i], "gpt-1t");
        if (compare(&cfg, names[i], files) > 0) skipped++;
    }
    ck_assert_int_ge(skipped, 4); /* bench-gpt-1t(-dp6), megatron, mi300x, tpu-v5p */
}
END_TEST

static const char *const models[] = { "llama3-8b", "gpt3-175b", "llama3-70b" };
static const int decoders[] = { 32, 96, 80 };
static const char *const systems[] = { "dgx-h100", "dgx-a100", "mi300x-node" };
static const char *const schedules[] = { "1f1b", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v",
                                         "dualpipev", "gpipe" };

/* One random layout: a transformer (scaled down to run fast: short
 * sequences) or synthetic stages, any schedule, pp, tp with SP and overlap,
 * dp with ZeRO and offload, recompute, hand-off delay, fidelity. */
static void random_layout(gsl_rng *r, struct config *cfg)
{
    config_defaults(cfg);
    struct mp_error err = { 0 };
    char v[128];
#define SET(...) do { snprintf(v, sizeof v, __VA_ARGS__); ck_assert_int_eq(config_set(cfg, v, "t", &err), MP_OK); } while (0)
    const char *sched = schedules[gsl_rng_uniform_int(r, 8)];
    int pp = (int)gsl_rng_uniform_int(r, 6) + 1;
    if (!strcmp(sched, "zb-v") || !strcmp(sched, "dualpipev")) pp = pp < 2 ? 2 : pp;
    int vpp = !strcmp(sched, "interleaved") ? 2 << gsl_rng_uniform_int(r, 2) : 1;
    int dp = (int)gsl_rng_uniform_int(r, 4) + 1, mbs = (int)gsl_rng_uniform_int(r, 2) + 1;
    int m = 16 + 16 * (int)gsl_rng_uniform_int(r, 6);
    bool synth = gsl_rng_uniform(r) < 0.4;
    int zero = (int)gsl_rng_uniform_int(r, 4);
    const char *off = "none";
    SET("training.schedule=%s", sched);
    SET("parallel.pp=%d", pp);
    SET("parallel.vpp=%d", vpp);
    SET("parallel.dp=%d", dp);
    SET("training.micro_batch=%d", mbs);
    SET("training.global_batch=%d", m * dp * mbs);
    SET("training.dp_overlap=%s", gsl_rng_uniform(r) < 0.5 ? "true" : "false");
    SET("run.fidelity=%s", gsl_rng_uniform(r) < 0.25 ? "detailed" : "fast");
    if (synth) {
        SET("model.kind=synthetic");
        SET("synthetic.forward=%dus", 100 + (int)gsl_rng_uniform_int(r, 2900));
        SET("synthetic.backward_input=%dus", 100 + (int)gsl_rng_uniform_int(r, 2900));
        SET("synthetic.backward_weight=%dus", 100 + (int)gsl_rng_uniform_int(r, 2900));
        static const int hops[] = { 0, 0, 5, 50, 700 };
        SET("synthetic.hop=%dus", hops[gsl_rng_uniform_int(r, 5)]);
        SET("synthetic.activation=%dMB", 1 + (int)gsl_rng_uniform_int(r, 900));
        SET("hardware.system=%s", gsl_rng_uniform(r) < 0.5 ? "textbook" : "dgx-h100");
    } else {
        int k = (int)gsl_rng_uniform_int(r, 3);
        while (pp * vpp > decoders[k]) pp--;
        SET("parallel.pp=%d", pp);
        int tp = 1 << gsl_rng_uniform_int(r, 4);
        SET("model.config=%s", models[k]);
        SET("model.seq_len=%d", 256 << gsl_rng_uniform_int(r, 3));
        SET("hardware.system=%s", systems[gsl_rng_uniform_int(r, 3)]);
        SET("parallel.tp=%d", tp);
        if (tp > 1) {
            SET("parallel.sp=%s", gsl_rng_uniform(r) < 0.5 ? "true" : "false");
            SET("parallel.tp_overlap=%s", gsl_rng_uniform(r) < 0.5 ? "true" : "false");
        }
        static const char *const rec[] = { "none", "selective", "full" };
        SET("training.recompute=%s", rec[gsl_rng_uniform_int(r, 3)]);
        if (gsl_rng_uniform(r) < 0.35) {
            zero = gsl_rng_uniform(r) < 0.5 ? 1 : 3;
            static const char *const offs[] = { "optimizer", "optimizer+weights", "all" };
            off = zero == 3 ? offs[gsl_rng_uniform_int(r, 3)] : "optimizer";
        }
        /* The kernel model's software stack (docs/recipes.md): precisions
         * of the gradients and moments, the distributed optimizer's early
         * weight gather, unfused attention, TP comm overlap. */
        SET("training.grad_reduce=%s", gsl_rng_uniform(r) < 0.3 ? "bf16" : "fp32");
        SET("training.optimizer_state=%s", gsl_rng_uniform(r) < 0.2 ? "bf16" : "fp32");
        SET("training.overlap_param_gather=%s", gsl_rng_uniform(r) < 0.4 ? "true" : "false");
        SET("training.attention=%s", gsl_rng_uniform(r) < 0.15 ? "unfused" : "flash");
        if (tp > 1)
            SET("parallel.tp_comm_overlap=%s", gsl_rng_uniform(r) < 0.3 ? "true" : "false");
    }
    SET("training.zero=%d", zero);
    SET("training.offload=%s", off);
#undef SET
}

/* Randomized layouts until 50 have skipped periods (each compared in full;
 * every eighth also by its timeline and trace), and the bound held on all. */
START_TEST(random_layouts_are_identical_and_bounded)
{
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 22);
    int tried = 0, skipped = 0;
    while (skipped < 50 && tried < 400) {
        struct config cfg;
        random_layout(r, &cfg);
        char what[64];
        snprintf(what, sizeof what, "random layout %d", tried);
        long long k = compare(&cfg, what, skipped % 8 == 0);
        tried++;
        if (k > 0) skipped++;
        /* The bound, against the full simulation. */
        struct sim s;
        struct sim_bound b;
        struct mp_error err = { 0 };
        if (run(&s, &cfg, false, false) == MP_OK && sim_bound(&cfg, NULL, &b, &err) == MP_OK) {
            ck_assert_msg(b.step <= s.res.step_time,
                          "%s (%s %s tp %d pp %d vpp %d dp %d mb %d gb %d zero %d off %d rec %d "
                          "sp %d ov %d fid %d ovl %d opg %d gr %d): bound %lld > step %lld",
                          what, cfg.model.config, cfg.training.schedule, cfg.parallel.tp,
                          cfg.parallel.pp, cfg.parallel.vpp, cfg.parallel.dp,
                          cfg.training.micro_batch, cfg.training.global_batch, cfg.training.zero,
                          cfg.training.offload, cfg.training.recompute, cfg.parallel.sp,
                          cfg.parallel.tp_overlap, cfg.run.fidelity, cfg.training.dp_overlap,
                          cfg.training.overlap_param_gather, cfg.training.grad_reduce,
                          (long long)b.step, (long long)s.res.step_time);
            double peak = 0;
            for (int d = 0; d < s.res.stages; d++)
                if (s.res.stage[d].peak_mem > peak) peak = s.res.stage[d].peak_mem;
            if (s.has_model)
                ck_assert_msg(b.mem <= peak * (1 + 1e-12), "%s: memory bound %.6g > peak %.6g",
                              what, b.mem, peak);
        }
        sim_release(&s);
    }
    gsl_rng_free(r);
    ck_assert_int_ge(skipped, 50);
}
END_TEST

/* Passes copied from the first of their kind (sim/strategy/pipeline.c):
 * the graph must be the one built pass by pass, op for op (every field) and
 * edge for edge in the same order, and so every time the engine gives. On
 * every shipped training scenario and 40 random layouts, skipping as they
 * do (the shorter graph is the one built); `copied` counts the layouts
 * whose graph had copies at all (a TP group at fast fidelity). */
static bool same_op(const struct op *a, const struct op *b)
{
    return a->duration == b->duration && a->latency == b->latency && a->bytes == b->bytes &&
           a->alloc_bytes == b->alloc_bytes && a->free_bytes == b->free_bytes &&
           a->chip == b->chip && a->mb == b->mb && a->mb2 == b->mb2 && a->stage == b->stage &&
           a->layer_first == b->layer_first && a->layer_last == b->layer_last &&
           a->route_off == b->route_off && a->route_len == b->route_len &&
           a->stream == b->stream && a->kind == b->kind && a->tag == b->tag &&
           a->alloc_cat == b->alloc_cat && a->free_cat == b->free_cat && a->comm == b->comm;
}

static void same_graph(const struct config *cfg, const char *what, int *copied)
{
    struct sim a, b;
    struct mp_error err = { 0 };
    struct sim_options oa = { 0 }, ob = { .every_pass = true };
    int ra = sim_run(&a, cfg, &oa, &err), rb = sim_run(&b, cfg, &ob, &err);
    ck_assert_int_eq(ra, rb);
    if (a.has_graph && b.has_graph) {
        const struct taskgraph *x = &a.g, *y = &b.g;
        ck_assert_msg(x->n_ops == y->n_ops && x->n_edges == y->n_edges && x->n_route == y->n_route,
                      "%s: %d ops %d edges against %d ops %d edges", what, x->n_ops, x->n_edges,
                      y->n_ops, y->n_edges);
        /* The first difference found by plain loops, then one assertion:
         * a Check assertion that holds still reports its line to the
         * parent process, and millions of them cost 20 s of system time. */
        int op = -1, edge = -1, hop = -1, timed = -1;
        for (int i = 0; i < x->n_ops && op < 0; i++)
            if (!same_op(&x->ops[i], &y->ops[i])) op = i;
        for (int e = 0; e < x->n_edges && edge < 0; e++)
            if (x->edge_from[e] != y->edge_from[e] || x->edge_to[e] != y->edge_to[e]) edge = e;
        for (int i = 0; i < x->n_route && hop < 0; i++)
            if (x->route[i] != y->route[i]) hop = i;
        if (ra == MP_OK)
            for (int i = 0; i < x->n_ops && timed < 0; i++)
                if (a.e.start[i] != b.e.start[i] || a.e.end[i] != b.e.end[i]) timed = i;
        ck_assert_msg(op < 0, "%s: op %d differs", what, op);
        ck_assert_msg(edge < 0, "%s: edge %d differs", what, edge);
        ck_assert_msg(hop < 0, "%s: route entry %d differs", what, hop);
        ck_assert_msg(timed < 0, "%s: op %d runs at other times", what, timed);
        ck_assert_int_eq(a.res.step_time, b.res.step_time);
        ck_assert_uint_eq(a.res.events, b.res.events);
        if (cfg->parallel.tp > 1 && cfg->run.fidelity == FIDELITY_FAST) (*copied)++;
    }
    sim_release(&a);
    sim_release(&b);
}

/* Chains timed at once (sim/engine/engine.c) against the engine running
 * every op by its own events: every op's start and end, which op released
 * each (with a timeline), every figure of the JSON, the event count and
 * the periods skipped, on every shipped training scenario (skipping as
 * they do; the small ones also in full and with a timeline) and on 60
 * random layouts. */
static void same_fused(const struct config *cfg, const char *what, bool skip, bool record)
{
    struct sim a, b;
    struct mp_error err = { 0 };
    struct config c = *cfg;
    c.run.steady_skip = skip;
    struct sim_options oa = { .record_memory = record, .record_released = record };
    struct sim_options ob = oa;
    ob.unfused = true;
    int ra = sim_run(&a, &c, &oa, &err), rb = sim_run(&b, &c, &ob, &err);
    ck_assert_msg(ra == rb, "%s: %d against %d", what, ra, rb);
    if (ra == MP_OK) {
        ck_assert_int_eq(a.g.n_ops, b.g.n_ops);
        /* The step as simulated in full, stream by stream (a chain in
         * flight at a jump is recorded on the other side of it). */
        for (int st = 0; st < a.g.n_chips * N_STREAMS; st++) {
            int64_t n = engine_stream_len(&a.e, st);
            ck_assert_int_eq(n, engine_stream_len(&b.e, st));
            /* The first op that differs, then one assertion (see same_graph). */
            for (int64_t i = 0; i < n; i++) {
                mp_time sa, sb;
                int x = engine_stream_op(&a.e, st, i, &sa), y = engine_stream_op(&b.e, st, i, &sb);
                if (a.e.start[x] + sa == b.e.start[y] + sb && a.e.end[x] + sa == b.e.end[y] + sb)
                    continue;
                ck_assert_msg(0, "%s: stream %d op %lld runs %lld..%lld fused, %lld..%lld not",
                              what, st, (long long)i, (long long)(a.e.start[x] + sa),
                              (long long)(a.e.end[x] + sa), (long long)(b.e.start[y] + sb),
                              (long long)(b.e.end[y] + sb));
            }
        }
        if (record)
            for (int i = 0; i < a.g.n_ops; i++)
                if (a.e.released_by[i] != b.e.released_by[i])
                    ck_assert_msg(0, "%s: op %d released by %d fused, %d not", what, i,
                                  a.e.released_by[i], b.e.released_by[i]);
        ck_assert_uint_eq(a.res.events, b.res.events);
        ck_assert_int_eq(a.res.steady_skipped_periods, b.res.steady_skipped_periods);
        char *ja = json_of(&a), *jb = json_of(&b);
        ck_assert_msg(!strcmp(ja, jb), "%s: the JSON differs", what);
        free(ja);
        free(jb);
    }
    sim_release(&a);
    sim_release(&b);
}

START_TEST(fused_chains_run_as_every_op)
{
    DIR *dir = opendir(mp_test_path("scenarios"));
    ck_assert_ptr_nonnull(dir);
    struct dirent *de;
    while ((de = readdir(dir))) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".ini")) continue;
        char rel[300];
        snprintf(rel, sizeof rel, "scenarios/%.250s", de->d_name);
        struct config cfg;
        struct mp_error err = { 0 };
        config_defaults(&cfg);
        ck_assert_int_eq(config_load(&cfg, mp_test_path(rel), &err), MP_OK);
        if (cfg.inference.present) continue;
        same_fused(&cfg, de->d_name, true, false);
        if (!strstr(de->d_name, "gpt-1t") && !strstr(de->d_name, "405b")) {
            same_fused(&cfg, de->d_name, false, false);
            same_fused(&cfg, de->d_name, true, true);
        }
    }
    closedir(dir);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 1859);
    for (int i = 0; i < 60; i++) {
        struct config cfg;
        random_layout(r, &cfg);
        char what[64];
        snprintf(what, sizeof what, "random layout %d", i);
        same_fused(&cfg, what, true, i % 4 == 0);
        if (i % 3 == 0) same_fused(&cfg, what, false, false);
    }
    gsl_rng_free(r);
}
END_TEST

START_TEST(copied_passes_build_the_same_graph)
{
    DIR *dir = opendir(mp_test_path("scenarios"));
    ck_assert_ptr_nonnull(dir);
    struct dirent *de;
    int copied = 0;
    while ((de = readdir(dir))) {
        size_t len = strlen(de->d_name);
        if (len < 5 || strcmp(de->d_name + len - 4, ".ini")) continue;
        char rel[300];
        snprintf(rel, sizeof rel, "scenarios/%.250s", de->d_name);
        struct config cfg;
        struct mp_error err = { 0 };
        config_defaults(&cfg);
        ck_assert_int_eq(config_load(&cfg, mp_test_path(rel), &err), MP_OK);
        if (cfg.inference.present) continue;
        same_graph(&cfg, de->d_name, &copied);
    }
    closedir(dir);
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 2022);
    for (int i = 0; i < 40; i++) {
        struct config cfg;
        random_layout(r, &cfg);
        char what[64];
        snprintf(what, sizeof what, "random layout %d", i);
        same_graph(&cfg, what, &copied);
    }
    gsl_rng_free(r);
    ck_assert_int_ge(copied, 10);
}
END_TEST

/* The program comparison by hand: 1F1B, p = 4, m = 64. Device 0 runs 3
 * warm-up forwards, then pairs (F(k+3), BW(k)), then 3 cool-down
 * backwards; a period is one pair (c = 2 ops, q = 1 microbatch), and
 * taking K out gives exactly the program of 64 − K microbatches. */
START_TEST(one_f_one_b_periods_by_hand)
{
    struct pipe_shape sh = { .devices = 4, .microbatches = 64, .chunks = 1 };
    struct pipe_program full, red;
    struct mp_error err;
    ck_assert_int_eq(schedule_build("1f1b", &sh, &full, &err), MP_OK);
    sh.microbatches = 24;
    ck_assert_int_eq(schedule_build("1f1b", &sh, &red, &err), MP_OK);
    int lo, hi, c;
    ck_assert(steady_device_window(&full, &red, 0, 40, 1, &lo, &hi, &c));
    ck_assert_int_eq(c, 2);
    /* Inserted at p, the pair before p must be a steady pair: p ≥ 3 + 2;
     * and a period of margin before the cool-down (2 × 24 − 2·2). */
    ck_assert_int_eq(lo, 5);
    /* The 24-microbatch program's steady pairs end at F23 (position 43),
     * BW20 (44); the period before p must repeat once more in it, so
     * p ≤ 43. */
    ck_assert_int_eq(hi, 43);
    /* q = 2 is not a period of 1F1B with K = 40: 80 microbatches' ops. */
    ck_assert(!steady_device_window(&full, &red, 0, 20, 2, &lo, &hi, &c) || c == 4);
    pipe_program_release(&full);
    pipe_program_release(&red);
    struct steady_plan plan;
    sh.microbatches = 512;
    sh.devices = 64;
    ck_assert_int_eq(schedule_build("1f1b", &sh, &full, &err), MP_OK);
    ck_assert(steady_plan_find("1f1b", &sh, &full, 6, &plan));
    /* 64 stages need 63 warm-up forwards on device 0, then six pairs of
     * window and a margin: the shortest program keeps 71 microbatches, so
     * 441 periods go, rounded down to an even 440 (engine.h). */
    ck_assert_int_eq(plan.elided, 440);
    ck_assert_int_eq(plan.reduced_microbatches, 72);
    steady_plan_release(&plan);
    pipe_program_release(&full);
}
END_TEST

static Suite *steady_suite(void)
{
    Suite *s = suite_create("steady");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, one_f_one_b_periods_by_hand);
    tcase_add_test(tc, shipped_training_scenarios_are_identical);
    tcase_add_test(tc, random_layouts_are_identical_and_bounded);
    tcase_add_test(tc, copied_passes_build_the_same_graph);
    tcase_add_test(tc, fused_chains_run_as_every_op);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(steady_suite)
