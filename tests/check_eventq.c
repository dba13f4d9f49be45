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

static Suite *eventq_suite(void)
{
    Suite *s = suite_create("eventq");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, random_against_sorted_reference, 0, 3);
    tcase_add_test(tc, equal_times_run_in_insertion_order);
    tcase_add_test(tc, priority_breaks_time_ties_before_sequence);
    tcase_add_test(tc, cancel_after_delivery_is_false);
    tcase_add_test(tc, run_and_stop);
    suite_add_tcase(s, tc);
    return s;
}

MP_TEST_MAIN(eventq_suite)
