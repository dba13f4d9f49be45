/* fuzz_system.c — libFuzzer: a system INI through system_load (with the
 * project's chip catalogue), then routes between a few chip pairs and their
 * times. The first input byte picks how many chips the layout needs. */
#include "fuzz.h"
#include "hardware/system.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct chip_catalog cat;
    static int loaded;
    struct mp_error err = { 0 };
    if (!loaded) {
        if (chip_catalog_load_default(&cat, &err) != MP_OK) abort();
        loaded = 1;
    }
    if (size < 1) return 0;
    int needed = data[0] % 64;
    struct system sys;
    int rc = system_load(&sys, fuzz_file(data + 1, size - 1, ".ini"), 0, needed, &cat, &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0])) abort();
    if (rc == MP_OK) {
        int route[256];
        int n = sys.n_chips;
        int pairs[][2] = { { 0, n - 1 }, { n - 1, 0 }, { 0, n / 2 }, { n / 3, 2 * n / 3 } };
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
            int len = system_route(&sys, pairs[i][0], pairs[i][1], route, 256);
            if (len < 0) abort();
            if (len <= 256) {
                mp_time t = system_route_time(&sys, route, len, 1e9);
                if (t < 0 || t > MP_TIME_HUGE) abort();
            }
        }
    }
    system_release(&sys);
    return 0;
}
