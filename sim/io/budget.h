/* budget.h — the work a command is about to do, estimated before it
 * allocates, and the budget past which it refuses unless --force (issue 16).
 *
 * A small input can ask for a huge run (global_batch = 10^7, a --vary grid of
 * 10^7 points, a detailed ring over a million chips). Each command estimates
 * its work in the two units that cost the user — memory and wall time — from
 * what it counts before the expensive part (engine events, chips, sweep
 * points), and past the budget stops with the estimate in the message, so
 * that the user decides. The per-unit costs below are measurements of this
 * tree on the development machine (2 cores; bench/README.md), rounded up; the
 * budget is a default that a laptop survives, not a law. */
#ifndef MPSIM_BUDGET_H
#define MPSIM_BUDGET_H

#include <stdbool.h>

#include "sim/common.h"

/* Measured: `mpsim run` at 1f1b, zb-v and TP8 × DP2 (2.8 to 7.2 million
 * events) holds 117 to 134 bytes per engine event (graph, engine state,
 * metrics) and runs 0.4 to 1 µs per event. Rounded up. */
#define WORK_BYTES_PER_EVENT 160.0
#define WORK_SECONDS_PER_EVENT 1e-6
/* Measured: a synthetic TP-8 step on 8 million chips holds 157 bytes per
 * chip on dgx-h100 (4 links a chip: switch up/down, NIC up/down), 290 on
 * mi300x-node (9: a 7-link mesh and the NICs) and 282 on tpu-v5p (8: a 3-D
 * torus and the NICs) — 51 bytes a chip and 27 a link, by the first two.
 * Rounded up. (One figure per chip, 160, held for a switch but let a torus
 * of 2^24 chips reach 4.7 GB past the 4 GiB budget: the value fuzzer.) */
#define WORK_BYTES_PER_CHIP 64.0
#define WORK_BYTES_PER_LINK 32.0
/* Measured: a system of 8 million chips (hardware.nodes = 999999 of 8) is
 * laid out and run in 1.6 s: 0.2 µs per chip. */
#define WORK_SECONDS_PER_CHIP 2e-7
/* Measured: a sweep point's fixed cost (scenario, chip catalogue, system
 * and model loaded, schedule built) is 0.3 ms (synthetic) to 2 ms (a
 * Hugging Face model); rounded up. */
#define WORK_SECONDS_PER_POINT 2e-3

/* Measured: the schedule program (sim/strategy/schedule.h) is built whole
 * even when steady-state skipping then simulates a few periods of it.
 * zb-auto's six greedy orders over 8,388,608 microbatches on one stage
 * (25.2 million passes, F, B and W) took 5.2 s and two programs of 20-byte
 * passes: 0.21 µs and 40 bytes a pass, a fifth and a quarter of an event.
 * A pass counts as a quarter of an event (the value fuzzer found that
 * program at a budget of 10^5 events: minutes under ASan). */
#define WORK_EVENTS_PER_PASS 0.25

/* The default budget: 4 GiB of memory for one run (about 27 million events,
 * half a minute), and one hour of estimated wall time for a sweep or a
 * search (on its --jobs threads). */
#define WORK_BUDGET_BYTES 0x1p32
#define WORK_BUDGET_SECONDS 3600.0

/* What a command estimates. One run: `events` and `chips` give its memory
 * and time by the constants above. A sweep or search of `points` runs (0: a
 * single run) on `jobs` threads (0 or 1: one): `events` and `chips` are its
 * largest run's, which `jobs` hold at once, and `total_events` the sum over
 * its points, which with the per-point cost sets its time. */
struct work_estimate {
    double events;
    double held;         /* events held in memory at once, when fewer than
                            `events` (a compact ring: one op of many steps);
                            0: all of them */
    double chips;
    double links;        /* of the system (system_link_count) */
    double points;
    double total_events;
    double bytes;        /* held beyond what events and chips account for */
    int jobs;
};

double work_bytes(const struct work_estimate *w);
double work_seconds(const struct work_estimate *w);

/* MP_OK when `w` is within the budget (memory for a run, time for a sweep:
 * both are checked) or `force` is set; else MP_ERR_INPUT with one line:
 * "WHAT: estimated N events, M GB and about T: past the work budget of
 * 4 GiB and 1 h; pass --force to run it anyway" (`hint`, when not NULL, is
 * appended: a cheaper way to ask). */
int work_check(const struct work_estimate *w, const char *what, const char *hint, bool force,
               struct mp_error *err);

/* "3.2 s", "14 min", "2.9 h", "4.1 days": a wall time for people. */
void work_format_seconds(double s, char *buf, int size);

#endif
