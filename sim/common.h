/* common.h — the few types every mpsim module shares: simulated time, exit
 * statuses and the error record that carries an input error up to the CLI.
 *
 * Two error channels (DESIGN.md §7): programmer errors are assert()s; input and
 * environment errors fill a struct mp_error and return its status, and only the
 * command-line layer prints it (once) and exits with that status. */
#ifndef MPSIM_COMMON_H
#define MPSIM_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Simulated time: an integer count of picoseconds. 2^63 ps is about 106 days,
 * far beyond any step or serving horizon we simulate. */
typedef int64_t mp_time;

#define MP_PS_PER_NS ((mp_time)1000)
#define MP_PS_PER_US ((mp_time)1000000)
#define MP_PS_PER_MS ((mp_time)1000000000)
#define MP_PS_PER_S  ((mp_time)1000000000000)

/* The longest single duration anything computes (2^62 ps, about 53 days):
 * op times that would exceed it from the user's numbers (a crawling chip, a
 * huge seq_len) saturate here instead of wrapping, so a sum of two still fits
 * in int64, and sim_run reports a step past int64 as an input error. */
#define MP_TIME_HUGE ((mp_time)1 << 62)

/* The one checked path from arithmetic to a duration (issue 16). Every
 * duration computed from the user's numbers (FLOPs over a peak, bytes over a
 * bandwidth, a step of n hops) goes through these, so that none can wrap or
 * go negative: past MP_TIME_HUGE they saturate there, and the runs that
 * consume them (sim_run's horizon check, serving, `mpsim collective`) turn a
 * saturated duration into an input error naming the inputs behind it.
 * tests/check_time_arith.sh forbids (mp_time) casts and llround() elsewhere
 * in the library. */

/* Picoseconds (a double) to the nearest mp_time; NaN, infinity and anything
 * at or past MP_TIME_HUGE give MP_TIME_HUGE. Negative is a programmer error. */
mp_time mp_time_from_ps(double ps);

/* Seconds to mp_time, as mp_time_from_ps(s × 10^12). */
mp_time mp_time_from_s(double s);

/* a + b and a × k for durations (a, b, k ≥ 0), saturating at MP_TIME_HUGE. */
mp_time mp_time_add(mp_time a, mp_time b);
mp_time mp_time_mul(mp_time a, long long k);

/* The part `share` (≥ 0) of a duration, truncated toward zero (how a pass is
 * cut into segments, so the parts never sum past the whole), saturating. */
mp_time mp_time_scale(mp_time a, double share);

/* Whether a duration saturated (is MP_TIME_HUGE or more). */
static inline int mp_time_saturated(mp_time t) { return t >= MP_TIME_HUGE; }

/* Seconds (double) from picoseconds, for reports only; never for the engine. */
static inline double mp_seconds(mp_time t) { return (double)t / 1e12; }

/* Exit statuses of the mpsim commands (DESIGN.md §4). */
enum mp_status {
    MP_OK = 0,
    MP_ERR_INTERNAL = 1,   /* a write failed, out of memory: the environment */
    MP_ERR_INPUT = 2,      /* usage, file, key or value is wrong */
    MP_ERR_INFEASIBLE = 3, /* valid input, but it does not fit or a schedule rule fails */
};

/* An error on its way up to the CLI. `status` is an enum mp_status; `msg`
 * already names the file, line, key and what was expected. */
struct mp_error {
    int status;
    char msg[1024];
};

/* Fill `err` (which may be NULL) with a printf-style message and return
 * `status`, so callers can write `return mp_fail(err, MP_ERR_INPUT, ...)`. */
int mp_fail(struct mp_error *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix an existing message with more context ("scenario.ini: " + msg). */
void mp_error_prefix(struct mp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Allocation that never returns NULL: out of memory aborts with a message,
 * since no simulation can continue without its arrays. */
void *mp_xmalloc(size_t n);
void *mp_xcalloc(size_t count, size_t size);
void *mp_xrealloc(void *p, size_t n);
char *mp_xstrdup(const char *s);

/* Keep freed memory in the process instead of handing it back to the kernel
 * after each simulation. A search or a sweep simulates layout after layout
 * of about the same size; with glibc's default policy every one of them
 * unmaps or trims its arrays when it ends and the next faults the same
 * pages in again: on the 1T step (bench/bench_step, 26 MB of arrays) that
 * was 12 ms of kernel time of a 33 ms step. Sets M_MMAP_THRESHOLD to
 * 32 MiB and M_TRIM_THRESHOLD to 256 MiB (mallopt(3): 32 MiB is the top of
 * glibc's own dynamic mmap threshold on 64-bit). Process-wide, so only the
 * programs call it (the CLI, the viewer, the benches), never the library;
 * elsewhere than glibc it does nothing. */
void mp_heap_keep(void);

/* Grow a dynamic array so it can hold `need` items of `item` bytes. */
#define MP_GROW(ptr, cap, need)                                              \
    do {                                                                    \
        if ((size_t)(need) > (size_t)(cap)) {                               \
            size_t mp_newcap_ = (cap) ? (size_t)(cap) * 2 : 16;             \
            while (mp_newcap_ < (size_t)(need)) mp_newcap_ *= 2;            \
            (ptr) = mp_xrealloc((ptr), mp_newcap_ * sizeof *(ptr));         \
            (cap) = mp_newcap_;                                             \
        }                                                                   \
    } while (0)

/* Length of the longest valid UTF-8 prefix of s[0..n): n when all of it is
 * valid (no overlongs, surrogates or code points past U+10FFFF). Files are
 * checked with it so that names read from them never turn the JSON, CSV and
 * trace outputs, which must be UTF-8, into invalid files. */
size_t mp_utf8_valid_prefix(const char *s, size_t n);

/* s[0..n) made fit for a one-line message (issue 16): control characters
 * as \n, \r, \t or \xHH, bytes that are not UTF-8 as \xHH, the invisible
 * U+FEFF (a byte-order mark) as \uFEFF; after `max` bytes of text, "...".
 * Always NUL-terminates `out` (size ≥ 1). */
void mp_quote(const char *s, size_t n, size_t max, char *out, size_t size);

/* Edit distance between two names, ignoring case ("PP" still finds "pp"),
 * for did-you-mean suggestions; SIZE_MAX for names over 63 characters. */
size_t mp_edit_distance(const char *a, const char *b);

/* Seconds on the monotonic clock, for the wall-time figures people read
 * (sim_wall_s, sweep and search progress); never for simulated time. */
double mp_wall_seconds(void);

/* The folder holding the project's presets (models/, hardware/, scenarios/):
 * $MPSIM_HOME if set, else the source tree the binary was built from. */
const char *mp_data_dir(void);

#endif
