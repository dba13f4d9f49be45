/* check_units.c — numbers with units: every accepted form, exact values
 * (worked out by hand in the comments), rounding, and what is refused. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "sim/io/units.h"

static mp_time dur(const char *text)
{
    mp_time t = -12345;
    ck_assert_msg(units_parse_duration(text, &t) == 0, "'%s' should parse", text);
    return t;
}

static void dur_bad(const char *text)
{
    mp_time t = 777;
    ck_assert_msg(units_parse_duration(text, &t) == -1, "'%s' should be refused", text);
    ck_assert_int_eq(t, 777); /* untouched on failure */
}

static double size(const char *text)
{
    double v = -1;
    ck_assert_msg(units_parse_size(text, &v) == 0, "'%s' should parse", text);
    return v;
}

static void size_bad(const char *text)
{
    double v = 0;
    ck_assert_msg(units_parse_size(text, &v) == -1, "'%s' should be refused", text);
}

static double bw(const char *text)
{
    double v = -1;
    ck_assert_msg(units_parse_bandwidth(text, &v) == 0, "'%s' should parse", text);
    return v;
}

static void bw_bad(const char *text)
{
    double v = 0;
    ck_assert_msg(units_parse_bandwidth(text, &v) == -1, "'%s' should be refused", text);
}

START_TEST(duration_units)
{
    ck_assert_int_eq(dur("3ps"), 3);
    ck_assert_int_eq(dur("250ns"), 250000);
    ck_assert_int_eq(dur("2 us"), 2000000);
    ck_assert_int_eq(dur("2\xc2\xb5s"), 2000000);  /* µs (micro sign) */
    ck_assert_int_eq(dur("2\xce\xbcs"), 2000000);  /* μs (Greek mu) */
    ck_assert_int_eq(dur("1ms"), 1000000000);
    ck_assert_int_eq(dur("1.5 ms"), 1500000000);
    ck_assert_int_eq(dur("0.5s"), 500000000000);
    ck_assert_int_eq(dur("2s"), 2 * MP_PS_PER_S);
    ck_assert_int_eq(dur(".5us"), 500000);
    ck_assert_int_eq(dur("1e3ns"), 1000000);     /* 1000 ns = 1 us */
    ck_assert_int_eq(dur("25e-1ms"), 2500000000); /* 2.5 ms */
    ck_assert_int_eq(dur("  7ns  "), 7000);
    ck_assert_int_eq(dur("0"), 0);
    ck_assert_int_eq(dur("0.000"), 0);
    ck_assert_int_eq(dur("0ms"), 0);
    ck_assert_int_eq(dur("007us"), 7000000);
}
END_TEST

START_TEST(duration_rounding)
{
    ck_assert_int_eq(dur("1.4ps"), 1);
    ck_assert_int_eq(dur("1.5ps"), 2);            /* halves round up */
    ck_assert_int_eq(dur("0.0005ns"), 1);         /* 0.5 ps */
    ck_assert_int_eq(dur("0.0004999ns"), 0);      /* 0.4999 ps */
    ck_assert_int_eq(dur("1.0000000000004s"), 1000000000000); /* + 0.4 ps */
    ck_assert_int_eq(dur("1.0000000000006s"), 1000000000001); /* + 0.6 ps */
    /* 2.4999999999999999999 is 2.5 as a double; exact decimal rounding says 2. */
    ck_assert_int_eq(dur("2.4999999999999999999ps"), 2);
    ck_assert_int_eq(dur("0.333333333333333us"), 333333); /* 333333.33 ps */
    ck_assert_int_eq(dur("1e-20s"), 0);
}
END_TEST

START_TEST(duration_limits)
{
    /* INT64_MAX ps = 9223372036854775807 ps ≈ 106.75 days. */
    ck_assert_int_eq(dur("9223372036854775807ps"), INT64_MAX);
    ck_assert_int_eq(dur("9223372.036854775807s"), INT64_MAX);
    dur_bad("9223372036854775808ps");
    dur_bad("9223372.0368547758075s"); /* rounds up past INT64_MAX */
    dur_bad("1e7s");                   /* 1e19 ps */
    dur_bad("1e100000000ms");
}
END_TEST

START_TEST(duration_rejects)
{
    const char *bad[] = {"", " ", "ms", "-1ms", "-0", "+1ms", "nan", "inf", "NaN ms",
                         "infs", "1", "5", "0.1", "1 m", "1msx", "1 ms junk", "1MS",
                         "1Ms", "1e", "1e ms", "1.2.3ms", "1hr", "1 s s", "1,5ms",
                         "0x10ns", "1min"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) dur_bad(bad[i]);
}
END_TEST

START_TEST(size_units)
{
    ck_assert(size("100B") == 100);
    ck_assert(size("1024") == 1024);              /* plain number: bytes */
    ck_assert(size("0") == 0);
    ck_assert(size("512 KB") == 512000);
    ck_assert(size("1kB") == 1000);
    ck_assert(size("3MB") == 3e6);
    ck_assert(size("44GB") == 44e9);
    ck_assert(size("1.5TB") == 1.5e12);
    ck_assert(size("2PB") == 2e15);
    ck_assert(size("1KiB") == 1024);
    ck_assert(size("2MiB") == 2097152);
    ck_assert(size("16GiB") == 17179869184.0);    /* 16 × 2^30 */
    ck_assert(size("1.5GiB") == 1610612736.0);    /* 1.5 × 2^30 */
    ck_assert(size("1TiB") == 1099511627776.0);
    ck_assert(size("0.1GB") == 1e8);              /* correctly rounded, not 0.1 × 1e9 */
    ck_assert(size(" 8 GiB ") == 8589934592.0);
    ck_assert(size("2.5") == 2.5);
}
END_TEST

START_TEST(size_rejects)
{
    const char *bad[] = {"", "GB", "-1GB", "-1", "nan", "inf", "1Gb" /* bits */,
                         "1gb", "1gB", "1GBs", "1 G B", "1GiB/s", "1e999", "1e400GB",
                         "12 bytes", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) size_bad(bad[i]);
}
END_TEST

START_TEST(bandwidth_units)
{
    ck_assert(bw("450GB/s") == 450e9);
    ck_assert(bw("400Gb/s") == 50e9);       /* bits: 400e9 / 8, exactly */
    ck_assert(bw("1.2Tb/s") == 150e9);      /* 1.2e12 / 8 = 1.5e11, exactly */
    ck_assert(bw("50 GB/s") == 50e9);
    ck_assert(bw("100Gbps") == 12.5e9);
    ck_assert(bw("25GBps") == 25e9);
    ck_assert(bw("8b/s") == 1);
    ck_assert(bw("1KiB/s") == 1024);
    ck_assert(bw("900 MB/s") == 9e8);
    ck_assert(isinf(bw("inf")));
    ck_assert(isinf(bw(" INF ")));
    ck_assert(bw("inf") > 0);
}
END_TEST

START_TEST(bandwidth_rejects)
{
    const char *bad[] = {"", "0GB/s", "0", "450GB", "450", "450 ", "450GB/h", "-1GB/s",
                         "nan", "400gb/s", "GB/s", "/s", "1/s", "1ps", "1e999GB/s",
                         "infinite", "-inf"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) bw_bad(bad[i]);
}
END_TEST

START_TEST(bools)
{
    const char *yes[] = {"true", "TRUE", "Yes", "on", "1", " true "};
    const char *no[] = {"false", "No", "OFF", "0"};
    const char *bad[] = {"", "2", "tru", "y", "truex", "enabled"};
    bool b;
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        b = false;
        ck_assert_int_eq(units_parse_bool(yes[i], &b), 0);
        ck_assert(b);
    }
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        b = true;
        ck_assert_int_eq(units_parse_bool(no[i], &b), 0);
        ck_assert(!b);
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_int_eq(units_parse_bool(bad[i], &b), -1);
}
END_TEST

START_TEST(ints)
{
    long long v;
    ck_assert_int_eq(units_parse_int("42", 0, 100, &v), 0);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(units_parse_int(" -7 ", -10, 10, &v), 0);
    ck_assert_int_eq(v, -7);
    ck_assert_int_eq(units_parse_int("100", 0, 100, &v), 0); /* bounds inclusive */
    ck_assert_int_eq(units_parse_int("9223372036854775807", 0, INT64_MAX, &v), 0);
    ck_assert_int_eq(v, INT64_MAX);
    const char *bad[] = {"", "four", "4.0", "1e3", "5x", "0x10", "- 5", "+ 5",
                         "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(units_parse_int(bad[i], LLONG_MIN, LLONG_MAX, &v) == -1, "%s", bad[i]);
    ck_assert_int_eq(units_parse_int("101", 0, 100, &v), -1);
    ck_assert_int_eq(units_parse_int("0", 1, 100, &v), -1);
}
END_TEST

START_TEST(doubles)
{
    double v;
    ck_assert_int_eq(units_parse_double("1.5", &v), 0);
    ck_assert(v == 1.5);
    ck_assert_int_eq(units_parse_double("-2", &v), 0);
    ck_assert(v == -2);
    ck_assert_int_eq(units_parse_double("1e-3", &v), 0);
    ck_assert(v == 1e-3);
    ck_assert_int_eq(units_parse_double(".25", &v), 0);
    ck_assert(v == 0.25);
    const char *bad[] = {"", "nan", "inf", "-inf", "infinity", "0x10", "1.5x", "1e999",
                         ".", "1 2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ck_assert_msg(units_parse_double(bad[i], &v) == -1, "%s", bad[i]);
}
END_TEST

START_TEST(format_duration)
{
    char buf[64];
    units_format_duration(33 * MP_PS_PER_MS, buf, sizeof buf);
    ck_assert_str_eq(buf, "33 ms");
    units_format_duration(1500 * MP_PS_PER_MS, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.5 s");
    units_format_duration(250, buf, sizeof buf);
    ck_assert_str_eq(buf, "250 ps");
    units_format_duration(0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0 ps");
    units_format_duration(33333333333, buf, sizeof buf); /* 33.333 ms */
    ck_assert_str_eq(buf, "33.33 ms");
    units_format_duration(-2000, buf, sizeof buf);
    ck_assert_str_eq(buf, "-2 ns");
    units_format_duration(5000 * MP_PS_PER_S, buf, sizeof buf); /* no 5e+03 */
    ck_assert_str_eq(buf, "5000 s");
    units_format_duration(2500000, buf, sizeof buf);
    ck_assert_str_eq(buf, "2.5 us");
    units_format_duration(INT64_MIN, buf, sizeof buf); /* must not overflow */
    ck_assert_str_eq(buf, "-9223372 s");
    units_format_duration(12345, buf, 4); /* truncated, still terminated */
    ck_assert_str_eq(buf, "12.");
}
END_TEST

START_TEST(format_size)
{
    char buf[64];
    units_format_size(1610612736.0, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.5 GiB");
    units_format_size(512, buf, sizeof buf);
    ck_assert_str_eq(buf, "512 B");
    units_format_size(1024, buf, sizeof buf);
    ck_assert_str_eq(buf, "1 KiB");
    units_format_size(44e9, buf, sizeof buf); /* 44e9 / 2^30 = 40.978 */
    ck_assert_str_eq(buf, "40.98 GiB");
    units_format_size(0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0 B");
    units_format_size(-2048, buf, sizeof buf);
    ck_assert_str_eq(buf, "-2 KiB");
    units_format_size(INFINITY, buf, sizeof buf);
    ck_assert_str_eq(buf, "inf");
}
END_TEST

/* Exact to the picosecond: 33 ms is 33e9 ps, 12 fraction digits of a second
 * or 6 of a microsecond; 1 ps is the last digit of either. */
START_TEST(format_exact)
{
    char buf[64];
    units_format_seconds_exact(33 * MP_PS_PER_MS, buf, sizeof buf);
    ck_assert_str_eq(buf, "0.033000000000");
    units_format_seconds_exact(2 * MP_PS_PER_S + 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "2.000000000001");
    units_format_seconds_exact(-1, buf, sizeof buf);
    ck_assert_str_eq(buf, "-0.000000000001");
    /* Trace ticks, 1/1024 µs: 33 ms = 33,000 µs = 33,792,000 ticks, written
     * "33000"; 1,500,001 ps × 128 / 125,000 = 1536.001 → 1536 ticks = 1.5 µs;
     * 1 ns = 1.024 ticks → 1 tick = 10^10/1024 × 10^-10 µs = "0.0009765625". */
    units_format_trace_ticks(units_trace_ticks(33 * MP_PS_PER_MS), buf, sizeof buf);
    ck_assert_str_eq(buf, "33000");
    ck_assert_int_eq(units_trace_ticks(1500001), 1536);
    units_format_trace_ticks(1536, buf, sizeof buf);
    ck_assert_str_eq(buf, "1.5");
    units_format_trace_ticks(units_trace_ticks(1000), buf, sizeof buf);
    ck_assert_str_eq(buf, "0.0009765625");
    /* A span from its rounded boundaries: [1 µs, 3 µs) is ts 1, dur 2 (2048
     * ticks); [500 ps, 1000 ps) rounds both ends to tick 1: nothing. */
    char dur[64];
    ck_assert_int_eq(units_format_trace_span(MP_PS_PER_US, 3 * MP_PS_PER_US, buf, dur, sizeof buf), 2048);
    ck_assert_str_eq(buf, "1");
    ck_assert_str_eq(dur, "2");
    ck_assert_int_eq(units_format_trace_span(500, 1000, buf, dur, sizeof buf), 0);
    /* -2^63 ps = -9223372.036854775808 s: no overflow taking its magnitude */
    units_format_seconds_exact(INT64_MIN, buf, sizeof buf);
    ck_assert_str_eq(buf, "-9223372.036854775808");
}
END_TEST

START_TEST(expectations_name_examples)
{
    /* Messages quote these, so each must show a form its parser accepts. */
    mp_time t;
    double v;
    bool b;
    ck_assert_ptr_nonnull(strstr(units_expect_duration, "1ms"));
    ck_assert_int_eq(units_parse_duration("1ms", &t), 0);
    ck_assert_ptr_nonnull(strstr(units_expect_size, "16GiB"));
    ck_assert_int_eq(units_parse_size("16GiB", &v), 0);
    ck_assert_ptr_nonnull(strstr(units_expect_bandwidth, "400Gb/s"));
    ck_assert_int_eq(units_parse_bandwidth("400Gb/s", &v), 0);
    ck_assert_ptr_nonnull(strstr(units_expect_bool, "true"));
    ck_assert_int_eq(units_parse_bool("true", &b), 0);
}
END_TEST

Suite *units_suite(void)
{
    Suite *s = suite_create("units");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, duration_units);
    tcase_add_test(tc, duration_rounding);
    tcase_add_test(tc, duration_limits);
    tcase_add_test(tc, duration_rejects);
    tcase_add_test(tc, size_units);
    tcase_add_test(tc, size_rejects);
    tcase_add_test(tc, bandwidth_units);
    tcase_add_test(tc, bandwidth_rejects);
    tcase_add_test(tc, bools);
    tcase_add_test(tc, ints);
    tcase_add_test(tc, doubles);
    tcase_add_test(tc, expectations_name_examples);
    suite_add_tcase(s, tc);
    TCase *tf = tcase_create("format");
    tcase_add_test(tf, format_duration);
    tcase_add_test(tf, format_size);
    tcase_add_test(tf, format_exact);
    suite_add_tcase(s, tf);
    return s;
}

MP_TEST_MAIN(units_suite)
