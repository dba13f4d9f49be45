/* chip.h — the chip catalogue, hardware/chips.csv: one row per accelerator
 * with its dense peaks, memory, links, achievable efficiencies and price, and
 * the source of every figure in its `source` column. */
#ifndef MPSIM_CHIP_H
#define MPSIM_CHIP_H

#include "sim/common.h"

struct chip {
    char name[64];          /* catalogue key, e.g. "h100-sxm" */
    char label[128];        /* for people: "NVIDIA H100 SXM 80GB" */
    double peak_bf16;       /* dense FLOP/s at 16-bit */
    double peak_fp8;        /* dense FLOP/s at 8-bit (0: not supported) */
    double mem_bytes;       /* memory capacity */
    double mem_bw;          /* memory bandwidth, bytes/s */
    double scaleup_bw;      /* per chip, per direction, bytes/s, inside a node */
    double scaleout_bw;     /* per chip, per direction, bytes/s, NIC */
    double compute_eff;     /* share of peak a large GEMM reaches (0..1] */
    double mem_eff;         /* share of memory bandwidth a stream reaches (0..1] */
    double price_usd;       /* purchase price per chip (0: unknown) */
    double price_hour_usd;  /* cloud price per chip-hour (0: unknown) */
    char source[256];
};

struct chip_catalog {
    struct chip *chips;
    int n;
};

/* Read a catalogue CSV (libcsv). A header row names the columns; bad rows are
 * MP_ERR_INPUT with "FILE:LINE: column NAME: expected ..., got '...'". */
int chip_catalog_load(struct chip_catalog *cat, const char *path, struct mp_error *err);

/* Load <data dir>/hardware/chips.csv. */
int chip_catalog_load_default(struct chip_catalog *cat, struct mp_error *err);

/* Free the catalogue's rows; it is then empty (releasing it again is safe). */
void chip_catalog_release(struct chip_catalog *cat);

/* The row named `name`, or NULL. */
const struct chip *chip_catalog_find(const struct chip_catalog *cat, const char *name);

/* Roofline time of one op on this chip, in picoseconds:
 * max(flops / (peak × compute_eff), bytes / (mem_bw × mem_eff)).
 * `bits` picks the peak (16 → bf16, 8 → fp8 when the chip has it). */
mp_time chip_op_time(const struct chip *c, double flops, double bytes, int bits);

/* The catalogue figures an op time comes from, in the catalogue's own units,
 * for messages that name the inputs behind a duration past its cap:
 * "chip NAME (chips.csv: bf16_tflops = 1e-09, fp8_tflops = 0, mem_bw_tbs =
 * 3.35, compute_eff = 0.8, mem_eff = 0.9)". */
void chip_describe(const struct chip *c, char *buf, size_t size);

#endif
