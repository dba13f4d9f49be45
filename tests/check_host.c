/* check_host.c — the host tier of a system ([host] in hardware/systems/NAME.ini,
 * TEAM.md interface 1) and the consumer/workstation chips and presets that
 * use it. One test per key with the value worked out by hand, then the bad
 * inputs: each names the file, the line and the key. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hardware/chip.h"
#include "hardware/system.h"
#include "testutil.h"

static struct chip_catalog cat;
static struct mp_error err;

static void setup(void)
{
    memset(&err, 0, sizeof err);
    ck_assert_msg(chip_catalog_load_default(&cat, &err) == MP_OK, "%s", err.msg);
}

static void teardown(void) { chip_catalog_release(&cat); }

#define SYS "[system]\nchip = textbook\nchips_per_node = 1\n"

/* Load an INI text; on success `s` holds the system (release it). */
static int load(const char *text, struct system *s, const char **path)
{
    *path = mp_test_tmpfile(".ini", text);
    static char copy[512];
    snprintf(copy, sizeof copy, "%s", *path);
    *path = copy;
    memset(&err, 0, sizeof err);
    int rc = system_load(s, copy, 0, 0, &cat, &err);
    if (rc) ck_assert_ptr_null(s->links); /* nothing left behind */
    return rc;
}

/* The status is MP_ERR_INPUT and the message has "FILE:LINE:" and `what`. */
static void expect_bad(const char *text, int line, const char *what)
{
    struct system s;
    const char *path;
    ck_assert_int_eq(load(text, &s, &path), MP_ERR_INPUT);
    char at[600];
    snprintf(at, sizeof at, "%s:%d:", path, line);
    ck_assert_msg(strstr(err.msg, at), "want '%s' in: %s", at, err.msg);
    ck_assert_msg(strstr(err.msg, what), "want '%s' in: %s", what, err.msg);
    system_release(&s);
}

/* ---- each key ------------------------------------------------------------- */

START_TEST(no_host_section_is_absent)
{
    struct system s;
    const char *path;
    ck_assert_int_eq(load(SYS, &s, &path), MP_OK);
    ck_assert(!s.host.present);
    ck_assert_double_eq(s.host.mem_bytes, 0);
    system_release(&s);
}
END_TEST

START_TEST(memory_is_a_size)
{
    struct system s;
    const char *path;
    /* 64GB = 64 x 10^9; 2TiB = 2 x 2^40 = 2,199,023,255,552. */
    ck_assert_int_eq(load(SYS "[host]\nmemory = 64GB\nlink = pcie4x16\n", &s, &path), MP_OK);
    ck_assert(s.host.present);
    ck_assert_double_eq(s.host.mem_bytes, 64e9);
    system_release(&s);
    ck_assert_int_eq(load(SYS "[host]\nmemory = 2TiB\nlink = pcie4x16\n", &s, &path), MP_OK);
    ck_assert_double_eq(s.host.mem_bytes, 2199023255552.0);
    system_release(&s);
}
END_TEST

START_TEST(link_kinds_have_their_sourced_defaults)
{
    /* calibration.md 3c: nvbandwidth host-to-device A100 26.28 (PCIe 4.0),
     * H100 51 (PCIe 5.0), GB200 201 (C2C); PCIe 3.0 derived: 8 GT/s x 16
     * lanes x 128/130 / 8 = 15.75 GB/s raw, x (26.28 / 31.5 = 0.834) = 13.1. */
    static const struct { const char *name; double bw; } want[] = {
        { "pcie3x16", 13.1e9 }, { "pcie4x16", 26.28e9 }, { "pcie5x16", 51e9 }, { "c2c", 201e9 },
    };
    ck_assert_double_eq_tol(15.75 * 26.28 / 31.5, 13.1, 0.05);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, SYS "[host]\nmemory = 1GB\nlink = %s\n", want[i].name);
        struct system s;
        const char *path;
        ck_assert_int_eq(load(text, &s, &path), MP_OK);
        ck_assert_double_eq(s.host.link_bw, want[i].bw);
        system_release(&s);
    }
}
END_TEST

START_TEST(link_bw_overrides_the_kind_in_any_order)
{
    struct system s;
    const char *path;
    ck_assert_int_eq(load(SYS "[host]\nmemory = 1GB\nlink = pcie5x16\nlink_bw = 52GB/s\n", &s,
                          &path), MP_OK);
    ck_assert_double_eq(s.host.link_bw, 52e9);
    system_release(&s);
    ck_assert_int_eq(load(SYS "[host]\nmemory = 1GB\nlink_bw = 100Gb/s\nlink = pcie5x16\n", &s,
                          &path), MP_OK);
    ck_assert_double_eq(s.host.link_bw, 12.5e9); /* 100 Gb/s = 12.5 GB/s */
    system_release(&s);
    /* link_bw alone is enough. */
    ck_assert_int_eq(load(SYS "[host]\nmemory = 1GB\nlink_bw = 8GB/s\n", &s, &path), MP_OK);
    ck_assert_double_eq(s.host.link_bw, 8e9);
    system_release(&s);
}
END_TEST

START_TEST(link_latency_given_or_assumed)
{
    struct system s;
    const char *path;
    ck_assert_int_eq(load(SYS "[host]\nmemory = 1GB\nlink = c2c\nlink_latency = 2.5us\n", &s,
                          &path), MP_OK);
    ck_assert_int_eq(s.host.link_latency, 2500000); /* 2.5 us in ps */
    system_release(&s);
    /* Not given: the assumed 10 us of hardware/README.md. */
    ck_assert_int_eq(load(SYS "[host]\nmemory = 1GB\nlink = c2c\n", &s, &path), MP_OK);
    ck_assert_int_eq(s.host.link_latency, 10000000);
    system_release(&s);
}
END_TEST

START_TEST(disk_and_its_bandwidth)
{
    struct system s;
    const char *path;
    ck_assert_int_eq(load(SYS "[host]\nmemory = 1GB\nlink = c2c\ndisk = 2TB\ndisk_bw = 7GB/s\n",
                          &s, &path), MP_OK);
    ck_assert_double_eq(s.host.disk_bytes, 2e12);
    ck_assert_double_eq(s.host.disk_bw, 7e9);
    system_release(&s);
    /* No disk: both zero. */
    ck_assert_int_eq(load(SYS "[host]\nmemory = 1GB\nlink = c2c\n", &s, &path), MP_OK);
    ck_assert_double_eq(s.host.disk_bytes, 0);
    ck_assert_double_eq(s.host.disk_bw, 0);
    system_release(&s);
}
END_TEST

/* ---- bad input ------------------------------------------------------------- */

START_TEST(bad_host_keys)
{
    /* Lines: 1-3 [system], 4 [host], 5 on. */
    expect_bad(SYS "[host]\nmemory = lots\nlink = c2c\n", 5, "[host] memory: expected a size");
    expect_bad(SYS "[host]\nmemory = 0GB\nlink = c2c\n", 5, "got '0GB'");
    expect_bad(SYS "[host]\nmemory = -4GB\nlink = c2c\n", 5, "[host] memory");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = pcie4\n", 6,
               "[host] link: expected pcie3x16, pcie4x16, pcie5x16 or c2c, got 'pcie4'");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = pcie4x61\n", 6, "did you mean 'pcie4x16'");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink_bw = 0GB/s\n", 6, "[host] link_bw: expected");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink_bw = fast\n", 6, "got 'fast'");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = c2c\nlink_latency = 5\n", 7,
               "[host] link_latency: expected");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = c2c\nlink_latency = -1us\n", 7,
               "[host] link_latency");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = c2c\ndisk = big\ndisk_bw = 1GB/s\n", 7,
               "[host] disk: expected a size");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = c2c\ndisk = 1TB\ndisk_bw = 0\n", 8,
               "[host] disk_bw: expected");
    /* Missing companions: reported at the section or at the lone key. */
    expect_bad(SYS "[host]\nlink = c2c\n", 4, "[host] memory: missing");
    expect_bad(SYS "[host]\n", 4, "[host] memory: missing");
    expect_bad(SYS "[host]\nmemory = 1GB\n", 4, "[host] link: missing");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = c2c\ndisk = 1TB\n", 7, "[host] disk_bw: missing");
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = c2c\ndisk_bw = 1GB/s\n", 7, "[host] disk: missing");
    /* Unknown key (with a suggestion), a key twice, a misspelt section. */
    expect_bad(SYS "[host]\nmemory = 1GB\nlink = c2c\nlink_bandwidth = 1GB/s\n", 7,
               "[host] key 'link_bandwidth'");
    expect_bad(SYS "[host]\nmemory = 1GB\nmemory = 2GB\nlink = c2c\n", 6, "first at line 5");
    expect_bad(SYS "[hots]\nmemory = 1GB\n", 4, "did you mean 'host'");
}
END_TEST

/* ---- the catalogue rows and presets of this tier ---------------------------- */

START_TEST(consumer_chips_in_si_units)
{
    /* The Ada whitepaper's RTX 4090: 165.2 TF bf16 and 330.3 fp8 dense with
     * FP32 accumulate, 24 GB, 21 Gb/s x 384 bits / 8 = 1008 GB/s. */
    const struct chip *c = chip_catalog_find(&cat, "rtx-4090");
    ck_assert_ptr_nonnull(c);
    ck_assert_double_eq(c->peak_bf16, 165.2e12);
    ck_assert_double_eq(c->peak_fp8, 330.3e12);
    ck_assert_double_eq(c->mem_bytes, 24e9);
    ck_assert_double_eq(c->mem_bw, 21.0 * 384 / 8 * 1e9);
    ck_assert_double_eq(c->scaleup_bw, 0); /* no NVLink */
    /* RTX 3090: NVLink bridge 112.5 GB/s both ways = 56.25 per direction;
     * 19.5 Gb/s x 384 / 8 = 936 GB/s; Ampere has no fp8. */
    c = chip_catalog_find(&cat, "rtx-3090");
    ck_assert_double_eq(c->scaleup_bw, 112.5e9 / 2);
    ck_assert_double_eq(c->mem_bw, 19.5 * 384 / 8 * 1e9);
    ck_assert_double_eq(c->peak_fp8, 0);
    /* RTX 3060: 28 SMs x 1.777 GHz x 1024 FLOP/clk = 50.95 TF with FP16
     * accumulate, half with FP32 (GeForce) = 25.5. */
    c = chip_catalog_find(&cat, "rtx-3060");
    ck_assert_double_eq_tol(28 * 1.777e9 * 1024 / 2, c->peak_bf16, 0.005e12); /* 25.48 */
    /* RTX 6000 Ada: 1457 TF fp8 sparse = 728.5 dense. */
    c = chip_catalog_find(&cat, "rtx-6000-ada");
    ck_assert_double_eq(c->peak_fp8, 1457e12 / 2);
    static const char *const rows[] = { "rtx-3060", "rtx-3090", "rtx-4090", "rtx-4090-laptop",
                                        "rtx-5090", "rtx-6000-ada", "l40s", "a10g", "l4" };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        c = chip_catalog_find(&cat, rows[i]);
        ck_assert_msg(c && strstr(c->source, "PCIe"), "%s: no PCIe in its source", rows[i]);
    }
}
END_TEST

START_TEST(presets_have_their_host_tier)
{
    static const struct { const char *name; int chips; double mem, link_bw; } want[] = {
        { "desktop-1x4090", 1, 64e9, 26.28e9 },
        { "desktop-1x5090", 1, 96e9, 51e9 },
        { "desktop-2x3060", 2, 64e9, 13.14e9 },  /* x8/x8: 26.28 / 2 */
        { "workstation-2x4090", 2, 128e9, 26.28e9 },
        { "workstation-2x3090-nvlink", 2, 128e9, 26.28e9 },
        { "workstation-4x6000ada", 4, 256e9, 26.28e9 },
        { "laptop-4090", 1, 32e9, 26.28e9 },
        { "dgx-a100", 8, 2e12, 26.28e9 },
        { "dgx-h100", 8, 2e12, 51e9 },
        { "dgx-h200", 8, 2e12, 52e9 },
        { "dgx-h800", 8, 2e12, 51e9 },
        { "gb200-nvl72", 72, 36 * 480e9, 201e9 },
        { "mi300x-node", 8, 2e12, 55e9 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct system s;
        ck_assert_msg(system_load(&s, want[i].name, 0, 0, &cat, &err) == MP_OK, "%s: %s",
                      want[i].name, err.msg);
        ck_assert_int_eq(s.n_chips, want[i].chips);
        ck_assert_msg(s.host.present, "%s", want[i].name);
        ck_assert_double_eq_tol(s.host.mem_bytes, want[i].mem, 1);
        ck_assert_double_eq(s.host.link_bw, want[i].link_bw);
        ck_assert_int_eq(s.host.link_latency, 10000000);
        system_release(&s);
    }
    /* Two 4090s: no NVLink and no P2P, so a GPU-to-GPU copy is a route over
     * the root complex, 20 us + bytes / 26.28 GB/s: 26.28 MB takes 1 ms. */
    struct system s;
    ck_assert_int_eq(system_load(&s, "workstation-2x4090", 0, 0, &cat, &err), MP_OK);
    int route[4];
    int n = system_route(&s, 0, 1, route, 4);
    ck_assert_int_eq(system_route_time(&s, route, n, 26.28e6), 20000000 + 1000000000);
    system_release(&s);
    /* The teaching systems have no host tier. */
    ck_assert_int_eq(system_load(&s, "textbook", 0, 0, &cat, &err), MP_OK);
    ck_assert(!s.host.present);
    system_release(&s);
}
END_TEST

Suite *host_suite(void)
{
    Suite *s = suite_create("host");
    TCase *t = tcase_create("keys");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, no_host_section_is_absent);
    tcase_add_test(t, memory_is_a_size);
    tcase_add_test(t, link_kinds_have_their_sourced_defaults);
    tcase_add_test(t, link_bw_overrides_the_kind_in_any_order);
    tcase_add_test(t, link_latency_given_or_assumed);
    tcase_add_test(t, disk_and_its_bandwidth);
    tcase_add_test(t, bad_host_keys);
    tcase_add_test(t, consumer_chips_in_si_units);
    tcase_add_test(t, presets_have_their_host_tier);
    suite_add_tcase(s, t);
    return s;
}

MP_TEST_MAIN(host_suite)
