/* units.h — numbers with units, as people write them in scenario and system
 * files: durations (2us, 1.5 ms), sizes (44GB, 16 GiB), bandwidths (450GB/s,
 * 400Gb/s), booleans. Each parser returns 0 on success, -1 when the text is
 * not of that form; the caller names file, line and key in its message, and
 * can quote units_expect_* as "what was expected". */
#ifndef MPSIM_UNITS_H
#define MPSIM_UNITS_H

#include <stdbool.h>
#include <stdint.h>

#include "sim/common.h"

/* "1ms", "2 us", "0.5s", "250ns", "3ps"; a bare "0" is allowed (zero needs no
 * unit). Negative, NaN, infinite or beyond int64 picoseconds fail. */
int units_parse_duration(const char *text, mp_time *out);

/* "44GB" (10^9), "16GiB" (2^30), "512 KB", "1.5TB", "100B", plain "1024"
 * (bytes). Negative, NaN or infinite fail; zero is accepted. */
int units_parse_size(const char *text, double *out);

/* Bytes per second: "450GB/s", "400Gb/s" (bits: ÷8), "1.2Tb/s", "50 GB/s",
 * or "inf" for an instant link. Returns the rate in bytes/s (INFINITY for inf). */
int units_parse_bandwidth(const char *text, double *out);

/* true/false, yes/no, on/off, 1/0 (any case). */
int units_parse_bool(const char *text, bool *out);

/* Whole decimal integer in [min, max]; no trailing junk. */
int units_parse_int(const char *text, long long min, long long max, long long *out);

/* Finite decimal number, no trailing junk. */
int units_parse_double(const char *text, double *out);

/* What each parser accepts, for messages: "a duration such as 1ms or 2.5us". */
extern const char units_expect_duration[];
extern const char units_expect_size[];
extern const char units_expect_bandwidth[];
extern const char units_expect_bool[];

/* Write a duration / size in the most readable unit ("33 ms", "1.5 GiB"). */
void units_format_duration(mp_time t, char *buf, int size);
void units_format_size(double bytes, char *buf, int size);

/* Write a duration exactly, to the picosecond, as decimal seconds
 * ("0.033000000000"), with no rounding: the timeline CSV keeps every
 * picosecond, so a reader can recompute the engine's sums. */
void units_format_seconds_exact(mp_time t, char *buf, int size);

/* Chrome / Perfetto trace time. The format's `ts` and `dur` are
 * microseconds that viewers read as doubles; decimal microseconds to the
 * picosecond are not binary fractions, so after parsing ts + dur of one
 * slice can land a hair past the next slice's ts. Trace times are therefore
 * whole numbers of 1/1024 µs (≈ 0.98 ns) — "ticks" — rounded once per
 * boundary from the picoseconds (half up) and written exactly in decimal
 * (k/1024 has at most ten decimals): a double holds each exactly, and a
 * slice that starts where another ends starts at exactly that number. */
long long units_trace_ticks(mp_time t);
void units_format_trace_ticks(long long ticks, char *buf, int size);
/* The span [a, b) as `ts` and `dur` (each buffer `size` bytes), both from
 * the rounded boundaries, so ts + dur is exactly the rounded end. Returns
 * the duration in ticks: 0 when the span rounds to nothing (callers leave
 * such slices out). */
long long units_format_trace_span(mp_time a, mp_time b, char *ts, char *dur, int size);

#endif
