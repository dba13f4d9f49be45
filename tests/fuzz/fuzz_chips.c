/* fuzz_chips.c — libFuzzer: a chip catalogue CSV through chip_catalog_load,
 * then a roofline op time on every chip it accepts. */
#include "hardware/chip.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct chip_catalog cat;
    struct mp_error err = { 0 };
    int rc = chip_catalog_load(&cat, fuzz_file(data, size, ".csv"), &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0])) abort();
    if (rc == MP_OK) {
        for (int i = 0; i < cat.n; i++) {
            mp_time t = chip_op_time(&cat.chips[i], 1e18, 1e15, 16);
            if (t < 0 || t > MP_TIME_HUGE) abort();
            if (chip_catalog_find(&cat, cat.chips[i].name) == NULL) abort();
        }
        chip_catalog_release(&cat);
    }
    return 0;
}
