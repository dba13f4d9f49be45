/* fuzz_set.c — libFuzzer: `--set` assignments. The input is split at
 * newlines into assignments applied in turn over the defaults, then the
 * result is checked and every key is formatted back (as sweeps do) and must
 * parse again to the same text. */
#include <string.h>

#include "sim/io/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct config cfg;
    struct mp_error err = { 0 };
    config_defaults(&cfg);
    int rc = MP_OK;
    for (char *line = text, *next; line && rc == MP_OK; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        rc = config_set(&cfg, line, "--set", &err);
    }
    if (rc == MP_OK) rc = config_check(&cfg, &err);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0])) abort();
    if (rc == MP_OK) {
        /* Round trip: what config_format_value writes, config_set_key reads
         * back to the same value. */
        for (const struct config_key *k = config_keys; k->name; k++) {
            /* Strings are written as they are; one pair of quotes around
             * them is dropped on reading, so "\"x\"" cannot come back. */
            if (k->type == CONFIG_STRING) continue;
            char v[CONFIG_STR * 2], again[CONFIG_STR * 2];
            config_format_value(&cfg, k, v, sizeof v);
            struct config copy = cfg;
            if (config_set_key(&copy, k->name, v, "fuzz", &err) != MP_OK) abort();
            config_format_value(&copy, k, again, sizeof again);
            if (strcmp(v, again) != 0) abort();
        }
    }
    free(text);
    return 0;
}
