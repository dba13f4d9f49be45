/* calib.h — the per-chip kernel calibration table, hardware/kernels.csv,
 * and the time of one kernel (models/kernels.h) on a chip.
 *
 * One row per chip × kernel class (flash attention: one per head dim,
 * causal mask and sequence length it was measured at); every row names
 * its source. Classes and what `value` means:
 *
 *   units            compute units (SMs, CUs) the GEMM's tiles are dealt over; 0: no waves
 *   gemm             dtype bf16 | fp8: share of that dtype's dense peak a GEMM reaches
 *                    when every unit is busy (before tile, wave and K effects)
 *   gemm_k_overhead  K elements of per-tile fixed work (prologue, epilogue)
 *   gemm_small_tile  share the 128×64 / 64×128 tiles reach of the large tiles' rate
 *   memory           share of the memory bandwidth memory-bound kernels reach
 *   weights_stream   share of the memory bandwidth a GEMM streams its operands at
 *   launch           µs per kernel (eager launch and its gap)
 *   graph_launch     µs per kernel under CUDA-graph replay (serving)
 *   host_step        µs of host work (scheduling, sampling) per serving step
 *   flash_fwd/_bwd   share of the bf16 peak FlashAttention reaches, by head dim,
 *                    causal and sequence length (FLOPs counted as calibration.md §2)
 *   comm_overlap     of a compute kernel and a TP collective running side by side,
 *                    the share of the shorter that is hidden (the collective's
 *                    kernels take SMs and memory bandwidth from the GEMM)
 *
 * Time of a kernel (each + one launch):
 *   GEMM     max(waves × tile time, bytes / (mem_bw × weights_stream)), where for
 *            each tile Tm×Tn of {256×128, 128×256, 128×128} (share 1) and
 *            {128×64, 64×128, 32×128, 16×128} (gemm_small_tile), and each
 *            split of K in {1, 2, 4, 8, 16} (at least 256 of K per split),
 *            tiles = ⌈M/Tm⌉⌈N/Tn⌉·batch·split, waves = ⌈tiles/units⌉, tile time
 *            = 2·Tm·Tn·(K/split + k_overhead) / (peak/units × gemm share × tile
 *            share), plus for a split its fp32 partial sums written and reduced
 *            (4·M·N·(split + 1) bytes at the memory share); the fastest wins (as
 *            a GEMM library's heuristic would); units 0: 2·M·N·(K+k0)·batch /
 *            (peak × share).
 *   flash, scan   max(FLOPs / (bf16 peak × share(d, s, causal)), bytes / (bw × memory))
 *   decode attention  max(bytes / (bw × memory), FLOPs / (bf16 peak × flash_fwd share))
 *   memory   bytes / (mem_bw × memory)
 * Shares are interpolated linearly in head dim and in sequence length
 * between the measured points, and clamped at the table's ends.
 *
 * A chip with rows of its own must have every class but gemm fp8,
 * gemm_k_overhead, gemm_small_tile, comm_overlap and flash (which, when
 * absent, come from the generic `*` rows). A chip without any rows uses the `*` rows, whose
 * gemm, memory and weights_stream values are factors on the catalogue's
 * compute_eff and mem_eff (hardware/chips.csv); calib.generic says so. */
#ifndef MPSIM_CALIB_H
#define MPSIM_CALIB_H

#include <stdbool.h>

#include "chip.h"
#include "models/kernels.h"
#include "sim/common.h"

enum calib_class {
    CAL_UNITS, CAL_GEMM, CAL_K_OVERHEAD, CAL_SMALL_TILE, CAL_MEMORY, CAL_WEIGHTS_STREAM,
    CAL_LAUNCH, CAL_GRAPH_LAUNCH, CAL_HOST_STEP, CAL_FLASH_FWD, CAL_FLASH_BWD, CAL_COMM_OVERLAP,
    N_CAL_CLASSES
};

/* What a kernel's time is spent on, for `mpsim run --breakdown`. */
enum calib_time { CT_GEMM, CT_ATTENTION, CT_MEMORY, CT_LAUNCH, N_CT };

struct calib_row {
    int cls;            /* enum calib_class */
    int bits;           /* gemm: 16 or 8; else 0 */
    int head_dim;       /* flash; else 0 */
    int causal;         /* flash: 0 or 1; else -1 */
    double seq;         /* flash; else 0 */
    double value;
    long line;
    char chip[64];
    char source[512];
};

#define CALIB_MAX_GRID 64

/* Flash rows of one (pass, causal): points sorted by head dim then
 * sequence, with the slope to the next point; dims[] the distinct head
 * dims, each with its first point and count. */
struct calib_grid {
    int n;
    double d[CALIB_MAX_GRID], s[CALIB_MAX_GRID], eff[CALIB_MAX_GRID];
    double slope[CALIB_MAX_GRID];   /* (eff[i+1] − eff[i]) / (s[i+1] − s[i]) */
    int row[CALIB_MAX_GRID];
    int n_dims;
    double dims[CALIB_MAX_GRID];
    int first[CALIB_MAX_GRID], count[CALIB_MAX_GRID];
};

struct calib {
    char path[1024];
    char chip[64];
    bool generic;        /* the chip has no rows: `*` rows and the catalogue's shares */
    bool flash_generic;  /* its flash rows are the `*` ones */
    bool graphs;         /* launches as CUDA-graph replay (serving) */
    double units, gemm_eff[2], k_overhead, small_tile, mem_share, stream_share;
    double launch_s, graph_launch_s, host_s, comm_overlap;
    double peak[2];              /* the chip's dense bf16 and fp8 FLOP/s */
    double mem_bps, stream_bps;  /* memory-bound and GEMM-operand bytes/s */
    int row[N_CAL_CLASSES][2];   /* index in rows[] of the row that gave each figure */
    struct calib_grid flash[2][2];   /* [fwd, bwd][non-causal, causal] */
    struct calib_row *rows;      /* the rows this chip uses */
    int n_rows, cap_rows;
};

/* Read `path` (every chip's rows are checked: value ranges, classes, no
 * duplicates, every chip with rows complete) and keep what `chip` uses,
 * with the chip's peaks and bandwidth (kernel times need nothing else).
 * MP_ERR_INPUT names the file, line and column, or the chip and class
 * missing, and what was expected. */
int calib_load(struct calib *c, const char *path, const struct chip *chip, struct mp_error *err);

/* <data dir>/hardware/kernels.csv. */
int calib_load_default(struct calib *c, const struct chip *chip, struct mp_error *err);

void calib_release(struct calib *c);

/* One kernel's time on the chip, in seconds: `busy` (its work) and
 * `launch`; `cls` the class of the busy time, `row` the index in c->rows of
 * the row that set its rate (-1 none). */
struct calib_cost {
    double busy, launch;
    int cls, row;
};
void calib_kernel(const struct calib *c, const struct kernel *k, struct calib_cost *out);

/* A layer's kernels (kernels_train_layer) priced into `lp`, in ps by pass,
 * block and part, each part rounded once; `recompute` 0 none, 1 selective
 * (the kernels marked `recompute`), 2 full (the whole forward). */
void calib_price_layer(const struct calib *c, const struct kernel_list *kl, int recompute,
                       struct layer_price *lp);

/* Seconds of `bytes` through a memory-bound kernel (one launch included). */
double calib_memory_seconds(const struct calib *c, double bytes);

/* The share of peak FlashAttention reaches (table lookup), fwd or bwd. */
double calib_flash_share(const struct calib *c, bool bwd, bool causal, double head_dim,
                         double seq);

/* "gemm bf16", "flash_fwd causal d128 s4096", ... of row `i` (for reports). */
void calib_row_label(const struct calib *c, int i, char *buf, size_t size);

/* Name of a class as written in the table. */
const char *calib_class_name(int cls);

/* Name of a time class ("gemm", "attention", "memory", "launch"). */
const char *calib_time_name(int ct);

#endif
