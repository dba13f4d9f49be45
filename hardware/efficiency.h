/* efficiency.h — how much of a chip's peak an op reaches, by op shape:
 * hardware/efficiency.csv (DESIGN.md: calibration lives in data files).
 *
 * Rows `chip,op,size,value,source`; `chip` is a catalogue name or `*` for
 * every chip without rows of its own.
 *   gemm        value = share of the chip's compute_eff (the large-GEMM
 *               figure of chips.csv) a GEMM of `size` FLOPs reaches;
 *               interpolated in log(size), clamped at the ends.
 *   elementwise value = bytes the memory-bound kernels of a layer move per
 *               byte of its stashed activations (Korthikanti's count).
 * An op is priced as max(flops / (peak × compute_eff × gemm share),
 * bytes / (mem_bw × mem_eff)) + elementwise bytes / (mem_bw × mem_eff). */
#ifndef MPSIM_EFFICIENCY_H
#define MPSIM_EFFICIENCY_H

#include "chip.h"
#include "sim/common.h"

#define EFF_MAX_POINTS 16

struct efficiency {
    int n_gemm;
    double gemm_size[EFF_MAX_POINTS], gemm_share[EFF_MAX_POINTS];
    double elementwise;   /* bytes moved per activation byte */
};

/* <data dir>/hardware/efficiency.csv. */
int efficiency_load_default(struct efficiency *e, const char *chip, struct mp_error *err);

/* Time of an op in ps (see above). `elem_bytes` are activation bytes the
 * op's memory-bound kernels touch (before the elementwise factor). */
mp_time efficiency_op_time(const struct efficiency *e, const struct chip *c, double flops,
                           double bytes, double gemm_size, double elem_bytes, int bits);

#endif
