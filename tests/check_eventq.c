/* check_eventq.c — the event queue against a sorted reference. */
#include <stdlib.h>

#include <gsl/gsl_rng.h>

#include "sim/engine/eventq.h"
#include "testutil.h"

struct ref { mp_time time; int prio; uint64_t seq; int64_t data; int live; };

static int ref_cmp(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    if (x->prio != y->prio) return x->prio < y->prio ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

/* Schedule N random events (times drawn from a small range so ties are
 * common), cancel a random third, pop the rest: the order must equal a sort of
 * the survivors by (time, prio, insertion). */
START_TEST(random_against_sorted_reference)
{
    enum { N = 20000 };
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 42 + (unsigned long)_i);
    struct eventq q;
    eventq_init(&q);
    struct ref *ref = calloc(N, sizeof *ref);
    uint32_t *handle = calloc(N, sizeof *handle);
    for (int i = 0; i < N; i++) {
        ref[i] = (struct ref){ .time = (mp_time)gsl_rng_uniform_int(rng, 500),
                               .prio = (int)gsl_rng_uniform_int(rng, 3), .seq = (uint64_t)i,
                               .data = i, .live = 1 };
        handle[i] = eventq_schedule(&q, ref[i].time, ref[i].prio, i);
    }
    int cancelled = 0;
    for (int i = 0; i < N; i++) {
        if (gsl_rng_uniform(rng) < 1.0 / 3) {
            ck_assert(eventq_cancel(&q, handle[i]));
            ck_assert(!eventq_cancel(&q, handle[i])); /* twice is a no-op */
            ref[i].live = 0;
            cancelled++;
        }
    }
    ck_assert_uint_eq(eventq_size(&q), N - cancelled);
    struct ref *live = calloc(N, sizeof *live);
    int n = 0;
    for (int i = 0; i < N; i++) if (ref[i].live) live[n++] = ref[i];
    qsort(live, (size_t)n, sizeof *live, ref_cmp);
    struct eventq_event ev;
    for (int k = 0; k < n; k++) {
        ck_assert(eventq_pop(&q, &ev));
        ck_assert_int_eq(ev.time, live[k].time);
        ck_assert_int_eq(ev.prio, live[k].prio);
        ck_assert_int_eq(ev.data, live[k].data);
    }
    ck_assert(!eventq_pop(&q, &ev));
    free(live); free(ref); free(handle);
    eventq_release(&q);
    gsl_rng_free(rng);
}
END_TEST

START_TEST(equal_times_run_in_insertion_order)
{
    struct eventq q;
    eventq_init(&q);
    for (int i = 0; i < 100; i++) eventq_schedule(&q, 7, 0, i);
    struct eventq_event ev;
    for (int i = 0; i < 100; i++) {
        ck_assert(eventq_pop(&q, &ev));
        ck_assert_int_eq(ev.data, i);
    }
    eventq_release(&q);
}
END_TEST

START_TEST(priority_breaks_time_ties_before_sequence)
{
    struct eventq q;
    eventq_init(&q);
    eventq_schedule(&q, 5, 2, 100);
    eventq_schedule(&q, 5, 1, 101);
    eventq_schedule(&q, 4, 9, 102);
    struct eventq_event ev;
    eventq_pop(&q, &ev); ck_assert_int_eq(ev.data, 102);
    eventq_pop(&q, &ev); ck_assert_int_eq(ev.data, 101);
    eventq_pop(&q, &ev); ck_assert_int_eq(ev.data, 100);
    eventq_release(&q);
}
END_TEST

/* Handles are reused after delivery; a stale handle must not cancel the new
 * event that took its slot... unless it is the same slot, which is why
 * callers drop handles once delivered. Here: cancel after pop is false. */
START_TEST(cancel_after_delivery_is_false)
{
    struct eventq q;
    eventq_init(&q);
    uint32_t h = eventq_schedule(&q, 1, 0, 1);
    struct eventq_event ev;
    ck_assert(eventq_pop(&q, &ev));
    ck_assert(!eventq_cancel(&q, h));
    eventq_release(&q);
}
END_TEST

struct stop_ctx { struct eventq *q; int seen; };
static void stop_at_three(void *ctx, const struct eventq_event *ev)
{
    struct stop_ctx *c = ctx;
    (void)ev;
    if (++c->seen == 3) eventq_stop(c->q);
}

START_TEST(run_and_stop)
{
    struct eventq q;
    eventq_init(&q);
    for (int i = 0; i < 10; i++) eventq_schedule(&q, i, 0, i);
    struct stop_ctx c = { &q, 0 };
    ck_assert_uint_eq(eventq_run(&q, stop_at_three, &c), 3);
    ck_assert_uint_eq(eventq_size(&q), 7);
    ck_assert_uint_eq(eventq_run(&q, stop_at_three, &c), 7);
    eventq_release(&q);
}
END_TEST

/* The small mode (a sorted array while at most EVENTQ_SMALL events are
 * pending) and its hand-over to the radix heap, against a plain list kept
 * sorted by hand: a hold model (pop the earliest, schedule one no earlier,
 * ties common) with a random event cancelled now and then. Loop 0 keeps
 * 40 pending throughout, so it never leaves the small mode; loop 1 grows
 * to 300 pending half-way through, so the events pending at the hand-over
 * and every one after go through the radix heap. */
START_TEST(small_mode_hold_model_against_reference)
{
    enum { STEPS = 4000, CAP = 400 };
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7 + (unsigned long)_i);
    struct eventq q;
    eventq_init(&q);
    struct ref live[CAP];
    uint32_t handle[CAP];
    int n = 0;
    uint64_t seq = 0;
    mp_time now = 0;
    for (int step = 0; step < STEPS; step++) {
        int want = _i == 1 && step >= STEPS / 2 ? 300 : 40;
        while (n < want) {
            mp_time t = now + (mp_time)gsl_rng_uniform_int(rng, 50);
            int prio = (int)gsl_rng_uniform_int(rng, 2);
            handle[n] = eventq_schedule(&q, t, prio, (int64_t)seq);
            live[n++] = (struct ref){ .time = t, .prio = prio, .seq = seq, .data = (int64_t)seq };
            seq++;
        }
        if (gsl_rng_uniform(rng) < 0.1) { /* cancel one at random */
            int k = (int)gsl_rng_uniform_int(rng, (unsigned long)n);
            ck_assert(eventq_cancel(&q, handle[k]));
            live[k] = live[--n];
            handle[k] = handle[n];
            continue;
        }
        int best = 0; /* the earliest by (time, prio, sequence) */
        for (int k = 1; k < n; k++)
            if (ref_cmp(&live[k], &live[best]) < 0) best = k;
        struct eventq_event ev;
        ck_assert(eventq_pop(&q, &ev));
        ck_assert_int_eq(ev.time, live[best].time);
        ck_assert_int_eq(ev.prio, live[best].prio);
        ck_assert_int_eq(ev.data, live[best].data);
        now = ev.time;
        live[best] = live[--n];
        handle[best] = handle[n];
        ck_assert_uint_eq(eventq_size(&q), (size_t)n);
    }
    eventq_release(&q);
    gsl_rng_free(rng);
}
END_TEST

static Suite *eventq_suite(void)
{
    Suite *s = suite_create("eventq");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, random_against_sorted_reference, 0, 3);
    tcase_add_test(tc, equal_times_run_in_insertion_order);
    tcase_add_test(tc, priority_breaks_time_ties_before_sequence);
    tcase_add_test(tc, cancel_after_delivery_is_false);
    tcase_add_test(tc, run_and_stop);
    tcase_add_loop_test(tc, small_mode_hold_model_against_reference, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(eventq_suite)
