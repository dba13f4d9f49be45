/* check_csv_reader.c — issue 16, classes 2, 5 and 6 for what mpsim reads:
 *  - the one CSV reader: BOM, CRLF, comments, quoted cells across lines,
 *    NUL bytes, a line past its limit, every message one line with its line;
 *  - sweep tables: a row wider than the header (read freed memory before),
 *    a duplicate column, numbers that are not finite;
 *  - --resume: an empty partial starts over, a torn or NUL-filled last row
 *    is run again and the result is the uninterrupted run's bytes, damage
 *    before the last row is an error naming its line;
 *  - messages naming file, line and key: a request trace's long comment, an
 *    unknown schedule in the wrong case, an unknown system, an empty
 *    scenario, a missing routing trace. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hardware/calib.h"
#include "hardware/chip.h"
#include "sim/common.h"
#include "sim/explore/sweep.h"
#include "sim/io/config.h"
#include "sim/io/csv_reader.h"
#include "sim/serve/serve.h"
#include "sim/train/sim.h"
#include "testutil.h"

/* Every row of `text` as "cell|cell|...@line;" for one assertion. */
static int rows_of(const char *text, size_t len, bool comments, char *out, size_t size,
                   struct mp_error *err)
{
    const char *path = mp_test_tmpfile(".csv", "");
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(text, 1, len, f);
    fclose(f);
    struct csv_reader r;
    struct csv_reader_opts o = { .key = "experts.trace", .comments = comments };
    ck_assert_int_eq(csv_reader_open(&r, path, &o, err), MP_OK);
    struct csv_row row;
    int got;
    out[0] = '\0';
    while ((got = csv_reader_next(&r, &row, err)) > 0) {
        size_t n = strlen(out);
        for (int i = 0; i < row.n; i++)
            n += (size_t)snprintf(out + n, size - n, "%s%s", i ? "|" : "", row.cell[i]);
        snprintf(out + n, size - n, "@%ld;", row.line);
    }
    csv_reader_close(&r);
    return got;
}

#define TEXT(s) s, sizeof(s) - 1

START_TEST(reader_bom_crlf_comments_quotes)
{
    char out[1024];
    struct mp_error err = { 0 };
    /* Line 1: a BOM then a header; 2: a comment; 3: a quoted cell with a
     * comma and a doubled quote, CRLF; 4-5: a quoted cell across a line
     * break; 6: blank; 7: spaces; 8: a row. */
    ck_assert_int_eq(rows_of(TEXT("\xef\xbb\xbf" "a,b\n# a comment, with \"quotes\n"
                                  "\"x,y\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",z\n\n   \n1,2\n"),
                             true, out, sizeof out, &err), 0);
    ck_assert_str_eq(out, "a|b@1;x,y|say \"hi\"@3;two\nlines|z@4;1|2@8;");
    /* Without comments a '#' line is a row of its own. */
    ck_assert_int_eq(rows_of(TEXT("#x\n1\n"), false, out, sizeof out, &err), 0);
    ck_assert_str_eq(out, "#x@1;1@2;");
}
END_TEST

START_TEST(reader_errors_name_the_line)
{
    char out[1024];
    struct mp_error err = { 0 };
    /* A NUL on line 2, column 3: the rows before it are read. */
    ck_assert_int_eq(rows_of(TEXT("a,b\n1,\0002\n3,4\n"), false, out, sizeof out, &err), -1);
    ck_assert_str_eq(out, "a|b@1;");
    ck_assert_msg(strstr(err.msg, ":2: key experts.trace: a NUL byte at column 3"), "%s", err.msg);
    /* A stray quote on line 2. */
    ck_assert_int_eq(rows_of(TEXT("a\nb\"c\n"), false, out, sizeof out, &err), -1);
    ck_assert_msg(strstr(err.msg, ":2: key experts.trace: not valid CSV: a stray quote"), "%s",
                  err.msg);
    /* A quote opened on line 3 that never closes (lines 3-4). */
    ck_assert_int_eq(rows_of(TEXT("a\nb\n\"c\nd\n"), false, out, sizeof out, &err), -1);
    ck_assert_msg(strstr(err.msg, ":3: key experts.trace: not valid CSV: a quoted cell opened "
                                  "here never closes"), "%s", err.msg);
    /* A line of CSV_LINE_MAX + 1 bytes on line 2 is refused, and says its
     * limit; the reader never holds more than the limit. */
    size_t n = CSV_LINE_MAX + 8;
    char *big = malloc(n);
    memcpy(big, "a\n", 2);
    memset(big + 2, 'x', n - 3);
    big[n - 1] = '\n';
    ck_assert_int_eq(rows_of(big, n, false, out, sizeof out, &err), -1);
    free(big);
    ck_assert_msg(strstr(err.msg, ":2: key experts.trace: a line of more than 1048576 bytes"),
                  "%s", err.msg);
}
END_TEST

/* A request trace whose comment line is 600 bytes (the old reader took
 * 512-byte pieces and blamed the error on the wrong line): the bad row is
 * line 3. */
START_TEST(trace_long_comment_right_line)
{
    char text[1024] = "arrival_s,prompt_tokens,output_tokens\n#";
    memset(text + strlen(text), 'c', 600);
    strcat(text, "\n0,zero,4\n");
    char path[600];
    snprintf(path, sizeof path, "%s", mp_test_tmpfile(".csv", text));
    struct config cfg;
    config_defaults(&cfg);
    struct mp_error err = { 0 };
    char set[700];
    snprintf(set, sizeof set, "inference.trace=%s", path);
    ck_assert_int_eq(config_set(&cfg, set, "--set", &err), MP_OK);
    ck_assert_int_eq(config_set(&cfg, "inference.arrivals=trace", "--set", &err), MP_OK);
    ck_assert_int_eq(config_set(&cfg, "hardware.system=dgx-h100", "--set", &err), MP_OK);
    struct serve s;
    ck_assert_int_eq(serve_run(&s, &cfg, &err), MP_ERR_INPUT);
    serve_release(&s);
    char want[700];
    snprintf(want, sizeof want, "%s:3: key inference.trace: column prompt_tokens", path);
    ck_assert_msg(strstr(err.msg, want), "%s", err.msg);
}
END_TEST

/* ---- sweep tables ---------------------------------------------------------- */

static int load(const char *text, struct sweep_table *t, struct mp_error *err)
{
    return sweep_table_load(t, mp_test_tmpfile(".csv", text), err);
}

START_TEST(table_wide_row_duplicate_column)
{
    struct sweep_table t;
    struct mp_error err = { 0 };
    /* Row 3 has 3 cells, the header 2: the message reads the widths of a
     * table it has not freed yet (ASan caught the old read of freed memory). */
    ck_assert_int_eq(load("pp,step_time_s\n1,2\n3,4,5\n", &t, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":3: 3 cells, but the header has 2"), "%s", err.msg);
    /* The same column twice would let --x take either. */
    ck_assert_int_eq(load("pp,step_time_s,pp\n1,2,3\n", &t, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":1: header: column 'pp' appears twice (columns 1 and 3)"),
                  "%s", err.msg);
    /* inf, nan and 1e999 are no numbers to plot. */
    ck_assert_int_eq(load("pp,step_time_s\n1,inf\n2,nan\n3,1e999\n4,0.5\n", &t, &err), MP_OK);
    ck_assert(isnan(sweep_table_num(&t, 0, 1)) && isnan(sweep_table_num(&t, 1, 1)) &&
              isnan(sweep_table_num(&t, 2, 1)));
    ck_assert_double_eq(sweep_table_num(&t, 3, 1), 0.5);
    sweep_table_release(&t);
}
END_TEST

/* ---- --resume ------------------------------------------------------------------ */

static char sweep_dir[256];

/* A sweep of 6 synthetic points into `out`, resuming when asked. */
static int run_sweep(const char *out, bool resume, struct mp_error *err)
{
    struct config base;
    config_defaults(&base);
    ck_assert_int_eq(config_set(&base, "model.kind=synthetic", "--set", err), MP_OK);
    struct sweep_grid g;
    sweep_grid_init(&g);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "parallel.pp=1,2,4", err), MP_OK);
    ck_assert_int_eq(sweep_grid_add(&g, &base, "training.global_batch=4,8", err), MP_OK);
    struct sweep_options opt = { .out = out, .jobs = 1, .resume = resume };
    int rc = sweep_run(&g, &base, &opt, NULL, err);
    sweep_grid_release(&g);
    return rc;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 16);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static void spill(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(data, 1, len, f);
    fclose(f);
}

START_TEST(resume_torn_and_damaged)
{
    snprintf(sweep_dir, sizeof sweep_dir, "/tmp/mpsim-resume-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(sweep_dir));
    char whole[400], out[400], partial[420];
    snprintf(whole, sizeof whole, "%s/whole.csv", sweep_dir);
    snprintf(out, sizeof out, "%s/out.csv", sweep_dir);
    snprintf(partial, sizeof partial, "%s.partial", out);
    struct mp_error err = { 0 };
    ck_assert_int_eq(run_sweep(whole, false, &err), MP_OK);
    size_t len, got;
    char *want = slurp(whole, &len);
    /* Header and 3 rows whole: the byte after the third row's line break. */
    size_t three = 0;
    for (int lines = 0; lines < 4; three++) lines += want[three] == '\n';

    /* 1. Empty partial (killed before the header): starts over. */
    spill(partial, "", 0);
    ck_assert_int_eq(run_sweep(out, true, &err), MP_OK);
    char *res = slurp(out, &got);
    ck_assert(got == len && !memcmp(res, want, len));
    free(res);
    /* 2. Three rows and half a fourth; 3. three rows then a block of NULs
     * (a crash before the disk wrote the block): both run the rest again. */
    spill(partial, want, three + 10);
    ck_assert_int_eq(run_sweep(out, true, &err), MP_OK);
    res = slurp(out, &got);
    ck_assert(got == len && !memcmp(res, want, len));
    free(res);
    char *nul = calloc(1, three + 512);
    memcpy(nul, want, three);
    spill(partial, nul, three + 512);
    ck_assert_int_eq(run_sweep(out, true, &err), MP_OK);
    res = slurp(out, &got);
    ck_assert_msg(got == len && !memcmp(res, want, len), "a NUL row reached the result");
    free(res);
    /* 4. A NUL inside row 2 with rows after it: damage, not a tear. */
    memcpy(nul, want, three);
    nul[strchr(want, '\n') - want + 5] = '\0';
    spill(partial, nul, three);
    ck_assert_int_eq(run_sweep(out, true, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "--resume: ") && strstr(err.msg, ".partial:2: a NUL byte"),
                  "%s", err.msg);
    free(nul);
    free(want);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sweep_dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- messages that name file, line and key ------------------------------------- */

static int load_and_run(const char *text, struct mp_error *err)
{
    struct config cfg;
    config_defaults(&cfg);
    int rc = config_load(&cfg, mp_test_tmpfile(".ini", text), err);
    if (rc) return rc;
    struct sim s;
    rc = sim_run(&s, &cfg, NULL, err);
    sim_release(&s);
    return rc;
}

START_TEST(messages_name_file_line_key)
{
    struct mp_error err = { 0 };
    ck_assert_int_eq(load_and_run("[model]\nkind = synthetic\n[training]\nschedule = GPIPE\n", &err),
                     MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ".ini:4: key training.schedule: unknown pipeline schedule "
                                  "'GPIPE' (did you mean 'gpipe'?"), "%s", err.msg);
    ck_assert_int_eq(load_and_run("[model]\nkind = synthetic\n[hardware]\nsystem = dgx-h1000\n", &err),
                     MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ".ini:4: key hardware.system: cannot find 'dgx-h1000'"), "%s",
                  err.msg);
    ck_assert_int_eq(load_and_run("; only a comment\n\n[model]\n", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ": empty scenario: it sets no key"), "%s", err.msg);
    ck_assert_int_eq(load_and_run("[model]\nconfig = mixtral-8x7b\n[parallel]\nep = 2\ndp = 2\n"
                                  "[experts]\nrouting = trace\n", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ".ini:7: key experts.routing = trace needs experts.trace"),
                  "%s", err.msg);
    ck_assert_int_eq(load_and_run("[model]\nconfig = mixtral-8x7b\n[parallel]\nep = 2\ndp = 2\n"
                                  "[experts]\nrouting = trace\ntrace = gone.csv\n", &err),
                     MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ".ini:8: key experts.trace: cannot find 'gone.csv'"), "%s",
                  err.msg);
    /* A value holding a line break is shown escaped: one line. */
    struct config cfg;
    config_defaults(&cfg);
    ck_assert_int_eq(config_set(&cfg, "parallel.pp=4\n5", "--set", &err), MP_ERR_INPUT);
    ck_assert_msg(!strchr(err.msg, '\n') && strstr(err.msg, "got '4\\n5'"), "%s", err.msg);
    /* The limit is always said. */
    ck_assert_int_eq(config_set(&cfg, "model.seq_len=3000000000", "--set", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "at most 2147483647"), "%s", err.msg);
}
END_TEST

START_TEST(quote_for_messages)
{
    char out[128];
    mp_quote("a\nb\tc\x01" "\xef\xbb\xbf" "d\xff", 11, 100, out, sizeof out);
    ck_assert_str_eq(out, "a\\nb\\tc\\x01\\uFEFFd\\xff");
    mp_quote("abcdef", 6, 3, out, sizeof out);
    ck_assert_str_eq(out, "abc...");
    mp_quote("h\xc3\xa9", 3, 10, out, sizeof out); /* é stays é */
    ck_assert_str_eq(out, "h\xc3\xa9");
}
END_TEST

/* The kernel calibration table (hardware/kernels.csv, branch kernels) reads
 * through the same reader: the shipped table with a BOM and CRLF line ends
 * gives the same figures; a NUL, a quote never closed and a line break in a
 * value are one-line errors naming the file and the line. */
static int calib_of(const char *text, size_t len, struct calib *c, struct mp_error *err)
{
    struct chip_catalog cat;
    ck_assert_int_eq(chip_catalog_load_default(&cat, err), MP_OK);
    const struct chip *a100 = chip_catalog_find(&cat, "a100-sxm");
    ck_assert_ptr_nonnull(a100);
    const char *path = mp_test_tmpfile(".csv", "");
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(text, 1, len, f);
    fclose(f);
    int rc = calib_load(c, path, a100, err);
    chip_catalog_release(&cat);
    return rc;
}

START_TEST(calibration_table_through_the_reader)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/hardware/kernels.csv", mp_data_dir());
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    size_t cap = 1 << 22, n = 0;
    char *orig = malloc(cap), *crlf = malloc(2 * cap + 3);
    n = fread(orig, 1, cap, f);
    fclose(f);
    ck_assert(n > 0 && n < cap);
    size_t m = 0;
    memcpy(crlf, "\xEF\xBB\xBF", 3), m = 3;
    for (size_t i = 0; i < n; i++) {
        if (orig[i] == '\n') crlf[m++] = '\r';
        crlf[m++] = orig[i];
    }
    struct mp_error err = { 0 };
    struct calib a, b;
    ck_assert_msg(calib_of(orig, n, &a, &err) == MP_OK, "%s", err.msg);
    ck_assert_msg(calib_of(crlf, m, &b, &err) == MP_OK, "%s", err.msg);
    ck_assert_int_eq(a.n_rows, b.n_rows);
    ck_assert(a.units == b.units && a.gemm_eff[0] == b.gemm_eff[0] && a.launch_s == b.launch_s);
    ck_assert(a.n_rows > 0);
    calib_release(&a);
    calib_release(&b);

    /* Damage on line 3 of the shipped table's first lines. */
    const char *head = "chip,kernel,dtype,head_dim,causal,seq_len,value,source\n"
                       "a100-sxm,memory,-,-,-,-,0.8,src\n";
    static const struct { const char *text; size_t len; const char *want; } bad[] = {
        { TEXT("a100-sxm,units,-,-,-,-,1\0008,src\n"), "column 25" }, /* a NUL after 24 bytes */
        { TEXT("a100-sxm,units,-,-,-,-,108,\"src\n"), ":3:" },        /* never closed */
        { TEXT("a100-sxm,units,-,-,-,-,\"10\n8\",src\n"), "\\n" },  /* shown as \n */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[512];
        size_t hl = strlen(head);
        memcpy(text, head, hl);
        memcpy(text + hl, bad[i].text, bad[i].len);
        struct calib c;
        ck_assert_int_eq(calib_of(text, hl + bad[i].len, &c, &err), MP_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, bad[i].want), "case %zu: %s", i, err.msg);
        ck_assert_msg(strstr(err.msg, ".csv"), "case %zu: %s", i, err.msg);
        ck_assert_msg(!strchr(err.msg, '\n'), "case %zu: two lines: %s", i, err.msg);
    }
    free(orig);
    free(crlf);
}
END_TEST

/* A data table's numeric cell: plain decimal, finite, no blanks or units. */
START_TEST(cell_number_is_plain_and_finite)
{
    double v = 0;
    ck_assert(csv_cell_number("1e3", &v) && v == 1000);
    ck_assert(csv_cell_number("-2.5", &v) && v == -2.5);
    ck_assert(!csv_cell_number("", &v));
    ck_assert(!csv_cell_number("1 ", &v));       /* a blank */
    ck_assert(!csv_cell_number("16GB", &v));     /* a unit */
    ck_assert(!csv_cell_number("0x10", &v));     /* hex */
    ck_assert(!csv_cell_number("inf", &v));
    ck_assert(!csv_cell_number("1e999", &v));    /* overflows to inf */
    ck_assert(!csv_cell_number("1e3e", &v));
    char long_cell[70];
    memset(long_cell, '1', 65);
    long_cell[65] = '\0';                        /* 65 characters: past 64 */
    ck_assert(!csv_cell_number(long_cell, &v));
}
END_TEST

static Suite *csv_reader_suite(void)
{
    Suite *s = suite_create("csv_reader");
    TCase *tc = tcase_create("csv_reader");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, reader_bom_crlf_comments_quotes);
    tcase_add_test(tc, cell_number_is_plain_and_finite);
    tcase_add_test(tc, reader_errors_name_the_line);
    tcase_add_test(tc, trace_long_comment_right_line);
    tcase_add_test(tc, table_wide_row_duplicate_column);
    tcase_add_test(tc, resume_torn_and_damaged);
    tcase_add_test(tc, messages_name_file_line_key);
    tcase_add_test(tc, quote_for_messages);
    tcase_add_test(tc, calibration_table_through_the_reader);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(csv_reader_suite)
