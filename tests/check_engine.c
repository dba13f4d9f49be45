/* check_engine.c — the engine on hand-made task graphs, every time by hand. */
#include <string.h>

#include "sim/engine/engine.h"
#include "testutil.h"

static int add(struct taskgraph *g, int chip, int stream, mp_time d)
{
    struct op o = tg_op(OP_COMPUTE, chip, stream, TAG_OTHER, d);
    return tg_add(g, &o);
}

static int add_xfer(struct taskgraph *g, int chip, mp_time d, const int *links, int n)
{
    struct op o = tg_op(OP_TRANSFER, chip, STREAM_COMM, TAG_SEND, d);
    return tg_add_transfer(g, &o, links, n);
}

static void run_ok(struct taskgraph *g, struct engine *e)
{
    struct mp_error err = { 0 };
    tg_finalize(g);
    engine_init(e, g);
    ck_assert_int_eq(engine_run(e, &err), MP_OK);
}

START_TEST(a_stream_runs_its_ops_back_to_back)
{
    struct taskgraph g; struct engine e;
    tg_init(&g, 1, 0);
    int a = add(&g, 0, STREAM_COMPUTE, 3), b = add(&g, 0, STREAM_COMPUTE, 4);
    run_ok(&g, &e);
    ck_assert_int_eq(e.start[a], 0); ck_assert_int_eq(e.end[a], 3);
    ck_assert_int_eq(e.start[b], 3); ck_assert_int_eq(e.end[b], 7);
    ck_assert_int_eq(engine_makespan(&e), 7);
    ck_assert_uint_eq(e.events, 2);
    engine_release(&e); tg_release(&g);
}
END_TEST

START_TEST(a_dependency_across_chips_delays_the_start)
{
    struct taskgraph g; struct engine e;
    tg_init(&g, 2, 0);
    int a = add(&g, 0, STREAM_COMPUTE, 5), b = add(&g, 1, STREAM_COMPUTE, 2);
    tg_dep(&g, a, b);
    run_ok(&g, &e);
    ck_assert_int_eq(e.start[b], 5); ck_assert_int_eq(e.end[b], 7);
    engine_release(&e); tg_release(&g);
}
END_TEST

/* Z is ready at 0 but sits behind X in its stream's order, and X waits for Y
 * (10 ps on another chip): X runs 10–11, Z 11–12. */
START_TEST(stream_order_is_kept_even_when_a_later_op_is_ready)
{
    struct taskgraph g; struct engine e;
    tg_init(&g, 2, 0);
    int y = add(&g, 1, STREAM_COMPUTE, 10);
    int x = add(&g, 0, STREAM_COMPUTE, 1), z = add(&g, 0, STREAM_COMPUTE, 1);
    tg_dep(&g, y, x);
    run_ok(&g, &e);
    ck_assert_int_eq(e.start[x], 10);
    ck_assert_int_eq(e.start[z], 11); ck_assert_int_eq(e.end[z], 12);
    engine_release(&e); tg_release(&g);
}
END_TEST

/* Compute and communication streams of one chip overlap fully. */
START_TEST(compute_and_comm_streams_overlap)
{
    struct taskgraph g; struct engine e;
    tg_init(&g, 1, 1);
    int link = 0;
    int c = add(&g, 0, STREAM_COMPUTE, 5);
    int t = add_xfer(&g, 0, 5, &link, 1);
    run_ok(&g, &e);
    ck_assert_int_eq(e.end[c], 5); ck_assert_int_eq(e.end[t], 5);
    engine_release(&e); tg_release(&g);
}
END_TEST

/* Two transfers from different chips share link 1: the second waits for the
 * first (0–5, then 5–10); a third on its own link runs at once. */
START_TEST(a_link_carries_one_transfer_at_a_time)
{
    struct taskgraph g; struct engine e;
    tg_init(&g, 3, 3);
    int r0[] = { 0, 1 }, r1[] = { 2, 1 };
    int a = add_xfer(&g, 0, 5, r0, 2);
    int b = add_xfer(&g, 1, 5, r1, 2);
    run_ok(&g, &e);
    ck_assert_int_eq(e.start[a], 0); ck_assert_int_eq(e.end[a], 5);
    ck_assert_int_eq(e.start[b], 5); ck_assert_int_eq(e.end[b], 10);
    engine_release(&e); tg_release(&g);

    /* A transfer blocked on a busy link must not hold the free ones: c holds
     * link 2 for 5, d needs links 2 and 3 and waits, e needs only 3 and runs. */
    tg_init(&g, 3, 4);
    int l2[] = { 2 }, l23[] = { 2, 3 }, l3[] = { 3 };
    int c = add_xfer(&g, 0, 5, l2, 1);
    int d = add_xfer(&g, 1, 4, l23, 2);
    int f = add_xfer(&g, 2, 3, l3, 1);
    run_ok(&g, &e);
    ck_assert_int_eq(e.end[c], 5);
    ck_assert_int_eq(e.start[f], 0); ck_assert_int_eq(e.end[f], 3);
    ck_assert_int_eq(e.start[d], 5); ck_assert_int_eq(e.end[d], 9);
    engine_release(&e); tg_release(&g);
}
END_TEST

/* Links pipeline latency (DESIGN.md §2): a transfer of 3 ps of bytes and 5
 * ps of latency (duration 8) holds its stream and link for 3 and arrives at
 * 8. A second one from the same chip over the same link starts at 3 and
 * arrives at 11; a third from another chip on that link waits for the
 * second's bytes (6), not its arrival. Whatever waits for the first starts at
 * 8. Two events per such transfer: bytes out, arrival. */
START_TEST(a_transfer_holds_its_link_for_its_bytes_only)
{
    struct taskgraph g; struct engine e;
    tg_init(&g, 3, 1);
    int l0[] = { 0 };
    struct op o = tg_op(OP_TRANSFER, 0, STREAM_COMM, TAG_SEND, 8);
    o.latency = 5;
    int a = tg_add_transfer(&g, &o, l0, 1);
    int b = tg_add_transfer(&g, &o, l0, 1);
    o.chip = 1;
    int c = tg_add_transfer(&g, &o, l0, 1);
    int d = add(&g, 2, STREAM_COMPUTE, 1);
    tg_dep(&g, a, d);
    tg_dep(&g, a, c); /* c on chip 1 also waits for a to arrive */
    run_ok(&g, &e);
    ck_assert_int_eq(e.start[a], 0); ck_assert_int_eq(e.end[a], 8);
    ck_assert_int_eq(e.start[b], 3); ck_assert_int_eq(e.end[b], 11);
    ck_assert_int_eq(e.start[c], 8); ck_assert_int_eq(e.end[c], 16);
    ck_assert_int_eq(e.start[d], 8); ck_assert_int_eq(e.end[d], 9);
    ck_assert_uint_eq(e.events, 7);
    engine_release(&e); tg_release(&g);

    /* Without the dependency, c takes the link when b's bytes have left. */
    tg_init(&g, 2, 1);
    o.chip = 0;
    a = tg_add_transfer(&g, &o, l0, 1);
    b = tg_add_transfer(&g, &o, l0, 1);
    o.chip = 1;
    c = tg_add_transfer(&g, &o, l0, 1);
    run_ok(&g, &e);
    ck_assert_int_eq(e.start[a], 0);
    ck_assert_int_eq(e.start[c], 3); ck_assert_int_eq(e.end[c], 11);
    ck_assert_int_eq(e.start[b], 6); ck_assert_int_eq(e.end[b], 14);
    engine_release(&e); tg_release(&g);
}
END_TEST

START_TEST(a_cycle_is_reported_not_hung)
{
    struct taskgraph g; struct engine e;
    struct mp_error err = { 0 };
    tg_init(&g, 2, 0);
    int a = add(&g, 0, STREAM_COMPUTE, 1), b = add(&g, 1, STREAM_COMPUTE, 1);
    tg_dep(&g, a, b);
    tg_dep(&g, b, a);
    tg_finalize(&g);
    engine_init(&e, &g);
    ck_assert_int_eq(engine_run(&e, &err), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "cannot finish"));
    ck_assert_ptr_nonnull(strstr(err.msg, "0 of 2 ops ran"));
    /* Neither started: their times read -1 (engine.h), not what the
     * allocation held. */
    ck_assert_int_eq(e.start[a], -1); ck_assert_int_eq(e.end[a], -1);
    ck_assert_int_eq(e.start[b], -1); ck_assert_int_eq(e.end[b], -1);
    engine_release(&e); tg_release(&g);
    /* Stuck after one op: a runs (0 .. 1), b waits on c, c on b. */
    tg_init(&g, 2, 0);
    a = add(&g, 0, STREAM_COMPUTE, 1);
    b = add(&g, 0, STREAM_COMPUTE, 1);
    int c = add(&g, 1, STREAM_COMPUTE, 1);
    tg_dep(&g, c, b);
    tg_dep(&g, b, c);
    tg_finalize(&g);
    engine_init(&e, &g);
    ck_assert_int_eq(engine_run(&e, &err), MP_ERR_INFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "1 of 3 ops ran"));
    ck_assert_int_eq(e.start[a], 0); ck_assert_int_eq(e.end[a], 1);
    ck_assert_int_eq(e.start[b], -1); ck_assert_int_eq(e.end[b], -1);
    ck_assert_int_eq(e.start[c], -1); ck_assert_int_eq(e.end[c], -1);
    engine_release(&e); tg_release(&g);
}
END_TEST

/* Weights 10 from time 0; op a takes 100 of activations for its run and gives
 * them back at its end; op b then takes 50. Peak 110 at time 0+, breakdown
 * weights 10 + activations 100; the log holds every change. */
START_TEST(memory_peak_and_breakdown)
{
    struct taskgraph g; struct engine e;
    tg_init(&g, 1, 0);
    tg_static_alloc(&g, 0, MEM_WEIGHTS, 10);
    struct op a = tg_op(OP_COMPUTE, 0, STREAM_COMPUTE, TAG_F, 4);
    a.alloc_bytes = 100; a.free_bytes = 100;
    struct op b = tg_op(OP_COMPUTE, 0, STREAM_COMPUTE, TAG_F, 4);
    b.alloc_bytes = 50;
    tg_add(&g, &a);
    tg_add(&g, &b);
    tg_finalize(&g);
    engine_init(&e, &g);
    e.record_memory = true;
    struct mp_error err = { 0 };
    ck_assert_int_eq(engine_run(&e, &err), MP_OK);
    ck_assert_double_eq(e.mem[0].peak, 110);
    ck_assert_double_eq(e.mem[0].at_peak[MEM_WEIGHTS], 10);
    ck_assert_double_eq(e.mem[0].at_peak[MEM_ACTIVATIONS], 100);
    ck_assert_double_eq(e.mem[0].current[MEM_ACTIVATIONS], 50);
    ck_assert_int_eq(e.n_mem_log, 4); /* weights, +100, -100, +50 */
    ck_assert_int_eq(e.mem_log[2].time, 4);
    ck_assert_double_eq(e.mem_log[2].delta, -100);
    ck_assert_double_eq(e.mem_log[3].in_use, 60);
    engine_release(&e); tg_release(&g);
}
END_TEST

/* A TP pass as a chain on chip 0: compute c0 (10 ps), all-reduce a1 (5)
 * after it, compute c1 (10) after a1, all-reduce a2 (5) after c1, compute
 * c2 (4) after a2. a1 starts at 10 with the compute stream idle and c1 at
 * its head, so a1, c1, a2 and the tail c2 are timed at once (engine.c): a1
 * 10–15, c1 15–25, a2 25–30, c2 30–34, one event for c2 in place of four;
 * the event count is still one per op (5). With `other` on chip 1 ending
 * at 34 too, c2's event ties with it: the run is simulated again op by op
 * (no_fuse set), with the same times. */
static void chain_graph(struct taskgraph *g, int *id, mp_time other)
{
    tg_init(g, 2, 0);
    id[0] = add(g, 0, STREAM_COMPUTE, 10);
    struct op o = tg_op(OP_COLLECTIVE, 0, STREAM_COMM, TAG_ALL_REDUCE, 5);
    id[1] = tg_add(g, &o);
    id[2] = add(g, 0, STREAM_COMPUTE, 10);
    id[3] = tg_add(g, &o);
    id[4] = add(g, 0, STREAM_COMPUTE, 4);
    for (int k = 0; k < 4; k++) tg_dep(g, id[k], id[k + 1]);
    id[5] = add(g, 1, STREAM_COMPUTE, other);
}

START_TEST(a_chain_is_timed_at_once_and_a_tie_runs_it_op_by_op)
{
    static const mp_time start[5] = { 0, 10, 15, 25, 30 }, end[5] = { 10, 15, 25, 30, 34 };
    for (int tie = 0; tie < 2; tie++) {
        struct taskgraph g; struct engine e;
        int id[6];
        chain_graph(&g, id, tie ? 34 : 33);
        run_ok(&g, &e);
        for (int k = 0; k < 5; k++) {
            ck_assert_int_eq(e.start[id[k]], start[k]);
            ck_assert_int_eq(e.end[id[k]], end[k]);
        }
        ck_assert_uint_eq(e.events, 6);
        ck_assert_int_eq(e.no_fuse, tie); /* the tie sent it back to op by op */
        if (!tie) ck_assert_uint_eq(e.fused_events, 3); /* a1's, c1's and a2's ends */
        engine_release(&e); tg_release(&g);
    }
}
END_TEST

static Suite *engine_suite(void)
{
    Suite *s = suite_create("engine");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, a_stream_runs_its_ops_back_to_back);
    tcase_add_test(tc, a_dependency_across_chips_delays_the_start);
    tcase_add_test(tc, stream_order_is_kept_even_when_a_later_op_is_ready);
    tcase_add_test(tc, compute_and_comm_streams_overlap);
    tcase_add_test(tc, a_link_carries_one_transfer_at_a_time);
    tcase_add_test(tc, a_transfer_holds_its_link_for_its_bytes_only);
    tcase_add_test(tc, a_cycle_is_reported_not_hung);
    tcase_add_test(tc, memory_peak_and_breakdown);
    tcase_add_test(tc, a_chain_is_timed_at_once_and_a_tie_runs_it_op_by_op);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(engine_suite)
