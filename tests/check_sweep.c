/* check_sweep.c — sweeps: range syntax, grid count and order, the CSV's
 * numbers against the textbook bubble formula, --jobs independence, a
 * SIGKILL part-way then --resume, bad --vary, and --best / --pareto on a
 * table small enough to rank by hand. */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/explore/sweep.h"
#include "sim/train/step_split.h"
#include "testutil.h"

/* The textbook pipeline: forward 1 ms, backward 1 + 1 ms per stage. */
static const char textbook[] =
    "[model]\nkind = synthetic\n"
    "[synthetic]\nforward = 1ms\nbackward_input = 1ms\nbackward_weight = 1ms\nactivation = 1GB\n"
    "[hardware]\nsystem = textbook\n"
    "[parallel]\npp = 4\n"
    "[training]\nmicro_batch = 1\nglobal_batch = 8\nschedule = gpipe\n";

static void load_base(struct config *cfg)
{
    struct mp_error err = { 0 };
    config_defaults(cfg);
    ck_assert_int_eq(config_load(cfg, mp_test_tmpfile(".ini", textbook), &err), MP_OK);
}

/* Expand `list` for `key` and join the values with commas. */
static int expand_joined(const char *key, const char *list, char *out, size_t size,
                         struct mp_error *err)
{
    char **v;
    int n;
    int rc = sweep_expand(config_find_key(key), list, &v, &n, err);
    out[0] = '\0';
    for (int i = 0; !rc && i < n; i++)
        snprintf(out + strlen(out), size - strlen(out), "%s%s", i ? "," : "", v[i]);
    if (!rc) sweep_values_free(v, n);
    return rc;
}

START_TEST(ranges_double_step_and_mix)
{
    char got[512];
    struct mp_error err = { 0 };
    ck_assert_int_eq(expand_joined("parallel.pp", "1..64*2", got, sizeof got, &err), MP_OK);
    ck_assert_str_eq(got, "1,2,4,8,16,32,64");
    ck_assert_int_eq(expand_joined("parallel.pp", "8..64+8", got, sizeof got, &err), MP_OK);
    ck_assert_str_eq(got, "8,16,24,32,40,48,56,64");
    ck_assert_int_eq(expand_joined("parallel.pp", "1..4", got, sizeof got, &err), MP_OK);
    ck_assert_str_eq(got, "1,2,3,4");
    /* The end need not be on the ladder: 3·2^k ≤ 50 stops at 48. */
    ck_assert_int_eq(expand_joined("parallel.pp", "3..50*2", got, sizeof got, &err), MP_OK);
    ck_assert_str_eq(got, "3,6,12,24,48");
    ck_assert_int_eq(expand_joined("parallel.tp", "1, 2..8*2", got, sizeof got, &err), MP_OK);
    ck_assert_str_eq(got, "1,2,4,8");
    ck_assert_int_eq(expand_joined("training.schedule", "gpipe,1f1b", got, sizeof got, &err),
                     MP_OK);
    ck_assert_str_eq(got, "gpipe,1f1b");
    /* Decimal keys: each value from the start, so 0.1 steps do not drift. */
    struct config_key dk = { .name = "x.ratio", .type = CONFIG_DOUBLE };
    char **v;
    int n;
    ck_assert_int_eq(sweep_expand(&dk, "0.1..0.5+0.1", &v, &n, &err), MP_OK);
    ck_assert_int_eq(n, 5);
    ck_assert_str_eq(v[2], "0.3");
    ck_assert_str_eq(v[4], "0.5");
    sweep_values_free(v, n);
    ck_assert_int_eq(sweep_expand(&dk, "0.25..2*2", &v, &n, &err), MP_OK);
    ck_assert_int_eq(n, 4); /* 0.25 0.5 1 2 */
    ck_assert_str_eq(v[3], "2");
    sweep_values_free(v, n);
}
END_TEST

START_TEST(bad_ranges_and_lists_are_input_errors)
{
    static const struct { const char *key, *list, *needle; } bad[] = {
        { "parallel.pp", "64..1*2", "start is above the end" },
        { "parallel.pp", "1..64*1", "K ≥ 2" },
        { "parallel.pp", "1..64+0", "step or factor ≥ 1" },
        { "parallel.pp", "a..b", "whole numbers" },
        { "parallel.pp", "1..", "a number on each side" },
        { "parallel.pp", "..4", "a number on each side" },
        { "parallel.pp", "1..8*", "after the * or +" },
        { "parallel.pp", "", "empty value list" },
        { "parallel.pp", "1,,2", "value 2 of '1,,2' is empty" },
        { "parallel.sp", "0..1", "ranges ('0..1') are for numeric keys" },
        { "training.schedule", "a..b", "for numeric keys" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char got[256];
        struct mp_error err = { 0 };
        ck_assert_int_eq(expand_joined(bad[i].key, bad[i].list, got, sizeof got, &err),
                         MP_ERR_INPUT);
        if (!strstr(err.msg, bad[i].needle) || !strstr(err.msg, bad[i].key))
            ck_abort_msg("%s=%s: message '%s' lacks '%s'", bad[i].key, bad[i].list, err.msg,
                         bad[i].needle);
    }
}
END_TEST

/* --vary is checked value by value against the key before anything runs. */
START_TEST(bad_vary_names_the_key_and_what_was_expected)
{
    struct config base;
    load_base(&base);
    static const struct { const char *spec, *needle; } bad[] = {
        { "parallel.ppp=1,2", "did you mean 'parallel.pp'" },
        { "parallel.pp=1,two", "--vary parallel.pp" },
        { "parallel.pp=0,1", "--vary parallel.pp" },
        { "training.zero=0..4", "from 0 to 3" },
        { "training.schedule=gpipe,1f1bb", "unknown pipeline schedule '1f1bb'" },
        { "hardware.system=nosuchsystem", "cannot find 'nosuchsystem'" },
        { "parallel.sp=maybe", "--vary parallel.sp" },
        { "synthetic.forward=5", "--vary synthetic.forward" }, /* a duration needs a unit */
        { "parallel.pp", "expected section.key=v1,v2" },
        { "parallel.pp=", "empty value list" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct sweep_grid g;
        struct mp_error err = { 0 };
        sweep_grid_init(&g);
        ck_assert_int_eq(sweep_grid_add(&g, &base, bad[i].spec, &err), MP_ERR_INPUT);
        if (!strstr(err.msg, bad[i].needle))
            ck_abort_msg("--vary %s: message '%s' lacks '%s'", bad[i].spec, err.msg,
                         bad[i].needle);
        ck_assert_int_eq(g.n_axes, 0);
        sweep_grid_release(&g);
    }
    struct sweep_grid g;
    struct mp_error err = { 0 };
    sweep_grid_init(&g);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "parallel.pp=1,2", &err), MP_OK);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "parallel.pp=4", &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "given twice"));
    sweep_grid_release(&g);
}
END_TEST

/* 3 × 2 × 2 = 12 points, the first --vary outermost, like nested loops. */
START_TEST(grid_count_and_order)
{
    struct config base, cfg;
    struct mp_error err = { 0 };
    load_base(&base);
    struct sweep_grid g;
    sweep_grid_init(&g);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "parallel.pp=1..4*2", &err), MP_OK);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "training.schedule=gpipe,1f1b", &err), MP_OK);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "synthetic.forward=1ms,2000us", &err), MP_OK);
    ck_assert_int_eq(g.n_points, 12);
    /* Values are kept as an INI would hold them: 2000us reads back as 2ms. */
    ck_assert_str_eq(g.axis[2].values[1], "2ms");
    static const int pp[12] = { 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4 };
    for (int i = 0; i < 12; i++) {
        ck_assert_int_eq(sweep_grid_config(&g, &base, i, &cfg, &err), MP_OK);
        ck_assert_int_eq(cfg.parallel.pp, pp[i]);
        ck_assert_str_eq(cfg.training.schedule, (i / 2) % 2 ? "1f1b" : "gpipe");
        ck_assert_int_eq(cfg.synthetic.forward, (i % 2 ? 2 : 1) * MP_PS_PER_MS);
        ck_assert_int_eq(cfg.training.global_batch, 8); /* untouched keys keep the base */
    }
    char *h = sweep_header(&g, false);
    ck_assert_str_eq(h, "parallel.pp,training.schedule,synthetic.forward," SWEEP_METRIC_COLUMNS
                        ",feasible,reason\n");
    free(h);
    sweep_grid_release(&g);
}
END_TEST

/* A serving sweep is decided by the grid, not by a point: the scenario's
 * [inference] section, or an inference.* key among the varied ones (any
 * such key turns a scenario into a serving one, so every point agrees). */
START_TEST(serving_grids_have_the_serving_columns)
{
    struct config base;
    struct mp_error err = { 0 };
    load_base(&base);
    struct sweep_grid g;
    sweep_grid_init(&g);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "parallel.pp=1,2", &err), MP_OK);
    ck_assert(!sweep_grid_serving(&g, &base));
    ck_assert_int_eq(sweep_grid_add(&g, &base, "inference.micro_batch=1..128*2", &err), MP_OK);
    ck_assert_int_eq(g.n_points, 2 * 8);
    ck_assert(sweep_grid_serving(&g, &base));
    char *h = sweep_header(&g, true);
    ck_assert_str_eq(h, "parallel.pp,inference.micro_batch," SWEEP_SERVE_COLUMNS
                        ",feasible,reason\n");
    free(h);
    sweep_grid_release(&g);
    /* The scenario alone makes it serving too. */
    ck_assert_int_eq(config_set(&base, "inference.rate=10", "--set", &err), MP_OK);
    sweep_grid_init(&g);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "run.seed=1,2", &err), MP_OK);
    ck_assert(sweep_grid_serving(&g, &base));
    sweep_grid_release(&g);
    /* Metric names follow the mode; latencies are better lower, completed
     * requests higher. */
    ck_assert(sweep_is_metric("ttft_p50_s", true) && !sweep_is_metric("ttft_p50_s", false));
    ck_assert(sweep_is_metric("mfu", false) && !sweep_is_metric("mfu", true));
    ck_assert_int_eq(sweep_metric_sense("tpot_p50_s"), -1);
    ck_assert_int_eq(sweep_metric_sense("requests_completed"), +1);
}
END_TEST

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    return s;
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static const char *out_path(const char *name)
{
    static char buf[4][600];
    static int k;
    char *b = buf[k++ % 4];
    const char *dir = mp_test_tmpfile(".d", "");
    snprintf(b, 600, "%s-%s", dir, name);
    return b;
}

static void build(struct sweep_grid *g, const struct config *base, const char *const *specs)
{
    struct mp_error err = { 0 };
    sweep_grid_init(g);
    for (; *specs; specs++) ck_assert_int_eq(sweep_grid_add(g, base, *specs, &err), MP_OK);
}

/* GPipe on p stages with m = 8: step (m + p − 1) × 3 ms and bubble
 * (p − 1)/(m + p − 1); p = 1, 2, 4 give 24, 27, 33 ms and 0, 1/9, 3/11.
 * global_batch = 12 with micro_batch 8 does not divide: a row, infeasible. */
START_TEST(csv_rows_have_the_textbook_numbers)
{
    struct config base;
    load_base(&base);
    struct sweep_grid g;
    const char *specs[] = { "parallel.pp=1,2,4", "training.micro_batch=1,8", NULL };
    build(&g, &base, specs);
    struct sweep_options opt = { .out = out_path("rows.csv"), .jobs = 2 };
    struct sweep_stats st;
    struct mp_error err = { 0 };
    ck_assert_int_eq(sweep_run(&g, &base, &opt, &st, &err), MP_OK);
    ck_assert_int_eq(st.points, 6);
    ck_assert_int_eq(st.simulated, 6);
    ck_assert_int_eq(st.feasible, 6);
    struct sweep_table t;
    ck_assert_int_eq(sweep_table_load(&t, opt.out, &err), MP_OK);
    ck_assert_int_eq(t.n_rows, 6);
    int cs = sweep_table_col(&t, "step_time_s"), cb = sweep_table_col(&t, "bubble");
    ck_assert_str_eq(t.cell[0][cs], "0.024000000000");
    ck_assert_str_eq(t.cell[2][cs], "0.027000000000");
    ck_assert_str_eq(t.cell[4][cs], "0.033000000000");
    ck_assert_double_eq_tol(sweep_table_num(&t, 2, cb), 1.0 / 9, 1e-6);
    ck_assert_double_eq_tol(sweep_table_num(&t, 4, cb), 3.0 / 11, 1e-6);
    /* micro_batch 8: one microbatch, (1 + p − 1) × 3 ms = 3p ms. */
    ck_assert_str_eq(t.cell[5][cs], "0.012000000000");
    ck_assert_str_eq(t.cell[5][sweep_table_col(&t, "chips")], "4");
    /* 8 sequences of 2048 tokens in 24 ms. */
    ck_assert_double_eq_tol(sweep_table_num(&t, 0, sweep_table_col(&t, "tokens_per_s")),
                            8 * 2048 / 0.024, 1e-3);
    sweep_table_release(&t);
    sweep_grid_release(&g);

    /* A corner of the grid that does not exist is a row with its reason. */
    const char *odd[] = { "training.global_batch=8,12", "training.micro_batch=8", NULL };
    build(&g, &base, odd);
    ck_assert_int_eq(sweep_run(&g, &base, &opt, &st, &err), MP_OK);
    ck_assert_int_eq(st.feasible, 1);
    ck_assert_int_eq(sweep_table_load(&t, opt.out, &err), MP_OK);
    ck_assert(!sweep_table_feasible(&t, 1));
    ck_assert_ptr_nonnull(strstr(t.cell[1][sweep_table_col(&t, "reason")],
                                 "not a multiple of training.micro_batch"));
    sweep_table_release(&t);
    sweep_grid_release(&g);
}
END_TEST

/* Points that take a while (pp 8, 256..2048 microbatches), so a kill lands
 * part-way; four schedules so some rows are infeasible (zb-h2 is not). */
static const char *const slow_specs[] = {
    "training.global_batch=256..2048*2", "training.schedule=gpipe,1f1b,zb-h1,interleaved",
    "parallel.vpp=1,2", "synthetic.hop=0,1ms", NULL
};

START_TEST(jobs_1_and_jobs_2_write_the_same_bytes)
{
    struct config base;
    load_base(&base);
    struct sweep_grid g;
    const char *specs[] = { "parallel.pp=1..8*2", "training.schedule=gpipe,1f1b,zb-h1,zb-h2",
                            "training.global_batch=4..32*2", NULL };
    build(&g, &base, specs);
    ck_assert_int_eq(g.n_points, 64);
    struct mp_error err = { 0 };
    struct sweep_options a = { .out = out_path("j1.csv"), .jobs = 1 };
    struct sweep_options b = { .out = out_path("j2.csv"), .jobs = 2 };
    struct sweep_options c = { .out = out_path("j7.csv"), .jobs = 7 };
    ck_assert_int_eq(sweep_run(&g, &base, &a, NULL, &err), MP_OK);
    ck_assert_int_eq(sweep_run(&g, &base, &b, NULL, &err), MP_OK);
    ck_assert_int_eq(sweep_run(&g, &base, &c, NULL, &err), MP_OK);
    char *x = slurp(a.out), *y = slurp(b.out), *z = slurp(c.out);
    ck_assert_int_eq(count_lines(a.out), 65);
    ck_assert_str_eq(x, y);
    ck_assert_str_eq(x, z);
    free(x), free(y), free(z);
    sweep_grid_release(&g);
}
END_TEST

START_TEST(sigkill_part_way_then_resume_equals_uninterrupted)
{
    struct config base;
    load_base(&base);
    ck_assert_int_eq(config_set(&base, "parallel.pp=8", "test", NULL), MP_OK);
    struct sweep_grid g;
    build(&g, &base, slow_specs);
    ck_assert_int_eq(g.n_points, 64);
    struct mp_error err = { 0 };
    struct sweep_options whole = { .out = out_path("whole.csv"), .jobs = 2 };
    ck_assert_int_eq(sweep_run(&g, &base, &whole, NULL, &err), MP_OK);

    struct sweep_options cut = { .out = out_path("cut.csv"), .jobs = 2 };
    char partial[700];
    snprintf(partial, sizeof partial, "%s.partial", cut.out);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(sweep_run(&g, &base, &cut, NULL, NULL));
    /* Header + at least 4 rows, then SIGKILL: no chance to tidy up. */
    struct timespec nap = { 0, 500000 };
    for (int i = 0; i < 20000 && count_lines(partial) < 5; i++) nanosleep(&nap, NULL);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    ck_assert(WIFSIGNALED(status));
    int held = count_lines(partial) - 1;
    ck_assert_int_ge(held, 4);
    ck_assert_int_lt(held, 64); /* killed part-way, not after the end */
    ck_assert_int_ne(access(cut.out, F_OK), 0); /* never a half OUT */

    /* Tear the last row as a kill mid-write would. */
    FILE *f = fopen(partial, "a");
    fputs("2048,gpi", f);
    fclose(f);

    cut.resume = true;
    struct sweep_stats st;
    ck_assert_int_eq(sweep_run(&g, &base, &cut, &st, &err), MP_OK);
    ck_assert_int_eq(st.resumed, held);
    ck_assert_int_eq(st.simulated, 64 - held);
    char *x = slurp(whole.out), *y = slurp(cut.out);
    ck_assert_str_eq(x, y);
    free(x), free(y);
    ck_assert_int_ne(access(partial, F_OK), 0);

    /* Resuming a finished sweep runs nothing. */
    ck_assert_int_eq(sweep_run(&g, &base, &cut, &st, &err), MP_OK);
    ck_assert_int_eq(st.simulated, 0);
    ck_assert_int_eq(st.resumed, 64);
    sweep_grid_release(&g);
}
END_TEST

START_TEST(resume_refuses_another_sweeps_file)
{
    struct config base;
    load_base(&base);
    struct sweep_grid g;
    const char *specs[] = { "parallel.pp=1,2", NULL };
    build(&g, &base, specs);
    struct sweep_options opt = { .out = out_path("other.csv"), .jobs = 1, .resume = true };
    char partial[700];
    snprintf(partial, sizeof partial, "%s.partial", opt.out);
    FILE *f = fopen(partial, "w");
    fputs("parallel.tp," SWEEP_METRIC_COLUMNS ",feasible,reason\n", f);
    fclose(f);
    struct mp_error err = { 0 };
    ck_assert_int_eq(sweep_run(&g, &base, &opt, NULL, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "different sweep"));
    /* Same header, but row 1 is for pp=4, which is not point 1. */
    f = fopen(partial, "w");
    fputs("parallel.pp," SWEEP_METRIC_COLUMNS ",feasible,reason\n", f);
    fputs("4,0.033,1,0,0,1,0,4,,,1,0.024,0,0,0,0,0,0,0,0.009,0,0,true,\n", f);
    fclose(f);
    ck_assert_int_eq(sweep_run(&g, &base, &opt, NULL, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "parallel.pp=4 where this sweep's point 1 has 1"));
    sweep_grid_release(&g);
}
END_TEST

/* A table to rank by hand:
 *   pp=1: 30 s, 60 GB    pp=2: 20 s, 70 GB    pp=4: 25 s, 50 GB
 *   pp=8: infeasible (out of memory)
 * best by step time: pp=2, then pp=4, pp=1. Pareto (time, memory): pp=2
 * (fastest) and pp=4 (less memory than anything faster); pp=1 is beaten by
 * pp=4 on both. */
static const char ranked_csv[] =
    "parallel.pp,step_time_s,bubble,peak_mem_bytes,feasible,reason\n"
    "1,30,0,60e9,true,\n"
    "2,20,0.1,70e9,true,\n"
    "4,25,0.4,50e9,true,\n"
    "8,,,,false,\"does not fit in memory: chip 0 needs 90 GB, has 80\"\n";

static char *capture_best(const char *metric, int top)
{
    struct sweep_table t;
    struct mp_error err = { 0 };
    ck_assert_int_eq(sweep_table_load(&t, mp_test_tmpfile(".csv", ranked_csv), &err), MP_OK);
    char *buf;
    size_t n;
    FILE *f = open_memstream(&buf, &n);
    int rc = metric[0] == 'P' ? sweep_print_pareto(f, &t, 1, metric + 1, &err)
                              : sweep_print_best(f, &t, 1, metric, top, &err);
    ck_assert_int_eq(rc, MP_OK);
    fclose(f);
    sweep_table_release(&t);
    return buf;
}

START_TEST(best_ranks_and_explains_neighbours)
{
    char *out = capture_best("step_time_s", 2);
    char *one = strstr(out, " 1. step_time_s 20 "), *two = strstr(out, " 2. step_time_s 25 ");
    ck_assert_ptr_nonnull(one);
    ck_assert_ptr_nonnull(two);
    ck_assert_ptr_null(strstr(out, " 3. ")); /* --top 2 */
    ck_assert_ptr_nonnull(strstr(out, "best 2 of 3 feasible configurations (of 4)"));
    /* pp=1: +10 s, of which bubble 0×30 − 0.1×20 = −2 s, compute +12 s. */
    ck_assert_ptr_nonnull(strstr(out, "parallel.pp=1"));
    ck_assert_ptr_nonnull(strstr(out, "step +10 s = bubble -2 s, compute +12 s"));
    /* pp=4: +5 s = bubble 0.4×25 − 2 = +8 s, compute −3 s: mostly bubble. */
    ck_assert_ptr_nonnull(strstr(out, "step +5 s = bubble +8 s, compute -3 s"));
    ck_assert_ptr_nonnull(strstr(out, "[mostly bubble]"));
    free(out);
    out = capture_best("Pstep_time_s,peak_mem_bytes", 0);
    ck_assert_ptr_nonnull(strstr(out, "step_time_s 20 "));
    ck_assert_ptr_nonnull(strstr(out, "step_time_s 25 "));
    ck_assert_ptr_null(strstr(out, "step_time_s 30 "));
    ck_assert_ptr_null(strstr(out, "parallel.pp=8"));
    free(out);
}
END_TEST

START_TEST(best_of_an_unknown_column_suggests)
{
    struct sweep_table t;
    struct mp_error err = { 0 };
    ck_assert_int_eq(sweep_table_load(&t, mp_test_tmpfile(".csv", ranked_csv), &err), MP_OK);
    ck_assert_int_eq(sweep_print_best(stdout, &t, 1, "step_tme_s", 3, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "did you mean 'step_time_s'"));
    ck_assert_int_eq(sweep_table_need(&t, "pp", "--x", &err), 0); /* bare key name */
    sweep_table_release(&t);
}
END_TEST

/* --chips 8 over pp = 1..8 on the textbook (global batch 8): tp × pp
 * divides 8 for pp = 1, 2, 4, 8 (dp 8, 4, 2, 1), not for 3, 5, 6, 7. So 8
 * rows, 4 of them runs, 4 refused with the reason; chips is 8 on every row.
 * GPipe with dp replicas: m = 8 / dp microbatches per replica, step
 * (m + pp − 1) × 3 ms: pp 1 → 3 ms, 2 → (2+1)·3 = 9, 4 → (4+3)·3 = 21,
 * 8 → (8+7)·3 = 45 ms. */
START_TEST(chips_fixed_derives_dp_and_refuses_what_does_not_divide)
{
    struct config base;
    load_base(&base);
    struct sweep_grid g;
    sweep_grid_init(&g);
    struct mp_error err = { 0 };
    ck_assert_int_eq(sweep_grid_add(&g, &base, "parallel.pp=1..8", &err), MP_OK);
    ck_assert_int_eq(sweep_grid_fix_chips(&g, &base, 8, &err), MP_OK);
    char out[600];
    snprintf(out, sizeof out, "%s", mp_test_tmpfile(".csv", ""));
    struct sweep_options opt = { .out = out, .jobs = 2 };
    ck_assert_int_eq(sweep_run(&g, &base, &opt, NULL, &err), MP_OK);
    struct sweep_table t;
    ck_assert_int_eq(sweep_table_load(&t, out, &err), MP_OK);
    ck_assert_int_eq(t.n_rows, 8);
    ck_assert_str_eq(t.col[1], "parallel.dp");
    static const char *const dp[8] = { "8", "4", "", "2", "", "", "", "1" };
    static const double step[8] = { 0.003, 0.009, 0, 0.021, 0, 0, 0, 0.045 };
    int cs = sweep_table_col(&t, "step_time_s"), cc = sweep_table_col(&t, "chips");
    int cr = sweep_table_col(&t, "reason"), feasible = 0;
    for (int i = 0; i < 8; i++) {
        ck_assert_str_eq(t.cell[i][1], dp[i]);
        ck_assert_str_eq(t.cell[i][cc], "8");
        if (dp[i][0]) {
            ck_assert(sweep_table_feasible(&t, i));
            ck_assert_double_eq_tol(sweep_table_num(&t, i, cs), step[i], 1e-15);
            feasible++;
        } else {
            ck_assert(!sweep_table_feasible(&t, i));
            ck_assert_ptr_nonnull(strstr(t.cell[i][cr], "--chips 8: not divisible by tp 1 × cp 1 × pp"));
        }
    }
    ck_assert_int_eq(feasible, 4);
    sweep_table_release(&t);
    /* No point divides 7: an input error naming --chips, before any run. */
    struct sweep_grid g2;
    sweep_grid_init(&g2);
    ck_assert_int_eq(sweep_grid_add(&g2, &base, "parallel.pp=2,4", &err), MP_OK);
    ck_assert_int_eq(sweep_grid_fix_chips(&g2, &base, 7, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "--chips 7: no point of the grid divides it"));
    ck_assert_ptr_nonnull(strstr(err.msg, "1×1×2, 1×1×4")); /* tp × cp × pp */
    /* parallel.dp cannot be varied as well. */
    ck_assert_int_eq(sweep_grid_add(&g2, &base, "parallel.dp=1,2", &err), MP_OK);
    ck_assert_int_eq(sweep_grid_fix_chips(&g2, &base, 8, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "parallel.dp is derived"));
    sweep_grid_release(&g2);
    sweep_grid_release(&g);
}
END_TEST

/* The split columns: in exact decimal seconds, they add up to step_time_s
 * on every row (here in whole picoseconds, as written). */
START_TEST(split_columns_add_up_to_the_step)
{
    struct config base;
    load_base(&base);
    struct sweep_grid g;
    sweep_grid_init(&g);
    struct mp_error err = { 0 };
    ck_assert_int_eq(sweep_grid_add(&g, &base, "synthetic.hop=0,1ms,3ms", &err), MP_OK);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "training.schedule=gpipe,1f1b", &err), MP_OK);
    char out[600];
    snprintf(out, sizeof out, "%s", mp_test_tmpfile(".csv", ""));
    struct sweep_options opt = { .out = out, .jobs = 1 };
    ck_assert_int_eq(sweep_run(&g, &base, &opt, NULL, &err), MP_OK);
    struct sweep_table t;
    ck_assert_int_eq(sweep_table_load(&t, out, &err), MP_OK);
    int cs = sweep_table_col(&t, "step_time_s"), c0 = sweep_table_col(&t, "compute_s");
    ck_assert_int_ge(c0, 0);
    for (int i = 0; i < t.n_rows; i++) {
        long long sum = 0;
        for (int k = 0; k < N_SPLIT; k++) sum += llround(sweep_table_num(&t, i, c0 + k) * 1e12);
        ck_assert_int_eq(sum, llround(sweep_table_num(&t, i, cs) * 1e12));
        /* no FLOP count: mfu is empty, not 0 */
        ck_assert_str_eq(t.cell[i][sweep_table_col(&t, "mfu")], "");
    }
    sweep_table_release(&t);
    sweep_grid_release(&g);
}
END_TEST

static Suite *sweep_suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, ranges_double_step_and_mix);
    tcase_add_test(tc, bad_ranges_and_lists_are_input_errors);
    tcase_add_test(tc, bad_vary_names_the_key_and_what_was_expected);
    tcase_add_test(tc, grid_count_and_order);
    tcase_add_test(tc, serving_grids_have_the_serving_columns);
    tcase_add_test(tc, csv_rows_have_the_textbook_numbers);
    tcase_add_test(tc, jobs_1_and_jobs_2_write_the_same_bytes);
    tcase_add_test(tc, sigkill_part_way_then_resume_equals_uninterrupted);
    tcase_add_test(tc, resume_refuses_another_sweeps_file);
    tcase_add_test(tc, best_ranks_and_explains_neighbours);
    tcase_add_test(tc, best_of_an_unknown_column_suggests);
    tcase_add_test(tc, chips_fixed_derives_dp_and_refuses_what_does_not_divide);
    tcase_add_test(tc, split_columns_add_up_to_the_step);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(sweep_suite)
