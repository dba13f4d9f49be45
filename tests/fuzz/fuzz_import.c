/* fuzz_import.c — libFuzzer: `mpsim import`. An input whose first byte is
 * even is a Megatron command line (split into words, then imported); odd,
 * the rest is a ds_config.json. Any input must end in MP_OK or
 * MP_ERR_INPUT with a message, never a crash, a leak or undefined
 * behaviour; nothing is written but to /dev/null. */
#include "sim/explore/import.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    struct mp_error err = { 0 };
    struct import_options opt = { .system = "dgx-h100", .chips = 64 };
    FILE *out = fopen("/dev/null", "w");
    if (!out) abort();
    int rc;
    if (data[0] % 2 == 0) {
        char *text = fuzz_text(data + 1, size - 1);
        char **w = NULL;
        int n = 0;
        rc = import_split_words(text, &w, &n, &err);
        if (rc == MP_OK) rc = import_megatron(w, n, &opt, out, &err);
        import_words_free(w, n);
        free(text);
    } else {
        rc = import_deepspeed(fuzz_file(data + 1, size - 1, ".json"), &opt, out, &err);
    }
    fclose(out);
    if (rc != MP_OK && (rc != MP_ERR_INPUT || !err.msg[0])) abort();
    return 0;
}
