/* check_collective.c — collectives and topologies: the alpha-beta (fast)
 * times against hand formulas, the detailed expansion against the fast
 * time on an idle fabric, nccl-tests' busbw conventions, the presets'
 * calibration against measured busbw (shared/reference/hardware.md), and
 * the torus and rail routes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/strategy/collective.h"
#include "sim/engine/engine.h"
#include "hardware/system.h"
#include "testutil.h"

#define US MP_PS_PER_US

static struct chip_catalog cat;
static struct mp_error err;

static void load(struct system *sys, const char *preset_or_ini, int chips)
{
    if (!cat.n) ck_assert_int_eq(chip_catalog_load_default(&cat, &err), MP_OK);
    int rc = system_load(sys, preset_or_ini, 0, chips, &cat, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    ck_assert_int_eq(rc, MP_OK);
}

/* 8 chips on a switch, 100 GB/s and 5 µs per route: round numbers. */
static const char *switch8(void)
{
    static char path[512];
    if (!path[0])
        snprintf(path, sizeof path, "%s",
                 mp_test_tmpfile(".ini", "[system]\nchip = textbook\nchips_per_node = 8\n"
                                         "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\n"
                                         "latency = 5us\n[scaleout]\ntopology = fat_tree\n"
                                         "bandwidth = 10GB/s\nlatency = 10us\n"));
    return path;
}

/* The detailed time of `c` alone on `sys`; *events (if given) the events
 * the engine handled. */
static mp_time run_detailed_events(const struct system *sys, struct coll_spec *c,
                                   uint64_t *events)
{
    mp_time t;
    ck_assert_int_eq(collective_run_alone(sys, c, &t, events, &err), MP_OK);
    return t;
}

static mp_time run_detailed(const struct system *sys, struct coll_spec *c)
{
    return run_detailed_events(sys, c, NULL);
}

START_TEST(bus_factors_are_nccl_tests)
{
    ck_assert_double_eq_tol(collective_bus_factor(COLL_ALL_REDUCE, 8), 1.75, 1e-15);
    ck_assert_double_eq_tol(collective_bus_factor(COLL_ALL_GATHER, 8), 0.875, 1e-15);
    ck_assert_double_eq_tol(collective_bus_factor(COLL_REDUCE_SCATTER, 4), 0.75, 1e-15);
    ck_assert_double_eq_tol(collective_bus_factor(COLL_ALL_TO_ALL, 2), 0.5, 1e-15);
    ck_assert_double_eq_tol(collective_bus_factor(COLL_BROADCAST, 8), 1, 1e-15);
    ck_assert_int_eq(collective_op_find("all_gather"), COLL_ALL_GATHER);
    ck_assert_int_eq(collective_algo_find("halving_doubling"), COLL_HALVING_DOUBLING);
    ck_assert_int_eq(collective_algo_find("mesh"), -1);
}
END_TEST

/* Hand formulas on the switch (S = 800 MB, n = 8, B = 100 GB/s, α = 5 µs,
 * so S/n moves in 1 ms):
 *   ring all-reduce   14 × (1 ms + 5 µs)
 *   ring all-gather    7 × (1 ms + 5 µs)
 *   halving-doubling reduce-scatter: 400, 200, 100 MB = 4 + 2 + 1 ms + 3α
 *   tree all-reduce   2·log2(8)·α + 2·S/B = 30 µs + 16 ms
 *   direct all-to-all α + 7 × 1 ms (the 7 messages share the up link)  */
START_TEST(fast_times_match_hand_formulas)
{
    struct system sys;
    load(&sys, switch8(), 8);
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    struct coll_spec c = { .chips = chips, .n = 8, .bytes = 800e6, .mb = -1, .stage = -1 };
    mp_time ms = MP_PS_PER_MS;
    c.op = COLL_ALL_REDUCE, c.algo = COLL_RING;
    ck_assert_int_eq(collective_time(&sys, &c), 14 * (ms + 5 * US));
    c.op = COLL_ALL_GATHER;
    ck_assert_int_eq(collective_time(&sys, &c), 7 * (ms + 5 * US));
    c.op = COLL_REDUCE_SCATTER, c.algo = COLL_HALVING_DOUBLING;
    ck_assert_int_eq(collective_time(&sys, &c), 7 * ms + 15 * US);
    c.op = COLL_ALL_REDUCE, c.algo = COLL_TREE;
    ck_assert_int_eq(collective_time(&sys, &c), 16 * ms + 30 * US);
    c.op = COLL_ALL_TO_ALL, c.algo = COLL_DIRECT;
    ck_assert_int_eq(collective_time(&sys, &c), 7 * ms + 5 * US);
    c.op = COLL_SEND_RECV;
    ck_assert_int_eq(collective_time(&sys, &c), 8 * ms + 5 * US);
    system_release(&sys);
}
END_TEST

/* On an idle fabric the expansion and the closed form agree exactly for the
 * ring, halving-doubling and direct algorithms. Direct: one comm stream
 * sends the 7 messages one after another, each holding the up link only for
 * its bytes, so their latencies overlap and the last lands α after the
 * seventh's bytes have left: α + 7 × 1 ms, the closed form. */
START_TEST(detailed_equals_fast_on_an_idle_switch)
{
    struct system sys;
    load(&sys, switch8(), 8);
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    struct { enum coll_op op; enum coll_algo algo; } cases[] = {
        { COLL_ALL_REDUCE, COLL_RING }, { COLL_REDUCE_SCATTER, COLL_RING },
        { COLL_ALL_GATHER, COLL_RING }, { COLL_ALL_REDUCE, COLL_HALVING_DOUBLING },
        { COLL_REDUCE_SCATTER, COLL_HALVING_DOUBLING }, { COLL_ALL_GATHER, COLL_HALVING_DOUBLING },
        { COLL_BROADCAST, COLL_RING }, { COLL_SEND_RECV, COLL_DIRECT },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        struct coll_spec c = { .op = cases[k].op, .algo = cases[k].algo, .chips = chips, .n = 8,
                               .bytes = 800e6, .mb = -1, .stage = -1 };
        ck_assert_msg(run_detailed(&sys, &c) == collective_time(&sys, &c), "%s %s",
                      collective_op_name(c.op), collective_algo_name(c.algo));
    }
    struct coll_spec a2a = { .op = COLL_ALL_TO_ALL, .algo = COLL_DIRECT, .chips = chips, .n = 8,
                             .bytes = 800e6, .mb = -1, .stage = -1 };
    ck_assert_int_eq(run_detailed(&sys, &a2a), collective_time(&sys, &a2a));
    ck_assert_int_eq(run_detailed(&sys, &a2a), 7 * MP_PS_PER_MS + 5 * US);
    system_release(&sys);
}
END_TEST

/* Hierarchical all-reduce over 2 nodes × 4 chips (switch 100 GB/s, 5 µs;
 * fat-tree 10 GB/s, 10 µs) of S = 800 MB: in-node reduce-scatter 3 × (200 MB
 * at 100 GB/s + 5 µs), across nodes an all-reduce of S/4 = 200 MB over 2 (2 ×
 * (100 MB at 10 GB/s + 10 µs)), in-node all-gather as the reduce-scatter. The
 * detailed expansion lands on the same time. */
START_TEST(hierarchical_all_reduce_two_nodes)
{
    struct system sys;
    load(&sys, switch8(), 8);
    system_release(&sys);
    const char *ini = mp_test_tmpfile(".ini", "[system]\nchip = textbook\nchips_per_node = 4\n"
                                              "[scaleup]\ntopology = switch\nbandwidth = 100GB/s\n"
                                              "latency = 5us\n[scaleout]\ntopology = fat_tree\n"
                                              "bandwidth = 10GB/s\nlatency = 10us\n");
    load(&sys, ini, 8);
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_AUTO, .chips = chips, .n = 8,
                           .bytes = 800e6, .mb = -1, .stage = -1 };
    ck_assert_int_eq(collective_pick(&sys, c.op, chips, 8), COLL_HIERARCHICAL);
    mp_time local = 3 * (2 * MP_PS_PER_MS + 5 * US), across = 2 * (10 * MP_PS_PER_MS + 10 * US);
    ck_assert_int_eq(collective_time(&sys, &c), 2 * local + across);
    ck_assert_int_eq(run_detailed(&sys, &c), 2 * local + across);
    system_release(&sys);
}
END_TEST

/* The ring all-reduce of S bytes on n chips in C chunks in flight (issue 22),
 * derived by hand. Links of B = 100 GB/s and α = 1 µs (the `ring` preset),
 * n = 8, so 2(n−1) = 14 steps; s = S/(n·C·B) is one piece's time on a link.
 * A link is busy only while a piece's bytes leave (s); the piece arrives α
 * later. Chip i sends the C pieces of step k one after another; piece c of
 * step k+1 needs piece c of step k from chip i−1, which landed α + s after
 * chip i−1 started sending it. With α ≥ (C−1)·s the pieces of a step are
 * all sent before the first of the next can have arrived, so the steps run
 * every α + s and piece c trails piece 0 by c·s: "each chunk one step
 * behind the last". The last piece (C−1) of the last step (13) starts at
 * 13·(α + s) + (C−1)·s and lands α + s later:
 *   T = 2(n−1)·(α + s) + (C−1)·s.
 * S = 800 KB, C = 4: s = 800e3 / (8 · 4 · 1e11) s = 0.25 µs ≤ α/3, so
 *   T = 14 × 1.25 + 3 × 0.25 = 18.25 µs.
 * C = 1 is the one-buffer form 2(n−1)·α + 2(n−1)/n · S/B: s = 1 µs,
 *   T = 14 × 1 + (14/8) × 8 µs = 28 µs.
 * When α < (C−1)·s the link is the limit instead: each step takes C·s, and
 * the last piece lands 2(n−1)·C·s + α after the start. S = 6.4 MB, C = 8:
 * s = 6.4e6 / (8 · 8 · 1e11) = 1 µs > α/7, T = 14 × 8 + 1 = 113 µs, the
 * bytes at full bandwidth (2(n−1)/n · S/B = 112 µs) plus one latency.
 * The fast (closed-form) time, the compact ring ops and the expanded
 * transfers all give these. */
static void chunked_case(const struct system *sys, double bytes, int chunks, mp_time want)
{
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_RING, .chips = chips, .n = 8,
                           .bytes = bytes, .mb = -1, .stage = -1, .chunks = chunks };
    ck_assert_int_eq(collective_time(sys, &c), want);
    ck_assert_int_eq(run_detailed(sys, &c), want);
    c.compact = true;
    ck_assert_int_eq(run_detailed(sys, &c), want);
}

/* The events of the compact ring (engine.c, ring_defers), counted by hand
 * for two of the cases above. Each member sends T = 14·C pieces; a piece
 * with latency is two events, its last byte leaving and its arrival, unless
 * the member's next piece waits on one from chip i−1 that has not arrived
 * when this one starts: then the link's letting go is left to that
 * arrival, and the piece is one event. Latency-bound (800 KB, C = 4,
 * α ≥ (C−1)·s): the first C − 1 pieces of a member need nothing (two events
 * each), the last has no next (two), and every other waits (one): T + C =
 * 60 a member, 480 in all, where the expanded transfers are 2T = 112 a
 * member, 896. Link-bound (6.4 MB, C = 8, α < (C−2)·s): a member's next
 * piece has arrived before it gets to it, so every piece is two events,
 * 2T·8 = 1,792 either way. The times are the same (above). */
START_TEST(compact_ring_events_by_hand)
{
    struct system sys;
    load(&sys, "ring", 8);
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_RING, .chips = chips, .n = 8,
                           .bytes = 800e3, .mb = -1, .stage = -1, .chunks = 4 };
    uint64_t ev;
    ck_assert_int_eq(run_detailed_events(&sys, &c, &ev), 18250 * MP_PS_PER_NS);
    ck_assert_uint_eq(ev, 896);
    c.compact = true;
    ck_assert_int_eq(run_detailed_events(&sys, &c, &ev), 18250 * MP_PS_PER_NS);
    ck_assert_uint_eq(ev, 8 * (14 * 4 + 4));
    c.bytes = 6.4e6;
    c.chunks = 8;
    ck_assert_int_eq(run_detailed_events(&sys, &c, &ev), 113 * US);
    ck_assert_uint_eq(ev, 2 * 14 * 8 * 8);
    system_release(&sys);
}
END_TEST

/* The compact ring ops against the expanded transfers, to the picosecond,
 * over a spread of shapes (a fixed-seed walk, so the same cases every run):
 * ring, switch and 2-node fat-tree fabrics, all-reduce / reduce-scatter /
 * all-gather, 2–16 chips, 1–8 chunks, 1 KB to 1 GB. The engine runs the
 * compact ring's steps itself and leaves a piece's release to the next
 * arrival where it can (engine.c, ring_defers): neither may move a time. */
START_TEST(compact_ring_equals_expanded)
{
    static const enum coll_op ops[] = { COLL_ALL_REDUCE, COLL_REDUCE_SCATTER, COLL_ALL_GATHER };
    const char *fabrics[] = { "ring", switch8(), switch8() };
    const int fabric_chips[] = { 8, 8, 16 };
    unsigned seed = 12345;
    int cases = 0;
    for (int f = 0; f < 3; f++) {
        struct system sys;
        load(&sys, fabrics[f], fabric_chips[f]);
        int chips[16];
        for (int i = 0; i < 16; i++) chips[i] = i;
        for (int k = 0; k < 40; k++) {
            seed = seed * 1103515245u + 12345u;
            int n = 2 + (int)(seed >> 16) % (fabric_chips[f] - 1);
            seed = seed * 1103515245u + 12345u;
            int chunks = 1 + (int)(seed >> 16) % 8;
            seed = seed * 1103515245u + 12345u;
            double bytes = 1e3 * pow(10, (double)((seed >> 16) % 600) / 100); /* 1 KB – 1 GB */
            struct coll_spec c = { .op = ops[k % 3], .algo = COLL_RING, .chips = chips, .n = n,
                                   .bytes = bytes, .mb = -1, .stage = -1, .chunks = chunks };
            mp_time expanded = run_detailed(&sys, &c);
            c.compact = true;
            mp_time compact = run_detailed(&sys, &c);
            ck_assert_msg(compact == expanded, "%s n %d chunks %d bytes %.0f op %d: %lld vs %lld",
                          fabrics[f], n, chunks, bytes, (int)c.op, (long long)compact,
                          (long long)expanded);
            cases++;
        }
        system_release(&sys);
    }
    ck_assert_int_eq(cases, 120);
}
END_TEST

START_TEST(chunked_ring_pays_latency_once_per_step)
{
    struct system sys;
    load(&sys, "ring", 8);
    chunked_case(&sys, 800e3, 4, 18250 * MP_PS_PER_NS);
    chunked_case(&sys, 800e3, 1, 28 * US);
    chunked_case(&sys, 6.4e6, 8, 113 * US);
    /* Four separate rings one after another on the same streams (the old
     * way to chunk) pay the latency four times: 4 × 14 × (1 + 0.25) µs. */
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 }, ready[8], done[8];
    struct taskgraph g;
    tg_init(&g, sys.n_chips, sys.n_links);
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_RING, .chips = chips, .n = 8,
                           .bytes = 200e3, .mb = -1, .stage = -1 };
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 8; i++) ready[i] = k ? done[i] : -1;
        collective_add(&g, &sys, &c, FIDELITY_DETAILED, ready, done);
    }
    tg_finalize(&g);
    struct engine e;
    engine_init(&e, &g);
    ck_assert_int_eq(engine_run(&e, &err), MP_OK);
    ck_assert_int_eq(engine_makespan(&e), 4 * 14 * 1250 * MP_PS_PER_NS);
    engine_release(&e);
    tg_release(&g);
    system_release(&sys);
}
END_TEST

/* A broadcast chain of 8 chips in 8 pieces (collective.c): piece j reaches
 * chip i at (j + i)·s + i·α, forwarded as it arrives, so the last lands at
 * (n + C − 2)·s + (n − 1)·α. Switch of 100 GB/s, α = 5 µs, S = 800 MB:
 * s = 100 MB / 100 GB/s = 1 ms; 14 ms + 35 µs. */
START_TEST(broadcast_chain_by_hand)
{
    struct system sys;
    load(&sys, switch8(), 8);
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    struct coll_spec c = { .op = COLL_BROADCAST, .algo = COLL_RING, .chips = chips, .n = 8,
                           .bytes = 800e6, .mb = -1, .stage = -1 };
    ck_assert_int_eq(collective_time(&sys, &c), 14 * MP_PS_PER_MS + 35 * US);
    ck_assert_int_eq(run_detailed(&sys, &c), 14 * MP_PS_PER_MS + 35 * US);
    system_release(&sys);
}
END_TEST

/* Presets against measured large-message busbw at 8 GiB. Those with a
 * measured curve (hardware/collectives.csv) hold its 8 GiB point, busbw
 * there = the curve's: 8×A100 231.58 (calibration.md §5a), 8×H100 NVLS
 * 478.87, 8×H200 NVLS 479.98; their small-message floor is the curve's
 * smallest point's time (A100: 32768 × 1.75 / 1.31e9 = 43.77 us, §5b's
 * 43.83 measured; H100: 1024 × 1.75 / 0.07e9 = 25.6 us, §5a). gb200-nvl72
 * has no curve (the §5a GB200 column's GPU count is not stated): alpha-beta
 * on its 680 GB/s links, 4×GB200 ring busbw ≈ 680 GB/s (hardware.md)
 * within 10%. */
START_TEST(presets_calibrated_to_measured_busbw)
{
    struct { const char *preset; int n; double want, tol, floor_us; } cases[] = {
        { "dgx-a100", 8, 231.58, 0.001, 32768 * 1.75 / 1.31e9 * 1e6 },
        { "dgx-h100", 8, 478.87, 0.001, 1024 * 1.75 / 0.07e9 * 1e6 },
        { "dgx-h200", 8, 479.98, 0.001, 1024 * 1.75 / 0.06e9 * 1e6 },
        { "gb200-nvl72", 4, 680, 0.10, 0 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        struct system sys;
        load(&sys, cases[k].preset, cases[k].n);
        int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
        double S = 8.0 * (1 << 30);
        struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_AUTO, .chips = chips,
                               .n = cases[k].n, .bytes = S, .mb = -1, .stage = -1 };
        double busbw = S / mp_seconds(collective_time(&sys, &c)) / 1e9 *
                       collective_bus_factor(COLL_ALL_REDUCE, cases[k].n);
        ck_assert_msg(fabs(busbw / cases[k].want - 1) < cases[k].tol,
                      "%s: busbw %.1f GB/s, want %.2f", cases[k].preset, busbw, cases[k].want);
        /* The small-message floor (8 B), where a curve gives one. */
        c.bytes = 8;
        if (cases[k].floor_us > 0) {
            double us = mp_seconds(collective_time(&sys, &c)) * 1e6;
            ck_assert_msg(fabs(us - cases[k].floor_us) < 1e-3, "%s: %g us", cases[k].preset, us);
        }
        system_release(&sys);
    }
}
END_TEST

/* A 4×4×4 torus: chip (x, y, z) is x + 4y + 16z. Dimension order, the
 * shorter way round, forward on a tie: 0 → 63 = (3,3,3) is one hop back in
 * each dimension; 0 → 2 is two hops forward (a tie); 5 = (1,1,0) → 0 goes
 * x first, then y. */
START_TEST(torus_dimension_order_routes)
{
    struct system sys;
    load(&sys, "tpu-v5p", 64);
    ck_assert_int_eq(sys.n_dims, 3);
    ck_assert_int_eq(sys.n_links, 64 * 6 + 64 * 2);
    int r[16];
    ck_assert_int_eq(system_route(&sys, 0, 63, r, 16), 3);
    ck_assert_int_eq(r[0], sys.torus[(0 * 3 + 0) * 2 + 1]);  /* x minus from chip 0 */
    ck_assert_int_eq(r[1], sys.torus[(3 * 3 + 1) * 2 + 1]);  /* y minus from (3,0,0) */
    ck_assert_int_eq(r[2], sys.torus[(15 * 3 + 2) * 2 + 1]); /* z minus from (3,3,0) */
    ck_assert_int_eq(system_route(&sys, 0, 2, r, 16), 2);
    ck_assert_int_eq(r[0], sys.torus[(0 * 3 + 0) * 2 + 0]);
    ck_assert_int_eq(r[1], sys.torus[(1 * 3 + 0) * 2 + 0]);
    ck_assert_int_eq(system_route(&sys, 5, 0, r, 16), 2);
    ck_assert_int_eq(r[0], sys.torus[(5 * 3 + 0) * 2 + 1]);
    ck_assert_int_eq(r[1], sys.torus[(4 * 3 + 1) * 2 + 1]);
    /* 1 GB over 3 hops of 100 GB/s, 1 µs each. */
    system_route(&sys, 0, 63, r, 16);
    ck_assert_int_eq(system_route_time(&sys, r, 3, 1e9), 10 * MP_PS_PER_MS + 3 * US);
    system_release(&sys);
}
END_TEST

/* Rail-optimised scale-out (dgx-h200): the same local index crosses on its
 * own rail; another index first moves inside the node to the destination's
 * rail (PXN). */
START_TEST(rail_routes)
{
    struct system sys;
    load(&sys, "dgx-h200", 16);
    int r[16];
    ck_assert_int_eq(system_route(&sys, 2, 10, r, 16), 2);
    ck_assert_int_eq(r[0], sys.nic_up[2]);
    ck_assert_int_eq(r[1], sys.nic_down[10]);
    ck_assert_int_eq(system_route(&sys, 1, 10, r, 16), 4);
    ck_assert_int_eq(r[0], sys.up[1]);
    ck_assert_int_eq(r[1], sys.down[2]);
    ck_assert_int_eq(r[2], sys.nic_up[2]);
    ck_assert_int_eq(r[3], sys.nic_down[10]);
    system_release(&sys);
}
END_TEST

/* A full mesh runs n−1 rings at once: 8-GPU all-reduce busbw = 7 links ×
 * 48 GB/s = 336 GB/s for a large message on mi300x-node's links without its
 * measured curve; with the curve (RCCL, calibration.md §5a) it is the
 * measured 316.82 GB/s at 8 GiB. */
START_TEST(full_mesh_uses_every_link)
{
    struct system sys;
    load(&sys, mp_test_tmpfile(".ini", "[system]\nchip = mi300x\nchips_per_node = 8\n"
                                       "[scaleup]\ntopology = full_mesh\nbandwidth = 48GB/s\n"
                                       "latency = 2us\n"), 8);
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    double S = 8.0 * (1 << 30);
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_RING, .chips = chips, .n = 8,
                           .bytes = S, .mb = -1, .stage = -1 };
    double busbw = S / mp_seconds(collective_time(&sys, &c)) / 1e9 * 1.75;
    ck_assert_double_eq_tol(busbw, 336, 0.5);
    system_release(&sys);
    load(&sys, "mi300x-node", 8);
    busbw = S / mp_seconds(collective_time(&sys, &c)) / 1e9 * 1.75;
    ck_assert_double_eq_tol(busbw, 316.82, 0.01);
    system_release(&sys);
}
END_TEST

static Suite *collective_suite(void)
{
    Suite *s = suite_create("collective");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bus_factors_are_nccl_tests);
    tcase_add_test(tc, fast_times_match_hand_formulas);
    tcase_add_test(tc, detailed_equals_fast_on_an_idle_switch);
    tcase_add_test(tc, hierarchical_all_reduce_two_nodes);
    tcase_add_test(tc, chunked_ring_pays_latency_once_per_step);
    tcase_add_test(tc, compact_ring_events_by_hand);
    tcase_add_test(tc, compact_ring_equals_expanded);
    tcase_add_test(tc, broadcast_chain_by_hand);
    tcase_add_test(tc, presets_calibrated_to_measured_busbw);
    tcase_add_test(tc, torus_dimension_order_routes);
    tcase_add_test(tc, rail_routes);
    tcase_add_test(tc, full_mesh_uses_every_link);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(collective_suite)
