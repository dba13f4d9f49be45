/* fuzz_calib.c — libFuzzer: the kernel calibration table
 * (hardware/kernels.csv, hardware/calib.c, branch kernels) through the one
 * CSV reader. The first byte picks the chip the table is read for (one with
 * rows of its own, one without, one without FP8); the rest is the file. A
 * table loads or is refused with MP_ERR_INPUT and a one-line message naming
 * the file; a table that loads prices a GEMM, a flash attention and a
 * memory-bound kernel at finite, non-negative times. */
#include <math.h>

#include "hardware/calib.h"
#include "hardware/chip.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct chip_catalog cat;
    static bool loaded;
    struct mp_error err = { 0 };
    if (!loaded) {
        if (chip_catalog_load_default(&cat, &err)) abort();
        loaded = true;
    }
    if (size < 1) return 0;
    static const char *const chips[] = { "h100-sxm", "a100-sxm", "textbook", "mi300x" };
    const struct chip *chip = chip_catalog_find(&cat, chips[data[0] % 4]);
    if (!chip) chip = &cat.chips[0];
    const char *path = fuzz_file(data + 1, size - 1, ".csv");
    struct calib c;
    int rc = calib_load(&c, path, chip, &err);
    if (rc != MP_OK) {
        if (rc != MP_ERR_INPUT || !err.msg[0] || strchr(err.msg, '\n') || !strstr(err.msg, path))
            abort();
        return 0;
    }
    const struct kernel ks[] = {
        { .kind = KERNEL_GEMM, .m = 4096, .n = 4096, .k = 4096, .batch = 1, .a_bytes = 2,
          .b_bytes = 2, .c_bytes = 2 },
        { .kind = KERNEL_GEMM, .m = 1, .n = 1e9, .k = 1, .batch = 1e6, .a_bytes = 1,
          .b_bytes = 1, .c_bytes = 4 },
        { .kind = KERNEL_FLASH_FWD, .flops = 1e12, .bytes = 1e9, .seq = 8192, .head_dim = 128,
          .causal = true },
        { .kind = KERNEL_FLASH_BWD, .flops = 1e3, .bytes = 1, .seq = 1, .head_dim = 1 },
        { .kind = KERNEL_DECODE_ATTN, .flops = 1e9, .bytes = 1e9, .seq = 1e6, .head_dim = 4096 },
        { .kind = KERNEL_MEMORY, .bytes = 1e18 },
    };
    for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
        struct calib_cost cc;
        calib_kernel(&c, &ks[i], &cc);
        if (!(cc.busy >= 0) || !(cc.launch >= 0) || isnan(cc.busy)) abort();
    }
    calib_release(&c);
    return 0;
}
