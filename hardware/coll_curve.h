/* coll_curve.h — measured scale-up collective bandwidth by message size:
 * the table hardware/collectives.csv (one row per curve × collective ×
 * message size, each with its source), and the busbw a curve gives at any
 * size. A system preset names its curve in `[scaleup] busbw_curve`
 * (hardware/system.h keeps it in struct system); sim/strategy/collective.c
 * prices ring (and auto) all-reduce, all-gather and reduce-scatter inside
 * one node from it instead of from the links' alpha-beta figures.
 *
 * busbw is nccl-tests' (formats.md): time = S · factor(n) / busbw(S), with
 * factor 2(n−1)/n for all-reduce and (n−1)/n for all-gather and
 * reduce-scatter, S the whole buffer.
 *
 * Between two measured sizes S_i < S < S_j the time is interpolated
 * linearly in S (each segment an alpha-beta line through its two
 * measurements): S/busbw(S) = S_i/b_i + (S_j/b_j − S_i/b_i)·(S − S_i)/(S_j −
 * S_i). Why this and not busbw linear (or log) in log S: leaving each
 * interior point of calibration.md §5a out and predicting it from its
 * neighbours, this form misses by at most +41% (−9% … +41%, most within
 * ±20%), busbw linear in log S by up to +1341% (the latency-bound sizes) and
 * log busbw in log S by up to −57% (the transition); and the time it gives
 * grows with S whenever the measured times do. Below the smallest point the
 * time stays that point's (the latency floor: busbw ∝ S); above the largest
 * the busbw stays the largest point's.
 *
 * all_gather / reduce_scatter: priced on the all-reduce curve at the same
 * buffer S (a ring all-reduce is a reduce-scatter then an all-gather of S,
 * each step moving S/n: the same message sizes, so the same protocol
 * regime — an assumption), and no faster than the op's own rows where the
 * table has them (NVLink SHARP speeds up all-reduce only: 8×H200 all-gather
 * and reduce-scatter measure 361–363 GB/s at 16 GiB against the all-reduce's
 * 480, calibration.md §5c). Own rows interpolate the same way between their
 * points and stay at the nearest point's busbw outside them (a ceiling, not
 * a floor).
 *
 * GPU counts: a curve's first row names the count it was measured on (g);
 * rows on fewer GPUs are ceilings for groups of that many, read the same
 * way (NVLink SHARP's gain grows with the GPU count: 8×H200 all-reduce at
 * 8 GiB reaches 363 GB/s on 4 GPUs, 460 on 7, 473 on 8, §5c). A group of n
 * < g takes the ceiling of the largest count ≤ n that has rows (below them
 * all, the smallest's), and none when no count does. */
#ifndef MPSIM_COLL_CURVE_H
#define MPSIM_COLL_CURVE_H

#include <stdbool.h>

#include "sim/common.h"

enum curve_op { CURVE_ALL_REDUCE, CURVE_ALL_GATHER, CURVE_REDUCE_SCATTER, N_CURVE_OPS };

#define COLL_CURVE_MAX_POINTS 32
#define COLL_CURVE_MAX_SETS 16   /* GPU counts in one curve: the measured one and ceilings */

struct coll_curve_points {
    int n;
    double size[COLL_CURVE_MAX_POINTS];   /* bytes, strictly increasing */
    double busbw[COLL_CURVE_MAX_POINTS];  /* bytes/s */
};

struct coll_curve {
    bool present;      /* false: the system has none (alpha-beta everywhere) */
    char name[64];
    int gpus;          /* the GPU count the curve was measured on (its first row's) */
    struct coll_curve_points op[N_CURVE_OPS];
    int n_caps;        /* ceilings for smaller groups: their GPU counts and rows */
    int cap_gpus[COLL_CURVE_MAX_SETS - 1];
    struct coll_curve_points cap[COLL_CURVE_MAX_SETS - 1][N_CURVE_OPS];
};

/* Read the table at `path` (every row checked: columns, a known collective,
 * whole sizes strictly increasing within a curve's collective and GPU count,
 * busbw > 0, no row on more GPUs than the curve's first, all_reduce rows on
 * that count in every curve) and keep the curve `name`. MP_ERR_INPUT "PATH:LINE: column NAME: what was wrong,
 * expected what"; a name not in the table: "PATH: no curve 'X' (known: ...)". */
int coll_curve_load(struct coll_curve *c, const char *path, const char *name,
                    struct mp_error *err);

/* <data dir>/hardware/collectives.csv. */
int coll_curve_load_default(struct coll_curve *c, const char *name, struct mp_error *err);

/* busbw (bytes/s) of `op` on a buffer of `bytes` on the curve's GPU count:
 * the interpolation above (all-reduce curve, capped by the op's own rows). */
double coll_curve_busbw(const struct coll_curve *c, enum curve_op op, double bytes);

/* The ceiling (bytes/s) the curve's rows on fewer GPUs put on `op` for a
 * group of n < gpus at `bytes` (the rule above); INFINITY when none. */
double coll_curve_cap(const struct coll_curve *c, enum curve_op op, int n, double bytes);

#endif
