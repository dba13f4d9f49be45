/* check_checked.c — issue 16, classes 1, 3 and 5 at the library level:
 *  - one checked path to durations: the saturating helpers, and what they
 *    turn a crawling chip, a crawling link or a huge collective into (an
 *    input error naming the inputs, never a negative or wrapped time);
 *  - cost linear in what was asked: the work estimate against the events a
 *    run counts, the budget's refusal before the graph is built, the task
 *    graph's cap, and tables that used to grow with pp²;
 *  - values accepted but wrong before: a tp that does not split the heads,
 *    expert loads near DBL_MAX.
 * Every expected number is worked out in the comment beside it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hardware/chip.h"
#include "hardware/system.h"
#include "sim/engine/taskgraph.h"
#include "sim/io/budget.h"
#include "sim/io/config.h"
#include "sim/strategy/collective.h"
#include "sim/strategy/experts.h"
#include "sim/strategy/schedule.h"
#include "sim/strategy/tensor.h"
#include "sim/train/estimate.h"
#include "sim/train/sim.h"
#include "testutil.h"

/* ---- the helpers ---------------------------------------------------------- */

START_TEST(time_helpers_saturate)
{
    ck_assert_int_eq(mp_time_from_ps(1.4), 1);
    ck_assert_int_eq(mp_time_from_ps(1.5), 2);               /* llround: halves away */
    ck_assert_int_eq(mp_time_from_ps(1e300), MP_TIME_HUGE);
    ck_assert_int_eq(mp_time_from_ps(INFINITY), MP_TIME_HUGE);
    ck_assert_int_eq(mp_time_from_ps(NAN), MP_TIME_HUGE);      /* unknown is not zero */
    ck_assert_int_eq(mp_time_from_s(2.5), 2500000000000);      /* 2.5 s = 2.5e12 ps */
    ck_assert_int_eq(mp_time_add(MP_TIME_HUGE, MP_TIME_HUGE), MP_TIME_HUGE); /* 2^63 would wrap */
    ck_assert_int_eq(mp_time_add(3, 4), 7);
    ck_assert_int_eq(mp_time_mul(MP_TIME_HUGE / 2 + 1, 2), MP_TIME_HUGE);
    ck_assert_int_eq(mp_time_mul((mp_time)1 << 40, (long long)1 << 40), MP_TIME_HUGE); /* 2^80 */
    ck_assert_int_eq(mp_time_mul(7, 6), 42);
    ck_assert_int_eq(mp_time_scale(10, 0.35), 3);             /* truncated: 3.5 → 3 */
    ck_assert_int_eq(mp_time_scale(MP_TIME_HUGE, 2), MP_TIME_HUGE);
    ck_assert(mp_time_saturated(MP_TIME_HUGE) && !mp_time_saturated(MP_TIME_HUGE - 1));
}
END_TEST

/* A chip of 10^-9 TFLOP/s (1000 FLOP/s) doing 10^18 FLOPs needs 10^15 s:
 * past 2^62 ps (4.6e6 s), so the op saturates instead of wrapping. */
START_TEST(crawling_chip_saturates)
{
    struct chip c = { .peak_bf16 = 1e3, .mem_bw = 1e12, .compute_eff = 1, .mem_eff = 1 };
    ck_assert_int_eq(chip_op_time(&c, 1e18, 0, 16), MP_TIME_HUGE);
    /* 10^3 FLOPs take 1 s = 10^12 ps: well inside. */
    ck_assert_int_eq(chip_op_time(&c, 1e3, 0, 16), 1000000000000);
}
END_TEST

/* A ring all-reduce of 2^60 bytes over 1024 textbook chips whose links were
 * made 1 B/s: each of the 2(n − 1) = 2046 hops moves 2^60 / 1024 = 2^50
 * bytes in 2^50 s, saturated; 2046 of them stay saturated, not negative
 * (before: `2 * (n − 1) * hop` wrapped to a negative time). */
START_TEST(huge_collective_saturates)
{
    struct chip_catalog cat;
    struct mp_error err;
    ck_assert_int_eq(chip_catalog_load_default(&cat, &err), MP_OK);
    struct system sys;
    ck_assert_int_eq(system_load(&sys, "dgx-h100", 0, 1024, &cat, &err), MP_OK);
    for (int i = 0; i < sys.n_links; i++) sys.links[i].bw = 1;
    int *chips = malloc(1024 * sizeof *chips);
    for (int i = 0; i < 1024; i++) chips[i] = i;
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_RING, .chips = chips, .n = 1024,
                           .bytes = 0x1p60, .mb = -1, .stage = -1 };
    ck_assert_int_eq(collective_time(&sys, &c), MP_TIME_HUGE);
    c.algo = COLL_TREE;
    ck_assert_int_eq(collective_time(&sys, &c), MP_TIME_HUGE);
    c.algo = COLL_HALVING_DOUBLING;
    ck_assert_int_eq(collective_time(&sys, &c), MP_TIME_HUGE);
    free(chips);
    system_release(&sys);
    chip_catalog_release(&cat);
}
END_TEST

/* A data folder whose chips.csv gives the textbook chip `tflops` (other
 * presets as shipped), for runs that must name the catalogue's figures. */
static const char *home_with_textbook(const char *tflops)
{
    static char home[256];
    snprintf(home, sizeof home, "/tmp/mpsim-checked-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(home));
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/hardware && ln -s %s/hardware/systems %s/hardware/systems && "
             "ln -s %s/models %s/models && cp %s/hardware/kernels.csv %s/hardware/ && "
             "sed 's/^textbook,\\([^,]*\\),1000,/textbook,\\1,%s,/' %s/hardware/chips.csv "
             "> %s/hardware/chips.csv", home, mp_data_dir(), home, mp_data_dir(), home,
             mp_data_dir(), home, tflops, mp_data_dir(), home);
    ck_assert_int_eq(system(cmd), 0);
    return home;
}

static void remove_home(const char *home)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", home);
    ck_assert_int_eq(system(cmd), 0);
    unsetenv("MPSIM_HOME");
}

static int run(const char *scenario_text, const char *const *sets, struct sim_options *o,
               struct mp_error *err, struct sim *s)
{
    struct config cfg;
    config_defaults(&cfg);
    ck_assert_int_eq(config_load(&cfg, mp_test_tmpfile(".ini", scenario_text), err), MP_OK);
    for (int i = 0; sets && sets[i]; i++) ck_assert_int_eq(config_set(&cfg, sets[i], "--set", err), MP_OK);
    return sim_run(s, &cfg, o, err);
}

/* llama3-8b's first stage on a textbook chip of 10^-9 TFLOP/s: a forward of
 * 2048 tokens is ~1.6e13 FLOPs, 1.6e10 s at 1000 FLOP/s: saturated, and the
 * message names the catalogue column and the model's shape. */
START_TEST(slow_chip_names_its_inputs)
{
    const char *home = home_with_textbook("1e-9");
    setenv("MPSIM_HOME", home, 1);
    struct sim s;
    struct mp_error err = { 0 };
    int rc = run("[model]\nconfig = llama3-8b\n[parallel]\npp = 2\n", NULL, NULL, &err, &s);
    sim_release(&s);
    ck_assert_int_eq(rc, MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "bf16_tflops = 1e-09") && strstr(err.msg, "model.seq_len = 2048") &&
                  strstr(err.msg, "2^62 ps"), "%s", err.msg);
    remove_home(home);
}
END_TEST

/* A system file whose scale-up bandwidth is 1e-300 GB/s: the stage hand-off
 * (llama3-8b, pp 2: 2048 × 4096 × 2 B = 16 MiB) saturates, and the message
 * names the system's bandwidth. */
START_TEST(slow_link_names_its_inputs)
{
    const char *sys = mp_test_tmpfile(".ini",
        "[system]\nchip = textbook\nchips_per_node = 8\n"
        "[scaleup]\ntopology = switch\nbandwidth = 1e-300GB/s\nlatency = 1us\n");
    char text[1024];
    snprintf(text, sizeof text, "[model]\nconfig = llama3-8b\n[hardware]\nsystem = %s\n"
             "[parallel]\npp = 2\n", sys);
    struct sim s;
    struct mp_error err = { 0 };
    int rc = run(text, NULL, NULL, &err, &s);
    sim_release(&s);
    ck_assert_int_eq(rc, MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "[scaleup] bandwidth = 1e-300GB/s") && strstr(err.msg, "16 MiB"),
                  "%s", err.msg);
}
END_TEST

/* ---- the work budget ---------------------------------------------------- */

/* 3 × 10^7 events at 160 B are 4.8e9 B = 4.47 GiB: past the 4 GiB budget,
 * and about 30 s at 1 µs each; --force lets it through. */
START_TEST(budget_message_and_force)
{
    struct work_estimate w = { .events = 3e7 };
    struct mp_error err = { 0 };
    ck_assert_int_eq(work_check(&w, "scenario", "lower training.global_batch", false, &err),
                     MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "3e+07 events") && strstr(err.msg, "4.47 GiB") &&
                  strstr(err.msg, "30 s") && strstr(err.msg, "--force"), "%s", err.msg);
    ck_assert_int_eq(work_check(&w, "scenario", NULL, true, &err), MP_OK);
    /* 2.5e7 events are 4.0e9 B = 3.73 GiB: inside. */
    w.events = 2.5e7;
    ck_assert_int_eq(work_check(&w, "scenario", NULL, false, &err), MP_OK);
    /* A sweep of 10^7 points at 2 ms each on 2 threads: 10^4 s > 1 h. */
    struct work_estimate g = { .points = 1e7, .jobs = 2 };
    ck_assert_int_eq(work_check(&g, "sweep", NULL, false, &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "10000000 points") && strstr(err.msg, "2.8 h"), "%s", err.msg);
}
END_TEST

/* The estimate against the count, on teaching scenarios worked by hand:
 * 1F1B on 4 stages, 8 microbatches: 4 × 8 × 2 ops (F, BW) plus 2 × 3 × 8
 * hand-offs = 64 + 48 = 112 events; zb-h1 has 3 ops (F, B, W): 96 + 48 =
 * 144; zb-v has 8 chunks of 3: 192 + 2 × 7 × 8 = 304 (the run counts 288:
 * a V's two middle chunks share a device, no hand-off between them). */
START_TEST(estimate_matches_count)
{
    static const struct { const char *schedule; double est, count; } cases[] = {
        { "1f1b", 112, 112 }, { "gpipe", 112, 112 }, { "zb-h1", 144, 144 },
        { "zb-h2", 144, 144 }, { "zb-v", 304, 288 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char set[64];
        snprintf(set, sizeof set, "training.schedule=%s", cases[i].schedule);
        const char *sets[] = { set, NULL };
        struct sim s;
        struct mp_error err = { 0 };
        int rc = run("[model]\nkind = synthetic\n[parallel]\npp = 4\n[training]\nglobal_batch = 8\n",
                     sets, NULL, &err, &s);
        ck_assert_int_eq(rc, MP_OK);
        ck_assert_double_eq(sim_events_estimate(&s.cfg, NULL, &s.sys), cases[i].est);
        ck_assert_int_eq(s.g.n_ops, (int)cases[i].count);
        sim_release(&s);
    }
}
END_TEST

/* Context parallelism (branch context) in the estimate, by hand: llama3-8b
 * (32 attention layers), one stage, one microbatch of 1F1B: 2 ops (F, BW).
 * A ring of 4 cuts each layer's forward core into 4 steps and 3 K/V
 * transfers plus the projections either side (2): 9 pieces; the backward 4
 * steps, 4 transfers (the last dK/dV home) and 2: 10. 2 + 32 × 19 = 610
 * (the graph counts 619). Ulysses over 4 (a ring of r = 1): forward 1 step,
 * 2 all-to-alls and 2 = 5; backward 1 step, r = 1 transfer counted (the
 * graph has none: nothing goes home on a ring of one), 2 all-to-alls and 2
 * = 6: 2 + 32 × 11 = 354 (the graph counts 331). The run does not
 * fit the textbook chip's memory (exit 3), but its graph is built. */
START_TEST(estimate_counts_context_parallel)
{
    static const struct { const char *kind; double est; int lo, hi; } cases[] = {
        { "parallel.cp_kind=ring", 610, 560, 660 },
        { "parallel.cp_kind=ulysses", 354, 300, 360 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *sets[] = { cases[i].kind, NULL };
        struct sim s;
        struct mp_error err = { 0 };
        int rc = run("[model]\nconfig = llama3-8b\nseq_len = 4096\n[parallel]\ncp = 4\n"
                     "[training]\nglobal_batch = 1\n", sets, NULL, &err, &s);
        ck_assert_msg(rc == MP_OK || rc == MP_ERR_INFEASIBLE, "%s", err.msg);
        ck_assert_double_eq(sim_events_estimate(&s.cfg, &s.model, &s.sys), cases[i].est);
        ck_assert_msg(s.g.n_ops >= cases[i].lo && s.g.n_ops <= cases[i].hi, "%s: %d ops",
                      cases[i].kind, s.g.n_ops);
        sim_release(&s);
    }
}
END_TEST

/* With a budget of 1000 events, 1F1B on 4 stages and 400 microbatches
 * (estimated 4 × 400 × 2 + 2 × 3 × 400 = 5600) stops before the schedule is
 * built; forced, it runs and counts exactly 5600. */
START_TEST(budget_refuses_before_building)
{
    /* Without steady-state skipping (issue 22), which would weigh the
     * shorter program it runs instead: below. */
    const char *text = "[model]\nkind = synthetic\n[parallel]\npp = 4\n[training]\nglobal_batch = 400\n"
                       "[run]\nsteady_skip = false\n";
    struct sim_options o = { .budget_events = 1000 };
    struct sim s;
    struct mp_error err = { 0 };
    ck_assert_int_eq(run(text, NULL, &o, &err, &s), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "5600 events") && !s.has_graph, "%s", err.msg);
    sim_release(&s);
    o.force = true;
    ck_assert_int_eq(run(text, NULL, &o, &err, &s), MP_OK);
    ck_assert_int_eq(s.g.n_ops, 5600);
    sim_release(&s);
    /* With skipping, the step is weighed by the shorter program it runs (a
     * few periods of the steady state: 168 events estimated, against 5600),
     * and the schedule program it is read from, built whole: 400 × 4 × 2
     * passes (F and BW) at a quarter event each (budget.h) = 800, and the
     * per-stage pass programs, whole too: one microbatch's F and B on 4
     * stages, 8 — 808, with the textbook system's 1024 chips 1832. A
     * budget of 2500 holds both; 1800 does not. */
    o.force = false;
    o.budget_events = 1800;
    ck_assert_int_eq(run("[model]\nkind = synthetic\n[parallel]\npp = 4\n[training]\n"
                         "global_batch = 400\n", NULL, &o, &err, &s), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "808 events and 1024 chips"), "%s", err.msg);
    sim_release(&s);
    /* zb-v lays out two chunks a device whatever parallel.vpp says: 400 ×
     * 4 × 2 × 3 passes (F, B, W) = 9600, a quarter event each = 2400, and
     * the pass programs of one microbatch's F, B and W on its 8 stages, 24:
     * 2424 (counted at vpp = 1 it was 1212, and zb-v over 65,536
     * microbatches took 5.7 s under ASan inside the value fuzzer's budget). */
    o.budget_events = 2500;
    ck_assert_int_eq(run("[model]\nkind = synthetic\n[parallel]\npp = 4\n[training]\n"
                         "global_batch = 400\nschedule = zb-v\n", NULL, &o, &err, &s),
                     MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "2424 events and 1024 chips"), "%s", err.msg);
    sim_release(&s);
    o.budget_events = 2500;
    const char *skip = "[model]\nkind = synthetic\n[parallel]\npp = 4\n[training]\nglobal_batch = 400\n";
    ck_assert_msg(run(skip, NULL, &o, &err, &s) == MP_OK, "%s", err.msg);
    ck_assert_msg(s.g.n_ops < 1000 && s.res.steady_skipped_periods > 0, "%d ops, %lld periods",
                  s.g.n_ops, (long long)s.res.steady_skipped_periods);
    sim_release(&s);
}
END_TEST

/* A system is weighed with its links: tpu-v5p on 262,144 nodes is 2^24
 * chips (the most a system may have) with 8 links each (a 3-D torus's 6,
 * the fat tree's 2): 2^24 × 64 + 2^27 × 32 bytes = 1 + 4 = 5 GiB, past the
 * 4 GiB budget, refused before the links exist. (At 160 bytes a chip and no
 * links it came to 2.5 GiB and ran, holding 4.7 GB: the value fuzzer.) */
START_TEST(budget_weighs_the_links)
{
    const char *text = "[model]\nkind = synthetic\n[hardware]\nsystem = tpu-v5p\nnodes = 262144\n"
                       "[parallel]\ntp = 8\n";
    struct sim_options o = { 0 };
    struct sim s;
    struct mp_error err = { 0 };
    ck_assert_int_eq(run(text, NULL, &o, &err, &s), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "estimated 16777216 chips, 5 GiB of memory"), "%s", err.msg);
    ck_assert(!s.has_graph);
    sim_release(&s);
}
END_TEST

/* The graph keeps at most max_ops ops; the rest are counted, and deps on
 * them are dropped instead of growing the edge list. */
START_TEST(graph_cap_counts_without_keeping)
{
    struct taskgraph g;
    tg_init(&g, 1, 0);
    g.max_ops = 10;
    int prev = -1;
    for (int i = 0; i < 25; i++) {
        struct op o = tg_op(OP_COMPUTE, 0, STREAM_COMPUTE, TAG_F, 1);
        int id = tg_add(&g, &o);
        if (prev >= 0 && id != prev) tg_dep(&g, prev, id);
        prev = id;
    }
    ck_assert_int_eq(g.n_ops, 10);
    ck_assert_int_eq(g.wanted_ops, 25);
    ck_assert(g.over);
    ck_assert_int_le(g.n_edges, 9); /* 9 deps among the kept ten, none past them */
    tg_release(&g);
}
END_TEST

/* pp = 4000 stages and one microbatch: tables per (device, stage) were
 * pp² (4000² × 8 B = 128 MB for the DP buckets alone, and the zero-bubble
 * greedy looked at every device at every op end: O(pp²) time). Now the
 * step is 2 × 4000 compute ops + 2 × 3999 hand-offs = 15998 events for
 * 1F1B and, for zb-v's 8000 chunks, 3 × 8000 + 2 × 7998 = 39996 (the V's
 * turn, stage 3999 to 4000, stays on device 3999: no hand-off). dp = 2 adds
 * a gradient all-reduce per stage each device holds: 4000 and 8000. */
START_TEST(deep_pipelines_are_linear)
{
    const char *sets_1f1b[] = { "training.schedule=1f1b", NULL };
    const char *sets_zbv[] = { "training.schedule=zb-v", NULL };
    const char *text = "[model]\nkind = synthetic\n[parallel]\npp = 4000\ndp = 2\n"
                       "[training]\nglobal_batch = 2\n[synthetic]\nweights = 1GB\n";
    struct sim s;
    struct mp_error err = { 0 };
    ck_assert_int_eq(run(text, sets_1f1b, NULL, &err, &s), MP_OK);
    ck_assert_int_eq(s.g.n_ops, 15998 + 4000);
    sim_release(&s);
    ck_assert_int_eq(run(text, sets_zbv, NULL, &err, &s), MP_OK);
    ck_assert_int_eq(s.g.n_ops, 39996 + 8000);
    sim_release(&s);
}
END_TEST

/* mpsim collective's estimate: a detailed ring all-reduce on 8 chips is
 * priced over 2n = 16 routes and runs n × 2(n − 1) = 112 transfers. */
START_TEST(collective_work_counts)
{
    struct chip_catalog cat;
    struct mp_error err;
    ck_assert_int_eq(chip_catalog_load_default(&cat, &err), MP_OK);
    struct system sys;
    ck_assert_int_eq(system_load(&sys, "dgx-h100", 0, 8, &cat, &err), MP_OK);
    int chips[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    struct coll_spec c = { .op = COLL_ALL_REDUCE, .algo = COLL_RING, .chips = chips, .n = 8,
                           .bytes = 1e9, .mb = -1, .stage = -1, .compact = true };
    double held;
    ck_assert_double_eq(collective_work(&sys, &c, FIDELITY_FAST, &held), 16);
    ck_assert_double_eq(collective_work(&sys, &c, FIDELITY_DETAILED, &held), 16 + 112);
    ck_assert_double_eq(held, 16); /* a compact ring holds 2n ops' worth, not n × steps */
    /* Direct all-to-all: n² = 64 routes priced, n² = 64 transfers. */
    c.op = COLL_ALL_TO_ALL;
    c.algo = COLL_DIRECT;
    ck_assert_double_eq(collective_work(&sys, &c, FIDELITY_DETAILED, &held), 64 + 64);
    system_release(&sys);
    chip_catalog_release(&cat);
}
END_TEST

/* ---- accepted but wrong ---------------------------------------------------- */

/* TP must split the query heads evenly and the KV heads evenly or by copies:
 * 32 heads, 8 KV heads take tp 1, 2, 4, 8 (8 / tp each), 16 and 32 (each KV
 * head on 2 or 4 ranks); not 3 (32 / 3) nor 64 (32 / 64 < 1 head). 24 heads
 * with 6 KV heads: tp 4 splits the queries (6 each) but neither splits nor
 * copies 6 KV heads (6 / 4, 4 / 6). */
START_TEST(tp_must_split_heads)
{
    struct model m = { .heads = 32, .kv_heads = 8 };
    snprintf(m.name, sizeof m.name, "test");
    static const int ok[] = { 1, 2, 4, 8, 16, 32 }, bad[] = { 3, 5, 6, 12, 64 };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) ck_assert(tensor_degree_ok(&m, ok[i]));
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) ck_assert(!tensor_degree_ok(&m, bad[i]));
    m.heads = 24, m.kv_heads = 6;
    ck_assert(!tensor_degree_ok(&m, 4));
    ck_assert(tensor_degree_ok(&m, 3) && tensor_degree_ok(&m, 6) && tensor_degree_ok(&m, 12));
    struct mp_error err;
    ck_assert_int_eq(tensor_check_degree(&m, 4, "x.ini:3: key parallel.tp", &err), MP_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "6 KV heads") && strstr(err.msg, "1, 2, 3, 6, 12, 24"), "%s",
                  err.msg);
    /* The run says it with the scenario's line. */
    struct sim s;
    ck_assert_int_eq(run("[model]\nconfig = llama3-8b\n[parallel]\ntp = 3\n", NULL, NULL, &err, &s),
                     MP_ERR_INPUT);
    sim_release(&s);
    ck_assert_msg(strstr(err.msg, ":4: key parallel.tp") && strstr(err.msg, "32 attention heads"),
                  "%s", err.msg);
}
END_TEST

/* Routing loads of 1e308: summed as given they overflow to inf and every
 * share became 0 (NaN times downstream). Each row is scaled by its largest
 * load first: eight equal loads are eight equal shares, imbalance 1. */
START_TEST(huge_expert_loads)
{
    char trace[600];
    snprintf(trace, sizeof trace, "%s", mp_test_tmpfile(".csv",
             "1e308,1e308,1e308,1e308,1e308,1e308,1e308,1e308\n"));
    char text[1024];
    snprintf(text, sizeof text, "[model]\nconfig = mixtral-8x7b\n[hardware]\nsystem = dgx-h100\n"
             "[parallel]\nep = 2\ndp = 2\n[experts]\nrouting = trace\ntrace = %s\n", trace);
    struct sim s;
    struct mp_error err = { 0 };
    int rc = run(text, NULL, NULL, &err, &s);
    ck_assert_msg(rc == MP_OK || rc == MP_ERR_INFEASIBLE, "%s", err.msg);
    ck_assert(s.has_experts);
    for (int i = 0; i < s.experts.n_moe; i++) {
        ck_assert_double_eq_tol(s.experts.stats[i].imbalance_max, 1.0, 1e-12);
        ck_assert_double_eq(s.experts.stats[i].dropped, 0);
    }
    sim_release(&s);
}
END_TEST

static Suite *checked_suite(void)
{
    Suite *s = suite_create("checked");
    TCase *tc = tcase_create("checked");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, time_helpers_saturate);
    tcase_add_test(tc, crawling_chip_saturates);
    tcase_add_test(tc, huge_collective_saturates);
    tcase_add_test(tc, slow_chip_names_its_inputs);
    tcase_add_test(tc, slow_link_names_its_inputs);
    tcase_add_test(tc, budget_message_and_force);
    tcase_add_test(tc, estimate_matches_count);
    tcase_add_test(tc, estimate_counts_context_parallel);
    tcase_add_test(tc, budget_refuses_before_building);
    tcase_add_test(tc, budget_weighs_the_links);
    tcase_add_test(tc, graph_cap_counts_without_keeping);
    tcase_add_test(tc, deep_pipelines_are_linear);
    tcase_add_test(tc, collective_work_counts);
    tcase_add_test(tc, tp_must_split_heads);
    tcase_add_test(tc, huge_expert_loads);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(checked_suite)
