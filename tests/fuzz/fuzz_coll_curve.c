/* fuzz_coll_curve.c — libFuzzer: the measured collective table
 * (hardware/collectives.csv, hardware/coll_curve.c) through the one CSV
 * reader. The first byte picks the curve asked for; the rest is the file. A
 * table loads or is refused with MP_ERR_INPUT and a one-line message naming
 * the file; a curve that loads gives every collective a busbw that is
 * finite and above zero at every size from 1 byte to 2^62. */
#include <math.h>

#include "hardware/coll_curve.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    static const char *const names[] = { "a100-nvlink3", "h100-nvlink4", "x", "" };
    const char *path = fuzz_file(data + 1, size - 1, ".csv");
    struct coll_curve c;
    struct mp_error err = { 0 };
    int rc = coll_curve_load(&c, path, names[data[0] % 4], &err);
    if (rc != MP_OK) {
        if (rc != MP_ERR_INPUT || !err.msg[0] || strchr(err.msg, '\n') || !strstr(err.msg, path))
            abort();
        return 0;
    }
    if (!c.present || c.gpus < 2 || c.op[CURVE_ALL_REDUCE].n < 1) abort();
    for (int op = 0; op < N_CURVE_OPS; op++)
        for (double s = 1; s <= 0x1p62; s *= 3) {
            double b = coll_curve_busbw(&c, (enum curve_op)op, s);
            if (!(b > 0) || !isfinite(b)) abort();
        }
    return 0;
}
