/* fuzz_scenario.c — libFuzzer: a scenario INI file through config_load and
 * config_check. Any input must end in MP_OK or MP_ERR_INPUT with a message,
 * never a crash, a leak or undefined behaviour. */
#include "sim/io/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    int rc = config_load(&cfg, fuzz_file(data, size, ".ini"), &err);
    if (rc == MP_OK) rc = config_check(&cfg, &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0])) abort();
    return 0;
}
