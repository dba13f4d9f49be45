/* check_coll_curve.c — the measured busbw curves (hardware/collectives.csv,
 * hardware/coll_curve.h) and the collectives they price
 * (sim/strategy/collective.c): the golden cases of calibration.md §5a/§5b
 * by nccl-tests' formula, the interpolation and its clamps by hand, groups
 * smaller than the measured one, systems without a curve unchanged, fast
 * against detailed, and the table's bad input.
 *
 * Everywhere: T = S · factor(n) / busbw, factor 2(n−1)/n for all-reduce
 * ((n−1)/n for all-gather and reduce-scatter), S the whole buffer; the
 * simulator rounds T/steps to the picosecond per ring step (steps = 2(n−1)
 * or n−1), so a time is held to its formula within a nanosecond. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hardware/coll_curve.h"
#include "hardware/system.h"
#include "sim/strategy/collective.h"
#include "testutil.h"

#define KiB 1024.0
#define MiB (1024.0 * 1024)
#define GiB (1024.0 * 1024 * 1024)

static struct chip_catalog cat;
static struct mp_error err;

static void load(struct system *sys, const char *preset_or_ini, int chips)
{
    if (!cat.n) ck_assert_int_eq(chip_catalog_load_default(&cat, &err), MP_OK);
    int rc = system_load(sys, preset_or_ini, 0, chips, &cat, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    ck_assert_int_eq(rc, MP_OK);
}

static const int chips16[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

/* Fast time in microseconds of op on chips 0..n-1 (algorithm auto). */
static double fast_us(const struct system *sys, enum coll_op op, int n, double bytes)
{
    struct coll_spec c = { .op = op, .algo = COLL_AUTO, .chips = chips16, .n = n, .bytes = bytes,
                           .mb = -1, .stage = -1 };
    return mp_seconds(collective_time(sys, &c)) * 1e6;
}

static mp_time run_detailed(const struct system *sys, struct coll_spec *c)
{
    mp_time t;
    ck_assert_int_eq(collective_run_alone(sys, c, &t, NULL, &err), MP_OK);
    return t;
}

#define NEAR_US(got, want) \
    ck_assert_msg(fabs((got) - (want)) < 1e-3, "%s: %.6f us, want %.6f", #got, (got), (want))

/* dgx-a100, 8 GPUs, all-reduce, against calibration.md §5b (stas00, 8×A100
 * NVLink3, all_reduce_perf -n 50): 101.5 us at 4 MiB, 276.6 us at 16 MiB,
 * 8203.9 us at 1 GiB. The a100-nvlink3 curve holds §5b's busbw at those
 * sizes (72.33, 106.16, 229.04 GB/s), so T = S × 1.75 / busbw:
 *   4,194,304 × 1.75 / 72.33e9     = 101.475 us
 *   16,777,216 × 1.75 / 106.16e9   = 276.565 us
 *   1,073,741,824 × 1.75 / 229.04e9 = 8204.02 us
 * each within 0.1% of the measured time (busbw is printed to 4 digits).
 * §5a is a second A100 node (Azure, NCCL 2.18.5): 109.22 GB/s at 16M
 * (268.8 us) and 228.10 at 1G (8237.7 us); the curve, built on §5b there,
 * lands within 3% and 0.5% of it. */
START_TEST(a100_golden_cases)
{
    struct system sys;
    load(&sys, "dgx-a100", 8);
    ck_assert(sys.curve.present);
    ck_assert_str_eq(sys.curve.name, "a100-nvlink3");
    double t4 = fast_us(&sys, COLL_ALL_REDUCE, 8, 4 * MiB);
    double t16 = fast_us(&sys, COLL_ALL_REDUCE, 8, 16 * MiB);
    double t1g = fast_us(&sys, COLL_ALL_REDUCE, 8, GiB);
    NEAR_US(t4, 4194304 * 1.75 / 72.33e9 * 1e6);
    NEAR_US(t16, 16777216 * 1.75 / 106.16e9 * 1e6);
    NEAR_US(t1g, 1073741824 * 1.75 / 229.04e9 * 1e6);
    ck_assert(fabs(t4 / 101.5 - 1) < 0.001);
    ck_assert(fabs(t16 / 276.6 - 1) < 0.001);
    ck_assert(fabs(t1g / 8203.9 - 1) < 0.001);
    ck_assert(fabs(t16 / (16777216 * 1.75 / 109.22e9 * 1e6) - 1) < 0.03);
    ck_assert(fabs(t1g / (1073741824 * 1.75 / 228.10e9 * 1e6) - 1) < 0.005);
    system_release(&sys);
}
END_TEST

/* dgx-h100 against calibration.md §5a (Azure, 8×H100, NCCL 2.18.5, NVLS):
 * 234.45 GB/s at 16M, 466.35 at 1G:
 *   16,777,216 × 1.75 / 234.45e9 = 125.229 us
 *   1,073,741,824 × 1.75 / 466.35e9 = 4029.15 us
 * (today's 370 GB/s alpha-beta gave 14 × (1.5 us + 2 MiB / 370 GB/s) =
 * 100.35 us at 16M: 20% less time). */
START_TEST(h100_golden_cases)
{
    struct system sys;
    load(&sys, "dgx-h100", 8);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, 16 * MiB), 16777216 * 1.75 / 234.45e9 * 1e6);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, GiB), 1073741824 * 1.75 / 466.35e9 * 1e6);
    ck_assert(fabs(fast_us(&sys, COLL_ALL_REDUCE, 8, 16 * MiB) - 125.229) < 0.01);
    system_release(&sys);
}
END_TEST

/* Between two points the time is linear in size. A100 between 4 MiB (S/busbw
 * = 4194304 / 72.33e9 = 57.9885 us) and 16 MiB (16777216 / 106.16e9 =
 * 158.0371 us); 10 MiB is halfway in size: S/busbw = (57.9885 + 158.0371)/2
 * = 108.0128 us, busbw = 10485760 / 108.0128 us = 97.078 GB/s, and the
 * 8-GPU all-reduce T = 1.75 × 108.0128 = 189.022 us. */
START_TEST(interpolation_midpoint_by_hand)
{
    struct system sys;
    load(&sys, "dgx-a100", 8);
    double half = (4194304 / 72.33e9 + 16777216 / 106.16e9) / 2;
    ck_assert_double_eq_tol(coll_curve_busbw(&sys.curve, CURVE_ALL_REDUCE, 10 * MiB),
                            10485760 / half, 1);
    ck_assert_double_eq_tol(10485760 / half / 1e9, 97.078, 0.001);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, 10 * MiB), 1.75 * half * 1e6);
    system_release(&sys);
}
END_TEST

/* Below the smallest point the time is that point's (the latency floor):
 * A100's smallest is §5b's 32 KB at 1.31 GB/s, 32768 × 1.75 / 1.31e9 =
 * 43.7735 us (measured 43.83), so 1 KiB and 8 B take that too. Above the
 * largest (16 GiB, 234.89 GB/s) busbw stays: 64 GiB takes
 * 68,719,476,736 × 1.75 / 234.89e9 = 511,980 us. */
START_TEST(clamped_below_and_above)
{
    struct system sys;
    load(&sys, "dgx-a100", 8);
    double floor_us = 32768 * 1.75 / 1.31e9 * 1e6;
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, 32 * KiB), floor_us);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, KiB), floor_us);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, 8), floor_us);
    ck_assert_double_eq_tol(coll_curve_busbw(&sys.curve, CURVE_ALL_REDUCE, 8), 1.31e9 * 8 / 32768,
                            1e-3);
    ck_assert_double_eq_tol(coll_curve_busbw(&sys.curve, CURVE_ALL_REDUCE, 64 * GiB), 234.89e9, 1);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, 64 * GiB), 68719476736.0 * 1.75 / 234.89e9 * 1e6);
    system_release(&sys);
}
END_TEST

/* All-gather and reduce-scatter read the all-reduce curve at the same S, no
 * faster than their own rows. A100 (no rows of its own): a reduce-scatter of
 * 16 MiB is half the all-reduce, 16777216 × 0.875 / 106.16e9 = 138.283 us.
 * H200: all-gather capped at §5c's 361.4 GB/s (ring; NVLS helps all-reduce
 * only): at 1 GiB the all-reduce curve's 467.58 is capped, T = 1073741824 ×
 * 0.875 / 361.4e9 = 2599.68 us; at 16 MiB the curve's 240.41 is below the
 * cap, T = 16777216 × 0.875 / 240.41e9 = 61.063 us. */
START_TEST(gather_and_scatter_on_the_curve)
{
    struct system sys;
    load(&sys, "dgx-a100", 8);
    NEAR_US(fast_us(&sys, COLL_REDUCE_SCATTER, 8, 16 * MiB), 16777216 * 0.875 / 106.16e9 * 1e6);
    NEAR_US(fast_us(&sys, COLL_ALL_GATHER, 8, 16 * MiB), 16777216 * 0.875 / 106.16e9 * 1e6);
    system_release(&sys);
    load(&sys, "dgx-h200", 8);
    NEAR_US(fast_us(&sys, COLL_ALL_GATHER, 8, GiB), 1073741824 * 0.875 / 361.4e9 * 1e6);
    NEAR_US(fast_us(&sys, COLL_REDUCE_SCATTER, 8, GiB), 1073741824 * 0.875 / 362.9e9 * 1e6);
    NEAR_US(fast_us(&sys, COLL_ALL_GATHER, 8, 16 * MiB), 16777216 * 0.875 / 240.41e9 * 1e6);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, GiB), 1073741824 * 1.75 / 467.58e9 * 1e6);
    system_release(&sys);
}
END_TEST

/* Rows on fewer GPUs are ceilings for groups of that many (calibration.md
 * §5c: 8×H200 all-reduce at 8 GiB, 363.3 GB/s on 4 GPUs, 460.0 on 7; NVLS
 * gains with the count). 4 H200s, 8 GiB: the 8-GPU curve at 16 GiB gives
 * 479.98, capped at 363.3: T = 8589934592 × 1.5 / 363.3e9 = 35,466.3 us.
 * 7: 8589934592 × (12/7) / 460.0e9 = 32,012.2 us. 2 GPUs, below every
 * measured count: the smallest's ceiling, 363.3 (a ring's busbw, as NVLS
 * gives nothing at 4). 8: no ceiling, 479.98. Small messages stay under
 * the ceilings: 4 H200s at 16 MiB read the curve at 32 MiB, S/busbw =
 * 69.786 us (16 MiB / 240.41 GB/s) + (1/7) × (325.41 − 69.786) us (128 MiB
 * / 412.45 GB/s) = 106.30 us, busbw 315.65 GB/s, T = 16777216 × 1.5 /
 * 315.65e9 = 79.73 us. */
START_TEST(fewer_gpu_ceilings_by_hand)
{
    struct system sys;
    load(&sys, "dgx-h200", 8);
    ck_assert_int_eq(sys.curve.n_caps, 4);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 4, 8 * GiB), 8589934592.0 * 1.5 / 363.3e9 * 1e6);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 7, 8 * GiB),
            8589934592.0 * (12.0 / 7) / 460.0e9 * 1e6);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 2, 8 * GiB), 8589934592.0 * 1.0 / 363.3e9 * 1e6);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, 8 * GiB), 8589934592.0 * 1.75 / 479.98e9 * 1e6);
    double t16 = 16777216 / 240.41e9, t128 = 134217728 / 412.45e9;
    double s_b = t16 + (33554432.0 - 16777216) / (134217728 - 16777216) * (t128 - t16);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 4, 16 * MiB), 16777216 * 1.5 / (33554432 / s_b) * 1e6);
    ck_assert(fabs(fast_us(&sys, COLL_ALL_REDUCE, 4, 16 * MiB) - 79.73) < 0.01);
    system_release(&sys);
}
END_TEST

/* A group of n < 8 reads the 8-GPU curve at S · (8/n)/k, scaled by k.
 * Switch (k = 1): 4 A100s, 8 MiB all-reduce = the 16 MiB point's busbw,
 * T = 8388608 × 1.5 / 106.16e9 = 118.53 us; 2 A100s at 16 KiB read 64 KiB,
 * S/busbw = 25.0137 + (1/31) × (28.9502 − 25.0137) us = 25.1407 us (busbw
 * 65536 / 25.1407 us), T = 16384 × 1 / busbw = 6.2852 us.
 * Full mesh (k = (n−1)/7): 4 MI300X, 8 GiB, read at 8 GiB × 2 × 7/3 (past
 * the last point: 316.82 GB/s), busbw = 3/7 × 316.82 = 135.78 GB/s, T =
 * 8589934592 × 1.5 / 135.78e9 = 94,895 us. */
START_TEST(smaller_groups_by_hand)
{
    struct system sys;
    load(&sys, "dgx-a100", 8);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 4, 8 * MiB), 8388608 * 1.5 / 106.16e9 * 1e6);
    double t32 = 32768 / 1.31e9, t1m = 1048576 / 36.22e9;
    double s_b = t32 + (65536.0 - 32768) / (1048576 - 32768) * (t1m - t32);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 2, 16 * KiB), 16384 / (65536 / s_b) * 1e6);
    ck_assert(fabs(fast_us(&sys, COLL_ALL_REDUCE, 2, 16 * KiB) - 6.2852) < 0.001);
    system_release(&sys);
    load(&sys, "mi300x-node", 8);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 4, 8 * GiB),
            8589934592.0 * 1.5 / (3.0 / 7 * 316.82e9) * 1e6);
    system_release(&sys);
}
END_TEST

/* Systems and groups the curve does not cover keep alpha-beta.
 * dgx-h800 has no curve: 8-chip ring all-reduce of 16 MiB on its switch
 * (160 GB/s, 1.5 us) = 14 × (1.5 us + 2 MiB / 160 GB/s) = 14 × (1.5 +
 * 13.1072) us = 204.50 us. On dgx-a100 a group across two nodes
 * hierarchically takes the curve only inside each node: 16 chips, 16 MiB =
 * reduce-scatter in the node (16777216 × 0.875 / 106.16e9 = 138.28 us),
 * all-reduce of 2 MiB over 2 nodes on the 23.5 GB/s NICs (2 × (5 us +
 * 1 MiB / 23.5 GB/s) = 99.24 us), all-gather as the reduce-scatter:
 * 375.81 us. `auto` takes the ring on every rail instead, faster here:
 * 8 rings of 2 MiB, 30 steps each the slower of a NIC hop of the piece
 * 16 MiB / (16 × 8) = 128 KiB (5 us + 131072 / 23.5 GB/s = 10.58 us) and
 * a scale-up hop of 7 pieces (1.5 us + 917504 / 230 GB/s = 5.49 us):
 * 30 × 10.58 = 317.33 us. A node of 16 with an 8-GPU curve: a 16-chip group inside it
 * is alpha-beta (30 × (1 us + 1 MiB / 100 GB/s) = 344.57 us), an 8-chip
 * one the curve. */
START_TEST(without_a_curve_alpha_beta)
{
    struct system sys;
    load(&sys, "dgx-h800", 8);
    ck_assert(!sys.curve.present);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, 16 * MiB), 14 * (1.5 + 2097152 / 160e9 * 1e6));
    char model[160];
    ck_assert_str_eq(collective_model(&sys, model, sizeof model), "alpha-beta");
    system_release(&sys);

    load(&sys, "dgx-a100", 16);
    double in = 16777216 * 0.875 / 106.16e9 * 1e6, across = 2 * (5 + 1048576 / 23.5e9 * 1e6);
    double rails = 30 * (5 + 131072 / 23.5e9 * 1e6);
    ck_assert(rails < 2 * in + across && 1.5 + 917504 / 230e9 * 1e6 < 5 + 131072 / 23.5e9 * 1e6);
    ck_assert(fabs(fast_us(&sys, COLL_ALL_REDUCE, 16, 16 * MiB) - rails) < 2e-3);
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .chips = chips16, .n = 16, .bytes = 16 * MiB };
    ck_assert_int_eq(collective_resolve(&sys, &c), COLL_RING);
    ck_assert_str_eq(collective_priced_by(&sys, &c, model, sizeof model),
                     "alpha-beta, a ring on every NIC rail");
    c.algo = COLL_HIERARCHICAL;
    ck_assert(fabs(mp_seconds(collective_time(&sys, &c)) * 1e6 - (2 * in + across)) < 2e-3);
    ck_assert_str_eq(collective_priced_by(&sys, &c, model, sizeof model),
                     "measured busbw curve a100-nvlink3 inside each node, alpha-beta across");
    ck_assert_str_eq(collective_model(&sys, model, sizeof model),
                     "measured busbw curve a100-nvlink3 (hardware/collectives.csv)");
    /* What prices one collective: hierarchical inside one node is a ring (the
     * curve), a tree all-gather too; a tree all-reduce, an all-to-all and a
     * chunked ring are alpha-beta. */
    struct coll_spec one = { .op = COLL_ALL_REDUCE, .algo = COLL_HIERARCHICAL, .chips = chips16,
                             .n = 8, .bytes = 16 * MiB };
    ck_assert_str_eq(collective_priced_by(&sys, &one, model, sizeof model),
                     "measured busbw curve a100-nvlink3");
    NEAR_US(mp_seconds(collective_time(&sys, &one)) * 1e6, 16777216 * 1.75 / 106.16e9 * 1e6);
    one.algo = COLL_TREE;
    ck_assert_str_eq(collective_priced_by(&sys, &one, model, sizeof model), "alpha-beta");
    one.op = COLL_ALL_GATHER;
    ck_assert_str_eq(collective_priced_by(&sys, &one, model, sizeof model),
                     "measured busbw curve a100-nvlink3");
    one.op = COLL_ALL_TO_ALL;
    one.algo = COLL_AUTO;
    ck_assert_str_eq(collective_priced_by(&sys, &one, model, sizeof model), "alpha-beta");
    one.op = COLL_ALL_REDUCE;
    one.chunks = 4;
    ck_assert_str_eq(collective_priced_by(&sys, &one, model, sizeof model), "alpha-beta");
    system_release(&sys);

    const char *big = mp_test_tmpfile(".ini", "[system]\nchip = textbook\nchips_per_node = 16\n"
                                              "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\n"
                                              "latency = 1us\nbusbw_curve = a100-nvlink3\n");
    load(&sys, big, 16);
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 16, 16 * MiB), 30 * (1 + 1048576 / 100e9 * 1e6));
    NEAR_US(fast_us(&sys, COLL_ALL_REDUCE, 8, 16 * MiB), 16777216 * 1.75 / 106.16e9 * 1e6);
    /* Explicit tree and halving-doubling stay alpha-beta: 2·log2(8)·1 us +
     * 2 × 16 MiB / 100 GB/s; 2 × (8 + 4 + 2 MiB at 100 GB/s + 3 us). */
    struct coll_spec t = { .op = COLL_ALL_REDUCE, .algo = COLL_TREE, .chips = chips16, .n = 8,
                           .bytes = 16 * MiB };
    NEAR_US(mp_seconds(collective_time(&sys, &t)) * 1e6, 6 + 2 * 16777216 / 100e9 * 1e6);
    t.algo = COLL_HALVING_DOUBLING;
    NEAR_US(mp_seconds(collective_time(&sys, &t)) * 1e6, 2 * (3 + 14680064 / 100e9 * 1e6));
    system_release(&sys);
}
END_TEST

/* The detailed expansion sends each ring step at the curve's step time:
 * on an idle fabric it lands exactly on the fast time, expanded or compact,
 * for every op, in a node, a smaller group and hierarchically. */
START_TEST(detailed_equals_fast_on_the_curve)
{
    const char *presets[] = { "dgx-a100", "dgx-h200", "mi300x-node" };
    for (int p = 0; p < 3; p++) {
        struct system sys;
        load(&sys, presets[p], 16);
        enum coll_op ops[3] = { COLL_ALL_REDUCE, COLL_ALL_GATHER, COLL_REDUCE_SCATTER };
        int ns[3] = { 8, 4, 16 };
        double sizes[3] = { 4 * KiB, 50 * MiB, 2 * GiB };
        for (int o = 0; o < 3; o++)
            for (int k = 0; k < 3; k++)
                for (int b = 0; b < 3; b++) {
                    struct coll_spec c = { .op = ops[o], .algo = COLL_AUTO, .chips = chips16,
                                           .n = ns[k], .bytes = sizes[b], .mb = -1, .stage = -1 };
                    mp_time fast = collective_time(&sys, &c);
                    ck_assert_msg(run_detailed(&sys, &c) == fast, "%s %s n %d S %g", presets[p],
                                  collective_op_name(ops[o]), ns[k], sizes[b]);
                    c.compact = true;
                    ck_assert_int_eq(run_detailed(&sys, &c), fast);
                }
        system_release(&sys);
    }
}
END_TEST

/* ---- bad input ------------------------------------------------------------ */

static const char header[] = "curve,collective,gpus,size_bytes,busbw_gbs,source\n";

/* Load a table with `rows` after the header; expect failure naming `want`. */
static void bad_table(const char *rows, const char *name, const char *want1, const char *want2)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s", header, rows);
    const char *path = mp_test_tmpfile(".csv", text);
    struct coll_curve c;
    struct mp_error e = { 0 };
    ck_assert_int_eq(coll_curve_load(&c, path, name, &e), MP_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, path) && strstr(e.msg, want1) && strstr(e.msg, want2),
                  "message '%s' lacks '%s' / '%s'", e.msg, want1, want2);
    ck_assert(!strchr(e.msg, '\n'));
    ck_assert(!c.present);
}

START_TEST(bad_tables)
{
    /* A good one reads back. */
    const char *good = mp_test_tmpfile(".csv", "curve,collective,gpus,size_bytes,busbw_gbs,source\n"
                                               "x,all_reduce,8,1024,1,a\nx,all_reduce,8,2048,2,b\n");
    struct coll_curve c;
    ck_assert_int_eq(coll_curve_load(&c, good, "x", &err), MP_OK);
    ck_assert_int_eq(c.op[CURVE_ALL_REDUCE].n, 2);
    ck_assert_int_eq(c.gpus, 8);
    /* Malformed row: columns short of the header's. */
    bad_table("x,all_reduce,8,1024,1\n", "x", ":2:", "expected 6 columns");
    /* Sizes not increasing. */
    bad_table("x,all_reduce,8,2048,1,a\nx,all_reduce,8,1024,2,b\n", "x", ":3: column size_bytes",
              "increasing");
    bad_table("x,all_reduce,8,2048,1,a\nx,all_reduce,8,2048,2,b\n", "x", ":3: column size_bytes",
              "line 2 has 2048");
    /* busbw ≤ 0, not a number. */
    bad_table("x,all_reduce,8,1024,0,a\n", "x", ":2: column busbw_gbs", "above 0");
    bad_table("x,all_reduce,8,1024,-3,a\n", "x", ":2: column busbw_gbs", "got '-3'");
    bad_table("x,all_reduce,8,1024,fast,a\n", "x", ":2: column busbw_gbs", "got 'fast'");
    /* Sizes that are not whole bytes; a GPU count of 1; two counts in a curve. */
    bad_table("x,all_reduce,8,1.5,1,a\n", "x", ":2: column size_bytes", "whole number");
    bad_table("x,all_reduce,1,1024,1,a\n", "x", ":2: column gpus", "2 to");
    bad_table("x,all_reduce,4,1024,1,a\nx,all_reduce,8,2048,1,a\n", "x", ":3: column gpus",
              "expected at most 4");
    bad_table("x,all_reduce,8,1024,1,a\nx,all_reduce,4,2048,1,a\nx,all_reduce,4,1024,1,a\n",
              "x", ":4: column size_bytes", "on 4 GPUs");
    bad_table("x,all_gather,8,1024,1,a\nx,all_reduce,4,2048,1,a\n", "x",
              ":2: curve x has no all_reduce row on 8 GPUs", "expected");
    /* Unknown collective, empty source, an all-gather without all-reduce rows. */
    bad_table("x,all_to_all,8,1024,1,a\n", "x", ":2: column collective", "all_reduce, all_gather");
    bad_table("x,all_reduce,8,1024,1,\n", "x", ":2: column source", "empty");
    bad_table("x,all_gather,8,1024,1,a\n", "x", ":2: curve x has no all_reduce row", "expected");
    /* Unknown curve: the known ones listed. */
    bad_table("x,all_reduce,8,1024,1,a\ny,all_reduce,8,1024,1,a\n", "z", "no curve 'z'",
              "known: x, y");
    /* A header with an unknown column. */
    char text[256];
    snprintf(text, sizeof text, "curve,collective,gpus,size,busbw_gbs,source\n");
    const char *path = mp_test_tmpfile(".csv", text);
    struct mp_error e = { 0 };
    ck_assert_int_eq(coll_curve_load(&c, path, "x", &e), MP_ERR_INPUT);
    ck_assert(strstr(e.msg, ":1: header") && strstr(e.msg, "got 'size'"));
}
END_TEST

/* A system INI that must be refused: exit MP_ERR_INPUT with every fragment
 * in the message (the file's path is always among them). */
static void bad_system(const char *text, int chips, const char *want1, const char *want2)
{
    if (!cat.n) ck_assert_int_eq(chip_catalog_load_default(&cat, &err), MP_OK);
    struct system sys;
    struct mp_error e = { 0 };
    const char *ini = mp_test_tmpfile(".ini", text);
    ck_assert_int_eq(system_load(&sys, ini, 0, chips, &cat, &e), MP_ERR_INPUT);
    ck_assert_msg(strstr(e.msg, ini) && strstr(e.msg, want1) && strstr(e.msg, want2), "%s",
                  e.msg);
    system_release(&sys);
}

/* The preset side: an unknown curve is the INI's error (file:line, key, the
 * known names); a curve on a topology it was not measured on is refused; so
 * is an auto_algorithm other than fastest or ring, or one without a
 * scale-out fabric. */
START_TEST(bad_system_keys)
{
    bad_system("[system]\nchip = textbook\nchips_per_node = 8\n"
               "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\n"
               "latency = 1us\nbusbw_curve = a100-nvlink9\n",
               8, ":8: [scaleup] busbw_curve: no curve 'a100-nvlink9'", "a100-nvlink3");
    bad_system("[system]\nchip = textbook\nchips_per_node = 8\n"
               "[scaleup]\ntopology = ring\nbandwidth = 100GB/s\n"
               "latency = 1us\nbusbw_curve = a100-nvlink3\n",
               8, ":8: [scaleup] busbw_curve: expected only with topology switch or full_mesh",
               "got topology ring");
    bad_system("[system]\nchip = textbook\nchips_per_node = 1\n"
               "[scaleout]\ntopology = fat_tree\nbandwidth = 50GB/s\nlatency = 5us\n"
               "auto_algorithm = tree\n",
               8, ":8: [scaleout] auto_algorithm: expected fastest or ring", "got 'tree'");
    bad_system("[system]\nchip = textbook\nchips_per_node = 1\n"
               "[scaleout]\ntopology = none\nauto_algorithm = ring\n",
               1, ":6: [scaleout] auto_algorithm: expected only with a scale-out fabric",
               "got topology none");
    /* [scaleout] busbw_curve: beside rails or a fat-tree and a scale-up
     * switch, a known curve, measured across whole nodes of this system. */
    bad_system("[system]\nchip = textbook\nchips_per_node = 8\n"
               "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\nlatency = 1us\n"
               "[scaleout]\ntopology = chain\nbandwidth = 50GB/s\nlatency = 5us\n"
               "busbw_curve = b200-efa\n",
               16, ":12: [scaleout] busbw_curve: expected only with topology fat_tree or rail",
               "got topology chain and [scaleup] switch");
    bad_system("[system]\nchip = textbook\nchips_per_node = 8\n"
               "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\nlatency = 1us\n"
               "[scaleout]\ntopology = fat_tree\nbandwidth = 50GB/s\nlatency = 5us\n"
               "busbw_curve = b200-efa9\n",
               16, ":12: [scaleout] busbw_curve: no curve 'b200-efa9'", "b200-efa");
    bad_system("[system]\nchip = textbook\nchips_per_node = 8\n"
               "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\nlatency = 1us\n"
               "[scaleout]\ntopology = fat_tree\nbandwidth = 50GB/s\nlatency = 5us\n"
               "busbw_curve = b200-nvlink5\n",
               16, ":12: [scaleout] busbw_curve: curve 'b200-nvlink5' was measured on 8 GPUs",
               "expected a multiple of chips_per_node = 8 above it");
}
END_TEST

/* Every shipped curve: sizes increase, busbw > 0, and the measured time
 * S / busbw never falls as S grows (what makes the interpolated time grow
 * with S); every row of the file names a calibration.md section. */
/* p6-b200's figures without its measured across-node curve: the
 * alpha-beta ring on every rail, 6 us + piece / 48.4 GB/s a NIC step. */
static const char p6_alpha_beta[] =
    "[system]\nchip = b200\nchips_per_node = 8\n"
    "[scaleup]\ntopology = switch\nbandwidth = 682.2GB/s\nlatency = 1.5us\n"
    "busbw_curve = b200-nvlink5\n"
    "[scaleout]\ntopology = fat_tree\nbandwidth = 48.4GB/s\nlatency = 6us\n"
    "auto_algorithm = ring\n";

/* Across nodes, against calibration.md §5d: 4 nodes of 8×B200 (p6-b200,
 * 8 × 50 GB/s EFA), all-reduce busbw 361.99 / 377.34 / 381.80 GB/s at 1, 4
 * and 16 GiB. The alpha-beta ring on every rail, by hand: 8 rings of S/8,
 * 62 steps of the NIC hop of the piece p = S/256 (6 us + p / 48.4 GB/s; the
 * scale-up hop of 7 pieces at 682.2 GB/s is the shorter), so at 1 GiB 62 ×
 * (6 + 4194304 / 48.4e9 s) = 5744.87 us, busbw S × 1.9375 / T = 362.1 GB/s.
 * Neither the EFA bandwidth (ib_write_bw's 96.9%) nor the latency (the
 * 4-node floor at 256 KiB–1 MiB) is fitted to these sizes. Hierarchical
 * (the node-local phases on top of the rails') lands 17–21% low there,
 * which is why a tuner would take the ring there. At small sizes
 * hierarchical's 6 NIC steps would be 4.5× faster than measured (85 us at
 * 256 KiB against 382), but the 6 us per step is only consistent with a
 * ring (NCCL picked Ring on 4 EFA nodes, §5d), so auto_algorithm = ring
 * and auto is the ring at every size: at 256 KiB, 1 MiB, 4 MiB and 16 MiB
 * 62 × (6 us + S/256 / 48.4 GB/s) = 373.3 / 377.3 / 393.0 / 456.0 us,
 * busbw 1.36 / 5.39 / 20.68 / 71.29 GB/s where 1.33 / 5.37 / 18.90 /
 * 64.43 were measured (within 11%). 64 and 256 MiB stay too fast, 184 and
 * 303 GB/s against 157 and 229: the EFA bandwidth's ramp with message size,
 * which is why p6-b200 itself prices the step from the measured curve
 * (b200_efa_curve_steps below). */
START_TEST(b200_four_nodes_alpha_beta)
{
    struct system sys;
    load(&sys, mp_test_tmpfile(".ini", p6_alpha_beta), 32);
    int chips[32];
    for (int i = 0; i < 32; i++) chips[i] = i;
    static const struct { double bytes, busbw, within; } m[] = {
        { 1073741824.0, 361.99, 0.03 }, { 4294967296.0, 377.34, 0.03 },
        { 17179869184.0, 381.80, 0.03 }, { 262144.0, 1.33, 0.03 }, { 1048576.0, 5.37, 0.03 },
        { 4194304.0, 18.90, 0.10 }, { 16777216.0, 64.43, 0.11 },
    };
    for (int k = 0; k < 7; k++) {
        struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_AUTO, .chips = chips, .n = 32,
                               .bytes = m[k].bytes, .mb = -1, .stage = -1 };
        double t = mp_seconds(collective_time(&sys, &c));
        double hand = 62 * (6e-6 + m[k].bytes / 256 / 48.4e9);
        ck_assert_msg(fabs(t - hand) < 1e-9, "%.0f B: %.9f s against %.9f", m[k].bytes, t, hand);
        double busbw = m[k].bytes * 1.9375 / t / 1e9;
        ck_assert_msg(fabs(busbw / m[k].busbw - 1) < m[k].within, "%.0f B: %.1f GB/s",
                      m[k].bytes, busbw);
        ck_assert_int_eq(collective_resolve(&sys, &c), COLL_RING);
        if (m[k].bytes < 1e9) {
            /* Small buffers: hierarchical alone is the 4.5x too fast figure. */
            c.algo = COLL_HIERARCHICAL;
            double hier = m[k].bytes * 1.9375 / mp_seconds(collective_time(&sys, &c)) / 1e9;
            ck_assert_msg(hier > 2 * m[k].busbw, "%.0f B: hierarchical %.2f GB/s", m[k].bytes,
                          hier);
            continue;
        }
        c.algo = COLL_HIERARCHICAL;
        double hier = m[k].bytes * 1.9375 / mp_seconds(collective_time(&sys, &c)) / 1e9;
        ck_assert_msg(hier / m[k].busbw - 1 < -0.14, "%.0f B: hierarchical %.1f GB/s", m[k].bytes,
                      hier);
    }
    system_release(&sys);
}
END_TEST

/* §5d's 4-node all-reduce (32 GPUs) as measured, from S0 / busbw(S0) (the
 * curve's own time, linear in S between its rows). */
static double efa_time(double s0)
{
    static const double size[] = { 262144.0, 1048576.0, 4194304.0, 16777216.0, 67108864.0,
                                   268435456.0, 1073741824.0, 4294967296.0, 17179869184.0 };
    static const double bw[] = { 1.33, 5.37, 18.90, 64.43, 156.74, 229.09, 361.99, 377.34,
                                 381.80 };
    if (s0 <= size[0]) return size[0] * 1.9375 / (bw[0] * 1e9);
    for (int i = 1; i < 9; i++)
        if (s0 <= size[i]) {
            double a = size[i - 1] * 1.9375 / (bw[i - 1] * 1e9), b = size[i] * 1.9375 / (bw[i] * 1e9);
            return a + (b - a) * (s0 - size[i - 1]) / (size[i] - size[i - 1]);
        }
    return s0 * 1.9375 / (bw[8] * 1e9);
}

/* p6-b200 as shipped ([scaleout] busbw_curve = b200-efa): the ring on every
 * rail takes each node-crossing step from §5d's 4-node measurement at the
 * piece that step moves. That ring was 62 steps of pieces S0/256, so a
 * piece p costs T0(256·p)/62. On the 32 GPUs measured every size gives
 * §5d's busbw back (256 KiB … 16 GiB, within rounding); 32 KiB stays at the
 * 256 KiB floor (381.88 us; §5d's own 32 KiB row, 6.3 ms, is left out of
 * the table: a time that falls as the size grows). By hand elsewhere:
 * 64 GPUs in 8 nodes at 1 GiB: piece 1 GiB/512 = 2 MiB, T0(512 MiB) =
 * 2270.26 + (5747.05 − 2270.26)/3 = 3429.19 us, 126 steps of T0/62 =
 * 6969.0 us; 32 GPUs as 4 in each of 8 nodes at 256 MiB: piece 2 MiB
 * again (the NVLink part, 3 pieces at 682.2 GB/s, is the shorter), 62
 * steps of 3429.19/62 us = 3429.19 us. */
START_TEST(b200_efa_curve_steps)
{
    struct system sys;
    load(&sys, "p6-b200", 64);
    ck_assert(sys.out_curve.present && sys.out_curve.gpus == 32);
    int chips[64];
    for (int i = 0; i < 64; i++) chips[i] = i;
    static const double measured[][2] = {
        { 262144.0, 1.33 }, { 1048576.0, 5.37 }, { 4194304.0, 18.90 }, { 16777216.0, 64.43 },
        { 67108864.0, 156.74 }, { 268435456.0, 229.09 }, { 1073741824.0, 361.99 },
        { 4294967296.0, 377.34 }, { 17179869184.0, 381.80 },
    };
    for (int k = 0; k < 9; k++) {
        struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_AUTO, .chips = chips, .n = 32,
                               .bytes = measured[k][0], .mb = -1, .stage = -1 };
        double busbw = c.bytes * 1.9375 / mp_seconds(collective_time(&sys, &c)) / 1e9;
        ck_assert_msg(fabs(busbw / measured[k][1] - 1) < 1e-6, "%.0f B: %.4f GB/s", c.bytes, busbw);
        ck_assert_int_eq(collective_resolve(&sys, &c), COLL_RING);
    }
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_AUTO, .chips = chips, .n = 32,
                           .bytes = 32768, .mb = -1, .stage = -1 };
    ck_assert_msg(fabs(mp_seconds(collective_time(&sys, &c)) - efa_time(262144)) < 1e-9,
                  "32 KiB: %.9f s", mp_seconds(collective_time(&sys, &c)));
    /* 64 GPUs in 8 nodes, 1 GiB. */
    c.n = 64, c.bytes = 1073741824.0;
    double want = 126 * efa_time(512.0 * 1048576) / 62;
    ck_assert_msg(fabs(mp_seconds(collective_time(&sys, &c)) - want) < 1e-9, "%.9f s against %.9f",
                  mp_seconds(collective_time(&sys, &c)), want);
    ck_assert_msg(fabs(want - 6969.0e-6) < 0.1e-6, "%.9f", want);
    /* 4 chips in each of 8 nodes, 256 MiB. */
    int four[32];
    for (int i = 0; i < 32; i++) four[i] = (i / 4) * 8 + i % 4;
    c.chips = four, c.n = 32, c.bytes = 268435456.0;
    want = efa_time(512.0 * 1048576);
    ck_assert_msg(fabs(mp_seconds(collective_time(&sys, &c)) - want) < 1e-9, "%.9f s against %.9f",
                  mp_seconds(collective_time(&sys, &c)), want);
    system_release(&sys);
}
END_TEST

START_TEST(shipped_table_is_sound)
{
    const char *names[] = { "a100-nvlink3", "h100-nvlink4", "h200-nvlink4", "mi300x-xgmi",
                            "b200-nvlink5" };
    for (int k = 0; k < 5; k++) {
        struct coll_curve c;
        ck_assert_int_eq(coll_curve_load_default(&c, names[k], &err), MP_OK);
        ck_assert_int_eq(c.gpus, 8);
        const struct coll_curve_points *p = &c.op[CURVE_ALL_REDUCE];
        ck_assert_int_ge(p->n, 5);
        for (int i = 1; i < p->n; i++)
            ck_assert_msg(p->size[i] / p->busbw[i] >= p->size[i - 1] / p->busbw[i - 1], "%s %d",
                          names[k], i);
    }
    FILE *f = fopen(mp_test_path("hardware/collectives.csv"), "r");
    ck_assert(f);
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || !strncmp(line, "curve,", 6)) continue;
        ck_assert_msg(strstr(line, "calibration.md 5"), "%s", line);
        rows++;
    }
    fclose(f);
    ck_assert_int_ge(rows, 30);
}
END_TEST

static Suite *coll_curve_suite(void)
{
    Suite *s = suite_create("coll_curve");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a100_golden_cases);
    tcase_add_test(tc, h100_golden_cases);
    tcase_add_test(tc, interpolation_midpoint_by_hand);
    tcase_add_test(tc, clamped_below_and_above);
    tcase_add_test(tc, gather_and_scatter_on_the_curve);
    tcase_add_test(tc, smaller_groups_by_hand);
    tcase_add_test(tc, fewer_gpu_ceilings_by_hand);
    tcase_add_test(tc, without_a_curve_alpha_beta);
    tcase_add_test(tc, detailed_equals_fast_on_the_curve);
    tcase_add_test(tc, bad_tables);
    tcase_add_test(tc, bad_system_keys);
    tcase_add_test(tc, b200_four_nodes_alpha_beta);
    tcase_add_test(tc, b200_efa_curve_steps);
    tcase_add_test(tc, shipped_table_is_sound);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(coll_curve_suite)
