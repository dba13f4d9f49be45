/* check_trace.c — the Chrome trace (report_chrome_trace) parsed back with
 * cJSON as a viewer would: no slice overlaps the next on its thread, none
 * has zero length, every flow end (and start) falls inside a slice of its
 * thread, no -1 placeholders, bubble slices add up to the step accounting's
 * bubble, and the run's figures are in otherData. */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "sim/io/units.h"
#include "sim/train/report.h"
#include "sim/train/sim.h"
#include "testutil.h"

struct slice {
    int pid, tid;
    double ts, end;
    bool bubble;
};

static int slice_cmp(const void *pa, const void *pb)
{
    const struct slice *a = pa, *b = pb;
    if (a->pid != b->pid) return a->pid - b->pid;
    if (a->tid != b->tid) return a->tid - b->tid;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

/* Index of the slice of (pid, tid) enclosing ts ([ts, end)), or -1. */
static int enclosing(const struct slice *sl, int n, int pid, int tid, double ts)
{
    int lo = 0, hi = n - 1, found = -1;
    while (lo <= hi) { /* last slice with (pid, tid, ts) <= the key */
        int mid = (lo + hi) / 2;
        struct slice key = { .pid = pid, .tid = tid, .ts = ts };
        if (slice_cmp(&sl[mid], &key) <= 0) found = mid, lo = mid + 1;
        else hi = mid - 1;
    }
    if (found < 0 || sl[found].pid != pid || sl[found].tid != tid) return -1;
    return ts >= sl[found].ts && ts < sl[found].end ? found : -1;
}

static void check_trace_of(const char *scenario, const char *const *sets)
{
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, mp_test_path(scenario), &err), MP_OK);
    for (; sets && *sets; sets++) ck_assert_int_eq(config_set(&cfg, *sets, "test", &err), MP_OK);
    struct sim s;
    struct sim_options opts = { .record_memory = true };
    ck_assert_msg(sim_run(&s, &cfg, &opts, &err) == MP_OK, "%s", err.msg);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report_chrome_trace(f, &s);
    fclose(f);
    cJSON *root = cJSON_Parse(buf);
    ck_assert_msg(root != NULL, "%s: the trace is not JSON", scenario);
    ck_assert_ptr_null(strstr(buf, "-1--1"));
    cJSON *events = cJSON_GetObjectItem(root, "traceEvents");
    int n = cJSON_GetArraySize(events), ns = 0, flows = 0;
    struct slice *sl = mp_xmalloc((size_t)n * sizeof *sl);
    double bubble_us = 0;
    int n_bubble = 0;
    for (cJSON *e = events->child; e; e = e->next) {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        if (strcmp(ph, "X")) continue;
        double ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
        double dur = cJSON_GetObjectItem(e, "dur")->valuedouble;
        ck_assert_msg(dur > 0, "%s: a slice of zero length at %.17g", scenario, ts);
        bool bub = !strcmp(cJSON_GetObjectItem(e, "cat")->valuestring, "bubble");
        if (bub) bubble_us += dur, n_bubble++;
        /* arguments carry only facts: no -1 placeholders */
        for (cJSON *a = cJSON_GetObjectItem(e, "args")->child; a; a = a->next)
            if (cJSON_IsNumber(a)) ck_assert(a->valuedouble >= 0);
        sl[ns++] = (struct slice){ .pid = cJSON_GetObjectItem(e, "pid")->valueint,
                                   .tid = cJSON_GetObjectItem(e, "tid")->valueint,
                                   .ts = ts, .end = ts + dur, .bubble = bub };
    }
    qsort(sl, (size_t)ns, sizeof *sl, slice_cmp);
    /* In double arithmetic, as parsed: the next slice on a thread never
     * starts before this one's ts + dur. */
    for (int i = 0; i + 1 < ns; i++)
        if (sl[i].pid == sl[i + 1].pid && sl[i].tid == sl[i + 1].tid)
            ck_assert_msg(sl[i + 1].ts >= sl[i].end, "%s: pid %d tid %d: a slice ending at %.17g "
                          "overlaps the next, at %.17g", scenario, sl[i].pid, sl[i].tid,
                          sl[i].end, sl[i + 1].ts);
    for (cJSON *e = events->child; e; e = e->next) {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        if (strcmp(ph, "s") && strcmp(ph, "f")) continue;
        flows++;
        int pid = cJSON_GetObjectItem(e, "pid")->valueint, tid = cJSON_GetObjectItem(e, "tid")->valueint;
        double ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
        int k = enclosing(sl, ns, pid, tid, ts);
        ck_assert_msg(k >= 0 && !sl[k].bubble, "%s: flow %s at %.17g on pid %d tid %d is in no "
                      "slice", scenario, ph, ts, pid, tid);
    }
    /* The bubble slices are the accounting's bubble, to the rounding of
     * each slice's ends to 1/1024 µs (at most one step per slice). */
    double want = 0;
    for (int d = 0; d < s.res.stages; d++) want += mp_seconds(s.res.stage[d].split.part[SPLIT_BUBBLE]) * 1e6;
    ck_assert_msg(fabs(bubble_us - want) <= (n_bubble + 1) / 1024.0,
                  "%s: bubble slices %.6f us, accounting %.6f us", scenario, bubble_us, want);
    cJSON *meta = cJSON_GetObjectItem(root, "otherData");
    ck_assert_ptr_nonnull(meta);
    ck_assert_str_eq(cJSON_GetObjectItem(meta, "scenario")->valuestring, s.cfg.name);
    ck_assert_ptr_nonnull(cJSON_GetObjectItem(meta, "step_split"));
    char exact[48];
    units_format_seconds_exact(s.res.step_time, exact, sizeof exact);
    ck_assert_str_eq(cJSON_GetObjectItem(meta, "step_time_s")->valuestring, exact);
    if (s.prog.devices > 1) ck_assert_int_gt(flows, 0);
    free(sl);
    cJSON_Delete(root);
    free(buf);
    sim_release(&s);
}

/* The case the issue measured: 842 overlapping pairs, 3,212 zero-length FB
 * slices and 1,065 unbound flow ends before. */
START_TEST(deepseek_v3_trace_parses_clean)
{
    check_trace_of("scenarios/deepseek-v3-2048xh800.ini", NULL);
}
END_TEST

START_TEST(teaching_traces_parse_clean)
{
    static const char *const hop[] = { "synthetic.hop=1ms", NULL };
    check_trace_of("scenarios/teach-bubbles.ini", NULL);
    check_trace_of("scenarios/teach-bubbles.ini", hop);
    check_trace_of("scenarios/teach-dualpipe.ini", NULL);
    check_trace_of("scenarios/teach-zb-v.ini", NULL);
    check_trace_of("scenarios/uneven-stages.ini", NULL);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("chrome");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, deepseek_v3_trace_parses_clean);
    tcase_add_test(tc, teaching_traces_parse_clean);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(trace_suite)
