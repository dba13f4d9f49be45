/* check_plot.c — `mpsim plot`: the file exists, is a real PNG / SVG / PDF
 * by its magic bytes, changes when the data does, and bad columns are input
 * errors naming the flag. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/explore/plot.h"
#include "testutil.h"

static const char sweep_a[] =
    "parallel.pp,training.schedule,step_time_s,bubble,feasible,reason\n"
    "1,gpipe,0.024,0,true,\n"
    "2,gpipe,0.027,0.111111,true,\n"
    "4,gpipe,0.033,0.272727,true,\n"
    "1,1f1b,0.024,0,true,\n"
    "2,1f1b,0.027,0.111111,true,\n"
    "4,1f1b,,,false,does not fit in memory\n";

static char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)*n + 1);
    ck_assert_int_eq(fread(s, 1, (size_t)*n, f), (size_t)*n);
    s[*n] = '\0';
    fclose(f);
    return s;
}

static char *draw(const char *csv, const char *ext, long *n)
{
    struct sweep_table t;
    struct mp_error err = { 0 };
    ck_assert_int_eq(sweep_table_load(&t, mp_test_tmpfile(".csv", csv), &err), MP_OK);
    char out[600];
    snprintf(out, sizeof out, "%s%s", mp_test_tmpfile(".x", ""), ext);
    struct plot_options o = { .x = "pp", .y = "step_time_s", .by = "training.schedule",
                              .out = out };
    int rc = plot_sweep(&t, &o, &err);
    ck_assert_msg(rc == MP_OK, "%s", err.msg);
    sweep_table_release(&t);
    char *data = slurp(out, n);
    ck_assert_ptr_nonnull(data);
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", out, (int)getpid());
    ck_assert_int_ne(access(tmp, F_OK), 0); /* the temporary was renamed */
    return data;
}

START_TEST(png_svg_pdf_are_valid_files)
{
    long n;
    char *png = draw(sweep_a, ".png", &n);
    ck_assert_int_gt(n, 1000);
    ck_assert_int_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
    free(png);
    char *svg = draw(sweep_a, ".svg", &n);
    ck_assert_ptr_nonnull(strstr(svg, "<svg"));
    ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
    free(svg);
    char *pdf = draw(sweep_a, ".pdf", &n);
    ck_assert_int_eq(memcmp(pdf, "%PDF-", 5), 0);
    free(pdf);
}
END_TEST

START_TEST(the_picture_changes_with_the_data)
{
    long na, nb, nc;
    char *a = draw(sweep_a, ".png", &na);
    char *same = draw(sweep_a, ".png", &nc);
    char other[sizeof sweep_a];
    memcpy(other, sweep_a, sizeof sweep_a);
    char *at = strstr(other, "0.033");
    memcpy(at, "0.045", 5); /* pp = 4 under GPipe, slower */
    char *b = draw(other, ".png", &nb);
    ck_assert(nc == na && memcmp(a, same, (size_t)na) == 0); /* deterministic */
    ck_assert(na != nb || memcmp(a, b, (size_t)na) != 0);
    free(a), free(b), free(same);
}
END_TEST

START_TEST(bad_columns_and_extensions)
{
    struct sweep_table t;
    struct mp_error err = { 0 };
    ck_assert_int_eq(sweep_table_load(&t, mp_test_tmpfile(".csv", sweep_a), &err), MP_OK);
    struct plot_options o = { .x = "pp", .y = "step_time", .out = "/tmp/never.png" };
    ck_assert_int_eq(plot_sweep(&t, &o, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "--y: no column 'step_time'"));
    o.y = "step_time_s";
    o.x = "training.schedule";
    ck_assert_int_eq(plot_sweep(&t, &o, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "not a number"));
    o.x = "pp";
    o.out = "/tmp/never.gif";
    ck_assert_int_eq(plot_sweep(&t, &o, &err), MP_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, ".png, .svg or .pdf"));
    ck_assert_int_ne(access("/tmp/never.png", F_OK), 0);
    sweep_table_release(&t);
}
END_TEST

static Suite *plot_suite(void)
{
    Suite *s = suite_create("plot");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, png_svg_pdf_are_valid_files);
    tcase_add_test(tc, the_picture_changes_with_the_data);
    tcase_add_test(tc, bad_columns_and_extensions);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(plot_suite)
